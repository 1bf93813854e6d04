//! The unique family (`_unique`, `_unique2`, `unique_dim`, `unique_consecutive`,
//! `unique_dim_consecutive`), searchsorted / bucketize and bincount / histc: against naive
//! references (quadratic loops and linear scans), as bounded property tests over shapes, dims,
//! every dtype each operator takes, values with many duplicates (NaN and -0.0 among them) and
//! transposed inputs; PyTorch's error texts, empty and 0-dim inputs, out=, meta, and inputs
//! large enough for the parallel paths.

use std::cmp::Ordering;

use crate::common::{assert_same, torch_cmp};
use crate::common::{msg, values as f64v};
use proptest::prelude::*;
use ratten_aten::structured::with_warning_handler;
use ratten_aten::tensor_iterator::parallel::{get_num_threads, set_num_threads};
use ratten_aten::{operators, Tensor};
use ratten_core::{Device, Scalar, ScalarType};

const REAL: [ScalarType; 9] = [
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

const INTEGRAL: [ScalarType; 5] = [
    ScalarType::Byte,
    ScalarType::Char,
    ScalarType::Short,
    ScalarType::Int,
    ScalarType::Long,
];

fn i64v(t: &Tensor) -> Vec<i64> {
    assert_eq!(t.dtype(), ScalarType::Long);
    t.contiguous().unwrap().to_vec::<i64>().unwrap()
}

fn t64(v: &[f64], sizes: &[i64]) -> Tensor {
    Tensor::from_slice(v, sizes).unwrap()
}

fn longs(v: &[i64]) -> Tensor {
    Tensor::from_slice(v, &[v.len() as i64]).unwrap()
}

fn meta(sizes: &[i64], dtype: ScalarType) -> Tensor {
    Tensor::empty(sizes, (dtype, Device::META)).unwrap()
}

// ---------------------------------------------------------------------------------------------
// References

/// unique of `xs`: the first occurrence of each distinct value (`==`: every NaN distinct), in
/// torch's order; the index of each element's value among them; how often each occurs.
fn ref_unique(xs: &[f64]) -> (Vec<f64>, Vec<i64>, Vec<i64>) {
    let mut reps: Vec<usize> = Vec::new();
    for i in 0..xs.len() {
        if !reps.iter().any(|&r| xs[r] == xs[i]) {
            reps.push(i);
        }
    }
    reps.sort_by(|&a, &b| torch_cmp(xs[a], xs[b]).then(a.cmp(&b)));
    let inverse: Vec<i64> = (0..xs.len())
        .map(|i| reps.iter().position(|&r| r == i || xs[r] == xs[i]).unwrap() as i64)
        .collect();
    let counts = (0..reps.len())
        .map(|p| inverse.iter().filter(|&&g| g == p as i64).count() as i64)
        .collect();
    (reps.iter().map(|&r| xs[r]).collect(), inverse, counts)
}

/// unique_consecutive of `xs`: the first of each run of equal values.
fn ref_runs(xs: &[f64]) -> (Vec<f64>, Vec<i64>, Vec<i64>) {
    let (mut values, mut inverse, mut counts) = (Vec::new(), Vec::new(), Vec::<i64>::new());
    for (i, &x) in xs.iter().enumerate() {
        if i == 0 || x != xs[i - 1] {
            values.push(x);
            counts.push(0);
        }
        *counts.last_mut().unwrap() += 1;
        inverse.push(values.len() as i64 - 1);
    }
    (values, inverse, counts)
}

/// The slices of `xs` (row-major, `sizes`) along `dim`, each flattened in row-major order.
fn slices(xs: &[f64], sizes: &[i64], dim: usize) -> Vec<Vec<f64>> {
    let n = sizes[dim] as usize;
    let inner: usize = sizes[dim + 1..].iter().product::<i64>() as usize;
    let outer: usize = sizes[..dim].iter().product::<i64>() as usize;
    (0..n)
        .map(|j| {
            let mut row = Vec::new();
            for o in 0..outer {
                let base = (o * n + j) * inner;
                row.extend_from_slice(&xs[base..base + inner]);
            }
            row
        })
        .collect()
}

fn rows_equal(a: &[f64], b: &[f64]) -> bool {
    a.iter().zip(b).all(|(x, y)| x == y)
}

fn rows_cmp(a: &[f64], b: &[f64]) -> Ordering {
    a.iter()
        .zip(b)
        .map(|(&x, &y)| torch_cmp(x, y))
        .find(|o| o.is_ne())
        .unwrap_or(Ordering::Equal)
}

/// unique_dim over `rows`: (chosen rows in output order, inverse, counts).
fn ref_unique_rows(rows: &[Vec<f64>], consecutive: bool) -> (Vec<usize>, Vec<i64>, Vec<i64>) {
    let n = rows.len();
    let mut inverse = vec![0i64; n];
    let mut reps: Vec<usize> = Vec::new();
    if consecutive {
        for i in 0..n {
            if i == 0 || !rows_equal(&rows[i], &rows[i - 1]) {
                reps.push(i);
            }
            inverse[i] = reps.len() as i64 - 1;
        }
    } else {
        for i in 0..n {
            if !reps.iter().any(|&r| rows_equal(&rows[r], &rows[i])) {
                reps.push(i);
            }
        }
        reps.sort_by(|&a, &b| rows_cmp(&rows[a], &rows[b]).then(a.cmp(&b)));
        for i in 0..n {
            inverse[i] = reps
                .iter()
                .position(|&r| r == i || rows_equal(&rows[r], &rows[i]))
                .unwrap() as i64;
        }
    }
    let counts = (0..reps.len())
        .map(|p| inverse.iter().filter(|&&g| g == p as i64).count() as i64)
        .collect();
    (reps, inverse, counts)
}

/// The position of `v` in the sorted row `b` (no NaN): a linear scan to the first boundary
/// not below `v` (`right`: above it); NaN `v` goes last.
fn ref_position(b: &[f64], v: f64, right: bool) -> i64 {
    b.iter()
        .position(|&x| if right { x > v } else { x >= v })
        .unwrap_or(b.len()) as i64
}

// ---------------------------------------------------------------------------------------------
// unique: examples

#[test]
fn unique_sorts_and_maps_back() {
    let x = Tensor::from_slice(&[3i64, 1, 2, 1, 0, 3], &[2, 3]).unwrap();
    let (v, inv, c) = operators::_unique2::call(&x, true, true, true).unwrap();
    assert_eq!(v.to_vec::<i64>().unwrap(), vec![0, 1, 2, 3]);
    assert_eq!(inv.sizes().as_slice(), &[2, 3]);
    assert_eq!(i64v(&inv), vec![3, 1, 2, 1, 0, 3]);
    assert_eq!(i64v(&c), vec![1, 2, 1, 2]);
    // `sorted=False` sorts too, as torch's CPU kernel does.
    let (v, inv) = operators::_unique::call(&x, false, true).unwrap();
    assert_eq!(v.to_vec::<i64>().unwrap(), vec![0, 1, 2, 3]);
    assert_eq!(i64v(&inv), vec![3, 1, 2, 1, 0, 3]);
    // What is not asked for is empty.
    let (_, inv, c) = operators::_unique2::call(&x, true, false, false).unwrap();
    assert_eq!(
        (inv.sizes().to_vec(), c.sizes().to_vec()),
        (vec![0], vec![0])
    );
    let (_, inv) = operators::_unique::call(&x, true, false).unwrap();
    assert_eq!(inv.sizes().as_slice(), &[0]);
}

#[test]
fn unique_nan_signed_zero_bool_and_0_dim() {
    let nan = f64::NAN;
    let x = t64(&[1.0, nan, 1.0, nan, -0.0, 0.0], &[6]);
    let (v, inv, c) = operators::_unique2::call(&x, true, true, true).unwrap();
    assert_same(&f64v(&v), &[-0.0, 1.0, nan, nan], "values");
    assert_eq!(i64v(&inv), vec![1, 2, 1, 3, 0, 0]);
    assert_eq!(i64v(&c), vec![2, 2, 1, 1]);
    let (v, _, _) =
        operators::_unique2::call(&t64(&[0.0, -0.0], &[2]), true, false, false).unwrap();
    assert_same(&f64v(&v), &[0.0], "first zero kept");
    let b = Tensor::from_slice(&[true, false, true, true], &[4]).unwrap();
    let (v, inv, c) = operators::_unique2::call(&b, true, true, true).unwrap();
    assert_eq!(v.to_vec::<bool>().unwrap(), vec![false, true]);
    assert_eq!((i64v(&inv), i64v(&c)), (vec![1, 0, 1, 1], vec![1, 3]));
    let only = Tensor::from_slice(&[true, true], &[2]).unwrap();
    let (v, inv, c) = operators::_unique2::call(&only, true, true, true).unwrap();
    assert_eq!(v.to_vec::<bool>().unwrap(), vec![true]);
    assert_eq!((i64v(&inv), i64v(&c)), (vec![0, 0], vec![2]));
    // A 0-dim input: one value, a 0-dim inverse.
    let s = Tensor::scalar_tensor(7, ScalarType::Long).unwrap();
    let (v, inv, c) = operators::_unique2::call(&s, true, true, true).unwrap();
    assert_eq!(v.sizes().as_slice(), &[1]);
    assert_eq!(inv.sizes().as_slice(), &[] as &[i64]);
    assert_eq!((i64v(&inv), i64v(&c)), (vec![0], vec![1]));
}

#[test]
fn unique_empty_inputs() {
    for dt in [ScalarType::Float, ScalarType::Bool] {
        let e = Tensor::empty(&[0, 3], dt).unwrap();
        let (v, inv, c) = operators::_unique2::call(&e, true, true, true).unwrap();
        assert_eq!(v.dtype(), dt);
        assert_eq!(
            (v.sizes().to_vec(), inv.sizes().to_vec(), c.sizes().to_vec()),
            (vec![0], vec![0, 3], vec![0])
        );
        let (v, inv, c) = operators::unique_consecutive::call(&e, true, true, None).unwrap();
        assert_eq!(
            (v.sizes().to_vec(), inv.sizes().to_vec(), c.sizes().to_vec()),
            (vec![0], vec![0, 3], vec![0])
        );
    }
    let e = Tensor::empty(&[0, 3], ScalarType::Float).unwrap();
    let (v, inv, c) = operators::unique_dim::call(&e, 0, true, true, true).unwrap();
    assert_eq!(
        (v.sizes().to_vec(), inv.sizes().to_vec(), c.sizes().to_vec()),
        (vec![0, 3], vec![0], vec![0])
    );
    assert_eq!(
        msg(operators::unique_dim::call(&e, 1, true, false, false)),
        "There are 0 sized dimensions, and they aren't selected, so unique cannot be applied"
    );
    let ee = Tensor::empty(&[0, 0, 2], ScalarType::Float).unwrap();
    assert_eq!(
        msg(operators::unique_dim::call(&ee, 0, true, false, false)),
        "Number of zero sized dimensions is more than one, so unique cannot be applied "
    );
    assert_eq!(
        msg(operators::unique_dim_consecutive::call(&e, 1, false, false)),
        "There are 0 sized dimensions, and they aren't selected, so unique cannot be applied"
    );
}

#[test]
fn unique_consecutive_runs_and_dims() {
    let x = Tensor::from_slice(&[1i64, 1, 2, 2, 3, 1, 1, 2], &[8]).unwrap();
    let (v, inv, c) = operators::unique_consecutive::call(&x, true, true, None).unwrap();
    assert_eq!(v.to_vec::<i64>().unwrap(), vec![1, 2, 3, 1, 2]);
    assert_eq!(i64v(&inv), vec![0, 0, 1, 1, 2, 3, 3, 4]);
    assert_eq!(i64v(&c), vec![2, 2, 1, 2, 1]);
    let (_, inv, c) = operators::unique_consecutive::call(&x, false, false, None).unwrap();
    assert_eq!((inv.numel(), c.numel()), (0, 0));
    // dim=0 of a 1-D input takes the flat path (counts only when asked); dim=-1 the dim path,
    // which always returns both.
    let (_, _, c) = operators::unique_consecutive::call(&x, false, false, Some(0)).unwrap();
    assert_eq!(c.numel(), 0);
    let (v, inv, c) = operators::unique_consecutive::call(&x, false, false, Some(-1)).unwrap();
    assert_eq!(v.to_vec::<i64>().unwrap(), vec![1, 2, 3, 1, 2]);
    assert_eq!((inv.numel(), c.numel()), (8, 5));
    // A NaN run is as many runs.
    let nan = f64::NAN;
    let (v, _, c) =
        operators::unique_consecutive::call(&t64(&[1., nan, nan, 1.], &[4]), false, true, None)
            .unwrap();
    assert_same(&f64v(&v), &[1., nan, nan, 1.], "nan runs");
    assert_eq!(i64v(&c), vec![1, 1, 1, 1]);
    // 0-dim: one run; with a dim, torch's wrap error.
    let s = Tensor::scalar_tensor(2.5, ScalarType::Float).unwrap();
    let (v, inv, c) = operators::unique_consecutive::call(&s, true, true, None).unwrap();
    assert_eq!(
        (v.sizes().to_vec(), inv.dim(), i64v(&c)),
        (vec![1], 0, vec![1])
    );
    assert_eq!(
        msg(operators::unique_consecutive::call(
            &s,
            false,
            false,
            Some(0)
        )),
        "Dimension specified as 0 but tensor has no dimensions"
    );
    // Along dim 1 of a matrix; the output is the moved-back view of the chosen slices.
    let m = Tensor::from_slice(&[1i64, 1, 2, 3, 3, 4], &[2, 3]).unwrap();
    let (v, inv, c) = operators::unique_consecutive::call(&m, true, true, Some(1)).unwrap();
    assert_eq!(
        (v.sizes().to_vec(), v.strides().to_vec()),
        (vec![2, 2], vec![1, 2])
    );
    assert_eq!(
        v.contiguous().unwrap().to_vec::<i64>().unwrap(),
        vec![1, 2, 3, 4]
    );
    assert_eq!((i64v(&inv), i64v(&c)), (vec![0, 0, 1], vec![2, 1]));
    let (v, inv, c) =
        operators::unique_dim_consecutive::call(&m.t().unwrap(), 1, true, true).unwrap();
    assert_eq!(v.sizes().as_slice(), &[3, 2]);
    assert_eq!((i64v(&inv), i64v(&c)), (vec![0, 1], vec![1, 1]));
}

#[test]
fn unique_dim_rows_layout_and_errors() {
    let x = Tensor::from_slice(&[1i64, 2, 1, 3, 4, 3, 1, 2, 1], &[3, 3]).unwrap();
    let (v, inv, c) = operators::unique_dim::call(&x, 0, true, false, false).unwrap();
    assert_eq!(v.sizes().as_slice(), &[2, 3]);
    assert_eq!(
        v.contiguous().unwrap().to_vec::<i64>().unwrap(),
        vec![1, 2, 1, 3, 4, 3]
    );
    // Inverse and counts come back even when not asked for, as torch's.
    assert_eq!((i64v(&inv), i64v(&c)), (vec![0, 1, 0], vec![2, 1]));
    let (v, inv, c) = operators::unique_dim::call(&x, -1, true, true, true).unwrap();
    assert_eq!(
        (v.sizes().to_vec(), v.strides().to_vec()),
        (vec![3, 2], vec![1, 3])
    );
    assert_eq!(
        v.contiguous().unwrap().to_vec::<i64>().unwrap(),
        vec![1, 2, 3, 4, 1, 2]
    );
    assert_eq!((i64v(&inv), i64v(&c)), (vec![0, 1, 0], vec![2, 1]));
    // Three dims, along the middle one: torch's strides.
    let y = Tensor::arange(24, ScalarType::Long)
        .unwrap()
        .reshape(&[2, 3, 4])
        .unwrap();
    let (v, _, _) = operators::unique_dim::call(&y, 1, true, false, false).unwrap();
    assert_eq!(
        (v.sizes().to_vec(), v.strides().to_vec()),
        (vec![2, 3, 4], vec![4, 8, 1])
    );
    // Bool rows; rows with a NaN equal nothing.
    let b = Tensor::from_slice(&[true, false, true, false], &[2, 2]).unwrap();
    let (v, _, c) = operators::unique_dim::call(&b, 0, true, false, false).unwrap();
    assert_eq!(v.to_vec::<bool>().unwrap(), vec![true, false]);
    assert_eq!(i64v(&c), vec![2]);
    let n = t64(&[1., f64::NAN, 1., f64::NAN], &[2, 2]);
    let (_, inv, c) = operators::unique_dim::call(&n, 0, true, false, false).unwrap();
    assert_eq!((i64v(&inv), i64v(&c)), (vec![0, 1], vec![1, 1]));
    assert_eq!(
        msg(operators::unique_dim::call(&x, 2, true, false, false)),
        "Dimension out of range (expected to be in range of [-2, 1], but got 2)"
    );
    assert_eq!(
        msg(operators::unique_dim_consecutive::call(
            &x, -5, false, false
        )),
        "Dimension out of range (expected to be in range of [-2, 1], but got -5)"
    );
    let s = Tensor::scalar_tensor(1, ScalarType::Long).unwrap();
    assert_eq!(
        msg(operators::unique_dim::call(&s, -1, true, false, false)),
        "Dimension specified as -1 but tensor has no dimensions"
    );
}

#[test]
fn unique_refuses_complex_and_meta() {
    let c = Tensor::zeros(&[3], ScalarType::ComplexFloat).unwrap();
    assert_eq!(
        msg(operators::_unique2::call(&c, true, false, false)),
        "\"unique\" not implemented for 'ComplexFloat'"
    );
    assert_eq!(
        msg(operators::_unique::call(&c, true, false)),
        "\"unique\" not implemented for 'ComplexFloat'"
    );
    let cd = Tensor::zeros(&[3, 2], ScalarType::ComplexDouble).unwrap();
    assert_eq!(
        msg(operators::unique_dim::call(&cd, 0, true, false, false)),
        "\"unique_dim\" not implemented for 'ComplexDouble'"
    );
    assert_eq!(
        msg(operators::unique_consecutive::call(&cd, false, false, None)),
        "\"unique\" not implemented for 'ComplexDouble'"
    );
    assert_eq!(
        msg(operators::unique_consecutive::call(
            &cd,
            false,
            false,
            Some(1)
        )),
        "\"unique_dim\" not implemented for 'ComplexDouble'"
    );
    let m = meta(&[5], ScalarType::Float);
    let text = |op: &str| {
        format!("aten::{op}: attempted to run this operator with Meta tensors, but there was no fake impl or Meta kernel registered. You may have run into this message while using an operator with PT2 compilation APIs (torch.compile/torch.export); in order to use this operator with those APIs you'll need to add a fake impl. Please see the following for next steps:  https://pytorch.org/tutorials/advanced/custom_ops_landing_page.html")
    };
    assert_eq!(
        msg(operators::_unique::call(&m, true, false)),
        text("_unique")
    );
    assert_eq!(
        msg(operators::_unique2::call(&m, true, false, false)),
        text("_unique2")
    );
    assert_eq!(
        msg(operators::unique_dim::call(&m, 0, true, false, false)),
        text("unique_dim")
    );
    assert_eq!(
        msg(operators::unique_consecutive::call(
            &m,
            false,
            false,
            Some(0)
        )),
        text("unique_consecutive")
    );
    assert_eq!(
        msg(operators::unique_dim_consecutive::call(&m, 0, false, false)),
        text("unique_dim_consecutive")
    );
    let ml = meta(&[5], ScalarType::Long);
    assert_eq!(
        msg(operators::bincount::call(&ml, None, 0)),
        text("bincount")
    );
}

#[test]
fn unique_out_overloads() {
    let x = Tensor::from_slice(&[2i64, 2, 1], &[3]).unwrap();
    let (o0, o1, o2) = (
        Tensor::empty(&[0], ScalarType::Long).unwrap(),
        Tensor::empty(&[0], ScalarType::Long).unwrap(),
        Tensor::empty(&[0], ScalarType::Long).unwrap(),
    );
    operators::_unique2_out::call(&x, true, true, true, &o0, &o1, &o2).unwrap();
    assert_eq!(
        (i64v(&o0), i64v(&o1), i64v(&o2)),
        (vec![1, 2], vec![1, 1, 0], vec![1, 2])
    );
}

/// Large inputs: the pieces of the parallel grouping (and the inverse written through the
/// sort's permutation from several threads), with one thread and with several.
#[test]
fn unique_large_inputs_match_the_reference() {
    let n = 100_003usize;
    let xs: Vec<f64> = (0..n).map(|i| ((i * 7919) % 1009) as f64 - 500.0).collect();
    let x = t64(&xs, &[n as i64]).to_dtype(ScalarType::Int).unwrap();
    let mut sorted = xs.clone();
    sorted.sort_by(|a, b| a.partial_cmp(b).unwrap());
    sorted.dedup();
    let before = get_num_threads();
    for threads in [1, 4] {
        set_num_threads(threads).unwrap();
        let (v, inv, c) = operators::_unique2::call(&x, true, true, true).unwrap();
        assert_eq!(f64v(&v), sorted, "{threads} threads");
        let values = f64v(&v);
        let inv = i64v(&inv);
        assert!(inv.iter().zip(&xs).all(|(&g, &x)| values[g as usize] == x));
        let c = i64v(&c);
        assert_eq!(c.iter().sum::<i64>(), n as i64);
        for (g, &cnt) in c.iter().enumerate() {
            assert_eq!(cnt, xs.iter().filter(|&&x| x == values[g]).count() as i64);
        }
    }
    set_num_threads(before as i64).unwrap();
}

// ---------------------------------------------------------------------------------------------
// unique: properties

/// Values with many duplicates (and for floats NaN, -0.0 and infinities) in a tensor of
/// `sizes` and `dtype`, optionally seen transposed.
fn values_of(codes: &[u8], dtype: ScalarType) -> Vec<f64> {
    codes
        .iter()
        .map(|&c| match c % 12 {
            9 if dtype.is_floating_point() => f64::NAN,
            10 if dtype.is_floating_point() => -0.0,
            11 if dtype.is_floating_point() => f64::INFINITY,
            k => k as f64 - if dtype == ScalarType::Byte { 0.0 } else { 3.0 },
        })
        .collect()
}

fn all_unique_dtypes() -> Vec<ScalarType> {
    let mut v = REAL.to_vec();
    v.push(ScalarType::Bool);
    v
}

fn input(codes: &[u8], sizes: &[i64], dtype: ScalarType, transpose: bool) -> Tensor {
    let vals = values_of(codes, dtype);
    let t = t64(&vals, sizes).to_dtype(dtype).unwrap();
    if transpose && sizes.len() >= 2 {
        t.transpose(0, 1).unwrap()
    } else {
        t
    }
}

fn shape_and_codes() -> impl Strategy<Value = (Vec<i64>, Vec<u8>)> {
    prop::collection::vec(1i64..5, 0..4).prop_flat_map(|sizes| {
        let n = sizes.iter().product::<i64>() as usize;
        (Just(sizes), prop::collection::vec(0u8..12, n))
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn unique_matches_reference(
        (sizes, codes) in shape_and_codes(),
        dt in prop::sample::select(all_unique_dtypes()),
        transpose in any::<bool>(),
    ) {
        let x = input(&codes, &sizes, dt, transpose);
        let xs = f64v(&x);
        let (v, inv, c) = operators::_unique2::call(&x, true, true, true).unwrap();
        let (rv, rinv, rc) = ref_unique(&xs);
        prop_assert_eq!(v.dtype(), dt);
        assert_same(&f64v(&v), &rv, "values");
        prop_assert_eq!(inv.sizes(), x.sizes());
        prop_assert_eq!(i64v(&inv), rinv);
        prop_assert_eq!(i64v(&c), rc);

        let (v, inv, c) = operators::unique_consecutive::call(&x, true, true, None).unwrap();
        let (rv, rinv, rc) = ref_runs(&xs);
        assert_same(&f64v(&v), &rv, "runs");
        prop_assert_eq!(i64v(&inv), rinv);
        prop_assert_eq!(i64v(&c), rc);
    }

    #[test]
    fn unique_dim_matches_reference(
        (sizes, codes) in shape_and_codes().prop_filter("a dim", |(s, _)| !s.is_empty()),
        dt in prop::sample::select(all_unique_dtypes()),
        dim_pick in 0usize..4,
        consecutive in any::<bool>(),
        transpose in any::<bool>(),
    ) {
        // Few distinct values, so that whole slices repeat.
        let codes: Vec<u8> = codes.iter().map(|c| c % 3 * 4 + c % 2 * 9).collect();
        let x = input(&codes, &sizes, dt, transpose);
        let xsizes = x.sizes();
        let d = dim_pick % xsizes.len();
        let rows = slices(&f64v(&x), &xsizes, d);
        let (v, inv, c) = if consecutive {
            operators::unique_dim_consecutive::call(&x, d as i64, true, true).unwrap()
        } else {
            operators::unique_dim::call(&x, d as i64, true, true, true).unwrap()
        };
        let (reps, rinv, rc) = ref_unique_rows(&rows, consecutive);
        let mut want_sizes = xsizes.clone();
        want_sizes[d] = reps.len() as i64;
        prop_assert_eq!(v.sizes(), want_sizes.clone());
        let got_rows = slices(&f64v(&v), &want_sizes, d);
        for (g, &r) in got_rows.iter().zip(&reps) {
            assert_same(g, &rows[r], "row");
        }
        prop_assert_eq!(i64v(&inv), rinv);
        prop_assert_eq!(i64v(&c), rc);
    }
}

// ---------------------------------------------------------------------------------------------
// searchsorted / bucketize: examples

#[test]
fn searchsorted_sides_overloads_and_layouts() {
    let b = t64(&[1., 3., 5., 7., 9.], &[5]);
    let v = t64(&[3., 6., 9., 3., 6., 9.], &[2, 3]);
    let r = operators::searchsorted_Tensor::call(&b, &v, false, false, None, None).unwrap();
    assert_eq!(
        (r.sizes().to_vec(), r.dtype()),
        (vec![2, 3], ScalarType::Long)
    );
    assert_eq!(i64v(&r), vec![1, 3, 4, 1, 3, 4]);
    for (right, side) in [(true, None), (false, Some("right")), (true, Some("right"))] {
        let r = operators::searchsorted_Tensor::call(&b, &v, false, right, side, None).unwrap();
        assert_eq!(i64v(&r), vec![2, 3, 5, 2, 3, 5]);
    }
    let r = operators::searchsorted_Tensor::call(&b, &v, true, false, Some("left"), None).unwrap();
    assert_eq!(r.dtype(), ScalarType::Int);
    assert_eq!(r.to_vec::<i32>().unwrap(), vec![1, 3, 4, 1, 3, 4]);
    // N-D boundaries: one row per leading index.
    let bd = Tensor::from_slice(&[1i64, 3, 5, 2, 4, 6], &[2, 3]).unwrap();
    let vals = Tensor::from_slice(&[3i64, 6, 3, 6], &[2, 2]).unwrap();
    let r = operators::searchsorted_Tensor::call(&bd, &vals, false, false, None, None).unwrap();
    assert_eq!(i64v(&r), vec![1, 3, 1, 2]);
    // Scalars: 0-dim results.
    let r = operators::searchsorted_Scalar::call(&b, &Scalar::Int(3), false, false, None, None)
        .unwrap();
    assert_eq!((r.dim(), i64v(&r)), (0, vec![1]));
    // A non-contiguous input and boundaries give a contiguous result.
    let vt = v.t().unwrap();
    let bs = t64(&[1., 0., 3., 0., 5., 0.], &[6])
        .as_strided(&[3], &[2])
        .unwrap();
    let r = operators::searchsorted_Tensor::call(&bs, &vt, false, false, None, None).unwrap();
    assert_eq!(r.strides().as_slice(), &[2, 1]);
    assert_eq!(i64v(&r), vec![1, 1, 3, 3, 3, 3]);
    // NaN and infinities: NaN goes last.
    let nan = f64::NAN;
    let r = operators::searchsorted_Tensor::call(
        &t64(&[1., 2., nan], &[3]),
        &t64(&[nan, 3., f64::INFINITY, f64::NEG_INFINITY], &[4]),
        false,
        false,
        None,
        None,
    )
    .unwrap();
    assert_eq!(i64v(&r), vec![3, 3, 3, 0]);
    // Empty boundaries or values.
    let e = Tensor::empty(&[0], ScalarType::Double).unwrap();
    let r =
        operators::searchsorted_Tensor::call(&e, &t64(&[2., 4.], &[2]), false, false, None, None)
            .unwrap();
    assert_eq!(i64v(&r), vec![0, 0]);
    let ev = Tensor::empty(&[0, 3], ScalarType::Double).unwrap();
    let r = operators::searchsorted_Tensor::call(&b, &ev, false, false, None, None).unwrap();
    assert_eq!(r.sizes().as_slice(), &[0, 3]);
}

#[test]
fn searchsorted_sorter_and_promotion() {
    let b = t64(&[5., 1., 3.], &[3]);
    let r = operators::searchsorted_Tensor::call(
        &b,
        &t64(&[2., 4.], &[2]),
        false,
        false,
        None,
        Some(&longs(&[1, 2, 0])),
    )
    .unwrap();
    assert_eq!(i64v(&r), vec![1, 2]);
    let bd = t64(&[5., 1., 3., 2., 1., 0.], &[2, 3]);
    let sorter = Tensor::from_slice(&[1i64, 2, 0, 2, 1, 0], &[2, 3]).unwrap();
    let r = operators::searchsorted_Tensor::call(
        &bd,
        &t64(&[2., 4., 1.5, 0.], &[2, 2]),
        false,
        false,
        None,
        Some(&sorter),
    )
    .unwrap();
    assert_eq!(i64v(&r), vec![1, 2, 2, 0]);
    // A transposed sorter is copied contiguous.
    let st = Tensor::from_slice(&[1i64, 2, 2, 1, 0, 0], &[3, 2])
        .unwrap()
        .t()
        .unwrap();
    let r = operators::searchsorted_Tensor::call(
        &bd,
        &t64(&[2., 4., 1.5, 0.], &[2, 2]),
        false,
        false,
        None,
        Some(&st),
    )
    .unwrap();
    assert_eq!(i64v(&r), vec![1, 2, 2, 0]);
    // Dtypes promote as in a binary op (numbers as wrapped numbers).
    let ib = Tensor::from_slice(&[1i64, 2, 3], &[3]).unwrap();
    let r = operators::searchsorted_Tensor::call(&ib, &t64(&[2.5], &[1]), false, false, None, None)
        .unwrap();
    assert_eq!(i64v(&r), vec![2]);
    let r =
        operators::searchsorted_Scalar::call(&ib, &Scalar::Double(2.5), false, false, None, None)
            .unwrap();
    assert_eq!(i64v(&r), vec![2]);
    let i8b = Tensor::from_slice(&[1i8, 2, 3], &[3]).unwrap();
    let u8v = Tensor::from_slice(&[200u8], &[1]).unwrap();
    let r = operators::searchsorted_Tensor::call(&i8b, &u8v, false, false, None, None).unwrap();
    assert_eq!(i64v(&r), vec![3]);
    let bb = Tensor::from_slice(&[false, true, true, true], &[4]).unwrap();
    let r = operators::searchsorted_Scalar::call(&bb, &Scalar::Int(2), false, false, None, None)
        .unwrap();
    assert_eq!(i64v(&r), vec![4]);
    assert_eq!(
        msg(operators::searchsorted_Tensor::call(
            &bb, &bb, false, false, None, None
        )),
        "\"searchsorted_out_cpu\" not implemented for 'Bool'"
    );
    let cb = Tensor::zeros(&[3], ScalarType::ComplexFloat).unwrap();
    assert_eq!(
        msg(operators::searchsorted_Tensor::call(
            &cb, &cb, false, false, None, None
        )),
        "\"searchsorted_out_cpu\" not implemented for 'ComplexFloat'"
    );
}

#[test]
fn searchsorted_error_texts() {
    let b = t64(&[1., 3., 5.], &[3]);
    let v = t64(&[2.], &[1]);
    let ss = |bd: &Tensor, v: &Tensor, right: bool, side: Option<&str>, sorter: Option<&Tensor>| {
        msg(operators::searchsorted_Tensor::call(
            bd, v, false, right, side, sorter,
        ))
    };
    assert_eq!(
        ss(&b, &v, false, Some("middle"), None),
        "torch.searchsorted(): side can only be 'left' or 'right' but got middle"
    );
    assert_eq!(
        ss(&b, &v, true, Some("left"), None),
        "torch.searchsorted(): side and right can't be set to opposites, got side of left while right was True"
    );
    assert_eq!(
        ss(&b, &v, false, None, Some(&longs(&[1, 2, 3]))),
        "torch.searchsorted(): sorter index out of range"
    );
    assert_eq!(
        ss(&b, &v, false, None, Some(&longs(&[1, -2, 0]))),
        "torch.searchsorted(): sorter index out of range"
    );
    let s32 = Tensor::from_slice(&[1i32, 2, 0], &[3]).unwrap();
    assert_eq!(
        ss(&b, &v, false, None, Some(&s32)),
        "torch.searchsorted(): sorter must be a tensor of long dtype but got dtype Int"
    );
    assert_eq!(
        ss(&b, &v, false, None, Some(&longs(&[1, 0]))),
        "torch.searchsorted(): boundary and sorter must have the same size, but got boundary tensor [3]and got sorter tensor [2]"
    );
    let b2 = t64(&[1., 2., 3., 4., 5., 6.], &[2, 3]);
    assert_eq!(
        ss(&b2, &t64(&[1.; 6], &[3, 2]), false, None, None),
        "torch.searchsorted(): boundaries tensor should be 1 dimension or the first N-1 dimensions of boundaries tensor and input value tensor must match, but we got boundaries tensor [2, 3] and input value tensor [3, 2]"
    );
    assert_eq!(
        ss(&b2, &t64(&[1., 2.], &[2]), false, None, None),
        "torch.searchsorted(): boundaries tensor should be 1 dimension or the first N-1 dimensions of boundaries tensor and input value tensor must match, but we got boundaries tensor [2, 3] and input value tensor [2]"
    );
    let zero_d = Tensor::scalar_tensor(1.0, ScalarType::Double).unwrap();
    assert_eq!(
        ss(&zero_d, &v, false, None, None),
        "torch.searchsorted(): boundaries tensor should have positive dimension, but got 0 dimension"
    );
    assert_eq!(
        ss(&b2, &zero_d, false, None, None),
        "torch.searchsorted(): input value can be a scalar only when boundaries tensor dimension is 1, but we got boundaries tensor dim(2) and input value's dim(0) numel(1)"
    );
    let out_f = Tensor::empty(&[0], ScalarType::Float).unwrap();
    assert_eq!(
        msg(operators::searchsorted_Tensor_out::call(&b, &v, false, false, None, None, &out_f)),
        "torch.searchsorted(): output tensor's dtype is wrong, it can only be Int(int32) or Long(int64) depending on whether out_int32 flag is True, but we got output tensor's dtype Float and out_int32 flag is False"
    );
    let out_l = Tensor::empty(&[0], ScalarType::Long).unwrap();
    assert_eq!(
        msg(operators::searchsorted_Tensor_out::call(&b, &v, true, false, None, None, &out_l)),
        "torch.searchsorted(): output tensor's dtype is wrong, it can only be Int(int32) or Long(int64) depending on whether out_int32 flag is True, but we got output tensor's dtype Long and out_int32 flag is True"
    );
    // bucketize wants 1-D boundaries.
    assert_eq!(
        msg(operators::bucketize_Tensor::call(&v, &b2, false, false)),
        "boundaries tensor must be 1 dimension, but got dim(2)"
    );
    assert_eq!(
        msg(operators::bucketize_Tensor::call(&v, &zero_d, false, false)),
        "boundaries tensor must be 1 dimension, but got dim(0)"
    );
}

#[test]
fn searchsorted_out_and_warnings() {
    let b = t64(&[1., 3., 5., 7., 9.], &[5]);
    let v = t64(&[3., 6.], &[2]);
    // A non-contiguous out keeps its strides.
    let base = Tensor::empty(&[2, 2], ScalarType::Long).unwrap();
    let out = base.select(1, 0).unwrap();
    operators::searchsorted_Tensor_out::call(&b, &v, false, false, None, None, &out).unwrap();
    assert_eq!(out.strides().as_slice(), &[2]);
    assert_eq!(i64v(&out), vec![1, 3]);
    // Resizing an out with elements warns; the non-contiguous input warns once per process.
    let messages = std::sync::Arc::new(std::sync::Mutex::new(Vec::<String>::new()));
    let sink = messages.clone();
    with_warning_handler(
        std::sync::Arc::new(move |w: &ratten_aten::structured::Warning| {
            sink.lock().unwrap().push(w.message.clone())
        }),
        || {
            let out = Tensor::empty(&[5], ScalarType::Long).unwrap();
            operators::searchsorted_Scalar_out::call(
                &b,
                &Scalar::Int(3),
                false,
                false,
                None,
                None,
                &out,
            )
            .unwrap();
            assert_eq!((out.dim(), i64v(&out)), (0, vec![1]));
            let vt = t64(&[3., 6., 9., 3.], &[2, 2]).t().unwrap();
            operators::bucketize_Tensor::call(&vt, &b, false, false).unwrap();
            operators::bucketize_Tensor::call(&vt, &b, false, false).unwrap();
        },
    );
    let messages = messages.lock().unwrap();
    assert!(messages[0].starts_with("An output with one or more elements was resized"));
    let contiguity = messages
        .iter()
        .filter(|m| m.starts_with("torch.searchsorted(): input value tensor is non-contiguous"))
        .count();
    assert!(contiguity <= 1, "{messages:?}");
}

#[test]
fn bucketize_examples() {
    let b = t64(&[1., 3., 5., 7., 9.], &[5]);
    let v = t64(&[3., 6., 9., 3., 6., 9.], &[2, 3]);
    let r = operators::bucketize_Tensor::call(&v, &b, false, false).unwrap();
    assert_eq!(i64v(&r), vec![1, 3, 4, 1, 3, 4]);
    let r = operators::bucketize_Tensor::call(&v, &b, true, true).unwrap();
    assert_eq!(r.to_vec::<i32>().unwrap(), vec![2, 3, 5, 2, 3, 5]);
    let r = operators::bucketize_Scalar::call(
        &Scalar::Double(3.5),
        &longs(&[1, 2, 3, 4]),
        false,
        false,
    )
    .unwrap();
    assert_eq!((r.dim(), i64v(&r)), (0, vec![3]));
    let out = Tensor::empty(&[0], ScalarType::Long).unwrap();
    operators::bucketize_Tensor_out::call(&v, &b, false, false, &out).unwrap();
    assert_eq!(i64v(&out), vec![1, 3, 4, 1, 3, 4]);
    let bools = Tensor::from_slice(&[true], &[1]).unwrap();
    let r = operators::bucketize_Tensor::call(&bools, &longs(&[0, 1]), false, false).unwrap();
    assert_eq!(i64v(&r), vec![1]);
}

#[test]
fn searchsorted_and_bucketize_on_meta() {
    let b = meta(&[5], ScalarType::Float);
    let v = meta(&[2, 3], ScalarType::Float);
    let r = operators::searchsorted_Tensor::call(&b, &v, false, false, None, None).unwrap();
    assert_eq!(
        (r.sizes().to_vec(), r.dtype(), r.device()),
        (vec![2, 3], ScalarType::Long, Device::META)
    );
    let r =
        operators::searchsorted_Tensor::call(&b, &v.t().unwrap(), true, false, None, None).unwrap();
    assert_eq!(
        (r.sizes().to_vec(), r.strides().to_vec(), r.dtype()),
        (vec![3, 2], vec![2, 1], ScalarType::Int)
    );
    let r = operators::searchsorted_Scalar::call(&b, &Scalar::Int(3), false, false, None, None)
        .unwrap();
    assert_eq!((r.dim(), r.device()), (0, Device::META));
    // Torch's meta checks: leading sizes, the sorter's shape, side against right; not dtypes.
    assert!(operators::searchsorted_Tensor::call(
        &meta(&[2], ScalarType::Bool),
        &meta(&[3], ScalarType::Bool),
        false,
        false,
        Some("middle"),
        None
    )
    .is_ok());
    assert_eq!(
        msg(operators::searchsorted_Tensor::call(
            &meta(&[2, 3], ScalarType::Float),
            &meta(&[3, 3], ScalarType::Float),
            false,
            false,
            None,
            None
        )),
        "torch.searchsorted(): boundaries tensor should be 1 dimension or the first N-1 dimensions of boundaries tensor and input value tensor must match, but we got boundaries tensor [2, 3] and input value tensor [3, 3]"
    );
    assert_eq!(
        msg(operators::searchsorted_Tensor::call(
            &b,
            &v,
            false,
            false,
            None,
            Some(&meta(&[4], ScalarType::Long))
        )),
        "torch.searchsorted(): boundary and sorter must have the same size, but got boundary tensor [5] and got sorter tensor [4]"
    );
    assert_eq!(
        msg(operators::searchsorted_Tensor::call(&b, &v, false, true, Some("left"), None)),
        "torch.searchsorted(): side and right can't be set to opposites, got side of left while right was True"
    );
    // out=: resized; a dtype the result casts to safely, on the same device.
    let out = meta(&[0], ScalarType::Float);
    operators::searchsorted_Tensor_out::call(&b, &v, false, false, None, None, &out).unwrap();
    assert_eq!(out.sizes().as_slice(), &[2, 3]);
    assert_eq!(
        msg(operators::searchsorted_Tensor_out::call(
            &b,
            &v,
            false,
            false,
            None,
            None,
            &meta(&[0], ScalarType::Bool)
        )),
        "Attempting to cast from torch.int64 to out tensor with dtype torch.bool, but this can't be cast because it is not safe!"
    );
    // bucketize checks nothing on meta.
    let r = operators::bucketize_Tensor::call(&v, &meta(&[2, 2], ScalarType::Float), true, false)
        .unwrap();
    assert_eq!(
        (r.sizes().to_vec(), r.dtype()),
        (vec![2, 3], ScalarType::Int)
    );
    let r = operators::bucketize_Scalar::call(&Scalar::Int(3), &b, false, false).unwrap();
    assert_eq!((r.dim(), r.device()), (0, Device::META));
}

#[test]
fn searchsorted_large_input_runs_in_parallel() {
    let b: Vec<f64> = (0..1000).map(|i| (i / 3) as f64).collect();
    let vals: Vec<f64> = (0..5000)
        .map(|i| (i % 400) as f64 - 20.5 + (i % 2) as f64 * 0.5)
        .collect();
    let bt = t64(&b, &[1000]).to_dtype(ScalarType::Float).unwrap();
    let vt = t64(&vals, &[50, 100]).to_dtype(ScalarType::Float).unwrap();
    let before = get_num_threads();
    for threads in [1, 3] {
        set_num_threads(threads).unwrap();
        for right in [false, true] {
            let r =
                operators::searchsorted_Tensor::call(&bt, &vt, false, right, None, None).unwrap();
            let want: Vec<i64> = vals.iter().map(|&v| ref_position(&b, v, right)).collect();
            assert_eq!(i64v(&r), want);
        }
    }
    set_num_threads(before as i64).unwrap();
}

// ---------------------------------------------------------------------------------------------
// searchsorted: properties

fn sorted_rows() -> impl Strategy<Value = (Vec<i64>, Vec<u8>, Vec<u8>)> {
    // (value shape, boundary codes per row, value codes): the boundaries are 1-D (when the
    // first size is 0 here) or one row per leading index of the values.
    (prop::collection::vec(1i64..4, 1..4), 0usize..6).prop_flat_map(|(vshape, bd_len)| {
        let rows: usize = vshape[..vshape.len() - 1].iter().product::<i64>() as usize;
        let n: usize = vshape.iter().product::<i64>() as usize;
        (
            Just(vshape),
            prop::collection::vec(0u8..12, rows * bd_len),
            prop::collection::vec(0u8..12, n),
        )
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn searchsorted_matches_reference(
        (vshape, bd_codes, v_codes) in sorted_rows(),
        bd_dt in prop::sample::select(REAL.to_vec()),
        v_dt in prop::sample::select(REAL.to_vec()),
        one_row in any::<bool>(),
        right in any::<bool>(),
        use_side in any::<bool>(),
        use_sorter in any::<bool>(),
        transpose in any::<bool>(),
    ) {
        let rows: usize = vshape[..vshape.len() - 1].iter().product::<i64>() as usize;
        let bd_len = bd_codes.len() / rows.max(1);
        // Boundaries without NaN (a sorted sequence has none but at its end), sorted per row.
        let bd_vals: Vec<f64> = values_of(&bd_codes, ScalarType::Long);
        let (bd_shape, bd_vals) = if one_row {
            let mut r = bd_vals[..bd_len.min(bd_vals.len())].to_vec();
            r.sort_by(|a, b| a.partial_cmp(b).unwrap());
            (vec![r.len() as i64], r)
        } else {
            let mut all = Vec::new();
            for row in bd_vals.chunks(bd_len.max(1)).take(rows) {
                let mut r = row.to_vec();
                r.sort_by(|a, b| a.partial_cmp(b).unwrap());
                all.extend(r);
            }
            let mut s = vshape.clone();
            *s.last_mut().unwrap() = bd_len as i64;
            (s, all)
        };
        // Unsigned boundaries must stay sorted after the cast.
        let bd_vals: Vec<f64> = if bd_dt == ScalarType::Byte {
            bd_vals.iter().map(|v| v + 3.0).collect()
        } else {
            bd_vals
        };
        let bd = t64(&bd_vals, &bd_shape).to_dtype(bd_dt).unwrap();
        let v = input(&v_codes, &vshape, v_dt, false);
        let v = if transpose && vshape.len() == 2 && one_row { v.t().unwrap() } else { v };
        let vs = v.sizes();
        // The comparison happens in the promoted dtype.
        let common = ratten_aten::native::type_properties::result_type(bd.base(), v.base()).unwrap();
        let bdc = f64v(&bd.to_dtype(common).unwrap());
        let vc = f64v(&v.to_dtype(common).unwrap());
        let row_len = *bd_shape.last().unwrap() as usize;
        let inner = *vs.last().unwrap() as usize;
        let (sorter, permuted) = if use_sorter {
            // Reverse each row and pass the sorter that undoes it.
            let mut rev = Vec::new();
            let mut idx = Vec::new();
            for row in bdc.chunks(row_len.max(1)) {
                rev.extend(row.iter().rev());
                idx.extend((0..row.len() as i64).rev());
            }
            let rev_t = t64(&rev, &bd_shape).to_dtype(bd.dtype()).unwrap();
            (Some((Tensor::from_slice(&idx, &bd_shape).unwrap(), rev_t)), true)
        } else {
            (None, false)
        };
        let side = if use_side { Some(if right { "right" } else { "left" }) } else { None };
        let flag = !use_side && right;
        let (bd_arg, sorter_arg) = match &sorter {
            Some((idx, rev)) if permuted => (rev.clone(), Some(idx)),
            _ => (bd.clone(), None),
        };
        let r = operators::searchsorted_Tensor::call(&bd_arg, &v, false, flag, side, sorter_arg);
        let r = r.unwrap();
        prop_assert_eq!(r.sizes(), vs.clone());
        let want: Vec<i64> = (0..vc.len())
            .map(|i| {
                let start = if one_row { 0 } else { i / inner.max(1) * row_len };
                ref_position(&bdc[start..start + row_len], vc[i], right)
            })
            .collect();
        prop_assert_eq!(i64v(&r), want.clone());
        if one_row {
            let b = operators::bucketize_Tensor::call(&v, &bd, true, right).unwrap();
            prop_assert_eq!(b.dtype(), ScalarType::Int);
            let got: Vec<i64> = b.to_vec::<i32>().unwrap().into_iter().map(i64::from).collect();
            prop_assert_eq!(got, want);
        }
    }
}

// ---------------------------------------------------------------------------------------------
// bincount

#[test]
fn bincount_examples_and_dtypes() {
    let x = longs(&[1, 2, 1, 4]);
    let r = operators::bincount::call(&x, None, 0).unwrap();
    assert_eq!(
        (r.dtype(), i64v(&r)),
        (ScalarType::Long, vec![0, 2, 1, 0, 1])
    );
    let r = operators::bincount::call(&x, None, 7).unwrap();
    assert_eq!(i64v(&r), vec![0, 2, 1, 0, 1, 0, 0]);
    let wf = Tensor::from_slice(&[0.5f32, 1.0, 2.0, 4.0], &[4]).unwrap();
    let r = operators::bincount::call(&x, Some(&wf), 0).unwrap();
    assert_eq!(r.dtype(), ScalarType::Float);
    assert_eq!(f64v(&r), vec![0., 2.5, 1., 0., 4.]);
    // Other weights are summed as float64.
    for dt in [
        ScalarType::Long,
        ScalarType::Half,
        ScalarType::Bool,
        ScalarType::Double,
        ScalarType::BFloat16,
    ] {
        let w = t64(&[1., 0., 1., 1.], &[4]).to_dtype(dt).unwrap();
        let r = operators::bincount::call(&x, Some(&w), 0).unwrap();
        assert_eq!(r.dtype(), ScalarType::Double, "{dt:?}");
        assert_eq!(f64v(&r), vec![0., 2., 0., 0., 1.]);
    }
    for dt in INTEGRAL {
        let xi = x.to_dtype(dt).unwrap();
        assert_eq!(
            i64v(&operators::bincount::call(&xi, None, 0).unwrap()),
            vec![0, 2, 1, 0, 1]
        );
    }
    // Strided input and weights.
    let xs = longs(&[1, 9, 2, 9, 3, 9]).as_strided(&[3], &[2]).unwrap();
    let ws = t64(&[1., 0., 2., 0., 3., 0.], &[6])
        .as_strided(&[3], &[2])
        .unwrap();
    assert_eq!(
        f64v(&operators::bincount::call(&xs, Some(&ws), 0).unwrap()),
        vec![0., 1., 2., 3.]
    );
    // Empty input: minlength zeros, int64 even with weights.
    let e = Tensor::empty(&[0], ScalarType::Long).unwrap();
    let r = operators::bincount::call(&e, None, 3).unwrap();
    assert_eq!(i64v(&r), vec![0, 0, 0]);
    let r = operators::bincount::call(
        &e,
        Some(&Tensor::empty(&[0], ScalarType::Float).unwrap()),
        2,
    )
    .unwrap();
    assert_eq!((r.dtype(), i64v(&r)), (ScalarType::Long, vec![0, 0]));
    assert_eq!(
        i64v(&operators::bincount::call(&e, None, 0).unwrap()),
        Vec::<i64>::new()
    );
    // uint8 up to 255.
    let u = Tensor::from_slice(&[255u8], &[1]).unwrap();
    assert_eq!(operators::bincount::call(&u, None, 0).unwrap().numel(), 256);
}

#[test]
fn bincount_error_texts() {
    let bad = "bincount only supports 1-d non-negative integral inputs.";
    let b = |x: &Tensor, w: Option<&Tensor>, m: i64| msg(operators::bincount::call(x, w, m));
    assert_eq!(
        b(&Tensor::zeros(&[2, 2], ScalarType::Long).unwrap(), None, 0),
        bad
    );
    assert_eq!(
        b(
            &Tensor::scalar_tensor(1, ScalarType::Long).unwrap(),
            None,
            0
        ),
        bad
    );
    assert_eq!(b(&longs(&[1, -1]), None, 0), bad);
    assert_eq!(
        b(&Tensor::zeros(&[0, 2], ScalarType::Long).unwrap(), None, 0),
        bad
    );
    assert_eq!(b(&longs(&[1]), None, -1), "minlength should be >= 0");
    assert_eq!(
        b(&longs(&[i64::MAX]), None, 0),
        "maximum value of input overflowed, it should be < 9223372036854775807 but got 9223372036854775807"
    );
    let w3 = t64(&[1., 2., 3.], &[3]);
    assert_eq!(
        b(&longs(&[1, 2]), Some(&w3), 0),
        "weights should be 1-d and have the same length as input"
    );
    assert_eq!(
        b(&longs(&[1, 2]), Some(&t64(&[1., 2.], &[1, 2])), 0),
        "weights should be 1-d and have the same length as input"
    );
    for (dt, name) in [
        (ScalarType::Bool, "Bool"),
        (ScalarType::Float, "Float"),
        (ScalarType::Half, "Half"),
        (ScalarType::ComplexFloat, "ComplexFloat"),
    ] {
        let x = Tensor::zeros(&[2], dt).unwrap();
        assert_eq!(
            b(&x, None, 0),
            format!("\"bincount_cpu\" not implemented for '{name}'")
        );
    }
    // A bin count past memory is an error, not an abort.
    assert!(operators::bincount::call(&longs(&[1 << 60]), None, 0).is_err());
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 32, ..ProptestConfig::default() })]

    #[test]
    fn bincount_matches_reference(
        values in prop::collection::vec(0i64..12, 0..40),
        dt in prop::sample::select(INTEGRAL.to_vec()),
        weights in prop::option::of(prop::sample::select(vec![ScalarType::Float, ScalarType::Double, ScalarType::Int])),
        minlength in 0i64..15,
    ) {
        let x = longs(&values).to_dtype(dt).unwrap();
        let ws: Vec<f64> = (0..values.len()).map(|i| (i % 5) as f64 * 0.5).collect();
        let w = weights.map(|wd| t64(&ws, &[ws.len() as i64]).to_dtype(wd).unwrap());
        let r = operators::bincount::call(&x, w.as_ref(), minlength).unwrap();
        let wvals = w.as_ref().map(f64v);
        let nbins = if values.is_empty() {
            minlength
        } else {
            (values.iter().max().unwrap() + 1).max(minlength)
        } as usize;
        let mut want = vec![0f64; nbins];
        for (i, &v) in values.iter().enumerate() {
            want[v as usize] += wvals.as_ref().map_or(1.0, |w| w[i]);
        }
        let want_dtype = match weights {
            _ if values.is_empty() => ScalarType::Long,
            None => ScalarType::Long,
            Some(ScalarType::Float) => ScalarType::Float,
            Some(_) => ScalarType::Double,
        };
        prop_assert_eq!(r.dtype(), want_dtype);
        prop_assert_eq!(f64v(&r), want);
    }
}

// ---------------------------------------------------------------------------------------------
// histc

#[test]
fn histc_examples() {
    let x = t64(&[1., 2., 1., 2.5, 4.], &[5])
        .to_dtype(ScalarType::Float)
        .unwrap();
    let h = |x: &Tensor, bins: i64, min: f64, max: f64| {
        f64v(&operators::histc::call(x, bins, &Scalar::Double(min), &Scalar::Double(max)).unwrap())
    };
    assert_eq!(h(&x, 4, 0., 3.), vec![0., 2., 1., 1.]);
    // min == max: the data's range.
    assert_eq!(h(&x, 3, 0., 0.), vec![2., 2., 1.]);
    // One value: the range widened by one on each side.
    let c = t64(&[2., 2., 2.], &[3]);
    for dt in [
        ScalarType::Float,
        ScalarType::Double,
        ScalarType::Half,
        ScalarType::BFloat16,
    ] {
        let r = operators::histc::call(
            &c.to_dtype(dt).unwrap(),
            4,
            &Scalar::Int(0),
            &Scalar::Int(0),
        )
        .unwrap();
        assert_eq!(r.dtype(), dt);
        assert_eq!(f64v(&r), vec![0., 0., 3., 0.], "{dt:?}");
    }
    // Empty: zeros; NaN is not counted; 2-D and 0-dim inputs flatten.
    assert_eq!(
        h(&Tensor::empty(&[0], ScalarType::Float).unwrap(), 4, 0., 0.),
        vec![0.; 4]
    );
    assert_eq!(
        h(&t64(&[1., f64::NAN, 2.], &[3]), 4, 0., 3.),
        vec![0., 1., 1., 0.]
    );
    assert_eq!(
        h(&t64(&[1., 2., 3., 4.], &[2, 2]).t().unwrap(), 3, 0., 0.),
        vec![1., 1., 2.]
    );
    assert_eq!(
        h(
            &Tensor::scalar_tensor(1.5, ScalarType::Float).unwrap(),
            3,
            0.,
            0.
        ),
        vec![0., 1., 0.]
    );
    // torch's arithmetic: 0.3 lands in bin 2 of 7 over [0.1, 0.8] in float32.
    let f = Tensor::from_slice(&[0.1f32, 0.2, 0.3, 0.7], &[4]).unwrap();
    assert_eq!(h(&f, 7, 0.1, 0.8), vec![1., 1., 1., 0., 0., 0., 1.]);
    // Edges computed by linspace overflow to NaN: nothing is counted.
    let big = Tensor::from_slice(&[-3e38f32, 3e38], &[2]).unwrap();
    assert_eq!(h(&big, 4, -3e38, 3e38), vec![0.; 4]);
    // out=, also non-contiguous.
    let out = Tensor::empty(&[8], ScalarType::Float)
        .unwrap()
        .as_strided(&[4], &[2])
        .unwrap();
    operators::histc_out::call(
        &c.to_dtype(ScalarType::Float).unwrap(),
        4,
        &Scalar::Int(0),
        &Scalar::Int(0),
        &out,
    )
    .unwrap();
    assert_eq!(
        (out.strides().to_vec(), f64v(&out)),
        (vec![2], vec![0., 0., 3., 0.])
    );
}

#[test]
fn histc_counts_saturate_per_thread_as_torch() {
    // float16 / bfloat16 counts stop at 2048 / 256 within one thread's piece.
    let before = get_num_threads();
    set_num_threads(1).unwrap();
    let z = Tensor::zeros(&[1000], ScalarType::BFloat16).unwrap();
    let r = operators::histc::call(&z, 3, &Scalar::Int(-1), &Scalar::Int(1)).unwrap();
    assert_eq!(f64v(&r), vec![0., 256., 0.]);
    set_num_threads(2).unwrap();
    let r = operators::histc::call(&z, 3, &Scalar::Int(-1), &Scalar::Int(1)).unwrap();
    assert_eq!(f64v(&r), vec![0., 512., 0.]);
    let h = Tensor::zeros(&[5000], ScalarType::Half).unwrap();
    let r = operators::histc::call(&h, 3, &Scalar::Int(-1), &Scalar::Int(1)).unwrap();
    assert_eq!(f64v(&r), vec![0., 4096., 0.]);
    set_num_threads(before as i64).unwrap();
}

#[test]
fn histc_error_texts_and_dtypes() {
    let x = t64(&[1., 2., 3.], &[3])
        .to_dtype(ScalarType::Float)
        .unwrap();
    let h = |x: &Tensor, bins: i64, min: Scalar, max: Scalar| {
        msg(operators::histc::call(x, bins, &min, &max))
    };
    let (z, one) = (Scalar::Int(0), Scalar::Int(1));
    assert_eq!(
        h(&x, 0, z, z),
        "torch.histogram(): bins must be > 0, but got 0 for dimension 0"
    );
    assert_eq!(
        h(&x, -1, z, z),
        "torch.histogram(): bins must be > 0, but got -1 for dimension 0"
    );
    assert_eq!(
        h(&x, 4, Scalar::Int(3), one),
        "torch.histc: max must be larger than min"
    );
    assert_eq!(
        h(&x, 4, z, Scalar::Double(f64::INFINITY)),
        "torch.histc: range of [0, inf] is not finite"
    );
    assert_eq!(
        h(&x, 4, Scalar::Double(f64::NAN), one),
        "torch.histc: range of [nan, 1] is not finite"
    );
    assert_eq!(
        h(&t64(&[1., f64::INFINITY], &[2]), 4, z, z),
        "torch.histc: range of [1, inf] is not finite"
    );
    let with_nan = t64(&[1., f64::NAN], &[2]);
    for (dt, text) in [(ScalarType::Double, "-nan"), (ScalarType::BFloat16, "nan")] {
        assert_eq!(
            h(&with_nan.to_dtype(dt).unwrap(), 4, z, z),
            format!("torch.histc: range of [{text}, {text}] is not finite")
        );
    }
    let out = Tensor::empty(&[3], ScalarType::Double).unwrap();
    assert_eq!(
        msg(operators::histc_out::call(&x, 3, &z, &z, &out)),
        "torch.histogram: input tensor and hist tensor should have the same dtype, but got input float and hist double"
    );
    for (dt, name) in [
        (ScalarType::Int, "Int"),
        (ScalarType::Long, "Long"),
        (ScalarType::Byte, "Byte"),
    ] {
        let xi = x.to_dtype(dt).unwrap();
        assert_eq!(
            h(&xi, 3, one, Scalar::Int(2)),
            format!("\"histogram_cpu\" not implemented for '{name}'")
        );
        assert_eq!(
            h(&xi, 3, z, z),
            format!("\"histogram_cpu\" not implemented for '{name}'")
        );
    }
    let b = x.to_dtype(ScalarType::Bool).unwrap();
    assert_eq!(
        h(&b, 3, z, z),
        "\"linspace_cpu\" not implemented for 'Bool'"
    );
    let c = x.to_dtype(ScalarType::ComplexFloat).unwrap();
    assert_eq!(h(&c, 3, z, z), "aminmax not implemented for ComplexFloat");
    assert_eq!(
        h(&c, 3, one, Scalar::Int(2)),
        "\"histogram_cpu\" not implemented for 'ComplexFloat'"
    );
}

#[test]
fn histc_on_meta() {
    let m = meta(&[3], ScalarType::Float);
    let (z, one) = (Scalar::Int(0), Scalar::Int(1));
    let r = operators::histc::call(&m, 100, &z, &z).unwrap();
    assert_eq!(
        (r.sizes().to_vec(), r.dtype(), r.device()),
        (vec![100], ScalarType::Float, Device::META)
    );
    // No dtype check on meta; torch's meta texts.
    let mi = meta(&[3], ScalarType::Int);
    assert_eq!(
        operators::histc::call(&mi, 5, &z, &z).unwrap().dtype(),
        ScalarType::Int
    );
    assert_eq!(
        msg(operators::histc::call(&m, 0, &z, &z)),
        "histc(): bins must be > 0, but got 0"
    );
    assert_eq!(
        msg(operators::histc::call(&m, 3, &Scalar::Int(3), &one)),
        "histc(): max must be larger than min"
    );
    assert_eq!(
        msg(operators::histc_out::call(
            &m,
            3,
            &z,
            &z,
            &meta(&[0], ScalarType::Double)
        )),
        "Expected out tensor to have dtype torch.float32 but got torch.float64 instead"
    );
    let out = meta(&[8], ScalarType::Float)
        .as_strided(&[4], &[2])
        .unwrap();
    operators::histc_out::call(&m, 4, &z, &z, &out).unwrap();
    assert_eq!(out.strides().as_slice(), &[2]);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 32, ..ProptestConfig::default() })]

    #[test]
    fn histc_matches_reference(
        codes in prop::collection::vec(0u16..1000, 0..300),
        bins in 1i64..12,
        range in prop::option::of((-2i32..6, 1i32..8)),
        double in any::<bool>(),
    ) {
        let xs: Vec<f64> = codes.iter().map(|&c| c as f64 / 100.0 - 1.0).collect();
        let dt = if double { ScalarType::Double } else { ScalarType::Float };
        let x = t64(&xs, &[xs.len() as i64]).to_dtype(dt).unwrap();
        let (min, max) = match range {
            Some((lo, w)) => (lo as f64, (lo + w) as f64),
            None => (0.0, 0.0),
        };
        let r = operators::histc::call(&x, bins, &Scalar::Double(min), &Scalar::Double(max)).unwrap();
        let xv = f64v(&x);
        let (mut lo, mut hi) = (min, max);
        if lo == hi && !xv.is_empty() {
            lo = xv.iter().cloned().fold(f64::INFINITY, f64::min);
            hi = xv.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
        }
        if lo == hi {
            lo -= 1.0;
            hi += 1.0;
        }
        let mut want = vec![0f64; bins as usize];
        for &v in &xv {
            // The division may round to `bins` at the right edge, which joins the last bin.
            let pos = if double {
                if !(v >= lo && v <= hi) { continue; }
                ((v - lo) * bins as f64 / (hi - lo)) as usize
            } else {
                let (v, l, h) = (v as f32, lo as f32, hi as f32);
                if !(v >= l && v <= h) { continue; }
                ((v - l) * bins as f32 / (h - l)) as usize
            };
            want[pos.min(bins as usize - 1)] += 1.0;
        }
        prop_assert_eq!(f64v(&r), want);
    }
}
