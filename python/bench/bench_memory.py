"""Autograd memory: ratten vs torch, each in its own process.

    python python/bench/bench_memory.py [--steps N]

1. Flat memory: N (default 10000) training steps of a 64-128-10 MLP (batch 64, forward,
   cross_entropy, backward, an SGD update under no_grad); the resident set size is read from
   /proc/self/statm every N/10 steps. Printed: the RSS after the first tenth and at the end,
   and the growth in between (a graph or saved tensor kept per step would grow it by the
   step's tensors, about 100 KB per step here).
2. Peak memory of a forward + backward of a deeper model (an MLP of 8 layers 2048 wide on a
   batch of 512, float32: about 130 MB of weights, 64 MB of activations and 128 MB of weight
   gradients): the high-water mark (VmHWM, reset through /proc/self/clear_refs before each
   step) over the resident set size just before the step, for the first step (cold
   allocators) and the third (steady state: memory the allocator kept from earlier steps is
   already resident); and the third step's peak over the RSS before the first step (what the
   process holds at its steady-state peak, the allocator's cache included); and the highest
   peak of the three steps over the RSS before the model was made (weights, input and step
   together: free memory an allocator kept from making the weights, which lowers the first
   two measures, counts here). Median of 3 runs in fresh processes. All are RSS: memory an
   allocator caches counts as used.
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


def reset_hwm():
    # Writing 5 to clear_refs resets VmHWM to the current RSS (Linux 4.0+).
    with open("/proc/self/clear_refs", "w") as f:
        f.write("5")


def peak(name):
    m, F = lib_of(name)
    width, depth, batch = 2048, 8, 512
    origin = rss_mb()
    model = 0.0
    ws = [(m.randn(width, width) * 0.02).requires_grad_(True) for _ in range(depth)]
    x = m.randn(batch, width)
    peaks = []
    start = rss_mb()
    for _ in range(3):
        base = rss_mb()
        reset_hwm()
        h = x
        for w in ws:
            h = F.linear(h, w).relu()
        h.sum().backward()
        for w in ws:
            w.grad = None
        del h
        peaks.append(hwm_mb() - base)
        # The peak over the RSS before the model was made: the whole model's memory at its
        # peak, free memory the allocator kept from making it included.
        model = max(model, hwm_mb() - origin)
    # The third step's peak over the RSS before the first: what the process holds at its
    # steady-state peak, memory its allocator kept from earlier steps included.
    return {"first": peaks[0], "steady": peaks[-1], "held": hwm_mb() - start, "model": model}


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
    print("peak of a forward + backward over the RSS before it (8 x 2048 MLP, batch 512), MB")
    res = {}
    for lib in libs:
        runs = [run(["peak", lib]) for _ in range(3)]
        res[lib] = {k: sorted(r[k] for r in runs)[1] for k in ("first", "steady", "held", "model")}
        print(f"  {lib:<7} first step {res[lib]['first']:8.1f}   third step {res[lib]['steady']:8.1f}"
              f"   third step over the RSS before the first {res[lib]['held']:8.1f}"
              f"   peak of the three over the RSS before the model {res[lib]['model']:8.1f}")
    if "torch" in res:
        for k in ("first", "held", "model"):
            if res["torch"][k] > 0:
                print(f"  ratio ratten/torch, {k:<6} {res['ratten'][k] / res['torch'][k]:.2f}")

if __name__ == "__main__":
    main()
