//! Layer 2 (DLPack): the DLPack exchange protocol on the CPU: `Tensor.__dlpack__` /
//! `__dlpack_device__` (a capsule over the tensor's memory) and `ratten.from_dlpack` (a
//! tensor over another library's memory: numpy, torch, jax). No copy either way.
//!
//! Note [DLPack capsules]: a producer's capsule is named `dltensor` (or
//! `dltensor_versioned` for DLPack >= 1.0, which the consumer asks for with `max_version`)
//! and owns a managed tensor; the consumer takes ownership by renaming it `used_dltensor*`
//! and calls the managed tensor's `deleter` when done. A capsule never consumed frees the
//! managed tensor from its destructor. Here the managed tensor is the first field of a
//! boxed [`Export`] that holds the tensor (so its storage) alive with the shape and strides
//! the DLTensor points to.

use std::ffi::{c_void, CStr};
use std::ptr::{self, NonNull};

use pyo3::exceptions::{PyBufferError, PyRuntimeError, PyTypeError};
use pyo3::ffi;
use pyo3::prelude::*;
use pyo3::types::PyTuple;
use ratten_aten::Tensor;
use ratten_core::allocator::DataPtr;
use ratten_core::{Device, ScalarType, Storage, TensorAccess, TensorBase};

use super::error::IntoPy;
use super::object::{wrap, PyTensor};
use crate::data;

#[repr(C)]
#[derive(Clone, Copy)]
struct DLDevice {
    device_type: i32,
    device_id: i32,
}

#[repr(C)]
#[derive(Clone, Copy)]
struct DLDataType {
    code: u8,
    bits: u8,
    lanes: u16,
}

#[repr(C)]
#[derive(Clone, Copy)]
struct DLTensor {
    data: *mut c_void,
    device: DLDevice,
    ndim: i32,
    dtype: DLDataType,
    shape: *mut i64,
    strides: *mut i64,
    byte_offset: u64,
}

#[repr(C)]
struct DLManagedTensor {
    dl_tensor: DLTensor,
    manager_ctx: *mut c_void,
    deleter: Option<unsafe extern "C" fn(*mut DLManagedTensor)>,
}

#[repr(C)]
struct DLPackVersion {
    major: u32,
    minor: u32,
}

#[repr(C)]
struct DLManagedTensorVersioned {
    version: DLPackVersion,
    manager_ctx: *mut c_void,
    deleter: Option<unsafe extern "C" fn(*mut DLManagedTensorVersioned)>,
    flags: u64,
    dl_tensor: DLTensor,
}

const KDL_CPU: i32 = 1;
const DLPACK_FLAG_BITMASK_READ_ONLY: u64 = 1;
const DLTENSOR: &CStr = c"dltensor";
const USED_DLTENSOR: &CStr = c"used_dltensor";
const DLTENSOR_VERSIONED: &CStr = c"dltensor_versioned";
const USED_DLTENSOR_VERSIONED: &CStr = c"used_dltensor_versioned";

/// DLPack's type of a dtype (code: 0 int, 1 uint, 2 float, 4 bfloat, 5 complex, 6 bool).
fn dl_dtype(st: ScalarType) -> DLDataType {
    let code = match st {
        ScalarType::Bool => 6,
        ScalarType::Byte | ScalarType::UInt16 | ScalarType::UInt32 | ScalarType::UInt64 => 1,
        ScalarType::Char | ScalarType::Short | ScalarType::Int | ScalarType::Long => 0,
        ScalarType::Half | ScalarType::Float | ScalarType::Double => 2,
        ScalarType::BFloat16 => 4,
        ScalarType::ComplexHalf | ScalarType::ComplexFloat | ScalarType::ComplexDouble => 5,
    };
    DLDataType {
        code,
        bits: (st.element_size() * 8) as u8,
        lanes: 1,
    }
}

fn scalar_type(t: DLDataType) -> PyResult<ScalarType> {
    let st = ScalarType::ALL
        .into_iter()
        .find(|&st| {
            let d = dl_dtype(st);
            (d.code, d.bits) == (t.code, t.bits)
        })
        .filter(|_| t.lanes == 1);
    st.ok_or_else(|| {
        PyBufferError::new_err(format!(
            "Unsupported dtype in DLPack tensor: code {}, {} bits, {} lanes",
            t.code, t.bits, t.lanes
        ))
    })
}

/// What a capsule of ours owns: the managed tensor (first, so its address is the export's)
/// and what it points to.
#[repr(C)]
struct Export<M> {
    managed: M,
    shape: Vec<i64>,
    strides: Vec<i64>,
    _tensor: Tensor,
}

unsafe extern "C" fn delete_export(m: *mut DLManagedTensor) {
    // SAFETY: `m` is the first field of a `Box<Export<DLManagedTensor>>` leaked by
    // `__dlpack__`, and DLPack calls the deleter once.
    drop(unsafe { Box::from_raw(m.cast::<Export<DLManagedTensor>>()) });
}

unsafe extern "C" fn delete_export_versioned(m: *mut DLManagedTensorVersioned) {
    // SAFETY: as `delete_export`, for the versioned export.
    drop(unsafe { Box::from_raw(m.cast::<Export<DLManagedTensorVersioned>>()) });
}

/// The destructor of a capsule we made: frees the managed tensor unless a consumer took it
/// (renamed the capsule).
unsafe extern "C" fn capsule_destructor(cap: *mut ffi::PyObject) {
    // SAFETY: `cap` is a live capsule (CPython calls this before freeing it); the names
    // checked are the ones we create, whose pointers are the managed tensors of
    // `__dlpack__`, owned by the capsule while it keeps its name.
    unsafe {
        if ffi::PyCapsule_IsValid(cap, DLTENSOR.as_ptr()) == 1 {
            let m = ffi::PyCapsule_GetPointer(cap, DLTENSOR.as_ptr()).cast::<DLManagedTensor>();
            delete_export(m);
        } else if ffi::PyCapsule_IsValid(cap, DLTENSOR_VERSIONED.as_ptr()) == 1 {
            let m = ffi::PyCapsule_GetPointer(cap, DLTENSOR_VERSIONED.as_ptr())
                .cast::<DLManagedTensorVersioned>();
            delete_export_versioned(m);
        }
    }
}

/// The address of `t`'s first element (an aligned dangling one when it has none).
fn first_element(t: &Tensor) -> PyResult<*mut c_void> {
    if t.numel() == 0 {
        return Ok(NonNull::<u64>::dangling().as_ptr().cast());
    }
    let g = TensorAccess::read(t.base()).py()?;
    let p = g
        .input(0)
        .py()?
        .raw_data_ptr()
        .ok_or_else(|| PyRuntimeError::new_err("tensor has no data"))?;
    // The pointer outlives the guard: the export holds the tensor, so the storage (as
    // `numpy()`; a foreign storage never moves, and an allocator one only when grown).
    Ok(p.as_ptr().cast())
}

/// `Tensor.__dlpack__(*, stream=None, max_version=None, dl_device=None, copy=None)`.
pub(crate) fn to_dlpack(
    py: Python<'_>,
    t: &Tensor,
    max_version: Option<(u32, u32)>,
    dl_device: Option<(i32, i32)>,
    copy: Option<bool>,
) -> PyResult<PyObject> {
    if !t.is_cpu() {
        return Err(PyBufferError::new_err(format!(
            "ratten exports only CPU tensors through DLPack, not {}",
            t.device()
        )));
    }
    if let Some(d) = dl_device.filter(|&d| d != (KDL_CPU, 0)) {
        return Err(PyBufferError::new_err(format!(
            "ratten cannot export to DLPack device {d:?}: only the CPU (1, 0)"
        )));
    }
    let t = if copy == Some(true) {
        ratten_aten::functions::clone(t).py()?
    } else {
        t.clone()
    };
    let shape = t.sizes().to_vec();
    let strides = t.strides().to_vec();
    let dl_tensor = DLTensor {
        data: first_element(&t)?,
        device: DLDevice {
            device_type: KDL_CPU,
            device_id: 0,
        },
        ndim: shape.len() as i32,
        dtype: dl_dtype(t.dtype()),
        shape: ptr::null_mut(),
        strides: ptr::null_mut(),
        byte_offset: 0,
    };
    let versioned = max_version.is_some_and(|(major, _)| major >= 1);
    let (ptr, name) = if versioned {
        let mut e = Box::new(Export {
            managed: DLManagedTensorVersioned {
                version: DLPackVersion { major: 1, minor: 0 },
                manager_ctx: ptr::null_mut(),
                deleter: Some(delete_export_versioned),
                flags: 0,
                dl_tensor,
            },
            shape,
            strides,
            _tensor: t,
        });
        // The Vecs' buffers do not move when the box is leaked.
        e.managed.dl_tensor.shape = e.shape.as_mut_ptr();
        e.managed.dl_tensor.strides = e.strides.as_mut_ptr();
        let raw = Box::into_raw(e);
        // SAFETY: `raw` was just leaked; the context points back at the export.
        unsafe { (*raw).managed.manager_ctx = raw.cast() };
        (raw.cast::<c_void>(), DLTENSOR_VERSIONED)
    } else {
        let mut e = Box::new(Export {
            managed: DLManagedTensor {
                dl_tensor,
                manager_ctx: ptr::null_mut(),
                deleter: Some(delete_export),
            },
            shape,
            strides,
            _tensor: t,
        });
        e.managed.dl_tensor.shape = e.shape.as_mut_ptr();
        e.managed.dl_tensor.strides = e.strides.as_mut_ptr();
        let raw = Box::into_raw(e);
        // SAFETY: as above.
        unsafe { (*raw).managed.manager_ctx = raw.cast() };
        (raw.cast::<c_void>(), DLTENSOR)
    };
    // SAFETY: `ptr` is a leaked export whose first field is the managed tensor `name` says;
    // the destructor frees it unless a consumer renamed the capsule. The name is static.
    let cap = unsafe { ffi::PyCapsule_New(ptr, name.as_ptr(), Some(capsule_destructor)) };
    if cap.is_null() {
        // SAFETY: the capsule was not made, so the export is still ours to free.
        unsafe { capsule_destructor_fallback(ptr, versioned) };
        return Err(PyErr::fetch(py));
    }
    // SAFETY: `cap` is a new reference.
    Ok(unsafe { Py::from_owned_ptr(py, cap) })
}

/// Frees an export whose capsule could not be made.
///
/// # Safety
/// `ptr` is a leaked export of the kind `versioned` says, owned by no capsule.
unsafe fn capsule_destructor_fallback(ptr: *mut c_void, versioned: bool) {
    // SAFETY: per the contract.
    unsafe {
        if versioned {
            delete_export_versioned(ptr.cast());
        } else {
            delete_export(ptr.cast());
        }
    }
}

/// A managed tensor taken from a capsule, freed by its producer's deleter.
struct Managed {
    ptr: *mut c_void,
    versioned: bool,
}

// SAFETY: DLPack lets the consumer call the deleter from any thread; `delete` takes the GIL
// for producers (numpy, torch) whose deleters touch Python objects.
unsafe impl Send for Managed {}
unsafe impl Sync for Managed {}

impl Managed {
    fn delete(self) {
        Python::with_gil(|_| {
            // SAFETY: `ptr` is the managed tensor of a capsule we renamed `used_*` (so we own
            // it), of the kind `versioned` says; its deleter is called once, here.
            unsafe {
                if self.versioned {
                    let m = self.ptr.cast::<DLManagedTensorVersioned>();
                    if let Some(d) = (*m).deleter {
                        d(m);
                    }
                } else {
                    let m = self.ptr.cast::<DLManagedTensor>();
                    if let Some(d) = (*m).deleter {
                        d(m);
                    }
                }
            }
        });
    }
}

/// The capsule of `ext` (a capsule itself, or an object with `__dlpack__`).
fn capsule_of<'py>(ext: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyAny>> {
    // SAFETY: `ext` is a live object; PyCapsule_CheckExact only reads its type.
    if unsafe { ffi::PyCapsule_CheckExact(ext.as_ptr()) } == 1 {
        return Ok(ext.clone());
    }
    if !ext.hasattr("__dlpack__")? {
        return Err(PyTypeError::new_err(format!(
            "from_dlpack: expected an object with __dlpack__ or a DLPack capsule, got {}",
            ext.get_type().name()?
        )));
    }
    if ext.hasattr("__dlpack_device__")? {
        let (kind, _): (i32, i32) = ext.call_method0("__dlpack_device__")?.extract()?;
        if kind != KDL_CPU {
            return Err(PyBufferError::new_err(format!(
                "ratten imports only CPU memory through DLPack, not device type {kind}"
            )));
        }
    }
    let kwargs = pyo3::types::PyDict::new(ext.py());
    kwargs.set_item("max_version", (1, 0))?;
    match ext.call_method("__dlpack__", (), Some(&kwargs)) {
        Ok(c) => Ok(c),
        Err(e) if e.is_instance_of::<PyTypeError>(ext.py()) => ext.call_method0("__dlpack__"),
        Err(e) => Err(e),
    }
}

/// `ratten.from_dlpack(ext)`: a tensor over the memory of `ext` (any CPU DLPack producer).
fn from_dlpack_impl(ext: &Bound<'_, PyAny>) -> PyResult<Tensor> {
    let cap = capsule_of(ext)?;
    let c = cap.as_ptr();
    // SAFETY: `c` is a live object; the name checks accept only capsules, and the pointer of
    // a `dltensor*` capsule is its producer's managed tensor, valid until we call its
    // deleter after renaming the capsule.
    let (ptr, versioned, dl) = unsafe {
        if ffi::PyCapsule_IsValid(c, DLTENSOR_VERSIONED.as_ptr()) == 1 {
            let m = ffi::PyCapsule_GetPointer(c, DLTENSOR_VERSIONED.as_ptr())
                .cast::<DLManagedTensorVersioned>();
            if (*m).version.major != 1 {
                return Err(PyBufferError::new_err(format!(
                    "from_dlpack: DLPack version {}.{} is not supported (ratten reads 1.x)",
                    (*m).version.major,
                    (*m).version.minor
                )));
            }
            if (*m).flags & DLPACK_FLAG_BITMASK_READ_ONLY != 0 {
                let category = ext.py().get_type::<pyo3::exceptions::PyUserWarning>();
                PyErr::warn(
                    ext.py(),
                    &category,
                    c"The given DLPack tensor is read-only, and ratten does not support \
read-only tensors: writing to this tensor is undefined behavior.",
                    1,
                )?;
            }
            (m.cast::<c_void>(), true, (*m).dl_tensor)
        } else if ffi::PyCapsule_IsValid(c, DLTENSOR.as_ptr()) == 1 {
            let m = ffi::PyCapsule_GetPointer(c, DLTENSOR.as_ptr()).cast::<DLManagedTensor>();
            (m.cast::<c_void>(), false, (*m).dl_tensor)
        } else {
            return Err(PyBufferError::new_err(
                "from_dlpack: a DLPack capsule must be named 'dltensor' or \
                 'dltensor_versioned' and not consumed before",
            ));
        }
    };
    // Read everything before taking ownership: an error leaves the capsule unconsumed.
    if dl.device.device_type != KDL_CPU {
        return Err(PyBufferError::new_err(format!(
            "ratten imports only CPU memory through DLPack, not device type {}",
            dl.device.device_type
        )));
    }
    let dtype = scalar_type(dl.dtype)?;
    let ndim = usize::try_from(dl.ndim)
        .map_err(|_| PyBufferError::new_err("from_dlpack: negative ndim"))?;
    // SAFETY: DLPack's shape has `ndim` entries, strides too unless null (compact row-major).
    let sizes: Vec<i64> = if ndim == 0 {
        Vec::new()
    } else {
        unsafe { std::slice::from_raw_parts(dl.shape, ndim) }.to_vec()
    };
    if sizes.iter().any(|&s| s < 0) {
        return Err(PyBufferError::new_err("from_dlpack: negative size"));
    }
    let strides: Vec<i64> = if dl.strides.is_null() || ndim == 0 {
        ratten_core::tensor_impl::contiguous_strides(&sizes).to_vec()
    } else {
        // SAFETY: as above.
        unsafe { std::slice::from_raw_parts(dl.strides, ndim) }.to_vec()
    };
    if strides.iter().any(|&s| s < 0) {
        return Err(PyBufferError::new_err(
            "from_dlpack: negative strides are not supported by ratten tensors",
        ));
    }
    let itemsize = dtype.element_size() as i64;
    let span = data::span_bytes(&sizes, &strides, itemsize) as usize;
    let addr = (dl.data as usize).wrapping_add(dl.byte_offset as usize);
    if span > 0 && (dl.data.is_null() || !data::can_share(addr, dtype)) {
        return Err(PyBufferError::new_err(format!(
            "from_dlpack: the data at {addr:#x} is not aligned to {dtype} elements (or null), \
             which ratten cannot share"
        )));
    }
    // Take ownership.
    let used = if versioned {
        USED_DLTENSOR_VERSIONED
    } else {
        USED_DLTENSOR
    };
    // SAFETY: `c` is the capsule read above; the new name is static.
    if unsafe { ffi::PyCapsule_SetName(c, used.as_ptr()) } != 0 {
        return Err(PyErr::fetch(ext.py()));
    }
    let managed = Managed { ptr, versioned };
    if span == 0 {
        managed.delete();
        return Tensor::empty(&sizes, dtype).py();
    }
    let data_ptr = NonNull::new(addr as *mut u8)
        .ok_or_else(|| PyBufferError::new_err("from_dlpack: null data"))?;
    // SAFETY: the producer keeps `span` bytes from `addr` (the extent of the DLTensor's
    // non-negative strides) valid and initialised until its deleter runs, which the
    // DataPtr's deleter calls once; `addr` is aligned to the dtype's elements (checked),
    // and the storage is exactly those bytes, so no view reaches beyond them.
    let dp = unsafe {
        DataPtr::from_raw(
            data_ptr,
            span,
            move |_, _| managed.delete(),
            false,
            Device::CPU,
        )
    };
    let storage = Storage::from_data_ptr(dp, span, Device::CPU).py()?;
    let t = TensorBase::from_storage(storage, dtype, &sizes, &strides, 0).py()?;
    Ok(Tensor::from_base(t))
}

/// `Tensor.__dlpack_device__()`: `(1, 0)`, DLPack's CPU.
pub(crate) fn dlpack_device<'py>(py: Python<'py>, t: &Tensor) -> PyResult<Bound<'py, PyTuple>> {
    if !t.is_cpu() {
        return Err(PyBufferError::new_err(format!(
            "ratten exports only CPU tensors through DLPack, not {}",
            t.device()
        )));
    }
    PyTuple::new(py, [KDL_CPU, 0])
}

/// `ratten.from_dlpack(ext)`.
#[pyfunction]
fn from_dlpack(ext: &Bound<'_, PyAny>) -> PyResult<Py<PyTensor>> {
    let t = from_dlpack_impl(ext)?;
    wrap(ext.py(), t)
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(from_dlpack, m)?)?;
    Ok(())
}
