//! Pointwise operators against a simple f64 reference over random shapes and layouts
//! (0-size, 0-dim, broadcast, transposed, sliced, expanded), every dtype, every variant.

use proptest::prelude::*;
use ratten_aten::functions as f;
use ratten_aten::native::cpu::{cast, Elem};
use ratten_aten::native::type_properties::result_type;
use ratten_aten::Tensor;
use ratten_core::{dispatch_all_types, ErrorKind, Scalar, ScalarType};

/// The values of any tensor, in row-major order, as f64 (complex: the real part).
fn values(t: &Tensor) -> Vec<f64> {
    dispatch_all_types!(t.dtype(), T => t.to_vec::<T>().unwrap().into_iter().map(Elem::to_f64).collect())
}

/// A tensor of `dtype` with these values (row-major) in the given layout.
fn make(dtype: ScalarType, shape: &[i64], vals: &[f64], layout: u8) -> Tensor {
    let base = Tensor::from_slice(vals, shape).unwrap();
    let base = base.to_dtype(dtype).unwrap();
    let nd = shape.len();
    match layout {
        // Transposed: a contiguous tensor of the reversed shape, permuted back.
        1 if nd >= 2 => {
            let rev: Vec<i64> = shape.iter().rev().copied().collect();
            let store = Tensor::empty(&rev, dtype).unwrap();
            let perm: Vec<i64> = (0..nd as i64).rev().collect();
            let view = store.permute(&perm).unwrap();
            view.copy_(&base).unwrap();
            view
        }
        // Sliced: every other element of a twice-as-long last dimension.
        2 if nd >= 1 => {
            let mut big = shape.to_vec();
            big[nd - 1] *= 2;
            let store = Tensor::zeros(&big, dtype).unwrap();
            let view = store.slice_with(nd as i64 - 1, None, None, 2).unwrap();
            view.copy_(&base).unwrap();
            view
        }
        _ => base,
    }
}

/// Index of the broadcast element for an operand of `shape` within `out_shape`.
fn bcast_index(out_shape: &[i64], shape: &[i64], flat: usize) -> usize {
    let mut rem = flat;
    let mut idx = vec![0usize; out_shape.len()];
    for d in (0..out_shape.len()).rev() {
        idx[d] = rem % out_shape[d] as usize;
        rem /= out_shape[d] as usize;
    }
    let off = out_shape.len() - shape.len();
    let mut r = 0usize;
    for (d, &s) in shape.iter().enumerate() {
        let i = if s == 1 { 0 } else { idx[off + d] };
        r = r * s as usize + i;
    }
    r
}

/// Rounds an f64 to what `dtype` stores (the reference's final cast).
fn round_to(dtype: ScalarType, v: f64) -> f64 {
    dispatch_all_types!(dtype, T => Elem::to_f64(cast::<f64, T>(v)))
}

fn close(dtype: ScalarType, got: f64, want: f64) -> bool {
    if got.is_nan() && want.is_nan() {
        return true;
    }
    let tol = match dtype {
        ScalarType::Half | ScalarType::ComplexHalf => 2e-3,
        ScalarType::BFloat16 => 1e-2,
        ScalarType::Float | ScalarType::ComplexFloat => 1e-6,
        _ => 1e-12,
    };
    got == want || (got - want).abs() <= tol * want.abs().max(1.0)
}

// The barebones unsigned types (uint16/32/64) support only a few ops; their own tests are in
// `unsigned_dtypes.rs`.
const DTYPES: [ScalarType; 13] = {
    let mut d = [ScalarType::Byte; 13];
    let mut i = 0;
    while i < 13 {
        d[i] = ScalarType::ALL[i];
        i += 1;
    }
    d
};

#[derive(Clone, Copy, Debug)]
enum Op {
    Add,
    Sub,
    Mul,
    Div,
    Max,
    Eq,
    Lt,
}

fn reference(op: Op, a: f64, b: f64) -> f64 {
    match op {
        Op::Add => a + 2.0 * b,
        Op::Sub => a - b,
        Op::Mul => a * b,
        Op::Div => a / b,
        Op::Max => a.max(b),
        Op::Eq => (a == b) as u8 as f64,
        Op::Lt => (a < b) as u8 as f64,
    }
}

fn apply(
    op: Op,
    v: u8,
    a: &Tensor,
    b: &Tensor,
    out: Option<&Tensor>,
) -> ratten_core::Result<Tensor> {
    let two = Scalar::Int(2);
    let one = Scalar::Int(1);
    // v: 0 functional (free function), 1 in-place (method), 2 functional (method); `out`: out=.
    let r = match (op, v, out) {
        (Op::Add, _, Some(o)) => f::add_out_with(o, a, b, two).cloned(),
        (Op::Add, 1, None) => a.add_with_(b, two).cloned(),
        (Op::Add, 2, None) => a.add_with(b, two),
        (Op::Add, _, None) => f::add_with(a, b, two),
        (Op::Sub, _, Some(o)) => f::sub_out_with(o, a, b, one).cloned(),
        (Op::Sub, 1, None) => a.sub_(b).cloned(),
        (Op::Sub, 2, None) => a.sub(b),
        (Op::Sub, _, None) => f::sub_with(a, b, one),
        (Op::Mul, _, Some(o)) => f::mul_out(o, a, b).cloned(),
        (Op::Mul, 1, None) => a.mul_(b).cloned(),
        (Op::Mul, 2, None) => a.mul(b),
        (Op::Mul, _, None) => f::mul(a, b),
        (Op::Div, _, Some(o)) => f::div_out(o, a, b).cloned(),
        (Op::Div, 1, None) => a.div_(b).cloned(),
        (Op::Div, 2, None) => a.div(b),
        (Op::Div, _, None) => f::div(a, b),
        (Op::Max, _, Some(o)) => f::maximum_out(o, a, b).cloned(),
        // maximum has no in-place form in PyTorch: out=self instead.
        (Op::Max, 1, None) => f::maximum_out(a, a, b).cloned(),
        (Op::Max, 2, None) => a.maximum(b),
        (Op::Max, _, None) => f::maximum(a, b),
        (Op::Eq, _, Some(o)) => f::eq_out(o, a, b).cloned(),
        (Op::Eq, 1, None) => a.eq_(b).cloned(),
        (Op::Eq, 2, None) => a.eq(b),
        (Op::Eq, _, None) => f::eq(a, b),
        (Op::Lt, _, Some(o)) => f::lt_out(o, a, b).cloned(),
        (Op::Lt, 1, None) => a.lt_(b).cloned(),
        (Op::Lt, 2, None) => a.lt(b),
        (Op::Lt, _, None) => f::lt(a, b),
    };
    let _ = one;
    r
}

fn shape_strategy() -> impl Strategy<Value = (Vec<i64>, Vec<i64>)> {
    // An output shape of 0..=3 dims with sizes 0..=4, and a broadcastable second shape.
    prop::collection::vec(0i64..=4, 0..=3).prop_flat_map(|s| {
        let n = s.len();
        (
            Just(s.clone()),
            prop::collection::vec(any::<bool>(), n),
            0..=n,
        )
            .prop_map(|(s, ones, drop)| {
                let b: Vec<i64> = s
                    .iter()
                    .zip(&ones)
                    .map(|(&x, &one)| if one { 1 } else { x })
                    .collect();
                (s, b[drop..].to_vec())
            })
    })
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 200, ..ProptestConfig::default() })]

    #[test]
    fn binary_ops_match_reference(
        (sa, sb) in shape_strategy(),
        swap in any::<bool>(),
        da in 0usize..13, db in 0usize..13,
        la in 0u8..3, lb in 0u8..3,
        op in prop::sample::select(vec![Op::Add, Op::Sub, Op::Mul, Op::Div, Op::Max, Op::Eq, Op::Lt]),
        variant in 0u8..3,
        seed in any::<u64>(),
    ) {
        let (sa, sb) = if swap { (sb, sa) } else { (sa, sb) };
        let (dta, dtb) = (DTYPES[da], DTYPES[db]);
        let na: i64 = sa.iter().product();
        let nb: i64 = sb.iter().product();
        let mut state = seed;
        let mut next = || { state = state.wrapping_mul(6364136223846793005).wrapping_add(1442695040888963407); ((state >> 33) % 9) as f64 - 2.0 };
        let mut vals = |n: i64, dt: ScalarType| -> Vec<f64> {
            (0..n).map(|_| {
                let v = next();
                if dt == ScalarType::Bool { (v > 0.0) as u8 as f64 } else if dt == ScalarType::Byte { v.abs() } else { v }
            }).collect()
        };
        let va = vals(na, dta);
        let vb = vals(nb, dtb);
        let a = make(dta, &sa, &va, la);
        let b = make(dtb, &sb, &vb, lb);
        let common = result_type(&a, &b).unwrap();
        let out_shape = match ratten_aten::tensor_iterator::infer_size(&sa, &sb) {
            Ok(s) => s.to_vec(),
            Err(_) => return Ok(()),
        };
        // The variant: 0 functional, 1 in-place (on a copy of a, if a has the full shape),
        // 2 out= (into a tensor of the common or result dtype).
        let is_cmp = matches!(op, Op::Eq | Op::Lt);
        let result_dtype = if is_cmp { ScalarType::Bool } else if matches!(op, Op::Div) && common.is_integral(true) { ScalarType::Float } else { common };
        let (res, check_dtype) = match variant {
            1 if sa == out_shape => {
                let a2 = a.to_dtype(dta).unwrap();
                let a2 = make(dta, &sa, &values(&a2), la);
                (apply(op, 1, &a2, &b, None).map(|_| a2.clone()), dta)
            }
            2 => {
                let out = Tensor::empty(&[0], result_dtype).unwrap();
                (apply(op, 2, &a, &b, Some(&out)), result_dtype)
            }
            _ => (apply(op, if seed % 2 == 0 { 0 } else { 2 }, &a, &b, None), result_dtype),
        };
        // Errors PyTorch raises for these dtypes.
        let sub_bool = matches!(op, Op::Sub) && (dta == ScalarType::Bool || dtb == ScalarType::Bool);
        // torch's CPU build has no complex max/lt, and no complex32 division.
        let complex_unsupported = (common.is_complex() && matches!(op, Op::Max | Op::Lt))
            || (common == ScalarType::ComplexHalf && matches!(op, Op::Div));
        let inplace_cast = variant == 1 && sa == out_shape && !ratten_core::can_cast(result_dtype, dta);
        if sub_bool || complex_unsupported || inplace_cast {
            prop_assert!(res.is_err(), "{op:?} {dta} {dtb} should fail");
            return Ok(());
        }
        if common.is_complex() {
            // Complex values are checked by the unit tests; here only shapes and dtypes.
            let r = res.unwrap();
            prop_assert_eq!(r.sizes().to_vec(), out_shape.clone());
            return Ok(());
        }
        let r = res.unwrap_or_else(|e| panic!("{op:?} {dta}{sa:?} {dtb}{sb:?} v{variant}: {e}"));
        prop_assert_eq!(r.sizes().to_vec(), out_shape.clone());
        prop_assert_eq!(r.dtype(), check_dtype);
        let got = values(&r);
        let n: i64 = out_shape.iter().product();
        // Inputs are first cast to the common dtype, computed, then cast to the output.
        let compute = if is_cmp { common } else { result_dtype };
        for i in 0..n as usize {
            let x = round_to(compute, va[bcast_index(&out_shape, &sa, i)]);
            let y = round_to(compute, vb[bcast_index(&out_shape, &sb, i)]);
            let mut want = reference(op, x, y);
            if matches!(op, Op::Div) && compute.is_integral(true) {
                continue;
            }
            if !is_cmp {
                want = round_to(compute, want);
            }
            want = round_to(check_dtype, want);
            prop_assert!(close(check_dtype, got[i], want), "{op:?} {dta}{sa:?}(l{la}) {dtb}{sb:?}(l{lb}) v{variant} at {i}: got {} want {}", got[i], want);
        }
    }

    #[test]
    fn unary_ops_match_reference(
        shape in prop::collection::vec(0i64..=5, 0..=3),
        d in 0usize..13,
        layout in 0u8..3,
        seed in any::<u64>(),
    ) {
        let dt = DTYPES[d];
        let n: i64 = shape.iter().product();
        let vals: Vec<f64> = (0..n).map(|i| {
            let v = ((seed.wrapping_add(i as u64 * 7919)) % 7) as f64;
            if dt == ScalarType::Bool { (v > 3.0) as u8 as f64 } else { v }
        }).collect();
        let a = make(dt, &shape, &vals, layout);
        // exp: integers promote to float32; complex is computed (checked for shape only),
        // except complex32, which torch's CPU build refuses.
        let r = f::exp(&a);
        let want_dt = if dt.is_integral(true) { ScalarType::Float } else { dt };
        if dt == ScalarType::ComplexHalf {
            let e = r.unwrap_err();
            prop_assert_eq!(e.message(), "\"exp_vml_cpu\" not implemented for 'ComplexHalf'");
        } else {
            let r = r.unwrap();
            prop_assert_eq!(r.dtype(), want_dt);
            prop_assert_eq!(r.sizes().to_vec(), shape.clone());
        }
        if let (false, Ok(r)) = (dt.is_complex(), f::exp(&a)) {
            let got = values(&r);
            for (i, &v) in vals.iter().enumerate() {
                let want = round_to(want_dt, round_to(dt, v).exp());
                prop_assert!(close(want_dt, got[i], want), "exp {dt} at {i}: {} vs {}", got[i], want);
            }
        }
        // neg: refused for bool, otherwise exact; every variant (function, method, in-place on
        // a copy with the same layout, out= into a tensor of another layout).
        let r = match seed % 4 {
            0 => f::neg(&a),
            1 => a.neg(),
            2 => {
                let c = make(dt, &shape, &vals, layout);
                c.neg_().map(|_| c.clone())
            }
            _ => {
                let o = make(dt, &shape, &vec![0.0; n as usize], (layout + 1) % 3);
                f::neg_out(&o, &a).cloned()
            }
        };
        if dt == ScalarType::Bool {
            prop_assert!(r.is_err());
        } else {
            let r = r.unwrap();
            prop_assert_eq!(r.dtype(), dt);
            let got = values(&r);
            for (i, &v) in vals.iter().enumerate() {
                prop_assert!(close(dt, got[i], round_to(dt, -round_to(dt, v))));
            }
        }
        // copy_ into every dtype through a transposed/sliced destination.
        for &to in &DTYPES {
            let dst = make(to, &shape, &vec![0.0; n as usize], layout);
            dst.copy_(&a).unwrap();
            let got = values(&dst);
            for (i, &v) in vals.iter().enumerate() {
                let want = round_to(to, round_to(dt, v));
                prop_assert!(close(to, got[i], want), "copy {dt}->{to}: {} vs {}", got[i], want);
            }
        }
    }
}

fn t(vals: &[f32], shape: &[i64]) -> Tensor {
    Tensor::from_slice(vals, shape).unwrap()
}

#[test]
fn add_sub_checks_and_errors() {
    let i = Tensor::from_slice(&[1i32, 2, 3], &[3]).unwrap();
    let e = f::add_with(&i, &i, Scalar::Double(1.1)).unwrap_err();
    assert_eq!(
        e.message(),
        "For integral input tensors, argument alpha must not be a floating point number."
    );
    let e = f::add_with(&i, &i, Scalar::Bool(true)).unwrap_err();
    assert_eq!(
        e.message(),
        "Boolean alpha only supported for Boolean results."
    );
    let f = t(&[1.0, 2.0, 3.0], &[3]);
    let e = f::add_with(
        &f,
        &f,
        Scalar::ComplexDouble(num_complex::Complex::new(0.0, 1.0)),
    )
    .unwrap_err();
    assert_eq!(
        e.message(),
        "For non-complex input tensors, argument alpha must not be a complex number."
    );
    let b = Tensor::from_slice(&[true, false], &[2]).unwrap();
    let e = f::sub(&b, &b).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NotImplemented);
    assert!(e
        .message()
        .starts_with("Subtraction, the `-` operator, with two bool tensors"));
    let e = f::neg(&b).unwrap_err();
    assert!(e
        .message()
        .starts_with("Negation, the `-` operator, on a bool tensor"));
    let e = &i.add_scalar_(Scalar::Double(1.5)).cloned().unwrap_err();
    assert_eq!(
        e.message(),
        "result type Float can't be cast to the desired output type Int"
    );
    // int32 + float32 -> float32 in one fused pass; out=float64 receives the float32 result.
    let r = f::add_with(&i, &f, Scalar::Int(1)).unwrap();
    assert_eq!(r.dtype(), ScalarType::Float);
    assert_eq!(r.to_vec::<f32>().unwrap(), vec![2.0, 4.0, 6.0]);
    let h = t(&[33000.0], &[]).to_dtype(ScalarType::Half).unwrap();
    let out = Tensor::empty(&[], ScalarType::Double).unwrap();
    f::add_out(&out, &h, &h).cloned().unwrap();
    assert!(out.to_vec::<f64>().unwrap()[0].is_infinite());
    // uint8 + 1000 stays uint8 (wrapped number); bool + 5 is int64.
    let u = Tensor::from_slice(&[1u8, 2], &[2]).unwrap();
    let r = f::add_scalar(&u, Scalar::Int(1000)).unwrap();
    assert_eq!(r.dtype(), ScalarType::Byte);
    assert_eq!(
        r.to_vec::<u8>().unwrap(),
        vec![(1001 % 256) as u8, (1002 % 256) as u8]
    );
    let r = f::add_scalar(&b, Scalar::Int(5)).unwrap();
    assert_eq!(r.dtype(), ScalarType::Long);
}

#[test]
fn division_modes() {
    let a = Tensor::from_slice(&[7i64, -7, 7, -7], &[4]).unwrap();
    let b = Tensor::from_slice(&[2i64, 2, -2, -2], &[4]).unwrap();
    let r = f::div(&a, &b).unwrap();
    assert_eq!(r.dtype(), ScalarType::Float);
    assert_eq!(r.to_vec::<f32>().unwrap(), vec![3.5, -3.5, -3.5, 3.5]);
    let r = f::div_tensor_mode(&a, &b, Some("trunc")).unwrap();
    assert_eq!(r.to_vec::<i64>().unwrap(), vec![3, -3, -3, 3]);
    let r = f::div_tensor_mode(&a, &b, Some("floor")).unwrap();
    assert_eq!(r.to_vec::<i64>().unwrap(), vec![3, -4, -4, 3]);
    let r = f::remainder(&a, &b).unwrap();
    assert_eq!(r.to_vec::<i64>().unwrap(), vec![1, 1, -1, -1]);
    let r = f::fmod(&a, &b).unwrap();
    assert_eq!(r.to_vec::<i64>().unwrap(), vec![1, -1, 1, -1]);
    let z = Tensor::from_slice(&[0i64, 1, 1, 1], &[4]).unwrap();
    assert_eq!(
        f::div_tensor_mode(&a, &z, Some("floor"))
            .unwrap_err()
            .message(),
        "ZeroDivisionError"
    );
    assert_eq!(
        f::remainder(&a, &z).unwrap_err().message(),
        "ZeroDivisionError"
    );
    let e = f::div_tensor_mode(&a, &b, Some("round")).unwrap_err();
    assert_eq!(
        e.message(),
        "div expected rounding_mode to be one of None, 'trunc', or 'floor' but found 'round'"
    );
    let out = Tensor::empty(&[4], ScalarType::Long).unwrap();
    let e = f::div_out(&out, &a, &b).cloned().unwrap_err();
    assert!(
        e.message().contains("can't be cast") || e.message().contains("dtype"),
        "{e}"
    );
    let f = t(&[-7.5, 7.5], &[2]);
    let g = t(&[2.0, -2.0], &[2]);
    assert_eq!(
        f::div_tensor_mode(&f, &g, Some("floor"))
            .unwrap()
            .to_vec::<f32>()
            .unwrap(),
        vec![-4.0, -4.0]
    );
    assert_eq!(
        f::remainder(&f, &g).unwrap().to_vec::<f32>().unwrap(),
        vec![0.5, -0.5]
    );
}

#[test]
fn comparisons_logical_bitwise_where_clamp() {
    let a = t(&[1.0, f32::NAN, 3.0], &[3]);
    let b = t(&[2.0, 2.0, 3.0], &[3]);
    assert_eq!(
        f::lt(&a, &b).unwrap().to_vec::<bool>().unwrap(),
        vec![true, false, false]
    );
    assert_eq!(
        f::ge(&a, &b).unwrap().to_vec::<bool>().unwrap(),
        vec![false, false, true]
    );
    assert_eq!(
        f::ne(&a, &b).unwrap().to_vec::<bool>().unwrap(),
        vec![true, true, false]
    );
    let m = f::maximum(&a, &b).unwrap().to_vec::<f32>().unwrap();
    assert!(m[1].is_nan() && m[0] == 2.0);
    let out = Tensor::empty(&[3], ScalarType::Float).unwrap();
    f::eq_out(&out, &a, &b).cloned().unwrap();
    assert_eq!(out.to_vec::<f32>().unwrap(), vec![0.0, 0.0, 1.0]);
    let x = Tensor::from_slice(&[0i32, 3, 0], &[3]).unwrap();
    assert_eq!(
        f::logical_and(&a, &x).unwrap().to_vec::<bool>().unwrap(),
        vec![false, true, false]
    );
    assert_eq!(
        f::logical_not(&x).unwrap().to_vec::<bool>().unwrap(),
        vec![true, false, true]
    );
    let y = Tensor::from_slice(&[6i32, 5, 4], &[3]).unwrap();
    assert_eq!(
        f::bitwise_xor(&x, &y).unwrap().to_vec::<i32>().unwrap(),
        vec![6, 6, 4]
    );
    let e = f::bitwise_and(&a, &b).unwrap_err();
    assert_eq!(
        e.message(),
        "\"bitwise_and_cpu\" not implemented for 'Float'"
    );
    assert_eq!(
        f::bitwise_not(&y).unwrap().to_vec::<i32>().unwrap(),
        vec![-7, -6, -5]
    );
    let c = Tensor::from_slice(&[true, false, true], &[3]).unwrap();
    let w = f::r#where(&c, &x, &b).unwrap();
    assert_eq!(w.dtype(), ScalarType::Float);
    assert_eq!(w.to_vec::<f32>().unwrap(), vec![0.0, 2.0, 0.0]);
    let e = f::r#where(&x, &x, &b).unwrap_err();
    assert_eq!(
        e.message(),
        "where expected condition to be a boolean tensor, but got a tensor with dtype Int"
    );
    let r = f::clamp_with(&y, Some(Scalar::Int(5)), None).unwrap();
    assert_eq!(r.to_vec::<i32>().unwrap(), vec![6, 5, 5]);
    let r = f::clamp_with(&y, None, Some(Scalar::Double(4.5))).unwrap();
    assert_eq!(r.dtype(), ScalarType::Float);
    assert_eq!(r.to_vec::<f32>().unwrap(), vec![4.5, 4.5, 4.0]);
    let e = f::clamp_with(&y, None, None).unwrap_err();
    assert_eq!(
        e.message(),
        "torch.clamp: At least one of 'min' or 'max' must not be None"
    );
    let r = f::relu(&t(&[-1.0, 2.0], &[2])).unwrap();
    assert_eq!(r.to_vec::<f32>().unwrap(), vec![0.0, 2.0]);
}

/// relu is `clamp_min(self, 0)` (its kernel runs clamp's stub directly): the same values,
/// dtypes, layouts and errors as clamp with `min=0`, functional and in place, on every real
/// dtype, with NaN, -0.0 and a transposed input, and on the meta device.
#[test]
fn relu_is_clamp_min_zero() {
    let v = [-1.5f64, -0.0, 0.0, 2.5, f64::NAN, -3.0];
    let bits = |t: &Tensor| -> Vec<u64> {
        t.to_dtype(ScalarType::Double)
            .unwrap()
            .to_vec::<f64>()
            .unwrap()
            .iter()
            .map(|x| x.to_bits())
            .collect()
    };
    for dt in [
        ScalarType::Byte,
        ScalarType::Char,
        ScalarType::Short,
        ScalarType::Int,
        ScalarType::Long,
        ScalarType::Half,
        ScalarType::BFloat16,
        ScalarType::Float,
        ScalarType::Double,
    ] {
        let make = |transposed: bool| {
            let x = Tensor::from_slice(&v, &[2, 3])
                .unwrap()
                .to_dtype(dt)
                .unwrap();
            if transposed {
                x.t().unwrap()
            } else {
                x
            }
        };
        for transposed in [false, true] {
            let input = make(transposed);
            let want = f::clamp_with(&input, Some(Scalar::Int(0)), None).unwrap();
            let got = f::relu(&input).unwrap();
            assert_eq!(got.dtype(), want.dtype(), "{dt}");
            assert_eq!(got.strides(), want.strides(), "{dt}");
            assert_eq!(bits(&got), bits(&want), "{dt}");
            let inplace = make(transposed);
            inplace.relu_().unwrap();
            assert_eq!(bits(&inplace), bits(&want), "{dt} relu_");
        }
    }
    let m = Tensor::empty(&[2, 3], (ScalarType::Float, ratten_core::Device::META)).unwrap();
    let r = f::relu(&m).unwrap();
    assert!(r.is_meta() && r.sizes().as_slice() == [2, 3]);
    let c = Tensor::zeros(&[1], ScalarType::ComplexFloat).unwrap();
    let e = f::relu(&c).unwrap_err();
    assert_eq!(e.message(), "clamp is not supported for complex types");
    let e = c.relu_().unwrap_err();
    assert_eq!(e.message(), "clamp is not supported for complex types");
}

#[test]
fn ternary_and_fill() {
    let s = t(&[1.0, 2.0], &[2]);
    let e = t(&[3.0, 6.0], &[2]);
    assert_eq!(
        f::lerp_scalar(&s, &e, Scalar::Double(0.5))
            .unwrap()
            .to_vec::<f32>()
            .unwrap(),
        vec![2.0, 4.0]
    );
    let w = t(&[0.0, 1.0], &[2]);
    assert_eq!(
        f::lerp(&s, &e, &w).unwrap().to_vec::<f32>().unwrap(),
        vec![1.0, 6.0]
    );
    let r = f::addcmul_with(&s, &e, &w, Scalar::Int(2)).unwrap();
    assert_eq!(r.to_vec::<f32>().unwrap(), vec![1.0, 14.0]);
    let r = f::addcdiv(&s, &e, &t(&[2.0, 3.0], &[2])).unwrap();
    assert_eq!(r.to_vec::<f32>().unwrap(), vec![2.5, 4.0]);
    let i = Tensor::from_slice(&[1i64, 2], &[2]).unwrap();
    assert!(f::addcdiv_with(&s, &i, &i, Scalar::Int(1))
        .unwrap_err()
        .message()
        .starts_with("Integer division with addcdiv is no longer supported"));
    let big = Tensor::empty(&[3, 4], ScalarType::Short).unwrap();
    let view = big.t().unwrap();
    f::fill_scalar_(&view, Scalar::Int(7)).unwrap();
    assert_eq!(big.to_vec::<i16>().unwrap(), vec![7; 12]);
    let e = f::fill_scalar_(&big, Scalar::Int(1 << 20)).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Runtime);
}

#[test]
fn large_parallel_and_transposed() {
    // Above GRAIN_SIZE: split across threads; a transposed operand takes the tiled path.
    let n = 300i64;
    let vals: Vec<f32> = (0..n * n).map(|i| i as f32).collect();
    let a = t(&vals, &[n, n]);
    let at = a.t().unwrap();
    let r = f::add_with(&a, &at, Scalar::Int(1)).unwrap();
    let got = r.to_vec::<f32>().unwrap();
    for i in 0..n as usize {
        for j in 0..n as usize {
            assert_eq!(
                got[i * n as usize + j],
                vals[i * n as usize + j] + vals[j * n as usize + i]
            );
        }
    }
    // Overlapping output refused.
    let c = t(&vals[..6], &[6]);
    let src = c.slice_with(0, Some(1), Some(4), 1).unwrap();
    let dst = c.slice_with(0, Some(0), Some(3), 1).unwrap();
    assert!(f::add_out(&dst, &src, &src)
        .cloned()
        .unwrap_err()
        .message()
        .starts_with("unsupported operation: some elements"));
}

/// Complex true division follows c10's `complex::operator/` (scaled; a zero divisor gives
/// `(a/0, b/0)`); the expected values are torch 2.15.0's for the same operands.
#[test]
fn complex_division_matches_c10() {
    use ratten_core::dtype::{c128, c64};
    let a = [
        (1.0, 1.0),
        (1.0, 0.0),
        (0.0, 0.0),
        (-2.0, 3.0),
        (1e30, 1e30),
        (3.0, -4.0),
        (1e-30, 2e-30),
    ];
    let b = [
        (0.0, 0.0),
        (0.0, 0.0),
        (0.0, 0.0),
        (0.0, 0.0),
        (1e30, 1e30),
        (1.0, 2.0),
        (3e-30, -1e-30),
    ];
    let inf = f64::INFINITY;
    let expected: [(f64, f64); 7] = [
        (inf, inf),
        (inf, f64::NAN),
        (f64::NAN, f64::NAN),
        (-inf, inf),
        (1.0, 0.0),
        (-1.0, -2.0),
        (0.1, 0.7),
    ];
    let same = |got: f64, want: f64, tol: f64| {
        (got.is_nan() && want.is_nan()) || got == want || (got - want).abs() <= tol
    };
    let a64: Vec<c128> = a.iter().map(|&(r, i)| c128::new(r, i)).collect();
    let b64: Vec<c128> = b.iter().map(|&(r, i)| c128::new(r, i)).collect();
    let a32: Vec<c64> = a
        .iter()
        .map(|&(r, i)| c64::new(r as f32, i as f32))
        .collect();
    let b32: Vec<c64> = b
        .iter()
        .map(|&(r, i)| c64::new(r as f32, i as f32))
        .collect();
    let q64 = f::div(
        &Tensor::from_slice(&a64, &[7]).unwrap(),
        &Tensor::from_slice(&b64, &[7]).unwrap(),
    )
    .unwrap()
    .to_vec::<c128>()
    .unwrap();
    let q32 = f::div(
        &Tensor::from_slice(&a32, &[7]).unwrap(),
        &Tensor::from_slice(&b32, &[7]).unwrap(),
    )
    .unwrap()
    .to_vec::<c64>()
    .unwrap();
    for k in 0..7 {
        let (r, i) = expected[k];
        assert!(
            same(q64[k].re, r, 1e-15) && same(q64[k].im, i, 1e-15),
            "c128 {k}: {}",
            q64[k]
        );
        let (gr, gi) = (q32[k].re as f64, q32[k].im as f64);
        assert!(
            same(gr, r, 1e-6) && same(gi, i, 1e-6),
            "c64 {k}: {}",
            q32[k]
        );
    }
    // A Python-style zero divisor (wrapped number) through the Scalar overload.
    let z = f::div_scalar(&Tensor::from_slice(&a32[..1], &[1]).unwrap(), 0.0)
        .unwrap()
        .to_vec::<c64>()
        .unwrap();
    assert!(z[0].re.is_infinite() && z[0].im.is_infinite(), "{}", z[0]);
}
