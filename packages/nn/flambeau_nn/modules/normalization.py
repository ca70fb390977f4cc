"""``LayerNorm`` and ``GroupNorm``."""

from __future__ import annotations

from typing import Any

import flambeau_core as fc
from flambeau_core import FlambeauError, Tensor

from flambeau_nn import functional as F
from flambeau_nn import init
from flambeau_nn.modules.module import Module
from flambeau_nn.parameter import Parameter

__all__ = ["LayerNorm", "GroupNorm"]


class LayerNorm(Module):
    r"""Layer normalization over the trailing ``normalized_shape`` dims.

    ``weight`` (ones) and ``bias`` (zeros) of shape ``normalized_shape`` when
    ``elementwise_affine`` (``bias=False`` drops the bias), as PyTorch.

    Example:
        >>> import flambeau_core as fc
        >>> LayerNorm(4)(fc.randn(2, 4)).shape
        (2, 4)
    """

    def __init__(
        self,
        normalized_shape: int | tuple[int, ...] | list[int],
        eps: float = 1e-5,
        elementwise_affine: bool = True,
        bias: bool = True,
        device: Any = None,
        dtype: Any = None,
    ) -> None:
        super().__init__()
        if isinstance(normalized_shape, int):
            normalized_shape = (normalized_shape,)
        self.normalized_shape = tuple(normalized_shape)
        for v in self.normalized_shape:
            if isinstance(v, bool) or not isinstance(v, int) or v < 0:
                raise FlambeauError(f"[LayerNorm] normalized_shape must hold non-negative ints, got {normalized_shape}")
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        dtype = dtype if dtype is not None else fc.float32
        if elementwise_affine:
            self.weight = Parameter(fc.empty(*self.normalized_shape, dtype=dtype))
            if bias:
                self.bias = Parameter(fc.empty(*self.normalized_shape, dtype=dtype))
            else:
                self.register_parameter("bias", None)
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        if self.elementwise_affine:
            init.ones_(self.weight)
            if self.bias is not None:
                init.zeros_(self.bias)

    def forward(self, input: Tensor) -> Tensor:
        return F.layer_norm(input, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}"


class GroupNorm(Module):
    r"""Group normalization: the channels of an ``(N, C, ...)`` input in ``num_groups`` groups.

    ``weight`` (ones) and ``bias`` (zeros) of shape ``(num_channels,)`` when ``affine``.
    """

    def __init__(
        self,
        num_groups: int,
        num_channels: int,
        eps: float = 1e-5,
        affine: bool = True,
        device: Any = None,
        dtype: Any = None,
    ) -> None:
        super().__init__()
        for name, v in (("num_groups", num_groups), ("num_channels", num_channels)):
            if isinstance(v, bool) or not isinstance(v, int) or v < 0:
                raise FlambeauError(f"[GroupNorm] {name} must be a non-negative int, got {v!r}")
        if num_groups == 0 or num_channels % num_groups != 0:
            raise FlambeauError(
                f"[GroupNorm] num_channels must be divisible by num_groups, got num_channels={num_channels} "
                f"and num_groups={num_groups}"
            )
        self.num_groups = num_groups
        self.num_channels = num_channels
        self.eps = eps
        self.affine = affine
        dtype = dtype if dtype is not None else fc.float32
        if affine:
            self.weight = Parameter(fc.empty(num_channels, dtype=dtype))
            self.bias = Parameter(fc.empty(num_channels, dtype=dtype))
        else:
            self.register_parameter("weight", None)
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        if self.affine:
            init.ones_(self.weight)
            init.zeros_(self.bias)

    def forward(self, input: Tensor) -> Tensor:
        return F.group_norm(input, self.num_groups, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        return f"{self.num_groups}, {self.num_channels}, eps={self.eps}, affine={self.affine}"
