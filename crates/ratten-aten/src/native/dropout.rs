//! Dropout (ATen's Dropout.cpp).
//!
//! `dropout` on the CPU is torch's `_dropout_impl`: a noise tensor of the input's shape (or
//! `(N, C, 1, ...)` for feature dropout) filled by `bernoulli_(1 - p)`, divided by `1 - p` and
//! multiplied into the input. The generator is drawn exactly as torch draws it, so after
//! `manual_seed` the masks are torch's. `native_dropout` is the fused form whose mask the
//! autograd formula uses.

use ratten_core::{Error, Result, ScalarType, TensorOptions};

use crate::generated::operators as ops;
use crate::Tensor;

fn check_p(p: f64) -> Result<()> {
    if !(0.0..=1.0).contains(&p) {
        return Err(Error::runtime(format!(
            "dropout probability has to be between 0 and 1, but got {p}"
        )));
    }
    Ok(())
}

/// `make_feature_noise`: an empty `(N, C, 1, ...)` tensor like `input`.
fn make_feature_noise(input: &Tensor) -> Result<Tensor> {
    if input.dim() < 2 {
        return Err(Error::runtime(
            "Feature dropout requires at least 2 dimensions in the input",
        ));
    }
    let s = input.sizes();
    let mut sizes = vec![s[0], s[1]];
    sizes.resize(s.len(), 1);
    input.new_empty(&sizes)
}

/// The scaled mask `bernoulli(1 - p) / (1 - p)`, or `None` where the input passes unchanged
/// (`p == 0`, not training, no elements); `Some(zeros)` for `p == 1`.
fn dropout_noise(input: &Tensor, p: f64, train: bool, feature: bool) -> Result<Option<Tensor>> {
    check_p(p)?;
    if p == 0.0 || !train || input.numel() == 0 {
        return Ok(None);
    }
    if p == 1.0 {
        return Ok(Some(Tensor::zeros(
            &[],
            TensorOptions::new()
                .dtype(input.dtype())
                .device(input.device()),
        )?));
    }
    let noise = if feature {
        make_feature_noise(input)?
    } else {
        ops::empty_like::call(input, None, None, None, None, None)?
    };
    noise.bernoulli_float_with_(1.0 - p, None)?;
    noise.div_scalar_(1.0 - p)?;
    Ok(Some(noise))
}

/// `dropout` (CompositeImplicitAutograd).
pub fn dropout(input: &Tensor, p: f64, train: bool) -> Result<Tensor> {
    match dropout_noise(input, p, train, false)? {
        Some(noise) => input.mul(&noise),
        None => Ok(input.clone()),
    }
}

/// `dropout_` (CompositeImplicitAutograd).
pub fn dropout_(self_: &Tensor, p: f64, train: bool) -> Result<&Tensor> {
    if let Some(noise) = dropout_noise(self_, p, train, false)? {
        self_.mul_(&noise)?;
    }
    Ok(self_)
}

/// `feature_dropout` (CompositeImplicitAutograd): whole channels `(n, c)` are dropped.
pub fn feature_dropout(input: &Tensor, p: f64, train: bool) -> Result<Tensor> {
    match dropout_noise(input, p, train, true)? {
        Some(noise) => input.mul(&noise),
        None => Ok(input.clone()),
    }
}

/// `feature_dropout_` (CompositeImplicitAutograd).
pub fn feature_dropout_(self_: &Tensor, p: f64, train: bool) -> Result<&Tensor> {
    if let Some(noise) = dropout_noise(self_, p, train, true)? {
        self_.mul_(&noise)?;
    }
    Ok(self_)
}

/// `native_dropout` (CPU and Meta): `(output, mask)`. Training: the bool mask is
/// `bernoulli(1 - p)` and the output `input * mask * (1 / (1 - p))` (0 for `p == 1`);
/// otherwise a copy of the input and an all-true mask.
pub fn native_dropout_cpu(input: &Tensor, p: f64, train: Option<bool>) -> Result<(Tensor, Tensor)> {
    if input.numel() == 0 {
        return Ok((
            input.clone(),
            ops::empty_like::call(input, None, None, None, None, None)?,
        ));
    }
    if train.unwrap_or(true) {
        let p1m = 1.0 - p;
        let scale = if p1m == 0.0 { 0.0 } else { 1.0 / p1m };
        // In the input's layout: the draws fill memory in the order torch's do.
        let mask = ops::empty_like::call(input, Some(ScalarType::Bool), None, None, None, None)?;
        mask.bernoulli_float_with_(p1m, None)?;
        let output = input.mul(&mask)?;
        output.mul_scalar_(scale)?;
        Ok((output, mask))
    } else {
        let mask = ops::ones_like::call(input, Some(ScalarType::Bool), None, None, None, None)?;
        Ok((ops::clone::call(input, None)?, mask))
    }
}

/// `native_dropout_backward` (CPU and Meta): `grad_output * mask * scale`.
pub fn native_dropout_backward(grad_output: &Tensor, mask: &Tensor, scale: f64) -> Result<Tensor> {
    grad_output.mul(mask)?.mul_scalar(scale)
}
