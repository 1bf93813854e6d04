//! Moving values between Python-shaped data and tensors, without the Python runtime:
//! `ratten.tensor([...])`'s dtype inference and construction, `tolist()`'s element reads,
//! and the numpy layout rules (array-interface type strings, when memory can be shared).

use num_complex::Complex;
use ratten_aten::Tensor;
use ratten_core::dtype::{c128, c32, c64};
use ratten_core::half::{bf16, f16};
use ratten_core::{
    get_default_complex_dtype, get_default_dtype, Error, Result, Scalar, ScalarType,
};

/// A nested Python sequence, flattened: its shape and its leaves in row-major order.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Flat {
    pub sizes: Vec<i64>,
    pub values: Vec<Scalar>,
}

/// torch's `infer_scalar_type` over the leaves: complex beats float beats int beats bool.
pub fn infer_dtype(values: &[Scalar]) -> ScalarType {
    let mut seen_float = false;
    let mut seen_int = false;
    let mut all_bool = !values.is_empty();
    for v in values {
        match v {
            Scalar::ComplexDouble(_) => return get_default_complex_dtype(),
            Scalar::Double(_) => seen_float = true,
            Scalar::Int(_) => seen_int = true,
            Scalar::Bool(_) => {}
        }
        all_bool &= matches!(v, Scalar::Bool(_));
    }
    if seen_float || values.is_empty() && !seen_int {
        // An empty list is a float tensor, as torch.tensor([]) is.
        get_default_dtype()
    } else if all_bool {
        ScalarType::Bool
    } else {
        ScalarType::Long
    }
}

/// Builds a tensor of `dtype` from row-major values, converting each with c10's checked
/// conversion (an overflow is the ValueError torch raises).
pub fn tensor_from_scalars(values: &[Scalar], sizes: &[i64], dtype: ScalarType) -> Result<Tensor> {
    macro_rules! build {
        ($t:ty) => {{
            let v: Vec<$t> = values.iter().map(|s| s.to::<$t>()).collect::<Result<_>>()?;
            Tensor::from_vec(v, sizes)
        }};
    }
    match dtype {
        ScalarType::Bool => {
            let v: Vec<bool> = values.iter().map(|s| s.to_bool()).collect();
            Tensor::from_vec(v, sizes)
        }
        ScalarType::Byte => build!(u8),
        ScalarType::Char => build!(i8),
        ScalarType::Short => build!(i16),
        ScalarType::Int => build!(i32),
        ScalarType::Long => build!(i64),
        ScalarType::Half => build!(f16),
        ScalarType::BFloat16 => build!(bf16),
        ScalarType::Float => build!(f32),
        ScalarType::Double => build!(f64),
        ScalarType::ComplexHalf => build!(c32),
        ScalarType::ComplexFloat => build!(c64),
        ScalarType::ComplexDouble => build!(c128),
    }
}

/// The elements of `t` in row-major order, as the Python numbers `tolist()` gives (Bool,
/// Int, Double or ComplexDouble).
pub fn tensor_to_scalars(t: &Tensor) -> Result<Vec<Scalar>> {
    fn widen<T: Copy>(v: Vec<T>, f: impl Fn(T) -> Scalar) -> Vec<Scalar> {
        v.into_iter().map(f).collect()
    }
    Ok(match t.dtype() {
        ScalarType::Bool => widen(t.to_vec::<bool>()?, Scalar::Bool),
        ScalarType::Byte => widen(t.to_vec::<u8>()?, |x| Scalar::Int(x.into())),
        ScalarType::Char => widen(t.to_vec::<i8>()?, |x| Scalar::Int(x.into())),
        ScalarType::Short => widen(t.to_vec::<i16>()?, |x| Scalar::Int(x.into())),
        ScalarType::Int => widen(t.to_vec::<i32>()?, |x| Scalar::Int(x.into())),
        ScalarType::Long => widen(t.to_vec::<i64>()?, Scalar::Int),
        ScalarType::Half => widen(t.to_vec::<f16>()?, |x| Scalar::Double(x.into())),
        ScalarType::BFloat16 => widen(t.to_vec::<bf16>()?, |x| Scalar::Double(x.into())),
        ScalarType::Float => widen(t.to_vec::<f32>()?, |x| Scalar::Double(x.into())),
        ScalarType::Double => widen(t.to_vec::<f64>()?, Scalar::Double),
        ScalarType::ComplexHalf => widen(t.to_vec::<c32>()?, |x| {
            Scalar::ComplexDouble(Complex::new(x.re.into(), x.im.into()))
        }),
        ScalarType::ComplexFloat => widen(t.to_vec::<c64>()?, |x| {
            Scalar::ComplexDouble(Complex::new(x.re.into(), x.im.into()))
        }),
        ScalarType::ComplexDouble => widen(t.to_vec::<c128>()?, Scalar::ComplexDouble),
    })
}

/// numpy's array-interface type string for a dtype; numpy has no bfloat16 or complex32, and
/// torch raises the same TypeError for them.
pub fn numpy_typestr(dtype: ScalarType) -> Result<&'static str> {
    Ok(match dtype {
        ScalarType::Bool => "|b1",
        ScalarType::Byte => "|u1",
        ScalarType::Char => "|i1",
        ScalarType::Short => "<i2",
        ScalarType::Int => "<i4",
        ScalarType::Long => "<i8",
        ScalarType::Half => "<f2",
        ScalarType::Float => "<f4",
        ScalarType::Double => "<f8",
        ScalarType::ComplexFloat => "<c8",
        ScalarType::ComplexDouble => "<c16",
        ScalarType::BFloat16 | ScalarType::ComplexHalf => {
            return Err(Error::type_error(format!(
                "Got unsupported ScalarType {dtype}"
            )))
        }
    })
}

/// The dtype of a numpy array-interface type string (`<f4`, `|b1`, `=i8`, ...). torch's
/// message for the others.
pub fn dtype_from_typestr(typestr: &str, numpy_name: &str) -> Result<ScalarType> {
    let t = typestr.trim_start_matches(['<', '|', '=']);
    if typestr.starts_with('>') && !t.ends_with('1') {
        return Err(Error::value(
            "given numpy array has byte order different from the native byte order. Conversion \
             between byte orders is currently not supported.",
        ));
    }
    let t = t.trim_start_matches('>');
    Ok(match t {
        "b1" => ScalarType::Bool,
        "u1" => ScalarType::Byte,
        "i1" => ScalarType::Char,
        "i2" => ScalarType::Short,
        "i4" => ScalarType::Int,
        "i8" => ScalarType::Long,
        "f2" => ScalarType::Half,
        "f4" => ScalarType::Float,
        "f8" => ScalarType::Double,
        "c8" => ScalarType::ComplexFloat,
        "c16" => ScalarType::ComplexDouble,
        _ => {
            return Err(Error::type_error(format!(
                "can't convert np.ndarray of type {numpy_name}. The only supported types are: \
                 float64, float32, float16, complex64, complex128, int64, int32, int16, int8, \
                 uint8, and bool."
            )))
        }
    })
}

/// Element strides of a numpy array from its byte strides; torch's errors for the ones a
/// tensor cannot take.
pub fn element_strides(byte_strides: &[i64], itemsize: i64) -> Result<Vec<i64>> {
    byte_strides
        .iter()
        .map(|&s| {
            if s < 0 {
                return Err(Error::value(
                    "At least one stride in the given numpy array is negative, and tensors with \
                     negative strides are not currently supported. (You can probably work around \
                     this by making a copy of your array  with array.copy().) ",
                ));
            }
            if s % itemsize != 0 {
                return Err(Error::value(format!(
                    "given numpy array strides not a multiple of the element byte size. Copy \
                     the numpy array to reallocate the memory. (stride {s}, element size \
                     {itemsize})"
                )));
            }
            Ok(s / itemsize)
        })
        .collect()
}

/// Bytes spanned by a strided array (0 when it has no elements).
pub fn span_bytes(sizes: &[i64], strides: &[i64], itemsize: i64) -> i64 {
    if sizes.contains(&0) {
        return 0;
    }
    let last: i64 = sizes.iter().zip(strides).map(|(n, s)| (n - 1) * s).sum();
    (last + 1) * itemsize
}

/// Whether a numpy buffer at `addr` can become a tensor's storage in place: any buffer aligned
/// to its element size can (the storage is then exactly the array's bytes).
pub fn can_share(addr: usize, itemsize: usize) -> bool {
    itemsize > 0 && addr.is_multiple_of(itemsize)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn dtype_inference_as_torch() {
        assert_eq!(
            infer_dtype(&[Scalar::Int(1), Scalar::Int(2)]),
            ScalarType::Long
        );
        assert_eq!(
            infer_dtype(&[Scalar::Int(1), Scalar::Double(2.0)]),
            ScalarType::Float
        );
        assert_eq!(infer_dtype(&[Scalar::Bool(true)]), ScalarType::Bool);
        assert_eq!(
            infer_dtype(&[Scalar::Bool(true), Scalar::Int(2)]),
            ScalarType::Long
        );
        assert_eq!(
            infer_dtype(&[
                Scalar::ComplexDouble(Complex::new(0.0, 1.0)),
                Scalar::Int(1)
            ]),
            ScalarType::ComplexFloat
        );
        assert_eq!(infer_dtype(&[]), ScalarType::Float);
    }

    #[test]
    fn build_and_read_back() {
        let v = [Scalar::Int(1), Scalar::Double(2.5), Scalar::Bool(true)];
        let t = tensor_from_scalars(&v, &[3], ScalarType::Double).unwrap();
        assert_eq!(
            tensor_to_scalars(&t).unwrap(),
            vec![
                Scalar::Double(1.0),
                Scalar::Double(2.5),
                Scalar::Double(1.0)
            ]
        );
        let t = tensor_from_scalars(&v, &[3], ScalarType::Long).unwrap();
        assert_eq!(
            tensor_to_scalars(&t).unwrap(),
            vec![Scalar::Int(1), Scalar::Int(2), Scalar::Int(1)]
        );
        let e = tensor_from_scalars(&[Scalar::Int(300)], &[1], ScalarType::Char).unwrap_err();
        assert_eq!(e.kind(), ratten_core::ErrorKind::Runtime);
        let t =
            tensor_from_scalars(&[Scalar::Int(1), Scalar::Int(0)], &[2], ScalarType::Bool).unwrap();
        assert_eq!(
            tensor_to_scalars(&t).unwrap(),
            vec![Scalar::Bool(true), Scalar::Bool(false)]
        );
    }

    #[test]
    fn numpy_layout_rules() {
        assert_eq!(numpy_typestr(ScalarType::Float).unwrap(), "<f4");
        assert!(numpy_typestr(ScalarType::BFloat16).is_err());
        assert_eq!(
            dtype_from_typestr("<i8", "int64").unwrap(),
            ScalarType::Long
        );
        assert_eq!(dtype_from_typestr("|b1", "bool").unwrap(), ScalarType::Bool);
        assert!(dtype_from_typestr("<U3", "str96").is_err());
        assert_eq!(element_strides(&[24, 8], 8).unwrap(), vec![3, 1]);
        assert!(element_strides(&[-8], 8).is_err());
        assert!(element_strides(&[3], 8).is_err());
        assert_eq!(span_bytes(&[2, 3], &[3, 1], 8), 48);
        assert_eq!(span_bytes(&[2, 0], &[3, 1], 8), 0);
        assert!(can_share(128, 8));
        assert!(can_share(16, 8));
        assert!(can_share(4, 4));
        assert!(!can_share(4, 8));
        assert!(!can_share(2, 0));
    }
}
