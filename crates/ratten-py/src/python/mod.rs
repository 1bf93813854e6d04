//! The pyo3 layer: `ratten._C`. Thin: values are converted here and the work is done by
//! ratten-aten, ratten-dispatch and this crate's pure modules.

mod dispatch;
mod fast;
mod ops;
pub mod python_args;
mod slots;
mod tensor;
mod types;

use pyo3::exceptions::{
    PyIndexError, PyNotImplementedError, PyRuntimeError, PyTypeError, PyValueError,
};
use pyo3::prelude::*;

pub use tensor::PyTensor;
pub use types::{PyDevice, PyDtype};

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

#[pymodule]
#[pyo3(name = "_C")]
fn ratten_c(m: &Bound<'_, PyModule>) -> PyResult<()> {
    types::register(m)?;
    tensor::register(m)?;
    ops::register(m)?;
    dispatch::register(m)?;
    python_args::register(m)?;
    // After the Tensor type exists (tensor::register).
    slots::register(m)?;
    Ok(())
}
