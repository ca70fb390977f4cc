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
        """Pads the last dims of ``input`` by ``padding`` (``(left, right, top, bottom, front, back)``, as many pairs
        as the layer's dims) with ``value``.

        Example:
            >>> import flambeau_core as fc
            >>> import flambeau_nn as nn
            >>> nn.ConstantPad1d((1, 2), 3.5)(fc.ones(1, 2)).tolist()
            [[3.5, 1.0, 1.0, 3.5, 3.5]]
        """
        return F.pad(input, self.padding, "constant", self.value)

    def extra_repr(self) -> str:
        """``padding`` (as a tuple of pairs' entries) and ``value``, as shown inside ``repr(module)``.

        Example:
            >>> import flambeau_nn as nn
            >>> nn.ConstantPad1d(2, 3.5).extra_repr()
            'padding=(2, 2), value=3.5'
        """
        return f"padding={self.padding}, value={self.value}"


class ConstantPad1d(_ConstantPadNd):
    """Pads the last dim with ``value``; ``padding`` is an int or ``(left, right)``.

    Example:
        >>> import flambeau_core as fc
        >>> import flambeau_nn as nn
        >>> nn.ConstantPad1d(2, 0.5)(fc.ones(3, 4)).shape
        flambeau.Size([3, 8])
    """

    _n = 1


class ConstantPad2d(_ConstantPadNd):
    """Pads the last 2 dims with ``value``; ``padding`` is an int or ``(left, right, top, bottom)``.

    Example:
        >>> import flambeau_core as fc
        >>> import flambeau_nn as nn
        >>> nn.ConstantPad2d((1, 0, 0, 1), -1.0)(fc.zeros(1, 1, 1)).tolist()
        [[[-1.0, 0.0], [-1.0, -1.0]]]
    """

    _n = 2


class ConstantPad3d(_ConstantPadNd):
    """Pads the last 3 dims with ``value``; ``padding`` is an int or ``(left, right, top, bottom, front, back)``.

    Example:
        >>> import flambeau_core as fc
        >>> ConstantPad3d(1, 2.0)(fc.ones(1, 1, 1, 1)).shape
        flambeau.Size([1, 3, 3, 3])
    """

    _n = 3


class ZeroPad1d(ConstantPad1d):
    """Pads the last dim with zeros.

    Example:
        >>> import flambeau_core as fc
        >>> import flambeau_nn as nn
        >>> nn.ZeroPad1d((1, 2))(fc.ones(1, 2)).tolist()
        [[0.0, 1.0, 1.0, 0.0, 0.0]]
    """

    def __init__(self, padding: Any) -> None:
        super().__init__(padding, 0.0)

    def extra_repr(self) -> str:
        """The ``(left, right)`` padding, as shown inside ``repr(module)``.

        Example:
            >>> import flambeau_nn as nn
            >>> nn.ZeroPad1d(2).extra_repr()
            '(2, 2)'
        """
        return f"{self.padding}"


class ZeroPad2d(ConstantPad2d):
    """Pads the last 2 dims with zeros.

    Example:
        >>> import flambeau_core as fc
        >>> ZeroPad2d(1)(fc.ones(1, 2, 2)).shape
        flambeau.Size([1, 4, 4])
    """

    def __init__(self, padding: Any) -> None:
        super().__init__(padding, 0.0)

    def extra_repr(self) -> str:
        """The ``(left, right, top, bottom)`` padding, as shown inside ``repr(module)``.

        Example:
            >>> import flambeau_nn as nn
            >>> nn.ZeroPad2d((1, 0, 2, 0)).extra_repr()
            '(1, 0, 2, 0)'
        """
        return f"{self.padding}"


class ZeroPad3d(ConstantPad3d):
    """Pads the last 3 dims with zeros.

    Example:
        >>> import flambeau_core as fc
        >>> ZeroPad3d((1, 0, 0, 0, 0, 2))(fc.ones(1, 2, 2, 2)).shape
        flambeau.Size([1, 4, 2, 3])
    """

    def __init__(self, padding: Any) -> None:
        super().__init__(padding, 0.0)

    def extra_repr(self) -> str:
        """The ``(left, right, top, bottom, front, back)`` padding, as shown inside ``repr(module)``.

        Example:
            >>> import flambeau_nn as nn
            >>> nn.ZeroPad3d(1).extra_repr()
            '(1, 1, 1, 1, 1, 1)'
        """
        return f"{self.padding}"


class _PadNd(Module):
    _n = 1
    _mode = "reflect"

    def __init__(self, padding: Any) -> None:
        super().__init__()
        self.padding = _padding(padding, self._n, type(self).__name__)

    def forward(self, input: Tensor) -> Tensor:
        """Pads the last dims of ``input`` by ``padding`` (``(left, right, top, bottom, front, back)``, as many pairs
        as the layer's dims), filling with the layer's mode: the reflection, the edge value, or the other side
        (circular).

        Example:
            >>> import flambeau_core as fc
            >>> import flambeau_nn as nn
            >>> x = fc.tensor([[1.0, 2.0, 3.0]])
            >>> nn.ReflectionPad1d(2)(x).tolist()
            [[3.0, 2.0, 1.0, 2.0, 3.0, 2.0, 1.0]]
            >>> nn.ReplicationPad1d(2)(x).tolist()
            [[1.0, 1.0, 1.0, 2.0, 3.0, 3.0, 3.0]]
            >>> nn.CircularPad1d(2)(x).tolist()
            [[2.0, 3.0, 1.0, 2.0, 3.0, 1.0, 2.0]]
        """
        return F.pad(input, self.padding, self._mode)

    def extra_repr(self) -> str:
        """The padding as a tuple, as shown inside ``repr(module)``.

        Example:
            >>> import flambeau_nn as nn
            >>> nn.ReflectionPad2d((1, 1, 2, 0)).extra_repr()
            '(1, 1, 2, 0)'
        """
        return f"{self.padding}"


class ReflectionPad1d(_PadNd):
    """Pads the last dim of a ``(C, L)`` or ``(N, C, L)`` input with its reflection (edge not repeated).

    Example:
        >>> import flambeau_core as fc
        >>> import flambeau_nn as nn
        >>> nn.ReflectionPad1d((3, 1))(fc.arange(4.0).reshape(1, 1, 4)).tolist()
        [[[3.0, 2.0, 1.0, 0.0, 1.0, 2.0, 3.0, 2.0]]]
    """

    _n, _mode = 1, "reflect"


class ReflectionPad2d(_PadNd):
    """Pads the last 2 dims of a ``(C, H, W)`` or ``(N, C, H, W)`` input with their reflection.

    Example:
        >>> import flambeau_core as fc
        >>> import flambeau_nn as nn
        >>> nn.ReflectionPad2d(1)(fc.arange(4.0).reshape(1, 1, 2, 2)).tolist()
        [[[[3.0, 2.0, 3.0, 2.0], [1.0, 0.0, 1.0, 0.0], [3.0, 2.0, 3.0, 2.0], [1.0, 0.0, 1.0, 0.0]]]]
    """

    _n, _mode = 2, "reflect"


class ReplicationPad1d(_PadNd):
    """Pads the last dim by repeating the edge values.

    Example:
        >>> import flambeau_core as fc
        >>> import flambeau_nn as nn
        >>> nn.ReplicationPad1d((2, 1))(fc.arange(3.0).reshape(1, 1, 3)).tolist()
        [[[0.0, 0.0, 0.0, 1.0, 2.0, 2.0]]]
    """

    _n, _mode = 1, "replicate"


class ReplicationPad2d(_PadNd):
    """Pads the last 2 dims by repeating the edge values.

    Example:
        >>> import flambeau_core as fc
        >>> import flambeau_nn as nn
        >>> nn.ReplicationPad2d(1)(fc.arange(4.0).reshape(1, 1, 2, 2)).tolist()
        [[[[0.0, 0.0, 1.0, 1.0], [0.0, 0.0, 1.0, 1.0], [2.0, 2.0, 3.0, 3.0], [2.0, 2.0, 3.0, 3.0]]]]
    """

    _n, _mode = 2, "replicate"


class CircularPad1d(_PadNd):
    """Pads the last dim by wrapping around (periodic boundary).

    Example:
        >>> import flambeau_core as fc
        >>> import flambeau_nn as nn
        >>> nn.CircularPad1d((1, 2))(fc.arange(3.0).reshape(1, 1, 3)).tolist()
        [[[2.0, 0.0, 1.0, 2.0, 0.0, 1.0]]]
    """

    _n, _mode = 1, "circular"


class CircularPad2d(_PadNd):
    """Pads the last 2 dims by wrapping around (periodic boundary).

    Example:
        >>> import flambeau_core as fc
        >>> import flambeau_nn as nn
        >>> nn.CircularPad2d(1)(fc.arange(4.0).reshape(1, 1, 2, 2)).tolist()
        [[[[3.0, 2.0, 3.0, 2.0], [1.0, 0.0, 1.0, 0.0], [3.0, 2.0, 3.0, 2.0], [1.0, 0.0, 1.0, 0.0]]]]
    """

    _n, _mode = 2, "circular"


class ReflectionPad3d(_PadNd):
    """Pads the last 3 dims of a ``(C, D, H, W)`` or ``(N, C, D, H, W)`` input with their reflection.

    Example:
        >>> import flambeau_core as fc
        >>> ReflectionPad3d(1)(fc.ones(1, 1, 2, 2, 2)).shape
        flambeau.Size([1, 1, 4, 4, 4])
    """

    _n, _mode = 3, "reflect"


class ReplicationPad3d(_PadNd):
    """Pads the last 3 dims by repeating the edge values.

    Example:
        >>> import flambeau_core as fc
        >>> ReplicationPad3d(2)(fc.ones(1, 1, 1, 1, 1)).shape
        flambeau.Size([1, 1, 5, 5, 5])
    """

    _n, _mode = 3, "replicate"


class CircularPad3d(_PadNd):
    """Pads the last 3 dims by wrapping around (periodic boundary).

    Example:
        >>> import flambeau_core as fc
        >>> CircularPad3d(1)(fc.ones(1, 1, 2, 2, 2)).shape
        flambeau.Size([1, 1, 4, 4, 4])
    """

    _n, _mode = 3, "circular"
