"""Autograd's overhead from Python: ratten vs torch, 1 thread, each library in its own process.

    python python/bench/bench_autograd.py [--rounds N]

Cases:
- `mul 1` / `mul 1 rg`: a 1-element `a * b` without / with requires_grad (the recording cost);
- `chain100`: forward + backward of a chain of 100 elementwise ops on a 1-element leaf
  (printed per operator);
- `backward 1`: `backward(retain_graph=True)` of a one-node graph (backward's fixed cost);
- `mlp step`: forward + backward of a 64-128-10 MLP (tanh, squared-error loss) on a batch of 64.
Printed: the median time per call (us) and the ratio ratten/torch (below 1: ratten is faster).
"""

import argparse
import json
import statistics
import subprocess
import sys
import time

from _harness import cpu_model

CASES = ["mul 1", "mul 1 rg", "chain100 (per op)", "backward 1", "mlp step"]


def worker(lib, rounds):
    import numpy as np

    if lib == "ratten":
        import ratten as m
    else:
        import torch as m
    m.set_num_threads(1)
    a = m.tensor([1.5])
    b = m.tensor([2.0])
    ar = m.tensor([1.5], requires_grad=True)
    x = m.tensor([0.5], requires_grad=True)
    one = m.tensor([2.0], requires_grad=True)
    y1 = one * 3.0
    rng = np.random.default_rng(0)
    xb = m.from_numpy(rng.standard_normal((64, 64)).astype(np.float32))
    tb = m.from_numpy(rng.standard_normal((64, 10)).astype(np.float32))
    w1 = m.from_numpy((rng.standard_normal((64, 128)) * 0.1).astype(np.float32)).requires_grad_()
    b1 = m.zeros(128, requires_grad=True)
    w2 = m.from_numpy((rng.standard_normal((128, 10)) * 0.1).astype(np.float32)).requires_grad_()
    b2 = m.zeros(10, requires_grad=True)

    def chain():
        y = x
        for i in range(25):
            y = y * 1.001
            y = y + 0.5
            y = y.sin()
            y = y - 0.25
        y.backward()

    def mlp():
        h = (xb.matmul(w1) + b1).tanh()
        out = h.matmul(w2) + b2
        loss = ((out - tb) * (out - tb)).mean()
        loss.backward()
        for p in (w1, b1, w2, b2):
            p.grad = None

    fns = {
        "mul 1": lambda: a * b,
        "mul 1 rg": lambda: ar * b,
        "chain100 (per op)": chain,
        "backward 1": lambda: y1.backward(retain_graph=True),
        "mlp step": mlp,
    }
    inner = {"mul 1": 2000, "mul 1 rg": 2000, "chain100 (per op)": 20, "backward 1": 500,
             "mlp step": 20}
    per = {"chain100 (per op)": 100}
    times = {c: [] for c in CASES}
    for c in CASES:
        fns[c]()
    for r in range(rounds):
        for c in CASES:
            f, n = fns[c], inner[c]
            t0 = time.perf_counter()
            for _ in range(n):
                f()
            times[c].append((time.perf_counter() - t0) / n / per.get(c, 1))
    print(json.dumps({c: statistics.median(v) for c, v in times.items()}))


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=9)
    ap.add_argument("--worker")
    a = ap.parse_args()
    if a.worker:
        worker(a.worker, a.rounds)
        return
    libs = ["ratten"]
    try:
        import torch  # noqa: F401

        libs.append("torch")
    except ImportError:
        pass

    def run(lib):
        out = subprocess.run(
            [sys.executable, __file__, "--worker", lib, "--rounds", str(a.rounds)],
            capture_output=True, text=True, check=True,
        )
        return json.loads(out.stdout.strip().splitlines()[-1])

    res = {lib: run(lib) for lib in libs}
    print(f"autograd overhead, 1 thread, {a.rounds} rounds, CPU: {cpu_model()}")
    print(f"{'case':<20}" + "".join(f"{lib:>12}" for lib in libs)
          + ("   ratten/torch" if "torch" in res else ""))
    for c in CASES:
        row = f"{c:<20}" + "".join(f"{res[lib][c] * 1e6:>9.2f} us" for lib in libs)
        if "torch" in res:
            row += f"{res['ratten'][c] / res['torch'][c]:>14.2f}x"
        print(row)


if __name__ == "__main__":
    main()
