//! myops::scaled_add through ratten's dispatcher: function, method, in-place, out=, Meta,
//! errors, and the registration as the dispatcher sees it.

use std::path::Path;

use myops::{generated, TensorMyopsExt};
use ratten_aten::structured::capture_warnings;
use ratten_aten::Tensor;
use ratten_core::{Device, ErrorKind, ScalarType};
use ratten_dispatch::{Dispatcher, Operator};
use ratten_schema::OperatorName;

fn t(v: &[f32]) -> Tensor {
    Tensor::from_slice(v, &[v.len() as i64]).unwrap()
}

#[test]
fn function_and_method() {
    let a = t(&[1., 2., 3.]);
    let b = t(&[10., 20., 30.]);
    assert_eq!(
        myops::scaled_add(&a, &b).unwrap().to_vec::<f32>().unwrap(),
        vec![11., 22., 33.]
    );
    assert_eq!(
        a.scaled_add_with(&b, 0.1).unwrap().to_vec::<f32>().unwrap(),
        vec![2., 4., 6.]
    );
    // Broadcasting.
    let col = Tensor::from_slice(&[1.0f32, 2.0], &[2, 1]).unwrap();
    let r = col.scaled_add_with(&b, 2.0).unwrap();
    assert_eq!(r.sizes().as_slice(), &[2, 3]);
    assert_eq!(
        r.to_vec::<f32>().unwrap(),
        vec![21., 41., 61., 22., 42., 62.]
    );
}

#[test]
fn inplace_and_out() {
    let a = t(&[1., 2.]);
    a.scaled_add_with_(&t(&[1., 1.]), 3.0).unwrap();
    assert_eq!(a.to_vec::<f32>().unwrap(), vec![4., 5.]);
    let out = Tensor::empty(&[5], ScalarType::Float).unwrap();
    let (r, w) = capture_warnings(|| myops::scaled_add_out(&out, &a, &a).map(|_| ()));
    r.unwrap();
    assert_eq!(out.to_vec::<f32>().unwrap(), vec![8., 10.]);
    assert_eq!(w.len(), 1);
    assert!(w[0]
        .message
        .starts_with("An output with one or more elements was resized since it had shape [5]"));
    let e = a
        .scaled_add_(&Tensor::ones(&[3, 2], ScalarType::Float).unwrap())
        .unwrap_err();
    assert_eq!(
        e.message(),
        "Bad in-place call: input tensor size [2] and output tensor size [3, 2] should match"
    );
}

#[test]
fn meta_needs_no_kernel() {
    let a = Tensor::empty(&[4, 1], (ScalarType::Double, Device::META)).unwrap();
    let b = Tensor::empty(&[5], (ScalarType::Double, Device::META)).unwrap();
    let r = a.scaled_add(&b).unwrap();
    assert_eq!(
        (r.sizes().as_slice(), r.dtype(), r.device()),
        (&[4i64, 5][..], ScalarType::Double, Device::META)
    );
    let e = Tensor::empty(&[2], (ScalarType::Long, Device::META)).unwrap();
    assert_eq!(e.scaled_add(&e).unwrap_err().kind(), ErrorKind::Type);
}

#[test]
fn errors() {
    let a = t(&[1.]);
    let i = Tensor::from_slice(&[1i64], &[1]).unwrap();
    let e = a.scaled_add(&i).unwrap_err();
    assert_eq!(
        e.message(),
        "myops::scaled_add: expected self and other of one floating dtype, got Float and Long"
    );
    assert_eq!(
        a.scaled_add_with(&a, f64::NAN).unwrap_err().kind(),
        ErrorKind::Value
    );
}

#[test]
fn registered_with_the_dispatcher() {
    let d = Dispatcher::singleton();
    let op = d
        .find_schema(&OperatorName::new("myops::scaled_add", "out"))
        .expect("myops::scaled_add.out is defined");
    assert_eq!(
        op.schema().unwrap().to_string(),
        "myops::scaled_add.out(Tensor self, Tensor other, *, float scale=1., Tensor(a!) out) -> Tensor(a!)"
    );
    assert!(op.has_kernel_for_dispatch_key(ratten_core::DispatchKey::CPU));
    assert!(op.has_kernel_for_dispatch_key(ratten_core::DispatchKey::Meta));
    assert_eq!(
        generated::operators::scaled_add::SCHEMA,
        "scaled_add(Tensor self, Tensor other, *, float scale=1.0) -> Tensor"
    );
    assert!(
        d.static_registration_errors().is_empty(),
        "{:?}",
        d.static_registration_errors()
    );
}

#[test]
fn generated_code_is_fresh() {
    use ratten_gen::codegen::{generate_from_path, stale_files, GenOptions};
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let mut opts = GenOptions::out_of_tree("myops", "crate::kernels", "TensorMyopsExt");
    opts.inherits.insert(
        "ScaledAddBase".into(),
        "crate::kernels::ScaledAddBase".into(),
    );
    opts.source_label = "examples/myops/native_functions.yaml".into();
    opts.ensure_linked = Some("crate::ensure_linked".into());
    let files = generate_from_path(&root.join("native_functions.yaml"), None, None, &opts).unwrap();
    let stale = stale_files(&files, &root.join("src/generated"));
    assert!(stale.is_empty(), "examples/myops/src/generated is stale: {stale:?}; see native_functions.yaml for the command");
}
