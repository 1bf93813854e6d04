//! Layer 2 (storages): `ratten.UntypedStorage`, a tensor's storage as a Python object, and
//! the rebuild functions pickling uses (`_rebuild_storage`, `_rebuild_tensor`).
//!
//! Note [Pickling tensors]: a tensor pickles as its storage object plus its view (dtype,
//! offset, sizes, strides), as torch's `_rebuild_tensor_v2`. The package keeps one storage
//! object per live storage while it is in use (`ratten._storage_object`), so pickle's memo
//! (and deepcopy's) sees two views of one storage as one object: they come back sharing
//! one new storage. `copy.copy` rebuilds over the very same storage, as torch's does.

use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use pyo3::types::PyBytes;
use ratten_aten::Tensor;
use ratten_core::{Device, Result, ScalarType, Storage, TensorAccess, TensorBase};

use super::error::IntoPy;
use super::object::{wrap, PyTensor};
use super::types::{PyDevice, PyDtype};

/// `torch.UntypedStorage`: bytes a tensor views.
#[pyclass(name = "UntypedStorage", module = "ratten", frozen, weakref)]
pub struct PyStorage {
    pub s: Storage,
}

/// `__reduce__`'s value: `_rebuild_storage` and its arguments (bytes, device, nbytes).
type Reduced<'py> = (Bound<'py, PyAny>, (Bound<'py, PyBytes>, String, usize));

/// The storage's bytes as a tensor of uint8 (`None` on meta or when empty).
fn byte_view(s: &Storage) -> Result<Option<Tensor>> {
    if s.device().is_meta() || s.nbytes() == 0 {
        return Ok(None);
    }
    let n = s.nbytes() as i64;
    let t = TensorBase::from_storage(s.clone(), ScalarType::Byte, &[n], &[1], 0)?;
    Ok(Some(Tensor::from_base(t)))
}

#[pymethods]
impl PyStorage {
    fn nbytes(&self) -> usize {
        self.s.nbytes()
    }
    fn size(&self) -> usize {
        self.s.nbytes()
    }
    #[getter]
    fn device(&self) -> PyDevice {
        PyDevice { d: self.s.device() }
    }
    /// The same storage (torch's `_cdata` compares storages).
    #[getter]
    fn _cdata(&self) -> usize {
        self.s.id()
    }
    fn __reduce__<'py>(&self, py: Python<'py>) -> PyResult<Reduced<'py>> {
        let bytes = match byte_view(&self.s).py()? {
            Some(t) => py.allow_threads(|| t.to_vec::<u8>()).py()?,
            None => Vec::new(),
        };
        let rebuild = py.import("ratten._C")?.getattr("_rebuild_storage")?;
        Ok((
            rebuild,
            (
                PyBytes::new(py, &bytes),
                self.s.device().to_string(),
                self.s.nbytes(),
            ),
        ))
    }
}

/// A storage of `nbytes` on `device` holding `data` (a CPU storage's bytes; empty for meta).
#[pyfunction]
fn _rebuild_storage(data: &[u8], device: &str, nbytes: usize) -> PyResult<PyStorage> {
    let device = Device::parse(device).py()?;
    if !device.is_meta() && data.len() != nbytes {
        return Err(PyRuntimeError::new_err(format!(
            "_rebuild_storage: {} bytes of data for a storage of {nbytes} bytes",
            data.len()
        )));
    }
    let s = Storage::new(nbytes, device).py()?;
    if let Some(t) = byte_view(&s).py()? {
        let g = TensorAccess::write(t.base()).py()?;
        let dst = g.output(0).py()?.data_ptr_mut::<u8>().py()?;
        // SAFETY: `dst` is the start of the fresh storage's `nbytes` bytes (a contiguous
        // byte view of all of it), held for writing by `g`; `data` has exactly `nbytes`
        // bytes (checked above) and is a distinct Python buffer.
        unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), dst, nbytes) };
    }
    Ok(PyStorage { s })
}

/// The tensor viewing `storage` (torch's `_rebuild_tensor`); the view is checked against the
/// storage as `set_` checks it, so a forged pickle cannot reach outside its bytes.
#[pyfunction]
fn _rebuild_tensor(
    py: Python<'_>,
    storage: &PyStorage,
    dtype: &PyDtype,
    storage_offset: i64,
    sizes: Vec<i64>,
    strides: Vec<i64>,
) -> PyResult<Py<PyTensor>> {
    let t = TensorBase::from_storage(
        storage.s.clone(),
        dtype.st,
        &sizes,
        &strides,
        storage_offset,
    )
    .py()?;
    wrap(py, Tensor::from_base(t))
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyStorage>()?;
    m.add_function(wrap_pyfunction!(_rebuild_storage, m)?)?;
    m.add_function(wrap_pyfunction!(_rebuild_tensor, m)?)?;
    Ok(())
}
