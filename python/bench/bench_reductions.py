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

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

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
    times = {c: [] for c in CASES}
    for c in CASES:
        fns[c]()
    for r in range(rounds):
        for k in range(len(CASES)):
            c = CASES[(k + r) % len(CASES)]
            t0 = time.perf_counter()
            fns[c]()
            times[c].append(time.perf_counter() - t0)
    print(json.dumps({c: statistics.median(v) for c, v in times.items()}))


def run(lib, threads, rounds):
    out = subprocess.run(
        [sys.executable, __file__, "--worker", lib, str(threads), str(rounds)],
        capture_output=True,
        text=True,
        check=True,
    )
    return json.loads(out.stdout.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--worker", nargs=3)
    a = ap.parse_args()
    if a.worker:
        worker(a.worker[0], int(a.worker[1]), int(a.worker[2]))
        return
    libs = ["ratten", "numpy"]
    try:
        import torch  # noqa: F401

        libs.insert(1, "torch")
    except ImportError:
        pass
    cpu = ""
    if os.path.exists("/proc/cpuinfo"):
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                cpu = line.split(":", 1)[1].strip()
                break
    print(f"reductions, float32, {a.rounds} rounds, CPU: {cpu}")
    numpy_times = run("numpy", 1, a.rounds)
    for threads in (1, 2):
        res = {lib: (numpy_times if lib == "numpy" else run(lib, threads, a.rounds)) for lib in libs}
        print(f"\n{threads} thread(s)")
        head = f"{'case':<12}" + "".join(f"{lib:>12}" for lib in libs)
        head += "".join(f"{'/' + lib:>10}" for lib in libs[1:])
        print(head)
        for c in CASES:
            row = f"{c:<12}" + "".join(f"{res[lib][c] * 1e3:>9.2f} ms" for lib in libs)
            row += "".join(f"{res['ratten'][c] / res[lib][c]:>9.2f}x" for lib in libs[1:])
            print(row)


if __name__ == "__main__":
    main()
