"""``Size``: the tuple subclass PyTorch names sizes with (``torch.Size``).

``Tensor.shape`` and ``Tensor.size()`` return plain tuples (built in C++, the
cheapest form on a hot attribute); a ``Size`` compares equal to them, hashes
alike, and is accepted wherever a shape is (it is a tuple).

Example:
    >>> import flambeau_core as fc
    >>> s = fc.Size([2, 3])
    >>> s.numel(), s == fc.zeros(2, 3).shape, fc.zeros(s).shape
    (6, True, (2, 3))
"""

from __future__ import annotations

import operator
from collections.abc import Iterable
from typing import Any, SupportsIndex


class Size(tuple):
    """A tensor's sizes: a tuple of ints with :meth:`numel`; slicing and ``+``/``*`` keep the type.

    Example:
        >>> import flambeau as fb
        >>> s = fb.Size([2, 3])
        >>> s, s[1:], s + (4,), s == (2, 3)
        (flambeau.Size([2, 3]), flambeau.Size([3]), flambeau.Size([2, 3, 4]), True)
    """

    def __new__(cls, sizes: Iterable[SupportsIndex] = ()) -> Size:
        items = tuple(sizes)
        out = []
        for i, s in enumerate(items):
            try:
                out.append(operator.index(s))
            except TypeError:
                raise TypeError(f"[Size] takes an iterable of 'int' (item {i} is '{type(s).__name__}')") from None
        return super().__new__(cls, out)

    def numel(self) -> int:
        """The number of elements a tensor of these sizes holds (1 for ``Size([])``).

        Example:
            >>> import flambeau as fb
            >>> fb.Size([2, 3]).numel(), fb.Size([]).numel()
            (6, 1)
        """
        n = 1
        for s in self:
            n *= s
        return n

    def __getitem__(self, index: Any) -> Any:
        item = super().__getitem__(index)
        return Size(item) if isinstance(index, slice) else item

    def __add__(self, other: Any) -> Size:
        if not isinstance(other, tuple):
            return NotImplemented
        return Size(tuple(self) + tuple(other))

    def __radd__(self, other: Any) -> Size:
        if not isinstance(other, tuple):
            return NotImplemented
        return Size(tuple(other) + tuple(self))

    def __mul__(self, n: SupportsIndex) -> Size:
        return Size(tuple(self) * operator.index(n))

    __rmul__ = __mul__

    def __repr__(self) -> str:
        return f"flambeau.Size({list(self)})"

    __str__ = __repr__

    def __reduce__(self) -> tuple[Any, ...]:
        return (Size, (tuple(self),))
