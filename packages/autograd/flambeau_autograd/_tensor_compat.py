"""Tensor attributes PyTorch programs still touch: ``as_subclass`` (the same memory as an instance of a
Tensor subclass, still in the graph), the removed ``volatile`` flag (False, with PyTorch's warnings),
``name`` (None: flambeau's tensors are unnamed, as PyTorch's outside its tracer) and ``module_load`` (what
``load_state_dict`` swaps in for a parameter)."""

from __future__ import annotations

import warnings
from typing import Any

from flambeau_core import Tensor

from flambeau_autograd.function import Function


class Alias(Function):
    """The identity of autograd, whose output is a new object of a given Tensor subclass over the same
    memory (``as_subclass``); its node reads ``AliasBackward`` as PyTorch's ``AliasBackward0``."""

    @staticmethod
    def forward(ctx: Any, x: Tensor, cls: type) -> Tensor:
        return cls(x)

    @staticmethod
    def backward(ctx: Any, grad: Tensor) -> tuple[Tensor, None]:
        return grad, None


def as_subclass(self: Tensor, cls: type) -> Tensor:
    """as_subclass(cls) -> Tensor

    A new ``cls`` object over this tensor's memory (``cls`` a subclass of Tensor): writes to one show in
    the other, and the result stays in the autograd graph (gradients flow back to this tensor).

    Example:
        >>> import flambeau as fb
        >>> class Tagged(fb.Tensor):
        ...     pass
        >>> x = fb.ones(2, requires_grad=True)
        >>> y = x.as_subclass(Tagged)
        >>> type(y).__name__, y.data_ptr() == x.data_ptr(), y.requires_grad
        ('Tagged', True, True)
        >>> (y * 3).sum().backward()
        >>> x.grad.tolist()
        [3.0, 3.0]
    """
    if not isinstance(cls, type):
        raise TypeError(f"cls must be a type (got {type(cls).__name__})")
    if not issubclass(cls, Tensor):
        raise TypeError(
            "Creating a Tensor subclass from a class that does not inherit from Tensor is not possible. Make "
            "sure your class inherits from Tensor."
        )
    return Alias.apply(self, cls) if self.requires_grad else cls(self)


def _get_volatile(self: Tensor) -> bool:
    warnings.warn("volatile was removed (Variable.volatile is always False)", UserWarning, stacklevel=2)
    return False


def _set_volatile(self: Tensor, value: Any) -> None:
    warnings.warn(
        "volatile was removed and now has no effect. Use `with flambeau.no_grad():` instead.",
        UserWarning,
        stacklevel=2,
    )


_VOLATILE_DOC = """False: PyTorch's removed flag for tensors that record no graph (use ``no_grad``). Reading it
warns, and setting it warns and changes nothing, as in PyTorch.

Example:
    >>> import flambeau as fb
    >>> import warnings
    >>> with warnings.catch_warnings(record=True) as seen:
    ...     warnings.simplefilter("always")
    ...     fb.ones(2).volatile, str(seen[0].message)
    (False, 'volatile was removed (Variable.volatile is always False)')
"""

_NAME_DOC = """None: the tensor's name, which PyTorch sets only inside its tracer; read-only.

Example:
    >>> import flambeau as fb
    >>> print(fb.ones(2).name)
    None
"""


def module_load(self: Tensor, other: Tensor, assign: bool = False) -> Tensor:
    """module_load(other, assign=False) -> Tensor

    What ``load_state_dict`` swaps in for this parameter or buffer when given ``other`` (PyTorch's hook for
    tensor subclasses to override): a new tensor, never ``self`` or ``other``. By default ``other.detach()``
    when ``assign``, else ``self.copy_(other).detach()`` (so a leaf that requires grad raises unless under
    no_grad, as PyTorch's).

    Example:
        >>> import flambeau_core as fc
        >>> p = fc.zeros(2)
        >>> q = p.module_load(fc.ones(2))
        >>> p.tolist(), q.data_ptr() == p.data_ptr(), q is p
        ([1.0, 1.0], True, False)
    """
    if not isinstance(other, Tensor):
        raise TypeError(f"[module_load] other must be a Tensor, got {type(other).__name__}")
    return other.detach() if assign else self.copy_(other).detach()


def install() -> None:
    as_subclass.__qualname__ = "as_subclass"
    Tensor.as_subclass = as_subclass
    Tensor.module_load = module_load
    Tensor.volatile = property(_get_volatile, _set_volatile, doc=_VOLATILE_DOC)
    Tensor.name = property(lambda self: None, doc=_NAME_DOC)
