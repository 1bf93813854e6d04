"""Tensor methods generated from the declarations (`t.add(u)`), called every way Python can:
bound (`t.add(u)`, through the vectorcall entries of crates/ratten-py/src/python/callables.rs),
through a kept bound method (`m = t.add; m(u)`), and unbound through the method descriptor
(`Tensor.add(t, u)`), with positional and keyword arguments; against numpy and, when
installed, torch."""

import numpy as np
import pytest

import ratten
from conftest import HAVE_TORCH, requires_torch

if HAVE_TORCH:
    import torch

T = ratten.Tensor


def calls(name, *args, **kwargs):
    """The results of the three call forms of method `name` on `args[0]`."""
    t, rest = args[0], args[1:]
    bound = getattr(t, name)
    return [
        getattr(t, name)(*rest, **kwargs),
        bound(*rest, **kwargs),
        getattr(T, name)(t, *rest, **kwargs),
    ]


CASES = [
    ("add", (lambda: ratten.tensor([1.5, 2.0]), lambda: ratten.tensor([0.25, -1.0])), {}),
    ("add", (lambda: ratten.tensor([1.5, 2.0]), lambda: ratten.tensor([0.25, -1.0])), {"alpha": 2}),
    ("add", (lambda: ratten.tensor([1, 2]), lambda: 3), {}),
    ("sub", (lambda: ratten.tensor([1, 2]), lambda: ratten.tensor([5, 7])), {}),
    ("mul", (lambda: ratten.tensor([1.5, 2.0]), lambda: 2.5), {}),
    ("div", (lambda: ratten.tensor([1, 2]), lambda: ratten.tensor([2, 4])), {}),
    ("div", (lambda: ratten.tensor([7, -7]), lambda: ratten.tensor([2, 2])), {"rounding_mode": "floor"}),
    ("neg", (lambda: ratten.tensor([1.0, -2.0]),), {}),
    ("clamp", (lambda: ratten.tensor([-3.0, 0.5, 9.0]),), {"min": -1.0, "max": 1.0}),
    ("pow", (lambda: ratten.tensor([2, 3]), lambda: 2), {}),
]


@pytest.mark.parametrize("name,makers,kwargs", CASES)
def test_call_forms_agree(name, makers, kwargs):
    results = calls(name, *[m() for m in makers], **kwargs)
    first = results[0]
    for r in results[1:]:
        assert r.dtype == first.dtype
        assert r.tolist() == first.tolist()


@requires_torch
@pytest.mark.parametrize("name,makers,kwargs", CASES)
def test_methods_match_torch(name, makers, kwargs):
    args = [m() for m in makers]
    ours = getattr(args[0], name)(*args[1:], **kwargs)
    targs = [torch.tensor(a.tolist(), dtype=getattr(torch, str(a.dtype).split(".")[1]))
             if isinstance(a, ratten.Tensor) else a for a in args]
    theirs = getattr(targs[0], name)(*targs[1:], **kwargs)
    assert str(ours.dtype).split(".")[1] == str(theirs.dtype).split(".")[1]
    np.testing.assert_allclose(np.array(ours.tolist()), np.array(theirs.tolist()))


def test_fast_method_path_matches_function():
    a = ratten.tensor([1.0, 2.0, 3.0])
    b = ratten.tensor([0.5, 0.5, 0.5])
    for name in ("add", "sub", "mul", "div"):
        assert getattr(a, name)(b).tolist() == getattr(ratten, name)(a, b).tolist()
        assert getattr(a, name)(2).tolist() == getattr(ratten, name)(a, 2).tolist()
    # A result is a new tensor; the inputs are unchanged.
    c = a.add(b)
    assert c is not a and a.tolist() == [1.0, 2.0, 3.0]


def test_in_place_method_returns_self():
    a = ratten.tensor([1.0, 2.0])
    r = a.add_(ratten.tensor([1.0, 1.0]))
    assert r is a or r.data_ptr() == a.data_ptr()
    assert a.tolist() == [2.0, 3.0]


def test_unbound_call_errors():
    b = ratten.tensor([1.0])
    with pytest.raises(TypeError, match="descriptor 'add' for 'Tensor' objects doesn't apply to a 'int' object"):
        T.add(1, b)
    with pytest.raises(TypeError, match=r"unbound method Tensor.add\(\) needs an argument"):
        T.add()


def test_wrong_arguments_list_signatures():
    a = ratten.tensor([1.0])
    for f in (a.add, T.add.__get__(a, T)):
        with pytest.raises(TypeError, match="add"):
            f("x")
    with pytest.raises(TypeError):
        a.add(a, bogus=1)


def test_errors_from_kernels_keep_their_class():
    a = ratten.tensor([True])
    with pytest.raises(NotImplementedError):
        a.sub(a)
    with pytest.raises(RuntimeError):
        ratten.tensor([1, 2]).add(ratten.tensor([1, 2, 3]))
