"""Gradients of channels-last poolings against PyTorch: the input's gradient laid out as the forward's
input (grad_in_format_of), whatever strides the incoming gradient has (a global pooling's gradient
through a flatten, a sum's expanded one), with PyTorch's values."""

from __future__ import annotations

import flambeau_autograd
import flambeau_core as fc
import numpy as np
import pytest
import torch

ATEN = torch.ops.aten

POOLS = {
    "max": (
        lambda x: fc.max_pool2d_with_indices(x, [2, 2], [2, 2], [0, 0], [1, 1])[0],
        lambda x: ATEN.max_pool2d_with_indices(x, [2, 2], [2, 2], [0, 0], [1, 1])[0],
    ),
    "avg": (lambda x: fc.avg_pool2d(x, [3, 3], [2, 2], [1, 1]), lambda x: ATEN.avg_pool2d(x, [3, 3], [2, 2], [1, 1])),
    "global": (lambda x: fc.adaptive_avg_pool2d(x, [1, 1]), lambda x: ATEN._adaptive_avg_pool2d(x, [1, 1])),
    "adaptive": (lambda x: fc.adaptive_avg_pool2d(x, [3, 2]), lambda x: ATEN._adaptive_avg_pool2d(x, [3, 2])),
}


@pytest.mark.parametrize("pool", list(POOLS))
@pytest.mark.parametrize("cl", [True, False])
@pytest.mark.parametrize("loss", ["sum", "flatten_weighted"])
def test_pooling_input_gradient_as_torch(pool, cl, loss):
    a = np.random.default_rng(0).standard_normal((3, 5, 6, 7))
    fx, tx = fc.tensor(a), torch.from_numpy(a.copy())
    if cl:
        fx, tx = fx.contiguous(memory_format=fc.channels_last), tx.contiguous(memory_format=torch.channels_last)
    fx.requires_grad_(True)
    tx.requires_grad_(True)
    fpool, tpool = POOLS[pool]
    fy, ty = fpool(fx), tpool(tx)
    if loss == "sum":
        fl, tl = fy.sum(), ty.sum()
    else:
        m = np.random.default_rng(1).standard_normal(ty.numel())
        fl = (fy.reshape(3, -1) * fc.tensor(m).reshape(3, -1)).sum()
        tl = (ty.reshape(3, -1) * torch.from_numpy(m).reshape(3, -1)).sum()
    (fg,) = flambeau_autograd.grad(fl, [fx])
    (tg,) = torch.autograd.grad(tl, [tx])
    assert tuple(fg.stride()) == tuple(tg.stride())
    np.testing.assert_allclose(np.asarray(fg.tolist()), tg.numpy(), rtol=1e-12, atol=1e-12)
