"""Forward-mode AD (torch.autograd.forward_ad): dual tensors within a level.

    with forward_ad.dual_level():
        x = forward_ad.make_dual(primal, tangent)
        y = f(x)
        jvp = forward_ad.unpack_dual(y).tangent

The tangents are computed by the operators' forward formulas (derivatives.yaml's
`result:` entries); an operator without one raises NotImplementedError. Only one level
may be open at a time, as in torch.
"""

from collections import namedtuple

from .. import _C

__all__ = [
    "UnpackedDualTensor",
    "enter_dual_level",
    "exit_dual_level",
    "make_dual",
    "unpack_dual",
    "dual_level",
]

# The current level (-1: none is open), kept here as torch does.
_current_level = -1


def enter_dual_level():
    """Opens a new forward AD level and returns its index."""
    global _current_level
    new_level = _C._enter_dual_level()
    if new_level != _current_level + 1:
        raise RuntimeError(
            "Entering a new forward AD level but the current level is not valid. "
            "Make sure you did not modified it directly."
        )
    _current_level = new_level
    return new_level


def exit_dual_level(*, level=None):
    """Closes `level` (the current one by default); every tangent set in it is dropped."""
    global _current_level
    if level is None:
        level = _current_level
    if level != _current_level:
        raise RuntimeError(
            "Trying to exit a forward AD level that was not the last one that was "
            "created. This is not supported."
        )
    _C._exit_dual_level(level=level)
    _current_level = level - 1


def make_dual(tensor, tangent, *, level=None):
    """A view of `tensor` carrying `tangent` as its forward gradient at `level`."""
    if level is None:
        level = _current_level
    if level < 0:
        raise RuntimeError(
            "Trying to create a dual Tensor for forward AD but no level exists, make sure to "
            "enter_dual_level() first."
        )
    if not (tensor.is_floating_point() or tensor.is_complex()):
        raise ValueError(
            f"Expected primal to be floating point or complex, but got: {tensor.dtype}"
        )
    if not (tangent.is_floating_point() or tangent.is_complex()):
        raise ValueError(
            f"Expected tangent to be floating point or complex, but got: {tangent.dtype}"
        )
    return _C._make_dual(tensor, tangent, level=level)


UnpackedDualTensor = namedtuple("UnpackedDualTensor", ["primal", "tangent"])
UnpackedDualTensor.__doc__ = "The primal and tangent of a dual tensor (unpack_dual's result)."


def unpack_dual(tensor, *, level=None):
    """The primal (a view without tangent) and the tangent (None if there is none)."""
    if level is None:
        level = _current_level
    if level < 0:
        return UnpackedDualTensor(tensor, None)
    primal, dual = _C._unpack_dual(tensor, level=level)
    return UnpackedDualTensor(primal, dual)


class dual_level:
    """Context manager (and decorator) opening a forward AD level for its body."""

    def __enter__(self):
        return enter_dual_level()

    def __exit__(self, exc_type, exc_value, traceback):
        exit_dual_level()
        return False

    def __call__(self, func):
        import functools

        @functools.wraps(func)
        def wrapper(*args, **kwargs):
            with self.__class__():
                return func(*args, **kwargs)

        return wrapper
