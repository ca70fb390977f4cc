"""Gradients of the samplers' reparameterised draws, which no finite difference can check (each call draws
anew): checked as expectations over many draws instead."""

from __future__ import annotations

import math

import flambeau_autograd  # noqa: F401  (registers the Autograd kernels)
import flambeau_core as fc
import numpy as np

N = 20000


def test_standard_gamma_rsample_gradient_is_unbiased():
    # E[dx/dalpha] = dE[x]/dalpha = 1 for Gamma(alpha, 1)
    for alpha in (0.3, 2.0, 9.0):
        fc.manual_seed(11)
        a = fc.full((N,), alpha, dtype=fc.float64).requires_grad_()
        x = fc._standard_gamma(a)
        x.sum().backward()
        g = np.array(a.grad.tolist())
        assert abs(g.mean() - 1.0) < 5 * g.std() / math.sqrt(N), (alpha, g.mean())
