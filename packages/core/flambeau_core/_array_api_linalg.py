"""``flambeau.array_api.linalg``: the standard's linear algebra extension.

Each function follows the standard's signature (positional-only arrays,
``axis``/``keepdims``/``rtol`` keywords) over ``flambeau.linalg``, which keeps
PyTorch's. Differences of meaning: docs/design/array-api.md.
"""

from __future__ import annotations

import flambeau_core as _fc


def _la():
    import flambeau_core.linalg as la

    return la


def cholesky(x, /, *, upper: bool = False):
    return _la().cholesky(x, upper=upper)


def _promoted(name: str, x1, x2):
    """``x1`` and ``x2`` in the standard's promoted dtype (flambeau.linalg wants one dtype)."""
    from flambeau_core.array_api import _binary_operands

    return _binary_operands(name, x1, x2)


def cross(x1, x2, /, *, axis: int = -1):
    x1, x2 = _promoted("cross", x1, x2)
    shape = _fc.broadcast_shapes(tuple(x1.shape), tuple(x2.shape))  # the standard broadcasts the other axes
    if not -len(shape) <= axis < len(shape) or x1.shape[axis] != 3 or x2.shape[axis] != 3:
        raise ValueError(f"cross: axis {axis} must have size 3, got shapes {tuple(x1.shape)} and {tuple(x2.shape)}")
    return _la().cross(x1.expand(shape), x2.expand(shape), dim=axis)


def det(x, /):
    return _la().det(x)


def diagonal(x, /, *, offset: int = 0):
    return _fc.diagonal(x, offset, -2, -1)


def eigh(x, /):
    return _la().eigh(x)


def eigvalsh(x, /):
    return _la().eigvalsh(x)


def inv(x, /):
    return _la().inv(x)


def matmul(x1, x2, /):
    from flambeau_core.array_api import matmul as mm

    return mm(x1, x2)  # the namespace's: the standard's promotion, uint16/32/64 too


def matrix_norm(x, /, *, keepdims: bool = False, ord="fro"):  # noqa: A002
    return _la().matrix_norm(x, ord, dim=(-2, -1), keepdim=keepdims)


def matrix_power(x, n, /):
    return _la().matrix_power(x, n)


def matrix_rank(x, /, *, rtol=None):
    return _la().matrix_rank(x, rtol=rtol)


def matrix_transpose(x, /):
    from flambeau_core.array_api import matrix_transpose as mt

    return mt(x)


def outer(x1, x2, /):
    if x1.ndim != 1 or x2.ndim != 1:
        raise ValueError(f"outer: expects 1-d arrays, got shapes {tuple(x1.shape)} and {tuple(x2.shape)}")
    from flambeau_core.array_api import matmul

    x1, x2 = _promoted("outer", x1, x2)
    if x1.dtype != _fc.bool:
        return matmul(x1.unsqueeze(-1), x2.unsqueeze(0))  # uint16/32/64 too
    return _la().outer(x1, x2) if hasattr(_la(), "outer") else _fc.outer(x1, x2)


def pinv(x, /, *, rtol=None):
    return _la().pinv(x, rtol=rtol)


def qr(x, /, *, mode: str = "reduced"):
    if mode not in ("reduced", "complete"):
        raise ValueError(f"qr: mode must be 'reduced' or 'complete', got {mode!r}")
    return _la().qr(x, mode=mode)


def slogdet(x, /):
    return _la().slogdet(x)


def solve(x1, x2, /):
    """x1 @ out = x2; a 1-d x2 is one vector (the standard's rule, stated without PyTorch's batch heuristic)."""
    x1, x2 = _promoted("solve", x1, x2)
    if x2.ndim == 1:
        return _la().solve(x1, x2.unsqueeze(-1)).squeeze(-1)
    return _la().solve(x1, x2)


def svd(x, /, *, full_matrices: bool = True):
    return _la().svd(x, full_matrices=full_matrices)


def svdvals(x, /):
    return _la().svdvals(x)


def tensordot(x1, x2, /, *, axes=2):
    from flambeau_core.array_api import tensordot as td

    return td(x1, x2, axes=axes)


def trace(x, /, *, offset: int = 0, dtype=None):
    d = _fc.diagonal(x, offset, -2, -1)
    from flambeau_core.array_api import sum as xsum

    return xsum(d, axis=-1, dtype=dtype)


def vecdot(x1, x2, /, *, axis: int = -1):
    from flambeau_core.array_api import vecdot as vd

    return vd(x1, x2, axis=axis)


def vector_norm(x, /, *, axis=None, keepdims: bool = False, ord=2):  # noqa: A002
    return _la().vector_norm(x, ord, dim=axis, keepdim=keepdims)
