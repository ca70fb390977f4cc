"""``Tensor.resize`` and ``resize_as``: PyTorch's deprecated out-of-place resizes.

Unlike the in-place ``resize_``, they may only change the shape, never the number of elements: they are
``reshape`` with that check (differentiable, a view where the strides allow), and warn as PyTorch's do.
"""

from __future__ import annotations

import warnings
from typing import Any

from flambeau_core import _C
from flambeau_core._composing import call_as, check_tensor
from flambeau_core._tensor_new import _size


def _reshaped(name: str, self: _C.Tensor, size: tuple[int, ...]) -> _C.Tensor:
    numel = 1
    for n in size:
        numel *= n
    if numel != self.numel() or any(n < 0 for n in size):
        raise _C.FlambeauError(
            f"[{name}] requested resize to {size} ({numel} elements in total), but the given tensor has a size "
            f"of {tuple(self.shape)} ({self.numel()} elements). autograd's resize can only change the shape of "
            "a given tensor, while preserving the number of elements; use resize_() to change it"
        )
    return call_as(name, self.reshape, size)


def resize(self: _C.Tensor, *sizes: Any) -> _C.Tensor:
    """resize(*sizes) -> Tensor

    Deprecated (warns): ``self`` reshaped to ``sizes``, which must keep the number of elements (use
    :meth:`reshape`; :meth:`resize_` changes it in place).

    Example:
        >>> import warnings
        >>> import flambeau_core as fc
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("ignore")
        ...     fc.arange(6).resize(2, 3).tolist()
        [[0, 1, 2], [3, 4, 5]]
    """
    check_tensor("resize", self, "self")
    warnings.warn("non-inplace resize is deprecated", UserWarning, stacklevel=2)
    return _reshaped("resize", self, _size("resize", sizes))


def resize_as(self: _C.Tensor, tensor: _C.Tensor) -> _C.Tensor:
    """resize_as(tensor) -> Tensor

    Deprecated (warns): ``self`` reshaped to ``tensor``'s shape, which must have as many elements (use
    ``reshape_as``).

    Example:
        >>> import warnings
        >>> import flambeau_core as fc
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("ignore")
        ...     fc.arange(4).resize_as(fc.zeros(2, 2)).shape
        flambeau.Size([2, 2])
    """
    check_tensor("resize_as", self, "self")
    check_tensor("resize_as", tensor, "tensor")
    warnings.warn("non-inplace resize_as is deprecated", UserWarning, stacklevel=2)
    return _reshaped("resize_as", self, tuple(tensor.shape))


def install() -> None:
    _C.Tensor.resize = resize
    _C.Tensor.resize_as = resize_as
