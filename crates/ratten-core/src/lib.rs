//! ratten-core: what PyTorch keeps in c10. Dtypes and their element types, Scalar, Device,
//! the allocator and Storage, TensorImpl and the `TensorBase` handle, dispatch keys.
//!
//! Nothing here dispatches; the operators live in `ratten-aten`.

pub mod device;
pub mod dispatch_key;
pub mod dispatch_key_set;
pub mod dtype;
pub mod error;
pub mod local_dispatch_key_set;

pub use device::{Device, DeviceType};
pub use dispatch_key::{BackendComponent, DispatchKey};
pub use dispatch_key_set::DispatchKeySet;
pub use dtype::{Element, ScalarType};
pub use error::{Error, ErrorKind, Result};

// Re-exported for `dispatch_all_types!` and for users who name element types.
pub use half;
pub use num_complex;
