"""flambeau_autograd.functional against torch.autograd.functional."""

from __future__ import annotations

import flambeau_autograd as ag
import numpy as np
from conftest import fb_tensor, to_np, torch

F = ag.functional


def test_jacobian_and_hessian_match_torch():
    vals = np.array([[0.3, -1.2], [2.0, 0.5]])
    x, tx = fb_tensor(vals), torch.tensor(vals, dtype=torch.float64)
    np.testing.assert_allclose(
        to_np(F.jacobian(lambda t: (t * t).tanh().sum(1), x)),
        torch.autograd.functional.jacobian(lambda t: (t * t).tanh().sum(1), tx).numpy(),
        rtol=1e-10,
    )
    np.testing.assert_allclose(
        to_np(F.hessian(lambda t: (t.exp() * t).sum(), x)),
        torch.autograd.functional.hessian(lambda t: (t.exp() * t).sum(), tx).numpy(),
        rtol=1e-10,
    )
    assert to_np(F.hessian(lambda t: (t * 2.0).sum(), x)).tolist() == np.zeros((2, 2, 2, 2)).tolist()


def test_vjp_matches_torch():
    vals, v = np.array([0.1, 0.7, -0.4]), np.array([1.0, -2.0, 0.5])
    out, g = F.vjp(lambda t: t.sigmoid(), fb_tensor(vals), fb_tensor(v))
    tout, tg = torch.autograd.functional.vjp(lambda t: t.sigmoid(), torch.tensor(vals), torch.tensor(v))
    np.testing.assert_allclose(to_np(out), tout.numpy())
    np.testing.assert_allclose(to_np(g), tg.numpy(), rtol=1e-12)
    assert not out.requires_grad
