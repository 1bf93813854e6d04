//! What the generated Autograd and ADInplaceOrView kernels call (torch/csrc/autograd/
//! VariableTypeUtils.h, FunctionsManual's `check_inplace`, `rebase_history`).

use std::sync::Arc;

use ratten_aten::Tensor;
use ratten_core::{Error, Result};

use crate::function::{Edge, EdgeList, Node};
use crate::grad_mode::GradMode;
use crate::variable::{self, CreationMeta};
use crate::view_backward::CopySlices;

/// `compute_requires_grad`: grad mode is on and some input requires grad.
#[inline]
pub fn compute_requires_grad(ts: &[Option<&Tensor>]) -> bool {
    GradMode::is_enabled() && ts.iter().flatten().any(|t| t.requires_grad())
}

/// `compute_requires_grad` over a list argument.
#[inline]
pub fn any_requires_grad(ts: &[Tensor]) -> bool {
    GradMode::is_enabled() && ts.iter().any(|t| t.requires_grad())
}

/// `collect_next_edges`: the gradient edge of each input (an invalid edge for None).
pub fn collect_next_edges(ts: &[Option<&Tensor>]) -> EdgeList {
    ts.iter()
        .map(|t| t.map_or_else(Edge::default, |t| variable::gradient_edge(t)))
        .collect()
}

/// The gradient edges of a list argument, one per element.
pub fn collect_next_edges_list(ts: &[Tensor]) -> EdgeList {
    ts.iter().map(|t| variable::gradient_edge(t)).collect()
}

/// `set_history`: makes each output an output of `grad_fn`, numbered by position (an undefined
/// output takes a number without metadata). Outputs of a dtype that cannot require grad
/// (integers, bool) are left without history, as PyTorch's `is_differentiable_type` check.
pub fn set_history(outputs: &[Option<&Tensor>], grad_fn: &Arc<dyn Node>) -> Result<()> {
    for t in outputs {
        match t {
            Some(t) if variable::is_differentiable_type(t.scalar_type()) => {
                let nr = grad_fn.base().add_input_metadata(t);
                variable::set_gradient_edge(t, Edge::new(grad_fn.clone(), nr))?;
            }
            Some(t) => {
                grad_fn.base().add_input_metadata(t);
            }
            None => {
                grad_fn.base().add_undefined_input();
            }
        }
    }
    Ok(())
}

/// `set_history` over a list output.
pub fn set_history_list(outputs: &[Tensor], grad_fn: &Arc<dyn Node>) -> Result<()> {
    let refs: Vec<Option<&Tensor>> = outputs.iter().map(Some).collect();
    set_history(&refs, grad_fn)
}

/// `rebase_history`: after an in-place op, `t` is output 0 of `grad_fn`. A view whose base takes
/// part in autograd instead rebases its base on a `CopySlices` of `grad_fn` (Note [Views and
/// their base]).
pub fn rebase_history(t: &Tensor, grad_fn: &Arc<dyn Node>) -> Result<()> {
    if let Some(view) = variable::view_info(t) {
        if view.is_bw_differentiable {
            handle_view_on_rebase(t, &view, &grad_fn.name())?;
            let base = view.base.clone();
            let copy_slices: Arc<dyn Node> = Arc::new(CopySlices::new(&base, t, grad_fn.clone())?);
            // CopySlices is the base's output 0 of a node taking the base's old history.
            let nr = copy_slices.base().add_input_metadata(&base);
            variable::set_gradient_edge(&base, Edge::new(copy_slices, nr))?;
            // `grad_fn` itself takes the view's metadata as its output 0.
            grad_fn.base().add_input_metadata(t);
            // The view's own grad_fn is rebuilt from the base's on its next read.
            let _ = variable::grad_fn(t);
            return Ok(());
        }
    }
    let nr = grad_fn.base().add_input_metadata(t);
    variable::set_gradient_edge(t, Edge::new(grad_fn.clone(), nr))
}

/// torch's refusals of in-place ops on some views (`handle_view_on_rebase`).
fn handle_view_on_rebase(t: &Tensor, view: &variable::ViewInfo, _fn_name: &str) -> Result<()> {
    let cm = view.creation_meta;
    if matches!(cm, CreationMeta::Default) {
        return Ok(());
    }
    let mut msg = match variable::grad_fn(t) {
        Some(f) => format!(
            "Output {} of {} is a view and is being modified inplace.",
            variable::output_nr(t),
            f.name()
        ),
        None if cm == CreationMeta::InferenceMode => {
            "A view was created in inference mode and is being modified inplace in normal mode."
                .to_string()
        }
        None => "A view was created in no_grad mode and is being modified inplace with grad mode \
                 enabled."
            .to_string(),
    };
    msg.push_str(match cm {
        CreationMeta::MultiOutputNode => {
            " This view is the output of a function that returns multiple views. Such functions \
             do not allow the output views to be modified inplace. You should replace the inplace \
             operation by an out-of-place one."
        }
        CreationMeta::NoGradMode => {
            " Given that this use case is ambiguous and error-prone, it is forbidden. You can \
             clarify your code by moving both the view and the inplace either both inside the \
             no_grad block (if you don't want the inplace to be tracked) or both outside (if you \
             want the inplace to be tracked)."
        }
        CreationMeta::InferenceMode => {
            " Given that this use case is ambiguous and error-prone, it is forbidden. You can \
             clarify your code by moving both the view and the inplace either both inside the \
             inference_mode block (if you don't want the inplace to be tracked) or both outside \
             (if you want the inplace to be tracked)."
        }
        CreationMeta::InCustomFunction => {
            " This view was created inside a custom Function (or because an input was returned \
             as-is) and the autograd logic to handle view+inplace would override the custom \
             backward associated with the custom Function, leading to incorrect gradients. This \
             behavior is forbidden. You can fix this by cloning the output of the custom \
             Function."
        }
        CreationMeta::Default => "",
    });
    Err(Error::runtime(msg))
}

/// `check_inplace`: in-place ops on leaves that require grad (and their views) are refused.
pub fn check_inplace(t: &Tensor, requires_grad: bool) -> Result<()> {
    if !(requires_grad && GradMode::is_enabled()) {
        return Ok(());
    }
    if let Some(view) = variable::view_info(t) {
        if view.is_bw_differentiable {
            handle_view_on_rebase(t, &view, "inplace")?;
            if t.requires_grad() && variable::is_leaf(&view.base) {
                return Err(Error::runtime(
                    "a view of a leaf Variable that requires grad is being used in an in-place \
                     operation.",
                ));
            }
        }
    }
    if t.requires_grad() && variable::is_leaf(t) {
        return Err(Error::runtime(
            "a leaf Variable that requires grad is being used in an in-place operation.",
        ));
    }
    Ok(())
}

/// `check_no_requires_grad`: an argument whose derivative is not implemented must not require
/// grad.
pub fn check_no_requires_grad(t: Option<&Tensor>, name: &str, fn_name: &str) -> Result<()> {
    if let Some(t) = t {
        if t.requires_grad() {
            return Err(Error::runtime(format!(
                "The function '{fn_name}' is not differentiable with respect to argument \
                 '{name}'. This input cannot have requires_grad True."
            )));
        }
    }
    Ok(())
}

/// torch's refusal of out= arguments when an input requires grad.
pub fn check_out_requires_grad(fn_name: &str, any_requires_grad: bool) -> Result<()> {
    if any_requires_grad && GradMode::is_enabled() {
        return Err(Error::runtime(format!(
            "{fn_name}(): functions with out=... arguments don't support automatic \
             differentiation, but one of the arguments requires grad."
        )));
    }
    Ok(())
}

/// `increment_version` (the ADInplaceOrView kernels, for every mutated argument).
#[inline]
pub fn increment_version(t: &Tensor) {
    t.bump_version();
}

/// How a view made now was created (torchgen's `get_creation_meta_in_mode`): in inference
/// mode, with grad mode off, or (grad mode on) as one output of several or alone.
pub fn creation_meta(multi_output: bool) -> CreationMeta {
    if crate::grad_mode::InferenceMode::is_enabled() {
        CreationMeta::InferenceMode
    } else if !GradMode::is_enabled() {
        CreationMeta::NoGradMode
    } else if multi_output {
        CreationMeta::MultiOutputNode
    } else {
        CreationMeta::Default
    }
}

/// `as_view` for every output of a multi-output view op (`unbind`, `split`): views whose
/// in-place modification torch refuses.
pub fn as_view_list(base: &Tensor, views: &[Tensor], is_bw_differentiable: bool) -> Result<()> {
    let cm = creation_meta(true);
    for v in views {
        variable::as_view(base, v, is_bw_differentiable, true, cm)?;
    }
    Ok(())
}

/// The output of a view op autograd does not differentiate through (`detach`, `view.dtype`):
/// torch's `make_variable_non_differentiable_view`, a tensor without view metadata that does
/// not require grad, never the base itself (a kernel may return its input unchanged).
pub fn non_differentiable_view(base: &Tensor, view: Tensor) -> Tensor {
    if view.is_same(base) {
        Tensor::from_base(ratten_core::TensorBase::alias(&view))
    } else {
        view
    }
}
