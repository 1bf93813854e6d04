//! Layer 5 (autograd): torch/csrc/autograd's Python bindings. The autograd attributes of a
//! tensor (`requires_grad`, `grad`, `grad_fn`, `is_leaf`, `_base`, hooks), the engine
//! (`_backward`, `_grad`), grad mode and anomaly mode, the backward-graph node objects
//! (`grad_fn.name()`, `next_functions`), and the node of a Python `autograd.Function`.
//! python/ratten/autograd/ builds torch's Python API on these.

use std::borrow::Cow;
use std::cell::RefCell;
use std::sync::Arc;

use pyo3::exceptions::PyRuntimeError;
use pyo3::prelude::*;
use pyo3::types::{PyList, PyTuple};
use ratten_aten::Tensor;
use ratten_autograd::anomaly_mode::{set_trace_provider, AnomalyMode};
use ratten_autograd::function::{Node, NodeBase, VariableList};
use ratten_autograd::variable_type_utils::{collect_next_edges, rebase_history, set_history};
use ratten_autograd::{forward_ad, variable};
use ratten_autograd::{GradMode, InferenceMode};
use ratten_core::{Error, Result};

use super::error::{to_pyerr, IntoPy};
use super::object::{any_tensor, wrap};

thread_local! {
    /// The Python exception a Python hook or backward raised inside the engine, re-raised as
    /// itself at the boundary instead of as the RuntimeError the engine carried.
    static PENDING: RefCell<Option<PyErr>> = const { RefCell::new(None) };
}

/// A Python exception raised inside the engine: kept, and carried through as an error.
fn stash(py: Python<'_>, e: PyErr) -> Error {
    let msg = e.value(py).to_string();
    PENDING.with(|p| *p.borrow_mut() = Some(e));
    Error::runtime(msg)
}

/// The error to raise for an engine result: the stashed Python exception if there is one.
fn engine_err(e: Error) -> PyErr {
    PENDING
        .with(|p| p.borrow_mut().take())
        .unwrap_or_else(|| to_pyerr(e))
}

fn tensor_of(o: &Bound<'_, PyAny>) -> PyResult<Tensor> {
    any_tensor(o)
        .cloned()
        .ok_or_else(|| pyo3::exceptions::PyTypeError::new_err("expected a Tensor"))
}

fn opt_tensor(o: &Bound<'_, PyAny>) -> PyResult<Option<Tensor>> {
    if o.is_none() {
        Ok(None)
    } else {
        tensor_of(o).map(Some)
    }
}

fn tensors_of(o: &Bound<'_, PyAny>) -> PyResult<Vec<Tensor>> {
    o.try_iter()?.map(|x| tensor_of(&x?)).collect()
}

fn opt_tensors_of(o: &Bound<'_, PyAny>) -> PyResult<Vec<Option<Tensor>>> {
    o.try_iter()?.map(|x| opt_tensor(&x?)).collect()
}

fn wrap_opt(py: Python<'_>, t: Option<Tensor>) -> PyResult<PyObject> {
    match t {
        Some(t) => Ok(wrap(py, t)?.into_any()),
        None => Ok(py.None()),
    }
}

/// A node of the backward graph as Python sees it (`grad_fn`): `name()`, `next_functions`,
/// `register_hook`, `metadata`.
#[pyclass(name = "Node", module = "ratten.autograd.graph", frozen)]
pub struct PyNode {
    node: Arc<dyn Node>,
}

fn node_object(py: Python<'_>, node: Option<Arc<dyn Node>>) -> PyResult<PyObject> {
    match node {
        Some(node) => Ok(Py::new(py, PyNode { node })?.into_any()),
        None => Ok(py.None()),
    }
}

#[pymethods]
impl PyNode {
    fn name(&self) -> String {
        self.node.name().into_owned()
    }

    #[getter]
    fn next_functions<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyTuple>> {
        let items: Vec<PyObject> = self
            .node
            .base()
            .next_edges()
            .iter()
            .map(|e| {
                let f = node_object(py, e.function.clone())?;
                Ok(
                    PyTuple::new(py, [f, e.input_nr.into_pyobject(py)?.into_any().unbind()])?
                        .into_any()
                        .unbind(),
                )
            })
            .collect::<PyResult<_>>()?;
        PyTuple::new(py, items)
    }

    /// The leaf of an AccumulateGrad node (`grad_fn.next_functions[0][0].variable`).
    #[getter]
    fn variable(&self, py: Python<'_>) -> PyResult<PyObject> {
        match self.node.accumulate_grad_variable() {
            Some(t) => Ok(wrap(py, t)?.into_any()),
            None => Err(pyo3::exceptions::PyAttributeError::new_err(format!(
                "'{}' object has no attribute 'variable'",
                self.node.name()
            ))),
        }
    }

    /// A hook called with (grad_inputs, grad_outputs) after the node ran.
    fn register_hook(&self, hook: PyObject) {
        self.node
            .base()
            .add_post_hook(Arc::new(move |outs: &VariableList, ins: &VariableList| {
                Python::with_gil(|py| {
                    let to_tuple = |v: &VariableList| -> PyResult<Bound<'_, PyTuple>> {
                        let items: Vec<PyObject> = v
                            .iter()
                            .map(|t| wrap_opt(py, t.clone()))
                            .collect::<PyResult<_>>()?;
                        PyTuple::new(py, items)
                    };
                    let r = (|| -> PyResult<()> {
                        hook.call1(py, (to_tuple(outs)?, to_tuple(ins)?))?;
                        Ok(())
                    })();
                    r.map_err(|e| stash(py, e))
                })
            }));
    }

    fn __repr__(&self) -> String {
        format!("<{} object>", self.node.name())
    }

    fn __eq__(&self, other: &Bound<'_, PyAny>) -> bool {
        other
            .downcast::<PyNode>()
            .is_ok_and(|o| Arc::ptr_eq(&self.node, &o.get().node))
    }

    fn __hash__(&self) -> isize {
        Arc::as_ptr(&self.node) as *const () as usize as isize
    }
}

#[pyfunction]
fn _requires_grad(t: &Bound<'_, PyAny>) -> PyResult<bool> {
    Ok(tensor_of(t)?.requires_grad())
}

#[pyfunction]
fn _set_requires_grad(t: &Bound<'_, PyAny>, requires_grad: bool) -> PyResult<()> {
    variable::set_requires_grad(&*tensor_of(t)?, requires_grad).py()
}

#[pyfunction]
fn _grad(py: Python<'_>, t: &Bound<'_, PyAny>) -> PyResult<PyObject> {
    wrap_opt(py, tensor_of(t)?.grad().map(Tensor::from_base))
}

#[pyfunction]
fn _set_grad(t: &Bound<'_, PyAny>, grad: &Bound<'_, PyAny>) -> PyResult<()> {
    let t = tensor_of(t)?;
    let g = opt_tensor(grad)?;
    if let Some(g) = &g {
        if g.sizes() != t.sizes() {
            return Err(PyRuntimeError::new_err(
                "assigned grad has data of a different size",
            ));
        }
        if g.scalar_type() != t.scalar_type() {
            return Err(PyRuntimeError::new_err(
                "assigned grad has data of a different type",
            ));
        }
    }
    variable::ensure_initialized();
    t.set_grad(g.map(Tensor::into_base)).py()
}

#[pyfunction]
fn _grad_fn(py: Python<'_>, t: &Bound<'_, PyAny>) -> PyResult<PyObject> {
    node_object(py, variable::grad_fn(&*tensor_of(t)?))
}

#[pyfunction]
fn _is_leaf(t: &Bound<'_, PyAny>) -> PyResult<bool> {
    Ok(variable::is_leaf(&*tensor_of(t)?))
}

#[pyfunction]
fn _output_nr(t: &Bound<'_, PyAny>) -> PyResult<u32> {
    Ok(variable::output_nr(&*tensor_of(t)?))
}

#[pyfunction]
fn _is_view(t: &Bound<'_, PyAny>) -> PyResult<bool> {
    Ok(variable::is_view(&*tensor_of(t)?))
}

#[pyfunction]
fn _base(py: Python<'_>, t: &Bound<'_, PyAny>) -> PyResult<PyObject> {
    wrap_opt(py, variable::view_base(&*tensor_of(t)?))
}

#[pyfunction]
fn _detach_(t: &Bound<'_, PyAny>) -> PyResult<PyObject> {
    variable::detach_(&*tensor_of(t)?).py()?;
    Ok(t.clone().unbind())
}

#[pyfunction]
fn _retain_grad(t: &Bound<'_, PyAny>) -> PyResult<()> {
    variable::retain_grad(&*tensor_of(t)?).py()
}

#[pyfunction]
fn _retains_grad(t: &Bound<'_, PyAny>) -> PyResult<bool> {
    Ok(variable::retains_grad(&*tensor_of(t)?))
}

/// `Tensor.register_hook(hook)`: the hook gets the gradient and may return a replacement.
#[pyfunction]
fn _register_hook(t: &Bound<'_, PyAny>, hook: PyObject) -> PyResult<u64> {
    let t = tensor_of(t)?;
    variable::register_hook(
        &t,
        Arc::new(move |g: &Tensor| {
            Python::with_gil(|py| {
                let r = (|| -> PyResult<Option<Tensor>> {
                    let out = hook.call1(py, (wrap(py, g.clone())?,))?;
                    opt_tensor(out.bind(py))
                })();
                r.map_err(|e| stash(py, e))
            })
        }),
    )
    .py()
}

#[pyfunction]
fn _remove_hook(t: &Bound<'_, PyAny>, id: u64) -> PyResult<bool> {
    Ok(variable::remove_hook(&*tensor_of(t)?, id))
}

#[pyfunction]
fn _remove_post_accumulate_grad_hook(t: &Bound<'_, PyAny>, id: u64) -> PyResult<bool> {
    Ok(variable::remove_post_accumulate_grad_hook(
        &*tensor_of(t)?,
        id,
    ))
}

/// `Tensor.register_post_accumulate_grad_hook(hook)`: called with the leaf after its `.grad`
/// was accumulated; returns the hook's id.
#[pyfunction]
fn _register_post_accumulate_grad_hook(t: &Bound<'_, PyAny>, hook: PyObject) -> PyResult<u64> {
    let t = tensor_of(t)?;
    variable::register_post_accumulate_grad_hook(
        &t,
        Arc::new(move |leaf: &Tensor| {
            Python::with_gil(|py| {
                let r = (|| -> PyResult<()> {
                    hook.call1(py, (wrap(py, leaf.clone())?,))?;
                    Ok(())
                })();
                r.map_err(|e| stash(py, e))
            })
        }),
    )
    .py()
}

/// `torch.autograd.backward`'s engine call.
#[pyfunction]
#[pyo3(signature = (tensors, grad_tensors, retain_graph, create_graph, inputs))]
fn _backward(
    tensors: &Bound<'_, PyAny>,
    grad_tensors: &Bound<'_, PyAny>,
    retain_graph: Option<bool>,
    create_graph: bool,
    inputs: &Bound<'_, PyAny>,
) -> PyResult<()> {
    let tensors = tensors_of(tensors)?;
    let grads = opt_tensors_of(grad_tensors)?;
    let inputs = tensors_of(inputs)?;
    ratten_autograd::backward(&tensors, &grads, retain_graph, create_graph, &inputs)
        .map_err(engine_err)
}

/// `torch.autograd.grad`'s engine call.
#[pyfunction]
#[pyo3(signature = (outputs, inputs, grad_outputs, retain_graph, create_graph, allow_unused))]
fn _run_grad<'py>(
    py: Python<'py>,
    outputs: &Bound<'py, PyAny>,
    inputs: &Bound<'py, PyAny>,
    grad_outputs: &Bound<'py, PyAny>,
    retain_graph: Option<bool>,
    create_graph: bool,
    allow_unused: bool,
) -> PyResult<Bound<'py, PyTuple>> {
    let outputs = tensors_of(outputs)?;
    let inputs = tensors_of(inputs)?;
    let grads = opt_tensors_of(grad_outputs)?;
    let res = ratten_autograd::grad(
        &outputs,
        &inputs,
        &grads,
        retain_graph,
        create_graph,
        allow_unused,
    )
    .map_err(engine_err)?;
    let items: Vec<PyObject> = res
        .into_iter()
        .map(|t| wrap_opt(py, t))
        .collect::<PyResult<_>>()?;
    PyTuple::new(py, items)
}

#[pyfunction]
fn _enter_dual_level() -> PyResult<u64> {
    forward_ad::enter_dual_level().py()
}

#[pyfunction]
#[pyo3(signature = (*, level))]
fn _exit_dual_level(level: u64) -> PyResult<()> {
    forward_ad::exit_dual_level(level).py()
}

#[pyfunction]
#[pyo3(signature = (primal, tangent, *, level))]
fn _make_dual(
    py: Python<'_>,
    primal: &Bound<'_, PyAny>,
    tangent: &Bound<'_, PyAny>,
    level: u64,
) -> PyResult<PyObject> {
    let d = forward_ad::make_dual(&tensor_of(primal)?, &tensor_of(tangent)?, level).py()?;
    Ok(wrap(py, d)?.into_any())
}

#[pyfunction]
#[pyo3(signature = (tensor, *, level))]
fn _unpack_dual(
    py: Python<'_>,
    tensor: &Bound<'_, PyAny>,
    level: u64,
) -> PyResult<(PyObject, PyObject)> {
    let (p, t) = forward_ad::unpack_dual(&tensor_of(tensor)?, level).py()?;
    Ok((wrap(py, p)?.into_any(), wrap_opt(py, t)?))
}

#[pyfunction]
#[pyo3(signature = (tensor, tangent, level, is_inplace_op = false))]
fn _set_fw_grad(
    tensor: &Bound<'_, PyAny>,
    tangent: &Bound<'_, PyAny>,
    level: u64,
    is_inplace_op: bool,
) -> PyResult<()> {
    if forward_ad::current_level() != Some(level) {
        return Err(to_pyerr(Error::runtime(format!(
            "Trying to set a forward gradient at level {level}, but no such forward AD level exists."
        ))));
    }
    ratten_autograd::forward_grad::set_fw_grad(
        &tensor_of(tensor)?,
        &tensor_of(tangent)?,
        is_inplace_op,
    )
    .py()
}

#[pyfunction]
fn _set_fwd_grad_enabled(enabled: bool) {
    ratten_autograd::forward_grad::set_fw_grad_mode(enabled);
}

#[pyfunction]
fn _is_fwd_grad_enabled() -> bool {
    ratten_autograd::forward_grad::fw_grad_mode()
}

#[pyfunction]
fn is_grad_enabled() -> bool {
    GradMode::is_enabled()
}

#[pyfunction]
fn _set_grad_enabled(enabled: bool) {
    GradMode::set_enabled(enabled);
}

/// The inference-mode guard objects of `ratten.inference_mode` (a stack per thread, entered and
/// left in order by the context manager).
#[pyclass(name = "_InferenceMode", module = "ratten._C", unsendable)]
struct PyInferenceMode {
    guard: Option<InferenceMode>,
}

#[pymethods]
impl PyInferenceMode {
    #[new]
    fn new(enabled: bool) -> PyInferenceMode {
        PyInferenceMode {
            guard: Some(InferenceMode::new(enabled)),
        }
    }

    fn exit(&mut self) {
        self.guard.take();
    }
}

#[pyfunction]
fn is_inference_mode_enabled() -> bool {
    InferenceMode::is_enabled()
}

#[pyfunction]
#[pyo3(signature = (enabled, check_nan=true))]
fn _set_detect_anomaly(py: Python<'_>, enabled: bool, check_nan: bool) -> PyResult<()> {
    AnomalyMode::set_enabled(enabled, check_nan);
    if enabled {
        let traceback = py.import("traceback")?.getattr("format_stack")?.unbind();
        set_trace_provider(Some(Arc::new(move || {
            Python::with_gil(|py| {
                traceback
                    .call0(py)
                    .and_then(|l| {
                        let l = l.bind(py).downcast::<PyList>()?.clone();
                        Ok(l.iter().map(|s| s.to_string()).collect::<Vec<_>>().concat())
                    })
                    .unwrap_or_default()
            })
        })));
    }
    Ok(())
}

#[pyfunction]
fn _is_anomaly_enabled() -> bool {
    AnomalyMode::is_enabled()
}

#[pyfunction]
fn _is_anomaly_check_nan_enabled() -> bool {
    AnomalyMode::should_check_nan()
}

/// The node of a Python `autograd.Function` call: runs the class's backward through `apply`.
struct PyFunctionNode {
    base: NodeBase,
    name: String,
    /// `ctx._do_backward(*grads)`, returning one gradient (or None) per input.
    backward: PyObject,
    num_inputs: usize,
}

impl Node for PyFunctionNode {
    fn name(&self) -> Cow<'static, str> {
        Cow::Owned(self.name.clone())
    }

    fn base(&self) -> &NodeBase {
        &self.base
    }

    fn apply(self: Arc<Self>, grads: VariableList) -> Result<VariableList> {
        Python::with_gil(|py| {
            let r = (|| -> PyResult<VariableList> {
                let args: Vec<PyObject> = grads
                    .into_iter()
                    .map(|g| wrap_opt(py, g))
                    .collect::<PyResult<_>>()?;
                let out = self.backward.call1(py, PyTuple::new(py, args)?)?;
                let out = out.bind(py);
                let items: Vec<Bound<'_, PyAny>> = if let Ok(t) = out.downcast::<PyTuple>() {
                    t.iter().collect()
                } else {
                    vec![out.clone()]
                };
                if items.len() != self.num_inputs {
                    return Err(PyRuntimeError::new_err(format!(
                        "function {} returned an incorrect number of gradients (expected {}, got \
                         {})",
                        self.name,
                        self.num_inputs,
                        items.len()
                    )));
                }
                items.iter().map(opt_tensor).collect()
            })();
            r.map_err(|e| stash(py, e))
        })
    }
}

/// Records a Python `autograd.Function` call: a node named `name` whose next edges are the
/// inputs' (`inputs` holds None for non-tensor arguments), calling `backward` with the outputs'
/// gradients. Outputs in `dirty` (modified in place) get their history rebased; outputs in
/// `non_differentiable` get none.
#[pyfunction]
fn _record_function(
    name: String,
    backward: PyObject,
    inputs: &Bound<'_, PyAny>,
    outputs: &Bound<'_, PyAny>,
    dirty: &Bound<'_, PyAny>,
    non_differentiable: &Bound<'_, PyAny>,
) -> PyResult<()> {
    let inputs = opt_tensors_of(inputs)?;
    let outputs = tensors_of(outputs)?;
    let dirty = tensors_of(dirty)?;
    let non_diff = tensors_of(non_differentiable)?;
    let refs: Vec<Option<&Tensor>> = inputs.iter().map(Option::as_ref).collect();
    let node: Arc<dyn Node> = Arc::new(PyFunctionNode {
        base: NodeBase::new(collect_next_edges(&refs)),
        name,
        backward,
        num_inputs: inputs.len(),
    });
    for o in &outputs {
        if non_diff.iter().any(|n| n.is_same(o)) {
            node.base().add_input_metadata(o);
        } else if dirty.iter().any(|d| d.is_same(o)) {
            rebase_history(o, &node).py()?;
        } else {
            set_history(&[Some(o)], &node).py()?;
        }
    }
    Ok(())
}

pub(crate) fn register(m: &Bound<'_, PyModule>) -> PyResult<()> {
    variable::ensure_initialized();
    m.add_class::<PyNode>()?;
    m.add_class::<PyInferenceMode>()?;
    m.add_function(wrap_pyfunction!(_requires_grad, m)?)?;
    m.add_function(wrap_pyfunction!(_set_requires_grad, m)?)?;
    m.add_function(wrap_pyfunction!(_grad, m)?)?;
    m.add_function(wrap_pyfunction!(_set_grad, m)?)?;
    m.add_function(wrap_pyfunction!(_grad_fn, m)?)?;
    m.add_function(wrap_pyfunction!(_is_leaf, m)?)?;
    m.add_function(wrap_pyfunction!(_output_nr, m)?)?;
    m.add_function(wrap_pyfunction!(_is_view, m)?)?;
    m.add_function(wrap_pyfunction!(_base, m)?)?;
    m.add_function(wrap_pyfunction!(_detach_, m)?)?;
    m.add_function(wrap_pyfunction!(_retain_grad, m)?)?;
    m.add_function(wrap_pyfunction!(_retains_grad, m)?)?;
    m.add_function(wrap_pyfunction!(_register_hook, m)?)?;
    m.add_function(wrap_pyfunction!(_remove_hook, m)?)?;
    m.add_function(wrap_pyfunction!(_register_post_accumulate_grad_hook, m)?)?;
    m.add_function(wrap_pyfunction!(_remove_post_accumulate_grad_hook, m)?)?;
    m.add_function(wrap_pyfunction!(_backward, m)?)?;
    m.add_function(wrap_pyfunction!(_run_grad, m)?)?;
    m.add_function(wrap_pyfunction!(is_grad_enabled, m)?)?;
    m.add_function(wrap_pyfunction!(_enter_dual_level, m)?)?;
    m.add_function(wrap_pyfunction!(_exit_dual_level, m)?)?;
    m.add_function(wrap_pyfunction!(_make_dual, m)?)?;
    m.add_function(wrap_pyfunction!(_unpack_dual, m)?)?;
    m.add_function(wrap_pyfunction!(_set_fw_grad, m)?)?;
    m.add_function(wrap_pyfunction!(_set_fwd_grad_enabled, m)?)?;
    m.add_function(wrap_pyfunction!(_is_fwd_grad_enabled, m)?)?;
    m.add_function(wrap_pyfunction!(_set_grad_enabled, m)?)?;
    m.add_function(wrap_pyfunction!(is_inference_mode_enabled, m)?)?;
    m.add_function(wrap_pyfunction!(_set_detect_anomaly, m)?)?;
    m.add_function(wrap_pyfunction!(_is_anomaly_enabled, m)?)?;
    m.add_function(wrap_pyfunction!(_is_anomaly_check_nan_enabled, m)?)?;
    m.add_function(wrap_pyfunction!(_record_function, m)?)?;
    Ok(())
}
