"""flambeau_core.linalg (LAPACK-backed: det, slogdet, inv, solve, cholesky, qr,
svd, svdvals, eigh, eigvalsh, lstsq, pinv, matrix_rank) against PyTorch 2.13 and
NumPy: values in float32 and float64, batched and non-contiguous inputs,
reconstruction invariants (Q R = A, U S Vh = A, A V = V diag(L)), empty
matrices, and every error path (type and message)."""

from __future__ import annotations

import flambeau_core as fc
import numpy as np
import pytest
import torch
from helpers import make_tensor, to_numpy

pytestmark = pytest.mark.on_devices(not_on_cuda="LAPACK: no flambeau-cuda kernel yet")

LA = fc.linalg
FLOATS = [np.float32, np.float64]
LAYOUTS = ["contiguous", "transposed", "sliced"]


def tol(dtype):
    return dict(rtol=2e-4, atol=2e-4) if dtype == np.float32 else dict(rtol=1e-9, atol=1e-9)


def rand(shape, dtype, seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


def well_conditioned(shape, dtype, seed=0):
    """Random square matrices with a dominant diagonal (invertible, moderate condition)."""
    a = rand(shape, dtype, seed)
    n = shape[-1]
    return (a + 3 * n**0.5 * np.eye(n, dtype=dtype)).astype(dtype)


def spd(shape, dtype, seed=0):
    a = rand(shape, np.float64, seed)
    n = shape[-1]
    return (a @ np.swapaxes(a, -1, -2) + n * np.eye(n)).astype(dtype)


BATCHES = [(), (3,), (2, 2)]


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("batch", BATCHES)
@pytest.mark.parametrize("n", [1, 4, 9])
@pytest.mark.parametrize("layout", LAYOUTS)
def test_inv_det_slogdet_match_torch(dtype, batch, n, layout):
    a = well_conditioned((*batch, n, n), dtype, n)
    A = make_tensor(a, layout)
    ta = torch.from_numpy(a)
    np.testing.assert_allclose(to_numpy(LA.inv(A)), torch.linalg.inv(ta).numpy(), **tol(dtype))
    np.testing.assert_allclose(to_numpy(LA.det(A)), torch.linalg.det(ta).numpy(), **tol(dtype))
    sign, logabs = LA.slogdet(A)
    tsign, tlog = torch.linalg.slogdet(ta)
    np.testing.assert_array_equal(to_numpy(sign), tsign.numpy())
    np.testing.assert_allclose(to_numpy(logabs), tlog.numpy(), **tol(dtype))
    assert fc.inverse(A).shape == A.shape and fc.det(A).shape == batch
    np.testing.assert_allclose(to_numpy(A.det()), torch.det(ta).numpy(), **tol(dtype))


def test_det_sign_and_singular():
    a = np.array([[0.0, 1.0], [1.0, 0.0]])  # a row swap: det -1
    assert LA.det(fc.tensor(a)).item() == pytest.approx(-1.0)
    s = np.array([[1.0, 2.0], [2.0, 4.0]])
    assert LA.det(fc.tensor(s)).item() == 0.0
    sign, logabs = LA.slogdet(fc.tensor(s))
    assert sign.item() == 0.0 and logabs.item() == -np.inf
    neg = np.array([[-2.0, 0.0], [0.0, 3.0]])
    assert np.isnan(fc.logdet(fc.tensor(neg)).item())
    assert fc.logdet(fc.tensor(np.diag([2.0, 3.0]))).item() == pytest.approx(np.log(6.0))


def test_empty_matrices():
    z = fc.zeros(0, 0, dtype=fc.float64)
    assert LA.det(z).item() == 1.0
    assert LA.inv(z).shape == (0, 0)
    assert LA.inv(fc.zeros(2, 0, 0)).shape == (2, 0, 0)
    assert LA.det(fc.zeros(0, 3, 3)).shape == (0,)
    U, S, Vh = LA.svd(fc.zeros(3, 0))
    assert U.shape == (3, 3) and S.shape == (0,) and Vh.shape == (0, 0)
    np.testing.assert_array_equal(to_numpy(U), np.eye(3))
    Q, R = LA.qr(fc.zeros(0, 2))
    assert Q.shape == (0, 0) and R.shape == (0, 2)
    L, V = LA.eigh(fc.zeros(0, 0))
    assert L.shape == (0,)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize(
    "a_batch, b_shape",
    [((), (4, 2)), ((), (4,)), ((3,), (3, 4, 1)), ((3,), (4, 5)), ((2, 1), (3, 4, 2)), ((3,), (3, 4))],
)
def test_solve_matches_torch(dtype, a_batch, b_shape):
    a = well_conditioned((*a_batch, 4, 4), dtype, 1)
    b = rand(b_shape, dtype, 2)
    got = LA.solve(fc.tensor(a), fc.tensor(b))
    want = torch.linalg.solve(torch.from_numpy(a), torch.from_numpy(b)).numpy()
    assert got.shape == want.shape
    np.testing.assert_allclose(to_numpy(got), want, **tol(dtype))


@pytest.mark.parametrize("dtype", FLOATS)
def test_solve_left_false_and_noncontiguous(dtype):
    a = well_conditioned((2, 5, 5), dtype, 3)
    b = rand((2, 3, 5), dtype, 4)
    got = LA.solve(make_tensor(a, "transposed"), make_tensor(b, "sliced"), left=False)
    want = torch.linalg.solve(torch.from_numpy(a), torch.from_numpy(b), left=False).numpy()
    np.testing.assert_allclose(to_numpy(got), want, **tol(dtype))


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("batch", BATCHES)
@pytest.mark.parametrize("upper", [False, True])
@pytest.mark.parametrize("layout", LAYOUTS)
def test_cholesky_matches_torch(dtype, batch, upper, layout):
    a = spd((*batch, 5, 5), dtype, 5)
    got = LA.cholesky(make_tensor(a, layout), upper=upper)
    want = torch.linalg.cholesky(torch.from_numpy(a), upper=upper).numpy()
    np.testing.assert_allclose(to_numpy(got), want, **tol(dtype))


def test_cholesky_reads_one_triangle():
    a = spd((4, 4), np.float64, 6)
    junk_upper = np.tril(a) + np.triu(np.full((4, 4), 100.0), 1)
    np.testing.assert_allclose(to_numpy(LA.cholesky(fc.tensor(junk_upper))), np.linalg.cholesky(a), atol=1e-12)
    junk_lower = np.triu(a) + np.tril(np.full((4, 4), 100.0), -1)
    np.testing.assert_allclose(
        to_numpy(LA.cholesky(fc.tensor(junk_lower), upper=True)), np.linalg.cholesky(a).T, atol=1e-12
    )


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("shape", [(5, 3), (3, 5), (4, 4), (2, 6, 4), (2, 3, 4, 7), (1, 1)])
@pytest.mark.parametrize("mode", ["reduced", "complete", "r"])
@pytest.mark.parametrize("layout", ["contiguous", "transposed"])
def test_qr_reconstructs_and_matches_torch(dtype, shape, mode, layout):
    a = rand(shape, dtype, 7)
    Q, R = LA.qr(make_tensor(a, layout), mode=mode)
    tQ, tR = torch.linalg.qr(torch.from_numpy(a), mode=mode)
    assert tuple(Q.shape) == tuple(tQ.shape) and tuple(R.shape) == tuple(tR.shape)
    # Householder QR is unique up to the signs of R's diagonal: LAPACK's choice matches PyTorch's.
    np.testing.assert_allclose(to_numpy(R), tR.numpy(), **tol(dtype))
    if mode != "r":
        q, r = to_numpy(Q), to_numpy(R)
        np.testing.assert_allclose(q @ r, a, **tol(dtype))
        k = q.shape[-1]
        np.testing.assert_allclose(
            np.swapaxes(q, -1, -2) @ q, np.broadcast_to(np.eye(k), q.shape[:-2] + (k, k)), **tol(dtype)
        )
        np.testing.assert_allclose(r, np.triu(r), atol=0)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("shape", [(5, 3), (3, 5), (4, 4), (3, 6, 4), (2, 2, 3, 7), (1, 1), (1, 4)])
@pytest.mark.parametrize("full_matrices", [False, True])
@pytest.mark.parametrize("layout", ["contiguous", "transposed", "sliced"])
def test_svd_reconstructs_and_matches_torch(dtype, shape, full_matrices, layout):
    a = rand(shape, dtype, 8)
    U, S, Vh = LA.svd(make_tensor(a, layout), full_matrices=full_matrices)
    tU, tS, tVh = torch.linalg.svd(torch.from_numpy(a), full_matrices=full_matrices)
    assert (tuple(U.shape), tuple(S.shape), tuple(Vh.shape)) == (tuple(tU.shape), tuple(tS.shape), tuple(tVh.shape))
    np.testing.assert_allclose(to_numpy(S), tS.numpy(), **tol(dtype))
    u, s, vh = to_numpy(U), to_numpy(S), to_numpy(Vh)
    k = s.shape[-1]
    recon = (u[..., :, :k] * s[..., None, :]) @ vh[..., :k, :]
    np.testing.assert_allclose(recon, a, **tol(dtype))
    for m in (u, np.swapaxes(vh, -1, -2)):
        c = m.shape[-1]
        np.testing.assert_allclose(
            np.swapaxes(m, -1, -2) @ m, np.broadcast_to(np.eye(c), m.shape[:-2] + (c, c)), **tol(dtype)
        )
    np.testing.assert_allclose(to_numpy(LA.svdvals(make_tensor(a, layout))), tS.numpy(), **tol(dtype))


def test_torch_svd_spelling_returns_v():
    a = rand((4, 3), np.float64, 9)
    U, S, V = fc.svd(fc.tensor(a))
    np.testing.assert_allclose((to_numpy(U) * to_numpy(S)) @ to_numpy(V).T, a, atol=1e-12)
    U0, S0, V0 = fc.svd(fc.tensor(a), compute_uv=False)
    np.testing.assert_allclose(to_numpy(S0), to_numpy(S), atol=1e-12)
    assert U0.shape == (4, 3) and V0.shape == (3, 3) and not to_numpy(U0).any()
    Q, R = fc.qr(fc.tensor(a))
    np.testing.assert_allclose(to_numpy(Q) @ to_numpy(R), a, atol=1e-12)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("batch", BATCHES)
@pytest.mark.parametrize("n", [1, 3, 8])
@pytest.mark.parametrize("uplo", ["L", "U"])
def test_eigh_residual_and_values(dtype, batch, n, uplo):
    a = rand((*batch, n, n), dtype, 10)
    sym = ((a + np.swapaxes(a, -1, -2)) / 2).astype(dtype)
    # Junk in the triangle that is not read.
    junk = (
        np.tril(sym) + np.triu(np.full_like(sym, 50.0), 1)
        if uplo == "L"
        else np.triu(sym) + np.tril(np.full_like(sym, 50.0), -1)
    )
    L, V = LA.eigh(make_tensor(junk.astype(dtype), "transposed"), UPLO=uplo)
    tL = torch.linalg.eigvalsh(torch.from_numpy(sym))
    np.testing.assert_allclose(to_numpy(L), tL.numpy(), **tol(dtype))
    lv, vv = to_numpy(L), to_numpy(V)
    np.testing.assert_allclose(sym @ vv, vv * lv[..., None, :], **tol(dtype))
    np.testing.assert_allclose(np.swapaxes(vv, -1, -2) @ vv, np.broadcast_to(np.eye(n), vv.shape), **tol(dtype))
    np.testing.assert_allclose(
        to_numpy(LA.eigvalsh(fc.tensor(junk.astype(dtype)), UPLO=uplo)), tL.numpy(), **tol(dtype)
    )


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize(
    "a_shape, b_shape",
    [((6, 3), (6, 2)), ((3, 6), (3, 2)), ((2, 5, 5), (2, 5, 3)), ((6, 3), (6,)), ((4, 6, 2), (4, 6, 1))],
)
def test_lstsq_matches_torch(dtype, a_shape, b_shape):
    a, b = rand(a_shape, dtype, 11), rand(b_shape, dtype, 12)
    got = LA.lstsq(fc.tensor(a), fc.tensor(b), driver="gelsd")
    want = torch.linalg.lstsq(torch.from_numpy(a), torch.from_numpy(b), driver="gelsd")
    np.testing.assert_allclose(to_numpy(got.solution), want.solution.numpy(), **tol(dtype))
    np.testing.assert_array_equal(to_numpy(got.rank), want.rank.numpy())
    np.testing.assert_allclose(to_numpy(got.singular_values), want.singular_values.numpy(), **tol(dtype))
    assert tuple(got.residuals.shape) == tuple(want.residuals.shape)
    if want.residuals.numel():
        np.testing.assert_allclose(to_numpy(got.residuals), want.residuals.numpy(), **tol(dtype))


@pytest.mark.parametrize("driver", [None, "gels", "gelsy", "gelsd", "gelss"])
@pytest.mark.parametrize("a_shape, b_shape", [((2, 6, 3), (2, 6, 2)), ((3, 6), (3, 2)), ((6, 3), (6,))])
def test_lstsq_reports_what_each_driver_reports(driver, a_shape, b_shape):
    """PyTorch's drivers differ in what they return (its CPU default, gelsy, gives neither residuals nor
    singular values): the same outputs, empty where torch's are, whatever flambeau computes."""
    a, b = rand(a_shape, np.float64, 3), rand(b_shape, np.float64, 4)
    got = LA.lstsq(fc.tensor(a), fc.tensor(b), driver=driver)
    want = torch.linalg.lstsq(torch.from_numpy(a), torch.from_numpy(b), driver=driver)
    for name in ("solution", "residuals", "rank", "singular_values"):
        g, w = getattr(got, name), getattr(want, name)
        assert tuple(g.shape) == tuple(w.shape), name
        np.testing.assert_allclose(to_numpy(g), w.numpy(), rtol=1e-9, atol=1e-12, err_msg=name)


def test_lstsq_rank_deficient():
    a = np.array([[1.0, 2.0], [2.0, 4.0], [3.0, 6.0]])
    b = np.array([[1.0], [2.0], [3.0]])
    got = LA.lstsq(fc.tensor(a), fc.tensor(b), driver="gelsd")
    assert got.rank.item() == 1 and got.residuals.shape == (0,)
    np.testing.assert_allclose(to_numpy(got.solution), np.linalg.lstsq(a, b, rcond=None)[0], atol=1e-12)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("shape", [(5, 3), (3, 5), (2, 4, 4)])
def test_pinv_and_rank_match_torch(dtype, shape):
    a = rand(shape, dtype, 13)
    ta = torch.from_numpy(a)
    np.testing.assert_allclose(to_numpy(LA.pinv(fc.tensor(a))), torch.linalg.pinv(ta).numpy(), **tol(dtype))
    np.testing.assert_array_equal(to_numpy(LA.matrix_rank(fc.tensor(a))), torch.linalg.matrix_rank(ta).numpy())
    low = a[..., :, :1] @ a[..., :1, :]  # rank 1
    np.testing.assert_array_equal(
        to_numpy(LA.matrix_rank(fc.tensor(low))), torch.linalg.matrix_rank(torch.from_numpy(low)).numpy()
    )
    np.testing.assert_allclose(
        to_numpy(LA.pinv(fc.tensor(low))),
        torch.linalg.pinv(torch.from_numpy(low)).numpy(),
        rtol=1e-3 if dtype == np.float32 else 1e-8,
        atol=1e-3 if dtype == np.float32 else 1e-8,
    )
    assert LA.matrix_rank(fc.tensor(a), atol=1e9).max().item() == 0
    sym = a[..., :3, :3] + np.swapaxes(a[..., :3, :3], -1, -2)
    np.testing.assert_allclose(
        to_numpy(LA.pinv(fc.tensor(sym), hermitian=True)),
        torch.linalg.pinv(torch.from_numpy(sym), hermitian=True).numpy(),
        **tol(dtype),
    )
    np.testing.assert_allclose(to_numpy(fc.pinverse(fc.tensor(a))), torch.pinverse(ta).numpy(), **tol(dtype))


@pytest.mark.parametrize("n", [4, 40, 130])
def test_large_and_many_matrices(n):
    """Big matrices (threaded OpenBLAS) and many small ones (parallel batch) give the same answers."""
    a = well_conditioned((n, n), np.float64, 14)
    np.testing.assert_allclose(to_numpy(LA.inv(fc.tensor(a))) @ a, np.eye(n), atol=1e-9)
    many = well_conditioned((64, 6, 6), np.float64, 15)
    np.testing.assert_allclose(to_numpy(LA.inv(fc.tensor(many))), np.linalg.inv(many), rtol=1e-9, atol=1e-9)
    np.testing.assert_allclose(to_numpy(LA.det(fc.tensor(many))), np.linalg.det(many), rtol=1e-9)
    sv = to_numpy(LA.svdvals(fc.tensor(many)))
    np.testing.assert_allclose(sv, np.linalg.svd(many, compute_uv=False), rtol=1e-9)


# ---- errors ----


def test_singular_errors_name_the_element():
    s = fc.tensor([[1.0, 2.0], [2.0, 4.0]])
    with pytest.raises(fc.FlambeauError, match="singular") as e:
        LA.inv(s)
    assert "linalg.inv: The diagonal element 2 is zero" in str(e.value)
    batch = fc.stack([fc.tensor([[1.0, 0.0], [0.0, 1.0]]), s])
    with pytest.raises(fc.FlambeauError, match=r"\(Batch element 1\): The diagonal element 2 is zero"):
        LA.inv(batch)
    with pytest.raises(fc.FlambeauError, match="linalg.solve: The solver failed because the input matrix is singular"):
        LA.solve(s, fc.ones(2))
    with pytest.raises(ValueError, match="singular"):
        fc.inverse(s)


def test_cholesky_not_positive_definite():
    a = fc.tensor([[1.0, 2.0], [2.0, 1.0]])
    with pytest.raises(fc.FlambeauError, match="not positive-definite.*leading minor of order 2"):
        LA.cholesky(a)


@pytest.mark.parametrize(
    "fn, name",
    [
        (LA.det, "linalg.det"),
        (LA.inv, "linalg.inv"),
        (LA.slogdet, "linalg.slogdet"),
        (LA.cholesky, "linalg.cholesky"),
        (LA.eigh, "linalg.eigh"),
        (LA.eigvalsh, "linalg.eigvalsh"),
        (fc.logdet, "logdet"),
    ],
)
def test_non_square(fn, name):
    with pytest.raises(fc.FlambeauError, match=rf"{name}: A must be batches of square matrices, but they are 2 by 3"):
        fn(fc.ones(2, 3))
    with pytest.raises(fc.FlambeauError, match=rf"{name}: A must have at least 2 dimensions"):
        fn(fc.ones(3))


@pytest.mark.parametrize(
    "fn",
    [
        LA.det,
        LA.inv,
        LA.slogdet,
        LA.cholesky,
        LA.qr,
        LA.svd,
        LA.svdvals,
        LA.eigh,
        LA.eigvalsh,
        LA.pinv,
        LA.matrix_rank,
        LA.matrix_norm,
        LA.norm,
    ],
)
@pytest.mark.parametrize("dtype", [fc.int64, fc.bool, fc.int32])
def test_non_float_dtype_is_type_error(fn, dtype):
    with pytest.raises(TypeError, match="expected a float32 or float64 tensor"):
        fn(fc.ones(3, 3).to(dtype))


def test_private_kernels_check_too():
    with pytest.raises(TypeError, match=r"\[linalg.inv\] expected a float32 or float64 tensor for A, got int64"):
        fc._C._linalg_inv(fc.ones(2, 2).to(fc.int64))
    with pytest.raises(fc.FlambeauError, match=r"\[linalg.solve\] incompatible shapes"):
        fc._C._linalg_solve(fc.ones(2, 2), fc.ones(3, 1))
    with pytest.raises(fc.FlambeauError, match="unrecognized mode 'bad'"):
        fc._C._linalg_qr(fc.ones(2, 2), "bad")
    with pytest.raises(fc.FlambeauError, match="UPLO"):
        fc._C._linalg_eigh(fc.ones(2, 2), "X", True)


def test_solve_and_lstsq_shape_errors():
    A = fc.ones(3, 3)
    with pytest.raises(fc.FlambeauError, match=r"linalg.solve: Incompatible shapes of A and B .*\(3, 3\) and \(4, 2\)"):
        LA.solve(A, fc.ones(4, 2))
    with pytest.raises(fc.FlambeauError, match="cannot be broadcast"):
        LA.solve(fc.ones(2, 3, 3), fc.ones(4, 3, 1))
    with pytest.raises(TypeError, match="same dtype"):
        LA.solve(A, fc.ones(3, 1, dtype=fc.float64))
    with pytest.raises(TypeError, match="float32 or float64"):
        LA.solve(A, fc.ones(3, 1).to(fc.int64))
    with pytest.raises(fc.FlambeauError, match="linalg.lstsq: input.size"):
        LA.lstsq(fc.ones(3, 2), fc.ones(4, 1))
    with pytest.raises(fc.FlambeauError, match="driver"):
        LA.lstsq(fc.ones(3, 2), fc.ones(3, 1), driver="nope")


def test_lapack_int32_limit_is_an_error_not_a_wrap():
    # A broadcast (stride-0) view of a huge matrix: the size check runs before any copy.
    big = fc.ones(1, 1).expand(2**31, 2)
    with pytest.raises(fc.FlambeauError, match="32-bit"):
        fc._C._linalg_qr(big, "r")
    with pytest.raises(fc.FlambeauError, match="32-bit"):
        fc._C._linalg_svd(fc.ones(1, 1).expand(70000, 70000), False, False)


def test_qr_bad_mode():
    with pytest.raises(fc.FlambeauError, match="unrecognized mode"):
        LA.qr(fc.ones(2, 2), mode="full")
    with pytest.raises(fc.FlambeauError, match="UPLO"):
        LA.eigh(fc.ones(2, 2), UPLO="X")
    with pytest.raises(fc.FlambeauError, match="driver"):
        LA.svd(fc.ones(2, 2), driver="gesvd")
