//! Unary pointwise operators (UnaryOps.cpp) with PyTorch's meta/impl split; see
//! `binary_ops` for the shape of the API.

use ratten_core::{Error, Result, Scalar, ScalarType};

use crate::dispatch_stub::DispatchStub;
use crate::native::binary_ops::{given_output, run_functional, run_inplace, run_out};
use crate::native::cpu::unary_kernels::{
    UnaryFn, ABS_STUB, BITWISE_NOT_STUB, CLAMP_SCALAR_STUB, COS_STUB, EXPM1_STUB, EXP_STUB,
    LOG1P_STUB, LOGICAL_NOT_STUB, LOG_STUB, NEG_STUB, RSQRT_STUB, SIGMOID_STUB, SIGN_STUB,
    SIN_STUB, SQRT_STUB, TANH_STUB, TAN_STUB,
};
use crate::structured::MetaBase;
use crate::tensor_iterator::{
    unary_float_op_config, unary_op_config, TensorIteratorBase, TensorIteratorConfig,
};
use crate::Tensor;

/// `build_borrowing_unary_op` (UNARY_OP_CONFIG: output and input of one dtype).
pub fn unary_op_meta(m: &mut dyn MetaBase, self_: &Tensor) -> Result<TensorIteratorBase> {
    let out = given_output(m);
    unary_op_config(out.as_ref(), self_)?.build(m)
}

/// `build_borrowing_unary_float_op` (integers promote to the default float dtype).
pub fn unary_float_op_meta(m: &mut dyn MetaBase, self_: &Tensor) -> Result<TensorIteratorBase> {
    let out = given_output(m);
    unary_float_op_config(out.as_ref(), self_)?.build(m)
}

/// `TORCH_META_FUNC(neg)`: no bool.
pub fn neg_meta(m: &mut dyn MetaBase, self_: &Tensor) -> Result<TensorIteratorBase> {
    if self_.dtype() == ScalarType::Bool {
        return Err(Error::runtime(
            "Negation, the `-` operator, on a bool tensor is not supported. If you are trying to \
             invert a mask, use the `~` or `logical_not()` operator instead.",
        ));
    }
    unary_op_meta(m, self_)
}

/// `TORCH_META_FUNC(sign)`: no complex.
pub fn sign_meta(m: &mut dyn MetaBase, self_: &Tensor) -> Result<TensorIteratorBase> {
    if self_.dtype().is_complex() {
        return Err(Error::runtime(
            "Unlike NumPy, torch.sign is not intended to support complex numbers. Please use \
             torch.sgn instead.",
        ));
    }
    unary_op_meta(m, self_)
}

/// Runs a unary stub on the built iterator (the impl of every op here).
pub fn unary_impl(stub: &DispatchStub<UnaryFn>, iter: &TensorIteratorBase) -> Result<()> {
    (stub.get(iter.device_type())?)(iter)
}

type Meta = fn(&mut dyn MetaBase, &Tensor) -> Result<TensorIteratorBase>;

fn functional(a: &Tensor, meta: Meta, stub: &'static DispatchStub<UnaryFn>) -> Result<Tensor> {
    run_functional(
        Box::new(move |m| meta(m, a)),
        Box::new(move |it| unary_impl(stub, it)),
    )
}
fn inplace(a: &Tensor, meta: Meta, stub: &'static DispatchStub<UnaryFn>) -> Result<Tensor> {
    run_inplace(
        a,
        Box::new(move |m| meta(m, a)),
        Box::new(move |it| unary_impl(stub, it)),
    )
}
fn out_v(
    a: &Tensor,
    out: &Tensor,
    meta: Meta,
    stub: &'static DispatchStub<UnaryFn>,
) -> Result<Tensor> {
    run_out(
        out,
        Box::new(move |m| meta(m, a)),
        Box::new(move |it| unary_impl(stub, it)),
    )
}

macro_rules! unary_front_ends {
    ($($(#[$doc:meta])* $name:ident, $name_:ident, $name_out:ident, $meta:expr, $stub:ident;)*) => {$(
        $(#[$doc])*
        pub fn $name(a: &Tensor) -> Result<Tensor> { functional(a, $meta, &$stub) }
        /// In-place variant.
        pub fn $name_(a: &Tensor) -> Result<Tensor> { inplace(a, $meta, &$stub) }
        /// out= variant.
        pub fn $name_out(a: &Tensor, out: &Tensor) -> Result<Tensor> { out_v(a, out, $meta, &$stub) }
    )*};
}

unary_front_ends! {
    /// `torch.neg` (not for bool).
    neg, neg_, neg_out, neg_meta, NEG_STUB;
    /// `torch.abs`.
    abs, abs_, abs_out, unary_op_meta, ABS_STUB;
    /// `torch.sign`.
    sign, sign_, sign_out, sign_meta, SIGN_STUB;
    /// `torch.bitwise_not`.
    bitwise_not, bitwise_not_, bitwise_not_out, unary_op_meta, BITWISE_NOT_STUB;
    /// `torch.exp`.
    exp, exp_, exp_out, unary_float_op_meta, EXP_STUB;
    /// `torch.log`.
    log, log_, log_out, unary_float_op_meta, LOG_STUB;
    /// `torch.log1p`.
    log1p, log1p_, log1p_out, unary_float_op_meta, LOG1P_STUB;
    /// `torch.expm1`.
    expm1, expm1_, expm1_out, unary_float_op_meta, EXPM1_STUB;
    /// `torch.sqrt`.
    sqrt, sqrt_, sqrt_out, unary_float_op_meta, SQRT_STUB;
    /// `torch.rsqrt`.
    rsqrt, rsqrt_, rsqrt_out, unary_float_op_meta, RSQRT_STUB;
    /// `torch.sin`.
    sin, sin_, sin_out, unary_float_op_meta, SIN_STUB;
    /// `torch.cos`.
    cos, cos_, cos_out, unary_float_op_meta, COS_STUB;
    /// `torch.tan`.
    tan, tan_, tan_out, unary_float_op_meta, TAN_STUB;
    /// `torch.tanh`.
    tanh, tanh_, tanh_out, unary_float_op_meta, TANH_STUB;
    /// `torch.sigmoid`.
    sigmoid, sigmoid_, sigmoid_out, unary_float_op_meta, SIGMOID_STUB;
}

/// `torch.logical_not`: bool result (any input dtype); out= keeps its dtype.
pub fn logical_not_out(a: &Tensor, out: &Tensor) -> Result<Tensor> {
    let iter = TensorIteratorConfig::new()
        .check_all_same_dtype(false)
        .add_output(Some(out))?
        .add_const_input(a)
        .build_standalone()?;
    unary_impl(&LOGICAL_NOT_STUB, &iter)?;
    Ok(out.clone())
}
/// `torch.logical_not`.
pub fn logical_not(a: &Tensor) -> Result<Tensor> {
    let out = Tensor::empty(&[0], (ScalarType::Bool, a.device()))?;
    logical_not_out(a, &out)
}
/// `self.logical_not_()`.
pub fn logical_not_(a: &Tensor) -> Result<Tensor> {
    logical_not_out(a, a)
}

/// `clamp` meta with Scalar bounds (TensorCompare.cpp): at least one bound; bounds take part
/// in type promotion (not for in-place).
pub fn clamp_meta(
    m: &mut dyn MetaBase,
    self_: &Tensor,
    min: Option<&Scalar>,
    max: Option<&Scalar>,
) -> Result<TensorIteratorBase> {
    if min.is_none() && max.is_none() {
        return Err(Error::runtime(
            "torch.clamp: At least one of 'min' or 'max' must not be None",
        ));
    }
    let mut result_type = self_.dtype();
    if result_type.is_complex() {
        return Err(Error::runtime("clamp is not supported for complex types"));
    }
    if !result_type.is_floating_point() {
        use crate::native::type_properties::{
            result_type_of_state, update_result_type_state, update_result_type_state_scalar,
            ResultTypeState,
        };
        let mut state = ResultTypeState::default();
        update_result_type_state(self_, &mut state);
        for s in [min, max].into_iter().flatten() {
            update_result_type_state_scalar(s, &mut state);
        }
        result_type = result_type_of_state(&state).unwrap_or(result_type);
        let inplace = m.maybe_get_output(0).is_some_and(|o| o.is_same(self_));
        if result_type != self_.dtype() && inplace {
            return Err(Error::runtime(format!(
                "result type {result_type} can't be cast to the desired output type {}",
                self_.dtype()
            )));
        }
    }
    if result_type.is_complex() {
        return Err(Error::runtime("clamp is not supported for complex types"));
    }
    let input = crate::native::copy::to_dtype(self_, result_type)?;
    unary_op_meta(m, &input)
}

fn clamp_v(
    a: &Tensor,
    min: Option<&Scalar>,
    max: Option<&Scalar>,
    out: Option<&Tensor>,
    inplace: bool,
) -> Result<Tensor> {
    let meta = Box::new(move |m: &mut dyn MetaBase| clamp_meta(m, a, min, max));
    let imp = Box::new(move |it: &TensorIteratorBase| {
        (CLAMP_SCALAR_STUB.get(it.device_type())?)(it, min, max)
    });
    match (out, inplace) {
        (Some(o), _) => run_out(o, meta, imp),
        (None, true) => run_inplace(a, meta, imp),
        (None, false) => run_functional(meta, imp),
    }
}

/// `torch.clamp(self, min, max)` with Scalar bounds.
pub fn clamp(a: &Tensor, min: Option<&Scalar>, max: Option<&Scalar>) -> Result<Tensor> {
    clamp_v(a, min, max, None, false)
}
/// `self.clamp_(min, max)`.
pub fn clamp_(a: &Tensor, min: Option<&Scalar>, max: Option<&Scalar>) -> Result<Tensor> {
    clamp_v(a, min, max, None, true)
}
/// `torch.clamp(..., out=out)`.
pub fn clamp_out(
    a: &Tensor,
    min: Option<&Scalar>,
    max: Option<&Scalar>,
    out: &Tensor,
) -> Result<Tensor> {
    clamp_v(a, min, max, Some(out), false)
}

/// `torch.relu` = `clamp_min(self, 0)`; bool refused as in PyTorch.
pub fn relu(a: &Tensor) -> Result<Tensor> {
    if a.dtype() == ScalarType::Bool {
        return Err(Error::runtime("Boolean inputs not supported for relu"));
    }
    clamp(a, Some(&Scalar::Int(0)), None)
}
/// `self.relu_()`.
pub fn relu_(a: &Tensor) -> Result<Tensor> {
    if a.dtype() == ScalarType::Bool {
        return Err(Error::runtime("Boolean inputs not supported for relu"));
    }
    clamp_(a, Some(&Scalar::Int(0)), None)
}
