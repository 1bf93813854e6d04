//! Binary pointwise kernels (BinaryOpsKernel.cpp) and their DispatchStubs.

// The generic kernels compare values of the computation type, which is `bool` for the bool
// dtype; clippy's bool-comparison lint fires on those instantiations.
#![allow(clippy::bool_comparison)]

use std::sync::atomic::{AtomicBool, Ordering};

use ratten_core::dtype::{c128, c64};
use ratten_core::{Error, Result, Scalar, ScalarType};

use super::{cast, cpu_binary, not_implemented, refuse_complex32, Elem};
use crate::dispatch_opmath;
use crate::dispatch_stub::DispatchStub;
use crate::tensor_iterator::TensorIteratorBase;

/// `structured_binary_fn_alpha`.
pub type BinaryFnAlpha = fn(&TensorIteratorBase, &Scalar) -> Result<()>;
/// `structured_binary_fn`.
pub type BinaryFn = fn(&TensorIteratorBase) -> Result<()>;

/// Declares a stub with one CPU kernel for every capability: the pointwise driver compiles
/// and picks the instruction set per computation type (Note [Kernel instantiations]).
macro_rules! stub {
    ($(#[$m:meta])* $name:ident, $str:literal, $ty:ty, $kernel:ident) => {
        $(#[$m])*
        pub static $name: DispatchStub<$ty> = DispatchStub::with_cpu_kernel($str, $kernel);
    };
}
pub(crate) use stub;

/// Arithmetic in the computation type: wrapping for integers (C++'s two's-complement
/// behaviour), IEEE for floats, `or`/`and` for bool.
pub trait Arith: Elem {
    fn add(self, o: Self) -> Self;
    fn sub(self, o: Self) -> Self;
    fn mul(self, o: Self) -> Self;
    /// `-self` (wrapping for integers; for floats the sign flips, so -(0.0) is -0.0).
    fn neg(self) -> Self;
}

macro_rules! arith_int {
    ($($t:ty),*) => {$(
        impl Arith for $t {
            #[inline(always)] fn add(self, o: Self) -> Self { self.wrapping_add(o) }
            #[inline(always)] fn sub(self, o: Self) -> Self { self.wrapping_sub(o) }
            #[inline(always)] fn mul(self, o: Self) -> Self { self.wrapping_mul(o) }
            #[inline(always)] fn neg(self) -> Self { self.wrapping_neg() }
        }
    )*};
}
arith_int!(u8, i8, i16, i32, i64, u16, u32, u64);
macro_rules! arith_float {
    ($($t:ty),*) => {$(
        impl Arith for $t {
            #[inline(always)] fn add(self, o: Self) -> Self { self + o }
            #[inline(always)] fn sub(self, o: Self) -> Self { self - o }
            #[inline(always)] fn mul(self, o: Self) -> Self { self * o }
            #[inline(always)] fn neg(self) -> Self { -self }
        }
    )*};
}
arith_float!(f32, f64, c64, c128);
impl Arith for bool {
    #[inline(always)]
    fn add(self, o: Self) -> Self {
        self | o
    }
    #[inline(always)]
    fn sub(self, o: Self) -> Self {
        self ^ o
    }
    #[inline(always)]
    fn mul(self, o: Self) -> Self {
        self & o
    }
    #[inline(always)]
    fn neg(self) -> Self {
        self
    }
}

/// The alpha scalar in the computation type (`alpha.to<opmath_t>()`).
fn scalar_as<M: Elem>(s: &Scalar) -> M {
    match *s {
        Scalar::Bool(b) => M::from_bool(b),
        Scalar::Int(i) => M::from_i64(i),
        // The int64 of the same bits: what c10's `to<opmath_t>` gives an unsigned type.
        Scalar::UInt64(u) => M::from_i64(u as i64),
        Scalar::Double(d) => M::from_f64(d),
        Scalar::ComplexDouble(z) => M::from_c(z),
    }
}

fn add_kernel(iter: &TensorIteratorBase, alpha: &Scalar) -> Result<()> {
    let dt = iter.computation_dtype()?;
    dispatch_opmath!(dt, unsigned_refused("add_stub"), M => {
        let a: M = scalar_as(alpha);
        // PyTorch computes `a + alpha * b` always; skipping the product for alpha == 1 is
        // exact for reals, not for complex (1 * (nan + 0j) is nan + nanj).
        if a == M::from_i64(1) && !M::DTYPE.is_complex() {
            cpu_binary::<M, M>(iter, #[inline(always)] |x, y| x.add(y))
        } else {
            cpu_binary::<M, M>(iter, #[inline(always)] move |x, y| x.add(a.mul(y)))
        }
    })
}
stub!(
    /// `add_stub` (sub runs it with `-alpha`, as PyTorch does).
    ADD_STUB, "add_stub", BinaryFnAlpha, add_kernel
);

/// PyTorch's reduced-float scalar path of mul and the divisions: when the common dtype is half
/// or bfloat16 and `other` (operand 2) is one value broadcast everywhere, the kernel uses that
/// value as the operand held it, cast to float (`iter.original_scalar_value<opmath_t>(2)`),
/// not rounded to the common dtype first: `half_tensor * 1e10` multiplies by 1e10, not by inf.
fn reduced_scalar_other(iter: &TensorIteratorBase) -> Option<f32> {
    let dt = iter.common_dtype()?;
    if !matches!(dt, ScalarType::Half | ScalarType::BFloat16)
        || iter.ntensors() != 3
        || iter.numel() == 0
        || iter.is_meta()
        || !iter.is_scalar(2)
    {
        return None;
    }
    // `item` needs one element: an operand expanded from one (stride 0, more elements) keeps
    // the general path, which reads the same value.
    Some(match iter.scalar_value(2).ok()? {
        Scalar::Bool(b) => b as u8 as f32,
        Scalar::Int(i) => i as f32,
        Scalar::UInt64(u) => u as f32,
        Scalar::Double(d) => d as f32,
        Scalar::ComplexDouble(z) => z.re as f32,
    })
}

fn mul_kernel(iter: &TensorIteratorBase) -> Result<()> {
    if let Some(b) = reduced_scalar_other(iter) {
        return cpu_binary::<f32, f32>(iter, move |x, _| x * b);
    }
    let dt = iter.computation_dtype()?;
    dispatch_opmath!(dt, M => cpu_binary::<M, M>(iter, #[inline(always)] |x, y| x.mul(y)))
}
stub!(MUL_STUB, "mul_stub", BinaryFn, mul_kernel);

/// Float and complex division.
pub trait FloatDiv: Elem {
    fn div(self, o: Self) -> Self;
}
impl FloatDiv for f32 {
    #[inline(always)]
    fn div(self, o: Self) -> Self {
        self / o
    }
}
impl FloatDiv for f64 {
    #[inline(always)]
    fn div(self, o: Self) -> Self {
        self / o
    }
}
impl FloatDiv for c64 {
    #[inline(always)]
    fn div(self, o: Self) -> Self {
        let (re, im) = c10_complex_div(self.re, self.im, o.re, o.im);
        c64::new(re, im)
    }
}
impl FloatDiv for c128 {
    #[inline(always)]
    fn div(self, o: Self) -> Self {
        let (re, im) = c10_complex_div(self.re, self.im, o.re, o.im);
        c128::new(re, im)
    }
}

/// `c10::complex<T>::operator/=` (numpy's algorithm, in T): scaled by the larger of |c| and
/// |d| so `(1e30+1e30j) / (1e30+1e30j)` is `1` rather than an overflow, and a zero divisor
/// gives `(a/0, b/0)` (`(1+1j)/0 = inf+infj`, `(1+0j)/0 = inf+nanj`) as PyTorch prints, where
/// the textbook formula gives nan+nanj.
#[inline(always)]
fn c10_complex_div<T: num_traits::Float>(a: T, b: T, c: T, d: T) -> (T, T) {
    let (abs_c, abs_d) = (c.abs(), d.abs());
    if abs_c >= abs_d {
        if abs_c == T::zero() && abs_d == T::zero() {
            return (a / abs_c, b / abs_d);
        }
        let rat = d / c;
        let scl = T::one() / (c + d * rat);
        ((a + b * rat) * scl, (b - a * rat) * scl)
    } else {
        let rat = c / d;
        let scl = T::one() / (d + c * rat);
        ((a * rat + b) * scl, (b * rat - a) * scl)
    }
}

fn div_true_kernel(iter: &TensorIteratorBase) -> Result<()> {
    if let Some(b) = reduced_scalar_other(iter) {
        return cpu_binary::<f32, f32>(iter, move |x, _| x / b);
    }
    let dt = iter.computation_dtype()?;
    refuse_complex32("div_cpu", dt)?;
    match super::opmath_dtype(dt) {
        ScalarType::Float => cpu_binary::<f32, f32>(iter, |x, y| x / y),
        ScalarType::Double => cpu_binary::<f64, f64>(iter, |x, y| x / y),
        ScalarType::ComplexFloat => cpu_binary::<c64, c64>(iter, |x, y| x.div(y)),
        ScalarType::ComplexDouble => cpu_binary::<c128, c128>(iter, |x, y| x.div(y)),
        _ => Err(not_implemented("div_cpu", dt)),
    }
}
stub!(DIV_TRUE_STUB, "div_true_stub", BinaryFn, div_true_kernel);

/// Integer division helpers with PyTorch's semantics (trunc / floor, and the C++ remainder).
pub trait IntDiv: Elem {
    fn is_zero(self) -> bool;
    fn div_trunc(self, o: Self) -> Self;
    fn floor_div(self, o: Self) -> Self;
    /// Python's `%` (sign of the divisor).
    fn remainder(self, o: Self) -> Self;
    /// C's `%` (sign of the dividend).
    fn fmod(self, o: Self) -> Self;
}
macro_rules! int_div {
    ($($t:ty),*) => {$(
        impl IntDiv for $t {
            #[inline(always)] fn is_zero(self) -> bool { self == 0 }
            #[inline(always)] fn div_trunc(self, o: Self) -> Self { self.wrapping_div(o) }
            #[inline(always)] fn floor_div(self, o: Self) -> Self {
                let q = self.wrapping_div(o);
                let r = self.wrapping_rem(o);
                #[allow(unused_comparisons)]
                if r != 0 && ((r < 0) != (o < 0)) { q.wrapping_sub(1) } else { q }
            }
            #[inline(always)] fn remainder(self, o: Self) -> Self {
                let r = self.wrapping_rem(o);
                #[allow(unused_comparisons)]
                if r != 0 && ((r < 0) != (o < 0)) { r.wrapping_add(o) } else { r }
            }
            #[inline(always)] fn fmod(self, o: Self) -> Self { self.wrapping_rem(o) }
        }
    )*};
}
int_div!(u8, i8, i16, i32, i64);

/// Float `floor_divide` with PyTorch's `div_floor_floating` (Python's `//`).
#[inline(always)]
fn div_floor_f64(a: f64, b: f64) -> f64 {
    if b == 0.0 {
        return a / b;
    }
    let m = a % b;
    let mut div = (a - m) / b;
    if m != 0.0 && ((b < 0.0) != (m < 0.0)) {
        div -= 1.0;
    }
    if div != 0.0 {
        let f = div.floor();
        if div - f > 0.5 {
            f + 1.0
        } else {
            f
        }
    } else {
        0.0f64.copysign(a / b)
    }
}
#[inline(always)]
fn div_floor_f32(a: f32, b: f32) -> f32 {
    if b == 0.0 {
        return a / b;
    }
    let m = a % b;
    let mut div = (a - m) / b;
    if m != 0.0 && ((b < 0.0) != (m < 0.0)) {
        div -= 1.0;
    }
    if div != 0.0 {
        let f = div.floor();
        if div - f > 0.5 {
            f + 1.0
        } else {
            f
        }
    } else {
        0.0f32.copysign(a / b)
    }
}
#[inline(always)]
fn remainder_f64(a: f64, b: f64) -> f64 {
    let m = a % b;
    if m != 0.0 && ((b < 0.0) != (m < 0.0)) {
        m + b
    } else {
        m
    }
}
#[inline(always)]
fn remainder_f32(a: f32, b: f32) -> f32 {
    let m = a % b;
    if m != 0.0 && ((b < 0.0) != (m < 0.0)) {
        m + b
    } else {
        m
    }
}

/// Runs an integer kernel that may divide by zero; PyTorch raises `ZeroDivisionError` (a
/// RuntimeError with that text) from inside the loop.
fn int_div_loop<M: IntDiv>(iter: &TensorIteratorBase, f: impl Fn(M, M) -> M + Sync) -> Result<()> {
    let zero = AtomicBool::new(false);
    cpu_binary::<M, M>(iter, |x, y| {
        if y.is_zero() {
            zero.store(true, Ordering::Relaxed);
            M::default()
        } else {
            f(x, y)
        }
    })?;
    if zero.load(Ordering::Relaxed) {
        return Err(Error::runtime("ZeroDivisionError"));
    }
    Ok(())
}

/// Runs `$body` with `$M` bound to the integer type of `$dt` (PyTorch's
/// AT_DISPATCH_INTEGRAL_TYPES); `bits_dispatch!` and `real_dispatch!` add their arms through
/// the `@or` form, which hands every other dtype to `$fallback`.
macro_rules! int_dispatch {
    ($dt:expr, $name:expr, $M:ident => $body:expr) => {
        int_dispatch!(@or $dt, $M => $body, other => Err(not_implemented($name, other)))
    };
    (@or $dt:expr, $M:ident => $body:expr, $rest:ident => $fallback:expr) => {
        match $dt {
            ScalarType::Byte => {
                type $M = u8;
                $body
            }
            ScalarType::Char => {
                type $M = i8;
                $body
            }
            ScalarType::Short => {
                type $M = i16;
                $body
            }
            ScalarType::Int => {
                type $M = i32;
                $body
            }
            ScalarType::Long => {
                type $M = i64;
                $body
            }
            $rest => $fallback,
        }
    };
}
pub(crate) use int_dispatch;

/// The barebones unsigned types (`AT_BAREBONES_UNSIGNED_TYPES`), which torch adds to the
/// dispatch lists of a few kernels (mul, eq, ne, maximum, minimum, the bitwise ops); other
/// dtypes take `$fallback`.
macro_rules! unsigned_dispatch {
    (@or $dt:expr, $M:ident => $body:expr, $rest:ident => $fallback:expr) => {
        match $dt {
            ScalarType::UInt16 => {
                type $M = u16;
                $body
            }
            ScalarType::UInt32 => {
                type $M = u32;
                $body
            }
            ScalarType::UInt64 => {
                type $M = u64;
                $body
            }
            $rest => $fallback,
        }
    };
}
pub(crate) use unsigned_dispatch;

fn div_trunc_kernel(iter: &TensorIteratorBase) -> Result<()> {
    if let Some(b) = reduced_scalar_other(iter) {
        return cpu_binary::<f32, f32>(iter, move |x, _| (x / b).trunc());
    }
    let dt = iter.computation_dtype()?;
    match super::opmath_dtype(dt) {
        ScalarType::Float => cpu_binary::<f32, f32>(iter, |x, y| (x / y).trunc()),
        ScalarType::Double => cpu_binary::<f64, f64>(iter, |x, y| (x / y).trunc()),
        ScalarType::Bool => Err(not_implemented("div_trunc_cpu", dt)),
        _ => {
            int_dispatch!(dt, "div_trunc_cpu", M => int_div_loop::<M>(iter, |x, y| x.div_trunc(y)))
        }
    }
}
stub!(DIV_TRUNC_STUB, "div_trunc_stub", BinaryFn, div_trunc_kernel);

fn div_floor_kernel(iter: &TensorIteratorBase) -> Result<()> {
    if let Some(b) = reduced_scalar_other(iter) {
        return cpu_binary::<f32, f32>(iter, move |x, _| div_floor_f32(x, b));
    }
    let dt = iter.computation_dtype()?;
    match super::opmath_dtype(dt) {
        ScalarType::Float => cpu_binary::<f32, f32>(iter, div_floor_f32),
        ScalarType::Double => cpu_binary::<f64, f64>(iter, div_floor_f64),
        ScalarType::Bool => Err(not_implemented("div_floor_cpu", dt)),
        _ => {
            int_dispatch!(dt, "div_floor_cpu", M => int_div_loop::<M>(iter, |x, y| x.floor_div(y)))
        }
    }
}
stub!(DIV_FLOOR_STUB, "div_floor_stub", BinaryFn, div_floor_kernel);

fn remainder_kernel(iter: &TensorIteratorBase) -> Result<()> {
    let dt = iter.computation_dtype()?;
    match super::opmath_dtype(dt) {
        ScalarType::Float => cpu_binary::<f32, f32>(iter, remainder_f32),
        ScalarType::Double => cpu_binary::<f64, f64>(iter, remainder_f64),
        ScalarType::Bool => Err(not_implemented("remainder_cpu", dt)),
        _ => {
            int_dispatch!(dt, "remainder_cpu", M => int_div_loop::<M>(iter, |x, y| x.remainder(y)))
        }
    }
}
stub!(REMAINDER_STUB, "remainder_stub", BinaryFn, remainder_kernel);

fn fmod_kernel(iter: &TensorIteratorBase) -> Result<()> {
    let dt = iter.computation_dtype()?;
    match super::opmath_dtype(dt) {
        ScalarType::Float => cpu_binary::<f32, f32>(iter, |x, y| x % y),
        ScalarType::Double => cpu_binary::<f64, f64>(iter, |x, y| x % y),
        ScalarType::Bool => Err(not_implemented("fmod_cpu", dt)),
        _ => int_dispatch!(dt, "fmod_cpu", M => int_div_loop::<M>(iter, |x, y| x.fmod(y))),
    }
}
stub!(FMOD_STUB, "fmod_stub", BinaryFn, fmod_kernel);

/// Ordering for comparisons and maximum/minimum (real types).
pub trait Real: Elem + PartialOrd {
    fn is_nan(self) -> bool;
}
macro_rules! real {
    ($($t:ty: $nan:expr),*) => {$(
        impl Real for $t {
            #[inline(always)] fn is_nan(self) -> bool { let f: fn($t) -> bool = $nan; f(self) }
        }
    )*};
}
real!(u8: |_| false, i8: |_| false, i16: |_| false, i32: |_| false, i64: |_| false,
      bool: |_| false, f32: |x| x.is_nan(), f64: |x| x.is_nan(),
      u16: |_| false, u32: |_| false, u64: |_| false);

/// `$dt`'s opmath type: integers, bool, float and double (no complex).
macro_rules! real_dispatch {
    ($dt:expr, $name:expr, $M:ident => $body:expr) => {
        $crate::native::cpu::binary_kernels::int_dispatch!(@or super::opmath_dtype($dt), $M => $body, other => match other {
            ScalarType::Bool => {
                type $M = bool;
                $body
            }
            ScalarType::Float => {
                type $M = f32;
                $body
            }
            ScalarType::Double => {
                type $M = f64;
                $body
            }
            _ => Err(not_implemented($name, $dt)),
        })
    };
}
pub(crate) use real_dispatch;

fn maximum_kernel(iter: &TensorIteratorBase) -> Result<()> {
    let dt = iter.computation_dtype()?;
    unsigned_dispatch!(@or dt, M => cpu_binary::<M, M>(iter, |a, b| a.max(b)), other => {
        real_dispatch!(other, "maximum_cpu", M => cpu_binary::<M, M>(iter, |a, b| {
            if a.is_nan() { a } else if b.is_nan() { b } else if a > b { a } else { b }
        }))
    })
}
stub!(MAXIMUM_STUB, "maximum_stub", BinaryFn, maximum_kernel);

fn minimum_kernel(iter: &TensorIteratorBase) -> Result<()> {
    let dt = iter.computation_dtype()?;
    unsigned_dispatch!(@or dt, M => cpu_binary::<M, M>(iter, |a, b| a.min(b)), other => {
        real_dispatch!(other, "minimum_cpu", M => cpu_binary::<M, M>(iter, |a, b| {
            if a.is_nan() { a } else if b.is_nan() { b } else if a < b { a } else { b }
        }))
    })
}
stub!(MINIMUM_STUB, "minimum_stub", BinaryFn, minimum_kernel);

/// Which comparison a kernel computes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CmpOp {
    Eq,
    Ne,
    Lt,
    Le,
    Gt,
    Ge,
}

/// Comparison kernels write bool (or, with a non-bool out=, the cast of the bool).
fn compare(iter: &TensorIteratorBase, op: CmpOp, name: &str) -> Result<()> {
    let dt = iter.computation_dtype()?;
    let complex = |f: fn(c128, c128) -> bool| cpu_binary::<c128, bool>(iter, f);
    if dt.is_complex() {
        return match op {
            CmpOp::Eq => complex(|a, b| a == b),
            CmpOp::Ne => complex(|a, b| a != b),
            _ => Err(not_implemented(name, dt)),
        };
    }
    // torch compares the unsigned types for equality only.
    if dt.is_barebones_unsigned() {
        return match op {
            CmpOp::Eq => unsigned_dispatch!(@or dt, M => {
                cpu_binary::<M, bool>(iter, #[inline(always)] |a, b| a == b)
            }, other => Err(not_implemented(name, other))),
            CmpOp::Ne => unsigned_dispatch!(@or dt, M => {
                cpu_binary::<M, bool>(iter, #[inline(always)] |a, b| a != b)
            }, other => Err(not_implemented(name, other))),
            _ => Err(not_implemented(name, dt)),
        };
    }
    real_dispatch!(dt, name, M => match op {
        CmpOp::Eq => cpu_binary::<M, bool>(iter, #[inline(always)] |a, b| a == b),
        CmpOp::Ne => cpu_binary::<M, bool>(iter, #[inline(always)] |a, b| a != b),
        CmpOp::Lt => cpu_binary::<M, bool>(iter, #[inline(always)] |a, b| a < b),
        CmpOp::Le => cpu_binary::<M, bool>(iter, #[inline(always)] |a, b| a <= b),
        CmpOp::Gt => cpu_binary::<M, bool>(iter, #[inline(always)] |a, b| a > b),
        CmpOp::Ge => cpu_binary::<M, bool>(iter, #[inline(always)] |a, b| a >= b),
    })
}
fn eq_kernel(iter: &TensorIteratorBase) -> Result<()> {
    compare(iter, CmpOp::Eq, "eq_cpu")
}
fn ne_kernel(iter: &TensorIteratorBase) -> Result<()> {
    compare(iter, CmpOp::Ne, "ne_cpu")
}
fn lt_kernel(iter: &TensorIteratorBase) -> Result<()> {
    compare(iter, CmpOp::Lt, "lt_cpu")
}
fn le_kernel(iter: &TensorIteratorBase) -> Result<()> {
    compare(iter, CmpOp::Le, "le_cpu")
}
fn gt_kernel(iter: &TensorIteratorBase) -> Result<()> {
    compare(iter, CmpOp::Gt, "gt_cpu")
}
fn ge_kernel(iter: &TensorIteratorBase) -> Result<()> {
    compare(iter, CmpOp::Ge, "ge_cpu")
}
stub!(EQ_STUB, "eq_stub", BinaryFn, eq_kernel);
stub!(NE_STUB, "ne_stub", BinaryFn, ne_kernel);
stub!(LT_STUB, "lt_stub", BinaryFn, lt_kernel);
stub!(LE_STUB, "le_stub", BinaryFn, le_kernel);
stub!(GT_STUB, "gt_stub", BinaryFn, gt_kernel);
stub!(GE_STUB, "ge_stub", BinaryFn, ge_kernel);

/// Logical ops read every input as bool (any dtype, cast by the driver) and write bool or the
/// output's dtype. Reading an input as bool gives what reading its value in the common dtype
/// would, so the driver casts from each input's own dtype; the common dtype only decides, as
/// PyTorch's `AT_DISPATCH_V2(iter.common_dtype(), ...)` does, which dtypes are refused (torch
/// has no complex32 logical kernels).
fn logical(iter: &TensorIteratorBase, name: &str, f: fn(bool, bool) -> bool) -> Result<()> {
    if let Some(dt) = iter.common_dtype() {
        refuse_complex32(name, dt)?;
        super::refuse_unsigned(name, dt)?;
    }
    cpu_binary::<bool, bool>(iter, f)
}
fn logical_and_kernel(iter: &TensorIteratorBase) -> Result<()> {
    logical(iter, "logical_and_cpu", |a, b| a & b)
}
fn logical_or_kernel(iter: &TensorIteratorBase) -> Result<()> {
    logical(iter, "logical_or_cpu", |a, b| a | b)
}
fn logical_xor_kernel(iter: &TensorIteratorBase) -> Result<()> {
    logical(iter, "logical_xor_cpu", |a, b| a ^ b)
}
stub!(
    LOGICAL_AND_STUB,
    "logical_and_stub",
    BinaryFn,
    logical_and_kernel
);
stub!(
    LOGICAL_OR_STUB,
    "logical_or_stub",
    BinaryFn,
    logical_or_kernel
);
stub!(
    LOGICAL_XOR_STUB,
    "logical_xor_stub",
    BinaryFn,
    logical_xor_kernel
);

/// Bitwise ops: integral and bool dtypes only.
pub trait Bits: Elem {
    fn and(self, o: Self) -> Self;
    fn or(self, o: Self) -> Self;
    fn xor(self, o: Self) -> Self;
    fn not(self) -> Self;
}
macro_rules! bits {
    ($($t:ty),*) => {$(
        impl Bits for $t {
            #[inline(always)] fn and(self, o: Self) -> Self { self & o }
            #[inline(always)] fn or(self, o: Self) -> Self { self | o }
            #[inline(always)] fn xor(self, o: Self) -> Self { self ^ o }
            #[inline(always)] fn not(self) -> Self { !self }
        }
    )*};
}
bits!(u8, i8, i16, i32, i64, bool, u16, u32, u64);

/// Integers and bool (PyTorch's AT_DISPATCH_INTEGRAL_TYPES_AND(kBool)).
macro_rules! bits_dispatch {
    ($dt:expr, $name:expr, $M:ident => $body:expr) => {
        $crate::native::cpu::binary_kernels::int_dispatch!(@or $dt, $M => $body, other => match other {
            ScalarType::Bool => {
                type $M = bool;
                $body
            }
            other => Err(not_implemented($name, other)),
        })
    };
}
pub(crate) use bits_dispatch;

fn bitwise_and_kernel(iter: &TensorIteratorBase) -> Result<()> {
    let dt = iter.computation_dtype()?;
    unsigned_dispatch!(@or dt, M => cpu_binary::<M, M>(iter, |a, b| a.and(b)), other => {
        bits_dispatch!(other, "bitwise_and_cpu", M => cpu_binary::<M, M>(iter, |a, b| a.and(b)))
    })
}
fn bitwise_or_kernel(iter: &TensorIteratorBase) -> Result<()> {
    let dt = iter.computation_dtype()?;
    unsigned_dispatch!(@or dt, M => cpu_binary::<M, M>(iter, |a, b| a.or(b)), other => {
        bits_dispatch!(other, "bitwise_or_cpu", M => cpu_binary::<M, M>(iter, |a, b| a.or(b)))
    })
}
fn bitwise_xor_kernel(iter: &TensorIteratorBase) -> Result<()> {
    let dt = iter.computation_dtype()?;
    unsigned_dispatch!(@or dt, M => cpu_binary::<M, M>(iter, |a, b| a.xor(b)), other => {
        bits_dispatch!(other, "bitwise_xor_cpu", M => cpu_binary::<M, M>(iter, |a, b| a.xor(b)))
    })
}
stub!(
    BITWISE_AND_STUB,
    "bitwise_and_stub",
    BinaryFn,
    bitwise_and_kernel
);
stub!(
    BITWISE_OR_STUB,
    "bitwise_or_stub",
    BinaryFn,
    bitwise_or_kernel
);
stub!(
    BITWISE_XOR_STUB,
    "bitwise_xor_stub",
    BinaryFn,
    bitwise_xor_kernel
);

/// `pow` for floats and complex (integer powers are computed by repeated squaring).
fn pow_kernel(iter: &TensorIteratorBase) -> Result<()> {
    let dt = iter.computation_dtype()?;
    refuse_complex32("pow", dt)?;
    match super::opmath_dtype(dt) {
        ScalarType::Float => cpu_binary::<f32, f32>(iter, |a, b| a.powf(b)),
        ScalarType::Double => cpu_binary::<f64, f64>(iter, |a, b| a.powf(b)),
        ScalarType::ComplexFloat => cpu_binary::<c64, c64>(iter, |a, b| {
            cast::<c128, c64>(cast::<c64, c128>(a).powc(cast::<c64, c128>(b)))
        }),
        ScalarType::ComplexDouble => cpu_binary::<c128, c128>(iter, |a, b| a.powc(b)),
        ScalarType::Bool => Err(not_implemented("pow", dt)),
        _ => int_dispatch!(dt, "pow", M => {
            cpu_binary::<M, M>(iter, |a: M, b: M| {
                let (base, mut exp) = (a.to_i64(), b.to_i64());
                if exp < 0 {
                    // c10's powi: a negative integer power is 1 for base 1, +-1 for -1, else 0
                    // (base 0 included: only pow(Tensor, Scalar) refuses negative exponents).
                    return M::from_i64(match base {
                        1 => 1,
                        -1 => if exp % 2 == 0 { 1 } else { -1 },
                        _ => 0,
                    });
                }
                let (mut result, mut b2) = (1i64, base);
                while exp > 0 {
                    if exp & 1 == 1 { result = result.wrapping_mul(b2); }
                    b2 = b2.wrapping_mul(b2);
                    exp >>= 1;
                }
                M::from_i64(result)
            })
        }),
    }
}
stub!(POW_STUB, "pow_tensor_tensor_stub", BinaryFn, pow_kernel);
