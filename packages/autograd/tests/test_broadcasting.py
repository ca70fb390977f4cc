"""Property-based: gradients of broadcasting binary ops have the input's shape and
match PyTorch for any pair of broadcastable shapes."""

from __future__ import annotations

import flambeau_core as fc
import numpy as np
import pytest
from conftest import fb_tensor, to_np, torch
from hypothesis import given, settings
from hypothesis import strategies as st

pytestmark = pytest.mark.on_devices


@st.composite
def broadcastable_pair(draw):
    ndim = draw(st.integers(0, 3))
    base = [draw(st.integers(1, 3)) for _ in range(ndim)]

    def variant():
        drop = draw(st.integers(0, ndim))
        return tuple(1 if draw(st.booleans()) else s for s in base[drop:])

    return variant(), variant()


@settings(max_examples=40, deadline=None)
@given(shapes=broadcastable_pair(), op=st.sampled_from(["add", "sub", "mul", "div", "maximum", "where"]))
def test_broadcast_grads_match_torch(shapes, op):
    rng = np.random.default_rng(0)
    a, b = (rng.uniform(0.5, 2.0, size=s) for s in shapes)
    fa, fb = fb_tensor(a, requires_grad=True), fb_tensor(b, requires_grad=True)
    ta, tb = (torch.tensor(v, dtype=torch.float64, requires_grad=True) for v in (a, b))
    if op == "where":
        fo, to = fc.where(fa > 1.0, fa, fb), torch.where(ta > 1.0, ta, tb)
    else:
        fo, to = getattr(fc, op)(fa, fb), getattr(torch, op)(ta, tb)
    w = rng.standard_normal(tuple(to.shape))
    (fo * fb_tensor(w)).sum().backward()
    (to * torch.tensor(w)).sum().backward()
    for f, t in ((fa, ta), (fb, tb)):
        assert tuple(f.grad.shape) == tuple(t.shape)
        np.testing.assert_allclose(to_np(f.grad), t.grad.numpy(), rtol=1e-10, atol=1e-12)
