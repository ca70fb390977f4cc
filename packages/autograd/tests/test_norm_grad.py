"""native_group_norm's gradients against PyTorch 2.13.0 and gradcheck (float64), including those that
reach the input through its mean and rstd outputs (differentiable outputs, as PyTorch's)."""

from __future__ import annotations

import flambeau_autograd as ag
import flambeau_core as fc
import numpy as np
import pytest
from conftest import fb_tensor, to_np, torch

pytestmark = pytest.mark.on_devices

RNG = np.random.default_rng(8)
X = RNG.standard_normal((2, 6, 3))
W = RNG.standard_normal(6)
B = RNG.standard_normal(6)


def test_group_norm_gradients_match_torch():
    fb_in = [fb_tensor(a, requires_grad=True) for a in (X, W, B)]
    th_in = [torch.tensor(a, requires_grad=True) for a in (X, W, B)]
    fo = fc.native_group_norm(*fb_in, 2, 6, 3, 3, 1e-5)
    to = torch.native_group_norm(*th_in, 2, 6, 3, 3, 1e-5)
    for i in range(3):
        np.testing.assert_allclose(to_np(fo[i]), to[i].detach().numpy(), rtol=1e-7, atol=1e-9)
    w = np.random.default_rng(1).standard_normal(X.shape)
    (fo[0] * fb_tensor(w)).sum().backward()
    (to[0] * torch.tensor(w)).sum().backward()
    for name, a, b in zip(("input", "weight", "bias"), fb_in, th_in, strict=True):
        np.testing.assert_allclose(to_np(a.grad), b.grad.numpy(), rtol=1e-7, atol=1e-9, err_msg=name)


def test_group_norm_statistics_gradcheck():
    """Against finite differences: PyTorch 2.13's own backward drops the statistics' gradients outside
    create_graph (its gradcheck of native_group_norm's rstd fails), so torch is no oracle here."""

    def stats(x):
        _, mean, rstd = fc.native_group_norm(x, None, None, 2, 6, 3, 2, 0.5)
        return mean * 0.3 + rstd

    assert ag.gradcheck(stats, [fb_tensor(X, requires_grad=True)])
    assert ag.gradgradcheck(stats, [fb_tensor(X, requires_grad=True)])
