//! Binary pointwise operators (BinaryOps.cpp) as the kernels `native_functions.yaml` names.
//!
//! Each structured group has a **meta** `<functional>_meta(m, args..) -> TensorIteratorBase`
//! that checks the arguments and builds the TensorIterator, announcing the output to `m` (the
//! generated functional / in-place / out= wrapper of `crate::structured`), and an **impl**
//! `<out kernel>(iter, args.., out)` that runs the DispatchStub on the built iterator (the
//! iterator already holds `out`). The Scalar overloads are CompositeExplicitAutograd kernels
//! that wrap the number (`wrapped_scalar_tensor`) and call the Tensor overload through the
//! dispatcher, as PyTorch's do.

use std::borrow::Cow;

use ratten_core::{Device, Error, Result, Scalar, ScalarType, TensorBase};
use ratten_dispatch::{IValue, KernelValue};
use ratten_schema::Type;

use crate::dispatch_stub::DispatchStub;
use crate::generated::operators as ops;
use crate::native::cpu::binary_kernels::{
    BinaryFn, ADD_STUB, BITWISE_AND_STUB, BITWISE_OR_STUB, BITWISE_XOR_STUB, DIV_FLOOR_STUB,
    DIV_TRUE_STUB, DIV_TRUNC_STUB, EQ_STUB, FMOD_STUB, GE_STUB, GT_STUB, LE_STUB, LOGICAL_AND_STUB,
    LOGICAL_OR_STUB, LOGICAL_XOR_STUB, LT_STUB, MAXIMUM_STUB, MINIMUM_STUB, MUL_STUB, NE_STUB,
    POW_STUB, REMAINDER_STUB,
};
use crate::structured::{Arg, MetaBase};
use crate::tensor_iterator::{
    binary_op_config, comparison_op_config, InputOperand, MaybeOwnedOutput, TensorIteratorBase,
};
use crate::Tensor;

/// The output the wrapper already has (`maybe_get_output()`), as the iterator's operand:
/// borrowed from the wrapper for `'a` (see Note [Borrowed structured outputs]); the output of
/// an in-place op is `self_` itself.
pub fn given_output<'a>(m: &'a dyn MetaBase) -> MaybeOwnedOutput<'a> {
    MaybeOwnedOutput(given_output_ref(m).map(Cow::Borrowed))
}

/// [`given_output`] as a plain borrow (for `build_borrowing_binary`).
pub(crate) fn given_output_ref(m: &dyn MetaBase) -> Option<&TensorBase> {
    m.maybe_get_output(0).map(Tensor::base)
}

/// `wrapped_scalar_tensor(s)` on the CPU.
pub fn wrap_scalar(s: &Scalar) -> Result<Tensor> {
    Tensor::wrapped_scalar_tensor(*s, Device::CPU)
}

/// Runs a stub for the iterator's device; nothing to compute for meta tensors (the kernels
/// registered for both CPU and Meta reach here with a meta iterator).
pub fn call_stub(stub: &DispatchStub<BinaryFn>, iter: &TensorIteratorBase) -> Result<()> {
    if iter.is_meta() {
        return Ok(());
    }
    (stub.get(iter.device_type())?)(iter)
}

/// `alpha_check` (BinaryOps.h), on the iterator's common dtype.
#[inline]
pub fn alpha_check(dtype: ScalarType, alpha: &Scalar) -> Result<()> {
    // An integer alpha (the default, 1) passes every check below.
    if let Scalar::Int(_) = alpha {
        return Ok(());
    }
    if alpha.is_boolean() && dtype != ScalarType::Bool {
        return Err(Error::runtime(
            "Boolean alpha only supported for Boolean results.",
        ));
    }
    if !(dtype.is_floating_point() || dtype.is_complex() || alpha.is_integral(true)) {
        return Err(Error::runtime(
            "For integral input tensors, argument alpha must not be a floating point number.",
        ));
    }
    if !dtype.is_complex() && alpha.is_complex() {
        return Err(Error::runtime(
            "For non-complex input tensors, argument alpha must not be a complex number.",
        ));
    }
    Ok(())
}

/// `sub_check` (BinaryOps.h): `TORCH_CHECK_NOT_IMPLEMENTED` for bool operands (PyTorch 2.15
/// raises NotImplementedError).
pub fn sub_check(self_: &TensorBase, other: &TensorBase) -> Result<()> {
    if self_.dtype() == ScalarType::Bool && other.dtype() == ScalarType::Bool {
        return Err(Error::not_implemented(
            "Subtraction, the `-` operator, with two bool tensors is not supported. Use the `^` \
             or `logical_xor()` operator instead.",
        ));
    }
    if self_.dtype() == ScalarType::Bool || other.dtype() == ScalarType::Bool {
        return Err(Error::not_implemented(
            "Subtraction, the `-` operator, with a bool tensor is not supported. If you are \
             trying to invert a mask, use the `~` or `logical_not()` operator instead.",
        ));
    }
    Ok(())
}

/// `build_borrowing_binary_op(maybe_get_output(), self, other)`.
fn build_binary<'a>(
    m: &'a dyn MetaBase,
    a: impl InputOperand<'a>,
    b: impl InputOperand<'a>,
) -> Result<TensorIteratorBase<'a>> {
    if let (Some(x), Some(y)) = (a.borrowed(), b.borrowed()) {
        let out = given_output_ref(m);
        return TensorIteratorBase::build_borrowing_binary(out, x, y, false, m);
    }
    let a = a.into_operand();
    let out = given_output(m);
    binary_op_config(out, a, b)?.build(m)
}

/// `build_borrowing_comparison_op(maybe_get_output(), self, other)`: bool result.
fn build_comparison<'a>(
    m: &'a dyn MetaBase,
    a: &'a Tensor,
    b: impl InputOperand<'a>,
) -> Result<TensorIteratorBase<'a>> {
    if let Some(y) = b.borrowed() {
        let out = given_output_ref(m);
        return TensorIteratorBase::build_borrowing_comparison(out, a.base(), y, m);
    }
    let out = given_output(m);
    comparison_op_config(out, a, b)?.build(m)
}

// ---------------------------------------------------------------------------------------------
// add / sub / rsub / mul / div
// ---------------------------------------------------------------------------------------------

/// `TORCH_META_FUNC2(add, Tensor)`. Inlined into its wrappers: a small add pays no frame for
/// it (Note [Small-op latency]).
#[inline]
pub fn add_tensor_meta<'a>(
    m: &'a dyn MetaBase,
    self_: &'a Tensor,
    other: &'a Tensor,
    alpha: &Scalar,
) -> Result<TensorIteratorBase<'a>> {
    let iter = build_binary(m, self_, other)?;
    alpha_check(iter.computation_dtype()?, alpha)?;
    Ok(iter)
}

/// The CPU impl of `add.out` (PyTorch generates it from `ufunc_inner_loop`).
pub fn add_out(
    iter: &mut TensorIteratorBase,
    _self: &Tensor,
    _other: &Tensor,
    alpha: &Scalar,
    _out: &Tensor,
) -> Result<()> {
    (ADD_STUB.get(iter.device_type())?)(iter, alpha)
}

/// `TORCH_META_FUNC2(sub, Tensor)`.
pub fn sub_tensor_meta<'a>(
    m: &'a dyn MetaBase,
    self_: &'a Tensor,
    other: &'a Tensor,
    alpha: &Scalar,
) -> Result<TensorIteratorBase<'a>> {
    sub_check(self_, other)?;
    add_tensor_meta(m, self_, other, alpha)
}

/// `TORCH_IMPL_FUNC(sub_out)`: `add_stub` with `-alpha`.
pub fn sub_out(
    iter: &mut TensorIteratorBase,
    _self: &Tensor,
    _other: &Tensor,
    alpha: &Scalar,
    _out: &Tensor,
) -> Result<()> {
    (ADD_STUB.get(iter.device_type())?)(iter, &alpha.neg()?)
}

/// `TORCH_META_FUNC2(mul, Tensor)`.
pub fn mul_tensor_meta<'a>(
    m: &'a dyn MetaBase,
    self_: &'a Tensor,
    other: &'a Tensor,
) -> Result<TensorIteratorBase<'a>> {
    build_binary(m, self_, other)
}

/// `TORCH_IMPL_FUNC(mul_out)`.
pub fn mul_out(
    iter: &mut TensorIteratorBase,
    _self: &Tensor,
    _other: &Tensor,
    _out: &Tensor,
) -> Result<()> {
    call_stub(&MUL_STUB, iter)
}

/// `TORCH_META_FUNC2(div, Tensor)`: true division (integers promote to the default float).
pub fn div_tensor_meta<'a>(
    m: &'a dyn MetaBase,
    self_: &'a Tensor,
    other: &'a Tensor,
) -> Result<TensorIteratorBase<'a>> {
    let out = given_output_ref(m);
    TensorIteratorBase::build_borrowing_binary(out, self_, other, true, m)
}

/// `TORCH_IMPL_FUNC(div_out)`.
pub fn div_out(
    iter: &mut TensorIteratorBase,
    _self: &Tensor,
    _other: &Tensor,
    _out: &Tensor,
) -> Result<()> {
    call_stub(&DIV_TRUE_STUB, iter)
}

/// `TORCH_META_FUNC2(div, Tensor_mode)`.
pub fn div_tensor_mode_meta<'a>(
    m: &'a dyn MetaBase,
    self_: &'a Tensor,
    other: &'a Tensor,
    rounding_mode: Option<&str>,
) -> Result<TensorIteratorBase<'a>> {
    match rounding_mode {
        None => div_tensor_meta(m, self_, other),
        Some("trunc") | Some("floor") => build_binary(m, self_, other),
        Some(mode) => Err(Error::runtime(format!(
            "div expected rounding_mode to be one of None, 'trunc', or 'floor' but found \
             '{mode}'"
        ))),
    }
}

/// `TORCH_IMPL_FUNC(div_out_mode)`.
pub fn div_out_mode(
    iter: &mut TensorIteratorBase,
    _self: &Tensor,
    _other: &Tensor,
    rounding_mode: Option<&str>,
    _out: &Tensor,
) -> Result<()> {
    match rounding_mode {
        None => call_stub(&DIV_TRUE_STUB, iter),
        Some("trunc") => call_stub(&DIV_TRUNC_STUB, iter),
        _ => call_stub(&DIV_FLOOR_STUB, iter),
    }
}

/// `add.Scalar` (CompositeExplicitAutograd).
pub fn add(self_: &Tensor, other: &Scalar, alpha: &Scalar) -> Result<Tensor> {
    ops::add_Tensor::call(self_, &wrap_scalar(other)?, alpha)
}
/// `add_.Scalar`.
pub fn add_<'a>(self_: &'a Tensor, other: &Scalar, alpha: &Scalar) -> Result<&'a Tensor> {
    ops::add__Tensor::call(self_, &wrap_scalar(other)?, alpha)?;
    Ok(self_)
}
/// `sub.Scalar`.
pub fn sub(self_: &Tensor, other: &Scalar, alpha: &Scalar) -> Result<Tensor> {
    ops::sub_Tensor::call(self_, &wrap_scalar(other)?, alpha)
}
/// `sub_.Scalar`.
pub fn sub_<'a>(self_: &'a Tensor, other: &Scalar, alpha: &Scalar) -> Result<&'a Tensor> {
    ops::sub__Tensor::call(self_, &wrap_scalar(other)?, alpha)?;
    Ok(self_)
}
/// `rsub.Tensor` = `other - alpha * self` (CPU and Meta).
pub fn rsub(self_: &Tensor, other: &Tensor, alpha: &Scalar) -> Result<Tensor> {
    ops::sub_Tensor::call(other, self_, alpha)
}
/// `rsub.Scalar`.
pub fn rsub_scalar(self_: &Tensor, other: &Scalar, alpha: &Scalar) -> Result<Tensor> {
    ops::sub_Tensor::call(&wrap_scalar(other)?, self_, alpha)
}
/// `mul.Scalar`.
pub fn mul(self_: &Tensor, other: &Scalar) -> Result<Tensor> {
    ops::mul_Tensor::call(self_, &wrap_scalar(other)?)
}
/// `mul_.Scalar`.
pub fn mul_<'a>(self_: &'a Tensor, other: &Scalar) -> Result<&'a Tensor> {
    ops::mul__Tensor::call(self_, &wrap_scalar(other)?)?;
    Ok(self_)
}
/// `div.Scalar`.
pub fn div_scalar(self_: &Tensor, other: &Scalar) -> Result<Tensor> {
    ops::div_Tensor::call(self_, &wrap_scalar(other)?)
}
/// `div_.Scalar`.
pub fn div_scalar_<'a>(self_: &'a Tensor, other: &Scalar) -> Result<&'a Tensor> {
    ops::div__Tensor::call(self_, &wrap_scalar(other)?)?;
    Ok(self_)
}
/// `div.Scalar_mode`.
pub fn div_scalar_mode(
    self_: &Tensor,
    other: &Scalar,
    rounding_mode: Option<&str>,
) -> Result<Tensor> {
    ops::div_Tensor_mode::call(self_, &wrap_scalar(other)?, rounding_mode)
}
/// `div_.Scalar_mode`.
pub fn div_scalar_mode_<'a>(
    self_: &'a Tensor,
    other: &Scalar,
    rounding_mode: Option<&str>,
) -> Result<&'a Tensor> {
    ops::div__Tensor_mode::call(self_, &wrap_scalar(other)?, rounding_mode)?;
    Ok(self_)
}

/// `str?` arguments (div's `rounding_mode`): ratten-dispatch has no `KernelValue` for
/// `Option<String>`, so the generated signatures name `Arg<Option<String>>`.
impl KernelValue for Arg<Option<String>> {
    type Ref<'a> = Option<&'a str>;
    fn schema_type() -> Type {
        Type::optional(Type::Str)
    }
    fn ref_to_ivalue(r: &Option<&str>) -> IValue {
        r.map_or(IValue::None, |s| IValue::String(s.into()))
    }
    fn into_ivalue(self) -> IValue {
        Self::ref_to_ivalue(&self.0.as_deref())
    }
    fn from_ivalue(v: IValue) -> Result<Self> {
        match v {
            IValue::None => Ok(Arg(None)),
            IValue::String(s) => Ok(Arg(Some(s.to_string()))),
            other => Err(Error::runtime(format!(
                "Expected str? but got {}",
                other.tag_kind()
            ))),
        }
    }
    fn borrow(&self) -> Option<&str> {
        self.0.as_deref()
    }
}

// ---------------------------------------------------------------------------------------------
// Stub-only structured groups: remainder, fmod, pow, maximum, minimum, bitwise, comparisons
// ---------------------------------------------------------------------------------------------

/// Defines `<meta>(m, self, other)` building `$build` and `<impl>(iter, self, other, out)`
/// running `$stub`.
macro_rules! structured_binary {
    ($($(#[$doc:meta])* $meta:ident, $imp:ident, $build:ident, $stub:ident;)*) => {$(
        $(#[$doc])*
        pub fn $meta<'a>(
            m: &'a dyn MetaBase,
            self_: &'a Tensor,
            other: &'a Tensor,
        ) -> Result<TensorIteratorBase<'a>> {
            $build(m, self_, other)
        }
        /// The CPU impl: the stub over the built iterator.
        pub fn $imp(
            iter: &mut TensorIteratorBase,
            _self: &Tensor,
            _other: &Tensor,
            _out: &Tensor,
        ) -> Result<()> {
            call_stub(&$stub, iter)
        }
    )*};
}

/// `TORCH_META_FUNC(maximum)` / `minimum`: no complex.
fn build_max_min<'a>(
    name: &str,
    m: &'a dyn MetaBase,
    a: &'a Tensor,
    b: &'a Tensor,
) -> Result<TensorIteratorBase<'a>> {
    if a.dtype().is_complex() || b.dtype().is_complex() {
        // TORCH_CHECK_TYPE: a TypeError in Python.
        return Err(Error::type_error(format!(
            "{name} not implemented for complex tensors."
        )));
    }
    build_binary(m, a, b)
}
fn build_maximum<'a>(
    m: &'a dyn MetaBase,
    a: &'a Tensor,
    b: &'a Tensor,
) -> Result<TensorIteratorBase<'a>> {
    build_max_min("maximum", m, a, b)
}
fn build_minimum<'a>(
    m: &'a dyn MetaBase,
    a: &'a Tensor,
    b: &'a Tensor,
) -> Result<TensorIteratorBase<'a>> {
    build_max_min("minimum", m, a, b)
}

structured_binary! {
    /// `TORCH_META_FUNC2(remainder, Tensor)` (Python's `%`).
    remainder_tensor_meta, remainder_out, build_binary, REMAINDER_STUB;
    /// `TORCH_META_FUNC2(fmod, Tensor)` (C's `%`).
    fmod_tensor_meta, fmod_out, build_binary, FMOD_STUB;
    /// `TORCH_META_FUNC2(pow, Tensor_Tensor)`.
    pow_tensor_tensor_meta, pow_tensor_tensor_out, build_binary, POW_STUB;
    /// `TORCH_META_FUNC(maximum)`.
    maximum_meta, maximum_out, build_maximum, MAXIMUM_STUB;
    /// `TORCH_META_FUNC(minimum)`.
    minimum_meta, minimum_out, build_minimum, MINIMUM_STUB;
    /// `TORCH_META_FUNC2(bitwise_and, Tensor)`.
    bitwise_and_tensor_meta, bitwise_and_out, build_binary, BITWISE_AND_STUB;
    /// `TORCH_META_FUNC2(bitwise_or, Tensor)`.
    bitwise_or_tensor_meta, bitwise_or_out, build_binary, BITWISE_OR_STUB;
    /// `TORCH_META_FUNC2(bitwise_xor, Tensor)`.
    bitwise_xor_tensor_meta, bitwise_xor_out, build_binary, BITWISE_XOR_STUB;
    /// `TORCH_META_FUNC2(eq, Tensor)`: bool result.
    eq_tensor_meta, eq_tensor_out, build_comparison, EQ_STUB;
    /// `TORCH_META_FUNC2(ne, Tensor)`.
    ne_tensor_meta, ne_tensor_out, build_comparison, NE_STUB;
    /// `TORCH_META_FUNC2(lt, Tensor)`.
    lt_tensor_meta, lt_tensor_out, build_comparison, LT_STUB;
    /// `TORCH_META_FUNC2(le, Tensor)`.
    le_tensor_meta, le_tensor_out, build_comparison, LE_STUB;
    /// `TORCH_META_FUNC2(gt, Tensor)`.
    gt_tensor_meta, gt_tensor_out, build_comparison, GT_STUB;
    /// `TORCH_META_FUNC2(ge, Tensor)`.
    ge_tensor_meta, ge_tensor_out, build_comparison, GE_STUB;
}

/// Defines the Scalar-`other` structured group of a comparison: the number is wrapped and the
/// iterator built as for two tensors (`TORCH_META_FUNC2(eq, Scalar)`).
macro_rules! structured_comparison_scalar {
    ($($meta:ident, $imp:ident, $stub:ident;)*) => {$(
        /// The meta of the Scalar overload (the number is a wrapped-number operand).
        pub fn $meta<'a>(
            m: &'a dyn MetaBase,
            self_: &'a Tensor,
            other: &Scalar,
        ) -> Result<TensorIteratorBase<'a>> {
            build_comparison(m, self_, wrap_scalar(other)?)
        }
        /// The CPU impl of the Scalar overload.
        pub fn $imp(
            iter: &mut TensorIteratorBase,
            _self: &Tensor,
            _other: &Scalar,
            _out: &Tensor,
        ) -> Result<()> {
            call_stub(&$stub, iter)
        }
    )*};
}

structured_comparison_scalar! {
    eq_scalar_meta, eq_scalar_out, EQ_STUB;
    ne_scalar_meta, ne_scalar_out, NE_STUB;
    lt_scalar_meta, lt_scalar_out, LT_STUB;
    le_scalar_meta, le_scalar_out, LE_STUB;
    gt_scalar_meta, gt_scalar_out, GT_STUB;
    ge_scalar_meta, ge_scalar_out, GE_STUB;
}

/// `TORCH_META_FUNC2(pow, Tensor_Scalar)`: NumPy's check on integer bases, then the exponent
/// as a wrapped number (the result dtype is `result_type(self, exponent)`, as PyTorch's).
pub fn pow_tensor_scalar_meta<'a>(
    m: &'a dyn MetaBase,
    self_: &'a Tensor,
    exponent: &Scalar,
) -> Result<TensorIteratorBase<'a>> {
    if self_.dtype().is_integral(true)
        && exponent.is_integral(true)
        && exponent.to::<i64>().is_ok_and(|e| e < 0)
    {
        return Err(Error::runtime(
            "Integers to negative integer powers are not allowed.",
        ));
    }
    build_binary(m, self_, wrap_scalar(exponent)?)
}
/// `TORCH_IMPL_FUNC(pow_Tensor_Scalar_out)`: an exponent of 0 fills with 1 and an exponent of
/// 1 copies the base (so `pow(bool, True)` works, and a complex base is returned unchanged);
/// otherwise the exponent must convert to an integer, half or bfloat16 common dtype without
/// overflow (`exp_scalar.to<scalar_t>()` in PowKernel.cpp) before the stub runs.
pub fn pow_tensor_scalar_out(
    iter: &mut TensorIteratorBase,
    self_: &Tensor,
    exponent: &Scalar,
    out: &Tensor,
) -> Result<()> {
    if iter.is_meta() {
        return Ok(());
    }
    // c10's `exp.equal(0.0) || exp.equal(false)` (a bool only equals a bool).
    if exponent.equal(0.0) || matches!(exponent, Scalar::Bool(false)) {
        ops::fill__Scalar::call(out, &Scalar::Int(1))?;
        return Ok(());
    }
    if exponent.equal(1.0) || matches!(exponent, Scalar::Bool(true)) {
        ops::copy_::call(out, self_, false)?;
        return Ok(());
    }
    let dt = iter.common_dtype().unwrap_or(ScalarType::Float);
    if dt.is_integral(false) || matches!(dt, ScalarType::Half | ScalarType::BFloat16) {
        exponent.check_fits(dt)?;
    }
    if dt == ScalarType::ComplexHalf {
        // PyTorch's `pow_tensor_scalar_kernel` hands the exponents 0.5, -0.5 and -1 of a
        // complex base to sqrt, rsqrt and reciprocal, so the complex32 refusal names that
        // kernel.
        let kernel = if exponent.equal(0.5) {
            "sqrt_vml_cpu"
        } else if exponent.equal(-0.5) {
            "rsqrt_cpu"
        } else if exponent.equal(-1.0) {
            "reciprocal_cpu"
        } else {
            "pow"
        };
        crate::native::cpu::refuse_complex32(kernel, dt)?;
    }
    call_stub(&POW_STUB, iter)
}

/// `TORCH_META_FUNC2(pow, Scalar)`: a number base with a tensor exponent. Not a TensorIterator
/// (as in PyTorch): the output has the exponent's sizes, contiguous (not the exponent's
/// layout), and the dtype of a given output or else `result_type(base, exponent)`.
pub fn pow_scalar_meta(m: &dyn MetaBase, self_: &Scalar, exponent: &Tensor) -> Result<()> {
    let dtype = match m.maybe_get_output(0) {
        Some(out) => out.dtype(),
        None => crate::native::type_properties::result_type_scalar(exponent, self_)?,
    };
    let options = ratten_core::TensorOptions::new()
        .dtype(dtype)
        .device(exponent.device());
    m.set_output_raw_strided(0, &exponent.sizes(), &[], options)
}
/// `TORCH_IMPL_FUNC(pow_Scalar_out)`: a base of 1 fills the output with 1 (whatever the
/// exponent holds); otherwise `pow_out(out, wrapped_scalar_tensor(base), exponent)`.
pub fn pow_scalar_out(
    _state: &mut (),
    self_: &Scalar,
    exponent: &Tensor,
    out: &Tensor,
) -> Result<()> {
    if exponent.device().is_meta() {
        return Ok(());
    }
    if self_.equal(1.0) {
        ops::fill__Scalar::call(out, &Scalar::Int(1))?;
        return Ok(());
    }
    ops::pow_Tensor_Tensor_out::call(&wrap_scalar(self_)?, exponent, out)?;
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Scalar overloads of remainder / fmod / bitwise (CompositeExplicitAutograd)
// ---------------------------------------------------------------------------------------------

/// `remainder.Scalar`.
pub fn remainder_scalar(self_: &Tensor, other: &Scalar) -> Result<Tensor> {
    ops::remainder_Tensor::call(self_, &wrap_scalar(other)?)
}
/// `remainder_.Scalar`.
pub fn remainder_<'a>(self_: &'a Tensor, other: &Scalar) -> Result<&'a Tensor> {
    ops::remainder__Tensor::call(self_, &wrap_scalar(other)?)?;
    Ok(self_)
}
/// `remainder.Scalar_out`.
pub fn remainder_scalar_out<'a>(
    self_: &Tensor,
    other: &Scalar,
    out: &'a Tensor,
) -> Result<&'a Tensor> {
    ops::remainder_Tensor_out::call(self_, &wrap_scalar(other)?, out)?;
    Ok(out)
}
/// `remainder.Scalar_Tensor` (CPU and Meta): a number dividend.
pub fn remainder_scalar_tensor(self_: &Scalar, other: &Tensor) -> Result<Tensor> {
    ops::remainder_Tensor::call(&wrap_scalar(self_)?, other)
}
/// `fmod.Scalar`.
pub fn fmod(self_: &Tensor, other: &Scalar) -> Result<Tensor> {
    ops::fmod_Tensor::call(self_, &wrap_scalar(other)?)
}
/// `fmod_.Scalar`.
pub fn fmod_<'a>(self_: &'a Tensor, other: &Scalar) -> Result<&'a Tensor> {
    ops::fmod__Tensor::call(self_, &wrap_scalar(other)?)?;
    Ok(self_)
}
/// `fmod.Scalar_out`.
pub fn fmod_scalar_out<'a>(self_: &Tensor, other: &Scalar, out: &'a Tensor) -> Result<&'a Tensor> {
    ops::fmod_Tensor_out::call(self_, &wrap_scalar(other)?, out)?;
    Ok(out)
}

macro_rules! bitwise_scalar_kernels {
    ($($f:ident, $f_:ident, $f_out:ident, $f_st:ident, $t:ident, $t_:ident, $t_out:ident;)*) => {$(
        /// The `.Scalar` overload.
        pub fn $f(self_: &Tensor, other: &Scalar) -> Result<Tensor> {
            ops::$t::call(self_, &wrap_scalar(other)?)
        }
        /// The in-place `.Scalar` overload.
        pub fn $f_<'a>(self_: &'a Tensor, other: &Scalar) -> Result<&'a Tensor> {
            ops::$t_::call(self_, &wrap_scalar(other)?)?;
            Ok(self_)
        }
        /// The `.Scalar_out` overload.
        pub fn $f_out<'a>(self_: &Tensor, other: &Scalar, out: &'a Tensor) -> Result<&'a Tensor> {
            ops::$t_out::call(self_, &wrap_scalar(other)?, out)?;
            Ok(out)
        }
        /// The `.Scalar_Tensor` overload (a number first operand).
        pub fn $f_st(self_: &Scalar, other: &Tensor) -> Result<Tensor> {
            ops::$t::call(&wrap_scalar(self_)?, other)
        }
    )*};
}

bitwise_scalar_kernels! {
    bitwise_and_scalar, bitwise_and_, bitwise_and_scalar_out, bitwise_and_scalar_tensor,
        bitwise_and_Tensor, bitwise_and__Tensor, bitwise_and_Tensor_out;
    bitwise_or_scalar, bitwise_or_, bitwise_or_scalar_out, bitwise_or_scalar_tensor,
        bitwise_or_Tensor, bitwise_or__Tensor, bitwise_or_Tensor_out;
    bitwise_xor_scalar, bitwise_xor_, bitwise_xor_scalar_out, bitwise_xor_scalar_tensor,
        bitwise_xor_Tensor, bitwise_xor__Tensor, bitwise_xor_Tensor_out;
}

// ---------------------------------------------------------------------------------------------
// logical_and / or / xor (not structured: CPU out= kernel, composite functional / in-place)
// ---------------------------------------------------------------------------------------------

/// `comparison_op_out(result, self, other, stub)`: `result` keeps its dtype.
fn comparison_op_out<'a>(
    stub: &DispatchStub<BinaryFn>,
    self_: &Tensor,
    other: &Tensor,
    out: &'a Tensor,
) -> Result<&'a Tensor> {
    let iter = comparison_op_config(out, self_, other)?.build_standalone()?;
    call_stub(stub, &iter)?;
    Ok(out)
}

macro_rules! logical_kernels {
    ($($f:ident, $f_:ident, $f_out:ident, $out_op:ident, $stub:ident;)*) => {$(
        /// The out= kernel (CPU and Meta).
        pub fn $f_out<'a>(self_: &Tensor, other: &Tensor, out: &'a Tensor) -> Result<&'a Tensor> {
            comparison_op_out(&$stub, self_, other, out)
        }
        /// The functional form: a bool result (`comparison_op`).
        pub fn $f(self_: &Tensor, other: &Tensor) -> Result<Tensor> {
            let result = crate::native::unary_ops::empty_result(
                &[self_, other],
                ScalarType::Bool,
                self_.device(),
            )?;
            ops::$out_op::call(self_, other, &result)?;
            Ok(result)
        }
        /// The in-place form: `self` keeps its dtype (`comparison_op_`).
        pub fn $f_<'a>(self_: &'a Tensor, other: &Tensor) -> Result<&'a Tensor> {
            ops::$out_op::call(self_, other, self_)?;
            Ok(self_)
        }
    )*};
}

logical_kernels! {
    logical_and, logical_and_, logical_and_out, logical_and_out, LOGICAL_AND_STUB;
    logical_or, logical_or_, logical_or_out, logical_or_out, LOGICAL_OR_STUB;
    logical_xor, logical_xor_, logical_xor_out, logical_xor_out, LOGICAL_XOR_STUB;
}

// ---------------------------------------------------------------------------------------------
// floor_divide (BinaryOps.cpp): division rounded toward negative infinity, `div` with
// `rounding_mode="floor"` (the same stub, div_floor_stub, in PyTorch)
// ---------------------------------------------------------------------------------------------

const FLOOR: Option<&str> = Some("floor");

/// `floor_divide`.
pub fn floor_divide(self_: &Tensor, other: &Tensor) -> Result<Tensor> {
    ops::div_Tensor_mode::call(self_, other, FLOOR)
}
/// `floor_divide_.Tensor`.
pub fn floor_divide_<'a>(self_: &'a Tensor, other: &Tensor) -> Result<&'a Tensor> {
    ops::div__Tensor_mode::call(self_, other, FLOOR)?;
    Ok(self_)
}
/// `floor_divide.out`.
pub fn floor_divide_out<'a>(self_: &Tensor, other: &Tensor, out: &'a Tensor) -> Result<&'a Tensor> {
    ops::div_out_mode::call(self_, other, FLOOR, out)?;
    Ok(out)
}
/// `floor_divide.Scalar`.
pub fn floor_divide_scalar(self_: &Tensor, other: &Scalar) -> Result<Tensor> {
    ops::div_Tensor_mode::call(self_, &wrap_scalar(other)?, FLOOR)
}
/// `floor_divide_.Scalar`.
pub fn floor_divide_scalar_<'a>(self_: &'a Tensor, other: &Scalar) -> Result<&'a Tensor> {
    ops::div__Tensor_mode::call(self_, &wrap_scalar(other)?, FLOOR)?;
    Ok(self_)
}
