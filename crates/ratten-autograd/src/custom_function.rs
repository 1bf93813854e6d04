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
    let outputs = {
        let _no_grad = AutoGradMode::new(false);
        F::forward(&mut ctx, inputs)?
    };
    if !requires_grad {
        return Ok(outputs);
    }
    let refs: Vec<Option<&Tensor>> = inputs.iter().map(Some).collect();
    let base = NodeBase::new(collect_next_edges(&refs));
    // An input returned as it is becomes a new view of itself, so that it keeps its history.
    let outputs: Vec<Tensor> = outputs
        .into_iter()
        .map(|o| {
            let is_input = inputs.iter().any(|i| i.is_same(&o));
            if is_input && !ctx.dirty.iter().any(|d| d.is_same(&o)) {
                Tensor::from_base(ratten_core::TensorBase::alias(&o))
            } else {
                o
            }
        })
        .collect();
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
