"""Sorting: ratten vs torch and numpy, 1 and 2 threads.

    python python/bench/bench_sorting.py [--rounds N]

Cases (float32, standard normal values): sort (values and indices) and argsort of 1M
elements; topk(10) of 1M; sort along dim 1 and along dim 0 of a 1024x1024 matrix. numpy's
counterparts: np.sort (values only: numpy has no sort returning both), np.argsort, the
np.argpartition of the 10 largest then their order, np.sort along the axis. Each library runs
in its own subprocess per thread count (torch's OpenMP workers keep spinning after its calls
and would hold the second core through the others' turns); within a process the cases run
round-robin, one call each per round. Printed: the median time per call and the ratios
ratten/torch and ratten/numpy (below 1: ratten is faster). numpy has no threads: its 2-thread
column is its 1-thread run.
"""

from _harness import main, measure

N = 1 << 20
SIDE = 1024
CASES = [
    "sort 1M",
    "argsort 1M",
    "topk10 1M",
    "sort dim 1",
    "sort dim 0",
]


def worker(lib, threads, rounds):
    import numpy as np

    base = np.random.default_rng(0).standard_normal(N).astype(np.float32)
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

        def topk10():
            part = np.argpartition(-x, 10)[:10]
            return part[np.argsort(-x[part])]

        fns = {
            "sort 1M": lambda: np.sort(x),
            "argsort 1M": lambda: np.argsort(x),
            "topk10 1M": topk10,
            "sort dim 1": lambda: np.sort(mat, axis=1),
            "sort dim 0": lambda: np.sort(mat, axis=0),
        }
    else:
        fns = {
            "sort 1M": lambda: x.sort(),
            "argsort 1M": lambda: x.argsort(),
            "topk10 1M": lambda: x.topk(10),
            "sort dim 1": lambda: mat.sort(dim=1),
            "sort dim 0": lambda: mat.sort(dim=0),
        }
    measure(fns, CASES, rounds)


if __name__ == "__main__":
    main(__file__, "sorting, float32", CASES, worker)
