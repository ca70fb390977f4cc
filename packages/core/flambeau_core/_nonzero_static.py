"""``nonzero_static``: ``nonzero`` with a fixed number of rows (for code that needs shapes known ahead)."""

from __future__ import annotations

from flambeau_core import _C
from flambeau_core._composing import check_int, check_tensor


def nonzero_static(input: _C.Tensor, *, size: int, fill_value: int = -1) -> _C.Tensor:  # noqa: A002
    """nonzero_static(input, *, size, fill_value=-1) -> Tensor

    The indices of the nonzero elements of ``input`` as ``nonzero`` gives them (an int64 ``(n, input.dim())``
    tensor, row-major order), cut or padded to exactly ``size`` rows: the first ``size`` indices, then rows
    of ``fill_value``.

    Example:
        >>> import flambeau_core as fc
        >>> fc.nonzero_static(fc.tensor([0, 1, 0, 2]), size=3).tolist()
        [[1], [3], [-1]]
    """
    check_tensor("nonzero_static", input)
    check_int("nonzero_static", size, "size")
    check_int("nonzero_static", fill_value, "fill_value")
    if size < 0:
        raise _C.FlambeauError(f"[nonzero_static] 'size' must be an non-negative integer, got {size}")
    found = _C._nonzero(input if input.dtype == _C.bool else input != 0)  # != 0: every dtype, float16 too
    if found.shape[0] >= size:
        return found[:size]
    padding = _C.full((size - found.shape[0], input.dim()), fill_value, dtype=_C.int64, device=input.device)
    return _C.cat([found, padding], 0)


def _method(self: _C.Tensor, *, size: int, fill_value: int = -1) -> _C.Tensor:
    return nonzero_static(self, size=size, fill_value=fill_value)


_method.__doc__ = nonzero_static.__doc__


def install() -> None:
    import flambeau_core

    flambeau_core.nonzero_static = nonzero_static
    _C.Tensor.nonzero_static = _method
