//! The kernels behind the reduction DispatchStubs (ATen's `ReduceOpsKernel.cpp`,
//! `SumKernel.cpp`): one [`ReduceOp`] per reduction, run by the driver of [`super::reduce`].
//!
//! Accumulation types are PyTorch's on the CPU: the "opmath" type of the input (f32 for half
//! and bfloat16, the type itself otherwise; integer sums wrap in the input type, which the
//! caller has already made int64 unless `dtype=` said otherwise), f64 for the Welford
//! accumulators of var and std, as `WelfordOps<scalar_t, double, ...>`.

use std::marker::PhantomData;

use ratten_core::dtype::{c128, c64};
use ratten_core::{Result, ScalarType};

use crate::dispatch_stub::DispatchStub;
use crate::native::cpu::binary_kernels::{stub, Arith};
use crate::native::cpu::elements::{cast, is_dtype, not_implemented, Elem};
use crate::native::cpu::reduce::{reduce_kernel, ReduceOp, MAX_OUTPUTS};
use crate::tensor_iterator::TensorIteratorBase;

/// A reduction stub's kernel.
pub type ReduceFn = fn(&TensorIteratorBase) -> Result<()>;
/// mean's kernel: the reduction of `count` elements per output.
pub type MeanFn = fn(&TensorIteratorBase, i64) -> Result<()>;
/// var / std: `correction` and whether to take the square root.
pub type StdVarFn = fn(&TensorIteratorBase, f64, bool) -> Result<()>;
/// norm: the order `p` (any real, +-inf included).
pub type NormFn = fn(&TensorIteratorBase, f64) -> Result<()>;

/// Writes `v` as output `k`'s element.
///
/// # Safety
/// `outs[k]` points at a writable `T`.
#[inline(always)]
unsafe fn write<T: Elem>(outs: &[*mut u8; MAX_OUTPUTS], k: usize, v: T) {
    // SAFETY: per the contract.
    unsafe { outs[k].cast::<T>().write(v) };
}

/// Runs `$body` with `$T` bound to the Rust type of `$dt` and `$M` to its opmath type.
macro_rules! dispatch_with_opmath {
    ($dt:expr, $name:expr, $T:ident, $M:ident => $body:expr) => {{
        use half::{bf16, f16};
        match $dt {
            ScalarType::Byte => {
                type $T = u8;
                type $M = u8;
                $body
            }
            ScalarType::Char => {
                type $T = i8;
                type $M = i8;
                $body
            }
            ScalarType::Short => {
                type $T = i16;
                type $M = i16;
                $body
            }
            ScalarType::Int => {
                type $T = i32;
                type $M = i32;
                $body
            }
            ScalarType::Long => {
                type $T = i64;
                type $M = i64;
                $body
            }
            ScalarType::Half => {
                type $T = f16;
                type $M = f32;
                $body
            }
            ScalarType::BFloat16 => {
                type $T = bf16;
                type $M = f32;
                $body
            }
            ScalarType::Float => {
                type $T = f32;
                type $M = f32;
                $body
            }
            ScalarType::Double => {
                type $T = f64;
                type $M = f64;
                $body
            }
            ScalarType::ComplexFloat => {
                type $T = c64;
                type $M = c64;
                $body
            }
            ScalarType::ComplexDouble => {
                type $T = c128;
                type $M = c128;
                $body
            }
            ScalarType::Bool => {
                type $T = bool;
                type $M = bool;
                $body
            }
            d => Err(not_implemented($name, d)),
        }
    }};
}

pub(crate) use dispatch_with_opmath;

/// Runs `$body` with `$T` / `$M` for the real (non-complex) dtypes, bool included.
macro_rules! dispatch_real_with_opmath {
    ($dt:expr, $name:expr, $T:ident, $M:ident => $body:expr) => {{
        use half::{bf16, f16};
        match $dt {
            ScalarType::Byte => {
                type $T = u8;
                type $M = u8;
                $body
            }
            ScalarType::Char => {
                type $T = i8;
                type $M = i8;
                $body
            }
            ScalarType::Short => {
                type $T = i16;
                type $M = i16;
                $body
            }
            ScalarType::Int => {
                type $T = i32;
                type $M = i32;
                $body
            }
            ScalarType::Long => {
                type $T = i64;
                type $M = i64;
                $body
            }
            ScalarType::Half => {
                type $T = f16;
                type $M = f32;
                $body
            }
            ScalarType::BFloat16 => {
                type $T = bf16;
                type $M = f32;
                $body
            }
            ScalarType::Float => {
                type $T = f32;
                type $M = f32;
                $body
            }
            ScalarType::Double => {
                type $T = f64;
                type $M = f64;
                $body
            }
            ScalarType::Bool => {
                type $T = bool;
                type $M = bool;
                $body
            }
            d => Err(not_implemented($name, d)),
        }
    }};
}
pub(crate) use dispatch_real_with_opmath;

// ---------------------------------------------------------------------------------------------
// sum, nansum, prod, mean
// ---------------------------------------------------------------------------------------------

/// `acc + x` (`NANSUM`: NaN counts as 0), `acc * x` (`PROD`), in the opmath type `M`; the result
/// divided by `count` when it is not 0 (mean).
struct Accumulate<T, M, const KIND: u8> {
    count: i64,
    _t: PhantomData<(T, M)>,
}

const SUM: u8 = 0;
const NANSUM: u8 = 1;
const PROD: u8 = 2;

/// The division of a mean, in the opmath type.
pub trait DivCount: Arith {
    fn div_count(self, n: i64) -> Self;
}
macro_rules! div_count_int {
    ($($t:ty),*) => {$(
        impl DivCount for $t {
            #[inline(always)]
            fn div_count(self, n: i64) -> Self { (self as i64).wrapping_div(n.max(1)) as $t }
        }
    )*};
}
div_count_int!(u8, i8, i16, i32, i64);
impl DivCount for bool {
    #[inline(always)]
    fn div_count(self, _n: i64) -> Self {
        self
    }
}
impl DivCount for f32 {
    #[inline(always)]
    fn div_count(self, n: i64) -> Self {
        self / n as f32
    }
}
impl DivCount for f64 {
    #[inline(always)]
    fn div_count(self, n: i64) -> Self {
        self / n as f64
    }
}
impl DivCount for c64 {
    #[inline(always)]
    fn div_count(self, n: i64) -> Self {
        self / n as f32
    }
}
impl DivCount for c128 {
    #[inline(always)]
    fn div_count(self, n: i64) -> Self {
        self / n as f64
    }
}

impl<T: Elem, M: Elem + DivCount, const KIND: u8> ReduceOp for Accumulate<T, M, KIND> {
    type In = T;
    type Acc = M;
    const REORDERABLE: bool = true;
    #[inline(always)]
    fn identity(&self) -> M {
        M::from_i64(i64::from(KIND == PROD))
    }
    #[inline(always)]
    fn reduce(&self, acc: M, x: T, _idx: i64) -> M {
        let x: M = cast(x);
        match KIND {
            // Half and bfloat16 products round to their type at each step, as PyTorch's
            // (whose prod accumulates in the input type): an overflow is inf, then NaN by 0.
            PROD if is_dtype::<T>(ScalarType::Half) || is_dtype::<T>(ScalarType::BFloat16) => {
                cast(cast::<M, T>(acc.mul(x)))
            }
            PROD => acc.mul(x),
            // NaN is the one value unequal to itself.
            #[allow(clippy::eq_op)]
            NANSUM if x != x => acc,
            _ => acc.add(x),
        }
    }
    #[inline(always)]
    fn combine(&self, a: M, b: M) -> M {
        if KIND == PROD && (is_dtype::<T>(ScalarType::Half) || is_dtype::<T>(ScalarType::BFloat16))
        {
            cast(cast::<M, T>(a.mul(b)))
        } else if KIND == PROD {
            a.mul(b)
        } else {
            a.add(b)
        }
    }
    #[inline(always)]
    unsafe fn project(&self, acc: M, outs: &[*mut u8; MAX_OUTPUTS]) {
        let v = if self.count > 0 {
            acc.div_count(self.count)
        } else {
            acc
        };
        // SAFETY: output 0 has dtype `T` (checked by the kernel).
        unsafe { write::<T>(outs, 0, cast(v)) };
    }
}

fn accumulate_kernel<const KIND: u8>(
    iter: &TensorIteratorBase,
    name: &str,
    count: i64,
) -> Result<()> {
    let dt = iter.dtype(0);
    check_input_dtype(iter, dt, name)?;
    dispatch_with_opmath!(dt, name, T, M => reduce_kernel(
        iter,
        Accumulate::<T, M, KIND> { count, _t: PhantomData }
    ))
}

/// The input must already have the output's dtype (the ops convert it, as PyTorch's
/// `make_reduction` does).
fn check_input_dtype(iter: &TensorIteratorBase, dt: ScalarType, name: &str) -> Result<()> {
    let input = iter.dtype(iter.noutputs());
    if input != dt {
        return Err(ratten_core::Error::runtime(format!(
            "{name}: expected the input converted to {dt}, got {input}"
        )));
    }
    Ok(())
}

fn sum_kernel(iter: &TensorIteratorBase) -> Result<()> {
    accumulate_kernel::<SUM>(iter, "sum_cpu", 0)
}
fn nansum_kernel(iter: &TensorIteratorBase) -> Result<()> {
    accumulate_kernel::<NANSUM>(iter, "nansum_cpu", 0)
}
fn prod_kernel(iter: &TensorIteratorBase) -> Result<()> {
    accumulate_kernel::<PROD>(iter, "prod_cpu", 0)
}
fn mean_kernel(iter: &TensorIteratorBase, count: i64) -> Result<()> {
    accumulate_kernel::<SUM>(iter, "mean_cpu", count)
}
stub!(
    /// `sum_stub`.
    SUM_STUB, "sum_stub", ReduceFn, sum_kernel
);
stub!(
    /// `nansum_stub`.
    NANSUM_STUB, "nansum_stub", ReduceFn, nansum_kernel
);
stub!(
    /// `prod_stub`.
    PROD_STUB, "prod_stub", ReduceFn, prod_kernel
);
stub!(
    /// `mean_stub`: the sum divided by the count, in the accumulation type.
    MEAN_STUB, "mean_stub", MeanFn, mean_kernel
);

// ---------------------------------------------------------------------------------------------
// amax, amin, max / min (values and indices), argmax, argmin
// ---------------------------------------------------------------------------------------------

/// Ordering of the opmath types for the extrema: NaN propagates (is the extremum).
pub trait Extremum: Elem {
    const LOWEST: Self;
    const HIGHEST: Self;
    fn is_nan(self) -> bool;
    fn gt(self, o: Self) -> bool;
    fn lt(self, o: Self) -> bool;
}
macro_rules! extremum {
    ($($t:ty, $lo:expr, $hi:expr, $nan:expr;)*) => {$(
        impl Extremum for $t {
            const LOWEST: Self = $lo;
            const HIGHEST: Self = $hi;
            #[inline(always)]
            #[allow(clippy::eq_op)]
            fn is_nan(self) -> bool { $nan(self) }
            #[inline(always)]
            fn gt(self, o: Self) -> bool { self > o }
            #[inline(always)]
            fn lt(self, o: Self) -> bool { self < o }
        }
    )*};
}
extremum! {
    u8, u8::MIN, u8::MAX, |_| false;
    i8, i8::MIN, i8::MAX, |_| false;
    i16, i16::MIN, i16::MAX, |_| false;
    i32, i32::MIN, i32::MAX, |_| false;
    i64, i64::MIN, i64::MAX, |_| false;
    f32, f32::NEG_INFINITY, f32::INFINITY, |x: f32| x.is_nan();
    f64, f64::NEG_INFINITY, f64::INFINITY, |x: f64| x.is_nan();
    bool, false, true, |_| false;
}

/// amax (`MAX`) and amin: the value only, NaN propagating (`max_impl` / `min_impl`).
struct Extreme<T, M, const MAX: bool>(PhantomData<(T, M)>);

impl<T: Elem, M: Extremum, const MAX: bool> ReduceOp for Extreme<T, M, MAX> {
    type In = T;
    type Acc = M;
    const REORDERABLE: bool = true;
    #[inline(always)]
    fn identity(&self) -> M {
        if MAX {
            M::LOWEST
        } else {
            M::HIGHEST
        }
    }
    #[inline(always)]
    fn reduce(&self, acc: M, x: T, _idx: i64) -> M {
        self.combine(acc, cast(x))
    }
    #[inline(always)]
    fn combine(&self, a: M, b: M) -> M {
        // `max_impl`: a NaN stays; else the larger, a NaN `b` included (compare-and-blend).
        let better = if MAX { b.gt(a) } else { b.lt(a) };
        if !a.is_nan() && (better || b.is_nan()) {
            b
        } else {
            a
        }
    }
    #[inline(always)]
    unsafe fn project(&self, acc: M, outs: &[*mut u8; MAX_OUTPUTS]) {
        // SAFETY: output 0 has dtype `T`.
        unsafe { write::<T>(outs, 0, cast(acc)) };
    }
}

/// The value and index of the first extremum (NaN counting as the extremum):
/// `ArgMaxOps` / `ArgMinOps` and `MaxOps` with indices. `VALUES`: output 0 is the value and
/// output 1 the index (max.dim), else output 0 is the index (argmax).
struct ArgExtreme<T, M, const MAX: bool, const VALUES: bool>(PhantomData<(T, M)>);

impl<T: Elem, M: Extremum, const MAX: bool, const VALUES: bool> ArgExtreme<T, M, MAX, VALUES> {
    /// `greater_or_nan(a, b, idx_a, idx_b)` (`less_or_nan`): whether `a` wins over `b`.
    #[inline(always)]
    fn wins(a: (M, i64), b: (M, i64)) -> bool {
        if a.0.is_nan() {
            return !b.0.is_nan() || a.1 < b.1;
        }
        if b.0.is_nan() {
            return false;
        }
        if a.0 == b.0 {
            a.1 < b.1
        } else if MAX {
            a.0.gt(b.0)
        } else {
            a.0.lt(b.0)
        }
    }
}

impl<T: Elem, M: Extremum, const MAX: bool, const VALUES: bool> ReduceOp
    for ArgExtreme<T, M, MAX, VALUES>
{
    type In = T;
    type Acc = (M, i64);
    const REORDERABLE: bool = false;
    const VECTORISED: bool = false;
    /// The identity loses to every element: the index of the first one is kept.
    #[inline(always)]
    fn identity(&self) -> (M, i64) {
        (if MAX { M::LOWEST } else { M::HIGHEST }, i64::MAX)
    }
    #[inline(always)]
    fn reduce(&self, acc: (M, i64), x: T, idx: i64) -> (M, i64) {
        self.combine(acc, (cast(x), idx))
    }
    #[inline(always)]
    fn combine(&self, a: (M, i64), b: (M, i64)) -> (M, i64) {
        if Self::wins(a, b) {
            a
        } else {
            b
        }
    }
    #[inline(always)]
    unsafe fn project(&self, acc: (M, i64), outs: &[*mut u8; MAX_OUTPUTS]) {
        // SAFETY: the outputs have dtypes (`T`, int64) or (int64).
        unsafe {
            if VALUES {
                write::<T>(outs, 0, cast(acc.0));
                write::<i64>(outs, 1, acc.1);
            } else {
                write::<i64>(outs, 0, acc.1);
            }
        }
    }
}

fn input_dtype(iter: &TensorIteratorBase) -> ScalarType {
    iter.dtype(iter.noutputs())
}

fn amax_kernel(iter: &TensorIteratorBase) -> Result<()> {
    dispatch_real_with_opmath!(input_dtype(iter), "max_all", T, M =>
        reduce_kernel(iter, Extreme::<T, M, true>(PhantomData)))
}
fn amin_kernel(iter: &TensorIteratorBase) -> Result<()> {
    dispatch_real_with_opmath!(input_dtype(iter), "min_all", T, M =>
        reduce_kernel(iter, Extreme::<T, M, false>(PhantomData)))
}
fn argmax_kernel(iter: &TensorIteratorBase) -> Result<()> {
    dispatch_real_with_opmath!(input_dtype(iter), "argmax_cpu", T, M =>
        reduce_kernel(iter, ArgExtreme::<T, M, true, false>(PhantomData)))
}
fn argmin_kernel(iter: &TensorIteratorBase) -> Result<()> {
    dispatch_real_with_opmath!(input_dtype(iter), "argmin_cpu", T, M =>
        reduce_kernel(iter, ArgExtreme::<T, M, false, false>(PhantomData)))
}
fn max_values_kernel(iter: &TensorIteratorBase) -> Result<()> {
    dispatch_real_with_opmath!(input_dtype(iter), "max_cpu", T, M =>
        reduce_kernel(iter, ArgExtreme::<T, M, true, true>(PhantomData)))
}
fn min_values_kernel(iter: &TensorIteratorBase) -> Result<()> {
    dispatch_real_with_opmath!(input_dtype(iter), "min_cpu", T, M =>
        reduce_kernel(iter, ArgExtreme::<T, M, false, true>(PhantomData)))
}
stub!(
    /// `max_values_stub` (amax).
    AMAX_STUB, "max_values_stub", ReduceFn, amax_kernel
);
stub!(
    /// `min_values_stub` (amin).
    AMIN_STUB, "min_values_stub", ReduceFn, amin_kernel
);
stub!(
    /// `argmax_stub`.
    ARGMAX_STUB, "argmax_stub", ReduceFn, argmax_kernel
);
stub!(
    /// `argmin_stub`.
    ARGMIN_STUB, "argmin_stub", ReduceFn, argmin_kernel
);
stub!(
    /// `max_stub`: values and indices along one dim.
    MAX_STUB, "max_stub", ReduceFn, max_values_kernel
);
stub!(
    /// `min_stub`: values and indices along one dim.
    MIN_STUB, "min_stub", ReduceFn, min_values_kernel
);

/// aminmax: the minimum (output 0) and maximum (output 1), NaN propagating.
struct MinMax<T, M>(PhantomData<(T, M)>);

impl<T: Elem, M: Extremum> ReduceOp for MinMax<T, M> {
    type In = T;
    type Acc = (M, M);
    const REORDERABLE: bool = true;
    #[inline(always)]
    fn identity(&self) -> (M, M) {
        (M::HIGHEST, M::LOWEST)
    }
    #[inline(always)]
    fn reduce(&self, acc: (M, M), x: T, _idx: i64) -> (M, M) {
        let x: M = cast(x);
        self.combine(acc, (x, x))
    }
    #[inline(always)]
    fn combine(&self, a: (M, M), b: (M, M)) -> (M, M) {
        (
            Extreme::<T, M, false>(PhantomData).combine(a.0, b.0),
            Extreme::<T, M, true>(PhantomData).combine(a.1, b.1),
        )
    }
    #[inline(always)]
    unsafe fn project(&self, acc: (M, M), outs: &[*mut u8; MAX_OUTPUTS]) {
        // SAFETY: both outputs have dtype `T`.
        unsafe {
            write::<T>(outs, 0, cast(acc.0));
            write::<T>(outs, 1, cast(acc.1));
        }
    }
}
fn aminmax_kernel(iter: &TensorIteratorBase) -> Result<()> {
    dispatch_real_with_opmath!(input_dtype(iter), "aminmax_cpu", T, M =>
        reduce_kernel(iter, MinMax::<T, M>(PhantomData)))
}
stub!(
    /// `aminmax_stub` / `aminmax_allreduce_stub`.
    AMINMAX_STUB, "aminmax_stub", ReduceFn, aminmax_kernel
);

// ---------------------------------------------------------------------------------------------
// all, any, count_nonzero
// ---------------------------------------------------------------------------------------------

/// all (`ALL`) / any of the elements' truth values, written as bool or uint8 (`O`).
struct Truth<T, O, const ALL: bool>(PhantomData<(T, O)>);

impl<T: Elem, O: Elem, const ALL: bool> ReduceOp for Truth<T, O, ALL> {
    type In = T;
    type Acc = bool;
    const REORDERABLE: bool = true;
    const VECTORISED: bool = false;
    #[inline(always)]
    fn identity(&self) -> bool {
        ALL
    }
    #[inline(always)]
    fn reduce(&self, acc: bool, x: T, _idx: i64) -> bool {
        self.combine(acc, x.to_bool())
    }
    #[inline(always)]
    fn combine(&self, a: bool, b: bool) -> bool {
        if ALL {
            a & b
        } else {
            a | b
        }
    }
    #[inline(always)]
    unsafe fn project(&self, acc: bool, outs: &[*mut u8; MAX_OUTPUTS]) {
        // SAFETY: output 0 has dtype `O`.
        unsafe { write::<O>(outs, 0, O::from_bool(acc)) };
    }
}

fn truth_kernel<const ALL: bool>(iter: &TensorIteratorBase) -> Result<()> {
    let name = if ALL { "all_cpu" } else { "any_cpu" };
    // torch's any / all take the barebones unsigned types too (into bool).
    macro_rules! unsigned {
        ($t:ty) => {
            reduce_kernel(iter, Truth::<$t, bool, ALL>(PhantomData))
        };
    }
    match (iter.dtype(0), input_dtype(iter)) {
        (ScalarType::Bool, ScalarType::UInt16) => return unsigned!(u16),
        (ScalarType::Bool, ScalarType::UInt32) => return unsigned!(u32),
        (ScalarType::Bool, ScalarType::UInt64) => return unsigned!(u64),
        _ => {}
    }
    match iter.dtype(0) {
        ScalarType::Byte => dispatch_with_opmath!(input_dtype(iter), name, T, _M =>
            reduce_kernel(iter, Truth::<T, u8, ALL>(PhantomData))),
        _ => dispatch_with_opmath!(input_dtype(iter), name, T, _M =>
            reduce_kernel(iter, Truth::<T, bool, ALL>(PhantomData))),
    }
}
fn all_kernel(iter: &TensorIteratorBase) -> Result<()> {
    truth_kernel::<true>(iter)
}
fn any_kernel(iter: &TensorIteratorBase) -> Result<()> {
    truth_kernel::<false>(iter)
}
stub!(
    /// `and_stub` (all).
    AND_STUB, "and_stub", ReduceFn, all_kernel
);
stub!(
    /// `or_stub` (any).
    OR_STUB, "or_stub", ReduceFn, any_kernel
);

/// count_nonzero: the number of elements unequal to zero, as int64.
struct CountNonzero<T>(PhantomData<T>);

impl<T: Elem> ReduceOp for CountNonzero<T> {
    type In = T;
    type Acc = i64;
    const REORDERABLE: bool = true;
    #[inline(always)]
    fn identity(&self) -> i64 {
        0
    }
    #[inline(always)]
    fn reduce(&self, acc: i64, x: T, _idx: i64) -> i64 {
        acc + i64::from(x != T::default())
    }
    #[inline(always)]
    fn combine(&self, a: i64, b: i64) -> i64 {
        a + b
    }
    #[inline(always)]
    unsafe fn project(&self, acc: i64, outs: &[*mut u8; MAX_OUTPUTS]) {
        // SAFETY: output 0 is int64.
        unsafe { write::<i64>(outs, 0, acc) };
    }
}
fn count_nonzero_kernel(iter: &TensorIteratorBase) -> Result<()> {
    // torch counts through its nonzero kernel for these.
    super::refuse_unsigned("nonzero_count_cpu", input_dtype(iter))?;
    dispatch_with_opmath!(input_dtype(iter), "count_nonzero_cpu", T, _M =>
        reduce_kernel(iter, CountNonzero::<T>(PhantomData)))
}
stub!(
    /// count_nonzero's reduction.
    COUNT_NONZERO_STUB, "count_nonzero_stub", ReduceFn, count_nonzero_kernel
);

// ---------------------------------------------------------------------------------------------
// var, std, var_mean, std_mean
// ---------------------------------------------------------------------------------------------

/// `WelfordData<double, int64_t>`, with the mean's imaginary part for complex inputs.
#[derive(Clone, Copy, Debug, Default)]
pub struct Welford {
    mean: f64,
    mean_im: f64,
    m2: f64,
    n: f64,
}

/// An element as Welford's algorithm reads it: real types, and complex ones whose variance is
/// that of the real part plus that of the imaginary part (PyTorch computes the two and adds
/// them; the sums of squares are the same).
pub trait WelfordInput: Elem {
    const COMPLEX: bool;
    /// The real dtype's Rust type, which the variance is written as.
    type Real: Elem;
    fn parts(self) -> (f64, f64);
    fn from_parts(re: f64, im: f64) -> Self;
}
macro_rules! welford_real {
    ($($t:ty),*) => {$(
        impl WelfordInput for $t {
            const COMPLEX: bool = false;
            type Real = $t;
            #[inline(always)]
            fn parts(self) -> (f64, f64) { (self.to_f64(), 0.0) }
            #[inline(always)]
            fn from_parts(re: f64, _im: f64) -> Self { Self::from_f64(re) }
        }
    )*};
}
welford_real!(f32, f64, half::f16, half::bf16);
impl WelfordInput for c64 {
    const COMPLEX: bool = true;
    type Real = f32;
    #[inline(always)]
    fn parts(self) -> (f64, f64) {
        (self.re as f64, self.im as f64)
    }
    #[inline(always)]
    fn from_parts(re: f64, im: f64) -> Self {
        c64::new(re as f32, im as f32)
    }
}
impl WelfordInput for c128 {
    const COMPLEX: bool = true;
    type Real = f64;
    #[inline(always)]
    fn parts(self) -> (f64, f64) {
        (self.re, self.im)
    }
    #[inline(always)]
    fn from_parts(re: f64, im: f64) -> Self {
        c128::new(re, im)
    }
}

/// `WelfordOps`: the variance (square-rooted for std) at output 0, in the real type, and with
/// two outputs the mean at output 1 (var_mean), in the input's type.
struct WelfordOp<T> {
    correction: f64,
    take_sqrt: bool,
    with_mean: bool,
    _t: PhantomData<T>,
}

impl<T: WelfordInput> ReduceOp for WelfordOp<T> {
    type In = T;
    type Acc = Welford;
    const REORDERABLE: bool = true;
    #[inline(always)]
    fn identity(&self) -> Welford {
        Welford::default()
    }
    #[inline(always)]
    fn reduce(&self, acc: Welford, x: T, _idx: i64) -> Welford {
        let (re, im) = x.parts();
        let n = acc.n + 1.0;
        let delta = re - acc.mean;
        let mean = acc.mean + delta / n;
        let mut m2 = acc.m2 + delta * (re - mean);
        let mut mean_im = 0.0;
        if T::COMPLEX {
            let delta_im = im - acc.mean_im;
            mean_im = acc.mean_im + delta_im / n;
            m2 += delta_im * (im - mean_im);
        }
        Welford {
            mean,
            mean_im,
            m2,
            n,
        }
    }
    /// A leaf in two passes (PyTorch's CPU path takes two passes too): the mean from a sum in
    /// f64 lanes, then the sum of squared deviations; the leaf is in L1 for the second.
    #[inline(always)]
    unsafe fn reduce_contiguous(&self, x: *const T, n: usize, _idx: i64) -> Option<Welford> {
        const L: usize = 8;
        if n == 0 {
            return Some(Welford::default());
        }
        let full = n / L * L;
        let (mut s, mut s_im) = ([0f64; L], [0f64; L]);
        for i in (0..full).step_by(L) {
            for l in 0..L {
                // SAFETY: i + l < n.
                let (re, im) = unsafe { T::read(x.add(i + l).cast()) }.parts();
                s[l] += re;
                if T::COMPLEX {
                    s_im[l] += im;
                }
            }
        }
        let (mut sum, mut sum_im) = (s.iter().sum::<f64>(), s_im.iter().sum::<f64>());
        for i in full..n {
            // SAFETY: i < n.
            let (re, im) = unsafe { T::read(x.add(i).cast()) }.parts();
            sum += re;
            sum_im += im;
        }
        let nf = n as f64;
        let (mean, mean_im) = (sum / nf, if T::COMPLEX { sum_im / nf } else { 0.0 });
        let mut q = [0f64; L];
        for i in (0..full).step_by(L) {
            for (l, ql) in q.iter_mut().enumerate() {
                // SAFETY: i + l < n.
                let (re, im) = unsafe { T::read(x.add(i + l).cast()) }.parts();
                let d = re - mean;
                *ql += d * d;
                if T::COMPLEX {
                    let e = im - mean_im;
                    *ql += e * e;
                }
            }
        }
        let mut m2 = q.iter().sum::<f64>();
        for i in full..n {
            // SAFETY: i < n.
            let (re, im) = unsafe { T::read(x.add(i).cast()) }.parts();
            m2 += (re - mean) * (re - mean);
            if T::COMPLEX {
                m2 += (im - mean_im) * (im - mean_im);
            }
        }
        Some(Welford {
            mean,
            mean_im,
            m2,
            n: nf,
        })
    }
    /// Every accumulator of the row has the same count: `1 / n` once, a product per element
    /// (a division per element kept the loop at a fifth of the memory bandwidth).
    #[inline(always)]
    unsafe fn reduce_row(&self, accs: &mut [Welford], x: *const T, _idx: i64) {
        let Some(first) = accs.first() else { return };
        let n = first.n + 1.0;
        let inv = 1.0 / n;
        for (j, acc) in accs.iter_mut().enumerate() {
            // SAFETY: per the trait's contract.
            let (re, im) = unsafe { T::read(x.add(j).cast()) }.parts();
            let delta = re - acc.mean;
            let mean = acc.mean + delta * inv;
            let mut m2 = acc.m2 + delta * (re - mean);
            let mut mean_im = 0.0;
            if T::COMPLEX {
                let delta_im = im - acc.mean_im;
                mean_im = acc.mean_im + delta_im * inv;
                m2 += delta_im * (im - mean_im);
            }
            *acc = Welford {
                mean,
                mean_im,
                m2,
                n,
            };
        }
    }
    #[inline(always)]
    fn combine(&self, a: Welford, b: Welford) -> Welford {
        if a.n == 0.0 {
            return b;
        }
        if b.n == 0.0 {
            return a;
        }
        let n = a.n + b.n;
        let nb_over_n = b.n / n;
        let delta = b.mean - a.mean;
        let mut m2 = a.m2 + b.m2 + delta * delta * a.n * nb_over_n;
        let mut mean_im = 0.0;
        if T::COMPLEX {
            let delta_im = b.mean_im - a.mean_im;
            m2 += delta_im * delta_im * a.n * nb_over_n;
            mean_im = a.mean_im + delta_im * nb_over_n;
        }
        Welford {
            mean: a.mean + delta * nb_over_n,
            mean_im,
            m2,
            n,
        }
    }
    #[inline(always)]
    unsafe fn project(&self, acc: Welford, outs: &[*mut u8; MAX_OUTPUTS]) {
        let divisor = if acc.n > self.correction {
            acc.n - self.correction
        } else {
            0.0
        };
        let var = acc.m2 / divisor;
        let v = if self.take_sqrt { var.sqrt() } else { var };
        // SAFETY: output 0 has the real dtype of `T`, output 1 (if any) dtype `T`.
        unsafe {
            write::<T::Real>(outs, 0, T::Real::from_f64(v));
            if self.with_mean {
                write::<T>(outs, 1, T::from_parts(acc.mean, acc.mean_im));
            }
        }
    }
}

fn std_var_kernel(iter: &TensorIteratorBase, correction: f64, take_sqrt: bool) -> Result<()> {
    let with_mean = iter.noutputs() == 2;
    macro_rules! run {
        ($T:ty) => {
            reduce_kernel(
                iter,
                WelfordOp::<$T> {
                    correction,
                    take_sqrt,
                    with_mean,
                    _t: PhantomData,
                },
            )
        };
    }
    match input_dtype(iter) {
        ScalarType::Half => run!(half::f16),
        ScalarType::BFloat16 => run!(half::bf16),
        ScalarType::Float => run!(f32),
        ScalarType::Double => run!(f64),
        ScalarType::ComplexFloat => run!(c64),
        ScalarType::ComplexDouble => run!(c128),
        d => Err(not_implemented("std_cpu", d)),
    }
}
stub!(
    /// `std_var_stub` (var, std, var_mean, std_mean).
    STD_VAR_STUB, "std_var_stub", StdVarFn, std_var_kernel
);

// ---------------------------------------------------------------------------------------------
// norm
// ---------------------------------------------------------------------------------------------

/// The vector norms of `linalg_vector_norm`: `sum(|x|^p)^(1/p)`, with 0 (count of nonzeros),
/// 1, 2, +inf (max |x|) and -inf (min |x|) computed as PyTorch's special cases. Reads `T`
/// (complex as its modulus), accumulates in the real opmath type, writes the real type `R`.
struct NormOp<T, R> {
    p: f64,
    _t: PhantomData<(T, R)>,
}

/// The modulus of an element, in f64 for f64 and complex128 inputs, f32 otherwise (stored
/// as f64: the accumulation below rounds to the input's precision per step).
pub trait Modulus: Elem {
    /// Whether the accumulation is in f64 (double and complex double) rather than f32.
    const WIDE: bool;
    fn modulus(self) -> f64;
}
macro_rules! modulus_real {
    ($($t:ty, $wide:expr;)*) => {$(
        impl Modulus for $t {
            const WIDE: bool = $wide;
            #[inline(always)]
            fn modulus(self) -> f64 { self.to_f64().abs() }
        }
    )*};
}
modulus_real! {
    f32, false;
    f64, true;
    half::f16, false;
    half::bf16, false;
}
impl Modulus for c64 {
    const WIDE: bool = false;
    #[inline(always)]
    fn modulus(self) -> f64 {
        self.norm() as f64
    }
}
impl Modulus for c128 {
    const WIDE: bool = true;
    #[inline(always)]
    fn modulus(self) -> f64 {
        self.norm()
    }
}

impl<T: Modulus, R: Elem> NormOp<T, R> {
    /// Rounds to the accumulation precision.
    #[inline(always)]
    fn round(v: f64) -> f64 {
        if T::WIDE {
            v
        } else {
            v as f32 as f64
        }
    }
}

impl<T: Modulus, R: Elem> ReduceOp for NormOp<T, R> {
    type In = T;
    type Acc = f64;
    const REORDERABLE: bool = true;
    #[inline(always)]
    fn identity(&self) -> f64 {
        if self.p == f64::NEG_INFINITY {
            f64::INFINITY
        } else {
            0.0
        }
    }
    #[inline(always)]
    fn reduce(&self, acc: f64, x: T, _idx: i64) -> f64 {
        let a = Self::round(x.modulus());
        let term = if self.p == 0.0 {
            f64::from(a != 0.0)
        } else if self.p == 1.0 {
            a
        } else if self.p == 2.0 {
            Self::round(a * a)
        } else if self.p.is_infinite() {
            return self.combine(acc, a);
        } else {
            Self::round(a.powf(self.p))
        };
        Self::round(acc + term)
    }
    #[inline(always)]
    fn combine(&self, a: f64, b: f64) -> f64 {
        if self.p == f64::INFINITY {
            if a.is_nan() || b.is_nan() {
                f64::NAN
            } else {
                a.max(b)
            }
        } else if self.p == f64::NEG_INFINITY {
            if a.is_nan() || b.is_nan() {
                f64::NAN
            } else {
                a.min(b)
            }
        } else {
            Self::round(a + b)
        }
    }
    #[inline(always)]
    unsafe fn project(&self, acc: f64, outs: &[*mut u8; MAX_OUTPUTS]) {
        let v = if self.p == 0.0 || self.p == 1.0 || self.p.is_infinite() {
            acc
        } else if self.p == 2.0 {
            acc.sqrt()
        } else {
            acc.powf(1.0 / self.p)
        };
        // SAFETY: output 0 has dtype `R`.
        unsafe { write::<R>(outs, 0, R::from_f64(Self::round(v))) };
    }
}

fn norm_kernel(iter: &TensorIteratorBase, p: f64) -> Result<()> {
    use half::{bf16, f16};
    match input_dtype(iter) {
        ScalarType::Half => reduce_kernel(iter, NormOp::<f16, f16> { p, _t: PhantomData }),
        ScalarType::BFloat16 => reduce_kernel(iter, NormOp::<bf16, bf16> { p, _t: PhantomData }),
        ScalarType::Float => reduce_kernel(iter, NormOp::<f32, f32> { p, _t: PhantomData }),
        ScalarType::Double => reduce_kernel(iter, NormOp::<f64, f64> { p, _t: PhantomData }),
        ScalarType::ComplexFloat => reduce_kernel(iter, NormOp::<c64, f32> { p, _t: PhantomData }),
        ScalarType::ComplexDouble => {
            reduce_kernel(iter, NormOp::<c128, f64> { p, _t: PhantomData })
        }
        d => Err(not_implemented("norm_cpu", d)),
    }
}
stub!(
    /// `norm_stub`.
    NORM_STUB, "norm_stub", NormFn, norm_kernel
);
