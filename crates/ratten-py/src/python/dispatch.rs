//! Layer 6 (dispatcher from Python): torch._C's dispatcher introspection and run-time
//! registration (torch/csrc/utils/python_dispatch.cpp), with the same names and behaviour.
//! Python kernels receive and return values through `convert`; a registration forgets the
//! boxed calls' parsers (`ops`).

use std::sync::Mutex;

use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use pyo3::types::PyTuple;
use ratten_core::DispatchKey;
use ratten_dispatch::{CppFunction, Dispatcher, Library, OperatorHandle};
use ratten_schema::OperatorName;

use super::convert::{ivalue_to_py, py_to_ivalue_any};
use super::error::IntoPy;
use super::ops::invalidate_op_cache;

/// `torch::jit::parseName`: `ns::op` or `ns::op.overload`.
fn parse_name(name: &str) -> OperatorName {
    match name.rsplit_once('.') {
        Some((n, o)) if !o.contains("::") => OperatorName::new(n, o),
        _ => OperatorName::new(name, ""),
    }
}

fn find_op(name: &str) -> Option<OperatorHandle> {
    Dispatcher::singleton().find_op(&parse_name(name))
}

/// `_dispatch_dump(name)`: the operator's registrations, or "" when it has none.
#[pyfunction]
fn _dispatch_dump(name: &str) -> String {
    find_op(name).map(|h| h.dump_state()).unwrap_or_default()
}

/// `_dispatch_dump_table(name)`: the computed dispatch table, or "".
#[pyfunction]
fn _dispatch_dump_table(name: &str) -> String {
    find_op(name)
        .map(|h| h.dump_computed_table())
        .unwrap_or_default()
}

/// `_dispatch_check_invariants(name)`.
#[pyfunction]
fn _dispatch_check_invariants(name: &str) -> PyResult<()> {
    match find_op(name) {
        Some(h) => h.check_invariants().py(),
        None => Ok(()),
    }
}

/// `_dispatch_check_all_invariants()`.
#[pyfunction]
fn _dispatch_check_all_invariants() -> PyResult<()> {
    Dispatcher::singleton().check_all_invariants().py()
}

fn optional_key(key: &str) -> PyResult<Option<DispatchKey>> {
    if key.is_empty() {
        Ok(None)
    } else {
        DispatchKey::parse(key).map(Some).py()
    }
}

/// `_dispatch_get_registrations_for_dispatch_key(key="")`.
#[pyfunction]
#[pyo3(signature = (dispatch_key=""))]
fn _dispatch_get_registrations_for_dispatch_key(dispatch_key: &str) -> PyResult<Vec<String>> {
    Ok(Dispatcher::singleton().get_registrations_for_dispatch_key(optional_key(dispatch_key)?))
}

/// `_dispatch_print_registrations_for_dispatch_key(key="")`: one name a line on stdout
/// (Python's sys.stdout, so it can be captured).
#[pyfunction]
#[pyo3(signature = (dispatch_key=""))]
fn _dispatch_print_registrations_for_dispatch_key(
    py: Python<'_>,
    dispatch_key: &str,
) -> PyResult<()> {
    let names = _dispatch_get_registrations_for_dispatch_key(dispatch_key)?;
    let out = py.import("sys")?.getattr("stdout")?;
    for n in names {
        out.call_method1("write", (format!("{n}\n"),))?;
    }
    Ok(())
}

/// `_dispatch_has_kernel_for_dispatch_key(name, key)`.
#[pyfunction]
fn _dispatch_has_kernel_for_dispatch_key(name: &str, dispatch: &str) -> PyResult<bool> {
    let k = DispatchKey::parse(dispatch).py()?;
    Ok(find_op(name).is_some_and(|h| h.has_kernel_for_dispatch_key(k)))
}

/// `_dispatch_find_dangling_impls()`.
#[pyfunction]
fn _dispatch_find_dangling_impls() -> Vec<String> {
    Dispatcher::singleton()
        .find_dangling_impls()
        .into_iter()
        .map(|h| h.dump_state())
        .collect()
}

/// The handle `_dispatch_library` returns (torch's `torch::Library` wrapper). Deleting it
/// (dropping the last reference) undoes every registration it made.
#[pyclass(name = "_DispatchModule", module = "ratten._C")]
struct PyLibrary {
    lib: Mutex<Option<Library>>,
}

impl PyLibrary {
    fn with<R>(&self, f: impl FnOnce(&mut Library) -> ratten_core::Result<R>) -> PyResult<R> {
        let mut g = self
            .lib
            .lock()
            .map_err(|_| PyRuntimeError::new_err("library handle poisoned"))?;
        let lib = g
            .as_mut()
            .ok_or_else(|| PyRuntimeError::new_err("library handle was reset"))?;
        let r = f(lib).py();
        invalidate_op_cache();
        r
    }
}

impl Drop for PyLibrary {
    fn drop(&mut self) {
        invalidate_op_cache();
    }
}

/// A Python callable as a boxed kernel: pops the arguments, calls it with the GIL, pushes
/// its results.
fn python_kernel(func: Py<PyAny>, with_keyset: bool) -> CppFunction {
    CppFunction::boxed(move |op, ks, stack| {
        let schema = op.schema().ok_or_else(|| {
            ratten_core::Error::runtime("Python kernel called on an operator without schema")
        })?;
        let nargs = schema.arguments.len().min(stack.len());
        let args: Vec<_> = stack.drain(stack.len() - nargs..).collect();
        let nret = schema.returns.len();
        Python::with_gil(|py| -> ratten_core::Result<()> {
            let err = |e: PyErr| ratten_core::Error::runtime(e.to_string());
            let mut pyargs = Vec::with_capacity(args.len() + 1);
            if with_keyset {
                pyargs.push(
                    pyo3::types::PyString::new(py, &format!("{ks:?}"))
                        .into_any()
                        .unbind(),
                );
            }
            for a in args {
                pyargs.push(ivalue_to_py(py, a).map_err(err)?);
            }
            let tuple = PyTuple::new(py, pyargs).map_err(err)?;
            let r = func.bind(py).call1(tuple).map_err(err)?;
            match nret {
                0 => {}
                1 => stack.push(py_to_ivalue_any(&r).map_err(err)?),
                _ => {
                    for item in r.try_iter().map_err(err)? {
                        stack.push(py_to_ivalue_any(&item.map_err(err)?).map_err(err)?);
                    }
                }
            }
            Ok(())
        })
    })
}

#[pymethods]
impl PyLibrary {
    /// `m.def_(schema, alias="")`.
    #[pyo3(signature = (schema, alias=""))]
    fn def_(slf: PyRef<'_, Self>, schema: &str, alias: &str) -> PyResult<Py<PyLibrary>> {
        slf.with(|l| l.def_py(schema, alias).map(|_| ()))?;
        Ok(slf.into())
    }
    /// `m.def_legacy(schema)`.
    fn def_legacy(slf: PyRef<'_, Self>, schema: &str) -> PyResult<Py<PyLibrary>> {
        slf.with(|l| l.def_legacy(schema).map(|_| ()))?;
        Ok(slf.into())
    }
    /// `m.def_name_t_t(name, dispatch="", debug="default_def_name_t_t")`.
    #[pyo3(signature = (name, dispatch="", debug="default_def_name_t_t"))]
    fn def_name_t_t(
        slf: PyRef<'_, Self>,
        name: &str,
        dispatch: &str,
        debug: &str,
    ) -> PyResult<Py<PyLibrary>> {
        slf.with(|l| l.def_name_t_t(name, dispatch, debug).map(|_| ()))?;
        Ok(slf.into())
    }
    /// `m.impl_t_t(name, dispatch="", debug="impl_t_t")`.
    #[pyo3(signature = (name, dispatch="", debug="impl_t_t"))]
    fn impl_t_t(
        slf: PyRef<'_, Self>,
        name: &str,
        dispatch: &str,
        debug: &str,
    ) -> PyResult<Py<PyLibrary>> {
        slf.with(|l| l.impl_t_t(name, dispatch, debug).map(|_| ()))?;
        Ok(slf.into())
    }
    /// `m.fallback_fallthrough(dispatch="")`.
    #[pyo3(signature = (dispatch=""))]
    fn fallback_fallthrough(slf: PyRef<'_, Self>, dispatch: &str) -> PyResult<Py<PyLibrary>> {
        slf.with(|l| l.fallback_fallthrough(dispatch).map(|_| ()))?;
        Ok(slf.into())
    }
    /// `m.impl(name, dispatch, func, with_keyset=False)`: a Python callable as the kernel
    /// (what torch.library.Library.impl uses). Its debug string is torch's for Python kernels.
    #[pyo3(signature = (name, dispatch, func, with_keyset=false))]
    fn r#impl(
        slf: PyRef<'_, Self>,
        name: &str,
        dispatch: &str,
        func: Py<PyAny>,
        with_keyset: bool,
    ) -> PyResult<Py<PyLibrary>> {
        let key = optional_key(dispatch)?;
        let f = python_kernel(func, with_keyset)
            .dispatch_key(key)
            .debug("registered by Python");
        slf.with(|l| l.impl_(name, f).map(|_| ()))?;
        Ok(slf.into())
    }
    /// `m.define(schema, alias="")`: like def_, returning the operator's name.
    #[pyo3(signature = (schema, alias=""))]
    fn define(&self, schema: &str, alias: &str) -> PyResult<String> {
        self.with(|l| l.def_py(schema, alias).map(|_| ()))?;
        let name = schema.split('(').next().unwrap_or(schema).trim();
        Ok(name.to_string())
    }
    /// `m.reset()`: deregisters everything now.
    fn reset(&self) -> PyResult<()> {
        let lib = self
            .lib
            .lock()
            .map_err(|_| PyRuntimeError::new_err("library handle poisoned"))?
            .take();
        drop(lib);
        invalidate_op_cache();
        Ok(())
    }
}

/// `_dispatch_library(kind, ns, dispatch_key, file="/dev/null", linenum=0)`.
#[pyfunction]
#[pyo3(signature = (kind, name, dispatch, file="/dev/null", linenum=0))]
fn _dispatch_library(
    kind: &str,
    name: &str,
    dispatch: &str,
    file: &str,
    linenum: u32,
) -> PyResult<PyLibrary> {
    let lib = if file == "/dev/null" && linenum == 0 {
        Library::from_strings(kind, name, dispatch)
    } else {
        ratten_dispatch::LibraryKind::parse(kind).and_then(|k| {
            let key = if dispatch.is_empty() {
                None
            } else {
                Some(DispatchKey::parse(dispatch)?)
            };
            Library::new(k, name, key, file, linenum)
        })
    }
    .py()?;
    invalidate_op_cache();
    Ok(PyLibrary {
        lib: Mutex::new(Some(lib)),
    })
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<PyLibrary>()?;
    m.add_function(wrap_pyfunction!(_dispatch_dump, m)?)?;
    m.add_function(wrap_pyfunction!(_dispatch_dump_table, m)?)?;
    m.add_function(wrap_pyfunction!(_dispatch_check_invariants, m)?)?;
    m.add_function(wrap_pyfunction!(_dispatch_check_all_invariants, m)?)?;
    m.add_function(wrap_pyfunction!(
        _dispatch_get_registrations_for_dispatch_key,
        m
    )?)?;
    m.add_function(wrap_pyfunction!(
        _dispatch_print_registrations_for_dispatch_key,
        m
    )?)?;
    m.add_function(wrap_pyfunction!(_dispatch_has_kernel_for_dispatch_key, m)?)?;
    m.add_function(wrap_pyfunction!(_dispatch_find_dangling_impls, m)?)?;
    m.add_function(wrap_pyfunction!(_dispatch_library, m)?)?;
    Ok(())
}
