//! `copy_` with dtype conversion and broadcasting (Copy.cpp), `to(dtype)`, and `fill_` through
//! the fill stub.

use ratten_core::{Result, Scalar, ScalarType};

use crate::native::cpu::unary_kernels::{COPY_STUB, FILL_STUB};
use crate::tensor_iterator::{nullary_op_config, TensorIteratorConfig};
use crate::Tensor;

/// `self.copy_(src)`: `src` broadcasts to `self`'s shape and is cast to `self`'s dtype, in one
/// pass. Overlap between `self` and `src` is refused with PyTorch's messages.
pub fn copy_(self_: &Tensor, src: &Tensor) -> Result<Tensor> {
    if self_.is_same(src) {
        return Ok(self_.clone());
    }
    let iter = TensorIteratorConfig::new()
        .set_check_mem_overlap(true)
        .check_all_same_dtype(false)
        .check_all_same_device(false)
        .resize_outputs(false)
        .add_output(Some(self_))?
        .add_const_input(src)
        .build_standalone()?;
    if iter.numel() == 0 || self_.is_meta() {
        return Ok(self_.clone());
    }
    (COPY_STUB.get(iter.device_type())?)(&iter)?;
    Ok(self_.clone())
}

/// `empty_like(self, dtype)` keeping a dense layout (`MemoryFormat::Preserve`).
fn empty_like_dtype(self_: &Tensor, dtype: ScalarType) -> Result<Tensor> {
    let m = self_.meta();
    if crate::tensor_iterator::overlap::is_non_overlapping_and_dense(m.sizes(), m.strides()) {
        crate::structured::empty_strided(
            m.sizes(),
            m.strides(),
            ratten_core::TensorOptions::new()
                .dtype(dtype)
                .device(self_.device()),
        )
    } else {
        Tensor::empty(m.sizes(), (dtype, self_.device()))
    }
}

/// `self.to(dtype)`: `self` itself when the dtype already matches (and no copy is asked).
pub fn to_dtype(self_: &Tensor, dtype: ScalarType) -> Result<Tensor> {
    to_dtype_copy(self_, dtype, false)
}

/// `self.to(dtype, copy=copy)`.
pub fn to_dtype_copy(self_: &Tensor, dtype: ScalarType, copy: bool) -> Result<Tensor> {
    if self_.dtype() == dtype && !copy {
        return Ok(self_.clone());
    }
    let out = empty_like_dtype(self_, dtype)?;
    copy_(&out, self_)?;
    Ok(out)
}

/// `self.fill_(value)` through TensorIterator's nullary loop (any strides, in parallel above
/// the grain size). The value is converted with c10's checks first.
pub fn fill_(self_: &Tensor, value: &Scalar) -> Result<Tensor> {
    let iter = nullary_op_config(self_)?.build_standalone()?;
    (FILL_STUB.get(iter.device_type())?)(&iter, value)?;
    Ok(self_.clone())
}
