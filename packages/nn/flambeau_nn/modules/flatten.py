"""``Unflatten``: the inverse of ``Flatten`` (one dim expanded into a shape)."""

from __future__ import annotations

import operator
from typing import Any

from flambeau_core import FlambeauError, Tensor

from flambeau_nn.modules.module import Module

__all__ = ["Unflatten"]


class Unflatten(Module):
    r"""Expands dim ``dim`` of the input into ``unflattened_size`` (one entry may be -1).

    Example:
        >>> import flambeau_core as fc
        >>> Unflatten(1, (2, 5))(fc.zeros(3, 10)).shape
        flambeau.Size([3, 2, 5])
    """

    def __init__(self, dim: int, unflattened_size: Any) -> None:
        super().__init__()
        if isinstance(dim, str):
            raise TypeError("[Unflatten] named dims (a str dim) are not supported: give an int dim")
        if isinstance(dim, bool) or not isinstance(dim, int):
            raise TypeError(f"invalid argument: dim must be an int, but got {type(dim).__name__}")
        if not isinstance(unflattened_size, (tuple, list)):
            raise TypeError(f"unflattened_size must be tuple of ints, but found type {type(unflattened_size).__name__}")
        for idx, elem in enumerate(unflattened_size):
            if isinstance(elem, bool) or not isinstance(elem, int):
                raise TypeError(
                    f"unflattened_size must be tuple of ints, but found element of type {type(elem).__name__} "
                    f"at pos {idx}"
                )
        self.dim = dim
        self.unflattened_size = tuple(unflattened_size) if isinstance(unflattened_size, list) else unflattened_size

    def forward(self, input: Tensor) -> Tensor:
        """Expands dim ``dim`` of ``input`` into ``unflattened_size`` (whose product must equal that dim's size; one
        entry may be -1), returning a view.

        Example:
            >>> import flambeau_core as fc
            >>> import flambeau_nn as nn
            >>> nn.Unflatten(1, (2, -1))(fc.zeros(3, 10)).shape
            flambeau.Size([3, 2, 5])
        """
        shape = tuple(input.shape)
        nd = len(shape)
        if nd == 0:
            raise FlambeauError("[Unflatten] cannot unflatten a 0-d tensor")
        d = operator.index(self.dim)
        if not -nd <= d < nd:
            raise IndexError(
                f"[Unflatten] Dimension out of range (expected to be in range of [{-nd}, {nd - 1}], but got {d})"
            )
        d %= nd
        sizes = tuple(self.unflattened_size)
        if len(sizes) == 0:
            raise FlambeauError("[Unflatten] unflattened_size must be non-empty")
        known = 1
        infer = [i for i, s in enumerate(sizes) if s == -1]
        for s in sizes:
            if s != -1:
                known *= s
        if len(infer) > 1 or (not infer and known != shape[d]) or (infer and (known == 0 or shape[d] % known)):
            raise FlambeauError(
                f"[Unflatten] unflattened_size {sizes} does not match the size {shape[d]} of input dim {d} "
                f"(input shape {shape}): its product must equal it"
            )
        return input.view(shape[:d] + sizes + shape[d + 1 :])

    def extra_repr(self) -> str:
        """``dim`` and ``unflattened_size``, as shown inside ``repr(module)``.

        Example:
            >>> import flambeau_nn as nn
            >>> nn.Unflatten(1, (2, 5)).extra_repr()
            'dim=1, unflattened_size=(2, 5)'
        """
        return f"dim={self.dim}, unflattened_size={self.unflattened_size}"
