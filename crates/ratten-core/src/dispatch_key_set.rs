//! PLACEHOLDER owned by the dispatcher helper: DispatchKeySet (c10/core/DispatchKeySet.h).
use crate::device::DeviceType;

#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub struct DispatchKeySet {
    repr: u64,
}

impl DispatchKeySet {
    pub const fn empty() -> Self {
        DispatchKeySet { repr: 0 }
    }
    /// The key set a new tensor on `device_type` carries (backend key plus its autograd key
    /// and ADInplaceOrView), as TensorImpl's constructor computes it.
    pub fn for_tensor(device_type: DeviceType) -> Self {
        let _ = device_type;
        DispatchKeySet { repr: 0 }
    }
}
