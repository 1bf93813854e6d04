"""The random factories and samplers as generated bindings: with the same seed they give
torch's numbers (rand, randn, randint, randperm, normal, the in-place samplers, bernoulli,
multinomial), generator objects, dtypes, out= and the error texts; compared with torch when
installed."""

import pytest

import ratten
from conftest import HAVE_TORCH, requires_torch

if HAVE_TORCH:
    import torch


def test_forms_and_generators():
    g = ratten.Generator().manual_seed(7)
    a = ratten.rand(3, generator=g)
    g.manual_seed(7)
    assert ratten.rand(3, generator=g).tolist() == a.tolist()
    assert g.initial_seed() == 7
    assert ratten.randint(0, 5, (10,)).dtype == ratten.int64
    assert ratten.randint(3, (2, 2), dtype=ratten.int32).dtype == ratten.int32
    assert sorted(ratten.randperm(6).tolist()) == list(range(6))
    x = ratten.zeros(4)
    assert x.uniform_(2, 3) is x
    assert all(2 <= v < 3 for v in x.tolist())
    assert all(v in (0.0, 1.0) for v in ratten.bernoulli(ratten.full((50,), 0.5)).tolist())
    assert ratten.normal(0.0, 1.0, (2, 3)).shape == (2, 3)
    m = ratten.rand(2, 2, device="meta")
    assert m.device.type == "meta"
    with pytest.raises(RuntimeError, match="random_ expects 'from' to be less than 'to'"):
        ratten.randint(5, 5, (2,))
    with pytest.raises(RuntimeError, match="normal expects std >= 0.0"):
        ratten.zeros(2).normal_(0, -1)
    with pytest.raises(RuntimeError, match="bernoulli_ expects p to be in"):
        ratten.zeros(2).bernoulli_(1.5)
    with pytest.raises(RuntimeError, match="exponential_ expects lambda > 0.0, but found lambda=nan"):
        ratten.zeros(2).exponential_(float("nan"))
    with pytest.raises(RuntimeError, match="cannot sample n_sample > prob_dist.size"):
        ratten.multinomial(ratten.ones(3), 4)
    with pytest.raises(RuntimeError, match="invalid multinomial distribution .sum of probabilities"):
        ratten.zeros(2, 3).multinomial(2, replacement=True)
    assert sorted(ratten.multinomial(ratten.tensor([0.0, 1, 0, 2, 3]), 3).tolist()) == [1, 3, 4]
    assert ratten.multinomial(ratten.ones(2, 3, device="meta"), 5, True).shape == (2, 5)


CALLS = [
    ("rand", lambda m: m.rand(5, 7)),
    ("rand_f64", lambda m: m.rand(40, dtype=m.float64)),
    ("rand_half", lambda m: m.rand(33, dtype=m.float16)),
    ("randn", lambda m: m.randn(3, 17)),
    ("randn_f64", lambda m: m.randn(20, dtype=m.float64)),
    ("randn_small", lambda m: m.randn(7)),
    ("randint", lambda m: m.randint(-3, 10, (30,))),
    ("randint_big", lambda m: m.randint(0, 2**40, (10,))),
    ("randint_u8", lambda m: m.randint(0, 200, (10,), dtype=m.uint8)),
    ("randint_float", lambda m: m.randint(0, 100, (10,), dtype=m.float32)),
    ("randperm", lambda m: m.randperm(20)),
    ("randperm_f", lambda m: m.randperm(9, dtype=m.float64)),
    ("rand_like", lambda m: m.rand_like(m.zeros(2, 3))),
    ("randn_like", lambda m: m.randn_like(m.zeros(17, dtype=m.float64))),
    ("randint_like", lambda m: m.randint_like(m.zeros(6), 4, 9)),
    ("normal_tf", lambda m: m.normal(m.arange(6.0), 2.0)),
    ("normal_ft", lambda m: m.normal(1.0, m.arange(1.0, 20.0))),
    ("normal_tt", lambda m: m.normal(m.zeros(3, 1), m.ones(1, 4))),
    ("normal_ff", lambda m: m.normal(2.0, 3.0, (5,))),
    ("uniform_", lambda m: m.zeros(9).uniform_(-2, 5)),
    ("uniform_t", lambda m: m.zeros(4, 3).t().uniform_()),
    ("normal_", lambda m: m.zeros(20).normal_(1, 2)),
    ("random_", lambda m: m.zeros(6, dtype=m.int32).random_()),
    ("random_f", lambda m: m.zeros(6).random_()),
    ("random_i64", lambda m: m.zeros(6, dtype=m.int64).random_()),
    ("random_bool", lambda m: m.zeros(6, dtype=m.bool).random_()),
    ("random_to", lambda m: m.zeros(6).random_(10)),
    ("random_from_to", lambda m: m.zeros(6, dtype=m.int16).random_(-5, 5)),
    ("random_from", lambda m: m.zeros(6, dtype=m.uint8).random_(3, None)),
    ("bernoulli_p", lambda m: m.zeros(40).bernoulli_(0.3)),
    ("bernoulli_t", lambda m: m.bernoulli(m.linspace(0, 1, 40))),
    ("bernoulli_t64", lambda m: m.bernoulli(m.linspace(0, 1, 40, dtype=m.float64))),
    ("bernoulli_like", lambda m: m.bernoulli(m.zeros(3, 4, dtype=m.float64), 0.7)),
    ("exponential_", lambda m: m.zeros(19).exponential_()),
    ("exponential_f64_t", lambda m: m.zeros(4, 3, dtype=m.float64).t().exponential_(2.5)),
    ("exponential_half", lambda m: m.zeros(9, dtype=m.float16).exponential_(0.5)),
    ("multinomial", lambda m: m.multinomial(m.linspace(0, 1, 9) ** 2, 4)),
    ("multinomial_one", lambda m: m.multinomial(m.arange(12.0).reshape(3, 4), 1)),
    ("multinomial_rep", lambda m: m.rand(3, 5).multinomial(20, replacement=True)),
    ("multinomial_rep_f64", lambda m: m.multinomial(m.rand(6, dtype=m.float64), 9, True)),
    ("multinomial_rep_bf16", lambda m: m.multinomial(m.rand(2, 7, dtype=m.bfloat16), 5, True)),
    ("multinomial_t", lambda m: m.multinomial(m.rand(5, 3).t(), 2)),
    ("multinomial_out", lambda m: m.multinomial(m.rand(4), 2, out=m.zeros(7, dtype=m.int64))),
]


APPROXIMATE = {"randn", "normal_ft", "normal_"}


@requires_torch
@pytest.mark.parametrize("name", [c[0] for c in CALLS])
def test_same_seed_same_numbers_as_torch(name):
    f = dict(CALLS)[name]
    torch.manual_seed(1234)
    want = f(torch)
    ratten.manual_seed(1234)
    got = f(ratten)
    assert str(got.dtype).split(".")[-1] == str(want.dtype).split(".")[-1]
    if name in APPROXIMATE:
        # torch's vectorised Box-Muller (16 float32 values at a time) uses its own log and
        # sincos approximations: the last bit may differ from libm's.
        assert torch.allclose(torch.tensor(got.tolist()), want, rtol=1e-6, atol=1e-6)
    else:
        assert got.tolist() == want.tolist()
    # The generator state advanced alike: the next draw agrees too.
    assert ratten.rand(3).tolist() == torch.rand(3).tolist()
