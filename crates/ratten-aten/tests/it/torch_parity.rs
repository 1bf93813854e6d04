//! Cases where ratten differed from PyTorch 2.15, found by a differential test against torch
//! (`python/tools/torch_difftest.py`); each expected value or message is what torch 2.15 gives
//! for the same call.

use crate::common::msg;
use ratten_aten::structured::capture_warnings;
use ratten_aten::{functions, Tensor};
use ratten_core::num_complex::Complex;
use ratten_core::{Scalar, ScalarType};

fn f32s(v: &[f32], sizes: &[i64]) -> Tensor {
    Tensor::from_slice(v, sizes).unwrap()
}

fn bits(t: &Tensor) -> Vec<u32> {
    t.to_vec::<f32>()
        .unwrap()
        .into_iter()
        .map(f32::to_bits)
        .collect()
}

/// `torch.tensor([nan, -2., 0., 3.]).sign()` is `[0., -1., 0., 1.]` (sign is
/// `(0 < a) - (a < 0)`).
#[test]
fn sign_of_nan_is_zero() {
    let a = f32s(&[f32::NAN, -2.0, 0.0, 3.0], &[4]);
    assert_eq!(
        functions::sign(&a).unwrap().to_vec::<f32>().unwrap(),
        vec![0.0, -1.0, 0.0, 1.0]
    );
}

/// `-torch.tensor([0.])` is `-0.`; `torch.tensor([-0.]).abs()` is `0.`; `-(1j)` is `-0-1j`.
#[test]
fn signed_zeros_of_neg_and_abs() {
    let z = f32s(&[0.0, -0.0], &[2]);
    assert_eq!(
        bits(&functions::neg(&z).unwrap()),
        vec![(-0.0f32).to_bits(), 0.0f32.to_bits()]
    );
    assert_eq!(
        bits(&functions::abs(&z).unwrap()),
        vec![0.0f32.to_bits(), 0.0f32.to_bits()]
    );
    let j = Tensor::from_slice(&[Complex::new(0.0f32, 1.0)], &[1]).unwrap();
    let n = functions::neg(&j)
        .unwrap()
        .to_vec::<Complex<f32>>()
        .unwrap()[0];
    assert!(n.re == 0.0 && n.re.is_sign_negative() && n.im == -1.0);
}

/// `torch.tensor([3+4j]).abs()` is `tensor([5.])` (float32); out= of a real dtype it casts
/// to, or of a complex dtype (`5+0j`); an integer out= is refused; in-place is refused.
#[test]
fn abs_of_complex_is_real() {
    let z =
        Tensor::from_slice(&[Complex::new(3.0f32, 4.0), Complex::new(-5.0, 12.0)], &[2]).unwrap();
    let r = functions::abs(&z).unwrap();
    assert_eq!(r.dtype(), ScalarType::Float);
    assert_eq!(r.to_vec::<f32>().unwrap(), vec![5.0, 13.0]);
    let out = Tensor::zeros(&[0], ScalarType::Double).unwrap();
    functions::abs_out(&out, &z).unwrap();
    assert_eq!(out.to_vec::<f64>().unwrap(), vec![5.0, 13.0]);
    let outc = Tensor::zeros(&[2], ScalarType::ComplexFloat).unwrap();
    functions::abs_out(&outc, &z).unwrap();
    assert_eq!(
        outc.to_vec::<Complex<f32>>().unwrap(),
        vec![Complex::new(5.0, 0.0), Complex::new(13.0, 0.0)]
    );
    let outi = Tensor::zeros(&[2], ScalarType::Int).unwrap();
    assert_eq!(
        msg(functions::abs_out(&outi, &z)),
        "result type Float can't be cast to the desired output type Int"
    );
    assert_eq!(
        msg(z.abs_()),
        "In-place abs is not supported for complex tensors."
    );
    let zd = z.to_dtype(ScalarType::ComplexDouble).unwrap();
    let rd = functions::abs(&zd).unwrap();
    assert_eq!(rd.dtype(), ScalarType::Double);
    assert_eq!(rd.to_vec::<f64>().unwrap(), vec![5.0, 13.0]);
}

/// `torch.tensor([1+0j]) + float('nan')` is `nan+nanj`: the sum is `a + alpha * b` even for
/// alpha 1, and (1+0j) * (nan+0j) is nan+nanj.
#[test]
fn complex_add_multiplies_by_alpha() {
    let a = Tensor::from_slice(&[Complex::new(1.0f32, 0.0)], &[1]).unwrap();
    let r = functions::add_scalar(&a, f64::NAN).unwrap();
    let v = r.to_vec::<Complex<f32>>().unwrap()[0];
    assert!(v.re.is_nan() && v.im.is_nan(), "{v:?}");
    // Reals keep the plain sum.
    let x = f32s(&[1.0], &[1]);
    assert!(functions::add_scalar(&x, f64::NAN)
        .unwrap()
        .to_vec::<f32>()
        .unwrap()[0]
        .is_nan());
}

/// `torch.zeros(2, dtype=torch.bool).fill_(0.5j)` is `[True, True]`: a complex value is true
/// when it is nonzero.
#[test]
fn complex_to_bool_is_nonzero() {
    let b = Tensor::zeros(&[2], ScalarType::Bool).unwrap();
    b.fill_(Scalar::ComplexDouble(Complex::new(0.0, 0.5)))
        .unwrap();
    assert_eq!(b.to_vec::<bool>().unwrap(), vec![true, true]);
}

/// `torch.where` accepts a uint8 condition with a warning, checks the out= dtype before the
/// condition, and still refuses other condition dtypes.
#[test]
fn where_takes_a_uint8_condition() {
    let c = Tensor::from_slice(&[1u8, 0], &[2]).unwrap();
    let (a, b) = (f32s(&[1.0, 2.0], &[2]), f32s(&[3.0, 4.0], &[2]));
    let (r, warnings) = capture_warnings(|| functions::r#where(&c, &a, &b));
    assert_eq!(r.unwrap().to_vec::<f32>().unwrap(), vec![1.0, 4.0]);
    assert_eq!(warnings.len(), 1);
    assert!(warnings[0]
        .message
        .starts_with("where received a uint8 condition tensor. This behavior is deprecated"));
    let c8 = Tensor::from_slice(&[1i8, 0], &[2]).unwrap();
    assert_eq!(
        msg(functions::r#where(&c8, &a, &b)),
        "where expected condition to be a boolean tensor, but got a tensor with dtype Char"
    );
    let out = Tensor::zeros(&[2], ScalarType::Int).unwrap();
    assert_eq!(
        msg(functions::where_out(&out, &c8, &a, &b)),
        "Expected out type to be Float but got Int"
    );
}

/// `fill_` writes through an expanded tensor (fill is idempotent, so PyTorch skips the overlap
/// check); a 0-dim tensor value is copied (a complex value's real part into an integer
/// tensor), a 1-d one refused; a 1-element half tensor takes 1e300 as inf.
#[test]
fn fill_follows_pytorch() {
    let base = Tensor::zeros(&[1], ScalarType::Float).unwrap();
    let e = base.expand(&[3]).unwrap();
    e.fill_(2.0).unwrap();
    assert_eq!(e.to_vec::<f32>().unwrap(), vec![2.0, 2.0, 2.0]);

    let t = Tensor::from_slice(&[3i16, -2, -8], &[3]).unwrap();
    let v = Tensor::scalar_tensor(
        Complex::new(2.44, 3.55),
        (ScalarType::ComplexFloat, ratten_core::Device::CPU),
    )
    .unwrap();
    functions::fill_(&t, &v).unwrap();
    assert_eq!(t.to_vec::<i16>().unwrap(), vec![2, 2, 2]);
    let one_d = f32s(&[3.0], &[1]);
    assert_eq!(
        msg(functions::fill_(&f32s(&[1.0, 2.0], &[2]), &one_d)),
        "fill_ only supports 0-dimension value tensor but got tensor with 1 dimensions."
    );
    // A value tensor that aliases self is cloned first.
    let s = f32s(&[5.0, 6.0], &[2]);
    let alias = s.select(0, 1).unwrap();
    functions::fill_(&s, &alias).unwrap();
    assert_eq!(s.to_vec::<f32>().unwrap(), vec![6.0, 6.0]);

    let h = Tensor::zeros(&[1], ScalarType::Half).unwrap();
    h.fill_(1e300).unwrap();
    assert!(h.to_vec::<half::f16>().unwrap()[0].is_infinite());
    // Two elements: the checked conversion, as torch.
    let h2 = Tensor::zeros(&[2], ScalarType::Half).unwrap();
    assert_eq!(
        msg(h2.fill_(1e300)),
        "value cannot be converted to type c10::Half without overflow"
    );
    // The 1-element half path goes through double: a complex value with an imaginary part
    // is refused as "double" (two elements: as c10::Half).
    let i = Scalar::ComplexDouble(Complex::new(1.0, 1.0));
    assert_eq!(
        msg(h.fill_(i)),
        "value cannot be converted to type double without overflow"
    );
    assert_eq!(
        msg(h2.fill_(i)),
        "value cannot be converted to type c10::Half without overflow"
    );
    // complex32: one element is checked as complex<Half> (70000 refused), more as the
    // kernel's complex<float> (70000 becomes inf, 1e300 is refused).
    let c1 = Tensor::zeros(&[1], ScalarType::ComplexHalf).unwrap();
    assert_eq!(
        msg(c1.fill_(70000)),
        "value cannot be converted to type c10::complex<c10::Half> without overflow"
    );
    let c2 = Tensor::zeros(&[2], ScalarType::ComplexHalf).unwrap();
    c2.fill_(70000).unwrap();
    let v = c2
        .to_dtype(ScalarType::ComplexFloat)
        .unwrap()
        .to_vec::<Complex<f32>>()
        .unwrap();
    assert!(v.iter().all(|z| z.re.is_infinite() && z.im == 0.0));
    assert_eq!(
        msg(c2.fill_(1e300)),
        "value cannot be converted to type c10::complex<float> without overflow"
    );
}

/// pow: an exponent of 0 or 1 (or False/True) short-circuits (so a bool base works), integer
/// exponents must fit the integer dtype, and pow(0, negative integer tensor) is 0.
#[test]
fn pow_follows_pytorch() {
    let b = Tensor::from_slice(&[true, false], &[2]).unwrap();
    assert_eq!(
        functions::pow_tensor_scalar(&b, true)
            .unwrap()
            .to_vec::<bool>()
            .unwrap(),
        vec![true, false]
    );
    assert_eq!(
        functions::pow_tensor_scalar(&b, false)
            .unwrap()
            .to_vec::<bool>()
            .unwrap(),
        vec![true, true]
    );
    // An int exponent promotes the bool base to int64; bool ** bool tensors stay refused.
    assert_eq!(
        functions::pow_tensor_scalar(&b, 2)
            .unwrap()
            .to_vec::<i64>()
            .unwrap(),
        vec![1, 0]
    );
    assert_eq!(
        msg(functions::pow_tensor_tensor(&b, &b)),
        "\"pow\" not implemented for 'Bool'"
    );
    let i = Tensor::from_slice(&[1i16, 2], &[2]).unwrap();
    assert_eq!(
        msg(functions::pow_tensor_scalar(&i, 1i64 << 40)),
        "value cannot be converted to type int16_t without overflow"
    );
    let e = Tensor::from_slice(&[-3i32, 0, -1], &[3]).unwrap();
    assert_eq!(
        functions::pow_scalar(0, &e)
            .unwrap()
            .to_vec::<i32>()
            .unwrap(),
        vec![0, 1, 0]
    );
    // A complex base to the power 1 is returned as is, non-finite parts included.
    let z = Tensor::from_slice(&[Complex::new(f32::NEG_INFINITY, -23.7)], &[1]).unwrap();
    let r = functions::pow_tensor_scalar(&z, 1).unwrap();
    assert_eq!(
        r.to_vec::<Complex<f32>>().unwrap(),
        vec![Complex::new(f32::NEG_INFINITY, -23.7)]
    );
}

/// clamp with integer bounds outside an integer dtype's range: the harmless side is dropped,
/// the other is an error; float bounds must convert to the dtype.
#[test]
fn clamp_bounds_outside_the_dtype() {
    let u = Tensor::from_slice(&[5u8, 200], &[2]).unwrap();
    let r = functions::clamp_with(&u, Some(Scalar::Int(-1)), None).unwrap();
    assert_eq!(r.to_vec::<u8>().unwrap(), vec![5, 200]);
    let r = functions::clamp_with(&u, Some(Scalar::Int(-5)), Some(Scalar::Int(300))).unwrap();
    assert_eq!(r.to_vec::<u8>().unwrap(), vec![5, 200]);
    assert_eq!(
        msg(functions::clamp_with(&u, None, Some(Scalar::Int(-1)))),
        "Clamp max value -1 is outside the representable range of Byte"
    );
    assert_eq!(
        msg(functions::clamp_with(&u, Some(Scalar::Int(256)), None)),
        "Clamp min value 256 is outside the representable range of Byte"
    );
    let s = Tensor::from_slice(&[5i16], &[1]).unwrap();
    let r =
        functions::clamp_with(&s, Some(Scalar::Int(-100000)), Some(Scalar::Int(100000))).unwrap();
    assert_eq!(r.to_vec::<i16>().unwrap(), vec![5]);
    let h = f32s(&[5.0], &[1]).to_dtype(ScalarType::Half).unwrap();
    assert_eq!(
        msg(functions::clamp_with(
            &h,
            None,
            Some(Scalar::Double(70000.0))
        )),
        "value cannot be converted to type c10::Half without overflow"
    );
    assert_eq!(
        msg(functions::clamp_with(
            &f32s(&[1.0], &[1]),
            None,
            Some(Scalar::ComplexDouble(Complex::new(0.0, 1.0)))
        )),
        "value cannot be converted to type double without overflow"
    );
}

/// lerp: complex operands; a 0-dim weight of another dtype takes part in promotion (a 1-d one
/// must match); an out= of a dtype the result casts to is accepted.
#[test]
fn lerp_follows_pytorch() {
    let s = Tensor::from_slice(&[Complex::new(1.0f32, 1.0)], &[1]).unwrap();
    let e = Tensor::from_slice(&[Complex::new(2.0f32, 2.0)], &[1]).unwrap();
    assert_eq!(
        functions::lerp_scalar(&s, &e, 0.5)
            .unwrap()
            .to_vec::<Complex<f32>>()
            .unwrap(),
        vec![Complex::new(1.5, 1.5)]
    );
    let w = Tensor::from_slice(&[Complex::new(0.5f32, 1.0)], &[1]).unwrap();
    assert_eq!(
        functions::lerp(&s, &e, &w)
            .unwrap()
            .to_vec::<Complex<f32>>()
            .unwrap(),
        vec![Complex::new(0.5, 2.5)]
    );
    let (a, b) = (f32s(&[1.0], &[1]), f32s(&[2.0], &[1]));
    assert_eq!(
        msg(functions::lerp_scalar(
            &a,
            &b,
            Scalar::ComplexDouble(Complex::new(0.5, 1.0))
        )),
        "value cannot be converted to type float without overflow"
    );
    let w64 = Tensor::scalar_tensor(0.5, (ScalarType::Double, ratten_core::Device::CPU)).unwrap();
    let r = functions::lerp(&a, &b, &w64).unwrap();
    assert_eq!(r.dtype(), ScalarType::Float);
    assert_eq!(r.to_vec::<f32>().unwrap(), vec![1.5]);
    let w1 = Tensor::from_slice(&[0.5f64], &[1]).unwrap();
    assert_eq!(
        msg(functions::lerp(&a, &b, &w1)),
        "expected dtype float for `weight` but got dtype double"
    );
    let out = Tensor::zeros(&[1], ScalarType::Double).unwrap();
    functions::lerp_scalar_out(&out, &a, &b, 0.5).unwrap();
    assert_eq!(out.to_vec::<f64>().unwrap(), vec![1.5]);
    let outi = Tensor::zeros(&[1], ScalarType::Int).unwrap();
    assert_eq!(
        msg(functions::lerp_scalar_out(&outi, &a, &b, 0.5)),
        "result type Float can't be cast to the desired output type Int"
    );
}

/// half / bfloat16 times or over a scalar uses the scalar's own value in float, not the value
/// rounded to the tensor's dtype: `torch.tensor([0.], dtype=torch.half) * 1e10` is 0 (not
/// 0 * inf), `torch.tensor([3.], dtype=torch.half) * 0.1` is 0.300048828125.
#[test]
fn reduced_float_scalar_operand_keeps_its_value() {
    let h = f32s(&[0.0, 3.0], &[2]).to_dtype(ScalarType::Half).unwrap();
    let r = functions::mul_scalar(&h, 1e10)
        .unwrap()
        .to_dtype(ScalarType::Float)
        .unwrap();
    assert_eq!(r.to_vec::<f32>().unwrap()[0], 0.0);
    let r = functions::mul_scalar(&h, 0.1)
        .unwrap()
        .to_dtype(ScalarType::Float)
        .unwrap();
    assert_eq!(r.to_vec::<f32>().unwrap()[1] as f64, 0.300048828125);
    let r = functions::div_scalar(&h, 1e-10)
        .unwrap()
        .to_dtype(ScalarType::Float)
        .unwrap();
    assert_eq!(r.to_vec::<f32>().unwrap()[0], 0.0);
    for mode in ["trunc", "floor"] {
        let r = functions::div_scalar_mode(&h, 1e-10, Some(mode))
            .unwrap()
            .to_dtype(ScalarType::Float)
            .unwrap();
        assert_eq!(r.to_vec::<f32>().unwrap()[0], 0.0, "{mode}");
    }
    // bfloat16 times a 0-dim half tensor: the half value, not its bfloat16 rounding.
    let b = f32s(&[3.0], &[1]).to_dtype(ScalarType::BFloat16).unwrap();
    let w = Tensor::scalar_tensor(
        0.0621337890625,
        (ScalarType::Half, ratten_core::Device::CPU),
    )
    .unwrap();
    let r = functions::mul(&b, &w).unwrap();
    assert_eq!(r.dtype(), ScalarType::BFloat16);
    assert_eq!(
        r.to_dtype(ScalarType::Float)
            .unwrap()
            .to_vec::<f32>()
            .unwrap()[0] as f64,
        0.1865234375
    );
}

/// `addcdiv` on integers: PyTorch's message has two spaces in "future  release".
#[test]
fn addcdiv_integer_message() {
    let i = Tensor::from_slice(&[1i64], &[1]).unwrap();
    assert!(msg(functions::addcdiv(&i, &i, &i)).contains("in a future  release addcdiv"));
}

/// Error classes torch 2.15 raises: maximum of complex is a TypeError, clamp of complex and
/// relu of bool NotImplementedError (with the one-bound kernel names for bool); a where
/// number that does not fit the result dtype is an overflow.
#[test]
fn error_kinds_and_where_numbers() {
    use ratten_core::ErrorKind;
    let z = Tensor::from_slice(&[Complex::new(1.0f32, 1.0)], &[1]).unwrap();
    let e = functions::maximum(&z, &z).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Type);
    assert_eq!(e.message(), "maximum not implemented for complex tensors.");
    let e = functions::clamp_with(&z, Some(Scalar::Int(0)), None).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NotImplemented);
    let b = Tensor::from_slice(&[true], &[1]).unwrap();
    let e = functions::relu(&b).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NotImplemented);
    assert_eq!(
        msg(functions::clamp_with(&b, None, Some(Scalar::Bool(true)))),
        "\"clamp_max_scalar_cpu\" not implemented for 'Bool'"
    );
    let c = Tensor::from_slice(&[true], &[1]).unwrap();
    let i8s = Tensor::from_slice(&[1i8], &[1]).unwrap();
    assert_eq!(
        msg(functions::where_scalar_other(&c, &i8s, 1000)),
        "value cannot be converted to type int8_t without overflow"
    );
    assert_eq!(
        functions::where_scalar_other(&c, &i8s, 100)
            .unwrap()
            .to_vec::<i8>()
            .unwrap(),
        vec![1]
    );
}

/// Float to integer conversion of NaN, inf and out-of-range values gives x86's integer
/// indefinite, as torch: `torch.tensor([1., inf, nan]).to(torch.int32)` is
/// `[1, -2147483648, -2147483648]`, `torch.tensor([1e10]).to(torch.int16)` is `[0]`.
#[test]
fn float_to_int_out_of_range() {
    let x = f32s(&[1.0, f32::INFINITY, f32::NAN, -1.0, 300.0], &[5]);
    assert_eq!(
        x.to_dtype(ScalarType::Int)
            .unwrap()
            .to_vec::<i32>()
            .unwrap(),
        vec![1, i32::MIN, i32::MIN, -1, 300]
    );
    assert_eq!(
        x.to_dtype(ScalarType::Byte)
            .unwrap()
            .to_vec::<u8>()
            .unwrap(),
        vec![1, 0, 0, 255, 44]
    );
    assert_eq!(
        f32s(&[1e10], &[1])
            .to_dtype(ScalarType::Short)
            .unwrap()
            .to_vec::<i16>()
            .unwrap(),
        vec![0]
    );
    assert_eq!(
        f32s(&[1e10, f32::NAN], &[2])
            .to_dtype(ScalarType::Long)
            .unwrap()
            .to_vec::<i64>()
            .unwrap(),
        vec![10_000_000_000, i64::MIN]
    );
}

/// addcmul / addcdiv convert `value` to the computation type with c10's check.
#[test]
fn addcmul_value_is_checked() {
    let a = f32s(&[1.0], &[1]);
    let j = Scalar::ComplexDouble(Complex::new(0.0, 1.0));
    assert_eq!(
        msg(functions::addcmul_with(&a, &a, &a, j)),
        "value cannot be converted to type float without overflow"
    );
    assert_eq!(
        msg(functions::addcdiv_with(&a, &a, &a, j)),
        "value cannot be converted to type float without overflow"
    );
    // half: the computation type is float, so 1e10 is a value, not an overflow.
    let h = a.to_dtype(ScalarType::Half).unwrap();
    let r = functions::addcmul_with(&h, &h, &h, 1e10).unwrap();
    assert!(r.to_vec::<half::f16>().unwrap()[0].is_infinite());
}

/// Where PyTorch's CPU build has no kernel for a dtype, the op refuses it with the kernel's
/// name, as torch 2.15 does (`torch.exp(torch.ones(2, dtype=torch.complex32))`:
/// `NotImplementedError: "exp_vml_cpu" not implemented for 'ComplexHalf'`). complex32 has only
/// the arithmetic, comparison, copy and fill kernels; clamp with tensor bounds has no bool one.
#[test]
fn dtypes_torch_has_no_cpu_kernel_for_are_refused() {
    use ratten_core::ErrorKind;
    let c = || {
        Tensor::from_slice(&[1.5f32, 2.0], &[2])
            .unwrap()
            .to_dtype(ScalarType::ComplexHalf)
            .unwrap()
    };
    let refused = |r: ratten_core::Result<Tensor>, kernel: &str, dtype: &str| {
        let e = r.unwrap_err();
        assert_eq!(e.kind(), ErrorKind::NotImplemented, "{e}");
        assert_eq!(
            e.message(),
            format!("\"{kernel}\" not implemented for '{dtype}'")
        );
    };
    let (a, b) = (c(), c());
    refused(functions::div(&a, &b), "div_cpu", "ComplexHalf");
    refused(functions::div_scalar(&a, 2), "div_cpu", "ComplexHalf");
    refused(functions::pow_tensor_tensor(&a, &b), "pow", "ComplexHalf");
    refused(functions::pow_tensor_scalar(&a, 2), "pow", "ComplexHalf");
    refused(
        functions::pow_tensor_scalar(&a, 0.5),
        "sqrt_vml_cpu",
        "ComplexHalf",
    );
    refused(
        functions::pow_tensor_scalar(&a, -0.5),
        "rsqrt_cpu",
        "ComplexHalf",
    );
    refused(
        functions::pow_tensor_scalar(&a, -1),
        "reciprocal_cpu",
        "ComplexHalf",
    );
    refused(functions::pow_scalar(2, &a), "pow", "ComplexHalf");
    refused(
        functions::logical_and(&a, &b),
        "logical_and_cpu",
        "ComplexHalf",
    );
    refused(
        functions::logical_or(&a, &b),
        "logical_or_cpu",
        "ComplexHalf",
    );
    refused(
        functions::logical_xor(&a, &b),
        "logical_xor_cpu",
        "ComplexHalf",
    );
    refused(functions::logical_not(&a), "logical_not_cpu", "ComplexHalf");
    refused(functions::exp(&a), "exp_vml_cpu", "ComplexHalf");
    refused(functions::sqrt(&a), "sqrt_vml_cpu", "ComplexHalf");
    refused(functions::rsqrt(&a), "rsqrt_cpu", "ComplexHalf");
    refused(functions::tanh(&a), "tanh_vml_cpu", "ComplexHalf");
    refused(functions::sigmoid(&a), "sigmoid_cpu", "ComplexHalf");
    refused(
        functions::lerp(&a, &b, &c()),
        "lerp_kernel_tensor",
        "ComplexHalf",
    );
    refused(
        functions::lerp_scalar(&a, &b, 0.5),
        "lerp_kernel_scalar",
        "ComplexHalf",
    );
    refused(
        functions::addcdiv(&a, &b, &c()),
        "addcdiv_cpu_out",
        "ComplexHalf",
    );
    let e = a.exp_().unwrap_err();
    assert_eq!(
        e.message(),
        "\"exp_vml_cpu\" not implemented for 'ComplexHalf'"
    );
    // The common dtype decides: a bool with a complex32 is refused, a float32 with a complex32
    // is complex64 and computed; logical_not reads its input's own dtype.
    let t = Tensor::from_slice(&[true, false], &[2]).unwrap();
    refused(
        functions::logical_and(&t, &a),
        "logical_and_cpu",
        "ComplexHalf",
    );
    let f = Tensor::from_slice(&[0.0f32, 1.0], &[2]).unwrap();
    assert_eq!(
        functions::logical_and(&f, &a)
            .unwrap()
            .to_vec::<bool>()
            .unwrap(),
        vec![false, true]
    );
    assert_eq!(
        functions::pow_tensor_tensor(&a, &f).unwrap().dtype(),
        ScalarType::ComplexFloat
    );
    // Exponents 0 and 1 fill and copy without a kernel, as in torch.
    assert_eq!(
        functions::pow_tensor_scalar(&a, 1).unwrap().dtype(),
        ScalarType::ComplexHalf
    );
    functions::pow_tensor_scalar(&a, 0).unwrap();
    // What torch computes for complex32 still works.
    for r in [
        functions::add(&a, &b),
        functions::mul(&a, &b),
        functions::sub(&a, &b),
        functions::neg(&a),
        functions::eq(&a, &b),
        functions::addcmul(&a, &b, &c()),
    ] {
        r.unwrap();
    }
    // clamp with tensor bounds has no bool kernel (with Scalar bounds see above).
    refused(
        functions::clamp_tensor_with(&t, Some(&t), Some(&t)),
        "clamp_cpu",
        "Bool",
    );
}

/// `pow(Scalar, Tensor)` is not a TensorIterator op in PyTorch: its output is contiguous
/// whatever the exponent's layout (`torch.pow(7, t.T).stride()` is `(2, 1)`), a base of 1
/// fills with 1 (`torch.pow(1, tensor([nan+nanj]))` is `[1+0j]`), and out= goes through
/// `pow.Tensor_Tensor_out` with its casting check.
#[test]
fn pow_of_a_number_base() {
    let e = Tensor::from_slice(&[5i8, 4, 2, 3, 0, 2, 4, 3], &[2, 4]).unwrap();
    let e = e.transpose(0, 1).unwrap();
    let r = functions::pow_scalar(7, &e).unwrap();
    assert_eq!(r.strides().to_vec(), vec![2, 1]);
    assert_eq!(
        r.to_vec::<i8>().unwrap(),
        vec![-89, 1, 97, 49, 49, 97, 87, 87]
    );
    let nan = Tensor::from_slice(&[Complex::new(f32::NAN, f32::NAN)], &[1]).unwrap();
    let one = functions::pow_scalar(1, &nan).unwrap();
    assert_eq!(
        one.to_vec::<Complex<f32>>().unwrap(),
        vec![Complex::new(1.0, 0.0)]
    );
    let b = Tensor::from_slice(&[true, false], &[2]).unwrap();
    assert_eq!(
        functions::pow_scalar(1, &b).unwrap().dtype(),
        ScalarType::Long
    );
    let out = Tensor::empty(&[1], ScalarType::Long).unwrap();
    assert_eq!(
        msg(functions::pow_scalar_out(&out, 2, &f32s(&[1.5], &[1]))),
        "result type Float can't be cast to the desired output type Long"
    );
    // A given output keeps its layout.
    let o = Tensor::empty(&[2, 3], ScalarType::Float)
        .unwrap()
        .transpose(0, 1)
        .unwrap();
    functions::pow_scalar_out(&o, 2.0, &f32s(&[1.0; 6], &[3, 2])).unwrap();
    assert_eq!(o.strides().to_vec(), vec![1, 3]);
    assert_eq!(o.to_vec::<f32>().unwrap(), vec![2.0; 6]);
}

/// `reciprocal`: a unary float op (integers and bool give float32, `1/0` is inf), refused for
/// complex32 as torch's CPU build does (`"reciprocal_cpu" not implemented for 'ComplexHalf'`).
#[test]
fn reciprocal_follows_pytorch() {
    let i = Tensor::from_slice(&[2i32, 4], &[2]).unwrap();
    let r = functions::reciprocal(&i).unwrap();
    assert_eq!(r.dtype(), ScalarType::Float);
    assert_eq!(r.to_vec::<f32>().unwrap(), vec![0.5, 0.25]);
    let b = Tensor::from_slice(&[true, false], &[2]).unwrap();
    assert_eq!(
        functions::reciprocal(&b).unwrap().to_vec::<f32>().unwrap(),
        vec![1.0, f32::INFINITY]
    );
    let z = Tensor::from_slice(&[Complex::new(0.0f64, 2.0)], &[1]).unwrap();
    assert_eq!(
        functions::reciprocal(&z)
            .unwrap()
            .to_vec::<Complex<f64>>()
            .unwrap(),
        vec![Complex::new(0.0, -0.5)]
    );
    let c32 = z.to_dtype(ScalarType::ComplexHalf).unwrap();
    assert_eq!(
        msg(functions::reciprocal(&c32)),
        "\"reciprocal_cpu\" not implemented for 'ComplexHalf'"
    );
    let t = f32s(&[4.0], &[1]);
    t.reciprocal_().unwrap();
    assert_eq!(t.to_vec::<f32>().unwrap(), vec![0.25]);
}

/// PyTorch replaces a CPU input of another dtype than the common one by a temporary
/// `input.to(common)` (contiguous when the input is not dense, as an expanded one is), and
/// the result's layout follows the temporaries: `maximum(bool.expand(1, 3, 2), int8.T)` is
/// row-major in torch (strides (6, 2, 1)), while with an int8 first operand, which needs no
/// temporary, it follows the transposed one ((6, 1, 3)). ratten casts while streaming but
/// orders the dimensions the same way.
#[test]
fn result_layout_follows_pytorchs_cast_temporaries() {
    let b = Tensor::from_slice(&[5i8, -8, -2, -5, -6, 5], &[2, 3])
        .unwrap()
        .transpose(0, 1)
        .unwrap();
    let mask = Tensor::from_slice(&[false, true, true], &[1, 3, 1])
        .unwrap()
        .expand(&[1, 3, 2])
        .unwrap();
    let r = functions::maximum(&mask, &b).unwrap();
    assert_eq!(r.strides().to_vec(), vec![6, 2, 1]);
    assert_eq!(r.to_vec::<i8>().unwrap(), vec![5, 0, 1, 1, 1, 5]);
    let same = Tensor::from_slice(&[0i8, 1, 1], &[1, 3, 1])
        .unwrap()
        .expand(&[1, 3, 2])
        .unwrap();
    let r = functions::maximum(&same, &b).unwrap();
    assert_eq!(r.strides().to_vec(), vec![6, 1, 3]);
    // A dense input of another dtype keeps its layout in the temporary: a transposed float16
    // plus a transposed float32 stays transposed.
    let h = Tensor::from_slice(&[1.0f32; 6], &[2, 3])
        .unwrap()
        .to_dtype(ScalarType::Half)
        .unwrap()
        .transpose(0, 1)
        .unwrap();
    let f = f32s(&[1.0; 6], &[2, 3]).transpose(0, 1).unwrap();
    assert_eq!(
        functions::add(&h, &f).unwrap().strides().to_vec(),
        vec![1, 3]
    );
}
