//! flip and roll (ATen's `TensorTransformations.cpp`): the checks and compositions here, flip's
//! copy in `native/cpu/shape_kernels.rs` (Note [flip by signed strides]).

use ratten_core::{torch_check, Result};

use crate::generated::operators as ops;
use crate::native::cpu::shape_kernels::flip_kernel;
use crate::native::reduce_utils::dim_list_to_mask;
use crate::native::shape::empty_like_preserve;
use crate::Tensor;

/// `flip` (CPU and Meta): a tensor like `self` (`empty_like` with the preserve format) holding
/// `self` reversed along `dims` (each wrapped, none repeated).
pub fn flip(self_: &Tensor, dims: &[i64]) -> Result<Tensor> {
    let nd = self_.dim();
    let mask = dim_list_to_mask(dims, nd)?;
    let out = empty_like_preserve(self_)?;
    if self_.is_meta() {
        return Ok(out);
    }
    // A dim of one element, or of stride 0, reads the same either way.
    let (sizes, strides) = (self_.sizes(), self_.strides());
    let flipped: Vec<bool> = (0..nd)
        .map(|d| mask.contains(d) && sizes[d] > 1 && strides[d] != 0)
        .collect();
    if self_.numel() <= 1 || !flipped.contains(&true) {
        ops::copy_::call(&out, self_, false)?;
        return Ok(out);
    }
    flip_kernel(&out, self_, &flipped)?;
    Ok(out)
}

/// `roll` (CPU and Meta): along one dim, the cat of the two pieces `self` splits into at
/// `size - shift` (PyTorch's CPU form, so the result's layout is cat's); several dims roll one
/// after the other; no dims roll the flattened tensor.
pub fn roll(self_: &Tensor, shifts: &[i64], dims: &[i64]) -> Result<Tensor> {
    if dims.len() != 1 || shifts.len() != 1 {
        return roll_common(self_, shifts, dims);
    }
    if self_.numel() == 0 {
        // PyTorch's `clone(preserve_format)`, with nothing to copy.
        return empty_like_preserve(self_);
    }
    let dim = dims[0];
    let size = self_.size(dim)?;
    // Python's modulo, in i128 so that no shift overflows.
    let start = (size as i128 - shifts[0] as i128).rem_euclid(size as i128) as i64;
    let t0 = self_.narrow(dim, start, size - start)?;
    let t1 = self_.narrow(dim, 0, start)?;
    ops::cat::call(&[t0, t1], dim)
}

/// `roll_common`: no dims (a single shift of the flattened tensor), or one roll per dim.
fn roll_common(self_: &Tensor, shifts: &[i64], dims: &[i64]) -> Result<Tensor> {
    torch_check!(!shifts.is_empty(), "`shifts` required");
    if dims.is_empty() && shifts.len() == 1 {
        let flat = self_.contiguous()?.view(&[self_.numel()])?;
        return ops::roll::call(&flat, shifts, &[0])?.view(&self_.sizes());
    }
    torch_check!(
        shifts.len() == dims.len(),
        "shifts and dimensions must align. shifts: {}, dims:{}",
        shifts.len(),
        dims.len()
    );
    let first = ops::roll::call(self_, &shifts[..1], &dims[..1])?;
    ops::roll::call(&first, &shifts[1..], &dims[1..])
}
