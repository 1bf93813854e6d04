"""Matrix products from Python: ratten vs torch and numpy, 1 and 2 threads.

    python python/bench/bench_matmul.py [--rounds N]

Cases (float32): mm of square 256, 1024 and 2048 matrices; the 64x784 @ 784x256 product of a
small MLP's first layer; linear (with bias) on the same shape; a batch of 64 products
32x64 @ 64x32 (bmm). numpy's counterparts: `@` (its BLAS; the harness runs numpy once, with
the threads its BLAS picks). Printed: the median time per call and the ratios ratten/torch and
ratten/numpy (below 1: ratten is faster). The GEMM's fraction of the machine's FMA peak, and
the Rust GEMM crates beside it, come from benches/gemm-crates.
"""

from _harness import main, measure

CASES = ["mm 256", "mm 1024", "mm 2048", "mlp 64x784x256", "linear 64x784x256", "bmm 64x32x64"]


def worker(lib, threads, rounds):
    import numpy as np

    rng = np.random.default_rng(0)
    arr = {n: rng.standard_normal((n, n)).astype(np.float32) for n in (256, 1024, 2048)}
    x = rng.standard_normal((64, 784)).astype(np.float32)
    w = rng.standard_normal((256, 784)).astype(np.float32)
    bias = rng.standard_normal(256).astype(np.float32)
    b1 = rng.standard_normal((64, 32, 64)).astype(np.float32)
    b2 = rng.standard_normal((64, 64, 32)).astype(np.float32)
    if lib == "numpy":
        wt = np.ascontiguousarray(w.T)
        fns = {f"mm {n}": (lambda a=a: a @ a) for n, a in arr.items()}
        fns["mlp 64x784x256"] = lambda: x @ wt
        fns["linear 64x784x256"] = lambda: x @ w.T + bias
        fns["bmm 64x32x64"] = lambda: b1 @ b2
    else:
        if lib == "ratten":
            import ratten as m
        else:
            import torch as m
        m.set_num_threads(threads)
        t = {n: m.from_numpy(a) for n, a in arr.items()}
        tx, tw, tb = m.from_numpy(x), m.from_numpy(w), m.from_numpy(bias)
        twt = tw.t().contiguous()
        tb1, tb2 = m.from_numpy(b1), m.from_numpy(b2)
        fns = {f"mm {n}": (lambda a=a: m.mm(a, a)) for n, a in t.items()}
        fns["mlp 64x784x256"] = lambda: m.mm(tx, twt)
        fns["linear 64x784x256"] = lambda: m.nn.functional.linear(tx, tw, tb)
        fns["bmm 64x32x64"] = lambda: m.bmm(tb1, tb2)
    measure(fns, CASES, rounds)


if __name__ == "__main__":
    main(__file__, "float32 matrix products", CASES, worker, width=20)
