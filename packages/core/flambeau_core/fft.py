"""flambeau.fft: the sample-frequency and shift helpers of torch.fft.

``fftfreq``, ``rfftfreq``, ``fftshift`` and ``ifftshift`` need no complex
dtype and are here. The transforms themselves (fft, ifft, rfft, irfft, hfft,
fft2, ifft2, rfft2, fftn, ifftn, rfftn, irfftn) return complex tensors: they
come with the complex dtypes (issue 7, item 1) and are not defined yet.

Example:
    >>> import flambeau_core as fc
    >>> fc.fft.fftfreq(4).tolist()
    [0.0, 0.25, -0.5, -0.25]
"""

from __future__ import annotations

from typing import Any

from flambeau_core import _C
from flambeau_core._C import FlambeauError, Tensor

__all__ = ["fftfreq", "rfftfreq", "fftshift", "ifftshift"]


def _check_n(n: Any, op: str) -> int:
    if isinstance(n, bool) or not isinstance(n, int):
        raise TypeError(f"{op}: n must be an int, got {type(n).__name__}")
    if n < 0:
        raise FlambeauError(f"{op}: n must be non-negative, got {n}")
    return n


def _freq_dtype(dtype: Any, op: str) -> Any:
    dtype = _C.float32 if dtype is None else dtype
    if dtype not in (_C.float32, _C.float64):
        raise TypeError(f"{op}: expected a float32 or float64 dtype, got {dtype}")
    return dtype


def fftfreq(
    n: int,
    d: float = 1.0,
    *,
    out: Tensor | None = None,
    dtype: Any = None,
    layout: Any = None,
    device: Any = None,
    requires_grad: bool = False,
) -> Tensor:
    """The sample frequencies of a signal of size n: [0, 1, ..., ceil(n/2)-1, -floor(n/2), ..., -1] / (d*n)."""
    n = _check_n(n, "fft.fftfreq")
    dtype = _freq_dtype(dtype, "fft.fftfreq")
    pos = (n + 1) // 2
    idx = _C.cat([_C.arange(0, pos, dtype=_C.float64), _C.arange(-(n // 2), 0, dtype=_C.float64)], 0)
    r = (idx / (float(d) * n) if n else idx).to(dtype)
    if out is not None:
        out.copy_(r)
        r = out
    return r.requires_grad_() if requires_grad else r


def rfftfreq(
    n: int,
    d: float = 1.0,
    *,
    out: Tensor | None = None,
    dtype: Any = None,
    layout: Any = None,
    device: Any = None,
    requires_grad: bool = False,
) -> Tensor:
    """The sample frequencies of rfft's output for a signal of size n: [0, 1, ..., n//2] / (d*n)."""
    n = _check_n(n, "fft.rfftfreq")
    dtype = _freq_dtype(dtype, "fft.rfftfreq")
    idx = _C.arange(0, n // 2 + 1, dtype=_C.float64)
    r = (idx / (float(d) * n)).to(dtype)  # n = 0: [nan], as PyTorch (0 / 0)
    if out is not None:
        out.copy_(r)
        r = out
    return r.requires_grad_() if requires_grad else r


def _roll_dims(x: Tensor, dim: Any, forward: bool, op: str) -> Tensor:
    if not isinstance(x, Tensor):
        raise TypeError(f"{op}: expected a Tensor, got {type(x).__name__}")
    nd = x.dim()
    if dim is None:
        dims = list(range(nd))
    else:
        dims = [dim] if isinstance(dim, int) else list(dim)
    for d in dims:
        if not -max(nd, 1) <= d < max(nd, 1):
            raise IndexError(
                f"{op}: Dimension out of range (expected to be in range of "
                f"[{-max(nd, 1)}, {max(nd, 1) - 1}], but got {d})"
            )
    if nd == 0:
        return x.clone()
    for d in dims:
        d %= nd
        size = x.shape[d]
        if size <= 1:
            continue
        # Roll by size//2 (fftshift) or -(size//2) (ifftshift): the last `shift` elements move to the front.
        shift = size // 2 if forward else size - size // 2
        x = _C.cat([x.narrow(d, size - shift, shift), x.narrow(d, 0, size - shift)], d)
    return x if dims else x.clone()


def fftshift(input: Tensor, dim: Any = None) -> Tensor:
    """Moves the zero-frequency term to the center: a roll by n//2 along each dim of `dim` (all when None)."""
    return _roll_dims(input, dim, True, "fft.fftshift")


def ifftshift(input: Tensor, dim: Any = None) -> Tensor:
    """The inverse of fftshift: a roll by -(n//2) along each dim of `dim` (all when None)."""
    return _roll_dims(input, dim, False, "fft.ifftshift")
