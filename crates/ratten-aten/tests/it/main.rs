//! ATen's integration tests, as one test binary.
//!
//! Every test binary links the whole of ATen (a few hundred MB at the test profile's
//! opt-level), so one binary for all of them keeps the build's link time and disk down. The
//! tests that change process-wide state another test could observe stay in binaries of their
//! own: `tests/promotion.rs` (the default dtype) and `tests/random.rs` (the default
//! generator's sequence).

mod common;
mod complex_ops;
mod derivatives;
mod einsum;
mod factory;
mod generated_fresh;
mod generated_ops;
mod index;
mod indexing_ops;
mod kernel_paths;
mod kernels;
mod linear_algebra;
mod nn_activation;
mod nn_convolution;
mod nn_embedding_bag;
mod nn_normalization;
mod nn_softmax_loss;
mod pointwise;
mod printing;
mod reductions;
mod shape_ops;
mod sorting;
mod torch_parity;
mod unique_ops;
mod unsigned_dtypes;
mod views;
