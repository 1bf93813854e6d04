"""Convolution and pooling from Python: ratten vs torch (oneDNN) and numpy, 1 and 2 threads.

    python python/bench/bench_conv.py [--rounds N]

Cases (float32, batch 8): conv2d 3x3, 64->64 channels, padding 1 on 56x56 (issue 27's aim:
within 1.25x of torch); the same convolution's backward (input and weight gradients, through
autograd); a 1x1 convolution 64->128; a 3x3 stride-2 convolution 64->128; max_pool2d 3x3
stride 2 padding 1 and avg_pool2d 2x2 on 64x56x56. numpy's counterparts: im2col by
sliding_window_view and one tensordot (its BLAS) per convolution, reshaped max / mean for the
pools (the backward case repeats the forward: numpy has no autograd). Printed: the median time
per call and the ratios ratten/torch and ratten/numpy (below 1: ratten is faster), with the
CPU model.
"""

from _harness import main, measure

CASES = [
    "conv3x3 64-64",
    "conv3x3 64-64 bwd",
    "conv1x1 64-128",
    "conv3x3s2 64-128",
    "maxpool3x3s2",
    "avgpool2x2",
]


def _numpy_conv(np, x, w, stride, pad):
    from numpy.lib.stride_tricks import sliding_window_view

    xp = np.pad(x, ((0, 0), (0, 0), (pad, pad), (pad, pad))) if pad else x
    kh, kw = w.shape[2:]
    win = sliding_window_view(xp, (kh, kw), axis=(2, 3))[:, :, ::stride, ::stride]
    # (N, C, OH, OW, kh, kw) x (O, C, kh, kw) -> (N, OH, OW, O)
    return np.tensordot(win, w, axes=([1, 4, 5], [1, 2, 3])).transpose(0, 3, 1, 2)


def worker(lib, threads, rounds):
    import numpy as np

    rng = np.random.default_rng(0)
    x = rng.standard_normal((8, 64, 56, 56)).astype(np.float32)
    w3 = rng.standard_normal((64, 64, 3, 3)).astype(np.float32)
    w1 = rng.standard_normal((128, 64, 1, 1)).astype(np.float32)
    w3s = rng.standard_normal((128, 64, 3, 3)).astype(np.float32)
    if lib == "numpy":
        fns = {
            "conv3x3 64-64": lambda: _numpy_conv(np, x, w3, 1, 1),
            "conv3x3 64-64 bwd": lambda: _numpy_conv(np, x, w3, 1, 1),
            "conv1x1 64-128": lambda: _numpy_conv(np, x, w1, 1, 0),
            "conv3x3s2 64-128": lambda: _numpy_conv(np, x, w3s, 2, 1),
            "maxpool3x3s2": lambda: _numpy_maxpool(np, x),
            "avgpool2x2": lambda: x.reshape(8, 64, 28, 2, 28, 2).mean(axis=(3, 5)),
        }
    else:
        if lib == "ratten":
            import ratten as m
        else:
            import torch as m
        m.set_num_threads(threads)
        F = m.nn.functional
        tx, t3, t1, t3s = (m.from_numpy(a) for a in (x, w3, w1, w3s))
        gx = tx.detach().requires_grad_(True)
        gw = t3.detach().requires_grad_(True)
        gout = m.from_numpy(rng.standard_normal((8, 64, 56, 56)).astype(np.float32))

        def backward():
            y = F.conv2d(gx, gw, None, 1, 1)
            gi, gwt = m.autograd.grad(y, (gx, gw), gout)
            return gi, gwt

        fns = {
            "conv3x3 64-64": lambda: F.conv2d(tx, t3, None, 1, 1),
            "conv3x3 64-64 bwd": backward,
            "conv1x1 64-128": lambda: F.conv2d(tx, t1),
            "conv3x3s2 64-128": lambda: F.conv2d(tx, t3s, None, 2, 1),
            "maxpool3x3s2": lambda: F.max_pool2d(tx, 3, 2, 1),
            "avgpool2x2": lambda: F.avg_pool2d(tx, 2),
        }
    measure(fns, CASES, rounds)


def _numpy_maxpool(np, x):
    from numpy.lib.stride_tricks import sliding_window_view

    xp = np.pad(x, ((0, 0), (0, 0), (1, 1), (1, 1)), constant_values=-np.inf)
    return sliding_window_view(xp, (3, 3), axis=(2, 3))[:, :, ::2, ::2].max(axis=(4, 5))


if __name__ == "__main__":
    main(__file__, "float32 convolution and pooling, batch 8, 64x56x56", CASES, worker, width=20)
