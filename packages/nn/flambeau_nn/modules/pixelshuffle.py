"""``PixelShuffle``, ``PixelUnshuffle`` and ``ChannelShuffle``."""

from __future__ import annotations

from flambeau_core import Tensor

from flambeau_nn import functional as F
from flambeau_nn.modules.module import Module

__all__ = ["PixelShuffle", "PixelUnshuffle", "ChannelShuffle"]


class PixelShuffle(Module):
    """``(*, C * r**2, H, W) -> (*, C, H * r, W * r)`` with ``r = upscale_factor``.

    Example:
        >>> import flambeau_core as fc
        >>> import flambeau_nn as nn
        >>> nn.PixelShuffle(3)(fc.ones(1, 9, 4, 4)).shape
        flambeau.Size([1, 1, 12, 12])
    """

    def __init__(self, upscale_factor: int) -> None:
        super().__init__()
        self.upscale_factor = upscale_factor

    def forward(self, input: Tensor) -> Tensor:
        """Rearranges ``input`` ``(*, C*r*r, H, W)`` to ``(*, C, H*r, W*r)``, ``r = upscale_factor``: each group of
        ``r*r`` channels becomes an ``r`` by ``r`` block of pixels.

        Example:
            >>> import flambeau_core as fc
            >>> import flambeau_nn as nn
            >>> nn.PixelShuffle(2)(fc.arange(4.0).reshape(1, 4, 1, 1)).tolist()
            [[[[0.0, 1.0], [2.0, 3.0]]]]
        """
        return F.pixel_shuffle(input, self.upscale_factor)

    def extra_repr(self) -> str:
        """The ``upscale_factor``, as shown inside ``repr(module)``.

        Example:
            >>> import flambeau_nn as nn
            >>> nn.PixelShuffle(3).extra_repr()
            'upscale_factor=3'
        """
        return f"upscale_factor={self.upscale_factor}"


class PixelUnshuffle(Module):
    """``(*, C, H * r, W * r) -> (*, C * r**2, H, W)`` with ``r = downscale_factor``.

    Example:
        >>> import flambeau_core as fc
        >>> import flambeau_nn as nn
        >>> nn.PixelUnshuffle(3)(fc.ones(1, 1, 12, 12)).shape
        flambeau.Size([1, 9, 4, 4])
    """

    def __init__(self, downscale_factor: int) -> None:
        super().__init__()
        self.downscale_factor = downscale_factor

    def forward(self, input: Tensor) -> Tensor:
        """Rearranges ``input`` ``(*, C, H*r, W*r)`` to ``(*, C*r*r, H, W)``, ``r = downscale_factor`` (the inverse of
        ``PixelShuffle``).

        Example:
            >>> import flambeau_core as fc
            >>> import flambeau_nn as nn
            >>> nn.PixelUnshuffle(2)(fc.arange(4.0).reshape(1, 1, 2, 2)).flatten().tolist()
            [0.0, 1.0, 2.0, 3.0]
        """
        return F.pixel_unshuffle(input, self.downscale_factor)

    def extra_repr(self) -> str:
        """The ``downscale_factor``, as shown inside ``repr(module)``.

        Example:
            >>> import flambeau_nn as nn
            >>> nn.PixelUnshuffle(2).extra_repr()
            'downscale_factor=2'
        """
        return f"downscale_factor={self.downscale_factor}"


class ChannelShuffle(Module):
    """Splits the channels of ``(N, C, *)`` into ``groups`` and interleaves them (ShuffleNet).

    Example:
        >>> import flambeau_core as fc
        >>> ChannelShuffle(2)(fc.arange(4.0).reshape(1, 4, 1)).flatten().tolist()
        [0.0, 2.0, 1.0, 3.0]
    """

    def __init__(self, groups: int) -> None:
        super().__init__()
        self.groups = groups

    def forward(self, input: Tensor) -> Tensor:
        """Splits the ``C`` channels of ``input`` ``(N, C, *)`` into ``groups`` groups and interleaves them (channel
        ``g*k + i`` moves to ``i*groups + g``); same shape out.

        Example:
            >>> import flambeau_core as fc
            >>> import flambeau_nn as nn
            >>> nn.ChannelShuffle(2)(fc.arange(6.0).reshape(1, 6, 1)).flatten().tolist()
            [0.0, 3.0, 1.0, 4.0, 2.0, 5.0]
        """
        return F.channel_shuffle(input, self.groups)

    def extra_repr(self) -> str:
        """The number of ``groups``, as shown inside ``repr(module)``.

        Example:
            >>> import flambeau_nn as nn
            >>> nn.ChannelShuffle(3).extra_repr()
            'groups=3'
        """
        return f"groups={self.groups}"
