//! The sorting family (sort, argsort, msort, topk, kthvalue): values and indices against a
//! simple reference (std's stable sort with torch's order: NaN greatest, -0.0 == 0.0), as
//! property tests over shapes, dims, descending, dtypes, NaN placement and strided or
//! transposed inputs; PyTorch's error texts; out= and aliased outputs; 0-dim, empty and meta
//! inputs; the radix, heap and parallel paths.

use crate::common::{assert_same, same, torch_cmp};
use crate::common::{msg, values as f64v};
use proptest::prelude::*;
use ratten_aten::tensor_iterator::parallel::{get_num_threads, set_num_threads};
use ratten_aten::{operators, Tensor};
use ratten_core::{Device, ScalarType};

const ALL_REAL: [ScalarType; 10] = [
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
];

fn i64v(t: &Tensor) -> Vec<i64> {
    assert_eq!(t.dtype(), ScalarType::Long);
    t.contiguous().unwrap().to_vec::<i64>().unwrap()
}

fn f32s(v: &[f32], sizes: &[i64]) -> Tensor {
    Tensor::from_slice(v, sizes).unwrap()
}

/// The row-major offsets of every line along `dim` of a tensor of `sizes`, lines in row-major
/// order of the other dims.
fn lines(sizes: &[i64], dim: usize) -> Vec<Vec<usize>> {
    let strides: Vec<usize> = (0..sizes.len())
        .map(|d| sizes[d + 1..].iter().product::<i64>() as usize)
        .collect();
    let others: Vec<usize> = (0..sizes.len()).filter(|&d| d != dim).collect();
    let count: usize = others.iter().map(|&d| sizes[d] as usize).product();
    (0..count)
        .map(|mut k| {
            let mut base = 0;
            for &d in others.iter().rev() {
                base += (k % sizes[d] as usize) * strides[d];
                k /= sizes[d] as usize;
            }
            (0..sizes[dim] as usize)
                .map(|i| base + i * strides[dim])
                .collect()
        })
        .collect()
}

/// The stable order of `xs` (ascending, or descending keeping equal elements in order).
fn stable_order(xs: &[f64], descending: bool) -> Vec<usize> {
    let mut idx: Vec<usize> = (0..xs.len()).collect();
    idx.sort_by(|&a, &b| {
        let c = torch_cmp(xs[a], xs[b]);
        if descending {
            c.reverse()
        } else {
            c
        }
    });
    idx
}

// ---------------------------------------------------------------------------------------------
// Examples

#[test]
fn sort_orders_nan_last_and_keeps_signed_zeros() {
    let nan = f32::NAN;
    let x = f32s(&[0.0, -0.0, 0.0, -0.0, nan, 1.0, nan, -f32::INFINITY], &[8]);
    let (v, i) = operators::sort::call(&x, -1, false).unwrap();
    assert_same(
        &f64v(&v),
        &[
            f64::NEG_INFINITY,
            0.0,
            -0.0,
            0.0,
            -0.0,
            1.0,
            f64::NAN,
            f64::NAN,
        ],
        "ascending",
    );
    assert_eq!(i64v(&i), vec![7, 0, 1, 2, 3, 5, 4, 6]);
    let (v, i) = operators::sort_stable::call(&x, Some(true), 0, true).unwrap();
    assert_same(
        &f64v(&v),
        &[
            f64::NAN,
            f64::NAN,
            1.0,
            0.0,
            -0.0,
            0.0,
            -0.0,
            f64::NEG_INFINITY,
        ],
        "descending",
    );
    assert_eq!(i64v(&i), vec![4, 6, 5, 0, 1, 2, 3, 7]);
    // stable=None sorts too.
    let (_, i) = operators::sort_stable::call(&x, None, 0, true).unwrap();
    assert_eq!(i64v(&i), vec![4, 6, 5, 0, 1, 2, 3, 7]);
    // Integers at their extremes, descending.
    let a = Tensor::from_slice(&[-128i8, 127, 0, -1], &[4]).unwrap();
    let (v, i) = operators::sort::call(&a, 0, true).unwrap();
    assert_eq!(v.to_vec::<i8>().unwrap(), vec![127, 0, -1, -128]);
    assert_eq!(i64v(&i), vec![1, 2, 3, 0]);
    let l = Tensor::from_slice(&[i64::MIN, i64::MAX, 0, -1], &[4]).unwrap();
    let (v, i) = operators::sort::call(&l, 0, false).unwrap();
    assert_eq!(v.to_vec::<i64>().unwrap(), vec![i64::MIN, -1, 0, i64::MAX]);
    assert_eq!(i64v(&i), vec![0, 3, 2, 1]);
    let b = Tensor::from_slice(&[true, false, true], &[3]).unwrap();
    let (v, i) = operators::sort::call(&b, 0, false).unwrap();
    assert_eq!(v.to_vec::<bool>().unwrap(), vec![false, true, true]);
    assert_eq!(i64v(&i), vec![1, 0, 2]);
}

#[test]
fn sort_along_dims_layouts_and_overloads() {
    let x = f32s(&[3., 1., 2., 0., 5., 4.], &[2, 3]);
    let (v, i) = operators::sort::call(&x, 0, false).unwrap();
    assert_eq!(f64v(&v), vec![0., 1., 2., 3., 5., 4.]);
    assert_eq!(i64v(&i), vec![1, 0, 0, 0, 1, 1]);
    // The outputs take a dense input's strides (a transposed view) ...
    let t = x.t().unwrap();
    let (v, i) = operators::sort::call(&t, 0, false).unwrap();
    assert_eq!(v.strides().as_slice(), &[1, 3]);
    assert_eq!(i.strides().as_slice(), &[1, 3]);
    assert_eq!(f64v(&v), vec![1., 0., 2., 4., 3., 5.]);
    // ... and dense strides in the input's order otherwise (every other column; expanded).
    let big = f32s(&(0..24).map(|v| v as f32).collect::<Vec<_>>(), &[4, 6]);
    let sliced = big.as_strided(&[4, 3], &[6, 2]).unwrap();
    let (v, _) = operators::sort::call(&sliced, 1, true).unwrap();
    assert_eq!(v.strides().as_slice(), &[3, 1]);
    assert_eq!(&f64v(&v)[..3], &[4., 2., 0.]);
    let e = f32s(&[3., 1.], &[2]).expand(&[3, 2]).unwrap();
    let (v, i) = operators::sort::call(&e, 0, false).unwrap();
    assert_eq!(v.strides().as_slice(), &[2, 1]);
    assert_eq!(f64v(&v), vec![3., 1., 3., 1., 3., 1.]);
    assert_eq!(i64v(&i), vec![0, 0, 1, 1, 2, 2]);
    // argsort, msort and the out= overloads.
    assert_eq!(
        i64v(&operators::argsort::call(&x, -1, true).unwrap()),
        vec![0, 2, 1, 1, 2, 0]
    );
    assert_eq!(
        i64v(&operators::argsort_stable::call(&x, true, 1, false).unwrap()),
        vec![1, 2, 0, 0, 2, 1]
    );
    let out = Tensor::empty(&[0], ScalarType::Long).unwrap();
    operators::argsort_stable_out::call(&x, true, 1, false, &out).unwrap();
    assert_eq!(i64v(&out), vec![1, 2, 0, 0, 2, 1]);
    assert_eq!(
        f64v(&operators::msort::call(&x).unwrap()),
        vec![0., 1., 2., 3., 5., 4.]
    );
    let mo = Tensor::empty(&[0], ScalarType::Float).unwrap();
    operators::msort_out::call(&x, &mo).unwrap();
    assert_eq!(f64v(&mo), vec![0., 1., 2., 3., 5., 4.]);
    let (vo, io) = (
        Tensor::empty(&[0], ScalarType::Float).unwrap(),
        Tensor::empty(&[0], ScalarType::Long).unwrap(),
    );
    operators::sort_values::call(&x, 1, false, &vo, &io).unwrap();
    assert_eq!(f64v(&vo), vec![1., 2., 3., 0., 4., 5.]);
    assert_eq!(i64v(&io), vec![1, 2, 0, 0, 2, 1]);
    // A given output keeps its strides.
    let vo = Tensor::empty(&[3, 2], ScalarType::Float)
        .unwrap()
        .t()
        .unwrap();
    let io = Tensor::empty(&[3, 2], ScalarType::Long)
        .unwrap()
        .t()
        .unwrap();
    operators::sort_values_stable::call(&x, Some(true), 1, false, &vo, &io).unwrap();
    assert_eq!(vo.strides().as_slice(), &[1, 2]);
    assert_eq!(f64v(&vo), vec![1., 2., 3., 0., 4., 5.]);
    // Methods.
    let (v, _) = x.sort_with(1, true).unwrap();
    assert_eq!(f64v(&v), vec![3., 2., 1., 5., 4., 0.]);
}

#[test]
fn sort_into_its_own_input_and_an_overlapping_output() {
    let x = f32s(&[3., 1., 2., 0., 5., 4.], &[2, 3]);
    let idx = Tensor::empty(&[0], ScalarType::Long).unwrap();
    operators::sort_values::call(&x, 1, false, &x, &idx).unwrap();
    assert_eq!(f64v(&x), vec![1., 2., 3., 0., 4., 5.]);
    assert_eq!(i64v(&idx), vec![1, 2, 0, 0, 2, 1]);
    // A view of the same elements: sorted in place from a copy, as torch.
    let y = f32s(&[3., 1., 2.], &[3]);
    let alias = y.as_strided(&[3], &[1]).unwrap();
    operators::sort_values::call(&y, 0, true, &alias, &idx).unwrap();
    assert_eq!(f64v(&y), vec![3., 2., 1.]);
    assert_eq!(i64v(&idx), vec![0, 2, 1]);
    // values overlapping self at another offset: torch's copy_ refuses it.
    let buf = f32s(&[5., 4., 3., 2., 1., 0., 9.], &[7]);
    let src = buf.as_strided_with(&[6], &[1], Some(0)).unwrap();
    let dst = buf.as_strided_with(&[6], &[1], Some(1)).unwrap();
    assert!(
        msg(operators::sort_values::call(&src, 0, false, &dst, &idx))
            .starts_with("unsupported operation: some elements of the input tensor")
    );
    assert_eq!(f64v(&buf), vec![5., 4., 3., 2., 1., 0., 9.]);
}

#[test]
fn zero_dim_empty_and_long_lines() {
    let s = Tensor::from_slice(&[5.0f32], &[]).unwrap();
    for dim in [0, -1] {
        let (v, i) = operators::sort::call(&s, dim, false).unwrap();
        assert_eq!((v.dim(), f64v(&v), i64v(&i)), (0, vec![5.0], vec![0]));
    }
    let (v, i) = operators::topk::call(&s, 1, -1, true, true).unwrap();
    assert_eq!((v.dim(), f64v(&v), i64v(&i)), (0, vec![5.0], vec![0]));
    let (v, i) = operators::topk::call(&s, 0, 0, true, true).unwrap();
    assert_eq!((v.dim(), f64v(&v), i64v(&i)), (0, vec![5.0], vec![0]));
    let (v, i) = operators::kthvalue::call(&s, 1, 0, true).unwrap();
    assert_eq!((v.dim(), f64v(&v), i64v(&i)), (0, vec![5.0], vec![0]));
    let b = Tensor::from_slice(&[true], &[]).unwrap();
    let (v, _) = operators::kthvalue::call(&b, 1, -1, false).unwrap();
    assert_eq!(v.to_vec::<bool>().unwrap(), vec![true]);
    let e = Tensor::empty(&[0, 3], ScalarType::Float).unwrap();
    for dim in [0, 1] {
        let (v, i) = operators::sort::call(&e, dim, false).unwrap();
        assert_eq!(
            (v.sizes().to_vec(), i.sizes().to_vec()),
            (vec![0, 3], vec![0, 3])
        );
    }
    let (v, _) = operators::topk::call(&e, 0, 0, true, true).unwrap();
    assert_eq!(v.sizes().as_slice(), &[0, 3]);
    let (v, _) = operators::topk::call(&e, 1, 1, true, true).unwrap();
    assert_eq!(v.sizes().as_slice(), &[0, 1]);
    let (v, i) = operators::topk::call(&f32s(&[1., 2.], &[2]), 0, 0, true, true).unwrap();
    assert_eq!((v.sizes().to_vec(), i.sizes().to_vec()), (vec![0], vec![0]));
    let (v, _) = operators::kthvalue::call(&e, 1, 1, false).unwrap();
    assert_eq!(v.sizes().as_slice(), &[0]);
    let (v, _) = operators::kthvalue::call(&e, 1, 1, true).unwrap();
    assert_eq!(v.sizes().as_slice(), &[0, 1]);
    // Lines long enough for the radix sort, the heap and the select paths.
    for n in [255usize, 256, 1000, 5000] {
        let xs: Vec<f64> = (0..n)
            .map(|i| ((i * 7919) % 613) as f64 - 300.0 + if i % 97 == 0 { f64::NAN } else { 0.0 })
            .collect();
        let t = Tensor::from_slice(&xs, &[n as i64]).unwrap();
        for desc in [false, true] {
            let order = stable_order(&xs, desc);
            let (v, i) = operators::sort::call(&t, 0, desc).unwrap();
            let want: Vec<f64> = order.iter().map(|&i| xs[i]).collect();
            assert_same(&f64v(&v), &want, "long sort");
            assert_eq!(
                i64v(&i),
                order.iter().map(|&i| i as i64).collect::<Vec<_>>()
            );
            for k in [1usize, 10, n / 64, n / 2, n] {
                let (v, i) = operators::topk::call(&t, k as i64, 0, desc, true).unwrap();
                assert_same(&f64v(&v), &want[..k], "long topk");
                let want_i: Vec<i64> = order[..k].iter().map(|&i| i as i64).collect();
                assert_eq!(i64v(&i), want_i, "topk k={k} n={n}");
            }
        }
    }
}

#[test]
fn many_lines_in_parallel() {
    let threads = get_num_threads();
    set_num_threads(4).unwrap();
    let (rows, cols) = (3000usize, 40usize);
    let xs: Vec<f64> = (0..rows * cols).map(|i| ((i * 31) % 17) as f64).collect();
    let t = Tensor::from_slice(&xs, &[rows as i64, cols as i64]).unwrap();
    let (v, i) = operators::sort::call(&t, 1, false).unwrap();
    let (v, i) = (f64v(&v), i64v(&i));
    let (tv, ti) = operators::topk::call(&t, 3, 1, true, true).unwrap();
    let (tv, ti) = (f64v(&tv), i64v(&ti));
    let (kv, ki) = operators::kthvalue::call(&t, 5, 1, false).unwrap();
    let (kv, ki) = (f64v(&kv), i64v(&ki));
    for r in 0..rows {
        let line = &xs[r * cols..(r + 1) * cols];
        let order = stable_order(line, false);
        for (j, &o) in order.iter().enumerate() {
            assert_eq!((v[r * cols + j], i[r * cols + j]), (line[o], o as i64));
        }
        let down = stable_order(line, true);
        for j in 0..3 {
            assert_eq!(
                (tv[r * 3 + j], ti[r * 3 + j]),
                (line[down[j]], down[j] as i64)
            );
        }
        assert_eq!((kv[r], ki[r]), (line[order[4]], order[4] as i64));
    }
    set_num_threads(threads as i64).unwrap();
}

// ---------------------------------------------------------------------------------------------
// topk and kthvalue

#[test]
fn topk_values_and_nan() {
    let nan = f32::NAN;
    let x = f32s(&[nan, 1., 2., nan, -1.], &[5]);
    let (v, i) = operators::topk::call(&x, 3, 0, true, true).unwrap();
    assert_same(&f64v(&v), &[f64::NAN, f64::NAN, 2.0], "largest");
    assert_eq!(i64v(&i), vec![0, 3, 2]);
    let (v, i) = operators::topk::call(&x, 3, 0, false, true).unwrap();
    assert_same(&f64v(&v), &[-1.0, 1.0, 2.0], "smallest");
    assert_eq!(i64v(&i), vec![4, 1, 2]);
    let (v, i) = operators::topk::call(&x, 4, 0, false, true).unwrap();
    assert_same(&f64v(&v), &[-1.0, 1.0, 2.0, f64::NAN], "smallest with NaN");
    assert_eq!(i64v(&i), vec![4, 1, 2, 0]);
    // Unsorted: the same elements.
    let y = f32s(&[5., 1., 4., 2., 3., 0.], &[6]);
    let (v, i) = operators::topk::call(&y, 4, 0, true, false).unwrap();
    let mut got: Vec<(i64, f64)> = i64v(&i).into_iter().zip(f64v(&v)).collect();
    got.sort_by_key(|p| p.0);
    assert_eq!(got, vec![(0, 5.), (2, 4.), (3, 2.), (4, 3.)]);
    // Along a dim of a transposed input; out= resizes.
    let m = f32s(&[1., 6., 2., 5., 3., 4.], &[3, 2]).t().unwrap();
    let (vo, io) = (
        Tensor::empty(&[7], ScalarType::Float).unwrap(),
        Tensor::empty(&[7], ScalarType::Long).unwrap(),
    );
    operators::topk_values::call(&m, 2, 1, true, true, &vo, &io).unwrap();
    assert_eq!(vo.sizes().as_slice(), &[2, 2]);
    assert_eq!(f64v(&vo), vec![3., 2., 6., 5.]);
    assert_eq!(i64v(&io), vec![2, 1, 0, 1]);
    let (v, _) = m.topk_with(1, 0, false, true).unwrap();
    assert_eq!(f64v(&v), vec![1., 2., 3.]);
    // Every dtype but bool.
    for dt in ALL_REAL.into_iter().filter(|&d| d != ScalarType::Bool) {
        let t = f32s(&[3., 1., 2.], &[3]).to_dtype(dt).unwrap();
        let (v, i) = operators::topk::call(&t, 2, 0, true, true).unwrap();
        assert_eq!(
            (v.dtype(), f64v(&v), i64v(&i)),
            (dt, vec![3., 2.], vec![0, 2])
        );
    }
}

#[test]
fn kthvalue_values_keepdim_and_out() {
    let x = f32s(&[3., 1., 2., f32::NAN, 0., 1.], &[2, 3]);
    let (v, i) = operators::kthvalue::call(&x, 2, -1, false).unwrap();
    assert_eq!(v.sizes().as_slice(), &[2]);
    assert_same(&f64v(&v), &[2.0, 1.0], "k=2");
    assert_eq!(i64v(&i), vec![2, 2]);
    let (v, i) = operators::kthvalue::call(&x, 3, 1, true).unwrap();
    assert_eq!(v.sizes().as_slice(), &[2, 1]);
    assert_same(&f64v(&v), &[3.0, f64::NAN], "k=3");
    assert_eq!(i64v(&i), vec![0, 0]);
    let (v, i) = operators::kthvalue::call(&x, 1, 0, false).unwrap();
    assert_same(&f64v(&v), &[3.0, 0.0, 1.0], "dim 0");
    assert_eq!(i64v(&i), vec![0, 1, 1]);
    // Ties go to the lowest index.
    let t = f32s(&[1., 1., 1., 0.], &[4]);
    let (_, i) = operators::kthvalue::call(&t, 3, 0, false).unwrap();
    assert_eq!(i64v(&i), vec![1]);
    // out=: resized, and a non-contiguous output of the right shape keeps its strides.
    let (vo, io) = (
        Tensor::empty(&[7], ScalarType::Float).unwrap(),
        Tensor::empty(&[7], ScalarType::Long).unwrap(),
    );
    operators::kthvalue_values::call(&x, 1, 1, false, &vo, &io).unwrap();
    assert_eq!(vo.sizes().as_slice(), &[2]);
    assert_eq!(f64v(&vo), vec![1., 0.]);
    assert_eq!(i64v(&io), vec![1, 1]);
    let y = f32s(
        &(0..12).map(|v| (11 - v) as f32).collect::<Vec<_>>(),
        &[3, 4],
    );
    let vo = Tensor::empty(&[8], ScalarType::Float)
        .unwrap()
        .as_strided(&[4], &[2])
        .unwrap();
    let io = Tensor::empty(&[4], ScalarType::Long).unwrap();
    operators::kthvalue_values::call(&y, 1, 0, false, &vo, &io).unwrap();
    assert_eq!(vo.strides().as_slice(), &[2]);
    assert_eq!(f64v(&vo), vec![3., 2., 1., 0.]);
    assert_eq!(i64v(&io), vec![2, 2, 2, 2]);
    for dt in ALL_REAL.into_iter().filter(|&d| d != ScalarType::Bool) {
        let t = f32s(&[3., 1., 2.], &[3]).to_dtype(dt).unwrap();
        let (v, i) = t.kthvalue_with(2, 0, false).unwrap();
        assert_eq!((v.dtype(), f64v(&v), i64v(&i)), (dt, vec![2.], vec![2]));
    }
}

// ---------------------------------------------------------------------------------------------
// Errors, dtypes and meta

#[test]
fn error_texts_are_torchs() {
    let x = f32s(&[1., 2., 3., 4., 5., 6.], &[2, 3]);
    let c = Tensor::empty(&[3], ScalarType::ComplexFloat).unwrap();
    let s = Tensor::from_slice(&[5.0f32], &[]).unwrap();
    let range = "Dimension out of range (expected to be in range of [-2, 1], but got 2)";
    assert_eq!(msg(operators::sort::call(&x, 2, false)), range);
    assert_eq!(msg(operators::topk::call(&x, 1, 2, true, true)), range);
    assert_eq!(msg(operators::kthvalue::call(&x, 1, 2, false)), range);
    assert_eq!(
        msg(operators::sort::call(&s, 1, false)),
        "Dimension out of range (expected to be in range of [-1, 0], but got 1)"
    );
    let sort_complex = " Sort does not support complex dtypes on CPU";
    assert_eq!(msg(operators::sort::call(&c, 0, false)), sort_complex);
    assert_eq!(msg(operators::argsort::call(&c, 0, false)), sort_complex);
    let c0 = Tensor::empty(&[], ScalarType::ComplexDouble).unwrap();
    assert_eq!(msg(operators::sort::call(&c0, 0, false)), sort_complex);
    let e = operators::sort::call(&c, 0, false).unwrap_err();
    assert_eq!(e.kind(), ratten_core::ErrorKind::Type);
    // The dim is checked first.
    assert!(msg(operators::sort::call(&c, 5, false)).starts_with("Dimension out of range"));
    assert_eq!(
        msg(operators::topk::call(&c, 1, 0, true, true)),
        " topk does not support complex dtypes on CPU"
    );
    let b = Tensor::from_slice(&[true, false], &[2]).unwrap();
    let e = operators::topk::call(&b, 1, 0, true, true).unwrap_err();
    assert_eq!(
        (e.kind(), e.message()),
        (
            ratten_core::ErrorKind::NotImplemented,
            "topk does not support bool dtypes on CPU"
        )
    );
    let k_range = "selected index k out of range";
    assert_eq!(msg(operators::topk::call(&x, 4, 1, true, true)), k_range);
    assert_eq!(msg(operators::topk::call(&x, -1, 1, true, true)), k_range);
    assert_eq!(msg(operators::topk::call(&s, 2, 0, true, true)), k_range);
    assert_eq!(msg(operators::topk::call(&c, 9, 0, true, true)), k_range);
    assert_eq!(
        msg(operators::kthvalue::call(&x, 0, -1, false)),
        "kthvalue(): selected number k out of range for dimension 1"
    );
    assert_eq!(
        msg(operators::kthvalue::call(&x, 3, 0, false)),
        "kthvalue(): selected number k out of range for dimension 0"
    );
    assert_eq!(
        msg(operators::kthvalue::call(&s, 2, -1, false)),
        "kthvalue(): selected number k out of range for dimension 0"
    );
    let empty = Tensor::empty(&[2, 0, 3], ScalarType::Float).unwrap();
    assert_eq!(
        msg(operators::kthvalue::call(&empty, 1, 1, true)),
        "kthvalue(): Expected reduction dim 1 to have non-zero size."
    );
    assert_eq!(
        msg(operators::kthvalue::call(&b, 1, 0, false)),
        "\"kthvalue_cpu\" not implemented for 'Bool'"
    );
    assert_eq!(
        msg(operators::kthvalue::call(&c, 1, 0, false)),
        "\"kthvalue_cpu\" not implemented for 'ComplexFloat'"
    );
    // out= dtypes.
    let f = Tensor::empty(&[0], ScalarType::Float).unwrap();
    let d = Tensor::empty(&[0], ScalarType::Double).unwrap();
    let l = Tensor::empty(&[0], ScalarType::Long).unwrap();
    let i = Tensor::empty(&[0], ScalarType::Int).unwrap();
    let long_int = "Expected out tensor to have dtype long int, but got int instead";
    let float_double = "Expected out tensor to have dtype float, but got double instead";
    assert_eq!(
        msg(operators::sort_values::call(&x, 1, false, &f, &i)),
        long_int
    );
    assert_eq!(
        msg(operators::sort_values::call(&x, 1, false, &d, &l)),
        float_double
    );
    assert_eq!(
        msg(operators::argsort_stable_out::call(&x, true, 1, false, &i)),
        long_int
    );
    assert_eq!(
        msg(operators::topk_values::call(&x, 1, 1, true, true, &f, &i)),
        long_int
    );
    assert_eq!(
        msg(operators::topk_values::call(&x, 1, 1, true, true, &d, &l)),
        float_double
    );
    assert_eq!(
        msg(operators::kthvalue_values::call(&x, 1, 1, false, &f, &i)),
        "output indices must be of scalar type Long"
    );
    assert_eq!(
        msg(operators::kthvalue_values::call(&x, 1, 1, false, &d, &l)),
        "output values must be of same type as input"
    );
    let head = x.as_strided(&[1, 3], &[3, 1]).unwrap();
    assert!(
        msg(operators::kthvalue_values::call(&x, 1, 0, true, &head, &l))
            .starts_with("unsupported operation: some elements of the input tensor")
    );
    // Nothing written on error.
    let fresh = Tensor::empty(&[0], ScalarType::Bool).unwrap();
    assert!(operators::kthvalue_values::call(&b, 1, 0, false, &fresh, &l).is_err());
    assert_eq!(fresh.sizes().as_slice(), &[0]);
}

#[test]
fn meta_shapes_and_dtypes() {
    let m = Tensor::empty(&[3, 4], (ScalarType::Float, Device::META)).unwrap();
    let (v, i) = operators::sort::call(&m, -1, false).unwrap();
    assert_eq!(
        (v.sizes().to_vec(), v.device(), i.dtype()),
        (vec![3i64, 4], Device::META, ScalarType::Long)
    );
    let t = m.t().unwrap();
    let (v, _) = operators::sort::call(&t, 0, false).unwrap();
    assert_eq!(v.strides().as_slice(), &[1, 4]);
    let (v, i) = operators::topk::call(&m, 2, 1, true, true).unwrap();
    assert_eq!(
        (v.sizes().to_vec(), i.sizes().to_vec()),
        (vec![3i64, 2], vec![3i64, 2])
    );
    let (v, i) = operators::kthvalue::call(&m, 2, 1, false).unwrap();
    assert_eq!(
        (v.sizes().to_vec(), i.dtype(), v.device()),
        (vec![3i64], ScalarType::Long, Device::META)
    );
    let (v, _) = operators::kthvalue::call(&m, 2, 0, true).unwrap();
    assert_eq!(v.sizes().as_slice(), &[1, 4]);
    let a = operators::argsort_stable::call(&m, true, 0, false).unwrap();
    assert_eq!(
        (a.sizes().to_vec(), a.dtype()),
        (vec![3i64, 4], ScalarType::Long)
    );
    assert_eq!(
        operators::msort::call(&m).unwrap().sizes().as_slice(),
        &[3, 4]
    );
    // The shape checks run on meta too; the CPU kernels' dtype checks do not.
    assert_eq!(
        msg(operators::topk::call(&m, 5, 1, true, true)),
        "selected index k out of range"
    );
    let c = Tensor::empty(&[3], (ScalarType::ComplexFloat, Device::META)).unwrap();
    assert!(operators::sort::call(&c, 0, false).is_ok());
}

// ---------------------------------------------------------------------------------------------
// Property tests against the reference

#[derive(Debug, Clone)]
struct Case {
    sizes: Vec<i64>,
    dim: usize,
    descending: bool,
    stable: bool,
    /// 0: contiguous; 1: the last two dims transposed; 2: every other element of the last dim.
    layout: u8,
    k_frac: f64,
    seed: u64,
}

fn case() -> impl Strategy<Value = Case> {
    (1usize..=3)
        .prop_flat_map(|nd| {
            (
                proptest::collection::vec(0i64..=5, nd),
                0..nd,
                prop_oneof![4 => Just(None), 1 => (200i64..=700).prop_map(Some)],
                any::<bool>(),
                any::<bool>(),
                0u8..3,
                0.0f64..=1.0,
                any::<u64>(),
            )
        })
        .prop_map(
            |(mut sizes, dim, long, descending, stable, layout, k_frac, seed)| {
                if let Some(n) = long {
                    sizes[dim] = n;
                }
                Case {
                    sizes,
                    dim,
                    descending,
                    stable,
                    layout,
                    k_frac,
                    seed,
                }
            },
        )
}

/// Values from a small pool (repeats, so ties; for float dtypes NaN, ±0.0 and ±inf).
fn values(n: usize, seed: u64, dtype: ScalarType) -> Vec<f64> {
    let floats = [
        f64::NAN,
        -0.0,
        0.0,
        f64::INFINITY,
        f64::NEG_INFINITY,
        0.5,
        -2.5,
    ];
    let mut s = seed | 1;
    (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            let r = (s % 16) as i64;
            match dtype {
                ScalarType::Bool => (r % 2) as f64,
                ScalarType::Byte => (r % 9) as f64,
                d if d.is_floating_point() && r >= 9 => floats[(r - 9) as usize],
                _ => (r % 9 - 4) as f64,
            }
        })
        .collect()
}

/// The case's input in `dtype`, in its layout, and its row-major values.
fn input(c: &Case, dtype: ScalarType) -> (Tensor, Vec<f64>) {
    let n: i64 = c.sizes.iter().product();
    let vals = values(n as usize, c.seed, dtype);
    let nd = c.sizes.len();
    let logical = Tensor::from_slice(&vals, &c.sizes)
        .unwrap()
        .to_dtype(dtype)
        .unwrap();
    let t = match c.layout {
        1 if nd >= 2 => {
            let stored = logical.transpose(-1, -2).unwrap().contiguous().unwrap();
            stored.transpose(-1, -2).unwrap()
        }
        2 => {
            // Every other element of a buffer twice as long in the last dim.
            let mut wide = c.sizes.clone();
            wide[nd - 1] *= 2;
            let buf = Tensor::empty(&wide, dtype).unwrap();
            let mut strides: Vec<i64> = buf.strides().to_vec();
            strides[nd - 1] = 2;
            let view = buf.as_strided(&c.sizes, &strides).unwrap();
            operators::copy_::call(&view, &logical, false).unwrap();
            view
        }
        _ => logical,
    };
    assert_same(
        &f64v(&t),
        &vals.iter().map(|&v| f64v_of(v, dtype)).collect::<Vec<_>>(),
        "input",
    );
    (t, vals.iter().map(|&v| f64v_of(v, dtype)).collect())
}

/// `v` as `dtype` holds it, back in f64.
fn f64v_of(v: f64, dtype: ScalarType) -> f64 {
    if dtype == ScalarType::Bool {
        return f64::from(u8::from(v != 0.0));
    }
    v
}

fn check_sort(c: &Case, dtype: ScalarType) {
    let (t, vals) = input(c, dtype);
    let d = c.dim as i64
        - if c.seed & 1 == 0 {
            c.sizes.len() as i64
        } else {
            0
        };
    let (v, i) = operators::sort_stable::call(&t, Some(c.stable), d, c.descending).unwrap();
    assert_eq!(v.sizes().as_slice(), c.sizes.as_slice());
    assert_eq!((v.dtype(), i.dtype()), (dtype, ScalarType::Long));
    let (v, i) = (f64v(&v), i64v(&i));
    for line in lines(&c.sizes, c.dim) {
        let xs: Vec<f64> = line.iter().map(|&o| vals[o]).collect();
        let order = stable_order(&xs, c.descending);
        let want_v: Vec<f64> = order.iter().map(|&j| xs[j]).collect();
        let got_v: Vec<f64> = line.iter().map(|&o| v[o]).collect();
        assert_same(&got_v, &want_v, &format!("{dtype:?} {c:?}"));
        let got_i: Vec<i64> = line.iter().map(|&o| i[o]).collect();
        let want_i: Vec<i64> = order.iter().map(|&j| j as i64).collect();
        assert_eq!(got_i, want_i, "{dtype:?} {c:?}");
    }
}

fn check_topk_kth(c: &Case, dtype: ScalarType) {
    let (t, vals) = input(c, dtype);
    let n = c.sizes[c.dim];
    let k = ((n as f64) * c.k_frac).round() as i64;
    let largest = c.descending;
    let (v, i) = operators::topk::call(&t, k, c.dim as i64, largest, c.stable).unwrap();
    let mut out_sizes = c.sizes.clone();
    out_sizes[c.dim] = k;
    assert_eq!(v.sizes().as_slice(), out_sizes.as_slice());
    let (v, i) = (f64v(&v), i64v(&i));
    let in_lines = lines(&c.sizes, c.dim);
    let out_lines = lines(&out_sizes, c.dim);
    for (line, out) in in_lines.iter().zip(&out_lines) {
        let xs: Vec<f64> = line.iter().map(|&o| vals[o]).collect();
        let order = stable_order(&xs, largest);
        let mut got: Vec<(i64, f64)> = out.iter().map(|&o| (i[o], v[o])).collect();
        let mut want: Vec<(i64, f64)> = order[..k as usize]
            .iter()
            .map(|&j| (j as i64, xs[j]))
            .collect();
        if !c.stable {
            // sorted=False: the same elements in some order.
            got.sort_by_key(|p| p.0);
            want.sort_by_key(|p| p.0);
        }
        assert_eq!(
            got.iter().map(|p| p.0).collect::<Vec<_>>(),
            want.iter().map(|p| p.0).collect::<Vec<_>>(),
            "topk {dtype:?} {c:?} k={k}"
        );
        let gv: Vec<f64> = got.iter().map(|p| p.1).collect();
        let wv: Vec<f64> = want.iter().map(|p| p.1).collect();
        assert_same(&gv, &wv, "topk values");
    }
    if n == 0 {
        return;
    }
    let kk = 1 + ((n - 1) as f64 * c.k_frac).round() as i64;
    let (v, i) = operators::kthvalue::call(&t, kk, c.dim as i64, false).unwrap();
    let (v, i) = (f64v(&v), i64v(&i));
    for (r, line) in in_lines.iter().enumerate() {
        let xs: Vec<f64> = line.iter().map(|&o| vals[o]).collect();
        let j = stable_order(&xs, false)[kk as usize - 1];
        assert!(same(v[r], xs[j]), "kthvalue {dtype:?} {c:?}");
        assert_eq!(i[r], j as i64, "kthvalue {dtype:?} {c:?}");
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 40, ..ProptestConfig::default() })]

    #[test]
    fn sort_matches_the_reference(c in case()) {
        for dtype in ALL_REAL {
            check_sort(&c, dtype);
        }
    }

    #[test]
    fn topk_and_kthvalue_match_the_reference(c in case()) {
        for dtype in ALL_REAL {
            if dtype == ScalarType::Bool {
                let (t, _) = input(&c, dtype);
                prop_assert!(operators::topk::call(&t, 0, c.dim as i64, true, true).is_err());
                if c.sizes[c.dim] > 0 {
                    prop_assert!(operators::kthvalue::call(&t, 1, c.dim as i64, false).is_err());
                }
            } else {
                check_topk_kth(&c, dtype);
            }
        }
    }
}
