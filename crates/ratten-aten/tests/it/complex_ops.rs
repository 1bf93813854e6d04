//! The complex views and conjugation (view_as_real, view_as_complex, real, imag, conj, _conj,
//! conj_physical, resolve_conj / resolve_neg, is_conj / is_neg), sgn, ger, the new_* factories
//! and zero_ / fill_, against naive references and torch's geometry and error texts.

use proptest::prelude::*;
use ratten_aten::{functions as F, Tensor};
use ratten_core::dtype::{c128, c32, c64};
use ratten_core::{Device, Element, ErrorKind, Scalar, ScalarType};

fn from_vec<T: Element>(v: Vec<T>, sizes: &[i64]) -> Tensor {
    Tensor::from_vec(v, sizes).unwrap()
}
fn vals<T: Element>(t: &Tensor) -> Vec<T> {
    t.to_vec::<T>().unwrap()
}
fn geom(t: &Tensor) -> (Vec<i64>, Vec<i64>, i64) {
    (t.sizes().to_vec(), t.strides().to_vec(), t.storage_offset())
}
fn shares(a: &Tensor, b: &Tensor) -> bool {
    a.storage().is_alias_of(&b.storage()) && a.version_counter().is_shared_with(b.version_counter())
}
fn err(r: ratten_core::Result<Tensor>) -> (ErrorKind, String) {
    let e = r.unwrap_err();
    (e.kind(), e.to_string())
}
fn meta(sizes: &[i64], dtype: ScalarType) -> Tensor {
    Tensor::empty(sizes, (dtype, Device::META)).unwrap()
}
fn cplx(n: usize) -> Vec<c64> {
    (0..n)
        .map(|i| c64::new(i as f32 - 2.5, 1.5 - (i % 3) as f32))
        .collect()
}

// ---------------------------------------------------------------------------------------------
// view_as_real / view_as_complex / real / imag
// ---------------------------------------------------------------------------------------------

#[test]
fn view_as_real_is_a_float_view_with_a_trailing_pair() {
    let z = from_vec(cplx(12), &[3, 4]);
    let r = F::view_as_real(&z).unwrap();
    assert_eq!(r.dtype(), ScalarType::Float);
    assert_eq!(geom(&r), (vec![3, 4, 2], vec![8, 2, 1], 0));
    let want: Vec<f32> = cplx(12).iter().flat_map(|z| [z.re, z.im]).collect();
    assert_eq!(vals::<f32>(&r), want);
    assert!(shares(&r, &z));
    // A strided complex view: strides and offset double (torch: [3, 3, 2], (8, 2, 1), 2).
    let sub = z.slice_with(1, Some(1), Some(4), 1).unwrap();
    let r = F::view_as_real(&sub).unwrap();
    assert_eq!(geom(&r), (vec![3, 3, 2], vec![8, 2, 1], 2));
    // 0-dim and double.
    let s = from_vec(vec![c128::new(1.0, -2.0)], &[]);
    let r = F::view_as_real(&s).unwrap();
    assert_eq!(
        (r.dtype(), geom(&r)),
        (ScalarType::Double, (vec![2], vec![1], 0))
    );
    assert_eq!(vals::<f64>(&r), vec![1.0, -2.0]);
    // complex32 -> half.
    let h = Tensor::zeros(&[3], ScalarType::ComplexHalf).unwrap();
    assert_eq!(F::view_as_real(&h).unwrap().dtype(), ScalarType::Half);
}

#[test]
fn writes_through_the_views_reach_the_base() {
    let z = from_vec(cplx(4), &[4]);
    let v0 = z.version();
    let r = F::view_as_real(&z).unwrap();
    r.select(1, 1).unwrap().fill_(7.0).unwrap();
    assert!(vals::<c64>(&z).iter().all(|z| z.im == 7.0));
    F::real(&z).unwrap().fill_(-1.0).unwrap();
    assert_eq!(vals::<c64>(&z), vec![c64::new(-1.0, 7.0); 4]);
    F::imag(&z).unwrap().zero_().unwrap();
    assert_eq!(vals::<c64>(&z), vec![c64::new(-1.0, 0.0); 4]);
    // The views share the base's version counter (in-place kernels do not bump it yet:
    // that is ADInplaceOrView's job).
    assert!(F::imag(&z)
        .unwrap()
        .version_counter()
        .is_shared_with(z.version_counter()));
    assert_eq!(z.version(), v0);
}

#[test]
fn view_as_complex_pairs_the_last_dim() {
    let x = from_vec((0..6).map(|i| i as f32).collect::<Vec<_>>(), &[3, 2]);
    let z = F::view_as_complex(&x).unwrap();
    assert_eq!(z.dtype(), ScalarType::ComplexFloat);
    assert_eq!(geom(&z), (vec![3], vec![1], 0));
    assert_eq!(
        vals::<c64>(&z),
        vec![c64::new(0., 1.), c64::new(2., 3.), c64::new(4., 5.)]
    );
    assert!(shares(&z, &x));
    // A column pair of a wider matrix: torch gives ([3], (2,), 0).
    let w = Tensor::zeros(&[3, 4], ScalarType::Float).unwrap();
    let z = F::view_as_complex(&w.slice_with(1, Some(0), Some(2), 1).unwrap()).unwrap();
    assert_eq!(geom(&z), (vec![3], vec![2], 0));
    // Round trip, double and half.
    let d = from_vec(vec![1.0f64, 2.0, 3.0, 4.0], &[2, 2]);
    let back = F::view_as_real(&F::view_as_complex(&d).unwrap()).unwrap();
    assert_eq!(
        (vals::<f64>(&back), geom(&back)),
        (vals::<f64>(&d), geom(&d))
    );
    let h = Tensor::zeros(&[3, 2], ScalarType::Half).unwrap();
    assert_eq!(
        F::view_as_complex(&h).unwrap().dtype(),
        ScalarType::ComplexHalf
    );
}

#[test]
fn view_errors_are_torchs() {
    let f = |sizes: &[i64]| Tensor::zeros(sizes, ScalarType::Float).unwrap();
    let cases: Vec<(ratten_core::Result<Tensor>, ErrorKind, &str)> = vec![
        (
            F::view_as_complex(&f(&[3])),
            ErrorKind::Runtime,
            "Tensor must have a last dimension of size 2",
        ),
        (
            F::view_as_complex(&f(&[])),
            ErrorKind::Runtime,
            "Input tensor must have one or more dimensions",
        ),
        (
            F::view_as_complex(&f(&[3, 2]).t().unwrap().contiguous().unwrap().t().unwrap()),
            ErrorKind::Runtime,
            "Tensor must have a last dimension with stride 1",
        ),
        (
            F::view_as_complex(&f(&[3, 3]).slice_with(1, Some(1), Some(3), 1).unwrap()),
            ErrorKind::Runtime,
            "Tensor must have a stride divisible by 2 for all but last dimension",
        ),
        (
            F::view_as_complex(
                &f(&[8])
                    .slice_with(0, Some(1), Some(5), 1)
                    .unwrap()
                    .view(&[2, 2])
                    .unwrap(),
            ),
            ErrorKind::Runtime,
            "Tensor must have a storage_offset divisible by 2",
        ),
        (
            F::view_as_complex(&Tensor::zeros(&[3, 2], ScalarType::Int).unwrap()),
            ErrorKind::NotImplemented,
            "view_as_complex is only supported for half, float and double tensors, but got a \
             tensor of scalar type: Int",
        ),
        (
            F::view_as_complex(&Tensor::zeros(&[3, 2], ScalarType::BFloat16).unwrap()),
            ErrorKind::NotImplemented,
            "view_as_complex is only supported for half, float and double tensors, but got a \
             tensor of scalar type: BFloat16",
        ),
        (
            F::view_as_real(&f(&[3])),
            ErrorKind::Type,
            "view_as_real is only supported for complex tensors",
        ),
        (
            F::imag(&f(&[3])),
            ErrorKind::Type,
            "imag is not implemented for tensors with non-complex dtypes.",
        ),
    ];
    for (r, kind, text) in cases {
        assert_eq!(err(r), (kind, text.to_string()));
    }
}

#[test]
fn real_and_imag_are_views() {
    let z = from_vec(
        vec![
            c128::new(1.0, 2.0),
            c128::new(-3.0, 0.5),
            c128::new(0.0, -1.0),
        ],
        &[3],
    );
    let (re, im) = (F::real(&z).unwrap(), F::imag(&z).unwrap());
    assert_eq!(
        (re.dtype(), geom(&re)),
        (ScalarType::Double, (vec![3], vec![2], 0))
    );
    assert_eq!(geom(&im), (vec![3], vec![2], 1));
    assert_eq!(vals::<f64>(&re), vec![1.0, -3.0, 0.0]);
    assert_eq!(vals::<f64>(&im), vec![2.0, 0.5, -1.0]);
    assert!(shares(&re, &z) && shares(&im, &z));
    // real of a real tensor is the tensor itself.
    let x = from_vec(vec![1i64, 2], &[2]);
    let r = F::real(&x).unwrap();
    assert!(shares(&r, &x));
    assert_eq!(geom(&r), geom(&x));
}

#[test]
fn the_views_work_on_meta() {
    let z = meta(&[2, 5], ScalarType::ComplexDouble);
    let r = F::view_as_real(&z).unwrap();
    assert!(r.is_meta());
    assert_eq!(
        (r.dtype(), geom(&r)),
        (ScalarType::Double, (vec![2, 5, 2], vec![10, 2, 1], 0))
    );
    let back = F::view_as_complex(&r).unwrap();
    assert_eq!(
        (back.dtype(), geom(&back)),
        (ScalarType::ComplexDouble, geom(&z))
    );
    assert_eq!(geom(&F::imag(&z).unwrap()), (vec![2, 5], vec![10, 2], 1));
    assert_eq!(
        err(F::view_as_complex(&meta(&[3], ScalarType::Float))).1,
        "Tensor must have a last dimension of size 2"
    );
}

// ---------------------------------------------------------------------------------------------
// conj family
// ---------------------------------------------------------------------------------------------

#[test]
fn conj_of_a_real_tensor_is_itself_and_of_a_complex_one_new_values() {
    let x = from_vec(vec![1.0f32, -2.0], &[2]);
    for r in [
        x.conj().unwrap(),
        F::__dispatch_conj(&x).unwrap(),
        F::conj_physical(&x).unwrap(),
        F::resolve_conj(&x).unwrap(),
        F::resolve_neg(&x).unwrap(),
    ] {
        assert!(shares(&r, &x));
        assert_eq!(geom(&r), geom(&x));
    }
    let z = from_vec(cplx(6), &[2, 3]);
    let want: Vec<c64> = cplx(6).iter().map(|z| z.conj()).collect();
    for r in [
        z.conj().unwrap(),
        F::__dispatch_conj(&z).unwrap(),
        F::_conj(&z).unwrap(),
        F::conj_physical(&z).unwrap(),
        F::_conj_physical(&z).unwrap(),
    ] {
        assert_eq!(vals::<c64>(&r), want);
        assert_eq!(r.sizes(), z.sizes());
        // Note [Conjugation without a conjugate bit]: new values, not a view.
        assert!(!r.storage().is_alias_of(&z.storage()));
    }
    assert!(!z.is_conj() && !z.is_neg() && !z.conj().unwrap().is_conj());
    assert!(!F::__dispatch_is_conj(&z).unwrap() && !F::__dispatch_is_neg(&z).unwrap());
    // resolve_conj of a complex tensor: itself.
    assert!(shares(&F::resolve_conj(&z).unwrap(), &z));
    // _conj of a real tensor: an alias.
    assert!(shares(&F::_conj(&x).unwrap(), &x));
}

#[test]
fn conj_physical_negates_imaginary_parts_in_every_complex_dtype() {
    // 0 + 0i becomes 0 - 0i, and NaN parts stay NaN (torch: [1-1j, 0-0j, 1+nanj]).
    let z = from_vec(
        vec![
            c128::new(1.0, 1.0),
            c128::new(0.0, 0.0),
            c128::new(1.0, f64::NAN),
        ],
        &[3],
    );
    let c = vals::<c128>(&F::conj_physical(&z).unwrap());
    assert_eq!((c[0], c[1].re), (c128::new(1.0, -1.0), 0.0));
    assert!(c[1].im == 0.0 && c[1].im.is_sign_negative());
    assert!(c[2].im.is_nan());
    // complex32, a strided input, and the in-place form.
    let h = from_vec(
        (0..8)
            .map(|i| {
                c32::new(
                    half::f16::from_f32(i as f32),
                    half::f16::from_f32(0.5 - i as f32),
                )
            })
            .collect::<Vec<_>>(),
        &[4, 2],
    );
    let c = F::conj_physical(&h.t().unwrap()).unwrap();
    let want: Vec<c32> = vals::<c32>(&h.t().unwrap().contiguous().unwrap())
        .into_iter()
        .map(|z| c32::new(z.re, -z.im))
        .collect();
    assert_eq!(vals::<c32>(&c), want);
    let z = from_vec(cplx(5), &[5]);
    z.conj_physical_().unwrap();
    assert_eq!(
        vals::<c64>(&z),
        cplx(5).iter().map(|z| z.conj()).collect::<Vec<_>>()
    );
    // A real tensor: in place nothing happens, the out= form copies.
    let x = from_vec(vec![3i64, -4], &[2]);
    x.conj_physical_().unwrap();
    let out = Tensor::empty(&[0], ScalarType::Long).unwrap();
    F::conj_physical_out(&out, &x).unwrap();
    assert_eq!(vals::<i64>(&out), vec![3, -4]);
    let b = from_vec(vec![true, false], &[2]);
    assert_eq!(
        vals::<bool>(&F::conj_physical(&b).unwrap()),
        vec![true, false]
    );
}

#[test]
fn conj_physical_out_needs_selfs_dtype() {
    // torch: "Found dtype Float but expected ComplexFloat" / "... Long but expected Float".
    let z = from_vec(cplx(1), &[1]);
    let out = Tensor::empty(&[1], ScalarType::Float).unwrap();
    let e = F::conj_physical_out(&out, &z).unwrap_err();
    assert_eq!(e.to_string(), "Found dtype Float but expected ComplexFloat");
    let x = from_vec(vec![1.0f32], &[1]);
    let out = Tensor::empty(&[1], ScalarType::Long).unwrap();
    let e = F::conj_physical_out(&out, &x).unwrap_err();
    assert_eq!(e.to_string(), "Found dtype Long but expected Float");
}

#[test]
fn conj_physical_on_meta_gives_the_geometry() {
    let z = meta(&[4, 3], ScalarType::ComplexFloat);
    let c = F::conj_physical(&z.t().unwrap()).unwrap();
    assert!(c.is_meta());
    assert_eq!(
        (c.dtype(), c.sizes().to_vec()),
        (ScalarType::ComplexFloat, vec![3, 4])
    );
    z.conj_physical_().unwrap();
    let out = meta(&[0], ScalarType::ComplexFloat);
    F::conj_physical_out(&out, &z).unwrap();
    assert_eq!(out.sizes().to_vec(), vec![4, 3]);
}

// ---------------------------------------------------------------------------------------------
// sgn
// ---------------------------------------------------------------------------------------------

/// The reference: sign for reals, z / |z| (0 at 0) for complex.
fn sgn_ref(z: c128) -> c128 {
    let r = z.re.hypot(z.im);
    if r == 0.0 {
        c128::new(0.0, 0.0)
    } else {
        c128::new(z.re / r, z.im / r)
    }
}

#[test]
fn sgn_of_reals_is_sign() {
    let x = from_vec(vec![-3.0f32, 0.0, -0.0, 2.5, f32::NAN, f32::INFINITY], &[6]);
    let s = vals::<f32>(&x.sgn().unwrap());
    assert_eq!(&s[..4], &[-1.0, 0.0, 0.0, 1.0]);
    assert!(!s[2].is_sign_negative());
    // torch's sign gives 0 for NaN.
    assert_eq!(&s[4..], &[0.0, 1.0]);
    let i = from_vec(vec![-3i32, 0, 7], &[3]);
    assert_eq!(vals::<i32>(&F::sgn(&i).unwrap()), vec![-1, 0, 1]);
    let u = from_vec(vec![3u8, 0], &[2]);
    assert_eq!(vals::<u8>(&F::sgn(&u).unwrap()), vec![1, 0]);
    let b = from_vec(vec![true, false], &[2]);
    let s = F::sgn(&b).unwrap();
    assert_eq!(
        (s.dtype(), vals::<bool>(&s)),
        (ScalarType::Bool, vec![true, false])
    );
    let bf = Tensor::from_vec(vec![1.5f32, -2.0], &[2])
        .unwrap()
        .to_dtype(ScalarType::BFloat16)
        .unwrap();
    let s = F::sgn(&bf).unwrap();
    assert_eq!(s.dtype(), ScalarType::BFloat16);
    assert_eq!(
        vals::<f32>(&s.to_dtype(ScalarType::Float).unwrap()),
        vec![1.0, -1.0]
    );
}

#[test]
fn sgn_of_complex_is_the_unit_phase() {
    let zs = vec![
        c128::new(3.0, 4.0),
        c128::new(0.0, 0.0),
        c128::new(-0.0, 0.0),
        c128::new(1e300, 1e300),
        c128::new(1e-310, -1e-310),
        c128::new(0.0, -2.0),
    ];
    let z = from_vec(zs.clone(), &[6]);
    let s = vals::<c128>(&F::sgn(&z).unwrap());
    for (got, z) in s.iter().zip(&zs) {
        let want = sgn_ref(*z);
        assert!((got - want).norm() <= 1e-15, "{z}: {got} vs {want}");
    }
    assert_eq!(s[0], c128::new(0.6, 0.8));
    assert!((s[3].re - std::f64::consts::FRAC_1_SQRT_2).abs() < 1e-15);
    // complex32 through complex64 (torch: 0.7070+0.7070j).
    let h = from_vec(
        vec![
            c32::new(half::f16::ONE, half::f16::ONE),
            c32::new(half::f16::ZERO, half::f16::ZERO),
        ],
        &[2],
    );
    let s = vals::<c32>(&F::sgn(&h).unwrap());
    assert_eq!(
        s[0].re.to_f32(),
        half::f16::from_f32(std::f32::consts::FRAC_1_SQRT_2).to_f32()
    );
    assert_eq!(s[1], c32::new(half::f16::ZERO, half::f16::ZERO));
    // In place and out=.
    let z = from_vec(cplx(7), &[7]);
    let want: Vec<c64> = cplx(7)
        .iter()
        .map(|z| {
            let r = z.re.hypot(z.im);
            c64::new(z.re / r, z.im / r)
        })
        .collect();
    let out = Tensor::empty(&[0], ScalarType::ComplexFloat).unwrap();
    F::sgn_out(&out, &z).unwrap();
    assert_eq!(vals::<c64>(&out), want);
    z.sgn_().unwrap();
    assert_eq!(vals::<c64>(&z), want);
}

#[test]
fn sgn_errors_and_meta() {
    let z = from_vec(cplx(1), &[1]);
    let out = Tensor::empty(&[1], ScalarType::Float).unwrap();
    assert_eq!(
        F::sgn_out(&out, &z).unwrap_err().to_string(),
        "Found dtype Float but expected ComplexFloat"
    );
    let x = from_vec(vec![1i64], &[1]);
    assert_eq!(
        F::sgn_out(&out, &x).unwrap_err().to_string(),
        "Found dtype Float but expected Long"
    );
    let m = meta(&[2, 3], ScalarType::ComplexDouble);
    let s = F::sgn(&m).unwrap();
    assert!(s.is_meta());
    assert_eq!(
        (s.dtype(), s.sizes().to_vec()),
        (ScalarType::ComplexDouble, vec![2, 3])
    );
    m.sgn_().unwrap();
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    /// sgn of a strided complex view against the reference, element by element.
    #[test]
    fn sgn_matches_the_reference(
        parts in prop::collection::vec((-4i32..4, -4i32..4), 1..40),
        step in 1i64..3,
    ) {
        let zs: Vec<c128> = parts.iter().map(|&(a, b)| c128::new(a as f64 * 0.75, b as f64)).collect();
        let n = zs.len() as i64;
        let z = from_vec(zs, &[n]);
        let v = z.slice_with(0, Some(0), Some(n), step).unwrap();
        let got = vals::<c128>(&v.sgn().unwrap());
        let want: Vec<c128> = vals::<c128>(&v).into_iter().map(sgn_ref).collect();
        prop_assert_eq!(got, want);
        let c = vals::<c128>(&v.conj_physical().unwrap());
        let want: Vec<c128> = vals::<c128>(&v).into_iter().map(|z| z.conj()).collect();
        prop_assert_eq!(c, want);
    }
}

// ---------------------------------------------------------------------------------------------
// ger
// ---------------------------------------------------------------------------------------------

#[test]
fn ger_is_outer() {
    let a = from_vec(vec![1.0f64, 2.0], &[2]);
    let b = from_vec(vec![3.0f64, 4.0, 5.0], &[3]);
    let g = a.ger(&b).unwrap();
    assert_eq!(g.sizes().to_vec(), vec![2, 3]);
    assert_eq!(vals::<f64>(&g), vec![3.0, 4.0, 5.0, 6.0, 8.0, 10.0]);
    let out = Tensor::empty(&[0], ScalarType::Double).unwrap();
    F::ger_out(&out, &a, &b).unwrap();
    assert_eq!(vals::<f64>(&out), vals::<f64>(&g));
    let e = F::ger(&a.view(&[2, 1]).unwrap(), &b).unwrap_err();
    assert_eq!(
        e.to_string(),
        "outer: Expected 1-D argument self, but got 2-D"
    );
}

// ---------------------------------------------------------------------------------------------
// new_* and zero_ / fill_
// ---------------------------------------------------------------------------------------------

#[test]
fn new_factories_take_selfs_options() {
    let x = Tensor::ones(&[2], ScalarType::Int).unwrap();
    let z = x.new_zeros(&[3]).unwrap();
    assert_eq!(
        (z.dtype(), vals::<i32>(&z)),
        (ScalarType::Int, vec![0, 0, 0])
    );
    let o = x.new_ones(&[2, 3]).unwrap();
    assert_eq!((o.dtype(), vals::<i32>(&o)), (ScalarType::Int, vec![1; 6]));
    // new_full keeps self's dtype whatever the value (torch: int32 [2, 2] from 2.5).
    let f = x.new_full(&[2], 2.5).unwrap();
    assert_eq!((f.dtype(), vals::<i32>(&f)), (ScalarType::Int, vec![2, 2]));
    let e = x.new_full(&[2], 1e10).unwrap_err();
    assert_eq!(
        e.to_string(),
        "value cannot be converted to type int without overflow"
    );
    let s = x.new_empty_strided(&[2, 3], &[1, 2]).unwrap();
    assert_eq!(
        (s.dtype(), geom(&s)),
        (ScalarType::Int, (vec![2, 3], vec![1, 2], 0))
    );
    let e = x.new_empty(&[2, 3]).unwrap();
    assert_eq!(
        (e.dtype(), geom(&e)),
        (ScalarType::Int, (vec![2, 3], vec![3, 1], 0))
    );
    let d = x
        .new_ones_with(&[2], Some(ScalarType::Double), None, None, None)
        .unwrap();
    assert_eq!(
        (d.dtype(), vals::<f64>(&d)),
        (ScalarType::Double, vec![1.0, 1.0])
    );
    let m = meta(&[1], ScalarType::Float).new_zeros(&[4]).unwrap();
    assert!(m.is_meta() && m.sizes().to_vec() == vec![4]);
    let to_cpu = meta(&[1], ScalarType::Float)
        .new_full_with(&[2], 3.0, None, None, Some(Device::CPU), None)
        .unwrap();
    assert_eq!(vals::<f32>(&to_cpu), vec![3.0, 3.0]);
    assert_eq!(
        x.new_zeros(&[-1]).unwrap_err().to_string(),
        "Trying to create tensor with negative dimension -1: [-1]"
    );
}

#[test]
fn zero_and_fill_through_the_dispatcher() {
    let x = from_vec((0..12).map(|i| i as f64).collect::<Vec<_>>(), &[3, 4]);
    // A strided column.
    x.select(1, 2).unwrap().zero_().unwrap();
    let want: Vec<f64> = (0..12)
        .map(|i| if i % 4 == 2 { 0.0 } else { i as f64 })
        .collect();
    assert_eq!(vals::<f64>(&x), want);
    // The functional and out= forms autogen'd from zero_.
    let z = F::zero(&x).unwrap();
    assert_eq!(vals::<f64>(&z), vec![0.0; 12]);
    assert_eq!(vals::<f64>(&x), want);
    let out = Tensor::empty(&[0], ScalarType::Double).unwrap();
    F::zero_out(&out, &x).unwrap();
    assert_eq!(
        (out.sizes().to_vec(), vals::<f64>(&out)),
        (vec![3, 4], vec![0.0; 12])
    );
    F::zero_(&x).unwrap();
    assert_eq!(vals::<f64>(&x), vec![0.0; 12]);
    // fill_ keeps c10's checks on the CPU; meta writes nothing and checks nothing (as torch).
    let i8s = Tensor::zeros(&[3], ScalarType::Char).unwrap();
    assert_eq!(
        i8s.fill_(1000i64).unwrap_err().to_string(),
        "value cannot be converted to type int8_t without overflow"
    );
    assert_eq!(vals::<i8>(&i8s), vec![0; 3]);
    meta(&[3], ScalarType::Char).fill_(1000i64).unwrap();
    meta(&[3], ScalarType::Char).zero_().unwrap();
    // fill_.Tensor: a 0-dim value.
    let v = from_vec(vec![c64::new(1.0, 2.0)], &[]);
    let c = Tensor::zeros(&[2], ScalarType::ComplexFloat).unwrap();
    F::fill_(&c, &v).unwrap();
    assert_eq!(vals::<c64>(&c), vec![c64::new(1.0, 2.0); 2]);
    let r = F::fill_scalar(&c, Scalar::Double(-1.0)).unwrap();
    assert_eq!(vals::<c64>(&r), vec![c64::new(-1.0, 0.0); 2]);
}

#[test]
fn fill_of_every_dtype_and_layout() {
    // Contiguous runs of several lengths at several offsets (the run's alignment varies), a
    // transposed and an expanded output.
    for dtype in [
        ScalarType::Bool,
        ScalarType::Byte,
        ScalarType::Short,
        ScalarType::Int,
        ScalarType::Long,
        ScalarType::Half,
        ScalarType::BFloat16,
        ScalarType::Float,
        ScalarType::Double,
        ScalarType::ComplexHalf,
        ScalarType::ComplexFloat,
        ScalarType::ComplexDouble,
    ] {
        for (n, start) in [(1i64, 0i64), (7, 1), (100, 3), (1029, 5)] {
            let base = Tensor::zeros(&[n + start + 2], dtype).unwrap();
            base.narrow(0, start, n).unwrap().fill_(1i64).unwrap();
            let got = vals::<f64>(&base.to_dtype(ScalarType::Double).unwrap_or_else(|_| {
                F::real(&base)
                    .unwrap()
                    .to_dtype(ScalarType::Double)
                    .unwrap()
            }));
            let want: Vec<f64> = (0..n + start + 2)
                .map(|i| {
                    if i >= start && i < start + n {
                        1.0
                    } else {
                        0.0
                    }
                })
                .collect();
            assert_eq!(got, want, "{dtype} n={n} start={start}");
        }
    }
    let t = Tensor::zeros(&[5, 7], ScalarType::Float).unwrap();
    t.t().unwrap().fill_(2.5).unwrap();
    assert_eq!(vals::<f32>(&t), vec![2.5; 35]);
    let one = Tensor::zeros(&[1], ScalarType::Long).unwrap();
    one.expand(&[4]).unwrap().fill_(9i64).unwrap();
    assert_eq!(vals::<i64>(&one), vec![9]);
}

#[test]
fn fill_of_one_element_writes_that_element_only() {
    // A 1-element CPU tensor is written directly (PyTorch's `scalar_fill`): 0-dim, at an
    // offset inside a larger storage, with any strides.
    for dtype in [
        ScalarType::Bool,
        ScalarType::Byte,
        ScalarType::Char,
        ScalarType::UInt16,
        ScalarType::Int,
        ScalarType::UInt64,
        ScalarType::Half,
        ScalarType::BFloat16,
        ScalarType::Float,
        ScalarType::Double,
        ScalarType::ComplexHalf,
        ScalarType::ComplexDouble,
    ] {
        let base = Tensor::zeros(&[3, 4], dtype).unwrap();
        let one = base.select(0, 1).unwrap().narrow(0, 2, 1).unwrap();
        let scalar = base.select(0, 2).unwrap().select(0, 3).unwrap();
        one.fill_(1i64).unwrap();
        scalar.fill_(true).unwrap();
        let got = base.to_dtype(ScalarType::Double).unwrap_or_else(|_| {
            F::real(&base)
                .unwrap()
                .to_dtype(ScalarType::Double)
                .unwrap()
        });
        let mut want = vec![0.0; 12];
        want[6] = 1.0;
        want[11] = 1.0;
        assert_eq!(vals::<f64>(&got), want, "{dtype}");
    }
    let t = Tensor::zeros(&[], ScalarType::Float).unwrap();
    t.fill_(2.5).unwrap();
    assert_eq!(vals::<f32>(&t), vec![2.5]);
    // complex32: one element is checked as complex<Half> (70000 is refused), more are
    // rounded through complex<float> (70000 becomes inf + 0j), as in PyTorch.
    let z = Tensor::zeros(&[1], ScalarType::ComplexHalf).unwrap();
    assert!(z.fill_(70000.0).is_err());
    let z2 = Tensor::zeros(&[2], ScalarType::ComplexHalf).unwrap();
    z2.fill_(70000.0).unwrap();
    for t in [&z, &z2] {
        let re = F::real(t).unwrap().to_dtype(ScalarType::Float).unwrap();
        let want = if t.numel() == 1 { 0.0 } else { f32::INFINITY };
        assert_eq!(vals::<f32>(&re), vec![want; t.numel() as usize]);
    }
    // A value out of the dtype's range is refused and the tensor keeps its value.
    let b = Tensor::zeros(&[1], ScalarType::Byte).unwrap();
    assert!(b.fill_(300i64).is_err());
    assert_eq!(vals::<u8>(&b), vec![0]);
}

#[test]
fn fill_of_a_large_tensor_streams_and_stays_in_bounds() {
    // Above the streaming threshold (2 x STREAM_MIN_BYTES), at an offset that is not
    // line-aligned, with neighbours that must stay untouched.
    let n = 9 << 20; // 36 MiB of f32
    let base = Tensor::zeros(&[n + 32], ScalarType::Float).unwrap();
    let mid = base.narrow(0, 3, n).unwrap();
    mid.fill_(-0.5).unwrap();
    let v = vals::<f32>(&base);
    assert_eq!(&v[..3], &[0.0; 3]);
    assert!(v[3..3 + n as usize].iter().all(|&x| x == -0.5));
    assert!(v[3 + n as usize..].iter().all(|&x| x == 0.0));
    mid.zero_().unwrap();
    assert!(vals::<f32>(&base).iter().all(|&x| x == 0.0));
}
