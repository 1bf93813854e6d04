//! Layer 5 (functions): the module functions that are not operators: dtype arithmetic
//! (`result_type`, `promote_types`, `can_cast`), the default dtype, random seeds, the
//! intra-op thread count, `is_tensor`. Parsed with the argument parser where torch parses them.

use std::sync::OnceLock;

use pyo3::exceptions::{PyRuntimeError, PyTypeError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyInt, PyTuple};
use ratten_aten::native::type_properties;

use super::error::IntoPy;
use super::object::PyTensor;
use super::python_args::{parse_args, split_kwargs, static_parser, PythonArgs};
use super::types::{check_long, dtype_object, seed_value, PyDtype};
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
                0 => type_properties::result_type(r.tensor(0)?.base(), r.tensor(1)?.base()).py()?,
                1 => {
                    type_properties::result_type_scalar(r.tensor(1)?.base(), &r.scalar(0)?).py()?
                }
                2 => {
                    type_properties::result_type_scalar(r.tensor(0)?.base(), &r.scalar(1)?).py()?
                }
                3 => type_properties::result_type_scalars(&r.scalar(0)?, &r.scalar(1)?).py()?,
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
        |r| type_properties::promote_types(r.scalar_type(0)?, r.scalar_type(1)?).py(),
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

/// An int argument as torch's `THPUtils_unpackLong` reads it.
fn unpack_long(obj: &Bound<'_, PyAny>) -> PyResult<i64> {
    obj.extract()
        .map_err(|_| PyValueError::new_err("Overflow when unpacking long long"))
}

/// `torch.manual_seed(seed)`: torch's Python function takes `int(seed)` (so a float or a
/// numeric string too), then the generator's range.
#[pyfunction]
fn manual_seed(seed: &Bound<'_, PyAny>) -> PyResult<()> {
    let py = seed.py();
    let as_int = py.get_type::<PyInt>().call1((seed,))?;
    ratten_aten::random::manual_seed(seed_value(&as_int)?);
    Ok(())
}

#[pyfunction]
fn initial_seed() -> u64 {
    ratten_aten::random::initial_seed()
}

/// `torch.set_num_threads(n)`: a positive int (torch's errors), at most
/// `MAX_NUM_THREADS` (ratten's bound: each thread is an OS thread of the pool).
#[pyfunction]
fn set_num_threads(n: &Bound<'_, PyAny>) -> PyResult<()> {
    check_long(n, "set_num_threads expects an int")?;
    let n = unpack_long(n)?;
    if n <= 0 {
        return Err(PyRuntimeError::new_err(
            "set_num_threads expects a positive integer",
        ));
    }
    ratten_aten::tensor_iterator::set_num_threads(n).py()
}

#[pyfunction]
fn get_num_threads() -> usize {
    ratten_aten::tensor_iterator::get_num_threads()
}

/// The inter-op thread count (`torch.get_num_interop_threads`): 0 until set.
static NUM_INTEROP_THREADS: std::sync::atomic::AtomicUsize = std::sync::atomic::AtomicUsize::new(0);

/// `torch.set_num_interop_threads(n)`: a positive int, settable once, as torch's is (torch
/// also refuses it after its inter-op pool has run work; ratten runs no inter-op work, so
/// being set before is the only refusal). The count is recorded for
/// `get_num_interop_threads` and bounded as `set_num_threads`'s is.
#[pyfunction]
fn set_num_interop_threads(n: &Bound<'_, PyAny>) -> PyResult<()> {
    use std::sync::atomic::Ordering;
    check_long(n, "set_num_interop_threads expects an int")?;
    let n = unpack_long(n)?;
    if n <= 0 {
        return Err(PyRuntimeError::new_err(
            "set_num_interop_threads expects a positive integer",
        ));
    }
    let max = ratten_aten::tensor_iterator::MAX_NUM_THREADS;
    if n as u64 > max as u64 {
        return Err(PyRuntimeError::new_err(format!(
            "set_num_interop_threads: {n} threads is more than ratten's limit of {max} threads"
        )));
    }
    NUM_INTEROP_THREADS
        .compare_exchange(0, n as usize, Ordering::SeqCst, Ordering::SeqCst)
        .map(|_| ())
        .map_err(|_| {
            PyRuntimeError::new_err(
                "Error: cannot set number of interop threads after parallel work has started \
                 or set_num_interop_threads called",
            )
        })
}

/// `torch.get_num_interop_threads()`: the count set, else torch's default (the CPUs
/// available to the process).
#[pyfunction]
fn get_num_interop_threads() -> usize {
    match NUM_INTEROP_THREADS.load(std::sync::atomic::Ordering::SeqCst) {
        0 => std::thread::available_parallelism().map_or(1, |n| n.get()),
        n => n,
    }
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
    m.add_function(wrap_pyfunction!(set_num_interop_threads, m)?)?;
    m.add_function(wrap_pyfunction!(get_num_interop_threads, m)?)?;
    m.add_function(wrap_pyfunction!(is_tensor, m)?)?;
    m.add_function(wrap_pyfunction!(_gil_numel, m)?)?;
    Ok(())
}
