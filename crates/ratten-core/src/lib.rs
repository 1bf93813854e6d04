//! ratten-core: what PyTorch keeps in c10. Dtypes and their element types, Scalar, Device,
//! the allocator and Storage, TensorImpl and the `TensorBase` handle, dispatch keys.
//!
//! Nothing here dispatches; the operators live in `ratten-aten`.

pub mod access;
pub mod allocator;
pub mod autograd_meta;
pub mod default_dtype;
pub mod device;
pub mod dispatch_key;
pub mod dispatch_key_set;
pub mod dtype;
pub mod error;
pub mod local_dispatch_key_set;
mod object_cache;
pub mod options;
pub mod scalar;
pub mod snapshot;
pub mod storage;
pub mod tensor_impl;
pub mod type_promotion;

pub use access::{AccessedTensor, RawAccess, TensorAccess};
pub use allocator::{Allocator, DataPtr};
pub use autograd_meta::{AutogradMetaFactory, AutogradMetaInterface};
pub use default_dtype::{get_default_complex_dtype, get_default_dtype, set_default_dtype};
pub use device::{Device, DeviceType};
pub use dispatch_key::{BackendComponent, DispatchKey};
pub use dispatch_key_set::DispatchKeySet;
pub use dtype::{Element, PodElement, ScalarType};
pub use error::{Error, ErrorKind, Result};
pub use options::TensorOptions;
pub use scalar::{Scalar, ScalarConvert};
pub use storage::Storage;
pub use tensor_impl::{DimVec, TensorBase, TensorImpl, TensorMeta, VersionCounter};
pub use type_promotion::{can_cast, promote_types};

// Re-exported for `dispatch_all_types!` and for users who name element types.
pub use half;
pub use num_complex;
