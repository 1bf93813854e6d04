"""Autograd of complex functions: gradcheck (real and imaginary parts of complex outputs
checked separately, complex inputs by the conjugate Wirtinger derivative, as torch) and the
gradients against torch's when it is installed."""

import numpy as np
import pytest

import ratten

try:
    import torch
except ImportError:  # CI has no torch: the differential test skips.
    torch = None

A = np.array([1 + 2j, -0.5 + 0.25j, 0.3 - 1j, 0.8 + 0.6j])
B = np.array([0.4 - 0.7j, 1.1 + 0.2j, -0.9 - 0.3j, 0.5 + 1.5j])
R = np.array([0.5, -1.25, 2.0, 0.75])

# name -> (function of the module and the inputs, inputs: "a"/"b" complex, "r" real)
CASES = {
    "add": (lambda m, a, b: a + b * 2, "ab"),
    "sub": (lambda m, a, b: a - b, "ab"),
    "mul": (lambda m, a, b: a * b, "ab"),
    "div": (lambda m, a, b: a / b, "ab"),
    "neg/conj": (lambda m, a: -a.conj(), "a"),
    "exp": (lambda m, a: a.exp(), "a"),
    "log": (lambda m, a: a.log(), "a"),
    "sin": (lambda m, a: a.sin(), "a"),
    "cos": (lambda m, a: a.cos(), "a"),
    "tanh": (lambda m, a: a.tanh(), "a"),
    "sqrt": (lambda m, a: a.sqrt(), "a"),
    "reciprocal": (lambda m, a: a.reciprocal(), "a"),
    "abs": (lambda m, a: a.abs(), "a"),
    "sgn": (lambda m, a: a.sgn(), "a"),
    "real/imag": (lambda m, a: m.real(a) * m.imag(a), "a"),
    "pow scalar": (lambda m, a: a ** 3, "a"),
    "pow tensor": (lambda m, a, b: a ** b, "ab"),
    "sum/mean/prod": (lambda m, a: a.sum() + a.mean() * a.prod(), "a"),
    "mm": (lambda m, a, b: a.reshape(2, 2).mm(b.reshape(2, 2)), "ab"),
    "matmul": (lambda m, a, b: m.matmul(a, b), "ab"),
    "view_as_real": (lambda m, a: m.view_as_real(a * a), "a"),
    "transpose/reshape": (lambda m, a: a.reshape(2, 2).t().reshape(-1) * a, "a"),
    "cat/stack": (lambda m, a, b: m.stack([m.cat([a, b]), m.cat([b, a])]), "ab"),
    "real to complex": (lambda m, r, a: r * a, "ra"),
    "complex to real": (lambda m, a: (a * a.conj()).real.sum(), "a"),
}


def _inputs(m, which):
    arrays = {"a": A, "b": B, "r": R}
    out = []
    for k in which:
        dtype = m.float64 if k == "r" else m.complex128
        out.append(m.tensor(arrays[k], dtype=dtype, requires_grad=True))
    return out


@pytest.mark.parametrize("name", sorted(CASES))
def test_gradcheck_complex(name):
    fn, which = CASES[name]
    inputs = _inputs(ratten, which)
    assert ratten.autograd.gradcheck(lambda *xs: fn(ratten, *xs), tuple(inputs))


@pytest.mark.parametrize("name", sorted(CASES))
def test_complex_gradients_match_torch(name):
    if torch is None:
        pytest.skip("torch is not installed")
    fn, which = CASES[name]
    grads = []
    for m in (ratten, torch):
        inputs = _inputs(m, which)
        out = fn(m, *inputs)
        if out.is_complex():
            out = m.view_as_real(out)
        w = np.linspace(-1.0, 1.0, out.numel()).reshape(tuple(out.shape))
        (out * m.tensor(w, dtype=m.float64)).sum().backward()
        # torch's gradient may carry its conjugate bit (ratten has none).
        grads.append([np.array(t.grad.detach().resolve_conj().numpy() if m is torch
                               else t.grad.numpy()) for t in inputs])
    for g_r, g_t in zip(*grads):
        np.testing.assert_allclose(g_r, g_t, rtol=1e-10, atol=1e-12)


def test_complex_mismatch_names_the_part():
    class Wrong(ratten.autograd.Function):
        @staticmethod
        def forward(ctx, x):
            return x * 2

        @staticmethod
        def backward(ctx, g):
            return g * 3

    a = _inputs(ratten, "a")[0]
    with pytest.raises(RuntimeError, match="While considering the imaginary part of complex outputs only, "
                  "Jacobian mismatch for output 0 with respect to input 0"):
        ratten.autograd.gradcheck(Wrong.apply, (a,))
