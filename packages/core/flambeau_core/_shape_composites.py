"""Shape-changing ops PyTorch spells on their own, composed of core ops: ``Tensor.sum_to_size``,
``diagflat`` and ``constant_pad_nd``."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from flambeau_core import _C
from flambeau_core._composing import call_as, check_int, check_tensor, is_int


def _size_arg(name: str, size: tuple) -> tuple[int, ...]:
    """``f(2, 3)``, ``f((2, 3))`` and ``f(())`` alike, as PyTorch's variadic sizes."""
    if not size:
        raise TypeError(f"[{name}] missing the size argument")
    if len(size) == 1 and isinstance(size[0], Sequence) and not isinstance(size[0], str):
        size = tuple(size[0])
    for i, n in enumerate(size):
        if not is_int(n):
            raise TypeError(f"[{name}] expected a size of ints, got {type(n).__name__} at position {i}")
    return tuple(size)


def sum_to_size(self: _C.Tensor, *size: Any) -> _C.Tensor:
    """sum_to_size(*size) -> Tensor

    ``self`` summed down to ``size``, which must be expandable to ``self.shape`` (the reverse of
    ``expand``: the leading dims ``size`` lacks and its size-1 dims are summed, keeping those dims).
    ``self`` itself when ``size`` is already its shape.

    Example:
        >>> import flambeau_core as fc
        >>> fc.ones(2, 3).sum_to_size(1, 3).tolist()
        [[2.0, 2.0, 2.0]]
    """
    target = _size_arg("sum_to_size", size)
    shape = tuple(self.shape)
    lead = len(shape) - len(target)
    if lead < 0 or any(t not in (s, 1) for t, s in zip(target, shape[lead:], strict=True)):
        raise _C.FlambeauError(f"[sum_to_size] size {target} is not expandable to the tensor's shape {shape}")
    if target == shape:
        return self
    result = self.sum(tuple(range(lead))) if lead else self
    kept = tuple(i for i, (t, s) in enumerate(zip(target, shape[lead:], strict=True)) if t == 1 and s != 1)
    return result.sum(kept, keepdim=True) if kept else result


def diagflat(input: _C.Tensor, offset: int = 0) -> _C.Tensor:  # noqa: A002
    """diagflat(input, offset=0) -> Tensor

    A 2-D tensor with the elements of ``input`` (flattened, any shape) on its ``offset``-th diagonal
    (above the main one for ``offset > 0``, below for ``offset < 0``) and zeros elsewhere.

    Example:
        >>> import flambeau_core as fc
        >>> fc.diagflat(fc.tensor([[1, 2]]), 1).tolist()
        [[0, 1, 0], [0, 0, 2], [0, 0, 0]]
    """
    check_tensor("diagflat", input)
    check_int("diagflat", offset, "offset")
    side = input.numel() + abs(offset)
    if side * side * input.element_size() >= 2**63:  # before diag's intermediates of that size are made
        raise _C.FlambeauError(
            f"[diagflat] a {side} x {side} result of dtype {input.dtype.name} (offset {offset}) is too large: "
            "its size in bytes overflows int64"
        )
    return call_as("diagflat", _C.diag, input.reshape(-1), offset)


def constant_pad_nd(input: _C.Tensor, pad: Sequence[int], value: Any = 0) -> _C.Tensor:  # noqa: A002
    """constant_pad_nd(input, pad, value=0) -> Tensor

    ``input`` padded with ``value`` (cast to input's dtype): ``pad = (left, right, top, bottom, ...)``
    pads the last dim first, then the ones before it; a negative pad crops. PyTorch's ``F.pad`` in its
    ``'constant'`` mode.

    Example:
        >>> import flambeau_core as fc
        >>> fc.constant_pad_nd(fc.tensor([[1, 2]]), (1, -1), 9).tolist()
        [[9, 1]]
    """
    check_tensor("constant_pad_nd", input)
    if not isinstance(pad, (list, tuple)) or not all(is_int(p) for p in pad):
        raise TypeError(f"[constant_pad_nd] expected pad as a list or tuple of ints, got {pad!r}")
    # PyTorch crops (the negative pads) before it pads: the crops alone must leave a size >= 0
    for i in range(min(len(pad) // 2, input.dim())):
        dim, left, right = input.dim() - 1 - i, pad[2 * i], pad[2 * i + 1]
        if input.shape[dim] + min(left, 0) + min(right, 0) < 0:
            raise _C.FlambeauError(
                f"[constant_pad_nd] the negative pads ({left}, {right}) crop more than the {input.shape[dim]} "
                f"elements of dim {dim} of input shape {tuple(input.shape)}"
            )
    # The value as input's dtype would hold it (a complex or out-of-range value is refused here, as PyTorch's).
    fill = call_as("constant_pad_nd", _C.full, (), value, dtype=input.dtype, device=input.device).item()
    if input.dtype.is_complex:  # the padding kernel is real: the real and imaginary planes apart
        fill = complex(fill)
        parts = (_pad(input.real, pad, fill.real), _pad(input.imag, pad, fill.imag))
        return _C.complex(*parts)
    return _pad(input, pad, fill)


def _pad(x: _C.Tensor, pad: Sequence[int], fill: Any) -> _C.Tensor:
    return call_as("constant_pad_nd", _C._pad_nd, x, list(pad), "constant", float(fill))


def install() -> None:
    import flambeau_core

    flambeau_core.diagflat = diagflat
    flambeau_core.constant_pad_nd = constant_pad_nd
    _C.Tensor.sum_to_size = sum_to_size
    _C.Tensor.diagflat = diagflat
