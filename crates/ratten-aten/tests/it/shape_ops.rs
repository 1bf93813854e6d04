//! The shape operators (cat, stack, hstack, vstack, flip, roll, repeat, tile,
//! repeat_interleave, tril, triu) through the dispatcher: values against naive index loops
//! (property tests over shapes, dims, strided and transposed inputs, mixed dtypes), the legacy
//! skipping of `(0,)` tensors in cat, out= (resized with torch's warning, a dtype it cannot
//! hold refused), PyTorch's error texts, every element size, the block-copy and threaded paths
//! of cat, channels-last layouts, and shapes on the meta device.

#![allow(clippy::needless_range_loop)]

use crate::common::values as f64v;
use crate::common::{err, numel, ravel, unravel};
use proptest::prelude::*;
use ratten_aten::structured::capture_warnings;
use ratten_aten::tensor_iterator::parallel::{get_num_threads, set_num_threads};
use ratten_aten::{operators as ops, Tensor};
use ratten_core::{Device, ErrorKind, ScalarType};

// ---------------------------------------------------------------------------------------------
// helpers

fn f64t(v: &[f64], sizes: &[i64]) -> Tensor {
    Tensor::from_slice(v, sizes).unwrap()
}

/// How a test tensor is laid out in memory: its logical values are the same.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Layout {
    Contiguous,
    /// Stored transposed (first and last dims swapped), viewed back.
    Transposed,
    /// Every other element of a tensor twice as long in the last dim.
    Sliced,
}

fn layouts() -> impl Strategy<Value = Layout> {
    prop_oneof![
        Just(Layout::Contiguous),
        Just(Layout::Transposed),
        Just(Layout::Sliced)
    ]
}

/// A tensor of dtype `dt` with these logical values, laid out as `layout` says.
fn make(vals: &[f64], sizes: &[i64], layout: Layout, dt: ScalarType) -> Tensor {
    let nd = sizes.len();
    let t = match layout {
        Layout::Transposed if nd >= 2 => {
            let mut ts = sizes.to_vec();
            ts.swap(0, nd - 1);
            let mut base = vec![0.0; vals.len()];
            for (lin, v) in vals.iter().enumerate() {
                let mut c = unravel(lin, sizes);
                c.swap(0, nd - 1);
                base[ravel(&c, &ts)] = *v;
            }
            f64t(&base, &ts).transpose(0, nd as i64 - 1).unwrap()
        }
        Layout::Sliced if nd >= 1 => {
            let mut ws = sizes.to_vec();
            ws[nd - 1] *= 2;
            let mut base = vec![-7.0; numel(&ws)];
            for (lin, v) in vals.iter().enumerate() {
                let mut c = unravel(lin, sizes);
                c[nd - 1] *= 2;
                base[ravel(&c, &ws)] = *v;
            }
            ops::slice_Tensor::call(&f64t(&base, &ws), nd as i64 - 1, None, None, 2).unwrap()
        }
        _ => f64t(vals, sizes),
    };
    if dt == ScalarType::Double {
        return t;
    }
    // A cast keeps the layout only for a contiguous tensor: cast the base, view it again.
    match layout {
        Layout::Contiguous => t.to_dtype(dt).unwrap(),
        _ => {
            let c = t.to_dtype(dt).unwrap();
            let strided = empty_strided_like(&t, dt);
            ops::copy_::call(&strided, &c, false).unwrap();
            strided
        }
    }
}

/// A tensor of `t`'s sizes and strides (over a storage just large enough) of dtype `dt`.
fn empty_strided_like(t: &Tensor, dt: ScalarType) -> Tensor {
    ops::empty_strided::call(
        &t.sizes(),
        &t.strides(),
        Some(dt),
        None,
        Some(Device::CPU),
        None,
    )
    .unwrap()
}

fn values(n: usize, seed: f64) -> Vec<f64> {
    (0..n)
        .map(|i| ((i as f64 * 7.3 + seed) % 23.0).round() - 11.0)
        .collect()
}

fn meta(sizes: &[i64], dt: ScalarType) -> Tensor {
    Tensor::empty(sizes, (dt, Device::META)).unwrap()
}

// ---------------------------------------------------------------------------------------------
// references

/// cat of `(values, sizes)` along `dim` (none of them skipped).
fn cat_ref(inputs: &[(Vec<f64>, Vec<i64>)], dim: usize) -> (Vec<f64>, Vec<i64>) {
    let mut sizes = inputs[0].1.clone();
    sizes[dim] = inputs.iter().map(|(_, s)| s[dim]).sum();
    let mut out = vec![0.0; numel(&sizes)];
    let mut offset = 0;
    for (v, s) in inputs {
        for lin in 0..v.len() {
            let mut c = unravel(lin, s);
            c[dim] += offset;
            out[ravel(&c, &sizes)] = v[lin];
        }
        offset += s[dim];
    }
    (out, sizes)
}

fn flip_ref(v: &[f64], sizes: &[i64], dims: &[usize]) -> Vec<f64> {
    (0..v.len())
        .map(|lin| {
            let mut c = unravel(lin, sizes);
            for &d in dims {
                c[d] = sizes[d] - 1 - c[d];
            }
            v[ravel(&c, sizes)]
        })
        .collect()
}

fn roll_ref(v: &[f64], sizes: &[i64], shifts: &[i64], dims: &[usize]) -> Vec<f64> {
    let mut out = vec![0.0; v.len()];
    for lin in 0..v.len() {
        let mut c = unravel(lin, sizes);
        for (&s, &d) in shifts.iter().zip(dims) {
            c[d] = (c[d] + s).rem_euclid(sizes[d]);
        }
        out[ravel(&c, sizes)] = v[lin];
    }
    out
}

fn repeat_ref(v: &[f64], sizes: &[i64], repeats: &[i64]) -> (Vec<f64>, Vec<i64>) {
    let mut padded = vec![1i64; repeats.len() - sizes.len()];
    padded.extend_from_slice(sizes);
    let out_sizes: Vec<i64> = padded.iter().zip(repeats).map(|(p, r)| p * r).collect();
    let out = (0..numel(&out_sizes))
        .map(|lin| {
            let c = unravel(lin, &out_sizes);
            let src: Vec<i64> = c.iter().zip(&padded).map(|(x, p)| x % p).collect();
            v[ravel(&src, &padded)]
        })
        .collect();
    (out, out_sizes)
}

fn triangular_ref(v: &[f64], sizes: &[i64], k: i64, upper: bool) -> Vec<f64> {
    let nd = sizes.len();
    (0..v.len())
        .map(|lin| {
            let c = unravel(lin, sizes);
            let (i, j) = (c[nd - 2], c[nd - 1]);
            let keep = if upper { j - i >= k } else { j - i <= k };
            if keep {
                v[lin]
            } else {
                0.0
            }
        })
        .collect()
}

// ---------------------------------------------------------------------------------------------
// property tests

/// A shape of 1-3 dims (sizes 0-3), a dim, 1-3 inputs with their sizes along the dim, a
/// layout and a dtype per input.
#[allow(clippy::type_complexity)]
fn cat_case() -> impl Strategy<Value = (Vec<i64>, usize, Vec<(i64, Layout, ScalarType)>, bool)> {
    let dtypes = prop_oneof![
        Just(ScalarType::Float),
        Just(ScalarType::Double),
        Just(ScalarType::Long),
        Just(ScalarType::Short),
        Just(ScalarType::Half),
    ];
    prop::collection::vec(0i64..4, 1..4).prop_flat_map(move |s| {
        let nd = s.len();
        (
            Just(s),
            0..nd,
            prop::collection::vec((0i64..4, layouts(), dtypes.clone()), 1..4),
            any::<bool>(),
        )
    })
}

fn check_cat(s: &[i64], dim: usize, parts: &[(i64, Layout, ScalarType)], negative: bool) {
    let mut refs = Vec::new();
    let mut tensors = Vec::new();
    for (k, &(n, layout, dt)) in parts.iter().enumerate() {
        let mut sz = s.to_vec();
        sz[dim] = n;
        let v = values(numel(&sz), k as f64 * 3.0);
        tensors.push(make(&v, &sz, layout, dt));
        refs.push((v, sz));
    }
    let d = if negative {
        dim as i64 - s.len() as i64
    } else {
        dim as i64
    };
    let got = ops::cat::call(&tensors, d).unwrap();
    let (want, want_sizes) = cat_ref(&refs, dim);
    assert_eq!(got.sizes().to_vec(), want_sizes);
    let dt = tensors[1..].iter().fold(tensors[0].dtype(), |a, t| {
        ratten_aten::native::type_properties::promote_types(a, t.dtype()).unwrap()
    });
    assert_eq!(got.dtype(), dt);
    assert_eq!(f64v(&got), want);
    // out= of the promoted dtype, given empty, and a wider one.
    let out = Tensor::empty(&[0], (dt, Device::CPU)).unwrap();
    ops::cat_out::call(&tensors, d, &out).unwrap();
    assert_eq!(f64v(&out), want);
    let out = Tensor::empty(&want_sizes, (ScalarType::Double, Device::CPU)).unwrap();
    ops::cat_out::call(&tensors, d, &out).unwrap();
    assert_eq!(f64v(&out), want);
}

fn flip_roll_case() -> impl Strategy<Value = (Vec<i64>, Layout, Vec<bool>, Vec<i64>)> {
    prop::collection::vec(0i64..5, 0..4).prop_flat_map(|s| {
        let nd = s.len();
        (
            Just(s),
            layouts(),
            prop::collection::vec(any::<bool>(), nd),
            prop::collection::vec(-7i64..8, nd),
        )
    })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn cat_matches_the_reference((s, dim, parts, negative) in cat_case()) {
        check_cat(&s, dim, &parts, negative);
    }

    #[test]
    fn flip_and_roll_match_the_reference((s, layout, mask, shifts) in flip_roll_case()) {
        let v = values(numel(&s), 1.5);
        let x = make(&v, &s, layout, ScalarType::Float);
        let dims: Vec<usize> = (0..s.len()).filter(|&d| mask[d]).collect();
        let di: Vec<i64> = dims.iter().map(|&d| d as i64 - s.len() as i64).collect();
        let f = ops::flip::call(&x, &di).unwrap();
        prop_assert_eq!(f.sizes().to_vec(), s.clone());
        prop_assert_eq!(f64v(&f), flip_ref(&v, &s, &dims));
        if !dims.is_empty() && !s.contains(&0) {
            let sh: Vec<i64> = dims.iter().map(|&d| shifts[d]).collect();
            let r = ops::roll::call(&x, &sh, &di).unwrap();
            prop_assert_eq!(f64v(&r), roll_ref(&v, &s, &sh, &dims));
        }
        // no dims: the flattened tensor rolls.
        let r = ops::roll::call(&x, &[shifts.first().copied().unwrap_or(2)], &[]).unwrap();
        let flat = [v.len() as i64];
        let want = if v.is_empty() { vec![] } else {
            roll_ref(&v, &flat, &[shifts.first().copied().unwrap_or(2)], &[0])
        };
        prop_assert_eq!(f64v(&r), want);
        prop_assert_eq!(r.sizes().to_vec(), s);
    }

    #[test]
    fn repeat_and_tile_match_the_reference(
        (s, layout) in (prop::collection::vec(0i64..4, 0..3), layouts()),
        extra in prop::collection::vec(0i64..3, 0..2),
        reps in prop::collection::vec(0i64..3, 3),
    ) {
        let v = values(numel(&s), 0.5);
        let x = make(&v, &s, layout, ScalarType::Int);
        let mut r = extra.clone();
        r.extend(&reps[..s.len()]);
        let got = x.repeat(&r).unwrap();
        let (want, want_sizes) = repeat_ref(&v, &s, &r);
        prop_assert_eq!(got.sizes().to_vec(), want_sizes);
        prop_assert_eq!(got.dtype(), ScalarType::Int);
        prop_assert_eq!(f64v(&got), want);
        // tile pads the shorter of the two.
        let t = ops::tile::call(&x, &reps[..s.len().min(1)]).unwrap();
        let mut padded = vec![1i64; s.len().saturating_sub(1)];
        padded.extend(&reps[..s.len().min(1)]);
        let (want, _) = repeat_ref(&v, &s, &padded);
        prop_assert_eq!(f64v(&t), want);
    }

    #[test]
    fn tril_and_triu_match_the_reference(
        (s, layout) in (prop::collection::vec(0i64..5, 2..5), layouts()),
        k in -5i64..6,
    ) {
        let v = values(numel(&s), 2.0);
        for upper in [false, true] {
            let want = triangular_ref(&v, &s, k, upper);
            let x = make(&v, &s, layout, ScalarType::Double);
            let got = if upper { x.triu_with(k) } else { x.tril_with(k) }.unwrap();
            prop_assert!(got.is_contiguous());
            prop_assert_eq!(f64v(&got), want.clone());
            // in place, in self's own layout
            if upper { x.triu_with_(k).unwrap(); } else { x.tril_with_(k).unwrap(); }
            prop_assert_eq!(f64v(&x), want.clone());
            // out= of another layout
            let out = make(&vec![9.0; v.len()], &s, Layout::Transposed, ScalarType::Double);
            let src = make(&v, &s, layout, ScalarType::Double);
            if upper {
                ops::triu_out::call(&src, k, &out).unwrap();
            } else {
                ops::tril_out::call(&src, k, &out).unwrap();
            }
            prop_assert_eq!(f64v(&out), want);
        }
    }

    #[test]
    fn repeat_interleave_matches_the_reference(
        (s, layout) in (prop::collection::vec(1i64..4, 1..3), layouts()),
        counts in prop::collection::vec(0i64..4, 3),
        by_dim in any::<bool>(),
    ) {
        let v = values(numel(&s), 4.0);
        let x = make(&v, &s, layout, ScalarType::Float);
        let dim = s.len() - 1;
        let n = s[dim] as usize;
        let reps = Tensor::from_slice(&counts[..n], &[n as i64]).unwrap();
        let got = ops::repeat_interleave_self_Tensor::call(&x, &reps, Some(-1), None).unwrap();
        // Slice j of the result along dim is slice index[j] of x.
        let index: Vec<i64> = (0..n).flat_map(|i| std::iter::repeat_n(i as i64, counts[i] as usize)).collect();
        let mut want_sizes = s.clone();
        want_sizes[dim] = index.len() as i64;
        let want: Vec<f64> = (0..numel(&want_sizes)).map(|lin| {
            let mut c = unravel(lin, &want_sizes);
            c[dim] = index[c[dim] as usize];
            v[ravel(&c, &s)]
        }).collect();
        prop_assert_eq!(got.sizes().to_vec(), want_sizes);
        prop_assert_eq!(f64v(&got), want);
        // One count for every slice, along a dim or flattened.
        let c = counts[0];
        let got = ops::repeat_interleave_self_int::call(&x, c, by_dim.then_some(0), None).unwrap();
        let flat: Vec<f64> = if by_dim {
            let inner = numel(&s[1..]);
            v.chunks(inner).flat_map(|ch| std::iter::repeat_n(ch, c as usize).flatten().copied()).collect()
        } else {
            v.iter().flat_map(|&e| std::iter::repeat_n(e, c as usize)).collect()
        };
        prop_assert_eq!(f64v(&got), flat);
    }
}

// ---------------------------------------------------------------------------------------------
// cat

#[test]
fn cat_skips_legacy_empty_tensors_but_promotes_with_them() {
    let a = f64t(&[0., 1., 2., 3., 4., 5.], &[2, 3])
        .to_dtype(ScalarType::Int)
        .unwrap();
    let e = Tensor::empty(&[0], (ScalarType::Double, Device::CPU)).unwrap();
    // dim 1 wraps against `a`, the first tensor not skipped; `e` makes the result double.
    let r = ops::cat::call(&[e.clone(), a.clone(), e.clone()], -1).unwrap();
    assert_eq!(r.sizes().to_vec(), vec![2, 3]);
    assert_eq!(r.dtype(), ScalarType::Double);
    assert_eq!(f64v(&r), vec![0., 1., 2., 3., 4., 5.]);
    // All skipped: a (0,) tensor whatever the dim.
    let r = ops::cat::call(&[e.clone(), e.clone()], 5).unwrap();
    assert_eq!(r.sizes().to_vec(), vec![0]);
    // A (2, 0) tensor is not skipped: it must match.
    let z = Tensor::empty(&[2, 0], (ScalarType::Int, Device::CPU)).unwrap();
    let r = ops::cat::call(&[z.clone(), a.clone()], 1).unwrap();
    assert_eq!(f64v(&r), vec![0., 1., 2., 3., 4., 5.]);
    let (_, m) = err(ops::cat::call(&[z, a], 0));
    assert_eq!(
        m,
        "Sizes of tensors must match except in dimension 0. Expected size 0 but got size 3 for tensor number 1 in the list."
    );
}

#[test]
fn cat_error_texts_are_torchs() {
    let a = Tensor::zeros(&[2, 3], ScalarType::Float).unwrap();
    let s = Tensor::zeros(&[], ScalarType::Float).unwrap();
    let (k, m) = err(ops::cat::call(&[a.clone(), s], 0));
    assert_eq!(k, ErrorKind::Runtime);
    assert_eq!(
        m,
        "zero-dimensional tensor (at position 1) cannot be concatenated"
    );
    let (k, m) = err(ops::cat::call(&[a.clone(), a.clone()], 2));
    assert_eq!(k, ErrorKind::Index);
    assert_eq!(
        m,
        "Dimension out of range (expected to be in range of [-2, 1], but got 2)"
    );
    let b = Tensor::zeros(&[2, 3, 1], ScalarType::Float).unwrap();
    let (_, m) = err(ops::cat::call(&[a.clone(), b], 0));
    assert_eq!(
        m,
        "Tensors must have same number of dimensions: got 2 and 3"
    );
    let c = Tensor::zeros(&[3, 4], ScalarType::Float).unwrap();
    let (_, m) = err(ops::cat::call(&[a.clone(), a.clone(), c], 1));
    assert_eq!(
        m,
        "Sizes of tensors must match except in dimension 1. Expected size 2 but got size 3 for tensor number 2 in the list."
    );
    // out=: a dtype the inputs cannot be cast to is refused before anything is written.
    let out = Tensor::zeros(&[4, 3], ScalarType::Long).unwrap();
    let (k, m) = err(ops::cat_out::call(&[a.clone(), a.clone()], 0, &out));
    assert_eq!(k, ErrorKind::Type);
    assert_eq!(
        m,
        "torch.cat(): input types can't be cast to the desired output type Long"
    );
    // an out that is one of the inputs
    let x = Tensor::zeros(&[4, 3], ScalarType::Float).unwrap();
    let (_, m) = err(ops::cat_out::call(
        &[x.narrow(0, 0, 2).unwrap(), x.narrow(0, 2, 2).unwrap()],
        0,
        &x,
    ));
    assert!(
        m.starts_with("unsupported operation: some elements of the input tensor"),
        "{m}"
    );
    // inputs on two devices
    let (_, m) = err(ops::cat::call(
        &[a.clone(), meta(&[2, 3], ScalarType::Float)],
        0,
    ));
    assert_eq!(
        m,
        "Tensor on device meta is not on the expected device cpu!"
    );
    // an empty list reaches the meta function through cat.out
    let out = Tensor::zeros(&[0], ScalarType::Float).unwrap();
    let (k, m) = err(ops::cat_out::call(&[], 0, &out));
    assert_eq!(k, ErrorKind::Value);
    assert_eq!(m, "torch.cat(): expected a non-empty list of Tensors");
}

#[test]
fn cat_out_resizes_with_torchs_warning_and_keeps_a_right_shape() {
    let a = f64t(&[1., 2., 3., 4., 5., 6.], &[2, 3]);
    let out = Tensor::zeros(&[3], ScalarType::Double).unwrap();
    let (r, w) =
        capture_warnings(|| ops::cat_out::call(&[a.clone(), a.clone()], 0, &out).map(|_| ()));
    r.unwrap();
    assert_eq!(w.len(), 1);
    assert!(w[0].message.starts_with(
        "An output with one or more elements was resized since it had shape [3], which does not match the required output shape [4, 3]."
    ));
    assert_eq!(out.sizes().to_vec(), vec![4, 3]);
    // an empty out is resized silently
    let out = Tensor::zeros(&[0], ScalarType::Double).unwrap();
    let (r, w) =
        capture_warnings(|| ops::cat_out::call(std::slice::from_ref(&a), 0, &out).map(|_| ()));
    r.unwrap();
    assert!(w.is_empty());
    // an out of the right shape keeps its (transposed) strides
    let out = Tensor::zeros(&[3, 4], ScalarType::Double)
        .unwrap()
        .t()
        .unwrap();
    ops::cat_out::call(&[a.clone(), a.clone()], 0, &out).unwrap();
    assert_eq!(out.strides().to_vec(), vec![1, 4]);
    assert_eq!(f64v(&out), [f64v(&a), f64v(&a)].concat());
}

/// A channels-last (N, C, H, W) tensor with these logical values.
fn channels_last(vals: &[f64], sizes: &[i64]) -> Tensor {
    let (n, c, h, w) = (sizes[0], sizes[1], sizes[2], sizes[3]);
    let mut nhwc = vec![0.0; vals.len()];
    for lin in 0..vals.len() {
        let x = unravel(lin, sizes);
        nhwc[ravel(&[x[0], x[2], x[3], x[1]], &[n, h, w, c])] = vals[lin];
    }
    f64t(&nhwc, &[n, h, w, c]).permute(&[0, 3, 1, 2]).unwrap()
}

#[test]
fn cat_of_channels_last_tensors_is_channels_last() {
    let s = [2, 3, 2, 2];
    let v1 = values(24, 0.0);
    let v2 = values(24, 5.0);
    let (a, b) = (channels_last(&v1, &s), channels_last(&v2, &s));
    for dim in 0..4 {
        let r = ops::cat::call(&[a.clone(), b.clone()], dim).unwrap();
        let (want, sizes) = cat_ref(
            &[(v1.clone(), s.to_vec()), (v2.clone(), s.to_vec())],
            dim as usize,
        );
        assert_eq!(r.sizes().to_vec(), sizes);
        let (c, h, w) = (sizes[1], sizes[2], sizes[3]);
        assert_eq!(
            r.strides().to_vec(),
            vec![h * w * c, 1, w * c, c],
            "dim {dim}"
        );
        assert_eq!(f64v(&r), want);
    }
    // with a contiguous tensor the result is contiguous
    let r = ops::cat::call(&[a.clone(), f64t(&v2, &s)], 1).unwrap();
    assert!(r.is_contiguous());
    // stack splits channels-last as torch does
    let r = ops::stack::call(&[a.clone(), b.clone()], 1).unwrap();
    assert_eq!(r.strides().to_vec(), vec![24, 3, 1, 12, 6]);
}

#[test]
fn large_cat_splits_over_threads_and_streams() {
    let old = get_num_threads();
    for threads in [1, 2] {
        set_num_threads(threads).unwrap();
        // 2 x (1024 x 2049) float32: 16 MiB of output, streamed; odd rows misalign the blocks.
        let (r, c) = (1024i64, 2049i64);
        let a = Tensor::arange(r * c, ScalarType::Float)
            .unwrap()
            .view(&[r, c])
            .unwrap();
        let b = a.neg().unwrap();
        for dim in [0i64, 1] {
            let got = ops::cat::call(&[a.clone(), b.clone()], dim).unwrap();
            let g = got.to_vec::<f32>().unwrap();
            let (av, bv) = (a.to_vec::<f32>().unwrap(), b.to_vec::<f32>().unwrap());
            let want: Vec<f32> = if dim == 0 {
                [av, bv].concat()
            } else {
                av.chunks(c as usize)
                    .zip(bv.chunks(c as usize))
                    .flat_map(|(x, y)| x.iter().chain(y).copied())
                    .collect()
            };
            assert!(g == want, "dim {dim}, {threads} threads");
        }
    }
    set_num_threads(old as i64).unwrap();
}

#[test]
fn every_element_size_is_moved() {
    let dts = [
        ScalarType::Bool,
        ScalarType::Byte,
        ScalarType::Half,
        ScalarType::BFloat16,
        ScalarType::Float,
        ScalarType::Long,
        ScalarType::ComplexFloat,
        ScalarType::ComplexDouble,
    ];
    let v = [1., 0., 1., 1., 0., 1.];
    for dt in dts {
        let a = f64t(&v, &[2, 3]).to_dtype(dt).unwrap();
        let t = a.t().unwrap();
        let r = ops::cat::call(&[a.clone(), a.clone()], 1).unwrap();
        assert_eq!(
            f64v(&r.to_dtype(ScalarType::Double).unwrap()),
            vec![1., 0., 1., 1., 0., 1., 1., 0., 1., 1., 0., 1.]
        );
        let r = ops::cat::call(&[t.clone(), t.clone()], 0).unwrap();
        assert_eq!(r.dtype(), dt);
        assert_eq!(
            f64v(&r),
            vec![1., 1., 0., 0., 1., 1., 1., 1., 0., 0., 1., 1.]
        );
        let f = ops::flip::call(&a, &[1]).unwrap();
        assert_eq!(f64v(&f), vec![1., 0., 1., 1., 0., 1.]);
        let f = ops::flip::call(&t, &[0, 1]).unwrap();
        assert_eq!(f64v(&f), vec![1., 1., 0., 0., 1., 1.]);
        let l = a.tril_with(0).unwrap();
        assert_eq!(f64v(&l), vec![1., 0., 0., 1., 0., 0.]);
        let u = t.triu_with(0).unwrap();
        assert_eq!(f64v(&u), vec![1., 1., 0., 0., 0., 0.]);
    }
}

// ---------------------------------------------------------------------------------------------
// stack, hstack, vstack

#[test]
fn stack_and_friends() {
    let a = f64t(&[0., 1., 2., 3., 4., 5.], &[2, 3]);
    let b = a.neg().unwrap().to_dtype(ScalarType::Int).unwrap();
    for dim in -3i64..3 {
        let r = ops::stack::call(&[a.clone(), b.clone()], dim).unwrap();
        let d = dim.rem_euclid(3) as usize;
        let mut want_sizes = vec![2, 3];
        want_sizes.insert(d, 2);
        assert_eq!(r.sizes().to_vec(), want_sizes);
        assert_eq!(r.dtype(), ScalarType::Double);
        let want: Vec<f64> = (0..12)
            .map(|lin| {
                let c = unravel(lin, &want_sizes);
                let mut rest = c.clone();
                rest.remove(d);
                let x = [0., 1., 2., 3., 4., 5.][ravel(&rest, &[2, 3])];
                if c[d] == 0 {
                    x
                } else {
                    -x
                }
            })
            .collect();
        assert_eq!(f64v(&r), want, "dim {dim}");
        // out=, resized with the warning, and an out whose strides cannot be viewed
        let out = Tensor::zeros(&[5], ScalarType::Double).unwrap();
        let (res, w) = capture_warnings(|| {
            ops::stack_out::call(&[a.clone(), b.clone()], dim, &out).map(|_| ())
        });
        res.unwrap();
        assert_eq!(w.len(), 1);
        assert_eq!(f64v(&out), want);
        let out = Tensor::zeros(
            &[want_sizes[2], want_sizes[1], want_sizes[0]],
            ScalarType::Double,
        )
        .unwrap()
        .permute(&[2, 1, 0])
        .unwrap();
        ops::stack_out::call(&[a.clone(), b.clone()], dim, &out).unwrap();
        assert_eq!(f64v(&out), want);
    }
    let s = Tensor::scalar_tensor(3.0, ScalarType::Float).unwrap();
    let r = ops::stack::call(&[s.clone(), s.clone()], -1).unwrap();
    assert_eq!(r.sizes().to_vec(), vec![2]);
    let (k, m) = err(ops::stack::call(std::slice::from_ref(&s), 1));
    assert_eq!(k, ErrorKind::Index);
    assert_eq!(
        m,
        "Dimension out of range (expected to be in range of [-1, 0], but got 1)"
    );
    let (_, m) = err(ops::stack::call(&[], 0));
    assert_eq!(m, "stack expects a non-empty TensorList");
    let c = Tensor::zeros(&[3, 2], ScalarType::Float).unwrap();
    for dim in [0, 2] {
        let (_, m) = err(ops::stack::call(&[a.clone(), a.clone(), c.clone()], dim));
        assert_eq!(
            m,
            "stack expects each tensor to be equal size, but got [2, 3] at entry 0 and [3, 2] at entry 2"
        );
    }
    let out = Tensor::zeros(&[2, 2, 3], ScalarType::Long).unwrap();
    let (_, m) = err(ops::stack_out::call(&[a.clone(), a.clone()], 0, &out));
    assert_eq!(
        m,
        "torch.cat(): input types can't be cast to the desired output type Long"
    );

    // hstack: 1-D along dim 0, else dim 1; 0-dim as [1]
    let r = ops::hstack::call(&[a.clone(), b.clone()]).unwrap();
    assert_eq!(r.sizes().to_vec(), vec![2, 6]);
    let one = Tensor::arange(2, ScalarType::Long).unwrap();
    let z = Tensor::scalar_tensor(7, ScalarType::Long).unwrap();
    let r = ops::hstack::call(&[z.clone(), one.clone()]).unwrap();
    assert_eq!(f64v(&r), vec![7., 0., 1.]);
    let out = Tensor::zeros(&[0], ScalarType::Long).unwrap();
    ops::hstack_out::call(&[one.clone(), z.clone()], &out).unwrap();
    assert_eq!(f64v(&out), vec![0., 1., 7.]);
    // vstack: 0-dim as [1, 1], 1-D as a row
    let r = ops::vstack::call(&[z.clone(), z.clone()]).unwrap();
    assert_eq!(r.sizes().to_vec(), vec![2, 1]);
    let r = ops::vstack::call(&[one.clone(), one.clone()]).unwrap();
    assert_eq!(f64v(&r), vec![0., 1., 0., 1.]);
    let r = ops::row_stack::call(&[a.clone(), a.clone()]).unwrap();
    assert_eq!(r.sizes().to_vec(), vec![4, 3]);
    let out = Tensor::zeros(&[0], ScalarType::Double).unwrap();
    ops::vstack_out::call(&[a.clone(), a.clone()], &out).unwrap();
    assert_eq!(out.sizes().to_vec(), vec![4, 3]);
    let (_, m) = err(ops::vstack::call(&[]));
    assert_eq!(m, "vstack expects a non-empty TensorList");
    let (_, m) = err(ops::hstack::call(&[]));
    assert_eq!(m, "hstack expects a non-empty TensorList");
    let r = ops::concatenate::call(&[a.clone(), a.clone()], 1).unwrap();
    assert_eq!(r.sizes().to_vec(), vec![2, 6]);
    let r = ops::concat::call(&[a.clone(), a.clone()], 0).unwrap();
    assert_eq!(r.sizes().to_vec(), vec![4, 3]);
}

// ---------------------------------------------------------------------------------------------
// flip, roll, repeat, repeat_interleave, tril, triu

#[test]
fn flip_roll_repeat_edges_and_errors() {
    let a = f64t(&[0., 1., 2., 3., 4., 5.], &[2, 3]);
    let (_, m) = err(ops::flip::call(&a, &[0, -2]));
    assert_eq!(m, "dim 0 appears multiple times in the list of dims");
    let (k, _) = err(ops::flip::call(&a, &[2]));
    assert_eq!(k, ErrorKind::Index);
    let s = Tensor::scalar_tensor(3.0, ScalarType::Float).unwrap();
    assert_eq!(f64v(&ops::flip::call(&s, &[-1]).unwrap()), vec![3.0]);
    // flip keeps a dense (transposed) layout, makes others contiguous
    let t = a.t().unwrap();
    let f = ops::flip::call(&t, &[0]).unwrap();
    assert_eq!(f.strides().to_vec(), vec![1, 3]);
    assert_eq!(f64v(&f), vec![2., 5., 1., 4., 0., 3.]);
    let e = Tensor::arange(3, ScalarType::Float)
        .unwrap()
        .expand(&[2, 3])
        .unwrap();
    let f = ops::flip::call(&e, &[0, 1]).unwrap();
    assert!(f.is_contiguous());
    assert_eq!(f64v(&f), vec![2., 1., 0., 2., 1., 0.]);
    // flip.out (autogen): resized with the warning, the dtype must match
    let out = Tensor::zeros(&[1], ScalarType::Double).unwrap();
    let (r, w) = capture_warnings(|| ops::flip_out::call(&a, &[0], &out).map(|_| ()));
    r.unwrap();
    assert_eq!(w.len(), 1);
    assert_eq!(f64v(&out), vec![3., 4., 5., 0., 1., 2.]);
    let out = Tensor::zeros(&[2, 3], ScalarType::Float).unwrap();
    assert!(ops::flip_out::call(&a, &[0], &out).is_err());

    let (_, m) = err(ops::roll::call(&a, &[1, 1], &[0]));
    assert_eq!(m, "shifts and dimensions must align. shifts: 2, dims:1");
    let (_, m) = err(ops::roll::call(&a, &[], &[]));
    assert_eq!(m, "`shifts` required");
    let (k, m) = err(ops::roll::call(&s, &[1], &[0]));
    assert_eq!(k, ErrorKind::Index);
    assert_eq!(m, "Dimension specified as 0 but tensor has no dimensions");
    assert_eq!(f64v(&ops::roll::call(&s, &[1], &[]).unwrap()), vec![3.0]);
    let r = ops::roll::call(&a, &[i64::MIN], &[1]).unwrap();
    assert_eq!(
        f64v(&r),
        roll_ref(&f64v(&a), &[2, 3], &[i64::MIN.rem_euclid(3)], &[1])
    );
    // an empty tensor rolls to a copy, whatever the dim
    let z = Tensor::zeros(&[0, 3], ScalarType::Float).unwrap();
    assert_eq!(
        ops::roll::call(&z, &[1], &[5]).unwrap().sizes().to_vec(),
        vec![0, 3]
    );

    let (_, m) = err(a.repeat(&[2]));
    assert_eq!(
        m,
        "Number of dimensions of repeat dims can not be smaller than number of dimensions of tensor"
    );
    let (_, m) = err(a.repeat(&[-1, 2]));
    assert_eq!(
        m,
        "Trying to create tensor with negative dimension -2: [-2, 6]"
    );
    assert!(a.repeat(&[i64::MAX, 2]).is_err());
    let r = s.repeat(&[]).unwrap();
    assert_eq!(r.sizes().to_vec(), Vec::<i64>::new());
    let out = Tensor::zeros(&[0], ScalarType::Double).unwrap();
    ops::repeat_out::call(&a, &[1, 2], &out).unwrap();
    assert_eq!(out.sizes().to_vec(), vec![2, 6]);
    assert_eq!(ops::tile::call(&s, &[2]).unwrap().sizes().to_vec(), vec![2]);
    assert_eq!(
        ops::tile::call(&a, &[]).unwrap().sizes().to_vec(),
        vec![2, 3]
    );
}

#[test]
fn repeat_interleave_index_form() {
    let long = |v: &[i64]| Tensor::from_slice(v, &[v.len() as i64]).unwrap();
    let r = ops::repeat_interleave_Tensor::call(&long(&[1, 2, 0, 3]), None).unwrap();
    assert_eq!(r.to_vec::<i64>().unwrap(), vec![0, 1, 1, 3, 3, 3]);
    for dt in [
        ScalarType::Byte,
        ScalarType::Char,
        ScalarType::Short,
        ScalarType::Int,
    ] {
        let r = ops::repeat_interleave_Tensor::call(&long(&[2, 1]).to_dtype(dt).unwrap(), Some(3))
            .unwrap();
        assert_eq!(r.dtype(), dt);
        assert_eq!(f64v(&r), vec![0., 0., 1.]);
    }
    let (k, m) = err(ops::repeat_interleave_Tensor::call(
        &long(&[1]).to_dtype(ScalarType::Float).unwrap(),
        None,
    ));
    assert_eq!(k, ErrorKind::NotImplemented);
    assert_eq!(m, "\"repeat_interleave_cpu\" not implemented for 'Float'");
    let (_, m) = err(ops::repeat_interleave_Tensor::call(&long(&[1, -2]), None));
    assert_eq!(m, "repeats can not be negative");
    let (_, m) = err(ops::repeat_interleave_Tensor::call(
        &long(&[3, -1]),
        Some(2),
    ));
    assert_eq!(m, "repeats can not be negative");
    let (_, m) = err(ops::repeat_interleave_Tensor::call(&long(&[1, 2]), Some(4)));
    assert_eq!(m, "allocated size does not match required size");
    let (_, m) = err(ops::repeat_interleave_Tensor::call(&long(&[1]), Some(-1)));
    assert_eq!(
        m,
        "Trying to create tensor with negative dimension -1: [-1]"
    );
    let two_d = Tensor::zeros(&[1, 2], ScalarType::Long).unwrap();
    let (_, m) = err(ops::repeat_interleave_Tensor::call(&two_d, None));
    assert_eq!(m, "repeat_interleave only accept 1D vector as repeat");
    let r = ops::repeat_interleave_Tensor::call(&long(&[]), None).unwrap();
    assert_eq!(r.sizes().to_vec(), vec![0]);
    // a strided tensor of counts
    let strided = long(&[1, 9, 2, 9]).as_strided(&[2], &[2]).unwrap();
    let r = ops::repeat_interleave_Tensor::call(&strided, None).unwrap();
    assert_eq!(r.to_vec::<i64>().unwrap(), vec![0, 1, 1]);
    let out = Tensor::zeros(&[0], ScalarType::Long).unwrap();
    ops::repeat_interleave_Tensor_out::call(&long(&[2]), None, &out).unwrap();
    assert_eq!(out.to_vec::<i64>().unwrap(), vec![0, 0]);

    let a = f64t(&[0., 1., 2., 3., 4., 5.], &[2, 3]);
    let (_, m) = err(ops::repeat_interleave_self_Tensor::call(
        &a,
        &long(&[1, 2, 3]),
        Some(0),
        None,
    ));
    assert_eq!(
        m,
        "repeats must have the same size as input along dim, but got repeats.size(0) = 3 and input.size(0) = 2"
    );
    let (_, m) = err(ops::repeat_interleave_self_Tensor::call(
        &a,
        &two_d,
        Some(0),
        None,
    ));
    assert_eq!(m, "repeats must be 0-dim or 1-dim tensor");
    let (_, m) = err(ops::repeat_interleave_self_int::call(&a, -1, None, None));
    assert_eq!(m, "Repeats must be non-negative");
    let (_, m) = err(ops::repeat_interleave_self_int::call(
        &a,
        2,
        Some(0),
        Some(5),
    ));
    assert_eq!(
        m,
        "repeat_interleave: Invalid output_size, expected 4 but got 5"
    );
    let s = Tensor::scalar_tensor(5.0, ScalarType::Float).unwrap();
    assert_eq!(
        f64v(&ops::repeat_interleave_self_int::call(&s, 3, None, None).unwrap()),
        vec![5.; 3]
    );
    let (k, _) = err(ops::repeat_interleave_self_int::call(&s, 3, Some(0), None));
    assert_eq!(k, ErrorKind::Index);
    let r = ops::repeat_interleave_self_Tensor::call(
        &a,
        &Tensor::scalar_tensor(2, ScalarType::Long).unwrap(),
        Some(1),
        None,
    )
    .unwrap();
    assert_eq!(
        f64v(&r),
        vec![0., 0., 1., 1., 2., 2., 3., 3., 4., 4., 5., 5.]
    );
}

#[test]
fn tril_triu_edges_and_errors() {
    let v: Vec<f64> = (0..12).map(f64::from).collect();
    let a = f64t(&v, &[3, 4]);
    for k in [i64::MIN, -10, -1, 0, 1, 10, i64::MAX] {
        assert_eq!(
            f64v(&a.tril_with(k).unwrap()),
            triangular_ref(&v, &[3, 4], k, false),
            "{k}"
        );
        assert_eq!(
            f64v(&a.triu_with(k).unwrap()),
            triangular_ref(&v, &[3, 4], k, true),
            "{k}"
        );
    }
    let one = Tensor::arange(3, ScalarType::Float).unwrap();
    let (_, m) = err(one.tril_with(0));
    assert_eq!(m, "tril: input tensor must have at least 2 dimensions");
    let (_, m) = err(one.triu_with_(0));
    assert_eq!(m, "triu: input tensor must have at least 2 dimensions");
    let out = Tensor::zeros(&[3, 4], ScalarType::Float).unwrap();
    let (_, m) = err(ops::tril_out::call(&a, 0, &out));
    assert_eq!(
        m,
        "Expected out tensor to have dtype double, but got float instead"
    );
    let out = Tensor::zeros(&[2], ScalarType::Double).unwrap();
    let (r, w) = capture_warnings(|| ops::triu_out::call(&a, 1, &out).map(|_| ()));
    r.unwrap();
    assert_eq!(w.len(), 1);
    assert_eq!(f64v(&out), triangular_ref(&v, &[3, 4], 1, true));
    // an out overlapping self: each row element by element, as torch's loop
    let s = f64t(&v, &[3, 4]);
    ops::tril_out::call(&s.narrow(1, 0, 2).unwrap(), 0, &s.narrow(1, 1, 2).unwrap()).unwrap();
    assert_eq!(
        f64v(&s.narrow(1, 1, 2).unwrap()),
        vec![0., 0., 4., 4., 8., 8.]
    );
    // in place on an expanded tensor writes through the shared rows, as torch does
    let e = Tensor::arange(3, ScalarType::Float)
        .unwrap()
        .expand(&[3, 3])
        .unwrap();
    e.tril_with_(0).unwrap();
    assert_eq!(f64v(&e), vec![0.; 9]);
    // a large batch splits over threads
    let old = get_num_threads();
    set_num_threads(2).unwrap();
    let n = 64 * 33 * 33;
    let big: Vec<f64> = (0..n).map(|i| (i % 97) as f64).collect();
    let b = f64t(&big, &[64, 33, 33]);
    assert_eq!(
        f64v(&b.triu_with(-3).unwrap()),
        triangular_ref(&big, &[64, 33, 33], -3, true)
    );
    set_num_threads(old as i64).unwrap();
}

// ---------------------------------------------------------------------------------------------
// meta

#[test]
fn meta_shapes_and_errors() {
    let f = ScalarType::Float;
    let x = meta(&[2, 3], f);
    let d = meta(&[2, 3], ScalarType::Double);
    let shape = |r: ratten_core::Result<Tensor>| {
        let t = r.unwrap();
        assert!(t.is_meta());
        (t.sizes().to_vec(), t.dtype())
    };
    assert_eq!(
        shape(ops::cat::call(&[x.clone(), d.clone()], 1)),
        (vec![2, 6], ScalarType::Double)
    );
    assert_eq!(
        shape(ops::cat::call(&[meta(&[0], f), x.clone()], -1)),
        (vec![2, 3], f)
    );
    let (_, m) = err(ops::cat::call(&[x.clone(), meta(&[3, 4], f)], 1));
    assert!(
        m.starts_with("Sizes of tensors must match except in dimension 1"),
        "{m}"
    );
    let out = meta(&[0], f);
    ops::cat_out::call(&[x.clone(), x.clone()], 0, &out).unwrap();
    assert_eq!(out.sizes().to_vec(), vec![4, 3]);
    assert_eq!(
        shape(ops::stack::call(&[x.clone(), x.clone()], 2)),
        (vec![2, 3, 2], f)
    );
    assert_eq!(
        shape(ops::hstack::call(&[x.clone(), x.clone()])),
        (vec![2, 6], f)
    );
    assert_eq!(
        shape(ops::vstack::call(&[x.clone(), x.clone()])),
        (vec![4, 3], f)
    );
    assert_eq!(shape(ops::flip::call(&x, &[0, 1])), (vec![2, 3], f));
    assert_eq!(shape(ops::roll::call(&x, &[1], &[])), (vec![2, 3], f));
    assert_eq!(
        shape(ops::roll::call(&x, &[1, 2], &[0, 1])),
        (vec![2, 3], f)
    );
    assert_eq!(shape(x.repeat(&[2, 1, 2])), (vec![2, 2, 6], f));
    let (_, m) = err(x.repeat(&[-1, 2]));
    assert_eq!(m, "Repeats cannot be negative, found -1 at index 0");
    assert_eq!(shape(ops::tile::call(&x, &[2])), (vec![2, 6], f));
    assert_eq!(shape(x.tril_with(1)), (vec![2, 3], f));
    assert_eq!(shape(x.triu_with_(1).cloned()), (vec![2, 3], f));
    let (_, m) = err(meta(&[3], f).tril_with(0));
    assert_eq!(m, "tril: input tensor must have at least 2 dimensions");
    let reps = meta(&[2], ScalarType::Long);
    let (_, m) = err(ops::repeat_interleave_Tensor::call(&reps, None));
    assert_eq!(
        m,
        "cannot repeat_interleave a meta tensor without output_size"
    );
    assert_eq!(
        shape(ops::repeat_interleave_Tensor::call(&reps, Some(5))),
        (vec![5], ScalarType::Long)
    );
    assert_eq!(
        shape(ops::repeat_interleave_self_int::call(&x, 2, Some(0), None)),
        (vec![4, 3], f)
    );
    assert_eq!(
        shape(ops::repeat_interleave_self_Tensor::call(
            &x,
            &reps,
            Some(0),
            Some(7)
        )),
        (vec![7, 3], f)
    );
}
