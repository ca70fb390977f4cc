"""Complex autograd against PyTorch: gradients of real-valued losses of complex tensors follow
PyTorch's convention (the conjugate Wirtinger derivative), through the elementwise ops, the complex views
and complex/polar/angle/abs; and gradients through float16 ops."""

from __future__ import annotations

import flambeau_autograd  # noqa: F401  (backward, grad)
import flambeau_core as fb
import numpy as np
import pytest
import torch
from flambeau_core.testing import to_host
from nn_testing import assert_close, from_torch

pytestmark = pytest.mark.on_devices


def pair(shape, dtype=torch.complex128, seed=0, positive=False):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(*shape, dtype=dtype, generator=g)
    if positive:
        x = x + 3
    return from_torch(x).requires_grad_(True), x.requires_grad_(True)


def loss(m, w):
    """A real-valued loss that weighs real and imaginary parts differently."""
    return (m.real(w) * 1.5).sum() + (m.imag(w) * m.imag(w)).sum() if w.dtype.is_complex else (w * w).sum()


UNARY = ["exp", "log", "sqrt", "tanh", "sigmoid", "sin", "cos", "neg", "conj_physical"]


@pytest.mark.parametrize("op", UNARY)
def test_complex_unary_grad(op):
    f, t = pair((4, 5), seed=1, positive=op in ("log", "sqrt"))
    loss(fb, getattr(fb, op)(f)).backward()
    loss(torch, getattr(torch, op)(t)).backward()
    assert_close(f.grad, t.grad, rtol=1e-9, atol=1e-10)


@pytest.mark.parametrize("op", ["add", "sub", "mul", "div"])
def test_complex_binary_grad(op):
    fa, ta = pair((3, 4), seed=2)
    fb_, tb = pair((3, 4), seed=3, positive=True)
    loss(fb, getattr(fb, op)(fa, fb_)).backward()
    loss(torch, getattr(torch, op)(ta, tb)).backward()
    assert_close(fa.grad, ta.grad, rtol=1e-9, atol=1e-10)
    assert_close(fb_.grad, tb.grad, rtol=1e-9, atol=1e-10)


def test_complex_times_real_grad_is_real():
    fa, ta = pair((3, 4), seed=4)
    fr, tr = pair((3, 4), dtype=torch.float64, seed=5)
    loss(fb, fa * fr).backward()
    loss(torch, ta * tr).backward()
    assert fr.grad.dtype == fb.float64
    assert_close(fr.grad, tr.grad, rtol=1e-9, atol=1e-10)
    assert_close(fa.grad, ta.grad, rtol=1e-9, atol=1e-10)


def test_abs_angle_grad():
    f, t = pair((6,), seed=6)
    ((fb.abs(f) * 2).sum() + (fb.angle(f) * 3).sum()).backward()
    ((torch.abs(t) * 2).sum() + (torch.angle(t) * 3).sum()).backward()
    assert_close(f.grad, t.grad, rtol=1e-9, atol=1e-10)


def test_views_and_complex_polar_grad():
    f, t = pair((2, 3), seed=7)
    r_f, r_t = fb.view_as_real(f), torch.view_as_real(t)
    ((r_f * r_f * fb.tensor([1.0, 3.0], dtype=fb.float64)).sum()).backward()
    ((r_t * r_t * torch.tensor([1.0, 3.0], dtype=torch.float64)).sum()).backward()
    assert_close(f.grad, t.grad, rtol=1e-9, atol=1e-10)

    fre, tre = pair((5,), dtype=torch.float64, seed=8)
    fim, tim = pair((5,), dtype=torch.float64, seed=9)
    loss(fb, fb.complex(fre, fim) * fb.complex(fim, fre)).backward()
    loss(torch, torch.complex(tre, tim) * torch.complex(tim, tre)).backward()
    assert_close(fre.grad, tre.grad, rtol=1e-9, atol=1e-10)
    assert_close(fim.grad, tim.grad, rtol=1e-9, atol=1e-10)

    fa, ta = pair((4,), dtype=torch.float64, seed=10)
    fth, tth = pair((4,), dtype=torch.float64, seed=11)
    loss(fb, fb.polar(fb.abs(fa), fth)).backward()
    loss(torch, torch.polar(torch.abs(ta), tth)).backward()
    assert_close(fa.grad, ta.grad, rtol=1e-9, atol=1e-10)
    assert_close(fth.grad, tth.grad, rtol=1e-9, atol=1e-10)

    fc_, tc = pair((3,), dtype=torch.float64, seed=12)
    z_f = fb.view_as_complex(fb.stack([fc_, fc_ * 2], dim=-1)) if hasattr(fb, "stack") else None
    if z_f is not None:
        loss(fb, z_f * z_f).backward()
        loss(torch, torch.view_as_complex(torch.stack([tc, tc * 2], dim=-1)) ** 2).backward()
        assert_close(fc_.grad, tc.grad, rtol=1e-9, atol=1e-10)


def test_real_imag_grad():
    f, t = pair((4,), seed=13)
    ((fb.real(f) * 2).sum() + (fb.imag(f) * 5).sum()).backward()
    ((torch.real(t) * 2).sum() + (torch.imag(t) * 5).sum()).backward()
    assert_close(f.grad, t.grad)


def test_float16_grad_flows():
    x = torch.linspace(-2, 2, 50, dtype=torch.float32)
    f = from_torch(x).to(fb.float16).requires_grad_(True)
    t = x.to(torch.float16).requires_grad_(True)
    (fb.tanh(f * f).sum()).backward()
    (torch.tanh(t * t).sum()).backward()
    assert f.grad.dtype == fb.float16
    np.testing.assert_allclose(np.asarray(to_host(f.grad.float())), t.grad.float().numpy(), rtol=2e-3, atol=2e-3)
