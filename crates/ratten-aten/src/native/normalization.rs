//! layer_norm, batch_norm, group_norm (ATen's layer_norm.cpp, Normalization.cpp, group_norm.cpp).
//!
//! The CPU kernels are registered for Meta too: they check the arguments and allocate the
//! outputs, and skip the loops on meta tensors. float16 / bfloat16 inputs run the float32
//! loops and are cast back. Where torch returns an undefined tensor (a backward's output whose
//! `output_mask` entry is false, batch_norm's saved statistics in evaluation mode) ratten,
//! which has no undefined tensors, returns an empty one (`[0]`).

use ratten_core::{Error, Result, ScalarType, TensorAccess, TensorOptions};

use crate::generated::operators as ops;
use crate::native::cpu::elements::not_implemented;
use crate::native::cpu::normalization_kernels::{
    batch_norm_backward_channels, batch_norm_collect_stats, batch_norm_transform,
    group_norm_backward, group_norm_forward, layer_norm_backward_rows, layer_norm_rows,
    ChannelGeometry, GroupGeometry, NormElem,
};
use crate::native::cpu::unique_kernels::dispatch_types;
use crate::native::scatter_gather::fmt_sizes;
use crate::Tensor;

fn opts(t: &Tensor, dtype: ScalarType) -> TensorOptions {
    TensorOptions::new().dtype(dtype).device(t.device())
}

/// An empty `[0]` tensor: ratten's stand-in for torch's undefined outputs.
fn undefined_like(t: &Tensor) -> Result<Tensor> {
    Tensor::empty(&[0], opts(t, t.dtype()))
}

/// The dtype the loops compute in for `dt` (float16 / bfloat16 through float32), or the
/// refusal of kernel `name` (`AT_DISPATCH_FLOATING_TYPES_AND2(Half, BFloat16)`).
fn compute_dtype(name: &str, dt: ScalarType) -> Result<ScalarType> {
    match dt {
        ScalarType::Float | ScalarType::Double => Ok(dt),
        ScalarType::Half | ScalarType::BFloat16 => Ok(ScalarType::Float),
        d => Err(not_implemented(name, d)),
    }
}

/// `t` contiguous in dtype `dt`.
fn prepared(t: &Tensor, dt: ScalarType) -> Result<Tensor> {
    let t = if t.dtype() == dt {
        t.clone()
    } else {
        t.to_dtype(dt)?
    };
    t.contiguous()
}

fn prepared_opt(t: Option<&Tensor>, dt: ScalarType) -> Result<Option<Tensor>> {
    t.map(|t| prepared(t, dt)).transpose()
}

/// A float64 buffer as a tensor of dtype `dt` and shape `sizes`.
fn from_f64(v: Vec<f64>, sizes: &[i64], dt: ScalarType) -> Result<Tensor> {
    let t = Tensor::from_vec(v, sizes)?;
    if dt == ScalarType::Double {
        Ok(t)
    } else {
        t.to_dtype(dt)
    }
}

// ---------------------------------------------------------------------------------------------
// layer_norm

/// `_check_layer_norm_inputs`: the shapes, then `(M, N)`: the number of rows and their length.
fn check_layer_norm_inputs(
    input: &Tensor,
    normalized_shape: &[i64],
    weight: Option<&Tensor>,
    bias: Option<&Tensor>,
) -> Result<(i64, i64)> {
    let nd = normalized_shape.len();
    if nd < 1 {
        return Err(Error::runtime(format!(
            "Expected normalized_shape to be at least 1-dimensional, i.e., containing at least \
             one element, but got normalized_shape = {}",
            fmt_sizes(normalized_shape)
        )));
    }
    if let Some(w) = weight {
        if w.sizes().as_slice() != normalized_shape {
            return Err(Error::runtime(format!(
                "Expected weight to be of same shape as normalized_shape, but got weight of \
                 shape {} and normalized_shape = {}",
                fmt_sizes(&w.sizes()),
                fmt_sizes(normalized_shape)
            )));
        }
    }
    if let Some(b) = bias {
        if b.sizes().as_slice() != normalized_shape {
            return Err(Error::runtime(format!(
                "Expected bias to be of same shape as normalized_shape, but got bias of shape \
                 {} and normalized_shape = {}",
                fmt_sizes(&b.sizes()),
                fmt_sizes(normalized_shape)
            )));
        }
    }
    let shape = input.sizes();
    let ndim = shape.len();
    if ndim < nd || shape[ndim - nd..] != *normalized_shape {
        let mut expected = String::from("[*");
        for s in normalized_shape {
            expected.push_str(&format!(", {s}"));
        }
        expected.push(']');
        return Err(Error::runtime(format!(
            "Given normalized_shape={}, expected input with shape {expected}, but got input of \
             size{}",
            fmt_sizes(normalized_shape),
            fmt_sizes(&shape)
        )));
    }
    let axis = ndim - nd;
    let m = shape[..axis].iter().product::<i64>();
    let n = shape[axis..].iter().product::<i64>();
    Ok((m, n))
}

/// The shape of layer_norm's mean and rstd: the input's leading dims, then ones.
fn stat_shape(input: &Tensor, normalized_ndim: usize) -> Vec<i64> {
    let shape = input.sizes();
    let axis = shape.len() - normalized_ndim;
    let mut s = shape[..axis].to_vec();
    s.extend(std::iter::repeat_n(1, normalized_ndim));
    s
}

/// The dtype of layer_norm's statistics (`param_scalar_type`): float32 for a float16 /
/// bfloat16 input with float32 parameters ("mixed type"), else the input's.
fn layer_norm_param_dtype(input: &Tensor, weight: Option<&Tensor>) -> ScalarType {
    let reduced = matches!(input.dtype(), ScalarType::Half | ScalarType::BFloat16);
    match weight {
        Some(w) if reduced && w.dtype() == ScalarType::Float => ScalarType::Float,
        _ => input.dtype(),
    }
}

/// `layer_norm` (CompositeImplicitAutograd): the first output of `native_layer_norm`.
pub fn layer_norm_symint(
    input: &Tensor,
    normalized_shape: &[i64],
    weight: Option<&Tensor>,
    bias: Option<&Tensor>,
    eps: f64,
    _cudnn_enable: bool,
) -> Result<Tensor> {
    Ok(ops::native_layer_norm::call(input, normalized_shape, weight, bias, eps)?.0)
}

/// `native_layer_norm` (CPU and Meta): `(out, mean, rstd)`, the statistics shaped as the
/// input's leading dims followed by ones.
pub fn layer_norm_cpu(
    input: &Tensor,
    normalized_shape: &[i64],
    weight: Option<&Tensor>,
    bias: Option<&Tensor>,
    eps: f64,
) -> Result<(Tensor, Tensor, Tensor)> {
    let (m, n) = check_layer_norm_inputs(input, normalized_shape, weight, bias)?;
    let cdt = compute_dtype("LayerNormKernelImpl", input.dtype())?;
    let sdt = layer_norm_param_dtype(input, weight);
    let stat = stat_shape(input, normalized_shape.len());
    let sizes = input.sizes().to_vec();
    if input.is_meta() {
        return Ok((
            Tensor::empty(&sizes, opts(input, input.dtype()))?,
            Tensor::empty(&stat, opts(input, sdt))?,
            Tensor::empty(&stat, opts(input, sdt))?,
        ));
    }
    let x = prepared(input, cdt)?;
    let gamma = prepared_opt(weight, cdt)?;
    let beta = prepared_opt(bias, cdt)?;
    let y = Tensor::empty(&sizes, opts(input, cdt))?;
    let (mean, rstd) = dispatch_types!(cdt, "LayerNormKernelImpl", [Float => f32, Double => f64], T => {
        layer_norm_forward::<T>(&x, gamma.as_ref(), beta.as_ref(), n as usize, eps, &y)
    })?;
    debug_assert_eq!(mean.len() as i64, m);
    let y = if y.dtype() == input.dtype() {
        y
    } else {
        y.to_dtype(input.dtype())?
    };
    Ok((y, from_f64(mean, &stat, sdt)?, from_f64(rstd, &stat, sdt)?))
}

fn layer_norm_forward<T: NormElem>(
    x: &Tensor,
    gamma: Option<&Tensor>,
    beta: Option<&Tensor>,
    n: usize,
    eps: f64,
    y: &Tensor,
) -> Result<(Vec<f64>, Vec<f64>)> {
    let mut reads = vec![x.base()];
    reads.extend(gamma.map(|t| t.base()));
    reads.extend(beta.map(|t| t.base()));
    let g = TensorAccess::new(&reads, &[])?;
    let mut out = TensorAccess::write(y.base())?;
    let gs = gamma.map(|_| g.input_slice::<T>(1)).transpose()?;
    let bi = 1 + usize::from(gamma.is_some());
    let bs = beta.map(|_| g.input_slice::<T>(bi)).transpose()?;
    let ys = out.output_slice_mut::<T>(0)?;
    Ok(layer_norm_rows(g.input_slice::<T>(0)?, gs, bs, n, eps, ys))
}

/// `native_layer_norm_backward` (CPU and Meta): `(grad_input, grad_weight, grad_bias)` for the
/// entries of `output_mask` that are true.
#[allow(clippy::too_many_arguments)]
pub fn layer_norm_backward_cpu(
    grad_out: &Tensor,
    input: &Tensor,
    normalized_shape: &[i64],
    mean: &Tensor,
    rstd: &Tensor,
    weight: Option<&Tensor>,
    bias: Option<&Tensor>,
    output_mask: &[bool],
) -> Result<(Tensor, Tensor, Tensor)> {
    let (m, n) = check_layer_norm_inputs(input, normalized_shape, weight, bias)?;
    let mask = [output_mask[0], output_mask[1], output_mask[2]];
    let cdt = compute_dtype("LayerNormBackwardKernelImpl", input.dtype())?;
    let param_like = weight.or(bias);
    let param_shape = normalized_shape.to_vec();
    let out_for = |k: usize, like: Option<&Tensor>| -> Result<Tensor> {
        match (mask[k], like) {
            (true, Some(p)) => Tensor::empty(&param_shape, opts(p, p.dtype())),
            _ => undefined_like(input),
        }
    };
    if input.is_meta() || grad_out.is_meta() {
        let dx = if mask[0] {
            Tensor::empty(&input.sizes(), opts(input, input.dtype()))?
        } else {
            undefined_like(input)?
        };
        return Ok((dx, out_for(1, weight)?, out_for(2, param_like)?));
    }
    let dy = prepared(grad_out, cdt)?;
    let x = prepared(input, cdt)?;
    let mu = prepared(mean, cdt)?;
    let rs = prepared(rstd, cdt)?;
    let gamma = prepared_opt(weight, cdt)?;
    let (dx, dgamma, dbeta) = dispatch_types!(cdt, "LayerNormBackwardKernelImpl", [Float => f32, Double => f64], T => {
        let mut reads = vec![dy.base(), x.base(), mu.base(), rs.base()];
        reads.extend(gamma.as_ref().map(|t| t.base()));
        let g = TensorAccess::new(&reads, &[])?;
        let gs = if gamma.is_some() { Some(g.input_slice::<T>(4)?) } else { None };
        let (dx, dgamma, dbeta) = layer_norm_backward_rows::<T>(
            g.input_slice::<T>(0)?,
            g.input_slice::<T>(1)?,
            g.input_slice::<T>(2)?,
            g.input_slice::<T>(3)?,
            gs,
            n as usize,
            mask,
        );
        drop(g);
        let dx = if mask[0] { Tensor::from_vec(dx, &input.sizes())? } else { undefined_like(input)? };
        Ok::<_, Error>((dx, dgamma, dbeta))
    })?;
    debug_assert!(m >= 0);
    let dx = if mask[0] && dx.dtype() != input.dtype() {
        dx.to_dtype(input.dtype())?
    } else {
        dx
    };
    let dw = match (mask[1], weight) {
        (true, Some(w)) => from_f64(dgamma, &param_shape, w.dtype())?,
        _ => undefined_like(input)?,
    };
    let db = match (mask[2], param_like) {
        (true, Some(p)) => from_f64(dbeta, &param_shape, p.dtype())?,
        _ => undefined_like(input)?,
    };
    Ok((dx, dw, db))
}

// ---------------------------------------------------------------------------------------------
// batch_norm

/// `check_dims_match_num_input_features`.
fn check_features(name: &str, expected: i64, t: Option<&Tensor>) -> Result<()> {
    if let Some(t) = t {
        if t.numel() != expected {
            return Err(Error::runtime(format!(
                "{name} should contain {expected} elements not {}",
                t.numel()
            )));
        }
    }
    Ok(())
}

/// `batch_norm` (CompositeImplicitAutograd). torch goes through `_batch_norm_impl_index`, which
/// on the CPU picks `native_batch_norm` after the same checks; ratten calls `native_batch_norm`
/// directly (the graph's node is `NativeBatchNormBackward0` either way).
#[allow(clippy::too_many_arguments)]
pub fn batch_norm(
    input: &Tensor,
    weight: Option<&Tensor>,
    bias: Option<&Tensor>,
    running_mean: Option<&Tensor>,
    running_var: Option<&Tensor>,
    training: bool,
    momentum: f64,
    eps: f64,
    _cudnn_enabled: bool,
) -> Result<Tensor> {
    if input.numel() == 0 {
        // torch: not a view of the input and not a new empty tensor, which would break the
        // gradient chain.
        let mut out = ops::clone::call(input, None)?;
        if let Some(w) = weight {
            out = out.mul(&w.select(0, 0)?)?;
        }
        if let Some(b) = bias {
            out = out.add(&b.select(0, 0)?)?;
        }
        return Ok(out);
    }
    if input.dim() < 2 {
        return Err(channel_dim_error(input));
    }
    let num_features = input.sizes()[1];
    check_features("running_mean", num_features, running_mean)?;
    if running_mean.is_none() && !training {
        return Err(Error::runtime(
            "running_mean must be defined in evaluation mode",
        ));
    }
    check_features("running_var", num_features, running_var)?;
    if running_var.is_none() && !training {
        return Err(Error::runtime(
            "running_var must be defined in evaluation mode",
        ));
    }
    check_features("weight", num_features, weight)?;
    check_features("bias", num_features, bias)?;
    Ok(ops::native_batch_norm::call(
        input,
        weight,
        bias,
        running_mean,
        running_var,
        training,
        momentum,
        eps,
    )?
    .0)
}

/// torch's error for `input.size(1)` of an input with fewer than two dims.
fn channel_dim_error(input: &Tensor) -> Error {
    let n = input.dim().max(1) as i64;
    Error::index(format!(
        "Dimension out of range (expected to be in range of [{}, {}], but got 1)",
        -n,
        n - 1
    ))
}

fn channel_geometry(input: &Tensor) -> ChannelGeometry {
    let s = input.sizes();
    ChannelGeometry {
        outer: s[0] as usize,
        channels: s[1] as usize,
        inner: s[2..].iter().product::<i64>() as usize,
    }
}

/// The checks of `batch_norm_cpu`: a batched input with channels, parameters with one element
/// per channel, running statistics in evaluation mode.
fn check_batch_norm(
    input: &Tensor,
    weight: Option<&Tensor>,
    bias: Option<&Tensor>,
    running_mean: Option<&Tensor>,
    running_var: Option<&Tensor>,
    train: bool,
) -> Result<ScalarType> {
    let cdt = compute_dtype("batch_norm", input.dtype())?;
    if input.dim() < 2 {
        return Err(channel_dim_error(input));
    }
    let c = input.sizes()[1];
    check_features("weight", c, weight)?;
    check_features("bias", c, bias)?;
    check_features("running_mean", c, running_mean)?;
    check_features("running_var", c, running_var)?;
    if !train && (running_mean.is_none() || running_var.is_none()) {
        return Err(Error::runtime(
            "running_mean and running_var must be defined in evaluation mode",
        ));
    }
    Ok(cdt)
}

/// `native_batch_norm` (CPU and Meta): `(out, save_mean, save_invstd)`. Training normalizes by
/// the batch statistics and updates the running ones in place
/// (`running = momentum * batch + (1 - momentum) * running`, the variance unbiased);
/// evaluation normalizes by the running statistics and returns empty saved statistics.
#[allow(clippy::too_many_arguments)]
pub fn batch_norm_cpu(
    input: &Tensor,
    weight: Option<&Tensor>,
    bias: Option<&Tensor>,
    running_mean: Option<&Tensor>,
    running_var: Option<&Tensor>,
    training: bool,
    momentum: f64,
    eps: f64,
) -> Result<(Tensor, Tensor, Tensor)> {
    let cdt = check_batch_norm(input, weight, bias, running_mean, running_var, training)?;
    let dt = input.dtype();
    let c = input.sizes()[1];
    let stat_n = if training { c } else { 0 };
    // The statistics' dtype: the parameters' for a float16 / bfloat16 input with float32
    // parameters, else the input's.
    let sdt = match weight.or(running_mean) {
        Some(p) if cdt != dt && p.dtype() == ScalarType::Float => ScalarType::Float,
        _ => dt,
    };
    if input.is_meta() {
        return Ok((
            Tensor::empty(&input.sizes(), opts(input, dt))?,
            Tensor::empty(&[stat_n], opts(input, sdt))?,
            Tensor::empty(&[stat_n], opts(input, sdt))?,
        ));
    }
    let geo = channel_geometry(input);
    let x = prepared(input, cdt)?;
    let w = prepared_opt(weight, cdt)?;
    let b = prepared_opt(bias, cdt)?;
    let (mean, invstd) = if training {
        let (mean, var_sum) = dispatch_types!(cdt, "batch_norm", [Float => f32, Double => f64], T => {
            let g = TensorAccess::read(x.base())?;
            Ok::<_, Error>(batch_norm_collect_stats::<T>(g.input_slice::<T>(0)?, geo))
        })?;
        let n = (geo.outer * geo.inner) as f64;
        let invstd = var_sum
            .iter()
            .map(|&vs| {
                let var = vs / n;
                if var != 0.0 || eps != 0.0 {
                    1.0 / (var + eps).sqrt()
                } else {
                    0.0
                }
            })
            .collect::<Vec<_>>();
        if let Some(rm) = running_mean {
            let old = rm
                .to_dtype(ScalarType::Double)?
                .contiguous()?
                .to_vec::<f64>()?;
            let new = old
                .iter()
                .zip(&mean)
                .map(|(r, m)| momentum * m + (1.0 - momentum) * r)
                .collect();
            rm.copy_(&Tensor::from_vec::<f64>(new, &[c])?.view(&rm.sizes())?)?;
        }
        if let Some(rv) = running_var {
            let old = rv
                .to_dtype(ScalarType::Double)?
                .contiguous()?
                .to_vec::<f64>()?;
            let new = old
                .iter()
                .zip(&var_sum)
                .map(|(r, vs)| momentum * (vs / (n - 1.0)) + (1.0 - momentum) * r)
                .collect();
            rv.copy_(&Tensor::from_vec::<f64>(new, &[c])?.view(&rv.sizes())?)?;
        }
        (mean, invstd)
    } else {
        let rm = running_mean.expect("checked");
        let rv = running_var.expect("checked");
        let mean = rm
            .to_dtype(ScalarType::Double)?
            .contiguous()?
            .to_vec::<f64>()?;
        let invstd = rv
            .to_dtype(ScalarType::Double)?
            .contiguous()?
            .to_vec::<f64>()?
            .iter()
            .map(|v| 1.0 / (v + eps).sqrt())
            .collect();
        (mean, invstd)
    };
    let y = Tensor::empty(&input.sizes(), opts(input, cdt))?;
    dispatch_types!(cdt, "batch_norm", [Float => f32, Double => f64], T => {
        let mut reads = vec![x.base()];
        reads.extend(w.as_ref().map(|t| t.base()));
        reads.extend(b.as_ref().map(|t| t.base()));
        let g = TensorAccess::new(&reads, &[])?;
        let mut out = TensorAccess::write(y.base())?;
        let ws = w.as_ref().map(|_| g.input_slice::<T>(1)).transpose()?;
        let bi = 1 + usize::from(w.is_some());
        let bs = b.as_ref().map(|_| g.input_slice::<T>(bi)).transpose()?;
        batch_norm_transform::<T>(g.input_slice::<T>(0)?, geo, &mean, &invstd, ws, bs, out.output_slice_mut::<T>(0)?);
        Ok::<_, Error>(())
    })?;
    let y = if cdt == dt { y } else { y.to_dtype(dt)? };
    if training {
        Ok((y, from_f64(mean, &[c], sdt)?, from_f64(invstd, &[c], sdt)?))
    } else {
        Ok((
            y,
            Tensor::empty(&[0], opts(input, sdt))?,
            Tensor::empty(&[0], opts(input, sdt))?,
        ))
    }
}

/// `native_batch_norm.out`: the functional kernel, copied into the given outputs.
#[allow(clippy::too_many_arguments)]
pub fn batch_norm_cpu_out(
    input: &Tensor,
    weight: Option<&Tensor>,
    bias: Option<&Tensor>,
    running_mean: Option<&Tensor>,
    running_var: Option<&Tensor>,
    training: bool,
    momentum: f64,
    eps: f64,
    out: &Tensor,
    save_mean: &Tensor,
    save_invstd: &Tensor,
) -> Result<(Tensor, Tensor, Tensor)> {
    let (y, m, v) = batch_norm_cpu(
        input,
        weight,
        bias,
        running_mean,
        running_var,
        training,
        momentum,
        eps,
    )?;
    for (dst, src) in [(out, &y), (save_mean, &m), (save_invstd, &v)] {
        crate::structured::resize_output(dst, &src.sizes())?;
        if !dst.is_meta() {
            dst.copy_(src)?;
        }
    }
    Ok((out.clone(), save_mean.clone(), save_invstd.clone()))
}

/// `native_batch_norm_backward` (CPU and Meta).
#[allow(clippy::too_many_arguments)]
pub fn batch_norm_backward_cpu(
    grad_out: &Tensor,
    input: &Tensor,
    weight: Option<&Tensor>,
    running_mean: Option<&Tensor>,
    running_var: Option<&Tensor>,
    save_mean: Option<&Tensor>,
    save_invstd: Option<&Tensor>,
    train: bool,
    eps: f64,
    output_mask: &[bool],
) -> Result<(Tensor, Tensor, Tensor)> {
    let mask = [output_mask[0], output_mask[1], output_mask[2]];
    let cdt = compute_dtype("batch_norm_backward_cpu", input.dtype())?;
    if input.dim() < 2 {
        return Err(channel_dim_error(input));
    }
    let c = input.sizes()[1];
    let param_dt = weight.map_or(input.dtype(), |w| w.dtype());
    let dw_shape = weight.map_or(vec![c], |w| w.sizes().to_vec());
    if input.is_meta() || grad_out.is_meta() {
        let dx = if mask[0] {
            Tensor::empty(&input.sizes(), opts(input, input.dtype()))?
        } else {
            undefined_like(input)?
        };
        let dw = if mask[1] {
            Tensor::empty(&dw_shape, opts(input, param_dt))?
        } else {
            undefined_like(input)?
        };
        let db = if mask[2] {
            Tensor::empty(&[c], opts(input, param_dt))?
        } else {
            undefined_like(input)?
        };
        return Ok((dx, dw, db));
    }
    let f64s = |t: &Tensor| -> Result<Vec<f64>> {
        t.to_dtype(ScalarType::Double)?
            .contiguous()?
            .to_vec::<f64>()
    };
    let (mean, invstd) = if train {
        match (save_mean, save_invstd) {
            (Some(m), Some(v)) => (f64s(m)?, f64s(v)?),
            _ => {
                return Err(Error::runtime(
                    "native_batch_norm_backward: save_mean and save_invstd must be defined in \
                     training mode",
                ))
            }
        }
    } else {
        match (running_mean, running_var) {
            (Some(m), Some(v)) => (
                f64s(m)?,
                f64s(v)?.iter().map(|v| 1.0 / (v + eps).sqrt()).collect(),
            ),
            _ => {
                return Err(Error::runtime(
                    "running_mean and running_var must be defined in evaluation mode",
                ))
            }
        }
    };
    if mean.len() as i64 != c || invstd.len() as i64 != c {
        return Err(Error::runtime(format!(
            "native_batch_norm_backward: expected statistics of {c} elements"
        )));
    }
    let geo = channel_geometry(input);
    let dy = prepared(grad_out, cdt)?;
    let x = prepared(input, cdt)?;
    let w = prepared_opt(weight, cdt)?;
    if dy.sizes() != x.sizes() {
        return Err(Error::runtime(format!(
            "native_batch_norm_backward: grad_out of shape {} for an input of shape {}",
            fmt_sizes(&dy.sizes()),
            fmt_sizes(&x.sizes())
        )));
    }
    let dx = if mask[0] {
        Tensor::empty(&input.sizes(), opts(input, cdt))?
    } else {
        undefined_like(input)?
    };
    let (dweight, dbias) = dispatch_types!(cdt, "batch_norm_backward_cpu", [Float => f32, Double => f64], T => {
        let mut reads = vec![dy.base(), x.base()];
        reads.extend(w.as_ref().map(|t| t.base()));
        let g = TensorAccess::new(&reads, &[])?;
        let mut out = if mask[0] { Some(TensorAccess::write(dx.base())?) } else { None };
        let ws = w.as_ref().map(|_| g.input_slice::<T>(2)).transpose()?;
        let gi = match out.as_mut() { Some(o) => Some(o.output_slice_mut::<T>(0)?), None => None };
        Ok::<_, Error>(batch_norm_backward_channels::<T>(
            g.input_slice::<T>(0)?, g.input_slice::<T>(1)?, geo, &mean, &invstd, ws, train, gi,
        ))
    })?;
    let dx = if mask[0] && cdt != input.dtype() {
        dx.to_dtype(input.dtype())?
    } else {
        dx
    };
    let dw = if mask[1] {
        from_f64(dweight, &dw_shape, param_dt)?
    } else {
        undefined_like(input)?
    };
    let db = if mask[2] {
        from_f64(dbias, &[c], param_dt)?
    } else {
        undefined_like(input)?
    };
    Ok((dx, dw, db))
}

// ---------------------------------------------------------------------------------------------
// group_norm

/// `check_group_norm_inputs`.
fn check_group_norm_inputs(
    input: &Tensor,
    weight: Option<&Tensor>,
    bias: Option<&Tensor>,
    c: i64,
    num_groups: i64,
) -> Result<()> {
    if num_groups <= 0 {
        return Err(Error::runtime(format!(
            "Expected num groups to be greater than 0, got {num_groups}"
        )));
    }
    if c % num_groups != 0 {
        return Err(Error::runtime(format!(
            "Expected number of channels in input to be divisible by num_groups, but got input \
             of shape {} and num_groups={num_groups}",
            fmt_sizes(&input.sizes())
        )));
    }
    if let Some(w) = weight {
        if !(w.dim() == 1 && w.numel() == c) {
            return Err(Error::runtime(format!(
                "Expected weight to be a vector of size equal to the number of channels in \
                 input, but got weight of shape {} and input of shape {}",
                fmt_sizes(&w.sizes()),
                fmt_sizes(&input.sizes())
            )));
        }
    }
    if let Some(b) = bias {
        if !(b.dim() == 1 && b.numel() == c) {
            // torch prints the weight's shape here.
            let shown = weight.map_or_else(|| "[]".to_string(), |w| fmt_sizes(&w.sizes()));
            return Err(Error::runtime(format!(
                "Expected bias to be a vector of size equal to the number of channels in input, \
                 but got bias of shape {shown} and input of shape {}",
                fmt_sizes(&input.sizes())
            )));
        }
    }
    Ok(())
}

/// `group_norm` (CompositeImplicitAutograd): the first output of `native_group_norm` over the
/// input viewed as `(N, C, HxW)`.
pub fn group_norm(
    input: &Tensor,
    num_groups: i64,
    weight: Option<&Tensor>,
    bias: Option<&Tensor>,
    eps: f64,
    _cudnn_enabled: bool,
) -> Result<Tensor> {
    if input.dim() < 2 {
        return Err(channel_dim_error(input));
    }
    let s = input.sizes();
    let (n, c) = (s[0], s[1]);
    check_group_norm_inputs(input, weight, bias, c, num_groups)?;
    let hxw = s[2..].iter().product::<i64>();
    let x = input.contiguous()?;
    let gamma = weight.map(|w| w.contiguous()).transpose()?;
    let beta = bias.map(|b| b.contiguous()).transpose()?;
    Ok(ops::native_group_norm::call(
        &x,
        gamma.as_ref(),
        beta.as_ref(),
        n,
        c,
        hxw,
        num_groups,
        eps,
    )?
    .0)
}

/// `native_group_norm` (CPU and Meta): `(out, mean, rstd)`, the statistics of shape
/// `(N, group)`.
#[allow(clippy::too_many_arguments)]
pub fn native_group_norm(
    input: &Tensor,
    weight: Option<&Tensor>,
    bias: Option<&Tensor>,
    n: i64,
    c: i64,
    hxw: i64,
    group: i64,
    eps: f64,
) -> Result<(Tensor, Tensor, Tensor)> {
    check_group_norm_inputs(input, weight, bias, c, group)?;
    if input.numel() != n * c * hxw {
        return Err(Error::runtime(format!(
            "native_group_norm: input of shape {} is not N={n}, C={c}, HxW={hxw}",
            fmt_sizes(&input.sizes())
        )));
    }
    let cdt = compute_dtype("GroupNormKernelImpl", input.dtype())?;
    let sdt = layer_norm_param_dtype(input, weight);
    if input.is_meta() {
        return Ok((
            Tensor::empty(&input.sizes(), opts(input, input.dtype()))?,
            Tensor::empty(&[n, group], opts(input, sdt))?,
            Tensor::empty(&[n, group], opts(input, sdt))?,
        ));
    }
    let geo = GroupGeometry {
        n: n as usize,
        c: c as usize,
        hxw: hxw as usize,
        groups: group as usize,
    };
    let x = prepared(input, cdt)?;
    let gamma = prepared_opt(weight, cdt)?;
    let beta = prepared_opt(bias, cdt)?;
    let y = Tensor::empty(&input.sizes(), opts(input, cdt))?;
    let (mean, rstd) = dispatch_types!(cdt, "GroupNormKernelImpl", [Float => f32, Double => f64], T => {
        let mut reads = vec![x.base()];
        reads.extend(gamma.as_ref().map(|t| t.base()));
        reads.extend(beta.as_ref().map(|t| t.base()));
        let g = TensorAccess::new(&reads, &[])?;
        let mut out = TensorAccess::write(y.base())?;
        let gs = gamma.as_ref().map(|_| g.input_slice::<T>(1)).transpose()?;
        let bi = 1 + usize::from(gamma.is_some());
        let bs = beta.as_ref().map(|_| g.input_slice::<T>(bi)).transpose()?;
        Ok::<_, Error>(group_norm_forward::<T>(g.input_slice::<T>(0)?, gs, bs, geo, eps, out.output_slice_mut::<T>(0)?))
    })?;
    let y = if cdt == input.dtype() {
        y
    } else {
        y.to_dtype(input.dtype())?
    };
    Ok((
        y,
        from_f64(mean, &[n, group], sdt)?,
        from_f64(rstd, &[n, group], sdt)?,
    ))
}

/// `native_group_norm_backward` (CPU and Meta).
#[allow(clippy::too_many_arguments)]
pub fn native_group_norm_backward(
    grad_out: &Tensor,
    input: &Tensor,
    mean: &Tensor,
    rstd: &Tensor,
    weight: Option<&Tensor>,
    n: i64,
    c: i64,
    hxw: i64,
    group: i64,
    output_mask: &[bool],
) -> Result<(Tensor, Tensor, Tensor)> {
    let mask = [output_mask[0], output_mask[1], output_mask[2]];
    check_group_norm_inputs(input, weight, None, c, group)?;
    if input.numel() != n * c * hxw || grad_out.numel() != input.numel() {
        return Err(Error::runtime(format!(
            "native_group_norm_backward: input of shape {} and grad_out of shape {} are not \
             N={n}, C={c}, HxW={hxw}",
            fmt_sizes(&input.sizes()),
            fmt_sizes(&grad_out.sizes())
        )));
    }
    let cdt = compute_dtype("GroupNormBackwardKernelImpl", input.dtype())?;
    let pdt = weight.map_or(input.dtype(), |w| w.dtype());
    let param = |k: usize| -> Result<Tensor> {
        if mask[k] {
            Tensor::empty(&[c], opts(input, pdt))
        } else {
            undefined_like(input)
        }
    };
    if input.is_meta() || grad_out.is_meta() {
        let dx = if mask[0] {
            Tensor::empty(&input.sizes(), opts(input, input.dtype()))?
        } else {
            undefined_like(input)?
        };
        return Ok((dx, param(1)?, param(2)?));
    }
    let geo = GroupGeometry {
        n: n as usize,
        c: c as usize,
        hxw: hxw as usize,
        groups: group as usize,
    };
    let f64s = |t: &Tensor| -> Result<Vec<f64>> {
        t.to_dtype(ScalarType::Double)?
            .contiguous()?
            .to_vec::<f64>()
    };
    let (mu, rs) = (f64s(mean)?, f64s(rstd)?);
    if mu.len() as i64 != n * group || rs.len() as i64 != n * group {
        return Err(Error::runtime(format!(
            "native_group_norm_backward: expected mean and rstd of {} elements",
            n * group
        )));
    }
    let dy = prepared(grad_out, cdt)?;
    let x = prepared(input, cdt)?;
    let gamma = prepared_opt(weight, cdt)?;
    let dx = if mask[0] {
        Tensor::empty(&input.sizes(), opts(input, cdt))?
    } else {
        undefined_like(input)?
    };
    let (dgamma, dbeta) = dispatch_types!(cdt, "GroupNormBackwardKernelImpl", [Float => f32, Double => f64], T => {
        let mut reads = vec![dy.base(), x.base()];
        reads.extend(gamma.as_ref().map(|t| t.base()));
        let g = TensorAccess::new(&reads, &[])?;
        let mut out = if mask[0] { Some(TensorAccess::write(dx.base())?) } else { None };
        let gs = gamma.as_ref().map(|_| g.input_slice::<T>(2)).transpose()?;
        let gi = match out.as_mut() { Some(o) => Some(o.output_slice_mut::<T>(0)?), None => None };
        Ok::<_, Error>(group_norm_backward::<T>(
            g.input_slice::<T>(0)?, g.input_slice::<T>(1)?, &mu, &rs, gs, geo, gi,
        ))
    })?;
    let dx = if mask[0] && cdt != input.dtype() {
        dx.to_dtype(input.dtype())?
    } else {
        dx
    };
    let dw = if mask[1] {
        from_f64(dgamma, &[c], pdt)?
    } else {
        undefined_like(input)?
    };
    let db = if mask[2] {
        from_f64(dbeta, &[c], pdt)?
    } else {
        undefined_like(input)?
    };
    Ok((dx, dw, db))
}
