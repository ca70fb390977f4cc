"""Gradients of the complex linalg against PyTorch 2.13 and gradcheck/gradgradcheck
(float64): svd, svdvals, qr, pinv, lstsq, logdet, eigh on complex64/complex128 (batched, tall/wide/square,
non-contiguous); the phase-dependent losses of complex svd and eigh raise PyTorch's errors; pinv and lstsq
are differentiable at rank-deficient A (PyTorch's pinv_backward), pinv with any tolerances; matrix_power of
complex matrices (n < 0 too); mode and frexp gradients."""

from __future__ import annotations

import flambeau_autograd as ag
import flambeau_core as fc
import numpy as np
import pytest
from conftest import fb_tensor, to_np, torch

pytestmark = pytest.mark.on_devices(not_on_cuda="complex linalg: no flambeau-cuda kernel yet")

LA = fc.linalg
FC = {"complex64": fc.complex64, "complex128": fc.complex128}
TH = {"complex64": torch.complex64, "complex128": torch.complex128}
TOL = {"complex64": 2e-4, "complex128": 1e-9}
DTS = ["complex64", "complex128"]
SHAPES = [(3, 3), (5, 3), (3, 5), (2, 4, 3), (2, 3, 4)]


def carr(shape, seed):
    rng = np.random.default_rng(seed)
    return rng.standard_normal(shape) + 1j * rng.standard_normal(shape)


def check_grads(fn, arrays, dt, seed=0, transpose=False):
    """fn(lib, *inputs) -> a complex or real tensor; the loss is a fixed real-linear functional of it."""
    f = [fc.tensor(a, dtype=FC[dt]).requires_grad_() for a in arrays]
    t = [torch.tensor(a, dtype=TH[dt], requires_grad=True) for a in arrays]
    fi = [x.transpose(-2, -1) if transpose else x for x in f]
    ti = [x.transpose(-2, -1) if transpose else x for x in t]
    ty = fn(torch, *ti)
    w = np.random.default_rng(seed).standard_normal(tuple(ty.shape) + (2,))
    if ty.dtype.is_complex:
        tw = torch.complex(torch.tensor(w[..., 0]), torch.tensor(w[..., 1])).to(ty.dtype)
        torch.real(ty * tw).sum().backward()
    else:
        (ty * torch.tensor(w[..., 0]).to(ty.dtype)).sum().backward()
    fy = fn(fc, *fi)
    np.testing.assert_allclose(to_np(fy), ty.detach().numpy(), rtol=TOL[dt] * 10, atol=TOL[dt] * 10)
    if fy.dtype.is_complex:
        fw = fc.tensor(w[..., 0] + 1j * w[..., 1], dtype=fy.dtype)
        fc.real(fy * fw).sum().backward()
    else:
        (fy * fc.tensor(w[..., 0], dtype=fy.dtype)).sum().backward()
    for a, b in zip(f, t, strict=True):
        assert a.grad is not None and a.grad.dtype == a.dtype
        np.testing.assert_allclose(to_np(a.grad), b.grad.numpy(), rtol=TOL[dt] * 100, atol=TOL[dt] * 100)


def gradcheck_complex(fn, shapes, seed=0, second=False):
    """gradcheck (and gradgradcheck) over the real and imaginary parts (float64) of complex inputs."""
    rng = np.random.default_rng(seed)
    parts = [fc.tensor(rng.standard_normal(s), dtype=fc.float64).requires_grad_() for s in shapes for _ in (0, 1)]

    def g(*ps):
        zs = [fc.complex(ps[2 * i], ps[2 * i + 1]) for i in range(len(shapes))]
        y = fn(*zs)
        return fc.view_as_real(y) if y.dtype.is_complex else y

    assert ag.gradcheck(g, parts)
    if second:
        assert ag.gradgradcheck(g, parts)


def svd_gauge_invariant(lib, a):
    """Functions of the SVD that do not depend on the singular vectors' phases."""
    U, S, Vh = lib.linalg.svd(a, full_matrices=False)
    return U @ (Vh * S.unsqueeze(-1).to(U.dtype) ** 0.5) + (U * U.conj()) @ (Vh * Vh.conj())


# ---- svd / svdvals ----


@pytest.mark.parametrize("dt", DTS)
@pytest.mark.parametrize("shape", SHAPES)
def test_svd_complex_grad_matches_torch(dt, shape):
    check_grads(svd_gauge_invariant, [carr(shape, sum(shape))], dt)
    check_grads(lambda L, a: L.linalg.svdvals(a), [carr(shape, 1 + sum(shape))], dt)


@pytest.mark.parametrize("dt", DTS)
def test_svd_complex_grad_full_matrices_and_non_contiguous(dt):
    def f(lib, a):
        U, S, Vh = lib.linalg.svd(a, full_matrices=True)
        k = S.shape[-1]
        return U[..., :k] @ Vh[..., :k, :] + S.to(U.dtype).sum()

    check_grads(f, [carr((4, 2), 3)], dt)
    check_grads(svd_gauge_invariant, [carr((2, 5, 3), 4)], dt, transpose=True)


def test_svd_complex_gradcheck():
    gradcheck_complex(lambda a: svd_gauge_invariant(fc, a), [(4, 3)], seed=5)
    gradcheck_complex(lambda a: svd_gauge_invariant(fc, a), [(2, 3, 4)], seed=6)
    gradcheck_complex(lambda a: LA.svdvals(a), [(3, 4)], seed=7, second=True)


def test_svd_complex_phase_dependent_loss_raises():
    x = fc.tensor(carr((4, 3), 8), dtype=fc.complex128).requires_grad_()
    U, S, Vh = LA.svd(x)
    with pytest.raises(RuntimeError, match=r"svd_backward: The singular vectors in the complex case are specified"):
        fc.real(U).sum().backward()
    x = fc.tensor(carr((3, 3), 9), dtype=fc.complex64).requires_grad_()
    with pytest.raises(fc.FlambeauError, match=r"depends on this phase term, making it ill-defined"):
        fc.imag(LA.svd(x).Vh).sum().backward()
    t = torch.tensor(carr((4, 3), 8), requires_grad=True)
    with pytest.raises(RuntimeError, match=r"svd_backward: The singular vectors in the complex case are specified"):
        torch.linalg.svd(t).U.real.sum().backward()


# ---- qr ----


@pytest.mark.parametrize("dt", DTS)
@pytest.mark.parametrize("shape", SHAPES + [(4, 4, 2)])
@pytest.mark.parametrize("mode", ["reduced", "complete"])
def test_qr_complex_grad_matches_torch(dt, shape, mode):
    if mode == "complete" and shape[-2] > shape[-1]:
        x = fc.tensor(carr(shape, 1), dtype=FC[dt]).requires_grad_()
        Q, R = LA.qr(x, mode="complete")
        with pytest.raises(fc.FlambeauError, match="not differentiable when mode='complete' and nrows > ncols"):
            (fc.real(Q).sum() + fc.real(R).sum()).backward()
        return
    check_grads(lambda L, a: L.linalg.qr(a, mode=mode).Q, [carr(shape, 10 + sum(shape))], dt, seed=1)
    check_grads(lambda L, a: L.linalg.qr(a, mode=mode).R, [carr(shape, 11 + sum(shape))], dt, seed=2)


def test_qr_complex_gradcheck_and_non_contiguous():
    check_grads(lambda L, a: L.linalg.qr(a).Q @ L.linalg.qr(a).R.conj(), [carr((2, 4, 3), 12)], "complex128")
    check_grads(lambda L, a: L.linalg.qr(a).R, [carr((2, 5, 3), 13)], "complex128", transpose=True)
    gradcheck_complex(lambda a: LA.qr(a).Q, [(4, 3)], seed=14)
    gradcheck_complex(lambda a: LA.qr(a).R, [(3, 4)], seed=15)
    gradcheck_complex(lambda a: LA.qr(a).R, [(3, 3)], seed=16, second=True)


# ---- eigh: the phase check and the Hermitian projection ----


def herm(lib, a):
    return a + a.mH if lib is torch else a + fc.conj(a.transpose(-2, -1))


@pytest.mark.parametrize("dt", DTS)
def test_eigh_complex_grad_matches_torch(dt):
    def f(lib, a):
        L, V = lib.linalg.eigh(herm(lib, a))
        return (V * V.conj()) * (1.0 + L.unsqueeze(-2)).to(V.dtype)

    check_grads(f, [carr((4, 4), 17)], dt)
    check_grads(f, [carr((2, 3, 3), 18)], dt)
    check_grads(lambda lib, a: lib.linalg.eigh(herm(lib, a))[0], [carr((3, 3), 19)], dt)


def test_eigh_complex_phase_dependent_loss_raises():
    x = fc.tensor(carr((3, 3), 20), dtype=fc.complex128).requires_grad_()
    L, V = LA.eigh(herm(fc, x))
    with pytest.raises(fc.FlambeauError, match=r"linalg_eigh_backward: The eigenvectors in the complex case"):
        fc.real(V).sum().backward()
    t = torch.tensor(carr((3, 3), 20), requires_grad=True)
    with pytest.raises(RuntimeError, match=r"linalg_eigh_backward: The eigenvectors in the complex case"):
        torch.linalg.eigh(herm(torch, t))[1].real.sum().backward()


def test_eigh_real_grad_is_symmetric_as_torch():
    # eigh reads one triangle; its gradient is the symmetric one (PyTorch projects V^T gV on the skew part).
    a = np.random.default_rng(21).standard_normal((4, 4))
    a = a + a.T
    w = np.random.default_rng(22).standard_normal((4, 4))
    x, t = fb_tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
    (LA.eigh(x)[1] ** 2 * fb_tensor(w)).sum().backward()
    (torch.linalg.eigh(t)[1] ** 2 * torch.tensor(w)).sum().backward()
    np.testing.assert_allclose(to_np(x.grad), t.grad.numpy(), rtol=1e-9, atol=1e-11)
    np.testing.assert_allclose(to_np(x.grad), to_np(x.grad).T, atol=1e-12)


# ---- pinv, lstsq, logdet ----


@pytest.mark.parametrize("dt", DTS)
@pytest.mark.parametrize("shape", SHAPES)
def test_pinv_complex_grad_matches_torch(dt, shape):
    check_grads(lambda L, a: L.linalg.pinv(a), [carr(shape, 23 + sum(shape))], dt)


@pytest.mark.parametrize("dt", DTS)
@pytest.mark.parametrize("kw", [{"atol": 1e300}, {"rtol": 3.4028234663852886e38}, {"rtol": 0.4}, {"atol": "batch"}])
def test_pinv_grad_with_tolerances_matches_torch(dt, kw):
    """Tolerances beyond float32's range (PyTorch keeps them in double) and a tensor of them per matrix."""

    def f(L, a):
        k = dict(kw)
        if k.get("atol") == "batch":
            k["atol"] = L.tensor([0.0, 2.5], dtype=L.float64)
        return L.linalg.pinv(a, **k)

    check_grads(f, [carr((2, 4, 3), 27)], dt)


@pytest.mark.parametrize("dt", DTS)
@pytest.mark.parametrize("n", [0, 1, 2, 3, -1, -2])
def test_matrix_power_complex_grad_matches_torch(dt, n):
    a = carr((2, 3, 3), 28) / 2 + 2 * np.eye(3)  # invertible, for n < 0
    check_grads(lambda L, x: L.linalg.matrix_power(x, n), [a], dt)


def test_pinv_grad_rank_deficient_and_hermitian():
    rng = np.random.default_rng(24)
    for a in (rng.standard_normal((5, 2)) @ rng.standard_normal((2, 4)), np.zeros((3, 2)), np.ones((3, 3))):
        w = rng.standard_normal(a.shape[::-1])
        x, t = fb_tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
        (LA.pinv(x) * fb_tensor(w)).sum().backward()
        (torch.linalg.pinv(t) * torch.tensor(w)).sum().backward()
        g = to_np(x.grad)
        assert np.isfinite(g).all()
        np.testing.assert_allclose(g, t.grad.numpy(), rtol=1e-8, atol=1e-10)
    c = carr((4, 2), 25) @ carr((2, 5), 26)  # complex, rank 2
    check_grads(lambda L, a: L.linalg.pinv(a), [c], "complex128")
    check_grads(lambda L, a: L.linalg.pinv(herm(L, a), hermitian=True), [carr((3, 3), 27)], "complex128")
    check_grads(lambda L, a: L.linalg.pinv(a, atol=0.5), [carr((2, 3, 4), 28)], "complex128")
    x = fb_tensor(rng.standard_normal((3, 4)), requires_grad=True)
    assert ag.gradcheck(lambda a: LA.pinv(a), [x])
    assert ag.gradgradcheck(lambda a: LA.pinv(a), [x])
    gradcheck_complex(lambda a: LA.pinv(a), [(4, 3)], seed=29)


LSTSQ_SHAPES = [((6, 3), (6, 2)), ((4, 4), (4, 1)), ((2, 5, 3), (2, 5, 1)), ((3, 5), (3, 2))]


@pytest.mark.parametrize("dt", DTS)
@pytest.mark.parametrize("shape_a,shape_b", LSTSQ_SHAPES)
def test_lstsq_complex_grad_matches_torch(dt, shape_a, shape_b):
    def f(lib, a, b):
        if lib is torch:
            return torch.linalg.lstsq(a, b, driver="gelsd").solution
        return LA.lstsq(a, b).solution

    check_grads(f, [carr(shape_a, 30), carr(shape_b, 31)], dt)


def test_lstsq_grad_rank_deficient_matches_torch():
    rng = np.random.default_rng(32)
    for a, b in (
        (rng.standard_normal((6, 2)) @ rng.standard_normal((2, 4)), rng.standard_normal((6, 3))),
        (rng.standard_normal((3, 1)) @ rng.standard_normal((1, 5)), rng.standard_normal((3, 2))),
        (np.zeros((4, 3)), rng.standard_normal((4, 1))),
    ):
        x, xb = fb_tensor(a, requires_grad=True), fb_tensor(b, requires_grad=True)
        t, tb = torch.tensor(a, requires_grad=True), torch.tensor(b, requires_grad=True)
        X, tX = LA.lstsq(x, xb).solution, torch.linalg.lstsq(t, tb, driver="gelsd").solution
        np.testing.assert_allclose(to_np(X), tX.detach().numpy(), atol=1e-10)
        w = rng.standard_normal(tuple(tX.shape))
        (X * fb_tensor(w)).sum().backward()
        (tX * torch.tensor(w)).sum().backward()
        np.testing.assert_allclose(to_np(x.grad), t.grad.numpy(), rtol=1e-8, atol=1e-10)
        np.testing.assert_allclose(to_np(xb.grad), tb.grad.numpy(), rtol=1e-8, atol=1e-10)
    c = carr((5, 2), 33) @ carr((2, 3), 34)

    def f(lib, a, b):
        if lib is torch:
            return torch.linalg.lstsq(a, b, driver="gelsd").solution
        return LA.lstsq(a, b).solution

    check_grads(f, [c, carr((5, 2), 35)], "complex128")
    # (No gradcheck here: a finite difference of a rank-deficient A makes it full rank, a jump in the
    # solution; PyTorch's gradient is that of the pinv-based solution at fixed rank.)
    a = fb_tensor(rng.standard_normal((5, 3)), requires_grad=True)
    b = fb_tensor(rng.standard_normal((5, 2)), requires_grad=True)
    assert ag.gradcheck(lambda p, q: LA.lstsq(p, q).solution, [a, b])
    assert ag.gradgradcheck(lambda p, q: LA.lstsq(p, q).solution, [a, b])


@pytest.mark.parametrize("dt", DTS)
def test_logdet_complex_grad_matches_torch(dt):
    check_grads(lambda L, a: L.logdet(a), [carr((2, 3, 3), 36)], dt)
    gradcheck_complex(lambda a: fc.logdet(a), [(3, 3)], seed=37)


# ---- mode, frexp ----


def test_mode_grad_matches_torch():
    a = np.array([[3.0, 1.0, 1.0, 3.0, 2.0, 2.0], [5.0, 5.0, 4.0, 4.0, 4.0, 5.0]])
    for dim, keepdim in ((1, False), (0, True), (-1, True)):
        x, t = fb_tensor(a, requires_grad=True), torch.tensor(a, requires_grad=True)
        v, tv = fc.mode(x, dim, keepdim).values, torch.mode(t, dim, keepdim).values
        w = np.arange(1.0, 1.0 + tv.numel()).reshape(tuple(tv.shape))
        (v * fb_tensor(w)).sum().backward()
        (tv * torch.tensor(w)).sum().backward()
        np.testing.assert_array_equal(to_np(x.grad), t.grad.numpy())
    # Rows of distinct values (the mode is then the smallest): a finite difference keeps the mode.
    x = fb_tensor(np.random.default_rng(38).permutation(15).reshape(3, 5).astype(float), requires_grad=True)
    assert ag.gradcheck(lambda y: fc.mode(y, 1).values, [x])


@pytest.mark.parametrize("fdt,tdt", [(fc.float32, torch.float32), (fc.float64, torch.float64)])
def test_frexp_grad_matches_torch(fdt, tdt):
    a = np.array([3.0, -0.2, 1e-3, 100.0, 0.5])
    x = fc.tensor(a, dtype=fdt).requires_grad_()
    t = torch.tensor(a, dtype=tdt, requires_grad=True)
    m, e = fc.frexp(x)
    tm, te = torch.frexp(t)
    (m * fc.tensor([1.0, 2.0, 3.0, 4.0, 5.0], dtype=fdt)).sum().backward()
    (tm * torch.tensor([1.0, 2.0, 3.0, 4.0, 5.0], dtype=tdt)).sum().backward()
    assert x.grad.dtype == fdt
    np.testing.assert_allclose(to_np(x.grad), t.grad.numpy(), rtol=1e-6)
    assert not e.requires_grad


@pytest.mark.parametrize("dt", DTS)
@pytest.mark.parametrize("ord", ["nuc", 2, -2])
def test_matrix_norm_svd_orders_complex_grad(dt, ord):
    check_grads(lambda L, a: L.linalg.matrix_norm(a, ord), [carr((2, 4, 3), 40)], dt)
    check_grads(lambda L, a: L.linalg.norm(a, ord), [carr((3, 5), 41)], dt)
    gradcheck_complex(lambda a: LA.matrix_norm(a, ord), [(3, 4)], seed=42)
