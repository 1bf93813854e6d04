//! ratten-py: the `ratten` Python package's native part (`ratten._C`).
//!
//! Modules that need no Python runtime (the argument parser, the numpy layout rules) are
//! always built and unit-tested by `cargo test`; the pyo3 layer is behind the `python`
//! feature, which maturin turns on (with `extension-module`).

pub mod arg_parser;
pub mod data;
pub mod indexing;

#[cfg(feature = "python")]
pub mod python;
