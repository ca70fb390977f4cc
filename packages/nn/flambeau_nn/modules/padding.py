"""Padding layers: ``ZeroPad``, ``ConstantPad``, ``ReflectionPad``, ``ReplicationPad``, ``CircularPad`` (1d, 2d, 3d)."""

from __future__ import annotations

from typing import Any

from flambeau_core import Tensor

from flambeau_nn import functional as F
from flambeau_nn.modules.module import Module

__all__ = [
    "ConstantPad1d",
    "ConstantPad2d",
    "ConstantPad3d",
    "ZeroPad1d",
    "ZeroPad2d",
    "ZeroPad3d",
    "ReflectionPad1d",
    "ReflectionPad2d",
    "ReflectionPad3d",
    "ReplicationPad1d",
    "ReplicationPad2d",
    "ReplicationPad3d",
    "CircularPad1d",
    "CircularPad2d",
    "CircularPad3d",
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


class ConstantPad3d(_ConstantPadNd):
    """Pads the last 3 dims with ``value``; ``padding`` is an int or ``(left, right, top, bottom, front, back)``.

    Example:
        >>> import flambeau_core as fc
        >>> ConstantPad3d(1, 2.0)(fc.ones(1, 1, 1, 1)).shape
        (1, 3, 3, 3)
    """

    _n = 3


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


class ZeroPad3d(ConstantPad3d):
    """Pads the last 3 dims with zeros.

    Example:
        >>> import flambeau_core as fc
        >>> ZeroPad3d((1, 0, 0, 0, 0, 2))(fc.ones(1, 2, 2, 2)).shape
        (1, 4, 2, 3)
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


class ReflectionPad3d(_PadNd):
    """Pads the last 3 dims of a ``(C, D, H, W)`` or ``(N, C, D, H, W)`` input with their reflection.

    Example:
        >>> import flambeau_core as fc
        >>> ReflectionPad3d(1)(fc.ones(1, 1, 2, 2, 2)).shape
        (1, 1, 4, 4, 4)
    """

    _n, _mode = 3, "reflect"


class ReplicationPad3d(_PadNd):
    """Pads the last 3 dims by repeating the edge values.

    Example:
        >>> import flambeau_core as fc
        >>> ReplicationPad3d(2)(fc.ones(1, 1, 1, 1, 1)).shape
        (1, 1, 5, 5, 5)
    """

    _n, _mode = 3, "replicate"


class CircularPad3d(_PadNd):
    """Pads the last 3 dims by wrapping around (periodic boundary).

    Example:
        >>> import flambeau_core as fc
        >>> CircularPad3d(1)(fc.ones(1, 1, 2, 2, 2)).shape
        (1, 1, 4, 4, 4)
    """

    _n, _mode = 3, "circular"
