//! Interpolation (ATen's UpSampleNearest2d.cpp, UpSampleBilinear2d.cpp, UpSample.cpp).
//!
//! The source positions and weights along H and W come from `upsample_kernels` (torch's index
//! arithmetic, in float for float32 / float16 / bfloat16 and in double for float64). Nearest
//! gathers with `index_select` along H then W; bilinear blends the two taps along W, then
//! along H (`h0 * (w0 * x00 + w1 * x01) + h1 * (w0 * x10 + w1 * x11)`, torch's order). The
//! backward ops scatter with `index_add` along the same taps.

use ratten_core::{Error, Result, ScalarType, TensorOptions};

use crate::native::cpu::elements::not_implemented;
use crate::native::cpu::upsample_kernels::{linear_taps, nearest_indices, LinearTaps};
use crate::native::scatter_gather::fmt_sizes;
use crate::structured::MetaBase;
use crate::Tensor;

fn options_like(t: &Tensor) -> TensorOptions {
    TensorOptions::new().dtype(t.dtype()).device(t.device())
}

fn index(v: Vec<i64>) -> Result<Tensor> {
    let n = v.len() as i64;
    Tensor::from_vec(v, &[n])
}

/// `upsample_2d_common_check`: the full output size `(N, C, OH, OW)`.
fn upsample_2d_common_check(input_size: &[i64], output_size: &[i64]) -> Result<[i64; 4]> {
    if output_size.len() != 2 {
        return Err(Error::runtime(format!(
            "It is expected output_size equals to 2, but got size {}",
            output_size.len()
        )));
    }
    if input_size.len() != 4 {
        return Err(Error::runtime(format!(
            "It is expected input_size equals to 4, but got size {}",
            input_size.len()
        )));
    }
    let (oh, ow) = (output_size[0], output_size[1]);
    let (ih, iw) = (input_size[2], input_size[3]);
    if !(ih > 0 && iw > 0 && oh > 0 && ow > 0) {
        return Err(Error::runtime(format!(
            "Input and output sizes should be greater than 0, but got input (H: {ih}, W: {iw}) \
             output (H: {oh}, W: {ow})"
        )));
    }
    Ok([input_size[0], input_size[1], oh, ow])
}

/// The forward metas' checks: the common check, then a non-empty input (batch 0 allowed).
fn upsample_forward_shape(input: &Tensor, output_size: &[i64]) -> Result<[i64; 4]> {
    let s = input.sizes();
    let full = upsample_2d_common_check(&s, output_size)?;
    if input.numel() == 0 && s[1..].iter().product::<i64>() == 0 {
        return Err(Error::runtime(format!(
            "Non-empty 4D data tensor expected but got a tensor with sizes {}",
            fmt_sizes(&s)
        )));
    }
    Ok(full)
}

/// The backward metas' checks: `grad_output` of the output's shape.
fn upsample_backward_check(
    grad_output: &Tensor,
    output_size: &[i64],
    input_size: &[i64],
) -> Result<()> {
    let full = upsample_2d_common_check(input_size, output_size)?;
    if grad_output.dim() != 4 {
        return Err(Error::runtime(format!(
            "Expected grad_output to be a tensor of dimension 4 but got: dimension {}",
            grad_output.dim()
        )));
    }
    let g = grad_output.sizes();
    for (i, (&want, &got)) in full.iter().zip(g.iter()).enumerate() {
        if want != got {
            return Err(Error::runtime(format!(
                "Expected grad_output to have the same shape as output; output.size({i}) = \
                 {want} but got grad_output.size({i}) = {got}"
            )));
        }
    }
    Ok(())
}

/// The dtype bilinear computes its weights in (float for the reduced types), or the refusal.
fn linear_compute_double(name: &str, dt: ScalarType) -> Result<bool> {
    match dt {
        ScalarType::Double => Ok(true),
        ScalarType::Float | ScalarType::Half | ScalarType::BFloat16 => Ok(false),
        d => Err(not_implemented(name, d)),
    }
}

/// `weights` (one per position along `dim` of a 4-D tensor) as a tensor broadcasting there.
fn weights_along(w: &[f64], dim: usize, dtype: ScalarType) -> Result<Tensor> {
    let mut shape = vec![1i64; 4];
    shape[dim] = w.len() as i64;
    Tensor::from_slice(w, &shape)?.to_dtype(dtype)
}

/// `a * wa + b * wb` along `dim`.
fn blend(x: &Tensor, dim: usize, taps: &LinearTaps, wdt: ScalarType) -> Result<Tensor> {
    let a = x.index_select(dim as i64, &index(taps.i0.clone())?)?;
    let b = x.index_select(dim as i64, &index(taps.i1.clone())?)?;
    let wa = weights_along(&taps.l0, dim, wdt)?;
    let wb = weights_along(&taps.l1, dim, wdt)?;
    wa.mul(&a)?.add(&wb.mul(&b)?)
}

/// The adjoint of [`blend`]: `g` (of the output's size along `dim`) scattered onto `size`.
fn blend_backward(
    g: &Tensor,
    dim: usize,
    size: i64,
    taps: &LinearTaps,
    wdt: ScalarType,
) -> Result<Tensor> {
    let mut shape = g.sizes().to_vec();
    shape[dim] = size;
    let acc = Tensor::zeros(&shape, options_like(g))?;
    let ga = g
        .mul(&weights_along(&taps.l0, dim, wdt)?)?
        .to_dtype(g.dtype())?;
    let gb = g
        .mul(&weights_along(&taps.l1, dim, wdt)?)?
        .to_dtype(g.dtype())?;
    acc.index_add(dim as i64, &index(taps.i0.clone())?, &ga)?
        .index_add(dim as i64, &index(taps.i1.clone())?, &gb)
}

// ---------------------------------------------------------------------------------------------
// nearest

/// TORCH_META_FUNC(upsample_nearest2d).
pub fn upsample_nearest2d_meta(
    m: &dyn MetaBase,
    self_: &Tensor,
    output_size: &[i64],
    _scales_h: Option<f64>,
    _scales_w: Option<f64>,
) -> Result<()> {
    let full = upsample_forward_shape(self_, output_size)?;
    m.set_output_raw_strided(0, &full, &[], options_like(self_))
}

/// TORCH_IMPL_FUNC(upsample_nearest2d_out_cpu).
pub fn upsample_nearest2d_out_cpu(
    _state: &mut (),
    self_: &Tensor,
    output_size: &[i64],
    scales_h: Option<f64>,
    scales_w: Option<f64>,
    out: &Tensor,
) -> Result<()> {
    if out.is_meta() || self_.is_meta() || out.numel() == 0 {
        return Ok(());
    }
    if self_.dtype().is_complex() || self_.dtype() == ScalarType::Bool {
        return Err(not_implemented(
            "upsample_nearest2d_out_frame",
            self_.dtype(),
        ));
    }
    let s = self_.sizes();
    let ih = index(nearest_indices(s[2], output_size[0], scales_h))?;
    let iw = index(nearest_indices(s[3], output_size[1], scales_w))?;
    out.copy_(&self_.index_select(2, &ih)?.index_select(3, &iw)?)?;
    Ok(())
}

/// TORCH_META_FUNC(upsample_nearest2d_backward).
pub fn upsample_nearest2d_backward_meta(
    m: &dyn MetaBase,
    grad_output: &Tensor,
    output_size: &[i64],
    input_size: &[i64],
    _scales_h: Option<f64>,
    _scales_w: Option<f64>,
) -> Result<()> {
    upsample_backward_check(grad_output, output_size, input_size)?;
    m.set_output_raw_strided(0, input_size, &[], options_like(grad_output))
}

/// TORCH_IMPL_FUNC(upsample_nearest2d_backward_out_cpu): each input element sums the gradient
/// of the outputs that copied it.
pub fn upsample_nearest2d_backward_out_cpu(
    _state: &mut (),
    grad_output: &Tensor,
    output_size: &[i64],
    input_size: &[i64],
    scales_h: Option<f64>,
    scales_w: Option<f64>,
    grad_input: &Tensor,
) -> Result<()> {
    if grad_input.is_meta() || grad_output.is_meta() || grad_input.numel() == 0 {
        return Ok(());
    }
    if !(grad_output.dtype().is_floating_point()) {
        return Err(not_implemented(
            "upsample_nearest2d_backward_out_frame",
            grad_output.dtype(),
        ));
    }
    let ih = index(nearest_indices(input_size[2], output_size[0], scales_h))?;
    let iw = index(nearest_indices(input_size[3], output_size[1], scales_w))?;
    let o = options_like(grad_output);
    let gw = Tensor::zeros(
        &[input_size[0], input_size[1], output_size[0], input_size[3]],
        o,
    )?
    .index_add(3, &iw, grad_output)?;
    let gh = Tensor::zeros(input_size, o)?.index_add(2, &ih, &gw)?;
    grad_input.copy_(&gh)?;
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// bilinear

/// TORCH_META_FUNC(upsample_bilinear2d).
pub fn upsample_bilinear2d_meta(
    m: &dyn MetaBase,
    self_: &Tensor,
    output_size: &[i64],
    _align_corners: bool,
    _scales_h: Option<f64>,
    _scales_w: Option<f64>,
) -> Result<()> {
    let full = upsample_forward_shape(self_, output_size)?;
    m.set_output_raw_strided(0, &full, &[], options_like(self_))
}

/// TORCH_IMPL_FUNC(upsample_bilinear2d_out_cpu).
pub fn upsample_bilinear2d_out_cpu(
    _state: &mut (),
    self_: &Tensor,
    output_size: &[i64],
    align_corners: bool,
    scales_h: Option<f64>,
    scales_w: Option<f64>,
    out: &Tensor,
) -> Result<()> {
    let double = linear_compute_double("upsample_bilinear2d_out_frame", self_.dtype())?;
    if out.is_meta() || self_.is_meta() || out.numel() == 0 {
        return Ok(());
    }
    let wdt = if double {
        ScalarType::Double
    } else {
        ScalarType::Float
    };
    let s = self_.sizes();
    let th = linear_taps(s[2], output_size[0], align_corners, scales_h, double);
    let tw = linear_taps(s[3], output_size[1], align_corners, scales_w, double);
    let x = if double {
        self_.clone()
    } else {
        self_.to_dtype(ScalarType::Float)?
    };
    let xw = blend(&x, 3, &tw, wdt)?;
    out.copy_(&blend(&xw, 2, &th, wdt)?)?;
    Ok(())
}

/// TORCH_META_FUNC(upsample_bilinear2d_backward).
pub fn upsample_bilinear2d_backward_meta(
    m: &dyn MetaBase,
    grad_output: &Tensor,
    output_size: &[i64],
    input_size: &[i64],
    _align_corners: bool,
    _scales_h: Option<f64>,
    _scales_w: Option<f64>,
) -> Result<()> {
    upsample_backward_check(grad_output, output_size, input_size)?;
    m.set_output_raw_strided(0, input_size, &[], options_like(grad_output))
}

/// TORCH_IMPL_FUNC(upsample_bilinear2d_backward_out_cpu).
#[allow(clippy::too_many_arguments)]
pub fn upsample_bilinear2d_backward_out_cpu(
    _state: &mut (),
    grad_output: &Tensor,
    output_size: &[i64],
    input_size: &[i64],
    align_corners: bool,
    scales_h: Option<f64>,
    scales_w: Option<f64>,
    grad_input: &Tensor,
) -> Result<()> {
    let double = linear_compute_double(
        "upsample_bilinear2d_backward_out_frame",
        grad_output.dtype(),
    )?;
    if grad_input.is_meta() || grad_output.is_meta() || grad_input.numel() == 0 {
        return Ok(());
    }
    let wdt = if double {
        ScalarType::Double
    } else {
        ScalarType::Float
    };
    let th = linear_taps(
        input_size[2],
        output_size[0],
        align_corners,
        scales_h,
        double,
    );
    let tw = linear_taps(
        input_size[3],
        output_size[1],
        align_corners,
        scales_w,
        double,
    );
    let g = if double {
        grad_output.clone()
    } else {
        grad_output.to_dtype(ScalarType::Float)?
    };
    let gh = blend_backward(&g, 2, input_size[2], &th, wdt)?;
    grad_input.copy_(&blend_backward(&gh, 3, input_size[3], &tw, wdt)?)?;
    Ok(())
}
