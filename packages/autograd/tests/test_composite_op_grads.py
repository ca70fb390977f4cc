"""Gradients of the composite ops of PyTorch's vocabulary (addmm and the BLAS family, addcmul/addcdiv,
fmax/fmin, ldexp, logaddexp2, float_power, diff, trapezoid, cov/corrcoef, block_diag, vander, ...) against
PyTorch 2.13 in float64, and gradcheck: composites are differentiated through the ops they call."""

from __future__ import annotations

import flambeau_autograd as ag
import flambeau_core as fc
import numpy as np
import pytest
from conftest import compare_with_torch, fb_tensor, to_np, torch

pytestmark = pytest.mark.on_devices

RNG = np.random.default_rng(3)


def arr(*shape, positive=False):
    return RNG.uniform(0.5, 2.0, shape) if positive else RNG.standard_normal(shape)


BLAS = {
    "addmm": [(3, 4), (3, 5), (5, 4)],
    "addmv": [(3,), (3, 5), (5,)],
    "addr": [(3, 4), (3,), (4,)],
    "baddbmm": [(2, 3, 4), (2, 3, 5), (2, 5, 4)],
    "addbmm": [(3, 4), (2, 3, 5), (2, 5, 4)],
}


@pytest.mark.parametrize("name", list(BLAS))
@pytest.mark.parametrize("scalars", [{}, {"beta": 0.5, "alpha": -2.0}], ids=str)
def test_blas_family(name, scalars):
    arrays = [arr(*s) for s in BLAS[name]]
    compare_with_torch(
        lambda *t: getattr(fc, name)(*t, **scalars), lambda *t: getattr(torch, name)(*t, **scalars), arrays
    )


@pytest.mark.parametrize("name", list(BLAS))
def test_blas_input_broadcast(name):
    arrays = [arr(*BLAS[name][0][-1:]), *(arr(*s) for s in BLAS[name][1:])]
    compare_with_torch(lambda *t: getattr(fc, name)(*t, beta=3), lambda *t: getattr(torch, name)(*t, beta=3), arrays)


def test_addmm_beta_zero_gives_input_no_gradient_through_nan():
    arrays = [np.full((3, 4), np.nan), arr(3, 5), arr(5, 4)]
    ins = [fb_tensor(a, requires_grad=True) for a in arrays]
    fc.addmm(*ins, beta=0).sum().backward()
    for t in ins[1:]:
        assert np.isfinite(to_np(t.grad)).all()
    assert ins[0].grad is None or np.all(to_np(ins[0].grad) == 0)


@pytest.mark.parametrize("name", ["addcmul", "addcdiv"])
def test_addcmul_addcdiv(name):
    arrays = [arr(3, 4), arr(4), arr(3, 1, positive=True)]
    compare_with_torch(
        lambda *t: getattr(fc, name)(*t, value=0.7), lambda *t: getattr(torch, name)(*t, value=0.7), arrays
    )


@pytest.mark.parametrize("name", ["fmax", "fmin"])
def test_fmax_fmin_with_ties_and_nan(name):
    a, b = arr(3, 4), arr(3, 4)
    b[0, 0] = a[0, 0]  # a tie: the whole gradient goes to input, as PyTorch's
    b[1, 1] = np.nan
    a[2, 2] = np.nan
    compare_with_torch(getattr(fc, name), getattr(torch, name), [a, b], gradcheck=False)
    compare_with_torch(getattr(fc, name), getattr(torch, name), [arr(3, 4), arr(4)])


def test_ldexp_logaddexp2_rsub_float_power():
    x = arr(3, 4)
    compare_with_torch(fc.ldexp, torch.ldexp, [x, np.array([1.0, -2.0, 0.0, 3.0])])
    # PyTorch 2.13 gives 0 as the gradient where an integer exponent is negative (its pow(2, int) backward);
    # the gradient is 2 ** exponent, which gradcheck confirms here.
    e = fc.tensor([1, -2, 0, 3])
    assert ag.gradcheck(lambda a: fc.ldexp(a, e), [fb_tensor(x, requires_grad=True)])
    compare_with_torch(fc.logaddexp2, torch.logaddexp2, [arr(3, 4), arr(4)])
    compare_with_torch(lambda a, b: fc.rsub(a, b, alpha=2), lambda a, b: torch.rsub(a, b, alpha=2), [x, arr(4)])
    compare_with_torch(fc.float_power, torch.float_power, [arr(3, 4, positive=True), arr(4)])


def test_deg2rad_rad2deg():
    compare_with_torch(fc.deg2rad, torch.deg2rad, [arr(5)])
    compare_with_torch(fc.rad2deg, torch.rad2deg, [arr(5)])


@pytest.mark.parametrize(("n", "dim"), [(1, -1), (2, 0), (2, 1)])
def test_diff(n, dim):
    compare_with_torch(lambda t: fc.diff(t, n=n, dim=dim), lambda t: torch.diff(t, n=n, dim=dim), [arr(4, 5)])
    compare_with_torch(
        lambda t, p: fc.diff(t, n=n, dim=1, prepend=p),
        lambda t, p: torch.diff(t, n=n, dim=1, prepend=p),
        [arr(4, 5), arr(4, 2)],
    )


@pytest.mark.parametrize("name", ["trapezoid", "cumulative_trapezoid"])
def test_trapezoid(name):
    compare_with_torch(lambda y: getattr(fc, name)(y, dx=0.3), lambda y: getattr(torch, name)(y, dx=0.3), [arr(3, 5)])
    compare_with_torch(getattr(fc, name), getattr(torch, name), [arr(3, 5), np.sort(arr(5))])
    compare_with_torch(getattr(fc, name), getattr(torch, name), [arr(3, 5), arr(3, 5)])


def test_cov_corrcoef():
    compare_with_torch(fc.cov, torch.cov, [arr(3, 6)])
    compare_with_torch(
        lambda x, w: fc.cov(x, aweights=w), lambda x, w: torch.cov(x, aweights=w), [arr(3, 6), arr(6, positive=True)]
    )
    compare_with_torch(fc.corrcoef, torch.corrcoef, [arr(3, 6)])


def test_construction_ops():
    compare_with_torch(lambda a, b: fc.block_diag(a, b), lambda a, b: torch.block_diag(a, b), [arr(2, 3), arr(3)])
    compare_with_torch(lambda a, b: fc.cartesian_prod(a, b), lambda a, b: torch.cartesian_prod(a, b), [arr(2), arr(3)])
    compare_with_torch(lambda a: fc.combinations(a, 2), lambda a: torch.combinations(a, 2), [arr(4)])
    # PyTorch 2.13's own vander backward fails (an in-place write it saved for backward): gradcheck only.
    assert ag.gradcheck(lambda a: fc.vander(a, N=4), [fb_tensor(arr(3), requires_grad=True)])
    np.testing.assert_allclose(to_np(fc.vander(fb_tensor([2.0, 3.0]), N=3)), [[4, 2, 1], [9, 3, 1]])
    compare_with_torch(fc.ravel, torch.ravel, [arr(3, 4)])


def test_inplace_forms_record_their_op():
    x = fb_tensor(arr(3, 4), requires_grad=True)
    y = x * 1.0
    y.addmm_(fb_tensor(arr(3, 5)), fb_tensor(arr(5, 4)), beta=2.0)
    y.sum().backward()
    np.testing.assert_allclose(to_np(x.grad), np.full((3, 4), 2.0))
    assert ag.gradcheck(lambda a: (a * 1.0).addcmul_(a, a, value=0.5), [fb_tensor(arr(4), requires_grad=True)])
