"""Differential tester: ratten against torch 2.15 over the pointwise operator family (issue 6).

It covers every op, dtype pair, layout, scalar kind and call form (~200k cases);
crates/ratten-aten/tests/it/torch_parity.rs and python/tests/test_torch_parity.py keep the
cases where ratten differed. Not part of the test suite (it needs torch).

Usage (ratten built and importable, torch installed):
  OPENBLAS_NUM_THREADS=1 python python/tools/torch_difftest.py OP [OP ...] [--seed N] [--n N]
  Writes one JSON line per discrepancy to stdout (prefixed 'DIFF ') and per-op case counts
  ('COUNT '). Run ops one process each (a crash then loses one op): e.g.
  for op in add mul where clamp; do python python/tools/torch_difftest.py $op --n 3 > $op.log; done
"""
import os
os.environ.setdefault("OPENBLAS_NUM_THREADS", "1")
import sys, json, math, random, warnings, operator, struct

import numpy as np
import torch
import ratten

torch.set_num_threads(1)
ratten.set_num_threads(1)
warnings.simplefilter("ignore")

DTYPES = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16",
          "float32", "float64", "complex32", "complex64", "complex128"]
INTS = ["uint8", "int8", "int16", "int32", "int64"]
FLOATS = ["float16", "bfloat16", "float32", "float64"]
COMPLEX = ["complex32", "complex64", "complex128"]
NP_OK = {"bool": np.bool_, "uint8": np.uint8, "int8": np.int8, "int16": np.int16, "int32": np.int32,
         "int64": np.int64, "float16": np.float16, "float32": np.float32, "float64": np.float64,
         "complex64": np.complex64, "complex128": np.complex128}
EPS = {"float16": 2.0 ** -10, "bfloat16": 2.0 ** -7, "float32": 2.0 ** -23, "float64": 2.0 ** -52,
       "complex32": 2.0 ** -10, "complex64": 2.0 ** -23, "complex128": 2.0 ** -52}


def dname(dt):
    return str(dt).split(".")[-1]


class Lib:
    def __init__(self, mod, name):
        self.m = mod
        self.name = name

    def dt(self, n):
        return getattr(self.m, n)


TL = Lib(torch, "torch")
RL = Lib(ratten, "ratten")

# ---------------------------------------------------------------- values


def gen_values(dtype, shape, rng, kind="normal"):
    n = int(np.prod(shape)) if len(shape) else 1
    if dtype == "bool":
        v = rng.random(n) < 0.5
        return v.reshape(shape)
    if dtype in INTS:
        info = np.iinfo(NP_OK[dtype])
        lo = 0 if dtype == "uint8" else -8
        v = rng.integers(lo, 9 if dtype != "uint8" else 17, size=n).astype(np.int64)
        if kind == "extreme":
            m = rng.random(n) < 0.3
            ext = rng.choice([int(info.max), int(info.min), int(info.max) - 1], size=n)
            v = np.where(m, ext, v)
        elif kind == "nonneg":
            v = np.abs(v) % 6
        elif kind == "nonzero":
            v = np.where(v == 0, 3, v)
        return v.reshape(shape).astype(np.int64)
    if dtype in FLOATS or dtype in COMPLEX:
        def one():
            v = rng.standard_normal(n) * rng.choice([0.5, 2.0, 10.0])
            r = rng.random(n)
            v = np.where(r < 0.15, np.round(v), v)
            if kind == "normal" or kind == "special":
                sp = np.array([0.0, -0.0, np.inf, -np.inf, np.nan, 0.5, -1.0, 1.0, 3.0, -2.5, 1e-3, 100.0])
                m = rng.random(n) < (0.25 if kind == "normal" else 0.6)
                v = np.where(m, rng.choice(sp, size=n), v)
            elif kind == "positive":
                v = np.abs(v) + 0.01
            elif kind == "convertible":  # in range for every int type incl. uint8
                v = np.clip(np.abs(v), 0, 100)
            elif kind == "unit":
                v = rng.random(n)
            return v
        if dtype in COMPLEX:
            v = one() + 1j * one()
            return v.reshape(shape).astype(np.complex128)
        return one().reshape(shape).astype(np.float64)
    raise ValueError(dtype)


def make_layout(shape, layout, rng):
    nd = len(shape)
    if layout == "T" and nd >= 2:
        b = list(shape)
        b[-1], b[-2] = b[-2], b[-1]
        return tuple(b), [("transpose", -1, -2)]
    if layout == "s" and nd >= 1:
        d = int(rng.integers(0, nd))
        b = list(shape)
        b[d] = 2 * shape[d]
        return tuple(b), [("getitem", (slice(None),) * d + (slice(None, None, 2),))]
    if layout == "o":
        if nd == 0:
            return (2,), [("getitem", 1)]
        b = list(shape)
        b[0] += 1
        return tuple(b), [("getitem", slice(1, None))]
    if layout == "e" and nd >= 1:
        b = list(shape)
        cand = [i for i in range(nd) if shape[i] != 1]
        if not cand:
            return tuple(shape), []
        for i in cand:
            if rng.random() < 0.6:
                b[i] = 1
        if b == list(shape):
            b[cand[0]] = 1
        return tuple(b), [("expand", tuple(shape))]
    return tuple(shape), []


def fmt_idx(i):
    if isinstance(i, tuple):
        return ", ".join(fmt_idx(x) for x in i) if i else "()"
    if isinstance(i, slice):
        return "%s:%s%s" % ("" if i.start is None else i.start, "" if i.stop is None else i.stop,
                            "" if i.step is None else ":%d" % i.step)
    return repr(i)


def pyrepr(v):
    if isinstance(v, list):
        return "[" + ", ".join(pyrepr(x) for x in v) + "]"
    if isinstance(v, float):
        if math.isnan(v):
            return "nan"
        if math.isinf(v):
            return "inf" if v > 0 else "-inf"
        return repr(v)
    if isinstance(v, complex):
        return "complex(%s, %s)" % (pyrepr(v.real), pyrepr(v.imag))
    return repr(v)


class TSpec:
    """A tensor of a dtype/shape/layout; built identically in both libraries."""

    def __init__(self, dtype, shape, rng, layout="c", kind="normal", values=None):
        self.dtype = dtype
        self.shape = tuple(shape)
        self.base_shape, self.ops = make_layout(self.shape, layout, rng)
        self.layout = layout if self.ops else "c"
        if values is not None:
            self.base_shape, self.ops, self.layout = self.shape, [], "c"
            self.carrier = np.asarray(values).reshape(self.shape)
        else:
            self.carrier = gen_values(dtype, self.base_shape, rng, kind)
        self._tbase = None

    def tbase(self):
        if self._tbase is None:
            self._tbase = torch.from_numpy(np.array(self.carrier)).to(getattr(torch, self.dtype))
        return self._tbase

    def build(self, L):
        tb = self.tbase()
        if L is TL:
            t = tb.clone()
        else:
            if self.dtype == "bfloat16":
                t = ratten.from_numpy(tb.float().numpy().copy()).to(ratten.bfloat16)
            elif self.dtype == "complex32":
                t = ratten.from_numpy(tb.to(torch.complex64).numpy().copy()).to(ratten.complex32)
            else:
                t = ratten.from_numpy(tb.numpy().copy())
        for op in self.ops:
            if op[0] == "transpose":
                t = t.transpose(op[1], op[2])
            elif op[0] == "getitem":
                t = t[op[1]]
            elif op[0] == "expand":
                t = t.expand(*op[1])
        return t

    def repr(self, L="L"):
        tb = self.tbase()
        if tb.numel() == 0:
            s = "%s.empty(%r, dtype=%s.%s)" % (L, tuple(self.base_shape), L, self.dtype)
        else:
            s = "%s.tensor(%s, dtype=%s.%s)" % (L, pyrepr(tb.tolist()), L, self.dtype)
        for op in self.ops:
            if op[0] == "transpose":
                s += ".transpose(%d, %d)" % (op[1], op[2])
            elif op[0] == "getitem":
                s += "[%s]" % fmt_idx(op[1])
            elif op[0] == "expand":
                s += ".expand%r" % (tuple(op[1]),)
        return s


class Scal:
    def __init__(self, v):
        self.v = v

    def build(self, L):
        return self.v

    def repr(self, L="L"):
        return pyrepr(self.v)

    @property
    def dtype(self):
        return "py" + type(self.v).__name__


class DType:
    def __init__(self, n):
        self.n = n

    def build(self, L):
        return L.dt(self.n)

    def repr(self, L="L"):
        return "%s.%s" % (L, self.n)

    dtype = "dtype"


# ---------------------------------------------------------------- comparison


def flat(v):
    if isinstance(v, list):
        out = []
        for x in v:
            out.extend(flat(x))
        return out
    return [v]


def ordered_bits(x, dt):
    if dt == "bfloat16":
        b = struct.unpack("<I", struct.pack("<f", x))[0] >> 16
        nb = 16
    elif dt in ("float16", "complex32"):
        b = int(np.array(x, dtype=np.float16).view(np.uint16))
        nb = 16
    elif dt in ("float32", "complex64"):
        b = struct.unpack("<I", struct.pack("<f", x))[0]
        nb = 32
    else:
        b = struct.unpack("<Q", struct.pack("<d", x))[0]
        nb = 64
    if b >> (nb - 1):
        return -(b & ((1 << (nb - 1)) - 1))
    return b


def real_cmp(a, b, dt, tol):
    """returns (ok, signed_zero_diff, ulp)"""
    if math.isnan(a) and math.isnan(b):
        return True, False, 0
    if math.isnan(a) or math.isnan(b):
        return False, False, float("inf")
    if a == b:
        if a == 0 and math.copysign(1, a) != math.copysign(1, b):
            return True, True, 0
        return True, False, 0
    if math.isinf(a) or math.isinf(b):
        return False, False, float("inf")
    u = abs(ordered_bits(a, dt) - ordered_bits(b, dt))
    return u <= tol, False, u


def values_cmp(tv, rv, dt, tol):
    """tv, rv: flat lists. Returns (kind, detail) with kind in None/'value'/'signzero'."""
    if len(tv) != len(rv):
        return "value", "numel %d vs %d" % (len(tv), len(rv))
    worst = None
    sz = None
    for i, (a, b) in enumerate(zip(tv, rv)):
        if dt == "bool" or dt in INTS:
            if a != b or type(a) != type(b):
                return "value", "idx %d: torch %r ratten %r" % (i, a, b)
            continue
        if dt in COMPLEX:
            a, b = complex(a), complex(b)
            ok1, z1, u1 = real_cmp(a.real, b.real, dt, tol)
            ok2, z2, u2 = real_cmp(a.imag, b.imag, dt, tol)
            ok = ok1 and ok2
            if not ok and tol > 0 and all(map(math.isfinite, [a.real, a.imag, b.real, b.imag])):
                ok = abs(a - b) <= 4 * tol * EPS[dt] * max(abs(a), abs(b))
            z = z1 or z2
            u = max(u1, u2)
        else:
            ok, z, u = real_cmp(float(a), float(b), dt, tol)
        if not ok:
            if worst is None or u > worst[0]:
                worst = (u, i, a, b)
        elif z and sz is None:
            sz = (i, a, b)
    if worst:
        u, i, a, b = worst
        return "value", "idx %d: torch %s ratten %s (ulp %s)" % (i, pyrepr(a), pyrepr(b), u)
    if sz:
        return "signzero", "idx %d: torch %s ratten %s" % sz
    return None, ""


def norm_strides(t):
    return tuple(s for s, n in zip(t.stride(), t.shape) if n > 1)


def summarize(v):
    if isinstance(v, (torch.Tensor, ratten.Tensor)):
        vals = v.tolist()
        s = pyrepr(vals)
        if len(s) > 160:
            s = s[:160] + "..."
        return "tensor(%s, dtype=%s, shape=%s, stride=%s)" % (s, dname(v.dtype), tuple(v.shape), tuple(v.stride()))
    if isinstance(v, tuple):
        return "(" + ", ".join(summarize(x) for x in v) + ")"
    if isinstance(v, BaseException):
        return "%s: %s" % (type(v).__name__, str(v)[:400])
    return pyrepr(v) if isinstance(v, (float, complex, list)) else repr(v)


def norm_msg(s):
    return s.replace("ratten", "torch")


def cmp_obj(t, r, tol, check_strides):
    """Returns list of (category, detail)."""
    out = []
    if isinstance(t, torch.Tensor):
        if not isinstance(r, ratten.Tensor):
            return [("type", "torch Tensor, ratten %s" % type(r).__name__)]
        td, rd = dname(t.dtype), dname(r.dtype)
        if td != rd:
            return [("dtype", "%s vs %s" % (td, rd))]
        if tuple(t.shape) != tuple(r.shape):
            return [("shape", "%s vs %s" % (tuple(t.shape), tuple(r.shape)))]
        kind, det = values_cmp(flat(t.tolist()), flat(r.tolist()), td, tol.get(td, 0) if isinstance(tol, dict) else tol)
        if kind:
            out.append((kind, det))
        if check_strides and t.numel() > 1 and norm_strides(t) != norm_strides(r):
            out.append(("stride", "%s vs %s" % (tuple(t.stride()), tuple(r.stride()))))
        return out
    if isinstance(t, (tuple, list)):
        if not isinstance(r, (tuple, list)) or len(t) != len(r):
            return [("type", "torch %s, ratten %s" % (summarize(t), summarize(r)))]
        for a, b in zip(t, r):
            out.extend(cmp_obj(a, b, tol, check_strides))
        return out
    if isinstance(t, torch.dtype):
        if dname(t) != dname(r) or not isinstance(r, ratten.dtype):
            return [("dtype", "%s vs %s" % (t, r))]
        return []
    if type(t) != type(r):
        return [("type", "torch %r ratten %r" % (t, r))]
    if isinstance(t, float):
        ok, z, u = real_cmp(t, r, "float64", 0)
        return [] if ok and not z else [("value", "%r vs %r" % (t, r))]
    if t != r:
        return [("value", "%r vs %r" % (t, r))]
    return []


# ---------------------------------------------------------------- running

COUNTS = {}


def call(L, fn):
    try:
        return True, fn(L)
    except KeyboardInterrupt:
        raise
    except BaseException as e:  # noqa
        return False, e


def report(op, variant, cat, detail, repro, tres, rres, dtypes):
    rec = dict(op=op, variant=variant, cat=cat, detail=detail, repro=repro,
               torch=summarize(tres), ratten=summarize(rres), dtypes=dtypes)
    print("DIFF " + json.dumps(rec), flush=True)


def check(op, variant, fn, repro, dtypes, tol=0, strides=True):
    """fn(L) -> result (object to compare). repro uses 'L' for the library."""
    COUNTS[op] = COUNTS.get(op, 0) + 1
    tok, tres = call(TL, fn)
    rok, rres = call(RL, fn)
    if tok and rok:
        for cat, det in cmp_obj(tres, rres, tol, strides):
            report(op, variant, cat, det, repro, tres, rres, dtypes)
    elif tok and not rok:
        report(op, variant, "ratten-err", "%s: %s" % (type(rres).__name__, str(rres)[:300]), repro, tres, rres, dtypes)
    elif rok and not tok:
        report(op, variant, "torch-err", "%s: %s" % (type(tres).__name__, str(tres)[:300]), repro, tres, rres, dtypes)
    else:
        tc, rc = type(tres).__name__, type(rres).__name__
        if tc != rc:
            report(op, variant, "errclass", "%s vs %s" % (tc, rc), repro, tres, rres, dtypes)
        tm, rm = norm_msg(str(tres)), norm_msg(str(rres))
        if tm != rm:
            cat = "errmsg" if tm.splitlines()[:1] != rm.splitlines()[:1] else "errmsg-tail"
            report(op, variant, cat, "", repro, tres, rres, dtypes)



def check_outs(op, variant, rng, fn, repro, dtypes, tol=0):
    """The out= form of fn(L, **out_kw) (repro ending in ')'): an out of the result's dtype and
    one of a random dtype, each of the result's shape (as torch computes it)."""
    ok, tr = call(TL, fn)
    if not ok:
        return
    shp = tuple(tr.shape)
    for odt in [dname(tr.dtype), str(rng.choice(DTYPES))]:
        def f_out(L, odt=odt):
            o = L.m.zeros(shp, dtype=L.dt(odt))
            rr = fn(L, out=o)
            return (rr is o, o)
        check(op, variant, f_out, repro[:-1] + ", out=L.zeros(%r, dtype=L.%s))" % (shp, odt), dtypes, tol)

def rep(s, L="L"):
    return s


# ---------------------------------------------------------------- shapes

def rand_shape(rng, maxnd=3):
    nd = int(rng.integers(0, maxnd + 1))
    return tuple(int(rng.choice([0, 1, 2, 3, 4], p=[0.06, 0.24, 0.3, 0.25, 0.15])) for _ in range(nd))


def bcast_shapes(rng, k=2, bad_p=0.07):
    out = rand_shape(rng)
    shapes = []
    for _ in range(k):
        nd = int(rng.integers(0, len(out) + 1)) if rng.random() < 0.3 else len(out)
        s = list(out[len(out) - nd:])
        for i in range(nd):
            if rng.random() < 0.25:
                s[i] = 1
        shapes.append(tuple(s))
    if rng.random() < bad_p and len(out) > 0:
        j = int(rng.integers(0, k))
        s = list(shapes[j])
        if s:
            i = int(rng.integers(0, len(s)))
            s[i] = s[i] + 2 if s[i] != 1 else 5
            shapes[j] = tuple(s)
    return shapes


def layout(rng):
    return str(rng.choice(["c", "c", "T", "s", "o", "e"]))


# ---------------------------------------------------------------- op tables

APPROX = {"float16": 1, "bfloat16": 1, "float32": 4, "float64": 4, "complex32": 2, "complex64": 8, "complex128": 8}
EXACT = 0

BINARY = {
    # name: dict(inplace, out, kw list, dunder, rdunder, idunder, tol, scalar_first, valkind)
    "add": dict(kws=[{}, {"alpha": 2}, {"alpha": 0.5}, {"alpha": True}, {"alpha": 1j}], d=operator.add, id="__iadd__", rd=True, tol={"float16": 1, "bfloat16": 1, "float32": 1, "float64": 1, "complex32": 1, "complex64": 1, "complex128": 1}),
    "sub": dict(kws=[{}, {"alpha": 3}, {"alpha": -0.5}, {"alpha": True}], d=operator.sub, id="__isub__", rd=True, tol={"float16": 1, "bfloat16": 1, "float32": 1, "float64": 1, "complex32": 1, "complex64": 1, "complex128": 1}),
    "rsub": dict(kws=[{}, {"alpha": 2}, {"alpha": 0.5}], d=None, inplace=False, tol={"float16": 1, "bfloat16": 1, "float32": 1, "float64": 1, "complex32": 1, "complex64": 1, "complex128": 1}),
    "mul": dict(kws=[{}], d=operator.mul, id="__imul__", rd=True, tol=EXACT),
    "div": dict(kws=[{}, {"rounding_mode": "trunc"}, {"rounding_mode": "floor"}, {"rounding_mode": None}],
                d=operator.truediv, id="__itruediv__", rd=True, tol={"float16": 0, "bfloat16": 0, "float32": 0, "float64": 0, "complex32": 2, "complex64": 4, "complex128": 4}, bkind="nonzero"),
    "remainder": dict(kws=[{}], d=operator.mod, id="__imod__", rd=True, tol=APPROX, bkind="nonzero", sf=True),
    "fmod": dict(kws=[{}], d=None, tol=EXACT, bkind="nonzero"),
    "pow": dict(kws=[{}], d=operator.pow, id="__ipow__", rd=True, tol=APPROX, bkind="nonneg", sf=True),
    "maximum": dict(kws=[{}], d=None, inplace=False, tol=EXACT, tensor_only=True),
    "minimum": dict(kws=[{}], d=None, inplace=False, tol=EXACT, tensor_only=True),
    "eq": dict(kws=[{}], d=operator.eq, tol=EXACT),
    "ne": dict(kws=[{}], d=operator.ne, tol=EXACT),
    "lt": dict(kws=[{}], d=operator.lt, tol=EXACT),
    "le": dict(kws=[{}], d=operator.le, tol=EXACT),
    "gt": dict(kws=[{}], d=operator.gt, tol=EXACT),
    "ge": dict(kws=[{}], d=operator.ge, tol=EXACT),
    "logical_and": dict(kws=[{}], d=None, tol=EXACT, tensor_only=True),
    "logical_or": dict(kws=[{}], d=None, tol=EXACT, tensor_only=True),
    "logical_xor": dict(kws=[{}], d=None, tol=EXACT, tensor_only=True),
    "bitwise_and": dict(kws=[{}], d=operator.and_, id="__iand__", rd=True, tol=EXACT, sf=True),
    "bitwise_or": dict(kws=[{}], d=operator.or_, id="__ior__", rd=True, tol=EXACT, sf=True),
    "bitwise_xor": dict(kws=[{}], d=operator.xor, id="__ixor__", rd=True, tol=EXACT, sf=True),
}

UNARY = {
    "neg": dict(d=operator.neg, tol=EXACT),
    "abs": dict(d=abs, tol=EXACT),
    "sign": dict(tol=EXACT),
    "exp": dict(tol=APPROX),
    "log": dict(tol=APPROX),
    "log1p": dict(tol=APPROX),
    "expm1": dict(tol=APPROX),
    "sqrt": dict(tol={"float16": 0, "bfloat16": 0, "float32": 0, "float64": 0, "complex32": 2, "complex64": 4, "complex128": 4}),
    "rsqrt": dict(tol=APPROX),
    "sin": dict(tol=APPROX),
    "cos": dict(tol=APPROX),
    "tan": dict(tol=APPROX),
    "tanh": dict(tol=APPROX),
    "sigmoid": dict(tol=APPROX),
    "relu": dict(tol=EXACT, noout=True),
    "logical_not": dict(tol=EXACT),
    "bitwise_not": dict(d=operator.invert, tol=EXACT),
}

PY_SCALARS = [0, 1, -3, 7, 300, 2 ** 40, 0.5, -2.25, 0.0, -0.0, float("inf"), float("nan"), 1e10, True, False, 1 + 2j, -0.5j]


def scalar_list(rng, k=6):
    idx = rng.choice(len(PY_SCALARS), size=k, replace=False)
    return [PY_SCALARS[i] for i in idx]


def kwrepr(kw):
    return "".join(", %s=%s" % (k, pyrepr(v) if not isinstance(v, str) else repr(v)) for k, v in kw.items())


def out_spec_for(tres_dtype, shape):
    return (tres_dtype, shape)


def run_binary(op, rng, ncase):
    info = BINARY[op]
    tol = info["tol"]
    inplace = info.get("inplace", True)
    bkind = info.get("bkind", "normal")
    divlike = op in ("div", "remainder", "fmod")

    def akind(dt):
        if dt in INTS and not divlike and rng.random() < 0.25:
            return "extreme"
        return "normal"

    def one_case(A, B, kw, allvariants=True):
        dts = "%s,%s" % (A.dtype, B.dtype)
        ar, br = A.repr(), B.repr()
        kws = kwrepr(kw)
        # functional
        check(op, "f", lambda L: getattr(L.m, op)(A.build(L), B.build(L), **kw),
              "L.%s(%s, %s%s)" % (op, ar, br, kws), dts, tol)
        # method
        if op != "rsub":
            check(op, "m", lambda L: getattr(A.build(L), op)(B.build(L), **kw),
                  "%s.%s(%s%s)" % (ar, op, br, kws), dts, tol)
        if not allvariants:
            return
        # in-place
        if inplace:
            def f_ip(L):
                a = A.build(L)
                r = getattr(a, op + "_")(B.build(L), **kw)
                return (r is a, a)
            check(op, "i", f_ip, "%s.%s_(%s%s)" % (ar, op, br, kws), dts, tol, strides=False)
        # dunder
        if info.get("d") and not kw:
            check(op, "dunder", lambda L: info["d"](A.build(L), B.build(L)),
                  "%s(%s, %s)" % (info["d"].__name__, ar, br), dts, tol)
            if isinstance(B, Scal) and info.get("rd"):
                check(op, "rdunder", lambda L: info["d"](B.build(L), A.build(L)),
                      "%s(%s, %s)" % (info["d"].__name__, br, ar), dts, tol)
            if info.get("id"):
                def f_id(L):
                    a = A.build(L)
                    r = getattr(a, info["id"])(B.build(L))
                    return (r is a, a)
                check(op, "idunder", f_id, "%s.%s(%s)" % (ar, info["id"], br), dts, tol, strides=False)
        # out=
        ok, tr = call(TL, lambda L: getattr(L.m, op)(A.build(L), B.build(L), **kw))
        if ok:
            rdt, shp = dname(tr.dtype), tuple(tr.shape)
            outs = [(rdt, shp, "right")]
            other = str(rng.choice([d for d in DTYPES if d != rdt]))
            outs.append((other, shp, "dtype"))
            outs.append((rdt, (0,), "resize0"))
            if len(shp) and int(np.prod(shp)) > 0:
                outs.append((rdt, shp + (2,), "resizebad"))
            for odt, oshp, label in outs:
                def f_out(L, odt=odt, oshp=oshp):
                    o = L.m.zeros(oshp, dtype=L.dt(odt))
                    r = getattr(L.m, op)(A.build(L), B.build(L), **kw, out=o)
                    return (r is o, o)
                check(op, "out-" + label, f_out, "L.%s(%s, %s%s, out=L.zeros(%r, dtype=L.%s))" % (op, ar, br, kws, oshp, odt),
                      dts, tol, strides=label == "right")

    n = 0
    # tensor-tensor over all dtype pairs
    for da in DTYPES:
        for db in DTYPES:
            for k in range(ncase):
                sa, sb = bcast_shapes(rng)
                A = TSpec(da, sa, rng, layout(rng), akind(da))
                B = TSpec(db, sb, rng, layout(rng), bkind if db != "bool" else "normal")
                kw = info["kws"][int(rng.integers(0, len(info["kws"])))] if k else {}
                one_case(A, B, kw, allvariants=(k == 0 or rng.random() < 0.5))
                n += 1
    if info.get("tensor_only") is None:
        # tensor-scalar
        for da in DTYPES:
            for s in PY_SCALARS:
                A = TSpec(da, rand_shape(rng), rng, layout(rng), akind(da))
                if divlike and s == 0 and da in INTS + ["bool"]:
                    pass
                for kw in info["kws"][:2]:
                    one_case(A, Scal(s), kw)
            # scalar-first functional form (torch.pow(2, t), torch.remainder(2, t), ...)
            for s in scalar_list(rng, 4):
                A = TSpec(da, rand_shape(rng), rng, layout(rng), bkind)
                check(op, "scalar-first", lambda L: getattr(L.m, op)(s, A.build(L)),
                      "L.%s(%s, %s)" % (op, pyrepr(s), A.repr()), "py,%s" % da, tol)
    else:
        for da in DTYPES:
            for s in scalar_list(rng, 4):
                A = TSpec(da, rand_shape(rng), rng, layout(rng))
                one_case(A, Scal(s), {})
    # 0-dim tensors vs tensors (type promotion by category)
    for da in DTYPES:
        for db in DTYPES:
            A = TSpec(da, rand_shape(rng), rng, layout(rng), akind(da))
            B = TSpec(db, (), rng, "c", bkind)
            one_case(A, B, {}, allvariants=False)
            one_case(B, A, {}, allvariants=False)
    # overlapping in-place / out
    for da in ["int64", "float32", "float64", "bool", "complex64"]:
        def f_ovl(L, da=da):
            base = TSpec(da, (5,), random_rng(1), "c", "nonzero").build(L)
            return getattr(L.m, op)(base[:-1], base[1:], out=base[1:])
        check(op, "out-overlap", f_ovl, "b = L.tensor(..., dtype=L.%s) (5,); L.%s(b[:-1], b[1:], out=b[1:])" % (da, op), da)

        def f_ovl2(L, da=da):
            base = TSpec(da, (5,), random_rng(1), "c", "nonzero").build(L)
            return getattr(L.m, op)(base[:-1], base[:-1], out=base[:-1]), base
        check(op, "out-alias", f_ovl2, "b = L.tensor(..., dtype=L.%s) (5,); L.%s(b[:-1], b[:-1], out=b[:-1])" % (da, op), da)

        if inplace:
            def f_ovl3(L, da=da):
                base = TSpec(da, (5,), random_rng(1), "c", "nonzero").build(L)
                v = base[1:]
                getattr(v, op + "_")(base[:-1])
                return base
            check(op, "i-overlap", f_ovl3, "b = L.tensor(..., dtype=L.%s) (5,); b[1:].%s_(b[:-1])" % (da, op), da)

            def f_ovl4(L, da=da):
                base = TSpec(da, (1, 3), random_rng(1), "c", "nonzero").build(L)
                e = base.expand(4, 3)
                getattr(e, op + "_")(TSpec(da, (4, 3), random_rng(2), "c", "nonzero").build(L))
                return base
            check(op, "i-expanded-self", f_ovl4, "L.zeros(1,3,dtype=L.%s).expand(4,3).%s_(L.ones(4,3,dtype=L.%s))" % (da, op, da), da)

            def f_bc(L, da=da):
                a = TSpec(da, (3,), random_rng(1), "c", "nonzero").build(L)
                getattr(a, op + "_")(TSpec(da, (2, 3), random_rng(2), "c", "nonzero").build(L))
                return a
            check(op, "i-broadcast-self", f_bc, "L.ones(3, dtype=L.%s).%s_(L.ones(2, 3, dtype=L.%s))" % (da, op, da), da)
    # wrong argument types
    for bad in ["x", None, [1, 2], (1,)]:
        check(op, "badarg", lambda L: getattr(L.m, op)(TSpec("float32", (2,), random_rng(1)).build(L), bad),
              "L.%s(L.tensor([1., 2.]), %r)" % (op, bad), "float32")
        check(op, "badarg-m", lambda L: getattr(TSpec("float32", (2,), random_rng(1)).build(L), op)(bad),
              "L.tensor([1., 2.]).%s(%r)" % (op, bad), "float32")
    check(op, "badkw", lambda L: getattr(L.m, op)(TSpec("float32", (2,), random_rng(1)).build(L),
                                                     TSpec("float32", (2,), random_rng(1)).build(L), bogus=1),
          "L.%s(a, b, bogus=1)" % op, "float32")
    if op == "div":
        check(op, "badmode", lambda L: L.m.div(TSpec("float32", (2,), random_rng(1)).build(L),
                                                  TSpec("float32", (2,), random_rng(1)).build(L), rounding_mode="round"),
              "L.div(a, b, rounding_mode='round')", "float32")


def random_rng(s):
    return np.random.default_rng(s)


def run_unary(op, rng, ncase):
    info = UNARY[op]
    tol = info["tol"]
    for da in DTYPES:
        for k in range(ncase):
            A = TSpec(da, rand_shape(rng), rng, layout(rng), "normal")
            ar = A.repr()
            check(op, "f", lambda L: getattr(L.m, op)(A.build(L)), "L.%s(%s)" % (op, ar), da, tol)
            check(op, "m", lambda L: getattr(A.build(L), op)(), "%s.%s()" % (ar, op), da, tol)

            def f_ip(L):
                a = A.build(L)
                r = getattr(a, op + "_")()
                return (r is a, a)
            check(op, "i", f_ip, "%s.%s_()" % (ar, op), da, tol, strides=False)
            if info.get("d"):
                check(op, "dunder", lambda L: info["d"](A.build(L)), "%s(%s)" % (info["d"].__name__, ar), da, tol)
            ok, tr = call(TL, lambda L: getattr(L.m, op)(A.build(L)))
            rdt = dname(tr.dtype) if ok else da
            shp = A.shape
            outs = [(rdt, shp, "right"), (str(rng.choice([d for d in DTYPES if d != rdt])), shp, "dtype"), (rdt, (0,), "resize0")]
            for odt, oshp, label in outs:
                def f_out(L, odt=odt, oshp=oshp):
                    o = L.m.zeros(oshp, dtype=L.dt(odt))
                    r = getattr(L.m, op)(A.build(L), out=o)
                    return (r is o, o)
                check(op, "out-" + label, f_out, "L.%s(%s, out=L.zeros(%r, dtype=L.%s))" % (op, ar, oshp, odt), da, tol,
                      strides=label == "right")
    for da in ["float32", "int64", "bool"]:
        def f_ovl(L, da=da):
            b = TSpec(da, (5,), random_rng(1)).build(L)
            return getattr(L.m, op)(b[:-1], out=b[1:])
        check(op, "out-overlap", f_ovl, "b = L.tensor(..., dtype=L.%s); L.%s(b[:-1], out=b[1:])" % (da, op), da)

        def f_exp(L, da=da):
            b = TSpec(da, (1, 3), random_rng(1)).build(L)
            return getattr(b.expand(2, 3), op + "_")()
        check(op, "i-expanded-self", f_exp, "L.ones(1, 3, dtype=L.%s).expand(2, 3).%s_()" % (da, op), da)
    check(op, "badarg", lambda L: getattr(L.m, op)("x"), "L.%s('x')" % op, "")
    check(op, "badarg", lambda L: getattr(L.m, op)(2.0), "L.%s(2.0)" % op, "")


def run_where(rng, ncase):
    op = "where"
    for dc in ["bool", "uint8", "float32"]:
        for dx in DTYPES:
            for dy in DTYPES:
                for k in range(ncase if dc == "bool" else 1):
                    sc, sx, sy = bcast_shapes(rng, 3)
                    C = TSpec(dc, sc, rng, layout(rng))
                    X = TSpec(dx, sx, rng, layout(rng))
                    Y = TSpec(dy, sy, rng, layout(rng))
                    r = "L.where(%s, %s, %s)" % (C.repr(), X.repr(), Y.repr())
                    check(op, "f", lambda L: L.m.where(C.build(L), X.build(L), Y.build(L)), r, "%s,%s,%s" % (dc, dx, dy))
                    if k == 0:
                        check(op, "m", lambda L: X.build(L).where(C.build(L), Y.build(L)),
                              "%s.where(%s, %s)" % (X.repr(), C.repr(), Y.repr()), "%s,%s,%s" % (dc, dx, dy))
                        check_outs(op, "out", rng, lambda L, **o: L.m.where(C.build(L), X.build(L), Y.build(L), **o),
                                   r, "%s,%s,%s" % (dc, dx, dy))
        # scalars
        for dx in DTYPES:
            for s in scalar_list(rng, 5):
                sc, sx = bcast_shapes(rng, 2)
                C = TSpec(dc, sc, rng, layout(rng))
                X = TSpec(dx, sx, rng, layout(rng))
                check(op, "f-scalar-y", lambda L: L.m.where(C.build(L), X.build(L), s),
                      "L.where(%s, %s, %s)" % (C.repr(), X.repr(), pyrepr(s)), "%s,%s,py" % (dc, dx))
                check(op, "f-scalar-x", lambda L: L.m.where(C.build(L), s, X.build(L)),
                      "L.where(%s, %s, %s)" % (C.repr(), pyrepr(s), X.repr()), "%s,py,%s" % (dc, dx))
                check(op, "m-scalar", lambda L: X.build(L).where(C.build(L), s),
                      "%s.where(%s, %s)" % (X.repr(), C.repr(), pyrepr(s)), "%s,%s,py" % (dc, dx))
        for s1 in [1, 2.5, True, 1j]:
            for s2 in [0, -1.5, False]:
                C = TSpec(dc, rand_shape(rng), rng, layout(rng))
                check(op, "f-scalar-both", lambda L: L.m.where(C.build(L), s1, s2),
                      "L.where(%s, %s, %s)" % (C.repr(), pyrepr(s1), pyrepr(s2)), dc)
        C = TSpec(dc, rand_shape(rng), rng, layout(rng))
        check(op, "f-1arg", lambda L: L.m.where(C.build(L)), "L.where(%s)" % C.repr(), dc, strides=False)


def run_clamp(rng, ncase):
    op = "clamp"
    scal = [None, 0, 1, -2, 0.5, -1.5, True, float("nan"), float("inf"), 1j]
    for da in DTYPES:
        for k in range(ncase * 3):
            A = TSpec(da, rand_shape(rng), rng, layout(rng))
            mn = scal[int(rng.integers(0, len(scal)))]
            mx = scal[int(rng.integers(0, len(scal)))]
            ar = A.repr()
            kw = {}
            if mn is not None or rng.random() < 0.5:
                kw["min"] = mn
            if mx is not None or rng.random() < 0.5:
                kw["max"] = mx
            kr = kwrepr(kw)
            check(op, "f-scalar", lambda L: L.m.clamp(A.build(L), **kw), "L.clamp(%s%s)" % (ar, kr), da)
            check(op, "m-scalar", lambda L: A.build(L).clamp(**kw), "%s.clamp(%s)" % (ar, kr[2:]), da)

            def f_ip(L):
                a = A.build(L)
                r = a.clamp_(**kw)
                return (r is a, a)
            check(op, "i-scalar", f_ip, "%s.clamp_(%s)" % (ar, kr[2:]), da, strides=False)
            if k % 3 == 0:
                check(op, "f-positional", lambda L: L.m.clamp(A.build(L), mn, mx),
                      "L.clamp(%s, %s, %s)" % (ar, pyrepr(mn), pyrepr(mx)), da)
                check_outs(op, "out-scalar", rng, lambda L, **o: L.m.clamp(A.build(L), **kw, **o),
                           "L.clamp(%s%s)" % (ar, kr), da)
    # tensor bounds
    for da in DTYPES:
        for dm in DTYPES:
            for k in range(ncase):
                sa, smin, smax = bcast_shapes(rng, 3)
                A = TSpec(da, sa, rng, layout(rng))
                MN = TSpec(dm, smin, rng, layout(rng)) if rng.random() < 0.8 else None
                dM = dm if rng.random() < 0.5 else str(rng.choice(DTYPES))
                MX = TSpec(dM, smax, rng, layout(rng)) if (MN is None or rng.random() < 0.6) else None
                mr = MN.repr() if MN else "None"
                xr = MX.repr() if MX else "None"
                b = lambda S, L: S.build(L) if S else None
                dts = "%s,%s,%s" % (da, dm if MN else "-", dM if MX else "-")
                check(op, "f-tensor", lambda L: L.m.clamp(A.build(L), b(MN, L), b(MX, L)),
                      "L.clamp(%s, %s, %s)" % (A.repr(), mr, xr), dts)
                check(op, "m-tensor", lambda L: A.build(L).clamp(min=b(MN, L), max=b(MX, L)),
                      "%s.clamp(min=%s, max=%s)" % (A.repr(), mr, xr), dts)

                def f_ip(L):
                    a = A.build(L)
                    r = a.clamp_(b(MN, L), b(MX, L))
                    return (r is a, a)
                check(op, "i-tensor", f_ip, "%s.clamp_(%s, %s)" % (A.repr(), mr, xr), dts, strides=False)
                if k == 0:
                    check_outs(op, "out-tensor", rng, lambda L, **o: L.m.clamp(A.build(L), b(MN, L), b(MX, L), **o),
                               "L.clamp(%s, %s, %s)" % (A.repr(), mr, xr), dts)
    # mixed: tensor min, scalar max
    for da in DTYPES:
        A = TSpec(da, (3,), rng)
        MN = TSpec(da, (3,), rng)
        check(op, "f-mixed", lambda L: L.m.clamp(A.build(L), MN.build(L), 2),
              "L.clamp(%s, %s, 2)" % (A.repr(), MN.repr()), da)


def run_lerp(rng, ncase):
    op = "lerp"
    for da in DTYPES:
        for db in DTYPES:
            for k in range(ncase):
                sa, sb, sw = bcast_shapes(rng, 3)
                A = TSpec(da, sa, rng, layout(rng))
                B = TSpec(db, sb, rng, layout(rng))
                dw = da if rng.random() < 0.7 else str(rng.choice(DTYPES))
                W = TSpec(dw, sw, rng, layout(rng), "unit") if rng.random() < 0.5 else Scal(
                    [0.5, 0.25, 2, 1j, True, 0.75, -1.0][int(rng.integers(0, 7))])
                dts = "%s,%s,%s" % (da, db, W.dtype)
                r = "L.lerp(%s, %s, %s)" % (A.repr(), B.repr(), W.repr())
                check(op, "f", lambda L: L.m.lerp(A.build(L), B.build(L), W.build(L)), r, dts, APPROX)
                check(op, "m", lambda L: A.build(L).lerp(B.build(L), W.build(L)), r, dts, APPROX)

                def f_ip(L):
                    a = A.build(L)
                    rr = a.lerp_(B.build(L), W.build(L))
                    return (rr is a, a)
                check(op, "i", f_ip, r.replace("L.lerp(", "(in-place) L.lerp_("), dts, APPROX, strides=False)
                check_outs(op, "out", rng, lambda L, **o: L.m.lerp(A.build(L), B.build(L), W.build(L), **o),
                           r, dts, APPROX)


def run_addc(op, rng, ncase):
    vals = [1, 2, 0.5, -1.5, True, 1j, 0]
    for da in DTYPES:
        for db in DTYPES:
            for k in range(ncase):
                sa, s1, s2 = bcast_shapes(rng, 3)
                A = TSpec(da, sa, rng, layout(rng))
                T1 = TSpec(db, s1, rng, layout(rng))
                d2 = db if rng.random() < 0.6 else str(rng.choice(DTYPES))
                T2 = TSpec(d2, s2, rng, layout(rng), "nonzero")
                kw = {} if k == 0 else {"value": vals[int(rng.integers(0, len(vals)))]}
                dts = "%s,%s,%s" % (da, db, d2)
                r = "L.%s(%s, %s, %s%s)" % (op, A.repr(), T1.repr(), T2.repr(), kwrepr(kw))
                check(op, "f", lambda L: getattr(L.m, op)(A.build(L), T1.build(L), T2.build(L), **kw), r, dts, APPROX)
                check(op, "m", lambda L: getattr(A.build(L), op)(T1.build(L), T2.build(L), **kw), r + " [method]", dts, APPROX)

                def f_ip(L):
                    a = A.build(L)
                    rr = getattr(a, op + "_")(T1.build(L), T2.build(L), **kw)
                    return (rr is a, a)
                check(op, "i", f_ip, r + " [in-place]", dts, APPROX, strides=False)
                if k < 2:
                    check_outs(op, "out", rng,
                               lambda L, **o: getattr(L.m, op)(A.build(L), T1.build(L), T2.build(L), **kw, **o),
                               r, dts, APPROX)


def run_fill(rng, ncase):
    op = "fill_"
    for da in DTYPES:
        for s in PY_SCALARS + [-1, 255, 256, -129, 2 ** 63 - 1, 2 ** 63, -2 ** 63 - 1, 70000.0, 1e300, 3.7, -3.7, 1 + 0j]:
            A = TSpec(da, rand_shape(rng), rng, layout(rng))

            def f(L):
                a = A.build(L)
                r = a.fill_(s)
                return (r is a, a)
            check(op, "scalar", f, "%s.fill_(%s)" % (A.repr(), pyrepr(s)), "%s,py" % da, strides=False)
        for dv in DTYPES:
            A = TSpec(da, rand_shape(rng), rng, layout(rng))
            V = TSpec(dv, (), rng, "c", "convertible")

            def f(L):
                a = A.build(L)
                r = a.fill_(V.build(L))
                return (r is a, a)
            check(op, "tensor0d", f, "%s.fill_(%s)" % (A.repr(), V.repr()), "%s,%s" % (da, dv), strides=False)
        V1 = TSpec(da, (1,), rng)
        A = TSpec(da, (2, 2), rng)
        check(op, "tensor1d", lambda L: A.build(L).fill_(V1.build(L)), "%s.fill_(%s)" % (A.repr(), V1.repr()), da)
    A = TSpec("float32", (3,), rng)
    check(op, "expanded", lambda L: A.build(L)[:1].expand(3).fill_(2.0), "L.zeros(1).expand(3).fill_(2.0)", "float32")
    check(op, "badarg", lambda L: A.build(L).fill_("x"), "L.zeros(3).fill_('x')", "float32")


def run_copy(rng, ncase):
    op = "copy_"
    for dd in DTYPES:
        for ds in DTYPES:
            for k in range(ncase):
                sd = rand_shape(rng)
                ss = bcast_shapes_to(sd, rng)
                D = TSpec(dd, sd, rng, layout(rng))
                kind = "convertible" if (dd in INTS + ["bool"]) else "normal"
                S = TSpec(ds, ss, rng, layout(rng), kind)

                def f(L):
                    d = D.build(L)
                    r = d.copy_(S.build(L))
                    return (r is d, d)
                check(op, "f", f, "%s.copy_(%s)" % (D.repr(), S.repr()), "%s,%s" % (dd, ds), strides=False)
                if k == 0:
                    def f2(L):
                        d = D.build(L)
                        r = d.copy_(S.build(L), non_blocking=True)
                        return (r is d, d)
                    check(op, "non_blocking", f2, "%s.copy_(%s, non_blocking=True)" % (D.repr(), S.repr()), "%s,%s" % (dd, ds), strides=False)
    # overlap
    for dt in ["float32", "int64"]:
        def f(L, dt=dt):
            b = TSpec(dt, (6,), random_rng(3)).build(L)
            b[1:].copy_(b[:-1])
            return b
        check(op, "overlap", f, "b = L.arange(6.); b[1:].copy_(b[:-1])", dt)

        def f(L, dt=dt):
            b = TSpec(dt, (6,), random_rng(3)).build(L)
            b.copy_(b)
            return b
        check(op, "self", f, "b.copy_(b)", dt)

        def f(L, dt=dt):
            b = TSpec(dt, (1, 3), random_rng(3)).build(L)
            b.expand(2, 3).copy_(TSpec(dt, (2, 3), random_rng(4)).build(L))
            return b
        check(op, "expanded-dst", f, "L.zeros(1,3).expand(2,3).copy_(L.ones(2,3))", dt)

        def f(L, dt=dt):
            b = TSpec(dt, (3, 3), random_rng(3)).build(L)
            b.copy_(b.t())
            return b
        check(op, "transpose-self", f, "b = L.arange(9.).view(3,3); b.copy_(b.t())", dt)
    # bad shapes
    check(op, "badshape", lambda L: TSpec("float32", (3,), rng).build(L).copy_(TSpec("float32", (2,), rng).build(L)),
          "L.zeros(3).copy_(L.zeros(2))", "float32")
    check(op, "badshape2", lambda L: TSpec("float32", (3,), rng).build(L).copy_(TSpec("float32", (2, 3), rng).build(L)),
          "L.zeros(3).copy_(L.zeros(2, 3))", "float32")
    check(op, "badarg", lambda L: TSpec("float32", (3,), rng).build(L).copy_(1.0), "L.zeros(3).copy_(1.0)", "float32")
    # out of range float->int (UB in C++; reported separately)
    for dd in INTS + ["bool"]:
        S = TSpec("float32", (6,), rng, values=np.array([np.nan, np.inf, -np.inf, 1e10, -1e10, -1.5]))
        D = TSpec(dd, (6,), rng)

        def f(L):
            d = D.build(L)
            d.copy_(S.build(L))
            return d
        check(op, "ub-float-to-int", f, "%s.copy_(%s)" % (D.repr(), S.repr()), "%s,float32" % dd)
        for sdt in ["int64", "int32", "int16"]:
            S2 = TSpec(sdt, (4,), rng, values=np.array([-1, 256, 70000 if sdt != "int16" else 300, -129]))

            def f(L):
                d = D.build(L)
                d.copy_(S2.build(L))
                return d
            check(op, "int-wrap", f, "%s.copy_(%s)" % (D.repr(), S2.repr()), "%s,%s" % (dd, sdt))


def bcast_shapes_to(sd, rng):
    s = list(sd)
    for i in range(len(s)):
        if rng.random() < 0.3:
            s[i] = 1
    if rng.random() < 0.3 and s:
        s = s[1:]
    if rng.random() < 0.05:
        s = s + [7]
    return tuple(s)


def run_to(rng, ncase):
    op = "to"
    for da in DTYPES:
        for dd in DTYPES:
            for k in range(ncase):
                kind = "convertible" if dd in INTS + ["bool"] else "normal"
                A = TSpec(da, rand_shape(rng), rng, layout(rng), kind)
                D = DType(dd)
                check(op, "dtype", lambda L: (lambda a: (a.to(D.build(L)) is a, a.to(D.build(L))))(A.build(L)),
                      "%s.to(%s)" % (A.repr(), D.repr()), "%s,%s" % (da, dd), strides=True)
                if k == 0:
                    check(op, "kw", lambda L: A.build(L).to(dtype=D.build(L)), "%s.to(dtype=%s)" % (A.repr(), D.repr()), "%s,%s" % (da, dd))
                    check(op, "copy", lambda L: (lambda a: (a.to(D.build(L), copy=True) is a, a.to(D.build(L), copy=True)))(A.build(L)),
                          "%s.to(%s, copy=True)" % (A.repr(), D.repr()), "%s,%s" % (da, dd))
                    check(op, "device-dtype", lambda L: A.build(L).to("cpu", D.build(L)),
                          "%s.to('cpu', %s)" % (A.repr(), D.repr()), "%s,%s" % (da, dd))
                    O = TSpec(dd, (2,), rng)
                    check(op, "other", lambda L: A.build(L).to(O.build(L)), "%s.to(%s)" % (A.repr(), O.repr()), "%s,%s" % (da, dd))
                    check(op, "func", lambda L: L.m.Tensor.to(A.build(L), D.build(L)), "L.Tensor.to(%s, %s)" % (A.repr(), D.repr()), "%s,%s" % (da, dd))
    A = TSpec("float32", (2,), rng)
    check(op, "badarg", lambda L: A.build(L).to("float32"), "L.zeros(2).to('float32')", "")
    check(op, "badarg2", lambda L: A.build(L).to(5), "L.zeros(2).to(5)", "")
    check(op, "non_blocking", lambda L: A.build(L).to(L.m.float64, non_blocking=True), "L.zeros(2).to(L.float64, non_blocking=True)", "")
    check(op, "memory_format", lambda L: A.build(L).to(L.m.float64, memory_format=L.m.contiguous_format), "", "")


def run_promote(rng, ncase):
    for name in ["result_type", "promote_types", "can_cast", "get_default_dtype", "set_default_dtype"]:
        COUNTS[name] = COUNTS.get(name, 0) + 1
        if not hasattr(ratten, name):
            report(name, "exists", "ratten-err", "AttributeError: module 'ratten' has no attribute %r" % name,
                   "L.%s" % name, "exists", "missing", "")
    if hasattr(ratten, "promote_types"):
        for a in DTYPES:
            for b in DTYPES:
                check("promote_types", "f", lambda L: L.m.promote_types(L.dt(a), L.dt(b)), "L.promote_types(L.%s, L.%s)" % (a, b), "%s,%s" % (a, b))
                check("can_cast", "f", lambda L: L.m.can_cast(L.dt(a), L.dt(b)), "L.can_cast(L.%s, L.%s)" % (a, b), "%s,%s" % (a, b))
    # promotion is also measured through add(): compare result dtypes for python scalars and 0-dim
    for a in DTYPES:
        for s in [1, 1.5, True, 1j]:
            A = TSpec(a, (2,), rng)
            check("promotion", "tensor+scalar", lambda L: (A.build(L) * 0 + s).dtype if a != "bool" else L.m.mul(A.build(L), s).dtype,
                  "(%s * %s).dtype" % (A.repr(), pyrepr(s)), a)


def main():
    args = sys.argv[1:]
    seed = 1234
    ncase = 3
    if "--seed" in args:
        i = args.index("--seed")
        seed = int(args[i + 1])
        del args[i:i + 2]
    if "--n" in args:
        i = args.index("--n")
        ncase = int(args[i + 1])
        del args[i:i + 2]
    ops = args
    if ops == ["all"]:
        ops = list(BINARY) + list(UNARY) + ["where", "clamp", "lerp", "addcmul", "addcdiv", "fill_", "copy_", "to", "promote"]
    for op in ops:
        rng = np.random.default_rng([seed, sum(map(ord, op))])
        if op in BINARY:
            run_binary(op, rng, ncase)
        elif op in UNARY:
            run_unary(op, rng, ncase)
        elif op == "where":
            run_where(rng, ncase)
        elif op == "clamp":
            run_clamp(rng, ncase)
        elif op == "lerp":
            run_lerp(rng, ncase)
        elif op in ("addcmul", "addcdiv"):
            run_addc(op, rng, ncase)
        elif op == "fill_":
            run_fill(rng, ncase)
        elif op == "copy_":
            run_copy(rng, ncase)
        elif op == "to":
            run_to(rng, ncase)
        elif op == "promote":
            run_promote(rng, ncase)
        else:
            raise SystemExit("unknown op " + op)
        print("COUNT %s %d" % (op, COUNTS.get(op, 0)), flush=True)


if __name__ == "__main__":
    main()
