//! ratten: PyTorch's operator system in Rust. This crate is the facade users depend on; it
//! re-exports the layers (see ARCHITECTURE.md).

pub use ratten_aten as aten;
pub use ratten_core as core;
pub use ratten_core::{Device, DeviceType, Element, Error, ErrorKind, Result, ScalarType};
