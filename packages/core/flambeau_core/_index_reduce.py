"""``index_reduce`` (function, method and in-place form) composed over ``scatter_reduce``.

``index_reduce(self, dim, index, source, reduce)`` reduces ``source.select(dim, i)`` into
``self.select(dim, index[i])``: a scatter whose index is ``index`` laid along ``dim`` and broadcast to
``source``'s shape, so the reductions, ``include_self`` and the gradients are ``scatter_reduce``'s.
"""

from __future__ import annotations

from flambeau_core import _C
from flambeau_core._composing import check_int, check_tensor

_REDUCTIONS = ("prod", "mean", "amax", "amin")


def _scatter_index(name: str, self: _C.Tensor, dim: int, index: _C.Tensor, source: _C.Tensor) -> tuple[int, _C.Tensor]:
    check_tensor(name, self, "self")
    check_int(name, dim, "dim")
    check_tensor(name, index, "index")
    check_tensor(name, source, "source")
    if index.dtype not in (_C.int32, _C.int64):
        raise TypeError(f"[{name}] Expected dtype int32/int64 for index but got: {index.dtype}")
    if index.dim() > 1:
        raise IndexError(f"[{name}] Index is supposed to be a vector, got shape {tuple(index.shape)}")
    if self.dtype != source.dtype:
        raise TypeError(f"[{name}] self ({self.dtype}) and source ({source.dtype}) must have the same scalar type")
    n = max(self.dim(), 1)
    if not -n <= dim < n:
        raise IndexError(f"[{name}] Dimension out of range (expected to be in range of [{-n}, {n - 1}], but got {dim})")
    dim %= n
    self_shape = list(self.shape) or [1]
    source_shape = list(source.shape) or [1]
    if len(source_shape) != len(self_shape):
        raise IndexError(
            f"[{name}] Index to scalar can have only 1 value, got {index.numel()} value(s)"
            if self.dim() == 0
            else f"[{name}] source {tuple(source.shape)} and self {tuple(self.shape)} must have the same number of dims"
        )
    if index.numel() != source_shape[dim]:
        raise _C.FlambeauError(
            f"[{name}] Number of indices ({index.numel()}) should be equal to source.size(dim): "
            f"({source_shape[dim]}), for dim: {dim}"
        )
    for d, (a, b) in enumerate(zip(self_shape, source_shape, strict=True)):
        if d != dim and a != b:
            raise _C.FlambeauError(
                f"[{name}] source {tuple(source.shape)} and self {tuple(self.shape)} must match in every dim "
                f"but dim {dim}, got {b} and {a} in dim {d}"
            )
    index = index.reshape(-1).to(_C.int64)
    if index.numel() and bool(((index < 0) | (index >= self_shape[dim])).any()):
        raise IndexError(
            f"[{name}] index out of range in self: indices must be in [0, {self_shape[dim]}) for dim {dim} "
            f"of size {self_shape[dim]}, got min {index.min().item()} and max {index.max().item()}"
        )
    laid = index.reshape([-1 if d == dim else 1 for d in range(len(self_shape))])
    return dim, laid.expand(source_shape).contiguous()


def index_reduce(
    input: _C.Tensor,  # noqa: A002
    dim: int,
    index: _C.Tensor,
    source: _C.Tensor,
    reduce: str,
    *,
    include_self: bool = True,
) -> _C.Tensor:
    """index_reduce(input, dim, index, source, reduce, *, include_self=True) -> Tensor

    A copy of ``input`` where, for each ``i``, ``source.select(dim, i)`` is reduced into
    ``input.select(dim, index[i])`` with ``reduce``: ``'prod'``, ``'mean'``, ``'amax'`` or ``'amin'``.
    ``include_self=False`` leaves ``input``'s own values out of the slices that receive any (the others keep
    them). ``index`` is a 1-D int32/int64 tensor with one entry per slice of ``source`` along ``dim``;
    ``source`` has ``input``'s shape but along ``dim``, and its dtype. Integer means round down, as PyTorch's.

    Example:
        >>> import flambeau_core as fc
        >>> x = fc.ones(3, 2)
        >>> src = fc.tensor([[2.0, 3.0], [4.0, 5.0]])
        >>> fc.index_reduce(x, 0, fc.tensor([0, 0]), src, "prod").tolist()
        [[8.0, 15.0], [1.0, 1.0], [1.0, 1.0]]
    """
    dim, scatter_index = _scatter_index("index_reduce", input, dim, index, source)
    if reduce not in _REDUCTIONS:
        raise _C.FlambeauError(
            f"[index_reduce] Expected reduce to be one of prod, mean, amax or amin but got {reduce}."
        )
    if input.dim() == 0:
        return (
            input.reshape(1)
            .scatter_reduce(0, scatter_index, source.reshape(1), reduce, include_self=include_self)
            .reshape(())
        )
    return input.scatter_reduce(dim, scatter_index, source, reduce, include_self=include_self)


def index_reduce_(
    self: _C.Tensor, dim: int, index: _C.Tensor, source: _C.Tensor, reduce: str, *, include_self: bool = True
) -> _C.Tensor:
    """index_reduce_(dim, index, source, reduce, *, include_self=True) -> Tensor

    In-place :func:`index_reduce`: ``self``'s slices along ``dim`` at ``index`` reduced with ``source``'s.

    Example:
        >>> import flambeau_core as fc
        >>> x = fc.tensor([5.0, 1.0])
        >>> x.index_reduce_(0, fc.tensor([0, 0]), fc.tensor([7.0, 2.0]), "amax").tolist()
        [7.0, 1.0]
    """
    return self.copy_(index_reduce(self, dim, index, source, reduce, include_self=include_self))


def install() -> None:
    import flambeau_core

    flambeau_core.index_reduce = index_reduce
    _C.Tensor.index_reduce = index_reduce
    _C.Tensor.index_reduce_ = index_reduce_
