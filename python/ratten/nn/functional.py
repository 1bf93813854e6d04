"""``ratten.nn.functional`` (torch.nn.functional): the declarations with
``python_module: nn`` under their torch names (torch's ``torch._C._nn``), the top-level
operators torch.nn.functional re-exports, and the functions torch writes in Python."""

from .. import _C

_nn = _C._generated_functions("nn")
globals().update(_nn)

__all__ = sorted(_nn)

# ---- linear functions ------------------------------------------------------------------------


# ---- activations -----------------------------------------------------------------------------


# ---- softmax and losses ----------------------------------------------------------------------


# ---- convolution and pooling -----------------------------------------------------------------

_top = _C._generated_functions()

# torch.nn.functional re-exports the top-level operators (torch.conv2d, ...).
conv1d = _top["conv1d"]
conv2d = _top["conv2d"]
conv3d = _top["conv3d"]
conv_transpose1d = _top["conv_transpose1d"]
conv_transpose2d = _top["conv_transpose2d"]
conv_transpose3d = _top["conv_transpose3d"]


def _list_with_default(out_size, defaults):
    """torch's ``_list_with_default``: ``None`` entries of an output size take the input's."""
    if isinstance(out_size, int):
        return out_size
    if len(defaults) <= len(out_size):
        raise ValueError(f"Input dimension should be at least {len(out_size) + 1}")
    return [v if v is not None else d for v, d in zip(out_size, defaults[-len(out_size):])]


def max_pool2d_with_indices(input, kernel_size, stride=None, padding=0, dilation=1,
                            ceil_mode=False, return_indices=False):
    """2-D max pooling returning the values and the flat ``h * W + w`` index of each
    maximum (torch.nn.functional.max_pool2d_with_indices)."""
    if stride is None:
        stride = []
    return _nn["max_pool2d_with_indices"](input, kernel_size, stride, padding, dilation,
                                          ceil_mode)


def _max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
                return_indices=False):
    if stride is None:
        stride = []
    return _top["max_pool2d"](input, kernel_size, stride, padding, dilation, ceil_mode)


def max_pool2d(input, kernel_size, stride=None, padding=0, dilation=1, ceil_mode=False,
               return_indices=False):
    """2-D max pooling over a 3-D ``(C, H, W)`` or 4-D ``(N, C, H, W)`` input; with
    ``return_indices=True`` also the indices of the maxima (torch.nn.functional.max_pool2d)."""
    if return_indices:
        return max_pool2d_with_indices(input, kernel_size, stride, padding, dilation, ceil_mode)
    return _max_pool2d(input, kernel_size, stride, padding, dilation, ceil_mode)


def adaptive_max_pool2d_with_indices(input, output_size, return_indices=False):
    """Adaptive 2-D max pooling returning the values and their indices."""
    output_size = _list_with_default(output_size, input.size())
    return _nn["adaptive_max_pool2d"](input, output_size)


def _adaptive_max_pool2d(input, output_size, return_indices=False):
    return adaptive_max_pool2d_with_indices(input, output_size)[0]


def adaptive_max_pool2d(input, output_size, return_indices=False):
    """Adaptive 2-D max pooling to ``output_size`` (an int, or a pair whose ``None`` entries
    keep the input's size); with ``return_indices=True`` also the indices."""
    if return_indices:
        return adaptive_max_pool2d_with_indices(input, output_size)
    return _adaptive_max_pool2d(input, output_size)


def avg_pool2d(input, kernel_size, stride=None, padding=0, ceil_mode=False,
               count_include_pad=True, divisor_override=None):
    """2-D average pooling (torch.nn.functional.avg_pool2d); ``stride=None`` is the kernel
    size, as torch's parser reads None for the schema's ``stride=[]``."""
    if stride is None:
        stride = []
    return _nn["avg_pool2d"](input, kernel_size, stride, padding, ceil_mode, count_include_pad,
                             divisor_override)


def adaptive_avg_pool2d(input, output_size):
    """Adaptive 2-D average pooling to ``output_size`` (an int, or a pair whose ``None``
    entries keep the input's size)."""
    _output_size = _list_with_default(output_size, input.size())
    return _nn["adaptive_avg_pool2d"](input, _output_size)



# ---- normalization, dropout, embedding, padding, interpolation -------------------------------


__all__ = sorted(set(__all__) | {n for n in globals() if not n.startswith("_")} - {"annotations"})
