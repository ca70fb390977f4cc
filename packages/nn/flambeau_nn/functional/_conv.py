"""Convolution and im2col (``conv1d`` ... ``fold``). Part of ``flambeau_nn.functional``, which re-exports it."""

from __future__ import annotations

from typing import Any

import flambeau_core as fc
from flambeau_core import FlambeauError, Tensor

from flambeau_nn.functional._base import _check_tensor

__all__ = ["conv1d", "conv2d", "conv_transpose1d", "conv_transpose2d", "unfold", "fold"]


def _conv_padding(
    op: str, padding: Any, weight: Tensor, stride: Any, dilation: Any, spatial: int
) -> tuple[Any, list[int] | None]:
    """PyTorch's ``padding`` of a convolution: ints, or 'valid'/'same'.

    Returns the padding for the kernel and, for 'same' with an even dilated
    kernel (PyTorch pads one more on the right there), the dims whose output
    must drop its first position: those are computed with the larger padding on
    both sides.
    """
    if not isinstance(padding, str):
        return padding, None
    if padding == "valid":
        return 0, None
    if padding != "same":
        raise FlambeauError(f"[{op}] Invalid padding string {padding!r}, should be one of 'valid' or 'same'")
    strides = [stride] * spatial if isinstance(stride, int) else list(stride)
    if any(s != 1 for s in strides):
        raise FlambeauError(f"[{op}] padding='same' is not supported for strided convolutions, got stride={stride}")
    dils = [dilation] * spatial if isinstance(dilation, int) else list(dilation)
    if len(dils) == 1:
        dils = dils * spatial
    if len(dils) != spatial or weight.dim() != spatial + 2:
        return 0, None  # the op reports the bad dilation or weight
    pads, trim = [], []
    for i in range(spatial):
        total = dils[i] * (weight.shape[2 + i] - 1)
        pads.append(total - total // 2)
        if total % 2:
            trim.append(2 + i)
    return pads, trim


def _conv(
    op: str,
    fn: Any,
    spatial: int,
    input: Tensor,
    weight: Tensor,
    bias: Tensor | None,
    stride: Any,
    padding: Any,
    dilation: Any,
    groups: int,
) -> Tensor:
    _check_tensor(input, op)
    _check_tensor(weight, op, "weight")
    if bias is not None:
        _check_tensor(bias, op, "bias")
    pad, trim = _conv_padding(op, padding, weight, stride, dilation, spatial)
    out = fn(input, weight, bias, stride, pad, dilation, groups)
    for d in trim or ():
        d = d - 2 + out.dim() - spatial  # unbatched outputs have no batch dim
        out = out.narrow(d, 1, out.shape[d] - 1)
    return out


def conv1d(
    input: Tensor,
    weight: Tensor,
    bias: Tensor | None = None,
    stride: Any = 1,
    padding: Any = 0,
    dilation: Any = 1,
    groups: int = 1,
) -> Tensor:
    r"""1-D convolution (cross-correlation) of ``(N, C_in, L)`` or ``(C_in, L)`` with ``(C_out, C_in/groups, k)``.

    ``padding`` is an int, a 1-tuple, ``'valid'`` (none) or ``'same'`` (output length = input length).

    Example:
        >>> import flambeau_core as fc
        >>> conv1d(fc.ones(2, 3, 10), fc.ones(4, 3, 3), padding="same").shape
        (2, 4, 10)
    """
    return _conv("conv1d", fc.conv1d, 1, input, weight, bias, stride, padding, dilation, groups)


def conv2d(
    input: Tensor,
    weight: Tensor,
    bias: Tensor | None = None,
    stride: Any = 1,
    padding: Any = 0,
    dilation: Any = 1,
    groups: int = 1,
) -> Tensor:
    r"""2-D convolution of ``(N, C_in, H, W)`` or ``(C_in, H, W)`` with ``(C_out, C_in/groups, kH, kW)``.

    ``padding`` is an int, a pair, ``'valid'`` or ``'same'``; ``groups == C_in`` is a depthwise convolution.

    Example:
        >>> import flambeau_core as fc
        >>> conv2d(fc.ones(1, 3, 8, 8), fc.ones(16, 3, 3, 3), stride=2, padding=1).shape
        (1, 16, 4, 4)
    """
    return _conv("conv2d", fc.conv2d, 2, input, weight, bias, stride, padding, dilation, groups)


def _conv_transpose(
    op: str,
    fn: Any,
    input: Tensor,
    weight: Tensor,
    bias: Tensor | None,
    stride: Any,
    padding: Any,
    output_padding: Any,
    groups: int,
    dilation: Any,
) -> Tensor:
    _check_tensor(input, op)
    _check_tensor(weight, op, "weight")
    if bias is not None:
        _check_tensor(bias, op, "bias")
    if isinstance(padding, str):
        raise FlambeauError(f"[{op}] padding must be an int or a tuple of ints, got {padding!r}")
    return fn(input, weight, bias, stride, padding, output_padding, groups, dilation)


def conv_transpose1d(
    input: Tensor,
    weight: Tensor,
    bias: Tensor | None = None,
    stride: Any = 1,
    padding: Any = 0,
    output_padding: Any = 0,
    groups: int = 1,
    dilation: Any = 1,
) -> Tensor:
    r"""1-D transposed convolution of ``(N, C_in, L)`` with ``(C_in, C_out/groups, k)``.

    Example:
        >>> import flambeau_core as fc
        >>> conv_transpose1d(fc.ones(2, 3, 5), fc.ones(3, 4, 3), stride=2).shape
        (2, 4, 11)
    """
    return _conv_transpose(
        "conv_transpose1d", fc.conv_transpose1d, input, weight, bias, stride, padding, output_padding, groups, dilation
    )


def conv_transpose2d(
    input: Tensor,
    weight: Tensor,
    bias: Tensor | None = None,
    stride: Any = 1,
    padding: Any = 0,
    output_padding: Any = 0,
    groups: int = 1,
    dilation: Any = 1,
) -> Tensor:
    r"""2-D transposed convolution of ``(N, C_in, H, W)`` with ``(C_in, C_out/groups, kH, kW)``.

    Example:
        >>> import flambeau_core as fc
        >>> conv_transpose2d(fc.ones(1, 3, 4, 4), fc.ones(3, 2, 3, 3), stride=2, padding=1, output_padding=1).shape
        (1, 2, 8, 8)
    """
    return _conv_transpose(
        "conv_transpose2d", fc.conv_transpose2d, input, weight, bias, stride, padding, output_padding, groups, dilation
    )


def unfold(input: Tensor, kernel_size: Any, dilation: Any = 1, padding: Any = 0, stride: Any = 1) -> Tensor:
    r"""Sliding local blocks of ``(N, C, H, W)`` (or ``(C, H, W)``) as columns ``(N, C*kH*kW, L)`` (im2col).

    Example:
        >>> import flambeau_core as fc
        >>> unfold(fc.ones(1, 2, 4, 4), kernel_size=2).shape
        (1, 8, 9)
    """
    _check_tensor(input, "unfold")
    return fc.im2col(input, kernel_size, dilation, padding, stride)


def fold(
    input: Tensor, output_size: Any, kernel_size: Any, dilation: Any = 1, padding: Any = 0, stride: Any = 1
) -> Tensor:
    r"""Sums columns ``(N, C*kH*kW, L)`` (or ``(C*kH*kW, L)``) of sliding blocks into ``(N, C, *output_size)``.

    Example:
        >>> import flambeau_core as fc
        >>> fold(fc.ones(1, 8, 9), output_size=(4, 4), kernel_size=2)[0, 0].tolist()[1]
        [2.0, 4.0, 4.0, 2.0]
    """
    _check_tensor(input, "fold")
    return fc.col2im(input, output_size, kernel_size, dilation, padding, stride)
