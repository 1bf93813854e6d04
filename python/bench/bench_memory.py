"""Autograd memory: ratten vs torch, each in its own process.

    python python/bench/bench_memory.py [--steps N]

1. Flat memory: N (default 10000) training steps of a 64-128-10 MLP (batch 64, forward,
   cross_entropy, backward, an SGD update under no_grad); the resident set size is read from
   /proc/self/statm every N/10 steps. Printed: the RSS after the first tenth and at the end,
   and the growth in between (a graph or saved tensor kept per step would grow it by the
   step's tensors, about 100 KB per step here).
2. Peak memory of one forward + backward of a deeper model (an MLP of 8 layers 2048 wide on a
   batch of 512, float32: about 130 MB of weights and 32 MB of activations): the process's
   high-water mark (VmHWM) growth over the model's steady state, median of 3 runs in fresh
   processes. Saved tensors freed as soon as their node has run keep it low.
"""

import argparse
import json
import subprocess
import sys


def rss_mb():
    with open("/proc/self/statm") as f:
        pages = int(f.read().split()[1])
    return pages * 4096 / 2**20


def hwm_mb():
    with open("/proc/self/status") as f:
        for line in f:
            if line.startswith("VmHWM:"):
                return int(line.split()[1]) / 1024
    return 0.0


def lib_of(name):
    if name == "ratten":
        import ratten as m
        import ratten.nn.functional as F
    else:
        import torch as m
        import torch.nn.functional as F
    m.set_num_threads(1)
    m.manual_seed(0)
    return m, F


def flat(name, steps):
    m, F = lib_of(name)
    w1 = (m.randn(128, 64) * 0.1).requires_grad_(True)
    b1 = m.zeros(128, requires_grad=True)
    w2 = (m.randn(10, 128) * 0.1).requires_grad_(True)
    b2 = m.zeros(10, requires_grad=True)
    params = [w1, b1, w2, b2]
    x = m.randn(64, 64)
    y = m.randint(0, 10, (64,))
    samples = []
    for step in range(steps):
        h = F.linear(x, w1, b1).relu()
        loss = F.cross_entropy(F.linear(h, w2, b2), y)
        loss.backward()
        with m.no_grad():
            for p in params:
                p.sub_(p.grad * 0.01)
                p.grad = None
        if (step + 1) % (steps // 10) == 0:
            samples.append(rss_mb())
    return {"first": samples[0], "last": samples[-1], "loss": float(loss.item())}


def peak(name):
    m, F = lib_of(name)
    width, depth, batch = 2048, 8, 512
    ws = [(m.randn(width, width) * 0.02).requires_grad_(True) for _ in range(depth)]
    x = m.randn(batch, width)
    # Steady state: one step done and freed, so allocator caches are warm in both libraries.
    for _ in range(2):
        h = x
        for w in ws:
            h = F.linear(h, w).relu()
        h.sum().backward()
        for w in ws:
            w.grad = None
        del h
    base = rss_mb()
    h = x
    for w in ws:
        h = F.linear(h, w).relu()
    h.sum().backward()
    return {"peak_over_base": hwm_mb() - base}


def run(args):
    out = subprocess.run([sys.executable, __file__, "--worker", *args], capture_output=True,
                         text=True, check=True)
    return json.loads(out.stdout.strip().splitlines()[-1])


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--steps", type=int, default=10000)
    ap.add_argument("--worker", nargs="+")
    a = ap.parse_args()
    if a.worker:
        kind, name = a.worker[0], a.worker[1]
        res = flat(name, int(a.worker[2])) if kind == "flat" else peak(name)
        print(json.dumps(res))
        return
    libs = ["ratten"]
    try:
        import torch  # noqa: F401

        libs.append("torch")
    except ImportError:
        pass
    print(f"{a.steps} MLP training steps (64-128-10, batch 64), RSS in MB")
    for lib in libs:
        r = run(["flat", lib, str(a.steps)])
        print(f"  {lib:<7} after {a.steps // 10:>6} steps {r['first']:8.1f}   after {a.steps:>6} "
              f"{r['last']:8.1f}   growth {r['last'] - r['first']:+7.1f}   loss {r['loss']:.4f}")
    print("peak of one forward + backward over the steady state (8 x 2048 MLP, batch 512), MB")
    res = {}
    for lib in libs:
        vals = sorted(run(["peak", lib])["peak_over_base"] for _ in range(3))
        res[lib] = vals[1]
        print(f"  {lib:<7} {res[lib]:8.1f}")
    if "torch" in res and res["torch"] > 0:
        print(f"  ratio ratten/torch {res['ratten'] / res['torch']:.2f}")


if __name__ == "__main__":
    main()
