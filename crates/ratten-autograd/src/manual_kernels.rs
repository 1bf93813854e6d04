//! Autograd kernels written by hand (torch/csrc/autograd/VariableTypeManual.cpp): `copy_`,
//! whose history is `CopyBackwards` (the gradient of `self`'s old values is zero, `src` gets
//! the gradient cast back to its dtype and summed to its shape); its tangent is `src`'s. The generator leaves these
//! operators out (`MANUAL_AUTOGRAD` in ratten-gen's variable_type.rs).

use crate::prelude::*;
use ratten_dispatch::{Operator, WithKeySet};

/// The node of `copy_` (`CopyBackwards`).
struct CopyBackwards {
    base: NodeBase,
    src_dtype: ScalarType,
}

impl Node for CopyBackwards {
    fn name(&self) -> Cow<'static, str> {
        Cow::Borrowed("torch::autograd::CopyBackwards")
    }

    fn base(&self) -> &NodeBase {
        &self.base
    }

    fn apply(self: Arc<Self>, grads: VariableList) -> Result<VariableList> {
        let mut out: VariableList = vec![None, None];
        let Some(Some(grad)) = grads.into_iter().next() else {
            return Ok(out);
        };
        let self_ix = IndexRange { start: 0, end: 1 };
        let src_ix = IndexRange { start: 1, end: 2 };
        if self.base.should_compute_output(self_ix) {
            out[0] = Some(ratten_aten::functions::zeros_like(&grad)?);
        }
        if self.base.should_compute_output(src_ix) {
            // validate_outputs sums it down to `src`'s shape when `src` was broadcast.
            out[1] = Some(if grad.scalar_type() == self.src_dtype {
                grad
            } else {
                grad.to_dtype(self.src_dtype)?
            });
        }
        Ok(out)
    }
}

/// `copy_`'s Autograd kernel (VariableTypeManual's `copy_`).
fn copy_(
    ks: DispatchKeySet,
    self_: &Tensor,
    src: &Tensor,
    non_blocking: bool,
) -> Result<Aliased<0>> {
    let requires_grad = compute_requires_grad(&[Some(self_), Some(src)])
        && is_differentiable_type(self_.scalar_type());
    check_inplace(self_, requires_grad)?;
    let any_fw = any_fw_grad_defined(&[Some(self_), Some(src)]);
    let grad_fn = requires_grad.then(|| CopyBackwards {
        base: NodeBase::new(collect_next_edges(&[Some(self_), Some(src)])),
        src_dtype: src.scalar_type(),
    });
    let ret = {
        let _guard = AutoDispatchBelowADInplaceOrView::new();
        ops::copy_::redispatch(ks & AFTER_AUTOGRAD_KEYSET, self_, src, non_blocking)?
    };
    if let Some(f) = grad_fn {
        let f: Arc<dyn Node> = Arc::new(f);
        rebase_history(self_, &f)?;
    }
    if any_fw {
        // `self`'s new tangent is `src`'s, broadcast and cast as the values were; zeros when
        // `src` has none (VariableTypeManual's `copy_`).
        let _formula = ForwardFormulaGuard::new();
        let new_grad = match fw_grad(src) {
            Some(g) => ratten_aten::functions::clone(
                &g.expand(&self_.sizes())?.to_dtype(self_.scalar_type())?,
            )?,
            None => ratten_aten::functions::zeros_like(self_)?,
        };
        set_fw_grad(self_, &new_grad, true)?;
    }
    Ok(ret)
}

/// Referenced by `ensure_linked`: keeps these registrations in every binary using autograd.
#[inline(never)]
pub(crate) fn ensure_linked() {
    std::hint::black_box(());
}

ratten_dispatch::torch_library_impl!(aten, Autograd, |m| {
    m.impl_("copy_", ops::copy_::kernel(WithKeySet(copy_)))?;
});
