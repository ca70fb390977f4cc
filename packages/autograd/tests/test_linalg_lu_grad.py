"""Gradients of the LU family (src/composite/linalg_lu_backward.cpp) against PyTorch 2.13 and finite
differences (gradcheck, float64): linalg.lu_factor and linalg.lu on square, wide and tall batches,
lu_unpack, lu_solve in LU and B for every left/adjoint (broadcast batch dims), complex128, ormqr through
householder_product; LDL and geqrf raise PyTorch's "not implemented" at backward."""

from __future__ import annotations

import flambeau_autograd as ag
import flambeau_core as fc
import numpy as np
import pytest
from conftest import compare_with_torch, torch
from test_linalg_complex_grad import carr, check_grads

pytestmark = pytest.mark.on_devices(not_on_cuda="linalg: no flambeau-cuda kernel yet")

LA = fc.linalg
TLA = torch.linalg


def rand(shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape)


@pytest.mark.parametrize("shape", [(4, 4), (2, 3, 5), (2, 5, 3)])
def test_lu_factor_gradient(shape):
    compare_with_torch(lambda A: LA.lu_factor(A).LU, lambda A: TLA.lu_factor(A).LU, [rand(shape, 1)])


@pytest.mark.parametrize("shape", [(4, 4), (3, 5), (2, 5, 3)])
@pytest.mark.parametrize("which", [1, 2])
def test_lu_gradient_of_L_and_U(shape, which):
    compare_with_torch(lambda A: LA.lu(A)[which], lambda A: TLA.lu(A)[which], [rand(shape, 2)])


def test_lu_unpack_gradient_and_both_outputs():
    def fb_fn(A):
        P, L, U = fc.lu_unpack(*LA.lu_factor(A))
        return L @ U

    def th_fn(A):
        P, L, U = torch.lu_unpack(*TLA.lu_factor(A))
        return L @ U

    compare_with_torch(fb_fn, th_fn, [rand((2, 4, 4), 3)])


@pytest.mark.parametrize("left", [True, False])
@pytest.mark.parametrize("adjoint", [True, False])
def test_lu_solve_gradient_in_lu_and_b(left, adjoint):
    a = rand((2, 3, 3), 4) + 3 * np.eye(3)
    b = rand((3, 1, 3, 2) if left else (3, 1, 2, 3), 5)

    def fb_fn(A, B):
        LU, piv = LA.lu_factor(A)
        return LA.lu_solve(LU, piv, B, left=left, adjoint=adjoint)

    def th_fn(A, B):
        LU, piv = TLA.lu_factor(A)
        return TLA.lu_solve(LU, piv, B, left=left, adjoint=adjoint)

    compare_with_torch(fb_fn, th_fn, [a, b])


def test_lu_solve_gradient_in_packed_lu_directly():
    a = rand((3, 3), 6) + 3 * np.eye(3)
    LU, piv = LA.lu_factor(fc.tensor(a, dtype=fc.float64))
    LU = LU.detach().requires_grad_()
    B = fc.tensor(rand((3, 2), 7), dtype=fc.float64).requires_grad_()
    assert ag.gradcheck(lambda lu, b: LA.lu_solve(lu, piv, b, adjoint=True), [LU, B])
    assert ag.gradgradcheck(lambda lu, b: LA.lu_solve(lu, piv, b), [LU, B])


def test_lu_gradients_complex128():
    check_grads(lambda lib, A: lib.linalg.lu_factor(A).LU, [carr((2, 3, 3), 8)], "complex128")
    check_grads(lambda lib, A: lib.linalg.lu(A).U, [carr((3, 4), 9)], "complex128")
    check_grads(lambda lib, A: lib.linalg.lu(A).L, [carr((4, 3), 10)], "complex128")

    def solve(lib, A, B):
        LU, piv = lib.linalg.lu_factor(A)
        return lib.linalg.lu_solve(LU, piv, B, adjoint=True)

    check_grads(solve, [carr((3, 3), 11) + 3 * np.eye(3), carr((3, 2), 12)], "complex128")


@pytest.mark.parametrize("left", [True, False])
@pytest.mark.parametrize("transpose", [True, False])
def test_ormqr_gradient(left, transpose):
    a, c = rand((4, 3), 13), rand((4, 2) if left else (2, 4), 14)
    tau = np.random.default_rng(15).uniform(0.5, 1.5, (3,))
    compare_with_torch(
        lambda A, t, C: fc.ormqr(A, t, C, left, transpose),
        lambda A, t, C: torch.ormqr(A, t, C, left, transpose),
        [a, tau, c],
    )


def test_ldl_and_geqrf_have_no_derivative():
    A = fc.tensor(rand((3, 3), 16) + rand((3, 3), 16).T, dtype=fc.float64).requires_grad_()
    with pytest.raises(NotImplementedError, match=r"\[linalg.ldl_factor\] the derivative for 'linalg_ldl_factor_ex'"):
        LA.ldl_factor(A).LD.sum().backward()
    with pytest.raises(NotImplementedError, match=r"\[geqrf\] the derivative for 'geqrf' is not implemented"):
        fc.geqrf(A).a.sum().backward()
    LD, piv = LA.ldl_factor(A.detach())
    B = fc.ones(3, 1, dtype=fc.float64).requires_grad_()
    with pytest.raises(NotImplementedError, match=r"\[linalg.ldl_solve\] the derivative for 'linalg_ldl_solve'"):
        LA.ldl_solve(LD, piv, B).sum().backward()
