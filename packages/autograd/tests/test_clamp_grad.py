"""clamp with tensor bounds: the gradients of input, min and max against PyTorch 2.13.0 and
gradcheck (float64), away from ties (where the input equals a bound)."""

from __future__ import annotations

import flambeau_core as fc
import numpy as np
import pytest
from conftest import compare_with_torch, torch

pytestmark = pytest.mark.on_devices

RNG = np.random.default_rng(21)
X = RNG.uniform(-3.0, 3.0, (3, 5))
LOW = RNG.uniform(-1.5, -0.5, (5,))
HIGH = RNG.uniform(0.5, 1.5, (3, 1))


def test_both_bounds_broadcast():
    compare_with_torch(lambda x, lo, hi: fc.clamp(x, lo, hi), torch.clamp, [X, LOW, HIGH])


def test_min_only_and_max_only():
    compare_with_torch(lambda x, lo: fc.clamp(x, min=lo), lambda x, lo: torch.clamp(x, min=lo), [X, LOW])
    compare_with_torch(lambda x, hi: fc.clamp(x, max=hi), lambda x, hi: torch.clamp(x, max=hi), [X, HIGH])


def test_min_above_max_gives_max_its_gradient():
    """Where min > max the result is max (as PyTorch), so max gets the gradient there."""
    low = np.full((5,), 0.8)
    high = np.array([[0.2], [1.5], [-0.4]])
    compare_with_torch(lambda x, lo, hi: fc.clamp(x, lo, hi), torch.clamp, [X, low, high])


def test_zero_dim_tensor_bounds():
    compare_with_torch(lambda x, lo, hi: fc.clamp(x, lo, hi), torch.clamp, [X, np.array(-0.5), np.array(0.75)])
