//! The autograd crate's integration tests, as one test binary.
//!
//! Every test binary links the whole of ATen (a few hundred MB at the test profile's
//! opt-level), so one binary for all of them keeps the build's link time and disk down.

mod autograd;
mod common;
mod custom_function;
mod engine;
mod forward_ad;
mod functions_manual;
mod generated_fresh;
