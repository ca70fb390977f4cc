"""requires_grad=True of flambeau.signal.windows and the top-level window functions: the window is a leaf
that requires grad (PyTorch's requires grad too), so a loss of it has the gradient d(loss)/d(window)."""

from __future__ import annotations

import flambeau_core as fc
import numpy as np
import pytest
from conftest import to_np, torch

pytestmark = pytest.mark.on_devices


@pytest.mark.parametrize("name", fc.signal.windows.__all__)
def test_signal_windows_require_grad(name):
    kwargs = {"a": [0.5, 0.3, 0.2]} if name == "general_cosine" else {}
    for M in (0, 1, 6):
        w = getattr(fc.signal.windows, name)(M, requires_grad=True, dtype=fc.float64, **kwargs)
        assert w.requires_grad and w.is_leaf
        assert getattr(torch.signal.windows, name)(M, requires_grad=True, **kwargs).requires_grad
    (w * w).sum().backward()
    np.testing.assert_allclose(to_np(w.grad), 2 * to_np(w.detach()))


@pytest.mark.parametrize(
    "name", ["hann_window", "hamming_window", "blackman_window", "bartlett_window", "kaiser_window"]
)
def test_top_level_windows_require_grad(name):
    for n in (0, 1, 5):
        w = getattr(fc, name)(n, requires_grad=True)
        assert w.requires_grad and w.is_leaf
        assert getattr(torch, name)(n, requires_grad=True).requires_grad
    w.sum().backward()
    assert to_np(w.grad).tolist() == [1.0] * 5
