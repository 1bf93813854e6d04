//! `torch.set_default_dtype` / `torch.get_default_dtype`: the dtype a Python or Rust float
//! becomes in type promotion (and, in torch, in factories). Process-wide, as in torch.
//!
//! Factories (through `TensorOptions::dtype_or_default`) and type promotion (`result_type`,
//! TensorIterator's `promote_integer_inputs_to_float`) read the setting here;
//! `options::DEFAULT_DTYPE` is only its initial value.

use std::sync::atomic::{AtomicU8, Ordering};

use crate::dtype::ScalarType;
use crate::error::{Error, Result};

static DEFAULT: AtomicU8 = AtomicU8::new(ScalarType::Float as u8);

/// `torch.get_default_dtype()`: float32 unless changed.
pub fn get_default_dtype() -> ScalarType {
    match DEFAULT.load(Ordering::Relaxed) {
        x if x == ScalarType::Double as u8 => ScalarType::Double,
        x if x == ScalarType::Half as u8 => ScalarType::Half,
        x if x == ScalarType::BFloat16 as u8 => ScalarType::BFloat16,
        _ => ScalarType::Float,
    }
}

/// `c10::get_default_complex_dtype()`: the complex type of the default dtype (complex64 for
/// float32, complex128 for float64, complex32 for float16; bfloat16 maps to complex64, the
/// pre-2.15 rule, as ratten has no BComplex32).
pub fn get_default_complex_dtype() -> ScalarType {
    match get_default_dtype() {
        ScalarType::Double => ScalarType::ComplexDouble,
        ScalarType::Half => ScalarType::ComplexHalf,
        _ => ScalarType::ComplexFloat,
    }
}

/// `torch.set_default_dtype(d)`: only floating dtypes are accepted, with torch's TypeError
/// "only floating-point types are supported as the default type".
pub fn set_default_dtype(dtype: ScalarType) -> Result<()> {
    if !dtype.is_floating_point() {
        return Err(Error::type_error(
            "only floating-point types are supported as the default type",
        ));
    }
    DEFAULT.store(dtype as u8, Ordering::Relaxed);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn rejects_non_float() {
        let e = set_default_dtype(ScalarType::Long).unwrap_err();
        assert_eq!(e.kind(), crate::ErrorKind::Type);
        // Unchanged (other tests in this binary never change it).
        assert_eq!(get_default_dtype(), ScalarType::Float);
        assert_eq!(get_default_complex_dtype(), ScalarType::ComplexFloat);
    }
}
