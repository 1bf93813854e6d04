"""The reductions from Python with torch's names and signatures: ``x.sum(1)``,
``x.max(dim=0).values``, keyword arguments, ``out=``, named-tuple returns, error classes and
texts; and, when torch is installed, a differential test against it over shapes, dims,
keepdim, dtypes and strided inputs."""

import itertools
import math

import pytest

import ratten
from conftest import HAVE_TORCH, requires_torch

if HAVE_TORCH:
    import torch


def test_sum_forms():
    x = ratten.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    assert x.sum().item() == 21.0
    assert ratten.sum(x).item() == 21.0
    assert x.sum(1).tolist() == [6.0, 15.0]
    assert x.sum(dim=0).tolist() == [5.0, 7.0, 9.0]
    assert x.sum((0, 1)).item() == 21.0
    assert x.sum(dim=[-1], keepdim=True).shape == (2, 1)
    assert x.sum(0, dtype=ratten.float64).dtype == ratten.float64
    out = ratten.empty(0)
    r = ratten.sum(x, 1, out=out)
    assert r is out and out.tolist() == [6.0, 15.0]
    i = ratten.tensor([1, 2, 3], dtype=ratten.int32)
    assert i.sum().dtype == ratten.int64


def test_mean_prod_extrema():
    x = ratten.tensor([[1.0, 5.0], [3.0, 2.0]])
    assert x.mean().item() == 2.75
    assert x.mean(0).tolist() == [2.0, 3.5]
    assert x.prod(1).tolist() == [5.0, 6.0]
    assert x.prod().item() == 30.0
    assert x.amax(1).tolist() == [5.0, 3.0]
    assert x.amin(dim=(0, 1)).item() == 1.0
    assert x.max().item() == 5.0 and x.min().item() == 1.0
    assert x.argmax().item() == 1 and x.argmin(1).tolist() == [0, 1]


def test_named_tuple_returns():
    x = ratten.tensor([[1.0, 5.0], [3.0, 2.0]])
    r = x.max(dim=0)
    assert isinstance(r, tuple)
    assert type(r).__name__ == "max"
    assert r.values.tolist() == [3.0, 5.0]
    assert r.indices.tolist() == [1, 0]
    values, indices = ratten.min(x, 1)
    assert values.tolist() == [1.0, 2.0] and indices.tolist() == [0, 1]
    mm = ratten.aminmax(x)
    assert (mm.min.item(), mm.max.item()) == (1.0, 5.0)
    v, m = ratten.var_mean(x, 1)
    assert m.tolist() == [3.0, 2.5]
    vo, io = ratten.empty(0), ratten.empty(0, dtype=ratten.int64)
    r = ratten.max(x, 1, out=(vo, io))
    assert r.values is vo and r.indices is io


def test_all_any_count_nonzero_var_std_norm():
    b = ratten.tensor([[True, False], [True, True]])
    assert b.all().item() is False and b.any().item() is True
    assert b.all(1).tolist() == [False, True]
    assert ratten.count_nonzero(b).item() == 3
    assert ratten.count_nonzero(b, dim=0).tolist() == [2, 1]
    x = ratten.tensor([1.0, 2.0, 3.0, 4.0])
    assert x.var().item() == pytest.approx(5.0 / 3.0)
    assert x.std(unbiased=False).item() == pytest.approx(math.sqrt(1.25))
    assert x.var(correction=0).item() == pytest.approx(1.25)
    assert ratten.norm(x).item() == pytest.approx(math.sqrt(30.0))
    assert ratten.linalg.vector_norm(x, 1).item() == 10.0
    assert x.logsumexp(0).item() == pytest.approx(math.log(sum(math.exp(v) for v in range(1, 5))))
    assert ratten.nansum(ratten.tensor([1.0, float("nan"), 2.0])).item() == 3.0


def test_errors_are_torchs():
    x = ratten.tensor([[1, 2], [3, 4]])
    with pytest.raises(NotImplementedError, match=r"mean\(\): could not infer output dtype"):
        x.mean()
    with pytest.raises(IndexError, match=r"Dimension out of range"):
        x.sum(2)
    with pytest.raises(RuntimeError, match="dim 0 appears multiple times"):
        x.sum((0, 0))
    with pytest.raises(RuntimeError, match=r"Expected reduction dim to be specified"):
        ratten.empty(0).amax()
    with pytest.raises(IndexError, match=r"Expected reduction dim 0 to have non-zero size"):
        ratten.empty(0, 3).max(0)
    with pytest.raises(NotImplementedError, match="std and var only support"):
        x.var()
    with pytest.raises(TypeError, match=r"argmax\(\): does not support complex input"):
        ratten.tensor([1j]).argmax()


def test_meta_reductions():
    m = ratten.empty(2, 3, 4, device="meta")
    assert m.sum(1).shape == (2, 4)
    assert m.sum(1).device.type == "meta"
    r = m.max(dim=2)
    assert r.values.shape == (2, 3) and r.indices.dtype == ratten.int64
    assert m.var((0, 2), keepdim=True).shape == (1, 3, 1)


# ---------------------------------------------------------------------------------------------
# Differential tests against torch
# ---------------------------------------------------------------------------------------------

SHAPES = [(), (5,), (3, 4), (2, 3, 4), (4, 1, 3), (0, 3), (2, 0)]
DTYPES = ["float32", "float64", "int32", "int64", "bool", "float16", "bfloat16"]


def _pair(shape, dtype, transposed, seed):
    g = torch.Generator().manual_seed(seed)
    t = (torch.randn(shape, generator=g) * 4).round()
    if dtype == "bool":
        t = t > 0
    else:
        t = t.to(getattr(torch, dtype))
    if transposed and t.dim() >= 2:
        t = t.transpose(0, 1).contiguous().transpose(0, 1)
    # Through numpy (exact, any shape); bfloat16, which numpy lacks, through float32.
    src = t.float() if dtype == "bfloat16" else t
    r = ratten.from_numpy(src.contiguous().numpy().copy()).to(getattr(ratten, dtype))
    if transposed and t.dim() >= 2:
        r = r.transpose(0, 1).contiguous().transpose(0, 1)
    return t, r


def _same(tr, rr, rtol=1e-5, atol=1e-6):
    if isinstance(tr, Exception) or isinstance(rr, Exception):
        assert type(tr).__name__ == type(rr).__name__, (tr, rr)
        return
    if isinstance(tr, tuple):
        assert len(tr) == len(rr)
        for a, b in zip(tr, rr):
            _same(a, b, rtol, atol)
        return
    assert tuple(tr.shape) == tuple(rr.shape), (tr.shape, rr.shape)
    assert str(tr.dtype).replace("torch.", "") == str(rr.dtype).replace("ratten.", ""), (
        tr.dtype,
        rr.dtype,
    )
    want = tr.float()
    got = torch.tensor(rr.float().tolist() if rr.dim() else rr.float().item()).reshape(want.shape)
    assert torch.allclose(got, want, rtol=rtol, atol=atol, equal_nan=True), (want, got)


def _as_torch(rr):
    return torch.tensor(rr.float().tolist() if rr.dim() else rr.float().item())


def _call(mod, name, x, *args, **kwargs):
    try:
        return getattr(mod, name)(x, *args, **kwargs)
    except Exception as e:  # noqa: BLE001 - the class is compared
        return e


CALLS = [
    ("sum", (), {}),
    ("sum", (0,), {}),
    ("sum", ((0, -1),), {"keepdim": True}),
    ("sum", (-1,), {"dtype": "float64"}),
    ("nansum", (), {}),
    ("mean", (), {}),
    ("mean", (0,), {"keepdim": True}),
    ("prod", (), {}),
    ("prod", (-1,), {}),
    ("amax", (), {}),
    ("amax", (0,), {}),
    ("amin", ((0, -1),), {}),
    ("max", (), {}),
    ("min", (0,), {}),
    ("max", (-1,), {"keepdim": True}),
    ("argmax", (), {}),
    ("argmin", (0,), {}),
    ("all", (), {}),
    ("any", (0,), {}),
    ("count_nonzero", (), {}),
    ("var", (), {}),
    ("std", (0,), {"correction": 0}),
    ("var_mean", (-1,), {}),
    ("logsumexp", (0,), {}),
    ("aminmax", (), {}),
    ("cumsum", (0,), {}),
    ("cumsum", (-1,), {"dtype": "float64"}),
    ("cumprod", (-1,), {}),
    ("cummax", (0,), {}),
    ("cummin", (-1,), {}),
    ("logcumsumexp", (0,), {}),
    ("norm", (), {}),
    ("norm", (1,), {"dim": 0}),
    ("std_mean", (), {"correction": 0}),
]


@requires_torch
@pytest.mark.parametrize("shape,dtype", list(itertools.product(SHAPES, DTYPES)))
def test_reductions_match_torch(shape, dtype):
    for transposed in (False, True):
        t, r = _pair(shape, dtype, transposed, seed=len(shape) * 7 + DTYPES.index(dtype))
        for name, args, kwargs in CALLS:
            tkw = dict(kwargs)
            rkw = dict(kwargs)
            if "dtype" in kwargs:
                tkw["dtype"] = getattr(torch, kwargs["dtype"])
                rkw["dtype"] = getattr(ratten, kwargs["dtype"])
            want = _call(torch, name, t, *args, **tkw)
            got = _call(ratten, name, r, *args, **rkw)
            loose = dtype in ("float16", "bfloat16")
            if loose and name == "prod" and not isinstance(want, Exception):
                # A half product overflows or not depending on the order of the products.
                if not (torch.isfinite(want).all() and torch.isfinite(_as_torch(got)).all()):
                    continue
            _same(want, got, rtol=1e-2 if loose else 1e-5, atol=1e-2 if loose else 1e-5)


def test_warnings_are_python_warnings():
    with pytest.warns(UserWarning, match=r"var\(\): degrees of freedom is <= 0"):
        ratten.tensor([1.0]).var()
    out = ratten.empty(3)
    with pytest.warns(UserWarning, match="was resized"):
        ratten.add(ratten.ones(2), 1, out=out)
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(UserWarning):
            ratten.tensor([1.0]).std()


def test_cumulative_ops():
    x = ratten.tensor([[1, 2, 3], [4, 5, 6]])
    assert x.cumsum(1).tolist() == [[1, 3, 6], [4, 9, 15]]
    assert x.cumsum(0).dtype == ratten.int64
    assert x.cumprod(dim=1).tolist() == [[1, 2, 6], [4, 20, 120]]
    r = ratten.tensor([1.0, 3.0, 2.0]).cummax(0)
    assert r.values.tolist() == [1.0, 3.0, 3.0] and r.indices.tolist() == [0, 1, 1]
    y = ratten.tensor([0.0, 0.0])
    assert y.logcumsumexp(0).tolist()[1] == pytest.approx(math.log(2.0))
    y.cumsum_(0)
    assert y.tolist() == [0.0, 0.0]


def test_isclose_allclose_equal():
    a = ratten.tensor([1.0, 2.0, float("nan")])
    b = ratten.tensor([1.0 + 1e-7, 2.5, float("nan")])
    assert ratten.isclose(a, b).tolist() == [True, False, False]
    assert a.isclose(b, equal_nan=True).tolist() == [True, False, True]
    assert ratten.allclose(a, b, rtol=0.5, equal_nan=True) is True
    assert a.allclose(b) is False
    assert ratten.equal(a[:2], a[:2]) is True
    assert a.equal(b) is False
    with pytest.raises(RuntimeError, match="did not match"):
        ratten.isclose(a, ratten.tensor([1, 2, 3]))


@requires_torch
def test_isclose_matches_torch():
    for rtol, atol, equal_nan in [(1e-5, 1e-8, False), (0.1, 0.0, True), (0.0, 0.0, False)]:
        x = [0.0, 1.0, -1.0, float("nan"), float("inf"), 1e-9, 100.0]
        y = [1e-9, 1.05, -1.0, float("nan"), float("inf"), 0.0, 100.5]
        want = torch.isclose(torch.tensor(x), torch.tensor(y), rtol, atol, equal_nan).tolist()
        got = ratten.isclose(ratten.tensor(x), ratten.tensor(y), rtol, atol, equal_nan).tolist()
        assert got == want
