//! The activations' pointwise kernels (aten/src/ATen/native/cpu/Activation.cpp) and their
//! DispatchStubs.
//!
//! Each op is written once over [`ActFloat`] (f32 and f64; half and bfloat16 compute in f32 and
//! are rounded once, as PyTorch's reduced-float paths do) with the branch-free transcendentals
//! of [`vec_math`] and the `erf` / `log1p` forms below, so the driver's contiguous loops
//! vectorise (Note [Vectorised transcendentals]). Where PyTorch's vector and scalar forms of an
//! op differ for NaN (hardtanh_backward), the vector form is the one taken: it is what
//! PyTorch computes for all but the last elements of a run.

use std::ops::{Add, Div, Mul, Neg, Sub};

use ratten_core::dtype::{c128, c64};
use ratten_core::{Result, Scalar, ScalarConvert, ScalarType};

use super::binary_kernels::stub;
use super::{cpu_binary, cpu_ternary, cpu_unary, not_implemented, vec_math, Elem};
use crate::dispatch_stub::DispatchStub;
use crate::tensor_iterator::TensorIteratorBase;

/// `sqrt(2 / pi)` (`M_SQRT2 * M_2_SQRTPI * 0.5`), gelu's tanh form.
const GELU_BETA: f64 = std::f64::consts::SQRT_2 * std::f64::consts::FRAC_2_SQRT_PI * 0.5;
/// gelu's tanh form: the cubic term's weight.
const GELU_KAPPA: f64 = 0.044715;
/// `1 / sqrt(2 pi)` (`M_2_SQRTPI * M_SQRT1_2 * 0.5`), the normal density's factor.
const GELU_PDF: f64 = std::f64::consts::FRAC_2_SQRT_PI * std::f64::consts::FRAC_1_SQRT_2 * 0.5;

/// The floating computation types of the activations, with the functions their loops call.
pub trait ActFloat:
    Elem
    + ScalarConvert
    + PartialOrd
    + Add<Output = Self>
    + Sub<Output = Self>
    + Mul<Output = Self>
    + Div<Output = Self>
    + Neg<Output = Self>
{
    /// A constant (rounded to the type).
    fn k(v: f64) -> Self;
    fn vexp(self) -> Self;
    fn vexpm1(self) -> Self;
    fn vtanh(self) -> Self;
    fn verf(self) -> Self;
    fn vlog1p(self) -> Self;
    fn vabs(self) -> Self;
    /// `vec::minimum` / `maximum`: NaN when either is NaN.
    fn nan_min(self, o: Self) -> Self;
    fn nan_max(self, o: Self) -> Self;
}

macro_rules! act_float {
    ($t:ty, $exp:path, $expm1:path, $tanh:path, $erf:path, $log1p:path) => {
        impl ActFloat for $t {
            #[inline(always)]
            fn k(v: f64) -> $t {
                v as $t
            }
            #[inline(always)]
            fn vexp(self) -> $t {
                $exp(self)
            }
            #[inline(always)]
            fn vexpm1(self) -> $t {
                $expm1(self)
            }
            #[inline(always)]
            fn vtanh(self) -> $t {
                $tanh(self)
            }
            #[inline(always)]
            fn verf(self) -> $t {
                $erf(self)
            }
            #[inline(always)]
            fn vlog1p(self) -> $t {
                $log1p(self)
            }
            #[inline(always)]
            fn vabs(self) -> $t {
                self.abs()
            }
            #[inline(always)]
            fn nan_min(self, o: $t) -> $t {
                if self.is_nan() || o.is_nan() {
                    <$t>::NAN
                } else if o < self {
                    o
                } else {
                    self
                }
            }
            #[inline(always)]
            fn nan_max(self, o: $t) -> $t {
                if self.is_nan() || o.is_nan() {
                    <$t>::NAN
                } else if o > self {
                    o
                } else {
                    self
                }
            }
        }
    };
}
act_float!(
    f32,
    vec_math::exp_f32,
    expm1_f32,
    vec_math::tanh_f32,
    erf_f32,
    log1p_f32
);
act_float!(
    f64,
    vec_math::exp_f64,
    f64::exp_m1,
    vec_math::tanh_f64,
    erf_f64,
    log1p_f64
);

/// `expm1` of f32 without branches: its Taylor polynomial (to degree 10) below 0.5 in
/// magnitude, where `e^x - 1` would cancel, else `e^x - 1` (within 3 ulp). -0 stays -0.
#[inline(always)]
pub fn expm1_f32(x: f32) -> f32 {
    let mut p = 1.0 / 3_628_800.0;
    for k in [
        362_880.0f32,
        40_320.0,
        5_040.0,
        720.0,
        120.0,
        24.0,
        6.0,
        2.0,
    ] {
        p = p * x + 1.0 / k;
    }
    let small = x * (1.0 + x * p);
    let large = vec_math::exp_f32(x) - 1.0;
    if x.abs() < 0.5 {
        small
    } else {
        large
    }
}

/// `log1p` of f32 without branches: `log(u) * (y / (u - 1))` for `u = 1 + y` (the quotient
/// corrects the rounding of `u`), `y` itself where `u` rounds to 1, and infinity for infinity.
#[inline(always)]
pub fn log1p_f32(y: f32) -> f32 {
    let u = 1.0 + y;
    let l = vec_math::log_f32(u) * (y / (u - 1.0));
    if u == 1.0 {
        y
    } else if u == f32::INFINITY {
        u
    } else {
        l
    }
}

/// `log1p` of f64, as [`log1p_f32`].
#[inline(always)]
pub fn log1p_f64(y: f64) -> f64 {
    let u = 1.0 + y;
    let l = vec_math::log_f64(u) * (y / (u - 1.0));
    if u == 1.0 {
        y
    } else if u == f64::INFINITY {
        u
    } else {
        l
    }
}

/// `erf` of f32 without branches: a polynomial in `x^2` below 0.927734375 in magnitude, above
/// it `1 - e^p(|x|)` with the sign of `x` (Norbert Juffa's faithfully rounded erff, whose
/// fused multiply-adds are plain ones here so that every ISA vectorises it: within 2 ulp).
#[inline(always)]
pub fn erf_f32(a: f32) -> f32 {
    let t = a.abs();
    let s = a * a;
    let mut r = -1.728_534_7e-5 * t + 3.831_971_3e-4;
    let u = -3.883_964_4e-3 * t + 2.425_462_2e-2;
    r = r * s + u;
    r = r * t - 1.067_778_8e-1;
    r = r * t - 6.348_467e-1;
    r = r * t - 1.287_175_1e-1;
    r = r * t - t;
    let large = (1.0 - vec_math::exp_f32(r)).copysign(a);
    let mut q = -5.967_617e-4;
    q = q * s + 4.991_194_2e-3;
    q = q * s - 2.676_813_5e-2;
    q = q * s + 1.128_199_3e-1;
    q = q * s - 3.761_253_4e-1;
    q = q * s + 1.283_791_7e-1;
    let small = q * a + a;
    if t > 0.927_734_4 {
        large
    } else {
        small
    }
}

/// `erf` of f64 (FreeBSD s_erf.c, as musl has it): a rational form per range of `|x|`.
#[inline(always)]
pub fn erf_f64(x: f64) -> f64 {
    const ERX: f64 = 8.450_629_115_104_675e-1;
    const EFX8: f64 = 1.027_033_336_764_100_7;
    const PP: [f64; 5] = [
        1.283_791_670_955_125_6e-1,
        -3.250_421_072_470_015e-1,
        -2.848_174_957_559_851e-2,
        -5.770_270_296_489_442e-3,
        -2.376_301_665_665_016_3e-5,
    ];
    const QQ: [f64; 5] = [
        3.979_172_239_591_553_5e-1,
        6.502_224_998_876_73e-2,
        5.081_306_281_875_766e-3,
        1.324_947_380_043_216_4e-4,
        -3.960_228_278_775_368e-6,
    ];
    const PA: [f64; 7] = [
        -2.362_118_560_752_659_4e-3,
        4.148_561_186_837_483e-1,
        -3.722_078_760_357_013e-1,
        3.183_466_199_011_617_5e-1,
        -1.108_946_942_823_966_8e-1,
        3.547_830_432_561_823_6e-2,
        -2.166_375_594_868_791e-3,
    ];
    const QA: [f64; 6] = [
        1.064_208_804_008_442_3e-1,
        5.403_979_177_021_71e-1,
        7.182_865_441_419_627e-2,
        1.261_712_198_087_616_4e-1,
        1.363_708_391_202_905e-2,
        1.198_449_984_679_910_8e-2,
    ];
    const RA: [f64; 8] = [
        -9.864_944_034_847_148e-3,
        -6.938_585_727_071_818e-1,
        -1.055_862_622_532_329_1e1,
        -6.237_533_245_032_601e1,
        -1.623_966_694_625_734_7e2,
        -1.846_050_929_067_110_3e2,
        -8.128_743_550_630_66e1,
        -9.814_329_344_169_145,
    ];
    const SA: [f64; 8] = [
        1.965_127_166_743_925_7e1,
        1.376_577_541_435_190_4e2,
        4.345_658_774_752_292_3e2,
        6.453_872_717_332_679e2,
        4.290_081_400_275_678_3e2,
        1.086_350_055_417_794_3e2,
        6.570_249_770_319_282,
        -6.042_441_521_485_81e-2,
    ];
    const RB: [f64; 7] = [
        -9.864_942_924_700_1e-3,
        -7.992_832_376_805_23e-1,
        -1.775_795_491_775_475_2e1,
        -1.606_363_848_558_219_2e2,
        -6.375_664_433_683_896e2,
        -1.025_095_131_611_077_2e3,
        -4.835_191_916_086_514e2,
    ];
    const SB: [f64; 7] = [
        3.033_806_074_348_245_6e1,
        3.257_925_129_965_739e2,
        1.536_729_586_084_437e3,
        3.199_858_219_508_595_5e3,
        2.553_050_406_433_164_4e3,
        4.745_285_412_069_554e2,
        -2.244_095_244_658_582e1,
    ];
    // Horner's scheme, highest coefficient last.
    fn poly(c: &[f64], z: f64) -> f64 {
        c.iter().rev().fold(0.0, |acc, &k| acc * z + k)
    }
    if x.is_nan() {
        return x;
    }
    let a = x.abs();
    if a.is_infinite() {
        return 1.0f64.copysign(x);
    }
    if a < 0.843_75 {
        if a < 3.725_290_298_461_914e-9 {
            // 2^-28: erf(x) = x (1 + efx), scaled to avoid underflow.
            return (8.0 * x + EFX8 * x) / 8.0;
        }
        let z = x * x;
        let y = poly(&PP, z) / (1.0 + z * poly(&QQ, z));
        return x + x * y;
    }
    let y = if a < 1.25 {
        let s = a - 1.0;
        ERX + poly(&PA, s) / (1.0 + s * poly(&QA, s))
    } else if a < 6.0 {
        let s = 1.0 / (a * a);
        let (r, q) = if a < 1.0 / 0.35 {
            (poly(&RA, s), 1.0 + s * poly(&SA, s))
        } else {
            (poly(&RB, s), 1.0 + s * poly(&SB, s))
        };
        // `a` with the low word cleared, so that `z * z` is exact.
        let z = f64::from_bits(a.to_bits() & 0xffff_ffff_0000_0000);
        let erfc =
            vec_math::exp_f64(-z * z - 0.5625) * vec_math::exp_f64((z - a) * (z + a) + r / q) / a;
        1.0 - erfc
    } else {
        1.0 - f64::MIN_POSITIVE
    };
    y.copysign(x)
}

/// `GeluType`: the `approximate` argument.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GeluType {
    None,
    Tanh,
}

/// Stub signatures of the family.
pub type ActFn = fn(&TensorIteratorBase) -> Result<()>;
pub type GeluFn = fn(&TensorIteratorBase, GeluType) -> Result<()>;
pub type EluFn = fn(&TensorIteratorBase, &Scalar, &Scalar, &Scalar) -> Result<()>;
pub type EluBackwardFn = fn(&TensorIteratorBase, &Scalar, &Scalar, &Scalar, bool) -> Result<()>;
pub type ScalarActFn = fn(&TensorIteratorBase, &Scalar) -> Result<()>;
pub type TwoScalarActFn = fn(&TensorIteratorBase, &Scalar, &Scalar) -> Result<()>;

/// Runs `$body` with `$T` the computation type of a floating `$dt` (f32 for half and
/// bfloat16), else `"$name" not implemented for '<dtype>'`.
macro_rules! float_dispatch {
    ($dt:expr, $name:expr, $T:ident => $body:expr) => {
        match $dt {
            ScalarType::Float | ScalarType::Half | ScalarType::BFloat16 => {
                type $T = f32;
                $body
            }
            ScalarType::Double => {
                type $T = f64;
                $body
            }
            d => Err(not_implemented($name, d)),
        }
    };
}

fn gelu_kernel(iter: &TensorIteratorBase, approximate: GeluType) -> Result<()> {
    let dt = iter.computation_dtype()?;
    float_dispatch!(dt, "GeluKernelImpl", T => gelu_real::<T>(iter, approximate))
}

fn gelu_real<T: ActFloat>(iter: &TensorIteratorBase, approximate: GeluType) -> Result<()> {
    let (half, one) = (T::k(0.5), T::k(1.0));
    match approximate {
        GeluType::Tanh => {
            let (beta, kappa) = (T::k(GELU_BETA), T::k(GELU_KAPPA));
            cpu_unary::<T, T>(
                iter,
                #[inline(always)]
                move |x: T| {
                    let inner = beta * (x + kappa * (x * x * x));
                    half * x * (one + inner.vtanh())
                },
            )
        }
        GeluType::None => {
            let alpha = T::k(std::f64::consts::FRAC_1_SQRT_2);
            cpu_unary::<T, T>(
                iter,
                #[inline(always)]
                move |x: T| x * half * (one + (x * alpha).verf()),
            )
        }
    }
}
stub!(GELU_STUB, "GeluKernel", GeluFn, gelu_kernel);

fn gelu_backward_kernel(iter: &TensorIteratorBase, approximate: GeluType) -> Result<()> {
    let dt = iter.computation_dtype()?;
    float_dispatch!(dt, "GeluBackwardKernelImpl", T => gelu_backward_real::<T>(iter, approximate))
}

fn gelu_backward_real<T: ActFloat>(iter: &TensorIteratorBase, approximate: GeluType) -> Result<()> {
    let (half, one) = (T::k(0.5), T::k(1.0));
    match approximate {
        GeluType::Tanh => {
            let (beta, kappa, three) = (T::k(GELU_BETA), T::k(GELU_KAPPA), T::k(3.0));
            cpu_binary::<T, T>(
                iter,
                #[inline(always)]
                move |dy: T, x: T| {
                    let x_sq = x * x;
                    let inner = beta * (x + kappa * (x_sq * x));
                    let tanh_inner = inner.vtanh();
                    let left = half * x;
                    let right = one + tanh_inner;
                    let left_derivative = half * right;
                    let tanh_derivative = one - tanh_inner * tanh_inner;
                    let inner_derivative = beta * (one + three * kappa * x_sq);
                    let right_derivative = left * tanh_derivative * inner_derivative;
                    dy * (left_derivative + right_derivative)
                },
            )
        }
        GeluType::None => {
            let (alpha, pdf_k) = (T::k(std::f64::consts::FRAC_1_SQRT_2), T::k(GELU_PDF));
            let minus_half = T::k(-0.5);
            cpu_binary::<T, T>(
                iter,
                #[inline(always)]
                move |dy: T, x: T| {
                    let cdf = half * (one + (x * alpha).verf());
                    let pdf = pdf_k * (x * x * minus_half).vexp();
                    dy * (cdf + x * pdf)
                },
            )
        }
    }
}
stub!(
    GELU_BACKWARD_STUB,
    "GeluBackwardKernel",
    GeluFn,
    gelu_backward_kernel
);

/// `silu`: `x / (1 + e^-x)`, for complex numbers too.
fn silu_kernel(iter: &TensorIteratorBase) -> Result<()> {
    let dt = iter.computation_dtype()?;
    match dt {
        ScalarType::ComplexFloat => cpu_unary::<c64, c64>(iter, |x: c64| x / (1.0 + (-x).exp())),
        ScalarType::ComplexDouble => {
            cpu_unary::<c128, c128>(iter, |x: c128| x / (1.0 + (-x).exp()))
        }
        _ => float_dispatch!(dt, "silu_cpu", T => {
            let one = T::k(1.0);
            cpu_unary::<T, T>(iter, #[inline(always)] move |x: T| x / (one + (-x).vexp()))
        }),
    }
}
stub!(SILU_STUB, "silu_stub", ActFn, silu_kernel);

/// `silu_backward`: `dy * s * (1 + x (1 - s))` with `s = sigmoid(x)`.
fn silu_backward_kernel(iter: &TensorIteratorBase) -> Result<()> {
    let dt = iter.computation_dtype()?;
    match dt {
        ScalarType::ComplexFloat => cpu_binary::<c64, c64>(iter, |dy: c64, x: c64| {
            let s = 1.0 / (1.0 + (-x).exp());
            dy * s * (1.0 + x * (1.0 - s))
        }),
        ScalarType::ComplexDouble => cpu_binary::<c128, c128>(iter, |dy: c128, x: c128| {
            let s = 1.0 / (1.0 + (-x).exp());
            dy * s * (1.0 + x * (1.0 - s))
        }),
        _ => float_dispatch!(dt, "silu_backward_cpu", T => {
            let one = T::k(1.0);
            cpu_binary::<T, T>(iter, #[inline(always)] move |dy: T, x: T| {
                let s = one / (one + (-x).vexp());
                dy * s * (one + x * (one - s))
            })
        }),
    }
}
stub!(
    SILU_BACKWARD_STUB,
    "silu_backward_stub",
    ActFn,
    silu_backward_kernel
);

/// `mish`: `x tanh(softplus(x))`.
fn mish_kernel(iter: &TensorIteratorBase) -> Result<()> {
    let dt = iter.computation_dtype()?;
    float_dispatch!(dt, "mish_cpu", T => cpu_unary::<T, T>(
        iter,
        #[inline(always)]
        |x: T| x * x.vexp().vlog1p().vtanh(),
    ))
}
stub!(MISH_STUB, "mish_stub", ActFn, mish_kernel);

fn mish_backward_kernel(iter: &TensorIteratorBase) -> Result<()> {
    let dt = iter.computation_dtype()?;
    float_dispatch!(dt, "mish_backward_cpu", T => {
        let one = T::k(1.0);
        cpu_binary::<T, T>(iter, #[inline(always)] move |dy: T, x: T| {
            let s = one / (one + (-x).vexp());
            let t = x.vexp().vlog1p().vtanh();
            dy * (t + x * s * (one - t * t))
        })
    })
}
stub!(
    MISH_BACKWARD_STUB,
    "mish_backward_stub",
    ActFn,
    mish_backward_kernel
);

/// `elu`: `expm1(x input_scale) alpha scale` for `x <= 0`, else `x scale` (the scalars
/// converted to the computation type with c10's overflow check).
fn elu_kernel(
    iter: &TensorIteratorBase,
    alpha: &Scalar,
    scale: &Scalar,
    input_scale: &Scalar,
) -> Result<()> {
    let dt = iter.computation_dtype()?;
    float_dispatch!(dt, "elu_cpu", T => {
        let negcoef = T::from_scalar(alpha)? * T::from_scalar(scale)?;
        let poscoef = T::from_scalar(scale)?;
        let negiptcoef = T::from_scalar(input_scale)?;
        let zero = T::k(0.0);
        cpu_unary::<T, T>(iter, #[inline(always)] move |a: T| {
            let neg = (a * negiptcoef).vexpm1() * negcoef;
            let pos = a * poscoef;
            if a <= zero { neg } else { pos }
        })
    })
}
stub!(ELU_STUB, "elu_stub", EluFn, elu_kernel);

/// `elu_backward` over (grad_output, self_or_result).
fn elu_backward_kernel(
    iter: &TensorIteratorBase,
    alpha: &Scalar,
    scale: &Scalar,
    input_scale: &Scalar,
    is_result: bool,
) -> Result<()> {
    let dt = iter.computation_dtype()?;
    float_dispatch!(dt, "elu_backward_cpu", T => {
        let negcoef = T::from_scalar(alpha)? * T::from_scalar(scale)?;
        let poscoef = T::from_scalar(scale)?;
        let negiptcoef = T::from_scalar(input_scale)?;
        let zero = T::k(0.0);
        if is_result {
            cpu_binary::<T, T>(iter, #[inline(always)] move |a: T, b: T| {
                let neg = a * negiptcoef * (b + negcoef);
                let pos = a * poscoef;
                if b <= zero { neg } else { pos }
            })
        } else {
            cpu_binary::<T, T>(iter, #[inline(always)] move |a: T, b: T| {
                let neg = a * negiptcoef * negcoef * (b * negiptcoef).vexp();
                let pos = a * poscoef;
                if b <= zero { neg } else { pos }
            })
        }
    })
}
stub!(
    ELU_BACKWARD_STUB,
    "elu_backward_stub",
    EluBackwardFn,
    elu_backward_kernel
);

/// `leaky_relu`: `x` for `x > 0`, else `x negative_slope`.
fn leaky_relu_kernel(iter: &TensorIteratorBase, negval: &Scalar) -> Result<()> {
    let dt = iter.computation_dtype()?;
    float_dispatch!(dt, "leaky_relu_cpu", T => {
        let negval = T::from_scalar(negval)?;
        let (zero, one) = (T::k(0.0), T::k(1.0));
        cpu_unary::<T, T>(iter, #[inline(always)] move |a: T| {
            a * if a > zero { one } else { negval }
        })
    })
}
stub!(
    LEAKY_RELU_STUB,
    "leaky_relu_stub",
    ScalarActFn,
    leaky_relu_kernel
);

/// `leaky_relu_backward` over (self_or_result, grad_output).
fn leaky_relu_backward_kernel(iter: &TensorIteratorBase, negval: &Scalar) -> Result<()> {
    let dt = iter.computation_dtype()?;
    float_dispatch!(dt, "leaky_relu_backward_cpu", T => {
        let negval = T::from_scalar(negval)?;
        let (zero, one) = (T::k(0.0), T::k(1.0));
        cpu_binary::<T, T>(iter, #[inline(always)] move |a: T, b: T| {
            b * if a > zero { one } else { negval }
        })
    })
}
stub!(
    LEAKY_RELU_BACKWARD_STUB,
    "leaky_relu_backward_stub",
    ScalarActFn,
    leaky_relu_backward_kernel
);

/// `hardtanh_backward` over (grad_output, self): the gradient where `min < self < max`.
fn hardtanh_backward_kernel(iter: &TensorIteratorBase, min: &Scalar, max: &Scalar) -> Result<()> {
    let dt = iter.computation_dtype()?;
    float_dispatch!(dt, "hardshrink_backward_cpu", T => {
        let (lo, hi) = (T::from_scalar(min)?, T::from_scalar(max)?);
        let zero = T::k(0.0);
        cpu_binary::<T, T>(iter, #[inline(always)] move |g: T, x: T| {
            if x > lo && x < hi { g } else { zero }
        })
    })
}
stub!(
    HARDTANH_BACKWARD_STUB,
    "hardtanh_backward_stub",
    TwoScalarActFn,
    hardtanh_backward_kernel
);

/// `hardsigmoid`: `min(max(x + 3, 0), 6) / 6`.
fn hardsigmoid_kernel(iter: &TensorIteratorBase) -> Result<()> {
    let dt = iter.computation_dtype()?;
    float_dispatch!(dt, "hardsigmoid_cpu", T => {
        let (zero, three, six) = (T::k(0.0), T::k(3.0), T::k(6.0));
        cpu_unary::<T, T>(iter, #[inline(always)] move |x: T| {
            (x + three).nan_max(zero).nan_min(six) / six
        })
    })
}
stub!(
    HARDSIGMOID_STUB,
    "hardsigmoid_stub",
    ActFn,
    hardsigmoid_kernel
);

/// `hardsigmoid_backward` over (grad_output, self).
fn hardsigmoid_backward_kernel(iter: &TensorIteratorBase) -> Result<()> {
    let dt = iter.computation_dtype()?;
    float_dispatch!(dt, "hardsigmoid_backward", T => {
        let (zero, three, sixth) = (T::k(0.0), T::k(3.0), T::k((1.0f32 / 6.0) as f64));
        cpu_binary::<T, T>(iter, #[inline(always)] move |g: T, x: T| {
            if x > -three && x < three { g * sixth } else { zero }
        })
    })
}
stub!(
    HARDSIGMOID_BACKWARD_STUB,
    "hardsigmoid_backward_stub",
    ActFn,
    hardsigmoid_backward_kernel
);

/// `hardswish`: `x min(max(x + 3, 0), 6) / 6`.
fn hardswish_kernel(iter: &TensorIteratorBase) -> Result<()> {
    let dt = iter.computation_dtype()?;
    float_dispatch!(dt, "hardswish_cpu", T => {
        let (zero, three, six) = (T::k(0.0), T::k(3.0), T::k(6.0));
        cpu_unary::<T, T>(iter, #[inline(always)] move |x: T| {
            x * (x + three).nan_max(zero).nan_min(six) / six
        })
    })
}
stub!(HARDSWISH_STUB, "hardswish_stub", ActFn, hardswish_kernel);

/// `hardswish_backward` over (grad_output, self).
fn hardswish_backward_kernel(iter: &TensorIteratorBase) -> Result<()> {
    let dt = iter.computation_dtype()?;
    float_dispatch!(dt, "hardswish_backward_cpu", T => {
        let (zero, three, half) = (T::k(0.0), T::k(3.0), T::k(0.5));
        cpu_binary::<T, T>(iter, #[inline(always)] move |g: T, x: T| {
            // PyTorch 2.15: 0 from -3 down, the gradient from 3 up and for NaN.
            let mid = g * (x / three + half);
            let r = if x < three { mid } else { g };
            if x <= -three { zero } else { r }
        })
    })
}
stub!(
    HARDSWISH_BACKWARD_STUB,
    "hardswish_backward_stub",
    ActFn,
    hardswish_backward_kernel
);

/// `softplus`: `log1p(e^(x beta)) / beta`, or `x` where `x beta > threshold`.
fn softplus_kernel(iter: &TensorIteratorBase, beta: &Scalar, threshold: &Scalar) -> Result<()> {
    let dt = iter.computation_dtype()?;
    float_dispatch!(dt, "softplus_cpu", T => {
        let (beta, threshold) = (T::from_scalar(beta)?, T::from_scalar(threshold)?);
        cpu_unary::<T, T>(iter, #[inline(always)] move |a: T| {
            let ab = a * beta;
            let soft = ab.vexp().vlog1p() / beta;
            if ab > threshold { a } else { soft }
        })
    })
}
stub!(
    SOFTPLUS_STUB,
    "softplus_stub",
    TwoScalarActFn,
    softplus_kernel
);

/// `softplus_backward` over (grad_output, self): `g z / (z + 1)` with `z = e^(x beta)`.
fn softplus_backward_kernel(
    iter: &TensorIteratorBase,
    beta: &Scalar,
    threshold: &Scalar,
) -> Result<()> {
    let dt = iter.computation_dtype()?;
    float_dispatch!(dt, "softplus_backward_cpu", T => {
        let (beta, threshold) = (T::from_scalar(beta)?, T::from_scalar(threshold)?);
        let one = T::k(1.0);
        cpu_binary::<T, T>(iter, #[inline(always)] move |g: T, x: T| {
            let xb = x * beta;
            let z = xb.vexp();
            let soft = g * z / (z + one);
            if xb > threshold { g } else { soft }
        })
    })
}
stub!(
    SOFTPLUS_BACKWARD_STUB,
    "softplus_backward_stub",
    TwoScalarActFn,
    softplus_backward_kernel
);

/// `glu` over (first half, second half): `a sigmoid(b)`.
fn glu_kernel(iter: &TensorIteratorBase) -> Result<()> {
    let dt = iter.computation_dtype()?;
    float_dispatch!(dt, "glu_cpu", T => {
        let one = T::k(1.0);
        cpu_binary::<T, T>(iter, #[inline(always)] move |a: T, b: T| {
            a * (one / (one + (-b).vexp()))
        })
    })
}
stub!(GLU_STUB, "glu_stub", ActFn, glu_kernel);

/// `glu_backward`'s second half over (sigmoid(b), a, grad): `(1 - s) s a g`.
fn glu_backward_kernel(iter: &TensorIteratorBase) -> Result<()> {
    let dt = iter.computation_dtype()?;
    float_dispatch!(dt, "glu_backward_cpu", T => {
        let one = T::k(1.0);
        cpu_ternary::<T, T>(iter, #[inline(always)] move |s: T, a: T, g: T| {
            (one - s) * s * a * g
        })
    })
}
stub!(
    GLU_BACKWARD_STUB,
    "glu_backward_stub",
    ActFn,
    glu_backward_kernel
);

/// `log_sigmoid`'s buffer over (buffer, input): `e^-|x|`.
fn log_sigmoid_buffer_kernel(iter: &TensorIteratorBase) -> Result<()> {
    let dt = iter.computation_dtype()?;
    float_dispatch!(dt, "log_sigmoid_cpu", T => cpu_unary::<T, T>(
        iter,
        #[inline(always)]
        |x: T| (-x.vabs()).vexp(),
    ))
}
stub!(
    LOG_SIGMOID_BUFFER_STUB,
    "log_sigmoid_cpu_stub",
    ActFn,
    log_sigmoid_buffer_kernel
);

/// `log_sigmoid`'s output over (output, input, buffer): `min(x, 0) - log1p(buffer)`.
fn log_sigmoid_output_kernel(iter: &TensorIteratorBase) -> Result<()> {
    let dt = iter.computation_dtype()?;
    float_dispatch!(dt, "log_sigmoid_cpu", T => {
        let zero = T::k(0.0);
        cpu_binary::<T, T>(iter, #[inline(always)] move |x: T, b: T| {
            x.nan_min(zero) - b.vlog1p()
        })
    })
}
stub!(
    LOG_SIGMOID_OUTPUT_STUB,
    "log_sigmoid_cpu_stub",
    ActFn,
    log_sigmoid_output_kernel
);

/// `log_sigmoid_backward` over (input, buffer, grad_output).
fn log_sigmoid_backward_kernel(iter: &TensorIteratorBase) -> Result<()> {
    let dt = iter.computation_dtype()?;
    float_dispatch!(dt, "log_sigmoid_backward_cpu", T => {
        let (zero, one) = (T::k(0.0), T::k(1.0));
        cpu_ternary::<T, T>(iter, #[inline(always)] move |a: T, b: T, c: T| {
            let neg = a < zero;
            let max_deriv = if neg { one } else { zero };
            let sign = if neg { one } else { -one };
            (max_deriv - sign * (b / (one + b))) * c
        })
    })
}
stub!(
    LOG_SIGMOID_BACKWARD_STUB,
    "log_sigmoid_backward_stub",
    ActFn,
    log_sigmoid_backward_kernel
);

#[cfg(test)]
mod tests {
    use super::*;

    /// References from Python's `math.erf` (correctly rounded to f64).
    const ERF: [(f64, f64); 10] = [
        (0.0, 0.0),
        (1e-10, 1.1283791670955126e-10),
        (0.1, 0.1124629160182849),
        (0.5, 0.5204998778130465),
        (0.9, 0.7969082124228322),
        (1.0, 0.8427007929497149),
        (2.0, 0.9953222650189527),
        (3.0, 0.9999779095030014),
        (-1.7, -0.9837904585907745),
        (5.5, 0.9999999999999927),
    ];

    #[test]
    fn erf_matches_references() {
        for (x, e) in ERF {
            let d = erf_f64(x);
            assert!(
                (d - e).abs() <= 2.0 * f64::EPSILON * e.abs(),
                "erf_f64({x}) = {d}, not {e}"
            );
            let f = erf_f32(x as f32) as f64;
            assert!(
                (f - e).abs() <= 3.0 * f32::EPSILON as f64 * e.abs().max(1e-30),
                "erf_f32({x}) = {f}, not {e}"
            );
        }
        assert_eq!(erf_f32(f32::INFINITY), 1.0);
        assert_eq!(erf_f32(f32::NEG_INFINITY), -1.0);
        assert!(erf_f32(f32::NAN).is_nan());
        assert_eq!(erf_f64(f64::NEG_INFINITY), -1.0);
        assert!(erf_f64(f64::NAN).is_nan());
    }

    /// erf_f32 against erf_f64 over a dense grid: within 3 ulp of the f32 result.
    #[test]
    fn erf_f32_within_ulps() {
        let mut x = -6.0f32;
        while x < 6.0 {
            let r = erf_f64(x as f64);
            let f = erf_f32(x);
            let ulp = (r as f32).abs().max(f32::MIN_POSITIVE) * f32::EPSILON;
            assert!(
                ((f as f64) - r).abs() <= 3.0 * ulp as f64,
                "erf_f32({x}) = {f}, not {r}"
            );
            x += 0.000_37;
        }
    }

    #[test]
    fn expm1_f32_within_ulps() {
        let mut x = -3.0f32;
        while x < 3.0 {
            let r = (x as f64).exp_m1();
            let f = expm1_f32(x) as f64;
            let ulp = (r as f32).abs() as f64 * f32::EPSILON as f64;
            assert!((f - r).abs() <= 3.0 * ulp, "expm1_f32({x}) = {f}, not {r}");
            x += 0.000_71;
        }
        assert_eq!(expm1_f32(-0.0).to_bits(), (-0.0f32).to_bits());
        assert_eq!(expm1_f32(-1e-30), -1e-30);
        assert_eq!(expm1_f32(f32::NEG_INFINITY), -1.0);
        assert_eq!(expm1_f32(f32::INFINITY), f32::INFINITY);
    }

    #[test]
    fn log1p_matches_references() {
        for y in [0.0f64, 1e-20, 1e-8, 0.3, 1.0, 7.5, 1e10, -0.5, -1e-9] {
            let r = y.ln_1p();
            let d = log1p_f64(y);
            assert!(
                (d - r).abs() <= 4.0 * f64::EPSILON * r.abs(),
                "log1p_f64({y}) = {d}"
            );
            let f = log1p_f32(y as f32);
            let rf = (y as f32).ln_1p();
            assert!(
                (f - rf).abs() <= 4.0 * f32::EPSILON * rf.abs(),
                "log1p_f32({y}) = {f}"
            );
        }
        assert_eq!(log1p_f32(f32::INFINITY), f32::INFINITY);
        assert_eq!(log1p_f32(-1.0), f32::NEG_INFINITY);
        assert!(log1p_f32(-2.0).is_nan());
        assert!(log1p_f64(f64::NAN).is_nan());
    }
}
