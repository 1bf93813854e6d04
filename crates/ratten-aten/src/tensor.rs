//! The user-facing Tensor. (core helper)

/// A tensor: a cheap handle to a TensorImpl (PyTorch's at::Tensor).
#[derive(Clone)]
pub struct Tensor {}
