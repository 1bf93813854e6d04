"""ratten.autograd.gradcheck / gradgradcheck (reports, options, errors) and
ratten.autograd.functional (jacobian, hessian, vjp, jvp, hvp, vhp), against closed forms and,
when torch is installed, against torch."""

import numpy as np
import pytest

import ratten
from ratten.autograd import functional as F
from ratten.autograd.gradcheck import GradcheckError


def leaf(values):
    return ratten.tensor(values, dtype=ratten.float64, requires_grad=True)


def arr(t):
    return np.asarray(t.detach().numpy(), dtype=np.float64)


class WrongGrad(ratten.autograd.Function):
    """x * x with a backward off by a factor 3/2."""

    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return g * x * 3


def test_gradcheck_passes_and_accepts_options():
    x = leaf([[0.5, -1.0], [2.0, 0.3]])
    y = leaf([1.5, -0.5])
    assert ratten.autograd.gradcheck(lambda a, b: (a * b).tanh(), (x, y))
    assert ratten.autograd.gradcheck(lambda a: a.sum(), x, fast_mode=True, nondet_tol=1e-12,
                                     check_undefined_grad=False, check_grad_dtypes=True)
    # Several outputs, an integer one among them.
    assert ratten.autograd.gradcheck(lambda a: a.max(dim=1), x)
    # Non-tensor arguments pass through.
    assert ratten.autograd.gradcheck(lambda a, k: a.pow(k), (x, 3))


def test_gradcheck_failure_report_is_torchs():
    x = leaf([1.0, 2.0])
    with pytest.raises(GradcheckError) as info:
        ratten.autograd.gradcheck(WrongGrad.apply, (x,))
    msg = str(info.value)
    assert msg.startswith("Jacobian mismatch for output 0 with respect to input 0,\nnumerical:")
    assert "\nanalytical:" in msg
    numerical = msg.split("numerical:")[1].split("\nanalytical:")[0]
    analytical = msg.split("analytical:")[1]
    assert "2.0000" in numerical and "4.0000" in numerical
    assert "3." in analytical and "6." in analytical
    assert isinstance(info.value, RuntimeError)
    assert ratten.autograd.gradcheck(WrongGrad.apply, (x,), raise_exception=False) is False


def test_gradcheck_input_checks():
    with pytest.raises(ValueError, match="at least one input tensor to require gradient"):
        ratten.autograd.gradcheck(lambda a: a * 2, (ratten.ones(2, dtype=ratten.float64),))
    x = ratten.tensor([1.0], dtype=ratten.float64).expand(3).detach().requires_grad_()
    with pytest.raises(RuntimeError, match="The 0th input has a dimension with stride 0"):
        ratten.autograd.gradcheck(lambda a: a * 2, (x,))
    with pytest.warns(UserWarning, match="is not a double precision floating point"):
        ratten.autograd.gradcheck(lambda a: a * 2, (ratten.ones(2, requires_grad=True),),
                                  eps=1e-2, atol=1e-2, rtol=1e-2)
    with pytest.raises(NotImplementedError, match="check_batched_grad=True is not supported"):
        ratten.autograd.gradcheck(lambda a: a * 2, (leaf([1.0]),), check_batched_grad=True)


def test_gradcheck_forward_ad():
    a, b = leaf([0.5, -1.0, 2.0]), leaf([1.5, 0.25, -0.75])
    assert ratten.autograd.gradcheck(lambda x, y: (x * y).exp().sum(0), (a, b),
                                     check_forward_ad=True)
    assert ratten.autograd.gradcheck(lambda x: x.sin(), (a,), check_forward_ad=True,
                                     check_backward_ad=False)

    class WrongJvp(ratten.autograd.Function):
        # ratten's custom Functions have no jvp: a tangent through one is refused.
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g * 2

    with pytest.raises((NotImplementedError, RuntimeError)):
        ratten.autograd.gradcheck(WrongJvp.apply, (a,), check_forward_ad=True)


def test_gradcheck_backward_not_multiplied_by_grad_output():
    class Ignores(ratten.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 1

        @staticmethod
        def backward(ctx, g):
            return ratten.ones_like(g)

    with pytest.raises(GradcheckError, match="backward not multiplied by grad_output"):
        # Numerically the Jacobian is the identity: only the zero-grad check sees it.
        ratten.autograd.gradcheck(Ignores.apply, (leaf([1.0]),))


def test_gradcheck_no_differentiable_outputs():
    x = leaf([0.5, -0.5])
    assert ratten.autograd.gradcheck(lambda a: a.gt(0), (x,))
    with pytest.raises(GradcheckError, match="Numerical gradient for function expected to be zero"):
        ratten.autograd.gradcheck(lambda a: ratten.no_grad()(lambda: a * 2)(), (x,))


def test_gradgradcheck():
    x = leaf([[0.5, -1.0], [2.0, 0.3]])
    assert ratten.autograd.gradgradcheck(lambda a: (a * a * a).sum(dim=0), (x,))
    assert ratten.autograd.gradgradcheck(lambda a: a.tanh(), (x,), gen_non_contig_grad_outputs=True)
    g = ratten.ones((2, 2), dtype=ratten.float64, requires_grad=True)
    assert ratten.autograd.gradgradcheck(lambda a: a * a, (x,), (g,))


# ---- functional -----------------------------------------------------------------------------

def cube_sum(x):
    return (x * x * x).sum()


def test_jacobian_and_hessian():
    x = leaf([1.0, -2.0, 0.5])
    j = F.jacobian(lambda a: a * a, x)
    assert np.allclose(arr(j), np.diag([2.0, -4.0, 1.0]))
    assert not j.requires_grad
    j2 = F.jacobian(lambda a, b: (a * b, a.sum()), (x, leaf([3.0, 1.0, 2.0])))
    assert len(j2) == 2 and len(j2[0]) == 2 and tuple(j2[1][0].shape) == (3,)
    assert np.allclose(arr(j2[0][1]), np.diag([1.0, -2.0, 0.5]))
    h = F.hessian(cube_sum, x)
    assert np.allclose(arr(h), np.diag([6.0, -12.0, 3.0]))
    jg = F.jacobian(lambda a: a * a, x, create_graph=True)
    assert jg.requires_grad
    # Independent input: zeros, or an error in strict mode.
    z = leaf([1.0])
    assert not arr(F.jacobian(lambda a, b: a * 2, (x, z))[1]).any()
    with pytest.raises(RuntimeError, match="Output 0 of the user-provided function is independent of input 1"):
        F.jacobian(lambda a, b: a * 2, (x, z), strict=True)
    # vectorize=True computes the same rows (one by one: ratten has no vmap).
    assert np.allclose(arr(F.jacobian(lambda a: a * a, x, vectorize=True)),
                       arr(F.jacobian(lambda a: a * a, x)))
    with pytest.raises(RuntimeError, match="`strict=True` and `vectorized=True`"):
        F.jacobian(lambda a: a * 2, x, vectorize=True, strict=True)
    with pytest.raises(RuntimeError, match="should return a single Tensor"):
        F.hessian(lambda a: (a.sum(), a.sum()), x)
    with pytest.raises(RuntimeError, match="should contain a single element"):
        F.hessian(lambda a: a * 2, x)


def test_vjp_jvp_hvp_vhp():
    x = leaf([1.0, -2.0, 0.5])
    v = ratten.tensor([1.0, 0.5, -1.0], dtype=ratten.float64)
    out, g = F.vjp(lambda a: a * a, x, v)
    assert np.allclose(arr(out), [1.0, 4.0, 0.25]) and np.allclose(arr(g), [2.0, -2.0, -1.0])
    out, g = F.jvp(lambda a: a * a, x, v)
    assert np.allclose(arr(g), [2.0, -2.0, -1.0])
    out, g = F.hvp(cube_sum, x, v)
    assert np.allclose(arr(out), -6.875) and np.allclose(arr(g), [6.0, -6.0, -3.0])
    out, g = F.vhp(cube_sum, x, v)
    assert np.allclose(arr(g), [6.0, -6.0, -3.0])
    # v may be omitted for one-element outputs / inputs only.
    _, g = F.vjp(cube_sum, x)
    assert np.allclose(arr(g), [3.0, 12.0, 0.75])
    with pytest.raises(RuntimeError, match="The vector v can only be None if the user-provided function returns"):
        F.vjp(lambda a: a * a, x)
    with pytest.raises(RuntimeError, match=r"v has invalid size: should be .*Size\(\[3\]\) but got .*Size\(\[2\]\)"):
        F.vjp(lambda a: a * a, x, ratten.ones(2, dtype=ratten.float64))
    with pytest.raises(TypeError, match="The inputs given to vjp must be either a Tensor or a tuple of Tensors"):
        F.vjp(cube_sum, [x])
    # The caller's graph is left alone; create_graph gives differentiable results.
    assert x.grad is None and not g.requires_grad
    _, gg = F.vjp(cube_sum, x, create_graph=True)
    assert gg.requires_grad
    (d,) = ratten.autograd.grad(gg.sum(), x)
    assert np.allclose(arr(d), [6.0, -12.0, 3.0])


@pytest.fixture
def torch_mod():
    return pytest.importorskip("torch")


def test_functional_matches_torch(torch_mod):
    rng = np.random.default_rng(3)
    a = rng.standard_normal((2, 3))
    b = rng.standard_normal(3)
    v = rng.standard_normal((2, 3))

    def f(m):
        return lambda x, y: ((x * y).tanh() * x).sum(dim=0)

    def s(m):
        return lambda x, y: ((x * y).tanh() * x).sum()

    def both(fn, inputs, *extra):
        r = fn(ratten)(*(ratten.from_numpy(i.copy()) for i in inputs), *extra)
        t = fn(torch_mod)(*(torch_mod.from_numpy(i.copy()) for i in inputs), *extra)
        return r, t

    def flat(x):
        if isinstance(x, (tuple, list)):
            return [y for z in x for y in flat(z)]
        return [x.detach().numpy()]

    cases = [
        lambda m, *i: m.autograd.functional.jacobian(f(m), i),
        lambda m, *i: m.autograd.functional.hessian(s(m), i),
        lambda m, x, y, w: m.autograd.functional.vjp(f(m), (x, y), w[0]),
        lambda m, x, y, w: m.autograd.functional.jvp(f(m), (x, y), (w, y)),
        lambda m, x, y, w: m.autograd.functional.hvp(s(m), (x, y), (w, y)),
        lambda m, x, y, w: m.autograd.functional.vhp(s(m), (x, y), (w, y)),
    ]
    for k, case in enumerate(cases):
        inputs = (a, b) if k < 2 else (a, b, v)
        r = case(ratten, *(ratten.from_numpy(i.copy()) for i in inputs))
        t = case(torch_mod, *(torch_mod.from_numpy(i.copy()) for i in inputs))
        for x, y in zip(flat(r), flat(t)):
            np.testing.assert_allclose(x, y, rtol=1e-10, atol=1e-12, err_msg=f"case {k}")


def test_gradcheck_report_matches_torch(torch_mod):
    class TWrong(torch_mod.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            ctx.save_for_backward(x)
            return x * x

        @staticmethod
        def backward(ctx, g):
            (x,) = ctx.saved_tensors
            return g * x * 3

    xt = torch_mod.tensor([1.0, 2.0], dtype=torch_mod.float64, requires_grad=True)
    with pytest.raises(RuntimeError) as tinfo:
        torch_mod.autograd.gradcheck(TWrong.apply, (xt,))
    with pytest.raises(RuntimeError) as rinfo:
        ratten.autograd.gradcheck(WrongGrad.apply, (leaf([1.0, 2.0]),))
    # The same first line and the same structure; the tensors print their values.
    t_lines = str(tinfo.value).splitlines()
    r_lines = str(rinfo.value).splitlines()
    assert r_lines[0] == t_lines[0]
    assert [ln.split(":")[0] for ln in r_lines if ":" in ln] == \
        [ln.split(":")[0] for ln in t_lines if ":" in ln]
