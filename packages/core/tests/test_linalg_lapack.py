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


# ---- tolerances of matrix_rank and pinv: numbers and tensors, as PyTorch's get_atol_rtol


def _tol_arg(value, lib):
    """A tolerance for lib: a Python number as it is, a ("t", values, dtype) triple as lib's tensor."""
    if isinstance(value, tuple):
        return lib.tensor(value[1], dtype=getattr(lib, value[2]))
    return value


TOLERANCES = [
    {},
    {"rtol": 0.3},
    {"atol": 0.5},
    {"atol": -1.0},
    {"atol": 0.5, "rtol": 0.9},
    {"rtol": ("t", [0.1, 0.6, 1.0], "float64")},
    {"rtol": ("t", [[0.1], [0.6]], "float64")},
    {"atol": ("t", [0.0, 1.0, -1.0], "float32")},
    {"atol": ("t", 2.0, "float64"), "rtol": ("t", [0.01, 0.5, 0.99], "float64")},
    {"atol": ("t", 1, "int64")},
    {"atol": 1e300},  # beyond float32: PyTorch keeps the tolerances in double
    {"rtol": 3.4028234663852886e38},
    {"atol": 3.5e38, "rtol": 1e-300},
]


@pytest.mark.parametrize("kind", ["float32", "float64", "complex64", "complex128"])
@pytest.mark.parametrize("hermitian", [False, True])
@pytest.mark.parametrize("kw", TOLERANCES, ids=range(len(TOLERANCES)))
def test_rank_and_pinv_tolerances_match_torch(kind, hermitian, kw):
    rng = np.random.default_rng(3)
    a = rng.standard_normal((3, 4, 4)) * np.array([3.0, 1.0, 0.2, 1e-3])  # columns of four scales
    if kind.startswith("complex"):
        a = a + 1j * rng.standard_normal((3, 4, 4))
    if hermitian:
        a = a + np.conj(np.swapaxes(a, -1, -2))
    a = a.astype(kind)
    fkw = {k: _tol_arg(v, fc) for k, v in kw.items()}
    tkw = {k: _tol_arg(v, torch) for k, v in kw.items()}
    ta = torch.from_numpy(a)
    want = torch.linalg.matrix_rank(ta, hermitian=hermitian, **tkw)
    got = LA.matrix_rank(fc.tensor(a), hermitian=hermitian, **fkw)
    assert got.dtype == fc.int64 and got.shape == tuple(want.shape)
    np.testing.assert_array_equal(to_numpy(got), want.numpy())
    want_p = torch.linalg.pinv(ta, hermitian=hermitian, **tkw)
    got_p = LA.pinv(fc.tensor(a), hermitian=hermitian, **fkw)
    assert got_p.shape == tuple(want_p.shape) and str(got_p.dtype).endswith(kind)
    scale = max(1.0, float(np.abs(want_p.numpy()).max()))
    single = kind in ("float32", "complex64")
    np.testing.assert_allclose(to_numpy(got_p), want_p.numpy(), rtol=0, atol=(2e-3 if single else 1e-9) * scale)


@pytest.mark.parametrize(
    ("shape", "rtol_shape"), [((0, 2, 2), (0,)), ((3, 2, 2), (3,)), ((2, 3, 2, 2), (2, 3)), ((2, 3, 2, 2), (3,))]
)
@pytest.mark.parametrize("hermitian", [False, True])
def test_rank_with_a_batch_of_tolerances_matches_torch(shape, rtol_shape, hermitian):
    """rtol of the batch's shape (the Array API suite's draw, an empty batch too) broadcasts per matrix."""
    a = np.ones(shape)
    rt = np.linspace(0.1, 1.5, int(np.prod(rtol_shape))).reshape(rtol_shape)
    want = torch.linalg.matrix_rank(torch.from_numpy(a), rtol=torch.from_numpy(rt), hermitian=hermitian)
    got = LA.matrix_rank(fc.tensor(a), rtol=fc.tensor(rt), hermitian=hermitian)
    assert got.shape == tuple(want.shape)
    np.testing.assert_array_equal(to_numpy(got), want.numpy())
    want_p = torch.linalg.pinv(torch.from_numpy(a), rtol=torch.from_numpy(rt), hermitian=hermitian)
    got_p = LA.pinv(fc.tensor(a), rtol=fc.tensor(rt), hermitian=hermitian)
    assert got_p.shape == tuple(want_p.shape)
    np.testing.assert_allclose(to_numpy(got_p), want_p.numpy(), rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("fn", ["matrix_rank", "pinv"])
def test_rank_and_pinv_tolerance_errors(fn):
    a = np.eye(2, dtype=np.float32)
    with pytest.raises(RuntimeError, match="rtol tensor of complex type is not supported"):
        getattr(torch.linalg, fn)(torch.from_numpy(a), rtol=torch.tensor(1j))
    with pytest.raises(RuntimeError, match=rf"^linalg.{fn}: rtol tensor of complex type is not supported"):
        getattr(LA, fn)(fc.tensor(a), rtol=fc.tensor(1j))
    with pytest.raises(RuntimeError, match="atol tensor of complex type is not supported"):
        getattr(torch.linalg, fn)(torch.from_numpy(a), atol=torch.tensor(1j))
    with pytest.raises(RuntimeError, match=rf"^linalg.{fn}: atol tensor of complex type is not supported"):
        getattr(LA, fn)(fc.tensor(a), atol=fc.tensor(1j))
    with pytest.raises(TypeError):
        getattr(torch.linalg, fn)(torch.from_numpy(a), atol=1j)
    with pytest.raises(TypeError, match=rf"^linalg.{fn}: atol must be a real number or a real tensor, got complex"):
        getattr(LA, fn)(fc.tensor(a), atol=1j)


# ---- non-finite input (Note [non-finite LAPACK input] in lapack.cpp): no LAPACK call that would not end

# A float32 matrix with one infinity on which LAPACK's sgesdd (its bidiagonal QR) loops without end.
_INF_ROWS = [
    [np.inf, 0.62003124, 0.15231471, -1.5619714, -0.57195997, -0.9062957],
    [0.5458558, 0.6638624, 2.1462622, -1.0219400, -1.0844134, 1.1174506],
    [2.6604348, 2.0, -0.37854856, 0.35133708, -1.4325317, -1.4892980],
    [1.1771402, -1.3906273, -0.92728955, 0.24331838, -1.0168906, -0.55627805],
    [-0.10531351, 0.07413341, 0.29635048, 0.25576258, -0.55882466, 1.0206040],
]

_SVD_NONFINITE = "The algorithm failed to converge because the input matrix contained non-finite values."


@pytest.mark.parametrize("kind", ["float32", "float64", "complex64", "complex128"])
def test_svd_of_nan_raises_torchs_error(kind):
    a = rand((2, 3, 3), np.float64, 21).astype(kind)
    a[1, 0, 2] = np.nan
    with pytest.raises(torch.linalg.LinAlgError) as theirs:
        torch.linalg.svd(torch.from_numpy(a))
    for f in (LA.svd, LA.svdvals, LA.matrix_rank, LA.pinv, lambda x: LA.matrix_norm(x, 2)):
        with pytest.raises(LA.LinAlgError) as ours:
            f(fc.tensor(a))
        assert str(ours.value) == str(theirs.value) == f"linalg.svd: (Batch element 1): {_SVD_NONFINITE}"
    with pytest.raises(torch.linalg.LinAlgError, match="^linalg.svd: The algorithm failed"):
        torch.linalg.svdvals(torch.from_numpy(a[1]))
    with pytest.raises(LA.LinAlgError, match=f"^linalg.svd: {_SVD_NONFINITE}$"):
        LA.svdvals(fc.tensor(a[1]))


@pytest.mark.parametrize("kind", ["float32", "float64", "complex64", "complex128"])
@pytest.mark.parametrize("full_matrices", [True, False])
def test_svd_of_an_infinity_raises_instead_of_looping(kind, full_matrices):
    """LAPACK's result for an infinity depends on the library (PyTorch's MKL raises on this matrix, error
    code 4, and returns NaN on others); flambeau raises PyTorch's non-finite error rather than run it."""
    a = np.array(_INF_ROWS).astype(kind)
    for m in (a, a.T, -a):
        with pytest.raises(LA.LinAlgError, match=f"^linalg.svd: {_SVD_NONFINITE}$"):
            LA.svd(fc.tensor(np.ascontiguousarray(m)), full_matrices=full_matrices)
    with pytest.raises(LA.LinAlgError, match=f"^linalg.svd: {_SVD_NONFINITE}$"):
        LA.matrix_rank(fc.tensor(a))
    finite = np.where(np.isfinite(a), a, 0).astype(kind)  # the others of a batch are still computed
    np.testing.assert_allclose(
        to_numpy(LA.svdvals(fc.tensor(finite))), torch.linalg.svdvals(torch.from_numpy(finite)).numpy(), rtol=1e-4
    )


@pytest.mark.parametrize("kind", ["float32", "complex128"])
@pytest.mark.parametrize("value", [np.nan, np.inf, -np.inf])
def test_eig_of_nonfinite_raises_torchs_error(kind, value):
    a = rand((2, 3, 3), np.float64, 22).astype(kind)
    a[0, 1, 1] = value
    # PyTorch's eig checks its input; its eigvals does not (MKL's gebal then crashes on a NaN): eig is the oracle
    with pytest.raises(RuntimeError, match=r"^torch.linalg.eig: input tensor should not contain infs or NaNs.$"):
        torch.linalg.eig(torch.from_numpy(a))
    for fn in ("eig", "eigvals"):
        with pytest.raises(RuntimeError, match=rf"^linalg.{fn}: input tensor should not contain infs or NaNs.$") as e:
            getattr(LA, fn)(fc.tensor(a))
        assert not isinstance(e.value, LA.LinAlgError)  # a check of the input, as PyTorch's


@pytest.mark.parametrize("kind", ["float32", "float64", "complex64", "complex128"])
@pytest.mark.parametrize("value", [np.inf, -np.inf])
def test_lstsq_of_an_infinity_is_nan_as_torchs(kind, value):
    a = rand((3, 4, 3), np.float64, 23).astype(kind)
    b = rand((3, 4, 2), np.float64, 24).astype(kind)
    a[1, 2, 0] = value
    want = torch.linalg.lstsq(torch.from_numpy(a), torch.from_numpy(b)).solution.numpy()
    got = to_numpy(LA.lstsq(fc.tensor(a), fc.tensor(b)).solution)
    assert np.isnan(want[1]).all() and np.isnan(got[1]).all()
    single = kind in ("float32", "complex64")
    np.testing.assert_allclose(got[[0, 2]], want[[0, 2]], rtol=1e-3 if single else 1e-9, atol=1e-4 if single else 1e-10)
