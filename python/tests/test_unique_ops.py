"""unique, unique_consecutive, searchsorted, bucketize, bincount and histc from Python with
torch's names and signatures: torch.functional's return conventions (a tuple only when the
inverse or the counts are asked for), methods, keyword arguments, out=, meta, error classes
and texts; and, when torch is installed, a differential test against it over shapes, dims,
dtypes, duplicates, NaN, signed zeros and transposed inputs."""

import itertools
import math
import warnings

import pytest

import ratten
from conftest import HAVE_TORCH, requires_torch

if HAVE_TORCH:
    import torch


def test_unique_return_conventions():
    x = ratten.tensor([3, 1, 2, 1, 0, 3])
    out = ratten.unique(x)
    assert isinstance(out, ratten.Tensor) and out.tolist() == [0, 1, 2, 3]
    v, inv = ratten.unique(x, return_inverse=True)
    assert inv.tolist() == [3, 1, 2, 1, 0, 3]
    v, c = ratten.unique(x, return_counts=True)
    assert c.tolist() == [1, 2, 1, 2]
    v, inv, c = x.unique(sorted=False, return_inverse=True, return_counts=True)
    assert v.tolist() == [0, 1, 2, 3] and inv.tolist() == [3, 1, 2, 1, 0, 3]
    # Positional flags, as torch.unique(input, sorted, return_inverse, return_counts, dim).
    v, inv = ratten.unique(x, True, True)
    assert inv.dtype == ratten.int64
    m = ratten.tensor([[1, 2], [3, 4], [1, 2]])
    assert ratten.unique(m, dim=0).tolist() == [[1, 2], [3, 4]]
    v, inv, c = m.unique(dim=1, return_inverse=True, return_counts=True)
    assert v.tolist() == [[1, 2], [3, 4], [1, 2]] and inv.tolist() == [0, 1] and c.tolist() == [1, 1]
    assert ratten.unique(ratten.tensor(5)).tolist() == [5]


def test_unique_consecutive_conventions():
    x = ratten.tensor([1, 1, 2, 2, 3, 1, 1, 2])
    assert ratten.unique_consecutive(x).tolist() == [1, 2, 3, 1, 2]
    v, inv = x.unique_consecutive(return_inverse=True)
    assert inv.tolist() == [0, 0, 1, 1, 2, 3, 3, 4]
    v, c = ratten.unique_consecutive(x, return_counts=True)
    assert c.tolist() == [2, 2, 1, 2, 1]
    m = ratten.tensor([[1, 1, 2], [3, 3, 4]])
    v, inv, c = ratten.unique_consecutive(m, True, True, 1)
    assert v.tolist() == [[1, 2], [3, 4]] and inv.tolist() == [0, 0, 1] and c.tolist() == [2, 1]


def test_unique_nan_and_signed_zero():
    nan = float("nan")
    v, c = ratten.unique(ratten.tensor([1.0, nan, 1.0, nan, -0.0, 0.0]), return_counts=True)
    vals = v.tolist()
    assert vals[:2] == [0.0, 1.0] and math.copysign(1, vals[0]) == -1
    assert all(math.isnan(e) for e in vals[2:]) and c.tolist() == [2, 2, 1, 1]


def test_searchsorted_and_bucketize_forms():
    b = ratten.tensor([1.0, 3.0, 5.0, 7.0, 9.0])
    v = ratten.tensor([[3.0, 6.0, 9.0], [3.0, 6.0, 9.0]])
    assert ratten.searchsorted(b, v).tolist() == [[1, 3, 4], [1, 3, 4]]
    assert ratten.searchsorted(b, v, right=True).tolist() == [[2, 3, 5], [2, 3, 5]]
    assert ratten.searchsorted(b, v, side="right").tolist() == [[2, 3, 5], [2, 3, 5]]
    r = ratten.searchsorted(b, v, out_int32=True)
    assert r.dtype == ratten.int32
    assert ratten.searchsorted(b, 6).tolist() == 3
    s = ratten.tensor([5.0, 1.0, 3.0])
    assert ratten.searchsorted(s, ratten.tensor([2.0, 4.0]), sorter=ratten.tensor([1, 2, 0])).tolist() == [1, 2]
    out = ratten.empty(0, dtype=ratten.int64)
    assert ratten.searchsorted(b, v, out=out) is out and out.shape == (2, 3)
    assert ratten.bucketize(v, b).tolist() == [[1, 3, 4], [1, 3, 4]]
    assert ratten.bucketize(v, b, right=True, out_int32=True).dtype == ratten.int32
    assert ratten.bucketize(3.5, ratten.tensor([1, 2, 3, 4])).tolist() == 3
    out = ratten.empty(0, dtype=ratten.int64)
    assert ratten.bucketize(v, b, out=out) is out
    with pytest.raises(RuntimeError, match="side can only be 'left' or 'right' but got middle"):
        ratten.searchsorted(b, v, side="middle")
    with pytest.raises(RuntimeError, match="boundaries tensor must be 1 dimension, but got dim\\(2\\)"):
        ratten.bucketize(v, v)
    with pytest.raises(NotImplementedError, match="\"searchsorted_out_cpu\" not implemented for 'Bool'"):
        ratten.searchsorted(ratten.tensor([False, True]), ratten.tensor([True]))


def test_bincount_and_histc_forms():
    x = ratten.tensor([1, 2, 1, 4])
    assert ratten.bincount(x).tolist() == [0, 2, 1, 0, 1]
    assert x.bincount(minlength=6).tolist() == [0, 2, 1, 0, 1, 0]
    r = x.bincount(weights=ratten.tensor([0.5, 1.0, 2.0, 4.0]))
    assert r.dtype == ratten.float32 and r.tolist() == [0.0, 2.5, 1.0, 0.0, 4.0]
    assert x.bincount(ratten.tensor([1, 1, 1, 1])).dtype == ratten.float64
    with pytest.raises(RuntimeError, match="bincount only supports 1-d non-negative integral inputs."):
        ratten.bincount(ratten.tensor([1, -1]))
    with pytest.raises(NotImplementedError, match="\"bincount_cpu\" not implemented for 'Float'"):
        ratten.bincount(ratten.tensor([1.0]))
    h = ratten.tensor([1.0, 2.0, 1.0, 2.5, 4.0])
    assert ratten.histc(h, bins=4, min=0, max=3).tolist() == [0.0, 2.0, 1.0, 1.0]
    assert h.histc(3).tolist() == [2.0, 2.0, 1.0]
    out = ratten.empty(0)
    assert ratten.histc(h, 3, out=out) is out and out.tolist() == [2.0, 2.0, 1.0]
    with pytest.raises(NotImplementedError, match="\"histogram_cpu\" not implemented for 'Long'"):
        ratten.histc(ratten.tensor([1, 2]))
    with pytest.raises(RuntimeError, match="torch.histc: max must be larger than min"):
        h.histc(4, min=3, max=1)


def test_meta():
    m = ratten.empty(5, device="meta")
    r = ratten.searchsorted(m, ratten.empty(2, 3, device="meta"))
    assert r.device.type == "meta" and r.shape == (2, 3) and r.dtype == ratten.int64
    assert ratten.bucketize(3, m).shape == ()
    h = ratten.histc(m, bins=7)
    assert h.shape == (7,) and h.dtype == ratten.float32
    for f in (
        lambda: ratten.unique(m),
        lambda: ratten.unique(m, dim=0),
        lambda: ratten.unique_consecutive(m),
        lambda: ratten.bincount(ratten.empty(3, dtype=ratten.int64, device="meta")),
    ):
        with pytest.raises(NotImplementedError, match="attempted to run this operator with Meta tensors"):
            f()


def test_non_contiguous_warning_is_a_python_warning():
    b = ratten.tensor([1.0, 3.0, 5.0])
    v = ratten.tensor([[1.0, 2.0], [3.0, 4.0]]).t()
    with warnings.catch_warnings(record=True):
        warnings.simplefilter("always")
        assert ratten.searchsorted(b, v).tolist() == [[0, 1], [1, 2]]


# ---------------------------------------------------------------------------------------------
# Differential tests against torch

SHAPES = [(0,), (1,), (7,), (3, 4), (2, 0, 3), (4, 3, 2), ()]
DTYPES = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32", "float64"]
SPECIALS = [float("nan"), -0.0, 0.0, float("inf")]


def _pair(shape, dtype, transposed, seed, low=-3, high=4):
    g = torch.Generator().manual_seed(seed)
    t = torch.randint(low, high, shape, generator=g).double()
    if dtype in ("float16", "bfloat16", "float32", "float64") and t.numel():
        pick = torch.randint(0, 4 * len(SPECIALS), shape, generator=g)
        for j, s in enumerate(SPECIALS):
            t[pick == j] = s
    if dtype == "bool":
        t = t > 0
    elif dtype == "uint8":
        t = (t - low).to(torch.uint8)
    else:
        t = t.to(getattr(torch, dtype))
    src = t.float() if dtype == "bfloat16" else t
    r = ratten.from_numpy(src.contiguous().numpy().copy()).to(getattr(ratten, dtype))
    if transposed and t.dim() >= 2:
        t = t.transpose(0, 1).contiguous().transpose(0, 1)
        r = r.transpose(0, 1).contiguous().transpose(0, 1)
    return t, r


def _flat(x):
    if x.dtype.is_floating_point:
        x = x.double()
    return x.reshape(-1).tolist()


def _same_values(want, got, what):
    assert len(want) == len(got), (what, want, got)
    for a, b in zip(want, got):
        if isinstance(a, float) and math.isnan(a):
            assert isinstance(b, float) and math.isnan(b), (what, want, got)
        else:
            assert a == b, (what, want, got)
            if isinstance(a, float):
                assert math.copysign(1, a) == math.copysign(1, b), (what, want, got)


def _same_tensor(want, got, what):
    assert tuple(want.shape) == tuple(got.shape), (what, want.shape, got.shape)
    assert str(want.dtype).replace("torch.", "") == str(got.dtype).replace("ratten.", ""), what
    _same_values(_flat(want), _flat(got), what)


def _call(mod, name, *args, **kwargs):
    try:
        return getattr(mod, name)(*args, **kwargs)
    except Exception as e:  # noqa: BLE001 - the class and text are compared
        return e


def _same_result(want, got, what):
    if isinstance(want, Exception):
        assert isinstance(got, Exception), (what, want, got)
        assert type(want).__name__ == type(got).__name__, (what, want, got)
        assert str(want).split("\n")[0] == str(got).split("\n")[0], (what, want, got)
        return
    assert not isinstance(got, Exception), (what, got)
    if isinstance(want, tuple):
        assert isinstance(got, tuple) and len(want) == len(got), (what, got)
        for w, g in zip(want, got):
            _same_tensor(w, g, what)
    else:
        _same_tensor(want, got, what)


def _has_signed_zero_tie(t):
    """-0.0 and 0.0 both present: torch's unstable sort may show either for their group."""
    if not t.dtype.is_floating_point:
        return False
    v = _flat(t)
    return any(e == 0 and math.copysign(1, e) < 0 for e in v) and any(
        e == 0 and math.copysign(1, e) > 0 for e in v
    )


@requires_torch
@pytest.mark.parametrize("shape,dtype", list(itertools.product(SHAPES, DTYPES)))
def test_unique_matches_torch(shape, dtype):
    for transposed in (False, True):
        t, r = _pair(shape, dtype, transposed, seed=len(shape) * 13 + DTYPES.index(dtype))
        tie = _has_signed_zero_tie(t)
        for flags in itertools.product((False, True), repeat=2):
            kw = dict(return_inverse=flags[0], return_counts=flags[1])
            what = (shape, dtype, transposed, kw)
            want = _call(torch, "unique", t, **kw)
            got = _call(ratten, "unique", r, **kw)
            if not tie:
                _same_result(want, got, what)
            want = _call(torch, "unique_consecutive", t, **kw)
            got = _call(ratten, "unique_consecutive", r, **kw)
            _same_result(want, got, what + ("consecutive",))
            for dim in range(-t.dim() - 1, t.dim() + 1):
                wd = _call(torch, "unique", t, dim=dim, **kw)
                gd = _call(ratten, "unique", r, dim=dim, **kw)
                nan_rows = t.dtype.is_floating_point and bool(torch.isnan(t).any())
                if not (tie or nan_rows):
                    _same_result(wd, gd, what + (dim,))
                wd = _call(torch, "unique_consecutive", t, dim=dim, **kw)
                gd = _call(ratten, "unique_consecutive", r, dim=dim, **kw)
                _same_result(wd, gd, what + (dim, "consecutive"))


@requires_torch
def test_unique_refusals_match_torch():
    t = torch.tensor([1j, 2j])
    r = ratten.tensor([1j, 2j])
    _same_result(_call(torch, "unique", t), _call(ratten, "unique", r), "complex")
    _same_result(_call(torch, "unique", t, dim=0), _call(ratten, "unique", r, dim=0), "complex dim")
    e = torch.zeros(0, 3)
    _same_result(_call(torch, "unique", e, dim=1), _call(ratten, "unique", ratten.zeros(0, 3), dim=1), "0 size")


@requires_torch
@pytest.mark.parametrize("dtype", DTYPES)
def test_searchsorted_matches_torch(dtype):
    seed = DTYPES.index(dtype)
    bt, br = _pair((9,), dtype, False, seed, low=-3, high=4)
    if dtype not in ("bool",):
        bt = torch.sort(bt).values
        br = br.sort().values
    for vdtype in ("int64", "float32", dtype):
        for shape, transposed in [((5,), False), ((3, 4), True), ((0,), False), ((), False)]:
            vt, vr = _pair(shape, vdtype, transposed, seed + 7)
            for kw in (
                {},
                {"right": True},
                {"side": "right"},
                {"side": "left"},
                {"out_int32": True},
                {"side": "left", "right": True},
            ):
                what = (dtype, vdtype, shape, kw)
                _same_result(
                    _call(torch, "searchsorted", bt, vt, **kw),
                    _call(ratten, "searchsorted", br, vr, **kw),
                    what,
                )
                if "side" not in kw:
                    _same_result(
                        _call(torch, "bucketize", vt, bt, **kw),
                        _call(ratten, "bucketize", vr, br, **kw),
                        what + ("bucketize",),
                    )
        for scalar in (2, 2.5, True):
            _same_result(
                _call(torch, "searchsorted", bt, scalar),
                _call(ratten, "searchsorted", br, scalar),
                (dtype, scalar),
            )
    # N-D boundaries with a sorter.
    bt = torch.tensor([[5.0, 1.0, 3.0], [2.0, 1.0, 0.0]])
    st = torch.tensor([[1, 2, 0], [2, 1, 0]])
    vt = torch.tensor([[2.0, 4.0], [1.5, 0.0]])
    br, sr, vr = (ratten.tensor(x.tolist()) for x in (bt, st, vt))
    _same_result(
        _call(torch, "searchsorted", bt, vt, sorter=st),
        _call(ratten, "searchsorted", br, vr, sorter=sr),
        "sorter",
    )
    for bad in ([[1, 2, 3], [0, 1, 2]], [[1, 2, -1], [0, 1, 2]]):
        _same_result(
            _call(torch, "searchsorted", bt, vt, sorter=torch.tensor(bad)),
            _call(ratten, "searchsorted", br, vr, sorter=ratten.tensor(bad)),
            ("bad sorter", bad),
        )


@requires_torch
@pytest.mark.parametrize("dtype", DTYPES + ["complex64"])
def test_bincount_and_histc_match_torch(dtype):
    if dtype == "complex64":
        t, r = torch.tensor([1 + 0j, 2 + 0j]), ratten.tensor([1 + 0j, 2 + 0j])
    else:
        t, r = _pair((40,), dtype, False, DTYPES.index(dtype), low=0, high=9)
    _same_result(_call(torch, "bincount", t), _call(ratten, "bincount", r), (dtype, "bincount"))
    _same_result(
        _call(torch, "bincount", t, minlength=12), _call(ratten, "bincount", r, minlength=12), dtype
    )
    li = torch.arange(40) % 7
    ri = ratten.tensor(li.tolist())
    if dtype != "complex64":
        _same_result(
            _call(torch, "bincount", li, weights=t), _call(ratten, "bincount", ri, weights=r), (dtype, "weights")
        )
    for kw in ({}, {"bins": 7}, {"bins": 5, "min": 1, "max": 4}, {"bins": 3, "min": 2, "max": 2}, {"bins": 0}):
        _same_result(_call(torch, "histc", t, **kw), _call(ratten, "histc", r, **kw), (dtype, kw))
