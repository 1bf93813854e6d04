//! FunctionsManual's helpers against references: central finite differences in float64 of
//! the forward operator each helper differentiates (a vector-Jacobian product for backward
//! helpers, a Jacobian-vector product for `_jvp` ones), or values computed by hand.

use crate::common::values;
use ratten_aten::functions as F;
use ratten_aten::native::Layout;
use ratten_aten::Tensor;
use ratten_autograd::functions_manual as fm;
use ratten_core::{Result, Scalar, ScalarType, TensorOptions};

const EPS: f64 = 1e-6;

fn t(data: &[f64], sizes: &[i64]) -> Tensor {
    Tensor::from_vec(data.to_vec(), sizes).unwrap()
}

/// Deterministic values in [-1, 1) away from 0 (|v| >= 0.1), for inputs where a zero would
/// sit on a kink.
fn rand(sizes: &[i64], seed: u64) -> Tensor {
    let n: i64 = sizes.iter().product();
    let mut s = seed
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    let data: Vec<f64> = (0..n)
        .map(|_| {
            s = s
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            let u = ((s >> 11) as f64) / ((1u64 << 53) as f64); // [0, 1)
            let v = 0.1 + 0.9 * u;
            if (s >> 7) & 1 == 0 {
                v
            } else {
                -v
            }
        })
        .collect();
    t(&data, sizes)
}

fn positive(sizes: &[i64], seed: u64) -> Tensor {
    F::add_scalar(&F::abs(&rand(sizes, seed)).unwrap(), 0.2).unwrap()
}

#[track_caller]
fn assert_close(actual: &Tensor, expected: &Tensor, tol: f64) {
    assert_eq!(
        actual.sizes().to_vec(),
        expected.sizes().to_vec(),
        "shapes differ"
    );
    let (a, e) = (values(actual), values(expected));
    for (i, (x, y)) in a.iter().zip(&e).enumerate() {
        let same = (x.is_nan() && y.is_nan()) || (x - y).abs() <= tol * (1.0 + y.abs());
        assert!(
            same,
            "element {i}: {x} vs {y}\nactual {a:?}\nexpected {e:?}"
        );
    }
}

/// `grad . d f(x) / dx` by central differences, one input element at a time.
fn numeric_vjp(f: &dyn Fn(&Tensor) -> Result<Tensor>, x: &Tensor, grad: &Tensor) -> Tensor {
    let base = values(x);
    let g = values(grad);
    let sizes = x.sizes().to_vec();
    let mut out = vec![0.0; base.len()];
    for i in 0..base.len() {
        let mut p = base.clone();
        p[i] += EPS;
        let mut m = base.clone();
        m[i] -= EPS;
        let fp = values(&f(&t(&p, &sizes)).unwrap());
        let fm_ = values(&f(&t(&m, &sizes)).unwrap());
        assert_eq!(fp.len(), g.len(), "grad must have the output's numel");
        out[i] = fp
            .iter()
            .zip(&fm_)
            .zip(&g)
            .map(|((a, b), gi)| gi * (a - b) / (2.0 * EPS))
            .sum();
    }
    t(&out, &sizes)
}

/// `d f(x + e v) / de` at 0 by central differences.
fn numeric_jvp(f: &dyn Fn(&Tensor) -> Result<Tensor>, x: &Tensor, v: &Tensor) -> Tensor {
    let plus = f(&F::add(x, &F::mul_scalar(v, EPS).unwrap()).unwrap()).unwrap();
    let minus = f(&F::sub(x, &F::mul_scalar(v, EPS).unwrap()).unwrap()).unwrap();
    F::div_scalar(&F::sub(&plus, &minus).unwrap(), 2.0 * EPS).unwrap()
}

fn shape(x: &Tensor) -> Vec<i64> {
    x.sizes().to_vec()
}

fn long(data: &[i64], sizes: &[i64]) -> Tensor {
    Tensor::from_vec(data.to_vec(), sizes).unwrap()
}

fn boolean(data: &[bool], sizes: &[i64]) -> Tensor {
    Tensor::from_vec(data.to_vec(), sizes).unwrap()
}

const TOL: f64 = 1e-6;

// ------------------------------------------------------------------------------------------
// Plumbing and shapes
// ------------------------------------------------------------------------------------------

#[test]
fn handle_r_to_c_keeps_real_gradients() {
    let g = rand(&[3], 1);
    assert_close(&fm::handle_r_to_c(ScalarType::Double, &g).unwrap(), &g, 0.0);
    assert_close(&fm::handle_r_to_c(ScalarType::Float, &g).unwrap(), &g, 0.0);
}

#[test]
fn maybe_multiply_skips_one() {
    let x = rand(&[2, 2], 2);
    let same = fm::maybe_multiply(&x, &Scalar::from(1.0)).unwrap();
    assert!(same.storage().is_alias_of(&x.storage()));
    let same = fm::maybe_multiply(&x, &Scalar::from(1i64)).unwrap();
    assert!(same.storage().is_alias_of(&x.storage()));
    let twice = fm::maybe_multiply(&x, &Scalar::from(2.5)).unwrap();
    assert_close(&twice, &F::mul_scalar(&x, 2.5).unwrap(), 0.0);
}

#[test]
fn sum_to_reduces_leading_and_size_one_dims() {
    let x = t(&(0..24).map(f64::from).collect::<Vec<_>>(), &[2, 3, 4]);
    let r = fm::sum_to(&x, &[3, 1]).unwrap();
    // sum over dim 0 and dim 2 of arange(24).view(2, 3, 4)
    assert_close(&r, &t(&[60.0, 92.0, 124.0], &[3, 1]), 0.0);
    assert_close(&fm::sum_to(&x, &[]).unwrap(), &t(&[276.0], &[]), 0.0);
    assert_close(&fm::sum_to(&x, &[2, 3, 4]).unwrap(), &x, 0.0);
    let e = fm::sum_to(&x, &[5]).unwrap_err();
    assert!(e.message().contains("cannot be summed"), "{}", e.message());
}

#[test]
fn unsqueeze_to_variants() {
    let g = rand(&[3], 3);
    assert_eq!(shape(&fm::unsqueeze_to(&g, &[1, 3, 1]).unwrap()), [1, 3, 1]);
    assert_eq!(
        shape(&fm::unsqueeze_to_dim(&g, -1, &[3, 1]).unwrap()),
        [3, 1]
    );
    // a dim whose size is not 1 was not squeezed: nothing to restore
    assert_eq!(shape(&fm::unsqueeze_to_dim(&g, 0, &[3]).unwrap()), [3]);
    assert_eq!(
        shape(&fm::unsqueeze_to_dims(&g, &[0, 2], &[1, 3, 1]).unwrap()),
        [1, 3, 1]
    );
    assert_eq!(
        shape(&fm::unsqueeze_to_dims(&g, &[0], &[1, 3, 1]).unwrap()),
        [1, 3]
    );
}

#[test]
fn unsqueeze_multiple_and_its_errors() {
    let g = rand(&[2, 3], 4);
    assert_eq!(
        shape(&fm::unsqueeze_multiple(&g, Some(&[0, 2]), 4).unwrap()),
        [1, 2, 1, 3]
    );
    assert_eq!(
        shape(&fm::unsqueeze_multiple(&g, Some(&[-1]), 3).unwrap()),
        [2, 3, 1]
    );
    assert_eq!(
        shape(&fm::unsqueeze_multiple(&g, Some(&[]), 2).unwrap()),
        [2, 3]
    );
    let s = rand(&[], 5);
    assert_eq!(shape(&fm::unsqueeze_multiple(&s, None, 2).unwrap()), [1, 1]);
    let e = fm::unsqueeze_multiple(&g, Some(&[1, -3]), 4).unwrap_err();
    assert_eq!(
        e.message(),
        "dim 1 appears multiple times in the list of dims"
    );
}

#[test]
fn restore_reduced_dims_and_scale_grad_by_count() {
    let out = rand(&[2, 3], 6);
    assert_eq!(
        shape(&fm::restore_reduced_dims(&out, &[1, -1], false).unwrap()),
        [2, 1, 3, 1]
    );
    assert_eq!(
        shape(&fm::restore_reduced_dims(&out, &[1], true).unwrap()),
        [2, 3]
    );
    let grad = t(&[6.0], &[1, 1]);
    let mask = boolean(&[true, false, true, true], &[2, 2]);
    let r = fm::scale_grad_by_count(&grad, &mask, &[0, 1]).unwrap();
    assert_close(&r, &t(&[2.0, 0.0, 2.0, 2.0], &[2, 2]), 0.0);
}

#[test]
fn safe_size_permute_reverse() {
    assert_eq!(fm::_safe_size(&[2, 3, 4], &[0, -1]).unwrap(), 8);
    assert_eq!(fm::_safe_size(&[], &[0]).unwrap(), 1);
    assert_eq!(fm::reverse_list(&[1, 2, 3]).unwrap(), vec![3, 2, 1]);
    let x = rand(&[2, 3, 4], 7);
    let grad = rand(&[4, 2, 3], 8);
    let dims = [2, 0, -2];
    let expected = numeric_vjp(&|x| F::permute(x, &dims), &x, &grad);
    assert_close(
        &fm::permute_backwards(&grad, &dims).unwrap(),
        &expected,
        TOL,
    );
    let r = fm::reverse_dim(&t(&[1.0, 2.0, 3.0, 4.0], &[2, 2]), 1).unwrap();
    assert_close(&r, &t(&[2.0, 1.0, 4.0, 3.0], &[2, 2]), 0.0);
}

// ------------------------------------------------------------------------------------------
// Reductions
// ------------------------------------------------------------------------------------------

#[test]
fn sum_and_mean_backward() {
    let x = rand(&[2, 3, 2], 10);
    for (dims, keepdim) in [(vec![1], false), (vec![0, 2], true), (vec![-1, 0], false)] {
        let f = |x: &Tensor| F::sum_dim_int_list_with(x, Some(&dims), keepdim, None);
        let grad = rand(&shape(&f(&x).unwrap()), 11);
        let expected = numeric_vjp(&f, &x, &grad);
        let r = fm::sum_backward(&grad, &shape(&x), Some(&dims), keepdim).unwrap();
        assert_close(&r, &expected, TOL);
        let f = |x: &Tensor| F::mean_dim_with(x, Some(&dims), keepdim, None);
        let expected = numeric_vjp(&f, &x, &grad);
        let r = fm::mean_backward(&grad, &shape(&x), Some(&dims), x.numel(), keepdim).unwrap();
        assert_close(&r, &expected, TOL);
    }
    // every dimension
    let grad = rand(&[], 12);
    let expected = numeric_vjp(&|x| F::mean(x), &x, &grad);
    let r = fm::mean_backward(&grad, &shape(&x), None, x.numel(), false).unwrap();
    assert_close(&r, &expected, TOL);
    let r = fm::sum_backward(&grad, &shape(&x), None, false).unwrap();
    assert_close(&r, &numeric_vjp(&|x| F::sum(x), &x, &grad), TOL);
}

#[test]
fn nansum_backward_is_zero_at_nans() {
    let x = t(&[1.0, f64::NAN, -2.0, 3.0], &[2, 2]);
    let grad = t(&[2.0, 5.0], &[2]);
    let r = fm::nansum_backward(&grad, &x, Some(&[1]), false).unwrap();
    assert_close(&r, &t(&[2.0, 0.0, 5.0, 5.0], &[2, 2]), 0.0);
}

#[test]
fn var_and_std_backward() {
    let x = rand(&[3, 4], 13);
    for (dim, correction, keepdim) in [
        (Some(vec![1]), Some(Scalar::from(1)), false),
        (Some(vec![0]), Some(Scalar::from(0)), true),
        (Some(vec![0, 1]), None, false),
        (None, Some(Scalar::from(2)), false),
    ] {
        let (d, c) = (dim.as_deref(), correction);
        let fv = |x: &Tensor| F::var_correction_with(x, d, c, keepdim);
        let grad = rand(&shape(&fv(&x).unwrap()), 14);
        let expected = numeric_vjp(&fv, &x, &grad);
        let r = fm::var_backward(&grad, &x, d, c.as_ref(), keepdim).unwrap();
        assert_close(&r, &expected, 1e-5);
        let fs = |x: &Tensor| F::std_correction_with(x, d, c, keepdim);
        let expected = numeric_vjp(&fs, &x, &grad);
        let result = fs(&x).unwrap();
        let r = fm::std_backward(&result, &grad, &x, d, c.as_ref(), keepdim).unwrap();
        assert_close(&r, &expected, 1e-5);
    }
}

#[test]
fn var_backward_without_degrees_of_freedom() {
    // n == correction: 2 / (n - correction) is infinite
    let x = t(&[3.0], &[1]);
    let grad = t(&[1.0], &[]);
    let r = fm::var_backward(&grad, &x, None, None, false).unwrap();
    assert!(values(&r)[0].is_nan()); // x equals its mean: inf * 0
    let x = t(&[1.0, 2.0], &[2]);
    let r = fm::var_backward(&grad, &x, None, Some(&Scalar::from(2)), false).unwrap();
    assert_eq!(values(&r), vec![f64::INFINITY, f64::INFINITY]);
}

#[test]
fn var_mean_and_std_mean_backward() {
    let x = rand(&[2, 3], 15);
    let dims = [1i64];
    let c = Scalar::from(1);
    let gvar = rand(&[2], 16);
    let gmean = rand(&[2], 17);
    let var_part = fm::var_backward(&gvar, &x, Some(&dims), Some(&c), false).unwrap();
    let mean_part = fm::mean_backward(&gmean, &[2, 3], Some(&dims), 6, false).unwrap();
    let both = fm::var_mean_backward(Some(&gvar), Some(&gmean), &x, Some(&dims), Some(&c), false)
        .unwrap()
        .unwrap();
    assert_close(&both, &F::add(&var_part, &mean_part).unwrap(), TOL);
    let only_mean = fm::var_mean_backward(None, Some(&gmean), &x, Some(&dims), Some(&c), false)
        .unwrap()
        .unwrap();
    assert_close(&only_mean, &mean_part, TOL);
    assert!(
        fm::var_mean_backward(None, None, &x, Some(&dims), Some(&c), false)
            .unwrap()
            .is_none()
    );
    let std = F::std_correction_with(&x, Some(&dims), Some(c), false).unwrap();
    let std_part = fm::std_backward(&std, &gvar, &x, Some(&dims), Some(&c), false).unwrap();
    let both = fm::std_mean_backward(
        Some(&gvar),
        Some(&gmean),
        &x,
        &std,
        Some(&dims),
        Some(&c),
        false,
    )
    .unwrap()
    .unwrap();
    assert_close(&both, &F::add(&std_part, &mean_part).unwrap(), TOL);
    let only_std = fm::std_mean_backward(Some(&gvar), None, &x, &std, Some(&dims), Some(&c), false)
        .unwrap()
        .unwrap();
    assert_close(&only_std, &std_part, TOL);
}

#[test]
fn evenly_distribute_backward_shares_ties() {
    let x = t(&[1.0, 3.0, 3.0, 2.0], &[4]);
    let r = fm::evenly_distribute_backward(&t(&[4.0], &[]), &x, &t(&[3.0], &[])).unwrap();
    assert_close(&r, &t(&[0.0, 2.0, 2.0, 0.0], &[4]), 0.0);
    let x = t(&[1.0, f64::NAN, 2.0], &[3]);
    let r = fm::evenly_distribute_backward(&t(&[4.0], &[]), &x, &t(&[f64::NAN], &[])).unwrap();
    assert_close(&r, &t(&[0.0, 4.0, 0.0], &[3]), 0.0);
}

#[test]
fn aminmax_backward_shares_ties() {
    let x = t(&[1.0, 5.0, 1.0, 4.0, 2.0, 4.0], &[2, 3]);
    let (mn, mx) = F::aminmax_with(&x, Some(1), false).unwrap();
    let gmin = t(&[2.0, 3.0], &[2]);
    let gmax = t(&[10.0, 20.0], &[2]);
    let r = fm::aminmax_backward(&x, Some(1), false, Some(&gmin), Some(&gmax), &mn, &mx)
        .unwrap()
        .unwrap();
    assert_close(&r, &t(&[1.0, 10.0, 1.0, 10.0, 3.0, 10.0], &[2, 3]), 0.0);
    let r = fm::aminmax_backward(&x, Some(1), false, None, Some(&gmax), &mn, &mx)
        .unwrap()
        .unwrap();
    assert_close(&r, &t(&[0.0, 10.0, 0.0, 10.0, 0.0, 10.0], &[2, 3]), 0.0);
    let (mn, mx) = F::aminmax(&x).unwrap();
    let r = fm::aminmax_backward(&x, None, false, Some(&t(&[4.0], &[])), None, &mn, &mx)
        .unwrap()
        .unwrap();
    assert_close(&r, &t(&[2.0, 0.0, 2.0, 0.0, 0.0, 0.0], &[2, 3]), 0.0);
}

#[test]
fn value_selecting_reduction_backward_matches_max_dim() {
    let x = rand(&[3, 4], 18);
    for keepdim in [false, true] {
        let f = |x: &Tensor| Ok(F::max_dim_with(x, 1, keepdim)?.0);
        let (values, indices) = F::max_dim_with(&x, 1, keepdim).unwrap();
        let grad = rand(&shape(&values), 19);
        let expected = numeric_vjp(&f, &x, &grad);
        let r =
            fm::value_selecting_reduction_backward(&grad, 1, &indices, &[3, 4], keepdim).unwrap();
        assert_close(&r, &expected, TOL);
    }
}

#[test]
fn logsumexp_backward_matches_differences() {
    let x = rand(&[2, 3, 2], 20);
    for (dims, keepdim) in [(vec![1], false), (vec![0, 2], true)] {
        let f = |x: &Tensor| F::logsumexp_with(x, &dims, keepdim);
        let result = f(&x).unwrap();
        let grad = rand(&shape(&result), 21);
        let expected = numeric_vjp(&f, &x, &grad);
        let r = fm::logsumexp_backward(&grad, &x, &result, &dims, keepdim).unwrap();
        assert_close(&r, &expected, TOL);
    }
}

#[test]
fn prod_backward_with_and_without_zeros() {
    let grad = t(&[1.5], &[]);
    for data in [
        vec![0.5, -2.0, 1.5, 3.0],
        vec![0.5, 0.0, 1.5, 3.0],
        vec![0.0, 0.0, 1.5, 3.0],
    ] {
        let x = t(&data, &[2, 2]);
        let result = F::prod(&x).unwrap();
        let expected = numeric_vjp(&|x| F::prod(x), &x, &grad);
        assert_close(
            &fm::prod_backward(&grad, &x, &result).unwrap(),
            &expected,
            TOL,
        );
        for (dim, keepdim) in [(0, false), (-1, true)] {
            let f = |x: &Tensor| F::prod_dim_int_with(x, dim, keepdim, None);
            let result = f(&x).unwrap();
            let g = rand(&shape(&result), 22);
            let expected = numeric_vjp(&f, &x, &g);
            let r = fm::prod_backward_dim(&g, &x, &result, dim, keepdim).unwrap();
            assert_close(&r, &expected, TOL);
        }
    }
    let s = t(&[2.0], &[]);
    assert_close(&fm::prod_backward(&grad, &s, &s).unwrap(), &grad, 0.0);
    let x = t(&[2.0, 0.0, 3.0], &[3]);
    let r = fm::prod_safe_zeros_backward(&t(&[1.0], &[1]), &x, 0).unwrap();
    assert_close(&r, &t(&[0.0, 6.0, 0.0], &[3]), 0.0);
}

#[test]
fn norm_backward_for_each_order() {
    let x = rand(&[2, 3], 23);
    for p in [2.0, 1.0, 3.0, 1.5, 0.5, f64::INFINITY] {
        let ps = Scalar::from(p);
        let f = |x: &Tensor| F::norm_scalar_with(x, ps);
        let result = f(&x).unwrap();
        let grad = t(&[0.7], &[]);
        let expected = numeric_vjp(&f, &x, &grad);
        let r = fm::norm_backward(&grad, &x, Some(&ps), &result)
            .unwrap()
            .unwrap();
        assert_close(&r, &expected, 1e-5);
        for (dims, keepdim) in [(vec![1], false), (vec![0], true)] {
            let f = |x: &Tensor| F::norm_scalar_opt_dim_with(x, Some(ps), &dims, keepdim);
            let result = f(&x).unwrap();
            let grad = rand(&shape(&result), 24);
            let expected = numeric_vjp(&f, &x, &grad);
            let r = fm::norm_backward_dim(&grad, &x, Some(&ps), &result, &dims, keepdim)
                .unwrap()
                .unwrap();
            assert_close(&r, &expected, 1e-5);
            let f = |x: &Tensor| F::linalg_vector_norm_with(x, ps, Some(&dims), keepdim, None);
            let result = f(&x).unwrap();
            let expected = numeric_vjp(&f, &x, &grad);
            let r = fm::linalg_vector_norm_backward(&grad, &x, &ps, &result, Some(&dims), keepdim)
                .unwrap()
                .unwrap();
            assert_close(&r, &expected, 1e-5);
        }
    }
    // p = 0 counts nonzeros: piecewise constant, no gradient
    let zero = Scalar::from(0.0);
    let result = F::norm_scalar_with(&x, zero).unwrap();
    assert!(fm::norm_backward(&t(&[1.0], &[]), &x, Some(&zero), &result)
        .unwrap()
        .is_none());
    // the 2-norm of zeros has the subgradient 0
    let z = t(&[0.0, 0.0], &[2]);
    let r = fm::norm_backward(&t(&[1.0], &[]), &z, None, &t(&[0.0], &[]))
        .unwrap()
        .unwrap();
    assert_close(&r, &z, 0.0);
    // linalg_vector_norm over every dimension
    let two = Scalar::from(2.0);
    let result = F::linalg_vector_norm_with(&x, two, None, false, None).unwrap();
    let grad = t(&[1.3], &[]);
    let expected = numeric_vjp(
        &|x| F::linalg_vector_norm_with(x, two, None, false, None),
        &x,
        &grad,
    );
    let r = fm::linalg_vector_norm_backward(&grad, &x, &two, &result, None, false)
        .unwrap()
        .unwrap();
    assert_close(&r, &expected, 1e-5);
}

// ------------------------------------------------------------------------------------------
// Scans
// ------------------------------------------------------------------------------------------

#[test]
fn cumsum_backward_matches_differences() {
    let x = rand(&[3, 4], 25);
    for dim in [0, 1, -1] {
        let grad = rand(&[3, 4], 26);
        let expected = numeric_vjp(&|x| F::cumsum(x, dim), &x, &grad);
        assert_close(&fm::cumsum_backward(&grad, dim).unwrap(), &expected, TOL);
    }
    let one = t(&[2.0], &[1]);
    assert_close(&fm::cumsum_backward(&one, 0).unwrap(), &one, 0.0);
}

#[test]
fn cumprod_backward_with_and_without_zeros() {
    for data in [
        vec![0.5, -2.0, 1.5, 3.0, 0.7, -0.3],
        vec![0.5, 0.0, 1.5, 3.0, 0.0, -0.3],
        vec![0.0, 0.0, 1.5, 3.0, 0.7, 0.0],
    ] {
        let x = t(&data, &[2, 3]);
        for dim in [0, 1] {
            let result = F::cumprod(&x, dim).unwrap();
            let grad = rand(&[2, 3], 27);
            let expected = numeric_vjp(&|x| F::cumprod(x, dim), &x, &grad);
            let r = fm::cumprod_backward(&grad, &x, dim, &result).unwrap();
            assert_close(&r, &expected, TOL);
        }
    }
}

#[test]
fn cummaxmin_backward_matches_differences() {
    let x = rand(&[3, 4], 28);
    for dim in [0, 1] {
        let grad = rand(&[3, 4], 29);
        let (_, idx) = F::cummax(&x, dim).unwrap();
        let expected = numeric_vjp(&|x| Ok(F::cummax(x, dim)?.0), &x, &grad);
        assert_close(
            &fm::cummaxmin_backward(&grad, &x, &idx, dim).unwrap(),
            &expected,
            TOL,
        );
        let (_, idx) = F::cummin(&x, dim).unwrap();
        let expected = numeric_vjp(&|x| Ok(F::cummin(x, dim)?.0), &x, &grad);
        assert_close(
            &fm::cummaxmin_backward(&grad, &x, &idx, dim).unwrap(),
            &expected,
            TOL,
        );
    }
    let empty = t(&[], &[0]);
    let r = fm::cummaxmin_backward(&empty, &empty, &long(&[], &[0]), 0).unwrap();
    assert_eq!(shape(&r), [0]);
}

#[test]
fn logcumsumexp_backward_matches_differences() {
    let x = rand(&[3, 4], 30);
    for dim in [0, 1] {
        let result = F::logcumsumexp(&x, dim).unwrap();
        let grad = rand(&[3, 4], 31);
        let expected = numeric_vjp(&|x| F::logcumsumexp(x, dim), &x, &grad);
        let r = fm::logcumsumexp_backward(&grad, &x, &result, dim).unwrap();
        assert_close(&r, &expected, 1e-5);
    }
}

// ------------------------------------------------------------------------------------------
// Pointwise
// ------------------------------------------------------------------------------------------

#[test]
fn mul_and_div_backward() {
    let (a, b) = (rand(&[2, 3], 32), rand(&[2, 3], 33));
    let grad = rand(&[2, 3], 34);
    let st = ScalarType::Double;
    let expected = numeric_vjp(&|x| F::mul(x, &b), &a, &grad);
    assert_close(
        &fm::mul_tensor_backward(&grad, &b, st).unwrap(),
        &expected,
        TOL,
    );
    let s = Scalar::from(-1.5);
    let expected = numeric_vjp(&|x| F::mul_scalar(x, s), &a, &grad);
    assert_close(
        &fm::mul_tensor_backward_scalar(&grad, &s, st).unwrap(),
        &expected,
        TOL,
    );
    let expected = numeric_vjp(&|x| F::div(x, &b), &a, &grad);
    assert_close(
        &fm::div_tensor_self_backward(&grad, &b, st).unwrap(),
        &expected,
        TOL,
    );
    assert_close(
        &fm::div_tensor_self_backward_mode(&grad, &b, st, None).unwrap(),
        &expected,
        TOL,
    );
    let expected = numeric_vjp(&|x| F::div(&a, x), &b, &grad);
    assert_close(
        &fm::div_tensor_other_backward(&grad, &a, &b).unwrap(),
        &expected,
        TOL,
    );
    assert_close(
        &fm::div_tensor_other_backward_mode(&grad, &a, &b, None).unwrap(),
        &expected,
        TOL,
    );
    let expected = numeric_vjp(&|x| F::div_scalar(x, s), &a, &grad);
    assert_close(
        &fm::div_tensor_self_backward_scalar(&grad, &s, st).unwrap(),
        &expected,
        TOL,
    );
    assert_close(
        &fm::div_tensor_self_backward_scalar_mode(&grad, &s, st, None).unwrap(),
        &expected,
        TOL,
    );
    // a rounded quotient is piecewise constant: zeros of the input's dtype
    let z = fm::div_tensor_self_backward_mode(&grad, &b, ScalarType::Float, Some("floor")).unwrap();
    assert_eq!(z.scalar_type(), ScalarType::Float);
    assert_close(&z, &F::zeros_like(&grad).unwrap(), 0.0);
    let z = fm::div_tensor_other_backward_mode(&grad, &a, &b, Some("trunc")).unwrap();
    assert_close(&z, &F::zeros_like(&grad).unwrap(), 0.0);
    let z = fm::div_tensor_self_backward_scalar_mode(&grad, &s, st, Some("trunc")).unwrap();
    assert_close(&z, &F::zeros_like(&grad).unwrap(), 0.0);
}

#[test]
fn pow_backward_family() {
    let x = positive(&[2, 3], 35);
    let e = rand(&[2, 3], 36);
    let grad = rand(&[2, 3], 37);
    for exp in [2.0, 0.5, -1.5, 3.0] {
        let s = Scalar::from(exp);
        let expected = numeric_vjp(&|x| F::pow_tensor_scalar(x, s), &x, &grad);
        assert_close(&fm::pow_backward(&grad, &x, &s).unwrap(), &expected, 1e-5);
    }
    let zero = fm::pow_backward(&grad, &x, &Scalar::from(0)).unwrap();
    assert_close(&zero, &F::zeros_like(&x).unwrap(), 0.0);
    let expected = numeric_vjp(&|x| F::pow_tensor_tensor(x, &e), &x, &grad);
    assert_close(
        &fm::pow_backward_self(&grad, &x, &e).unwrap(),
        &expected,
        1e-5,
    );
    let result = F::pow_tensor_tensor(&x, &e).unwrap();
    let expected = numeric_vjp(&|e| F::pow_tensor_tensor(&x, e), &e, &grad);
    assert_close(
        &fm::pow_backward_exponent(&grad, &x, &e, &result).unwrap(),
        &expected,
        1e-5,
    );
    let base = Scalar::from(1.7);
    let result = F::pow_scalar(base, &e).unwrap();
    let expected = numeric_vjp(&|e| F::pow_scalar(base, e), &e, &grad);
    assert_close(
        &fm::pow_backward_exponent_scalar(&grad, &base, &e, &result).unwrap(),
        &expected,
        1e-5,
    );
    // base 0 and exponent >= 0: the derivative in the exponent is taken as 0
    let zb = t(&[0.0, 0.0], &[2]);
    let ex = t(&[0.0, 2.0], &[2]);
    let g = t(&[1.0, 1.0], &[2]);
    let r =
        fm::pow_backward_exponent(&g, &zb, &ex, &F::pow_tensor_tensor(&zb, &ex).unwrap()).unwrap();
    assert_close(&r, &t(&[0.0, 0.0], &[2]), 0.0);
    let r = fm::pow_backward_exponent_scalar(
        &g,
        &Scalar::from(0.0),
        &ex,
        &F::pow_scalar(0.0, &ex).unwrap(),
    )
    .unwrap();
    assert_close(&r, &t(&[0.0, 0.0], &[2]), 0.0);
    // exponent 0 in pow_backward_self: 0 even at a zero base
    let r = fm::pow_backward_self(&g, &zb, &t(&[0.0, 0.0], &[2])).unwrap();
    assert_close(&r, &t(&[0.0, 0.0], &[2]), 0.0);
}

#[test]
fn log1p_backward_matches_differences() {
    let x = positive(&[5], 38);
    let grad = rand(&[5], 39);
    let expected = numeric_vjp(&|x| F::log1p(x), &x, &grad);
    assert_close(&fm::log1p_backward(&grad, &x).unwrap(), &expected, 1e-5);
}

#[test]
fn clamp_backward_family() {
    let x = t(&[-2.0, -0.5, 0.3, 0.9, 2.0], &[5]);
    let grad = t(&[1.0, 2.0, 3.0, 4.0, 5.0], &[5]);
    let (lo, hi) = (Scalar::from(-1.0), Scalar::from(1.0));
    let r = fm::clamp_backward(&grad, &x, Some(&lo), Some(&hi)).unwrap();
    assert_close(&r, &t(&[0.0, 2.0, 3.0, 4.0, 0.0], &[5]), 0.0);
    let r = fm::clamp_backward(&grad, &x, Some(&lo), None).unwrap();
    assert_close(&r, &t(&[0.0, 2.0, 3.0, 4.0, 5.0], &[5]), 0.0);
    let r = fm::clamp_backward(&grad, &x, None, Some(&hi)).unwrap();
    assert_close(&r, &t(&[1.0, 2.0, 3.0, 4.0, 0.0], &[5]), 0.0);
    assert_close(
        &fm::clamp_backward(&grad, &x, None, None).unwrap(),
        &grad,
        0.0,
    );

    let mn = t(&[-1.0, -1.0, 0.5, 1.0, 3.0], &[5]);
    let mx = t(&[1.0, 1.0, 1.0, 0.5, 2.5], &[5]);
    let r = fm::clamp_backward_tensor(&grad, &x, Some(&mn), Some(&mx)).unwrap();
    let expected = numeric_vjp(
        &|x| F::clamp_tensor_with(x, Some(&mn), Some(&mx)),
        &x,
        &grad,
    );
    assert_close(&r, &expected, TOL);
    let r = fm::clamp_backward_tensor(&grad, &x, Some(&mn), None).unwrap();
    let expected = numeric_vjp(&|x| F::clamp_tensor_with(x, Some(&mn), None), &x, &grad);
    assert_close(&r, &expected, TOL);
    let r = fm::clamp_backward_tensor(&grad, &x, None, Some(&mx)).unwrap();
    let expected = numeric_vjp(&|x| F::clamp_tensor_with(x, None, Some(&mx)), &x, &grad);
    assert_close(&r, &expected, TOL);

    let (gmin, gmax) =
        fm::clamp_backward_min_max(Some(&grad), &x, Some(&mn), Some(&mx), &[true, true]).unwrap();
    let expected_min = numeric_vjp(
        &|m| F::clamp_tensor_with(&x, Some(m), Some(&mx)),
        &mn,
        &grad,
    );
    let expected_max = numeric_vjp(
        &|m| F::clamp_tensor_with(&x, Some(&mn), Some(m)),
        &mx,
        &grad,
    );
    assert_close(&gmin.unwrap(), &expected_min, TOL);
    assert_close(&gmax.unwrap(), &expected_max, TOL);
    let (gmin, gmax) =
        fm::clamp_backward_min_max(Some(&grad), &x, Some(&mn), None, &[true, true]).unwrap();
    let expected_min = numeric_vjp(&|m| F::clamp_tensor_with(&x, Some(m), None), &mn, &grad);
    assert_close(&gmin.unwrap(), &expected_min, TOL);
    assert!(gmax.is_none());
    let (gmin, gmax) =
        fm::clamp_backward_min_max(Some(&grad), &x, Some(&mn), Some(&mx), &[false, true]).unwrap();
    assert!(gmin.is_none() && gmax.is_some());
    let none = fm::clamp_backward_min_max(None, &x, Some(&mn), Some(&mx), &[true, true]).unwrap();
    assert!(none.0.is_none() && none.1.is_none());
}

#[test]
fn masked_fill_inplace_if_safe_fills_a_copy() {
    let x = t(&[1.0, 2.0, 3.0], &[3]);
    let mask = boolean(&[false, true, false], &[3]);
    let r = fm::masked_fill_inplace_if_safe(&x, &mask, &Scalar::from(0.0)).unwrap();
    assert_close(&r, &t(&[1.0, 0.0, 3.0], &[3]), 0.0);
    assert_close(&x, &t(&[1.0, 2.0, 3.0], &[3]), 0.0);
}

// ------------------------------------------------------------------------------------------
// Matrix products
// ------------------------------------------------------------------------------------------

#[test]
fn mm_backward_row_and_column_major() {
    let a = rand(&[3, 4], 40);
    let b = rand(&[4, 2], 41);
    let grad = rand(&[3, 2], 42);
    let alpha = Scalar::from(0.5);
    let expected_a = numeric_vjp(&|x| F::mul_scalar(&F::mm(x, &b)?, alpha), &a, &grad);
    let expected_b = numeric_vjp(&|x| F::mul_scalar(&F::mm(&a, x)?, alpha), &b, &grad);
    let r = fm::mm_mat1_backward(&grad, &b, &[3, 4], &[4, 1], Layout::Strided, &alpha).unwrap();
    assert_close(&r, &expected_a, TOL);
    // mat1 column-major (strides [1, 3]): the gradient comes out column-major too
    let r = fm::mm_mat1_backward(&grad, &b, &[3, 4], &[1, 3], Layout::Strided, &alpha).unwrap();
    assert_close(&r, &expected_a, TOL);
    assert_eq!(r.strides().to_vec(), [1, 3]);
    let r = fm::mm_mat2_backward(&grad, &a, &[4, 2], &[2, 1], Layout::Strided, &alpha).unwrap();
    assert_close(&r, &expected_b, TOL);
    let r = fm::mm_mat2_backward(&grad, &a, &[4, 2], &[1, 4], Layout::Strided, &alpha).unwrap();
    assert_close(&r, &expected_b, TOL);
    assert_eq!(r.strides().to_vec(), [1, 4]);
}

// ------------------------------------------------------------------------------------------
// Shape operators
// ------------------------------------------------------------------------------------------

#[test]
fn repeat_backward_matches_differences() {
    let x = rand(&[2, 3], 43);
    for repeats in [vec![2, 1], vec![3, 2, 2], vec![1, 1], vec![2, 1, 3]] {
        let f = |x: &Tensor| x.repeat(&repeats);
        let out = f(&x).unwrap();
        let grad = rand(&shape(&out), 44);
        let expected = numeric_vjp(&f, &x, &grad);
        assert_close(
            &fm::repeat_backward(&grad, &repeats, &[2, 3]).unwrap(),
            &expected,
            TOL,
        );
    }
    let r = fm::repeat_backward(&rand(&[0, 3], 45), &[0, 1], &[2, 3]).unwrap();
    assert_close(&r, &F::zeros_like(&x).unwrap(), 0.0);
}

#[test]
fn slice_backward_wrapper_matches_differences() {
    let x = rand(&[4, 5], 46);
    for (dim, start, end, step) in [
        (1, Some(1), Some(4), 2),
        (0, None, None, 1),
        (-1, Some(-3), None, 1),
        (0, Some(2), Some(100), 3),
        (1, Some(3), Some(1), 1),
    ] {
        let f = |x: &Tensor| F::slice_with(x, dim, start, end, step);
        let out = f(&x).unwrap();
        let grad = rand(&shape(&out), 47);
        let expected = numeric_vjp(&f, &x, &grad);
        let r = fm::slice_backward_wrapper(&grad, &[4, 5], dim, start, end, step).unwrap();
        assert_close(&r, &expected, TOL);
    }
}

#[test]
fn split_and_unbind_backward() {
    let opts = TensorOptions::new().dtype(ScalarType::Double);
    let g0 = rand(&[2, 3], 48);
    let g2 = rand(&[1, 3], 49);
    let r = fm::split_with_sizes_backward(
        &[Some(g0.clone()), None, Some(g2.clone())],
        &[2, 2, 1],
        0,
        &[5, 3],
        &opts,
    )
    .unwrap();
    let zeros = F::zeros_like(&rand(&[2, 3], 0)).unwrap();
    assert_close(
        &r,
        &F::cat_with(&[g0.clone(), zeros.clone(), g2.clone()], 0).unwrap(),
        0.0,
    );
    // split(2) of 5 rows: pieces of 2, 2 and 1
    let r = fm::split_backward(
        &[Some(g0.clone()), None, Some(g2.clone())],
        2,
        -2,
        &[5, 3],
        &opts,
    )
    .unwrap();
    assert_close(&r, &F::cat_with(&[g0, zeros, g2], 0).unwrap(), 0.0);

    let a = rand(&[3], 50);
    let r = fm::unbind_backward(&[None, Some(a.clone())], 1).unwrap();
    let expected = F::stack_with(&[F::zeros_like(&a).unwrap(), a], 1).unwrap();
    assert_close(&r, &expected, 0.0);
    let e = fm::unbind_backward(&[None, None], 0).unwrap_err();
    assert!(e.message().contains("undefined"), "{}", e.message());
}

#[test]
fn cat_and_stack_backward() {
    let a = rand(&[2, 3], 51);
    let b = rand(&[2, 1], 52);
    let empty = t(&[], &[0]);
    let inputs = [a.clone(), empty.clone(), b.clone()];
    let sizes = fm::to_args_sizes(&inputs).unwrap();
    assert_eq!(sizes, vec![vec![2, 3], vec![0], vec![2, 1]]);
    let dtypes = fm::to_args_scalartypes(&inputs).unwrap();
    assert_eq!(dtypes, vec![ScalarType::Double; 3]);
    let grad = rand(&[2, 4], 53);
    let r = fm::cat_tensors_backward(&grad, &sizes, &dtypes, -1).unwrap();
    assert_eq!(r.len(), 3);
    assert_close(&r[0], &F::narrow(&grad, 1, 0, 3).unwrap(), 0.0);
    assert_eq!(shape(&r[1]), [0]);
    assert_close(&r[2], &F::narrow(&grad, 1, 3, 1).unwrap(), 0.0);

    let grad = rand(&[2, 2, 3], 54);
    let r = fm::stack_tensors_backward(&grad, 1, &[ScalarType::Double; 2]).unwrap();
    assert_close(&r[0], &F::select(&grad, 1, 0).unwrap(), 0.0);
    assert_close(&r[1], &F::select(&grad, 1, 1).unwrap(), 0.0);
}

// ------------------------------------------------------------------------------------------
// Indexing
// ------------------------------------------------------------------------------------------

#[test]
fn index_backward_accumulates_repeated_indices() {
    let x = rand(&[4, 3], 55);
    let idx = [Some(long(&[0, 2, 0], &[3])), None];
    let f = |x: &Tensor| F::index(x, &idx);
    let grad = rand(&[3, 3], 56);
    let expected = numeric_vjp(&f, &x, &grad);
    let r = fm::index_backward(&F::zeros_like(&x).unwrap(), &idx, &grad).unwrap();
    assert_close(&r, &expected, TOL);
}

#[test]
fn gather_index_select_take_backward() {
    let x = rand(&[3, 4], 57);
    let index = long(&[0, 0, 3, 1, 2, 2], &[3, 2]);
    let grad = rand(&[3, 2], 58);
    let expected = numeric_vjp(&|x| F::gather(x, 1, &index), &x, &grad);
    assert_close(
        &fm::gather_backward(&grad, &x, 1, &index, false).unwrap(),
        &expected,
        TOL,
    );
    let e = fm::gather_backward(&grad, &x, 1, &index, true).unwrap_err();
    assert!(e.message().contains("sparse"), "{}", e.message());

    let index = long(&[2, 0, 2], &[3]);
    let grad = rand(&[3, 3], 59);
    let expected = numeric_vjp(&|x| F::index_select(x, 1, &index), &x, &grad);
    assert_close(
        &fm::index_select_backward(&grad, &[3, 4], 1, &index).unwrap(),
        &expected,
        TOL,
    );

    let index = long(&[0, 11, -1, 5, 0], &[5]);
    let grad = rand(&[5], 60);
    let expected = numeric_vjp(&|x| F::take(x, &index), &x, &grad);
    assert_close(
        &fm::take_backward(&grad, &x, &index).unwrap(),
        &expected,
        TOL,
    );
}

#[test]
fn masked_backward_helpers() {
    let grad = t(&[1.0, 2.0, 3.0, 4.0], &[2, 2]);
    let mask = boolean(&[true, false, false, true], &[2, 2]);
    assert_close(
        &fm::masked_fill_backward(&grad, &mask).unwrap(),
        &t(&[5.0], &[]),
        0.0,
    );

    // masked_select broadcasts input and mask
    let x = rand(&[1, 3], 61);
    let mask = boolean(&[true, false, true, false, true, true], &[2, 3]);
    let grad = rand(&[4], 62);
    let expected = numeric_vjp(&|x| F::masked_select(x, &mask), &x, &grad);
    let r = fm::masked_select_backward(&grad, &x, &mask).unwrap();
    // the gradient has the broadcast shape; the engine sums it to the input's shape
    assert_close(&fm::sum_to(&r, &[1, 3]).unwrap(), &expected, TOL);

    let src = rand(&[2, 3], 63);
    let base = rand(&[2, 3], 64);
    let grad = rand(&[2, 3], 65);
    let expected = numeric_vjp(&|s| F::masked_scatter(&base, &mask, s), &src, &grad);
    assert_close(
        &fm::masked_scatter_backward(&grad, &mask, &[2, 3]).unwrap(),
        &expected,
        TOL,
    );
}

#[test]
fn scatter_reduce_backward_each_reduction() {
    let self_ = t(&[1.5, -0.5, 2.0, 0.7, -1.2, 0.9], &[2, 3]);
    let index = long(&[0, 2, 0, 1, 1, 2], &[2, 3]);
    for (reduce, src_data) in [
        ("sum", vec![0.3, -0.8, 1.1, 0.4, 0.6, -0.2]),
        ("mean", vec![0.3, -0.8, 1.1, 0.4, 0.6, -0.2]),
        ("prod", vec![0.3, -0.8, 1.1, 0.4, 0.6, -0.2]),
        ("prod", vec![0.0, -0.8, 1.1, 0.4, 0.0, -0.2]),
        ("amax", vec![0.3, -0.8, 2.5, 0.4, 0.6, -0.2]),
        ("amin", vec![0.3, -0.8, 1.1, 0.4, -1.5, -0.2]),
    ] {
        let src = t(&src_data, &[2, 3]);
        for include_self in [true, false] {
            let f_self =
                |s: &Tensor| F::scatter_reduce_two_with(s, 1, &index, &src, reduce, include_self);
            let f_src =
                |s: &Tensor| F::scatter_reduce_two_with(&self_, 1, &index, s, reduce, include_self);
            let result = f_self(&self_).unwrap();
            let grad = rand(&[2, 3], 66);
            let (gs, gsrc) = fm::scatter_reduce_backward(
                Some(&grad),
                &self_,
                1,
                &index,
                &src,
                reduce,
                include_self,
                &result,
            )
            .unwrap();
            assert_close(&gs.unwrap(), &numeric_vjp(&f_self, &self_, &grad), 1e-5);
            assert_close(&gsrc.unwrap(), &numeric_vjp(&f_src, &src, &grad), 1e-5);
        }
    }
    let e = fm::scatter_reduce_backward(
        Some(&self_),
        &self_,
        1,
        &index,
        &self_,
        "median",
        true,
        &self_,
    )
    .unwrap_err();
    assert_eq!(
        e.message(),
        "Expected 'reduce' to be one of 'sum', 'prod', 'mean', 'amax', 'amin' but got median."
    );
    let none =
        fm::scatter_reduce_backward(None, &self_, 1, &index, &self_, "sum", true, &self_).unwrap();
    assert!(none.0.is_none() && none.1.is_none());
}

// ------------------------------------------------------------------------------------------
// Forward mode
// ------------------------------------------------------------------------------------------

#[test]
fn amax_amin_aminmax_jvp() {
    let x = rand(&[3, 4], 70);
    let v = rand(&[3, 4], 71);
    for (dims, keepdim) in [(vec![1], false), (vec![0], true), (vec![0, 1], false)] {
        let f = |x: &Tensor| F::amax_with(x, &dims, keepdim);
        let result = f(&x).unwrap();
        let r = fm::amaxamin_jvp(&x, &v, &result, &dims, keepdim).unwrap();
        assert_close(&r, &numeric_jvp(&f, &x, &v), TOL);
    }
    // ties: the mean of the tangents
    let x = t(&[1.0, 3.0, 3.0], &[3]);
    let v = t(&[5.0, 1.0, 2.0], &[3]);
    let r = fm::amaxamin_jvp(&x, &v, &t(&[3.0], &[]), &[0], false).unwrap();
    assert_close(&r, &t(&[1.5], &[]), 0.0);
    let x = rand(&[3, 4], 72);
    let v = rand(&[3, 4], 73);
    let f = |x: &Tensor| Ok(F::aminmax_with(x, Some(0), false)?.0);
    let r = fm::aminmax_jvp(&x, &v, &f(&x).unwrap(), Some(0), false).unwrap();
    assert_close(&r, &numeric_jvp(&f, &x, &v), TOL);
    let f = |x: &Tensor| Ok(F::aminmax(x)?.1);
    let r = fm::aminmax_jvp(&x, &v, &f(&x).unwrap(), None, false).unwrap();
    assert_close(&r, &numeric_jvp(&f, &x, &v), TOL);
}

#[test]
fn evenly_read_jvp_and_gather_with_keepdimed_indices() {
    let x = t(&[1.0, 3.0, 3.0, 2.0], &[4]);
    let v = t(&[5.0, 1.0, 2.0, 7.0], &[4]);
    let r = fm::evenly_read_jvp(&v, &x, &t(&[3.0], &[])).unwrap();
    assert_close(&r, &t(&[1.5], &[]), 0.0);

    let x = rand(&[3, 4], 74);
    let v = rand(&[3, 4], 75);
    for keepdim in [false, true] {
        let (_, idx) = F::max_dim_with(&x, 1, keepdim).unwrap();
        let r = fm::gather_with_keepdimed_indices(&v, 1, &idx, keepdim).unwrap();
        let f = |x: &Tensor| Ok(F::max_dim_with(x, 1, keepdim)?.0);
        assert_close(&r, &numeric_jvp(&f, &x, &v), TOL);
    }
}

#[test]
fn clamp_jvp_matches_differences() {
    let x = t(&[-2.0, -0.5, 0.3, 0.9, 2.0], &[5]);
    let mn = t(&[-1.0, -1.0, 0.5, 1.0, 3.0], &[5]);
    let mx = t(&[1.0, 1.0, 1.0, 0.5, 2.5], &[5]);
    let (xt, mnt, mxt) = (rand(&[5], 76), rand(&[5], 77), rand(&[5], 78));
    let f = |e: f64| {
        let at = |p: &Tensor, tng: &Tensor| F::add(p, &F::mul_scalar(tng, e).unwrap()).unwrap();
        F::clamp_tensor_with(&at(&x, &xt), Some(&at(&mn, &mnt)), Some(&at(&mx, &mxt))).unwrap()
    };
    let expected = F::div_scalar(&F::sub(&f(EPS), &f(-EPS)).unwrap(), 2.0 * EPS).unwrap();
    let r = fm::clamp_jvp(&x, &xt, Some(&mn), Some(&mnt), Some(&mx), Some(&mxt)).unwrap();
    assert_close(&r, &expected, TOL);
    let r = fm::clamp_jvp(&x, &xt, Some(&mn), None, None, None).unwrap();
    let expected = numeric_jvp(&|x| F::clamp_tensor_with(x, Some(&mn), None), &x, &xt);
    assert_close(&r, &expected, TOL);
    let r = fm::clamp_jvp(&x, &xt, None, None, Some(&mx), None).unwrap();
    let expected = numeric_jvp(&|x| F::clamp_tensor_with(x, None, Some(&mx)), &x, &xt);
    assert_close(&r, &expected, TOL);
    assert_close(
        &fm::clamp_jvp(&x, &xt, None, None, None, None).unwrap(),
        &xt,
        0.0,
    );
}

#[test]
fn logsumexp_and_logcumsumexp_jvp() {
    let x = rand(&[3, 4], 79);
    let v = rand(&[3, 4], 80);
    for (dims, keepdim) in [(vec![1], false), (vec![0, 1], true)] {
        let f = |x: &Tensor| F::logsumexp_with(x, &dims, keepdim);
        let r = fm::logsumexp_jvp(&x, &v, Some(&dims), keepdim).unwrap();
        assert_close(&r, &numeric_jvp(&f, &x, &v), 1e-5);
    }
    for dim in [0, 1] {
        let f = |x: &Tensor| F::logcumsumexp(x, dim);
        let r = fm::logcumsumexp_jvp(&x, &v, dim).unwrap();
        assert_close(&r, &numeric_jvp(&f, &x, &v), 1e-5);
    }
}

#[test]
fn cumprod_jvp_with_zeros() {
    for data in [
        vec![0.5, -2.0, 1.5, 3.0, 0.7, -0.3],
        vec![0.5, 0.0, 1.5, 3.0, 0.0, -0.3],
        vec![0.0, 0.0, 1.5, 3.0, 0.7, 0.0],
    ] {
        let x = t(&data, &[2, 3]);
        let v = rand(&[2, 3], 81);
        for dim in [0, 1] {
            let result = F::cumprod(&x, dim).unwrap();
            let r = fm::cumprod_jvp(&v, &x, &result, dim).unwrap();
            assert_close(&r, &numeric_jvp(&|x| F::cumprod(x, dim), &x, &v), 1e-5);
        }
    }
    let s = t(&[0.0], &[]);
    let r = fm::cumprod_jvp(&t(&[2.0], &[]), &s, &s, 0).unwrap();
    assert_close(&r, &t(&[2.0], &[]), 0.0);
}

#[test]
fn norm_jvp_for_each_order() {
    let x = rand(&[2, 3], 82);
    let v = rand(&[2, 3], 83);
    for p in [2.0, 1.0, 3.0, 1.5, 0.5, f64::INFINITY] {
        let ps = Scalar::from(p);
        let f = |x: &Tensor| F::norm_scalar_with(x, ps);
        let r = fm::norm_jvp(&x, &v, Some(&ps), &f(&x).unwrap()).unwrap();
        // PyTorch sums over `{}` with keepdim: a [1, 1] tangent for a 0-d norm (torch's
        // forward AD then refuses it for norm.Scalar; the values are right)
        assert_eq!(shape(&r), [1, 1]);
        let r = F::reshape(&r, &[]).unwrap();
        assert_close(&r, &numeric_jvp(&f, &x, &v), 1e-5);
        for (dims, keepdim) in [(vec![1], false), (vec![0], true)] {
            let f = |x: &Tensor| F::norm_scalar_opt_dim_with(x, Some(ps), &dims, keepdim);
            let norm = f(&x).unwrap();
            let r = fm::norm_jvp_dim(&x, &v, Some(&ps), &norm, &dims, keepdim).unwrap();
            assert_close(&r, &numeric_jvp(&f, &x, &v), 1e-5);
            let f = |x: &Tensor| F::linalg_vector_norm_with(x, ps, Some(&dims), keepdim, None);
            let r = fm::linalg_vector_norm_jvp(&x, &v, &ps, &f(&x).unwrap(), Some(&dims), keepdim)
                .unwrap();
            assert_close(&r, &numeric_jvp(&f, &x, &v), 1e-5);
        }
    }
    let zero = Scalar::from(0);
    let norm = F::norm_scalar_with(&x, zero).unwrap();
    let r = fm::norm_jvp(&x, &v, Some(&zero), &norm).unwrap();
    assert_close(&r, &F::zeros_like(&norm).unwrap(), 0.0);
}

#[test]
fn scatter_reduce_jvp_each_reduction() {
    let self_ = t(&[1.5, -0.5, 2.0, 0.7, -1.2, 0.9], &[2, 3]);
    let src = t(&[0.3, -0.8, 2.5, 0.4, -1.5, -0.2], &[2, 3]);
    let index = long(&[0, 2, 0, 1, 1, 2], &[2, 3]);
    let (st, srct) = (rand(&[2, 3], 84), rand(&[2, 3], 85));
    for reduce in ["sum", "mean", "amax", "amin"] {
        for include_self in [true, false] {
            let f = |e: f64| {
                let s = F::add(&self_, &F::mul_scalar(&st, e).unwrap()).unwrap();
                let r = F::add(&src, &F::mul_scalar(&srct, e).unwrap()).unwrap();
                F::scatter_reduce_two_with(&s, 1, &index, &r, reduce, include_self).unwrap()
            };
            let expected = F::div_scalar(&F::sub(&f(EPS), &f(-EPS)).unwrap(), 2.0 * EPS).unwrap();
            let result = f(0.0);
            let r = fm::scatter_reduce_jvp(
                &self_,
                &st,
                1,
                &index,
                &src,
                &srct,
                reduce,
                include_self,
                &result,
            )
            .unwrap()
            .unwrap();
            assert_close(&r, &expected, 1e-5);
        }
    }
    let r =
        fm::scatter_reduce_jvp(&self_, &st, 1, &index, &src, &srct, "prod", true, &self_).unwrap();
    assert!(r.is_none());
}

// ------------------------------------------------------------------------------------------
// Meta tensors: shapes without data (the prod and cumprod helpers take their exact paths)
// ------------------------------------------------------------------------------------------

#[test]
fn helpers_run_on_meta() {
    let meta = ratten_core::Device::META;
    let x = F::empty_with(
        &[2, 3],
        Some(ScalarType::Double),
        None,
        Some(meta),
        None,
        None,
    )
    .unwrap();
    let g = F::empty_with(&[], Some(ScalarType::Double), None, Some(meta), None, None).unwrap();
    let r = fm::prod_backward(&g, &x, &g).unwrap();
    assert_eq!(shape(&r), [2, 3]);
    assert!(r.is_meta());
    let r = fm::cumprod_backward(&x, &x, 1, &x).unwrap();
    assert_eq!(shape(&r), [2, 3]);
    let r = fm::sum_backward(&g, &[2, 3], None, false).unwrap();
    assert_eq!(shape(&r), [2, 3]);
}

// ------------------------------------------------------------------------------------------
// ATen backward operators composed in FunctionsManual
// ------------------------------------------------------------------------------------------

#[test]
fn pointwise_backward_operators() {
    let x = rand(&[2, 3], 90);
    let grad = rand(&[2, 3], 91);
    let y = F::sigmoid(&x).unwrap();
    let expected = numeric_vjp(&|x| F::sigmoid(x), &x, &grad);
    assert_close(&fm::sigmoid_backward(&grad, &y).unwrap(), &expected, TOL);
    let y = F::tanh(&x).unwrap();
    let expected = numeric_vjp(&|x| F::tanh(x), &x, &grad);
    assert_close(&fm::tanh_backward(&grad, &y).unwrap(), &expected, TOL);
    let y = F::relu(&x).unwrap();
    let expected = numeric_vjp(&|x| F::relu(x), &x, &grad);
    let r = fm::threshold_backward(&grad, &y, &Scalar::from(0)).unwrap();
    assert_close(&r, &expected, TOL);
    let x = t(&[0.2, 0.5, 0.9, f64::NAN], &[4]);
    let g = t(&[1.0, 2.0, 3.0, 4.0], &[4]);
    let r = fm::threshold_backward(&g, &x, &Scalar::from(0.5)).unwrap();
    assert_close(&r, &t(&[0.0, 0.0, 3.0, 4.0], &[4]), 0.0);
}

#[test]
fn select_backward_matches_differences() {
    let x = rand(&[3, 4], 92);
    for (dim, index) in [(0, 1), (1, -1), (-2, 2)] {
        let f = |x: &Tensor| F::select(x, dim, index);
        let grad = rand(&shape(&f(&x).unwrap()), 93);
        let expected = numeric_vjp(&f, &x, &grad);
        let r = fm::select_backward(&grad, &[3, 4], dim, index).unwrap();
        assert_close(&r, &expected, TOL);
    }
    let e = fm::select_backward(&rand(&[4], 94), &[3, 4], 0, 3).unwrap_err();
    assert!(e.message().contains("out of range"), "{}", e.message());
}

#[test]
fn diagonal_backward_matches_differences() {
    let x = rand(&[3, 4, 2], 95);
    for (offset, dim1, dim2) in [(0, 0, 1), (1, 0, 1), (-2, 1, 0), (0, -1, 0), (1, 2, 1)] {
        let f = |x: &Tensor| F::diagonal_with(x, offset, dim1, dim2);
        let grad = rand(&shape(&f(&x).unwrap()), 96);
        let expected = numeric_vjp(&f, &x, &grad);
        let r = fm::diagonal_backward(&grad, &[3, 4, 2], offset, dim1, dim2).unwrap();
        assert_close(&r, &expected, TOL);
    }
}

#[test]
fn unfold_backward_matches_differences() {
    let x = rand(&[3, 7], 97);
    for (dim, size, step) in [(1, 3, 2), (1, 2, 3), (0, 2, 1), (-1, 7, 1), (1, 1, 1)] {
        let f = |x: &Tensor| x.unfold(dim, size, step);
        let grad = rand(&shape(&f(&x).unwrap()), 98);
        let expected = numeric_vjp(&f, &x, &grad);
        let r = fm::unfold_backward(&grad, &[3, 7], dim, size, step).unwrap();
        assert_close(&r, &expected, TOL);
    }
    let s = t(&[2.0], &[]);
    let f = |x: &Tensor| x.unfold(0, 1, 1);
    let grad = rand(&shape(&f(&s).unwrap()), 99);
    let r = fm::unfold_backward(&grad, &[], 0, 1, 1).unwrap();
    assert_close(&r, &numeric_vjp(&f, &s, &grad), TOL);
}

#[test]
fn as_strided_backward_matches_differences() {
    let x = rand(&[6], 100);
    let geometry = fm::TensorGeometry::new(&x);
    assert_eq!(geometry.sizes, [6]);
    for (size, stride, offset) in [
        (vec![2, 2], vec![2, 1], Some(1)),       // plain window
        (vec![3, 3], vec![1, 1], None),          // output overlaps itself
        (vec![2, 3, 1], vec![0, 2, 5], Some(0)), // expanded and size-1 dims
        (vec![2, 0], vec![1, 1], None),          // empty output
    ] {
        let f = |x: &Tensor| F::as_strided_with(x, &size, &stride, offset);
        let grad = rand(&shape(&f(&x).unwrap()), 101);
        let expected = numeric_vjp(&f, &x, &grad);
        let r = fm::as_strided_backward(&grad, &geometry, &size, &stride, offset).unwrap();
        assert_close(&r, &expected, TOL);
    }
    // a 2-d input viewed with an offset into its storage
    let base = rand(&[12], 102);
    let input = F::as_strided_with(&base, &[2, 3], &[4, 1], Some(2)).unwrap();
    let geometry = fm::TensorGeometry::new(&input);
    assert_eq!(geometry.storage_offset, 2);
    let grad = rand(&[3], 103);
    let r = fm::as_strided_backward(&grad, &geometry, &[3], &[2], Some(3)).unwrap();
    // output elements at storage 3, 5, 7: input (0, 1), none, (1, 1)
    let g = values(&grad);
    assert_close(&r, &t(&[0.0, g[0], 0.0, 0.0, g[2], 0.0], &[2, 3]), 0.0);
    // an input reading one element twice shares that element's gradient
    let geometry = fm::TensorGeometry {
        sizes: vec![2, 2],
        strides: vec![1, 1],
        storage_offset: 0,
    };
    let grad = t(&[6.0, 4.0], &[2]);
    let r = fm::as_strided_backward(&grad, &geometry, &[2], &[1], Some(0)).unwrap();
    // storage 0 read once (input (0,0)), storage 1 twice ((0,1) and (1,0)), storage 2 (input
    // (1,1)) not written by the output: torch gives [[6, 2], [2, 0]]
    assert_close(&r, &t(&[6.0, 2.0, 2.0, 0.0], &[2, 2]), 0.0);
}

#[test]
fn helpers_keep_the_gradient_dtype() {
    let f32 = |x: &Tensor| x.to_dtype(ScalarType::Float).unwrap();
    let x = f32(&rand(&[2, 3], 110));
    let grad = f32(&rand(&[2, 3], 111));
    let lo = Scalar::from(-0.5);
    let checks = [
        fm::clamp_backward(&grad, &x, Some(&lo), None).unwrap(),
        fm::threshold_backward(&grad, &x, &Scalar::from(0)).unwrap(),
        fm::sigmoid_backward(&grad, &x).unwrap(),
        fm::mul_tensor_backward_scalar(&grad, &Scalar::from(2), ScalarType::Float).unwrap(),
        fm::var_backward(&grad, &x, Some(&[1]), None, true).unwrap(),
        fm::pow_backward_self(&grad, &x, &x).unwrap(),
        fm::logcumsumexp_backward(&grad, &x, &F::logcumsumexp(&x, 1).unwrap(), 1).unwrap(),
        fm::unfold_backward(&grad.unfold(1, 2, 1).unwrap(), &[2, 3], 1, 2, 1).unwrap(),
        fm::select_backward(&F::select(&grad, 0, 1).unwrap(), &[2, 3], 0, 1).unwrap(),
    ];
    for (i, r) in checks.iter().enumerate() {
        assert_eq!(r.scalar_type(), ScalarType::Float, "check {i}");
    }
}
