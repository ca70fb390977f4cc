"""igamma / igammac (special.gammainc / gammaincc; flambeau_core/_igamma.py) against PyTorch 2.13 where
PyTorch is accurate, against mpmath (arbitrary precision, installed with torch) everywhere, the edges of
the domain, dtypes and errors.

PyTorch switches to Temme's asymptotic expansion for a > 20 near x = a and is off there by about 2e-9
relative (mpmath says so); flambeau's series and continued fraction agree with mpmath to 1e-11 up to a = 1e4.
"""

from __future__ import annotations

import flambeau_core as fc
import mpmath
import numpy as np
import pytest
import torch
from helpers import to_numpy

RNG = np.random.default_rng(43)


def points(lo, hi, n):
    a = RNG.uniform(lo, hi, n)
    x = a * RNG.uniform(0.05, 3.0, n)
    x[: n // 5] = RNG.uniform(0, 2 * hi, n // 5)
    return np.asarray(a), np.asarray(x)


@pytest.mark.parametrize(("name", "theirs"), [("igamma", torch.igamma), ("igammac", torch.igammac)])
@pytest.mark.parametrize(("lo", "hi"), [(0.01, 1.0), (0.5, 20.0)])
def test_matches_torch_where_torch_is_exact(name, theirs, lo, hi):
    a, x = points(lo, hi, 2000)
    got = to_numpy(getattr(fc, name)(fc.tensor(a), fc.tensor(x)))
    expected = theirs(torch.from_numpy(a), torch.from_numpy(x)).numpy()
    np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-300)


@pytest.mark.parametrize("lower", [True, False])
@pytest.mark.parametrize(("lo", "hi"), [(0.01, 2.0), (1.0, 60.0), (20.0, 1000.0)])
def test_matches_arbitrary_precision(lower, lo, hi):
    a, x = points(lo, hi, 40)
    got = to_numpy((fc.igamma if lower else fc.igammac)(fc.tensor(a), fc.tensor(x)))
    mpmath.mp.dps = 30
    bounds = (lambda ai, xi: (0, xi)) if lower else (lambda ai, xi: (xi, mpmath.inf))
    exact = np.array(
        [float(mpmath.gammainc(ai, *bounds(ai, xi), regularized=True)) for ai, xi in zip(a, x, strict=True)]
    )
    np.testing.assert_allclose(got, exact, rtol=1e-10, atol=1e-300)


def test_upper_keeps_its_digits_for_tiny_a():
    # P is within 1e-6 of 1 here: 1 - P would keep few of Q's digits (PyTorch's is off by up to 7e-3).
    a, x = 10 ** RNG.uniform(-14, -1, 60), 10 ** RNG.uniform(-6, 0.04, 60)
    got = to_numpy(fc.igammac(fc.tensor(a), fc.tensor(x)))
    mpmath.mp.dps = 40
    exact = np.array(
        [float(mpmath.gammainc(ai, xi, mpmath.inf, regularized=True)) for ai, xi in zip(a, x, strict=True)]
    )
    np.testing.assert_allclose(got, exact, rtol=1e-12)


def test_edges_match_torch():
    inf, nan = float("inf"), float("nan")
    a = np.array([-1.0, 0, 0, 0, inf, inf, 2, 2, nan, 2, 1, 3, 0, 5])
    x = np.array([1.0, 0, 1, -1, 1, inf, inf, -1, 1, nan, 0, 1e-320, inf, 1e-3])
    for name in ("igamma", "igammac"):
        got = to_numpy(getattr(fc, name)(fc.tensor(a), fc.tensor(x)))
        expected = getattr(torch, name)(torch.from_numpy(a), torch.from_numpy(x)).numpy()
        np.testing.assert_allclose(got, expected, rtol=1e-12, atol=0, equal_nan=True)


def test_dtypes_broadcasting_methods_and_aliases():
    a, x = np.array([[0.5], [2.0], [7.0]]), np.array([0.3, 1.0, 4.0, 9.0])
    expected = torch.igamma(torch.from_numpy(a).float(), torch.from_numpy(x).float())
    got = fc.igamma(fc.tensor(a).float(), fc.tensor(x).float())
    assert got.dtype == fc.float32 and tuple(got.shape) == (3, 4)
    np.testing.assert_allclose(to_numpy(got), expected.numpy(), rtol=1e-6)
    assert fc.igamma(fc.tensor([2.0]), fc.tensor([1.0], dtype=fc.float64)).dtype == fc.float64
    assert fc.special.gammainc is fc.igamma and fc.special.gammaincc is fc.igammac
    t = fc.tensor(a).expand(3, 4).contiguous()
    np.testing.assert_allclose(to_numpy(t.igammac(fc.tensor(x))), 1 - to_numpy(fc.igamma(t, fc.tensor(x))), atol=1e-15)
    assert t.igamma_(fc.tensor(x)) is t
    np.testing.assert_allclose(to_numpy(t), torch.igamma(torch.from_numpy(a), torch.from_numpy(x)).numpy(), rtol=1e-12)
    out = fc.empty(3, 4, dtype=fc.float64)
    assert fc.igammac(fc.tensor(a), fc.tensor(x), out=out) is out


def test_errors():
    with pytest.raises(
        TypeError, match=r"\[igamma\] expected floating point inputs, got flambeau.int64 and flambeau.int64"
    ):
        fc.igamma(fc.tensor([1, 2]), fc.tensor([1, 2]))
    with pytest.raises(fc.FlambeauError, match=r"\[igammac\] shapes \(2,\) and \(3,\) cannot be broadcast"):
        fc.igammac(fc.ones(2), fc.ones(3))
    with pytest.raises(TypeError, match=r"\[igamma\] expected a Tensor as 'other'"):
        fc.igamma(fc.ones(2), 1.0)
