"""Gradients of index_reduce (flambeau_core/_index_reduce.py, over scatter_reduce) against PyTorch 2.13 in
float64, to self and source, and gradcheck."""

from __future__ import annotations

import warnings

import flambeau_core as fc
import numpy as np
import pytest
from conftest import compare_with_torch, torch

RNG = np.random.default_rng(37)


@pytest.mark.parametrize("reduce", ["prod", "mean", "amax", "amin"])
@pytest.mark.parametrize("include_self", [True, False])
def test_index_reduce_grad(reduce, include_self):
    def run(lib, x, s):
        index = lib.tensor([0, 3, 1, 0])
        return lib.index_reduce(x, 0, index, s, reduce, include_self=include_self)

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        compare_with_torch(
            lambda x, s: run(fc, x, s),
            lambda x, s: run(torch, x, s),
            [RNG.standard_normal((4, 3)), RNG.standard_normal((4, 3))],
        )
