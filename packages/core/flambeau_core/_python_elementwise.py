"""``Tensor.apply_``, ``map_`` and ``map2_``: a Python callable run on every element of a CPU tensor, the
results written back in place (PyTorch's own semantics and cost: one Python call per element, so these are
for small tensors and tests, never a hot path).

The elements travel as Python numbers (``tolist``), the results come back through one ``tensor`` and one
``copy_`` (cast to ``self``'s dtype as PyTorch casts a Python number: a float result in an integer tensor
is truncated toward zero).
"""

from __future__ import annotations

from collections.abc import Callable

from flambeau_core import _C
from flambeau_core._composing import check_tensor


def _check_self(name: str, self: _C.Tensor, fn: object) -> None:
    check_tensor(name, self, "self")
    if self.device.type != "cpu":
        raise TypeError(f"[{name}] is only implemented on CPU tensors, got a tensor on {self.device}")
    if self.requires_grad:
        raise _C.FlambeauError(
            f"[{name}] Can't call {name}() on Variable that requires grad. Use var.detach().{name}() instead."
        )
    if not callable(fn):
        raise TypeError(f"[{name}] expected a callable, got {type(fn).__name__}")


def _operand(name: str, self: _C.Tensor, other: object, what: str) -> list:
    """other's elements broadcast to self's shape, in self's row-major order."""
    check_tensor(name, other, what)
    if other.dtype != self.dtype or other.device != self.device:
        raise TypeError(
            f"[{name}] expected '{what}' of dtype {self.dtype.name} on {self.device}, "
            f"got {other.dtype.name} on {other.device}"
        )
    try:
        expanded = other.expand(tuple(self.shape))
    except (RuntimeError, ValueError) as e:
        raise _C.FlambeauError(
            f"[{name}] '{what}' of shape {tuple(other.shape)} does not broadcast to self's shape "
            f"{tuple(self.shape)}: {e}"
        ) from None
    return expanded.reshape(-1).tolist()


def _write(name: str, self: _C.Tensor, results: list) -> _C.Tensor:
    try:
        values = _C.tensor(results, dtype=self.dtype)
    except (TypeError, RuntimeError, ValueError) as e:
        raise TypeError(f"[{name}] the callable must return a number for every element: {e}") from None
    return self.copy_(values.reshape(tuple(self.shape)))


def apply_(self: _C.Tensor, callable: Callable) -> _C.Tensor:  # noqa: A002
    """apply_(callable) -> Tensor

    Replaces every element ``v`` of ``self`` by ``callable(v)`` (a Python number in, a number out), in
    place; returns ``self``. CPU tensors only; slow: one Python call per element, as in PyTorch.

    Example:
        >>> import flambeau_core as fc
        >>> fc.arange(4).apply_(lambda v: v * v).tolist()
        [0, 1, 4, 9]
    """
    _check_self("apply_", self, callable)
    if self.numel() == 0:
        return self
    return _write("apply_", self, [callable(v) for v in self.reshape(-1).tolist()])


def map_(self: _C.Tensor, tensor: _C.Tensor, callable: Callable) -> _C.Tensor:  # noqa: A002
    """map_(tensor, callable) -> Tensor

    Replaces every element ``a`` of ``self`` by ``callable(a, b)``, ``b`` the element of ``tensor`` (of
    ``self``'s dtype, broadcast to ``self``'s shape) at the same place; in place, returns ``self``. CPU
    tensors only; one Python call per element, as in PyTorch.

    Example:
        >>> import flambeau_core as fc
        >>> fc.zeros(2, 2).map_(fc.tensor([1.0, 2.0]), lambda a, b: a + 10 * b).tolist()
        [[10.0, 20.0], [10.0, 20.0]]
    """
    _check_self("map_", self, callable)
    others = _operand("map_", self, tensor, "tensor")
    if self.numel() == 0:
        return self
    return _write("map_", self, [callable(a, b) for a, b in zip(self.reshape(-1).tolist(), others, strict=True)])


def map2_(self: _C.Tensor, x: _C.Tensor, y: _C.Tensor, callable: Callable) -> _C.Tensor:  # noqa: A002
    """map2_(x, y, callable) -> Tensor

    As :meth:`map_` with two other tensors: every element ``a`` of ``self`` becomes ``callable(a, b, c)``
    with ``b`` and ``c`` the elements of ``x`` and ``y`` (broadcast to ``self``'s shape) at that place.

    Example:
        >>> import flambeau_core as fc
        >>> fc.ones(3).map2_(fc.tensor([1.0, 2.0, 3.0]), fc.tensor([2.0]), lambda a, b, c: a + b * c).tolist()
        [3.0, 5.0, 7.0]
    """
    _check_self("map2_", self, callable)
    xs, ys = _operand("map2_", self, x, "x"), _operand("map2_", self, y, "y")
    if self.numel() == 0:
        return self
    values = zip(self.reshape(-1).tolist(), xs, ys, strict=True)
    return _write("map2_", self, [callable(a, b, c) for a, b, c in values])


def install() -> None:
    for fn in (apply_, map_, map2_):
        setattr(_C.Tensor, fn.__name__, fn)
