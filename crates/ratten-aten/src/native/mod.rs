//! Native kernels (aten/src/ATen/native).

pub mod binary_ops;
pub mod copy;
pub mod cpu;
pub mod factory;
pub mod index;
pub mod pointwise;
pub mod reduce_ops;
pub mod reduce_utils;
pub mod scan_ops;
pub mod scatter_gather;
pub mod tensor_compare;
pub mod type_properties;
pub mod unary_ops;
pub mod view;

// The kernels `native_functions.yaml` names (`crate::native::<kernel>`), and the argument types
// its schemas use that ratten-core lacks.
pub use binary_ops::*;
pub use copy::{
    copy, copy_, copy_meta, to_device, to_dtype, to_dtype_layout, to_other, type_as, Layout,
    MemoryFormat,
};
pub use index::*;
pub use pointwise::*;
pub use reduce_ops::*;
pub use scan_ops::*;
pub use scatter_gather::*;
pub use tensor_compare::*;
pub use unary_ops::*;
pub use view::*;
