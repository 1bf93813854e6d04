"""The Tensor class and module functions, compared with numpy (and torch when installed)."""

import gc
import threading

import numpy as np
import pytest

import ratten
from conftest import HAVE_TORCH, requires_torch

if HAVE_TORCH:
    import torch


ALL_DTYPES = [
    ("uint8", np.uint8),
    ("int8", np.int8),
    ("int16", np.int16),
    ("int32", np.int32),
    ("int64", np.int64),
    ("float16", np.float16),
    ("float32", np.float32),
    ("float64", np.float64),
    ("complex64", np.complex64),
    ("complex128", np.complex128),
    ("bool", np.bool_),
]


# ---- dtypes and devices ---------------------------------------------------------------------


def test_dtypes_are_module_attributes_with_torch_repr():
    assert repr(ratten.float32) == "ratten.float32"
    assert ratten.float is ratten.float32
    assert ratten.long is ratten.int64
    assert ratten.double is ratten.float64
    assert ratten.half is ratten.float16
    assert repr(ratten.bfloat16) == "ratten.bfloat16"
    assert ratten.float32.is_floating_point and not ratten.int32.is_floating_point
    assert ratten.complex64.is_complex
    assert ratten.float64.itemsize == 8
    assert not ratten.bool.is_signed
    assert {ratten.float32: 1}[ratten.float] == 1


def test_devices_as_strings():
    t = ratten.zeros(2)
    assert t.device == "cpu"
    assert repr(t.device) == "device(type='cpu')"
    assert str(t.device) == "cpu"
    assert ratten.device("cpu") == t.device
    assert ratten.zeros(2, device="cpu").device.type == "cpu"
    with pytest.raises(RuntimeError):
        ratten.device("nonsense")


# ---- factories --------------------------------------------------------------------------------


@pytest.mark.parametrize("name", ["zeros", "ones", "empty"])
def test_size_factories(name):
    for args in [(2, 3), ((2, 3),), ([2, 3],)]:
        t = getattr(ratten, name)(*args)
        assert t.shape == (2, 3)
        assert t.dtype is ratten.float32
        assert t.stride() == (3, 1)
    t = getattr(ratten, name)(4, dtype=ratten.int32)
    assert t.dtype is ratten.int32 and t.shape == (4,)
    if name != "empty":
        np.testing.assert_array_equal(t.numpy(), getattr(np, name)(4, dtype=np.int32))


def test_full_infers_dtype_as_torch():
    assert ratten.full((2,), 7).dtype is ratten.int64
    assert ratten.full((2,), 7.5).dtype is ratten.float32
    assert ratten.full((2,), True).dtype is ratten.bool
    assert ratten.full((2,), 1j).dtype is ratten.complex64
    assert ratten.full([2, 2], 3, dtype=ratten.float64).tolist() == [[3.0, 3.0], [3.0, 3.0]]


def test_arange_matches_numpy():
    np.testing.assert_array_equal(ratten.arange(5).numpy(), np.arange(5))
    assert ratten.arange(5).dtype is ratten.int64
    np.testing.assert_allclose(ratten.arange(0, 1, 0.25).numpy(), np.arange(0, 1, 0.25, dtype=np.float32))
    assert ratten.arange(1, 4).tolist() == [1, 2, 3]
    assert ratten.arange(0, 10, step=3).tolist() == [0, 3, 6, 9]
    assert ratten.arange(3, dtype=ratten.float64).dtype is ratten.float64


def test_factory_argument_errors_are_torchs():
    with pytest.raises(TypeError) as e:
        ratten.zeros("a")
    assert str(e.value) == "zeros(): argument 'size' (position 1) must be tuple of ints, not str"
    with pytest.raises(TypeError) as e:
        ratten.zeros(2, dtype="float")
    assert str(e.value) == "zeros(): argument 'dtype' must be ratten.dtype, not str"
    with pytest.raises(TypeError) as e:
        ratten.zeros(2, colour=1)
    assert str(e.value) == "zeros() got an unexpected keyword argument 'colour'"
    with pytest.raises(TypeError) as e:
        ratten.full((2,))
    assert str(e.value) == 'full() missing 1 required positional arguments: "fill_value"'
    with pytest.raises(TypeError) as e:
        ratten.arange("x")
    # One argument fits only arange(end) (torch's "plausible signature" rule): its own error.
    assert str(e.value) == "arange(): argument 'end' (position 1) must be Number, not str"
    with pytest.raises(TypeError) as e:
        ratten.arange("x", 2)
    msg = str(e.value)
    assert msg.startswith("arange() received an invalid combination of arguments - got (str, int), but expected one of:\n")
    assert " * (Number end, *, ratten.dtype dtype = None, " in msg
    assert " * (Number start, Number end, *, " in msg or " * (Number start, Number end, Number step = 1, *, " in msg
    with pytest.raises(RuntimeError, match="negative dimension -1"):
        ratten.zeros(-1)


def test_tensor_infers_dtype_as_torch():
    assert ratten.tensor([1, 2]).dtype is ratten.int64
    assert ratten.tensor([1, 2.0]).dtype is ratten.float32
    assert ratten.tensor([True, False]).dtype is ratten.bool
    assert ratten.tensor([1, 2j]).dtype is ratten.complex64
    assert ratten.tensor(3.5).shape == ()
    assert ratten.tensor([]).dtype is ratten.float32
    assert ratten.tensor([]).shape == (0,)
    assert ratten.tensor([[1, 2], [3, 4]], dtype=ratten.float64).tolist() == [[1.0, 2.0], [3.0, 4.0]]
    assert ratten.tensor(((1, 2), (3, 4))).shape == (2, 2)
    assert ratten.tensor(np.array([[1.5, 2]])).tolist() == [[1.5, 2.0]]


def test_tensor_errors():
    with pytest.raises(ValueError, match=r"expected sequence of length 2 at dim 1 \(got 3\)"):
        ratten.tensor([[1, 2], [1, 2, 3]])
    # A string is a sequence of strings: torch's walk finds no end to it.
    with pytest.raises(ValueError, match="too many dimensions 'str'"):
        ratten.tensor(["a"])
    # torch 2.15 raises the overflow as a RuntimeError.
    with pytest.raises(RuntimeError, match="overflow"):
        ratten.tensor([300], dtype=ratten.int8)


def test_rand_randn_reproducible_and_as_torch():
    ratten.manual_seed(0)
    a = ratten.rand(3, 4)
    b = ratten.randn(5, dtype=ratten.float64)
    ratten.manual_seed(0)
    assert ratten.rand(3, 4).tolist() == a.tolist()
    assert ratten.randn(5, dtype=ratten.float64).tolist() == b.tolist()
    assert 0.0 <= a.numpy().min() and a.numpy().max() < 1.0
    assert ratten.initial_seed() == 0
    # torch's mt19937 sequence: torch.manual_seed(0); torch.rand(3) is 0.4963, 0.7682, 0.0885.
    ratten.manual_seed(0)
    np.testing.assert_allclose(ratten.rand(3).numpy(), [0.49625659, 0.76822180, 0.08847743], rtol=1e-6)
    if HAVE_TORCH:
        torch.manual_seed(0)
        ratten.manual_seed(0)
        np.testing.assert_array_equal(ratten.randn(7).numpy(), torch.randn(7).numpy())


def test_num_threads():
    n = ratten.get_num_threads()
    assert n >= 1
    ratten.set_num_threads(1)
    assert ratten.get_num_threads() == 1
    ratten.set_num_threads(n)
    assert ratten.get_num_threads() == n
    with pytest.raises(RuntimeError):
        ratten.set_num_threads(0)


# ---- repr -----------------------------------------------------------------------------------


def test_repr_as_torch():
    assert repr(ratten.arange(3)) == "tensor([0, 1, 2])"
    assert repr(ratten.zeros(2, 2)) == "tensor([[0., 0.],\n        [0., 0.]])"
    assert repr(ratten.ones(2, dtype=ratten.float64)) == "tensor([1., 1.], dtype=ratten.float64)"
    assert repr(ratten.tensor([True, False])) == "tensor([ True, False])"
    assert repr(ratten.tensor(2.5)) == "tensor(2.5000)"
    assert repr(ratten.zeros(0)) == "tensor([])"
    assert str(ratten.arange(2, dtype=ratten.int32)) == "tensor([0, 1], dtype=ratten.int32)"


@requires_torch
def test_repr_matches_torch():
    for data in ([1.5, -2.25, 3.0], [[1, 2], [3, 4]], [1e-5, 1e5], [True]):
        assert repr(ratten.tensor(data)) == repr(torch.tensor(data)).replace("torch.", "ratten.")


# ---- metadata, views, indexing ----------------------------------------------------------------


def test_metadata():
    t = ratten.zeros(2, 3, 4)
    assert t.shape == (2, 3, 4) and t.size() == (2, 3, 4) and t.size(1) == 3 and t.size(-1) == 4
    assert t.stride() == (12, 4, 1) and t.stride(0) == 12
    assert t.dim() == 3 and t.ndim == 3 and t.numel() == 24
    assert t.element_size() == 4 and t.is_contiguous() and t.is_floating_point()
    assert len(t) == 2
    with pytest.raises(IndexError, match=r"Dimension out of range \(expected to be in range of \[-3, 2\], but got 3\)"):
        t.size(3)
    with pytest.raises(TypeError, match="len\\(\\) of a 0-d tensor"):
        len(ratten.tensor(1.0))


def test_views_share_memory_and_match_numpy():
    a = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    t = ratten.arange(24, dtype=ratten.float32).view(2, 3, 4)
    cases = [
        (lambda x: x.transpose(0, 2), lambda y: y.transpose(2, 1, 0)),
        (lambda x: x.permute(2, 0, 1), lambda y: y.transpose(2, 0, 1)),
        (lambda x: x.view(6, 4), lambda y: y.reshape(6, 4)),
        (lambda x: x.view(-1), lambda y: y.reshape(-1)),
        (lambda x: x.reshape(4, -1), lambda y: y.reshape(4, -1)),
        (lambda x: x.unsqueeze(1), lambda y: y[:, None]),
        (lambda x: x.narrow(2, 1, 2), lambda y: y[:, :, 1:3]),
        (lambda x: x.select(1, 2), lambda y: y[:, 2]),
        (lambda x: x.flatten(), lambda y: y.reshape(-1)),
        (lambda x: x.flatten(1), lambda y: y.reshape(2, 12)),
        (lambda x: x[0].t(), lambda y: y[0].T),
        (lambda x: x.T, lambda y: y.T),
        (lambda x: x[:, :1].expand(2, 5, 4), lambda y: np.broadcast_to(y[:, :1], (2, 5, 4))),
        (lambda x: x.unsqueeze(0).squeeze(), lambda y: y),
        (lambda x: x.unsqueeze(0).squeeze(0), lambda y: y),
    ]
    for f, g in cases:
        v = f(t)
        np.testing.assert_array_equal(v.numpy(), g(a))
        assert v._is_view_of(t)
    nc = t.transpose(0, 1)
    assert not nc.is_contiguous()
    c = nc.contiguous()
    assert c.is_contiguous() and not c._is_view_of(t)
    np.testing.assert_array_equal(c.numpy(), a.transpose(1, 0, 2))
    assert t.contiguous() is t
    with pytest.raises(RuntimeError, match="view size is not compatible"):
        nc.view(-1)
    with pytest.raises(RuntimeError, match=r"shape '\[5, 5\]' is invalid for input of size 24"):
        t.view(5, 5)


def test_indexing_matches_numpy():
    a = np.arange(60).reshape(3, 4, 5)
    t = ratten.arange(60).view(3, 4, 5)
    for idx in [
        0,
        -1,
        (1, 2),
        (1, 2, 3),
        slice(1, None),
        (slice(None), 1),
        (Ellipsis, 2),
        (None, 1),
        (0, None, slice(None, None, 2)),
        (slice(None, None, 3), Ellipsis, None),
        (slice(-2, None), slice(1, 100)),
        (slice(10, 20),),
        Ellipsis,
        (1, Ellipsis, 1),
    ]:
        r = t[idx]
        assert r.shape == a[idx].shape, idx
        np.testing.assert_array_equal(r.numpy(), a[idx])
        assert r._is_view_of(t)
    assert t[1, 2, 3].item() == a[1, 2, 3]
    assert t[1, 2, 3].shape == ()


def test_indexing_errors_are_torchs():
    t = ratten.zeros(3, 4)
    with pytest.raises(IndexError, match="index 3 is out of bounds for dimension 0 with size 3"):
        t[3]
    with pytest.raises(IndexError, match="index -5 is out of bounds for dimension 1 with size 4"):
        t[0, -5]
    with pytest.raises(IndexError, match="too many indices for tensor of dimension 2"):
        t[0, 0, 0]
    with pytest.raises(ValueError, match="step must be greater than zero"):
        t[::-1]
    with pytest.raises(IndexError, match="invalid index of a 0-dim tensor"):
        ratten.tensor(1.0)[0]
    # torch tries a string as the data of an index tensor.
    with pytest.raises(TypeError, match="new\\(\\): invalid data type 'str'"):
        t["a"]


def test_setitem():
    t = ratten.zeros(3, 4)
    a = np.zeros((3, 4), dtype=np.float32)
    t[1] = 5
    a[1] = 5
    t[:, 2] = ratten.tensor([1.0, 2.0, 3.0])
    a[:, 2] = [1.0, 2.0, 3.0]
    t[0, 1:3] = ratten.tensor([7, 8])  # int64 source, converted
    a[0, 1:3] = [7, 8]
    t[2, ...] = ratten.tensor(9.5)  # broadcast
    a[2, ...] = 9.5
    np.testing.assert_array_equal(t.numpy(), a)


# ---- values: item, tolist, numpy ----------------------------------------------------------------


def test_item_and_python_numbers():
    assert ratten.tensor(3).item() == 3 and isinstance(ratten.tensor(3).item(), int)
    assert ratten.tensor(2.5).item() == 2.5
    assert ratten.tensor(True).item() is True
    assert ratten.tensor(1 + 2j).item() == 1 + 2j
    assert float(ratten.tensor([4.5])) == 4.5
    assert int(ratten.tensor(7.9)) == 7
    assert bool(ratten.tensor([1]))
    assert [10, 20, 30][ratten.tensor(1)] == 20
    with pytest.raises(RuntimeError, match="a Tensor with 2 elements cannot be converted to Scalar"):
        ratten.zeros(2).item()
    with pytest.raises(RuntimeError, match="Boolean value of Tensor with more than one value is ambiguous"):
        bool(ratten.zeros(2))


@pytest.mark.parametrize("name,np_dtype", ALL_DTYPES)
def test_tolist_and_numpy_roundtrip_all_dtypes(name, np_dtype):
    a = (np.arange(12).reshape(3, 4) % 3).astype(np_dtype)
    t = ratten.from_numpy(a)
    assert t.dtype is getattr(ratten, name)
    assert t.tolist() == a.tolist()
    back = t.numpy()
    assert back.dtype == a.dtype
    np.testing.assert_array_equal(back, a)
    assert ratten.tensor(a.tolist(), dtype=getattr(ratten, name)).tolist() == a.tolist()


def test_numpy_shares_memory_and_keeps_storage_alive():
    t = ratten.zeros(2, 3)
    a = t.numpy()
    a[0, 1] = 5.0
    assert t[0, 1].item() == 5.0
    t[1, 2] = 7.0
    assert a[1, 2] == 7.0
    v = t.transpose(0, 1).numpy()  # strided views share too
    assert v.strides == (4, 12)
    assert v[1, 0] == 5.0
    del t
    gc.collect()
    assert a[0, 1] == 5.0 and a.sum() == 12.0  # the array keeps the storage alive
    e = ratten.zeros(0, 3).numpy()
    assert e.shape == (0, 3)
    with pytest.raises(TypeError, match="Got unsupported ScalarType BFloat16"):
        ratten.zeros(2, dtype=ratten.bfloat16).numpy()
    assert np.asarray(ratten.ones(2)).tolist() == [1.0, 1.0]


def test_from_numpy_shares_aligned_memory():
    # numpy's own allocations are 16-byte aligned; carve a 64-byte-aligned array out of a buffer.
    buf = np.zeros(64 + 16, dtype=np.float64)
    off = (-buf.ctypes.data % 64) // 8
    a = buf[off : off + 12].reshape(3, 4)
    assert a.ctypes.data % 64 == 0
    t = ratten.from_numpy(a)
    a[1, 1] = 3.0
    assert t[1, 1].item() == 3.0
    t[2, 3] = -1.0
    assert a[2, 3] == -1.0
    del a, buf
    gc.collect()
    assert t[1, 1].item() == 3.0  # the tensor keeps the array alive
    # a strided (transposed) aligned array shares with its strides
    b = np.zeros(16, dtype=np.float32)
    if b.ctypes.data % 64 == 0:
        tb = ratten.from_numpy(b.reshape(4, 4).T)
        assert tb.stride() == (1, 4)


def test_from_numpy_shares_element_aligned_memory_and_errors():
    # Not 64-byte aligned, but aligned to its element size: shared, both ways.
    buf = np.zeros(20, dtype=np.float32)
    off = 1 if buf.ctypes.data % 64 == 0 else 0
    a = buf[off : off + 4]
    assert a.ctypes.data % 64 != 0
    t = ratten.from_numpy(a)
    a[0] = 9.0
    assert t[0].item() == 9.0
    t[3] = -2.0
    assert a[3] == -2.0
    # A byte-offset view that breaks element alignment is copied.
    raw = np.zeros(40, dtype=np.uint8)
    odd = raw[1:33].view(np.float64) if raw[1:33].ctypes.data % 8 != 0 else None
    if odd is not None:
        c = ratten.from_numpy(odd)
        odd[0] = 5.0
        assert c[0].item() == 0.0  # copied
    with pytest.raises(TypeError, match="can't convert np.ndarray of type"):
        ratten.from_numpy(np.array(["a"]))
    with pytest.raises(ValueError, match="negative"):
        ratten.from_numpy(np.arange(4.0)[::-1])
    with pytest.raises(TypeError, match="expected np.ndarray"):
        ratten.from_numpy([1, 2])


def test_gil_released_around_kernels():
    # Several threads filling big tensors at once: each fill runs without the GIL.
    ts = [ratten.empty(1 << 20) for _ in range(4)]
    errors = []

    def work(t, v):
        try:
            for _ in range(5):
                t.fill_(v)
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=work, args=(t, i)) for i, t in enumerate(ts)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert not errors
    for i, t in enumerate(ts):
        assert t[12345].item() == i


def test_clone_fill_zero():
    t = ratten.arange(6, dtype=ratten.float32).view(2, 3).t()
    c = t.clone()
    assert not c._is_view_of(t)
    np.testing.assert_array_equal(c.numpy(), t.numpy())
    assert t.fill_(2) is t
    assert t.tolist() == [[2.0, 2.0], [2.0, 2.0], [2.0, 2.0]]
    t.zero_()
    assert t.numpy().sum() == 0
    # torch 2.15: RuntimeError "value cannot be converted to type uint8_t without overflow".
    with pytest.raises(RuntimeError, match="uint8_t without overflow"):
        ratten.zeros(2, dtype=ratten.uint8).fill_(300)


# ---- operators (through the dispatcher; skipped while an operator is not registered) ---------


def has(op):
    return ratten._C._has_op(op)


BINARY = [
    ("add", lambda x, y: x + y),
    ("sub", lambda x, y: x - y),
    ("mul", lambda x, y: x * y),
    ("div", lambda x, y: x / y),
]


@pytest.mark.parametrize("op,f", BINARY)
def test_binary_operators_match_numpy(op, f):
    if not has(op):
        pytest.skip(f"aten::{op} is not registered in this build")
    a = np.array([[1.5, -2.0, 3.0], [4.0, 5.5, -6.0]], dtype=np.float32)
    b = np.array([2.0, -1.0, 0.5], dtype=np.float32)
    ta, tb = ratten.from_numpy(a.copy()), ratten.from_numpy(b.copy())
    r = f(ta, tb)
    assert r.dtype is ratten.float32
    np.testing.assert_allclose(r.numpy(), f(a, b), rtol=1e-6)
    # Python numbers are wrapped numbers: they do not promote a float32 tensor.
    np.testing.assert_allclose(f(ta, 2).numpy(), f(a, np.float32(2)), rtol=1e-6)
    np.testing.assert_allclose(f(3, ta).numpy(), f(np.float32(3), a), rtol=1e-6)
    assert f(ta, 2.5).dtype is ratten.float32
    # and the function form with keyword arguments
    np.testing.assert_allclose(getattr(ratten, op)(ta, tb).numpy(), f(a, b), rtol=1e-6)


def test_add_alpha_out_and_inplace():
    if not has("add"):
        pytest.skip("aten::add is not registered in this build")
    a = ratten.tensor([1.0, 2.0])
    b = ratten.tensor([10.0, 20.0])
    assert ratten.add(a, b, alpha=2).tolist() == [21.0, 42.0]
    out = ratten.empty(2)
    r = ratten.add(a, b, out=out)
    assert r is out and out.tolist() == [11.0, 22.0]
    assert a.add(b).tolist() == [11.0, 22.0]
    ai = ratten.tensor([1, 2])
    assert (ratten.tensor([1, 2]) + 1.5).dtype is ratten.float32  # int tensor + float number
    assert (ai + ai).dtype is ratten.int64
    c = a
    c += b
    assert c is a and a.tolist() == [11.0, 22.0]
    with pytest.raises(TypeError) as e:
        ratten.add(a, "x")
    assert str(e.value).startswith("add(): argument 'other' (position 2) must be Tensor, not str") or str(
        e.value
    ).startswith("add() received an invalid combination of arguments - got (Tensor, str)")


def test_operators_return_notimplemented_on_type_mismatch():
    t = ratten.zeros(2)
    with pytest.raises(TypeError):
        "a" + t  # str.__add__ raises itself
    for f in (
        lambda: t + "a",
        lambda: t + b"x",
        lambda: t - None,
        lambda: t * {},
        lambda: t & "x",
        lambda: t | object(),
        lambda: t ^ {},
    ):
        with pytest.raises(TypeError, match="unsupported operand type"):
            f()
    assert (t == None) is False  # noqa: E711 - NotImplemented falls back to identity
    assert (t != "a") is True


def test_comparisons_and_unary_match_numpy():
    needed = ["eq", "lt", "neg", "abs"]
    missing = [op for op in needed if not has(op)]
    if missing:
        pytest.skip(f"not registered in this build: {missing}")
    a = np.array([1.0, -2.0, 3.0], dtype=np.float32)
    t = ratten.from_numpy(a.copy())
    np.testing.assert_array_equal((t == 3).numpy(), a == 3)
    np.testing.assert_array_equal((t < 0).numpy(), a < 0)
    assert (t < 0).dtype is ratten.bool
    np.testing.assert_array_equal((-t).numpy(), -a)
    np.testing.assert_array_equal(abs(t).numpy(), np.abs(a))


def test_size_is_a_tuple_printing_as_torch_size():
    x = ratten.zeros(2, 3, 4)
    s = x.shape
    assert isinstance(s, tuple) and isinstance(s, ratten.Size)
    assert s == (2, 3, 4) and x.size() == s
    assert repr(s) == "ratten.Size([2, 3, 4])" and str(s) == repr(s)
    assert isinstance(s[1:], ratten.Size) and s[1:] == (3, 4)
    assert s[0] == 2 and s.numel() == 24
    assert repr(ratten.zeros(()).shape) == "ratten.Size([])"


def test_type_names_and_conversions():
    x = ratten.zeros(2)
    assert x.type() == "torch.FloatTensor"
    assert ratten.zeros(2, dtype=ratten.int64).type() == "torch.LongTensor"
    assert x.type(ratten.float64).dtype == ratten.float64
    assert x.type("torch.IntTensor").dtype == ratten.int32
    assert x.type(ratten.float32) is x
    with pytest.raises(ValueError):
        x.type("torch.NoSuchTensor")
