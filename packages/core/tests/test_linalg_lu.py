"""flambeau_core.linalg's LU and LDL families and geqrf/ormqr (flambeau_core/_linalg_lu.py over
src/cpu/linalg/lapack_lu.cpp) against PyTorch 2.13: lu_factor(_ex), lu, lu_solve (left/adjoint,
broadcasting), torch.lu/lu_solve/lu_unpack, ldl_factor(_ex)/ldl_solve (symmetric and Hermitian), geqrf
and ormqr; random, batched, rectangular, singular (info > 0), empty and complex inputs; the
reconstruction invariants; out=; the error paths (type and message). Gradients are in
packages/autograd/tests/test_linalg_lu_grad.py."""

from __future__ import annotations

import flambeau_core as fc
import numpy as np
import pytest
import torch
from helpers import to_numpy
from test_linalg_solvers import fct, rand, th

pytestmark = pytest.mark.on_devices(not_on_cuda="LAPACK: no flambeau-cuda kernel yet")

LA = fc.linalg
TLA = torch.linalg
DTYPES = [np.float32, np.float64, np.complex64, np.complex128]


def tol(dtype):
    single = np.dtype(dtype) in (np.float32, np.complex64)
    return dict(rtol=2e-4, atol=2e-4) if single else dict(rtol=1e-9, atol=1e-9)


def close(x, expected, dtype):
    np.testing.assert_allclose(to_numpy(x), expected.resolve_conj().numpy(), **tol(dtype))


def symmetric(shape, dtype, seed=0, hermitian=False):
    a = rand(shape, dtype, seed)
    at = np.swapaxes(a, -1, -2)
    return (a + (at.conj() if hermitian else at)).astype(dtype)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(4, 4), (3, 5, 5), (2, 6, 4), (2, 3, 4, 6), (1, 1)])
def test_lu_factor_matches_torch_and_reconstructs(dtype, shape):
    a = rand(shape, dtype, 1)
    LU, piv = LA.lu_factor(fct(a))
    tLU, tpiv = TLA.lu_factor(th(a))
    assert LU.dtype == fct(a).dtype and piv.dtype == fc.int32
    assert tuple(piv.shape) == tuple(tpiv.shape)
    np.testing.assert_array_equal(to_numpy(piv), tpiv.numpy())
    close(LU, tLU, dtype)
    P, L, U = LA.lu(fct(a))
    tP, tL, tU = TLA.lu(th(a))
    close(P, tP, dtype)
    close(L, tL, dtype)
    close(U, tU, dtype)
    np.testing.assert_allclose(to_numpy(P @ L @ U), a, **tol(dtype))
    P2, L2, U2 = fc.lu_unpack(LU, piv)
    np.testing.assert_array_equal(to_numpy(P2), to_numpy(P))
    np.testing.assert_array_equal(to_numpy(L2), to_numpy(L))
    np.testing.assert_array_equal(to_numpy(U2), to_numpy(U))


@pytest.mark.parametrize("dtype", [np.float64, np.complex128])
def test_lu_factor_ex_singular_info_and_errors(dtype):
    a = rand((3, 4, 4), dtype, 2)
    a[1, :, 2] = 0  # a zero column: U[2, 2] = 0 exactly
    a[2] = 0
    LU, piv, info = LA.lu_factor_ex(fct(a))
    tLU, tpiv, tinfo = TLA.lu_factor_ex(th(a))
    np.testing.assert_array_equal(to_numpy(info), tinfo.numpy())
    assert to_numpy(info).tolist() == [0, 3, 1] and info.dtype == fc.int32
    np.testing.assert_array_equal(to_numpy(piv), tpiv.numpy())
    close(LU, tLU, dtype)
    P, L, U = LA.lu(fct(a))  # linalg.lu factors a singular matrix without complaint
    np.testing.assert_allclose(to_numpy(P @ L @ U), a, atol=1e-12)
    with pytest.raises(fc.FlambeauError, match=r"\[linalg.lu_factor\] \(Batch element 1\): U\[3,3\] is zero"):
        LA.lu_factor(fct(a))
    with pytest.raises(fc.FlambeauError, match=r"U\[3,3\] is zero"):
        LA.lu_factor_ex(fct(a), check_errors=True)
    with pytest.raises(fc.FlambeauError, match=r"U\[1,1\] is zero"):
        fc.lu(fct(a[2]))
    LU2, piv2, infos = fc.lu(fct(a), get_infos=True)
    assert to_numpy(infos).tolist() == [0, 3, 1]
    assert type(infos).__name__ == "Tensor" and LU2.shape == LU.shape


def test_lu_rejects_bad_input():
    with pytest.raises(fc.FlambeauError, match=r"\[linalg.lu_factor\] LU without pivoting is not implemented"):
        LA.lu_factor(fc.ones(2, 2), pivot=False)
    with pytest.raises(fc.FlambeauError, match="LU without pivoting"):
        LA.lu(fc.ones(2, 2), pivot=False)
    with pytest.raises(TypeError, match=r"\[linalg.lu_factor\] expected a float32 or float64 tensor for A, got int64"):
        LA.lu_factor(fc.ones(2, 2, dtype=fc.int64))
    with pytest.raises(fc.FlambeauError, match=r"at least 2 dimensions, got shape \(3,\)"):
        LA.lu_factor(fc.ones(3))
    with pytest.raises(TypeError, match=r"\[linalg.lu_factor\] expected a Tensor for A, got list"):
        LA.lu_factor([[1.0]])
    with pytest.raises(TypeError, match=r"\[linalg.lu\] expected pivot to be a bool"):
        LA.lu(fc.ones(2, 2), pivot=1)


def test_lu_empty_and_named_tuples():
    LU, piv = LA.lu_factor(fc.ones(0, 3))
    assert tuple(LU.shape) == (0, 3) and tuple(piv.shape) == (0,)
    P, L, U = LA.lu(fc.ones(2, 0, 3))
    assert [tuple(t.shape) for t in (P, L, U)] == [(2, 0, 0), (2, 0, 0), (2, 0, 3)]
    r = LA.lu(fc.eye(2))
    assert type(r).__name__ == "linalg_lu" and r._fields == ("P", "L", "U")
    assert LA.lu_factor(fc.eye(2))._fields == ("LU", "pivots")
    assert LA.lu_factor_ex(fc.eye(2))._fields == ("LU", "pivots", "info")
    assert fc.lu_unpack(*LA.lu_factor(fc.eye(2)))._fields == ("P", "L", "U")
    assert isinstance(fc.lu(fc.eye(2)), tuple) and len(fc.lu(fc.eye(2))) == 2
    assert fc.eye(2).lu()[1].tolist() == [1, 2]


def test_lu_out():
    a = rand((3, 3), np.float64, 3)
    outs = (fc.empty(0, dtype=fc.float64), fc.empty(0, dtype=fc.int32))
    res = LA.lu_factor(fct(a), out=outs)
    assert res[0] is outs[0] and res[1] is outs[1]
    close(outs[0], TLA.lu_factor(th(a))[0], np.float64)
    o = (fc.empty(0, dtype=fc.float64), fc.empty(0, dtype=fc.float64), fc.empty(0, dtype=fc.float64))
    LA.lu(fct(a), out=o)
    close(o[2], TLA.lu(th(a))[2], np.float64)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("left", [True, False])
@pytest.mark.parametrize("adjoint", [True, False])
def test_lu_solve_matches_torch(dtype, left, adjoint):
    a = rand((2, 4, 4), dtype, 4)
    b = rand((3, 1, 4, 2) if left else (3, 1, 2, 4), dtype, 5)  # batch dims broadcast: (3, 2)
    LU, piv = LA.lu_factor(fct(a))
    tLU, tpiv = TLA.lu_factor(th(a))
    X = LA.lu_solve(LU, piv, fct(b), left=left, adjoint=adjoint)
    tX = TLA.lu_solve(tLU, tpiv, th(b), left=left, adjoint=adjoint)
    assert tuple(X.shape) == tuple(tX.shape) == ((3, 2, 4, 2) if left else (3, 2, 2, 4))
    t = tol(dtype)
    np.testing.assert_allclose(to_numpy(X), tX.resolve_conj().numpy(), rtol=t["rtol"] * 50, atol=t["atol"] * 50)


def test_lu_solve_deprecated_spelling_and_method():
    a, b = rand((3, 3), np.float64, 6), rand((3, 2), np.float64, 7)
    LU, piv = LA.lu_factor(fct(a))
    X = fc.lu_solve(fct(b), LU, piv)
    np.testing.assert_allclose(to_numpy(X), np.linalg.solve(a, b), rtol=1e-10)
    np.testing.assert_allclose(to_numpy(fct(b).lu_solve(LU, piv)), np.linalg.solve(a, b), rtol=1e-10)


def test_lu_solve_errors():
    LU, piv = LA.lu_factor(fc.eye(3, dtype=fc.float64))
    B = fc.ones(3, 2, dtype=fc.float64)
    with pytest.raises(TypeError, match=r"\[linalg.lu_solve\] pivots should be an int32 tensor, got flambeau.int64"):
        LA.lu_solve(LU, piv.to(fc.int64), B)
    with pytest.raises(fc.FlambeauError, match=r"LU.shape\[:-1\] and pivots.shape to be the same"):
        LA.lu_solve(LU, piv[:2], B)
    with pytest.raises(TypeError, match=r"same dtype, got float64 and float32"):
        LA.lu_solve(LU, piv, B.float())
    with pytest.raises(fc.FlambeauError, match=r"incompatible shapes of LU and B for the equation AX = B"):
        LA.lu_solve(LU, piv, fc.ones(2, 2, dtype=fc.float64))
    with pytest.raises(fc.FlambeauError, match=r"cannot be broadcast"):
        LA.lu_solve(LU.expand(2, 3, 3), piv.expand(2, 3), fc.ones(4, 3, 2, dtype=fc.float64))
    bad = fc.tensor([1, 7, 3], dtype=fc.int32)  # out of range: never handed to LAPACK
    with pytest.raises(fc.FlambeauError, match=r"pivots must be 1-based row indices in \[1, 3\], got 7"):
        LA.lu_solve(LU, bad, B)
    with pytest.raises(fc.FlambeauError, match=r"\[lu_unpack\] pivots must be 1-based row indices in \[1, 3\], got 0"):
        fc.lu_unpack(LU, fc.tensor([0, 2, 3], dtype=fc.int32))
    with pytest.raises(TypeError, match=r"LU_pivots is expected to be an int32 tensor, got flambeau.int64"):
        fc.lu_unpack(LU, piv.to(fc.int64))


@pytest.mark.parametrize("shape", [(5, 3), (3, 5), (2, 4, 4)])
def test_lu_unpack_flags(shape):
    a = rand(shape, np.float64, 8)
    LU, piv = LA.lu_factor(fct(a))
    tLU, tpiv = TLA.lu_factor(th(a))
    for ud in (True, False):
        for up in (True, False):
            P, L, U = fc.lu_unpack(LU, piv, unpack_data=ud, unpack_pivots=up)
            tP, tL, tU = torch.lu_unpack(tLU, tpiv, unpack_data=ud, unpack_pivots=up)
            for x, y in ((P, tP), (L, tL), (U, tU)):
                assert tuple(x.shape) == tuple(y.shape)
                np.testing.assert_allclose(to_numpy(x), y.numpy(), atol=1e-12)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("hermitian", [False, True])
def test_ldl_factor_and_solve_match_torch(dtype, hermitian):
    a = symmetric((3, 5, 5), dtype, 9, hermitian)
    LD, piv = LA.ldl_factor(fct(a), hermitian=hermitian)
    tLD, tpiv = TLA.ldl_factor(th(a), hermitian=hermitian)
    np.testing.assert_array_equal(to_numpy(piv), tpiv.numpy())
    t = tol(dtype)
    np.testing.assert_allclose(to_numpy(LD), tLD.numpy(), rtol=t["rtol"] * 10, atol=t["atol"] * 10)
    b = rand((2, 1, 5, 3), dtype, 10)
    X = LA.ldl_solve(LD, piv, fct(b), hermitian=hermitian)
    # torch 2.13's ldl_solve crashes when LD's batch dims must broadcast: the oracle gets them expanded
    tX = TLA.ldl_solve(
        tLD.expand(2, 3, 5, 5).contiguous(), tpiv.expand(2, 3, 5).contiguous(), th(b), hermitian=hermitian
    )
    assert tuple(X.shape) == (2, 3, 5, 3)
    np.testing.assert_allclose(to_numpy(X), tX.numpy(), rtol=t["rtol"] * 100, atol=t["atol"] * 100)
    np.testing.assert_allclose(
        np.asarray(a)[None] @ to_numpy(X), np.broadcast_to(b, X.shape), **{k: v * 100 for k, v in t.items()}
    )


def test_ldl_reads_the_lower_triangle_and_reports_singular_d():
    a = symmetric((4, 4), np.float64, 11)
    garbage = a.copy()
    garbage[np.triu_indices(4, 1)] = 99.0
    np.testing.assert_array_equal(to_numpy(LA.ldl_factor(fct(garbage))[0]), to_numpy(LA.ldl_factor(fct(a))[0]))
    z = np.zeros((2, 3, 3))
    z[0] = np.eye(3)
    LD, piv, info = LA.ldl_factor_ex(fct(z))
    tLD, tpiv, tinfo = TLA.ldl_factor_ex(th(z))
    assert to_numpy(info).tolist() == tinfo.tolist() == [0, 1]
    np.testing.assert_array_equal(to_numpy(piv), tpiv.numpy())
    with pytest.raises(fc.FlambeauError, match=r"\[linalg.ldl_factor\] \(Batch element 1\): D\[1,1\] is exactly zero"):
        LA.ldl_factor(fct(z))
    assert LA.ldl_factor_ex(fct(z))._fields == ("LD", "pivots", "info")


def test_ldl_errors():
    with pytest.raises(fc.FlambeauError, match=r"\[linalg.ldl_factor\] A must be batches of square matrices"):
        LA.ldl_factor(fc.ones(2, 3))
    with pytest.raises(TypeError, match=r"\[linalg.ldl_factor\] expected a float32 or float64 tensor for A, got int32"):
        LA.ldl_factor(fc.ones(2, 2, dtype=fc.int32))
    LD, piv = LA.ldl_factor(fc.eye(3, dtype=fc.float64))
    B = fc.ones(3, 1, dtype=fc.float64)
    with pytest.raises(fc.FlambeauError, match=r"\[linalg.ldl_solve\] a negative pivot \(a 2x2 block\) at the last"):
        LA.ldl_solve(LD, fc.tensor([1, 2, -3], dtype=fc.int32), B)
    with pytest.raises(fc.FlambeauError, match=r"\[linalg.ldl_solve\] pivots must be in \[-3, -1\] or \[1, 3\], got 9"):
        LA.ldl_solve(LD, fc.tensor([1, 9, 3], dtype=fc.int32), B)
    with pytest.raises(TypeError, match=r"\[linalg.ldl_solve\] pivots should be an int32 tensor"):
        LA.ldl_solve(LD, piv.to(fc.float64), B)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape", [(5, 3), (3, 5), (2, 4, 4), (0, 3)])
def test_geqrf_matches_torch(dtype, shape):
    a = rand(shape, dtype, 12)
    A, tau = fc.geqrf(fct(a))
    tA, ttau = torch.geqrf(th(a))
    t = tol(dtype)
    np.testing.assert_allclose(to_numpy(A), tA.numpy(), rtol=t["rtol"] * 10, atol=t["atol"] * 10)
    np.testing.assert_allclose(to_numpy(tau), ttau.numpy(), rtol=t["rtol"] * 10, atol=t["atol"] * 10)
    assert fc.geqrf(fct(a))._fields == ("a", "tau")
    assert tuple(fct(a).geqrf()[1].shape) == tuple(ttau.shape)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("left", [True, False])
@pytest.mark.parametrize("transpose", [True, False])
def test_ormqr_matches_torch(dtype, left, transpose):
    a = rand((2, 5, 3), dtype, 13)
    c = rand((2, 5, 4) if left else (2, 4, 5), dtype, 14)
    A, tau = fc.geqrf(fct(a))
    tA, ttau = torch.geqrf(th(a))
    Y = fc.ormqr(A, tau, fct(c), left=left, transpose=transpose)
    tY = torch.ormqr(tA, ttau, th(c), left=left, transpose=transpose)
    t = tol(dtype)
    np.testing.assert_allclose(to_numpy(Y), tY.numpy(), rtol=t["rtol"] * 50, atol=t["atol"] * 50)
    # Q from the reflectors: ormqr(I) is Q, the same Q as householder_product's
    Q = LA.householder_product(A, tau)
    eye = fc.eye(5, dtype=A.dtype).expand(2, 5, 5)
    np.testing.assert_allclose(
        to_numpy(fc.ormqr(A, tau, eye))[..., :3], to_numpy(Q), rtol=t["rtol"] * 50, atol=t["atol"] * 50
    )


def test_ormqr_errors():
    A, tau = fc.geqrf(fc.ones(4, 2, dtype=fc.float64) + fc.eye(4, 2, dtype=fc.float64))
    with pytest.raises(fc.FlambeauError, match=r"\[ormqr\] input.shape\[-2\] must equal other.shape\[-2\]"):
        fc.ormqr(A, tau, fc.ones(3, 2, dtype=fc.float64))
    with pytest.raises(fc.FlambeauError, match=r"\[ormqr\] expected other to have the same number of dimensions"):
        fc.ormqr(A, tau, fc.ones(2, 4, 2, dtype=fc.float64))
    with pytest.raises(TypeError, match=r"\[ormqr\] expected input, tau and other to have the same dtype"):
        fc.ormqr(A, tau.float(), fc.ones(4, 2, dtype=fc.float64))
    with pytest.raises(fc.FlambeauError, match=r"tau.shape\[-1\] must be less than or equal to input.shape\[-1\]"):
        fc.ormqr(A, fc.ones(3, dtype=fc.float64), fc.ones(4, 2, dtype=fc.float64))
    with pytest.raises(TypeError, match=r"\[geqrf\] expected a float32 or float64 tensor for input, got bool"):
        fc.geqrf(fc.ones(2, 2, dtype=fc.bool))


def test_public_names():
    for name in ["lu_factor", "lu_factor_ex", "lu", "lu_solve", "ldl_factor", "ldl_factor_ex", "ldl_solve"]:
        assert name in LA.__all__ and callable(getattr(LA, name))
    for name in ["lu", "lu_solve", "lu_unpack", "geqrf", "ormqr"]:
        assert getattr(fc, name).__name__ == name
    for name in ["lu", "lu_solve", "geqrf", "ormqr"]:
        assert hasattr(fc.Tensor, name)
