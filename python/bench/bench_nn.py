"""nn activations: ratten vs torch, 1 and 2 threads.

    python python/bench/bench_nn.py [--rounds N]

Cases (float32, 4096x1024 contiguous, 16 MiB in and 16 MiB out): gelu (exact, erf),
gelu(approximate='tanh'), silu, and the backward kernels of gelu and silu. Each library runs
in its own subprocess per thread count (see _harness.py); within a process the cases run
round-robin. Printed: the median time per call, the bandwidth it reaches counting the bytes
read and written once, and the ratio ratten/torch (below 1: ratten is faster). numpy has no
gelu, so it is left out.
"""

import argparse
import json
import subprocess
import sys

from _harness import cpu_model, measure

ROWS, COLS = 4096, 1024
# Bytes moved per call: the input(s) read and the output written, 4 bytes each.
CASES = {
    "gelu": 2,
    "gelu tanh": 2,
    "silu": 2,
    "gelu_backward": 3,
    "silu_backward": 3,
}


def worker(lib, threads, rounds):
    import numpy as np

    base = np.random.default_rng(0).standard_normal((ROWS, COLS)).astype(np.float32) * 3
    grad = np.random.default_rng(1).standard_normal((ROWS, COLS)).astype(np.float32)
    if lib == "ratten":
        import ratten as m
        import ratten.nn.functional as f

        nn = f
    else:
        import torch as m
        import torch.nn.functional as f

        nn = m.ops.aten
    m.set_num_threads(threads)
    x = m.from_numpy(base)
    g = m.from_numpy(grad)
    fns = {
        "gelu": lambda: f.gelu(x),
        "gelu tanh": lambda: f.gelu(x, approximate="tanh"),
        "silu": lambda: f.silu(x),
        "gelu_backward": lambda: nn.gelu_backward(g, x),
        "silu_backward": lambda: nn.silu_backward(g, x),
    }
    measure(fns, list(CASES), rounds)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=21)
    ap.add_argument("--worker", nargs=3)
    a = ap.parse_args()
    if a.worker:
        worker(a.worker[0], int(a.worker[1]), int(a.worker[2]))
        return

    def run(lib, threads):
        out = subprocess.run(
            [sys.executable, __file__, "--worker", lib, str(threads), str(a.rounds)],
            capture_output=True, text=True, check=True,
        )
        return json.loads(out.stdout.strip().splitlines()[-1])

    libs = ["ratten"]
    try:
        import torch  # noqa: F401

        libs.append("torch")
    except ImportError:
        pass
    print(f"nn activations, float32 {ROWS}x{COLS}, {a.rounds} rounds, CPU: {cpu_model()}")
    for threads in (1, 2):
        res = {lib: run(lib, threads) for lib in libs}
        print(f"\n{threads} thread(s)")
        head = f"{'case':<15}" + "".join(f"{lib:>11}{'GB/s':>7}" for lib in libs)
        if "torch" in libs:
            head += f"{'/torch':>9}"
        print(head)
        for c, words in CASES.items():
            nbytes = words * 4 * ROWS * COLS
            row = f"{c:<15}"
            for lib in libs:
                t = res[lib][c]
                row += f"{t * 1e3:>8.2f} ms{nbytes / t / 1e9:>7.1f}"
            if "torch" in libs:
                row += f"{res['ratten'][c] / res['torch'][c]:>8.2f}x"
            print(row)


if __name__ == "__main__":
    main()
