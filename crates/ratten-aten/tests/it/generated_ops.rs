//! The generated operator API, form by form: functions, methods, in-place, out= (resize with
//! its warning, proxy), Meta, backend direct functions, handles, std::ops, error paths.

use crate::common::msg;
use ratten_aten::operators::Operator;
use ratten_aten::structured::capture_warnings;
use ratten_aten::{backends, functions, operators, Tensor};
use ratten_core::{Device, DispatchKeySet, Scalar, ScalarType};

fn f32s(v: &[f32], sizes: &[i64]) -> Tensor {
    Tensor::from_slice(v, sizes).unwrap()
}

fn i64s(v: &[i64], sizes: &[i64]) -> Tensor {
    Tensor::from_slice(v, sizes).unwrap()
}

#[test]
fn function_and_method_forms() {
    let a = f32s(&[1., 2., 3.], &[3]);
    let b = f32s(&[10., 20., 30.], &[3]);
    assert_eq!(
        functions::add(&a, &b).unwrap().to_vec::<f32>().unwrap(),
        vec![11., 22., 33.]
    );
    assert_eq!(
        a.add(&b).unwrap().to_vec::<f32>().unwrap(),
        vec![11., 22., 33.]
    );
    // alpha=2 through the `_with` form.
    assert_eq!(
        a.add_with(&b, 2).unwrap().to_vec::<f32>().unwrap(),
        vec![21., 42., 63.]
    );
    assert_eq!(
        functions::sub_with(&b, &a, 0.5)
            .unwrap()
            .to_vec::<f32>()
            .unwrap(),
        vec![9.5, 19., 28.5]
    );
    assert_eq!(
        a.mul(&b).unwrap().to_vec::<f32>().unwrap(),
        vec![10., 40., 90.]
    );
    assert_eq!(
        a.neg().unwrap().to_vec::<f32>().unwrap(),
        vec![-1., -2., -3.]
    );
    // The Scalar overload (CompositeExplicitAutograd kernel).
    assert_eq!(
        a.add_scalar(1).unwrap().to_vec::<f32>().unwrap(),
        vec![2., 3., 4.]
    );
    assert_eq!(
        a.add_scalar_with(1, 3).unwrap().to_vec::<f32>().unwrap(),
        vec![4., 5., 6.]
    );
    assert_eq!(
        a.mul_scalar(2.5).unwrap().to_vec::<f32>().unwrap(),
        vec![2.5, 5., 7.5]
    );
}

#[test]
fn broadcasting_and_type_promotion() {
    let a = i64s(&[1, 2, 3], &[3]);
    let b = f32s(&[0.5, 1.5], &[2, 1]);
    let r = a.add(&b).unwrap();
    assert_eq!(
        (r.sizes().as_slice(), r.dtype()),
        (&[2i64, 3][..], ScalarType::Float)
    );
    assert_eq!(
        r.to_vec::<f32>().unwrap(),
        vec![1.5, 2.5, 3.5, 2.5, 3.5, 4.5]
    );
    // An int tensor plus a Python-style float number gives the default dtype.
    assert_eq!(a.add_scalar(0.5).unwrap().dtype(), ScalarType::Float);
    // True division of ints is float.
    assert_eq!(
        a.div(&i64s(&[2, 2, 2], &[3]))
            .unwrap()
            .to_vec::<f32>()
            .unwrap(),
        vec![0.5, 1., 1.5]
    );
    // Python's remainder: the sign of the divisor.
    assert_eq!(
        i64s(&[-3, 3], &[2])
            .remainder(&i64s(&[2, -2], &[2]))
            .unwrap()
            .to_vec::<i64>()
            .unwrap(),
        vec![1, -1]
    );
    assert_eq!(
        i64s(&[12], &[1])
            .bitwise_and(&i64s(&[10], &[1]))
            .unwrap()
            .to_vec::<i64>()
            .unwrap(),
        vec![8]
    );
}

#[test]
fn inplace_forms_write_self_and_check() {
    let a = f32s(&[1., 2., 3.], &[3]);
    let r = a.add_(&f32s(&[1., 1., 1.], &[3])).unwrap();
    assert!(r.is_same(&a));
    assert_eq!(a.to_vec::<f32>().unwrap(), vec![2., 3., 4.]);
    a.mul_scalar_(2).unwrap();
    assert_eq!(a.to_vec::<f32>().unwrap(), vec![4., 6., 8.]);
    functions::neg_(&a).unwrap();
    assert_eq!(a.to_vec::<f32>().unwrap(), vec![-4., -6., -8.]);
    // PyTorch's errors: an in-place output cannot broadcast, nor take a wider dtype.
    assert_eq!(
        msg(a.add_(&f32s(&[1.; 6], &[2, 3]))),
        "output with shape [3] doesn't match the broadcast shape [2, 3]"
    );
    let i = i64s(&[1, 2, 3], &[3]);
    assert_eq!(
        msg(i.add_(&a)),
        "result type Float can't be cast to the desired output type Long"
    );
    assert_eq!(
        msg(i.add_with_(&i64s(&[1, 1, 1], &[3]), 1.5)),
        "For integral input tensors, argument alpha must not be a floating point number."
    );
}

#[test]
fn out_forms_resize_with_the_warning() {
    let a = f32s(&[1., 2., 3.], &[3]);
    let out = Tensor::empty(&[2], ScalarType::Float).unwrap();
    let (r, warnings) = capture_warnings(|| functions::add_out(&out, &a, &a).cloned());
    assert!(r.unwrap().is_same(&out));
    assert_eq!(out.to_vec::<f32>().unwrap(), vec![2., 4., 6.]);
    assert_eq!(warnings.len(), 1);
    assert_eq!(
        warnings[0].message,
        "An output with one or more elements was resized since it had shape [2], which does not match the required output shape [3]. This behavior is deprecated, and in a future PyTorch release outputs will not be resized unless they have zero elements. You can explicitly reuse an out tensor t by resizing it, inplace, to zero elements with t.resize_(0)."
    );
    // A zero-element out is resized silently; a right-shaped one is not touched.
    let empty = Tensor::empty(&[0], ScalarType::Float).unwrap();
    let (r, warnings) = capture_warnings(|| functions::mul_out(&empty, &a, &a).map(|_| ()));
    r.unwrap();
    assert!(warnings.is_empty());
    assert_eq!(empty.to_vec::<f32>().unwrap(), vec![1., 4., 9.]);
    // out= keeps its own dtype when the result can be cast to it.
    let d = Tensor::empty(&[3], ScalarType::Double).unwrap();
    functions::add_out_with(&d, &a, &a, 2).unwrap();
    assert_eq!(d.to_vec::<f64>().unwrap(), vec![3., 6., 9.]);
    let l = Tensor::empty(&[3], ScalarType::Long).unwrap();
    assert_eq!(
        msg(functions::add_out(&l, &a, &a)),
        "result type Float can't be cast to the desired output type Long"
    );
}

#[test]
fn out_with_other_strides_goes_through_a_proxy() {
    // A transposed (non-contiguous) out of the right shape.
    let storage = Tensor::zeros(&[3, 2], ScalarType::Float).unwrap();
    let out = storage.t().unwrap();
    assert_eq!(out.strides().as_slice(), &[1, 2]);
    let a = f32s(&[1., 2., 3., 4., 5., 6.], &[2, 3]);
    functions::add_out(&out, &a, &a).unwrap();
    assert_eq!(out.strides().as_slice(), &[1, 2]);
    assert_eq!(
        out.contiguous().unwrap().to_vec::<f32>().unwrap(),
        vec![2., 4., 6., 8., 10., 12.]
    );
    assert_eq!(
        storage.to_vec::<f32>().unwrap(),
        vec![2., 8., 4., 10., 6., 12.]
    );
}

#[test]
fn generated_out_variant_from_autogen() {
    // add.Scalar_out comes from `autogen:` on add_.Scalar: functional result copied into out.
    let a = f32s(&[1., 2.], &[2]);
    let out = Tensor::empty(&[0], ScalarType::Float).unwrap();
    functions::add_scalar_out_with(&out, &a, 1, 10).unwrap();
    assert_eq!(out.to_vec::<f32>().unwrap(), vec![11., 12.]);
}

#[test]
fn optional_dim_argument() {
    let t = f32s(&[1., 9., 3., 7., 2., 8.], &[2, 3]);
    assert_eq!(t.argmax().unwrap().to_vec::<i64>().unwrap(), vec![1]);
    assert_eq!(t.argmax().unwrap().dim(), 0);
    let r = t.argmax_with(Some(1), false).unwrap();
    assert_eq!(
        (r.sizes().as_slice(), r.to_vec::<i64>().unwrap()),
        (&[2i64][..], vec![1, 2])
    );
    let r = functions::argmax_with(&t, Some(0), true).unwrap();
    assert_eq!(
        (r.sizes().as_slice(), r.to_vec::<i64>().unwrap()),
        (&[1i64, 3][..], vec![1, 0, 1])
    );
    assert_eq!(
        msg(t.argmax_with(Some(2), false)),
        "Dimension out of range (expected to be in range of [-2, 1], but got 2)"
    );
    let e = Tensor::empty(&[0], ScalarType::Float).unwrap();
    assert_eq!(
        msg(e.argmax()),
        "argmax(): Expected reduction dim to be specified for input.numel() == 0."
    );
    let wrong = Tensor::empty(&[2], ScalarType::Float).unwrap();
    assert_eq!(
        msg(functions::argmax_out_with(&wrong, &t, Some(1), false)),
        "Expected out tensor to have dtype long int, but got float instead"
    );
}

#[test]
fn meta_tensors_get_shapes_and_dtypes_without_kernels() {
    let a = Tensor::empty(&[4, 1], (ScalarType::Long, Device::META)).unwrap();
    let b = Tensor::empty(&[3], (ScalarType::Float, Device::META)).unwrap();
    let r = a.add(&b).unwrap();
    assert_eq!(
        (r.sizes().as_slice(), r.dtype(), r.device()),
        (&[4i64, 3][..], ScalarType::Float, Device::META)
    );
    assert_eq!(a.neg().unwrap().device(), Device::META);
    let m = a.argmax_with(Some(0), true).unwrap();
    assert_eq!(
        (m.sizes().as_slice(), m.dtype()),
        (&[1i64, 1][..], ScalarType::Long)
    );
    // The checks run on meta too.
    assert_eq!(
        msg(a.add_(&b)),
        "output with shape [4, 1] doesn't match the broadcast shape [4, 3]"
    );
    let out = Tensor::empty(&[1], (ScalarType::Float, Device::META)).unwrap();
    let (r, w) = capture_warnings(|| functions::mul_out(&out, &b, &b).map(|_| ()));
    r.unwrap();
    assert_eq!((out.sizes().as_slice(), w.len()), (&[3i64][..], 1));
    // Composite kernels (add.Scalar) work on meta through the structured op below them.
    assert_eq!(b.add_scalar(1).unwrap().sizes().as_slice(), &[3]);
    // The backend function of the Meta key, called directly.
    let d = backends::meta::mul(&b, &b).unwrap();
    assert_eq!(d.device(), Device::META);
}

#[test]
fn handles_backend_functions_and_redispatch() {
    assert_eq!(operators::add_Tensor::NAME, "aten::add");
    assert_eq!(operators::add_Tensor::OVERLOAD_NAME, "Tensor");
    assert_eq!(
        operators::add_Tensor::SCHEMA,
        "add.Tensor(Tensor self, Tensor other, *, Scalar alpha=1) -> Tensor"
    );
    let a = f32s(&[1., 2.], &[2]);
    let h = operators::add_Tensor::handle().unwrap();
    assert_eq!(h.handle().operator_name().to_string(), "aten::add.Tensor");
    let r = operators::add_Tensor::call(&a, &a, &Scalar::Int(1)).unwrap();
    assert_eq!(r.to_vec::<f32>().unwrap(), vec![2., 4.]);
    let ks = DispatchKeySet::from_key(ratten_core::DispatchKey::CPU);
    let r = operators::mul_Tensor::redispatch(ks, &a, &a).unwrap();
    assert_eq!(r.to_vec::<f32>().unwrap(), vec![1., 4.]);
    // at::cpu::add: no dispatcher.
    let r = backends::cpu::add(&a, &a, &Scalar::Int(3)).unwrap();
    assert_eq!(r.to_vec::<f32>().unwrap(), vec![4., 8.]);
    let out = Tensor::empty(&[2], ScalarType::Float).unwrap();
    backends::cpu::add_outf(&a, &a, &Scalar::Int(1), &out).unwrap();
    assert_eq!(out.to_vec::<f32>().unwrap(), vec![2., 4.]);
}

#[test]
fn std_ops_call_the_operators() {
    let a = f32s(&[1., 2.], &[2]);
    let b = f32s(&[4., 8.], &[2]);
    assert_eq!((&a + &b).to_vec::<f32>().unwrap(), vec![5., 10.]);
    assert_eq!((&b - &a).to_vec::<f32>().unwrap(), vec![3., 6.]);
    assert_eq!((&a * 3).to_vec::<f32>().unwrap(), vec![3., 6.]);
    assert_eq!((1.0 - &a).to_vec::<f32>().unwrap(), vec![0., -1.]);
    assert_eq!((&b / &a).to_vec::<f32>().unwrap(), vec![4., 4.]);
    assert_eq!((&b % 3).to_vec::<f32>().unwrap(), vec![1., 2.]);
    assert_eq!((-&a).to_vec::<f32>().unwrap(), vec![-1., -2.]);
    let i = i64s(&[6, 3], &[2]);
    assert_eq!((&i & 2i64).to_vec::<i64>().unwrap(), vec![2, 2]);
    assert_eq!((&i | 1i64).to_vec::<i64>().unwrap(), vec![7, 3]);
    assert_eq!((&i ^ &i).to_vec::<i64>().unwrap(), vec![0, 0]);
    assert_eq!((!&i).to_vec::<i64>().unwrap(), vec![-7, -4]);
    let mut c = a.clone();
    c += &b;
    c *= 2.0;
    c -= 1;
    assert_eq!(a.to_vec::<f32>().unwrap(), vec![9., 19.]);
    // Python-number promotion: an int tensor times a float number is float.
    assert_eq!((&i * 0.5).dtype(), ScalarType::Float);
}

#[test]
#[should_panic(
    expected = "The size of tensor a (2) must match the size of tensor b (3) at non-singleton dimension 0"
)]
fn std_ops_panic_with_the_error_message() {
    let _ = &f32s(&[1., 2.], &[2]) + &f32s(&[1., 2., 3.], &[3]);
}

#[test]
fn dtype_and_device_errors() {
    let b = Tensor::ones(&[2], ScalarType::Bool).unwrap();
    assert_eq!(
        msg(b.sub(&b)),
        "Subtraction, the `-` operator, with two bool tensors is not supported. Use the `^` or \
         `logical_xor()` operator instead."
    );
    // TORCH_CHECK_NOT_IMPLEMENTED in PyTorch 2.15's sub_check / neg: NotImplementedError
    // (checked against torch 2.15.0).
    assert_eq!(
        b.sub(&b).unwrap_err().kind(),
        ratten_core::ErrorKind::NotImplemented
    );
    assert_eq!(
        b.neg().unwrap_err().kind(),
        ratten_core::ErrorKind::NotImplemented
    );
    let i = i64s(&[1, 2], &[2]);
    assert!(msg(i.sub(&b))
        .starts_with("Subtraction, the `-` operator, with a bool tensor is not supported."));
    assert!(
        msg(b.neg()).starts_with("Negation, the `-` operator, on a bool tensor is not supported.")
    );
    let f = f32s(&[1.], &[1]);
    assert_eq!(
        msg(f.bitwise_and(&f)),
        "\"bitwise_and_cpu\" not implemented for 'Float'"
    );
    assert_eq!(
        msg(f.bitwise_not()),
        "\"bitwise_not_cpu\" not implemented for 'Float'"
    );
    let m = Tensor::empty(&[1], Device::META).unwrap();
    assert_eq!(
        msg(f.add(&m)),
        "Expected all tensors to be on the same device, but found at least two devices, meta and cpu!"
    );
}

fn f64s(v: &[f64], sizes: &[i64]) -> Tensor {
    Tensor::from_slice(v, sizes).unwrap()
}

#[test]
fn clamp_with_tensor_bounds() {
    let x = f32s(&[1., 5., 9.], &[3]);
    let lo = f32s(&[2., 2., 2.], &[3]);
    let hi = f32s(&[8., 4., 8.], &[3]);
    // torch.clamp(x, min=lo, max=hi) -> tensor([2., 4., 8.])
    let r = functions::clamp_tensor_with(&x, Some(&lo), Some(&hi)).unwrap();
    assert_eq!(r.to_vec::<f32>().unwrap(), vec![2., 4., 8.]);
    // Only min (maximum_stub), only max (minimum_stub), through the method.
    let three = f32s(&[3.], &[]);
    let r = x.clamp_tensor_with(Some(&three), None).unwrap();
    assert_eq!(r.to_vec::<f32>().unwrap(), vec![3., 5., 5f32.max(9.)]);
    let r = x.clamp_tensor_with(None, Some(&three)).unwrap();
    assert_eq!(r.to_vec::<f32>().unwrap(), vec![1., 3., 3.]);
    // Promotion over self/min/max: int64 self with a float bound gives float32.
    let i = i64s(&[1, 5, 9], &[3]);
    let half = f32s(&[4.5], &[]);
    let r = functions::clamp_tensor_with(&i, None, Some(&half)).unwrap();
    assert_eq!(r.dtype(), ScalarType::Float);
    assert_eq!(r.to_vec::<f32>().unwrap(), vec![1., 4.5, 4.5]);
    // In-place cannot change self's dtype.
    assert_eq!(
        msg(i.clamp_tensor_with_(Some(&half), None)),
        "result type Float can't be cast to the desired output type Long"
    );
    // With a Scalar bound torch prints self's caffe2::TypeMeta ("long int"), as
    // `torch.zeros(1, dtype=torch.long).clamp_(min=0.5)` does.
    assert_eq!(
        msg(functions::clamp_(&i, Some(Scalar::Double(0.5)))),
        "result type Float can't be cast to the desired output type long int"
    );
    // In-place and out= forms.
    let y = f32s(&[1., 5., 9.], &[3]);
    y.clamp_tensor_with_(Some(&lo), Some(&hi)).unwrap();
    assert_eq!(y.to_vec::<f32>().unwrap(), vec![2., 4., 8.]);
    let out = Tensor::empty(&[3], ScalarType::Double).unwrap();
    functions::clamp_tensor_out_with(&out, &x, Some(&lo), None).unwrap();
    assert_eq!(out.to_vec::<f64>().unwrap(), vec![2., 5., 9.]);
    // NaN propagates from self.
    let n = f32s(&[f32::NAN], &[1]);
    let r = functions::clamp_tensor_with(&n, Some(&lo), Some(&hi)).unwrap();
    assert!(r.to_vec::<f32>().unwrap()[0].is_nan());
    // Errors.
    assert_eq!(
        msg(functions::clamp_tensor(&x)),
        "torch.clamp: At least one of 'min' or 'max' must not be None"
    );
    let c = x.to_dtype(ScalarType::ComplexFloat).unwrap();
    assert_eq!(
        msg(functions::clamp_tensor_with(&c, Some(&lo), None)),
        "clamp is not supported for complex types"
    );
    assert_eq!(
        msg(functions::clamp_tensor_with(
            &x,
            Some(&f32s(&[1., 2.], &[2])),
            None
        )),
        "The size of tensor a (3) must match the size of tensor b (2) at non-singleton dimension 0"
    );
    // Scalar bounds keep working: relu is clamp_min(0).
    let r = f32s(&[-1., 2.], &[2]).relu().unwrap();
    assert_eq!(r.to_vec::<f32>().unwrap(), vec![0., 2.]);
    assert_eq!(
        msg(Tensor::ones(&[1], ScalarType::Bool).unwrap().relu()),
        "Boolean inputs not supported for relu"
    );
}

#[test]
fn lerp_with_tensor_and_scalar_weights() {
    let s = f32s(&[1., 2.], &[2]);
    let e = f32s(&[3., 6.], &[2]);
    let w = f32s(&[0.5, 0.25], &[2]);
    // torch.lerp(s, e, w) -> tensor([2., 3.])
    assert_eq!(
        functions::lerp(&s, &e, &w)
            .unwrap()
            .to_vec::<f32>()
            .unwrap(),
        vec![2., 3.]
    );
    assert_eq!(
        s.lerp_scalar(&e, 0.5).unwrap().to_vec::<f32>().unwrap(),
        vec![2., 4.]
    );
    let out = Tensor::empty(&[0], ScalarType::Float).unwrap();
    functions::lerp_out(&out, &s, &e, &w).unwrap();
    assert_eq!(out.to_vec::<f32>().unwrap(), vec![2., 3.]);
    functions::lerp_scalar_out(&out, &s, &e, 1.0).unwrap();
    assert_eq!(out.to_vec::<f32>().unwrap(), vec![3., 6.]);
    let a = s
        .to_dtype_with(ScalarType::Float, false, true, None)
        .unwrap();
    a.lerp_(&e, &w).unwrap();
    assert_eq!(a.to_vec::<f32>().unwrap(), vec![2., 3.]);
    let a = s
        .to_dtype_with(ScalarType::Float, false, true, None)
        .unwrap();
    a.lerp_scalar_(&e, 0.5).unwrap();
    assert_eq!(a.to_vec::<f32>().unwrap(), vec![2., 4.]);
    // A broadcast weight.
    let w0 = f32s(&[0.5], &[]);
    assert_eq!(
        s.lerp(&e, &w0).unwrap().to_vec::<f32>().unwrap(),
        vec![2., 4.]
    );
    // PyTorch prints the dtypes as TypeMeta does.
    let ed = f64s(&[3., 6.], &[2]);
    assert_eq!(
        msg(functions::lerp(&s, &ed, &w)),
        "expected dtype float for `end` but got dtype double"
    );
    assert_eq!(
        msg(functions::lerp(&s, &e, &f64s(&[0.5, 0.5], &[2]))),
        "expected dtype float for `weight` but got dtype double"
    );
}

#[test]
fn scalar_overloads_wrap_the_number() {
    let a = i64s(&[-3, 5], &[2]);
    // Python's % and C's fmod.
    assert_eq!(
        functions::remainder_scalar(&a, 2)
            .unwrap()
            .to_vec::<i64>()
            .unwrap(),
        vec![1, 1]
    );
    assert_eq!(
        functions::fmod_scalar(&a, 2)
            .unwrap()
            .to_vec::<i64>()
            .unwrap(),
        vec![-1, 1]
    );
    let out = Tensor::empty(&[0], ScalarType::Long).unwrap();
    functions::remainder_scalar_out(&out, &a, 4).unwrap();
    assert_eq!(out.to_vec::<i64>().unwrap(), vec![1, 1]);
    assert_eq!(
        functions::remainder_scalar_tensor(7, &i64s(&[4, -4], &[2]))
            .unwrap()
            .to_vec::<i64>()
            .unwrap(),
        vec![3, -1]
    );
    // A wrapped number does not promote an integer tensor; a float one goes to the default.
    let r = a.mul_scalar(2.5).unwrap();
    assert_eq!(r.dtype(), ScalarType::Float);
    assert_eq!(r.to_vec::<f32>().unwrap(), vec![-7.5, 12.5]);
    assert_eq!(a.add_scalar(1).unwrap().dtype(), ScalarType::Long);
    // pow: Tensor_Scalar and Scalar (a number base).
    assert_eq!(
        a.pow_tensor_scalar(2).unwrap().to_vec::<i64>().unwrap(),
        vec![9, 25]
    );
    assert_eq!(
        functions::pow_scalar(2, &i64s(&[1, 2, 3], &[3]))
            .unwrap()
            .to_vec::<i64>()
            .unwrap(),
        vec![2, 4, 8]
    );
    assert_eq!(
        msg(a.pow_tensor_scalar(-1)),
        "Integers to negative integer powers are not allowed."
    );
    assert_eq!(a.pow_tensor_scalar(0.5).unwrap().dtype(), ScalarType::Float);
    // rsub: other - alpha * self.
    let x = i64s(&[1, 2], &[2]);
    let y = i64s(&[10, 10], &[2]);
    assert_eq!(
        functions::rsub_with(&x, &y, 2)
            .unwrap()
            .to_vec::<i64>()
            .unwrap(),
        vec![8, 6]
    );
    assert_eq!(
        functions::rsub_scalar(&x, 10)
            .unwrap()
            .to_vec::<i64>()
            .unwrap(),
        vec![9, 8]
    );
    // div with a rounding mode and a Scalar divisor.
    let f = f32s(&[-7., 7.], &[2]);
    assert_eq!(
        functions::div_scalar_mode(&f, 2, Some("floor"))
            .unwrap()
            .to_vec::<f32>()
            .unwrap(),
        vec![-4., 3.]
    );
    assert_eq!(
        functions::div_scalar_mode(&f, 2, Some("trunc"))
            .unwrap()
            .to_vec::<f32>()
            .unwrap(),
        vec![-3., 3.]
    );
    assert_eq!(
        functions::div_scalar(&i64s(&[3], &[1]), 2)
            .unwrap()
            .to_vec::<f32>()
            .unwrap(),
        vec![1.5]
    );
    assert_eq!(
        msg(functions::div_scalar_mode(&f, 2, Some("round"))),
        "div expected rounding_mode to be one of None, 'trunc', or 'floor' but found 'round'"
    );
    // bitwise with Scalar on either side, comparisons with a Scalar.
    let b = i64s(&[12], &[1]);
    assert_eq!(
        functions::bitwise_and_scalar(&b, 10)
            .unwrap()
            .to_vec::<i64>()
            .unwrap(),
        vec![8]
    );
    assert_eq!(
        functions::bitwise_or_scalar_tensor(10, &b)
            .unwrap()
            .to_vec::<i64>()
            .unwrap(),
        vec![14]
    );
    assert_eq!(
        b.bitwise_xor_scalar(10).unwrap().to_vec::<i64>().unwrap(),
        vec![6]
    );
    assert_eq!(
        a.gt_scalar(0).unwrap().to_vec::<bool>().unwrap(),
        vec![false, true]
    );
    assert_eq!(
        a.eq_scalar(5).unwrap().to_vec::<bool>().unwrap(),
        vec![false, true]
    );
    // where with Scalar branches.
    let c = Tensor::from_slice(&[true, false], &[2]).unwrap();
    let w = functions::where_scalar_other(&c, &f, 0.5).unwrap();
    assert_eq!(w.dtype(), ScalarType::Float);
    assert_eq!(w.to_vec::<f32>().unwrap(), vec![-7., 0.5]);
    let w = functions::where_scalar(&c, 1, 2).unwrap();
    assert_eq!(w.dtype(), ScalarType::Long);
    assert_eq!(w.to_vec::<i64>().unwrap(), vec![1, 2]);
    assert_eq!(
        msg(functions::r#where(&f, &f, &f)),
        "where expected condition to be a boolean tensor, but got a tensor with dtype Float"
    );
    // The autogen out= of a composite Scalar overload.
    let out = Tensor::empty(&[0], ScalarType::Long).unwrap();
    functions::rsub_scalar_out(&out, &x, 10).unwrap();
    assert_eq!(out.to_vec::<i64>().unwrap(), vec![9, 8]);
}

#[test]
fn to_dtype_copy_and_fill() {
    let f = f32s(&[1.7, -1.7], &[2]);
    // to(dtype) truncates toward zero, as static_cast does.
    let i = f.to_dtype(ScalarType::Int).unwrap();
    assert_eq!(i.dtype(), ScalarType::Int);
    assert_eq!(i.to_vec::<i32>().unwrap(), vec![1, -1]);
    // The same dtype returns self (an alias), copy=True a new tensor.
    assert!(f.to_dtype(ScalarType::Float).unwrap().is_same(&f));
    let c = f
        .to_dtype_with(ScalarType::Float, false, true, None)
        .unwrap();
    assert!(!c.is_same(&f));
    assert_eq!(c.to_vec::<f32>().unwrap(), vec![1.7, -1.7]);
    // to(other), to(device, dtype), to(dtype=..., device=...).
    let d = f.to_other(&f64s(&[0.], &[1])).unwrap();
    assert_eq!(d.dtype(), ScalarType::Double);
    let m = f.to_device(Device::META, ScalarType::Half).unwrap();
    assert!(m.is_meta());
    assert_eq!(m.dtype(), ScalarType::Half);
    assert_eq!(m.sizes().to_vec(), vec![2]);
    let b = f
        .to_dtype_layout_with(Some(ScalarType::Bool), None, None, None, false, false, None)
        .unwrap();
    assert_eq!(b.to_vec::<bool>().unwrap(), vec![true, true]);
    assert_eq!(
        msg(m.to_device(Device::CPU, ScalarType::Float)),
        "Cannot copy out of meta tensor; no data!"
    );
    // A transposed source keeps its layout (memory_format=preserve).
    let t2 = f32s(&[1., 2., 3., 4., 5., 6.], &[2, 3]).t().unwrap();
    let p = t2.to_dtype(ScalarType::Double).unwrap();
    assert_eq!(p.strides().to_vec(), t2.strides().to_vec());
    assert_eq!(p.to_vec::<f64>().unwrap(), vec![1., 4., 2., 5., 3., 6.]);

    // copy_ converts dtypes and broadcasts.
    let dst = Tensor::zeros(&[2, 2], ScalarType::Int).unwrap();
    dst.copy_(&f32s(&[1.9, -2.9], &[2])).unwrap();
    assert_eq!(dst.to_vec::<i32>().unwrap(), vec![1, -2, 1, -2]);
    let r = functions::copy(&dst, &f32s(&[7.], &[])).unwrap();
    assert_eq!(r.dtype(), ScalarType::Int);
    assert_eq!(r.to_vec::<i32>().unwrap(), vec![7; 4]);
    let e = Tensor::zeros(&[3], ScalarType::Int).unwrap();
    assert_eq!(
        msg(e.copy_(&f32s(&[1., 2.], &[2]))),
        "The size of tensor a (3) must match the size of tensor b (2) at non-singleton dimension 0"
    );

    // fill_ with a Scalar and with a 0-dim Tensor; fill (functional).
    let t = Tensor::zeros(&[3], ScalarType::Long).unwrap();
    functions::fill_(&t, &f32s(&[3.7], &[])).unwrap();
    assert_eq!(t.to_vec::<i64>().unwrap(), vec![3; 3]);
    t.fill_scalar_(5).unwrap();
    assert_eq!(t.to_vec::<i64>().unwrap(), vec![5; 3]);
    assert_eq!(
        msg(functions::fill_(&t, &f32s(&[1., 2.], &[2]))),
        "fill_ only supports 0-dimension value tensor but got tensor with 1 dimensions."
    );
    let g = functions::fill_scalar(&t, 9).unwrap();
    assert_eq!(g.to_vec::<i64>().unwrap(), vec![9; 3]);
    assert_eq!(t.to_vec::<i64>().unwrap(), vec![5; 3]);
    let g = functions::fill(&t, &i64s(&[2], &[])).unwrap();
    assert_eq!(g.to_vec::<i64>().unwrap(), vec![2; 3]);
}

#[test]
fn abs_logical_and_unary_overloads() {
    let i = i64s(&[-2, 0, 3], &[3]);
    assert_eq!(i.abs().unwrap().to_vec::<i64>().unwrap(), vec![2, 0, 3]);
    let out = Tensor::empty(&[0], ScalarType::Long).unwrap();
    functions::abs_out(&out, &i).unwrap();
    assert_eq!(out.to_vec::<i64>().unwrap(), vec![2, 0, 3]);
    // logical ops: a bool result; in-place keeps self's dtype.
    let f = f32s(&[0., 2., 0.], &[3]);
    assert_eq!(
        i.logical_and(&f).unwrap().to_vec::<bool>().unwrap(),
        vec![false, false, false]
    );
    assert_eq!(
        i.logical_or(&f).unwrap().to_vec::<bool>().unwrap(),
        vec![true, true, true]
    );
    assert_eq!(
        i.logical_xor(&f).unwrap().to_vec::<bool>().unwrap(),
        vec![true, true, true]
    );
    assert_eq!(
        i.logical_not().unwrap().to_vec::<bool>().unwrap(),
        vec![false, true, false]
    );
    let g = f32s(&[0., 2., 0.], &[3]);
    g.logical_or_(&i).unwrap();
    assert_eq!(g.dtype(), ScalarType::Float);
    assert_eq!(g.to_vec::<f32>().unwrap(), vec![1., 1., 1.]);
    // The float family on an integer tensor computes in the default dtype.
    let e = i.exp().unwrap();
    assert_eq!(e.dtype(), ScalarType::Float);
    let s = f32s(&[0.], &[1]);
    for (r, want) in [
        (s.sin(), 0.0f32),
        (s.cos(), 1.0),
        (s.tan(), 0.0),
        (s.tanh(), 0.0),
        (s.sigmoid(), 0.5),
        (s.exp(), 1.0),
        (s.expm1(), 0.0),
        (s.log1p(), 0.0),
        (s.sqrt(), 0.0),
        (s.rsqrt(), f32::INFINITY),
        (s.log(), f32::NEG_INFINITY),
        (s.sign(), 0.0),
    ] {
        assert_eq!(r.unwrap().to_vec::<f32>().unwrap(), vec![want]);
    }
    assert_eq!(
        msg(f32s(&[1.], &[1])
            .to_dtype(ScalarType::ComplexFloat)
            .unwrap()
            .sign()),
        "Unlike NumPy, torch.sign is not intended to support complex numbers. Please use \
         torch.sgn instead."
    );
    // addcmul / addcdiv with value.
    let a = f32s(&[1., 1.], &[2]);
    let t1 = f32s(&[2., 3.], &[2]);
    let t2 = f32s(&[4., 6.], &[2]);
    assert_eq!(
        a.addcmul_with(&t1, &t2, 0.5)
            .unwrap()
            .to_vec::<f32>()
            .unwrap(),
        vec![5., 10.]
    );
    assert_eq!(
        a.addcdiv_with(&t1, &t2, 2)
            .unwrap()
            .to_vec::<f32>()
            .unwrap(),
        vec![2., 2.]
    );
    assert!(msg(functions::addcdiv(
        &a,
        &i64s(&[1, 1], &[2]),
        &i64s(&[1, 1], &[2])
    ))
    .starts_with("Integer division with addcdiv is no longer supported"));
}

/// Every declared pointwise overload on meta tensors: shapes and dtypes, no data.
#[test]
fn every_pointwise_op_runs_under_meta() {
    let meta = |dt: ScalarType, sizes: &[i64]| Tensor::empty(sizes, (dt, Device::META)).unwrap();
    let a = meta(ScalarType::Float, &[2, 3]);
    let b = meta(ScalarType::Float, &[3]);
    let i = meta(ScalarType::Long, &[2, 3]);
    let c = meta(ScalarType::Bool, &[2, 3]);
    let w0 = meta(ScalarType::Float, &[]);
    let check = |r: ratten_core::Result<Tensor>, dt: ScalarType, what: &str| {
        let r = r.unwrap_or_else(|e| panic!("{what}: {}", e.message()));
        assert!(r.is_meta(), "{what}");
        assert_eq!(r.dtype(), dt, "{what}");
        assert_eq!(r.sizes().to_vec(), vec![2, 3], "{what}");
    };
    use ScalarType::{Bool, Float, Long};
    check(a.add(&b), Float, "add");
    check(a.add_scalar(1), Float, "add.Scalar");
    check(a.sub(&b), Float, "sub");
    check(a.sub_scalar(1), Float, "sub.Scalar");
    check(functions::rsub(&a, &b), Float, "rsub");
    check(functions::rsub_scalar(&a, 1), Float, "rsub.Scalar");
    check(a.mul(&b), Float, "mul");
    check(a.mul_scalar(2), Float, "mul.Scalar");
    check(i.div(&i), Float, "div");
    check(
        i.div_tensor_mode(&i, Some("floor")),
        Long,
        "div.Tensor_mode",
    );
    check(a.div_scalar(2), Float, "div.Scalar");
    check(
        a.div_scalar_mode(2, Some("trunc")),
        Float,
        "div.Scalar_mode",
    );
    check(i.remainder(&i), Long, "remainder");
    check(i.remainder_scalar(2), Long, "remainder.Scalar");
    check(i.fmod(&i), Long, "fmod");
    check(i.fmod_scalar(2), Long, "fmod.Scalar");
    check(a.pow_tensor_tensor(&b), Float, "pow.Tensor_Tensor");
    check(a.pow_tensor_scalar(2), Float, "pow.Tensor_Scalar");
    check(functions::pow_scalar(2, &i), Long, "pow.Scalar");
    check(a.maximum(&b), Float, "maximum");
    check(a.minimum(&b), Float, "minimum");
    check(a.eq(&b), Bool, "eq");
    check(a.ne_scalar(1), Bool, "ne.Scalar");
    check(a.lt(&b), Bool, "lt");
    check(a.le(&b), Bool, "le");
    check(a.gt(&b), Bool, "gt");
    check(a.ge_scalar(0), Bool, "ge.Scalar");
    check(a.logical_and(&i), Bool, "logical_and");
    check(a.logical_or(&i), Bool, "logical_or");
    check(a.logical_xor(&i), Bool, "logical_xor");
    check(a.logical_not(), Bool, "logical_not");
    check(i.bitwise_and(&i), Long, "bitwise_and");
    check(i.bitwise_or_scalar(1), Long, "bitwise_or.Scalar");
    check(i.bitwise_xor(&i), Long, "bitwise_xor");
    check(i.bitwise_not(), Long, "bitwise_not");
    check(a.neg(), Float, "neg");
    check(a.abs(), Float, "abs");
    check(a.sign(), Float, "sign");
    for (r, what) in [
        (i.exp(), "exp"),
        (i.log(), "log"),
        (i.log1p(), "log1p"),
        (i.expm1(), "expm1"),
        (i.sqrt(), "sqrt"),
        (i.rsqrt(), "rsqrt"),
        (i.sin(), "sin"),
        (i.cos(), "cos"),
        (i.tan(), "tan"),
        (i.tanh(), "tanh"),
        (i.sigmoid(), "sigmoid"),
    ] {
        check(r, Float, what);
    }
    check(a.relu(), Float, "relu");
    check(a.clamp(Some(Scalar::Int(0))), Float, "clamp");
    check(
        a.clamp_tensor_with(Some(&b), Some(&w0)),
        Float,
        "clamp.Tensor",
    );
    check(a.r#where(&c, &b), Float, "where.self");
    check(
        functions::where_scalar_other(&c, &a, 1),
        Float,
        "where.ScalarOther",
    );
    check(a.lerp_scalar(&b, 0.5), Float, "lerp.Scalar");
    check(a.lerp(&b, &w0), Float, "lerp.Tensor");
    check(a.addcmul(&b, &w0), Float, "addcmul");
    check(a.addcdiv(&b, &w0), Float, "addcdiv");
    check(a.to_dtype(Long), Long, "to.dtype");
    check(functions::copy(&a, &b), Float, "copy");
    check(functions::fill_scalar(&a, 1), Float, "fill.Scalar");
    check(functions::fill(&a, &w0), Float, "fill.Tensor");
    // In-place and out= under Meta.
    a.add_(&b).unwrap();
    a.copy_(&b).unwrap();
    functions::fill_scalar_(&a, 2).unwrap();
    let out = meta(Float, &[0]);
    functions::clamp_tensor_out_with(&out, &a, Some(&b), None).unwrap();
    assert_eq!(out.sizes().to_vec(), vec![2, 3]);
    let out = meta(Bool, &[0]);
    functions::logical_and_out(&out, &a, &b).unwrap();
    assert_eq!(out.sizes().to_vec(), vec![2, 3]);
}

/// `floor_divide` is `div(rounding_mode="floor")`: torch 2.15's values and dtypes, its
/// in-place, out= and Scalar forms (the last one's out= from `autogen`), and meta tensors.
#[test]
fn floor_divide_rounds_toward_negative_infinity() {
    let i = i64s(&[7, -7, 5], &[3]);
    let d = i64s(&[2, 2, -2], &[3]);
    // torch.floor_divide(tensor([7, -7, 5]), tensor([2, 2, -2])) -> tensor([3, -4, -3])
    let r = functions::floor_divide(&i, &d).unwrap();
    assert_eq!(
        (r.dtype(), r.to_vec::<i64>().unwrap()),
        (ScalarType::Long, vec![3, -4, -3])
    );
    let r = i.floor_divide_scalar(2).unwrap();
    assert_eq!(r.to_vec::<i64>().unwrap(), vec![3, -4, 2]);
    // Promotion: int64 // 2.5 is float32.
    let r = i.floor_divide_scalar(2.5).unwrap();
    assert_eq!(
        (r.dtype(), r.to_vec::<f32>().unwrap()),
        (ScalarType::Float, vec![2., -3., 2.])
    );
    let f = f32s(&[7.5, -7.5, 0.5], &[3]);
    let zero = f32s(&[0.], &[]);
    assert_eq!(
        f.floor_divide(&zero).unwrap().to_vec::<f32>().unwrap(),
        vec![f32::INFINITY, f32::NEG_INFINITY, f32::INFINITY]
    );
    assert_eq!(msg(i.floor_divide_scalar(0)), "ZeroDivisionError");
    let j = i64s(&[7, -7, 5], &[3]);
    j.floor_divide_(&d).unwrap();
    assert_eq!(j.to_vec::<i64>().unwrap(), vec![3, -4, -3]);
    j.floor_divide_scalar_(2).unwrap();
    assert_eq!(j.to_vec::<i64>().unwrap(), vec![1, -2, -2]);
    // In-place cannot change self's dtype.
    assert_eq!(
        msg(j.floor_divide_scalar_(2.5)),
        "result type Float can't be cast to the desired output type Long"
    );
    let out = Tensor::empty(&[3], ScalarType::Long).unwrap();
    functions::floor_divide_out(&out, &i, &d).unwrap();
    assert_eq!(out.to_vec::<i64>().unwrap(), vec![3, -4, -3]);
    functions::floor_divide_scalar_out(&out, &i, 3).unwrap();
    assert_eq!(out.to_vec::<i64>().unwrap(), vec![2, -3, 1]);
    let m = Tensor::empty(&[4, 1], (ScalarType::Long, Device::META)).unwrap();
    let r = m.floor_divide_scalar(2.0).unwrap();
    assert_eq!(
        (r.sizes().as_slice(), r.dtype(), r.device()),
        (&[4i64, 1][..], ScalarType::Float, Device::META)
    );
}

/// `clip` is `clamp` under another name, every overload.
#[test]
fn clip_is_clamp() {
    let x = f32s(&[-3., 0.5, 9.], &[3]);
    let r = x.clip_with(Some((-1).into()), Some(1.into())).unwrap();
    assert_eq!(r.to_vec::<f32>().unwrap(), vec![-1., 0.5, 1.]);
    let r = functions::clip(&x, Some(0.into())).unwrap();
    assert_eq!(r.to_vec::<f32>().unwrap(), vec![0., 0.5, 9.]);
    let (lo, hi) = (f32s(&[0., 0., 0.], &[3]), f32s(&[1., 1., 1.], &[3]));
    let r = x.clip_tensor_with(Some(&lo), Some(&hi)).unwrap();
    assert_eq!(r.to_vec::<f32>().unwrap(), vec![0., 0.5, 1.]);
    let y = f32s(&[-3., 0.5, 9.], &[3]);
    y.clip_with_(None, Some(1.into())).unwrap();
    assert_eq!(y.to_vec::<f32>().unwrap(), vec![-3., 0.5, 1.]);
    y.clip_tensor_with_(Some(&lo), None).unwrap();
    assert_eq!(y.to_vec::<f32>().unwrap(), vec![0., 0.5, 1.]);
    let out = Tensor::empty(&[3], ScalarType::Float).unwrap();
    functions::clip_out_with(&out, &x, None, Some(2.into())).unwrap();
    assert_eq!(out.to_vec::<f32>().unwrap(), vec![-3., 0.5, 2.]);
    functions::clip_tensor_out_with(&out, &x, None, Some(&hi)).unwrap();
    assert_eq!(out.to_vec::<f32>().unwrap(), vec![-3., 0.5, 1.]);
    assert_eq!(
        msg(x.clip_with(None, None)),
        "torch.clamp: At least one of 'min' or 'max' must not be None"
    );
}

/// `isnan` is `self != self` (bool, false for integers); its out= comes from `autogen`.
#[test]
fn isnan_marks_nans() {
    let x = f32s(&[1., f32::NAN, f32::INFINITY], &[3]);
    let r = x.isnan().unwrap();
    assert_eq!(
        (r.dtype(), r.to_vec::<bool>().unwrap()),
        (ScalarType::Bool, vec![false, true, false])
    );
    assert_eq!(
        functions::isnan(&i64s(&[1, 2], &[2]))
            .unwrap()
            .to_vec::<bool>()
            .unwrap(),
        vec![false, false]
    );
    let out = Tensor::empty(&[3], ScalarType::Bool).unwrap();
    functions::isnan_out(&out, &x).unwrap();
    assert_eq!(out.to_vec::<bool>().unwrap(), vec![false, true, false]);
    let m = Tensor::empty(&[2, 3], (ScalarType::Float, Device::META)).unwrap();
    let r = m.isnan().unwrap();
    assert_eq!(
        (r.sizes().as_slice(), r.dtype()),
        (&[2i64, 3][..], ScalarType::Bool)
    );
}

/// `nan_to_num`: torch 2.15's defaults (0, and the dtype's largest and lowest finite values),
/// the values given, half's own range, complex parts each on their own, integers copied,
/// out= of another dtype refused.
#[test]
fn nan_to_num_replaces_non_finite_values() {
    let x = f32s(&[f32::NAN, f32::INFINITY, f32::NEG_INFINITY, 1.5], &[4]);
    assert_eq!(
        x.nan_to_num().unwrap().to_vec::<f32>().unwrap(),
        vec![0., f32::MAX, f32::MIN, 1.5]
    );
    let r = x.nan_to_num_with(Some(2.0), Some(3.0), None).unwrap();
    assert_eq!(r.to_vec::<f32>().unwrap(), vec![2., 3., f32::MIN, 1.5]);
    // A replacement past float32's range is infinite, as static_cast<float> makes it.
    let r = x.nan_to_num_with(None, Some(1e300), None).unwrap();
    assert_eq!(r.to_vec::<f32>().unwrap()[1], f32::INFINITY);
    let h = x.to_dtype(ScalarType::Half).unwrap().nan_to_num().unwrap();
    assert_eq!(h.to_vec::<half::f16>().unwrap()[1], half::f16::MAX);
    let d = f64s(&[f64::NAN, f64::NEG_INFINITY], &[2]);
    assert_eq!(
        d.nan_to_num().unwrap().to_vec::<f64>().unwrap(),
        vec![0., f64::MIN]
    );
    let z = x.to_dtype(ScalarType::ComplexFloat).unwrap();
    let r = z.nan_to_num_with(Some(7.0), None, None).unwrap();
    let v = r.to_vec::<ratten_core::dtype::c64>().unwrap();
    assert_eq!(
        (v[0].re, v[0].im, v[1].re, v[3].re),
        (7., 0., f32::MAX, 1.5)
    );
    let i = i64s(&[1, -2], &[2]);
    assert_eq!(
        i.nan_to_num().unwrap().to_vec::<i64>().unwrap(),
        vec![1, -2]
    );
    let y = f32s(&[f32::NAN, 1.], &[2]);
    functions::nan_to_num_with_(&y, Some(-1.0), None, None).unwrap();
    assert_eq!(y.to_vec::<f32>().unwrap(), vec![-1., 1.]);
    let wrong = Tensor::empty(&[4], ScalarType::Double).unwrap();
    assert_eq!(
        msg(functions::nan_to_num_out(&wrong, &x)),
        "nan_to_num: dtype of out: Double should be same as input: Float"
    );
    let m = Tensor::empty(&[2], (ScalarType::Float, Device::META)).unwrap();
    assert_eq!(m.nan_to_num().unwrap().device(), Device::META);
}

/// `type_as` is `self.to(other.options())`: other's dtype (and device), self itself when
/// nothing changes.
#[test]
fn type_as_takes_the_other_dtype() {
    let x = f32s(&[1.5, -2.5], &[2]);
    let r = x.type_as(&i64s(&[0], &[1])).unwrap();
    assert_eq!(
        (r.dtype(), r.to_vec::<i64>().unwrap()),
        (ScalarType::Long, vec![1, -2])
    );
    assert!(x.type_as(&f32s(&[0.], &[1])).unwrap().is_same(&x));
    let m = Tensor::empty(&[1], (ScalarType::Double, Device::META)).unwrap();
    let r = x.type_as(&m).unwrap();
    assert_eq!((r.dtype(), r.device()), (ScalarType::Double, Device::META));
}

/// `isinf` and `isfinite`: either part of a complex value counts, integers are always finite,
/// half keeps its own infinities; on meta, shapes only.
#[test]
fn isinf_and_isfinite() {
    let x = f32s(&[1., f32::NAN, f32::INFINITY, f32::NEG_INFINITY], &[4]);
    assert_eq!(
        x.isinf().unwrap().to_vec::<bool>().unwrap(),
        vec![false, false, true, true]
    );
    assert_eq!(
        x.isfinite().unwrap().to_vec::<bool>().unwrap(),
        vec![true, false, false, false]
    );
    let h = x.to_dtype(ScalarType::Half).unwrap();
    assert_eq!(
        h.isinf().unwrap().to_vec::<bool>().unwrap(),
        vec![false, false, true, true]
    );
    // Values past half's range became infinite in the conversion.
    let big = f32s(&[70000.], &[1]).to_dtype(ScalarType::Half).unwrap();
    assert_eq!(big.isinf().unwrap().to_vec::<bool>().unwrap(), vec![true]);
    let i = i64s(&[1, -2], &[2]);
    assert_eq!(
        i.isinf().unwrap().to_vec::<bool>().unwrap(),
        vec![false, false]
    );
    assert_eq!(
        i.isfinite().unwrap().to_vec::<bool>().unwrap(),
        vec![true, true]
    );
    // Complex: 3e38 + 3e38j is finite although its magnitude is not a finite float.
    let z = f32s(&[3e38, f32::INFINITY], &[2])
        .to_dtype(ScalarType::ComplexFloat)
        .unwrap()
        .add_scalar(ratten_core::Scalar::ComplexDouble(
            num_complex::Complex64::new(0.0, 3e38),
        ))
        .unwrap();
    assert_eq!(
        z.isinf().unwrap().to_vec::<bool>().unwrap(),
        vec![false, true]
    );
    assert_eq!(
        z.isfinite().unwrap().to_vec::<bool>().unwrap(),
        vec![true, false]
    );
    let out = Tensor::empty(&[4], ScalarType::Bool).unwrap();
    functions::isinf_out(&out, &x).unwrap();
    assert_eq!(
        out.to_vec::<bool>().unwrap(),
        vec![false, false, true, true]
    );
    let m = Tensor::empty(&[2, 2], (ScalarType::Double, Device::META)).unwrap();
    let r = m.isfinite().unwrap();
    assert_eq!(
        (r.sizes().as_slice(), r.dtype(), r.device()),
        (&[2i64, 2][..], ScalarType::Bool, Device::META)
    );
}
