//! Element types and casts: the [`Elem`] trait that each dtype's Rust type implements, with
//! c10's `static_cast` conversions; [`cast`] between any two; the half / bfloat16 helpers; the
//! computation ("opmath") type of a dtype with its dispatch macro; and the `AT_DISPATCH`
//! errors of the kernels.

use std::any::TypeId;

use half::{bf16, f16};
use num_complex::Complex;
use ratten_core::dtype::{c128, c32, c64};
use ratten_core::{Error, Result, ScalarType};

/// The kind of an element type (c10's categories).
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum Kind {
    Bool,
    Int,
    Float,
    Complex,
}

/// Whether `T`'s dtype is `d`, as a constant: a derived `==` is a call, which the compiler does
/// not fold before it decides what to instantiate, so a loop form guarded by one would be
/// compiled for every element type (Note [Kernel instantiations]).
#[inline(always)]
pub const fn is_dtype<T: Elem>(d: ScalarType) -> bool {
    T::DTYPE as u8 == d as u8
}

/// An element type the kernels read, write and compute in, with c10's `static_cast`
/// conversions through the widest type of each kind.
pub trait Elem: Copy + Send + Sync + Default + PartialEq + 'static {
    const KIND: Kind;
    const DTYPE: ScalarType;
    fn to_i64(self) -> i64;
    fn to_f32(self) -> f32;
    fn to_f64(self) -> f64;
    fn to_c(self) -> c128;
    fn to_bool(self) -> bool;
    fn from_i64(v: i64) -> Self;
    fn from_f32(v: f32) -> Self;
    fn from_f64(v: f64) -> Self;
    fn from_c(v: c128) -> Self;
    fn from_bool(v: bool) -> Self;
    /// Reads an element from tensor memory.
    ///
    /// # Safety
    /// `p` must point at a readable, aligned element of this type.
    #[inline(always)]
    unsafe fn read(p: *const u8) -> Self {
        // SAFETY: per the contract.
        unsafe { p.cast::<Self>().read() }
    }
}

/// `static_cast<T>(v)` of a float to an integer as PyTorch's CPU build computes it on x86: a
/// 64-bit target takes the 64-bit truncating conversion, a narrower one the 32-bit conversion
/// and keeps its low bits; NaN and values out of the conversion's range give its "integer
/// indefinite" value, the minimum (`torch.tensor([inf, nan]).to(torch.int32)` is
/// `[-2147483648, -2147483648]`, `torch.tensor([1e10]).to(torch.int16)` is `[0]`). In range
/// this is plain truncation (300.0 as uint8 is 44). uint32 takes the 64-bit conversion, as
/// compilers emit for `static_cast<uint32_t>` (`1e10` is `1410065408`, its low 32 bits).
#[inline(always)]
fn x86_float_to_int<T: Copy + 'static>(v: f64) -> T
where
    i64: AsPrimitive<T>,
{
    let wide = std::mem::size_of::<T>() >= 4 && std::any::TypeId::of::<T>() != TypeId::of::<i32>();
    let r = if wide {
        x86_cvtt_i64(v)
    } else if v > -2_147_483_649.0 && v < 2_147_483_648.0 {
        v as i32 as i64
    } else {
        i32::MIN as i64
    };
    r.as_()
}

// 2^63, exactly representable.
const TWO_63: f64 = 9_223_372_036_854_775_808.0;

/// x86's 64-bit truncating conversion (cvttsd2si): the integer indefinite `i64::MIN` for NaN
/// and values out of range.
#[inline(always)]
fn x86_cvtt_i64(v: f64) -> i64 {
    if (-TWO_63..TWO_63).contains(&v) {
        v as i64
    } else {
        i64::MIN
    }
}

/// `static_cast<uint64_t>(double)` as x86-64 compilers emit it without AVX-512: below 2^63
/// (and NaN) the signed conversion, from 2^63 up the signed conversion of `v - 2^63` with the
/// top bit flipped (`1.5e19` is exact, `-1.0` wraps to `2^64 - 1`, NaN and `-inf` give
/// `2^63`, `inf` gives 0), as torch computes.
#[inline(always)]
fn x86_float_to_u64(v: f64) -> u64 {
    if v >= TWO_63 {
        (x86_cvtt_i64(v - TWO_63) as u64) ^ (1 << 63)
    } else {
        x86_cvtt_i64(v) as u64
    }
}

/// `i64 as T` for the integer element types (wrapping to the low bits).
trait AsPrimitive<T> {
    fn as_(self) -> T;
}

macro_rules! as_primitive {
    ($($t:ty),*) => {$(
        impl AsPrimitive<$t> for i64 {
            #[inline(always)]
            fn as_(self) -> $t {
                self as $t
            }
        }
    )*};
}

as_primitive!(u8, i8, i16, i32, i64, u16, u32);

macro_rules! elem_int {
    ($($t:ty => $d:ident, $from_float:path),*) => {$(
        impl Elem for $t {
            const KIND: Kind = Kind::Int;
            const DTYPE: ScalarType = ScalarType::$d;
            #[inline(always)] fn to_i64(self) -> i64 { self as i64 }
            #[inline(always)] fn to_f32(self) -> f32 { self as f32 }
            #[inline(always)] fn to_f64(self) -> f64 { self as f64 }
            #[inline(always)] fn to_c(self) -> c128 { Complex::new(self as f64, 0.0) }
            #[inline(always)] fn to_bool(self) -> bool { self != 0 }
            #[inline(always)] fn from_i64(v: i64) -> Self { v as $t }
            // C++'s `static_cast` as x86 compiles it (see `x86_float_to_int`); Rust's `as`
            // saturates instead.
            #[inline(always)] fn from_f32(v: f32) -> Self { $from_float(v as f64) }
            #[inline(always)] fn from_f64(v: f64) -> Self { $from_float(v) }
            #[inline(always)] fn from_c(v: c128) -> Self { $from_float(v.re) }
            #[inline(always)] fn from_bool(v: bool) -> Self { v as $t }
        }
    )*};
}

elem_int!(
    u8 => Byte, x86_float_to_int::<u8>,
    i8 => Char, x86_float_to_int::<i8>,
    i16 => Short, x86_float_to_int::<i16>,
    i32 => Int, x86_float_to_int::<i32>,
    i64 => Long, x86_float_to_int::<i64>,
    u16 => UInt16, x86_float_to_int::<u16>,
    u32 => UInt32, x86_float_to_int::<u32>,
    u64 => UInt64, x86_float_to_u64
);

macro_rules! elem_float {
    ($($t:ty => $d:ident),*) => {$(
        impl Elem for $t {
            const KIND: Kind = Kind::Float;
            const DTYPE: ScalarType = ScalarType::$d;
            #[inline(always)] fn to_i64(self) -> i64 { self as i64 }
            #[inline(always)] fn to_f32(self) -> f32 { self as f32 }
            #[inline(always)] fn to_f64(self) -> f64 { self as f64 }
            #[inline(always)] fn to_c(self) -> c128 { Complex::new(self as f64, 0.0) }
            #[inline(always)] fn to_bool(self) -> bool { self != 0.0 }
            #[inline(always)] fn from_i64(v: i64) -> Self { v as $t }
            #[inline(always)] fn from_f32(v: f32) -> Self { v as $t }
            #[inline(always)] fn from_f64(v: f64) -> Self { v as $t }
            #[inline(always)] fn from_c(v: c128) -> Self { v.re as $t }
            #[inline(always)] fn from_bool(v: bool) -> Self { v as u8 as $t }
        }
    )*};
}

elem_float!(f32 => Float, f64 => Double);

impl Elem for f16 {
    const KIND: Kind = Kind::Float;
    const DTYPE: ScalarType = ScalarType::Half;
    #[inline(always)]
    fn to_i64(self) -> i64 {
        self.to_f32() as i64
    }
    #[inline(always)]
    fn to_f32(self) -> f32 {
        f16::to_f32(self)
    }
    #[inline(always)]
    fn to_f64(self) -> f64 {
        f16::to_f64(self)
    }
    #[inline(always)]
    fn to_c(self) -> c128 {
        Complex::new(self.to_f64(), 0.0)
    }
    #[inline(always)]
    fn to_bool(self) -> bool {
        self.to_f32() != 0.0
    }
    #[inline(always)]
    fn from_i64(v: i64) -> Self {
        f16::from_f32(v as f32)
    }
    #[inline(always)]
    fn from_f32(v: f32) -> Self {
        f16::from_f32(v)
    }
    // c10::Half has only a float constructor: a double is rounded to float first (double
    // rounding included), not straight to half as `half::f16::from_f64` does.
    #[inline(always)]
    fn from_f64(v: f64) -> Self {
        f16::from_f32(v as f32)
    }
    #[inline(always)]
    fn from_c(v: c128) -> Self {
        f16::from_f32(v.re as f32)
    }
    #[inline(always)]
    fn from_bool(v: bool) -> Self {
        f16::from_f32(v as u8 as f32)
    }
}

/// bfloat16 -> f32 is a shift (vectorises).
#[inline(always)]
pub fn bf16_to_f32(x: bf16) -> f32 {
    f32::from_bits((x.to_bits() as u32) << 16)
}

/// f32 -> bfloat16 exactly as c10's `round_to_nearest_even`: round to nearest even, every
/// NaN becomes 0x7FC0. Integer arithmetic only and branch-free, so LLVM vectorises it with
/// integer instructions (no float compare or vcvtneps2bf16, which treats denormal inputs as
/// zero and would differ from c10).
#[inline(always)]
pub fn f32_to_bf16(v: f32) -> bf16 {
    let b = v.to_bits();
    let rounded = (b.wrapping_add(0x7fff + ((b >> 16) & 1)) >> 16) as u16;
    let is_nan = (b & 0x7fff_ffff) > 0x7f80_0000;
    bf16::from_bits(if is_nan { 0x7fc0 } else { rounded })
}

impl Elem for bf16 {
    const KIND: Kind = Kind::Float;
    const DTYPE: ScalarType = ScalarType::BFloat16;
    #[inline(always)]
    fn to_i64(self) -> i64 {
        bf16_to_f32(self) as i64
    }
    #[inline(always)]
    fn to_f32(self) -> f32 {
        bf16_to_f32(self)
    }
    #[inline(always)]
    fn to_f64(self) -> f64 {
        bf16_to_f32(self) as f64
    }
    #[inline(always)]
    fn to_c(self) -> c128 {
        Complex::new(self.to_f64(), 0.0)
    }
    #[inline(always)]
    fn to_bool(self) -> bool {
        bf16_to_f32(self) != 0.0
    }
    #[inline(always)]
    fn from_i64(v: i64) -> Self {
        f32_to_bf16(v as f32)
    }
    #[inline(always)]
    fn from_f32(v: f32) -> Self {
        f32_to_bf16(v)
    }
    // As c10::BFloat16: through float.
    #[inline(always)]
    fn from_f64(v: f64) -> Self {
        f32_to_bf16(v as f32)
    }
    #[inline(always)]
    fn from_c(v: c128) -> Self {
        f32_to_bf16(v.re as f32)
    }
    #[inline(always)]
    fn from_bool(v: bool) -> Self {
        f32_to_bf16(v as u8 as f32)
    }
}

impl Elem for bool {
    const KIND: Kind = Kind::Bool;
    const DTYPE: ScalarType = ScalarType::Bool;
    #[inline(always)]
    fn to_i64(self) -> i64 {
        self as i64
    }
    #[inline(always)]
    fn to_f32(self) -> f32 {
        self as u8 as f32
    }
    #[inline(always)]
    fn to_f64(self) -> f64 {
        self as u8 as f64
    }
    #[inline(always)]
    fn to_c(self) -> c128 {
        Complex::new(self as u8 as f64, 0.0)
    }
    #[inline(always)]
    fn to_bool(self) -> bool {
        self
    }
    #[inline(always)]
    fn from_i64(v: i64) -> Self {
        v != 0
    }
    #[inline(always)]
    fn from_f32(v: f32) -> Self {
        v != 0.0
    }
    #[inline(always)]
    fn from_f64(v: f64) -> Self {
        v != 0.0
    }
    #[inline(always)]
    fn from_c(v: c128) -> Self {
        v.re != 0.0 || v.im != 0.0
    }
    #[inline(always)]
    fn from_bool(v: bool) -> Self {
        v
    }
    /// A byte that is not 0 or 1 (memory written as another dtype) still reads as a bool.
    #[inline(always)]
    unsafe fn read(p: *const u8) -> Self {
        // SAFETY: per the contract (one readable byte).
        unsafe { p.read() != 0 }
    }
}

macro_rules! elem_complex {
    ($($t:ty => $d:ident, $r:ty),*) => {$(
        impl Elem for $t {
            const KIND: Kind = Kind::Complex;
            const DTYPE: ScalarType = ScalarType::$d;
            #[inline(always)] fn to_i64(self) -> i64 { self.re.to_f64() as i64 }
            #[inline(always)] fn to_f32(self) -> f32 { self.re.to_f32() }
            #[inline(always)] fn to_f64(self) -> f64 { self.re.to_f64() }
            #[inline(always)] fn to_c(self) -> c128 { Complex::new(self.re.to_f64(), self.im.to_f64()) }
            #[inline(always)] fn to_bool(self) -> bool { self.re.to_f64() != 0.0 || self.im.to_f64() != 0.0 }
            #[inline(always)] fn from_i64(v: i64) -> Self { Complex::new(<$r>::from_i64(v), <$r>::default()) }
            #[inline(always)] fn from_f32(v: f32) -> Self { Complex::new(<$r>::from_f32(v), <$r>::default()) }
            #[inline(always)] fn from_f64(v: f64) -> Self { Complex::new(<$r>::from_f64(v), <$r>::default()) }
            #[inline(always)] fn from_c(v: c128) -> Self { Complex::new(<$r>::from_f64(v.re), <$r>::from_f64(v.im)) }
            #[inline(always)] fn from_bool(v: bool) -> Self { Self::from_i64(v as i64) }
        }
    )*};
}

elem_complex!(c32 => ComplexHalf, f16, c64 => ComplexFloat, f32, c128 => ComplexDouble, f64);

/// c10's `static_cast<D>(s)` between any two element types.
#[inline(always)]
pub fn cast<S: Elem, D: Elem>(s: S) -> D {
    if S::DTYPE == D::DTYPE {
        // SAFETY: equal dtypes mean equal element types (the Elem impls are one per dtype).
        return unsafe { std::mem::transmute_copy::<S, D>(&s) };
    }
    let wide = matches!(S::DTYPE, ScalarType::Double | ScalarType::ComplexDouble);
    match D::KIND {
        Kind::Complex => D::from_c(s.to_c()),
        Kind::Bool => D::from_bool(s.to_bool()),
        Kind::Int => match S::KIND {
            Kind::Bool | Kind::Int => D::from_i64(s.to_i64()),
            Kind::Float | Kind::Complex => D::from_f64(s.to_f64()),
        },
        Kind::Float => match S::KIND {
            Kind::Bool | Kind::Int => {
                // i32 -> f64 is exact, so (x as f64) as f32 == x as f32: take the one
                // instruction (vcvtdq2ps) for float targets.
                if std::mem::size_of::<S>() <= 4 && D::DTYPE == ScalarType::Float {
                    D::from_f32(s.to_f32())
                } else if std::mem::size_of::<S>() <= 4 {
                    D::from_f64(s.to_f64())
                } else if is_dtype::<S>(ScalarType::UInt64) {
                    // `static_cast<float>(uint64_t)` rounds once; the narrower floats are
                    // made from that float, as c10's Half and BFloat16 constructors take one.
                    if is_dtype::<D>(ScalarType::Double) {
                        D::from_f64(s.to_f64())
                    } else {
                        D::from_f32(s.to_f32())
                    }
                } else {
                    D::from_i64(s.to_i64())
                }
            }
            Kind::Float | Kind::Complex => {
                if wide {
                    D::from_f64(s.to_f64())
                } else {
                    D::from_f32(s.to_f32())
                }
            }
        },
    }
}

/// The computation ("opmath") type of a dtype: half, bfloat16 -> f32, complex32 -> complex64.
pub fn opmath_dtype(dt: ScalarType) -> ScalarType {
    match dt {
        ScalarType::Half | ScalarType::BFloat16 => ScalarType::Float,
        ScalarType::ComplexHalf => ScalarType::ComplexFloat,
        d => d,
    }
}

/// Runs `$body` with `$M` bound to the opmath type of `$dt` (see [`opmath_dtype`]), for all 16
/// dtypes. The form with `unsigned_refused("kernel")` leaves the barebones unsigned types out,
/// as torch's `AT_DISPATCH` lists do for most kernels: for them it returns `"kernel" not
/// implemented for 'UInt32'` from the enclosing function, and `$body` is not compiled for them.
#[macro_export]
macro_rules! dispatch_opmath {
    ($dt:expr, $M:ident => $body:expr) => {
        $crate::dispatch_opmath!(@arms $dt, $M, $body, {
            ratten_core::ScalarType::UInt16 => {
                type $M = u16;
                $body
            }
            ratten_core::ScalarType::UInt32 => {
                type $M = u32;
                $body
            }
            ratten_core::ScalarType::UInt64 => {
                type $M = u64;
                $body
            }
        })
    };
    ($dt:expr, unsigned_refused($kernel:expr), $M:ident => $body:expr) => {
        $crate::dispatch_opmath!(@arms $dt, $M, $body, {
            d @ (ratten_core::ScalarType::UInt16
            | ratten_core::ScalarType::UInt32
            | ratten_core::ScalarType::UInt64) => {
                return Err($crate::native::cpu::not_implemented($kernel, d));
            }
        })
    };
    (@arms $dt:expr, $M:ident, $body:expr, { $($unsigned:tt)* }) => {{
        use $crate::native::cpu::opmath_dtype;
        match opmath_dtype($dt) {
            ratten_core::ScalarType::Byte => {
                type $M = u8;
                $body
            }
            ratten_core::ScalarType::Char => {
                type $M = i8;
                $body
            }
            ratten_core::ScalarType::Short => {
                type $M = i16;
                $body
            }
            ratten_core::ScalarType::Int => {
                type $M = i32;
                $body
            }
            ratten_core::ScalarType::Long => {
                type $M = i64;
                $body
            }
            ratten_core::ScalarType::Float => {
                type $M = f32;
                $body
            }
            ratten_core::ScalarType::Double => {
                type $M = f64;
                $body
            }
            ratten_core::ScalarType::ComplexFloat => {
                type $M = ratten_core::dtype::c64;
                $body
            }
            ratten_core::ScalarType::ComplexDouble => {
                type $M = ratten_core::dtype::c128;
                $body
            }
            ratten_core::ScalarType::Bool => {
                type $M = bool;
                $body
            }
            // opmath_dtype never returns the reduced types.
            ratten_core::ScalarType::Half
            | ratten_core::ScalarType::BFloat16
            | ratten_core::ScalarType::ComplexHalf => unreachable!("opmath of a reduced type"),
            $($unsigned)*
        }
    }};
}

/// The `AT_DISPATCH` error: `"add_stub" not implemented for 'Bool'` (NotImplementedError).
pub fn not_implemented(kernel: &str, dt: ScalarType) -> Error {
    Error::not_implemented(format!("\"{kernel}\" not implemented for '{dt}'"))
}

/// The refusal of a kernel PyTorch's CPU build has no complex32 case for (its `AT_DISPATCH`
/// list leaves `kComplexHalf` out, as for div, pow, lerp and the exp family): `"kernel" not
/// implemented for 'ComplexHalf'` when `dt` is complex32. The kernels compute in opmath types,
/// where complex32 would otherwise run as complex64.
pub fn refuse_complex32(kernel: &str, dt: ScalarType) -> Result<()> {
    if dt == ScalarType::ComplexHalf {
        return Err(not_implemented(kernel, dt));
    }
    Ok(())
}

/// The refusal of a kernel whose torch dispatch list leaves the barebones unsigned types out,
/// for kernels that do not dispatch through [`dispatch_opmath!`]'s `unsigned_refused` form.
pub fn refuse_unsigned(kernel: &str, dt: ScalarType) -> Result<()> {
    if dt.is_barebones_unsigned() {
        return Err(not_implemented(kernel, dt));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn casts_follow_static_cast() {
        assert_eq!(cast::<f32, u8>(300.0), 44);
        assert_eq!(cast::<f64, i8>(-1.9), -1);
        assert_eq!(cast::<i64, i8>(300), 44);
        assert!(cast::<f32, bool>(0.5));
        assert!(!cast::<c64, bool>(Complex::new(0.0, 0.0)));
        assert_eq!(cast::<bool, f32>(true), 1.0);
        assert_eq!(cast::<c128, f32>(Complex::new(2.5, 1.0)), 2.5);
        assert_eq!(cast::<i32, f32>(16777217), 16777216.0);
        // NaN and out-of-range floats: x86's integer indefinite (torch's values).
        assert_eq!(cast::<f32, i32>(f32::INFINITY), i32::MIN);
        assert_eq!(cast::<f32, i32>(f32::NAN), i32::MIN);
        assert_eq!(cast::<f64, i64>(9.3e18), i64::MIN);
        assert_eq!(cast::<f64, i64>(-(2f64.powi(63))), i64::MIN);
        assert_eq!(cast::<f32, i16>(1e10), 0);
        assert_eq!(cast::<f64, i32>(-2147483648.9), i32::MIN);
        assert_eq!(cast::<f64, i32>(2147483647.9), i32::MAX);
        assert_eq!(cast::<f32, u8>(-1.0), 255);
        assert_eq!(cast::<f32, bf16>(1.0), bf16::from_f32(1.0));
        for v in [
            1.0f32,
            -3.3,
            1e30,
            65504.0,
            1.0 + 1.0 / 256.0,
            f32::INFINITY,
        ] {
            assert_eq!(f32_to_bf16(v), bf16::from_f32(v), "{v}");
        }
        assert!(bf16_to_f32(f32_to_bf16(f32::NAN)).is_nan());
        assert_eq!(cast::<f16, f32>(f16::from_f32(1.5)), 1.5);
    }

    #[test]
    fn unsigned_casts_follow_torch() {
        // Values torch 2.15 gives (its scalar copy loop) for float -> uint16 / uint32 / uint64.
        let vals = [
            1.5,
            -1.0,
            3e10,
            2f64.powi(63),
            1.5e19,
            1e20,
            -1e20,
            f64::INFINITY,
        ];
        let u16s: Vec<u16> = vals.iter().map(|&v| cast::<f64, u16>(v)).collect();
        assert_eq!(u16s, [1, 65535, 0, 0, 0, 0, 0, 0]);
        let u32s: Vec<u32> = vals.iter().map(|&v| cast::<f64, u32>(v)).collect();
        assert_eq!(u32s, [1, 4294967295, 4230196224, 0, 0, 0, 0, 0]);
        let u64s: Vec<u64> = vals.iter().map(|&v| cast::<f64, u64>(v)).collect();
        assert_eq!(
            u64s,
            [
                1,
                u64::MAX,
                30000000000,
                1 << 63,
                15000000000000000000,
                0,
                1 << 63,
                0
            ]
        );
        assert_eq!(cast::<f64, u64>(f64::NAN), 1 << 63);
        assert_eq!(cast::<f64, u64>(-(2f64.powi(31))), 18446744071562067968);
        assert_eq!(cast::<f32, u64>(1.5e19), 15000000520515485696);
        assert_eq!(cast::<f64, u16>(-70000.5), 61072);
        // Integers wrap to the low bits both ways.
        assert_eq!(cast::<i64, u32>(-1), u32::MAX);
        assert_eq!(cast::<u64, i64>(u64::MAX), -1);
        assert_eq!(cast::<u64, u16>(70000), 4464);
        assert_eq!(cast::<u32, i32>(1 << 31), i32::MIN);
        assert_eq!(cast::<u16, i8>(300), 44);
        assert_eq!(cast::<i8, u64>(-1), u64::MAX);
        // uint64 -> floats rounds once from the integer.
        assert_eq!(cast::<u64, f64>(u64::MAX), 18446744073709551615.0);
        assert_eq!(cast::<u64, f32>(4294967303), 4294967296.0);
        assert_eq!(cast::<u64, bf16>(70000), bf16::from_f32(70144.0));
        assert!(cast::<u64, f16>(70000).is_infinite());
        assert_eq!(cast::<u32, f32>(u32::MAX), 4294967296.0);
        assert!(cast::<u64, bool>(1 << 63));
        assert_eq!(cast::<u64, c64>(u64::MAX).re, 18446744073709551615.0);
    }
}
