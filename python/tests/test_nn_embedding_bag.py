"""F.embedding_bag and torch.embedding_bag's four outputs: against a numpy loop over the bags
(always) and against torch on the same inputs (when torch is installed): sum / mean / max,
per_sample_weights, padding_idx, include_last_offset, 2-D input, the dtypes, the gradients of
the weight and of per_sample_weights, and torch's argument errors."""

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


def np_embedding_bag(w, idx, offsets, mode, psw=None, include_last=False, padding_idx=None):
    """The definition: per bag, the sum / mean / max of the named rows (padding left out)."""
    nb = len(offsets) - 1 if include_last else len(offsets)
    out = np.zeros((nb, w.shape[1]), dtype=np.float64)
    for b in range(nb):
        end = offsets[b + 1] if b + 1 < nb else len(idx)
        pos = [p for p in range(offsets[b], end) if idx[p] != padding_idx]
        if not pos:
            continue
        rows = w[idx[pos]].astype(np.float64)
        if psw is not None:
            rows = rows * psw[pos][:, None]
        if mode == "sum":
            out[b] = rows.sum(0)
        elif mode == "mean":
            out[b] = rows.mean(0)
        else:
            out[b] = rows.max(0)
    return out


CASES = [
    # (offsets, include_last_offset)
    ([0, 3, 3, 7], False),
    ([0, 2, 4, 6, 8, 10], True),
    ([0], False),
    ([0, 5, 10], False),
]


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
@pytest.mark.parametrize("offsets,include_last", CASES)
@pytest.mark.parametrize("padding_idx", [None, 6, -1])
def test_matches_numpy(mode, offsets, include_last, padding_idx):
    w = rng.standard_normal((7, 5)).astype(np.float32)
    idx = np.array([3, 0, 6, 6, 2, 1, 3, 5, 4, 0])
    got = F.embedding_bag(ratten.from_numpy(idx), ratten.from_numpy(w),
                          ratten.from_numpy(np.array(offsets)), mode=mode,
                          include_last_offset=include_last, padding_idx=padding_idx)
    pad = None if padding_idx is None else padding_idx % 7
    want = np_embedding_bag(w, idx, offsets, mode, include_last=include_last, padding_idx=pad)
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-5, atol=1e-6)


def test_2d_input_and_per_sample_weights():
    w = rng.standard_normal((6, 4))
    idx = np.array([[1, 2, 5], [0, 0, 3]])
    psw = rng.standard_normal((2, 3))
    got = F.embedding_bag(ratten.from_numpy(idx), ratten.from_numpy(w), mode="sum",
                          per_sample_weights=ratten.from_numpy(psw))
    want = np_embedding_bag(w, idx.reshape(-1), [0, 3], "sum", psw=psw.reshape(-1))
    np.testing.assert_allclose(got.numpy(), want, rtol=1e-12)
    got = F.embedding_bag(ratten.from_numpy(idx), ratten.from_numpy(w))
    np.testing.assert_allclose(got.numpy(), np_embedding_bag(w, idx.reshape(-1), [0, 3], "mean"),
                               rtol=1e-12)


def test_gradients_match_numpy():
    w = rng.standard_normal((5, 3))
    idx = np.array([0, 2, 4, 4, 1])
    offsets = np.array([0, 2, 2])
    wt = ratten.from_numpy(w).requires_grad_()
    out = F.embedding_bag(ratten.from_numpy(idx), wt, ratten.from_numpy(offsets), mode="mean")
    g = rng.standard_normal(out.shape)
    out.backward(ratten.from_numpy(g))
    want = np.zeros_like(w)
    for b, (s, e) in enumerate([(0, 2), (2, 2), (2, 5)]):
        for p in range(s, e):
            want[idx[p]] += g[b] / (e - s)
    np.testing.assert_allclose(wt.grad.numpy(), want, rtol=1e-12)


@pytest.mark.parametrize("bad,err,text", [
    (dict(mode="min"), ValueError, "mode has to be one of sum, mean or max"),
    (dict(mode="max", scale_grad_by_freq=True), ValueError,
     "max mode does not support scaling the gradient by the frequency"),
    (dict(mode="max", sparse=True), ValueError, "max mode does not support sparse weights"),
    (dict(offsets=None), ValueError, "offsets has to be a 1D Tensor but got None"),
    (dict(mode="mean", per_sample_weights=[1.0, 1.0, 1.0]), NotImplementedError,
     "per_sample_weights is only supported for mode='sum'"),
    (dict(per_sample_weights=[1.0, 1.0]), ValueError,
     r"If per_sample_weights \(.*\) is not None, then it must have the same shape"),
])
def test_argument_errors(bad, err, text):
    kw = dict(offsets=ratten.tensor([0, 1]), mode="sum")
    kw.update(bad)
    if isinstance(kw.get("per_sample_weights"), list):
        kw["per_sample_weights"] = ratten.tensor(kw["per_sample_weights"])
    with pytest.raises(err, match=text):
        F.embedding_bag(ratten.tensor([0, 1, 2]), ratten.ones(4, 3), **kw)


def test_argument_errors_of_shapes():
    w = ratten.ones(4, 3)
    with pytest.raises(ValueError, match="weight has to be a 2D Tensor, but got Tensor of "
                                         "dimension 1"):
        F.embedding_bag(ratten.tensor([0]), ratten.ones(4), ratten.tensor([0]))
    with pytest.raises(ValueError, match="if input is 2D, then offsets has to be None"):
        F.embedding_bag(ratten.tensor([[0]]), w, ratten.tensor([0]))
    with pytest.raises(ValueError, match="input has to be 1D or 2D Tensor, but got Tensor of "
                                         "dimension 3"):
        F.embedding_bag(ratten.tensor([[[0]]]), w)
    with pytest.raises(RuntimeError, match="offsets\\[0\\] has to be 0"):
        F.embedding_bag(ratten.tensor([0, 1]), w, ratten.tensor([1]))
    with pytest.raises(RuntimeError, match="found idx to be 9"):
        F.embedding_bag(ratten.tensor([0, 9]), w, ratten.tensor([0]), mode="max")


# ---- against torch ---------------------------------------------------------------------------

def _both(arr):
    return ratten.from_numpy(arr.copy()), torch.from_numpy(arr.copy())


@needs_torch
@pytest.mark.parametrize("dtype", ["float32", "float64", "float16", "bfloat16"])
@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
@pytest.mark.parametrize("padding_idx", [None, 2])
@pytest.mark.parametrize("include_last", [False, True])
def test_outputs_match_torch(dtype, mode, padding_idx, include_last):
    w = rng.standard_normal((6, 5))
    idx = np.array([2, 0, 5, 5, 2, 1, 3, 2])
    # The last offset is the end of idx: with include_last_offset, torch's fast sum path and
    # its other paths agree only then.
    offsets = np.array([0, 3, 3, 8])
    rw, tw = _both(w)
    rw, tw = rw.to(getattr(ratten, dtype)), tw.to(getattr(torch, dtype))
    (ri, ti), (ro, to) = _both(idx), _both(offsets)
    for grad in (False, True):
        rw.requires_grad_(grad)
        tw.requires_grad_(grad)
        r = ratten.embedding_bag(rw, ri, ro, False, ["sum", "mean", "max"].index(mode), False,
                                 None, include_last, padding_idx)
        t = torch.embedding_bag(tw, ti, to, False, ["sum", "mean", "max"].index(mode), False,
                                None, include_last, padding_idx)
        rtol = {"float32": 1e-6, "float64": 1e-12, "float16": 1e-3, "bfloat16": 1e-2}[dtype]
        np.testing.assert_allclose(r[0].detach().double().numpy(),
                                   t[0].detach().double().numpy(), rtol=rtol, atol=rtol)
        for k in (1, 2, 3):
            assert tuple(r[k].shape) == tuple(t[k].shape), k
            assert r[k].dtype == ratten.int64
            np.testing.assert_array_equal(r[k].numpy(), t[k].numpy())


@needs_torch
@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
@pytest.mark.parametrize("freq", [False, True])
@pytest.mark.parametrize("padding_idx", [None, 1])
def test_gradients_match_torch(mode, freq, padding_idx):
    if mode == "max" and freq:
        pytest.skip("max mode does not scale by frequency")
    w = rng.standard_normal((6, 4))
    idx = np.array([5, 1, 1, 3, 0, 5, 2, 1])
    offsets = np.array([0, 2, 2, 5])
    g = rng.standard_normal((4, 4))
    grads = []
    for m, mf in ((ratten, F), (torch, TF)):
        wt = m.from_numpy(w.copy()).requires_grad_()
        out = mf.embedding_bag(m.from_numpy(idx.copy()), wt, m.from_numpy(offsets.copy()),
                               mode=mode, scale_grad_by_freq=freq, padding_idx=padding_idx)
        out.backward(m.from_numpy(g.copy()))
        grads.append(wt.grad.numpy())
    np.testing.assert_allclose(grads[0], grads[1], rtol=1e-12, atol=1e-14)


@needs_torch
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_per_sample_weights_match_torch(dtype):
    w = rng.standard_normal((6, 4)).astype(dtype)
    idx = np.array([5, 1, 1, 3, 0, 5, 2, 1])
    offsets = np.array([0, 2, 2, 5])
    psw = rng.standard_normal(8).astype(dtype)
    g = rng.standard_normal((4, 4)).astype(dtype)
    res = []
    for m, mf in ((ratten, F), (torch, TF)):
        wt = m.from_numpy(w.copy()).requires_grad_()
        pt = m.from_numpy(psw.copy()).requires_grad_()
        out = mf.embedding_bag(m.from_numpy(idx.copy()), wt, m.from_numpy(offsets.copy()),
                               mode="sum", per_sample_weights=pt, padding_idx=3)
        out.backward(m.from_numpy(g.copy()))
        res.append((out.detach().numpy(), wt.grad.numpy(), pt.grad.numpy()))
    tol = 1e-5 if dtype == "float32" else 1e-12
    for a, b in zip(*res):
        np.testing.assert_allclose(a, b, rtol=tol, atol=tol)


@needs_torch
def test_errors_match_torch():
    w = np.ones((5, 3), dtype=np.float32)
    cases = [
        (np.array([0, 1, 2]), np.array([1, 2]), {}),
        (np.array([0, 1, 2]), np.array([0, 4]), {}),
        # torch's fast float path reports a bad index in other words ("Expected i <
        # index_size"); its max path and padded paths use this text, as ratten does everywhere.
        (np.array([0, 1, 7]), np.array([0, 2]), {"mode": "max"}),
        (np.array([0, 1, 7]), np.array([0, 2]), {"padding_idx": 0}),
        (np.array([0, 1, 2]), np.array([0, 2]), {"padding_idx": 5}),
    ]
    for idx, offsets, kw in cases:
        msgs = []
        for m, mf in ((ratten, F), (torch, TF)):
            with pytest.raises(RuntimeError) as e:
                mf.embedding_bag(m.from_numpy(idx), m.from_numpy(w), m.from_numpy(offsets),
                                 **kw)
            msgs.append(str(e.value).split("\n")[0])
        assert msgs[0] == msgs[1]
