"""Resampling: ``interpolate`` (every mode and rank), ``grid_sample``, ``affine_grid``.

Part of ``flambeau_nn.functional``, which re-exports it.

Note [Separable resampling]
    Every ``interpolate`` mode but ``area`` weights each output along each
    spatial dim independently, so an N-D resize is N 1-D resizes in a row.
    2-D ``nearest``, ``linear``, ``bilinear`` and ``trilinear`` run on core's 2-D
    kernels (``upsample_nearest2d``/``upsample_bilinear2d``): a 3-D input is
    resized over ``(H, W)`` with ``D`` folded into the channels, then over
    ``D`` with ``H*W`` as a width the kernel leaves unchanged (an identity
    resize: same size, scale 1). ``nearest-exact`` and ``bicubic`` have no
    kernel (nor 1-D/3-D ``nearest``, whose PyTorch kernels lack the 2-D one's
    special cases): each dim is one gather of the taps, times their weights,
    summed. The index and weight arithmetic runs on tensors in float32 (the
    source index) or the input's dtype (the weights), as PyTorch's CPU kernels.
"""

from __future__ import annotations

import warnings
from typing import Any

import flambeau_core as fc
from flambeau_core import FlambeauError, Tensor
from flambeau_core.amp.custom_functions import autocast_float32

from flambeau_nn.functional._base import _check_tensor, _shape

__all__ = ["interpolate", "upsample", "upsample_nearest", "upsample_bilinear", "grid_sample", "affine_grid"]

_INTERP_MODES = ("nearest", "nearest-exact", "linear", "bilinear", "bicubic", "trilinear", "area")
_MODE_RANK = {"linear": 1, "bilinear": 2, "bicubic": 2, "trilinear": 3}
_CUBIC_A = -0.75  # PyTorch's (and OpenCV's) cubic convolution coefficient


def _output_size(
    input: Tensor, size: Any, scale_factor: Any, recompute_scale_factor: bool | None, dim: int, mode: str
) -> tuple[list[int], list[float] | None]:
    """The output size and the scales the kernels use (None: from the sizes), by PyTorch's rules."""
    spatial = list(_shape(input)[2:])
    if size is not None and scale_factor is not None:
        raise FlambeauError("[interpolate] only one of size or scale_factor should be defined")
    if size is not None:
        if recompute_scale_factor:
            raise FlambeauError("[interpolate] recompute_scale_factor is not meaningful with an explicit size")
        sizes = list(size) if isinstance(size, (tuple, list)) else [size] * dim
        if len(sizes) != dim:
            raise FlambeauError(
                f"[interpolate] input and output must have the same number of spatial dims, but got input "
                f"with spatial dims {spatial} and output size {tuple(sizes)}"
            )
        if not all(isinstance(s, int) and not isinstance(s, bool) for s in sizes):
            raise TypeError(f"[interpolate] size must be an int or a tuple of ints, got {size!r}")
        out, scales = sizes, None
    elif scale_factor is not None:
        scales = list(scale_factor) if isinstance(scale_factor, (tuple, list)) else [scale_factor] * dim
        if len(scales) != dim:
            raise FlambeauError(
                f"[interpolate] input and scale_factor must have the same number of spatial dims, but got "
                f"input with spatial dims {spatial} and scale_factor {tuple(scales)}"
            )
        scales = [float(s) for s in scales]
        if not all(0.0 < s < float("inf") for s in scales):
            raise FlambeauError(f"[interpolate] scale_factor must be positive and finite, got {scale_factor!r}")
        out = [int(spatial[i] * scales[i]) for i in range(dim)]
        if recompute_scale_factor:
            scales = None
    else:
        raise FlambeauError("[interpolate] either size or scale_factor should be defined")
    # 'area' is adaptive average pooling, which PyTorch lets produce an empty output.
    if mode == "area" and all(s >= 0 for s in out):
        return out, scales
    if any(s <= 0 for s in out) or any(s <= 0 for s in spatial):
        raise FlambeauError(
            f"[interpolate] input and output sizes should be greater than 0, but got input spatial sizes "
            f"{spatial} and output size {out}"
        )
    return out, scales


def _source_scale(in_size: int, out_size: int, align_corners: bool, scale: float | None) -> float:
    """PyTorch's ``area_pixel_compute_scale``: source step per output step."""
    if align_corners:
        return (in_size - 1) / (out_size - 1) if out_size > 1 else 0.0
    return 1.0 / scale if scale is not None and scale > 0 else in_size / out_size


def _resample_dim(x: Tensor, dim: int, index: Tensor, weight: Tensor | None) -> Tensor:
    """Output ``o`` along ``dim`` is ``sum_t weight[o, t] * x[index[o, t]]`` (one gather of all taps)."""
    out, taps = _shape(index)
    shape = list(_shape(x))
    # gather with a broadcast (stride-0) index, not index_select: core's index_select along the
    # innermost dim is ~20x slower (23 ms vs 0.8 ms for 4x3x128x256 float32).
    flat = index.reshape([1] * dim + [out * taps] + [1] * (x.dim() - dim - 1))
    g = fc.gather(x, dim, flat.expand(*(shape[:dim] + [out * taps] + shape[dim + 1 :])))
    g = g.reshape(shape[:dim] + [out, taps] + shape[dim + 1 :])
    if weight is None:
        return g.squeeze(dim + 1)
    w = weight.reshape([out, taps] + [1] * (x.dim() - dim - 1))
    return (g * w).sum(dim + 1)


def _nearest_index(in_size: int, out_size: int, scale: float | None, device: Any, exact: bool) -> Tensor:
    """Source ``floor(dst * s)`` (nearest) or ``floor((dst + 0.5) * s)`` (nearest-exact), float32 as PyTorch."""
    s = fc.tensor(_source_scale(in_size, out_size, False, scale), dtype=fc.float32, device=device)
    dst = fc.arange(out_size, dtype=fc.float32, device=device)
    src = ((dst + 0.5 if exact else dst) * s).floor()
    return src.to(fc.int64).clamp(0, in_size - 1).reshape(out_size, 1)


def _bicubic_taps(in_size: int, out_size: int, align_corners: bool, scale: float | None, dtype: Any, device: Any):
    """The 4 clamped source indices and cubic-convolution weights of each output position."""
    s = fc.tensor(_source_scale(in_size, out_size, align_corners, scale), dtype=dtype, device=device)
    dst = fc.arange(out_size, dtype=dtype, device=device)
    real = dst * s if align_corners else (dst + 0.5) * s - 0.5  # not clamped at 0 for cubic
    base = real.floor()
    t = (real - base).unsqueeze(1)
    a = _CUBIC_A
    near = fc.cat([t, 1.0 - t], 1)  # distances to taps 1 and 2
    far = fc.cat([t + 1.0, 2.0 - t], 1)  # distances to taps 0 and 3
    w_near = ((a + 2.0) * near - (a + 3.0)) * near * near + 1.0
    w_far = ((a * far - 5.0 * a) * far + 8.0 * a) * far - 4.0 * a
    weight = fc.stack([w_far[:, 0], w_near[:, 0], w_near[:, 1], w_far[:, 1]], 1)
    index = base.to(fc.int64).unsqueeze(1) + fc.arange(-1, 3, dtype=fc.int64, device=device).unsqueeze(0)
    return index.clamp(0, in_size - 1), weight


def _separable_kernel(x: Tensor, out: list[int], kernel: Any, scales: list[float | None]) -> Tensor:
    """A core 2-D resize kernel over the last 1, 2 or 3 dims (Note [Separable resampling])."""
    n, c = x.shape[0], x.shape[1]
    spatial = list(_shape(x)[2:])
    if len(spatial) == 1:
        return kernel(x.unsqueeze(2), [1, out[0]], None, scales[0]).squeeze(2)
    if len(spatial) == 2:
        return kernel(x, out, scales[0], scales[1])
    d, h, w = spatial
    hw = kernel(x.reshape(n, c * d, h, w), out[1:], scales[1], scales[2])
    flat = hw.reshape(n, c, d, out[1] * out[2])
    return kernel(flat, [out[0], out[1] * out[2]], scales[0], None).reshape(n, c, *out)


def interpolate(
    input: Tensor,
    size: Any = None,
    scale_factor: Any = None,
    mode: str = "nearest",
    align_corners: bool | None = None,
    recompute_scale_factor: bool | None = None,
    antialias: bool = False,
) -> Tensor:
    r"""Resizes an ``(N, C, L)``, ``(N, C, H, W)`` or ``(N, C, D, H, W)`` input to ``size`` or by ``scale_factor``.

    Modes as PyTorch: ``'nearest'`` (source ``floor(dst * in/out)``), ``'nearest-exact'``
    (``floor((dst + 0.5) * in/out)``), ``'linear'`` (3-D input), ``'bilinear'`` and ``'bicubic'``
    (4-D), ``'trilinear'`` (5-D), with ``align_corners``; ``'area'`` (adaptive average pooling).
    With ``scale_factor`` the output size is ``floor(in * scale_factor)`` and the kernels use the
    given factor, unless ``recompute_scale_factor=True`` asks for the ratio of the sizes.
    ``antialias=True`` is not supported.

    Example:
        >>> import flambeau_core as fc
        >>> interpolate(fc.tensor([[[1.0, 2.0]]]), scale_factor=2, mode="linear").tolist()
        [[[1.0, 1.25, 1.75, 2.0]]]
    """
    _check_tensor(input, "interpolate")
    if mode not in _INTERP_MODES:
        raise NotImplementedError(f"[interpolate] mode {mode!r} is not supported: use one of {_INTERP_MODES}")
    if antialias:
        raise NotImplementedError("[interpolate] antialias=True is not supported")
    if mode in ("nearest", "nearest-exact", "area"):
        if align_corners is not None:
            raise FlambeauError(
                "[interpolate] align_corners option can only be set with the interpolating modes: "
                "linear | bilinear | bicubic | trilinear"
            )
    elif align_corners is None:
        align_corners = False
    dim = input.dim() - 2
    if dim not in (1, 2, 3):
        raise NotImplementedError(
            f"[interpolate] input must be 3-D, 4-D or 5-D (N, C, *spatial), got shape {_shape(input)}"
        )
    if mode in _MODE_RANK and _MODE_RANK[mode] != dim:
        raise NotImplementedError(
            f"[interpolate] got {input.dim()}-D input, but {mode} mode needs {_MODE_RANK[mode] + 2}-D input"
        )
    out, scales = _output_size(input, size, scale_factor, recompute_scale_factor, dim, mode)
    if mode == "area":
        from flambeau_nn.functional import _pooling, _pooling3d

        pool = (_pooling.adaptive_avg_pool1d, _pooling.adaptive_avg_pool2d, _pooling3d.adaptive_avg_pool3d)[dim - 1]
        return pool(input, out)
    spatial = list(_shape(input)[2:])
    per_dim = scales if scales is not None else [None] * dim
    if mode == "nearest" and dim == 2:
        # Only 2-D: PyTorch's 2-D kernel copies when out == in and halves when out == 2 * in whatever the
        # scale_factor (core's kernel does the same); its 1-D and 3-D kernels always use floor(dst * scale).
        return _separable_kernel(input, out, fc.upsample_nearest2d, per_dim)
    if mode in ("linear", "bilinear", "trilinear"):
        ac = bool(align_corners)

        def bilinear(x: Tensor, size2: list[int], sh: float | None, sw: float | None) -> Tensor:
            return fc.upsample_bilinear2d(x, size2, ac, sh, sw)

        return _separable_kernel(input, out, bilinear, per_dim)
    x = input
    for i in range(dim):  # one pass per spatial dim (at most 3): Note [Separable resampling]
        if mode in ("nearest", "nearest-exact"):
            index = _nearest_index(spatial[i], out[i], per_dim[i], input.device, mode == "nearest-exact")
            x = _resample_dim(x, 2 + i, index, None)
        else:
            index, weight = _bicubic_taps(
                spatial[i], out[i], bool(align_corners), per_dim[i], input.dtype, input.device
            )
            x = _resample_dim(x, 2 + i, index, weight)
    return x


def _deprecated(name: str) -> None:
    warnings.warn(
        f"`nn.functional.{name}` is deprecated. Use `nn.functional.interpolate` instead.", UserWarning, stacklevel=3
    )


def upsample(
    input: Tensor,
    size: Any = None,
    scale_factor: Any = None,
    mode: str = "nearest",
    align_corners: bool | None = None,
) -> Tensor:
    """Deprecated alias of :func:`interpolate` (warns, as PyTorch).

    Example:
        >>> import warnings
        >>> import flambeau_core as fc
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("ignore")
        ...     out = upsample(fc.ones(1, 1, 2, 2), scale_factor=2)
        >>> out.shape
        flambeau.Size([1, 1, 4, 4])
    """
    _deprecated("upsample")
    return interpolate(input, size, scale_factor, mode, align_corners)


def upsample_nearest(input: Tensor, size: Any = None, scale_factor: Any = None) -> Tensor:
    """Deprecated: ``interpolate(input, size, scale_factor, mode='nearest')``.

    Example:
        >>> import warnings
        >>> import flambeau_core as fc
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("ignore")
        ...     out = upsample_nearest(fc.ones(1, 1, 2, 2), 3)
        >>> out.shape
        flambeau.Size([1, 1, 3, 3])
    """
    _deprecated("upsample_nearest")
    return interpolate(input, size, scale_factor, mode="nearest")


def upsample_bilinear(input: Tensor, size: Any = None, scale_factor: Any = None) -> Tensor:
    """Deprecated: ``interpolate(input, size, scale_factor, mode='bilinear', align_corners=True)``.

    Example:
        >>> import warnings
        >>> import flambeau_core as fc
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("ignore")
        ...     out = upsample_bilinear(fc.ones(1, 1, 2, 2), scale_factor=2)
        >>> out.shape
        flambeau.Size([1, 1, 4, 4])
    """
    _deprecated("upsample_bilinear")
    return interpolate(input, size, scale_factor, mode="bilinear", align_corners=True)


# ---- grid_sample / affine_grid ----

_GRID_MODES = ("bilinear", "nearest", "bicubic")
_GRID_PADDING = ("zeros", "border", "reflection")


def _unnormalize(coord: Tensor, size: int, align_corners: bool) -> Tensor:
    """[-1, 1] to pixel coordinates: -1 is the first pixel's centre (align_corners) or its outer edge."""
    if align_corners:
        return (coord + 1.0) * ((size - 1) / 2.0)
    return ((coord + 1.0) * size - 1.0) / 2.0


def _reflect(coord: Tensor, twice_low: int, twice_high: int) -> Tensor:
    """Reflects ``coord`` into ``[twice_low / 2, twice_high / 2]`` by mirroring at both ends, repeatedly."""
    if twice_low == twice_high:
        return coord * 0.0
    low = twice_low / 2.0
    span = (twice_high - twice_low) / 2.0
    dist = (coord - low).abs()
    extra = fc.fmod(dist, span)
    flips = (dist / span).floor()
    even = fc.remainder(flips, 2.0) == 0
    return fc.where(even, extra + low, span - extra + low)


def _pad_coord(coord: Tensor, size: int, padding_mode: str, align_corners: bool) -> Tensor:
    """PyTorch's ``compute_coordinates``: border clamps, reflection mirrors then clamps; zeros leaves it."""
    if padding_mode == "border":
        return coord.clamp(0.0, float(size - 1))
    if padding_mode == "reflection":
        if align_corners:
            coord = _reflect(coord, 0, 2 * (size - 1))
        else:
            coord = _reflect(coord, -1, 2 * size - 1)
        return coord.clamp(0.0, float(size - 1))
    return coord


def _gather_taps(flat: Tensor, sizes: list[int], taps: list[tuple[list[Tensor], Tensor]]) -> Tensor:
    """``sum_t weight_t * input[idx_t]`` over all taps, with out-of-bounds taps reading 0.

    ``flat`` is the input as ``(N, C, prod(sizes))``; each tap is (integer-valued float coordinates per
    spatial dim, outermost first, each ``(N, P)``; its weight ``(N, P)``). All taps go through one gather.
    """
    idx_all, w_all = [], []
    for coords, weight in taps:
        inside = None
        index = None
        for coord, size in zip(coords, sizes, strict=True):
            ok = (coord >= 0) & (coord <= size - 1)
            inside = ok if inside is None else inside & ok
            c = coord.clamp(0, size - 1).to(fc.int64)
            index = c if index is None else index * size + c
        idx_all.append(index)
        w_all.append(fc.where(inside, weight, weight * 0.0))
    n, ch = flat.shape[0], flat.shape[1]
    index = fc.stack(idx_all, 1)  # (N, taps, P)
    taps_n, p = index.shape[1], index.shape[2]
    values = fc.gather(flat, 2, index.reshape(n, 1, taps_n * p).expand(n, ch, taps_n * p))
    weights = fc.stack(w_all, 1).unsqueeze(1)  # (N, 1, taps, P)
    return (values.reshape(n, ch, taps_n, p) * weights).sum(2)


def _cubic_weights(t: Tensor) -> list[Tensor]:
    a = _CUBIC_A

    def near(x: Tensor) -> Tensor:
        return ((a + 2.0) * x - (a + 3.0)) * x * x + 1.0

    def far(x: Tensor) -> Tensor:
        return ((a * x - 5.0 * a) * x + 8.0 * a) * x - 4.0 * a

    return [far(t + 1.0), near(t), near(1.0 - t), far(2.0 - t)]


@autocast_float32
def grid_sample(
    input: Tensor,
    grid: Tensor,
    mode: str = "bilinear",
    padding_mode: str = "zeros",
    align_corners: bool | None = None,
) -> Tensor:
    r"""Samples ``input`` at the normalized ``grid`` locations (PyTorch's ``F.grid_sample``).

    4-D: ``input (N, C, H, W)``, ``grid (N, H_out, W_out, 2)`` holding ``(x, y)`` in ``[-1, 1]``;
    5-D: ``input (N, C, D, H, W)``, ``grid (N, D_out, H_out, W_out, 3)`` holding ``(x, y, z)``.
    ``mode``: ``'bilinear'`` (trilinear on 5-D), ``'nearest'`` (round half to even) or
    ``'bicubic'`` (4-D only); ``padding_mode``: ``'zeros'``, ``'border'`` or ``'reflection'``.
    Differentiable in both ``input`` and ``grid`` (gathers times weights, no kernel of its own).

    Example:
        >>> import flambeau_core as fc
        >>> img = fc.arange(4.0).reshape(1, 1, 2, 2)
        >>> grid_sample(img, fc.zeros(1, 1, 1, 2), align_corners=True).tolist()
        [[[[1.5]]]]
    """
    op = "grid_sample"
    _check_tensor(input, op)
    _check_tensor(grid, op, "grid")
    if mode not in _GRID_MODES:
        raise FlambeauError(f"[{op}] mode must be one of {_GRID_MODES}, got {mode!r}")
    if padding_mode not in _GRID_PADDING:
        raise FlambeauError(f"[{op}] padding_mode must be one of {_GRID_PADDING}, got {padding_mode!r}")
    if input.dim() not in (4, 5):
        raise FlambeauError(f"[{op}] expected a 4-D or 5-D input, got shape {_shape(input)}")
    n_sp = input.dim() - 2
    if grid.dim() != input.dim() or grid.shape[-1] != n_sp or grid.shape[0] != input.shape[0]:
        raise FlambeauError(
            f"[{op}] a {input.dim()}-D input of shape {_shape(input)} needs a grid of shape "
            f"(N, *out, {n_sp}) with N = {input.shape[0]}, got {_shape(grid)}"
        )
    if input.dtype != grid.dtype:
        raise TypeError(f"[{op}] input and grid must have the same dtype, got {input.dtype} and {grid.dtype}")
    if mode == "bicubic" and n_sp != 2:
        raise FlambeauError(f"[{op}] bicubic interpolation only supports 4-D input, got shape {_shape(input)}")
    if any(s == 0 for s in _shape(input)[2:]):
        raise FlambeauError(f"[{op}] expected non-empty spatial dims, got input of shape {_shape(input)}")
    ac = bool(align_corners)
    n, c = input.shape[0], input.shape[1]
    sizes = list(_shape(input)[2:])  # outermost first (D, H, W)
    out_shape = _shape(grid)[1:-1]
    g = grid.reshape(n, -1, n_sp)
    # grid's last dim is (x, y[, z]): innermost spatial dim first.
    raw = [_unnormalize(g.select(2, n_sp - 1 - i), sizes[i], ac) for i in range(n_sp)]
    flat = input.reshape(n, c, -1)
    if mode == "bicubic":
        base = [r.floor() for r in raw]
        ws = [_cubic_weights(r - b) for r, b in zip(raw, base, strict=True)]
        taps = []
        for i in range(4):  # 16 taps over (y, x): a loop over kernel taps, not data
            for j in range(4):
                cy = _pad_coord(base[0] + (i - 1), sizes[0], padding_mode, ac)
                cx = _pad_coord(base[1] + (j - 1), sizes[1], padding_mode, ac)
                taps.append(([cy.round(), cx.round()], ws[0][i] * ws[1][j]))
        out = _gather_taps(flat, sizes, taps)
    else:
        coords = [_pad_coord(r, s, padding_mode, ac) for r, s in zip(raw, sizes, strict=True)]
        if mode == "nearest":
            out = _gather_taps(flat, sizes, [([co.round() for co in coords], coords[0] * 0.0 + 1.0)])
        else:
            lo = [co.floor() for co in coords]
            frac = [co - f for co, f in zip(coords, lo, strict=True)]
            taps = []
            for corner in range(2**n_sp):  # the 4 or 8 corners: a loop over taps
                cs, weight = [], None
                for i in range(n_sp):
                    up = (corner >> (n_sp - 1 - i)) & 1
                    cs.append(lo[i] + up)
                    wi = frac[i] if up else 1.0 - frac[i]
                    weight = wi if weight is None else weight * wi
                taps.append((cs, weight))
            out = _gather_taps(flat, sizes, taps)
    return out.reshape((n, c) + tuple(out_shape))


def _base_coords(steps: int, align_corners: bool, dtype: Any, device: Any) -> Tensor:
    if steps <= 1:
        return fc.zeros(max(steps, 0), dtype=dtype, device=device)
    r = fc.linspace(-1.0, 1.0, steps, dtype=dtype, device=device)
    return r if align_corners else r * ((steps - 1) / steps)


def affine_grid(theta: Tensor, size: Any, align_corners: bool | None = None) -> Tensor:
    r"""The sampling grid of a batch of affine maps ``theta`` for :func:`grid_sample`.

    ``theta (N, 2, 3)`` with ``size = (N, C, H, W)`` gives ``(N, H, W, 2)``; ``theta (N, 3, 4)``
    with ``size = (N, C, D, H, W)`` gives ``(N, D, H, W, 3)``. Differentiable in ``theta``.

    Example:
        >>> import flambeau_core as fc
        >>> identity = fc.tensor([[[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]])
        >>> affine_grid(identity, (1, 1, 2, 2), align_corners=True).tolist()[0][0]
        [[-1.0, -1.0], [1.0, -1.0]]
    """
    op = "affine_grid"
    _check_tensor(theta, op, "theta")
    if theta.dtype not in (fc.float32, fc.float64):
        raise TypeError(f"[{op}] expected theta to be a floating point tensor, got {theta.dtype}")
    size = list(size)
    if len(size) == 4:
        want = (size[0], 2, 3)
    elif len(size) == 5:
        want = (size[0], 3, 4)
    else:
        raise NotImplementedError(
            f"[{op}] only supports 4-D and 5-D sizes, for 2-D and 3-D affine transforms; got size {tuple(size)}"
        )
    if _shape(theta) != want:
        raise FlambeauError(
            f"[{op}] expected a batch of {'2-D' if len(size) == 4 else '3-D'} affine matrices of shape "
            f"{want} for size {tuple(size)}, got theta of shape {_shape(theta)}"
        )
    if min(size[2:]) <= 0:
        raise FlambeauError(f"[{op}] expected non-zero, positive output size, got {tuple(size)}")
    ac = bool(align_corners)
    spatial = size[2:]  # (H, W) or (D, H, W)
    axes = [_base_coords(s, ac, theta.dtype, theta.device) for s in reversed(spatial)]  # x, y[, z]
    k = len(spatial)
    parts = []
    for i, a in enumerate(axes):  # coordinate i varies along spatial dim k - 1 - i
        shape = [1] * k
        shape[k - 1 - i] = spatial[k - 1 - i]
        parts.append(a.reshape(shape).expand(*spatial))
    parts.append(fc.ones(*spatial, dtype=theta.dtype, device=theta.device))
    base = fc.stack(parts, k).reshape(1, -1, k + 1)  # (1, prod, k + 1)
    grid = fc.matmul(base, theta.transpose(1, 2))  # (N, prod, k)
    return grid.reshape(size[0], *spatial, k)
