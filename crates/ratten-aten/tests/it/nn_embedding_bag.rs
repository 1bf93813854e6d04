//! embedding_bag (sum, mean, max; per-sample weights, padding_idx, include_last_offset) and its
//! backward ops against a naive loop over the bags, for float64, float32, half and bfloat16
//! weights and int64 / int32 indices; torch's outputs beside the result (offset2bag, bag_size,
//! max_indices), its errors, and meta shapes.

use crate::common::{msg, values as f64v};
use ratten_aten::{operators, Tensor};
use ratten_core::{Device, ScalarType};

const SUM: i64 = 0;
const MEAN: i64 = 1;
const MAX: i64 = 2;

fn values(n: usize, seed: u64) -> Vec<f64> {
    (0..n as u64)
        .map(|i| {
            let h = (i.wrapping_add(seed).wrapping_mul(2654435761)) % 1000;
            h as f64 / 125.0 - 4.0
        })
        .collect()
}

fn tensor(v: &[f64], sizes: &[i64], dt: ScalarType) -> Tensor {
    Tensor::from_slice(v, sizes).unwrap().to_dtype(dt).unwrap()
}

fn longs(v: &[i64]) -> Tensor {
    Tensor::from_slice(v, &[v.len() as i64]).unwrap()
}

fn i64v(t: &Tensor) -> Vec<i64> {
    t.to_dtype(ScalarType::Long)
        .unwrap()
        .contiguous()
        .unwrap()
        .to_vec::<i64>()
        .unwrap()
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

/// One call's arguments, as the naive loop reads them.
struct Case<'a> {
    w: &'a [f64],
    d: usize,
    idx: &'a [i64],
    offsets: &'a [i64],
    mode: i64,
    psw: Option<&'a [f64]>,
    include_last: bool,
    padding_idx: i64,
}

/// The bags of a case: for each, the positions of its indices.
fn bags(c: &Case) -> Vec<Vec<usize>> {
    let nb = if c.include_last {
        c.offsets.len() - 1
    } else {
        c.offsets.len()
    };
    (0..nb)
        .map(|b| {
            let end = if b + 1 < nb {
                c.offsets[b + 1] as usize
            } else {
                c.idx.len()
            };
            (c.offsets[b] as usize..end).collect()
        })
        .collect()
}

/// (output, bag_size, max_indices) by the definition.
fn naive(c: &Case) -> (Vec<f64>, Vec<i64>, Vec<i64>) {
    let d = c.d;
    let mut out = Vec::new();
    let mut sizes = Vec::new();
    let mut argmax = Vec::new();
    for bag in bags(c) {
        let kept: Vec<usize> = bag
            .into_iter()
            .filter(|&p| c.idx[p] != c.padding_idx)
            .collect();
        sizes.push(kept.len() as i64);
        for k in 0..d {
            let vals = kept.iter().map(|&p| {
                let s = c.psw.map_or(1.0, |w| w[p]);
                (c.w[c.idx[p] as usize * d + k] * s, c.idx[p])
            });
            match c.mode {
                MAX => {
                    let mut best: Option<(f64, i64)> = None;
                    for (v, i) in vals {
                        if best.is_none_or(|(b, _)| v > b) {
                            best = Some((v, i));
                        }
                    }
                    let (v, i) = best.unwrap_or((0.0, 0));
                    out.push(v);
                    argmax.push(i);
                }
                _ => {
                    let s: f64 = vals.map(|(v, _)| v).sum();
                    out.push(if c.mode == MEAN {
                        s / (kept.len().max(1) as f64)
                    } else {
                        s
                    });
                }
            }
        }
    }
    (out, sizes, argmax)
}

/// The gradient of the weight for the output gradient `g` by the definition.
fn naive_backward(c: &Case, g: &[f64], num_weights: usize, freq: bool) -> Vec<f64> {
    let d = c.d;
    let mut gw = vec![0.0; num_weights * d];
    let (_, sizes, argmax) = naive(c);
    for (b, bag) in bags(c).into_iter().enumerate() {
        if c.mode == MAX {
            if sizes[b] == 0 {
                continue;
            }
            for k in 0..d {
                gw[argmax[b * d + k] as usize * d + k] += g[b * d + k];
            }
            continue;
        }
        for p in bag {
            let row = c.idx[p];
            if row == c.padding_idx {
                continue;
            }
            let mut s = c.psw.map_or(1.0, |w| w[p]);
            if freq {
                s /= c.idx.iter().filter(|&&x| x == row).count() as f64;
            }
            if c.mode == MEAN && sizes[b] != 0 {
                s /= sizes[b] as f64;
            }
            for k in 0..d {
                gw[row as usize * d + k] += g[b * d + k] * s;
            }
        }
    }
    gw
}

fn run(c: &Case, dt: ScalarType, idx_dt: ScalarType) -> (Tensor, Tensor, Tensor, Tensor) {
    let rows = (c.w.len() / c.d) as i64;
    let w = tensor(c.w, &[rows, c.d as i64], dt);
    let idx = longs(c.idx).to_dtype(idx_dt).unwrap();
    let offs = longs(c.offsets).to_dtype(idx_dt).unwrap();
    let psw = c.psw.map(|p| tensor(p, &[p.len() as i64], dt));
    operators::_embedding_bag::call(
        &w,
        &idx,
        &offs,
        false,
        c.mode,
        false,
        psw.as_ref(),
        c.include_last,
        c.padding_idx,
    )
    .unwrap()
}

#[test]
fn forward_matches_the_definition() {
    let w = values(7 * 5, 3);
    let idx = [3i64, 0, 6, 6, 2, 1, 3, 5, 4, 0];
    let psw = values(idx.len(), 11);
    // include_last_offset only where the last offset is the end of `indices`: torch's fast
    // sum path and its other paths disagree otherwise (tested apart below).
    let offset_sets: [&[i64]; 4] = [&[0, 3, 3, 7], &[0], &[0, 2, 4, 6, 8, 10], &[0, 5, 10]];
    for offsets in offset_sets {
        for mode in [SUM, MEAN, MAX] {
            for include_last in [false, true] {
                if include_last && offsets[offsets.len() - 1] != idx.len() as i64 {
                    continue;
                }
                for padding_idx in [-1i64, 6, 0] {
                    for with_psw in [false, true] {
                        if with_psw && mode != SUM {
                            continue;
                        }
                        let c = Case {
                            w: &w,
                            d: 5,
                            idx: &idx,
                            offsets,
                            mode,
                            psw: with_psw.then_some(&psw[..]),
                            include_last,
                            padding_idx,
                        };
                        let (want, sizes, argmax) = naive(&c);
                        for (dt, tol) in [
                            (ScalarType::Double, 1e-12),
                            (ScalarType::Float, 1e-5),
                            (ScalarType::Half, 4e-3),
                            (ScalarType::BFloat16, 3e-2),
                        ] {
                            for idx_dt in [ScalarType::Long, ScalarType::Int] {
                                let (out, o2b, bag_size, max_idx) = run(&c, dt, idx_dt);
                                assert_eq!(out.dtype(), dt);
                                assert_eq!(o2b.dtype(), idx_dt);
                                let nb = sizes.len() as i64;
                                assert_eq!(out.sizes().as_slice(), &[nb, 5]);
                                // Reduced types round the weights first: compare with the
                                // definition over the rounded weights.
                                let rounded = f64v(&tensor(&w, &[7, 5], dt));
                                let psw_r = f64v(&tensor(&psw, &[10], dt));
                                let cr = Case {
                                    w: &rounded,
                                    psw: c.psw.map(|_| &psw_r[..]),
                                    ..c
                                };
                                let want_r = naive(&cr).0;
                                close(&f64v(&out), &want_r, tol);
                                if dt == ScalarType::Double {
                                    close(&f64v(&out), &want, tol);
                                }
                                match mode {
                                    SUM => {
                                        assert!(i64v(&bag_size).iter().all(|&s| s == 0));
                                        assert_eq!(i64v(&max_idx), i64v(&bag_size));
                                    }
                                    MEAN => {
                                        assert_eq!(i64v(&bag_size), sizes);
                                        assert_eq!(i64v(&max_idx), sizes);
                                    }
                                    _ => {
                                        assert_eq!(i64v(&bag_size), sizes);
                                        assert_eq!(max_idx.sizes().as_slice(), &[nb, 5]);
                                        if dt == ScalarType::Double {
                                            assert_eq!(i64v(&max_idx), argmax);
                                        }
                                    }
                                }
                                // offset2bag is left empty on torch's fast sum path.
                                let fast =
                                    mode == SUM && dt != ScalarType::Double && padding_idx < 0;
                                if fast {
                                    assert_eq!(o2b.numel(), 0);
                                } else {
                                    let mut want_o2b = vec![0i64; idx.len()];
                                    let starts = &offsets[..sizes.len()];
                                    for (p, o) in want_o2b.iter_mut().enumerate() {
                                        *o = (starts.iter().filter(|&&s| s as usize <= p).count()
                                            as i64
                                            - 1)
                                        .max(0);
                                    }
                                    assert_eq!(i64v(&o2b), want_o2b);
                                }
                            }
                        }
                    }
                }
            }
        }
    }
}

#[test]
fn include_last_offset_bounds_the_last_bag_as_torch_does() {
    // offsets [0, 2, 3] over 5 indices with include_last_offset: torch's fast sum path
    // (float, no padding) takes bag 1 = indices 2..3; its other paths (double, a padding
    // index, mean) run bag 1 to the end of `indices`.
    let w = values(6 * 2, 9);
    let idx = [0i64, 1, 2, 3, 4];
    let row = |r: usize| [w[r * 2], w[r * 2 + 1]];
    for (dt, mode, padding_idx, members) in [
        (ScalarType::Float, SUM, -1i64, vec![2usize]),
        (ScalarType::Double, SUM, -1, vec![2, 3, 4]),
        (ScalarType::Float, SUM, 5, vec![2, 3, 4]),
    ] {
        let c = Case {
            w: &w,
            d: 2,
            idx: &idx,
            offsets: &[0, 2, 3],
            mode,
            psw: None,
            include_last: true,
            padding_idx,
        };
        let out = f64v(&run(&c, dt, ScalarType::Long).0);
        let mut want = vec![row(0)[0] + row(1)[0], row(0)[1] + row(1)[1], 0.0, 0.0];
        for &r in &members {
            want[2] += row(r)[0];
            want[3] += row(r)[1];
        }
        close(&out, &want, 1e-6);
    }
}

#[test]
fn backward_matches_the_definition() {
    let w = values(6 * 4, 5);
    let idx = [5i64, 1, 1, 3, 0, 5, 2, 1];
    let offsets = [0i64, 2, 2, 5];
    let psw = values(idx.len(), 17);
    for mode in [SUM, MEAN, MAX] {
        for padding_idx in [-1i64, 1] {
            for freq in [false, true] {
                for with_psw in [false, true] {
                    if (with_psw || freq) && mode == MAX {
                        continue;
                    }
                    if with_psw && mode != SUM {
                        continue;
                    }
                    let c = Case {
                        w: &w,
                        d: 4,
                        idx: &idx,
                        offsets: &offsets,
                        mode,
                        psw: with_psw.then_some(&psw[..]),
                        include_last: false,
                        padding_idx,
                    };
                    for dt in [ScalarType::Double, ScalarType::Float] {
                        let (_, o2b, bag_size, max_idx) = run(&c, dt, ScalarType::Long);
                        let gv = values(4 * 4, 23);
                        let g = tensor(&gv, &[4, 4], dt);
                        let psw_t = c.psw.map(|p| tensor(p, &[p.len() as i64], dt));
                        let gw = operators::_embedding_bag_backward::call(
                            &g,
                            &longs(&idx),
                            &longs(&offsets),
                            &o2b,
                            &bag_size,
                            &max_idx,
                            6,
                            freq,
                            mode,
                            false,
                            psw_t.as_ref(),
                            padding_idx,
                        )
                        .unwrap();
                        assert_eq!(gw.sizes().as_slice(), &[6, 4]);
                        let tol = if dt == ScalarType::Double {
                            1e-12
                        } else {
                            1e-5
                        };
                        close(&f64v(&gw), &naive_backward(&c, &gv, 6, freq), tol);

                        if with_psw {
                            let gp = operators::_embedding_bag_per_sample_weights_backward::call(
                                &g,
                                &tensor(&w, &[6, 4], dt),
                                &longs(&idx),
                                &longs(&offsets),
                                &o2b,
                                mode,
                                padding_idx,
                            )
                            .unwrap();
                            // d out[bag] / d psw[p] = w[idx[p]], dotted with g[bag].
                            let mut want = vec![0.0; idx.len()];
                            for (b, bag) in bags(&c).into_iter().enumerate() {
                                for p in bag {
                                    if idx[p] == padding_idx {
                                        continue;
                                    }
                                    want[p] = (0..4)
                                        .map(|k| gv[b * 4 + k] * w[idx[p] as usize * 4 + k])
                                        .sum();
                                }
                            }
                            close(&f64v(&gp), &want, tol);
                        }
                    }
                }
            }
        }
    }
}

#[test]
fn composite_wraps_padding_idx_and_picks_the_forward() {
    let w = tensor(&values(5 * 3, 1), &[5, 3], ScalarType::Float);
    let idx = longs(&[0, 1, 4, 4]);
    let offs = longs(&[0, 2]);
    // padding_idx=-1 wraps to 4 (so it is not torch's fast path: offset2bag is filled).
    let (out, o2b, _, _) = operators::embedding_bag_padding_idx::call(
        &w,
        &idx,
        &offs,
        false,
        SUM,
        false,
        None,
        false,
        Some(-1),
    )
    .unwrap();
    assert_eq!(i64v(&o2b), vec![0, 0, 1, 1]);
    let out = f64v(&out);
    assert!(out[3..].iter().all(|&v| v == 0.0));
    assert_eq!(
        msg(operators::embedding_bag_padding_idx::call(
            &w,
            &idx,
            &offs,
            false,
            SUM,
            false,
            None,
            false,
            Some(5),
        )),
        "padding_idx must be within the number of embeddings, -5 through 4, but got 5"
    );
    // The forward-only op (weight without grad) gives bag_size the shape of offsets for sum.
    let (_, _, bag_size, _) =
        operators::embedding_bag::call(&w, &idx, &offs, false, SUM, false, None, true).unwrap();
    assert_eq!(bag_size.sizes().as_slice(), &[2]);
    assert_eq!(i64v(&bag_size), vec![0, 0]);
}

#[test]
fn errors_are_torchs() {
    let w = tensor(&values(5 * 3, 1), &[5, 3], ScalarType::Float);
    let call = |w: &Tensor, idx: &Tensor, offs: &Tensor, mode: i64, psw: Option<&Tensor>, last| {
        operators::_embedding_bag::call(w, idx, offs, false, mode, false, psw, last, -1)
    };
    let idx = longs(&[0, 1, 2]);
    assert_eq!(
        msg(call(&w, &idx, &longs(&[1, 2]), SUM, None, false)),
        "offsets[0] has to be 0, i.e., the first sequence in the mini-batch has to start from \
         position 0. However, got 1\n[ torch.LongTensor{} ]"
    );
    assert_eq!(
        msg(call(&w, &idx, &longs(&[0, 4]), SUM, None, false)),
        "offsets[-1] can not be greater than input's length 3 but got offsets[-1] of 4"
    );
    assert_eq!(
        msg(call(
            &w,
            &longs(&[0, 1, 7]),
            &longs(&[0, 2]),
            MEAN,
            None,
            false
        )),
        "embedding_bag: Expected idx >= 0 && idx < num_embeddings but found idx to be 7"
    );
    let ones3 = Tensor::ones(&[3], ScalarType::Float).unwrap();
    assert_eq!(
        msg(call(&w, &idx, &longs(&[0, 2]), MEAN, Some(&ones3), false)),
        "embedding_bag: per_sample_weights only supported with mode='sum'"
    );
    assert_eq!(
        msg(call(
            &w,
            &idx,
            &longs(&[0, 2]),
            SUM,
            Some(&Tensor::ones(&[2], ScalarType::Float).unwrap()),
            false
        )),
        "Expected per_sample_weights.value().numel() == indices.numel() to be true, but got \
         false.  (Could this error message be improved?  If so, please report an enhancement \
         request to PyTorch.)"
    );
    assert_eq!(
        msg(call(
            &w,
            &idx,
            &longs(&[0, 2]),
            SUM,
            Some(&Tensor::ones(&[3], ScalarType::Double).unwrap()),
            false
        )),
        "Expected tensor for argument #1 'weight' to have the same type as tensor for argument \
         #1 'per_sample_weights'; but type torch.FloatTensor does not equal torch.DoubleTensor \
         (while checking arguments for embedding_bag)"
    );
    assert_eq!(
        msg(call(&w, &idx, &longs(&[]), SUM, None, true)),
        "include_last_offset: number of offset should be at least 1"
    );
    assert_eq!(
        msg(call(
            &w,
            &idx,
            &Tensor::from_slice(&[0i64, 2], &[1, 2]).unwrap(),
            SUM,
            None,
            false
        )),
        "offsets has to be a 1D Tensor, but got Tensor of dimension 2"
    );
    assert_eq!(
        msg(call(
            &w,
            &Tensor::from_slice(&[0i64, 1, 2], &[1, 1, 3]).unwrap(),
            &longs(&[0]),
            SUM,
            None,
            false
        )),
        "input has to be a 1D or 2D Tensor, but got Tensor of dimension 3"
    );
    assert_eq!(
        msg(call(
            &w,
            &idx.to_dtype(ScalarType::Float).unwrap(),
            &longs(&[0]),
            SUM,
            None,
            false
        )),
        "Expected tensor for argument #1 'indices' to have one of the following scalar types: \
         Long, Int; but got torch.FloatTensor instead (while checking arguments for \
         embedding_bag)"
    );
    assert_eq!(
        msg(call(
            &w.to_dtype(ScalarType::Long).unwrap(),
            &idx,
            &longs(&[0]),
            SUM,
            None,
            false
        )),
        "Expected tensor for argument #1 'weight' to have one of the following scalar types: \
         Half, BFloat16, Float, Double; but got torch.LongTensor instead (while checking \
         arguments for embedding_bag)"
    );
    assert_eq!(
        msg(call(&w, &idx, &longs(&[0]), 3, None, false)),
        "`mode` must be sum, mean, or max."
    );
    let g = Tensor::ones(&[1, 3], ScalarType::Float).unwrap();
    let e = Tensor::zeros(&[0], ScalarType::Long).unwrap();
    assert_eq!(
        msg(operators::_embedding_bag_per_sample_weights_backward::call(
            &g,
            &w,
            &idx,
            &longs(&[0]),
            &e,
            MEAN,
            -1
        )),
        "embedding_bag_backward: per_sample_weights only supported for mode='sum'"
    );
}

#[test]
fn meta_shapes() {
    let meta = |s: &[i64], dt| Tensor::empty(s, (dt, Device::META)).unwrap();
    let w = meta(&[9, 4], ScalarType::Float);
    let idx = meta(&[6], ScalarType::Long);
    let offs = meta(&[3], ScalarType::Long);
    for (mode, last, want) in [
        (SUM, false, [[3i64, 4], [0, 0], [3, 0], [3, 0]]),
        (MEAN, false, [[3, 4], [6, 0], [3, 0], [3, 0]]),
        (MAX, false, [[3, 4], [6, 0], [3, 0], [3, 4]]),
        (MAX, true, [[2, 4], [6, 0], [2, 0], [2, 4]]),
    ] {
        let (o, a, b, c) =
            operators::_embedding_bag::call(&w, &idx, &offs, false, mode, false, None, last, -1)
                .unwrap();
        let shape = |t: &Tensor, s: [i64; 2]| {
            let want: Vec<i64> = s.iter().copied().take(t.dim()).collect();
            assert_eq!(t.sizes().as_slice(), &want[..]);
            assert!(t.is_meta());
        };
        assert_eq!(o.dim(), 2);
        shape(&o, want[0]);
        assert_eq!(a.dim(), 1);
        shape(&a, want[1]);
        shape(&b, want[2]);
        shape(&c, want[3]);
    }
    let gw = operators::_embedding_bag_dense_backward::call(
        &meta(&[3, 4], ScalarType::Float),
        &idx,
        &idx,
        &offs,
        &offs,
        9,
        false,
        SUM,
        None,
        -1,
    )
    .unwrap();
    assert_eq!(gw.sizes().as_slice(), &[9, 4]);
}
