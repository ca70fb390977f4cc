"""Python protocols of Tensor that PyTorch defines in Python: ``format``, iteration, ``in``.

The numeric conversions (``float``, ``int``, ``operator.index``, ``bool``, ``len``) are
bound in C++; ``math.floor``/``math.isfinite``... reach a 0-d or one-element tensor
through ``__float__``. ``operator.index`` stays in C++ because indexing with a 0-d
tensor calls it (a Python ``__index__`` measured +0.4 to +1.1 us per ``x[i]``); it
differs from PyTorch's in two corners (docs/core.md): several elements raise
FlambeauError, not TypeError, and a bool tensor's ``__index__`` returns a bool
(Python warns, then converts it). As in PyTorch 2.13, ``round(t)`` and
``math.trunc(t)`` raise TypeError (Tensor defines neither ``__round__`` nor
``__trunc__``): round ``t.item()``, or call ``t.round(decimals=n)`` for a tensor.

Example:
    >>> import flambeau_core as fc
    >>> f"{fc.tensor(0.123456):.3f}"
    '0.123'
    >>> [x.tolist() for x in fc.tensor([[1, 2], [3, 4]])]
    [[1, 2], [3, 4]]
    >>> 3 in fc.tensor([1, 2, 3])
    True
"""

from __future__ import annotations

from collections.abc import Iterator
from numbers import Number
from typing import Any

from flambeau_core import _C


def tensor_format(self: _C.Tensor, format_spec: str) -> str:
    """``format(t, spec)``: a 0-d tensor formats as its Python number; others only with an empty spec."""
    # PyTorch formats the number only for exact Tensors (a Parameter goes to object.__format__).
    if type(self) is _C.Tensor and self.dim() == 0:
        return format(self.item(), format_spec)
    if format_spec:
        raise TypeError(
            f"[format] unsupported format string passed to {type(self).__name__}.__format__: "
            f"{format_spec!r} applies to 0-d tensors only, got shape {tuple(self.shape)}; "
            "format t.item() or t.tolist() instead"
        )
    return str(self)


def tensor_iter(self: _C.Tensor) -> Iterator[_C.Tensor]:
    """``iter(t)``: the views ``t[0], t[1], ...`` along the first dim."""
    if self.dim() == 0:
        raise TypeError("[iter] iteration over a 0-d tensor")
    return iter(self.unbind(0))


def tensor_contains(self: _C.Tensor, element: Any) -> bool:
    """``element in t``: True if any element of ``t`` equals ``element`` (a tensor or a number)."""
    if isinstance(element, (_C.Tensor, Number)):
        return bool((self == element).any().item())
    # A RuntimeError (FlambeauError) as PyTorch raises, so a program's `except RuntimeError` still holds.
    raise _C.FlambeauError(
        f"[contains] Tensor.__contains__ only supports Tensor or scalar, but you passed in a {type(element)}"
    )


def install() -> None:
    _C.Tensor.__format__ = tensor_format
    _C.Tensor.__iter__ = tensor_iter
    _C.Tensor.__contains__ = tensor_contains
