"""Convolution and pooling (ratten.nn.functional.conv1d/2d/3d, conv_transpose1d/2d, max_pool2d
with and without indices, avg_pool2d, adaptive_avg_pool2d, adaptive_max_pool2d): against numpy
references written here, and against torch when it is installed (a sweep over shapes, stride,
padding including 'same' / 'valid', dilation, groups, bias and output_padding, forward and
gradients, dtypes, meta, and torch's error texts)."""

import itertools
import random

import numpy as np
import pytest

import ratten
import ratten.nn.functional as F
from conftest import HAVE_TORCH, requires_torch

if HAVE_TORCH:
    import torch
    import torch.nn.functional as TF


def _np_conv2d(x, w, b=None, stride=1, padding=0, dilation=1, groups=1):
    """A direct 2-D convolution in numpy (zero padding, groups): the reference without torch."""
    n, c, h, wd = x.shape
    o, cg, kh, kw = w.shape
    xp = np.pad(x, ((0, 0), (0, 0), (padding, padding), (padding, padding)))
    oh = (h + 2 * padding - dilation * (kh - 1) - 1) // stride + 1
    ow = (wd + 2 * padding - dilation * (kw - 1) - 1) // stride + 1
    out = np.zeros((n, o, oh, ow))
    og = o // groups
    for g in range(groups):
        for i in range(kh):
            for j in range(kw):
                patch = xp[:, g * cg:(g + 1) * cg,
                           i * dilation:i * dilation + stride * (oh - 1) + 1:stride,
                           j * dilation:j * dilation + stride * (ow - 1) + 1:stride]
                out[:, g * og:(g + 1) * og] += np.einsum("nchw,oc->nohw", patch,
                                                         w[g * og:(g + 1) * og, :, i, j])
    if b is not None:
        out += b.reshape(1, -1, 1, 1)
    return out


def _t(a, dtype=ratten.float64):
    return ratten.tensor(a.tolist(), dtype=dtype)


def test_conv2d_against_numpy():
    rng = np.random.default_rng(0)
    for stride, padding, dilation, groups in [(1, 0, 1, 1), (2, 1, 1, 2), (1, 2, 2, 1), (3, 1, 2, 4)]:
        x = rng.standard_normal((2, 4, 9, 8))
        w = rng.standard_normal((8, 4 // groups, 3, 2))
        b = rng.standard_normal(8)
        got = F.conv2d(_t(x), _t(w), _t(b), stride, padding, dilation, groups)
        want = _np_conv2d(x, w, b, stride, padding, dilation, groups)
        np.testing.assert_allclose(np.array(got.tolist()), want, rtol=1e-10, atol=1e-10)
    # The same through ratten.conv2d and the keyword form.
    x, w = rng.standard_normal((1, 2, 5, 5)), rng.standard_normal((3, 2, 3, 3))
    a = ratten.conv2d(_t(x), _t(w), padding=1)
    np.testing.assert_allclose(np.array(a.tolist()), _np_conv2d(x, w, padding=1), rtol=1e-10)
    # padding='same' keeps the size; 'valid' is padding 0.
    s = F.conv2d(_t(x), _t(w), padding="same")
    assert s.shape == (1, 3, 5, 5)
    np.testing.assert_allclose(np.array(s.tolist()), _np_conv2d(x, w, padding=1), rtol=1e-10)
    v = F.conv2d(_t(x), _t(w), padding="valid")
    np.testing.assert_allclose(np.array(v.tolist()), _np_conv2d(x, w), rtol=1e-10)


def test_pools_against_numpy():
    rng = np.random.default_rng(1)
    x = rng.standard_normal((2, 3, 6, 8))
    tx = _t(x)
    m = F.max_pool2d(tx, 2)
    np.testing.assert_array_equal(np.array(m.tolist()), x.reshape(2, 3, 3, 2, 4, 2).max(axis=(3, 5)))
    v, i = F.max_pool2d(tx, 2, return_indices=True)
    assert i.dtype == ratten.int64
    flat = x.reshape(2, 3, -1)
    np.testing.assert_array_equal(np.take_along_axis(flat, np.array(i.tolist()).reshape(2, 3, -1), 2),
                                  np.array(v.tolist()).reshape(2, 3, -1))
    a = F.avg_pool2d(tx, 2)
    np.testing.assert_allclose(np.array(a.tolist()), x.reshape(2, 3, 3, 2, 4, 2).mean(axis=(3, 5)), rtol=1e-12)
    aa = F.adaptive_avg_pool2d(tx, (3, 4))
    np.testing.assert_allclose(np.array(aa.tolist()), x.reshape(2, 3, 3, 2, 4, 2).mean(axis=(3, 5)), rtol=1e-12)
    am = F.adaptive_max_pool2d(tx, (3, 4))
    np.testing.assert_array_equal(np.array(am.tolist()), x.reshape(2, 3, 3, 2, 4, 2).max(axis=(3, 5)))
    # None in an output size keeps the input's; 1x1 is the mean.
    assert F.adaptive_avg_pool2d(tx, (None, 2)).shape == (2, 3, 6, 2)
    np.testing.assert_allclose(np.array(F.adaptive_avg_pool2d(tx, 1).tolist()),
                               x.mean(axis=(2, 3), keepdims=True), rtol=1e-12)
    # Unbatched (3-D) input.
    assert F.max_pool2d(tx[0], 3, 1, 1).shape == (3, 6, 8)


def test_autograd_of_conv_and_pools():
    x = ratten.randn(2, 3, 6, 6, dtype=ratten.float64, requires_grad=True)
    w = ratten.randn(4, 3, 3, 3, dtype=ratten.float64, requires_grad=True)
    b = ratten.randn(4, dtype=ratten.float64, requires_grad=True)
    y = F.conv2d(x, w, b, padding=1)
    assert y.grad_fn.name() == "ConvolutionBackward0"
    y.sum().backward()
    # d(sum y)/db = number of output positions per channel.
    np.testing.assert_allclose(np.array(b.grad.tolist()), [2 * 36.0] * 4)
    assert x.grad.shape == x.shape and w.grad.shape == w.shape
    assert ratten.autograd.gradcheck(lambda x, w: F.conv2d(x, w, None, 2, 1), (x[:1, :, :4, :5].detach().requires_grad_(), w))
    for f in (lambda t: F.max_pool2d(t, 2), lambda t: F.avg_pool2d(t, 3, 1, 1),
              lambda t: F.adaptive_avg_pool2d(t, 4), lambda t: F.adaptive_max_pool2d(t, 4)):
        t = ratten.randn(1, 2, 6, 6, dtype=ratten.float64, requires_grad=True)
        assert ratten.autograd.gradcheck(f, (t,))


# ---- against torch ------------------------------------------------------------------------

def _r(torch_t):
    """The same values in ratten."""
    return ratten.from_numpy(torch_t.detach().numpy().copy())


def _conv_cases():
    rnd = random.Random(5)
    cases = []
    for _ in range(60):
        dims = rnd.choice([1, 2, 2, 3])
        groups = rnd.choice([1, 2])
        cin, cout = groups * rnd.randint(1, 3), groups * rnd.randint(1, 3)
        k = [rnd.randint(1, 3) for _ in range(dims)]
        stride = [rnd.randint(1, 3) for _ in range(dims)]
        dil = [rnd.randint(1, 2) for _ in range(dims)]
        pad = [rnd.randint(0, 2) for _ in range(dims)]
        size = [rnd.randint(dil[i] * (k[i] - 1) + 1, 8 if dims < 3 else 5) for i in range(dims)]
        transposed = rnd.random() < 0.3 and dims < 3 or (dims == 2 and rnd.random() < 0.2)
        opad = [rnd.randint(0, max(0, max(stride[i], dil[i]) - 1)) for i in range(dims)] if transposed else [0] * dims
        bias = rnd.random() < 0.5
        batched = rnd.random() < 0.8
        cases.append((dims, groups, cin, cout, k, stride, dil, pad, size, transposed, opad, bias, batched))
    return cases


@requires_torch
@pytest.mark.parametrize("case", _conv_cases())
def test_conv_against_torch(case):
    dims, groups, cin, cout, k, stride, dil, pad, size, transposed, opad, bias, batched = case
    g = torch.Generator().manual_seed(hash(str(case)) % 1000)
    shape = ([2] if batched else []) + [cin] + size
    x = torch.randn(shape, dtype=torch.float64, generator=g)
    w = torch.randn(([cin, cout // groups] if transposed else [cout, cin // groups]) + k,
                    dtype=torch.float64, generator=g)
    b = torch.randn(cout, dtype=torch.float64, generator=g) if bias else None
    name = f"conv_transpose{dims}d" if transposed else f"conv{dims}d"
    kw = dict(stride=stride, padding=pad, dilation=dil, groups=groups)
    if transposed:
        kw["output_padding"] = opad
    xs, ws = (t.clone().requires_grad_() for t in (x, w))
    bs = b.clone().requires_grad_() if bias else None
    try:
        want = getattr(TF, name)(xs, ws, bs, **kw)
    except RuntimeError as e:
        with pytest.raises(RuntimeError) as got:
            getattr(F, name)(_r(x), _r(w), _r(b) if bias else None, **kw)
        assert str(got.value).split("\n")[0] == str(e).split("\n")[0]
        return
    rx, rw = _r(x).requires_grad_(), _r(w).requires_grad_()
    rb = _r(b).requires_grad_() if bias else None
    got = getattr(F, name)(rx, rw, rb, **kw)
    assert tuple(got.shape) == tuple(want.shape)
    np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=1e-10, atol=1e-10)
    go = torch.randn(want.shape, dtype=torch.float64, generator=g)
    want.backward(go)
    got.backward(ratten.from_numpy(go.numpy().copy()))
    np.testing.assert_allclose(rx.grad.numpy(), xs.grad.numpy(), rtol=1e-10, atol=1e-10)
    np.testing.assert_allclose(rw.grad.numpy(), ws.grad.numpy(), rtol=1e-10, atol=1e-10)
    if bias:
        np.testing.assert_allclose(rb.grad.numpy(), bs.grad.numpy(), rtol=1e-10, atol=1e-10)
    # float32 too.
    got32 = getattr(F, name)(rx.detach().float(), rw.detach().float(),
                             rb.detach().float() if bias else None, **kw)
    np.testing.assert_allclose(got32.numpy(), want.detach().float().numpy(), rtol=1e-4, atol=1e-4)


@requires_torch
@pytest.mark.parametrize("dims,k,d,size", [(1, 4, 1, 7), (2, 3, 2, 6), (2, 4, 3, 5), (3, 2, 1, 4)])
def test_padding_same_against_torch(dims, k, d, size):
    x = torch.randn([1, 2] + [size] * dims, dtype=torch.float64)
    w = torch.randn([3, 2] + [k] * dims, dtype=torch.float64)
    want = getattr(TF, f"conv{dims}d")(x, w, padding="same", dilation=d)
    got = getattr(F, f"conv{dims}d")(_r(x), _r(w), padding="same", dilation=d)
    np.testing.assert_allclose(got.numpy(), want.numpy(), rtol=1e-10, atol=1e-10)


def _pool_cases():
    rnd = random.Random(7)
    out = []
    for _ in range(60):
        k = [rnd.randint(1, 4), rnd.randint(1, 4)]
        s = rnd.choice([None, [rnd.randint(1, 3), rnd.randint(1, 3)]])
        p = [rnd.randint(0, k[0] // 2), rnd.randint(0, k[1] // 2)]
        d = [rnd.randint(1, 2), rnd.randint(1, 2)]
        ceil = rnd.random() < 0.5
        shape = rnd.choice([[2, 3], [3]]) + [rnd.randint(1, 9), rnd.randint(1, 9)]
        out.append((k, s, p, d, ceil, shape, rnd.random() < 0.5, rnd.choice([None, 2, 5])))
    return out


@requires_torch
@pytest.mark.parametrize("case", _pool_cases())
def test_pools_against_torch(case):
    k, s, p, d, ceil, shape, include_pad, divisor = case
    x = torch.randn(shape, dtype=torch.float64)
    rx = _r(x)
    calls = [
        ("max_pool2d", dict(kernel_size=k, stride=s, padding=p, dilation=d, ceil_mode=ceil,
                            return_indices=True)),
        ("avg_pool2d", dict(kernel_size=k, stride=s, padding=p, ceil_mode=ceil,
                            count_include_pad=include_pad, divisor_override=divisor)),
    ]
    for name, kw in calls:
        xs = x.clone().requires_grad_()
        try:
            want = getattr(TF, name)(xs, **kw)
        except RuntimeError as e:
            with pytest.raises(RuntimeError) as got:
                getattr(F, name)(rx, **kw)
            assert str(got.value).split("\n")[0] == str(e).split("\n")[0], name
            continue
        r = rx.detach().requires_grad_()
        got = getattr(F, name)(r, **kw)
        if isinstance(want, tuple):
            np.testing.assert_array_equal(got[1].numpy(), want[1].numpy())
            got, want = got[0], want[0]
        np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=1e-12, atol=1e-12)
        if torch.isinf(want).any():
            # A window whose dilated taps all miss the input: torch's index for it may lie
            # outside the plane, and its backward then writes outside (ratten adds nothing).
            continue
        go = torch.randn(want.shape, dtype=torch.float64)
        want.backward(go)
        got.backward(ratten.from_numpy(go.numpy().copy()))
        np.testing.assert_allclose(r.grad.numpy(), xs.grad.numpy(), rtol=1e-12, atol=1e-12)


@requires_torch
@pytest.mark.parametrize("shape,out", [([1, 2, 7, 5], (3, 2)), ([3, 9, 4], (4, 4)), ([2, 1, 5, 5], 1),
                                       ([1, 1, 3, 8], (5, None)), ([1, 2, 6, 6], (6, 6))])
def test_adaptive_pools_against_torch(shape, out):
    x = torch.randn(shape, dtype=torch.float64)
    for name in ("adaptive_avg_pool2d", "adaptive_max_pool2d"):
        xs = x.clone().requires_grad_()
        r = _r(x).requires_grad_()
        want = getattr(TF, name)(xs, out)
        got = getattr(F, name)(r, out)
        np.testing.assert_allclose(got.detach().numpy(), want.detach().numpy(), rtol=1e-12)
        go = torch.randn(want.shape, dtype=torch.float64)
        want.backward(go)
        got.backward(ratten.from_numpy(go.numpy().copy()))
        np.testing.assert_allclose(r.grad.numpy(), xs.grad.numpy(), rtol=1e-12)
    _, wi = TF.adaptive_max_pool2d(x, out, return_indices=True)
    _, gi = F.adaptive_max_pool2d(_r(x), out, return_indices=True)
    np.testing.assert_array_equal(gi.numpy(), wi.numpy())


@requires_torch
def test_dtypes_and_grad_fn_names_against_torch():
    x = torch.randn(2, 3, 8, 8)
    w = torch.randn(4, 3, 3, 3)
    for dt in (torch.float32, torch.bfloat16, torch.float16):
        want = TF.conv2d(x.to(dt), w.to(dt), padding=1)
        got = F.conv2d(_r(x).to(getattr(ratten, str(dt).split(".")[1])),
                       _r(w).to(getattr(ratten, str(dt).split(".")[1])), padding=1)
        assert str(got.dtype) == str(want.dtype).replace("torch", "ratten")
        tol = 1e-4 if dt == torch.float32 else 5e-2
        np.testing.assert_allclose(got.float().numpy(), want.float().numpy(), rtol=tol, atol=tol * 10)
    for dt in (torch.int64, torch.int32, torch.float16):
        xi = (x * 10).to(dt)
        want = TF.max_pool2d(xi, 2)
        got = F.max_pool2d(_r(xi.float()).to(getattr(ratten, str(dt).split(".")[1])), 2)
        np.testing.assert_array_equal(got.float().numpy(), want.float().numpy())
    xl = (x * 10).long()
    np.testing.assert_array_equal(F.avg_pool2d(_r(xl.float()).long(), 2).numpy(),
                                  TF.avg_pool2d(xl, 2).numpy())
    xs = x.clone().requires_grad_()
    rx = _r(x).requires_grad_()
    for tf, rf in ((lambda t: TF.conv2d(t, w), lambda t: F.conv2d(t, _r(w))),
                   (lambda t: TF.max_pool2d(t, 2), lambda t: F.max_pool2d(t, 2)),
                   (lambda t: TF.avg_pool2d(t, 2), lambda t: F.avg_pool2d(t, 2)),
                   (lambda t: TF.adaptive_avg_pool2d(t, 3), lambda t: F.adaptive_avg_pool2d(t, 3)),
                   (lambda t: TF.adaptive_max_pool2d(t, 3), lambda t: F.adaptive_max_pool2d(t, 3)),
                   (lambda t: TF.conv_transpose2d(t, w.transpose(0, 1)),
                    lambda t: F.conv_transpose2d(t, _r(w.transpose(0, 1).contiguous())))):
        assert rf(rx).grad_fn.name() == tf(xs).grad_fn.name()


@requires_torch
def test_meta_shapes_against_torch():
    for shape, wshape, kw in [((2, 3, 9, 7), (4, 3, 3, 2), dict(stride=2, padding=1)),
                              ((2, 4, 9, 7), (4, 2, 3, 3), dict(groups=2, dilation=2))]:
        want = TF.conv2d(torch.empty(shape, device="meta"), torch.empty(wshape, device="meta"), **kw)
        got = F.conv2d(ratten.empty(shape, device="meta"), ratten.empty(wshape, device="meta"), **kw)
        assert got.device.type == "meta" and tuple(got.shape) == tuple(want.shape)
    xm, tm = ratten.empty(2, 3, 9, 9, device="meta"), torch.empty(2, 3, 9, 9, device="meta")
    assert tuple(F.max_pool2d(xm, 3, 2, 1, ceil_mode=True).shape) == tuple(TF.max_pool2d(tm, 3, 2, 1, ceil_mode=True).shape)
    assert tuple(F.avg_pool2d(xm, 4, 3).shape) == tuple(TF.avg_pool2d(tm, 4, 3).shape)
    assert tuple(F.adaptive_avg_pool2d(xm, (2, 5)).shape) == tuple(TF.adaptive_avg_pool2d(tm, (2, 5)).shape)


def _raises_like(tfn, rfn, kind=RuntimeError):
    with pytest.raises(Exception) as want:
        tfn()
    with pytest.raises(kind) as got:
        rfn()
    assert type(got.value).__name__ == type(want.value).__name__
    assert str(got.value).split("\n")[0] == str(want.value).split("\n")[0]


@requires_torch
def test_errors_against_torch():
    x, rx = torch.randn(1, 3, 5, 5), ratten.randn(1, 3, 5, 5)
    w = lambda *s: (torch.randn(*s), ratten.randn(*s))  # noqa: E731
    cases = [
        (w(4, 3, 7, 7), {}),
        (w(4, 2, 3, 3), {}),
        (w(4, 1, 3, 3), dict(groups=3)),
        (w(2, 1, 3, 3), dict(groups=3)),
        (w(4, 3, 3, 3), dict(stride=(1, 1, 1))),
        (w(4, 3, 3, 3), dict(padding=-1)),
        (w(4, 3, 3, 3), dict(stride=0)),
        (w(4, 3, 3, 3), dict(groups=0)),
        (w(4, 3, 3, 3), dict(dilation=(0, 1))),
        (w(4, 3, 3, 3), dict(stride=2, padding="same")),
        (w(4, 3, 3, 3), dict(padding="foo")),
    ]
    for (tw, rw), kw in cases:
        _raises_like(lambda: TF.conv2d(x, tw, **kw), lambda: F.conv2d(rx, rw, **kw))
    _raises_like(lambda: TF.conv2d(x, torch.randn(4, 3, 3, 3), torch.randn(3)),
                 lambda: F.conv2d(rx, ratten.randn(4, 3, 3, 3), ratten.randn(3)))
    _raises_like(lambda: TF.conv2d(x, torch.randn(4, 3, 3, 3).double()),
                 lambda: F.conv2d(rx, ratten.randn(4, 3, 3, 3).double()))
    _raises_like(lambda: TF.conv2d(x, torch.randn(4, 3, 3, 3), torch.randn(4).double()),
                 lambda: F.conv2d(rx, ratten.randn(4, 3, 3, 3), ratten.randn(4).double()))
    _raises_like(lambda: TF.conv2d(x[0, 0], torch.randn(4, 3, 3, 3)),
                 lambda: F.conv2d(rx[0, 0], ratten.randn(4, 3, 3, 3)))
    for kw in (dict(output_padding=1), dict(stride=2, output_padding=2), dict(padding=4), dict(dilation=0)):
        _raises_like(lambda: TF.conv_transpose2d(x, torch.randn(3, 2, 3, 3), **kw),
                     lambda: F.conv_transpose2d(rx, ratten.randn(3, 2, 3, 3), **kw))
    _raises_like(lambda: TF.conv_transpose2d(x, torch.randn(4, 2, 3, 3)),
                 lambda: F.conv_transpose2d(rx, ratten.randn(4, 2, 3, 3)))
    for f, kw in [("max_pool2d", dict(kernel_size=7)), ("max_pool2d", dict(kernel_size=3, padding=2)),
                  ("max_pool2d", dict(kernel_size=3, stride=0)), ("max_pool2d", dict(kernel_size=(1, 2, 3))),
                  ("max_pool2d", dict(kernel_size=2, dilation=0)), ("avg_pool2d", dict(kernel_size=7)),
                  ("avg_pool2d", dict(kernel_size=2, divisor_override=0)),
                  ("adaptive_avg_pool2d", dict(output_size=(-1, 2))),
                  ("adaptive_avg_pool2d", dict(output_size=(2, 2, 2)))]:
        _raises_like(lambda: getattr(TF, f)(x, **kw), lambda: getattr(F, f)(rx, **kw))
    _raises_like(lambda: TF.max_pool2d(x.bool(), 2), lambda: F.max_pool2d(rx.bool(), 2),
                 NotImplementedError)
    _raises_like(lambda: TF.avg_pool2d(x.int(), 2), lambda: F.avg_pool2d(rx.int(), 2),
                 NotImplementedError)
    _raises_like(lambda: TF.adaptive_max_pool2d(torch.randn(1, 0, 3, 4), 2),
                 lambda: F.adaptive_max_pool2d(ratten.randn(1, 0, 3, 4), 2))
