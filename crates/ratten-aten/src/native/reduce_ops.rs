//! The reductions (ATen's `ReduceOps.cpp`, `ReduceAllOps.cpp`, `TensorCompare.cpp`'s max/min,
//! `LinearAlgebra.cpp`'s vector norm): metas that compute the reduced shape and dtype with
//! PyTorch's rules and errors, and impls that build the reduction iterator
//! ([`make_reduction`]) and run a DispatchStub of `native/cpu/reduce_kernels.rs`.
//!
//! A reduction over no elements gives the op's identity (sum 0, prod 1, all true, mean and
//! var NaN); an op without one (amax, max, argmax, aminmax, the inf norms) refuses it, as
//! PyTorch.

use ratten_core::tensor_impl::maybe_wrap_dim;
use ratten_core::type_promotion::{can_cast, promote_types};
use ratten_core::{Error, Result, Scalar, ScalarType, TensorOptions};

use crate::dispatch_stub::DispatchStub;
use crate::generated::operators as ops;
use crate::native::cpu::reduce_kernels::{
    ReduceFn, AMAX_STUB, AMINMAX_STUB, AMIN_STUB, AND_STUB, ARGMAX_STUB, ARGMIN_STUB,
    COUNT_NONZERO_STUB, MAX_STUB, MEAN_STUB, MIN_STUB, NANSUM_STUB, NORM_STUB, OR_STUB, PROD_STUB,
    STD_VAR_STUB, SUM_STUB,
};
use crate::native::reduce_utils::{
    check_result_dtype, dim_list_to_mask, get_dtype_from_self, infer_dtype_from_optional,
    make_dim_mask, make_full_reduction, make_reduction, resize_reduction,
    resize_reduction_with_indices, shape_from_dim_mask, zero_numel_check_dim,
    zero_numel_check_dims, DimMask,
};
use crate::structured::{resize_output, MetaBase};
use crate::tensor_iterator::TensorIteratorBase;
use crate::Tensor;

/// Runs a reduction stub on a built iterator (nothing to compute for meta tensors or an
/// empty iteration).
fn run(stub: &DispatchStub<ReduceFn>, iter: &TensorIteratorBase) -> Result<()> {
    if iter.is_meta() || iter.numel() == 0 {
        return Ok(());
    }
    (stub.get(iter.device_type())?)(iter)
}

fn wrapped_dims(dims: Option<&[i64]>, ndim: usize) -> Result<Vec<usize>> {
    Ok(match dims {
        Some(d) if !d.is_empty() => d
            .iter()
            .map(|&x| maybe_wrap_dim(x, ndim, true))
            .collect::<Result<_>>()?,
        _ => (0..ndim).collect(),
    })
}

// ---------------------------------------------------------------------------------------------
// sum, nansum, mean, prod
// ---------------------------------------------------------------------------------------------

/// TORCH_META_FUNC2(sum, dim_IntList).
pub fn sum_dim_int_list_meta(
    m: &dyn MetaBase,
    self_: &Tensor,
    dim: Option<&[i64]>,
    keepdim: bool,
    dtype: Option<ScalarType>,
) -> Result<DimMask> {
    let out_dtype = infer_dtype_from_optional(self_, dtype, m.maybe_get_output(0));
    resize_reduction(m, self_, dim, keepdim, out_dtype, false)
}

/// TORCH_IMPL_FUNC(sum_out): the input converted to the result's dtype, accumulated in its
/// opmath type with the cascade (Note [Reduction driver]).
pub fn sum_int_list_out(
    mask: &mut DimMask,
    self_: &Tensor,
    _dim: Option<&[i64]>,
    keepdim: bool,
    _dtype: Option<ScalarType>,
    out: &Tensor,
) -> Result<()> {
    let iter = make_reduction(self_, &[out], *mask, keepdim, out.dtype(), false)?;
    if iter.numel() == 0 {
        if !iter.is_meta() {
            out.zero_()?;
        }
        return Ok(());
    }
    run(&SUM_STUB, &iter)
}

/// `sum(self, dtype)` (CompositeExplicitAutograd): the sum of every element.
pub fn sum(self_: &Tensor, dtype: Option<ScalarType>) -> Result<Tensor> {
    ops::sum_dim_IntList::call(self_, Some(&[]), false, dtype)
}

/// nansum (CPU, not structured): NaN counts as zero; integer inputs are summed.
pub fn nansum(
    self_: &Tensor,
    dim: Option<&[i64]>,
    keepdim: bool,
    dtype: Option<ScalarType>,
) -> Result<Tensor> {
    let dtype = get_dtype_from_self(self_, dtype, true);
    let mask = make_dim_mask(dim, self_.dim(), false)?;
    let shape = shape_from_dim_mask(&self_.sizes(), mask, keepdim);
    let result = Tensor::empty(&shape, (dtype, self_.device()))?;
    nansum_out(self_, dim, keepdim, Some(dtype), &result)?;
    Ok(result)
}

/// nansum.out.
pub fn nansum_out<'a>(
    self_: &Tensor,
    dim: Option<&[i64]>,
    keepdim: bool,
    dtype: Option<ScalarType>,
    out: &'a Tensor,
) -> Result<&'a Tensor> {
    if self_.dtype().is_complex() {
        return Err(Error::runtime("nansum does not support complex inputs"));
    }
    if self_.dtype().is_integral(true) {
        ops::sum_IntList_out::call(self_, dim, keepdim, dtype, out)?;
        return Ok(out);
    }
    let out_dtype = dtype.unwrap_or(out.dtype());
    check_result_dtype("nansum", out, out_dtype)?;
    let mask = make_dim_mask(dim, self_.dim(), false)?;
    let iter = make_reduction(self_, &[out], mask, keepdim, out_dtype, true)?;
    if iter.numel() == 0 {
        if !iter.is_meta() {
            out.zero_()?;
        }
        return Ok(out);
    }
    run(&NANSUM_STUB, &iter)?;
    Ok(out)
}

/// TORCH_META_FUNC2(mean, dim): floating and complex only.
pub fn mean_dim_meta(
    m: &dyn MetaBase,
    self_: &Tensor,
    dim: Option<&[i64]>,
    keepdim: bool,
    dtype: Option<ScalarType>,
) -> Result<DimMask> {
    let in_dtype = get_dtype_from_self(self_, dtype, true);
    if !in_dtype.is_floating_point() && !in_dtype.is_complex() {
        let (what, name) = match dtype {
            Some(d) => ("Optional", d.name()),
            None => ("Input", self_.dtype().name()),
        };
        return Err(Error::not_implemented(format!(
            "mean(): could not infer output dtype. {what} dtype must be either a floating \
             point or complex dtype. Got: {name}"
        )));
    }
    let out_dtype = infer_dtype_from_optional(self_, dtype, m.maybe_get_output(0));
    resize_reduction(m, self_, dim, keepdim, out_dtype, false)
}

/// TORCH_IMPL_FUNC(mean_out): the sum divided by the number of reduced elements, in the
/// accumulation type (half and bfloat16 in f32, as PyTorch's CPU path), in one pass.
pub fn mean_out(
    mask: &mut DimMask,
    self_: &Tensor,
    _dim: Option<&[i64]>,
    keepdim: bool,
    _dtype: Option<ScalarType>,
    out: &Tensor,
) -> Result<()> {
    let sizes = self_.sizes();
    let count: i64 = (0..self_.dim())
        .filter(|&d| mask.contains(d))
        .map(|d| sizes[d])
        .product();
    let iter = make_reduction(self_, &[out], *mask, keepdim, out.dtype(), false)?;
    if iter.is_meta() {
        return Ok(());
    }
    if iter.numel() == 0 {
        if count == 0 && out.numel() > 0 {
            out.fill_(f64::NAN)?;
        }
        return Ok(());
    }
    (MEAN_STUB.get(iter.device_type())?)(&iter, count)
}

/// `mean(self, dtype)` (CompositeExplicitAutograd).
pub fn mean(self_: &Tensor, dtype: Option<ScalarType>) -> Result<Tensor> {
    ops::mean_dim::call(self_, Some(&[]), false, dtype)
}

/// mean.dtype_out.
pub fn mean_dtype_out<'a>(
    self_: &Tensor,
    dtype: Option<ScalarType>,
    out: &'a Tensor,
) -> Result<&'a Tensor> {
    ops::mean_out::call(self_, Some(&[]), false, dtype, out)?;
    Ok(out)
}

/// TORCH_META_FUNC2(prod, dim_int).
pub fn prod_dim_int_meta(
    m: &dyn MetaBase,
    self_: &Tensor,
    dim: i64,
    keepdim: bool,
    dtype: Option<ScalarType>,
) -> Result<DimMask> {
    let out_dtype = infer_dtype_from_optional(self_, dtype, m.maybe_get_output(0));
    resize_reduction(m, self_, Some(&[dim]), keepdim, out_dtype, false)
}

fn prod_into(self_: &Tensor, mask: DimMask, keepdim: bool, out: &Tensor) -> Result<()> {
    let iter = make_reduction(self_, &[out], mask, keepdim, out.dtype(), false)?;
    if iter.numel() == 0 {
        if !iter.is_meta() {
            out.fill_(1)?;
        }
        return Ok(());
    }
    run(&PROD_STUB, &iter)
}

/// TORCH_IMPL_FUNC(prod_out).
pub fn prod_int_out(
    mask: &mut DimMask,
    self_: &Tensor,
    _dim: i64,
    keepdim: bool,
    _dtype: Option<ScalarType>,
    out: &Tensor,
) -> Result<()> {
    prod_into(self_, *mask, keepdim, out)
}

/// `prod(self, dtype)` (CPU): the product of every element.
pub fn prod(self_: &Tensor, dtype: Option<ScalarType>) -> Result<Tensor> {
    let dtype = get_dtype_from_self(self_, dtype, true);
    let result = Tensor::empty(&[], (dtype, self_.device()))?;
    prod_into(self_, DimMask::all(self_.dim()), false, &result)?;
    Ok(result)
}

// ---------------------------------------------------------------------------------------------
// amax, amin, max, min, argmax, argmin, aminmax
// ---------------------------------------------------------------------------------------------

fn amax_amin_meta(
    m: &dyn MetaBase,
    name: &str,
    self_: &Tensor,
    dim: &[i64],
    keepdim: bool,
) -> Result<DimMask> {
    if let Some(r) = m.maybe_get_output(0) {
        if r.dtype() != self_.dtype() {
            return Err(Error::runtime(format!(
                "Expected the dtype for input and out to match, but got {} for input's dtype \
                 and {} for out's dtype.",
                self_.dtype().name(),
                r.dtype().name()
            )));
        }
    }
    if self_.numel() == 0 {
        zero_numel_check_dims(self_, dim, name)?;
    }
    resize_reduction(m, self_, Some(dim), keepdim, self_.dtype(), false)
}

/// TORCH_META_FUNC(amax).
pub fn amax_meta(m: &dyn MetaBase, self_: &Tensor, dim: &[i64], keepdim: bool) -> Result<DimMask> {
    amax_amin_meta(m, "amax()", self_, dim, keepdim)
}

/// TORCH_META_FUNC(amin).
pub fn amin_meta(m: &dyn MetaBase, self_: &Tensor, dim: &[i64], keepdim: bool) -> Result<DimMask> {
    amax_amin_meta(m, "amin()", self_, dim, keepdim)
}

/// TORCH_IMPL_FUNC(amax_out): NaN propagates.
pub fn amax_out(
    mask: &mut DimMask,
    self_: &Tensor,
    _dim: &[i64],
    keepdim: bool,
    out: &Tensor,
) -> Result<()> {
    // torch's amax kernel is "max_values_cpu" (the all-reduce one "max_all").
    crate::native::cpu::refuse_unsigned("max_values_cpu", self_.dtype())?;
    let iter = make_reduction(self_, &[out], *mask, keepdim, self_.dtype(), false)?;
    run(&AMAX_STUB, &iter)
}

/// TORCH_IMPL_FUNC(amin_out).
pub fn amin_out(
    mask: &mut DimMask,
    self_: &Tensor,
    _dim: &[i64],
    keepdim: bool,
    out: &Tensor,
) -> Result<()> {
    crate::native::cpu::refuse_unsigned("min_values_cpu", self_.dtype())?;
    let iter = make_reduction(self_, &[out], *mask, keepdim, self_.dtype(), false)?;
    run(&AMIN_STUB, &iter)
}

fn check_all_reduce_nonempty(self_: &Tensor, name: &str) -> Result<()> {
    if self_.numel() == 0 {
        return Err(Error::runtime(format!(
            "{name}: Expected reduction dim to be specified for input.numel() == 0. Specify \
             the reduction dim with the 'dim' argument."
        )));
    }
    Ok(())
}

fn extremum_all(
    self_: &Tensor,
    out: &Tensor,
    stub: &DispatchStub<ReduceFn>,
    kernel: &str,
) -> Result<()> {
    if self_.dtype().is_complex() {
        return Err(crate::native::cpu::not_implemented(kernel, self_.dtype()));
    }
    let iter = make_full_reduction(self_, &[out], self_.dtype())?;
    run(stub, &iter)
}

/// `max(self)`: the largest element (NaN if any is NaN).
pub fn max(self_: &Tensor) -> Result<Tensor> {
    check_all_reduce_nonempty(self_, "max()")?;
    let result = Tensor::empty(&[], (self_.dtype(), self_.device()))?;
    extremum_all(self_, &result, &AMAX_STUB, "max_all")?;
    Ok(result)
}

/// `min(self)`.
pub fn min(self_: &Tensor) -> Result<Tensor> {
    check_all_reduce_nonempty(self_, "min()")?;
    let result = Tensor::empty(&[], (self_.dtype(), self_.device()))?;
    extremum_all(self_, &result, &AMIN_STUB, "min_all")?;
    Ok(result)
}

fn unary_out_checks(self_: &Tensor, out: &Tensor) -> Result<()> {
    if self_.device() != out.device() {
        return Err(Error::runtime(format!(
            "Expected out tensor to be on device {}, but got {}",
            self_.device(),
            out.device()
        )));
    }
    if !can_cast(self_.dtype(), out.dtype()) {
        return Err(Error::runtime(format!(
            "result type {} can't be cast to the desired output type {}",
            self_.dtype().name(),
            out.dtype().name()
        )));
    }
    resize_output(out, &[])?;
    Ok(())
}

/// max.unary_out: into a 0-dim `out` (any dtype `self`'s casts to).
pub fn max_unary_out<'a>(self_: &Tensor, out: &'a Tensor) -> Result<&'a Tensor> {
    unary_out_checks(self_, out)?;
    let r = max(self_)?;
    ops::copy_::call(out, &r, false)?;
    Ok(out)
}

/// min.unary_out.
pub fn min_unary_out<'a>(self_: &Tensor, out: &'a Tensor) -> Result<&'a Tensor> {
    unary_out_checks(self_, out)?;
    let r = min(self_)?;
    ops::copy_::call(out, &r, false)?;
    Ok(out)
}

/// What the meta of an op over one dim hands to its impl (PyTorch's `precomputed: dim`).
#[derive(Debug, Clone, Copy)]
pub struct ReduceDim {
    pub dim: usize,
}

fn minmax_dim_meta(
    m: &dyn MetaBase,
    name: &str,
    self_: &Tensor,
    dim: i64,
    keepdim: bool,
) -> Result<ReduceDim> {
    let wrapped = maybe_wrap_dim(dim, self_.dim(), true)?;
    if self_.numel() == 0 {
        zero_numel_check_dim(self_, wrapped as i64, name)?;
    }
    if self_.dtype().is_complex() {
        return Err(Error::runtime(format!(
            "{name}: does not support complex input"
        )));
    }
    resize_reduction_with_indices(m, self_, dim, keepdim, self_.dtype())?;
    Ok(ReduceDim { dim: wrapped })
}

/// TORCH_PRECOMPUTE_META_FUNC2(max, dim).
pub fn max_dim_meta(
    m: &dyn MetaBase,
    self_: &Tensor,
    dim: i64,
    keepdim: bool,
) -> Result<ReduceDim> {
    minmax_dim_meta(m, "max()", self_, dim, keepdim)
}

/// TORCH_PRECOMPUTE_META_FUNC2(min, dim).
pub fn min_dim_meta(
    m: &dyn MetaBase,
    self_: &Tensor,
    dim: i64,
    keepdim: bool,
) -> Result<ReduceDim> {
    minmax_dim_meta(m, "min()", self_, dim, keepdim)
}

fn minmax_out_impl(
    state: &ReduceDim,
    self_: &Tensor,
    keepdim: bool,
    values: &Tensor,
    indices: &Tensor,
    stub: &DispatchStub<ReduceFn>,
) -> Result<()> {
    if self_.numel() == 0 {
        return Ok(());
    }
    let mask = dim_list_to_mask(&[state.dim as i64], self_.dim())?;
    let iter = make_reduction(
        self_,
        &[values, indices],
        mask,
        keepdim,
        self_.dtype(),
        false,
    )?;
    run(stub, &iter)
}

/// TORCH_IMPL_FUNC(max_out): values and the index of the first maximum (NaN counting as it).
pub fn max_out(
    state: &mut ReduceDim,
    self_: &Tensor,
    _dim: i64,
    keepdim: bool,
    max: &Tensor,
    max_values: &Tensor,
) -> Result<()> {
    minmax_out_impl(state, self_, keepdim, max, max_values, &MAX_STUB)
}

/// TORCH_IMPL_FUNC(min_out).
pub fn min_out(
    state: &mut ReduceDim,
    self_: &Tensor,
    _dim: i64,
    keepdim: bool,
    min: &Tensor,
    min_indices: &Tensor,
) -> Result<()> {
    minmax_out_impl(state, self_, keepdim, min, min_indices, &MIN_STUB)
}

/// What argmax's and argmin's metas hand to their impls: the wrapped dim, if any.
#[derive(Debug, Clone)]
pub struct ArgmaxState {
    pub dim: Option<usize>,
}

/// `check_argmax_argmin` then `resize_reduction(..., kLong)`.
fn arg_extremum_meta(
    m: &dyn MetaBase,
    name: &str,
    self_: &Tensor,
    dim: Option<i64>,
    keepdim: bool,
) -> Result<ArgmaxState> {
    if self_.dtype().is_complex() {
        return Err(Error::type_error(format!(
            "{name}: does not support complex input"
        )));
    }
    if self_.dtype() == ScalarType::Bool {
        return Err(Error::not_implemented(format!(
            "{name}: does not support bool input"
        )));
    }
    let wrapped = match dim {
        Some(d) => {
            let w = maybe_wrap_dim(d, self_.dim(), true)?;
            if self_.numel() == 0 {
                zero_numel_check_dim(self_, w as i64, name)?;
            }
            Some(w)
        }
        None => {
            if self_.numel() == 0 {
                return Err(Error::index(format!(
                    "{name}: Expected reduction dim to be specified for input.numel() == 0."
                )));
            }
            None
        }
    };
    let dims: Vec<i64> = dim.into_iter().collect();
    resize_reduction(
        m,
        self_,
        dim.map(|_| dims.as_slice()),
        keepdim,
        ScalarType::Long,
        false,
    )?;
    Ok(ArgmaxState { dim: wrapped })
}

/// TORCH_META_FUNC(argmax).
pub fn argmax_meta(
    m: &dyn MetaBase,
    self_: &Tensor,
    dim: Option<i64>,
    keepdim: bool,
) -> Result<ArgmaxState> {
    arg_extremum_meta(m, "argmax()", self_, dim, keepdim)
}

/// TORCH_META_FUNC(argmin).
pub fn argmin_meta(
    m: &dyn MetaBase,
    self_: &Tensor,
    dim: Option<i64>,
    keepdim: bool,
) -> Result<ArgmaxState> {
    arg_extremum_meta(m, "argmin()", self_, dim, keepdim)
}

/// `argmax_argmin_impl`: along `dim`, or over the flattened input.
fn arg_extremum_impl(
    state: &ArgmaxState,
    self_: &Tensor,
    keepdim: bool,
    out: &Tensor,
    stub: &DispatchStub<ReduceFn>,
    kernel: &str,
) -> Result<()> {
    let _ = kernel;
    let iter = match state.dim {
        Some(d) => {
            if self_.dim() > 0 && self_.sizes()[d] == 1 {
                if !out.is_meta() {
                    out.zero_()?;
                }
                return Ok(());
            }
            let mask = dim_list_to_mask(&[d as i64], self_.dim())?;
            make_reduction(self_, &[out], mask, keepdim, self_.dtype(), false)?
        }
        None => make_full_reduction(self_, &[out], self_.dtype())?,
    };
    run(stub, &iter)
}

/// TORCH_IMPL_FUNC(argmax_out): the index of the first maximum (NaN counting as it).
pub fn argmax_out(
    state: &mut ArgmaxState,
    self_: &Tensor,
    _dim: Option<i64>,
    keepdim: bool,
    out: &Tensor,
) -> Result<()> {
    arg_extremum_impl(state, self_, keepdim, out, &ARGMAX_STUB, "argmax_cpu")
}

/// TORCH_IMPL_FUNC(argmin_out).
pub fn argmin_out(
    state: &mut ArgmaxState,
    self_: &Tensor,
    _dim: Option<i64>,
    keepdim: bool,
    out: &Tensor,
) -> Result<()> {
    arg_extremum_impl(state, self_, keepdim, out, &ARGMIN_STUB, "argmin_cpu")
}

/// TORCH_META_FUNC(aminmax).
pub fn aminmax_meta(
    m: &dyn MetaBase,
    self_: &Tensor,
    dim: Option<i64>,
    keepdim: bool,
) -> Result<Option<usize>> {
    if self_.dtype().is_complex() {
        return Err(Error::type_error(format!(
            "aminmax not implemented for {}",
            self_.dtype().name()
        )));
    }
    let (shape, wrapped) = match dim {
        Some(d) => {
            let w = maybe_wrap_dim(d, self_.dim(), true)?;
            if self_.numel() == 0 {
                zero_numel_check_dim(self_, w as i64, "aminmax")?;
            }
            let mask = dim_list_to_mask(&[d], self_.dim())?;
            (shape_from_dim_mask(&self_.sizes(), mask, keepdim), Some(w))
        }
        None => {
            if self_.numel() == 0 {
                return Err(Error::runtime(
                    "aminmax(): cannot compute aminmax over an empty dimension as the \
                     operation has no identity.",
                ));
            }
            (
                if keepdim {
                    vec![1; self_.dim()]
                } else {
                    Vec::new()
                },
                None,
            )
        }
    };
    let options = TensorOptions::new()
        .dtype(self_.dtype())
        .device(self_.device());
    m.set_output_raw_strided(0, &shape, &[], options)?;
    m.set_output_raw_strided(1, &shape, &[], options)?;
    Ok(wrapped)
}

/// TORCH_IMPL_FUNC(aminmax_out).
pub fn aminmax_out(
    state: &mut Option<usize>,
    self_: &Tensor,
    _dim: Option<i64>,
    keepdim: bool,
    min: &Tensor,
    max: &Tensor,
) -> Result<()> {
    let iter = match *state {
        Some(d) => {
            let mask = dim_list_to_mask(&[d as i64], self_.dim())?;
            make_reduction(self_, &[min, max], mask, keepdim, self_.dtype(), false)?
        }
        None => make_full_reduction(self_, &[min, max], self_.dtype())?,
    };
    run(&AMINMAX_STUB, &iter)
}

// ---------------------------------------------------------------------------------------------
// all, any
// ---------------------------------------------------------------------------------------------

/// `allany_meta`: the result is bool (uint8 for a uint8 input, or an out= of either dtype).
fn allany_meta(
    m: &dyn MetaBase,
    name: &str,
    self_: &Tensor,
    dims: Option<&[i64]>,
    keepdim: bool,
) -> Result<DimMask> {
    let out_dtype = match m.maybe_get_output(0) {
        Some(r) => {
            if r.dtype() != ScalarType::Bool && r.dtype() != ScalarType::Byte {
                return Err(Error::runtime(format!(
                    "{name} only supports bool tensor for result, got: {}",
                    r.dtype().name()
                )));
            }
            r.dtype()
        }
        None if self_.dtype() == ScalarType::Byte => ScalarType::Byte,
        None => ScalarType::Bool,
    };
    resize_reduction(m, self_, dims, keepdim, out_dtype, true)
}

/// `allany_impl`: the identity for no elements, else the reduction.
fn allany_impl(
    mask: DimMask,
    self_: &Tensor,
    keepdim: bool,
    out: &Tensor,
    stub: &DispatchStub<ReduceFn>,
    identity: bool,
) -> Result<()> {
    if self_.numel() == 0 {
        if !out.is_meta() {
            out.fill_(identity)?;
        }
        return Ok(());
    }
    let iter = make_reduction(self_, &[out], mask, keepdim, self_.dtype(), false)?;
    run(stub, &iter)
}

/// `all_dims_default` / `any_dims_default`.
fn allany_dims_default(
    self_: &Tensor,
    dim: Option<&[i64]>,
    keepdim: bool,
    reduce_all: fn(&Tensor) -> Result<Tensor>,
    reduce_dim: fn(&Tensor, i64, bool) -> Result<Tensor>,
) -> Result<Tensor> {
    let Some(dims) = dim else {
        return reduce_all(self_);
    };
    if dims.is_empty() {
        return ops::ne_Scalar::call(self_, &Scalar::from(0));
    }
    let mask = dim_list_to_mask(dims, self_.dim())?;
    let mut out = self_.clone();
    for d in (0..self_.dim().max(1)).rev().filter(|&d| mask.contains(d)) {
        out = reduce_dim(&out, d as i64, keepdim)?;
    }
    Ok(out)
}

/// TORCH_META_FUNC2(all, dim).
pub fn all_dim_meta(m: &dyn MetaBase, self_: &Tensor, dim: i64, keepdim: bool) -> Result<DimMask> {
    allany_meta(m, "all", self_, Some(&[dim]), keepdim)
}
/// TORCH_META_FUNC2(all, dims).
pub fn all_dims_meta(
    m: &dyn MetaBase,
    self_: &Tensor,
    dim: Option<&[i64]>,
    keepdim: bool,
) -> Result<DimMask> {
    allany_meta(m, "all", self_, dim, keepdim)
}
/// TORCH_META_FUNC(all).
pub fn all_meta(m: &dyn MetaBase, self_: &Tensor) -> Result<DimMask> {
    allany_meta(m, "all", self_, None, false)
}
/// TORCH_IMPL_FUNC(all_out).
pub fn all_out(
    mask: &mut DimMask,
    self_: &Tensor,
    _dim: i64,
    keepdim: bool,
    out: &Tensor,
) -> Result<()> {
    allany_impl(*mask, self_, keepdim, out, &AND_STUB, true)
}
/// TORCH_IMPL_FUNC(all_dims_out).
pub fn all_dims_out(
    mask: &mut DimMask,
    self_: &Tensor,
    _dim: Option<&[i64]>,
    keepdim: bool,
    out: &Tensor,
) -> Result<()> {
    allany_impl(*mask, self_, keepdim, out, &AND_STUB, true)
}
/// TORCH_IMPL_FUNC(all_all_out).
pub fn all_all_out(mask: &mut DimMask, self_: &Tensor, out: &Tensor) -> Result<()> {
    allany_impl(*mask, self_, false, out, &AND_STUB, true)
}
/// `all_dims_default` (CompositeExplicitAutograd, for a backend without a dims kernel): the
/// all-reduce, or `all.dim` over each dim, the highest first.
pub fn all_dims_default(self_: &Tensor, dim: Option<&[i64]>, keepdim: bool) -> Result<Tensor> {
    allany_dims_default(self_, dim, keepdim, ops::all::call, ops::all_dim::call)
}
/// `all_dims_out_default`.
pub fn all_dims_out_default<'a>(
    self_: &Tensor,
    dim: Option<&[i64]>,
    keepdim: bool,
    out: &'a Tensor,
) -> Result<&'a Tensor> {
    let r = all_dims_default(self_, dim, keepdim)?;
    resize_output(out, &r.sizes())?;
    ops::copy_::call(out, &r, false)?;
    Ok(out)
}

/// TORCH_META_FUNC2(any, dim).
pub fn any_dim_meta(m: &dyn MetaBase, self_: &Tensor, dim: i64, keepdim: bool) -> Result<DimMask> {
    allany_meta(m, "any", self_, Some(&[dim]), keepdim)
}
/// TORCH_META_FUNC2(any, dims).
pub fn any_dims_meta(
    m: &dyn MetaBase,
    self_: &Tensor,
    dim: Option<&[i64]>,
    keepdim: bool,
) -> Result<DimMask> {
    allany_meta(m, "any", self_, dim, keepdim)
}
/// TORCH_META_FUNC(any).
pub fn any_meta(m: &dyn MetaBase, self_: &Tensor) -> Result<DimMask> {
    allany_meta(m, "any", self_, None, false)
}
/// TORCH_IMPL_FUNC(any_out).
pub fn any_out(
    mask: &mut DimMask,
    self_: &Tensor,
    _dim: i64,
    keepdim: bool,
    out: &Tensor,
) -> Result<()> {
    allany_impl(*mask, self_, keepdim, out, &OR_STUB, false)
}
/// TORCH_IMPL_FUNC(any_dims_out).
pub fn any_dims_out(
    mask: &mut DimMask,
    self_: &Tensor,
    _dim: Option<&[i64]>,
    keepdim: bool,
    out: &Tensor,
) -> Result<()> {
    allany_impl(*mask, self_, keepdim, out, &OR_STUB, false)
}
/// TORCH_IMPL_FUNC(any_all_out).
pub fn any_all_out(mask: &mut DimMask, self_: &Tensor, out: &Tensor) -> Result<()> {
    allany_impl(*mask, self_, false, out, &OR_STUB, false)
}
/// `any_dims_default` (CompositeExplicitAutograd, for a backend without a dims kernel): the
/// all-reduce, or `any.dim` over each dim, the highest first.
pub fn any_dims_default(self_: &Tensor, dim: Option<&[i64]>, keepdim: bool) -> Result<Tensor> {
    allany_dims_default(self_, dim, keepdim, ops::any::call, ops::any_dim::call)
}
/// `any_dims_out_default`.
pub fn any_dims_out_default<'a>(
    self_: &Tensor,
    dim: Option<&[i64]>,
    keepdim: bool,
    out: &'a Tensor,
) -> Result<&'a Tensor> {
    let r = any_dims_default(self_, dim, keepdim)?;
    resize_output(out, &r.sizes())?;
    ops::copy_::call(out, &r, false)?;
    Ok(out)
}

// ---------------------------------------------------------------------------------------------
// count_nonzero
// ---------------------------------------------------------------------------------------------

/// `count_nonzero_cpu`: the number of nonzero elements over `dim` (all when empty), int64.
pub fn count_nonzero_cpu(self_: &Tensor, dim: &[i64]) -> Result<Tensor> {
    let mask = make_dim_mask(Some(dim), self_.dim(), false)?;
    let shape = shape_from_dim_mask(&self_.sizes(), mask, false);
    let result = Tensor::empty(&shape, (ScalarType::Long, self_.device()))?;
    let iter = make_reduction(self_, &[&result], mask, false, self_.dtype(), false)?;
    if iter.numel() == 0 {
        if !iter.is_meta() {
            result.zero_()?;
        }
        return Ok(result);
    }
    run(&COUNT_NONZERO_STUB, &iter)?;
    Ok(result)
}

/// `count_nonzero(self, dim=None)` (CompositeExplicitAutograd).
pub fn count_nonzero(self_: &Tensor, dim: Option<i64>) -> Result<Tensor> {
    match dim {
        Some(d) => ops::count_nonzero_dim_IntList::call(self_, &[d]),
        None => ops::count_nonzero_dim_IntList::call(self_, &[]),
    }
}

// ---------------------------------------------------------------------------------------------
// var, std, var_mean, std_mean
// ---------------------------------------------------------------------------------------------

fn correction_value(correction: Option<&Scalar>) -> Result<f64> {
    match correction {
        None => Ok(1.0),
        Some(s) if s.is_complex() => {
            Err(Error::runtime("std/var: correction must be a real number"))
        }
        Some(s) => s.to_double(),
    }
}

/// `std_var_out`: Welford's algorithm in f64 (complex inputs: the variance of the real part
/// plus that of the imaginary part), NaN for a reduction over no elements.
fn std_var_out(
    fname: &str,
    result: &Tensor,
    self_: &Tensor,
    dim: Option<&[i64]>,
    correction: Option<&Scalar>,
    keepdim: bool,
    take_sqrt: bool,
) -> Result<()> {
    let dt = self_.dtype();
    if !dt.is_floating_point() && !dt.is_complex() {
        return Err(Error::not_implemented(
            "std and var only support floating point and complex dtypes",
        ));
    }
    let correction = correction_value(correction)?;
    let out_dtype = result.dtype();
    let complex_to_its_real = dt.is_complex() && out_dtype == dt.to_real();
    if !(can_cast(dt, out_dtype) || complex_to_its_real) {
        return Err(Error::runtime(format!(
            "result type {} can't be cast to the desired output type {}",
            dt.name(),
            out_dtype.name()
        )));
    }
    // Complex inputs keep their type (the kernel reads both parts); real ones are read in the
    // result's dtype, as PyTorch's `make_reduction`.
    let in_dtype = if dt.is_complex() {
        out_dtype.to_complex().unwrap_or(dt)
    } else {
        out_dtype
    };
    let mask = make_dim_mask(dim, self_.dim(), false)?;
    let iter = make_reduction(self_, &[result], mask, keepdim, in_dtype, true)?;
    warn_nonpositive_dof(fname, self_, result, correction);
    if iter.is_meta() {
        return Ok(());
    }
    if iter.numel() == 0 {
        if result.numel() > 0 {
            result.fill_(f64::NAN)?;
        }
        return Ok(());
    }
    (STD_VAR_STUB.get(iter.device_type())?)(&iter, correction, take_sqrt)
}

/// torch's warning when the correction leaves no degrees of freedom.
fn warn_nonpositive_dof(fname: &str, self_: &Tensor, result: &Tensor, correction: f64) {
    let (n, r) = (self_.numel(), result.numel());
    if r > 0 && (n / r) as f64 - correction <= 0.0 {
        crate::structured::warn(format!(
            "{fname}(): degrees of freedom is <= 0. Correction should be strictly less than \
             the reduction factor (input numel divided by output numel)."
        ));
    }
}

fn real_result(self_: &Tensor) -> Result<Tensor> {
    Tensor::empty(&[0], (self_.dtype().to_real(), self_.device()))
}

/// var.correction (CPU).
pub fn var_correction(
    self_: &Tensor,
    dim: Option<&[i64]>,
    correction: Option<&Scalar>,
    keepdim: bool,
) -> Result<Tensor> {
    let result = real_result(self_)?;
    std_var_out("var", &result, self_, dim, correction, keepdim, false)?;
    Ok(result)
}

/// std.correction (CPU).
pub fn std_correction(
    self_: &Tensor,
    dim: Option<&[i64]>,
    correction: Option<&Scalar>,
    keepdim: bool,
) -> Result<Tensor> {
    let result = real_result(self_)?;
    std_var_out("std", &result, self_, dim, correction, keepdim, true)?;
    Ok(result)
}

/// var.correction_out.
pub fn var_correction_out<'a>(
    self_: &Tensor,
    dim: Option<&[i64]>,
    correction: Option<&Scalar>,
    keepdim: bool,
    out: &'a Tensor,
) -> Result<&'a Tensor> {
    std_var_out("var", out, self_, dim, correction, keepdim, false)?;
    Ok(out)
}

/// std.correction_out.
pub fn std_correction_out<'a>(
    self_: &Tensor,
    dim: Option<&[i64]>,
    correction: Option<&Scalar>,
    keepdim: bool,
    out: &'a Tensor,
) -> Result<&'a Tensor> {
    std_var_out("std", out, self_, dim, correction, keepdim, true)?;
    Ok(out)
}

fn unbiased_correction(unbiased: bool) -> Scalar {
    Scalar::from(i64::from(unbiased))
}

/// `var(self, unbiased)` (CompositeImplicitAutograd).
pub fn var(self_: &Tensor, unbiased: bool) -> Result<Tensor> {
    ops::var_correction::call(self_, None, Some(&unbiased_correction(unbiased)), false)
}
/// `var.dim`.
pub fn var_dim(
    self_: &Tensor,
    dim: Option<&[i64]>,
    unbiased: bool,
    keepdim: bool,
) -> Result<Tensor> {
    ops::var_correction::call(self_, dim, Some(&unbiased_correction(unbiased)), keepdim)
}
/// `var.out`.
pub fn var_out<'a>(
    self_: &Tensor,
    dim: Option<&[i64]>,
    unbiased: bool,
    keepdim: bool,
    out: &'a Tensor,
) -> Result<&'a Tensor> {
    ops::var_correction_out::call(
        self_,
        dim,
        Some(&unbiased_correction(unbiased)),
        keepdim,
        out,
    )?;
    Ok(out)
}
/// `std(self, unbiased)`.
pub fn std(self_: &Tensor, unbiased: bool) -> Result<Tensor> {
    ops::std_correction::call(self_, None, Some(&unbiased_correction(unbiased)), false)
}
/// `std.dim`.
pub fn std_dim(
    self_: &Tensor,
    dim: Option<&[i64]>,
    unbiased: bool,
    keepdim: bool,
) -> Result<Tensor> {
    ops::std_correction::call(self_, dim, Some(&unbiased_correction(unbiased)), keepdim)
}
/// `std.out`.
pub fn std_out<'a>(
    self_: &Tensor,
    dim: Option<&[i64]>,
    unbiased: bool,
    keepdim: bool,
    out: &'a Tensor,
) -> Result<&'a Tensor> {
    ops::std_correction_out::call(
        self_,
        dim,
        Some(&unbiased_correction(unbiased)),
        keepdim,
        out,
    )?;
    Ok(out)
}

/// `std_var_mean_out`: variance (or std) and mean in one pass.
fn std_var_mean(
    fname: &str,
    self_: &Tensor,
    dim: Option<&[i64]>,
    correction: Option<&Scalar>,
    keepdim: bool,
    take_sqrt: bool,
) -> Result<(Tensor, Tensor)> {
    let dt = self_.dtype();
    if !dt.is_floating_point() && !dt.is_complex() {
        return Err(Error::not_implemented(format!(
            "{fname} only support floating point and complex dtypes"
        )));
    }
    let correction = correction_value(correction)?;
    let mask = make_dim_mask(dim, self_.dim(), false)?;
    let shape = shape_from_dim_mask(&self_.sizes(), mask, keepdim);
    let var = Tensor::empty(&shape, (dt.to_real(), self_.device()))?;
    let mean = Tensor::empty(&shape, (dt, self_.device()))?;
    let iter = make_reduction(self_, &[&var, &mean], mask, keepdim, dt, false)?;
    warn_nonpositive_dof(fname, self_, &var, correction);
    if iter.is_meta() {
        return Ok((var, mean));
    }
    if iter.numel() == 0 {
        var.fill_(f64::NAN)?;
        mean.fill_(f64::NAN)?;
        return Ok((var, mean));
    }
    (STD_VAR_STUB.get(iter.device_type())?)(&iter, correction, take_sqrt)?;
    Ok((var, mean))
}

/// var_mean.correction (CPU).
pub fn var_mean_correction(
    self_: &Tensor,
    dim: Option<&[i64]>,
    correction: Option<&Scalar>,
    keepdim: bool,
) -> Result<(Tensor, Tensor)> {
    std_var_mean("var_mean", self_, dim, correction, keepdim, false)
}
/// std_mean.correction (CPU).
pub fn std_mean_correction(
    self_: &Tensor,
    dim: Option<&[i64]>,
    correction: Option<&Scalar>,
    keepdim: bool,
) -> Result<(Tensor, Tensor)> {
    std_var_mean("std_mean", self_, dim, correction, keepdim, true)
}
/// `var_mean(self, unbiased)`.
pub fn var_mean(self_: &Tensor, unbiased: bool) -> Result<(Tensor, Tensor)> {
    ops::var_mean_correction::call(self_, None, Some(&unbiased_correction(unbiased)), false)
}
/// `var_mean.dim`.
pub fn var_mean_dim(
    self_: &Tensor,
    dim: Option<&[i64]>,
    unbiased: bool,
    keepdim: bool,
) -> Result<(Tensor, Tensor)> {
    ops::var_mean_correction::call(self_, dim, Some(&unbiased_correction(unbiased)), keepdim)
}
/// `std_mean(self, unbiased)`.
pub fn std_mean(self_: &Tensor, unbiased: bool) -> Result<(Tensor, Tensor)> {
    ops::std_mean_correction::call(self_, None, Some(&unbiased_correction(unbiased)), false)
}
/// `std_mean.dim`.
pub fn std_mean_dim(
    self_: &Tensor,
    dim: Option<&[i64]>,
    unbiased: bool,
    keepdim: bool,
) -> Result<(Tensor, Tensor)> {
    ops::std_mean_correction::call(self_, dim, Some(&unbiased_correction(unbiased)), keepdim)
}

// ---------------------------------------------------------------------------------------------
// logsumexp
// ---------------------------------------------------------------------------------------------

/// `logsumexp` (CompositeExplicitAutograd): integer inputs give the default float dtype.
pub fn logsumexp(self_: &Tensor, dim: &[i64], keepdim: bool) -> Result<Tensor> {
    let dtype = if self_.dtype().is_integral(true) {
        ratten_core::default_dtype::get_default_dtype()
    } else {
        self_.dtype()
    };
    let result = Tensor::empty(&[0], (dtype, self_.device()))?;
    logsumexp_out(self_, dim, keepdim, &result)?;
    Ok(result)
}

/// `logsumexp.out`: `log(sum(exp(x - max))) + max`, the max taken as 0 where it is infinite.
pub fn logsumexp_out<'a>(
    self_: &Tensor,
    dim: &[i64],
    keepdim: bool,
    out: &'a Tensor,
) -> Result<&'a Tensor> {
    if !out.dtype().is_floating_point() {
        return Err(Error::runtime(format!(
            "logsumexp(): Expected floating point type for result tensor, but got: {}",
            out.dtype().name()
        )));
    }
    let input = if self_.dtype().is_integral(true) {
        self_.to_dtype(ratten_core::default_dtype::get_default_dtype())?
    } else {
        self_.clone()
    };
    if input.numel() == 0 {
        let e = ops::exp::call(&input)?;
        ops::sum_IntList_out::call(&e, Some(dim), keepdim, None, out)?;
        ops::log_::call(out)?;
        return Ok(out);
    }
    let maxes = ops::amax::call(&input, dim, true)?;
    let zero = Scalar::from(0.0);
    let maxes = ops::where_ScalarSelf::call(&ops::isinf::call(&maxes)?, &zero, &maxes)?;
    let shifted = ops::exp::call(&ops::sub_Tensor::call(&input, &maxes, &Scalar::from(1))?)?;
    ops::sum_IntList_out::call(&shifted, Some(dim), keepdim, None, out)?;
    ops::log_::call(out)?;
    let maxes_squeezed = if keepdim {
        maxes
    } else {
        let wrapped = wrapped_dims(Some(dim), input.dim())?;
        let dims: Vec<i64> = wrapped.iter().map(|&d| d as i64).collect();
        maxes.squeeze_dims(&dims)?
    };
    ops::add__Tensor::call(out, &maxes_squeezed, &Scalar::from(1))?;
    Ok(out)
}

// ---------------------------------------------------------------------------------------------
// norm, linalg_vector_norm
// ---------------------------------------------------------------------------------------------

fn check_floating_or_complex(self_: &Tensor, name: &str) -> Result<()> {
    let dt = self_.dtype();
    if !dt.is_floating_point() && !dt.is_complex() {
        return Err(Error::not_implemented(format!(
            "{name}: Expected a floating point or complex tensor as input. Got {}",
            dt.name()
        )));
    }
    Ok(())
}

fn fmt_ord(ord: f64) -> String {
    if ord.is_infinite() {
        if ord > 0.0 { "inf" } else { "-inf" }.to_string()
    } else {
        format!("{ord}")
    }
}

/// TORCH_META_FUNC(linalg_vector_norm).
pub fn linalg_vector_norm_meta(
    m: &dyn MetaBase,
    self_: &Tensor,
    ord: &Scalar,
    dim: Option<&[i64]>,
    keepdim: bool,
    dtype: Option<ScalarType>,
) -> Result<DimMask> {
    check_floating_or_complex(self_, "linalg.vector_norm")?;
    let p = ord.to_double()?;
    let dims = dim.unwrap_or(&[]);
    if self_.numel() == 0 && (p < 0.0 || p == f64::INFINITY) {
        if dims.is_empty() {
            return Err(Error::runtime(format!(
                "linalg.vector_norm cannot compute the {} norm on an empty tensor because the \
                 operation does not have an identity",
                fmt_ord(p)
            )));
        }
        for &d in dims {
            let w = maybe_wrap_dim(d, self_.dim(), true)?;
            if self_.dim() > 0 && self_.sizes()[w] == 0 {
                return Err(Error::runtime(format!(
                    "linalg.vector_norm cannot compute the {} norm on the dimension {d}because \
                     this dimension is empty and the operation does not have an identity",
                    fmt_ord(p)
                )));
            }
        }
    }
    if let Some(d) = dtype {
        let name = "linalg.vector_norm";
        if !d.is_floating_point() && !d.is_complex() {
            return Err(Error::runtime(format!(
                "{name}: dtype should be floating point or complex, but got {}",
                d.name()
            )));
        }
        let sc = self_.dtype().is_complex();
        if sc != d.is_complex() {
            let kind = if sc { "complex" } else { "real" };
            return Err(Error::runtime(format!(
                "{name}: dtype should be {kind} for {kind} inputs, but got {}",
                d.name()
            )));
        }
        if promote_types(self_.dtype(), d)? != d {
            return Err(Error::runtime(format!(
                "{name}: the dtype of the input ({}) should be convertible without narrowing \
                 to the specified dtype ({})",
                self_.dtype().name(),
                d.name()
            )));
        }
    }
    let out_dtype = dtype.unwrap_or(self_.dtype()).to_real();
    resize_reduction(m, self_, Some(dims), keepdim, out_dtype, false)
}

/// TORCH_IMPL_FUNC(linalg_vector_norm_out).
pub fn linalg_vector_norm_out(
    mask: &mut DimMask,
    self_: &Tensor,
    ord: &Scalar,
    _dim: Option<&[i64]>,
    keepdim: bool,
    dtype: Option<ScalarType>,
    out: &Tensor,
) -> Result<()> {
    let p = ord.to_double()?;
    let out_dtype = out.dtype();
    let in_dtype = if self_.dtype().is_complex() {
        out_dtype.to_complex().unwrap_or(out_dtype)
    } else {
        out_dtype
    };
    let _ = dtype;
    let iter = make_reduction(self_, &[out], *mask, keepdim, in_dtype, false)?;
    if iter.is_meta() {
        return Ok(());
    }
    if iter.numel() == 0 {
        if out.numel() > 0 {
            out.fill_(if p < 0.0 { f64::INFINITY } else { 0.0 })?;
        }
        return Ok(());
    }
    (NORM_STUB.get(iter.device_type())?)(&iter, p)
}

fn norm_p(p: Option<&Scalar>) -> Scalar {
    p.copied().unwrap_or(Scalar::from(2.0))
}

/// TORCH_META_FUNC2(norm, ScalarOpt_dim).
pub fn norm_scalar_opt_dim_meta(
    m: &dyn MetaBase,
    self_: &Tensor,
    _p: Option<&Scalar>,
    dim: &[i64],
    keepdim: bool,
) -> Result<DimMask> {
    let dt = self_.dtype();
    if !dt.is_floating_point() && !dt.is_complex() {
        return Err(Error::runtime(format!(
            "norm(): input dtype should be either floating point or complex. Got {} instead.",
            dt.name()
        )));
    }
    let out_dtype = m.maybe_get_output(0).map_or(dt.to_real(), |r| r.dtype());
    resize_reduction(m, self_, Some(dim), keepdim, out_dtype, false)
}

/// TORCH_META_FUNC2(norm, ScalarOpt_dim_dtype).
pub fn norm_scalar_opt_dim_dtype_meta(
    m: &dyn MetaBase,
    self_: &Tensor,
    _p: Option<&Scalar>,
    dim: &[i64],
    keepdim: bool,
    dtype: ScalarType,
) -> Result<DimMask> {
    if !dtype.is_floating_point() && !dtype.is_complex() {
        return Err(Error::runtime(format!(
            "norm(): the desired output dtype should be either floating point or complex. Got \
             {} instead.",
            dtype.name()
        )));
    }
    check_floating_or_complex(self_, "norm")?;
    let out_dtype = m.maybe_get_output(0).map_or(dtype, |r| r.dtype());
    resize_reduction(m, self_, Some(dim), keepdim, out_dtype, false)
}

/// TORCH_IMPL_FUNC(norm_out): linalg_vector_norm into the result.
pub fn norm_out(
    _mask: &mut DimMask,
    self_: &Tensor,
    p: Option<&Scalar>,
    dim: &[i64],
    keepdim: bool,
    out: &Tensor,
) -> Result<()> {
    ops::linalg_vector_norm_out::call(self_, &norm_p(p), Some(dim), keepdim, None, out)?;
    Ok(())
}

/// TORCH_IMPL_FUNC(norm_dtype_out).
pub fn norm_dtype_out(
    _mask: &mut DimMask,
    self_: &Tensor,
    p: Option<&Scalar>,
    dim: &[i64],
    keepdim: bool,
    dtype: ScalarType,
    out: &Tensor,
) -> Result<()> {
    ops::linalg_vector_norm_out::call(self_, &norm_p(p), Some(dim), keepdim, Some(dtype), out)?;
    Ok(())
}

/// `norm.Scalar` (CompositeExplicitAutograd): the p-norm of every element.
pub fn norm_scalar(self_: &Tensor, p: &Scalar) -> Result<Tensor> {
    ops::norm_ScalarOpt_dim::call(self_, Some(p), &[], false)
}

/// `norm.ScalarOpt_dtype`.
pub fn norm_scalar_opt_dtype(
    self_: &Tensor,
    p: Option<&Scalar>,
    dtype: ScalarType,
) -> Result<Tensor> {
    ops::norm_ScalarOpt_dim_dtype::call(self_, p, &[], false, dtype)
}
