"""Fractional max pooling (``fractional_max_pool2d/3d``). Part of ``flambeau_nn.functional``.

Note [Fractional max pooling]
    Graham's fractional max pooling picks, per ``(sample, channel)`` plane and
    per spatial dim, window starts from one uniform sample ``u``:
    ``start[i] = int((i + u) * alpha) - int(u * alpha)`` with
    ``alpha = (in - k) / (out - 1)``, and ``start[out - 1] = in - k``. The
    starts are computed on tensors in the input's dtype (PyTorch's CPU kernel
    uses ``scalar_t``, so the same float32 roundings pick the same windows),
    the windows' flat indices are built by broadcasting, and one ``gather``
    plus a ``max`` over the ``prod(k)`` taps gives values and indices; the
    first maximum in scan order wins, as PyTorch. PyTorch's samples order the
    columns differently per rank: in 2-D ``u[..., 0]`` drives W and ``u[..., 1]``
    H; in 3-D ``u[..., 0]``, ``[1]``, ``[2]`` drive D, H, W.
"""

from __future__ import annotations

from typing import Any

import flambeau_core as fc
from flambeau_core import FlambeauError, Tensor
from flambeau_core.amp.custom_functions import autocast_float32

from flambeau_nn.functional._base import _check_tensor, _shape

__all__ = [
    "fractional_max_pool2d",
    "fractional_max_pool2d_with_indices",
    "fractional_max_pool3d",
    "fractional_max_pool3d_with_indices",
]


# The sample column driving each spatial dim (outermost first): PyTorch's 2-D kernel reads W from column 0,
# its 3-D kernel reads T, H, W from columns 0, 1, 2.
_SAMPLE_COLUMN = {2: (1, 0), 3: (0, 1, 2)}


def _per_dim(v: Any, n: int, op: str, name: str, kind: type) -> list:
    vals = list(v) if isinstance(v, (tuple, list)) else [v]
    if len(vals) == 1:
        vals = vals * n
    if len(vals) != n or not all(isinstance(x, (int, float) if kind is float else int) for x in vals):
        raise TypeError(f"[{op}] {name} must be a {kind.__name__} or a tuple of {n}, got {v!r}")
    return vals


def _window_starts(u: Tensor, in_size: int, out_size: int, k: int) -> Tensor:
    """Window starts ``(planes, out_size)`` (int64) from the samples ``u`` ``(planes,)``."""
    planes = u.shape[0]
    last = fc.full((planes, 1), in_size - k, dtype=fc.int64, device=u.device)
    if out_size == 1:
        return last
    alpha = fc.tensor((in_size - k) / (out_size - 1), dtype=u.dtype, device=u.device)
    i = fc.arange(out_size - 1, dtype=u.dtype, device=u.device).unsqueeze(0)
    uu = u.unsqueeze(1)
    starts = ((i + uu) * alpha).to(fc.int64) - (uu * alpha).to(fc.int64)
    return fc.cat([starts, last], 1)


def _fractional_max_pool(
    op: str,
    n: int,
    input: Tensor,
    kernel_size: Any,
    output_size: Any,
    output_ratio: Any,
    _random_samples: Tensor | None,
) -> tuple[Tensor, Tensor]:
    # Note [Fractional max pooling]
    _check_tensor(input, op)
    if input.dim() not in (n + 1, n + 2):
        raise FlambeauError(f"[{op}] expected a {n + 1}-D or {n + 2}-D input, got shape {_shape(input)}")
    if input.dtype not in (fc.float32, fc.float64):
        raise TypeError(f"[{op}] expected a floating point input, got {input.dtype}")
    k = _per_dim(kernel_size, n, op, "kernel_size", int)
    spatial = list(_shape(input)[-n:])
    if output_size is None:
        if output_ratio is None:
            raise FlambeauError(f"[{op}] requires specifying either an output_size or an output_ratio")
        ratio = _per_dim(output_ratio, n, op, "output_ratio", float)
        out = [int(spatial[i] * ratio[i]) for i in range(n)]
    else:
        out = _per_dim(output_size, n, op, "output_size", int)
    # PyTorch's 3-D kernel wants output_size + kernel_size - 1 < input size, its 2-D kernel <=.
    slack = 1 if n == 3 else 0
    for i in range(n):
        if k[i] <= 0 or out[i] <= 0 or out[i] + k[i] - 1 + slack > spatial[i]:
            bound = "<" if n == 3 else "<="
            raise FlambeauError(
                f"[{op}] kernel_size {tuple(k)} and output_size {tuple(out)} do not fit the input {_shape(input)}: "
                f"need output_size + kernel_size - 1 {bound} input size in every spatial dim"
            )
    unbatched = input.dim() == n + 1
    x = input.unsqueeze(0) if unbatched else input
    batch, channels = x.shape[0], x.shape[1]
    if _random_samples is None:
        _random_samples = fc.rand(batch, channels, n, dtype=input.dtype, device=input.device)
    _check_tensor(_random_samples, op, "_random_samples")
    if _shape(_random_samples) != (batch, channels, n):
        raise FlambeauError(
            f"[{op}] _random_samples must have shape {(batch, channels, n)}, got {_shape(_random_samples)}"
        )
    planes = batch * channels
    u = _random_samples.to(input.dtype).reshape(planes, n)
    # Flat window indices by broadcasting: dim i's coordinate lives on axes (1 + i) (window) and (1 + n + i) (tap).
    index = None
    for i in range(n):
        starts = _window_starts(u.select(1, _SAMPLE_COLUMN[n][i]), spatial[i], out[i], k[i])
        shape = [planes] + [1] * (2 * n)
        shape[1 + i] = out[i]
        coord = starts.reshape(shape)
        tap_shape = [1] * (2 * n + 1)
        tap_shape[1 + n + i] = k[i]
        coord = coord + fc.arange(k[i], dtype=fc.int64, device=input.device).reshape(tap_shape)
        index = coord if index is None else index * spatial[i] + coord
    n_out, taps = 1, 1
    for i in range(n):
        n_out *= out[i]
        taps *= k[i]
    index = index.expand(planes, *out, *k).reshape(planes, n_out * taps)
    values = fc.gather(x.reshape(planes, -1), 1, index).reshape(planes, n_out, taps)
    best, tap = values.max(dim=2)
    chosen = fc.gather(index.reshape(planes, n_out, taps), 2, tap.unsqueeze(2)).squeeze(2)
    shape = (() if unbatched else (batch,)) + (channels, *out)
    return best.reshape(shape), chosen.reshape(shape)


@autocast_float32
def fractional_max_pool2d_with_indices(
    input: Tensor,
    kernel_size: Any,
    output_size: Any = None,
    output_ratio: Any = None,
    return_indices: bool = False,
    _random_samples: Tensor | None = None,
) -> tuple[Tensor, Tensor]:
    r"""``fractional_max_pool2d`` that always returns ``(values, indices)`` (indices ``h * W + w``).

    Example:
        >>> import flambeau_core as fc
        >>> u = fc.full((1, 1, 2), 0.5)
        >>> x = fc.arange(16.0).reshape(1, 1, 4, 4)
        >>> fractional_max_pool2d_with_indices(x, 2, (2, 2), _random_samples=u)[1].tolist()
        [[[[5, 7], [13, 15]]]]
    """
    return _fractional_max_pool(
        "fractional_max_pool2d", 2, input, kernel_size, output_size, output_ratio, _random_samples
    )


@autocast_float32
def fractional_max_pool2d(
    input: Tensor,
    kernel_size: Any,
    output_size: Any = None,
    output_ratio: Any = None,
    return_indices: bool = False,
    _random_samples: Tensor | None = None,
) -> Any:
    r"""Fractional max pooling over ``(N, C, H, W)`` or ``(C, H, W)`` (Note [Fractional max pooling]).

    Give ``output_size`` or ``output_ratio`` (``int(in * ratio)``); ``_random_samples`` ``(N, C, 2)``
    in ``[0, 1)`` fixes the windows (drawn uniformly when None).

    Example:
        >>> import flambeau_core as fc
        >>> fractional_max_pool2d(fc.randn(2, 3, 9, 9), 3, output_ratio=0.5).shape
        flambeau.Size([2, 3, 4, 4])
    """
    out, idx = fractional_max_pool2d_with_indices(input, kernel_size, output_size, output_ratio, False, _random_samples)
    return (out, idx) if return_indices else out


@autocast_float32
def fractional_max_pool3d_with_indices(
    input: Tensor,
    kernel_size: Any,
    output_size: Any = None,
    output_ratio: Any = None,
    return_indices: bool = False,
    _random_samples: Tensor | None = None,
) -> tuple[Tensor, Tensor]:
    r"""``fractional_max_pool3d`` that always returns ``(values, indices)`` (indices ``(d * H + h) * W + w``).

    Example:
        >>> import flambeau_core as fc
        >>> fractional_max_pool3d_with_indices(fc.randn(1, 2, 5, 5, 5), 2, 3)[1].shape
        flambeau.Size([1, 2, 3, 3, 3])
    """
    return _fractional_max_pool(
        "fractional_max_pool3d", 3, input, kernel_size, output_size, output_ratio, _random_samples
    )


@autocast_float32
def fractional_max_pool3d(
    input: Tensor,
    kernel_size: Any,
    output_size: Any = None,
    output_ratio: Any = None,
    return_indices: bool = False,
    _random_samples: Tensor | None = None,
) -> Any:
    r"""Fractional max pooling over ``(N, C, D, H, W)`` or ``(C, D, H, W)`` (Note [Fractional max pooling]).

    Example:
        >>> import flambeau_core as fc
        >>> fractional_max_pool3d(fc.randn(1, 2, 8, 8, 8), 2, output_ratio=(0.5, 0.5, 0.5)).shape
        flambeau.Size([1, 2, 4, 4, 4])
    """
    out, idx = fractional_max_pool3d_with_indices(input, kernel_size, output_size, output_ratio, False, _random_samples)
    return (out, idx) if return_indices else out
