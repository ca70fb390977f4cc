"""nonzero_static (flambeau_core/_nonzero_static.py) against PyTorch 2.13: cut, padded, 0-d and empty
inputs, the method, and errors."""

from __future__ import annotations

import flambeau_core as fc
import numpy as np
import pytest
import torch
from helpers import to_numpy

RNG = np.random.default_rng(19)


@pytest.mark.parametrize("size", [0, 2, 5, 40])
@pytest.mark.parametrize("fill_value", [-1, 7])
@pytest.mark.parametrize("shape", [(12,), (3, 4), (2, 3, 4), (), (0, 3)])
def test_nonzero_static_matches_torch(shape, size, fill_value):
    a = np.asarray(RNG.integers(0, 2, shape).astype(np.float32))
    expected = torch.nonzero_static(torch.from_numpy(a), size=size, fill_value=fill_value)
    for got in (
        fc.nonzero_static(fc.tensor(a), size=size, fill_value=fill_value),
        fc.tensor(a).nonzero_static(size=size, fill_value=fill_value),
    ):
        assert got.dtype == fc.int64 and tuple(got.shape) == tuple(expected.shape)
        np.testing.assert_array_equal(to_numpy(got).reshape(expected.shape), expected.numpy())


def test_nonzero_static_of_every_dtype():
    a = np.array([[0, 1.5], [0, -2]])
    for dtype in (fc.float16, fc.bfloat16, fc.int8, fc.bool):
        got = fc.nonzero_static(fc.tensor(a).to(dtype), size=3, fill_value=9)
        assert got.tolist() == [[0, 1], [1, 1], [9, 9]]


def test_nonzero_static_errors():
    with pytest.raises(fc.FlambeauError, match=r"\[nonzero_static\] 'size' must be an non-negative integer"):
        fc.nonzero_static(fc.ones(3), size=-1)
    with pytest.raises(TypeError, match=r"\[nonzero_static\] expected an int 'size'"):
        fc.nonzero_static(fc.ones(3), size=2.0)
    with pytest.raises(TypeError, match=r"\[nonzero_static\] expected a Tensor"):
        fc.nonzero_static([1, 0], size=2)
