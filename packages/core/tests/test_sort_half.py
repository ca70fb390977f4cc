"""nonzero (where(x), argwhere), unique (flat, dim, consecutive) and searchsorted (bucketize, isin) on
float16 / bfloat16 (src/cpu/reduce/sort.cpp): the 16-bit values compared as their exact float32 values,
against PyTorch 2.13 (the same indices, counts and values, bit for bit)."""

from __future__ import annotations

import flambeau_core as fc
import numpy as np
import pytest
import torch
from helpers import assert_same_as_torch, from_torch, to_numpy, torch_values

DTYPES = ["float16", "bfloat16"]


def coarse(dtype: str, shape, seed: int) -> torch.Tensor:
    """Values on a coarse grid (repeats, zeros, -0.0), a NaN and infinities."""
    t = torch_values(dtype, shape, seed, scale=2.0).mul(2).round().div(2)
    flat = t.view(-1)
    flat[:4] = torch.tensor([float("nan"), float("inf"), -float("inf"), -0.0])
    return t


def as_list(t) -> list:
    return to_numpy(t).tolist() if isinstance(t, fc.Tensor) else t.numpy().tolist()


@pytest.mark.parametrize("dtype", DTYPES)
def test_nonzero_where_argwhere(dtype):
    t = coarse(dtype, (7, 9), 0)
    x = from_torch(t)
    assert as_list(fc.nonzero(x)) == as_list(torch.nonzero(t))
    assert as_list(fc.argwhere(x)) == as_list(torch.argwhere(t))
    for ours, theirs in zip(fc.where(x), torch.where(t), strict=True):
        assert as_list(ours) == as_list(theirs)


@pytest.mark.parametrize("dtype", DTYPES)
def test_unique(dtype):
    t = coarse(dtype, (6, 11), 1)
    t.view(-1)[4] = float("nan")  # two NaNs: PyTorch keeps each apart
    values, inverse, counts = fc.unique(from_torch(t), return_inverse=True, return_counts=True)
    tv, ti, tc = torch.unique(t, return_inverse=True, return_counts=True)
    assert_same_as_torch(values, tv)
    assert as_list(inverse) == as_list(ti)
    assert as_list(counts) == as_list(tc)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("dim", [0, 1])
def test_unique_dim_and_consecutive(dim, dtype):
    t = coarse(dtype, (6, 4), 2)[:, :2].repeat(2, 2)
    t = t.nan_to_num(0.0, 3.0, -3.0)  # rows with NaN never compare equal
    ours = fc.unique(from_torch(t), dim=dim, return_inverse=True, return_counts=True)
    theirs = torch.unique(t, dim=dim, return_inverse=True, return_counts=True)
    assert_same_as_torch(ours[0], theirs[0])
    assert as_list(ours[1]) == as_list(theirs[1]) and as_list(ours[2]) == as_list(theirs[2])
    s = torch.tensor([1.0, 1.0, 2.0, -0.0, 0.0, 2.0, 2.0]).to(getattr(torch, dtype))
    ours = fc.unique_consecutive(from_torch(s), return_inverse=True, return_counts=True)
    theirs = torch.unique_consecutive(s, return_inverse=True, return_counts=True)
    assert_same_as_torch(ours[0], theirs[0])
    assert as_list(ours[1]) == as_list(theirs[1]) and as_list(ours[2]) == as_list(theirs[2])


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("right", [False, True])
def test_searchsorted_bucketize_isin(right, dtype):
    seq = torch.sort(coarse(dtype, (3, 12), 3).nan_to_num(0.0), dim=1).values
    v = coarse(dtype, (3, 5), 4)
    assert as_list(fc.searchsorted(from_torch(seq), from_torch(v), right=right)) == as_list(
        torch.searchsorted(seq, v, right=right)
    )
    bounds = seq[0].unique()
    assert as_list(fc.bucketize(from_torch(v), from_torch(bounds), right=right)) == as_list(
        torch.bucketize(v, bounds, right=right)
    )
    assert as_list(fc.isin(from_torch(v), from_torch(seq))) == as_list(torch.isin(v, seq))
    # A float32 sequence with 16-bit values: promoted, compared in float32.
    assert as_list(fc.searchsorted(from_torch(seq.float()), from_torch(v))) == as_list(
        torch.searchsorted(seq.float(), v.float())
    )
    np.testing.assert_array_equal(to_numpy(fc.isin(from_torch(v), 0.0)), torch.isin(v, 0.0).numpy())
