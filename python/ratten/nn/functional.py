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


# ---- normalization, dropout, embedding, padding, interpolation -------------------------------

_top = _C._generated_functions()


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
