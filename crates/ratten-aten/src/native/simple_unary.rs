//! Unary pointwise operators as structured kernels with simple loops: `neg`, `bitwise_not`.

use ratten_core::type_promotion::can_cast;
use ratten_core::{Error, Result, ScalarType, TensorOptions};

use super::simple_loops::{pointwise, Value};
use crate::structured::MetaBase;
use crate::Tensor;

/// What meta hands to impl: the dtype the loop computes in.
#[derive(Debug, Clone)]
pub struct UnaryState {
    pub compute: ScalarType,
}

/// `build_borrowing_unary_op(maybe_get_output(), self)`: the output keeps self's shape and,
/// when given, its own dtype if self's can be cast to it.
fn unary_meta(m: &mut dyn MetaBase, self_: &Tensor) -> Result<UnaryState> {
    let compute = self_.dtype();
    let mut out_dtype = compute;
    if let Some(out) = m.maybe_get_output(0) {
        if !can_cast(compute, out.dtype()) {
            return Err(Error::runtime(format!(
                "result type {compute} can't be cast to the desired output type {}",
                out.dtype()
            )));
        }
        out_dtype = out.dtype();
    }
    let options = TensorOptions::new().dtype(out_dtype).device(self_.device());
    m.set_output_contiguous(0, &self_.sizes(), options)?;
    Ok(UnaryState { compute })
}

/// TORCH_META_FUNC(neg).
pub fn neg_meta(m: &mut dyn MetaBase, self_: &Tensor) -> Result<UnaryState> {
    if self_.dtype() == ScalarType::Bool {
        return Err(Error::runtime(
            "Negation, the `-` operator, on a bool tensor is not supported. If you are trying to invert a mask, use the `~` or `logical_not()` operator instead.",
        ));
    }
    unary_meta(m, self_)
}

/// TORCH_IMPL_FUNC(neg_out) for CPU.
pub fn neg_out(state: &mut UnaryState, self_: &Tensor, out: &Tensor) -> Result<()> {
    pointwise(out, &[self_], state.compute, |v| {
        Ok(match v[0] {
            Value::Int(i) => Value::Int(i.wrapping_neg()),
            Value::Float(f) => Value::Float(-f),
            Value::Complex(z) => Value::Complex(-z),
            Value::Bool(b) => Value::Bool(b),
        })
    })
}

/// TORCH_META_FUNC(bitwise_not).
pub fn bitwise_not_meta(m: &mut dyn MetaBase, self_: &Tensor) -> Result<UnaryState> {
    if !self_.dtype().is_integral(true) {
        return Err(Error::runtime(format!(
            "\"bitwise_not_cpu\" not implemented for '{}'",
            self_.dtype()
        )));
    }
    unary_meta(m, self_)
}

/// TORCH_IMPL_FUNC(bitwise_not_out) for CPU.
pub fn bitwise_not_out(state: &mut UnaryState, self_: &Tensor, out: &Tensor) -> Result<()> {
    pointwise(out, &[self_], state.compute, |v| {
        Ok(match v[0] {
            Value::Bool(b) => Value::Bool(!b),
            x => Value::Int(!x.as_i64()),
        })
    })
}
