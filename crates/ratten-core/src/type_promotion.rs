//! c10's `promoteTypes` (the 13x13 table "generated according to NumPy's promote_types") and
//! `canCast`, for ratten's 13 dtypes.
//!
//! PyTorch 2.15 has a 14th row/column for BComplex32; ratten does not have that dtype, and
//! `promoteTypes(BFloat16, complex)` is ComplexFloat/ComplexDouble in both, so the 13x13
//! table below is exactly torch 2.15's restricted to the 13 classic dtypes.

use crate::dtype::ScalarType;

const U1: ScalarType = ScalarType::Byte;
const I1: ScalarType = ScalarType::Char;
const I2: ScalarType = ScalarType::Short;
const I4: ScalarType = ScalarType::Int;
const I8: ScalarType = ScalarType::Long;
const F2: ScalarType = ScalarType::Half;
const F4: ScalarType = ScalarType::Float;
const F8: ScalarType = ScalarType::Double;
const C2: ScalarType = ScalarType::ComplexHalf;
const C4: ScalarType = ScalarType::ComplexFloat;
const C8: ScalarType = ScalarType::ComplexDouble;
const B1: ScalarType = ScalarType::Bool;
const BF: ScalarType = ScalarType::BFloat16;

/// Row/column index of a dtype in `TABLE` (c10's order: u1 i1 i2 i4 i8 f2 f4 f8 c2 c4 c8 b1 bf).
const fn index(t: ScalarType) -> usize {
    match t {
        ScalarType::Byte => 0,
        ScalarType::Char => 1,
        ScalarType::Short => 2,
        ScalarType::Int => 3,
        ScalarType::Long => 4,
        ScalarType::Half => 5,
        ScalarType::Float => 6,
        ScalarType::Double => 7,
        ScalarType::ComplexHalf => 8,
        ScalarType::ComplexFloat => 9,
        ScalarType::ComplexDouble => 10,
        ScalarType::Bool => 11,
        ScalarType::BFloat16 => 12,
    }
}

#[rustfmt::skip]
const TABLE: [[ScalarType; 13]; 13] = [
    /*        u1  i1  i2  i4  i8  f2  f4  f8  c2  c4  c8  b1  bf */
    /* u1 */ [U1, I2, I2, I4, I8, F2, F4, F8, C2, C4, C8, U1, BF],
    /* i1 */ [I2, I1, I2, I4, I8, F2, F4, F8, C2, C4, C8, I1, BF],
    /* i2 */ [I2, I2, I2, I4, I8, F2, F4, F8, C2, C4, C8, I2, BF],
    /* i4 */ [I4, I4, I4, I4, I8, F2, F4, F8, C2, C4, C8, I4, BF],
    /* i8 */ [I8, I8, I8, I8, I8, F2, F4, F8, C2, C4, C8, I8, BF],
    /* f2 */ [F2, F2, F2, F2, F2, F2, F4, F8, C2, C4, C8, F2, F4],
    /* f4 */ [F4, F4, F4, F4, F4, F4, F4, F8, C4, C4, C8, F4, F4],
    /* f8 */ [F8, F8, F8, F8, F8, F8, F8, F8, C8, C8, C8, F8, F8],
    /* c2 */ [C2, C2, C2, C2, C2, C2, C4, C8, C2, C4, C8, C2, C4],
    /* c4 */ [C4, C4, C4, C4, C4, C4, C4, C8, C4, C4, C8, C4, C4],
    /* c8 */ [C8, C8, C8, C8, C8, C8, C8, C8, C8, C8, C8, C8, C8],
    /* b1 */ [U1, I1, I2, I4, I8, F2, F4, F8, C2, C4, C8, B1, BF],
    /* bf */ [BF, BF, BF, BF, BF, F4, F4, F8, C4, C4, C8, BF, BF],
];

/// `torch.promote_types(a, b)` (`c10::promoteTypes`): the smallest dtype of the higher kind
/// that can hold both. Never looks at values; symmetric; Bool is the identity.
pub const fn promote_types(a: ScalarType, b: ScalarType) -> ScalarType {
    TABLE[index(a)][index(b)]
}

/// `promote_skip_undefined`: `None` plays c10's `ScalarType::Undefined`.
pub fn promote_skip_undefined(a: Option<ScalarType>, b: Option<ScalarType>) -> Option<ScalarType> {
    match (a, b) {
        (None, x) | (x, None) => x,
        (Some(a), Some(b)) => Some(promote_types(a, b)),
    }
}

/// `torch.can_cast(from, to)` (`c10::canCast`): the cast that TensorIterator allows into an
/// output. Narrowing inside a kind is allowed (int64 -> uint8, double -> half); complex ->
/// non-complex, floating -> integral and anything but bool -> bool are not.
pub const fn can_cast(from: ScalarType, to: ScalarType) -> bool {
    // We disallow complex -> non complex, e.g., float_tensor *= complex is disallowed.
    if from.is_complex() && !to.is_complex() {
        return false;
    }
    // We disallow float -> integral, e.g., int_tensor *= float is disallowed.
    if from.is_floating_point() && to.is_integral(false) {
        return false;
    }
    // Bool is a distinct category, consistent with type promotion (bool_tensor + 5 -> int64).
    if !matches!(from, ScalarType::Bool) && matches!(to, ScalarType::Bool) {
        return false;
    }
    true
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn table_is_symmetric_with_bool_identity() {
        for a in ScalarType::ALL {
            assert_eq!(promote_types(a, a), a);
            assert_eq!(promote_types(a, ScalarType::Bool), a);
            for b in ScalarType::ALL {
                assert_eq!(promote_types(a, b), promote_types(b, a), "{a} {b}");
            }
        }
        assert_eq!(promote_types(U1, I1), I2);
        assert_eq!(promote_types(F2, BF), F4);
        assert_eq!(promote_types(C2, BF), C4);
    }

    #[test]
    fn can_cast_rules() {
        assert!(can_cast(I8, U1) && can_cast(F8, F2) && can_cast(B1, F4));
        assert!(!can_cast(C4, F8) && !can_cast(F4, I8) && !can_cast(U1, B1));
        assert!(can_cast(I4, F2) && can_cast(F4, C2));
    }

    #[test]
    fn skip_undefined() {
        assert_eq!(promote_skip_undefined(None, Some(I4)), Some(I4));
        assert_eq!(promote_skip_undefined(None, None), None);
        assert_eq!(promote_skip_undefined(Some(U1), Some(I1)), Some(I2));
    }
}
