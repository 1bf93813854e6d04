"""Matrix products (mm, addmm, bmm, baddbmm, addbmm, addmv, mv, dot, vdot, outer, matmul,
nn.functional.linear): against a naive product written here, and against torch (every rank
combination of matmul, strided operands, dtypes, alpha / beta, out=, meta, error texts) when
torch is installed."""

import itertools
import random

import pytest

import ratten
from conftest import HAVE_TORCH, requires_torch

if HAVE_TORCH:
    import torch


def naive_mm(a, b):
    return [[sum(a[i][p] * b[p][j] for p in range(len(b))) for j in range(len(b[0]))]
            for i in range(len(a))]


def close(x, y, tol=1e-5):
    if isinstance(x, list):
        return len(x) == len(y) and all(close(p, q, tol) for p, q in zip(x, y))
    return abs(x - y) <= tol * (1 + abs(y))


def test_against_naive_products():
    rnd = random.Random(0)
    a = [[rnd.uniform(-1, 1) for _ in range(5)] for _ in range(3)]
    b = [[rnd.uniform(-1, 1) for _ in range(4)] for _ in range(5)]
    ta, tb = ratten.tensor(a, dtype=ratten.float64), ratten.tensor(b, dtype=ratten.float64)
    want = naive_mm(a, b)
    assert close(ratten.mm(ta, tb).tolist(), want, 1e-12)
    assert close((ta @ tb).tolist(), want, 1e-12)
    # Transposed operands are read in place.
    assert close(ratten.mm(tb.t(), ta.t()).tolist(), [list(r) for r in zip(*want)], 1e-12)
    c = ratten.ones(3, 4, dtype=ratten.float64)
    got = ratten.addmm(c, ta, tb, beta=0.5, alpha=2).tolist()
    assert close(got, [[0.5 + 2 * v for v in row] for row in want], 1e-12)
    # Integers: exact.
    ia = ratten.tensor([[1, 2], [3, 4]])
    assert ratten.mm(ia, ia).tolist() == [[7, 10], [15, 22]]
    assert ratten.dot(ratten.tensor([1, 2, 3]), ratten.tensor([4, 5, 6])).item() == 32
    assert ratten.mv(ia, ratten.tensor([1, 1])).tolist() == [3, 7]
    assert ratten.outer(ratten.tensor([1, 2]), ratten.tensor([3.0])).tolist() == [[3.0], [6.0]]
    # beta = 0 ignores the input, NaNs included.
    nan = ratten.full((1, 1), float("nan"))
    assert ratten.addmm(nan, ratten.ones(1, 2), ratten.ones(2, 1), beta=0).tolist() == [[2.0]]
    assert ratten.vdot(ratten.tensor([1 + 2j]), ratten.tensor([3j])).item() == (1 - 2j) * 3j
    b3 = ratten.arange(12.0).reshape(2, 2, 3)
    assert ratten.bmm(b3, b3.transpose(1, 2)).shape == (2, 2, 2)
    assert ratten.nn.functional.linear(ratten.ones(2, 3), ratten.ones(4, 3), ratten.ones(4)).tolist() == [[4.0] * 4] * 2
    assert not hasattr(ratten, "linear")


def test_errors_and_meta():
    with pytest.raises(RuntimeError, match=r"mm: mat1 and mat2 shapes cannot be multiplied \(2x3 and 4x2\)"):
        ratten.mm(ratten.ones(2, 3), ratten.ones(4, 2))
    with pytest.raises(RuntimeError, match="both arguments to matmul need to be at least 1D"):
        ratten.matmul(ratten.ones(()), ratten.ones(3))
    with pytest.raises(NotImplementedError, match="\"addmm_impl_cpu_\" not implemented for 'Bool'"):
        ratten.mm(ratten.ones(2, 2, dtype=ratten.bool), ratten.ones(2, 2, dtype=ratten.bool))
    m = ratten.matmul(ratten.ones(7, 1, 2, 3, device="meta"), ratten.ones(5, 3, 4, device="meta"))
    assert m.shape == (7, 5, 2, 4) and m.device.type == "meta"
    assert ratten.addmv(ratten.ones(2, device="meta"), ratten.ones(2, 3, device="meta"),
                        ratten.ones(3, device="meta")).shape == (2,)


DTYPES = ["float32", "float64", "float16", "bfloat16", "complex64", "complex128", "int64",
          "int32", "uint8"]
TOL = {"float32": 1e-4, "float64": 1e-10, "float16": 1e-2, "bfloat16": 5e-2,
       "complex64": 1e-4, "complex128": 1e-10}


def make(lib, shape, dtype, seed, layout="contiguous"):
    g = torch.Generator().manual_seed(seed)
    if dtype in ("int64", "int32", "uint8"):
        base = torch.randint(0, 5, shape, generator=g)
    elif dtype.startswith("complex"):
        base = torch.complex(torch.randn(shape, generator=g, dtype=torch.float64),
                             torch.randn(shape, generator=g, dtype=torch.float64))
    else:
        base = torch.randn(shape, generator=g, dtype=torch.float64)
    t = base.to(getattr(torch, dtype))
    if layout == "transposed" and len(shape) >= 2:
        t = t.transpose(-1, -2).contiguous().transpose(-1, -2)
    if lib is torch:
        return t
    r = ratten.tensor(t.tolist(), dtype=getattr(ratten, dtype)) if dtype != "bfloat16" else \
        ratten.tensor(t.float().tolist()).to(ratten.bfloat16)
    r = r.reshape(shape)
    if layout == "transposed" and len(shape) >= 2:
        r = r.transpose(-1, -2).contiguous().transpose(-1, -2)
    return r


def compare(got, want, dtype):
    assert tuple(got.shape) == tuple(want.shape)
    assert str(got.dtype).split(".")[-1] == str(want.dtype).split(".")[-1]
    w = want.float() if dtype == "bfloat16" else want
    g = torch.tensor(got.to(ratten.float32).tolist() if dtype == "bfloat16" else got.tolist(),
                     dtype=w.dtype).reshape(w.shape)
    if dtype in TOL:
        assert torch.allclose(g, w, rtol=TOL[dtype], atol=TOL[dtype]), (g, w)
    else:
        assert g.tolist() == w.tolist()


SHAPES = [(3,), (2, 3), (4, 2, 3), (2, 1, 2, 3), (1, 4, 2, 3)]
RHS = [(3,), (3, 5), (4, 3, 5), (2, 4, 3, 5), (1, 3, 5)]


@requires_torch
@pytest.mark.parametrize("lhs,rhs", list(itertools.product(SHAPES, RHS)))
def test_matmul_rank_combinations(lhs, rhs):
    for layout in ("contiguous", "transposed"):
        a = [make(lib, lhs, "float64", 1, layout) for lib in (torch, ratten)]
        b = [make(lib, rhs, "float64", 2, layout) for lib in (torch, ratten)]
        try:
            want = torch.matmul(a[0], b[0])
        except RuntimeError as e:
            with pytest.raises(RuntimeError) as got:
                ratten.matmul(a[1], b[1])
            assert str(got.value) == str(e).split("\n")[0]
            continue
        compare(ratten.matmul(a[1], b[1]), want, "float64")
        out = ratten.empty(0, dtype=ratten.float64)
        ratten.matmul(a[1], b[1], out=out)
        compare(out, want, "float64")


@requires_torch
@pytest.mark.parametrize("dtype", DTYPES)
def test_products_by_dtype(dtype):
    def both(f, *shapes, layout="contiguous"):
        args = [[make(lib, s, dtype, i, layout) for i, s in enumerate(shapes)]
                for lib in (torch, ratten)]
        want = f(torch, *args[0])
        got = f(ratten, *args[1])
        compare(got, want, dtype)

    for layout in ("contiguous", "transposed"):
        both(lambda m, a, b: m.mm(a, b), (5, 7), (7, 6), layout=layout)
        both(lambda m, a, b: m.bmm(a, b), (3, 5, 7), (3, 7, 6), layout=layout)
        both(lambda m, c, a, b: m.addmm(c, a, b, beta=2, alpha=3), (5, 6), (5, 7), (7, 6),
             layout=layout)
        both(lambda m, c, a, b: m.baddbmm(c, a, b, beta=2, alpha=3), (3, 5, 6), (3, 5, 7),
             (3, 7, 6), layout=layout)
        both(lambda m, c, a, b: m.addbmm(c, a, b, beta=2, alpha=3), (5, 6), (3, 5, 7),
             (3, 7, 6), layout=layout)
        both(lambda m, c, a, b: m.addmv(c, a, b, beta=2, alpha=3), (5,), (5, 7), (7,),
             layout=layout)
        both(lambda m, a, b: m.mv(a, b), (5, 7), (7,), layout=layout)
    both(lambda m, a, b: m.dot(a, b), (40,), (40,))
    both(lambda m, a, b: m.vdot(a, b), (40,), (40,))
    both(lambda m, a, b: m.outer(a, b), (4,), (3,))
    both(lambda m, c, a, b: m.addmm(c, a, b), (6,), (5, 7), (7, 6))
    both(lambda m, a, b: m.mm(a, b), (5, 0), (0, 6))
    both(lambda m, c, a, b: m.addmm(c, a, b, beta=2), (5, 6), (5, 0), (0, 6))
    both(lambda m, a, b: m.bmm(a, b), (0, 5, 7), (0, 7, 6))
    if dtype in ("float32", "float64", "float16", "bfloat16"):
        both(lambda m, x, w, b: m.nn.functional.linear(x, w, b), (4, 2, 7), (5, 7), (5,))
        both(lambda m, x, w: m.nn.functional.linear(x, w), (4, 2, 7), (5, 7))
        both(lambda m, x, w, b: m.nn.functional.linear(x, w, b), (2, 7), (5, 7), (5,))


@requires_torch
def test_large_products_match_torch():
    for n in (64, 257):
        a, b = torch.randn(n, n), torch.randn(n, n)
        got = ratten.mm(ratten.tensor(a.tolist()), ratten.tensor(b.tolist()))
        assert torch.allclose(torch.tensor(got.tolist()), a @ b, rtol=1e-4, atol=1e-4)
