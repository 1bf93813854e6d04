//! `AccumulateGrad` (torch/csrc/autograd/functions/accumulate_grad.h): the node at a leaf that
//! adds the incoming gradient into the leaf's `.grad`.

use std::borrow::Cow;
use std::sync::Arc;

use ratten_aten::Tensor;
use ratten_core::Result;

use crate::function::{EdgeList, Node, NodeBase, VariableList, MAX_SEQUENCE_NR};
use crate::grad_mode::GradMode;
use crate::variable;

pub struct AccumulateGrad {
    base: NodeBase,
    variable: Tensor,
}

impl AccumulateGrad {
    /// The node of the leaf `variable`, made in place in its `Arc` (a node is a few hundred
    /// bytes; one is made for a leaf in each graph that uses it).
    pub fn new(variable: Tensor) -> Arc<AccumulateGrad> {
        let mut node = crate::new_node!(AccumulateGrad {
            sequence_nr: MAX_SEQUENCE_NR,
            next_edges: EdgeList::new(),
            variable,
        });
        let AccumulateGrad { base, variable } = &mut *node;
        base.add_input_metadata_mut(variable);
        node.into_arc()
    }
}

impl Node for AccumulateGrad {
    fn name(&self) -> Cow<'static, str> {
        Cow::Borrowed("torch::autograd::AccumulateGrad")
    }

    fn base(&self) -> &NodeBase {
        &self.base
    }

    fn apply(self: Arc<Self>, grads: VariableList) -> Result<VariableList> {
        let Some(Some(mut new_grad)) = grads.into_iter().next() else {
            return Ok(Vec::new());
        };
        // The leaf's own hooks (registered before it had an accumulator, or on it).
        for h in variable::leaf_hooks(&self.variable) {
            if let Some(g) = h(&new_grad)? {
                new_grad = g;
            }
        }
        if !self.variable.requires_grad() {
            return Ok(Vec::new());
        }
        accumulate_grad(&self.variable, new_grad)?;
        for h in variable::post_accumulate_grad_hooks(&self.variable) {
            h(&self.variable)?;
        }
        Ok(Vec::new())
    }

    fn accumulate_grad_variable(&self) -> Option<Tensor> {
        Some(self.variable.clone())
    }
}

/// `AccumulateGrad::accumulateGrad`: the first gradient is kept (a copy unless nothing else can
/// see it), later ones are added, in place without grad mode, out of place with it (so a
/// `create_graph` backward records the sum).
pub fn accumulate_grad(variable: &Tensor, new_grad: Tensor) -> Result<()> {
    match variable.grad() {
        None => {
            let g = if GradMode::is_enabled() {
                // create_graph: the gradient keeps its history.
                new_grad
            } else if new_grad.use_count() == 1
                // Its storage held by its own metadata and the handle `storage()` returns only.
                && new_grad.storage().use_count() <= 2
                && new_grad.strides() == variable.strides()
                && new_grad.storage_offset() == 0
            {
                // Nothing else can see it and it has the leaf's layout: kept as it is.
                new_grad
            } else {
                // A copy with the leaf's layout (`empty_like` preserves a dense layout).
                let g = ratten_aten::functions::empty_like(variable)?;
                g.copy_(&new_grad)?;
                g
            };
            variable.set_grad(Some(g.into_base()))
        }
        Some(old) => {
            let old = Tensor::from_base(old);
            if GradMode::is_enabled() {
                let sum = old.add(&new_grad)?;
                variable.set_grad(Some(sum.into_base()))
            } else {
                old.add_(&new_grad)?;
                Ok(())
            }
        }
    }
}
