"""Custom autograd functions (torch/autograd/function.py): ``Function`` with ``forward`` and
``backward`` static methods and a ``ctx`` (``save_for_backward``, ``needs_input_grad``,
``mark_dirty``, ``mark_non_differentiable``, ``set_materialize_grads``)."""

from .. import _C
from .grad_mode import no_grad


def _is_tensor(x):
    return isinstance(x, _C.Tensor)


class FunctionCtx:
    """The ``ctx`` a Function's forward and backward share."""

    def __init__(self):
        self.to_save = ()
        self._saved = None
        self.dirty_tensors = ()
        self.non_differentiable = ()
        self.materialize_grads = True
        self.needs_input_grad = ()

    def save_for_backward(self, *tensors):
        for t in tensors:
            if t is not None and not _is_tensor(t):
                raise TypeError("save_for_backward can only save variables, but argument "
                                f"{tensors.index(t)} is of type {type(t).__name__}")
        self.to_save = tensors

    def save_for_forward(self, *tensors):
        self.saved_for_forward = tensors

    def mark_dirty(self, *args):
        self.dirty_tensors = args

    def mark_non_differentiable(self, *args):
        self.non_differentiable = args

    def set_materialize_grads(self, value):
        self.materialize_grads = value

    @property
    def saved_tensors(self):
        if self._saved is None:
            raise RuntimeError(
                "Trying to backward through the graph a second time (or directly access saved "
                "tensors after they have already been freed). Saved intermediate values of the "
                "graph are freed when you call .backward() or autograd.grad(). Specify "
                "retain_graph=True if you need to backward through the graph a second time or "
                "if you need to access saved tensors after calling backward."
            )
        out = []
        for t, version in self._saved:
            if t is not None and t._version != version:
                sizes = ", ".join(str(s) for s in t.shape)
                raise RuntimeError(
                    "one of the variables needed for gradient computation has been modified by "
                    f"an inplace operation: [{t.type()} [{sizes}]] is at version {t._version}; "
                    f"expected version {version} instead. Hint: enable anomaly detection to find "
                    "the operation that failed to compute its gradient, with "
                    "torch.autograd.set_detect_anomaly(True)."
                )
            out.append(t)
        return tuple(out)


class FunctionMeta(type):
    """Gives each Function subclass its backward class name (``<Name>Backward``)."""

    def __init__(cls, name, bases, attrs):
        cls._backward_name = f"{name}Backward"
        super().__init__(name, bases, attrs)


class Function(metaclass=FunctionMeta):
    """Base class of custom autograd functions: subclass with static ``forward(ctx, *args)`` and
    ``backward(ctx, *grad_outputs)``, call ``YourFunction.apply(*args)``."""

    @staticmethod
    def forward(ctx, *args, **kwargs):
        raise NotImplementedError(
            "You must implement the forward function for custom autograd.Function."
        )

    @staticmethod
    def backward(ctx, *grad_outputs):
        raise NotImplementedError(
            "You must implement either the backward or vjp method for your custom "
            "autograd.Function to use it with backward mode AD."
        )

    vjp = backward

    @staticmethod
    def jvp(ctx, *grad_inputs):
        raise NotImplementedError(
            "You must implement the jvp function for custom autograd.Function to use it "
            "with forward mode AD."
        )

    @staticmethod
    def setup_context(ctx, inputs, output):
        raise NotImplementedError("setup_context is not implemented.")

    @classmethod
    def _forward_ad(cls, ctx, out_tuple, tangents, tensor_inputs, level):
        """The outputs' tangents from ``jvp(ctx, *tangents)`` (torch's
        ``_process_forward_mode_AD``): an output that is an input returned as-is becomes a
        view of it first, so that the input keeps its own tangent."""
        _C._set_fwd_grad_enabled(False)
        try:
            out_tangents = cls.jvp(ctx, *tangents)
        finally:
            _C._set_fwd_grad_enabled(True)
        if not isinstance(out_tangents, tuple):
            out_tangents = (out_tangents,)
        n_out = sum(1 for o in out_tuple if _is_tensor(o))
        if len(out_tangents) != n_out:
            raise RuntimeError(
                f"jvp() returned an incorrect number of tangents: expected {n_out}, got "
                f"{len(out_tangents)}"
            )
        result = []
        it = iter(out_tangents)
        for o in out_tuple:
            if not _is_tensor(o):
                result.append(o)
                continue
            t = next(it)
            dirty = any(o is d for d in ctx.dirty_tensors)
            if any(o is i for i in tensor_inputs if i is not None) and not dirty:
                o = o.view_as(o)
            if t is not None:
                _C._set_fw_grad(o, t, level, dirty)
            result.append(o)
        return tuple(result)

    @classmethod
    def apply(cls, *args, **kwargs):
        ctx = FunctionCtx()
        tensor_inputs = [a if _is_tensor(a) else None for a in args]
        ctx.needs_input_grad = tuple(
            t is not None and t.requires_grad for t in tensor_inputs
        )
        requires_grad = _C.is_grad_enabled() and any(ctx.needs_input_grad)
        from . import forward_ad

        level = forward_ad._current_level
        tangents = [forward_ad.unpack_dual(t).tangent if t is not None and level >= 0
                    else None for t in tensor_inputs]
        # The forward runs without forward AD: the tangents come from `jvp` (torch does the
        # same).
        fwd_enabled = _C._is_fwd_grad_enabled()
        _C._set_fwd_grad_enabled(False)
        try:
            with no_grad():
                if cls.setup_context is not Function.setup_context:
                    outputs = cls.forward(*args, **kwargs)
                    cls.setup_context(ctx, args, outputs)
                else:
                    outputs = cls.forward(ctx, *args, **kwargs)
        finally:
            _C._set_fwd_grad_enabled(fwd_enabled)
        single = not isinstance(outputs, tuple)
        out_tuple = (outputs,) if single else outputs
        if fwd_enabled and any(t is not None for t in tangents):
            out_tuple = cls._forward_ad(ctx, out_tuple, tangents, tensor_inputs, level)
        if requires_grad:
            ctx._saved = [(t, t._version if t is not None else 0) for t in ctx.to_save]
            out_tensors = [o for o in out_tuple if _is_tensor(o)]
            # An output that is an input returned as-is becomes a view of it (torch does the
            # same), so that the input keeps its own history.
            out_tensors = [
                o.view_as(o) if any(o is i for i in tensor_inputs if i is not None)
                and not any(o is d for d in ctx.dirty_tensors) else o
                for o in out_tensors
            ]
            it = iter(out_tensors)
            out_tuple = tuple(next(it) if _is_tensor(o) else o for o in out_tuple)
            shapes = [(o.shape, o.dtype) for o in out_tensors]

            def run_backward(*grads):
                if ctx.materialize_grads:
                    grads = tuple(
                        g if g is not None else _C._generated_functions()["zeros"](
                            shape, dtype=dtype)
                        for g, (shape, dtype) in zip(grads, shapes)
                    )
                result = cls.backward(ctx, *grads)
                if not isinstance(result, tuple):
                    result = (result,)
                # Gradients given for non-tensor inputs must be None; extra Nones are dropped.
                if len(result) > len(args):
                    extra = result[len(args):]
                    if all(r is None for r in extra):
                        result = result[: len(args)]
                return tuple(
                    r if tensor_inputs[i] is not None else None
                    for i, r in enumerate(result)
                ) if len(result) == len(args) else result

            _C._record_function(
                cls._backward_name,
                run_backward,
                tensor_inputs,
                out_tensors,
                [d for d in ctx.dirty_tensors if _is_tensor(d)],
                [n for n in ctx.non_differentiable if _is_tensor(n)],
            )
        return out_tuple[0] if single else out_tuple
