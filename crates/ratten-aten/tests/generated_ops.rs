//! The generated operator API, form by form: functions, methods, in-place, out= (resize with
//! its warning, proxy), Meta, backend direct functions, handles, std::ops, error paths.

use ratten_aten::structured::capture_warnings;
use ratten_aten::{backends, functions, operators, Tensor};
use ratten_core::{Device, DispatchKeySet, Scalar, ScalarType};

fn f32s(v: &[f32], sizes: &[i64]) -> Tensor {
    Tensor::from_slice(v, sizes).unwrap()
}

fn i64s(v: &[i64], sizes: &[i64]) -> Tensor {
    Tensor::from_slice(v, sizes).unwrap()
}

fn msg<T: std::fmt::Debug>(r: ratten_core::Result<T>) -> String {
    r.unwrap_err().message().to_string()
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
    assert!(msg(b.sub(&b))
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
        "Expected all tensors to be on the same device, but found at least two devices, cpu and meta!"
    );
}
