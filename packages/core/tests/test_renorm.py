"""renorm, Tensor.renorm and Tensor.renorm_ (flambeau_core/_renorm.py) against PyTorch 2.13, and errors."""

from __future__ import annotations

import flambeau_core as fc
import numpy as np
import pytest
import torch
from helpers import to_numpy

RNG = np.random.default_rng(7)


@pytest.mark.parametrize("dtype", ["float32", "float64", "float16"])
@pytest.mark.parametrize(
    ("shape", "p", "dim", "maxnorm"),
    [
        ((3, 4), 2, 0, 1.5),
        ((3, 4), 1, 1, 2.0),
        ((2, 3, 4), float("inf"), -1, 1.0),
        ((2, 3, 4), 3.5, 1, 0.0),
        ((4, 5), 0.5, 0, 100.0),
        ((0, 3), 2, 1, 1.0),
    ],  # fmt: skip
)
def test_renorm_matches_torch(shape, p, dim, maxnorm, dtype):
    a = np.asarray(RNG.standard_normal(shape).astype(dtype))
    expected = torch.renorm(torch.from_numpy(a), p, dim, maxnorm).numpy()
    tol = {"float64": 1e-12, "float32": 1e-6, "float16": 2e-3}[dtype]
    got = fc.renorm(fc.tensor(a), p, dim, maxnorm)
    assert got.dtype == fc.tensor(a).dtype and tuple(got.shape) == shape
    expected = expected.astype(np.float64)
    np.testing.assert_allclose(to_numpy(got.double()), expected, rtol=tol, atol=tol)
    np.testing.assert_allclose(to_numpy(fc.tensor(a).renorm(p, dim, maxnorm).double()), expected, rtol=tol, atol=tol)
    x = fc.tensor(a)
    assert x.renorm_(p, dim, maxnorm) is x
    np.testing.assert_allclose(to_numpy(x.double()), expected, rtol=tol, atol=tol)


X = fc.ones(3, 4)
ERRORS = [
    (lambda: fc.renorm(X, 2, 0, -1), fc.FlambeauError, r"\[renorm\] expected maxnorm to be >= 0 but got -1"),
    (lambda: fc.renorm(X, 0, 0, 5), fc.FlambeauError, r"\[renorm\] non-positive-norm not supported"),
    (lambda: fc.renorm(X, -1, 0, 5), fc.FlambeauError, r"\[renorm\] non-positive-norm not supported"),
    (lambda: fc.renorm(X, 2, 2, 5), IndexError, r"\[renorm\] Dimension out of range"),
    (lambda: fc.renorm(fc.ones(3), 2, 0, 5), fc.FlambeauError, r"\[renorm\] input needs at least 2 dimensions, got 1"),
    (lambda: fc.renorm(fc.ones(3, 4, dtype=fc.int64), 2, 0, 5), TypeError, r"\[renorm\] expected a floating point"),
    (lambda: fc.renorm(X, "2", 0, 5), TypeError, r"\[renorm\] expected a number 'p'"),
    (lambda: fc.renorm(X, 2, 0.5, 5), TypeError, r"\[renorm\] expected an int 'dim'"),
    (lambda: fc.renorm([1.0], 2, 0, 5), TypeError, r"\[renorm\] expected a Tensor"),
]


@pytest.mark.parametrize(("call", "exc", "words"), ERRORS)
def test_renorm_errors(call, exc, words):
    with pytest.raises(exc, match=words):
        call()
