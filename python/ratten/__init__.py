"""ratten: PyTorch's operator system in Rust, with a torch-like Python API.

The native part is ``ratten._C`` (crates/ratten-py). Operators are not listed here: the
module functions (``ratten.add``) and Tensor methods (``t.add``) are generated from ratten-aten's
native_functions.yaml (crates/ratten-py/src/generated, torch's python_torch_functions /
python_variable_methods) and installed below, with the dispatcher's other ``aten`` operators.
Operators registered at run time (from ``_C._dispatch_library``) are found by name under
``ratten.ops.<ns>.<op>``, parsed against the dispatcher's schemas.
"""

import builtins as _builtins
import weakref as _weakref

import numpy as _np

from . import _C
from ._C import (
    Generator,
    Tensor,
    can_cast,
    channels_last,
    channels_last_3d,
    contiguous_format,
    device,
    dtype,
    from_dlpack,
    from_numpy,
    get_default_dtype,
    get_num_interop_threads,
    get_num_threads,
    initial_seed,
    is_tensor,
    manual_seed,
    memory_format,
    preserve_format,
    promote_types,
    result_type,
    set_num_interop_threads,
    set_num_threads,
    tensor,
    UntypedStorage,
)

# Dtypes as module attributes: ratten.float32, ratten.long, ...
globals().update(_C._dtypes)

# The generated module functions; hand-written ones of the same name (factories) win.
# Those declared with a `python_module` (nn, linalg) live in their module only, as in torch.
for _name, _fn in _C._generated_functions().items():
    globals().setdefault(_name, _fn)

# The generated Tensor methods, as descriptors on the class; native methods (views, fill_,
# item, ...) keep precedence.
for _name, _m in _C._generated_methods().items():
    if not hasattr(Tensor, _name):
        setattr(Tensor, _name, _m)
del _name, _fn, _m

__version__ = _C.__version__

from . import autograd, linalg, nn, return_types  # noqa: E402  (they read _C's tables above)
from .autograd.grad_mode import (  # noqa: E402
    enable_grad,
    inference_mode,
    is_grad_enabled,
    is_inference_mode_enabled,
    no_grad,
    set_grad_enabled,
)
from ._tensor_autograd import _install as _install_autograd  # noqa: E402

_install_autograd(Tensor)
del _install_autograd

_C_tensor = tensor


def tensor(data, *, dtype=None, device=None, requires_grad=False, pin_memory=False):
    """tensor(data, *, dtype=None, device=None, requires_grad=False, pin_memory=False) -> Tensor

    A new tensor holding a copy of ``data`` (nested sequences of numbers, a numpy array or a
    tensor), as torch.tensor."""
    t = _C_tensor(data, dtype=dtype, device=device)
    if requires_grad:
        t.requires_grad_(True)
    return t
from ._size import Size  # noqa: E402
from .functional import einsum, tensordot, unique, unique_consecutive  # noqa: E402


def _conversion(name, dtype):
    """The Tensor method ``name`` (``t.float()``): ``t.to(dtype)``, ``t`` itself when it
    already has that dtype (torch's python_variable_methods.cpp)."""

    def method(self, *, memory_format=preserve_format):
        return self.to(dtype, memory_format=memory_format)

    method.__name__ = method.__qualname__ = name
    method.__doc__ = (
        f"{name}(*, memory_format=ratten.preserve_format) -> Tensor\n\n"
        f"``self.{name}()`` is equivalent to ``self.to({dtype})``."
    )
    return method


for _name, _dtype in [
    ("float", _C._dtypes["float32"]),
    ("double", _C._dtypes["float64"]),
    ("half", _C._dtypes["float16"]),
    ("bfloat16", _C._dtypes["bfloat16"]),
    ("long", _C._dtypes["int64"]),
    ("int", _C._dtypes["int32"]),
    ("short", _C._dtypes["int16"]),
    ("char", _C._dtypes["int8"]),
    ("byte", _C._dtypes["uint8"]),
    ("bool", _C._dtypes["bool"]),
    ("cfloat", _C._dtypes["complex64"]),
    ("cdouble", _C._dtypes["complex128"]),
    ("chalf", _C._dtypes["complex32"]),
]:
    if not hasattr(Tensor, _name):
        setattr(Tensor, _name, _conversion(_name, _dtype))
del _name, _dtype


# torch's legacy tensor type names (`torch.FloatTensor`), which `Tensor.type()` speaks.
_LEGACY_TYPE_NAMES = {
    "float32": "Float",
    "float64": "Double",
    "float16": "Half",
    "bfloat16": "BFloat16",
    "int64": "Long",
    "int32": "Int",
    "int16": "Short",
    "int8": "Char",
    "uint8": "Byte",
    "uint16": "UInt16",
    "uint32": "UInt32",
    "uint64": "UInt64",
    "bool": "Bool",
    "complex64": "ComplexFloat",
    "complex128": "ComplexDouble",
    "complex32": "ComplexHalf",
}


def _legacy_type_name(t):
    name = _LEGACY_TYPE_NAMES.get(str(t.dtype).split(".")[-1], str(t.dtype))
    where = "" if t.device.type == "cpu" else f"{t.device.type}."
    return f"torch.{where}{name}Tensor"


def _type(self, dtype=None, non_blocking=False, **kwargs):
    """type(dtype=None, non_blocking=False) -> str or Tensor

    Without ``dtype``, the type name torch gives (``'torch.FloatTensor'``); with a dtype or a
    type name (``ratten.float64``, ``'torch.DoubleTensor'``), this tensor converted to it
    (``self`` itself when it already has that type)."""
    if dtype is None:
        return _legacy_type_name(self)
    if isinstance(dtype, str):
        wanted = dtype.split(".")[-1]
        for py_name, legacy in _LEGACY_TYPE_NAMES.items():
            if wanted == f"{legacy}Tensor":
                dtype = _C._dtypes[py_name]
                break
        else:
            raise ValueError(f"invalid type: '{dtype}'")
    return self.to(dtype, non_blocking=non_blocking)


if not hasattr(Tensor, "type"):
    Tensor.type = _type


def _cpu(self, *, memory_format=preserve_format):
    """cpu(*, memory_format=ratten.preserve_format) -> Tensor

    This tensor on the CPU: ``self`` itself when it is there already."""
    return self.to("cpu", memory_format=memory_format)


if not hasattr(Tensor, "cpu"):
    Tensor.cpu = _cpu

_aten_norm = _C._generated_functions()["norm"]


def norm(input, p="fro", dim=None, keepdim=False, out=None, dtype=None):
    """norm(input, p='fro', dim=None, keepdim=False, out=None, dtype=None) -> Tensor

    torch.norm (torch/functional.py): a vector norm of ``input`` over ``dim`` (all dims when
    None) through ``ratten.linalg.vector_norm``; ``p='fro'`` is the 2-norm. The matrix norms
    torch reaches for other strings (``'nuc'``) are not available."""
    if dim is None:
        _dim = None
    elif isinstance(dim, _builtins.int):  # ratten.int is a dtype
        _dim = [dim]
    else:
        _dim = list(dim)
    if isinstance(p, _builtins.str):
        if p != "fro" or (_dim is not None and len(_dim) > 2):
            raise NotImplementedError(f"norm(): p={p!r} (a matrix norm) is not supported by ratten")
        p = 2
    p = 2.0 if p is None else p
    kwargs = {"dtype": dtype}
    if out is not None:
        kwargs["out"] = out
    return linalg.vector_norm(input, p, _dim, keepdim, **kwargs)


def _tensor_norm(self, p="fro", dim=None, keepdim=False, dtype=None):
    """norm(p='fro', dim=None, keepdim=False, dtype=None) -> Tensor (torch.Tensor.norm)"""
    return norm(self, p, dim, keepdim, dtype=dtype)


Tensor.norm = _tensor_norm

__all__ = [
    "Generator",
    "Size",
    "Tensor",
    "UntypedStorage",
    "arange",
    "as_tensor",
    "can_cast",
    "channels_last",
    "channels_last_3d",
    "contiguous_format",
    "device",
    "dtype",
    "empty",
    "from_dlpack",
    "from_numpy",
    "full",
    "get_default_dtype",
    "get_num_interop_threads",
    "get_num_threads",
    "initial_seed",
    "is_tensor",
    "manual_seed",
    "memory_format",
    "ones",
    "preserve_format",
    "promote_types",
    "rand",
    "randn",
    "result_type",
    "set_default_dtype",
    "set_num_interop_threads",
    "set_num_threads",
    "tensor",
    "zeros",
] + sorted(_C._dtypes)


def set_default_dtype(d, /):
    """set_default_dtype(d) -> None

    Sets the default floating point dtype to ``d`` (float32, float64, float16 or bfloat16):
    what Python floats become in ``ratten.tensor`` and in type promotion, and the dtype of
    factories (``ratten.ones(2)``) given none. Complex numbers follow (complex64 for float32,
    complex128 for float64, complex32 for float16). As ``torch.set_default_dtype``.
    """
    _C._set_default_dtype(d)


def as_tensor(data, dtype=None, device=None):
    """as_tensor(data, dtype=None, device=None) -> Tensor

    ``data`` as a tensor, sharing its memory where it can, as ``torch.as_tensor``: a tensor
    already of that dtype and device is returned itself, a numpy array is wrapped as
    ``from_numpy`` wraps it (then converted if ``dtype`` or ``device`` asks for another), and
    anything else is copied as ``ratten.tensor`` copies it.
    """
    if isinstance(data, Tensor):
        return data.to(device=device, dtype=dtype)
    if isinstance(data, _np.ndarray):
        return from_numpy(data).to(device=device, dtype=dtype)
    return tensor(data, dtype=dtype, device=device)


# Note [Pickling tensors] (crates/ratten-py/src/python/storage.rs): one storage object per
# live storage while something (a pickler's or deepcopy's memo) holds it, so views of one
# storage reduce to the same object and come back sharing.
_storage_objects = _weakref.WeakValueDictionary()


def _storage_object(t):
    s = t.untyped_storage()
    return _storage_objects.setdefault(s._cdata, s)


def _tensor_reduce_ex(self, proto):
    """Pickles as torch's ``_rebuild_tensor_v2`` does: the storage and the view of it."""
    return (
        _C._rebuild_tensor,
        (_storage_object(self), self.dtype, self.storage_offset(), tuple(self.shape), self.stride()),
    )


Tensor.__reduce_ex__ = _tensor_reduce_ex


class _OpFunction:
    """A module-level operator function (``ratten.add``) bound by name to the dispatcher."""

    __slots__ = ("__name__", "_qualified")

    def __init__(self, name, qualified):
        self.__name__ = name
        self._qualified = qualified

    def __call__(self, *args, **kwargs):
        return _C._call_op(self._qualified, *args, **kwargs)

    def __repr__(self):
        return f"<built-in method {self.__name__} of ratten>"

    @property
    def __doc__(self):
        sigs = _C._op_signatures(self._qualified)
        return "\n".join(f"{self.__name__}{s}" for s in sigs)


def _install_dispatcher_ops():
    # Every other `aten` operator the dispatcher has at import (in-place forms such as `add_`,
    # `to`, ...) as a module function, called through its schema. They are put in the module's
    # dict rather than found by a module `__getattr__`: CPython 3.11+ specializes `ratten.add`
    # (LOAD_ATTR_MODULE, a cached dict index) only for modules without `__getattr__`, and the
    # generic lookup costs ~300 instructions per call. Operators registered later are reached
    # as `ratten.ops.<ns>.<op>` (the module functions are fixed at import, as torch's are).
    g = globals()
    # Declarations with a `python_module` stay in their module (ratten.nn.functional, ...).
    in_modules = set(_C._generated_functions("nn")) | set(_C._generated_functions("linalg"))
    for q in _C._dispatch_get_registrations_for_dispatch_key(""):
        ns, _, rest = q.partition("::")
        name = rest.partition(".")[0]
        if ns == "aten" and name and not name.startswith("__") and name not in g \
                and name not in in_modules:
            g[name] = _OpFunction(name, name)


_install_dispatcher_ops()
del _install_dispatcher_ops


class _Namespace:
    """``ratten.ops.<ns>.<op>``: operators of any namespace, as torch.ops."""

    def __init__(self, ns):
        self._ns = ns

    def __getattr__(self, name):
        q = f"{self._ns}::{name}"
        if _C._has_op(q):
            return _OpFunction(name, q)
        raise AttributeError(f"'_OpNamespace' '{self._ns}' object has no attribute '{name}'")


class _Ops:
    def __getattr__(self, ns):
        if ns.startswith("__"):
            raise AttributeError(ns)
        return _Namespace(ns)


ops = _Ops()


def _complex_part(name):
    """``Tensor.real`` / ``Tensor.imag`` as torch's properties: the view ``ratten.<name>(t)``;
    assigning copies into it (``t.real = x`` is ``t.real.copy_(x)``)."""
    view = _C._generated_functions()[name]

    def get(self):
        return view(self)

    def set_(self, value):
        view(self).copy_(value)

    doc = f"The {name} part of a complex tensor, as a view (see ``ratten.{name}``)."
    return property(get, set_, doc=doc)


Tensor.real = _complex_part("real")
Tensor.imag = _complex_part("imag")
del _complex_part
