//! softmax / log_softmax and their backward against a naive reference along every dim (a
//! property test over shapes, dims and transposed inputs), the reduced-precision dtypes, torch's
//! errors and meta shapes; nll_loss, nll_loss2d and cross_entropy against the definition
//! (weights, ignore_index, every reduction, probability targets, label smoothing); the
//! pointwise losses against their formulas.

use crate::common::values;
use proptest::prelude::*;
use ratten_aten::{functions as F, Tensor};
use ratten_core::{Device, ScalarType};

const NONE: i64 = 0;
const MEAN: i64 = 1;
const SUM: i64 = 2;

/// A float64 tensor of `shape` with values spread over about [-4, 4].
fn tensor(shape: &[i64], seed: u64) -> Tensor {
    let n: i64 = shape.iter().product();
    let data: Vec<f64> = (0..n as u64)
        .map(|i| {
            let h = (i.wrapping_add(seed).wrapping_mul(2654435761)) % 1000;
            h as f64 / 125.0 - 4.0
        })
        .collect();
    Tensor::from_vec(data, shape).unwrap()
}

fn longs(data: &[i64], shape: &[i64]) -> Tensor {
    Tensor::from_vec(data.to_vec(), shape).unwrap()
}

fn assert_close(got: &[f64], want: &[f64], tol: f64) {
    assert_eq!(got.len(), want.len());
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        let ok = (g - w).abs() <= tol * (1.0 + w.abs()) || (g.is_nan() && w.is_nan());
        assert!(ok, "element {i}: got {g}, want {w}");
    }
}

/// The lines of a contiguous `sizes` along `dim`: for each, the flat indices of its elements.
fn lines(sizes: &[i64], dim: usize) -> Vec<Vec<usize>> {
    let outer: i64 = sizes[..dim].iter().product();
    let inner: i64 = sizes[dim + 1..].iter().product();
    let d = sizes[dim];
    let mut out = Vec::new();
    for o in 0..outer {
        for i in 0..inner {
            out.push((0..d).map(|k| ((o * d + k) * inner + i) as usize).collect());
        }
    }
    out
}

fn naive_softmax(x: &[f64], sizes: &[i64], dim: usize, log: bool) -> Vec<f64> {
    let mut y = vec![0.0; x.len()];
    for line in lines(sizes, dim) {
        let m = line.iter().map(|&i| x[i]).fold(f64::NEG_INFINITY, f64::max);
        let s: f64 = line.iter().map(|&i| (x[i] - m).exp()).sum();
        for &i in &line {
            y[i] = if log {
                x[i] - m - s.ln()
            } else {
                (x[i] - m).exp() / s
            };
        }
    }
    y
}

fn naive_softmax_backward(g: &[f64], y: &[f64], sizes: &[i64], dim: usize, log: bool) -> Vec<f64> {
    let mut gi = vec![0.0; g.len()];
    for line in lines(sizes, dim) {
        if log {
            let s: f64 = line.iter().map(|&i| g[i]).sum();
            for &i in &line {
                gi[i] = g[i] - y[i].exp() * s;
            }
        } else {
            let s: f64 = line.iter().map(|&i| g[i] * y[i]).sum();
            for &i in &line {
                gi[i] = y[i] * (g[i] - s);
            }
        }
    }
    gi
}

fn check_softmax(sizes: &[i64], dim: usize, transposed: bool, dtype: ScalarType, tol: f64) {
    let base = tensor(sizes, dim as u64 + 3);
    let x = if transposed && sizes.len() >= 2 {
        // The same values as a non-contiguous view.
        let n = sizes.len();
        let mut ts = sizes.to_vec();
        ts.swap(n - 1, n - 2);
        let t = tensor(&ts, 11);
        t.transpose(-1, -2).unwrap()
    } else {
        base
    };
    let x = x.to_dtype(dtype).unwrap();
    let xv = values(&x);
    for log in [false, true] {
        let y = if log {
            F::log_softmax(&x, dim as i64)
        } else {
            F::softmax(&x, dim as i64)
        }
        .unwrap();
        assert_eq!(y.dtype(), dtype);
        assert_eq!(y.sizes().as_slice(), sizes);
        assert!(y.is_contiguous());
        let want = naive_softmax(&xv, sizes, dim, log);
        assert_close(&values(&y), &want, tol);
        // Backward from the computed output.
        let g = tensor(sizes, 5).to_dtype(dtype).unwrap();
        let gi = if log {
            F::_log_softmax_backward_data(&g, &y, dim as i64, dtype)
        } else {
            F::_softmax_backward_data(&g, &y, dim as i64, dtype)
        }
        .unwrap();
        let want = naive_softmax_backward(&values(&g), &values(&y), sizes, dim, log);
        assert_close(&values(&gi), &want, tol * 10.0);
    }
}

#[test]
fn softmax_along_every_dim() {
    for sizes in [
        vec![5],
        vec![3, 7],
        vec![2, 3, 4],
        vec![2, 300, 3],
        vec![4, 1100],
    ] {
        for dim in 0..sizes.len() {
            check_softmax(&sizes, dim, false, ScalarType::Double, 1e-12);
            check_softmax(&sizes, dim, false, ScalarType::Float, 1e-5);
            check_softmax(&sizes, dim, true, ScalarType::Float, 1e-5);
        }
    }
}

#[test]
fn softmax_reduced_precision() {
    check_softmax(&[3, 37], 1, false, ScalarType::BFloat16, 2e-2);
    check_softmax(&[3, 37], 0, false, ScalarType::Half, 2e-3);
}

/// float16 and bfloat16 compute in float and round once, at the store: each result is the
/// float computation on the widened operands, rounded, bit for bit. Rows with a tail, lines
/// along dim 0 in more than one block of 256, and blocks that hold every line of an outer index.
#[test]
fn reduced_softmax_is_the_float_result_rounded_once() {
    let float = |t: &Tensor| t.to_dtype(ScalarType::Float).unwrap();
    for dtype in [ScalarType::Half, ScalarType::BFloat16] {
        for (sizes, dim) in [
            (vec![3, 37], 1),
            (vec![2, 1100], 1),
            (vec![5, 300], 0),
            (vec![2, 3, 20], 1),
        ] {
            let x = tensor(&sizes, 7).to_dtype(dtype).unwrap();
            let g = tensor(&sizes, 9).to_dtype(dtype).unwrap();
            for log in [false, true] {
                let forward = |t: &Tensor| {
                    if log {
                        F::log_softmax(t, dim)
                    } else {
                        F::softmax(t, dim)
                    }
                    .unwrap()
                };
                let backward = |g: &Tensor, y: &Tensor, dt: ScalarType| {
                    if log {
                        F::_log_softmax_backward_data(g, y, dim, dt)
                    } else {
                        F::_softmax_backward_data(g, y, dim, dt)
                    }
                    .unwrap()
                };
                let y = forward(&x);
                let want = forward(&float(&x)).to_dtype(dtype).unwrap();
                assert_eq!(
                    values(&y),
                    values(&want),
                    "{dtype:?} {sizes:?} dim {dim} log {log}"
                );
                let gi = backward(&g, &y, dtype);
                let want = backward(&float(&g), &float(&y), ScalarType::Float)
                    .to_dtype(dtype)
                    .unwrap();
                assert_eq!(
                    values(&gi),
                    values(&want),
                    "backward {dtype:?} {sizes:?} {log}"
                );
            }
        }
    }
}

#[test]
fn softmax_scalar_empty_and_dtype() {
    let s = Tensor::from_vec(vec![3.0f32], &[]).unwrap();
    assert_eq!(values(&F::softmax(&s, 0).unwrap()), vec![1.0]);
    assert_eq!(values(&F::log_softmax(&s, -1).unwrap()), vec![0.0]);
    let e = Tensor::zeros(&[2, 0], ScalarType::Float).unwrap();
    assert_eq!(F::softmax(&e, 0).unwrap().sizes().as_slice(), &[2, 0]);
    // dtype= converts first; integers are refused by the kernel.
    let i = longs(&[1, 2, 3], &[3]);
    let y = F::softmax_with(&i, 0, Some(ScalarType::Double)).unwrap();
    assert_eq!(y.dtype(), ScalarType::Double);
    assert_close(
        &values(&y),
        &naive_softmax(&[1.0, 2.0, 3.0], &[3], 0, false),
        1e-12,
    );
    let err = F::softmax(&i, 0).unwrap_err().to_string();
    assert!(
        err.contains("\"softmax_lastdim_kernel_impl\" not implemented for 'Long'"),
        "{err}"
    );
    let err = F::log_softmax(&longs(&[1, 2], &[2, 1]), 0)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("\"log_softmax_kernel_impl\" not implemented for 'Long'"),
        "{err}"
    );
}

#[test]
fn softmax_errors_and_out() {
    let x = tensor(&[2, 3], 1);
    let err = F::softmax(&x, 2).unwrap_err().to_string();
    assert!(
        err.contains("Dimension out of range (expected to be in range of [-2, 1], but got 2)"),
        "{err}"
    );
    let err = F::_softmax(&x, 1, true).unwrap_err().to_string();
    assert!(
        err.contains("softmax with half to float conversion is not supported on CPU"),
        "{err}"
    );
    let err = F::_softmax_backward_data(&x, &tensor(&[3, 3], 1), 0, ScalarType::Double)
        .unwrap_err()
        .to_string();
    assert!(err.contains("Expected tensor for argument #1 'grad' to have same size as tensor for argument #2 'output'; but [2, 3] does not equal [3, 3] (while checking arguments for softmax_backward)"), "{err}");
    let err = F::_softmax_backward_data(
        &x,
        &x.to_dtype(ScalarType::Float).unwrap(),
        1,
        ScalarType::Double,
    )
    .unwrap_err()
    .to_string();
    assert!(
        err.contains("expected scalar type Double but found Float"),
        "{err}"
    );
    // out= into a non-contiguous tensor: the values land in its layout.
    let out = Tensor::empty(&[3, 2], ScalarType::Double)
        .unwrap()
        .t()
        .unwrap();
    F::softmax_out(&out, &x, 1).unwrap();
    assert_close(
        &values(&out),
        &naive_softmax(&values(&x), &[2, 3], 1, false),
        1e-12,
    );
}

#[test]
fn softmax_meta_shapes() {
    let m = Tensor::empty(&[4, 5], (ScalarType::Float, Device::META)).unwrap();
    let y = F::log_softmax(&m, 1).unwrap();
    assert_eq!(y.sizes().as_slice(), &[4, 5]);
    assert_eq!(y.device(), Device::META);
    let g = F::_softmax_backward_data(&m, &m, 0, ScalarType::Float).unwrap();
    assert_eq!(g.sizes().as_slice(), &[4, 5]);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]
    #[test]
    fn softmax_matches_reference(
        sizes in prop::collection::vec(1i64..6, 1..4),
        dim_pick in 0usize..4,
        transposed in any::<bool>(),
    ) {
        let dim = dim_pick % sizes.len();
        check_softmax(&sizes, dim, transposed, ScalarType::Double, 1e-12);
    }
}

// ---- nll_loss and cross_entropy --------------------------------------------------------------

/// `[batch, classes, spatial]`'s nll loss by the definition: (per-element losses, total
/// weight, the reduced loss).
fn naive_nll(
    x: &[f64],
    t: &[i64],
    w: Option<&[f64]>,
    shape: (usize, usize, usize),
    ignore: i64,
) -> (Vec<f64>, f64, f64) {
    let (b, c, s) = shape;
    let mut per = vec![0.0; b * s];
    let (mut total, mut sum) = (0.0, 0.0);
    for n in 0..b {
        for k in 0..s {
            let tk = t[n * s + k];
            if tk == ignore {
                continue;
            }
            let wt = w.map_or(1.0, |w| w[tk as usize]);
            let l = -x[(n * c + tk as usize) * s + k] * wt;
            per[n * s + k] = l;
            total += wt;
            sum += l;
        }
    }
    (per, total, sum)
}

#[test]
fn nll_loss_every_reduction() {
    let x = tensor(&[4, 5], 2);
    let t = longs(&[1, 4, -100, 0], &[4]);
    let w = Tensor::from_vec(vec![0.5, 1.0, 2.0, 1.5, 3.0], &[5]).unwrap();
    for weight in [None, Some(&w)] {
        let wv = weight.map(values);
        let (per, total, sum) = naive_nll(
            &values(&x),
            &[1, 4, -100, 0],
            wv.as_deref(),
            (4, 5, 1),
            -100,
        );
        let (out, tw) = F::nll_loss_forward(&x, &t, weight, NONE, -100).unwrap();
        assert_close(&values(&out), &per, 1e-12);
        assert_eq!(values(&tw), vec![0.0]);
        let (out, tw) = F::nll_loss_forward(&x, &t, weight, SUM, -100).unwrap();
        assert_close(&values(&out), &[sum], 1e-12);
        assert_close(&values(&tw), &[total], 1e-12);
        let (out, _) = F::nll_loss_forward(&x, &t, weight, MEAN, -100).unwrap();
        assert_close(&values(&out), &[sum / total], 1e-12);
        // Backward: -w[t] * g (/ total for the mean) at the targets, zero elsewhere.
        let g = Tensor::from_vec(vec![2.0f64], &[]).unwrap();
        let tw = Tensor::from_vec(vec![total], &[]).unwrap();
        let gi = F::nll_loss_backward(&g, &x, &t, weight, MEAN, -100, &tw).unwrap();
        let mut want = vec![0.0; 20];
        for (n, &tk) in [1i64, 4, -100, 0].iter().enumerate() {
            if tk >= 0 {
                want[n * 5 + tk as usize] =
                    -wv.as_ref().map_or(1.0, |w| w[tk as usize]) * 2.0 / total;
            }
        }
        assert_close(&values(&gi), &want, 1e-12);
    }
}

#[test]
fn nll_loss_1d_input_and_empty() {
    let x = tensor(&[5], 3);
    let t = longs(&[2], &[]);
    let (out, tw) = F::nll_loss_forward(&x, &t, None, NONE, -100).unwrap();
    assert_eq!(out.sizes().len(), 0);
    assert_close(&values(&out), &[-values(&x)[2]], 1e-12);
    assert_eq!(values(&tw), vec![1.0]);
    let e = Tensor::zeros(&[0, 3], ScalarType::Float).unwrap();
    let te = longs(&[], &[0]);
    let (out, _) = F::nll_loss_forward(&e, &te, None, MEAN, -100).unwrap();
    assert!(values(&out)[0].is_nan());
    let (out, _) = F::nll_loss_forward(&e, &te, None, SUM, -100).unwrap();
    assert_eq!(values(&out), vec![0.0]);
}

#[test]
fn nll_loss_errors() {
    let x = tensor(&[3, 4], 1);
    let err = F::nll_loss_forward(&x, &longs(&[0, 1, 5], &[3]), None, MEAN, -100).unwrap_err();
    assert_eq!(err.to_string(), "Target 5 is out of bounds.");
    assert_eq!(err.kind(), ratten_core::ErrorKind::Index);
    let t32 = longs(&[0, 1, 2], &[3]).to_dtype(ScalarType::Int).unwrap();
    let err = F::nll_loss_forward(&x, &t32, None, MEAN, -100)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("expected target dtype to be Long or Byte, but got Int"),
        "{err}"
    );
    let err = F::nll_loss_nd_with(&x, &longs(&[0, 1], &[2]), None, MEAN, -100).unwrap_err();
    assert_eq!(
        err.to_string(),
        "Expected input batch_size (3) to match target batch_size (2)."
    );
    assert_eq!(err.kind(), ratten_core::ErrorKind::Value);
    let w = Tensor::ones(&[5], ScalarType::Double).unwrap();
    let err = F::nll_loss_forward(&x, &longs(&[0, 1, 2], &[3]), Some(&w), MEAN, -100)
        .unwrap_err()
        .to_string();
    assert!(err.contains("weight tensor should be defined either for all 4 classes or no classes but got weight tensor of shape: [5]"), "{err}");
    let err = F::nll_loss_forward(
        &x.to_dtype(ScalarType::Int).unwrap(),
        &longs(&[0, 1, 2], &[3]),
        None,
        MEAN,
        -100,
    )
    .unwrap_err()
    .to_string();
    assert!(
        err.contains("\"nll_loss_out_frame\" not implemented for 'Int'"),
        "{err}"
    );
    // Nothing is written when an index is bad.
    let out = Tensor::full(&[], 7.0, ScalarType::Double).unwrap();
    let tw = Tensor::full(&[], 7.0, ScalarType::Double).unwrap();
    assert!(F::nll_loss_forward_output_out(
        &out,
        &tw,
        &x,
        &longs(&[0, 9, 1], &[3]),
        None,
        SUM,
        -100
    )
    .is_err());
    assert_eq!(values(&out), vec![7.0]);
}

#[test]
fn nll_loss2d_and_nd() {
    // [N, C, H, W] with [N, H, W] targets; a 3-D input goes through nll_loss2d reshaped.
    let x = tensor(&[2, 3, 2, 2], 4);
    let tv = [0i64, 2, 1, -100, 2, 2, 0, 1];
    let t = longs(&tv, &[2, 2, 2]);
    let (per, total, sum) = naive_nll(&values(&x), &tv, None, (2, 3, 4), -100);
    let none = F::nll_loss_nd_with(&x, &t, None, NONE, -100).unwrap();
    assert_eq!(none.sizes().as_slice(), &[2, 2, 2]);
    assert_close(&values(&none), &per, 1e-12);
    assert_close(
        &values(&F::nll_loss_nd_with(&x, &t, None, MEAN, -100).unwrap()),
        &[sum / total],
        1e-12,
    );
    let x3 = x.reshape(&[2, 3, 4]).unwrap();
    let t3 = t.reshape(&[2, 4]).unwrap();
    let none3 = F::nll_loss_nd_with(&x3, &t3, None, NONE, -100).unwrap();
    assert_eq!(none3.sizes().as_slice(), &[2, 4]);
    assert_close(&values(&none3), &per, 1e-12);
    let err = F::nll_loss_nd_with(&x3, &longs(&[0; 6], &[2, 3]), None, MEAN, -100)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("Expected target size [2, 4], got [2, 3]"),
        "{err}"
    );
    let err = F::nll_loss2d_forward(&x, &longs(&[0; 6], &[2, 3, 1]), None, MEAN, -100)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("size mismatch (got input: [2, 3, 2, 2] , target: [2, 3, 1]"),
        "{err}"
    );
    // Backward of the sum: -1 at each target.
    let g = Tensor::ones(&[], ScalarType::Double).unwrap();
    let tw = Tensor::from_vec(vec![total], &[]).unwrap();
    let gi = F::nll_loss2d_backward(&g, &x, &t, None, SUM, -100, &tw).unwrap();
    let mut want = vec![0.0; 24];
    for (i, &tk) in tv.iter().enumerate() {
        if tk >= 0 {
            let (n, s) = (i / 4, i % 4);
            want[(n * 3 + tk as usize) * 4 + s] = -1.0;
        }
    }
    assert_close(&values(&gi), &want, 1e-12);
}

fn naive_log_softmax_rows(x: &[f64], c: usize) -> Vec<f64> {
    naive_softmax(x, &[(x.len() / c) as i64, c as i64], 1, true)
}

#[test]
fn cross_entropy_indices_probabilities_and_smoothing() {
    let x = tensor(&[4, 3], 7);
    let xv = values(&x);
    let ls = naive_log_softmax_rows(&xv, 3);
    let tv = [2i64, 0, 1, 1];
    let t = longs(&tv, &[4]);
    let want: f64 = tv
        .iter()
        .enumerate()
        .map(|(n, &k)| -ls[n * 3 + k as usize])
        .sum::<f64>()
        / 4.0;
    assert_close(
        &values(&F::cross_entropy_loss(&x, &t).unwrap()),
        &[want],
        1e-12,
    );
    // Label smoothing 0.1: (1 - e) nll + e / C * sum_c -log p_c, averaged.
    let e = 0.1;
    let smooth: f64 = (0..4)
        .map(|n| -(0..3).map(|c| ls[n * 3 + c]).sum::<f64>())
        .sum::<f64>()
        / 4.0;
    let got = F::cross_entropy_loss_with(&x, &t, None, MEAN, -100, e).unwrap();
    assert_close(&values(&got), &[(1.0 - e) * want + e / 3.0 * smooth], 1e-12);
    // Probabilities: -sum p log q, averaged over the batch.
    let p = F::softmax(&tensor(&[4, 3], 9), 1).unwrap();
    let pv = values(&p);
    let want_p: f64 = (0..12).map(|i| -pv[i] * ls[i]).sum::<f64>() / 4.0;
    assert_close(
        &values(&F::cross_entropy_loss(&x, &p).unwrap()),
        &[want_p],
        1e-12,
    );
    let err = F::cross_entropy_loss_with(&x, &t, None, MEAN, -100, 1.5)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("label_smoothing must be between 0.0 and 1.0. Got: 1.5"),
        "{err}"
    );
    let err = F::cross_entropy_loss(&x, &p.to_dtype(ScalarType::Int).unwrap())
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("Expected floating point type for target with class probabilities, got Int"),
        "{err}"
    );
}

// ---- pointwise losses ------------------------------------------------------------------------

fn reduce(v: &[f64], reduction: i64) -> Vec<f64> {
    match reduction {
        MEAN => vec![v.iter().sum::<f64>() / v.len() as f64],
        SUM => vec![v.iter().sum::<f64>()],
        _ => v.to_vec(),
    }
}

#[test]
fn pointwise_losses_match_their_formulas() {
    let x = tensor(&[3, 4], 1);
    let y = tensor(&[3, 4], 8);
    let (xv, yv) = (values(&x), values(&y));
    let d: Vec<f64> = xv.iter().zip(&yv).map(|(a, b)| a - b).collect();
    for r in [NONE, MEAN, SUM] {
        let mse: Vec<f64> = d.iter().map(|v| v * v).collect();
        assert_close(
            &values(&F::mse_loss_with(&x, &y, r).unwrap()),
            &reduce(&mse, r),
            1e-12,
        );
        let l1: Vec<f64> = d.iter().map(|v| v.abs()).collect();
        assert_close(
            &values(&F::l1_loss_with(&x, &y, r).unwrap()),
            &reduce(&l1, r),
            1e-12,
        );
        let beta = 0.7;
        let sl1: Vec<f64> = d
            .iter()
            .map(|v| {
                if v.abs() < beta {
                    0.5 * v * v / beta
                } else {
                    v.abs() - 0.5 * beta
                }
            })
            .collect();
        assert_close(
            &values(&F::smooth_l1_loss_with(&x, &y, r, beta).unwrap()),
            &reduce(&sl1, r),
            1e-12,
        );
        let delta = 1.3;
        let hub: Vec<f64> = d
            .iter()
            .map(|v| {
                if v.abs() < delta {
                    0.5 * v * v
                } else {
                    delta * (v.abs() - 0.5 * delta)
                }
            })
            .collect();
        assert_close(
            &values(&F::huber_loss_with(&x, &y, r, delta).unwrap()),
            &reduce(&hub, r),
            1e-12,
        );
        // The backward ops: d/dx of each element loss, scaled by the reduction.
        let g = Tensor::ones(&[3, 4], ScalarType::Double).unwrap();
        let scale = if r == MEAN { 1.0 / 12.0 } else { 1.0 };
        let want: Vec<f64> = d.iter().map(|v| 2.0 * v * scale).collect();
        assert_close(
            &values(&F::mse_loss_backward(&g, &x, &y, r).unwrap()),
            &want,
            1e-12,
        );
        let want: Vec<f64> = d
            .iter()
            .map(|v| scale * if v.abs() < beta { v / beta } else { v.signum() })
            .collect();
        assert_close(
            &values(&F::smooth_l1_loss_backward(&g, &x, &y, r, beta).unwrap()),
            &want,
            1e-12,
        );
        let want: Vec<f64> = d
            .iter()
            .map(|v| {
                scale
                    * if v.abs() < delta {
                        *v
                    } else {
                        delta * v.signum()
                    }
            })
            .collect();
        assert_close(
            &values(&F::huber_loss_backward(&g, &x, &y, r, delta).unwrap()),
            &want,
            1e-12,
        );
    }
    let err = F::mse_loss(&longs(&[1], &[1]), &longs(&[1], &[1]))
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("\"mse_cpu\" not implemented for 'Long'"),
        "{err}"
    );
    let err = F::smooth_l1_loss_with(&x, &y, MEAN, -1.0)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("smooth_l1_loss does not support negative values for beta."),
        "{err}"
    );
    let err = F::huber_loss_with(&x, &y, MEAN, 0.0)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("huber_loss does not support non-positive values for delta."),
        "{err}"
    );
}

#[test]
fn binary_cross_entropy_and_kl_div() {
    let p = Tensor::from_vec(vec![0.1, 0.5, 0.9, 1.0, 0.0, 0.3], &[6]).unwrap();
    let t = Tensor::from_vec(vec![0.0, 1.0, 0.5, 1.0, 0.0, 1.0], &[6]).unwrap();
    let (pv, tv) = (values(&p), values(&t));
    let per: Vec<f64> = pv
        .iter()
        .zip(&tv)
        .map(|(x, y)| -(y * x.ln().max(-100.0) + (1.0 - y) * (1.0 - x).ln().max(-100.0)))
        .collect();
    for r in [NONE, MEAN, SUM] {
        assert_close(
            &values(&F::binary_cross_entropy_with(&p, &t, None, r).unwrap()),
            &reduce(&per, r),
            1e-12,
        );
    }
    let err = F::binary_cross_entropy(&F::add_scalar(&p, 0.5).unwrap(), &t)
        .unwrap_err()
        .to_string();
    assert!(
        err.contains("all elements of input should be between 0 and 1"),
        "{err}"
    );
    // With logits: the same loss of sigmoid(z), computed stably for large |z|.
    let z = Tensor::from_vec(vec![-3.0, 0.0, 2.0, 50.0, -50.0, 0.7], &[6]).unwrap();
    let pw = Tensor::from_vec(vec![2.0], &[1]).unwrap();
    let got = F::binary_cross_entropy_with_logits_with(&z, &t, None, Some(&pw), NONE).unwrap();
    let want: Vec<f64> = values(&z)
        .iter()
        .zip(&tv)
        .map(|(z, y)| {
            let ls = -(1.0 + (-z).exp()).ln(); // log sigmoid(z)
            let ls = if z.abs() > 30.0 {
                z.min(0.0) - (-z.abs()).exp().ln_1p()
            } else {
                ls
            };
            let lsn = ls - z; // log sigmoid(-z)
            -(2.0 * y * ls + (1.0 - y) * lsn)
        })
        .collect();
    assert_close(&values(&got), &want, 1e-10);
    // kl_div: t (log t - x), 0 where t is 0.
    let lx = F::log(&Tensor::from_vec(vec![0.2, 0.3, 0.5], &[3]).unwrap()).unwrap();
    let tt = Tensor::from_vec(vec![0.0, 0.4, 0.6], &[3]).unwrap();
    let want: Vec<f64> = values(&lx)
        .iter()
        .zip(values(&tt))
        .map(|(x, t)| if t == 0.0 { 0.0 } else { t * (t.ln() - x) })
        .collect();
    assert_close(
        &values(&F::kl_div_with(&lx, &tt, NONE, false).unwrap()),
        &want,
        1e-12,
    );
    // A log target: exp(t) (t - x); (torch's formula: a target of log(0) gives NaN there).
    let lt = F::log(&Tensor::from_vec(vec![0.1, 0.4, 0.5], &[3]).unwrap()).unwrap();
    let want: f64 = values(&lx)
        .iter()
        .zip(values(&lt))
        .map(|(x, t)| t.exp() * (t - x))
        .sum();
    let got = F::kl_div_with(&lx, &lt, SUM, true).unwrap();
    assert_close(&values(&got), &[want], 1e-12);
}

#[test]
fn losses_on_meta() {
    let m = Tensor::empty(&[4, 5], (ScalarType::Float, Device::META)).unwrap();
    let t = Tensor::empty(&[4], (ScalarType::Long, Device::META)).unwrap();
    let (out, tw) = F::nll_loss_forward(&m, &t, None, NONE, -100).unwrap();
    assert_eq!(out.sizes().as_slice(), &[4]);
    assert_eq!(tw.sizes().len(), 0);
    assert_eq!(F::cross_entropy_loss(&m, &t).unwrap().sizes().len(), 0);
    assert_eq!(
        F::mse_loss_with(&m, &m, NONE).unwrap().sizes().as_slice(),
        &[4, 5]
    );
}
