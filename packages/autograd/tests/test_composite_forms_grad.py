"""Gradients of the other Python composites of PyTorch's everyday vocabulary (flambeau_core/_shape_composites.py,
_elementwise_forms.py, _complex_forms.py, _distance.py's dist): sum_to_size, diagflat, constant_pad_nd, fill,
positive, dist, vdot (complex too) and cfloat, against PyTorch 2.13 in float64, and gradcheck."""

from __future__ import annotations

import flambeau_autograd as ag
import flambeau_core as fc
import numpy as np
import pytest
from conftest import compare_with_torch, fb_tensor, to_np, torch

pytestmark = pytest.mark.on_devices

RNG = np.random.default_rng(23)


def arr(*shape):
    return RNG.standard_normal(shape)


@pytest.mark.parametrize("size", [(1, 4), (3, 1), (4,), (1,), ()])
def test_sum_to_size_gradient(size):
    compare_with_torch(lambda x: x.sum_to_size(size), lambda x: x.sum_to_size(size), [arr(3, 4)])


@pytest.mark.parametrize(("shape", "offset"), [((3,), 0), ((2, 2), 1), ((), -2)])
def test_diagflat_gradient(shape, offset):
    compare_with_torch(lambda x: fc.diagflat(x, offset), lambda x: torch.diagflat(x, offset), [arr(*shape)])


@pytest.mark.parametrize(("pad", "value"), [((1, 2), 0.0), ((1, -1, 2, 0), 2.5), ((-1, -1), 0.0), ((0, 0, 1, 1), -1.0)])
def test_constant_pad_nd_gradient(pad, value):
    compare_with_torch(
        lambda x: fc.constant_pad_nd(x, pad, value), lambda x: torch.constant_pad_nd(x, pad, value), [arr(3, 4)]
    )


def test_fill_gradients():
    """The value (a 0-dim tensor) gets the sum of the gradient; input none (it is overwritten)."""
    compare_with_torch(lambda x, v: fc.fill(x, v), lambda x, v: torch.fill(x, v), [arr(3, 4), np.array(1.5)])
    x = fb_tensor(arr(2, 3), requires_grad=True)
    out = fc.fill(x, 2.0)
    assert out.requires_grad  # in input's graph, as PyTorch's
    out.sum().backward()
    assert np.all(to_np(x.grad) == 0)


def test_positive_gradient():
    compare_with_torch(lambda x: fc.positive(x) * 2, lambda x: torch.positive(x) * 2, [arr(3)])


@pytest.mark.parametrize("p", [1, 2, 3.5, 0.5, float("inf"), -float("inf")])
def test_dist_gradient(p):
    compare_with_torch(lambda a, b: fc.dist(a, b, p), lambda a, b: torch.dist(a, b, p), [arr(3, 4), arr(4)])


def test_vdot_gradient_real():
    compare_with_torch(lambda a, b: fc.vdot(a, b), lambda a, b: torch.vdot(a, b), [arr(5), arr(5)])


def test_vdot_gradient_complex():
    """A real loss of vdot of complex vectors: PyTorch's conjugate Wirtinger gradients for both."""
    a, b = arr(4) + 1j * arr(4), arr(4) + 1j * arr(4)
    fa, fb = fc.tensor(a).requires_grad_(), fc.tensor(b).requires_grad_()
    ta, tb = torch.tensor(a, requires_grad=True), torch.tensor(b, requires_grad=True)
    for lib, x, y in ((fc, fa, fb), (torch, ta, tb)):
        z = lib.vdot(x, y)
        (z.real * 2 + z.imag * 3 + lib.abs(z)).backward()
    np.testing.assert_allclose(to_np(fa.grad), ta.grad.numpy(), rtol=1e-10)
    np.testing.assert_allclose(to_np(fb.grad), tb.grad.numpy(), rtol=1e-10)


def test_cfloat_gradient():
    x = fb_tensor(arr(3), requires_grad=True)
    t = torch.tensor(to_np(x), requires_grad=True)
    for v in (x, t):
        z = v.cdouble() * (1 + 2j)
        (z.real + z.imag).sum().backward()
    np.testing.assert_allclose(to_np(x.grad), t.grad.numpy())


def test_gradcheck_of_the_compositions():
    x = fb_tensor(arr(3, 4), requires_grad=True)
    assert ag.gradcheck(lambda t: fc.constant_pad_nd(t.sum_to_size(1, 4), (1, 1, 2, 0), 3.0), [x])
    assert ag.gradcheck(lambda t: fc.diagflat(t[0]) @ t, [fb_tensor(arr(4, 4), requires_grad=True)])
