//! The 16 dtypes (c10::ScalarType) and the map between a dtype and its Rust element type.
//!
//! Names follow PyTorch: `ScalarType::Float` prints as `Float` (the c10 name used in error
//! texts such as "result type Float can't be cast ..."), and `python_name()` gives `float32`.

use std::fmt;

use half::{bf16, f16};
use num_complex::Complex;

/// c10::ScalarType, restricted to the 16 dtypes ratten supports. The discriminants are
/// PyTorch's, so an enum value means the same thing on both sides.
///
/// UInt16, UInt32 and UInt64 are c10's "barebones" unsigned types: they have no promotion
/// with other integral types and only the kernels torch's CPU build dispatches them to
/// (`AT_BAREBONES_UNSIGNED_TYPES`: copy, fill, comparisons for equality, ...).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
#[repr(u8)]
pub enum ScalarType {
    Byte = 0,
    Char = 1,
    Short = 2,
    Int = 3,
    Long = 4,
    Half = 5,
    Float = 6,
    Double = 7,
    ComplexHalf = 8,
    ComplexFloat = 9,
    ComplexDouble = 10,
    Bool = 11,
    BFloat16 = 15,
    UInt16 = 27,
    UInt32 = 28,
    UInt64 = 29,
}

impl ScalarType {
    /// Every dtype, in PyTorch's enum order.
    pub const ALL: [ScalarType; 16] = [
        ScalarType::Byte,
        ScalarType::Char,
        ScalarType::Short,
        ScalarType::Int,
        ScalarType::Long,
        ScalarType::Half,
        ScalarType::Float,
        ScalarType::Double,
        ScalarType::ComplexHalf,
        ScalarType::ComplexFloat,
        ScalarType::ComplexDouble,
        ScalarType::Bool,
        ScalarType::BFloat16,
        ScalarType::UInt16,
        ScalarType::UInt32,
        ScalarType::UInt64,
    ];

    /// The barebones unsigned types (`AT_BAREBONES_UNSIGNED_TYPES`).
    pub const BAREBONES_UNSIGNED: [ScalarType; 3] =
        [ScalarType::UInt16, ScalarType::UInt32, ScalarType::UInt64];

    /// Size of one element in bytes (`c10::elementSize`).
    pub const fn element_size(self) -> usize {
        match self {
            ScalarType::Bool | ScalarType::Byte | ScalarType::Char => 1,
            ScalarType::Short | ScalarType::Half | ScalarType::BFloat16 | ScalarType::UInt16 => 2,
            ScalarType::Int | ScalarType::Float | ScalarType::ComplexHalf | ScalarType::UInt32 => 4,
            ScalarType::Long
            | ScalarType::Double
            | ScalarType::ComplexFloat
            | ScalarType::UInt64 => 8,
            ScalarType::ComplexDouble => 16,
        }
    }

    /// `c10::isFloatingType`: Half, BFloat16, Float, Double.
    pub const fn is_floating_point(self) -> bool {
        matches!(
            self,
            ScalarType::Half | ScalarType::BFloat16 | ScalarType::Float | ScalarType::Double
        )
    }

    /// `c10::isComplexType`.
    pub const fn is_complex(self) -> bool {
        matches!(
            self,
            ScalarType::ComplexHalf | ScalarType::ComplexFloat | ScalarType::ComplexDouble
        )
    }

    /// `c10::isIntegralType(t, include_bool)`.
    pub const fn is_integral(self, include_bool: bool) -> bool {
        match self {
            ScalarType::Byte
            | ScalarType::Char
            | ScalarType::Short
            | ScalarType::Int
            | ScalarType::Long
            | ScalarType::UInt16
            | ScalarType::UInt32
            | ScalarType::UInt64 => true,
            ScalarType::Bool => include_bool,
            _ => false,
        }
    }

    /// `c10::isSignedType` (`torch.dtype.is_signed`): false for Bool and the unsigned types.
    pub const fn is_signed(self) -> bool {
        !matches!(
            self,
            ScalarType::Bool
                | ScalarType::Byte
                | ScalarType::UInt16
                | ScalarType::UInt32
                | ScalarType::UInt64
        )
    }

    /// `c10::isBarebonesUnsignedType`: UInt16, UInt32, UInt64.
    pub const fn is_barebones_unsigned(self) -> bool {
        matches!(
            self,
            ScalarType::UInt16 | ScalarType::UInt32 | ScalarType::UInt64
        )
    }

    /// `c10::isReducedFloatingType`: Half and BFloat16.
    pub const fn is_reduced_floating_point(self) -> bool {
        matches!(self, ScalarType::Half | ScalarType::BFloat16)
    }

    /// `c10::toRealValueType`: the real type of a complex type, else itself.
    pub const fn to_real(self) -> ScalarType {
        match self {
            ScalarType::ComplexHalf => ScalarType::Half,
            ScalarType::ComplexFloat => ScalarType::Float,
            ScalarType::ComplexDouble => ScalarType::Double,
            other => other,
        }
    }

    /// `c10::toComplexType` for the floating types (None for the others).
    ///
    /// PyTorch 2.15 maps BFloat16 to its new BComplex32, which ratten does not have; ratten keeps
    /// the earlier rule BFloat16 -> ComplexFloat (a documented deviation).
    pub const fn to_complex(self) -> Option<ScalarType> {
        match self {
            ScalarType::Half | ScalarType::ComplexHalf => Some(ScalarType::ComplexHalf),
            ScalarType::Float | ScalarType::BFloat16 | ScalarType::ComplexFloat => {
                Some(ScalarType::ComplexFloat)
            }
            ScalarType::Double | ScalarType::ComplexDouble => Some(ScalarType::ComplexDouble),
            _ => None,
        }
    }

    /// The c10 name, as PyTorch's error messages print it (`Float`, `Long`, `ComplexHalf`).
    pub const fn name(self) -> &'static str {
        match self {
            ScalarType::Byte => "Byte",
            ScalarType::Char => "Char",
            ScalarType::Short => "Short",
            ScalarType::Int => "Int",
            ScalarType::Long => "Long",
            ScalarType::Half => "Half",
            ScalarType::Float => "Float",
            ScalarType::Double => "Double",
            ScalarType::ComplexHalf => "ComplexHalf",
            ScalarType::ComplexFloat => "ComplexFloat",
            ScalarType::ComplexDouble => "ComplexDouble",
            ScalarType::Bool => "Bool",
            ScalarType::BFloat16 => "BFloat16",
            ScalarType::UInt16 => "UInt16",
            ScalarType::UInt32 => "UInt32",
            ScalarType::UInt64 => "UInt64",
        }
    }

    /// The Python name without the `torch.` prefix (`float32`, `int64`, `complex32`).
    pub const fn python_name(self) -> &'static str {
        match self {
            ScalarType::Byte => "uint8",
            ScalarType::Char => "int8",
            ScalarType::Short => "int16",
            ScalarType::Int => "int32",
            ScalarType::Long => "int64",
            ScalarType::Half => "float16",
            ScalarType::Float => "float32",
            ScalarType::Double => "float64",
            ScalarType::ComplexHalf => "complex32",
            ScalarType::ComplexFloat => "complex64",
            ScalarType::ComplexDouble => "complex128",
            ScalarType::Bool => "bool",
            ScalarType::BFloat16 => "bfloat16",
            ScalarType::UInt16 => "uint16",
            ScalarType::UInt32 => "uint32",
            ScalarType::UInt64 => "uint64",
        }
    }

    /// Parses a Python dtype name (`float32`, `torch.float`, `long`, `cfloat`, ...) or a c10
    /// name (`Float`).
    pub fn from_name(name: &str) -> Option<ScalarType> {
        let n = name.strip_prefix("torch.").unwrap_or(name);
        let t = match n {
            "uint8" | "Byte" => ScalarType::Byte,
            "int8" | "Char" => ScalarType::Char,
            "int16" | "short" | "Short" => ScalarType::Short,
            "int32" | "int" | "Int" => ScalarType::Int,
            "int64" | "long" | "Long" => ScalarType::Long,
            "float16" | "half" | "Half" => ScalarType::Half,
            "float32" | "float" | "Float" => ScalarType::Float,
            "float64" | "double" | "Double" => ScalarType::Double,
            "complex32" | "chalf" | "ComplexHalf" => ScalarType::ComplexHalf,
            "complex64" | "cfloat" | "ComplexFloat" => ScalarType::ComplexFloat,
            "complex128" | "cdouble" | "ComplexDouble" => ScalarType::ComplexDouble,
            "bool" | "Bool" => ScalarType::Bool,
            "bfloat16" | "BFloat16" => ScalarType::BFloat16,
            "uint16" | "UInt16" => ScalarType::UInt16,
            "uint32" | "UInt32" => ScalarType::UInt32,
            "uint64" | "UInt64" => ScalarType::UInt64,
            _ => return None,
        };
        Some(t)
    }
}

impl fmt::Display for ScalarType {
    /// Prints the c10 name, as `operator<<(ostream&, ScalarType)` does.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

/// ComplexHalf's element type: PyTorch's `c10::complex<c10::Half>`.
#[allow(non_camel_case_types)]
pub type c32 = Complex<f16>;
/// `c10::complex<float>`.
#[allow(non_camel_case_types)]
pub type c64 = Complex<f32>;
/// `c10::complex<double>`.
#[allow(non_camel_case_types)]
pub type c128 = Complex<f64>;

/// A Rust type that is the element type of a dtype: the map from type to dtype. The map from
/// dtype to type is [`dispatch_all_types!`](crate::dispatch_all_types).
///
/// Every element type converts from and to a [`Scalar`](crate::scalar::Scalar) with c10's
/// checks ([`ScalarConvert`](crate::scalar::ScalarConvert)).
pub trait Element:
    Copy + Send + Sync + PartialEq + fmt::Debug + Default + 'static + crate::scalar::ScalarConvert
{
    const DTYPE: ScalarType;
}

macro_rules! impl_element {
    ($($t:ty => $d:ident),* $(,)?) => {
        $(impl Element for $t { const DTYPE: ScalarType = ScalarType::$d; })*
    };
}

impl_element!(
    u8 => Byte, i8 => Char, i16 => Short, i32 => Int, i64 => Long,
    f16 => Half, f32 => Float, f64 => Double,
    c32 => ComplexHalf, c64 => ComplexFloat, c128 => ComplexDouble,
    bool => Bool, bf16 => BFloat16,
    u16 => UInt16, u32 => UInt32, u64 => UInt64,
);

/// An element type for which every bit pattern is a valid value (all but `bool`). Only these
/// may be viewed as slices of storage memory, whose bytes can come from any dtype.
///
/// # Safety
/// Implementors must accept every bit pattern of their size.
pub unsafe trait PodElement: Element {}

macro_rules! impl_pod {
    ($($t:ty),*) => { $(
        // SAFETY: integers, IEEE floats and pairs of them accept every bit pattern.
        unsafe impl PodElement for $t {}
    )* };
}
impl_pod!(u8, i8, i16, i32, i64, f16, f32, f64, c32, c64, c128, bf16, u16, u32, u64);

/// Runs `$body` with the type alias `$T` bound to the element type of `$dtype`, for all 16
/// dtypes (the analogue of `AT_DISPATCH_V2(..., AT_EXPAND(AT_ALL_TYPES_AND_COMPLEX),
/// kComplexHalf, kHalf, kBool, kBFloat16, AT_EXPAND(AT_BAREBONES_UNSIGNED_TYPES))`, the set
/// of copy and fill).
///
/// ```
/// use ratten_core::{dispatch_all_types, ScalarType};
/// let size = dispatch_all_types!(ScalarType::Short, T => std::mem::size_of::<T>());
/// assert_eq!(size, 2);
/// ```
#[macro_export]
macro_rules! dispatch_all_types {
    ($dtype:expr, $T:ident => $body:expr) => {{
        match $dtype {
            $crate::ScalarType::Byte => {
                type $T = u8;
                $body
            }
            $crate::ScalarType::Char => {
                type $T = i8;
                $body
            }
            $crate::ScalarType::Short => {
                type $T = i16;
                $body
            }
            $crate::ScalarType::Int => {
                type $T = i32;
                $body
            }
            $crate::ScalarType::Long => {
                type $T = i64;
                $body
            }
            $crate::ScalarType::Half => {
                type $T = $crate::half::f16;
                $body
            }
            $crate::ScalarType::Float => {
                type $T = f32;
                $body
            }
            $crate::ScalarType::Double => {
                type $T = f64;
                $body
            }
            $crate::ScalarType::ComplexHalf => {
                type $T = $crate::dtype::c32;
                $body
            }
            $crate::ScalarType::ComplexFloat => {
                type $T = $crate::dtype::c64;
                $body
            }
            $crate::ScalarType::ComplexDouble => {
                type $T = $crate::dtype::c128;
                $body
            }
            $crate::ScalarType::Bool => {
                type $T = bool;
                $body
            }
            $crate::ScalarType::BFloat16 => {
                type $T = $crate::half::bf16;
                $body
            }
            $crate::ScalarType::UInt16 => {
                type $T = u16;
                $body
            }
            $crate::ScalarType::UInt32 => {
                type $T = u32;
                $body
            }
            $crate::ScalarType::UInt64 => {
                type $T = u64;
                $body
            }
        }
    }};
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sizes_and_element_types_agree() {
        for t in ScalarType::ALL {
            let (size, dtype) = dispatch_all_types!(t, T => (std::mem::size_of::<T>(), T::DTYPE));
            assert_eq!(size, t.element_size(), "{t}");
            assert_eq!(dtype, t);
        }
    }

    #[test]
    fn predicates_follow_c10() {
        use ScalarType::*;
        let floats: Vec<_> = ScalarType::ALL
            .into_iter()
            .filter(|t| t.is_floating_point())
            .collect();
        assert_eq!(floats, vec![Half, Float, Double, BFloat16]);
        assert!(ComplexHalf.is_complex() && !Float.is_complex());
        assert!(Bool.is_integral(true) && !Bool.is_integral(false));
        assert!(!Half.is_integral(true));
        assert!(!Byte.is_signed() && !Bool.is_signed() && Char.is_signed());
        assert!(Half.is_signed() && ComplexFloat.is_signed());
        for u in ScalarType::BAREBONES_UNSIGNED {
            assert!(!u.is_signed() && u.is_integral(false) && u.is_barebones_unsigned());
            assert!(!u.is_floating_point() && !u.is_complex());
            assert_eq!(u.to_real(), u);
            assert_eq!(u.to_complex(), None);
        }
        assert!(!Byte.is_barebones_unsigned() && !Long.is_barebones_unsigned());
        assert_eq!(
            (
                UInt16.element_size(),
                UInt32.element_size(),
                UInt64.element_size()
            ),
            (2, 4, 8)
        );
        assert_eq!((UInt16 as u8, UInt32 as u8, UInt64 as u8), (27, 28, 29));
        assert_eq!(ComplexFloat.to_real(), Float);
        assert_eq!(Half.to_complex(), Some(ComplexHalf));
        assert_eq!(Long.to_complex(), None);
    }

    #[test]
    fn names_round_trip() {
        for t in ScalarType::ALL {
            assert_eq!(ScalarType::from_name(t.python_name()), Some(t));
            assert_eq!(
                ScalarType::from_name(&format!("torch.{}", t.python_name())),
                Some(t)
            );
            assert_eq!(ScalarType::from_name(t.name()), Some(t));
        }
        assert_eq!(
            ScalarType::from_name("cfloat"),
            Some(ScalarType::ComplexFloat)
        );
        assert_eq!(ScalarType::from_name("float128"), None);
        assert_eq!(ScalarType::Float.to_string(), "Float");
        assert_eq!(ScalarType::UInt32.to_string(), "UInt32");
        assert_eq!(
            ScalarType::from_name("torch.uint64"),
            Some(ScalarType::UInt64)
        );
    }
}
