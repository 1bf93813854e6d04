"""ratten vs numpy (and torch, when installed), timed in one run.

    python python/bench/bench.py [--quick]

Cases: `a + b` and `add(a, b, out=c)` on 1-element tensors (the binding's overhead), and the
large cases of the TensorIterator issue (16M-element f32 add into out and functional,
4096x4096 with one operand transposed, int32 + float32, float16 / bfloat16, a 4096x1 + 1x4096
broadcast), with 1 and 2 threads.

`--mid`: f32 adds of 100K, 300K and 1M elements (out= and functional) against torch, 1 and 2
threads, 20 back-to-back calls per round (the sizes where threads wake late), each library in
its own subprocess (torch's OpenMP workers spin after each call and would hold the second core).

`--same-memory`: the 16M-element out= adds of float32, float16 and bfloat16, ratten against
torch on the SAME memory (numpy arrays wrapped zero-copy by both `from_numpy`s; bfloat16, which
numpy lacks, on each library's own memory), with 1 and 2 threads, and the 4096x4096 add with a
transposed operand, the 4096x1 + 1x4096 broadcast and int32 + float32 16M, all into out:
medians over the rounds and the median of the ratios of rounds paired by position. This
separates the kernels from the allocators (a difference on the same memory is the kernel's).
The 1-thread rows time both libraries in one process in interleaved rounds. The 2-thread rows
run each library in its own process (`--same-memory-worker`, alternating in a rotating order,
as `--mid`) over the same arrays, kept in .npy files under /dev/shm that both processes map
(np.load(mmap_mode="r+"): the same physical pages; removed at the end): in one process,
torch's OpenMP workers keep spinning after torch's turn (libgomp's default wait policy), even
20 ms later, and hold the second core through ratten's -- a 16M float16 add at 2 threads took
ratten 3.6-3.7 ms beside torch, 2.7 ms with torch not imported -- while `OMP_WAIT_POLICY=PASSIVE`
slows torch's own 2-thread adds to about its 1-thread time. `--procs-1t` also runs the
1-thread rows that way (a check that the process split and the /dev/shm pages, 4K pages where
numpy's own large arrays may get huge pages, move neither library).

The 1-element cases are statements timed with timeit (no Python function call around them),
interleaved: each round times every library once, in a rotating order, so the libraries are
measured at the same moments of machine load; printed are the median time per call over the
rounds and the median of the per-round ratios ratten/numpy and ratten/torch. The large cases
print the median time per call over several repeats. The `gil` rows time ratten's 1-element
calls again with the GIL released around every kernel (torch's behaviour; ratten releases it
only from `ratten._C.GIL_RELEASE_NUMEL` elements on).
"""

import argparse
import statistics
import sys
import time
import timeit

import numpy as np

import ratten

try:
    import torch
except ImportError:
    torch = None

LIBS = ("ratten", "numpy", "torch")


def best(fn, number, repeat):
    """Median over `repeat` runs of the mean time per call of `number` calls, in seconds."""
    fn()  # warm-up (first-call caches, page faults of fresh outputs)
    times = []
    for _ in range(repeat):
        t0 = time.perf_counter()
        for _ in range(number):
            fn()
        times.append((time.perf_counter() - t0) / number)
    return statistics.median(times)


def fmt(t):
    if t is None:
        return "n/a"
    if t < 1e-3:
        return f"{t * 1e6:8.3f} us"
    return f"{t * 1e3:8.2f} ms"


def ratio(a, b):
    return "n/a" if a is None or b is None else f"{a / b:5.2f}x"


def line(name, res, ratios=None):
    ratios = ratios or {
        other: None if res["ratten"] is None or res[other] is None else res["ratten"] / res[other]
        for other in ("numpy", "torch")
    }
    r = {k: "n/a" if v is None else f"{v:5.2f}x" for k, v in ratios.items()}
    print(
        f"{name:44s} ratten {fmt(res['ratten'])}  numpy {fmt(res['numpy'])}  torch {fmt(res['torch'])}"
        f"   ratten/numpy {r['numpy']}  ratten/torch {r['torch']}"
    )


def run_case(name, make, number, repeat):
    """make(lib) -> callable or None (lib in 'ratten', 'numpy', 'torch')."""
    res = {}
    for lib in LIBS:
        if lib == "torch" and torch is None:
            res[lib] = None
            continue
        try:
            fn = make(lib)
        except NotImplementedError as e:
            print(f"  [{lib}] {name}: {e}", file=sys.stderr)
            fn = None
        res[lib] = None if fn is None else best(fn, number, repeat)
    line(name, res)
    return res


def run_interleaved(name, make, number, rounds):
    """make(lib) -> (statement, namespace[, setup]) or None. Each round times `number` executions of
    every library's statement, the order rotating from round to round; prints the medians over
    the rounds of the time per execution and of the per-round ratios."""
    timers = {}
    for lib in LIBS:
        if lib == "torch" and torch is None:
            continue
        made = make(lib)
        if made is not None:
            stmt, ns, *setup = made
            timers[lib] = timeit.Timer(stmt, *setup, globals=ns)
            timers[lib].timeit(number)  # warm-up
    per_round = {lib: [] for lib in timers}
    order = list(timers)
    for r in range(rounds):
        for lib in order[r % len(order):] + order[: r % len(order)]:
            per_round[lib].append(timers[lib].timeit(number) / number)
    res = {lib: statistics.median(per_round[lib]) if lib in per_round else None for lib in LIBS}
    ratios = {}
    for other in ("numpy", "torch"):
        if "ratten" in per_round and other in per_round:
            ratios[other] = statistics.median(
                a / b for a, b in zip(per_round["ratten"], per_round[other])
            )
        else:
            ratios[other] = None
    line(name, res, ratios)
    return res


NP = {"float32": np.float32, "int32": np.int32, "float16": np.float16}


def arrays(lib, shapes_dtypes, transpose_second=False):
    out = []
    for i, (shape, dt) in enumerate(shapes_dtypes):
        if dt == "bfloat16":
            # numpy has no bfloat16: a constant tensor times the same.
            mod = ratten if lib == "ratten" else torch
            out.append(mod.full(shape, 3.0, dtype=mod.bfloat16))
            continue
        a = (np.arange(int(np.prod(shape))) % 7).astype(NP.get(dt, np.float32)).reshape(shape)
        if lib == "numpy":
            x = a
        elif lib == "torch":
            x = torch.from_numpy(a)
        else:
            x = ratten.from_numpy(a)
        if transpose_second and i == 1:
            x = x.T if lib == "numpy" else x.t()
        out.append(x)
    return out


def add_fn(lib, a, b, out=None):
    if lib == "numpy":
        return (lambda: np.add(a, b, out=out)) if out is not None else (lambda: a + b)
    mod = ratten if lib == "ratten" else torch
    return (lambda: mod.add(a, b, out=out)) if out is not None else (lambda: a + b)


def empty(lib, shape, dt):
    if lib == "numpy":
        return np.empty(shape, dtype=NP[dt])
    mod = ratten if lib == "ratten" else torch
    return mod.empty(*shape, dtype=getattr(mod, dt))


def interleave_calls(name, fns, rounds, reps=3):
    """fns: {'ratten': fn, 'torch': fn}. Each round times `reps` calls of each, the order
    rotating; prints the medians per call and the median per-round ratio ratten/torch."""
    for f in fns.values():
        f()
        f()
    keys = list(fns)
    per_round = {k: [] for k in keys}
    for r in range(rounds):
        for k in keys[r % len(keys):] + keys[: r % len(keys)]:
            t0 = time.perf_counter()
            for _ in range(reps):
                fns[k]()
            per_round[k].append((time.perf_counter() - t0) / reps)
    med = {k: statistics.median(v) for k, v in per_round.items()}
    rat = statistics.median(a / b for a, b in zip(per_round["ratten"], per_round["torch"]))
    print(f"{name:44s} ratten {fmt(med['ratten'])}  torch {fmt(med['torch'])}   ratten/torch {rat:5.2f}x")


SAME_N = 16 * 1024 * 1024
SAME_M = 4096


def same_memory_files(d):
    """Writes the arrays of `--same-memory`'s numpy-memory cases as .npy files under the folder
    `d` (672 MB in all), filled in place; returns their names."""
    import os

    n, m = SAME_N, SAME_M
    spec = {
        "f32_a": ((n,), np.float32, 7), "f32_b": ((n,), np.float32, 5), "f32_c": ((n,), np.float32, 0),
        "f16_a": ((n,), np.float16, 7), "f16_b": ((n,), np.float16, 5), "f16_c": ((n,), np.float16, 0),
        "sq_a": ((m, m), np.float32, 7), "sq_b": ((m, m), np.float32, 5), "sq_c": ((m, m), np.float32, 0),
        "i32_a": ((n,), np.int32, 7), "i32_b": ((n,), np.float32, 5), "i32_c": ((n,), np.float32, 0),
    }
    for name, (shape, dt, mod) in spec.items():
        x = np.lib.format.open_memmap(os.path.join(d, name + ".npy"), mode="w+", dtype=dt, shape=shape)
        if mod:
            x[...] = (np.arange(int(np.prod(shape))) % mod).reshape(shape)
        else:
            x[...] = 0
        x.flush()
        del x
    # The broadcast's column and row, as in-process: a[:, :1] and b[:1, :] of the 4096x4096 pair.
    sq_a = np.load(os.path.join(d, "sq_a.npy"), mmap_mode="r")
    sq_b = np.load(os.path.join(d, "sq_b.npy"), mmap_mode="r")
    np.save(os.path.join(d, "col.npy"), np.ascontiguousarray(sq_a[:, :1]))
    np.save(os.path.join(d, "row.npy"), np.ascontiguousarray(sq_b[:1, :]))
    del sq_a, sq_b
    return list(spec) + ["col", "row"]


def same_memory_worker(lib, threads, rounds, d, reps=3):
    """One library alone in this process (`--same-memory-worker`): maps the .npy files under `d`
    (written by `same_memory_files`) and wraps them zero-copy; for each case, `rounds` rounds of
    `reps` calls; prints one JSON object {case: [seconds per call, one per round]}."""
    import json
    import os

    mod = ratten if lib == "ratten" else torch
    mod.set_num_threads(threads)

    def load(name):
        # np.memmap over the shared pages; both from_numpys take it as is.
        return mod.from_numpy(np.load(os.path.join(d, name + ".npy"), mmap_mode="r+"))

    def time_rounds(fn):
        fn()
        fn()
        times = []
        for _ in range(rounds):
            t0 = time.perf_counter()
            for _ in range(reps):
                fn()
            times.append((time.perf_counter() - t0) / reps)
        return times

    res = {}
    for name, key in (("float32", "f32"), ("float16", "f16")):
        a, b, c = (load(f"{key}_{x}") for x in "abc")
        res[f"{name} add into out (numpy memory)"] = time_rounds(lambda: mod.add(a, b, out=c))
        del a, b, c
    a, b, c = (load(f"sq_{x}") for x in "abc")
    res["4096x4096 + transposed into out"] = time_rounds(lambda: mod.add(a, b.t(), out=c))
    col, row = load("col"), load("row")
    res["4096x1 + 1x4096 broadcast into out"] = time_rounds(lambda: mod.add(col, row, out=c))
    del a, b, c, col, row
    a, b, c = (load(f"i32_{x}") for x in "abc")
    res["int32 + float32 16M into out"] = time_rounds(lambda: mod.add(a, b, out=c))
    del a, b, c
    for name in ("float32", "float16", "bfloat16"):
        t = [mod.full((SAME_N,), 3.0, dtype=getattr(mod, name)) for _ in range(3)]
        res[f"{name} add into out (own memory)"] = time_rounds(lambda: mod.add(t[0], t[1], out=t[2]))
        del t
    print(json.dumps(res))


def same_memory_procs(threads, rounds, d, passes=3):
    """`--same-memory`'s cases with each library in its own process over the files under `d`:
    `passes` workers per library, alternating in a rotating order; prints per case the medians
    over all rounds and the median of the ratios of rounds paired by position."""
    import json
    import os
    import subprocess

    libs = ("ratten", "torch")
    per = {lib: {} for lib in libs}
    for p in range(passes):
        for lib in libs[p % 2:] + libs[: p % 2]:
            out = subprocess.run(
                [sys.executable, os.path.abspath(__file__), "--same-memory-worker", lib, str(threads), str(rounds), d],
                check=True,
                stdout=subprocess.PIPE,
                text=True,
            ).stdout
            for case, times in json.loads(out.strip().splitlines()[-1]).items():
                per[lib].setdefault(case, []).extend(times)
    print(
        f"== same-memory out= adds, 16M elements, {threads} thread(s), each library in its own process"
        f" on /dev/shm memory (load {os.getloadavg()[0]:.2f})"
    )
    for case in per["ratten"]:
        r, t = per["ratten"][case], per["torch"][case]
        rat = statistics.median(a / b for a, b in zip(r, t))
        print(f"{case:44s} ratten {fmt(statistics.median(r))}  torch {fmt(statistics.median(t))}   ratten/torch {rat:5.2f}x")


def same_memory_in_process(threads, rounds):
    """`--same-memory`'s cases with both libraries in this process, interleaved rounds."""
    import os

    ratten.set_num_threads(threads)
    torch.set_num_threads(threads)
    print(f"== same-memory out= adds, 16M elements, {threads} thread(s) (load {os.getloadavg()[0]:.2f})")
    n = SAME_N
    for name, dt in (("float32", np.float32), ("float16", np.float16)):
        a = (np.arange(n) % 7).astype(dt)
        b = (np.arange(n) % 5).astype(dt)
        c = np.zeros(n, dtype=dt)
        ta, tb, tc = (torch.from_numpy(x) for x in (a, b, c))
        ra, rb, rc = (ratten.from_numpy(x) for x in (a, b, c))
        interleave_calls(
            f"{name} add into out (numpy memory)",
            {"ratten": lambda: ratten.add(ra, rb, out=rc), "torch": lambda: torch.add(ta, tb, out=tc)},
            rounds,
        )
        del ta, tb, tc, ra, rb, rc
    # The other large cases of issue 6, on numpy memory: one operand transposed, a
    # broadcast of a column and a row, int32 + float32 (one fused pass).
    m = SAME_M
    a = (np.arange(m * m) % 7).astype(np.float32).reshape(m, m)
    b = (np.arange(m * m) % 5).astype(np.float32).reshape(m, m)
    c = np.zeros((m, m), dtype=np.float32)
    ta, tb, tc = (torch.from_numpy(x) for x in (a, b, c))
    ra, rb, rc = (ratten.from_numpy(x) for x in (a, b, c))
    interleave_calls(
        "4096x4096 + transposed into out",
        {"ratten": lambda: ratten.add(ra, rb.t(), out=rc), "torch": lambda: torch.add(ta, tb.t(), out=tc)},
        rounds,
    )
    col, row = a[:, :1].copy(), b[:1, :].copy()
    tcol, trow, rcol, rrow = torch.from_numpy(col), torch.from_numpy(row), ratten.from_numpy(col), ratten.from_numpy(row)
    interleave_calls(
        "4096x1 + 1x4096 broadcast into out",
        {"ratten": lambda: ratten.add(rcol, rrow, out=rc), "torch": lambda: torch.add(tcol, trow, out=tc)},
        rounds,
    )
    del ta, tb, tc, ra, rb, rc, a, b, c
    ai = (np.arange(n) % 7).astype(np.int32)
    bf = (np.arange(n) % 5).astype(np.float32)
    cf = np.zeros(n, dtype=np.float32)
    ta, tb, tc = (torch.from_numpy(x) for x in (ai, bf, cf))
    ra, rb, rc = (ratten.from_numpy(x) for x in (ai, bf, cf))
    interleave_calls(
        "int32 + float32 16M into out",
        {"ratten": lambda: ratten.add(ra, rb, out=rc), "torch": lambda: torch.add(ta, tb, out=tc)},
        rounds,
    )
    del ta, tb, tc, ra, rb, rc
    for name in ("float32", "float16", "bfloat16"):
        tt = [torch.full((n,), 3.0, dtype=getattr(torch, name)) for _ in range(3)]
        rt = [ratten.full((n,), 3.0, dtype=getattr(ratten, name)) for _ in range(3)]
        interleave_calls(
            f"{name} add into out (own memory)",
            {"ratten": lambda: ratten.add(rt[0], rt[1], out=rt[2]), "torch": lambda: torch.add(tt[0], tt[1], out=tt[2])},
            rounds,
        )
        del tt, rt


def same_memory(rounds, procs_1t=False):
    """The 16M out= adds on the same memory for both libraries (see the module doc): 1 thread in
    this process (and, with `procs_1t`, also one process per library), 2 threads one process per
    library on /dev/shm files."""
    import shutil
    import tempfile

    if torch is None:
        print("--same-memory needs torch")
        return
    # 1 thread first: torch then never starts OpenMP workers in this process.
    same_memory_in_process(1, rounds)
    d = tempfile.mkdtemp(prefix="ratten-bench-", dir="/dev/shm")
    try:
        same_memory_files(d)
        for threads in (1, 2) if procs_1t else (2,):
            same_memory_procs(threads, rounds, d)
    finally:
        shutil.rmtree(d, ignore_errors=True)


MID_SIZES = (100_000, 300_000, 1_000_000)
MID_REPS = 20


def mid_worker(lib, threads, rounds):
    """One library alone in this process (`--mid-worker`): for each mid size and form, `rounds`
    rounds of MID_REPS back-to-back calls; prints one JSON object {case: [seconds per call,
    one per round]}."""
    import json

    mod = ratten if lib == "ratten" else torch
    mod.set_num_threads(threads)
    res = {}
    for n in MID_SIZES:
        a = (np.arange(n) % 7).astype(np.float32)
        b = (np.arange(n) % 5).astype(np.float32)
        c = np.zeros(n, dtype=np.float32)
        x, y, z = (mod.from_numpy(v) for v in (a, b, c))
        for form, fn in (("into out", lambda: mod.add(x, y, out=z)), ("functional", lambda: x + y)):
            for _ in range(3):
                fn()
            times = []
            for _ in range(rounds):
                t0 = time.perf_counter()
                for _ in range(MID_REPS):
                    fn()
                times.append((time.perf_counter() - t0) / MID_REPS)
            res[f"f32 add {n} {form}"] = times
    print(json.dumps(res))


def mid_sizes(rounds, passes=3):
    """f32 adds of 100K, 300K and 1M elements (out= and functional) against torch on the same
    numpy values, 1 and 2 threads: the sizes where waking the workers costs as much as the op.

    Each library runs in its own subprocess (`--mid-worker`): torch's OpenMP workers spin for
    about 200 ms after each parallel region and would hold the second core while ratten runs
    in the same process. The subprocesses alternate, `passes` times per thread count in a
    rotating order, each timing `rounds` rounds of 20 back-to-back calls per case; printed are
    the medians over all rounds and the median of the ratios of rounds paired by position."""
    import json
    import os
    import subprocess

    if torch is None:
        print("--mid needs torch")
        return
    libs = ("ratten", "torch")
    for threads in (1, 2):
        per = {lib: {} for lib in libs}
        for p in range(passes):
            for lib in libs[p % 2:] + libs[: p % 2]:
                out = subprocess.run(
                    [sys.executable, os.path.abspath(__file__), "--mid-worker", lib, str(threads), str(rounds)],
                    check=True,
                    capture_output=True,
                    text=True,
                ).stdout
                for case, times in json.loads(out.strip().splitlines()[-1]).items():
                    per[lib].setdefault(case, []).extend(times)
        print(f"== mid sizes, {threads} thread(s), each library in its own process (load {os.getloadavg()[0]:.2f})")
        for case in per["ratten"]:
            r, t = per["ratten"][case], per["torch"][case]
            rat = statistics.median(a / b for a, b in zip(r, t))
            print(
                f"{case:44s} ratten {fmt(statistics.median(r))}  torch {fmt(statistics.median(t))}"
                f"   ratten/torch {rat:5.2f}x"
            )


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--quick", action="store_true", help="fewer repeats (a smoke run)")
    p.add_argument("--small", action="store_true", help="only the 1-element cases")
    p.add_argument("--same-memory", action="store_true", help="only the same-memory 16M out= adds vs torch")
    p.add_argument("--mid", action="store_true", help="only the 100K-1M f32 adds vs torch, one process each")
    p.add_argument(
        "--procs-1t", action="store_true", help="with --same-memory: also the 1-thread rows one process per library"
    )
    p.add_argument("--mid-worker", nargs=3, metavar=("LIB", "THREADS", "ROUNDS"), help=argparse.SUPPRESS)
    p.add_argument("--same-memory-worker", nargs=4, metavar=("LIB", "THREADS", "ROUNDS", "DIR"), help=argparse.SUPPRESS)
    args = p.parse_args()
    if args.mid_worker:
        lib, threads, worker_rounds = args.mid_worker
        mid_worker(lib, int(threads), int(worker_rounds))
        return
    if args.same_memory_worker:
        lib, threads, worker_rounds, d = args.same_memory_worker
        same_memory_worker(lib, int(threads), int(worker_rounds), d)
        return
    rounds, rep_large = (5, 2) if args.quick else (21, 5)
    if args.mid:
        mid_sizes(rounds)
        return
    if args.same_memory:
        same_memory(rounds, args.procs_1t)
        return
    n_small = 20000 if not args.quick else 2000

    print(f"ratten vs numpy {np.__version__}" + (f" vs torch {torch.__version__}" if torch else " (torch not installed)"))
    print("== 1-element tensors (binding overhead), interleaved rounds")

    def one(lib, dt="float32"):
        (x,) = arrays(lib, [((1,), dt)])
        return x

    def mod(lib):
        return {"ratten": ratten, "numpy": np, "torch": torch}[lib]

    def plus(lib):
        return "a + b", {"a": one(lib), "b": one(lib)}

    def add_out(lib):
        ns = {"m": mod(lib), "a": one(lib), "b": one(lib), "c": empty(lib, (1,), "float32")}
        return "m.add(a, b, out=c)", ns

    def plus_number(lib):
        return "a + 1.5", {"a": one(lib)}

    def iadd(lib):
        # `a` is a local of timeit's function, bound by the setup.
        return "a += b", {"a0": one(lib), "b": one(lib)}, "a = a0"

    def mul_int(lib):
        return "a * b", {"a": one(lib, "int32"), "b": one(lib, "int32")}

    small = [
        ("a + b (float32, 1 element)", plus),
        ("add(a, b, out=c) (float32, 1 element)", add_out),
        ("a + 1.5 (float32, 1 element)", plus_number),
        ("a += b (float32, 1 element)", iadd),
        ("a * b (int32, 1 element)", mul_int),
    ]
    for name, make in small:
        run_interleaved(name, make, n_small, rounds)

    ratten._C._set_always_release_gil(True)
    print("-- gil: the same with the GIL released around every ratten kernel (torch's way)")
    run_interleaved("gil: a + b (float32, 1 element)", plus, n_small, rounds)
    run_interleaved("gil: add(a, b, out=c) (float32, 1 element)", add_out, n_small, rounds)
    ratten._C._set_always_release_gil(False)
    if args.small:
        return

    n = 16 * 1024 * 1024
    for threads in (1, 2):
        ratten.set_num_threads(threads)
        if torch is not None:
            torch.set_num_threads(threads)
        print(f"== large cases, {threads} thread(s) (numpy is single-threaded)")

        def c_out(lib, dt_a="float32", dt_b="float32", dt_out="float32"):
            a, b = arrays(lib, [((n,), dt_a), ((n,), dt_b)])
            return add_fn(lib, a, b, out=empty(lib, (n,), dt_out))

        run_case("f32 add 16M into out", c_out, 1, rep_large)
        run_case("f32 add 16M functional", lambda lib: add_fn(lib, *arrays(lib, [((n,), "float32")] * 2)), 1, rep_large)

        def transposed(lib):
            a, b = arrays(lib, [((4096, 4096), "float32")] * 2, transpose_second=True)
            return add_fn(lib, a, b, out=empty(lib, (4096, 4096), "float32"))

        run_case("4096x4096 + transposed into out", transposed, 1, rep_large)
        run_case("int32 + float32 16M into out", lambda lib: c_out(lib, "int32", "float32"), 1, rep_large)
        run_case("float16 16M into out", lambda lib: c_out(lib, "float16", "float16", "float16"), 1, rep_large)

        def bf16(lib):
            if lib == "numpy":
                return None  # numpy has no bfloat16
            a, b = arrays(lib, [((n,), "bfloat16")] * 2)
            mod = ratten if lib == "ratten" else torch
            return add_fn(lib, a, b, out=mod.empty(n, dtype=mod.bfloat16))

        run_case("bfloat16 16M into out", bf16, 1, rep_large)

        def bcast(lib):
            a, b = arrays(lib, [((4096, 1), "float32"), ((1, 4096), "float32")])
            return add_fn(lib, a, b, out=empty(lib, (4096, 4096), "float32"))

        run_case("4096x1 + 1x4096 broadcast into out", bcast, 1, rep_large)


if __name__ == "__main__":
    main()
