"""Gradients of igamma / igammac (flambeau_core/_igamma.py, differentiated through the series and the
continued fraction): in x against PyTorch 2.13's formula, in a (which PyTorch does not implement) by
gradcheck against finite differences."""

from __future__ import annotations

import flambeau_autograd as ag
import flambeau_core as fc
import numpy as np
import pytest
from conftest import fb_tensor, to_np, torch

A = np.array([0.5, 2.0, 7.0, 30.0, 3.0, 150.0])
X = np.array([0.3, 1.0, 9.0, 25.0, 0.7, 160.0])


@pytest.mark.parametrize("name", ["igamma", "igammac"])
def test_grad_in_x_matches_torch(name):
    x = fb_tensor(X, requires_grad=True)
    getattr(fc, name)(fb_tensor(A), x).sum().backward()
    tx = torch.tensor(X, requires_grad=True)
    getattr(torch, name)(torch.tensor(A), tx).sum().backward()
    np.testing.assert_allclose(to_np(x.grad), tx.grad.numpy(), rtol=1e-10)


@pytest.mark.parametrize("name", ["igamma", "igammac"])
def test_gradcheck_in_a_and_x(name):
    assert ag.gradcheck(getattr(fc, name), [fb_tensor(A[:5], requires_grad=True), fb_tensor(X[:5], requires_grad=True)])
