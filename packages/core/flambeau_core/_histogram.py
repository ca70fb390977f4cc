"""``histogram`` and ``histogramdd`` composed in Python over ``searchsorted`` and ``index_add``.

Each point's bin along each dim is found by a binary search of that dim's edges (``searchsorted`` with
``right=True``, less one): the bin ``[edges[i], edges[i + 1])``, the last bin closed on the right as in
PyTorch and NumPy. Points outside the edges (or NaN) go to one extra bin that is dropped; the counts (or
weights) are summed by ``index_add`` over the flattened bin index.
"""

from __future__ import annotations

import collections
import math
from collections.abc import Sequence
from typing import Any

from flambeau_core import _C
from flambeau_core._composing import check_tensor, is_int

# PyTorch's named tuples (torch.return_types.histogram / histogramdd), with its field names.
HistogramResult = collections.namedtuple("histogram", ["hist", "bin_edges"])
HistogramddResult = collections.namedtuple("histogramdd", ["hist", "bin_edges"])


def _check_dtype(name: str, input: _C.Tensor) -> None:  # noqa: A002
    if not input.is_floating_point() or input.dtype in (_C.float16, _C.bfloat16):
        raise TypeError(f"[{name}] expected a float32 or float64 input, got {input.dtype}")


def _edges(
    name: str,
    points: _C.Tensor,
    bins: Sequence[Any],
    range: Sequence[float] | None,  # noqa: A002
) -> list[_C.Tensor]:
    """The bin edges of each of the D columns of points (N, D): given tensors, or linspace over the range."""
    dims = points.shape[1]
    if len(bins) != dims:
        raise _C.FlambeauError(
            f"[{name}] The size of bins must be equal to the innermost dimension of the input: "
            f"got {len(bins)} bins for an input of shape {tuple(points.shape)}"
        )
    if range is not None:
        range = [float(r) for r in range]  # noqa: A001
        if len(range) != 2 * dims:
            raise _C.FlambeauError(
                f"[{name}] for a {dims}-dimensional histogram range should have {2 * dims} elements, "
                f"but got {len(range)}"
            )
    edges = []
    for d, b in enumerate(bins):
        if isinstance(b, _C.Tensor):
            if b.dim() != 1:
                raise _C.FlambeauError(
                    f"[{name}] bins tensor should have one dimension, but got {b.dim()} dimensions in the bins "
                    f"tensor for dimension {d}"
                )
            if b.dtype != points.dtype:
                raise _C.FlambeauError(
                    f"[{name}] input tensor and bins tensors should have the same dtype, but got input with dtype "
                    f"{points.dtype} and bins for dimension {d} with dtype {b.dtype}"
                )
            if b.shape[0] < 2:
                raise _C.FlambeauError(f"[{name}] bins must be > 0, but got {b.shape[0] - 1} for dimension {d}")
            edges.append(b)
            continue
        if not is_int(b):
            raise TypeError(f"[{name}] expected bins to be an int or a 1-D tensor per dim, got {type(b).__name__}")
        if b <= 0:
            raise _C.FlambeauError(f"[{name}] bins must be > 0, but got {b} for dimension {d}")
        if range is not None:
            lo, hi = range[2 * d], range[2 * d + 1]
        elif points.shape[0] == 0:
            lo, hi = 0.0, 1.0
        else:
            column = points[:, d]
            lo, hi = column.min().item(), column.max().item()
        if lo > hi:
            raise _C.FlambeauError(
                f"[{name}] min should not exceed max, but got min {lo:g} max {hi:g} for dimension {d}"
            )
        if not (math.isfinite(lo) and math.isfinite(hi)):
            raise _C.FlambeauError(f"[{name}] dimension {d}'s range [{lo:g}, {hi:g}] is not finite")
        if lo == hi:  # an empty range becomes one unit wide, as in NumPy
            lo, hi = lo - 0.5, hi + 0.5
        edges.append(_C.linspace(lo, hi, b + 1, dtype=points.dtype, device=points.device))
    return edges


def _counts(points: _C.Tensor, edges: list[_C.Tensor], weight: _C.Tensor | None, density: bool) -> _C.Tensor:
    sizes = [e.shape[0] - 1 for e in edges]
    total = math.prod(sizes)
    flat = _C.zeros(points.shape[0], dtype=_C.int64, device=points.device)
    inside = _C.ones(points.shape[0], dtype=_C.bool, device=points.device)
    for d, e in enumerate(edges):
        x = points[:, d].contiguous()
        index = (_C.searchsorted(e, x, right=True) - 1).clamp(0, sizes[d] - 1)  # x == the last edge: last bin
        inside = inside & (x >= e[0]) & (x <= e[-1])
        flat = flat * sizes[d] + index
    flat = _C.where(inside, flat, total)  # outside or NaN: the extra bin, dropped below
    values = _C.ones(points.shape[0], dtype=points.dtype, device=points.device) if weight is None else weight
    hist = _C.zeros(total + 1, dtype=points.dtype, device=points.device).index_add(0, flat, values)
    hist = hist[:total].reshape(sizes)
    if density:
        volume = None
        for d, e in enumerate(edges):
            width = (e[1:] - e[:-1]).reshape([-1] + [1] * (len(edges) - 1 - d))
            volume = width if volume is None else volume * width
        hist = hist / (hist.sum() * volume)
    return hist


def _check_weight(name: str, input_shape: Sequence[int], weight: Any, like: _C.Tensor, flat: bool) -> _C.Tensor | None:
    if weight is None:
        return None
    check_tensor(name, weight, "weight")
    expected = tuple(input_shape[:-1])
    if (weight.numel() != math.prod(expected)) if flat else (tuple(weight.shape) != expected):
        raise _C.FlambeauError(
            f"[{name}] if weight tensor is provided it should have the same shape as the input tensor excluding "
            f"its innermost dimension, but got input with shape {list(input_shape)} and weight with shape "
            f"{list(weight.shape)}"
        )
    if weight.dtype != like.dtype:
        raise _C.FlambeauError(
            f"[{name}] if weight tensor is provided, input tensor and weight tensor should have the same dtype, "
            f"but got input({like.dtype}), and weight({weight.dtype})"
        )
    return weight.reshape(-1)


def histogram(
    input: _C.Tensor,  # noqa: A002
    bins: int | _C.Tensor,
    *,
    range: tuple[float, float] | None = None,  # noqa: A002
    weight: _C.Tensor | None = None,
    density: bool = False,
) -> HistogramResult:
    """histogram(input, bins, *, range=None, weight=None, density=False) -> (Tensor, Tensor)

    Histogram of the values of ``input`` (float32 or float64, any shape): ``bins`` equal-width bins over
    ``range`` (default: the smallest and largest value), or the bin edges given as a 1-D increasing tensor.
    Each bin holds its left edge, the last one its right edge too; values outside are not counted.
    ``weight`` (as many values as ``input``) weighs each value; ``density=True`` divides by the total and
    the bin widths, so the histogram integrates to 1. Returns ``(hist, bin_edges)``.

    Example:
        >>> import flambeau_core as fc
        >>> hist, edges = fc.histogram(fc.tensor([1.0, 2.0, 1.0]), bins=4, range=(0.0, 3.0))
        >>> hist.tolist(), edges.tolist()
        ([0.0, 2.0, 1.0, 0.0], [0.0, 0.75, 1.5, 2.25, 3.0])
    """
    check_tensor("histogram", input)
    _check_dtype("histogram", input)
    if range is not None and len(range) != 2:
        raise _C.FlambeauError(f"[histogram] expected range to be (min, max), got {range!r}")
    points = input.reshape(-1, 1)
    w = _check_weight("histogram", points.shape, weight, input, flat=True)
    edges = _edges("histogram", points, [bins], range)
    return HistogramResult(_counts(points, edges, w, density), edges[0])


def histogramdd(
    input: _C.Tensor,  # noqa: A002
    bins: int | Sequence[int] | Sequence[_C.Tensor],
    *,
    range: Sequence[float] | None = None,  # noqa: A002
    weight: _C.Tensor | None = None,
    density: bool = False,
) -> HistogramddResult:
    """histogramdd(input, bins, *, range=None, weight=None, density=False) -> (Tensor, Tensor[])

    D-dimensional histogram of the points in the last dim of ``input`` (``(..., D)``, float32 or float64).
    ``bins`` is one int for every dim, one int per dim, or one 1-D tensor of edges per dim; ``range``
    (``[min_0, max_0, min_1, max_1, ...]``) bounds the equal-width bins (default: each dim's smallest and
    largest value). ``weight`` (shape ``input.shape[:-1]``) and ``density`` as in :func:`histogram`.
    Returns the ``(bins_0, ..., bins_{D-1})`` histogram and the tuple of each dim's edges.

    Example:
        >>> import flambeau_core as fc
        >>> hist, edges = fc.histogramdd(fc.tensor([[0.0, 1.0], [1.0, 1.0], [2.0, 0.0]]), bins=[2, 2])
        >>> hist.tolist()
        [[0.0, 1.0], [1.0, 1.0]]
    """
    check_tensor("histogramdd", input)
    _check_dtype("histogramdd", input)
    if input.dim() < 2:
        raise _C.FlambeauError(
            f"[histogramdd] input tensor should have at least 2 dimensions, got shape {tuple(input.shape)}"
        )
    points = input.reshape(-1, input.shape[-1])
    w = _check_weight("histogramdd", input.shape, weight, input, flat=False)
    per_dim = [bins] * points.shape[1] if is_int(bins) else list(bins) if isinstance(bins, Sequence) else None
    if per_dim is None:
        raise TypeError(f"[histogramdd] expected bins to be an int, ints or tensors, got {type(bins).__name__}")
    edges = _edges("histogramdd", points, per_dim, range)
    return HistogramddResult(_counts(points, edges, w, density), tuple(edges))


def install() -> None:
    import flambeau_core

    flambeau_core.histogram = histogram
    flambeau_core.histogramdd = histogramdd
    _C.Tensor.histogram = histogram
