"""Gradient of renorm (flambeau_core/_renorm.py, differentiated through the norm) against PyTorch 2.13 in
float64, and gradcheck."""

from __future__ import annotations

import flambeau_core as fc
import numpy as np
import pytest
from conftest import compare_with_torch, torch

RNG = np.random.default_rng(31)


@pytest.mark.parametrize(("p", "dim", "maxnorm"), [(2, 0, 1.0), (1, 1, 1.5), (float("inf"), -1, 0.8), (3, 0, 50.0)])
def test_renorm_grad(p, dim, maxnorm):
    compare_with_torch(
        lambda x: fc.renorm(x, p, dim, maxnorm),
        lambda x: torch.renorm(x, p, dim, maxnorm),
        [RNG.standard_normal((3, 4))],
    )
