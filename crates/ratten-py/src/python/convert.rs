//! Layer 2 (conversion): Python values to and from ratten's values: Scalar
//! ([`to_scalar`], [`scalar_to_py`]), the dispatcher's IValue ([`ivalue_to_py`],
//! [`py_to_ivalue_any`]), Tensor arguments ([`tensor_arg`]) and optional dtypes
//! ([`opt_dtype`]). The dtype, device and memory format objects themselves are `types.rs`,
//! the Tensor object `object.rs`, both below; typed parameters (by their schema type) are
//! converted by the argument parser above.

use num_complex::Complex64;
use pyo3::exceptions::{PyOverflowError, PyTypeError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyComplex, PyFloat, PyInt, PyList, PyString, PyTuple};
use pyo3::IntoPyObjectExt;
use ratten_aten::Tensor;
use ratten_core::{Device, Scalar, ScalarType};
use ratten_dispatch::IValue;

use super::error::IntoPy;
use super::object::{any_tensor, wrap, PyTensor};
use super::types::{PyDevice, PyDtype};

/// A Python number as a Scalar (bool, int, float, complex, or a one-element tensor).
pub fn to_scalar(obj: &Bound<'_, PyAny>) -> PyResult<Scalar> {
    if let Ok(t) = obj.downcast::<PyTensor>() {
        return t.get().t.item().py();
    }
    if let Ok(b) = obj.downcast::<PyBool>() {
        return Ok(Scalar::Bool(b.is_true()));
    }
    if obj.is_instance_of::<PyInt>() {
        if let Ok(i) = obj.extract::<i64>() {
            return Ok(Scalar::Int(i));
        }
        // torch tries `PyLong_AsUnsignedLongLong` next: [2**63, 2**64) is a uint64 Scalar.
        return obj
            .extract::<u64>()
            .map(Scalar::from_u64)
            .map_err(|_| int_overflow(obj));
    }
    if let Ok(c) = obj.downcast::<PyComplex>() {
        return Ok(Scalar::ComplexDouble(Complex64::new(c.real(), c.imag())));
    }
    if let Ok(f) = obj.extract::<f64>() {
        return Ok(Scalar::Double(f));
    }
    Err(PyTypeError::new_err(format!(
        "expected a number, got {}",
        obj.get_type().name()?
    )))
}

/// torch's error for a Python int outside both int64 and uint64 where a Scalar is read:
/// Python's own OverflowError of `PyLong_AsUnsignedLongLong`, which torch tries last.
pub fn int_overflow(obj: &Bound<'_, PyAny>) -> PyErr {
    if obj.lt(0).unwrap_or(false) {
        return PyOverflowError::new_err("can't convert negative int to unsigned");
    }
    PyOverflowError::new_err("int too big to convert")
}

/// A Scalar as the Python number of its kind.
pub fn scalar_to_py(py: Python<'_>, s: Scalar) -> PyResult<PyObject> {
    match s {
        Scalar::Bool(b) => b.into_py_any(py),
        Scalar::Int(i) => i.into_py_any(py),
        Scalar::UInt64(u) => u.into_py_any(py),
        Scalar::Double(d) => d.into_py_any(py),
        Scalar::ComplexDouble(c) => PyComplex::from_doubles(py, c.re, c.im).into_py_any(py),
    }
}

/// A Scalar as the dispatcher's value of its kind.
pub fn scalar_ivalue(s: Scalar) -> IValue {
    match s {
        Scalar::Bool(b) => IValue::Bool(b),
        Scalar::Int(i) => IValue::Int(i),
        // IValue has no unsigned tag: the int64 of the same bits (see `KernelValue for Scalar`).
        Scalar::UInt64(u) => IValue::Int(u as i64),
        Scalar::Double(d) => IValue::Double(d),
        Scalar::ComplexDouble(c) => IValue::ComplexDouble(c),
    }
}

/// A Tensor argument: a tensor (of `Tensor` or a subclass), or a Python number as a
/// wrapped-number tensor (which type promotion treats as weaker than any tensor, as in torch).
pub fn tensor_arg(obj: &Bound<'_, PyAny>) -> PyResult<Tensor> {
    if let Some(t) = any_tensor(obj) {
        return Ok(t.clone());
    }
    let s = to_scalar(obj)?;
    Tensor::wrapped_scalar_tensor(s, Device::CPU).py()
}

/// A dispatcher value as a Python object.
pub fn ivalue_to_py(py: Python<'_>, v: IValue) -> PyResult<PyObject> {
    Ok(match v {
        IValue::None => py.None(),
        IValue::Bool(b) => b.into_py_any(py)?,
        IValue::Int(i) => i.into_py_any(py)?,
        IValue::Double(d) => d.into_py_any(py)?,
        IValue::ComplexDouble(c) => PyComplex::from_doubles(py, c.re, c.im).into_py_any(py)?,
        IValue::String(s) => s.as_ref().into_py_any(py)?,
        IValue::Device(d) => Py::new(py, PyDevice { d })?.into_any(),
        IValue::Tensor(t) => wrap(py, Tensor::from_base(t))?.into_any(),
        IValue::IntList(v) => v.into_py_any(py)?,
        IValue::DoubleList(v) => v.into_py_any(py)?,
        IValue::BoolList(v) => v.into_py_any(py)?,
        IValue::TensorList(v) => {
            let items = v
                .into_iter()
                .map(|t| wrap(py, Tensor::from_base(t)).map(|o| o.into_any()))
                .collect::<PyResult<Vec<_>>>()?;
            PyTuple::new(py, items)?.into_any().unbind()
        }
        IValue::OptionalTensorList(v) => {
            let items = v
                .into_iter()
                .map(|t| match t {
                    Some(t) => wrap(py, Tensor::from_base(t)).map(|o| o.into_any()),
                    None => Ok(py.None()),
                })
                .collect::<PyResult<Vec<_>>>()?;
            PyList::new(py, items)?.into_any().unbind()
        }
        IValue::GenericList(v) => {
            let items = v
                .into_iter()
                .map(|x| ivalue_to_py(py, x))
                .collect::<PyResult<Vec<_>>>()?;
            PyList::new(py, items)?.into_any().unbind()
        }
        IValue::Tuple(v) => {
            let items = v
                .into_iter()
                .map(|x| ivalue_to_py(py, x))
                .collect::<PyResult<Vec<_>>>()?;
            PyTuple::new(py, items)?.into_any().unbind()
        }
        IValue::Generator(g) => match g.downcast_ref::<ratten_aten::random::Generator>() {
            Some(g) => Py::new(py, super::types::PyGenerator { g: g.clone() })?.into_any(),
            None => py.None(),
        },
    })
}

/// A Python object as a dispatcher value, by its own type (for Python kernels' returns).
pub fn py_to_ivalue_any(obj: &Bound<'_, PyAny>) -> PyResult<IValue> {
    if obj.is_none() {
        return Ok(IValue::None);
    }
    if let Ok(t) = obj.downcast::<PyTensor>() {
        return Ok(IValue::Tensor(t.get().t.clone().into_base()));
    }
    if let Ok(d) = obj.downcast::<PyDtype>() {
        return Ok(IValue::Int(d.get().st as i64));
    }
    if let Ok(d) = obj.downcast::<PyDevice>() {
        return Ok(IValue::Device(d.get().d));
    }
    if let Ok(s) = obj.downcast::<PyString>() {
        return Ok(IValue::String(s.to_str()?.into()));
    }
    if obj.is_instance_of::<PyBool>()
        || obj.is_instance_of::<PyInt>()
        || obj.is_instance_of::<PyFloat>()
        || obj.is_instance_of::<PyComplex>()
    {
        return Ok(scalar_ivalue(to_scalar(obj)?));
    }
    if obj.is_instance_of::<PyTuple>() || obj.is_instance_of::<PyList>() {
        let items = obj
            .try_iter()?
            .map(|e| py_to_ivalue_any(&e?))
            .collect::<PyResult<Vec<_>>>()?;
        if items.iter().all(|i| matches!(i, IValue::Tensor(_))) && !items.is_empty() {
            return Ok(IValue::TensorList(
                items
                    .into_iter()
                    .filter_map(|i| match i {
                        IValue::Tensor(t) => Some(t),
                        _ => None,
                    })
                    .collect(),
            ));
        }
        return Ok(IValue::Tuple(items));
    }
    Err(PyTypeError::new_err(format!(
        "cannot pass a {} to the dispatcher",
        obj.get_type().name()?
    )))
}

/// The dtype argument of a factory: a `ratten.dtype` or None.
pub fn opt_dtype(obj: Option<&Bound<'_, PyAny>>) -> PyResult<Option<ScalarType>> {
    match obj {
        None => Ok(None),
        Some(o) if o.is_none() => Ok(None),
        Some(o) => Ok(Some(o.downcast::<PyDtype>()?.get().st)),
    }
}
