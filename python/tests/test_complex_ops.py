"""Complex views and conjugation (view_as_real, view_as_complex, real, imag, conj, _conj,
conj_physical, resolve_conj / resolve_neg, is_conj / is_neg), sgn, ger, the new_* methods and
zero_ / fill_: against references written here, and against torch (values, dtypes, geometry,
error texts) when torch is installed."""

import cmath
import math

import pytest

import ratten
from conftest import HAVE_TORCH, requires_torch

if HAVE_TORCH:
    import torch


def sgn_ref(z):
    r = abs(z)
    return 0j if r == 0 else z / r


def close(x, y, tol=1e-6):
    if isinstance(x, list):
        return len(x) == len(y) and all(close(p, q, tol) for p, q in zip(x, y))
    return abs(x - y) <= tol * (1 + abs(y))


# ---------------------------------------------------------------------------------------------
# Without torch
# ---------------------------------------------------------------------------------------------


def test_views_share_storage_and_see_writes():
    z = ratten.tensor([1 + 2j, -3 + 0.5j, 4 - 1j], dtype=ratten.complex128)
    r = ratten.view_as_real(z)
    assert r.dtype == ratten.float64 and r.shape == (3, 2) and r.stride() == (2, 1)
    assert r.tolist() == [[1.0, 2.0], [-3.0, 0.5], [4.0, -1.0]]
    assert z.real.tolist() == [1.0, -3.0, 4.0]
    assert ratten.imag(z).tolist() == [2.0, 0.5, -1.0]
    assert z.imag.storage_offset() == 1
    z.imag.zero_()
    assert z.tolist() == [1 + 0j, -3 + 0j, 4 + 0j]
    z.real = ratten.tensor([7.0, 8.0, 9.0], dtype=ratten.float64)
    assert z.tolist() == [7 + 0j, 8 + 0j, 9 + 0j]
    x = ratten.arange(6.0).reshape(3, 2)
    c = ratten.view_as_complex(x)
    assert c.dtype == ratten.complex64 and c.tolist() == [1j, 2 + 3j, 4 + 5j]
    c.fill_(1 - 1j)
    assert x.tolist() == [[1.0, -1.0]] * 3
    # real of a real tensor is the tensor itself.
    f = ratten.tensor([1.0, 2.0])
    f.real.fill_(5.0)
    assert f.tolist() == [5.0, 5.0]


def test_view_errors():
    with pytest.raises(TypeError, match="imag is not implemented for tensors with non-complex dtypes."):
        ratten.ones(2).imag
    with pytest.raises(TypeError, match="view_as_real is only supported for complex tensors"):
        ratten.view_as_real(ratten.ones(2))
    with pytest.raises(RuntimeError, match="Tensor must have a last dimension of size 2"):
        ratten.view_as_complex(ratten.ones(3))
    with pytest.raises(NotImplementedError, match="scalar type: Int"):
        ratten.view_as_complex(ratten.ones(3, 2, dtype=ratten.int32))


def test_conj_family():
    x = ratten.tensor([1.0, -2.0])
    # A real tensor's conj and conj_physical are the tensor itself: writes show through.
    x.conj().add_(1)
    ratten.conj_physical(x).add_(1)
    assert x.tolist() == [3.0, 0.0]
    assert not x.is_conj() and not ratten.is_neg(x)
    z = ratten.tensor([1 + 2j, 0j, -3 - 4j])
    want = [complex(v.real, -v.imag) for v in z.tolist()]
    for got in (z.conj(), ratten.conj(z), ratten._conj(z), ratten.conj_physical(z), z.resolve_conj().conj()):
        assert got.tolist() == want
    assert not z.conj().is_conj()
    z.resolve_neg().mul_(2)
    z.mul_(0.5)
    z.conj_physical_()
    assert z.tolist() == want
    out = ratten.empty(0, dtype=ratten.complex64)
    ratten.conj_physical(z, out=out)
    assert out.tolist() == [1 + 2j, 0j, -3 - 4j]


def test_sgn_against_the_reference():
    vals = [3 + 4j, 0j, -1j, 1e-20 + 1e-20j, -2.5 + 0.5j]
    z = ratten.tensor(vals, dtype=ratten.complex128)
    assert close(ratten.sgn(z).tolist(), [sgn_ref(v) for v in vals], 1e-15)
    assert ratten.tensor([-2.0, 0.0, 5.0]).sgn().tolist() == [-1.0, 0.0, 1.0]
    assert ratten.sgn(ratten.tensor([-7, 0, 3])).tolist() == [-1, 0, 1]
    t = ratten.tensor([3 + 4j])
    t.sgn_()
    assert close(t.tolist(), [0.6 + 0.8j])
    assert ratten.sgn(ratten.empty(2, 3, dtype=ratten.complex64, device="meta")).shape == (2, 3)


def test_ger_new_and_zero():
    assert ratten.ger(ratten.tensor([1, 2]), ratten.tensor([3, 4, 5])).tolist() == [[3, 4, 5], [6, 8, 10]]
    x = ratten.ones(2, dtype=ratten.int32)
    assert x.new_zeros(3).dtype == ratten.int32 and x.new_zeros((3,)).tolist() == [0, 0, 0]
    assert x.new_ones(2, 3).shape == (2, 3)
    assert x.new_full((2,), 2.5).tolist() == [2, 2]
    assert x.new_empty_strided((2, 3), (1, 2)).stride() == (1, 2)
    assert x.new_empty([2], dtype=ratten.float64).dtype == ratten.float64
    assert x.new_zeros(2, device="meta").device.type == "meta"
    y = ratten.arange(6.0).reshape(2, 3)
    assert y.zero_() is y and y.tolist() == [[0.0] * 3] * 2
    ratten.zero_(y.fill_(3.0))
    assert y.sum().item() == 0.0


# ---------------------------------------------------------------------------------------------
# Against torch
# ---------------------------------------------------------------------------------------------


def pair(data, dtype):
    return ratten.tensor(data, dtype=getattr(ratten, dtype)), torch.tensor(data, dtype=getattr(torch, dtype))


def same(r, t, tol=0.0):
    assert str(r.dtype).split(".")[-1] == str(t.dtype).split(".")[-1]
    assert tuple(r.shape) == tuple(t.shape)
    assert tuple(r.stride()) == tuple(t.stride())
    a, b = r.tolist(), t.tolist()
    if tol:
        assert close(a, b, tol)
    else:
        assert a == b or repr(a) == repr(b)


def raises_same(fr, ft):
    with pytest.raises(Exception) as et:
        ft()
    with pytest.raises(type(et.value)) as er:
        fr()
    assert str(er.value).split("\n")[0] == str(et.value).split("\n")[0]


@requires_torch
@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
def test_views_match_torch(dtype):
    data = [[1 + 2j, -3 + 0.5j, 4 - 1j, 0j], [2j, 5 + 0j, -1 - 1j, 3 + 3j]]
    r, t = pair(data, dtype)
    for fr, ft in [
        (lambda a: ratten.view_as_real(a), lambda a: torch.view_as_real(a)),
        (lambda a: a.real, lambda a: a.real),
        (lambda a: a.imag, lambda a: a.imag),
        (lambda a: ratten.view_as_real(a[:, 1:]), lambda a: torch.view_as_real(a[:, 1:])),
        (lambda a: ratten.imag(a.t()), lambda a: torch.imag(a.t())),
        (lambda a: ratten.view_as_complex(ratten.view_as_real(a)), lambda a: torch.view_as_complex(torch.view_as_real(a))),
    ]:
        gr, gt = fr(r), ft(t)
        same(gr, gt)
        assert gr.storage_offset() == gt.storage_offset()


@requires_torch
def test_view_errors_match_torch():
    cases = [
        (lambda m: m.view_as_complex(m.zeros(3)),),
        (lambda m: m.view_as_complex(m.zeros(())),),
        (lambda m: m.view_as_complex(m.zeros(3, 2).t().contiguous().t()),),
        (lambda m: m.view_as_complex(m.zeros(3, 3)[:, 1:]),),
        (lambda m: m.view_as_complex(m.zeros(8)[1:5].view(2, 2)),),
        (lambda m: m.view_as_complex(m.zeros(3, 2, dtype=m.int32)),),
        (lambda m: m.view_as_real(m.zeros(3)),),
        (lambda m: m.imag(m.zeros(3)),),
        (lambda m: m.ger(m.ones(2, 1), m.ones(3)),),
        (lambda m: m.conj_physical(m.tensor([1 + 2j]), out=m.empty(1)),),
        (lambda m: m.sgn(m.tensor([1.0]), out=m.empty(1, dtype=m.long)),),
        (lambda m: m.ones(2, dtype=m.int32).new_full([2], 1e10),),
        (lambda m: m.ones(2).new_zeros(-1),),
        (lambda m: m.empty(3, dtype=m.int8).fill_(1000),),
    ]
    for (f,) in cases:
        raises_same(lambda: f(ratten), lambda: f(torch))


@requires_torch
@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "int8", "bool", "complex64", "complex128"])
def test_pointwise_match_torch(dtype):
    if dtype.startswith("complex"):
        data = [complex(a, b) for a in (-2.5, 0.0, 1.0, 3.0) for b in (-1.0, 0.0, 4.0)]
    elif dtype == "bool":
        data = [True, False, True]
    elif dtype.startswith("int"):
        data = [-3, 0, 5, 7, -1]
    else:
        data = [-2.5, -0.0, 0.0, 1.0, float("nan"), float("inf"), -float("inf")]
    r, t = pair(data, dtype)
    tol = 1e-6 if dtype == "complex64" else 1e-15 if dtype.startswith("complex") else 0.0
    same(ratten.sgn(r), torch.sgn(t), tol)
    same(ratten.conj_physical(r), torch.conj_physical(t))
    same(r.conj(), t.conj().resolve_conj())
    same(ratten.resolve_conj(r), torch.resolve_conj(t))
    assert r.is_conj() is False and ratten.is_neg(r) is False
    out_r = ratten.empty(0, dtype=r.dtype)
    out_t = torch.empty(0, dtype=t.dtype)
    same(ratten.conj_physical(r, out=out_r), torch.conj_physical(t, out=out_t))
    same(ratten.sgn(r, out=out_r), torch.sgn(t, out=out_t), tol)
    r2, t2 = r.clone(), t.clone()
    if dtype != "bool":
        same(r2.sgn_(), t2.sgn_(), tol)
    # After sgn_ (equal within tol) the values may differ in the last bit.
    same(r2.conj_physical_(), t2.conj_physical_(), tol if dtype != "bool" else 0.0)
    same(r2.zero_(), t2.zero_())
    same(ratten.zero_(r2.fill_(1)), torch.zero_(t2.fill_(1)))


@requires_torch
def test_sgn_of_a_large_complex_tensor_matches_torch():
    torch.manual_seed(0)
    t = torch.randn(1000, dtype=torch.complex128) * torch.rand(1000) * 10
    r = ratten.tensor(t.tolist(), dtype=ratten.complex128)
    got, want = ratten.sgn(r).tolist(), torch.sgn(t).tolist()
    # Within a few ulps: torch's |z| is not always the correctly rounded hypotenuse.
    assert all(abs(a - b) <= 5e-16 for a, b in zip(got, want))


@requires_torch
def test_new_and_fill_match_torch():
    for dtype in ["int32", "float64", "complex64", "bool"]:
        r, t = pair([1, 0], dtype)
        same(r.new_zeros(2, 3), t.new_zeros(2, 3))
        same(r.new_ones((3,)), t.new_ones((3,)))
        same(r.new_full((2, 2), 1), t.new_full((2, 2), 1))
        same(r.new_ones(2, dtype=ratten.float16), t.new_ones(2, dtype=torch.float16))
        assert tuple(r.new_empty_strided((2, 3), (1, 2)).stride()) == t.new_empty_strided((2, 3), (1, 2)).stride()
        assert r.new_empty(4, 5).shape == t.new_empty(4, 5).shape
        same(r.clone().fill_(1), t.clone().fill_(1))
        same(ratten.fill(r, 0), torch.fill(t, 0))
    a, b = pair([1.0, 2.0], "float32")
    va, vb = pair([3.0, 4.0, 5.0], "float32")
    same(ratten.ger(a, va), torch.ger(b, vb))
    same(a.ger(va), b.ger(vb))
    # Large fills (the streamed path) at an unaligned offset.
    big_r = ratten.zeros(9 << 20)
    big_r[3:-5].fill_(2.0)
    s = big_r.sum().item()
    assert s == 2.0 * ((9 << 20) - 8)
    assert big_r[:3].tolist() == [0.0] * 3 and big_r[-5:].tolist() == [0.0] * 5
