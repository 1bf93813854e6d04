"""The view operators from Python, generated from their declarations: torch's names, varargs
and keyword forms, the geometry (sizes, strides, storage offset) and storage sharing of each
view, and torch's error classes and texts; compared with torch when it is installed."""

import pytest

import ratten
from conftest import HAVE_TORCH, requires_torch

if HAVE_TORCH:
    import torch


def geometry(t):
    return (tuple(t.shape), tuple(t.stride()), t.storage_offset())


def test_forms_and_sharing():
    x = ratten.arange(24.0).reshape(2, 3, 4)
    assert x.view(6, 4).shape == (6, 4)
    assert x.view((4, -1)).shape == (4, 6)
    assert x.view(ratten.int32).dtype == ratten.int32
    assert x.view(dtype=ratten.int16).shape == (2, 3, 8)
    assert x.permute(2, 0, 1).shape == (4, 2, 3)
    assert x.permute((2, 0, 1)).shape == (4, 2, 3)
    assert ratten.permute(x, (2, 0, 1)).shape == (4, 2, 3)
    assert x.transpose(0, 2).shape == (4, 3, 2)
    assert ratten.transpose(x, dim0=0, dim1=1).shape == (3, 2, 4)
    assert x.squeeze().shape == (2, 3, 4)
    assert x.unsqueeze(1).squeeze(1).shape == (2, 3, 4)
    assert x[:1].squeeze((0, 1)).shape == (3, 4)
    assert x.flatten().shape == (24,)
    assert x.flatten(1).shape == (2, 12)
    assert x.unflatten(2, (2, 2)).shape == (2, 3, 2, 2)
    assert x.movedim(0, -1).shape == (3, 4, 2)
    assert ratten.movedim(x, (0, 1), (2, 0)).shape == (3, 4, 2)
    assert x.expand(3, 2, 3, 4).shape == (3, 2, 3, 4)
    assert x.narrow(2, 1, 2).shape == (2, 3, 2)
    assert x.select(1, -1).shape == (2, 4)
    assert x.unfold(2, 2, 1).shape == (2, 3, 3, 2)
    assert x.diagonal(0, 1, 2).shape == (2, 3)
    assert [p.shape for p in x.split(2, dim=2)] == [(2, 3, 2), (2, 3, 2)]
    assert [p.shape for p in x.split([1, 2], 1)] == [(2, 1, 4), (2, 2, 4)]
    assert len(x.chunk(3, dim=-1)) == 2
    assert len(ratten.unbind(x, 1)) == 3
    for v in [x.view(4, 6), x.t() if x.dim() <= 2 else x.transpose(0, 1), x.split(1)[1]]:
        assert v._is_view_of(x)
    c = x.clone()
    assert not c._is_view_of(x) and c.tolist() == x.tolist()
    assert x.contiguous() is x
    xt = x.transpose(0, 2)
    assert xt.contiguous() is not xt and xt.contiguous().is_contiguous()
    m = ratten.empty(2, 3, 4, 5).contiguous(memory_format=ratten.channels_last)
    assert m.stride() == (60, 1, 15, 3)


def test_views_write_through():
    x = ratten.zeros(3, 4)
    x.view(12)[5] = 1.0
    x.t()[3, 2] = 2.0
    x.diagonal().add_(10)
    assert x.tolist() == [
        [10.0, 0.0, 0.0, 0.0],
        [0.0, 11.0, 0.0, 0.0],
        [0.0, 0.0, 10.0, 2.0],
    ]


ERRORS = [
    (lambda m, x: x.view(5, 5), RuntimeError, "shape '[5, 5]' is invalid for input of size 24"),
    (lambda m, x: x.transpose(0, 1).view(24), RuntimeError, "view size is not compatible"),
    (lambda m, x: x.t(), RuntimeError, "t() expects a tensor with <= 2 dimensions, but self is 3D"),
    (lambda m, x: x.permute(0, 0, 1), RuntimeError, "permute(): duplicate dims are not allowed."),
    (lambda m, x: x.diagonal(0, 1, 1), RuntimeError, "diagonal dimensions cannot be identical 1, 1"),
    (lambda m, x: x.unfold(2, 5, 1), RuntimeError, "maximum size for tensor at dimension 2 is 4 but size is 5"),
    (lambda m, x: x.split(0), RuntimeError, "split_size can only be 0 if dimension size is 0"),
    (lambda m, x: x.chunk(0), RuntimeError, "chunk expects `chunks` to be greater than 0, got: 0"),
    (lambda m, x: x.movedim((0, 0), (1, 2)), RuntimeError, "movedim: repeated dim in `source` ([0, 0])"),
    (lambda m, x: x.unflatten(2, (3, 2)), RuntimeError, "unflatten: Provided sizes [3, 2] don't multiply up"),
    (lambda m, x: x.narrow(0, 1, 5), RuntimeError, "start (1) + length (5) exceeds dimension size (2)."),
    (lambda m, x: x.select(3, 0), IndexError, "Dimension out of range (expected to be in range of [-3, 2], but got 3)"),
    (lambda m, x: m.zeros(3, dtype=m.int16).view(m.float32), RuntimeError, "self.size(-1) must be divisible by 2"),
    (lambda m, x: m.tensor(1.0).unbind(), IndexError, "Dimension specified as 0 but tensor has no dimensions"),
    (lambda m, x: x.as_strided((30,), (1,)), RuntimeError, "out of bounds for storage of size 96"),
    (lambda m, x: x.expand(3, 4), RuntimeError, "the number of sizes provided (2) must be greater or equal"),
]


@pytest.mark.parametrize("case", range(len(ERRORS)))
def test_errors(case):
    f, kind, text = ERRORS[case]
    x = ratten.arange(24.0).reshape(2, 3, 4)
    with pytest.raises(kind) as e:
        f(ratten, x)
    assert text in str(e.value)


CASES = [
    ("view", lambda t: t.view(4, 6)),
    ("view_neg", lambda t: t.view(-1, 2)),
    ("view_dtype_down", lambda t: t.view(_mod(t).int16)),
    ("view_dtype_up", lambda t: t.view(_mod(t).float64)),
    ("reshape", lambda t: t.reshape(3, -1)),
    ("transpose", lambda t: t.transpose(-1, 0)),
    ("permute", lambda t: t.permute(1, 2, 0)),
    ("movedim", lambda t: t.movedim((0, 2), (1, 0))),
    ("expand", lambda t: t[:, :1].expand(2, 3, 4)),
    ("squeeze", lambda t: t[:1, :, :1].squeeze()),
    ("squeeze_dims", lambda t: t[:1, :, :1].squeeze((0, 2))),
    ("unsqueeze", lambda t: t.unsqueeze(-1)),
    ("narrow", lambda t: t.narrow(1, 1, 2)),
    ("slice", lambda t: t[:, 1::2]),
    ("select", lambda t: t.select(2, -2)),
    ("flatten", lambda t: t.flatten(0, 1)),
    ("unflatten", lambda t: t.unflatten(-1, (2, -1))),
    ("unfold", lambda t: t.unfold(1, 2, 1)),
    ("diagonal", lambda t: t.diagonal(1, 1, 2)),
    ("diagonal_neg", lambda t: t.diagonal(-1, 0, 2)),
    ("split", lambda t: t.split(3, 2)[1]),
    ("split_sizes", lambda t: t.split([1, 3], -1)[1]),
    ("chunk", lambda t: t.chunk(2, 1)[-1]),
    ("unbind", lambda t: t.unbind(1)[2]),
    ("clone", lambda t: t.clone()),
    ("contiguous", lambda t: t.contiguous()),
    ("t", lambda t: t[0].t()),
]


def _mod(t):
    return torch if HAVE_TORCH and isinstance(t, torch.Tensor) else ratten


@requires_torch
@pytest.mark.parametrize("layout", ["contiguous", "transposed", "sliced"])
@pytest.mark.parametrize("name", [c[0] for c in CASES])
def test_matches_torch(name, layout):
    op = dict(CASES)[name]
    base = torch.arange(48.0).reshape(2, 3, 8)

    def prepare(m, b):
        if layout == "transposed":
            return b.transpose(0, 2).reshape(8, 3, 2).transpose(0, 2)
        if layout == "sliced":
            return b[:, :, 2:6]
        return b[:, :, :4]

    t = prepare(torch, base)
    r = prepare(ratten, ratten.tensor(base.tolist()))
    try:
        want = op(t)
    except RuntimeError as e:
        with pytest.raises(RuntimeError) as got:
            op(r)
        assert str(got.value).split("\n")[0] == str(e).split("\n")[0]
        return
    got = op(r)
    assert geometry(got) == geometry(want)
    assert got.tolist() == want.tolist()
    assert got._is_view_of(r) == (want.untyped_storage().data_ptr() == t.untyped_storage().data_ptr())
