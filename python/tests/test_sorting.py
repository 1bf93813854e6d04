"""The sorting family from Python with torch's names and signatures: ``x.sort(dim, descending)``,
``stable=``, ``argsort``, ``msort``, ``topk``, ``kthvalue``, ``out=``, named-tuple returns,
error classes and texts; and, when torch is installed, a differential test against it over
shapes, dims, dtypes, NaN, signed zeros, ties and transposed inputs."""

import itertools
import math

import pytest

import ratten
from conftest import HAVE_TORCH, requires_torch

if HAVE_TORCH:
    import torch


def test_sort_forms_and_named_tuples():
    x = ratten.tensor([[3.0, 1.0, 2.0], [0.0, 5.0, 4.0]])
    r = x.sort()
    assert type(r).__name__ == "sort" and isinstance(r, ratten.return_types.sort)
    assert r.values.tolist() == [[1.0, 2.0, 3.0], [0.0, 4.0, 5.0]]
    assert r.indices.tolist() == [[1, 2, 0], [0, 2, 1]]
    v, i = ratten.sort(x, 0, descending=True)
    assert v.tolist() == [[3.0, 5.0, 4.0], [0.0, 1.0, 2.0]] and i.tolist() == [[0, 1, 1], [1, 0, 0]]
    r = ratten.sort(x, stable=True, dim=-1, descending=True)
    assert r.indices.tolist() == [[0, 2, 1], [1, 2, 0]]
    assert x.sort(stable=None).indices.tolist() == [[1, 2, 0], [0, 2, 1]]
    vo, io = ratten.empty(0), ratten.empty(0, dtype=ratten.int64)
    r = ratten.sort(x, 1, out=(vo, io))
    assert r.values is vo and r.indices is io and io.tolist() == [[1, 2, 0], [0, 2, 1]]
    assert x.argsort().tolist() == [[1, 2, 0], [0, 2, 1]]
    assert ratten.argsort(x, dim=0, descending=True).tolist() == [[0, 1, 1], [1, 0, 0]]
    assert x.argsort(stable=True, dim=1).tolist() == [[1, 2, 0], [0, 2, 1]]
    out = ratten.empty(0, dtype=ratten.int64)
    assert ratten.argsort(x, stable=True, out=out) is out
    assert x.msort().tolist() == [[0.0, 1.0, 2.0], [3.0, 5.0, 4.0]]
    assert ratten.msort(x, out=ratten.empty(0)).tolist() == [[0.0, 1.0, 2.0], [3.0, 5.0, 4.0]]


def test_nan_and_signed_zeros():
    nan = float("nan")
    x = ratten.tensor([0.0, -0.0, nan, 1.0, nan, -1.0])
    r = x.sort()
    v = r.values.tolist()
    assert v[:4] == [-1.0, 0.0, -0.0, 1.0] and math.copysign(1, v[2]) == -1
    assert all(math.isnan(e) for e in v[4:])
    assert r.indices.tolist() == [5, 0, 1, 3, 2, 4]
    assert x.sort(descending=True).indices.tolist() == [2, 4, 3, 0, 1, 5]
    t = x.topk(2)
    assert all(math.isnan(e) for e in t.values.tolist()) and t.indices.tolist() == [2, 4]
    assert x.topk(2, largest=False).indices.tolist() == [5, 0]
    assert x.kthvalue(5).indices.tolist() == 2


def test_topk_kthvalue_forms():
    x = ratten.tensor([[1.0, 6.0, 2.0], [5.0, 3.0, 4.0]])
    r = x.topk(2)
    assert type(r).__name__ == "topk"
    assert r.values.tolist() == [[6.0, 2.0], [5.0, 4.0]] and r.indices.tolist() == [[1, 2], [0, 2]]
    r = ratten.topk(x, 1, dim=0, largest=False)
    assert r.values.tolist() == [[1.0, 3.0, 2.0]]
    vo, io = ratten.empty(0), ratten.empty(0, dtype=ratten.int64)
    r = ratten.topk(x, 2, sorted=False, out=(vo, io))
    assert r.values is vo and sorted(vo.tolist()[0]) == [2.0, 6.0]
    k = x.kthvalue(2)
    assert type(k).__name__ == "kthvalue"
    assert k.values.tolist() == [2.0, 4.0] and k.indices.tolist() == [2, 2]
    k = ratten.kthvalue(x, 1, 0, keepdim=True)
    assert k.values.shape == (1, 3) and k.values.tolist() == [[1.0, 3.0, 2.0]]
    vo, io = ratten.empty(0), ratten.empty(0, dtype=ratten.int64)
    r = ratten.kthvalue(x, 3, out=(vo, io))
    assert r.values is vo and vo.tolist() == [6.0, 5.0]


def test_errors_are_torchs():
    x = ratten.tensor([[1.0, 2.0], [3.0, 4.0]])
    with pytest.raises(IndexError, match=r"Dimension out of range"):
        x.sort(2)
    with pytest.raises(TypeError, match="Sort does not support complex dtypes on CPU"):
        ratten.tensor([1j, 2j]).sort()
    with pytest.raises(TypeError, match="topk does not support complex dtypes on CPU"):
        ratten.tensor([1j, 2j]).topk(1)
    with pytest.raises(NotImplementedError, match="topk does not support bool dtypes on CPU"):
        ratten.tensor([True]).topk(1)
    with pytest.raises(RuntimeError, match="selected index k out of range"):
        x.topk(3)
    with pytest.raises(RuntimeError, match=r"kthvalue\(\): selected number k out of range"):
        x.kthvalue(0)
    with pytest.raises(IndexError, match=r"kthvalue\(\): Expected reduction dim 0"):
        ratten.empty(0, 3).kthvalue(1, 0)
    with pytest.raises(NotImplementedError, match="\"kthvalue_cpu\" not implemented for 'Bool'"):
        ratten.tensor([True, False]).kthvalue(1)
    with pytest.raises(RuntimeError, match="Expected out tensor to have dtype long int"):
        ratten.sort(x, out=(ratten.empty(0), ratten.empty(0, dtype=ratten.int32)))


def test_meta():
    m = ratten.empty(3, 4, device="meta")
    r = m.sort(0)
    assert r.values.shape == (3, 4) and r.values.device.type == "meta"
    assert r.indices.dtype == ratten.int64
    assert m.topk(2).values.shape == (3, 2)
    assert m.kthvalue(2).values.shape == (3,)
    assert m.argsort(stable=True).shape == (3, 4)


# ---------------------------------------------------------------------------------------------
# Differential tests against torch
# ---------------------------------------------------------------------------------------------

SHAPES = [(), (1,), (7,), (3, 5), (2, 3, 4), (0, 3), (4, 0), (300,), (2, 700)]
DTYPES = [
    "bool",
    "uint8",
    "int8",
    "int16",
    "int32",
    "int64",
    "float16",
    "bfloat16",
    "float32",
    "float64",
]
SPECIALS = [float("nan"), -0.0, 0.0, float("inf"), -float("inf")]


def _pair(shape, dtype, transposed, seed):
    g = torch.Generator().manual_seed(seed)
    t = torch.randint(-4, 5, shape, generator=g).double()
    if dtype in ("float16", "bfloat16", "float32", "float64") and t.numel():
        pick = torch.randint(0, 3 * len(SPECIALS), shape, generator=g)
        for j, s in enumerate(SPECIALS):
            t[pick == j] = s
    if dtype == "bool":
        t = t > 0
    elif dtype == "uint8":
        t = (t + 4).to(torch.uint8)
    else:
        t = t.to(getattr(torch, dtype))
    src = t.float() if dtype == "bfloat16" else t
    r = ratten.from_numpy(src.contiguous().numpy().copy()).to(getattr(ratten, dtype))
    if transposed and t.dim() >= 2:
        t = t.transpose(0, 1).contiguous().transpose(0, 1)
        r = r.transpose(0, 1).contiguous().transpose(0, 1)
    return t, r


def _flat(x):
    """Row-major Python values: floats for floating dtypes (signs of zero kept), ints else."""
    if x.dtype.is_floating_point:
        x = x.double()
    vals = x.reshape(-1).tolist()
    return vals


def _same_values(want, got, what, zero_signs=True):
    """Equal lists, NaN equal to NaN; with `zero_signs`, -0.0 differs from 0.0 (ties of topk
    and kthvalue may pick either)."""
    assert len(want) == len(got), what
    for a, b in zip(want, got):
        if isinstance(a, float) and math.isnan(a):
            assert isinstance(b, float) and math.isnan(b), (what, want, got)
        else:
            assert a == b, (what, want, got)
            if isinstance(a, float) and zero_signs:
                assert math.copysign(1, a) == math.copysign(1, b), (what, want, got)


def _meta_same(tr, rr):
    assert tuple(tr.shape) == tuple(rr.shape), (tr.shape, rr.shape)
    assert str(tr.dtype).replace("torch.", "") == str(rr.dtype).replace("ratten.", "")


def _call(mod, name, *args, **kwargs):
    try:
        return getattr(mod, name)(*args, **kwargs)
    except Exception as e:  # noqa: BLE001 - the class and text are compared
        return e


def _same_error(want, got):
    assert isinstance(got, Exception), (want, got)
    assert type(want).__name__ == type(got).__name__, (want, got)
    assert str(want).split("\n")[0] == str(got).split("\n")[0], (want, got)


def _gathered(t, dim, idx):
    """t's elements at the (int64) indices along dim, as _flat lists; 0-dim passes through."""
    if t.dim() == 0:
        return _flat(t)
    return _flat(torch.gather(t, dim, idx))


@requires_torch
@pytest.mark.parametrize("shape,dtype", list(itertools.product(SHAPES, DTYPES)))
def test_sorting_matches_torch(shape, dtype):
    for transposed in (False, True):
        t, r = _pair(shape, dtype, transposed, seed=len(shape) * 11 + DTYPES.index(dtype))
        dims = list(range(-max(t.dim(), 1), max(t.dim(), 1)))
        for dim, desc in itertools.product(dims, (False, True)):
            what = (shape, dtype, transposed, dim, desc)
            # sort: torch's stable order exactly (ratten's sorts are all stable).
            for stable in (False, True):
                want = _call(torch, "sort", t, dim=dim, descending=desc, stable=stable)
                got = _call(ratten, "sort", r, dim=dim, descending=desc, stable=stable)
                if isinstance(want, Exception):
                    _same_error(want, got)
                    continue
                assert not isinstance(got, Exception), (what, got)
                _meta_same(want.values, got.values)
                assert tuple(want.values.stride()) == tuple(got.values.stride()), what
                # Unstable, torch may order -0.0 and 0.0 either way.
                _same_values(_flat(want.values), _flat(got.values), what, stable)
                ref = torch.sort(t, dim=dim, descending=desc, stable=True).indices
                assert _flat(ref) == _flat(got.indices), what
            want = _call(torch, "argsort", t, dim=dim, descending=desc, stable=True)
            got = _call(ratten, "argsort", r, dim=dim, descending=desc, stable=True)
            if isinstance(want, Exception):
                _same_error(want, got)
            else:
                assert _flat(want) == _flat(got), what
            # topk: torch's values; indices that pick them (ties may go elsewhere).
            n = t.shape[dim] if t.dim() else 1
            for k, sorted_ in itertools.product(sorted({0, 1, n // 2, n, n + 1}), (True, False)):
                want = _call(torch, "topk", t, k, dim=dim, largest=desc, sorted=sorted_)
                got = _call(ratten, "topk", r, k, dim=dim, largest=desc, sorted=sorted_)
                if isinstance(want, Exception):
                    _same_error(want, got)
                    continue
                assert not isinstance(got, Exception), (what, k, got)
                _meta_same(want.values, got.values)
                gi = torch.tensor(_flat(got.indices), dtype=torch.int64).reshape(want.indices.shape)
                picked = _gathered(t, dim, gi)
                _same_values(picked, _flat(got.values), (what, k))
                if sorted_:
                    _same_values(_flat(want.values), _flat(got.values), (what, k), False)
                else:
                    key = lambda v: (math.isnan(v), v) if isinstance(v, float) else (False, v)
                    w = sorted(_flat(torch.sort(want.values, dim=dim).values), key=key)
                    g = sorted(_flat(got.values), key=key)
                    assert len(w) == len(g) and all(
                        (isinstance(a, float) and math.isnan(a) and math.isnan(b)) or a == b
                        for a, b in zip(w, g)
                    ), (what, k)
            # kthvalue: torch's values; an index that holds it.
            for k, keepdim in itertools.product(sorted({0, 1, (n + 1) // 2, n, n + 1}), (False, True)):
                want = _call(torch, "kthvalue", t, k, dim, keepdim)
                got = _call(ratten, "kthvalue", r, k, dim, keepdim)
                if isinstance(want, Exception):
                    _same_error(want, got)
                    continue
                assert not isinstance(got, Exception), (what, k, got)
                _meta_same(want.values, got.values)
                _same_values(_flat(want.values), _flat(got.values), (what, k), False)
                gi = torch.tensor(_flat(got.indices), dtype=torch.int64).reshape(want.indices.shape)
                if not keepdim and t.dim():
                    gi = gi.unsqueeze(dim)
                _same_values(_flat(got.values), _gathered(t, dim, gi), (what, k, "index"))


@requires_torch
def test_complex_is_refused_as_torch():
    t = torch.tensor([1j, 2j])
    r = ratten.tensor([1j, 2j])
    for name, args in [("sort", ()), ("argsort", ()), ("topk", (1,)), ("kthvalue", (1,)), ("msort", ())]:
        _same_error(_call(torch, name, t, *args), _call(ratten, name, r, *args))
