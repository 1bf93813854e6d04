"""Forward-mode AD (ratten.autograd.forward_ad): dual tensors, tangents from derivatives.yaml's
forward formulas, views and in-place operators, custom Functions' jvp, and torch's errors.
Differential checks against torch run when it is installed."""

import numpy as np
import pytest

import ratten
import ratten.autograd.forward_ad as fwAD

try:
    import torch
    import torch.autograd.forward_ad as tfwAD
except ImportError:  # CI has no torch: the differential tests skip.
    torch = None


def f64(values):
    return ratten.tensor(values, dtype=ratten.float64)


def test_dual_roundtrip_and_level():
    x, t = f64([1.0, 2.0, 3.0]), f64([0.5, -1.0, 2.0])
    assert fwAD.unpack_dual(x) == (x, None)
    with fwAD.dual_level() as level:
        assert level == 0
        d = fwAD.make_dual(x, t)
        primal, tangent = fwAD.unpack_dual(d)
        assert isinstance(fwAD.unpack_dual(d), fwAD.UnpackedDualTensor)
        np.testing.assert_array_equal(primal.numpy(), x.numpy())
        np.testing.assert_array_equal(tangent.numpy(), t.numpy())
        assert fwAD.unpack_dual(primal).tangent is None
        y = (d * d).sin()
        np.testing.assert_allclose(fwAD.unpack_dual(y).tangent.numpy(),
                                   (2 * x * t * (x * x).cos()).numpy())
    # Leaving the level drops the tangents.
    assert fwAD.unpack_dual(d).tangent is None
    assert fwAD.unpack_dual(y).tangent is None


def test_errors_have_torchs_text():
    x = f64([1.0, 2.0])
    with pytest.raises(RuntimeError, match="no level exists, make sure to enter_dual_level"):
        fwAD.make_dual(x, x)
    with fwAD.dual_level():
        with pytest.raises(RuntimeError, match="Nested forward mode AD is not supported"):
            with fwAD.dual_level():
                pass
        with pytest.raises(RuntimeError, match=r"Tensor is of size \[2\] while the given "
                           r"forward gradient is of size \[3\]\."):
            fwAD.make_dual(x, f64([1.0, 2.0, 3.0]))
        with pytest.raises(ValueError, match="Expected primal to be floating point or complex"):
            fwAD.make_dual(ratten.tensor([1, 2]), x)
        with pytest.raises(ValueError, match="Expected tangent to be floating point or complex"):
            fwAD.make_dual(x, ratten.tensor([1, 2]))
        d = fwAD.make_dual(x, x)
        with pytest.raises(RuntimeError, match="already has a forward gradient at the same "
                           "level 0 is not supported"):
            fwAD.make_dual(d, x)
        with pytest.raises(NotImplementedError, match="Trying to use forward AD with mul_out "
                           "that does not support it because it is an out= function"):
            ratten.mul(d, d, out=ratten.empty(2, dtype=ratten.float64))
    with pytest.raises(RuntimeError, match="not the last one that was created"):
        fwAD.exit_dual_level(level=3)


def test_in_place_and_views():
    x, t = f64([1.0, 2.0, 3.0]), f64([1.0, 1.0, 1.0])
    with fwAD.dual_level():
        d = fwAD.make_dual(x, t)
        y = d.clone()
        y.mul_(d)
        np.testing.assert_allclose(fwAD.unpack_dual(y).tangent.numpy(), [2.0, 4.0, 6.0])
        # copy_ into a view of a tensor without tangent gives the base one.
        b = ratten.zeros(2, 3, dtype=ratten.float64)
        b[0].copy_(d)
        np.testing.assert_array_equal(fwAD.unpack_dual(b).tangent.numpy(),
                                      [[1.0, 1.0, 1.0], [0.0, 0.0, 0.0]])
        # setitem records the same.
        c = ratten.zeros(2, 3, dtype=ratten.float64)
        c[1] = d * 2
        np.testing.assert_array_equal(fwAD.unpack_dual(c).tangent.numpy(),
                                      [[0.0, 0.0, 0.0], [2.0, 2.0, 2.0]])
        # A view taken before the base got its tangent sees it.
        e = ratten.zeros(2, 3, dtype=ratten.float64)
        row = e[1]
        e.add_(fwAD.make_dual(ratten.zeros(2, 3, dtype=ratten.float64),
                              ratten.ones(2, 3, dtype=ratten.float64)))
        np.testing.assert_array_equal(fwAD.unpack_dual(row).tangent.numpy(), [1.0, 1.0, 1.0])
        # Views of a dual tensor carry the view of its tangent.
        m = fwAD.make_dual(f64([[1.0, 2.0], [3.0, 4.0]]), f64([[1.0, 2.0], [3.0, 4.0]]))
        np.testing.assert_array_equal(fwAD.unpack_dual(m.t()).tangent.numpy(),
                                      [[1.0, 3.0], [2.0, 4.0]])


def test_forward_and_backward_together():
    # The tangent's computation records a backward graph: reverse over forward.
    x = f64([0.5, 1.5]).requires_grad_()
    with fwAD.dual_level():
        d = fwAD.make_dual(x, f64([1.0, 0.0]))
        y = (d * d * d).sum()
        jvp = fwAD.unpack_dual(y).tangent          # 3 x0^2
        (g,) = ratten.autograd.grad(jvp, x)
    np.testing.assert_allclose(g.numpy(), [6 * 0.5, 0.0])


def test_custom_function_jvp():
    class Cube(ratten.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_forward(x)
            ctx.x = x
            return x ** 3

        @staticmethod
        def backward(ctx, g):
            return g * 3 * ctx.x ** 2

        @staticmethod
        def jvp(ctx, t):
            return 3 * ctx.x ** 2 * t

    class NoJvp(ratten.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2

    x = f64([1.0, 2.0])
    with fwAD.dual_level():
        d = fwAD.make_dual(x, f64([1.0, 1.0]))
        y = Cube.apply(d)
        np.testing.assert_allclose(fwAD.unpack_dual(y).tangent.numpy(), [3.0, 12.0])
        with pytest.raises(NotImplementedError, match="You must implement the jvp function"):
            NoJvp.apply(d)
        # No tangent, no jvp needed.
        NoJvp.apply(x)


OPS = {
    "matmul": lambda m, a, b: m.matmul(a, b),
    "softmax": lambda m, a, b: m.softmax(a * b.t(), dim=1),
    "log_softmax+sum": lambda m, a, b: m.log_softmax(a, dim=0).sum(1) * b.sum(),
    "cat": lambda m, a, b: m.cat([a, b.t()], 0).exp(),
    "stack": lambda m, a, b: m.stack([a, b.t()]).tanh(),
    "where": lambda m, a, b: m.where(a > 0, a, b.t() ** 2),
    "layer_norm": lambda m, a, b: m.nn.functional.layer_norm(a, (3,), b.t()[0], b.t()[1]),
    "cross_entropy": lambda m, a, b: m.nn.functional.cross_entropy(a, m.tensor([0, 2])) * b,
    "conv1d": lambda m, a, b: m.nn.functional.conv1d(a.reshape(1, 2, 3),
                                                      b.reshape(1, 2, 3)),
    "max.dim": lambda m, a, b: a.max(dim=1).values * b.sum(),
    "cumsum/var": lambda m, a, b: a.cumsum(1).var() + b.prod(),
}


@pytest.mark.parametrize("name", sorted(OPS))
def test_tangents_match_torch(name):
    if torch is None:
        pytest.skip("torch is not installed")
    rng = np.random.default_rng(5)
    a, b = rng.standard_normal((2, 3)), rng.standard_normal((3, 2))
    ta, tb = rng.standard_normal((2, 3)), rng.standard_normal((3, 2))
    fn = OPS[name]

    def run(m, fw):
        with fw.dual_level():
            da = fw.make_dual(m.tensor(a, dtype=m.float64), m.tensor(ta, dtype=m.float64))
            db = fw.make_dual(m.tensor(b, dtype=m.float64), m.tensor(tb, dtype=m.float64))
            out = fn(m, da, db)
            return fw.unpack_dual(out).tangent.numpy().copy()

    np.testing.assert_allclose(run(ratten, fwAD), run(torch, tfwAD), rtol=1e-10, atol=1e-12)


def test_functional_forward_mode():
    F = ratten.autograd.functional
    x = f64([0.5, -1.0, 2.0])
    y = f64([[1.0, 2.0], [0.5, -0.5]])

    def f(a, b):
        return (a.sin()[:2] * b.sum(0)).exp(), a.sum() * b

    fwd = F.jacobian(f, (x, y), strategy="forward-mode", vectorize=True)
    rev = F.jacobian(f, (x, y))
    for rf, rr in zip(fwd, rev):
        for a, b in zip(rf, rr):
            assert tuple(a.shape) == tuple(b.shape)
            np.testing.assert_allclose(a.numpy(), b.numpy(), rtol=1e-12)
    with pytest.raises(NotImplementedError, match="only implemented for `vectorize=True`"):
        F.jacobian(f, (x, y), strategy="forward-mode")

    def g(a):
        return (a ** 3).sum() + a.prod()

    # Forward over reverse: the tangents go through the backward graph's formulas.
    h_fwd = F.hessian(g, x, outer_jacobian_strategy="forward-mode", vectorize=True)
    h_rev = F.hessian(g, x)
    np.testing.assert_allclose(h_fwd.detach().numpy(), h_rev.detach().numpy(), rtol=1e-12)
    np.testing.assert_allclose(h_rev.detach().numpy(),
                               [[3.0, 2.0, -1.0], [2.0, -6.0, 0.5], [-1.0, 0.5, 12.0]])


def test_gradgradcheck_forward_over_reverse():
    x = f64([0.5, -1.0, 2.0]).requires_grad_()
    y = f64([1.5, 0.3, -0.7]).requires_grad_()
    assert ratten.autograd.gradgradcheck(lambda a, b: (a * b).exp() * a.sin(), (x, y),
                                         check_fwd_over_rev=True)
    # torch's _softmax_backward_data has no forward formula either.
    with pytest.raises(NotImplementedError, match="_softmax_backward_data"):
        ratten.autograd.gradgradcheck(lambda a: ratten.softmax(a * a, 0), (x,),
                                      check_fwd_over_rev=True, check_rev_over_rev=False,
                                      check_undefined_grad=False)
