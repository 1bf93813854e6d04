//! Binary pointwise operators as structured kernels with simple loops: the meta functions
//! (`add_tensor_meta`, ...) and the CPU impls (`add_out`, ...) that the generated wrappers
//! call, and the CompositeExplicitAutograd kernels of the Scalar overloads.
//!
//! The meta follows TensorIterator's rules for a binary op: broadcast shapes, `result_type`
//! promotion, the given output's dtype when the result can be cast to it, and PyTorch's errors.
//! It will be replaced by a TensorIterator meta (the iterator issue) without changing the
//! generated code.

use ratten_core::type_promotion::can_cast;
use ratten_core::{get_default_dtype, Error, Result, Scalar, ScalarType, TensorOptions};

use super::simple_loops::{broadcast_shapes, check_same_device, pointwise, result_type, Value};
use crate::generated::functions;
use crate::structured::MetaBase;
use crate::Tensor;

/// What meta hands to impl: the dtype the loop computes in and the output shape.
#[derive(Debug, Clone)]
pub struct BinaryState {
    pub compute: ScalarType,
    pub shape: Vec<i64>,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Op {
    Add,
    Sub,
    Mul,
    Div,
    Remainder,
    BitAnd,
    BitOr,
    BitXor,
}

impl Op {
    fn kernel_name(self) -> &'static str {
        match self {
            Op::Add => "add",
            Op::Sub => "sub",
            Op::Mul => "mul",
            Op::Div => "div",
            Op::Remainder => "remainder",
            Op::BitAnd => "bitwise_and",
            Op::BitOr => "bitwise_or",
            Op::BitXor => "bitwise_xor",
        }
    }
}

fn not_implemented(op: &str, dtype: ScalarType) -> Error {
    Error::runtime(format!("\"{op}_cpu\" not implemented for '{dtype}'"))
}

/// `alpha_check` (BinaryOps.h).
fn alpha_check(dtype: ScalarType, alpha: &Scalar) -> Result<()> {
    if alpha.is_boolean() && dtype != ScalarType::Bool {
        return Err(Error::runtime(
            "Boolean alpha only supported for Boolean results.",
        ));
    }
    if !dtype.is_floating_point() && !dtype.is_complex() && !alpha.is_integral(true) {
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

fn binary_meta(
    m: &mut dyn MetaBase,
    op: Op,
    self_: &Tensor,
    other: &Tensor,
    alpha: Option<&Scalar>,
) -> Result<BinaryState> {
    check_same_device(self_, other)?;
    let shape = broadcast_shapes(&self_.sizes(), &other.sizes())?;
    let common = result_type(&[self_, other])?;
    let compute = match op {
        Op::Sub if self_.dtype() == ScalarType::Bool || other.dtype() == ScalarType::Bool => {
            return Err(Error::runtime(
                "Subtraction, the `-` operator, with a bool tensor is not supported. If you are trying to invert a mask, use the `~` or `logical_not()` operator instead.",
            ));
        }
        Op::Div if common.is_integral(true) => get_default_dtype(),
        Op::Remainder if common == ScalarType::Bool || common.is_complex() => {
            return Err(not_implemented("remainder", common));
        }
        Op::BitAnd | Op::BitOr | Op::BitXor if !common.is_integral(true) => {
            return Err(not_implemented(op.kernel_name(), common));
        }
        _ => common,
    };
    if let Some(a) = alpha {
        alpha_check(compute, a)?;
    }
    // The output TensorIterator would use: the given one (in-place / out=) keeps its dtype
    // when the result can be cast to it; an in-place output cannot be broadcast.
    let device = if self_.dim() == 0 && self_.device().is_cpu() {
        other.device()
    } else {
        self_.device()
    };
    let mut out_dtype = compute;
    if let Some(out) = m.maybe_get_output(0) {
        if (out.is_same(self_) || out.is_same(other)) && out.sizes().as_slice() != shape.as_slice()
        {
            return Err(Error::runtime(format!(
                "output with shape {:?} doesn't match the broadcast shape {:?}",
                out.sizes().as_slice(),
                shape
            )));
        }
        if !can_cast(compute, out.dtype()) {
            return Err(Error::runtime(format!(
                "result type {compute} can't be cast to the desired output type {}",
                out.dtype()
            )));
        }
        out_dtype = out.dtype();
    }
    m.set_output_contiguous(
        0,
        &shape,
        TensorOptions::new().dtype(out_dtype).device(device),
    )?;
    Ok(BinaryState { compute, shape })
}

fn binary_impl(
    state: &BinaryState,
    op: Op,
    self_: &Tensor,
    other: &Tensor,
    alpha: Option<&Scalar>,
    out: &Tensor,
) -> Result<()> {
    let a = self_.expand(&state.shape)?;
    let b = other.expand(&state.shape)?;
    let alpha = alpha.map(|s| scalar_value(s).to_category(state.compute));
    pointwise(out, &[&a, &b], state.compute, |v| {
        let (x, y) = (v[0], v[1]);
        let y = match alpha {
            Some(al) if op == Op::Add || op == Op::Sub => v_mul(y, al),
            _ => y,
        };
        Ok(match op {
            Op::Add => v_add(x, y),
            Op::Sub => v_add(x, v_neg(y)),
            Op::Mul => v_mul(x, y),
            Op::Div => v_div(x, y)?,
            Op::Remainder => remainder(x, y)?,
            Op::BitAnd => bitwise(x, y, |p, q| p & q, |p, q| p & q),
            Op::BitOr => bitwise(x, y, |p, q| p | q, |p, q| p | q),
            Op::BitXor => bitwise(x, y, |p, q| p ^ q, |p, q| p ^ q),
        })
    })
}

fn scalar_value(s: &Scalar) -> Value {
    match *s {
        Scalar::Bool(b) => Value::Bool(b),
        Scalar::Int(i) => Value::Int(i),
        Scalar::Double(d) => Value::Float(d),
        Scalar::ComplexDouble(z) => Value::Complex(z),
    }
}

fn v_add(x: Value, y: Value) -> Value {
    match (x, y) {
        (Value::Bool(a), Value::Bool(b)) => Value::Bool(a || b),
        (Value::Int(a), Value::Int(b)) => Value::Int(a.wrapping_add(b)),
        (Value::Float(a), Value::Float(b)) => Value::Float(a + b),
        (a, b) => Value::Complex(a.as_complex() + b.as_complex()),
    }
}

fn v_neg(x: Value) -> Value {
    match x {
        Value::Bool(b) => Value::Bool(b),
        Value::Int(a) => Value::Int(a.wrapping_neg()),
        Value::Float(a) => Value::Float(-a),
        Value::Complex(z) => Value::Complex(-z),
    }
}

fn v_mul(x: Value, y: Value) -> Value {
    match (x, y) {
        (Value::Bool(a), Value::Bool(b)) => Value::Bool(a && b),
        (Value::Int(a), Value::Int(b)) => Value::Int(a.wrapping_mul(b)),
        (Value::Float(a), Value::Float(b)) => Value::Float(a * b),
        (a, b) => Value::Complex(a.as_complex() * b.as_complex()),
    }
}

fn v_div(x: Value, y: Value) -> Result<Value> {
    Ok(match (x, y) {
        (Value::Float(a), Value::Float(b)) => Value::Float(a / b),
        (Value::Complex(a), Value::Complex(b)) => Value::Complex(a / b),
        (a, b) => Value::Float(a.as_f64() / b.as_f64()),
    })
}

/// Python's modulo: the result has the sign of the divisor.
fn remainder(x: Value, y: Value) -> Result<Value> {
    Ok(match (x, y) {
        (Value::Int(a), Value::Int(b)) => {
            if b == 0 {
                return Err(Error::runtime("ZeroDivisionError"));
            }
            let r = a.wrapping_rem(b);
            Value::Int(if r != 0 && ((r < 0) != (b < 0)) {
                r + b
            } else {
                r
            })
        }
        (a, b) => {
            let (a, b) = (a.as_f64(), b.as_f64());
            let mut r = a % b;
            if r != 0.0 && ((r < 0.0) != (b < 0.0)) {
                r += b;
            }
            Value::Float(r)
        }
    })
}

fn bitwise(x: Value, y: Value, fb: fn(bool, bool) -> bool, fi: fn(i64, i64) -> i64) -> Value {
    match (x, y) {
        (Value::Bool(a), Value::Bool(b)) => Value::Bool(fb(a, b)),
        (a, b) => Value::Int(fi(a.as_i64(), b.as_i64())),
    }
}

macro_rules! binary_structured {
    ($meta:ident, $impl_:ident, $op:expr) => {
        #[doc = concat!("The meta of `", stringify!($impl_), "` (TORCH_META_FUNC).")]
        pub fn $meta(m: &mut dyn MetaBase, self_: &Tensor, other: &Tensor) -> Result<BinaryState> {
            binary_meta(m, $op, self_, other, None)
        }
        #[doc = concat!("TORCH_IMPL_FUNC(", stringify!($impl_), ") for CPU.")]
        pub fn $impl_(
            state: &mut BinaryState,
            self_: &Tensor,
            other: &Tensor,
            out: &Tensor,
        ) -> Result<()> {
            binary_impl(state, $op, self_, other, None, out)
        }
    };
    ($meta:ident, $impl_:ident, $op:expr, alpha) => {
        #[doc = concat!("The meta of `", stringify!($impl_), "` (TORCH_META_FUNC).")]
        pub fn $meta(
            m: &mut dyn MetaBase,
            self_: &Tensor,
            other: &Tensor,
            alpha: &Scalar,
        ) -> Result<BinaryState> {
            binary_meta(m, $op, self_, other, Some(alpha))
        }
        #[doc = concat!("TORCH_IMPL_FUNC(", stringify!($impl_), ") for CPU.")]
        pub fn $impl_(
            state: &mut BinaryState,
            self_: &Tensor,
            other: &Tensor,
            alpha: &Scalar,
            out: &Tensor,
        ) -> Result<()> {
            binary_impl(state, $op, self_, other, Some(alpha), out)
        }
    };
}

binary_structured!(add_tensor_meta, add_out, Op::Add, alpha);
binary_structured!(sub_tensor_meta, sub_out, Op::Sub, alpha);
binary_structured!(mul_tensor_meta, mul_out, Op::Mul);
binary_structured!(div_tensor_meta, div_out, Op::Div);
binary_structured!(remainder_tensor_meta, remainder_out, Op::Remainder);
binary_structured!(bitwise_and_tensor_meta, bitwise_and_out, Op::BitAnd);
binary_structured!(bitwise_or_tensor_meta, bitwise_or_out, Op::BitOr);
binary_structured!(bitwise_xor_tensor_meta, bitwise_xor_out, Op::BitXor);

/// `add.Scalar` (CompositeExplicitAutograd): `add(self, wrapped_scalar_tensor(other), alpha)`.
pub fn add(self_: &Tensor, other: &Scalar, alpha: &Scalar) -> Result<Tensor> {
    let o = Tensor::wrapped_scalar_tensor(*other, self_.device())?;
    functions::add_with(self_, &o, *alpha)
}

/// `add_.Scalar` (CompositeExplicitAutograd).
pub fn add_(self_: &Tensor, other: &Scalar, alpha: &Scalar) -> Result<Tensor> {
    let o = Tensor::wrapped_scalar_tensor(*other, self_.device())?;
    self_.add_with_(&o, *alpha).cloned()
}

/// `mul.Scalar` (CompositeExplicitAutograd).
pub fn mul(self_: &Tensor, other: &Scalar) -> Result<Tensor> {
    let o = Tensor::wrapped_scalar_tensor(*other, self_.device())?;
    functions::mul(self_, &o)
}

/// `mul_.Scalar` (CompositeExplicitAutograd).
pub fn mul_(self_: &Tensor, other: &Scalar) -> Result<Tensor> {
    let o = Tensor::wrapped_scalar_tensor(*other, self_.device())?;
    self_.mul_(&o).cloned()
}
