"""The factories as generated bindings: torch's signatures (sizes as varargs or a sequence,
keyword-only dtype / device, out=), dtype inference, the `_like` family, meta tensors, and
the values of the range factories, compared with torch when it is installed."""

import pytest

import ratten
from conftest import HAVE_TORCH, requires_torch

if HAVE_TORCH:
    import torch


def test_forms():
    assert ratten.zeros(2, 3).shape == (2, 3)
    assert ratten.ones((2, 3), dtype=ratten.int32).dtype == ratten.int32
    assert ratten.empty([4]).shape == (4,)
    assert ratten.full((2,), 7).dtype == ratten.int64
    assert ratten.full((2,), True).dtype == ratten.bool
    assert ratten.full((2,), 1.5).tolist() == [1.5, 1.5]
    assert ratten.arange(5).tolist() == [0, 1, 2, 3, 4]
    assert ratten.arange(1, 4, 0.5).dtype == ratten.float32
    assert ratten.eye(2, 3).tolist() == [[1, 0, 0], [0, 1, 0]]
    assert ratten.scalar_tensor(3).dtype == ratten.float32
    m = ratten.zeros(2, 3, device="meta")
    assert m.device.type == "meta" and m.shape == (2, 3)
    assert ratten.empty(2, 3, 4, 5, memory_format=ratten.channels_last).stride() == (60, 1, 15, 3)
    assert ratten.empty_strided((2, 3), (1, 2)).stride() == (1, 2)
    out = ratten.empty(2)
    r = ratten.zeros(3, out=out)
    assert r is out and out.tolist() == [0.0, 0.0, 0.0]
    x = ratten.ones(3, 4, dtype=ratten.float64).t()
    assert ratten.empty_like(x).stride() == (1, 4)
    assert ratten.zeros_like(x).dtype == ratten.float64
    assert ratten.full_like(x, 2).tolist() == [[2.0] * 3] * 4
    assert ratten.ones_like(x, dtype=ratten.int8).dtype == ratten.int8


def test_errors():
    with pytest.raises(TypeError) as e:
        ratten.zeros(2, dtype="float")
    assert str(e.value) == "zeros(): argument 'dtype' must be ratten.dtype, not str"
    with pytest.raises(RuntimeError, match="n must be greater or equal to 0, got -1"):
        ratten.eye(-1)
    with pytest.raises(RuntimeError, match="number of steps must be non-negative"):
        ratten.linspace(0, 1, -1)
    with pytest.raises(RuntimeError, match="upper bound and lower bound inconsistent"):
        ratten.arange(0, 5, -1)
    with pytest.raises(RuntimeError, match="negative dimension -1"):
        ratten.empty(-1)


DTYPES = ["float32", "float64", "float16", "bfloat16", "int64", "int32", "uint8", "int8"]
RANGES = [
    (0, 10, 5),
    (-1, 1, 7),
    (10, 0, 4),
    (0.5, 7.25, 33),
    (3, 3, 1),
    (-5, 100, 64),
    (-37.3, 81.9, 171),
    (0.1, 0.9, 1000),
]


@requires_torch
@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("rng", RANGES)
def test_linspace_logspace_arange_match_torch(dtype, rng):
    start, end, steps = rng
    mods = [(torch, getattr(torch, dtype)), (ratten, getattr(ratten, dtype))]
    try:
        want = torch.linspace(start, end, steps, dtype=mods[0][1])
    except RuntimeError as e:
        with pytest.raises(RuntimeError) as got:
            ratten.linspace(start, end, steps, dtype=mods[1][1])
        assert str(got.value) == str(e)
        return
    got = ratten.linspace(start, end, steps, dtype=mods[1][1])
    assert got.tolist() == want.tolist()
    if dtype not in ("uint8", "int8"):
        want, got = (m.logspace(start / 10, end / 10, steps, base=3.0, dtype=d) for m, d in mods)
        assert got.tolist() == want.tolist()
    step = (end - start) / max(steps - 1, 1) or 1
    if dtype in ("uint8",) and min(start, end) < 0:
        return
    want, got = (m.arange(start, end, step, dtype=d) for m, d in mods)
    assert got.tolist() == want.tolist()


@requires_torch
@pytest.mark.parametrize("name", ["zeros", "ones", "empty", "eye"])
def test_defaults_match_torch(name):
    args = (3,) if name == "eye" else (2, 3)
    t, r = getattr(torch, name)(*args), getattr(ratten, name)(*args)
    assert (tuple(r.shape), str(r.dtype).split(".")[-1]) == (tuple(t.shape), str(t.dtype).split(".")[-1])
