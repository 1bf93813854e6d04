"""gradcheck / gradgradcheck on every operator of ratten's derivatives.yaml, and (when torch is
installed) the analytical gradients against torch's for the same inputs.

The operator list is read from crates/ratten-aten/derivatives.yaml: every entry there must
have samples in SAMPLES (differentiable), NON_DIFFERENTIABLE (outputs must not require grad)
or NOT_IMPLEMENTED (torch's formula is `not_implemented`: backward must raise torch's text);
test_every_declared_operator_is_covered fails for an operator added without one.

Samples are float64, small (the numerical Jacobian costs two forward calls per input
element), with broadcasting and non-contiguous inputs (``layout="t"``: a transposed view,
``layout="s"``: every other element of a wider tensor). Values keep away from the points
where an operator is not differentiable (kinks of abs/clamp/relu, ties of max/sort, zeros
of div/log, discontinuities of fmod/floor division).

A formula the generator could not translate raises NotImplementedError "... is not
translated to Rust (...)" in backward: those tests are reported as xfail with that text
(they pass once the formula is translated). KNOWN_BUGS lists wrong gradients found here
whose fault lies outside FunctionsManual, with the reason.
"""

import re
from pathlib import Path

import numpy as np
import pytest

import ratten

try:
    import torch
except ImportError:  # the differential part skips
    torch = None

DERIVATIVES = Path(__file__).resolve().parents[2] / "crates" / "ratten-aten" / "derivatives.yaml"


# ---- inputs --------------------------------------------------------------------------------

class T:
    """A float64 input: ``shape``, values uniform in [lo, hi) (``away``: |v| >= away, random
    signs; ``distinct``: a shuffled grid, no ties), ``layout`` "c" (contiguous), "t" (a
    transposed view) or "s" (every other element of a wider last dimension), requiring grad
    unless ``grad=False``."""

    def __init__(self, shape, lo=-1.0, hi=1.0, layout="c", grad=True, away=None,
                 distinct=False, values=None):
        self.shape = tuple(shape)
        self.lo, self.hi, self.layout, self.grad = lo, hi, layout, grad
        self.away, self.distinct, self.values = away, distinct, values

    def array(self, rng):
        n = int(np.prod(self.shape, dtype=np.int64))
        if self.values is not None:
            return np.array(self.values, dtype=np.float64).reshape(self.shape)
        if self.distinct:
            grid = self.lo + (self.hi - self.lo) * (np.arange(n) + 0.5) / max(n, 1)
            return rng.permutation(grid).reshape(self.shape)
        if self.away is not None:
            mag = rng.uniform(self.away, self.hi, n)
            return (mag * rng.choice([-1.0, 1.0], n)).reshape(self.shape)
        return rng.uniform(self.lo, self.hi, n).reshape(self.shape)

    def make(self, m, arr):
        if self.layout == "t" and len(self.shape) >= 2:
            base = m.from_numpy(np.ascontiguousarray(np.swapaxes(arr, -1, -2)))
            t = base.transpose(-1, -2)
        elif self.layout in ("s", "t") and len(self.shape) >= 1:
            wide = np.zeros(self.shape[:-1] + (2 * self.shape[-1],), dtype=np.float64)
            wide[..., ::2] = arr
            t = m.from_numpy(wide)[..., ::2]
        else:
            t = m.from_numpy(arr.copy())
        return t.detach().requires_grad_(self.grad)


class I:
    """An int64 index tensor."""

    def __init__(self, values):
        self.values = values

    def array(self, rng):
        return np.array(self.values, dtype=np.int64)

    def make(self, m, arr):
        return m.from_numpy(arr.copy())


class B:
    """A bool mask."""

    def __init__(self, values):
        self.values = values

    def array(self, rng):
        return np.array(self.values, dtype=bool)

    def make(self, m, arr):
        return m.from_numpy(arr.copy())


class L:
    """A list of inputs (``cat``/``stack``'s Tensor[], ``index``'s Tensor?[])."""

    def __init__(self, *items):
        self.items = items

    def array(self, rng):
        return [it.array(rng) for it in self.items]

    def make(self, m, arrs):
        return [it.make(m, a) for it, a in zip(self.items, arrs)]


def _overload(m, qualified):
    """The operator ``name.overload`` itself (torch.ops.aten.add.Scalar), for overloads the
    Python argument parser never picks (a Python number goes to the Tensor overload)."""
    name, _, overload = qualified.partition(".")
    if m is ratten:
        # ratten has no per-overload callables: the public function, whose argument parser
        # reaches the overload (NO_PYTHON_OVERLOAD lists those it never picks).
        return getattr(ratten, name)
    return getattr(getattr(torch.ops.aten, name), overload or "default")


def _seeded(fn):
    """Random operators: the same generator state on every call, so the numerical Jacobian
    sees a deterministic function (their outputs do not depend on the input's values)."""
    def call(m, *args):
        m.manual_seed(0)
        return fn(m, *args)
    return call


class S:
    """A sample: ``fn(m, *inputs)`` with ``m`` ratten or torch; ``gg``: gradgradcheck too
    (None: for the first sample of each operator only, which bounds the file's time: the
    second-order check costs about five times the first); ``gc``: gradcheck applies (False
    where torch's formula is not the derivative, e.g. normal's zeros)."""

    def __init__(self, op, fn, inputs, gg=None, gc=True):
        self.op, self.fn, self.inputs, self.gg, self.gc = op, fn, inputs, gg, gc


def _ol(q):
    return lambda m, *a, **k: _overload(m, q)(*a, **k)



def _nnf(m, name):
    """The generated ``python_module: nn`` function ``name`` (not torch.nn.functional's Python
    wrapper of the same name; torch.ops.aten.<name> for torch)."""
    return ratten.nn.functional._nn[name] if m is ratten else getattr(torch.ops.aten, name)


X34 = T((3, 4))
M = T((3, 4), layout="t")

SAMPLES = [
    # Pointwise, unary. Away from the kinks and the poles.
    S("abs", lambda m, x: m.abs(x), [T((3, 4), away=0.2, layout="t")]),
    S("cos", lambda m, x: m.cos(x), [M]),
    S("sin", lambda m, x: m.sin(x), [T((2, 3), layout="s")]),
    S("tan", lambda m, x: m.tan(x), [M]),
    S("tanh", lambda m, x: m.tanh(x), [M]),
    S("exp", lambda m, x: m.exp(x), [M]),
    S("expm1", lambda m, x: m.expm1(x), [T((5,), layout="s")]),
    S("log", lambda m, x: m.log(x), [T((3, 4), lo=0.5, hi=2.0, layout="t")]),
    S("log1p", lambda m, x: m.log1p(x), [T((3, 4), lo=-0.5, hi=2.0, layout="t")]),
    S("sqrt", lambda m, x: m.sqrt(x), [T((3, 4), lo=0.5, hi=2.0, layout="t")]),
    S("rsqrt", lambda m, x: m.rsqrt(x), [T((3, 4), lo=0.5, hi=2.0)]),
    S("reciprocal", lambda m, x: m.reciprocal(x), [T((3, 4), away=0.5, layout="t")]),
    S("sigmoid", lambda m, x: m.sigmoid(x), [M]),
    S("neg", lambda m, x: m.neg(x), [M]),
    S("relu", lambda m, x: m.relu(x), [T((3, 4), away=0.1, layout="t")]),
    S("sign", lambda m, x: m.sign(x), [T((3, 4), away=0.1)]),
    S("sgn", lambda m, x: m.sgn(x), [T((3, 4), away=0.1)]),
    S("_conj_physical", lambda m, x: m.conj_physical(x), [X34]),
    S("conj_physical_", lambda m, x: x.clone().conj_physical_() * 1, [X34]),
    S("zero_", lambda m, x: (x * 2).zero_() + x, [X34]),
    S("nan_to_num", lambda m, x: m.nan_to_num(x), [M]),
    S("clone", lambda m, x: m.clone(x), [M]),
    S("alias", _ol("alias"), [M]),
    S("clamp", lambda m, x: m.clamp(x, -0.5, 0.5), [M]),
    S("clamp", lambda m, x: m.clamp(x, min=-0.3), [X34]),
    S("clamp.Tensor", lambda m, x, lo, hi: m.clamp(x, lo, hi),
      [M, T((4,), lo=-0.6, hi=-0.2), T((3, 1), lo=0.2, hi=0.6)]),
    # Pointwise, binary: broadcasting both ways.
    S("add.Tensor", lambda m, x, y: m.add(x, y, alpha=2), [M, T((4,))]),
    S("add.Tensor", lambda m, x, y: m.add(x, y), [T((3, 1)), T((2, 1, 4), layout="s")]),
    S("add.Scalar", _ol("add.Scalar"), [M, 2.5, 3]),
    S("sub.Tensor", lambda m, x, y: m.sub(x, y, alpha=0.5), [M, T((3, 1))]),
    S("sub.Scalar", _ol("sub.Scalar"), [M, 2.5, 3]),
    S("rsub.Tensor", lambda m, x, y: m.rsub(x, y, alpha=2), [M, T((4,))]),
    S("rsub.Scalar", _ol("rsub.Scalar"), [M, 2.5, 3]),
    S("mul.Tensor", lambda m, x, y: m.mul(x, y), [M, T((3, 1))]),
    S("mul.Scalar", _ol("mul.Scalar"), [M, 2.5]),
    S("div.Tensor", lambda m, x, y: m.div(x, y), [M, T((4,), away=0.5)]),
    S("div.Scalar", _ol("div.Scalar"), [M, 2.5]),
    S("div.Tensor_mode", lambda m, x, y: m.div(x, y, rounding_mode="floor"),
      [M, T((4,), away=0.5)]),
    S("div.Tensor_mode", lambda m, x, y: m.div(x, y, rounding_mode=None), [M, T((4,), away=0.5)]),
    S("div.Scalar_mode", _ol("div.Scalar_mode"), [M, 0.3], ),
    S("pow.Tensor_Scalar", lambda m, x: m.pow(x, 2.5), [T((3, 4), lo=0.5, hi=2.0, layout="t")]),
    S("pow.Tensor_Scalar", lambda m, x: m.pow(x, 3), [M]),
    S("pow.Tensor_Tensor", lambda m, x, y: m.pow(x, y),
      [T((3, 4), lo=0.5, hi=2.0, layout="t"), T((4,))]),
    S("pow.Scalar", lambda m, y: m.pow(2.0, y), [M]),
    S("maximum", lambda m, x, y: m.maximum(x, y), [T((3, 4), distinct=True), T((4,), lo=-0.93, hi=0.97)]),
    S("minimum", lambda m, x, y: m.minimum(x, y), [T((3, 4), distinct=True, layout="t"), T((3, 1), lo=-0.93, hi=0.97)]),
    S("fmod.Scalar", lambda m, x: m.fmod(x, 0.7), [T((3, 4), lo=0.1, hi=2.0, layout="t")]),
    S("fmod.Tensor", lambda m, x, y: m.fmod(x, y), [T((3, 4), lo=0.1, hi=2.0), T((4,), lo=0.5, hi=1.0)]),
    S("remainder.Scalar", lambda m, x: m.remainder(x, 0.7), [T((3, 4), lo=-2.0, hi=2.0, layout="t")]),
    S("remainder.Tensor", lambda m, x, y: m.remainder(x, y), [T((3, 4), lo=-2.0, hi=2.0), T((4,), lo=0.5, hi=1.0)]),
    S("lerp.Scalar", lambda m, x, y: m.lerp(x, y, 0.3), [M, T((4,))]),
    S("lerp.Tensor", lambda m, x, y, w: m.lerp(x, y, w), [M, T((4,)), T((3, 1))]),
    S("addcmul", lambda m, x, a, b: m.addcmul(x, a, b, value=0.7), [T((3, 1)), M, T((4,))]),
    S("addcdiv", lambda m, x, a, b: m.addcdiv(x, a, b, value=0.7), [T((4,)), M, T((3, 1), away=0.5)]),
    S("where.self", lambda m, c, x, y: m.where(c, x, y),
      [B([[True, False, True, False], [False, False, True, True], [True, True, True, False]]), M, T((4,))]),
    # In-place comparisons (zero gradient) on a non-leaf copy.
    *[S(f"{c}_.Scalar", (lambda c: lambda m, x: getattr(x.clone(), f"{c}_")(0.1))(c), [X34])
      for c in ("eq", "ne", "ge", "gt", "le", "lt")],
    *[S(f"{c}_.Tensor", (lambda c: lambda m, x, y: getattr(x.clone(), f"{c}_")(y))(c), [X34, T((4,))])
      for c in ("eq", "ne", "ge", "gt", "le", "lt")],
    S("fill.Scalar", _ol("fill.Scalar"), [M, 2.0]),
    S("fill.Tensor", _ol("fill.Tensor"), [M, T(())]),
    S("fill_.Scalar", lambda m, x: x.clone().fill_(2.0), [M]),
    S("fill_.Tensor", lambda m, x, v: x.clone().fill_(v), [M, T(())]),
    # Random (outputs independent of the inputs' values): zero gradients.
    S("bernoulli", _seeded(lambda m, p: m.bernoulli(p)), [T((3, 4), lo=0.1, hi=0.9)]),
    S("bernoulli_.Tensor", _seeded(lambda m, x, p: x.clone().bernoulli_(p)), [X34, T((4,), lo=0.1, hi=0.9)]),
    S("bernoulli_.float", _seeded(lambda m, x: x.clone().bernoulli_(0.3)), [X34]),
    S("exponential_", _seeded(lambda m, x: x.clone().exponential_()), [X34]),
    S("normal_", _seeded(lambda m, x: x.clone().normal_()), [X34]),
    S("uniform_", _seeded(lambda m, x: x.clone().uniform_()), [X34]),
    S("random_.from", _seeded(lambda m, x: x.clone().random_(0, 5)), [X34]),
    S("random_.to", _seeded(lambda m, x: x.clone().random_(5)), [X34]),
    S("random_", _seeded(lambda m, x: x.clone().random_()), [X34]),
    # torch's formulas for normal are zeros, not the reparameterized derivative: finite
    # differences disagree in torch too. Checked against torch only.
    S("normal.Tensor_float", _seeded(lambda m, mu: m.normal(mu, 2.0)), [X34], gc=False),
    S("normal.float_Tensor", _seeded(lambda m, sd: m.normal(1.0, sd)), [T((3, 4), lo=0.5)], gc=False),
    S("normal.Tensor_Tensor", _seeded(lambda m, mu, sd: m.normal(mu, sd)), [X34, T((3, 4), lo=0.5)], gc=False),
    # Linear algebra.
    S("mm", lambda m, a, b: m.mm(a, b), [M, T((4, 2))]),
    S("mv", lambda m, a, v: m.mv(a, v), [M, T((4,), layout="s")]),
    S("dot", lambda m, a, b: m.dot(a, b), [T((5,), layout="s"), T((5,))]),
    S("vdot", lambda m, a, b: m.vdot(a, b), [T((5,), layout="s"), T((5,))]),
    S("bmm", lambda m, a, b: m.bmm(a, b), [T((2, 3, 4), layout="t"), T((2, 4, 2))]),
    S("matmul", lambda m, a, b: m.matmul(a, b), [T((2, 3, 4), layout="t"), T((4,))]),
    S("matmul", lambda m, a, b: m.matmul(a, b), [M, T((2, 4, 2))]),
    S("addmm", lambda m, x, a, b: m.addmm(x, a, b, beta=0.5, alpha=2), [T((2,)), M, T((4, 2))]),
    S("addmv", lambda m, x, a, v: m.addmv(x, a, v, beta=0.5, alpha=2), [T((3,)), M, T((4,))]),
    S("addbmm", lambda m, x, a, b: m.addbmm(x, a, b, beta=0.5, alpha=2),
      [T((3, 2)), T((2, 3, 4), layout="t"), T((2, 4, 2))]),
    S("baddbmm", lambda m, x, a, b: m.baddbmm(x, a, b, beta=0.5, alpha=2),
      [T((3, 1)), T((2, 3, 4), layout="t"), T((2, 4, 2))]),
    S("linear", lambda m, x, w, b: m.nn.functional.linear(x, w, b), [T((2, 3)), T((4, 3), layout="t"), T((4,))]),
    S("linear", lambda m, x, w: m.nn.functional.linear(x, w), [T((3,)), T((4, 3))]),
    # Reductions.
    S("sum", lambda m, x: m.sum(x), [M]),
    S("sum.dim_IntList", lambda m, x: m.sum(x, [0], keepdim=True), [M]),
    S("sum.dim_IntList", lambda m, x: m.sum(x, (0, 2)), [T((2, 3, 2), layout="t")]),
    S("nansum", lambda m, x: m.nansum(x, 1), [M]),
    S("mean", lambda m, x: m.mean(x), [M]),
    S("mean.dim", lambda m, x: m.mean(x, [1], keepdim=True), [M]),
    S("prod", lambda m, x: m.prod(x), [T((3, 4), away=0.5, hi=1.5, layout="t")]),
    S("prod", lambda m, x: m.prod(x), [T((2, 3), values=[0.5, 0.0, 1.5, -0.7, 1.2, 0.9])]),
    S("prod.dim_int", lambda m, x: m.prod(x, 1), [T((3, 4), away=0.5, hi=1.5, layout="t")]),
    S("prod.dim_int", lambda m, x: m.prod(x, 0, keepdim=True),
      [T((2, 3), values=[0.5, 0.0, 1.5, 0.0, 1.2, 0.9])]),
    S("logsumexp", lambda m, x: m.logsumexp(x, [1]), [M]),
    S("logsumexp", lambda m, x: m.logsumexp(x, [0, 1], keepdim=True), [X34]),
    S("max", lambda m, x: m.max(x), [T((3, 4), distinct=True, layout="t")]),
    S("min", lambda m, x: m.min(x), [T((3, 4), distinct=True)]),
    S("max.dim", lambda m, x: m.max(x, 1), [T((3, 4), distinct=True, layout="t")]),
    S("min.dim", lambda m, x: m.min(x, 0, keepdim=True), [T((3, 4), distinct=True)]),
    S("amax", lambda m, x: m.amax(x, [1]), [T((3, 4), distinct=True, layout="t")]),
    S("amin", lambda m, x: m.amin(x, [0, 1]), [T((3, 4), distinct=True)]),
    S("aminmax", lambda m, x: tuple(m.aminmax(x, dim=1)), [T((3, 4), distinct=True, layout="t")]),
    S("kthvalue", lambda m, x: m.kthvalue(x, 2, 1), [T((3, 4), distinct=True, layout="t")]),
    S("std.correction", lambda m, x: m.std(x, 1), [M]),
    S("std.correction", lambda m, x: m.std(x, [0], correction=0, keepdim=True), [X34]),
    S("var.correction", lambda m, x: m.var(x, 1), [M]),
    S("var.correction", lambda m, x: m.var(x), [X34]),
    S("std_mean.correction", lambda m, x: tuple(m.std_mean(x, 1)), [M]),
    S("var_mean.correction", lambda m, x: tuple(m.var_mean(x, 0, correction=0)), [M]),
    S("norm.Scalar", _ol("norm.Scalar"), [M, 3]),
    S("norm.ScalarOpt_dim", _ol("norm.ScalarOpt_dim"), [M, 2, [1]]),
    S("norm.ScalarOpt_dtype", lambda m, x: _overload(m, "norm.ScalarOpt_dtype")(x, 2, dtype=m.float64), [M]),
    S("norm.ScalarOpt_dim_dtype", lambda m, x: _overload(m, "norm.ScalarOpt_dim_dtype")(x, 1.5, [0], True, dtype=m.float64),
      [T((3, 4), away=0.2)]),
    S("linalg_vector_norm", lambda m, x: m.linalg.vector_norm(x), [M]),
    S("linalg_vector_norm", lambda m, x: m.linalg.vector_norm(x, 3, dim=1), [M]),
    S("linalg_vector_norm", lambda m, x: m.linalg.vector_norm(x, float("inf"), dim=0),
      [T((3, 4), distinct=True)]),
    S("linalg_vector_norm", lambda m, x: m.linalg.vector_norm(x, 1), [T((3, 4), away=0.2)]),
    # Scans.
    S("cumsum", lambda m, x: m.cumsum(x, 0), [M]),
    S("cumprod", lambda m, x: m.cumprod(x, 1), [T((3, 4), away=0.5, hi=1.5, layout="t")]),
    S("cumprod", lambda m, x: m.cumprod(x, 1), [T((2, 3), values=[0.5, 0.0, 1.5, -0.7, 1.2, 0.0])]),
    S("logcumsumexp", lambda m, x: m.logcumsumexp(x, 1), [M]),
    S("cummax", lambda m, x: tuple(m.cummax(x, 1)), [T((3, 4), distinct=True, layout="t")]),
    S("cummin", lambda m, x: tuple(m.cummin(x, 0)), [T((3, 4), distinct=True)]),
    # Sorting and selection.
    S("sort", lambda m, x: tuple(m.sort(x, 1)), [T((3, 4), distinct=True, layout="t")]),
    S("sort.stable", lambda m, x: tuple(m.sort(x, stable=True, dim=0, descending=True)),
      [T((3, 4), distinct=True)]),
    S("topk", lambda m, x: tuple(m.topk(x, 2, 1)), [T((3, 4), distinct=True, layout="t")]),
    S("topk", lambda m, x: tuple(m.topk(x, 2, 0, largest=False)), [T((3, 4), distinct=True)]),
    # Views and shape.
    S("view", lambda m, x: x.view(2, 6), [X34]),
    S("_unsafe_view", _ol("_unsafe_view"), [X34, (4, 3)]),
    S("as_strided", lambda m, x: m.as_strided(x, (2, 2), (1, 2), 1), [X34]),
    S("expand", lambda m, x: x.expand(2, 3, 4), [T((3, 1))]),
    S("permute", lambda m, x: m.permute(x, (2, 0, 1)), [T((2, 3, 4), layout="t")]),
    S("t", lambda m, x: m.t(x), [M]),
    S("transpose.int", lambda m, x: m.transpose(x, 0, 2), [T((2, 3, 4), layout="s")]),
    S("diagonal", lambda m, x: m.diagonal(x, 1), [M]),
    S("diagonal", lambda m, x: m.diagonal(x, -1, 1, 2), [T((2, 3, 4))]),
    S("select.int", lambda m, x: m.select(x, 1, 2), [M]),
    S("slice.Tensor", lambda m, x: x[:, 1:4:2], [M]),
    S("squeeze", lambda m, x: m.squeeze(x), [T((3, 1, 4))]),
    S("squeeze.dim", lambda m, x: m.squeeze(x, 1), [T((3, 1, 4), layout="t")]),
    S("squeeze.dims", lambda m, x: m.squeeze(x, (1, 2)), [T((3, 1, 1))]),
    S("unsqueeze", lambda m, x: m.unsqueeze(x, 1), [M]),
    S("unfold", lambda m, x: x.unfold(1, 2, 1), [M]),
    S("flip", lambda m, x: m.flip(x, [0, 1]), [M]),
    S("roll", lambda m, x: m.roll(x, 1, 1), [M]),
    S("roll", lambda m, x: m.roll(x, (1, -2), (0, 1)), [X34]),
    S("repeat", lambda m, x: x.repeat(2, 1, 2), [T((2, 3), layout="t")]),
    S("tril", lambda m, x: m.tril(x, -1), [M]),
    S("triu", lambda m, x: m.triu(x, 1), [M]),
    S("cat", lambda m, ts: m.cat(ts, 0), [L(T((2, 3)), T((1, 3), layout="s"))]),
    S("cat", lambda m, ts: m.cat(ts, 1), [L(T((2, 3), layout="t"), T((2, 1)))]),
    S("stack", lambda m, ts: m.stack(ts, 1), [L(T((3,)), T((3,), layout="s"))]),
    S("chunk", lambda m, x: tuple(m.chunk(x, 2, 0)), [T((4, 3), layout="t")]),
    S("split.Tensor", lambda m, x: tuple(m.split(x, 2, 0)), [T((5, 3), layout="t")]),
    S("split_with_sizes", lambda m, x: tuple(m.split(x, [2, 3], 0)), [T((5, 3))]),
    S("unbind.int", lambda m, x: tuple(m.unbind(x, 1)), [M]),
    # Indexing.
    S("index.Tensor", lambda m, x, i: x[i], [M, I([0, 2, 2])]),
    S("index.Tensor", lambda m, x, i, j: x[i, j], [M, I([0, 2, 2]), I([3, 1, 3])]),
    S("index_select", lambda m, x, i: m.index_select(x, 1, i), [M, I([3, 0, 0])]),
    S("gather", lambda m, x, i: m.gather(x, 1, i), [M, I([[0, 2], [1, 1], [3, 0]])]),
    S("take", lambda m, x, i: m.take(x, i), [M, I([0, 5, 11, 5])]),
    S("index_add", lambda m, x, i, s: m.index_add(x, 0, i, s, alpha=2), [T((4, 3), layout="t"), I([0, 2, 0]), T((3, 3))]),
    S("index_copy", lambda m, x, i, s: m.index_copy(x, 0, i, s), [T((4, 3), layout="t"), I([0, 2]), T((2, 3))]),
    S("index_fill.int_Scalar", lambda m, x, i: m.index_fill(x, 1, i, -1.0), [M, I([0, 2])]),
    S("index_fill.int_Tensor", lambda m, x, i, v: m.index_fill(x, 1, i, v), [M, I([0, 2]), T(())]),
    S("index_put", lambda m, x, i, v: m.index_put(x, (i,), v), [T((4, 3), layout="t"), I([0, 2]), T((2, 3))]),
    S("index_put", lambda m, x, i, v: m.index_put(x, (i,), v, accumulate=True), [T((4, 3)), I([0, 2, 0]), T((3,))]),
    S("_index_put_impl_", lambda m, x, i, v: x.clone().index_put_((i,), v, accumulate=True), [T((4, 3)), I([1, 1]), T((2, 3))]),
    S("masked_fill.Scalar", lambda m, x, k: m.masked_fill(x, k, 0.5), [M, B([True, False, False, True])]),
    S("masked_fill.Tensor", lambda m, x, k, v: m.masked_fill(x, k, v), [M, B([True, False, False, True]), T(())]),
    S("masked_scatter", lambda m, x, k, s: m.masked_scatter(x, k, s),
      [M, B([True, False, False, True]), T((3, 4))]),
    S("masked_select", lambda m, x, k: m.masked_select(x, k), [M, B([[True, False, False, True]])]),
    S("scatter.src", lambda m, x, i, s: m.scatter(x, 1, i, s), [M, I([[0, 2], [1, 3], [3, 0]]), T((3, 2))]),
    S("scatter.value", lambda m, x, i: m.scatter(x, 1, i, 1.5), [M, I([[0, 2], [1, 3], [3, 0]])]),
    S("scatter_add", lambda m, x, i, s: m.scatter_add(x, 1, i, s), [M, I([[0, 0], [1, 3], [3, 3]]), T((3, 2))]),
    *[S("scatter_reduce.two", (lambda r, inc: lambda m, x, i, s: m.scatter_reduce(x, 1, i, s, r, include_self=inc))(r, inc),
        [T((3, 4), distinct=True, layout="t") if r in ("amax", "amin") else T((3, 4), away=0.5, hi=1.5),
         I([[0, 0], [1, 3], [3, 2]]), T((3, 2), lo=-0.87, hi=0.91) if r in ("amax", "amin") else T((3, 2), away=0.5, hi=1.5)],
        gg=True)
      for r, inc in (("sum", True), ("prod", True), ("prod", False), ("mean", True), ("mean", False),
                     ("amax", True), ("amin", False))],
    # -- activations
    S("gelu", lambda m, x: m.nn.functional.gelu(x), [T((3, 4), lo=-3.0, hi=3.0, layout="t")]),
    S("gelu", lambda m, x: m.nn.functional.gelu(x, approximate="tanh"), [T((2, 3), lo=-3.0, hi=3.0, layout="s")], gg=True),
    S("gelu_backward", lambda m, g, x: _nnf(m, "gelu_backward")(g, x), [X34, T((3, 4), lo=-3.0, hi=3.0, layout="t")]),
    S("gelu_backward", lambda m, g, x: _nnf(m, "gelu_backward")(g, x, approximate="tanh"), [T((4,)), T((3, 4), lo=-3.0, hi=3.0)], gg=True),
    S("silu", lambda m, x: m.nn.functional.silu(x), [T((3, 4), lo=-3.0, hi=3.0, layout="t")]),
    S("mish", lambda m, x: m.nn.functional.mish(x), [T((3, 4), lo=-3.0, hi=3.0, layout="s")]),
    S("elu", lambda m, x: m.nn.functional.elu(x, 0.7), [T((3, 4), away=0.1, hi=2.0, layout="t")]),
    S("elu", lambda m, x: _nnf(m, "elu")(x, 0.7, 1.3, 0.8), [T((3, 4), away=0.1, hi=2.0)]),
    S("elu_", lambda m, x: m.nn.functional.elu(x * 1, 0.7, inplace=True), [T((3, 4), away=0.1, hi=2.0, layout="t")]),
    S("celu", lambda m, x: m.celu(x, 1.3), [T((3, 4), away=0.1, hi=2.0, layout="t")]),
    S("celu_", lambda m, x: m.celu_(x * 1, 1.3), [T((3, 4), away=0.1, hi=2.0)]),
    S("glu", lambda m, x: m.nn.functional.glu(x, 1), [T((3, 4), lo=-2.0, hi=2.0, layout="t")]),
    S("glu", lambda m, x: m.nn.functional.glu(x, 0), [T((4, 3), lo=-2.0, hi=2.0, layout="s")]),
    S("hardtanh", lambda m, x: m.nn.functional.hardtanh(x), [T((3, 4), lo=-2.0, hi=2.0, distinct=True, layout="t")]),
    S("hardtanh", lambda m, x: m.nn.functional.relu6(x), [T((3, 4), lo=-2.1, hi=7.9, distinct=True)]),
    S("leaky_relu", lambda m, x: m.nn.functional.leaky_relu(x, 0.2), [T((3, 4), away=0.1, layout="t")]),
    S("leaky_relu_", lambda m, x: m.nn.functional.leaky_relu(x * 1, 0.2, inplace=True), [T((3, 4), away=0.1)]),
    S("log_sigmoid_forward", lambda m, x: m.nn.functional.logsigmoid(x), [T((3, 4), lo=-3.0, hi=3.0, layout="t")]),
    S("softplus", lambda m, x: m.nn.functional.softplus(x, 2.0), [T((3, 4), lo=-3.0, hi=3.0, layout="t")]),
    S("softplus", lambda m, x: m.nn.functional.softplus(x, 1.0, 0.5), [T((3, 4), lo=-1.93, hi=1.91, distinct=True)]),
    S("elu_backward", lambda m, g, x: _nnf(m, "elu_backward")(g, 0.7, 1.2, 0.9, False, x), [X34, T((3, 4), away=0.1, hi=2.0, layout="t")]),
    S("elu_backward", lambda m, g, x: _nnf(m, "elu_backward")(g, 0.7, 1.2, 0.9, True, x), [X34, T((3, 4), away=0.1, hi=2.0)]),
    S("glu_backward", lambda m, g, x: _nnf(m, "glu_backward")(g, x, 1), [T((3, 2)), T((3, 4), lo=-2.0, hi=2.0, layout="t")]),
    S("hardtanh_backward", lambda m, g, x: _nnf(m, "hardtanh_backward")(g, x, -0.5, 0.5), [X34, T((3, 4), lo=-0.93, hi=0.97, distinct=True, layout="t")]),
    S("log_sigmoid_backward", lambda m, x, g: m.autograd.grad(m.nn.functional.logsigmoid(x), x, g, create_graph=True)[0],
      [T((3, 4), lo=-3.0, hi=3.0, layout="t"), X34]),
    S("leaky_relu_backward", lambda m, g, x: _nnf(m, "leaky_relu_backward")(g, x, 0.2, False), [X34, T((3, 4), away=0.1, layout="t")]),
    S("softplus_backward", lambda m, g, x: _nnf(m, "softplus_backward")(g, x, 2.0, 20.0), [X34, T((3, 4), lo=-3.0, hi=3.0, layout="t")]),
    S("hardsigmoid", lambda m, x: m.nn.functional.hardsigmoid(x), [T((3, 4), lo=-4.1, hi=3.9, distinct=True, layout="t")], gg=False),
    S("hardswish", lambda m, x: m.nn.functional.hardswish(x), [T((3, 4), lo=-4.1, hi=3.9, distinct=True, layout="t")]),
    S("hardswish_backward", lambda m, g, x: _nnf(m, "hardswish_backward")(g, x), [X34, T((3, 4), lo=-4.1, hi=3.9, distinct=True)]),

    # -- softmax and losses
    S("_softmax", lambda m, x: m.softmax(x, 1), [M]),
    S("_softmax", lambda m, x: m.softmax(x, 0), [T((3, 2, 2))]),
    S("_log_softmax", lambda m, x: m.log_softmax(x, 1), [M]),
    S("_log_softmax", lambda m, x: m.log_softmax(x, 0), [T((3, 2, 2))]),
    S("_softmax_backward_data", lambda m, g, y: m._softmax_backward_data(g, y, 1, m.float64),
      [T((2, 3)), T((2, 3), lo=0.1, hi=0.9)]),
    S("_log_softmax_backward_data", lambda m, g, y: m._log_softmax_backward_data(g, y, 1, m.float64),
      [T((2, 3)), T((2, 3), lo=-2.0, hi=-0.1)]),
    S("nll_loss_forward", lambda m, x, t: m.nn.functional.nll_loss(x, t), [T((3, 4)), I([0, 3, 1])]),
    S("nll_loss_forward", lambda m, x, t, w: m.nn.functional.nll_loss(x, t, weight=w, reduction="none"),
      [T((3, 4), layout="t"), I([0, 3, -100]), T((4,), lo=0.5, hi=2.0, grad=False)]),
    S("nll_loss_backward", lambda m, g, x, t: _nnf(m, "nll_loss_backward")(g, x, t, None, 2, -100, m.ones((), dtype=m.float64)),
      [T(()), T((3, 4)), I([0, 3, 1])]),
    S("nll_loss2d_forward", lambda m, x, t: m.nn.functional.nll_loss(x, t, reduction="sum"),
      [T((2, 3, 2, 2)), I([[[0, 2], [1, 1]], [[2, 0], [-100, 1]]])]),
    S("nll_loss2d_backward", lambda m, g, x, t: _nnf(m, "nll_loss2d_backward")(g, x, t, None, 2, -100, m.ones((), dtype=m.float64)),
      [T(()), T((2, 3, 2, 2)), I([[[0, 2], [1, 1]], [[2, 0], [0, 1]]])]),
    S("mse_loss", lambda m, x, y: m.nn.functional.mse_loss(x, y), [M, X34]),
    S("mse_loss", lambda m, x, y: m.nn.functional.mse_loss(x, y, reduction="none"), [X34, X34]),
    S("mse_loss_backward", lambda m, g, x, y: _nnf(m, "mse_loss_backward")(g, x, y, 1), [T(()), M, X34]),
    S("smooth_l1_loss", lambda m, x, y: m.nn.functional.smooth_l1_loss(x, y, beta=0.5),
      [T((3, 4), lo=-2, hi=2), T((3, 4), values=np.full((3, 4), 0.1))]),
    S("smooth_l1_loss_backward", lambda m, g, x, y: _nnf(m, "smooth_l1_loss_backward")(g, x, y, 0, 0.5),
      [T((3, 4)), T((3, 4), lo=-2, hi=2), T((3, 4), values=np.full((3, 4), 0.1))]),
    S("huber_loss", lambda m, x, y: m.nn.functional.huber_loss(x, y, delta=0.5),
      [T((3, 4), lo=-2, hi=2), T((3, 4), values=np.full((3, 4), 0.1))]),
    S("huber_loss_backward", lambda m, g, x, y: _nnf(m, "huber_loss_backward")(g, x, y, 2, 0.5),
      [T(()), T((3, 4), lo=-2, hi=2), T((3, 4), values=np.full((3, 4), 0.1))]),
    S("binary_cross_entropy", lambda m, x, y: m.nn.functional.binary_cross_entropy(x, y),
      [T((3, 4), lo=0.1, hi=0.9), T((3, 4), lo=0.0, hi=1.0)]),
    S("binary_cross_entropy", lambda m, x, y, w: m.nn.functional.binary_cross_entropy(x, y, weight=w, reduction="sum"),
      [T((3, 4), lo=0.1, hi=0.9), T((3, 4), lo=0.0, hi=1.0), T((4,), lo=0.5, hi=2.0, grad=False)]),
    S("binary_cross_entropy_backward", lambda m, g, x, y: _nnf(m, "binary_cross_entropy_backward")(g, x, y, None, 1),
      [T(()), T((3, 4), lo=0.1, hi=0.9), T((3, 4), lo=0.0, hi=1.0)]),
    S("binary_cross_entropy_with_logits", lambda m, x, y: m.nn.functional.binary_cross_entropy_with_logits(x, y),
      [M, T((3, 4), lo=0.0, hi=1.0)]),
    S("binary_cross_entropy_with_logits", lambda m, x, y, w, pw: m.nn.functional.binary_cross_entropy_with_logits(
        x, y, weight=w, pos_weight=pw, reduction="none"),
      [T((3, 4), lo=-3, hi=3), T((3, 4), lo=0.0, hi=1.0), T((3, 4), lo=0.5, hi=2.0, grad=False),
       T((4,), lo=0.5, hi=2.0, grad=False)]),

    # -- convolution and pooling
    S("convolution", lambda m, x, w, b: m.convolution(x, w, b, [2, 1], [1, 0], [1, 2], False, [0, 0], 2),
      [T((2, 4, 5, 6)), T((4, 2, 2, 3), layout="t"), T((4,))]),
    S("convolution", lambda m, x, w, b: m.convolution(x, w, b, [2], [1], [1], True, [1], 1),
      [T((1, 2, 4)), T((2, 3, 3)), T((3,))]),
    S("convolution", lambda m, x, w: m.convolution(x, w, None, [1], [1], [1], False, [0], 1),
      [T((1, 2, 3, 3, 2)), T((2, 2, 2, 2, 2))]),
    S("_convolution", lambda m, x, w, b: m._convolution(x, w, b, [1], [0], [1], False, [0], 1,
                                                        False, False, True, True),
      [T((1, 2, 4, 4)), T((3, 2, 2, 2)), T((3,))]),
    S("convolution_backward",
      lambda m, go, x, w: tuple(_overload(m, "convolution_backward")(
          go, x, w, [3], [2, 1], [1, 0], [1, 1], False, [0, 0], 1, [True, True, True])),
      [T((1, 3, 3, 2)), T((1, 2, 4, 3)), T((3, 2, 2, 2))]),
    S("convolution_backward",
      lambda m, go, x, w: tuple(_overload(m, "convolution_backward")(
          go, x, w, None, [2], [1], [1], True, [1], 2, [True, True, False])[:2]),
      [T((1, 4, 6)), T((1, 2, 3)), T((2, 2, 3))]),
    S("max_pool2d", lambda m, x: m.max_pool2d(x, [2, 3], [1, 2], [1, 1], [1, 1], True),
      [T((2, 3, 5, 6), distinct=True)]),
    S("max_pool2d_with_indices",
      lambda m, x: m.nn.functional.max_pool2d(x, 3, 2, 1, 2, return_indices=True)[0],
      [T((1, 2, 6, 7), distinct=True, layout="t")]),
    S("max_pool2d_with_indices_backward",
      lambda m, g, x: m.ops.aten.max_pool2d_with_indices_backward(
          g, x, [2, 2], [2, 2], [0, 0], [1, 1], False,
          m.nn.functional.max_pool2d(x.detach(), 2, return_indices=True)[1]),
      [T((1, 2, 2, 3)), T((1, 2, 4, 6), distinct=True, grad=False)]),
    S("avg_pool2d", lambda m, x: m.nn.functional.avg_pool2d(x, 3, 2, 1, ceil_mode=True,
                                                             count_include_pad=False),
      [T((2, 2, 6, 5), layout="t")]),
    S("avg_pool2d", lambda m, x: m.nn.functional.avg_pool2d(x, [2, 3], divisor_override=4),
      [T((3, 4, 6))]),
    S("avg_pool2d_backward",
      lambda m, g, x: m.ops.aten.avg_pool2d_backward(g, x, [3, 2], [2, 1], [1, 0], True,
                                                          True, None),
      [T((1, 2, 3, 4)), T((1, 2, 5, 5))]),
    S("_adaptive_avg_pool2d", lambda m, x: m.nn.functional.adaptive_avg_pool2d(x, (3, 2)),
      [T((2, 3, 7, 5), layout="t")]),
    S("_adaptive_avg_pool2d_backward",
      lambda m, g, x: m.ops.aten._adaptive_avg_pool2d_backward(g, x),
      [T((1, 2, 3, 2)), T((1, 2, 5, 4))]),
    S("adaptive_max_pool2d", lambda m, x: m.nn.functional.adaptive_max_pool2d(x, (2, 3)),
      [T((2, 3, 5, 7), distinct=True)]),
    S("adaptive_max_pool2d_backward",
      lambda m, g, x: m.ops.aten.adaptive_max_pool2d_backward(
          g, x, m.nn.functional.adaptive_max_pool2d(x.detach(), (2, 3), return_indices=True)[1]),
      [T((1, 2, 2, 3)), T((1, 2, 5, 7), distinct=True, grad=False)]),

    # -- normalization, dropout, embedding, padding, interpolation
    S("native_layer_norm", lambda m, x, w, b: m.native_layer_norm(x, [4], w, b, 1e-5)[0],
      [T((2, 3, 4), layout="t"), T((4,)), T((4,))]),
    S("native_layer_norm", lambda m, x: m.native_layer_norm(x, [3, 4], None, None, 1e-5)[0],
      [T((2, 3, 4))]),
    # mean and rstd are constants here (torch's formula raises for them), so the input is too.
    S("native_layer_norm_backward",
      (lambda m, g, x, w: _ol("native_layer_norm_backward")(
          m, g, x, [4], *m.native_layer_norm(x, [4], w.detach(), None, 1e-5)[1:], w, None,
          [True, True, False])[:2]),
      [T((3, 4)), T((3, 4), grad=False), T((4,))]),
    S("native_batch_norm",
      lambda m, x, w, b: m.native_batch_norm(x, w, b, None, None, True, 0.1, 1e-5)[0],
      [T((4, 3, 2), layout="t"), T((3,)), T((3,))]),
    S("native_batch_norm",
      lambda m, x, w: m.native_batch_norm(x, w, None, m.zeros(3, dtype=m.float64),
                                          m.ones(3, dtype=m.float64), False, 0.1, 1e-5)[0],
      [T((4, 3)), T((3,))]),
    S("native_batch_norm_backward",
      (lambda m, g, x, w: _ol("native_batch_norm_backward")(
          m, g, x, w, None, None,
          *m.native_batch_norm(x, w.detach(), None, None, None, True, 0.1, 1e-5)[1:], True,
          1e-5, [True, True, False])[:2]),
      [T((4, 3)), T((4, 3), grad=False), T((3,))]),
    S("native_group_norm",
      lambda m, x, w, b: m.native_group_norm(x, w, b, 2, 4, 3, 2, 1e-5)[0],
      [T((2, 4, 3)), T((4,)), T((4,))]),
    S("native_group_norm", lambda m, x: m.group_norm(x, 2), [T((2, 4, 2, 2))]),
    S("native_dropout", _seeded(lambda m, x: m.native_dropout(x, 0.4, True)[0]), [M]),
    S("native_dropout_backward", lambda m, g, k: _ol("native_dropout_backward")(m, g, k, 2.0),
      [M, T((3, 4), values=[[1, 0, 1, 1], [0, 0, 1, 0], [1, 1, 1, 0]], grad=False)]),
    S("embedding", lambda m, w, i: m.embedding(w, i), [T((5, 3), layout="t"), I([[0, 2], [4, 2]])]),
    S("embedding", lambda m, w, i: m.embedding(w, i, 2, True), [T((5, 3)), I([0, 2, 4, 4, 1])],
      gc=False),
    S("embedding_dense_backward",
      lambda m, g, i: _ol("embedding_dense_backward")(m, g, i, 5, 1, False),
      [T((2, 2, 3)), I([[0, 1], [4, 4]])]),
    # embedding_bag's second derivative is torch's not_implemented (_embedding_bag_backward).
    S("_embedding_bag", lambda m, w, i, o: m.embedding_bag(w, i, o, False, 0)[0],
      [T((5, 3), layout="t"), I([0, 2, 4, 4, 1]), I([0, 2, 2])], gg=False),
    # scale_grad_by_freq: torch's gradient is scaled by 1 / frequency, not the derivative.
    S("_embedding_bag", lambda m, w, i, o: m.embedding_bag(w, i, o, True, 1)[0],
      [T((5, 3)), I([0, 2, 4, 4, 1]), I([0, 3])], gg=False, gc=False),
    S("_embedding_bag", lambda m, w, i, o: m.embedding_bag(w, i, o, False, 2)[0],
      [T((5, 3), distinct=True), I([0, 2, 4, 3, 1]), I([0, 2, 3])], gg=False),
    S("_embedding_bag", lambda m, w, i, o, p: m.embedding_bag(w, i, o, False, 0, False, p)[0],
      [T((5, 3)), I([0, 2, 4, 4, 1]), I([0, 2]), T((5,))], gg=False),
    S("_embedding_bag",
      lambda m, w, i, o: m.embedding_bag(w, i, o, False, 1, False, None, True, 4)[0],
      [T((5, 3)), I([0, 2, 4, 4, 1]), I([0, 2, 5])], gg=False),
    S("upsample_nearest2d", lambda m, x: _nnf(m, "upsample_nearest2d")(x, [5, 3]), [T((1, 2, 3, 2))]),
    S("upsample_nearest2d", lambda m, x: _nnf(m, "upsample_nearest2d")(x, [3, 6], 1.5, 2.0),
      [T((2, 1, 2, 3))]),
    S("upsample_bilinear2d", lambda m, x: _nnf(m, "upsample_bilinear2d")(x, [5, 3], False),
      [T((1, 2, 3, 2))]),
    S("upsample_bilinear2d", lambda m, x: _nnf(m, "upsample_bilinear2d")(x, [4, 5], True),
      [T((2, 1, 3, 2))]),
    S("upsample_nearest2d_backward",
      lambda m, g: _nnf(m, "upsample_nearest2d_backward")(g, [5, 3], [1, 2, 3, 2]),
      [T((1, 2, 5, 3))]),
    S("upsample_bilinear2d_backward",
      lambda m, g: _nnf(m, "upsample_bilinear2d_backward")(g, [5, 3], [1, 2, 3, 2], False),
      [T((1, 2, 5, 3))]),
    S("constant_pad_nd", lambda m, x: m.constant_pad_nd(x, [1, 2, -1, 1], 0.5), [M]),
    S("reflection_pad1d", lambda m, x: _nnf(m, "reflection_pad1d")(x, [2, 1]), [T((2, 3, 4), layout="t")]),
    S("reflection_pad2d", lambda m, x: _nnf(m, "reflection_pad2d")(x, [1, 2, 2, 0]), [T((2, 3, 4))]),
    S("replication_pad1d", lambda m, x: _nnf(m, "replication_pad1d")(x, [3, 1]), [T((3, 4), layout="t")]),
    S("replication_pad2d", lambda m, x: _nnf(m, "replication_pad2d")(x, [1, 2, 2, 0]),
      [T((1, 2, 3, 4))]),
    S("reflection_pad1d_backward", lambda m, g, x: _nnf(m, "reflection_pad1d_backward")(g, x, [2, 1]),
      [T((2, 3, 7)), T((2, 3, 4), grad=False)]),
    S("reflection_pad2d_backward",
      lambda m, g, x: _nnf(m, "reflection_pad2d_backward")(g, x, [1, 2, 2, 0]),
      [T((2, 5, 7)), T((2, 3, 4), grad=False)]),
    S("replication_pad1d_backward",
      lambda m, g, x: _nnf(m, "replication_pad1d_backward")(g, x, [3, 1]),
      [T((3, 8)), T((3, 4), grad=False)]),
    S("replication_pad2d_backward",
      lambda m, g, x: _nnf(m, "replication_pad2d_backward")(g, x, [1, 2, 2, 0]),
      [T((1, 2, 5, 7)), T((1, 2, 3, 4), grad=False)]),

]

# Entries whose outputs are not differentiable (output_differentiability: [False] or
# non_differentiable): the output must not require grad although the input does.
NON_DIFFERENTIABLE = {
    "any": lambda m, x: m.any(x),
    "any.dim": lambda m, x: m.any(x, 1),
    "any.dims": lambda m, x: m.any(x, (0, 1)),
    "all": lambda m, x: m.all(x),
    "all.dim": lambda m, x: m.all(x, 1),
    "all.dims": lambda m, x: m.all(x, (0,)),
    "count_nonzero.dim_IntList": lambda m, x: m.count_nonzero(x, [0]),
    "count_nonzero": lambda m, x: m.count_nonzero(x),
    "isnan": lambda m, x: m.isnan(x),
    "histc": lambda m, x: m.histc(x, 4, -1, 1),
    "view.dtype": lambda m, x: x.view(m.float64),
    "multinomial": _seeded(lambda m, x: m.multinomial(x.abs() + 0.1, 2)),
    "nonzero": lambda m, x: m.nonzero(x),
    "one_hot": lambda m, x: m.nn.functional.one_hot((x.abs() * 3).to(m.int64)),
    **{f"{c}.Scalar": (lambda c: lambda m, x: getattr(m, c)(x, 0.1))(c)
       for c in ("eq", "ne", "ge", "gt", "le", "lt")},
    **{f"{c}.Tensor": (lambda c: lambda m, x: getattr(m, c)(x, x.flip(0)))(c)
       for c in ("eq", "ne", "ge", "gt", "le", "lt")},
}

# torch's derivatives.yaml says not_implemented for these: backward raises torch's error.
NOT_IMPLEMENTED = {
    "_unique": lambda m, x: _overload(m, "_unique")(x)[0],
    "_unique2": lambda m, x: _overload(m, "_unique2")(x)[0],
    "unique_dim": lambda m, x: _overload(m, "unique_dim")(x, 0)[0],
    "unique_consecutive": lambda m, x: _overload(m, "unique_consecutive")(x)[0],
    "unique_dim_consecutive": lambda m, x: _overload(m, "unique_dim_consecutive")(x, 0)[0],
    "_embedding_bag_backward": lambda m, x: _overload(m, "_embedding_bag_backward")(
        x, m.tensor([0, 1, 2]), m.tensor([0, 2]), m.tensor([0, 0, 1]), m.tensor([2, 1]),
        m.tensor([2, 1]), 4, False, 0, False, None, -1),
    "_embedding_bag_dense_backward": lambda m, x: _overload(m, "_embedding_bag_dense_backward")(
        x, m.tensor([0, 1, 2]), m.tensor([0, 0, 1]), m.tensor([2, 1]), m.tensor([2, 1]), 4,
        False, 0, None, -1),
}

# Overloads ratten's Python argument parser never selects (a Python number becomes a
# wrapped-number Tensor and takes the `.Tensor` overload, as in torch; `norm` is torch's
# Python `norm`, which calls linalg_vector_norm) and that ratten has no per-overload callable
# for (torch.ops.aten.<op>.<overload>): skipped with this reason.
_SCALAR_REASON = ("no Python binding reaches this overload: a Python number takes the "
                  ".Tensor overload (as torch's parser); ratten has no torch.ops-style "
                  "per-overload callable")
_NORM_REASON = ("no Python binding reaches this overload: ratten.norm, like torch.norm, "
                "calls linalg_vector_norm; ratten has no per-overload callable")
NO_PYTHON_OVERLOAD = {
    "add.Scalar": _SCALAR_REASON,
    "sub.Scalar": _SCALAR_REASON,
    "mul.Scalar": _SCALAR_REASON,
    "div.Scalar": _SCALAR_REASON,
    "div.Scalar_mode": _SCALAR_REASON,
    "norm.Scalar": _NORM_REASON,
    "norm.ScalarOpt_dim": _NORM_REASON,
    "norm.ScalarOpt_dtype": _NORM_REASON,
    "norm.ScalarOpt_dim_dtype": _NORM_REASON,
}

# Wrong or failing gradients whose fault is in the generator or the runtime (not
# FunctionsManual): sample id -> reason. Marked xfail (not strict, so a fix elsewhere does
# not break this file; an XPASS says the entry can go).
KNOWN_BUGS = {}

# The same for gradgradcheck (fill_.Scalar's missing node passes there: the second
# derivatives of the identity and of a constant are both zero).
KNOWN_GRADGRAD_BUGS = {}

# CompositeImplicitAutograd operators: their graph is their decomposition's, whose last node
# may differ from torch's (matmul of 2-D by 3-D, linear of a 1-D input); the node names are
# not compared for them, the gradients are.
COMPOSITE_IMPLICIT = {"matmul", "linear"}

# Non-differentiable entries that misbehave, with the reason (xfail, not strict).
KNOWN_NON_DIFFERENTIABLE_BUGS = {}


# Complex-only operators: gradcheck of complex functions needs torch's real/imag split of the
# Jacobian, which ratten's gradcheck does not do yet (it refuses complex inputs).
COMPLEX_ONLY = {
    "_conj": "a complex input only (conj of a real tensor is the tensor itself)",
    "view_as_real": "a complex input only",
    "view_as_complex": "a complex output only",
}


def _declared():
    names = []
    for line in DERIVATIVES.read_text().splitlines():
        m = re.match(r"- name: ([A-Za-z0-9_.]+)\(", line)
        if m:
            names.append(m.group(1))
    return names


def _ids():
    seen = {}
    out = []
    for s in SAMPLES:
        k = seen.get(s.op, 0)
        seen[s.op] = k + 1
        out.append(f"{s.op}-{k}")
    return out


IDS = _ids()
for _s, _i in zip(SAMPLES, IDS):
    if _s.gg is None:
        _s.gg = _i.endswith("-0")


def test_every_declared_operator_is_covered():
    covered = ({s.op for s in SAMPLES} | set(NON_DIFFERENTIABLE) | set(NOT_IMPLEMENTED)
               | set(COMPLEX_ONLY))
    assert set(NO_PYTHON_OVERLOAD) <= covered
    declared = _declared()
    assert declared, DERIVATIVES
    missing = [n for n in declared if n not in covered]
    assert not missing, f"derivatives.yaml entries with no gradcheck sample: {missing}"
    unknown = covered - set(declared)
    assert not unknown, f"samples for operators derivatives.yaml does not declare: {unknown}"


def _arrays(sample, seed):
    rng = np.random.default_rng(seed)
    return [spec.array(rng) if hasattr(spec, "array") else None for spec in sample.inputs]


def _make(m, sample, arrays):
    return [spec.make(m, a) if hasattr(spec, "make") else spec
            for spec, a in zip(sample.inputs, arrays)]


def _leaves(args):
    out = []
    for a in args:
        if isinstance(a, list):
            out.extend(t for t in a if t.requires_grad)
        elif hasattr(a, "requires_grad") and a.requires_grad:
            out.append(a)
    return out


# Operators whose derivatives.yaml entry has no forward formula (torch refuses tangents too).
NO_FORWARD_AD = {
    "_softmax_backward_data", "_log_softmax_backward_data", "nll_loss_backward",
    "nll_loss2d_backward", "huber_loss_backward", "native_layer_norm_backward",
    "native_batch_norm_backward", "native_dropout_backward", "_embedding_bag",
}

# Samples whose forward-mode check cannot pass, with why.
KNOWN_FORWARD_AD = {
    "scatter_reduce.two-1": "torch's scatter_reduce_jvp gives no tangent for reduce='prod' "
                            "(an undefined tensor); ratten's follows it",
    "scatter_reduce.two-2": "torch's scatter_reduce_jvp gives no tangent for reduce='prod'",
    "log_sigmoid_backward-0": "the sample makes its inputs with autograd.grad, which needs "
                              "inputs that require grad",
}


def _flat_fn(sample, args):
    """``sample.fn`` as a function of the leaves only (gradcheck perturbs those in place;
    lists of tensors are spliced back)."""
    def fn(*leaves):
        it = iter(leaves)
        call = []
        for a in args:
            if isinstance(a, list):
                call.append([next(it) if t.requires_grad else t for t in a])
            elif hasattr(a, "requires_grad") and a.requires_grad:
                call.append(next(it))
            else:
                call.append(a)
        return sample.fn(ratten, *call)
    return fn


def _untranslated_to_xfail(call):
    try:
        return call()
    except (NotImplementedError, RuntimeError) as e:
        if "is not translated to Rust" in str(e):
            pytest.xfail(str(e))
        raise


def _params(second_order=False):
    bugs = KNOWN_GRADGRAD_BUGS if second_order else KNOWN_BUGS
    out = []
    for s, i in zip(SAMPLES, IDS):
        if s.op in NO_PYTHON_OVERLOAD:
            marks = [pytest.mark.skip(reason=NO_PYTHON_OVERLOAD[s.op])]
        elif i in bugs:
            marks = [pytest.mark.xfail(reason=bugs[i], strict=False)]
        else:
            marks = []
        out.append(pytest.param(s, id=i, marks=marks))
    return out


def _nondiff_params():
    return [pytest.param(n, marks=[pytest.mark.xfail(reason=KNOWN_NON_DIFFERENTIABLE_BUGS[n],
                                                     strict=False)])
            if n in KNOWN_NON_DIFFERENTIABLE_BUGS else n for n in sorted(NON_DIFFERENTIABLE)]


@pytest.mark.parametrize("sample", _params())
def test_gradcheck(sample):
    if not sample.gc:
        pytest.skip("torch's formula is not the derivative of the sampled function (zeros); "
                    "compared with torch in test_gradients_match_torch")
    args = _make(ratten, sample, _arrays(sample, 0))
    leaves = _leaves(args)
    fn = _flat_fn(sample, args)
    assert _untranslated_to_xfail(lambda: ratten.autograd.gradcheck(fn, leaves))


def _forward_params():
    out = []
    for p, i in zip(_params(), IDS):
        if i in KNOWN_FORWARD_AD:
            p = pytest.param(*p.values, id=i, marks=[pytest.mark.xfail(
                reason=KNOWN_FORWARD_AD[i], strict=True)])
        out.append(p)
    return out


@pytest.mark.parametrize("sample", _forward_params())
def test_forward_ad(sample):
    """The tangents of forward-mode AD (derivatives.yaml's `result:` formulas) against finite
    differences: gradcheck(check_forward_ad=True)."""
    if not sample.gc:
        pytest.skip("torch's formula is not the derivative of the sampled function")
    args = _make(ratten, sample, _arrays(sample, 0))
    leaves = _leaves(args)
    fn = _flat_fn(sample, args)
    try:
        assert ratten.autograd.gradcheck(fn, leaves, check_forward_ad=True,
                                         check_backward_ad=False)
    except NotImplementedError as e:
        if "Trying to use forward AD with" not in str(e) or sample.op not in NO_FORWARD_AD:
            raise


@pytest.mark.parametrize("sample", [p for p in _params(True) if p.values[0].gg and p.values[0].gc])
def test_gradgradcheck(sample):
    ratten.manual_seed(1)
    args = _make(ratten, sample, _arrays(sample, 0))
    leaves = _leaves(args)
    fn = _flat_fn(sample, args)
    assert _untranslated_to_xfail(lambda: ratten.autograd.gradgradcheck(fn, leaves))


@pytest.mark.parametrize("name", _nondiff_params())
def test_non_differentiable_outputs(name):
    x = ratten.tensor([[0.5, -0.2, 0.0], [0.1, 0.7, -0.9]], dtype=ratten.float64,
                      requires_grad=True)
    outs = NON_DIFFERENTIABLE[name](ratten, x)
    outs = outs if isinstance(outs, (tuple, list)) else (outs,)
    assert all(not o.requires_grad for o in outs)


@pytest.mark.parametrize("name", sorted(NOT_IMPLEMENTED))
def test_not_implemented_derivatives(name):
    x = ratten.tensor([[0.5, -0.2, 0.5], [0.1, 0.7, -0.9]], dtype=ratten.float64,
                      requires_grad=True)
    y = NOT_IMPLEMENTED[name](ratten, x)
    with pytest.raises((NotImplementedError, RuntimeError),
                       match=f"the derivative for '{name}' is not implemented"):
        y.sum().backward()


# ---- against torch ---------------------------------------------------------------------------

def _as_tuple(x):
    return tuple(x) if isinstance(x, (tuple, list)) else (x,)


@pytest.mark.skipif(torch is None, reason="torch is not installed")
@pytest.mark.parametrize("sample", _params())
def test_gradients_match_torch(sample):
    arrays = _arrays(sample, 0)
    rargs = _make(ratten, sample, arrays)
    targs = _make(torch, sample, arrays)
    routs = _as_tuple(sample.fn(ratten, *rargs))
    touts = _as_tuple(sample.fn(torch, *targs))
    assert len(routs) == len(touts)
    rng = np.random.default_rng(7)
    r_diff, t_diff, grads = [], [], []
    for ro, to in zip(routs, touts):
        assert tuple(ro.shape) == tuple(to.shape)
        # The same backward node: the same overload and formula were reached.
        if sample.op not in COMPOSITE_IMPLICIT:
            assert (ro.grad_fn and ro.grad_fn.name()) == (to.grad_fn and to.grad_fn.name())
        assert ro.requires_grad == to.requires_grad, (ro.requires_grad, to.requires_grad)
        if not to.requires_grad:
            continue
        np.testing.assert_allclose(ro.detach().numpy(), to.detach().numpy(), rtol=1e-10, atol=1e-12)
        g = rng.uniform(-1, 1, tuple(to.shape))
        r_diff.append(ro)
        t_diff.append(to)
        grads.append(g)
    if not t_diff:
        return
    rleaves, tleaves = _leaves(rargs), _leaves(targs)
    tg = torch.autograd.grad(t_diff, tleaves, [torch.from_numpy(g) for g in grads], allow_unused=True)
    rg = _untranslated_to_xfail(lambda: ratten.autograd.grad(
        r_diff, rleaves, [ratten.from_numpy(g.copy()) for g in grads], allow_unused=True))
    for k, (a, b) in enumerate(zip(rg, tg)):
        if b is None:
            assert a is None or not a.detach().numpy().any(), f"input {k}"
            continue
        # torch returns a ZeroTensor for some zero gradients (sgn of a real input), which has
        # no numpy form.
        if b._is_zerotensor():
            b = torch.zeros(b.shape, dtype=b.dtype)
        expected = b.detach().numpy()
        got = np.zeros_like(expected) if a is None else a.detach().numpy()
        np.testing.assert_allclose(got, expected, rtol=1e-9, atol=1e-12, err_msg=f"input {k}")


# ---- bugs outside FunctionsManual, found by the sweep (xfail until fixed elsewhere) ----------

def test_detach_has_no_history():
    x = ratten.tensor([0.5, -0.5], dtype=ratten.float64, requires_grad=True)
    d = x.detach()
    assert not d.requires_grad and d.grad_fn is None and d.is_leaf


def test_setitem_records_copy_slices():
    x = ratten.tensor([1.0, 2.0, 3.0], dtype=ratten.float64, requires_grad=True)
    s = ratten.tensor(4.0, dtype=ratten.float64, requires_grad=True)
    y = x.clone()
    y[0] = s
    gx, gs = ratten.autograd.grad(y.sum(), [x, s], allow_unused=True)
    assert gs is not None and float(gs) == 1.0
    assert gx.tolist() == [0.0, 1.0, 1.0]
