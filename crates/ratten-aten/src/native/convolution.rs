//! Convolution (ATen's Convolution.cpp): the `convolution` entry point and `_convolution`'s decision.
//!
//! torch's `_convolution` checks the arguments (`check_shape_forward`) and picks a backend
//! (cuDNN, oneDNN, NNPACK, the slow im2col kernels, ...). ratten has one CPU backend, the
//! im2col + GEMM loops of `cpu/convolution_kernels.rs` (Note [Convolution as im2col + GEMM]),
//! for every dimensionality, with groups, dilation and transposition; the decision that
//! remains is torch's `Empty` backend (zero batch or zero channels), Meta tensors (shape
//! only), and half types computed in float.

use ratten_core::{torch_check, Error, Result, ScalarType};

use crate::generated::operators as ops;
use crate::native::cpu::convolution_kernels::{self as kernels, ConvShape};
use crate::Tensor;

/// torch's `ConvParams`, every list expanded to the spatial dimensionality.
#[derive(Clone, Debug)]
struct ConvParams {
    stride: Vec<i64>,
    padding: Vec<i64>,
    dilation: Vec<i64>,
    transposed: bool,
    output_padding: Vec<i64>,
    groups: i64,
}

/// `expand_param_if_needed` (ATen's ParamUtils.h).
fn expand_param_if_needed(list: &[i64], name: &str, expected: usize) -> Result<Vec<i64>> {
    if list.len() == 1 {
        Ok(vec![list[0]; expected])
    } else if list.len() != expected {
        Err(Error::runtime(format!(
            "expected {name} to be a single integer value or a list of {expected} values to \
             match the convolution dimensions, but got {name}={list:?}"
        )))
    } else {
        Ok(list.to_vec())
    }
}

impl ConvParams {
    #[allow(clippy::too_many_arguments)]
    fn new(
        stride: &[i64],
        padding: &[i64],
        dilation: &[i64],
        transposed: bool,
        output_padding: &[i64],
        groups: i64,
        dim: usize,
    ) -> Result<Self> {
        Ok(ConvParams {
            stride: expand_param_if_needed(stride, "stride", dim)?,
            padding: expand_param_if_needed(padding, "padding", dim)?,
            dilation: expand_param_if_needed(dilation, "dilation", dim)?,
            transposed,
            output_padding: expand_param_if_needed(output_padding, "output_padding", dim)?,
            groups,
        })
    }
}

/// torch's `check_shape_forward` (`check_shape_backward` passes no bias).
fn check_shape_forward(
    input: &Tensor,
    weight_sizes: &[i64],
    bias: Option<&Tensor>,
    params: &ConvParams,
) -> Result<()> {
    let k = input.dim();
    let weight_dim = weight_sizes.len();
    let groups = params.groups;
    torch_check!(
        params.padding.iter().all(|&p| p >= 0),
        "negative padding is not supported"
    );
    torch_check!(
        params.output_padding.iter().all(|&p| p >= 0),
        "negative output_padding is not supported"
    );
    torch_check!(
        params.stride.iter().all(|&s| s > 0),
        "non-positive stride is not supported"
    );
    torch_check!(
        weight_dim == k,
        "Expected {weight_dim}-dimensional input for {weight_dim}-dimensional weight \
         {weight_sizes:?}, but got {k}-dimensional input of size {:?} instead",
        input.sizes()
    );
    torch_check!(
        weight_sizes[0] >= groups,
        "Given groups={groups}, expected weight to be at least {groups} at dimension 0, but got \
         weight of size {weight_sizes:?} instead"
    );
    torch_check!(
        weight_sizes[0] % groups == 0,
        "Given groups={groups}, expected weight to be divisible by {groups} at dimension 0, but \
         got weight of size [{weight_sizes:?}] instead"
    );
    let in_sizes = input.sizes();
    if !params.transposed {
        torch_check!(
            in_sizes[1] == weight_sizes[1] * groups,
            "Given groups={groups}, weight of size {weight_sizes:?}, expected input{in_sizes:?} to \
             have {} channels, but got {} channels instead",
            weight_sizes[1] * groups,
            in_sizes[1]
        );
        torch_check!(
            params.dilation.iter().all(|&d| d > 0),
            "dilation should be greater than zero, but got {:?}",
            params.dilation
        );
        if let Some(b) = bias {
            torch_check!(
                b.dim() == 1 && b.size(0)? == weight_sizes[0],
                "Given weight of size {weight_sizes:?}, expected bias to be 1-dimensional with {} \
                 elements, but got bias of size {:?} instead",
                weight_sizes[0],
                b.sizes()
            );
        }
        let mut input_shape = Vec::new();
        let mut kernel_shape = Vec::new();
        let mut correct = true;
        for i in 2..k {
            input_shape.push(in_sizes[i] + 2 * params.padding[i - 2]);
            kernel_shape.push(params.dilation[i - 2] * (weight_sizes[i] - 1) + 1);
            if input_shape.last() < kernel_shape.last() {
                correct = false;
            }
        }
        if !correct {
            let join = |v: &[i64]| {
                v.iter()
                    .map(|x| x.to_string())
                    .collect::<Vec<_>>()
                    .join(" x ")
            };
            return Err(Error::runtime(format!(
                "Calculated padded input size per channel: ({}). Kernel size: ({}). Kernel size \
                 can't be greater than actual input size",
                join(&input_shape),
                join(&kernel_shape)
            )));
        }
    } else {
        torch_check!(
            in_sizes[1] == weight_sizes[0],
            "Given transposed=1, weight of size {weight_sizes:?}, expected input{in_sizes:?} to \
             have {} channels, but got {} channels instead",
            weight_sizes[0],
            in_sizes[1]
        );
        if let Some(b) = bias {
            torch_check!(
                b.dim() == 1 && b.size(0)? == weight_sizes[1] * groups,
                "Given transposed=1, weight of size {weight_sizes:?}, expected bias to be \
                 1-dimensional with {} elements, but got bias of size {:?} instead",
                weight_sizes[1] * groups,
                b.sizes()
            );
        }
    }
    Ok(())
}

/// The names torch's kernels give the spatial dims in their messages.
fn dim_names(dim: usize) -> &'static [&'static str] {
    match dim {
        3 => &["depth", "height", "width"],
        2 => &["height", "width"],
        _ => &["width"],
    }
}

/// The transposed kernels' shape checks (`slow_conv_transpose2d_shape_check` and its 3-D
/// twin) and the sizes of their output.
fn transposed_output_spatial(
    input: &Tensor,
    weight: &Tensor,
    params: &ConvParams,
) -> Result<Vec<i64>> {
    let dim = weight.dim() - 2;
    // torch views 1-D as 2-D (height 1) before its 2-D kernel.
    let names = dim_names(if dim == 1 { 2 } else { dim });
    let lead = if dim == 1 { 1 } else { 0 };
    let fmt = |what: &str, v: &[i64]| {
        let mut all = vec![if dim == 1 { Some(1) } else { None }; lead];
        all.extend(v.iter().map(|&x| Some(x)));
        names
            .iter()
            .zip(all)
            .map(|(n, x)| format!("{what}_{n}: {}", x.unwrap_or(1)))
            .collect::<Vec<_>>()
    };
    let ks = &weight.sizes()[2..];
    if params.dilation.iter().any(|&d| d <= 0) {
        return Err(Error::runtime(format!(
            "dilation should be greater than zero, but got {}",
            fmt("dilation", &params.dilation).join(", ")
        )));
    }
    let small = params
        .output_padding
        .iter()
        .zip(params.stride.iter().zip(&params.dilation))
        .all(|(&op, (&s, &d))| op < s || op < d);
    if !small {
        let mut parts = fmt("output_padding", &params.output_padding);
        parts.extend(fmt("stride", &params.stride));
        parts.extend(fmt("dilation", &params.dilation));
        return Err(Error::runtime(format!(
            "output padding must be smaller than either stride or dilation, but got {}",
            parts.join(" ")
        )));
    }
    let in_sizes = input.sizes();
    let out: Vec<i64> = (0..dim)
        .map(|i| {
            (in_sizes[i + 2] - 1) * params.stride[i] - 2 * params.padding[i]
                + params.dilation[i] * (ks[i] - 1)
                + params.output_padding[i]
                + 1
        })
        .collect();
    if out.iter().any(|&o| o < 1) {
        let mut ins: Vec<i64> = vec![1; lead];
        ins.extend(&in_sizes[2..]);
        let mut outs: Vec<i64> = vec![1; lead];
        outs.extend(&out);
        let join = |v: &[i64]| {
            v.iter()
                .map(|x| x.to_string())
                .collect::<Vec<_>>()
                .join(" x ")
        };
        return Err(Error::runtime(format!(
            "Given input size per channel: ({}). Calculated output size per channel: ({}). \
             Output size is too small",
            join(&ins),
            join(&outs)
        )));
    }
    Ok(out)
}

/// The output's sizes (torch's `calc_output_size`): `conv_output_size` or, transposed,
/// `conv_input_size`.
fn calc_output_size(input: &Tensor, weight: &Tensor, params: &ConvParams) -> Result<Vec<i64>> {
    let (is, ws) = (input.sizes(), weight.sizes());
    let dim = ws.len() - 2;
    if params.transposed {
        let mut out = vec![is[0], ws[1] * params.groups];
        out.extend(transposed_output_spatial(input, weight, params)?);
        Ok(out)
    } else {
        let mut out = vec![is[0], ws[0]];
        for i in 0..dim {
            let k = params.dilation[i] * (ws[i + 2] - 1) + 1;
            out.push((is[i + 2] + 2 * params.padding[i] - k) / params.stride[i] + 1);
        }
        Ok(out)
    }
}

/// The dtype checks of the input against its parameters, with the texts torch's CPU path gives
/// (the weight's from its kernels' `expected scalar type`, the bias's as conv2d's).
fn check_input_same_type_as_parameters(
    input: &Tensor,
    weight: &Tensor,
    bias: Option<&Tensor>,
) -> Result<()> {
    let name = |t: &Tensor| crate::structured::type_meta_name(t.dtype());
    torch_check!(
        input.dtype() == weight.dtype(),
        "expected scalar type {} but found {}",
        input.dtype(),
        weight.dtype()
    );
    if let Some(b) = bias {
        torch_check!(
            input.dtype() == b.dtype(),
            "Input type ({}) and bias type ({}) should be the same",
            name(input),
            name(b)
        );
    }
    Ok(())
}

/// The name of the torch kernel that would run (its `AT_DISPATCH` refusal names it).
fn backend_name(dim: usize, params: &ConvParams) -> &'static str {
    let dilated = params.dilation.iter().any(|&d| d != 1);
    match (params.transposed, dim) {
        (true, 3) => "slow_conv_transpose3d_out_cpu",
        (true, _) => "slow_conv_transpose2d_out_cpu",
        (false, 3) if dilated => "slow_conv_dilated3d_cpu",
        (false, 3) => "slow_conv3d_cpu",
        (false, _) if dilated => "slow_conv_dilated2d_cpu",
        (false, _) => "slow_conv2d_cpu",
    }
}

/// Pads a list of spatial values to three with `fill` in front.
fn pad3(v: &[i64], fill: i64) -> [usize; 3] {
    let mut out = [fill as usize; 3];
    let off = 3 - v.len();
    for (i, &x) in v.iter().enumerate() {
        out[off + i] = x as usize;
    }
    out
}

/// The loops' geometry for `input` convolved with `weight` giving `output_sizes`.
fn conv_shape(input: &[i64], weight: &[i64], output: &[i64], params: &ConvParams) -> ConvShape {
    let (img, col) = if params.transposed {
        (output, input)
    } else {
        (input, output)
    };
    ConvShape {
        batch: input[0] as usize,
        groups: params.groups as usize,
        img_c: img[1] as usize,
        col_c: col[1] as usize,
        img: pad3(&img[2..], 1),
        col: pad3(&col[2..], 1),
        kernel: pad3(&weight[2..], 1),
        stride: pad3(&params.stride, 1),
        pad: pad3(&params.padding, 0),
        dilation: pad3(&params.dilation, 1),
    }
}

/// Whether the loops compute this dtype in float (torch's CPU kernels accumulate half types
/// in float too).
fn computes_in_float(dtype: ScalarType) -> bool {
    matches!(dtype, ScalarType::Half | ScalarType::BFloat16)
}

fn as_compute(t: &Tensor) -> Result<Tensor> {
    if computes_in_float(t.dtype()) {
        t.to_dtype(ScalarType::Float)?.contiguous()
    } else {
        t.contiguous()
    }
}

/// `convolution`: `_convolution` with the global context's flags.
#[allow(clippy::too_many_arguments)]
pub fn convolution(
    input: &Tensor,
    weight: &Tensor,
    bias: Option<&Tensor>,
    stride: &[i64],
    padding: &[i64],
    dilation: &[i64],
    transposed: bool,
    output_padding: &[i64],
    groups: i64,
) -> Result<Tensor> {
    ops::_convolution::call(
        input,
        weight,
        bias,
        stride,
        padding,
        dilation,
        transposed,
        output_padding,
        groups,
        false,
        false,
        true,
        true,
    )
}

/// `_convolution`: the checks, then the backend.
#[allow(clippy::too_many_arguments)]
pub fn _convolution(
    input: &Tensor,
    weight: &Tensor,
    bias: Option<&Tensor>,
    stride: &[i64],
    padding: &[i64],
    dilation: &[i64],
    transposed: bool,
    output_padding: &[i64],
    groups: i64,
    _benchmark: bool,
    _deterministic: bool,
    _cudnn_enabled: bool,
    _allow_tf32: bool,
) -> Result<Tensor> {
    let k = weight.dim();
    torch_check!(k > 2, "weight should have at least three dimensions");
    torch_check!(groups > 0, "non-positive groups is not supported");
    let dim = k - 2;
    let params = ConvParams::new(
        stride,
        padding,
        dilation,
        transposed,
        output_padding,
        groups,
        dim,
    )?;
    check_shape_forward(input, &weight.sizes(), bias, &params)?;
    if input.size(0)? != 0 && input.size(1)? != 0 && input.numel() == 0 {
        return Err(Error::runtime(format!(
            "Only zero batch or zero channel inputs are supported, but got input shape: {:?}",
            input.sizes()
        )));
    }
    check_input_same_type_as_parameters(input, weight, bias)?;
    let out_sizes = calc_output_size(input, weight, &params)?;
    let options = (input.dtype(), input.device());
    if input.is_meta() || weight.is_meta() {
        return Tensor::empty(&out_sizes, options);
    }
    if input.size(0)? == 0 || input.size(1)? == 0 {
        // torch's `Empty` backend: no element is read.
        let out = Tensor::zeros(&out_sizes, options)?;
        if let Some(b) = bias {
            let mut shape = vec![1i64; out_sizes.len()];
            shape[1] = -1;
            out.add_(&b.reshape(&shape)?)?;
        }
        return Ok(out);
    }
    let name = backend_name(dim, &params);
    let dtype = input.dtype();
    if !(dtype.is_floating_point()) {
        return Err(Error::not_implemented(format!(
            "\"{name}\" not implemented for '{dtype}'"
        )));
    }
    let (x, w) = (as_compute(input)?, as_compute(weight)?);
    let b = bias.map(as_compute).transpose()?;
    let out = Tensor::empty(&out_sizes, (x.dtype(), x.device()))?;
    let s = conv_shape(&input.sizes(), &weight.sizes(), &out_sizes, &params);
    if transposed {
        kernels::gemm_col2im(name, &s, &x, &w, b.as_ref(), &out)?;
    } else {
        kernels::im2col_gemm(name, &s, &x, &w, b.as_ref(), &out)?;
    }
    if out.dtype() != dtype {
        return out.to_dtype(dtype);
    }
    Ok(out)
}

/// `_convolution.deprecated`: without `allow_tf32`.
#[allow(clippy::too_many_arguments)]
pub fn _convolution_deprecated(
    input: &Tensor,
    weight: &Tensor,
    bias: Option<&Tensor>,
    stride: &[i64],
    padding: &[i64],
    dilation: &[i64],
    transposed: bool,
    output_padding: &[i64],
    groups: i64,
    benchmark: bool,
    deterministic: bool,
    cudnn_enabled: bool,
) -> Result<Tensor> {
    ops::_convolution::call(
        input,
        weight,
        bias,
        stride,
        padding,
        dilation,
        transposed,
        output_padding,
        groups,
        benchmark,
        deterministic,
        cudnn_enabled,
        true,
    )
}

/// torch's `batchify`: the input with a batch dimension, and whether it had one.
fn batchify(input: &Tensor, num_spatial_dims: usize, func_name: &str) -> Result<(Tensor, bool)> {
    let no_batch = num_spatial_dims + 1;
    let batch = no_batch + 1;
    let is_batched = input.dim() == batch;
    torch_check!(
        input.dim() == no_batch || is_batched,
        "Expected {no_batch}D (unbatched) or {batch}D (batched) input to {func_name}, but got \
         input of size: {:?}",
        input.sizes()
    );
    Ok(if is_batched {
        (input.clone(), true)
    } else {
        (input.unsqueeze(0)?, false)
    })
}

fn unbatchify(output: Tensor, is_batched: bool) -> Result<Tensor> {
    if is_batched {
        Ok(output)
    } else {
        output.squeeze_dim(0)
    }
}

/// Complex convolutions (torch splits them into real ones) are not implemented.
fn check_not_complex(input: &Tensor, name: &str) -> Result<()> {
    if input.dtype().is_complex() {
        return Err(Error::not_implemented(format!(
            "{name}: complex inputs are not supported by ratten's convolution"
        )));
    }
    Ok(())
}

#[allow(clippy::too_many_arguments)]
fn conv_nd(
    name: &str,
    dim: usize,
    input: &Tensor,
    weight: &Tensor,
    bias: Option<&Tensor>,
    stride: &[i64],
    padding: &[i64],
    dilation: &[i64],
    groups: i64,
) -> Result<Tensor> {
    let (x, batched) = batchify(input, dim, name)?;
    check_not_complex(input, name)?;
    let out = ops::convolution::call(
        &x,
        weight,
        bias,
        stride,
        padding,
        dilation,
        false,
        &vec![0; dim],
        groups,
    )?;
    unbatchify(out, batched)
}

/// `conv1d`.
pub fn conv1d_symint(
    input: &Tensor,
    weight: &Tensor,
    bias: Option<&Tensor>,
    stride: &[i64],
    padding: &[i64],
    dilation: &[i64],
    groups: i64,
) -> Result<Tensor> {
    conv_nd(
        "conv1d", 1, input, weight, bias, stride, padding, dilation, groups,
    )
}

/// `conv2d`, with its check of the bias dtype.
pub fn conv2d_symint(
    input: &Tensor,
    weight: &Tensor,
    bias: Option<&Tensor>,
    stride: &[i64],
    padding: &[i64],
    dilation: &[i64],
    groups: i64,
) -> Result<Tensor> {
    if let Some(b) = bias {
        torch_check!(
            b.dtype() == input.dtype(),
            "Input type ({}) and bias type ({}) should be the same",
            crate::structured::type_meta_name(input.dtype()),
            crate::structured::type_meta_name(b.dtype())
        );
    }
    conv_nd(
        "conv2d", 2, input, weight, bias, stride, padding, dilation, groups,
    )
}

/// `conv3d`.
pub fn conv3d_symint(
    input: &Tensor,
    weight: &Tensor,
    bias: Option<&Tensor>,
    stride: &[i64],
    padding: &[i64],
    dilation: &[i64],
    groups: i64,
) -> Result<Tensor> {
    conv_nd(
        "conv3d", 3, input, weight, bias, stride, padding, dilation, groups,
    )
}

#[allow(clippy::too_many_arguments)]
fn conv_nd_padding(
    name: &str,
    dim: usize,
    input: &Tensor,
    weight: &Tensor,
    bias: Option<&Tensor>,
    stride: &[i64],
    padding: &str,
    dilation: &[i64],
    groups: i64,
) -> Result<Tensor> {
    let (x, batched) = batchify(input, dim, name)?;
    check_not_complex(input, name)?;
    let out = ops::_convolution_mode::call(&x, weight, bias, stride, padding, dilation, groups)?;
    unbatchify(out, batched)
}

/// `conv1d.padding`: `padding` is "same" or "valid".
pub fn conv1d_padding_symint(
    input: &Tensor,
    weight: &Tensor,
    bias: Option<&Tensor>,
    stride: &[i64],
    padding: &str,
    dilation: &[i64],
    groups: i64,
) -> Result<Tensor> {
    conv_nd_padding(
        "conv1d", 1, input, weight, bias, stride, padding, dilation, groups,
    )
}

/// `conv2d.padding`.
pub fn conv2d_padding_symint(
    input: &Tensor,
    weight: &Tensor,
    bias: Option<&Tensor>,
    stride: &[i64],
    padding: &str,
    dilation: &[i64],
    groups: i64,
) -> Result<Tensor> {
    conv_nd_padding(
        "conv2d", 2, input, weight, bias, stride, padding, dilation, groups,
    )
}

/// `conv3d.padding`.
pub fn conv3d_padding_symint(
    input: &Tensor,
    weight: &Tensor,
    bias: Option<&Tensor>,
    stride: &[i64],
    padding: &str,
    dilation: &[i64],
    groups: i64,
) -> Result<Tensor> {
    conv_nd_padding(
        "conv3d", 3, input, weight, bias, stride, padding, dilation, groups,
    )
}

/// `pooling_same_mode_padding_lr` (ATen's Pool.h): the left and right padding that keep
/// the size, preferring symmetric padding.
pub(crate) fn pooling_same_mode_padding_lr(
    input_size: i64,
    kernel_size: i64,
    stride: i64,
    dilation: i64,
) -> (i64, i64) {
    let mut total = dilation * (kernel_size - 1);
    if stride > 2 && total % 2 == 1 {
        let wiggle = input_size % stride - 1;
        if wiggle > 0 {
            total -= 1;
        }
    }
    let left = total / 2;
    (left, total - left)
}

/// torch's `convolution_same`.
fn convolution_same(
    input: &Tensor,
    weight: &Tensor,
    bias: Option<&Tensor>,
    stride: &[i64],
    dilation: &[i64],
    groups: i64,
) -> Result<Tensor> {
    let k = weight.dim();
    torch_check!(k > 2, "weight should have at least three dimensions");
    let dim = k - 2;
    let (ws, is) = (weight.sizes(), input.sizes());
    torch_check!(
        k == input.dim(),
        "Expected {k}-dimensional input for {k}-dimensional weight{ws:?}, but got {}-dimensional \
         input of size {is:?} instead",
        input.dim()
    );
    torch_check!(
        stride.len() == dim || stride.len() == 1,
        "stride cannot broadcast to {dim} dimensions"
    );
    torch_check!(
        dilation.len() == dim || dilation.len() == 1,
        "dilation cannot broadcast to {dim} dimensions"
    );
    for &s in stride {
        torch_check!(
            s == 1,
            "padding='same' is not supported for strided convolutions"
        );
    }
    let mut left = Vec::with_capacity(dim);
    let mut right = Vec::with_capacity(dim);
    for i in 0..dim {
        let s = if stride.len() == 1 {
            stride[0]
        } else {
            stride[i]
        };
        let d = if dilation.len() == 1 {
            dilation[0]
        } else {
            dilation[i]
        };
        let (l, r) = pooling_same_mode_padding_lr(is[i + 2], ws[i + 2], s, d);
        left.push(l);
        right.push(r);
    }
    let output_padding = vec![0; dim];
    if left == right {
        return ops::convolution::call(
            input,
            weight,
            bias,
            stride,
            &left,
            dilation,
            false,
            &output_padding,
            groups,
        );
    }
    crate::structured::warn(
        "Using padding='same' with even kernel lengths and odd dilation may require a \
         zero-padded copy of the input be created",
    );
    // constant_pad_nd by the difference, leaving a symmetric padding: a zero tensor with the
    // input copied into its leading part along each padded dim.
    let mut padded_sizes = is.to_vec();
    for i in 0..dim {
        let delta = right[i] - left[i];
        if delta > 0 {
            padded_sizes[i + 2] += delta;
        }
    }
    let padded = input.new_zeros(&padded_sizes)?;
    let mut region = padded.clone();
    let mut src = input.clone();
    for i in 0..dim {
        let delta = right[i] - left[i];
        if delta < 0 {
            src = src.narrow((i + 2) as i64, -delta, is[i + 2] + delta)?;
            left[i] = right[i];
        }
        region = region.narrow((i + 2) as i64, 0, src.size((i + 2) as i64)?)?;
    }
    region.copy_(&src)?;
    ops::convolution::call(
        &padded,
        weight,
        bias,
        stride,
        &left,
        dilation,
        false,
        &output_padding,
        groups,
    )
}

/// `_convolution_mode`: padding given as "same" or "valid".
pub fn _convolution_mode_symint(
    input: &Tensor,
    weight: &Tensor,
    bias: Option<&Tensor>,
    stride: &[i64],
    padding: &str,
    dilation: &[i64],
    groups: i64,
) -> Result<Tensor> {
    match padding {
        "same" => convolution_same(input, weight, bias, stride, dilation, groups),
        "valid" => ops::convolution::call(
            input,
            weight,
            bias,
            stride,
            &[0],
            dilation,
            false,
            &[0],
            groups,
        ),
        other => Err(Error::runtime(format!("Invalid padding string: '{other}'"))),
    }
}

#[allow(clippy::too_many_arguments)]
fn conv_transpose_nd(
    name: &str,
    dim: usize,
    input: &Tensor,
    weight: &Tensor,
    bias: Option<&Tensor>,
    stride: &[i64],
    padding: &[i64],
    output_padding: &[i64],
    groups: i64,
    dilation: &[i64],
) -> Result<Tensor> {
    let (x, batched) = batchify(input, dim, name)?;
    check_not_complex(input, name)?;
    let out = ops::convolution::call(
        &x,
        weight,
        bias,
        stride,
        padding,
        dilation,
        true,
        output_padding,
        groups,
    )?;
    unbatchify(out, batched)
}

/// `conv_transpose1d`.
#[allow(clippy::too_many_arguments)]
pub fn conv_transpose1d_symint(
    input: &Tensor,
    weight: &Tensor,
    bias: Option<&Tensor>,
    stride: &[i64],
    padding: &[i64],
    output_padding: &[i64],
    groups: i64,
    dilation: &[i64],
) -> Result<Tensor> {
    conv_transpose_nd(
        "conv_transpose1d",
        1,
        input,
        weight,
        bias,
        stride,
        padding,
        output_padding,
        groups,
        dilation,
    )
}

/// `conv_transpose2d.input`.
#[allow(clippy::too_many_arguments)]
pub fn conv_transpose2d_symint(
    input: &Tensor,
    weight: &Tensor,
    bias: Option<&Tensor>,
    stride: &[i64],
    padding: &[i64],
    output_padding: &[i64],
    groups: i64,
    dilation: &[i64],
) -> Result<Tensor> {
    conv_transpose_nd(
        "conv_transpose2d",
        2,
        input,
        weight,
        bias,
        stride,
        padding,
        output_padding,
        groups,
        dilation,
    )
}

/// `conv_transpose3d.input`.
#[allow(clippy::too_many_arguments)]
pub fn conv_transpose3d_symint(
    input: &Tensor,
    weight: &Tensor,
    bias: Option<&Tensor>,
    stride: &[i64],
    padding: &[i64],
    output_padding: &[i64],
    groups: i64,
    dilation: &[i64],
) -> Result<Tensor> {
    conv_transpose_nd(
        "conv_transpose3d",
        3,
        input,
        weight,
        bias,
        stride,
        padding,
        output_padding,
        groups,
        dilation,
    )
}

/// torch's `check_dim_size` (ATen's TensorUtils).
pub(crate) fn check_dim_size(t: &Tensor, dim: usize, dim_size: usize, size: i64) -> Result<()> {
    let ok = t.dim() == dim && t.size(dim_size as i64)? == size;
    torch_check!(
        ok,
        "Expected a tensor of dimension {dim} and tensor.size[{dim_size}] == {size} but got: \
         dimension {} and tensor.size[{dim_size}] = {}",
        t.dim(),
        t.size(dim_size as i64).unwrap_or(0)
    );
    Ok(())
}

/// `convolution_backward`: the gradients of input, weight and bias that `output_mask`
/// asks for. An output not asked for is an empty tensor (torch's is undefined).
#[allow(clippy::too_many_arguments)]
pub fn convolution_backward(
    grad_output: &Tensor,
    input: &Tensor,
    weight: &Tensor,
    bias_sizes: Option<&[i64]>,
    stride: &[i64],
    padding: &[i64],
    dilation: &[i64],
    transposed: bool,
    output_padding: &[i64],
    groups: i64,
    output_mask: &[bool],
) -> Result<(Tensor, Tensor, Tensor)> {
    let k = weight.dim();
    torch_check!(k > 2, "weight should have at least three dimensions");
    let dim = k - 2;
    let params = ConvParams::new(
        stride,
        padding,
        dilation,
        transposed,
        output_padding,
        groups,
        dim,
    )?;
    check_shape_forward(input, &weight.sizes(), None, &params)?;
    torch_check!(
        input.dim() == grad_output.dim(),
        "Expected input and grad_output to have the same number of dimensions, but got: {} and {}",
        input.dim(),
        grad_output.dim()
    );
    if !transposed {
        for &p in &params.output_padding {
            torch_check!(
                p == 0,
                "output_padding is not supported for non-transposed convolutions; got: {}",
                params
                    .output_padding
                    .iter()
                    .map(|p| p.to_string())
                    .collect::<Vec<_>>()
                    .join(" ")
            );
        }
    }
    torch_check!(
        output_mask.len() == 3,
        "convolution_backward: output_mask must have 3 elements, got {}",
        output_mask.len()
    );
    let options = (input.dtype(), input.device());
    let none = || Tensor::empty(&[0], options);
    let empty_backend = input.size(0)? == 0 || input.size(1)? == 0;
    let out_sizes = calc_output_size(input, weight, &params)?;
    if !empty_backend {
        for (i, &s) in out_sizes.iter().enumerate() {
            check_dim_size(grad_output, k, i, s)?;
        }
    }
    let grad_bias = if output_mask[2] {
        if empty_backend {
            let sizes = bias_sizes.map(<[i64]>::to_vec).unwrap_or_else(|| {
                vec![if transposed {
                    weight.sizes()[1] * groups
                } else {
                    weight.sizes()[0]
                }]
            });
            Tensor::zeros(&sizes, (weight.dtype(), weight.device()))?
        } else {
            let dims: Vec<i64> = std::iter::once(0).chain(2..k as i64).collect();
            grad_output.sum_dim_int_list(Some(&dims))?
        }
    } else {
        none()?
    };
    if empty_backend || input.is_meta() || weight.is_meta() || grad_output.is_meta() {
        let gi = if output_mask[0] {
            if empty_backend {
                crate::generated::functions::zeros_like(input)?
            } else {
                Tensor::empty(&input.sizes(), options)?
            }
        } else {
            none()?
        };
        let gw = if output_mask[1] {
            if empty_backend {
                crate::generated::functions::zeros_like(weight)?
            } else {
                Tensor::empty(&weight.sizes(), (weight.dtype(), weight.device()))?
            }
        } else {
            none()?
        };
        return Ok((gi, gw, grad_bias));
    }
    check_input_same_type_as_parameters(input, weight, None)?;
    let name = backend_name(dim, &params);
    let dtype = input.dtype();
    if !dtype.is_floating_point() {
        return Err(Error::not_implemented(format!(
            "\"{name}\" not implemented for '{dtype}'"
        )));
    }
    let go = as_compute(&grad_output.to_dtype(dtype)?)?;
    let (x, w) = (as_compute(input)?, as_compute(weight)?);
    let s = conv_shape(&input.sizes(), &weight.sizes(), &out_sizes, &params);
    let back = |t: Tensor| -> Result<Tensor> {
        if t.dtype() != dtype {
            t.to_dtype(dtype)
        } else {
            Ok(t)
        }
    };
    let grad_input = if output_mask[0] {
        let gi = Tensor::empty(&input.sizes(), (x.dtype(), x.device()))?;
        if transposed {
            kernels::im2col_gemm(name, &s, &go, &w, None, &gi)?;
        } else {
            kernels::gemm_col2im(name, &s, &go, &w, None, &gi)?;
        }
        back(gi)?
    } else {
        none()?
    };
    let grad_weight = if output_mask[1] {
        let gw = Tensor::empty(&weight.sizes(), (w.dtype(), w.device()))?;
        if transposed {
            kernels::weight_grad(name, &s, &x, &go, &gw)?;
        } else {
            kernels::weight_grad(name, &s, &go, &x, &gw)?;
        }
        back(gw)?
    } else {
        none()?
    };
    Ok((grad_input, grad_weight, grad_bias))
}

/// `_convolution_double_backward`: the gradients of `convolution_backward`'s inputs
/// (grad_output, input, weight) from the gradients of its outputs `ggI`, `ggW`, `ggb`, as
/// torch computes them (by convolutions). Where torch returns an undefined tensor, the
/// result is zeros of the input's shape.
#[allow(clippy::too_many_arguments)]
pub fn _convolution_double_backward(
    ggi: Option<&Tensor>,
    ggw: Option<&Tensor>,
    ggb: Option<&Tensor>,
    go: &Tensor,
    weight: &Tensor,
    input: &Tensor,
    stride: &[i64],
    padding: &[i64],
    dilation: &[i64],
    transposed: bool,
    output_padding: &[i64],
    groups: i64,
    _output_mask: &[bool],
) -> Result<(Tensor, Tensor, Tensor)> {
    let dim = weight.dim() - 2;
    let mut params = ConvParams::new(
        stride,
        padding,
        dilation,
        transposed,
        output_padding,
        groups,
        dim,
    )?;
    if !params.transposed && input.dim() > 4 {
        params.groups = if weight.size(1)? > 0 {
            input.size(1)? / weight.size(1)?
        } else {
            -1
        };
    }
    let conv = |x: &Tensor, w: &Tensor, p: &ConvParams| {
        ops::convolution::call(
            x,
            w,
            None,
            &p.stride,
            &p.padding,
            &p.dilation,
            p.transposed,
            &p.output_padding,
            p.groups,
        )
    };
    // ggO = conv(ggI, w) + conv(i, ggW) + ggb
    let mut ggo: Option<Tensor> = None;
    if input.numel() != 0 {
        if let Some(ggi) = ggi {
            ggo = Some(conv(ggi, weight, &params)?);
        }
        if let Some(ggw) = ggw {
            let term = conv(input, ggw, &params)?;
            ggo = Some(match ggo {
                Some(o) => o.add(&term)?,
                None => term,
            });
        }
    }
    if let Some(ggb) = ggb {
        let mut new_size = vec![1i64; go.dim()];
        new_size[1] = ggb.size(0)?;
        let expanded = ggb.contiguous()?.view(&new_size)?.expand(&go.sizes())?;
        ggo = Some(match ggo {
            Some(o) => o.add(&expanded)?,
            None => expanded,
        });
    }
    // gW = conv(ggI, gO)
    let mut gw: Option<Tensor> = None;
    if let Some(ggi) = ggi {
        let mut gwp = params.clone();
        let g = gwp.groups;
        gwp.groups = 1;
        std::mem::swap(&mut gwp.dilation, &mut gwp.stride);
        let got = go.transpose(0, 1)?;
        let ggit = ggi.transpose(0, 1)?;
        if input.numel() != 0 {
            let pair = |a: &Tensor, b: &Tensor| -> Result<Tensor> {
                if params.transposed {
                    let mut p = gwp.clone();
                    p.transposed = false;
                    conv(a, b, &p)
                } else {
                    conv(b, a, &gwp)
                }
            };
            let gwt = if g == 1 {
                pair(&got, &ggit)?
            } else {
                let mut parts = Vec::with_capacity(g as usize);
                for grp in 0..g {
                    let sub = |t: &Tensor| {
                        let n = t.size(0)? / g;
                        t.narrow(0, n * grp, n)
                    };
                    parts.push(pair(&sub(&got)?, &sub(&ggit)?)?);
                }
                ops::cat::call(&parts, 1)?
            };
            let mut w = gwt.transpose(0, 1)?;
            let wsz = weight.sizes();
            for i in 2..w.dim() {
                if w.size(i as i64)? > wsz[i] {
                    w = w.narrow(i as i64, 0, wsz[i])?;
                }
            }
            gw = Some(w);
        }
    }
    // gI = convT(gO, ggW) if !transposed, conv(gO, ggW) if transposed
    let mut gi: Option<Tensor> = None;
    if input.numel() != 0 {
        if let Some(ggw) = ggw {
            let mut gip = params.clone();
            gip.transposed = !params.transposed;
            if params.transposed {
                let mut r = conv(go, ggw, &gip)?;
                let isz = input.sizes();
                for i in 2..r.dim() {
                    if r.size(i as i64)? > isz[i] {
                        r = r.narrow(i as i64, 0, isz[i])?;
                    }
                }
                gi = Some(r);
            } else {
                let ks = &weight.sizes()[2..];
                let ins = &input.sizes()[2..];
                let gos = &go.sizes()[2..];
                for i in 0..ks.len() {
                    let expected = (ks[i] - 1) * gip.dilation[i] - 2 * gip.padding[i]
                        + (gip.stride[i] * (gos[i] - 1) + 1);
                    if expected != ins[i] {
                        gip.output_padding[i] = ins[i] - expected;
                    }
                }
                gi = Some(conv(go, ggw, &gip)?);
            }
        }
    }
    let or_zeros = |t: Option<Tensor>, like: &Tensor| match t {
        Some(t) => Ok(t),
        None => crate::generated::functions::zeros_like(like),
    };
    Ok((
        or_zeros(ggo, go)?,
        or_zeros(gi, input)?,
        or_zeros(gw, weight)?,
    ))
}
