"""``ratten.nn.functional`` (torch.nn.functional): the declarations with
``python_module: nn`` under their torch names (torch's ``torch._C._nn``), the top-level
operators torch.nn.functional re-exports, and the functions torch writes in Python."""

from .. import _C

_nn = _C._generated_functions("nn")
globals().update(_nn)

__all__ = sorted(_nn)

# ---- linear functions ------------------------------------------------------------------------


# ---- activations -----------------------------------------------------------------------------

_top = _C._generated_functions()


def relu(input, inplace=False):
    """Applies the rectified linear unit function element-wise (``inplace``: into ``input``)."""
    return _top["relu_"](input) if inplace else _top["relu"](input)


relu_ = _top["relu_"]


def relu6(input, inplace=False):
    """Applies ``min(max(0, x), 6)`` element-wise."""
    return _nn["relu6_"](input) if inplace else _nn["relu6"](input)


def elu(input, alpha=1.0, inplace=False):
    """Applies the exponential linear unit element-wise."""
    return _nn["elu_"](input, alpha) if inplace else _nn["elu"](input, alpha)


def selu(input, inplace=False):
    """Applies ``scale * elu(x, alpha)`` with SELU's constants element-wise."""
    return _top["selu_"](input) if inplace else _top["selu"](input)


selu_ = _top["selu_"]


def celu(input, alpha=1.0, inplace=False):
    """Applies ``max(0, x) + min(0, alpha * (exp(x / alpha) - 1))`` element-wise."""
    return _top["celu_"](input, alpha) if inplace else _top["celu"](input, alpha)


celu_ = _top["celu_"]


def leaky_relu(input, negative_slope=0.01, inplace=False):
    """Applies ``max(0, x) + negative_slope * min(0, x)`` element-wise."""
    if inplace:
        return _nn["leaky_relu_"](input, negative_slope)
    return _nn["leaky_relu"](input, negative_slope)


def hardtanh(input, min_val=-1.0, max_val=1.0, inplace=False):
    """Clamps ``input`` element-wise to ``[min_val, max_val]``."""
    if min_val > max_val:
        raise ValueError("min_val cannot be greater than max_val")
    if inplace:
        return _nn["hardtanh_"](input, min_val, max_val)
    return _nn["hardtanh"](input, min_val, max_val)


def hardsigmoid(input, inplace=False):
    """Applies ``relu6(x + 3) / 6`` element-wise."""
    return _nn["hardsigmoid_"](input) if inplace else _nn["hardsigmoid"](input)


def hardswish(input, inplace=False):
    """Applies ``x * relu6(x + 3) / 6`` element-wise."""
    return _nn["hardswish_"](input) if inplace else _nn["hardswish"](input)


def silu(input, inplace=False):
    """Applies ``x * sigmoid(x)`` element-wise."""
    return _nn["silu_"](input) if inplace else _nn["silu"](input)


def mish(input, inplace=False):
    """Applies ``x * tanh(softplus(x))`` element-wise."""
    return _nn["mish_"](input) if inplace else _nn["mish"](input)


logsigmoid = _nn["log_sigmoid"]


def glu(input, dim=-1):
    """The gated linear unit: ``a * sigmoid(b)`` for the halves ``a``, ``b`` of ``input`` along
    ``dim``."""
    if input.dim() == 0:
        raise RuntimeError("glu does not support scalars because halving size must be even")
    return _nn["glu"](input, dim)


def sigmoid(input):
    """Applies ``1 / (1 + exp(-x))`` element-wise."""
    return input.sigmoid()


def tanh(input):
    """Applies the hyperbolic tangent element-wise."""
    return input.tanh()



# ---- softmax and losses ----------------------------------------------------------------------


# ---- convolution and pooling -----------------------------------------------------------------


# ---- normalization, dropout, embedding, padding, interpolation -------------------------------


__all__ = sorted(set(__all__) | {n for n in globals() if not n.startswith("_")} - {"annotations"})
