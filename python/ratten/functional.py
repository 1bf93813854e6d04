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


_einsum = _functions["einsum"]
_tensordot = _functions["tensordot"]
__all__ += ["einsum", "tensordot"]


def _sublist_to_equation(operands):
    """torch.einsum's sublist format: ``einsum(op1, [0, 1], op2, [1, 2], [0, 2])``."""
    def subscript(i):
        if i is Ellipsis:
            return "..."
        if 0 <= i < 26:
            return chr(ord("A") + i)
        if 26 <= i < 52:
            return chr(ord("a") + i - 26)
        raise ValueError(f"einsum(): subscript in subscript list is not within the valid range [0, 52)")

    ops = list(operands)
    tensors, parts = [], []
    while len(ops) >= 2:
        tensors.append(ops.pop(0))
        parts.append("".join(subscript(s) for s in ops.pop(0)))
    equation = ",".join(parts)
    if ops:
        equation += "->" + "".join(subscript(s) for s in ops[0])
    return equation, tensors


def einsum(*args):
    """einsum(equation, *operands) -> Tensor

    Sums the product of the elements of ``operands`` along the dimensions given by the Einstein
    summation ``equation`` (torch's grammar: ``a-zA-Z`` subscripts, ``...`` for broadcast
    dimensions, ``->`` for an explicit output). The operands may also be one list, or the
    sublist format ``einsum(op1, sub1, op2, sub2, [out_sub])``."""
    if len(args) < 2:
        raise ValueError(
            "einsum(): must specify the equation string and at least one operand, or at least "
            "one operand and its subscripts list"
        )
    if isinstance(args[0], str):
        equation, operands = args[0], list(args[1:])
        if len(operands) == 1 and isinstance(operands[0], (list, tuple)):
            operands = list(operands[0])
    else:
        equation, operands = _sublist_to_equation(args)
    return _einsum(equation, operands)


def tensordot(a, b, dims=2, out=None):
    """tensordot(a, b, dims=2, out=None) -> Tensor

    Contracts ``a`` and ``b`` over ``dims``: the last ``dims`` dimensions of ``a`` with the first
    of ``b`` (an int), or the dimensions listed in ``dims = (dims_a, dims_b)``."""
    if not isinstance(dims, (tuple, list, int)) and not hasattr(dims, "tolist"):
        raise RuntimeError(
            "tensordot expects dims to be int or tuple[list[int], list[int]] or "
            f"list[list[int]] containing two lists, but got dims={dims}"
        )
    if hasattr(dims, "tolist") and not isinstance(dims, (tuple, list, int)):
        dims = dims.tolist()
    if isinstance(dims, int):
        if dims < 0:
            raise RuntimeError(f"tensordot expects dims >= 0, but got dims={dims}")
        if dims > min(a.dim(), b.dim()):
            raise RuntimeError(f"tensordot expects dims < ndim_a or ndim_b, but got dims={dims}")
        dims_a, dims_b = list(range(-dims, 0)), list(range(dims))
    else:
        dims_a, dims_b = dims
        dims_a = [dims_a] if isinstance(dims_a, int) else list(dims_a)
        dims_b = [dims_b] if isinstance(dims_b, int) else list(dims_b)
    if out is None:
        return _tensordot(a, b, dims_a, dims_b)
    return _tensordot(a, b, dims_a, dims_b, out=out)
