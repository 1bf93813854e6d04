//! Factories (aten/src/ATen/native/TensorFactories.cpp): empty, zeros, ones, full, arange,
//! eye, tensors from data, 0-dim scalar tensors, and reading back (item).

use ratten_core::{Element, Result, TensorBase, TensorOptions};

use crate::Tensor;

impl Tensor {
    /// `torch.empty(sizes, dtype=, device=)`: contents unspecified (but initialised memory).
    pub fn empty(sizes: &[i64], options: impl Into<TensorOptions>) -> Result<Tensor> {
        let o = options.into();
        TensorBase::empty(sizes, o.dtype_or_default(), o.device_or_default()).map(Tensor::from)
    }

    /// `torch.zeros`.
    pub fn zeros(sizes: &[i64], options: impl Into<TensorOptions>) -> Result<Tensor> {
        let o = options.into();
        TensorBase::zeros(sizes, o.dtype_or_default(), o.device_or_default()).map(Tensor::from)
    }

    /// A CPU tensor holding a copy of `data` with shape `sizes` (numel must match).
    pub fn from_slice<T: Element>(data: &[T], sizes: &[i64]) -> Result<Tensor> {
        TensorBase::from_slice(data, sizes).map(Tensor::from)
    }

    /// Like [`from_slice`](Self::from_slice), taking a Vec.
    pub fn from_vec<T: Element>(data: Vec<T>, sizes: &[i64]) -> Result<Tensor> {
        TensorBase::from_slice(&data, sizes).map(Tensor::from)
    }
}
