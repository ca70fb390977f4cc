"""glu on float16 / bfloat16 (src/cpu/elementwise/activation.cpp) against PyTorch 2.13, bit for bit: the
forward a * sigmoid(b) in float32 rounded once, the gradient from sigmoid(b) rounded to the 16-bit dtype
first (s * grad, and (1 - s) s a grad in float32), as PyTorch's CPU kernels."""

from __future__ import annotations

import flambeau_core as fc
import pytest
import torch
import torch.nn.functional as F
from helpers import assert_same_as_torch, from_torch, torch_values

DTYPES = ["float16", "bfloat16"]


def values(dtype: str, shape, seed: int, scale: float = 3.0, shift: float = 0.0) -> torch.Tensor:
    return torch_values(dtype, shape, seed, scale=scale, shift=shift)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape,dim", [((40, 60), 1), ((40, 60), 0), ((3, 8, 5), -2), ((10,), 0)])
def test_glu_bits(shape, dim, dtype):
    t = values(dtype, shape, 0)
    assert_same_as_torch(fc.glu(from_torch(t), dim), F.glu(t, dim))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape,dim", [((40, 60), 1), ((3, 8, 5), 1)])
def test_glu_gradient_bits(shape, dim, dtype):
    pytest.importorskip("flambeau_autograd", reason="gradients need flambeau-autograd")
    t = values(dtype, shape, 1)
    tx = t.clone().requires_grad_(True)
    out = F.glu(tx, dim)
    g = values(dtype, tuple(out.shape), 2, scale=1.0)
    out.backward(g)
    x = from_torch(t).requires_grad_(True)
    fc.glu(x, dim).backward(from_torch(g))
    assert_same_as_torch(x.grad, tx.grad)
