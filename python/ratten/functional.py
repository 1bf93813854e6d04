"""torch.functional's Python-level operators (torch/functional.py) over ratten's generated
functions: ``unique`` and ``unique_consecutive``, also as the Tensor methods torch/_tensor.py
defines. Their results are the output alone, or a tuple when the inverse indices or the counts
are asked for."""

from . import _C

_functions = _C._generated_functions()
_unique2 = _functions["_unique2"]
_unique_dim = _functions["unique_dim"]
_unique_consecutive = _functions["unique_consecutive"]

__all__ = ["unique", "unique_consecutive"]


def _returns(output, inverse_indices, counts, return_inverse, return_counts):
    """torch's ``boolean_dispatch`` on the two flags: which results come back."""
    if return_inverse and return_counts:
        return output, inverse_indices, counts
    if return_inverse:
        return output, inverse_indices
    if return_counts:
        return output, counts
    return output


def unique(input, sorted=True, return_inverse=False, return_counts=False, dim=None):
    """unique(input, sorted=True, return_inverse=False, return_counts=False, dim=None) -> Tensor or tuple

    Returns the unique elements of ``input`` (of its slices along ``dim`` when given), in
    ascending order: as torch's CPU kernel, the values are sorted whatever ``sorted`` says.
    With ``return_inverse``, also the index of each element (slice) of ``input`` among them;
    with ``return_counts``, how often each occurs. NaN values are all distinct.
    """
    if dim is not None:
        output, inverse_indices, counts = _unique_dim(
            input,
            dim,
            sorted=sorted,
            return_inverse=return_inverse,
            return_counts=return_counts,
        )
    else:
        output, inverse_indices, counts = _unique2(
            input,
            sorted=sorted,
            return_inverse=return_inverse,
            return_counts=return_counts,
        )
    return _returns(output, inverse_indices, counts, return_inverse, return_counts)


def unique_consecutive(input, return_inverse=False, return_counts=False, dim=None):
    """unique_consecutive(input, return_inverse=False, return_counts=False, dim=None) -> Tensor or tuple

    Keeps the first element of every run of equal consecutive elements of ``input`` (of
    slices along ``dim`` when given), as C++'s ``std::unique``. With ``return_inverse``, also
    the run of each element; with ``return_counts``, the length of each run.
    """
    output, inverse_indices, counts = _unique_consecutive(
        input, return_inverse=return_inverse, return_counts=return_counts, dim=dim
    )
    return _returns(output, inverse_indices, counts, return_inverse, return_counts)


def _tensor_unique(self, sorted=True, return_inverse=False, return_counts=False, dim=None):
    """unique(sorted=True, return_inverse=False, return_counts=False, dim=None) -> Tensor or tuple

    See :func:`ratten.unique`."""
    return unique(self, sorted, return_inverse, return_counts, dim)


def _tensor_unique_consecutive(self, return_inverse=False, return_counts=False, dim=None):
    """unique_consecutive(return_inverse=False, return_counts=False, dim=None) -> Tensor or tuple

    See :func:`ratten.unique_consecutive`."""
    return unique_consecutive(self, return_inverse, return_counts, dim)


_tensor_unique.__name__ = _tensor_unique.__qualname__ = "unique"
_tensor_unique_consecutive.__name__ = _tensor_unique_consecutive.__qualname__ = (
    "unique_consecutive"
)
_C.Tensor.unique = _tensor_unique
_C.Tensor.unique_consecutive = _tensor_unique_consecutive
