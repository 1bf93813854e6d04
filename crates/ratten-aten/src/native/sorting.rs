//! The sorting family (ATen's `Sorting.cpp`, `SortingUtils.h` and `TensorCompare`'s sort
//! overloads): sort (every overload without Dimname), argsort, msort, topk and kthvalue.
//! Shapes, dtypes and PyTorch's checks here; the loops over each line along `dim` in
//! `native/cpu/sort_kernels.rs` (Note [Sorting by integer keys]).
//!
//! One deliberate difference: every sort is stable (`stable=False` included), so equal
//! elements keep their order where torch's unstable sort may swap them; topk and kthvalue give
//! ties to the lowest index.

use ratten_core::tensor_impl::maybe_wrap_dim;
use ratten_core::{Error, Result, ScalarType, TensorOptions};

use crate::generated::operators as ops;
use crate::native::cpu::sort_kernels::{kthvalue_kernel, sort_kernel, topk_kernel};
use crate::native::reduce_utils::zero_numel_check_dim;
use crate::structured::{resize_output, MetaBase};
use crate::tensor_iterator::overlap::{assert_no_overlap, is_non_overlapping_and_dense};
use crate::Tensor;

/// `infer_dense_strides` (TensorUtils.cpp): dense strides that keep the order of `strides`
/// (TensorIterator's permutation: dims sorted by stride, then by size, 0 strides in place).
pub fn infer_dense_strides(sizes: &[i64], strides: &[i64]) -> Vec<i64> {
    let ndim = sizes.len();
    if ndim == 0 {
        return Vec::new();
    }
    if ndim == 1 {
        return vec![1];
    }
    // perm[0] is the fastest-moving dim; starts as n-1, ..., 0.
    let mut perm: Vec<usize> = (0..ndim).rev().collect();
    // -1: dim0 before dim1; 1: after; 0: ambiguous.
    let should_swap = |dim0: usize, dim1: usize| -> i32 {
        let (s0, s1) = (strides[dim0], strides[dim1]);
        if s0 == 0 || s1 == 0 {
            0
        } else if s0 < s1 {
            -1
        } else if s0 > s1 || sizes[dim0] > sizes[dim1] {
            // Equal strides: the smaller size goes first.
            1
        } else {
            0
        }
    };
    // Insertion sort, as TensorIterator's: dims with stride 0 do not move.
    for i in 1..ndim {
        let mut dim1 = i;
        for j in 1..=i {
            let dim0 = i - j;
            match should_swap(perm[dim0], perm[dim1]) {
                c if c > 0 => {
                    perm.swap(dim0, dim1);
                    dim1 = dim0;
                }
                c if c < 0 => break,
                _ => {}
            }
        }
    }
    let mut out = vec![0i64; ndim];
    let mut curr = 1i64;
    for &d in &perm {
        out[d] = curr;
        if sizes[d] > 1 {
            curr *= sizes[d];
        }
    }
    out
}

fn options_of(self_: &Tensor, dtype: ScalarType) -> TensorOptions {
    TensorOptions::new().dtype(dtype).device(self_.device())
}

// ---------------------------------------------------------------------------------------------
// sort, argsort, msort

/// TORCH_META_FUNC2(sort, stable): outputs of `self`'s shape, with `self`'s strides when they
/// are dense, else dense strides in their order (pytorch#65863).
pub fn sort_stable_meta(
    m: &dyn MetaBase,
    self_: &Tensor,
    _stable: Option<bool>,
    dim: i64,
    _descending: bool,
) -> Result<()> {
    maybe_wrap_dim(dim, self_.dim(), true)?;
    let (sizes, strides) = self_.with_meta(|t| (t.sizes().to_vec(), t.strides().to_vec()));
    let strides = if is_non_overlapping_and_dense(&sizes, &strides) {
        strides
    } else {
        infer_dense_strides(&sizes, &strides)
    };
    m.set_output_raw_strided(0, &sizes, &strides, options_of(self_, self_.dtype()))?;
    m.set_output_raw_strided(1, &sizes, &strides, options_of(self_, ScalarType::Long))
}

/// TORCH_IMPL_FUNC(sort_stable_out): a stable sort whatever `stable` says (Note [Sorting by
/// integer keys]).
pub fn sort_stable_out(
    _state: &mut (),
    self_: &Tensor,
    _stable: Option<bool>,
    dim: i64,
    descending: bool,
    values: &Tensor,
    indices: &Tensor,
) -> Result<()> {
    if self_.dtype().is_complex() {
        return Err(Error::type_error(
            " Sort does not support complex dtypes on CPU",
        ));
    }
    if self_.dim() == 0 && self_.numel() == 1 {
        ops::copy_::call(values, self_, false)?;
        indices.zero_()?;
        return Ok(());
    }
    let dim = maybe_wrap_dim(dim, self_.dim(), true)?;
    // The kernel reads a line whole before it writes it, so it may sort `self` into itself;
    // a `values` that overlaps `self` otherwise is sorted in place from a copy, as torch does.
    let shares = self_.meta().storage().is_alias_of(values.meta().storage());
    if shares && !values.is_same(self_) {
        ops::copy_::call(values, self_, false)?;
        return sort_kernel(values, values, indices, dim, descending);
    }
    sort_kernel(self_, values, indices, dim, descending)
}

/// `sort` (CompositeExplicitAutograd): `sort.stable` with `stable=False`.
pub fn sort(self_: &Tensor, dim: i64, descending: bool) -> Result<(Tensor, Tensor)> {
    ops::sort_stable::call(self_, Some(false), dim, descending)
}

/// `sort.values` (`sort_out`).
pub fn sort_out(
    self_: &Tensor,
    dim: i64,
    descending: bool,
    values: &Tensor,
    indices: &Tensor,
) -> Result<(Tensor, Tensor)> {
    ops::sort_values_stable::call(self_, Some(false), dim, descending, values, indices)
}

/// `argsort` (CompositeImplicitAutograd): the indices of `sort`.
pub fn argsort(self_: &Tensor, dim: i64, descending: bool) -> Result<Tensor> {
    Ok(ops::sort::call(self_, dim, descending)?.1)
}

/// `argsort.stable`.
pub fn argsort_stable(self_: &Tensor, stable: bool, dim: i64, descending: bool) -> Result<Tensor> {
    Ok(ops::sort_stable::call(self_, Some(stable), dim, descending)?.1)
}

/// `argsort.stable_out` (`argsort_out`): the values go to a scratch tensor.
pub fn argsort_out<'a>(
    self_: &Tensor,
    stable: bool,
    dim: i64,
    descending: bool,
    out: &'a Tensor,
) -> Result<&'a Tensor> {
    let values = Tensor::empty(&[0], options_of(self_, self_.dtype()))?;
    ops::sort_values_stable::call(self_, Some(stable), dim, descending, &values, out)?;
    Ok(out)
}

/// `msort`: the values of `sort` along dim 0.
pub fn msort(self_: &Tensor) -> Result<Tensor> {
    Ok(ops::sort::call(self_, 0, false)?.0)
}

/// `msort.out`.
pub fn msort_out<'a>(self_: &Tensor, out: &'a Tensor) -> Result<&'a Tensor> {
    let indices = Tensor::empty(&[0], options_of(self_, ScalarType::Long))?;
    ops::sort_values::call(self_, 0, false, out, &indices)?;
    Ok(out)
}

// ---------------------------------------------------------------------------------------------
// topk

/// `self`'s length along the wrapped `dim` (1 for a 0-dim tensor).
fn slice_size(self_: &Tensor, dim: usize) -> i64 {
    if self_.dim() > 0 {
        self_.sizes()[dim]
    } else {
        1
    }
}

fn check_topk_k(self_: &Tensor, k: i64, dim: usize) -> Result<()> {
    if !(0..=slice_size(self_, dim)).contains(&k) {
        return Err(Error::runtime("selected index k out of range"));
    }
    Ok(())
}

/// TORCH_META_FUNC(topk): `self`'s shape with `k` along `dim`.
pub fn topk_meta(
    m: &dyn MetaBase,
    self_: &Tensor,
    k: i64,
    dim: i64,
    _largest: bool,
    _sorted: bool,
) -> Result<()> {
    let d = maybe_wrap_dim(dim, self_.dim(), true)?;
    check_topk_k(self_, k, d)?;
    let mut sizes = self_.sizes().to_vec();
    if !sizes.is_empty() {
        sizes[d] = k;
    }
    m.set_output_raw_strided(0, &sizes, &[], options_of(self_, self_.dtype()))?;
    m.set_output_raw_strided(1, &sizes, &[], options_of(self_, ScalarType::Long))
}

/// TORCH_IMPL_FUNC(topk_out_cpu).
#[allow(clippy::too_many_arguments)]
pub fn topk_out_cpu(
    _state: &mut (),
    self_: &Tensor,
    k: i64,
    dim: i64,
    largest: bool,
    sorted: bool,
    values: &Tensor,
    indices: &Tensor,
) -> Result<()> {
    if self_.dtype().is_complex() {
        return Err(Error::type_error(
            " topk does not support complex dtypes on CPU",
        ));
    }
    if self_.dtype() == ScalarType::Bool {
        return Err(Error::not_implemented(
            "topk does not support bool dtypes on CPU",
        ));
    }
    let d = maybe_wrap_dim(dim, self_.dim(), true)?;
    check_topk_k(self_, k, d)?;
    if self_.dim() == 0 && self_.numel() == 1 {
        ops::copy_::call(values, self_, false)?;
        indices.zero_()?;
        return Ok(());
    }
    topk_kernel(values, indices, self_, k as usize, d, largest, sorted)
}

// ---------------------------------------------------------------------------------------------
// kthvalue

/// `kthvalue` (CompositeExplicitAutograd): `kthvalue.values` into fresh outputs.
pub fn kthvalue(self_: &Tensor, k: i64, dim: i64, keepdim: bool) -> Result<(Tensor, Tensor)> {
    let values = Tensor::empty(&[0], options_of(self_, self_.dtype()))?;
    let indices = Tensor::empty(&[0], options_of(self_, ScalarType::Long))?;
    ops::kthvalue_values::call(self_, k, dim, keepdim, &values, &indices)?;
    Ok((values, indices))
}

/// `out` with a size-1 dim inserted at `dim` (`unsqueeze_`), in place.
fn unsqueeze_in_place(out: &Tensor, dim: usize) -> Result<()> {
    let (mut sizes, mut strides) = out.with_meta(|t| (t.sizes().to_vec(), t.strides().to_vec()));
    let stride = if dim >= sizes.len() {
        1
    } else {
        sizes[dim] * strides[dim]
    };
    sizes.insert(dim, 1);
    strides.insert(dim, stride);
    out.as_strided_(&sizes, &strides, None)?;
    Ok(())
}

/// `out` without its size-1 dim `dim` (`squeeze_(dim)`), in place.
fn squeeze_in_place(out: &Tensor, dim: usize) -> Result<()> {
    let (mut sizes, mut strides) = out.with_meta(|t| (t.sizes().to_vec(), t.strides().to_vec()));
    if sizes.get(dim) == Some(&1) {
        sizes.remove(dim);
        strides.remove(dim);
        out.as_strided_(&sizes, &strides, None)?;
    }
    Ok(())
}

/// `kthvalue_out_cpu` (`kthvalue_out_impl_cpu`), registered for Meta too (torch has a Python
/// meta for it): the `k`-th smallest element along `dim` and its index; NaN counts as the
/// greatest. The outputs are checked, then resized with `dim` kept
/// (`_reduction_with_indices_allocate_or_resize_output`) and squeezed after the kernel.
pub fn kthvalue_out_cpu(
    self_: &Tensor,
    k: i64,
    dim: i64,
    keepdim: bool,
    values: &Tensor,
    indices: &Tensor,
) -> Result<(Tensor, Tensor)> {
    let d = maybe_wrap_dim(dim, self_.dim(), true)?;
    zero_numel_check_dim(self_, d as i64, "kthvalue()")?;
    if !(1..=slice_size(self_, d)).contains(&k) {
        return Err(Error::runtime(format!(
            "kthvalue(): selected number k out of range for dimension {d}"
        )));
    }
    assert_no_overlap(self_, values)?;
    if values.dtype() != self_.dtype() || values.device() != self_.device() {
        return Err(Error::runtime(
            "output values must be of same type as input",
        ));
    }
    if indices.dtype() != ScalarType::Long {
        return Err(Error::runtime("output indices must be of scalar type Long"));
    }
    if indices.device() != self_.device() {
        return Err(Error::runtime(
            "output indices must be on same device as input",
        ));
    }
    let scalar = self_.dim() == 0 && self_.numel() == 1;
    // AT_DISPATCH_ALL_TYPES_AND2(Half, BFloat16), before anything is written.
    let dt = self_.dtype();
    if !scalar && (dt == ScalarType::Bool || dt.is_complex()) {
        return Err(crate::native::cpu::not_implemented("kthvalue_cpu", dt));
    }
    let mut result_sizes = self_.sizes().to_vec();
    if !result_sizes.is_empty() {
        result_sizes[d] = 1;
    }
    let squeeze = !keepdim && self_.dim() > 0;
    for out in [values, indices] {
        if squeeze && out.dim() + 1 == self_.dim() {
            // Keeps a given non-contiguous output's strides through the resize.
            unsqueeze_in_place(out, d)?;
        }
        resize_output(out, &result_sizes)?;
    }
    if !values.is_meta() {
        if scalar {
            ops::copy_::call(values, self_, false)?;
            indices.zero_()?;
        } else {
            kthvalue_kernel(values, indices, self_, k as usize, d)?;
        }
    }
    if squeeze {
        squeeze_in_place(values, d)?;
        squeeze_in_place(indices, d)?;
    }
    Ok((values.clone(), indices.clone()))
}
