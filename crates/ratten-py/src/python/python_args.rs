//! torch's `PythonArgs`: the typed accessors the generated dispatch functions
//! (`crate::generated::dispatch`) read their arguments with, and the module functions and
//! Tensor methods built from the generated tables.

use std::cell::Cell;
use std::collections::HashMap;
use std::sync::OnceLock;

use num_complex::Complex64;
use pyo3::exceptions::{PyRuntimeError, PyTypeError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple};
use pyo3::IntoPyObjectExt;
use ratten_aten::native::MemoryFormat;
use ratten_aten::Tensor;
use ratten_core::{Device, Scalar, ScalarType};
use ratten_schema::DefaultValue;

use super::ops::{classify, scalar_to_py, to_scalar};
use super::tensor::{wrap, PyTensor};
use super::types::{parse_device, PyDtype, PyMemoryFormat};
use super::IntoPy;
use crate::arg_parser::{ArgKind, Parser, Signature, Slot};
use crate::generated::{dispatch, signatures};

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
        let t = match super::slots::any_tensor(s) {
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
        let t = tensor_from(&o)?;
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
            _ => Err(type_error(self, k, "ratten.dtype")),
        }
    }

    pub fn optional_scalar_type(&self, k: usize) -> PyResult<Option<ScalarType>> {
        if self.is_none(k) {
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
            let t = tensor_from(&e?)?;
            self.note(&t);
            v.push(t);
        }
        Ok(v)
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
    if releases_gil(numel) {
        py.allow_threads(f).py()
    } else {
        f().py()
    }
}

fn tensor_from(o: &Bound<'_, PyAny>) -> PyResult<Tensor> {
    if let Some(t) = super::slots::any_tensor(o) {
        return Ok(t.clone());
    }
    let s = to_scalar(o)?;
    Tensor::wrapped_scalar_tensor(s, Device::CPU).py()
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
pub fn into_py_result<T: IntoPyResult>(py: Python<'_>, v: T) -> PyResult<PyObject> {
    v.into_py_result(py)
}

/// A Tensor method whose binding is written by hand, as torch's are in
/// python_variable_methods.cpp: its signature strings and dispatch function replace the
/// generated ones (which follow native_functions.yaml).
struct MethodOverride {
    name: &'static str,
    signatures: &'static [&'static str],
    dispatch: DispatchFn,
}

const METHOD_OVERRIDES: &[MethodOverride] = &[MethodOverride {
    name: "to",
    signatures: TO_SIGNATURES,
    dispatch: method_to,
}];

/// `THPVariable_to`'s parser (torch 2.15): a device (string, index or None) with an optional
/// dtype, a dtype, or a tensor whose dtype and device are taken; `memory_format` is
/// keyword-only, and there is no `layout` / `pin_memory`.
const TO_SIGNATURES: &[&str] = &[
    "to(Device device=None, ScalarType dtype=None, bool non_blocking=False, bool copy=False, *, MemoryFormat? memory_format=None)",
    "to(ScalarType dtype, bool non_blocking=False, bool copy=False, *, MemoryFormat? memory_format=None)",
    "to(Tensor tensor, bool non_blocking=False, bool copy=False, *, MemoryFormat? memory_format=None)",
];

/// `Tensor.to` (torch's `THPVariable_to` with `parse_to_conversion`): the tensor itself, as the
/// same Python object, when nothing is asked for or nothing changes (`t.to(t.dtype) is t`, as
/// the in-place methods return `self`); a new tensor otherwise.
fn method_to(py: Python<'_>, r: &PythonArgs<'_, '_>) -> PyResult<PyObject> {
    let a_self = r.self_tensor()?;
    let (device, dtype, non_blocking, copy) = match r.index() {
        0 => (
            r.optional_device(0)?,
            r.optional_scalar_type(1)?,
            r.bool(2)?,
            r.bool(3)?,
        ),
        1 => (None, Some(r.scalar_type(0)?), r.bool(1)?, r.bool(2)?),
        2 => {
            let other = r.tensor(0)?;
            (
                Some(other.device()),
                Some(other.dtype()),
                r.bool(1)?,
                r.bool(2)?,
            )
        }
        _ => return Err(r.unknown_signature()),
    };
    // The last parameter of each signature.
    let memory_format = r.optional_memory_format(r.sig.params.len() - 1)?;
    if device.is_none() && dtype.is_none() && !copy && memory_format.is_none() {
        return Ok(r.self_object());
    }
    let (t, same) = r.run(py, move || {
        let t = a_self.to_dtype_layout_with(
            dtype,
            None,
            device,
            None,
            non_blocking,
            copy,
            memory_format,
        )?;
        let same = t.is_same(&a_self);
        Ok((t, same))
    })?;
    if same {
        return Ok(r.self_object());
    }
    into_py_result(py, t)
}

/// The override of generated method `name`, if it has one.
fn method_override(name: &str) -> Option<&'static MethodOverride> {
    METHOD_OVERRIDES.iter().find(|o| o.name == name)
}

/// The signature strings generated method `index` is parsed with (an override's, if any).
fn method_signature_strings(index: usize) -> &'static [&'static str] {
    let b = &signatures::METHODS[index];
    method_override(b.name).map_or(b.signatures, |o| o.signatures)
}

/// The parsers of the generated tables, built once from their signature strings.
struct Tables {
    functions: Vec<Parser>,
    methods: Vec<Parser>,
    /// The methods' dispatch functions (the generated ones, or an override's).
    method_dispatch: Vec<DispatchFn>,
    function_index: HashMap<&'static str, usize>,
    method_index: HashMap<&'static str, usize>,
}

/// A parser from torch-format signature strings that are part of this crate (exercised by its
/// tests); a bad one gives a parser without signatures, reported on use rather than at import.
pub fn static_parser(name: &str, signatures: &[&str], method: bool) -> Parser {
    Parser::from_signature_strings(name, signatures, method).unwrap_or_else(|_| Parser {
        name: name.to_string(),
        signatures: Vec::new(),
    })
}

fn tables() -> &'static Tables {
    static T: OnceLock<Tables> = OnceLock::new();
    T.get_or_init(|| Tables {
        functions: signatures::FUNCTIONS
            .iter()
            .map(|b| static_parser(b.name, b.signatures, false))
            .collect(),
        methods: (0..signatures::METHODS.len())
            .map(|i| {
                let name = signatures::METHODS[i].name;
                static_parser(name, method_signature_strings(i), true)
            })
            .collect(),
        method_dispatch: signatures::METHODS
            .iter()
            .zip(dispatch::METHOD_DISPATCH.iter())
            .map(|(b, &f)| method_override(b.name).map_or(f, |o| o.dispatch))
            .collect(),
        function_index: signatures::FUNCTIONS
            .iter()
            .enumerate()
            .map(|(i, b)| (b.name, i))
            .collect(),
        method_index: signatures::METHODS
            .iter()
            .enumerate()
            .map(|(i, b)| (b.name, i))
            .collect(),
    })
}

/// The generated function `name`'s index, if there is one.
pub fn function_index(name: &str) -> Option<usize> {
    tables().function_index.get(name).copied()
}

/// The generated method `name`'s index, if there is one.
pub fn method_index(name: &str) -> Option<usize> {
    tables().method_index.get(name).copied()
}

/// Parses and dispatches a call of generated function (or, with `self_obj`, method) `index`.
pub fn call_generated(
    py: Python<'_>,
    index: usize,
    self_obj: Option<&Bound<'_, PyAny>>,
    args: &[Bound<'_, PyAny>],
    kwargs: &[(String, Bound<'_, PyAny>)],
) -> PyResult<PyObject> {
    let t = tables();
    let (parser, f) = match self_obj {
        Some(_) => (&t.methods[index], t.method_dispatch[index]),
        None => (&t.functions[index], dispatch::FUNCTION_DISPATCH[index]),
    };
    let r = parse_args(parser, self_obj, args, kwargs)?;
    f(py, &r)
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

/// A generated module function (`ratten.add`).
#[pyclass(name = "_GeneratedFunction", module = "ratten", frozen)]
pub struct GeneratedFunction {
    pub(crate) index: usize,
    /// The operator when the function is add/sub/mul/div (they have a fast path), found once
    /// here rather than on every call.
    pub(crate) arith: Option<super::fast::Arith>,
    /// CPython's per-object vectorcall entry: the type's `tp_vectorcall_offset` points here
    /// once slots.rs has installed it, so calls skip building an argument tuple and dict.
    vectorcall: Option<pyo3::ffi::vectorcallfunc>,
}

impl GeneratedFunction {
    pub(crate) fn new(index: usize) -> Self {
        let arith = super::fast::arith_of(index);
        GeneratedFunction {
            index,
            arith,
            // add/sub/mul/div get an entry of their own, specialised for the operator.
            vectorcall: Some(super::slots::function_vectorcall_for(arith)),
        }
    }

    /// Address of the vectorcall field (for slots.rs to find its offset in the object).
    pub(crate) fn vectorcall_field(&self) -> *const Option<pyo3::ffi::vectorcallfunc> {
        &self.vectorcall
    }
}

#[pymethods]
impl GeneratedFunction {
    #[pyo3(signature = (*args, **kwargs))]
    fn __call__(
        &self,
        py: Python<'_>,
        args: &Bound<'_, PyTuple>,
        kwargs: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<PyObject> {
        // Hot path: `ratten.add(a, b, out=c)` with plain tensors (see fast.rs).
        if let Some(r) = super::fast::function_fast(py, self.index, args, kwargs)? {
            return Ok(r);
        }
        let args: Vec<Bound<'_, PyAny>> = args.iter().collect();
        call_generated(py, self.index, None, &args, &split_kwargs(kwargs)?)
    }
    #[getter]
    fn __name__(&self) -> &'static str {
        signatures::FUNCTIONS[self.index].name
    }
    /// torch's signature strings of this function (what `__doc__` shows in torch).
    #[getter]
    fn signatures(&self) -> Vec<&'static str> {
        signatures::FUNCTIONS[self.index].signatures.to_vec()
    }
    fn __repr__(&self) -> String {
        format!(
            "<built-in method {} of ratten>",
            signatures::FUNCTIONS[self.index].name
        )
    }
}

/// A generated Tensor method, as a descriptor on the Tensor type (`Tensor.add`).
#[pyclass(name = "_GeneratedMethod", module = "ratten", frozen)]
pub struct GeneratedMethod {
    pub(crate) index: usize,
    /// As [`GeneratedFunction`]'s: slots.rs makes the type a vectorcall-able method descriptor
    /// (`Py_TPFLAGS_METHOD_DESCRIPTOR`), so `t.add(u)` calls `Tensor.add(t, u)` without
    /// binding a method object or building an argument tuple, as CPython's own methods.
    vectorcall: Option<pyo3::ffi::vectorcallfunc>,
}

impl GeneratedMethod {
    pub(crate) fn new(index: usize) -> Self {
        GeneratedMethod {
            index,
            vectorcall: Some(super::slots::generated_method_vectorcall),
        }
    }

    /// Address of the vectorcall field (for slots.rs to find its offset in the object).
    pub(crate) fn vectorcall_field(&self) -> *const Option<pyo3::ffi::vectorcallfunc> {
        &self.vectorcall
    }
}

/// `Tensor.add(t, u)`: the first argument must be a Tensor (CPython's text for a method
/// descriptor applied to another type).
pub(crate) fn method_self<'a, 'py>(
    index: usize,
    first: Option<&'a Bound<'py, PyAny>>,
) -> PyResult<&'a Bound<'py, PyAny>> {
    match first {
        Some(t) if super::slots::any_tensor(t).is_some() => Ok(t),
        Some(o) => Err(PyTypeError::new_err(format!(
            "descriptor '{}' for 'Tensor' objects doesn't apply to a '{}' object",
            signatures::METHODS[index].name,
            o.get_type().name()?
        ))),
        None => Err(PyTypeError::new_err(format!(
            "unbound method Tensor.{}() needs an argument",
            signatures::METHODS[index].name
        ))),
    }
}

#[pymethods]
impl GeneratedMethod {
    /// The unbound call `Tensor.add(t, u, alpha=2)` (what a method descriptor's call means;
    /// `t.add(u)` arrives here, or at the vectorcall entry, with `t` first).
    #[pyo3(signature = (*args, **kwargs))]
    fn __call__(
        &self,
        py: Python<'_>,
        args: &Bound<'_, PyTuple>,
        kwargs: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<PyObject> {
        let args: Vec<Bound<'_, PyAny>> = args.iter().collect();
        let this = method_self(self.index, args.first())?;
        call_generated(
            py,
            self.index,
            Some(this),
            &args[1..],
            &split_kwargs(kwargs)?,
        )
    }
    fn __get__(
        slf: &Bound<'_, Self>,
        obj: Option<&Bound<'_, PyAny>>,
        _owner: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<PyObject> {
        let py = slf.py();
        let Some(obj) = obj.filter(|o| !o.is_none()) else {
            return Ok(slf.clone().into_any().unbind());
        };
        Ok(Py::new(py, BoundMethod::new(slf.get().index, obj.clone().unbind()))?.into_any())
    }
    #[getter]
    fn signatures(&self) -> Vec<&'static str> {
        method_signature_strings(self.index).to_vec()
    }
}

/// A generated method bound to its tensor (`t.add`).
#[pyclass(name = "_BoundMethod", module = "ratten", frozen)]
pub struct BoundMethod {
    pub(crate) index: usize,
    this: PyObject,
    /// As [`GeneratedFunction`]'s (slots.rs installs `tp_vectorcall_offset`).
    vectorcall: Option<pyo3::ffi::vectorcallfunc>,
}

impl BoundMethod {
    pub(crate) fn new(index: usize, this: PyObject) -> Self {
        BoundMethod {
            index,
            this,
            vectorcall: Some(super::slots::bound_method_vectorcall),
        }
    }

    pub(crate) fn this_ptr(&self) -> *mut pyo3::ffi::PyObject {
        self.this.as_ptr()
    }

    /// Address of the vectorcall field (for slots.rs to find its offset in the object).
    pub(crate) fn vectorcall_field(&self) -> *const Option<pyo3::ffi::vectorcallfunc> {
        &self.vectorcall
    }
}

#[pymethods]
impl BoundMethod {
    #[pyo3(signature = (*args, **kwargs))]
    fn __call__(
        &self,
        py: Python<'_>,
        args: &Bound<'_, PyTuple>,
        kwargs: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<PyObject> {
        let args: Vec<Bound<'_, PyAny>> = args.iter().collect();
        let this = self.this.bind(py);
        call_generated(py, self.index, Some(this), &args, &split_kwargs(kwargs)?)
    }
    fn __repr__(&self) -> String {
        format!(
            "<built-in method {} of Tensor object>",
            signatures::METHODS[self.index].name
        )
    }
}

/// `ratten._C._generated_functions()`: name -> function, for the module's namespace.
#[pyfunction]
fn _generated_functions(py: Python<'_>) -> PyResult<Bound<'_, PyDict>> {
    let d = PyDict::new(py);
    for (i, b) in signatures::FUNCTIONS.iter().enumerate() {
        d.set_item(b.name, Py::new(py, GeneratedFunction::new(i))?)?;
    }
    Ok(d)
}

/// `ratten._C._generated_methods()`: name -> method descriptor, for the Tensor class.
#[pyfunction]
fn _generated_methods(py: Python<'_>) -> PyResult<Bound<'_, PyDict>> {
    let d = PyDict::new(py);
    for (i, b) in signatures::METHODS.iter().enumerate() {
        d.set_item(b.name, Py::new(py, GeneratedMethod::new(i))?)?;
    }
    Ok(d)
}

/// `ratten._C._generated_signatures(name, method=False)`: the signature strings (for a method
/// with a hand-written binding, `to`, the ones it is parsed with).
#[pyfunction]
#[pyo3(signature = (name, method=false))]
fn _generated_signatures(name: &str, method: bool) -> Vec<&'static str> {
    if method {
        return method_index(name)
            .map(|i| method_signature_strings(i).to_vec())
            .unwrap_or_default();
    }
    signatures::FUNCTIONS
        .iter()
        .find(|b| b.name == name)
        .map(|b| b.signatures.to_vec())
        .unwrap_or_default()
}

/// `ratten._C._set_always_release_gil(flag)`: release the GIL around every kernel, as torch
/// does (for measuring; the default releases it only for ops of [`GIL_RELEASE_NUMEL`]
/// elements or more).
#[pyfunction]
fn _set_always_release_gil(flag: bool) {
    ALWAYS_RELEASE.store(flag, std::sync::atomic::Ordering::Relaxed);
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<GeneratedFunction>()?;
    m.add_class::<GeneratedMethod>()?;
    m.add_class::<BoundMethod>()?;
    m.add_function(wrap_pyfunction!(_generated_functions, m)?)?;
    m.add_function(wrap_pyfunction!(_generated_methods, m)?)?;
    m.add_function(wrap_pyfunction!(_generated_signatures, m)?)?;
    m.add_function(wrap_pyfunction!(_set_always_release_gil, m)?)?;
    m.add("GIL_RELEASE_NUMEL", GIL_RELEASE_NUMEL)?;
    Ok(())
}
