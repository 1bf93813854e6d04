"""ratten.nn.functional's layer_norm, batch_norm, dropout, embedding, one_hot and pad against
numpy references (run without torch) and against torch when it is installed: values, the
gradients autograd computes, the running statistics, dropout's masks after the same seed, and
torch's error texts."""

import numpy as np
import pytest

import ratten
import ratten.nn.functional as F
from conftest import HAVE_TORCH, requires_torch

if HAVE_TORCH:
    import torch
    import torch.nn.functional as TF


def _arr(shape, seed=0):
    return np.random.default_rng(seed).uniform(-1, 1, shape)


def _t(a, grad=False):
    return ratten.from_numpy(np.array(a, copy=True)).requires_grad_(grad)


def _np(t):
    return t.detach().numpy()


# ---- layer_norm ------------------------------------------------------------------------------

def _layer_norm_ref(x, nd, w=None, b=None, eps=1e-5):
    axes = tuple(range(x.ndim - nd, x.ndim))
    mean = x.mean(axis=axes, keepdims=True)
    var = x.var(axis=axes, keepdims=True)
    y = (x - mean) / np.sqrt(var + eps)
    if w is not None:
        y = y * w
    if b is not None:
        y = y + b
    return y


@pytest.mark.parametrize("shape,norm", [((2, 3, 4), (4,)), ((2, 3, 4), (3, 4)), ((5, 6), 6)])
def test_layer_norm_values(shape, norm):
    x = _arr(shape)
    nshape = (norm,) if isinstance(norm, int) else norm
    w, b = _arr(nshape, 1), _arr(nshape, 2)
    got = F.layer_norm(_t(x), norm, _t(w), _t(b))
    np.testing.assert_allclose(_np(got), _layer_norm_ref(x, len(nshape), w, b), rtol=1e-10, atol=1e-12)
    got32 = F.layer_norm(_t(x.astype(np.float32)), norm)
    assert got32.dtype == ratten.float32
    np.testing.assert_allclose(_np(got32), _layer_norm_ref(x, len(nshape)), rtol=1e-4, atol=1e-5)


def test_layer_norm_errors():
    x = ratten.zeros(2, 3, 5)
    with pytest.raises(RuntimeError, match=r"Given normalized_shape=\[4\], expected input with "
                                           r"shape \[\*, 4\], but got input of size\[2, 3, 5\]"):
        F.layer_norm(x, (4,))


@requires_torch
def test_layer_norm_grads_match_torch():
    x, w, b = _arr((3, 4, 5)), _arr((5,), 1), _arr((5,), 2)
    g = _arr((3, 4, 5), 3)
    rx, rw, rb = _t(x, True), _t(w, True), _t(b, True)
    tx, tw, tb = (torch.from_numpy(a.copy()).requires_grad_() for a in (x, w, b))
    ry = F.layer_norm(rx, (5,), rw, rb)
    ty = TF.layer_norm(tx, (5,), tw, tb)
    np.testing.assert_allclose(_np(ry), ty.detach().numpy(), rtol=1e-10, atol=1e-12)
    rgs = ratten.autograd.grad(ry, [rx, rw, rb], _t(g))
    tgs = torch.autograd.grad(ty, [tx, tw, tb], torch.from_numpy(g))
    for a, e in zip(rgs, tgs):
        np.testing.assert_allclose(_np(a), e.numpy(), rtol=1e-9, atol=1e-12)
    assert ry.grad_fn.name() == ty.grad_fn.name() == "NativeLayerNormBackward0"


# ---- batch_norm ------------------------------------------------------------------------------

def test_batch_norm_training_and_eval():
    x = _arr((4, 3, 5))
    rm, rv = np.array([0.5, -0.5, 0.25]), np.array([1.0, 2.0, 0.5])
    trm, trv = _t(rm), _t(rv)
    w, b = _arr((3,), 1), _arr((3,), 2)
    y = F.batch_norm(_t(x), trm, trv, _t(w), _t(b), training=True, momentum=0.2)
    mean = x.mean(axis=(0, 2))
    var = x.var(axis=(0, 2))
    want = (x - mean[None, :, None]) / np.sqrt(var[None, :, None] + 1e-5) * w[None, :, None] \
        + b[None, :, None]
    np.testing.assert_allclose(_np(y), want, rtol=1e-10, atol=1e-12)
    n = 4 * 5
    np.testing.assert_allclose(_np(trm), 0.2 * mean + 0.8 * rm, rtol=1e-12)
    np.testing.assert_allclose(_np(trv), 0.2 * var * n / (n - 1) + 0.8 * rv, rtol=1e-12)
    ye = F.batch_norm(_t(x), trm, trv)
    rm2, rv2 = _np(trm), _np(trv)
    np.testing.assert_allclose(_np(ye), (x - rm2[None, :, None]) / np.sqrt(rv2[None, :, None] + 1e-5),
                               rtol=1e-10)


def test_batch_norm_errors():
    with pytest.raises(ValueError, match="Expected more than 1 value per channel when training"):
        F.batch_norm(ratten.zeros(1, 3), None, None, training=True)
    with pytest.raises(RuntimeError, match="running_mean should contain 3 elements not 4"):
        F.batch_norm(ratten.zeros(2, 3), ratten.zeros(4), ratten.ones(3), training=True)


@requires_torch
def test_batch_norm_matches_torch():
    x, w, b = _arr((4, 3, 2, 2)), _arr((3,), 1), _arr((3,), 2)
    g = _arr((4, 3, 2, 2), 3)
    for training in (True, False):
        rx, rw, rb = _t(x, True), _t(w, True), _t(b, True)
        tx, tw, tb = (torch.from_numpy(a.copy()).requires_grad_() for a in (x, w, b))
        rrm, rrv = _t(np.zeros(3) + 0.1), _t(np.ones(3) * 1.5)
        trm, trv = torch.full((3,), 0.1, dtype=torch.float64), torch.full((3,), 1.5, dtype=torch.float64)
        ry = F.batch_norm(rx, rrm, rrv, rw, rb, training=training)
        ty = TF.batch_norm(tx, trm, trv, tw, tb, training=training)
        np.testing.assert_allclose(_np(ry), ty.detach().numpy(), rtol=1e-10, atol=1e-12)
        np.testing.assert_allclose(_np(rrm), trm.numpy(), rtol=1e-12)
        np.testing.assert_allclose(_np(rrv), trv.numpy(), rtol=1e-12)
        rgs = ratten.autograd.grad(ry, [rx, rw, rb], _t(g))
        tgs = torch.autograd.grad(ty, [tx, tw, tb], torch.from_numpy(g))
        for a, e in zip(rgs, tgs):
            np.testing.assert_allclose(_np(a), e.numpy(), rtol=1e-9, atol=1e-12)


# ---- dropout ---------------------------------------------------------------------------------

def test_dropout_semantics():
    x = ratten.ones(2000, dtype=ratten.float64)
    ratten.manual_seed(0)
    y = F.dropout(x, 0.5)
    v = _np(y)
    assert set(np.unique(v)) <= {0.0, 2.0}
    assert 800 < (v == 0).sum() < 1200
    ratten.manual_seed(0)
    np.testing.assert_array_equal(_np(F.dropout(x, 0.5)), v)
    np.testing.assert_array_equal(_np(F.dropout(x, 0.5, training=False)), _np(x))
    assert not _np(F.dropout(x, 1.0)).any()
    with pytest.raises(ValueError, match="dropout probability has to be between 0 and 1, but got 1.5"):
        F.dropout(x, 1.5)
    z = ratten.ones(4, 6, 3, 3, dtype=ratten.float64)
    d2 = _np(F.dropout2d(z, 0.5)).reshape(24, 9)
    assert all(len(set(row)) == 1 for row in d2)
    xi = ratten.ones(5, dtype=ratten.float64)
    F.dropout(xi, 0.3, inplace=True)
    assert set(np.unique(_np(xi))) <= {0.0, 1.0 / 0.7}
    # Autograd through dropout: the gradient is the scaled mask.
    a = ratten.ones(100, dtype=ratten.float64, requires_grad=True)
    ratten.manual_seed(3)
    out = F.dropout(a, 0.25)
    (ga,) = ratten.autograd.grad(out.sum(), [a])
    np.testing.assert_allclose(_np(ga), _np(out))


@requires_torch
@pytest.mark.parametrize("shape,p", [((8,), 0.5), ((3, 17), 0.3), ((64,), 0.9)])
def test_dropout_matches_torch_after_seed(shape, p):
    x = np.arange(1, np.prod(shape) + 1, dtype=np.float32).reshape(shape)
    ratten.manual_seed(0)
    torch.manual_seed(0)
    np.testing.assert_array_equal(_np(F.dropout(_t(x), p)), TF.dropout(torch.from_numpy(x), p).numpy())
    ratten.manual_seed(1)
    torch.manual_seed(1)
    r = ratten.native_dropout(_t(x), p, True)
    t = torch.native_dropout(torch.from_numpy(x), p, True)
    for a, e in zip(r, t):
        np.testing.assert_array_equal(_np(a), e.numpy())
    z = np.ones((2, 5, 3, 3), dtype=np.float32)
    ratten.manual_seed(2)
    torch.manual_seed(2)
    np.testing.assert_array_equal(_np(F.dropout2d(_t(z), p)), TF.dropout2d(torch.from_numpy(z), p).numpy())


# ---- embedding, one_hot ----------------------------------------------------------------------

def test_embedding_values_and_grads():
    w = _arr((6, 4))
    idx = np.array([[1, 5], [5, 0]])
    rw = _t(w, True)
    e = F.embedding(ratten.from_numpy(idx), rw, padding_idx=-1)
    np.testing.assert_array_equal(_np(e), w[idx])
    g = _arr((2, 2, 4), 1)
    (gw,) = ratten.autograd.grad(e, [rw], _t(g))
    want = np.zeros_like(w)
    for p, row in enumerate(idx.reshape(-1)):
        if row != 5:  # padding_idx=-1 is row 5
            want[row] += g.reshape(-1, 4)[p]
    np.testing.assert_allclose(_np(gw), want)
    with pytest.raises(RuntimeError, match="Expected tensor for argument #1 'indices' to have one of "
                                           "the following scalar types: Long, Int; but got "
                                           "torch.FloatTensor instead"):
        F.embedding(ratten.zeros(2), rw)
    # max_norm renormalizes the rows it reads, in place.
    w2 = _t(np.array([[3.0, 4.0], [0.3, 0.4]]))
    F.embedding(ratten.tensor([0, 1]), w2, max_norm=1.0)
    np.testing.assert_allclose(_np(w2), [[0.6, 0.8], [0.3, 0.4]], rtol=1e-6)


@requires_torch
def test_embedding_matches_torch():
    w = _arr((7, 3))
    idx = np.array([0, 3, 3, 6, 2, 3])
    g = _arr((6, 3), 1)
    for kw in ({}, {"padding_idx": 3}, {"scale_grad_by_freq": True}):
        rw = _t(w, True)
        tw = torch.from_numpy(w.copy()).requires_grad_()
        re = F.embedding(ratten.from_numpy(idx), rw, **kw)
        te = TF.embedding(torch.from_numpy(idx), tw, **kw)
        np.testing.assert_array_equal(_np(re), te.detach().numpy())
        (rg,) = ratten.autograd.grad(re, [rw], _t(g))
        (tg,) = torch.autograd.grad(te, [tw], torch.from_numpy(g))
        np.testing.assert_allclose(_np(rg), tg.numpy(), rtol=1e-12)


def test_one_hot():
    t = ratten.tensor([0, 2, 1])
    assert F.one_hot(t).tolist() == [[1, 0, 0], [0, 0, 1], [0, 1, 0]]
    assert F.one_hot(t, 4).shape == (3, 4)
    with pytest.raises(RuntimeError, match="Class values must be smaller than num_classes."):
        F.one_hot(t, 2)
    with pytest.raises(RuntimeError, match="one_hot is only applicable to index tensor"):
        F.one_hot(t.float())


# ---- pad -------------------------------------------------------------------------------------

def _np_pad(x, pad, mode, value=0.0):
    widths = [(0, 0)] * x.ndim
    for k in range(len(pad) // 2):
        widths[x.ndim - 1 - k] = (pad[2 * k], pad[2 * k + 1])
    np_mode = {"constant": "constant", "reflect": "reflect", "replicate": "edge",
               "circular": "wrap"}[mode]
    if mode == "constant":
        return np.pad(x, widths, mode="constant", constant_values=value)
    return np.pad(x, widths, mode=np_mode)


@pytest.mark.parametrize("mode,shape,pad", [
    ("constant", (2, 3), (1, 2)),
    ("constant", (2, 3, 4), (1, 0, 2, 1)),
    ("reflect", (2, 5), (2, 3)),
    ("reflect", (1, 2, 4, 5), (1, 2, 3, 1)),
    ("replicate", (2, 3, 4), (3, 1)),
    ("replicate", (2, 3, 4), (1, 2, 3, 1)),
    ("circular", (1, 2, 5), (2, 1)),
    ("circular", (1, 2, 3, 4), (1, 2, 2, 1)),
])
def test_pad_values(mode, shape, pad):
    x = _arr(shape)
    got = F.pad(_t(x), pad, mode=mode, **({"value": 0.5} if mode == "constant" else {}))
    np.testing.assert_allclose(_np(got), _np_pad(x, pad, mode, 0.5))


def test_pad_negative_and_errors():
    x = _arr((3, 5))
    np.testing.assert_allclose(_np(F.pad(_t(x), (-1, 2))), np.pad(x[:, 1:], ((0, 0), (0, 2))))
    with pytest.raises(RuntimeError, match="Padding length must be divisible by 2"):
        F.pad(_t(x), (1,))
    with pytest.raises(RuntimeError, match="Argument #4: Padding size should be less than the "
                                           "corresponding input dimension"):
        F.pad(_t(_arr((1, 2, 3))), (3, 0), mode="reflect")
    with pytest.raises(NotImplementedError, match="Unrecognised padding mode wrap"):
        F.pad(_t(x), (1, 1), mode="wrap")


@requires_torch
@pytest.mark.parametrize("mode,shape,pad", [
    ("constant", (2, 3, 4), (1, -1, 2, 0)),
    ("reflect", (2, 3, 4), (2, 1)),
    ("reflect", (2, 3, 4, 5), (1, 2, 3, 0)),
    ("replicate", (2, 3, 4), (2, 2)),
    ("replicate", (2, 3, 4, 5), (0, 2, 1, 3)),
    ("circular", (2, 3, 4, 5), (1, 2, 3, 0)),
])
def test_pad_matches_torch(mode, shape, pad):
    x = _arr(shape)
    rx = _t(x, True)
    tx = torch.from_numpy(x.copy()).requires_grad_()
    ry = F.pad(rx, pad, mode=mode)
    ty = TF.pad(tx, pad, mode=mode)
    np.testing.assert_allclose(_np(ry), ty.detach().numpy())
    g = _arr(tuple(ty.shape), 1)
    (rg,) = ratten.autograd.grad(ry, [rx], _t(g))
    (tg,) = torch.autograd.grad(ty, [tx], torch.from_numpy(g))
    np.testing.assert_allclose(_np(rg), tg.numpy(), rtol=1e-12, atol=1e-12)


# ---- group_norm ------------------------------------------------------------------------------

def test_group_norm_values():
    x = _arr((2, 6, 3, 2))
    w, b = _arr((6,), 1), _arr((6,), 2)
    got = F.group_norm(_t(x), 3, _t(w), _t(b))
    xg = x.reshape(2, 3, -1)
    want = ((xg - xg.mean(-1, keepdims=True)) / np.sqrt(xg.var(-1, keepdims=True) + 1e-5)).reshape(x.shape)
    want = want * w[None, :, None, None] + b[None, :, None, None]
    np.testing.assert_allclose(_np(got), want, rtol=1e-10, atol=1e-12)
    with pytest.raises(RuntimeError, match="Expected number of channels in input to be divisible"):
        F.group_norm(_t(x), 4)


@requires_torch
def test_group_norm_matches_torch():
    x, w, b = _arr((3, 4, 5)), _arr((4,), 1), _arr((4,), 2)
    g = _arr((3, 4, 5), 3)
    rx, rw, rb = _t(x, True), _t(w, True), _t(b, True)
    tx, tw, tb = (torch.from_numpy(a.copy()).requires_grad_() for a in (x, w, b))
    ry = F.group_norm(rx, 2, rw, rb)
    ty = TF.group_norm(tx, 2, tw, tb)
    np.testing.assert_allclose(_np(ry), ty.detach().numpy(), rtol=1e-10, atol=1e-12)
    rgs = ratten.autograd.grad(ry, [rx, rw, rb], _t(g))
    tgs = torch.autograd.grad(ty, [tx, tw, tb], torch.from_numpy(g))
    for a, e in zip(rgs, tgs):
        np.testing.assert_allclose(_np(a), e.numpy(), rtol=1e-9, atol=1e-12)


# ---- interpolate -----------------------------------------------------------------------------

def _bilinear_ref(x, oh, ow, align_corners):
    n, c, h, w = x.shape

    def taps(i_size, o_size):
        out = []
        for j in range(o_size):
            if o_size == i_size:
                out.append((j, j, 1.0, 0.0))
                continue
            if align_corners:
                s = (i_size - 1) / (o_size - 1) if o_size > 1 else 0.0
                r = s * j
            else:
                r = max((i_size / o_size) * (j + 0.5) - 0.5, 0.0)
            i0 = min(int(np.floor(r)), i_size - 1)
            l1 = min(max(r - i0, 0.0), 1.0)
            out.append((i0, i0 + (1 if i0 < i_size - 1 else 0), 1.0 - l1, l1))
        return out

    th, tw = taps(h, oh), taps(w, ow)
    y = np.zeros((n, c, oh, ow))
    for a, (h0, h1, lh0, lh1) in enumerate(th):
        for b, (w0, w1, lw0, lw1) in enumerate(tw):
            y[:, :, a, b] = lh0 * (lw0 * x[:, :, h0, w0] + lw1 * x[:, :, h0, w1]) + \
                lh1 * (lw0 * x[:, :, h1, w0] + lw1 * x[:, :, h1, w1])
    return y


def test_interpolate_nearest_and_bilinear():
    x = _arr((2, 3, 4, 5))
    y = F.interpolate(_t(x), size=(8, 10))
    np.testing.assert_array_equal(_np(y), x.repeat(2, axis=2).repeat(2, axis=3))
    y = F.interpolate(_t(x), scale_factor=0.5)
    np.testing.assert_array_equal(_np(y), x[:, :, ::2, ::2][:, :, :2, :2])
    for ac in (False, True):
        y = F.interpolate(_t(x), size=(7, 3), mode="bilinear", align_corners=ac)
        np.testing.assert_allclose(_np(y), _bilinear_ref(x, 7, 3, ac), rtol=1e-12, atol=1e-12)
    with pytest.raises(ValueError, match="only one of size or scale_factor should be defined"):
        F.interpolate(_t(x), size=3, scale_factor=2)
    with pytest.raises(ValueError, match="align_corners option can only be set"):
        F.interpolate(_t(x), size=3, align_corners=True)
    with pytest.raises(RuntimeError, match="Input and output sizes should be greater than 0"):
        F.interpolate(_t(x), size=(0, 2))


@requires_torch
@pytest.mark.parametrize("kw", [
    {"size": (7, 9)}, {"scale_factor": 1.7}, {"scale_factor": (0.5, 3)},
    {"size": (7, 9), "mode": "bilinear"}, {"size": (3, 2), "mode": "bilinear", "align_corners": True},
    {"scale_factor": 1.3, "mode": "bilinear"}, {"scale_factor": 2.5, "mode": "bilinear",
                                                 "recompute_scale_factor": True},
])
def test_interpolate_matches_torch(kw):
    x = _arr((2, 3, 4, 5))
    for dt in (np.float32, np.float64):
        xa = x.astype(dt)
        rx = _t(xa, True)
        tx = torch.from_numpy(xa.copy()).requires_grad_()
        ry = F.interpolate(rx, **kw)
        ty = TF.interpolate(tx, **kw)
        tol = 1e-6 if dt == np.float32 else 1e-12
        np.testing.assert_allclose(_np(ry), ty.detach().numpy(), rtol=tol, atol=tol)
        g = _arr(tuple(ty.shape), 1).astype(dt)
        (rg,) = ratten.autograd.grad(ry, [rx], _t(g))
        (tg,) = torch.autograd.grad(ty, [tx], torch.from_numpy(g))
        np.testing.assert_allclose(_np(rg), tg.numpy(), rtol=tol * 10, atol=tol * 10)
