"""einsum, tensordot and kron from Python: torch's calling forms (varargs, a list, the
sublist format, tensordot's int and list dims), against numpy always and torch when
installed (values, gradients, error texts)."""

import numpy as np
import pytest

import ratten

try:
    import torch
except ImportError:  # the differential tests skip
    torch = None

needs_torch = pytest.mark.skipif(torch is None, reason="torch is not installed")
rng = np.random.default_rng(0)

EQUATIONS = [
    ("ij,jk->ik", [(2, 3), (3, 4)]),
    ("ij,jk", [(2, 3), (3, 4)]),
    ("ii->i", [(3, 3)]),
    ("ii", [(3, 3)]),
    ("bij,bjk->bik", [(2, 2, 3), (2, 3, 4)]),
    ("...ij,...jk", [(5, 2, 3), (3, 4)]),
    ("i,j->ij", [(3,), (4,)]),
    ("bn,anm,bm->ba", [(2, 3), (4, 3, 5), (2, 5)]),
    ("Ab,bC->AC", [(2, 3), (3, 2)]),
    ("i...->...", [(2, 3, 4)]),
]


@pytest.mark.parametrize("equation,shapes", EQUATIONS)
def test_einsum_matches_numpy(equation, shapes):
    arrays = [rng.standard_normal(s) for s in shapes]
    got = ratten.einsum(equation, *[ratten.from_numpy(a) for a in arrays])
    np.testing.assert_allclose(got.numpy(), np.einsum(equation, *arrays), rtol=1e-12, atol=1e-12)
    listed = ratten.einsum(equation, [ratten.from_numpy(a) for a in arrays])
    np.testing.assert_allclose(listed.numpy(), got.numpy())


def test_einsum_sublist_format():
    a, b = rng.standard_normal((2, 3)), rng.standard_normal((3, 4))
    got = ratten.einsum(ratten.from_numpy(a), [0, 1], ratten.from_numpy(b), [1, 2], [0, 2])
    np.testing.assert_allclose(got.numpy(), a @ b, rtol=1e-12)


def test_tensordot_and_kron_match_numpy():
    a, b = rng.standard_normal((2, 3, 4)), rng.standard_normal((4, 3, 5))
    ra, rb = ratten.from_numpy(a), ratten.from_numpy(b)
    np.testing.assert_allclose(ratten.tensordot(ra, rb, dims=([1, 2], [1, 0])).numpy(),
                               np.tensordot(a, b, axes=([1, 2], [1, 0])), rtol=1e-12)
    np.testing.assert_allclose(ratten.tensordot(ra, ratten.from_numpy(b.transpose(0, 2, 1)), dims=1).numpy(),
                               np.tensordot(a, b.transpose(0, 2, 1), axes=1), rtol=1e-12)
    x, y = rng.standard_normal((2, 3)), rng.standard_normal((3, 2))
    np.testing.assert_allclose(ratten.kron(ratten.from_numpy(x), ratten.from_numpy(y)).numpy(),
                               np.kron(x, y), rtol=1e-12)
    np.testing.assert_allclose(ratten.from_numpy(x).kron(ratten.from_numpy(y)).numpy(),
                               np.kron(x, y), rtol=1e-12)


def test_einsum_gradient():
    a = ratten.tensor([[1.0, 2.0], [3.0, 4.0]], dtype=ratten.float64, requires_grad=True)
    b = ratten.tensor([[0.5, -1.0], [2.0, 1.0]], dtype=ratten.float64, requires_grad=True)
    ratten.einsum("ij,jk->", a, b).backward()
    np.testing.assert_allclose(a.grad.numpy(), np.tile(b.detach().numpy().sum(1), (2, 1)))
    np.testing.assert_allclose(b.grad.numpy(), np.tile(a.detach().numpy().sum(0)[:, None], (1, 2)))


@needs_torch
@pytest.mark.parametrize("equation,shapes", EQUATIONS)
def test_einsum_gradients_against_torch(equation, shapes):
    arrays = [rng.standard_normal(s) for s in shapes]
    rs = [ratten.from_numpy(a.copy()).requires_grad_(True) for a in arrays]
    ts = [torch.from_numpy(a.copy()).requires_grad_(True) for a in arrays]
    yr, yt = ratten.einsum(equation, *rs), torch.einsum(equation, *ts)
    np.testing.assert_allclose(yr.detach().numpy(), yt.detach().numpy(), rtol=1e-12, atol=1e-12)
    g = rng.standard_normal(tuple(yt.shape))
    gr = ratten.autograd.grad(yr, rs, ratten.from_numpy(g))
    gt = torch.autograd.grad(yt, ts, torch.from_numpy(g))
    for a, b in zip(gr, gt):
        np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-12, atol=1e-12)


@needs_torch
def test_errors_match_torch():
    def err(f):
        try:
            f()
        except Exception as e:  # noqa: BLE001
            return type(e).__name__, str(e).split("\n")[0]
        return None

    cases = [
        lambda m: m.einsum("ij,jk", m.zeros(2, 3)),
        lambda m: m.einsum("ij,jk", m.zeros(2, 3), m.zeros(4, 4)),
        lambda m: m.einsum("ij,jk->ikk", m.zeros(2, 3), m.zeros(3, 4)),
        lambda m: m.einsum("ij,jk->iz", m.zeros(2, 3), m.zeros(3, 4)),
        lambda m: m.einsum("i1,jk", m.zeros(2, 3), m.zeros(3, 4)),
        lambda m: m.einsum("ijk,jk", m.zeros(2, 3), m.zeros(3, 4)),
        lambda m: m.einsum("i.j", m.zeros(2, 3)),
        lambda m: m.einsum("ij->j->i", m.zeros(2, 3)),
        lambda m: m.tensordot(m.zeros(2, 3), m.zeros(3, 4), dims=([0], [0])),
        lambda m: m.tensordot(m.zeros(2, 3), m.zeros(3, 4), dims=([1, 0], [0])),
        lambda m: m.tensordot(m.zeros(2, 3), m.zeros(3, 4, dtype=m.float64), dims=1),
        lambda m: m.tensordot(m.zeros(2, 3), m.zeros(3, 4), dims=3),
        lambda m: m.tensordot(m.zeros(2, 3), m.zeros(3, 4), dims=-1),
    ]
    for i, case in enumerate(cases):
        got, want = err(lambda: case(ratten)), err(lambda: case(torch))
        assert want is not None and got == want, (i, got, want)
