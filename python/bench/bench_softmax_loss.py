"""softmax, log_softmax and cross_entropy: ratten vs torch (and numpy), 1 and 2 threads.

    python python/bench/bench_softmax_loss.py [--rounds N]

Cases (float32): softmax and log_softmax over the rows of 4096x1024 and over dim 0 of the
same matrix; the backward of log_softmax and of softmax over the rows; cross_entropy of 64x10
logits with class indices (one Python call: the per-call cost of a training step's loss),
forward and forward + backward. numpy computes the same expressions (no fused kernel). Each library runs
in its own subprocess per thread count; within a process the cases run round-robin. Printed:
the median time per call and the ratios (below 1: ratten is faster).
"""

from _harness import main, measure

CASES = [
    "softmax rows",
    "log_softmax rows",
    "softmax dim 0",
    "log_sm bwd rows",
    "sm bwd rows",
    "cross_entropy",
    "ce fwd+bwd",
]


def worker(lib, threads, rounds):
    import numpy as np

    rng = np.random.default_rng(0)
    base = rng.standard_normal((4096, 1024)).astype(np.float32)
    logits = rng.standard_normal((64, 10)).astype(np.float32)
    target = rng.integers(0, 10, 64)
    if lib == "numpy":
        def sm(x, d):
            e = np.exp(x - x.max(axis=d, keepdims=True))
            return e / e.sum(axis=d, keepdims=True)

        def lsm(x, d):
            s = x - x.max(axis=d, keepdims=True)
            return s - np.log(np.exp(s).sum(axis=d, keepdims=True))

        def ce(x, t):
            return -lsm(x, 1)[np.arange(len(t)), t].mean()

        y = lsm(base, 1)
        s = sm(base, 1)
        fns = {
            "softmax rows": lambda: sm(base, 1),
            "log_softmax rows": lambda: lsm(base, 1),
            "softmax dim 0": lambda: sm(base, 0),
            "log_sm bwd rows": lambda: base - np.exp(y) * base.sum(1, keepdims=True),
            "sm bwd rows": lambda: s * (base - (base * s).sum(1, keepdims=True)),
            "cross_entropy": lambda: ce(logits, target),
            "ce fwd+bwd": lambda: ce(logits, target),
        }
    else:
        if lib == "ratten":
            import ratten as m
            import ratten.nn.functional as F
        else:
            import torch as m
            import torch.nn.functional as F
        m.set_num_threads(threads)
        x = m.from_numpy(base)
        y = F.log_softmax(x, 1)
        s = F.softmax(x, 1)
        lg = m.from_numpy(logits)
        lgr = m.from_numpy(logits).requires_grad_(True)
        t = m.from_numpy(target)

        def ce_step():
            F.cross_entropy(lgr, t).backward()

        fns = {
            "softmax rows": lambda: F.softmax(x, 1),
            "log_softmax rows": lambda: F.log_softmax(x, 1),
            "softmax dim 0": lambda: F.softmax(x, 0),
            "log_sm bwd rows": lambda: m._log_softmax_backward_data(x, y, 1, m.float32),
            "sm bwd rows": lambda: m._softmax_backward_data(x, s, 1, m.float32),
            "cross_entropy": lambda: F.cross_entropy(lg, t),
            "ce fwd+bwd": ce_step,
        }
    measure(fns, CASES, rounds)


if __name__ == "__main__":
    main(__file__, "softmax and losses (float32)", CASES, worker, width=18)
