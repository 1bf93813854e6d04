"""softmax / log_softmax and the losses of ratten.nn.functional: against numpy references
(always) and against torch.nn.functional on the same inputs (when torch is installed), with
torch's errors, the reductions, weights, ignore_index, label smoothing and autograd."""

import numpy as np
import pytest

import ratten
import ratten.nn.functional as F

try:
    import torch
    import torch.nn.functional as TF
except ImportError:  # the differential tests skip
    torch = None
    TF = None

needs_torch = pytest.mark.skipif(torch is None, reason="torch is not installed")

rng = np.random.default_rng(0)


def np_log_softmax(x, dim):
    m = x.max(axis=dim, keepdims=True)
    return x - m - np.log(np.exp(x - m).sum(axis=dim, keepdims=True))


# ---- numpy references (run without torch) ----------------------------------------------------

@pytest.mark.parametrize("shape,dim", [((5,), 0), ((3, 7), 1), ((3, 7), 0), ((2, 3, 4), 1),
                                       ((2, 3, 4), -1), ((4, 1030), 1)])
def test_softmax_matches_numpy(shape, dim):
    x = rng.standard_normal(shape).astype(np.float32)
    t = ratten.from_numpy(x)
    want = np_log_softmax(x.astype(np.float64), dim)
    np.testing.assert_allclose(F.log_softmax(t, dim).numpy(), want, rtol=1e-5, atol=1e-6)
    np.testing.assert_allclose(F.softmax(t, dim=dim).numpy(), np.exp(want), rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(t.softmax(dim).numpy(), np.exp(want), rtol=1e-5, atol=1e-7)
    np.testing.assert_allclose(F.softmin(t, dim).numpy(),
                               np.exp(np_log_softmax(-x.astype(np.float64), dim)), rtol=1e-5)


def test_softmax_dtype_and_implicit_dim():
    x = ratten.tensor([[1, 2, 3], [4, 5, 9]])
    y = F.softmax(x, 1, dtype=ratten.float64)
    assert y.dtype == ratten.float64
    with pytest.warns(UserWarning, match="Implicit dimension choice for softmax"):
        z = F.softmax(x.double())
    np.testing.assert_allclose(z.numpy(), y.numpy())
    with pytest.raises(NotImplementedError, match="\"softmax_lastdim_kernel_impl\" not implemented for 'Long'"):
        ratten.softmax(x, 1)


def test_cross_entropy_matches_numpy():
    x = rng.standard_normal((6, 4))
    t = np.array([0, 3, 1, 1, 2, 0])
    ls = np_log_softmax(x, 1)
    want = -ls[np.arange(6), t].mean()
    got = F.cross_entropy(ratten.from_numpy(x), ratten.from_numpy(t))
    np.testing.assert_allclose(got.item(), want, rtol=1e-12)
    w = np.array([0.5, 1.0, 2.0, 1.5])
    want_w = -(ls[np.arange(6), t] * w[t]).sum() / w[t].sum()
    got = F.cross_entropy(ratten.from_numpy(x), ratten.from_numpy(t), weight=ratten.from_numpy(w))
    np.testing.assert_allclose(got.item(), want_w, rtol=1e-12)


def test_cross_entropy_backward():
    x = ratten.tensor([[0.1, 0.2, 0.7], [1.0, -1.0, 0.0]], dtype=ratten.float64, requires_grad=True)
    t = ratten.tensor([2, 0])
    F.cross_entropy(x, t).backward()
    p = np.exp(np_log_softmax(x.detach().numpy(), 1))
    onehot = np.eye(3)[[2, 0]]
    np.testing.assert_allclose(x.grad.numpy(), (p - onehot) / 2, rtol=1e-12)
    assert F.cross_entropy(x, t).grad_fn.name() == "NllLossBackward0"


def test_pointwise_losses_match_numpy():
    a, b = rng.standard_normal((3, 4)), rng.standard_normal((3, 4))
    ta, tb = ratten.from_numpy(a), ratten.from_numpy(b)
    d = a - b
    np.testing.assert_allclose(F.mse_loss(ta, tb).item(), (d ** 2).mean())
    np.testing.assert_allclose(F.l1_loss(ta, tb, reduction="sum").item(), np.abs(d).sum())
    np.testing.assert_allclose(
        F.smooth_l1_loss(ta, tb, reduction="none", beta=0.5).numpy(),
        np.where(np.abs(d) < 0.5, 0.5 * d * d / 0.5, np.abs(d) - 0.25))
    np.testing.assert_allclose(
        F.huber_loss(ta, tb, delta=0.5).item(),
        np.where(np.abs(d) < 0.5, 0.5 * d * d, 0.5 * (np.abs(d) - 0.25)).mean())
    with pytest.raises(ValueError, match="is not a valid value for reduction"):
        F.mse_loss(ta, tb, reduction="avg")


# ---- against torch ---------------------------------------------------------------------------

def both(arr):
    return ratten.from_numpy(arr.copy()), torch.from_numpy(arr.copy())


def close(r, t, **kw):
    np.testing.assert_allclose(r.detach().numpy(), t.detach().numpy(), **kw)


@needs_torch
@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16"])
@pytest.mark.parametrize("shape,dim", [((4, 9), 1), ((4, 9), 0), ((2, 3, 5), 1), ((64, 10), -1)])
def test_softmax_against_torch(dtype, shape, dim):
    x = rng.standard_normal(shape) * 3
    r, t = both(x)
    rd, td = getattr(ratten, dtype), getattr(torch, dtype)
    r, t = r.to(rd), t.to(td)
    tol = {"float32": 1e-5, "float64": 1e-12, "float16": 2e-3, "bfloat16": 2e-2}[dtype]
    for fr, ft in ((F.softmax, TF.softmax), (F.log_softmax, TF.log_softmax)):
        got, want = fr(r, dim), ft(t, dim)
        assert str(got.dtype) == str(want.dtype).replace("torch.", "ratten.")
        close(got.float(), want.float(), rtol=tol, atol=tol)


@needs_torch
def test_softmax_backward_against_torch():
    x = rng.standard_normal((3, 5, 4))
    for dim in (0, 1, 2):
        r, t = both(x)
        r.requires_grad_(True)
        t.requires_grad_(True)
        g = rng.standard_normal((3, 5, 4))
        for fr, ft in ((F.softmax, TF.softmax), (F.log_softmax, TF.log_softmax)):
            yr, yt = fr(r, dim), ft(t, dim)
            assert yr.grad_fn.name() == yt.grad_fn.name()
            (gr,) = ratten.autograd.grad(yr, r, ratten.from_numpy(g))
            (gt,) = torch.autograd.grad(yt, t, torch.from_numpy(g))
            close(gr, gt, rtol=1e-10, atol=1e-12)


def loss_cases():
    x2 = rng.standard_normal((5, 4))
    t2 = np.array([0, 3, -100, 1, 3])
    x4 = rng.standard_normal((2, 3, 2, 3))
    t4 = rng.integers(0, 3, (2, 2, 3))
    t4[0, 1, 1] = -100
    x3 = rng.standard_normal((2, 3, 4))
    t3 = rng.integers(0, 3, (2, 4))
    x1 = rng.standard_normal(4)
    t1 = np.array(2)
    return [(x2, t2), (x4, t4), (x3, t3), (x1, t1)]


@needs_torch
@pytest.mark.parametrize("case", range(4))
@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
@pytest.mark.parametrize("weighted", [False, True])
def test_nll_and_cross_entropy_against_torch(case, reduction, weighted):
    x, t = loss_cases()[case]
    c = x.shape[1] if x.ndim > 1 else x.shape[0]
    w = rng.uniform(0.5, 2, c) if weighted else None
    xr, xt = both(x)
    xr.requires_grad_(True)
    xt.requires_grad_(True)
    tr, tt = both(t.astype(np.int64))
    wr, wt = (None, None) if w is None else both(w)
    for fr, ft, kw in ((F.nll_loss, TF.nll_loss, {}), (F.cross_entropy, TF.cross_entropy, {}),
                       (F.cross_entropy, TF.cross_entropy, {"label_smoothing": 0.2})):
        lr = fr(xr, tr, weight=wr, reduction=reduction, **kw)
        lt = ft(xt, tt, weight=wt, reduction=reduction, **kw)
        close(lr, lt, rtol=1e-10, atol=1e-12)
        g = rng.standard_normal(tuple(lt.shape))
        (gr,) = ratten.autograd.grad(lr, xr, ratten.from_numpy(g))
        (gt,) = torch.autograd.grad(lt, xt, torch.from_numpy(g))
        close(gr, gt, rtol=1e-10, atol=1e-12)


@needs_torch
def test_cross_entropy_probabilities_against_torch():
    x = rng.standard_normal((4, 5))
    p = np.exp(np_log_softmax(rng.standard_normal((4, 5)), 1))
    w = rng.uniform(0.5, 2, 5)
    for reduction in ("none", "mean", "sum"):
        for smoothing in (0.0, 0.3):
            for weighted in (False, True):
                (xr, xt), (pr, pt) = both(x), both(p)
                wr, wt = both(w) if weighted else (None, None)
                close(F.cross_entropy(xr, pr, weight=wr, reduction=reduction, label_smoothing=smoothing),
                      TF.cross_entropy(xt, pt, weight=wt, reduction=reduction, label_smoothing=smoothing),
                      rtol=1e-10)


@needs_torch
def test_loss_errors_match_torch():
    def err(f):
        try:
            f()
        except Exception as e:  # noqa: BLE001
            return type(e).__name__, str(e).split("\n")[0]
        return None

    cases = [
        lambda m, Fm: Fm.nll_loss(m.zeros(3, 4), m.tensor([0, 1, 2], dtype=m.int32)),
        lambda m, Fm: Fm.nll_loss(m.zeros(3, 4), m.tensor([0, 1, 5])),
        lambda m, Fm: Fm.nll_loss(m.zeros(3, 4), m.tensor([0, 1])),
        lambda m, Fm: Fm.nll_loss(m.zeros(2, 3), m.tensor([1, 2]), weight=m.ones(4)),
        lambda m, Fm: Fm.nll_loss(m.zeros(2, 3, 4, 5), m.zeros(2, 4, 4, dtype=m.long)),
        lambda m, Fm: Fm.nll_loss(m.zeros(2, 3, 4, 5, 6), m.zeros(2, 4, 5, 5, dtype=m.long)),
        lambda m, Fm: Fm.cross_entropy(m.zeros(3, 4), m.zeros(3, 4, dtype=m.int32)),
        lambda m, Fm: Fm.cross_entropy(m.zeros(3, 4), m.zeros(3, 4), ignore_index=1),
        lambda m, Fm: Fm.cross_entropy(m.zeros(3, 4), m.tensor([0, 1, 2]), label_smoothing=1.5),
        lambda m, Fm: Fm.mse_loss(m.zeros(3, dtype=m.long), m.zeros(3, dtype=m.long)),
        lambda m, Fm: Fm.binary_cross_entropy(m.tensor([1.5]), m.zeros(1)),
        lambda m, Fm: Fm.binary_cross_entropy(m.zeros(3), m.zeros(4)),
        lambda m, Fm: Fm.binary_cross_entropy_with_logits(m.zeros(3), m.zeros(4)),
        lambda m, Fm: Fm.smooth_l1_loss(m.zeros(3), m.zeros(3), beta=-1.0),
        lambda m, Fm: Fm.huber_loss(m.zeros(3), m.zeros(3), delta=0.0),
        lambda m, Fm: Fm.softmax(m.zeros(2, 3), 2),
        lambda m, Fm: m._softmax(m.zeros(2, 3), 1, True),
    ]
    for i, case in enumerate(cases):
        got = err(lambda: case(ratten, F))
        want = err(lambda: case(torch, TF))
        assert want is not None, i
        assert got is not None and got[0] == want[0], (i, got, want)
        assert got[1].replace("ratten.", "torch.") == want[1], (i, got, want)


@needs_torch
@pytest.mark.parametrize("reduction", ["none", "mean", "sum"])
def test_pointwise_losses_against_torch(reduction):
    a, b = rng.standard_normal((3, 4)), rng.standard_normal((3, 4))
    p, q = rng.uniform(0.05, 0.95, (3, 4)), rng.uniform(0, 1, (3, 4))
    w, pw = rng.uniform(0.5, 2, (3, 4)), rng.uniform(0.5, 2, 4)
    cases = [
        (lambda m, Fm, x, y: Fm.mse_loss(x, y, reduction=reduction), a, b),
        (lambda m, Fm, x, y: Fm.l1_loss(x, y, reduction=reduction), a, b),
        (lambda m, Fm, x, y: Fm.smooth_l1_loss(x, y, reduction=reduction, beta=0.6), a, b),
        (lambda m, Fm, x, y: Fm.smooth_l1_loss(x, y, reduction=reduction, beta=0.0), a, b),
        (lambda m, Fm, x, y: Fm.huber_loss(x, y, reduction=reduction, delta=0.7), a, b),
        (lambda m, Fm, x, y: Fm.binary_cross_entropy(x, y, reduction=reduction), p, q),
        (lambda m, Fm, x, y: Fm.binary_cross_entropy(x, y, weight=m.from_numpy(w.copy()), reduction=reduction), p, q),
        (lambda m, Fm, x, y: Fm.binary_cross_entropy_with_logits(x, y, reduction=reduction), a * 5, q),
        (lambda m, Fm, x, y: Fm.binary_cross_entropy_with_logits(
            x, y, weight=m.from_numpy(w.copy()), pos_weight=m.from_numpy(pw.copy()), reduction=reduction), a * 5, q),
        (lambda m, Fm, x, y: Fm.kl_div(np_log(m, x), y, reduction=reduction), p, q),
        (lambda m, Fm, x, y: Fm.kl_div(np_log(m, x), np_log(m, y), reduction=reduction, log_target=True), p, q),
        (lambda m, Fm, x, y: Fm.mse_loss(x, y, reduction=reduction, weight=m.from_numpy(w.copy())), a, b),
    ]
    for i, (f, x, y) in enumerate(cases):
        (xr, xt), (yr, yt) = both(x), both(y)
        for r in (xr, yr, xt, yt):
            r.requires_grad_(True)
        lr, lt = f(ratten, F, xr, yr), f(torch, TF, xt, yt)
        close(lr, lt, rtol=1e-10, atol=1e-12)
        g = rng.standard_normal(tuple(lt.shape))
        gr = ratten.autograd.grad(lr, (xr, yr), ratten.from_numpy(g))
        gt = torch.autograd.grad(lt, (xt, yt), torch.from_numpy(g))
        for a_, b_ in zip(gr, gt):
            close(a_, b_, rtol=1e-9, atol=1e-10)


def np_log(m, x):
    return x.log()


def test_kl_div_batchmean():
    x = ratten.tensor([[0.2, 0.8], [0.5, 0.5]], dtype=ratten.float64).log()
    t = ratten.tensor([[0.1, 0.9], [0.4, 0.6]], dtype=ratten.float64)
    tn, xn = t.numpy(), x.numpy()
    want = (tn * (np.log(tn) - xn)).sum() / 2
    np.testing.assert_allclose(F.kl_div(x, t, reduction="batchmean").item(), want)
