"""The everyday Tensor conversions and operators copy-pasted torch code reaches for first: the
dtype shorthands (``t.float()``, ``t.long()``, ...), ``t.cpu()``, ``ratten.__version__``,
floor division (``//``, ``floor_divide``) and ``clip``; against torch's documented results
and, when installed, torch itself."""

import pytest

import ratten
from conftest import HAVE_TORCH, requires_torch

if HAVE_TORCH:
    import torch

SHORTHANDS = [
    ("float", ratten.float32),
    ("double", ratten.float64),
    ("half", ratten.float16),
    ("bfloat16", ratten.bfloat16),
    ("long", ratten.int64),
    ("int", ratten.int32),
    ("short", ratten.int16),
    ("char", ratten.int8),
    ("byte", ratten.uint8),
    ("bool", ratten.bool),
    ("cfloat", ratten.complex64),
    ("cdouble", ratten.complex128),
]


@pytest.mark.parametrize("name,dtype", SHORTHANDS)
def test_dtype_shorthands_convert(name, dtype):
    x = ratten.tensor([-3.0, 0.5, 9.0], dtype=ratten.float64)
    y = getattr(x, name)()
    assert y.dtype == dtype
    assert y.tolist() == x.to(dtype).tolist()
    # Already of that dtype: the same object, as torch returns it.
    assert getattr(y, name)() is y
    assert getattr(y, name)(memory_format=ratten.preserve_format) is y
    assert getattr(ratten.Tensor, name)(y) is y


def test_shorthands_have_torch_signatures():
    x = ratten.tensor([1.5])
    assert ratten.Tensor.long.__doc__.startswith("long(*, memory_format=ratten.preserve_format)")
    assert x.float(memory_format=ratten.contiguous_format) is x
    with pytest.raises(TypeError):
        x.float(ratten.int64)


def test_cpu_and_version():
    x = ratten.tensor([1, 2])
    assert x.cpu() is x
    assert isinstance(ratten.__version__, str)
    assert ratten.__version__ == ratten._C.__version__
    assert ratten.__version__.count(".") == 2


def test_floor_division():
    i = ratten.tensor([7, -7, 5])
    # torch: tensor([7, -7, 5]) // 2 -> tensor([3, -4, 2]); 7 // tensor([2, -2]) -> [3, -4]
    assert (i // 2).tolist() == [3, -4, 2]
    assert (i // 2).dtype == ratten.int64
    assert (7 // ratten.tensor([2, -2])).tolist() == [3, -4]
    assert (i // ratten.tensor([2, 2, -2])).tolist() == [3, -4, -3]
    assert ratten.floor_divide(i, 2).tolist() == [3, -4, 2]
    assert i.floor_divide(ratten.tensor([2, 2, -2])).tolist() == [3, -4, -3]
    f = ratten.tensor([7.5, -7.5, 0.5])
    assert (f // 2).tolist() == [3.0, -4.0, 0.0]
    assert (f // 0).tolist() == [float("inf"), float("-inf"), float("inf")]
    assert (i // 2.5).dtype == ratten.float32
    with pytest.raises(RuntimeError, match="ZeroDivisionError"):
        i // 0
    j = ratten.tensor([7, -7, 5])
    j //= 2
    assert j.tolist() == [3, -4, 2]
    assert j.floor_divide_(2) is j
    assert j.tolist() == [1, -2, 1]
    out = ratten.empty(3, dtype=ratten.int64)
    assert ratten.floor_divide(i, 3, out=out) is out
    assert out.tolist() == [2, -3, 1]


def test_clip_is_clamp():
    x = ratten.tensor([-3.0, 0.5, 9.0])
    assert x.clip(-1, 1).tolist() == [-1.0, 0.5, 1.0]
    assert ratten.clip(x, min=0).tolist() == [0.0, 0.5, 9.0]
    assert x.clip(max=1).tolist() == [-3.0, 0.5, 1.0]
    lo, hi = ratten.zeros(3), ratten.ones(3)
    assert ratten.clip(x, lo, hi).tolist() == [0.0, 0.5, 1.0]
    y = x.clone()
    assert y.clip_(0, 1) is y
    assert y.tolist() == [0.0, 0.5, 1.0]
    out = ratten.empty(3)
    ratten.clip(x, max=2, out=out)
    assert out.tolist() == [-3.0, 0.5, 2.0]
    with pytest.raises(RuntimeError, match="At least one of 'min' or 'max' must not be None"):
        x.clip()


@requires_torch
@pytest.mark.parametrize("name,dtype", SHORTHANDS)
def test_shorthands_match_torch(name, dtype):
    values = [-3.0, 0.5, 9.0, 300.0]
    ours = getattr(ratten.tensor(values), name)()
    theirs = getattr(torch.tensor(values), name)()
    assert str(ours.dtype).split(".")[1] == str(theirs.dtype).split(".")[1]
    assert ours.tolist() == theirs.tolist()


@requires_torch
@pytest.mark.parametrize("a,b", [([7, -7, 5, 0], [2, 2, -2, 3]), ([7.5, -7.5, 0.5, -0.0], [2.0, 2.0, -2.0, 0.0]),
                                 ([7, -7, 5, 1], [2.5, 2.5, -2.5, 0.5])])
def test_floor_divide_matches_torch(a, b):
    ours = ratten.tensor(a) // ratten.tensor(b)
    theirs = torch.tensor(a) // torch.tensor(b)
    assert str(ours.dtype).split(".")[1] == str(theirs.dtype).split(".")[1]
    # repr, so that NaN (0.0 // 0.0) compares equal to NaN.
    assert repr(ours.tolist()) == repr(theirs.tolist())


def test_isnan_and_nan_to_num():
    inf, nan = float("inf"), float("nan")
    x = ratten.tensor([nan, inf, -inf, 1.5])
    assert x.isnan().tolist() == [True, False, False, False]
    assert ratten.isnan(ratten.tensor([1, 2])).tolist() == [False, False]
    # torch.nan_to_num(x) -> [0, 3.4028e+38, -3.4028e+38, 1.5]
    r = ratten.nan_to_num(x)
    assert r.tolist() == [0.0, 3.4028234663852886e38, -3.4028234663852886e38, 1.5]
    assert x.nan_to_num(nan=2.0, posinf=3.0).tolist() == [2.0, 3.0, -3.4028234663852886e38, 1.5]
    assert x.half().nan_to_num().tolist()[1] == 65504.0
    y = x.clone()
    assert y.nan_to_num_(0.0, 1.0, -1.0) is y
    assert y.tolist() == [0.0, 1.0, -1.0, 1.5]
    with pytest.raises(RuntimeError, match="nan_to_num: dtype of out: Double should be same as input: Float"):
        ratten.nan_to_num(x, out=ratten.empty(4, dtype=ratten.float64))


@requires_torch
def test_nan_to_num_matches_torch():
    values = [float("nan"), float("inf"), float("-inf"), 1.5, -0.0]
    for dtype in ["float32", "float64", "float16", "bfloat16"]:
        ours = ratten.tensor(values, dtype=getattr(ratten, dtype)).nan_to_num()
        theirs = torch.tensor(values, dtype=getattr(torch, dtype)).nan_to_num()
        assert ours.tolist() == theirs.tolist()


def test_type_as_and_as_tensor():
    import numpy as np

    x = ratten.tensor([1.5, -2.5])
    i = ratten.tensor([1, 2])
    assert x.type_as(i).tolist() == [1, -2]
    assert x.type_as(i).dtype == ratten.int64
    assert x.type_as(x).tolist() == x.tolist()
    # A tensor of that dtype is returned itself; another dtype is converted.
    assert ratten.as_tensor(x) is x
    assert ratten.as_tensor(x, dtype=ratten.float32) is x
    assert ratten.as_tensor(x, dtype=ratten.float64).dtype == ratten.float64
    # A numpy array is shared, as torch.as_tensor shares it.
    a = np.arange(3.0)
    t = ratten.as_tensor(a)
    a[0] = 5.0
    assert t.tolist() == [5.0, 1.0, 2.0]
    assert t.dtype == ratten.float64
    assert ratten.as_tensor(a, dtype=ratten.float32).dtype == ratten.float32
    # Anything else is copied as ratten.tensor copies it.
    assert ratten.as_tensor([1, 2]).dtype == ratten.int64
    assert ratten.as_tensor([[1.0], [2.0]], dtype=ratten.float64).tolist() == [[1.0], [2.0]]
    with pytest.raises(TypeError):
        ratten.as_tensor(np.array(["a"]))


def test_isinf_and_isfinite():
    inf, nan = float("inf"), float("nan")
    x = ratten.tensor([1.0, nan, inf, -inf])
    assert x.isinf().tolist() == [False, False, True, True]
    assert ratten.isfinite(x).tolist() == [True, False, False, False]
    assert ratten.isinf(ratten.tensor([1, 2])).tolist() == [False, False]
    assert ratten.tensor([1, 2]).isfinite().tolist() == [True, True]
    assert ratten.tensor([70000.0]).half().isinf().tolist() == [True]
