//! Unary pointwise operators (UnaryOps.cpp, TensorCompare.cpp's clamp, Activation.cpp's relu)
//! as the kernels `native_functions.yaml` names; see `binary_ops` for the meta/impl shape.

use std::borrow::Cow;

use ratten_core::{Error, Result, Scalar, ScalarType};

use crate::dispatch_stub::DispatchStub;
use crate::generated::operators as ops;
use crate::native::binary_ops::{given_output, given_output_ref};
use crate::native::cpu::binary_kernels::{MAXIMUM_STUB, MINIMUM_STUB};
use crate::native::cpu::unary_kernels::{
    UnaryFn, ABS_STUB, BITWISE_NOT_STUB, CLAMP_SCALAR_STUB, CLAMP_STUB, COS_STUB, EXPM1_STUB,
    EXP_STUB, ISFINITE_STUB, ISINF_STUB, LOG1P_STUB, LOGICAL_NOT_STUB, LOG_STUB, NAN_TO_NUM_STUB,
    NEG_STUB, RECIPROCAL_STUB, RSQRT_STUB, SIGMOID_STUB, SIGN_STUB, SIN_STUB, SQRT_STUB, TANH_STUB,
    TAN_STUB,
};
use crate::native::type_properties::{
    result_type_of_state, update_result_type_state, update_result_type_state_scalar,
    ResultTypeState,
};
use crate::structured::{MetaBase, StructuredFunctional, StructuredInplace};
use crate::tensor_iterator::{
    same_dims, unary_op_config, InputOperand, StandaloneOutputs, TensorIterator,
    TensorIteratorBase, TensorIteratorConfig,
};
use crate::Tensor;

/// `build_borrowing_unary_op` (UNARY_OP_CONFIG: output and input of one dtype).
/// A borrowed operand builds without a config (`TensorIteratorBase::build_borrowing_unary`).
pub fn unary_op_meta<'a>(
    m: &'a dyn MetaBase,
    self_: impl InputOperand<'a>,
) -> Result<TensorIteratorBase<'a>> {
    if let Some(x) = self_.borrowed() {
        return TensorIteratorBase::build_borrowing_unary(given_output_ref(m), x, false, m);
    }
    let self_ = self_.into_operand();
    let out = given_output(m);
    unary_op_config(out, self_)?.build(m)
}

/// `build_borrowing_unary_float_op` (integers promote to the default float dtype).
pub fn unary_float_op_meta<'a>(
    m: &'a dyn MetaBase,
    self_: &'a Tensor,
) -> Result<TensorIteratorBase<'a>> {
    TensorIteratorBase::build_borrowing_unary(given_output_ref(m), self_.base(), true, m)
}

/// The result a composite functional form hands its out= kernel: PyTorch's
/// `at::empty({0}, options)`, which the kernel's TensorIterator resizes to the iteration's
/// shape and strides. When every input is a contiguous tensor of one shape, that resize would
/// give exactly those sizes with contiguous strides, so the result is made so at once: the
/// same tensor, without the resize (a storage reallocation), and the kernel's iterator can
/// take its compact build.
pub(crate) fn empty_result(
    inputs: &[&Tensor],
    dtype: ScalarType,
    device: ratten_core::Device,
) -> Result<Tensor> {
    let first = inputs[0];
    // One snapshot read per input, the sizes compared in place.
    let made = first.with_meta(|m| {
        let sizes = m.sizes();
        let same = m.is_contiguous()
            && inputs[1..].iter().all(|t| {
                std::ptr::eq(*t, first)
                    || t.with_meta(|o| o.is_contiguous() && same_dims(o.sizes(), sizes))
            });
        same.then(|| Tensor::empty(sizes, (dtype, device)))
    });
    made.unwrap_or_else(|| Tensor::empty(&[0], (dtype, device)))
}

/// Runs a unary stub on the built iterator (nothing to do for meta tensors).
pub fn unary_impl(stub: &DispatchStub<UnaryFn>, iter: &TensorIteratorBase) -> Result<()> {
    if iter.is_meta() {
        return Ok(());
    }
    (stub.get(iter.device_type())?)(iter)
}

/// `TORCH_META_FUNC(neg)`: no bool (`TORCH_CHECK_NOT_IMPLEMENTED`: NotImplementedError).
pub fn neg_meta<'a>(m: &'a dyn MetaBase, self_: &'a Tensor) -> Result<TensorIteratorBase<'a>> {
    if self_.dtype() == ScalarType::Bool {
        return Err(Error::not_implemented(
            "Negation, the `-` operator, on a bool tensor is not supported. If you are trying to \
             invert a mask, use the `~` or `logical_not()` operator instead.",
        ));
    }
    unary_op_meta(m, self_)
}

/// `TORCH_META_FUNC(sign)`: no complex (`TORCH_CHECK_NOT_IMPLEMENTED`: NotImplementedError).
pub fn sign_meta<'a>(m: &'a dyn MetaBase, self_: &'a Tensor) -> Result<TensorIteratorBase<'a>> {
    if self_.dtype().is_complex() {
        return Err(Error::not_implemented(
            "Unlike NumPy, torch.sign is not intended to support complex numbers. Please use \
             torch.sgn instead.",
        ));
    }
    unary_op_meta(m, self_)
}

/// `TORCH_META_FUNC(bitwise_not)`.
pub fn bitwise_not_meta<'a>(
    m: &'a dyn MetaBase,
    self_: &'a Tensor,
) -> Result<TensorIteratorBase<'a>> {
    unary_op_meta(m, self_)
}

/// Defines `<meta>` (building `$build`) and the impl `<impl>(iter, self, out)` running `$stub`.
macro_rules! structured_unary {
    ($($name:literal, $meta:ident, $imp:ident, $build:ident, $stub:ident;)*) => {$(
        #[doc = concat!("`TORCH_META_FUNC(", $name, ")`.")]
        pub fn $meta<'a>(m: &'a dyn MetaBase, self_: &'a Tensor) -> Result<TensorIteratorBase<'a>> {
            $build(m, self_)
        }
        #[doc = concat!("`TORCH_IMPL_FUNC(", $name, "_out)`: the stub over the built iterator.")]
        pub fn $imp(iter: &mut TensorIteratorBase, _self: &Tensor, _out: &Tensor) -> Result<()> {
            unary_impl(&$stub, iter)
        }
    )*};
}

structured_unary! {
    "exp", exp_meta, exp_out, unary_float_op_meta, EXP_STUB;
    "log", log_meta, log_out, unary_float_op_meta, LOG_STUB;
    "log1p", log1p_meta, log1p_out, unary_float_op_meta, LOG1P_STUB;
    "expm1", expm1_meta, expm1_out, unary_float_op_meta, EXPM1_STUB;
    "sqrt", sqrt_meta, sqrt_out, unary_float_op_meta, SQRT_STUB;
    "rsqrt", rsqrt_meta, rsqrt_out, unary_float_op_meta, RSQRT_STUB;
    "sin", sin_meta, sin_out, unary_float_op_meta, SIN_STUB;
    "cos", cos_meta, cos_out, unary_float_op_meta, COS_STUB;
    "tan", tan_meta, tan_out, unary_float_op_meta, TAN_STUB;
    "tanh", tanh_meta, tanh_out, unary_float_op_meta, TANH_STUB;
    "sigmoid", sigmoid_meta, sigmoid_out, unary_float_op_meta, SIGMOID_STUB;
    "reciprocal", reciprocal_meta, reciprocal_out, unary_float_op_meta, RECIPROCAL_STUB;
}

/// `TORCH_IMPL_FUNC(neg_out)`.
pub fn neg_out(iter: &mut TensorIteratorBase, _self: &Tensor, _out: &Tensor) -> Result<()> {
    unary_impl(&NEG_STUB, iter)
}
/// `TORCH_IMPL_FUNC(sign_out)`.
pub fn sign_out(iter: &mut TensorIteratorBase, _self: &Tensor, _out: &Tensor) -> Result<()> {
    unary_impl(&SIGN_STUB, iter)
}
/// `TORCH_IMPL_FUNC(bitwise_not_out)`.
pub fn bitwise_not_out(iter: &mut TensorIteratorBase, _self: &Tensor, _out: &Tensor) -> Result<()> {
    unary_impl(&BITWISE_NOT_STUB, iter)
}

// ---------------------------------------------------------------------------------------------
// abs, logical_not (CPU out= kernels, composite functional / in-place)
// ---------------------------------------------------------------------------------------------

/// `abs.out` (CPU and Meta): `unary_op_impl_with_complex_to_float_out`. A complex input with
/// a real `out` gives the magnitudes in `out` (which the real counterpart of self's dtype
/// must be able to cast to); otherwise `unary_op_impl_out` (same dtype in and out).
pub fn abs_out<'a>(self_: &Tensor, out: &'a Tensor) -> Result<&'a Tensor> {
    if self_.dtype().is_complex() && !out.dtype().is_complex() {
        let float_type = self_.dtype().to_real();
        if !ratten_core::type_promotion::can_cast(float_type, out.dtype()) {
            return Err(Error::runtime(format!(
                "result type {float_type} can't be cast to the desired output type {}",
                out.dtype()
            )));
        }
        // PyTorch computes complex -> complex into a temporary and copies the real part; the
        // kernel writes |z| straight into `out` (the same values, one pass).
        let iter = TensorIteratorConfig::new()
            .set_check_mem_overlap(true)
            .check_all_same_dtype(false)
            .add_output(out)?
            .add_const_input(self_)
            .build_standalone()?;
        unary_impl(&ABS_STUB, &iter)?;
        return Ok(out);
    }
    // `unary_op_impl_out`: a plain TensorIterator over `out`, built as the structured metas
    // build theirs (no config unless the build is general).
    let sink = StandaloneOutputs::new(&[Some(Cow::Borrowed(out.base()))]);
    let iter =
        TensorIteratorBase::build_borrowing_unary(Some(out.base()), self_.base(), false, &sink)?;
    unary_impl(&ABS_STUB, &iter)?;
    Ok(out)
}
/// `abs` (CompositeExplicitAutograd): the out= kernel into a fresh tensor of self's dtype, or
/// of its real counterpart for a complex self (`unary_op_impl_with_complex_to_float`).
pub fn abs(self_: &Tensor) -> Result<Tensor> {
    let dtype = if self_.dtype().is_complex() {
        self_.dtype().to_real()
    } else {
        self_.dtype()
    };
    let result = empty_result(&[self_], dtype, self_.device())?;
    ops::abs_out::call(self_, &result)?;
    Ok(result)
}
/// `abs_`: refused for complex tensors, as in PyTorch.
pub fn abs_(self_: &Tensor) -> Result<&Tensor> {
    if self_.dtype().is_complex() {
        return Err(Error::runtime(
            "In-place abs is not supported for complex tensors.",
        ));
    }
    ops::abs_out::call(self_, self_)?;
    Ok(self_)
}

/// Runs `stub` over an iterator of `out` and `self_`, whose dtypes may differ (the kernel
/// casts): logical_not, isinf, isfinite.
fn any_dtype_unary_impl(stub: &DispatchStub<UnaryFn>, self_: &Tensor, out: &Tensor) -> Result<()> {
    let iter = TensorIteratorConfig::new()
        .check_all_same_dtype(false)
        .add_output(out)?
        .add_const_input(self_)
        .build_standalone()?;
    unary_impl(stub, &iter)
}

/// `logical_not.out` (CPU and Meta): any input dtype, `out` keeps its dtype.
pub fn logical_not_out<'a>(self_: &Tensor, out: &'a Tensor) -> Result<&'a Tensor> {
    any_dtype_unary_impl(&LOGICAL_NOT_STUB, self_, out)?;
    Ok(out)
}
/// `logical_not`: a bool result.
pub fn logical_not(self_: &Tensor) -> Result<Tensor> {
    let result = empty_result(&[self_], ScalarType::Bool, self_.device())?;
    ops::logical_not_out::call(self_, &result)?;
    Ok(result)
}
/// `logical_not_`: `self` keeps its dtype.
pub fn logical_not_(self_: &Tensor) -> Result<&Tensor> {
    ops::logical_not_out::call(self_, self_)?;
    Ok(self_)
}

// ---------------------------------------------------------------------------------------------
// clamp (Scalar and Tensor bounds), relu
// ---------------------------------------------------------------------------------------------

fn clamp_none_error() -> Error {
    Error::runtime("torch.clamp: At least one of 'min' or 'max' must not be None")
}

/// `TORCH_META_FUNC(clamp)` with Scalar bounds: the bounds take part in type promotion for an
/// integral `self` (a float bound makes the result float), which the in-place form refuses.
pub fn clamp_meta<'a>(
    m: &'a dyn MetaBase,
    self_: &'a Tensor,
    min: Option<&Scalar>,
    max: Option<&Scalar>,
) -> Result<TensorIteratorBase<'a>> {
    if min.is_none() && max.is_none() {
        return Err(clamp_none_error());
    }
    let mut result_type = self_.dtype();
    if result_type.is_complex() {
        return Err(Error::not_implemented(
            "clamp is not supported for complex types",
        ));
    }
    if !result_type.is_floating_point() {
        let mut state = ResultTypeState::default();
        update_result_type_state(self_, &mut state)?;
        for s in [min, max].into_iter().flatten() {
            update_result_type_state_scalar(s, &mut state)?;
        }
        result_type = result_type_of_state(&state)?.unwrap_or(result_type);
        let inplace = m.maybe_get_output(0).is_some_and(|o| o.is_same(self_));
        if result_type != self_.dtype() && inplace {
            // PyTorch prints `self.dtype()`, a caffe2::TypeMeta ("int", not "Int").
            return Err(Error::runtime(format!(
                "result type {result_type} can't be cast to the desired output type {}",
                crate::structured::type_meta_name(self_.dtype())
            )));
        }
    }
    if result_type.is_complex() {
        return Err(Error::not_implemented(
            "clamp is not supported for complex types",
        ));
    }
    // `build_borrowing_unary_op(maybe_get_output(), self.to(result_type))`; `to` of the
    // dtype self has is self.
    if result_type == self_.dtype() {
        return unary_op_meta(m, self_);
    }
    let input = crate::native::copy::to_dtype(self_, result_type, false, false, None)?;
    unary_op_meta(m, input)
}

/// `TORCH_IMPL_FUNC(clamp_out)`, with the bounds as PyTorch 2.15 takes them (see
/// [`clamp_scalar_bounds`]).
pub fn clamp_out(
    iter: &mut TensorIteratorBase,
    _self: &Tensor,
    min: Option<&Scalar>,
    max: Option<&Scalar>,
    _out: &Tensor,
) -> Result<()> {
    let dtype = iter.common_dtype().unwrap_or(ScalarType::Float);
    let (min, max) = clamp_scalar_bounds(dtype, min, max)?;
    (CLAMP_SCALAR_STUB.get(iter.device_type())?)(iter, min.as_ref(), max.as_ref())
}

/// The scalar bounds of `clamp` for a result of `dtype`, as PyTorch 2.15 checks them:
/// - floating: each bound converts to double (a complex one with an imaginary part is an
///   overflow error naming `double`) and then to `dtype` with c10's overflow check (70000 for
///   a half tensor is an error);
/// - integral, with an integer bound: a bound outside the type's range on the side that
///   cannot clamp anything is dropped (`min=-1` for uint8), one on the other side is an error
///   ("Clamp max value -1 is outside the representable range of Byte").
fn clamp_scalar_bounds(
    dtype: ScalarType,
    min: Option<&Scalar>,
    max: Option<&Scalar>,
) -> Result<(Option<Scalar>, Option<Scalar>)> {
    use ratten_core::ScalarConvert;
    let (mut lo, mut hi) = (min.copied(), max.copied());
    if dtype.is_floating_point() {
        for b in [min, max].into_iter().flatten() {
            f64::from_scalar(b)?;
            b.check_fits(dtype)?;
        }
    } else if dtype.is_integral(false) {
        let (type_min, type_max): (i64, i64) = match dtype {
            ScalarType::Byte => (0, u8::MAX as i64),
            ScalarType::Char => (i8::MIN as i64, i8::MAX as i64),
            ScalarType::Short => (i16::MIN as i64, i16::MAX as i64),
            ScalarType::Int => (i32::MIN as i64, i32::MAX as i64),
            _ => (i64::MIN, i64::MAX),
        };
        let outside = |which: &str, v: i64| {
            Error::runtime(format!(
                "Clamp {which} value {v} is outside the representable range of {dtype}"
            ))
        };
        if let Some(Scalar::Int(v)) = min.copied() {
            if v > type_max {
                return Err(outside("min", v));
            }
            if v < type_min {
                lo = None;
            }
        }
        if let Some(Scalar::Int(v)) = max.copied() {
            if v < type_min {
                return Err(outside("max", v));
            }
            if v > type_max {
                hi = None;
            }
        }
    }
    Ok((lo, hi))
}

/// `TORCH_META_FUNC2(clamp, Tensor)`: a TensorIterator over self and the given bounds, all
/// promoted to their common dtype (the output must be able to hold it).
pub fn clamp_tensor_meta<'a>(
    m: &'a dyn MetaBase,
    self_: &'a Tensor,
    min: Option<&'a Tensor>,
    max: Option<&'a Tensor>,
) -> Result<TensorIteratorBase<'a>> {
    if min.is_none() && max.is_none() {
        return Err(clamp_none_error());
    }
    // Only `self` is checked here; complex bounds promote, and the kernel refuses the complex
    // common dtype ("clamp_cpu" / "maximum_cpu" / "minimum_cpu" not implemented), as PyTorch.
    if self_.dtype().is_complex() {
        return Err(Error::not_implemented(
            "clamp is not supported for complex types",
        ));
    }
    let out = given_output(m);
    let mut config = TensorIteratorConfig::new()
        .set_check_mem_overlap(true)
        .add_output(out)?
        .add_const_input(self_);
    for bound in [min, max].into_iter().flatten() {
        config = config.add_const_input(bound);
    }
    config
        .promote_inputs_to_common_dtype(true)
        .cast_common_dtype_to_outputs(true)
        .enforce_safe_casting_to_output(true)
        .build(m)
}

/// `TORCH_IMPL_FUNC(clamp_Tensor_out)`: both bounds -> `clamp_stub`; one -> `maximum_stub`
/// (min) or `minimum_stub` (max), as PyTorch does.
pub fn clamp_tensor_out(
    iter: &mut TensorIteratorBase,
    _self: &Tensor,
    min: Option<&Tensor>,
    max: Option<&Tensor>,
    _out: &Tensor,
) -> Result<()> {
    match (min.is_some(), max.is_some()) {
        (true, true) => (CLAMP_STUB.get(iter.device_type())?)(iter),
        (true, false) => (MAXIMUM_STUB.get(iter.device_type())?)(iter),
        _ => (MINIMUM_STUB.get(iter.device_type())?)(iter),
    }
}

fn relu_check(self_: &Tensor) -> Result<()> {
    if self_.dtype() == ScalarType::Bool {
        return Err(Error::not_implemented(
            "Boolean inputs not supported for relu",
        ));
    }
    Ok(())
}
/// relu's kernel, `clamp_min(self, 0)` as clamp's meta and impl compute it: the bound 0
/// needs none of their work (it promotes no dtype and fits every one), so the iterator is
/// built as clamp's meta builds it and clamp's stub runs with that bound. PyTorch's CPU relu
/// calls `at::clamp_min` through the dispatcher; this kernel runs below autograd for its
/// CPU or Meta tensor, so going straight to the stub changes no result (a small relu cost
/// ~20% more than candle's through the second dispatch and clamp's scalar checks).
fn relu_into(m: &dyn MetaBase, self_: &Tensor) -> Result<()> {
    relu_check(self_)?;
    if self_.dtype().is_complex() {
        return Err(Error::not_implemented(
            "clamp is not supported for complex types",
        ));
    }
    let iter = unary_op_meta(m, self_)?;
    if iter.is_meta() {
        return Ok(());
    }
    (CLAMP_SCALAR_STUB.get(iter.device_type())?)(&iter, Some(&Scalar::Int(0)), None)
}
/// `relu` (CPU and Meta) = `clamp_min(self, 0)`; bool refused as in PyTorch.
pub fn relu(self_: &Tensor) -> Result<Tensor> {
    let mut op = StructuredFunctional::<1>::new();
    relu_into(&op, self_)?;
    op.take(0)
}
/// `relu_`.
pub fn relu_(self_: &Tensor) -> Result<&Tensor> {
    let mut op = StructuredInplace::new(&[self_]);
    relu_into(&op, self_)?;
    op.finish()?;
    Ok(self_)
}

// ---------------------------------------------------------------------------------------------
// clip: clamp's alias (CompositeImplicitAutograd, TensorCompare.cpp)
// ---------------------------------------------------------------------------------------------

/// `clip` (`clamp`).
pub fn clip(self_: &Tensor, min: Option<&Scalar>, max: Option<&Scalar>) -> Result<Tensor> {
    ops::clamp::call(self_, min, max)
}
/// `clip.Tensor` (`clamp.Tensor`).
pub fn clip_tensor(self_: &Tensor, min: Option<&Tensor>, max: Option<&Tensor>) -> Result<Tensor> {
    ops::clamp_Tensor::call(self_, min, max)
}
/// `clip_` (`clamp_`).
pub fn clip_<'a>(
    self_: &'a Tensor,
    min: Option<&Scalar>,
    max: Option<&Scalar>,
) -> Result<&'a Tensor> {
    ops::clamp_::call(self_, min, max)?;
    Ok(self_)
}
/// `clip_.Tensor` (`clamp_.Tensor`).
pub fn clip_tensor_<'a>(
    self_: &'a Tensor,
    min: Option<&Tensor>,
    max: Option<&Tensor>,
) -> Result<&'a Tensor> {
    ops::clamp__Tensor::call(self_, min, max)?;
    Ok(self_)
}
/// `clip.out` (`clamp.out`).
pub fn clip_out<'a>(
    self_: &Tensor,
    min: Option<&Scalar>,
    max: Option<&Scalar>,
    out: &'a Tensor,
) -> Result<&'a Tensor> {
    ops::clamp_out::call(self_, min, max, out)?;
    Ok(out)
}
/// `clip.Tensor_out` (`clamp.Tensor_out`).
pub fn clip_tensor_out<'a>(
    self_: &Tensor,
    min: Option<&Tensor>,
    max: Option<&Tensor>,
    out: &'a Tensor,
) -> Result<&'a Tensor> {
    ops::clamp_Tensor_out::call(self_, min, max, out)?;
    Ok(out)
}

/// `isnan` (TensorCompare.cpp): `self != self`, a bool tensor (false everywhere for integers).
pub fn isnan(self_: &Tensor) -> Result<Tensor> {
    ops::ne_Tensor::call(self_, self_)
}

/// `nan_to_num.out` (CPU and Meta): `out` must have self's dtype; integers (and bool) have
/// nothing to replace and are copied.
pub fn nan_to_num_out<'a>(
    self_: &Tensor,
    nan: Option<f64>,
    posinf: Option<f64>,
    neginf: Option<f64>,
    out: &'a Tensor,
) -> Result<&'a Tensor> {
    if self_.dtype() != out.dtype() {
        return Err(Error::runtime(format!(
            "nan_to_num: dtype of out: {} should be same as input: {}",
            out.dtype(),
            self_.dtype()
        )));
    }
    if self_.dtype().is_integral(true) {
        crate::structured::resize_output(out, &self_.sizes())?;
        ops::copy_::call(out, self_, false)?;
        return Ok(out);
    }
    let iter = TensorIterator::unary_op(Some(out.base()), self_.base())?;
    if !iter.is_meta() {
        (NAN_TO_NUM_STUB.get(iter.device_type())?)(&iter, nan, posinf, neginf)?;
    }
    Ok(out)
}
/// `nan_to_num` (CompositeExplicitAutograd): the out= kernel into a tensor like self.
pub fn nan_to_num(
    self_: &Tensor,
    nan: Option<f64>,
    posinf: Option<f64>,
    neginf: Option<f64>,
) -> Result<Tensor> {
    let result = Tensor::empty(&self_.sizes(), (self_.dtype(), self_.device()))?;
    nan_to_num_out(self_, nan, posinf, neginf, &result)?;
    Ok(result)
}
/// `nan_to_num_` (CompositeExplicitAutograd): the out= kernel into self.
pub fn nan_to_num_(
    self_: &Tensor,
    nan: Option<f64>,
    posinf: Option<f64>,
    neginf: Option<f64>,
) -> Result<&Tensor> {
    nan_to_num_out(self_, nan, posinf, neginf, self_)
}

/// `isinf` (CompositeExplicitAutograd): a bool tensor, true where a value (or either part of a
/// complex value) is infinite. PyTorch composes it (`self.abs() == inf`, real and imaginary
/// parts for complex); one kernel computes the same without the intermediate tensors.
pub fn isinf(self_: &Tensor) -> Result<Tensor> {
    let result = empty_result(&[self_], ScalarType::Bool, self_.device())?;
    any_dtype_unary_impl(&ISINF_STUB, self_, &result)?;
    Ok(result)
}
/// `isfinite` (CompositeImplicitAutograd): a bool tensor, true where a value is neither NaN
/// nor infinite (both parts of a complex value); every integer is finite. One kernel, as
/// `isinf`, where PyTorch composes comparisons.
pub fn isfinite(self_: &Tensor) -> Result<Tensor> {
    let result = empty_result(&[self_], ScalarType::Bool, self_.device())?;
    any_dtype_unary_impl(&ISFINITE_STUB, self_, &result)?;
    Ok(result)
}
