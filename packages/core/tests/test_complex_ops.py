"""Complex widening against PyTorch 2.13: the GEMM family
(mm, matmul, bmm, einsum, tensordot) through OpenBLAS's cgemm/zgemm,
cat/stack/roll, prod, cumsum/cumprod, var/std (real results), and the new
names sgn, trace and kron; complex64 and complex128, transposed and sliced
operands, batches, and the error paths."""

from __future__ import annotations

import flambeau_core as fc
import numpy as np
import pytest
import torch
from helpers import to_numpy

pytestmark = pytest.mark.on_devices(not_on_cuda="complex dtypes: no flambeau-cuda kernel yet")

CDT = ["complex64", "complex128"]
FC = {"complex64": fc.complex64, "complex128": fc.complex128, "float32": fc.float32, "float64": fc.float64}
TH = {"complex64": torch.complex64, "complex128": torch.complex128, "float32": torch.float32, "float64": torch.float64}
TOL = {"complex64": 2e-5, "complex128": 1e-12, "float32": 2e-5, "float64": 1e-12}


def carr(shape, seed):
    rng = np.random.default_rng(seed)
    return rng.standard_normal(shape) + 1j * rng.standard_normal(shape)


def both(a, dt):
    return fc.tensor(a, dtype=FC[dt]), torch.tensor(a, dtype=TH[dt])


# Not helpers.assert_same_as_torch: complex results within this file's TOL (scaled), in double precision.
def close(f, t, dt, scale=1.0):
    assert tuple(f.shape) == tuple(t.shape)
    assert str(f.dtype).split(".")[-1] == str(t.dtype).split(".")[-1]
    np.testing.assert_allclose(
        to_numpy(f, widen=True), t.resolve_conj().numpy(), rtol=TOL[dt] * scale, atol=TOL[dt] * scale
    )


# ---- GEMM family ----


@pytest.mark.parametrize("dt", CDT)
@pytest.mark.parametrize("layout", ["contiguous", "transposed", "sliced", "conj_transposed"])
@pytest.mark.parametrize("n,k,m", [(1, 1, 1), (3, 4, 5), (7, 1, 2), (16, 9, 13)])
def test_mm_matmul(dt, layout, n, k, m):
    a, b = carr((n, k), n + k), carr((k, m), k + m + 1)
    if layout == "transposed":
        fa, ta = both(a.T.copy(), dt)
        fa, ta = fa.t(), ta.t()
        fb_, tb = both(b.T.copy(), dt)
        fb_, tb = fb_.transpose(0, 1), tb.transpose(0, 1)
    elif layout == "sliced":
        fa, ta = both(np.repeat(np.repeat(a, 2, 0), 3, 1), dt)
        fa, ta = fa[::2, ::3], ta[::2, ::3]
        fb_, tb = both(np.repeat(b, 2, 1), dt)
        fb_, tb = fb_[:, ::2], tb[:, ::2]
    elif layout == "conj_transposed":
        fa, ta = both(a.conj().T.copy(), dt)
        fa, ta = fa.mH, ta.mH
        fb_, tb = both(b, dt)
    else:
        fa, ta = both(a, dt)
        fb_, tb = both(b, dt)
    close(fc.mm(fa, fb_), torch.mm(ta, tb), dt, 10)
    close(fa @ fb_, ta @ tb, dt, 10)
    close(fc.matmul(fa, fb_), torch.matmul(ta, tb), dt, 10)


@pytest.mark.parametrize("dt", CDT)
def test_bmm_batched_matmul(dt):
    a, b = carr((3, 4, 5), 1), carr((3, 5, 2), 2)
    fa, ta = both(a, dt)
    fb_, tb = both(b, dt)
    close(fc.bmm(fa, fb_), torch.bmm(ta, tb), dt, 10)
    close(fc.matmul(fa, fb_), torch.matmul(ta, tb), dt, 10)
    # broadcast batch, vector operands, a transposed batch
    fv, tv = both(carr((5,), 3), dt)
    close(fc.matmul(fa, fv), torch.matmul(ta, tv), dt, 10)
    close(fc.matmul(fv, fb_), torch.matmul(tv, tb), dt, 10)
    close(fc.matmul(fa.transpose(1, 2), fa), torch.matmul(ta.transpose(1, 2), ta), dt, 10)
    fm, tm = both(carr((5, 2), 4), dt)
    close(fc.matmul(fa, fm), torch.matmul(ta, tm), dt, 10)


@pytest.mark.parametrize("dt", CDT)
def test_einsum_tensordot_outer_dot(dt):
    fa, ta = both(carr((3, 4), 7), dt)
    fb_, tb = both(carr((4, 5), 8), dt)
    close(fc.einsum("ij,jk->ik", fa, fb_), torch.einsum("ij,jk->ik", ta, tb), dt, 10)
    close(fc.einsum("ij,ij->i", fa, fa), torch.einsum("ij,ij->i", ta, ta), dt, 10)
    close(fc.tensordot(fa, fb_, 1), torch.tensordot(ta, tb, 1), dt, 10)
    close(fc.tensordot(fa, fa, ([0, 1], [0, 1])), torch.tensordot(ta, ta, ([0, 1], [0, 1])), dt, 10)


def test_mm_dtype_mismatch_raises():
    a = fc.tensor(carr((2, 2), 0), dtype=fc.complex64)
    with pytest.raises(TypeError, match=r"mm.*complex64.*float32"):
        fc.mm(a, fc.ones(2, 2))


# ---- cat, stack, roll ----


@pytest.mark.parametrize("dt", CDT)
def test_cat_stack_roll(dt):
    fa, ta = both(carr((3, 4), 1), dt)
    fb_, tb = both(carr((2, 4), 2), dt)
    close(fc.cat([fa, fb_]), torch.cat([ta, tb]), dt)
    close(fc.cat([fa.t(), fb_.t()], 1), torch.cat([ta.t(), tb.t()], 1), dt)
    close(fc.stack([fa, fa.t().t()], 1), torch.stack([ta, ta], 1), dt)
    close(fc.roll(fa, 1), torch.roll(ta, 1), dt)
    close(fc.roll(fa, (2, -1), (0, 1)), torch.roll(ta, (2, -1), (0, 1)), dt)
    # mixed dtypes promote to complex
    fr, tr = fc.ones(1, 4), torch.ones(1, 4)
    close(fc.cat([fa, fr]), torch.cat([ta, tr]), dt)


# ---- reductions and scans ----


@pytest.mark.parametrize("dt", CDT)
@pytest.mark.parametrize("shape,dim", [((7,), 0), ((3, 5), 1), ((3, 5), 0), ((2, 3, 4), 1)])
def test_prod_cumsum_cumprod(dt, shape, dim):
    a = carr(shape, len(shape) + dim) * 0.7
    fa, ta = both(a, dt)
    close(fa.prod(), ta.prod(), dt, 10)
    close(fa.prod(dim), ta.prod(dim), dt, 10)
    close(fa.prod(dim, keepdim=True), ta.prod(dim, keepdim=True), dt, 10)
    close(fa.cumsum(dim), ta.cumsum(dim), dt, 10)
    close(fa.cumprod(dim), ta.cumprod(dim), dt, 10)
    # non-contiguous
    close(fa.transpose(0, -1).cumsum(0), ta.transpose(0, -1).cumsum(0), dt, 10)
    close(fa.transpose(0, -1).prod(0), ta.transpose(0, -1).prod(0), dt, 10)


def test_cumsum_real_input_complex_dtype():
    fa, ta = fc.arange(5.0), torch.arange(5.0)
    close(fa.cumsum(0, dtype=fc.complex64), ta.cumsum(0, dtype=torch.complex64), "complex64")


@pytest.mark.parametrize("dt", CDT)
@pytest.mark.parametrize("shape", [(9,), (4, 6), (2, 3, 5)])
def test_var_std_real_result(dt, shape):
    fa, ta = both(carr(shape, 3), dt)
    close(fa.var(), ta.var(), dt, 10)
    close(fa.std(), ta.std(), dt, 10)
    close(fa.var(-1), ta.var(-1), dt, 10)
    close(fa.std(-1, keepdim=True), ta.std(-1, keepdim=True), dt, 10)
    close(fc.var(fa, correction=0), torch.var(ta, correction=0), dt, 10)
    close(fa.transpose(0, -1).var(0), ta.transpose(0, -1).var(0), dt, 10)
    v, m = fc.var_mean(fa, -1)
    tv, tm = torch.var_mean(ta, -1)
    close(v, tv, dt, 10)
    close(m, tm, dt, 10)


def test_var_of_int_raises():
    with pytest.raises(TypeError, match=r"var.*int64"):
        fc.var(fc.arange(4))


# ---- sgn, trace, kron ----


@pytest.mark.parametrize("dt", CDT)
def test_sgn_complex(dt):
    a = carr((4, 5), 11)
    a[0, 0] = 0
    a[1, 2] = 3.0
    fa, ta = both(a, dt)
    close(fc.sgn(fa), torch.sgn(ta), dt)
    close(fa.sgn(), ta.sgn(), dt)
    close(fa.t().sgn(), ta.t().sgn(), dt)
    out = fc.empty(4, 5, dtype=FC[dt])
    fc.sgn(fa, out=out)
    close(out, torch.sgn(ta), dt)
    fb_ = fa.clone()
    fb_.sgn_()
    close(fb_, torch.sgn(ta), dt)


@pytest.mark.parametrize("dt", ["float32", "float64"])
def test_sgn_real_is_sign(dt):
    x = [-2.0, -0.0, 0.0, 3.5, float("inf"), float("nan")]
    close(fc.sgn(fc.tensor(x, dtype=FC[dt])), torch.sgn(torch.tensor(x, dtype=TH[dt])), dt)
    assert fc.sgn(fc.tensor([-3, 0, 4])).tolist() == torch.sgn(torch.tensor([-3, 0, 4])).tolist()


@pytest.mark.parametrize("dt", CDT + ["float64"])
@pytest.mark.parametrize("shape", [(1, 1), (3, 3), (2, 5), (6, 4)])
def test_trace(dt, shape):
    a = carr(shape, 5) if dt in CDT else np.random.default_rng(0).standard_normal(shape)
    fa, ta = both(a, dt)
    close(fc.trace(fa), torch.trace(ta), dt, 10)
    close(fa.t().trace(), ta.t().trace(), dt, 10)


def test_trace_int_and_errors():
    fa = fc.arange(12).reshape(3, 4)
    t = torch.arange(12).reshape(3, 4)
    assert fc.trace(fa).item() == torch.trace(t).item()
    assert fc.trace(fa).dtype == fc.int64
    with pytest.raises(RuntimeError, match=r"trace.*matrix.*\(2, 2, 2\)"):
        fc.trace(fc.ones(2, 2, 2))
    with pytest.raises(RuntimeError, match=r"trace.*\(3,\)"):
        fc.trace(fc.ones(3))


@pytest.mark.parametrize("dt", CDT + ["float32"])
@pytest.mark.parametrize(
    "sa,sb", [((2, 3), (4, 5)), ((3,), (2, 2)), ((2, 1, 3), (3, 2)), ((1,), (5,)), ((0, 2), (3, 1))]
)
def test_kron(dt, sa, sb):
    a = carr(sa, 1) if dt in CDT else np.random.default_rng(1).standard_normal(sa)
    b = carr(sb, 2) if dt in CDT else np.random.default_rng(2).standard_normal(sb)
    fa, ta = both(a, dt)
    fb_, tb = both(b, dt)
    close(fc.kron(fa, fb_), torch.kron(ta, tb), dt)
    close(fa.kron(fb_), ta.kron(tb), dt)
    if fa.dim() >= 2:  # torch 2.13's kron refuses a transposed view: its operand made contiguous
        close(fc.kron(fa.transpose(0, -1), fb_), torch.kron(ta.transpose(0, -1).contiguous(), tb), dt)


def test_kron_mixed_dtypes_and_out():
    fa, ta = fc.tensor([[1, 2], [3, 4]]), torch.tensor([[1, 2], [3, 4]])
    fb_, tb = both(carr((2,), 9), "complex64")
    close(fc.kron(fa, fb_), torch.kron(ta, tb), "complex64")
    out = fc.empty(2, 4, dtype=fc.complex64)
    fc.kron(fa, fb_, out=out)
    close(out, torch.kron(ta, tb), "complex64")


# ---- linalg: inv, solve, det, slogdet (LAPACK c/z getrf/getri/getrs) ----

LA_SHAPES = [(1, 1), (3, 3), (2, 4, 4), (2, 1, 5, 5)]


@pytest.mark.parametrize("dt", CDT)
@pytest.mark.parametrize("shape", LA_SHAPES)
def test_linalg_inv_det_slogdet(dt, shape):
    a = carr(shape, sum(shape)) + 2 * np.eye(shape[-1])
    fa, ta = both(a, dt)
    close(fc.linalg.inv(fa), torch.linalg.inv(ta), dt, 50)
    close(fc.linalg.inv(fa.transpose(-2, -1)), torch.linalg.inv(ta.transpose(-2, -1)), dt, 50)
    close(fc.linalg.det(fa), torch.linalg.det(ta), dt, 50)
    s, la = fc.linalg.slogdet(fa)
    ts, tla = torch.linalg.slogdet(ta)
    close(s, ts, dt, 50)
    close(la, tla, dt, 50)


@pytest.mark.parametrize("dt", CDT)
def test_linalg_solve(dt):
    fa, ta = both(carr((2, 4, 4), 1) + 2 * np.eye(4), dt)
    fb_, tb = both(carr((2, 4, 3), 2), dt)
    close(fc.linalg.solve(fa, fb_), torch.linalg.solve(ta, tb), dt, 50)
    close(fc.linalg.solve(fa, fb_[..., 0]), torch.linalg.solve(ta, tb[..., 0]), dt, 50)
    fc2, tc2 = both(carr((2, 3, 4), 3), dt)
    close(fc.linalg.solve(fa, fc2, left=False), torch.linalg.solve(ta, tc2, left=False), dt, 50)
    close(fc.linalg.solve(fa.mH, fb_), torch.linalg.solve(ta.mH, tb), dt, 50)


def test_linalg_complex_singular_and_dtype_errors():
    z = fc.zeros(3, 3, dtype=fc.complex128)
    with pytest.raises(RuntimeError, match="linalg.inv.*singular"):
        fc.linalg.inv(z)
    s, la = fc.linalg.slogdet(z)
    assert s.item() == 0 and la.item() == float("-inf") and la.dtype == fc.float64
    assert fc.linalg.det(z).item() == 0
    a = fc.tensor(carr((3, 3), 0), dtype=fc.complex64)
    with pytest.raises(TypeError, match=r"linalg.solve.*complex64.*float32"):
        fc.linalg.solve(a, fc.ones(3, 1))
    with pytest.raises(TypeError, match=r"linalg.inv.*int64.*complex64"):
        fc.linalg.inv(fc.ones(3, 3, dtype=fc.int64))


@pytest.mark.parametrize("dt", CDT)
def test_linalg_norms(dt):
    fa, ta = both(carr((3, 4, 5), 21), dt)
    for ord_ in (2, 1, 0, 3.5, 0.5, float("inf"), -float("inf")):
        close(fc.linalg.vector_norm(fa, ord_), torch.linalg.vector_norm(ta, ord_), dt, 10)
        close(fc.linalg.vector_norm(fa, ord_, -1), torch.linalg.vector_norm(ta, ord_, -1), dt, 10)
    for ord_ in ("fro", 1, -1, float("inf"), -float("inf")):
        close(fc.linalg.matrix_norm(fa, ord_), torch.linalg.matrix_norm(ta, ord_), dt, 10)
    close(fc.linalg.norm(fa), torch.linalg.norm(ta), dt, 10)
    close(fc.linalg.norm(fa[0]), torch.linalg.norm(ta[0]), dt, 10)
    close(fc.linalg.norm(fa.transpose(0, 2), dim=1), torch.linalg.norm(ta.transpose(0, 2), dim=1), dt, 10)


def hpd(shape, seed):
    """Hermitian positive-definite matrices."""
    a = carr(shape, seed)
    return a @ np.conj(np.swapaxes(a, -1, -2)) + shape[-1] * np.eye(shape[-1])


@pytest.mark.parametrize("dt", CDT)
@pytest.mark.parametrize("shape", [(1, 1), (4, 4), (2, 3, 3)])
@pytest.mark.parametrize("upper", [False, True])
def test_linalg_cholesky(dt, shape, upper):
    fa, ta = both(hpd(shape, len(shape)), dt)
    close(fc.linalg.cholesky(fa, upper=upper), torch.linalg.cholesky(ta, upper=upper), dt, 50)
    close(fc.linalg.cholesky(fa.mT, upper=upper), torch.linalg.cholesky(ta.mT, upper=upper), dt, 50)


def test_linalg_cholesky_complex_not_pd():
    a = fc.tensor(-np.eye(3) + 0j, dtype=fc.complex128)
    with pytest.raises(RuntimeError, match="linalg.cholesky.*positive-definite"):
        fc.linalg.cholesky(a)


def herm(shape, seed):
    a = carr(shape, seed)
    return a + np.conj(np.swapaxes(a, -1, -2))


@pytest.mark.parametrize("dt", CDT)
@pytest.mark.parametrize("shape", [(1, 1), (4, 4), (2, 3, 3)])
@pytest.mark.parametrize("uplo", ["L", "U"])
def test_linalg_eigh_eigvalsh(dt, shape, uplo):
    a = herm(shape, 3)
    a_tri = np.tril(a) if uplo == "L" else np.triu(a)  # the other triangle is not read
    fa, ta = both(a_tri, dt)
    L, V = fc.linalg.eigh(fa, uplo)
    tL, tV = torch.linalg.eigh(ta, uplo)
    close(L, tL, dt, 50)
    close(fc.linalg.eigvalsh(fa, uplo), torch.linalg.eigvalsh(ta, uplo), dt, 50)
    # eigenvectors up to a phase per column: compare |V^H tV| = I and the reconstruction
    Vn, Ln = to_numpy(V, widen=True), to_numpy(L, widen=True)
    np.testing.assert_allclose(Vn @ (Ln[..., None] * np.conj(np.swapaxes(Vn, -1, -2))), a, atol=TOL[dt] * 100)
    overlap = np.abs(np.conj(np.swapaxes(Vn, -1, -2)) @ tV.numpy())
    np.testing.assert_allclose(overlap, np.broadcast_to(np.eye(shape[-1]), shape), atol=TOL[dt] * 100)
