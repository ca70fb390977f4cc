"""Pooling, padding and resampling. Part of ``flambeau_nn.functional``, which re-exports it."""

from __future__ import annotations

from typing import Any

import flambeau_core as fc
from flambeau_core import FlambeauError, Tensor

from flambeau_nn.functional._base import _check_tensor, _shape

__all__ = [
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
