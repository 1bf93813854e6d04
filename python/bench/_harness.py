"""The harness the Python benches share: each library runs in its own subprocess per thread
count (torch's OpenMP workers keep spinning after its calls and would hold the second core
through the others' turns); within a process the cases run round-robin, one call each per
round. Each library's worker runs `--repeats` times, interleaved with the others' (ratten,
torch, numpy, ratten, ...), so that a slow spell of a shared machine falls on every library
alike. Printed: the median over those runs of each run's median time per call, and the ratios
ratten/torch and ratten/numpy (below 1: ratten is faster). numpy has no threads: its 2-thread
column is its 1-thread run."""

import argparse
import json
import os
import statistics
import subprocess
import sys
import time


def measure(fns, cases, rounds):
    """Times `fns[case]()` round-robin over `rounds` rounds after one warm-up call each, and
    prints the medians as the worker's JSON line."""
    times = {c: [] for c in cases}
    for c in cases:
        fns[c]()
    for r in range(rounds):
        for k in range(len(cases)):
            c = cases[(k + r) % len(cases)]
            t0 = time.perf_counter()
            fns[c]()
            times[c].append(time.perf_counter() - t0)
    print(json.dumps({c: statistics.median(v) for c, v in times.items()}))


def cpu_model():
    if os.path.exists("/proc/cpuinfo"):
        for line in open("/proc/cpuinfo"):
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    return ""


def main(script, title, cases, worker, width=12):
    """The bench's entry point: `worker(lib, threads, rounds)` when run as a worker, else the
    table of every library at 1 and 2 threads."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=11)
    ap.add_argument("--repeats", type=int, default=3, help="interleaved worker runs per library")
    ap.add_argument("--worker", nargs=3)
    a = ap.parse_args()
    if a.worker:
        worker(a.worker[0], int(a.worker[1]), int(a.worker[2]))
        return

    def run(lib, threads):
        # ratten's and torch's workers import numpy only to make data: its OpenBLAS threads
        # would otherwise spin after the import, on the cores the 2-thread runs use.
        env = dict(os.environ)
        if lib != "numpy":
            env.setdefault("OPENBLAS_NUM_THREADS", "1")
        out = subprocess.run(
            [sys.executable, script, "--worker", lib, str(threads), str(a.rounds)],
            capture_output=True,
            text=True,
            check=True,
            env=env,
        )
        return json.loads(out.stdout.strip().splitlines()[-1])

    libs = ["ratten", "numpy"]
    try:
        import torch  # noqa: F401

        libs.insert(1, "torch")
    except ImportError:
        pass
    def interleaved(names, threads):
        runs = {lib: [] for lib in names}
        for _ in range(max(1, a.repeats)):
            for lib in names:
                runs[lib].append(run(lib, threads))
        return {
            lib: {c: statistics.median(r[c] for r in rs) for c in cases} for lib, rs in runs.items()
        }

    print(f"{title}, {a.rounds} rounds x {a.repeats} runs, CPU: {cpu_model()}")
    numpy_times = interleaved(["numpy"], 1)["numpy"]
    for threads in (1, 2):
        res = interleaved([lib for lib in libs if lib != "numpy"], threads)
        res["numpy"] = numpy_times
        print(f"\n{threads} thread(s)")
        head = f"{'case':<{width}}" + "".join(f"{lib:>12}" for lib in libs)
        head += "".join(f"{'/' + lib:>10}" for lib in libs[1:])
        print(head)
        for c in cases:
            row = f"{c:<{width}}" + "".join(f"{res[lib][c] * 1e3:>9.2f} ms" for lib in libs)
            row += "".join(f"{res['ratten'][c] / res[lib][c]:>9.2f}x" for lib in libs[1:])
            print(row)
