"""Autograd from Python: requires_grad, backward, grad, views and in-place, hooks, grad mode,
custom Functions, torch's errors; and, when torch is installed, gradients against torch's."""

import math

import numpy as np
import pytest

import ratten


def leaf(values, dtype=ratten.float64):
    return ratten.tensor(values, dtype=dtype, requires_grad=True)


def close(a, b, tol=1e-9):
    a = np.asarray(a.detach().numpy() if isinstance(a, ratten.Tensor) else a, dtype=np.float64)
    b = np.asarray(b, dtype=np.float64)
    assert a.shape == b.shape, (a, b)
    assert np.allclose(a, b, rtol=tol, atol=tol), (a, b)


def test_requires_grad_and_leaves():
    x = ratten.zeros(3, requires_grad=True)
    assert x.requires_grad and x.is_leaf and x.grad_fn is None
    y = x * 2
    assert y.requires_grad and not y.is_leaf
    assert y.grad_fn.name() == "MulBackward0"
    nxt = y.grad_fn.next_functions
    assert nxt[0][0].name() == "torch::autograd::AccumulateGrad" and nxt[0][1] == 0
    # The same tensor (ratten wraps a TensorImpl in a new Python object each time).
    assert nxt[0][0].variable._is_view_of(x)
    with pytest.raises(RuntimeError, match="only Tensors of floating point and complex dtype"):
        ratten.tensor([1, 2]).requires_grad_()
    with pytest.raises(RuntimeError, match="you can only change requires_grad flags of leaf"):
        y.requires_grad = False


def test_backward_and_grad_accumulate():
    x = leaf([1.0, 2.0, 3.0])
    (x * x).sum().backward()
    close(x.grad, [2.0, 4.0, 6.0])
    (x * x).sum().backward()
    close(x.grad, [4.0, 8.0, 12.0])
    x.grad = None
    assert x.grad is None
    with pytest.raises(RuntimeError, match="grad can be implicitly created only for scalar outputs"):
        (x * 2).backward()
    (x * 2).backward(ratten.ones(3, dtype=ratten.float64))
    close(x.grad, [2.0, 2.0, 2.0])


def test_autograd_grad_and_double_backward():
    x = leaf([0.5, -1.0])
    y = (x * x * x).sum()
    (g,) = ratten.autograd.grad(y, x, create_graph=True)
    close(g, [0.75, 3.0])
    (gg,) = ratten.autograd.grad(g.sum(), x)
    close(gg, [3.0, -6.0])
    assert x.grad is None
    z = leaf([1.0])
    with pytest.raises(RuntimeError, match="appears to not have been used in the graph"):
        ratten.autograd.grad((x * 2).sum(), [x, z])
    gx, gz = ratten.autograd.grad((x * 2).sum(), [x, z], allow_unused=True)
    close(gx, [2.0, 2.0])
    assert gz is None


def test_retain_graph():
    x = leaf([2.0])
    y = (x.exp() * x).sum()
    y.backward(retain_graph=True)
    y.backward()
    with pytest.raises(RuntimeError, match="Trying to backward through the graph a second time"):
        y.backward()


def test_views_in_place_and_copy_slices():
    x = leaf([1.0, 2.0, 3.0])
    y = x.clone()
    y[0].mul_(2)
    assert y.grad_fn.name() == "torch::autograd::CopySlices"
    y.sum().backward()
    close(x.grad, [2.0, 1.0, 1.0])
    v = y[1:]
    assert v._is_view() and v._base._is_view_of(y) and v._base.shape == y.shape
    assert y._base is None and not y._is_view()


def test_in_place_errors():
    x = leaf([1.0, 2.0])
    with pytest.raises(RuntimeError, match="a leaf Variable that requires grad is being used in an in-place operation."):
        x.add_(1)
    with pytest.raises(RuntimeError, match="a view of a leaf Variable that requires grad"):
        x[0].add_(1)
    a = x.exp()
    b = a * a
    a.add_(1)
    with pytest.raises(RuntimeError, match=r"modified by an inplace operation: \[torch.DoubleTensor \[2\]\], which is output 0 of Add, is at version 1; expected version 0 instead"):
        b.sum().backward()
    with ratten.no_grad():
        v = x.clone().view(2)
    w = x * 1
    with ratten.no_grad():
        u = w.view(2)
    with pytest.raises(RuntimeError, match="A view was created in no_grad mode and is being modified inplace with grad mode enabled"):
        u.mul_(2)
    del v


def test_grad_mode():
    x = leaf([1.0])
    with ratten.no_grad():
        assert not ratten.is_grad_enabled()
        assert not (x * 2).requires_grad
        with ratten.enable_grad():
            assert (x * 2).requires_grad
    assert ratten.is_grad_enabled()

    @ratten.no_grad()
    def f():
        return x * 2

    assert not f().requires_grad
    ratten.set_grad_enabled(False)
    assert not (x * 2).requires_grad
    ratten.set_grad_enabled(True)
    with ratten.inference_mode():
        assert ratten.is_inference_mode_enabled()
        y = x * 2
        assert not y.requires_grad
    assert not ratten.is_inference_mode_enabled()


def test_hooks():
    x = leaf([1.0, 2.0])
    seen = []
    h = x.register_hook(lambda g: seen.append(g.clone()) or g * 3)
    (x * x).sum().backward()
    close(seen[0], [2.0, 4.0])
    close(x.grad, [6.0, 12.0])
    h.remove()
    x.grad = None
    y = x * x
    y.retain_grad()
    y.sum().backward()
    close(y.grad, [1.0, 1.0])
    close(x.grad, [2.0, 4.0])

    def boom(g):
        raise ValueError("from the hook")

    x.register_hook(boom)
    with pytest.raises(ValueError, match="from the hook"):
        (x * 1).sum().backward()


def test_custom_function():
    class Exp(ratten.autograd.Function):
        @staticmethod
        def forward(ctx, i):
            result = i.exp()
            ctx.save_for_backward(result)
            return result

        @staticmethod
        def backward(ctx, grad_output):
            (result,) = ctx.saved_tensors
            return grad_output * result

    x = leaf([0.0, 1.0])
    y = Exp.apply(x)
    assert y.grad_fn.name() == "ExpBackward"
    y.sum().backward()
    close(x.grad, [1.0, math.e])

    class TwoGrads(ratten.autograd.Function):
        @staticmethod
        def forward(ctx, a, b, k):
            ctx.k = k
            assert ctx.needs_input_grad == (True, False, False)
            return a * b * k

        @staticmethod
        def backward(ctx, g):
            return g * ctx.k, None, None

    a = leaf([1.0])
    b = ratten.tensor([5.0], dtype=ratten.float64)
    TwoGrads.apply(a, b, 3.0).sum().backward()
    close(a.grad, [3.0])

    class Bad(ratten.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            return a * 1

        @staticmethod
        def backward(ctx, g):
            return g, g

    with pytest.raises(RuntimeError, match="returned an incorrect number of gradients"):
        Bad.apply(leaf([1.0])).sum().backward()


def test_anomaly_mode_names_the_forward_op():
    class Fails(ratten.autograd.Function):
        @staticmethod
        def forward(ctx, a):
            return a * 1

        @staticmethod
        def backward(ctx, g):
            raise RuntimeError("backward failed")

    with ratten.autograd.detect_anomaly():
        y = Fails.apply(leaf([1.0]))
        with pytest.raises(RuntimeError, match="backward failed"):
            y.sum().backward()


def test_memory_stays_flat_over_many_steps():
    import gc
    import resource

    w = leaf([[0.1] * 16] * 16)
    x = ratten.ones((8, 16), dtype=ratten.float64)

    def step():
        loss = ((x.matmul(w)).tanh() * 2).sum()
        loss.backward()
        w.grad = None

    for _ in range(200):
        step()
    gc.collect()
    before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    for _ in range(2000):
        step()
    gc.collect()
    after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
    # ru_maxrss is in KiB on Linux: a leak of one graph per step would be megabytes.
    assert after - before < 4096, (before, after)


@pytest.fixture
def torch_mod():
    return pytest.importorskip("torch")


CASES = [
    ("mul", lambda m, a, b: (a * b).sum()),
    ("div", lambda m, a, b: (a / (b.abs() + 1)).sum()),
    ("matmul", lambda m, a, b: (a @ b.t()).sum()),
    ("mean_dim", lambda m, a, b: a.mean(dim=1).pow(2).sum()),
    ("exp_log", lambda m, a, b: (a.exp() + (b * b + 1).log()).sum()),
    ("tanh_sigmoid", lambda m, a, b: (a.tanh() * b.sigmoid()).sum()),
    ("max_dim", lambda m, a, b: a.max(dim=1).values.sum()),
    ("softplus_like", lambda m, a, b: (a.exp() + 1).log().sum()),
    ("cat_stack", lambda m, a, b: m.cat([a, b], dim=1).pow(3).sum()),
    ("index", lambda m, a, b: a[:, 1:].sum() + b[0].sum()),
    ("transpose_reshape", lambda m, a, b: (a.t().reshape(-1) * b.t().reshape(-1)).sum()),
    ("var", lambda m, a, b: a.var(dim=0).sum() + b.std()),
    ("where_clamp", lambda m, a, b: a.clamp(-0.5, 0.5).sum() + m.where(a > 0, a, b).sum()),
    ("cumsum_prod", lambda m, a, b: a.cumsum(1).sum() + b.prod()),
    ("logsumexp", lambda m, a, b: a.logsumexp(dim=1).sum()),
    ("gather", lambda m, a, b: a.gather(1, m.tensor([[0, 1], [1, 0]])).sum()),
    ("norm", lambda m, a, b: m.linalg.vector_norm(a) + b.abs().sum()),
]


@pytest.mark.parametrize("name,fn", CASES, ids=[c[0] for c in CASES])
def test_gradients_match_torch(torch_mod, name, fn):
    rng = np.random.default_rng(0)
    a_np = rng.standard_normal((2, 2))
    b_np = rng.standard_normal((2, 2))
    ra = ratten.tensor(a_np, dtype=ratten.float64, requires_grad=True)
    rb = ratten.tensor(b_np, dtype=ratten.float64, requires_grad=True)
    ta = torch_mod.tensor(a_np, requires_grad=True)
    tb = torch_mod.tensor(b_np, requires_grad=True)
    rgrads = ratten.autograd.grad(fn(ratten, ra, rb), [ra, rb], allow_unused=True)
    tgrads = torch_mod.autograd.grad(fn(torch_mod, ta, tb), [ta, tb], allow_unused=True)
    for rg, tg in zip(rgrads, tgrads):
        if tg is None:
            assert rg is None or np.allclose(rg.numpy(), 0)
        else:
            close(rg, tg.numpy(), tol=1e-10)


def test_post_accumulate_grad_hook_runs_and_is_removable():
    x = ratten.tensor([1.0, 2.0], requires_grad=True)
    seen = []
    handle = x.register_post_accumulate_grad_hook(lambda t: seen.append(t.grad.tolist()))
    (x * 3).sum().backward()
    assert seen == [[3.0, 3.0]]
    handle.remove()
    (x * 3).sum().backward()
    assert seen == [[3.0, 3.0]]  # removed: not called again
    assert x.grad.tolist() == [6.0, 6.0]
    y = x * 2
    with pytest.raises(RuntimeError, match="post accumulate grad hooks cannot be registered on non-leaf tensors"):
        y.register_post_accumulate_grad_hook(lambda t: None)


def test_as_strided_backward_overlapping_and_strided_input():
    # as_strided's formula saves TensorGeometry(self); overlapping windows accumulate.
    x = ratten.tensor(np.arange(1.0, 9.0), dtype=ratten.float64, requires_grad=True)
    y = ratten.as_strided(x, (3, 3), (1, 1), 1)
    (y * ratten.tensor(np.arange(9.0).reshape(3, 3), dtype=ratten.float64)).sum().backward()
    np.testing.assert_array_equal(x.grad.numpy(), [0, 0, 4, 12, 12, 8, 0, 0])
    t = ratten.tensor(np.arange(1.0, 9.0), dtype=ratten.float64).reshape(2, 4).t()
    t.requires_grad_()
    y2 = ratten.as_strided(t, (2, 2), (2, 1), 1)
    (y2 * ratten.tensor([[1.0, 2.0], [3.0, 4.0]], dtype=ratten.float64)).sum().backward()
    np.testing.assert_array_equal(t.grad.numpy(), [[0, 4], [1, 0], [2, 0], [3, 0]])
