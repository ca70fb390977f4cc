"""ravel, cartesian_prod, combinations, block_diag, vander and unravel_index against PyTorch 2.13: values,
dtypes and shapes (empty and 0-d inputs included), the *args and list forms, and the errors for bad input."""

from __future__ import annotations

import re

import flambeau_core as fc
import numpy as np
import pytest
import torch
from helpers import to_numpy

pytestmark = pytest.mark.on_devices


def pair(values, dtype="int64"):
    return fc.tensor(values, dtype=getattr(fc, dtype)), torch.tensor(values, dtype=getattr(torch, dtype))


def assert_same(got, expected):
    assert tuple(got.shape) == tuple(expected.shape)
    assert str(got.dtype).split(".")[-1] == str(expected.dtype).split(".")[-1]
    np.testing.assert_allclose(to_numpy(got, widen=True), expected.numpy(), rtol=1e-6)


def test_ravel():
    f, t = pair([[1, 2, 3], [4, 5, 6]])
    assert_same(fc.ravel(f), torch.ravel(t))
    assert_same(f.t().ravel(), t.t().ravel())
    assert_same(f[:, ::2].ravel(), t[:, ::2].ravel())
    assert_same(fc.tensor(3).ravel(), torch.tensor(3).ravel())
    view = f.ravel()
    view[0] = 10  # contiguous input: a view, as PyTorch's
    assert f[0, 0].item() == 10


def test_cartesian_prod():
    (fa, ta), (fb, tb), (fd, td) = pair([1, 2]), pair([3, 4, 5]), pair([0.5, 1.5], "float32")
    assert_same(fc.cartesian_prod(fa, fb), torch.cartesian_prod(ta, tb))
    assert_same(fc.cartesian_prod([fa, fb, fa]), torch.cartesian_prod(ta, tb, ta))
    assert_same(fc.cartesian_prod(fa), torch.cartesian_prod(ta))
    assert_same(fc.cartesian_prod(fd, fd), torch.cartesian_prod(td, td))
    assert_same(fc.cartesian_prod(fa, fb[:0]), torch.cartesian_prod(ta, tb[:0]))
    with pytest.raises(RuntimeError):
        torch.cartesian_prod(torch.ones(2, 2), tb)
    with pytest.raises(fc.FlambeauError, match=re.escape("[cartesian_prod] expected 1-D tensors, got tensor 0")):
        fc.cartesian_prod(fc.ones(2, 2), fb)


@pytest.mark.parametrize("r", [0, 1, 2, 3, 5])
@pytest.mark.parametrize("with_replacement", [False, True])
def test_combinations(r, with_replacement):
    f, t = pair([4, 7, 1, 9])
    assert_same(fc.combinations(f, r, with_replacement), torch.combinations(t, r, with_replacement))
    fd, td = pair([0.5, 2.5, 3.0], "float64")
    assert_same(
        fc.combinations(fd, r=r, with_replacement=with_replacement),
        torch.combinations(td, r=r, with_replacement=with_replacement),
    )


def test_combinations_errors():
    with pytest.raises(RuntimeError):
        torch.combinations(torch.ones(2, 2))
    with pytest.raises(fc.FlambeauError, match=re.escape("[combinations] expected a 1-D tensor")):
        fc.combinations(fc.ones(2, 2))
    with pytest.raises(RuntimeError):
        torch.combinations(torch.ones(3), r=-1)
    with pytest.raises(fc.FlambeauError, match=re.escape("[combinations] expected a non-negative r, got -1")):
        fc.combinations(fc.ones(3), r=-1)


def test_block_diag():
    (fa, ta), (fb, tb), (fs, ts) = pair([[1, 2], [3, 4]]), pair([5.0, 6.0, 7.0], "float32"), pair(8, "int32")
    assert_same(fc.block_diag(fa, fb, fs), torch.block_diag(ta, tb, ts))
    assert_same(fc.block_diag(fs), torch.block_diag(ts))
    assert_same(fc.block_diag(fa, fa.reshape(4, 1)[:0]), torch.block_diag(ta, ta.reshape(4, 1)[:0]))
    assert_same(fc.block_diag(), torch.block_diag())
    with pytest.raises(RuntimeError):
        torch.block_diag(torch.ones(2, 2, 2))
    with pytest.raises(fc.FlambeauError, match=re.escape("[block_diag] input tensors must have 2 or fewer dim")):
        fc.block_diag(fa, fc.ones(2, 2, 2))
    with pytest.raises(TypeError, match=re.escape("[block_diag] expected Tensors")):
        fc.block_diag(fa, 3)


@pytest.mark.parametrize("dtype", ["int32", "int64", "float32", "float64", "bool"])
@pytest.mark.parametrize("N", [None, 0, 1, 4])
@pytest.mark.parametrize("increasing", [False, True])
def test_vander(dtype, N, increasing):
    f, t = pair([1, 0, 3] if dtype == "bool" else [2, -1, 3], dtype)
    if dtype == "bool":
        f, t = f.to(fc.bool), t.bool()
    assert_same(fc.vander(f, N=N, increasing=increasing), torch.vander(t, N=N, increasing=increasing))


def test_vander_errors():
    with pytest.raises(RuntimeError):
        torch.vander(torch.ones(2, 2))
    with pytest.raises(fc.FlambeauError, match=re.escape("[vander] x must be a one-dimensional tensor")):
        fc.vander(fc.ones(2, 2))
    with pytest.raises(RuntimeError):
        torch.vander(torch.ones(2), N=-1)
    with pytest.raises(fc.FlambeauError, match=re.escape("[vander] N must be non-negative, got -1")):
        fc.vander(fc.ones(2), N=-1)


@pytest.mark.parametrize(
    ("indices", "shape"),
    [
        ([0, 5, 11, 7], (3, 4)),
        ([[1, 2], [3, 0]], (2, 2)),
        (17, (2, 3, 4)),
        ([-1, -12], (3, 4)),
        ([], (2, 3)),
        ([0], ()),
    ],
)
def test_unravel_index(indices, shape):
    f, t = pair(indices)
    got, expected = fc.unravel_index(f, shape), torch.unravel_index(t, shape)
    assert isinstance(got, tuple) and len(got) == len(expected)
    for g, e in zip(got, expected, strict=True):
        assert_same(g, e)


def test_unravel_index_wraps_like_torch_and_refuses_floats():
    """PyTorch 2.13 does not raise for an index outside the shape: it wraps modulo the element count."""
    f, t = pair([12, 25, -13])
    for g, e in zip(fc.unravel_index(f, (3, 4)), torch.unravel_index(t, (3, 4)), strict=True):
        assert_same(g, e)
    with pytest.raises(TypeError):
        torch.unravel_index(torch.tensor([1.0]), (3, 4))
    with pytest.raises(TypeError, match=re.escape("[unravel_index] expected 'indices' to be an integer tensor")):
        fc.unravel_index(fc.tensor([1.0]), (3, 4))
    with pytest.raises(fc.FlambeauError, match=re.escape("[unravel_index] 'shape' cannot have negative values")):
        fc.unravel_index(fc.tensor([1]), (3, -4))
