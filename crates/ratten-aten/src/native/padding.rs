//! Padding (ATen's PadNd.cpp, ReflectionPad.cpp, ReplicationPadding.cpp).
//!
//! `pad` picks the operator by mode and rank as `_pad_enum` does. `constant_pad_nd` and
//! `_pad_circular` are torch's compositions (narrow / fill / slice copies). Reflection and
//! replication gather the input along each padded dim by the source positions of
//! `padding_kernels::pad_source_indices` (`index_select`), and their backward ops scatter the
//! gradient back along the same positions (`index_add`), one padded dim at a time.

use ratten_core::{Error, Result, TensorOptions};

use crate::generated::operators as ops;
use crate::native::cpu::padding_kernels::{pad_source_indices, PadMode};
use crate::native::scatter_gather::fmt_sizes;
use crate::structured::{resize_output, MetaBase};
use crate::Tensor;

fn options_like(t: &Tensor) -> TensorOptions {
    TensorOptions::new().dtype(t.dtype()).device(t.device())
}

// ---------------------------------------------------------------------------------------------
// constant_pad_nd, _pad_circular, _pad_enum, pad

/// `constant_pad_nd` (CompositeExplicitAutograd): pads the last `pad.len() / 2` dims (the last
/// dim by `pad[0], pad[1]`, the one before by `pad[2], pad[3]`, ...) with `value`; negative
/// pads crop.
pub fn constant_pad_nd(self_: &Tensor, pad: &[i64], value: &ratten_core::Scalar) -> Result<Tensor> {
    if !pad.len().is_multiple_of(2) {
        return Err(Error::runtime(format!(
            "Length of pad must be even but instead it equals {}",
            pad.len()
        )));
    }
    let input_sizes = self_.sizes().to_vec();
    let l_inp = self_.dim() as i64;
    let l_pad = (pad.len() / 2) as i64;
    let l_diff = l_inp - l_pad;
    if l_inp < l_pad {
        return Err(Error::runtime(format!(
            "Length of pad should be no more than twice the number of dimensions of the input. \
             Pad length is {}while the input has {}dimensions.",
            pad.len(),
            l_inp
        )));
    }
    let mut all_pads_non_positive = true;
    let mut c_input = self_.clone();
    for i in l_diff..l_inp {
        let pad_idx = (2 * (l_inp - i - 1)) as usize;
        if pad[pad_idx] < 0 {
            let size = c_input.sizes()[i as usize];
            c_input = c_input.narrow(i, -pad[pad_idx], size + pad[pad_idx])?;
        } else if pad[pad_idx] != 0 {
            all_pads_non_positive = false;
        }
        if pad[pad_idx + 1] < 0 {
            let size = c_input.sizes()[i as usize];
            c_input = c_input.narrow(i, 0, size + pad[pad_idx + 1])?;
        } else if pad[pad_idx + 1] != 0 {
            all_pads_non_positive = false;
        }
    }
    if all_pads_non_positive {
        return ops::clone::call(&c_input, None);
    }
    let mut new_shape = input_sizes[..l_diff as usize].to_vec();
    for i in 0..l_pad as usize {
        let pad_idx = pad.len() - (i + 1) * 2;
        let d = l_diff as usize + i;
        let new_dim = input_sizes[d] + pad[pad_idx] + pad[pad_idx + 1];
        if new_dim <= 0 {
            return Err(Error::runtime(format!(
                "The input size {}, plus negative padding {} and {} resulted in a negative \
                 output size, which is invalid. Check dimension {d} of your input.",
                input_sizes[d],
                pad[pad_idx],
                pad[pad_idx + 1]
            )));
        }
        new_shape.push(new_dim);
    }
    let output = Tensor::empty(&new_shape, options_like(self_))?;
    output.fill_scalar_(*value)?;
    let mut c_output = output.clone();
    for i in l_diff..l_inp {
        let pad_idx = (2 * (l_inp - i - 1)) as usize;
        if pad[pad_idx] > 0 {
            let size = c_output.sizes()[i as usize];
            c_output = c_output.narrow(i, pad[pad_idx], size - pad[pad_idx])?;
        }
        if pad[pad_idx + 1] > 0 {
            let size = c_output.sizes()[i as usize];
            c_output = c_output.narrow(i, 0, size - pad[pad_idx + 1])?;
        }
    }
    c_output.copy_(&c_input)?;
    Ok(output)
}

/// `_pad_circular` (CompositeImplicitAutograd): wraps the input around along the last
/// `pad.len() / 2` dims of an `(N, C, ...)` input.
pub fn _pad_circular_symint(self_: &Tensor, padding: &[i64]) -> Result<Tensor> {
    let in_shape = self_.sizes().to_vec();
    let ndim = in_shape.len() as i64 - 2;
    if padding.len() + 4 != in_shape.len() * 2 {
        return Err(Error::runtime(format!(
            "Expected padding of length {} but got {}",
            ndim * 2,
            padding.len()
        )));
    }
    let ndim = ndim as usize;
    let mut out_shape = in_shape.clone();
    for i in 0..ndim {
        let pad_l = padding[2 * (ndim - i - 1)];
        let pad_r = padding[2 * (ndim - i - 1) + 1];
        let size = in_shape[2 + i];
        out_shape[2 + i] = size + pad_l + pad_r;
        if !(pad_l <= size && pad_r <= size) {
            return Err(Error::runtime(
                "Padding value causes wrapping around more than once.",
            ));
        }
        if out_shape[2 + i] < 0 {
            return Err(Error::runtime(
                "Negative padding value is resulting in an empty dimension",
            ));
        }
    }
    let out = self_.new_empty(&out_shape)?;
    let mut out_slice = out.clone();
    let mut in_slice = self_.clone();
    for i in 0..ndim {
        let dim = ndim - i + 1;
        let (pad_l, pad_r) = (padding[2 * i], padding[2 * i + 1]);
        out_slice = out_slice.slice_with(
            dim as i64,
            Some(pad_l.max(0)),
            Some(out_shape[dim] - pad_r.max(0)),
            1,
        )?;
        in_slice = in_slice.slice_with(
            dim as i64,
            Some((-pad_l).max(0)),
            Some(in_shape[dim] - (-pad_r).max(0)),
            1,
        )?;
    }
    out_slice.copy_(&in_slice)?;
    // Left sides first, then right sides; corners are written more than once when ndim > 1.
    for i in 0..ndim {
        let dim = ndim - i + 1;
        let (pad_l, pad_r) = (padding[2 * i], padding[2 * i + 1]);
        let d = dim as i64;
        if pad_l > 0 {
            let dst = out.slice_with(d, Some(0), Some(pad_l), 1)?;
            let src = out.slice_with(
                d,
                Some(out_shape[dim] - pad_l - pad_r.max(0)),
                Some(out_shape[dim] - pad_r.max(0)),
                1,
            )?;
            dst.copy_(&src)?;
        }
        if pad_r > 0 {
            let dst = out.slice_with(d, Some(out_shape[dim] - pad_r), Some(out_shape[dim]), 1)?;
            let src = out.slice_with(d, Some(pad_l.max(0)), Some(pad_l.max(0) + pad_r), 1)?;
            dst.copy_(&src)?;
        }
    }
    Ok(out)
}

const PAD_MODES: [&str; 4] = ["constant", "reflect", "replicate", "circular"];

/// `_pad_enum` (CompositeImplicitAutograd): `mode` is `at::padding_mode` (0 constant,
/// 1 reflect, 2 replicate, 3 circular).
pub fn _pad_enum_symint(
    self_: &Tensor,
    pad: &[i64],
    mode: i64,
    value: Option<f64>,
) -> Result<Tensor> {
    let input_dim = self_.dim();
    if !pad.len().is_multiple_of(2) {
        return Err(Error::runtime("Padding length must be divisible by 2"));
    }
    if pad.len() > input_dim * 2 {
        return Err(Error::runtime(format!(
            "Padding length should be less than or equal to two times the input dimension but \
             got padding length {} and input of dimension {input_dim}",
            pad.len()
        )));
    }
    let name = usize::try_from(mode)
        .ok()
        .and_then(|m| PAD_MODES.get(m))
        .ok_or_else(|| Error::runtime(format!("Unrecognised padding mode {mode}")))?;
    if *name == "constant" {
        return ops::constant_pad_nd::call(self_, pad, &value.unwrap_or(0.0).into());
    }
    if value.is_some_and(|v| v != 0.0) {
        return Err(Error::runtime(format!(
            "Padding mode \"{name}\" doesn't take in value argument"
        )));
    }
    match (pad.len(), input_dim, *name) {
        (2, 2 | 3, "reflect") => return ops::reflection_pad1d::call(self_, pad),
        (2, 2 | 3, "replicate") => return ops::replication_pad1d::call(self_, pad),
        (4, 3 | 4, "reflect") => return ops::reflection_pad2d::call(self_, pad),
        (4, 3 | 4, "replicate") => return ops::replication_pad2d::call(self_, pad),
        (2, 2 | 3, "circular") | (4, 3 | 4, "circular") | (6, 4 | 5, "circular") => {
            return ops::_pad_circular::call(self_, pad)
        }
        _ => {}
    }
    Err(Error::not_implemented(
        "Only 2D, 3D, 4D, 5D padding with non-constant padding are supported for now",
    ))
}

/// `pad` (CompositeImplicitAutograd): `mode` one of "constant", "reflect", "replicate",
/// "circular".
pub fn pad_symint(self_: &Tensor, pad: &[i64], mode: &str, value: Option<f64>) -> Result<Tensor> {
    let m = PAD_MODES
        .iter()
        .position(|&n| n == mode)
        .ok_or_else(|| Error::not_implemented(format!("Unrecognised padding mode {mode}")))?;
    _pad_enum_symint(self_, pad, m as i64, value)
}

// ---------------------------------------------------------------------------------------------
// reflection and replication padding

/// `padding::check_valid_input<dim>`.
fn check_valid_input(input: &Tensor, padding: &[i64], dim: usize) -> Result<()> {
    if padding.len() != 2 * dim {
        return Err(Error::runtime(format!(
            "padding size is expected to be {}, but got: {}",
            2 * dim,
            padding.len()
        )));
    }
    let s = input.sizes();
    let batch = s.len() == dim + 2;
    let valid = if batch {
        s[1..].iter().all(|&d| d != 0)
    } else {
        s.len() == dim + 1 && s.iter().all(|&d| d != 0)
    };
    if !valid {
        return Err(Error::runtime(format!(
            "Expected {}D or {}D (batch mode) tensor with possibly 0 batch size and other \
             non-zero dimensions for input, but got: {}",
            dim + 1,
            dim + 2,
            fmt_sizes(&s)
        )));
    }
    Ok(())
}

/// The output shape of a reflection / replication pad of the last `padding.len() / 2` dims, with
/// torch's checks.
fn pad_output_shape(input: &Tensor, padding: &[i64], mode: PadMode) -> Result<Vec<i64>> {
    let dim = padding.len() / 2;
    check_valid_input(input, padding, dim)?;
    let s = input.sizes().to_vec();
    let nd = s.len();
    let mut out = s.clone();
    // (pad_l, pad_r) of the last dim, then of the one before.
    for k in 0..dim {
        let d = nd - 1 - k;
        let (pl, pr) = (padding[2 * k], padding[2 * k + 1]);
        if mode == PadMode::Reflect && !(pl < s[d] && pr < s[d]) {
            return Err(Error::runtime(format!(
                "Argument #{}: Padding size should be less than the corresponding input \
                 dimension, but got: padding ({pl}, {pr}) at dimension {d} of input {}",
                4 + 2 * k,
                fmt_sizes(&s)
            )));
        }
        out[d] = s[d] + pl + pr;
    }
    let w = (s[nd - 1], out[nd - 1]);
    if dim == 1 {
        if w.1 < 1 {
            return Err(Error::runtime(format!(
                "input (W: {}) is too small. Calculated output W: {}",
                w.0, w.1
            )));
        }
    } else {
        let h = (s[nd - 2], out[nd - 2]);
        if w.1 < 1 || h.1 < 1 {
            return Err(Error::runtime(match mode {
                PadMode::Reflect => format!(
                    "input (H: {}, W: {})is too small.  Calculated output H: {} W: {}",
                    h.0, w.0, h.1, w.1
                ),
                PadMode::Replicate => format!(
                    "input (H: {}, W: {} ) is too small. Calculated output H: {} W: {}",
                    h.0, w.0, h.1, w.1
                ),
            }));
        }
    }
    Ok(out)
}

/// The source positions along the padded dims, last dim first, as int64 tensors.
fn index_tensors(input: &Tensor, padding: &[i64], mode: PadMode) -> Result<Vec<Tensor>> {
    let s = input.sizes();
    let nd = s.len();
    (0..padding.len() / 2)
        .map(|k| {
            let idx = pad_source_indices(s[nd - 1 - k], padding[2 * k], padding[2 * k + 1], mode);
            let n = idx.len() as i64;
            Tensor::from_vec(idx, &[n])
        })
        .collect()
}

/// Gathers `input` into the padded `out` (already of the output shape).
fn pad_forward_into(input: &Tensor, padding: &[i64], mode: PadMode, out: &Tensor) -> Result<()> {
    if out.is_meta() || input.is_meta() || out.numel() == 0 {
        return Ok(());
    }
    let nd = input.dim() as i64;
    let mut t = input.clone();
    for (k, idx) in index_tensors(input, padding, mode)?.iter().enumerate() {
        t = t.index_select(nd - 1 - k as i64, idx)?;
    }
    out.copy_(&t)?;
    Ok(())
}

/// Scatters `grad_output` back onto `input`'s shape into `grad_input`.
fn pad_backward_into(
    grad_output: &Tensor,
    input: &Tensor,
    padding: &[i64],
    mode: PadMode,
    grad_input: &Tensor,
) -> Result<()> {
    if grad_input.is_meta() || grad_output.is_meta() || grad_input.numel() == 0 {
        return Ok(());
    }
    let nd = input.dim();
    let in_sizes = input.sizes();
    let mut g = grad_output.clone();
    for (k, idx) in index_tensors(input, padding, mode)?.iter().enumerate() {
        let d = nd - 1 - k;
        let mut shape = g.sizes().to_vec();
        shape[d] = in_sizes[d];
        let acc = Tensor::zeros(&shape, options_like(grad_output))?;
        g = acc.index_add(d as i64, idx, &g)?;
    }
    grad_input.copy_(&g)?;
    Ok(())
}

/// The padding checks of the backward ops: the forward's, then grad_output's padded sizes.
fn check_pad_backward(
    name: &str,
    grad_output: &Tensor,
    input: &Tensor,
    padding: &[i64],
    mode: PadMode,
) -> Result<()> {
    let out = pad_output_shape(input, padding, mode)?;
    let g = grad_output.sizes();
    let nd = out.len();
    if g.len() != nd {
        return Err(Error::runtime(format!(
            "{name}: grad_output of shape {} for an output of shape {}",
            fmt_sizes(&g),
            fmt_sizes(&out)
        )));
    }
    let labels = ["width", "height"];
    for (k, label) in labels.iter().enumerate().take(padding.len() / 2) {
        let d = nd - 1 - k;
        if g[d] != out[d] {
            return Err(Error::runtime(format!(
                "grad_output {label} unexpected. Expected: {}, Got: {}",
                out[d], g[d]
            )));
        }
    }
    Ok(())
}

/// TORCH_META_FUNC(reflection_pad1d).
pub fn reflection_pad1d_meta(m: &dyn MetaBase, self_: &Tensor, padding: &[i64]) -> Result<()> {
    let out = pad_output_shape(self_, padding, PadMode::Reflect)?;
    m.set_output_raw_strided(0, &out, &[], options_like(self_))
}

/// TORCH_IMPL_FUNC(reflection_pad1d_out_cpu).
pub fn reflection_pad1d_out_cpu(
    _state: &mut (),
    self_: &Tensor,
    padding: &[i64],
    out: &Tensor,
) -> Result<()> {
    pad_forward_into(self_, padding, PadMode::Reflect, out)
}

/// TORCH_META_FUNC(reflection_pad1d_backward).
pub fn reflection_pad1d_backward_meta(
    m: &dyn MetaBase,
    grad_output: &Tensor,
    self_: &Tensor,
    padding: &[i64],
) -> Result<()> {
    check_pad_backward(
        "reflection_pad1d_backward",
        grad_output,
        self_,
        padding,
        PadMode::Reflect,
    )?;
    m.set_output_raw_strided(0, &self_.sizes(), &[], options_like(self_))
}

/// TORCH_IMPL_FUNC(reflection_pad1d_backward_out_cpu).
pub fn reflection_pad1d_backward_out_cpu(
    _state: &mut (),
    grad_output: &Tensor,
    self_: &Tensor,
    padding: &[i64],
    grad_input: &Tensor,
) -> Result<()> {
    pad_backward_into(grad_output, self_, padding, PadMode::Reflect, grad_input)
}

/// TORCH_META_FUNC(replication_pad1d).
pub fn replication_pad1d_meta(m: &dyn MetaBase, self_: &Tensor, padding: &[i64]) -> Result<()> {
    let out = pad_output_shape(self_, padding, PadMode::Replicate)?;
    m.set_output_raw_strided(0, &out, &[], options_like(self_))
}

/// TORCH_IMPL_FUNC(replication_pad1d_out_cpu).
pub fn replication_pad1d_out_cpu(
    _state: &mut (),
    self_: &Tensor,
    padding: &[i64],
    out: &Tensor,
) -> Result<()> {
    pad_forward_into(self_, padding, PadMode::Replicate, out)
}

/// TORCH_META_FUNC(replication_pad1d_backward).
pub fn replication_pad1d_backward_meta(
    m: &dyn MetaBase,
    grad_output: &Tensor,
    self_: &Tensor,
    padding: &[i64],
) -> Result<()> {
    check_pad_backward(
        "replication_pad1d_backward",
        grad_output,
        self_,
        padding,
        PadMode::Replicate,
    )?;
    m.set_output_raw_strided(0, &self_.sizes(), &[], options_like(self_))
}

/// TORCH_IMPL_FUNC(replication_pad1d_backward_out_cpu).
pub fn replication_pad1d_backward_out_cpu(
    _state: &mut (),
    grad_output: &Tensor,
    self_: &Tensor,
    padding: &[i64],
    grad_input: &Tensor,
) -> Result<()> {
    pad_backward_into(grad_output, self_, padding, PadMode::Replicate, grad_input)
}

/// TORCH_META_FUNC(replication_pad2d).
pub fn replication_pad2d_meta(m: &dyn MetaBase, self_: &Tensor, padding: &[i64]) -> Result<()> {
    let out = pad_output_shape(self_, padding, PadMode::Replicate)?;
    m.set_output_raw_strided(0, &out, &[], options_like(self_))
}

/// TORCH_IMPL_FUNC(replication_pad2d_out_cpu).
pub fn replication_pad2d_out_cpu(
    _state: &mut (),
    self_: &Tensor,
    padding: &[i64],
    out: &Tensor,
) -> Result<()> {
    pad_forward_into(self_, padding, PadMode::Replicate, out)
}

/// `replication_pad2d_backward.grad_input` (CPU and Meta).
pub fn replication_pad2d_backward_out_cpu<'a>(
    grad_output: &Tensor,
    self_: &Tensor,
    padding: &[i64],
    grad_input: &'a Tensor,
) -> Result<&'a Tensor> {
    check_pad_backward(
        "replication_pad2d_backward",
        grad_output,
        self_,
        padding,
        PadMode::Replicate,
    )?;
    resize_output(grad_input, &self_.sizes())?;
    pad_backward_into(grad_output, self_, padding, PadMode::Replicate, grad_input)?;
    Ok(grad_input)
}

/// `replication_pad2d_backward` (CPU and Meta).
pub fn replication_pad2d_backward_cpu(
    grad_output: &Tensor,
    self_: &Tensor,
    padding: &[i64],
) -> Result<Tensor> {
    let grad_input = Tensor::empty(&self_.sizes(), options_like(self_))?;
    replication_pad2d_backward_out_cpu(grad_output, self_, padding, &grad_input)?;
    Ok(grad_input)
}

/// `reflection_pad2d.out` (CPU and Meta).
pub fn reflection_pad2d_out_cpu<'a>(
    self_: &Tensor,
    padding: &[i64],
    out: &'a Tensor,
) -> Result<&'a Tensor> {
    let shape = pad_output_shape(self_, padding, PadMode::Reflect)?;
    resize_output(out, &shape)?;
    pad_forward_into(self_, padding, PadMode::Reflect, out)?;
    Ok(out)
}

/// `reflection_pad2d` (CPU and Meta).
pub fn reflection_pad2d_cpu(self_: &Tensor, padding: &[i64]) -> Result<Tensor> {
    let out = Tensor::empty(&[0], options_like(self_))?;
    reflection_pad2d_out_cpu(self_, padding, &out)?;
    Ok(out)
}

/// `reflection_pad2d_backward.grad_input` (CPU and Meta).
pub fn reflection_pad2d_backward_out_cpu<'a>(
    grad_output: &Tensor,
    self_: &Tensor,
    padding: &[i64],
    grad_input: &'a Tensor,
) -> Result<&'a Tensor> {
    check_pad_backward(
        "reflection_pad2d_backward",
        grad_output,
        self_,
        padding,
        PadMode::Reflect,
    )?;
    resize_output(grad_input, &self_.sizes())?;
    pad_backward_into(grad_output, self_, padding, PadMode::Reflect, grad_input)?;
    Ok(grad_input)
}

/// `reflection_pad2d_backward` (CPU and Meta).
pub fn reflection_pad2d_backward_cpu(
    grad_output: &Tensor,
    self_: &Tensor,
    padding: &[i64],
) -> Result<Tensor> {
    let grad_input = Tensor::empty(&self_.sizes(), options_like(self_))?;
    reflection_pad2d_backward_out_cpu(grad_output, self_, padding, &grad_input)?;
    Ok(grad_input)
}
