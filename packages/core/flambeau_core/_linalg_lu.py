"""The LU, LDL and Householder-QR family of flambeau.linalg and its torch.* spellings.

``linalg.lu_factor``, ``lu_factor_ex``, ``lu``, ``lu_solve``, ``ldl_factor``, ``ldl_factor_ex``,
``ldl_solve`` and the top-level ``lu``, ``lu_solve``, ``lu_unpack``, ``geqrf`` and ``ormqr`` (with
PyTorch's names, defaults and named tuples), over core's LAPACK primitives ``_linalg_lu_factor_ex``
(getrf), ``_linalg_lu_solve`` (getrs), ``_linalg_ldl_factor_ex`` (sytrf/hetrf),
``_linalg_ldl_solve`` (sytrs/hetrs), ``_geqrf`` and ``_ormqr`` (src/cpu/linalg/lapack_lu.cpp).
Pivots are LAPACK's 1-based int32 row swaps. The LU factorization and solve carry their own
derivatives (src/composite/linalg_lu_backward.cpp); ``linalg.lu`` and ``lu_unpack`` are
differentiable through the triangles they cut from the packed LU; ``ormqr`` is differentiated
through the explicit Q of ``linalg.householder_product``; LDL and ``geqrf`` have no derivative,
as in PyTorch. Re-exported by flambeau_core.linalg (and at the top level where torch has them).
"""

from __future__ import annotations

import collections
from typing import Any

from flambeau_core import _C
from flambeau_core._C import FlambeauError, Tensor
from flambeau_core._linalg_common import _adjoint, _copy_out, _kernel_writes, _out_tuple
from flambeau_core._linalg_common import _copy_outs as _copy_results
from flambeau_core._linalg_decompositions import householder_product
from flambeau_core.overrides import is_tensor_like

LUFactorResult = collections.namedtuple("linalg_lu_factor", ["LU", "pivots"])
LUFactorExResult = collections.namedtuple("linalg_lu_factor_ex", ["LU", "pivots", "info"])
LUResult = collections.namedtuple("linalg_lu", ["P", "L", "U"])
LUUnpackResult = collections.namedtuple("lu_unpack", ["P", "L", "U"])
LUWithInfoResult = collections.namedtuple("_lu_with_info", ["LU", "pivots", "info"])
LDLFactorResult = collections.namedtuple("linalg_ldl_factor", ["LD", "pivots"])
LDLFactorExResult = collections.namedtuple("linalg_ldl_factor_ex", ["LD", "pivots", "info"])
GeqrfResult = collections.namedtuple("geqrf", ["a", "tau"])


def _check_tensor(x: Any, op: str, what: str) -> None:
    if not is_tensor_like(x):  # a tensor-like (flambeau.overrides) runs through, its ops overridden
        raise TypeError(f"[{op}] expected a Tensor for {what}, got {type(x).__name__}")


def _check_bool(op: str, **flags: Any) -> None:
    for name, value in flags.items():
        if not isinstance(value, bool):
            raise TypeError(f"[{op}] expected {name} to be a bool, got {type(value).__name__}")


def _broadcast_batch(op: str, a: Tensor, a_tail: int, b: Tensor, b_tail: int, names: str) -> list[int]:
    """The broadcast of a's and b's batch dims (all but the last a_tail / b_tail)."""
    sa, sb = list(a.shape[: a.dim() - a_tail]), list(b.shape[: b.dim() - b_tail])
    n = max(len(sa), len(sb))
    sa, sb = [1] * (n - len(sa)) + sa, [1] * (n - len(sb)) + sb
    out = []
    for x, y in zip(sa, sb, strict=True):
        if x != y and x != 1 and y != 1:
            raise FlambeauError(
                f"[{op}] the batch dimensions of {names} cannot be broadcast: shapes "
                f"{tuple(a.shape)} and {tuple(b.shape)}"
            )
        out.append(y if x == 1 else x)
    return out


def _copy_outs(results: tuple[Tensor, ...], out: Any, op: str) -> tuple[Tensor, ...]:
    return tuple(results) if out is None else _copy_results(results, out, op)


# ---- LU ----


def _lu_factor_ex(A: Any, pivot: bool, check_errors: bool, op: str) -> tuple[Tensor, Tensor, Tensor]:
    _check_tensor(A, op, "A")
    _check_bool(op, pivot=pivot, check_errors=check_errors)
    return _C._linalg_lu_factor_ex(A, pivot, check_errors)


def lu_factor_ex(A: Tensor, *, pivot: bool = True, check_errors: bool = False, out: Any = None) -> LUFactorExResult:
    r"""LU factorization with partial pivoting of a batch of (*, m, n) matrices, with its LAPACK
    ``info`` instead of an error for a singular matrix (torch.linalg.lu_factor_ex).

    Returns ``(LU, pivots, info)``: ``LU`` (*, m, n) holds L below the diagonal (its unit diagonal
    implied) and U on and above it; ``pivots`` (*, min(m, n)) int32 are LAPACK's 1-based row swaps;
    ``info`` (*) int32 is 0, or i > 0 when U[i-1, i-1] is exactly zero. float32/float64/complex;
    ``pivot=False`` is not implemented on the CPU (as in PyTorch).

    Example:
        >>> import flambeau as fb
        >>> LU, pivots, info = fb.linalg.lu_factor_ex(fb.tensor([[1.0, 2.0], [3.0, 4.0]]))
        >>> LU.tolist(), pivots.tolist(), info.item()
        ([[3.0, 4.0], [0.3333333432674408, 0.6666666269302368]], [2, 2], 0)
    """
    op = "linalg.lu_factor_ex"
    outs = _out_tuple(out, 3)
    if outs is not None:
        _check_tensor(A, op, "A")
        _check_bool(op, pivot=pivot, check_errors=check_errors)
        if _kernel_writes(_C._linalg_lu_factor_ex, (A, pivot, check_errors), outs):  # the out kernel writes them
            return LUFactorExResult(*_C._linalg_lu_factor_ex(A, pivot, check_errors, out=outs))
    return LUFactorExResult(*_copy_outs(_lu_factor_ex(A, pivot, check_errors, op), out, op))


def lu_factor(A: Tensor, *, pivot: bool = True, out: Any = None) -> LUFactorResult:
    r"""LU factorization with partial pivoting of a batch of (*, m, n) matrices (torch.linalg.lu_factor).

    Returns ``(LU, pivots)`` as :func:`lu_factor_ex`, and raises when some U has an exact zero on its
    diagonal (``lu_solve`` would divide by it). Differentiable (PyTorch's LU derivative).

    Example:
        >>> import flambeau as fb
        >>> A = fb.tensor([[4.0, 3.0], [6.0, 3.0]])
        >>> LU, pivots = fb.linalg.lu_factor(A)
        >>> B = fb.tensor([[10.0], [12.0]])
        >>> fb.allclose(A @ fb.linalg.lu_solve(LU, pivots, B), B)
        True
    """
    op = "linalg.lu_factor"
    LU, pivots, _ = _lu_factor_ex(A, pivot, True, op)
    return LUFactorResult(*_copy_outs((LU, pivots), out, op))


def _permutation(pivots: Tensor, m: int, dtype: Any) -> Tensor:
    """P (*, m, m) with A = P L U, from LAPACK's row swaps."""
    perm = _C._lu_pivots_to_permutation(pivots, m)
    return (_C.arange(m, device=perm.device).unsqueeze(-1) == perm.unsqueeze(-2)).to(dtype)


def _unpack(LU: Tensor, pivots: Tensor, unpack_data: bool, unpack_pivots: bool) -> tuple[Tensor, Tensor, Tensor]:
    m, n = LU.shape[-2], LU.shape[-1]
    k = min(m, n)
    empty = _C.empty((0,), dtype=LU.dtype, device=LU.device)
    P = _permutation(pivots, m, LU.dtype) if unpack_pivots else empty
    if not unpack_data:
        return P, empty, empty
    eye = _C.eye(m, k, dtype=LU.dtype, device=LU.device)
    L = LU.narrow(-1, 0, k).tril(-1) + eye
    U = LU.narrow(-2, 0, k).triu()
    return P, L, U


def lu(A: Tensor, *, pivot: bool = True, out: Any = None) -> LUResult:
    r"""LU decomposition with partial pivoting A = P L U of a batch of (*, m, n) matrices (torch.linalg.lu).

    Returns ``(P, L, U)``: the permutation matrices P (*, m, m), unit lower L (*, m, k) and upper U
    (*, k, n), k = min(m, n). A singular A is decomposed too (U then has a zero on its diagonal).
    Differentiable in A. ``pivot=False`` is not implemented on the CPU (as in PyTorch).

    Example:
        >>> import flambeau as fb
        >>> A = fb.tensor([[1.0, 2.0], [3.0, 4.0]])
        >>> P, L, U = fb.linalg.lu(A)
        >>> P.tolist(), U.tolist()
        ([[0.0, 1.0], [1.0, 0.0]], [[3.0, 4.0], [0.0, 0.6666666269302368]])
        >>> fb.allclose(P @ L @ U, A)
        True
    """
    op = "linalg.lu"
    LU, pivots, _ = _lu_factor_ex(A, pivot, False, op)
    return LUResult(*_copy_outs(_unpack(LU, pivots, True, True), out, op))


def _solve_args(op: str, F: Any, pivots: Any, B: Any, fname: str) -> tuple[Tensor, Tensor, Tensor]:
    """A factorization (F, pivots) and B, checked, with their batch dims broadcast."""
    _check_tensor(F, op, fname)
    _check_tensor(pivots, op, "pivots")
    _check_tensor(B, op, "B")
    if F.dim() < 2 or B.dim() < 2:
        raise FlambeauError(
            f"[{op}] expected {fname} and B to have at least 2 dimensions, got shapes {tuple(F.shape)} and "
            f"{tuple(B.shape)}"
        )
    if pivots.dtype != _C.int32:
        raise TypeError(f"[{op}] pivots should be an int32 tensor, got {pivots.dtype}")
    if tuple(pivots.shape) != tuple(F.shape[:-1]):
        raise FlambeauError(
            f"[{op}] expected {fname}.shape[:-1] and pivots.shape to be the same, but got {fname} of shape "
            f"{tuple(F.shape)} and pivots of shape {tuple(pivots.shape)}"
        )
    batch = _broadcast_batch(op, F, 2, B, 2, f"{fname} and B")
    return (
        F.expand(*batch, F.shape[-2], F.shape[-1]),
        pivots.expand(*batch, pivots.shape[-1]),
        B.expand(*batch, B.shape[-2], B.shape[-1]),
    )


def lu_solve(
    LU: Tensor, pivots: Tensor, B: Tensor, *, left: bool = True, adjoint: bool = False, out: Tensor | None = None
) -> Tensor:
    r"""Solves A X = B from the LU factorization of a square A (torch.linalg.lu_solve).

    ``LU`` (*, n, n) and ``pivots`` (*, n) are :func:`lu_factor`'s; ``B`` is (*, n, k) (``left=True``)
    or (*, k, n) for X A = B (``left=False``); ``adjoint=True`` solves with A^H instead of A. The batch
    dims broadcast. Differentiable in LU and B.

    Example:
        >>> import flambeau as fb
        >>> A = fb.tensor([[2.0, 1.0], [1.0, 3.0]])
        >>> LU, pivots = fb.linalg.lu_factor(A)
        >>> fb.linalg.lu_solve(LU, pivots, fb.tensor([[3.0], [4.0]])).tolist()
        [[1.0], [1.0]]
    """
    op = "linalg.lu_solve"
    LUb, pb, Bb = _solve_args(op, LU, pivots, B, "LU")
    _check_bool(op, left=left, adjoint=adjoint)
    if out is not None and _kernel_writes(_C._linalg_lu_solve, (LUb, pb, Bb, left, adjoint), (out,)):
        return _C._linalg_lu_solve(LUb, pb, Bb, left, adjoint, out=out)  # written by the out kernel
    return _copy_out(_C._linalg_lu_solve(LUb, pb, Bb, left, adjoint), out, op)


def _top_lu(A: Tensor, pivot: bool = True, get_infos: bool = False, out: Any = None) -> tuple[Tensor, ...]:
    r"""LU factorization with partial pivoting (torch.lu, deprecated there for linalg.lu_factor).

    Returns ``(LU, pivots)``, or ``(LU, pivots, infos)`` with ``get_infos=True``; without it a
    singular matrix raises, as ``linalg.lu_factor``.

    Example:
        >>> import flambeau as fb
        >>> LU, pivots = fb.lu(fb.tensor([[1.0, 2.0], [3.0, 4.0]]))
        >>> pivots.tolist()
        [2, 2]
    """
    op = "lu"
    _check_bool(op, get_infos=get_infos)
    res = _lu_factor_ex(A, pivot, not get_infos, op)
    if get_infos:
        return LUWithInfoResult(*_copy_outs(res, out, op))
    return _copy_outs(res[:2], out, op)


def _top_lu_solve(b: Tensor, LU_data: Tensor, LU_pivots: Tensor, *, out: Tensor | None = None) -> Tensor:
    r"""Solves A X = b from the LU factorization of A (torch.lu_solve; linalg.lu_solve(LU, pivots, b)).

    Example:
        >>> import flambeau as fb
        >>> LU, pivots = fb.linalg.lu_factor(fb.tensor([[2.0, 0.0], [0.0, 4.0]]))
        >>> fb.lu_solve(fb.tensor([[2.0], [2.0]]), LU, pivots).tolist()
        [[1.0], [0.5]]
    """
    return lu_solve(LU_data, LU_pivots, b, out=out)


def _top_lu_unpack(
    LU_data: Tensor, LU_pivots: Tensor, unpack_data: bool = True, unpack_pivots: bool = True, *, out: Any = None
) -> LUUnpackResult:
    r"""P, L and U from a packed LU factorization (torch.lu_unpack): A = P L U.

    ``LU_data`` (*, m, n) and ``LU_pivots`` (*, min(m, n)) are :func:`linalg.lu_factor`'s. With
    ``unpack_data=False`` L and U are empty tensors, with ``unpack_pivots=False`` P is. Differentiable
    in LU_data.

    Example:
        >>> import flambeau as fb
        >>> LU, pivots = fb.linalg.lu_factor(fb.tensor([[1.0, 2.0], [3.0, 4.0]]))
        >>> P, L, U = fb.lu_unpack(LU, pivots)
        >>> L.tolist()
        [[1.0, 0.0], [0.3333333432674408, 1.0]]
    """
    op = "lu_unpack"
    _check_tensor(LU_data, op, "LU_data")
    _check_tensor(LU_pivots, op, "LU_pivots")
    _check_bool(op, unpack_data=unpack_data, unpack_pivots=unpack_pivots)
    if LU_data.dim() < 2:
        raise FlambeauError(f"[{op}] LU_data must have at least 2 dimensions, got shape {tuple(LU_data.shape)}")
    if LU_pivots.dtype != _C.int32:
        raise TypeError(f"[{op}] LU_pivots is expected to be an int32 tensor, got {LU_pivots.dtype}")
    k = min(LU_data.shape[-2], LU_data.shape[-1])
    if tuple(LU_pivots.shape) != (*LU_data.shape[:-2], k):
        raise FlambeauError(
            f"[{op}] expected LU_pivots of shape {(*LU_data.shape[:-2], k)} for LU_data of shape "
            f"{tuple(LU_data.shape)}, got {tuple(LU_pivots.shape)}"
        )
    if not LU_data.is_floating_point() and not LU_data.is_complex():
        raise TypeError(f"[{op}] expected a floating point or complex LU_data, got {LU_data.dtype}")
    return LUUnpackResult(*_copy_outs(_unpack(LU_data, LU_pivots, unpack_data, unpack_pivots), out, op))


# ---- LDL ----


def ldl_factor_ex(
    A: Tensor, *, hermitian: bool = False, check_errors: bool = False, out: Any = None
) -> LDLFactorExResult:
    r"""LDL factorization (Bunch-Kaufman) of a batch of symmetric, or Hermitian with ``hermitian=True``,
    (*, n, n) matrices, with LAPACK's ``info`` (torch.linalg.ldl_factor_ex).

    Only A's lower triangle is read. Returns ``(LD, pivots, info)`` in LAPACK's compact form (sytrf):
    ``LD``'s lower triangle holds L and the blocks of D (strict upper triangle zero), ``pivots`` (*, n)
    int32 (a negative pair marks a 2x2 block), ``info`` (*) int32, i > 0 when D[i-1, i-1] is exactly
    zero. Not differentiable (as in PyTorch).

    Example:
        >>> import flambeau as fb
        >>> LD, pivots, info = fb.linalg.ldl_factor_ex(fb.tensor([[4.0, 2.0], [2.0, 3.0]]))
        >>> LD.tolist(), pivots.tolist(), info.item()
        ([[4.0, 0.0], [0.5, 2.0]], [1, 2], 0)
    """
    op = "linalg.ldl_factor_ex"
    _check_tensor(A, op, "A")
    _check_bool(op, hermitian=hermitian, check_errors=check_errors)
    outs = _out_tuple(out, 3)
    if outs is not None and _kernel_writes(_C._linalg_ldl_factor_ex, (A, hermitian, check_errors), outs):
        return LDLFactorExResult(*_C._linalg_ldl_factor_ex(A, hermitian, check_errors, out=outs))
    return LDLFactorExResult(*_copy_outs(_C._linalg_ldl_factor_ex(A, hermitian, check_errors), out, op))


def ldl_factor(A: Tensor, *, hermitian: bool = False, out: Any = None) -> LDLFactorResult:
    r"""LDL factorization of a batch of symmetric (or Hermitian) matrices (torch.linalg.ldl_factor).

    Returns ``(LD, pivots)`` as :func:`ldl_factor_ex`, raising when D is singular.

    Example:
        >>> import flambeau as fb
        >>> A = fb.tensor([[4.0, 2.0], [2.0, 3.0]])
        >>> LD, pivots = fb.linalg.ldl_factor(A)
        >>> fb.linalg.ldl_solve(LD, pivots, fb.tensor([[6.0], [5.0]])).tolist()
        [[1.0], [1.0]]
    """
    op = "linalg.ldl_factor"
    _check_tensor(A, op, "A")
    _check_bool(op, hermitian=hermitian)
    LD, pivots, _ = _C._linalg_ldl_factor_ex(A, hermitian, True)
    return LDLFactorResult(*_copy_outs((LD, pivots), out, op))


def ldl_solve(LD: Tensor, pivots: Tensor, B: Tensor, *, hermitian: bool = False, out: Tensor | None = None) -> Tensor:
    r"""Solves A X = B from the LDL factorization of A (torch.linalg.ldl_solve).

    ``LD`` (*, n, n) and ``pivots`` (*, n) are :func:`ldl_factor`'s (with the same ``hermitian``),
    ``B`` is (*, n, k); the batch dims broadcast. Not differentiable (as in PyTorch).

    Example:
        >>> import flambeau as fb
        >>> LD, pivots = fb.linalg.ldl_factor(fb.tensor([[2.0, 1.0], [1.0, 2.0]]))
        >>> fb.linalg.ldl_solve(LD, pivots, fb.tensor([[3.0], [3.0]])).tolist()
        [[1.0], [1.0]]
    """
    op = "linalg.ldl_solve"
    LDb, pb, Bb = _solve_args(op, LD, pivots, B, "LD")
    _check_bool(op, hermitian=hermitian)
    if out is not None and _kernel_writes(_C._linalg_ldl_solve, (LDb, pb, Bb, hermitian), (out,)):
        return _C._linalg_ldl_solve(LDb, pb, Bb, hermitian, out=out)  # written by the out kernel
    return _copy_out(_C._linalg_ldl_solve(LDb, pb, Bb, hermitian), out, op)


# ---- Householder QR ----


def _top_geqrf(input: Tensor, *, out: Any = None) -> GeqrfResult:
    r"""QR decomposition as LAPACK's geqrf stores it (torch.geqrf): R on and above the diagonal of ``a``,
    the Householder vectors below it, their scales in ``tau`` (*, min(m, n)).

    Q is ``linalg.householder_product(a, tau)``, or applied with :func:`ormqr`. Not differentiable
    (as in PyTorch).

    Example:
        >>> import flambeau as fb
        >>> a, tau = fb.geqrf(fb.tensor([[3.0], [4.0]]))
        >>> a.tolist(), tau.tolist()
        ([[-5.0], [0.5]], [1.600000023841858])
    """
    op = "geqrf"
    _check_tensor(input, op, "input")
    outs = _out_tuple(out, 2)
    if outs is not None and _kernel_writes(_C._geqrf, (input,), outs):
        return GeqrfResult(*_C._geqrf(input, out=outs))  # written by the out kernel
    return GeqrfResult(*_copy_outs(_C._geqrf(input), out, op))


def _ormqr_via_q(input: Tensor, tau: Tensor, other: Tensor, left: bool, transpose: bool) -> Tensor:
    """ormqr through the explicit square Q, so that autograd differentiates it (householder_product's
    derivative); reflectors with tau = 0 are the identity, which pads Q to square."""
    mn, k = input.shape[-2], tau.shape[-1]
    batch = tuple(input.shape[:-2])
    V = _C.cat([input.narrow(-1, 0, k), _C.zeros((*batch, mn, mn - k), dtype=input.dtype)], -1)
    t = _C.cat([tau, _C.zeros((*batch, mn - k), dtype=tau.dtype)], -1)
    Q = householder_product(V, t)
    if transpose:
        Q = _adjoint(Q)
    return Q @ other if left else other @ Q


def _top_ormqr(
    input: Tensor,
    input2: Tensor,
    input3: Tensor,
    left: bool = True,
    transpose: bool = False,
    *,
    out: Tensor | None = None,
) -> Tensor:
    r"""Multiplies ``input3`` by the Q of a :func:`geqrf` factorization (torch.ormqr): Q C (``left=True``)
    or C Q, Q^H instead of Q with ``transpose=True``, without forming Q.

    ``input`` (*, mn, k) and ``input2`` = tau (*, min(mn, k)) are geqrf's; ``input3`` (*, m, n) with
    mn = m (left) or n; same batch dims. Differentiable (through the explicit Q when a gradient is
    recorded).

    Example:
        >>> import flambeau as fb
        >>> A = fb.tensor([[3.0, 1.0], [4.0, 2.0]])
        >>> a, tau = fb.geqrf(A)
        >>> R = a.triu()
        >>> fb.allclose(fb.ormqr(a, tau, R), A)
        True
    """
    op = "ormqr"
    _check_tensor(input, op, "input")
    _check_tensor(input2, op, "tau")
    _check_tensor(input3, op, "other")
    _check_bool(op, left=left, transpose=transpose)
    if input.dim() >= 2 and input3.dim() != input.dim():
        raise FlambeauError(
            f"[{op}] expected other to have the same number of dimensions as input, got other of shape "
            f"{tuple(input3.shape)} and input of shape {tuple(input.shape)}"
        )
    if out is not None and _kernel_writes(_C._ormqr, (input, input2, input3, left, transpose), (out,)):
        return _C._ormqr(input, input2, input3, left, transpose, out=out)  # written by the out kernel
    res = _C._ormqr(input, input2, input3, left, transpose)  # the checks, and the value without autograd
    if _C.is_grad_enabled() and (input.requires_grad or input2.requires_grad or input3.requires_grad):
        res = _ormqr_via_q(input, input2, input3, left, transpose)
    return _copy_out(res, out, op)


LINALG_ALL = ["lu_factor", "lu_factor_ex", "lu", "lu_solve", "ldl_factor", "ldl_factor_ex", "ldl_solve"]
TOP_LEVEL = {
    "lu": _top_lu,
    "lu_solve": _top_lu_solve,
    "lu_unpack": _top_lu_unpack,
    "geqrf": _top_geqrf,
    "ormqr": _top_ormqr,
}
# Tensor methods PyTorch has for them (x.lu(), x.lu_solve(LU, pivots), x.geqrf(), x.ormqr(tau, other)).
METHODS = ["lu", "lu_solve", "geqrf", "ormqr"]
for _name, _fn in TOP_LEVEL.items():
    _fn.__name__ = _fn.__qualname__ = _name
    _fn.__module__ = "flambeau"
del _name, _fn
