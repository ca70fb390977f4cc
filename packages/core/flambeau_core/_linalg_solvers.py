"""The solvers of flambeau.linalg: inverse, solve and least squares, their ``_ex`` forms, the tensor forms.

``linalg.inv``, ``solve``, ``lstsq`` (gelsd, with PyTorch's gradient, that of ``pinv(A) @ B``),
``tensorinv`` and ``tensorsolve``, and ``inv_ex``, ``solve_ex`` and ``cholesky_ex``, which return LAPACK's
``info`` instead of raising (read from the kernels' messages, one matrix at a time, once the batched call
failed); with the top-level ``inverse``. Re-exported by flambeau_core.linalg (and at the top level where
torch has them).
"""

from __future__ import annotations

import collections
import math
import re
from collections.abc import Sequence
from typing import Any

from flambeau_core import _C
from flambeau_core._C import FlambeauError, Tensor
from flambeau_core._linalg_common import (
    _COMPLEX,
    _broadcast_shape,
    _check_flags,
    _check_float,
    _check_matrix,
    _check_tensor,
    _copy_out,
    _copy_outs,
    _eps,
    _eye,
    _kernel_writes,
    _mT,
    _needs_grad,
    _same_dtype,
    _shape,
)

LstsqResult = collections.namedtuple("linalg_lstsq", ["solution", "residuals", "rank", "singular_values"])


def inv(A: Tensor, *, out: Tensor | None = None) -> Tensor:
    """Inverse of square matrices (torch.linalg.inv); a singular matrix raises.

    Example:
        >>> import flambeau as fb
        >>> A = fb.tensor([[4.0, 2.0], [2.0, 3.0]])
        >>> Ainv = fb.linalg.inv(A)
        >>> Ainv
        tensor([[ 0.3750, -0.2500],
                [-0.2500,  0.5000]])
        >>> fb.allclose(A @ Ainv, fb.eye(2))
        True
    """
    _check_matrix(A, "linalg.inv", square=True, complex_ok=True)
    if out is not None and _kernel_writes(_C._linalg_inv, (A,), (out,)):
        return _C._linalg_inv(A, out=out)  # written by the out kernel (Note [Structured kernels])
    return _copy_out(_C._linalg_inv(A), out, "linalg.inv")


def solve(A: Tensor, B: Tensor, *, left: bool = True, out: Tensor | None = None) -> Tensor:
    """X with A X = B (left) or X A = B, batch dims broadcast; B may be a (batch of) vector(s).

    Example:
        >>> import flambeau as fb
        >>> A = fb.tensor([[4.0, 2.0], [2.0, 3.0]])
        >>> b = fb.tensor([2.0, 1.0])
        >>> x = fb.linalg.solve(A, b)
        >>> x
        tensor([0.5000, 0.0000])
        >>> fb.allclose(A @ x, b)
        True
    """
    _check_matrix(A, "linalg.solve", square=True, complex_ok=True)
    _check_float(B, "linalg.solve", "B", complex_ok=True)
    if A.dtype != B.dtype:
        raise TypeError(
            f"linalg.solve: Expected A and B to have the same dtype, but found A of type {A.dtype} "
            f"and B of type {B.dtype} instead"
        )
    vector = B.dim() == 1 or (B.dim() == A.dim() - 1 and tuple(B.shape) == tuple(A.shape[:-1]))
    if vector:
        B = B.unsqueeze(-1)
    if B.dim() < 2:
        raise FlambeauError(f"linalg.solve: B must have at least 1 dimension, got shape {_shape(B)}")
    n = A.shape[-1]
    rows = B.shape[-2] if left else B.shape[-1]
    if rows != n or (vector and not left):
        raise FlambeauError(
            f"linalg.solve: Incompatible shapes of A and B for the equation {'AX = B' if left else 'XA = B'} "
            f"({_shape(A)} and {_shape(B.squeeze(-1) if vector else B)})"
        )
    batch = _broadcast_shape(A.shape[:-2], B.shape[:-2], "linalg.solve")
    Ab = A.expand(*batch, n, n)
    Bb = B.expand(*batch, *B.shape[-2:])
    if left and not vector and out is not None and _kernel_writes(_C._linalg_solve, (Ab, Bb), (out,)):
        return _C._linalg_solve(Ab, Bb, out=out)  # written by the out kernel (Note [Structured kernels])
    if left:
        X = _C._linalg_solve(Ab, Bb)
    else:
        X = _mT(_C._linalg_solve(_mT(Ab), _mT(Bb)))
    if vector:
        X = X.squeeze(-1)
    return _copy_out(X, out, "linalg.solve")


def lstsq(
    A: Tensor, B: Tensor, rcond: float | None = None, *, driver: str | None = None, out: Any = None
) -> LstsqResult:
    """Least-squares solution of A X = B (torch.linalg.lstsq), by LAPACK's gelsd (SVD).

    Every driver (None, the default, is 'gelsy' as PyTorch's on the CPU; 'gelsd', 'gelss', 'gels') runs
    gelsd, and reports what PyTorch's driver reports: residuals (the squared residual norms, when m > n and
    every matrix has full rank) for all but 'gelsy', rank for all but 'gels', singular values for 'gelsd'
    and 'gelss'; an output not reported is an empty tensor.

    Example:
        >>> import flambeau as fb
        >>> A = fb.tensor([[1.0, 0.0], [1.0, 1.0], [1.0, 2.0]])
        >>> B = fb.tensor([[1.0], [2.0], [2.0]])
        >>> fb.linalg.lstsq(A, B).solution.round(decimals=4)  # the line y = a + b t through 3 points
        tensor([[1.1667],
                [0.5000]])
    """
    _check_matrix(A, "linalg.lstsq", complex_ok=True)
    _check_float(B, "linalg.lstsq", "B", complex_ok=True)
    if A.dtype != B.dtype:
        raise TypeError(f"linalg.lstsq: Expected A and B to have the same dtype, got {A.dtype} and {B.dtype}")
    if driver not in (None, "gelsd", "gelsy", "gelss", "gels"):
        raise FlambeauError(
            f"linalg.lstsq: parameter `driver` should be one of (gels, gelsy, gelsd, gelss), got {driver}"
        )
    vector = B.dim() == A.dim() - 1
    if vector:
        B = B.unsqueeze(-1)
    if B.dim() < 2 or B.shape[-2] != A.shape[-2]:
        raise FlambeauError(
            f"linalg.lstsq: input.size(-2) should match other.size(-2), got shapes {_shape(A)} and {_shape(B)}"
        )
    batch = _broadcast_shape(A.shape[:-2], B.shape[:-2], "linalg.lstsq")
    Ab = A.expand(*batch, *A.shape[-2:])
    Bb = B.expand(*batch, *B.shape[-2:])
    grad = _needs_grad(A, B)
    if grad:  # gelsd's solution runs untracked (no graph, no tangent): its derivatives come from pinv below
        X, res, rank, sv = _C._linalg_lstsq(Ab.detach(), Bb.detach(), -1.0 if rcond is None else float(rcond))
    else:
        X, res, rank, sv = _C._linalg_lstsq(Ab, Bb, -1.0 if rcond is None else float(rcond))
    if grad:
        X = _lstsq_differentiable(Ab, Bb, X)
        if res.numel():  # the squared residual norms, differentiable too (as PyTorch's)
            r = Ab @ X - Bb
            res = _C.sum(r.abs() ** 2 if r.dtype in _COMPLEX else r**2, [-2], False)
    if vector:
        X = X.squeeze(-1)
    # What each driver reports, as PyTorch's (its CPU default is gelsy): gels no rank, gels and gelsy no
    # singular values and gelsy no residuals; an output not reported is an empty 1-D tensor.
    driver = driver or "gelsy"
    if driver == "gelsy" and res.numel():
        res = res.new_empty(0)
    if driver == "gels":
        rank = rank.new_empty(0)
    if driver in ("gels", "gelsy"):
        sv = sv.new_empty(0)
    if out is not None:
        return LstsqResult(*_copy_outs((X, res, rank, sv), out, "linalg.lstsq"))
    return LstsqResult(X, res, rank, sv)


def _lstsq_differentiable(A: Tensor, B: Tensor, X: Tensor) -> Tensor:
    """gelsd's solution X with PyTorch's gradient: that of pinv(A) @ B (linalg_lstsq_backward), pinv's own
    derivative (pinv_backward) being defined for rank-deficient A too. The value stays gelsd's: the
    differentiable product enters as (P B) - detach(P B), zero up to rounding."""
    m, n = A.shape[-2], A.shape[-1]
    real = _C.float32 if A.dtype in (_C.float32, _C.complex64) else _C.float64
    rtol = _C.full([], _eps(A.dtype) * max(m, n), dtype=real)
    PB = _C._linalg_pinv(A, _C.zeros([], dtype=real), rtol, False) @ B
    return X + (PB - PB.detach())


CholeskyExResult = collections.namedtuple("linalg_cholesky_ex", ["L", "info"])


InvExResult = collections.namedtuple("linalg_inv_ex", ["inverse", "info"])


SolveExResult = collections.namedtuple("linalg_solve_ex", ["result", "info"])


def _stated_info(message: str, pattern: str) -> int:
    # The kernels' messages state LAPACK's info ("The diagonal element 2 is zero", "the leading minor of
    # order 3"); the primitives return no info tensor of their own.
    m = re.search(pattern, message)
    return int(m.group(1)) if m else 1


def _lu_info(a: Tensor) -> int:
    """getrf's info for one square matrix: the first zero diagonal element of U (from 1), 0 if none."""
    try:
        _C._linalg_inv(a)
    except FlambeauError as e:
        return _stated_info(str(e), r"diagonal element (\d+)")
    return 0


def _cholesky_info(a: Tensor) -> int:
    """potrf's info for one matrix: the order of its first leading minor that is not positive-definite."""
    try:
        _C._linalg_cholesky(a, False)
    except FlambeauError as e:
        return _stated_info(str(e), r"leading minor of order (\d+)")
    return 0


def _infos(A: Tensor, info_of: Any) -> Tensor:
    """info_of each matrix of A (int32, A's batch shape): a loop over the batch, run only after the batched
    call failed, since the kernels stop at the first matrix that fails."""
    flat = A.reshape(-1, *A.shape[-2:])
    infos = [info_of(flat[i]) for i in range(flat.shape[0])]
    return _C.tensor(infos, dtype=_C.int32, device=A.device).reshape(*A.shape[:-2])


def _on_good(A: Tensor, info: Tensor, compute: Any, vector: bool = False) -> Tensor:
    """compute(A) with each failed matrix (info > 0) replaced by I, and NaN in its result."""
    bad = (info > 0).unsqueeze(-1).unsqueeze(-1)
    X = compute(_C.where(bad, _eye(A.shape[-1], A), A))
    if vector:
        bad = bad.squeeze(-1)
    return _C.where(bad, _C.full([], math.nan, dtype=X.dtype), X)


def _ex_error(e: FlambeauError, kernel: str, op: str) -> FlambeauError:
    return FlambeauError(str(e).replace(kernel, op, 1))


def cholesky_ex(A: Tensor, *, upper: bool = False, check_errors: bool = False, out: Any = None) -> CholeskyExResult:
    r"""Cholesky factor and LAPACK's info (torch.linalg.cholesky_ex): info (int32, A's batch shape) is 0 where
    the factorization succeeded, else the order of the leading minor that is not positive-definite.

    With ``check_errors=False`` a matrix that is not positive-definite does not raise; its factor is NaN
    (PyTorch leaves LAPACK's partial factor there). ``check_errors=True`` raises as linalg.cholesky does.

    Example:
        >>> import flambeau_core as fc
        >>> L, info = fc.linalg.cholesky_ex(fc.tensor([[4.0, 2.0], [2.0, 5.0]]))
        >>> L.tolist(), info.item()
        ([[2.0, 0.0], [1.0, 2.0]], 0)
    """
    op = "linalg.cholesky_ex"
    _check_flags(op, upper=upper, check_errors=check_errors)
    _check_matrix(A, op, square=True, complex_ok=True)
    try:
        L = _C._linalg_cholesky(A, upper)
        info = _C.zeros(*A.shape[:-2], dtype=_C.int32, device=A.device)
    except FlambeauError as e:
        if check_errors:
            raise _ex_error(e, "linalg.cholesky", op) from None
        # potrf reads one triangle: the info of the lower one of A (upper=False) or of A^T's
        info = _infos(_mT(A) if upper else A, _cholesky_info)
        L = _on_good(A, info, lambda a: _C._linalg_cholesky(a, upper))
    if out is not None:
        return CholeskyExResult(*_copy_outs((L, info), out, op))
    return CholeskyExResult(L, info)


def inv_ex(A: Tensor, *, check_errors: bool = False, out: Any = None) -> InvExResult:
    r"""Inverse and LAPACK's info (torch.linalg.inv_ex): info (int32, A's batch shape) is 0 where A is
    invertible, else the index (from 1) of the zero diagonal element of its LU factor.

    With ``check_errors=False`` a singular matrix does not raise; its inverse is NaN. ``check_errors=True``
    raises as linalg.inv does.

    Example:
        >>> import flambeau_core as fc
        >>> Ainv, info = fc.linalg.inv_ex(fc.tensor([[2.0, 0.0], [0.0, 4.0]]))
        >>> Ainv.diagonal().tolist(), info.item()
        ([0.5, 0.25], 0)
    """
    op = "linalg.inv_ex"
    _check_flags(op, check_errors=check_errors)
    _check_matrix(A, op, square=True, complex_ok=True)
    try:
        X = _C._linalg_inv(A)
        info = _C.zeros(*A.shape[:-2], dtype=_C.int32, device=A.device)
    except FlambeauError as e:
        if check_errors:
            raise _ex_error(e, "linalg.inv", op) from None
        info = _infos(A, _lu_info)
        X = _on_good(A, info, _C._linalg_inv)
    if out is not None:
        return InvExResult(*_copy_outs((X, info), out, op))
    return InvExResult(X, info)


def solve_ex(A: Tensor, B: Tensor, *, left: bool = True, check_errors: bool = False, out: Any = None) -> SolveExResult:
    r"""linalg.solve and LAPACK's info (torch.linalg.solve_ex): info (int32, the broadcast batch shape) is 0
    where A is invertible, else the index (from 1) of the zero diagonal element of its LU factor.

    With ``check_errors=False`` a singular A does not raise; its solution is NaN. ``check_errors=True``
    raises as linalg.solve does.

    Example:
        >>> import flambeau_core as fc
        >>> X, info = fc.linalg.solve_ex(fc.tensor([[2.0, 0.0], [0.0, 4.0]]), fc.tensor([2.0, 4.0]))
        >>> X.tolist(), info.item()
        ([1.0, 1.0], 0)
    """
    op = "linalg.solve_ex"
    _check_flags(op, left=left, check_errors=check_errors)
    _check_tensor(A, op)
    _check_tensor(B, op, "B")
    try:
        X = solve(A, B, left=left)
        info = _C.zeros(*A.shape[:-2], dtype=_C.int32, device=A.device)  # one LU per matrix of A: A's batch shape
    except FlambeauError as e:
        if check_errors or "singular" not in str(e):
            raise _ex_error(e, "linalg.solve", op) from None
        info = _infos(A, _lu_info)
        # B, and X, are (batches of) vectors as solve decides
        vector = B.dim() == 1 or (B.dim() == A.dim() - 1 and tuple(B.shape) == tuple(A.shape[:-1]))
        X = _on_good(A, info, lambda a: solve(a, B, left=left), vector)
    if out is not None:
        return SolveExResult(*_copy_outs((X, info), out, op))
    return SolveExResult(X, info)


def tensorinv(A: Tensor, ind: int = 2, *, out: Tensor | None = None) -> Tensor:
    r"""The inverse of A for tensordot over ``ind`` dims (torch.linalg.tensorinv): A reshaped to a square
    (prod(A.shape[:ind]), prod(A.shape[ind:])) matrix, inverted, shaped A.shape[ind:] + A.shape[:ind].

    Example:
        >>> import flambeau_core as fc
        >>> A = fc.eye(6).reshape(6, 2, 3) * 2
        >>> tuple(fc.linalg.tensorinv(A, ind=1).shape)
        (2, 3, 6)
    """
    op = "linalg.tensorinv"
    _check_float(A, op, complex_ok=True)
    if not isinstance(ind, int) or isinstance(ind, bool) or ind <= 0:
        raise FlambeauError(f"{op}: Expected a strictly positive integer for 'ind', but got {ind}")
    rows = math.prod(A.shape[:ind])
    cols = math.prod(A.shape[ind:])
    if rows != cols:
        raise FlambeauError(
            f"{op}: Expected self to satisfy the requirement prod(self.shape[ind:]) == prod(self.shape[:ind]), "
            f"but got {cols} != {rows} (shape {_shape(A)}, ind={ind})"
        )
    X = inv(A.reshape(rows, cols)).reshape(*A.shape[ind:], *A.shape[:ind])
    return _copy_out(X, out, op)


def tensorsolve(A: Tensor, B: Tensor, dims: Sequence[int] | None = None, *, out: Tensor | None = None) -> Tensor:
    r"""X with tensordot(A, X, X.ndim) = B (torch.linalg.tensorsolve); X has shape A.shape[B.ndim:].

    ``dims`` moves those dims of A to the end first.

    Example:
        >>> import flambeau_core as fc
        >>> A = fc.eye(6).reshape(2, 3, 6) * 2
        >>> fc.linalg.tensorsolve(A, fc.ones(2, 3)).tolist()
        [0.5, 0.5, 0.5, 0.5, 0.5, 0.5]
    """
    op = "linalg.tensorsolve"
    _check_float(A, op, complex_ok=True)
    _check_float(B, op, "B", complex_ok=True)
    _same_dtype(A, B, op)
    if dims is not None:
        nd = A.dim()
        ds = []
        for d in dims:
            if not -nd <= d < nd:
                raise IndexError(
                    f"{op}: Dimension out of range (expected to be in range of [{-nd}, {nd - 1}], but got {d})"
                )
            ds.append(d % nd)
        A = A.permute(*[i for i in range(nd) if i not in ds], *ds)
    result_shape = list(A.shape[B.dim() :])
    rows = math.prod(A.shape[: B.dim()])
    cols = math.prod(result_shape)
    if rows != cols or B.numel() != rows:
        raise FlambeauError(
            f"{op}: Expected self to satisfy the requirement prod(self.shape[other.ndim:]) == "
            f"prod(self.shape[:other.ndim]), but got {cols} != {rows} (shapes {_shape(A)} and {_shape(B)})"
        )
    X = solve(A.reshape(rows, cols), B.reshape(rows)).reshape(*result_shape)
    return _copy_out(X, out, op)


def _top_inverse(input: Tensor, *, out: Tensor | None = None) -> Tensor:
    """torch.inverse: the inverse of square matrices (as linalg.inv; LinAlgError if singular).

    Example:
        >>> import flambeau as fb
        >>> A = fb.tensor([[2.0, 0.0], [0.0, 4.0]])
        >>> A.inverse().diagonal().tolist()
        [0.5, 0.25]
    """
    return inv(input, out=out)
