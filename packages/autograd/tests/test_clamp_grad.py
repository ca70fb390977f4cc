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


@pytest.mark.parametrize("name", ["clamp_min", "clamp_max"])
def test_one_sided_clamp_with_a_tensor_bound(name):
    """clamp_min/clamp_max take a tensor bound (PyTorch's .Tensor overloads): the bound gets its gradient,
    broadcast back to its shape, where a 0-d tensor once went through the Scalar overload and got none."""
    compare_with_torch(getattr(fc, name), getattr(torch, name), [X, LOW])
    compare_with_torch(getattr(fc, name), getattr(torch, name), [X, np.array(0.25)])
    compare_with_torch(lambda x, b: getattr(x, name)(b), lambda x, b: getattr(x, name)(b), [X, HIGH])


@pytest.mark.parametrize("name", ["clamp_min", "clamp_max"])
def test_one_sided_clamp_with_a_number_keeps_the_scalar_overload(name):
    x = fc.tensor([-2.0, 0.5, 3.0])
    assert getattr(fc, name)(x, 1).tolist() == getattr(torch, name)(torch.tensor([-2.0, 0.5, 3.0]), 1).tolist()
    got = getattr(fc, name)(fc.tensor([1, 5, 9]), fc.tensor(4.5))
    want = getattr(torch, name)(torch.tensor([1, 5, 9]), torch.tensor(4.5))
    assert got.tolist() == want.tolist() and str(got.dtype).split(".")[-1] == str(want.dtype).split(".")[-1]
