//! Transcendental functions the CPU loops can vectorise: `exp`, `log`, `tanh` and `sigmoid`
//! of f32 and f64, and `sin`, `cos` and `tan` of f32 below 4.2e8 in magnitude, branch-free (special cases are selects), with no calls, so LLVM turns a
//! contiguous loop over them into SIMD code for each capability the kernels are compiled
//! for (PyTorch uses SLEEF's vector functions, `Sleef_expf16_u10` and friends, to the same
//! end).
//!
//! Note [Vectorised transcendentals]: the loops called libm's scalar `expf`/`logf` through a
//! function pointer per element: a 1K-element f32 `exp` took 1.5x candle's time (which calls
//! `expf` directly) and every `exp` was far behind PyTorch's SLEEF loops. These are the
//! FreeBSD/musl (fdlibm) algorithms, which libm's scalar forms also derive from: the same
//! argument reductions and polynomials, with `scalbn` written as two exact multiplications
//! by powers of two and the special cases (NaN, infinities, zero, negative arguments,
//! subnormal arguments and results) as selects. Errors stay within about 1 ulp
//! (`tests::*_within_ulps` measures them against f64 / libm references); PyTorch's own
//! vector forms are 1-ulp ones too, so neither matches a correctly rounded result bit for bit.
//! Every path of a loop (short runs, vector bodies, tails) calls the same function, so a
//! value does not depend on its position.

/// 1.5 * 2^23: adding it rounds an f32 of magnitude below 2^22 to an integer, kept in the low
/// bits of the sum's representation.
const ROUND_F32: f32 = 12_582_912.0;
/// 1.5 * 2^52, the same for f64 (magnitudes below 2^51).
const ROUND_F64: f64 = 6_755_399_441_055_744.0;

/// `2^k` for `k` in -126..=127.
#[inline(always)]
fn pow2_f32(k: i32) -> f32 {
    f32::from_bits(((k + 127) as u32) << 23)
}

/// `2^k` for `k` in -1022..=1023.
#[inline(always)]
fn pow2_f64(k: i64) -> f64 {
    f64::from_bits(((k + 1023) as u64) << 52)
}

/// `y * 2^k` for `k` in -151..=128 (and `y` near 1), rounded once: the first factor is exact.
#[inline(always)]
fn scale_f32(y: f32, k: i32) -> f32 {
    let k1 = k >> 1;
    y * pow2_f32(k1) * pow2_f32(k - k1)
}

/// `y * 2^k` for `k` in -1077..=1025 (and `y` near 1), rounded once.
#[inline(always)]
fn scale_f64(y: f64, k: i64) -> f64 {
    let k1 = k >> 1;
    y * pow2_f64(k1) * pow2_f64(k - k1)
}

/// The argument reduction of the f32 exponentials: `x = k ln2 + (hi - lo)`, `|hi - lo| <=
/// ln2 / 2`, with `x` clamped so that `k` stays in `scale_f32`'s range (NaN passes through and
/// stays NaN). Returns `(k, hi, lo)`.
#[inline(always)]
fn exp_reduce_f32(x: f32) -> (i32, f32, f32) {
    exp_reduce_f32_with(x, unfused)
}

/// `a * b + c` rounded twice, as the expression reads.
#[inline(always)]
fn unfused(a: f32, b: f32, c: f32) -> f32 {
    a * b + c
}

/// [`exp_reduce_f32`] with its multiply-adds done by `madd`.
#[inline(always)]
fn exp_reduce_f32_with(x: f32, madd: impl Fn(f32, f32, f32) -> f32) -> (i32, f32, f32) {
    const LN2_HI: f32 = 6.931_457_5e-1;
    const LN2_LO: f32 = 1.428_606_8e-6;
    const INV_LN2: f32 = std::f32::consts::LOG2_E;
    let xc = x.clamp(-105.0, 89.0);
    let kf = madd(xc, INV_LN2, ROUND_F32);
    let k = kf.to_bits() as i32 - ROUND_F32.to_bits() as i32;
    let kf = kf - ROUND_F32;
    // `xc - kf * LN2_HI`, exactly so when unfused.
    (k, madd(kf, -LN2_HI, xc), kf * LN2_LO)
}

/// `y * 2^k`, the f32 exponentials' result: +inf above 88.72 (0x42b17180), +0 below -103.97.
#[inline(always)]
fn exp_finish_f32(x: f32, y: f32, k: i32) -> f32 {
    const O_THRESHOLD: f32 = 8.872_168e1;
    const U_THRESHOLD: f32 = -1.039_720_8e2;
    let e = scale_f32(y, k);
    if x > O_THRESHOLD {
        f32::INFINITY
    } else if x < U_THRESHOLD {
        0.0
    } else {
        e
    }
}

/// `expf` (FreeBSD e_expf.c): `x = k ln2 + r`, `|r| <= ln2 / 2`, `e^r` by a rational form.
#[inline(always)]
pub fn exp_f32(x: f32) -> f32 {
    const P1: f32 = 1.666_662_5e-1;
    const P2: f32 = -2.766_733_3e-3;
    let (k, hi, lo) = exp_reduce_f32(x);
    let r = hi - lo;
    let t = r * r;
    let c = r - t * (P1 + t * P2);
    let y = 1.0 - ((lo - (r * c) / (2.0 - c)) - hi);
    exp_finish_f32(x, y, k)
}

/// `exp` of f32 by a polynomial, for the softmax loops (PyTorch's `Vectorized::exp_u20`,
/// which its softmax kernels use instead of the 1-ulp `exp`): the reduction of [`exp_f32`],
/// then Cephes' degree-7 form of `e^r` with no division, within 2 ulp of `e^x`. Below
/// -103.97 the result is +0 and NaN stays NaN; above 88.72, +inf.
#[inline(always)]
pub fn exp_u20_f32(x: f32) -> f32 {
    exp_u20_f32_with(x, unfused)
}

/// [`exp_u20_f32`] with its multiply-adds fused: each `a * b + c` rounded once. For loops
/// compiled with FMA (the AVX2 and AVX-512 kernels, where it is a third fewer instructions);
/// elsewhere `mul_add` is a software call, and the loops must be inlined into their ISA's
/// trampoline for it to be one instruction. Its values may differ from `exp_u20_f32`'s in the
/// last bit, as PyTorch's vector `exp_u20` (which fuses) differs from its scalar one.
#[inline(always)]
pub fn exp_u20_fused_f32(x: f32) -> f32 {
    exp_u20_f32_with(x, f32::mul_add)
}

/// The reduction and polynomial of [`exp_u20_f32`], multiply-adds done by `madd`.
#[inline(always)]
fn exp_u20_f32_with(x: f32, madd: impl Fn(f32, f32, f32) -> f32) -> f32 {
    let (k, hi, lo) = exp_reduce_f32_with(x, &madd);
    let r = hi - lo;
    let p = 1.987_569_2e-4_f32;
    let p = madd(p, r, 1.398_199_9e-3);
    let p = madd(p, r, 8.333_452e-3);
    let p = madd(p, r, 4.166_579_6e-2);
    let p = madd(p, r, 1.666_666_5e-1);
    let p = madd(p, r, 0.5);
    let y = madd(p, r * r, r) + 1.0;
    exp_finish_f32(x, y, k)
}

/// `exp` (FreeBSD e_exp.c).
#[inline(always)]
pub fn exp_f64(x: f64) -> f64 {
    const O_THRESHOLD: f64 = 7.097_827_128_933_84e2;
    const U_THRESHOLD: f64 = -7.451_332_191_019_411e2;
    const LN2_HI: f64 = 6.931_471_803_691_238e-1;
    const LN2_LO: f64 = 1.908_214_929_270_587_7e-10;
    const INV_LN2: f64 = std::f64::consts::LOG2_E;
    const P1: f64 = 1.666_666_666_666_660_2e-1;
    const P2: f64 = -2.777_777_777_701_559_3e-3;
    const P3: f64 = 6.613_756_321_437_934e-5;
    const P4: f64 = -1.653_390_220_546_525_2e-6;
    const P5: f64 = 4.138_136_797_057_238_5e-8;
    let xc = x.clamp(-746.0, 710.0);
    let kf = xc * INV_LN2 + ROUND_F64;
    let k = kf.to_bits() as i64 - ROUND_F64.to_bits() as i64;
    let kf = kf - ROUND_F64;
    let hi = xc - kf * LN2_HI;
    let lo = kf * LN2_LO;
    let r = hi - lo;
    let t = r * r;
    let c = r - t * (P1 + t * (P2 + t * (P3 + t * (P4 + t * P5))));
    let y = 1.0 - ((lo - (r * c) / (2.0 - c)) - hi);
    let e = scale_f64(y, k);
    if x > O_THRESHOLD {
        f64::INFINITY
    } else if x < U_THRESHOLD {
        0.0
    } else {
        e
    }
}

/// `logf` (FreeBSD e_logf.c / musl): `x = 2^k m`, `m` in `[sqrt(2)/2, sqrt(2))`,
/// `log(m) = 2 atanh(f / (2 + f))` by a polynomial in `s^2`.
#[inline(always)]
pub fn log_f32(x: f32) -> f32 {
    const LN2_HI: f32 = 6.931_381e-1; // 0x3f317180
    const LN2_LO: f32 = 9.058_001e-6; // 0x3717f7d1
    const LG1: f32 = 0.666_666_6; // 0xaaaaaa.0p-24
    const LG2: f32 = 0.400_009_72; // 0xccce13.0p-25
    const LG3: f32 = 0.284_987_87; // 0x91e9ee.0p-25
    const LG4: f32 = 0.242_790_79; // 0xf89e26.0p-26
                                   // Subnormal arguments are scaled into the normal range first.
    let sub = x < f32::MIN_POSITIVE;
    let xs = if sub { x * 33_554_432.0 } else { x }; // 2^25
    let ix = xs.to_bits().wrapping_add(0x3f80_0000 - 0x3f35_04f3);
    let k = (ix >> 23) as i32 - 0x7f - if sub { 25 } else { 0 };
    let m = f32::from_bits((ix & 0x007f_ffff) + 0x3f35_04f3);
    let f = m - 1.0;
    let s = f / (2.0 + f);
    let z = s * s;
    let w = z * z;
    let t1 = w * (LG2 + w * LG4);
    let t2 = z * (LG1 + w * LG3);
    let r = t2 + t1;
    let hfsq = 0.5 * f * f;
    let dk = k as f32;
    let l = s * (hfsq + r) + dk * LN2_LO - hfsq + f + dk * LN2_HI;
    if x == 0.0 {
        f32::NEG_INFINITY
    } else if x < 0.0 || x.is_nan() {
        f32::NAN
    } else if x == f32::INFINITY {
        x
    } else {
        l
    }
}

/// `log` (FreeBSD e_log.c / musl).
#[inline(always)]
pub fn log_f64(x: f64) -> f64 {
    const LN2_HI: f64 = 6.931_471_803_691_238e-1;
    const LN2_LO: f64 = 1.908_214_929_270_587_7e-10;
    const LG1: f64 = 6.666_666_666_666_735e-1;
    const LG2: f64 = 3.999_999_999_940_942e-1;
    const LG3: f64 = 2.857_142_874_366_239e-1;
    const LG4: f64 = 2.222_219_843_214_978_4e-1;
    const LG5: f64 = 1.818_357_216_161_805e-1;
    const LG6: f64 = 1.531_383_769_920_937_3e-1;
    const LG7: f64 = 1.479_819_860_511_658_6e-1;
    let sub = x < f64::MIN_POSITIVE;
    let xs = if sub { x * 18_014_398_509_481_984.0 } else { x }; // 2^54
    let bits = xs.to_bits();
    let hx = ((bits >> 32) as u32).wrapping_add(0x3ff0_0000 - 0x3fe6_a09e);
    let k = (hx >> 20) as i64 - 0x3ff - if sub { 54 } else { 0 };
    let hm = (hx & 0x000f_ffff) + 0x3fe6_a09e;
    let m = f64::from_bits(((hm as u64) << 32) | (bits & 0xffff_ffff));
    let f = m - 1.0;
    let hfsq = 0.5 * f * f;
    let s = f / (2.0 + f);
    let z = s * s;
    let w = z * z;
    let t1 = w * (LG2 + w * (LG4 + w * LG6));
    let t2 = z * (LG1 + w * (LG3 + w * (LG5 + w * LG7)));
    let r = t2 + t1;
    let dk = k as f64;
    let l = s * (hfsq + r) + dk * LN2_LO - hfsq + f + dk * LN2_HI;
    if x == 0.0 {
        f64::NEG_INFINITY
    } else if x < 0.0 || x.is_nan() {
        f64::NAN
    } else if x == f64::INFINITY {
        x
    } else {
        l
    }
}

/// `tanh` of f32 (Cephes tanhf): an odd polynomial below 0.625, else
/// `1 - 2 / (e^(2|x|) + 1)` with the sign of `x`.
#[inline(always)]
pub fn tanh_f32(x: f32) -> f32 {
    let a = x.abs();
    let z = x * x;
    let small =
        ((((-5.704_988_7e-3 * z + 2.063_909e-2) * z - 5.373_971_6e-2) * z + 1.333_144_2e-1) * z
            - 3.333_328e-1)
            * z
            * x
            + x;
    // e^(2|x|) overflows to infinity from 44.4 on, and 2 / inf is 0: tanh is then 1.
    let e = exp_f32(2.0 * a);
    let large = (1.0 - 2.0 / (e + 1.0)).copysign(x);
    // `x == 0`: x itself (the polynomial's terms would turn -0 into +0).
    if a == 0.0 {
        x
    } else if a < 0.625 {
        small
    } else {
        large
    }
}

/// `tanh` of f64 (Cephes tanh): a rational form below 0.625, else as [`tanh_f32`].
#[inline(always)]
pub fn tanh_f64(x: f64) -> f64 {
    const P0: f64 = -9.643_991_794_250_523e-1;
    const P1: f64 = -9.928_772_310_019_186e1;
    const P2: f64 = -1.614_687_684_417_084_5e3;
    const Q0: f64 = 1.128_116_784_916_324e2;
    const Q1: f64 = 2.235_488_390_601_004_6e3;
    const Q2: f64 = 4.844_063_053_251_255e3;
    let a = x.abs();
    let z = x * x;
    let p = (P0 * z + P1) * z + P2;
    let q = ((z + Q0) * z + Q1) * z + Q2;
    let small = x + x * z * (p / q);
    let e = exp_f64(2.0 * a);
    let large = (1.0 - 2.0 / (e + 1.0)).copysign(x);
    if a == 0.0 {
        x
    } else if a < 0.625 {
        small
    } else {
        large
    }
}

/// `sigmoid` as PyTorch's vector form computes it: `1 / (1 + e^-x)`.
#[inline(always)]
pub fn sigmoid_f32(x: f32) -> f32 {
    1.0 / (1.0 + exp_f32(-x))
}

/// `sigmoid` of f64.
#[inline(always)]
pub fn sigmoid_f64(x: f64) -> f64 {
    1.0 / (1.0 + exp_f64(-x))
}

/// Below this magnitude (`2^28 * pi/2`, musl's `__rem_pio2f` bound) an f32's reduction by
/// `pi/2` in f64 with a two-part `pi/2` is accurate ([`sin_f32_medium`] and friends); above it,
/// and for infinities and NaN, the trigonometric functions take libm's scalar forms (a
/// Payne-Hanek reduction).
pub const TRIG_MEDIUM_F32: f32 = 421_657_440.0; // 0x4dc90fdb

/// `x - n pi/2` in f64 and `n mod 4` for `|x| <` [`TRIG_MEDIUM_F32`] (musl `__rem_pio2f`).
#[inline(always)]
fn rem_pio2_f32(x: f32) -> (f64, i32) {
    const INV_PIO2: f64 = std::f64::consts::FRAC_2_PI;
    const PIO2_1: f64 = 1.570_796_310_901_641_8; // the first 33 bits of pi/2
    const PIO2_1T: f64 = 1.589_325_477_352_819_7e-8; // pi/2 - PIO2_1
    let x = x as f64;
    let nf = x * INV_PIO2 + ROUND_F64;
    let n = nf.to_bits() as i32; // the low bits of the rounded integer (two's complement)
    let nf = nf - ROUND_F64;
    (x - nf * PIO2_1 - nf * PIO2_1T, n)
}

/// `sin` on `[-pi/4, pi/4]` in f64 for an f32 result (musl `__sindf`: |error| < 2^-37).
#[inline(always)]
fn sindf(x: f64) -> f64 {
    const S1: f64 = -1.666_666_664_162_652_4e-1;
    const S2: f64 = 8.333_329_385_889_463e-3;
    const S3: f64 = -1.983_933_483_609_663_2e-4;
    const S4: f64 = 2.718_311_493_989_822e-6;
    let z = x * x;
    let w = z * z;
    let r = S3 + z * S4;
    let s = z * x;
    (x + s * (S1 + z * S2)) + s * w * r
}

/// `cos` on `[-pi/4, pi/4]` in f64 for an f32 result (musl `__cosdf`).
#[inline(always)]
fn cosdf(x: f64) -> f64 {
    const C0: f64 = -4.999_999_972_510_31e-1;
    const C1: f64 = 4.166_662_332_373_906e-2;
    const C2: f64 = -1.388_676_377_460_993e-3;
    const C3: f64 = 2.439_044_879_627_741e-5;
    let z = x * x;
    let w = z * z;
    let r = C2 + z * C3;
    ((1.0 + z * C0) + w * C1) + (w * z) * r
}

/// `tan` on `[-pi/4, pi/4]` in f64, or `-1/tan` when `odd` (musl `__tandf`).
#[inline(always)]
fn tandf(x: f64, odd: bool) -> f64 {
    const T: [f64; 6] = [
        3.333_313_950_307_914e-1,
        1.333_920_027_129_767_4e-1,
        5.338_123_784_456_704e-2,
        2.452_831_811_665_472_8e-2,
        2.974_357_433_599_673e-3,
        9.465_647_849_436_732e-3,
    ];
    let z = x * x;
    let r = T[4] + z * T[5];
    let t = T[2] + z * T[3];
    let w = z * z;
    let s = z * x;
    let u = T[0] + z * T[1];
    let r = (x + s * u) + (s * w) * (t + w * r);
    if odd {
        -1.0 / r
    } else {
        r
    }
}

/// `sin` of an f32 of magnitude below [`TRIG_MEDIUM_F32`], branch-free: the reduced argument's
/// sine or cosine by the quadrant (musl sinf's medium path). Below 2^-12 `sin x` rounds to
/// `x` (and the polynomial would turn -0 into +0).
#[inline(always)]
pub fn sin_f32_medium(x: f32) -> f32 {
    let (r, n) = rem_pio2_f32(x);
    let (s, c) = (sindf(r), cosdf(r));
    let v = if n & 1 == 0 { s } else { c };
    let v = if n & 2 == 0 { v } else { -v };
    if x.abs() < 2.441_406_3e-4 {
        x
    } else {
        v as f32
    }
}

/// `cos` of an f32 of magnitude below [`TRIG_MEDIUM_F32`], branch-free (`sin` a quadrant on).
#[inline(always)]
pub fn cos_f32_medium(x: f32) -> f32 {
    let (r, n) = rem_pio2_f32(x);
    let (s, c) = (sindf(r), cosdf(r));
    let v = if n & 1 == 0 { c } else { s };
    let v = if (n + 1) & 2 == 0 { v } else { -v };
    v as f32
}

/// `tan` of an f32 of magnitude below [`TRIG_MEDIUM_F32`], branch-free.
#[inline(always)]
pub fn tan_f32_medium(x: f32) -> f32 {
    let (r, n) = rem_pio2_f32(x);
    let v = tandf(r, n & 1 != 0) as f32;
    if x.abs() < 2.441_406_3e-4 {
        x
    } else {
        v
    }
}

/// `sin` of f32: [`sin_f32_medium`], or libm's beyond its range. Contiguous runs decide per
/// chunk (`TrigOp` in unary_kernels.rs), so that a run of medium arguments vectorises.
#[inline(always)]
pub fn sin_f32(x: f32) -> f32 {
    if x.abs() < TRIG_MEDIUM_F32 {
        sin_f32_medium(x)
    } else {
        x.sin()
    }
}

/// `cos` of f32: [`cos_f32_medium`], or libm's beyond its range.
#[inline(always)]
pub fn cos_f32(x: f32) -> f32 {
    if x.abs() < TRIG_MEDIUM_F32 {
        cos_f32_medium(x)
    } else {
        x.cos()
    }
}

/// `tan` of f32: [`tan_f32_medium`], or libm's beyond its range.
#[inline(always)]
pub fn tan_f32(x: f32) -> f32 {
    if x.abs() < TRIG_MEDIUM_F32 {
        tan_f32_medium(x)
    } else {
        x.tan()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Distance in representable f32 values (0 for equal values, NaN == NaN).
    fn ulps32(a: f32, b: f64) -> f64 {
        let want = b as f32;
        if a.is_nan() && want.is_nan() {
            return 0.0;
        }
        if a == want {
            return 0.0;
        }
        if !a.is_finite() || !want.is_finite() {
            return f64::INFINITY;
        }
        // The error against the f64 reference, in units of the f32 spacing at the result.
        let spacing = {
            let w = want.abs().max(f32::MIN_POSITIVE * f32::EPSILON);
            (f32::from_bits(w.to_bits() + 1) - w) as f64
        };
        (a as f64 - b).abs() / spacing
    }

    fn ulps64(a: f64, b: f64) -> f64 {
        if (a.is_nan() && b.is_nan()) || a == b {
            return 0.0;
        }
        if !a.is_finite() || !b.is_finite() {
            return f64::INFINITY;
        }
        let ord = |x: f64| {
            let i = x.to_bits() as i64;
            if i < 0 {
                i64::MIN - i
            } else {
                i
            }
        };
        (ord(a) - ord(b)).unsigned_abs() as f64
    }

    /// Arguments across the whole range: a dense sweep of each range of interest, plus a
    /// pseudo-random spread of bit patterns.
    fn args32(lo: f32, hi: f32) -> Vec<f32> {
        let mut v: Vec<f32> = (0..=20_000)
            .map(|i| lo + (hi - lo) * i as f32 / 20_000.0)
            .collect();
        let mut s = 0x1234_5678u32;
        for _ in 0..20_000 {
            s ^= s << 13;
            s ^= s >> 17;
            s ^= s << 5;
            let x = f32::from_bits(s);
            if x.is_finite() && x >= lo && x <= hi {
                v.push(x);
            }
        }
        v
    }

    fn args64(lo: f64, hi: f64) -> Vec<f64> {
        let mut v: Vec<f64> = (0..=20_000)
            .map(|i| lo + (hi - lo) * i as f64 / 20_000.0)
            .collect();
        let mut s = 0x1234_5678_9abc_def0u64;
        for _ in 0..20_000 {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            let x = f64::from_bits(s);
            if x.is_finite() && x >= lo && x <= hi {
                v.push(x);
            }
        }
        v
    }

    fn worst32(f: fn(f32) -> f32, r: fn(f64) -> f64, xs: &[f32]) -> (f64, f32) {
        xs.iter()
            .map(|&x| (ulps32(f(x), r(x as f64)), x))
            .fold((0.0, 0.0), |a, b| if b.0 > a.0 { b } else { a })
    }

    fn worst64(f: fn(f64) -> f64, r: fn(f64) -> f64, xs: &[f64]) -> (f64, f64) {
        xs.iter()
            .map(|&x| (ulps64(f(x), r(x)), x))
            .fold((0.0, 0.0), |a, b| if b.0 > a.0 { b } else { a })
    }

    #[test]
    fn f32_functions_within_ulps() {
        // Against the f64 functions (libm, ~0.5 ulp at f64): the f32 result's own error.
        let (e, x) = worst32(exp_f32, f64::exp, &args32(-104.0, 88.8));
        assert!(e <= 1.0, "exp_f32({x:e}): {e} ulp");
        let (e, x) = worst32(exp_u20_f32, f64::exp, &args32(-104.0, 88.8));
        assert!(e <= 2.0, "exp_u20_f32({x:e}): {e} ulp");
        assert_eq!(exp_u20_f32(f32::NEG_INFINITY), 0.0);
        assert_eq!(exp_u20_f32(0.0), 1.0);
        assert!(exp_u20_f32(f32::NAN).is_nan());
        assert_eq!(exp_u20_f32(89.0), f32::INFINITY);
        let (e, x) = worst32(exp_u20_fused_f32, f64::exp, &args32(-104.0, 88.8));
        assert!(e <= 2.0, "exp_u20_fused_f32({x:e}): {e} ulp");
        assert_eq!(exp_u20_fused_f32(f32::NEG_INFINITY), 0.0);
        assert_eq!(exp_u20_fused_f32(0.0), 1.0);
        assert!(exp_u20_fused_f32(f32::NAN).is_nan());
        assert_eq!(exp_u20_fused_f32(89.0), f32::INFINITY);
        assert_eq!(
            exp_u20_fused_f32(-103.0),
            exp_u20_f32(-103.0),
            "a subnormal result"
        );
        let (e, x) = worst32(log_f32, f64::ln, &args32(0.0, f32::MAX));
        assert!(e <= 1.0, "log_f32({x:e}): {e} ulp");
        let (e, x) = worst32(log_f32, f64::ln, &args32(0.0, 4.0));
        assert!(e <= 1.0, "log_f32({x:e}): {e} ulp");
        let (e, x) = worst32(tanh_f32, f64::tanh, &args32(-12.0, 12.0));
        assert!(e <= 2.0, "tanh_f32({x:e}): {e} ulp");
        // Below -88.72, e^-x overflows f32 and the formula gives 0, as PyTorch's does.
        let (e, x) = worst32(
            sigmoid_f32,
            |x| 1.0 / (1.0 + (-x).exp()),
            &args32(-88.7, 90.0),
        );
        assert!(e <= 2.0, "sigmoid_f32({x:e}): {e} ulp");
    }

    #[test]
    fn f32_trigonometry_within_ulps() {
        // The f32 closest to multiples of pi/2 (the reduction's hardest arguments), a dense
        // sweep near zero and across the medium range, and bit patterns up to f32::MAX (the
        // libm fallback).
        let mut xs = args32(-10.0, 10.0);
        xs.extend(args32(-1e6, 1e6));
        xs.extend(args32(-4e8, 4e8));
        xs.extend(args32(-f32::MAX, f32::MAX));
        for k in 1..20_000i64 {
            let m = k * k * 7;
            let x = (m as f64 * std::f64::consts::FRAC_PI_2) as f32;
            xs.extend([x, -x, f32::from_bits(x.to_bits() + 1)]);
        }
        let (e, x) = worst32(sin_f32, f64::sin, &xs);
        assert!(e <= 1.0, "sin_f32({x:e}): {e} ulp");
        let (e, x) = worst32(cos_f32, f64::cos, &xs);
        assert!(e <= 1.0, "cos_f32({x:e}): {e} ulp");
        let (e, x) = worst32(tan_f32, f64::tan, &xs);
        assert!(e <= 1.0, "tan_f32({x:e}): {e} ulp");
        // The medium forms are the fallback's forms' values below the bound.
        for &x in xs.iter().filter(|x| x.abs() < TRIG_MEDIUM_F32) {
            assert_eq!(sin_f32(x).to_bits(), sin_f32_medium(x).to_bits());
            assert_eq!(cos_f32(x).to_bits(), cos_f32_medium(x).to_bits());
        }
    }

    #[test]
    fn f64_functions_within_ulps() {
        let (e, x) = worst64(exp_f64, f64::exp, &args64(-745.0, 709.7));
        assert!(e <= 1.0, "exp_f64({x:e}): {e} ulp against libm");
        let (e, x) = worst64(log_f64, f64::ln, &args64(0.0, f64::MAX));
        assert!(e <= 1.0, "log_f64({x:e}): {e} ulp against libm");
        let (e, x) = worst64(tanh_f64, f64::tanh, &args64(-25.0, 25.0));
        assert!(e <= 2.0, "tanh_f64({x:e}): {e} ulp against libm");
        let (e, x) = worst64(
            sigmoid_f64,
            |x| 1.0 / (1.0 + (-x).exp()),
            &args64(-709.0, 750.0),
        );
        assert!(e <= 2.0, "sigmoid_f64({x:e}): {e} ulp");
    }

    #[test]
    fn special_values() {
        let nan32 = f32::NAN;
        assert!(exp_f32(nan32).is_nan() && log_f32(nan32).is_nan() && tanh_f32(nan32).is_nan());
        assert_eq!(exp_f32(f32::INFINITY), f32::INFINITY);
        assert_eq!(exp_f32(f32::NEG_INFINITY), 0.0);
        assert_eq!(exp_f32(0.0), 1.0);
        assert_eq!(exp_f32(-0.0), 1.0);
        assert_eq!(exp_f32(88.8), f32::INFINITY);
        assert_eq!(exp_f32(-104.0), 0.0);
        // Subnormal results.
        assert_eq!(exp_f32(-100.0), (-100.0f64).exp() as f32);
        assert_eq!(exp_f32(-103.0), (-103.0f64).exp() as f32);
        assert_eq!(log_f32(0.0), f32::NEG_INFINITY);
        assert_eq!(log_f32(-0.0), f32::NEG_INFINITY);
        assert!(log_f32(-1.0).is_nan() && log_f32(f32::NEG_INFINITY).is_nan());
        assert_eq!(log_f32(f32::INFINITY), f32::INFINITY);
        assert_eq!(log_f32(1.0), 0.0);
        // Subnormal arguments.
        for x in [f32::from_bits(1), f32::from_bits(0x0040_0000), 1e-40] {
            assert!(ulps32(log_f32(x), (x as f64).ln()) <= 1.0, "log_f32({x:e})");
        }
        assert_eq!(tanh_f32(f32::INFINITY), 1.0);
        assert_eq!(tanh_f32(f32::NEG_INFINITY), -1.0);
        assert_eq!(tanh_f32(-0.0).to_bits(), (-0.0f32).to_bits());
        assert_eq!(sigmoid_f32(f32::NEG_INFINITY), 0.0);
        assert_eq!(sigmoid_f32(-89.0), 0.0);
        assert_eq!(sigmoid_f32(f32::INFINITY), 1.0);
        for f in [sin_f32, cos_f32, tan_f32] {
            assert!(f(nan32).is_nan() && f(f32::INFINITY).is_nan());
            assert!(f(f32::NEG_INFINITY).is_nan());
        }
        assert_eq!(sin_f32(-0.0).to_bits(), (-0.0f32).to_bits());
        assert_eq!(tan_f32(-0.0).to_bits(), (-0.0f32).to_bits());
        assert_eq!(cos_f32(-0.0), 1.0);
        assert_eq!(sin_f32(1e-30), 1e-30);
        assert_eq!(sin_f32(f32::from_bits(1)), f32::from_bits(1));

        assert!(exp_f64(f64::NAN).is_nan() && log_f64(f64::NAN).is_nan());
        assert!(tanh_f64(f64::NAN).is_nan());
        assert_eq!(exp_f64(f64::INFINITY), f64::INFINITY);
        assert_eq!(exp_f64(f64::NEG_INFINITY), 0.0);
        assert_eq!(exp_f64(710.0), f64::INFINITY);
        assert_eq!(exp_f64(-746.0), 0.0);
        for x in [-740.0, -708.5, -745.0] {
            assert!(ulps64(exp_f64(x), x.exp()) <= 1.0, "exp_f64({x})");
        }
        assert_eq!(log_f64(0.0), f64::NEG_INFINITY);
        assert!(log_f64(-2.0).is_nan());
        assert_eq!(log_f64(f64::INFINITY), f64::INFINITY);
        assert_eq!(log_f64(1.0), 0.0);
        for x in [f64::from_bits(1), 1e-310] {
            assert!(ulps64(log_f64(x), x.ln()) <= 1.0, "log_f64({x:e})");
        }
        assert_eq!(tanh_f64(f64::INFINITY), 1.0);
        assert_eq!(tanh_f64(-0.0).to_bits(), (-0.0f64).to_bits());
    }
}
