"""``ratten.nn.functional`` (torch.nn.functional): the declarations with
``python_module: nn`` under their torch names (torch's ``torch._C._nn``), the top-level
operators torch.nn.functional re-exports, and the functions torch writes in Python."""

from .. import _C

_nn = _C._generated_functions("nn")
globals().update(_nn)
# The top-level operators, which torch.nn.functional calls or re-exports (torch.conv2d, ...).
_top = _C._generated_functions()

__all__ = sorted(_nn)

# ---- linear functions ------------------------------------------------------------------------


# ---- activations -----------------------------------------------------------------------------


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

import warnings as _warnings

from . import _reduction as _Reduction


def _get_softmax_dim(name, ndim, stacklevel):
    _warnings.warn(
        f"Implicit dimension choice for {name} has been deprecated. "
        "Change the call to include dim=X as an argument.",
        stacklevel=stacklevel,
    )
    return 0 if ndim in (0, 1, 3) else 1


def softmax(input, dim=None, _stacklevel=3, dtype=None):
    """Softmax along ``dim``: ``exp(x) / sum(exp(x))``, computed in ``dtype`` when given."""
    if dim is None:
        dim = _get_softmax_dim("softmax", input.dim(), _stacklevel)
    return input.softmax(dim) if dtype is None else input.softmax(dim, dtype=dtype)


def log_softmax(input, dim=None, _stacklevel=3, dtype=None):
    """The logarithm of softmax along ``dim``, computed stably."""
    if dim is None:
        dim = _get_softmax_dim("log_softmax", input.dim(), _stacklevel)
    return input.log_softmax(dim) if dtype is None else input.log_softmax(dim, dtype=dtype)


def softmin(input, dim=None, _stacklevel=3, dtype=None):
    """Softmax of ``-input`` along ``dim``."""
    if dim is None:
        dim = _get_softmax_dim("softmin", input.dim(), _stacklevel)
    return (-input).softmax(dim) if dtype is None else (-input).softmax(dim, dtype=dtype)


def _legacy_reduction(size_average, reduce, reduction):
    if size_average is not None or reduce is not None:
        return _Reduction.legacy_get_string(size_average, reduce)
    return reduction


def _warn_size(input, target):
    if target.size() != input.size():
        _warnings.warn(
            f"Using a target size ({target.size()}) that is different to the input size "
            f"({input.size()}). This will likely lead to incorrect results due to broadcasting. "
            "Please ensure they have the same size.",
            stacklevel=3,
        )


def _broadcast_pair(a, b):
    """``torch.broadcast_tensors(a, b)``."""
    sa, sb = tuple(a.shape), tuple(b.shape)
    n = max(len(sa), len(sb))
    pa, pb = (1,) * (n - len(sa)) + sa, (1,) * (n - len(sb)) + sb
    shape = []
    for i, (x, y) in enumerate(zip(pa, pb)):
        if x != y and x != 1 and y != 1:
            raise RuntimeError(
                f"The size of tensor a ({x}) must match the size of tensor b ({y}) at "
                f"non-singleton dimension {i}"
            )
        shape.append(y if x == 1 else x)
    return a.expand(shape), b.expand(shape)


def _weighted_reduction(loss, weight, reduction, mean_by_weight):
    weighted = loss * weight
    if reduction == "none":
        return weighted
    if reduction == "sum":
        return weighted.sum()
    if reduction == "mean":
        return weighted.sum() / weight.sum() if mean_by_weight else weighted.mean()
    raise ValueError(
        f"Invalid reduction mode: {reduction}. Expected one of 'none', 'mean', 'sum'."
    )


def nll_loss(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None,
             reduction="mean"):
    """The negative log likelihood loss of log-probabilities ``input`` and class indices."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    return _nn["nll_loss_nd"](input, target, weight, _Reduction.get_enum(reduction), ignore_index)


def cross_entropy(input, target, weight=None, size_average=None, ignore_index=-100, reduce=None,
                  reduction="mean", label_smoothing=0.0):
    """Cross entropy of logits ``input`` and class indices or class probabilities."""
    reduction = _legacy_reduction(size_average, reduce, reduction)
    return _nn["cross_entropy_loss"](input, target, weight, _Reduction.get_enum(reduction),
                                     ignore_index, label_smoothing)


def mse_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    """The mean squared error, optionally weighted per element."""
    _warn_size(input, target)
    reduction = _legacy_reduction(size_average, reduce, reduction)
    expanded_input, expanded_target = _broadcast_pair(input, target)
    if weight is not None:
        if weight.size() != input.size():
            raise ValueError("Weights and input must have the same size.")
        return _weighted_reduction((expanded_input - expanded_target) ** 2, weight, reduction, True)
    return _nn["mse_loss"](expanded_input, expanded_target, _Reduction.get_enum(reduction))


def l1_loss(input, target, size_average=None, reduce=None, reduction="mean", weight=None):
    """The mean absolute error, optionally weighted per element."""
    _warn_size(input, target)
    reduction = _legacy_reduction(size_average, reduce, reduction)
    expanded_input, expanded_target = _broadcast_pair(input, target)
    if weight is not None:
        if weight.size() != input.size():
            raise ValueError("Weights and input must have the same size.")
        return _weighted_reduction((expanded_input - expanded_target).abs(), weight, reduction,
                                   True)
    return _nn["l1_loss"](expanded_input, expanded_target, _Reduction.get_enum(reduction))


def smooth_l1_loss(input, target, size_average=None, reduce=None, reduction="mean", beta=1.0):
    """The smooth L1 loss: quadratic below ``beta``, linear above."""
    _warn_size(input, target)
    reduction = _legacy_reduction(size_average, reduce, reduction)
    expanded_input, expanded_target = _broadcast_pair(input, target)
    if beta == 0.0:
        return _nn["l1_loss"](expanded_input, expanded_target, _Reduction.get_enum(reduction))
    return _nn["smooth_l1_loss"](expanded_input, expanded_target, _Reduction.get_enum(reduction),
                                 beta)


def huber_loss(input, target, reduction="mean", delta=1.0, weight=None):
    """The Huber loss: quadratic below ``delta``, ``delta``-scaled linear above."""
    _warn_size(input, target)
    expanded_input, expanded_target = _broadcast_pair(input, target)
    if weight is None:
        return _nn["huber_loss"](expanded_input, expanded_target, _Reduction.get_enum(reduction),
                                 delta)
    if weight.size() != input.size():
        raise ValueError("Weights and input must have the same size.")
    unweighted = _nn["huber_loss"](expanded_input, expanded_target, 0, delta)
    return _weighted_reduction(unweighted, weight, reduction, False)


def binary_cross_entropy(input, target, weight=None, size_average=None, reduce=None,
                         reduction="mean"):
    """Binary cross entropy of probabilities ``input`` and targets in [0, 1]."""
    if size_average is not None or reduce is not None:
        reduction_enum = _Reduction.legacy_get_enum(size_average, reduce)
    else:
        reduction_enum = _Reduction.get_enum(reduction)
    if target.size() != input.size():
        raise ValueError(
            f"Using a target size ({target.size()}) that is different to the input size "
            f"({input.size()}) is deprecated. Please ensure they have the same size."
        )
    if weight is not None:
        weight, _ = _broadcast_pair(weight, target)
    return _nn["binary_cross_entropy"](input, target, weight, reduction_enum)


def binary_cross_entropy_with_logits(input, target, weight=None, size_average=None, reduce=None,
                                     reduction="mean", pos_weight=None):
    """Binary cross entropy of logits ``input`` (a sigmoid fused in, computed stably)."""
    if size_average is not None or reduce is not None:
        reduction_enum = _Reduction.legacy_get_enum(size_average, reduce)
    else:
        reduction_enum = _Reduction.get_enum(reduction)
    if not (target.size() == input.size()):
        raise ValueError(
            f"Target size ({target.size()}) must be the same as input size ({input.size()})"
        )
    return _top["binary_cross_entropy_with_logits"](input, target, weight, pos_weight,
                                                    reduction_enum)


def kl_div(input, target, size_average=None, reduce=None, reduction="mean", log_target=False):
    """The Kullback-Leibler divergence of log-probabilities ``input`` from ``target``."""
    if size_average is not None or reduce is not None:
        reduction_enum = _Reduction.legacy_get_enum(size_average, reduce)
    else:
        if reduction == "mean":
            _warnings.warn(
                "reduction: 'mean' divides the total loss by both the batch size and the support "
                "size.'batchmean' divides only by the batch size, and aligns with the KL div math "
                "definition.'mean' will be changed to behave the same as 'batchmean' in the next "
                "major release.",
                stacklevel=2,
            )
        reduction_enum = _Reduction.get_enum("sum" if reduction == "batchmean" else reduction)
    reduced = _top["kl_div"](input, target, reduction_enum, log_target=log_target)
    if reduction == "batchmean" and input.dim() != 0:
        reduced = reduced / input.size()[0]
    return reduced



# ---- convolution and pooling -----------------------------------------------------------------

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


def _verify_batch_size(size):
    size_prods = size[0]
    for i in range(len(size) - 2):
        size_prods *= size[i + 2]
    if size_prods == 1:
        raise ValueError(
            f"Expected more than 1 value per channel when training, got input size {size}")


def batch_norm(input, running_mean, running_var, weight=None, bias=None, training=False,
               momentum=0.1, eps=1e-5):
    """Applies Batch Normalization for each channel across a batch of data."""
    if training:
        _verify_batch_size(input.size())
    return _top["batch_norm"](input, weight, bias, running_mean, running_var, training,
                              momentum, eps, False)


def layer_norm(input, normalized_shape, weight=None, bias=None, eps=1e-5):
    """Applies Layer Normalization over the last ``len(normalized_shape)`` dimensions."""
    if isinstance(normalized_shape, int):
        normalized_shape = (normalized_shape,)
    return _top["layer_norm"](input, list(normalized_shape), weight, bias, eps, False)



def _verify_spatial_size(size):
    size_prods = 1
    for i in range(2, len(size)):
        size_prods *= size[i]
    if size_prods == 1:
        raise ValueError(
            f"Expected more than 1 spatial element when training, got input size {size}")


def group_norm(input, num_groups, weight=None, bias=None, eps=1e-5):
    """Applies Group Normalization over groups of channels (dim 1)."""
    if input.dim() < 2:
        raise RuntimeError(
            f"Expected at least 2 dimensions for input tensor but received {input.dim()}")
    _verify_spatial_size(input.size())
    return _top["group_norm"](input, num_groups, weight, bias, eps, False)

def _check_p(p):
    if p < 0.0 or p > 1.0:
        raise ValueError(f"dropout probability has to be between 0 and 1, but got {p}")


def dropout(input, p=0.5, training=True, inplace=False):
    """Zeroes elements of ``input`` with probability ``p`` (Bernoulli draws) and scales the
    rest by ``1 / (1 - p)`` during training."""
    _check_p(p)
    return _top["dropout_"](input, p, training) if inplace else _top["dropout"](input, p, training)


def dropout1d(input, p=0.5, training=True, inplace=False):
    """Zeroes whole channels of a (N, C, L) or (C, L) input with probability ``p``."""
    _check_p(p)
    inp_dim = input.dim()
    if inp_dim not in (2, 3):
        raise RuntimeError(
            f"dropout1d: Expected 2D or 3D input, but received a {inp_dim}D input. "
            "Note that dropout1d exists to provide channel-wise dropout on inputs with 1 "
            "spatial dimension, a channel dimension, and an optional batch dimension "
            "(i.e. 2D or 3D inputs).")
    is_batched = inp_dim == 3
    if not is_batched:
        input = input.unsqueeze_(0) if inplace else input.unsqueeze(0)
    fn = _top["feature_dropout_"] if inplace else _top["feature_dropout"]
    result = fn(input, p, training)
    if not is_batched:
        result = result.squeeze_(0) if inplace else result.squeeze(0)
    return result


def dropout2d(input, p=0.5, training=True, inplace=False):
    """Zeroes whole channels of a (N, C, H, W) input with probability ``p``."""
    import warnings

    _check_p(p)
    inp_dim = input.dim()
    if inp_dim not in (3, 4):
        warnings.warn(
            f"dropout2d: Received a {inp_dim}-D input to dropout2d, which is deprecated "
            "and will result in an error in a future release. To retain the behavior "
            "and silence this warning, please use dropout instead. Note that dropout2d "
            "exists to provide channel-wise dropout on inputs with 2 spatial dimensions, "
            "a channel dimension, and an optional batch dimension (i.e. 3D or 4D inputs).")
    if inp_dim == 3:
        warnings.warn(
            "dropout2d: Received a 3D input to dropout2d and assuming that channel-wise "
            "1D dropout behavior is desired - input is interpreted as shape (N, C, L), where C "
            "is the channel dim. This behavior will change in a future release to interpret the "
            "input as one without a batch dimension, i.e. shape (C, H, W). To maintain the 1D "
            "channel-wise dropout behavior, please switch to using dropout1d instead.")
    fn = _top["feature_dropout_"] if inplace else _top["feature_dropout"]
    return fn(input, p, training)


def _no_grad_embedding_renorm_(weight, input, max_norm, norm_type):
    # torch's embedding_renorm_: rows named by ``input`` whose norm exceeds ``max_norm`` are
    # scaled to ``max_norm / (norm + 1e-7)`` in place, without recording a graph.
    from .. import no_grad, unique

    with no_grad():
        rows = unique(input.reshape(-1))
        if rows.numel() == 0:
            return
        sel = weight.index_select(0, rows)
        norms = sel.abs().pow(norm_type).sum(1).pow(1.0 / norm_type)
        scale = (max_norm / (norms + 1e-7)).clamp(max=1.0)
        weight.index_copy_(0, rows, sel * scale.unsqueeze(1))


def embedding(input, weight, padding_idx=None, max_norm=None, norm_type=2.0,
              scale_grad_by_freq=False, sparse=False):
    """Looks up the rows of ``weight`` that ``input`` names."""
    if padding_idx is not None:
        if padding_idx > 0:
            assert padding_idx < weight.size(0), "Padding_idx must be within num_embeddings"
        elif padding_idx < 0:
            assert padding_idx >= -weight.size(0), "Padding_idx must be within num_embeddings"
            padding_idx = weight.size(0) + padding_idx
    else:
        padding_idx = -1
    if max_norm is not None:
        input = input.contiguous()
        _no_grad_embedding_renorm_(weight, input, max_norm, norm_type)
    return _top["embedding"](weight, input, padding_idx, scale_grad_by_freq, sparse)


def embedding_bag(input, weight, offsets=None, max_norm=None, norm_type=2,
                  scale_grad_by_freq=False, mode="mean", sparse=False, per_sample_weights=None,
                  include_last_offset=False, padding_idx=None):
    """Sums, averages or takes the maximum of the bags of rows of ``weight`` that ``input``
    names (bags by ``offsets``, or the rows of a 2-D ``input``)."""
    # torch's backward compatibility: the arguments used to be (weight, input, ...).
    if weight.dtype == _C._dtypes["int64"] and input.is_floating_point():
        _warnings.warn(
            "Argument order of nn.functional.embedding_bag was changed. "
            "Usage `embedding_bag(weight, input, ...)` is deprecated, "
            "and should now be `embedding_bag(input, weight, ...)`.",
            stacklevel=2,
        )
        weight, input = input, weight
    if per_sample_weights is not None and input.size() != per_sample_weights.size():
        raise ValueError(
            f"embedding_bag: If per_sample_weights ({per_sample_weights.shape}) is not None, "
            f"then it must have the same shape as the input ({input.shape})"
        )
    if not weight.dim() == 2:
        raise ValueError(
            f"weight has to be a 2D Tensor, but got Tensor of dimension {weight.dim()}"
        )
    if input.dim() == 2:
        if offsets is not None:
            raise ValueError(
                "if input is 2D, then offsets has to be None"
                ", as input is treated is a mini-batch of"
                " fixed length sequences. However, found "
                f"offsets of type {type(offsets)}"
            )
        offsets = _top["arange"](0, input.numel(), input.size(1), dtype=input.dtype,
                                 device=input.device)
        include_last_offset = False
        input = input.reshape(-1)
        if per_sample_weights is not None:
            per_sample_weights = per_sample_weights.reshape(-1)
    elif input.dim() == 1:
        if offsets is None:
            raise ValueError("offsets has to be a 1D Tensor but got None")
        if offsets.dim() != 1:
            raise ValueError("offsets has to be a 1D Tensor")
    else:
        raise ValueError(
            f"input has to be 1D or 2D Tensor, but got Tensor of dimension {input.dim()}"
        )
    if mode == "sum":
        mode_enum = 0
    elif mode == "mean":
        mode_enum = 1
    elif mode == "max":
        mode_enum = 2
        if scale_grad_by_freq:
            raise ValueError(
                "max mode does not support scaling the gradient by the frequency")
        if sparse:
            raise ValueError("max mode does not support sparse weights")
    else:
        raise ValueError("mode has to be one of sum, mean or max")
    if max_norm is not None:
        _no_grad_embedding_renorm_(weight, input, max_norm, norm_type)
    if per_sample_weights is not None and mode != "sum":
        raise NotImplementedError(
            "embedding_bag: per_sample_weights was not None. "
            "per_sample_weights is only supported for mode='sum' "
            f"(got mode='{mode}'). Please open a feature request on GitHub."
        )
    ret, _, _, _ = _top["embedding_bag"](weight, input, offsets, scale_grad_by_freq, mode_enum,
                                         sparse, per_sample_weights, include_last_offset,
                                         padding_idx)
    return ret




def _is_integer(x):
    return isinstance(x, int) and not isinstance(x, bool)


def interpolate(input, size=None, scale_factor=None, mode="nearest", align_corners=None,
                recompute_scale_factor=None, antialias=False):
    """Down/up samples ``input`` to ``size`` or by ``scale_factor`` (4-D inputs, modes
    ``nearest`` and ``bilinear``)."""
    import math

    if mode in ("nearest", "area", "nearest-exact"):
        if align_corners is not None:
            raise ValueError(
                "align_corners option can only be set with the interpolating modes: "
                "linear | bilinear | bicubic | trilinear")
    elif align_corners is None:
        align_corners = False

    dim = input.dim() - 2
    if size is not None and scale_factor is not None:
        raise ValueError("only one of size or scale_factor should be defined")
    elif size is not None:
        scale_factors = None
        if isinstance(size, (list, tuple)):
            if len(size) != dim:
                raise ValueError(
                    "Input and output must have the same number of spatial dimensions, but got "
                    f"input with spatial dimensions of {list(input.shape[2:])} and output size of "
                    f"{size}. Please provide input tensor in (N, C, d1, d2, ...,dK) format and "
                    "output size in (o1, o2, ...,oK) format.")
            if not all(_is_integer(x) for x in size):
                raise TypeError(
                    "expected size to be one of int or Tuple[int] or Tuple[int, int] or "
                    f"Tuple[int, int, int], but got size with types {[type(x) for x in size]}")
            output_size = list(size)
        else:
            output_size = [size for _ in range(dim)]
    elif scale_factor is not None:
        output_size = None
        if isinstance(scale_factor, (list, tuple)):
            if len(scale_factor) != dim:
                raise ValueError(
                    "Input and scale_factor must have the same number of spatial dimensions, but "
                    f"got input with spatial dimensions of {list(input.shape[2:])} and "
                    f"scale_factor of shape {scale_factor}. Please provide input tensor in "
                    "(N, C, d1, d2, ...,dK) format and scale_factor in (s1, s2, ...,sK) format.")
            scale_factors = [float(s) for s in scale_factor]
        else:
            scale_factors = [float(scale_factor) for _ in range(dim)]
    else:
        raise ValueError("either size or scale_factor should be defined")

    if recompute_scale_factor is not None and recompute_scale_factor and size is not None:
        raise ValueError("recompute_scale_factor is not meaningful with an explicit size.")
    if mode == "area" and output_size is None:
        recompute_scale_factor = True
    if recompute_scale_factor is not None and recompute_scale_factor:
        output_size = [math.floor(float(input.size(i + 2) * scale_factors[i])) for i in range(dim)]
        scale_factors = None

    if antialias and not (mode in ("bilinear", "bicubic") and input.ndim == 4):
        raise ValueError(
            "Anti-alias option is restricted to bilinear and bicubic modes and requires a 4-D "
            "tensor as input")

    if input.dim() == 4 and mode in ("nearest", "bilinear"):
        # torch calls the `.vec` overloads here; ratten computes their output size
        # (`compute_output_size`: the size truncated from input size * scale) and scales itself.
        if output_size is None:
            output_size = [int(float(input.size(i + 2)) * scale_factors[i]) for i in range(dim)]
            scales = scale_factors
        else:
            scales = [None, None]
        if mode == "nearest":
            return _nn["upsample_nearest2d"](input, output_size, scales[0], scales[1])
        if antialias:
            raise NotImplementedError("ratten: antialiased bilinear interpolation is not implemented")
        return _nn["upsample_bilinear2d"](input, output_size, align_corners, scales[0], scales[1])
    if input.dim() == 3 and mode == "bilinear":
        raise NotImplementedError("Got 3D input, but bilinear mode needs 4D input")
    if input.dim() == 5 and mode == "bilinear":
        raise NotImplementedError("Got 5D input, but bilinear mode needs 4D input")
    if input.dim() in (3, 4, 5) and mode in ("nearest", "linear", "bilinear", "bicubic",
                                             "trilinear", "area", "nearest-exact"):
        raise NotImplementedError(
            f"ratten: interpolate supports 4-D inputs in modes nearest and bilinear (got "
            f"{input.dim()}D, mode {mode})")
    raise NotImplementedError(
        "Input Error: Only 3D, 4D and 5D input Tensors supported"
        f" (got {input.dim()}D) for the modes: nearest | linear | bilinear | bicubic | trilinear "
        f"| area | nearest-exact (got {mode})")

__all__ = sorted(set(__all__) | {n for n in globals() if not n.startswith("_")} - {"annotations"})
