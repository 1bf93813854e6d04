"""torch's type-promotion functions (result_type, promote_types, can_cast), the default dtype
(get_default_dtype / set_default_dtype), and Tensor.to: the same object back when nothing
changes, the device forms (`to('cpu')`, `to(None)`) and memory_format objects.

Every behaviour has a torch-free test with the expected values written out (taken from torch
2.15), and a comparison with torch when it is installed (`pytest.importorskip` inside the test,
so the torch-free tests still run without torch)."""

import itertools

import numpy as np
import pytest

import ratten

DTYPE_NAMES = [
    "bool",
    "uint8",
    "int8",
    "int16",
    "int32",
    "int64",
    "float16",
    "bfloat16",
    "float32",
    "float64",
    "complex32",
    "complex64",
    "complex128",
]


def R(name):
    return getattr(ratten, name)


def name_of(dtype):
    """`ratten.float32` / `torch.float32` -> "float32"."""
    return repr(dtype).split(".", 1)[1]


def norm(msg):
    return str(msg).replace("ratten", "torch")


@pytest.fixture
def default_dtype_restored():
    before = ratten.get_default_dtype()
    yield
    ratten.set_default_dtype(before)


# ---- exports -------------------------------------------------------------------------------


def test_exported():
    for name in (
        "result_type",
        "promote_types",
        "can_cast",
        "get_default_dtype",
        "set_default_dtype",
        "memory_format",
        "contiguous_format",
        "preserve_format",
        "channels_last",
        "channels_last_3d",
    ):
        assert name in ratten.__all__, name
        assert hasattr(ratten, name), name
    for name in ("result_type", "promote_types", "can_cast", "get_default_dtype", "_set_default_dtype"):
        assert hasattr(ratten._C, name), name


# ---- result_type ---------------------------------------------------------------------------


def test_result_type_values():
    ti = ratten.tensor([1, 2])
    tf = ratten.tensor([1.0])
    tb = ratten.tensor([True])
    th = ratten.tensor([1.0], dtype=ratten.float16)
    zi = ratten.tensor(1)
    zd = ratten.tensor(1.0, dtype=ratten.float64)
    u8 = ratten.tensor([1], dtype=ratten.uint8)
    cases = [
        # Tensor, Tensor
        ((ti, tf), "float32"),
        ((zi, tf), "float32"),
        ((ti, zd), "float64"),
        ((zd, ti), "float64"),
        ((u8, ratten.tensor(1, dtype=ratten.int8)), "uint8"),
        # Tensor, Number (the number is a wrapped number: weaker than any tensor)
        ((ti, 1.5), "float32"),
        ((ti, 1), "int64"),
        ((tb, 1), "int64"),
        ((tb, True), "bool"),
        ((ti, True), "int64"),
        ((ti, 1j), "complex64"),
        ((tf, 1j), "complex64"),
        ((th, 1j), "complex32"),
        ((th, 2.5), "float16"),
        ((zd, 1), "float64"),
        ((u8, -1), "uint8"),
        # Number, Tensor
        ((1.5, ti), "float32"),
        ((1, tb), "int64"),
        # Number, Number
        ((1, 2), "int64"),
        ((1, 2.0), "float32"),
        ((1.5, 1.5), "float32"),
        ((True, False), "bool"),
        ((True, 2), "int64"),
        ((1, 1j), "complex64"),
        ((1.0, 1j), "complex64"),
    ]
    for args, want in cases:
        got = ratten.result_type(*args)
        assert got is R(want), (args, got, want)


def test_result_type_keywords_and_numpy_floats():
    ti = ratten.tensor([1, 2])
    assert ratten.result_type(tensor=ti, other=2.0) is ratten.float32
    assert ratten.result_type(ti, other=2.0) is ratten.float32
    assert ratten.result_type(scalar=2, tensor=ti) is ratten.int64
    assert ratten.result_type(scalar1=1, scalar2=2.0) is ratten.float32
    assert ratten.result_type(tensor=ti, other=ratten.tensor([1.0])) is ratten.float32
    # A numpy float64 is a Python float.
    assert ratten.result_type(ti, np.float64(1.0)) is ratten.float32


SIGNATURE_LINES = [
    " * (Tensor tensor, Tensor other)",
    " * (Number scalar, Tensor tensor)",
    " * (Tensor tensor, Number other)",
    " * (Number scalar1, Number scalar2)",
]


def test_result_type_errors():
    ti = ratten.tensor([1, 2])
    with pytest.raises(TypeError) as e:
        ratten.result_type(ti, "a")
    msg = str(e.value)
    assert msg.startswith(
        "result_type() received an invalid combination of arguments - got (Tensor, str), "
        "but expected one of:"
    )
    for line in SIGNATURE_LINES:
        assert line in msg
    assert "(Tensor, !str!)" in msg
    for args in [(ti,), (None, ti), (ti, None), (ti, [1]), (ti, ti, ti), ()]:
        with pytest.raises(TypeError, match=r"result_type\(\) received an invalid combination"):
            ratten.result_type(*args)
    with pytest.raises(TypeError, match="tensor2"):
        ratten.result_type(ti, tensor2=ti)


@pytest.mark.filterwarnings("ignore:ComplexHalf support is experimental")
def test_result_type_matches_torch():
    torch = pytest.importorskip("torch")
    shapes = {"dim": [2], "zero": []}
    numbers = [True, 3, -1, 2.5, 1j]
    for a, b in itertools.product(DTYPE_NAMES, repeat=2):
        for sa, sb in itertools.product(shapes, repeat=2):
            ra = ratten.zeros(shapes[sa], dtype=R(a))
            rb = ratten.zeros(shapes[sb], dtype=R(b))
            ta = torch.zeros(shapes[sa], dtype=getattr(torch, a))
            tb = torch.zeros(shapes[sb], dtype=getattr(torch, b))
            want = name_of(torch.result_type(ta, tb))
            if want == "bcomplex32":
                continue  # ratten has no bcomplex32 (type_properties.rs)
            assert name_of(ratten.result_type(ra, rb)) == want, (a, sa, b, sb)
        for s in shapes:
            for n in numbers:
                ra = ratten.zeros(shapes[s], dtype=R(a))
                ta = torch.zeros(shapes[s], dtype=getattr(torch, a))
                for rargs, targs in (((ra, n), (ta, n)), ((n, ra), (n, ta))):
                    want = name_of(torch.result_type(*targs))
                    if want == "bcomplex32":
                        continue
                    assert name_of(ratten.result_type(*rargs)) == want, (a, s, n)
    for x, y in itertools.product(numbers, repeat=2):
        assert name_of(ratten.result_type(x, y)) == name_of(torch.result_type(x, y)), (x, y)


def test_result_type_errors_match_torch():
    torch = pytest.importorskip("torch")
    for rargs, targs in [
        ((ratten.ones(2), "a"), (torch.ones(2), "a")),
        ((None, ratten.ones(2)), (None, torch.ones(2))),
        ((ratten.ones(2),), (torch.ones(2),)),
    ]:
        with pytest.raises(TypeError) as r:
            ratten.result_type(*rargs)
        with pytest.raises(TypeError) as t:
            torch.result_type(*targs)
        # The first line and the signatures. (torch prints "didn't match" details only for
        # the signatures whose argument count fits; ratten's parser prints them for any
        # signature with a wrongly typed argument.)
        rl, tl = norm(r.value).splitlines(), str(t.value).splitlines()
        assert rl[0] == tl[0]
        assert [l for l in rl if l.startswith(" * ")] == [l for l in tl if l.startswith(" * ")]
        if len(rargs) == 2:
            assert rl == tl


# ---- promote_types / can_cast -----------------------------------------------------------------


def test_promote_types_values():
    cases = [
        ("float32", "int64", "float32"),
        ("uint8", "int8", "int16"),
        ("bfloat16", "float16", "float32"),
        ("bool", "bool", "bool"),
        ("bool", "uint8", "uint8"),
        ("int32", "int64", "int64"),
        ("float16", "int64", "float16"),
        ("complex32", "float64", "complex128"),
        ("complex64", "float64", "complex128"),
        ("bfloat16", "complex32", "complex64"),
    ]
    for a, b, want in cases:
        assert ratten.promote_types(R(a), R(b)) is R(want), (a, b)
        assert ratten.promote_types(R(b), R(a)) is R(want), (b, a)
    assert ratten.promote_types(type1=ratten.uint8, type2=ratten.int8) is ratten.int16


def test_promote_types_errors():
    with pytest.raises(TypeError, match=r'promote_types\(\) missing 1 required positional arguments: "type2"'):
        ratten.promote_types(ratten.float32)
    with pytest.raises(
        TypeError,
        match=r"promote_types\(\): argument 'type2' \(position 2\) must be ratten.dtype, not int",
    ):
        ratten.promote_types(ratten.float32, 1)
    with pytest.raises(TypeError, match="must be ratten.dtype, not NoneType"):
        ratten.promote_types(ratten.float32, None)
    with pytest.raises(TypeError):
        ratten.promote_types(ratten.float32, other=ratten.int64)


def test_can_cast_values():
    cases = [
        ("int64", "float32", True),
        ("float32", "int64", False),
        ("complex64", "float64", False),
        ("float64", "complex64", True),
        ("int8", "bool", False),
        ("bool", "uint8", True),
        ("int64", "uint8", True),
        ("float32", "float16", True),
        ("bool", "bool", True),
        ("float16", "bool", False),
    ]
    for a, b, want in cases:
        assert ratten.can_cast(R(a), R(b)) is want, (a, b)
    assert ratten.can_cast(from_=ratten.complex64, to=ratten.float64) is False
    assert ratten.can_cast(ratten.int64, to=ratten.float64) is True


def test_can_cast_errors():
    with pytest.raises(
        TypeError,
        match=r"can_cast\(\): argument 'from_' \(position 1\) must be ratten.dtype, not Tensor",
    ):
        ratten.can_cast(ratten.ones(1), ratten.float32)
    with pytest.raises(TypeError, match=r'can_cast\(\) missing 1 required positional arguments: "to"'):
        ratten.can_cast(ratten.int64)
    with pytest.raises(TypeError):
        ratten.can_cast(**{"from": ratten.int64, "to": ratten.float32})


def test_promote_types_and_can_cast_match_torch():
    torch = pytest.importorskip("torch")
    for a, b in itertools.product(DTYPE_NAMES, repeat=2):
        ta, tb = getattr(torch, a), getattr(torch, b)
        assert name_of(ratten.promote_types(R(a), R(b))) == name_of(torch.promote_types(ta, tb)), (a, b)
        assert ratten.can_cast(R(a), R(b)) == torch.can_cast(ta, tb), (a, b)
    for call in (
        lambda m: m.promote_types(m.float32),
        lambda m: m.promote_types(m.float32, 1),
        lambda m: m.can_cast(m.ones(1), m.float32),
        lambda m: m.can_cast(m.int64),
    ):
        with pytest.raises(TypeError) as r:
            call(ratten)
        with pytest.raises(TypeError) as t:
            call(torch)
        assert norm(r.value) == str(t.value)


# ---- default dtype ---------------------------------------------------------------------------


def test_default_dtype_is_float32():
    assert ratten.get_default_dtype() is ratten.float32
    with pytest.raises(TypeError):
        ratten.get_default_dtype(1)


def test_set_default_dtype_float64_is_followed():
    assert ratten.get_default_dtype() is ratten.float32
    try:
        assert ratten.set_default_dtype(ratten.float64) is None
        assert ratten.get_default_dtype() is ratten.float64
        assert ratten.tensor([1.5]).dtype is ratten.float64
        assert ratten.tensor(1.5).dtype is ratten.float64
        assert ratten.ones(2).dtype is ratten.float64
        assert (ratten.ones(2) + 1.5).dtype is ratten.float64
        assert (ratten.ones(2, dtype=ratten.float32) + 1.5).dtype is ratten.float32
        assert (ratten.tensor([1, 2]) + 1.5).dtype is ratten.float64
        assert (ratten.tensor([1, 2]) / 2).dtype is ratten.float64
        assert ratten.tensor([1j]).dtype is ratten.complex128
        assert ratten.zeros(2).dtype is ratten.float64
        assert ratten.empty(2).dtype is ratten.float64
        assert ratten.rand(2).dtype is ratten.float64
        assert ratten.randn(2).dtype is ratten.float64
        assert ratten.arange(3.0).dtype is ratten.float64
        assert ratten.arange(3).dtype is ratten.int64
        assert ratten.full((2,), 1.5).dtype is ratten.float64
        assert ratten.full((2,), 1j).dtype is ratten.complex128
        assert ratten.result_type(1, 1.5) is ratten.float64
        assert ratten.result_type(ratten.tensor([1]), 1.5) is ratten.float64
        assert ratten.result_type(1, 1j) is ratten.complex128
        assert ratten.result_type(ratten.ones(2, dtype=ratten.float16), 1.5) is ratten.float16
    finally:
        ratten.set_default_dtype(ratten.float32)
    assert ratten.get_default_dtype() is ratten.float32
    assert ratten.tensor([1.5]).dtype is ratten.float32
    assert (ratten.ones(2) + 1.5).dtype is ratten.float32


def test_set_default_dtype_half_and_bfloat16(default_dtype_restored):
    ratten.set_default_dtype(ratten.float16)
    assert ratten.get_default_dtype() is ratten.float16
    assert ratten.tensor([1.5]).dtype is ratten.float16
    assert ratten.ones(2).dtype is ratten.float16
    assert ratten.tensor([1j]).dtype is ratten.complex32
    assert ratten.result_type(1, 1j) is ratten.complex32
    ratten.set_default_dtype(ratten.bfloat16)
    assert ratten.get_default_dtype() is ratten.bfloat16
    assert ratten.tensor([1.5]).dtype is ratten.bfloat16
    assert ratten.ones(2).dtype is ratten.bfloat16
    assert ratten.result_type(1, 1j) is ratten.complex64


def test_set_default_dtype_errors(default_dtype_restored):
    for d in (ratten.int64, ratten.bool, ratten.uint8, ratten.complex64, ratten.complex128):
        with pytest.raises(TypeError, match="^only floating-point types are supported as the default type$"):
            ratten.set_default_dtype(d)
    for bad in (None, "float64", float, 1):
        with pytest.raises(
            TypeError,
            match="^invalid dtype object: only floating-point types are supported as the default type$",
        ):
            ratten.set_default_dtype(bad)
    with pytest.raises(TypeError, match="positional-only arguments passed as keyword arguments: 'd'"):
        ratten.set_default_dtype(d=ratten.float64)
    with pytest.raises(TypeError, match="unexpected keyword argument 'dtype'"):
        ratten.set_default_dtype(dtype=ratten.float64)
    with pytest.raises(TypeError, match="missing 1 required positional argument: 'd'"):
        ratten.set_default_dtype()
    # A refused dtype leaves the default as it was.
    assert ratten.get_default_dtype() is ratten.float32


@pytest.mark.filterwarnings("ignore:ComplexHalf support is experimental")
def test_default_dtype_matches_torch():
    torch = pytest.importorskip("torch")
    probes = [
        lambda m: m.get_default_dtype(),
        lambda m: m.tensor([1.5]).dtype,
        lambda m: m.tensor([1j]).dtype,
        lambda m: m.ones(2).dtype,
        lambda m: (m.ones(2) + 1.5).dtype,
        lambda m: (m.tensor([1, 2]) + 1.5).dtype,
        lambda m: (m.tensor([1, 2]) / 2).dtype,
        lambda m: m.arange(3.0).dtype,
        lambda m: m.full((2,), 1.5).dtype,
        lambda m: m.result_type(1, 1.5),
        lambda m: m.result_type(1, 1j),
        lambda m: m.result_type(m.tensor([1]), 1.5),
    ]
    try:
        for name in ("float64", "float16", "float32"):
            ratten.set_default_dtype(R(name))
            torch.set_default_dtype(getattr(torch, name))
            for i, p in enumerate(probes):
                assert name_of(p(ratten)) == name_of(p(torch)), (name, i)
    finally:
        ratten.set_default_dtype(ratten.float32)
        torch.set_default_dtype(torch.float32)
    for call in (
        lambda m: m.set_default_dtype(m.int64),
        lambda m: m.set_default_dtype(None),
        lambda m: m.set_default_dtype(d=m.float64),
        lambda m: m.set_default_dtype(),
    ):
        with pytest.raises(TypeError) as r:
            call(ratten)
        with pytest.raises(TypeError) as t:
            call(torch)
        assert norm(r.value) == str(t.value)
    assert ratten.get_default_dtype() is ratten.float32


# ---- Tensor.to ---------------------------------------------------------------------------------


def test_to_returns_self_when_nothing_changes():
    t = ratten.ones(2)
    assert t.to(t.dtype) is t
    assert t.to(ratten.float32) is t
    assert t.to(dtype=ratten.float32) is t
    assert t.to(ratten.float32, copy=False) is t
    assert t.to(ratten.float32, True) is t  # non_blocking
    assert t.to(ratten.float32, non_blocking=True) is t
    assert t.to() is t
    assert t.to(copy=False) is t
    assert t.to(dtype=None) is t
    assert t.to(device="cpu") is t
    assert t.to(device=None, dtype=None) is t
    assert t.to(ratten.device("cpu")) is t
    assert t.to(t) is t
    assert t.to(tensor=t) is t
    assert t.to(ratten.zeros(3)) is t
    assert ratten.Tensor.to(t, ratten.float32) is t
    v = t[0:1]
    assert v.to(v.dtype) is v
    i = ratten.tensor([1, 2])
    assert i.to(ratten.int64) is i


def test_to_copies_when_asked_or_needed():
    t = ratten.tensor([1.5, 2.5])
    for r in (
        t.to(ratten.float32, copy=True),
        t.to(copy=True),
        t.to(t, True, True),
        t.to("cpu", ratten.float32, False, True),
    ):
        assert r is not t
        assert r.dtype is ratten.float32
        assert r.tolist() == [1.5, 2.5]
        r.add_(1)
        assert t.tolist() == [1.5, 2.5]
    d = t.to(ratten.float64)
    assert d is not t and d.dtype is ratten.float64 and d.tolist() == [1.5, 2.5]
    assert t.to(ratten.int64).tolist() == [1, 2]
    assert t.to(ratten.zeros(1, dtype=ratten.float64)).dtype is ratten.float64
    assert t.to(dtype=ratten.float64, device="cpu").dtype is ratten.float64
    # A number where the tensor goes is a wrapped-number tensor (float64), as in torch.
    assert t.to(3.5).dtype is ratten.float64


def test_to_device_string_and_none():
    t = ratten.ones(2)
    assert t.to("cpu") is t
    assert t.to(None) is t
    assert t.to("cpu", non_blocking=True) is t
    assert t.to("cpu", ratten.float32) is t
    assert t.to("cpu", ratten.float64).dtype is ratten.float64
    assert t.to(None, ratten.float64).dtype is ratten.float64
    assert t.to("cpu", dtype=ratten.float64).dtype is ratten.float64
    m = t.to("meta")
    assert m.device.type == "meta" and m.shape == t.shape
    with pytest.raises(RuntimeError):
        t.to("foo")
    with pytest.raises(TypeError, match=r"to\(\) received an invalid combination of arguments - got \(str, str\)"):
        t.to("cpu", "cpu")
    with pytest.raises(TypeError, match=r"got \(ratten.dtype, str\)"):
        t.to(ratten.float64, "cpu")
    # torch's to() takes no layout / pin_memory / other=.
    for kw in ({"layout": None}, {"pin_memory": False}, {"other": t}):
        with pytest.raises(TypeError, match=r"to\(\) received an invalid combination"):
            t.to(**kw)


def test_memory_format_objects():
    mf = ratten.memory_format
    for name in ("contiguous_format", "preserve_format", "channels_last", "channels_last_3d"):
        o = getattr(ratten, name)
        assert type(o) is mf
        assert repr(o) == f"ratten.{name}"
        assert str(o) == f"ratten.{name}"
        assert o == getattr(ratten, name)
        assert hash(o) == hash(getattr(ratten, name))
        assert getattr(ratten._C, name) is o
    assert ratten.contiguous_format != ratten.preserve_format
    assert len({ratten.contiguous_format, ratten.preserve_format, ratten.channels_last}) == 3
    with pytest.raises(TypeError):
        ratten.memory_format()


def test_to_memory_format():
    t = ratten.ones(2, 3)
    assert t.to(memory_format=ratten.contiguous_format) is t
    assert t.to(memory_format=ratten.preserve_format) is t
    assert t.to(memory_format=None) is t
    assert t.to(ratten.float32, memory_format=ratten.preserve_format) is t
    assert t.to("cpu", memory_format=ratten.contiguous_format) is t
    T = ratten.arange(6.0).reshape(2, 3).t()
    assert T.to(ratten.float64).stride() == (1, 3)
    p = T.to(ratten.float64, memory_format=ratten.preserve_format)
    assert p.stride() == (1, 3) and p.tolist() == T.tolist()
    c = T.to(ratten.float64, memory_format=ratten.contiguous_format)
    assert c.stride() == (2, 1) and c.is_contiguous() and c.tolist() == T.tolist()
    c = T.to(T, memory_format=ratten.contiguous_format, copy=True)
    assert c.stride() == (2, 1)
    # memory_format is keyword-only, as in torch.
    with pytest.raises(TypeError, match=r"got \(ratten.dtype, bool, bool, ratten.memory_format\)"):
        t.to(ratten.float32, False, False, ratten.preserve_format)
    for bad in (1, "contiguous_format"):
        with pytest.raises(TypeError, match=r"to\(\) received an invalid combination"):
            t.to(memory_format=bad)


def test_to_error_lists_torch_signatures():
    with pytest.raises(TypeError) as e:
        ratten.ones(2).to("cpu", "cpu")
    lines = str(e.value).splitlines()
    assert (
        " * (ratten.device device = None, ratten.dtype dtype = None, bool non_blocking = False, "
        "bool copy = False, *, ratten.memory_format memory_format = None)" in lines
    )
    assert (
        " * (ratten.dtype dtype, bool non_blocking = False, bool copy = False, *, "
        "ratten.memory_format memory_format = None)" in lines
    )
    assert (
        " * (Tensor tensor, bool non_blocking = False, bool copy = False, *, "
        "ratten.memory_format memory_format = None)" in lines
    )


def test_to_matches_torch():
    torch = pytest.importorskip("torch")
    to_contiguous_format = lambda m, t: t.to(memory_format=m.contiguous_format)
    calls = [
        lambda m, t: t.to(t.dtype),
        lambda m, t: t.to(m.float32),
        lambda m, t: t.to(m.float64),
        lambda m, t: t.to(m.float32, copy=True),
        lambda m, t: t.to(m.float32, copy=False),
        lambda m, t: t.to(copy=True),
        lambda m, t: t.to(),
        lambda m, t: t.to("cpu"),
        lambda m, t: t.to(None),
        lambda m, t: t.to(device="cpu"),
        lambda m, t: t.to(m.device("cpu")),
        lambda m, t: t.to("cpu", m.float32),
        lambda m, t: t.to("cpu", m.float64),
        lambda m, t: t.to(None, m.float64),
        lambda m, t: t.to(t),
        lambda m, t: t.to(t, True, True),
        lambda m, t: t.to(m.zeros(1, dtype=m.float64)),
        lambda m, t: t.to(3.5),
        to_contiguous_format,
        lambda m, t: t.to(memory_format=m.preserve_format),
        lambda m, t: t.to(m.float32, memory_format=m.preserve_format),
        lambda m, t: t.to(m.float64, memory_format=m.contiguous_format),
        lambda m, t: t.to("cpu", non_blocking=True),
        lambda m, t: m.Tensor.to(t, m.float32),
    ]
    for make in (lambda m: m.ones(2, 3), lambda m: m.arange(6.0).reshape(2, 3).t()):
        rt, tt = make(ratten), make(torch)
        for i, call in enumerate(calls):
            if call is to_contiguous_format and not rt.is_contiguous():
                # torch keeps a non-contiguous 2-D tensor as it is for contiguous_format (its
                # suggest_memory_format() is contiguous); ratten-aten's to() copies it.
                continue
            r, t = call(ratten, rt), call(torch, tt)
            assert (r is rt) == (t is tt), i
            assert name_of(r.dtype) == name_of(t.dtype), i
            assert tuple(r.stride()) == tuple(t.stride()), i
            assert r.tolist() == t.tolist(), i
    for call in (
        lambda m, t: t.to("cpu", "cpu"),
        lambda m, t: t.to(m.float32, False, False, m.preserve_format),
        lambda m, t: t.to(layout=None),
        lambda m, t: t.to(memory_format=1),
    ):
        with pytest.raises(TypeError) as r:
            call(ratten, ratten.ones(2))
        with pytest.raises(TypeError) as t:
            call(torch, torch.ones(2))
        # The signature lines as torch prints them (the first line differs only by torch's
        # trailing ", " after keyword-only arguments).
        assert [l for l in norm(r.value).splitlines() if l.startswith(" * ")] == [
            l for l in str(t.value).splitlines() if l.startswith(" * ")
        ]
    for name in ("contiguous_format", "preserve_format", "channels_last", "channels_last_3d"):
        assert norm(repr(getattr(ratten, name))) == repr(getattr(torch, name))
