"""The Python boundary under hostile input: nested data that is too deep, holds itself or
lies about itself; thread counts; numpy, DLPack and pickling without copies; torch's error
classes. Cases that could kill the interpreter run in a subprocess, so a crash is a test
failure rather than a dead pytest. The differential parts skip without torch."""

import copy
import pickle
import random
import subprocess
import sys
import textwrap
import threading
import warnings

import numpy as np
import pytest

import ratten
from conftest import HAVE_TORCH, requires_torch


def run_isolated(code, timeout=120):
    """Runs `code` in a fresh interpreter; returns its stdout (a crash or a hang fails)."""
    r = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        capture_output=True,
        text=True,
        timeout=timeout,
    )
    assert r.returncode == 0, f"rc {r.returncode}\n{r.stdout}\n{r.stderr}"
    return r.stdout


def raises(exc, text, f):
    with pytest.raises(exc) as e:
        f()
    assert str(e.value) == text
    return e


# ---- nested data --------------------------------------------------------------------------


def nested(depth, leaf=1, kind=list):
    x = leaf
    for _ in range(depth):
        x = kind([x])
    return x


def test_deep_nesting_is_torchs_value_error():
    assert ratten.tensor(nested(128)).dim() == 128
    raises(ValueError, "too many dimensions 'list'", lambda: ratten.tensor(nested(129)))
    raises(ValueError, "too many dimensions 'tuple'", lambda: ratten.tensor(nested(200, kind=tuple)))


def test_the_crashing_inputs_raise_in_a_fresh_interpreter():
    out = run_isolated(
        """
        import ratten
        x = 1
        for i in range(100000):
            x = [x]
        try:
            ratten.tensor(x)
        except ValueError as e:
            print("deep", e)
        l = []
        l.append(l)
        try:
            ratten.tensor(l)
        except ValueError as e:
            print("self", e)
        t = (1,)
        for i in range(100000):
            t = (t,)
        try:
            ratten.as_tensor(t)
        except ValueError as e:
            print("tuple", e)
        """
    )
    assert out.splitlines() == [
        "deep too many dimensions 'list'",
        "self too many dimensions 'list'",
        "tuple too many dimensions 'tuple'",
    ]


def test_self_references():
    l = [1]
    l.append(l)
    raises(TypeError, "new(): self-referential lists are incompatible", lambda: ratten.tensor(l))
    l = [[1, 2]]
    l.append(l)
    raises(TypeError, "new(): self-referential lists are incompatible", lambda: ratten.tensor(l))
    # torch itself crashes on this one.
    l = [[1]]
    l[0].append(l)
    with pytest.raises(TypeError):
        ratten.tensor(l)


class LyingLength:
    def __len__(self):
        return 3

    def __getitem__(self, i):
        if i < 2:
            return i
        raise IndexError(i)


class ReturnsItself:
    def __len__(self):
        return 2

    def __getitem__(self, i):
        return self


class NegativeLength:
    def __len__(self):
        return -1

    def __getitem__(self, i):
        return 1


class RaisingLength:
    def __len__(self):
        raise RuntimeError("boom")

    def __getitem__(self, i):
        return 1


class ArraySelf:
    def __array__(self, dtype=None, copy=None):
        return self


class ShrinkingList(list):
    """A list whose `__len__` changes on every call (a list's real length is read)."""

    calls = 0

    def __len__(self):
        ShrinkingList.calls += 1
        return 2 if ShrinkingList.calls == 1 else 1


def test_objects_that_lie():
    with pytest.raises(IndexError):
        ratten.tensor(LyingLength())
    with pytest.raises(IndexError):
        ratten.tensor([LyingLength()])
    raises(ValueError, "too many dimensions 'ReturnsItself'", lambda: ratten.tensor(ReturnsItself()))
    raises(ValueError, "__len__() should return >= 0", lambda: ratten.tensor(NegativeLength()))
    raises(RuntimeError, "boom", lambda: ratten.tensor(RaisingLength()))
    raises(RuntimeError, "Could not infer dtype of ArraySelf", lambda: ratten.tensor(ArraySelf()))
    assert ratten.tensor(range(3)).tolist() == [0, 1, 2]
    assert ratten.tensor([range(2), (5, 6)]).tolist() == [[0, 1], [5, 6]]
    assert ratten.tensor(bytearray(b"ab")).tolist() == [97, 98]


def test_mixed_and_ragged_data_as_torch():
    raises(ValueError, "expected sequence of length 2 at dim 1 (got 1)", lambda: ratten.tensor([[1, 2], [3]]))
    raises(TypeError, "not a sequence", lambda: ratten.tensor([[1, 2], 3]))
    raises(TypeError, "'list' object cannot be interpreted as an integer", lambda: ratten.tensor([1, [2, 3]]))
    raises(TypeError, "new(): invalid data type 'str'", lambda: ratten.tensor([1, "a"]))
    raises(TypeError, "new(): invalid data type 'str'", lambda: ratten.tensor("a"))
    raises(TypeError, "new(): invalid data type 'bytes'", lambda: ratten.tensor(b"ab"))
    raises(ValueError, "too many dimensions 'str'", lambda: ratten.tensor(["a"]))
    raises(RuntimeError, "Could not infer dtype of NoneType", lambda: ratten.tensor([None]))
    raises(RuntimeError, "Could not infer dtype of set", lambda: ratten.tensor({1, 2}))
    raises(RuntimeError, "Could not infer dtype of dict", lambda: ratten.tensor({1: 2}))
    assert ratten.tensor([[], []]).shape == (2, 0)
    # No elements: torch reads nothing past the sizes.
    assert ratten.tensor([[], [1]]).shape == (2, 0)
    assert ratten.tensor([[], 1]).shape == (2, 0)
    assert ratten.tensor(ShrinkingList([1, 2])).tolist() == [1, 2]


def test_tensors_and_numpy_inside_data():
    assert ratten.tensor([ratten.tensor(1), ratten.tensor(2.5)]).tolist() == [1.0, 2.5]
    assert ratten.tensor([ratten.tensor([1])]).tolist() == [1]
    raises(
        TypeError,
        "only integer tensors of a single element can be converted to an index",
        lambda: ratten.tensor([ratten.tensor([1, 2]), ratten.tensor([3, 4])]),
    )
    t = ratten.tensor([np.float32(1.5), np.int64(3)])
    assert t.dtype == ratten.float32 and t.tolist() == [1.5, 3.0]
    assert ratten.tensor([np.int64(5)]).dtype == ratten.int64
    assert ratten.tensor([np.bool_(True)]).dtype == ratten.bool
    assert ratten.tensor([[np.array([1, 2])], [np.array([3, 4])]]).tolist() == [[[1, 2]], [[3, 4]]]
    raises(TypeError, "len() of unsized object", lambda: ratten.tensor([np.array(1.5), np.array(3)]))


def test_numpy_object_arrays_are_refused():
    a = np.empty(1, dtype=object)
    a[0] = a
    for f in (ratten.tensor, ratten.as_tensor, ratten.from_numpy):
        with pytest.raises(TypeError, match="can't convert np.ndarray of type object"):
            f(a)
        with pytest.raises(TypeError, match="can't convert np.ndarray of type object"):
            f(np.array([1, 2.0, 3], dtype=object))


def test_big_ints_in_data():
    raises(ValueError, "Overflow when unpacking long long", lambda: ratten.tensor([2**63]))
    raises(ValueError, "Overflow when unpacking long long", lambda: ratten.tensor([[1, -(2**63) - 1]]))
    raises(ValueError, "Overflow when unpacking long long", lambda: ratten.tensor(2**70, dtype=ratten.int32))
    assert ratten.tensor([2**70, 1.0]).tolist() == [2.0**70, 1.0]
    assert ratten.tensor([2**63], dtype=ratten.float64).tolist() == [2.0**63]
    with pytest.raises(OverflowError):
        ratten.tensor([1.0, 10**400])


# A random nested structure: lists and tuples of ragged lengths, numbers of every kind,
# strings, None, tensors, numpy values and self-references, up to a depth beyond the limit.
GENERATOR = """
import random, sys
import numpy as np
import ratten

def leaf(r):
    return r.choice([
        lambda: r.randint(-5, 5), lambda: r.random(), lambda: complex(r.random(), 1),
        lambda: r.random() < 0.5, lambda: 2 ** r.choice([62, 63, 64, 70]), lambda: "s",
        lambda: None, lambda: ratten.tensor(r.random()), lambda: ratten.ones(2),
        lambda: np.float32(1.5), lambda: np.arange(2), lambda: np.array(3),
        lambda: float("nan"),
    ])()

def build(r, depth, parents, budget):
    # `budget` (a one-element list) bounds the nodes made, so deep structures stay small.
    budget[0] -= 1
    if depth == 0 or budget[0] <= 0 or r.random() < 0.15:
        return leaf(r)
    if parents and r.random() < 0.05:
        return r.choice(parents)
    n = r.choice([0, 1, 1, 2, 3])
    kind = r.choice([list, list, tuple])
    if kind is list:
        out = []
        for _ in range(n):
            out.append(build(r, depth - 1, parents + [out], budget))
        return out
    return tuple(build(r, depth - 1, parents, budget) for _ in range(n))

def uniform(r, depth):
    # Rectangular data (mostly tensors), sometimes with one element broken.
    n = r.choice([1, 2, 3])
    if depth == 0:
        return r.randint(0, 9)
    return [uniform(r, depth - 1) for _ in range(n)]

seed, count = int(sys.argv[1]), int(sys.argv[2])
tensors = errors = 0
for i in range(count):
    r = random.Random(seed * 100003 + i)
    if r.random() < 0.4:
        data = uniform(r, r.choice([1, 2, 3, 4]))
    elif r.random() < 0.1:
        data = 1
        for _ in range(r.choice([127, 128, 129, 5000])):
            data = [data]
    else:
        data = build(r, r.choice([1, 3, 6, 140]), [], [400])
    for f in (ratten.tensor, ratten.as_tensor):
        try:
            t = f(data)
            assert isinstance(t, ratten.Tensor)
            tensors += 1
        except (TypeError, ValueError, RuntimeError, IndexError, OverflowError):
            errors += 1
print(tensors, errors)
"""


@pytest.mark.parametrize("seed", [0, 1])
def test_random_nested_data_gives_a_tensor_or_an_exception(seed):
    r = subprocess.run(
        [sys.executable, "-c", GENERATOR, str(seed), "150"],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 0, f"rc {r.returncode}\n{r.stdout}\n{r.stderr}"
    tensors, errors = map(int, r.stdout.split())
    # Both outcomes happen (the generator makes valid and invalid data).
    assert tensors > 20 and errors > 20


@requires_torch
@pytest.mark.parametrize("seed", range(3))
def test_random_nested_data_matches_torchs_outcome(seed):
    import torch

    rng = random.Random(seed)

    def gen(depth):
        if depth == 0:
            return rng.choice([1, 2.5, True, 1j, 2**63, -(2**70), None, "a"])
        n = rng.choice([0, 1, 2, 2])
        return [gen(depth - 1 if rng.random() < 0.9 else 0) for _ in range(n)]

    for _ in range(60):
        data = gen(rng.choice([1, 2, 3]))
        try:
            expected = torch.tensor(data)
        except Exception:  # noqa: BLE001 (any error class torch raises)
            # Data with two faults (a string and a ragged level) may report either first:
            # torch infers the dtype over all the data before it checks the lengths, ratten
            # checks both in one walk.
            with pytest.raises((TypeError, ValueError, RuntimeError, OverflowError)):
                ratten.tensor(data)
            continue
        got = ratten.tensor(data)
        assert got.shape == tuple(expected.shape)
        assert str(got.dtype).split(".")[-1] == str(expected.dtype).split(".")[-1]
        assert got.tolist() == expected.tolist() or np.allclose(
            np.array(got.tolist()), np.array(expected.tolist()), equal_nan=True
        )


# ---- threads ------------------------------------------------------------------------------


def test_set_num_threads_validation():
    before = ratten.get_num_threads()
    raises(RuntimeError, "set_num_threads expects a positive integer", lambda: ratten.set_num_threads(0))
    raises(RuntimeError, "set_num_threads expects a positive integer", lambda: ratten.set_num_threads(-1))
    raises(RuntimeError, "set_num_threads expects an int, but got float", lambda: ratten.set_num_threads(1.5))
    raises(RuntimeError, "set_num_threads expects an int, but got bool", lambda: ratten.set_num_threads(True))
    raises(RuntimeError, "set_num_threads expects an int, but got str", lambda: ratten.set_num_threads("2"))
    raises(ValueError, "Overflow when unpacking long long", lambda: ratten.set_num_threads(2**70))
    with pytest.raises(RuntimeError, match="limit of 1024 intra-op threads"):
        ratten.set_num_threads(10**6)
    assert ratten.get_num_threads() == before
    ratten.set_num_threads(3)
    try:
        assert ratten.get_num_threads() == 3
        assert ratten.arange(100000).sum().item() == 99999 * 100000 // 2
    finally:
        ratten.set_num_threads(before)


def test_interop_threads_in_a_fresh_interpreter():
    out = run_isolated(
        """
        import ratten
        assert ratten.get_num_interop_threads() >= 1
        for bad in (0, -3):
            try:
                ratten.set_num_interop_threads(bad)
            except RuntimeError as e:
                print(e)
        ratten.set_num_interop_threads(3)
        print(ratten.get_num_interop_threads())
        try:
            ratten.set_num_interop_threads(4)
        except RuntimeError as e:
            print(e)
        """
    )
    assert out.splitlines() == [
        "set_num_interop_threads expects a positive integer",
        "set_num_interop_threads expects a positive integer",
        "3",
        "Error: cannot set number of interop threads after parallel work has started or "
        "set_num_interop_threads called",
    ]


def test_threads_writing_views_of_one_tensor():
    # Each writer owns one row (a view) and adds 1 to it `rounds` times; readers read the
    # whole tensor meanwhile. At the end every row holds exactly `rounds`.
    rows, rounds = 8, 200
    base = ratten.zeros(rows, 1000)
    views = [base[i] for i in range(rows)]
    errors = []

    def writer(v):
        try:
            for _ in range(rounds):
                v.add_(1)
        except Exception as e:  # noqa: BLE001
            errors.append(e)

    def reader():
        try:
            for _ in range(rounds):
                s = base.sum().item()
                assert 0 <= s <= rows * rounds * 1000
        except Exception as e:  # noqa: BLE001
            errors.append(e)

    threads = [threading.Thread(target=writer, args=(v,)) for v in views]
    threads += [threading.Thread(target=reader) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=120)
    assert not any(t.is_alive() for t in threads)
    assert not errors
    assert (base == rounds).all().item()


# ---- numpy --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    "dtype,offset",
    [(np.int16, 2), (np.float32, 4), (np.float64, 8), (np.complex128, 8), (np.complex64, 4), (np.bool_, 1)],
)
def test_from_numpy_shares_element_aligned_buffers(dtype, offset):
    raw = np.zeros(16 * 64 + 64, dtype=np.uint8)
    start = (-raw.ctypes.data) % 64 + offset  # 64-byte aligned plus `offset`
    itemsize = np.dtype(dtype).itemsize
    a = raw[start : start + 64 * itemsize].view(dtype)
    assert a.ctypes.data % 64 == offset
    t = ratten.from_numpy(a)
    if dtype is np.bool_:
        t.fill_(True)
        assert a.all()
        return
    t.add_(1)
    assert (a == 1).all()
    t.mul_(3)
    assert (a == 3).all()
    # Kernels read and write through the element-aligned pointer.
    assert ratten.as_tensor(a).sum().item() == 3 * 64
    a[5] = 7
    assert t[5].item() == 7


def test_from_numpy_large_unaligned_to_the_line():
    # Large enough for the streaming paths of the kernels.
    raw = np.zeros(4 * (1 << 20) + 64, dtype=np.uint8)
    start = (-raw.ctypes.data) % 64 + 4
    a = raw[start : start + 4 * ((1 << 20) - 16)].view(np.float32)
    t = ratten.from_numpy(a)
    t.add_(2)
    assert (a == 2).all()
    u = ratten.from_numpy(a[1:])
    u.copy_(ratten.ones(a.size - 1))
    assert a[0] == 2 and (a[1:] == 1).all()


def test_from_numpy_misaligned_is_copied_with_a_warning():
    a = np.zeros(17, dtype=np.uint8)[1:].view(np.float32)
    if a.ctypes.data % 4 == 0:
        pytest.skip("numpy allocated at an odd address")
    with pytest.warns(UserWarning, match="not aligned to its element size"):
        t = ratten.from_numpy(a)
    t.add_(1)
    assert (t == 1).all().item() and (a == 0).all()


def test_read_only_arrays_are_shared_with_torchs_warning():
    out = run_isolated(
        """
        import warnings
        import numpy as np
        import ratten
        a = np.arange(3.0)
        a.flags.writeable = False
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            t = ratten.from_numpy(a)
            u = ratten.as_tensor(a)
        print(len(w), str(w[0].message).startswith("The given NumPy array is not writable"))
        print(t.tolist(), u.tolist())
        with warnings.catch_warnings(record=True) as w:
            warnings.simplefilter("always")
            v = ratten.tensor(a)
        print(len(w))
        """
    )
    assert out.splitlines() == ["1 True", "[0.0, 1.0, 2.0] [0.0, 1.0, 2.0]", "0"]


def test_numpy_round_trips_share():
    t = ratten.arange(6.0)
    a = t.numpy()
    a[0] = 10
    assert t[0].item() == 10
    b = np.asarray(t)
    b[1] = 11
    assert t[1].item() == 11
    c = ratten.as_tensor(a)
    c[2] = 12
    assert a[2] == 12 and t[2].item() == 12
    assert ratten.tensor(a)._is_view_of(t) is False
    raises(
        ValueError,
        "given numpy array has byte order different from the native byte order. Conversion "
        "between byte orders is currently not supported.",
        lambda: ratten.from_numpy(np.zeros(3, dtype=">f4")),
    )
    with pytest.raises(ValueError, match="negative"):
        ratten.tensor(np.arange(3)[::-1])


# ---- DLPack -------------------------------------------------------------------------------


def test_dlpack_with_numpy_shares():
    t = ratten.arange(6.0).view(2, 3)
    assert t.__dlpack_device__() == (1, 0)
    a = np.from_dlpack(t)
    assert a.shape == (2, 3) and a.dtype == np.float32
    a[0, 0] = 42
    assert t[0, 0].item() == 42
    # A strided view keeps its strides.
    v = t.t()
    b = np.from_dlpack(v)
    assert b.strides == (4, 12) and b[1, 0] == t[0, 1].item()
    # numpy into ratten.
    n = np.arange(12, dtype=np.int64).reshape(3, 4)[:, 1:]
    r = ratten.from_dlpack(n)
    r.add_(100)
    assert n[0, 0] == 101 and r.stride() == (4, 1)
    assert ratten.from_dlpack(np.zeros((0, 3))).shape == (0, 3)
    # Both capsule versions, each consumed once.
    cap = t.__dlpack__()
    assert "dltensor" in repr(cap)
    s = ratten.from_dlpack(cap)
    s[1, 1] = -1
    assert t[1, 1].item() == -1
    with pytest.raises(BufferError):
        ratten.from_dlpack(cap)
    assert "dltensor_versioned" in repr(t.__dlpack__(max_version=(1, 0)))
    # An unconsumed capsule frees its export.
    del cap
    with pytest.raises(BufferError):
        t.__dlpack__(dl_device=(2, 0))
    with pytest.raises(TypeError):
        ratten.from_dlpack([1, 2])


def test_dlpack_copy_and_lifetime():
    t = ratten.ones(4)
    a = np.from_dlpack(t)
    del t
    assert a.sum() == 4  # the export keeps the storage alive
    n = np.arange(4.0)
    r = ratten.from_dlpack(n)
    del n
    assert r.sum().item() == 6.0
    c = ratten.ones(2)
    d = ratten.from_dlpack(c.__dlpack__(copy=True))
    d.add_(1)
    assert c.tolist() == [1.0, 1.0]


@requires_torch
def test_dlpack_with_torch_shares():
    import torch

    t = ratten.arange(6.0)
    pt = torch.from_dlpack(t)
    pt[0] = 7
    assert t[0].item() == 7
    src = torch.arange(8, dtype=torch.int32)[::2]
    r = ratten.from_dlpack(src)
    r.mul_(10)
    assert src.tolist() == [0, 20, 40, 60]
    assert r.stride() == (2,)


# ---- pickling -----------------------------------------------------------------------------


def test_pickle_keeps_views_sharing_one_storage():
    t = ratten.arange(6.0)
    v = t[1:4]
    w = t.view(2, 3)
    a, b, c = pickle.loads(pickle.dumps((t, v, w)))
    assert a.tolist() == t.tolist() and b.tolist() == v.tolist() and c.tolist() == w.tolist()
    assert b.storage_offset() == 1 and c.stride() == (3, 1)
    a[2] = 100
    assert b[1].item() == 100 and c[0, 2].item() == 100
    assert not a._is_view_of(t)
    # One view alone keeps the whole storage, as torch's does.
    x = pickle.loads(pickle.dumps(v))
    assert x.storage_offset() == 1 and x.untyped_storage().nbytes() == 24
    y = pickle.loads(pickle.dumps(ratten.ones(2, 3).t()))
    assert y.stride() == (1, 3)
    for dt in (ratten.bool, ratten.int8, ratten.float16, ratten.bfloat16, ratten.complex64):
        z = ratten.ones(3, dtype=dt)
        r = pickle.loads(pickle.dumps(z, protocol=2))
        assert r.dtype is dt and r.tolist() == z.tolist()
    m = pickle.loads(pickle.dumps(ratten.ones(2, 3, device="meta")))
    assert m.is_meta and m.shape == (2, 3)


def test_copy_and_deepcopy():
    t = ratten.arange(4.0)
    c = copy.copy(t)
    assert c is not t and c._is_view_of(t)
    v = t[1:]
    d = copy.deepcopy([v, t])
    d[1][1] = 55
    assert d[0][0].item() == 55 and t[1].item() == 1
    assert copy.deepcopy(ratten.int64) is ratten.int64
    assert pickle.loads(pickle.dumps(ratten.float32)) is ratten.float32
    assert copy.copy(ratten.device("cpu")) == ratten.device("cpu")
    dev = pickle.loads(pickle.dumps(ratten.device("cpu", 0)))
    assert str(dev) == "cpu:0"


def test_forged_pickles_cannot_reach_outside_the_storage():
    s = ratten.arange(4.0).untyped_storage()
    with pytest.raises(RuntimeError):
        ratten._C._rebuild_tensor(s, ratten.float32, 2, (4,), (1,))
    with pytest.raises(RuntimeError):
        ratten._C._rebuild_storage(b"abc", "cpu", 8)


# ---- torch's error classes ----------------------------------------------------------------


def test_tensor_data_out_of_range():
    # torch's store_scalar: float dtypes take out-of-range values as +-inf (C++ casts), the
    # integer ones are checked and named by their Python names.
    inf = float("inf")
    assert ratten.tensor([1e20, -1e20], dtype=ratten.float16).tolist() == [inf, -inf]
    assert ratten.tensor([1e300], dtype=ratten.float32).tolist() == [inf]
    assert ratten.tensor([1e300], dtype=ratten.bfloat16).tolist() == [inf]
    assert ratten.tensor([1e300], dtype=ratten.complex64).tolist() == [complex(inf, 0)]
    assert ratten.as_tensor([1e20], dtype=ratten.float16).tolist() == [inf]
    for dtype, value in [(ratten.int8, 300), (ratten.uint8, 300), (ratten.int16, 70000), (ratten.int32, 2**40)]:
        name = str(dtype).split(".")[-1]
        with pytest.raises(RuntimeError, match=f"value cannot be converted to type {name} without overflow"):
            ratten.tensor([value], dtype=dtype)
    assert ratten.tensor([-1], dtype=ratten.uint8).tolist() == [255]


def test_int_overflow_errors():
    t = ratten.ones(3)
    raises(OverflowError, "int too big to convert", lambda: t + 2**70)
    raises(OverflowError, "int too big to convert", lambda: t.add_(2**70))
    raises(OverflowError, "can't convert negative int to unsigned", lambda: t + (-(2**63) - 1))
    raises(OverflowError, "int too big to convert", lambda: ratten.full((2,), 2**70))
    raises(OverflowError, "int too big to convert", lambda: t.fill_(2**70))
    # 2**63 fits uint64, as in torch: the product is a float tensor, not an error.
    assert (t * 2**63).tolist() == [2.0**63] * 3
    raises(ValueError, "Overflow when unpacking long long", lambda: t[2**70])


def test_manual_seed_range():
    for bad in (2**64, 2**70, -(2**63) - 1):
        raises(ValueError, "Overflow when unpacking long long", lambda: ratten.manual_seed(bad))
    ratten.manual_seed(-1)
    assert ratten.initial_seed() == 2**64 - 1
    ratten.manual_seed(2**64 - 1)
    ratten.manual_seed(1.9)
    assert ratten.initial_seed() == 1
    g = ratten.Generator()
    raises(RuntimeError, "manual_seed expected a long, but got float", lambda: g.manual_seed(1.5))
    raises(ValueError, "Overflow when unpacking long long", lambda: g.manual_seed(2**70))
    assert g.manual_seed(-1).initial_seed() == 2**64 - 1


def test_uniform_bounds():
    t = ratten.ones(3)
    inf = float("inf")
    raises(RuntimeError, "from is out of bounds for float", lambda: t.uniform_(-inf, inf))
    raises(RuntimeError, "to is out of bounds for float", lambda: t.uniform_(0, inf))
    raises(RuntimeError, "from is out of bounds for float", lambda: t.uniform_(float("nan"), 1))
    raises(
        RuntimeError,
        "uniform_ expects to return a [from, to) range, but found from=2 > to=1",
        lambda: t.uniform_(2, 1),
    )
    assert t.tolist() == [1.0, 1.0, 1.0]


def test_iteration_and_item_deletion():
    raises(TypeError, "iteration over a 0-d tensor", lambda: list(ratten.tensor(1.0)))
    assert [x.item() for x in ratten.tensor([1, 2])] == [1, 2]
    rows = list(ratten.ones(2, 3))
    assert len(rows) == 2 and rows[0].shape == (3,)
    t = ratten.ones(3)
    raises(TypeError, "new(): invalid data type 'str'", lambda: t["a"])
    with pytest.raises(TypeError, match="Tensor does not support deleting items"):
        del t[0]
    raises(TypeError, "len() of a 0-d tensor", lambda: len(ratten.tensor(1)))


@requires_torch
def test_error_classes_match_torch():
    import torch

    cases = [
        lambda m: m.ones(3) + 2**70,
        lambda m: m.tensor([2**63]),
        lambda m: m.full((2,), 2**70),
        lambda m: m.manual_seed(2**70),
        lambda m: m.ones(3).uniform_(-float("inf"), float("inf")),
        lambda m: list(m.tensor(1.0)),
        lambda m: m.ones(3)["a"],
        lambda m: m.ones(3).__delitem__(0),
        lambda m: m.tensor([[1, 2], [3]]),
        lambda m: m.tensor(nested(129)),
        lambda m: m.set_num_threads(0),
        lambda m: m.set_num_threads(1.5),
    ]
    for case in cases:
        with pytest.raises(Exception) as expected:
            case(torch)
        with pytest.raises(Exception) as got:
            case(ratten)
        assert type(got.value) is type(expected.value), (got.value, expected.value)
        assert str(got.value).replace("ratten", "torch") == str(expected.value)
