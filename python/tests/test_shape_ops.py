"""The shape operators from Python with torch's names and signatures: ``cat`` (and
``concat``, ``concatenate``), ``stack``, ``hstack``, ``vstack`` (``row_stack``), ``flip``,
``roll``, ``repeat``, ``tile``, ``repeat_interleave``, ``tril`` / ``triu`` (functional,
in-place, ``out=``); the out= resize warning through Python's ``warnings``; and, when torch is
installed, a differential test against it over shapes, dims, dtypes, strided and transposed
inputs, error texts and meta shapes."""

import itertools
import warnings

import numpy as np
import pytest

import ratten
from conftest import HAVE_TORCH, requires_torch

if HAVE_TORCH:
    import torch


def test_forms_without_torch():
    a = ratten.tensor([[1, 2, 3], [4, 5, 6]])
    b = ratten.tensor([[0.5, 1.5, 2.5], [3.5, 4.5, 5.5]])
    r = ratten.cat([a, b])
    assert r.dtype == ratten.float32 and r.shape == (4, 3)
    assert r.tolist()[2] == [0.5, 1.5, 2.5]
    assert ratten.cat((a, a), dim=-1).tolist() == [[1, 2, 3, 1, 2, 3], [4, 5, 6, 4, 5, 6]]
    assert ratten.cat(tensors=[a, a], dim=1).shape == (2, 6)
    assert ratten.concat([a, a]).shape == (4, 3) and ratten.concatenate([a, a], 1).shape == (2, 6)
    # the legacy rule: a (0,) tensor is skipped, but its dtype promotes
    r = ratten.cat([ratten.empty(0, dtype=ratten.float64), a], 1)
    assert r.dtype == ratten.float64 and r.tolist() == [[1, 2, 3], [4, 5, 6]]
    out = ratten.empty(0, dtype=ratten.float64)
    assert ratten.cat([a, a], out=out) is out and out.shape == (4, 3)

    s = ratten.stack([a, a], 1)
    assert s.shape == (2, 2, 3) and s[:, 1].tolist() == a.tolist()
    assert ratten.stack([a, a], dim=-1).shape == (2, 3, 2)
    out = ratten.empty(0, dtype=ratten.int64)
    assert ratten.stack([a, a], out=out) is out and out.shape == (2, 2, 3)
    one = ratten.tensor([1, 2])
    assert ratten.hstack([one, one]).tolist() == [1, 2, 1, 2]
    assert ratten.hstack([a, a]).shape == (2, 6)
    assert ratten.vstack([one, one]).tolist() == [[1, 2], [1, 2]]
    assert ratten.row_stack([a, a]).shape == (4, 3)
    out = ratten.empty(0, dtype=ratten.int64)
    assert ratten.vstack([a, a], out=out) is out and ratten.hstack([a], out=out) is out

    assert a.flip(0).tolist() == [[4, 5, 6], [1, 2, 3]]
    assert ratten.flip(a, [0, 1]).tolist() == [[6, 5, 4], [3, 2, 1]]
    assert a.flip(-1).tolist() == [[3, 2, 1], [6, 5, 4]]
    assert a.roll(1).tolist() == [[6, 1, 2], [3, 4, 5]]
    assert ratten.roll(a, 1, 1).tolist() == [[3, 1, 2], [6, 4, 5]]
    assert a.roll((1, -1), (0, 1)).tolist() == [[5, 6, 4], [2, 3, 1]]
    assert a.roll(shifts=-1, dims=1).tolist() == [[2, 3, 1], [5, 6, 4]]
    assert a.repeat(1, 2).tolist() == [[1, 2, 3, 1, 2, 3], [4, 5, 6, 4, 5, 6]]
    assert a.repeat((2, 1, 1)).shape == (2, 2, 3)
    assert ratten.tile(one, (2,)).tolist() == [1, 2, 1, 2] and a.tile(2).shape == (2, 6)
    assert ratten.repeat_interleave(ratten.tensor([1, 0, 2])).tolist() == [0, 2, 2]
    assert one.repeat_interleave(2).tolist() == [1, 1, 2, 2]
    assert a.repeat_interleave(ratten.tensor([1, 2]), dim=0).tolist() == [
        [1, 2, 3],
        [4, 5, 6],
        [4, 5, 6],
    ]
    assert ratten.repeat_interleave(a, 2, dim=1, output_size=6).shape == (2, 6)

    m = ratten.ones(3, 3)
    assert m.tril().tolist() == [[1, 0, 0], [1, 1, 0], [1, 1, 1]]
    assert ratten.triu(m, 1).tolist() == [[0, 1, 1], [0, 0, 1], [0, 0, 0]]
    assert ratten.tril(m, diagonal=-1).sum().item() == 3
    y = m.clone()
    assert y.triu_(-1) is y and y.sum().item() == 8
    out = ratten.empty(3, 3)
    assert ratten.tril(m, out=out) is out and out.sum().item() == 6


def test_errors_without_torch():
    a = ratten.ones(2, 3)
    with pytest.raises(RuntimeError, match=r"zero-dimensional tensor \(at position 1\)"):
        ratten.cat([a, ratten.tensor(1.0)])
    with pytest.raises(IndexError, match="Dimension out of range"):
        ratten.cat([a, a], 2)
    with pytest.raises(TypeError, match="can't be cast to the desired output type Long"):
        ratten.cat([a, a], out=ratten.empty(4, 3, dtype=ratten.int64))
    with pytest.raises(RuntimeError, match="stack expects each tensor to be equal size"):
        ratten.stack([a, ratten.ones(3, 2)])
    with pytest.raises(RuntimeError, match="dim 0 appears multiple times"):
        a.flip(0, -2)
    with pytest.raises(RuntimeError, match="shifts and dimensions must align"):
        a.roll((1, 2), 0)
    with pytest.raises(RuntimeError, match="Number of dimensions of repeat dims"):
        a.repeat(2)
    with pytest.raises(RuntimeError, match="tril: input tensor must have at least 2 dimensions"):
        ratten.ones(3).tril()
    with pytest.raises(NotImplementedError, match="not implemented for 'Float'"):
        ratten.repeat_interleave(ratten.ones(2))


def test_out_resize_warns_through_warnings():
    a = ratten.ones(2, 3)
    out = ratten.empty(5)
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        ratten.cat([a, a], out=out)
        ratten.tril(a, out=ratten.empty(1))
    assert len(w) == 2 and issubclass(w[0].category, UserWarning)
    assert "An output with one or more elements was resized" in str(w[0].message)
    assert out.shape == (4, 3)


def test_meta_without_torch():
    x = ratten.empty(2, 3, device="meta")
    for r, shape in [
        (ratten.cat([x, x], 1), (2, 6)),
        (ratten.stack([x, x]), (2, 2, 3)),
        (ratten.hstack([x, x]), (2, 6)),
        (ratten.vstack([x, x]), (4, 3)),
        (x.flip(0), (2, 3)),
        (x.roll(1, 1), (2, 3)),
        (x.repeat(2, 2), (4, 6)),
        (x.tile(3), (2, 9)),
        (x.tril(), (2, 3)),
        (x.repeat_interleave(2, dim=0), (4, 3)),
    ]:
        assert r.device.type == "meta" and tuple(r.shape) == shape
    reps = ratten.empty(2, dtype=ratten.int64, device="meta")
    with pytest.raises(RuntimeError, match="without output_size"):
        ratten.repeat_interleave(reps)
    assert ratten.repeat_interleave(reps, output_size=4).shape == (4,)


def test_large_cat_at_both_thread_counts():
    before = ratten.get_num_threads()
    a = ratten.arange(600 * 1000, dtype=ratten.float32).reshape(600, 1000)
    b = -a
    want0 = np.concatenate([a.numpy(), b.numpy()], 0)
    want1 = np.concatenate([a.numpy(), b.numpy()], 1)
    try:
        for threads in (1, 2):
            ratten.set_num_threads(threads)
            np.testing.assert_array_equal(ratten.cat([a, b], 0).numpy(), want0)
            np.testing.assert_array_equal(ratten.cat([a, b], 1).numpy(), want1)
    finally:
        ratten.set_num_threads(before)


# ---------------------------------------------------------------------------------------------
# Differential tests against torch.

DTYPES = ["float32", "float64", "int64", "int32", "uint8", "bool", "float16", "complex64"]


def _pair(shape, dtype, seed, layout="contiguous"):
    """The same values as a torch and a ratten tensor, laid out alike: contiguous, transposed
    (stored with the first and last dims swapped) or sliced (every other element of the last
    dim)."""
    g = torch.Generator().manual_seed(seed)
    base = list(shape)
    if layout == "sliced" and base and 0 not in base:
        base[-1] *= 2
    t = (torch.randn(base, generator=g) * 4).round()
    if dtype == "bool":
        t = t > 0
    else:
        t = t.to(getattr(torch, dtype))
    if t.numel() == 0:
        # torch's layout games leave an empty tensor's strides as they were; numpy's do not.
        layout = "contiguous"
    if layout == "transposed" and t.dim() >= 2:
        stored = t.transpose(0, -1).contiguous()
        r = ratten.from_numpy(stored.numpy().copy()).transpose(0, -1)
        return stored.transpose(0, -1), r
    r = ratten.from_numpy(t.numpy().copy())
    if layout == "sliced" and t.dim() >= 1:
        return t[..., ::2], r[..., ::2]
    return t, r


def _same(r, t, strides=False):
    assert tuple(r.shape) == tuple(t.shape), (r.shape, t.shape)
    if strides:
        assert tuple(r.stride()) == tuple(t.stride()), (r.stride(), t.stride())
    assert str(r.dtype).split(".")[-1] == str(t.dtype).split(".")[-1], (r.dtype, t.dtype)
    np.testing.assert_array_equal(np.asarray(r.numpy()), t.numpy())


LAYOUTS = ["contiguous", "transposed", "sliced"]
SHAPES = [(5,), (3, 4), (2, 3, 4), (0, 3), (4, 1, 3)]


@requires_torch
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("layout", LAYOUTS)
def test_cat_stack_match_torch(shape, layout):
    for d in range(-len(shape), len(shape)):
        for k, (dt1, dt2) in enumerate([("float32", "float32"), ("int32", "float64"), ("bool", "uint8")]):
            other = list(shape)
            other[d] = 2
            t1, r1 = _pair(shape, dt1, k, layout)
            t2, r2 = _pair(other, dt2, k + 10, layout)
            _same(ratten.cat([r1, r2, r1], d), torch.cat([t1, t2, t1], d), strides=True)
            _same(ratten.cat([r1], d), torch.cat([t1], d), strides=True)
            _same(ratten.stack([r1, r1], d), torch.stack([t1, t1], d), strides=True)
            _same(ratten.stack([r1, r1], -1), torch.stack([t1, t1], -1), strides=True)
            out_r, out_t = ratten.empty(0, dtype=ratten.float64), torch.empty(0, dtype=torch.float64)
            _same(ratten.cat([r2, r1], d, out=out_r), torch.cat([t2, t1], d, out=out_t))
    t, r = _pair(shape, "float32", 3, layout)
    _same(ratten.hstack([r, r]), torch.hstack([t, t]), strides=True)
    _same(ratten.vstack([r, r]), torch.vstack([t, t]), strides=True)
    e_t, e_r = torch.empty(0, dtype=torch.float64), ratten.empty(0, dtype=ratten.float64)
    _same(ratten.cat([e_r, r, e_r], -1), torch.cat([e_t, t, e_t], -1), strides=True)


@requires_torch
@pytest.mark.parametrize("shape", SHAPES + [()])
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("layout", LAYOUTS)
def test_flip_roll_repeat_match_torch(shape, dtype, layout):
    t, r = _pair(shape, dtype, 5, layout)
    nd = len(shape)
    dims_sets = [()] + [c for k in range(1, nd + 1) for c in itertools.combinations(range(nd), k)]
    for dims in dims_sets:
        _same(r.flip(dims), t.flip(dims), strides=True)
        neg = tuple(d - nd for d in dims)
        _same(ratten.flip(r, neg), torch.flip(t, neg), strides=True)
        if dims:
            shifts = tuple(3 - 2 * k for k in range(len(dims)))
            _same(r.roll(shifts, dims), t.roll(shifts, dims), strides=True)
    _same(r.roll(2), t.roll(2), strides=True)
    _same(r.roll(-7), t.roll(-7), strides=True)
    for reps in [(1,) * nd, (2,) * nd, (2, 1) + (3,) * nd, (0,) * max(nd, 1)]:
        if len(reps) >= nd:
            _same(r.repeat(reps), t.repeat(reps), strides=True)
        _same(r.tile(reps), t.tile(reps), strides=True)
    _same(r.tile((2,)), t.tile((2,)), strides=True)


@requires_torch
@pytest.mark.parametrize("shape", [(3, 4), (4, 3), (2, 3, 4), (0, 3), (2, 0, 5), (3, 3)])
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("layout", LAYOUTS)
def test_tril_triu_match_torch(shape, dtype, layout):
    for k in [-4, -1, 0, 1, 2, 5]:
        t, r = _pair(shape, dtype, 6, layout)
        _same(r.tril(k), t.tril(k), strides=True)
        _same(ratten.triu(r, k), torch.triu(t, k), strides=True)
        _same(r.clone().tril_(k), t.clone().tril_(k))
        yt, yr = t.clone(), r.clone()
        yt.triu_(diagonal=k)
        yr.triu_(diagonal=k)
        _same(yr, yt, strides=True)
        ot, orr = _pair(shape, dtype, 7, "transposed")
        _same(ratten.tril(r, k, out=orr), torch.tril(t, k, out=ot), strides=True)


@requires_torch
@pytest.mark.parametrize("shape", [(4,), (3, 4), (2, 3, 2)])
@pytest.mark.parametrize("layout", LAYOUTS)
def test_repeat_interleave_matches_torch(shape, layout):
    t, r = _pair(shape, "float32", 8, layout)
    for reps in [0, 1, 3]:
        _same(r.repeat_interleave(reps), t.repeat_interleave(reps))
        for d in range(-len(shape), len(shape)):
            _same(r.repeat_interleave(reps, d), t.repeat_interleave(reps, d))
    for d in range(-len(shape), len(shape)):
        n = shape[d]
        counts = [(k * 5 + 1) % 4 for k in range(n)]
        for dt in [torch.int64, torch.int32]:
            ct = torch.tensor(counts, dtype=dt)
            cr = ratten.from_numpy(ct.numpy().copy())
            _same(r.repeat_interleave(cr, d), t.repeat_interleave(ct, d))
            _same(ratten.repeat_interleave(cr), torch.repeat_interleave(ct))
        _same(
            r.repeat_interleave(ratten.tensor([2]), dim=d),
            t.repeat_interleave(torch.tensor([2]), dim=d),
        )


def _err(f):
    try:
        f()
    except Exception as e:  # noqa: BLE001
        return type(e).__name__, str(e).split("\n")[0]
    return None


@requires_torch
def test_errors_match_torch():
    cases = [
        lambda m, x: m.cat([x, m.tensor(1.0)]),
        lambda m, x: m.cat([m.tensor(1.0), x]),
        lambda m, x: m.cat([x, x], 2),
        lambda m, x: m.cat([x, x], -3),
        lambda m, x: m.cat([x, m.zeros(2, 3, 1)]),
        lambda m, x: m.cat([x, m.zeros(3, 4)], 0),
        lambda m, x: m.cat([x, x, m.zeros(3, 4)], 1),
        lambda m, x: m.cat([m.zeros(0, 4), x]),
        lambda m, x: m.cat([x, x], out=m.empty(4, 3, dtype=m.int64)),
        lambda m, x: m.cat([x, x], out=m.empty(4, 3, dtype=m.bool)),
        lambda m, x: m.cat([x[:1], x[1:]], out=x),
        lambda m, x: m.cat([x, x.to("meta")]),
        lambda m, x: m.stack([]),
        lambda m, x: m.stack([x, x], 3),
        lambda m, x: m.stack([x, x], -4),
        lambda m, x: m.stack([x, m.zeros(3, 2)]),
        lambda m, x: m.stack([x, x, m.zeros(2, 3, 1)], 2),
        lambda m, x: m.stack([x, x], out=m.empty(2, 2, 3, dtype=m.int64)),
        lambda m, x: m.stack([m.tensor(1.0)], 1),
        lambda m, x: m.hstack([]),
        lambda m, x: m.vstack([]),
        lambda m, x: m.vstack([m.ones(2), m.ones(3)]),
        lambda m, x: x.flip(0, 0),
        lambda m, x: x.flip(0, -2),
        lambda m, x: x.flip(2),
        lambda m, x: m.tensor(1.0).flip(1),
        lambda m, x: x.roll((1, 1), (0,)),
        lambda m, x: x.roll((1,), (0, 1)),
        lambda m, x: x.roll((), ()),
        lambda m, x: x.roll((1, 2)),
        lambda m, x: x.roll(1, 2),
        lambda m, x: m.tensor(1.0).roll(1, 0),
        lambda m, x: x.repeat(2),
        lambda m, x: x.repeat(-1, 2),
        lambda m, x: m.tile(x, (-1,)),
        lambda m, x: m.repeat_interleave(m.tensor([1.0, 2.0])),
        lambda m, x: m.repeat_interleave(m.tensor([True])),
        lambda m, x: m.repeat_interleave(m.tensor([[1, 2]])),
        lambda m, x: m.repeat_interleave(m.tensor(3)),
        lambda m, x: m.repeat_interleave(m.tensor([1, -2])),
        lambda m, x: m.repeat_interleave(m.tensor([3, -1]), output_size=2),
        lambda m, x: m.repeat_interleave(m.tensor([1, 2]), output_size=4),
        lambda m, x: m.repeat_interleave(m.tensor([1]), output_size=-1),
        lambda m, x: x.repeat_interleave(2, dim=2),
        lambda m, x: x.repeat_interleave(-1),
        lambda m, x: x.repeat_interleave(2, dim=0, output_size=5),
        lambda m, x: x.repeat_interleave(m.tensor([1, 2, 3]), dim=0),
        lambda m, x: x.repeat_interleave(m.tensor([1, 2]), dim=-2, output_size=4),
        lambda m, x: x.repeat_interleave(m.tensor([[1, 2]]), dim=0),
        lambda m, x: x.repeat_interleave(m.tensor([1.0, 2.0]), dim=0),
        lambda m, x: m.tensor(5.0).repeat_interleave(3, dim=0),
        lambda m, x: m.ones(3).tril(),
        lambda m, x: m.tensor(1.0).triu(),
        lambda m, x: m.ones(3).tril_(),
        lambda m, x: m.tril(x, out=m.empty(2, 3, dtype=m.float64)),
        lambda m, x: m.triu(x, out=m.empty(2, 3, dtype=m.int64)),
        lambda m, x: x.tril_(1.5),
    ]
    for k, f in enumerate(cases):
        got = _err(lambda: f(ratten, ratten.arange(6.0).reshape(2, 3)))
        want = _err(lambda: f(torch, torch.arange(6.0).reshape(2, 3)))
        assert want is not None, k
        assert got == want, (k, got, want)


@requires_torch
def test_out_forms_and_warnings_match_torch():
    def run(m, f):
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            r = f(m)
        # torch adds where it warned from: " (Triggered internally at ...)".
        return r, [str(x.message).split(" (Triggered internally")[0] for x in w]

    cases = [
        lambda m: m.cat([m.ones(2, 3), m.zeros(2, 3)], out=m.empty(3)),
        lambda m: m.cat([m.ones(2, 3), m.zeros(2, 3)], 1, out=m.empty(6, 2).t()),
        lambda m: m.cat([m.ones(2, 3, dtype=m.int32)] * 2, out=m.empty(0, dtype=m.complex64)),
        lambda m: m.stack([m.ones(2, 3)] * 2, 1, out=m.empty(5)),
        lambda m: m.stack([m.ones(2, 3)] * 2, 1, out=m.empty(3, 2, 2).permute(1, 2, 0)),
        lambda m: m.stack([m.ones(2, 3)] * 2, 2, out=m.empty(3, 2, 2).permute(1, 0, 2)),
        lambda m: m.hstack([m.ones(2, 3)] * 2, out=m.empty(2, 6)),
        lambda m: m.vstack([m.ones(2, 3)] * 2, out=m.empty(2, 6)),
        lambda m: m.vstack([m.tensor(1.0), m.tensor(2.0)], out=m.empty(0)),
        lambda m: m.tril(m.ones(3, 4), out=m.empty(2)),
        lambda m: m.triu(m.ones(3, 4), 1, out=m.empty(4, 3).t()),
    ]
    for k, f in enumerate(cases):
        (rr, wr), (rt, wt) = run(ratten, f), run(torch, f)
        _same(rr, rt, strides=True)
        assert wr == wt, (k, wr, wt)


@requires_torch
def test_meta_matches_torch():
    def meta(m, *s, dtype=None):
        return m.empty(*s, device="meta", dtype=dtype or m.float32)

    cases = [
        lambda m: m.cat([meta(m, 2, 3), meta(m, 2, 3, dtype=m.float64)], 1),
        lambda m: m.cat([meta(m, 0), meta(m, 2, 3)], 1),
        lambda m: m.cat([meta(m, 2, 3), meta(m, 2, 3)], out=meta(m, 0)),
        lambda m: m.stack([meta(m, 2, 3), meta(m, 2, 3)], 1),
        lambda m: m.hstack([meta(m, 2, 3), meta(m, 2, 3)]),
        lambda m: m.vstack([meta(m, 3), meta(m, 3)]),
        lambda m: meta(m, 2, 3).flip(0, 1),
        lambda m: meta(m, 2, 3).roll(1),
        lambda m: meta(m, 2, 3).roll((1, 1), (0, 1)),
        lambda m: meta(m, 2, 3).repeat(2, 1, 2),
        lambda m: meta(m, 2, 3).tile(2),
        lambda m: meta(m, 2, 3).repeat_interleave(2, dim=1),
        lambda m: m.repeat_interleave(meta(m, 3, dtype=m.int64), output_size=5),
        lambda m: meta(m, 3, 4).tril(1),
        lambda m: meta(m, 3, 4).triu_(1),
    ]
    for k, f in enumerate(cases):
        r, t = f(ratten), f(torch)
        assert r.device.type == "meta", k
        assert tuple(r.shape) == tuple(t.shape) and tuple(r.stride()) == tuple(t.stride()), k
        assert str(r.dtype).split(".")[-1] == str(t.dtype).split(".")[-1], k
    errors = [
        lambda m: m.repeat_interleave(meta(m, 3, dtype=m.int64)),
        lambda m: meta(m, 2, 3).repeat(-1, 2),
        lambda m: meta(m, 3).tril(),
        lambda m: meta(m, 2, 3).flip(2),
    ]
    for k, f in enumerate(errors):
        got, want = _err(lambda: f(ratten)), _err(lambda: f(torch))
        assert want is not None and got == want, (k, got, want)
