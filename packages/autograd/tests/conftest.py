"""Shared helpers: run one function on flambeau and on PyTorch with the same
inputs and compare outputs and gradients; gradcheck the flambeau side."""

from __future__ import annotations

import sys

import flambeau_autograd as ag
import flambeau_core as fc
import numpy as np
import torch
from flambeau_core.testing import to_host

# Every gradcheck of these tests checks forward mode too (dual tensors against the same finite differences),
# so each derivatives.yaml entry the gradcheck-coverage test finds gradchecked has its forward formula
# checked as well. A call whose function cannot run on dual tensors says check_forward_ad=False and why.
sys.modules["flambeau_autograd.gradcheck"].gradcheck.__kwdefaults__["check_forward_ad"] = True


def fb_tensor(a, requires_grad=False, dtype=None):
    a = np.asarray(a)
    dt = dtype or (fc.float64 if a.dtype.kind == "f" else fc.int64 if a.dtype.kind in "iu" else fc.bool)
    t = fc.tensor(a.tolist(), dtype=dt)
    if a.size == 0:  # tolist() of shape (0, 4) is []
        t = t.reshape(a.shape)
    return t.requires_grad_() if requires_grad else t


def to_np(t):
    return np.asarray(to_host(t).tolist()).reshape(tuple(t.shape))  # the shape too: tolist() of (0, 4) is []


def make_inputs(shapes, seed=0, positive=False):
    rng = np.random.default_rng(seed)
    out = []
    for s in shapes:
        if isinstance(s, np.ndarray):
            out.append(s)
        elif positive:
            out.append(rng.uniform(0.5, 2.0, size=s))
        else:
            out.append(rng.standard_normal(s))
    return out


def compare_with_torch(fb_fn, torch_fn, arrays, *, check_grad=True, seed=1, atol=1e-8, gradcheck=True):
    """fb_fn/torch_fn take one tensor per array; returns the flambeau inputs."""
    fb_in = [fb_tensor(a, requires_grad=True) for a in arrays]
    th_in = [torch.tensor(a, dtype=torch.float64, requires_grad=True) for a in arrays]
    fo, to = fb_fn(*fb_in), torch_fn(*th_in)
    np.testing.assert_allclose(to_np(fo), to.detach().numpy(), rtol=1e-7, atol=atol)
    assert fo.requires_grad and fo.grad_fn is not None
    w = np.random.default_rng(seed).standard_normal(tuple(to.shape))
    (fo * fb_tensor(w)).sum().backward()
    (to * torch.tensor(w)).sum().backward()
    for i, (a, b) in enumerate(zip(fb_in, th_in, strict=True)):
        if b.grad is None:
            assert a.grad is None or np.all(to_np(a.grad) == 0), f"input {i}"
            continue
        assert a.grad is not None, f"input {i} got no gradient"
        assert tuple(a.grad.shape) == tuple(b.grad.shape)
        np.testing.assert_allclose(to_np(a.grad), b.grad.numpy(), rtol=1e-7, atol=atol, err_msg=f"input {i}")
    if gradcheck:
        fresh = [fb_tensor(a, requires_grad=True) for a in arrays]
        assert ag.gradcheck(fb_fn, fresh)
    return fb_in
