"""Grad mode context managers (torch/autograd/grad_mode.py): ``no_grad``, ``enable_grad``,
``set_grad_enabled``, ``inference_mode``. Grad mode is per thread, as in torch."""

import functools

from .. import _C


class _DecoratorContextManager:
    """A context manager that also decorates functions (torch.utils._contextlib)."""

    def __call__(self, fn):
        @functools.wraps(fn)
        def wrapper(*args, **kwargs):
            with self.clone():
                return fn(*args, **kwargs)

        return wrapper

    def clone(self):
        return self.__class__()


class no_grad(_DecoratorContextManager):
    """Disables gradient recording inside its block (``torch.no_grad``)."""

    def __init__(self):
        self.prev = False

    def __enter__(self):
        self.prev = _C.is_grad_enabled()
        _C._set_grad_enabled(False)

    def __exit__(self, *exc):
        _C._set_grad_enabled(self.prev)


class enable_grad(_DecoratorContextManager):
    """Enables gradient recording inside its block (``torch.enable_grad``)."""

    def __init__(self):
        self.prev = False

    def __enter__(self):
        self.prev = _C.is_grad_enabled()
        _C._set_grad_enabled(True)

    def __exit__(self, *exc):
        _C._set_grad_enabled(self.prev)


class set_grad_enabled(_DecoratorContextManager):
    """Sets grad mode on or off: at once when called, and back when used as a context manager
    and left (``torch.set_grad_enabled``)."""

    def __init__(self, mode):
        self.prev = _C.is_grad_enabled()
        self.mode = mode
        _C._set_grad_enabled(mode)

    def __enter__(self):
        pass

    def __exit__(self, *exc):
        _C._set_grad_enabled(self.prev)

    def clone(self):
        return self.__class__(self.mode)


class inference_mode(_DecoratorContextManager):
    """``torch.inference_mode(mode=True)``: no recording and no version tracking (the autograd
    dispatch keys are excluded)."""

    def __init__(self, mode=True):
        self.mode = mode
        self._guard = None

    def __new__(cls, mode=True):
        if isinstance(mode, bool):
            return super().__new__(cls)
        # Used as a bare decorator: @inference_mode
        return cls()(mode)

    def __enter__(self):
        self._guard = _C._InferenceMode(self.mode)

    def __exit__(self, *exc):
        self._guard.exit()
        self._guard = None

    def clone(self):
        return self.__class__(self.mode)


def is_grad_enabled():
    return _C.is_grad_enabled()


def is_inference_mode_enabled():
    return _C.is_inference_mode_enabled()
