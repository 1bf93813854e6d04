//! The activations against naive references computed in f64 in this file: contiguous,
//! transposed and strided inputs, long runs (the vector loops) and short ones, every
//! instruction set, float32 / float64 / float16 / bfloat16, the in-place and out= forms, the
//! `*_backward` operators, PyTorch's error texts and dtype refusals, and meta shapes.

use crate::common::{msg, values as f64v};
use ratten_aten::dispatch_stub::{detected_cpu_capability, with_cpu_capability, CpuCapability};
use ratten_aten::{functions as F, Tensor};
use ratten_core::{Device, Result, ScalarType};

/// `erf` by its Taylor series (|x| <= 4 here: the terms stay below 1e6, so the sum keeps
/// about 1e-10 absolute).
fn erf(x: f64) -> f64 {
    let mut term = x;
    let mut sum = x;
    let x2 = x * x;
    let mut n = 0.0;
    while term.abs() > 1e-17 * sum.abs().max(1e-300) {
        n += 1.0;
        term *= -x2 / n;
        sum += term / (2.0 * n + 1.0);
    }
    sum * 2.0 / std::f64::consts::PI.sqrt()
}

fn sigmoid(x: f64) -> f64 {
    1.0 / (1.0 + (-x).exp())
}

fn softplus(x: f64, beta: f64, threshold: f64) -> f64 {
    if x * beta > threshold {
        x
    } else {
        (x * beta).exp().ln_1p() / beta
    }
}

const BETA: f64 = 0.797_884_560_802_865_4; // sqrt(2 / pi)
const KAPPA: f64 = 0.044715;

/// `erfc(z)` for `z >= 2.5` by its continued fraction (where `1 - erf` would cancel).
fn erfc_large(z: f64) -> f64 {
    let mut f = z;
    for k in (1..=80).rev() {
        f = z + (k as f64 / 2.0) / f;
    }
    (-z * z).exp() / (std::f64::consts::PI.sqrt() * f)
}

/// `1 + erf(z)`.
fn one_plus_erf(z: f64) -> f64 {
    if z < -2.5 {
        erfc_large(-z)
    } else if z > 2.5 {
        2.0 - erfc_large(z)
    } else {
        1.0 + erf(z)
    }
}

fn gelu(x: f64) -> f64 {
    0.5 * x * one_plus_erf(x / std::f64::consts::SQRT_2)
}
fn gelu_tanh(x: f64) -> f64 {
    0.5 * x * (1.0 + (BETA * (x + KAPPA * x * x * x)).tanh())
}
fn gelu_grad(x: f64) -> f64 {
    0.5 * one_plus_erf(x / std::f64::consts::SQRT_2)
        + x * (-0.5 * x * x).exp() / (2.0 * std::f64::consts::PI).sqrt()
}
fn gelu_tanh_grad(x: f64) -> f64 {
    let t = (BETA * (x + KAPPA * x * x * x)).tanh();
    0.5 * (1.0 + t) + 0.5 * x * (1.0 - t * t) * BETA * (1.0 + 3.0 * KAPPA * x * x)
}
fn mish(x: f64) -> f64 {
    x * x.exp().ln_1p().tanh()
}
fn elu(x: f64, alpha: f64, scale: f64, input_scale: f64) -> f64 {
    if x <= 0.0 {
        ((x * input_scale).exp() - 1.0) * alpha * scale
    } else {
        x * scale
    }
}

/// Inputs: a spread over [-lo, hi] with zero, a few special values kept out (NaN is checked
/// separately).
fn values(n: usize, lo: f64, hi: f64) -> Vec<f64> {
    (0..n)
        .map(|i| {
            let t = ((i * 7919) % n) as f64 / (n - 1).max(1) as f64;
            lo + (hi - lo) * t
        })
        .collect()
}

/// The tolerances of a result of `dt` against an f64 reference.
fn tol(dt: ScalarType) -> (f64, f64) {
    match dt {
        ScalarType::Double => (1e-12, 1e-12),
        ScalarType::Float => (3e-6, 2e-6),
        ScalarType::Half => (2e-3, 2e-3),
        _ => (1.6e-2, 1.6e-2),
    }
}

fn assert_close(got: &[f64], want: &[f64], dt: ScalarType, what: &str) {
    assert_eq!(got.len(), want.len(), "{what}: length");
    let (rtol, atol) = tol(dt);
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        let ok = (g - w).abs() <= atol + rtol * w.abs() || (g.is_nan() && w.is_nan());
        assert!(ok, "{what} [{dt}] element {i}: {g} != {w}");
    }
}

/// The input `v` of dtype `dt` in one of three layouts: contiguous, a transposed view, every
/// other element of a wider tensor. Returns the tensor and its values in its logical order
/// (rounded to `dt`).
fn make(v: &[f64], dt: ScalarType, layout: u8) -> (Tensor, Vec<f64>) {
    let n = v.len() as i64;
    let base = Tensor::from_slice(v, &[n]).unwrap().to_dtype(dt).unwrap();
    let t = match layout {
        0 => base,
        1 => {
            // n = rows * 2: a (2, n/2) transposed view of the (n/2, 2) contiguous tensor.
            base.view(&[n / 2, 2]).unwrap().t().unwrap()
        }
        _ => {
            let wide = F::zeros_with(&[2 * n], Some(dt), None, None, None).unwrap();
            let s = F::slice_with(&wide, 0, Some(0), None, 2).unwrap();
            s.copy_(&base).unwrap();
            s
        }
    };
    let vals = f64v(&t);
    (t, vals)
}

const FLOATS: [ScalarType; 4] = [
    ScalarType::Float,
    ScalarType::Double,
    ScalarType::Half,
    ScalarType::BFloat16,
];

/// Checks a unary op against `reference` over dtypes, layouts and lengths (short runs, a
/// run of a few vectors, a long one split into vector bodies and tails), on every ISA.
fn check_unary(
    name: &str,
    op: impl Fn(&Tensor) -> Result<Tensor>,
    reference: impl Fn(f64) -> f64,
    lo: f64,
    hi: f64,
) {
    let cap = detected_cpu_capability();
    for isa in [
        CpuCapability::Default,
        CpuCapability::Avx2,
        CpuCapability::Avx512,
    ] {
        if isa > cap {
            continue;
        }
        with_cpu_capability(isa, || {
            for dt in FLOATS {
                for (n, layout) in [(6, 0), (38, 0), (1026, 0), (1026, 1), (518, 2)] {
                    let v = values(n, lo, hi);
                    let (x, xv) = make(&v, dt, layout);
                    let y = op(&x).unwrap();
                    assert_eq!(y.dtype(), dt, "{name}: dtype");
                    assert_eq!(y.sizes(), x.sizes(), "{name}: shape");
                    let want: Vec<f64> = xv.iter().map(|&a| reference(a)).collect();
                    assert_close(
                        &f64v(&y),
                        &want,
                        dt,
                        &format!("{name} n={n} layout={layout}"),
                    );
                }
            }
        })
        .unwrap();
    }
}

/// The same for an op of (grad_output, self).
fn check_binary(
    name: &str,
    op: impl Fn(&Tensor, &Tensor) -> Result<Tensor>,
    reference: impl Fn(f64, f64) -> f64,
    lo: f64,
    hi: f64,
) {
    for dt in FLOATS {
        for (n, layout) in [(6, 0), (1026, 0), (1026, 1), (518, 2)] {
            let v = values(n, lo, hi);
            let g = values(n, -1.5, 2.0);
            let (x, xv) = make(&v, dt, layout);
            let (go, gv) = make(&g, dt, 0);
            let go = go.view(x.sizes().as_slice()).unwrap_or(go);
            let gv = if layout == 1 { f64v(&go) } else { gv };
            let y = op(&go, &x).unwrap();
            assert_eq!(y.dtype(), dt, "{name}: dtype");
            let want: Vec<f64> = gv.iter().zip(&xv).map(|(&g, &a)| reference(g, a)).collect();
            assert_close(
                &f64v(&y),
                &want,
                dt,
                &format!("{name} n={n} layout={layout}"),
            );
        }
    }
}

#[test]
fn gelu_both_forms() {
    check_unary("gelu", F::gelu, gelu, -5.5, 5.5);
    check_unary(
        "gelu tanh",
        |x| F::gelu_with(x, "tanh"),
        gelu_tanh,
        -9.0,
        9.0,
    );
    check_binary(
        "gelu_backward",
        F::gelu_backward,
        |g, x| g * gelu_grad(x),
        -5.0,
        5.0,
    );
    check_binary(
        "gelu_backward tanh",
        |g, x| F::gelu_backward_with(g, x, "tanh"),
        |g, x| g * gelu_tanh_grad(x),
        -6.0,
        6.0,
    );
}

#[test]
fn silu_mish_softplus() {
    check_unary("silu", F::silu, |x| x * sigmoid(x), -30.0, 30.0);
    check_binary(
        "silu_backward",
        F::silu_backward,
        |g, x| {
            let s = sigmoid(x);
            g * s * (1.0 + x * (1.0 - s))
        },
        -20.0,
        20.0,
    );
    check_unary("mish", F::mish, mish, -20.0, 20.0);
    check_binary(
        "mish_backward",
        F::mish_backward,
        |g, x| {
            let t = x.exp().ln_1p().tanh();
            g * (t + x * sigmoid(x) * (1.0 - t * t))
        },
        -20.0,
        20.0,
    );
    check_unary(
        "softplus",
        F::softplus,
        |x| softplus(x, 1.0, 20.0),
        -40.0,
        40.0,
    );
    check_unary(
        "softplus beta",
        |x| F::softplus_with(x, 2.7, 3.3),
        |x| softplus(x, 2.7, 3.3),
        -10.0,
        10.0,
    );
    check_binary(
        "softplus_backward",
        |g, x| F::softplus_backward(g, x, 2.0, 5.0),
        |g, x| {
            if x * 2.0 > 5.0 {
                g
            } else {
                let z = (2.0 * x).exp();
                g * z / (z + 1.0)
            }
        },
        -10.0,
        10.0,
    );
}

#[test]
fn elu_family() {
    check_unary("elu", F::elu, |x| elu(x, 1.0, 1.0, 1.0), -8.0, 8.0);
    check_unary(
        "elu scaled",
        |x| F::elu_with(x, 0.7, 1.3, 0.6),
        |x| elu(x, 0.7, 1.3, 0.6),
        -8.0,
        8.0,
    );
    let (a, s) = (1.673_263_242_354_377_4, 1.050_700_987_355_480_5);
    check_unary("selu", F::selu, |x| elu(x, a, s, 1.0), -8.0, 8.0);
    check_unary(
        "celu",
        |x| F::celu_with(x, 1.7),
        |x| elu(x, 1.7, 1.0, 1.0 / 1.7),
        -8.0,
        8.0,
    );
    check_binary(
        "elu_backward",
        |g, x| F::elu_backward(g, 0.7, 1.3, 0.6, false, x),
        |g, x| {
            if x <= 0.0 {
                g * 0.6 * 0.7 * 1.3 * (x * 0.6).exp()
            } else {
                g * 1.3
            }
        },
        -8.0,
        8.0,
    );
    check_binary(
        "elu_backward is_result",
        |g, r| F::elu_backward(g, 0.7, 1.3, 0.6, true, r),
        |g, r| {
            if r <= 0.0 {
                g * 0.6 * (r + 0.7 * 1.3)
            } else {
                g * 1.3
            }
        },
        -0.9,
        3.0,
    );
}

#[test]
fn piecewise_linear_ones() {
    check_unary(
        "leaky_relu",
        F::leaky_relu,
        |x| if x > 0.0 { x } else { 0.01 * x },
        -5.0,
        5.0,
    );
    check_unary(
        "leaky_relu slope",
        |x| F::leaky_relu_with(x, -0.3),
        |x| if x > 0.0 { x } else { -0.3 * x },
        -5.0,
        5.0,
    );
    check_binary(
        "leaky_relu_backward",
        |g, x| F::leaky_relu_backward(g, x, 0.2, false),
        |g, x| if x > 0.0 { g } else { 0.2 * g },
        -5.0,
        5.0,
    );
    check_unary("hardtanh", F::hardtanh, |x| x.clamp(-1.0, 1.0), -3.0, 3.0);
    check_unary(
        "hardtanh bounds",
        |x| F::hardtanh_with(x, -0.5, 2.0),
        |x| x.clamp(-0.5, 2.0),
        -3.0,
        3.0,
    );
    check_unary("relu6", F::relu6, |x| x.clamp(0.0, 6.0), -3.0, 9.0);
    check_binary(
        "hardtanh_backward",
        |g, x| F::hardtanh_backward(g, x, -0.5, 2.0),
        |g, x| if x > -0.5 && x < 2.0 { g } else { 0.0 },
        -3.0,
        3.0,
    );
    check_unary(
        "hardsigmoid",
        F::hardsigmoid,
        |x| (x + 3.0).clamp(0.0, 6.0) / 6.0,
        -5.0,
        5.0,
    );
    check_binary(
        "hardsigmoid_backward",
        F::hardsigmoid_backward,
        |g, x| {
            if x > -3.0 && x < 3.0 {
                g * (1.0f32 / 6.0) as f64
            } else {
                0.0
            }
        },
        -5.0,
        5.0,
    );
    check_unary(
        "hardswish",
        F::hardswish,
        |x| x * (x + 3.0).clamp(0.0, 6.0) / 6.0,
        -5.0,
        5.0,
    );
    check_binary(
        "hardswish_backward",
        F::hardswish_backward,
        |g, x| {
            if x <= -3.0 {
                0.0
            } else if x < 3.0 {
                g * (x / 3.0 + 0.5)
            } else {
                g
            }
        },
        -5.0,
        5.0,
    );
}

#[test]
fn log_sigmoid_forward_and_backward() {
    check_unary(
        "log_sigmoid",
        F::log_sigmoid,
        |x| x.min(0.0) - (-x.abs()).exp().ln_1p(),
        -40.0,
        40.0,
    );
    for dt in [ScalarType::Float, ScalarType::Double] {
        let v = values(300, -10.0, 10.0);
        let (x, xv) = make(&v, dt, 1);
        let (out, buffer) = F::log_sigmoid_forward(&x).unwrap();
        assert!(out.is_contiguous() && buffer.is_contiguous());
        let want: Vec<f64> = xv.iter().map(|&a| (-a.abs()).exp()).collect();
        assert_close(&f64v(&buffer), &want, dt, "log_sigmoid buffer");
        let g = Tensor::from_slice(&values(300, -1.0, 1.0), &[300])
            .unwrap()
            .to_dtype(dt)
            .unwrap()
            .view(x.sizes().as_slice())
            .unwrap();
        let gi = F::log_sigmoid_backward(&g, &x, &buffer).unwrap();
        let want: Vec<f64> = f64v(&g)
            .iter()
            .zip(&xv)
            .map(|(&g, &a)| g * (1.0 - sigmoid(a)))
            .collect();
        assert_close(&f64v(&gi), &want, dt, "log_sigmoid_backward");
        // The out= forms: a non-contiguous output, a buffer resized.
        let out2 = F::empty_like(&x)
            .unwrap()
            .t()
            .unwrap()
            .contiguous()
            .unwrap()
            .t()
            .unwrap();
        let buf2 = Tensor::empty(&[0], dt).unwrap();
        F::log_sigmoid_forward_output_out(&out2, &buf2, &x).unwrap();
        assert_eq!(f64v(&out2), f64v(&out));
        assert_eq!(buf2.sizes(), x.sizes());
        let o3 = Tensor::empty(&[0], dt).unwrap();
        F::log_sigmoid_out(&o3, &x).unwrap();
        assert_eq!(f64v(&o3), f64v(&out));
    }
}

#[test]
fn glu_and_backward() {
    for dt in FLOATS {
        // (3, 4) along each dim, a transposed input, and a long last dim.
        for (rows, cols, dim, transpose) in [
            (3, 4, 1, false),
            (4, 3, 0, false),
            (6, 4, -1, true),
            (2, 2048, 1, false),
        ] {
            let n = rows * cols;
            let v = values(n as usize, -4.0, 4.0);
            let x = Tensor::from_slice(&v, &[rows, cols])
                .unwrap()
                .to_dtype(dt)
                .unwrap();
            let x = if transpose { x.t().unwrap() } else { x };
            let (r, c) = (x.sizes()[0], x.sizes()[1]);
            let xv = f64v(&x);
            let at = |i: i64, j: i64| xv[(i * c + j) as usize];
            let d = if dim < 0 { dim + 2 } else { dim };
            let y = F::glu_with(&x, dim).unwrap();
            let (yr, yc) = if d == 0 { (r / 2, c) } else { (r, c / 2) };
            assert_eq!(y.sizes().as_slice(), &[yr, yc]);
            let mut want = Vec::new();
            let mut grad_want = vec![0.0; (r * c) as usize];
            let g = Tensor::from_slice(&values((yr * yc) as usize, -1.0, 1.0), &[yr, yc])
                .unwrap()
                .to_dtype(dt)
                .unwrap();
            let gv = f64v(&g);
            for i in 0..yr {
                for j in 0..yc {
                    let (a, b, ib, jb) = if d == 0 {
                        (at(i, j), at(i + yr, j), i + yr, j)
                    } else {
                        (at(i, j), at(i, j + yc), i, j + yc)
                    };
                    want.push(a * sigmoid(b));
                    let go = gv[(i * yc + j) as usize];
                    grad_want[(i * c + j) as usize] = go * sigmoid(b);
                    grad_want[(ib * c + jb) as usize] = go * a * sigmoid(b) * (1.0 - sigmoid(b));
                }
            }
            assert_close(&f64v(&y), &want, dt, "glu");
            let gi = F::glu_backward(&g, &x, dim).unwrap();
            assert_eq!(gi.sizes(), x.sizes());
            assert_close(&f64v(&gi), &grad_want, dt, "glu_backward");
        }
    }
    let x = Tensor::from_slice(&[1.0f32, 2.0, 3.0], &[3]).unwrap();
    assert_eq!(
        msg(F::glu(&x)),
        "Halving dimension must be even, but dimension 0 is size 3"
    );
    let s = Tensor::from_slice(&[1.0f32], &[]).unwrap();
    assert_eq!(
        msg(F::glu(&s)),
        "glu does not support 0-dimensional tensors"
    );
    assert_eq!(
        msg(F::glu_backward(&x, &x, 0)),
        "Halving dimension must be even, but dimension 0 is size 3"
    );
}

#[test]
fn inplace_and_out_forms() {
    let v = values(40, -4.0, 4.0);
    let x = Tensor::from_slice(&v, &[40])
        .unwrap()
        .to_dtype(ScalarType::Float)
        .unwrap();
    type Pair = (
        &'static str,
        fn(&Tensor) -> Result<Tensor>,
        fn(&Tensor) -> Result<()>,
        fn(&Tensor, &Tensor) -> Result<()>,
    );
    let cases: [Pair; 12] = [
        (
            "gelu",
            |x| F::gelu_with(x, "tanh"),
            |x| F::gelu_with_(x, "tanh").map(drop),
            |x, o| F::gelu_out_with(o, x, "tanh").map(drop),
        ),
        (
            "silu",
            F::silu,
            |x| F::silu_(x).map(drop),
            |x, o| F::silu_out(o, x).map(drop),
        ),
        (
            "mish",
            F::mish,
            |x| F::mish_(x).map(drop),
            |x, o| F::mish_out(o, x).map(drop),
        ),
        (
            "elu",
            |x| F::elu_with(x, 0.5, 2.0, 1.5),
            |x| F::elu_with_(x, 0.5, 2.0, 1.5).map(drop),
            |x, o| F::elu_out_with(o, x, 0.5, 2.0, 1.5).map(drop),
        ),
        (
            "selu",
            F::selu,
            |x| F::selu_(x).map(drop),
            |x, o| {
                F::elu_out_with(o, x, 1.673_263_242_354_377_4, 1.050_700_987_355_480_5, 1).map(drop)
            },
        ),
        (
            "celu",
            |x| F::celu_with(x, 0.5),
            |x| F::celu_with_(x, 0.5).map(drop),
            |x, o| F::celu_out_with(o, x, 0.5).map(drop),
        ),
        (
            "leaky_relu",
            F::leaky_relu,
            |x| F::leaky_relu_(x).map(drop),
            |x, o| F::leaky_relu_out(o, x).map(drop),
        ),
        (
            "hardtanh",
            |x| F::hardtanh_with(x, -2, 3),
            |x| F::hardtanh_with_(x, -2, 3).map(drop),
            |x, o| F::hardtanh_out_with(o, x, -2, 3).map(drop),
        ),
        (
            "relu6",
            F::relu6,
            |x| F::relu6_(x).map(drop),
            |x, o| F::hardtanh_out_with(o, x, 0, 6).map(drop),
        ),
        (
            "hardsigmoid",
            F::hardsigmoid,
            |x| F::hardsigmoid_(x).map(drop),
            |x, o| F::hardsigmoid_out(o, x).map(drop),
        ),
        (
            "hardswish",
            F::hardswish,
            |x| F::hardswish_(x).map(drop),
            |x, o| F::hardswish_out(o, x).map(drop),
        ),
        (
            "softplus",
            |x| F::softplus_with(x, 2, 1),
            |x| {
                let _ = x;
                Ok(())
            },
            |x, o| F::softplus_out_with(o, x, 2, 1).map(drop),
        ),
    ];
    for (name, f, inplace, out) in cases {
        let want = f64v(&f(&x).unwrap());
        let y = F::clone(&x).unwrap();
        inplace(&y).unwrap();
        if name != "softplus" {
            assert_eq!(f64v(&y), want, "{name}_");
        }
        // out= into an empty tensor (resized) and into a strided view.
        let o = Tensor::empty(&[0], ScalarType::Float).unwrap();
        out(&x, &o).unwrap();
        assert_eq!(f64v(&o), want, "{name}.out");
        let wide = Tensor::empty(&[80], ScalarType::Float).unwrap();
        let view = F::slice_with(&wide, 0, Some(1), None, 2).unwrap();
        out(&x, &view).unwrap();
        assert_eq!(f64v(&view), want, "{name}.out strided");
    }
    // The backward out= forms.
    let g = Tensor::from_slice(&values(40, -1.0, 1.0), &[40])
        .unwrap()
        .to_dtype(ScalarType::Float)
        .unwrap();
    let gi = Tensor::empty(&[0], ScalarType::Float).unwrap();
    F::gelu_backward_grad_input_out(&gi, &g, &x).unwrap();
    assert_eq!(f64v(&gi), f64v(&F::gelu_backward(&g, &x).unwrap()));
    F::hardtanh_backward_grad_input_out(&gi, &g, &x, -1, 1).unwrap();
    assert_eq!(
        f64v(&gi),
        f64v(&F::hardtanh_backward(&g, &x, -1, 1).unwrap())
    );
    F::hardswish_backward_out(&gi, &g, &x).unwrap();
    assert_eq!(f64v(&gi), f64v(&F::hardswish_backward(&g, &x).unwrap()));
    let x4 = x.view(&[10, 4]).unwrap();
    let g2 = g.view(&[20, 2]).unwrap();
    let gi2 = Tensor::empty(&[0], ScalarType::Float).unwrap();
    F::glu_backward_grad_input_out(
        &gi2,
        &g2.view(&[10, 4]).unwrap().narrow(1, 0, 2).unwrap(),
        &x4,
        1,
    )
    .unwrap();
    assert_eq!(gi2.sizes().as_slice(), &[10, 4]);
}

#[test]
fn nan_and_infinities() {
    let x = Tensor::from_slice(
        &[
            f32::NAN,
            f32::INFINITY,
            f32::NEG_INFINITY,
            -0.0,
            0.0,
            1e-30,
            -1e-30,
        ],
        &[7],
    )
    .unwrap();
    let v = |t: Result<Tensor>| f64v(&t.unwrap());
    let g = v(F::gelu(&x));
    // gelu(-inf) is -inf * 0 (PyTorch's NaN too); gelu(inf) is inf where PyTorch's oneDNN
    // path gives NaN.
    assert!(g[0].is_nan() && g[2].is_nan());
    assert_eq!((g[1], g[3], g[4]), (f64::INFINITY, 0.0, 0.0));
    // PyTorch 2.15's values (x / (1 + e^-x) at -inf is -inf / inf).
    let s = v(F::silu(&x));
    assert!(s[0].is_nan() && s[2].is_nan());
    assert_eq!((s[1], s[3].to_bits()), (f64::INFINITY, (-0.0f64).to_bits()));
    assert_eq!(v(F::softplus(&x))[1..3], [f64::INFINITY, 0.0]);
    let e = v(F::elu(&x));
    assert_eq!(
        (e[1], e[2], e[3].to_bits()),
        (f64::INFINITY, -1.0, (-0.0f64).to_bits())
    );
    assert_eq!(e[6], -1e-30f32 as f64);
    assert_eq!(v(F::log_sigmoid(&x))[1..3], [0.0, f64::NEG_INFINITY]);
    assert_eq!(v(F::hardsigmoid(&x))[1..3], [1.0, 0.0]);
    assert!(v(F::hardsigmoid(&x))[0].is_nan());
    let h = v(F::hardswish(&x));
    assert!(h[0].is_nan() && h[2].is_nan());
    assert_eq!(v(F::hardtanh(&x))[1..3], [1.0, -1.0]);
    assert!(v(F::hardtanh(&x))[0].is_nan());
    let m = v(F::mish(&x));
    assert!(m[0].is_nan() && m[2].is_nan());
    assert_eq!(m[1], f64::INFINITY);
}

#[test]
fn integer_inputs_refused_or_clamped() {
    let i = Tensor::from_slice(&[-2i64, 0, 3], &[3]).unwrap();
    let cases: [(&str, Result<Tensor>); 12] = [
        ("\"GeluKernelImpl\" not implemented for 'Long'", F::gelu(&i)),
        ("\"silu_cpu\" not implemented for 'Long'", F::silu(&i)),
        ("\"mish_cpu\" not implemented for 'Long'", F::mish(&i)),
        ("\"elu_cpu\" not implemented for 'Long'", F::elu(&i)),
        ("\"elu_cpu\" not implemented for 'Long'", F::selu(&i)),
        (
            "\"leaky_relu_cpu\" not implemented for 'Long'",
            F::leaky_relu(&i),
        ),
        (
            "\"hardsigmoid_cpu\" not implemented for 'Long'",
            F::hardsigmoid(&i),
        ),
        (
            "\"hardswish_cpu\" not implemented for 'Long'",
            F::hardswish(&i),
        ),
        (
            "\"softplus_cpu\" not implemented for 'Long'",
            F::softplus(&i),
        ),
        (
            "\"log_sigmoid_cpu\" not implemented for 'Long'",
            F::log_sigmoid(&i),
        ),
        (
            "\"glu_cpu\" not implemented for 'Long'",
            F::glu(&F::cat_with(&[i.clone(), i.clone()], 0).unwrap()),
        ),
        (
            "\"GeluBackwardKernelImpl\" not implemented for 'Long'",
            F::gelu_backward(&i, &i),
        ),
    ];
    for (want, got) in cases {
        assert_eq!(msg(got), want);
    }
    // hardtanh clamps integers with integral bounds (no promotion); bool is refused.
    let h = F::hardtanh_with(&i, -1.5, 2.5).unwrap();
    assert_eq!(h.dtype(), ScalarType::Long);
    assert_eq!(h.to_vec::<i64>().unwrap(), vec![-1, 0, 2]);
    let r6 = F::relu6(&i).unwrap();
    assert_eq!(r6.to_vec::<i64>().unwrap(), vec![0, 0, 3]);
    let b = Tensor::from_slice(&[true, false], &[2]).unwrap();
    assert_eq!(
        msg(F::hardtanh(&b)),
        "Bool inputs not supported for hardtanh"
    );
    let u = Tensor::from_slice(&[1u8, 9], &[2]).unwrap();
    assert_eq!(F::hardtanh(&u).unwrap().to_vec::<u8>().unwrap(), vec![1, 1]);
    assert_eq!(F::relu6(&u).unwrap().to_vec::<u8>().unwrap(), vec![1, 6]);
}

#[test]
fn silu_of_complex() {
    use ratten_core::dtype::c64;
    let z = Tensor::from_slice(&[c64::new(0.5, -1.0), c64::new(-2.0, 0.25)], &[2]).unwrap();
    let y = F::silu(&z).unwrap().to_vec::<c64>().unwrap();
    for (k, zk) in [c64::new(0.5, -1.0), c64::new(-2.0, 0.25)]
        .iter()
        .enumerate()
    {
        let want = zk / (1.0 + (-zk).exp());
        assert!((y[k] - want).norm() < 1e-6, "{:?} != {want:?}", y[k]);
    }
}

#[test]
fn argument_errors() {
    let x = Tensor::from_slice(&[1.0f32, -1.0], &[2]).unwrap();
    assert_eq!(
        msg(F::gelu_with(&x, "fast")),
        "approximate argument must be either none or tanh."
    );
    assert_eq!(
        msg(F::gelu_backward_with(&x, &x, "erf")),
        "approximate argument must be either none or tanh."
    );
    assert_eq!(
        msg(F::celu_with(&x, 0)),
        "ZeroDivisionError: alpha cannot be 0 for CELU"
    );
    assert_eq!(
        msg(F::elu_backward(&x, -0.5, 1, 1, true, &x)),
        "In-place elu backward calculation is triggered with a negative slope which is not \
         supported. This is caused by calling in-place forward function with a negative slope, \
         please call out-of-place version instead."
    );
    assert!(msg(F::leaky_relu_backward(&x, &x, -0.5, true))
        .starts_with("In-place leakyReLu backward calculation is triggered with a negative slope"));
    // Out-of-place with a negative slope is fine.
    F::leaky_relu_backward(&x, &x, -0.5, false).unwrap();
    // Scalars that do not fit the dtype: c10's overflow error.
    assert_eq!(
        msg(F::elu_with(&x, 1e300, 1, 1)),
        "value cannot be converted to type float without overflow"
    );
    // A broadcast grad_output.
    let g = Tensor::from_slice(&[2.0f32], &[1]).unwrap();
    let y = F::silu_backward(&g, &x).unwrap();
    assert_eq!(y.sizes().as_slice(), &[2]);
}

#[test]
fn meta_shapes() {
    let m = Tensor::empty(&[3, 4], (ScalarType::Float, Device::META)).unwrap();
    let same = |t: Result<Tensor>| {
        let t = t.unwrap();
        assert_eq!(
            (t.sizes().as_slice(), t.device()),
            (&[3i64, 4][..], Device::META)
        );
    };
    same(F::gelu(&m));
    same(F::gelu_backward(&m, &m));
    same(F::silu(&m));
    same(F::silu_backward(&m, &m));
    same(F::mish(&m));
    same(F::mish_backward(&m, &m));
    same(F::elu(&m));
    same(F::selu(&m));
    same(F::celu(&m));
    same(F::elu_backward(&m, 1, 1, 1, false, &m));
    same(F::leaky_relu(&m));
    same(F::leaky_relu_backward(&m, &m, 0.1, false));
    same(F::hardtanh(&m));
    same(F::relu6(&m));
    same(F::hardtanh_backward(&m, &m, -1, 1));
    same(F::hardsigmoid(&m));
    same(F::hardsigmoid_backward(&m, &m));
    same(F::hardswish(&m));
    same(F::hardswish_backward(&m, &m));
    same(F::softplus(&m));
    same(F::softplus_backward(&m, &m, 1, 20));
    same(F::log_sigmoid(&m));
    let (o, b) = F::log_sigmoid_forward(&m).unwrap();
    assert_eq!(
        (o.device(), b.sizes().as_slice()),
        (Device::META, &[3i64, 4][..])
    );
    same(F::log_sigmoid_backward(&m, &m, &m));
    let g = F::glu(&m).unwrap();
    assert_eq!(
        (g.sizes().as_slice(), g.device()),
        (&[3i64, 2][..], Device::META)
    );
    let g0 = F::glu_with(&m, 0);
    assert_eq!(
        msg(g0),
        "Halving dimension must be even, but dimension 0 is size 3"
    );
    same(F::glu_backward(&g, &m, -1));
    // Broadcasting of a backward's operands.
    let row = Tensor::empty(&[4], (ScalarType::Float, Device::META)).unwrap();
    same(F::gelu_backward(&row, &m));
}
