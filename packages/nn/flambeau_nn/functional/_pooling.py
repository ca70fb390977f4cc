"""1-D and 2-D pooling, unpooling, LP pooling, padding and pixel shuffles.

Part of ``flambeau_nn.functional``, which re-exports it.
"""

from __future__ import annotations

from typing import Any

import flambeau_core as fc
from flambeau_core import FlambeauError, Tensor
from flambeau_core.amp.custom_functions import autocast_float32

from flambeau_nn.functional._base import _check_tensor, _shape

__all__ = [
    "max_pool1d",
    "max_pool2d",
    "max_unpool1d",
    "max_unpool2d",
    "max_unpool3d",
    "max_pool1d_with_indices",
    "max_pool2d_with_indices",
    "adaptive_max_pool1d_with_indices",
    "adaptive_max_pool2d_with_indices",
    "lp_pool1d",
    "lp_pool2d",
    "lp_pool3d",
    "avg_pool1d",
    "avg_pool2d",
    "adaptive_avg_pool1d",
    "adaptive_avg_pool2d",
    "adaptive_max_pool1d",
    "adaptive_max_pool2d",
    "pad",
    "pixel_shuffle",
    "pixel_unshuffle",
    "channel_shuffle",
    "native_channel_shuffle",
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


def _dtype_not_implemented(input: Tensor, op: str, kernel: str) -> NotImplementedError:
    """PyTorch's refusal of a dtype its CPU kernel lacks: ``"kernel" not implemented for 'Long'``."""
    torch_name = input.type().rpartition(".")[2].removesuffix("Tensor")  # 'torch.LongTensor' -> 'Long'
    dtype = str(input.dtype).rpartition(".")[2]
    return NotImplementedError(f"[{op}] \"{kernel}\" not implemented for '{torch_name}' (dtype {dtype})")


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

    Example:
        >>> import flambeau as fb
        >>> x = fb.tensor([[[1.0, 3.0, 2.0, 5.0, 4.0]]])
        >>> fb.nn.functional.max_pool1d(x, 2).tolist()  # the last element has no full window
        [[[3.0, 5.0]]]
        >>> out, idx = fb.nn.functional.max_pool1d(x, 2, return_indices=True)
        >>> idx.tolist()
        [[[1, 3]]]
    """
    _check_tensor(input, "max_pool1d")
    _check_rank(input, (2, 3), "max_pool1d", "2-D (C, L) or 3-D (N, C, L)")
    if not return_indices and not input.is_floating_point():
        # PyTorch's kernel without indices takes floating inputs only; the one with indices takes integers too.
        raise _dtype_not_implemented(input, "max_pool1d", "max_pool1d_impl")
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


def _max_unpool(
    op: str,
    n: int,
    input: Tensor,
    indices: Tensor,
    kernel_size: Any,
    stride: Any,
    padding: Any,
    output_size: Any,
) -> Tensor:
    """Scatters each value of ``input`` to its flat index in an ``n``-D output plane, zeros elsewhere."""
    _check_tensor(input, op)
    _check_tensor(indices, op, "indices")
    _check_rank(input, (n + 1, n + 2), op, f"{n + 1}-D or {n + 2}-D (N, C, *spatial)")
    if indices.dtype != fc.int64:
        raise TypeError(f"[{op}] indices must be int64, got {indices.dtype}")
    if _shape(indices) != _shape(input):
        raise FlambeauError(f"[{op}] indices shape {_shape(indices)} must equal input shape {_shape(input)}")

    def full(v: list[int]) -> list[int]:
        return v * n if len(v) == 1 else v

    k = full(_int_list(kernel_size, n, op, "kernel_size"))
    s = full(_stride(stride, n, op) or k)
    p = full(_int_list(padding, n, op, "padding"))
    spatial = _shape(input)[-n:]
    default = [(spatial[i] - 1) * s[i] - 2 * p[i] + k[i] for i in range(n)]
    if output_size is None:
        size = default
    else:
        size = list(output_size)
        if len(size) in (n + 1, n + 2) and len(size) == input.dim():
            size = size[-n:]
        if len(size) != n:
            raise FlambeauError(f"[{op}] output_size must have {n} or {input.dim()} elements, got {tuple(output_size)}")
        for i in range(n):
            lo, hi = default[i] - s[i], default[i] + s[i]
            if not lo < size[i] < hi:
                raise FlambeauError(f"[{op}] invalid output_size {tuple(output_size)}: dim {i} must be in ({lo}, {hi})")
    plane = 1
    for v in size:
        plane *= v
    lead = _shape(input)[:-n]
    flat_in = input.reshape(lead + (-1,))
    flat_idx = indices.reshape(lead + (-1,))
    if flat_idx.numel() > 0:
        lo, hi = -int((-flat_idx).max().item()), int(flat_idx.max().item())
        if lo < 0 or hi >= plane:
            raise IndexError(
                f"[{op}] an index is out of bounds for output size {tuple(size)} "
                f"(valid: 0..{plane - 1}); found indices in {lo}..{hi}"
            )
    # Written, not added: where two windows chose one element (overlapping windows), PyTorch's output holds
    # the value once (the last written, in order), not their sum.
    out = fc.scatter(fc.zeros(lead + (plane,), dtype=input.dtype, device=input.device), len(lead), flat_idx, flat_in)
    return out.reshape(lead + tuple(size))


def max_unpool1d(
    input: Tensor, indices: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0, output_size: Any = None
) -> Tensor:
    r"""The partial inverse of ``max_pool1d``: each value put at its index in ``L``, zeros elsewhere.

    Example:
        >>> import flambeau_core as fc
        >>> out, idx = max_pool1d(fc.tensor([[[1.0, 3.0, 2.0, 0.0]]]), 2, return_indices=True)
        >>> max_unpool1d(out, idx, 2).tolist()
        [[[0.0, 3.0, 2.0, 0.0]]]
    """
    return _max_unpool("max_unpool1d", 1, input, indices, kernel_size, stride, padding, output_size)


@autocast_float32
def max_unpool2d(
    input: Tensor, indices: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0, output_size: Any = None
) -> Tensor:
    r"""The partial inverse of ``max_pool2d``: each value put at its index, zeros elsewhere.

    ``output_size`` (``(H, W)`` or the full shape) picks among the sizes the pooling could have come from.

    Example:
        >>> import flambeau_core as fc
        >>> out, idx = max_pool2d(fc.arange(4.0).reshape(1, 1, 2, 2), 2, return_indices=True)
        >>> max_unpool2d(out, idx, 2).tolist()
        [[[[0.0, 0.0], [0.0, 3.0]]]]
    """
    return _max_unpool("max_unpool2d", 2, input, indices, kernel_size, stride, padding, output_size)


@autocast_float32
def max_unpool3d(
    input: Tensor, indices: Tensor, kernel_size: Any, stride: Any = None, padding: Any = 0, output_size: Any = None
) -> Tensor:
    r"""The partial inverse of ``max_pool3d``: each value put at its index in ``(D, H, W)``, zeros elsewhere.

    Example:
        >>> import flambeau_core as fc
        >>> max_unpool3d(fc.ones(1, 1, 1, 1, 1), fc.tensor([[[[[7]]]]]), 2).shape
        flambeau.Size([1, 1, 2, 2, 2])
    """
    return _max_unpool("max_unpool3d", 3, input, indices, kernel_size, stride, padding, output_size)


def _lp_pool(
    op: str,
    avg: Any,
    maxpool: Any,
    input: Tensor,
    norm_type: float,
    kernel_size: Any,
    stride: Any,
    ceil_mode: bool,
    n: int,
) -> Tensor:
    _check_tensor(input, op)
    if isinstance(norm_type, bool) or not isinstance(norm_type, (int, float)):
        raise TypeError(f"[{op}] norm_type must be a number, got {type(norm_type).__name__}")
    if norm_type == float("inf"):
        return maxpool(input.abs(), kernel_size, stride, 0, 1, ceil_mode)
    if norm_type == -float("inf"):
        return -maxpool(-input.abs(), kernel_size, stride, 0, 1, ceil_mode)
    k = _int_list(kernel_size, n, op, "kernel_size")
    k = k * n if len(k) == 1 else k
    area = 1
    for v in k:
        area *= v
    out = avg(input.pow(norm_type), kernel_size, stride, 0, ceil_mode)
    # sign * relu(abs): a negative average (odd p, negative inputs) gives 0, as PyTorch.
    return (fc.sign(out) * fc.relu(out.abs()) * float(area)).pow(1.0 / norm_type)


def lp_pool1d(input: Tensor, norm_type: float, kernel_size: Any, stride: Any = None, ceil_mode: bool = False) -> Tensor:
    r"""Power-average pooling: ``(sum over the window of x**p) ** (1/p)`` over ``L``.

    Example:
        >>> import flambeau_core as fc
        >>> lp_pool1d(fc.tensor([[[3.0, 4.0]]]), 2, 2).tolist()
        [[[5.0]]]
    """
    return _lp_pool("lp_pool1d", avg_pool1d, max_pool1d, input, norm_type, kernel_size, stride, ceil_mode, 1)


def lp_pool2d(input: Tensor, norm_type: float, kernel_size: Any, stride: Any = None, ceil_mode: bool = False) -> Tensor:
    r"""Power-average pooling over ``(H, W)`` windows (``p = inf`` is max pooling of ``|x|``).

    Example:
        >>> import flambeau_core as fc
        >>> lp_pool2d(fc.ones(1, 1, 2, 2), 1, 2).tolist()
        [[[[4.0]]]]
    """
    return _lp_pool("lp_pool2d", avg_pool2d, max_pool2d, input, norm_type, kernel_size, stride, ceil_mode, 2)


def lp_pool3d(input: Tensor, norm_type: float, kernel_size: Any, stride: Any = None, ceil_mode: bool = False) -> Tensor:
    r"""Power-average pooling over ``(D, H, W)`` windows.

    Example:
        >>> import flambeau_core as fc
        >>> lp_pool3d(fc.ones(1, 1, 2, 2, 2), 2, 2).tolist()
        [[[[[2.8284270763397217]]]]]
    """
    from flambeau_nn.functional._pooling3d import avg_pool3d, max_pool3d

    return _lp_pool("lp_pool3d", avg_pool3d, max_pool3d, input, norm_type, kernel_size, stride, ceil_mode, 3)


def max_pool1d_with_indices(
    input: Tensor,
    kernel_size: Any,
    stride: Any = None,
    padding: Any = 0,
    dilation: Any = 1,
    ceil_mode: bool = False,
    return_indices: bool = False,
) -> tuple[Tensor, Tensor]:
    """``max_pool1d`` that always returns ``(values, indices)``.

    Example:
        >>> import flambeau_core as fc
        >>> import flambeau_nn.functional as F
        >>> out, idx = F.max_pool1d_with_indices(fc.tensor([[[1.0, 3.0, 2.0, 5.0, 4.0, 0.0]]]), 2)
        >>> out.tolist(), idx.tolist()
        ([[[3.0, 5.0, 4.0]]], [[[1, 3, 4]]])
    """
    return max_pool1d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


def max_pool2d_with_indices(
    input: Tensor,
    kernel_size: Any,
    stride: Any = None,
    padding: Any = 0,
    dilation: Any = 1,
    ceil_mode: bool = False,
    return_indices: bool = False,
) -> tuple[Tensor, Tensor]:
    """``max_pool2d`` that always returns ``(values, indices)``.

    Example:
        >>> import flambeau_core as fc
        >>> import flambeau_nn.functional as F
        >>> out, idx = F.max_pool2d_with_indices(fc.arange(16.0).reshape(1, 1, 4, 4), 2)
        >>> idx.tolist()
        [[[[5, 7], [13, 15]]]]
    """
    return max_pool2d(input, kernel_size, stride, padding, dilation, ceil_mode, True)


def avg_pool1d(
    input: Tensor,
    kernel_size: Any,
    stride: Any = None,
    padding: Any = 0,
    ceil_mode: bool = False,
    count_include_pad: bool = True,
) -> Tensor:
    r"""1-D average pooling over a ``(N, C, L)`` or ``(C, L)`` input.

    Example:
        >>> import flambeau_core as fc
        >>> import flambeau_nn.functional as F
        >>> F.avg_pool1d(fc.tensor([[[1.0, 3.0, 2.0, 5.0, 4.0, 0.0]]]), 2).tolist()
        [[[2.0, 3.5, 2.0]]]
    """
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

    Example:
        >>> import flambeau_core as fc
        >>> import flambeau_nn.functional as F
        >>> x = fc.arange(16.0).reshape(1, 1, 4, 4)
        >>> F.avg_pool2d(x, 2).tolist()
        [[[[2.5, 4.5], [10.5, 12.5]]]]
        >>> F.avg_pool2d(x, 2, divisor_override=1).tolist()
        [[[[10.0, 18.0], [42.0, 50.0]]]]
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
    r"""Averages ``L`` down to ``output_size`` adaptive windows (``(N, C, L)`` or ``(C, L)`` input).

    Example:
        >>> import flambeau_core as fc
        >>> import flambeau_nn.functional as F
        >>> F.adaptive_avg_pool1d(fc.tensor([[[1.0, 3.0, 2.0, 5.0, 4.0, 0.0]]]), 4).tolist()
        [[[2.0, 2.5, 4.5, 2.0]]]
    """
    _check_tensor(input, "adaptive_avg_pool1d")
    _check_rank(input, (2, 3), "adaptive_avg_pool1d", "2-D (C, L) or 3-D (N, C, L)")
    return fc.adaptive_avg_pool1d(input, _adaptive_size(input, output_size, 1, "adaptive_avg_pool1d"))


def adaptive_avg_pool2d(input: Tensor, output_size: Any) -> Tensor:
    r"""Averages ``(H, W)`` down to ``output_size`` adaptive windows; ``1`` is global average pooling.

    Example:
        >>> import flambeau_core as fc
        >>> import flambeau_nn.functional as F
        >>> F.adaptive_avg_pool2d(fc.arange(16.0).reshape(1, 1, 4, 4), 2).tolist()
        [[[[2.5, 4.5], [10.5, 12.5]]]]
    """
    _check_tensor(input, "adaptive_avg_pool2d")
    _check_rank(input, (3, 4), "adaptive_avg_pool2d", "3-D (C, H, W) or 4-D (N, C, H, W)")
    return fc.adaptive_avg_pool2d(input, _adaptive_size(input, output_size, 2, "adaptive_avg_pool2d"))


def adaptive_max_pool1d(input: Tensor, output_size: Any, return_indices: bool = False) -> Any:
    r"""Maxima over ``output_size`` adaptive windows of ``L``, with their indices if ``return_indices``.

    Example:
        >>> import flambeau_core as fc
        >>> import flambeau_nn.functional as F
        >>> F.adaptive_max_pool1d(fc.tensor([[[1.0, 3.0, 2.0, 5.0, 4.0, 0.0]]]), 4).tolist()
        [[[3.0, 3.0, 5.0, 4.0]]]
    """
    _check_tensor(input, "adaptive_max_pool1d")
    _check_rank(input, (2, 3), "adaptive_max_pool1d", "2-D (C, L) or 3-D (N, C, L)")
    out, idx = fc.adaptive_max_pool1d(input, _adaptive_size(input, output_size, 1, "adaptive_max_pool1d"))
    return (out, idx) if return_indices else out


def adaptive_max_pool2d(input: Tensor, output_size: Any, return_indices: bool = False) -> Any:
    r"""Maxima over the adaptive windows of ``(H, W)``, with their per-plane indices if ``return_indices``.

    Example:
        >>> import flambeau_core as fc
        >>> import flambeau_nn.functional as F
        >>> F.adaptive_max_pool2d(fc.arange(16.0).reshape(1, 1, 4, 4), (1, 2)).tolist()
        [[[[13.0, 15.0]]]]
    """
    _check_tensor(input, "adaptive_max_pool2d")
    _check_rank(input, (3, 4), "adaptive_max_pool2d", "3-D (C, H, W) or 4-D (N, C, H, W)")
    out, idx = fc.adaptive_max_pool2d(input, _adaptive_size(input, output_size, 2, "adaptive_max_pool2d"))
    return (out, idx) if return_indices else out


def adaptive_max_pool1d_with_indices(input: Tensor, output_size: Any, return_indices: bool = False) -> Any:
    """``adaptive_max_pool1d`` that always returns ``(values, indices)``.

    Example:
        >>> import flambeau_core as fc
        >>> import flambeau_nn.functional as F
        >>> out, idx = F.adaptive_max_pool1d_with_indices(fc.tensor([[[1.0, 3.0, 2.0, 5.0, 4.0, 0.0]]]), 2)
        >>> out.tolist(), idx.tolist()
        ([[[3.0, 5.0]]], [[[1, 3]]])
    """
    return adaptive_max_pool1d(input, output_size, True)


def adaptive_max_pool2d_with_indices(input: Tensor, output_size: Any, return_indices: bool = False) -> Any:
    """``adaptive_max_pool2d`` that always returns ``(values, indices)``.

    Example:
        >>> import flambeau_core as fc
        >>> import flambeau_nn.functional as F
        >>> out, idx = F.adaptive_max_pool2d_with_indices(fc.arange(16.0).reshape(1, 1, 4, 4), 1)
        >>> out.tolist(), idx.tolist()
        ([[[[15.0]]]], [[[[15]]]])
    """
    return adaptive_max_pool2d(input, output_size, True)


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
    if mode == "replicate" or (mode == "reflect" and len(pad) <= 4):
        return _pad_in_float32(input, list(pad), mode)
    return fc._C._pad_nd(input, list(pad), mode, 0.0 if value is None else float(value))


# PyTorch's CPU autocast float32 list has reflection_pad1d/2d and replication_pad1d/2d/3d (not the constant,
# circular or 3-D reflection pads): under autocast those pad in float32.
_pad_in_float32 = autocast_float32(lambda input, pad, mode: fc._C._pad_nd(input, pad, mode, 0.0))


def pixel_shuffle(input: Tensor, upscale_factor: int) -> Tensor:
    r"""``(*, C * r**2, H, W) -> (*, C, H * r, W * r)`` with ``r = upscale_factor``.

    Example:
        >>> import flambeau_core as fc
        >>> import flambeau_nn.functional as F
        >>> F.pixel_shuffle(fc.arange(4.0).reshape(1, 4, 1, 1), 2).tolist()
        [[[[0.0, 1.0], [2.0, 3.0]]]]
    """
    _check_tensor(input, "pixel_shuffle")
    return fc.pixel_shuffle(input, upscale_factor)


def pixel_unshuffle(input: Tensor, downscale_factor: int) -> Tensor:
    r"""``(*, C, H * r, W * r) -> (*, C * r**2, H, W)``, the inverse of :func:`pixel_shuffle`.

    Example:
        >>> import flambeau_core as fc
        >>> import flambeau_nn.functional as F
        >>> F.pixel_unshuffle(fc.ones(1, 2, 6, 6), 3).shape
        flambeau.Size([1, 18, 2, 2])
    """
    _check_tensor(input, "pixel_unshuffle")
    return fc.pixel_unshuffle(input, downscale_factor)


def channel_shuffle(input: Tensor, groups: int) -> Tensor:
    r"""``(N, C, *) -> (N, C, *)`` with the channels as ``(groups, C/groups)`` transposed (ShuffleNet).

    Example:
        >>> import flambeau_core as fc
        >>> channel_shuffle(fc.arange(6.0).reshape(1, 6, 1), 3).flatten().tolist()
        [0.0, 2.0, 4.0, 1.0, 3.0, 5.0]
    """
    _check_tensor(input, "channel_shuffle")
    if isinstance(groups, bool) or not isinstance(groups, int) or groups <= 0:
        raise FlambeauError(
            f"[channel_shuffle] Number of groups to divide channels in must be positive, got {groups!r}"
        )
    if input.dim() < 3:
        raise FlambeauError(f"[channel_shuffle] expected an input of at least 3 dims (N, C, *), got {_shape(input)}")
    c = input.shape[1]
    if c % groups:
        raise FlambeauError(f"[channel_shuffle] Number of channels ({c}) must be divisible by groups ({groups})")
    shape = _shape(input)
    x = input.reshape(shape[0], groups, c // groups, *shape[2:])
    return x.transpose(1, 2).reshape(shape)


native_channel_shuffle = channel_shuffle


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
