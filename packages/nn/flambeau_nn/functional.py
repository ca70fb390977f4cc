"""Stateless functions behind the layers and losses (``flambeau_nn.functional``, PyTorch's ``F``).

Everything here is composed from core ops, so autograd differentiates it
through core's derivative table: no function here has a backward of its own.

Example:
    >>> import flambeau_core as fc
    >>> import flambeau_nn.functional as F
    >>> F.relu(fc.tensor([-1.0, 2.0])).tolist()
    [0.0, 2.0]
"""

from __future__ import annotations

import math
import warnings
from typing import Any

import flambeau_autograd as fa
import flambeau_core as fc
from flambeau_core import FlambeauError, Tensor

__all__ = [
    "linear",
    "relu",
    "tanh",
    "sigmoid",
    "softmax",
    "log_softmax",
    "cross_entropy",
    "nll_loss",
    "mse_loss",
    "dropout",
    # activations and losses
    "relu_",
    "gelu",
    "silu",
    "mish",
    "leaky_relu",
    "leaky_relu_",
    "elu",
    "elu_",
    "selu",
    "selu_",
    "celu",
    "celu_",
    "softplus",
    "hardtanh",
    "hardtanh_",
    "relu6",
    "hardswish",
    "hardsigmoid",
    "logsigmoid",
    "softsign",
    "prelu",
    "glu",
    "binary_cross_entropy",
    "binary_cross_entropy_with_logits",
    "l1_loss",
    "smooth_l1_loss",
    "huber_loss",
    "kl_div",
    "margin_ranking_loss",
    "cosine_similarity",
    "pairwise_distance",
    "scaled_dot_product_attention",
]

_REDUCTIONS = ("mean", "sum", "none")


def _check_tensor(x: object, op: str, what: str = "input") -> None:
    if not isinstance(x, Tensor):
        raise TypeError(f"[{op}] {what} must be a Tensor, got {type(x).__name__}")


def _shape(t: Tensor) -> tuple[int, ...]:
    return tuple(t.shape)


# ``input @ weight.T + bias`` as ONE core op (a GEMM with the bias in its
# epilogue, and one autograd node): F.linear is core's ``linear`` itself, so a
# call costs no Python frame. It checks its arguments in C++: TypeError for a
# non-tensor or mismatched dtypes, ValueError naming the shapes otherwise.
linear = fc.linear


def relu(input: Tensor, inplace: bool = False) -> Tensor:
    """``max(input, 0)`` elementwise (in place with ``inplace=True``)."""
    _check_tensor(input, "relu")
    return input.relu_() if inplace else fc.relu(input)


def relu_(input: Tensor) -> Tensor:
    """In-place ``relu``."""
    _check_tensor(input, "relu_")
    return input.relu_()


def tanh(input: Tensor) -> Tensor:
    _check_tensor(input, "tanh")
    return fc.tanh(input)


def sigmoid(input: Tensor) -> Tensor:
    _check_tensor(input, "sigmoid")
    return fc.sigmoid(input)


def log_softmax(input: Tensor, dim: int, dtype: Any = None) -> Tensor:
    """``log(softmax(input, dim))``, computed stably by core's log_softmax kernel; ``dtype`` casts the input first."""
    _check_tensor(input, "log_softmax")
    return fc.log_softmax(input, dim, dtype=dtype)


def softmax(input: Tensor, dim: int, dtype: Any = None) -> Tensor:
    """``exp(input) / exp(input).sum(dim)``, stably (``exp(log_softmax)``); ``dtype`` casts the input first."""
    _check_tensor(input, "softmax")
    return fc.softmax(input, dim, dtype=dtype)


def _reduce(loss: Tensor, reduction: str, op: str) -> Tensor:
    if reduction == "mean":
        return loss.mean()
    if reduction == "sum":
        return loss.sum()
    if reduction == "none":
        return loss
    raise FlambeauError(f"[{op}] {reduction!r} is not a valid value for reduction: use one of {_REDUCTIONS}")


# ---- convolution and im2col ----

__all__ += ["conv1d", "conv2d", "conv_transpose1d", "conv_transpose2d", "unfold", "fold"]


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


# ---- pooling, padding, resampling ----


__all__ += [
    "max_pool1d",
    "max_pool2d",
    "max_unpool2d",
    "avg_pool1d",
    "avg_pool2d",
    "adaptive_avg_pool1d",
    "adaptive_avg_pool2d",
    "adaptive_max_pool1d",
    "adaptive_max_pool2d",
    "pad",
    "interpolate",
    "upsample",
    "pixel_shuffle",
    "pixel_unshuffle",
    "one_hot",
]


def _int_list(v: Any, n: int, op: str, name: str) -> list[int]:
    """A pooling parameter as a list of ints: an int, or a tuple/list of 1 or n ints."""
    if isinstance(v, bool):
        raise TypeError(f"[{op}] {name} must be an int or a tuple of {n} ints, got bool")
    if isinstance(v, int):
        return [v]
    if isinstance(v, (tuple, list)) and all(isinstance(x, int) and not isinstance(x, bool) for x in v):
        if len(v) not in (1, n):
            raise FlambeauError(f"[{op}] {name} must be a single int or a tuple of {n} ints, got {tuple(v)}")
        return list(v)
    raise TypeError(f"[{op}] {name} must be an int or a tuple of {n} ints, got {type(v).__name__}")


def _stride(stride: Any, n: int, op: str) -> list[int]:
    # None (or an empty list, as PyTorch's functional accepts) means the kernel size.
    if stride is None or (isinstance(stride, (tuple, list)) and len(stride) == 0):
        return []
    return _int_list(stride, n, op, "stride")


def _check_rank(input: Tensor, ranks: tuple[int, ...], op: str, layout: str) -> None:
    if input.dim() not in ranks:
        raise FlambeauError(f"[{op}] expected a {layout} input, got shape {_shape(input)}")


def max_pool1d(
    input: Tensor,
    kernel_size: Any,
    stride: Any = None,
    padding: Any = 0,
    dilation: Any = 1,
    ceil_mode: bool = False,
    return_indices: bool = False,
) -> Any:
    r"""1-D max pooling over a ``(N, C, L)`` or ``(C, L)`` input.

    With ``return_indices`` also returns the int64 position of each maximum in ``L``.
    """
    _check_tensor(input, "max_pool1d")
    _check_rank(input, (2, 3), "max_pool1d", "2-D (C, L) or 3-D (N, C, L)")
    out, idx = fc.max_pool1d_with_indices(
        input,
        _int_list(kernel_size, 1, "max_pool1d", "kernel_size"),
        _stride(stride, 1, "max_pool1d"),
        _int_list(padding, 1, "max_pool1d", "padding"),
        _int_list(dilation, 1, "max_pool1d", "dilation"),
        bool(ceil_mode),
    )
    return (out, idx) if return_indices else out


def max_pool2d(
    input: Tensor,
    kernel_size: Any,
    stride: Any = None,
    padding: Any = 0,
    dilation: Any = 1,
    ceil_mode: bool = False,
    return_indices: bool = False,
) -> Any:
    r"""2-D max pooling over a ``(N, C, H, W)`` or ``(C, H, W)`` input.

    ``stride`` defaults to ``kernel_size``. With ``return_indices`` also returns
    the int64 index of each maximum, flattened within its ``(H, W)`` plane
    (``h * W + w``), as PyTorch (the first maximum in scan order wins a tie).

    Example:
        >>> import flambeau_core as fc
        >>> max_pool2d(fc.arange(16.0).reshape(1, 1, 4, 4), 2).tolist()
        [[[[5.0, 7.0], [13.0, 15.0]]]]
    """
    _check_tensor(input, "max_pool2d")
    _check_rank(input, (3, 4), "max_pool2d", "3-D (C, H, W) or 4-D (N, C, H, W)")
    out, idx = fc.max_pool2d_with_indices(
        input,
        _int_list(kernel_size, 2, "max_pool2d", "kernel_size"),
        _stride(stride, 2, "max_pool2d"),
        _int_list(padding, 2, "max_pool2d", "padding"),
        _int_list(dilation, 2, "max_pool2d", "dilation"),
        bool(ceil_mode),
    )
    return (out, idx) if return_indices else out


def max_unpool2d(
    input: Tensor,
    indices: Tensor,
    kernel_size: Any,
    stride: Any = None,
    padding: Any = 0,
    output_size: Any = None,
) -> Tensor:
    r"""The partial inverse of ``max_pool2d``: each value put at its index, zeros elsewhere.

    ``output_size`` (``(H, W)`` or the full shape) picks among the sizes the pooling could have come from.
    """
    _check_tensor(input, "max_unpool2d")
    _check_tensor(indices, "max_unpool2d", "indices")
    _check_rank(input, (3, 4), "max_unpool2d", "3-D (C, H, W) or 4-D (N, C, H, W)")
    if indices.dtype != fc.int64:
        raise TypeError(f"[max_unpool2d] indices must be int64, got {indices.dtype}")
    if _shape(indices) != _shape(input):
        raise FlambeauError(f"[max_unpool2d] indices shape {_shape(indices)} must equal input shape {_shape(input)}")
    k = _int_list(kernel_size, 2, "max_unpool2d", "kernel_size")
    k = k * 2 if len(k) == 1 else k
    s = _stride(stride, 2, "max_unpool2d") or k
    s = s * 2 if len(s) == 1 else s
    p = _int_list(padding, 2, "max_unpool2d", "padding")
    p = p * 2 if len(p) == 1 else p
    default = [(input.shape[-2 + i] - 1) * s[i] - 2 * p[i] + k[i] for i in range(2)]
    if output_size is None:
        size = default
    else:
        size = list(output_size)
        if len(size) == input.dim():
            size = size[-2:]
        if len(size) != 2:
            raise FlambeauError(
                f"[max_unpool2d] output_size must have 2 or {input.dim()} elements, got {tuple(output_size)}"
            )
        for i in range(2):
            lo, hi = default[i] - s[i], default[i] + s[i]
            if not lo < size[i] < hi:
                raise FlambeauError(
                    f"[max_unpool2d] invalid output_size {tuple(output_size)}: dim {i} must be in ({lo}, {hi})"
                )
    plane = size[0] * size[1]
    lead = _shape(input)[:-2]
    flat_in = input.reshape(lead + (-1,))
    flat_idx = indices.reshape(lead + (-1,))
    if flat_idx.numel() > 0:
        lo, hi = -int((-flat_idx).max().item()), int(flat_idx.max().item())
        if lo < 0 or hi >= plane:
            raise IndexError(
                f"[max_unpool2d] an index is out of bounds for output size {tuple(size)} "
                f"(valid: 0..{plane - 1}); found indices in {lo}..{hi}"
            )
    out = fc.scatter_add(fc.zeros(lead + (plane,), dtype=input.dtype), input.dim() - 2, flat_idx, flat_in)
    return out.reshape(lead + tuple(size))


def avg_pool1d(
    input: Tensor,
    kernel_size: Any,
    stride: Any = None,
    padding: Any = 0,
    ceil_mode: bool = False,
    count_include_pad: bool = True,
) -> Tensor:
    r"""1-D average pooling over a ``(N, C, L)`` or ``(C, L)`` input."""
    _check_tensor(input, "avg_pool1d")
    _check_rank(input, (2, 3), "avg_pool1d", "2-D (C, L) or 3-D (N, C, L)")
    return fc.avg_pool1d(
        input,
        _int_list(kernel_size, 1, "avg_pool1d", "kernel_size"),
        _stride(stride, 1, "avg_pool1d"),
        _int_list(padding, 1, "avg_pool1d", "padding"),
        bool(ceil_mode),
        bool(count_include_pad),
    )


def avg_pool2d(
    input: Tensor,
    kernel_size: Any,
    stride: Any = None,
    padding: Any = 0,
    ceil_mode: bool = False,
    count_include_pad: bool = True,
    divisor_override: int | None = None,
) -> Tensor:
    r"""2-D average pooling over a ``(N, C, H, W)`` or ``(C, H, W)`` input.

    ``count_include_pad`` counts the zero padding in the divisor; ``divisor_override`` replaces the divisor.
    """
    _check_tensor(input, "avg_pool2d")
    _check_rank(input, (3, 4), "avg_pool2d", "3-D (C, H, W) or 4-D (N, C, H, W)")
    return fc.avg_pool2d(
        input,
        _int_list(kernel_size, 2, "avg_pool2d", "kernel_size"),
        _stride(stride, 2, "avg_pool2d"),
        _int_list(padding, 2, "avg_pool2d", "padding"),
        bool(ceil_mode),
        bool(count_include_pad),
        divisor_override,
    )


def _adaptive_size(input: Tensor, output_size: Any, n: int, op: str) -> list[int]:
    # An int, or a tuple whose None entries keep the input's size.
    if isinstance(output_size, int) and not isinstance(output_size, bool):
        return [output_size] * n
    if isinstance(output_size, (tuple, list)) and len(output_size) == n:
        out = []
        for i, v in enumerate(output_size):
            if v is None:
                out.append(input.shape[input.dim() - n + i])
            elif isinstance(v, int) and not isinstance(v, bool):
                out.append(v)
            else:
                raise TypeError(f"[{op}] output_size must hold ints or None, got {output_size!r}")
        return out
    raise TypeError(f"[{op}] output_size must be an int or a tuple of {n} ints (or None), got {output_size!r}")


def adaptive_avg_pool1d(input: Tensor, output_size: Any) -> Tensor:
    r"""Averages ``L`` down to ``output_size`` adaptive windows (``(N, C, L)`` or ``(C, L)`` input)."""
    _check_tensor(input, "adaptive_avg_pool1d")
    _check_rank(input, (2, 3), "adaptive_avg_pool1d", "2-D (C, L) or 3-D (N, C, L)")
    return fc.adaptive_avg_pool1d(input, _adaptive_size(input, output_size, 1, "adaptive_avg_pool1d"))


def adaptive_avg_pool2d(input: Tensor, output_size: Any) -> Tensor:
    r"""Averages ``(H, W)`` down to ``output_size`` adaptive windows; ``1`` is global average pooling."""
    _check_tensor(input, "adaptive_avg_pool2d")
    _check_rank(input, (3, 4), "adaptive_avg_pool2d", "3-D (C, H, W) or 4-D (N, C, H, W)")
    return fc.adaptive_avg_pool2d(input, _adaptive_size(input, output_size, 2, "adaptive_avg_pool2d"))


def adaptive_max_pool1d(input: Tensor, output_size: Any, return_indices: bool = False) -> Any:
    r"""Maxima over ``output_size`` adaptive windows of ``L``, with their indices if ``return_indices``."""
    _check_tensor(input, "adaptive_max_pool1d")
    _check_rank(input, (2, 3), "adaptive_max_pool1d", "2-D (C, L) or 3-D (N, C, L)")
    out, idx = fc.adaptive_max_pool1d(input, _adaptive_size(input, output_size, 1, "adaptive_max_pool1d"))
    return (out, idx) if return_indices else out


def adaptive_max_pool2d(input: Tensor, output_size: Any, return_indices: bool = False) -> Any:
    r"""Maxima over the adaptive windows of ``(H, W)``, with their per-plane indices if ``return_indices``."""
    _check_tensor(input, "adaptive_max_pool2d")
    _check_rank(input, (3, 4), "adaptive_max_pool2d", "3-D (C, H, W) or 4-D (N, C, H, W)")
    out, idx = fc.adaptive_max_pool2d(input, _adaptive_size(input, output_size, 2, "adaptive_max_pool2d"))
    return (out, idx) if return_indices else out


_PAD_MODES = ("constant", "reflect", "replicate", "circular")


def pad(input: Tensor, pad: Any, mode: str = "constant", value: float | None = None) -> Tensor:
    r"""Pads the trailing ``len(pad) // 2`` dims: ``pad = (left, right, top, bottom, ...)``, last dim first.

    ``mode``: ``'constant'`` (with ``value``, default 0; negative pads crop, any number of dims),
    ``'reflect'``, ``'replicate'`` or ``'circular'`` (the last 1, 2 or 3 dims, as PyTorch).

    Example:
        >>> import flambeau_core as fc
        >>> pad(fc.tensor([[1.0, 2.0]]), (1, 1), mode="reflect").tolist()
        [[2.0, 1.0, 2.0, 1.0]]
    """
    _check_tensor(input, "pad")
    if mode not in _PAD_MODES:
        raise NotImplementedError(f"[pad] unsupported padding mode {mode!r}: use one of {_PAD_MODES}")
    if not isinstance(pad, (tuple, list)) or not all(isinstance(p, int) and not isinstance(p, bool) for p in pad):
        raise TypeError(f"[pad] pad must be a tuple of ints, got {pad!r}")
    if mode != "constant" and value is not None and value != 0:
        raise FlambeauError(f"[pad] padding mode {mode!r} doesn't take in value argument")
    return fc._C._pad_nd(input, list(pad), mode, 0.0 if value is None else float(value))


_INTERP_MODES = ("nearest", "linear", "bilinear")


def interpolate(
    input: Tensor,
    size: Any = None,
    scale_factor: Any = None,
    mode: str = "nearest",
    align_corners: bool | None = None,
    recompute_scale_factor: bool | None = None,
    antialias: bool = False,
) -> Tensor:
    r"""Resizes a ``(N, C, L)`` or ``(N, C, H, W)`` input to ``size`` or by ``scale_factor``.

    Modes: ``'nearest'`` (source index ``floor(dst / scale_factor)``), ``'linear'``
    (3-D input) and ``'bilinear'`` (4-D input), with ``align_corners``. With
    ``scale_factor`` the output size is ``floor(in * scale_factor)`` and the
    kernel uses the given factor, unless ``recompute_scale_factor`` asks for
    the ratio of the sizes instead (PyTorch's rules).
    """
    _check_tensor(input, "interpolate")
    if antialias:
        raise NotImplementedError("[interpolate] antialias=True is not supported")
    if mode not in _INTERP_MODES:
        raise NotImplementedError(f"[interpolate] mode {mode!r} is not supported: use one of {_INTERP_MODES}")
    if mode == "nearest":
        if align_corners is not None:
            raise FlambeauError(
                "[interpolate] align_corners option can only be set with the interpolating modes: linear | bilinear"
            )
    elif align_corners is None:
        align_corners = False
    dim = input.dim() - 2
    if dim not in (1, 2):
        raise NotImplementedError(
            f"[interpolate] input must be 3-D (N, C, L) or 4-D (N, C, H, W), got shape {_shape(input)}"
        )
    if mode == "linear" and dim != 1:
        raise NotImplementedError(f"[interpolate] got {input.dim()}-D input, but linear mode needs 3-D input")
    if mode == "bilinear" and dim != 2:
        raise NotImplementedError(f"[interpolate] got {input.dim()}-D input, but bilinear mode needs 4-D input")
    spatial = list(_shape(input)[2:])
    scales: list[float] | None = None
    if size is not None and scale_factor is not None:
        raise FlambeauError("[interpolate] only one of size or scale_factor should be defined")
    if size is not None:
        if isinstance(size, (tuple, list)):
            if len(size) != dim:
                raise FlambeauError(
                    f"[interpolate] input and output must have the same number of spatial dims, but got input "
                    f"with spatial dims {spatial} and output size {tuple(size)}"
                )
            out_size = [int(s) for s in size]
        else:
            out_size = [int(size)] * dim
        if recompute_scale_factor:
            raise FlambeauError("[interpolate] recompute_scale_factor is not meaningful with an explicit size")
    elif scale_factor is not None:
        if isinstance(scale_factor, (tuple, list)):
            if len(scale_factor) != dim:
                raise FlambeauError(
                    f"[interpolate] input and scale_factor must have the same number of spatial dims, but got "
                    f"input with spatial dims {spatial} and scale_factor {tuple(scale_factor)}"
                )
            scales = [float(s) for s in scale_factor]
        else:
            scales = [float(scale_factor)] * dim
        if not all(0.0 < s < float("inf") for s in scales):
            raise FlambeauError(f"[interpolate] scale_factor must be positive and finite, got {scale_factor!r}")
        out_size = [int((float(spatial[i]) * scales[i]) // 1) for i in range(dim)]  # floor
        if recompute_scale_factor:
            scales = None
    else:
        raise FlambeauError("[interpolate] either size or scale_factor should be defined")
    if any(s <= 0 for s in out_size):
        raise FlambeauError(
            f"[interpolate] input and output sizes should be greater than 0, but got input spatial sizes "
            f"{spatial} and output size {out_size}"
        )
    x = input.unsqueeze(2) if dim == 1 else input
    size2 = [1, out_size[0]] if dim == 1 else out_size
    sh = None if dim == 1 or scales is None else scales[0]
    sw = None if scales is None else scales[-1]
    if mode == "nearest":
        out = fc.upsample_nearest2d(x, size2, sh, sw)
    else:
        out = fc.upsample_bilinear2d(x, size2, bool(align_corners), sh, sw)
    return out.squeeze(2) if dim == 1 else out


def upsample(
    input: Tensor, size: Any = None, scale_factor: Any = None, mode: str = "nearest", align_corners: bool | None = None
) -> Tensor:
    """Deprecated alias of :func:`interpolate`."""
    return interpolate(input, size, scale_factor, mode, align_corners)


def pixel_shuffle(input: Tensor, upscale_factor: int) -> Tensor:
    r"""``(*, C * r**2, H, W) -> (*, C, H * r, W * r)`` with ``r = upscale_factor``."""
    _check_tensor(input, "pixel_shuffle")
    return fc.pixel_shuffle(input, upscale_factor)


def pixel_unshuffle(input: Tensor, downscale_factor: int) -> Tensor:
    r"""``(*, C, H * r, W * r) -> (*, C * r**2, H, W)``, the inverse of :func:`pixel_shuffle`."""
    _check_tensor(input, "pixel_unshuffle")
    return fc.pixel_unshuffle(input, downscale_factor)


def one_hot(tensor: Tensor, num_classes: int = -1) -> Tensor:
    r"""int64 one-hot encoding of int64 class indices: shape ``(*tensor.shape, num_classes)``.

    ``num_classes=-1`` infers ``tensor.max() + 1``.

    Example:
        >>> import flambeau_core as fc
        >>> one_hot(fc.tensor([0, 2]), 3).tolist()
        [[1, 0, 0], [0, 0, 1]]
    """
    _check_tensor(tensor, "one_hot", "tensor")
    return fc.one_hot(tensor, num_classes)


# ---- normalization, embedding, dropout ----

# Core's fused kernels (src/cpu/norm_*.cpp, src/cpu/embedding.cpp) with their
# derivatives in flambeau-autograd's table; these functions check arguments as
# PyTorch does and pick the op.

__all__ += [
    "batch_norm",
    "instance_norm",
    "layer_norm",
    "group_norm",
    "embedding",
    "embedding_bag",
    "dropout1d",
    "dropout2d",
    "dropout3d",
]


def _check_p(p: float, op: str) -> None:
    if not 0.0 <= p <= 1.0:
        raise FlambeauError(f"[{op}] dropout probability has to be between 0 and 1, but got {p}")


def dropout(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    r"""Zeroes each element with probability ``p`` and scales the rest by ``1/(1-p)`` (training only).

    One fused kernel (``native_dropout``) draws the mask and scales in one pass; the
    backward reuses the mask. The mask comes from core's generator (seeded by
    ``flambeau_core.manual_seed``), so the zeroed positions differ from PyTorch's.
    ``training=False`` or ``p=0`` returns ``input`` itself.
    """
    _check_tensor(input, "dropout")
    _check_p(p, "dropout")
    if not training or p == 0.0 or input.numel() == 0:
        return input
    out = fc.native_dropout(input, p, True)[0]
    return input.copy_(out) if inplace else out


def _feature_dropout(input: Tensor, p: float, training: bool, inplace: bool) -> Tensor:
    if not training or p == 0.0 or input.numel() == 0:
        return input
    out = fc._feature_dropout(input, p)[0]
    return input.copy_(out) if inplace else out


def dropout1d(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    """Zeroes whole channels of an ``(N, C, L)`` or ``(C, L)`` input with probability ``p``."""
    _check_tensor(input, "dropout1d")
    _check_p(p, "dropout1d")
    if input.dim() not in (2, 3):
        raise FlambeauError(
            f"[dropout1d] Expected 2D or 3D input, but received a {input.dim()}D input of shape {_shape(input)}"
        )
    if input.dim() == 2:
        return _feature_dropout(input.unsqueeze(0), p, training, inplace).squeeze(0)
    return _feature_dropout(input, p, training, inplace)


def dropout2d(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    """Zeroes whole channels of an ``(N, C, H, W)`` input with probability ``p``.

    As PyTorch, a 3-D input is read as ``(N, C, L)`` (channel-wise 1-D dropout) with a warning.
    """
    _check_tensor(input, "dropout2d")
    _check_p(p, "dropout2d")
    if input.dim() not in (3, 4):
        warnings.warn(
            f"dropout2d: Received a {input.dim()}-D input to dropout2d, which is deprecated and will result in an "
            "error in a future release. To retain the behavior and silence this warning, please use dropout instead.",
            stacklevel=2,
        )
    if input.dim() == 3:
        warnings.warn(
            "dropout2d: Received a 3D input to dropout2d and assuming that channel-wise 1D dropout behavior is "
            "desired - input is interpreted as shape (N, C, L), where C is the channel dim.",
            stacklevel=2,
        )
    if input.dim() < 2:
        raise FlambeauError(f"[dropout2d] Feature dropout requires at least 2 dimensions, got shape {_shape(input)}")
    return _feature_dropout(input, p, training, inplace)


def dropout3d(input: Tensor, p: float = 0.5, training: bool = True, inplace: bool = False) -> Tensor:
    """Zeroes whole channels of an ``(N, C, D, H, W)`` or ``(C, D, H, W)`` input with probability ``p``."""
    _check_tensor(input, "dropout3d")
    _check_p(p, "dropout3d")
    if input.dim() not in (4, 5):
        warnings.warn(
            f"dropout3d: Received a {input.dim()}-D input to dropout3d, which is deprecated and will result in an "
            "error in a future release.",
            stacklevel=2,
        )
    if input.dim() < 2:
        raise FlambeauError(f"[dropout3d] Feature dropout requires at least 2 dimensions, got shape {_shape(input)}")
    if input.dim() == 4:
        return _feature_dropout(input.unsqueeze(0), p, training, inplace).squeeze(0)
    return _feature_dropout(input, p, training, inplace)


def _verify_batch_size(size: tuple[int, ...], op: str) -> None:
    prod = size[0]
    for s in size[2:]:
        prod *= s
    if prod == 1:
        raise FlambeauError(f"[{op}] Expected more than 1 value per channel when training, got input size {list(size)}")


def batch_norm(
    input: Tensor,
    running_mean: Tensor | None,
    running_var: Tensor | None,
    weight: Tensor | None = None,
    bias: Tensor | None = None,
    training: bool = False,
    momentum: float = 0.1,
    eps: float = 1e-5,
) -> Tensor:
    r"""Batch normalization over dim 1 of an ``(N, C, ...)`` input.

    ``training=True`` normalizes with the batch statistics and updates
    ``running_mean``/``running_var`` in place (momentum, unbiased variance);
    otherwise the running statistics are used.

    Example:
        >>> import flambeau_core as fc
        >>> [round(v, 3) for v in batch_norm(fc.tensor([[1.0], [3.0]]), None, None, training=True).reshape(-1).tolist()]
        [-1.0, 1.0]
    """
    _check_tensor(input, "batch_norm")
    if input.dim() < 2:
        raise FlambeauError(f"[batch_norm] expected an input of at least 2 dims (N, C, ...), got shape {_shape(input)}")
    if training:
        _verify_batch_size(_shape(input), "batch_norm")
        if eps <= 0.0:
            raise FlambeauError(f"[batch_norm] eps must be positive during training, but got {eps}")
    elif eps < 0.0:
        raise FlambeauError(f"[batch_norm] eps must be non-negative, but got {eps}")
    return fc.native_batch_norm(input, weight, bias, running_mean, running_var, training, momentum, eps)[0]


def instance_norm(
    input: Tensor,
    running_mean: Tensor | None = None,
    running_var: Tensor | None = None,
    weight: Tensor | None = None,
    bias: Tensor | None = None,
    use_input_stats: bool = True,
    momentum: float = 0.1,
    eps: float = 1e-5,
) -> Tensor:
    r"""Normalizes each channel of each sample of an ``(N, C, ...)`` input separately.

    As PyTorch: batch normalization of the input viewed as ``(1, N*C, ...)``; the
    running statistics, when given, are updated with the mean over the batch.
    """
    _check_tensor(input, "instance_norm")
    if input.dim() < 2:
        raise FlambeauError(f"[instance_norm] expected an input of at least 2 dims (N, C, ...), got {_shape(input)}")
    shape = _shape(input)
    n, c = shape[0], shape[1]
    if use_input_stats:
        prod = 1
        for s in shape[2:]:
            prod *= s
        if prod == 1:
            raise FlambeauError(
                f"[instance_norm] Expected more than 1 spatial element when training, got input size {list(shape)}"
            )
    for name, t in (("running_mean", running_mean), ("running_var", running_var), ("weight", weight), ("bias", bias)):
        if t is not None and _shape(t) != (c,):
            raise FlambeauError(
                f"[instance_norm] {name} must have shape ({c},) (one value per channel, input shape {shape}), "
                f"got shape {_shape(t)}"
            )

    def per_instance(t: Tensor | None) -> Tensor | None:
        return None if t is None else t.unsqueeze(0).expand(n, c).reshape(n * c)

    rm, rv = per_instance(running_mean), per_instance(running_var)
    out = fc.native_batch_norm(
        input.reshape((1, n * c) + shape[2:]),
        per_instance(weight),
        per_instance(bias),
        rm,
        rv,
        use_input_stats,
        momentum,
        eps,
    )[0]
    if use_input_stats:
        if running_mean is not None:
            running_mean.copy_(rm.reshape(n, c).mean(0))
        if running_var is not None:
            running_var.copy_(rv.reshape(n, c).mean(0))
    return out.reshape(shape)


def layer_norm(
    input: Tensor,
    normalized_shape: int | tuple[int, ...] | list[int],
    weight: Tensor | None = None,
    bias: Tensor | None = None,
    eps: float = 1e-5,
) -> Tensor:
    r"""Normalizes over the trailing ``normalized_shape`` dims (mean and biased variance per row)."""
    _check_tensor(input, "layer_norm")
    if isinstance(normalized_shape, int):
        normalized_shape = (normalized_shape,)
    return fc.native_layer_norm(input, tuple(normalized_shape), weight, bias, eps)[0]


def group_norm(
    input: Tensor, num_groups: int, weight: Tensor | None = None, bias: Tensor | None = None, eps: float = 1e-5
) -> Tensor:
    r"""Normalizes groups of ``C // num_groups`` channels of an ``(N, C, ...)`` input per sample."""
    _check_tensor(input, "group_norm")
    if input.dim() < 2:
        raise FlambeauError(
            f"[group_norm] Expected at least 2 dimensions for input tensor but received {input.dim()} "
            f"(shape {_shape(input)})"
        )
    shape = _shape(input)
    n, c = shape[0], shape[1]
    if isinstance(num_groups, bool) or not isinstance(num_groups, int) or num_groups <= 0:
        raise FlambeauError(f"[group_norm] num_groups must be a positive int, got {num_groups!r}")
    if c % num_groups != 0:
        raise FlambeauError(
            f"[group_norm] Expected number of channels in input to be divisible by num_groups, but got input of "
            f"shape {shape} and num_groups={num_groups}"
        )
    _verify_batch_size((n * c // num_groups, num_groups) + shape[2:], "group_norm")
    hxw = 1
    for s in shape[2:]:
        hxw *= s
    return fc.native_group_norm(input, weight, bias, n, c, hxw, num_groups, eps)[0]


def _check_indices(input: Tensor, op: str) -> None:
    if input.dtype not in (fc.int64, fc.int32):
        raise TypeError(f"[{op}] input must hold integer indices (int64 or int32), got dtype {input.dtype}")


def _wrap_padding_idx(padding_idx: int | None, num: int, op: str) -> int:
    if padding_idx is None:
        return -1
    if not -num <= padding_idx < num:
        raise FlambeauError(f"[{op}] Padding_idx must be within num_embeddings: got {padding_idx} for {num} rows")
    return padding_idx + num if padding_idx < 0 else padding_idx


def embedding(
    input: Tensor,
    weight: Tensor,
    padding_idx: int | None = None,
    max_norm: float | None = None,
    norm_type: float = 2.0,
    scale_grad_by_freq: bool = False,
    sparse: bool = False,
) -> Tensor:
    r"""Rows of ``weight`` picked by the integer ``input`` (result shape ``input.shape + (embedding_dim,)``).

    No gradient flows to row ``padding_idx``; ``max_norm`` renormalizes the picked
    rows of ``weight`` in place first. An index out of range raises IndexError.

    Example:
        >>> import flambeau_core as fc
        >>> embedding(fc.tensor([1, 0]), fc.tensor([[0.0, 1.0], [2.0, 3.0]])).tolist()
        [[2.0, 3.0], [0.0, 1.0]]
    """
    _check_tensor(input, "embedding")
    _check_tensor(weight, "embedding", "weight")
    _check_indices(input, "embedding")
    if weight.dim() != 2:
        raise FlambeauError(
            f"[embedding] weight must be 2-D (num_embeddings, embedding_dim), got shape {_shape(weight)}"
        )
    padding_idx = _wrap_padding_idx(padding_idx, weight.shape[0], "embedding")
    if max_norm is not None:
        with fa.no_grad():
            fc.embedding_renorm_(weight, input, max_norm, norm_type)
    return fc.embedding(weight, input, padding_idx, scale_grad_by_freq, sparse)


_BAG_MODES = {"sum": 0, "mean": 1, "max": 2}


def embedding_bag(
    input: Tensor,
    weight: Tensor,
    offsets: Tensor | None = None,
    max_norm: float | None = None,
    norm_type: float = 2,
    scale_grad_by_freq: bool = False,
    mode: str = "mean",
    sparse: bool = False,
    per_sample_weights: Tensor | None = None,
    include_last_offset: bool = False,
    padding_idx: int | None = None,
) -> Tensor:
    r"""Sums, means or maxima of bags of embedding rows, without building the gathered rows.

    ``input`` is 1-D with ``offsets`` (bag ``b`` holds ``input[offsets[b]:offsets[b+1]]``),
    or 2-D ``(B, L)`` (``B`` bags of ``L``) with ``offsets=None``.
    """
    _check_tensor(input, "embedding_bag")
    _check_tensor(weight, "embedding_bag", "weight")
    _check_indices(input, "embedding_bag")
    if per_sample_weights is not None and _shape(input) != _shape(per_sample_weights):
        raise FlambeauError(
            f"[embedding_bag] If per_sample_weights ({_shape(per_sample_weights)}) is not None, then it must have "
            f"the same shape as the input ({_shape(input)})"
        )
    if weight.dim() != 2:
        raise FlambeauError(f"[embedding_bag] weight has to be a 2D Tensor, but got shape {_shape(weight)}")
    if input.dim() == 2:
        if offsets is not None:
            raise FlambeauError(
                "[embedding_bag] if input is 2D, then offsets has to be None, as input is treated is a mini-batch "
                f"of fixed length sequences. However, found offsets of type {type(offsets).__name__}"
            )
        offsets = fc.arange(0, input.numel(), max(input.shape[1], 1), dtype=input.dtype)
        if input.shape[1] == 0:
            offsets = fc.zeros(input.shape[0], dtype=input.dtype)
        include_last_offset = False
        input = input.reshape(-1)
        if per_sample_weights is not None:
            per_sample_weights = per_sample_weights.reshape(-1)
    elif input.dim() == 1:
        if offsets is None:
            raise FlambeauError("[embedding_bag] offsets has to be a 1D Tensor but got None")
        _check_tensor(offsets, "embedding_bag", "offsets")
        if offsets.dim() != 1:
            raise FlambeauError(f"[embedding_bag] offsets has to be a 1D Tensor, got shape {_shape(offsets)}")
        if offsets.dtype not in (fc.int64, fc.int32):
            raise TypeError(f"[embedding_bag] offsets must hold integers (int64 or int32), got dtype {offsets.dtype}")
    else:
        raise FlambeauError(f"[embedding_bag] input has to be 1D or 2D Tensor, but got shape {_shape(input)}")
    if mode not in _BAG_MODES:
        raise FlambeauError(f"[embedding_bag] mode has to be one of sum, mean or max, got {mode!r}")
    if mode == "max":
        if scale_grad_by_freq:
            raise FlambeauError("[embedding_bag] max mode does not support scaling the gradient by the frequency")
        if sparse:
            raise FlambeauError("[embedding_bag] max mode does not support sparse weights")
    padding_idx = _wrap_padding_idx(padding_idx, weight.shape[0], "embedding_bag")
    if max_norm is not None:
        with fa.no_grad():
            fc.embedding_renorm_(weight, input, max_norm, norm_type)
    if per_sample_weights is not None and mode != "sum":
        raise NotImplementedError(
            "[embedding_bag] per_sample_weights was not None. per_sample_weights is only supported for "
            f"mode='sum' (got mode='{mode}')"
        )
    return fc._embedding_bag(
        weight,
        input,
        offsets,
        scale_grad_by_freq,
        _BAG_MODES[mode],
        sparse,
        per_sample_weights,
        include_last_offset,
        padding_idx,
    )[0]


# ---- activations and losses ----

# Each activation and loss here is one core op with a fused backward kernel
# (packages/core/src/cpu/activation.cpp, loss.cpp); kl_div,
# margin_ranking_loss, cosine_similarity and pairwise_distance are composed
# from core ops, as in PyTorch.

_REDUCTION_ENUM = {"none": 0, "mean": 1, "sum": 2}


def _reduction_enum(reduction: str, op: str) -> int:
    try:
        return _REDUCTION_ENUM[reduction]
    except (KeyError, TypeError):
        raise FlambeauError(
            f"[{op}] {reduction!r} is not a valid value for reduction: use one of {_REDUCTIONS}"
        ) from None


def _legacy_reduction(size_average: bool | None, reduce: bool | None, reduction: str) -> str:
    """PyTorch's mapping of the deprecated ``size_average``/``reduce`` arguments to ``reduction``."""
    if size_average is None and reduce is None:
        return reduction
    size_average = True if size_average is None else size_average
    reduce = True if reduce is None else reduce
    if not reduce:
        return "none"
    return "mean" if size_average else "sum"


def _float_input(input: object, op: str) -> None:
    _check_tensor(input, op)
    if not input.is_floating_point():
        raise TypeError(f"[{op}] input must be a floating point tensor, got dtype {input.dtype}")


def gelu(input: Tensor, approximate: str = "none") -> Tensor:
    r"""``x * Phi(x)`` (``approximate='none'``) or its tanh approximation (``'tanh'``)."""
    _float_input(input, "gelu")
    if approximate not in ("none", "tanh"):
        raise FlambeauError(f"[gelu] approximate argument must be either 'none' or 'tanh', got {approximate!r}")
    return fc.gelu(input, approximate=approximate)


def silu(input: Tensor, inplace: bool = False) -> Tensor:
    r"""``x * sigmoid(x)``."""
    _float_input(input, "silu")
    return input.silu_() if inplace else fc.silu(input)


def mish(input: Tensor, inplace: bool = False) -> Tensor:
    r"""``x * tanh(softplus(x))``."""
    _float_input(input, "mish")
    return input.mish_() if inplace else fc.mish(input)


def leaky_relu(input: Tensor, negative_slope: float = 0.01, inplace: bool = False) -> Tensor:
    r"""``x`` where ``x > 0``, else ``negative_slope * x``."""
    _float_input(input, "leaky_relu")
    return input.leaky_relu_(negative_slope) if inplace else fc.leaky_relu(input, negative_slope)


def leaky_relu_(input: Tensor, negative_slope: float = 0.01) -> Tensor:
    return leaky_relu(input, negative_slope, inplace=True)


def elu(input: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:
    r"""``x`` where ``x > 0``, else ``alpha * (exp(x) - 1)``."""
    _float_input(input, "elu")
    return input.elu_(alpha) if inplace else fc.elu(input, alpha)


def elu_(input: Tensor, alpha: float = 1.0) -> Tensor:
    return elu(input, alpha, inplace=True)


_SELU_ALPHA = 1.6732632423543772848170429916717
_SELU_SCALE = 1.0507009873554804934193349852946


def selu(input: Tensor, inplace: bool = False) -> Tensor:
    r"""``scale * elu(x, alpha)`` with the self-normalizing constants."""
    _float_input(input, "selu")
    if inplace:
        return input.elu_(_SELU_ALPHA, _SELU_SCALE)
    return fc.elu(input, _SELU_ALPHA, _SELU_SCALE)


def selu_(input: Tensor) -> Tensor:
    return selu(input, inplace=True)


def celu(input: Tensor, alpha: float = 1.0, inplace: bool = False) -> Tensor:
    r"""``max(0, x) + min(0, alpha * (exp(x / alpha) - 1))``."""
    _float_input(input, "celu")
    if alpha == 0:
        raise FlambeauError("[celu] ZeroDivisionError: alpha cannot be 0 for CELU")
    if inplace:
        return input.elu_(alpha, 1.0, 1.0 / alpha)
    return fc.elu(input, alpha, 1.0, 1.0 / alpha)


def celu_(input: Tensor, alpha: float = 1.0) -> Tensor:
    return celu(input, alpha, inplace=True)


def softplus(input: Tensor, beta: float = 1.0, threshold: float = 20.0) -> Tensor:
    r"""``log(1 + exp(beta * x)) / beta``; ``x`` itself where ``beta * x > threshold``."""
    _float_input(input, "softplus")
    return fc.softplus(input, beta, threshold)


def hardtanh(input: Tensor, min_val: float = -1.0, max_val: float = 1.0, inplace: bool = False) -> Tensor:
    r"""``x`` clamped to ``[min_val, max_val]``."""
    _float_input(input, "hardtanh")
    return input.hardtanh_(min_val, max_val) if inplace else fc.hardtanh(input, min_val, max_val)


def hardtanh_(input: Tensor, min_val: float = -1.0, max_val: float = 1.0) -> Tensor:
    return hardtanh(input, min_val, max_val, inplace=True)


def relu6(input: Tensor, inplace: bool = False) -> Tensor:
    r"""``min(max(x, 0), 6)``."""
    _float_input(input, "relu6")
    return input.hardtanh_(0.0, 6.0) if inplace else fc.hardtanh(input, 0.0, 6.0)


def hardswish(input: Tensor, inplace: bool = False) -> Tensor:
    r"""``x * relu6(x + 3) / 6``."""
    _float_input(input, "hardswish")
    return input.hardswish_() if inplace else fc.hardswish(input)


def hardsigmoid(input: Tensor, inplace: bool = False) -> Tensor:
    r"""``relu6(x + 3) / 6``."""
    _float_input(input, "hardsigmoid")
    return input.hardsigmoid_() if inplace else fc.hardsigmoid(input)


def logsigmoid(input: Tensor) -> Tensor:
    r"""``log(sigmoid(x))``, stable for large ``|x|``."""
    _float_input(input, "logsigmoid")
    return fc.log_sigmoid(input)


def softsign(input: Tensor) -> Tensor:
    r"""``x / (1 + |x|)``."""
    _float_input(input, "softsign")
    return fc.softsign(input)


def prelu(input: Tensor, weight: Tensor) -> Tensor:
    r"""``x`` where ``x > 0``, else ``weight * x``; ``weight`` has one element or one per channel (dim 1)."""
    _float_input(input, "prelu")
    _check_tensor(weight, "prelu", "weight")
    return fc.prelu(input, weight)


def glu(input: Tensor, dim: int = -1) -> Tensor:
    r"""``a * sigmoid(b)`` where ``a`` and ``b`` are the two halves of ``input`` along ``dim``."""
    _float_input(input, "glu")
    return fc.glu(input, dim)


def binary_cross_entropy(
    input: Tensor,
    target: Tensor,
    weight: Tensor | None = None,
    size_average: bool | None = None,
    reduce: bool | None = None,
    reduction: str = "mean",
) -> Tensor:
    r"""``-weight * (target * log(x) + (1 - target) * log(1 - x))``; each log is clamped at -100.

    ``input`` holds probabilities in ``[0, 1]`` (FlambeauError otherwise) and
    ``target`` must have its shape.
    """
    _check_tensor(input, "binary_cross_entropy")
    _check_tensor(target, "binary_cross_entropy", "target")
    reduction = _legacy_reduction(size_average, reduce, reduction)
    red = _reduction_enum(reduction, "binary_cross_entropy")
    if _shape(target) != _shape(input):
        raise FlambeauError(
            f"[binary_cross_entropy] target shape {_shape(target)} must be the same as input shape {_shape(input)}"
        )
    return fc.binary_cross_entropy(input, target, weight, red)


def binary_cross_entropy_with_logits(
    input: Tensor,
    target: Tensor,
    weight: Tensor | None = None,
    size_average: bool | None = None,
    reduce: bool | None = None,
    reduction: str = "mean",
    pos_weight: Tensor | None = None,
) -> Tensor:
    r"""``binary_cross_entropy(sigmoid(input), target)``, computed stably from the logits.

    ``pos_weight`` weighs the positive term (broadcast along the last dim), ``weight`` each element.
    """
    _check_tensor(input, "binary_cross_entropy_with_logits")
    _check_tensor(target, "binary_cross_entropy_with_logits", "target")
    reduction = _legacy_reduction(size_average, reduce, reduction)
    red = _reduction_enum(reduction, "binary_cross_entropy_with_logits")
    if _shape(target) != _shape(input):
        raise FlambeauError(
            f"[binary_cross_entropy_with_logits] target shape {_shape(target)} must be the same as "
            f"input shape {_shape(input)}"
        )
    return fc.binary_cross_entropy_with_logits(input, target, weight, pos_weight, red)


def nll_loss(
    input: Tensor,
    target: Tensor,
    weight: Tensor | None = None,
    size_average: bool | None = None,
    ignore_index: int = -100,
    reduce: bool | None = None,
    reduction: str = "mean",
) -> Tensor:
    r"""Negative log-likelihood: ``-weight[t] * input[n, t]`` with ``t = target[n]``, reduced.

    ``input`` holds log-probabilities of shape ``(N, C)``, ``(C,)`` or
    ``(N, C, d1, ...)``; ``target`` holds int64 class indices of shape ``(N,)``,
    ``()`` or ``(N, d1, ...)``. The mean is weighted by the class weights, as in
    PyTorch; targets equal to ``ignore_index`` contribute nothing. A target out
    of ``[0, C)`` raises IndexError.
    """
    _check_tensor(input, "nll_loss")
    _check_tensor(target, "nll_loss", "target")
    reduction = _legacy_reduction(size_average, reduce, reduction)
    red = _reduction_enum(reduction, "nll_loss")
    return fc.nll_loss_nd(input, target, weight, red, ignore_index)


def cross_entropy(
    input: Tensor,
    target: Tensor,
    weight: Tensor | None = None,
    size_average: bool | None = None,
    ignore_index: int = -100,
    reduce: bool | None = None,
    reduction: str = "mean",
    label_smoothing: float = 0.0,
) -> Tensor:
    r"""``nll_loss(log_softmax(input, 1), target)`` in one fused kernel (forward and backward).

    ``target`` holds int64 class indices (shape ``(N,)``, ``()`` or ``(N, d1, ...)``)
    or, with a floating dtype and the input's shape, class probabilities.
    ``weight`` (one per class), ``ignore_index`` and ``label_smoothing`` follow PyTorch.

    Example:
        >>> import flambeau_core as fc
        >>> logits = fc.tensor([[2.0, 0.0], [0.0, 2.0]])
        >>> round(cross_entropy(logits, fc.tensor([0, 1])).item(), 4)
        0.1269
    """
    _check_tensor(input, "cross_entropy")
    _check_tensor(target, "cross_entropy", "target")
    reduction = _legacy_reduction(size_average, reduce, reduction)
    red = _reduction_enum(reduction, "cross_entropy")
    if not 0.0 <= label_smoothing <= 1.0:
        raise FlambeauError(f"[cross_entropy] label_smoothing must be between 0.0 and 1.0, got {label_smoothing}")
    return fc._C._cross_entropy(input, target, weight, red, ignore_index, float(label_smoothing))[0]


def mse_loss(
    input: Tensor,
    target: Tensor,
    size_average: bool | None = None,
    reduce: bool | None = None,
    reduction: str = "mean",
) -> Tensor:
    """``(input - target) ** 2``, reduced; shapes broadcast."""
    _float_input(input, "mse_loss")
    _check_tensor(target, "mse_loss", "target")
    reduction = _legacy_reduction(size_average, reduce, reduction)
    return fc.mse_loss(input, target, _reduction_enum(reduction, "mse_loss"))


def l1_loss(
    input: Tensor,
    target: Tensor,
    size_average: bool | None = None,
    reduce: bool | None = None,
    reduction: str = "mean",
) -> Tensor:
    """``|input - target|``, reduced; shapes broadcast."""
    _float_input(input, "l1_loss")
    _check_tensor(target, "l1_loss", "target")
    reduction = _legacy_reduction(size_average, reduce, reduction)
    return fc.l1_loss(input, target, _reduction_enum(reduction, "l1_loss"))


def smooth_l1_loss(
    input: Tensor,
    target: Tensor,
    size_average: bool | None = None,
    reduce: bool | None = None,
    reduction: str = "mean",
    beta: float = 1.0,
) -> Tensor:
    """``0.5 d**2 / beta`` where ``|d| < beta``, else ``|d| - 0.5 beta`` (``d = input - target``), reduced."""
    _float_input(input, "smooth_l1_loss")
    _check_tensor(target, "smooth_l1_loss", "target")
    reduction = _legacy_reduction(size_average, reduce, reduction)
    red = _reduction_enum(reduction, "smooth_l1_loss")
    if beta == 0.0:
        return fc.l1_loss(input, target, red)
    return fc.smooth_l1_loss(input, target, red, float(beta))


def huber_loss(input: Tensor, target: Tensor, reduction: str = "mean", delta: float = 1.0) -> Tensor:
    """``0.5 d**2`` where ``|d| < delta``, else ``delta (|d| - 0.5 delta)`` (``d = input - target``), reduced."""
    _float_input(input, "huber_loss")
    _check_tensor(target, "huber_loss", "target")
    return fc.huber_loss(input, target, _reduction_enum(reduction, "huber_loss"), float(delta))


def kl_div(
    input: Tensor,
    target: Tensor,
    size_average: bool | None = None,
    reduce: bool | None = None,
    reduction: str = "mean",
    log_target: bool = False,
) -> Tensor:
    r"""Kullback-Leibler divergence ``target * (log(target) - input)`` for log-probabilities ``input``.

    ``log_target=True`` reads ``target`` as log-probabilities too. ``reduction='batchmean'``
    divides the sum by the batch size (the mathematically correct KL mean).
    """
    _float_input(input, "kl_div")
    _check_tensor(target, "kl_div", "target")
    reduction = _legacy_reduction(size_average, reduce, reduction)
    if reduction not in ("mean", "sum", "none", "batchmean"):
        raise FlambeauError(
            f"[kl_div] {reduction!r} is not a valid value for reduction: "
            "use one of ('mean', 'batchmean', 'sum', 'none')"
        )
    if log_target:
        loss = fc.exp(target) * (target - input)
    else:
        positive = target > 0
        safe = fc.where(positive, target, 1.0)
        loss = target * fc.log(safe) - target * input
    if reduction == "batchmean":
        total = loss.sum()
        return total / input.shape[0] if input.dim() != 0 else total
    return _reduce(loss, reduction, "kl_div")


def margin_ranking_loss(
    input1: Tensor,
    input2: Tensor,
    target: Tensor,
    margin: float = 0.0,
    size_average: bool | None = None,
    reduce: bool | None = None,
    reduction: str = "mean",
) -> Tensor:
    r"""``max(0, -target * (input1 - input2) + margin)``, reduced."""
    _float_input(input1, "margin_ranking_loss")
    _check_tensor(input2, "margin_ranking_loss", "input2")
    _check_tensor(target, "margin_ranking_loss", "target")
    reduction = _legacy_reduction(size_average, reduce, reduction)
    _reduction_enum(reduction, "margin_ranking_loss")
    if not (input1.dim() == input2.dim() == target.dim()):
        raise FlambeauError(
            "[margin_ranking_loss] all input tensors should have the same number of dims, got shapes: "
            f"input1: {_shape(input1)}, input2: {_shape(input2)}, target: {_shape(target)}"
        )
    loss = fc.clamp_min(-target * (input1 - input2) + margin, 0)
    return _reduce(loss, reduction, "margin_ranking_loss")


def cosine_similarity(x1: Tensor, x2: Tensor, dim: int = 1, eps: float = 1e-8) -> Tensor:
    r"""``sum(x1 * x2, dim) / (max(||x1||, eps) * max(||x2||, eps))``; shapes broadcast."""
    _float_input(x1, "cosine_similarity")
    _float_input(x2, "cosine_similarity")
    try:
        shape = fc.broadcast_shapes(_shape(x1), _shape(x2))
    except (FlambeauError, ValueError):
        raise FlambeauError(
            f"[cosine_similarity] x1 shape {_shape(x1)} and x2 shape {_shape(x2)} do not broadcast"
        ) from None
    a, b = x1.expand(shape), x2.expand(shape)
    n1 = fc.sqrt((a * a).sum(dim, keepdim=True)).clone()
    n2 = fc.sqrt((b * b).sum(dim, keepdim=True)).clone()
    # As PyTorch: the norms are clamped at eps outside autograd (the gradient flows as if unclamped).
    with fa.no_grad():
        n1.clamp_min_(eps)
        n2.clamp_min_(eps)
    return ((a / n1) * (b / n2)).sum(dim)


def pairwise_distance(x1: Tensor, x2: Tensor, p: float = 2.0, eps: float = 1e-6, keepdim: bool = False) -> Tensor:
    r"""The ``p``-norm of ``x1 - x2 + eps`` over the last dim."""
    _float_input(x1, "pairwise_distance")
    _float_input(x2, "pairwise_distance")
    d = x1 - x2 + eps
    dim = max(x1.dim(), x2.dim()) - 1
    if dim < 0:  # two 0-d tensors: the norm of one element
        return fc.abs(d)
    a = fc.abs(d)
    if p == float("inf"):
        return a.max(dim, keepdim)[0]
    if p == 0:
        return (a != 0).to(d.dtype).sum(dim, keepdim=keepdim)
    if p == 1:
        return a.sum(dim, keepdim=keepdim)
    if p == 2:
        return fc.sqrt((d * d).sum(dim, keepdim=keepdim))
    if p < 0:
        raise FlambeauError(f"[pairwise_distance] p must be non-negative, got {p}")
    # exp(log(s) / p), not pow(s, 1 / p): the exponent stays a float64 number in the gradient.
    return fc.exp(fc.log(fc.pow(a, p).sum(dim, keepdim=keepdim)) * (1.0 / p))


# ---- recurrent cells and attention ----


def _causal_mask(L: int, S: int) -> Tensor:
    """Bool (L, S): position i may attend to j <= i (PyTorch's tril(ones(L, S)))."""
    return fc.arange(L).unsqueeze(1) >= fc.arange(S).unsqueeze(0)


def _attn_bias(attn_mask: Tensor | None, is_causal: bool, L: int, S: int, dtype: Any, op: str) -> Tensor | None:
    """The mask as an additive float bias (-inf where a bool mask is False), or None."""
    if is_causal:
        if attn_mask is not None:
            raise FlambeauError(f"[{op}] Explicit attn_mask should not be set when is_causal=True")
        attn_mask = _causal_mask(L, S)
    if attn_mask is None:
        return None
    _check_tensor(attn_mask, op, "attn_mask")
    if attn_mask.dtype == fc.bool:
        return fc.where(attn_mask, 0.0, float("-inf")).to(dtype)
    if not attn_mask.dtype.is_floating_point:
        raise TypeError(f"[{op}] attn_mask must be bool or floating point, got dtype {attn_mask.dtype}")
    if attn_mask.dtype != dtype:
        raise TypeError(f"[{op}] expected attn_mask dtype to be bool or {dtype} (the query's), got {attn_mask.dtype}")
    return attn_mask


def scaled_dot_product_attention(
    query: Tensor,
    key: Tensor,
    value: Tensor,
    attn_mask: Tensor | None = None,
    dropout_p: float = 0.0,
    is_causal: bool = False,
    scale: float | None = None,
) -> Tensor:
    r"""``softmax(query @ key^T * scale + mask) @ value`` over the last two dims.

    query ``(..., L, E)``, key ``(..., S, E)``, value ``(..., S, Ev)``; the leading
    dims broadcast. ``attn_mask`` broadcasts to ``(..., L, S)``: a bool mask says
    which positions take part (True) and a float mask is added to the scores.
    ``is_causal`` masks the upper triangle; ``scale`` defaults to ``1/sqrt(E)``;
    ``dropout_p`` drops attention weights (always applied when given, as in PyTorch).

    Example:
        >>> import flambeau_core as fc
        >>> scaled_dot_product_attention(fc.ones(2, 3, 4), fc.ones(2, 5, 4), fc.ones(2, 5, 6)).shape
        (2, 3, 6)
    """
    op = "scaled_dot_product_attention"
    for name, t in (("query", query), ("key", key), ("value", value)):
        _check_tensor(t, op, name)
        if t.dim() < 2:
            raise FlambeauError(f"[{op}] {name} must have at least 2 dims (..., L, E), got shape {_shape(t)}")
    if not query.dtype.is_floating_point or key.dtype != query.dtype or value.dtype != query.dtype:
        raise TypeError(
            f"[{op}] Expected query, key, and value to have the same floating point dtype, but got "
            f"query.dtype: {query.dtype}, key.dtype: {key.dtype}, and value.dtype: {value.dtype} instead."
        )
    if query.shape[-1] != key.shape[-1]:
        raise FlambeauError(
            f"[{op}] query and key must have the same embedding size, got query {_shape(query)} and key {_shape(key)}"
        )
    if key.shape[-2] != value.shape[-2]:
        raise FlambeauError(
            f"[{op}] key and value must have the same sequence length, got key {_shape(key)} and value {_shape(value)}"
        )
    if not 0.0 <= dropout_p <= 1.0:
        raise FlambeauError(f"[{op}] dropout_p must be between 0 and 1, got {dropout_p}")
    L, S, E = query.shape[-2], key.shape[-2], query.shape[-1]
    bias = _attn_bias(attn_mask, is_causal, L, S, query.dtype, op)
    if bias is not None:
        try:
            fc.broadcast_shapes(_shape(bias), (*query.shape[:-1], S))
        except Exception:
            raise FlambeauError(
                f"[{op}] attn_mask of shape {_shape(bias)} does not broadcast to the attention weights' shape "
                f"{(*query.shape[:-1], S)}"
            ) from None
    scale_factor = 1.0 / math.sqrt(E) if scale is None else scale
    scores = fc.matmul(query * scale_factor, key.transpose(-2, -1))
    if bias is not None:
        scores = scores + bias
    weights = fc.softmax(scores, -1)
    if dropout_p > 0.0:
        weights = dropout(weights, dropout_p, True)
    return fc.matmul(weights, value)
