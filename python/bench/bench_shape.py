"""Shape operators: ratten vs torch and numpy, 1 and 2 threads.

    python python/bench/bench_shape.py [--rounds N]

Cases (float32 4096x4096 inputs, standard normal values): cat of two of them along dim 0 and
along dim 1 (numpy: ``np.concatenate``), the aim, as functional calls (a fresh 128 MB result:
torch's allocator maps and faults in new pages each call, ratten's caching allocator reuses its
blocks) and into a preallocated ``out=`` (the copy alone); and, for information, flip along dim 0 and
along dim 1, roll by 1 along dim 1 (numpy: ``np.roll``) and ``repeat(2, 2)`` of a 2048x2048
one (numpy: ``np.tile``). numpy's ``np.flip`` is a view: its column is the copy,
``np.ascontiguousarray(np.flip(x, axis))``. Each library runs in its own subprocess per
thread count (torch's OpenMP workers keep spinning after its calls and would hold the second
core through the others' turns); within a process the cases run round-robin, one call each
per round (python/bench/_harness.py). Printed: the median time per call and the ratios
ratten/torch and ratten/numpy (below 1: ratten is faster). numpy has no threads: its 2-thread
column is its 1-thread run.
"""

from _harness import main, measure

SIDE = 4096
CASES = [
    "cat dim 0",
    "cat dim 1",
    "cat 0 out=",
    "cat 1 out=",
    "flip dim 0",
    "flip dim 1",
    "roll dim 1",
    "repeat 2x2",
]


def worker(lib, threads, rounds):
    import numpy as np

    rng = np.random.default_rng(0)
    a = rng.standard_normal((SIDE, SIDE), dtype=np.float32)
    b = rng.standard_normal((SIDE, SIDE), dtype=np.float32)
    half = np.ascontiguousarray(a[: SIDE // 2, : SIDE // 2])
    if lib == "numpy":
        o0, o1 = np.empty((2 * SIDE, SIDE), np.float32), np.empty((SIDE, 2 * SIDE), np.float32)
        fns = {
            "cat dim 0": lambda: np.concatenate([a, b], axis=0),
            "cat dim 1": lambda: np.concatenate([a, b], axis=1),
            "cat 0 out=": lambda: np.concatenate([a, b], axis=0, out=o0),
            "cat 1 out=": lambda: np.concatenate([a, b], axis=1, out=o1),
            "flip dim 0": lambda: np.ascontiguousarray(np.flip(a, 0)),
            "flip dim 1": lambda: np.ascontiguousarray(np.flip(a, 1)),
            "roll dim 1": lambda: np.roll(a, 1, axis=1),
            "repeat 2x2": lambda: np.tile(half, (2, 2)),
        }
    else:
        if lib == "ratten":
            import ratten as m
        else:
            import torch as m
        m.set_num_threads(threads)
        x, y, h = m.from_numpy(a), m.from_numpy(b), m.from_numpy(half)
        o0, o1 = m.zeros(2 * SIDE, SIDE), m.zeros(SIDE, 2 * SIDE)
        fns = {
            "cat dim 0": lambda: m.cat([x, y], 0),
            "cat dim 1": lambda: m.cat([x, y], 1),
            "cat 0 out=": lambda: m.cat([x, y], 0, out=o0),
            "cat 1 out=": lambda: m.cat([x, y], 1, out=o1),
            "flip dim 0": lambda: x.flip([0]),
            "flip dim 1": lambda: x.flip([1]),
            "roll dim 1": lambda: x.roll(1, 1),
            "repeat 2x2": lambda: h.repeat(2, 2),
        }
    measure(fns, CASES, rounds)


if __name__ == "__main__":
    main(__file__, "shape operators, float32 4096x4096", CASES, worker)
