//! Native kernels (aten/src/ATen/native).

pub mod factory;
pub mod view;
