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

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

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
    ap.add_argument("--rounds", type=int, default=11)
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
    print(f"sorting, float32, {a.rounds} rounds, CPU: {cpu}")
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
