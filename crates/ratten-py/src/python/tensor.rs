//! Layer 7 (the Tensor type): `ratten.Tensor`'s Python API (its methods, operators,
//! indexing, conversions to and from numpy and Python lists) and the factory functions. The
//! object itself (its value, making and unpacking it) is `object.rs`, at the bottom; nothing
//! imports this module.

use std::ptr::NonNull;

use num_complex::Complex64;
use pyo3::exceptions::{
    PyIndexError, PyNotImplementedError, PyRuntimeError, PyTypeError, PyValueError,
};
use pyo3::prelude::*;
use pyo3::pyclass::CompareOp;
use pyo3::types::{
    PyBool, PyBytes, PyComplex, PyDict, PyEllipsis, PyFloat, PyInt, PyList, PySlice, PyString,
    PyTuple,
};
use pyo3::IntoPyObjectExt;
use ratten_aten::native::MemoryFormat;
use ratten_aten::Tensor;
use ratten_core::allocator::DataPtr;
use ratten_core::{Device, Scalar, Storage, TensorAccess, TensorBase};

use super::bindings::{call_generated, function_index, method_index};
use super::convert::{opt_dtype, scalar_to_py, to_scalar};
use super::error::IntoPy;
use super::fast;
use super::object::{wrap, PyTensor};
use super::ops::{call_entry, call_op, has_method, op_entry, BoundOp};
use super::python_args::run_maybe_released;
use super::types::{dtype_object, parse_device, PyDevice, PyDtype, PyMemoryFormat};
use crate::data;
use crate::indexing::{self, AdvItem, IndexItem};

fn is_number(o: &Bound<'_, PyAny>) -> bool {
    o.is_instance_of::<PyInt>() || o.is_instance_of::<PyFloat>() || o.is_instance_of::<PyComplex>()
}

/// An operand a binary operator accepts; anything else gives NotImplemented, as torch.
fn operand(o: &Bound<'_, PyAny>) -> bool {
    o.is_instance_of::<PyTensor>() || is_number(o)
}

/// `ratten.Size(sizes)` (python/ratten/_size.py), the type of `shape` and `size()`.
pub(crate) fn size_object(py: Python<'_>, sizes: &[i64]) -> PyResult<PyObject> {
    static SIZE: pyo3::sync::GILOnceCell<PyObject> = pyo3::sync::GILOnceCell::new();
    let ty = SIZE.get_or_try_init(py, || -> PyResult<PyObject> {
        Ok(py.import("ratten._size")?.getattr("Size")?.unbind())
    })?;
    let t = PyTuple::new(py, sizes.iter().copied())?;
    Ok(ty.bind(py).call1((t,))?.unbind())
}

fn index_items(index: &Bound<'_, PyAny>) -> PyResult<Vec<AdvItem>> {
    let py = index.py();
    let one = |o: &Bound<'_, PyAny>| -> PyResult<AdvItem> {
        if o.is_none() {
            return Ok(AdvItem::Basic(IndexItem::None));
        }
        if o.is_instance_of::<PyEllipsis>() {
            return Ok(AdvItem::Basic(IndexItem::Ellipsis));
        }
        if let Ok(b) = o.downcast::<PyBool>() {
            return Ok(AdvItem::Bool(b.is_true()));
        }
        if o.is_instance_of::<PyInt>() {
            let i = o
                .extract()
                .map_err(|_| PyValueError::new_err("Overflow when unpacking long long"))?;
            return Ok(AdvItem::Basic(IndexItem::Int(i)));
        }
        // A string is a sequence torch tries to make an index tensor of.
        if o.is_instance_of::<PyString>() || o.is_instance_of::<PyBytes>() {
            return Err(invalid_data_type(o));
        }
        if let Ok(s) = o.downcast::<PySlice>() {
            let get = |n: &str| -> PyResult<Option<i64>> {
                let v = s.getattr(n)?;
                if v.is_none() {
                    Ok(None)
                } else {
                    // Out-of-range bounds clamp, as PySlice_Unpack does.
                    Ok(Some(v.extract::<i64>().unwrap_or(if v.lt(0)? {
                        i64::MIN
                    } else {
                        i64::MAX
                    })))
                }
            };
            return Ok(AdvItem::Basic(IndexItem::Slice {
                start: get("start")?,
                stop: get("stop")?,
                step: get("step")?,
            }));
        }
        if let Ok(t) = o.downcast::<PyTensor>() {
            return Ok(AdvItem::Tensor(t.get().t.clone()));
        }
        // A list (or a numpy array) is an index tensor, as torch's `sequenceToVariable`.
        if o.is_instance_of::<PyList>() || o.hasattr("__array_interface__")? {
            let t = tensor(py, o, None, None)?;
            return Ok(AdvItem::Tensor(t.get().t.clone()));
        }
        Err(PyIndexError::new_err(format!(
            "only integers, slices (`:`), ellipsis (`...`), None and long or byte Variables are \
             valid indices (got {})",
            o.get_type().name()?
        )))
    };
    match index.downcast::<PyTuple>() {
        Ok(t) => t.iter().map(|o| one(&o)).collect(),
        Err(_) => Ok(vec![one(index)?]),
    }
}

/// Copies `src` into `dst` (same shape after broadcasting `src`), converting the dtype:
/// `copy_` through the dispatcher, so that autograd records it (`y[0] = s` is a `CopySlices`
/// of `CopyBackwards` in y's history, as in torch).
fn copy_into(dst: &Tensor, src: &Tensor) -> ratten_core::Result<()> {
    dst.copy_(src).map(|_| ())
}

/// The owner numpy keeps as an array's base: it holds the tensor (so its storage) alive.
#[pyclass(name = "_NumpyExport", module = "ratten", frozen)]
struct NumpyExport {
    t: Tensor,
    ptr: usize,
}

#[pymethods]
impl NumpyExport {
    #[getter]
    fn __array_interface__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let d = PyDict::new(py);
        let item = self.t.element_size() as i64;
        let sizes: Vec<i64> = self.t.sizes().to_vec();
        let strides: Vec<i64> = self.t.strides().iter().map(|s| s * item).collect();
        d.set_item("shape", PyTuple::new(py, sizes)?)?;
        d.set_item("strides", PyTuple::new(py, strides)?)?;
        d.set_item("typestr", data::numpy_typestr(self.t.dtype()).py()?)?;
        d.set_item("data", (self.ptr, false))?;
        d.set_item("version", 3)?;
        Ok(d)
    }
}

fn numpy_module(py: Python<'_>) -> PyResult<Bound<'_, PyModule>> {
    py.import("numpy")
}

/// `tensor.numpy()`: an array sharing the tensor's memory (the array keeps it alive).
fn to_numpy(py: Python<'_>, t: &Tensor) -> PyResult<PyObject> {
    if !t.is_cpu() {
        return Err(PyTypeError::new_err(format!(
            "can't convert {} device type tensor to numpy. Copy the tensor to host memory first.",
            t.device()
        )));
    }
    data::numpy_typestr(t.dtype()).py()?;
    let ptr = if t.numel() == 0 {
        // numpy wants a non-null, aligned pointer even for no elements.
        NonNull::<u64>::dangling().as_ptr() as usize
    } else {
        let g = TensorAccess::read(t.base()).py()?;
        let first = g
            .input(0)
            .py()?
            .raw_data_ptr()
            .ok_or_else(|| PyRuntimeError::new_err("tensor has no data"))?;
        // The pointer outlives the guard: the export holds the tensor, so the storage, whose
        // memory moves only if a resize grows it (the same hazard as torch's `.numpy()`).
        first.as_ptr() as usize
    };
    let owner = Py::new(py, NumpyExport { t: t.clone(), ptr })?;
    Ok(numpy_module(py)?
        .call_method1("asarray", (owner,))?
        .unbind())
}

/// torch's warning for a read-only array (tensor_numpy.cpp), given once per process as
/// torch's `TORCH_WARN_ONCE` is.
const NOT_WRITABLE_WARNING: &std::ffi::CStr = c"The given NumPy array is not writable, and \
PyTorch does not support non-writable tensors. This means writing to this tensor will result in \
undefined behavior. You may want to copy the array to protect its data or make it writable \
before converting it to a tensor. This type of warning will be suppressed for the rest of this \
program.";

/// `ratten.from_numpy(a)`: a tensor sharing the array's memory.
#[pyfunction]
fn from_numpy(py: Python<'_>, arr: &Bound<'_, PyAny>) -> PyResult<Py<PyTensor>> {
    let t = from_numpy_impl(py, arr, true)?;
    wrap(py, t)
}

/// The tensor over a numpy array's memory (torch's `tensor_from_numpy`): its dtype and
/// strides checked as torch checks them, its buffer shared whenever it is aligned to its
/// elements, which numpy guarantees unless the array is a view at an odd byte offset
/// (`flags.aligned` false); such an array is copied, with a warning, since no kernel may read
/// an element through a misaligned pointer. A read-only array is shared with torch's warning
/// (`warn_if_not_writeable`, once per process).
pub(crate) fn from_numpy_impl(
    py: Python<'_>,
    arr: &Bound<'_, PyAny>,
    warn_if_not_writeable: bool,
) -> PyResult<Tensor> {
    let np = numpy_module(py)?;
    if !arr.is_instance(&np.getattr("ndarray")?)? {
        return Err(PyTypeError::new_err(format!(
            "expected np.ndarray (got {})",
            arr.get_type().name()?
        )));
    }
    let iface = arr.getattr("__array_interface__")?;
    let typestr: String = iface.get_item("typestr")?.extract()?;
    let np_name: String = arr.getattr("dtype")?.str()?.extract()?;
    let dtype = data::dtype_from_typestr(&typestr, &np_name).py()?;
    let sizes: Vec<i64> = arr.getattr("shape")?.extract()?;
    let itemsize = dtype.element_size() as i64;
    let byte_strides: Vec<i64> = arr.getattr("strides")?.extract()?;
    let strides = data::element_strides(&byte_strides, itemsize).py()?;
    let (addr, readonly): (usize, bool) = iface.get_item("data")?.extract()?;
    let span = data::span_bytes(&sizes, &strides, itemsize) as usize;
    if readonly && warn_if_not_writeable {
        static WARNED: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);
        if !WARNED.swap(true, std::sync::atomic::Ordering::Relaxed) {
            let category = py.get_type::<pyo3::exceptions::PyUserWarning>();
            PyErr::warn(py, &category, NOT_WRITABLE_WARNING, 1)?;
        }
    }
    if span > 0 && data::can_share(addr, dtype) {
        let keep: Py<PyAny> = arr.clone().unbind();
        let ptr = NonNull::new(addr as *mut u8)
            .ok_or_else(|| PyValueError::new_err("numpy array has a null data pointer"))?;
        // SAFETY: numpy's buffer is valid for `span` bytes from `addr` (the extent of its
        // non-negative strides, checked above) and initialised (numpy hands out no
        // uninitialised memory to Python code that reads it). The storage is exactly those
        // bytes, so no view can reach memory that is not the array's; `addr` is aligned to
        // the dtype's elements (`can_share`), which `from_storage` checks again against the
        // alignment `Storage::from_data_ptr` records. The deleter drops our reference to the
        // array, which keeps the buffer alive until then (without the GIL, pyo3 defers the
        // decref to the next time a thread holds it). Python code may still write the array
        // concurrently, as with torch.from_numpy.
        let dp =
            unsafe { DataPtr::from_raw(ptr, span, move |_, _| drop(keep), false, Device::CPU) };
        let storage = Storage::from_data_ptr(dp, span, Device::CPU).py()?;
        let t = TensorBase::from_storage(storage, dtype, &sizes, &strides, 0).py()?;
        return Ok(Tensor::from_base(t));
    }
    if span > 0 {
        let category = py.get_type::<pyo3::exceptions::PyUserWarning>();
        PyErr::warn(
            py,
            &category,
            c"The given NumPy array is not aligned to its element size; ratten copies it (a \
kernel cannot read misaligned elements), so the tensor does not share its memory. Copy the \
array (array.copy()) to align it.",
            1,
        )?;
    }
    // Misaligned (or empty): copy the bytes in C order.
    let bytes: Vec<u8> = arr.call_method0("tobytes")?.extract()?;
    let t = Tensor::empty(&sizes, dtype).py()?;
    if !bytes.is_empty() {
        let g = ratten_core::TensorAccess::write(t.base()).py()?;
        let dst = g.output(0).py()?.data_ptr_mut::<u8>();
        let dst = match dst {
            Ok(p) => p,
            Err(_) => g
                .output(0)
                .py()?
                .raw_data_ptr()
                .ok_or_else(|| PyRuntimeError::new_err("tensor has no data"))?
                .as_ptr(),
        };
        // SAFETY: `dst` is the start of a fresh contiguous tensor of exactly bytes.len() bytes
        // (numel * itemsize), held for writing by `g`.
        unsafe { std::ptr::copy_nonoverlapping(bytes.as_ptr(), dst, bytes.len()) };
    }
    Ok(t)
}

/// The nested list / number of a tensor's values.
fn to_list(py: Python<'_>, t: &Tensor) -> PyResult<PyObject> {
    let vals = py.allow_threads(|| data::tensor_to_scalars(t)).py()?;
    let sizes = t.sizes().to_vec();
    fn build(py: Python<'_>, vals: &[Scalar], sizes: &[i64]) -> PyResult<PyObject> {
        if sizes.is_empty() {
            return scalar_to_py(py, vals[0]);
        }
        let n = sizes[0] as usize;
        let chunk = vals.len().checked_div(n).unwrap_or(0);
        let items = (0..n)
            .map(|i| build(py, &vals[i * chunk..(i + 1) * chunk], &sizes[1..]))
            .collect::<PyResult<Vec<_>>>()?;
        PyList::new(py, items)?.into_py_any(py)
    }
    build(py, &vals, &sizes)
}

/// `ratten.tensor`'s data as [`data::flatten`] walks it, as torch's `internal_new_from_data`:
/// lists, tuples and any other Python sequence (`PySequence_Check`: a range, a numpy array,
/// a class with `__len__` and `__getitem__`) are walked; a tensor is a leaf (one element),
/// as are numbers and numpy scalars. Whatever a sequence's methods do (lie about their
/// length, return themselves, raise) ends as a Python exception: the walk is bounded.
struct PyData<'py> {
    np_generic: Option<Bound<'py, PyAny>>,
}

impl<'py> PyData<'py> {
    fn new(py: Python<'py>) -> Self {
        PyData {
            np_generic: numpy_module(py).and_then(|np| np.getattr("generic")).ok(),
        }
    }
}

impl<'py> data::NestedData for PyData<'py> {
    type Obj = Bound<'py, PyAny>;
    type Err = PyErr;

    fn seq_len(&mut self, obj: &Self::Obj) -> PyResult<Option<usize>> {
        if let Ok(l) = obj.downcast::<PyList>() {
            return Ok(Some(l.len()));
        }
        if let Ok(t) = obj.downcast::<PyTuple>() {
            return Ok(Some(t.len()));
        }
        if obj.is_instance_of::<PyTensor>() {
            return Ok(None);
        }
        // SAFETY: `obj` is a live object (bound to the GIL held here); PySequence_Check only
        // reads its type's slots and cannot fail.
        if unsafe { pyo3::ffi::PySequence_Check(obj.as_ptr()) } == 1 {
            return obj.len().map(Some);
        }
        Ok(None)
    }

    fn get(&mut self, obj: &Self::Obj, i: usize) -> PyResult<Self::Obj> {
        if let Ok(l) = obj.downcast::<PyList>() {
            // A list may shrink while it is read (a `__getitem__` elsewhere mutating it).
            return l.get_item(i);
        }
        if let Ok(t) = obj.downcast::<PyTuple>() {
            return t.get_item(i);
        }
        obj.get_item(i)
    }

    fn leaf(&mut self, obj: &Self::Obj) -> PyResult<data::Leaf> {
        use data::Leaf;
        if let Ok(t) = obj.downcast::<PyTensor>() {
            let t = &t.get().t;
            if t.numel() != 1 {
                return Err(PyTypeError::new_err(
                    "only integer tensors of a single element can be converted to an index",
                ));
            }
            return Ok(Leaf::Typed(t.item().py()?, t.dtype()));
        }
        if let Ok(b) = obj.downcast::<PyBool>() {
            return Ok(Leaf::Scalar(Scalar::Bool(b.is_true())));
        }
        if obj.is_instance_of::<PyInt>() {
            return int_leaf(obj);
        }
        // np.float64 and np.complex128 subclass float and complex: a subclass may be a numpy
        // scalar, which keeps its dtype.
        if !(obj.is_exact_instance_of::<PyFloat>() || obj.is_exact_instance_of::<PyComplex>()) {
            if let Some(g) = &self.np_generic {
                if obj.is_instance(g)? {
                    return numpy_scalar_leaf(obj);
                }
            }
        }
        if let Ok(c) = obj.downcast::<PyComplex>() {
            let c = Complex64::new(c.real(), c.imag());
            return Ok(Leaf::Scalar(Scalar::ComplexDouble(c)));
        }
        if obj.is_instance_of::<PyFloat>() {
            return Ok(Leaf::Scalar(Scalar::Double(obj.extract()?)));
        }
        if obj.is_instance_of::<PyString>() || obj.is_instance_of::<PyBytes>() {
            return Err(invalid_data_type(obj));
        }
        if let Some(g) = &self.np_generic {
            if obj.is_instance(g)? {
                return numpy_scalar_leaf(obj);
            }
        }
        if self.seq_len(obj)?.is_some() {
            return Err(PyTypeError::new_err(format!(
                "'{}' object cannot be interpreted as an integer",
                obj.get_type().name()?
            )));
        }
        Err(PyRuntimeError::new_err(format!(
            "Could not infer dtype of {}",
            obj.get_type().name()?
        )))
    }

    fn is_same(&self, a: &Self::Obj, b: &Self::Obj) -> bool {
        a.is(b)
    }

    fn type_name(&self, obj: &Self::Obj) -> String {
        obj.get_type()
            .name()
            .map_or_else(|_| "object".to_string(), |n| n.to_string())
    }
}

/// A Python int: an int64, or (outside it) a float that only a floating dtype may take.
fn int_leaf(obj: &Bound<'_, PyAny>) -> PyResult<data::Leaf> {
    match obj.extract::<i64>() {
        Ok(i) => Ok(data::Leaf::Scalar(Scalar::Int(i))),
        Err(_) if obj.extract::<u64>().is_ok() => Ok(data::Leaf::BigUnsigned(obj.extract()?)),
        // Python's own OverflowError when it is beyond even a double.
        Err(_) => Ok(data::Leaf::BigInt(obj.extract::<f64>()?)),
    }
}

/// A numpy scalar (`np.float32(1.5)`, `np.int64(3)`, `np.bool_(True)`) by its kind.
fn numpy_scalar_leaf(obj: &Bound<'_, PyAny>) -> PyResult<data::Leaf> {
    let np_dtype = obj.getattr("dtype")?;
    let kind: String = np_dtype.getattr("kind")?.extract()?;
    let value = match kind.as_str() {
        "b" => Scalar::Bool(obj.is_truthy()?),
        "i" | "u" => match int_leaf(&obj.call_method0("__index__")?)? {
            data::Leaf::Scalar(s) => s,
            data::Leaf::BigUnsigned(u) => Scalar::UInt64(u),
            other => return Ok(other),
        },
        "f" => Scalar::Double(obj.extract()?),
        "c" => {
            let c = obj
                .call_method0("__complex__")?
                .downcast_into::<PyComplex>()?;
            Scalar::ComplexDouble(Complex64::new(c.real(), c.imag()))
        }
        _ => return Err(invalid_data_type(obj)),
    };
    // The scalar's own dtype, as torch infers it (np.uint32(5) makes a uint32 tensor).
    let typestr: String = np_dtype.getattr("str")?.extract()?;
    let name: String = np_dtype.getattr("name")?.extract()?;
    Ok(match data::dtype_from_typestr(&typestr, &name) {
        Ok(dt) => data::Leaf::Typed(value, dt),
        Err(_) => data::Leaf::Scalar(value),
    })
}

fn invalid_data_type(obj: &Bound<'_, PyAny>) -> PyErr {
    let name = obj
        .get_type()
        .name()
        .map_or_else(|_| "object".to_string(), |n| n.to_string());
    PyTypeError::new_err(format!("new(): invalid data type '{name}'"))
}

/// Flattens a nested Python sequence of numbers (torch's `tensor_new` data walk).
fn flatten_data(py: Python<'_>, obj: &Bound<'_, PyAny>) -> PyResult<data::Walked> {
    let mut d = PyData::new(py);
    data::flatten(&mut d, obj).map_err(|e| match e {
        data::WalkError::Data(e) => super::error::to_pyerr(e),
        data::WalkError::Source(e) => e,
    })
}

/// `ratten.tensor(data, *, dtype=None, device=None)`.
#[pyfunction]
#[pyo3(signature = (data, *, dtype=None, device=None))]
pub(crate) fn tensor(
    py: Python<'_>,
    data: &Bound<'_, PyAny>,
    dtype: Option<&Bound<'_, PyAny>>,
    device: Option<&Bound<'_, PyAny>>,
) -> PyResult<Py<PyTensor>> {
    let dtype = opt_dtype(dtype)?;
    if let Some(d) = device.filter(|d| !d.is_none()) {
        let d = parse_device(d)?;
        if !d.is_cpu() {
            return Err(PyRuntimeError::new_err(format!(
                "ratten.tensor: only cpu tensors can be made from Python data, not {d}"
            )));
        }
    }
    if data.is_instance_of::<PyString>() || data.is_instance_of::<PyBytes>() {
        return Err(invalid_data_type(data));
    }
    if let Ok(np) = numpy_module(py) {
        if data.is_instance(&np.getattr("ndarray")?)? {
            // As torch: the array as from_numpy wraps it (its dtype rules and errors), copied.
            let shared = from_numpy_impl(py, data, false)?;
            let t = match dtype {
                Some(st) if st != shared.dtype() => shared.to_dtype(st),
                _ => ratten_aten::functions::clone(&shared),
            };
            return wrap(py, t.py()?);
        }
    }
    let walked = flatten_data(py, data)?;
    let st = match dtype {
        Some(st) => st,
        None => walked.infer_dtype().py()?,
    };
    let sizes = walked.flat.sizes.clone();
    let values = walked.values_for(st).py()?;
    let t = data::tensor_from_scalars(&values, &sizes, st).py()?;
    wrap(py, t)
}

/// Factory schemas (torch's Python signatures of them); parsed with the argument parser.
impl PyTensor {
    fn binary(
        slf: &Bound<'_, Self>,
        other: &Bound<'_, PyAny>,
        name: &str,
        reflected: bool,
    ) -> PyResult<PyObject> {
        let py = slf.py();
        if !operand(other) && !other.is_instance_of::<PyBool>() {
            return Ok(py.NotImplemented());
        }
        if let Some(op) = fast_arith(name) {
            if let Some(r) = fast::binary(slf, other, op, reflected)? {
                return Ok(r);
            }
        }
        // The generated bindings: `self.op(other)`, or `op(other, self)` when reflected.
        if reflected {
            if let Some(i) = function_index(name) {
                let args = [other.clone(), slf.clone().into_any()];
                return call_generated(py, i, None, &args, &[]);
            }
        } else if let Some(i) = method_index(name) {
            return call_generated(py, i, Some(slf.as_any()), std::slice::from_ref(other), &[]);
        }
        // Operators registered at run time (torch.library-style).
        let entry = op_entry(name).ok_or_else(|| missing_op(name))?;
        if reflected {
            let args = [other.clone(), slf.clone().into_any()];
            call_entry(py, &entry, None, &args, &[])
        } else {
            call_entry(
                py,
                &entry,
                Some(slf.as_any()),
                std::slice::from_ref(other),
                &[],
            )
        }
    }

    fn inplace(slf: &Bound<'_, Self>, other: &Bound<'_, PyAny>, name: &str) -> PyResult<()> {
        if !operand(other) && !other.is_instance_of::<PyBool>() {
            return Err(PyTypeError::new_err(format!(
                "unsupported operand type for {name}: 'Tensor' and '{}'",
                other.get_type().name()?
            )));
        }
        if let Some(op) = fast_arith(name.trim_end_matches('_')) {
            if fast::inplace(slf, other, op)? {
                return Ok(());
            }
        }
        if let Some(i) = method_index(name) {
            call_generated(
                slf.py(),
                i,
                Some(slf.as_any()),
                std::slice::from_ref(other),
                &[],
            )?;
            return Ok(());
        }
        if op_entry(name).is_none() {
            return Err(missing_op(name));
        }
        call_op(
            slf.py(),
            name,
            Some(slf.as_any()),
            std::slice::from_ref(other),
            &[],
        )?;
        Ok(())
    }

    fn unary(slf: &Bound<'_, Self>, name: &str) -> PyResult<PyObject> {
        if let Some(i) = method_index(name) {
            return call_generated(slf.py(), i, Some(slf.as_any()), &[], &[]);
        }
        if op_entry(name).is_none() {
            return Err(missing_op(name));
        }
        call_op(slf.py(), name, Some(slf.as_any()), &[], &[])
    }
}

fn fast_arith(name: &str) -> Option<fast::Arith> {
    Some(match name {
        "add" => fast::Arith::Add,
        "sub" => fast::Arith::Sub,
        "mul" => fast::Arith::Mul,
        "div" => fast::Arith::Div,
        _ => return None,
    })
}

fn missing_op(name: &str) -> PyErr {
    PyNotImplementedError::new_err(format!(
        "the dispatcher has no operator aten::{name} (not registered in this build of ratten)"
    ))
}

#[pymethods]
impl PyTensor {
    fn __repr__(&self, py: Python<'_>) -> PyResult<String> {
        let s = py
            .allow_threads(|| ratten_aten::formatting::tensor_repr(self.t.base()))
            .py()?;
        Ok(s.replace("dtype=torch.", "dtype=ratten."))
    }
    fn __str__(&self, py: Python<'_>) -> PyResult<String> {
        self.__repr__(py)
    }
    fn __hash__(slf: &Bound<'_, Self>) -> isize {
        slf.as_ptr() as isize
    }
    fn __len__(&self) -> PyResult<usize> {
        if self.t.dim() == 0 {
            return Err(PyTypeError::new_err("len() of a 0-d tensor"));
        }
        Ok(self.t.sizes()[0] as usize)
    }
    fn __bool__(&self) -> PyResult<bool> {
        if self.t.numel() != 1 {
            return Err(PyRuntimeError::new_err(format!(
                "Boolean value of Tensor with {} is ambiguous",
                if self.t.numel() == 0 {
                    "no values"
                } else {
                    "more than one value"
                }
            )));
        }
        Ok(self.t.item().py()?.to_bool())
    }
    fn __float__(&self) -> PyResult<f64> {
        self.t.item().py()?.to_double().py()
    }
    fn __int__(&self) -> PyResult<i64> {
        let s = self.t.item().py()?;
        match s {
            Scalar::Double(d) => Ok(d.trunc() as i64),
            other => other.to_long().py(),
        }
    }
    fn __index__(&self) -> PyResult<i64> {
        if !self.t.dtype().is_integral(true) || self.t.numel() != 1 {
            return Err(PyTypeError::new_err(
                "only integer tensors of a single element can be converted to an index",
            ));
        }
        self.t.item().py()?.to_long().py()
    }
    fn __complex__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyComplex>> {
        let c = self.t.item().py()?.to_complex_double().py()?;
        Ok(PyComplex::from_doubles(py, c.re, c.im))
    }

    // ---- metadata -------------------------------------------------------------------------
    #[getter]
    fn shape(&self, py: Python<'_>) -> PyResult<PyObject> {
        size_object(py, &self.t.sizes())
    }
    #[getter]
    fn dtype(&self, py: Python<'_>) -> PyResult<Py<PyDtype>> {
        dtype_object(py, self.t.dtype())
    }
    #[getter]
    fn device(&self) -> PyDevice {
        PyDevice { d: self.t.device() }
    }
    #[getter]
    fn ndim(&self) -> usize {
        self.t.dim()
    }
    #[getter]
    fn is_cpu(&self) -> bool {
        self.t.is_cpu()
    }
    #[getter]
    fn is_meta(&self) -> bool {
        self.t.is_meta()
    }
    #[getter(T)]
    fn t_prop(&self, py: Python<'_>) -> PyResult<Py<PyTensor>> {
        // torch's .T reverses all dims.
        let n = self.t.dim() as i64;
        let dims: Vec<i64> = (0..n).rev().collect();
        wrap(py, self.t.permute(&dims).py()?)
    }
    fn dim(&self) -> usize {
        self.t.dim()
    }
    fn ndimension(&self) -> usize {
        self.t.dim()
    }
    fn numel(&self) -> i64 {
        self.t.numel()
    }
    fn nelement(&self) -> i64 {
        self.t.numel()
    }
    fn element_size(&self) -> usize {
        self.t.element_size()
    }
    fn storage_offset(&self) -> i64 {
        self.t.storage_offset()
    }
    fn is_contiguous(&self) -> bool {
        self.t.is_contiguous()
    }
    fn is_floating_point(&self) -> bool {
        self.t.dtype().is_floating_point()
    }
    fn is_complex(&self) -> bool {
        self.t.dtype().is_complex()
    }
    #[pyo3(signature = (dim=None))]
    fn size<'py>(&self, py: Python<'py>, dim: Option<i64>) -> PyResult<PyObject> {
        match dim {
            Some(d) => self.t.size(d).py()?.into_py_any(py),
            None => self.shape(py),
        }
    }
    #[pyo3(signature = (dim=None))]
    fn stride<'py>(&self, py: Python<'py>, dim: Option<i64>) -> PyResult<PyObject> {
        match dim {
            Some(d) => self.t.stride(d).py()?.into_py_any(py),
            None => PyTuple::new(py, self.t.strides().iter().copied())?.into_py_any(py),
        }
    }
    fn _version(&self) -> u32 {
        self.t.version()
    }
    /// DLPack export (Note [DLPack capsules]): a capsule over this tensor's memory.
    #[pyo3(signature = (*, stream=None, max_version=None, dl_device=None, copy=None))]
    fn __dlpack__(
        &self,
        py: Python<'_>,
        stream: Option<&Bound<'_, PyAny>>,
        max_version: Option<(u32, u32)>,
        dl_device: Option<(i32, i32)>,
        copy: Option<bool>,
    ) -> PyResult<PyObject> {
        // A CPU tensor has no stream to synchronise with.
        let _ = stream;
        super::dlpack::to_dlpack(py, &self.t, max_version, dl_device, copy)
    }
    fn __dlpack_device__<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        super::dlpack::dlpack_device(py, &self.t)
    }
    /// `torch.Tensor.untyped_storage()`: the storage this tensor views.
    fn untyped_storage(&self) -> super::storage::PyStorage {
        super::storage::PyStorage {
            s: self.t.storage(),
        }
    }
    fn _is_view_of(&self, other: &PyTensor) -> bool {
        self.t.storage().is_alias_of(&other.t.storage())
    }

    // ---- views ----------------------------------------------------------------------------
    // The view operators are generated bindings (Note [View operators]); `contiguous` is
    // written here as torch writes it: it returns this very object when nothing must change.
    #[pyo3(signature = (*, memory_format=None))]
    fn contiguous(
        slf: &Bound<'_, Self>,
        memory_format: Option<&Bound<'_, PyMemoryFormat>>,
    ) -> PyResult<Py<PyTensor>> {
        let me = slf.get();
        let format = memory_format.map_or(MemoryFormat::Contiguous, |f| f.get().format());
        if format == MemoryFormat::Contiguous && me.t.is_contiguous() {
            return Ok(slf.clone().unbind());
        }
        let t = slf
            .py()
            .allow_threads(|| me.t.__dispatch_contiguous_with(format))
            .py()?;
        wrap(slf.py(), t)
    }

    // ---- in-place fills -------------------------------------------------------------------
    fn fill_(slf: &Bound<'_, Self>, value: &Bound<'_, PyAny>) -> PyResult<Py<PyTensor>> {
        // A tensor value takes `fill_.Tensor` (0-dim only; copied as copy_ does), as torch.
        if let Ok(v) = value.downcast::<PyTensor>() {
            let v = v.get().t.clone();
            let t = &slf.get().t;
            slf.py()
                .allow_threads(|| ratten_aten::functions::fill_(t, &v).map(|_| ()))
                .py()?;
            return Ok(slf.clone().unbind());
        }
        let v = to_scalar(value)?;
        let t = &slf.get().t;
        slf.py()
            .allow_threads(|| t.fill_scalar_(v).map(|_| ()))
            .py()?;
        Ok(slf.clone().unbind())
    }
    fn zero_(slf: &Bound<'_, Self>) -> PyResult<Py<PyTensor>> {
        let t = &slf.get().t;
        slf.py().allow_threads(|| t.zero_().map(|_| ())).py()?;
        Ok(slf.clone().unbind())
    }

    // ---- Python values --------------------------------------------------------------------
    fn item(&self, py: Python<'_>) -> PyResult<PyObject> {
        let s = self.t.item().py()?;
        scalar_to_py(py, s)
    }
    fn tolist(&self, py: Python<'_>) -> PyResult<PyObject> {
        to_list(py, &self.t)
    }
    fn numpy(&self, py: Python<'_>) -> PyResult<PyObject> {
        to_numpy(py, &self.t)
    }
    #[pyo3(signature = (dtype=None, copy=None))]
    fn __array__(
        &self,
        py: Python<'_>,
        dtype: Option<&Bound<'_, PyAny>>,
        copy: Option<bool>,
    ) -> PyResult<PyObject> {
        let mut a = to_numpy(py, &self.t)?.into_bound(py);
        if let Some(d) = dtype.filter(|d| !d.is_none()) {
            a = a.call_method1("astype", (d,))?;
        }
        if copy == Some(true) {
            a = a.call_method0("copy")?;
        }
        Ok(a.unbind())
    }

    // ---- indexing -------------------------------------------------------------------------
    /// torch's `Tensor.__iter__`: the sub-tensors along dim 0 (`unbind(0)`); a 0-dim tensor
    /// is torch's TypeError.
    fn __iter__<'py>(slf: &Bound<'py, Self>) -> PyResult<Bound<'py, PyAny>> {
        if slf.get().t.dim() == 0 {
            return Err(PyTypeError::new_err("iteration over a 0-d tensor"));
        }
        let parts = slf.call_method1("unbind", (0,))?;
        parts.try_iter().map(|i| i.into_any())
    }
    fn __delitem__(&self, _index: &Bound<'_, PyAny>) -> PyResult<()> {
        Err(PyTypeError::new_err(
            "Tensor does not support deleting items",
        ))
    }
    fn __getitem__(&self, py: Python<'_>, index: &Bound<'_, PyAny>) -> PyResult<Py<PyTensor>> {
        let items = index_items(index)?;
        let (view, indices) = indexing::apply_advanced(&self.t, &items).py()?;
        match indices {
            None => wrap(py, view),
            Some(ind) => {
                let r = run_maybe_released(py, view.numel().max(0) as usize, || {
                    ratten_aten::generated::operators::index_Tensor::call(&view, &ind)
                })?;
                wrap(py, r)
            }
        }
    }
    fn __setitem__(
        &self,
        py: Python<'_>,
        index: &Bound<'_, PyAny>,
        value: &Bound<'_, PyAny>,
    ) -> PyResult<()> {
        let items = index_items(index)?;
        let (dst, indices) = indexing::apply_advanced(&self.t, &items).py()?;
        let n = dst.numel().max(0) as usize;
        let src = match value.downcast::<PyTensor>() {
            Ok(src) => Some(src.get().t.clone()),
            Err(_) => None,
        };
        match (indices, src) {
            (None, Some(src)) => run_maybe_released(py, n, || copy_into(&dst, &src)),
            (None, None) => {
                let v = to_scalar(value)?;
                run_maybe_released(py, n, || dst.fill_(v).map(|_| ()))
            }
            (Some(ind), src) => {
                let src = match src {
                    Some(s) => s,
                    None => {
                        data::tensor_from_scalars(&[to_scalar(value)?], &[], dst.dtype()).py()?
                    }
                };
                run_maybe_released(py, n, || {
                    ratten_aten::generated::operators::index_put_::call(&dst, &ind, &src, false)
                        .map(|_| ())
                })
            }
        }
    }

    // ---- operators ------------------------------------------------------------------------
    fn __add__(slf: &Bound<'_, Self>, o: &Bound<'_, PyAny>) -> PyResult<PyObject> {
        Self::binary(slf, o, "add", false)
    }
    // torch's __radd__ and __rmul__ are THPVariable_add / _mul: `self.add(other)`.
    fn __radd__(slf: &Bound<'_, Self>, o: &Bound<'_, PyAny>) -> PyResult<PyObject> {
        Self::binary(slf, o, "add", false)
    }
    fn __iadd__(slf: &Bound<'_, Self>, o: &Bound<'_, PyAny>) -> PyResult<()> {
        Self::inplace(slf, o, "add_")
    }
    fn __sub__(slf: &Bound<'_, Self>, o: &Bound<'_, PyAny>) -> PyResult<PyObject> {
        Self::binary(slf, o, "sub", false)
    }
    fn __rsub__(slf: &Bound<'_, Self>, o: &Bound<'_, PyAny>) -> PyResult<PyObject> {
        Self::binary(slf, o, "sub", true)
    }
    fn __isub__(slf: &Bound<'_, Self>, o: &Bound<'_, PyAny>) -> PyResult<()> {
        Self::inplace(slf, o, "sub_")
    }
    fn __mul__(slf: &Bound<'_, Self>, o: &Bound<'_, PyAny>) -> PyResult<PyObject> {
        Self::binary(slf, o, "mul", false)
    }
    fn __rmul__(slf: &Bound<'_, Self>, o: &Bound<'_, PyAny>) -> PyResult<PyObject> {
        Self::binary(slf, o, "mul", false)
    }
    fn __imul__(slf: &Bound<'_, Self>, o: &Bound<'_, PyAny>) -> PyResult<()> {
        Self::inplace(slf, o, "mul_")
    }
    fn __truediv__(slf: &Bound<'_, Self>, o: &Bound<'_, PyAny>) -> PyResult<PyObject> {
        Self::binary(slf, o, "div", false)
    }
    // torch's Tensor.__rdiv__ is `self.reciprocal() * other`, not `div(other, self)`: the
    // quotient is rounded twice (3 / t can differ from div(3, t) by an ulp) and a complex32
    // result is a product, which torch's CPU build has, not a quotient, which it lacks. The
    // fast path computes it (`Arith::reflected`); other operands go through the bindings.
    fn __rtruediv__(slf: &Bound<'_, Self>, o: &Bound<'_, PyAny>) -> PyResult<PyObject> {
        if !operand(o) && !o.is_instance_of::<PyBool>() {
            return Ok(slf.py().NotImplemented());
        }
        if let Some(r) = fast::binary(slf, o, fast::Arith::Div, true)? {
            return Ok(r);
        }
        let reciprocal = slf.call_method0("reciprocal")?;
        Ok(reciprocal.call_method1("__mul__", (o,))?.unbind())
    }
    fn __itruediv__(slf: &Bound<'_, Self>, o: &Bound<'_, PyAny>) -> PyResult<()> {
        Self::inplace(slf, o, "div_")
    }
    fn __floordiv__(slf: &Bound<'_, Self>, o: &Bound<'_, PyAny>) -> PyResult<PyObject> {
        Self::binary(slf, o, "floor_divide", false)
    }
    fn __rfloordiv__(slf: &Bound<'_, Self>, o: &Bound<'_, PyAny>) -> PyResult<PyObject> {
        Self::binary(slf, o, "floor_divide", true)
    }
    fn __ifloordiv__(slf: &Bound<'_, Self>, o: &Bound<'_, PyAny>) -> PyResult<()> {
        Self::inplace(slf, o, "floor_divide_")
    }
    fn __mod__(slf: &Bound<'_, Self>, o: &Bound<'_, PyAny>) -> PyResult<PyObject> {
        Self::binary(slf, o, "remainder", false)
    }
    fn __rmod__(slf: &Bound<'_, Self>, o: &Bound<'_, PyAny>) -> PyResult<PyObject> {
        Self::binary(slf, o, "remainder", true)
    }
    fn __imod__(slf: &Bound<'_, Self>, o: &Bound<'_, PyAny>) -> PyResult<()> {
        Self::inplace(slf, o, "remainder_")
    }
    fn __pow__(
        slf: &Bound<'_, Self>,
        o: &Bound<'_, PyAny>,
        _modulo: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PyObject> {
        Self::binary(slf, o, "pow", false)
    }
    fn __rpow__(
        slf: &Bound<'_, Self>,
        o: &Bound<'_, PyAny>,
        _modulo: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PyObject> {
        Self::binary(slf, o, "pow", true)
    }
    fn __ipow__(
        slf: &Bound<'_, Self>,
        o: &Bound<'_, PyAny>,
        _modulo: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<()> {
        Self::inplace(slf, o, "pow_")
    }
    fn __matmul__(slf: &Bound<'_, Self>, o: &Bound<'_, PyAny>) -> PyResult<PyObject> {
        if !o.is_instance_of::<PyTensor>() {
            return Ok(slf.py().NotImplemented());
        }
        Self::binary(slf, o, "matmul", false)
    }
    fn __and__(slf: &Bound<'_, Self>, o: &Bound<'_, PyAny>) -> PyResult<PyObject> {
        Self::binary(slf, o, "bitwise_and", false)
    }
    fn __rand__(slf: &Bound<'_, Self>, o: &Bound<'_, PyAny>) -> PyResult<PyObject> {
        Self::binary(slf, o, "bitwise_and", true)
    }
    fn __iand__(slf: &Bound<'_, Self>, o: &Bound<'_, PyAny>) -> PyResult<()> {
        Self::inplace(slf, o, "bitwise_and_")
    }
    fn __or__(slf: &Bound<'_, Self>, o: &Bound<'_, PyAny>) -> PyResult<PyObject> {
        Self::binary(slf, o, "bitwise_or", false)
    }
    fn __ror__(slf: &Bound<'_, Self>, o: &Bound<'_, PyAny>) -> PyResult<PyObject> {
        Self::binary(slf, o, "bitwise_or", true)
    }
    fn __ior__(slf: &Bound<'_, Self>, o: &Bound<'_, PyAny>) -> PyResult<()> {
        Self::inplace(slf, o, "bitwise_or_")
    }
    fn __xor__(slf: &Bound<'_, Self>, o: &Bound<'_, PyAny>) -> PyResult<PyObject> {
        Self::binary(slf, o, "bitwise_xor", false)
    }
    fn __rxor__(slf: &Bound<'_, Self>, o: &Bound<'_, PyAny>) -> PyResult<PyObject> {
        Self::binary(slf, o, "bitwise_xor", true)
    }
    fn __ixor__(slf: &Bound<'_, Self>, o: &Bound<'_, PyAny>) -> PyResult<()> {
        Self::inplace(slf, o, "bitwise_xor_")
    }
    fn __lshift__(slf: &Bound<'_, Self>, o: &Bound<'_, PyAny>) -> PyResult<PyObject> {
        Self::binary(slf, o, "bitwise_left_shift", false)
    }
    fn __rshift__(slf: &Bound<'_, Self>, o: &Bound<'_, PyAny>) -> PyResult<PyObject> {
        Self::binary(slf, o, "bitwise_right_shift", false)
    }
    fn __neg__(slf: &Bound<'_, Self>) -> PyResult<PyObject> {
        Self::unary(slf, "neg")
    }
    fn __pos__(slf: &Bound<'_, Self>) -> PyResult<PyObject> {
        Self::unary(slf, "positive")
    }
    fn __abs__(slf: &Bound<'_, Self>) -> PyResult<PyObject> {
        Self::unary(slf, "abs")
    }
    fn __invert__(slf: &Bound<'_, Self>) -> PyResult<PyObject> {
        // torch's THPVariable_invert refuses floating and complex tensors before dispatch.
        if !slf.borrow().t.dtype().is_integral(true) {
            return Err(PyTypeError::new_err(
                "~ (operator.invert) is only implemented on integer and Boolean-type tensors",
            ));
        }
        Self::unary(slf, "bitwise_not")
    }
    fn __richcmp__(
        slf: &Bound<'_, Self>,
        o: &Bound<'_, PyAny>,
        op: CompareOp,
    ) -> PyResult<PyObject> {
        let name = match op {
            CompareOp::Eq => "eq",
            CompareOp::Ne => "ne",
            CompareOp::Lt => "lt",
            CompareOp::Le => "le",
            CompareOp::Gt => "gt",
            CompareOp::Ge => "ge",
        };
        Self::binary(slf, o, name, false)
    }

    /// Generated methods are set on the class by the package (`ratten/__init__.py`); this
    /// finds operators registered at run time that have a `self` overload (`t.myop(u)`). An
    /// operator of the generated bindings that has no method there (`rsub`, declared
    /// `variants: function`) is no attribute, as in torch.
    fn __getattr__(slf: &Bound<'_, Self>, name: &str) -> PyResult<PyObject> {
        if !name.starts_with("__") && function_index(name).is_none() && has_method(name) {
            return Ok(Py::new(
                slf.py(),
                BoundOp {
                    name: name.to_string(),
                    this: slf.clone().into_any().unbind(),
                },
            )?
            .into_any());
        }
        Err(pyo3::exceptions::PyAttributeError::new_err(format!(
            "'Tensor' object has no attribute '{name}'"
        )))
    }
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyTensor>()?;
    m.add_class::<NumpyExport>()?;
    m.add_function(wrap_pyfunction!(tensor, m)?)?;
    m.add_function(wrap_pyfunction!(from_numpy, m)?)?;
    Ok(())
}
