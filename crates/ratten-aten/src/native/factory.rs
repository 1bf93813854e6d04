//! Factories (aten/src/ATen/native/TensorFactories.cpp, RangeFactories.cpp, RangeUtils.h):
//! empty, zeros, ones, full, arange, eye, tensors from data, 0-dim scalar tensors, wrapped
//! numbers, and `fill_` / `zero_`, with PyTorch's dtype inference and error texts.
//!
//! Dtype defaults follow torch: float32 unless the values say otherwise (`full` with an int
//! fill is int64, `arange` over integers is int64).

use ratten_core::default_dtype::{get_default_complex_dtype, get_default_dtype};
use ratten_core::dtype::PodElement;
use ratten_core::scalar::format_g;
use ratten_core::{
    dispatch_all_types, Device, Element, Error, Result, Scalar, ScalarConvert, ScalarType,
    TensorAccess, TensorBase, TensorOptions,
};

use crate::Tensor;

/// The `AT_DISPATCH` error for a dtype a kernel does not handle (NotImplementedError).
fn dispatch_error(kernel: &str, dtype: ScalarType) -> Error {
    Error::not_implemented(format!("\"{kernel}\" not implemented for '{dtype}'"))
}

/// Writes `f(i)` at the i-th element of a contiguous tensor.
fn fill_contiguous_with<T: PodElement>(
    g: &mut TensorAccess,
    mut f: impl FnMut(usize) -> T,
) -> Result<()> {
    for (i, x) in g.output_slice_mut::<T>(0)?.iter_mut().enumerate() {
        *x = f(i);
    }
    Ok(())
}

impl Tensor {
    /// `torch.empty(sizes, dtype=, device=)`: contents unspecified (but initialised memory).
    pub fn empty(sizes: &[i64], options: impl Into<TensorOptions>) -> Result<Tensor> {
        let o = options.into();
        TensorBase::empty(sizes, o.dtype_or_default(), o.device_or_default()).map(Tensor::from)
    }

    /// `torch.zeros`.
    pub fn zeros(sizes: &[i64], options: impl Into<TensorOptions>) -> Result<Tensor> {
        let o = options.into();
        TensorBase::zeros(sizes, o.dtype_or_default(), o.device_or_default()).map(Tensor::from)
    }

    /// `torch.ones`.
    pub fn ones(sizes: &[i64], options: impl Into<TensorOptions>) -> Result<Tensor> {
        let t = Self::empty(sizes, options)?;
        t.fill_(1i64)?;
        Ok(t)
    }

    /// `torch.full(sizes, fill_value)`. Without a dtype, it is inferred from the value: bool
    /// -> bool, integer -> int64, complex -> the default complex dtype (complex64), float ->
    /// the default dtype (float32).
    pub fn full(
        sizes: &[i64],
        fill_value: impl Into<Scalar>,
        options: impl Into<TensorOptions>,
    ) -> Result<Tensor> {
        let value = fill_value.into();
        let mut o = options.into();
        if o.dtype.is_none() {
            o.dtype = Some(match value {
                Scalar::Bool(_) => ScalarType::Bool,
                Scalar::Int(_) => ScalarType::Long,
                Scalar::ComplexDouble(_) => get_default_complex_dtype(),
                Scalar::Double(_) => get_default_dtype(),
            });
        }
        let t = Self::empty(sizes, o)?;
        t.fill_(value)?;
        Ok(t)
    }

    /// A CPU tensor holding a copy of `data` with shape `sizes` (numel must match).
    pub fn from_slice<T: Element>(data: &[T], sizes: &[i64]) -> Result<Tensor> {
        TensorBase::from_slice(data, sizes).map(Tensor::from)
    }

    /// Like [`from_slice`](Self::from_slice), taking a Vec.
    pub fn from_vec<T: Element>(data: Vec<T>, sizes: &[i64]) -> Result<Tensor> {
        TensorBase::from_slice(&data, sizes).map(Tensor::from)
    }

    /// `torch.scalar_tensor(s)`: a 0-dim tensor, float32 unless a dtype is given (the value's
    /// kind does not change the dtype, as in torch).
    pub fn scalar_tensor(
        s: impl Into<Scalar>,
        options: impl Into<TensorOptions>,
    ) -> Result<Tensor> {
        let t = Self::empty(&[], options)?;
        t.fill_(s)?;
        Ok(t)
    }

    /// `wrapped_scalar_tensor(s)`: the 0-dim tensor a number becomes when it is passed where a
    /// Tensor is expected (double -> float64, int -> int64, bool, complex -> complex128),
    /// marked as a wrapped number for type promotion.
    pub fn wrapped_scalar_tensor(s: impl Into<Scalar>, device: Device) -> Result<Tensor> {
        let s = s.into();
        let t = Self::scalar_tensor(s, (s.scalar_type(), device))?;
        t.set_wrapped_number(true)?;
        Ok(t)
    }

    /// `torch.arange(end)`: `0, 1, ..., end - 1`.
    pub fn arange(end: impl Into<Scalar>, options: impl Into<TensorOptions>) -> Result<Tensor> {
        Self::arange_start_step(0i64, end, 1i64, options)
    }

    /// `torch.arange(start, end)`.
    pub fn arange_start(
        start: impl Into<Scalar>,
        end: impl Into<Scalar>,
        options: impl Into<TensorOptions>,
    ) -> Result<Tensor> {
        Self::arange_start_step(start, end, 1i64, options)
    }

    /// `torch.arange(start, end, step)`: `ceil((end - start) / step)` values `start + i *
    /// step`. Without a dtype: int64 if all three are integers (or bools), else float32.
    pub fn arange_start_step(
        start: impl Into<Scalar>,
        end: impl Into<Scalar>,
        step: impl Into<Scalar>,
        options: impl Into<TensorOptions>,
    ) -> Result<Tensor> {
        let (start, end, step) = (start.into(), end.into(), step.into());
        let mut o = options.into();
        if [start, end, step].iter().any(Scalar::is_complex) {
            return Err(Error::not_implemented(
                "arange: complex start, end or step is not supported by ratten",
            ));
        }
        if o.dtype.is_none() && [start, end, step].iter().all(|s| s.is_integral(true)) {
            o.dtype = Some(ScalarType::Long);
        }
        let dtype = o.dtype_or_default();
        let supported = dtype.is_floating_point() || dtype.is_integral(false);
        if !supported {
            return Err(dispatch_error("arange_cpu", dtype));
        }
        let size = compute_arange_size(&start, &end, &step, dtype)?;
        let t = Self::empty(&[size], o)?;
        if t.is_meta() || size == 0 {
            return Ok(t);
        }
        let mut g = TensorAccess::write(&t)?;
        // Values are start + i * step in the accumulate type (int64 for integers, double for
        // float/double, float for half/bfloat16), then cast, as the CPU kernel does.
        macro_rules! int_fill {
            ($t:ty) => {{
                let (a, s) = (start.to::<i64>()?, step.to::<i64>()?);
                fill_contiguous_with::<$t>(&mut g, |i| {
                    a.wrapping_add(s.wrapping_mul(i as i64)) as $t
                })
            }};
        }
        match dtype {
            ScalarType::Byte => int_fill!(u8),
            ScalarType::Char => int_fill!(i8),
            ScalarType::Short => int_fill!(i16),
            ScalarType::Int => int_fill!(i32),
            ScalarType::Long => int_fill!(i64),
            ScalarType::Float => {
                let (a, s) = (start.to::<f64>()?, step.to::<f64>()?);
                fill_contiguous_with::<f32>(&mut g, |i| (a + s * i as f64) as f32)
            }
            ScalarType::Double => {
                let (a, s) = (start.to::<f64>()?, step.to::<f64>()?);
                fill_contiguous_with::<f64>(&mut g, |i| a + s * i as f64)
            }
            ScalarType::Half => {
                let (a, s) = (start.to::<f32>()?, step.to::<f32>()?);
                fill_contiguous_with(&mut g, |i| half::f16::from_f32(a + s * i as f32))
            }
            ScalarType::BFloat16 => {
                let (a, s) = (start.to::<f32>()?, step.to::<f32>()?);
                fill_contiguous_with(&mut g, |i| half::bf16::from_f32(a + s * i as f32))
            }
            other => Err(dispatch_error("arange_cpu", other)),
        }?;
        drop(g);
        Ok(t)
    }

    /// `torch.eye(n)`: the n x n identity.
    pub fn eye(n: i64, options: impl Into<TensorOptions>) -> Result<Tensor> {
        Self::eye_m(n, n, options)
    }

    /// `torch.eye(n, m)`: ones on the main diagonal of an n x m matrix.
    pub fn eye_m(n: i64, m: i64, options: impl Into<TensorOptions>) -> Result<Tensor> {
        if n < 0 {
            return Err(Error::runtime(format!(
                "n must be greater or equal to 0, got {n}"
            )));
        }
        if m < 0 {
            return Err(Error::runtime(format!(
                "m must be greater or equal to 0, got {m}"
            )));
        }
        let t = Self::zeros(&[n, m], options)?;
        if t.is_meta() {
            return Ok(t);
        }
        let g = TensorAccess::write(&t)?;
        let out = g.output(0)?;
        dispatch_all_types!(t.dtype(), T => {
            let one = T::from_scalar(&Scalar::Int(1))?;
            let p = out.data_ptr_mut::<T>()?;
            for i in 0..n.min(m) {
                // SAFETY: element (i, i) of the contiguous n x m tensor, held exclusively.
                unsafe { p.add((i * (m + 1)) as usize).write(one) };
            }
        });
        drop(g);
        Ok(t)
    }

    /// `fill_(value)`: writes `value` (converted with c10's overflow checks) into every
    /// element, through TensorIterator's nullary loop (`native::copy::fill_`). A no-op for
    /// meta tensors.
    pub fn fill_(&self, value: impl Into<Scalar>) -> Result<&Tensor> {
        let mut value = value.into();
        let dtype = self.dtype();
        // Convert first: an overflow leaves the tensor untouched. The checks are those of
        // PyTorch's two paths:
        // - a 1-element CPU tensor goes through `scalar_fill`, whose half / bfloat16 cast goes
        //   through double (a complex value with an imaginary part is refused as "double")
        //   and then casts without the overflow check (1e300 becomes inf): the value is
        //   rounded here the way that cast rounds, and then passes the check; complex32 is
        //   checked as c10::complex<c10::Half>;
        // - otherwise the fill kernel converts a complex32 value to its opmath
        //   complex<float> with the check (1e300 is refused, 70000 becomes inf+0j).
        if self.numel() == 1 && !self.is_meta() {
            if matches!(dtype, ScalarType::Half | ScalarType::BFloat16) {
                value.check_fits(ScalarType::Double)?;
                value = unchecked_reduced_value(dtype, value);
            }
            value.check_fits(dtype)?;
        } else if dtype == ScalarType::ComplexHalf {
            value.check_fits(ScalarType::ComplexFloat)?;
        } else {
            value.check_fits(dtype)?;
        }
        if !self.is_meta() {
            crate::native::copy::fill_(self, &value)?;
        }
        Ok(self)
    }

    /// `zero_()`.
    pub fn zero_(&self) -> Result<&Tensor> {
        self.fill_(0i64)
    }
}

/// `value` as an unchecked `static_cast` to half or bfloat16 leaves it (through float, as
/// c10's constructors go), so that c10's overflow check then passes; other dtypes keep
/// `value`.
fn unchecked_reduced_value(dtype: ScalarType, value: Scalar) -> Scalar {
    // The real part: the caller has refused a complex value with an imaginary part.
    let re = match value {
        Scalar::Bool(b) => b as u8 as f64,
        Scalar::Int(i) => i as f64,
        Scalar::Double(d) => d,
        Scalar::ComplexDouble(z) => z.re,
    };
    match dtype {
        ScalarType::Half => Scalar::Double(half::f16::from_f32(re as f32).to_f64()),
        ScalarType::BFloat16 => Scalar::Double(half::bf16::from_f32(re as f32).to_f64()),
        _ => value,
    }
}

/// `compute_arange_size` with `arange_check_bounds` (RangeUtils.h), for real arguments.
fn compute_arange_size(
    start: &Scalar,
    end: &Scalar,
    step: &Scalar,
    dtype: ScalarType,
) -> Result<i64> {
    // Validation in double precision.
    let (ds, de, dp) = (start.to::<f64>()?, end.to::<f64>()?, step.to::<f64>()?);
    if dp == 0.0 || dp.is_nan() {
        return Err(Error::runtime("step must be nonzero"));
    }
    if !(ds.is_finite() && de.is_finite()) {
        return Err(Error::runtime(format!(
            "unsupported range: {} -> {}",
            format_g(ds),
            format_g(de)
        )));
    }
    if !((dp > 0.0 && de >= ds) || (dp < 0.0 && de <= ds)) {
        return Err(Error::runtime(
            "upper bound and lower bound inconsistent with step sign",
        ));
    }
    let all_int = [start, end, step].iter().all(|s| s.is_integral(false));
    let size_d = if dtype == ScalarType::Long && all_int {
        // int64 has more precision than double: compute the count exactly.
        let (a, b, s) = (start.to::<i64>()?, end.to::<i64>()?, step.to::<i64>()?);
        let sgn = s.signum();
        let num = (b as i128) - (a as i128) + (s as i128) - (sgn as i128);
        (num / s as i128) as f64
    } else {
        ((de - ds) / dp).ceil()
    };
    if !(size_d >= 0.0 && size_d <= i64::MAX as f64) {
        return Err(Error::runtime("invalid size, possible overflow?"));
    }
    Ok(size_d as i64)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arange_size_rules() {
        let size = |a: Scalar, b: Scalar, s: Scalar, d| compute_arange_size(&a, &b, &s, d).unwrap();
        assert_eq!(
            size(0i64.into(), 10i64.into(), 3i64.into(), ScalarType::Long),
            4
        );
        assert_eq!(
            size(10i64.into(), 0i64.into(), (-3i64).into(), ScalarType::Long),
            4
        );
        assert_eq!(
            size(0.0.into(), 1.0.into(), 0.1.into(), ScalarType::Float),
            10
        );
        assert_eq!(
            size(0i64.into(), 0i64.into(), 1i64.into(), ScalarType::Long),
            0
        );
        // The exact int64 count survives values beyond double precision.
        let big = (1i64 << 60) + 1;
        assert_eq!(
            size(
                0i64.into(),
                big.into(),
                (1i64 << 59).into(),
                ScalarType::Long
            ),
            3
        );
    }

    #[test]
    fn fill_walks_strided_views() {
        let t = Tensor::zeros(&[3, 3], ScalarType::Int).unwrap();
        let column = t.as_strided_with(&[3], &[3], Some(1)).unwrap();
        column.fill_(7i64).unwrap();
        assert_eq!(t.to_vec::<i32>().unwrap(), vec![0, 7, 0, 0, 7, 0, 0, 7, 0]);
        // An overflowing value leaves the tensor untouched.
        let e = column.fill_(1i64 << 40).unwrap_err();
        assert_eq!(
            e.message(),
            "value cannot be converted to type int without overflow"
        );
        assert_eq!(t.to_vec::<i32>().unwrap()[1], 7);
    }
}
