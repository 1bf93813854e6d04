//! A tensor's autograd metadata (torch/csrc/autograd/variable.h/.cpp: `AutogradMeta`,
//! `DifferentiableViewMeta`, and the `impl::` functions that read and set a tensor's history).
//!
//! The metadata lives in ratten-core's per-tensor slot (Note [Autograd metadata slot]); this
//! crate registers the factory that makes it, and downcasts it back.
//!
//! Note [Views and their base]
//! A view op's ADInplaceOrView kernel calls [`as_view`]: the view's metadata records its base
//! (the base's own base when the base is itself a view, as PyTorch's `_base` is always a
//! non-view) and how it was made (`CreationMeta`). An in-place op on a view whose base takes
//! part in autograd rebases the base's history on a `CopySlices` node
//! ([`crate::variable_type_utils::rebase_history`]); the view's `grad_fn` is then out of date,
//! which its recorded version tells: [`grad_fn`] rebuilds it as an `AsStridedBackward0` of the
//! base's new history the next time it is asked for, as PyTorch's `VariableHooks::grad_fn` does.

use std::any::Any;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, OnceLock, Weak};

use parking_lot::Mutex;
use ratten_aten::Tensor;
use ratten_core::autograd_meta::{set_autograd_meta_factory, AutogradMetaFactory};
use ratten_core::{AutogradMetaInterface, Error, Result, ScalarType, TensorBase, TensorImpl};

use crate::accumulate_grad::AccumulateGrad;
use crate::forward_grad::{self, ForwardGrad};
use crate::function::{Edge, Node, TensorPreHook};

/// How a view was made (`CreationMeta`): what an in-place op on it may do.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CreationMeta {
    Default,
    InCustomFunction,
    MultiOutputNode,
    NoGradMode,
    InferenceMode,
}

/// The view part of a `DifferentiableViewMeta`.
#[derive(Clone)]
pub struct ViewInfo {
    /// The base: never itself a view.
    pub base: Tensor,
    pub creation_meta: CreationMeta,
    /// The version at which `grad_fn` was last set from the view's own history.
    attr_version: u32,
    /// The view op's name for error messages (`UnbindBackward0`).
    pub is_bw_differentiable: bool,
    /// Whether the view's tangent is the same view of its base's tangent (false for
    /// `_fw_primal`, whose point is to have none).
    pub is_fw_differentiable: bool,
}

/// A hook run after a leaf's gradient was accumulated.
pub type PostAccumulateGradHook = Arc<dyn Fn(&Tensor) -> Result<()> + Send + Sync>;

#[derive(Default)]
struct MetaState {
    grad_fn: Option<Arc<dyn Node>>,
    grad_accumulator: Option<Weak<AccumulateGrad>>,
    output_nr: u32,
    retains_grad: bool,
    view: Option<ViewInfo>,
    /// Hooks of a leaf (run by its AccumulateGrad), with their ids.
    leaf_hooks: Vec<(u64, TensorPreHook)>,
    post_accumulate_grad_hooks: Vec<(u64, PostAccumulateGradHook)>,
    /// The tangent at the open forward AD level (Note [Forward AD levels]).
    fw_grad: Option<Arc<ForwardGrad>>,
}

/// The shared cell of a tensor's `.grad`.
type GradCell = Arc<Mutex<Option<TensorBase>>>;

/// torch's `AutogradMeta` (+ `DifferentiableViewMeta`).
#[derive(Default)]
pub struct AutogradMeta {
    requires_grad: AtomicBool,
    /// Whether `state.grad_fn` is set: read without the lock on every operator call.
    has_grad_fn: AtomicBool,
    /// Whether the tensor is a differentiable view (its base's `requires_grad` is its own).
    is_bw_view: AtomicBool,
    /// The rest, behind the metadata's own lock (torch's AutogradMeta has its mutex too).
    state: Mutex<MetaState>,
    /// `.grad`, in a cell of its own that a `retain_grad` hook can fill without holding the
    /// tensor (which owns the node that holds the hook); made on first use, so that recording
    /// an op's output allocates no cell.
    grad: OnceLock<GradCell>,
}

impl AutogradMeta {
    /// The `.grad` cell, made on first use.
    fn grad_cell(&self) -> GradCell {
        self.grad.get_or_init(GradCell::default).clone()
    }
}

impl AutogradMetaInterface for AutogradMeta {
    fn set_requires_grad(&self, requires_grad: bool, self_impl: &TensorImpl) -> Result<()> {
        if requires_grad {
            let dt = self_impl.dtype();
            if !is_differentiable_type(dt) {
                return Err(Error::runtime(
                    "only Tensors of floating point and complex dtype can require gradients",
                ));
            }
        }
        self.requires_grad.store(requires_grad, Ordering::Release);
        Ok(())
    }

    fn requires_grad(&self) -> bool {
        self.requires_grad.load(Ordering::Acquire)
            || self.has_grad_fn.load(Ordering::Acquire)
            || (self.is_bw_view.load(Ordering::Acquire)
                && self
                    .state
                    .lock()
                    .view
                    .as_ref()
                    .is_some_and(|v| v.base.requires_grad()))
    }

    fn grad(&self) -> Option<TensorBase> {
        self.grad.get().and_then(|cell| cell.lock().clone())
    }

    fn set_grad(&self, grad: Option<TensorBase>) -> Result<()> {
        match (self.grad.get(), grad) {
            (Some(cell), grad) => *cell.lock() = grad,
            (None, None) => {}
            (None, grad) => *self.grad_cell().lock() = grad,
        }
        Ok(())
    }

    fn fw_grad(&self, level: u64, tensor: &TensorBase) -> Option<TensorBase> {
        if level != forward_grad::LEVEL || !forward_grad::fw_grad_mode() {
            return None;
        }
        let base = {
            let st = self.state.lock();
            if let Some(g) = st.fw_grad.as_ref().and_then(|g| g.value()) {
                return Some(g);
            }
            match &st.view {
                Some(v) if v.is_fw_differentiable => v.base.clone(),
                _ => return None,
            }
        };
        // A view without a tangent of its own whose base got one (by an in-place operator):
        // its tangent is the same view of the base's (`AutogradMeta::fw_grad`).
        let base_grad = base.fw_grad(level)?;
        let view_grad = view_of_base_grad(&Tensor::from_base(base_grad), &base, tensor).ok()?;
        let cell = Arc::new(ForwardGrad::default());
        cell.set_value(view_grad.base().clone());
        forward_grad::register(level, &cell).ok()?;
        self.state.lock().fw_grad = Some(cell);
        Some(view_grad.base().clone())
    }

    fn set_fw_grad(
        &self,
        new_grad: &TensorBase,
        tensor: &TensorBase,
        level: u64,
        is_inplace_op: bool,
    ) -> Result<()> {
        if new_grad.fw_grad(level).is_some() {
            return Err(Error::runtime(format!(
                "Setting a forward grad that itself has a forward gradient at the same level{level} is not supported."
            )));
        }
        let (dt, gdt) = (tensor.scalar_type(), new_grad.scalar_type());
        if !is_differentiable_type(dt) || !is_differentiable_type(gdt) {
            return Err(Error::runtime(format!(
                "Expected both tensor and its forward grad to be floating point or complex, but got {dt} and {gdt}"
            )));
        }
        if tensor.sizes() != new_grad.sizes() {
            return Err(Error::runtime(format!(
                "Trying to set a forward gradient that has a different size than that of the original Tensor, this is not supported. Tensor is of size {:?} while the given forward gradient is of size {:?}.",
                tensor.sizes(),
                new_grad.sizes()
            )));
        }
        let _formula = forward_grad::ForwardFormulaGuard::new();
        let new_grad = Tensor::from_base_ref(new_grad);
        let (existing, view) = {
            let st = self.state.lock();
            (
                st.fw_grad.as_ref().and_then(|g| g.value()),
                st.view
                    .as_ref()
                    .filter(|v| v.is_fw_differentiable)
                    .map(|v| v.base.clone()),
            )
        };
        // An in-place operator changes the tangent in place: views sharing it see the change.
        let existing = existing.or_else(|| {
            if is_inplace_op {
                self.fw_grad(level, tensor)
            } else {
                None
            }
        });
        if let (true, Some(existing)) = (is_inplace_op, existing) {
            if !existing.is_same(new_grad) {
                Tensor::from_base_ref(&existing).copy_(new_grad)?;
            }
            return Ok(());
        }
        let mut value = new_grad.clone();
        if let (true, Some(base)) = (is_inplace_op, &view) {
            // An in-place operator on a view whose base has no tangent: the base gets zeros and
            // the view's tangent is the view of them (`AutogradMeta::set_fw_grad`).
            let base_grad = ratten_aten::functions::zeros_like(base)?;
            let v = view_of_base_grad(&base_grad, base, tensor)?;
            v.copy_(new_grad)?;
            base.set_fw_grad(&base_grad, level, false)?;
            value = v;
        } else if view.is_none() && tensor.strides() != value.strides() {
            // A base's tangent has its layout, so that its views' tangents are the same views.
            let laid = ratten_aten::operators::empty_strided::call(
                &tensor.sizes(),
                &tensor.strides(),
                Some(value.scalar_type()),
                None,
                Some(value.device()),
                None,
            )?;
            laid.copy_(&value)?;
            value = laid;
        }
        let cell = Arc::new(ForwardGrad::default());
        cell.set_value(value.base().clone());
        forward_grad::register(level, &cell)?;
        self.state.lock().fw_grad = Some(cell);
        Ok(())
    }

    fn as_any(&self) -> &dyn Any {
        self
    }
}

/// Whether a dtype can carry gradients (`isDifferentiableType`): floating point and complex.
pub fn is_differentiable_type(t: ScalarType) -> bool {
    t.is_floating_point() || t.is_complex()
}

struct Factory;

impl AutogradMetaFactory for Factory {
    fn make(&self) -> Box<dyn AutogradMetaInterface> {
        Box::new(AutogradMeta::default())
    }
}

static FACTORY: Factory = Factory;

/// Registers this crate's metadata factory with ratten-core (once per process).
pub fn ensure_initialized() {
    static DONE: OnceLock<()> = OnceLock::new();
    DONE.get_or_init(|| {
        // Another registration (a second copy of this crate) is harmless: both make the same.
        let _ = set_autograd_meta_factory(&FACTORY);
        crate::ensure_linked();
    });
}

/// The tensor's metadata, if it has ratten-autograd's.
pub fn get_autograd_meta(t: &TensorBase) -> Option<&AutogradMeta> {
    t.autograd_meta()?.as_any().downcast_ref::<AutogradMeta>()
}

/// The tensor's metadata, made if the slot is empty (`materialize_autograd_meta`).
pub fn materialize_autograd_meta(t: &TensorBase) -> Result<&AutogradMeta> {
    ensure_initialized();
    if t.autograd_meta().is_none() {
        // Two threads may race here: the loser's box is refused and dropped.
        // Allocated first and filled in place (Note [Nodes made in place]).
        let meta = Box::<AutogradMeta>::new_uninit();
        let meta: Box<AutogradMeta> = Box::write(meta, AutogradMeta::default());
        let _ = t.set_autograd_meta(meta);
    }
    get_autograd_meta(t).ok_or_else(|| {
        Error::runtime("this tensor's autograd metadata belongs to another autograd implementation")
    })
}

/// `requires_grad()`.
#[inline]
pub fn requires_grad(t: &TensorBase) -> bool {
    t.requires_grad()
}

/// `t.grad_fn()`: the node that computes the gradient of `t`'s history, None for a leaf. A view
/// whose base was modified in place gets its `grad_fn` rebuilt (Note [Views and their base]).
pub fn grad_fn(t: &TensorBase) -> Option<Arc<dyn Node>> {
    let meta = get_autograd_meta(t)?;
    let mut st = meta.state.lock();
    if let Some(view) = &st.view {
        let current = t.version();
        if view.attr_version != current && view.is_bw_differentiable {
            let base = view.base.clone();
            if base.requires_grad() {
                drop(st);
                let node = crate::view_backward::as_strided_backward_for_view(t, &base);
                let mut st = meta.state.lock();
                if let Some(v) = &mut st.view {
                    v.attr_version = current;
                }
                st.grad_fn = node.clone();
                st.output_nr = 0;
                meta.has_grad_fn.store(node.is_some(), Ordering::Release);
                return node;
            }
            if let Some(v) = &mut st.view {
                v.attr_version = current;
            }
        }
    }
    st.grad_fn.clone()
}

/// `output_nr()`: which output of its `grad_fn` the tensor is.
pub fn output_nr(t: &TensorBase) -> u32 {
    get_autograd_meta(t).map_or(0, |m| m.state.lock().output_nr)
}

/// `is_leaf()`.
pub fn is_leaf(t: &TensorBase) -> bool {
    grad_fn(t).is_none()
}

/// `impl::gradient_edge`: where `t`'s gradient goes.
pub fn gradient_edge(t: &TensorBase) -> Edge {
    let Some(meta) = get_autograd_meta(t) else {
        return Edge::default();
    };
    // Not a view (whose grad_fn may need rebuilding): one look under the lock.
    {
        let st = meta.state.lock();
        if st.view.is_none() {
            if let Some(f) = &st.grad_fn {
                return Edge::new(f.clone(), st.output_nr);
            }
            if !meta.requires_grad.load(Ordering::Acquire) {
                return Edge::default();
            }
            if let Some(acc) = st.grad_accumulator.as_ref().and_then(Weak::upgrade) {
                return Edge::new(acc, 0);
            }
        }
    }
    if let Some(f) = grad_fn(t) {
        return Edge::new(f, output_nr(t));
    }
    match grad_accumulator(t) {
        Some(acc) => Edge::new(acc, 0),
        None => Edge::default(),
    }
}

/// `impl::grad_accumulator`: the AccumulateGrad node of a leaf that requires grad, made on
/// first use and kept weakly (the graphs that use it keep it alive).
pub fn grad_accumulator(t: &TensorBase) -> Option<Arc<dyn Node>> {
    let meta = get_autograd_meta(t)?;
    if !meta.requires_grad.load(Ordering::Acquire) {
        return None;
    }
    let mut st = meta.state.lock();
    if st.grad_fn.is_some() {
        return None;
    }
    if let Some(acc) = st.grad_accumulator.as_ref().and_then(Weak::upgrade) {
        return Some(acc);
    }
    let acc = AccumulateGrad::new(Tensor::from_base(t.clone()));
    st.grad_accumulator = Some(Arc::downgrade(&acc));
    Some(acc)
}

/// `impl::set_gradient_edge`: makes `t` output `edge.input_nr` of `edge.function`.
pub fn set_gradient_edge(t: &TensorBase, edge: Edge) -> Result<()> {
    let meta = materialize_autograd_meta(t)?;
    let mut st = meta.state.lock();
    meta.has_grad_fn
        .store(edge.function.is_some(), Ordering::Release);
    st.grad_fn = edge.function;
    st.output_nr = edge.input_nr;
    if let Some(v) = &mut st.view {
        v.attr_version = t.version();
    }
    Ok(())
}

/// Sets `requires_grad` of a leaf (`requires_grad_`), with torch's checks.
pub fn set_requires_grad(t: &TensorBase, requires_grad: bool) -> Result<()> {
    ensure_initialized();
    if !requires_grad && grad_fn(t).is_some() {
        return Err(Error::runtime(
            "you can only change requires_grad flags of leaf variables. If you want to use a \
             computed variable in a subgraph that doesn't require differentiation use \
             var_no_grad = var.detach().",
        ));
    }
    if requires_grad && !is_differentiable_type(t.scalar_type()) {
        return Err(Error::runtime(
            "only Tensors of floating point and complex dtype can require gradients",
        ));
    }
    t.set_requires_grad(requires_grad)
}

/// Whether `t` is a view with a recorded base (`_is_view()`).
pub fn is_view(t: &TensorBase) -> bool {
    get_autograd_meta(t).is_some_and(|m| m.state.lock().view.is_some())
}

/// The base of a view (`_base`), None for a tensor that is not a view.
pub fn view_base(t: &TensorBase) -> Option<Tensor> {
    get_autograd_meta(t).and_then(|m| m.state.lock().view.as_ref().map(|v| v.base.clone()))
}

/// The view information of `t`, if it is a view.
pub fn view_info(t: &TensorBase) -> Option<ViewInfo> {
    get_autograd_meta(t).and_then(|m| m.state.lock().view.clone())
}

/// Makes `view` a view of `base` (`as_view`, Note [Views and their base]).
pub fn as_view(
    base: &Tensor,
    view: &Tensor,
    is_bw_differentiable: bool,
    is_fw_differentiable: bool,
    creation_meta: CreationMeta,
) -> Result<()> {
    // The base recorded is always a non-view; a view of a view also inherits how the first
    // view was made when that is the stricter.
    let (root, creation_meta) = match view_info(base) {
        Some(v) => {
            let cm = if v.creation_meta != CreationMeta::Default {
                v.creation_meta
            } else {
                creation_meta
            };
            (v.base, cm)
        }
        None => (base.clone(), creation_meta),
    };
    let meta = materialize_autograd_meta(view)?;
    meta.is_bw_view
        .store(is_bw_differentiable, Ordering::Release);
    let mut st = meta.state.lock();
    st.view = Some(ViewInfo {
        base: root,
        creation_meta,
        attr_version: view.version(),
        is_bw_differentiable,
        is_fw_differentiable,
    });
    Ok(())
}

/// The view of `base_grad` (the tangent of `base`) that `view` is of `base`, by its geometry.
fn view_of_base_grad(base_grad: &Tensor, base: &Tensor, view: &TensorBase) -> Result<Tensor> {
    let offset = base_grad.storage_offset() + view.storage_offset() - base.storage_offset();
    ratten_aten::operators::as_strided::call(
        base_grad,
        &view.sizes(),
        &view.strides(),
        Some(offset),
    )
}

/// Marks a view as having no tangent of its base's (`_fw_primal`).
pub fn set_fw_differentiable(t: &TensorBase, is_fw_differentiable: bool) {
    if let Some(m) = get_autograd_meta(t) {
        if let Some(v) = &mut m.state.lock().view {
            v.is_fw_differentiable = is_fw_differentiable;
        }
    }
}

/// Changes a view's creation meta (`handle_view_on_rebase` reads it).
pub fn set_creation_meta(t: &TensorBase, cm: CreationMeta) {
    if let Some(m) = get_autograd_meta(t) {
        if let Some(v) = &mut m.state.lock().view {
            v.creation_meta = cm;
        }
    }
}

/// Registers a hook on `t`'s gradient (`register_hook`); returns its id.
pub fn register_hook(t: &TensorBase, hook: TensorPreHook) -> Result<u64> {
    if !t.requires_grad() {
        return Err(Error::runtime(
            "cannot register a hook on a tensor that doesn't require gradient",
        ));
    }
    match grad_fn(t) {
        Some(f) => Ok(f.base().add_tensor_pre_hook(output_nr(t), hook)),
        None => {
            static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1 << 62);
            let id = NEXT.fetch_add(1, Ordering::Relaxed);
            let meta = materialize_autograd_meta(t)?;
            meta.state.lock().leaf_hooks.push((id, hook));
            Ok(id)
        }
    }
}

/// Removes a hook registered by [`register_hook`].
pub fn remove_hook(t: &TensorBase, id: u64) -> bool {
    if let Some(m) = get_autograd_meta(t) {
        let mut st = m.state.lock();
        let before = st.leaf_hooks.len();
        st.leaf_hooks.retain(|(i, _)| *i != id);
        if st.leaf_hooks.len() != before {
            return true;
        }
    }
    grad_fn(t).is_some_and(|f| f.base().remove_tensor_pre_hook(id))
}

/// The hooks of a leaf, in registration order.
pub(crate) fn leaf_hooks(t: &TensorBase) -> Vec<TensorPreHook> {
    get_autograd_meta(t).map_or_else(Vec::new, |m| {
        m.state
            .lock()
            .leaf_hooks
            .iter()
            .map(|(_, h)| h.clone())
            .collect()
    })
}

/// `register_post_accumulate_grad_hook` (leaves only, torch's error otherwise); returns the
/// hook's id for [`remove_post_accumulate_grad_hook`].
pub fn register_post_accumulate_grad_hook(
    t: &TensorBase,
    hook: PostAccumulateGradHook,
) -> Result<u64> {
    if !t.requires_grad() {
        return Err(Error::runtime(
            "cannot register a hook on a tensor that doesn't require gradient",
        ));
    }
    if grad_fn(t).is_some() {
        return Err(Error::runtime(
            "post accumulate grad hooks cannot be registered on non-leaf tensors",
        ));
    }
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(1);
    let id = NEXT.fetch_add(1, Ordering::Relaxed);
    materialize_autograd_meta(t)?
        .state
        .lock()
        .post_accumulate_grad_hooks
        .push((id, hook));
    Ok(id)
}

/// Removes a hook registered by [`register_post_accumulate_grad_hook`]; false when it was
/// already gone.
pub fn remove_post_accumulate_grad_hook(t: &TensorBase, id: u64) -> bool {
    get_autograd_meta(t).is_some_and(|m| {
        let mut st = m.state.lock();
        let before = st.post_accumulate_grad_hooks.len();
        st.post_accumulate_grad_hooks.retain(|(i, _)| *i != id);
        st.post_accumulate_grad_hooks.len() != before
    })
}

pub(crate) fn post_accumulate_grad_hooks(t: &TensorBase) -> Vec<PostAccumulateGradHook> {
    get_autograd_meta(t).map_or_else(Vec::new, |m| {
        m.state
            .lock()
            .post_accumulate_grad_hooks
            .iter()
            .map(|(_, h)| h.clone())
            .collect()
    })
}

/// `retain_grad()`: a non-leaf keeps its gradient in `.grad` (a no-op on leaves).
pub fn retain_grad(t: &TensorBase) -> Result<()> {
    if !t.requires_grad() {
        return Err(Error::runtime(
            "can't retain_grad on Tensor that has requires_grad=False",
        ));
    }
    let Some(f) = grad_fn(t) else {
        return Ok(());
    };
    let meta = materialize_autograd_meta(t)?;
    if meta.state.lock().retains_grad {
        return Ok(());
    }
    let cell = meta.grad_cell();
    f.base().set_retains_grad_hook(
        output_nr(t),
        Arc::new(move |g: &Tensor| {
            let mut slot = cell.lock();
            *slot = Some(match slot.take() {
                None => g.clone_with(None)?.into_base(),
                Some(old) => Tensor::from_base(old).add(g)?.into_base(),
            });
            Ok(None)
        }),
    );
    meta.state.lock().retains_grad = true;
    Ok(())
}

/// `retains_grad`.
pub fn retains_grad(t: &TensorBase) -> bool {
    get_autograd_meta(t).is_some_and(|m| m.state.lock().retains_grad)
}

/// `detach_()`: `t` leaves the graph that made it (no history, no longer requiring grad).
pub fn detach_(t: &TensorBase) -> Result<()> {
    if is_view(t) {
        return Err(Error::runtime(
            "Can't detach views in-place. Use detach() instead.",
        ));
    }
    if let Some(m) = get_autograd_meta(t) {
        let mut st = m.state.lock();
        st.grad_fn = None;
        st.output_nr = 0;
        m.has_grad_fn.store(false, Ordering::Release);
        m.requires_grad.store(false, Ordering::Release);
    }
    Ok(())
}
