//! c10's `promoteTypes` (the 13x13 table "generated according to NumPy's promote_types") and
//! `canCast`, for ratten's 16 dtypes.
//!
//! PyTorch 2.15 has a 14th row/column for BComplex32; ratten does not have that dtype, and
//! `promoteTypes(BFloat16, complex)` is ComplexFloat/ComplexDouble in both, so the 13x13
//! table below is exactly torch 2.15's restricted to the 13 classic dtypes. The barebones
//! unsigned types have no row: they promote only with themselves and with floating types.

use crate::dtype::ScalarType;
use crate::error::{Error, Result};

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

/// Row/column index of a dtype in `TABLE` (c10's order: u1 i1 i2 i4 i8 f2 f4 f8 c2 c4 c8 b1 bf);
/// the barebones unsigned types have none.
const fn index(t: ScalarType) -> Option<usize> {
    Some(match t {
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
        ScalarType::UInt16 | ScalarType::UInt32 | ScalarType::UInt64 => return None,
    })
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
///
/// A barebones unsigned type (UInt16, UInt32, UInt64) promotes only with itself and with a
/// floating type (which wins); any other pair is c10's error: torch has not decided how uint64
/// should meet int64 without overflow.
pub fn promote_types(a: ScalarType, b: ScalarType) -> Result<ScalarType> {
    if a == b {
        return Ok(a);
    }
    if let (Some(i), Some(j)) = (index(a), index(b)) {
        return Ok(TABLE[i][j]);
    }
    // One is a barebones unsigned type.
    if a.is_floating_point() {
        return Ok(a);
    }
    if b.is_floating_point() {
        return Ok(b);
    }
    Err(Error::runtime(format!(
        "Promotion for uint16, uint32, uint64 types is not supported, attempted to promote {a} \
         and {b}"
    )))
}

/// `promote_skip_undefined`: `None` plays c10's `ScalarType::Undefined`.
pub fn promote_skip_undefined(
    a: Option<ScalarType>,
    b: Option<ScalarType>,
) -> Result<Option<ScalarType>> {
    match (a, b) {
        (None, x) | (x, None) => Ok(x),
        (Some(a), Some(b)) => promote_types(a, b).map(Some),
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

    fn promote(a: ScalarType, b: ScalarType) -> ScalarType {
        promote_types(a, b).unwrap()
    }

    #[test]
    fn table_is_symmetric_with_bool_identity() {
        let classic = ScalarType::ALL
            .into_iter()
            .filter(|t| !t.is_barebones_unsigned());
        for a in classic.clone() {
            assert_eq!(promote(a, a), a);
            assert_eq!(promote(a, ScalarType::Bool), a);
            for b in classic.clone() {
                assert_eq!(promote(a, b), promote(b, a), "{a} {b}");
            }
        }
        assert_eq!(promote(U1, I1), I2);
        assert_eq!(promote(F2, BF), F4);
        assert_eq!(promote(C2, BF), C4);
    }

    #[test]
    fn barebones_unsigned_promote_only_with_themselves_and_floats() {
        for u in ScalarType::BAREBONES_UNSIGNED {
            assert_eq!(promote(u, u), u);
            for f in [F2, BF, F4, F8] {
                assert_eq!(promote(u, f), f);
                assert_eq!(promote(f, u), f);
            }
            for other in ScalarType::ALL {
                if other == u || other.is_floating_point() {
                    continue;
                }
                for (a, b) in [(u, other), (other, u)] {
                    let e = promote_types(a, b).unwrap_err();
                    assert_eq!(e.kind(), crate::ErrorKind::Runtime);
                    assert_eq!(
                        e.message(),
                        format!(
                            "Promotion for uint16, uint32, uint64 types is not supported, \
                             attempted to promote {a} and {b}"
                        )
                    );
                }
            }
        }
        assert!(promote_skip_undefined(Some(ScalarType::UInt32), Some(I8)).is_err());
        assert_eq!(
            promote_skip_undefined(None, Some(ScalarType::UInt64)).unwrap(),
            Some(ScalarType::UInt64)
        );
    }

    #[test]
    fn can_cast_rules() {
        assert!(can_cast(I8, U1) && can_cast(F8, F2) && can_cast(B1, F4));
        assert!(!can_cast(C4, F8) && !can_cast(F4, I8) && !can_cast(U1, B1));
        assert!(can_cast(I4, F2) && can_cast(F4, C2));
        // torch.can_cast treats the unsigned types as integral.
        let u4 = ScalarType::UInt32;
        assert!(can_cast(u4, I8) && can_cast(I8, u4) && can_cast(u4, F4) && can_cast(B1, u4));
        assert!(!can_cast(F4, u4) && !can_cast(u4, B1) && !can_cast(C4, u4));
    }

    #[test]
    fn skip_undefined() {
        assert_eq!(promote_skip_undefined(None, Some(I4)).unwrap(), Some(I4));
        assert_eq!(promote_skip_undefined(None, None).unwrap(), None);
        assert_eq!(
            promote_skip_undefined(Some(U1), Some(I1)).unwrap(),
            Some(I2)
        );
    }
}
