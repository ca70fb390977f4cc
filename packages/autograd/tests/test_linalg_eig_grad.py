"""Gradients of linalg.eig/eigvals, of linalg.lstsq's solution, and of norms
and std at zero or constant inputs, against PyTorch 2.13 and gradcheck
(float64). Eigenvectors are defined up to a phase, so the losses here depend
on |V| only (as PyTorch's tests do); a loss that depends on the phase raises,
as in PyTorch."""

from __future__ import annotations

import math

import flambeau_autograd as ag
import flambeau_core as fc
import numpy as np
import pytest
from conftest import fb_tensor, to_np, torch

pytestmark = pytest.mark.on_devices(not_on_cuda="eig: no flambeau-cuda kernel yet")

LA = fc.linalg


def distinct(shape, seed):
    """Matrices with well-separated eigenvalues (a diagonal spread plus a perturbation)."""
    rng = np.random.default_rng(seed)
    n = shape[-1]
    return np.diag(np.arange(1.0, n + 1) * 1.5) + 0.3 * rng.standard_normal(shape)


def eig_loss(lib, a):
    L, V = lib.linalg.eig(a)
    return (lib.abs(L) * lib.arange(1, L.shape[-1] + 1, dtype=a.dtype)).sum() + (lib.abs(V) ** 2 * a.detach()).sum()


@pytest.mark.parametrize("shape", [(3, 3), (2, 4, 4)])
def test_eig_grad_matches_torch(shape):
    a = distinct(shape, 1)
    x = fb_tensor(a, requires_grad=True)
    t = torch.tensor(a, requires_grad=True)
    eig_loss(fc, x).backward()
    eig_loss(torch, t).backward()
    np.testing.assert_allclose(to_np(x.grad), t.grad.numpy(), rtol=1e-8, atol=1e-10)


def test_eig_complex_pairs_grad_matches_torch():
    a = np.array([[0.5, -2.0, 0.1], [2.0, 0.3, 0.0], [0.2, 0.1, 3.0]])
    x = fb_tensor(a, requires_grad=True)
    t = torch.tensor(a, requires_grad=True)
    eig_loss(fc, x).backward()
    eig_loss(torch, t).backward()
    np.testing.assert_allclose(to_np(x.grad), t.grad.numpy(), rtol=1e-8, atol=1e-10)


def test_eig_gradcheck():
    x = fb_tensor(distinct((4, 4), 2), requires_grad=True)
    assert ag.gradcheck(lambda t: fc.view_as_real(LA.eigvals(t)), [x])
    assert ag.gradcheck(lambda t: fc.abs(LA.eig(t).eigenvectors), [x])
    re = fb_tensor(distinct((3, 3), 3), requires_grad=True)
    im = fb_tensor(0.2 * np.random.default_rng(4).standard_normal((3, 3)), requires_grad=True)
    assert ag.gradcheck(lambda r, i: fc.view_as_real(LA.eigvals(fc.complex(r, i))), [re, im])
    assert ag.gradcheck(lambda r, i: fc.abs(LA.eig(fc.complex(r, i))[1]), [re, im])


def test_eig_phase_dependent_loss_raises():
    x = fb_tensor(distinct((3, 3), 5), requires_grad=True)
    V = LA.eig(x).eigenvectors
    with pytest.raises(fc.FlambeauError, match="linalg_eig_backward: The eigenvectors in the complex case"):
        fc.view_as_real(V).sum().backward()


@pytest.mark.parametrize("shape", [(0, 5, 5), (2, 0, 0)])
@pytest.mark.parametrize(
    "fn",
    [
        lambda lib, x: lib.linalg.eigvals(x).abs(),
        lambda lib, x: lib.linalg.eig(x).eigenvalues.abs(),
        lambda lib, x: lib.linalg.eigvalsh(x),
        lambda lib, x: lib.linalg.eigh(x, UPLO="U").eigenvalues,
    ],
)
def test_eig_of_no_matrices_has_an_empty_gradient(shape, fn):
    # nothing to differentiate: torch's gradient is empty, not an error about the eigenvectors
    x = fb_tensor(np.zeros(shape), requires_grad=True)
    t = torch.zeros(shape, dtype=torch.float64, requires_grad=True)
    fn(fc, x).sum().backward()
    fn(torch, t).sum().backward()
    assert tuple(x.grad.shape) == tuple(t.grad.shape) == shape
    # (view_as_real of an empty result: torch 2.13's own backward fails there, flambeau's gives the zeros)
    y = fb_tensor(np.zeros(shape), requires_grad=True)
    fc.view_as_real(fc.linalg.eigvals(y)).sum().backward()
    assert tuple(y.grad.shape) == shape


def test_eigvals_without_eigenvectors_still_refuses_a_gradient():
    # the error stays for matrices: their eigenvalues' derivative needs the eigenvectors
    x = fb_tensor(distinct((3, 3), 6), requires_grad=True)
    L, _ = fc._C._linalg_eig(x, False)
    with pytest.raises(fc.FlambeauError, match="needs the eigenvectors"):
        fc.view_as_real(L).sum().backward()


LSTSQ_SHAPES = [((6, 3), (6, 2)), ((4, 4), (4,)), ((2, 5, 3), (2, 5, 1)), ((3, 5), (3, 2))]


@pytest.mark.parametrize("shape_a,shape_b", LSTSQ_SHAPES)
def test_lstsq_grad(shape_a, shape_b):
    rng = np.random.default_rng(6)
    a, b = rng.standard_normal(shape_a), rng.standard_normal(shape_b)
    xa, xb = fb_tensor(a, requires_grad=True), fb_tensor(b, requires_grad=True)
    ta, tb = torch.tensor(a, requires_grad=True), torch.tensor(b, requires_grad=True)
    X, tX = LA.lstsq(xa, xb).solution, torch.linalg.lstsq(ta, tb, driver="gelsd").solution
    np.testing.assert_allclose(to_np(X), tX.detach().numpy(), rtol=1e-9, atol=1e-10)
    w = rng.standard_normal(tuple(tX.shape))
    (X * fb_tensor(w)).sum().backward()
    (tX * torch.tensor(w)).sum().backward()
    np.testing.assert_allclose(to_np(xa.grad), ta.grad.numpy(), rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(to_np(xb.grad), tb.grad.numpy(), rtol=1e-8, atol=1e-10)
    assert ag.gradcheck(lambda p, q: LA.lstsq(p, q).solution, [fb_tensor(a, True), fb_tensor(b, True)])


def test_lstsq_residuals_grad():
    rng = np.random.default_rng(8)
    a, b = rng.standard_normal((7, 3)), rng.standard_normal((7, 2))
    xa, xb = fb_tensor(a, requires_grad=True), fb_tensor(b, requires_grad=True)
    ta, tb = torch.tensor(a, requires_grad=True), torch.tensor(b, requires_grad=True)
    r, tr = LA.lstsq(xa, xb, driver="gelsd").residuals, torch.linalg.lstsq(ta, tb, driver="gelsd").residuals
    np.testing.assert_allclose(to_np(r), tr.detach().numpy(), rtol=1e-9)
    (r * fb_tensor([1.0, -2.0])).sum().backward()
    (tr * torch.tensor([1.0, -2.0], dtype=torch.float64)).sum().backward()
    np.testing.assert_allclose(to_np(xa.grad), ta.grad.numpy(), rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(to_np(xb.grad), tb.grad.numpy(), rtol=1e-8, atol=1e-10)


def test_lstsq_grad_rank_deficient_matches_torch():
    # Rank-deficient A: PyTorch differentiates the pinv-based solution (pinv_backward); so does flambeau
    # (it used to raise). More cases in test_linalg_complex_grad.py.
    a = np.ones((4, 2))
    b = np.arange(4.0).reshape(4, 1)
    x, xb = fb_tensor(a, requires_grad=True), fb_tensor(b, requires_grad=True)
    t, tb = torch.tensor(a, requires_grad=True), torch.tensor(b, requires_grad=True)
    X, tX = LA.lstsq(x, xb).solution, torch.linalg.lstsq(t, tb, driver="gelsd").solution
    np.testing.assert_allclose(to_np(X), tX.detach().numpy(), rtol=1e-9, atol=1e-12)
    X.sum().backward()
    tX.sum().backward()
    np.testing.assert_allclose(to_np(x.grad), t.grad.numpy(), rtol=1e-8, atol=1e-10)
    np.testing.assert_allclose(to_np(xb.grad), tb.grad.numpy(), rtol=1e-8, atol=1e-10)


ZERO_GRAD_CASES = [
    ("vector_norm", lambda L, x: L.linalg.vector_norm(x)),
    ("vector_norm dim", lambda L, x: L.linalg.vector_norm(x, dim=1).sum()),
    ("vector_norm 3", lambda L, x: L.linalg.vector_norm(x, ord=3)),
    ("vector_norm 0.5", lambda L, x: L.linalg.vector_norm(x, ord=0.5)),
    ("vector_norm 1", lambda L, x: L.linalg.vector_norm(x, ord=1)),
    ("vector_norm inf", lambda L, x: L.linalg.vector_norm(x, ord=math.inf)),
    ("linalg.norm", lambda L, x: L.linalg.norm(x)),
    ("matrix_norm fro", lambda L, x: L.linalg.matrix_norm(x)),
    ("norm", lambda L, x: L.norm(x)),
    ("norm p=3 dim", lambda L, x: L.norm(x, 3, 1).sum()),
    ("norm p=0.5", lambda L, x: L.norm(x, 0.5)),
    ("std", lambda L, x: L.std(x)),
    ("std dim", lambda L, x: L.std(x, 1).sum()),
    ("std_mean", lambda L, x: L.std_mean(x)[0]),
]


@pytest.mark.parametrize("name,fn", ZERO_GRAD_CASES, ids=[c[0] for c in ZERO_GRAD_CASES])
@pytest.mark.parametrize("fill", [0.0, 1.5])
def test_norm_and_std_gradients_at_zero_match_torch(name, fn, fill):
    a = np.full((2, 3), fill)
    if fill:
        a[1] = np.random.default_rng(1).standard_normal(3)  # one constant row, one that is not
    x = fb_tensor(a, requires_grad=True)
    t = torch.tensor(a, requires_grad=True)
    y, ty = fn(fc, x), fn(torch, t)
    np.testing.assert_allclose(to_np(y), ty.detach().numpy(), rtol=1e-12)
    y.backward()
    ty.backward()
    g = to_np(x.grad)
    assert not np.isnan(g).any(), f"{name}: NaN gradient {g}"
    np.testing.assert_allclose(g, t.grad.numpy(), rtol=1e-10, atol=1e-12)
