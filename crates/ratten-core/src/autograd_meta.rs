//! The per-tensor slot for autograd metadata (c10's `AutogradMetaInterface`, the
//! `autograd_meta_` field of `TensorImpl`, and `impl::AutogradMetaFactory`).
//!
//! Note [Autograd metadata slot]: ratten-core knows nothing of autograd. Every TensorImpl has a
//! type-erased slot that an autograd implementation (a crate above this one) fills with its own
//! metadata (torch's `AutogradMeta`: requires_grad, grad, grad_fn, hooks, ...) behind the
//! [`AutogradMetaInterface`] trait, as c10's TensorImpl holds a
//! `std::unique_ptr<AutogradMetaInterface>`; the implementation downcasts its own type back
//! with [`AutogradMetaInterface::as_any`], as torch casts to `AutogradMeta*`.
//!
//! - *Empty* is the common state: a tensor that does not require grad and has no grad. The
//!   accessors on [`TensorBase`] answer for an empty slot as c10 does for a null pointer
//!   (`requires_grad()` false, no grad); reading the slot is a load and a null check, and a
//!   tensor that never has metadata pays nothing else (creation writes one word, drop and
//!   recycling check it).
//! - *Set once per TensorImpl*, through any handle ([`TensorBase::set_autograd_meta`], or
//!   made by the registered [`AutogradMetaFactory`] the first time
//!   `set_requires_grad(true)`, `set_grad` or `set_fw_grad` needs it, as c10 does). Its
//!   state then changes through the trait's `&self` methods: the implementation guards its
//!   own fields (torch's AutogradMeta has its own mutex), since a TensorImpl is shared
//!   between threads. Once set, the metadata object is never replaced or removed while the
//!   tensor lives, so a `&dyn AutogradMetaInterface` borrowed from a tensor stays valid for
//!   that borrow.
//! - *Views and aliases* made by ratten-core (`as_strided`, `alias`) start empty: the autograd
//!   layer gives differentiable views their metadata, as torch's `make_variable_*_view` does.
//! - *Recycling*: a spare tensor's slot is emptied (its metadata dropped) before the tensor is
//!   kept for reuse, so a recycled tensor never carries another tensor's metadata
//!   (Note [Per-thread object caches]).

use std::any::Any;
use std::sync::OnceLock;

use crate::error::{Error, Result};
use crate::tensor_impl::{TensorBase, TensorImpl};

/// What ratten-core asks of a tensor's autograd metadata (c10's `AutogradMetaInterface`).
/// Methods take `&self`: the metadata is shared with every handle of its tensor, on any
/// thread, and guards its own state.
pub trait AutogradMetaInterface: Any + Send + Sync {
    /// Sets whether the tensor requires grad; `self_impl` is the tensor's implementation
    /// (c10 passes `this`), for checks such as "only floating point and complex tensors can
    /// require gradients".
    fn set_requires_grad(&self, requires_grad: bool, self_impl: &TensorImpl) -> Result<()>;
    fn requires_grad(&self) -> bool;
    /// The accumulated gradient (`grad()`), None when there is none (c10's undefined tensor).
    fn grad(&self) -> Option<TensorBase>;
    /// Replaces the accumulated gradient (c10's `mutable_grad() = grad`).
    fn set_grad(&self, grad: Option<TensorBase>) -> Result<()>;
    /// The forward-mode gradient at `level` (c10's `fw_grad(level, self)`; `tensor` is the
    /// tensor this metadata belongs to), None when there is none.
    fn fw_grad(&self, level: u64, tensor: &TensorBase) -> Option<TensorBase>;
    /// Sets the forward-mode gradient of `tensor` at `level` (c10's `set_fw_grad`).
    fn set_fw_grad(
        &self,
        new_grad: &TensorBase,
        tensor: &TensorBase,
        level: u64,
        is_inplace_op: bool,
    ) -> Result<()>;
    /// The implementation itself, for its crate to downcast.
    fn as_any(&self) -> &dyn Any;
}

/// Makes the metadata of a tensor that gets some (c10's `impl::AutogradMetaFactory`). The
/// autograd implementation registers one with [`set_autograd_meta_factory`].
pub trait AutogradMetaFactory: Send + Sync {
    fn make(&self) -> Box<dyn AutogradMetaInterface>;
}

static FACTORY: OnceLock<&'static dyn AutogradMetaFactory> = OnceLock::new();

/// Registers the process's autograd implementation (c10's `SetAutogradMetaFactory`); one per
/// process: a second registration is refused.
pub fn set_autograd_meta_factory(factory: &'static dyn AutogradMetaFactory) -> Result<()> {
    FACTORY
        .set(factory)
        .map_err(|_| Error::runtime("an AutogradMetaFactory is already registered"))
}

/// The registered factory, if any.
pub fn autograd_meta_factory() -> Option<&'static dyn AutogradMetaFactory> {
    FACTORY.get().copied()
}

fn make_meta() -> Result<Box<dyn AutogradMetaInterface>> {
    autograd_meta_factory().map(|f| f.make()).ok_or_else(|| {
        Error::runtime(
            "autograd is not available: no AutogradMetaFactory is registered (an autograd \
             implementation registers one with ratten_core::autograd_meta::\
             set_autograd_meta_factory)",
        )
    })
}

/// A TensorImpl's slot (see Note [Autograd metadata slot]): empty, or set once.
pub(crate) struct AutogradMetaSlot(OnceLock<Box<dyn AutogradMetaInterface>>);

impl AutogradMetaSlot {
    #[inline(always)]
    pub(crate) const fn new() -> Self {
        AutogradMetaSlot(OnceLock::new())
    }

    #[inline]
    pub(crate) fn get(&self) -> Option<&dyn AutogradMetaInterface> {
        self.0.get().map(|b| &**b)
    }

    /// Empties the slot (a TensorImpl reached through its only handle: nobody can borrow the
    /// metadata meanwhile), dropping the metadata.
    #[inline]
    pub(crate) fn clear(&mut self) {
        if let Some(m) = self.0.take() {
            drop(m);
        }
    }

    /// The metadata, made by the factory if the slot is empty.
    fn get_or_make(&self) -> Result<&dyn AutogradMetaInterface> {
        if let Some(m) = self.get() {
            return Ok(m);
        }
        let made = make_meta()?;
        // Another thread may have set the slot meanwhile: theirs is kept, ours dropped.
        Ok(&**self.0.get_or_init(|| made))
    }
}

impl std::fmt::Debug for AutogradMetaSlot {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.get().is_some() {
            "Some(..)"
        } else {
            "None"
        })
    }
}

impl TensorImpl {
    /// The tensor's autograd metadata (c10's `autograd_meta()`), None while the slot is empty.
    #[inline]
    pub fn autograd_meta(&self) -> Option<&dyn AutogradMetaInterface> {
        self.autograd_meta_slot().get()
    }
}

impl TensorBase {
    /// The tensor's autograd metadata, None while the slot is empty.
    #[inline]
    pub fn autograd_meta(&self) -> Option<&dyn AutogradMetaInterface> {
        self.unsafe_get_tensor_impl().autograd_meta()
    }

    /// Fills the empty slot with `meta` (c10's `set_autograd_meta` on a tensor that has none).
    /// Refused when the tensor already has metadata: it is set once per TensorImpl.
    pub fn set_autograd_meta(&self, meta: Box<dyn AutogradMetaInterface>) -> Result<()> {
        self.unsafe_get_tensor_impl()
            .autograd_meta_slot()
            .0
            .set(meta)
            .map_err(|_| {
                Error::runtime("set_autograd_meta: this tensor already has autograd metadata")
            })
    }

    /// `requires_grad()`: false without metadata.
    #[inline]
    pub fn requires_grad(&self) -> bool {
        self.autograd_meta().is_some_and(|m| m.requires_grad())
    }

    /// `set_requires_grad`: `false` on a tensor without metadata changes nothing; otherwise
    /// the metadata (made by the registered factory if there is none yet) decides.
    pub fn set_requires_grad(&self, requires_grad: bool) -> Result<()> {
        let imp = self.unsafe_get_tensor_impl();
        let slot = imp.autograd_meta_slot();
        if !requires_grad && slot.get().is_none() {
            return Ok(());
        }
        slot.get_or_make()?.set_requires_grad(requires_grad, imp)
    }

    /// `grad()`: the accumulated gradient, None without metadata or gradient.
    pub fn grad(&self) -> Option<TensorBase> {
        self.autograd_meta().and_then(|m| m.grad())
    }

    /// Sets the accumulated gradient (c10's `mutable_grad() = grad`), making the metadata if
    /// there is none (clearing the gradient of a tensor without metadata changes nothing).
    pub fn set_grad(&self, grad: Option<TensorBase>) -> Result<()> {
        let slot = self.unsafe_get_tensor_impl().autograd_meta_slot();
        if grad.is_none() && slot.get().is_none() {
            return Ok(());
        }
        slot.get_or_make()?.set_grad(grad)
    }

    /// `_fw_grad(level, self)`: None without metadata or forward gradient.
    pub fn fw_grad(&self, level: u64) -> Option<TensorBase> {
        self.autograd_meta().and_then(|m| m.fw_grad(level, self))
    }

    /// `_set_fw_grad(new_grad, self, level, is_inplace_op)`, making the metadata if there is
    /// none.
    pub fn set_fw_grad(
        &self,
        new_grad: &TensorBase,
        level: u64,
        is_inplace_op: bool,
    ) -> Result<()> {
        self.unsafe_get_tensor_impl()
            .autograd_meta_slot()
            .get_or_make()?
            .set_fw_grad(new_grad, self, level, is_inplace_op)
    }
}

#[cfg(test)]
mod tests {
    use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

    use parking_lot::Mutex;

    use super::*;
    use crate::device::Device;
    use crate::dtype::ScalarType;

    /// A minimal AutogradMeta: a flag, a grad, one forward grad, and a count of drops.
    #[derive(Default)]
    struct TestMeta {
        requires_grad: AtomicBool,
        grad: Mutex<Option<TensorBase>>,
        fw: Mutex<Option<(u64, TensorBase)>>,
        drops: Option<&'static AtomicUsize>,
    }

    impl TestMeta {
        fn counted(drops: &'static AtomicUsize) -> TestMeta {
            TestMeta {
                drops: Some(drops),
                requires_grad: AtomicBool::new(false),
                grad: Mutex::new(None),
                fw: Mutex::new(None),
            }
        }
    }

    impl Drop for TestMeta {
        fn drop(&mut self) {
            if let Some(d) = self.drops {
                d.fetch_add(1, Ordering::SeqCst);
            }
        }
    }

    impl AutogradMetaInterface for TestMeta {
        fn set_requires_grad(&self, requires_grad: bool, self_impl: &TensorImpl) -> Result<()> {
            let _ = self_impl;
            self.requires_grad.store(requires_grad, Ordering::SeqCst);
            Ok(())
        }
        fn requires_grad(&self) -> bool {
            self.requires_grad.load(Ordering::SeqCst)
        }
        fn grad(&self) -> Option<TensorBase> {
            self.grad.lock().clone()
        }
        fn set_grad(&self, grad: Option<TensorBase>) -> Result<()> {
            *self.grad.lock() = grad;
            Ok(())
        }
        fn fw_grad(&self, level: u64, _tensor: &TensorBase) -> Option<TensorBase> {
            self.fw
                .lock()
                .as_ref()
                .filter(|(l, _)| *l == level)
                .map(|(_, t)| t.clone())
        }
        fn set_fw_grad(
            &self,
            new_grad: &TensorBase,
            _tensor: &TensorBase,
            level: u64,
            _is_inplace_op: bool,
        ) -> Result<()> {
            *self.fw.lock() = Some((level, new_grad.clone()));
            Ok(())
        }
        fn as_any(&self) -> &dyn Any {
            self
        }
    }

    fn small() -> TensorBase {
        TensorBase::empty(&[2], ScalarType::Float, Device::CPU).unwrap()
    }

    #[test]
    fn an_empty_slot_answers_as_c10_does_for_no_metadata() {
        let t = small();
        assert!(t.autograd_meta().is_none());
        assert!(!t.requires_grad());
        assert!(t.grad().is_none() && t.fw_grad(0).is_none());
        // Nothing to record: no metadata needed, none made.
        t.set_requires_grad(false).unwrap();
        t.set_grad(None).unwrap();
        assert!(t.autograd_meta().is_none());
    }

    #[test]
    fn metadata_is_set_once_shared_by_handles_and_downcast_by_its_owner() {
        let t = small();
        let u = t.clone();
        t.set_autograd_meta(Box::new(TestMeta::default())).unwrap();
        let e = u
            .set_autograd_meta(Box::new(TestMeta::default()))
            .unwrap_err();
        assert!(e.message().contains("already has"), "{e}");
        u.set_requires_grad(true).unwrap();
        assert!(t.requires_grad());
        let g = small();
        t.set_grad(Some(g.clone())).unwrap();
        assert!(u.grad().is_some_and(|x| x.is_same(&g)));
        t.set_fw_grad(&g, 1, false).unwrap();
        assert!(u.fw_grad(1).is_some_and(|x| x.is_same(&g)) && u.fw_grad(0).is_none());
        let own = t
            .autograd_meta()
            .unwrap()
            .as_any()
            .downcast_ref::<TestMeta>();
        assert!(own.is_some_and(|m| m.requires_grad()));
        // Views made by ratten-core start without metadata.
        assert!(t.alias().autograd_meta().is_none());
        assert!(t
            .as_strided(&[1], &[1], Some(1))
            .unwrap()
            .autograd_meta()
            .is_none());
    }

    #[test]
    fn a_recycled_tensor_never_keeps_the_metadata_of_the_one_dropped() {
        static DROPS: AtomicUsize = AtomicUsize::new(0);
        let t = small();
        t.set_autograd_meta(Box::new(TestMeta::counted(&DROPS)))
            .unwrap();
        t.set_requires_grad(true).unwrap();
        // The metadata holds a tensor of its own (a grad): dropping it inside the recycling
        // releases that tensor too.
        t.set_grad(Some(small())).unwrap();
        let imp = t.unsafe_get_tensor_impl() as *const TensorImpl;
        drop(t);
        // Cleared when the tensor was kept as a spare: dropped exactly once, already.
        assert_eq!(DROPS.load(Ordering::SeqCst), 1);
        // The next small tensor on this thread is that spare, made fresh.
        let u = small();
        assert_eq!(u.unsafe_get_tensor_impl() as *const TensorImpl, imp);
        assert!(u.autograd_meta().is_none());
        assert!(!u.requires_grad() && u.grad().is_none());
        drop(u);
        assert_eq!(DROPS.load(Ordering::SeqCst), 1);
    }

    #[test]
    fn a_shared_or_large_tensor_drops_its_metadata_with_it() {
        static DROPS: AtomicUsize = AtomicUsize::new(0);
        let meta = || Box::new(TestMeta::counted(&DROPS));
        let big = TensorBase::empty(&[1000], ScalarType::Float, Device::CPU).unwrap();
        big.set_autograd_meta(meta()).unwrap();
        let other = big.clone();
        drop(big);
        assert_eq!(DROPS.load(Ordering::SeqCst), 0);
        assert!(other.autograd_meta().is_some());
        drop(other);
        assert_eq!(DROPS.load(Ordering::SeqCst), 1);
        // A small tensor whose storage a view still holds is not recycled, and still drops
        // its metadata exactly once.
        let t = small();
        t.set_autograd_meta(meta()).unwrap();
        let view = t.alias();
        drop(t);
        assert_eq!(DROPS.load(Ordering::SeqCst), 2);
        assert!(view.autograd_meta().is_none());
    }

    #[test]
    fn requires_grad_without_a_factory_is_an_error() {
        // No test of this crate registers a factory (one per process, for good).
        assert!(autograd_meta_factory().is_none());
        let t = small();
        let e = t.set_requires_grad(true).unwrap_err();
        assert!(e.message().contains("no AutogradMetaFactory"), "{e}");
        assert!(t.set_grad(Some(small())).is_err());
        assert!(t.set_fw_grad(&small(), 0, false).is_err());
        assert!(t.autograd_meta().is_none());
    }
}
