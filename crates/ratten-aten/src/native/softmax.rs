//! softmax and log_softmax (ATen's SoftMax.cpp): the structured `_softmax` / `_log_softmax`
//! and their backward `_softmax_backward_data` / `_log_softmax_backward_data`, and the
//! compositions `softmax(dim, dtype)` / `log_softmax(dim, dtype)` (convert, then the
//! structured op). The loops are in `native::cpu::softmax_kernels` (Note [Softmax loops]).

use ratten_core::tensor_impl::maybe_wrap_dim;
use ratten_core::{Error, Result, ScalarType, TensorOptions};

use crate::generated::operators as ops;
use crate::native::cpu::softmax_kernels::{softmax_backward_kernel, softmax_kernel};
use crate::structured::{with_contiguous_output, MetaBase};
use crate::Tensor;

const DIM_RANGE: &str = "dim must be non-negative and less than input dimensions";

fn options_of(t: &Tensor, dtype: ScalarType) -> TensorOptions {
    TensorOptions::new().dtype(dtype).device(t.device())
}

/// The shared meta of `_softmax` and `_log_softmax`: a contiguous output of `input`'s shape
/// (float when `half_to_float`).
fn softmax_meta_common(
    m: &dyn MetaBase,
    input: &Tensor,
    dim: i64,
    half_to_float: bool,
) -> Result<()> {
    let dim_ = maybe_wrap_dim(dim, input.dim(), true)?;
    let dtype = if half_to_float {
        ScalarType::Float
    } else {
        input.dtype()
    };
    if dim_ >= input.dim().max(1) {
        return Err(Error::runtime(DIM_RANGE));
    }
    m.set_output_raw_strided(0, input.sizes().as_slice(), &[], options_of(input, dtype))
}

/// TORCH_META_FUNC(_softmax).
pub fn _softmax_meta(
    m: &dyn MetaBase,
    self_: &Tensor,
    dim: i64,
    half_to_float: bool,
) -> Result<()> {
    softmax_meta_common(m, self_, dim, half_to_float)
}

/// TORCH_META_FUNC(_log_softmax).
pub fn _log_softmax_meta(
    m: &dyn MetaBase,
    self_: &Tensor,
    dim: i64,
    half_to_float: bool,
) -> Result<()> {
    softmax_meta_common(m, self_, dim, half_to_float)
}

/// The shared meta of the backward ops: a contiguous gradient of `grad`'s shape (half when
/// `grad` is float and the input was half, as torch's meta computes it).
fn softmax_backward_meta_common(
    m: &dyn MetaBase,
    grad: &Tensor,
    output: &Tensor,
    dim: i64,
    input_dtype: ScalarType,
    check_size: bool,
) -> Result<()> {
    if check_size && grad.sizes() != output.sizes() {
        return Err(Error::runtime(format!(
            "Expected tensor for argument #1 'grad' to have same size as tensor for argument #2 \
             'output'; but {:?} does not equal {:?} (while checking arguments for \
             softmax_backward)",
            grad.sizes().as_slice(),
            output.sizes().as_slice()
        )));
    }
    let dim_ = maybe_wrap_dim(dim, grad.dim(), true)?;
    let mut dtype = grad.dtype();
    if grad.dtype() != input_dtype
        && grad.dtype() == ScalarType::Float
        && input_dtype == ScalarType::Half
    {
        dtype = ScalarType::Half;
    }
    if dim_ >= grad.dim().max(1) {
        return Err(Error::runtime(DIM_RANGE));
    }
    m.set_output_raw_strided(0, grad.sizes().as_slice(), &[], options_of(grad, dtype))
}

/// TORCH_META_FUNC(_softmax_backward_data).
pub fn _softmax_backward_data_meta(
    m: &dyn MetaBase,
    grad_output: &Tensor,
    output: &Tensor,
    dim: i64,
    input_dtype: ScalarType,
) -> Result<()> {
    softmax_backward_meta_common(m, grad_output, output, dim, input_dtype, true)
}

/// TORCH_META_FUNC(_log_softmax_backward_data).
pub fn _log_softmax_backward_data_meta(
    m: &dyn MetaBase,
    grad_output: &Tensor,
    output: &Tensor,
    dim: i64,
    input_dtype: ScalarType,
) -> Result<()> {
    softmax_backward_meta_common(m, grad_output, output, dim, input_dtype, false)
}

/// `t` viewed with at least one dim (a 0-dim tensor as one element).
fn at_least_1d(t: Tensor) -> Result<Tensor> {
    if t.dim() == 0 {
        t.view(&[1])
    } else {
        Ok(t)
    }
}

fn softmax_impl(
    input: &Tensor,
    dim: i64,
    half_to_float: bool,
    output: &Tensor,
    log: bool,
) -> Result<()> {
    if half_to_float {
        return Err(Error::runtime(
            "softmax with half to float conversion is not supported on CPU",
        ));
    }
    if input.numel() == 0 {
        return Ok(());
    }
    let input_ = at_least_1d(input.contiguous()?)?;
    let dim_ = maybe_wrap_dim(dim, input.dim(), true)?;
    if dim_ >= input_.dim() {
        return Err(Error::runtime(DIM_RANGE));
    }
    with_contiguous_output(output, |out| {
        let out = at_least_1d(out.clone())?;
        softmax_kernel(&out, &input_, dim_, log)
    })
}

/// TORCH_IMPL_FUNC(softmax_cpu_out).
pub fn softmax_cpu_out(
    _state: &mut (),
    self_: &Tensor,
    dim: i64,
    half_to_float: bool,
    out: &Tensor,
) -> Result<()> {
    softmax_impl(self_, dim, half_to_float, out, false)
}

/// TORCH_IMPL_FUNC(log_softmax_cpu_out).
pub fn log_softmax_cpu_out(
    _state: &mut (),
    self_: &Tensor,
    dim: i64,
    half_to_float: bool,
    out: &Tensor,
) -> Result<()> {
    softmax_impl(self_, dim, half_to_float, out, true)
}

fn softmax_backward_impl(
    grad: &Tensor,
    output: &Tensor,
    dim: i64,
    grad_input: &Tensor,
    log: bool,
) -> Result<()> {
    if output.numel() == 0 {
        return Ok(());
    }
    for other in [output, grad_input] {
        if other.dtype() != grad.dtype() {
            return Err(Error::runtime(format!(
                "expected scalar type {} but found {}",
                grad.dtype(),
                other.dtype()
            )));
        }
    }
    let dim_ = maybe_wrap_dim(dim, grad.dim(), true)?;
    let grad_ = at_least_1d(grad.contiguous()?)?;
    let output_ = at_least_1d(output.contiguous()?)?;
    with_contiguous_output(grad_input, |gi| {
        let gi = at_least_1d(gi.clone())?;
        softmax_backward_kernel(&gi, &grad_, &output_, dim_, log)
    })
}

/// TORCH_IMPL_FUNC(softmax_backward_cpu_out).
pub fn softmax_backward_cpu_out(
    _state: &mut (),
    grad_output: &Tensor,
    output: &Tensor,
    dim: i64,
    _input_dtype: ScalarType,
    grad_input: &Tensor,
) -> Result<()> {
    softmax_backward_impl(grad_output, output, dim, grad_input, false)
}

/// TORCH_IMPL_FUNC(log_softmax_backward_cpu_out).
pub fn log_softmax_backward_cpu_out(
    _state: &mut (),
    grad_output: &Tensor,
    output: &Tensor,
    dim: i64,
    _input_dtype: ScalarType,
    out: &Tensor,
) -> Result<()> {
    softmax_backward_impl(grad_output, output, dim, out, true)
}

/// `input` converted to `dtype` when one is given.
fn converted(input: &Tensor, dtype: Option<ScalarType>) -> Result<Tensor> {
    match dtype {
        Some(dt) if dt != input.dtype() => input.to_dtype(dt),
        _ => Ok(input.clone()),
    }
}

/// `softmax.int` (CompositeImplicitAutograd).
pub fn softmax(self_: &Tensor, dim: i64, dtype: Option<ScalarType>) -> Result<Tensor> {
    ops::_softmax::call(&converted(self_, dtype)?, dim, false)
}

/// `log_softmax.int` (CompositeImplicitAutograd).
pub fn log_softmax(self_: &Tensor, dim: i64, dtype: Option<ScalarType>) -> Result<Tensor> {
    ops::_log_softmax::call(&converted(self_, dtype)?, dim, false)
}

/// `softmax_out` and `log_softmax_out`: into a contiguous `out` directly, else through a
/// temporary (torch's `softmax_out`).
fn softmax_out_impl<'a>(
    self_: &Tensor,
    dim: i64,
    dtype: Option<ScalarType>,
    out: &'a Tensor,
    log: bool,
) -> Result<&'a Tensor> {
    let input = converted(self_, dtype)?;
    if out.is_contiguous() {
        if log {
            ops::_log_softmax_out::call(&input, dim, false, out)?;
        } else {
            ops::_softmax_out::call(&input, dim, false, out)?;
        }
    } else {
        let tmp = if log {
            ops::_log_softmax::call(&input, dim, false)?
        } else {
            ops::_softmax::call(&input, dim, false)?
        };
        out.resize_(tmp.sizes().as_slice())?;
        out.copy_(&tmp)?;
    }
    Ok(out)
}

/// `softmax.int_out` (CompositeExplicitAutograd).
pub fn softmax_out<'a>(
    self_: &Tensor,
    dim: i64,
    dtype: Option<ScalarType>,
    out: &'a Tensor,
) -> Result<&'a Tensor> {
    softmax_out_impl(self_, dim, dtype, out, false)
}

/// `log_softmax.int_out` (CompositeExplicitAutograd).
pub fn log_softmax_out<'a>(
    self_: &Tensor,
    dim: i64,
    dtype: Option<ScalarType>,
    out: &'a Tensor,
) -> Result<&'a Tensor> {
    softmax_out_impl(self_, dim, dtype, out, true)
}
