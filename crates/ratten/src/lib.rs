//! ratten: PyTorch's operator system in Rust. This crate is the facade users depend on; it
//! re-exports the layers (see ARCHITECTURE.md).
//!
//! ```
//! use ratten::{ScalarType, Tensor};
//! let t = Tensor::arange(6, ScalarType::Float).unwrap().view(&[2, 3]).unwrap();
//! assert_eq!(t.t().unwrap().strides().as_slice(), &[1, 3]);
//! ```

pub use ratten_aten as aten;
pub use ratten_aten::Tensor;
pub use ratten_core as core;
pub use ratten_core::{
    Device, DeviceType, Element, Error, ErrorKind, Result, Scalar, ScalarType, TensorOptions,
};

/// README.md's Rust examples, compiled and run as doctests so they stay true.
#[doc = include_str!("../../../README.md")]
#[cfg(doctest)]
pub struct ReadmeDoctests;
