"""``ratten.linalg`` (torch.linalg): the declarations with ``python_module: linalg``, under
their torch names (``linalg_vector_norm`` is ``ratten.linalg.vector_norm``)."""

from . import _C

_functions = _C._generated_functions("linalg")

vector_norm = _functions["linalg_vector_norm"]

__all__ = ["vector_norm"]
