"""svd_lowrank and pca_lowrank (flambeau_core/_lowrank.py) against PyTorch 2.13. Both are randomized, so
they are compared by what does not depend on the sketch: exact reconstruction of low-rank matrices,
orthonormal factors, and singular values close to torch's (and to the exact SVD's) on decaying spectra."""

from __future__ import annotations

import flambeau_core as fc
import numpy as np
import pytest
import torch
from helpers import to_numpy

RNG = np.random.default_rng(41)


def low_rank(shape, rank, dtype=np.float64):
    *batch, m, n = shape
    a = RNG.standard_normal((*batch, m, rank)) @ RNG.standard_normal((*batch, rank, n))
    return np.asarray(a.astype(dtype))


def mh(x):
    return np.swapaxes(x, -1, -2).conj()


@pytest.mark.parametrize("shape", [(30, 8), (8, 30), (3, 12, 10), (2, 2, 9, 15)])
@pytest.mark.parametrize("niter", [0, 2])
def test_svd_lowrank_reconstructs_low_rank_matrices(shape, niter):
    fc.manual_seed(1)
    a = low_rank(shape, 3)
    u, s, v = (to_numpy(t) for t in fc.svd_lowrank(fc.tensor(a), q=5, niter=niter))
    m, n = shape[-2:]
    assert u.shape == (*shape[:-2], m, 5) and s.shape == (*shape[:-2], 5) and v.shape == (*shape[:-2], n, 5)
    np.testing.assert_allclose((u * s[..., None, :]) @ mh(v), a, atol=1e-10)
    np.testing.assert_allclose(mh(u) @ u, np.broadcast_to(np.eye(5), (*shape[:-2], 5, 5)), atol=1e-10)
    np.testing.assert_allclose(mh(v) @ v, np.broadcast_to(np.eye(5), (*shape[:-2], 5, 5)), atol=1e-10)
    tu, ts, tv = torch.svd_lowrank(torch.from_numpy(a), q=5, niter=niter)
    np.testing.assert_allclose(s[..., :3], ts.numpy()[..., :3], rtol=1e-10)  # the true singular values, both


@pytest.mark.parametrize("shape", [(40, 25), (25, 40)])
def test_svd_lowrank_top_singular_values_match_torch(shape):
    # A fast-decaying spectrum: with 4 power iterations both find the top values to many digits.
    left, _ = np.linalg.qr(RNG.standard_normal((shape[0], min(shape))))
    right, _ = np.linalg.qr(RNG.standard_normal((shape[1], min(shape))))
    values = 0.5 ** np.arange(min(shape))
    a = np.asarray((left * values) @ right.T)
    fc.manual_seed(2)
    torch.manual_seed(2)
    _, s, _ = fc.svd_lowrank(fc.tensor(a), q=8, niter=4)
    _, ts, _ = torch.svd_lowrank(torch.from_numpy(a), q=8, niter=4)
    np.testing.assert_allclose(to_numpy(s)[:4], ts.numpy()[:4], rtol=1e-8)
    np.testing.assert_allclose(to_numpy(s)[:4], values[:4], rtol=1e-8)


def test_svd_lowrank_with_m_decomposes_the_difference():
    fc.manual_seed(3)
    a, m = low_rank((20, 12), 2), RNG.standard_normal((1, 12))
    u, s, v = (to_numpy(t) for t in fc.svd_lowrank(fc.tensor(a + m), q=4, M=fc.tensor(m)))
    np.testing.assert_allclose((u * s) @ v.T, a, atol=1e-10)


def test_svd_lowrank_float32():
    fc.manual_seed(4)
    a = low_rank((16, 10), 2, np.float32)
    u, s, v = fc.svd_lowrank(fc.tensor(a), q=3)
    assert u.dtype == s.dtype == v.dtype == fc.float32
    np.testing.assert_allclose((to_numpy(u) * to_numpy(s)) @ to_numpy(v).T, a, atol=1e-4)


@pytest.mark.parametrize("center", [True, False])
def test_pca_lowrank_matches_exact_pca(center):
    fc.manual_seed(5)
    a = low_rank((50, 6), 3) + (5.0 if center else 0.0)
    u, s, v = (to_numpy(t) for t in fc.pca_lowrank(fc.tensor(a), q=4, center=center))
    x = a - a.mean(0) if center else a
    exact = np.linalg.svd(x, compute_uv=False)
    np.testing.assert_allclose(s[:3], exact[:3], rtol=1e-10)
    np.testing.assert_allclose((u * s) @ v.T, x, atol=1e-9)
    _, ts, _ = torch.pca_lowrank(torch.from_numpy(a), q=4, center=center)
    np.testing.assert_allclose(s[:3], ts.numpy()[:3], rtol=1e-10)
    assert fc.pca_lowrank(fc.tensor(a))[1].shape == (6,)  # q = min(6, m, n)


def test_lowrank_errors():
    a = fc.ones(5, 4)
    with pytest.raises(fc.FlambeauError, match=r"\[pca_lowrank\] q\(=5\) must be non-negative integer and not greater"):
        fc.pca_lowrank(a, q=5)
    with pytest.raises(fc.FlambeauError, match=r"\[pca_lowrank\] niter\(=-1\) must be non-negative"):
        fc.pca_lowrank(a, niter=-1)
    with pytest.raises(fc.FlambeauError, match=r"\[svd_lowrank\] expected A to have at least 2 dims"):
        fc.svd_lowrank(fc.ones(5))
    with pytest.raises(TypeError, match=r"\[svd_lowrank\] expected a floating point or complex A"):
        fc.svd_lowrank(fc.ones(5, 4, dtype=fc.int64))
    with pytest.raises(TypeError, match=r"\[svd_lowrank\] expected an int 'q'"):
        fc.svd_lowrank(a, q=2.5)
    with pytest.raises(TypeError, match=r"\[svd_lowrank\] expected a Tensor as 'A'"):
        fc.svd_lowrank([[1.0]])
