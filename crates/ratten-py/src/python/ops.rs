//! Layer 5 (boxed operator calls): the functions and Tensor methods of every operator the
//! dispatcher has a schema for (including those registered at run time from Python), parsed
//! by [`crate::arg_parser`] against those schemas when first called and called boxed with the
//! GIL released. Operators with generated bindings are called through `bindings.rs` instead.

use std::collections::HashMap;
use std::sync::{Arc, Mutex};

use num_complex::Complex64;
use pyo3::exceptions::{PyAttributeError, PyTypeError};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyTuple};
use ratten_core::Device;
use ratten_dispatch::{Dispatcher, IValue, OperatorHandle};
use ratten_schema::{DefaultValue, FunctionSchema, OperatorName};

use super::convert::{ivalue_to_py, scalar_ivalue, tensor_arg, to_scalar};
use super::error::IntoPy;
use super::object::PyTensor;
use super::python_args::{classify, split_kwargs};
use super::types::{parse_device, PyDtype, PyMemoryFormat};
use crate::arg_parser::{ArgKind, Param, ParamType, Parser, Slot};

fn default_ivalue(p: &Param) -> PyResult<IValue> {
    let Some(d) = &p.default else {
        return Ok(IValue::None);
    };
    Ok(match (d, &p.ty) {
        (DefaultValue::None, _) => IValue::None,
        (DefaultValue::Bool(b), _) => IValue::Bool(*b),
        (DefaultValue::Int(i), ParamType::Float) => IValue::Double(*i as f64),
        (DefaultValue::Int(i), ParamType::IntList { size }) => {
            IValue::IntList(vec![*i; size.unwrap_or(1) as usize])
        }
        (DefaultValue::Int(i), _) => IValue::Int(*i),
        (DefaultValue::Float(f), _) => IValue::Double(*f),
        (DefaultValue::Complex { re, im }, _) => IValue::ComplexDouble(Complex64::new(*re, *im)),
        (DefaultValue::Str(s), _) => IValue::String(s.as_str().into()),
        (DefaultValue::IntList(v), _) => IValue::IntList(v.clone()),
        (DefaultValue::FloatList(v), _) => IValue::DoubleList(v.clone()),
        (DefaultValue::BoolList(v), _) => IValue::BoolList(v.clone()),
        (DefaultValue::Device(s), _) => IValue::Device(Device::parse(s).py()?),
        (DefaultValue::ComplexList(_), _) => {
            return Err(PyTypeError::new_err(format!(
                "default of parameter '{}' is not supported from Python",
                p.name
            )))
        }
    })
}

/// Converts a parsed argument (already checked by the parser) to the dispatcher's value.
fn to_ivalue(obj: &Bound<'_, PyAny>, p: &Param) -> PyResult<IValue> {
    if obj.is_none() {
        return Ok(IValue::None);
    }
    Ok(match &p.ty {
        ParamType::Tensor => IValue::Tensor(tensor_arg(obj)?.into_base()),
        ParamType::Scalar | ParamType::Complex => scalar_ivalue(to_scalar(obj)?),
        ParamType::Int => IValue::Int(obj.extract()?),
        ParamType::Float => IValue::Double(obj.extract()?),
        ParamType::Bool => IValue::Bool(obj.extract()?),
        ParamType::Str => IValue::String(obj.extract::<String>()?.into()),
        ParamType::ScalarType => IValue::Int(obj.downcast::<PyDtype>()?.get().st as i64),
        ParamType::Device => IValue::Device(parse_device(obj)?),
        // c10's MemoryFormat travels as its integer value.
        ParamType::MemoryFormat => {
            IValue::Int(obj.downcast::<PyMemoryFormat>()?.get().format() as i64)
        }
        ParamType::Generator => IValue::Generator(std::sync::Arc::new(
            obj.downcast::<super::types::PyGenerator>()?.get().g.clone(),
        )),
        ParamType::IntList { size } => match obj.extract::<i64>() {
            Ok(v) if !obj.is_instance_of::<PyBool>() => {
                IValue::IntList(vec![v; size.unwrap_or(1) as usize])
            }
            _ => IValue::IntList(obj.extract()?),
        },
        ParamType::FloatList => IValue::DoubleList(obj.extract()?),
        ParamType::BoolList => IValue::BoolList(obj.extract()?),
        ParamType::TensorList => {
            let mut v = Vec::new();
            for e in obj.try_iter()? {
                v.push(tensor_arg(&e?)?.into_base());
            }
            IValue::TensorList(v)
        }
        ParamType::Opaque(t) => {
            return Err(PyTypeError::new_err(format!(
                "argument '{}' of type {t} can only be None from Python",
                p.name
            )))
        }
    })
}

/// The overloads of one operator name and their parsers.
pub struct OpEntry {
    pub schemas: Vec<FunctionSchema>,
    pub handles: Vec<OperatorHandle>,
    pub function: Parser,
    pub method: Parser,
}

type OpCache = HashMap<String, Option<Arc<OpEntry>>>;
static OP_CACHE: Mutex<Option<OpCache>> = Mutex::new(None);

/// Forgets the parsers built so far (after a registration from Python).
pub fn invalidate_op_cache() {
    if let Ok(mut c) = OP_CACHE.lock() {
        *c = None;
    }
}

/// Sort key: overloads taking Scalars after those taking Tensors at the same place, as
/// torch's binding generator orders them; then by overload name.
fn overload_order(s: &FunctionSchema) -> (usize, String) {
    let scalars = s
        .arguments
        .iter()
        .filter(|a| *a.ty.unwrap_optional() == ratten_schema::Type::Scalar)
        .count();
    (scalars, s.name.overload_name.clone())
}

/// The overloads of `name` (`add`, or `ns::op` for another namespace), or None.
pub fn op_entry(name: &str) -> Option<Arc<OpEntry>> {
    let qualified = if name.contains("::") {
        name.to_string()
    } else {
        format!("aten::{name}")
    };
    let mut guard = OP_CACHE.lock().ok()?;
    let cache = guard.get_or_insert_with(HashMap::new);
    if let Some(e) = cache.get(&qualified) {
        return e.clone();
    }
    let d = Dispatcher::singleton();
    let mut found: Vec<(FunctionSchema, OperatorHandle)> = d
        .get_all_op_names()
        .into_iter()
        .filter(|n: &OperatorName| n.name == qualified)
        .filter_map(|n| {
            let h = d.find_schema(&n)?;
            Some((h.schema()?, h))
        })
        .collect();
    found.sort_by_key(|(s, _)| overload_order(s));
    let entry = if found.is_empty() {
        None
    } else {
        let short = qualified
            .rsplit("::")
            .next()
            .unwrap_or(&qualified)
            .to_string();
        let (schemas, handles): (Vec<_>, Vec<_>) = found.into_iter().unzip();
        Some(Arc::new(OpEntry {
            function: Parser::from_schemas(&short, &schemas, false),
            method: Parser::from_schemas(&short, &schemas, true),
            schemas,
            handles,
        }))
    };
    cache.insert(qualified, entry.clone());
    entry
}

/// Calls operator `name` with Python arguments; `self_obj` is the tensor for a method call.
pub fn call_op(
    py: Python<'_>,
    name: &str,
    self_obj: Option<&Bound<'_, PyAny>>,
    args: &[Bound<'_, PyAny>],
    kwargs: &[(String, Bound<'_, PyAny>)],
) -> PyResult<PyObject> {
    let entry = op_entry(name).ok_or_else(|| {
        PyAttributeError::new_err(format!("module 'ratten' has no attribute '{name}'"))
    })?;
    call_entry(py, &entry, self_obj, args, kwargs)
}

/// [`call_op`] with the operator's overloads already looked up.
pub fn call_entry(
    py: Python<'_>,
    entry: &OpEntry,
    self_obj: Option<&Bound<'_, PyAny>>,
    args: &[Bound<'_, PyAny>],
    kwargs: &[(String, Bound<'_, PyAny>)],
) -> PyResult<PyObject> {
    let parser = if self_obj.is_some() {
        &entry.method
    } else {
        &entry.function
    };
    let kinds: Vec<ArgKind> = args.iter().map(classify).collect();
    let kw_kinds: Vec<(String, ArgKind)> = kwargs
        .iter()
        .map(|(n, o)| (n.clone(), classify(o)))
        .collect();
    let parsed = parser
        .parse(&kinds, &kw_kinds)
        .map_err(PyTypeError::new_err)?;
    let sig = &parser.signatures[parsed.signature];

    // The value of each parameter (None for defaults).
    let mut out_obj: Option<Bound<'_, PyAny>> = None;
    let mut values: Vec<(usize, &Param, Option<Bound<'_, PyAny>>)> = Vec::new();
    for (p, slot) in sig.params.iter().zip(&parsed.slots) {
        let obj = match slot {
            Slot::Positional(i) => Some(args[*i].clone()),
            Slot::VarArgs(start) => Some(PyTuple::new(py, &args[*start..])?.into_any()),
            Slot::Keyword(k) => Some(kwargs[*k].1.clone()),
            Slot::Default => None,
        };
        match p.schema_index {
            Some(i) => values.push((i, p, obj)),
            None => out_obj = obj.filter(|o| !o.is_none()),
        }
    }
    let overload = match (&out_obj, sig.out_overload) {
        (Some(_), Some(o)) => o,
        _ => sig.overload,
    };
    let schema = &entry.schemas[overload];
    let handle = entry.handles[overload];

    let n = schema.arguments.len();
    let mut stack: Vec<IValue> = vec![IValue::None; n];
    let mut arg_objs: Vec<Option<Bound<'_, PyAny>>> = vec![None; n];
    if let Some(s) = self_obj {
        stack[0] = IValue::Tensor(s.downcast::<PyTensor>()?.get().t.clone().into_base());
        arg_objs[0] = Some(s.clone());
    }
    for (i, p, obj) in values {
        stack[i] = match &obj {
            Some(o) => to_ivalue(o, p)?,
            None => default_ivalue(p)?,
        };
        arg_objs[i] = obj;
    }
    if let Some(out) = &out_obj {
        let out_idx: Vec<usize> = (0..n).filter(|&i| schema.arguments[i].is_out()).collect();
        if out_idx.len() == 1 {
            stack[out_idx[0]] = IValue::Tensor(tensor_arg(out)?.into_base());
            arg_objs[out_idx[0]] = Some(out.clone());
        } else {
            let items: Vec<Bound<'_, PyAny>> = out.try_iter()?.collect::<PyResult<_>>()?;
            if items.len() != out_idx.len() {
                return Err(PyTypeError::new_err(format!(
                    "{}(): argument 'out' must be a tuple of {} Tensors",
                    parser.name,
                    out_idx.len()
                )));
            }
            for (i, o) in out_idx.iter().zip(items) {
                stack[*i] = IValue::Tensor(tensor_arg(&o)?.into_base());
                arg_objs[*i] = Some(o);
            }
        }
    }
    // The kernel runs without the GIL (other Python threads go on meanwhile).
    py.allow_threads(|| handle.call_boxed(&mut stack)).py()?;
    returns_to_py(py, schema, stack, &arg_objs)
}

/// The results of a call; a return that aliases a written argument (`Tensor(a!)`) is that
/// argument's Python object, as torch returns `self` from in-place ops and `out` from out=.
fn returns_to_py(
    py: Python<'_>,
    schema: &FunctionSchema,
    stack: Vec<IValue>,
    arg_objs: &[Option<Bound<'_, PyAny>>],
) -> PyResult<PyObject> {
    let mut results = Vec::with_capacity(schema.returns.len());
    for (r, v) in schema.returns.iter().zip(stack) {
        let aliased = r.alias_info.as_ref().filter(|a| a.is_write).and_then(|a| {
            schema.arguments.iter().position(|arg| {
                arg.alias_info
                    .as_ref()
                    .is_some_and(|b| b.is_write && b.before_sets == a.before_sets)
            })
        });
        match aliased.and_then(|i| arg_objs[i].as_ref()) {
            Some(o) => results.push(o.clone().unbind()),
            None => results.push(ivalue_to_py(py, v)?),
        }
    }
    match results.len() {
        0 => Ok(py.None()),
        1 => Ok(results.pop().unwrap_or_else(|| py.None())),
        _ => Ok(PyTuple::new(py, results)?.into_any().unbind()),
    }
}

/// `ratten._C._call_op(name, *args, **kwargs)`: the function form of an operator.
#[pyfunction]
#[pyo3(signature = (name, *args, **kwargs))]
fn _call_op(
    py: Python<'_>,
    name: &str,
    args: &Bound<'_, PyTuple>,
    kwargs: Option<&Bound<'_, PyDict>>,
) -> PyResult<PyObject> {
    let args: Vec<Bound<'_, PyAny>> = args.iter().collect();
    call_op(py, name, None, &args, &split_kwargs(kwargs)?)
}

/// `ratten._C._has_op(name)`: whether the dispatcher has a schema for `name`.
#[pyfunction]
fn _has_op(name: &str) -> bool {
    op_entry(name).is_some()
}

/// `ratten._C._op_signatures(name, method=False)`: the Python signatures of `name`.
#[pyfunction]
#[pyo3(signature = (name, method=false))]
fn _op_signatures(name: &str, method: bool) -> Vec<String> {
    op_entry(name)
        .map(|e| {
            let p = if method { &e.method } else { &e.function };
            p.signatures.iter().map(|s| s.text()).collect()
        })
        .unwrap_or_default()
}

/// A Tensor method bound to its tensor (`t.add`), made on attribute lookup.
#[pyclass(name = "BoundOp", module = "ratten")]
pub struct BoundOp {
    pub name: String,
    pub this: PyObject,
}

#[pymethods]
impl BoundOp {
    #[pyo3(signature = (*args, **kwargs))]
    fn __call__(
        &self,
        py: Python<'_>,
        args: &Bound<'_, PyTuple>,
        kwargs: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<PyObject> {
        let args: Vec<Bound<'_, PyAny>> = args.iter().collect();
        let this = self.this.bind(py);
        call_op(py, &self.name, Some(this), &args, &split_kwargs(kwargs)?)
    }
    fn __repr__(&self) -> String {
        format!("<bound method Tensor.{}>", self.name)
    }
}

/// Whether `name` is an aten operator with a `self` overload (a Tensor method).
pub fn has_method(name: &str) -> bool {
    op_entry(name).is_some_and(|e| !e.method.signatures.is_empty())
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<BoundOp>()?;
    m.add_function(wrap_pyfunction!(_call_op, m)?)?;
    m.add_function(wrap_pyfunction!(_has_op, m)?)?;
    m.add_function(wrap_pyfunction!(_op_signatures, m)?)?;
    Ok(())
}
