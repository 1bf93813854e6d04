//! layer_norm, batch_norm, dropout, embedding and one_hot against naive references written
//! here (loops over the logical indices), with float32 / float64, non-contiguous inputs,
//! torch's error texts and meta shapes.

use crate::common::{msg, values as f64v};
use ratten_aten::random::Generator;
use ratten_aten::{operators, Tensor};
use ratten_core::{Device, ScalarType};

/// Deterministic values in [-1, 1) (a small LCG).
fn values(n: usize, seed: u64) -> Vec<f64> {
    let mut s = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    (0..n)
        .map(|_| {
            s = s
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((s >> 11) as f64 / (1u64 << 53) as f64) * 2.0 - 1.0
        })
        .collect()
}

fn tensor(v: &[f64], sizes: &[i64], dt: ScalarType) -> Tensor {
    Tensor::from_slice(v, sizes).unwrap().to_dtype(dt).unwrap()
}

fn close(got: &[f64], want: &[f64], tol: f64) {
    assert_eq!(got.len(), want.len());
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!(
            (g - w).abs() <= tol * (1.0 + w.abs()),
            "element {i}: got {g}, want {w}"
        );
    }
}

fn tol(dt: ScalarType) -> f64 {
    if dt == ScalarType::Double {
        1e-12
    } else {
        1e-5
    }
}

// ---- layer_norm ------------------------------------------------------------------------------

/// Naive layer_norm over rows of `n`: (y, mean, rstd).
fn layer_norm_ref(
    x: &[f64],
    n: usize,
    w: Option<&[f64]>,
    b: Option<&[f64]>,
    eps: f64,
) -> (Vec<f64>, Vec<f64>, Vec<f64>) {
    let (mut y, mut means, mut rstds) = (vec![], vec![], vec![]);
    for row in x.chunks(n) {
        let mean = row.iter().sum::<f64>() / n as f64;
        let var = row.iter().map(|v| (v - mean) * (v - mean)).sum::<f64>() / n as f64;
        let rstd = 1.0 / (var + eps).sqrt();
        for (j, v) in row.iter().enumerate() {
            let mut r = (v - mean) * rstd;
            if let Some(w) = w {
                r *= w[j];
            }
            if let Some(b) = b {
                r += b[j];
            }
            y.push(r);
        }
        means.push(mean);
        rstds.push(rstd);
    }
    (y, means, rstds)
}

#[test]
fn layer_norm_matches_reference() {
    for dt in [ScalarType::Float, ScalarType::Double] {
        for (shape, norm) in [
            (vec![2i64, 3, 4], vec![4i64]),
            (vec![2, 3, 4], vec![3, 4]),
            (vec![5, 7], vec![7]),
        ] {
            let numel = shape.iter().product::<i64>() as usize;
            let n = norm.iter().product::<i64>() as usize;
            let xv = values(numel, 1);
            let wv = values(n, 2);
            let bv = values(n, 3);
            let x = tensor(&xv, &shape, dt);
            let w = tensor(&wv, &norm, dt);
            let b = tensor(&bv, &norm, dt);
            for affine in [false, true] {
                let (wo, bo) = if affine {
                    (Some(&w), Some(&b))
                } else {
                    (None, None)
                };
                let (y, mean, rstd) =
                    operators::native_layer_norm::call(&x, &norm, wo, bo, 1e-5).unwrap();
                let (ry, rm, rr) = layer_norm_ref(
                    &xv,
                    n,
                    affine.then_some(&wv[..]),
                    affine.then_some(&bv[..]),
                    1e-5,
                );
                close(&f64v(&y), &ry, tol(dt));
                close(&f64v(&mean), &rm, tol(dt));
                close(&f64v(&rstd), &rr, tol(dt));
                assert_eq!(y.dtype(), dt);
                let mut stat = shape[..shape.len() - norm.len()].to_vec();
                stat.extend(std::iter::repeat_n(1, norm.len()));
                assert_eq!(mean.sizes().to_vec(), stat);
                assert_eq!(rstd.sizes().to_vec(), stat);
                let y2 = operators::layer_norm::call(&x, &norm, wo, bo, 1e-5, true).unwrap();
                close(&f64v(&y2), &ry, tol(dt));
            }
        }
    }
}

#[test]
fn layer_norm_non_contiguous_and_half() {
    // A transposed input: rows are the logical rows.
    let xv = values(12, 4);
    let xt = tensor(&xv, &[4, 3], ScalarType::Double)
        .transpose(0, 1)
        .unwrap();
    let logical = f64v(&xt);
    let (y, _, _) = operators::native_layer_norm::call(&xt, &[4], None, None, 1e-5).unwrap();
    close(
        &f64v(&y),
        &layer_norm_ref(&logical, 4, None, None, 1e-5).0,
        1e-12,
    );
    // bfloat16 runs through float32 and comes back in bfloat16.
    let xb = tensor(&xv, &[3, 4], ScalarType::BFloat16);
    let (yb, mb, _) = operators::native_layer_norm::call(&xb, &[4], None, None, 1e-5).unwrap();
    assert_eq!(
        (yb.dtype(), mb.dtype()),
        (ScalarType::BFloat16, ScalarType::BFloat16)
    );
    close(
        &f64v(&yb),
        &layer_norm_ref(&f64v(&xb), 4, None, None, 1e-5).0,
        1e-2,
    );
}

#[test]
fn layer_norm_backward_matches_reference() {
    for dt in [ScalarType::Float, ScalarType::Double] {
        let (m, n) = (3usize, 5usize);
        let xv = values(m * n, 5);
        let dyv = values(m * n, 6);
        let wv = values(n, 7);
        let x = tensor(&xv, &[m as i64, n as i64], dt);
        let dy = tensor(&dyv, &[m as i64, n as i64], dt);
        let w = tensor(&wv, &[n as i64], dt);
        let b = tensor(&values(n, 8), &[n as i64], dt);
        let (_, mean, rstd) =
            operators::native_layer_norm::call(&x, &[n as i64], Some(&w), Some(&b), 1e-5).unwrap();
        let (dx, dw, db) = operators::native_layer_norm_backward::call(
            &dy,
            &x,
            &[n as i64],
            &mean,
            &rstd,
            Some(&w),
            Some(&b),
            &[true, true, true],
        )
        .unwrap();
        // dx = rstd * (g - mean(g) - xhat * mean(g * xhat)) with g = dy * w.
        let (_, rm, rr) = layer_norm_ref(&xv, n, None, None, 1e-5);
        let (mut rdx, mut rdw, mut rdb) = (vec![], vec![0.0; n], vec![0.0; n]);
        for i in 0..m {
            let xhat: Vec<f64> = (0..n).map(|j| (xv[i * n + j] - rm[i]) * rr[i]).collect();
            let g: Vec<f64> = (0..n).map(|j| dyv[i * n + j] * wv[j]).collect();
            let mg = g.iter().sum::<f64>() / n as f64;
            let mgx = g.iter().zip(&xhat).map(|(a, b)| a * b).sum::<f64>() / n as f64;
            for j in 0..n {
                rdx.push(rr[i] * (g[j] - mg - xhat[j] * mgx));
                rdw[j] += dyv[i * n + j] * xhat[j];
                rdb[j] += dyv[i * n + j];
            }
        }
        close(&f64v(&dx), &rdx, tol(dt) * 10.0);
        close(&f64v(&dw), &rdw, tol(dt) * 10.0);
        close(&f64v(&db), &rdb, tol(dt) * 10.0);
        // Only the input's gradient.
        let (dx2, dw2, _) = operators::native_layer_norm_backward::call(
            &dy,
            &x,
            &[n as i64],
            &mean,
            &rstd,
            Some(&w),
            None,
            &[true, false, false],
        )
        .unwrap();
        close(&f64v(&dx2), &rdx, tol(dt) * 10.0);
        assert_eq!(dw2.numel(), 0);
    }
}

#[test]
fn layer_norm_errors_and_meta() {
    let x = Tensor::zeros(&[2, 3, 5], ScalarType::Float).unwrap();
    assert_eq!(
        msg(operators::native_layer_norm::call(&x, &[4], None, None, 1e-5)),
        "Given normalized_shape=[4], expected input with shape [*, 4], but got input of size[2, 3, 5]"
    );
    let w = Tensor::zeros(&[4], ScalarType::Float).unwrap();
    assert_eq!(
        msg(operators::native_layer_norm::call(&x, &[5], Some(&w), None, 1e-5)),
        "Expected weight to be of same shape as normalized_shape, but got weight of shape [4] and normalized_shape = [5]"
    );
    assert!(msg(operators::native_layer_norm::call(
        &x,
        &[],
        None,
        None,
        1e-5
    ))
    .starts_with("Expected normalized_shape to be at least 1-dimensional"));
    let xi = Tensor::zeros(&[2, 3], ScalarType::Long).unwrap();
    assert_eq!(
        msg(operators::native_layer_norm::call(
            &xi,
            &[3],
            None,
            None,
            1e-5
        )),
        "\"LayerNormKernelImpl\" not implemented for 'Long'"
    );
    let xm = Tensor::empty(&[2, 3, 5], (ScalarType::Float, Device::META)).unwrap();
    let (y, m, r) = operators::native_layer_norm::call(&xm, &[3, 5], None, None, 1e-5).unwrap();
    assert_eq!(
        (y.sizes().to_vec(), m.sizes().to_vec(), r.device()),
        (vec![2, 3, 5], vec![2, 1, 1], Device::META)
    );
}

// ---- batch_norm ------------------------------------------------------------------------------

/// Per-channel (mean, biased var) of an `(N, C, L)` buffer.
fn channel_stats(x: &[f64], n: usize, c: usize, l: usize) -> (Vec<f64>, Vec<f64>) {
    let cnt = (n * l) as f64;
    let mut means = vec![0.0; c];
    let mut vars = vec![0.0; c];
    for ch in 0..c {
        let vals: Vec<f64> = (0..n)
            .flat_map(|i| (0..l).map(move |k| (i, k)))
            .map(|(i, k)| x[(i * c + ch) * l + k])
            .collect();
        means[ch] = vals.iter().sum::<f64>() / cnt;
        vars[ch] = vals.iter().map(|v| (v - means[ch]).powi(2)).sum::<f64>() / cnt;
    }
    (means, vars)
}

#[test]
fn batch_norm_training_updates_running_stats() {
    for dt in [ScalarType::Float, ScalarType::Double] {
        let (n, c, l) = (4usize, 3usize, 5usize);
        let xv = values(n * c * l, 11);
        let x = tensor(&xv, &[n as i64, c as i64, l as i64], dt);
        let wv = values(c, 12);
        let bv = values(c, 13);
        let w = tensor(&wv, &[c as i64], dt);
        let b = tensor(&bv, &[c as i64], dt);
        let rm = tensor(&[0.5, -0.5, 0.25], &[3], dt);
        let rv = tensor(&[1.0, 2.0, 0.5], &[3], dt);
        let (y, sm, si) = operators::native_batch_norm::call(
            &x,
            Some(&w),
            Some(&b),
            Some(&rm),
            Some(&rv),
            true,
            0.1,
            1e-5,
        )
        .unwrap();
        let (means, vars) = channel_stats(&xv, n, c, l);
        let mut ry = vec![];
        for i in 0..n {
            for ch in 0..c {
                for k in 0..l {
                    let v = xv[(i * c + ch) * l + k];
                    ry.push((v - means[ch]) / (vars[ch] + 1e-5).sqrt() * wv[ch] + bv[ch]);
                }
            }
        }
        close(&f64v(&y), &ry, tol(dt) * 10.0);
        close(&f64v(&sm), &means, tol(dt));
        let invstd: Vec<f64> = vars.iter().map(|v| 1.0 / (v + 1e-5).sqrt()).collect();
        close(&f64v(&si), &invstd, tol(dt) * 10.0);
        let cnt = (n * l) as f64;
        let want_rm: Vec<f64> = [0.5, -0.5, 0.25]
            .iter()
            .zip(&means)
            .map(|(r, m)| 0.1 * m + 0.9 * r)
            .collect();
        let want_rv: Vec<f64> = [1.0, 2.0, 0.5]
            .iter()
            .zip(&vars)
            .map(|(r, v)| 0.1 * v * cnt / (cnt - 1.0) + 0.9 * r)
            .collect();
        close(&f64v(&rm), &want_rm, tol(dt));
        close(&f64v(&rv), &want_rv, tol(dt));

        // Evaluation uses the running statistics and leaves them alone.
        let (ye, sme, _) = operators::native_batch_norm::call(
            &x,
            None,
            None,
            Some(&rm),
            Some(&rv),
            false,
            0.1,
            1e-5,
        )
        .unwrap();
        let mut rye = vec![];
        for i in 0..n {
            for ch in 0..c {
                for k in 0..l {
                    let v = xv[(i * c + ch) * l + k];
                    rye.push((v - want_rm[ch]) / (want_rv[ch] + 1e-5).sqrt());
                }
            }
        }
        close(&f64v(&ye), &rye, tol(dt) * 10.0);
        assert_eq!(sme.sizes().as_slice(), &[0]);
        close(&f64v(&rm), &want_rm, tol(dt));
    }
}

#[test]
fn batch_norm_backward_matches_reference() {
    let (n, c, l) = (3usize, 2usize, 4usize);
    let xv = values(n * c * l, 21);
    let dyv = values(n * c * l, 22);
    let wv = [0.7, -1.3];
    let x = tensor(&xv, &[n as i64, c as i64, l as i64], ScalarType::Double);
    // A transposed view of the gradient: the kernel must read logical positions.
    let dy = tensor(&dyv, &[n as i64, l as i64, c as i64], ScalarType::Double)
        .transpose(1, 2)
        .unwrap();
    let dyl = f64v(&dy);
    let w = tensor(&wv, &[2], ScalarType::Double);
    let (_, sm, si) =
        operators::native_batch_norm::call(&x, Some(&w), None, None, None, true, 0.1, 1e-5)
            .unwrap();
    let (dx, dw, db) = operators::native_batch_norm_backward::call(
        &dy,
        &x,
        Some(&w),
        None,
        None,
        Some(&sm),
        Some(&si),
        true,
        1e-5,
        &[true, true, true],
    )
    .unwrap();
    let (means, vars) = channel_stats(&xv, n, c, l);
    let cnt = (n * l) as f64;
    let idx = |i: usize, ch: usize, k: usize| (i * c + ch) * l + k;
    let mut rdx = vec![0.0; n * c * l];
    let (mut rdw, mut rdb) = (vec![0.0; c], vec![0.0; c]);
    for ch in 0..c {
        let is = 1.0 / (vars[ch] + 1e-5).sqrt();
        let (mut sdy, mut sdyx) = (0.0, 0.0);
        for i in 0..n {
            for k in 0..l {
                let xhat = (xv[idx(i, ch, k)] - means[ch]) * is;
                sdy += dyl[idx(i, ch, k)];
                sdyx += dyl[idx(i, ch, k)] * xhat;
            }
        }
        for i in 0..n {
            for k in 0..l {
                let xhat = (xv[idx(i, ch, k)] - means[ch]) * is;
                rdx[idx(i, ch, k)] =
                    wv[ch] * is * (dyl[idx(i, ch, k)] - sdy / cnt - xhat * sdyx / cnt);
            }
        }
        rdw[ch] = sdyx;
        rdb[ch] = sdy;
    }
    close(&f64v(&dx), &rdx, 1e-12);
    close(&f64v(&dw), &rdw, 1e-12);
    close(&f64v(&db), &rdb, 1e-12);
}

#[test]
fn batch_norm_errors_and_meta() {
    let x = Tensor::zeros(&[2, 3, 4], ScalarType::Float).unwrap();
    let rm = Tensor::zeros(&[4], ScalarType::Float).unwrap();
    let rv = Tensor::ones(&[3], ScalarType::Float).unwrap();
    assert_eq!(
        msg(operators::batch_norm::call(
            &x,
            None,
            None,
            Some(&rm),
            Some(&rv),
            true,
            0.1,
            1e-5,
            false
        )),
        "running_mean should contain 3 elements not 4"
    );
    assert_eq!(
        msg(operators::batch_norm::call(
            &x, None, None, None, None, false, 0.1, 1e-5, false
        )),
        "running_mean must be defined in evaluation mode"
    );
    let xm = Tensor::empty(&[2, 3, 4], (ScalarType::Float, Device::META)).unwrap();
    let (y, m, v) =
        operators::native_batch_norm::call(&xm, None, None, None, None, true, 0.1, 1e-5).unwrap();
    assert_eq!(
        (y.sizes().to_vec(), m.sizes().to_vec(), v.device()),
        (vec![2, 3, 4], vec![3], Device::META)
    );
}

// ---- dropout ---------------------------------------------------------------------------------

#[test]
fn dropout_is_bernoulli_scaled_and_seeded() {
    let x = Tensor::ones(&[1000], ScalarType::Float).unwrap();
    let g = Generator::with_seed(0);
    // native_dropout's mask comes from bernoulli_(1 - p) on the same generator sequence.
    ratten_aten::random::manual_seed(0);
    let (y, mask) = operators::native_dropout::call(&x, 0.25, Some(true)).unwrap();
    let yv = f64v(&y);
    let mv = f64v(&mask);
    assert_eq!(mask.dtype(), ScalarType::Bool);
    assert!(mv.iter().all(|&m| m == 0.0 || m == 1.0));
    for (a, m) in yv.iter().zip(&mv) {
        assert!((a - m / 0.75).abs() < 1e-6);
    }
    let kept = mv.iter().filter(|&&m| m == 1.0).count();
    assert!((650..850).contains(&kept), "{kept}");
    // The same draws as an explicit bernoulli_ with the same seed.
    g.manual_seed(123);
    let want = Tensor::empty(&[1000], ScalarType::Float).unwrap();
    want.bernoulli_float_with_(0.75, Some(&g)).unwrap();
    ratten_aten::random::manual_seed(123);
    let d = operators::dropout::call(&x, 0.25, true).unwrap();
    close(&f64v(&d), &f64v(&want.div_scalar(0.75).unwrap()), 1e-6);

    // torch.manual_seed(0); F.dropout(torch.ones(8), 0.5)
    ratten_aten::random::manual_seed(0);
    let ones8 = Tensor::ones(&[8], ScalarType::Float).unwrap();
    assert_eq!(
        f64v(&operators::dropout::call(&ones8, 0.5, true).unwrap()),
        vec![0.0, 0.0, 2.0, 0.0, 0.0, 0.0, 2.0, 2.0]
    );

    // Evaluation, p = 0, p = 1.
    assert_eq!(
        f64v(&operators::dropout::call(&x, 0.5, false).unwrap()),
        f64v(&x)
    );
    assert_eq!(
        f64v(&operators::dropout::call(&x, 0.0, true).unwrap()),
        f64v(&x)
    );
    assert!(f64v(&operators::dropout::call(&x, 1.0, true).unwrap())
        .iter()
        .all(|&v| v == 0.0));
    let (ye, me) = operators::native_dropout::call(&x, 0.5, Some(false)).unwrap();
    assert_eq!(f64v(&ye), f64v(&x));
    assert_eq!(me.dtype(), ScalarType::Bool);
    assert_eq!(
        msg(operators::dropout::call(&x, 1.5, true)),
        "dropout probability has to be between 0 and 1, but got 1.5"
    );
    // native_dropout_backward: grad * mask * scale.
    let gb = operators::native_dropout_backward::call(&x, &mask, 4.0 / 3.0).unwrap();
    close(&f64v(&gb), &yv, 1e-6);

    // Feature dropout: whole channels. (One test uses the process-wide generator: tests run
    // in parallel.)
    ratten_aten::random::manual_seed(5);
    let x = Tensor::ones(&[4, 6, 3, 3], ScalarType::Double).unwrap();
    let y = operators::feature_dropout::call(&x, 0.5, true).unwrap();
    let v = f64v(&y);
    for ch in v.chunks(9) {
        assert!(ch.iter().all(|&a| a == ch[0]) && (ch[0] == 0.0 || ch[0] == 2.0));
    }
    assert_eq!(
        msg(operators::feature_dropout::call(
            &Tensor::ones(&[3], ScalarType::Float).unwrap(),
            0.5,
            true
        )),
        "Feature dropout requires at least 2 dimensions in the input"
    );
}

// ---- embedding, one_hot ----------------------------------------------------------------------

#[test]
fn embedding_gathers_rows_and_accumulates_gradients() {
    let wv = values(5 * 3, 31);
    let w = tensor(&wv, &[5, 3], ScalarType::Double);
    let idx = Tensor::from_slice(&[4i64, 0, 4, 2], &[2, 2]).unwrap();
    let e = operators::embedding::call(&w, &idx, -1, false, false).unwrap();
    assert_eq!(e.sizes().as_slice(), &[2, 2, 3]);
    let want: Vec<f64> = [4usize, 0, 4, 2]
        .iter()
        .flat_map(|&r| wv[r * 3..r * 3 + 3].to_vec())
        .collect();
    assert_eq!(f64v(&e), want);
    let idx32 = idx.to_dtype(ScalarType::Int).unwrap();
    assert_eq!(
        f64v(&operators::embedding::call(&w, &idx32, -1, false, false).unwrap()),
        want
    );

    let gv = values(12, 32);
    let g = tensor(&gv, &[2, 2, 3], ScalarType::Double);
    for (padding_idx, scale) in [(-1i64, false), (4, false), (-1, true), (0, true)] {
        let gw =
            operators::embedding_dense_backward::call(&g, &idx, 5, padding_idx, scale).unwrap();
        let rows = [4i64, 0, 4, 2];
        let mut r = vec![0.0; 15];
        for (p, &row) in rows.iter().enumerate() {
            if row == padding_idx {
                continue;
            }
            let count = rows.iter().filter(|&&x| x == row).count() as f64;
            let s = if scale { 1.0 / count } else { 1.0 };
            for k in 0..3 {
                r[row as usize * 3 + k] += gv[p * 3 + k] * s;
            }
        }
        close(&f64v(&gw), &r, 1e-12);
    }
    let fidx = Tensor::zeros(&[2], ScalarType::Float).unwrap();
    assert_eq!(
        msg(operators::embedding::call(&w, &fidx, -1, false, false)),
        "Expected tensor for argument #1 'indices' to have one of the following scalar types: \
         Long, Int; but got torch.FloatTensor instead (while checking arguments for embedding)"
    );
    assert_eq!(
        msg(operators::embedding::call(
            &Tensor::zeros(&[5], ScalarType::Float).unwrap(),
            &idx,
            -1,
            false,
            false
        )),
        "'weight' must be 2-D"
    );
    let wm = Tensor::empty(&[5, 3], (ScalarType::Float, Device::META)).unwrap();
    let im = Tensor::empty(&[2, 7], (ScalarType::Long, Device::META)).unwrap();
    assert_eq!(
        operators::embedding::call(&wm, &im, -1, false, false)
            .unwrap()
            .sizes()
            .as_slice(),
        &[2, 7, 3]
    );
}

#[test]
fn one_hot_values_and_errors() {
    let t = Tensor::from_slice(&[0i64, 3, 1, 3], &[2, 2]).unwrap();
    let o = operators::one_hot::call(&t, -1).unwrap();
    assert_eq!(o.sizes().as_slice(), &[2, 2, 4]);
    assert_eq!(o.dtype(), ScalarType::Long);
    assert_eq!(
        o.to_vec::<i64>().unwrap(),
        vec![1, 0, 0, 0, 0, 0, 0, 1, 0, 1, 0, 0, 0, 0, 0, 1]
    );
    assert_eq!(
        operators::one_hot::call(&t, 5).unwrap().sizes().as_slice(),
        &[2, 2, 5]
    );
    assert_eq!(
        msg(operators::one_hot::call(&t, 3)),
        "Class values must be smaller than num_classes."
    );
    let neg = Tensor::from_slice(&[-1i64, 0], &[2]).unwrap();
    assert_eq!(
        msg(operators::one_hot::call(&neg, -1)),
        "Class values must be non-negative."
    );
    assert_eq!(
        msg(operators::one_hot::call(
            &t.to_dtype(ScalarType::Int).unwrap(),
            -1
        )),
        "one_hot is only applicable to index tensor of type LongTensor."
    );
    let empty = Tensor::zeros(&[0], ScalarType::Long).unwrap();
    assert_eq!(
        msg(operators::one_hot::call(&empty, -1)),
        "Can not infer total number of classes from empty tensor."
    );
    assert_eq!(
        operators::one_hot::call(&empty, 3)
            .unwrap()
            .sizes()
            .as_slice(),
        &[0, 3]
    );
}

// ---- group_norm ------------------------------------------------------------------------------

#[test]
fn group_norm_matches_reference() {
    let (n, c, hw, g) = (2usize, 6usize, 4usize, 3usize);
    let d = c / g;
    for dt in [ScalarType::Float, ScalarType::Double] {
        let xv = values(n * c * hw, 41);
        let wv = values(c, 42);
        let bv = values(c, 43);
        let x = tensor(&xv, &[n as i64, c as i64, 2, 2], dt);
        let w = tensor(&wv, &[c as i64], dt);
        let b = tensor(&bv, &[c as i64], dt);
        let y = operators::group_norm::call(&x, g as i64, Some(&w), Some(&b), 1e-5, true).unwrap();
        let (yn, mean, rstd) = operators::native_group_norm::call(
            &x.reshape(&[n as i64, c as i64, hw as i64]).unwrap(),
            Some(&w),
            Some(&b),
            n as i64,
            c as i64,
            hw as i64,
            g as i64,
            1e-5,
        )
        .unwrap();
        // Each group is a row of d * hw elements for layer_norm's reference.
        let (rows, rm, rr) = layer_norm_ref(&xv, d * hw, None, None, 1e-5);
        let want: Vec<f64> = rows
            .iter()
            .enumerate()
            .map(|(i, v)| {
                let ch = (i / hw) % c;
                v * wv[ch] + bv[ch]
            })
            .collect();
        close(&f64v(&y), &want, tol(dt) * 10.0);
        close(&f64v(&yn), &want, tol(dt) * 10.0);
        assert_eq!(mean.sizes().as_slice(), &[n as i64, g as i64]);
        close(&f64v(&mean), &rm, tol(dt));
        close(&f64v(&rstd), &rr, tol(dt) * 10.0);

        // Backward against finite differences of sum(dy * y) in float64.
        if dt == ScalarType::Double {
            let dyv = values(n * c * hw, 44);
            let dy = tensor(&dyv, &[n as i64, c as i64, hw as i64], dt);
            let x3 = x.reshape(&[n as i64, c as i64, hw as i64]).unwrap();
            let (dx, dw, db) = operators::native_group_norm_backward::call(
                &dy,
                &x3,
                &mean,
                &rstd,
                Some(&w),
                n as i64,
                c as i64,
                hw as i64,
                g as i64,
                &[true, true, true],
            )
            .unwrap();
            let f = |xs: &[f64], ws: &[f64], bs: &[f64]| -> f64 {
                let (rows, _, _) = layer_norm_ref(xs, d * hw, None, None, 1e-5);
                rows.iter()
                    .enumerate()
                    .map(|(i, v)| {
                        let ch = (i / hw) % c;
                        (v * ws[ch] + bs[ch]) * dyv[i]
                    })
                    .sum()
            };
            let h = 1e-6;
            let num = |k: usize, which: usize| {
                let (mut xp, mut wp, mut bp) = (xv.clone(), wv.clone(), bv.clone());
                let (mut xm, mut wm, mut bm) = (xv.clone(), wv.clone(), bv.clone());
                match which {
                    0 => {
                        xp[k] += h;
                        xm[k] -= h;
                    }
                    1 => {
                        wp[k] += h;
                        wm[k] -= h;
                    }
                    _ => {
                        bp[k] += h;
                        bm[k] -= h;
                    }
                }
                (f(&xp, &wp, &bp) - f(&xm, &wm, &bm)) / (2.0 * h)
            };
            let ndx: Vec<f64> = (0..xv.len()).map(|k| num(k, 0)).collect();
            let ndw: Vec<f64> = (0..c).map(|k| num(k, 1)).collect();
            let ndb: Vec<f64> = (0..c).map(|k| num(k, 2)).collect();
            close(&f64v(&dx), &ndx, 1e-6);
            close(&f64v(&dw), &ndw, 1e-6);
            close(&f64v(&db), &ndb, 1e-6);
        }
    }
    let x = Tensor::zeros(&[2, 6, 4], ScalarType::Float).unwrap();
    assert_eq!(
        msg(operators::group_norm::call(&x, 4, None, None, 1e-5, true)),
        "Expected number of channels in input to be divisible by num_groups, but got input of \
         shape [2, 6, 4] and num_groups=4"
    );
    let xm = Tensor::empty(&[2, 6, 4], (ScalarType::Float, Device::META)).unwrap();
    let (y, m, _) = operators::native_group_norm::call(&xm, None, None, 2, 6, 4, 3, 1e-5).unwrap();
    assert_eq!(
        (y.sizes().to_vec(), m.sizes().to_vec()),
        (vec![2, 6, 4], vec![2, 3])
    );
}

// ---- padding ---------------------------------------------------------------------------------

/// Naive padding of the last dim(s): `src(j)` maps an output position to an input position or
/// `None` (the constant).
fn pad_ref(
    x: &[f64],
    shape: &[usize],
    pad: &[i64],
    src: impl Fn(i64, i64) -> Option<i64>,
) -> (Vec<f64>, Vec<usize>) {
    let nd = shape.len();
    let k = pad.len() / 2;
    let mut out_shape = shape.to_vec();
    for j in 0..k {
        out_shape[nd - 1 - j] = (shape[nd - 1 - j] as i64 + pad[2 * j] + pad[2 * j + 1]) as usize;
    }
    let total: usize = out_shape.iter().product();
    let mut out = Vec::with_capacity(total);
    for flat in 0..total {
        let mut rem = flat;
        let mut idx = vec![0usize; nd];
        for d in (0..nd).rev() {
            idx[d] = rem % out_shape[d];
            rem /= out_shape[d];
        }
        let mut inside = true;
        for j in 0..k {
            let d = nd - 1 - j;
            match src(idx[d] as i64 - pad[2 * j], shape[d] as i64) {
                Some(s) => idx[d] = s as usize,
                None => inside = false,
            }
        }
        if !inside {
            out.push(0.25);
            continue;
        }
        let mut off = 0;
        for d in 0..nd {
            off = off * shape[d] + idx[d];
        }
        out.push(x[off]);
    }
    (out, out_shape)
}

#[test]
fn padding_modes_match_reference() {
    let shape = [2usize, 3, 4, 5];
    let xv = values(shape.iter().product(), 51);
    let x = tensor(&xv, &[2, 3, 4, 5], ScalarType::Double);
    let reflect = |i: i64, n: i64| {
        let i = i.abs();
        Some(if i >= n { 2 * (n - 1) - i } else { i })
    };
    let replicate = |i: i64, n: i64| Some(i.clamp(0, n - 1));
    let constant = |i: i64, n: i64| (0..n).contains(&i).then_some(i);
    for pad in [vec![2i64, 1], vec![1, 3, 2, 0], vec![0, -1, 1, 2]] {
        let shown: Vec<i64> = pad_ref(&xv, &shape, &pad, constant)
            .1
            .iter()
            .map(|&v| v as i64)
            .collect();
        let c = operators::constant_pad_nd::call(&x, &pad, &0.25.into()).unwrap();
        assert_eq!(c.sizes().to_vec(), shown);
        assert_eq!(f64v(&c), pad_ref(&xv, &shape, &pad, constant).0);
        if pad.len() == 4 && pad.iter().all(|&p| p >= 0) {
            let r = operators::pad::call(&x, &pad, "reflect", None).unwrap();
            assert_eq!(f64v(&r), pad_ref(&xv, &shape, &pad, reflect).0);
            let p = operators::pad::call(&x, &pad, "replicate", None).unwrap();
            assert_eq!(f64v(&p), pad_ref(&xv, &shape, &pad, replicate).0);
            let wrap = |i: i64, n: i64| Some(i.rem_euclid(n));
            let cc = operators::pad::call(&x, &pad, "circular", None).unwrap();
            assert_eq!(f64v(&cc), pad_ref(&xv, &shape, &pad, wrap).0);
        }
    }
    // Backward: the adjoint of the forward gather (sum over the positions that read each input).
    let g = tensor(
        &values(2 * 3 * 7 * 8, 52),
        &[2, 3, 7, 8],
        ScalarType::Double,
    );
    let gi = operators::reflection_pad2d_backward::call(&g, &x, &[1, 2, 2, 1]).unwrap();
    let y = operators::reflection_pad2d::call(&x, &[1, 2, 2, 1]).unwrap();
    // <g, pad(x)> == <pad_backward(g), x>
    let lhs: f64 = f64v(&g).iter().zip(f64v(&y)).map(|(a, b)| a * b).sum();
    let rhs: f64 = f64v(&gi).iter().zip(&xv).map(|(a, b)| a * b).sum();
    assert!((lhs - rhs).abs() < 1e-10, "{lhs} {rhs}");
    let g1 = tensor(
        &values(2 * 3 * 4 * 9, 53),
        &[2, 3, 4, 9],
        ScalarType::Double,
    );
    let gi1 = operators::replication_pad1d_backward::call(
        &g1.reshape(&[6, 4, 9]).unwrap(),
        &x.reshape(&[6, 4, 5]).unwrap(),
        &[3, 1],
    )
    .unwrap();
    let y1 = operators::replication_pad1d::call(&x.reshape(&[6, 4, 5]).unwrap(), &[3, 1]).unwrap();
    let lhs: f64 = f64v(&g1).iter().zip(f64v(&y1)).map(|(a, b)| a * b).sum();
    let rhs: f64 = f64v(&gi1).iter().zip(&xv).map(|(a, b)| a * b).sum();
    assert!((lhs - rhs).abs() < 1e-10, "{lhs} {rhs}");

    // Errors and meta.
    assert_eq!(
        msg(operators::reflection_pad1d::call(
            &x.reshape(&[6, 4, 5]).unwrap(),
            &[5, 0]
        )),
        "Argument #4: Padding size should be less than the corresponding input dimension, but \
         got: padding (5, 0) at dimension 2 of input [6, 4, 5]"
    );
    assert_eq!(
        msg(operators::constant_pad_nd::call(&x, &[1, 2, 3], &0.into())),
        "Length of pad must be even but instead it equals 3"
    );
    assert_eq!(
        msg(operators::pad::call(&x, &[1, 1], "wrap", None)),
        "Unrecognised padding mode wrap"
    );
    assert_eq!(
        msg(operators::pad::call(&x, &[1, 1], "reflect", Some(1.0))),
        "Padding mode \"reflect\" doesn't take in value argument"
    );
    let xm = Tensor::empty(&[2, 3, 4, 5], (ScalarType::Float, Device::META)).unwrap();
    for mode in ["constant", "reflect", "replicate"] {
        let y = operators::pad::call(&xm, &[1, 2, 3, 0], mode, None).unwrap();
        assert_eq!(y.sizes().as_slice(), &[2, 3, 7, 8], "{mode}");
    }
}

// ---- interpolation ---------------------------------------------------------------------------

/// Naive bilinear interpolation (torch's source index and weights, in float64).
fn bilinear_ref(x: &[f64], s: [usize; 4], oh: usize, ow: usize, align: bool) -> Vec<f64> {
    let taps = |i: usize, o: usize| -> Vec<(usize, usize, f64, f64)> {
        (0..o)
            .map(|j| {
                if i == o {
                    return (j, j, 1.0, 0.0);
                }
                let r = if align {
                    if o > 1 {
                        (i - 1) as f64 / (o - 1) as f64 * j as f64
                    } else {
                        0.0
                    }
                } else {
                    (i as f64 / o as f64 * (j as f64 + 0.5) - 0.5).max(0.0)
                };
                let i0 = (r.floor() as usize).min(i - 1);
                let l1 = (r - i0 as f64).clamp(0.0, 1.0);
                (i0, i0 + usize::from(i0 < i - 1), 1.0 - l1, l1)
            })
            .collect()
    };
    let (th, tw) = (taps(s[2], oh), taps(s[3], ow));
    let at = |p: usize, h: usize, w: usize| x[(p * s[2] + h) * s[3] + w];
    let mut y = vec![];
    for p in 0..s[0] * s[1] {
        for &(h0, h1, lh0, lh1) in &th {
            for &(w0, w1, lw0, lw1) in &tw {
                y.push(
                    lh0 * (lw0 * at(p, h0, w0) + lw1 * at(p, h0, w1))
                        + lh1 * (lw0 * at(p, h1, w0) + lw1 * at(p, h1, w1)),
                );
            }
        }
    }
    y
}

#[test]
fn upsample_matches_reference() {
    let s = [2usize, 3, 4, 5];
    let xv = values(s.iter().product(), 61);
    let x = tensor(&xv, &[2, 3, 4, 5], ScalarType::Double);
    // Nearest: doubling repeats, other sizes floor(j * in / out).
    let y = operators::upsample_nearest2d::call(&x, &[8, 3], None, None).unwrap();
    let mut want = vec![];
    for p in 0..6 {
        for h in 0..8 {
            for w in 0..3 {
                let sw = ((w as f32) * (5.0f32 / 3.0)).floor() as usize;
                want.push(xv[(p * 4 + h / 2) * 5 + sw]);
            }
        }
    }
    assert_eq!(f64v(&y), want);
    for align in [false, true] {
        for (oh, ow) in [(7, 3), (4, 5), (2, 9)] {
            let y = operators::upsample_bilinear2d::call(&x, &[oh, ow], align, None, None).unwrap();
            close(
                &f64v(&y),
                &bilinear_ref(&xv, s, oh as usize, ow as usize, align),
                1e-12,
            );
            let xf = x.to_dtype(ScalarType::Float).unwrap();
            let yf =
                operators::upsample_bilinear2d::call(&xf, &[oh, ow], align, None, None).unwrap();
            assert_eq!(yf.dtype(), ScalarType::Float);
            close(
                &f64v(&yf),
                &bilinear_ref(&xv, s, oh as usize, ow as usize, align),
                1e-5,
            );
            // The backward is the forward's adjoint.
            let g = tensor(
                &values(6 * (oh * ow) as usize, 62),
                &[2, 3, oh, ow],
                ScalarType::Double,
            );
            let gi = operators::upsample_bilinear2d_backward::call(
                &g,
                &[oh, ow],
                &[2, 3, 4, 5],
                align,
                None,
                None,
            )
            .unwrap();
            let lhs: f64 = f64v(&g).iter().zip(f64v(&y)).map(|(a, b)| a * b).sum();
            let rhs: f64 = f64v(&gi).iter().zip(&xv).map(|(a, b)| a * b).sum();
            assert!((lhs - rhs).abs() < 1e-10, "{lhs} {rhs}");
        }
    }
    let g = tensor(&values(6 * 24, 63), &[2, 3, 8, 3], ScalarType::Double);
    let gi = operators::upsample_nearest2d_backward::call(&g, &[8, 3], &[2, 3, 4, 5], None, None)
        .unwrap();
    let y = operators::upsample_nearest2d::call(&x, &[8, 3], None, None).unwrap();
    let lhs: f64 = f64v(&g).iter().zip(f64v(&y)).map(|(a, b)| a * b).sum();
    let rhs: f64 = f64v(&gi).iter().zip(&xv).map(|(a, b)| a * b).sum();
    assert!((lhs - rhs).abs() < 1e-10);
    assert_eq!(
        msg(operators::upsample_bilinear2d::call(
            &x,
            &[0, 2],
            false,
            None,
            None
        )),
        "Input and output sizes should be greater than 0, but got input (H: 4, W: 5) output \
         (H: 0, W: 2)"
    );
    let xm = Tensor::empty(&[2, 3, 4, 5], (ScalarType::Float, Device::META)).unwrap();
    assert_eq!(
        operators::upsample_bilinear2d::call(&xm, &[7, 1], true, None, None)
            .unwrap()
            .sizes()
            .as_slice(),
        &[2, 3, 7, 1]
    );
}
