"""The triangular solves of flambeau.linalg and the solves from a Cholesky factor.

``linalg.solve_triangular`` and the top-level ``triangular_solve``, ``cholesky_solve`` and
``cholesky_inverse``: the LU solver run on the triangle, or substitution where its diagonal holds a zero
(giving PyTorch's inf/NaN). Re-exported by flambeau_core.linalg (and at the top level where torch has them).
"""

from __future__ import annotations

import collections
from typing import Any

from flambeau_core import _C
from flambeau_core._C import FlambeauError, Tensor
from flambeau_core._linalg_common import (
    _adjoint,
    _broadcast_shape,
    _check_flags,
    _check_float,
    _check_matrix,
    _copy_out,
    _copy_outs,
    _eye,
    _mT,
    _same_dtype,
    _shape,
)

# Core has no triangular-solve (trtrs/trsm) or LU-factor (getrf with its pivots) primitive: these are
# composites over _linalg_solve (getrf/getrs) applied to the triangular part, so autograd differentiates
# them through solve, and the gradient of A lands on its triangle as PyTorch's does.

TriangularSolveResult = collections.namedtuple("triangular_solve", ["solution", "cloned_coefficient"])


def _triangle(A: Tensor, upper: bool, unitriangular: bool) -> Tensor:
    """The triangle of A that a triangular solve reads (the other entries are never looked at)."""
    if not unitriangular:
        return _C.triu(A) if upper else _C.tril(A)
    strict = _C.triu(A, 1) if upper else _C.tril(A, -1)
    return strict + _eye(A.shape[-1], A)


def solve_triangular(
    A: Tensor,
    B: Tensor,
    *,
    upper: bool,
    left: bool = True,
    unitriangular: bool = False,
    out: Tensor | None = None,
) -> Tensor:
    r"""Solves A X = B (``left=True``) or X A = B for a triangular A (torch.linalg.solve_triangular).

    Only the upper (``upper=True``) or lower triangle of A is read; ``unitriangular=True`` takes its diagonal
    to be ones. Batch dims of A (*, n, n) and B (*, n, k) broadcast. float32/float64/complex.

    flambeau-core has no triangular-solve kernel: this solves with the LU solver on A's triangle; a
    triangle with a zero on its diagonal is solved by substitution row by row, giving inf/nan as PyTorch's.

    Example:
        >>> import flambeau_core as fc
        >>> A = fc.tensor([[2.0, 1.0], [0.0, 4.0]])
        >>> fc.linalg.solve_triangular(A, fc.tensor([[3.0], [4.0]]), upper=True).tolist()
        [[1.0], [1.0]]
    """
    op = "linalg.solve_triangular"
    _check_flags(op, upper=upper, left=left, unitriangular=unitriangular)
    _check_matrix(A, op, square=True, complex_ok=True)
    _check_float(B, op, "B", complex_ok=True)
    if B.dim() < 2:
        raise FlambeauError(f"{op}: The input tensor B must have at least 2 dimensions (got shape {_shape(B)}).")
    _same_dtype(A, B, op)
    n = A.shape[-1]
    if (B.shape[-2] if left else B.shape[-1]) != n:
        raise FlambeauError(
            f"{op}: Incompatible shapes of A and B for the equation {'AX = B' if left else 'XA = B'} "
            f"({_shape(A)} and {_shape(B)})"
        )
    batch = _broadcast_shape(A.shape[:-2], B.shape[:-2], op)
    T = _triangle(A, upper, unitriangular).expand(*batch, n, n)
    Bb = B.expand(*batch, *B.shape[-2:])
    if not left:  # X A = B is A^T X^T = B^T, triangular on the other side
        T, Bb, upper = _mT(T), _mT(Bb), not upper
    # LU's pivoting can turn an exact zero on the diagonal into a rounding residue and solve on: such a
    # triangle goes to substitution, which divides by the zero as PyTorch's trsm does.
    singular = not unitriangular and n > 0 and bool(_C.any(_C.diagonal(T, 0, -2, -1) == 0).item())
    X = _substitute(T, Bb, upper) if singular else _C._linalg_solve(T, Bb)
    return _copy_out(X if left else _mT(X), out, op)


def _substitute(T: Tensor, B: Tensor, upper: bool) -> Tensor:
    """Forward (or back) substitution, one row of X per step: only for a triangle with a zero on its
    diagonal, where PyTorch's trsm divides by zero, giving the inf/nan this gives."""
    n = T.shape[-1]
    rows: dict[int, Tensor] = {}
    for i in reversed(range(n)) if upper else range(n):
        acc = B.select(-2, i)
        done = sorted(rows)
        if done:
            known = _C.stack([rows[j] for j in done], -2)  # (*, m, k)
            coef = _C.stack([T.select(-1, j).select(-1, i) for j in done], -1)  # (*, m): T[i, j]
            acc = acc - _C.sum(coef.unsqueeze(-1) * known, [-2])
        rows[i] = acc / T.select(-1, i).select(-1, i).unsqueeze(-1)
    return _C.stack([rows[i] for i in range(n)], -2)


def _top_triangular_solve(
    input: Tensor,
    A: Tensor,
    upper: bool = True,
    transpose: bool = False,
    unitriangular: bool = False,
    *,
    out: Any = None,
) -> TriangularSolveResult:
    r"""Solves A X = b (or A^T X = b with ``transpose=True``) for a triangular A (torch.triangular_solve).

    Returns ``(solution, cloned_coefficient)``, the second a copy of A. Note the argument order
    (b first) and the default ``upper=True``; :func:`flambeau.linalg.solve_triangular` is the newer form.

    Example:
        >>> import flambeau as fb
        >>> A = fb.tensor([[2.0, 1.0], [0.0, 4.0]])
        >>> fb.triangular_solve(fb.tensor([[3.0], [4.0]]), A).solution.tolist()
        [[1.0], [1.0]]
    """
    op = "triangular_solve"
    _check_flags(op, upper=upper, transpose=transpose, unitriangular=unitriangular)
    _check_float(input, op, "b", complex_ok=True)
    _check_float(A, op, "A", complex_ok=True)
    if input.dim() < 2 or A.dim() < 2:
        raise FlambeauError(
            f"{op}: b and A should have at least 2 dimensions, got shapes {_shape(input)} and {_shape(A)}"
        )
    _same_dtype(input, A, op, "b", "A")
    if A.shape[-1] != A.shape[-2] or input.shape[-2] != A.shape[-1]:
        raise FlambeauError(
            f"{op}: Incompatible matrix sizes for triangular_solve: each A matrix is {A.shape[-2]} by "
            f"{A.shape[-1]} but each b matrix is {input.shape[-2]} by {input.shape[-1]}"
        )
    # A^T is triangular on the other side; the solution of A^T X = b.
    T = _mT(A) if transpose else A
    X = solve_triangular(T, input, upper=upper != transpose, unitriangular=unitriangular)
    batch = X.shape[:-2]
    C = A.expand(*batch, *A.shape[-2:]).clone()
    if out is not None:
        return TriangularSolveResult(*_copy_outs((X, C), out, op))
    return TriangularSolveResult(X, C)


def _check_cholesky_factor(L: Any, op: str) -> None:
    _check_float(L, op, "A", complex_ok=True)
    if L.dim() < 2:
        raise FlambeauError(f"{op}: The input tensor A must have at least 2 dimensions (got shape {_shape(L)}).")
    if L.shape[-1] != L.shape[-2]:
        raise FlambeauError(
            f"{op}: A must be batches of square matrices, but they are {L.shape[-2]} by {L.shape[-1]} matrices"
        )


def _top_cholesky_solve(input: Tensor, input2: Tensor, upper: bool = False, *, out: Tensor | None = None) -> Tensor:
    r"""Solves A X = B given the Cholesky factor of A = L L^H (or U^H U with ``upper=True``) (torch.cholesky_solve).

    ``input`` is B (*, n, k), ``input2`` the factor (*, n, n); batch dims broadcast. Two triangular solves.

    Example:
        >>> import flambeau as fb
        >>> L = fb.linalg.cholesky(fb.tensor([[4.0, 2.0], [2.0, 5.0]]))
        >>> fb.cholesky_solve(fb.tensor([[6.0], [7.0]]), L).tolist()
        [[1.0], [1.0]]
    """
    op = "cholesky_solve"
    _check_flags(op, upper=upper)
    _check_float(input, op, "B", complex_ok=True)
    _check_cholesky_factor(input2, op)
    if input.dim() < 2:
        raise FlambeauError(f"{op}: b should have at least 2 dimensions, but has {input.dim()} dimensions instead")
    _same_dtype(input, input2, op, "b", "A")
    n = input2.shape[-1]
    if input.shape[-2] != n:
        raise FlambeauError(
            f"{op}: Incompatible matrix sizes for cholesky_solve: each A matrix is {n} by {n} "
            f"but each b matrix is {input.shape[-2]} by {input.shape[-1]}"
        )
    # A = F^H F with F upper (U, or L^H): solve F^H Y = B, then F X = Y.
    F = input2 if upper else _adjoint(input2)
    Y = solve_triangular(_adjoint(F), input, upper=False)
    return _copy_out(solve_triangular(F, Y, upper=True), out, op)


def _top_cholesky_inverse(input: Tensor, upper: bool = False, *, out: Tensor | None = None) -> Tensor:
    r"""Inverse of A = L L^H (or U^H U with ``upper=True``) from its Cholesky factor (torch.cholesky_inverse).

    Example:
        >>> import flambeau as fb
        >>> L = fb.linalg.cholesky(fb.tensor([[4.0, 0.0], [0.0, 16.0]]))
        >>> fb.cholesky_inverse(L).tolist()
        [[0.25, 0.0], [0.0, 0.0625]]
    """
    op = "cholesky_inverse"
    _check_flags(op, upper=upper)
    _check_cholesky_factor(input, op)
    n = input.shape[-1]
    F = input if upper else _adjoint(input)  # A = F^H F, A^-1 = F^-1 F^-H
    Finv = solve_triangular(F, _eye(n, input).expand(*input.shape), upper=True)
    return _copy_out(Finv @ _adjoint(Finv), out, op)
