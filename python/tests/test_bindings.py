"""The generated bindings (module functions and Tensor methods from native_functions.yaml),
the fast paths of the arithmetic operators, advanced indexing and numpy sharing; compared
with numpy, and with torch when it is installed."""

import gc

import numpy as np
import pytest

import ratten
from conftest import HAVE_TORCH, requires_torch

if HAVE_TORCH:
    import torch


# ---- generated bindings -----------------------------------------------------------------------


def test_functions_and_methods_are_generated():
    assert type(ratten.add).__name__ == "_GeneratedFunction"
    assert type(ratten.Tensor.__dict__["add_"]).__name__ == "_GeneratedMethod"
    assert ratten._C._generated_signatures("add") == [
        "add(Tensor input, Tensor other, *, Scalar alpha=1, Tensor out=None)"
    ]
    # methods have no self and no out
    assert ratten._C._generated_signatures("add_", method=True) == ["add_(Tensor other, *, Scalar alpha=1)"]
    assert ratten.add.signatures == ratten._C._generated_signatures("add")
    assert ratten.Tensor.add.signatures == ratten._C._generated_signatures("add", method=True)


def test_module_functions_are_plain_module_attributes():
    # No module `__getattr__`: CPython specializes `ratten.add` (a cached dict index) only for
    # modules without one. The dispatcher's other aten operators are installed at import.
    assert "__getattr__" not in vars(ratten)
    assert type(ratten).__name__ == "module"
    for name in ("add_", "mul_", "copy_", "to"):
        assert type(vars(ratten)[name]).__name__ == "_OpFunction", name
    a = ratten.tensor([1.0, 2.0])
    assert ratten.add_(a, ratten.tensor([10.0, 20.0])) is not None
    assert a.tolist() == [11.0, 22.0]
    with pytest.raises(AttributeError, match="module 'ratten' has no attribute 'no_such_op'"):
        ratten.no_such_op
    with pytest.raises(AttributeError):
        ratten.__no_such_dunder__


def test_out_alpha_and_wrapped_numbers():
    a = ratten.tensor([1.0, 2.0])
    b = ratten.tensor([3.0, 4.0])
    c = ratten.empty(2)
    r = ratten.add(a, b, alpha=2, out=c)
    assert r is c
    assert c.tolist() == [7.0, 10.0]
    assert ratten.add(a, 1).tolist() == [2.0, 3.0]
    # wrapped numbers are weaker than tensors: int tensor + float number -> default float
    i = ratten.tensor([1, 2])
    assert ratten.add(i, 0.5).dtype == ratten.float32
    assert ratten.add(i, 2).dtype == ratten.int64
    assert (i * 0.5).dtype == ratten.float32
    assert ratten.tensor([1], dtype=ratten.int8).add(300).dtype == ratten.int8
    x = ratten.tensor([1.0, 2.0])
    assert x.add_(b, alpha=0.5) is x
    assert x.tolist() == [2.5, 4.0]


def test_no_match_lists_signatures():
    a = ratten.tensor([1.0])
    with pytest.raises(TypeError, match=r"add\(\): argument 'other' \(position 2\) must be Tensor, not str"):
        ratten.add(a, "x")
    with pytest.raises(TypeError) as e:
        ratten.eq(a, "x")
    msg = str(e.value)
    assert msg.startswith("eq() received an invalid combination of arguments - got (Tensor, str), but expected one of:")
    assert " * (Tensor input, Tensor other, *, Tensor out = None)" in msg
    assert " * (Tensor input, Number other, *, Tensor out = None)" in msg
    with pytest.raises(TypeError, match="unexpected keyword argument 'beta'"):
        ratten.add(a, a, beta=1)


def test_div_rounding_mode_matches_numpy():
    a = np.array([7, -7, 5, -5], dtype=np.int64)
    b = np.array([2, 2, -3, -3], dtype=np.int64)
    ta, tb = ratten.tensor(a.tolist()), ratten.tensor(b.tolist())
    assert ratten.div(ta, tb, rounding_mode="floor").tolist() == np.floor_divide(a, b).tolist()
    assert ratten.div(ta, tb, rounding_mode="trunc").tolist() == np.trunc(a / b).astype(np.int64).tolist()
    assert ratten.div(ta, tb).tolist() == pytest.approx((a / b).tolist())


@requires_torch
def test_signatures_match_torch_text():
    with pytest.raises(TypeError) as r:
        ratten.eq(ratten.tensor([1.0]), "x")
    with pytest.raises(TypeError) as t:
        torch.eq(torch.tensor([1.0]), "x")
    norm = lambda s: s.replace("ratten", "torch")
    assert norm(str(r.value)).splitlines()[0] == str(t.value).splitlines()[0]


# ---- operators and their fast path ------------------------------------------------------------


@pytest.mark.parametrize("op", ["+", "-", "*", "/"])
@pytest.mark.parametrize("other", ["tensor", 2, 2.5, True])
def test_arithmetic_dunders_match_numpy(op, other):
    if op == "-" and other is True:
        pytest.skip("torch refuses `-` with a bool operand (numpy allows it)")
    a = np.array([1.5, -2.0, 3.0], dtype=np.float32)
    b = np.array([0.5, 4.0, -1.0], dtype=np.float32) if other == "tensor" else other
    ta = ratten.from_numpy(a.copy())
    tb = ratten.from_numpy(b.copy()) if other == "tensor" else other
    for x, y, tx, ty in ((a, b, ta, tb), (b, a, tb, ta)):
        want = eval(f"x {op} y")
        got = eval(f"tx {op} ty")
        np.testing.assert_allclose(got.numpy(), want, rtol=1e-6)
        assert got.dtype == ratten.float32
    t = ratten.from_numpy(a.copy())
    before = id(t)
    exec(f"t {op}= tb")
    assert id(t) == before
    want = eval(f"a {op} b")
    np.testing.assert_allclose(t.numpy(), want, rtol=1e-6)


def test_dunders_return_notimplemented_on_other_types():
    t = ratten.tensor([1.0])
    with pytest.raises(TypeError):
        t + "a"
    with pytest.raises(TypeError):
        "a" - t
    assert t.__add__(object()) is NotImplemented


def test_gil_release_switch_gives_same_results():
    a = ratten.tensor([1.0, 2.0])
    ratten._C._set_always_release_gil(True)
    try:
        assert (a + a).tolist() == [2.0, 4.0]
        assert ratten.mul(a, 3).tolist() == [3.0, 6.0]
    finally:
        ratten._C._set_always_release_gil(False)
    big = ratten.ones(ratten._C.GIL_RELEASE_NUMEL)
    assert (big + big)[0].item() == 2.0


# ---- advanced indexing ------------------------------------------------------------------------


def _x():
    a = np.arange(60, dtype=np.float32).reshape(3, 4, 5)
    return a, ratten.from_numpy(a.copy())


INDEX_CASES = [
    lambda I: I([0, 2]),
    lambda I: (slice(None), I([1, 3])),
    lambda I: (I([0, 2]), slice(None), I([1, 4])),  # separated -> first
    lambda I: (slice(None), I([0, 3]), I([1, 2])),  # adjacent -> in place
    lambda I: (I([[0], [2]]), I([1, 3])),  # broadcasting index tensors
    lambda I: (Ellipsis, I([-1, 0])),
    lambda I: (1, I([0, 1]), slice(1, 3)),
    lambda I: (I([0, 1]), None, 2),
    lambda I: (slice(None), 1, I([0, 4])),
    lambda I: I([-3, 2, 0, 2]),
]


@pytest.mark.parametrize("case", range(len(INDEX_CASES)))
def test_getitem_with_index_tensors_matches_numpy(case):
    a, t = _x()
    want = a[INDEX_CASES[case](lambda v: np.array(v))]
    got = t[INDEX_CASES[case](lambda v: ratten.tensor(v))]
    assert got.shape == want.shape
    np.testing.assert_array_equal(got.numpy(), want)
    # lists work as index tensors too
    got = t[INDEX_CASES[case](lambda v: v)]
    np.testing.assert_array_equal(got.numpy(), want)


def test_getitem_masks_and_bools():
    a, t = _x()
    m = a[:, :, 0] > 20
    np.testing.assert_array_equal(t[ratten.from_numpy(m.copy())].numpy(), a[m])
    m1 = a[0, 0] > 1
    np.testing.assert_array_equal(t[:, 1, ratten.from_numpy(m1.copy())].numpy(), a[:, 1, m1])
    assert t[True].shape == (1, 3, 4, 5)
    assert t[False].shape == (0, 3, 4, 5)
    assert t[None, [0, 1]].shape == a[None, [0, 1]].shape
    assert t[[True, False, True]].shape == (2, 4, 5)


def test_index_errors_are_torchs():
    t = ratten.arange(3)
    with pytest.raises(IndexError, match="index 5 is out of bounds for dimension 0 with size 3"):
        t[[5]]
    with pytest.raises(IndexError, match="index -4 is out of bounds for dimension 0 with size 3"):
        t[ratten.tensor([-4])]
    with pytest.raises(IndexError, match=r"The shape of the mask \[2\] at index 0 does not match"):
        t[ratten.tensor([True, False])]
    with pytest.raises(IndexError, match="tensors used as indices must be long, int, byte or bool"):
        t[ratten.tensor([0.0])]
    with pytest.raises(IndexError, match="shape mismatch"):
        ratten.zeros(3, 3)[[0, 1], [0, 1, 2]]
    with pytest.raises(IndexError, match="too many indices"):
        t[[0], [0]]


def test_setitem_with_index_tensors_matches_numpy():
    a, t = _x()
    a[[0, 2], 1] = 7.0
    t[[0, 2], 1] = 7.0
    np.testing.assert_array_equal(t.numpy(), a)
    a[:, [1, 3], 2] = np.array([1.0, 2.0], dtype=np.float32)
    t[:, [1, 3], 2] = ratten.tensor([1.0, 2.0])
    np.testing.assert_array_equal(t.numpy(), a)
    m = a > 50
    a[m] = -1.0
    t[ratten.from_numpy(m.copy())] = -1
    np.testing.assert_array_equal(t.numpy(), a)
    # values are converted to the destination dtype; nothing is written on a bad index
    before = t.numpy().copy()
    with pytest.raises(IndexError):
        t[[0, 9]] = 0.0
    np.testing.assert_array_equal(t.numpy(), before)
    with pytest.raises(RuntimeError, match="shape mismatch"):
        t[[0, 1]] = ratten.ones(3)


@requires_torch
def test_advanced_indexing_matches_torch():
    a = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    t, r = torch.from_numpy(a.copy()), ratten.from_numpy(a.copy())
    for idx in ([[0, 1], slice(None), [2, 3]], [slice(None), [0, 2]], [[1], [0, 2]]):
        np.testing.assert_array_equal(r[tuple(idx)].numpy(), t[tuple(idx)].numpy())
    with pytest.raises(IndexError) as e1:
        r[[5]]
    with pytest.raises(IndexError) as e2:
        t[[5]]
    assert str(e1.value) == str(e2.value)


# ---- numpy sharing ----------------------------------------------------------------------------


def test_from_numpy_views_share_and_stay_in_their_array():
    base = np.zeros(33, dtype=np.float64)
    a = base[1:]  # 8-byte aligned, not 64
    t = ratten.from_numpy(a)
    t[0] = 4.0
    assert a[0] == 4.0 and base[0] == 0.0
    a[5] = 6.0
    assert t[5].item() == 6.0
    # the storage is exactly the array's bytes: no view reaches the element before it
    assert t.storage_offset() == 0
    assert t.as_strided((2,), (1,), 0).tolist() == [4.0, 0.0]
    with pytest.raises(RuntimeError, match="out of bounds for storage of size 256"):
        t.as_strided((33,), (1,), 0)
    del a, base
    gc.collect()
    assert t[5].item() == 6.0


def test_wrapped_number_reuse_keeps_values_and_dtypes():
    a = ratten.tensor([1.0, 2.0])
    i = ratten.tensor([1, 2])
    for v in (1.5, 2.5, 1.5, -0.0, 0.0, 3, 3.0, True, 2j):
        np.testing.assert_allclose((a + v).numpy(), np.array([1.0, 2.0], dtype=np.float32) + v)
        want = np.array([1, 2]) * v
        got = i * v
        np.testing.assert_allclose(got.numpy(), want)
    assert (i * 3).dtype == ratten.int64
    assert (i * 3.0).dtype == ratten.float32
    assert (i * True).dtype == ratten.int64
    kept = [a + 0.25 for _ in range(3)]  # results are distinct tensors
    kept[0] += 1
    assert kept[1].tolist() == [1.25, 2.25]


def test_generated_bindings_have_docstrings():
    from ratten._docs import SUMMARIES

    functions = {}
    for module in ("", "nn", "linalg"):
        functions.update(ratten._C._generated_functions(module))
    names = set(functions) | set(ratten._C._generated_methods())
    assert names <= set(SUMMARIES), sorted(names - set(SUMMARIES))
    for name, f in functions.items():
        doc = f.__doc__
        assert doc.startswith(f"{name}("), doc
        assert SUMMARIES[name] in doc and "Declared as:\n    aten::" in doc
    doc = ratten.Tensor.view.__doc__
    assert "aten::view(Tensor(a) self, SymInt[] size) -> Tensor(a)" in doc
    assert ratten.ones(2).sum.__doc__.startswith("sum(")
