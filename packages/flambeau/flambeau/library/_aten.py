"""``flambeau.ops.aten``: flambeau's built-in operators under PyTorch's ``torch.ops.aten`` names.

A program (or PyTorch's own test database) that calls ``torch.ops.aten.<name>`` or an overload of it
(``torch.ops.aten.add.Tensor``, ``.default``) reaches the op of core's table with that name: its Python
binding, whose arguments follow the table's schema (PyTorch's native-function schema), else flambeau's
function or Tensor method of that name. Every overload name gives the same callable, which picks the form
from its arguments as flambeau's Python API does. The few aten operators whose schema names an op that
flambeau spells differently have an adapter here (``_ADAPTERS``). ``aten`` is reserved: no custom operator
can be defined in it.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import flambeau_core as fc
from flambeau_core import Tensor
from flambeau_core.overrides import is_tensor_like


def _slice(self: Tensor, dim: int = 0, start: int | None = None, end: int | None = None, step: int = 1) -> Tensor:
    """aten::slice.Tensor: a view of ``self`` along ``dim`` from start to end by step."""
    if not is_tensor_like(self):
        raise TypeError(f"[aten.slice] expected a Tensor as self, got {type(self).__name__}")
    if not isinstance(dim, int) or not -max(self.dim(), 1) <= dim < max(self.dim(), 1):
        raise IndexError(f"[aten.slice] dim {dim} is out of range for a tensor of {self.dim()} dims")
    if step <= 0:
        raise ValueError(f"[aten.slice] step must be positive, got {step}")
    index = [slice(None)] * (dim % self.dim()) + [slice(start, end, step)]
    return self[tuple(index)]


def _max_pool2d_with_indices_backward(
    grad_output: Tensor,
    self: Tensor,
    kernel_size: Any,
    stride: Any,
    padding: Any,
    dilation: Any,
    ceil_mode: bool,
    indices: Tensor,
) -> Tensor:
    """aten::max_pool2d_with_indices_backward: the gradient of max_pool2d, scattered by its indices."""
    del kernel_size, stride, padding, dilation, ceil_mode  # the indices say where each maximum was
    grad_input = fc._C.max_pool_backward(grad_output, indices, tuple(self.shape))
    # torch's result is a function of self too, with a zero derivative (the indices fix where each value goes):
    # self joins the graph through the branch of a where() that is never taken.
    return fc.where(fc.ones((), dtype=fc.bool, device=self.device), grad_input, self)


_ADAPTERS: dict[str, Callable] = {
    "slice": _slice,
    "max_pool2d_with_indices_backward": _max_pool2d_with_indices_backward,
}


class AtenOpPacket:
    """``flambeau.ops.aten.<name>``: callable, and each overload (``.default``, ``.Tensor``...) is the same op.

    Example:
        >>> import flambeau as fb
        >>> fb.ops.aten.add.Tensor(fb.ones(2), fb.ones(2)).tolist()
        [2.0, 2.0]
        >>> fb.ops.aten.slice(fb.arange(6), 0, 1, 5, 2).tolist()
        [1, 3]
    """

    def __init__(self, name: str, fn: Callable) -> None:
        self._name, self._fn = name, fn
        self.__doc__ = getattr(fn, "__doc__", None)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        return self._fn(*args, **kwargs)

    def __getattr__(self, overload: str) -> AtenOpPacket:
        if overload.startswith("_"):
            raise AttributeError(overload)
        return self

    def overloads(self) -> list[str]:
        return ["default"]

    def __repr__(self) -> str:
        return f"<flambeau.ops.aten.{self._name}>"


def lookup(name: str) -> AtenOpPacket | None:
    """The packet of ``aten::name``, or None when flambeau has no op of that name."""
    fn = _ADAPTERS.get(name) or getattr(fc._C, name, None) or getattr(fc, name, None)
    if fn is None and callable(getattr(Tensor, name, None)):
        method = getattr(Tensor, name)

        def fn(self: Tensor, *args: Any, **kwargs: Any) -> Any:
            return method(self, *args, **kwargs)

    if fn is None or not callable(fn) or isinstance(fn, type):
        return None
    return AtenOpPacket(name, fn)
