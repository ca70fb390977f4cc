"""Complex products against PyTorch 2.13: prod along a dim in independent lanes (lengths across the
vector width, special values), complex multiply with the plain formula, and kron."""

from __future__ import annotations

import flambeau_core as fc
import numpy as np
import pytest
import torch
from helpers import to_numpy

RNG = np.random.default_rng(7)


@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
@pytest.mark.parametrize("n", [1, 2, 15, 16, 17, 33, 257, 1000])
def test_prod_complex_lanes(dtype, n):
    z = (RNG.standard_normal((5, n)) + 1j * RNG.standard_normal((5, n))) * (0.3 + 1.4 / np.sqrt(n))
    ours = fc.tensor(z.astype(dtype)).prod(1)
    theirs = torch.from_numpy(z.astype(dtype)).prod(1)
    np.testing.assert_allclose(to_numpy(ours), theirs.numpy(), rtol=1e-4 if dtype == "complex64" else 1e-10)
    ours = fc.tensor(z.T.copy().astype(dtype)).prod(0)  # along dim 0: made rows first
    np.testing.assert_allclose(to_numpy(ours), theirs.numpy(), rtol=1e-4 if dtype == "complex64" else 1e-10)
    ours = fc.tensor(z.astype(dtype)).t().prod(0, keepdim=True)  # non-contiguous input
    assert tuple(ours.shape) == (1, 5)
    np.testing.assert_allclose(to_numpy(ours)[0], theirs.numpy(), rtol=1e-4 if dtype == "complex64" else 1e-10)


def test_prod_complex_special_values():
    z = np.array([[1 + 1j, np.nan + 0j, 2j], [np.inf + 0j, 1 + 0j, 2 + 0j], [0j, 3 + 1j, 1 - 1j]])
    z = np.tile(z, (1, 7))  # past the lanes
    ours = to_numpy(fc.tensor(z).prod(1))
    theirs = torch.from_numpy(z).prod(1).numpy()
    np.testing.assert_array_equal(np.isnan(ours), np.isnan(theirs))
    np.testing.assert_array_equal(np.isinf(ours), np.isinf(theirs))
    fin = np.isfinite(theirs)
    np.testing.assert_allclose(ours[fin], theirs[fin], rtol=1e-12)


@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
def test_complex_mul_and_kron(dtype):
    a = RNG.standard_normal((13, 1, 7)) + 1j * RNG.standard_normal((13, 1, 7))
    b = RNG.standard_normal((4, 1)) + 1j * RNG.standard_normal((4, 1))
    ours = fc.mul(fc.tensor(a.astype(dtype)), fc.tensor(b.astype(dtype)))
    theirs = torch.mul(torch.from_numpy(a.astype(dtype)), torch.from_numpy(b.astype(dtype)))
    np.testing.assert_allclose(to_numpy(ours), theirs.numpy(), rtol=1e-6 if dtype == "complex64" else 1e-14)
    a, b = a[:, 0, :], b[:, :1] @ np.ones((1, 3))
    ours = fc.kron(fc.tensor(a.astype(dtype)), fc.tensor(b.astype(dtype)))
    theirs = torch.kron(torch.from_numpy(a.astype(dtype)), torch.from_numpy(b.astype(dtype)))
    np.testing.assert_allclose(to_numpy(ours), theirs.numpy(), rtol=1e-6 if dtype == "complex64" else 1e-14)
