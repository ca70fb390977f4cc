"""Complex linalg against PyTorch 2.13: svd, svdvals, qr (every mode), pinv, lstsq,
logdet, matrix_rank and the SVD-based matrix norms ('nuc', 2, -2) on complex64/complex128 (LAPACK's
cgesdd/zgesdd, cgeqrf/cungqr, cgelsd), batched, square/tall/wide, non-contiguous and empty; and mode and
frexp (values, dtypes, out=, errors). Gradients are in packages/autograd/tests/test_linalg_complex_grad.py."""

from __future__ import annotations

import math

import flambeau_core as fc
import numpy as np
import pytest
import torch
from helpers import to_numpy

LA = fc.linalg
CDT = {"complex64": (fc.complex64, fc.float32, torch.complex64, np.complex64),
       "complex128": (fc.complex128, fc.float64, torch.complex128, np.complex128)}  # fmt: skip
TOL = {"complex64": 2e-4, "complex128": 1e-10}
SHAPES = [(1, 1), (3, 3), (5, 3), (3, 5), (2, 4, 3), (2, 1, 3, 5), (6, 6)]


def carr(shape, seed):
    rng = np.random.default_rng(seed)
    return rng.standard_normal(shape) + 1j * rng.standard_normal(shape)


def fcc(a, kind):
    """A flambeau complex tensor of kind from the NumPy array a."""
    _, rdt, _, _ = CDT[kind]
    a = np.asarray(a)
    t = fc.complex(fc.tensor(a.real.tolist(), dtype=rdt), fc.tensor(a.imag.tolist(), dtype=rdt))
    return t.reshape(a.shape) if a.size == 0 else t


def th(a, kind):
    return torch.tensor(np.asarray(a)).to(CDT[kind][2])


# A tolerance by dtype kind (scaled) on two NumPy arrays; no shared helper takes TOL's kinds.
def close(x, y, kind, scale=1.0):
    np.testing.assert_allclose(x, y, rtol=TOL[kind] * scale, atol=TOL[kind] * scale)


# ---- svd / svdvals ----


@pytest.mark.parametrize("kind", ["complex64", "complex128"])
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("full", [False, True])
def test_svd_complex(kind, shape, full):
    a = carr(shape, sum(shape))
    U, S, Vh = LA.svd(fcc(a, kind), full_matrices=full)
    cdt, rdt, _, _ = CDT[kind]
    assert U.dtype == cdt and Vh.dtype == cdt and S.dtype == rdt
    tU, tS, tVh = torch.linalg.svd(th(a, kind), full_matrices=full)
    assert tuple(U.shape) == tuple(tU.shape) and tuple(S.shape) == tuple(tS.shape)
    assert tuple(Vh.shape) == tuple(tVh.shape)
    close(to_numpy(S, widen=True), tS.numpy(), kind)
    Un, Sn, Vn = to_numpy(U, widen=True), to_numpy(S, widen=True), to_numpy(Vh, widen=True)
    k = Sn.shape[-1]
    close((Un[..., :k] * Sn[..., None, :]) @ Vn[..., :k, :], a, kind, 10)
    eye_u = np.eye(Un.shape[-1])
    close(np.conj(np.swapaxes(Un, -1, -2)) @ Un, np.broadcast_to(eye_u, Un.shape[:-2] + eye_u.shape), kind, 10)
    eye_v = np.eye(Vn.shape[-2])
    close(Vn @ np.conj(np.swapaxes(Vn, -1, -2)), np.broadcast_to(eye_v, Vn.shape[:-2] + eye_v.shape), kind, 10)
    # Up to a phase per column, U matches PyTorch's (both LAPACK gesdd): |U^H tU| is the identity.
    overlap = np.abs(np.conj(np.swapaxes(Un[..., :k], -1, -2)) @ tU.numpy()[..., :k])
    close(overlap, np.broadcast_to(np.eye(k), overlap.shape), kind, 100)
    close(to_numpy(LA.svdvals(fcc(a, kind)), widen=True), torch.linalg.svdvals(th(a, kind)).numpy(), kind)


def test_svd_complex_non_contiguous_and_empty():
    a = carr((4, 6), 1)
    x = fcc(a, "complex128").transpose(-2, -1)  # (6, 4), a transposed view
    assert not x.is_contiguous()
    np.testing.assert_allclose(to_numpy(LA.svdvals(x), widen=True), np.linalg.svd(a.T, compute_uv=False), rtol=1e-12)
    U, S, Vh = LA.svd(x, full_matrices=False)
    np.testing.assert_allclose(
        (to_numpy(U, widen=True) * to_numpy(S, widen=True)) @ to_numpy(Vh, widen=True), a.T, atol=1e-12
    )
    e = fcc(np.zeros((2, 0, 3)), "complex64")
    U, S, Vh = LA.svd(e)
    assert tuple(U.shape) == (2, 0, 0) and tuple(S.shape) == (2, 0) and tuple(Vh.shape) == (2, 3, 3)
    assert S.dtype == fc.float32 and U.dtype == fc.complex64
    np.testing.assert_allclose(to_numpy(Vh, widen=True), np.broadcast_to(np.eye(3), (2, 3, 3)))
    e0 = fcc(np.zeros((0, 3, 3)), "complex128")
    assert tuple(LA.svdvals(e0).shape) == (0, 3)


def test_top_level_svd_complex():
    a = carr((4, 3), 2)
    U, S, V = fc.svd(fcc(a, "complex128"))
    np.testing.assert_allclose(
        (to_numpy(U, widen=True) * to_numpy(S, widen=True)) @ np.conj(to_numpy(V, widen=True)).T, a, atol=1e-12
    )


# ---- qr ----


@pytest.mark.parametrize("kind", ["complex64", "complex128"])
@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("mode", ["reduced", "complete", "r"])
def test_qr_complex(kind, shape, mode):
    a = carr(shape, 3 + sum(shape))
    Q, R = LA.qr(fcc(a, kind), mode=mode)
    tQ, tR = torch.linalg.qr(th(a, kind), mode=mode)
    assert Q.dtype == CDT[kind][0] and R.dtype == CDT[kind][0]
    assert tuple(Q.shape) == tuple(tQ.shape) and tuple(R.shape) == tuple(tR.shape)
    # The same LAPACK routines (geqrf/ungqr): the same factors, R's diagonal real.
    close(to_numpy(R, widen=True), tR.numpy(), kind, 10)
    np.testing.assert_allclose(np.diagonal(to_numpy(R, widen=True), 0, -2, -1).imag, 0, atol=1e-6)
    if mode != "r":
        close(to_numpy(Q, widen=True), tQ.numpy(), kind, 10)
        close(to_numpy(Q, widen=True) @ to_numpy(R, widen=True), a, kind, 10)


def test_qr_complex_non_contiguous_and_top_level():
    a = carr((3, 5, 4), 4)
    x = fcc(a, "complex128").transpose(-2, -1)
    Q, R = LA.qr(x)
    np.testing.assert_allclose(to_numpy(Q, widen=True) @ to_numpy(R, widen=True), np.swapaxes(a, -1, -2), atol=1e-12)
    Q2, R2 = fc.qr(fcc(a, "complex128"), some=False)
    tQ, tR = torch.linalg.qr(torch.tensor(a), mode="complete")  # torch.qr(some=False), not deprecated
    np.testing.assert_allclose(to_numpy(Q2, widen=True), tQ.numpy(), atol=1e-12)
    np.testing.assert_allclose(to_numpy(R2, widen=True), tR.numpy(), atol=1e-12)


# ---- pinv, matrix_rank, norms, logdet ----


@pytest.mark.parametrize("kind", ["complex64", "complex128"])
@pytest.mark.parametrize("shape", SHAPES)
def test_pinv_complex(kind, shape):
    a = carr(shape, 5 + sum(shape))
    close(to_numpy(LA.pinv(fcc(a, kind)), widen=True), torch.linalg.pinv(th(a, kind)).numpy(), kind, 20)


def test_pinv_complex_rank_deficient_hermitian_and_tolerances():
    rng = np.random.default_rng(6)
    a = carr((5, 2), 7) @ carr((2, 4), 8)  # rank 2
    for kw in ({}, {"atol": 1e-3}, {"rtol": 0.5}, {"atol": 0.1, "rtol": 1e-2}):
        np.testing.assert_allclose(
            to_numpy(LA.pinv(fcc(a, "complex128"), **kw), widen=True),
            torch.linalg.pinv(torch.tensor(a), **kw).numpy(),
            atol=1e-10,
        )
    h = carr((3, 4, 4), 9)
    h = h + np.conj(np.swapaxes(h, -1, -2))
    got = to_numpy(LA.pinv(fcc(h, "complex128"), hermitian=True), widen=True)
    np.testing.assert_allclose(got, torch.linalg.pinv(torch.tensor(h), hermitian=True).numpy(), atol=1e-10)
    atol = rng.uniform(0.5, 2.0, size=(3,))
    got = to_numpy(LA.pinv(fcc(h, "complex128"), atol=fc.tensor(atol.tolist())), widen=True)
    want = torch.linalg.pinv(torch.tensor(h), atol=torch.tensor(atol)).numpy()
    np.testing.assert_allclose(got, want, atol=1e-10)
    assert tuple(LA.pinv(fcc(np.zeros((2, 0, 3)), "complex64")).shape) == (2, 3, 0)
    np.testing.assert_allclose(
        to_numpy(fc.pinverse(fcc(a, "complex128")), widen=True), torch.pinverse(torch.tensor(a)).numpy(), atol=1e-10
    )


@pytest.mark.parametrize("kind", ["complex64", "complex128"])
def test_matrix_rank_complex(kind):
    a = carr((3, 6, 2), 10) @ carr((3, 2, 5), 11)  # rank 2 each
    a[1] = carr((6, 5), 12)  # full rank 5
    r = LA.matrix_rank(fcc(a, kind))
    assert r.dtype == fc.int64
    np.testing.assert_array_equal(to_numpy(r, widen=True), torch.linalg.matrix_rank(th(a, kind)).numpy())
    h = a[0] @ np.conj(a[0]).T  # Hermitian, rank 2
    assert int(LA.matrix_rank(fcc(h, kind), hermitian=True).item()) == 2
    assert int(LA.matrix_rank(fcc(a[2], kind), atol=1e3).item()) == 0


@pytest.mark.parametrize("kind", ["complex64", "complex128"])
@pytest.mark.parametrize("ord", ["nuc", 2, -2])
@pytest.mark.parametrize("shape", [(3, 3), (5, 3), (2, 3, 4)])
def test_matrix_norm_svd_orders_complex(kind, ord, shape):
    a = carr(shape, 13 + sum(shape))
    got = LA.matrix_norm(fcc(a, kind), ord)
    assert got.dtype == CDT[kind][1]
    close(to_numpy(got, widen=True), torch.linalg.matrix_norm(th(a, kind), ord).numpy(), kind, 10)
    got = LA.norm(fcc(a, kind), ord, dim=(-1, -2), keepdim=True)
    want = torch.linalg.norm(th(a, kind), ord, dim=(-1, -2), keepdim=True)
    assert tuple(got.shape) == tuple(want.shape)
    close(to_numpy(got, widen=True), want.numpy(), kind, 10)


@pytest.mark.parametrize("kind", ["complex64", "complex128"])
def test_logdet_complex(kind):
    a = carr((2, 3, 3), 14)
    got = fc.logdet(fcc(a, kind))
    assert got.dtype == CDT[kind][0]
    close(to_numpy(got, widen=True), torch.logdet(th(a, kind)).numpy(), kind, 10)
    s = np.array([[1.0 + 1j, 2.0 + 2j], [1.0, 2.0]]) * np.array([1.0, 1.0])  # rows dependent: det 0
    s[1] = s[0] * (0.5 - 0.5j)
    got = to_numpy(fc.logdet(fcc(s, kind)), widen=True)
    assert got.real == -math.inf
    with pytest.raises(fc.FlambeauError, match="logdet: A must be batches of square matrices"):
        fc.logdet(fcc(carr((2, 3), 1), kind))


# ---- lstsq ----


@pytest.mark.parametrize("kind", ["complex64", "complex128"])
@pytest.mark.parametrize(
    "shape_a,shape_b", [((6, 3), (6, 2)), ((4, 4), (4,)), ((2, 5, 3), (2, 5, 1)), ((3, 5), (3, 2)), ((7, 2), (7, 3))]
)
def test_lstsq_complex(kind, shape_a, shape_b):
    a, b = carr(shape_a, 15), carr(shape_b, 16)
    got = LA.lstsq(fcc(a, kind), fcc(b, kind), driver="gelsd")
    want = torch.linalg.lstsq(th(a, kind), th(b, kind), driver="gelsd")
    assert got.solution.dtype == CDT[kind][0]
    assert got.residuals.dtype == CDT[kind][1] and got.singular_values.dtype == CDT[kind][1]
    close(to_numpy(got.solution, widen=True), want.solution.numpy(), kind, 20)
    assert tuple(got.residuals.shape) == tuple(want.residuals.shape)
    close(to_numpy(got.residuals, widen=True), want.residuals.numpy(), kind, 20)
    np.testing.assert_array_equal(to_numpy(got.rank, widen=True), want.rank.numpy())
    close(to_numpy(got.singular_values, widen=True), want.singular_values.numpy(), kind, 10)


def test_lstsq_complex_rank_deficient():
    a = carr((5, 2), 17) @ carr((2, 3), 18)
    b = carr((5, 2), 19)
    got = LA.lstsq(fcc(a, "complex128"), fcc(b, "complex128"))
    want = torch.linalg.lstsq(torch.tensor(a), torch.tensor(b), driver="gelsd")
    assert int(got.rank.item()) == 2 and tuple(got.residuals.shape) == (0,)
    np.testing.assert_allclose(to_numpy(got.solution, widen=True), want.solution.numpy(), atol=1e-10)


# ---- errors ----


def test_complex_linalg_errors():
    with pytest.raises(TypeError, match=r"linalg.svd: expected a float32 or float64 tensor for A, got flambeau.int64"):
        LA.svd(fc.tensor([[1, 2], [3, 4]]))
    with pytest.raises(TypeError, match=r"linalg.qr: .*flambeau.float16 \(shape \(2, 2\)\); complex64 and complex128"):
        LA.qr(fc.ones(2, 2, dtype=fc.float16))
    with pytest.raises(fc.FlambeauError, match=r"linalg.svdvals: A must have at least 2 dimensions, got shape \(3\)"):
        LA.svdvals(fcc(carr((3,), 1), "complex64"))
    with pytest.raises(fc.FlambeauError, match="qr received unrecognized mode 'full'"):
        LA.qr(fcc(carr((3, 3), 1), "complex64"), mode="full")
    with pytest.raises(TypeError, match="linalg.lstsq: Expected A and B to have the same dtype"):
        LA.lstsq(fcc(carr((3, 3), 1), "complex64"), fcc(carr((3, 1), 1), "complex128"))
    with pytest.raises(fc.FlambeauError, match="linalg.pinv: hermitian=True needs batches of square matrices"):
        LA.pinv(fcc(carr((3, 2), 1), "complex64"), hermitian=True)
    with pytest.raises(TypeError, match=r"linalg.matrix_rank: expected a float32 .*got flambeau.int32"):
        LA.matrix_rank(fc.ones(2, 2, dtype=fc.int32))
    with pytest.raises(fc.FlambeauError, match=r"linalg.matrix_norm: Order 3 not supported"):
        LA.matrix_norm(fcc(carr((3, 3), 1), "complex64"), 3)


# ---- mode ----

MODE_DTYPES = [
    (fc.int64, torch.int64),
    (fc.int32, torch.int32),
    (fc.int8, torch.int8),
    (fc.uint8, torch.uint8),
    (fc.float32, torch.float32),
    (fc.float64, torch.float64),
    (fc.float16, torch.float16),
    (fc.bfloat16, torch.bfloat16),
]


@pytest.mark.parametrize("fdt,tdt", MODE_DTYPES)
@pytest.mark.parametrize("shape,dim", [((7,), 0), ((4, 9), 1), ((4, 9), 0), ((3, 5, 6), 1), ((3, 5, 6), -1)])
@pytest.mark.parametrize("keepdim", [False, True])
def test_mode_matches_torch(fdt, tdt, shape, dim, keepdim):
    # Rows shorter than 16: PyTorch's std::sort is then an insertion sort, so its index is deterministic
    # (the last occurrence of the mode); values from a small range, so ties and repeats are common.
    rng = np.random.default_rng(sum(shape) + dim)
    a = rng.integers(0, 4, size=shape)
    x = fc.tensor(a.tolist(), dtype=fdt)
    t = torch.tensor(a).to(tdt)
    v, i = fc.mode(x, dim, keepdim)
    tv, ti = torch.mode(t, dim, keepdim)
    assert v.dtype == fdt and i.dtype == fc.int64
    assert tuple(v.shape) == tuple(tv.shape) and tuple(i.shape) == tuple(ti.shape)
    np.testing.assert_array_equal(to_numpy(v, widen=True), tv.float().numpy())
    np.testing.assert_array_equal(to_numpy(i, widen=True), ti.numpy())
    r = x.mode(dim=dim, keepdim=keepdim)
    assert r.values.dtype == fdt
    np.testing.assert_array_equal(to_numpy(r.indices, widen=True), ti.numpy())


def test_mode_default_dim_bool_0d_noncontiguous_long_rows_out():
    a = np.random.default_rng(1).integers(0, 3, size=(5, 8))
    x = fc.tensor(a.tolist()).transpose(0, 1)  # (8, 5), non-contiguous
    v, i = fc.mode(x)
    tv, ti = torch.mode(torch.tensor(a).T)
    np.testing.assert_array_equal(to_numpy(v, widen=True), tv.numpy())
    np.testing.assert_array_equal(to_numpy(i, widen=True), ti.numpy())
    b = fc.tensor([True, False, True, False, False])
    assert fc.mode(b).values.item() is False and fc.mode(b).indices.item() == 4
    z = fc.mode(fc.tensor(5.0))
    assert z.values.item() == 5.0 and z.indices.item() == 0 and tuple(z.values.shape) == ()
    # Long rows: the value is PyTorch's; the index points at an occurrence of it (PyTorch's own index
    # there depends on its unstable sort; flambeau's is the last occurrence).
    long = np.random.default_rng(2).integers(0, 5, size=(3, 200))
    v, i = fc.mode(fc.tensor(long.tolist()), 1)
    np.testing.assert_array_equal(to_numpy(v, widen=True), torch.mode(torch.tensor(long), 1).values.numpy())
    idx = to_numpy(i, widen=True)
    np.testing.assert_array_equal(long[np.arange(3), idx], to_numpy(v, widen=True))
    for r in range(3):
        assert idx[r] == np.nonzero(long[r] == to_numpy(v, widen=True)[r])[0].max()
    ov, oi = fc.empty(3, dtype=fc.int64), fc.empty(3, dtype=fc.int64)
    res = fc.mode(fc.tensor(long.tolist()), 1, out=(ov, oi))
    np.testing.assert_array_equal(to_numpy(ov, widen=True), to_numpy(v, widen=True))
    np.testing.assert_array_equal(to_numpy(oi, widen=True), idx)
    assert res[0] is ov or np.array_equal(to_numpy(res[0], widen=True), to_numpy(v, widen=True))
    e = fc.mode(fc.zeros(0, 3), 1)
    assert tuple(e.values.shape) == (0,) and tuple(e.indices.shape) == (0,)


def test_mode_nan_and_signed_zero():
    v, i = fc.mode(fc.tensor([2.0, 1.0, 2.0, 1.0, math.nan, math.nan]))
    tv, ti = torch.mode(torch.tensor([2.0, 1.0, 2.0, 1.0, math.nan, math.nan]))
    assert v.item() == tv.item() and i.item() == ti.item()
    v, i = fc.mode(fc.tensor([0.0, -0.0, 3.0]))
    assert v.item() == 0.0 and i.item() == 1


def test_mode_errors():
    with pytest.raises(TypeError, match=r"mode.*complex64"):
        fc.mode(fcc(carr((3,), 1), "complex64"))
    with pytest.raises(IndexError, match=r"\[mode\] Expected reduction dim 0 to have non-zero size"):
        fc.mode(fc.zeros(0, 3), 0)
    with pytest.raises(IndexError, match="mode"):
        fc.mode(fc.zeros(2, 3), 2)


# ---- frexp ----

SPECIAL = [0.0, -0.0, 1.0, -3.5, 0.75, 1e-3, 123456.0, math.inf, -math.inf, math.nan, 2.0**-130, 1e-310, 1e300]
SPECIAL += [3e-6, -1e-5, 6.1e-5, 65504.0, -65504.0, 1e-39]  # float16 subnormals and limits, a bfloat16 subnormal


@pytest.mark.parametrize(
    "fdt,tdt",
    [
        (fc.float32, torch.float32),
        (fc.float64, torch.float64),
        (fc.float16, torch.float16),
        (fc.bfloat16, torch.bfloat16),
    ],
)
def test_frexp_matches_torch(fdt, tdt):
    rng = np.random.default_rng(3)
    vals = SPECIAL + list(rng.standard_normal(50) * 10.0 ** rng.integers(-20, 20, size=50))
    t = torch.tensor(vals, dtype=torch.float64).to(tdt)
    x = fc.tensor(t.double().tolist(), dtype=fdt)
    m, e = fc.frexp(x)
    tm, te = torch.frexp(t)
    assert m.dtype == fdt and e.dtype == fc.int32
    np.testing.assert_array_equal(to_numpy(m, widen=True), tm.double().numpy())
    np.testing.assert_array_equal(to_numpy(e, widen=True), te.numpy())
    m2, e2 = x.frexp()
    np.testing.assert_array_equal(to_numpy(m2, widen=True), tm.double().numpy())
    # non-contiguous, batched
    x2 = fc.tensor(t.double().reshape(-1)[:60].reshape(6, 10).tolist(), dtype=fdt).transpose(0, 1)
    m3, e3 = fc.frexp(x2)
    tm3, te3 = torch.frexp(t.reshape(-1)[:60].reshape(6, 10).T)
    np.testing.assert_array_equal(to_numpy(m3, widen=True), tm3.double().numpy())
    np.testing.assert_array_equal(to_numpy(e3, widen=True), te3.numpy())


def test_frexp_out_and_errors():
    x = fc.tensor([1.0, 2.0, 3.0, 0.1])
    m, e = fc.empty(4), fc.empty(4, dtype=fc.int32)
    res = fc.frexp(x, out=(m, e))
    np.testing.assert_array_equal(to_numpy(m, widen=True), [0.5, 0.5, 0.75, 0.800000011920929])
    np.testing.assert_array_equal(to_numpy(e, widen=True), [1, 2, 2, -3])
    assert res.mantissa is m or np.array_equal(to_numpy(res.mantissa, widen=True), to_numpy(m, widen=True))
    assert tuple(fc.frexp(fc.zeros(0, 3)).exponent.shape) == (0, 3)
    with pytest.raises(TypeError, match=r"frexp\] expected out tensor to have dtype int32, but got float32"):
        fc.frexp(x, out=(fc.empty(4), fc.empty(4)))
    with pytest.raises(TypeError, match=r"frexp\] expected out tensor to have dtype float32, but got float64"):
        fc.frexp(x, out=(fc.empty(4, dtype=fc.float64), fc.empty(4, dtype=fc.int32)))
    with pytest.raises(TypeError, match=r"frexp: only supports floating-point dtypes .*got int64"):
        fc.frexp(fc.tensor([1, 2]))
    with pytest.raises(TypeError, match=r"frexp: .*got complex64"):
        fc.frexp(fcc(carr((2,), 1), "complex64"))
