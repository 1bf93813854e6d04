//! The nodes of in-place ops on views (torch/csrc/autograd/functions/tensor.h): `CopySlices`,
//! which becomes the base's history after an in-place op on one of its views, and the
//! `AsStridedBackward0` a view's history is rebuilt as afterwards (Note [Views and their base]).

use std::borrow::Cow;
use std::sync::Arc;

use parking_lot::Mutex;
use ratten_aten::Tensor;
use ratten_core::{Result, ScalarType};

use crate::engine::ExecInfoGuard;
use crate::function::{Node, NodeBase, VariableList};
use crate::variable;

pub use crate::functions_manual::TensorGeometry;

/// A zero tensor laid out as `base` (its sizes and strides), of `dtype`.
fn zeros_like_geometry(base: &TensorGeometry, like: &Tensor, dtype: ScalarType) -> Result<Tensor> {
    let r = ratten_aten::functions::empty_strided_with(
        &base.sizes,
        &base.strides,
        Some(dtype),
        None,
        Some(like.device()),
        None,
    )?;
    let zero =
        ratten_aten::functions::zeros_with(&[], Some(dtype), None, Some(like.device()), None)?;
    r.copy_(&zero)?;
    Ok(r)
}

/// The base's history after an in-place op `fn` on one of its views (`CopySlices`): the
/// gradient of the base is the incoming gradient with the view's slice replaced by what `fn`
/// gives for it.
pub struct CopySlices {
    base_node: NodeBase,
    base: TensorGeometry,
    view: TensorGeometry,
    func: Mutex<Option<Arc<dyn Node>>>,
}

impl CopySlices {
    pub fn new(base: &Tensor, view: &Tensor, func: Arc<dyn Node>) -> Result<CopySlices> {
        let mut next = vec![variable::gradient_edge(base)];
        next.extend(func.base().next_edges().iter().skip(1).cloned());
        Ok(CopySlices {
            base_node: NodeBase::new(next),
            base: TensorGeometry::new(base),
            view: TensorGeometry::new(view),
            func: Mutex::new(Some(func)),
        })
    }
}

impl Node for CopySlices {
    fn name(&self) -> Cow<'static, str> {
        Cow::Borrowed("torch::autograd::CopySlices")
    }

    fn base(&self) -> &NodeBase {
        &self.base_node
    }

    fn apply(self: Arc<Self>, grads: VariableList) -> Result<VariableList> {
        let n = self.base_node.num_outputs();
        let mut out: VariableList = vec![None; n];
        let Some(Some(grad)) = grads.into_iter().next() else {
            return Ok(out);
        };
        let func = self.func.lock().clone().ok_or_else(|| {
            ratten_core::Error::runtime(crate::saved_variable::ERR_BACKWARD_TWICE)
        })?;
        let result = zeros_like_geometry(&self.base, &grad, grad.scalar_type())?;
        result.copy_(&grad)?;
        let offset = self.view.storage_offset - self.base.storage_offset;
        let grad_slice =
            result.as_strided_with(&self.view.sizes, &self.view.strides, Some(offset))?;
        // `func` computes every input's gradient, the view's included: it is not itself part of
        // the running graph task, so nothing may be pruned inside it.
        let res = {
            let _all = ExecInfoGuard::push(None);
            func.apply(vec![Some(grad_slice.clone_with(None)?)])?
        };
        for (i, r) in res.into_iter().enumerate() {
            if i == 0 {
                match r {
                    Some(r) => {
                        grad_slice.copy_(&r)?;
                    }
                    None => {
                        let zero = ratten_aten::functions::zeros_with(
                            &[],
                            Some(grad_slice.scalar_type()),
                            None,
                            Some(grad_slice.device()),
                            None,
                        )?;
                        grad_slice.copy_(&zero)?;
                    }
                }
            } else if i < n {
                out[i] = r;
            }
        }
        out[0] = Some(result);
        Ok(out)
    }

    fn release_variables(&self) {
        if let Some(f) = self.func.lock().take() {
            f.release_variables();
        }
    }
}

/// The history of a view whose base changed in place (`AsStridedBackward0` over the base's
/// geometry): the view's gradient placed in a zero gradient of the base.
pub struct AsStridedViewBackward {
    base_node: NodeBase,
    base: TensorGeometry,
    view: TensorGeometry,
}

impl Node for AsStridedViewBackward {
    fn name(&self) -> Cow<'static, str> {
        Cow::Borrowed("AsStridedBackward0")
    }

    fn base(&self) -> &NodeBase {
        &self.base_node
    }

    fn apply(self: Arc<Self>, grads: VariableList) -> Result<VariableList> {
        let Some(Some(grad)) = grads.into_iter().next() else {
            return Ok(vec![None]);
        };
        let result = crate::functions_manual::as_strided_backward(
            &grad,
            &self.base,
            &self.view.sizes,
            &self.view.strides,
            Some(self.view.storage_offset),
        )?;
        Ok(vec![Some(result)])
    }
}

/// Builds the rebuilt history of view `t` of `base`.
pub(crate) fn as_strided_backward_for_view(
    t: &ratten_core::TensorBase,
    base: &Tensor,
) -> Option<Arc<dyn Node>> {
    let view = Tensor::from_base(t.clone());
    let node = AsStridedViewBackward {
        base_node: NodeBase::new(vec![variable::gradient_edge(base)]),
        base: TensorGeometry::new(base),
        view: TensorGeometry::new(&view),
    };
    node.base_node.add_input_metadata(&view);
    Some(Arc::new(node))
}
