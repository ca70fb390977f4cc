"""``svd_lowrank`` and ``pca_lowrank``: randomized low-rank SVD and PCA (Halko, Martinsson and Tropp, 2009).

A random Gaussian sketch ``A @ R`` (``R`` of ``q`` columns) spans, after ``niter`` power iterations that
alternate ``A^H`` and ``A`` with a QR re-orthonormalization at every step (which keeps the small singular
directions from being lost to rounding), nearly the range of ``A``'s top ``q`` singular vectors; the exact
SVD of the small ``q x n`` projection then gives them. The result is random (PyTorch's too): compare
reconstructions and singular values, not elements. Gradients flow through ``matmul``, ``qr`` and ``svd``.
"""

from __future__ import annotations

from typing import Any

from flambeau_core import _C
from flambeau_core._composing import check_int, check_tensor


def _mH(x: _C.Tensor) -> _C.Tensor:  # noqa: N802 (PyTorch's name for the conjugate transpose)
    return x.transpose(-2, -1).conj() if x.is_complex() else x.transpose(-2, -1)


def _range_basis(a: _C.Tensor, q: int, niter: int, m: _C.Tensor | None) -> _C.Tensor:
    """Orthonormal columns (``(..., rows, q)``) spanning nearly the top-q left singular space of a - m."""
    from flambeau_core import linalg  # imported after this module by flambeau_core's __init__

    def times(x: _C.Tensor) -> _C.Tensor:
        return a @ x if m is None else a @ x - m @ x

    def adjoint_times(x: _C.Tensor) -> _C.Tensor:
        return _mH(a) @ x if m is None else _mH(a) @ x - _mH(m) @ x

    dtype = a.dtype if a.is_floating_point() or a.is_complex() else _C.get_default_dtype()
    sketch = _C.randn(a.shape[-1], q, dtype=dtype, device=a.device)
    basis = linalg.qr(times(sketch)).Q
    for _ in range(niter):
        basis = linalg.qr(adjoint_times(basis)).Q
        basis = linalg.qr(times(basis)).Q
    return basis


def _low_rank_svd(a: _C.Tensor, q: int, niter: int, m: _C.Tensor | None) -> tuple[_C.Tensor, _C.Tensor, _C.Tensor]:
    from flambeau_core import linalg

    rows, cols = a.shape[-2], a.shape[-1]
    if m is not None:
        m = m.expand(a.shape)
    wide = rows < cols
    if wide:  # sketch the smaller side: work on A^H, swap U and V at the end
        a = _mH(a)
        m = None if m is None else _mH(m)
    basis = _range_basis(a, q, niter, m)
    small = _mH(basis) @ a if m is None else _mH(basis) @ a - _mH(basis) @ m
    u, s, vh = linalg.svd(small, full_matrices=False)
    u, v = basis @ u, _mH(vh)
    return (v, s, u) if wide else (u, s, v)


def _check(name: str, a: Any, q: Any, niter: Any) -> None:
    check_tensor(name, a, "A")
    if a.dim() < 2:
        raise _C.FlambeauError(f"[{name}] expected A to have at least 2 dims, got shape {tuple(a.shape)}")
    if not (a.is_floating_point() or a.is_complex()):
        raise TypeError(f"[{name}] expected a floating point or complex A, got {a.dtype}")
    if q is not None:
        check_int(name, q, "q")
    check_int(name, niter, "niter")
    if niter < 0:
        raise _C.FlambeauError(f"[{name}] niter(={niter}) must be non-negative integer")


def svd_lowrank(
    A: _C.Tensor,  # noqa: N803 (PyTorch's argument name)
    q: int | None = 6,
    niter: int | None = 2,
    M: _C.Tensor | None = None,  # noqa: N803
) -> tuple[_C.Tensor, _C.Tensor, _C.Tensor]:
    """svd_lowrank(A, q=6, niter=2, M=None) -> (Tensor, Tensor, Tensor)

    An approximate rank-``q`` singular value decomposition of ``A - M`` (``M`` broadcast to ``A``'s shape;
    ``A`` alone if None), randomized: returns ``U`` (``(..., m, q)``), ``S`` (``(..., q)``, descending) and
    ``V`` (``(..., n, q)``) with ``A - M ≈ U @ diag(S) @ V^H``. ``niter`` power iterations (default 2)
    sharpen it when the singular values decay slowly. Choose ``q`` a little above the rank wanted; for
    ``q`` at least the rank of ``A`` the factorization is exact up to rounding. Uses the global generator.

    Example:
        >>> import flambeau_core as fc
        >>> _ = fc.manual_seed(0)
        >>> A = fc.randn(20, 3, dtype=fc.float64) @ fc.randn(3, 10, dtype=fc.float64)  # rank 3
        >>> U, S, V = fc.svd_lowrank(A, q=4)
        >>> bool(fc.allclose(U @ fc.diag(S) @ V.T, A, atol=1e-10))
        True
    """
    _check("svd_lowrank", A, q, 2 if niter is None else niter)
    if M is not None:
        check_tensor("svd_lowrank", M, "M")
    return _low_rank_svd(A, 6 if q is None else q, 2 if niter is None else niter, M)


def pca_lowrank(
    A: _C.Tensor,  # noqa: N803
    q: int | None = None,
    center: bool = True,
    niter: int = 2,
) -> tuple[_C.Tensor, _C.Tensor, _C.Tensor]:
    """pca_lowrank(A, q=None, center=True, niter=2) -> (Tensor, Tensor, Tensor)

    Principal component analysis of the rows of ``A`` (``(..., m, n)``: ``m`` samples of ``n`` features) by
    :func:`svd_lowrank` of ``A`` minus its column means (``center=True``): ``(U, S, V)``, the principal
    directions in the columns of ``V``, ``S**2 / (m - 1)`` the variances along them. ``q`` (default
    ``min(6, m, n)``) is at most ``min(m, n)``. Randomized, with the global generator.

    Example:
        >>> import flambeau_core as fc
        >>> _ = fc.manual_seed(0)
        >>> U, S, V = fc.pca_lowrank(fc.randn(100, 5, dtype=fc.float64), q=2)
        >>> U.shape, S.shape, V.shape
        (flambeau.Size([100, 2]), flambeau.Size([2]), flambeau.Size([5, 2]))
    """
    _check("pca_lowrank", A, q, niter)
    m, n = A.shape[-2], A.shape[-1]
    if q is None:
        q = min(6, m, n)
    elif not 0 <= q <= min(m, n):
        raise _C.FlambeauError(
            f"[pca_lowrank] q(={q}) must be non-negative integer and not greater than min(m, n)={min(m, n)}"
        )
    if center:
        A = A - A.mean(dim=-2, keepdim=True)  # noqa: N806
    return _low_rank_svd(A, q, niter, None)


def install() -> None:
    import flambeau_core

    flambeau_core.svd_lowrank = svd_lowrank
    flambeau_core.pca_lowrank = pca_lowrank
