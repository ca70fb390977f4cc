"""Convolution and im2col (``conv1d`` ... ``fold``). Part of ``flambeau_nn.functional``, which re-exports it.

Note [3-D convolution from 2-D]
    Core has 1-D and 2-D convolution kernels only. ``conv3d`` moves the depth
    taps into the channels: ``im2col`` over depth (a ``(1, D)`` image whose
    channels are ``C*H*W``) gives every output depth its ``kD`` input slices,
    and one ``conv2d`` over ``(N*D_out, kD*C, H, W)`` with the weight reshaped
    to ``(C_out, kD*C/groups, kH, kW)`` does the rest. ``conv_transpose3d`` is
    the adjoint: one ``conv_transpose2d`` per input depth slice with the ``kD``
    taps as extra output channels, then ``col2im`` over depth sums the taps into
    their output depths. No Python loop over data; autograd differentiates
    through im2col/col2im and the 2-D kernels.
"""

from __future__ import annotations

from typing import Any

import flambeau_core as fc
from flambeau_core import FlambeauError, Tensor

from flambeau_nn.functional._base import _check_tensor

__all__ = [
    "conv1d",
    "conv2d",
    "conv3d",
    "conv_transpose1d",
    "conv_transpose2d",
    "conv_transpose3d",
    "conv_tbc",
    "unfold",
    "fold",
]


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
        flambeau.Size([2, 4, 10])
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
        flambeau.Size([1, 16, 4, 4])
    """
    return _conv("conv2d", fc.conv2d, 2, input, weight, bias, stride, padding, dilation, groups)


def _triple(v: Any, op: str, name: str, minimum: int) -> list[int]:
    """A 3-D convolution parameter as 3 ints (an int or a tuple of 1 or 3), each at least ``minimum``."""
    if isinstance(v, int) and not isinstance(v, bool):
        out = [v] * 3
    elif (
        isinstance(v, (tuple, list))
        and len(v) in (1, 3)
        and all(isinstance(x, int) and not isinstance(x, bool) for x in v)
    ):
        out = list(v) * (3 if len(v) == 1 else 1)
    else:
        raise TypeError(f"[{op}] {name} must be an int or a tuple of 3 ints, got {v!r}")
    if any(x < minimum for x in out):
        raise FlambeauError(f"[{op}] {name} must be >= {minimum} in every dim, got {tuple(out)}")
    return out


def _check_conv3d_args(
    op: str, input: Tensor, weight: Tensor, bias: Tensor | None, groups: int, transposed: bool
) -> tuple[Tensor, bool]:
    """Checks a 3-D (transposed) convolution's tensors; returns the batched input and whether it was unbatched."""
    if input.dim() not in (4, 5):
        raise FlambeauError(
            f"[{op}] expected a 4-D (C, D, H, W) or 5-D (N, C, D, H, W) input, got shape {tuple(input.shape)}"
        )
    if weight.dim() != 5:
        raise FlambeauError(f"[{op}] expected a 5-D weight, got shape {tuple(weight.shape)}")
    if input.dtype != weight.dtype or (bias is not None and bias.dtype != input.dtype):
        raise TypeError(
            f"[{op}] input, weight and bias must have the same dtype, got {input.dtype}, {weight.dtype}"
            + (f", {bias.dtype}" if bias is not None else "")
        )
    if isinstance(groups, bool) or not isinstance(groups, int) or groups < 1:
        raise FlambeauError(f"[{op}] groups must be a positive int, got {groups!r}")
    unbatched = input.dim() == 4
    x = input.unsqueeze(0) if unbatched else input
    c = x.shape[1]
    if transposed:
        if weight.shape[0] != c or c % groups:
            raise FlambeauError(
                f"[{op}] input of shape {tuple(input.shape)} has {c} channels, but the weight of shape "
                f"{tuple(weight.shape)} expects {weight.shape[0]} (divisible by groups={groups})"
            )
        out_channels = weight.shape[1] * groups
    else:
        if weight.shape[1] * groups != c:
            raise FlambeauError(
                f"[{op}] input of shape {tuple(input.shape)} has {c} channels, but the weight of shape "
                f"{tuple(weight.shape)} with groups={groups} expects {weight.shape[1] * groups}"
            )
        if weight.shape[0] % groups:
            raise FlambeauError(
                f"[{op}] weight's out channels ({weight.shape[0]}) must be divisible by groups ({groups})"
            )
        out_channels = weight.shape[0]
    if bias is not None and tuple(bias.shape) != (out_channels,):
        raise FlambeauError(f"[{op}] bias must have shape ({out_channels},), got {tuple(bias.shape)}")
    return x, unbatched


def _conv3d_composed(
    input: Tensor, weight: Tensor, bias: Tensor | None, stride: Any, padding: Any, dilation: Any, groups: int
) -> Tensor:
    # Note [3-D convolution from 2-D]
    op = "conv3d"
    x, unbatched = _check_conv3d_args(op, input, weight, bias, groups, False)
    s = _triple(stride, op, "stride", 1)
    p = _triple(padding, op, "padding", 0)
    d = _triple(dilation, op, "dilation", 1)
    n, c, depth, h, w = x.shape
    c_out, cg, kd, kh, kw = weight.shape
    out = [
        (size + 2 * p[i] - d[i] * (k - 1) - 1) // s[i] + 1
        for i, (size, k) in enumerate(((depth, kd), (h, kh), (w, kw)))
    ]
    if any(o <= 0 for o in out):
        raise FlambeauError(
            f"[{op}] the kernel {tuple(weight.shape[2:])} (dilation {tuple(d)}) does not fit in the input "
            f"{tuple(input.shape)} padded by {tuple(p)}: output size would be {tuple(out)}"
        )
    d_out = out[0]
    cols = fc.im2col(x.permute(0, 1, 3, 4, 2).reshape(n, c * h * w, 1, depth), [1, kd], [1, d[0]], [0, p[0]], [1, s[0]])
    cols = cols.reshape(n, groups, cg, h, w, kd, d_out).permute(0, 6, 1, 5, 2, 3, 4).reshape(n * d_out, c * kd, h, w)
    w2 = weight.permute(0, 2, 1, 3, 4).reshape(c_out, kd * cg, kh, kw)
    y = fc.conv2d(cols, w2, None, s[1:], p[1:], d[1:], groups)
    y = y.reshape(n, d_out, c_out, y.shape[2], y.shape[3]).permute(0, 2, 1, 3, 4)
    y = y + bias.reshape(1, c_out, 1, 1, 1) if bias is not None else y.contiguous()
    return y.squeeze(0) if unbatched else y


def conv3d(
    input: Tensor,
    weight: Tensor,
    bias: Tensor | None = None,
    stride: Any = 1,
    padding: Any = 0,
    dilation: Any = 1,
    groups: int = 1,
) -> Tensor:
    r"""3-D convolution of ``(N, C_in, D, H, W)`` or ``(C_in, D, H, W)`` with ``(C_out, C_in/groups, kD, kH, kW)``.

    ``padding`` is an int, a triple, ``'valid'`` or ``'same'``. Built from ``im2col`` over depth and one
    ``conv2d`` (Note [3-D convolution from 2-D]).

    Example:
        >>> import flambeau_core as fc
        >>> conv3d(fc.ones(1, 2, 4, 5, 5), fc.ones(3, 2, 3, 3, 3), padding=1).shape
        flambeau.Size([1, 3, 4, 5, 5])
    """
    return _conv("conv3d", _conv3d_composed, 3, input, weight, bias, stride, padding, dilation, groups)


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
        flambeau.Size([2, 4, 11])
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
        flambeau.Size([1, 2, 8, 8])
    """
    return _conv_transpose(
        "conv_transpose2d", fc.conv_transpose2d, input, weight, bias, stride, padding, output_padding, groups, dilation
    )


def _conv_transpose3d_composed(
    input: Tensor,
    weight: Tensor,
    bias: Tensor | None,
    stride: Any,
    padding: Any,
    output_padding: Any,
    groups: int,
    dilation: Any,
) -> Tensor:
    # Note [3-D convolution from 2-D]
    op = "conv_transpose3d"
    x, unbatched = _check_conv3d_args(op, input, weight, bias, groups, True)
    s = _triple(stride, op, "stride", 1)
    p = _triple(padding, op, "padding", 0)
    op_pad = _triple(output_padding, op, "output_padding", 0)
    d = _triple(dilation, op, "dilation", 1)
    if any(op_pad[i] >= max(s[i], d[i]) for i in range(3)):
        raise FlambeauError(
            f"[{op}] output padding must be smaller than either stride or dilation, got output_padding="
            f"{tuple(op_pad)}, stride={tuple(s)}, dilation={tuple(d)}"
        )
    n, c, depth, h, w = x.shape
    _, og, kd, kh, kw = weight.shape
    c_out = og * groups
    full = (depth - 1) * s[0] + d[0] * (kd - 1) + 1
    d_out = full - 2 * p[0] + op_pad[0]
    if d_out <= 0:
        raise FlambeauError(
            f"[{op}] the output depth would be {d_out} for an input of shape {tuple(input.shape)}, kernel "
            f"{tuple(weight.shape[2:])} and padding {tuple(p)}"
        )
    xs = x.permute(0, 2, 1, 3, 4).reshape(n * depth, c, h, w)
    w2 = weight.permute(0, 2, 1, 3, 4).reshape(c, kd * og, kh, kw)
    y = fc.conv_transpose2d(xs, w2, None, s[1:], p[1:], op_pad[1:], groups, d[1:])
    ho, wo = y.shape[2], y.shape[3]
    # (N, [groups, og, Ho, Wo], kD, D): col2im's channel-major column order over a (1, full) image.
    cols = (
        y.reshape(n, depth, groups, kd, og, ho, wo).permute(0, 2, 4, 5, 6, 3, 1).reshape(n, c_out * ho * wo * kd, depth)
    )
    z = fc.col2im(cols, [1, full], [1, kd], [1, d[0]], [0, 0], [1, s[0]]).reshape(n, c_out, ho, wo, full)
    # Crop the padding and add output_padding on the depth's right end (the padding may already cover it).
    z = fc._C._pad_nd(z, [-p[0], d_out - full + p[0]], "constant", 0.0).permute(0, 1, 4, 2, 3)
    z = z + bias.reshape(1, c_out, 1, 1, 1) if bias is not None else z.contiguous()
    return z.squeeze(0) if unbatched else z


def conv_transpose3d(
    input: Tensor,
    weight: Tensor,
    bias: Tensor | None = None,
    stride: Any = 1,
    padding: Any = 0,
    output_padding: Any = 0,
    groups: int = 1,
    dilation: Any = 1,
) -> Tensor:
    r"""3-D transposed convolution of ``(N, C_in, D, H, W)`` with ``(C_in, C_out/groups, kD, kH, kW)``.

    Built from ``conv_transpose2d`` and ``col2im`` over depth (Note [3-D convolution from 2-D]).

    Example:
        >>> import flambeau_core as fc
        >>> conv_transpose3d(fc.ones(1, 2, 3, 4, 4), fc.ones(2, 5, 2, 2, 2), stride=2).shape
        flambeau.Size([1, 5, 6, 8, 8])
    """
    return _conv_transpose(
        "conv_transpose3d",
        _conv_transpose3d_composed,
        input,
        weight,
        bias,
        stride,
        padding,
        output_padding,
        groups,
        dilation,
    )


def conv_tbc(input: Tensor, weight: Tensor, bias: Tensor, pad: int = 0) -> Tensor:
    r"""1-D convolution of a time-batch-channel ``(T, B, C_in)`` input with a ``(k, C_in, C_out)`` weight.

    The result is ``(T + 2 * pad - k + 1, B, C_out)``: ``conv1d`` with the layouts permuted.

    Example:
        >>> import flambeau_core as fc
        >>> conv_tbc(fc.ones(5, 2, 3), fc.ones(3, 3, 4), fc.zeros(4), pad=1).shape
        flambeau.Size([5, 2, 4])
    """
    op = "conv_tbc"
    _check_tensor(input, op)
    _check_tensor(weight, op, "weight")
    _check_tensor(bias, op, "bias")
    if input.dim() != 3 or weight.dim() != 3 or bias.dim() != 1:
        raise FlambeauError(
            f"[{op}] expected a 3-D input (T, B, C_in), a 3-D weight (k, C_in, C_out) and a 1-D bias, got "
            f"{tuple(input.shape)}, {tuple(weight.shape)}, {tuple(bias.shape)}"
        )
    if input.shape[2] != weight.shape[1] or bias.shape[0] != weight.shape[2]:
        raise FlambeauError(
            f"[{op}] input {tuple(input.shape)}, weight {tuple(weight.shape)} and bias {tuple(bias.shape)} "
            f"disagree on the channels"
        )
    out = conv1d(input.permute(1, 2, 0), weight.permute(2, 1, 0), bias, 1, pad)
    return out.permute(2, 0, 1)


def unfold(input: Tensor, kernel_size: Any, dilation: Any = 1, padding: Any = 0, stride: Any = 1) -> Tensor:
    r"""Sliding local blocks of ``(N, C, H, W)`` (or ``(C, H, W)``) as columns ``(N, C*kH*kW, L)`` (im2col).

    Example:
        >>> import flambeau_core as fc
        >>> unfold(fc.ones(1, 2, 4, 4), kernel_size=2).shape
        flambeau.Size([1, 8, 9])
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
