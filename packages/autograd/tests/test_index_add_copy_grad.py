"""index_add and index_copy on 0-d tensors (dim 0, one index): the source's gradient has the
source's shape, not index_select's (1,), against PyTorch 2.13.0 and gradcheck (float64)."""

from __future__ import annotations

import flambeau_core as fc
import numpy as np
import pytest
from conftest import compare_with_torch, fb_tensor, torch

pytestmark = pytest.mark.on_devices


def _ops(name, index, source_shape):
    """(flambeau fn, torch fn) of (self, source) for index_add (alpha 3) or index_copy."""
    kw = {"alpha": 3.0} if name == "index_add" else {}

    def ours(a, s):
        return getattr(fc, name)(a, 0, fb_tensor(np.array(index)), s.reshape(source_shape), **kw)

    def theirs(a, s):
        return getattr(torch, name)(a, 0, torch.tensor(index), s.reshape(source_shape), **kw)

    return ours, theirs


@pytest.mark.parametrize("name", ["index_add", "index_copy"])
@pytest.mark.parametrize("index", [[0], 0], ids=["index_1d", "index_0d"])
def test_zero_dim_self_and_source(name, index):
    ours, theirs = _ops(name, index, ())
    compare_with_torch(ours, theirs, [np.array(1.5), np.array(-0.7)])


@pytest.mark.parametrize("index", [[0], 0], ids=["index_1d", "index_0d"])
def test_index_copy_zero_dim_self_one_element_source(index):
    ours, theirs = _ops("index_copy", index, (1,))
    compare_with_torch(ours, theirs, [np.array(1.5), np.array([-0.7])])


@pytest.mark.parametrize("name", ["index_add", "index_copy"])
def test_zero_dim_source_gradient_is_zero_dim(name):
    a = fc.tensor(1.0, dtype=fc.float64).requires_grad_()
    s = fc.tensor(2.0, dtype=fc.float64).requires_grad_()
    getattr(fc, name)(a, 0, fc.tensor([0]), s).backward()
    assert tuple(s.grad.shape) == ()
    assert s.grad.item() == 1.0
