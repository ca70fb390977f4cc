"""Convolution layers: ``Conv1d/2d/3d``, ``ConvTranspose1d/2d/3d``, ``Unfold``, ``Fold``."""

from __future__ import annotations

import math
from typing import Any

import flambeau_core as fc
from flambeau_core import FlambeauError, Tensor

from flambeau_nn import functional as F
from flambeau_nn import init
from flambeau_nn.modules.module import Module
from flambeau_nn.parameter import Parameter

__all__ = ["Conv1d", "Conv2d", "Conv3d", "ConvTranspose1d", "ConvTranspose2d", "ConvTranspose3d", "Unfold", "Fold"]

_PADDING_MODES = ("zeros", "reflect", "replicate", "circular")


def _ntuple(value: Any, n: int, name: str, layer: str) -> tuple[int, ...]:
    if isinstance(value, bool):
        raise TypeError(f"[{layer}] {name} must be an int or a tuple of {n} ints, got {value!r}")
    if isinstance(value, int):
        return (value,) * n
    try:
        t = tuple(value)
    except TypeError:
        raise TypeError(f"[{layer}] {name} must be an int or a tuple of {n} ints, got {value!r}") from None
    if len(t) == 1 and n > 1:
        t = t * n
    if len(t) != n or not all(isinstance(v, int) and not isinstance(v, bool) for v in t):
        raise TypeError(f"[{layer}] {name} must be an int or a tuple of {n} ints, got {value!r}")
    return t


def _positive_int(value: Any, name: str, layer: str) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"[{layer}] {name} must be an int, got {type(value).__name__}")
    if value <= 0:
        raise FlambeauError(f"[{layer}] {name} must be a positive integer, got {value}")
    return value


class _ConvNd(Module):
    """The parameters, checks, initialisation and repr shared by the convolution layers."""

    _spatial = 0
    _layer = ""

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        kernel_size: Any,
        stride: Any,
        padding: Any,
        dilation: Any,
        transposed: bool,
        output_padding: Any,
        groups: int,
        bias: bool,
        padding_mode: str,
        device: Any = None,
        dtype: Any = None,
    ) -> None:
        super().__init__()
        layer, n = self._layer, self._spatial
        groups = _positive_int(groups, "groups", layer)
        for name, v in (("in_channels", in_channels), ("out_channels", out_channels)):
            if isinstance(v, bool) or not isinstance(v, int) or v < 0:
                raise FlambeauError(f"[{layer}] {name} must be a non-negative int, got {v!r}")
        if in_channels % groups != 0:
            raise FlambeauError(f"[{layer}] in_channels ({in_channels}) must be divisible by groups ({groups})")
        if out_channels % groups != 0:
            raise FlambeauError(f"[{layer}] out_channels ({out_channels}) must be divisible by groups ({groups})")
        if padding_mode not in _PADDING_MODES:
            raise FlambeauError(
                f"[{layer}] padding_mode must be one of {list(_PADDING_MODES)}, but got padding_mode={padding_mode!r}"
            )
        kernel_size = _ntuple(kernel_size, n, "kernel_size", layer)
        stride = _ntuple(stride, n, "stride", layer)
        dilation = _ntuple(dilation, n, "dilation", layer)
        if isinstance(padding, str):
            if padding not in ("same", "valid"):
                raise FlambeauError(f"[{layer}] Invalid padding string {padding!r}, should be one of 'valid' or 'same'")
            if padding == "same" and any(s != 1 for s in stride):
                raise FlambeauError(f"[{layer}] padding='same' is not supported for strided convolutions")
        else:
            padding = _ntuple(padding, n, "padding", layer)
        if padding_mode != "zeros" and transposed:
            raise FlambeauError(f'[{layer}] Only "zeros" padding mode is supported, got padding_mode={padding_mode!r}')
        # F.pad's (last dim first) amounts for padding modes other than zeros,
        # which pad the input explicitly and convolve without padding, as PyTorch.
        pad_amounts: list[int] = []
        for d in reversed(range(n)):
            if padding == "same":
                total = dilation[d] * (kernel_size[d] - 1)
                pad_amounts += [total // 2, total - total // 2]
            elif padding == "valid":
                pad_amounts += [0, 0]
            else:
                pad_amounts += [padding[d], padding[d]]
        self._reversed_padding_repeated_twice = pad_amounts
        self.in_channels = in_channels
        self.out_channels = out_channels
        self.kernel_size = kernel_size
        self.stride = stride
        self.padding = padding
        self.dilation = dilation
        self.transposed = transposed
        self.output_padding = _ntuple(output_padding, n, "output_padding", layer)
        self.groups = groups
        self.padding_mode = padding_mode
        dtype = dtype if dtype is not None else fc.float32
        if transposed:
            shape = (in_channels, out_channels // groups, *kernel_size)
        else:
            shape = (out_channels, in_channels // groups, *kernel_size)
        self.weight = Parameter(fc.empty(*shape, dtype=dtype))
        if bias:
            self.bias = Parameter(fc.empty(out_channels, dtype=dtype))
        else:
            self.register_parameter("bias", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        # PyTorch's default: kaiming_uniform_(a=sqrt(5)), i.e. U(-1/sqrt(fan_in), 1/sqrt(fan_in)).
        """Re-draws ``weight`` from ``kaiming_uniform_(a=sqrt(5))`` and ``bias`` from ``U(-1/sqrt(fan_in),
        1/sqrt(fan_in))``, in place (``fan_in`` is ``in_channels/groups`` times the kernel's size).

        Example:
            >>> import flambeau_nn as nn
            >>> m = nn.Conv1d(4, 2, 4)
            >>> m.reset_parameters()
            >>> bool((m.bias.abs() <= 0.25).all())
            True
        """
        init.kaiming_uniform_(self.weight, a=math.sqrt(5))
        if self.bias is not None:
            fan_in, _ = init._calculate_fan_in_and_fan_out(self.weight)
            if fan_in != 0:
                bound = 1 / math.sqrt(fan_in)
                init.uniform_(self.bias, -bound, bound)

    def extra_repr(self) -> str:
        """The channels, ``kernel_size`` and ``stride``, then each option that differs from its default, as shown
        inside ``repr(module)``.

        Example:
            >>> import flambeau_nn as nn
            >>> nn.Conv2d(3, 8, 3, padding=1, bias=False).extra_repr()
            '3, 8, kernel_size=(3, 3), stride=(1, 1), padding=(1, 1), bias=False'
        """
        s = f"{self.in_channels}, {self.out_channels}, kernel_size={self.kernel_size}, stride={self.stride}"
        if isinstance(self.padding, str) or self.padding != (0,) * len(self.padding):
            s += f", padding={self.padding}"
        if self.dilation != (1,) * len(self.dilation):
            s += f", dilation={self.dilation}"
        if self.output_padding != (0,) * len(self.output_padding):
            s += f", output_padding={self.output_padding}"
        if self.groups != 1:
            s += f", groups={self.groups}"
        if self.bias is None:
            s += ", bias=False"
        if self.padding_mode != "zeros":
            s += f", padding_mode={self.padding_mode}"
        return s


class _Conv(_ConvNd):
    """A forward convolution: ``padding_mode`` other than zeros pads explicitly, then convolves unpadded."""

    _fn: Any = None

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        kernel_size: Any,
        stride: Any = 1,
        padding: Any = 0,
        dilation: Any = 1,
        groups: int = 1,
        bias: bool = True,
        padding_mode: str = "zeros",
        device: Any = None,
        dtype: Any = None,
    ) -> None:
        super().__init__(
            in_channels,
            out_channels,
            kernel_size,
            stride,
            padding,
            dilation,
            False,
            0,
            groups,
            bias,
            padding_mode,
            device,
            dtype,
        )

    def forward(self, input: Tensor) -> Tensor:
        """Convolves ``input`` ``(N, C_in, *spatial)`` or unbatched ``(C_in, *spatial)`` with ``weight``, giving ``(N,
        C_out, *spatial_out)``; each ``spatial_out = (in + 2*padding - dilation*(kernel-1) - 1) // stride + 1``.

        A ``padding_mode`` other than ``"zeros"`` pads ``input`` with ``F.pad`` first.

        Example:
            >>> import flambeau_core as fc
            >>> import flambeau_nn as nn
            >>> nn.Conv1d(2, 4, 3)(fc.ones(5, 2, 10)).shape
            flambeau.Size([5, 4, 8])
            >>> nn.Conv2d(3, 8, 3, stride=2, padding=1)(fc.ones(1, 3, 32, 32)).shape
            flambeau.Size([1, 8, 16, 16])
        """
        fn = type(self)._fn
        if self.padding_mode != "zeros":
            padded = F.pad(input, self._reversed_padding_repeated_twice, mode=self.padding_mode)
            return fn(padded, self.weight, self.bias, self.stride, 0, self.dilation, self.groups)
        return fn(input, self.weight, self.bias, self.stride, self.padding, self.dilation, self.groups)


class Conv1d(_Conv):
    r"""1-D convolution over ``(N, C_in, L)`` (or ``(C_in, L)``) inputs.

    Weight ``(out_channels, in_channels/groups, kernel_size)``, bias ``(out_channels,)``; both initialised
    like PyTorch (``U(-1/sqrt(fan_in), 1/sqrt(fan_in))``).

    Example:
        >>> import flambeau_core as fc
        >>> import flambeau_nn as nn
        >>> nn.Conv1d(3, 8, 5, padding=2)(fc.ones(4, 3, 20)).shape
        flambeau.Size([4, 8, 20])
    """

    _spatial = 1
    _layer = "Conv1d"
    _fn = staticmethod(F.conv1d)


class Conv2d(_Conv):
    r"""2-D convolution over ``(N, C_in, H, W)`` (or ``(C_in, H, W)``) inputs.

    Weight ``(out_channels, in_channels/groups, kH, kW)``; ``groups=in_channels`` is a depthwise convolution.

    Example:
        >>> import flambeau_core as fc
        >>> import flambeau_nn as nn
        >>> nn.Conv2d(3, 16, 3, stride=2, padding=1)(fc.ones(2, 3, 32, 32)).shape
        flambeau.Size([2, 16, 16, 16])
    """

    _spatial = 2
    _layer = "Conv2d"
    _fn = staticmethod(F.conv2d)


class Conv3d(_Conv):
    r"""3-D convolution over ``(N, C_in, D, H, W)`` (or ``(C_in, D, H, W)``) inputs.

    Weight ``(out_channels, in_channels/groups, kD, kH, kW)``, initialised like PyTorch
    (``U(-1/sqrt(fan_in), 1/sqrt(fan_in))``, ``fan_in = in_channels/groups * kD * kH * kW``).

    Example:
        >>> import flambeau_core as fc
        >>> import flambeau_nn as nn
        >>> nn.Conv3d(2, 4, 3, padding=1)(fc.ones(1, 2, 5, 6, 6)).shape
        flambeau.Size([1, 4, 5, 6, 6])
    """

    _spatial = 3
    _layer = "Conv3d"
    _fn = staticmethod(F.conv3d)


class _ConvTransposeNd(_ConvNd):
    _fn: Any = None

    def __init__(
        self,
        in_channels: int,
        out_channels: int,
        kernel_size: Any,
        stride: Any = 1,
        padding: Any = 0,
        output_padding: Any = 0,
        groups: int = 1,
        bias: bool = True,
        dilation: Any = 1,
        padding_mode: str = "zeros",
        device: Any = None,
        dtype: Any = None,
    ) -> None:
        if isinstance(padding, str):
            raise FlambeauError(f"[{self._layer}] padding must be an int or a tuple, got {padding!r}")
        super().__init__(
            in_channels,
            out_channels,
            kernel_size,
            stride,
            padding,
            dilation,
            True,
            output_padding,
            groups,
            bias,
            padding_mode,
            device,
            dtype,
        )

    def forward(self, input: Tensor, output_size: Any = None) -> Tensor:
        """Applies the transposed convolution to ``input`` ``(N, C_in, *spatial)`` or ``(C_in, *spatial)``, giving
        ``(N, C_out, *spatial_out)``; each ``spatial_out = (in-1)*stride - 2*padding + dilation*(kernel-1) +
        output_padding + 1``.

        ``output_size``, when given, picks the ``output_padding`` that yields that size (the spatial sizes, optionally
        preceded by ``N, C``).

        Example:
            >>> import flambeau_core as fc
            >>> import flambeau_nn as nn
            >>> up = nn.ConvTranspose2d(8, 3, 3, stride=2, padding=1)
            >>> up(fc.ones(1, 8, 16, 16)).shape
            flambeau.Size([1, 3, 31, 31])
            >>> up(fc.ones(1, 8, 16, 16), output_size=(32, 32)).shape
            flambeau.Size([1, 3, 32, 32])
        """
        op = self._output_padding(input, output_size)
        return type(self)._fn(input, self.weight, self.bias, self.stride, self.padding, op, self.groups, self.dilation)

    def _output_padding(self, input: Tensor, output_size: Any) -> tuple[int, ...]:
        """The output_padding that gives ``output_size`` (PyTorch's rule), or the layer's own."""
        if output_size is None:
            return self.output_padding
        n, layer = self._spatial, self._layer
        size = list(output_size)
        if len(size) == n + 2 or (len(size) == n + 1 and input.dim() == n + 1):
            size = size[-n:]
        if len(size) != n:
            raise FlambeauError(
                f"[{layer}] output_size must have {n} or {n + 2} elements (got {len(list(output_size))})"
            )
        result = []
        for d in range(n):
            in_size = input.shape[input.dim() - n + d]
            min_size = (
                (in_size - 1) * self.stride[d] - 2 * self.padding[d] + self.dilation[d] * (self.kernel_size[d] - 1) + 1
            )
            max_size = min_size + self.stride[d] - 1
            if not (min_size <= size[d] <= max_size):
                raise FlambeauError(
                    f"[{layer}] requested an output size of {tuple(size)}, but valid sizes range from "
                    f"{min_size} to {max_size} (for an input of {tuple(input.shape)[-n:]})"
                )
            result.append(size[d] - min_size)
        return tuple(result)


class ConvTranspose1d(_ConvTransposeNd):
    r"""1-D transposed convolution; weight ``(in_channels, out_channels/groups, kernel_size)``.

    Example:
        >>> import flambeau_core as fc
        >>> import flambeau_nn as nn
        >>> nn.ConvTranspose1d(3, 8, 4, stride=2, padding=1)(fc.ones(4, 3, 10)).shape
        flambeau.Size([4, 8, 20])
    """

    _spatial = 1
    _layer = "ConvTranspose1d"
    _fn = staticmethod(F.conv_transpose1d)


class ConvTranspose2d(_ConvTransposeNd):
    r"""2-D transposed convolution; weight ``(in_channels, out_channels/groups, kH, kW)``.

    Example:
        >>> import flambeau_core as fc
        >>> import flambeau_nn as nn
        >>> nn.ConvTranspose2d(16, 8, 3, stride=2, padding=1, output_padding=1)(fc.ones(2, 16, 8, 8)).shape
        flambeau.Size([2, 8, 16, 16])
    """

    _spatial = 2
    _layer = "ConvTranspose2d"
    _fn = staticmethod(F.conv_transpose2d)


class ConvTranspose3d(_ConvTransposeNd):
    r"""3-D transposed convolution; weight ``(in_channels, out_channels/groups, kD, kH, kW)``.

    Example:
        >>> import flambeau_core as fc
        >>> import flambeau_nn as nn
        >>> nn.ConvTranspose3d(4, 2, 2, stride=2)(fc.ones(1, 4, 3, 3, 3)).shape
        flambeau.Size([1, 2, 6, 6, 6])
    """

    _spatial = 3
    _layer = "ConvTranspose3d"
    _fn = staticmethod(F.conv_transpose3d)


class Unfold(Module):
    r"""Extracts sliding local blocks: ``(N, C, H, W)`` to ``(N, C*kH*kW, L)`` (``F.unfold``).

    Example:
        >>> import flambeau_core as fc
        >>> import flambeau_nn as nn
        >>> nn.Unfold(kernel_size=(2, 3))(fc.ones(2, 5, 3, 4)).shape
        flambeau.Size([2, 30, 4])
    """

    def __init__(self, kernel_size: Any, dilation: Any = 1, padding: Any = 0, stride: Any = 1) -> None:
        super().__init__()
        self.kernel_size = kernel_size
        self.dilation = dilation
        self.padding = padding
        self.stride = stride

    def forward(self, input: Tensor) -> Tensor:
        """Extracts the sliding ``kernel_size`` blocks of ``input`` ``(N, C, *spatial)`` as columns: ``(N,
        C*prod(kernel_size), L)``, ``L`` the number of block positions.

        Example:
            >>> import flambeau_core as fc
            >>> import flambeau_nn as nn
            >>> nn.Unfold(kernel_size=2)(fc.ones(1, 3, 4, 5)).shape
            flambeau.Size([1, 12, 12])
        """
        return F.unfold(input, self.kernel_size, self.dilation, self.padding, self.stride)

    def extra_repr(self) -> str:
        """The block geometry (``kernel_size``, ``dilation``, ``padding``, ``stride``), as shown inside
        ``repr(module)``.

        Example:
            >>> import flambeau_nn as nn
            >>> nn.Unfold(2, stride=2).extra_repr()
            'kernel_size=2, dilation=1, padding=0, stride=2'
        """
        return f"kernel_size={self.kernel_size}, dilation={self.dilation}, padding={self.padding}, stride={self.stride}"


class Fold(Module):
    r"""Sums sliding local blocks back into an image: ``(N, C*kH*kW, L)`` to ``(N, C, *output_size)``.

    Example:
        >>> import flambeau_core as fc
        >>> import flambeau_nn as nn
        >>> nn.Fold(output_size=(4, 5), kernel_size=(2, 2))(fc.ones(1, 12, 12)).shape
        flambeau.Size([1, 3, 4, 5])
    """

    def __init__(
        self, output_size: Any, kernel_size: Any, dilation: Any = 1, padding: Any = 0, stride: Any = 1
    ) -> None:
        super().__init__()
        self.output_size = output_size
        self.kernel_size = kernel_size
        self.dilation = dilation
        self.padding = padding
        self.stride = stride

    def forward(self, input: Tensor) -> Tensor:
        """Sums the columns of ``input`` ``(N, C*prod(kernel_size), L)`` (or unbatched ``(C*prod(kernel_size), L)``)
        back into ``(N, C, *output_size)``; overlapping blocks add up.

        Example:
            >>> import flambeau_core as fc
            >>> import flambeau_nn as nn
            >>> out = nn.Fold(output_size=(3, 3), kernel_size=2)(fc.ones(1, 4, 4))
            >>> out[0, 0].tolist()
            [[1.0, 2.0, 1.0], [2.0, 4.0, 2.0], [1.0, 2.0, 1.0]]
        """
        return F.fold(input, self.output_size, self.kernel_size, self.dilation, self.padding, self.stride)

    def extra_repr(self) -> str:
        """The output size and block geometry, as shown inside ``repr(module)``.

        Example:
            >>> import flambeau_nn as nn
            >>> nn.Fold((4, 4), 2).extra_repr()
            'output_size=(4, 4), kernel_size=2, dilation=1, padding=0, stride=1'
        """
        return (
            f"output_size={self.output_size}, kernel_size={self.kernel_size}, dilation={self.dilation}, "
            f"padding={self.padding}, stride={self.stride}"
        )
