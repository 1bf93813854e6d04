"""The gather / scatter / index / masked operators from Python: functions, methods, in-place
and ``out=`` forms, ``t[idx]`` / ``t[idx] = v``; and, when torch is installed, a
differential test against it over shapes, dims, dtypes, strided inputs, duplicate indices,
error classes and texts, and meta shapes."""

import itertools

import numpy as np
import pytest

import ratten
from conftest import HAVE_TORCH, requires_torch

if HAVE_TORCH:
    import torch


def test_forms_without_torch():
    x = ratten.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    i = ratten.tensor([2, 0])
    assert x.index_select(1, i).tolist() == [[3.0, 1.0], [6.0, 4.0]]
    assert ratten.index_select(x, 0, ratten.tensor([1])).tolist() == [[4.0, 5.0, 6.0]]
    g = ratten.tensor([[0, 0], [1, 0]])
    assert x.gather(1, g).tolist() == [[1.0, 1.0], [5.0, 4.0]]
    assert ratten.gather(x, 1, g, sparse_grad=False).tolist() == [[1.0, 1.0], [5.0, 4.0]]
    out = ratten.empty(0)
    r = ratten.gather(x, 1, g, out=out)
    assert r is out and out.shape == (2, 2)
    z = ratten.zeros(2, 3)
    assert z.scatter_add(1, g, x[:, :2]).tolist() == [[3.0, 0.0, 0.0], [5.0, 4.0, 0.0]]
    z.scatter_(1, g, 7.0)
    assert z.tolist() == [[7.0, 0.0, 0.0], [7.0, 7.0, 0.0]]
    assert x.scatter_reduce(1, g, x[:, :2], "amax", include_self=False).tolist() == [
        [2.0, 2.0, 3.0],
        [5.0, 4.0, 6.0],
    ]
    assert x.take(ratten.tensor([-1, 0])).tolist() == [6.0, 1.0]
    m = x > 2.5
    assert x.masked_select(m).tolist() == [3.0, 4.0, 5.0, 6.0]
    assert x.masked_fill(m, 0.0).tolist() == [[1.0, 2.0, 0.0], [0.0, 0.0, 0.0]]
    assert ratten.nonzero(m).tolist() == [[0, 2], [1, 0], [1, 1], [1, 2]]
    assert ratten.argwhere(m).shape == (4, 2)
    y = x.clone()
    y[ratten.tensor([0, 0])] = ratten.tensor([9.0, 9.0, 9.0])
    assert y[0].tolist() == [9.0, 9.0, 9.0]
    y.index_put_((ratten.tensor([1, 1]),), ratten.tensor(1.0), accumulate=True)
    assert y[1].tolist() == [6.0, 7.0, 8.0]
    assert y[m].tolist() == [9.0, 6.0, 7.0, 8.0]
    y[m] = 0.0
    assert y.tolist() == [[9.0, 9.0, 0.0], [0.0, 0.0, 0.0]]
    with pytest.raises(IndexError, match="index out of range in self"):
        x.index_select(0, ratten.tensor([2]))
    with pytest.raises(RuntimeError, match="index 3 is out of bounds for dimension 1 with size 3"):
        x.gather(1, ratten.tensor([[3]]))
    with pytest.raises(NotImplementedError):
        ratten.empty(2, 2, device="meta").nonzero()


# ---------------------------------------------------------------------------------------------
# Differential tests against torch.

DTYPES = ["float32", "float64", "int64", "int32", "int8", "uint8", "bool", "float16"]


def _pair(shape, dtype, seed, strided=False):
    g = torch.Generator().manual_seed(seed)
    t = (torch.randn(shape, generator=g) * 4).round()
    if dtype == "bool":
        t = t > 0
    else:
        t = t.to(getattr(torch, dtype))
    if strided and t.dim() >= 2:
        t = t.transpose(0, -1).contiguous().transpose(0, -1)
    return t, _to_ratten(t)


def _to_ratten(t):
    r = ratten.from_numpy(t.contiguous().numpy().copy())
    if t.dim() >= 2 and not t.is_contiguous():
        # the same strides: rebuild the transposed layout
        r = ratten.from_numpy(t.transpose(0, -1).contiguous().numpy().copy()).transpose(0, -1)
    return r


def _same(r, t, strides=False):
    assert tuple(r.shape) == tuple(t.shape), (r.shape, t.shape)
    if strides:
        assert tuple(r.stride()) == tuple(t.stride()), (r.stride(), t.stride())
    assert str(r.dtype).split(".")[-1] == str(t.dtype).split(".")[-1]
    a = np.asarray(r.numpy())
    b = t.numpy()
    np.testing.assert_array_equal(a, b)


def _index(shape, dim, size_along, seed, low=0):
    g = torch.Generator().manual_seed(seed)
    ishape = list(shape)
    ishape[dim] = size_along
    for d in range(len(shape)):
        if d != dim:
            ishape[d] = max(1, shape[d] - (seed % 2))
    t = torch.randint(low, shape[dim], ishape, generator=g)
    return t, ratten.from_numpy(t.numpy().copy())


CASES = [((5,), 0), ((3, 4), 0), ((3, 4), 1), ((2, 3, 4), 1), ((2, 3, 4), -1), ((4, 1, 3), 0)]


@requires_torch
@pytest.mark.parametrize("shape,dim", CASES)
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("strided", [False, True])
def test_gather_scatter_match_torch(shape, dim, dtype, strided):
    t, r = _pair(shape, dtype, 1, strided)
    d = dim % len(shape)
    ti, ri = _index(shape, d, 5, 2)
    _same(r.gather(dim, ri), t.gather(dim, ti))
    _same(r.gather(dim, ri.int()), t.gather(dim, ti.int()))
    src_t, src_r = _pair(list(ti.shape), dtype, 3, strided)
    _same(r.scatter(dim, ri, src_r), t.scatter(dim, ti, src_t))
    _same(r.scatter(dim, ri, 1), t.scatter(dim, ti, 1))
    if dtype != "bool":
        _same(r.scatter_add(dim, ri, src_r), t.scatter_add(dim, ti, src_t))
    for reduce in ["sum", "prod", "mean", "amax", "amin"]:
        if dtype == "bool" and reduce == "mean":
            continue
        for inc in (True, False):
            want = t.scatter_reduce(dim, ti, src_t, reduce, include_self=inc)
            got = r.scatter_reduce(dim, ri, src_r, reduce, include_self=inc)
            if dtype == "float16" and reduce in ("mean", "prod", "sum"):
                np.testing.assert_allclose(
                    got.numpy().astype(np.float64), want.numpy().astype(np.float64), rtol=2e-3
                )
            else:
                _same(got, want)
    y_t, y_r = t.clone(), r.clone()
    if dtype != "bool":
        y_t.scatter_(dim, ti, src_t, reduce="multiply")
        y_r.scatter_(dim, ri, src_r, reduce="multiply")
        _same(y_r, y_t)


@requires_torch
@pytest.mark.parametrize("shape,dim", CASES)
@pytest.mark.parametrize("dtype", ["float32", "int64", "bool", "float64"])
@pytest.mark.parametrize("strided", [False, True])
def test_index_dim_ops_match_torch(shape, dim, dtype, strided):
    t, r = _pair(shape, dtype, 4, strided)
    d = dim % len(shape)
    n = shape[d]
    g = torch.Generator().manual_seed(5)
    ti = torch.randint(0, n, (6,), generator=g)
    ri = ratten.from_numpy(ti.numpy().copy())
    _same(r.index_select(dim, ri), t.index_select(dim, ti))
    _same(ratten.index_select(r, dim, ri.int()), torch.index_select(t, dim, ti.int()))
    sshape = list(shape)
    sshape[d] = 6
    st, sr = _pair(sshape, dtype, 6, strided)
    if dtype != "bool":
        _same(r.index_add(dim, ri, sr), t.index_add(dim, ti, st))
        _same(r.index_add(dim, ri, sr, alpha=3), t.index_add(dim, ti, st, alpha=3))
    uniq = torch.randperm(n, generator=g)[: min(n, 3)]
    ushape = list(shape)
    ushape[d] = len(uniq)
    ut, ur = _pair(ushape, dtype, 7, strided)
    _same(r.index_copy(dim, ratten.from_numpy(uniq.numpy().copy()), ur), t.index_copy(dim, uniq, ut))
    neg = ti - n
    _same(
        r.index_fill(dim, ratten.from_numpy(neg.numpy().copy()), 1),
        t.index_fill(dim, neg, 1),
    )
    _same(r.index_fill(dim, ri, ratten.tensor(0)), t.index_fill(dim, ti, torch.tensor(0)))
    flat = torch.randint(-t.numel(), t.numel(), (2, 3), generator=g)
    _same(r.take(ratten.from_numpy(flat.numpy().copy())), t.take(flat))


@requires_torch
@pytest.mark.parametrize("shape", [(5,), (3, 4), (2, 3, 4)])
@pytest.mark.parametrize("dtype", ["float32", "int32", "bool", "float64"])
@pytest.mark.parametrize("strided", [False, True])
def test_masked_and_nonzero_match_torch(shape, dtype, strided):
    t, r = _pair(shape, dtype, 8, strided)
    mt, mr = _pair(shape, "bool", 9, strided)
    _same(r.masked_select(mr), t.masked_select(mt))
    _same(r.masked_fill(mr, 1), t.masked_fill(mt, 1))
    _same(r.masked_fill(mr, ratten.tensor(0)), t.masked_fill(mt, torch.tensor(0)))
    src_t, src_r = _pair((t.numel(),), dtype, 10)
    _same(r.masked_scatter(mr, src_r), t.masked_scatter(mt, src_t))
    # a mask broadcast over the last dim
    m1t, m1r = mt[..., :1], mr[..., :1]
    _same(r.masked_fill(m1r, 0), t.masked_fill(m1t, 0))
    _same(r.masked_select(m1r), t.masked_select(m1t))
    _same(r.nonzero(), t.nonzero())
    assert tuple(r.nonzero().stride()) == tuple(t.nonzero().stride())
    _same(ratten.argwhere(r), torch.argwhere(t))
    _same(r[mr], t[mt])
    y_t, y_r = t.clone(), r.clone()
    y_t[mt] = src_t[: int(mt.sum())]
    y_r[mr] = src_r[: int(mt.sum())]
    _same(y_r, y_t)


@requires_torch
def test_advanced_indexing_matches_torch():
    t, r = _pair((3, 4, 5), "float32", 11)
    ti = lambda v: torch.tensor(v)  # noqa: E731
    ri = lambda v: ratten.tensor(v)  # noqa: E731
    cases = [
        lambda a, i: a[i([0, 2])],
        lambda a, i: a[:, i([1, -1])],
        lambda a, i: a[i([0, 1]), :, i([4, 0])],
        lambda a, i: a[i([[0], [2]]), i([1, 2])],
        lambda a, i: a[..., i([0, 0, 4])],
        lambda a, i: a[1:, i([2]), ::2],
        lambda a, i: a[i([2, 1]), i([[0], [1], [2]])],
    ]
    tt, rt = t.transpose(0, 1), r.transpose(0, 1)
    for f in cases:
        _same(f(r, ri), f(t, ti), strides=True)
        _same(f(rt, ri), f(tt, ti), strides=True)
    _same(rt[ri([3, 0]), ri([1, 1])], tt[ti([3, 0]), ti([1, 1])], strides=True)
    y_t, y_r = t.clone(), r.clone()
    vt = torch.arange(10.0).reshape(2, 5)
    vr = ratten.from_numpy(vt.numpy().copy())
    y_t.index_put_((ti([0, 0, 2]), ti([1, 1, 3])), torch.ones(5), accumulate=True)
    y_r.index_put_((ri([0, 0, 2]), ri([1, 1, 3])), ratten.ones(5), accumulate=True)
    _same(y_r, y_t)
    y_t.index_put_((ti([2, 0]), ti([1, 3])), vt)
    y_r.index_put_((ri([2, 0]), ri([1, 3])), vr)
    _same(y_r, y_t)
    _same(
        ratten.index_put(r, (ri([2, 2]),), ratten.ones(5), accumulate=True),
        torch.index_put(t, (ti([2, 2]),), torch.ones(5), accumulate=True),
    )


def _err(f):
    try:
        f()
    except Exception as e:  # noqa: BLE001
        return type(e).__name__, str(e).split("\n")[0]
    return None


@requires_torch
def test_errors_match_torch():
    t = torch.arange(12.0).reshape(3, 4)
    r = ratten.arange(12.0).reshape(3, 4)

    def both(f):
        return _err(lambda: f(r, ratten)), _err(lambda: f(t, torch))

    cases = [
        lambda x, m: x.index_select(0, m.tensor([0, 5])),
        lambda x, m: x.index_select(0, m.tensor([-1])),
        lambda x, m: x.index_select(1, m.tensor([4])),
        lambda x, m: x.index_select(0, m.tensor([[0]])),
        lambda x, m: x.index_select(0, m.tensor([0.0])),
        lambda x, m: x.gather(1, m.tensor([[4]])),
        lambda x, m: x.gather(1, m.tensor([[-1]])),
        lambda x, m: x.gather(1, m.tensor([0])),
        lambda x, m: x.gather(1, m.zeros(4, 5, dtype=m.int64)),
        lambda x, m: x.gather(1, m.tensor([[0.0]])),
        lambda x, m: x.scatter_add(1, m.tensor([[0.0]]), x),
        lambda x, m: x.scatter(1, m.tensor([[4]]), 1.0),
        lambda x, m: x.scatter(1, m.tensor([[0]]), m.ones(1, 1, dtype=m.float64)),
        lambda x, m: x.scatter_reduce(1, m.tensor([[0]]), m.ones(1, 1), reduce="foo"),
        lambda x, m: x.scatter_add(1, m.zeros(4, 4, dtype=m.int64), m.ones(4, 4)),
        lambda x, m: x.scatter_add(1, m.zeros(3, 4, dtype=m.int64), m.ones(2, 4)),
        lambda x, m: x.index_add(0, m.tensor([3]), m.ones(1, 4)),
        lambda x, m: x.index_add(0, m.tensor([-1]), m.ones(1, 4)),
        lambda x, m: x.index_add(0, m.tensor([0]), m.ones(2, 4)),
        lambda x, m: x.index_add(0, m.tensor([0]), m.ones(1, 5)),
        lambda x, m: x.index_add(0, m.tensor([0]), m.ones(1, 4, dtype=m.float64)),
        lambda x, m: x.index_copy(0, m.tensor([3]), m.ones(1, 4)),
        lambda x, m: x.index_copy(0, m.tensor([0, 1]), m.ones(3, 4)),
        lambda x, m: x.index_copy(0, m.tensor([0]), m.ones(1, 5)),
        lambda x, m: x.index_copy(0, m.tensor([0], dtype=m.int32), m.ones(1, 4)),
        lambda x, m: x.index_fill(0, m.tensor([3]), 1.0),
        lambda x, m: x.index_fill(0, m.tensor([0], dtype=m.int32), 1.0),
        lambda x, m: x.index_fill(0, m.tensor([0]), 1j),
        lambda x, m: x.take(m.tensor([12])),
        lambda x, m: x.take(m.tensor([-13])),
        lambda x, m: x.take(m.tensor([0], dtype=m.int32)),
        lambda x, m: x.masked_fill(m.ones(3, 4), 1.0),
        lambda x, m: x.masked_fill(m.ones(3, 4, dtype=m.bool), m.ones(2)),
        lambda x, m: x.masked_scatter(m.ones(3, 4, dtype=m.bool), m.ones(2)),
        lambda x, m: x.masked_scatter(m.ones(3, 4, dtype=m.bool), m.ones(12, dtype=m.float64)),
        lambda x, m: x.masked_select(m.ones(3, 4)),
        lambda x, m: x[m.tensor([3])],
        lambda x, m: x[:, m.tensor([4])],
        lambda x, m: x[m.tensor([[True]])],
        lambda x, m: x[m.tensor([0, 1]), m.tensor([0, 1, 2])],
        lambda x, m: x.index_put_((m.tensor([3]),), m.tensor(1.0)),
        lambda x, m: x.index_put_((m.tensor([1]),), m.tensor(1.0, dtype=m.float64)),
        lambda x, m: x.index_put_((m.tensor([1]),), m.tensor([1.0, 2.0])),
        lambda x, m: m.nonzero(x, out=m.empty(0, dtype=m.int32)),
        lambda x, m: m.masked_select(x, m.ones(3, 4, dtype=m.bool), out=m.empty(0, dtype=m.int32)),
    ]
    for k, f in enumerate(cases):
        got, want = both(f)
        assert want is not None, k
        assert got == want, (k, got, want)
    # nothing was written by the failed in-place calls
    y = r.clone()
    with pytest.raises(RuntimeError):
        y.scatter_(0, ratten.tensor([[0, 1, 3]]), 5.0)
    with pytest.raises(IndexError):
        y[ratten.tensor([0, 3])] = 5.0
    assert y.tolist() == r.tolist()


@requires_torch
def test_meta_matches_torch():
    def meta(m, *s, dtype=None):
        return m.empty(*s, device="meta", dtype=dtype or m.float32)

    cases = [
        lambda m: meta(m, 3, 4).index_select(0, meta(m, 2, dtype=m.int64)),
        lambda m: meta(m, 3, 4).gather(1, meta(m, 3, 7, dtype=m.int64)),
        lambda m: meta(m, 3, 4).scatter(0, meta(m, 2, 4, dtype=m.int64), meta(m, 2, 4)),
        lambda m: meta(m, 3, 4).scatter_add(0, meta(m, 2, 4, dtype=m.int64), meta(m, 2, 4)),
        lambda m: meta(m, 3, 4).scatter_reduce(0, meta(m, 2, 4, dtype=m.int64), meta(m, 2, 4), "amax"),
        lambda m: meta(m, 3, 4).index_add(0, meta(m, 2, dtype=m.int64), meta(m, 2, 4)),
        lambda m: meta(m, 3, 4).index_copy(0, meta(m, 2, dtype=m.int64), meta(m, 2, 4)),
        lambda m: meta(m, 3, 4).index_fill(0, meta(m, 2, dtype=m.int64), 1.0),
        lambda m: meta(m, 3, 4).take(meta(m, 5, dtype=m.int64)),
        lambda m: meta(m, 3, 4).masked_fill(meta(m, 3, 4, dtype=m.bool), 1.0),
        lambda m: meta(m, 3, 4)[meta(m, 2, dtype=m.int64)],
        lambda m: meta(m, 3, 4)[:, meta(m, 2, dtype=m.int64)],
    ]
    for f in cases:
        a, b = f(ratten), f(torch)
        assert a.is_meta and tuple(a.shape) == tuple(b.shape)
    for f in [
        lambda m: meta(m, 3, 4).nonzero(),
        lambda m: m.argwhere(meta(m, 3, 4)),
        lambda m: meta(m, 3, 4).masked_select(meta(m, 3, 4, dtype=m.bool)),
        lambda m: meta(m, 3, 4)[meta(m, 3, 4, dtype=m.bool)],
    ]:
        assert _err(lambda: f(ratten)) == _err(lambda: f(torch))
