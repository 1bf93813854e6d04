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


__all__ = sorted(set(__all__) | {n for n in globals() if not n.startswith("_")} - {"annotations"})
