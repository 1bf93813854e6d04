"""Cases where ratten's Python API differed from torch 2.15 (found by the differential test
python/tools/torch_difftest.py). The expected values and messages are torch's; with torch installed the same
calls are also compared against it."""

import cmath
import math

import pytest

import ratten

try:
    import torch
except ImportError:  # CI has no torch: the written-out expectations still run.
    torch = None


def test_reflected_add_and_mul_compute_tensor_op_number():
    # torch's __radd__ / __rmul__ are self.add(other) / self.mul(other): the complex NaN parts
    # show the order ((1+2j) + nan is nan+2j; nan+0j + 1*(1+2j) keeps the 2j).
    t = ratten.tensor([100.0, math.nan])
    r = (1 + 2j) + t
    assert r.dtype == ratten.complex64
    v = r.tolist()
    assert v[0] == 101 + 2j
    assert math.isnan(v[1].real) and v[1].imag == 2.0
    r = (1 + 2j) * ratten.tensor([2.0])
    assert r.tolist() == [2 + 4j]


def test_fill_with_a_tensor_value():
    t = ratten.tensor([1.0, 2.0])
    with pytest.raises(
        RuntimeError,
        match=r"fill_ only supports 0-dimension value tensor but got tensor with 1 dimensions\.",
    ):
        t.fill_(ratten.tensor([3.0]))
    # A 0-dim complex value into an integer tensor: its real part (copy_ semantics).
    i = ratten.tensor([3, -2], dtype=ratten.int16)
    i.fill_(ratten.tensor(2.5 + 3j))
    assert i.tolist() == [2, 2]
    # Through copy_, an expanded self is refused, as torch's fill_.Tensor does.
    e = ratten.tensor([-2]).expand(4)
    with pytest.raises(RuntimeError, match="more than one element of the written-to tensor"):
        e.fill_(ratten.tensor(0, dtype=ratten.int32))
    # A number fills an expanded tensor (fill is idempotent).
    z = ratten.zeros(1).expand(3)
    z.fill_(2.0)
    assert z.tolist() == [2.0, 2.0, 2.0]


def test_inplace_on_an_empty_expanded_tensor():
    e = ratten.zeros(1, 1).expand(0, 2)
    assert e.add_(1.0) is e
    assert e.shape == (0, 2)


def test_invert_needs_an_integer_or_bool_tensor():
    with pytest.raises(
        TypeError, match=r"~ \(operator\.invert\) is only implemented on integer and Boolean-type tensors"
    ):
        ~ratten.tensor([1.0])
    assert (~ratten.tensor([True, False])).tolist() == [False, True]
    assert (~ratten.tensor([0], dtype=ratten.int8)).tolist() == [-1]


def test_errors_have_torchs_classes():
    z = ratten.tensor([1 + 1j])
    with pytest.raises(TypeError, match="maximum not implemented for complex tensors."):
        ratten.maximum(z, z)
    with pytest.raises(NotImplementedError, match="clamp is not supported for complex types"):
        z.clamp(min=0)
    with pytest.raises(NotImplementedError, match="Boolean inputs not supported for relu"):
        ratten.relu(ratten.tensor([True]))
    with pytest.raises(RuntimeError, match="value cannot be converted to type int8_t without overflow"):
        ratten.zeros(2, dtype=ratten.int8).fill_(300)


def test_complex_abs_sign_and_where():
    a = ratten.abs(ratten.tensor([3 + 4j]))
    assert a.dtype == ratten.float32 and a.tolist() == [5.0]
    assert ratten.tensor([math.nan, -2.0]).sign().tolist() == [0.0, -1.0]
    n = (-ratten.tensor([0.0])).tolist()[0]
    assert n == 0.0 and math.copysign(1.0, n) == -1.0
    r = ratten.where(ratten.tensor([1, 0], dtype=ratten.uint8), ratten.tensor([1.0, 2.0]), ratten.tensor([3.0, 4.0]))
    assert r.tolist() == [1.0, 4.0]


def test_reflected_division_is_reciprocal_times_number():
    # torch's __rtruediv__ is self.reciprocal() * other: rounded twice, unlike div(other, self).
    assert (-3 / ratten.tensor(7, dtype=ratten.uint8)).item() == -0.4285714626312256
    assert ratten.div(-3, ratten.tensor(7, dtype=ratten.uint8)).item() == -0.4285714328289032
    assert (7 / ratten.tensor([3], dtype=ratten.int8)).tolist() == [2.3333334922790527]
    # A complex number over a float16 tensor is a complex32 product (torch has no complex32
    # division kernel, and says so when the tensor itself is complex32).
    r = (1 + 2j) / ratten.tensor([-0.5], dtype=ratten.float16)
    assert r.dtype == ratten.complex32 and r.tolist() == [-2 - 4j]
    with pytest.raises(NotImplementedError, match="\"reciprocal_cpu\" not implemented for 'ComplexHalf'"):
        0 / ratten.ones(2, dtype=ratten.complex32)
    assert ratten.reciprocal(ratten.tensor([2, 4], dtype=ratten.int32)).tolist() == [0.5, 0.25]
    assert ratten.tensor([True, False]).reciprocal().tolist() == [1.0, math.inf]
    t = ratten.tensor([4.0])
    t.reciprocal_()
    assert t.tolist() == [0.25]


def test_bindings_torch_does_not_have():
    # Functions made by autogen (rsub.Tensor_out, relu.out, ...) have no Python binding, and
    # rsub is no Tensor method (variants: function).
    t = ratten.tensor([1, 2])
    with pytest.raises(TypeError, match=r"^relu\(\) got an unexpected keyword argument 'out'$"):
        ratten.relu(ratten.tensor([1.0]), out=ratten.empty(1))
    with pytest.raises(TypeError, match=r"rsub\(\) received an invalid combination of arguments"):
        ratten.rsub(t, t, out=ratten.empty(2, dtype=ratten.int64))
    with pytest.raises(AttributeError, match="'Tensor' object has no attribute 'rsub'"):
        t.rsub
    # Overloads in torch's order, a Scalar self keeps its name, and a reason is given only
    # for a signature with as many entries as the call has arguments.
    with pytest.raises(TypeError) as e:
        ratten.bitwise_and(ratten.tensor([1.0, 2.0]), "x")
    assert str(e.value) == (
        "bitwise_and() received an invalid combination of arguments - got (Tensor, str), but "
        "expected one of:\n"
        " * (Tensor input, Tensor other, *, Tensor out = None)\n"
        " * (Number self, Tensor other)\n"
        "      didn't match because some of the arguments have invalid types: (!Tensor!, !str!)\n"
        " * (Tensor input, Number other, *, Tensor out = None)\n"
    )


@pytest.mark.skipif(torch is None, reason="needs torch")
def test_against_torch():
    def same(f):
        got, want = f(ratten), f(torch)
        assert str(got.dtype).split(".")[-1] == str(want.dtype).split(".")[-1]
        for g, w in zip(got.tolist(), want.tolist()):
            if isinstance(w, complex):
                assert cmath.isclose(g, w) or (
                    (math.isnan(g.real) == math.isnan(w.real)) and (math.isnan(g.imag) == math.isnan(w.imag))
                )
            elif isinstance(w, float) and math.isnan(w):
                assert math.isnan(g)
            else:
                assert g == w

    same(lambda L: (1 + 2j) + L.tensor([100.0, math.nan]))
    same(lambda L: L.tensor([math.nan, 1.0, -0.5]).sign())
    same(lambda L: L.abs(L.tensor([3 + 4j, -1j])))
    same(lambda L: L.tensor([5, 200], dtype=L.uint8).clamp(min=-1))
    same(lambda L: L.tensor([0.0, 3.0], dtype=L.float16) * 1e10)
    same(lambda L: L.lerp(L.tensor([1 + 1j]), L.tensor([2 + 2j]), 0.5))
    same(lambda L: L.pow(0, L.tensor([-1, 0, 2], dtype=L.int32)))
    same(lambda L: L.tensor([1.0, math.inf, math.nan]).to(L.int32))
