//! Layer 5 (functions): the module functions that are not operators: dtype arithmetic
//! (`result_type`, `promote_types`, `can_cast`), the default dtype, random seeds, the
//! intra-op thread count, `is_tensor`. Parsed with the argument parser where torch parses them.

use std::sync::OnceLock;

use pyo3::exceptions::PyTypeError;
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyTuple};
use ratten_aten::native::type_properties;

use super::error::IntoPy;
use super::object::PyTensor;
use super::python_args::{parse_args, split_kwargs, static_parser, PythonArgs};
use super::types::{dtype_object, PyDtype};
use crate::arg_parser::Parser;

/// `ratten.result_type`'s overloads, in torch's order (python_torch_functions).
const RESULT_TYPE_SIGNATURES: &[&str] = &[
    "result_type(Tensor tensor, Tensor other)",
    "result_type(Scalar scalar, Tensor tensor)",
    "result_type(Tensor tensor, Scalar other)",
    "result_type(Scalar scalar1, Scalar scalar2)",
];

/// Parses a pyfunction's `*args` / `**kwargs` against a parser kept in `cell` and runs `f`
/// on the parsed arguments.
fn parsed_call<'py, R>(
    cell: &'static OnceLock<Parser>,
    name: &str,
    signatures: &[&str],
    args: &Bound<'py, PyTuple>,
    kwargs: Option<&Bound<'py, PyDict>>,
    f: impl for<'a> FnOnce(&PythonArgs<'a, 'py>) -> PyResult<R>,
) -> PyResult<R> {
    let args: Vec<Bound<'py, PyAny>> = args.iter().collect();
    let kwargs = split_kwargs(kwargs)?;
    let parser = cell.get_or_init(|| static_parser(name, signatures, false));
    let r = parse_args(parser, None, &args, &kwargs)?;
    f(&r)
}

/// `torch.result_type(tensor, other)`: the dtype an arithmetic op on the two operands gives.
/// Tensors or numbers in either place; a Python number is a wrapped number (weaker than any
/// tensor, its float / complex kind following the default dtype), as in torch.
#[pyfunction]
#[pyo3(signature = (*args, **kwargs))]
fn result_type(
    py: Python<'_>,
    args: &Bound<'_, PyTuple>,
    kwargs: Option<&Bound<'_, PyDict>>,
) -> PyResult<Py<PyDtype>> {
    static PARSER: OnceLock<Parser> = OnceLock::new();
    let st = parsed_call(
        &PARSER,
        "result_type",
        RESULT_TYPE_SIGNATURES,
        args,
        kwargs,
        |r| {
            Ok(match r.index() {
                0 => type_properties::result_type(r.tensor(0)?.base(), r.tensor(1)?.base()),
                1 => type_properties::result_type_scalar(r.tensor(1)?.base(), &r.scalar(0)?),
                2 => type_properties::result_type_scalar(r.tensor(0)?.base(), &r.scalar(1)?),
                3 => type_properties::result_type_scalars(&r.scalar(0)?, &r.scalar(1)?),
                _ => return Err(r.unknown_signature()),
            })
        },
    )?;
    dtype_object(py, st)
}

/// `torch.promote_types(type1, type2)`: the smallest dtype of the higher kind that holds both.
#[pyfunction]
#[pyo3(signature = (*args, **kwargs))]
fn promote_types(
    py: Python<'_>,
    args: &Bound<'_, PyTuple>,
    kwargs: Option<&Bound<'_, PyDict>>,
) -> PyResult<Py<PyDtype>> {
    static PARSER: OnceLock<Parser> = OnceLock::new();
    let st = parsed_call(
        &PARSER,
        "promote_types",
        &["promote_types(ScalarType type1, ScalarType type2)"],
        args,
        kwargs,
        |r| {
            Ok(type_properties::promote_types(
                r.scalar_type(0)?,
                r.scalar_type(1)?,
            ))
        },
    )?;
    dtype_object(py, st)
}

/// `torch.can_cast(from_, to)`: whether an op may write a `from_` result into a `to` output.
#[pyfunction]
#[pyo3(signature = (*args, **kwargs))]
fn can_cast(args: &Bound<'_, PyTuple>, kwargs: Option<&Bound<'_, PyDict>>) -> PyResult<bool> {
    static PARSER: OnceLock<Parser> = OnceLock::new();
    parsed_call(
        &PARSER,
        "can_cast",
        &["can_cast(ScalarType from_, ScalarType to)"],
        args,
        kwargs,
        |r| {
            Ok(type_properties::can_cast(
                r.scalar_type(0)?,
                r.scalar_type(1)?,
            ))
        },
    )
}

/// `torch.get_default_dtype()`.
#[pyfunction]
fn get_default_dtype(py: Python<'_>) -> PyResult<Py<PyDtype>> {
    dtype_object(py, ratten_core::get_default_dtype())
}

/// `torch._C._set_default_dtype(d)` (`ratten.set_default_dtype` is the Python function over
/// it, as in torch): a floating dtype, else torch's TypeError.
#[pyfunction]
fn _set_default_dtype(d: &Bound<'_, PyAny>) -> PyResult<()> {
    let d = d.downcast::<PyDtype>().map_err(|_| {
        PyTypeError::new_err(
            "invalid dtype object: only floating-point types are supported as the default type",
        )
    })?;
    ratten_core::set_default_dtype(d.get().st).py()
}

#[pyfunction]
fn manual_seed(seed: &Bound<'_, PyAny>) -> PyResult<()> {
    // torch takes any int, reducing it modulo 2**64 (negative seeds wrap).
    let s: i128 = seed.extract()?;
    ratten_aten::random::manual_seed(s.rem_euclid(1i128 << 64) as u64);
    Ok(())
}

#[pyfunction]
fn initial_seed() -> u64 {
    ratten_aten::random::initial_seed()
}

#[pyfunction]
fn set_num_threads(n: i64) -> PyResult<()> {
    ratten_aten::tensor_iterator::set_num_threads(n).py()
}

#[pyfunction]
fn get_num_threads() -> usize {
    ratten_aten::tensor_iterator::get_num_threads()
}

#[pyfunction]
fn is_tensor(obj: &Bound<'_, PyAny>) -> bool {
    obj.is_instance_of::<PyTensor>()
}

/// `ratten._C._gil_numel(t)`: the element count by which the fast paths decide whether a
/// kernel on `t` releases the GIL (for tests of the kept snapshot).
#[pyfunction]
fn _gil_numel(t: &Bound<'_, PyTensor>) -> usize {
    t.get().gil_numel()
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_function(wrap_pyfunction!(result_type, m)?)?;
    m.add_function(wrap_pyfunction!(promote_types, m)?)?;
    m.add_function(wrap_pyfunction!(can_cast, m)?)?;
    m.add_function(wrap_pyfunction!(get_default_dtype, m)?)?;
    m.add_function(wrap_pyfunction!(_set_default_dtype, m)?)?;
    m.add_function(wrap_pyfunction!(manual_seed, m)?)?;
    m.add_function(wrap_pyfunction!(initial_seed, m)?)?;
    m.add_function(wrap_pyfunction!(set_num_threads, m)?)?;
    m.add_function(wrap_pyfunction!(get_num_threads, m)?)?;
    m.add_function(wrap_pyfunction!(is_tensor, m)?)?;
    m.add_function(wrap_pyfunction!(_gil_numel, m)?)?;
    Ok(())
}
