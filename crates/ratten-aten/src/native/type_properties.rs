//! `at::native::result_type` (aten/src/ATen/native/TypeProperties.cpp): type promotion over
//! three categories of operands, dimensioned tensors above 0-dim tensors above wrapped numbers
//! (Python/Rust scalars), with the default dtype deciding what a float scalar becomes.
//!
//! Deliberate difference from torch 2.15: ratten has no BComplex32, so
//! `toComplexType(BFloat16)` stays ComplexFloat (the pre-2.15 rule; see
//! `ScalarType::to_complex`). `bfloat16[2] + 1j` is complex64 here, bcomplex32 in 2.15.

use ratten_core::type_promotion::promote_skip_undefined;
/// `torch.promote_types` and `torch.can_cast`, public here as in torch.
pub use ratten_core::type_promotion::{can_cast, promote_types};
use ratten_core::{
    get_default_complex_dtype, get_default_dtype, Error, Result, Scalar, ScalarType, TensorBase,
};

/// `ResultTypeState`: the promoted dtype of each category so far (`None` = Undefined).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct ResultTypeState {
    pub dim_result: Option<ScalarType>,
    pub zero_result: Option<ScalarType>,
    pub wrapped_result: Option<ScalarType>,
}

/// An operand of `result_type`: a tensor or a number.
#[derive(Clone, Copy, Debug)]
pub enum ResultTypeArg<'a> {
    Tensor(&'a TensorBase),
    Scalar(Scalar),
}

impl<'a> From<&'a TensorBase> for ResultTypeArg<'a> {
    fn from(t: &'a TensorBase) -> Self {
        ResultTypeArg::Tensor(t)
    }
}
impl<'a> From<&'a crate::Tensor> for ResultTypeArg<'a> {
    fn from(t: &'a crate::Tensor) -> Self {
        ResultTypeArg::Tensor(t.base())
    }
}
impl From<Scalar> for ResultTypeArg<'_> {
    fn from(s: Scalar) -> Self {
        ResultTypeArg::Scalar(s)
    }
}

/// What a number's dtype becomes in promotion: a float -> the default dtype, a complex -> the
/// default complex dtype, int64 and bool unchanged.
fn wrapped_dtype(t: ScalarType) -> ScalarType {
    if t.is_complex() {
        get_default_complex_dtype()
    } else if t.is_floating_point() {
        get_default_dtype()
    } else {
        t
    }
}

/// `update_result_type_state(tensor, state)`. Wrapped numbers (0-dim tensors made from
/// numbers) count as numbers. Fails as `promote_types` does (a barebones unsigned type with
/// another integral type of the same category).
pub fn update_result_type_state(tensor: &TensorBase, state: &mut ResultTypeState) -> Result<()> {
    let mut current = tensor.dtype();
    if tensor.is_wrapped_number() {
        current = wrapped_dtype(current);
    }
    if tensor.dim() > 0 {
        state.dim_result = promote_skip_undefined(state.dim_result, Some(current))?;
    } else if tensor.is_wrapped_number() {
        state.wrapped_result = promote_skip_undefined(state.wrapped_result, Some(current))?;
    } else {
        state.zero_result = promote_skip_undefined(state.zero_result, Some(current))?;
    }
    Ok(())
}

/// `update_result_type_state(scalar, state)`: numbers always go to the wrapped category.
pub fn update_result_type_state_scalar(scalar: &Scalar, state: &mut ResultTypeState) -> Result<()> {
    let current = wrapped_dtype(scalar.scalar_type());
    state.wrapped_result = promote_skip_undefined(state.wrapped_result, Some(current))?;
    Ok(())
}

/// `combine_categories(higher, lower)`: a lower category changes the result only when it is
/// of a higher kind (bool < integral < floating < complex).
fn combine_categories(
    higher: Option<ScalarType>,
    lower: Option<ScalarType>,
) -> Result<Option<ScalarType>> {
    let is_complex = |t: Option<ScalarType>| t.is_some_and(|t| t.is_complex());
    let is_float = |t: Option<ScalarType>| t.is_some_and(|t| t.is_floating_point());
    if is_complex(higher) {
        return Ok(higher);
    }
    if is_complex(lower) {
        // Preserve the value type of higher if it is floating.
        if let Some(h) = higher.filter(|h| h.is_floating_point()) {
            return Ok(h.to_complex());
        }
        // Integral higher: the lower complex takes precedence.
        return Ok(lower);
    }
    if is_float(higher) {
        return Ok(higher);
    }
    if higher == Some(ScalarType::Bool) || is_float(lower) {
        return promote_skip_undefined(higher, lower);
    }
    if higher.is_some() {
        return Ok(higher);
    }
    Ok(lower)
}

/// Whether a wrapped number of dtype `wrapped` beside tensors of dtype `tensors` leaves the
/// result type at `tensors`: the compact TensorIterator build's test (Note [Wrapped numbers in
/// a compact build]).
pub(crate) fn wrapped_number_keeps(wrapped: ScalarType, tensors: ScalarType) -> bool {
    matches!(
        combine_categories(Some(tensors), Some(wrapped_dtype(wrapped))),
        Ok(Some(d)) if d == tensors
    )
}

/// `result_type(state)`: None when no operand was recorded.
pub fn result_type_of_state(state: &ResultTypeState) -> Result<Option<ScalarType>> {
    combine_categories(
        state.dim_result,
        combine_categories(state.zero_result, state.wrapped_result)?,
    )
}

/// `torch.result_type` over any mix of tensors and numbers.
pub fn result_type_of(args: &[ResultTypeArg<'_>]) -> Result<ScalarType> {
    let mut state = ResultTypeState::default();
    for a in args {
        match a {
            ResultTypeArg::Tensor(t) => update_result_type_state(t, &mut state)?,
            ResultTypeArg::Scalar(s) => update_result_type_state_scalar(s, &mut state)?,
        }
    }
    result_type_of_state(&state)?
        .ok_or_else(|| Error::runtime("result_type: expected at least one tensor or scalar"))
}

/// `torch.result_type(tensor, other)`.
pub fn result_type(tensor: &TensorBase, other: &TensorBase) -> Result<ScalarType> {
    let mut state = ResultTypeState::default();
    update_result_type_state(tensor, &mut state)?;
    update_result_type_state(other, &mut state)?;
    // Both operands are defined tensors, so a category is always set.
    Ok(result_type_of_state(&state)?.unwrap_or_else(|| tensor.dtype()))
}

/// `torch.result_type(tensor, scalar)`.
pub fn result_type_scalar(tensor: &TensorBase, other: &Scalar) -> Result<ScalarType> {
    let mut state = ResultTypeState::default();
    update_result_type_state(tensor, &mut state)?;
    update_result_type_state_scalar(other, &mut state)?;
    Ok(result_type_of_state(&state)?.unwrap_or_else(|| tensor.dtype()))
}

/// `torch.result_type(scalar, scalar)`.
pub fn result_type_scalars(a: &Scalar, b: &Scalar) -> Result<ScalarType> {
    let mut state = ResultTypeState::default();
    update_result_type_state_scalar(a, &mut state)?;
    update_result_type_state_scalar(b, &mut state)?;
    match result_type_of_state(&state)? {
        Some(t) => Ok(t),
        None => promote_types(a.scalar_type(), b.scalar_type()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ratten_core::Device;
    use ScalarType::*;

    fn t(sizes: &[i64], d: ScalarType) -> TensorBase {
        TensorBase::zeros(sizes, d, Device::CPU).unwrap()
    }

    #[test]
    fn categories() {
        assert_eq!(
            result_type_scalar(&t(&[3], Byte), &Scalar::Int(1000)).unwrap(),
            Byte
        );
        assert_eq!(
            result_type_scalar(&t(&[3], Byte), &Scalar::Double(5.5)).unwrap(),
            Float
        );
        assert_eq!(
            result_type(&t(&[3], Byte), &t(&[], Double)).unwrap(),
            Double
        );
        assert_eq!(
            result_type(&t(&[3], Float), &t(&[], Double)).unwrap(),
            Float
        );
        assert_eq!(result_type(&t(&[2], Char), &t(&[], Long)).unwrap(), Char);
        assert_eq!(result_type(&t(&[2], Int), &t(&[], Half)).unwrap(), Half);
        assert_eq!(
            result_type_scalar(&t(&[2], Bool), &Scalar::Int(5)).unwrap(),
            Long
        );
        assert_eq!(
            result_type_scalar(&t(&[2], Bool), &Scalar::Bool(true)).unwrap(),
            Bool
        );
        assert_eq!(
            result_type_scalar(&t(&[], Bool), &Scalar::Int(5)).unwrap(),
            Long
        );
        let j = Scalar::ComplexDouble(num_complex::Complex::new(0.0, 1.0));
        assert_eq!(result_type_scalar(&t(&[2], Int), &j).unwrap(), ComplexFloat);
        assert_eq!(
            result_type_scalar(&t(&[2], Double), &j).unwrap(),
            ComplexDouble
        );
        assert_eq!(result_type_scalar(&t(&[2], Half), &j).unwrap(), ComplexHalf);
        // The pre-2.15 rule (no BComplex32).
        assert_eq!(
            result_type_scalar(&t(&[2], BFloat16), &j).unwrap(),
            ComplexFloat
        );
        assert_eq!(
            result_type(&t(&[], BFloat16), &t(&[], Half)).unwrap(),
            Float
        );
        assert_eq!(
            result_type_scalars(&Scalar::Int(5), &Scalar::Double(2.5)).unwrap(),
            Float
        );
        assert_eq!(
            result_type_scalars(&Scalar::Bool(true), &Scalar::Int(5)).unwrap(),
            Long
        );
        assert_eq!(
            result_type_scalars(&Scalar::Int(5), &j).unwrap(),
            ComplexFloat
        );
        assert!(result_type_of(&[]).is_err());
    }

    #[test]
    fn barebones_unsigned_categories() {
        // Other integral types in a lower category leave a uint32 tensor's dtype alone, as
        // numbers do; in the same category they are c10's promotion error.
        assert_eq!(
            result_type(&t(&[3], UInt32), &t(&[], Long)).unwrap(),
            UInt32
        );
        assert_eq!(
            result_type(&t(&[], Byte), &t(&[3], UInt16)).unwrap(),
            UInt16
        );
        assert_eq!(
            result_type_scalar(&t(&[3], UInt64), &Scalar::Int(-1)).unwrap(),
            UInt64
        );
        assert_eq!(
            result_type_scalar(&t(&[3], UInt64), &Scalar::Bool(true)).unwrap(),
            UInt64
        );
        assert_eq!(
            result_type_scalar(&t(&[3], UInt32), &Scalar::Double(1.5)).unwrap(),
            Float
        );
        assert_eq!(
            result_type(&t(&[3], UInt32), &t(&[3], Double)).unwrap(),
            Double
        );
        assert_eq!(
            result_type(&t(&[3], UInt32), &t(&[3], Long))
                .unwrap_err()
                .message(),
            "Promotion for uint16, uint32, uint64 types is not supported, attempted to \
             promote UInt32 and Long"
        );
        assert!(result_type(&t(&[3], Bool), &t(&[], UInt16)).is_err());
        assert!(result_type_scalar(&t(&[3], Int), &Scalar::UInt64(u64::MAX)).is_ok());
        assert!(result_type_scalar(&t(&[3], Bool), &Scalar::UInt64(u64::MAX)).is_err());
    }
}
