"""Padding layers: ``ZeroPad``, ``ConstantPad``, ``ReflectionPad``, ``ReplicationPad`` and ``CircularPad`` (1d, 2d)."""

from __future__ import annotations

from typing import Any

from flambeau_core import Tensor

from flambeau_nn import functional as F
from flambeau_nn.modules.module import Module

__all__ = [
    "ConstantPad1d",
    "ConstantPad2d",
    "ZeroPad1d",
    "ZeroPad2d",
    "ReflectionPad1d",
    "ReflectionPad2d",
    "ReplicationPad1d",
    "ReplicationPad2d",
    "CircularPad1d",
    "CircularPad2d",
]


def _padding(padding: Any, n: int, name: str) -> tuple[int, ...]:
    # An int pads every side; else a tuple of 2 * n ints (left, right, top, bottom).
    if isinstance(padding, int) and not isinstance(padding, bool):
        return (padding,) * (2 * n)
    if isinstance(padding, (tuple, list)) and len(padding) == 2 * n:
        return tuple(padding)
    raise TypeError(f"[{name}] padding must be an int or a tuple of {2 * n} ints, got {padding!r}")


class _ConstantPadNd(Module):
    _n = 1

    def __init__(self, padding: Any, value: float) -> None:
        super().__init__()
        self.value = value
        self.padding = _padding(padding, self._n, type(self).__name__)

    def forward(self, input: Tensor) -> Tensor:
        return F.pad(input, self.padding, "constant", self.value)

    def extra_repr(self) -> str:
        return f"padding={self.padding}, value={self.value}"


class ConstantPad1d(_ConstantPadNd):
    """Pads the last dim with ``value``; ``padding`` is an int or ``(left, right)``."""

    _n = 1


class ConstantPad2d(_ConstantPadNd):
    """Pads the last 2 dims with ``value``; ``padding`` is an int or ``(left, right, top, bottom)``."""

    _n = 2


class ZeroPad1d(ConstantPad1d):
    """Pads the last dim with zeros."""

    def __init__(self, padding: Any) -> None:
        super().__init__(padding, 0.0)

    def extra_repr(self) -> str:
        return f"{self.padding}"


class ZeroPad2d(ConstantPad2d):
    """Pads the last 2 dims with zeros.

    Example:
        >>> import flambeau_core as fc
        >>> ZeroPad2d(1)(fc.ones(1, 2, 2)).shape
        (1, 4, 4)
    """

    def __init__(self, padding: Any) -> None:
        super().__init__(padding, 0.0)

    def extra_repr(self) -> str:
        return f"{self.padding}"


class _PadNd(Module):
    _n = 1
    _mode = "reflect"

    def __init__(self, padding: Any) -> None:
        super().__init__()
        self.padding = _padding(padding, self._n, type(self).__name__)

    def forward(self, input: Tensor) -> Tensor:
        return F.pad(input, self.padding, self._mode)

    def extra_repr(self) -> str:
        return f"{self.padding}"


class ReflectionPad1d(_PadNd):
    """Pads the last dim of a ``(C, L)`` or ``(N, C, L)`` input with its reflection (edge not repeated)."""

    _n, _mode = 1, "reflect"


class ReflectionPad2d(_PadNd):
    """Pads the last 2 dims of a ``(C, H, W)`` or ``(N, C, H, W)`` input with their reflection."""

    _n, _mode = 2, "reflect"


class ReplicationPad1d(_PadNd):
    """Pads the last dim by repeating the edge values."""

    _n, _mode = 1, "replicate"


class ReplicationPad2d(_PadNd):
    """Pads the last 2 dims by repeating the edge values."""

    _n, _mode = 2, "replicate"


class CircularPad1d(_PadNd):
    """Pads the last dim by wrapping around (periodic boundary)."""

    _n, _mode = 1, "circular"


class CircularPad2d(_PadNd):
    """Pads the last 2 dims by wrapping around (periodic boundary)."""

    _n, _mode = 2, "circular"
