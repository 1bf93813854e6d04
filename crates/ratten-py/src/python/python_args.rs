//! Layer 3 (argument parser): torch's `PythonArgParser` on Python objects. [`parse_args`]
//! matches a call against a [`Parser`] (`crate::arg_parser`, pure Rust: signatures, matching,
//! torch's error messages) from the arguments' kinds ([`classify`]); [`PythonArgs`] are the
//! typed accessors the generated dispatch functions (`crate::generated::dispatch`) and the
//! hand-written bindings read the matched arguments with; [`IntoPyResult`] turns a kernel's
//! result into a Python value. Also the GIL policy of kernel calls ([`run_maybe_released`]).
//! Imports `error`, `object`, `types` and `convert`; the tables of generated bindings that
//! dispatch through these are `bindings.rs`, above the generated code.

use std::cell::Cell;

use num_complex::Complex64;
use pyo3::exceptions::{PyRuntimeError, PyTypeError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyComplex, PyDict, PyFloat, PyInt, PyList, PyString, PyTuple};
use pyo3::IntoPyObjectExt;
use ratten_aten::native::MemoryFormat;
use ratten_aten::Tensor;
use ratten_core::{Device, Scalar, ScalarType};
use ratten_schema::DefaultValue;

use super::convert::{scalar_to_py, tensor_arg, to_scalar};
use super::error::IntoPy;
use super::object::{any_tensor, wrap, PyTensor};
use super::types::{parse_device, PyDevice, PyDtype, PyGenerator, PyMemoryFormat};
use crate::arg_parser::{ArgKind, Parser, Signature, Slot};

/// Describes a Python value for the parser (its kind only).
pub fn classify(obj: &Bound<'_, PyAny>) -> ArgKind {
    if let Some(t) = any_tensor(obj) {
        return ArgKind::Tensor { dim: t.dim() };
    }
    if obj.is_none() {
        ArgKind::None
    } else if obj.is_instance_of::<PyBool>() {
        ArgKind::Bool
    } else if obj.is_instance_of::<PyInt>() {
        ArgKind::Int
    } else if obj.is_instance_of::<PyFloat>() {
        ArgKind::Float
    } else if obj.is_instance_of::<PyComplex>() {
        ArgKind::Complex
    } else if obj.is_instance_of::<PyString>() {
        ArgKind::Str
    } else if obj.is_instance_of::<PyDtype>() {
        ArgKind::Dtype
    } else if obj.is_instance_of::<PyDevice>() {
        ArgKind::Device
    } else if obj.is_instance_of::<PyMemoryFormat>() {
        ArgKind::MemoryFormat
    } else if obj.is_instance_of::<PyGenerator>() {
        ArgKind::Generator
    } else if let Ok(t) = obj.downcast::<PyTuple>() {
        ArgKind::Seq {
            container: "tuple",
            elems: t.iter().map(|e| classify(&e)).collect(),
        }
    } else if let Ok(l) = obj.downcast::<PyList>() {
        ArgKind::Seq {
            container: "list",
            elems: l.iter().map(|e| classify(&e)).collect(),
        }
    } else {
        ArgKind::Other(
            obj.get_type()
                .name()
                .map(|n| n.to_string())
                .unwrap_or_else(|_| "object".into()),
        )
    }
}

/// A generated dispatch function: calls the overload of the signature `r` matched.
pub type DispatchFn = fn(Python<'_>, &PythonArgs<'_, '_>) -> PyResult<PyObject>;

/// Below this many elements the kernel is called with the GIL held. torch releases the GIL
/// around every kernel; releasing and re-taking it costs a few hundred ns (two atomic
/// hand-overs plus the thread-state save/restore), which is most of a 1-element op's time,
/// while a kernel this small runs in well under a microsecond, so other Python threads
/// would gain nothing from it. Measured in python/bench/bench.py (`gil` rows).
pub const GIL_RELEASE_NUMEL: usize = 32 * 1024;

/// Whether the GIL is released even for small ops (`ratten._C._set_always_release_gil`), for
/// measuring torch's behaviour.
static ALWAYS_RELEASE: std::sync::atomic::AtomicBool = std::sync::atomic::AtomicBool::new(false);

/// The parsed arguments of one call (torch's `PythonArgs`).
pub struct PythonArgs<'a, 'py> {
    pub sig: &'a Signature,
    pub index: usize,
    pub slots: Vec<Slot>,
    pub args: &'a [Bound<'py, PyAny>],
    pub kwargs: &'a [(String, Bound<'py, PyAny>)],
    pub self_obj: Option<&'a Bound<'py, PyAny>>,
    /// The largest tensor seen, to decide whether to release the GIL.
    pub max_numel: Cell<usize>,
}

fn type_error(r: &PythonArgs<'_, '_>, k: usize, expected: &str) -> PyErr {
    PyTypeError::new_err(format!(
        "{}(): argument '{}' must be {expected}",
        r.sig.name, r.sig.params[k].name
    ))
}

impl<'a, 'py> PythonArgs<'a, 'py> {
    pub fn index(&self) -> usize {
        self.index
    }

    /// The object given for parameter `k` (None when it was left to its default).
    pub fn get(&self, k: usize) -> Option<Bound<'py, PyAny>> {
        match self.slots.get(k)? {
            Slot::Positional(i) => Some(self.args[*i].clone()),
            Slot::VarArgs(start) => {
                let py = self.args.first()?.py();
                PyTuple::new(py, &self.args[*start..])
                    .ok()
                    .map(|t| t.into_any())
            }
            Slot::Keyword(i) => Some(self.kwargs[*i].1.clone()),
            Slot::Default => None,
        }
    }

    fn default(&self, k: usize) -> Option<&DefaultValue> {
        self.sig.params.get(k)?.default.as_ref()
    }

    /// Whether parameter `k` is None (given as None, or defaulted to None / nothing).
    pub fn is_none(&self, k: usize) -> bool {
        match self.get(k) {
            Some(o) => o.is_none(),
            None => matches!(self.default(k), None | Some(DefaultValue::None)),
        }
    }

    /// The Python object of parameter `k` (returned by out= calls).
    pub fn object(&self, k: usize) -> PyObject {
        match self.get(k) {
            Some(o) => o.unbind(),
            None => Python::with_gil(|py| py.None()),
        }
    }

    fn note(&self, t: &Tensor) {
        let n = t.numel().max(0) as usize;
        if n > self.max_numel.get() {
            self.max_numel.set(n);
        }
    }

    pub fn self_tensor(&self) -> PyResult<Tensor> {
        let s = self
            .self_obj
            .ok_or_else(|| PyRuntimeError::new_err(format!("{}: no self", self.sig.name)))?;
        let t = match any_tensor(s) {
            Some(t) => t.clone(),
            None => s.downcast::<PyTensor>()?.get().t.clone(),
        };
        self.note(&t);
        Ok(t)
    }

    pub fn self_object(&self) -> PyObject {
        match self.self_obj {
            Some(s) => s.clone().unbind(),
            None => Python::with_gil(|py| py.None()),
        }
    }

    /// A Tensor parameter; a Python number becomes a wrapped-number tensor (promotion treats
    /// it as weaker than any tensor, as in torch).
    pub fn tensor(&self, k: usize) -> PyResult<Tensor> {
        let o = self
            .get(k)
            .ok_or_else(|| type_error(self, k, "Tensor, not None"))?;
        let t = tensor_arg(&o)?;
        self.note(&t);
        Ok(t)
    }

    pub fn optional_tensor(&self, k: usize) -> PyResult<Option<Tensor>> {
        if self.is_none(k) {
            return Ok(None);
        }
        self.tensor(k).map(Some)
    }

    pub fn scalar(&self, k: usize) -> PyResult<Scalar> {
        match self.get(k) {
            Some(o) if !o.is_none() => to_scalar(&o),
            _ => default_scalar(self.default(k)).ok_or_else(|| type_error(self, k, "Number")),
        }
    }

    pub fn optional_scalar(&self, k: usize) -> PyResult<Option<Scalar>> {
        if self.is_none(k) {
            return Ok(None);
        }
        self.scalar(k).map(Some)
    }

    pub fn int(&self, k: usize) -> PyResult<i64> {
        match self.get(k) {
            Some(o) if !o.is_none() => o.extract(),
            _ => match self.default(k) {
                Some(DefaultValue::Int(i)) => Ok(*i),
                Some(DefaultValue::Bool(b)) => Ok(*b as i64),
                _ => Err(type_error(self, k, "int")),
            },
        }
    }

    pub fn optional_int(&self, k: usize) -> PyResult<Option<i64>> {
        if self.is_none(k) {
            return Ok(None);
        }
        self.int(k).map(Some)
    }

    pub fn double(&self, k: usize) -> PyResult<f64> {
        match self.get(k) {
            Some(o) if !o.is_none() => o.extract(),
            _ => match self.default(k) {
                Some(DefaultValue::Float(f)) => Ok(*f),
                Some(DefaultValue::Int(i)) => Ok(*i as f64),
                _ => Err(type_error(self, k, "float")),
            },
        }
    }

    pub fn optional_double(&self, k: usize) -> PyResult<Option<f64>> {
        if self.is_none(k) {
            return Ok(None);
        }
        self.double(k).map(Some)
    }

    pub fn bool(&self, k: usize) -> PyResult<bool> {
        match self.get(k) {
            Some(o) if !o.is_none() => o.extract(),
            _ => match self.default(k) {
                Some(DefaultValue::Bool(b)) => Ok(*b),
                _ => Err(type_error(self, k, "bool")),
            },
        }
    }

    pub fn optional_bool(&self, k: usize) -> PyResult<Option<bool>> {
        if self.is_none(k) {
            return Ok(None);
        }
        self.bool(k).map(Some)
    }

    pub fn string(&self, k: usize) -> PyResult<String> {
        match self.get(k) {
            Some(o) if !o.is_none() => o.extract(),
            _ => match self.default(k) {
                Some(DefaultValue::Str(s)) => Ok(s.clone()),
                _ => Err(type_error(self, k, "str")),
            },
        }
    }

    pub fn optional_string(&self, k: usize) -> PyResult<Option<String>> {
        if self.is_none(k) {
            return Ok(None);
        }
        self.string(k).map(Some)
    }

    pub fn scalar_type(&self, k: usize) -> PyResult<ScalarType> {
        match self.get(k) {
            Some(o) if !o.is_none() => Ok(o.downcast::<PyDtype>()?.get().st),
            // A schema default such as `dtype=long` (c10's enum value).
            _ => match self.default(k) {
                Some(DefaultValue::Int(v)) => ScalarType::ALL
                    .iter()
                    .copied()
                    .find(|s| *s as i64 == *v)
                    .ok_or_else(|| type_error(self, k, "ratten.dtype")),
                _ => Err(type_error(self, k, "ratten.dtype")),
            },
        }
    }

    pub fn optional_scalar_type(&self, k: usize) -> PyResult<Option<ScalarType>> {
        if self.get(k).is_some_and(|o| o.is_none())
            || (self.get(k).is_none() && !matches!(self.default(k), Some(DefaultValue::Int(_))))
        {
            return Ok(None);
        }
        self.scalar_type(k).map(Some)
    }

    pub fn device(&self, k: usize) -> PyResult<Device> {
        match self.get(k) {
            Some(o) if !o.is_none() => parse_device(&o),
            _ => match self.default(k) {
                Some(DefaultValue::Device(s)) | Some(DefaultValue::Str(s)) => Device::parse(s).py(),
                _ => Ok(Device::CPU),
            },
        }
    }

    pub fn optional_device(&self, k: usize) -> PyResult<Option<Device>> {
        if self.is_none(k) {
            return Ok(None);
        }
        self.device(k).map(Some)
    }

    /// A `MemoryFormat?` parameter: a `ratten.memory_format` object, or None.
    pub fn optional_memory_format(&self, k: usize) -> PyResult<Option<MemoryFormat>> {
        match self.get(k) {
            Some(o) if !o.is_none() => Ok(Some(o.downcast::<PyMemoryFormat>()?.get().format())),
            _ => Ok(None),
        }
    }

    /// A `Generator?` parameter: a `ratten.Generator`, or None for the default generator.
    pub fn optional_generator(&self, k: usize) -> PyResult<Option<ratten_aten::random::Generator>> {
        match self.get(k) {
            Some(o) if !o.is_none() => Ok(Some(o.downcast::<PyGenerator>()?.get().g.clone())),
            _ => Ok(None),
        }
    }

    /// A `MemoryFormat` parameter: a `ratten.memory_format` object, else the schema's default
    /// (`contiguous_format`).
    pub fn memory_format(&self, k: usize) -> PyResult<MemoryFormat> {
        if let Some(f) = self.optional_memory_format(k)? {
            return Ok(f);
        }
        Ok(match self.default(k) {
            Some(DefaultValue::Int(1)) => MemoryFormat::Preserve,
            Some(DefaultValue::Int(2)) => MemoryFormat::ChannelsLast,
            Some(DefaultValue::Int(3)) => MemoryFormat::ChannelsLast3d,
            Some(DefaultValue::Str(s)) if s == "preserve_format" => MemoryFormat::Preserve,
            Some(DefaultValue::Str(s)) if s == "channels_last" => MemoryFormat::ChannelsLast,
            _ => MemoryFormat::Contiguous,
        })
    }

    /// A parameter of a type ratten has no Python objects for (Layout; MemoryFormat in the
    /// generated bindings): the parser only lets None through.
    pub fn none_only<T>(&self, k: usize) -> PyResult<Option<T>> {
        if self.is_none(k) {
            Ok(None)
        } else {
            Err(type_error(self, k, "None in ratten"))
        }
    }

    pub fn tensor_list(&self, k: usize) -> PyResult<Vec<Tensor>> {
        let Some(o) = self.get(k) else {
            return Ok(Vec::new());
        };
        let mut v = Vec::new();
        for e in o.try_iter()? {
            let t = tensor_arg(&e?)?;
            self.note(&t);
            v.push(t);
        }
        Ok(v)
    }

    /// A `Tensor?[]` argument (index's indices): torch's parser takes only Tensors in it, so
    /// every element is present.
    pub fn optional_tensor_list(&self, k: usize) -> PyResult<Vec<Option<Tensor>>> {
        Ok(self.tensor_list(k)?.into_iter().map(Some).collect())
    }

    /// Item `i` of the `n` tensors of a multi-output `out=`.
    pub fn tensor_list_item(&self, k: usize, i: usize, n: usize) -> PyResult<Tensor> {
        let items = self.tensor_list(k)?;
        if items.len() != n {
            return Err(PyTypeError::new_err(format!(
                "{}(): argument 'out' must be a tuple of {n} Tensors",
                self.sig.name
            )));
        }
        Ok(items[i].clone())
    }

    pub fn tensor_list_object(&self, k: usize, i: usize) -> PyObject {
        Python::with_gil(|py| {
            self.get(k)
                .and_then(|o| o.get_item(i).ok())
                .map(|o| o.unbind())
                .unwrap_or_else(|| py.None())
        })
    }

    pub fn int_list(&self, k: usize) -> PyResult<Vec<i64>> {
        let size = match &self.sig.params[k].ty {
            crate::arg_parser::ParamType::IntList { size } => size.unwrap_or(1) as usize,
            _ => 1,
        };
        match self.get(k) {
            Some(o) if !o.is_none() => match o.extract::<i64>() {
                Ok(v) if !matches!(classify(&o), ArgKind::Bool) => Ok(vec![v; size]),
                _ => o.extract(),
            },
            _ => match self.default(k) {
                Some(DefaultValue::IntList(v)) => Ok(v.clone()),
                Some(DefaultValue::Int(i)) => Ok(vec![*i; size]),
                _ => Ok(Vec::new()),
            },
        }
    }

    /// `int[]?`: None, or an int (a one-element list) or a sequence of ints.
    pub fn optional_int_list(&self, k: usize) -> PyResult<Option<Vec<i64>>> {
        if self.is_none(k) {
            return Ok(None);
        }
        self.int_list(k).map(Some)
    }

    pub fn double_list(&self, k: usize) -> PyResult<Vec<f64>> {
        match self.get(k) {
            Some(o) if !o.is_none() => o.extract(),
            _ => match self.default(k) {
                Some(DefaultValue::FloatList(v)) => Ok(v.clone()),
                _ => Ok(Vec::new()),
            },
        }
    }

    pub fn bool_list(&self, k: usize) -> PyResult<Vec<bool>> {
        match self.get(k) {
            Some(o) if !o.is_none() => o.extract(),
            _ => match self.default(k) {
                Some(DefaultValue::BoolList(v)) => Ok(v.clone()),
                _ => Ok(Vec::new()),
            },
        }
    }

    pub fn tuple(&self, py: Python<'_>, items: Vec<PyObject>) -> PyResult<PyObject> {
        Ok(PyTuple::new(py, items)?.into_any().unbind())
    }

    /// The out= tensors of an op with named returns, as its `ratten.return_types` tuple.
    pub fn named_tuple(
        &self,
        py: Python<'_>,
        name: &str,
        fields: &[&str],
        items: Vec<PyObject>,
    ) -> PyResult<PyObject> {
        let t = self.tuple(py, items)?;
        named_tuple_of(py, name, fields, t)
    }

    /// Runs the kernel call: without the GIL when the op is big enough to matter (see
    /// [`GIL_RELEASE_NUMEL`]).
    pub fn run<T: Send>(
        &self,
        py: Python<'_>,
        f: impl FnOnce() -> ratten_core::Result<T> + Send,
    ) -> PyResult<T> {
        run_maybe_released(py, self.max_numel.get(), f)
    }

    pub fn unknown_signature(&self) -> PyErr {
        PyRuntimeError::new_err(format!(
            "{}(): internal error: no dispatch for signature {}",
            self.sig.name, self.index
        ))
    }
}

/// Whether a kernel over `numel` elements runs with the GIL released.
#[inline]
pub fn releases_gil(numel: usize) -> bool {
    numel >= GIL_RELEASE_NUMEL || ALWAYS_RELEASE.load(std::sync::atomic::Ordering::Relaxed)
}

/// Calls `f` with the GIL released when `numel` reaches [`GIL_RELEASE_NUMEL`].
pub fn run_maybe_released<T: Send>(
    py: Python<'_>,
    numel: usize,
    f: impl FnOnce() -> ratten_core::Result<T> + Send,
) -> PyResult<T> {
    let r = if releases_gil(numel) {
        py.allow_threads(f).py()
    } else {
        f().py()
    };
    crate::python::error::flush_warnings(py)?;
    r
}

fn default_scalar(d: Option<&DefaultValue>) -> Option<Scalar> {
    Some(match d? {
        DefaultValue::Bool(b) => Scalar::Bool(*b),
        DefaultValue::Int(i) => Scalar::Int(*i),
        DefaultValue::Float(f) => Scalar::Double(*f),
        DefaultValue::Complex { re, im } => Scalar::ComplexDouble(Complex64::new(*re, *im)),
        _ => return None,
    })
}

/// A kernel result as a Python value.
pub trait IntoPyResult {
    fn into_py_result(self, py: Python<'_>) -> PyResult<PyObject>;
}

impl IntoPyResult for Tensor {
    fn into_py_result(self, py: Python<'_>) -> PyResult<PyObject> {
        Ok(wrap(py, self)?.into_any())
    }
}
impl IntoPyResult for Vec<Tensor> {
    fn into_py_result(self, py: Python<'_>) -> PyResult<PyObject> {
        let items = self
            .into_iter()
            .map(|t| t.into_py_result(py))
            .collect::<PyResult<Vec<_>>>()?;
        Ok(PyTuple::new(py, items)?.into_any().unbind())
    }
}
impl IntoPyResult for (Tensor, Tensor) {
    fn into_py_result(self, py: Python<'_>) -> PyResult<PyObject> {
        vec![self.0, self.1].into_py_result(py)
    }
}
impl IntoPyResult for (Tensor, Tensor, Tensor) {
    fn into_py_result(self, py: Python<'_>) -> PyResult<PyObject> {
        vec![self.0, self.1, self.2].into_py_result(py)
    }
}
impl IntoPyResult for (Tensor, Tensor, Tensor, Tensor) {
    fn into_py_result(self, py: Python<'_>) -> PyResult<PyObject> {
        vec![self.0, self.1, self.2, self.3].into_py_result(py)
    }
}
impl IntoPyResult for () {
    fn into_py_result(self, py: Python<'_>) -> PyResult<PyObject> {
        Ok(py.None())
    }
}
impl IntoPyResult for Scalar {
    fn into_py_result(self, py: Python<'_>) -> PyResult<PyObject> {
        scalar_to_py(py, self)
    }
}
impl IntoPyResult for i64 {
    fn into_py_result(self, py: Python<'_>) -> PyResult<PyObject> {
        self.into_py_any(py)
    }
}
impl IntoPyResult for f64 {
    fn into_py_result(self, py: Python<'_>) -> PyResult<PyObject> {
        self.into_py_any(py)
    }
}
impl IntoPyResult for bool {
    fn into_py_result(self, py: Python<'_>) -> PyResult<PyObject> {
        self.into_py_any(py)
    }
}

/// What generated dispatch functions call on a kernel's result.
/// A factory's `requires_grad=` (torchgen's `.set_requires_grad(_r.toBool(N))`).
pub fn set_requires_grad(t: &Tensor, requires_grad: bool) -> PyResult<()> {
    if requires_grad {
        ratten_autograd::variable::set_requires_grad(t, true).py()?;
    }
    Ok(())
}

pub fn into_py_result<T: IntoPyResult>(py: Python<'_>, v: T) -> PyResult<PyObject> {
    v.into_py_result(py)
}

/// The named tuple `ratten.return_types.<name>` with `fields` of a kernel's tuple result
/// (torch's `torch.return_types` structseqs: `x.max(dim=0).values`).
pub fn into_py_named<T: IntoPyResult>(
    py: Python<'_>,
    name: &str,
    fields: &[&str],
    v: T,
) -> PyResult<PyObject> {
    let items = v.into_py_result(py)?;
    named_tuple_of(py, name, fields, items)
}

fn named_tuple_of(
    py: Python<'_>,
    name: &str,
    fields: &[&str],
    items: PyObject,
) -> PyResult<PyObject> {
    let class = py
        .import("ratten.return_types")?
        .getattr("_make")?
        .call1((name, fields.to_vec()))?;
    Ok(class.call_method1("_make", (items,))?.unbind())
}

/// A parser from torch-format signature strings that are part of this crate (exercised by its
/// tests); a bad one gives a parser without signatures, reported on use rather than at import.
pub fn static_parser(name: &str, signatures: &[&str], method: bool) -> Parser {
    Parser::from_signature_strings(name, signatures, method).unwrap_or_else(|_| Parser {
        name: name.to_string(),
        signatures: Vec::new(),
    })
}

/// Parses a call against `parser` (torch's `PythonArgParser::parse`): the matched signature's
/// arguments, or torch's TypeError.
pub fn parse_args<'a, 'py>(
    parser: &'a Parser,
    self_obj: Option<&'a Bound<'py, PyAny>>,
    args: &'a [Bound<'py, PyAny>],
    kwargs: &'a [(String, Bound<'py, PyAny>)],
) -> PyResult<PythonArgs<'a, 'py>> {
    let kinds: Vec<ArgKind> = args.iter().map(classify).collect();
    let kw_kinds: Vec<(String, ArgKind)> = kwargs
        .iter()
        .map(|(n, o)| (n.clone(), classify(o)))
        .collect();
    let parsed = parser
        .parse(&kinds, &kw_kinds)
        .map_err(PyTypeError::new_err)?;
    Ok(PythonArgs {
        sig: &parser.signatures[parsed.signature],
        index: parsed.signature,
        slots: parsed.slots,
        args,
        kwargs,
        self_obj,
        max_numel: Cell::new(0),
    })
}

pub(crate) fn split_kwargs<'py>(
    kwargs: Option<&Bound<'py, PyDict>>,
) -> PyResult<Vec<(String, Bound<'py, PyAny>)>> {
    let mut v = Vec::new();
    if let Some(k) = kwargs {
        for (name, val) in k.iter() {
            v.push((name.extract::<String>()?, val));
        }
    }
    Ok(v)
}

/// `ratten._C._set_always_release_gil(flag)`: release the GIL around every kernel, as torch
/// does (for measuring; the default releases it only for ops of [`GIL_RELEASE_NUMEL`]
/// elements or more).
#[pyfunction]
fn _set_always_release_gil(flag: bool) {
    ALWAYS_RELEASE.store(flag, std::sync::atomic::Ordering::Relaxed);
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(_set_always_release_gil, m)?)?;
    m.add("GIL_RELEASE_NUMEL", GIL_RELEASE_NUMEL)?;
    Ok(())
}
