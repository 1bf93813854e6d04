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

thread_local! {
    /// The warnings kernels emitted on this thread since the last flush.
    static PENDING_WARNINGS: std::cell::RefCell<Vec<ratten_aten::structured::Warning>> =
        const { std::cell::RefCell::new(Vec::new()) };
}

/// Makes ratten's warnings (`TORCH_WARN`) Python warnings: the handler keeps each on its
/// thread (a kernel may run with the GIL released), and [`flush_warnings`] raises them after
/// the call, as torch's `PyWarningHandler` does at the end of a binding. A warning emitted on
/// a worker thread of a parallel region is kept on that thread and raised by its next flush.
pub(crate) fn install_warning_handler() {
    ratten_aten::structured::set_warning_handler(Some(std::sync::Arc::new(|w| {
        let _ = PENDING_WARNINGS.try_with(|p| p.borrow_mut().push(w.clone()));
    })));
}

/// Raises the warnings pending on this thread through Python's `warnings` module:
/// `UserWarning`, or `DeprecationWarning` for `TORCH_WARN_DEPRECATION`'s. A warnings filter
/// that turns one into an error makes this the call's error.
pub(crate) fn flush_warnings(py: Python<'_>) -> PyResult<()> {
    let pending = PENDING_WARNINGS
        .try_with(|p| {
            let mut p = p.borrow_mut();
            (!p.is_empty()).then(|| std::mem::take(&mut *p))
        })
        .ok()
        .flatten();
    for w in pending.into_iter().flatten() {
        let category = if w.deprecation {
            py.get_type::<pyo3::exceptions::PyDeprecationWarning>()
        } else {
            py.get_type::<pyo3::exceptions::PyUserWarning>()
        };
        let msg = std::ffi::CString::new(w.message.replace('\0', " "))
            .unwrap_or_else(|_| c"ratten warning".to_owned());
        PyErr::warn(py, &category, &msg, 1)?;
    }
    Ok(())
}

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
        ErrorKind::Overflow => pyo3::exceptions::PyOverflowError::new_err(msg),
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
