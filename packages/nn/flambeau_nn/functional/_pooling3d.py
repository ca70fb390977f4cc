"""3-D pooling (``max_pool3d``, ``avg_pool3d``, ``adaptive_*_pool3d``). Part of ``flambeau_nn.functional``.

Note [3-D pooling from 2-D]
    A pooling window is a box, and max and mean over a box are separable: pool
    ``(H, W)`` of every depth slice with core's 2-D kernel, then pool depth. For
    averages the divisor is a product of per-dim counts in every PyTorch mode
    (``count_include_pad``, ``ceil_mode``), so two 2-D average pools give it
    exactly; ``divisor_override`` sums both passes (divisor 1) and divides once.
    For max the depth pass gathers the ``kD`` taps of each window with one
    ``index_select`` (the depth padded with ``-inf``) and takes their max; the
    first maximum in (d, h, w) scan order wins, as PyTorch, because the 2-D pass
    already picked the first one in each slice. Indices are ``d * H * W + h * W + w``.
"""

from __future__ import annotations

import math
from typing import Any

import flambeau_core as fc
from flambeau_core import FlambeauError, Tensor
from flambeau_core.amp.custom_functions import autocast_float32

from flambeau_nn.functional._base import _check_tensor, _shape
from flambeau_nn.functional._pooling import _adaptive_size, _check_rank, _dtype_not_implemented, _int_list, _stride

__all__ = [
    "max_pool3d",
    "max_pool3d_with_indices",
    "avg_pool3d",
    "adaptive_avg_pool3d",
    "adaptive_max_pool3d",
    "adaptive_max_pool3d_with_indices",
]

_LAYOUT = "4-D (C, D, H, W) or 5-D (N, C, D, H, W)"


def _three(v: Any, op: str, name: str) -> list[int]:
    out = _int_list(v, 3, op, name)
    return out * 3 if len(out) == 1 else out


def pool_output_size(size: int, k: int, s: int, p: int, d: int, ceil_mode: bool) -> int:
    """PyTorch's pooling output length (a window may not start in the right padding under ``ceil_mode``)."""
    span = size + 2 * p - d * (k - 1) - 1
    out = (span + (s - 1 if ceil_mode else 0)) // s + 1
    if ceil_mode and (out - 1) * s >= size + p:
        out -= 1
    return out


def _flat_planes(input: Tensor, op: str) -> tuple[Tensor, tuple[int, ...]]:
    """``(N, C, D, H, W)`` or ``(C, D, H, W)`` as ``(planes, D, H, W)``, with the leading dims to restore."""
    _check_tensor(input, op)
    _check_rank(input, (4, 5), op, _LAYOUT)
    lead = _shape(input)[:-3]
    return input.reshape((-1,) + _shape(input)[-3:]), lead


def _pool_params(
    op: str, kernel_size: Any, stride: Any, padding: Any, dilation: Any, input: Tensor, ceil_mode: bool
) -> tuple[list[int], list[int], list[int], list[int], list[int]]:
    k = _three(kernel_size, op, "kernel_size")
    s = _stride(stride, 3, op)
    s = k if not s else (s * 3 if len(s) == 1 else s)
    p = _three(padding, op, "padding")
    d = _three(dilation, op, "dilation")
    if any(x <= 0 for x in k + s + d):
        raise FlambeauError(
            f"[{op}] kernel_size, stride and dilation must be positive, got {tuple(k)}, {tuple(s)}, {tuple(d)}"
        )
    if any(p[i] < 0 or 2 * p[i] > d[i] * (k[i] - 1) + 1 for i in range(3)):
        raise FlambeauError(
            f"[{op}] pad should be at most half of effective kernel size, got padding={tuple(p)}, "
            f"kernel_size={tuple(k)}, dilation={tuple(d)}"
        )
    spatial = _shape(input)[-3:]
    out = [pool_output_size(spatial[i], k[i], s[i], p[i], d[i], ceil_mode) for i in range(3)]
    if any(o <= 0 for o in out):
        raise FlambeauError(
            f"[{op}] the output would be {tuple(out)} for an input of shape {_shape(input)}, "
            f"kernel_size={tuple(k)}, stride={tuple(s)}, padding={tuple(p)}, dilation={tuple(d)}: too small"
        )
    return k, s, p, d, out


def _depth_max(values: Tensor, positions: list[list[int]]) -> tuple[Tensor, Tensor]:
    """Max over depth windows of ``(planes, D, h, w)``: ``positions[o]`` lists window ``o``'s depths (-1: padding).

    Returns the maxima ``(planes, D_out, h, w)`` and the depth each came from.
    """
    planes, depth, h, w = _shape(values)
    taps = len(positions[0])
    # Padding reads a -inf (an integer dtype's lowest) slice appended at depth D, so it never wins over a real
    # value: each window lists its real taps first, and the first maximum wins.
    low = -math.inf if values.is_floating_point() else fc.iinfo(values.dtype).min
    padded = fc.cat([values, fc.full((planes, 1, h, w), low, dtype=values.dtype, device=values.device)], 1)
    flat = [depth if q < 0 else q for row in positions for q in row]
    index = fc.tensor(flat, dtype=fc.int64, device=values.device)
    windows = padded.index_select(1, index).reshape(planes, len(positions), taps, h, w)
    best, tap = windows.max(dim=2)
    where = index.reshape(len(positions), taps)
    chosen = fc.gather(
        where.reshape(1, len(positions), taps, 1, 1).expand(planes, len(positions), taps, h, w), 2, tap.unsqueeze(2)
    )
    return best, chosen.squeeze(2)


@autocast_float32
def max_pool3d_with_indices(
    input: Tensor,
    kernel_size: Any,
    stride: Any = None,
    padding: Any = 0,
    dilation: Any = 1,
    ceil_mode: bool = False,
    return_indices: bool = False,
) -> tuple[Tensor, Tensor]:
    r"""3-D max pooling that also returns each maximum's index in its ``(D, H, W)`` volume (``d*H*W + h*W + w``).

    Example:
        >>> import flambeau_core as fc
        >>> out, idx = max_pool3d_with_indices(fc.arange(8.0).reshape(1, 1, 2, 2, 2), 2)
        >>> out.tolist(), idx.tolist()
        ([[[[[7.0]]]]], [[[[[7]]]]])
    """
    op = "max_pool3d"
    x, lead = _flat_planes(input, op)
    if input.dtype == fc.bool:
        raise _dtype_not_implemented(input, op, op)
    k, s, p, d, out = _pool_params(op, kernel_size, stride, padding, dilation, input, bool(ceil_mode))
    depth, h, w = _shape(x)[1:]
    # Note [3-D pooling from 2-D]
    vals, idx2 = fc.max_pool2d_with_indices(x, k[1:], s[1:], p[1:], d[1:], bool(ceil_mode))
    # Each depth window lists its real taps first, then its padding: among equal maxima (-inf inputs)
    # the first real tap wins, and a window of padding only reports PyTorch's first position
    # (its start stepped past the left padding, hstart/wstart likewise), as PyTorch's kernel does.
    positions, first_depth = [], []
    for o in range(out[0]):
        taps = [o * s[0] - p[0] + t * d[0] for t in range(k[0])]
        real = [q for q in taps if 0 <= q < depth]
        positions.append(real + [-1] * (len(taps) - len(real)))
        first_depth.append(next((q for q in taps if q >= 0), taps[-1]))
    best, src_depth = _depth_max(vals, positions)
    padding_only = src_depth == depth
    plane_idx = fc.gather(idx2, 1, src_depth.clamp(0, depth - 1))
    indices = src_depth.clamp(0, depth - 1) * (h * w) + plane_idx
    first = [_first_positions(out[1 + i], s[1 + i], p[1 + i], d[1 + i], x.device) for i in range(2)]
    first_hw = first[0].reshape(-1, 1) * w + first[1].reshape(1, -1)
    first_d = fc.tensor(first_depth, dtype=fc.int64, device=x.device).reshape(1, -1, 1, 1)
    indices = fc.where(padding_only, first_d * (h * w) + first_hw, indices)
    shape = lead + tuple(out)
    return best.reshape(shape), indices.reshape(shape)


def _first_positions(n_out: int, s: int, p: int, d: int, device: Any) -> Tensor:
    """Each window's first position not in the left padding (its start stepped by the dilation)."""
    starts = [o * s - p for o in range(n_out)]
    firsts = [st + ((-st + d - 1) // d) * d if st < 0 else st for st in starts]
    return fc.tensor(firsts, dtype=fc.int64, device=device)


@autocast_float32
def max_pool3d(
    input: Tensor,
    kernel_size: Any,
    stride: Any = None,
    padding: Any = 0,
    dilation: Any = 1,
    ceil_mode: bool = False,
    return_indices: bool = False,
) -> Any:
    r"""3-D max pooling over a ``(N, C, D, H, W)`` or ``(C, D, H, W)`` input (Note [3-D pooling from 2-D]).

    ``stride`` defaults to ``kernel_size``; with ``return_indices`` also returns the int64 index of each
    maximum flattened within its ``(D, H, W)`` volume, as PyTorch.

    Example:
        >>> import flambeau_core as fc
        >>> max_pool3d(fc.ones(1, 2, 4, 4, 4), 2).shape
        flambeau.Size([1, 2, 2, 2, 2])
    """
    out, idx = max_pool3d_with_indices(input, kernel_size, stride, padding, dilation, ceil_mode)
    return (out, idx) if return_indices else out


@autocast_float32
def avg_pool3d(
    input: Tensor,
    kernel_size: Any,
    stride: Any = None,
    padding: Any = 0,
    ceil_mode: bool = False,
    count_include_pad: bool = True,
    divisor_override: int | None = None,
) -> Tensor:
    r"""3-D average pooling over a ``(N, C, D, H, W)`` or ``(C, D, H, W)`` input (Note [3-D pooling from 2-D]).

    ``count_include_pad`` counts the zero padding in the divisor; ``divisor_override`` replaces the divisor.

    Example:
        >>> import flambeau_core as fc
        >>> avg_pool3d(fc.arange(8.0).reshape(1, 1, 2, 2, 2), 2).tolist()
        [[[[[3.5]]]]]
    """
    op = "avg_pool3d"
    x, lead = _flat_planes(input, op)
    if not input.is_floating_point() and input.dtype != fc.int64:  # PyTorch's CPU kernel: floats and int64
        raise _dtype_not_implemented(input, op, "avg_pool3d_out_frame")
    if divisor_override is not None and (
        isinstance(divisor_override, bool) or not isinstance(divisor_override, int) or divisor_override == 0
    ):
        raise FlambeauError(f"[{op}] divisor must be a non-zero int, got divisor_override={divisor_override!r}")
    k, s, p, _, out = _pool_params(op, kernel_size, stride, padding, 1, input, bool(ceil_mode))
    spatial = _shape(input)[-3:]
    if any(spatial[i] < k[i] for i in range(3)):  # PyTorch's 3-D average pool checks this before padding
        raise FlambeauError(
            f"[{op}] input image (T: {spatial[0]} H: {spatial[1]} W: {spatial[2]}) smaller than kernel size "
            f"(kT: {k[0]} kH: {k[1]} kW: {k[2]})"
        )
    planes, depth = x.shape[0], x.shape[1]
    if input.dtype == fc.int64:
        return _avg_pool3d_int64(x, lead, k, s, p, out, bool(ceil_mode), bool(count_include_pad), divisor_override)
    div = None if divisor_override is None else 1
    hw = fc.avg_pool2d(x, k[1:], s[1:], p[1:], bool(ceil_mode), bool(count_include_pad), div)
    flat = hw.reshape(planes, 1, depth, out[1] * out[2])
    y = fc.avg_pool2d(flat, [k[0], 1], [s[0], 1], [p[0], 0], bool(ceil_mode), bool(count_include_pad), div)
    if divisor_override is not None:
        y = y / float(divisor_override)
    return y.reshape(lead + tuple(out))


def _avg_pool3d_int64(
    x: Tensor,
    lead: tuple[int, ...],
    k: list[int],
    s: list[int],
    p: list[int],
    out: list[int],
    ceil_mode: bool,
    count_include_pad: bool,
    divisor_override: int | None,
) -> Tensor:
    """avg_pool3d of int64 ``(planes, D, H, W)`` as PyTorch's kernel: the window's int64 sum divided by the
    whole window's divisor, truncated toward zero (two rounded 2-D passes would round twice)."""
    planes, depth, h, w = _shape(x)
    sums = fc.avg_pool2d(x, k[1:], s[1:], p[1:], ceil_mode, True, 1).reshape(planes, 1, depth, out[1] * out[2])
    sums = fc.avg_pool2d(sums, [k[0], 1], [s[0], 1], [p[0], 0], ceil_mode, True, 1).reshape(planes, *out)
    if divisor_override is not None:
        return sums.div(divisor_override, rounding_mode="trunc").reshape(lead + tuple(out))
    counts = []  # per dim, each window's divisor: its extent within the padded input, or within the input
    for size, kk, ss, pp, n in zip((depth, h, w), k, s, p, out, strict=True):
        row = []
        for o in range(n):
            start = o * ss - pp
            end = min(start + kk, size + pp)
            real = min(end, size) - max(start, 0)
            row.append(end - start if count_include_pad else max(real, 1))  # an empty window sums to 0
        counts.append(fc.tensor(row, dtype=fc.int64, device=x.device))
    divisor = counts[0].reshape(-1, 1, 1) * counts[1].reshape(1, -1, 1) * counts[2].reshape(1, 1, -1)
    return sums.div(divisor, rounding_mode="trunc").reshape(lead + tuple(out))


def _check_adaptive(op: str, input: Tensor, size: list[int]) -> None:
    if any(o < 0 for o in size):
        raise FlambeauError(f"[{op}] elements of output_size must be greater than or equal to 0, got {tuple(size)}")
    if 0 not in size and 0 in _shape(input)[-3:]:
        raise FlambeauError(f"[{op}] expected non-empty spatial dims for a non-empty output, got {_shape(input)}")


@autocast_float32
def adaptive_avg_pool3d(input: Tensor, output_size: Any) -> Tensor:
    r"""Averages ``(D, H, W)`` down to ``output_size`` adaptive windows (``None`` keeps that input size).

    Example:
        >>> import flambeau_core as fc
        >>> adaptive_avg_pool3d(fc.ones(2, 3, 5, 6, 7), 1).shape
        flambeau.Size([2, 3, 1, 1, 1])
    """
    op = "adaptive_avg_pool3d"
    x, lead = _flat_planes(input, op)
    if not input.is_floating_point():
        raise _dtype_not_implemented(input, op, "adaptive_avg_pool3d_cpu")
    size = _adaptive_size(input, output_size, 3, op)
    _check_adaptive(op, input, size)
    if 0 in size:  # an empty output, as PyTorch returns
        return fc.zeros(*(lead + tuple(size)), dtype=input.dtype, device=input.device) + input.sum() * 0.0
    planes, depth = x.shape[0], x.shape[1]
    # Note [3-D pooling from 2-D]: an adaptive window is a box too.
    hw = fc.adaptive_avg_pool2d(x, size[1:])
    y = fc.adaptive_avg_pool2d(hw.reshape(planes, 1, depth, size[1] * size[2]), [size[0], size[1] * size[2]])
    return y.reshape(lead + tuple(size))


@autocast_float32
def adaptive_max_pool3d_with_indices(input: Tensor, output_size: Any, return_indices: bool = False) -> Any:
    r"""Maxima over the adaptive windows of ``(D, H, W)`` and their indices in the volume.

    Example:
        >>> import flambeau_core as fc
        >>> adaptive_max_pool3d_with_indices(fc.arange(8.0).reshape(1, 2, 2, 2), 1)[1].tolist()
        [[[[7]]]]
    """
    op = "adaptive_max_pool3d"
    x, lead = _flat_planes(input, op)
    if not input.is_floating_point():
        raise _dtype_not_implemented(input, op, "adaptive_max_pool3d_cpu")
    size = _adaptive_size(input, output_size, 3, op)
    _check_adaptive(op, input, size)
    if 0 in size:  # an empty output, as PyTorch returns
        empty = lead + tuple(size)
        return (
            fc.zeros(*empty, dtype=input.dtype, device=input.device) + input.sum() * 0.0,
            fc.zeros(*empty, dtype=fc.int64, device=input.device),
        )
    depth, h, w = _shape(x)[1:]
    vals, idx2 = fc.adaptive_max_pool2d(x, size[1:])
    # Window o spans [floor(o*D/out), ceil((o+1)*D/out)); shorter windows repeat their last depth.
    bounds = [(o * depth // size[0], -(-(o + 1) * depth // size[0])) for o in range(size[0])]
    taps = max(b - a for a, b in bounds)
    positions = [[min(a + t, b - 1) for t in range(taps)] for a, b in bounds]
    best, src_depth = _depth_max(vals, positions)
    indices = src_depth * (h * w) + fc.gather(idx2, 1, src_depth)
    shape = lead + tuple(size)
    return best.reshape(shape), indices.reshape(shape)


@autocast_float32
def adaptive_max_pool3d(input: Tensor, output_size: Any, return_indices: bool = False) -> Any:
    r"""Maxima over ``output_size`` adaptive windows of ``(D, H, W)`` (with their indices if ``return_indices``).

    Example:
        >>> import flambeau_core as fc
        >>> adaptive_max_pool3d(fc.ones(1, 2, 5, 6, 7), (2, 3, None)).shape
        flambeau.Size([1, 2, 2, 3, 7])
    """
    out, idx = adaptive_max_pool3d_with_indices(input, output_size)
    return (out, idx) if return_indices else out
