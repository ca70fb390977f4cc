"""The in-place samplers Tensor.exponential_ / geometric_ / cauchy_ / log_normal_ and randint_like: each
sample checked against its distribution's formula (Kolmogorov-Smirnov against the CDF for the continuous
laws, the probabilities and moments for the discrete ones), seeded generators reproducible, dtypes and
errors as PyTorch 2.13's. Draws are PyTorch's in distribution, not in value."""

from __future__ import annotations

import math

import flambeau_core as fc
import numpy as np
import pytest
import torch
from helpers import to_numpy

pytestmark = pytest.mark.on_devices

N = 20000
KS_LIMIT = 1.95 / math.sqrt(N)  # the Kolmogorov distribution's 0.1 % point


def ks_distance(samples: np.ndarray, cdf) -> float:
    x = np.sort(samples.astype(np.float64))
    f = cdf(x)
    i = np.arange(1, len(x) + 1)
    return float(max(np.max(i / len(x) - f), np.max(f - (i - 1) / len(x))))


def generator(seed: int = 1234):
    return fc.Generator().manual_seed(seed)


def normal_cdf(z):
    return 0.5 * (1 + np.vectorize(math.erf)(z / math.sqrt(2)))


CONTINUOUS = [
    ("exponential_", (0.5,), lambda x: 1 - np.exp(-0.5 * x)),
    ("exponential_", (), lambda x: 1 - np.exp(-x)),
    ("cauchy_", (2.0, 0.5), lambda x: 0.5 + np.arctan((x - 2.0) / 0.5) / math.pi),
    ("cauchy_", (), lambda x: 0.5 + np.arctan(x) / math.pi),
    ("log_normal_", (0.5, 0.25), lambda x: normal_cdf((np.log(x) - 0.5) / 0.25)),
    ("log_normal_", (), lambda x: normal_cdf((np.log(x) - 1.0) / 2.0)),
]


@pytest.mark.parametrize(("name", "args", "cdf"), CONTINUOUS, ids=[f"{c[0]}{c[1]}" for c in CONTINUOUS])
@pytest.mark.parametrize("dtype", [fc.float32, fc.float64])
def test_continuous_laws_follow_their_cdf(name, args, cdf, dtype):
    x = fc.empty(N, dtype=dtype)
    result = getattr(x, name)(*args, generator=generator())
    assert result is x and x.dtype == dtype
    samples = to_numpy(x)
    assert np.isfinite(samples).all()
    assert ks_distance(samples, cdf) < KS_LIMIT


@pytest.mark.parametrize("dtype", [fc.float16, fc.bfloat16])
def test_half_precision_draws(dtype):
    x = fc.empty(N, dtype=dtype).exponential_(2.0, generator=generator())
    assert x.dtype == dtype
    samples = to_numpy(x.float())
    assert samples.min() >= 0 and abs(samples.mean() - 0.5) < 0.02


def test_exponential_of_an_infinite_rate_is_zero():
    assert fc.empty(5).exponential_(math.inf).tolist() == torch.empty(5).exponential_(math.inf).tolist() == [0.0] * 5


@pytest.mark.parametrize("p", [0.5, 0.2, 0.9])
@pytest.mark.parametrize("dtype", [fc.float32, fc.float64, fc.int64, fc.int32])
def test_geometric_probabilities(p, dtype):
    x = fc.empty(N, dtype=dtype).geometric_(p, generator=generator(7))
    assert x.dtype == dtype
    k = to_numpy(x).astype(np.int64)
    assert k.min() >= 1 and np.all(to_numpy(x) == k)
    for value in range(1, 5):  # P(k) = (1 - p)**(k - 1) * p, within 4 standard errors
        expected = (1 - p) ** (value - 1) * p
        assert abs(np.mean(k == value) - expected) < 4 * math.sqrt(expected * (1 - expected) / N)
    mean, var = 1 / p, (1 - p) / p**2
    assert abs(k.mean() - mean) < 4 * math.sqrt(var / N)


def test_geometric_of_a_tiny_p_keeps_its_tail():
    x = fc.empty(N, dtype=fc.float64).geometric_(1e-12, generator=generator())
    mean = to_numpy(x).mean()
    assert 0.9e12 < mean < 1.1e12


def test_seeded_generators_repeat():
    for name, args in [("exponential_", ()), ("geometric_", (0.3,)), ("cauchy_", ()), ("log_normal_", ())]:
        a = getattr(fc.empty(100), name)(*args, generator=generator(5))
        b = getattr(fc.empty(100), name)(*args, generator=generator(5))
        c = getattr(fc.empty(100), name)(*args, generator=generator(6))
        assert a.tolist() == b.tolist() != c.tolist()


def test_a_non_contiguous_tensor_is_filled_in_place():
    base = fc.zeros(4, 6)
    view = base[:, ::2]
    assert view.exponential_(generator=generator()) is view
    assert (to_numpy(base)[:, ::2] > 0).all() and (to_numpy(base)[:, 1::2] == 0).all()


ERRORS = [
    (
        lambda: fc.empty(3).exponential_(0),
        "exponential_ expects lambda > 0.0",
        fc.FlambeauError,
        r"^\[exponential_\] expects lambda > 0.0, but found lambda=0",
    ),
    (
        lambda: fc.empty(3).exponential_(-1),
        "exponential_ expects lambda > 0.0",
        fc.FlambeauError,
        r"^\[exponential_\] expects lambda > 0.0, but found lambda=-1",
    ),
    (
        lambda: fc.empty(3, dtype=fc.int64).exponential_(),
        "continuous probability distribution",
        TypeError,
        r"^\[exponential_\] the exponential distribution is continuous: expected a floating-point tensor, "
        r"got dtype int64",
    ),
    (
        lambda: fc.empty(3).geometric_(0),
        "geometric_ expects p to be in \\(0, 1\\)",
        fc.FlambeauError,
        r"^\[geometric_\] expects p to be in \(0, 1\), but got p=0",
    ),
    (
        lambda: fc.empty(3).geometric_(1.5),
        "geometric_ expects p to be in \\(0, 1\\)",
        fc.FlambeauError,
        r"^\[geometric_\] expects p to be in \(0, 1\), but got p=1.5",
    ),
    (
        lambda: fc.empty(3, dtype=fc.bool).geometric_(0.5),
        "not implemented for 'Bool'",
        TypeError,
        r"^\[geometric_\] expected a real floating-point or integer tensor, got dtype bool",
    ),
    (
        lambda: fc.empty(3).cauchy_(0, 0),
        "cauchy_ expects sigma > 0.0",
        fc.FlambeauError,
        r"^\[cauchy_\] expects sigma > 0.0, but found sigma=0",
    ),
    (
        lambda: fc.empty(3, dtype=fc.complex64).cauchy_(),
        "continuous probability distribution",
        TypeError,
        r"^\[cauchy_\] the Cauchy distribution is continuous",
    ),
    (
        lambda: fc.empty(3).log_normal_(0, -1),
        "log_normal_ expects std > 0.0",
        fc.FlambeauError,
        r"^\[log_normal_\] expects std > 0.0, but found std=-1",
    ),
    (
        lambda: fc.empty(3, dtype=fc.int64).log_normal_(),
        "not implemented for 'Long'",
        TypeError,
        r"^\[log_normal_\] the log-normal distribution is continuous",
    ),
    (lambda: fc.empty(3).exponential_(math.nan), None, fc.FlambeauError, r"^\[exponential_\] expects lambda > 0.0"),
    (lambda: fc.empty(3).geometric_("a"), None, TypeError, r"^\[geometric_\] expected a real number p, got str"),
]


@pytest.mark.parametrize(("call", "torch_message", "error", "message"), ERRORS, ids=[e[3] for e in ERRORS])
def test_sampler_errors(call, torch_message, error, message):
    with pytest.raises(error, match=message):
        call()


def test_torch_raises_these_errors_too():
    for call, message in [
        (lambda: torch.empty(3).exponential_(0), "exponential_ expects lambda > 0.0"),
        (lambda: torch.empty(3, dtype=torch.int64).exponential_(), "continuous probability distribution"),
        (lambda: torch.empty(3).geometric_(1.5), r"geometric_ expects p to be in \(0, 1\)"),
        (lambda: torch.empty(3).cauchy_(0, 0), "cauchy_ expects sigma > 0.0"),
        (lambda: torch.empty(3).log_normal_(0, -1), "log_normal_ expects std > 0.0"),
    ]:
        with pytest.raises(RuntimeError, match=message):
            call()


# ---- randint_like ----


@pytest.mark.parametrize(
    ("source", "args", "kwargs", "low", "high"),
    [
        (fc.float32, (10,), {}, 0, 10),
        (fc.float32, (3, 10), {}, 3, 10),
        (fc.float64, (), {"low": -4, "high": 4}, -4, 4),
        (fc.int32, (), {"high": 7}, 0, 7),
        (fc.int64, (-3,), {"high": 3}, -3, 3),
        (fc.uint8, (200, 256), {}, 200, 256),
        (fc.bool, (2,), {}, 0, 2),
    ],
)
def test_randint_like(source, args, kwargs, low, high):
    x = fc.zeros(40, 50, dtype=source)
    r = fc.randint_like(x, *args, **kwargs, generator=generator())
    tname = str(source).split(".")[-1]
    theirs = torch.randint_like(torch.zeros(40, 50, dtype=getattr(torch, tname)), *args, **kwargs)
    assert r.shape == (40, 50) and r.dtype == source and str(theirs.dtype).split(".")[-1] == tname
    values = to_numpy(r).astype(np.int64)
    assert values.min() >= low and values.max() < high
    counts = np.bincount(values.ravel() - low, minlength=high - low)
    expected = values.size / (high - low)  # uniform: each count within 5 standard errors
    assert np.all(np.abs(counts - expected) < 5 * math.sqrt(expected) + 1)


def test_randint_like_options():
    x = fc.zeros(2, 3).t()
    r = fc.randint_like(x, 5)
    assert r.stride() == torch.randint_like(torch.zeros(2, 3).t(), 5).stride()  # preserve_format
    assert fc.randint_like(fc.zeros(2, 3), 5, dtype=fc.int64).dtype == fc.int64
    assert fc.randint_like(fc.zeros(2), fc.tensor(5)).dtype == fc.float32
    a = fc.randint_like(fc.zeros(50), 100, generator=generator(3))
    b = fc.randint_like(fc.zeros(50), 100, generator=generator(3))
    assert a.tolist() == b.tolist()


def test_randint_like_errors():
    x = fc.zeros(2, 3)
    with pytest.raises(RuntimeError, match="random_ expects 'from' to be less than 'to'"):
        torch.randint_like(torch.zeros(2), 5, 3)
    with pytest.raises(
        fc.FlambeauError, match=r"^\[randint_like\] expects 'from' to be less than 'to', but got from=5"
    ):
        fc.randint_like(x, 5, 3)
    with pytest.raises(
        fc.FlambeauError, match=r"^\[randint_like\] expects 'from' to be less than 'to'.* from=0 >= to=0"
    ):
        fc.randint_like(x, 0)
    with pytest.raises(fc.FlambeauError, match=r"^\[randint_like\] the range \[0, 300\) does not fit dtype uint8"):
        fc.randint_like(fc.zeros(2, dtype=fc.uint8), 300)
    with pytest.raises(TypeError, match=r"^\[randint_like\] missing the upper bound 'high'"):
        fc.randint_like(x)
    with pytest.raises(TypeError, match=r"^\[randint_like\] expected 'high' as an int, got float"):
        fc.randint_like(x, 2.5)
    with pytest.raises(TypeError, match=r"^\[randint_like\] expected randint_like\(input, high\)"):
        fc.randint_like(x, 1, 2, 3)


# ---- random_ ----


@pytest.mark.parametrize(
    "dtype, args, kwargs",
    [
        ("float32", (3, 7), {}),
        ("float64", (5,), {}),
        ("int8", (-10, 10), {}),
        ("uint8", (250, 256), {}),
        ("int32", (-(2**31), -(2**31) + 3), {}),
        ("int64", (), {"to": 4}),
        ("float32", (2,), {"to": 5}),
        ("int16", (), {"from": -3, "to": 0}),
        ("bool", (0, 2), {}),
        ("float16", (-2048, -2045), {}),
        ("bfloat16", (0, 3), {}),
    ],
)
def test_random_bounded_ranges_match_torch(dtype, args, kwargs):
    ours = fc.empty(4000, dtype=getattr(fc, dtype)).random_(*args, generator=generator(), **kwargs)
    theirs = torch.empty(4000, dtype=getattr(torch, dtype)).random_(*args, **kwargs)
    assert ours.dtype == getattr(fc, dtype)
    # every value of a small range is drawn, uniformly: the same set of values as torch's
    assert sorted(set(ours.tolist())) == sorted(set(theirs.tolist()))
    counts = np.unique(to_numpy(ours.to(fc.float64)), return_counts=True)[1]
    assert counts.min() > 0.7 * counts.mean()


@pytest.mark.parametrize(
    "dtype, low, top",
    [
        ("float32", 0, 2**24),
        ("float64", 0, 2**53),
        ("float16", 0, 2**11),
        ("bfloat16", 0, 2**8),
        ("int8", 0, 127),
        ("uint8", 0, 255),
        ("int32", 0, 2**31 - 1),
        ("int64", 0, 2**63 - 1),
        ("bool", 0, 1),
    ],
)
def test_random_default_range_per_dtype(dtype, low, top):
    """random_() draws from [0, the dtype's top]: a sample spans most of it and never leaves it."""
    x = to_numpy(fc.empty(4000, dtype=getattr(fc, dtype)).random_(generator=generator()).to(fc.float64))
    assert x.min() >= low and x.max() <= top and x.max() > 0.9 * top
    # random_(from, None) ends at the same top
    t = torch.empty(4000, dtype=getattr(torch, dtype)).random_(low, None).to(torch.float64).numpy()
    assert t.max() <= top
    y = to_numpy(fc.empty(4000, dtype=getattr(fc, dtype)).random_(low, None, generator=generator()).to(fc.float64))
    assert y.min() >= low and y.max() <= top and y.max() > 0.9 * top


def test_random_fills_in_place_and_repeats_with_a_seed():
    base = fc.zeros(4, 6)
    view = base[:, ::2]
    assert view.random_(1, 3, generator=generator(3)) is view
    assert set(base[:, ::2].reshape(-1).tolist()) <= {1.0, 2.0} and base[:, 1::2].abs().sum().item() == 0
    a = fc.empty(50).random_(100, generator=generator(8)).tolist()
    assert a == fc.empty(50).random_(100, generator=generator(8)).tolist()


@pytest.mark.parametrize(
    "dtype, args, kwargs, error, message",
    [
        ("float32", (5, 3), {}, fc.FlambeauError, "expects 'from' to be less than 'to', but got from=5 >= to=3"),
        ("int8", (0,), {}, fc.FlambeauError, "expects 'from' to be less than 'to', but got from=0 >= to=0"),
        ("uint8", (0, 300), {}, fc.FlambeauError, "to - 1 is out of bounds for uint8"),
        ("uint8", (-1, 3), {}, fc.FlambeauError, "from is out of bounds for uint8"),
        ("bool", (0, 3), {}, fc.FlambeauError, "to - 1 is out of bounds for bool"),
        ("float16", (0, 70000), {}, fc.FlambeauError, "to - 1 is out of bounds for float16"),
        ("float32", (1.5,), {}, TypeError, "expected an int 'to', got float"),
        ("float32", (), {"from": 2}, TypeError, "expected 'to' with 'from'"),
        ("float32", (1, 2, 3), {}, TypeError, "expected random_"),
        ("complex64", (), {}, TypeError, "expected a real floating-point, integer or bool tensor"),
    ],
)
def test_random_errors_match_torch(dtype, args, kwargs, error, message):
    with pytest.raises((RuntimeError, TypeError, NotImplementedError)):
        torch.empty(3, dtype=getattr(torch, dtype)).random_(*args, **kwargs)
    with pytest.raises(error, match=r"\[random_\] " + message.replace("(", r"\(")):
        fc.empty(3, dtype=getattr(fc, dtype)).random_(*args, **kwargs)
