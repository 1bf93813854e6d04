//! Scalar (c10::Scalar): a number that is a bool, an int64, a uint64 above int64's range, a
//! double or a complex double, with c10's checked conversions (`checked_convert` and its overflow rules from
//! c10/util/TypeCast.h and c10/util/overflows.h) and c10's printing.

use std::fmt;

use half::{bf16, f16};
use num_complex::Complex;

use crate::dtype::{c128, c32, c64, ScalarType};
use crate::error::{Error, Result};

/// c10::Scalar, for the kinds ratten has.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Scalar {
    Bool(bool),
    Int(i64),
    /// c10's `HAS_u`: a uint64 greater than `i64::MAX` (smaller ones are `Int`, as c10's
    /// `Scalar(uint64_t)` makes them; [`Scalar::from_u64`] keeps that rule).
    UInt64(u64),
    Double(f64),
    ComplexDouble(c128),
}

impl Default for Scalar {
    /// `Scalar()` is the integer 0.
    fn default() -> Self {
        Scalar::Int(0)
    }
}

/// `report_overflow(name)`: PyTorch 2.15 raises it as a RuntimeError (`torch.full([2], 300,
/// dtype=torch.int8)`, `fill_`, `clamp`, `pow`).
fn overflow(cpp_name: &str) -> Error {
    Error::runtime(format!(
        "value cannot be converted to type {cpp_name} without overflow"
    ))
}

impl Scalar {
    /// `Scalar(uint64_t)`: an `Int` when the value fits int64, else a `UInt64`.
    pub fn from_u64(v: u64) -> Scalar {
        match i64::try_from(v) {
            Ok(i) => Scalar::Int(i),
            Err(_) => Scalar::UInt64(v),
        }
    }

    /// `Scalar::type()`: Bool, Long, UInt64, Double or ComplexDouble.
    pub fn scalar_type(&self) -> ScalarType {
        match self {
            Scalar::Bool(_) => ScalarType::Bool,
            Scalar::Int(_) => ScalarType::Long,
            Scalar::UInt64(_) => ScalarType::UInt64,
            Scalar::Double(_) => ScalarType::Double,
            Scalar::ComplexDouble(_) => ScalarType::ComplexDouble,
        }
    }
    pub fn is_floating_point(&self) -> bool {
        matches!(self, Scalar::Double(_))
    }
    /// `isIntegral(include_bool)`.
    pub fn is_integral(&self, include_bool: bool) -> bool {
        match self {
            Scalar::Int(_) | Scalar::UInt64(_) => true,
            Scalar::Bool(_) => include_bool,
            _ => false,
        }
    }
    pub fn is_complex(&self) -> bool {
        matches!(self, Scalar::ComplexDouble(_))
    }
    pub fn is_boolean(&self) -> bool {
        matches!(self, Scalar::Bool(_))
    }

    /// `to<T>()`: the value as `T`, or c10's overflow error ("value cannot be converted to
    /// type int8_t without overflow"). Conversion to bool never fails.
    pub fn to<T: ScalarConvert>(&self) -> Result<T> {
        T::from_scalar(self)
    }
    /// `to<T>()` for the element type of `dtype`, the value discarded: whether the scalar
    /// converts to `dtype` without c10's overflow error (and that error when it does not).
    pub fn check_fits(&self, dtype: ScalarType) -> Result<()> {
        crate::dispatch_all_types!(dtype, T => { T::from_scalar(self)?; });
        Ok(())
    }
    pub fn to_bool(&self) -> bool {
        bool_convert(self)
    }
    pub fn to_long(&self) -> Result<i64> {
        self.to()
    }
    pub fn to_double(&self) -> Result<f64> {
        self.to()
    }
    pub fn to_complex_double(&self) -> Result<c128> {
        self.to()
    }

    /// `operator-`.
    pub fn neg(&self) -> Result<Scalar> {
        match *self {
            Scalar::Bool(_) => Err(Error::runtime(
                "torch boolean negative, the `-` operator, is not supported.",
            )),
            Scalar::Int(i) => Ok(Scalar::Int(i.wrapping_neg())),
            // c10 negates the int64 that holds the same bits.
            Scalar::UInt64(u) => Ok(Scalar::Int((u as i64).wrapping_neg())),
            Scalar::Double(d) => Ok(Scalar::Double(-d)),
            Scalar::ComplexDouble(z) => Ok(Scalar::ComplexDouble(-z)),
        }
    }

    /// `conj()`: the complex conjugate (identity for real scalars).
    pub fn conj(&self) -> Scalar {
        match *self {
            Scalar::ComplexDouble(z) => Scalar::ComplexDouble(z.conj()),
            other => other,
        }
    }

    /// `Scalar::equal(num)` for a real number: a bool never equals a number.
    pub fn equal(&self, num: f64) -> bool {
        match *self {
            Scalar::ComplexDouble(z) => z.re == num && z.im == 0.0,
            Scalar::Double(d) => d == num,
            Scalar::Int(i) => i as f64 == num,
            Scalar::UInt64(u) => u as f64 == num,
            Scalar::Bool(_) => false,
        }
    }
}

macro_rules! scalar_from {
    ($($t:ty => |$v:ident| $e:expr),* $(,)?) => {
        $(impl From<$t> for Scalar {
            fn from($v: $t) -> Scalar { $e }
        })*
    };
}

scalar_from!(
    bool => |v| Scalar::Bool(v),
    u8 => |v| Scalar::Int(v as i64),
    i8 => |v| Scalar::Int(v as i64),
    i16 => |v| Scalar::Int(v as i64),
    i32 => |v| Scalar::Int(v as i64),
    i64 => |v| Scalar::Int(v),
    u16 => |v| Scalar::Int(v as i64),
    u32 => |v| Scalar::Int(v as i64),
    u64 => |v| Scalar::from_u64(v),
    f16 => |v| Scalar::Double(v.to_f64()),
    bf16 => |v| Scalar::Double(v.to_f64()),
    f32 => |v| Scalar::Double(v as f64),
    f64 => |v| Scalar::Double(v),
    c32 => |v| Scalar::ComplexDouble(Complex::new(v.re.to_f64(), v.im.to_f64())),
    c64 => |v| Scalar::ComplexDouble(Complex::new(v.re as f64, v.im as f64)),
    c128 => |v| Scalar::ComplexDouble(v),
);

/// The numeric limits of a real element type (`std::numeric_limits<scalar_value_type<T>>`).
#[derive(Clone, Copy)]
enum Limits {
    /// Integers: [min, max] and whether the type is unsigned.
    Int { min: i64, max: u64, unsigned: bool },
    /// Floating types: the largest finite value (lowest is its negative); they have
    /// infinity and NaN.
    Float { max: f64 },
}

impl Limits {
    /// `overflows<To, int64_t>(v)`, with c10's two's-complement allowance for unsigned types.
    fn overflows_i64(self, v: i64) -> bool {
        match self {
            Limits::Int { max, unsigned, .. } if unsigned => {
                (v >= 0 && v as u64 > max) || (v < 0 && v.unsigned_abs() > max)
            }
            Limits::Int { min, max, .. } => v < min || (v >= 0 && v as u64 > max),
            Limits::Float { max } => (v as f64) < -max || (v as f64) > max,
        }
    }
    /// `overflows<To, uint64_t>(v)`: only the maximum can be passed.
    fn overflows_u64(self, v: u64) -> bool {
        match self {
            Limits::Int { max, .. } => v > max,
            Limits::Float { max } => (v as f64) > max,
        }
    }
    /// `overflows<To, double>(v)`.
    fn overflows_f64(self, v: f64) -> bool {
        match self {
            Limits::Float { max } => !v.is_infinite() && (v < -max || v > max),
            Limits::Int { min, max, .. } => v.is_nan() || v < min as f64 || v > max as f64,
        }
    }
}

/// An element type a [`Scalar`] converts to with c10's checks (every [`Element`] type).
///
/// [`Element`]: crate::dtype::Element
pub trait ScalarConvert: Sized + Copy {
    /// The C++ type name c10 puts in its overflow message (`int8_t`, `c10::Half`, ...).
    const CPP_NAME: &'static str;
    /// `checked_convert<Self, ...>`.
    fn from_scalar(s: &Scalar) -> Result<Self>;
    /// The Scalar holding this value (`Scalar(v)`, and what `item()` returns).
    fn to_scalar(self) -> Scalar;
}

/// c10's `convert<bool, From>`: non-zero is true; a complex uses its real part only.
fn bool_convert(s: &Scalar) -> bool {
    match *s {
        Scalar::Bool(b) => b,
        Scalar::Int(i) => i != 0,
        Scalar::UInt64(u) => u != 0,
        Scalar::Double(d) => d != 0.0,
        // c10 casts a complex to bool as `z != 0`: a purely imaginary value is true.
        Scalar::ComplexDouble(z) => z.re != 0.0 || z.im != 0.0,
    }
}

impl ScalarConvert for bool {
    const CPP_NAME: &'static str = "bool";
    fn from_scalar(s: &Scalar) -> Result<bool> {
        Ok(bool_convert(s))
    }
    fn to_scalar(self) -> Scalar {
        Scalar::Bool(self)
    }
}

/// Converts a real value after the checks, the way c10's `static_cast` does.
trait RealCast: Sized {
    fn from_i64(v: i64) -> Self;
    fn from_u64(v: u64) -> Self;
    fn from_f64(v: f64) -> Self;
    fn to_f64_lossy(self) -> f64;
}

macro_rules! real_cast_int {
    ($($t:ty),*) => {$(
        impl RealCast for $t {
            fn from_i64(v: i64) -> $t { v as $t }
            fn from_u64(v: u64) -> $t { v as $t }
            fn from_f64(v: f64) -> $t {
                // c10 goes through int64 for unsigned targets; values are in range here.
                (v as i64) as $t
            }
            fn to_f64_lossy(self) -> f64 { self as f64 }
        }
    )*};
}
real_cast_int!(u8, i8, i16, i32, i64, u16, u32);

impl RealCast for u64 {
    fn from_i64(v: i64) -> u64 {
        v as u64
    }
    fn from_u64(v: u64) -> u64 {
        v
    }
    fn from_f64(v: f64) -> u64 {
        // In range here, [0, 2^64): through int64 would saturate above 2^63.
        v as u64
    }
    fn to_f64_lossy(self) -> f64 {
        self as f64
    }
}

impl RealCast for f32 {
    fn from_i64(v: i64) -> f32 {
        v as f32
    }
    fn from_u64(v: u64) -> f32 {
        v as f32
    }
    fn from_f64(v: f64) -> f32 {
        v as f32
    }
    fn to_f64_lossy(self) -> f64 {
        self as f64
    }
}
impl RealCast for f64 {
    fn from_i64(v: i64) -> f64 {
        v as f64
    }
    fn from_u64(v: u64) -> f64 {
        v as f64
    }
    fn from_f64(v: f64) -> f64 {
        v
    }
    fn to_f64_lossy(self) -> f64 {
        self
    }
}
impl RealCast for f16 {
    fn from_i64(v: i64) -> f16 {
        f16::from_f32(v as f32)
    }
    fn from_u64(v: u64) -> f16 {
        f16::from_f32(v as f32)
    }
    fn from_f64(v: f64) -> f16 {
        f16::from_f64(v)
    }
    fn to_f64_lossy(self) -> f64 {
        self.to_f64()
    }
}
impl RealCast for bf16 {
    fn from_i64(v: i64) -> bf16 {
        bf16::from_f32(v as f32)
    }
    fn from_u64(v: u64) -> bf16 {
        bf16::from_f32(v as f32)
    }
    fn from_f64(v: f64) -> bf16 {
        bf16::from_f64(v)
    }
    fn to_f64_lossy(self) -> f64 {
        self.to_f64()
    }
}

/// `checked_convert<R, From>` for a real target with limits `lim`.
fn checked_real<R: RealCast>(s: &Scalar, lim: Limits, name: &str) -> Result<R> {
    match *s {
        Scalar::Bool(b) => Ok(R::from_i64(b as i64)),
        Scalar::Int(i) => {
            if lim.overflows_i64(i) {
                return Err(overflow(name));
            }
            Ok(R::from_i64(i))
        }
        Scalar::UInt64(u) => {
            if lim.overflows_u64(u) {
                return Err(overflow(name));
            }
            Ok(R::from_u64(u))
        }
        Scalar::Double(d) => {
            if lim.overflows_f64(d) {
                return Err(overflow(name));
            }
            Ok(R::from_f64(d))
        }
        Scalar::ComplexDouble(z) => {
            // complex -> real overflows when the imaginary part is non-zero.
            if z.im != 0.0 || lim.overflows_f64(z.re) {
                return Err(overflow(name));
            }
            Ok(R::from_f64(z.re))
        }
    }
}

/// `checked_convert<complex<R>, From>`: componentwise checks against R's limits.
fn checked_complex<R: RealCast>(s: &Scalar, lim: Limits, name: &str) -> Result<Complex<R>> {
    match *s {
        Scalar::Bool(b) => Ok(Complex::new(R::from_i64(b as i64), R::from_i64(0))),
        Scalar::Int(i) => {
            if lim.overflows_i64(i) {
                return Err(overflow(name));
            }
            Ok(Complex::new(R::from_i64(i), R::from_i64(0)))
        }
        Scalar::UInt64(u) => {
            if lim.overflows_u64(u) {
                return Err(overflow(name));
            }
            Ok(Complex::new(R::from_u64(u), R::from_i64(0)))
        }
        Scalar::Double(d) => {
            if lim.overflows_f64(d) {
                return Err(overflow(name));
            }
            Ok(Complex::new(R::from_f64(d), R::from_i64(0)))
        }
        Scalar::ComplexDouble(z) => {
            if lim.overflows_f64(z.re) || lim.overflows_f64(z.im) {
                return Err(overflow(name));
            }
            Ok(Complex::new(R::from_f64(z.re), R::from_f64(z.im)))
        }
    }
}

macro_rules! scalar_convert_int {
    ($($t:ty => $name:literal, $unsigned:expr);* $(;)?) => {$(
        impl ScalarConvert for $t {
            const CPP_NAME: &'static str = $name;
            fn from_scalar(s: &Scalar) -> Result<$t> {
                let lim = Limits::Int { min: <$t>::MIN as i64, max: <$t>::MAX as u64, unsigned: $unsigned };
                checked_real(s, lim, $name)
            }
            fn to_scalar(self) -> Scalar { Scalar::from_u64(self as u64) }
        }
    )*};
}
scalar_convert_int!(
    u8 => "uint8_t", true;
    u16 => "uint16_t", true;
    u32 => "uint32_t", true;
    u64 => "uint64_t", true;
);

macro_rules! scalar_convert_signed {
    ($($t:ty => $name:literal);* $(;)?) => {$(
        impl ScalarConvert for $t {
            const CPP_NAME: &'static str = $name;
            fn from_scalar(s: &Scalar) -> Result<$t> {
                let lim = Limits::Int { min: <$t>::MIN as i64, max: <$t>::MAX as u64, unsigned: false };
                checked_real(s, lim, $name)
            }
            fn to_scalar(self) -> Scalar { Scalar::Int(self as i64) }
        }
    )*};
}
scalar_convert_signed!(
    i8 => "int8_t";
    i16 => "int16_t";
    i32 => "int";
    i64 => "int64_t";
);

macro_rules! scalar_convert_float {
    ($($t:ty => $name:literal, $max:expr);* $(;)?) => {$(
        impl ScalarConvert for $t {
            const CPP_NAME: &'static str = $name;
            fn from_scalar(s: &Scalar) -> Result<$t> {
                checked_real(s, Limits::Float { max: $max }, $name)
            }
            fn to_scalar(self) -> Scalar { Scalar::Double(self.to_f64_lossy()) }
        }
    )*};
}
scalar_convert_float!(
    f16 => "c10::Half", f16::MAX.to_f64();
    bf16 => "c10::BFloat16", bf16::MAX.to_f64();
    f32 => "float", f32::MAX as f64;
    f64 => "double", f64::MAX;
);

macro_rules! scalar_convert_complex {
    ($($r:ty => $name:literal, $max:expr);* $(;)?) => {$(
        impl ScalarConvert for Complex<$r> {
            const CPP_NAME: &'static str = $name;
            fn from_scalar(s: &Scalar) -> Result<Complex<$r>> {
                checked_complex(s, Limits::Float { max: $max }, $name)
            }
            fn to_scalar(self) -> Scalar {
                Scalar::ComplexDouble(Complex::new(self.re.to_f64_lossy(), self.im.to_f64_lossy()))
            }
        }
    )*};
}
scalar_convert_complex!(
    f16 => "c10::complex<c10::Half>", f16::MAX.to_f64();
    f32 => "c10::complex<float>", f32::MAX as f64;
    f64 => "c10::complex<double>", f64::MAX;
);

/// Formats a double as C++ `ostream << double` does by default (`%g`, 6 significant digits):
/// `1`, `0.1`, `1e+20`, `1.23457e-05`, `inf`, `nan`.
pub fn format_g(v: f64) -> String {
    format_g_prec(v, 6)
}

/// `%g` with `prec` significant digits.
pub fn format_g_prec(v: f64, prec: usize) -> String {
    if v.is_nan() {
        return if v.is_sign_negative() { "-nan" } else { "nan" }.to_string();
    }
    if v.is_infinite() {
        return if v < 0.0 { "-inf" } else { "inf" }.to_string();
    }
    if v == 0.0 {
        return if v.is_sign_negative() { "-0" } else { "0" }.to_string();
    }
    let prec = prec.max(1);
    // Round to `prec` significant digits first; the exponent after rounding decides the style.
    let sci = format!("{:.*e}", prec - 1, v);
    let (mantissa, exp) = sci.split_once('e').expect("`{:e}` always has an exponent");
    let exp: i32 = exp.parse().expect("`{:e}` prints an integer exponent");
    if exp < -4 || exp >= prec as i32 {
        let m = strip_zeros(mantissa);
        let sign = if exp < 0 { '-' } else { '+' };
        format!("{m}e{sign}{:02}", exp.abs())
    } else {
        let decimals = (prec as i32 - 1 - exp).max(0) as usize;
        strip_zeros(&format!("{:.*}", decimals, v)).to_string()
    }
}

fn strip_zeros(s: &str) -> &str {
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.')
    } else {
        s
    }
}

impl fmt::Display for Scalar {
    /// c10's `operator<<(ostream&, const Scalar&)`: `1.5`, `(1,2)`, `true`, `3`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            Scalar::Double(d) => f.write_str(&format_g(d)),
            Scalar::ComplexDouble(z) => write!(f, "({},{})", format_g(z.re), format_g(z.im)),
            Scalar::Bool(b) => f.write_str(if b { "true" } else { "false" }),
            Scalar::Int(i) => write!(f, "{i}"),
            Scalar::UInt64(u) => write!(f, "{u}"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err<T: ScalarConvert + fmt::Debug>(s: impl Into<Scalar>) -> String {
        let e = s.into().to::<T>().unwrap_err();
        assert_eq!(e.kind(), crate::ErrorKind::Runtime);
        e.message().to_string()
    }

    #[test]
    fn overflow_errors_name_the_cpp_type() {
        assert_eq!(
            err::<i8>(300i64),
            "value cannot be converted to type int8_t without overflow"
        );
        assert_eq!(
            err::<u8>(256i64),
            "value cannot be converted to type uint8_t without overflow"
        );
        assert_eq!(
            err::<i32>(1e10),
            "value cannot be converted to type int without overflow"
        );
        assert_eq!(
            err::<f16>(1e5),
            "value cannot be converted to type c10::Half without overflow"
        );
        assert_eq!(
            err::<f32>(1e300),
            "value cannot be converted to type float without overflow"
        );
        assert_eq!(
            err::<i64>(f64::NAN),
            "value cannot be converted to type int64_t without overflow"
        );
        assert_eq!(
            err::<f64>(Complex::new(1.0, 2.0)),
            "value cannot be converted to type double without overflow"
        );
        assert_eq!(
            err::<c32>(Complex::new(1e6, 0.0)),
            "value cannot be converted to type c10::complex<c10::Half> without overflow"
        );
        assert_eq!(
            err::<bf16>(1e39),
            "value cannot be converted to type c10::BFloat16 without overflow"
        );
    }

    #[test]
    fn conversions_follow_c10() {
        // Unsigned targets accept negatives down to -max (two's complement wrap).
        assert_eq!(Scalar::from(-1i64).to::<u8>().unwrap(), 255);
        assert_eq!(Scalar::from(-255i64).to::<u8>().unwrap(), 1);
        assert!(Scalar::from(-256i64).to::<u8>().is_err());
        // Doubles truncate toward zero; negative doubles overflow unsigned types.
        assert_eq!(Scalar::from(-2.7).to::<i8>().unwrap(), -2);
        assert!(Scalar::from(-1.0).to::<u8>().is_err());
        // Infinity and NaN pass into floating types.
        assert!(Scalar::from(f64::INFINITY)
            .to::<f16>()
            .unwrap()
            .is_infinite());
        assert!(Scalar::from(f64::NAN).to::<f32>().unwrap().is_nan());
        // bool never overflows; a complex is true when nonzero (torch.full([2], 1j,
        // dtype=torch.bool) is all True).
        assert!(Scalar::from(1e300).to::<bool>().unwrap());
        assert!(Scalar::from(Complex::new(0.0, 1.0)).to::<bool>().unwrap());
        assert!(!Scalar::from(Complex::new(0.0, 0.0)).to::<bool>().unwrap());
        assert_eq!(Scalar::from(true).to::<f64>().unwrap(), 1.0);
        assert_eq!(
            Scalar::from(3i64).to::<c64>().unwrap(),
            Complex::new(3.0f32, 0.0)
        );
        assert_eq!(Scalar::from(Complex::new(2.0, 0.0)).to::<i64>().unwrap(), 2);
        assert_eq!(Scalar::from(0.5).to::<f16>().unwrap(), f16::from_f32(0.5));
    }

    #[test]
    fn unsigned_conversions_follow_c10() {
        // Negatives wrap into uint16 / uint32 down to -max; any int64 wraps into uint64.
        assert_eq!(Scalar::from(-1i64).to::<u16>().unwrap(), u16::MAX);
        assert_eq!(Scalar::from(-1i64).to::<u32>().unwrap(), u32::MAX);
        assert_eq!(Scalar::from(-1i64).to::<u64>().unwrap(), u64::MAX);
        assert_eq!(
            Scalar::from(-(1i64 << 40)).to::<u64>().unwrap(),
            18446742974197923840
        );
        assert_eq!(
            err::<u32>(1i64 << 40),
            "value cannot be converted to type uint32_t without overflow"
        );
        assert_eq!(
            err::<u16>(-65536i64),
            "value cannot be converted to type uint16_t without overflow"
        );
        assert_eq!(
            err::<u64>(-1.5),
            "value cannot be converted to type uint64_t without overflow"
        );
        assert_eq!(
            err::<u32>(f64::NAN),
            "value cannot be converted to type uint32_t without overflow"
        );
        // uint64 values above int64's range are c10's HAS_u scalars.
        let big = Scalar::from(u64::MAX);
        assert_eq!(big, Scalar::UInt64(u64::MAX));
        assert_eq!(Scalar::from(5u64), Scalar::Int(5));
        assert_eq!(big.scalar_type(), ScalarType::UInt64);
        assert!(big.is_integral(false) && big.to_bool());
        assert_eq!(big.to::<u64>().unwrap(), u64::MAX);
        assert_eq!(
            err::<u32>(big),
            "value cannot be converted to type uint32_t without overflow"
        );
        assert_eq!(
            err::<i64>(big),
            "value cannot be converted to type int64_t without overflow"
        );
        assert_eq!(big.to::<f64>().unwrap(), 18446744073709551615.0);
        assert_eq!(
            Scalar::from(1e19).to::<u64>().unwrap(),
            10_000_000_000_000_000_000
        );
        assert_eq!(u64::MAX.to_scalar(), big);
        assert_eq!(7u32.to_scalar(), Scalar::Int(7));
        assert_eq!(big.to_string(), "18446744073709551615");
        assert_eq!(big.neg().unwrap(), Scalar::Int(1));
    }

    #[test]
    fn type_queries() {
        let b = Scalar::from(true);
        assert!(b.is_boolean() && b.is_integral(true) && !b.is_integral(false));
        assert!(Scalar::from(2i32).is_integral(false));
        assert!(Scalar::from(2.0f32).is_floating_point());
        assert!(Scalar::from(Complex::new(1.0, 1.0)).is_complex());
        assert_eq!(Scalar::from(2u8).scalar_type(), ScalarType::Long);
        assert_eq!(Scalar::from(2.0f32).scalar_type(), ScalarType::Double);
        assert_eq!(Scalar::default(), Scalar::Int(0));
        assert!(b.neg().is_err());
        assert_eq!(Scalar::from(2i64).neg().unwrap(), Scalar::Int(-2));
        assert!(Scalar::from(2i64).equal(2.0) && !b.equal(1.0));
    }

    #[test]
    fn display_matches_cpp_ostream() {
        let s = |x: Scalar| x.to_string();
        assert_eq!(s(1.0.into()), "1");
        assert_eq!(s(1.5.into()), "1.5");
        assert_eq!(s(0.1.into()), "0.1");
        assert_eq!(s(1e20.into()), "1e+20");
        assert_eq!(s(123456.0.into()), "123456");
        assert_eq!(s(1234567.0.into()), "1.23457e+06");
        assert_eq!(s(0.0001.into()), "0.0001");
        assert_eq!(s(0.00001234.into()), "1.234e-05");
        assert_eq!(s((-2.5).into()), "-2.5");
        assert_eq!(s(f64::INFINITY.into()), "inf");
        assert_eq!(s(f64::NAN.into()), "nan");
        assert_eq!(s(999999.5.into()), "1e+06");
        assert_eq!(s(Complex::new(1.0, -2.5).into()), "(1,-2.5)");
        assert_eq!(s(true.into()), "true");
        assert_eq!(s((-7i64).into()), "-7");
    }
}
