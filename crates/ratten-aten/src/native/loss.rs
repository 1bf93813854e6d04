//! The losses (ATen's LossNLL.cpp, LossNLL2d.cpp and Loss.cpp): nll_loss (structured
//! forward and backward) and nll_loss2d over one kernel (`native::cpu::loss_kernels`), the
//! compositions PyTorch writes over them (nll_loss, nll_loss_nd, cross_entropy_loss with
//! class indices, class probabilities and label smoothing), and the pointwise losses (mse,
//! l1, smooth_l1, huber, binary_cross_entropy with and without logits, kl_div) with their
//! backward operators.
//!
//! The pointwise losses and their backward ops are compositions of ratten's operators
//! registered as CompositeExplicitAutograd (PyTorch gives them CPU TensorIterator kernels):
//! their derivatives still come from derivatives.yaml, and they work on every backend the
//! operators they compose do, Meta included.

use ratten_core::type_promotion::can_cast;
use ratten_core::{Error, Result, Scalar, ScalarType, TensorOptions};

use crate::functions as F;
use crate::generated::operators as ops;
use crate::native::cpu::elements::not_implemented;
use crate::native::cpu::loss_kernels::{
    nll_loss_backward_kernel, nll_loss_forward_kernel, NllShape, REDUCTION_MEAN, REDUCTION_NONE,
    REDUCTION_SUM,
};
use crate::native::type_properties::result_type;
use crate::structured::{resize_output, with_contiguous_output, MetaBase};
use crate::Tensor;

fn options_of(t: &Tensor) -> TensorOptions {
    TensorOptions::new().dtype(t.dtype()).device(t.device())
}

fn sizes_str(t: &Tensor) -> String {
    format!("{:?}", t.sizes().as_slice())
}

/// `apply_loss_reduction`: the loss itself, its mean or its sum.
pub fn apply_loss_reduction(loss: &Tensor, reduction: i64) -> Result<Tensor> {
    match reduction {
        REDUCTION_MEAN => F::mean(loss),
        REDUCTION_SUM => F::sum(loss),
        _ => Ok(loss.clone()),
    }
}

/// Writes `result` into `out` as an out= variant does: resized, with torch's refusal of a
/// result that cannot be cast to `out`'s dtype.
fn write_out<'a>(result: &Tensor, out: &'a Tensor) -> Result<&'a Tensor> {
    if !can_cast(result.dtype(), out.dtype()) {
        return Err(Error::runtime(format!(
            "result type {} can't be cast to the desired output type {}",
            result.dtype(),
            out.dtype()
        )));
    }
    resize_output(out, result.sizes().as_slice())?;
    out.copy_(result)?;
    Ok(out)
}

// ---------------------------------------------------------------------------------------------
// nll_loss

fn check_target_dtype(target: &Tensor) -> Result<()> {
    match target.dtype() {
        ScalarType::Long | ScalarType::Byte => Ok(()),
        dt => Err(Error::runtime(format!(
            "expected target dtype to be Long or Byte, but got {dt}"
        ))),
    }
}

/// The checks nll_loss's forward and backward metas share.
fn check_nll_inputs(self_: &Tensor, target: &Tensor) -> Result<()> {
    if self_.dim() == 0 || self_.dim() > 2 {
        return Err(Error::runtime("input tensor should be 1D or 2D"));
    }
    if target.dim() > 1 {
        return Err(Error::runtime(
            "0D or 1D target tensor expected, multi-target not supported",
        ));
    }
    check_target_dtype(target)?;
    let no_batch_dim = self_.dim() == 1 && target.dim() == 0;
    if !(no_batch_dim || self_.sizes()[0] == target.sizes()[0]) {
        return Err(Error::runtime(format!(
            "size mismatch (got input: {}, target: {})",
            sizes_str(self_),
            sizes_str(target)
        )));
    }
    Ok(())
}

/// TORCH_META_FUNC(nll_loss_forward).
pub fn nll_loss_forward_meta(
    m: &dyn MetaBase,
    self_: &Tensor,
    target: &Tensor,
    weight: Option<&Tensor>,
    reduction: i64,
    _ignore_index: i64,
) -> Result<()> {
    check_nll_inputs(self_, target)?;
    if self_.dim() == 1 && target.dim() == 1 {
        return Err(Error::runtime(format!(
            "Expected target to be 0D when input is 1D, but got target.dim ={}",
            target.dim()
        )));
    }
    let n_classes = self_.sizes()[self_.dim() - 1];
    if let Some(w) = weight {
        if !(w.dim() == 1 && w.numel() == n_classes) {
            return Err(Error::runtime(format!(
                "weight tensor should be defined either for all {n_classes} classes or no \
                 classes but got weight tensor of shape: {}",
                sizes_str(w)
            )));
        }
    }
    if reduction == REDUCTION_NONE && self_.dim() == 2 {
        m.set_output_raw_strided(0, &[self_.sizes()[0]], &[], options_of(self_))?;
    } else {
        m.set_output_raw_strided(0, &[], &[], options_of(self_))?;
    }
    m.set_output_raw_strided(1, &[], &[], options_of(self_))
}

/// The `[batch, classes, 1]` geometry of a 1-D or 2-D nll_loss input, and the reduction its
/// kernel runs (a 1-D input with reduction none is one element: torch's scalar path).
fn nll_shape(self_: &Tensor, reduction: i64) -> (NllShape, i64) {
    let (batch, classes) = if self_.dim() == 1 {
        (1, self_.sizes()[0])
    } else {
        (self_.sizes()[0], self_.sizes()[1])
    };
    let reduction = if self_.dim() == 1 && reduction == REDUCTION_NONE {
        REDUCTION_SUM
    } else {
        reduction
    };
    (
        NllShape {
            batch: batch as usize,
            classes: classes as usize,
            spatial: 1,
        },
        reduction,
    )
}

fn contiguous_opt(t: Option<&Tensor>) -> Result<Option<Tensor>> {
    t.map(|w| w.contiguous()).transpose()
}

/// TORCH_IMPL_FUNC(nll_loss_forward_out_cpu).
#[allow(clippy::too_many_arguments)]
pub fn nll_loss_forward_out_cpu(
    _state: &mut (),
    self_: &Tensor,
    target: &Tensor,
    weight: Option<&Tensor>,
    reduction: i64,
    ignore_index: i64,
    output: &Tensor,
    total_weight: &Tensor,
) -> Result<()> {
    if self_.is_meta() {
        return Ok(());
    }
    let (shape, red) = nll_shape(self_, reduction);
    let weight = contiguous_opt(weight)?;
    nll_loss_forward_kernel(
        "nll_loss_out_frame",
        output,
        total_weight,
        &self_.contiguous()?,
        &target.contiguous()?,
        weight.as_ref(),
        red,
        ignore_index,
        shape,
    )
}

/// TORCH_META_FUNC(nll_loss_backward).
#[allow(clippy::too_many_arguments)]
pub fn nll_loss_backward_meta(
    m: &dyn MetaBase,
    grad_output: &Tensor,
    self_: &Tensor,
    target: &Tensor,
    weight: Option<&Tensor>,
    reduction: i64,
    _ignore_index: i64,
    total_weight: &Tensor,
) -> Result<()> {
    check_nll_inputs(self_, target)?;
    if total_weight.numel() != 1 {
        return Err(Error::runtime(format!(
            "expected total_weight to be a  single element tensor, got: {} ({} elements)",
            sizes_str(total_weight),
            total_weight.numel()
        )));
    }
    if let Some(w) = weight {
        if w.numel() != self_.sizes()[self_.dim() - 1] {
            return Err(Error::runtime(
                "weight tensor should be defined either for all or no classes",
            ));
        }
    }
    if reduction == REDUCTION_NONE && self_.dim() == 2 {
        let batch = self_.sizes()[0];
        if grad_output.dim() != 1 || grad_output.sizes()[0] != batch {
            return Err(Error::runtime(format!(
                "Expected a tensor of dimension 1 and tensor.size[0] == {batch} but got: \
                 dimension {} and tensor.size[0] == {}",
                grad_output.dim(),
                grad_output.sizes().first().copied().unwrap_or(1)
            )));
        }
    } else if !(grad_output.dim() <= 1 && grad_output.numel() == 1) {
        return Err(Error::runtime(format!(
            "Expected a single element grad_output tensor, but got: {}",
            sizes_str(grad_output)
        )));
    }
    m.set_output_raw_strided(0, self_.sizes().as_slice(), &[], options_of(self_))
}

/// TORCH_IMPL_FUNC(nll_loss_backward_out_cpu).
#[allow(clippy::too_many_arguments)]
pub fn nll_loss_backward_out_cpu(
    _state: &mut (),
    grad_output: &Tensor,
    self_: &Tensor,
    target: &Tensor,
    weight: Option<&Tensor>,
    reduction: i64,
    ignore_index: i64,
    total_weight: &Tensor,
    grad_input: &Tensor,
) -> Result<()> {
    if self_.is_meta() {
        return Ok(());
    }
    let (shape, red) = nll_shape(self_, reduction);
    let weight = contiguous_opt(weight)?;
    with_contiguous_output(grad_input, |gi| {
        nll_loss_backward_kernel(
            "nll_loss_backward_out_frame",
            gi,
            &grad_output.contiguous()?,
            &target.contiguous()?,
            weight.as_ref(),
            red,
            ignore_index,
            &total_weight.contiguous()?,
            shape,
        )
    })
}

/// `nll_loss` (CompositeImplicitAutograd).
pub fn nll_loss_symint(
    self_: &Tensor,
    target: &Tensor,
    weight: Option<&Tensor>,
    reduction: i64,
    ignore_index: i64,
) -> Result<Tensor> {
    Ok(ops::nll_loss_forward::call(self_, target, weight, reduction, ignore_index)?.0)
}

/// `nll_loss.out` (CompositeImplicitAutograd).
pub fn nll_loss_out<'a>(
    self_: &Tensor,
    target: &Tensor,
    weight: Option<&Tensor>,
    reduction: i64,
    ignore_index: i64,
    out: &'a Tensor,
) -> Result<&'a Tensor> {
    let total_weight = Tensor::empty(&[0], (self_.dtype(), self_.device()))?;
    ops::nll_loss_forward_output::call(
        self_,
        target,
        weight,
        reduction,
        ignore_index,
        out,
        &total_weight,
    )?;
    Ok(out)
}

/// `nll_loss_nd` (CompositeImplicitAutograd): 1-D and 2-D inputs to nll_loss, 4-D to
/// nll_loss2d, the others reshaped to 4-D.
pub fn nll_loss_nd_symint(
    self_: &Tensor,
    target: &Tensor,
    weight: Option<&Tensor>,
    reduction: i64,
    ignore_index: i64,
) -> Result<Tensor> {
    if self_.dim() < 1 {
        return Err(Error::value(format!(
            "Expected 1 or more dimensions (got {})",
            self_.dim()
        )));
    }
    if self_.dim() != 1 && target.dim() >= 1 && self_.sizes()[0] != target.sizes()[0]
        || self_.dim() != 1 && target.dim() == 0
    {
        let tb = target.sizes().first().copied().unwrap_or(1);
        return Err(Error::value(format!(
            "Expected input batch_size ({}) to match target batch_size ({tb}).",
            self_.sizes()[0]
        )));
    }
    match self_.dim() {
        1 | 2 => ops::nll_loss::call(self_, target, weight, reduction, ignore_index),
        4 => ops::nll_loss2d::call(self_, target, weight, reduction, ignore_index),
        _ => {
            let (n, c) = (self_.sizes()[0], self_.sizes()[1]);
            let mut out_size = vec![n];
            out_size.extend_from_slice(&self_.sizes()[2..]);
            if target.sizes().get(1..) != Some(&self_.sizes()[2..]) {
                return Err(Error::runtime(format!(
                    "Expected target size {:?}, got {}",
                    out_size,
                    sizes_str(target)
                )));
            }
            let (input_, target_) = (self_.contiguous()?, target.contiguous()?);
            let input_ = if input_.numel() > 0 {
                input_.view(&[n, c, 1, -1])?
            } else {
                input_.view(&[n, c, 0, 0])?
            };
            let target_ = if target_.numel() > 0 {
                target_.view(&[n, 1, -1])?
            } else {
                target_.view(&[n, 0, 0])?
            };
            let out = ops::nll_loss2d::call(&input_, &target_, weight, reduction, ignore_index)?;
            if reduction == REDUCTION_NONE {
                out.view(&out_size)
            } else {
                Ok(out)
            }
        }
    }
}

// ---------------------------------------------------------------------------------------------
// nll_loss2d

/// `check_inputs_nll_loss2d`.
fn check_nll_loss2d_inputs(self_: &Tensor, target: &Tensor, weight: Option<&Tensor>) -> Result<()> {
    if target.dim() != 3 {
        return Err(Error::runtime(format!(
            "only batches of spatial targets supported (3D tensors) but got targets of \
             dimension: {}",
            target.dim()
        )));
    }
    if self_.dim() != 4 {
        return Err(Error::runtime(format!(
            "only batches of spatial inputs supported (4D tensors), but got input of dimension: \
             {}",
            self_.dim()
        )));
    }
    check_target_dtype(target)?;
    if let Some(w) = weight {
        if w.numel() != self_.sizes()[1] {
            return Err(Error::runtime(
                "weight tensor should be defined either for all or no classes",
            ));
        }
    }
    let (i, t) = (self_.sizes(), target.sizes());
    if !(i[0] == t[0] && i[2] == t[1] && i[3] == t[2]) {
        return Err(Error::runtime(format!(
            "size mismatch (got input: {} , target: {}",
            sizes_str(self_),
            sizes_str(target)
        )));
    }
    Ok(())
}

fn nll2d_shape(self_: &Tensor) -> NllShape {
    let s = self_.sizes();
    NllShape {
        batch: s[0] as usize,
        classes: s[1] as usize,
        spatial: (s[2] * s[3]) as usize,
    }
}

/// `nll_loss2d_forward.output` (CPU; Meta computes the shapes only).
pub fn nll_loss2d_forward_out_cpu(
    self_: &Tensor,
    target: &Tensor,
    weight: Option<&Tensor>,
    reduction: i64,
    ignore_index: i64,
    output: &Tensor,
    total_weight: &Tensor,
) -> Result<(Tensor, Tensor)> {
    check_nll_loss2d_inputs(self_, target, weight)?;
    if reduction == REDUCTION_NONE {
        resize_output(output, target.sizes().as_slice())?;
    } else {
        resize_output(output, &[])?;
    }
    resize_output(total_weight, &[])?;
    if self_.is_meta() {
        return Ok((output.clone(), total_weight.clone()));
    }
    let weight = contiguous_opt(weight)?;
    with_contiguous_output(output, |out| {
        nll_loss_forward_kernel(
            "nll_loss2d_forward_out_frame",
            out,
            total_weight,
            &self_.contiguous()?,
            &target.contiguous()?,
            weight.as_ref(),
            reduction,
            ignore_index,
            nll2d_shape(self_),
        )
    })?;
    Ok((output.clone(), total_weight.clone()))
}

/// `nll_loss2d_forward`.
pub fn nll_loss2d_forward_cpu(
    self_: &Tensor,
    target: &Tensor,
    weight: Option<&Tensor>,
    reduction: i64,
    ignore_index: i64,
) -> Result<(Tensor, Tensor)> {
    let output = Tensor::empty(&[0], options_of(self_))?;
    let total_weight = Tensor::empty(&[0], options_of(self_))?;
    nll_loss2d_forward_out_cpu(
        self_,
        target,
        weight,
        reduction,
        ignore_index,
        &output,
        &total_weight,
    )?;
    Ok((output, total_weight))
}

/// `nll_loss2d_backward.grad_input`.
#[allow(clippy::too_many_arguments)]
pub fn nll_loss2d_backward_out_cpu<'a>(
    grad_output: &Tensor,
    self_: &Tensor,
    target: &Tensor,
    weight: Option<&Tensor>,
    reduction: i64,
    ignore_index: i64,
    total_weight: &Tensor,
    grad_input: &'a Tensor,
) -> Result<&'a Tensor> {
    check_nll_loss2d_inputs(self_, target, weight)?;
    if total_weight.numel() != 1 {
        return Err(Error::runtime(format!(
            "expected total_weight to be a single element tensor, got: {} ({} elements)",
            sizes_str(total_weight),
            total_weight.numel()
        )));
    }
    if reduction == REDUCTION_NONE {
        if grad_output.sizes() != target.sizes() {
            return Err(Error::runtime(format!(
                "grad_output must have same dimension as target: {} but got {}",
                sizes_str(target),
                sizes_str(grad_output)
            )));
        }
    } else if !(grad_output.dim() <= 1 && grad_output.numel() == 1) {
        return Err(Error::runtime(format!(
            "Expected a single element grad_output tensor, but got: {}",
            sizes_str(grad_output)
        )));
    }
    resize_output(grad_input, self_.sizes().as_slice())?;
    if self_.is_meta() {
        return Ok(grad_input);
    }
    let weight = contiguous_opt(weight)?;
    with_contiguous_output(grad_input, |gi| {
        nll_loss_backward_kernel(
            "nll_loss2d_backward_out_frame",
            gi,
            &grad_output.contiguous()?,
            &target.contiguous()?,
            weight.as_ref(),
            reduction,
            ignore_index,
            &total_weight.contiguous()?,
            nll2d_shape(self_),
        )
    })?;
    Ok(grad_input)
}

/// `nll_loss2d_backward`.
#[allow(clippy::too_many_arguments)]
pub fn nll_loss2d_backward_cpu(
    grad_output: &Tensor,
    self_: &Tensor,
    target: &Tensor,
    weight: Option<&Tensor>,
    reduction: i64,
    ignore_index: i64,
    total_weight: &Tensor,
) -> Result<Tensor> {
    let grad_input = Tensor::empty(&[0], options_of(self_))?;
    nll_loss2d_backward_out_cpu(
        grad_output,
        self_,
        target,
        weight,
        reduction,
        ignore_index,
        total_weight,
        &grad_input,
    )?;
    Ok(grad_input)
}

/// `nll_loss2d` (CompositeImplicitAutograd).
pub fn nll_loss2d_symint(
    self_: &Tensor,
    target: &Tensor,
    weight: Option<&Tensor>,
    reduction: i64,
    ignore_index: i64,
) -> Result<Tensor> {
    Ok(ops::nll_loss2d_forward::call(self_, target, weight, reduction, ignore_index)?.0)
}

/// `nll_loss2d.out` (CompositeImplicitAutograd).
pub fn nll_loss2d_out<'a>(
    self_: &Tensor,
    target: &Tensor,
    weight: Option<&Tensor>,
    reduction: i64,
    ignore_index: i64,
    out: &'a Tensor,
) -> Result<&'a Tensor> {
    let total_weight = Tensor::empty(&[0], options_of(self_))?;
    ops::nll_loss2d_forward_output::call(
        self_,
        target,
        weight,
        reduction,
        ignore_index,
        out,
        &total_weight,
    )?;
    Ok(out)
}

// ---------------------------------------------------------------------------------------------
// cross_entropy

/// `weight` viewed to broadcast along dim 1 of an `ndim`-D input (`[1, C, 1, ...]`).
fn weight_along_classes(weight: &Tensor, ndim: usize, class_dim: usize) -> Result<Tensor> {
    if ndim <= 1 {
        return Ok(weight.clone());
    }
    let mut shape = vec![1; ndim];
    shape[class_dim] = weight.sizes()[0];
    weight.view(&shape)
}

fn invalid_reduction(reduction: i64) -> Error {
    Error::runtime(format!(
        "Invalid reduction type encountered in cross_entropy: {reduction}"
    ))
}

/// `cross_entropy_loss_prob_target`: targets as class probabilities.
fn cross_entropy_loss_prob_target(
    self_: &Tensor,
    target_: &Tensor,
    weight: Option<&Tensor>,
    reduction: i64,
    label_smoothing: f64,
) -> Result<Tensor> {
    let class_dim = if self_.dim() == 1 { 0 } else { 1 };
    let n_classes = self_.sizes()[class_dim];
    if let Some(w) = weight {
        if !(w.dim() == 1 && w.numel() == n_classes) {
            return Err(Error::runtime(format!(
                "cross_entropy: weight tensor should be defined either for all {n_classes} \
                 classes or no classes but got weight tensor of shape: {}",
                sizes_str(w)
            )));
        }
    }
    let input = ops::log_softmax_int::call(self_, class_dim as i64, Some(self_.dtype()))?;
    let target = if label_smoothing > 0.0 {
        if label_smoothing > 1.0 {
            return Err(smoothing_range(label_smoothing));
        }
        F::add_scalar(
            &F::mul_scalar(target_, 1.0 - label_smoothing)?,
            label_smoothing / n_classes as f64,
        )?
    } else {
        target_.clone()
    };
    let mut prod = F::mul(&input, &target)?;
    if let Some(w) = weight {
        prod = F::mul(&prod, &weight_along_classes(w, input.dim(), class_dim)?)?;
    }
    match reduction {
        REDUCTION_MEAN => {
            let total = F::neg(&F::sum(&prod)?)?;
            if input.numel() == 0 {
                F::fill_scalar(&total, f64::NAN)
            } else {
                F::div_scalar(&total, (input.numel() / n_classes) as f64)
            }
        }
        REDUCTION_SUM => F::neg(&F::sum(&prod)?),
        REDUCTION_NONE => F::neg(&F::sum_dim_int_list(&prod, Some(&[class_dim as i64]))?),
        r => Err(invalid_reduction(r)),
    }
}

fn smoothing_range(label_smoothing: f64) -> Error {
    Error::runtime(format!(
        "label_smoothing must be between 0.0 and 1.0. Got: {label_smoothing}"
    ))
}

/// `cross_entropy_loss_label_smoothing`: class indices with label smoothing.
fn cross_entropy_loss_label_smoothing(
    self_: &Tensor,
    target: &Tensor,
    weight: Option<&Tensor>,
    reduction: i64,
    ignore_index: i64,
    label_smoothing: f64,
) -> Result<Tensor> {
    let class_dim = if self_.dim() == 1 { 0 } else { 1 };
    let input = ops::log_softmax_int::call(self_, class_dim as i64, Some(self_.dtype()))?;
    let nllloss = ops::nll_loss_nd::call(&input, target, weight, reduction, ignore_index)?;
    let n_classes = input.sizes()[class_dim];
    let smooth_loss = match weight {
        Some(w) => F::neg(&F::sum_dim_int_list(
            &F::mul(&input, &weight_along_classes(w, input.dim(), class_dim)?)?,
            Some(&[class_dim as i64]),
        )?)?,
        None => F::neg(&F::sum_dim_int_list(&input, Some(&[class_dim as i64]))?)?,
    };
    let ignore_mask = F::eq_scalar(target, ignore_index)?;
    let smooth_loss = F::masked_fill_scalar(&smooth_loss, &ignore_mask, 0.0)?;
    let ret = match reduction {
        REDUCTION_MEAN => match weight {
            Some(w) => {
                let kept = F::masked_select(target, &F::logical_not(&ignore_mask)?)?;
                let weight_sum = F::sum(&F::gather(w, 0, &kept.flatten()?)?)?;
                F::div(&F::sum(&smooth_loss)?, &weight_sum)?
            }
            None => {
                let true_mask = F::logical_not(&ignore_mask)?;
                F::div(&F::sum(&smooth_loss)?, &F::sum(&true_mask)?)?
            }
        },
        REDUCTION_SUM => F::sum(&smooth_loss)?,
        REDUCTION_NONE => smooth_loss,
        r => return Err(invalid_reduction(r)),
    };
    F::add(
        &F::mul_scalar(&nllloss, 1.0 - label_smoothing)?,
        &F::mul_scalar(&ret, label_smoothing / n_classes as f64)?,
    )
}

/// `cross_entropy_loss` (CompositeImplicitAutograd): log_softmax over the class dim, then
/// nll_loss_nd; probability targets (the input's shape) and label smoothing as torch's.
pub fn cross_entropy_loss_symint(
    self_: &Tensor,
    target: &Tensor,
    weight: Option<&Tensor>,
    reduction: i64,
    ignore_index: i64,
    label_smoothing: f64,
) -> Result<Tensor> {
    if self_.sizes() == target.sizes() {
        if !target.dtype().is_floating_point() {
            return Err(Error::runtime(format!(
                "Expected floating point type for target with class probabilities, got {}",
                target.dtype()
            )));
        }
        if ignore_index >= 0 {
            return Err(Error::runtime(
                "ignore_index is not supported for floating point target",
            ));
        }
        return cross_entropy_loss_prob_target(self_, target, weight, reduction, label_smoothing);
    }
    if label_smoothing > 0.0 {
        if label_smoothing > 1.0 {
            return Err(smoothing_range(label_smoothing));
        }
        return cross_entropy_loss_label_smoothing(
            self_,
            target,
            weight,
            reduction,
            ignore_index,
            label_smoothing,
        );
    }
    let class_dim = if self_.dim() == 1 { 0 } else { 1 };
    ops::nll_loss_nd::call(
        &ops::log_softmax_int::call(self_, class_dim, Some(self_.dtype()))?,
        target,
        weight,
        reduction,
        ignore_index,
    )
}

// ---------------------------------------------------------------------------------------------
// The pointwise losses

/// The dtype a pointwise loss computes in, refused with torch's text unless floating
/// (`name` is the CPU kernel torch names).
fn floating_result(name: &str, self_: &Tensor, target: &Tensor) -> Result<ScalarType> {
    let dt = result_type(self_.base(), target.base())?;
    if dt.is_floating_point() {
        Ok(dt)
    } else {
        Err(not_implemented(name, dt))
    }
}

/// `mse_loss` (structured in PyTorch).
pub fn mse_loss(self_: &Tensor, target: &Tensor, reduction: i64) -> Result<Tensor> {
    floating_result("mse_cpu", self_, target)?;
    let d = F::sub(self_, target)?;
    apply_loss_reduction(&F::mul(&d, &d)?, reduction)
}

/// `mse_loss.out`.
pub fn mse_loss_out<'a>(
    self_: &Tensor,
    target: &Tensor,
    reduction: i64,
    out: &'a Tensor,
) -> Result<&'a Tensor> {
    write_out(&mse_loss(self_, target, reduction)?, out)
}

/// `Mean`'s scale of a backward: `1 / numel` (or `2 / numel` for mse), else 1 (2).
fn norm(numerator: f64, self_: &Tensor, reduction: i64) -> f64 {
    if reduction == REDUCTION_MEAN {
        numerator / self_.numel() as f64
    } else {
        numerator
    }
}

/// `mse_loss_backward`: `norm * (self - target) * grad_output`.
pub fn mse_loss_backward(
    grad_output: &Tensor,
    self_: &Tensor,
    target: &Tensor,
    reduction: i64,
) -> Result<Tensor> {
    floating_result("mse_backward_cpu_out", self_, target)?;
    let d = F::sub(self_, target)?;
    F::mul_scalar(&F::mul(&d, grad_output)?, norm(2.0, self_, reduction))
}

/// `mse_loss_backward.grad_input`.
pub fn mse_loss_backward_out<'a>(
    grad_output: &Tensor,
    self_: &Tensor,
    target: &Tensor,
    reduction: i64,
    grad_input: &'a Tensor,
) -> Result<&'a Tensor> {
    write_out(
        &mse_loss_backward(grad_output, self_, target, reduction)?,
        grad_input,
    )
}

/// `l1_loss` (CompositeImplicitAutograd): `|self - target|`, reduced.
pub fn l1_loss(self_: &Tensor, target: &Tensor, reduction: i64) -> Result<Tensor> {
    apply_loss_reduction(&F::abs(&F::sub(self_, target)?)?, reduction)
}

/// `smooth_l1_loss` (structured in PyTorch): `0.5 z^2 / beta` below `beta`, `z - beta / 2`
/// above, `z = |self - target|`; l1_loss when `beta` is 0.
pub fn smooth_l1_loss(
    self_: &Tensor,
    target: &Tensor,
    reduction: i64,
    beta: f64,
) -> Result<Tensor> {
    if beta < 0.0 {
        return Err(Error::runtime(
            "smooth_l1_loss does not support negative values for beta.",
        ));
    }
    floating_result("smooth_l1_cpu", self_, target)?;
    let z = F::abs(&F::sub(self_, target)?)?;
    if beta == 0.0 {
        return apply_loss_reduction(&z, reduction);
    }
    let quadratic = F::div_scalar(&F::mul_scalar(&F::mul(&z, &z)?, 0.5)?, beta)?;
    let linear = F::sub_scalar(&z, 0.5 * beta)?;
    let loss = F::r#where(&F::lt_scalar(&z, beta)?, &quadratic, &linear)?;
    apply_loss_reduction(&loss, reduction)
}

/// `smooth_l1_loss.out`.
pub fn smooth_l1_loss_out<'a>(
    self_: &Tensor,
    target: &Tensor,
    reduction: i64,
    beta: f64,
    out: &'a Tensor,
) -> Result<&'a Tensor> {
    write_out(&smooth_l1_loss(self_, target, reduction, beta)?, out)
}

/// The backward of smooth_l1 (`scale_outer` 1) and huber (`scale_outer` delta): with
/// `x = self - target`, `-norm * g * scale_outer` where `x <= -t`, `norm * g * scale_outer`
/// where `x >= t`, else `norm * x * g * inner` (`inner` = 1 / beta for smooth_l1, 1 for huber).
fn piecewise_backward(
    grad_output: &Tensor,
    self_: &Tensor,
    target: &Tensor,
    reduction: i64,
    t: f64,
    scale_outer: f64,
    inner: f64,
) -> Result<Tensor> {
    let n = norm(1.0, self_, reduction);
    let x = F::sub(self_, target)?;
    let g = F::mul_scalar(grad_output, n)?;
    let low = F::mul_scalar(&g, -scale_outer)?;
    let high = F::mul_scalar(&g, scale_outer)?;
    let mid = F::mul_scalar(&F::mul(&x, &g)?, inner)?;
    let r = F::r#where(&F::ge_scalar(&x, t)?, &high, &mid)?;
    F::r#where(&F::le_scalar(&x, -t)?, &low, &r)
}

/// `smooth_l1_loss_backward` (CompositeExplicitAutograd).
pub fn smooth_l1_loss_backward(
    grad_output: &Tensor,
    self_: &Tensor,
    target: &Tensor,
    reduction: i64,
    beta: f64,
) -> Result<Tensor> {
    floating_result("smooth_l1_backward_cpu_out", self_, target)?;
    let inner = if beta == 0.0 { 0.0 } else { 1.0 / beta };
    piecewise_backward(grad_output, self_, target, reduction, beta, 1.0, inner)
}

/// `smooth_l1_loss_backward.grad_input`.
pub fn smooth_l1_loss_backward_out<'a>(
    grad_output: &Tensor,
    self_: &Tensor,
    target: &Tensor,
    reduction: i64,
    beta: f64,
    grad_input: &'a Tensor,
) -> Result<&'a Tensor> {
    write_out(
        &smooth_l1_loss_backward(grad_output, self_, target, reduction, beta)?,
        grad_input,
    )
}

/// `huber_loss`: `0.5 z^2` below `delta`, `delta (z - delta / 2)` above.
pub fn huber_loss(self_: &Tensor, target: &Tensor, reduction: i64, delta: f64) -> Result<Tensor> {
    if delta <= 0.0 {
        return Err(Error::runtime(
            "huber_loss does not support non-positive values for delta.",
        ));
    }
    floating_result("huber_cpu", self_, target)?;
    let z = F::abs(&F::sub(self_, target)?)?;
    let quadratic = F::mul_scalar(&F::mul(&z, &z)?, 0.5)?;
    let linear = F::mul_scalar(&F::sub_scalar(&z, 0.5 * delta)?, delta)?;
    let loss = F::r#where(&F::lt_scalar(&z, delta)?, &quadratic, &linear)?;
    apply_loss_reduction(&loss, reduction)
}

/// `huber_loss.out`.
pub fn huber_loss_out<'a>(
    self_: &Tensor,
    target: &Tensor,
    reduction: i64,
    delta: f64,
    out: &'a Tensor,
) -> Result<&'a Tensor> {
    write_out(&huber_loss(self_, target, reduction, delta)?, out)
}

/// `huber_loss_backward` (CompositeExplicitAutograd).
pub fn huber_loss_backward(
    grad_output: &Tensor,
    self_: &Tensor,
    target: &Tensor,
    reduction: i64,
    delta: f64,
) -> Result<Tensor> {
    floating_result("huber_backward_cpu_out", self_, target)?;
    piecewise_backward(grad_output, self_, target, reduction, delta, delta, 1.0)
}

/// `huber_loss_backward.out`.
pub fn huber_loss_backward_out<'a>(
    grad_output: &Tensor,
    self_: &Tensor,
    target: &Tensor,
    reduction: i64,
    delta: f64,
    grad_input: &'a Tensor,
) -> Result<&'a Tensor> {
    write_out(
        &huber_loss_backward(grad_output, self_, target, reduction, delta)?,
        grad_input,
    )
}

/// `binary_cross_entropy` (a CPU kernel in PyTorch): `-(t log(x) + (1 - t) log(1 - x))`
/// with each logarithm clamped at -100, times `weight`, reduced.
pub fn binary_cross_entropy(
    self_: &Tensor,
    target: &Tensor,
    weight: Option<&Tensor>,
    reduction: i64,
) -> Result<Tensor> {
    floating_result("binary_cross_entropy", self_, target)?;
    let outside = F::logical_or(&F::lt_scalar(self_, 0.0)?, &F::gt_scalar(self_, 1.0)?)?;
    if !self_.is_meta() && F::any(&outside)?.item()?.to_bool() {
        return Err(Error::runtime(
            "all elements of input should be between 0 and 1",
        ));
    }
    let log_x = F::clamp(&F::log(self_)?, Some(Scalar::from(-100.0)))?;
    let log_1mx = F::clamp(&F::log1p(&F::neg(self_)?)?, Some(Scalar::from(-100.0)))?;
    // (t - 1) * log(1 - x) - t * log(x)
    let loss = F::sub(
        &F::mul(&F::sub_scalar(target, 1.0)?, &log_1mx)?,
        &F::mul(target, &log_x)?,
    )?;
    let loss = match weight {
        Some(w) => F::mul(&loss, w)?,
        None => loss,
    };
    apply_loss_reduction(&loss, reduction)
}

/// `binary_cross_entropy.out`.
pub fn binary_cross_entropy_out<'a>(
    self_: &Tensor,
    target: &Tensor,
    weight: Option<&Tensor>,
    reduction: i64,
    out: &'a Tensor,
) -> Result<&'a Tensor> {
    write_out(
        &binary_cross_entropy(self_, target, weight, reduction)?,
        out,
    )
}

/// `binary_cross_entropy_backward`: `g (x - t) / max((1 - x) x, 1e-12)`, times `weight`.
pub fn binary_cross_entropy_backward(
    grad_output: &Tensor,
    self_: &Tensor,
    target: &Tensor,
    weight: Option<&Tensor>,
    reduction: i64,
) -> Result<Tensor> {
    floating_result("binary_cross_entropy_backward", self_, target)?;
    let denom = F::clamp(
        &F::mul(&F::rsub_scalar(self_, 1.0)?, self_)?,
        Some(Scalar::from(1e-12)),
    )?;
    let mut grad = F::div(&F::mul(grad_output, &F::sub(self_, target)?)?, &denom)?;
    if let Some(w) = weight {
        grad = F::mul(&grad, w)?;
    }
    if reduction == REDUCTION_MEAN {
        grad = F::div_scalar(&grad, self_.numel() as f64)?;
    }
    Ok(grad)
}

/// `binary_cross_entropy_backward.grad_input`.
pub fn binary_cross_entropy_backward_out<'a>(
    grad_output: &Tensor,
    self_: &Tensor,
    target: &Tensor,
    weight: Option<&Tensor>,
    reduction: i64,
    grad_input: &'a Tensor,
) -> Result<&'a Tensor> {
    write_out(
        &binary_cross_entropy_backward(grad_output, self_, target, weight, reduction)?,
        grad_input,
    )
}

/// `log(sigmoid(x))` computed stably: `min(x, 0) - log1p(exp(-|x|))`.
fn log_sigmoid(x: &Tensor) -> Result<Tensor> {
    F::sub(
        &F::clamp_with(x, None, Some(Scalar::from(0.0)))?,
        &F::log1p(&F::exp(&F::neg(&F::abs(x)?)?)?)?,
    )
}

/// `binary_cross_entropy_with_logits` (CompositeExplicitAutograd):
/// `(1 - t) x - log_sigmoid(x) * (1 + (pos_weight - 1) t)`, times `weight`.
pub fn binary_cross_entropy_with_logits(
    self_: &Tensor,
    target: &Tensor,
    weight: Option<&Tensor>,
    pos_weight: Option<&Tensor>,
    reduction: i64,
) -> Result<Tensor> {
    let mut log_sigmoid_input = log_sigmoid(self_)?;
    if let Some(pw) = pos_weight {
        let log_weight = F::add_scalar(&F::mul(&F::sub_scalar(pw, 1.0)?, target)?, 1.0)?;
        log_sigmoid_input = F::mul(&log_sigmoid_input, &log_weight)?;
    }
    let mut loss = F::sub(
        &F::mul(&F::rsub_scalar(target, 1.0)?, self_)?,
        &log_sigmoid_input,
    )?;
    if let Some(w) = weight {
        loss = F::mul(&loss, w)?;
    }
    apply_loss_reduction(&loss, reduction)
}

/// `kl_div` (CompositeImplicitAutograd): `exp(t) (t - x)` for a log target, else
/// `xlogy(t, t) - t x`, reduced.
pub fn kl_div(self_: &Tensor, target: &Tensor, reduction: i64, log_target: bool) -> Result<Tensor> {
    if self_.dtype().is_complex() || target.dtype().is_complex() {
        return Err(Error::runtime("kl_div: Complex inputs not supported."));
    }
    if self_.dtype().is_integral(true) || target.dtype().is_integral(true) {
        return Err(Error::runtime("kl_div: Integral inputs not supported."));
    }
    let output = if log_target {
        F::mul(&F::exp(target)?, &F::sub(target, self_)?)?
    } else {
        // xlogy(t, t): 0 where t is 0, t log t elsewhere (NaN stays NaN).
        let tlogt = F::r#where(
            &F::eq_scalar(target, 0.0)?,
            &F::zeros_like(target)?,
            &F::mul(target, &F::log(target)?)?,
        )?;
        F::sub(&tlogt, &F::mul(target, self_)?)?
    };
    apply_loss_reduction(&output, reduction)
}
