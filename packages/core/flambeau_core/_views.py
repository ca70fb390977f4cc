"""View ops composed in Python: ``flambeau_core.t`` (the function of ``Tensor.t``) and ``Tensor.unfold``.

``unfold`` is ``as_strided`` with one more dim: the windows along ``dimension`` become a new last dim, so
the result shares input's memory (a view, as in PyTorch). The backward of ``as_strided`` covers only a
contiguous input and windows that do not overlap; where autograd records any other ``unfold``, the
windows are gathered instead (``index_select``, whose backward sums the overlaps): the same values and
gradients, in a tensor of its own.
"""

from __future__ import annotations

from flambeau_core import _C
from flambeau_core._composing import check_int, check_tensor


def t(input: _C.Tensor) -> _C.Tensor:  # noqa: A002
    """t(input) -> Tensor

    ``input`` transposed: a 2-D tensor's dims 0 and 1 swapped (a view); a 0-D or 1-D tensor as it is.
    More than 2 dims is an error (``transpose`` or ``mT`` handle those).

    Example:
        >>> import flambeau_core as fc
        >>> fc.t(fc.tensor([[1, 2, 3]])).tolist()
        [[1], [2], [3]]
    """
    check_tensor("t", input)
    return input.t()


def unfold(self: _C.Tensor, dimension: int, size: int, step: int) -> _C.Tensor:
    """unfold(dimension, size, step) -> Tensor

    A view of every window of ``size`` elements along ``dimension``, windows starting ``step`` apart: that
    dim becomes the number of windows, ``(self.size(dimension) - size) // step + 1``, and a new last dim of
    ``size`` holds each window. A 0-D tensor is treated as one element (``size`` 0 or 1).

    Unlike PyTorch's, the result is a gathered copy (the same values and gradients) where autograd records
    through overlapping windows (``step < size``) or a non-contiguous ``self``: flambeau's ``as_strided``
    has no backward for those yet.

    Example:
        >>> import flambeau_core as fc
        >>> fc.arange(5).unfold(0, 2, 2).tolist()
        [[0, 1], [2, 3]]
    """
    for what, value in (("dimension", dimension), ("size", size), ("step", step)):
        check_int("unfold", value, what)
    shape, strides = list(self.shape), list(self.stride())
    if self.dim() == 0:
        if dimension not in (0, -1):
            raise IndexError(f"[unfold] dimension {dimension} out of range for a 0-d tensor (expected in [-1, 0])")
        shape, strides, dimension = [1], [1], 0
    elif not -self.dim() <= dimension < self.dim():
        raise IndexError(
            f"[unfold] dimension {dimension} out of range for a {self.dim()}-d tensor "
            f"(expected in [{-self.dim()}, {self.dim() - 1}])"
        )
    dimension %= len(shape)
    if size < 0:
        raise _C.FlambeauError(f"[unfold] size is {size} but must be >= 0")
    if size > shape[dimension]:
        raise _C.FlambeauError(
            f"[unfold] maximum size for tensor at dimension {dimension} is {shape[dimension]} but size is {size}"
        )
    if step <= 0:
        raise _C.FlambeauError(f"[unfold] step is {step} but must be > 0")
    if self.dim() == 0:
        return self.as_strided([size], [1], self.storage_offset())
    windows = (shape[dimension] - size) // step + 1
    if (step < size or size == 0 or not self.is_contiguous()) and self.requires_grad and _C.is_grad_enabled():
        return _gathered_windows(self, dimension, size, step, windows)
    new_shape = [*shape[:dimension], windows, *shape[dimension + 1 :], size]
    window_stride = strides[dimension] * step  # PyTorch's, also for a single window
    if windows == 1 and window_stride >= 2**63:  # never stepped over: a huge step must not overflow int64
        window_stride = strides[dimension]
    new_strides = [*strides[:dimension], window_stride, *strides[dimension + 1 :], strides[dimension]]
    return self.as_strided(new_shape, new_strides, self.storage_offset())


def _gathered_windows(x: _C.Tensor, dim: int, size: int, step: int, windows: int) -> _C.Tensor:
    starts = _C.arange(windows, device=x.device) * step
    index = (starts.unsqueeze(1) + _C.arange(size, device=x.device)).reshape(-1)
    shape = tuple(x.shape)
    gathered = x.index_select(dim, index).reshape((*shape[:dim], windows, size, *shape[dim + 1 :]))
    return gathered.movedim(dim + 1, -1)


def install() -> None:
    import flambeau_core

    flambeau_core.t = t
    _C.Tensor.unfold = unfold
