"""F.normalize on complex input and a dim out of range (the robust wave): values
and gradients against torch.nn.functional.normalize, and the error naming the op."""

from __future__ import annotations

import flambeau_core as fc
import flambeau_nn.functional as F
import numpy as np
import pytest
import torch
import torch.nn.functional as TF
from nn_testing import assert_close


@pytest.mark.parametrize("dtype", ["complex64", "complex128"])
@pytest.mark.parametrize(("p", "dim"), [(2.0, 1), (1.0, 0), (3.0, -1), (float("inf"), 1)])
def test_complex_values_and_gradients_match_torch(dtype, p, dim):
    rng = np.random.default_rng(int(p) if p != float("inf") else 9)
    a = (rng.standard_normal((3, 4)) + 1j * rng.standard_normal((3, 4))).astype(dtype)
    g = (rng.standard_normal((3, 4)) + 1j * rng.standard_normal((3, 4))).astype(dtype)
    x = fc.tensor(a, requires_grad=True)
    tx = torch.tensor(a, requires_grad=True)
    y, ty = F.normalize(x, p=p, dim=dim), TF.normalize(tx, p=p, dim=dim)
    tol = 1e-5 if dtype == "complex64" else 1e-12
    assert_close(y, ty, rtol=tol, atol=tol)
    y.backward(fc.tensor(g))
    ty.backward(torch.tensor(g))
    assert_close(x.grad, tx.grad, rtol=10 * tol, atol=10 * tol)


@pytest.mark.parametrize("dim", [2, -3, 2**63 - 1, -(2**63)])
def test_dim_out_of_range_is_an_index_error_naming_normalize(dim):
    with pytest.raises(IndexError, match=r"^\[normalize\] Dimension out of range .*\(2, 3\)"):
        F.normalize(fc.ones(2, 3), dim=dim)
    with pytest.raises(IndexError):
        TF.normalize(torch.ones(2, 3), dim=dim)
