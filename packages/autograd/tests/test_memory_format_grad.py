"""Gradients through memory-format-preserving conversions: a transposed float32 tensor cast to
float64 keeps its strides, and the gradient comes back in the source's layout and dtype."""

from __future__ import annotations

import flambeau_autograd  # noqa: F401  (registers the autograd layer)
import flambeau_core as fc
import numpy as np


def test_a_preserving_conversion_backpropagates():
    x = fc.randn(3, 4, dtype=fc.float32).t()
    x.requires_grad_(True)
    y = x.double()
    assert y.stride() == (1, 4)
    (y * fc.arange(12, dtype=fc.float64).view(4, 3)).sum().backward()
    assert x.grad.tolist() == np.arange(12, dtype=np.float32).reshape(4, 3).tolist()
