//! Layer 0 (errors): ratten errors and Rust panics as the Python exceptions torch raises.
//! Imports no other module of the Python layer.

use std::any::Any;
use std::ptr;

use pyo3::exceptions::{
    PyIndexError, PyNotImplementedError, PyRuntimeError, PyTypeError, PyValueError,
};
use pyo3::ffi;
use pyo3::panic::PanicException;
use pyo3::prelude::*;

/// A ratten error as the Python exception class torch raises, with ratten's message.
pub fn to_pyerr(e: ratten_core::Error) -> PyErr {
    use ratten_core::ErrorKind;
    let msg = e.message().to_string();
    match e.kind() {
        ErrorKind::Runtime => PyRuntimeError::new_err(msg),
        ErrorKind::Type => PyTypeError::new_err(msg),
        ErrorKind::Value => PyValueError::new_err(msg),
        ErrorKind::Index => PyIndexError::new_err(msg),
        ErrorKind::NotImplemented => PyNotImplementedError::new_err(msg),
    }
}

/// `?` on ratten results inside pyo3 functions.
pub(crate) trait IntoPy<T> {
    fn py(self) -> PyResult<T>;
}

impl<T> IntoPy<T> for ratten_core::Result<T> {
    fn py(self) -> PyResult<T> {
        self.map_err(to_pyerr)
    }
}

/// Raises `e` (a ratten error as torch's exception class) and returns null.
#[cold]
pub(super) fn raise(e: ratten_core::Error) -> *mut ffi::PyObject {
    Python::with_gil(|py| to_pyerr(e).restore(py));
    ptr::null_mut()
}

/// A panic's payload as pyo3's PanicException (as pyo3's trampoline makes it).
#[cold]
pub(super) fn panic_error(payload: Box<dyn Any + Send>) -> PyErr {
    let msg = if let Some(s) = payload.downcast_ref::<String>() {
        s.clone()
    } else if let Some(s) = payload.downcast_ref::<&str>() {
        (*s).to_string()
    } else {
        "panic from Rust code".to_string()
    };
    PanicException::new_err(msg)
}

/// Raises a panic's payload as PanicException and returns null.
#[cold]
pub(super) fn raise_panic(payload: Box<dyn Any + Send>) -> *mut ffi::PyObject {
    Python::with_gil(|py| panic_error(payload).restore(py));
    ptr::null_mut()
}
