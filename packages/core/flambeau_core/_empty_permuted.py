"""``empty_permuted``: an uninitialized tensor whose memory holds its dims in a given order."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from flambeau_core import _C
from flambeau_core._composing import call_as, is_int


def empty_permuted(
    size: Sequence[int],
    physical_layout: Sequence[int],
    *,
    dtype: Any = None,
    layout: Any = None,
    device: Any = None,
    requires_grad: bool = False,
    pin_memory: bool = False,
) -> _C.Tensor:
    """empty_permuted(size, physical_layout, *, dtype=None, layout=None, device=None, requires_grad=False,
    pin_memory=False) -> Tensor

    An uninitialized tensor of shape ``size`` laid out in memory with its dims in the order
    ``physical_layout`` (outermost first): ``empty([size[i] for i in physical_layout]).permute(inverse)``.
    ``physical_layout = (0, 1, ..., n - 1)`` is a contiguous tensor; for a 4-D tensor, ``(0, 2, 3, 1)`` is
    channels-last. ``layout`` may only be ``strided`` (None); ``pin_memory`` is accepted as in ``empty``.

    Example:
        >>> import flambeau_core as fc
        >>> fc.empty_permuted((2, 3, 4), (2, 0, 1)).stride()
        (3, 1, 6)
    """
    for what, value in (("size", size), ("physical_layout", physical_layout)):
        if not isinstance(value, (list, tuple)) or not all(is_int(v) for v in value):
            raise TypeError(f"[empty_permuted] expected '{what}' to be a list or tuple of ints, got {value!r}")
    if layout is not None and str(layout) not in ("torch.strided", "flambeau.strided", "strided"):
        raise _C.FlambeauError(f"[empty_permuted] only the strided layout is supported, got {layout}")
    if len(size) != len(physical_layout):
        raise _C.FlambeauError(
            "[empty_permuted] Number of dimensions in size does not match the length of the physical_layout; "
            f"i.e. len(size) = {len(size)} is not equal to len(physical_layout) = {len(physical_layout)}"
        )
    n = len(size)
    if any(not 0 <= d < n for d in physical_layout):
        raise IndexError(f"[empty_permuted] physical_layout {tuple(physical_layout)} names a dim outside [0, {n - 1}]")
    if len(set(physical_layout)) != n:
        raise _C.FlambeauError(f"[empty_permuted] Duplicate dim not allowed: {tuple(physical_layout)}")
    physical = _C.empty([size[d] for d in physical_layout], dtype=dtype, device=device)
    result = physical.permute([list(physical_layout).index(d) for d in range(n)])
    if pin_memory:
        result = call_as("empty_permuted", result.pin_memory)  # its errors (no device to pin for) worded for us
    return result.requires_grad_() if requires_grad else result


def install() -> None:
    import flambeau_core

    flambeau_core.empty_permuted = empty_permuted
