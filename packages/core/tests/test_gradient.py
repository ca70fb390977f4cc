"""gradient (flambeau_core/_gradient.py) against PyTorch 2.13: uniform and coordinate spacing, both edge
orders, dim selections, dtypes, and the error paths."""

from __future__ import annotations

import flambeau_core as fc
import numpy as np
import pytest
import torch
from helpers import to_numpy

RNG = np.random.default_rng(11)


def coords(n):
    return np.cumsum(RNG.uniform(0.5, 2.0, n))


CASES = [
    ((7,), {}),
    ((5, 6), dict(edge_order=2)),
    ((5, 6), dict(spacing=2.5)),
    ((5, 6), dict(spacing=[2.0, 0.5], edge_order=2)),
    ((4, 5, 6), dict(dim=1, spacing=3)),
    ((4, 5, 6), dict(dim=[2, 0], spacing=[1.5, 2])),
    ((4, 5, 6), dict(dim=(-1,), spacing=("c6",))),
    ((5, 6), dict(spacing=("c5", "c6"), edge_order=2)),
    ((5, 6), dict(spacing=("c5", "c6"))),
    ((3, 3), dict(dim=0, spacing=("c3",), edge_order=2)),
    ((), {}),
]


def both(kwargs):
    """The kwargs for flambeau and for torch: a "cN" spacing is N random coordinates."""
    ours, theirs = dict(kwargs), dict(kwargs)
    if isinstance(kwargs.get("spacing"), tuple):
        arrays = [coords(int(s[1:])) for s in kwargs["spacing"]]
        ours["spacing"] = tuple(fc.tensor(a) for a in arrays)
        theirs["spacing"] = tuple(torch.from_numpy(a) for a in arrays)
    return ours, theirs


@pytest.mark.parametrize("dtype", ["float64", "float32", "int64"])
@pytest.mark.parametrize(("shape", "kwargs"), CASES)
def test_gradient_matches_torch(shape, kwargs, dtype):
    a = np.asarray((RNG.standard_normal(shape) * 10).astype(dtype))
    ours, theirs = both(kwargs)
    got, expected = fc.gradient(fc.tensor(a), **ours), torch.gradient(torch.from_numpy(a), **theirs)
    assert isinstance(got, tuple) and len(got) == len(expected)
    for g, e in zip(got, expected, strict=True):
        assert str(g.dtype).split(".")[-1] == str(e.dtype).split(".")[-1]
        assert tuple(g.shape) == tuple(e.shape)
        tol = 1e-12 if g.dtype == fc.float64 else 1e-5
        np.testing.assert_allclose(to_numpy(g), e.numpy(), rtol=tol, atol=tol)


def test_gradient_is_exact_for_quadratics_with_edge_order_2():
    x = np.sort(RNG.uniform(0, 5, 9))
    got = fc.gradient(fc.tensor(3 * x**2 - x), spacing=(fc.tensor(x),), edge_order=2)[0]
    np.testing.assert_allclose(to_numpy(got), 6 * x - 1, rtol=1e-10)


X = fc.zeros(3, 4)
ERRORS = [
    (dict(edge_order=3), fc.FlambeauError, r"\[gradient\] only supports edge_order=1 and edge_order=2"),
    (dict(spacing=[2.0]), fc.FlambeauError, r"\[gradient\] expected spacing to be unspecified, a scalar, or a list"),
    (dict(spacing=[2.0, 3.0], dim=1), fc.FlambeauError, r"\[gradient\] .* spacing argument of length 2 and a dim"),
    (dict(dim=2), IndexError, r"\[gradient\] Dimension out of range"),
    (dict(dim=(0, 0)), fc.FlambeauError, r"\[gradient\] dim 0 appears multiple times"),
    (dict(spacing=(fc.tensor(2.0),), dim=0), fc.FlambeauError, r"\[gradient\] expected each element of spacing"),
    (dict(spacing="a"), TypeError, r"\[gradient\] expected spacing to be a number"),
    (dict(dim=0.5), TypeError, r"\[gradient\] expected dim to be None"),
]


@pytest.mark.parametrize(("kwargs", "exc", "words"), ERRORS)
def test_gradient_errors(kwargs, exc, words):
    with pytest.raises(exc, match=words):
        fc.gradient(X, **kwargs)


def test_gradient_too_few_samples():
    with pytest.raises(
        fc.FlambeauError, match=r"\[gradient\] expected each dimension size to be at least edge_order\+1"
    ):
        fc.gradient(fc.zeros(1, 4))
    with pytest.raises(fc.FlambeauError, match=r"at least edge_order\+1"):
        fc.gradient(fc.zeros(2, 4), edge_order=2)
    with pytest.raises(TypeError, match=r"\[gradient\] expected a numeric tensor, got bool"):
        fc.gradient(fc.zeros(3, dtype=fc.bool))
    with pytest.raises(TypeError, match=r"\[gradient\] expected a Tensor"):
        fc.gradient([1.0, 2.0])
