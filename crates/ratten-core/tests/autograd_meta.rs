//! The autograd metadata slot with a registered factory (a process of its own: a factory is
//! registered once, for good).

use std::any::Any;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use parking_lot::Mutex;
use ratten_core::autograd_meta::{autograd_meta_factory, set_autograd_meta_factory};
use ratten_core::{
    AutogradMetaFactory, AutogradMetaInterface, Device, Result, ScalarType, TensorBase, TensorImpl,
};

/// A stand-in for the autograd crate's AutogradMeta: only floating tensors may require grad.
#[derive(Default)]
struct Meta {
    requires_grad: AtomicBool,
    grad: Mutex<Option<TensorBase>>,
}

impl AutogradMetaInterface for Meta {
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
    fn fw_grad(&self, _level: u64, _tensor: &TensorBase) -> Option<TensorBase> {
        None
    }
    fn set_fw_grad(&self, _: &TensorBase, _: &TensorBase, _: u64, _: bool) -> Result<()> {
        Ok(())
    }
    fn as_any(&self) -> &dyn Any {
        self
    }
}

static MADE: AtomicUsize = AtomicUsize::new(0);

struct Factory;

impl AutogradMetaFactory for Factory {
    fn make(&self) -> Box<dyn AutogradMetaInterface> {
        MADE.fetch_add(1, Ordering::SeqCst);
        Box::new(Meta::default())
    }
}

#[test]
fn the_factory_makes_metadata_when_a_tensor_first_needs_some() {
    set_autograd_meta_factory(&Factory).unwrap();
    assert!(set_autograd_meta_factory(&Factory).is_err());
    assert!(autograd_meta_factory().is_some());

    let t = TensorBase::empty(&[3], ScalarType::Float, Device::CPU).unwrap();
    // Nothing to record: still no metadata.
    t.set_requires_grad(false).unwrap();
    assert!(t.autograd_meta().is_none());
    assert_eq!(MADE.load(Ordering::SeqCst), 0);

    t.set_requires_grad(true).unwrap();
    assert!(t.requires_grad());
    assert_eq!(MADE.load(Ordering::SeqCst), 1);
    let meta = t.autograd_meta().unwrap();
    assert!(meta.as_any().downcast_ref::<Meta>().is_some());
    // Once made, the same metadata answers every later question, through every handle.
    let u = t.clone();
    u.set_requires_grad(false).unwrap();
    assert!(!t.requires_grad());
    let g = TensorBase::zeros(&[3], ScalarType::Float, Device::CPU).unwrap();
    u.set_grad(Some(g.clone())).unwrap();
    assert!(t.grad().is_some_and(|x| x.is_same(&g)));
    assert_eq!(MADE.load(Ordering::SeqCst), 1);

    // A grad given to a tensor without metadata makes it.
    let v = TensorBase::empty(&[3], ScalarType::Float, Device::CPU).unwrap();
    v.set_grad(Some(g)).unwrap();
    assert_eq!(MADE.load(Ordering::SeqCst), 2);
    assert!(!v.requires_grad() && v.grad().is_some());
}
