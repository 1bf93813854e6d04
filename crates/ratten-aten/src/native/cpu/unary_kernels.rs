//! Unary, ternary and copy kernels (UnaryOpsKernel.cpp, PointwiseOpsKernel.cpp,
//! TensorCompareKernel.cpp, Copy.cpp) and their DispatchStubs.

// The generic kernels compare values of the computation type, which is `bool` for the bool
// dtype; clippy's bool-comparison lint fires on those instantiations.
#![allow(clippy::bool_comparison)]

use ratten_core::dtype::{c128, c64};
use ratten_core::{Result, Scalar, ScalarType};

use super::binary_kernels::{
    bits_dispatch, real_dispatch, stub, unsigned_dispatch, Arith, Bits, Real,
};
use super::{
    cast, cpu_binary, cpu_kernel_n, cpu_ternary, cpu_unary, not_implemented, refuse_complex32,
    vec_math, Elem, OpN,
};
use crate::dispatch_opmath;
use crate::dispatch_stub::DispatchStub;
use crate::tensor_iterator::TensorIteratorBase;

/// `unary_fn` (the stubs of the unary family).
pub type UnaryFn = fn(&TensorIteratorBase) -> Result<()>;
/// Kernels that take a scalar (fill, lerp weight, addcmul value).
pub type ScalarFn = fn(&TensorIteratorBase, &Scalar) -> Result<()>;
/// `clamp_scalar_stub`: optional min and max.
pub type ClampScalarFn = fn(&TensorIteratorBase, Option<&Scalar>, Option<&Scalar>) -> Result<()>;

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

/// `copy_` (with dtype conversion): the driver's casts do the work; the computation type is
/// the destination's opmath type so a same-dtype copy is a straight memory copy.
fn copy_kernel(iter: &TensorIteratorBase) -> Result<()> {
    let dst = iter.dtype(0);
    let src = iter.dtype(1);
    if dst == src && !dst.is_reduced_floating_point() && dst != ScalarType::ComplexHalf {
        dispatch_opmath!(dst, M => cpu_unary::<M, M>(iter, #[inline(always)] |x| x))
    } else if src.is_complex() && dst.is_complex() {
        cpu_unary::<c128, c128>(iter, |x| x)
    } else {
        // Through the wider of the two opmath types, so no precision is lost on the way.
        match (opmath_rank(src) >= opmath_rank(dst), src) {
            (true, s) => {
                dispatch_opmath!(s, M => cpu_unary::<M, M>(iter, #[inline(always)] |x| x))
            }
            (false, _) => {
                dispatch_opmath!(dst, M => cpu_unary::<M, M>(iter, #[inline(always)] |x| x))
            }
        }
    }
}
stub!(COPY_STUB, "copy_stub", UnaryFn, copy_kernel);

/// Orders opmath types so a conversion through the wider one is exact for both ends.
fn opmath_rank(d: ScalarType) -> u8 {
    match d {
        ScalarType::Bool => 0,
        ScalarType::Byte | ScalarType::Char => 1,
        ScalarType::Short | ScalarType::UInt16 => 2,
        ScalarType::Int | ScalarType::UInt32 => 3,
        ScalarType::Half | ScalarType::BFloat16 | ScalarType::Float => 4,
        ScalarType::Long | ScalarType::UInt64 => 5,
        ScalarType::Double => 6,
        ScalarType::ComplexHalf | ScalarType::ComplexFloat => 7,
        ScalarType::ComplexDouble => 8,
    }
}

fn neg_kernel(iter: &TensorIteratorBase) -> Result<()> {
    let dt = iter.computation_dtype()?;
    if dt == ScalarType::Bool {
        return Err(not_implemented("neg_cpu", dt));
    }
    // `-x`, not `0 - x`: the negation of 0.0 is -0.0, as PyTorch's `-a` gives.
    dispatch_opmath!(dt, unsigned_refused("neg_cpu"), M => {
        cpu_unary::<M, M>(iter, #[inline(always)] |x: M| x.neg())
    })
}
stub!(NEG_STUB, "neg_stub", UnaryFn, neg_kernel);

fn abs_kernel(iter: &TensorIteratorBase) -> Result<()> {
    let dt = iter.computation_dtype()?;
    // Complex: |z| (a hypotenuse, as std::abs), into a complex output as |z| + 0i or into a
    // real one (abs's complex-to-float path) as |z|.
    if dt.is_complex() {
        let real_out = !iter.dtype(0).is_complex();
        return match (super::opmath_dtype(dt), real_out) {
            (ScalarType::ComplexFloat, false) => {
                cpu_unary::<c64, c64>(iter, |z: c64| c64::new(z.norm(), 0.0))
            }
            (ScalarType::ComplexFloat, true) => cpu_unary::<c64, f32>(iter, |z: c64| z.norm()),
            (_, false) => cpu_unary::<c128, c128>(iter, |z: c128| c128::new(z.norm(), 0.0)),
            (_, true) => cpu_unary::<c128, f64>(iter, |z: c128| z.norm()),
        };
    }
    // PyTorch dispatches the real abs over ALL_TYPES_AND2(Half, BFloat16): Bool is "abs_cpu"
    // not implemented.
    if dt == ScalarType::Bool {
        return Err(not_implemented("abs_cpu", dt));
    }
    real_dispatch!(dt, "abs_cpu", M => cpu_unary::<M, M>(iter, #[inline(always)] |x: M| {
        // `x + 0` for the rest: -0.0 becomes 0.0 (PyTorch's abs clears the sign bit).
        let z = M::default();
        if x < z { z.sub(x) } else { x.add(z) }
    }))
}
stub!(ABS_STUB, "abs_stub", UnaryFn, abs_kernel);

fn sign_kernel(iter: &TensorIteratorBase) -> Result<()> {
    let dt = iter.computation_dtype()?;
    real_dispatch!(dt, "sign_cpu", M => cpu_unary::<M, M>(iter, #[inline(always)] |x: M| {
        let z = M::default();
        // `(0 < a) - (a < 0)`: 0 for NaN, as PyTorch's sign gives.
        let pos = M::from_bool(z < x);
        let neg = M::from_bool(x < z);
        pos.sub(neg)
    }))
}
stub!(SIGN_STUB, "sign_stub", UnaryFn, sign_kernel);

fn bitwise_not_kernel(iter: &TensorIteratorBase) -> Result<()> {
    let dt = iter.computation_dtype()?;
    bits_dispatch!(dt, "bitwise_not_cpu", M => cpu_unary::<M, M>(iter, |x: M| x.not()))
}
stub!(
    BITWISE_NOT_STUB,
    "bitwise_not_stub",
    UnaryFn,
    bitwise_not_kernel
);

fn logical_not_kernel(iter: &TensorIteratorBase) -> Result<()> {
    // PyTorch dispatches on the input's dtype.
    refuse_complex32("logical_not_cpu", iter.dtype(1))?;
    super::refuse_unsigned("logical_not_cpu", iter.dtype(1))?;
    cpu_unary::<bool, bool>(iter, |x| !x)
}
stub!(
    LOGICAL_NOT_STUB,
    "logical_not_stub",
    UnaryFn,
    logical_not_kernel
);

/// The floating unary family: each op for f32 and f64 (half and bfloat16 through f32), and
/// for complex where it is defined.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FloatUnary {
    Exp,
    Log,
    Log1p,
    Expm1,
    Sqrt,
    Rsqrt,
    Sin,
    Cos,
    Tan,
    Tanh,
    Sigmoid,
    Reciprocal,
}

impl FloatUnary {
    pub fn name(self) -> &'static str {
        match self {
            FloatUnary::Exp => "exp_vml_cpu",
            FloatUnary::Log => "log_vml_cpu",
            FloatUnary::Log1p => "log1p_vml_cpu",
            FloatUnary::Expm1 => "expm1_vml_cpu",
            FloatUnary::Sqrt => "sqrt_vml_cpu",
            FloatUnary::Rsqrt => "rsqrt_cpu",
            FloatUnary::Sin => "sin_vml_cpu",
            FloatUnary::Cos => "cos_vml_cpu",
            FloatUnary::Tan => "tan_vml_cpu",
            FloatUnary::Tanh => "tanh_vml_cpu",
            FloatUnary::Sigmoid => "sigmoid_cpu",
            FloatUnary::Reciprocal => "reciprocal_cpu",
        }
    }
}

/// The real forms of the floating unary family, per opmath type: each op is its own
/// monomorphised loop (no call through a function pointer per element), and `exp`, `log`,
/// `tanh` and `sigmoid` are the branch-free forms LLVM vectorises (Note [Vectorised
/// transcendentals] in vec_math.rs), as are f32's `sin`, `cos` and `tan` below 4.2e8 in
/// magnitude ([`TrigOp`]); `sqrt`, `rsqrt` and `reciprocal` are arithmetic.
pub trait FloatMath: Elem {
    fn exp(self) -> Self;
    fn log(self) -> Self;
    fn log1p(self) -> Self;
    fn expm1(self) -> Self;
    fn sqrt(self) -> Self;
    fn sin(self) -> Self;
    fn cos(self) -> Self;
    fn tan(self) -> Self;
    fn tanh(self) -> Self;
    fn sigmoid(self) -> Self;
    fn recip(self) -> Self;
    /// Whether `sin`, `cos` and `tan` of `self` are their `*_medium` forms, which are
    /// branch-free (`false` where there are none: f64's are libm's).
    fn trig_medium(self) -> bool;
    fn sin_medium(self) -> Self;
    fn cos_medium(self) -> Self;
    fn tan_medium(self) -> Self;
}

macro_rules! float_math {
    (
        $t:ty, $exp:path, $log:path, $tanh:path, $sigmoid:path,
        trig: $medium:expr, $sin:path, $cos:path, $tan:path,
        $sin_m:path, $cos_m:path, $tan_m:path
    ) => {
        impl FloatMath for $t {
            #[inline(always)]
            fn exp(self) -> $t {
                $exp(self)
            }
            #[inline(always)]
            fn log(self) -> $t {
                $log(self)
            }
            #[inline(always)]
            fn log1p(self) -> $t {
                self.ln_1p()
            }
            #[inline(always)]
            fn expm1(self) -> $t {
                self.exp_m1()
            }
            #[inline(always)]
            fn sqrt(self) -> $t {
                <$t>::sqrt(self)
            }
            #[inline(always)]
            fn sin(self) -> $t {
                $sin(self)
            }
            #[inline(always)]
            fn cos(self) -> $t {
                $cos(self)
            }
            #[inline(always)]
            fn tan(self) -> $t {
                $tan(self)
            }
            #[inline(always)]
            fn trig_medium(self) -> bool {
                #[allow(clippy::redundant_closure_call)]
                ($medium)(self)
            }
            #[inline(always)]
            fn sin_medium(self) -> $t {
                $sin_m(self)
            }
            #[inline(always)]
            fn cos_medium(self) -> $t {
                $cos_m(self)
            }
            #[inline(always)]
            fn tan_medium(self) -> $t {
                $tan_m(self)
            }
            #[inline(always)]
            fn tanh(self) -> $t {
                $tanh(self)
            }
            #[inline(always)]
            fn sigmoid(self) -> $t {
                $sigmoid(self)
            }
            #[inline(always)]
            fn recip(self) -> $t {
                1.0 / self
            }
        }
    };
}
float_math!(
    f32,
    vec_math::exp_f32,
    vec_math::log_f32,
    vec_math::tanh_f32,
    vec_math::sigmoid_f32,
    trig: |x: f32| x.abs() < vec_math::TRIG_MEDIUM_F32,
    vec_math::sin_f32,
    vec_math::cos_f32,
    vec_math::tan_f32,
    vec_math::sin_f32_medium,
    vec_math::cos_f32_medium,
    vec_math::tan_f32_medium
);
float_math!(
    f64,
    vec_math::exp_f64,
    vec_math::log_f64,
    vec_math::tanh_f64,
    vec_math::sigmoid_f64,
    trig: |_: f64| false,
    f64::sin,
    f64::cos,
    f64::tan,
    f64::sin,
    f64::cos,
    f64::tan
);

/// A trigonometric function as a kernel op: `call` is the scalar form (the medium form, or
/// libm's beyond its range); a contiguous run goes in chunks, each by the branch-free medium
/// form when all its arguments are in range (one vectorised loop), else element by element.
/// Both give each element the same value.
struct TrigOp<F, G>(F, G);

/// The elements [`TrigOp`] decides for at once: one vector of f32 at AVX-512.
const TRIG_CHUNK: usize = 16;

impl<T: FloatMath, F: Fn(T) -> T + Sync, G: Fn(T) -> T + Sync> OpN<T, T, 1> for TrigOp<F, G> {
    #[inline(always)]
    fn call(&self, [x]: [T; 1]) -> T {
        (self.0)(x)
    }

    #[inline(always)]
    unsafe fn call_run(&self, src: &[*const T; 1], dst: *mut T, len: usize) {
        let s = src[0];
        let mut i = 0;
        while i + TRIG_CHUNK <= len {
            // SAFETY (this loop): i + TRIG_CHUNK <= len, and the contract gives `len`
            // readable and writable elements; each element is read before it is written.
            let mut x = [T::default(); TRIG_CHUNK];
            for (j, xj) in x.iter_mut().enumerate() {
                *xj = unsafe { s.add(i + j).read() };
            }
            if x.iter().fold(true, |all, &v| all & v.trig_medium()) {
                for (j, &v) in x.iter().enumerate() {
                    unsafe { dst.add(i + j).write((self.1)(v)) };
                }
            } else {
                for (j, &v) in x.iter().enumerate() {
                    unsafe { dst.add(i + j).write((self.0)(v)) };
                }
            }
            i += TRIG_CHUNK;
        }
        for j in i..len {
            // SAFETY: j < len, per the contract.
            unsafe { dst.add(j).write((self.0)(s.add(j).read())) };
        }
    }
}

/// Runs the real form of `op` over `iter` in opmath type `T`.
fn float_unary_real<T: FloatMath>(iter: &TensorIteratorBase, op: FloatUnary) -> Result<()> {
    match op {
        FloatUnary::Exp => cpu_unary::<T, T>(
            iter,
            #[inline(always)]
            |x: T| x.exp(),
        ),
        FloatUnary::Log => cpu_unary::<T, T>(
            iter,
            #[inline(always)]
            |x: T| x.log(),
        ),
        FloatUnary::Log1p => cpu_unary::<T, T>(
            iter,
            #[inline(always)]
            |x: T| x.log1p(),
        ),
        FloatUnary::Expm1 => cpu_unary::<T, T>(
            iter,
            #[inline(always)]
            |x: T| x.expm1(),
        ),
        FloatUnary::Sqrt => cpu_unary::<T, T>(
            iter,
            #[inline(always)]
            |x: T| x.sqrt(),
        ),
        FloatUnary::Rsqrt => cpu_unary::<T, T>(
            iter,
            #[inline(always)]
            |x: T| x.sqrt().recip(),
        ),
        FloatUnary::Sin => cpu_kernel_n::<T, T, 1>(
            iter,
            TrigOp(
                #[inline(always)]
                |x: T| x.sin(),
                #[inline(always)]
                |x: T| x.sin_medium(),
            ),
        ),
        FloatUnary::Cos => cpu_kernel_n::<T, T, 1>(
            iter,
            TrigOp(
                #[inline(always)]
                |x: T| x.cos(),
                #[inline(always)]
                |x: T| x.cos_medium(),
            ),
        ),
        FloatUnary::Tan => cpu_kernel_n::<T, T, 1>(
            iter,
            TrigOp(
                #[inline(always)]
                |x: T| x.tan(),
                #[inline(always)]
                |x: T| x.tan_medium(),
            ),
        ),
        FloatUnary::Tanh => cpu_unary::<T, T>(
            iter,
            #[inline(always)]
            |x: T| x.tanh(),
        ),
        FloatUnary::Sigmoid => cpu_unary::<T, T>(
            iter,
            #[inline(always)]
            |x: T| x.sigmoid(),
        ),
        FloatUnary::Reciprocal => cpu_unary::<T, T>(
            iter,
            #[inline(always)]
            |x: T| x.recip(),
        ),
    }
}

fn complex_fn(op: FloatUnary) -> Option<fn(c128) -> c128> {
    Some(match op {
        FloatUnary::Exp => |x: c128| x.exp(),
        FloatUnary::Log => |x: c128| x.ln(),
        FloatUnary::Sqrt => |x: c128| x.sqrt(),
        FloatUnary::Rsqrt => |x: c128| 1.0 / x.sqrt(),
        FloatUnary::Sin => |x: c128| x.sin(),
        FloatUnary::Cos => |x: c128| x.cos(),
        FloatUnary::Tan => |x: c128| x.tan(),
        FloatUnary::Tanh => |x: c128| x.tanh(),
        FloatUnary::Sigmoid => |x: c128| 1.0 / (1.0 + (-x).exp()),
        FloatUnary::Log1p => |x: c128| (x + 1.0).ln(),
        FloatUnary::Expm1 => |x: c128| x.exp() - 1.0,
        FloatUnary::Reciprocal => |x: c128| 1.0 / x,
    })
}

/// Runs one op of the floating unary family.
pub fn float_unary(iter: &TensorIteratorBase, op: FloatUnary) -> Result<()> {
    let dt = iter.computation_dtype()?;
    refuse_complex32(op.name(), dt)?;
    match super::opmath_dtype(dt) {
        ScalarType::Float => float_unary_real::<f32>(iter, op),
        ScalarType::Double => float_unary_real::<f64>(iter, op),
        ScalarType::ComplexFloat => match complex_fn(op) {
            Some(f) => cpu_unary::<c64, c64>(iter, move |x| cast(f(cast::<c64, c128>(x)))),
            None => Err(not_implemented(op.name(), dt)),
        },
        ScalarType::ComplexDouble => match complex_fn(op) {
            Some(f) => cpu_unary::<c128, c128>(iter, f),
            None => Err(not_implemented(op.name(), dt)),
        },
        _ => Err(not_implemented(op.name(), dt)),
    }
}

macro_rules! float_unary_stub {
    ($($stub:ident, $name:literal, $kernel:ident, $op:ident;)*) => {$(
        fn $kernel(iter: &TensorIteratorBase) -> Result<()> {
            float_unary(iter, FloatUnary::$op)
        }
        stub!($stub, $name, UnaryFn, $kernel);
    )*};
}
float_unary_stub! {
    EXP_STUB, "exp_stub", exp_kernel, Exp;
    LOG_STUB, "log_stub", log_kernel, Log;
    LOG1P_STUB, "log1p_stub", log1p_kernel, Log1p;
    EXPM1_STUB, "expm1_stub", expm1_kernel, Expm1;
    SQRT_STUB, "sqrt_stub", sqrt_kernel, Sqrt;
    RSQRT_STUB, "rsqrt_stub", rsqrt_kernel, Rsqrt;
    SIN_STUB, "sin_stub", sin_kernel, Sin;
    COS_STUB, "cos_stub", cos_kernel, Cos;
    TAN_STUB, "tan_stub", tan_kernel, Tan;
    TANH_STUB, "tanh_stub", tanh_kernel, Tanh;
    SIGMOID_STUB, "sigmoid_stub", sigmoid_kernel, Sigmoid;
    RECIPROCAL_STUB, "reciprocal_stub", reciprocal_kernel, Reciprocal;
}

/// `clamp_scalar_stub` (also relu = clamp_min(0)): NaN propagates, as in PyTorch.
fn clamp_scalar_kernel(
    iter: &TensorIteratorBase,
    min: Option<&Scalar>,
    max: Option<&Scalar>,
) -> Result<()> {
    let dt = iter.computation_dtype()?;
    if dt == ScalarType::Bool {
        // PyTorch names the kernel by the bounds given.
        let name = match (min.is_some(), max.is_some()) {
            (true, false) => "clamp_min_scalar_cpu",
            (false, true) => "clamp_max_scalar_cpu",
            _ => "clamp_scalar_cpu",
        };
        return Err(not_implemented(name, dt));
    }
    // torch's clamp takes the barebones unsigned types too.
    macro_rules! clamp {
        ($M:ty) => {{
            let lo: Option<$M> = min.map(scalar_as);
            let hi: Option<$M> = max.map(scalar_as);
            cpu_unary::<$M, $M>(iter, move |x: $M| {
                if x.is_nan() {
                    return x;
                }
                let mut r = x;
                if let Some(l) = lo {
                    if r < l || l.is_nan() {
                        r = l;
                    }
                }
                if let Some(h) = hi {
                    if r > h || h.is_nan() {
                        r = h;
                    }
                }
                r
            })
        }};
    }
    unsigned_dispatch!(@or dt, M => clamp!(M), other => {
        real_dispatch!(other, "clamp_scalar_cpu", M => clamp!(M))
    })
}
stub!(
    CLAMP_SCALAR_STUB,
    "clamp_scalar_stub",
    ClampScalarFn,
    clamp_scalar_kernel
);

/// `clamp_stub` with tensor bounds: operands (out, self, min, max).
fn clamp_kernel(iter: &TensorIteratorBase) -> Result<()> {
    let dt = iter.computation_dtype()?;
    if dt == ScalarType::Bool {
        return Err(not_implemented("clamp_cpu", dt));
    }
    macro_rules! clamp {
        ($M:ty) => {
            cpu_ternary::<$M, $M>(iter, |x: $M, l: $M, h: $M| {
                if x.is_nan() {
                    return x;
                }
                let lo = if x < l || l.is_nan() { l } else { x };
                if lo > h || h.is_nan() {
                    h
                } else {
                    lo
                }
            })
        };
    }
    unsigned_dispatch!(@or dt, M => clamp!(M), other => {
        real_dispatch!(other, "clamp_cpu", M => clamp!(M))
    })
}
stub!(CLAMP_STUB, "clamp_stub", UnaryFn, clamp_kernel);

/// `where_kernel`: operands (out, condition, self, other); condition is read as bool and the
/// values are in the common dtype of self and other (the front end checked it).
fn where_kernel(iter: &TensorIteratorBase) -> Result<()> {
    let dt = iter.dtype(0);
    dispatch_opmath!(dt, M => cpu_ternary::<M, M>(iter, |c: M, a: M, b: M| {
        if c.to_bool() { a } else { b }
    }))
}
stub!(WHERE_STUB, "where_stub", UnaryFn, where_kernel);

/// `lerp_kernel_scalar_weight`: operands (out, self, end); `self + weight * (end - self)`
/// with PyTorch's two-sided formula for accuracy near weight 1.
/// The weight is `weight.to<opmath_t>()`: c10's checked conversion (a complex weight for a
/// real tensor is an overflow error).
fn lerp_scalar_kernel(iter: &TensorIteratorBase, weight: &Scalar) -> Result<()> {
    use ratten_core::ScalarConvert;
    let dt = iter.computation_dtype()?;
    refuse_complex32("lerp_kernel_scalar", dt)?;
    match super::opmath_dtype(dt) {
        ScalarType::Float => {
            let w = f32::from_scalar(weight)?;
            cpu_binary::<f32, f32>(iter, move |s, e| lerp_f32(s, e, w))
        }
        ScalarType::Double => {
            let w = f64::from_scalar(weight)?;
            cpu_binary::<f64, f64>(iter, move |s, e| lerp_f64(s, e, w))
        }
        ScalarType::ComplexFloat => {
            let w = c64::from_scalar(weight)?;
            cpu_binary::<c64, c64>(iter, move |s, e| lerp_c64(s, e, w))
        }
        ScalarType::ComplexDouble => {
            let w = c128::from_scalar(weight)?;
            cpu_binary::<c128, c128>(iter, move |s, e| lerp_c128(s, e, w))
        }
        _ => Err(not_implemented("lerp_kernel_scalar", dt)),
    }
}
stub!(
    LERP_SCALAR_STUB,
    "lerp_kernel_scalar_weight",
    ScalarFn,
    lerp_scalar_kernel
);

#[inline(always)]
fn lerp_f32(s: f32, e: f32, w: f32) -> f32 {
    if w.abs() < 0.5 {
        s + w * (e - s)
    } else {
        e - (e - s) * (1.0 - w)
    }
}
#[inline(always)]
fn lerp_f64(s: f64, e: f64, w: f64) -> f64 {
    if w.abs() < 0.5 {
        s + w * (e - s)
    } else {
        e - (e - s) * (1.0 - w)
    }
}

// Complex lerp: the same two-sided formula, choosing the side by |weight| (c10's `lerp`).
#[inline(always)]
fn lerp_c64(s: c64, e: c64, w: c64) -> c64 {
    if w.norm() < 0.5 {
        s + w * (e - s)
    } else {
        e - (e - s) * (c64::new(1.0, 0.0) - w)
    }
}
#[inline(always)]
fn lerp_c128(s: c128, e: c128, w: c128) -> c128 {
    if w.norm() < 0.5 {
        s + w * (e - s)
    } else {
        e - (e - s) * (c128::new(1.0, 0.0) - w)
    }
}

/// `lerp_kernel_tensor_weight`: operands (out, self, end, weight).
fn lerp_tensor_kernel(iter: &TensorIteratorBase) -> Result<()> {
    let dt = iter.computation_dtype()?;
    refuse_complex32("lerp_kernel_tensor", dt)?;
    match super::opmath_dtype(dt) {
        ScalarType::Float => cpu_ternary::<f32, f32>(iter, lerp_f32),
        ScalarType::Double => cpu_ternary::<f64, f64>(iter, lerp_f64),
        ScalarType::ComplexFloat => cpu_ternary::<c64, c64>(iter, lerp_c64),
        ScalarType::ComplexDouble => cpu_ternary::<c128, c128>(iter, lerp_c128),
        _ => Err(not_implemented("lerp_kernel_tensor", dt)),
    }
}
stub!(
    LERP_TENSOR_STUB,
    "lerp_kernel_tensor_weight",
    UnaryFn,
    lerp_tensor_kernel
);

/// `addcmul_stub`: operands (out, self, tensor1, tensor2); `self + value * t1 * t2`.
fn addcmul_kernel(iter: &TensorIteratorBase, value: &Scalar) -> Result<()> {
    let dt = iter.computation_dtype()?;
    if dt == ScalarType::Bool {
        return Err(not_implemented("addcmul_cpu_out", dt));
    }
    // `value.to<opmath_t>()`: c10's checked conversion (a complex value for a real tensor is
    // an overflow error; 1e10 for a half tensor is fine, its opmath being float).
    dispatch_opmath!(dt, unsigned_refused("addcmul_cpu_out"), M => {
        let v = <M as ratten_core::ScalarConvert>::from_scalar(value)?;
        cpu_ternary::<M, M>(iter, move |s: M, a: M, b: M| s.add(v.mul(a).mul(b)))
    })
}
stub!(ADDCMUL_STUB, "addcmul_stub", ScalarFn, addcmul_kernel);

/// `addcdiv_stub`: `self + value * t1 / t2` (floating and complex; the front end refuses
/// integer inputs with PyTorch's message).
fn addcdiv_kernel(iter: &TensorIteratorBase, value: &Scalar) -> Result<()> {
    let dt = iter.computation_dtype()?;
    refuse_complex32("addcdiv_cpu_out", dt)?;
    match super::opmath_dtype(dt) {
        ScalarType::Float => {
            let v = <f32 as ratten_core::ScalarConvert>::from_scalar(value)?;
            cpu_ternary::<f32, f32>(iter, move |s, a, b| s + v * a / b)
        }
        ScalarType::Double => {
            let v = <f64 as ratten_core::ScalarConvert>::from_scalar(value)?;
            cpu_ternary::<f64, f64>(iter, move |s, a, b| s + v * a / b)
        }
        ScalarType::ComplexFloat | ScalarType::ComplexDouble => {
            let v = <c128 as ratten_core::ScalarConvert>::from_scalar(value)?;
            cpu_ternary::<c128, c128>(iter, move |s, a, b| s + v * a / b)
        }
        _ => Err(not_implemented("addcdiv_cpu_out", dt)),
    }
}
stub!(ADDCDIV_STUB, "addcdiv_stub", ScalarFn, addcdiv_kernel);

/// `nan_to_num_stub`'s kernels: (iter, nan, posinf, neginf), the replacements given or None.
pub type NanToNumFn = fn(&TensorIteratorBase, Option<f64>, Option<f64>, Option<f64>) -> Result<()>;

/// `x` with NaN, +inf and -inf replaced (`_nan_to_num_replace`).
#[inline(always)]
fn replace_non_finite<T: num_traits::Float>(x: T, nan: T, posinf: T, neginf: T) -> T {
    if x.is_nan() {
        nan
    } else if x == T::infinity() {
        posinf
    } else if x == T::neg_infinity() {
        neginf
    } else {
        x
    }
}

/// `nan_to_num_stub` (UnaryOpsKernel.cpp) over a floating or complex iterator whose output
/// has the input's dtype: NaN becomes `nan` (default 0), +inf `posinf` and -inf `neginf`
/// (default the largest and lowest finite value of the dtype, of its parts' dtype for complex
/// numbers, whose real and imaginary parts are replaced each on its own).
fn nan_to_num_kernel(
    iter: &TensorIteratorBase,
    nan: Option<f64>,
    posinf: Option<f64>,
    neginf: Option<f64>,
) -> Result<()> {
    let dt = iter.dtype(0);
    let max = match dt.to_real() {
        ScalarType::Half => half::f16::MAX.to_f64(),
        ScalarType::BFloat16 => half::bf16::MAX.to_f64(),
        ScalarType::Float => f32::MAX as f64,
        ScalarType::Double => f64::MAX,
        _ => return Err(not_implemented("nan_to_num", dt)),
    };
    let (n, p, m) = (
        nan.unwrap_or(0.0),
        posinf.unwrap_or(max),
        neginf.unwrap_or(-max),
    );
    // The replacements as the computation type holds them (`static_cast<scalar_t>`: a value
    // past the dtype's range becomes infinite, as in PyTorch).
    let (nf, pf, mf) = (n as f32, p as f32, m as f32);
    match super::opmath_dtype(dt) {
        ScalarType::Float => {
            cpu_unary::<f32, f32>(iter, move |x: f32| replace_non_finite(x, nf, pf, mf))
        }
        ScalarType::Double => {
            cpu_unary::<f64, f64>(iter, move |x: f64| replace_non_finite(x, n, p, m))
        }
        ScalarType::ComplexFloat => cpu_unary::<c64, c64>(iter, move |z: c64| {
            c64::new(
                replace_non_finite(z.re, nf, pf, mf),
                replace_non_finite(z.im, nf, pf, mf),
            )
        }),
        ScalarType::ComplexDouble => cpu_unary::<c128, c128>(iter, move |z: c128| {
            c128::new(
                replace_non_finite(z.re, n, p, m),
                replace_non_finite(z.im, n, p, m),
            )
        }),
        _ => Err(not_implemented("nan_to_num", dt)),
    }
}
stub!(
    NAN_TO_NUM_STUB,
    "nan_to_num_stub",
    NanToNumFn,
    nan_to_num_kernel
);

/// The kernels of `isinf` and `isfinite` over a bool output and one input of any dtype: each
/// value is infinite, or finite (neither infinite nor NaN); a complex value is infinite when
/// either part is, finite when both are; integers and bool are always finite.
fn finiteness_kernel(iter: &TensorIteratorBase, name: &str, finite: bool) -> Result<()> {
    let dt = iter.dtype(1);
    refuse_complex32(name, dt)?;
    match super::opmath_dtype(dt) {
        ScalarType::Float => cpu_unary::<f32, bool>(iter, move |x: f32| {
            if finite {
                x.is_finite()
            } else {
                x.is_infinite()
            }
        }),
        ScalarType::Double => cpu_unary::<f64, bool>(iter, move |x: f64| {
            if finite {
                x.is_finite()
            } else {
                x.is_infinite()
            }
        }),
        ScalarType::ComplexFloat => cpu_unary::<c64, bool>(iter, move |z: c64| {
            if finite {
                z.re.is_finite() && z.im.is_finite()
            } else {
                z.re.is_infinite() || z.im.is_infinite()
            }
        }),
        ScalarType::ComplexDouble => cpu_unary::<c128, bool>(iter, move |z: c128| {
            if finite {
                z.re.is_finite() && z.im.is_finite()
            } else {
                z.re.is_infinite() || z.im.is_infinite()
            }
        }),
        _ => cpu_unary::<bool, bool>(iter, move |_| finite),
    }
}
fn isinf_kernel(iter: &TensorIteratorBase) -> Result<()> {
    finiteness_kernel(iter, "isinf", false)
}
fn isfinite_kernel(iter: &TensorIteratorBase) -> Result<()> {
    finiteness_kernel(iter, "isfinite", true)
}
stub!(ISINF_STUB, "isinf_stub", UnaryFn, isinf_kernel);
stub!(ISFINITE_STUB, "isfinite_stub", UnaryFn, isfinite_kernel);
