//! Factories against the values and errors torch 2.15 gives.

use ratten_aten::Tensor;
use ratten_core::num_complex::Complex;
use ratten_core::{Device, ErrorKind, Scalar, ScalarType, TensorOptions};

#[test]
fn empty_zeros_ones_default_to_float32_on_cpu() {
    let t = Tensor::empty(&[2, 3], ()).unwrap();
    assert_eq!((t.dtype(), t.device()), (ScalarType::Float, Device::CPU));
    assert_eq!(t.strides().as_slice(), &[3, 1]);
    assert_eq!(
        Tensor::zeros(&[2, 2], ()).unwrap().to_vec::<f32>().unwrap(),
        vec![0.0; 4]
    );
    assert_eq!(
        Tensor::ones(&[3], ScalarType::Long)
            .unwrap()
            .to_vec::<i64>()
            .unwrap(),
        vec![1, 1, 1]
    );
    assert_eq!(
        Tensor::ones(&[2], ScalarType::Bool)
            .unwrap()
            .to_vec::<bool>()
            .unwrap(),
        vec![true, true]
    );
    let c = Tensor::ones(&[1], ScalarType::ComplexFloat).unwrap();
    assert_eq!(
        c.to_vec::<Complex<f32>>().unwrap(),
        vec![Complex::new(1.0, 0.0)]
    );
    // A 0-dim tensor has one element.
    let s = Tensor::zeros(&[], ScalarType::Double).unwrap();
    assert_eq!((s.dim(), s.numel()), (0, 1));
    assert_eq!(
        msg(Tensor::zeros(&[-1], ())),
        "Trying to create tensor with negative dimension -1: [-1]"
    );
}

#[test]
fn meta_factories_have_shapes_but_no_data() {
    let m = Tensor::ones(&[1 << 20, 1 << 20], Device::META).unwrap();
    assert_eq!(m.numel(), 1 << 40);
    assert!(m.is_meta());
    assert!(m.to_vec::<f32>().is_err());
    let e = Tensor::eye_m(3, 4, (ScalarType::Int, Device::META)).unwrap();
    assert_eq!(e.sizes().as_slice(), &[3, 4]);
    assert_eq!(Tensor::arange(10i64, Device::META).unwrap().numel(), 10);
}

#[test]
fn full_infers_dtype_like_torch_full() {
    let cases: [(Scalar, ScalarType); 4] = [
        (7i64.into(), ScalarType::Long),
        (true.into(), ScalarType::Bool),
        (1.5.into(), ScalarType::Float),
        (Complex::new(0.0, 1.0).into(), ScalarType::ComplexFloat),
    ];
    for (value, dtype) in cases {
        assert_eq!(
            Tensor::full(&[2], value, ()).unwrap().dtype(),
            dtype,
            "{value}"
        );
    }
    let t = Tensor::full(&[2, 2], 7i64, ()).unwrap();
    assert_eq!(t.to_vec::<i64>().unwrap(), vec![7; 4]);
    // torch.full((2,), 1.5, dtype=torch.int64) truncates.
    let t = Tensor::full(&[2], 1.5, ScalarType::Long).unwrap();
    assert_eq!(t.to_vec::<i64>().unwrap(), vec![1, 1]);
    let e = Tensor::full(&[2], 300i64, ScalarType::Char).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::Runtime);
    assert_eq!(
        e.message(),
        "value cannot be converted to type int8_t without overflow"
    );
    assert_eq!(
        msg(Tensor::full(
            &[1],
            Complex::new(1.0, 1.0),
            ScalarType::Float
        )),
        "value cannot be converted to type float without overflow"
    );
    assert_eq!(
        msg(Tensor::full(&[2], 1e5, ScalarType::Half)),
        "value cannot be converted to type c10::Half without overflow"
    );
    // One element: torch's scalar_fill casts unchecked (inf).
    let h = Tensor::full(&[1], 1e5, ScalarType::Half).unwrap();
    assert!(h.to_vec::<half::f16>().unwrap()[0].is_infinite());
}

#[test]
fn arange_values_and_dtypes() {
    let t = Tensor::arange(5i64, ()).unwrap();
    assert_eq!(t.dtype(), ScalarType::Long);
    assert_eq!(t.to_vec::<i64>().unwrap(), vec![0, 1, 2, 3, 4]);
    let t = Tensor::arange_start(1i64, 4i64, ()).unwrap();
    assert_eq!(t.to_vec::<i64>().unwrap(), vec![1, 2, 3]);
    let t = Tensor::arange_start_step(1i64, 2.5, 0.5, ()).unwrap();
    assert_eq!(t.dtype(), ScalarType::Float);
    assert_eq!(t.to_vec::<f32>().unwrap(), vec![1.0, 1.5, 2.0]);
    let t = Tensor::arange_start_step(10i64, 0i64, -3i64, ()).unwrap();
    assert_eq!(t.to_vec::<i64>().unwrap(), vec![10, 7, 4, 1]);
    let t = Tensor::arange_start_step(0.0, 1.0, 0.1, ()).unwrap();
    assert_eq!(t.numel(), 10);
    assert_eq!(t.to_vec::<f32>().unwrap()[3], 0.3f32);
    let t = Tensor::arange(4i64, ScalarType::Double).unwrap();
    assert_eq!(t.to_vec::<f64>().unwrap(), vec![0.0, 1.0, 2.0, 3.0]);
    let t = Tensor::arange(3i64, ScalarType::Half).unwrap();
    assert!(t.item().is_err()); // three elements
    assert_eq!(
        t.to_vec::<half::f16>().unwrap()[2],
        half::f16::from_f32(2.0)
    );
    // Bools count as integers for the inference.
    assert_eq!(Tensor::arange(true, ()).unwrap().dtype(), ScalarType::Long);
    assert_eq!(Tensor::arange(0i64, ()).unwrap().numel(), 0);
}

#[test]
fn arange_errors() {
    assert_eq!(
        msg(Tensor::arange_start_step(0i64, 10i64, 0i64, ())),
        "step must be nonzero"
    );
    assert_eq!(
        msg(Tensor::arange_start(0.0, f64::INFINITY, ())),
        "unsupported range: 0 -> inf"
    );
    assert_eq!(
        msg(Tensor::arange_start(1i64, 0i64, ())),
        "upper bound and lower bound inconsistent with step sign"
    );
    let e = Tensor::arange(5i64, ScalarType::Bool).unwrap_err();
    assert_eq!(e.kind(), ErrorKind::NotImplemented);
    assert_eq!(e.message(), "\"arange_cpu\" not implemented for 'Bool'");
    assert_eq!(
        msg(Tensor::arange(2i64, ScalarType::ComplexFloat)),
        "\"arange_cpu\" not implemented for 'ComplexFloat'"
    );
}

#[test]
fn eye_matches_torch() {
    let t = Tensor::eye_m(2, 3, ()).unwrap();
    assert_eq!(t.dtype(), ScalarType::Float);
    assert_eq!(t.to_vec::<f32>().unwrap(), vec![1., 0., 0., 0., 1., 0.]);
    let t = Tensor::eye(3, ScalarType::Bool).unwrap();
    assert_eq!(
        t.to_vec::<bool>().unwrap(),
        vec![true, false, false, false, true, false, false, false, true]
    );
    let t = Tensor::eye_m(3, 1, ScalarType::Long).unwrap();
    assert_eq!(t.to_vec::<i64>().unwrap(), vec![1, 0, 0]);
    assert_eq!(Tensor::eye(0, ()).unwrap().numel(), 0);
    assert_eq!(
        msg(Tensor::eye(-1, ())),
        "n must be greater or equal to 0, got -1"
    );
    assert_eq!(
        msg(Tensor::eye_m(2, -3, ())),
        "m must be greater or equal to 0, got -3"
    );
}

#[test]
fn from_data_and_read_back() {
    let t = Tensor::from_vec(vec![1.0f64, 2.0, 3.0, 4.0, 5.0, 6.0], &[2, 3]).unwrap();
    assert_eq!(t.dtype(), ScalarType::Double);
    assert_eq!(t.sizes().as_slice(), &[2, 3]);
    assert_eq!(
        t.to_vec::<f64>().unwrap(),
        vec![1.0, 2.0, 3.0, 4.0, 5.0, 6.0]
    );
    assert_eq!(
        msg(Tensor::from_slice(&[1i32, 2, 3], &[2, 2])),
        "shape '[2, 2]' is invalid for input of size 3"
    );
    assert_eq!(
        msg(t.to_vec::<f32>()),
        "expected scalar type Float but found Double"
    );
    let h = Tensor::from_slice(&[half::f16::from_f32(0.5)], &[]).unwrap();
    assert_eq!(h.item().unwrap(), Scalar::Double(0.5));
    let e: Vec<i64> = Vec::new();
    assert_eq!(Tensor::from_vec(e, &[0, 4]).unwrap().numel(), 0);
}

#[test]
fn scalar_tensors_and_wrapped_numbers() {
    let t = Tensor::scalar_tensor(3i64, ()).unwrap();
    assert_eq!((t.dim(), t.dtype()), (0, ScalarType::Float));
    assert_eq!(t.item().unwrap(), Scalar::Double(3.0));
    assert!(!t.is_wrapped_number());
    let t = Tensor::scalar_tensor(true, TensorOptions::new().dtype(ScalarType::Bool)).unwrap();
    assert_eq!(t.item().unwrap(), Scalar::Bool(true));
    let w = Tensor::wrapped_scalar_tensor(2.5, Device::CPU).unwrap();
    assert_eq!(w.dtype(), ScalarType::Double);
    assert!(w.is_wrapped_number());
    let w = Tensor::wrapped_scalar_tensor(7i64, Device::CPU).unwrap();
    assert_eq!(
        (w.dtype(), w.item().unwrap()),
        (ScalarType::Long, Scalar::Int(7))
    );
    let w = Tensor::wrapped_scalar_tensor(Complex::new(1.0, -1.0), Device::CPU).unwrap();
    assert_eq!(w.dtype(), ScalarType::ComplexDouble);
    assert_eq!(w.item().unwrap().to_string(), "(1,-1)");
}

// ---- the factories as declared operators --------------------------------------------------

use crate::common::msg;
use ratten_aten::functions as f;
use ratten_aten::native::MemoryFormat;

#[test]
fn linspace_and_logspace_match_torch_values() {
    let v = |t: Tensor| t.to_vec::<f32>().unwrap();
    // float32: the second half counts down from `end` with a fused multiply-add.
    let l = f::linspace(-1i64, 1i64, 7).unwrap();
    assert_eq!(l.dtype(), ScalarType::Float);
    assert_eq!(
        v(l),
        vec![
            -1.0,
            -0.666_666_6,
            -0.333_333_3,
            -2.980_232_2e-8,
            0.333_333_3,
            0.666_666_6,
            1.0
        ]
    );
    let i = f::linspace_with(0i64, 10i64, 4, Some(ScalarType::Long), None, None, None).unwrap();
    assert_eq!(i.to_vec::<i64>().unwrap(), vec![0, 3, 6, 10]);
    let u = f::linspace_with(10i64, 0i64, 4, Some(ScalarType::Byte), None, None, None).unwrap();
    assert_eq!(u.to_vec::<u8>().unwrap(), vec![10, 6, 3, 0]);
    let h = f::linspace_with(0i64, 1i64, 7, Some(ScalarType::Half), None, None, None).unwrap();
    let hv: Vec<f32> = h
        .to_vec::<half::f16>()
        .unwrap()
        .iter()
        .map(|x| x.to_f32())
        .collect();
    assert_eq!(
        hv,
        vec![
            0.0,
            0.166_625_98,
            0.333_251_95,
            0.5,
            0.666_503_9,
            0.833_496_1,
            1.0
        ]
    );
    assert_eq!(v(f::linspace(3i64, 10i64, 1).unwrap()), vec![3.0]);
    assert_eq!(
        msg(f::linspace(0i64, 1i64, -1)),
        "number of steps must be non-negative"
    );
    let g = f::logspace_with(0i64, 2i64, 5, 2.0, None, None, None, None).unwrap();
    assert_eq!(
        v(g),
        vec![1.0, std::f32::consts::SQRT_2, 2.0, 2.828_427, 4.0]
    );
    let li =
        f::logspace_with(0i64, 3i64, 4, 10.0, Some(ScalarType::Int), None, None, None).unwrap();
    assert_eq!(li.to_vec::<i32>().unwrap(), vec![1, 10, 100, 1000]);
    assert_eq!(v(f::logspace(2i64, 10i64, 1).unwrap()), vec![100.0]);
    let b = f::linspace_with(0i64, 1i64, 4, Some(ScalarType::Bool), None, None, None);
    assert_eq!(msg(b), "\"linspace_cpu\" not implemented for 'Bool'");
}

#[test]
fn like_factories_keep_layout_and_out_forms_resize() {
    let t = Tensor::zeros(&[3, 4], ScalarType::Int)
        .unwrap()
        .t()
        .unwrap();
    let e = f::empty_like(&t).unwrap();
    assert_eq!(
        (e.strides().to_vec(), e.dtype()),
        (vec![1, 4], ScalarType::Int)
    );
    let gap = Tensor::zeros(&[3, 4], ())
        .unwrap()
        .slice_with(1, None, None, 2)
        .unwrap();
    assert_eq!(f::empty_like(&gap).unwrap().strides().to_vec(), vec![2, 1]);
    let o = f::ones_like_with(&t, Some(ScalarType::Double), None, None, None, None).unwrap();
    assert_eq!(o.to_vec::<f64>().unwrap(), vec![1.0; 12]);
    let fl = f::full_like(&Tensor::zeros(&[2], ScalarType::Int).unwrap(), 2.7).unwrap();
    assert_eq!(fl.to_vec::<i32>().unwrap(), vec![2, 2]);
    let z = f::zeros_like_with(
        &Tensor::empty(&[2, 3, 4, 5], ()).unwrap(),
        None,
        None,
        None,
        None,
        Some(MemoryFormat::ChannelsLast),
    )
    .unwrap();
    assert_eq!(z.strides().to_vec(), vec![60, 1, 15, 3]);
    let out = Tensor::empty(&[2], ()).unwrap();
    f::zeros_out(&out, &[3]).unwrap();
    assert_eq!(out.sizes().to_vec(), vec![3]);
    let out = Tensor::empty(&[0], ()).unwrap();
    f::eye_m_out(&out, 2, 3).unwrap();
    assert_eq!(
        out.to_vec::<f32>().unwrap(),
        vec![1.0, 0.0, 0.0, 0.0, 1.0, 0.0]
    );
    let out = Tensor::empty(&[3], ()).unwrap();
    f::arange_out(&out, 5i64).unwrap();
    assert_eq!(out.to_vec::<f32>().unwrap(), vec![0.0, 1.0, 2.0, 3.0, 4.0]);
    let cl = f::empty_with(
        &[2, 3, 4, 5],
        None,
        None,
        None,
        None,
        Some(MemoryFormat::ChannelsLast),
    )
    .unwrap();
    assert_eq!(cl.strides().to_vec(), vec![60, 1, 15, 3]);
    assert_eq!(
        msg(f::empty_with(
            &[2],
            None,
            None,
            None,
            None,
            Some(MemoryFormat::Preserve)
        )),
        "unsupported memory format Preserve"
    );
    assert_eq!(
        msg(Tensor::eye_m(2, -1, ())),
        "m must be greater or equal to 0, got -1"
    );
}

#[test]
fn factories_dispatch_on_their_device_argument() {
    // BackendSelect: no tensor argument, the key comes from `device`.
    let m = f::empty_with(&[2, 3], None, None, Some(Device::META), None, None).unwrap();
    assert!(m.is_meta());
    let s = f::empty_strided_with(&[2, 3], &[1, 2], None, None, Some(Device::META), None).unwrap();
    assert!(s.is_meta() && s.strides().as_slice() == [1, 2]);
    let meta = Some(Device::META);
    for (t, want) in [
        (
            f::zeros_with(&[4], None, None, meta, None).unwrap(),
            vec![4],
        ),
        (
            f::full_with(&[4], 1.5f64, None, None, meta, None).unwrap(),
            vec![4],
        ),
        (
            f::arange_with(4i64, None, None, meta, None).unwrap(),
            vec![4],
        ),
        (
            f::linspace_with(0i64, 1i64, 4, None, None, meta, None).unwrap(),
            vec![4],
        ),
        (f::eye_with(4, None, None, meta, None).unwrap(), vec![4, 4]),
    ] {
        assert!(t.is_meta());
        assert_eq!(t.sizes().to_vec(), want);
    }
    let d = ratten_dispatch::Dispatcher::singleton();
    let state = d.dump_state_by_name("aten::empty.memory_format").unwrap();
    assert!(state.contains("BackendSelect"), "{state}");
}
