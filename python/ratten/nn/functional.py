"""``ratten.nn.functional`` (torch.nn.functional): the declarations with
``python_module: nn`` under their torch names, and the functions torch writes in Python."""

from .. import _C

_functions = _C._generated_functions()

linear = _functions["linear"]

__all__ = ["linear"]
