//! The gather / scatter / index / masked operators through the dispatcher: values against
//! simple reference loops (property tests over shapes, dims, indices, strided and transposed
//! inputs, duplicate indices), PyTorch's error texts, out-of-range indices (an error, and
//! nothing written), every dtype, and shapes on the meta device.

#![allow(clippy::needless_range_loop)]

use crate::common::values as f64v;
use crate::common::{err, numel, ravel, unravel};
use proptest::prelude::*;
use ratten_aten::tensor_iterator::parallel::{get_num_threads, set_num_threads};
use ratten_aten::{operators as ops, Tensor};
use ratten_core::{Device, ErrorKind, Scalar, ScalarType};

fn long(v: &[i64], sizes: &[i64]) -> Tensor {
    Tensor::from_slice(v, sizes).unwrap()
}

fn f64t(v: &[f64], sizes: &[i64]) -> Tensor {
    Tensor::from_slice(v, sizes).unwrap()
}

/// A tensor with these logical values, made strided (transposed storage) when `strided`.
fn make(vals: &[f64], sizes: &[i64], strided: bool) -> Tensor {
    if !strided || sizes.len() < 2 {
        return f64t(vals, sizes);
    }
    let nd = sizes.len();
    let mut ts = sizes.to_vec();
    ts.swap(0, nd - 1);
    // base holds the transposed layout: base[c'] = vals[c] with c' = c swapped.
    let mut base = vec![0.0; vals.len()];
    for (lin, v) in vals.iter().enumerate() {
        let mut c = unravel(lin, sizes);
        c.swap(0, nd - 1);
        base[ravel(&c, &ts)] = *v;
    }
    f64t(&base, &ts).transpose(0, nd as i64 - 1).unwrap()
}

/// A shape of 1-3 dims with sizes 1-4, a dim of it, and a smaller-or-equal index shape
/// (any size 1-4 along `dim`), with index values for `dim`.
fn case() -> impl Strategy<Value = (Vec<i64>, usize, Vec<i64>, Vec<i64>, bool)> {
    prop::collection::vec(1i64..5, 1..4)
        .prop_flat_map(|s| {
            let nd = s.len();
            (Just(s), 0..nd, any::<bool>())
        })
        .prop_flat_map(|(s, dim, strided)| {
            let ishape: Vec<BoxedStrategy<i64>> = s
                .iter()
                .enumerate()
                .map(|(d, &n)| {
                    if d == dim {
                        (1i64..5).boxed()
                    } else {
                        (1..=n).boxed()
                    }
                })
                .collect();
            (Just(s), Just(dim), ishape, Just(strided))
        })
        .prop_flat_map(|(s, dim, ishape, strided)| {
            let n = numel(&ishape);
            let hi = s[dim];
            (
                Just(s),
                Just(dim),
                Just(ishape),
                prop::collection::vec(0..hi, n),
                Just(strided),
            )
        })
}

fn values(n: usize, seed: f64) -> Vec<f64> {
    (0..n)
        .map(|i| ((i as f64 * 7.3 + seed) % 11.0).round() - 5.0)
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    #[test]
    fn gather_matches_reference((s, dim, ishape, iv, strided) in case()) {
        let xv = values(numel(&s), 1.0);
        let x = make(&xv, &s, strided);
        let idx = long(&iv, &ishape);
        let r = ops::gather::call(&x, dim as i64, &idx, false).unwrap();
        prop_assert_eq!(r.sizes().to_vec(), ishape.clone());
        let mut want = vec![0.0; iv.len()];
        for (lin, w) in want.iter_mut().enumerate() {
            let mut c = unravel(lin, &ishape);
            c[dim] = iv[lin];
            *w = xv[ravel(&c, &s)];
        }
        prop_assert_eq!(f64v(&r), want);
    }

    #[test]
    fn scatter_family_matches_reference((s, dim, ishape, iv, strided) in case(), inc in any::<bool>()) {
        let sv = values(numel(&s), 2.0);
        let srcv = values(numel(&ishape), 5.0);
        let src = make(&srcv, &ishape, strided);
        let idx = long(&iv, &ishape);
        // scatter_add, scatter (last write along dim wins), scatter_reduce amax / prod / mean.
        let mut add = sv.clone();
        let mut put = sv.clone();
        let mut amax = sv.clone();
        let mut prod = sv.clone();
        let mut sum = sv.clone();
        let mut cnt = vec![if inc { 1.0 } else { 0.0 }; sv.len()];
        let mut touched = vec![false; sv.len()];
        for lin in 0..iv.len() {
            let mut c = unravel(lin, &ishape);
            c[dim] = iv[lin];
            let k = ravel(&c, &s);
            if !inc && !touched[k] {
                amax[k] = f64::NEG_INFINITY;
                prod[k] = 1.0;
                sum[k] = 0.0;
            }
            touched[k] = true;
            add[k] += srcv[lin];
            amax[k] = amax[k].max(srcv[lin]);
            prod[k] *= srcv[lin];
            sum[k] += srcv[lin];
            cnt[k] += 1.0;
        }
        // Along dim, index order is row-major order restricted to one line: the reference
        // writes in row-major order, so the last write of each line wins there too.
        for lin in 0..iv.len() {
            let mut c = unravel(lin, &ishape);
            c[dim] = iv[lin];
            put[ravel(&c, &s)] = srcv[lin];
        }
        let mean: Vec<f64> = sum.iter().zip(&cnt).map(|(a, &n)| if n == 0.0 { *a } else { a / n }).collect();
        let x = make(&sv, &s, strided);
        let d = dim as i64;
        prop_assert_eq!(f64v(&ops::scatter_add::call(&x, d, &idx, &src).unwrap()), add.clone());
        prop_assert_eq!(f64v(&ops::scatter_src::call(&x, d, &idx, &src).unwrap()), put);
        let r = ops::scatter_reduce_two::call(&x, d, &idx, &src, "amax", inc).unwrap();
        prop_assert_eq!(f64v(&r), amax);
        let r = ops::scatter_reduce_two::call(&x, d, &idx, &src, "prod", inc).unwrap();
        prop_assert_eq!(f64v(&r), prod);
        let r = ops::scatter_reduce_two::call(&x, d, &idx, &src, "mean", inc).unwrap();
        let got = f64v(&r);
        for (g, w) in got.iter().zip(&mean) {
            prop_assert!((g - w).abs() < 1e-12, "{} vs {}", g, w);
        }
        // In place, on the strided tensor itself.
        let y = make(&sv, &s, strided);
        ops::scatter_add_::call(&y, d, &idx, &src).unwrap();
        prop_assert_eq!(f64v(&y), add);
    }

    #[test]
    fn index_select_add_copy_match_reference(
        (s, dim, _ishape, _iv, strided) in case(),
        raw in prop::collection::vec(0i64..64, 0..6),
    ) {
        let n = s[dim];
        let iv: Vec<i64> = raw.iter().map(|v| v % n).collect();
        let k = iv.len() as i64;
        let xv = values(numel(&s), 3.0);
        let x = make(&xv, &s, strided);
        let idx = long(&iv, &[k]);
        let d = dim as i64;
        // index_select
        let mut os = s.clone();
        os[dim] = k;
        let r = ops::index_select::call(&x, d, &idx).unwrap();
        prop_assert_eq!(r.sizes().to_vec(), os.clone());
        let mut want = vec![0.0; numel(&os)];
        for (lin, w) in want.iter_mut().enumerate() {
            let mut c = unravel(lin, &os);
            c[dim] = iv[c[dim] as usize];
            *w = xv[ravel(&c, &s)];
        }
        prop_assert_eq!(f64v(&r), want);
        // index_add (duplicates accumulate) with alpha, index_copy (unique indices)
        let srcv = values(numel(&os), 4.0);
        let src = make(&srcv, &os, strided);
        let mut add = xv.clone();
        for lin in 0..srcv.len() {
            let mut c = unravel(lin, &os);
            c[dim] = iv[c[dim] as usize];
            add[ravel(&c, &s)] += 2.0 * srcv[lin];
        }
        let r = ops::index_add::call(&x, d, &idx, &src, &Scalar::Int(2)).unwrap();
        prop_assert_eq!(f64v(&r), add);
        let mut seen = std::collections::HashSet::new();
        if iv.iter().all(|v| seen.insert(*v)) {
            let mut cp = xv.clone();
            for lin in 0..srcv.len() {
                let mut c = unravel(lin, &os);
                c[dim] = iv[c[dim] as usize];
                cp[ravel(&c, &s)] = srcv[lin];
            }
            prop_assert_eq!(f64v(&ops::index_copy::call(&x, d, &idx, &src).unwrap()), cp);
        }
        // index_fill with negative indices
        let neg: Vec<i64> = iv.iter().map(|v| v - n).collect();
        let mut fill = xv.clone();
        for (lin, f) in fill.iter_mut().enumerate() {
            if iv.contains(&unravel(lin, &s)[dim]) {
                *f = 9.0;
            }
        }
        let r = ops::index_fill_int_Scalar::call(&x, d, &long(&neg, &[k]), &Scalar::Int(9)).unwrap();
        prop_assert_eq!(f64v(&r), fill);
    }

    #[test]
    fn take_masked_and_index_match_reference(
        (s, _dim, _ishape, _iv, strided) in case(),
        picks in prop::collection::vec(-64i64..64, 0..8),
        bits in prop::collection::vec(any::<bool>(), 64),
    ) {
        let n = numel(&s) as i64;
        let xv = values(n as usize, 6.0);
        let x = make(&xv, &s, strided);
        let iv: Vec<i64> = picks.iter().map(|p| p.rem_euclid(2 * n) - n).collect();
        let k = iv.len() as i64;
        let r = ops::take::call(&x, &long(&iv, &[k])).unwrap();
        let want: Vec<f64> = iv.iter().map(|&v| xv[v.rem_euclid(n) as usize]).collect();
        prop_assert_eq!(f64v(&r), want);
        let mv = &bits[..n as usize];
        let mask = Tensor::from_slice(mv, &s).unwrap();
        let sel: Vec<f64> = xv.iter().zip(mv).filter(|(_, &m)| m).map(|(v, _)| *v).collect();
        prop_assert_eq!(f64v(&ops::masked_select::call(&x, &mask).unwrap()), sel.clone());
        // x[mask] is the same selection
        prop_assert_eq!(f64v(&ops::index_Tensor::call(&x, &[Some(mask.clone())]).unwrap()), sel);
        let filled: Vec<f64> = xv.iter().zip(mv).map(|(v, &m)| if m { -7.0 } else { *v }).collect();
        prop_assert_eq!(f64v(&ops::masked_fill_Scalar::call(&x, &mask, &Scalar::Int(-7)).unwrap()), filled);
        let src: Vec<f64> = (0..n).map(|i| 100.0 + i as f64).collect();
        let mut scat = xv.clone();
        let mut j = 0;
        for (v, &m) in scat.iter_mut().zip(mv) {
            if m {
                *v = src[j];
                j += 1;
            }
        }
        let r = ops::masked_scatter::call(&x, &mask, &f64t(&src, &[n])).unwrap();
        prop_assert_eq!(f64v(&r), scat);
        // nonzero lists the mask's true positions
        let nz = ops::nonzero::call(&mask).unwrap();
        let rows: Vec<i64> = nz.contiguous().unwrap().to_vec::<i64>().unwrap();
        let want: Vec<i64> = (0..n as usize).filter(|&l| mv[l]).flat_map(|l| unravel(l, &s)).collect();
        prop_assert_eq!(rows, want);
    }
}

#[test]
fn advanced_index_places_broadcast_dims_like_torch() {
    let x = Tensor::from_vec((0..24i64).collect(), &[2, 3, 4]).unwrap();
    let i = |v: &[i64]| Some(long(v, &[v.len() as i64]));
    // x[:, [0, 2]] -> [2, 2, 4]
    let r = ops::index_Tensor::call(&x, &[None, i(&[0, 2])]).unwrap();
    assert_eq!(r.sizes().to_vec(), vec![2, 2, 4]);
    assert_eq!(r.to_vec::<i64>().unwrap()[..8], [0, 1, 2, 3, 8, 9, 10, 11]);
    // x[[0, 1], :, [1, 3]] -> separated: [2, 3]
    let r = ops::index_Tensor::call(&x, &[i(&[0, 1]), None, i(&[1, 3])]).unwrap();
    assert_eq!(r.sizes().to_vec(), vec![2, 3]);
    assert_eq!(r.to_vec::<i64>().unwrap(), vec![1, 5, 9, 15, 19, 23]);
    // broadcast index tensors [[0], [1]] with [0, 2] -> [2, 2, 4]; negative wraps
    let col = long(&[0, 1], &[2, 1]);
    let r = ops::index_Tensor::call(&x, &[Some(col), i(&[0, -1])]).unwrap();
    assert_eq!(r.sizes().to_vec(), vec![2, 2, 4]);
    assert_eq!(r.to_vec::<i64>().unwrap()[4..8], [8, 9, 10, 11]);
    // on a transposed view, int32 indices
    let t = x.select(0, 1).unwrap().t().unwrap(); // [4, 3]
    let i32s = Tensor::from_slice(&[3i32, 0], &[2]).unwrap();
    let r = ops::index_Tensor::call(&t, &[Some(i32s), i(&[2, 1])]).unwrap();
    assert_eq!(r.to_vec::<i64>().unwrap(), vec![23, 16]);
    // a 2-d mask over the first two dims
    let m = Tensor::from_slice(&[true, false, false, false, false, true], &[2, 3]).unwrap();
    let r = ops::index_Tensor::call(&x, &[Some(m)]).unwrap();
    assert_eq!(r.sizes().to_vec(), vec![2, 4]);
    assert_eq!(r.to_vec::<i64>().unwrap(), vec![0, 1, 2, 3, 20, 21, 22, 23]);
    // index.Tensor_out
    let out = Tensor::empty(&[0], ScalarType::Long).unwrap();
    ops::index_Tensor_out::call(&x, &[i(&[1])], &out).unwrap();
    assert_eq!(out.sizes().to_vec(), vec![1, 3, 4]);
}

#[test]
fn index_put_with_and_without_accumulate() {
    let x = Tensor::zeros(&[3, 2], ScalarType::Float).unwrap();
    let i = long(&[0, 2, 0], &[3]);
    let v = Tensor::from_slice(&[1.0f32, 2.0], &[2]).unwrap();
    ops::index_put_::call(&x, &[Some(i.clone())], &v, true).unwrap();
    assert_eq!(
        x.to_vec::<f32>().unwrap(),
        vec![2.0, 4.0, 0.0, 0.0, 1.0, 2.0]
    );
    let r = ops::index_put::call(&x, &[Some(i)], &v, false).unwrap();
    assert_eq!(
        r.to_vec::<f32>().unwrap(),
        vec![1.0, 2.0, 0.0, 0.0, 1.0, 2.0]
    );
    assert_eq!(x.to_vec::<f32>().unwrap()[0], 2.0);
    // half accumulates through f32, duplicates add up
    let h = Tensor::zeros(&[2], ScalarType::Half).unwrap();
    let ones = Tensor::ones(&[4], ScalarType::Half).unwrap();
    ops::index_put_::call(&h, &[Some(long(&[1, 1, 1, 0], &[4]))], &ones, true).unwrap();
    assert_eq!(f64v(&h), vec![1.0, 3.0]);
    // a mask with a one-element value of another dtype goes through masked_fill_
    let m = Tensor::from_slice(&[false, true, true], &[3]).unwrap();
    ops::index_put_::call(
        &x,
        &[Some(m)],
        &Tensor::from_slice(&[5i64], &[]).unwrap(),
        false,
    )
    .unwrap();
    assert_eq!(
        x.to_vec::<f32>().unwrap(),
        vec![2.0, 4.0, 5.0, 5.0, 5.0, 5.0]
    );
    // errors: nothing written
    let before = x.to_vec::<f32>().unwrap();
    let (k, m) = err(ops::index_put_::call(
        &x,
        &[Some(long(&[1, 3], &[2]))],
        &v,
        false,
    ));
    assert_eq!(
        (k, m.as_str()),
        (
            ErrorKind::Index,
            "index 3 is out of bounds for dimension 0 with size 3"
        )
    );
    let d = Tensor::from_slice(&[1.0f64, 2.0], &[2]).unwrap();
    let (_, m) = err(ops::index_put_::call(
        &x,
        &[Some(long(&[1], &[1]))],
        &d,
        false,
    ));
    assert_eq!(m, "Index put requires the source and destination dtypes match, got Float for the destination and Double for the source.");
    let w = Tensor::ones(&[3], ScalarType::Float).unwrap();
    let (_, m) = err(ops::index_put_::call(
        &x,
        &[Some(long(&[1], &[1]))],
        &w,
        false,
    ));
    assert_eq!(m, "shape mismatch: value tensor of shape [3] cannot be broadcast to indexing result of shape [1, 2]");
    assert_eq!(x.to_vec::<f32>().unwrap(), before);
}

#[test]
fn every_dtype_is_moved_by_the_copy_kernels() {
    for dt in [
        ScalarType::Bool,
        ScalarType::Byte,
        ScalarType::Char,
        ScalarType::Short,
        ScalarType::Int,
        ScalarType::Long,
        ScalarType::Half,
        ScalarType::BFloat16,
        ScalarType::Float,
        ScalarType::Double,
        ScalarType::ComplexFloat,
        ScalarType::ComplexDouble,
    ] {
        let x = Tensor::arange(12, ScalarType::Long)
            .unwrap()
            .to_dtype(dt)
            .unwrap()
            .view(&[3, 4])
            .unwrap();
        let want = f64v(&x);
        let idx = long(&[2, 0], &[2]);
        let r = ops::index_select::call(&x, 1, &idx).unwrap();
        assert_eq!(r.dtype(), dt);
        assert_eq!(
            f64v(&r),
            vec![want[2], want[0], want[6], want[4], want[10], want[8]]
        );
        let g = ops::gather::call(&x, 0, &long(&[2, 1], &[1, 2]), false).unwrap();
        assert_eq!(f64v(&g), vec![want[8], want[5]]);
        let s = ops::scatter_add::call(&x, 1, &long(&[0, 0], &[1, 2]), &x).unwrap();
        assert_eq!(s.dtype(), dt);
        let r = ops::index_Tensor::call(&x, &[Some(idx.clone())]).unwrap();
        assert_eq!(f64v(&r)[..4], want[8..12]);
        let r = ops::take::call(&x, &long(&[-1], &[1])).unwrap();
        assert_eq!(f64v(&r), vec![want[11]]);
    }
    // complex scatter_add; amax refuses complex as torch's CPU kernel
    let c = Tensor::ones(&[3], ScalarType::ComplexFloat).unwrap();
    let r =
        ops::scatter_add::call(&c, 0, &long(&[0, 0], &[2]), &c.narrow(0, 0, 2).unwrap()).unwrap();
    assert_eq!(f64v(&r), vec![3.0, 1.0, 1.0]);
    let (k, m) = err(ops::scatter_reduce_two::call(
        &c,
        0,
        &long(&[0], &[1]),
        &c,
        "amax",
        true,
    ));
    assert_eq!(k, ErrorKind::NotImplemented);
    assert_eq!(
        m,
        "\"scatter_gather_tensor_cpu_reduce_amax\" not implemented for 'ComplexFloat'"
    );
    // integer mean floors; bool sum is a logical or
    let i = Tensor::from_slice(&[0i8, 0, 0], &[3]).unwrap();
    let src = Tensor::from_slice(&[5i8, 0], &[2]).unwrap();
    let r =
        ops::scatter_reduce_two::call(&i, 0, &long(&[0, 0], &[2]), &src, "mean", false).unwrap();
    assert_eq!(f64v(&r), vec![2.0, 0.0, 0.0]);
    let r = ops::scatter_reduce_two::call(&i, 0, &long(&[0, 0], &[2]), &src, "mean", true).unwrap();
    assert_eq!(f64v(&r), vec![1.0, 0.0, 0.0]);
    let b = Tensor::from_slice(&[false, false], &[2]).unwrap();
    let bs = Tensor::from_slice(&[true, true], &[2]).unwrap();
    let r = ops::scatter_add::call(&b, 0, &long(&[1, 1], &[2]), &bs).unwrap();
    assert_eq!(r.to_vec::<bool>().unwrap(), vec![false, true]);
    // NaN wins amax
    let f = Tensor::from_slice(&[1.0f32, 2.0], &[2]).unwrap();
    let ns = Tensor::from_slice(&[f32::NAN, 5.0], &[2]).unwrap();
    let r = ops::scatter_reduce_two::call(&f, 0, &long(&[0, 0], &[2]), &ns, "amax", true).unwrap();
    assert!(f64v(&r)[0].is_nan());
    // scatter(reduce=) and its value forms
    let r = ops::scatter_value_reduce::call(
        &f,
        0,
        &long(&[1, 1], &[2]),
        &Scalar::Double(3.0),
        "multiply",
    )
    .unwrap();
    assert_eq!(f64v(&r), vec![1.0, 18.0]);
    let r = ops::scatter_reduce::call(&f, 0, &long(&[0, 0], &[2]), &f, "add").unwrap();
    assert_eq!(f64v(&r), vec![4.0, 2.0]);
    let r = ops::scatter_value::call(&f, 0, &long(&[1], &[1]), &Scalar::Double(-1.0)).unwrap();
    assert_eq!(f64v(&r), vec![1.0, -1.0]);
}

#[test]
fn out_of_range_indices_error_and_write_nothing() {
    let x = Tensor::from_vec((0..12).map(|v| v as f32).collect(), &[3, 4]).unwrap();
    let before = x.to_vec::<f32>().unwrap();
    let cases: Vec<(ratten_core::Result<Tensor>, ErrorKind, &str)> = vec![
        (
            ops::index_select::call(&x, 0, &long(&[0, 5], &[2])),
            ErrorKind::Index,
            "index out of range in self",
        ),
        (
            ops::index_select::call(&x, 0, &long(&[-1], &[1])),
            ErrorKind::Index,
            "index out of range in self",
        ),
        (
            ops::index_select::call(&x, 1, &long(&[4], &[1])),
            ErrorKind::Runtime,
            "INDICES element is out of DATA bounds, id=4 axis_dim=4",
        ),
        (
            ops::gather::call(&x, 1, &long(&[4], &[1, 1]), false),
            ErrorKind::Runtime,
            "index 4 is out of bounds for dimension 1 with size 4",
        ),
        (
            ops::gather::call(&x, 1, &long(&[-1], &[1, 1]), false),
            ErrorKind::Runtime,
            "index -1 is out of bounds for dimension 1 with size 4",
        ),
        (
            ops::take::call(&x, &long(&[12], &[1])),
            ErrorKind::Index,
            "out of range: tried to access index 12 on a tensor of 12 elements.",
        ),
        (
            ops::take::call(&x, &long(&[-13], &[1])),
            ErrorKind::Index,
            "out of range: tried to access index -13 on a tensor of 12 elements.",
        ),
        (
            ops::index_Tensor::call(&x, &[None, Some(long(&[4], &[1]))]),
            ErrorKind::Index,
            "index 4 is out of bounds for dimension 0 with size 4",
        ),
    ];
    for (r, k, m) in cases {
        assert_eq!(err(r), (k, m.to_string()));
    }
    // in place: an error leaves self as it was (indices are checked before any write)
    let bad = long(&[0, 1, 3], &[1, 3]);
    let src = Tensor::ones(&[1, 3], ScalarType::Float).unwrap();
    let (k, m) = err(ops::scatter__src::call(&x, 0, &bad, &src));
    assert_eq!(
        (k, m.as_str()),
        (
            ErrorKind::Runtime,
            "index 3 is out of bounds for dimension 0 with size 3"
        )
    );
    assert!(ops::scatter_add_::call(&x, 0, &bad, &src).is_err());
    assert!(ops::scatter__value::call(&x, 0, &bad, &Scalar::Int(1)).is_err());
    assert!(ops::scatter_reduce__two::call(&x, 0, &bad, &src, "sum", false).is_err());
    let (k, m) = err(ops::index_add_::call(
        &x,
        0,
        &long(&[1, 3], &[2]),
        &Tensor::ones(&[2, 4], ScalarType::Float).unwrap(),
        &Scalar::Int(1),
    ));
    assert_eq!(
        (k, m.as_str()),
        (
            ErrorKind::Runtime,
            "index 3 is out of bounds for dimension 0 with size 3"
        )
    );
    let (k, m) = err(ops::index_copy_::call(
        &x,
        0,
        &long(&[1, -1], &[2]),
        &Tensor::ones(&[2, 4], ScalarType::Float).unwrap(),
    ));
    assert_eq!(
        (k, m.as_str()),
        (
            ErrorKind::Index,
            "index_copy_(): index -1 is out of bounds for dimension 0 with size 3"
        )
    );
    let (k, m) = err(ops::index_fill__int_Scalar::call(
        &x,
        0,
        &long(&[1, 3], &[2]),
        &Scalar::Int(1),
    ));
    assert_eq!(
        (k, m.as_str()),
        (
            ErrorKind::Index,
            "index 3 is out of bounds for dimension 0 with size 3"
        )
    );
    assert_eq!(x.to_vec::<f32>().unwrap(), before);
    let v = Tensor::zeros(&[3], ScalarType::Float).unwrap();
    let (k, m) = err(ops::index_add::call(
        &v,
        0,
        &long(&[3], &[1]),
        &Tensor::ones(&[1], ScalarType::Float).unwrap(),
        &Scalar::Int(1),
    ));
    assert_eq!(
        (k, m.as_str()),
        (ErrorKind::Index, "index out of range in self")
    );
    let y = Tensor::zeros(&[2, 3, 4], ScalarType::Float).unwrap();
    let (_, m) = err(ops::index_copy::call(
        &y,
        1,
        &long(&[0], &[1]),
        &Tensor::ones(&[2, 1, 5], ScalarType::Float).unwrap(),
    ));
    assert_eq!(m, "index_copy_(): Source/destination tensor must have same slice shapes. Destination slice shape: 2 4 at dimension 1 and source slice shape: 2 5 at dimension 0.");
    // huge values never reach memory
    for v in [i64::MAX, i64::MIN, 1 << 40] {
        assert!(ops::gather::call(&x, 0, &long(&[v], &[1, 1]), false).is_err());
        assert!(ops::index_select::call(&x, 0, &long(&[v], &[1])).is_err());
        assert!(ops::take::call(&x, &long(&[v], &[1])).is_err());
        assert!(ops::index_Tensor::call(&x, &[Some(long(&[v], &[1]))]).is_err());
        assert!(ops::scatter_add::call(&x, 1, &long(&[v], &[1, 1]), &x).is_err());
    }
    assert_eq!(x.to_vec::<f32>().unwrap(), before);
}

#[test]
fn argument_errors_have_torch_texts() {
    let x = Tensor::from_vec((0..12).map(|v| v as f32).collect(), &[3, 4]).unwrap();
    let ones = |s: &[i64]| Tensor::ones(s, ScalarType::Float).unwrap();
    let zl = |s: &[i64]| Tensor::zeros(s, ScalarType::Long).unwrap();
    macro_rules! m {
        ($r:expr) => {{
            let r = $r;
            assert!(r.is_err(), "line {}", line!());
            err(r).1
        }};
    }
    assert_eq!(
        m!(ops::index_select::call(&x, 0, &long(&[0], &[1, 1]))),
        "index_select(): Index is supposed to be a vector"
    );
    assert_eq!(
        m!(ops::index_select::call(&x, 0, &f64t(&[0.0], &[1]))),
        "index_select(): Expected dtype int32 or int64 for index"
    );
    assert_eq!(
        m!(ops::gather::call(&x, 1, &long(&[0], &[1]), false)),
        "Index tensor must have the same number of dimensions as input tensor"
    );
    assert_eq!(m!(ops::gather::call(&x, 1, &zl(&[4, 5]), false)), "Size does not match at dimension 0 expected index [4, 5] to be no larger than self [3, 4] apart from dimension 1");
    assert_eq!(
        m!(ops::gather::call(&x, 1, &f64t(&[0.0], &[1, 1]), false)),
        "gather(): Expected dtype int32/int64 for index"
    );
    assert_eq!(
        m!(ops::scatter_add::call(&x, 1, &f64t(&[0.0], &[1, 1]), &x)),
        "scatter(): Expected dtype int32/int64 for index"
    );
    // int32 indices gather and scatter as int64 ones
    let i32s = Tensor::from_slice(&[3i32, 1], &[1, 2]).unwrap();
    assert_eq!(
        f64v(&ops::gather::call(&x, 1, &i32s, false).unwrap()),
        vec![3.0, 1.0]
    );
    let r = ops::scatter_value::call(&x, 1, &i32s, &Scalar::Int(-1)).unwrap();
    assert_eq!(f64v(&r)[..4], [0.0, -1.0, 2.0, -1.0]);
    assert_eq!(
        m!(ops::scatter_src::call(
            &x,
            1,
            &zl(&[1, 1]),
            &Tensor::ones(&[1, 1], ScalarType::Double).unwrap()
        )),
        "scatter(): Expected self.dtype to be equal to src.dtype"
    );
    assert_eq!(
        m!(ops::scatter_reduce::call(
            &x,
            1,
            &zl(&[1, 1]),
            &ones(&[1, 1]),
            "foo"
        )),
        "reduce argument must be either add or multiply."
    );
    assert_eq!(
        m!(ops::scatter_reduce_two::call(
            &x,
            1,
            &zl(&[1, 1]),
            &ones(&[1, 1]),
            "foo",
            true
        )),
        "reduce argument must be either sum, prod, mean, amax or amin, got foo"
    );
    assert_eq!(m!(ops::scatter_add::call(&x, 1, &zl(&[4, 4]), &ones(&[4, 4]))), "Expected index [4, 4] to be no larger than self [3, 4] apart from dimension 1 and to be no larger size than src [4, 4]");
    assert_eq!(
        m!(ops::scatter_value::call(
            &x,
            1,
            &zl(&[4, 4]),
            &Scalar::Int(1)
        )),
        "Expected index [4, 4] to be no larger than self [3, 4] apart from dimension 1"
    );
    assert_eq!(
        m!(ops::index_add::call(
            &x,
            0,
            &long(&[0], &[1]),
            &ones(&[2, 4]),
            &Scalar::Int(1)
        )),
        "index_add_(): Number of indices (1) should be equal to source.size(dim): (2), for dim: 0"
    );
    assert_eq!(m!(ops::index_add::call(&x, 0, &long(&[0], &[1]), &ones(&[1, 5]), &Scalar::Int(1))), "source tensor shape must match self tensor shape, excluding the specified dimension. Got self.shape = [3, 4] source.shape = [1, 5]");
    assert_eq!(m!(ops::index_add::call(&x, 0, &long(&[0], &[1, 1]), &ones(&[1, 4]), &Scalar::Int(1))), "index_add_(): Index is supposed to be a vector, but got dim: 2 with type: Long and size: [1, 1]");
    assert_eq!(
        m!(ops::index_add::call(
            &x,
            0,
            &long(&[0], &[1]),
            &Tensor::ones(&[1, 4], ScalarType::Double).unwrap(),
            &Scalar::Int(1)
        )),
        "index_add_(): self (Float) and source (Double) must have the same scalar type"
    );
    assert_eq!(
        m!(ops::index_copy::call(
            &x,
            0,
            &long(&[0, 1], &[2]),
            &ones(&[3, 4])
        )),
        "index_copy_(): Number of indices (2) should be equal to source.size(dim) (3)"
    );
    assert_eq!(
        m!(ops::index_copy::call(
            &x,
            0,
            &long(&[0], &[1, 1]),
            &ones(&[1, 4])
        )),
        "index_copy_(): Index should have dimension 1 or 0 (got 2)"
    );
    assert_eq!(m!(ops::index_copy::call(&x, 0, &long(&[0], &[1]), &ones(&[1, 5]))), "index_copy_(): Source/destination tensor must have same slice shapes. Destination slice shape: 4 at dimension 0 and source slice shape: 5 at dimension 0.");
    assert_eq!(
        m!(ops::index_copy::call(
            &x,
            0,
            &Tensor::zeros(&[1], ScalarType::Int).unwrap(),
            &ones(&[1, 4])
        )),
        "index_copy_(): Expected a long tensor for index, but got Int"
    );
    assert_eq!(
        m!(ops::index_fill_int_Scalar::call(
            &x,
            0,
            &Tensor::zeros(&[1], ScalarType::Int).unwrap(),
            &Scalar::Int(1)
        )),
        "index_fill_(): Expected dtype int64 for index."
    );
    assert_eq!(
        m!(ops::index_fill_int_Scalar::call(
            &x,
            0,
            &zl(&[1, 1]),
            &Scalar::Int(1)
        )),
        "Index has to be a vector/scalar"
    );
    assert_eq!(m!(ops::index_fill_int_Tensor::call(&x, 0, &zl(&[1]), &ones(&[2]))), "index_fill_ only supports a 0-dimensional value tensor, but got tensor with 1 dimension(s).");
    assert_eq!(
        m!(ops::take::call(
            &x,
            &Tensor::zeros(&[1], ScalarType::Int).unwrap()
        )),
        "take(): Expected a long tensor for index, but got Int"
    );
    assert_eq!(
        m!(ops::masked_fill_Scalar::call(
            &x,
            &ones(&[3, 4]),
            &Scalar::Int(1)
        )),
        "masked_fill_ only supports boolean masks, but got mask with dtype float"
    );
    let tm = Tensor::ones(&[3, 4], ScalarType::Bool).unwrap();
    assert_eq!(m!(ops::masked_fill_Tensor::call(&x, &tm, &ones(&[2]))), "masked_fill_ only supports a 0-dimensional value tensor, but got tensor with 1 dimension(s).");
    assert_eq!(
        m!(ops::masked_scatter::call(&x, &tm, &ones(&[2]))),
        "Number of elements of source < number of ones in mask"
    );
    assert_eq!(
        m!(ops::masked_scatter::call(
            &x,
            &tm,
            &Tensor::ones(&[12], ScalarType::Double).unwrap()
        )),
        "masked_scatter: expected self and source to have same dtypes but gotFloat and Double"
    );
    assert_eq!(
        m!(ops::masked_select::call(&x, &ones(&[3, 4]))),
        "masked_select: expected BoolTensor for mask"
    );
    let m1 = Tensor::from_slice(&[true], &[1, 1]).unwrap();
    assert_eq!(m!(ops::index_Tensor::call(&x, &[Some(m1)])), "The shape of the mask [1, 1] at index 0 does not match the shape of the indexed tensor [3, 4] at index 0");
    assert_eq!(
        m!(ops::index_Tensor::call(
            &x,
            &[Some(long(&[0, 1], &[2])), Some(long(&[0, 1, 2], &[3]))]
        )),
        "shape mismatch: indexing tensors could not be broadcast together with shapes [2], [3]"
    );
    assert_eq!(
        m!(ops::index_Tensor::call(&x, &[Some(f64t(&[0.0], &[1]))])),
        "tensors used as indices must be long, int, byte or bool tensors"
    );
    assert_eq!(
        m!(ops::index_Tensor::call(
            &x,
            &[None, None, Some(long(&[0], &[1]))]
        )),
        "too many indices for tensor of dimension 2 (got 3)"
    );
    let out = Tensor::empty(&[0], ScalarType::Int).unwrap();
    assert_eq!(
        err(ops::nonzero_out::call(&x, &out)).1,
        "nonzero: Expected out tensor to have scalar type Long but got scalar typeInt"
    );
    assert_eq!(
        err(ops::masked_select_out::call(&x, &tm, &out)).1,
        "masked_select(): self and result must have the same scalar type"
    );
}

#[test]
fn nonzero_argwhere_and_zero_dim_inputs() {
    let t = Tensor::from_slice(&[0.0f32, 1.0, 0.0, f32::NAN], &[2, 2]).unwrap();
    let nz = ops::nonzero::call(&t).unwrap();
    assert_eq!(nz.sizes().to_vec(), vec![2, 2]);
    assert_eq!(nz.strides().to_vec(), vec![1, 2]);
    assert_eq!(
        nz.contiguous().unwrap().to_vec::<i64>().unwrap(),
        vec![0, 1, 1, 1]
    );
    assert_eq!(
        ops::argwhere::call(&t).unwrap().sizes().to_vec(),
        vec![2, 2]
    );
    let s = Tensor::from_slice(&[5.0f32], &[]).unwrap();
    assert_eq!(ops::nonzero::call(&s).unwrap().sizes().to_vec(), vec![1, 0]);
    let r = ops::index_select::call(&s, 0, &long(&[0], &[1])).unwrap();
    assert_eq!(r.sizes().to_vec(), Vec::<i64>::new());
    let (k, _) = err(ops::index_select::call(&s, 0, &long(&[1], &[1])));
    assert_eq!(k, ErrorKind::Index);
    let r = ops::gather::call(&s, 0, &long(&[0], &[]), false).unwrap();
    assert_eq!(f64v(&r), vec![5.0]);
    let r = ops::scatter_value::call(&s, 0, &long(&[0], &[]), &Scalar::Int(2)).unwrap();
    assert_eq!(f64v(&r), vec![2.0]);
    let r = ops::index_fill_int_Scalar::call(&s, 0, &long(&[-1], &[1]), &Scalar::Int(3)).unwrap();
    assert_eq!(f64v(&r), vec![3.0]);
    // out= forms resize
    let out = Tensor::empty(&[7, 2], ScalarType::Long).unwrap();
    ops::nonzero_out::call(&t, &out).unwrap();
    assert_eq!(out.sizes().to_vec(), vec![2, 2]);
    let out = Tensor::empty(&[0], ScalarType::Float).unwrap();
    ops::gather_out::call(&t, 1, &long(&[1, 0], &[1, 2]), false, &out).unwrap();
    assert_eq!(f64v(&out), vec![1.0, 0.0]);
    ops::index_select_out::call(&t, 1, &long(&[1], &[1]), &out).unwrap();
    assert_eq!(out.sizes().to_vec(), vec![2, 1]);
    ops::take_out::call(&t, &long(&[1, 1, 1], &[3]), &out).unwrap();
    assert_eq!(f64v(&out), vec![1.0; 3]);
}

#[test]
fn meta_tensors_get_shapes_and_refuse_data_dependent_ops() {
    let meta = |s: &[i64], dt| Tensor::empty(s, (dt, Device::META)).unwrap();
    let x = meta(&[3, 4], ScalarType::Float);
    let il = meta(&[2], ScalarType::Long);
    let i2 = meta(&[2, 4], ScalarType::Long);
    let src = meta(&[2, 4], ScalarType::Float);
    let shape = |r: ratten_core::Result<Tensor>| {
        let t = r.unwrap();
        assert!(t.is_meta());
        t.sizes().to_vec()
    };
    assert_eq!(shape(ops::index_select::call(&x, 0, &il)), vec![2, 4]);
    assert_eq!(shape(ops::gather::call(&x, 0, &i2, false)), vec![2, 4]);
    assert_eq!(shape(ops::scatter_src::call(&x, 0, &i2, &src)), vec![3, 4]);
    assert_eq!(
        shape(ops::scatter_value::call(&x, 0, &i2, &Scalar::Int(1))),
        vec![3, 4]
    );
    assert_eq!(shape(ops::scatter_add::call(&x, 0, &i2, &src)), vec![3, 4]);
    assert_eq!(
        shape(ops::scatter_reduce_two::call(
            &x, 0, &i2, &src, "mean", false
        )),
        vec![3, 4]
    );
    assert_eq!(
        shape(ops::index_add::call(&x, 0, &il, &src, &Scalar::Int(1))),
        vec![3, 4]
    );
    assert_eq!(shape(ops::index_copy::call(&x, 0, &il, &src)), vec![3, 4]);
    assert_eq!(
        shape(ops::index_fill_int_Scalar::call(
            &x,
            0,
            &il,
            &Scalar::Int(1)
        )),
        vec![3, 4]
    );
    assert_eq!(shape(ops::take::call(&x, &i2)), vec![2, 4]);
    let mask = meta(&[3, 4], ScalarType::Bool);
    assert_eq!(
        shape(ops::masked_fill_Scalar::call(&x, &mask, &Scalar::Int(1))),
        vec![3, 4]
    );
    assert_eq!(
        shape(ops::masked_scatter::call(&x, &mask, &src)),
        vec![3, 4]
    );
    assert_eq!(
        shape(ops::index_Tensor::call(&x, &[None, Some(il.clone())])),
        vec![3, 2]
    );
    assert_eq!(
        shape(ops::index_put::call(
            &x,
            &[Some(il.clone())],
            &meta(&[4], ScalarType::Float),
            false
        )),
        vec![3, 4]
    );
    // errors without data
    let (_, m) = err(ops::gather::call(
        &x,
        0,
        &meta(&[4, 5], ScalarType::Long),
        false,
    ));
    assert!(m.starts_with("Size does not match at dimension 1"), "{m}");
    let (_, m) = err(ops::scatter_reduce_two::call(&x, 0, &i2, &src, "foo", true));
    assert!(m.starts_with("reduce argument must be"), "{m}");
    // data-dependent shapes refuse, with torch's texts
    let (k, m) = err(ops::nonzero::call(&x));
    assert_eq!(k, ErrorKind::NotImplemented);
    assert!(m.starts_with(
        "The register_meta function for torch.nonzero() raises unimplemented by default"
    ));
    assert_eq!(err(ops::argwhere::call(&x)).0, ErrorKind::NotImplemented);
    let (k, m) = err(ops::masked_select::call(&x, &mask));
    assert_eq!(k, ErrorKind::NotImplemented);
    assert!(m.starts_with("aten::masked_select: attempted to run this operator with Meta tensors"));
    assert_eq!(
        err(ops::index_Tensor::call(&x, &[Some(mask)])).0,
        ErrorKind::NotImplemented
    );
}

#[test]
fn large_gather_and_index_select_split_over_threads() {
    let old = get_num_threads();
    set_num_threads(2).unwrap();
    let rows = 50_000i64;
    let x = Tensor::arange(rows * 4, ScalarType::Long)
        .unwrap()
        .view(&[rows, 4])
        .unwrap();
    let iv: Vec<i64> = (0..rows).map(|i| (i * 7919) % rows).collect();
    let r = ops::index_select::call(&x, 0, &long(&iv, &[rows])).unwrap();
    let got = r.to_vec::<i64>().unwrap();
    assert!(iv
        .iter()
        .enumerate()
        .all(|(i, &k)| got[i * 4 + 3] == k * 4 + 3));
    let gi: Vec<i64> = (0..rows * 4).map(|i| (i * 31) % 4).collect();
    let g = ops::gather::call(&x, 1, &long(&gi, &[rows, 4]), false).unwrap();
    let got = g.to_vec::<i64>().unwrap();
    assert!((0..(rows * 4) as usize).all(|i| got[i] == (i as i64 / 4) * 4 + gi[i]));
    // an out-of-range index deep inside a parallel run
    let mut bad = gi.clone();
    bad[150_000] = 4;
    assert!(ops::gather::call(&x, 1, &long(&bad, &[rows, 4]), false).is_err());
    set_num_threads(old as i64).unwrap();
}
