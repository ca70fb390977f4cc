"""Gradients of gradient (flambeau_core/_gradient.py, slices and arithmetic) against PyTorch 2.13 in float64,
and gradcheck; the coordinates get a gradient too."""

from __future__ import annotations

import flambeau_core as fc
import numpy as np
import pytest
from conftest import compare_with_torch, torch

RNG = np.random.default_rng(29)


@pytest.mark.parametrize("kwargs", [dict(), dict(edge_order=2, spacing=[2.0, 0.5]), dict(dim=1, spacing=3.0)])
def test_gradient_grad_uniform(kwargs):
    def run(lib, x):
        return lib.cat([g.reshape(-1) * (i + 1) for i, g in enumerate(lib.gradient(x, **kwargs))])

    compare_with_torch(lambda x: run(fc, x), lambda x: run(torch, x), [RNG.standard_normal((4, 5))])


@pytest.mark.parametrize("edge_order", [1, 2])
def test_gradient_grad_coordinates(edge_order):
    def run(lib, x, c):
        return lib.gradient(x, spacing=(c,), dim=1, edge_order=edge_order)[0]

    coords = np.cumsum(RNG.uniform(0.5, 2.0, 5))
    compare_with_torch(lambda x, c: run(fc, x, c), lambda x, c: run(torch, x, c), [RNG.standard_normal((3, 5)), coords])
