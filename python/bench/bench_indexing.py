"""Indexing: ratten vs torch and numpy, 1 and 2 threads.

    python python/bench/bench_indexing.py [--rounds N]

Cases (float32 source of 1M x 16, int64 indices): index_select of 1M random rows along dim 0
(numpy: ``np.take(x, i, axis=0)``); gather along dim 1 with a random 1M x 16 index (numpy:
``np.take_along_axis``); gather along dim 0 with a 1M x 16 index; scatter_add along dim 1
into a zeroed 1M x 16 tensor (numpy: ``np.put_along_axis`` has no add; the column is the
copy-free ``np.add.at`` over flat offsets); take of 1M random flat positions. Each library
runs in its own subprocess per thread count (torch's OpenMP workers keep spinning after its
calls and would hold the second core through the others' turns); within a process the
cases run round-robin, one call each per round (python/bench/_harness.py). Printed: the
median time per call and the ratios ratten/torch and ratten/numpy (below 1: ratten is
faster). numpy has no threads: its 2-thread column is its 1-thread run.
"""

from _harness import main, measure

ROWS = 1 << 20
COLS = 16
CASES = [
    "index_select 0",
    "gather dim 1",
    "gather dim 0",
    "scatter_add 1",
    "take 1M",
]


def worker(lib, threads, rounds):
    import numpy as np

    rng = np.random.default_rng(0)
    base = rng.standard_normal((ROWS, COLS), dtype=np.float32)
    rows = rng.integers(0, ROWS, ROWS, dtype=np.int64)
    cols = rng.integers(0, COLS, (ROWS, COLS), dtype=np.int64)
    rows2 = rng.integers(0, ROWS, (ROWS, COLS), dtype=np.int64)
    flat = rng.integers(0, ROWS * COLS, ROWS, dtype=np.int64)
    if lib == "numpy":
        x = base
        zeros = np.zeros_like(base)
        offs = (np.arange(ROWS, dtype=np.int64)[:, None] * COLS + cols).ravel()
        fns = {
            "index_select 0": lambda: np.take(x, rows, axis=0),
            "gather dim 1": lambda: np.take_along_axis(x, cols, axis=1),
            "gather dim 0": lambda: np.take_along_axis(x, rows2, axis=0),
            "scatter_add 1": lambda: np.add.at(zeros.copy().ravel(), offs, x.ravel()),
            "take 1M": lambda: np.take(x, flat),
        }
    else:
        if lib == "ratten":
            import ratten as m
        else:
            import torch as m
        m.set_num_threads(threads)
        x = m.from_numpy(base)
        i_rows, i_cols = m.from_numpy(rows), m.from_numpy(cols)
        i_rows2, i_flat = m.from_numpy(rows2), m.from_numpy(flat)
        zeros = m.zeros(ROWS, COLS)
        fns = {
            "index_select 0": lambda: x.index_select(0, i_rows),
            "gather dim 1": lambda: x.gather(1, i_cols),
            "gather dim 0": lambda: x.gather(0, i_rows2),
            "scatter_add 1": lambda: zeros.scatter_add(1, i_cols, x),
            "take 1M": lambda: x.take(i_flat),
        }
    measure(fns, CASES, rounds)


if __name__ == "__main__":
    main(__file__, "indexing, float32 1M x 16, int64 indices", CASES, worker, width=16)
