"""Gradients of the ops widened to complex (mm, matmul, bmm, einsum,
cat/stack, cumsum, var/std, sgn, trace, kron) against PyTorch 2.13, whose
convention for complex inputs is the conjugate Wirtinger gradient; and
gradcheck (float64 real and imaginary parts through complex())."""

from __future__ import annotations

import flambeau_autograd as ag
import flambeau_core as fc
import numpy as np
import pytest
from conftest import to_np, torch

pytestmark = pytest.mark.on_devices(not_on_cuda="complex dtypes: no flambeau-cuda kernel yet")

FC = {"complex64": fc.complex64, "complex128": fc.complex128}
TH = {"complex64": torch.complex64, "complex128": torch.complex128}
TOL = {"complex64": 1e-4, "complex128": 1e-10}


def carr(shape, seed):
    rng = np.random.default_rng(seed)
    return rng.standard_normal(shape) + 1j * rng.standard_normal(shape)


def leaves(arrays, dt):
    f = [fc.tensor(a, dtype=FC[dt]).requires_grad_() for a in arrays]
    t = [torch.tensor(a, dtype=TH[dt], requires_grad=True) for a in arrays]
    return f, t


def real_loss(lib, y, w):
    """A real loss that depends on both parts of y (so the gradient is a full complex one)."""
    if y.dtype.is_complex:
        return (lib.abs(y) * w).sum() + (y.real * y.imag).sum()
    return (y * w).sum()


def check_grads(fn, arrays, dt, out_shape_seed=0):
    f, t = leaves(arrays, dt)
    ty = fn(torch, *t)
    w_np = np.random.default_rng(out_shape_seed).standard_normal(tuple(ty.shape))
    rdt = fc.float32 if dt == "complex64" else fc.float64
    real_loss(torch, ty, torch.tensor(w_np, dtype=ty.real.dtype)).backward()
    fy = fn(fc, *f)
    np.testing.assert_allclose(to_np(fy), ty.detach().numpy(), rtol=TOL[dt], atol=TOL[dt])
    real_loss(fc, fy, fc.tensor(w_np, dtype=rdt if fy.dtype.is_complex else fy.dtype)).backward()
    for a, b in zip(f, t, strict=True):
        assert a.grad is not None and a.grad.dtype == a.dtype
        np.testing.assert_allclose(to_np(a.grad), b.grad.numpy(), rtol=TOL[dt] * 10, atol=TOL[dt] * 10)


def gradcheck_complex(fn, shapes, seed=0):
    """gradcheck over the real and imaginary parts (float64) of complex inputs; fn's output is
    returned through view_as_real when complex."""
    rng = np.random.default_rng(seed)
    parts = [fc.tensor(rng.standard_normal(s), dtype=fc.float64).requires_grad_() for s in shapes for _ in (0, 1)]

    def g(*ps):
        zs = [fc.complex(ps[2 * i], ps[2 * i + 1]) for i in range(len(shapes))]
        y = fn(*zs)
        return fc.view_as_real(y) if y.dtype.is_complex else y

    assert ag.gradcheck(g, parts)


DTS = ["complex64", "complex128"]


@pytest.mark.parametrize("dt", DTS)
def test_mm_matmul_bmm_grad(dt):
    check_grads(lambda L, a, b: L.mm(a, b), [carr((3, 4), 1), carr((4, 2), 2)], dt)
    check_grads(lambda L, a, b: a @ b, [carr((2, 3, 4), 3), carr((4, 5), 4)], dt)
    check_grads(lambda L, a, b: L.bmm(a, b), [carr((2, 3, 4), 5), carr((2, 4, 2), 6)], dt)
    check_grads(lambda L, a, b: L.matmul(a.transpose(-2, -1), b), [carr((4, 3), 7), carr((4, 2), 8)], dt)
    check_grads(lambda L, a, b: L.matmul(a, b), [carr((5,), 9), carr((5,), 10)], dt)
    check_grads(lambda L, a, b: L.einsum("ij,jk->ik", a, b), [carr((3, 4), 11), carr((4, 2), 12)], dt)
    check_grads(lambda L, a: a.mH @ a, [carr((4, 3), 13)], dt)


@pytest.mark.parametrize("dt", DTS)
def test_cat_stack_cumsum_var_grad(dt):
    check_grads(lambda L, a, b: L.cat([a, b], 1), [carr((2, 3), 1), carr((2, 2), 2)], dt)
    check_grads(lambda L, a, b: L.stack([a, b]), [carr((2, 3), 3), carr((2, 3), 4)], dt)
    check_grads(lambda L, a: L.roll(a, 1, 0), [carr((4, 2), 5)], dt)
    check_grads(lambda L, a: a.cumsum(1), [carr((3, 4), 6)], dt)
    check_grads(lambda L, a: a.var(1), [carr((3, 5), 7)], dt)
    check_grads(lambda L, a: a.std(), [carr((3, 5), 8)], dt)


@pytest.mark.parametrize("dt", DTS)
def test_sgn_trace_kron_grad(dt):
    check_grads(lambda L, a: L.sgn(a), [carr((3, 4), 1)], dt)
    check_grads(lambda L, a: L.trace(a), [carr((3, 4), 2)], dt)
    check_grads(lambda L, a, b: L.kron(a, b), [carr((2, 3), 3), carr((2, 2), 4)], dt)


def test_sgn_grad_at_zero_is_zero():
    a = np.array([0.0 + 0.0j, 1.0 - 2.0j])
    check_grads(lambda L, x: L.sgn(x), [a], "complex128")


def test_gradcheck_complex128():
    gradcheck_complex(lambda a, b: fc.mm(a, b), [(3, 4), (4, 2)])
    gradcheck_complex(lambda a, b: fc.matmul(a, b), [(2, 3, 4), (4, 2)], seed=1)
    gradcheck_complex(lambda a, b: fc.bmm(a, b.mH), [(2, 3, 4), (2, 2, 4)], seed=2)
    gradcheck_complex(lambda a: fc.sgn(a), [(3, 3)], seed=3)
    gradcheck_complex(lambda a: fc.trace(a), [(3, 3)], seed=4)
    gradcheck_complex(lambda a, b: fc.kron(a, b), [(2, 2), (3, 1)], seed=5)
    gradcheck_complex(lambda a: a.var(0), [(4, 3)], seed=6)
    gradcheck_complex(lambda a: a.cumsum(0), [(4, 3)], seed=7)


def well_conditioned(shape, seed):
    return carr(shape, seed) + 3 * np.eye(shape[-1])


@pytest.mark.parametrize("dt", DTS)
def test_linalg_inv_solve_det_grad(dt):
    check_grads(lambda L, a: L.linalg.inv(a), [well_conditioned((3, 3), 1)], dt)
    check_grads(lambda L, a: L.linalg.inv(a), [well_conditioned((2, 4, 4), 2)], dt)
    check_grads(lambda L, a, b: L.linalg.solve(a, b), [well_conditioned((3, 3), 3), carr((3, 2), 4)], dt)
    check_grads(lambda L, a: L.linalg.det(a), [well_conditioned((2, 3, 3), 5)], dt)
    check_grads(lambda L, a: L.linalg.slogdet(a)[1], [well_conditioned((3, 3), 6)], dt)
    check_grads(lambda L, a: L.linalg.slogdet(a)[0], [well_conditioned((3, 3), 7)], dt)


def test_linalg_real_slogdet_sign_only_grad_is_zero():
    a = fc.tensor(np.eye(3) * 2.0).requires_grad_()
    fc.linalg.slogdet(a)[0].sum().backward()
    assert a.grad.abs().sum().item() == 0
    b = fc.tensor(np.eye(3) * 2.0).requires_grad_()
    t = torch.tensor(np.eye(3) * 2.0, requires_grad=True)
    fc.linalg.det(b).backward()
    torch.linalg.det(t).backward()
    np.testing.assert_allclose(to_np(b.grad), t.grad.numpy(), rtol=1e-12)


def test_linalg_gradcheck_complex128():
    def wc(a):
        return a + 3 * fc.eye(a.shape[-1], dtype=a.dtype)

    gradcheck_complex(lambda a: fc.linalg.inv(wc(a)), [(3, 3)], seed=10)
    gradcheck_complex(lambda a, b: fc.linalg.solve(wc(a), b), [(3, 3), (3, 2)], seed=11)
    gradcheck_complex(lambda a: fc.linalg.det(wc(a)), [(2, 3, 3)], seed=12)
    gradcheck_complex(lambda a: fc.linalg.slogdet(wc(a))[0], [(3, 3)], seed=13)
    gradcheck_complex(lambda a: fc.linalg.slogdet(wc(a))[1], [(3, 3)], seed=14)


@pytest.mark.parametrize("dt", DTS)
def test_norm_grad(dt):
    check_grads(lambda L, a: L.linalg.vector_norm(a), [carr((3, 4), 1)], dt)
    check_grads(lambda L, a: L.linalg.vector_norm(a, 3, -1), [carr((3, 4), 2)], dt)
    check_grads(lambda L, a: L.linalg.matrix_norm(a), [carr((2, 3, 4), 3)], dt)
    check_grads(lambda L, a: L.linalg.norm(a, dim=0), [carr((3, 4), 4)], dt)
    gradcheck_complex(lambda a: fc.linalg.vector_norm(a), [(3, 4)], seed=20)


def hpd(shape, seed):
    a = carr(shape, seed)
    return a @ np.conj(np.swapaxes(a, -1, -2)) + shape[-1] * np.eye(shape[-1])


@pytest.mark.parametrize("dt", DTS)
@pytest.mark.parametrize("upper", [False, True])
def test_cholesky_grad(dt, upper):
    # The input is made Hermitian inside the function (as PyTorch's tests do), so the gradient is well defined.
    def f(L, a):
        return L.linalg.cholesky((a + a.mH) * 0.5, upper=upper)

    check_grads(f, [hpd((3, 3), 1)], dt)
    check_grads(f, [hpd((2, 4, 4), 2)], dt)


def test_cholesky_gradcheck_complex128():
    def f(a):
        h = a @ a.mH + 3 * fc.eye(a.shape[-1], dtype=a.dtype)
        return fc.linalg.cholesky(h)

    gradcheck_complex(f, [(3, 3)], seed=30)
    gradcheck_complex(lambda a: fc.linalg.cholesky(a @ a.mH + 3 * fc.eye(3, dtype=a.dtype), upper=True), [(3, 3)])


@pytest.mark.parametrize("dt", DTS)
def test_eigh_grad(dt):
    def herm(L, a):
        return (a + a.mH) * 0.5

    # eigenvalues, and a phase-invariant function of the eigenvectors (as PyTorch's tests use)
    check_grads(lambda L, a: L.linalg.eigvalsh(herm(L, a)), [carr((4, 4), 1)], dt)
    check_grads(lambda L, a: L.linalg.eigh(herm(L, a))[0], [carr((2, 3, 3), 2)], dt)
    check_grads(lambda L, a: L.abs(L.linalg.eigh(herm(L, a))[1]), [carr((3, 3), 3)], dt)


def test_eigh_gradcheck_complex128():
    gradcheck_complex(lambda a: fc.linalg.eigvalsh(a + a.mH), [(3, 3)], seed=40)
    gradcheck_complex(lambda a: fc.abs(fc.linalg.eigh(a + a.mH)[1]), [(3, 3)], seed=41)


@pytest.mark.parametrize("dt", DTS)
def test_prod_cumprod_grad(dt):
    check_grads(lambda L, a: a.prod(1), [carr((3, 4), 1)], dt)
    check_grads(lambda L, a: a.prod(), [carr((2, 3), 2)], dt)
    check_grads(lambda L, a: a.cumprod(1), [carr((3, 4), 3)], dt)
    with_zero = carr((2, 4), 4)
    with_zero[0, 1] = 0
    check_grads(lambda L, a: a.prod(1), [with_zero], dt)
    check_grads(lambda L, a: a.cumprod(1), [with_zero], dt)


def test_prod_cumprod_gradcheck_complex128():
    gradcheck_complex(lambda a: a.prod(0), [(3, 2)], seed=50)
    gradcheck_complex(lambda a: a.cumprod(1), [(2, 4)], seed=51)


@pytest.mark.parametrize("dt", ["complex64", "complex128"])
def test_reciprocal_and_reflected_division_grad(dt):
    # -grad * conj(1 / z^2): the conjugate was missing (0.7 / z is z.reciprocal() * 0.7, as torch's).
    check_grads(lambda lib, z: lib.reciprocal(z), [carr((3, 4), 11)], dt)
    check_grads(lambda lib, z: 0.7 / z, [carr((3, 4), 12)], dt)
