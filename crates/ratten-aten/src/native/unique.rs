//! The unique family (ATen's `Unique.cpp`): `_unique`, `_unique2`, `unique_dim`,
//! `unique_consecutive` and `unique_dim_consecutive`, the operators under torch.functional's
//! `unique` / `unique_consecutive` (python/ratten/functional.py).
//!
//! Note [Unique by sorting]
//! As PyTorch's CPU kernels, `_unique` / `_unique2` always sort (the flattened input, with the
//! sorting family's stable sort), whatever `sorted` says: torch 2.15 returns sorted values for
//! `sorted=False` too. The groups of equal neighbours are then found in parallel pieces
//! (`native/cpu/unique_kernels.rs`); `return_inverse` maps each element back through the
//! sort's permutation. Equality is the element type's `==`: every NaN is a group of its own,
//! and -0.0 joins 0.0, the group showing the first of them in the input (the sort is
//! stable). `unique_dim` sorts whole rows (the slices along `dim`) lexicographically by the
//! sorting keys (NaN greatest), stable, and always returns the inverse and the counts, as
//! torch's does; a row with a NaN equals no row. The outputs' sizes depend on the data, so
//! every operator here refuses meta tensors with torch's text for an operator without a Meta
//! kernel.

use ratten_core::tensor_impl::maybe_wrap_dim;
use ratten_core::{Error, Result, ScalarType, TensorAccess};

use crate::generated::operators as ops;
use crate::native::cpu::elements::not_implemented;
use crate::native::cpu::unique_kernels::{
    as_elements, dispatch_unique, row_groups, runs, unique_sorted, UniqueElem,
};
use crate::Tensor;

/// The refusal of an operator torch registers no Meta kernel (nor fake impl) for, as
/// `aten::<op>` on a meta tensor raises it.
pub fn no_meta_kernel(op: &str) -> Error {
    Error::not_implemented(format!(
        "aten::{op}: attempted to run this operator with Meta tensors, but there was no fake impl or Meta kernel registered. You may have run into this message while using an operator with PT2 compilation APIs (torch.compile/torch.export); in order to use this operator with those APIs you'll need to add a fake impl. Please see the following for next steps:  https://pytorch.org/tutorials/advanced/custom_ops_landing_page.html"
    ))
}

/// An empty 1-D tensor of `dtype` on `self_`'s device.
fn empty_1d(self_: &Tensor, dtype: ScalarType) -> Result<Tensor> {
    Tensor::empty(&[0], (dtype, self_.device()))
}

/// `AT_DISPATCH` over the types unique handles: every real type and bool, not complex.
fn check_dtype(self_: &Tensor, kernel: &str) -> Result<()> {
    let dt = self_.dtype();
    if dt.is_complex() {
        return Err(not_implemented(kernel, dt));
    }
    Ok(())
}

/// `unique_cpu_sorted_template` (and the bool template, which gives the same): the sorted
/// distinct elements of `self_`, the inverse (`self_`'s shape) when asked for, else an empty
/// tensor, and the counts when asked for, else an empty tensor.
fn unique_flat(
    self_: &Tensor,
    return_inverse: bool,
    return_counts: bool,
) -> Result<(Tensor, Tensor, Tensor)> {
    check_dtype(self_, "unique")?;
    let dtype = self_.dtype();
    let numel = self_.numel();
    let inverse = if return_inverse {
        Tensor::empty(&self_.sizes(), (ScalarType::Long, self_.device()))?
    } else {
        empty_1d(self_, ScalarType::Long)?
    };
    if numel == 0 {
        return Ok((
            empty_1d(self_, dtype)?,
            inverse,
            empty_1d(self_, ScalarType::Long)?,
        ));
    }
    // A 0-dim input gives one element, as PyTorch's `flatten` does.
    let flat = self_.reshape(&[-1])?;
    let (sorted, perm) = ops::sort::call(&flat, 0, false)?;
    let sorted = as_elements(&sorted)?;
    let groups = unique_sorted(
        &sorted,
        &perm,
        return_inverse.then_some(&inverse),
        return_counts,
        dtype,
    )?;
    let counts = match groups.counts {
        Some(c) => c,
        None => empty_1d(self_, ScalarType::Long)?,
    };
    Ok((groups.values, inverse, counts))
}

/// `_unique_cpu`: `(values, inverse)`, values sorted whatever `sorted` says (Note [Unique by
/// sorting]).
pub fn _unique_cpu(
    self_: &Tensor,
    _sorted: bool,
    return_inverse: bool,
) -> Result<(Tensor, Tensor)> {
    if self_.is_meta() {
        return Err(no_meta_kernel("_unique"));
    }
    let (values, inverse, _) = unique_flat(self_, return_inverse, false)?;
    Ok((values, inverse))
}

/// `_unique2_cpu`: `(values, inverse, counts)`, the last two empty unless asked for.
pub fn _unique2_cpu(
    self_: &Tensor,
    _sorted: bool,
    return_inverse: bool,
    return_counts: bool,
) -> Result<(Tensor, Tensor, Tensor)> {
    if self_.is_meta() {
        return Err(no_meta_kernel("_unique2"));
    }
    unique_flat(self_, return_inverse, return_counts)
}

/// `_unique_dim_cpu_template`: the distinct slices of `self_` along `dim`, sorted
/// lexicographically unless `consecutive` (then the first of each run of equal neighbours),
/// with the inverse (one entry per slice) and the counts, both always computed.
fn unique_dim_impl(
    self_: &Tensor,
    dim: i64,
    consecutive: bool,
) -> Result<(Tensor, Tensor, Tensor)> {
    check_dtype(self_, "unique_dim")?;
    let sizes = self_.sizes();
    let d = maybe_wrap_dim(dim, sizes.len(), false)?;
    let zero_dims = sizes.iter().filter(|&&s| s == 0).count();
    if sizes[d] == 0 {
        if zero_dims != 1 {
            return Err(Error::runtime(
                "Number of zero sized dimensions is more than one, so unique cannot be applied ",
            ));
        }
        return Ok((
            Tensor::empty(&sizes, (self_.dtype(), self_.device()))?,
            empty_1d(self_, ScalarType::Long)?,
            empty_1d(self_, ScalarType::Long)?,
        ));
    }
    if zero_dims != 0 {
        return Err(Error::runtime(
            "There are 0 sized dimensions, and they aren't selected, so unique cannot be applied",
        ));
    }
    // The slices as the rows of an [n, m] matrix.
    let moved = self_.movedim(d as i64, 0)?;
    let mut out_sizes = moved.sizes();
    let n = out_sizes[0];
    let flat = moved.contiguous()?.view(&[n, -1])?;
    let m = flat.sizes()[1];
    let elements = as_elements(&flat)?;
    let (firsts, inverse, counts) = dispatch_unique!(elements.dtype(), "unique_dim", T => {
        let g = TensorAccess::read(elements.base())?;
        let data = g.input_slice::<T>(0)?;
        Ok(row_groups::<T>(data, n as usize, m as usize, consecutive))
    })?;
    let groups = firsts.len() as i64;
    let rows = Tensor::from_vec(firsts, &[groups])?;
    out_sizes[0] = groups;
    let output = ops::index_select::call(&flat, 0, &rows)?
        .view(&out_sizes)?
        .movedim(0, d as i64)?;
    Ok((
        output,
        Tensor::from_vec(inverse, &[n])?,
        Tensor::from_vec(counts, &[groups])?,
    ))
}

/// `unique_dim_cpu`: `unique_dim_impl` sorted (`sorted` is ignored, as in PyTorch).
pub fn unique_dim_cpu(
    self_: &Tensor,
    dim: i64,
    _sorted: bool,
    _return_inverse: bool,
    _return_counts: bool,
) -> Result<(Tensor, Tensor, Tensor)> {
    if self_.is_meta() {
        return Err(no_meta_kernel("unique_dim"));
    }
    unique_dim_impl(self_, dim, false)
}

/// `unique_dim_consecutive_cpu`: the first slice of each run of equal slices along `dim`.
pub fn unique_dim_consecutive_cpu(
    self_: &Tensor,
    dim: i64,
    _return_inverse: bool,
    _return_counts: bool,
) -> Result<(Tensor, Tensor, Tensor)> {
    if self_.is_meta() {
        return Err(no_meta_kernel("unique_dim_consecutive"));
    }
    unique_dim_impl(self_, dim, true)
}

/// `unique_consecutive_cpu`: the flattened input's runs when `dim` is None (or 0 of a 1-D
/// input), else `unique_dim_consecutive`'s slices. On the flattened path the inverse has the
/// input's shape and the counts are computed only when asked for.
pub fn unique_consecutive_cpu(
    self_: &Tensor,
    return_inverse: bool,
    return_counts: bool,
    dim: Option<i64>,
) -> Result<(Tensor, Tensor, Tensor)> {
    if self_.is_meta() {
        return Err(no_meta_kernel("unique_consecutive"));
    }
    match dim {
        Some(d) if !(d == 0 && self_.dim() == 1) => unique_dim_impl(self_, d, true),
        _ => unique_consecutive_flat(self_, return_inverse, return_counts),
    }
}

/// `unique_consecutive_cpu_template`.
fn unique_consecutive_flat(
    self_: &Tensor,
    return_inverse: bool,
    return_counts: bool,
) -> Result<(Tensor, Tensor, Tensor)> {
    check_dtype(self_, "unique")?;
    let dtype = self_.dtype();
    let input = as_elements(&self_.contiguous()?)?;
    dispatch_unique!(input.dtype(), "unique", T => {
        let (values, inverse, counts) = {
            let g = TensorAccess::read(input.base())?;
            runs::<T>(g.input_slice::<T>(0)?, return_inverse, return_counts)
        };
        let inverse = if return_inverse {
            Tensor::from_vec(inverse, &self_.sizes())?
        } else {
            empty_1d(self_, ScalarType::Long)?
        };
        let counts_len = counts.len() as i64;
        Ok((
            <T as UniqueElem>::into_tensor(values, dtype)?,
            inverse,
            Tensor::from_vec(counts, &[counts_len])?,
        ))
    })
}
