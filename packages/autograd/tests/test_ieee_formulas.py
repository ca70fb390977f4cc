"""Gradients of copysign, logaddexp and nextafter against PyTorch 2.13 and finite differences (float64)."""

from __future__ import annotations

import flambeau_core as fc
import numpy as np
import pytest
from conftest import compare_with_torch, fb_tensor, to_np, torch

pytestmark = pytest.mark.on_devices


def test_copysign_gradient_matches_torch():
    rng = np.random.default_rng(0)
    mag = rng.uniform(0.5, 2.0, size=(3, 4)) * rng.choice([-1, 1], size=(3, 4))
    sign = rng.standard_normal((4,))
    compare_with_torch(fc.copysign, torch.copysign, [mag, sign])


def test_copysign_gradient_is_zero_at_zero():
    x = fb_tensor(np.array([0.0, -0.0, 2.0]), requires_grad=True)
    fc.copysign(x, -1.0).sum().backward()
    assert to_np(x.grad).tolist() == [0.0, 0.0, -1.0]


def test_logaddexp_gradient_matches_torch():
    rng = np.random.default_rng(1)
    compare_with_torch(fc.logaddexp, torch.logaddexp, [rng.standard_normal((2, 3)) * 3, rng.standard_normal((3,))])


def test_nextafter_gradient_matches_torch():
    # torch's: the next float moves with self (gradient 1) and not with other (gradient 0), broadcasting summed
    rng = np.random.default_rng(2)
    compare_with_torch(fc.nextafter, torch.nextafter, [rng.standard_normal((2, 3)), rng.standard_normal((3,))])


def test_nextafter_tangent_is_selfs():
    fwAD = pytest.importorskip("flambeau_autograd.forward_ad")
    x, y = fb_tensor(np.array([1.0, -2.0])), fb_tensor(np.array([3.0, -5.0]))
    with fwAD.dual_level():
        out = fc.nextafter(fwAD.make_dual(x, fb_tensor(np.array([0.5, 2.0]))), fwAD.make_dual(y, fb_tensor(np.ones(2))))
        assert to_np(fwAD.unpack_dual(out).tangent).tolist() == [0.5, 2.0]
