//! The `new_*` factories (TensorFactories.cpp: `new_empty`, `new_empty_strided`, `new_full`,
//! `new_zeros`, `new_ones`) and `zero_`: a `new_*` method makes a tensor with `self`'s dtype
//! and device unless others are asked for (torch's `self.options().merge_in(options)`), through
//! the factory operators, so it works on every device, meta included.

use ratten_core::{Device, Result, Scalar, ScalarType};

use crate::generated::operators as ops;
use crate::native::Layout;
use crate::Tensor;

/// `self.options().merge_in(...)`: the options given, else `self`'s dtype and device (ratten's
/// tensors are all strided and unpinned).
fn merged(
    self_: &Tensor,
    dtype: Option<ScalarType>,
    device: Option<Device>,
) -> (ScalarType, Device) {
    (
        dtype.unwrap_or(self_.dtype()),
        device.unwrap_or(self_.device()),
    )
}

/// `new_empty(size, dtype=, layout=, device=, pin_memory=)`: uninitialised (`at::empty`).
pub fn new_empty_symint(
    self_: &Tensor,
    size: &[i64],
    dtype: Option<ScalarType>,
    layout: Option<Layout>,
    device: Option<Device>,
    pin_memory: Option<bool>,
) -> Result<Tensor> {
    let (dtype, device) = merged(self_, dtype, device);
    ops::empty_memory_format::call(size, Some(dtype), layout, Some(device), pin_memory, None)
}

/// `new_empty_strided(size, stride, ...)`: uninitialised with the given strides.
pub fn new_empty_strided_symint(
    self_: &Tensor,
    size: &[i64],
    stride: &[i64],
    dtype: Option<ScalarType>,
    layout: Option<Layout>,
    device: Option<Device>,
    pin_memory: Option<bool>,
) -> Result<Tensor> {
    let (dtype, device) = merged(self_, dtype, device);
    ops::empty_strided::call(size, stride, Some(dtype), layout, Some(device), pin_memory)
}

/// `new_full(size, fill_value, ...)`: `full` with `self`'s dtype unless one is given (the
/// value does not choose it, unlike `torch.full`).
pub fn new_full(
    self_: &Tensor,
    size: &[i64],
    fill_value: &Scalar,
    dtype: Option<ScalarType>,
    layout: Option<Layout>,
    device: Option<Device>,
    pin_memory: Option<bool>,
) -> Result<Tensor> {
    let (dtype, device) = merged(self_, dtype, device);
    ops::full::call(
        size,
        fill_value,
        Some(dtype),
        layout,
        Some(device),
        pin_memory,
    )
}

/// `new_zeros(size, ...)`.
pub fn new_zeros(
    self_: &Tensor,
    size: &[i64],
    dtype: Option<ScalarType>,
    layout: Option<Layout>,
    device: Option<Device>,
    pin_memory: Option<bool>,
) -> Result<Tensor> {
    let (dtype, device) = merged(self_, dtype, device);
    ops::zeros::call(size, Some(dtype), layout, Some(device), pin_memory)
}

/// `new_ones(size, ...)`.
pub fn new_ones(
    self_: &Tensor,
    size: &[i64],
    dtype: Option<ScalarType>,
    layout: Option<Layout>,
    device: Option<Device>,
    pin_memory: Option<bool>,
) -> Result<Tensor> {
    let (dtype, device) = merged(self_, dtype, device);
    ops::ones::call(size, Some(dtype), layout, Some(device), pin_memory)
}

/// `zero_` (CPU): `fill_(0)`, whose kernel writes a contiguous run as one `memset` (PyTorch
/// takes `memset` for small dense tensors and `fill_` otherwise).
pub fn zero_(self_: &Tensor) -> Result<&Tensor> {
    ops::fill__Scalar::call(self_, &Scalar::Int(0))?;
    Ok(self_)
}

/// `zero_meta_`: nothing to write on a meta tensor.
pub fn zero_meta_(self_: &Tensor) -> Result<&Tensor> {
    Ok(self_)
}
