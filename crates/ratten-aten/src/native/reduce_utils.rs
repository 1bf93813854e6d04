//! What every reduction shares (ATen's `ReduceOpsUtils.h`): the reduced dims as a mask, the
//! result's shape, and the TensorIterator in reduction mode over a result viewed with
//! stride 0 along the reduced dims (Note [Reduction driver] in `native/cpu/reduce.rs` runs it).

use std::borrow::Cow;

use ratten_core::tensor_impl::maybe_wrap_dim;
use ratten_core::{Error, Result, ScalarType, TensorBase, TensorOptions};

use crate::structured::{resize_output, MetaBase};
use crate::tensor_iterator::overlap::assert_no_internal_overlap;
use crate::tensor_iterator::{MaybeOwnedOutput, TensorIterator, TensorIteratorConfig};
use crate::Tensor;

/// `DimMask`: bit `d` set when dim `d` is reduced (at most 64 dims, as c10's bitset).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DimMask(u64);

impl DimMask {
    pub fn all(ndim: usize) -> DimMask {
        DimMask(if ndim >= 64 {
            u64::MAX
        } else {
            (1u64 << ndim) - 1
        })
    }
    pub fn none() -> DimMask {
        DimMask(0)
    }
    pub fn contains(self, d: usize) -> bool {
        d < 64 && self.0 >> d & 1 == 1
    }
}

/// `dim_list_to_bitset`: each dim wrapped (a 0-dim tensor takes 0 and -1), a repeated one
/// refused.
pub fn dim_list_to_mask(dims: &[i64], ndim: usize) -> Result<DimMask> {
    if ndim > 64 {
        return Err(Error::runtime(
            "only tensors with up to 64 dims are supported",
        ));
    }
    let mut mask = 0u64;
    for &d in dims {
        let w = maybe_wrap_dim(d, ndim, true)?;
        if mask >> w & 1 == 1 {
            return Err(Error::runtime(format!(
                "dim {w} appears multiple times in the list of dims"
            )));
        }
        mask |= 1 << w;
    }
    Ok(DimMask(mask))
}

/// `make_dim_mask`: `None`, or an empty list unless `allow_empty_dims`, reduces every dim.
pub fn make_dim_mask(dims: Option<&[i64]>, ndim: usize, allow_empty_dims: bool) -> Result<DimMask> {
    match dims {
        Some(d) if !d.is_empty() || allow_empty_dims => dim_list_to_mask(d, ndim),
        _ => {
            if ndim > 64 {
                return Err(Error::runtime(
                    "only tensors with up to 64 dims are supported",
                ));
            }
            Ok(DimMask::all(ndim))
        }
    }
}

/// `shape_from_dim_mask`: the reduced dims dropped, or kept with size 1.
pub fn shape_from_dim_mask(sizes: &[i64], mask: DimMask, keepdim: bool) -> Vec<i64> {
    sizes
        .iter()
        .enumerate()
        .filter_map(|(d, &s)| match (mask.contains(d), keepdim) {
            (false, _) => Some(s),
            (true, true) => Some(1),
            (true, false) => None,
        })
        .collect()
}

/// `resize_reduction`: announces output 0 of a reduction of `self_` over `dims` (`None`: all)
/// with dtype `out_dtype`.
pub fn resize_reduction(
    m: &dyn MetaBase,
    self_: &Tensor,
    dims: Option<&[i64]>,
    keepdim: bool,
    out_dtype: ScalarType,
    allow_empty_dims: bool,
) -> Result<DimMask> {
    let mask = make_dim_mask(dims, self_.dim(), allow_empty_dims)?;
    let shape = shape_from_dim_mask(&self_.sizes(), mask, keepdim);
    let options = TensorOptions::new().dtype(out_dtype).device(self_.device());
    m.set_output_raw_strided(0, &shape, &[], options)?;
    Ok(mask)
}

/// `resize_reduction_with_indices`: values (`out_dtype`) and int64 indices over one dim.
pub fn resize_reduction_with_indices(
    m: &dyn MetaBase,
    self_: &Tensor,
    dim: i64,
    keepdim: bool,
    out_dtype: ScalarType,
) -> Result<()> {
    let mask = dim_list_to_mask(&[dim], self_.dim())?;
    let shape = shape_from_dim_mask(&self_.sizes(), mask, keepdim);
    let options = TensorOptions::new().device(self_.device());
    m.set_output_raw_strided(0, &shape, &[], options.dtype(out_dtype))?;
    m.set_output_raw_strided(1, &shape, &[], options.dtype(ScalarType::Long))?;
    Ok(())
}

/// `zero_numel_check_dims` for one dim: reducing an empty dim of an op without identity.
pub fn zero_numel_check_dim(self_: &Tensor, dim: i64, fn_name: &str) -> Result<()> {
    if self_.dim() == 0 {
        if dim != 0 && dim != -1 {
            return Err(Error::index(format!(
                "{fn_name}: Expected reduction dim -1 or 0 for scalar but got {dim}"
            )));
        }
    } else {
        let w = maybe_wrap_dim(dim, self_.dim(), false)?;
        if self_.sizes()[w] == 0 {
            return Err(Error::index(format!(
                "{fn_name}: Expected reduction dim {dim} to have non-zero size."
            )));
        }
    }
    Ok(())
}

/// `zero_numel_check_dims` for a list: it must name dims, none of them empty.
pub fn zero_numel_check_dims(self_: &Tensor, dims: &[i64], fn_name: &str) -> Result<()> {
    if dims.is_empty() {
        return Err(Error::runtime(format!(
            "{fn_name}: Expected reduction dim to be specified for input.numel() == 0. \
             Specify the reduction dim with the 'dim' argument."
        )));
    }
    dims.iter()
        .try_for_each(|&d| zero_numel_check_dim(self_, d, fn_name))
}

/// `get_dtype_from_self`: `dtype=` if given, else int64 for integral (and bool) inputs when
/// `promote_integers`, else the input's dtype.
pub fn get_dtype_from_self(
    self_: &Tensor,
    dtype: Option<ScalarType>,
    promote_integers: bool,
) -> ScalarType {
    match dtype {
        Some(d) => d,
        None if promote_integers && self_.dtype().is_integral(true) => ScalarType::Long,
        None => self_.dtype(),
    }
}

/// `infer_dtype_from_optional`: `dtype=`, else a given output's dtype, else
/// [`get_dtype_from_self`] with integer promotion.
pub fn infer_dtype_from_optional(
    self_: &Tensor,
    dtype: Option<ScalarType>,
    result: Option<&Tensor>,
) -> ScalarType {
    match (dtype, result) {
        (Some(d), _) => d,
        (None, Some(r)) => r.dtype(),
        (None, None) => get_dtype_from_self(self_, None, true),
    }
}

/// `review_reduce_result`: `result` viewed with the input's rank, stride 0 along the reduced
/// dims, so that the iterator sees the reduced dims as its outputs' stride-0 dims.
fn review_reduce_result(
    result: &Tensor,
    ndim: usize,
    mask: DimMask,
    keepdim: bool,
) -> Result<TensorBase> {
    let mut shape = result.sizes().to_vec();
    let mut stride = result.strides().to_vec();
    for d in 0..ndim {
        if mask.contains(d) {
            if keepdim {
                stride[d] = 0;
            } else {
                shape.insert(d, 1);
                stride.insert(d, 0);
            }
        }
    }
    Ok(result.as_strided(&shape, &stride)?.into_base())
}

/// The input of a reduction in `in_dtype` (a converted copy when it differs, as PyTorch's
/// `self.to(in_dtype)`).
fn reduction_input(self_: &Tensor, in_dtype: ScalarType) -> Result<TensorBase> {
    if self_.dtype() == in_dtype {
        return Ok(self_.base().clone());
    }
    Ok(self_.to_dtype(in_dtype)?.into_base())
}

/// `make_reduction` (`meta::make_reduction` and the ReduceOpsUtils one): the iterator of a
/// reduction of `self_` (converted to `in_dtype`) over `mask` into `results` (1 or 2, each
/// already of the reduced shape, or resized to it when `resize`).
pub fn make_reduction<'a>(
    self_: &Tensor,
    results: &[&Tensor],
    mask: DimMask,
    keepdim: bool,
    in_dtype: ScalarType,
    resize: bool,
) -> Result<TensorIterator<'a>> {
    let ndim = self_.dim();
    if resize {
        let shape = shape_from_dim_mask(&self_.sizes(), mask, keepdim);
        for r in results {
            resize_output(r, &shape)?;
        }
    }
    // A result whose elements share memory (an expanded out=) would be read by the driver as
    // more reduced dims.
    for r in results {
        assert_no_internal_overlap(r.base())?;
    }
    let viewed = results
        .iter()
        .map(|r| review_reduce_result(r, ndim, mask, keepdim))
        .collect::<Result<Vec<_>>>()?;
    reduce_op(viewed, reduction_input(self_, in_dtype)?)
}

/// `TensorIterator::reduce_op`: the iterator in reduction mode over the viewed results and
/// the input.
fn reduce_op<'a>(viewed: Vec<TensorBase>, input: TensorBase) -> Result<TensorIterator<'a>> {
    let mut config = TensorIteratorConfig::new()
        .set_check_mem_overlap(false)
        .resize_outputs(false)
        .is_reduction(true)
        .check_all_same_dtype(false);
    for v in viewed {
        config = config.add_output(MaybeOwnedOutput(Some(Cow::Owned(v))))?;
    }
    config.add_const_input(input).build_standalone()
}

/// The iterator of a reduction over every element of `self_` into the one-element `result`
/// (any shape of one element, as argmax's `keepdim` result): `self_.reshape(-1)` reduced along
/// its one dim.
pub fn make_full_reduction<'a>(
    self_: &Tensor,
    results: &[&Tensor],
    in_dtype: ScalarType,
) -> Result<TensorIterator<'a>> {
    let flat = self_.reshape(&[-1])?;
    let n = flat.numel();
    let viewed = results
        .iter()
        .map(|r| Ok(r.as_strided(&[n], &[0])?.into_base()))
        .collect::<Result<Vec<_>>>()?;
    reduce_op(viewed, reduction_input(&flat, in_dtype)?)
}

/// `check_scalar_type_device_layout_equal`-style check of an out= result's dtype (the
/// non-structured reductions: "provided dtype must match dtype of result").
pub fn check_result_dtype(name: &str, result: &Tensor, out_dtype: ScalarType) -> Result<()> {
    if result.dtype() != out_dtype {
        return Err(Error::runtime(format!(
            "{name}: provided dtype must match dtype of result. Got {} and {}.",
            result.dtype().name(),
            out_dtype.name()
        )));
    }
    Ok(())
}
