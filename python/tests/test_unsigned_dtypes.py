"""torch 2.15's barebones unsigned dtypes (uint16, uint32, uint64): what torch's CPU build
gives them, ratten gives them, and what it refuses ratten refuses with its error class and
text. The numpy tests run without torch; the differential ones skip when torch is absent."""

import numpy as np
import pytest

import ratten

UNSIGNED = ["uint16", "uint32", "uint64"]
NUMPY = {"uint16": np.uint16, "uint32": np.uint32, "uint64": np.uint64}
MAX = {"uint16": 2**16 - 1, "uint32": 2**32 - 1, "uint64": 2**64 - 1}


def _torch():
    return pytest.importorskip("torch")


# --- without torch ------------------------------------------------------------------------


@pytest.mark.parametrize("name", UNSIGNED)
def test_dtype_objects(name):
    d = getattr(ratten, name)
    assert str(d) == f"ratten.{name}" or str(d) == f"torch.{name}"
    assert not d.is_signed
    assert not d.is_floating_point and not d.is_complex
    assert d.itemsize == {"uint16": 2, "uint32": 4, "uint64": 8}[name]


@pytest.mark.parametrize("name", UNSIGNED)
def test_from_numpy_shares_memory(name):
    a = np.array([1, 2, 3], dtype=NUMPY[name])
    t = ratten.from_numpy(a)
    assert t.dtype == getattr(ratten, name)
    t[0] = 7
    assert a[0] == 7
    a[1] = 9
    assert t.tolist() == [7, 9, 3]
    b = ratten.as_tensor(a)
    b[2] = 5
    assert a[2] == 5


@pytest.mark.parametrize("name", UNSIGNED)
def test_numpy_round_trip_shares_memory(name):
    t = ratten.tensor([1, 2, MAX[name]], dtype=getattr(ratten, name))
    n = t.numpy()
    assert n.dtype == NUMPY[name]
    assert n.tolist() == [1, 2, MAX[name]]
    n[0] = 4
    assert t.tolist() == [4, 2, MAX[name]]
    assert np.asarray(t).dtype == NUMPY[name]
    back = ratten.from_numpy(n)
    assert back.tolist() == t.tolist()


@pytest.mark.parametrize("name", UNSIGNED)
def test_dlpack_round_trip(name):
    a = np.array([1, 2, MAX[name]], dtype=NUMPY[name])
    t = ratten.from_dlpack(a)
    assert t.dtype == getattr(ratten, name)
    assert t.tolist() == [1, 2, MAX[name]]
    n = np.from_dlpack(t)
    assert n.dtype == NUMPY[name]
    n[0] = 3
    assert t[0].item() == 3


def test_uint64_extremes_without_torch():
    t = ratten.tensor([2**64 - 1, 2**63, 0], dtype=ratten.uint64)
    assert t.tolist() == [2**64 - 1, 2**63, 0]
    assert t[0].item() == 2**64 - 1
    assert (t == 2**64 - 1).tolist() == [True, False, False]
    assert ratten.full((2,), -1, dtype=ratten.uint64).tolist() == [2**64 - 1] * 2
    assert ratten.full((1,), 2**63, dtype=ratten.uint64).tolist() == [2**63]


def test_reductions_sort_clamp_without_torch():
    t = ratten.tensor([3, 1, 2, 0], dtype=ratten.uint32)
    assert t.any().item() is True and t.all().item() is False
    assert t.sort().values.tolist() == [0, 1, 2, 3] and t.argsort().tolist() == [3, 1, 2, 0]
    assert ratten.unique(t).tolist() == [0, 1, 2, 3]
    assert t.clamp(1, 2).tolist() == [2, 1, 2, 1] and t.clamp(min=2).dtype == ratten.uint32
    # The difference is computed in float: 1 vs 3 is 2 apart, not 2**32 - 2.
    a, b = ratten.tensor([1, 200], dtype=ratten.uint8), ratten.tensor([3, 190], dtype=ratten.uint8)
    assert ratten.isclose(a, b, atol=2.0).tolist() == [True, False]
    r = ratten.zeros(100, dtype=ratten.uint16).random_(3, 7)
    v = r.to(ratten.int64)
    assert r.dtype == ratten.uint16 and 3 <= v.min().item() and v.max().item() < 7
    assert ratten.tensor(np.uint32(5)).dtype == ratten.uint32
    assert ratten.tensor([np.int16(1), np.int8(2)]).dtype == ratten.int16
    assert ratten.tensor(np.float64(2.0)).dtype == ratten.float64
    with pytest.raises(RuntimeError, match="attempted to promote UInt32 and Long"):
        ratten.tensor([np.uint32(5), 1])


def test_promotion_errors_without_torch():
    with pytest.raises(RuntimeError, match="Promotion for uint16, uint32, uint64 types"):
        ratten.promote_types(ratten.uint32, ratten.int64)
    assert ratten.promote_types(ratten.uint32, ratten.float32) == ratten.float32
    assert ratten.promote_types(ratten.uint64, ratten.uint64) == ratten.uint64
    with pytest.raises(NotImplementedError, match="\"add_stub\" not implemented for 'UInt32'"):
        ratten.tensor([1], dtype=ratten.uint32) + 1


# --- against torch ------------------------------------------------------------------------


def _run(lib, d, case):
    """Runs one case with `lib` (ratten or torch); a value, or the exception's class name
    and first line."""
    dtype = getattr(lib, d)
    try:
        r = case(lib, dtype)
    except Exception as e:  # noqa: BLE001 - the class and text are what is compared
        return ("raises", type(e).__name__, str(e).splitlines()[0] if str(e) else "")
    return _plain(r)


def _plain(r):
    if hasattr(r, "tolist") and hasattr(r, "dtype"):
        return ("tensor", str(r.dtype).split(".")[-1], r.tolist())
    if isinstance(r, (tuple, list)):
        return type(r).__name__, [_plain(x) for x in r]
    if hasattr(r, "is_signed"):
        return ("dtype", str(r).split(".")[-1])
    return r


def _a(lib, d):
    return lib.tensor([1, 2, 3], dtype=d)


CASES = {
    # creation
    "tensor": lambda L, d: L.tensor([0, 1, 5], dtype=d),
    "tensor neg": lambda L, d: L.tensor([-1], dtype=d),
    "tensor 2**40": lambda L, d: L.tensor([2**40], dtype=d),
    "tensor 2**63": lambda L, d: L.tensor([2**63], dtype=d),
    "tensor 2**64": lambda L, d: L.tensor([2**64], dtype=d),
    "tensor float": lambda L, d: L.tensor([1.5, 2.0], dtype=d),
    "from float16 negative": lambda L, d: L.tensor([-1.0, -3.7, 2.0], dtype=L.float16).to(d),
    "from bfloat16 negative": lambda L, d: L.tensor([-1.0, -3.7, 2.0] * 40, dtype=L.bfloat16).to(d),
    "tensor -1.5": lambda L, d: L.tensor([-1.5], dtype=d),
    "tensor bool": lambda L, d: L.tensor([True, False], dtype=d),
    "tensor 0-dim": lambda L, d: L.tensor(7, dtype=d),
    "zeros": lambda L, d: L.zeros(3, dtype=d),
    "ones": lambda L, d: L.ones(2, 2, dtype=d),
    "empty": lambda L, d: L.empty(3, dtype=d).shape,
    "full": lambda L, d: L.full((2,), 7, dtype=d),
    "full neg": lambda L, d: L.full((2,), -1, dtype=d),
    "full 2**40": lambda L, d: L.full((1,), 2**40, dtype=d),
    "full -2**40": lambda L, d: L.full((1,), -(2**40), dtype=d),
    "full 2**63": lambda L, d: L.full((1,), 2**63, dtype=d),
    "full 2**64": lambda L, d: L.full((1,), 2**64, dtype=d),
    "full 1.5": lambda L, d: L.full((1,), 1.5, dtype=d),
    "full -1.5": lambda L, d: L.full((1,), -1.5, dtype=d),
    "zeros_like": lambda L, d: L.zeros_like(_a(L, d)),
    "ones_like": lambda L, d: L.ones_like(_a(L, d)),
    "full_like": lambda L, d: L.full_like(_a(L, d), 4),
    "new_zeros": lambda L, d: _a(L, d).new_zeros(2),
    "new_full": lambda L, d: _a(L, d).new_full((2,), 3),
    "arange": lambda L, d: L.arange(5, dtype=d),
    "linspace": lambda L, d: L.linspace(0, 4, 5, dtype=d),
    "eye": lambda L, d: L.eye(3, dtype=d),
    "rand": lambda L, d: L.rand(3, dtype=d),
    "randperm": lambda L, d: L.randperm(3, dtype=d),
    # conversions
    "to float32": lambda L, d: _a(L, d).to(L.float32),
    "to float64": lambda L, d: L.tensor([1, 2**16 - 1], dtype=d).to(L.float64),
    "to int64": lambda L, d: L.tensor([2**16 - 1, 7], dtype=d).to(L.int64),
    "to int8": lambda L, d: L.tensor([300, 2**16 - 1], dtype=d).to(L.int8),
    "to uint8": lambda L, d: L.tensor([300, 5], dtype=d).to(L.uint8),
    "to bool": lambda L, d: L.tensor([0, 2], dtype=d).to(L.bool),
    "to half": lambda L, d: _a(L, d).to(L.float16),
    "to bfloat16": lambda L, d: L.tensor([1000, 70], dtype=d).to(L.bfloat16),
    "to complex64": lambda L, d: _a(L, d).to(L.complex64),
    "from int64": lambda L, d: L.tensor([-1, 2**40 + 5, 3]).to(d),
    "from int32 strided": lambda L, d: L.tensor([[-1, 2, 3], [4, 5, 6]], dtype=L.int32).t().to(d),
    "from float64": lambda L, d: L.tensor([1.5, -1.0, 65535.0, 70000.0]).to(d),
    "from float32": lambda L, d: L.tensor([1.5, -1.0, 3.0]).to(d),
    "from half": lambda L, d: L.tensor([1.0, 0.0, 1000.5], dtype=L.float16).to(d),
    "from bool": lambda L, d: L.tensor([True, False]).to(d),
    "from uint8": lambda L, d: L.tensor([255, 1], dtype=L.uint8).to(d),
    "uint64 to": lambda L, d: L.tensor([2**64 - 1, 2**63, 70000], dtype=L.uint64).to(d),
    "uint32 to": lambda L, d: L.tensor([2**32 - 1, 70000], dtype=L.uint32).to(d),
    "to same": lambda L, d: _a(L, d).to(d),
    "copy_ from float": lambda L, d: L.empty(3, dtype=d).copy_(L.tensor([1.0, 2.0, 3.0])),
    "copy_ into int64": lambda L, d: L.zeros(2, dtype=L.int64).copy_(L.tensor([9, 8], dtype=d)),
    "fill_": lambda L, d: L.empty(3, dtype=d).fill_(4),
    "fill_ neg": lambda L, d: L.empty(2, dtype=d).fill_(-1),
    "fill_ nan": lambda L, d: L.empty(2, dtype=d).fill_(float("nan")),
    "zero_": lambda L, d: _a(L, d).zero_(),
    "clone": lambda L, d: _a(L, d).clone(),
    "contiguous": lambda L, d: _a(L, d).view(3, 1).expand(3, 2).t().contiguous(),
    # scalars and printing
    "item": lambda L, d: L.tensor([2**16 - 1], dtype=d).item(),
    "tolist": lambda L, d: L.tensor([[1, 2], [3, 4]], dtype=d).tolist(),
    "int()": lambda L, d: int(L.tensor(3, dtype=d)),
    "float()": lambda L, d: float(L.tensor(3, dtype=d)),
    "bool()": lambda L, d: bool(L.tensor(3, dtype=d)),
    "str": lambda L, d: str(L.tensor([1, 2, 300], dtype=d)).replace("torch.", "ratten."),
    "repr 0-dim": lambda L, d: repr(L.tensor(5, dtype=d)).replace("torch.", "ratten."),
    "str 2-d": lambda L, d: str(L.ones(2, 3, dtype=d)).replace("torch.", "ratten."),
    "type()": lambda L, d: _a(L, d).type(),
    "element_size": lambda L, d: _a(L, d).element_size(),
    "is_floating_point": lambda L, d: _a(L, d).is_floating_point(),
    # comparisons
    "eq": lambda L, d: _a(L, d).eq(L.tensor([2, 2, 2], dtype=d)),
    "ne": lambda L, d: _a(L, d).ne(L.tensor([2, 2, 2], dtype=d)),
    "eq scalar": lambda L, d: _a(L, d) == 2,
    "ne scalar": lambda L, d: _a(L, d) != 2,
    "eq -1": lambda L, d: L.tensor([MAX[str(d).split(".")[-1]]], dtype=d) == -1,
    "eq 1.5": lambda L, d: _a(L, d) == 1.5,
    "eq float tensor": lambda L, d: _a(L, d) == L.tensor([1.0, 0.0, 3.0]),
    "eq 0-dim int64": lambda L, d: _a(L, d) == L.tensor(2),
    "eq int64": lambda L, d: _a(L, d) == L.tensor([1, 2, 3]),
    "eq uint8": lambda L, d: _a(L, d) == L.tensor([1, 2, 3], dtype=L.uint8),
    "lt": lambda L, d: _a(L, d) < 2,
    "le": lambda L, d: _a(L, d).le(_a(L, d)),
    "gt": lambda L, d: _a(L, d) > 2,
    "ge": lambda L, d: _a(L, d).ge(_a(L, d)),
    "equal": lambda L, d: L.equal(_a(L, d), _a(L, d)),
    # arithmetic
    "add": lambda L, d: _a(L, d) + _a(L, d),
    "add scalar": lambda L, d: _a(L, d) + 1,
    "sub": lambda L, d: _a(L, d) - _a(L, d),
    "mul": lambda L, d: _a(L, d) * _a(L, d),
    "mul scalar": lambda L, d: _a(L, d) * 2,
    "mul wrap": lambda L, d: L.tensor([2**15], dtype=d) * L.tensor([4], dtype=d),
    "mul -1": lambda L, d: _a(L, d) * -1,
    "mul float": lambda L, d: _a(L, d) * 1.5,
    "mul_": lambda L, d: _a(L, d).mul_(3),
    "div": lambda L, d: _a(L, d) / 2,
    "neg": lambda L, d: -_a(L, d),
    "abs": lambda L, d: _a(L, d).abs(),
    "pow": lambda L, d: _a(L, d) ** 2,
    "remainder": lambda L, d: _a(L, d) % 2,
    "floor_divide": lambda L, d: _a(L, d) // 2,
    "addcmul": lambda L, d: L.addcmul(_a(L, d), _a(L, d), _a(L, d)),
    "mean": lambda L, d: _a(L, d).mean(),
    "min": lambda L, d: _a(L, d).min(),
    "max": lambda L, d: _a(L, d).max(),
    "argmax": lambda L, d: _a(L, d).argmax(),
    "matmul": lambda L, d: _a(L, d) @ _a(L, d),
    "maximum": lambda L, d: L.maximum(_a(L, d), L.tensor([2, 2, 2], dtype=d)),
    "minimum": lambda L, d: L.minimum(_a(L, d), L.tensor([2, 2, 2], dtype=d)),
    "maximum big": lambda L, d: L.maximum(L.tensor([MAX[str(d).split(".")[-1]], 1], dtype=d), _a(L, d)[:2]),
    "bitwise_and": lambda L, d: _a(L, d) & L.tensor([3, 3, 1], dtype=d),
    "bitwise_or": lambda L, d: _a(L, d) | L.tensor([4, 4, 4], dtype=d),
    "bitwise_xor": lambda L, d: _a(L, d) ^ _a(L, d),
    "bitwise_and -1": lambda L, d: _a(L, d) & -1,
    "bitwise_not": lambda L, d: ~_a(L, d),
    "where": lambda L, d: L.where(L.tensor([True, False, True]), _a(L, d), _a(L, d) * 0),
    # reductions, sorting, clamping, comparisons and random ranges torch's CPU build has
    "any": lambda L, d: L.tensor([0, 0, 3], dtype=d).any(),
    "all": lambda L, d: L.tensor([1, 0, 3], dtype=d).all(),
    "any dim": lambda L, d: L.tensor([[0, 1], [0, 0]], dtype=d).any(1),
    "all dim": lambda L, d: L.tensor([[2, 1], [0, 7]], dtype=d).all(0),
    "sort": lambda L, d: L.tensor([3, 1, MAX[str(d).split(".")[-1]], 0], dtype=d).sort(),
    "sort descending": lambda L, d: L.tensor([3, 1, 2, 0], dtype=d).sort(descending=True),
    "argsort": lambda L, d: L.tensor([3, 1, 2, 0], dtype=d).argsort(),
    "msort": lambda L, d: L.msort(L.tensor([[3, 1], [2, 0]], dtype=d)),
    "unique": lambda L, d: L.unique(L.tensor([3, 1, 3, 0], dtype=d)),
    "unique counts": lambda L, d: L.unique(L.tensor([3, 1, 3, 0], dtype=d), return_inverse=True, return_counts=True),
    "unique_consecutive": lambda L, d: L.unique_consecutive(L.tensor([3, 3, 1, 1, 0], dtype=d)),
    "unique dim": lambda L, d: L.unique(L.tensor([[3, 0], [3, 1], [3, 0]], dtype=d), dim=0),
    "topk": lambda L, d: _a(L, d).topk(2),
    "kthvalue": lambda L, d: _a(L, d).kthvalue(1),
    "clamp": lambda L, d: L.tensor([3, 1, 2, 0], dtype=d).clamp(1, 2),
    "clamp min": lambda L, d: _a(L, d).clamp(min=2),
    "clamp_max": lambda L, d: _a(L, d).clamp(max=2),
    "clamp tensor": lambda L, d: _a(L, d).clamp(min=L.tensor([2, 2, 2], dtype=d)),
    "isclose": lambda L, d: L.isclose(L.tensor([3, 1, 2, 10], dtype=d), L.tensor([1, 3, 2, 11], dtype=d), atol=2.0),
    "isclose rtol": lambda L, d: L.isclose(L.tensor([3, 1, 2, 10], dtype=d), L.tensor([1, 3, 2, 11], dtype=d), rtol=0.5, atol=0.5),
    "isclose exact": lambda L, d: L.isclose(_a(L, d), _a(L, d), rtol=0, atol=0),
    "randint dtype": lambda L, d: L.randint(0, 5, (3,), dtype=d).dtype,
    "random_ range": lambda L, d: bool(((lambda t: t.random_(2, 9))(L.zeros(50, dtype=d)) >= 2).all()),
    "random_ full": lambda L, d: L.zeros(2, dtype=d).random_(),
    # numpy scalars keep their dtype
    # (torch refuses np.uint64 scalars with "an integer is required"; ratten takes them)
    "numpy scalar": lambda L, d: L.tensor(NUMPY[str(d).split(".")[-1]](5)) if d != L.uint64 else None,
    "numpy scalars": lambda L, d: L.tensor([NUMPY[str(d).split(".")[-1]](5)] * 2) if d != L.uint64 else None,
    "numpy scalar and int": lambda L, d: L.tensor([NUMPY[str(d).split(".")[-1]](5), 1]),
    # promotion
    "promote int64": lambda L, d: L.promote_types(d, L.int64),
    "promote bool": lambda L, d: L.promote_types(L.bool, d),
    "promote uint8": lambda L, d: L.promote_types(d, L.uint8),
    "promote float16": lambda L, d: L.promote_types(d, L.float16),
    "promote float64": lambda L, d: L.promote_types(L.float64, d),
    "promote complex64": lambda L, d: L.promote_types(d, L.complex64),
    "promote self": lambda L, d: L.promote_types(d, d),
    "promote uint16": lambda L, d: L.promote_types(d, L.uint16),
    "promote uint64": lambda L, d: L.promote_types(d, L.uint64),
    "result_type scalar": lambda L, d: L.result_type(_a(L, d), 1),
    "result_type float": lambda L, d: L.result_type(_a(L, d), 1.0),
    "result_type bool": lambda L, d: L.result_type(_a(L, d), True),
    "result_type 0-dim": lambda L, d: L.result_type(_a(L, d), L.tensor(1)),
    "result_type int64": lambda L, d: L.result_type(_a(L, d), L.tensor([1])),
    "can_cast to int64": lambda L, d: L.can_cast(d, L.int64),
    "can_cast from int64": lambda L, d: L.can_cast(L.int64, d),
    "can_cast from float": lambda L, d: L.can_cast(L.float32, d),
    "can_cast to bool": lambda L, d: L.can_cast(d, L.bool),
    # views, indexing, joins
    "index": lambda L, d: _a(L, d)[1],
    "slice": lambda L, d: _a(L, d)[1:],
    "setitem": lambda L, d: (lambda t: (t.__setitem__(0, 9), t)[1])(_a(L, d)),
    "view": lambda L, d: _a(L, d).view(3, 1),
    "reshape": lambda L, d: _a(L, d).reshape(1, 3),
    "t": lambda L, d: _a(L, d).view(3, 1).t(),
    "unsqueeze": lambda L, d: _a(L, d).unsqueeze(0),
    "narrow": lambda L, d: _a(L, d).narrow(0, 1, 2),
    "select": lambda L, d: _a(L, d).select(0, 2),
    "expand": lambda L, d: _a(L, d).view(3, 1).expand(3, 2),
    "as_strided": lambda L, d: _a(L, d).as_strided((2,), (1,)),
    "view dtype uint8": lambda L, d: _a(L, d).view(L.uint8),
    "int32 viewed": lambda L, d: L.tensor([-1, 5], dtype=L.int32).view(d),
    "cat": lambda L, d: L.cat([_a(L, d), _a(L, d)]),
    "cat int64": lambda L, d: L.cat([_a(L, d), L.tensor([1])]),
    "stack": lambda L, d: L.stack([_a(L, d), _a(L, d)]),
    "chunk": lambda L, d: _a(L, d).chunk(3),
    "split": lambda L, d: _a(L, d).split(2),
}


@pytest.mark.parametrize("d", UNSIGNED)
@pytest.mark.parametrize("case", sorted(CASES))
def test_matches_torch(case, d):
    torch = _torch()
    want = _run(torch, d, CASES[case])
    got = _run(ratten, d, CASES[case])
    assert got == want
