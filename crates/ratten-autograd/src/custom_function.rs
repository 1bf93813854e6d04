//! User-defined autograd functions (torch/csrc/autograd/custom_function.h): a type with a
//! `forward` and a `backward`, called through [`apply`], which records a [`CppNode`] running
//! the type's `backward` (PyTorch's `torch::autograd::Function<T>` and `AutogradContext`).

use std::any::Any;
use std::borrow::Cow;
use std::collections::HashMap;
use std::marker::PhantomData;
use std::sync::Arc;

use parking_lot::Mutex;
use ratten_aten::Tensor;
use ratten_core::{Error, Result};

use crate::forward_grad::{self, AutoFwGradMode};
use crate::function::{Node, NodeBase, VariableList};
use crate::grad_mode::{AutoGradMode, GradMode};
use crate::saved_variable::SavedVariable;
use crate::variable_type_utils::{collect_next_edges, rebase_history, set_history};

/// The context a function's `forward` and `backward` share (`AutogradContext`).
#[derive(Default)]
pub struct AutogradContext {
    to_save: Vec<Tensor>,
    saved: Vec<SavedVariable>,
    dirty: Vec<Tensor>,
    non_differentiable: Vec<Tensor>,
    needs_input_grad: Vec<bool>,
    /// Other values `backward` needs (`saved_data`).
    pub saved_data: HashMap<String, Box<dyn Any + Send + Sync>>,
    node: Option<std::sync::Weak<dyn Node>>,
    released: bool,
}

impl AutogradContext {
    /// Keeps tensors for `backward` (checked against in-place changes when read back).
    pub fn save_for_backward(&mut self, tensors: &[Tensor]) {
        self.to_save = tensors.to_vec();
    }

    /// The tensors saved by `forward` (torch's errors when modified in place or freed).
    pub fn get_saved_variables(&self) -> Result<Vec<Tensor>> {
        if self.released {
            return Err(Error::runtime(crate::saved_variable::ERR_BACKWARD_TWICE));
        }
        let node = self
            .node
            .as_ref()
            .and_then(std::sync::Weak::upgrade)
            .ok_or_else(|| Error::runtime("saved variables are read in backward only"))?;
        self.saved.iter().map(|s| s.unpack(&node)).collect()
    }

    /// Inputs modified in place by `forward` (their history is rebased on this function).
    pub fn mark_dirty(&mut self, tensors: &[Tensor]) {
        self.dirty = tensors.to_vec();
    }

    /// Outputs that get no gradient.
    pub fn mark_non_differentiable(&mut self, tensors: &[Tensor]) {
        self.non_differentiable = tensors.to_vec();
    }

    /// Whether input `i` takes part in autograd (`needs_input_grad(i)`).
    pub fn needs_input_grad(&self, i: usize) -> bool {
        self.needs_input_grad.get(i).copied().unwrap_or(false)
    }
}

/// A user-defined function with its derivative (`torch::autograd::Function<T>`).
pub trait Function: Send + Sync + 'static {
    /// The backward node's name (`<Name>Backward`).
    fn name() -> &'static str;
    /// Computes the outputs (grad mode is off inside).
    fn forward(ctx: &mut AutogradContext, inputs: &[Tensor]) -> Result<Vec<Tensor>>;
    /// The gradients of the inputs from those of the outputs (`None` where none flows).
    fn backward(
        ctx: &mut AutogradContext,
        grad_outputs: Vec<Option<Tensor>>,
    ) -> Result<Vec<Option<Tensor>>>;
    /// The outputs' tangents from the inputs' (forward-mode AD; `None` for an input or output
    /// without one). `forward` runs without forward AD, so a function called on dual tensors
    /// needs this, as PyTorch's `jvp`.
    fn jvp(
        ctx: &mut AutogradContext,
        tangents: Vec<Option<Tensor>>,
    ) -> Result<Vec<Option<Tensor>>> {
        let _ = (ctx, tangents);
        Err(Error::not_implemented(
            "You must implement the jvp function for custom autograd.Function to use it with \
             forward mode AD.",
        ))
    }
}

/// The node of a [`Function`] call (`CppNode<T>`).
pub struct CppNode<F: Function> {
    base: NodeBase,
    ctx: Mutex<AutogradContext>,
    num_inputs: usize,
    _f: PhantomData<fn() -> F>,
}

impl<F: Function> Node for CppNode<F> {
    fn name(&self) -> Cow<'static, str> {
        Cow::Owned(format!("{}Backward", F::name()))
    }

    fn base(&self) -> &NodeBase {
        &self.base
    }

    fn apply(self: Arc<Self>, grads: VariableList) -> Result<VariableList> {
        let mut ctx = self.ctx.lock();
        let out = F::backward(&mut ctx, grads)?;
        if out.len() != self.num_inputs {
            return Err(Error::runtime(format!(
                "function {}Backward returned an incorrect number of gradients (expected {}, got \
                 {})",
                F::name(),
                self.num_inputs,
                out.len()
            )));
        }
        Ok(out)
    }

    fn release_variables(&self) {
        let mut ctx = self.ctx.lock();
        ctx.saved.clear();
        ctx.released = true;
    }
}

/// Calls `F` on `inputs` and records its node when an input requires grad (`Function::apply`).
pub fn apply<F: Function>(inputs: &[Tensor]) -> Result<Vec<Tensor>> {
    let mut ctx = AutogradContext {
        needs_input_grad: inputs.iter().map(|t| t.requires_grad()).collect(),
        ..Default::default()
    };
    let requires_grad = GradMode::is_enabled() && ctx.needs_input_grad.iter().any(|&b| b);
    let tangents: Vec<Option<Tensor>> = if forward_grad::forward_ad_active() {
        inputs.iter().map(forward_grad::fw_grad).collect()
    } else {
        Vec::new()
    };
    let outputs = {
        let _no_grad = AutoGradMode::new(false);
        let _no_fw_grad = AutoFwGradMode::new(false);
        F::forward(&mut ctx, inputs)?
    };
    let out_tangents = if tangents.iter().any(Option::is_some) {
        let _no_fw_grad = AutoFwGradMode::new(false);
        let t = F::jvp(&mut ctx, tangents)?;
        if t.len() != outputs.len() {
            return Err(Error::runtime(format!(
                "jvp() returned an incorrect number of tangents: expected {}, got {}",
                outputs.len(),
                t.len()
            )));
        }
        Some(t)
    } else {
        None
    };
    if !requires_grad {
        if out_tangents.is_none() {
            return Ok(outputs);
        }
        let outputs = outputs_as_views(inputs, outputs, &ctx.dirty);
        set_tangents(&outputs, out_tangents, &ctx.dirty)?;
        return Ok(outputs);
    }
    let refs: Vec<Option<&Tensor>> = inputs.iter().map(Some).collect();
    let base = NodeBase::new(collect_next_edges(&refs));
    let outputs = outputs_as_views(inputs, outputs, &ctx.dirty);
    set_tangents(&outputs, out_tangents, &ctx.dirty)?;
    let to_save = std::mem::take(&mut ctx.to_save);
    let dirty = ctx.dirty.clone();
    let non_diff = ctx.non_differentiable.clone();
    let node: Arc<CppNode<F>> = Arc::new(CppNode {
        base,
        ctx: Mutex::new(ctx),
        num_inputs: inputs.len(),
        _f: PhantomData,
    });
    let dyn_node: Arc<dyn Node> = node.clone();
    for o in &outputs {
        if non_diff.iter().any(|n| n.is_same(o)) {
            dyn_node.base().add_input_metadata(o);
        } else if dirty.iter().any(|d| d.is_same(o)) {
            rebase_history(o, &dyn_node)?;
        } else {
            set_history(&[Some(o)], &dyn_node)?;
        }
    }
    let saved: Vec<SavedVariable> = to_save
        .iter()
        .map(|t| SavedVariable::new(t, outputs.iter().any(|o| o.is_same(t))))
        .collect();
    {
        let mut ctx = node.ctx.lock();
        ctx.saved = saved;
        ctx.node = Some(Arc::downgrade(&dyn_node));
    }
    Ok(outputs)
}

/// An input returned as it is becomes a new view of itself, so that it keeps its history and
/// its tangent.
fn outputs_as_views(inputs: &[Tensor], outputs: Vec<Tensor>, dirty: &[Tensor]) -> Vec<Tensor> {
    outputs
        .into_iter()
        .map(|o| {
            let is_input = inputs.iter().any(|i| i.is_same(&o));
            if is_input && !dirty.iter().any(|d| d.is_same(&o)) {
                Tensor::from_base(ratten_core::TensorBase::alias(&o))
            } else {
                o
            }
        })
        .collect()
}

/// Gives the outputs the tangents `jvp` computed (in place for a dirty input).
fn set_tangents(
    outputs: &[Tensor],
    tangents: Option<Vec<Option<Tensor>>>,
    dirty: &[Tensor],
) -> Result<()> {
    for (o, t) in outputs.iter().zip(tangents.into_iter().flatten()) {
        if let Some(t) = t {
            let in_place = dirty.iter().any(|d| d.is_same(o));
            forward_grad::set_fw_grad(o, &t, in_place)?;
        }
    }
    Ok(())
}
