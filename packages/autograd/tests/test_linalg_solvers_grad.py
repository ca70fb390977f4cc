"""Gradients of flambeau.linalg's composite solvers and matrix functions against PyTorch 2.13 and finite
differences (gradcheck, float64): solve_triangular (its gradient lands on the triangle it reads),
triangular_solve, cholesky_solve, cholesky_inverse, the _ex forms, matrix_exp (through the products and the
solve of its Pade approximant, at several scalings), cond, vander, tensorinv and tensorsolve."""

from __future__ import annotations

import warnings

import flambeau_autograd as ag
import flambeau_core as fc
import numpy as np
import pytest
from conftest import compare_with_torch, fb_tensor, torch
from test_linalg_complex_grad import carr, check_grads

pytestmark = pytest.mark.on_devices(not_on_cuda="linalg: no flambeau-cuda kernel yet")

LA = fc.linalg
TLA = torch.linalg


def rand(shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape)


def invertible(shape, seed=0):
    n = shape[-1]
    return rand(shape, seed) + 2 * np.sqrt(n) * np.eye(n)


@pytest.mark.parametrize("upper", [True, False])
@pytest.mark.parametrize("left", [True, False])
@pytest.mark.parametrize("unitriangular", [True, False])
def test_solve_triangular(upper, left, unitriangular):
    kw = dict(upper=upper, left=left, unitriangular=unitriangular)
    b = rand((2, 4, 3) if left else (2, 3, 4), 2)
    compare_with_torch(
        lambda A, B: LA.solve_triangular(A, B, **kw),
        lambda A, B: TLA.solve_triangular(A, B, **kw),
        [invertible((2, 4, 4), 1), b],
    )


@pytest.mark.parametrize("transpose", [True, False])
def test_triangular_solve(transpose):
    def th(b, A):
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return torch.triangular_solve(b, A, False, transpose).solution

    compare_with_torch(
        lambda b, A: fc.triangular_solve(b, A, False, transpose).solution, th, [rand((4, 2), 3), invertible((4, 4), 4)]
    )


@pytest.mark.parametrize("upper", [True, False])
def test_cholesky_solve_and_inverse(upper):
    # differentiate through a factor of an SPD matrix so the Cholesky factor is a valid input on both sides
    def fb_factor(X):
        return LA.cholesky(X @ X.transpose(-2, -1) + 4 * fc.eye(4, dtype=fc.float64), upper=upper)

    def th_factor(X):
        return TLA.cholesky(X @ X.transpose(-2, -1) + 4 * torch.eye(4, dtype=torch.float64), upper=upper)

    x, b = rand((2, 4, 4), 5), rand((2, 4, 3), 6)
    compare_with_torch(
        lambda B, X: fc.cholesky_solve(B, fb_factor(X), upper),
        lambda B, X: torch.cholesky_solve(B, th_factor(X), upper),
        [b, x],
    )
    compare_with_torch(
        lambda X: fc.cholesky_inverse(fb_factor(X), upper), lambda X: torch.cholesky_inverse(th_factor(X), upper), [x]
    )


def test_ex_forms():
    a = invertible((2, 4, 4), 7)
    spd = a @ a.transpose(0, 2, 1)
    compare_with_torch(lambda A: LA.inv_ex(A).inverse, lambda A: TLA.inv_ex(A).inverse, [a])
    compare_with_torch(lambda A: LA.cholesky_ex(A).L, lambda A: TLA.cholesky_ex(A).L, [spd], gradcheck=False)
    compare_with_torch(
        lambda A, B: LA.solve_ex(A, B).result, lambda A, B: TLA.solve_ex(A, B).result, [a, rand((2, 4, 2), 8)]
    )


@pytest.mark.parametrize("scale", [0.05, 1.0, 12.0])
def test_matrix_exp(scale):
    a = rand((2, 3, 3), 9) * scale
    compare_with_torch(LA.matrix_exp, TLA.matrix_exp, [a], atol=1e-8 * float(np.exp(3 * scale * 3)))
    compare_with_torch(lambda A: A.matrix_exp(), torch.matrix_exp, [a[0]], atol=1e-8 * float(np.exp(3 * scale * 3)))


@pytest.mark.parametrize("p", [None, -2, "nuc"])
def test_cond(p):
    compare_with_torch(lambda A: LA.cond(A, p), lambda A: TLA.cond(A, p), [invertible((2, 3, 3), 10)])


@pytest.mark.parametrize("p", ["fro", np.inf, -np.inf, 1, -1])
def test_cond_of_inverse_norms_against_finite_differences(p):
    # PyTorch 2.13's own backward of cond raises for these norms (it fills inv_ex's output in place), so
    # finite differences are the oracle here
    A = fb_tensor(invertible((2, 3, 3), 10), requires_grad=True)
    assert ag.gradcheck(lambda A: LA.cond(A, p), [A])


def test_vander_tensorinv_tensorsolve():
    compare_with_torch(lambda x: LA.vander(x, N=4), lambda x: TLA.vander(x, N=4), [rand((2, 3), 11)])
    compare_with_torch(
        lambda A: LA.tensorinv(A, 1), lambda A: TLA.tensorinv(A, 1), [invertible((6, 6), 12).reshape(6, 2, 3)]
    )
    compare_with_torch(LA.tensorsolve, TLA.tensorsolve, [invertible((6, 6), 13).reshape(2, 3, 6), rand((2, 3), 14)])


@pytest.mark.parametrize("dt", ["complex64", "complex128"])
def test_complex_solvers_and_matrix_exp(dt):
    n = 4
    a = carr((2, n, n), 20) + 2 * np.sqrt(n) * np.eye(n)
    b = carr((2, n, 3), 21)
    check_grads(lambda lib, A, B: lib.linalg.solve_triangular(A, B, upper=True), [a, b], dt)
    check_grads(lambda lib, A, B: lib.linalg.solve_triangular(A, B, upper=False, unitriangular=True), [a, b], dt)
    check_grads(lambda lib, A: lib.linalg.inv_ex(A).inverse, [a], dt)
    check_grads(lambda lib, A: lib.linalg.matrix_exp(A), [carr((2, 3, 3), 22)], dt)
    check_grads(lambda lib, A: lib.linalg.cond(A), [a], dt)

    def spd_factor(lib, X):
        eye = lib.eye(n, dtype=X.dtype)
        return lib.linalg.cholesky(X @ X.transpose(-2, -1).conj() + n * eye)

    check_grads(lambda lib, B, X: lib.cholesky_solve(B, spd_factor(lib, X)), [b, carr((2, n, n), 23)], dt)
    check_grads(lambda lib, X: lib.cholesky_inverse(spd_factor(lib, X)), [carr((2, n, n), 24)], dt)


def test_householder_product():
    compare_with_torch(LA.householder_product, TLA.householder_product, [rand((2, 5, 3), 30), rand((2, 2), 31)])


@pytest.mark.parametrize("dt", ["complex64", "complex128"])
def test_complex_householder_product(dt):
    check_grads(lambda lib, A, t: lib.linalg.householder_product(A, t), [carr((5, 3), 32), carr((3,), 33)], dt)


def test_householder_product_without_reflectors_is_still_differentiable():
    compare_with_torch(LA.householder_product, TLA.householder_product, [rand((4, 3), 34), np.zeros((0,))])
