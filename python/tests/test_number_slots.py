"""The C-level number slots of Tensor (`a + b`, `a += b`, ...; crates/ratten-py/src/python/slots.rs)
against pyo3's general slots they short-cut: same values, dtypes, objects and errors."""

import gc
import itertools
import operator
import sys
import weakref

import numpy as np
import pytest

import ratten
from conftest import HAVE_TORCH, requires_torch

if HAVE_TORCH:
    import torch


@pytest.fixture
def slots():
    """Yields a switch `use(flag)` between the fast slots and pyo3's; leaves the fast ones on."""
    yield ratten._C._set_fast_number_slots
    assert ratten._C._set_fast_number_slots(True)


def test_fast_slots_are_installed_by_default():
    # Installing returns True only when pyo3's object layout is the one the slots expect.
    assert ratten._C._set_fast_number_slots(True) is True


BINARY = [operator.add, operator.sub, operator.mul, operator.truediv]
INPLACE = [operator.iadd, operator.isub, operator.imul, operator.itruediv]


def operands():
    """Left/right operands: tensors of several dtypes and shapes, and Python numbers."""
    tensors = [
        lambda: ratten.tensor([1.5, -2.0]),
        lambda: ratten.tensor([3], dtype=ratten.int64),
        lambda: ratten.tensor([[1], [2]], dtype=ratten.int32),
        lambda: ratten.tensor(2.0, dtype=ratten.float64),
        lambda: ratten.tensor([True, False]),
        lambda: ratten.tensor([1 + 2j], dtype=ratten.complex64),
        lambda: ratten.tensor([7], dtype=ratten.uint8),
    ]
    numbers = [2, -3, 2.5, True, False, 1j, 0]
    return tensors, numbers


def outcome(fn):
    """(dtype, shape, values) of the result, or (exception class, message). Values as their
    repr, so that NaN equals NaN."""
    try:
        r = fn()
    except Exception as e:  # noqa: BLE001 - the class and text are what is compared
        return ("raises", type(e), str(e))
    if not isinstance(r, ratten.Tensor):  # e.g. numpy's result for `ndarray * tensor`
        return ("other", type(r).__name__, repr(r))
    return ("ok", r.dtype, tuple(r.shape), repr(np.asarray(r.numpy()).tolist()))


def both(slots, fn):
    slots(True)
    fast = outcome(fn)
    slots(False)
    general = outcome(fn)
    slots(True)
    return fast, general


@pytest.mark.parametrize("op", BINARY, ids=lambda o: o.__name__)
def test_binary_matches_general_path(slots, op):
    tensors, numbers = operands()
    pairs = [(a, b) for a in tensors for b in tensors]
    pairs += [(a, lambda n=n: n) for a in tensors for n in numbers]
    pairs += [(lambda n=n: n, b) for n in numbers for b in tensors]
    for left, right in pairs:
        fast, general = both(slots, lambda: op(left(), right()))
        assert fast == general, (op, left(), right())


@pytest.mark.parametrize("op", INPLACE, ids=lambda o: o.__name__)
def test_inplace_matches_general_path(slots, op):
    tensors, numbers = operands()
    rights = tensors + [lambda n=n: n for n in numbers]
    for left, right in itertools.product(tensors, rights):

        def run():
            a = left()
            before = a
            r = op(a, right())
            assert r is before  # the same object, not a new wrapper
            return r

        fast, general = both(slots, run)
        assert fast == general, (op, left(), right())


def test_errors_are_torchs_classes_and_texts(slots):
    cases = [
        lambda: ratten.ones(2) + ratten.ones(3),  # shapes do not broadcast
        lambda: ratten.tensor([True]) - ratten.tensor([True]),  # bool subtraction
        lambda: operator.iadd(ratten.ones(2, dtype=ratten.int64), 1.5),  # float into int
        lambda: operator.iadd(ratten.ones(1), ratten.ones(2)),  # in-place cannot broadcast out
        lambda: ratten.ones(1) + 2**70,  # beyond int64
        lambda: ratten.ones(1) + "a",  # not a number
        lambda: "a" + ratten.ones(1),
        lambda: operator.iadd(ratten.ones(1), "a"),
    ]
    for case in cases:
        fast, general = both(slots, case)
        assert fast[0] == "raises", fast
        assert fast == general


def test_other_operands_take_the_general_path(slots):
    a = ratten.tensor([1.0, 2.0])

    class MyFloat(float):
        pass

    for other in [np.float64(2.0), np.int32(3), MyFloat(1.5), np.ones(2)]:
        fast, general = both(slots, lambda: a + other)
        assert fast == general, other
        fast, general = both(slots, lambda: other * a)
        assert fast == general, other


def test_large_tensors_release_the_gil_and_match(slots):
    n = ratten._C.GIL_RELEASE_NUMEL
    fast, general = both(slots, lambda: ratten.ones(n) + ratten.ones(n))
    assert fast == general
    fast, general = both(slots, lambda: ratten.ones(n) * 3)
    assert fast == general


def test_results_are_ordinary_tensor_objects():
    a, b = ratten.ones(1), ratten.full((1,), 2.0)
    r = a + b
    assert type(r) is ratten.Tensor
    assert sys.getrefcount(r) == 2  # `r` and the call's argument
    w = weakref.ref(r)
    assert w() is r
    del r
    gc.collect()
    assert w() is None
    # The wrapped number a Python scalar becomes is not the result and not shared with it.
    c = a + 1.0
    d = a + 1.0
    assert c is not d
    c.add_(1.0)
    assert d.item() == 2.0 and c.item() == 3.0


def test_results_survive_their_operands():
    a = ratten.tensor([1.0, 2.0])
    r = a * 2
    del a
    gc.collect()
    assert r.tolist() == [2.0, 4.0]


@requires_torch
def test_fast_slots_match_torch():
    tensors, numbers = operands()
    mismatches = []
    for op in BINARY:
        for left, n in itertools.product(tensors, numbers):
            r = outcome(lambda: op(left(), n))
            a = torch.from_numpy(np.asarray(left().numpy()))
            try:
                t = op(a, n)
                expected = ("ok", str(t.dtype).replace("torch.", ""), tuple(t.shape), repr(t.numpy().tolist()))
            except Exception as e:  # noqa: BLE001
                expected = ("raises", type(e).__name__, str(e))
            if r[0] == "raises":
                got = ("raises", r[1].__name__, r[2])
            else:
                got = ("ok", str(r[1]).replace("ratten.", ""), r[2], r[3])
            if got != expected:
                mismatches.append((op.__name__, repr(left()), n, got, expected))
    assert mismatches == []


def test_freed_objects_are_reused_clean():
    a, b = ratten.ones(1), ratten.ones(1)
    called = []
    results = [a + b for _ in range(200)]  # more than the free list holds
    refs = [weakref.ref(r, lambda _: called.append(1)) for r in results[::10]]
    del results
    assert len(called) == len(refs) and all(w() is None for w in refs)
    for _ in range(100):
        r = a + b
        assert weakref.getweakrefcount(r) == 0
        assert r.tolist() == [2.0]
    del r
    # Each instance holds a reference to its type, released when it is freed (measured after a
    # first call of each op, which may create lasting objects).
    a * 2.0
    before = sys.getrefcount(ratten.Tensor)
    for _ in range(1000):
        a + b
        a * 2.0
    after = sys.getrefcount(ratten.Tensor)  # not inside the assert: pytest's rewrite holds refs
    assert after == before


def test_generated_function_vectorcall_matches_tp_call():
    # `ratten.add(...)` goes through the vectorcall entry; `ratten.add.__call__(...)` through
    # pyo3's tp_call, the general path.
    a, b = ratten.tensor([1.0, 2.0]), ratten.tensor([3], dtype=ratten.int64)
    for fn in (ratten.add, ratten.sub, ratten.mul, ratten.div, ratten.maximum):
        cases = [
            ((a, b), {}),
            ((a, 2), {}),
            ((b, 2.5), {}),
            ((a, b), {"out": None}),
            ((a, b), {"alpha": 2}) if fn in (ratten.add, ratten.sub) else ((a, b), {}),
            ((), {"input": a, "other": b}),
            ((a,), {"other": b}),
            ((a,), {}),  # missing argument: torch's TypeError
            ((a, "x"), {}),
            ((2.0, a), {}),
        ]
        for args, kwargs in cases:
            fast = outcome(lambda: fn(*args, **kwargs))
            general = outcome(lambda: fn.__call__(*args, **kwargs))
            assert fast == general, (fn, args, kwargs)


def test_generated_function_vectorcall_out():
    a, b = ratten.tensor([1.0, 2.0]), ratten.tensor([3.0, 4.0])
    c = ratten.empty(2)
    r = ratten.add(a, b, out=c)
    assert r is c and c.tolist() == [4.0, 6.0]
    r = ratten.mul(a, 3, out=c)
    assert r is c and c.tolist() == [3.0, 6.0]
    i = ratten.empty(2, dtype=ratten.int64)
    fast = outcome(lambda: ratten.add(a, b, out=i))  # float result into an int out: error
    general = outcome(lambda: ratten.add.__call__(a, b, out=i))
    assert fast[0] == "raises" and fast == general
    with pytest.raises(TypeError):
        ratten.add(a, b, out=[1.0, 2.0])


def test_generated_function_vectorcall_tensor_errors():
    # All-tensor calls take the shortest path (callables.rs, `tensors_call`): its errors are the
    # general path's.
    a, b = ratten.ones(2), ratten.ones(3)
    c, i = ratten.empty(2), ratten.empty(2, dtype=ratten.int64)
    for fn in (ratten.add, ratten.sub, ratten.mul, ratten.div):
        for args, kwargs in [((a, b), {}), ((a, b), {"out": c}), ((a, a), {"out": i})]:
            fast = outcome(lambda: fn(*args, **kwargs))
            general = outcome(lambda: fn.__call__(*args, **kwargs))
            assert fast[0] == "raises" and fast == general, (fn, args, kwargs)


def test_arith_vectorcall_entries_per_operator():
    # add/sub/mul/div each have a vectorcall entry of their own (callables.rs, `arith_vectorcall`),
    # which compares the keyword name with the interned "out" by pointer: a name made at run
    # time (not interned), other keywords and extra arguments take the general entry.
    a, b = ratten.tensor([6.0, 8.0]), ratten.tensor([2.0, 4.0])
    expect = {"add": [8.0, 12.0], "sub": [4.0, 4.0], "mul": [12.0, 32.0], "div": [3.0, 2.0]}
    out_name = "".join(["o", "u", "t"])
    for name, values in expect.items():
        fn = getattr(ratten, name)
        assert fn(a, b).tolist() == values, name
        c = ratten.empty(2)
        assert fn(a, b, out=c) is c and c.tolist() == values, name
        d = ratten.empty(2)
        assert fn(a, b, **{out_name: d}) is d and d.tolist() == values, name
        for args, kwargs in [((a, b, d), {}), ((a, b), {"out": d, "other": b}), ((a, b), {"outt": d})]:
            fast = outcome(lambda: fn(*args, **kwargs))
            general = outcome(lambda: fn.__call__(*args, **kwargs))
            assert fast[0] == "raises" and fast == general, (name, args, kwargs)
    c = ratten.empty(2)
    assert ratten.add(a, b, alpha=2, out=c) is c and c.tolist() == [10.0, 16.0]


def test_gil_decision_follows_metadata_changes():
    # The fast paths keep a tensor's metadata snapshot to read its element count; once the
    # tensor is resized (here by out=) the count is the new one.
    n = ratten._C.GIL_RELEASE_NUMEL
    c = ratten.empty(0)
    assert (c + c).tolist() == []
    assert ratten._C._gil_numel(c) == 0
    big = ratten.ones(n)
    assert ratten.add(big, big, out=c) is c
    assert ratten._C._gil_numel(c) == n
    r = c + c
    assert r.shape == (n,) and r[n - 1].item() == 4.0
    small = ratten.ones(3)
    small + small
    assert ratten._C._gil_numel(small) == 3
    # A view of a large storage: its own element count.
    v = big[:2]
    assert ratten._C._gil_numel(v) == 2 and (v + v).tolist() == [2.0, 2.0]


def test_fast_slots_from_many_threads():
    # The free list is shared and guarded by the GIL; threads switch between any two bytecodes.
    import threading

    errors = []

    def work(k):
        a = ratten.full((1,), float(k))
        keep = []
        for i in range(5000):
            r = a + 1.0
            if i % 7 == 0:
                keep.append(r)
            if len(keep) > 50:
                keep.clear()
            if r.item() != k + 1.0:
                errors.append((k, r.item()))

    threads = [threading.Thread(target=work, args=(k,)) for k in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
