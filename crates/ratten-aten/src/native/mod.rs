//! Native kernels (aten/src/ATen/native).

pub mod factory;
pub mod type_properties;
pub mod view;
