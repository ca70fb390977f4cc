"""``Variable``: PyTorch's pre-0.4 wrapper, kept for old programs (``from torch.autograd import Variable``).

Since PyTorch 0.4 every tensor is a variable: ``Variable(t)`` returns an alias of ``t``'s data
(a detached view sharing its memory) with ``requires_grad`` as given, ``isinstance(t, Variable)``
is true of every tensor, and ``volatile=`` only warns.

Example:
    >>> import flambeau_core as fc
    >>> v = Variable(fc.ones(2), requires_grad=True)
    >>> v.requires_grad, isinstance(fc.zeros(1), Variable)
    (True, True)
"""

from __future__ import annotations

import warnings
from typing import Any

import flambeau_core
from flambeau_core import Tensor

__all__ = ["Variable"]


class _VariableMeta(type):
    def __instancecheck__(cls, other: Any) -> bool:
        return isinstance(other, Tensor)


class Variable(metaclass=_VariableMeta):
    """Deprecated: tensors are variables. ``Variable(data, requires_grad=False, volatile=False)``
    returns a detached alias of ``data`` (the same memory) with ``requires_grad`` set.

    Example:
        >>> import flambeau as fb
        >>> from flambeau.autograd import Variable
        >>> data = fb.zeros(2)
        >>> v = Variable(data, requires_grad=True)
        >>> v.requires_grad, isinstance(data, Variable)
        (True, True)
        >>> v.data_ptr() == data.data_ptr()
        True
    """

    def __new__(cls, data: Any = None, requires_grad: bool = False, volatile: bool = False) -> Any:  # type: ignore[misc]
        if volatile:
            warnings.warn(
                "volatile was removed and now has no effect. Use `with flambeau.no_grad():` instead.",
                UserWarning,
                stacklevel=2,
            )
        if data is None:
            data = flambeau_core.empty(0)
        if not isinstance(data, Tensor):
            raise TypeError(f"[Variable] Variable data has to be a tensor, but got {type(data).__name__}")
        out = data.detach()
        if requires_grad:
            out.requires_grad_(True)
        return out
