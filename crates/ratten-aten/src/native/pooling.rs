//! Pooling (ATen's Pooling.cpp, DilatedMaxPool2d.cpp, AveragePool2d.cpp, AdaptiveAveragePooling.cpp).
//!
//! Also AdaptiveMaxPooling2d.cpp. The metas compute torch's output sizes (Pool.h's
//! `pooling_output_shape`) with its checks and texts; the loops are in
//! `cpu/pooling_kernels.rs`. Inputs are 3-D `(C, H, W)` or 4-D `(N, C, H, W)`; outputs are
//! contiguous (torch keeps a channels-last input's layout). Half types run in float.

use ratten_core::{torch_check, Error, Result, ScalarType, TensorOptions};

use crate::generated::operators as ops;
use crate::native::convolution::check_dim_size;
use crate::native::cpu::pooling_kernels::{self as kernels, AvgOptions, Planes, Pool2d};
use crate::native::scatter_gather::options_of;
use crate::structured::{type_meta_name, MetaBase};
use crate::Tensor;

/// `div_rtn`: division rounding toward negative infinity.
fn div_rtn(x: i64, y: i64) -> i64 {
    let q = x / y;
    let r = x % y;
    if r != 0 && ((r < 0) != (y < 0)) {
        q - 1
    } else {
        q
    }
}

/// `pooling_output_shape_pad_lr`.
fn pooling_output_shape_pad_lr(
    input_size: i64,
    kernel_size: i64,
    pad_l: i64,
    pad_r: i64,
    stride: i64,
    dilation: i64,
    ceil_mode: bool,
) -> i64 {
    let mut out = div_rtn(
        input_size + pad_l + pad_r - dilation * (kernel_size - 1) - 1
            + if ceil_mode { stride - 1 } else { 0 },
        stride,
    ) + 1;
    if ceil_mode && (out - 1) * stride >= input_size + pad_l {
        out -= 1;
    }
    out
}

/// `pooling_output_shape`, with its checks.
pub fn pooling_output_shape(
    input_size: i64,
    kernel_size: i64,
    pad: i64,
    stride: i64,
    dilation: i64,
    ceil_mode: bool,
) -> Result<i64> {
    torch_check!(stride != 0, "stride should not be zero");
    torch_check!(pad >= 0, "pad must be non-negative, but got pad: {pad}");
    torch_check!(
        pad <= ((kernel_size - 1) * dilation + 1) / 2,
        "pad should be at most half of effective kernel size, but got pad={pad}, \
         kernel_size={kernel_size} and dilation={dilation}"
    );
    Ok(pooling_output_shape_pad_lr(
        input_size,
        kernel_size,
        pad,
        pad,
        stride,
        dilation,
        ceil_mode,
    ))
}

/// `pool2d_shape_check`.
#[allow(clippy::too_many_arguments)]
fn pool2d_shape_check(
    input: &Tensor,
    p: &Pool2d,
    n_input_plane: i64,
    input_height: i64,
    input_width: i64,
    output_height: i64,
    output_width: i64,
) -> Result<()> {
    let ndim = input.dim();
    torch_check!(
        p.kw > 0 && p.kh > 0,
        "kernel size should be greater than zero, but got kH: {} kW: {}",
        p.kh,
        p.kw
    );
    torch_check!(
        p.dw > 0 && p.dh > 0,
        "stride should be greater than zero, but got dH: {} dW: {}",
        p.dh,
        p.dw
    );
    torch_check!(
        p.dil_h > 0 && p.dil_w > 0,
        "dilation should be greater than zero, but got dilationH: {} dilationW: {}",
        p.dil_h,
        p.dil_w
    );
    let s = input.sizes();
    let valid_dims = ndim >= 3 && s[1] != 0 && s[2] != 0;
    torch_check!(
        (ndim == 3 && s[0] != 0 && valid_dims) || (ndim == 4 && valid_dims && s[3] != 0),
        "Expected 3D or 4D (batch mode) tensor with optional 0 dim batch size for input, but \
         got:{s:?}"
    );
    let ekw = (p.kw - 1) * p.dil_w + 1;
    let ekh = (p.kh - 1) * p.dil_h + 1;
    torch_check!(
        ekw / 2 >= p.pad_w && ekh / 2 >= p.pad_h,
        "pad should be smaller than or equal to half of effective kernel size, but got padW = \
         {}, padH = {}, effectiveKW = {ekw}, effectiveKH = {ekh}",
        p.pad_w,
        p.pad_h
    );
    torch_check!(
        output_width >= 1 && output_height >= 1,
        "Given input size: ({n_input_plane}x{input_height}x{input_width}). Calculated output \
         size: ({n_input_plane}x{output_height}x{output_width}). Output size is too small"
    );
    Ok(())
}

/// The parsed window of max_pool2d / avg_pool2d (torch's argument checks).
fn parse_pool2d(
    name: &str,
    kernel_size: &[i64],
    stride: &[i64],
    padding: &[i64],
    dilation: Option<&[i64]>,
) -> Result<Pool2d> {
    torch_check!(
        kernel_size.len() == 1 || kernel_size.len() == 2,
        "{name}: kernel_size must either be a single int, or a tuple of two ints"
    );
    let kh = kernel_size[0];
    let kw = if kernel_size.len() == 1 {
        kh
    } else {
        kernel_size[1]
    };
    torch_check!(
        stride.is_empty() || stride.len() == 1 || stride.len() == 2,
        "{name}: stride must either be omitted, a single int, or a tuple of two ints"
    );
    let dh = if stride.is_empty() { kh } else { stride[0] };
    let dw = match stride.len() {
        0 => kw,
        1 => dh,
        _ => stride[1],
    };
    torch_check!(
        padding.len() == 1 || padding.len() == 2,
        "{name}: padding must either be a single int, or a tuple of two ints"
    );
    let pad_h = padding[0];
    let pad_w = if padding.len() == 1 {
        pad_h
    } else {
        padding[1]
    };
    let (dil_h, dil_w) = match dilation {
        Some(d) => {
            torch_check!(
                d.len() == 1 || d.len() == 2,
                "{name}: dilation must be either a single int, or a tuple of two ints"
            );
            (d[0], if d.len() == 1 { d[0] } else { d[1] })
        }
        None => (1, 1),
    };
    Ok(Pool2d {
        kh,
        kw,
        dh,
        dw,
        pad_h,
        pad_w,
        dil_h,
        dil_w,
    })
}

/// What the 2-D pooling metas hand to their impls.
#[derive(Clone, Copy, Debug)]
pub struct Pool2dState {
    pub window: Pool2d,
    pub planes: Planes,
}

/// The output sizes of a max/avg pool over `input` (3-D or 4-D), checked. max_pool2d checks
/// the dimensionality first; avg_pool2d reads `size(-3)` first (an IndexError below 3-D).
fn pool2d_output(
    input: &Tensor,
    p: &Pool2d,
    ceil_mode: bool,
    check_ndim: bool,
) -> Result<(Vec<i64>, Planes)> {
    let ndim = input.dim();
    let s = input.sizes();
    if check_ndim {
        torch_check!(
            ndim == 3 || ndim == 4,
            "non-empty 3D or 4D (batch mode) tensor expected for input"
        );
    } else {
        input.size(-3)?;
        torch_check!(
            ndim == 3 || ndim == 4,
            "Expected 3D or 4D (batch mode) tensor with optional 0 dim batch size for input, \
             but got:{s:?}"
        );
    }
    let nbatch = if ndim == 4 { s[0] } else { 1 };
    let (c, h, w) = (s[ndim - 3], s[ndim - 2], s[ndim - 1]);
    let oh = pooling_output_shape(h, p.kh, p.pad_h, p.dh, p.dil_h, ceil_mode)?;
    let ow = pooling_output_shape(w, p.kw, p.pad_w, p.dw, p.dil_w, ceil_mode)?;
    pool2d_shape_check(input, p, c, h, w, oh, ow)?;
    let mut out = s[..ndim - 2].to_vec();
    out.extend([oh, ow]);
    let planes = Planes {
        planes: (nbatch * c) as usize,
        ih: h as usize,
        iw: w as usize,
        oh: oh as usize,
        ow: ow as usize,
    };
    Ok((out, planes))
}

fn long_options(t: &Tensor) -> TensorOptions {
    TensorOptions::new()
        .dtype(ScalarType::Long)
        .device(t.device())
}

/// Whether pooling runs this dtype in float.
fn in_float(dtype: ScalarType) -> bool {
    matches!(dtype, ScalarType::Half | ScalarType::BFloat16)
}

/// `t` contiguous, in float when it is a half type.
fn compute_form(t: &Tensor) -> Result<Tensor> {
    if in_float(t.dtype()) {
        t.to_dtype(ScalarType::Float)?.contiguous()
    } else {
        t.contiguous()
    }
}

/// Runs `f` on a contiguous output of `out`'s dtype in compute form, copying it into `out`
/// when that is another tensor.
fn with_output<F: FnOnce(&Tensor) -> Result<()>>(out: &Tensor, f: F) -> Result<()> {
    let float = in_float(out.dtype());
    if !float && out.is_contiguous() {
        return f(out);
    }
    let dtype = if float {
        ScalarType::Float
    } else {
        out.dtype()
    };
    let tmp = Tensor::empty(&out.sizes(), (dtype, out.device()))?;
    f(&tmp)?;
    out.copy_(&tmp)?;
    Ok(())
}

/// Refuses the dtypes the pooling loops have no kernel for, as torch's `AT_DISPATCH` does:
/// the floating types, with int64 (`long`) or every integer type (`ints`) where torch's
/// kernel takes them.
fn check_dtype(name: &str, dtype: ScalarType, long: bool, ints: bool) -> Result<()> {
    let ok = dtype.is_floating_point()
        || (long && dtype == ScalarType::Long)
        || (ints && dtype.is_integral(false));
    if ok {
        Ok(())
    } else {
        Err(Error::not_implemented(format!(
            "\"{name}\" not implemented for '{dtype}'"
        )))
    }
}

fn check_float(name: &str, dtype: ScalarType) -> Result<()> {
    check_dtype(name, dtype, false, false)
}

// ---------------------------------------------------------------------------------------------
// max_pool2d

/// `max_pool2d`: max_pool2d_with_indices without its indices.
pub fn max_pool2d(
    self_: &Tensor,
    kernel_size: &[i64],
    stride: &[i64],
    padding: &[i64],
    dilation: &[i64],
    ceil_mode: bool,
) -> Result<Tensor> {
    let (out, _) = ops::max_pool2d_with_indices::call(
        self_,
        kernel_size,
        stride,
        padding,
        dilation,
        ceil_mode,
    )?;
    Ok(out)
}

/// TORCH_META_FUNC(max_pool2d_with_indices).
pub fn max_pool2d_with_indices_meta(
    m: &dyn MetaBase,
    input: &Tensor,
    kernel_size: &[i64],
    stride: &[i64],
    padding: &[i64],
    dilation: &[i64],
    ceil_mode: bool,
) -> Result<Pool2dState> {
    let p = parse_pool2d("max_pool2d", kernel_size, stride, padding, Some(dilation))?;
    let (sizes, planes) = pool2d_output(input, &p, ceil_mode, true)?;
    m.set_output_contiguous(0, &sizes, options_of(input))?;
    m.set_output_contiguous(1, &sizes, long_options(input))?;
    Ok(Pool2dState { window: p, planes })
}

/// TORCH_IMPL_FUNC(max_pool2d_with_indices_out_cpu).
#[allow(clippy::too_many_arguments)]
pub fn max_pool2d_with_indices_out_cpu(
    state: &mut Pool2dState,
    input: &Tensor,
    _kernel_size: &[i64],
    _stride: &[i64],
    _padding: &[i64],
    _dilation: &[i64],
    _ceil_mode: bool,
    out: &Tensor,
    indices: &Tensor,
) -> Result<()> {
    check_dtype("max_pool2d", input.dtype(), true, true)?;
    if out.numel() == 0 {
        return Ok(());
    }
    let x = compute_form(input)?;
    let st = *state;
    with_output(out, |o| {
        kernels::max_pool2d_kernel(&x, o, indices, st.planes, st.window)
    })
}

/// TORCH_META_FUNC(max_pool2d_with_indices_backward).
#[allow(clippy::too_many_arguments)]
pub fn max_pool2d_with_indices_backward_meta(
    m: &dyn MetaBase,
    grad_output: &Tensor,
    input: &Tensor,
    kernel_size: &[i64],
    stride: &[i64],
    padding: &[i64],
    dilation: &[i64],
    ceil_mode: bool,
    indices: &Tensor,
) -> Result<Pool2dState> {
    let p = parse_pool2d("max_pool2d", kernel_size, stride, padding, Some(dilation))?;
    torch_check!(
        input.dtype() == grad_output.dtype(),
        "expected dtype {} for `gradOutput` but got dtype {}",
        type_meta_name(input.dtype()),
        type_meta_name(grad_output.dtype())
    );
    let (sizes, planes) = pool2d_output(input, &p, ceil_mode, true)?;
    let ndim = input.dim();
    let (c, oh, ow) = (sizes[ndim - 3], sizes[ndim - 2], sizes[ndim - 1]);
    for t in [grad_output, indices] {
        check_dim_size(t, ndim, ndim - 3, c)?;
        check_dim_size(t, ndim, ndim - 2, oh)?;
        check_dim_size(t, ndim, ndim - 1, ow)?;
        if ndim == 4 {
            check_dim_size(t, ndim, 0, input.size(0)?)?;
        }
    }
    m.set_output_contiguous(0, &input.sizes(), options_of(input))?;
    Ok(Pool2dState { window: p, planes })
}

/// TORCH_IMPL_FUNC(max_pool2d_with_indices_backward_out_cpu).
#[allow(clippy::too_many_arguments)]
pub fn max_pool2d_with_indices_backward_out_cpu(
    state: &mut Pool2dState,
    grad_output: &Tensor,
    _input: &Tensor,
    _kernel_size: &[i64],
    _stride: &[i64],
    _padding: &[i64],
    _dilation: &[i64],
    _ceil_mode: bool,
    indices: &Tensor,
    grad_input: &Tensor,
) -> Result<()> {
    check_float("max_pool2d_backward", grad_output.dtype())?;
    if grad_input.numel() == 0 {
        return Ok(());
    }
    let go = compute_form(grad_output)?;
    let idx = indices.contiguous()?;
    let planes = state.planes;
    with_output(grad_input, |gi| {
        kernels::max_pool_backward_kernel("max_pool2d_backward", &go, &idx, gi, planes)
    })
}

// ---------------------------------------------------------------------------------------------
// avg_pool2d

/// What avg_pool2d's metas hand to their impls (torch's `precomputed:` kH, kW, dH, dW, padH,
/// padW, with the plane sizes).
#[derive(Clone, Copy, Debug)]
pub struct AvgPool2dState {
    pub window: Pool2d,
    pub planes: Planes,
}

/// TORCH_PRECOMPUTE_META_FUNC(avg_pool2d).
#[allow(clippy::too_many_arguments)]
pub fn avg_pool2d_meta(
    m: &dyn MetaBase,
    input: &Tensor,
    kernel_size: &[i64],
    stride: &[i64],
    padding: &[i64],
    ceil_mode: bool,
    _count_include_pad: bool,
    divisor_override: Option<i64>,
) -> Result<AvgPool2dState> {
    let p = parse_pool2d("avg_pool2d", kernel_size, stride, padding, None)?;
    torch_check!(divisor_override != Some(0), "divisor must be not zero");
    let (sizes, planes) = pool2d_output(input, &p, ceil_mode, false)?;
    m.set_output_contiguous(0, &sizes, options_of(input))?;
    Ok(AvgPool2dState { window: p, planes })
}

/// TORCH_IMPL_FUNC(avg_pool2d_out_cpu).
#[allow(clippy::too_many_arguments)]
pub fn avg_pool2d_out_cpu(
    state: &mut AvgPool2dState,
    input: &Tensor,
    _kernel_size: &[i64],
    _stride: &[i64],
    _padding: &[i64],
    _ceil_mode: bool,
    count_include_pad: bool,
    divisor_override: Option<i64>,
    out: &Tensor,
) -> Result<()> {
    check_dtype("avg_pool2d", input.dtype(), true, false)?;
    if out.numel() == 0 {
        return Ok(());
    }
    let x = compute_form(input)?;
    let st = *state;
    let o = AvgOptions {
        count_include_pad,
        divisor_override,
    };
    with_output(out, |y| {
        kernels::avg_pool2d_kernel(&x, y, st.planes, st.window, o)
    })
}

/// TORCH_META_FUNC(avg_pool2d_backward).
#[allow(clippy::too_many_arguments)]
pub fn avg_pool2d_backward_meta(
    m: &dyn MetaBase,
    grad_output: &Tensor,
    input: &Tensor,
    kernel_size: &[i64],
    stride: &[i64],
    padding: &[i64],
    ceil_mode: bool,
    _count_include_pad: bool,
    divisor_override: Option<i64>,
) -> Result<AvgPool2dState> {
    let p = parse_pool2d("avg_pool2d", kernel_size, stride, padding, None)?;
    torch_check!(divisor_override != Some(0), "divisor must be not zero");
    torch_check!(
        input.dtype() == grad_output.dtype(),
        "expected dtype {} for `gradOutput` but got dtype {}",
        type_meta_name(input.dtype()),
        type_meta_name(grad_output.dtype())
    );
    let (sizes, planes) = pool2d_output(input, &p, ceil_mode, false)?;
    let ndim = input.dim();
    check_dim_size(grad_output, ndim, ndim - 3, sizes[ndim - 3])?;
    check_dim_size(grad_output, ndim, ndim - 2, sizes[ndim - 2])?;
    check_dim_size(grad_output, ndim, ndim - 1, sizes[ndim - 1])?;
    m.set_output_contiguous(0, &input.sizes(), options_of(input))?;
    Ok(AvgPool2dState { window: p, planes })
}

/// TORCH_IMPL_FUNC(avg_pool2d_backward_out_cpu).
#[allow(clippy::too_many_arguments)]
pub fn avg_pool2d_backward_out_cpu(
    state: &mut AvgPool2dState,
    grad_output: &Tensor,
    _input: &Tensor,
    _kernel_size: &[i64],
    _stride: &[i64],
    _padding: &[i64],
    _ceil_mode: bool,
    count_include_pad: bool,
    divisor_override: Option<i64>,
    grad_input: &Tensor,
) -> Result<()> {
    check_dtype(
        "avg_pool2d_backward_out_frame",
        grad_output.dtype(),
        true,
        false,
    )?;
    if grad_input.numel() == 0 {
        return Ok(());
    }
    let go = compute_form(grad_output)?;
    let st = *state;
    let o = AvgOptions {
        count_include_pad,
        divisor_override,
    };
    with_output(grad_input, |gi| {
        kernels::avg_pool2d_backward_kernel(&go, gi, st.planes, st.window, o)
    })
}

// ---------------------------------------------------------------------------------------------
// adaptive_avg_pool2d

/// `adaptive_avg_pool2d`: a mean over H and W for a 1x1 output, else `_adaptive_avg_pool2d`.
pub fn adaptive_avg_pool2d_symint(input: &Tensor, output_size: &[i64]) -> Result<Tensor> {
    torch_check!(
        output_size.len() == 2,
        "adaptive_avg_pool2d: output_size must be 2"
    );
    torch_check!(
        output_size[0] >= 0 && output_size[1] >= 0,
        "adaptive_avg_pool2d: elements of output_size must be greater than or equal to 0 but \
         received {{{}, {}}}",
        output_size[0],
        output_size[1]
    );
    if output_size == [1, 1] {
        return input.mean_dim_with(Some(&[-1, -2]), true, None);
    }
    ops::_adaptive_avg_pool2d::call(input, output_size)
}

/// The checks of `adaptive_avg_pool2d_out_cpu_template` and the output sizes.
fn adaptive_avg_pool2d_output(input: &Tensor, output_size: &[i64]) -> Result<(Vec<i64>, Planes)> {
    torch_check!(
        output_size.len() == 2,
        "adaptive_avg_pool2d: output_size must be 2"
    );
    let ndim = input.dim();
    let s = input.sizes();
    torch_check!(
        ndim == 3 || ndim == 4,
        "adaptive_avg_pool2d(): Expected 3D or 4D tensor, but got {s:?}"
    );
    for i in [ndim - 2, ndim - 1] {
        torch_check!(
            s[i] > 0,
            "adaptive_avg_pool2d(): Expected input to have non-zero size for non-batch \
             dimensions, but input has sizes {s:?} with dimension {i} being empty"
        );
    }
    let mut out = s[..ndim - 2].to_vec();
    out.extend(output_size);
    let planes: i64 = s[..ndim - 2].iter().product();
    Ok((
        out,
        Planes {
            planes: planes as usize,
            ih: s[ndim - 2] as usize,
            iw: s[ndim - 1] as usize,
            oh: output_size[0] as usize,
            ow: output_size[1] as usize,
        },
    ))
}

/// `adaptive_avg_pool2d.out` (`adaptive_avg_pool2d_out_cpu`).
pub fn adaptive_avg_pool2d_out_cpu<'a>(
    input: &Tensor,
    output_size: &[i64],
    out: &'a Tensor,
) -> Result<&'a Tensor> {
    let (sizes, planes) = adaptive_avg_pool2d_output(input, output_size)?;
    torch_check!(
        input.dtype() == out.dtype(),
        "adaptive_avg_pool2d_out_cpu_template: Expected dtype {} for `output` but got dtype {}",
        type_meta_name(input.dtype()),
        type_meta_name(out.dtype())
    );
    crate::structured::resize_output(out, &sizes)?;
    if out.is_meta() || input.is_meta() || out.numel() == 0 {
        return Ok(out);
    }
    check_float("adaptive_avg_pool2d", input.dtype())?;
    let x = compute_form(input)?;
    with_output(out, |y| kernels::adaptive_avg_pool2d_kernel(&x, y, planes))?;
    Ok(out)
}

/// `_adaptive_avg_pool2d` (`adaptive_avg_pool2d_cpu`).
pub fn adaptive_avg_pool2d_cpu(input: &Tensor, output_size: &[i64]) -> Result<Tensor> {
    let out = Tensor::empty(&[0], (input.dtype(), input.device()))?;
    adaptive_avg_pool2d_out_cpu(input, output_size, &out)?;
    Ok(out)
}

/// `_adaptive_avg_pool2d_backward` (`adaptive_avg_pool2d_backward_cpu`).
pub fn adaptive_avg_pool2d_backward_cpu(grad_output: &Tensor, input: &Tensor) -> Result<Tensor> {
    let ndim = grad_output.dim();
    let gs = grad_output.sizes();
    for (i, &n) in gs.iter().enumerate().skip(1) {
        torch_check!(
            n > 0,
            "adaptive_avg_pool2d_backward(): Expected grad_output to have non-zero size for \
             non-batch dimensions, but grad_output has sizes {gs:?} with dimension {i} being \
             empty"
        );
    }
    torch_check!(
        ndim == 3 || ndim == 4,
        "adaptive_avg_pool2d_backward(): Expected 3D or 4D tensor, but got {:?}",
        input.sizes()
    );
    torch_check!(
        input.dtype() == grad_output.dtype(),
        "adaptive_avg_pool2d_backward_out_cpu_template: Expected dtype {} for `grad_output` but \
         got dtype {}",
        type_meta_name(input.dtype()),
        type_meta_name(grad_output.dtype())
    );
    torch_check!(
        input.dim() == ndim && input.sizes()[..ndim - 2] == gs[..ndim - 2],
        "adaptive_avg_pool2d_backward(): grad_output of size {gs:?} does not match input of \
         size {:?}",
        input.sizes()
    );
    let grad_input = Tensor::empty(&input.sizes(), (input.dtype(), input.device()))?;
    if grad_input.is_meta() || grad_output.is_meta() || grad_input.numel() == 0 {
        return Ok(grad_input);
    }
    check_float("adaptive_avg_pool2d_backward_cpu", input.dtype())?;
    let planes: i64 = gs[..ndim - 2].iter().product();
    let sz = Planes {
        planes: planes as usize,
        ih: input.sizes()[ndim - 2] as usize,
        iw: input.sizes()[ndim - 1] as usize,
        oh: gs[ndim - 2] as usize,
        ow: gs[ndim - 1] as usize,
    };
    let go = compute_form(grad_output)?;
    with_output(&grad_input, |gi| {
        kernels::adaptive_avg_pool2d_backward_kernel(&go, gi, sz)
    })?;
    Ok(grad_input)
}

// ---------------------------------------------------------------------------------------------
// adaptive_max_pool2d

/// TORCH_META_FUNC(adaptive_max_pool2d).
pub fn adaptive_max_pool2d_meta(
    m: &dyn MetaBase,
    input: &Tensor,
    output_size: &[i64],
) -> Result<Planes> {
    let ndim = input.dim();
    let s = input.sizes();
    torch_check!(
        ndim == 3 || ndim == 4,
        "adaptive_max_pool2d(): Expected 3D or 4D tensor, but got: {s:?}"
    );
    for (i, &n) in s.iter().enumerate().skip(1) {
        torch_check!(
            n > 0,
            "adaptive_max_pool2d(): Expected input to have non-zero size for non-batch \
             dimensions, but input has sizes {s:?} with dimension {i} being empty"
        );
    }
    torch_check!(
        output_size.len() == 2,
        "adaptive_max_pool2d(): internal error: output_size.size() must be 2"
    );
    let mut sizes = s[..ndim - 2].to_vec();
    sizes.extend(output_size);
    m.set_output_contiguous(0, &sizes, options_of(input))?;
    m.set_output_contiguous(1, &sizes, long_options(input))?;
    let planes: i64 = s[..ndim - 2].iter().product();
    Ok(Planes {
        planes: planes as usize,
        ih: s[ndim - 2] as usize,
        iw: s[ndim - 1] as usize,
        oh: output_size[0].max(0) as usize,
        ow: output_size[1].max(0) as usize,
    })
}

/// TORCH_IMPL_FUNC(adaptive_max_pool2d_out_cpu).
pub fn adaptive_max_pool2d_out_cpu(
    state: &mut Planes,
    input: &Tensor,
    _output_size: &[i64],
    out: &Tensor,
    indices: &Tensor,
) -> Result<()> {
    check_float("adaptive_max_pool2d", input.dtype())?;
    if out.numel() == 0 {
        return Ok(());
    }
    let x = compute_form(input)?;
    let sz = *state;
    with_output(out, |y| {
        kernels::adaptive_max_pool2d_kernel(&x, y, indices, sz)
    })
}

/// TORCH_META_FUNC(adaptive_max_pool2d_backward).
pub fn adaptive_max_pool2d_backward_meta(
    m: &dyn MetaBase,
    grad_output: &Tensor,
    input: &Tensor,
    indices: &Tensor,
) -> Result<Planes> {
    let ndim = grad_output.dim();
    let gs = grad_output.sizes();
    torch_check!(
        ndim == 3 || ndim == 4,
        "adaptive_max_pooling2d_backward(): Expected 3D or 4D grad_output, but got: {gs:?}"
    );
    for (i, &n) in gs.iter().enumerate().skip(1) {
        torch_check!(
            n > 0,
            "adaptive_max_pool2d_backward(): Expected grad_output to have non-zero size for \
             non-batch dimensions, but grad_output has sizes {gs:?} with dimension {i} being \
             empty"
        );
    }
    torch_check!(
        input.dtype() == grad_output.dtype(),
        "expected dtype {} for `grad_output` but got dtype {}",
        type_meta_name(input.dtype()),
        type_meta_name(grad_output.dtype())
    );
    let is = input.sizes();
    torch_check!(
        is.len() == ndim && is[..ndim - 2] == gs[..ndim - 2] && indices.sizes() == gs,
        "adaptive_max_pool2d_backward(): grad_output of size {gs:?} and indices of size {:?} do \
         not match input of size {is:?}",
        indices.sizes()
    );
    m.set_output_contiguous(0, &is, options_of(input))?;
    let planes: i64 = gs[..ndim - 2].iter().product();
    Ok(Planes {
        planes: planes as usize,
        ih: is[ndim - 2] as usize,
        iw: is[ndim - 1] as usize,
        oh: gs[ndim - 2] as usize,
        ow: gs[ndim - 1] as usize,
    })
}

/// TORCH_IMPL_FUNC(adaptive_max_pool2d_backward_out_cpu).
pub fn adaptive_max_pool2d_backward_out_cpu(
    state: &mut Planes,
    grad_output: &Tensor,
    _input: &Tensor,
    indices: &Tensor,
    grad_input: &Tensor,
) -> Result<()> {
    check_float("adaptive_max_pool2d_backward", grad_output.dtype())?;
    if grad_input.numel() == 0 {
        return Ok(());
    }
    let go = compute_form(grad_output)?;
    let idx = indices.contiguous()?;
    let sz = *state;
    with_output(grad_input, |gi| {
        kernels::max_pool_backward_kernel("adaptive_max_pool2d_backward", &go, &idx, gi, sz)
    })
}
