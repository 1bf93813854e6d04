//! ratten: PyTorch's operator system in Rust. This crate is the facade users depend on; it
//! re-exports the layers (see ARCHITECTURE.md).
//!
//! ```
//! use ratten::{ScalarType, Tensor, TensorAutogradExt};
//! let t = Tensor::arange(6, ScalarType::Float).unwrap().view(&[2, 3]).unwrap();
//! assert_eq!(t.t().unwrap().strides().as_slice(), &[1, 3]);
//! // Gradients: d/dx sum(x * x) = 2x.
//! let x = Tensor::arange(3, ScalarType::Double).unwrap();
//! x.requires_grad_(true).unwrap();
//! x.mul(&x).unwrap().sum().unwrap().backward().unwrap();
//! assert_eq!(x.grad_tensor().unwrap().sum().unwrap().item().unwrap().to_double().unwrap(), 6.0);
//! ```

pub use ratten_aten as aten;
pub use ratten_aten::Tensor;
/// Autograd (torch::autograd): `x.requires_grad_(true)`, `y.backward()`, `autograd::grad`.
pub use ratten_autograd as autograd;
pub use ratten_autograd::{NoGradGuard, TensorAutogradExt};
pub use ratten_core as core;
pub use ratten_core::{
    Device, DeviceType, Element, Error, ErrorKind, Result, Scalar, ScalarType, TensorOptions,
};

/// README.md's Rust examples, compiled and run as doctests so they stay true.
#[doc = include_str!("../../../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;
