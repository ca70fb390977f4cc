"""The rejection samplers of src/cpu/random/distributions.cpp (_standard_gamma, poisson, binomial), the
composite _sample_dirichlet and the reparameterised gradient _standard_gamma_grad: Kolmogorov-Smirnov
distances to the exact CDFs (PyTorch's gammainc / gammaincc, exact binomial sums), moments, the
gradient against mpmath's derivative of the incomplete gamma function, determinism under a seed, and
the errors.

Thresholds: the KS distance of n samples from their own distribution exceeds 1.95 / sqrt(n) with
probability 0.001; a sampler off by a few percent anywhere exceeds it many times over. The seeds are
fixed, so each check is one reproducible draw."""

from __future__ import annotations

import math

import flambeau_core as fc
import mpmath
import numpy as np
import pytest
import torch
from helpers import to_numpy

pytestmark = pytest.mark.on_devices(not_on_cuda="the samplers have CPU kernels only")

N = 20000
KS_LIMIT = 1.95 / math.sqrt(N)


def ks_continuous(samples: np.ndarray, cdf) -> float:
    x = np.sort(samples)
    f = cdf(x)
    i = np.arange(1, len(x) + 1)
    return float(max(np.max(i / len(x) - f), np.max(f - (i - 1) / len(x))))


def ks_discrete(samples: np.ndarray, cdf_at) -> float:
    """sup_k |ECDF(k) - CDF(k)| over the integers k up to the largest sample (exact for a discrete law)."""
    ks = np.arange(0, int(samples.max()) + 2)
    ecdf = np.searchsorted(np.sort(samples), ks, side="right") / len(samples)
    return float(np.max(np.abs(ecdf - cdf_at(ks))))


@pytest.mark.parametrize("alpha", [0.05, 0.4, 1.0, 2.5, 30.0, 5000.0])
@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_standard_gamma_distribution(alpha, dtype):
    fc.manual_seed(1234)
    x = fc._standard_gamma(fc.full((N,), alpha, dtype=getattr(fc, dtype)))
    assert x.dtype == getattr(fc, dtype) and tuple(x.shape) == (N,)
    s = to_numpy(x).astype(np.float64)
    assert s.min() > 0
    d = ks_continuous(
        s, lambda v: torch.special.gammainc(torch.tensor(alpha, dtype=torch.float64), torch.tensor(v)).numpy()
    )
    assert d < KS_LIMIT, d
    # mean alpha, variance alpha, within 5 standard errors
    assert abs(s.mean() - alpha) < 5 * math.sqrt(alpha / N)
    assert abs(s.var() - alpha) < 5 * math.sqrt((6 * alpha + 2 * alpha**2) / N)


def test_standard_gamma_broadcast_shapes_and_determinism():
    alpha = fc.tensor([[0.5, 2.0, 7.0]] * 4, dtype=fc.float64).t()  # non-contiguous
    fc.manual_seed(5)
    a = fc._standard_gamma(alpha)
    fc.manual_seed(5)
    b = fc._standard_gamma(alpha)
    assert tuple(a.shape) == (3, 4)
    np.testing.assert_array_equal(to_numpy(a), to_numpy(b))
    c = fc._standard_gamma(alpha)
    assert not np.array_equal(to_numpy(a), to_numpy(c))
    # PyTorch's floor: no sample below the smallest normal number; invalid concentrations give it too
    tiny = fc._standard_gamma(fc.tensor([1e-4] * 1000 + [0.0, -1.0, math.nan]))
    t = to_numpy(tiny)
    assert t.min() >= np.finfo(np.float32).tiny
    np.testing.assert_array_equal(t[-3:], np.full(3, np.finfo(np.float32).tiny))
    np.testing.assert_array_equal(t[-3:], torch._standard_gamma(torch.tensor([0.0, -1.0, math.nan])).numpy())


def test_standard_gamma_errors():
    with pytest.raises(NotImplementedError):
        torch._standard_gamma(torch.tensor([1, 2]))
    with pytest.raises(
        TypeError, match=r"\[_standard_gamma\] expected a floating point concentration, got dtype int64"
    ):
        fc._standard_gamma(fc.tensor([1, 2]))


def mp_gamma_grad(alpha: float, x: float) -> float:
    """dx/dalpha at fixed P(alpha, x): -(dP/dalpha) / (dP/dx), at 30 digits (a local precision: the
    global mpmath.mp.dps belongs to whichever test module set it, e.g. test_special's 40)."""
    with mpmath.workdps(30):
        a, v = mpmath.mpf(alpha), mpmath.mpf(x)
        if v < a:
            dp_da = mpmath.diff(lambda s: mpmath.gammainc(s, 0, v, regularized=True), a)
        else:  # the upper tail: differentiate Q = 1 - P, which keeps its digits there
            dp_da = -mpmath.diff(lambda s: mpmath.gammainc(s, v, mpmath.inf, regularized=True), a)
        density = mpmath.exp((a - 1) * mpmath.log(v) - v - mpmath.loggamma(a))
        return float(-dp_da / density)


def test_standard_gamma_grad_against_mpmath_and_torch():
    rng = np.random.default_rng(3)
    alphas = np.concatenate([[0.01, 0.3, 1.0, 3.0, 12.0, 80.0, 400.0], rng.uniform(0.1, 20, 13)])
    # points across each distribution: small ones to far in the upper tail
    factors = np.array([0.01, 0.3, 0.8, 1.0, 1.3, 2.0])
    a = np.repeat(alphas, len(factors))
    x = a * np.tile(factors, len(alphas)) + 0.05 * np.sqrt(a)
    got = to_numpy(fc._standard_gamma_grad(fc.tensor(a, dtype=fc.float64), fc.tensor(x, dtype=fc.float64)))
    want = np.array([mp_gamma_grad(al, v) for al, v in zip(a, x, strict=True)])
    np.testing.assert_allclose(got, want, rtol=1e-8, atol=1e-300)
    # PyTorch's is a fitted approximation: it agrees to its own accuracy
    th = torch._standard_gamma_grad(torch.tensor(a), torch.tensor(x)).numpy()
    np.testing.assert_allclose(got, th, rtol=2e-3)
    got32 = fc._standard_gamma_grad(fc.tensor(a, dtype=fc.float32), fc.tensor(x, dtype=fc.float32))
    assert got32.dtype == fc.float32


def test_sample_dirichlet():
    conc = np.array([0.3, 1.0, 2.5, 6.0])
    fc.manual_seed(2)
    x = to_numpy(fc._sample_dirichlet(fc.tensor(np.tile(conc, (N, 1)), dtype=fc.float64)))
    assert x.shape == (N, 4)
    np.testing.assert_allclose(x.sum(-1), 1.0, rtol=1e-12)
    total = conc.sum()
    mean = conc / total
    var = conc * (total - conc) / (total**2 * (total + 1))
    assert np.all(np.abs(x.mean(0) - mean) < 5 * np.sqrt(var / N))
    # each coordinate is Beta(a_i, total - a_i): KS of 2,000 of them against its CDF (mpmath's betainc)
    m = 2000
    for i in (0, 3):
        a, b = conc[i], total - conc[i]
        d = ks_continuous(
            x[:m, i],
            lambda v, a=a, b=b: np.array([float(mpmath.betainc(a, b, 0, float(t), regularized=True)) for t in v]),
        )
        assert d < 1.95 / math.sqrt(m), d
    with pytest.raises(ValueError, match=r"\[_sample_dirichlet\] expected at least a 1-D concentration"):
        fc._sample_dirichlet(fc.tensor(1.0))


@pytest.mark.parametrize("rate", [0.0, 0.3, 4.0, 9.99, 10.0, 37.5, 2500.0])
def test_poisson_distribution(rate):
    fc.manual_seed(7)
    r = fc.full((N,), rate, dtype=fc.float64)
    s = to_numpy(fc.poisson(r))
    assert np.all(s == np.floor(s)) and s.min() >= 0
    if rate == 0.0:
        assert np.all(s == 0)
        return
    d = ks_discrete(
        s, lambda k: torch.special.gammaincc(torch.tensor(k + 1.0), torch.tensor(rate, dtype=torch.float64)).numpy()
    )
    assert d < KS_LIMIT, d
    assert abs(s.mean() - rate) < 5 * math.sqrt(rate / N)
    assert abs(s.var() - rate) < 5 * math.sqrt((rate + 2 * rate**2) / N)


def test_poisson_dtypes_and_errors():
    x = fc.poisson(fc.tensor([[1.0, 20.0]]))
    assert x.dtype == fc.float32 and tuple(x.shape) == (1, 2)
    with pytest.raises(RuntimeError, match="invalid Poisson rate, expected rate to be non-negative"):
        torch.poisson(torch.tensor([-1.0]))
    with pytest.raises(
        ValueError, match=r"\[poisson\] invalid Poisson rate, expected rate to be finite and non-negative"
    ):
        fc.poisson(fc.tensor([1.0, -1.0]))
    with pytest.raises(TypeError, match=r"\[poisson\] expected a floating point rate, got dtype int64"):
        fc.poisson(fc.tensor([1, 2]))


def binomial_cdf(n: int, p: float):
    k = np.arange(0, n + 1)
    log_pmf = np.array([math.lgamma(n + 1) - math.lgamma(i + 1) - math.lgamma(n - i + 1) for i in k])
    with np.errstate(divide="ignore"):
        log_pmf = log_pmf + k * math.log(p) + (n - k) * math.log1p(-p)
    cdf = np.cumsum(np.exp(log_pmf))
    return lambda ks: cdf[np.minimum(ks, n)]


@pytest.mark.parametrize(
    ("n", "p"), [(1, 0.3), (10, 0.5), (40, 0.1), (40, 0.9), (100, 0.35), (5000, 0.002), (5000, 0.6)]
)
def test_binomial_distribution(n, p):
    fc.manual_seed(9)
    s = to_numpy(fc.binomial(fc.full((N,), float(n), dtype=fc.float64), fc.full((N,), p, dtype=fc.float64)))
    assert np.all(s == np.floor(s)) and s.min() >= 0 and s.max() <= n
    d = ks_discrete(s, binomial_cdf(n, p))
    assert d < KS_LIMIT, d
    var = n * p * (1 - p)
    assert abs(s.mean() - n * p) < 5 * math.sqrt(var / N)


def test_binomial_edges_broadcast_and_errors():
    count = fc.tensor([0.0, 5.0, 5.0, 7.0])
    prob = fc.tensor([[0.5, 0.0, 1.0, 0.5]])
    s = fc.binomial(count, prob.expand(3, 4))
    assert tuple(s.shape) == (3, 4) and s.dtype == fc.float32
    v = to_numpy(s)
    np.testing.assert_array_equal(v[:, :3], np.tile([0.0, 0.0, 5.0], (3, 1)))
    assert np.all((v[:, 3] >= 0) & (v[:, 3] <= 7))
    assert tuple(
        torch.binomial(torch.tensor([0.0, 5.0, 5.0, 7.0]), torch.tensor([[0.5, 0.0, 1.0, 0.5]]).expand(3, 4)).shape
    ) == (3, 4)
    with pytest.raises(TypeError, match=r"\[binomial\] expected count and prob of one dtype, got float32 and float64"):
        fc.binomial(fc.tensor([1.0]), fc.tensor([0.5], dtype=fc.float64))
    with pytest.raises(TypeError, match=r"\[binomial\] expected a floating point count, got dtype int64"):
        fc.binomial(fc.tensor([1]), fc.tensor([1]))
