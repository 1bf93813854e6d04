//! Closeness and equality of whole tensors (ATen's `TensorCompare.cpp`): `isclose` as
//! PyTorch composes it from pointwise ops, `allclose` and `equal` reduced to one bool with
//! `all`.

use ratten_core::{Error, Result, Scalar, ScalarType};

use crate::generated::operators as ops;
use crate::Tensor;

/// `isclose` (CompositeImplicitAutograd): `|self - other| <= atol + rtol * |other|` where
/// finite, or equal (NaNs equal with `equal_nan`).
pub fn isclose(
    self_: &Tensor,
    other: &Tensor,
    rtol: f64,
    atol: f64,
    equal_nan: bool,
) -> Result<Tensor> {
    if self_.dtype() != other.dtype() {
        return Err(Error::runtime(format!(
            "{} did not match {}",
            self_.dtype().name(),
            other.dtype().name()
        )));
    }
    if self_.dtype().is_complex() && equal_nan {
        return Err(Error::runtime(
            "isclose with equal_nan=True is not supported for complex inputs.",
        ));
    }
    if rtol < 0.0 {
        return Err(Error::runtime(format!(
            "rtol must be greater than or equal to zero, but got {rtol}"
        )));
    }
    if atol < 0.0 {
        return Err(Error::runtime(format!(
            "atol must be greater than or equal to zero, but got {atol}"
        )));
    }
    let close = ops::eq_Tensor::call(self_, other)?;
    if equal_nan && (self_.dtype().is_floating_point() || self_.dtype().is_complex()) {
        let both =
            ops::bitwise_and_Tensor::call(&ops::isnan::call(self_)?, &ops::isnan::call(other)?)?;
        ops::bitwise_or__Tensor::call(&close, &both)?;
    }
    if rtol == 0.0 && atol == 0.0 {
        return Ok(close);
    }
    // PyTorch's note [closeness error computation]: a bool `self` and an integral `other` are
    // taken as the default float dtype, so the difference is computed in float (a uint8
    // difference would wrap).
    let default = ratten_core::default_dtype::get_default_dtype();
    let s = if self_.dtype() == ScalarType::Bool {
        self_.to_dtype(default)?
    } else {
        self_.clone()
    };
    let o = if self_.dtype().is_integral(true) {
        other.to_dtype(default)?
    } else {
        other.clone()
    };
    let one = Scalar::from(1);
    let allowed = ops::add_Scalar::call(
        &ops::abs::call(&ops::mul_Scalar::call(&o, &Scalar::from(rtol))?)?,
        &Scalar::from(atol),
        &one,
    )?;
    let actual = ops::abs::call(&ops::sub_Tensor::call(&s, &o, &one)?)?;
    let finite_close = ops::bitwise_and_Tensor::call(
        &ops::isfinite::call(&actual)?,
        &ops::le_Tensor::call(&actual, &allowed)?,
    )?;
    ops::bitwise_or__Tensor::call(&close, &finite_close)?;
    Ok(close)
}

/// `allclose` (CompositeExplicitAutograd): `isclose(...).all()`.
pub fn allclose(
    self_: &Tensor,
    other: &Tensor,
    rtol: f64,
    atol: f64,
    equal_nan: bool,
) -> Result<bool> {
    let close = ops::isclose::call(self_, other, rtol, atol, equal_nan)?;
    Ok(ops::all::call(&close)?.item()?.to_bool())
}

/// `cpu_equal`: the same sizes and every element equal (after promotion; NaN is unequal to
/// itself).
pub fn cpu_equal(self_: &Tensor, other: &Tensor) -> Result<bool> {
    if self_.device() != other.device() {
        return Err(Error::runtime(format!(
            "Cannot compare two tensors on different devices. Got: {} and {}",
            self_.device(),
            other.device()
        )));
    }
    if self_.sizes() != other.sizes() {
        return Ok(false);
    }
    let eq = ops::eq_Tensor::call(self_, other)?;
    Ok(ops::all::call(&eq)?.item()?.to_bool())
}
