//! searchsorted and bucketize (ATen's `Bucketization.cpp` and `BucketizationUtils.h`): the
//! position of each value in sorted boundaries, numpy's `searchsorted` (`side='left'`: the
//! first position whose boundary is not below the value; `'right'`: not at most it) and TF's
//! `bucketize` (1-D boundaries). The binary search is `native/cpu/bucketization_kernels.rs`.
//!
//! Note [searchsorted on meta]
//! PyTorch's Meta kernels for these are Python functions (`torch/_meta_registrations.py`) that
//! check less than the CPU kernels: searchsorted only the boundaries' leading sizes, the
//! sorter's shape and `side` against `right`; bucketize nothing. Their `out=` wrapper resizes
//! `out`, then refuses another device or a dtype the result cannot be cast to safely. The
//! kernels here are registered for Meta too and follow that path when a tensor is meta.

use std::sync::atomic::{AtomicBool, Ordering};

use ratten_core::{Error, Result, Scalar, ScalarType};

use crate::native::cpu::bucketization_kernels::searchsorted_kernel;
use crate::native::type_properties::{
    can_cast, result_type_of_state, update_result_type_state, ResultTypeState,
};
use crate::structured::{resize_output, warn};
use crate::Tensor;

/// The dtype of the positions: int32 when `out_int32`, else int64.
fn position_dtype(out_int32: bool) -> ScalarType {
    if out_int32 {
        ScalarType::Int
    } else {
        ScalarType::Long
    }
}

/// The functional forms' result before the out= kernel resizes it: empty, contiguous, of the
/// positions' dtype on `self_`'s device.
fn fresh_positions(self_: &Tensor, out_int32: bool) -> Result<Tensor> {
    Tensor::empty(&[0], (position_dtype(out_int32), self_.device()))
}

/// `searchsorted_scalar_tensor`: a number as a 0-dim wrapped-number tensor, so that it
/// promotes with the boundaries as a number does in a binary op.
fn scalar_tensor(value: &Scalar, device: ratten_core::Device) -> Result<Tensor> {
    Tensor::wrapped_scalar_tensor(*value, device)
}

fn fmt_sizes(t: &Tensor) -> String {
    format!("{:?}", t.sizes())
}

/// `searchsorted_dims_matched_before_last_dim`.
fn dims_matched_before_last_dim(boundaries: &Tensor, input: &Tensor) -> bool {
    let (bd, inp) = (boundaries.sizes(), input.sizes());
    bd.len() == inp.len() && !bd.is_empty() && bd[..bd.len() - 1] == inp[..inp.len() - 1]
}

/// `searchsorted_pre_check`, in PyTorch's order.
#[allow(clippy::too_many_arguments)]
fn pre_check(
    boundaries: &Tensor,
    input: &Tensor,
    output: &Tensor,
    out_int32: bool,
    right: bool,
    side: Option<&str>,
    sorter: Option<&Tensor>,
) -> Result<()> {
    if let Some(side) = side {
        if side != "left" && side != "right" {
            return Err(Error::runtime(format!(
                "torch.searchsorted(): side can only be 'left' or 'right' but got {side}"
            )));
        }
        if right && side != "right" {
            return Err(Error::runtime(format!(
                "torch.searchsorted(): side and right can't be set to opposites, got side of {side} while right was True"
            )));
        }
    }
    if boundaries.device() != input.device() {
        return Err(Error::runtime(format!(
            "torch.searchsorted(): boundaries and input value tensors should have same device type, but got boundaries tensor device type {} and input value tensor device type {}",
            boundaries.device(),
            input.device()
        )));
    }
    if let Some(sorter) = sorter {
        if sorter.device() != boundaries.device() {
            return Err(Error::runtime(format!(
                "torch.searchsorted(): sorter and boundary tensors should have same device type, but got sorter tensor device type {} and input value tensor device type {}",
                sorter.device(),
                boundaries.device()
            )));
        }
        if sorter.sizes() != boundaries.sizes() {
            return Err(Error::runtime(format!(
                "torch.searchsorted(): boundary and sorter must have the same size, but got boundary tensor {}and got sorter tensor {}",
                fmt_sizes(boundaries),
                fmt_sizes(sorter)
            )));
        }
        if sorter.dtype() != ScalarType::Long {
            return Err(Error::runtime(format!(
                "torch.searchsorted(): sorter must be a tensor of long dtype but got dtype {}",
                sorter.dtype()
            )));
        }
        if sorter.numel() > 0 {
            let values = sorter.contiguous()?.to_vec::<i64>()?;
            let row = sorter.sizes().last().copied().unwrap_or(1);
            if values.iter().any(|&v| v < 0 || v >= row) {
                return Err(Error::runtime(
                    "torch.searchsorted(): sorter index out of range",
                ));
            }
        }
    }
    if !(input.dim() > 0 || (input.numel() == 1 && boundaries.dim() == 1)) {
        return Err(Error::runtime(format!(
            "torch.searchsorted(): input value can be a scalar only when boundaries tensor dimension is 1, but we got boundaries tensor dim({}) and input value's dim({}) numel({})",
            boundaries.dim(),
            input.dim(),
            input.numel()
        )));
    }
    if boundaries.dim() == 0 {
        return Err(Error::runtime(
            "torch.searchsorted(): boundaries tensor should have positive dimension, but got 0 dimension",
        ));
    }
    if boundaries.dim() != 1 && !dims_matched_before_last_dim(boundaries, input) {
        return Err(dims_mismatch(boundaries, input));
    }
    let output_dtype = output.dtype();
    if output_dtype != position_dtype(out_int32) {
        return Err(Error::runtime(format!(
            "torch.searchsorted(): output tensor's dtype is wrong, it can only be Int(int32) or Long(int64) depending on whether out_int32 flag is True, but we got output tensor's dtype {output_dtype} and out_int32 flag is {}",
            if out_int32 { "True" } else { "False" }
        )));
    }
    if out_int32 {
        let last = boundaries.sizes().last().copied().unwrap_or(0);
        if last >= i32::MAX as i64 {
            return Err(Error::runtime(format!(
                "torch.searchsorted(): the size of boundaries' last dimension should be less than {}, but we got {last}",
                i32::MAX
            )));
        }
    }
    Ok(())
}

fn dims_mismatch(boundaries: &Tensor, input: &Tensor) -> Error {
    Error::runtime(format!(
        "torch.searchsorted(): boundaries tensor should be 1 dimension or the first N-1 dimensions of boundaries tensor and input value tensor must match, but we got boundaries tensor {} and input value tensor {}",
        fmt_sizes(boundaries),
        fmt_sizes(input)
    ))
}

/// Warns once per process, as `TORCH_WARN_ONCE`.
fn warn_once(flag: &AtomicBool, message: &str) {
    if !flag.swap(true, Ordering::Relaxed) {
        warn(message);
    }
}

static WARNED_INPUT: AtomicBool = AtomicBool::new(false);
static WARNED_BOUNDARY: AtomicBool = AtomicBool::new(false);
static WARNED_SORTER: AtomicBool = AtomicBool::new(false);

/// `searchsorted_maybe_trim_input_tensors`: contiguous copies of the operands that are not
/// (with torch's one-time warnings), and input and boundaries in their common dtype.
fn trim_inputs(
    input: &Tensor,
    boundaries: &Tensor,
    sorter: Option<&Tensor>,
) -> Result<(Tensor, Tensor, Option<Tensor>)> {
    let mut input_t = input.clone();
    let mut boundaries_t = boundaries.clone();
    let mut sorter_t = sorter.cloned();
    if !input.is_contiguous() {
        warn_once(&WARNED_INPUT, "torch.searchsorted(): input value tensor is non-contiguous, this will lower the performance due to extra data copy when converting non-contiguous tensor to contiguous, please use contiguous input value tensor if possible. This message will only appear once per program.");
        input_t = input.contiguous()?;
    }
    if !boundaries.is_contiguous() {
        warn_once(&WARNED_BOUNDARY, "torch.searchsorted(): boundary tensor is non-contiguous, this will lower the performance due to extra data copy when converting non-contiguous tensor to contiguous, please use contiguous boundary tensor if possible. This message will only appear once per program.");
        boundaries_t = boundaries.contiguous()?;
    }
    if let Some(s) = sorter.filter(|s| !s.is_contiguous()) {
        warn_once(&WARNED_SORTER, "torch.searchsorted(): sorter tensor is non-contiguous, this will lower the performance due to extra data copy when converting non-contiguous tensor to contiguous, please use contiguous sorter tensor if possible. This message will only appear once per program.");
        sorter_t = Some(s.contiguous()?);
    }
    if input.dtype() != boundaries.dtype() {
        let mut state = ResultTypeState::default();
        update_result_type_state(boundaries.base(), &mut state)?;
        update_result_type_state(input.base(), &mut state)?;
        let common = result_type_of_state(&state)?.unwrap_or(boundaries.dtype());
        if common != input.dtype() {
            input_t = input_t.to_dtype(common)?;
        }
        if common != boundaries.dtype() {
            boundaries_t = boundaries_t.to_dtype(common)?;
        }
    }
    Ok((input_t, boundaries_t, sorter_t))
}

/// The Python meta's `out=` wrapper (`_maybe_resize_out`, `_safe_copy_out`): `out` takes the
/// result's shape, on the result's device, in a dtype the result casts to safely.
fn meta_out(
    out: &Tensor,
    shape: &[i64],
    dtype: ScalarType,
    device: ratten_core::Device,
) -> Result<()> {
    resize_output(out, shape)?;
    if out.device() != device {
        return Err(Error::runtime(format!(
            "Attempting to copy from device {device} to device {}, but cross-device copies are not allowed!",
            out.device()
        )));
    }
    if !can_cast(dtype, out.dtype()) {
        return Err(Error::runtime(format!(
            "Attempting to cast from torch.{} to out tensor with dtype torch.{}, but this can't be cast because it is not safe!",
            dtype.python_name(),
            out.dtype().python_name()
        )));
    }
    Ok(())
}

/// `meta_searchsorted` (Note [searchsorted on meta]).
fn searchsorted_meta(
    sorted_sequence: &Tensor,
    self_: &Tensor,
    out_int32: bool,
    right: bool,
    side: Option<&str>,
    sorter: Option<&Tensor>,
    result: &Tensor,
) -> Result<()> {
    let (bd, inp) = (sorted_sequence.sizes(), self_.sizes());
    let leading = |s: &[i64]| s[..s.len().saturating_sub(1)].to_vec();
    if bd.len() > 1 && leading(&bd) != leading(&inp) {
        return Err(dims_mismatch(sorted_sequence, self_));
    }
    if let Some(s) = sorter.filter(|s| s.sizes() != bd) {
        return Err(Error::runtime(format!(
            "torch.searchsorted(): boundary and sorter must have the same size, but got boundary tensor {} and got sorter tensor {}",
            fmt_sizes(sorted_sequence),
            fmt_sizes(s)
        )));
    }
    if side == Some("left") && right {
        return Err(Error::runtime(
            "torch.searchsorted(): side and right can't be set to opposites, got side of left while right was True",
        ));
    }
    meta_out(result, &inp, position_dtype(out_int32), self_.device())
}

/// `searchsorted_out_cpu` (also the Meta kernel, Note [searchsorted on meta]): the position of
/// each element of `self_` in the last dim of `sorted_sequence`. A non-contiguous `result` is
/// computed in a contiguous copy and copied back.
#[allow(clippy::too_many_arguments)]
pub fn searchsorted_out_cpu<'a>(
    sorted_sequence: &Tensor,
    self_: &Tensor,
    out_int32: bool,
    right: bool,
    side: Option<&str>,
    sorter: Option<&Tensor>,
    result: &'a Tensor,
) -> Result<&'a Tensor> {
    let any_meta = sorted_sequence.is_meta()
        || self_.is_meta()
        || result.is_meta()
        || sorter.is_some_and(|s| s.is_meta());
    if any_meta {
        searchsorted_meta(
            sorted_sequence,
            self_,
            out_int32,
            right,
            side,
            sorter,
            result,
        )?;
        return Ok(result);
    }
    pre_check(
        sorted_sequence,
        self_,
        result,
        out_int32,
        right,
        side,
        sorter,
    )?;
    resize_output(result, &self_.sizes())?;
    // pre_check refused a `side` other than "left" / "right", and `right` against "left".
    let is_right = side.map_or(right, |s| s == "right");
    if self_.numel() == 0 {
        return Ok(result);
    }
    let out = if result.is_contiguous() {
        result.clone()
    } else {
        result.contiguous()?
    };
    let (input, boundaries, sorter) = trim_inputs(self_, sorted_sequence, sorter)?;
    searchsorted_kernel(&out, &input, &boundaries, is_right, sorter.as_ref())?;
    if !out.is_same(result) {
        result.copy_(&out)?;
    }
    Ok(result)
}

/// `searchsorted_cpu`: into a fresh contiguous int32 / int64 tensor of `self_`'s shape.
pub fn searchsorted_cpu(
    sorted_sequence: &Tensor,
    self_: &Tensor,
    out_int32: bool,
    right: bool,
    side: Option<&str>,
    sorter: Option<&Tensor>,
) -> Result<Tensor> {
    let result = fresh_positions(self_, out_int32)?;
    searchsorted_out_cpu(
        sorted_sequence,
        self_,
        out_int32,
        right,
        side,
        sorter,
        &result,
    )?;
    Ok(result)
}

/// `searchsorted.Scalar`: the number as a wrapped 0-dim tensor on the boundaries' device.
pub fn searchsorted_cpu_scalar(
    sorted_sequence: &Tensor,
    self_: &Scalar,
    out_int32: bool,
    right: bool,
    side: Option<&str>,
    sorter: Option<&Tensor>,
) -> Result<Tensor> {
    let value = scalar_tensor(self_, sorted_sequence.device())?;
    searchsorted_cpu(sorted_sequence, &value, out_int32, right, side, sorter)
}

/// `searchsorted.Scalar_out`.
#[allow(clippy::too_many_arguments)]
pub fn searchsorted_out_cpu_scalar<'a>(
    sorted_sequence: &Tensor,
    self_: &Scalar,
    out_int32: bool,
    right: bool,
    side: Option<&str>,
    sorter: Option<&Tensor>,
    result: &'a Tensor,
) -> Result<&'a Tensor> {
    let value = scalar_tensor(self_, sorted_sequence.device())?;
    searchsorted_out_cpu(
        sorted_sequence,
        &value,
        out_int32,
        right,
        side,
        sorter,
        result,
    )
}

/// `bucketize_out_cpu`: searchsorted over 1-D `boundaries`. On meta (`meta_bucketize`) nothing
/// is checked.
pub fn bucketize_out_cpu<'a>(
    self_: &Tensor,
    boundaries: &Tensor,
    out_int32: bool,
    right: bool,
    result: &'a Tensor,
) -> Result<&'a Tensor> {
    if self_.is_meta() || boundaries.is_meta() || result.is_meta() {
        meta_out(
            result,
            &self_.sizes(),
            position_dtype(out_int32),
            self_.device(),
        )?;
        return Ok(result);
    }
    if boundaries.dim() != 1 {
        return Err(Error::runtime(format!(
            "boundaries tensor must be 1 dimension, but got dim({})",
            boundaries.dim()
        )));
    }
    searchsorted_out_cpu(boundaries, self_, out_int32, right, None, None, result)
}

/// `bucketize_cpu`: into a fresh contiguous int32 / int64 tensor of `self_`'s shape.
pub fn bucketize_cpu(
    self_: &Tensor,
    boundaries: &Tensor,
    out_int32: bool,
    right: bool,
) -> Result<Tensor> {
    let result = fresh_positions(self_, out_int32)?;
    bucketize_out_cpu(self_, boundaries, out_int32, right, &result)?;
    Ok(result)
}

/// `bucketize.Scalar`: the number as a wrapped 0-dim tensor on the boundaries' device.
pub fn bucketize_cpu_scalar(
    self_: &Scalar,
    boundaries: &Tensor,
    out_int32: bool,
    right: bool,
) -> Result<Tensor> {
    let value = scalar_tensor(self_, boundaries.device())?;
    bucketize_cpu(&value, boundaries, out_int32, right)
}
