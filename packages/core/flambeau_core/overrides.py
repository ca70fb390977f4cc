"""``flambeau.overrides``: the ``__torch_function__`` override protocol, as ``torch.overrides``.

An object whose type defines ``__torch_function__(cls, func, types, args=(), kwargs=None)`` takes over a
flambeau function it is passed to (Note [__torch_function__] in core's ``arg_parser.h``): the function
finds no signature that accepts it and calls the override with itself, the overriding types and the
arguments. flambeau's functions written in Python accept such tensor-likes where they check for a Tensor
(``is_tensor_like``) and run on them, so each op they call is overridden in turn: that is how
``flambeau.func.vmap``'s batched tensors go through ``nn.functional``.

PyTorch's own tensors also define ``__torch_function__`` but are not flambeau tensors: they are not
tensor-likes here (passing one still raises the TypeError that asks for a flambeau Tensor).

Example:
    >>> import flambeau_core as fc
    >>> class Logged:
    ...     def __init__(self, t):
    ...         self.t = t
    ...     @classmethod
    ...     def __torch_function__(cls, func, types, args=(), kwargs=None):
    ...         return func(*[a.t if isinstance(a, Logged) else a for a in args], **(kwargs or {}))
    >>> fc.overrides.is_tensor_like(Logged(fc.ones(2))), fc.overrides.is_tensor_like(3)
    (True, False)
    >>> fc.add(Logged(fc.ones(2)), 1).tolist()
    [2.0, 2.0]
"""

from __future__ import annotations

from typing import Any

from flambeau_core._C import Tensor

__all__ = ["is_tensor_like"]


def is_tensor_like(inp: Any) -> bool:
    """True for a flambeau Tensor and for an object whose type defines ``__torch_function__`` (not
    PyTorch's own tensors), as ``torch.overrides.is_tensor_like``.

    Example:
        >>> import flambeau_core as fc
        >>> fc.overrides.is_tensor_like(fc.zeros(1)), fc.overrides.is_tensor_like([1.0])
        (True, False)
    """
    if isinstance(inp, Tensor):
        return True
    kind = type(inp)
    if not hasattr(kind, "__torch_function__"):
        return False
    module = getattr(kind, "__module__", "") or ""
    return not (module == "torch" or module.startswith("torch."))
