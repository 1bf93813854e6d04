"""Reductions: ratten vs torch and numpy, 1 and 2 threads.

    python python/bench/bench_reductions.py [--rounds N]

Cases (float32): sum of 16M contiguous elements; sum over dim 0 and over dim 1 of a 4096x4096
matrix; var and std over each dim; mean of 16M. Each library runs in its own subprocess per
thread count (torch's OpenMP workers keep spinning after its calls and would hold the second
core through the others' turns); within a process the cases run round-robin, one call each
per round. Printed: the median time per call and the ratios ratten/torch and ratten/numpy
(below 1: ratten is faster). numpy has no threads: its 2-thread column is its 1-thread run.
The fraction of the read bandwidth each case reaches is printed by the Rust bench
`cargo bench -p ratten-aten --bench reductions`.
"""

from _harness import main, measure

N = 16 * 1024 * 1024
SIDE = 4096
CASES = [
    "sum 16M",
    "sum dim 0",
    "sum dim 1",
    "var dim 0",
    "var dim 1",
    "std dim 1",
    "mean 16M",
]


def worker(lib, threads, rounds):
    import numpy as np

    base = (np.arange(N, dtype=np.int64) % 1000).astype(np.float32) * np.float32(0.001)
    if lib == "ratten":
        import ratten as m

        m.set_num_threads(threads)
        x = m.from_numpy(base)
    elif lib == "torch":
        import torch as m

        m.set_num_threads(threads)
        x = m.from_numpy(base)
    else:
        m = np
        x = base
    mat = x.reshape(SIDE, SIDE)
    if lib == "numpy":
        fns = {
            "sum 16M": lambda: x.sum(),
            "sum dim 0": lambda: mat.sum(0),
            "sum dim 1": lambda: mat.sum(1),
            "var dim 0": lambda: mat.var(0, ddof=1),
            "var dim 1": lambda: mat.var(1, ddof=1),
            "std dim 1": lambda: mat.std(1, ddof=1),
            "mean 16M": lambda: x.mean(),
        }
    else:
        fns = {
            "sum 16M": lambda: x.sum(),
            "sum dim 0": lambda: mat.sum(0),
            "sum dim 1": lambda: mat.sum(1),
            "var dim 0": lambda: mat.var(0),
            "var dim 1": lambda: mat.var(1),
            "std dim 1": lambda: mat.std(1),
            "mean 16M": lambda: x.mean(),
        }
    measure(fns, CASES, rounds)


if __name__ == "__main__":
    main(__file__, "reductions, float32", CASES, worker)
