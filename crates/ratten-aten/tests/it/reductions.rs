//! The reductions on TensorIterator's reduction mode: values against a simple reference
//! (property tests over shapes, dims, keepdim, strided and transposed inputs, dtypes and every
//! instruction set), PyTorch's dtype rules, empty and 0-dim inputs, error texts, meta, the
//! cascade's accuracy and the parallel split.

use crate::common::{msg, values as f64v};
use proptest::prelude::*;
use ratten_aten::dispatch_stub::{detected_cpu_capability, with_cpu_capability, CpuCapability};
use ratten_aten::tensor_iterator::parallel::{get_num_threads, set_num_threads};
use ratten_aten::{functions, operators, Tensor};
use ratten_core::{Device, Scalar, ScalarType};

fn f32s(v: &[f32], sizes: &[i64]) -> Tensor {
    Tensor::from_slice(v, sizes).unwrap()
}

#[test]
fn sum_mean_prod_values_and_dtypes() {
    let a = f32s(&[1., 2., 3., 4., 5., 6.], &[2, 3]);
    assert_eq!(f64v(&a.sum().unwrap()), vec![21.0]);
    let s = operators::sum_dim_IntList::call(&a, Some(&[0]), false, None).unwrap();
    assert_eq!(s.sizes().as_slice(), &[3]);
    assert_eq!(f64v(&s), vec![5., 7., 9.]);
    let s = operators::sum_dim_IntList::call(&a, Some(&[-1]), true, None).unwrap();
    assert_eq!(s.sizes().as_slice(), &[2, 1]);
    assert_eq!(f64v(&s), vec![6., 15.]);
    let m = operators::mean_dim::call(&a, Some(&[1]), false, None).unwrap();
    assert_eq!(f64v(&m), vec![2., 5.]);
    assert_eq!(f64v(&a.mean().unwrap()), vec![3.5]);
    let p = operators::prod_dim_int::call(&a, 1, false, None).unwrap();
    assert_eq!(f64v(&p), vec![6., 120.]);
    assert_eq!(f64v(&functions::prod(&a).unwrap()), vec![720.]);
    // Integer and bool sums are int64; dtype= overrides.
    let i = Tensor::from_slice(&[1i32, 2, 3], &[3]).unwrap();
    assert_eq!(i.sum().unwrap().dtype(), ScalarType::Long);
    let b = Tensor::from_slice(&[true, true, false], &[3]).unwrap();
    let bs = b.sum().unwrap();
    assert_eq!((bs.dtype(), f64v(&bs)), (ScalarType::Long, vec![2.0]));
    let d = operators::sum::call(&i, Some(ScalarType::Double)).unwrap();
    assert_eq!(d.dtype(), ScalarType::Double);
    assert_eq!(functions::prod(&i).unwrap().dtype(), ScalarType::Long);
    // Integer overflow wraps in the accumulation type, as PyTorch.
    let big = Tensor::from_slice(&[i32::MAX, 1], &[2]).unwrap();
    let w = operators::sum::call(&big, Some(ScalarType::Int)).unwrap();
    assert_eq!(w.to_vec::<i32>().unwrap(), vec![i32::MIN]);
    // mean of an integer tensor is an error.
    assert_eq!(
        msg(i.mean()),
        "mean(): could not infer output dtype. Input dtype must be either a floating point or \
         complex dtype. Got: Int"
    );
    assert_eq!(
        msg(operators::mean::call(&a, Some(ScalarType::Long))),
        "mean(): could not infer output dtype. Optional dtype must be either a floating point \
         or complex dtype. Got: Long"
    );
}

#[test]
fn empty_and_zero_dim_inputs() {
    let e = Tensor::empty(&[0, 3], ScalarType::Float).unwrap();
    assert_eq!(f64v(&e.sum().unwrap()), vec![0.0]);
    let s0 = operators::sum_dim_IntList::call(&e, Some(&[0]), false, None).unwrap();
    assert_eq!(f64v(&s0), vec![0.0; 3]);
    assert_eq!(f64v(&functions::prod(&e).unwrap()), vec![1.0]);
    assert!(f64v(&e.mean().unwrap())[0].is_nan());
    let s1 = operators::sum_dim_IntList::call(&e, Some(&[1]), false, None).unwrap();
    assert_eq!(s1.sizes().as_slice(), &[0]);
    assert_eq!(
        msg(functions::amax(&e)),
        "amax(): Expected reduction dim to be specified for input.numel() == 0. Specify the \
         reduction dim with the 'dim' argument."
    );
    assert_eq!(
        msg(operators::amax::call(&e, &[0], false)),
        "amax(): Expected reduction dim 0 to have non-zero size."
    );
    assert_eq!(
        operators::amax::call(&e, &[1], false)
            .unwrap()
            .sizes()
            .as_slice(),
        &[0]
    );
    assert_eq!(
        msg(functions::max(&e)),
        "max(): Expected reduction dim to be specified for input.numel() == 0. Specify the \
         reduction dim with the 'dim' argument."
    );
    assert_eq!(
        msg(functions::argmax(&e)),
        "argmax(): Expected reduction dim to be specified for input.numel() == 0."
    );
    assert_eq!(f64v(&functions::all(&e).unwrap()), vec![1.0]);
    assert_eq!(f64v(&functions::any(&e).unwrap()), vec![0.0]);
    // A 0-dim tensor reduces over dim 0 or -1.
    let z = Tensor::scalar_tensor(3.5, ScalarType::Float).unwrap();
    let zs = operators::sum_dim_IntList::call(&z, Some(&[0]), false, None).unwrap();
    assert_eq!((zs.dim(), f64v(&zs)), (0, vec![3.5]));
    let zk = operators::sum_dim_IntList::call(&z, Some(&[-1]), true, None).unwrap();
    assert_eq!(zk.dim(), 0);
    assert_eq!(
        msg(operators::sum_dim_IntList::call(
            &z,
            Some(&[1]),
            false,
            None
        )),
        "Dimension out of range (expected to be in range of [-1, 0], but got 1)"
    );
    let (v, i) = functions::max_dim(&z, 0).unwrap();
    assert_eq!((f64v(&v), f64v(&i)), (vec![3.5], vec![0.0]));
}

#[test]
fn dim_errors_are_torchs() {
    let a = Tensor::zeros(&[2, 3], ScalarType::Float).unwrap();
    assert_eq!(
        msg(operators::sum_dim_IntList::call(
            &a,
            Some(&[0, -2]),
            false,
            None
        )),
        "dim 0 appears multiple times in the list of dims"
    );
    assert_eq!(
        msg(operators::sum_dim_IntList::call(
            &a,
            Some(&[2]),
            false,
            None
        )),
        "Dimension out of range (expected to be in range of [-2, 1], but got 2)"
    );
    let c = Tensor::zeros(&[2], ScalarType::ComplexFloat).unwrap();
    assert_eq!(
        msg(functions::max_dim(&c, 0)),
        "max(): does not support complex input"
    );
    assert_eq!(
        msg(Tensor::zeros(&[2], ScalarType::Long)
            .unwrap()
            .var_correction()),
        "std and var only support floating point and complex dtypes"
    );
    assert_eq!(
        msg(functions::nansum(&c)),
        "nansum does not support complex inputs"
    );
    let out = Tensor::empty(&[0], ScalarType::Double).unwrap();
    assert_eq!(
        msg(operators::amax_out::call(&a, &[0], false, &out)),
        "Expected the dtype for input and out to match, but got Float for input's dtype and \
         Double for out's dtype."
    );
    let out = Tensor::empty(&[0], ScalarType::Float).unwrap();
    assert_eq!(
        msg(operators::all_all_out::call(&a, &out)),
        "all only supports bool tensor for result, got: Float"
    );
}

#[test]
fn extrema_and_indices() {
    let nan = f32::NAN;
    let a = f32s(&[1., 5., 5., 2., nan, 3., -1., 0., -1.], &[3, 3]);
    let (v, i) = functions::max_dim(&a, 1).unwrap();
    let v = f64v(&v);
    assert_eq!((v[0], v[2]), (5.0, 0.0));
    assert!(v[1].is_nan());
    assert_eq!(f64v(&i), vec![1., 1., 1.]);
    let (v, i) = functions::min_dim(&a, 1).unwrap();
    assert_eq!(f64v(&i), vec![0., 1., 0.]);
    assert!(f64v(&v)[1].is_nan());
    let am = operators::argmax::call(&a, Some(0), false).unwrap();
    assert_eq!(f64v(&am), vec![1., 1., 0.]);
    assert_eq!(f64v(&functions::argmax(&a).unwrap()), vec![4.0]);
    let k = operators::argmax::call(&a, None, true).unwrap();
    assert_eq!(k.sizes().as_slice(), &[1, 1]);
    assert!(f64v(&functions::max(&a).unwrap())[0].is_nan());
    let amx = operators::amax::call(&a, &[0], false).unwrap();
    let amx = f64v(&amx);
    assert_eq!((amx[0], amx[2]), (2.0, 5.0));
    assert!(amx[1].is_nan());
    let (lo, hi) = operators::aminmax::call(&f32s(&[3., -2., 7.], &[3]), None, false).unwrap();
    assert_eq!((f64v(&lo), f64v(&hi)), (vec![-2.0], vec![7.0]));
    let b = Tensor::from_slice(&[false, true, false], &[3]).unwrap();
    assert_eq!(
        msg(functions::argmax(&b)),
        "argmax(): does not support bool input"
    );
    assert_eq!(functions::max(&b).unwrap().dtype(), ScalarType::Bool);
    assert_eq!(f64v(&functions::max_dim(&b, 0).unwrap().1), vec![1.0]);
    // max.dim's outputs through out=.
    let (vo, io) = (
        Tensor::empty(&[0], ScalarType::Float).unwrap(),
        Tensor::empty(&[0], ScalarType::Long).unwrap(),
    );
    operators::max_dim_max::call(&a, 0, true, &vo, &io).unwrap();
    assert_eq!(io.sizes().as_slice(), &[1, 3]);
    assert_eq!(f64v(&io), vec![1., 1., 0.]);
}

#[test]
fn all_any_count_nonzero() {
    let a = Tensor::from_slice(&[1i32, 0, 3, 4], &[2, 2]).unwrap();
    let all = functions::all(&a).unwrap();
    assert_eq!((all.dtype(), f64v(&all)), (ScalarType::Bool, vec![0.0]));
    let any1 = operators::any_dim::call(&a, 1, false).unwrap();
    assert_eq!(f64v(&any1), vec![1., 1.]);
    let all0 = operators::all_dims::call(&a, Some(&[0]), true).unwrap();
    assert_eq!(
        (all0.sizes().to_vec(), f64v(&all0)),
        (vec![1i64, 2], vec![1., 0.])
    );
    let u = Tensor::from_slice(&[5u8, 0], &[2]).unwrap();
    let ua = functions::any(&u).unwrap();
    assert_eq!((ua.dtype(), f64v(&ua)), (ScalarType::Byte, vec![1.0]));
    let c = functions::count_nonzero(&a).unwrap();
    assert_eq!((c.dtype(), f64v(&c)), (ScalarType::Long, vec![3.0]));
    let c0 = operators::count_nonzero::call(&a, Some(0)).unwrap();
    assert_eq!(f64v(&c0), vec![2., 1.]);
}

#[test]
fn var_std_norm_logsumexp() {
    let a = f32s(&[1., 2., 3., 4., 6., 8.], &[2, 3]);
    let v = operators::var_correction::call(&a, Some(&[1]), None, false).unwrap();
    assert_eq!(f64v(&v), vec![1.0, 4.0]);
    let v0 = operators::var_correction::call(&a, Some(&[1]), Some(&Scalar::from(0)), true).unwrap();
    assert_eq!(v0.sizes().as_slice(), &[2, 1]);
    let want = [2.0 / 3.0, 8.0 / 3.0];
    for (x, w) in f64v(&v0).iter().zip(want) {
        assert!((x - w).abs() < 1e-6);
    }
    let s = operators::std_dim::call(&a, Some(&[1]), true, false).unwrap();
    assert_eq!(f64v(&s), vec![1.0, 2.0]);
    let (var, mean) = operators::var_mean_correction::call(&a, None, None, false).unwrap();
    assert!((f64v(&mean)[0] - 4.0).abs() < 1e-6);
    assert!((f64v(&var)[0] - 6.8).abs() < 1e-5);
    // One element with the default correction: NaN (0 / 0).
    let one = f32s(&[1.0], &[1]);
    assert!(f64v(&operators::var::call(&one, true).unwrap())[0].is_nan());
    // Complex: the variance of the real part plus that of the imaginary part, real-valued.
    let c64 = |re: f32, im: f32| ratten_core::dtype::c64::new(re, im);
    let c = Tensor::from_slice(&[c64(0., 1.), c64(2., 1.), c64(4., 4.)], &[3]).unwrap();
    let v = operators::var_correction::call(&c, None, None, false).unwrap();
    assert_eq!(v.dtype(), ScalarType::Float);
    assert!((f64v(&v)[0] - 7.0).abs() < 1e-5, "{:?}", f64v(&v));
    let (v, m) = operators::var_mean_correction::call(&c, None, None, false).unwrap();
    assert_eq!(
        (v.dtype(), m.dtype()),
        (ScalarType::Float, ScalarType::ComplexFloat)
    );
    let n =
        functions::linalg_vector_norm(&Tensor::from_slice(&[c64(3., 4.)], &[1]).unwrap()).unwrap();
    assert_eq!((n.dtype(), f64v(&n)), (ScalarType::Float, vec![5.0]));
    let n = functions::linalg_vector_norm(&f32s(&[3., -4.], &[2])).unwrap();
    assert_eq!(f64v(&n), vec![5.0]);
    for (ord, want) in [
        (0.0, 2.0),
        (1.0, 7.0),
        (f64::INFINITY, 4.0),
        (f64::NEG_INFINITY, 3.0),
    ] {
        let n = operators::linalg_vector_norm::call(
            &f32s(&[3., -4.], &[2]),
            &Scalar::from(ord),
            None,
            false,
            None,
        )
        .unwrap();
        assert_eq!(f64v(&n), vec![want], "ord {ord}");
    }
    let n3 = operators::norm_Scalar::call(&f32s(&[1., 2.], &[2]), &Scalar::from(3)).unwrap();
    assert!((f64v(&n3)[0] - 9f64.powf(1.0 / 3.0)).abs() < 1e-6);
    assert_eq!(
        msg(operators::linalg_vector_norm::call(
            &Tensor::zeros(&[2], ScalarType::Long).unwrap(),
            &Scalar::from(2),
            None,
            false,
            None
        )),
        "linalg.vector_norm: Expected a floating point or complex tensor as input. Got Long"
    );
    let l = functions::logsumexp(&f32s(&[0., 0., 1000., 1000.], &[2, 2]), &[1]).unwrap();
    let l = f64v(&l);
    assert!((l[0] - 2f64.ln()).abs() < 1e-6 && (l[1] - (1000.0 + 2f64.ln())).abs() < 1e-3);
    let li = functions::logsumexp(&Tensor::from_slice(&[1i64, 2], &[2]).unwrap(), &[0]).unwrap();
    assert_eq!(li.dtype(), ScalarType::Float);
}

#[test]
fn cascade_sum_is_accurate_and_parallel_split_agrees() {
    let n = 1 << 24;
    let ones = Tensor::ones(&[n], ScalarType::Float).unwrap();
    let threads = get_num_threads();
    for t in [1, 2] {
        set_num_threads(t).unwrap();
        assert_eq!(f64v(&ones.sum().unwrap()), vec![16777216.0], "{t} threads");
        // 0.1 is not exact in f32: a naive running sum drifts by percents, the cascade does not.
        let tenth = Tensor::full(&[n], 0.1, ScalarType::Float).unwrap();
        let s = f64v(&tenth.sum().unwrap())[0];
        let exact = n as f64 * 0.1f32 as f64;
        assert!((s - exact).abs() / exact < 1e-6, "{s} vs {exact}");
        let m = Tensor::full(&[4096, 1024], 0.1, ScalarType::Float).unwrap();
        let col = operators::sum_dim_IntList::call(&m, Some(&[0]), false, None).unwrap();
        for x in f64v(&col) {
            assert!((x - 4096.0 * 0.1f32 as f64).abs() < 1e-3, "{x}");
        }
    }
    set_num_threads(threads as i64).unwrap();
}

#[test]
fn meta_reductions_give_shapes_and_dtypes() {
    let a = Tensor::empty(&[2, 3, 4], (ScalarType::Int, Device::META)).unwrap();
    let s = operators::sum_dim_IntList::call(&a, Some(&[1]), true, None).unwrap();
    assert_eq!(
        (s.sizes().to_vec(), s.dtype(), s.device()),
        (vec![2i64, 1, 4], ScalarType::Long, Device::META)
    );
    let f = a.to_dtype(ScalarType::Float).unwrap();
    let (v, i) = functions::max_dim(&f, 2).unwrap();
    assert_eq!(
        (v.sizes().to_vec(), i.dtype()),
        (vec![2i64, 3], ScalarType::Long)
    );
    let m = operators::var_correction::call(&f, Some(&[0, 2]), None, false).unwrap();
    assert_eq!(m.sizes().as_slice(), &[3]);
    let n =
        operators::linalg_vector_norm::call(&f, &Scalar::from(2), Some(&[0]), false, None).unwrap();
    assert_eq!(
        (n.sizes().to_vec(), n.device()),
        (vec![3i64, 4], Device::META)
    );
    assert_eq!(functions::all(&a).unwrap().dtype(), ScalarType::Bool);
}

// ---------------------------------------------------------------------------------------------
// Property tests against a reference
// ---------------------------------------------------------------------------------------------

/// The reduction of row-major `vals` of `sizes` over the dims in `mask`, each output element
/// the `op` of its elements in row-major order.
fn reference(vals: &[f64], sizes: &[i64], mask: &[bool], op: &dyn Fn(&[f64]) -> f64) -> Vec<f64> {
    let nd = sizes.len();
    let kept: Vec<usize> = (0..nd).filter(|&d| !mask[d]).collect();
    let red: Vec<usize> = (0..nd).filter(|&d| mask[d]).collect();
    let count = |dims: &[usize]| dims.iter().map(|&d| sizes[d] as usize).product::<usize>();
    let strides: Vec<usize> = (0..nd)
        .map(|d| sizes[d + 1..].iter().product::<i64>() as usize)
        .collect();
    let index = |dims: &[usize], mut i: usize| -> usize {
        let mut off = 0;
        for &d in dims.iter().rev() {
            off += (i % sizes[d] as usize) * strides[d];
            i /= sizes[d] as usize;
        }
        off
    };
    (0..count(&kept))
        .map(|k| {
            let base = index(&kept, k);
            let xs: Vec<f64> = (0..count(&red))
                .map(|r| vals[base + index(&red, r)])
                .collect();
            op(&xs)
        })
        .collect()
}

#[derive(Debug, Clone)]
struct Case {
    sizes: Vec<i64>,
    mask: Vec<bool>,
    keepdim: bool,
    /// Transpose the last two dims of a contiguous tensor of the transposed shape.
    transposed: bool,
    seed: u64,
}

fn case() -> impl Strategy<Value = Case> {
    (1usize..=4)
        .prop_flat_map(|nd| {
            (
                proptest::collection::vec(1i64..=9, nd),
                proptest::collection::vec(any::<bool>(), nd),
                any::<bool>(),
                any::<bool>(),
                any::<u64>(),
            )
        })
        .prop_map(|(sizes, mask, keepdim, transposed, seed)| Case {
            sizes,
            mask,
            keepdim,
            transposed,
            seed,
        })
}

/// Small integers (exact in every dtype and sum), as f64, from a seed.
fn values(n: usize, seed: u64) -> Vec<f64> {
    let mut s = seed | 1;
    (0..n)
        .map(|_| {
            s ^= s << 13;
            s ^= s >> 7;
            s ^= s << 17;
            (s % 7) as f64 - 3.0
        })
        .collect()
}

/// The input of a case in `dtype`, possibly a transposed view, and its row-major values.
fn input(c: &Case, dtype: ScalarType) -> (Tensor, Vec<f64>) {
    let n: i64 = c.sizes.iter().product();
    let vals = values(n as usize, c.seed);
    let nd = c.sizes.len();
    let t = if c.transposed && nd >= 2 {
        let mut shape = c.sizes.clone();
        shape.swap(nd - 2, nd - 1);
        // Values laid out so that the transposed view holds `vals` in row-major order.
        let mut stored = vec![0.0; n as usize];
        let (r, k) = (c.sizes[nd - 2] as usize, c.sizes[nd - 1] as usize);
        for (i, &v) in vals.iter().enumerate() {
            let (outer, rem) = (i / (r * k), i % (r * k));
            let (a, b) = (rem / k, rem % k);
            stored[outer * r * k + b * r + a] = v;
        }
        Tensor::from_slice(&stored, &shape)
            .unwrap()
            .transpose(-1, -2)
            .unwrap()
    } else {
        Tensor::from_slice(&vals, &c.sizes).unwrap()
    };
    (t.to_dtype(dtype).unwrap(), vals)
}

fn dims_of(c: &Case) -> Vec<i64> {
    (0..c.sizes.len() as i64)
        .filter(|&d| c.mask[d as usize])
        .collect()
}

fn check_sum_like(c: &Case, dtype: ScalarType) {
    let (t, vals) = input(c, dtype);
    let dims = dims_of(c);
    let mask: Vec<bool> = if dims.is_empty() {
        vec![true; c.sizes.len()]
    } else {
        c.mask.clone()
    };
    let mut want_shape: Vec<i64> = Vec::new();
    for (d, &s) in c.sizes.iter().enumerate() {
        if !mask[d] {
            want_shape.push(s);
        } else if c.keepdim {
            want_shape.push(1);
        }
    }
    let sum = operators::sum_dim_IntList::call(&t, Some(&dims), c.keepdim, None).unwrap();
    assert_eq!(sum.sizes().as_slice(), want_shape.as_slice());
    assert_eq!(
        f64v(&sum),
        reference(&vals, &c.sizes, &mask, &|x| x.iter().sum())
    );
    let amax = operators::amax::call(&t, &dims, c.keepdim).unwrap();
    assert_eq!(
        f64v(&amax),
        reference(&vals, &c.sizes, &mask, &|x| x
            .iter()
            .cloned()
            .fold(f64::MIN, f64::max))
    );
    let prod = if dims.len() == 1 {
        Some(
            operators::prod_dim_int::call(&t, dims[0], c.keepdim, Some(ScalarType::Double))
                .unwrap(),
        )
    } else {
        None
    };
    if let Some(p) = prod {
        assert_eq!(
            f64v(&p),
            reference(&vals, &c.sizes, &mask, &|x| x.iter().product())
        );
    }
    // any over `dim=[]` reduces nothing (torch's allow_empty_dims).
    let any = operators::any_dims::call(&t, Some(&dims), c.keepdim).unwrap();
    let any_mask = if dims.is_empty() {
        c.mask.clone()
    } else {
        mask.clone()
    };
    assert_eq!(
        f64v(&any),
        reference(&vals, &c.sizes, &any_mask, &|x| f64::from(
            x.iter().any(|&v| v != 0.0)
        ))
    );
    if dtype.is_floating_point() {
        let mean = operators::mean_dim::call(&t, Some(&dims), c.keepdim, None).unwrap();
        let want = reference(&vals, &c.sizes, &mask, &|x| {
            x.iter().sum::<f64>() / x.len() as f64
        });
        for (g, w) in f64v(&mean).iter().zip(&want) {
            assert!((g - w).abs() <= 1e-2 * w.abs().max(1.0), "mean {g} vs {w}");
        }
        let var = operators::var_correction::call(&t, Some(&dims), None, c.keepdim).unwrap();
        let want = reference(&vals, &c.sizes, &mask, &|x| {
            let m = x.iter().sum::<f64>() / x.len() as f64;
            x.iter().map(|v| (v - m) * (v - m)).sum::<f64>() / (x.len() as f64 - 1.0)
        });
        for (g, w) in f64v(&var).iter().zip(&want) {
            assert!(
                (g.is_nan() && w.is_nan()) || (g - w).abs() <= 1e-2 * w.abs().max(1.0),
                "var {g} vs {w}"
            );
        }
    }
    if dims.len() == 1 {
        let (v, i) = operators::max_dim::call(&t, dims[0], c.keepdim).unwrap();
        let d = dims[0] as usize;
        let want_i = reference(&vals, &c.sizes, &mask, &|x| {
            let m = x.iter().cloned().fold(f64::MIN, f64::max);
            x.iter().position(|&v| v == m).unwrap() as f64
        });
        assert_eq!(f64v(&i), want_i, "argmax along {d}");
        assert_eq!(f64v(&v), f64v(&amax));
    }
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 48, ..ProptestConfig::default() })]

    #[test]
    fn reductions_match_the_reference(c in case()) {
        for dtype in [ScalarType::Float, ScalarType::Double, ScalarType::Int, ScalarType::Long,
                      ScalarType::Half, ScalarType::BFloat16, ScalarType::Char] {
            check_sum_like(&c, dtype);
        }
    }
}

/// Shapes large enough for the vectorised lanes, the cascade leaves, the outer blocks and the
/// parallel split, at every instruction set the CPU has.
#[test]
fn large_reductions_at_every_isa() {
    let cap = detected_cpu_capability();
    let caps = [
        CpuCapability::Default,
        CpuCapability::Avx2,
        CpuCapability::Avx512,
    ];
    for (k, sizes) in [vec![3, 5000], vec![700, 300], vec![2, 257, 130]]
        .into_iter()
        .enumerate()
    {
        let c = Case {
            mask: (0..sizes.len()).map(|d| d % 2 == k % 2).collect(),
            sizes,
            keepdim: k == 1,
            transposed: k == 2,
            seed: 7 + k as u64,
        };
        for &isa in caps.iter().filter(|&&i| i <= cap) {
            with_cpu_capability(isa, || {
                for dtype in [ScalarType::Float, ScalarType::Double, ScalarType::Long] {
                    check_sum_like(&c, dtype);
                }
            })
            .unwrap();
        }
    }
}

#[test]
fn cumulative_ops() {
    let a = f32s(&[1., 2., 3., 4., 5., 6.], &[2, 3]);
    let c1 = operators::cumsum::call(&a, 1, None).unwrap();
    assert_eq!(f64v(&c1), vec![1., 3., 6., 4., 9., 15.]);
    let c0 = operators::cumsum::call(&a, 0, None).unwrap();
    assert_eq!(f64v(&c0), vec![1., 2., 3., 5., 7., 9.]);
    let p = operators::cumprod::call(&a, -1, None).unwrap();
    assert_eq!(f64v(&p), vec![1., 2., 6., 4., 20., 120.]);
    // Integers accumulate into int64; a transposed input walks its own strides.
    let i = Tensor::from_slice(&[1i32, 2, 3, 4], &[2, 2]).unwrap();
    let ci = operators::cumsum::call(&i.t().unwrap(), 1, None).unwrap();
    assert_eq!(
        (ci.dtype(), f64v(&ci)),
        (ScalarType::Long, vec![1., 4., 2., 6.])
    );
    // In place keeps the dtype.
    let x = f32s(&[1., 1., 1.], &[3]);
    operators::cumsum_::call(&x, 0, None).unwrap();
    assert_eq!(f64v(&x), vec![1., 2., 3.]);
    // cummax: ties take the later index; NaN stays once seen.
    let v = f32s(&[1., 3., 3., 2., f32::NAN, 5.], &[6]);
    let (mv, mi) = operators::cummax::call(&v, 0).unwrap();
    let mv = f64v(&mv);
    assert_eq!(&mv[..4], &[1., 3., 3., 3.]);
    assert!(mv[4].is_nan() && mv[5].is_nan());
    assert_eq!(f64v(&mi), vec![0., 1., 2., 2., 4., 4.]);
    let (nv, ni) = operators::cummin::call(&f32s(&[2., 1., 1., 3.], &[4]), 0).unwrap();
    assert_eq!(
        (f64v(&nv), f64v(&ni)),
        (vec![2., 1., 1., 1.], vec![0., 1., 2., 2.])
    );
    let l = operators::logcumsumexp::call(&f32s(&[0., 0., f32::NEG_INFINITY], &[3]), 0).unwrap();
    let l = f64v(&l);
    assert!(
        l[0].abs() < 1e-7 && (l[1] - 2f64.ln()).abs() < 1e-6 && (l[2] - 2f64.ln()).abs() < 1e-6
    );
    assert_eq!(
        msg(operators::logcumsumexp::call(&i, 0)),
        "\"logcumsumexp_out_cpu\" not implemented for 'Int'"
    );
    // 0-dim and empty inputs, meta.
    let z = Tensor::scalar_tensor(2.0, ScalarType::Float).unwrap();
    assert_eq!(
        f64v(&operators::cumsum::call(&z, 0, None).unwrap()),
        vec![2.0]
    );
    let e = Tensor::empty(&[0, 2], ScalarType::Float).unwrap();
    assert_eq!(
        operators::cumsum::call(&e, 1, None)
            .unwrap()
            .sizes()
            .as_slice(),
        &[0, 2]
    );
    let m = Tensor::empty(&[2, 3], (ScalarType::Float, Device::META)).unwrap();
    let (mv, mi) = operators::cummax::call(&m, 1).unwrap();
    assert_eq!(
        (mv.sizes().to_vec(), mi.dtype()),
        (vec![2, 3], ScalarType::Long)
    );
    assert_eq!(
        msg(operators::cumsum::call(&a, 2, None)),
        "Dimension out of range (expected to be in range of [-2, 1], but got 2)"
    );
}

#[test]
fn isclose_allclose_equal() {
    let a = f32s(&[1.0, 2.0, f32::NAN, 1e10], &[4]);
    let b = f32s(&[1.0 + 1e-6, 2.1, f32::NAN, 1.00001e10], &[4]);
    let c = operators::isclose::call(&a, &b, 1e-5, 1e-8, false).unwrap();
    // torch's values: 1e10 and 1.00001e10 round in f32 to 100352 apart, above the allowance.
    assert_eq!(f64v(&c), vec![1., 0., 0., 0.]);
    let c = operators::isclose::call(&a, &b, 1e-5, 1e-8, true).unwrap();
    assert_eq!(f64v(&c), vec![1., 0., 1., 0.]);
    assert!(!operators::allclose::call(&a, &b, 1e-5, 1e-8, true).unwrap());
    assert!(operators::allclose::call(&a, &b, 0.1, 0.0, true).unwrap());
    assert_eq!(
        msg(operators::isclose::call(
            &a,
            &Tensor::zeros(&[4], ScalarType::Double).unwrap(),
            1e-5,
            1e-8,
            false
        )),
        "Float did not match Double"
    );
    assert_eq!(
        msg(operators::isclose::call(&a, &b, -1.0, 1e-8, false)),
        "rtol must be greater than or equal to zero, but got -1"
    );
    // Integers and bools compare as numbers.
    let i = Tensor::from_slice(&[1i64, 5], &[2]).unwrap();
    let j = Tensor::from_slice(&[1i64, 6], &[2]).unwrap();
    assert_eq!(
        f64v(&operators::isclose::call(&i, &j, 0.0, 1.0, false).unwrap()),
        vec![1., 1.]
    );
    // equal: sizes, then every element (NaN unequal to itself).
    assert!(operators::equal::call(&i, &i).unwrap());
    assert!(!operators::equal::call(&i, &j).unwrap());
    assert!(!operators::equal::call(&i, &Tensor::from_slice(&[1i64], &[1]).unwrap()).unwrap());
    assert!(!operators::equal::call(&a, &a).unwrap());
    assert!(operators::equal::call(&i, &i.to_dtype(ScalarType::Float).unwrap()).unwrap());
}

#[test]
fn an_expanded_out_is_refused() {
    let a = f32s(&[1., 2., 3., 4.], &[2, 2]);
    let out = Tensor::zeros(&[1], ScalarType::Float)
        .unwrap()
        .expand(&[2])
        .unwrap();
    assert!(msg(operators::sum_IntList_out::call(
        &a,
        Some(&[0]),
        false,
        None,
        &out
    ))
    .starts_with("unsupported operation: more than one element of the written-to tensor"));
}
