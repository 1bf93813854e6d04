//! The whole 13x13 promote_types table against torch 2.15's (shared/reference/promote_types.json),
//! can_cast, and result_type's wrapped-number / 0-dim rules including the default dtype.

use ratten_aten::native::type_properties::{result_type, result_type_scalar, result_type_scalars};
use ratten_core::{
    can_cast, get_default_dtype, promote_types, set_default_dtype, Device, Scalar, ScalarType,
    TensorBase,
};

const TABLE: &str = include_str!("../../../../shared/reference/promote_types.json");

/// The default dtype is process-wide and tests run on parallel threads: every test that sets
/// it, or whose result depends on it, holds this lock.
static DEFAULT_DTYPE_LOCK: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn default_dtype_lock() -> std::sync::MutexGuard<'static, ()> {
    DEFAULT_DTYPE_LOCK.lock().unwrap_or_else(|e| e.into_inner())
}

#[test]
fn table_matches_torch() {
    let body = TABLE.trim().trim_start_matches('{').trim_end_matches('}');
    let mut n = 0;
    for entry in body.split(',') {
        let (k, v) = entry.split_once(':').expect("key: value");
        let k = k.trim().trim_matches('"');
        let v = v.trim().trim_matches('"');
        let (a, b) = k.split_once('|').expect("A|B");
        let (a, b, want) = (
            ScalarType::from_name(a).unwrap(),
            ScalarType::from_name(b).unwrap(),
            ScalarType::from_name(v).unwrap(),
        );
        assert_eq!(promote_types(a, b).unwrap(), want, "{a} {b}");
        n += 1;
    }
    assert_eq!(n, 169);
}

fn t(sizes: &[i64], d: ScalarType) -> TensorBase {
    TensorBase::zeros(sizes, d, Device::CPU).unwrap()
}

#[test]
fn default_dtype_decides_float_scalars() {
    let _lock = default_dtype_lock();
    // One test changes the process-wide default, so everything that depends on it is here.
    use ScalarType::*;
    assert_eq!(get_default_dtype(), Float);
    assert_eq!(
        result_type_scalar(&t(&[3], Byte), &Scalar::Double(5.5)).unwrap(),
        Float
    );
    assert_eq!(
        result_type_scalar(&t(&[], Long), &Scalar::Double(2.5)).unwrap(),
        Float
    );
    assert_eq!(
        result_type_scalars(&Scalar::Int(5), &Scalar::Double(2.5)).unwrap(),
        Float
    );
    let j = Scalar::ComplexDouble(num_complex::Complex::new(0.0, 1.0));
    assert_eq!(result_type_scalar(&t(&[2], Int), &j).unwrap(), ComplexFloat);
    set_default_dtype(Double).unwrap();
    assert_eq!(
        result_type_scalar(&t(&[3], Byte), &Scalar::Double(5.5)).unwrap(),
        Double
    );
    assert_eq!(
        result_type_scalars(&Scalar::Int(5), &Scalar::Double(2.5)).unwrap(),
        Double
    );
    assert_eq!(
        result_type_scalar(&t(&[2], Int), &j).unwrap(),
        ComplexDouble
    );
    // A float tensor keeps its dtype whatever the default.
    assert_eq!(
        result_type_scalar(&t(&[2], Half), &Scalar::Double(1.0)).unwrap(),
        Half
    );
    // int / int divides in the default dtype.
    let i = ratten_aten::Tensor::from_base(t(&[2], Int));
    let r = ratten_aten::functions::div(&i, &i).unwrap();
    assert_eq!(r.dtype(), Double);
    set_default_dtype(Float).unwrap();
    let r = ratten_aten::functions::div(&i, &i).unwrap();
    assert_eq!(r.dtype(), Float);
}

#[test]
fn zero_dim_and_wrapped_rules() {
    let _lock = default_dtype_lock();
    use ScalarType::*;
    assert_eq!(
        result_type(&t(&[3], Byte), &t(&[], Double)).unwrap(),
        Double
    );
    assert_eq!(
        result_type(&t(&[3], Float), &t(&[], Double)).unwrap(),
        Float
    );
    assert_eq!(result_type(&t(&[2], Char), &t(&[], Long)).unwrap(), Char);
    assert_eq!(result_type(&t(&[2], Byte), &t(&[], Char)).unwrap(), Byte);
    assert_eq!(result_type(&t(&[2], Byte), &t(&[2], Short)).unwrap(), Short);
    assert_eq!(result_type(&t(&[2], Half), &t(&[], Double)).unwrap(), Half);
    assert_eq!(result_type(&t(&[], Int), &t(&[], Half)).unwrap(), Half);
    assert_eq!(
        result_type(&t(&[], BFloat16), &t(&[], Half)).unwrap(),
        Float
    );
    assert_eq!(
        result_type(&t(&[], ComplexHalf), &t(&[], BFloat16)).unwrap(),
        ComplexFloat
    );
    assert_eq!(
        result_type(&t(&[2], ComplexFloat), &t(&[], ComplexDouble)).unwrap(),
        ComplexFloat
    );
    assert_eq!(
        result_type(&t(&[], Float), &t(&[2], Double)).unwrap(),
        Double
    );
    assert_eq!(
        result_type_scalar(&t(&[3], Byte), &Scalar::Int(1000)).unwrap(),
        Byte
    );
    assert_eq!(
        result_type_scalar(&t(&[2], Bool), &Scalar::Int(5)).unwrap(),
        Long
    );
    assert_eq!(
        result_type_scalar(&t(&[2], Bool), &Scalar::Bool(true)).unwrap(),
        Bool
    );
    assert_eq!(
        result_type_scalars(&Scalar::Bool(true), &Scalar::Int(5)).unwrap(),
        Long
    );
    // A wrapped number tensor counts as a number.
    let w = t(&[], Double);
    w.set_wrapped_number(true).unwrap();
    assert_eq!(result_type(&t(&[2], Int), &w).unwrap(), Float);
    assert!(can_cast(Long, Byte) && can_cast(Double, Half));
    assert!(!can_cast(Float, Long) && !can_cast(ComplexFloat, Float) && !can_cast(Byte, Bool));
}
