"""ratten.autograd (torch.autograd): ``backward``, ``grad``, grad mode, anomaly mode, custom
``Function``, ``gradcheck`` / ``gradgradcheck`` and ``functional`` (jacobian, hessian, vjp,
jvp, hvp, vhp). The engine and the graph are ratten-autograd's (crates/ratten-autograd)."""

from .. import _C
from .anomaly_mode import detect_anomaly, set_detect_anomaly
from . import forward_ad, functional
from .function import Function, FunctionCtx
from .grad_mode import (
    enable_grad,
    inference_mode,
    is_grad_enabled,
    is_inference_mode_enabled,
    no_grad,
    set_grad_enabled,
)
# Binds the functions over the submodule's name, as torch.autograd does.
from .gradcheck import gradcheck, gradgradcheck


def _as_list(x):
    if x is None:
        return []
    if isinstance(x, _C.Tensor):
        return [x]
    return list(x)


def backward(tensors, grad_tensors=None, retain_graph=None, create_graph=False, inputs=None):
    """Accumulates the gradients of ``tensors`` into the leaves' ``.grad``
    (``torch.autograd.backward``)."""
    tensors = _as_list(tensors)
    grads = _as_list(grad_tensors) if grad_tensors is not None else [None] * len(tensors)
    inputs = _as_list(inputs)
    if inputs is not None and len(inputs) == 0 and not isinstance(inputs, list):
        raise RuntimeError("'inputs' argument to backward() cannot be empty.")
    _C._backward(tensors, grads, retain_graph, create_graph, inputs)


def grad(outputs, inputs, grad_outputs=None, retain_graph=None, create_graph=False,
         only_inputs=True, allow_unused=None, is_grads_batched=False, materialize_grads=False):
    """The gradients of ``outputs`` with respect to ``inputs``, returned as a tuple
    (``torch.autograd.grad``)."""
    if is_grads_batched:
        raise NotImplementedError("is_grads_batched=True is not supported by ratten")
    if allow_unused is None:
        allow_unused = materialize_grads
    elif materialize_grads and not allow_unused:
        raise ValueError("Expected allow_unused to be True or not passed when materialize_grads=True, but got: allow_unused=False.")
    single_input = isinstance(inputs, _C.Tensor)
    outputs = _as_list(outputs)
    inputs_l = _as_list(inputs)
    grads = _as_list(grad_outputs) if grad_outputs is not None else [None] * len(outputs)
    res = _C._run_grad(outputs, inputs_l, grads, retain_graph, create_graph, allow_unused)
    if materialize_grads:
        zeros_like = _C._generated_functions()["zeros_like"]
        res = tuple(zeros_like(i) if r is None else r for r, i in zip(res, inputs_l))
    del single_input
    return tuple(res)


__all__ = [
    "Function",
    "FunctionCtx",
    "backward",
    "detect_anomaly",
    "enable_grad",
    "functional",
    "grad",
    "gradcheck",
    "gradgradcheck",
    "inference_mode",
    "is_grad_enabled",
    "is_inference_mode_enabled",
    "no_grad",
    "set_detect_anomaly",
    "set_grad_enabled",
]
