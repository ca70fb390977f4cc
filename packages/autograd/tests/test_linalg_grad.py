"""Gradients of flambeau.linalg against PyTorch 2.13 and finite differences
(gradcheck, float64): the LAPACK primitives with derivatives of their own (inv,
solve, det/slogdet, cholesky, qr, svd, eigh) and the composites differentiated
through the ops they call (einsum, tensordot, multi_dot, matrix_power, pinv,
norms, cross). Singular vectors and eigenvectors are defined up to sign, so
their tests differentiate sign-invariant functions of them, as PyTorch's do."""

from __future__ import annotations

import flambeau_autograd as ag
import flambeau_core as fc
import numpy as np
import pytest
from conftest import compare_with_torch, fb_tensor, to_np, torch

pytestmark = pytest.mark.on_devices(not_on_cuda="linalg: no flambeau-cuda kernel yet")

LA = fc.linalg
TLA = torch.linalg


def rand(shape, seed=0):
    return np.random.default_rng(seed).standard_normal(shape)


def invertible(shape, seed=0):
    n = shape[-1]
    return rand(shape, seed) + 2 * np.sqrt(n) * np.eye(n)


def sym(x, lib):
    return x + x.transpose(-2, -1)


def spd_of(x):
    """A symmetric positive-definite function of any square x (works on both libraries)."""
    n = x.shape[-1]
    eye = fb_tensor(np.eye(n)) if isinstance(x, fc.Tensor) else torch.eye(n, dtype=x.dtype)
    return x @ x.transpose(-2, -1) + n * eye


BATCHES = [(), (2,)]


@pytest.mark.parametrize("batch", BATCHES)
def test_inv(batch):
    compare_with_torch(LA.inv, TLA.inv, [invertible((*batch, 4, 4), 1)])
    compare_with_torch(fc.inverse, torch.inverse, [invertible((3, 3), 2)])


@pytest.mark.parametrize("batch", BATCHES)
def test_det_slogdet_logdet(batch):
    a = invertible((*batch, 4, 4), 3)
    compare_with_torch(LA.det, TLA.det, [a])
    compare_with_torch(lambda x: LA.slogdet(x).logabsdet, lambda x: TLA.slogdet(x).logabsdet, [a])
    pos = a @ np.swapaxes(a, -1, -2)
    compare_with_torch(fc.logdet, torch.logdet, [pos])
    neg = a.copy()
    neg[..., 0, :] *= -1  # a negative determinant: det's gradient has the sign
    compare_with_torch(LA.det, TLA.det, [neg])


@pytest.mark.parametrize("a_batch, b_shape", [((), (4, 2)), ((), (4,)), ((2,), (2, 4, 3)), ((2,), (4, 1))])
def test_solve(a_batch, b_shape):
    compare_with_torch(LA.solve, TLA.solve, [invertible((*a_batch, 4, 4), 4), rand(b_shape, 5)])


def test_solve_left_false():
    compare_with_torch(
        lambda a, b: LA.solve(a, b, left=False),
        lambda a, b: TLA.solve(a, b, left=False),
        [invertible((3, 3), 6), rand((2, 3), 7)],
    )


@pytest.mark.parametrize("batch", BATCHES)
@pytest.mark.parametrize("upper", [False, True])
def test_cholesky(batch, upper):
    compare_with_torch(
        lambda x: LA.cholesky(spd_of(x), upper=upper),
        lambda x: TLA.cholesky(spd_of(x), upper=upper),
        [rand((*batch, 4, 4), 8)],
    )


@pytest.mark.parametrize("shape", [(5, 3), (4, 4), (3, 5), (2, 5, 3), (2, 3, 6)])
@pytest.mark.parametrize("mode", ["reduced", "complete"])
def test_qr(shape, mode):
    if mode == "complete" and shape[-2] > shape[-1]:
        with pytest.raises(fc.FlambeauError, match="not differentiable when mode='complete'"):
            x = fb_tensor(rand(shape, 9), requires_grad=True)
            LA.qr(x, mode=mode).Q.sum().backward()
        return
    # Q and R are unique (R's diagonal positive in LAPACK's and PyTorch's convention alike): compare directly.
    compare_with_torch(lambda x: LA.qr(x, mode=mode).Q, lambda x: TLA.qr(x, mode=mode).Q, [rand(shape, 9)])
    compare_with_torch(lambda x: LA.qr(x, mode=mode).R, lambda x: TLA.qr(x, mode=mode).R, [rand(shape, 10)])


def test_qr_mode_r_has_no_gradient():
    x = fb_tensor(rand((3, 3), 11), requires_grad=True)
    with pytest.raises(fc.FlambeauError, match="mode='r'"):
        LA.qr(x, mode="r").R.sum().backward()


@pytest.mark.parametrize("shape", [(5, 3), (4, 4), (3, 5), (2, 4, 3)])
@pytest.mark.parametrize("full_matrices", [False, True])
def test_svd(shape, full_matrices):
    a = rand(shape, 12)

    def gauge_invariant(lib):
        def f(x):
            U, S, Vh = lib.linalg.svd(x, full_matrices=full_matrices)
            k = S.shape[-1]
            U, Vh = U[..., :, :k], Vh[..., :k, :]
            # U diag(S^2) U^T and the projector V V^T: invariant under the sign of each singular pair.
            return (U * (S * S).unsqueeze(-2)) @ U.transpose(-2, -1), Vh.transpose(-2, -1) @ (Vh * S.unsqueeze(-1))

        return f

    compare_with_torch(lambda x: gauge_invariant(fc)(x)[0], lambda x: gauge_invariant(torch)(x)[0], [a])
    compare_with_torch(lambda x: gauge_invariant(fc)(x)[1], lambda x: gauge_invariant(torch)(x)[1], [a])
    compare_with_torch(lambda x: LA.svd(x, full_matrices=full_matrices).S, lambda x: TLA.svdvals(x), [a])
    compare_with_torch(LA.svdvals, TLA.svdvals, [a])
    # U S Vh itself: the reconstruction's gradient is the identity.
    compare_with_torch(
        lambda x: (lambda u, s, vh: (u[..., :, : s.shape[-1]] * s.unsqueeze(-2)) @ vh[..., : s.shape[-1], :])(
            *LA.svd(x, full_matrices=full_matrices)
        ),
        lambda x: x * 1.0,
        [a],
    )


@pytest.mark.parametrize("batch", BATCHES)
@pytest.mark.parametrize("uplo", ["L", "U"])
def test_eigh(batch, uplo):
    a = rand((*batch, 4, 4), 13)
    compare_with_torch(
        lambda x: LA.eigh(sym(x, fc), UPLO=uplo).eigenvalues,
        lambda x: TLA.eigh(sym(x, torch), UPLO=uplo).eigenvalues,
        [a],
    )
    compare_with_torch(lambda x: LA.eigvalsh(sym(x, fc)), lambda x: TLA.eigvalsh(sym(x, torch)), [a])

    def f(lib):
        def g(x):
            L, V = lib.linalg.eigh(sym(x, lib), UPLO=uplo)
            return (V * V) * L.unsqueeze(-2)  # each column's sign cancels in V*V

        return g

    compare_with_torch(f(fc), f(torch), [a])


def test_lstsq_pinv_matrix_power():
    a = rand((5, 3), 14)
    compare_with_torch(LA.pinv, TLA.pinv, [a])
    compare_with_torch(lambda x: LA.matrix_power(x, 3), lambda x: TLA.matrix_power(x, 3), [rand((2, 3, 3), 15)])
    compare_with_torch(lambda x: LA.matrix_power(x, -2), lambda x: TLA.matrix_power(x, -2), [invertible((3, 3), 16)])
    # the identity, still a function of A (torch's): its gradient exists and is zero
    compare_with_torch(lambda x: LA.matrix_power(x, 0), lambda x: TLA.matrix_power(x, 0), [rand((2, 3, 3), 17)])


@pytest.mark.parametrize(
    "fn",
    [
        lambda lib, x: lib.linalg.vector_norm(x, 0),
        lambda lib, x: lib.linalg.vector_norm(x, 0, dim=1, keepdim=True),
        lambda lib, x: lib.linalg.norm(x[0], 0),
        lambda lib, x: lib.linalg.vector_norm(x[0, 0], ord=0),
    ],
)
def test_norm_ord_zero_has_a_zero_gradient(fn):
    # the count of nonzeros requires grad, as torch's, with a zero gradient (also where an element is 0)
    a = rand((3, 4), 18)
    a[1, 2] = 0.0
    compare_with_torch(lambda x: fn(fc, x), lambda x: fn(torch, x), [a])


@pytest.mark.parametrize(
    "eq, shapes",
    [
        ("ij,jk->ik", [(3, 4), (4, 2)]),
        ("bij,bjk->bik", [(2, 3, 4), (2, 4, 5)]),
        ("ii->i", [(3, 3)]),
        ("...ij,...jk", [(2, 3, 4), (4, 3)]),
        ("i,j->ij", [(3,), (2,)]),
        ("ijk,ikl,ilm->ijm", [(2, 3, 2), (2, 2, 4), (2, 4, 3)]),
    ],
)
def test_einsum(eq, shapes):
    compare_with_torch(
        lambda *xs: fc.einsum(eq, *xs), lambda *xs: torch.einsum(eq, *xs), [rand(s, i) for i, s in enumerate(shapes)]
    )


def test_tensordot_multi_dot_cross_outer():
    compare_with_torch(
        lambda a, b: fc.tensordot(a, b, dims=([0, 2], [1, 0])),
        lambda a, b: torch.tensordot(a, b, dims=([0, 2], [1, 0])),
        [rand((3, 4, 5), 1), rand((5, 3, 2), 2)],
    )
    compare_with_torch(
        lambda *xs: LA.multi_dot(list(xs)),
        lambda *xs: TLA.multi_dot(list(xs)),
        [rand((4,), 3), rand((4, 5), 4), rand((5, 2), 5)],
    )
    compare_with_torch(LA.cross, TLA.cross, [rand((4, 3), 6), rand((4, 3), 7)])
    compare_with_torch(LA.outer, torch.outer, [rand((3,), 8), rand((4,), 9)])


@pytest.mark.parametrize("ord", [2, 1, 3, "fro", "nuc", 2.0])
def test_norms(ord):
    a = rand((3, 4), 17)
    if isinstance(ord, str) or ord == 2.0 and not isinstance(ord, int):
        compare_with_torch(lambda x: LA.matrix_norm(x, ord), lambda x: TLA.matrix_norm(x, ord), [a])
    compare_with_torch(
        lambda x: LA.vector_norm(x, 3 if isinstance(ord, str) else ord, -1),
        lambda x: TLA.vector_norm(x, 3 if isinstance(ord, str) else ord, -1),
        [a],
    )


def test_second_order_inv_and_det():
    x = fb_tensor(invertible((3, 3), 18), requires_grad=True)
    assert ag.gradgradcheck(LA.inv, [x])
    assert ag.gradgradcheck(LA.det, [x])


def test_grad_fn_names():
    x = fb_tensor(invertible((3, 3), 19), requires_grad=True)
    assert LA.inv(x).grad_fn.name() == "LinalgInvBackward0"
    assert to_np(LA.inv(x)).shape == (3, 3)
