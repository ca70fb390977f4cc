"""Tensor.fill_diagonal_ (flambeau_core/_fill_diagonal.py) against PyTorch 2.13: square, tall and wide
matrices with and without wrap, n-D cubes, strided views, dtypes, and the errors."""

from __future__ import annotations

import flambeau_core as fc
import numpy as np
import pytest
import torch
from helpers import to_numpy

SHAPES = [(3, 3), (7, 3), (3, 7), (5, 2), (2, 5), (9, 1), (1, 4), (0, 3), (3, 3, 3), (2, 2, 2, 2), (1, 1)]


@pytest.mark.parametrize("wrap", [False, True])
@pytest.mark.parametrize("shape", SHAPES)
def test_fill_diagonal_matches_torch(shape, wrap):
    ours = fc.zeros(shape).fill_diagonal_(2.5, wrap=wrap)
    theirs = torch.zeros(shape).fill_diagonal_(2.5, wrap=wrap)
    np.testing.assert_array_equal(to_numpy(ours), theirs.numpy())


@pytest.mark.parametrize("dtype, value", [("int64", 7), ("bool", True), ("float64", -1.25), ("uint8", 3)])
def test_fill_diagonal_dtypes_and_in_place(dtype, value):
    x = fc.ones(4, 6, dtype=getattr(fc, dtype))
    assert x.fill_diagonal_(value, wrap=True) is x
    expected = torch.ones(4, 6, dtype=getattr(torch, dtype)).fill_diagonal_(value, wrap=True)
    assert x.tolist() == expected.tolist() and x.dtype == getattr(fc, dtype)


def test_fill_diagonal_of_a_strided_view_writes_through():
    base, tbase = fc.zeros(8, 6), torch.zeros(8, 6)
    base[:, ::2].fill_diagonal_(1.0, wrap=True)
    tbase[:, ::2].fill_diagonal_(1.0, wrap=True)
    np.testing.assert_array_equal(to_numpy(base), tbase.numpy())
    base.t().fill_diagonal_(3.0)
    tbase.t().fill_diagonal_(3.0)
    np.testing.assert_array_equal(to_numpy(base), tbase.numpy())


@pytest.mark.parametrize(
    "shape, args, error, message",
    [
        ((3,), (1.0,), fc.FlambeauError, "dimensions must larger than 1"),
        ((3, 4, 3), (1.0,), fc.FlambeauError, "all dimensions of input must be of equal length"),
        ((3, 3), ("a",), TypeError, "expected a number as fill_value, got str"),
    ],
)
def test_fill_diagonal_errors_match_torch(shape, args, error, message):
    with pytest.raises((RuntimeError, TypeError), match=message if error is not TypeError else None):
        torch.zeros(shape).fill_diagonal_(*args)
    with pytest.raises(error, match=r"\[fill_diagonal_\] " + message):
        fc.zeros(shape).fill_diagonal_(*args)
