"""``LayerNorm``, ``GroupNorm``, ``RMSNorm``, ``LocalResponseNorm`` and ``CrossMapLRN2d``."""

from __future__ import annotations

from typing import Any

import flambeau_core as fc
from flambeau_core import FlambeauError, Tensor
from flambeau_core.overrides import is_tensor_like

from flambeau_nn import functional as F
from flambeau_nn import init
from flambeau_nn.modules.module import Module
from flambeau_nn.parameter import Parameter

__all__ = ["LayerNorm", "GroupNorm", "RMSNorm", "LocalResponseNorm", "CrossMapLRN2d"]


class LayerNorm(Module):
    r"""Layer normalization over the trailing ``normalized_shape`` dims.

    ``weight`` (ones) and ``bias`` (zeros) of shape ``normalized_shape`` when
    ``elementwise_affine`` (``bias=False`` drops the bias), as PyTorch.

    Example:
        >>> import flambeau_core as fc
        >>> LayerNorm(4)(fc.randn(2, 4)).shape
        flambeau.Size([2, 4])
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
        """Sets ``weight`` to ones and ``bias`` to zeros (when ``elementwise_affine``), in place.

        Example:
            >>> import flambeau_nn as nn
            >>> m = nn.LayerNorm(3)
            >>> m.reset_parameters()
            >>> m.weight.tolist(), m.bias.tolist()
            ([1.0, 1.0, 1.0], [0.0, 0.0, 0.0])
        """
        if self.elementwise_affine:
            init.ones_(self.weight)
            if self.bias is not None:
                init.zeros_(self.bias)

    def forward(self, input: Tensor) -> Tensor:
        """Normalises ``input`` ``(*, *normalized_shape)`` over its last ``len(normalized_shape)`` dims to zero mean
        and unit (biased) variance, then applies ``weight`` and ``bias``; same shape out.

        Example:
            >>> import flambeau_core as fc
            >>> import flambeau_nn as nn
            >>> y = nn.LayerNorm(4)(fc.tensor([[1.0, 2.0, 3.0, 4.0]]))
            >>> [round(v, 4) for v in y[0].tolist()]
            [-1.3416, -0.4472, 0.4472, 1.3416]
        """
        return F.layer_norm(input, self.normalized_shape, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        """``normalized_shape``, ``eps`` and ``elementwise_affine``, as shown inside ``repr(module)``.

        Example:
            >>> import flambeau_nn as nn
            >>> nn.LayerNorm(4).extra_repr()
            '(4,), eps=1e-05, elementwise_affine=True'
        """
        return f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}"


class GroupNorm(Module):
    r"""Group normalization: the channels of an ``(N, C, ...)`` input in ``num_groups`` groups.

    ``weight`` (ones) and ``bias`` (zeros) of shape ``(num_channels,)`` when ``affine``.

    Example:
        >>> import flambeau_core as fc
        >>> import flambeau_nn as nn
        >>> nn.GroupNorm(2, 6)(fc.randn(4, 6, 5, 5)).shape
        flambeau.Size([4, 6, 5, 5])
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
        """Sets the per-channel ``weight`` to ones and ``bias`` to zeros (when ``affine``), in place.

        Example:
            >>> import flambeau_nn as nn
            >>> m = nn.GroupNorm(1, 2)
            >>> m.reset_parameters()
            >>> m.weight.tolist(), m.bias.tolist()
            ([1.0, 1.0], [0.0, 0.0])
        """
        if self.affine:
            init.ones_(self.weight)
            init.zeros_(self.bias)

    def forward(self, input: Tensor) -> Tensor:
        """Splits the channels of ``input`` ``(N, C, *)`` into ``num_groups`` groups, normalises each group of each
        sample to zero mean and unit variance, then applies the per-channel ``weight`` and ``bias``; same shape out.

        Example:
            >>> import flambeau_core as fc
            >>> import flambeau_nn as nn
            >>> y = nn.GroupNorm(2, 4)(fc.arange(8.0).reshape(1, 4, 2))
            >>> [round(v, 4) for v in y[0, :2].flatten().tolist()]
            [-1.3416, -0.4472, 0.4472, 1.3416]
        """
        return F.group_norm(input, self.num_groups, self.weight, self.bias, self.eps)

    def extra_repr(self) -> str:
        """``num_groups``, ``num_channels``, ``eps`` and ``affine``, as shown inside ``repr(module)``.

        Example:
            >>> import flambeau_nn as nn
            >>> nn.GroupNorm(2, 4).extra_repr()
            '2, 4, eps=1e-05, affine=True'
        """
        return f"{self.num_groups}, {self.num_channels}, eps={self.eps}, affine={self.affine}"


class RMSNorm(Module):
    r"""Root-mean-square normalization over the trailing ``normalized_shape`` dims (``F.rms_norm``).

    ``weight`` (ones, shape ``normalized_shape``) when ``elementwise_affine``; ``eps=None`` is the
    dtype's machine epsilon, as PyTorch.

    Example:
        >>> import flambeau_core as fc
        >>> RMSNorm(4)(fc.randn(2, 4)).shape
        flambeau.Size([2, 4])
    """

    def __init__(
        self,
        normalized_shape: int | tuple[int, ...] | list[int],
        eps: float | None = None,
        elementwise_affine: bool = True,
        device: Any = None,
        dtype: Any = None,
    ) -> None:
        super().__init__()
        if isinstance(normalized_shape, int):
            normalized_shape = (normalized_shape,)
        self.normalized_shape = tuple(normalized_shape)
        for v in self.normalized_shape:
            if isinstance(v, bool) or not isinstance(v, int) or v < 0:
                raise FlambeauError(f"[RMSNorm] normalized_shape must hold non-negative ints, got {normalized_shape}")
        self.eps = eps
        self.elementwise_affine = elementwise_affine
        if elementwise_affine:
            dtype = dtype if dtype is not None else fc.float32
            self.weight = Parameter(fc.empty(*self.normalized_shape, dtype=dtype))
        else:
            self.register_parameter("weight", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Sets ``weight`` to ones (when ``elementwise_affine``), in place.

        Example:
            >>> import flambeau_nn as nn
            >>> m = nn.RMSNorm(3)
            >>> m.reset_parameters()
            >>> m.weight.tolist()
            [1.0, 1.0, 1.0]
        """
        if self.elementwise_affine:
            init.ones_(self.weight)

    def forward(self, x: Tensor) -> Tensor:
        """Divides ``x`` ``(*, *normalized_shape)`` by the root mean square of its last ``len(normalized_shape)`` dims
        (plus ``eps``; the dtype's epsilon when ``eps`` is None), then scales by ``weight``; same shape out.

        Example:
            >>> import flambeau_core as fc
            >>> import flambeau_nn as nn
            >>> y = nn.RMSNorm(2)(fc.tensor([[3.0, 4.0]]))
            >>> [round(v, 4) for v in y[0].tolist()]
            [0.8485, 1.1314]
        """
        return F.rms_norm(x, self.normalized_shape, self.weight, self.eps)

    def extra_repr(self) -> str:
        """``normalized_shape``, ``eps`` and ``elementwise_affine``, as shown inside ``repr(module)``.

        Example:
            >>> import flambeau_nn as nn
            >>> nn.RMSNorm(4).extra_repr()
            '(4,), eps=None, elementwise_affine=True'
        """
        return f"{self.normalized_shape}, eps={self.eps}, elementwise_affine={self.elementwise_affine}"


class LocalResponseNorm(Module):
    r"""Local response normalization across channels (``F.local_response_norm``).

    Example:
        >>> import flambeau_core as fc
        >>> LocalResponseNorm(2)(fc.ones(1, 4, 3, 3)).shape
        flambeau.Size([1, 4, 3, 3])
    """

    def __init__(self, size: int, alpha: float = 1e-4, beta: float = 0.75, k: float = 1.0) -> None:
        super().__init__()
        self.size = size
        self.alpha = alpha
        self.beta = beta
        self.k = k

    def forward(self, input: Tensor) -> Tensor:
        """Divides each element of ``input`` ``(N, C, *)`` by ``(k + alpha/size * sum of squares over size
        neighbouring channels) ** beta``; same shape out.

        Example:
            >>> import flambeau_core as fc
            >>> import flambeau_nn as nn
            >>> y = nn.LocalResponseNorm(2, alpha=1.0, beta=1.0, k=1.0)(fc.ones(1, 3, 1, 1))
            >>> [round(v, 4) for v in y.flatten().tolist()]
            [0.6667, 0.5, 0.5]
        """
        return F.local_response_norm(input, self.size, self.alpha, self.beta, self.k)

    def extra_repr(self) -> str:
        """``size``, ``alpha``, ``beta`` and ``k``, as shown inside ``repr(module)``.

        Example:
            >>> import flambeau_nn as nn
            >>> nn.LocalResponseNorm(2).extra_repr()
            '2, alpha=0.0001, beta=0.75, k=1.0'
        """
        return f"{self.size}, alpha={self.alpha}, beta={self.beta}, k={self.k}"


class CrossMapLRN2d(LocalResponseNorm):
    r"""PyTorch's legacy (Lua Torch) cross-channel LRN of a 4-D ``(N, C, H, W)`` input.

    ``scale_c = k + alpha / size * sum of squares over a channel window`` and
    ``out = input * scale ** -beta``. The window reproduces PyTorch's running
    sum exactly, including its quirk that channel 0's square, once in the sum,
    is never subtracted again (so it differs from ``LocalResponseNorm``).

    Example:
        >>> import flambeau_core as fc
        >>> CrossMapLRN2d(3)(fc.ones(1, 4, 2, 2)).shape
        flambeau.Size([1, 4, 2, 2])
    """

    def __init__(self, size: int, alpha: float = 1e-4, beta: float = 0.75, k: float = 1) -> None:
        super().__init__(size, alpha, beta, k)  # PyTorch's default k is the int 1 here (its repr shows it)

    def forward(self, input: Tensor) -> Tensor:
        """Applies the legacy cross-channel LRN to ``input`` ``(N, C, H, W)``; same shape out.

        Example:
            >>> import flambeau_core as fc
            >>> import flambeau_nn as nn
            >>> nn.CrossMapLRN2d(3)(fc.ones(2, 5, 4, 4)).shape
            flambeau.Size([2, 5, 4, 4])
        """
        if not is_tensor_like(input):
            raise TypeError(f"[CrossMapLRN2d] input must be a Tensor, got {type(input).__name__}")
        if input.dim() != 4:
            raise FlambeauError(
                f"[CrossMapLRN2d] expected 4D input (got {input.dim()}D input of shape {tuple(input.shape)})"
            )
        channels = input.shape[1]
        pre_pad = int((self.size - 1) / 2 + 1)
        sq = input * input
        # prefix[j] = sum of squares of channels < j; channel c sums [lo_c, hi_c) plus channel 0
        # when PyTorch's running sum already dropped past it (c > pre_pad).
        prefix = fc.cat([fc.zeros_like(sq.narrow(1, 0, 1)), sq.cumsum(1)], 1)
        hi = [min(c + pre_pad, channels) for c in range(channels)]
        lo = [c - pre_pad + 1 if c > pre_pad else 0 for c in range(channels)]
        dev = input.device
        keep0 = fc.tensor([1.0 if c > pre_pad else 0.0 for c in range(channels)], dtype=input.dtype, device=dev)
        window = prefix.index_select(1, fc.tensor(hi, device=dev)) - prefix.index_select(1, fc.tensor(lo, device=dev))
        window = window + sq.narrow(1, 0, 1) * keep0.reshape(1, channels, 1, 1)
        scale = window * (self.alpha / self.size) + self.k
        return input * scale.pow(-self.beta)
