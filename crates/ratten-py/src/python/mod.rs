//! The pyo3 layer: `ratten._C`. Thin: values are converted here and the work is done by
//! ratten-aten, ratten-dispatch and this crate's pure modules (`arg_parser`, `data`,
//! `indexing`).
//!
//! Note [Python layers]: the modules form layers, and a module imports only modules of
//! lower layers (its doc's first line says which it is in; `tests/python_layers.rs` checks
//! every `super::`/`crate::python::` path against this table, so there are no cycles). This
//! file only declares them, re-exports and registers them in `ratten._C`; nothing imports it.
//!
//! | layer | modules | what |
//! |---|---|---|
//! | 0 | `error` | ratten errors and panics as Python exceptions |
//! | 1 | `object`, `types` | the `Tensor` object (value, wrap, unwrap); dtype, device, memory format objects |
//! | 2 | `convert`, `storage`, `dlpack` | Python values to and from Scalar, IValue, Tensor arguments; the storage object and pickling's rebuilds; DLPack exchange |
//! | 3 | `python_args` | the argument parser on Python objects, `PythonArgs`, result conversion |
//! | 4 | `crate::generated::dispatch` | generated: one dispatch function per binding |
//! | 5 | `bindings`, `ops`, `functions`, `autograd` | generated tables; boxed calls by schema; other module functions; autograd's bindings |
//! | 6 | `fast`, `dispatch` | fast arithmetic paths; the dispatcher from Python |
//! | 7 | `callables`, `slots`, `tensor` | function/method objects, number slots, the Tensor type's API |
//!
//! The generated code (`crate::generated`, written by ratten-gen) imports
//! `python_args::{into_py_result, DispatchFn, PythonArgs}` and `crate::arg_parser::Binding`.

mod autograd;
mod bindings;
mod callables;
mod convert;
mod dispatch;
mod dlpack;
mod error;
mod fast;
mod functions;
mod object;
mod ops;
pub mod python_args;
mod slots;
mod storage;
mod tensor;
mod types;

use pyo3::prelude::*;

pub use error::to_pyerr;
pub use object::PyTensor;
pub use types::{PyDevice, PyDtype};

#[pymodule]
#[pyo3(name = "_C")]
fn ratten_c(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    error::install_warning_handler();
    // First: the Tensor object's layout, which the callables and slots below rely on.
    object::register(m)?;
    types::register(m)?;
    tensor::register(m)?;
    storage::register(m)?;
    dlpack::register(m)?;
    functions::register(m)?;
    autograd::register(m)?;
    ops::register(m)?;
    dispatch::register(m)?;
    python_args::register(m)?;
    bindings::register(m)?;
    callables::register(m)?;
    slots::register(m)?;
    Ok(())
}
