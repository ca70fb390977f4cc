"""The factorizations of flambeau.linalg and what is read off them.

``linalg.slogdet``, ``det``, ``cholesky``, ``qr``, ``svd``, ``svdvals``, ``eigh``, ``eigvalsh``, ``eig``,
``eigvals``, ``pinv``, ``matrix_rank`` and ``householder_product``, and ``logdet``, over core's LAPACK
primitives (``_linalg_slogdet``, ``_linalg_cholesky``, ``_linalg_qr``, ``_linalg_svd``, ``_linalg_eigh``,
``_linalg_eig``, ``_linalg_pinv``), which carry their own derivatives; with PyTorch's named tuples and the
top-level ``slogdet``, ``det``, ``cholesky``, ``qr``, ``svd`` (V, not Vh) and ``pinverse``. Re-exported by
flambeau_core.linalg (and at the top level where torch has them).
"""

from __future__ import annotations

import collections
import math
import numbers
from typing import Any

from flambeau_core import _C
from flambeau_core._C import FlambeauError, Tensor
from flambeau_core._linalg_common import (
    _COMPLEX,
    _FLOATS,
    _check_float,
    _check_matrix,
    _check_tensor,
    _copy_out,
    _copy_outs,
    _eps,
    _kernel_writes,
    _mT,
    _needs_grad,
    _out_tuple,
    _shape,
)

# The named tuples PyTorch returns (torch.return_types.*), with its field names.
SlogdetResult = collections.namedtuple("linalg_slogdet", ["sign", "logabsdet"])


QRResult = collections.namedtuple("linalg_qr", ["Q", "R"])


SVDResult = collections.namedtuple("linalg_svd", ["U", "S", "Vh"])


EighResult = collections.namedtuple("linalg_eigh", ["eigenvalues", "eigenvectors"])


EigResult = collections.namedtuple("linalg_eig", ["eigenvalues", "eigenvectors"])


SvdResultV = collections.namedtuple("svd", ["U", "S", "V"])


def slogdet(A: Tensor, *, out: Any = None) -> SlogdetResult:
    """Sign and log|det| of square matrices (torch.linalg.slogdet).

    Example:
        >>> import flambeau as fb
        >>> sign, logabsdet = fb.linalg.slogdet(fb.tensor([[0.0, 2.0], [3.0, 0.0]]))
        >>> sign, logabsdet.round(decimals=4)
        (tensor(-1.), tensor(1.7918))
    """
    _check_matrix(A, "linalg.slogdet", square=True, complex_ok=True)
    outs = _out_tuple(out, 2)
    if outs is not None and _kernel_writes(_C._linalg_slogdet, (A,), outs[::-1]):
        logabs, sign = _C._linalg_slogdet(A, out=outs[::-1])  # the out kernel writes them
        return SlogdetResult(sign, logabs)
    logabs, sign = _C._linalg_slogdet(A)
    if out is not None:
        return SlogdetResult(*_copy_outs((sign, logabs), out, "linalg.slogdet"))
    return SlogdetResult(sign, logabs)


def det(A: Tensor, *, out: Tensor | None = None) -> Tensor:
    """Determinant of square matrices (torch.linalg.det), from the LU factorization.

    Example:
        >>> import flambeau as fb
        >>> A = fb.tensor([[4.0, 2.0], [2.0, 3.0]])
        >>> fb.linalg.det(A)
        tensor(8.)
        >>> fb.linalg.det(fb.stack([A, 2 * A]))  # a batch
        tensor([ 8., 32.])
    """
    _check_matrix(A, "linalg.det", square=True, complex_ok=True)
    logabs, sign = _C._linalg_slogdet(A)
    return _copy_out(sign * _C.exp(logabs), out, "linalg.det")


def logdet(A: Tensor) -> Tensor:
    """log(det(A)): NaN for a negative determinant, -inf for zero (torch.logdet).

    Complex A: the complex logarithm log|det| + i angle(det) (-inf where det is 0), as PyTorch's.

    Example:
        >>> import flambeau as fb
        >>> A = fb.tensor([[2.0, 0.0], [0.0, 4.0]])
        >>> round(fb.logdet(A).exp().item(), 4), fb.logdet(-fb.eye(3)).isnan().item()
        (8.0, True)
    """
    _check_matrix(A, "logdet", square=True, complex_ok=True)
    logabs, sign = _C._linalg_slogdet(A)
    if A.dtype in _COMPLEX:
        return _C.complex(logabs, _C.angle(sign))
    nan = _C.full([], math.nan, dtype=A.dtype)
    return _C.where(sign < 0, nan, logabs)


def cholesky(A: Tensor, *, upper: bool = False, out: Tensor | None = None) -> Tensor:
    """Cholesky factor L (A = L L^T) or U (upper=True, A = U^T U) of symmetric positive-definite matrices.

    Example:
        >>> import flambeau as fb
        >>> A = fb.tensor([[4.0, 2.0], [2.0, 3.0]])
        >>> L = fb.linalg.cholesky(A)
        >>> L.round(decimals=4)
        tensor([[2.0000, 0.0000],
                [1.0000, 1.4142]])
        >>> fb.allclose(L @ L.mT, A)
        True
    """
    _check_matrix(A, "linalg.cholesky", square=True, complex_ok=True)
    if out is not None and _kernel_writes(_C._linalg_cholesky, (A, upper), (out,)):
        return _C._linalg_cholesky(A, upper, out=out)  # written by the out kernel (Note [Structured kernels])
    return _copy_out(_C._linalg_cholesky(A, upper), out, "linalg.cholesky")


def qr(A: Tensor, mode: str = "reduced", *, out: Any = None) -> QRResult:
    """QR factorization (torch.linalg.qr): mode 'reduced' (default), 'complete' or 'r' (Q empty).

    Complex A: unitary Q and R with a real diagonal (LAPACK geqrf/ungqr), as PyTorch's.

    Example:
        >>> import flambeau as fb
        >>> A = fb.tensor([[3.0, 1.0], [4.0, 2.0]])
        >>> Q, R = fb.linalg.qr(A)
        >>> R.abs().round(decimals=4)
        tensor([[5.0000, 2.2000],
                [0.0000, 0.4000]])
        >>> fb.allclose(Q @ R, A), fb.allclose(Q.mT @ Q, fb.eye(2), atol=1e-6)
        (True, True)
    """
    _check_matrix(A, "linalg.qr", complex_ok=True)
    if mode not in ("reduced", "complete", "r"):
        raise FlambeauError(
            f"linalg.qr: qr received unrecognized mode '{mode}' "
            "but expected one of 'reduced' (default), 'r', or 'complete'"
        )
    outs = _out_tuple(out, 2)
    if outs is not None and _kernel_writes(_C._linalg_qr, (A, mode), outs):
        return QRResult(*_C._linalg_qr(A, mode, out=outs))  # the out kernel writes them
    Q, R = _C._linalg_qr(A, mode)
    if out is not None:
        return QRResult(*_copy_outs((Q, R), out, "linalg.qr"))
    return QRResult(Q, R)


def svd(A: Tensor, full_matrices: bool = True, *, driver: str | None = None, out: Any = None) -> SVDResult:
    """A = U diag(S) Vh (torch.linalg.svd), S descending; LAPACK's gesdd. Complex A: S real, U and Vh complex.

    Example:
        >>> import flambeau as fb
        >>> A = fb.tensor([[3.0, 0.0], [0.0, -2.0], [0.0, 0.0]])
        >>> U, S, Vh = fb.linalg.svd(A, full_matrices=False)
        >>> U.shape, S, Vh.shape
        (flambeau.Size([3, 2]), tensor([3., 2.]), flambeau.Size([2, 2]))
        >>> fb.allclose(U @ fb.diag(S) @ Vh, A)
        True
    """
    _check_matrix(A, "linalg.svd", complex_ok=True)
    if driver is not None:
        raise FlambeauError("linalg.svd: keyword argument `driver=` is only supported on CUDA inputs.")
    outs = _out_tuple(out, 3)
    if outs is not None and _kernel_writes(_C._linalg_svd, (A, full_matrices, True), outs):
        return SVDResult(*_C._linalg_svd(A, full_matrices, True, out=outs))  # the out kernel writes them
    U, S, Vh = _C._linalg_svd(A, full_matrices, True)
    if out is not None:
        return SVDResult(*_copy_outs((U, S, Vh), out, "linalg.svd"))
    return SVDResult(U, S, Vh)


def svdvals(A: Tensor, *, driver: str | None = None, out: Tensor | None = None) -> Tensor:
    """Singular values, descending (torch.linalg.svdvals); real for complex A.

    Example:
        >>> import flambeau as fb
        >>> fb.linalg.svdvals(fb.tensor([[3.0, 0.0], [0.0, -2.0], [0.0, 0.0]]))
        tensor([3., 2.])
    """
    _check_matrix(A, "linalg.svdvals", complex_ok=True)
    if driver is not None:
        raise FlambeauError("linalg.svdvals: keyword argument `driver=` is only supported on CUDA inputs.")
    # The derivative needs the singular vectors: compute them only then.
    S = _C._linalg_svd(A, False, _needs_grad(A))[1]
    return _copy_out(S, out, "linalg.svdvals")


def eigh(A: Tensor, UPLO: str = "L", *, out: Any = None) -> EighResult:
    """Eigenvalues (ascending) and eigenvectors of symmetric matrices from their UPLO triangle.

    Example:
        >>> import flambeau as fb
        >>> A = fb.tensor([[4.0, 2.0], [2.0, 3.0]])
        >>> L, Q = fb.linalg.eigh(A)
        >>> L.round(decimals=4)
        tensor([1.4384, 5.5616])
        >>> fb.allclose(Q @ fb.diag(L) @ Q.mT, A, atol=1e-6)
        True
    """
    _check_matrix(A, "linalg.eigh", square=True, complex_ok=True)
    if UPLO not in ("L", "U", "l", "u"):
        raise FlambeauError(f"linalg.eigh: Expected UPLO argument to be 'L' or 'U', but got {UPLO}")
    outs = _out_tuple(out, 2)
    if outs is not None and _kernel_writes(_C._linalg_eigh, (A, UPLO, True), outs):
        return EighResult(*_C._linalg_eigh(A, UPLO, True, out=outs))  # the out kernel writes them
    L, V = _C._linalg_eigh(A, UPLO, True)
    if out is not None:
        return EighResult(*_copy_outs((L, V), out, "linalg.eigh"))
    return EighResult(L, V)


def eigvalsh(A: Tensor, UPLO: str = "L", *, out: Tensor | None = None) -> Tensor:
    """Eigenvalues (ascending) of symmetric matrices (torch.linalg.eigvalsh).

    Example:
        >>> import flambeau as fb
        >>> A = fb.tensor([[4.0, 2.0], [2.0, 3.0]])
        >>> fb.linalg.eigvalsh(A).round(decimals=4)
        tensor([1.4384, 5.5616])
    """
    _check_matrix(A, "linalg.eigvalsh", square=True, complex_ok=True)
    if UPLO not in ("L", "U", "l", "u"):
        raise FlambeauError(f"linalg.eigvalsh: Expected UPLO argument to be 'L' or 'U', but got {UPLO}")
    return _copy_out(_C._linalg_eigh(A, UPLO, _needs_grad(A))[0], out, "linalg.eigvalsh")


def _check_eig_input(A: Any, op: str) -> None:
    _check_tensor(A, op)
    if A.dtype not in (*_FLOATS, _C.complex64, _C.complex128):
        raise TypeError(
            f"{op}: expected a float32, float64, complex64 or complex128 tensor for A, "
            f"got {A.dtype} (shape {_shape(A)})"
        )
    if A.dim() < 2:
        raise FlambeauError(f"{op}: A must have at least 2 dimensions, got shape {_shape(A)}")
    if A.shape[-1] != A.shape[-2]:
        raise FlambeauError(
            f"{op}: A must be batches of square matrices, but they are {A.shape[-2]} by {A.shape[-1]} matrices "
            f"(shape {_shape(A)})"
        )


def eig(A: Tensor, *, out: Any = None) -> EigResult:
    """Eigenvalues and right eigenvectors of square matrices (torch.linalg.eig, LAPACK geev).

    Both are complex (float32 -> complex64, float64 -> complex128); each eigenvector has unit norm and its
    largest component real, as LAPACK returns them. Differentiable where the eigenvalues are distinct, for
    losses that do not depend on the eigenvectors' phases (else the backward raises, as PyTorch's).

    Example:
        >>> import flambeau as fb
        >>> A = fb.tensor([[2.0, 0.0], [0.0, 3.0]])
        >>> L, V = fb.linalg.eig(A)
        >>> L
        tensor([2.+0.j, 3.+0.j])
        >>> fb.allclose(A.to(fb.complex64) @ V, V * L)
        True
    """
    _check_eig_input(A, "linalg.eig")
    outs = _out_tuple(out, 2)
    if outs is not None and _kernel_writes(_C._linalg_eig, (A, True), outs):
        return EigResult(*_C._linalg_eig(A, True, out=outs))  # the out kernel writes them
    L, V = _C._linalg_eig(A, True)
    if out is not None:
        return EigResult(*_copy_outs((L, V), out, "linalg.eig"))
    return EigResult(L, V)


def eigvals(A: Tensor, *, out: Tensor | None = None) -> Tensor:
    """Eigenvalues (complex) of square matrices (torch.linalg.eigvals); differentiable, as eig.

    Example:
        >>> import flambeau as fb
        >>> fb.linalg.eigvals(fb.tensor([[0.0, -1.0], [1.0, 0.0]]))  # a rotation: +-i
        tensor([0.+1.j, 0.-1.j])
    """
    _check_eig_input(A, "linalg.eigvals")
    return _copy_out(_C._linalg_eig(A, _needs_grad(A))[0], out, "linalg.eigvals")


def _tol_tensor(t: Any, op: str, name: str) -> Tensor:
    """atol or rtol as a tensor: a real tensor as it is, a Python number as a float64 0-dim one (PyTorch
    keeps the tolerances in double, so a float32 input's bound may exceed float32's range)."""
    if isinstance(t, Tensor):
        if t.dtype in _COMPLEX:
            raise FlambeauError(f"{op}: {name} tensor of complex type is not supported. Got {t.dtype}")
        return t
    if not isinstance(t, numbers.Real):  # NumPy's real scalars are numbers.Real too
        raise TypeError(f"{op}: {name} must be a real number or a real tensor, got {type(t).__name__}")
    return _C.full([], float(t), dtype=_C.float64)


def _atol_rtol(A: Tensor, atol: Any, rtol: Any, op: str) -> tuple[Tensor, Tensor]:
    """PyTorch's get_atol_rtol: atol 0 when not given; rtol, when not given, eps * max(m, n) where atol is
    not positive (element by element for a tensor atol) and 0 where it is."""
    at = _C.zeros([], dtype=_C.float64) if atol is None else _tol_tensor(atol, op, "atol")
    if rtol is not None:
        return at, _tol_tensor(rtol, op, "rtol")
    default = _C.full([], _eps(A.dtype) * max(A.shape[-2], A.shape[-1]), dtype=_C.float64)
    if atol is None:
        return at, default
    return at, _C.where(at > 0, _C.zeros([], dtype=_C.float64), default)


def pinv(
    A: Tensor, *, atol: Any = None, rtol: Any = None, hermitian: bool = False, out: Tensor | None = None
) -> Tensor:
    """Moore-Penrose pseudo-inverse by SVD (torch.linalg.pinv), float or complex.

    Singular values <= max(atol, rtol * s_max) are dropped; hermitian=True uses eigh instead. Differentiable
    with PyTorch's pinv_backward, also for rank-deficient A.

    Example:
        >>> import flambeau as fb
        >>> A = fb.tensor([[1.0, 0.0], [0.0, 2.0], [0.0, 0.0]])
        >>> fb.linalg.pinv(A)
        tensor([[1.0000, 0.0000, 0.0000],
                [0.0000, 0.5000, 0.0000]])
    """
    _check_matrix(A, "linalg.pinv", complex_ok=True)
    if hermitian and A.shape[-1] != A.shape[-2]:
        raise FlambeauError(
            f"linalg.pinv: hermitian=True needs batches of square matrices, but they are "
            f"{A.shape[-2]} by {A.shape[-1]} matrices (shape {_shape(A)})"
        )
    at, rt = _atol_rtol(A, atol, rtol, "linalg.pinv")
    if out is not None and _kernel_writes(_C._linalg_pinv, (A, at, rt, hermitian), (out,)):
        return _C._linalg_pinv(A, at, rt, hermitian, out=out)  # written by the out kernel
    return _copy_out(_C._linalg_pinv(A, at, rt, hermitian), out, "linalg.pinv", exact=False)


def matrix_rank(
    A: Tensor, *, atol: Any = None, rtol: Any = None, hermitian: bool = False, out: Tensor | None = None
) -> Tensor:
    """Number of singular values above max(atol, rtol * s_max), int64 (torch.linalg.matrix_rank).

    atol and rtol (numbers, or real tensors broadcast against the batch dims) as PyTorch's; an empty input
    has rank 0 for each matrix of its batch.

    Example:
        >>> import flambeau as fb
        >>> fb.linalg.matrix_rank(fb.tensor([[1.0, 2.0], [2.0, 4.0]]))
        tensor(1)
        >>> fb.linalg.matrix_rank(fb.eye(3))
        tensor(3)
    """
    op = "linalg.matrix_rank"
    _check_matrix(A, op, complex_ok=True)
    at, rt = _atol_rtol(A, atol, rtol, op)
    if A.numel() == 0:
        return _copy_out(_C.zeros(list(A.shape[:-2]), dtype=_C.int64), out, op, exact=False)
    if hermitian:
        S = _C._linalg_eigh(A, "L", False)[0].abs()
        smax = _C.amax(S, [-1], True)
    else:
        S = _C._linalg_svd(A, False, False)[1]
        smax = S.narrow(-1, 0, 1)  # descending
    tol = _C.maximum(at.unsqueeze(-1), rt.unsqueeze(-1) * smax)
    return _copy_out(_C.sum((S > tol).to(_C.int64), -1), out, op, exact=False)


def householder_product(A: Tensor, tau: Tensor, *, out: Tensor | None = None) -> Tensor:
    r"""The first n columns of the product H_1 ... H_k of Householder reflectors H_i = I - tau_i v_i v_i^H
    (torch.linalg.householder_product, LAPACK's orgqr/ungqr): v_i is column i of A (*, m, n) below the
    diagonal with a 1 on it; tau (*, k), k <= n <= m. Applies one reflector per step, each over the whole
    batch; float32/float64/complex, differentiable through the products.

    Example:
        >>> import flambeau_core as fc
        >>> A = fc.tensor([[1.0], [1.0]])
        >>> fc.linalg.householder_product(A, fc.tensor([1.0])).tolist()
        [[0.0], [-1.0]]
    """
    op = "linalg.householder_product"
    _check_float(A, op, "input", complex_ok=True)
    _check_float(tau, op, "tau", complex_ok=True)
    if A.dim() < 2:
        raise FlambeauError(f"{op}: input must have at least 2 dimensions (got shape {_shape(A)}).")
    m, n = A.shape[-2], A.shape[-1]
    if m < n:
        raise FlambeauError(f"{op}: input.shape[-2] must be greater than or equal to input.shape[-1]")
    if tau.dim() != A.dim() - 1:
        raise FlambeauError(
            f"{op}: Expected tau to have one dimension less than input, but got tau.ndim equal to "
            f"{tau.dim()} and input.ndim is equal to {A.dim()}"
        )
    k = tau.shape[-1]
    if n < k:
        raise FlambeauError(f"{op}: input.shape[-1] must be greater than or equal to tau.shape[-1]")
    if tuple(tau.shape[:-1]) != tuple(A.shape[:-2]):
        raise FlambeauError(
            f"{op}: Expected batch dimensions of tau to be equal to input.shape[:-2], but got {list(tau.shape[:-1])}"
        )
    if tau.dtype != A.dtype:
        raise TypeError(f"{op}: tau dtype {tau.dtype} does not match input dtype {A.dtype}")
    rows = _C.arange(m).unsqueeze(-1)
    Q = (rows == _C.arange(n)).to(A.dtype).expand(*A.shape).contiguous()
    V = _C.tril(A.narrow(-1, 0, k), -1) + (rows == _C.arange(k)).to(A.dtype)
    if k == 0 and _needs_grad(A, tau):
        # no reflector: Q is the identity, still an output of A and tau (zero gradient) as PyTorch's; the
        # empty product and sum add exact zeros whatever A holds
        Q = Q + A.narrow(-1, 0, 0) @ _C.zeros(*A.shape[:-2], 0, n, dtype=A.dtype)
        Q = Q + _C.sum(tau, [-1], True).unsqueeze(-1)
    for i in reversed(range(k)):  # Q = H_i Q, the last reflector first
        v = V.narrow(-1, i, 1)
        vh = _C.conj(_mT(v)) if A.dtype in _COMPLEX else _mT(v)
        Q = Q - tau.narrow(-1, i, 1).unsqueeze(-1) * (v @ (vh @ Q))
    return _copy_out(Q, out, op)


SlogdetTop = collections.namedtuple("slogdet", ["sign", "logabsdet"])


QRTop = collections.namedtuple("qr", ["Q", "R"])


def _top_slogdet(input: Tensor, *, out: Any = None) -> SlogdetTop:
    """torch.slogdet: (sign, logabsdet) of the determinant of square matrices (``det == sign * exp(logabsdet)``).

    Example:
        >>> import flambeau as fb
        >>> A = fb.tensor([[2.0, 0.0], [0.0, 4.0]])
        >>> s = fb.slogdet(A)
        >>> s.sign.item(), round(s.logabsdet.exp().item(), 4)
        (1.0, 8.0)
    """
    s = slogdet(input)
    if out is not None:
        return SlogdetTop(*_copy_outs((s.sign, s.logabsdet), out, "slogdet"))
    return SlogdetTop(s.sign, s.logabsdet)


def _top_det(input: Tensor) -> Tensor:
    """torch.det: the determinant of square matrices (batched over leading dims; as linalg.det).

    Example:
        >>> import flambeau as fb
        >>> A = fb.tensor([[2.0, 0.0], [0.0, 4.0]])
        >>> fb.det(A).item(), A.det().item()
        (8.0, 8.0)
    """
    return det(input)


def _top_cholesky(input: Tensor, upper: bool = False, *, out: Tensor | None = None) -> Tensor:
    """torch.cholesky: the Cholesky factor of Hermitian positive-definite matrices, lower (or upper if ``upper``).

    Example:
        >>> import flambeau as fb
        >>> fb.tensor([[4.0, 0.0], [0.0, 9.0]]).cholesky().tolist()
        [[2.0, 0.0], [0.0, 3.0]]
    """
    return cholesky(input, upper=upper, out=out)


def _top_qr(input: Tensor, some: bool = True, *, out: Any = None) -> QRTop:
    """torch.qr: (Q, R) with Q orthonormal and R upper triangular, reduced unless some=False.

    Example:
        >>> import flambeau as fb
        >>> Q, R = fb.ones(3, 2).qr()
        >>> Q.shape, R.shape, fb.allclose(Q @ R, fb.ones(3, 2), atol=1e-6)
        (flambeau.Size([3, 2]), flambeau.Size([2, 2]), True)
    """
    Q, R = qr(input, "reduced" if some else "complete")
    if out is not None:
        return QRTop(*_copy_outs((Q, R), out, "qr"))
    return QRTop(Q, R)


def _top_svd(input: Tensor, some: bool = True, compute_uv: bool = True, *, out: Any = None) -> SvdResultV:
    """torch.svd: (U, S, V) with V (not Vh); U and V are zeros when compute_uv=False.

    Example:
        >>> import flambeau as fb
        >>> A = fb.tensor([[2.0, 0.0], [0.0, 4.0]])
        >>> [round(s, 4) for s in fb.svd(A).S.tolist()]
        [4.0, 2.0]
    """
    r = _svd_v(input, some, compute_uv)
    if out is not None:
        return SvdResultV(*_copy_outs(tuple(r), out, "svd"))
    return r


def _svd_v(input: Tensor, some: bool, compute_uv: bool) -> SvdResultV:
    _check_matrix(input, "svd", "input", complex_ok=True)
    if not compute_uv:
        S = svdvals(input)
        m, n = input.shape[-2], input.shape[-1]
        U = _C.zeros(*input.shape[:-2], m, m if not some else min(m, n), dtype=input.dtype)
        V = _C.zeros(*input.shape[:-2], n, n if not some else min(m, n), dtype=input.dtype)
        return SvdResultV(U, S, V)
    U, S, Vh = svd(input, full_matrices=not some)
    V = _mT(Vh)
    return SvdResultV(U, S, _C.conj(V) if V.dtype in _COMPLEX else V)  # V = Vh^H


def _top_pinverse(input: Tensor, rcond: float = 1e-15) -> Tensor:
    """torch.pinverse: the Moore-Penrose pseudo-inverse (linalg.pinv with rtol=rcond).

    Example:
        >>> import flambeau as fb
        >>> A = fb.tensor([[2.0, 0.0], [0.0, 4.0]])
        >>> A.pinverse().tolist()
        [[0.5, 0.0], [0.0, 0.25]]
    """
    return pinv(input, rtol=rcond)
