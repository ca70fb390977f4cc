"""Gradients of flambeau.masked's functions against PyTorch 2.13's torch.masked (float64) and finite
differences (gradcheck): masked-out elements get zero gradient, the masked-in ones torch's, also where a
whole slice is masked out (the identity, -inf or NaN in the output, zero gradient below it)."""

from __future__ import annotations

import math

import flambeau_core as fc
import numpy as np
import pytest
from conftest import compare_with_torch, fb_tensor, to_np, torch

pytestmark = pytest.mark.on_devices

SHAPE = (3, 4, 5)


def mask_array(shape=SHAPE, seed=0):
    """A random mask with at least one element masked in along every slice the tests reduce over."""
    m = np.random.default_rng(seed).random(shape) < 0.6
    if len(shape) == 2:  # broadcast over dim 0
        m[0, :] = True
        m[:, 0] = True
        return m
    m[:, 0, :] = True  # dim 1
    m[0, :, 0] = True  # dims (0, 2)
    m[..., 0] = True  # dim 2
    return m


def x_array(seed=1):
    return np.random.default_rng(seed).standard_normal(SHAPE)


def run(name, args, kwargs, mask):
    """compare_with_torch of masked.<name>(x, *args, mask=mask, **kwargs)."""
    fb_mask, th_mask = (None, None) if mask is None else (fb_tensor(mask), torch.tensor(mask))

    def fb_fn(x):
        return getattr(fc.masked, name)(x, *args, mask=fb_mask, **kwargs)

    def th_fn(x):
        return getattr(torch.masked, name)(x, *args, mask=th_mask, **kwargs)

    return compare_with_torch(fb_fn, th_fn, [x_array()])


CASES = [
    ("sum", (1,), {}),
    ("sum", ((0, 2),), {"keepdim": True}),
    ("sum", (), {}),
    ("prod", (1,), {}),
    ("prod", ((0, 2),), {}),
    ("amax", (1,), {}),
    ("amin", ((0, 2),), {"keepdim": True}),
    ("mean", (1,), {}),
    ("mean", (), {}),
    ("logsumexp", (2,), {}),
    ("var", (1,), {}),
    ("var", ((0, 2),), {"correction": 0}),
    ("std", (2,), {"keepdim": True}),
    ("norm", (2.0, 1), {}),
    ("norm", (1, 2), {}),
    ("norm", (3.0, (0, 2)), {}),
    ("norm", (math.inf, 1), {}),
    ("normalize", (2.0, 1), {}),
    ("normalize", (1, 2), {}),
    ("softmax", (2,), {}),
    ("log_softmax", (2,), {}),
    ("softmin", (2,), {}),
    ("cumsum", (1,), {}),
    ("cumprod", (2,), {}),
    ("median", (2,), {}),
]


@pytest.mark.parametrize("name,args,kwargs", CASES, ids=[f"{c[0]}{i}" for i, c in enumerate(CASES)])
def test_gradients_match_torch(name, args, kwargs):
    x = run(name, args, kwargs, mask_array())[0]
    masked_out = ~mask_array()
    assert np.all(to_np(x.grad)[masked_out] == 0), "a masked-out element got a gradient"


@pytest.mark.parametrize("name,args,kwargs", CASES[:6], ids=[c[0] for c in CASES[:6]])
def test_gradients_with_a_broadcast_mask_or_none(name, args, kwargs):
    run(name, args, kwargs, mask_array((4, 5)))
    run(name, args, kwargs, None)


def test_logaddexp_gradients():
    ma, mb = mask_array(seed=2), mask_array(seed=3)
    fa, fb_ = fb_tensor(ma), fb_tensor(mb)
    ta, tb = torch.tensor(ma), torch.tensor(mb)
    compare_with_torch(
        lambda a, b: fc.masked.logaddexp(a, b, input_mask=fa, other_mask=fb_),
        lambda a, b: torch.masked.logaddexp(a, b, input_mask=ta, other_mask=tb),
        [x_array(4), x_array(5)],
    )


@pytest.mark.parametrize("name", ["sum", "prod", "amax", "amin", "logsumexp", "norm"])
def test_fully_masked_slices_get_zero_gradient(name):
    """The output there is the identity (0, 1, -inf, +inf); nothing flows back to the input."""
    m = mask_array()
    m[1] = False
    args = (2.0, (1, 2)) if name == "norm" else ((1, 2),)
    fb_mask, th_mask = fb_tensor(m), torch.tensor(m)
    x = x_array()
    fo_in = fb_tensor(x, requires_grad=True)
    th_in = torch.tensor(x, requires_grad=True)
    fo = getattr(fc.masked, name)(fo_in, *args, mask=fb_mask)
    to = getattr(torch.masked, name)(th_in, *args, mask=th_mask)
    np.testing.assert_allclose(to_np(fo), to.detach().numpy())
    fo.sum().backward()
    to.sum().backward()
    np.testing.assert_allclose(to_np(fo_in.grad), th_in.grad.numpy(), rtol=1e-7, atol=1e-10)
    assert np.all(to_np(fo_in.grad)[1] == 0)
