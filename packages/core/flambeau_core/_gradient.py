"""``gradient``: numerical derivatives of sampled values by finite differences, composed in Python.

Second-order central differences inside, first- or second-order one-sided differences at the two ends
(``edge_order``), on a uniform grid (a scalar spacing) or at given coordinates (a 1-D tensor per dim, the
non-uniform formulas of Fornberg's finite differences, as NumPy's and PyTorch's). Slices and arithmetic over
whole tensors: one set of ops per dim, never a loop over elements.
"""

from __future__ import annotations

import numbers
from collections.abc import Sequence
from typing import Any

from flambeau_core import _C
from flambeau_core._composing import check_tensor, is_int
from flambeau_core.overrides import is_tensor_like


def _dims(input: _C.Tensor, dim: Any) -> list[int]:  # noqa: A002
    if dim is None:
        return list(range(input.dim()))
    dims = [dim] if is_int(dim) else list(dim) if isinstance(dim, Sequence) else None
    if dims is None or not all(is_int(d) for d in dims):
        raise TypeError(f"[gradient] expected dim to be None, an int or a list of ints, got {dim!r}")
    n = max(input.dim(), 1)
    out = []
    for d in dims:
        if not -n <= d < n:
            raise IndexError(
                f"[gradient] Dimension out of range (expected to be in range of [{-n}, {n - 1}], but got {d})"
            )
        d %= n
        if d in out:
            raise _C.FlambeauError(f"[gradient] dim {d} appears multiple times in the list of dims")
        out.append(d)
    return out


def _spacings(input: _C.Tensor, spacing: Any, dims: list[int], dim_given: bool) -> list[Any]:  # noqa: A002
    """One spacing per dim of dims: a number (uniform grid) or a 1-D tensor of coordinates."""
    if spacing is None:
        spacing = 1
    if isinstance(spacing, numbers.Number) and not isinstance(spacing, bool):
        return [spacing] * len(dims)
    if is_tensor_like(spacing):
        if spacing.dim() != 0:
            raise TypeError("[gradient] expected spacing to be a number, or a list or tuple of numbers or tensors")
        return [spacing.item()] * len(dims)
    if not isinstance(spacing, (list, tuple)):
        raise TypeError(f"[gradient] expected spacing to be a number, or a list or tuple, got {type(spacing).__name__}")
    if len(spacing) != len(dims):
        if dim_given:
            raise _C.FlambeauError(
                "[gradient] expected spacing to be unspecified, a scalar or it's spacing and dim arguments to "
                f"have the same length, but got a spacing argument of length {len(spacing)} and a dim argument "
                f"of length {len(dims)}."
            )
        raise _C.FlambeauError(
            "[gradient] expected spacing to be unspecified, a scalar, or a list of length equal to "
            f"'self.dim() = {input.dim()}', since dim argument was not given, but got a list of length {len(spacing)}"
        )
    out = []
    for s, d in zip(spacing, dims, strict=True):
        if is_tensor_like(s):  # a tensor-like (flambeau.overrides) runs through, its ops overridden
            if s.dim() != 1:
                raise _C.FlambeauError(
                    "[gradient] expected each element of spacing to have one dimension, but got an element "
                    f"with {s.dim()} dimensions!"
                )
            if s.shape[0] != input.shape[d]:
                raise _C.FlambeauError(
                    f"[gradient] expected the coordinates along dim {d} to have {input.shape[d]} values "
                    f"(the size of that dim), got {s.shape[0]}"
                )
            out.append(s)
        elif isinstance(s, numbers.Number) and not isinstance(s, bool):
            out.append(s)
        else:
            raise TypeError(
                f"[gradient] expected each element of spacing to be a number or a tensor, got {type(s).__name__}"
            )
    return out


def _along(c: _C.Tensor, ndim: int, d: int) -> _C.Tensor:
    """A 1-D tensor shaped to broadcast along dim d of an ndim-d tensor."""
    return c.reshape([-1] + [1] * (ndim - 1 - d))


def _uniform(f: _C.Tensor, d: int, h: Any, edge_order: int) -> _C.Tensor:
    n = f.shape[d]

    def part(start: int, stop: int) -> _C.Tensor:
        return f.narrow(d, start, stop - start)

    center = (part(2, n) - part(0, n - 2)) / (2 * h)
    if edge_order == 1:
        first = (part(1, 2) - part(0, 1)) / h
        last = (part(n - 1, n) - part(n - 2, n - 1)) / h
    else:
        first = (-1.5 * part(0, 1) + 2 * part(1, 2) - 0.5 * part(2, 3)) / h
        last = (0.5 * part(n - 3, n - 2) - 2 * part(n - 2, n - 1) + 1.5 * part(n - 1, n)) / h
    return _C.cat([first, center, last], d)


def _coordinates(f: _C.Tensor, d: int, x: _C.Tensor, edge_order: int) -> _C.Tensor:
    n, ndim = f.shape[d], f.dim()

    def part(start: int, stop: int) -> _C.Tensor:
        return f.narrow(d, start, stop - start)

    dx = x[1:] - x[:-1]
    h1, h2 = _along(dx[:-1], ndim, d), _along(dx[1:], ndim, d)  # the steps before and after each inner point
    center = (
        -h2 / (h1 * (h1 + h2)) * part(0, n - 2)
        + (h2 - h1) / (h1 * h2) * part(1, n - 1)
        + h1 / (h2 * (h1 + h2)) * part(2, n)
    )
    if edge_order == 1:
        first = (part(1, 2) - part(0, 1)) / dx[0]
        last = (part(n - 1, n) - part(n - 2, n - 1)) / dx[-1]
    else:
        a, b = dx[0], dx[1]
        first = (
            -(2 * a + b) / (a * (a + b)) * part(0, 1) + (a + b) / (a * b) * part(1, 2) - a / (b * (a + b)) * part(2, 3)
        )
        a, b = dx[-2], dx[-1]
        last = (
            b / (a * (a + b)) * part(n - 3, n - 2)
            - (a + b) / (a * b) * part(n - 2, n - 1)
            + (2 * b + a) / (b * (a + b)) * part(n - 1, n)
        )
    return _C.cat([first, center, last], d)


def gradient(
    input: _C.Tensor,  # noqa: A002
    *,
    spacing: Any = 1,
    dim: int | Sequence[int] | None = None,
    edge_order: int = 1,
) -> tuple[_C.Tensor, ...]:
    """gradient(input, *, spacing=1, dim=None, edge_order=1) -> tuple of Tensors

    Estimates the derivative of the function sampled by ``input`` along each dim of ``dim`` (default: every
    dim), one tensor of ``input``'s shape per dim: central differences at the inner points, one-sided
    differences of order ``edge_order`` (1 or 2) at the ends. ``spacing`` is the distance between samples
    (a number for every dim, or one number per dim) or, per dim, a 1-D tensor of the sample coordinates.
    Every dim differentiated needs at least ``edge_order + 1`` samples. Integer inputs give floating results.

    Example:
        >>> import flambeau_core as fc
        >>> fc.gradient(fc.tensor([1.0, 4.0, 9.0, 16.0]))[0].tolist()
        [3.0, 4.0, 6.0, 7.0]
        >>> fc.gradient(fc.tensor([1.0, 4.0, 9.0]), spacing=(fc.tensor([0.0, 1.0, 3.0]),))[0].tolist()
        [3.0, 2.8333332538604736, 2.5]
    """
    check_tensor("gradient", input)
    if not is_int(edge_order):
        raise TypeError(f"[gradient] expected an int edge_order, got {type(edge_order).__name__}")
    if edge_order not in (1, 2):
        raise _C.FlambeauError("[gradient] only supports edge_order=1 and edge_order=2.")
    if input.dtype == _C.bool:
        raise TypeError("[gradient] expected a numeric tensor, got bool (subtraction of bool tensors is undefined)")
    dims = _dims(input, dim)
    steps = _spacings(input, spacing, dims, dim is not None)
    for d in dims:
        if input.shape[d] < edge_order + 1:
            raise _C.FlambeauError(
                f"[gradient] expected each dimension size to be at least edge_order+1, got size {input.shape[d]} "
                f"along dim {d} of a tensor of shape {tuple(input.shape)} with edge_order={edge_order}"
            )
    return tuple(
        _coordinates(input, d, s, edge_order) if is_tensor_like(s) else _uniform(input, d, s, edge_order)
        for d, s in zip(dims, steps, strict=True)
    )


def install() -> None:
    import flambeau_core

    flambeau_core.gradient = gradient
