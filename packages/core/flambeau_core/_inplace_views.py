"""The in-place view ops: ``Tensor.t_``, ``transpose_``, ``swapdims_``, ``swapaxes_``, ``squeeze_``,
``unsqueeze_``, ``as_strided_`` and ``resize_as_``.

Each computes the view its out-of-place form gives (with that op's checks and messages) and makes ``self``
show it with ``Tensor.set_``: ``self`` keeps its identity and storage, and takes the view's shape, strides
and offset. ``resize_as_`` is ``resize_`` to the other tensor's shape.

Where it differs from PyTorch: autograd does not record an in-place view of a tensor with a gradient history
(PyTorch rewrites its ``grad_fn``); that raises NotImplementedError naming the out-of-place op to use. A leaf
that requires grad is refused with PyTorch's message, as there.
"""

from __future__ import annotations

from typing import Any

from flambeau_core import _C
from flambeau_core._composing import check_tensor
from flambeau_core._copying import _no_grad


def _adopt(op: str, self: _C.Tensor, view: Any) -> _C.Tensor:
    check_tensor(op, self, "self")
    if self.requires_grad and _C.is_grad_enabled():
        if getattr(self, "grad_fn", None) is None:
            raise RuntimeError(f"[{op}] a leaf Variable that requires grad is being used in an in-place operation")
        raise NotImplementedError(
            f"[{op}] an in-place view of a tensor with a gradient history is not recorded by autograd; "
            f"use the out-of-place {op[:-1]}() instead"
        )
    with _no_grad():  # the view is only a shape to adopt: nothing to record
        return self.set_(view(self))


def t_(self: _C.Tensor) -> _C.Tensor:
    """t_() -> Tensor

    ``self`` transposed in place (``t()``: 0-D and 1-D unchanged, 2-D dims swapped); returns ``self``.

    Example:
        >>> import flambeau_core as fc
        >>> x = fc.tensor([[1, 2, 3]])
        >>> x.t_() is x, x.tolist()
        (True, [[1], [2], [3]])
    """
    return _adopt("t_", self, lambda s: s.t())


def transpose_(self: _C.Tensor, dim0: int, dim1: int) -> _C.Tensor:
    """transpose_(dim0, dim1) -> Tensor

    ``self`` with ``dim0`` and ``dim1`` swapped, in place; returns ``self``.

    Example:
        >>> import flambeau_core as fc
        >>> x = fc.zeros(2, 3, 4)
        >>> tuple(x.transpose_(0, 2).shape)
        (4, 3, 2)
    """
    return _adopt("transpose_", self, lambda s: s.transpose(dim0, dim1))


def swapdims_(self: _C.Tensor, dim0: int, dim1: int) -> _C.Tensor:
    """swapdims_(dim0, dim1) -> Tensor

    Alias of :meth:`transpose_`.

    Example:
        >>> import flambeau_core as fc
        >>> tuple(fc.zeros(2, 3).swapdims_(0, 1).shape)
        (3, 2)
    """
    return _adopt("swapdims_", self, lambda s: s.transpose(dim0, dim1))


def swapaxes_(self: _C.Tensor, axis0: int, axis1: int) -> _C.Tensor:
    """swapaxes_(axis0, axis1) -> Tensor

    Alias of :meth:`transpose_`.

    Example:
        >>> import flambeau_core as fc
        >>> tuple(fc.zeros(2, 3).swapaxes_(0, 1).shape)
        (3, 2)
    """
    return _adopt("swapaxes_", self, lambda s: s.transpose(axis0, axis1))


def squeeze_(self: _C.Tensor, *dim: Any) -> _C.Tensor:
    """squeeze_(dim=None) -> Tensor

    ``self`` without its size-1 dims (all, the one given, or those of a tuple), in place; returns ``self``.

    Example:
        >>> import flambeau_core as fc
        >>> tuple(fc.zeros(1, 3, 1).squeeze_(0).shape)
        (3, 1)
    """
    return _adopt("squeeze_", self, lambda s: s.squeeze(*dim))


def unsqueeze_(self: _C.Tensor, dim: int) -> _C.Tensor:
    """unsqueeze_(dim) -> Tensor

    ``self`` with a size-1 dim inserted at ``dim``, in place; returns ``self``.

    Example:
        >>> import flambeau_core as fc
        >>> tuple(fc.zeros(3).unsqueeze_(0).shape)
        (1, 3)
    """
    return _adopt("unsqueeze_", self, lambda s: s.unsqueeze(dim))


def as_strided_(self: _C.Tensor, size: Any, stride: Any, storage_offset: int | None = None) -> _C.Tensor:
    """as_strided_(size, stride, storage_offset=None) -> Tensor

    ``self`` made to show ``size``, ``stride`` and ``storage_offset`` (default: its own) of its storage, in
    place; the same checks as :func:`as_strided`. Returns ``self``.

    Example:
        >>> import flambeau_core as fc
        >>> x = fc.arange(6.0)
        >>> x.as_strided_((2, 2), (2, 1), 1).tolist()
        [[1.0, 2.0], [3.0, 4.0]]
    """
    return _adopt("as_strided_", self, lambda s: s.as_strided(size, stride, storage_offset))


def resize_as_(self: _C.Tensor, the_template: _C.Tensor, *, memory_format: Any = None) -> _C.Tensor:
    """resize_as_(the_template, *, memory_format=None) -> Tensor

    :meth:`resize_` to ``the_template``'s shape; returns ``self``.

    Example:
        >>> import flambeau_core as fc
        >>> tuple(fc.zeros(3).resize_as_(fc.zeros(2, 2)).shape)
        (2, 2)
    """
    check_tensor("resize_as_", self, "self")
    check_tensor("resize_as_", the_template, "the_template")
    return self.resize_(the_template.shape, memory_format=memory_format)


def install() -> None:
    import flambeau_core

    for fn in (t_, transpose_, swapdims_, swapaxes_, squeeze_, unsqueeze_, as_strided_, resize_as_):
        setattr(_C.Tensor, fn.__name__, fn)
    # torch.as_strided_ and torch.resize_as_ exist as functions too.
    flambeau_core.as_strided_ = as_strided_
    flambeau_core.resize_as_ = resize_as_
