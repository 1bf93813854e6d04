"""The autograd attributes of ``ratten.Tensor`` (torch/_tensor.py and python_variable.cpp):
``requires_grad``, ``grad``, ``grad_fn``, ``is_leaf``, ``backward``, ``requires_grad_``,
``retain_grad``, ``register_hook``, ``_base``, ``_is_view``, ``detach_``."""

from . import _C


class _RemovableHandle:
    """What ``register_hook`` returns: ``handle.remove()`` takes the hook off."""

    def __init__(self, tensor, hook_id, remover=None):
        self._tensor = tensor
        self._id = hook_id
        self._remover = remover if remover is not None else _C._remove_hook

    def remove(self):
        if self._tensor is not None:
            self._remover(self._tensor, self._id)
            self._tensor = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.remove()


def _backward(self, gradient=None, retain_graph=None, create_graph=False, inputs=None):
    """backward(gradient=None, retain_graph=None, create_graph=False, inputs=None)

    Computes the gradient of this tensor with respect to the graph leaves and accumulates it
    into their ``.grad`` (torch.Tensor.backward)."""
    if inputs is None and (gradient is None or isinstance(gradient, _C.Tensor)):
        # What ratten.autograd.backward does with one tensor and no inputs, without its
        # argument handling: this is backward's fixed cost from Python.
        _C._backward([self], [gradient], retain_graph, create_graph, [])
        return
    from . import autograd

    autograd.backward(self, gradient, retain_graph, create_graph, inputs=inputs)


def _requires_grad_(self, requires_grad=True):
    """requires_grad_(requires_grad=True) -> Tensor

    Sets whether autograd records operations on this tensor (in place); returns it."""
    _C._set_requires_grad(self, requires_grad)
    return self


def _register_hook(self, hook):
    """register_hook(hook) -> handle

    ``hook(grad)`` is called with this tensor's gradient and may return a replacement."""
    if not self.requires_grad:
        raise RuntimeError("cannot register a hook on a tensor that doesn't require gradient")
    return _RemovableHandle(self, _C._register_hook(self, hook))


def _register_post_accumulate_grad_hook(self, hook):
    """register_post_accumulate_grad_hook(hook) -> handle

    ``hook(tensor)`` is called after this leaf's ``.grad`` was accumulated."""
    hook_id = _C._register_post_accumulate_grad_hook(self, hook)
    return _RemovableHandle(self, hook_id, _C._remove_post_accumulate_grad_hook)


def _set_grad(self, value):
    _C._set_grad(self, value)


def _grad(self):
    if not self.is_leaf and not _C._retains_grad(self) and _C._requires_grad(self):
        import warnings

        warnings.warn(
            "The .grad attribute of a Tensor that is not a leaf Tensor is being accessed. Its "
            ".grad attribute won't be populated during autograd.backward(). If you indeed want "
            "the .grad field to be populated for a non-leaf Tensor, use .retain_grad() on the "
            "non-leaf Tensor. If you access the non-leaf Tensor by mistake, make sure you access "
            "the leaf Tensor instead.",
            UserWarning,
            stacklevel=2,
        )
    return _C._grad(self)


def _set_requires_grad(self, value):
    if not isinstance(value, bool):
        raise TypeError("requires_grad must be a bool")
    _C._set_requires_grad(self, value)


def _detach_(self):
    """detach_() -> Tensor

    Detaches this tensor from the graph that made it, in place."""
    return _C._detach_(self)


def _install(Tensor):
    Tensor.requires_grad = property(_C._requires_grad, _set_requires_grad)
    Tensor.grad = property(_grad, _set_grad)
    Tensor.grad_fn = property(_C._grad_fn)
    Tensor.is_leaf = property(_C._is_leaf)
    Tensor.output_nr = property(_C._output_nr)
    Tensor._base = property(_C._base)
    Tensor.retains_grad = property(_C._retains_grad)
    Tensor._is_view = lambda self: _C._is_view(self)
    Tensor.backward = _backward
    Tensor.requires_grad_ = _requires_grad_
    Tensor.retain_grad = lambda self: _C._retain_grad(self)
    Tensor.register_hook = _register_hook
    Tensor.register_post_accumulate_grad_hook = _register_post_accumulate_grad_hook
    Tensor.detach_ = _detach_
    version = Tensor._version
    Tensor._version = property(lambda self: version(self))
