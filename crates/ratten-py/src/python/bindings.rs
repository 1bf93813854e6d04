//! Layer 5 (generated bindings): the module functions and Tensor methods of the generated
//! tables (`crate::generated::signatures` parsed once into parsers, dispatched through
//! `crate::generated::dispatch`, which sits above the argument parser and below this module),
//! with the hand-written bindings that replace generated ones (torch's
//! python_variable_methods.cpp: `Tensor.to`). The Python callables built on these are
//! `callables.rs`.

use std::collections::HashMap;
use std::sync::OnceLock;

use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;

use super::object::any_tensor;
use super::python_args::{into_py_result, parse_args, static_parser, DispatchFn, PythonArgs};
use crate::arg_parser::Parser;
use crate::generated::{dispatch, signatures};

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
pub(crate) fn method_signature_strings(index: usize) -> &'static [&'static str] {
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

/// `Tensor.add(t, u)`: the first argument must be a Tensor (CPython's text for a method
/// descriptor applied to another type).
pub(crate) fn method_self<'a, 'py>(
    index: usize,
    first: Option<&'a Bound<'py, PyAny>>,
) -> PyResult<&'a Bound<'py, PyAny>> {
    match first {
        Some(t) if any_tensor(t).is_some() => Ok(t),
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

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(_generated_signatures, m)?)?;
    Ok(())
}
