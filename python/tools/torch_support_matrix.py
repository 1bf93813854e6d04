"""Dtype-support matrix: ratten against torch 2.15, every pointwise op of issue 6 over the 13
dtypes (all operands of one dtype), then the binary ops over every pair of dtypes (the second
operand also as a 0-dim tensor). Prints each case where one library raises and the other does
not, or both raise with other messages, and the counts. Not part of the test suite (it needs
torch). The complex32 kernels torch's CPU build lacks are among what it finds.

Usage (ratten built and importable, torch installed):
  OPENBLAS_NUM_THREADS=1 python python/tools/torch_support_matrix.py
"""

import os, sys, warnings
warnings.simplefilter("ignore")
import torch, ratten
DT = ["bool","uint8","int8","int16","int32","int64","float16","bfloat16","float32","float64","complex32","complex64","complex128"]
def mk(L, dt, vals=(1.5, 2.0)):
    d = getattr(L, dt)
    if dt == "bool": return L.tensor([True, False]).to(d)
    return L.tensor(list(vals)).to(d)
BIN = ["add","sub","rsub","mul","div","remainder","fmod","pow","maximum","minimum","eq","ne","lt","le","gt","ge",
       "logical_and","logical_or","logical_xor","bitwise_and","bitwise_or","bitwise_xor"]
UN = ["neg","abs","sign","exp","log","log1p","expm1","sqrt","rsqrt","sin","cos","tan","tanh","sigmoid","relu",
      "logical_not","bitwise_not"]
def cases(L):
    for op in BIN:
        yield op, lambda dt, op=op: getattr(L, op)(mk(L, dt), mk(L, dt))
        yield op+"_scalar", lambda dt, op=op: getattr(L, op)(mk(L, dt), 2)
        yield op+"_", lambda dt, op=op: getattr(mk(L, dt), op+"_")(mk(L, dt)) if hasattr(mk(L,dt), op+"_") else None
    for rm in ["trunc","floor"]:
        yield "div_"+rm, lambda dt, rm=rm: L.div(mk(L, dt), mk(L, dt), rounding_mode=rm)
    for op in UN:
        yield op, lambda dt, op=op: getattr(L, op)(mk(L, dt))
        yield op+"_", lambda dt, op=op: getattr(mk(L, dt), op+"_")()
    yield "clamp", lambda dt: L.clamp(mk(L, dt), mk(L, dt), mk(L, dt))
    yield "clamp_s", lambda dt: L.clamp(mk(L, dt), 0, 1)
    yield "clamp_min", lambda dt: L.clamp(mk(L, dt), min=0)
    yield "where", lambda dt: L.where(mk(L, "bool"), mk(L, dt), mk(L, dt))
    yield "lerp", lambda dt: L.lerp(mk(L, dt), mk(L, dt), mk(L, dt))
    yield "lerp_s", lambda dt: L.lerp(mk(L, dt), mk(L, dt), 0.5)
    yield "addcmul", lambda dt: L.addcmul(mk(L, dt), mk(L, dt), mk(L, dt))
    yield "addcdiv", lambda dt: L.addcdiv(mk(L, dt), mk(L, dt), mk(L, dt))
    yield "fill_", lambda dt: mk(L, dt).fill_(1)
    yield "fill_t", lambda dt: mk(L, dt).fill_(mk(L, dt)[0])
    for dst in DT:
        yield "to_"+dst, lambda dt, dst=dst: mk(L, dt).to(getattr(L, dst))
        yield "copy_from_"+dst, lambda dt, dst=dst: mk(L, dt).copy_(mk(L, dst))
def run(L):
    res = {}
    for name, f in cases(L):
        for dt in DT:
            res[(name, dt)] = outcome(lambda: f(dt))
    return res
def outcome(f):
    """'ok', or the exception's class and first line."""
    try:
        f()
        return "ok"
    except Exception as e:
        return type(e).__name__ + ": " + str(e).split("\n")[0][:120]


def report(what, t, r):
    """Prints the cases where torch and ratten differ (one raises, or other messages)."""
    n = 0
    for k in t:
        a, b = t[k], r.get(k)
        if (a == "ok") != (b == "ok") or (a != "ok" and a != b):
            n += 1
            print(f"{what} {k} torch: {a}\n{'':33s} ratten: {b}")
    print(what, "mismatches", n, "of", len(t))


report("single", run(torch), run(ratten))

# mixed pairs: binary ops with operands of two dtypes (2-element tensors) and a 0-dim second.
def pairs(L):
    res = {}
    for op in BIN + ["lerp_s", "where"]:
        for d1 in DT:
            for d2 in DT:
                for zd in (False, True):
                    def call(op=op, d1=d1, d2=d2, zd=zd):
                        a = mk(L, d1); b = mk(L, d2)
                        if zd: b = b[0]
                        if op == "lerp_s": L.lerp(a, b, 0.5)
                        elif op == "where": L.where(mk(L, "bool"), a, b)
                        else: getattr(L, op)(a, b)
                    res[(op, d1, d2, zd)] = outcome(call)
    return res


report("pair", pairs(torch), pairs(ratten))
