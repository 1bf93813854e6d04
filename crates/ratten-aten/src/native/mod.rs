//! Native kernels (aten/src/ATen/native).

pub mod binary_ops;
pub mod copy;
pub mod cpu;
pub mod factory;
pub mod pointwise;
pub mod simple_binary;
pub mod simple_loops;
pub mod simple_reduce;
pub mod simple_unary;
pub mod type_properties;
pub mod unary_ops;
pub mod view;

// The kernels `native_functions.yaml` names (`crate::native::<kernel>`).
pub use simple_binary::*;
pub use simple_reduce::*;
pub use simple_unary::*;
