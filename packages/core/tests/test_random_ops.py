"""Random factories and fills (randint, randperm, normal, bernoulli, random_
through them, uniform_, normal_): PyTorch's signatures, dtypes and errors,
reproducibility with a seeded Generator, and sample statistics (fixed seeds,
so the tolerances are exact facts about these draws, not flaky bounds)."""

from __future__ import annotations

import flambeau_core as fc
import numpy as np
import pytest
import torch

pytestmark = pytest.mark.on_devices

N = 200_000


def gen(seed=1234):
    g = fc.Generator()
    g.manual_seed(seed)
    return g


def test_randint_forms_dtypes_and_range():
    t = fc.randint(3, (4, 5), generator=gen())
    assert t.shape == (4, 5) and t.dtype == fc.int64
    assert torch.randint(3, (4, 5)).dtype == torch.int64
    a = np.array(fc.randint(-2, 5, (N,), generator=gen()).tolist())
    assert a.min() == -2 and a.max() == 4
    np.testing.assert_allclose(np.bincount(a + 2) / N, np.full(7, 1 / 7), atol=0.005)
    for dt in (fc.int32, fc.uint8, fc.float32, fc.float64):
        x = fc.randint(1, 7, (100,), dtype=dt, generator=gen())
        assert x.dtype == dt and set(x.tolist()) <= {1.0, 2.0, 3.0, 4.0, 5.0, 6.0}
    assert fc.randint(5, (0, 3)).shape == (0, 3)
    assert fc.randint(5, ()).shape == ()
    assert fc.randint(2, (3,), requires_grad=False).requires_grad is False
    # a seeded generator reproduces its draws; the default generator follows manual_seed
    assert fc.randint(100, (10,), generator=gen(7)).tolist() == fc.randint(100, (10,), generator=gen(7)).tolist()
    fc.manual_seed(3)
    first = fc.randint(1000, (8,)).tolist()
    fc.manual_seed(3)
    assert fc.randint(1000, (8,)).tolist() == first


def test_randint_errors():
    with pytest.raises(RuntimeError, match="expects 'from' to be less than 'to', but got from=5 >= to=3"):
        torch.randint(5, 3, (2,))
    with pytest.raises(ValueError, match=r"\[randint\] expects 'from' to be less than 'to', but got from=5 >= to=3"):
        fc.randint(5, 3, (2,))
    with pytest.raises(ValueError, match="from=0 >= to=0"):
        fc.randint(0, (2,))
    with pytest.raises(ValueError, match=r"\[random_\] the range \[0, 300\) does not fit dtype uint8"):
        fc.randint(300, (2,), dtype=fc.uint8)


def test_randperm():
    for n in (0, 1, 2, 10, 1000):
        p = fc.randperm(n, generator=gen(n))
        assert p.dtype == fc.int64 and p.shape == (n,)
        assert sorted(p.tolist()) == list(range(n))
    assert fc.randperm(1000, generator=gen(1)).tolist() != list(range(1000))
    assert fc.randperm(50, generator=gen(5)).tolist() == fc.randperm(50, generator=gen(5)).tolist()
    f = fc.randperm(5, dtype=fc.float32)
    assert f.dtype == fc.float32 and torch.randperm(5, dtype=torch.float32).dtype == torch.float32
    assert sorted(f.tolist()) == [0.0, 1.0, 2.0, 3.0, 4.0]
    # every position is uniform: the first element over many permutations
    g = gen(11)
    firsts = np.array([fc.randperm(4, generator=g)[0].item() for _ in range(4000)])
    np.testing.assert_allclose(np.bincount(firsts) / 4000, np.full(4, 0.25), atol=0.03)
    with pytest.raises(RuntimeError, match="negative dimension -1"):
        torch.randperm(-1)
    with pytest.raises(ValueError, match=r"\[randperm\] n must be non-negative, got -1"):
        fc.randperm(-1)


def test_normal_forms():
    a = fc.normal(2.0, 3.0, (N,), generator=gen())
    assert a.dtype == fc.float32 and a.shape == (N,)
    x = np.array(a.tolist())
    assert abs(x.mean() - 2.0) < 0.03 and abs(x.std() - 3.0) < 0.03
    assert fc.normal(0.0, 1.0, (2, 3), dtype=fc.float64).dtype == fc.float64
    # tensor mean and/or std, broadcast together; the dtype follows the tensors
    mean = fc.tensor([[0.0], [10.0]], dtype=fc.float64)
    std = fc.tensor([1.0, 0.0, 2.0])
    t = fc.normal(mean, std, generator=gen())
    th = torch.normal(torch.tensor([[0.0], [10.0]], dtype=torch.float64), torch.tensor([1.0, 0.0, 2.0]))
    assert t.shape == tuple(th.shape) and t.dtype == fc.float64 and th.dtype == torch.float64
    assert t[:, 1].tolist() == [0.0, 10.0]  # std 0: exactly the mean
    assert fc.normal(fc.zeros(3), 1.0).dtype == fc.float32 == fc.normal(fc.zeros(3)).dtype
    assert fc.normal(1.0, fc.ones(3, dtype=fc.float64)).dtype == fc.float64
    big = np.array(fc.normal(fc.full((N,), 5.0), 0.5, generator=gen(2)).tolist())
    assert abs(big.mean() - 5.0) < 0.01 and abs(big.std() - 0.5) < 0.01
    with pytest.raises(RuntimeError, match="normal expects all elements of std >= 0.0"):
        torch.normal(torch.zeros(2), -torch.ones(2))
    with pytest.raises(ValueError, match=r"\[normal\] expects all elements of std >= 0"):
        fc.normal(fc.zeros(2), -fc.ones(2))
    with pytest.raises(ValueError, match=r"\[normal_\] expects std >= 0, got -1"):
        fc.normal(0.0, -1.0, (2,))
    with pytest.raises(NotImplementedError):
        torch.normal(torch.zeros(2, dtype=torch.int64), torch.ones(2, dtype=torch.int64))
    with pytest.raises(TypeError, match=r"\[normal\] expected floating point mean and std"):
        fc.normal(fc.zeros(2, dtype=fc.int64), fc.ones(2, dtype=fc.int64))


def test_bernoulli():
    p = fc.tensor([0.0, 1.0, 0.25])
    g = gen(1)
    draws = np.array([fc.bernoulli(p, generator=g).tolist() for _ in range(4000)])
    assert (draws[:, 0] == 0).all() and (draws[:, 1] == 1).all()
    assert abs(draws[:, 2].mean() - 0.25) < 0.02
    assert fc.bernoulli(p).dtype == fc.float32
    assert fc.bernoulli(p.double()).dtype == fc.float64
    x = np.array(fc.bernoulli(fc.zeros(N), 0.3, generator=gen()).tolist())
    assert set(np.unique(x)) <= {0.0, 1.0} and abs(x.mean() - 0.3) < 0.005
    # in-place, on any dtype, with a number or a broadcast tensor p
    i = fc.zeros(N, dtype=fc.int64).bernoulli_(0.5, generator=gen())
    assert i.dtype == fc.int64 and abs(np.mean(i.tolist()) - 0.5) < 0.005
    b = fc.zeros(2, 3, dtype=fc.bool).bernoulli_(fc.tensor([0.0, 1.0, 1.0]))
    assert b.tolist() == [[False, True, True], [False, True, True]]
    assert torch.zeros(2, 3, dtype=torch.bool).bernoulli_(torch.tensor([0.0, 1.0, 1.0])).tolist() == b.tolist()
    with pytest.raises(RuntimeError, match=r"bernoulli_ expects p to be in \[0, 1\], but got p=1.5"):
        torch.zeros(2).bernoulli_(1.5)
    with pytest.raises(ValueError, match=r"\[bernoulli_\] expects p to be in \[0, 1\], but got p=1.5"):
        fc.zeros(2).bernoulli_(1.5)
    with pytest.raises(RuntimeError):
        torch.bernoulli(torch.tensor([0.5, 2.0]))
    with pytest.raises(ValueError, match=r"\[bernoulli_\] expects all elements of p to be in \[0, 1\], got 2"):
        fc.bernoulli(fc.tensor([0.5, 2.0]))
    with pytest.raises(TypeError, match=r"\[bernoulli_\] expects a floating point probability tensor"):
        fc.bernoulli(fc.tensor([1, 0]))


def test_uniform_and_normal_fills_keep_working():
    u = np.array(fc.empty(N).uniform_(2.0, 3.0, generator=gen()).tolist())
    assert u.min() >= 2.0 and u.max() < 3.0 and abs(u.mean() - 2.5) < 0.005
    n = np.array(fc.empty(N, dtype=fc.float64).normal_(1.0, 2.0, generator=gen()).tolist())
    assert abs(n.mean() - 1.0) < 0.02 and abs(n.std() - 2.0) < 0.02
    # non-contiguous targets are filled in place
    t = fc.zeros(4, 6)
    t.t().uniform_(5.0, 6.0)
    assert min(t.view(-1).tolist()) >= 5.0


def test_seeds_take_pytorchs_range_and_reject_others():
    for seed in (0, 2**64 - 1, -1, -(2**63), 2**40):
        g = fc.Generator(seed=seed)
        torch.manual_seed(seed)
        assert g.initial_seed() == torch.initial_seed() == fc.Generator().manual_seed(seed).initial_seed()
        fc.manual_seed(seed)
        assert fc.initial_seed() == torch.initial_seed()
    for bad in (2**64, -(2**63) - 1):
        with pytest.raises(RuntimeError, match=r"\[manual_seed\] seed .* is out of range \[-2\*\*63, 2\*\*64 - 1\]"):
            fc.manual_seed(bad)
        with pytest.raises(RuntimeError, match=r"\[Generator\] seed"):
            fc.Generator(seed=bad)
    with pytest.raises(TypeError, match=r"\[manual_seed\] seed must be an int, got float"):
        fc.manual_seed(1.5)
    fc.manual_seed(0)


def test_narrow_rejects_huge_ints_with_a_message():
    x = fc.zeros(4)
    with pytest.raises(RuntimeError, match=r"\[narrow\] start 73786976294838206464 does not fit in int64"):
        x.narrow(0, 2**66, 1)
    assert fc.narrow(x, 0, 1, 2).shape == (2,)
