"""``Upsample``, ``UpsamplingNearest2d`` and ``UpsamplingBilinear2d``: layers around ``F.interpolate``."""

from __future__ import annotations

from typing import Any

from flambeau_core import Tensor

from flambeau_nn import functional as F
from flambeau_nn.modules.module import Module

__all__ = ["Upsample", "UpsamplingNearest2d", "UpsamplingBilinear2d"]


class Upsample(Module):
    """Resizes ``(N, C, L)``, ``(N, C, H, W)`` or ``(N, C, D, H, W)`` inputs (see ``F.interpolate``, every mode).

    Example:
        >>> import flambeau_core as fc
        >>> Upsample(scale_factor=2)(fc.ones(1, 1, 2, 3)).shape
        flambeau.Size([1, 1, 4, 6])
    """

    def __init__(
        self,
        size: Any = None,
        scale_factor: Any = None,
        mode: str = "nearest",
        align_corners: bool | None = None,
        recompute_scale_factor: bool | None = None,
    ) -> None:
        super().__init__()
        self.name = type(self).__name__
        self.size = size
        if isinstance(scale_factor, tuple):
            self.scale_factor = tuple(float(factor) for factor in scale_factor)
        else:
            self.scale_factor = float(scale_factor) if scale_factor else None
        self.mode = mode
        self.align_corners = align_corners
        self.recompute_scale_factor = recompute_scale_factor

    def forward(self, input: Tensor) -> Tensor:
        """Resamples ``input`` ``(N, C, *spatial)`` (1 to 3 spatial dims) to ``size`` or by ``scale_factor`` with
        ``mode`` (``F.interpolate``), giving ``(N, C, *new_spatial)``.

        Example:
            >>> import flambeau_core as fc
            >>> import flambeau_nn as nn
            >>> nn.Upsample(scale_factor=2)(fc.tensor([[[1.0, 2.0]]])).tolist()
            [[[1.0, 1.0, 2.0, 2.0]]]
            >>> nn.Upsample(size=(3, 5), mode="bilinear")(fc.ones(1, 2, 2, 2)).shape
            flambeau.Size([1, 2, 3, 5])
        """
        return F.interpolate(
            input,
            self.size,
            self.scale_factor,
            self.mode,
            self.align_corners,
            recompute_scale_factor=self.recompute_scale_factor,
        )

    def extra_repr(self) -> str:
        """``scale_factor`` (or ``size``) and ``mode``, as shown inside ``repr(module)``.

        Example:
            >>> import flambeau_nn as nn
            >>> nn.Upsample(scale_factor=2, mode="nearest").extra_repr()
            "scale_factor=2.0, mode='nearest'"
        """
        if self.scale_factor is not None:
            info = "scale_factor=" + repr(self.scale_factor)
        else:
            info = "size=" + repr(self.size)
        info += ", mode=" + repr(self.mode)
        return info


class UpsamplingNearest2d(Upsample):
    """Nearest-neighbour 2-D upsampling (``Upsample(mode='nearest')``).

    Example:
        >>> import flambeau_core as fc
        >>> UpsamplingNearest2d(scale_factor=2)(fc.ones(1, 1, 2, 2)).shape
        flambeau.Size([1, 1, 4, 4])
    """

    def __init__(self, size: Any = None, scale_factor: Any = None) -> None:
        super().__init__(size, scale_factor, mode="nearest")


class UpsamplingBilinear2d(Upsample):
    """Bilinear 2-D upsampling with ``align_corners=True`` (``Upsample(mode='bilinear', align_corners=True)``).

    Example:
        >>> import flambeau_core as fc
        >>> UpsamplingBilinear2d(size=(3, 5))(fc.ones(1, 1, 2, 2)).shape
        flambeau.Size([1, 1, 3, 5])
    """

    def __init__(self, size: Any = None, scale_factor: Any = None) -> None:
        super().__init__(size, scale_factor, mode="bilinear", align_corners=True)
