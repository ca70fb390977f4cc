"""flambeau.signal.windows: torch.signal.windows, the window functions of spectral analysis and filter design.

Every window takes the length ``M`` and, as keywords, its own parameters, ``sym`` (True: a symmetric window,
for filter design; False: a periodic one, for spectral analysis: the symmetric window of length ``M + 1``
less its last sample), ``dtype`` (float32 or float64; default: the default dtype), ``layout`` (strided
only), ``device`` and ``requires_grad``. ``M = 0`` gives an empty tensor; ``M = 1`` a single 1. The
windows are compositions of core ops (linspace, cos, exp, i0), computed in the requested dtype as
PyTorch computes them.

Example:
    >>> import flambeau_core as fc
    >>> fc.signal.windows.bartlett(5).tolist()
    [0.0, 0.5, 1.0, 0.5, 0.0]
    >>> fc.signal.windows.hann(4, sym=False).tolist()
    [0.0, 0.5, 1.0, 0.5]
"""

from __future__ import annotations

import math
import operator
from collections.abc import Iterable
from typing import Any

from flambeau_core import _C
from flambeau_core._C import FlambeauError, Tensor
from flambeau_core._dtypes import get_default_dtype
from flambeau_core.sparse import strided

__all__ = [
    "bartlett",
    "blackman",
    "cosine",
    "exponential",
    "gaussian",
    "general_cosine",
    "general_hamming",
    "hamming",
    "hann",
    "kaiser",
    "nuttall",
]

_NUTTALL = (0.3635819, 0.4891775, 0.1365995, 0.0106411)
_BLACKMAN = (0.42, 0.5, 0.08)


def _length(M: Any, op: str, what: str = "the window length M") -> int:
    if isinstance(M, bool):
        raise TypeError(f"[{op}] {what} must be an int, got bool")
    try:
        return operator.index(M)
    except TypeError:
        raise TypeError(f"[{op}] {what} must be an int, got {type(M).__name__}") from None


def _checked(name: str, M: Any, dtype: Any, layout: Any) -> tuple[int, Any]:
    """The window length and dtype after torch.signal.windows' common checks (in its order)."""
    op = f"signal.windows.{name}"
    M = _length(M, op)
    dtype = get_default_dtype() if dtype is None else dtype
    if M < 0:
        raise FlambeauError(f"[{op}] requires non-negative window length, got M={M}")
    if layout is not strided:
        raise FlambeauError(f"[{op}] is implemented for strided tensors only, got: {layout}")
    if dtype not in (_C.float32, _C.float64):
        raise FlambeauError(f"[{op}] expects float32 or float64 dtypes, got: {dtype}")
    return M, dtype


def _options(dtype: Any, device: Any) -> dict[str, Any]:
    return {"dtype": dtype} if device is None else {"dtype": dtype, "device": device}


def _finish(w: Tensor, requires_grad: bool) -> Tensor:
    # The window is the leaf that requires grad (PyTorch's is a non-leaf over an unreachable linspace).
    return w.requires_grad_() if requires_grad else w


def _trivial(M: int, dtype: Any, device: Any, requires_grad: bool) -> Tensor:
    """The window of length 0 (empty) or 1 (a single 1), whatever its formula."""
    return _finish(_C.ones([M], **_options(dtype, device)), requires_grad)


def _positions(start: float, step: float, M: int, dtype: Any, device: Any) -> Tensor:
    """start, start + step, ..., start + (M - 1) * step, in `dtype`."""
    return _C.linspace(start, start + (M - 1) * step, M, **_options(dtype, device))


def _cosine_sum(M: int, coeffs: list[float], sym: bool, dtype: Any, device: Any) -> Tensor:
    """sum_i (-1)^i a_i cos(2 pi i n / N), N = M - 1 (symmetric) or M (periodic); M >= 2."""
    k = _positions(0.0, 2 * math.pi / (M - 1 if sym else M), M, dtype, device)
    a = _C.tensor([(-1) ** i * c for i, c in enumerate(coeffs)], **_options(dtype, device))
    i = _C.arange(0, len(coeffs), **_options(dtype, device))
    return (a.unsqueeze(-1) * _C.cos(i.unsqueeze(-1) * k)).sum(0)


def _bartlett(M: int, sym: bool, dtype: Any, device: Any) -> Tensor:
    """1 - |2n/N - 1|; M >= 2."""
    return 1 - _C.abs(_positions(-1.0, 2 / (M - 1 if sym else M), M, dtype, device))


def _kaiser(M: int, beta: float, sym: bool, dtype: Any, device: Any) -> Tensor:
    """I0(beta sqrt(1 - (2n/N - 1)^2)) / I0(beta), beta >= 0; M >= 2."""
    step = 2 * beta / (M - 1 if sym else M)
    # The last position is clamped to beta so that rounding cannot put it outside [-beta, beta].
    k = _C.linspace(-beta, min(beta, -beta + (M - 1) * step), M, **_options(dtype, device))
    b = _C.full([], beta, **_options(dtype, device))
    return _C.i0(_C.sqrt((b * b - k * k).clamp_min(0))) / _C.i0(b)


def _coefficients(a: Any, op: str) -> list[float]:
    if isinstance(a, (str, bytes)) or not isinstance(a, (Iterable, Tensor)):
        raise TypeError(f"[{op}] Coefficients must be a list/tuple, got {type(a).__name__}")
    try:
        coeffs = [float(c) for c in a]
    except (TypeError, ValueError):
        raise TypeError(f"[{op}] Coefficients must be real numbers, got {a!r}") from None
    if not coeffs:
        raise FlambeauError(f"[{op}] Coefficients cannot be empty")
    return coeffs


def _real(value: Any, what: str, op: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float)) and not hasattr(value, "__float__"):
        raise TypeError(f"[{op}] {what} must be a real number, got {type(value).__name__}")
    return float(value)


def exponential(
    M: int,
    *,
    center: float | None = None,
    tau: float = 1.0,
    sym: bool = True,
    dtype: Any = None,
    layout: Any = strided,
    device: Any = None,
    requires_grad: bool = False,
) -> Tensor:
    r"""The exponential (Poisson) window, ``w_n = exp(-|n - c| / tau)`` with ``c`` the ``center``
    (default: the middle of the window; only a periodic window, ``sym=False``, may set it).

    Raises ValueError (FlambeauError) for a negative ``M`` or ``tau <= 0``, or a ``center`` with ``sym=True``.

    Example:
        >>> import flambeau_core as fc
        >>> [round(v, 4) for v in fc.signal.windows.exponential(5, tau=2.0).tolist()]
        [0.3679, 0.6065, 1.0, 0.6065, 0.3679]
    """
    op = "signal.windows.exponential"
    M, dtype = _checked("exponential", M, dtype, layout)
    tau = _real(tau, "tau", op)
    if tau <= 0:
        raise FlambeauError(f"[{op}] Tau must be positive, got: {tau} instead.")
    if sym and center is not None:
        raise FlambeauError(f"[{op}] Center must be None for symmetric windows, got center={center}")
    if M == 0:
        return _trivial(0, dtype, device, requires_grad)
    c = (M if not sym and M > 1 else M - 1) / 2.0 if center is None else _real(center, "center", op)
    k = _positions(-c / tau, 1 / tau, M, dtype, device)
    return _finish(_C.exp(-_C.abs(k)), requires_grad)


def cosine(
    M: int,
    *,
    sym: bool = True,
    dtype: Any = None,
    layout: Any = strided,
    device: Any = None,
    requires_grad: bool = False,
) -> Tensor:
    r"""The cosine (sine) window, ``w_n = sin(pi (n + 0.5) / M)``: it starts and ends above zero.

    Example:
        >>> import flambeau_core as fc
        >>> [round(v, 4) for v in fc.signal.windows.cosine(4).tolist()]
        [0.3827, 0.9239, 0.9239, 0.3827]
    """
    M, dtype = _checked("cosine", M, dtype, layout)
    if M == 0:
        return _trivial(0, dtype, device, requires_grad)
    step = math.pi / (M + 1 if not sym and M > 1 else M)
    return _finish(_C.sin(_positions(0.5 * step, step, M, dtype, device)), requires_grad)


def gaussian(
    M: int,
    *,
    std: float = 1.0,
    sym: bool = True,
    dtype: Any = None,
    layout: Any = strided,
    device: Any = None,
    requires_grad: bool = False,
) -> Tensor:
    r"""The Gaussian window, ``w_n = exp(-(n - c)^2 / (2 sigma^2))`` with ``c`` the middle of the
    window and ``sigma`` = ``std``, which must be positive (ValueError otherwise).

    Example:
        >>> import flambeau_core as fc
        >>> [round(v, 4) for v in fc.signal.windows.gaussian(5).tolist()]
        [0.1353, 0.6065, 1.0, 0.6065, 0.1353]
    """
    op = "signal.windows.gaussian"
    M, dtype = _checked("gaussian", M, dtype, layout)
    std = _real(std, "std", op)
    if std <= 0:
        raise FlambeauError(f"[{op}] Standard deviation must be positive, got: {std} instead.")
    if M == 0:
        return _trivial(0, dtype, device, requires_grad)
    scale = 1 / (std * math.sqrt(2))
    start = -(M if not sym and M > 1 else M - 1) / 2.0
    k = _positions(start * scale, scale, M, dtype, device)
    return _finish(_C.exp(-(k * k)), requires_grad)


def kaiser(
    M: int,
    *,
    beta: float = 12.0,
    sym: bool = True,
    dtype: Any = None,
    layout: Any = strided,
    device: Any = None,
    requires_grad: bool = False,
) -> Tensor:
    r"""The Kaiser window, ``w_n = I_0(beta sqrt(1 - (2n/N - 1)^2)) / I_0(beta)`` with ``N = M - 1``
    (``sym=True``) or ``M``, and ``I_0`` the modified Bessel function :func:`flambeau.special.i0`.
    ``beta`` must be non-negative (ValueError otherwise).

    Example:
        >>> import flambeau_core as fc
        >>> [round(v, 4) for v in fc.signal.windows.kaiser(5, beta=4.0).tolist()]
        [0.0885, 0.6334, 1.0, 0.6334, 0.0885]
    """
    op = "signal.windows.kaiser"
    M, dtype = _checked("kaiser", M, dtype, layout)
    beta = _real(beta, "beta", op)
    if beta < 0:
        raise FlambeauError(f"[{op}] beta must be non-negative, got: {beta} instead.")
    if M <= 1:
        return _trivial(M, dtype, device, requires_grad)
    return _finish(_kaiser(M, beta, sym, dtype, device), requires_grad)


def general_cosine(
    M: int,
    *,
    a: Iterable[float],
    sym: bool = True,
    dtype: Any = None,
    layout: Any = strided,
    device: Any = None,
    requires_grad: bool = False,
) -> Tensor:
    r"""The generalized cosine window, ``w_n = sum_i (-1)^i a_i cos(2 pi i n / N)`` with ``N = M - 1``
    (``sym=True``) or ``M``. ``a`` is the sequence of coefficients (TypeError if it is not one, ValueError
    if it is empty); Hann, Hamming, Blackman and Nuttall are instances.

    Example:
        >>> import flambeau_core as fc
        >>> [round(v, 4) for v in fc.signal.windows.general_cosine(5, a=[0.46, 0.23, 0.31]).tolist()]
        [0.54, 0.15, 1.0, 0.15, 0.54]
    """
    M, dtype = _checked("general_cosine", M, dtype, layout)
    if M <= 1:  # before the coefficients' checks, as PyTorch
        return _trivial(M, dtype, device, requires_grad)
    coeffs = _coefficients(a, "signal.windows.general_cosine")
    return _finish(_cosine_sum(M, coeffs, sym, dtype, device), requires_grad)


def _named_cosine(
    name: str, M: Any, coeffs: list[float], sym: bool, dtype: Any, layout: Any, device: Any, requires_grad: bool
) -> Tensor:
    M, dtype = _checked(name, M, dtype, layout)
    if M <= 1:
        return _trivial(M, dtype, device, requires_grad)
    return _finish(_cosine_sum(M, coeffs, sym, dtype, device), requires_grad)


def general_hamming(
    M: int,
    *,
    alpha: float = 0.54,
    sym: bool = True,
    dtype: Any = None,
    layout: Any = strided,
    device: Any = None,
    requires_grad: bool = False,
) -> Tensor:
    r"""The generalized Hamming window, ``w_n = alpha - (1 - alpha) cos(2 pi n / N)`` with
    ``N = M - 1`` (``sym=True``) or ``M``: ``alpha=0.5`` is the Hann window, 0.54 the Hamming window.

    Example:
        >>> import flambeau_core as fc
        >>> [round(v, 4) for v in fc.signal.windows.general_hamming(5, alpha=0.5).tolist()]
        [0.0, 0.5, 1.0, 0.5, 0.0]
    """
    alpha = _real(alpha, "alpha", "signal.windows.general_hamming")
    return _named_cosine("general_hamming", M, [alpha, 1.0 - alpha], sym, dtype, layout, device, requires_grad)


def hamming(
    M: int,
    *,
    sym: bool = True,
    dtype: Any = None,
    layout: Any = strided,
    device: Any = None,
    requires_grad: bool = False,
) -> Tensor:
    r"""The Hamming window, ``w_n = 0.54 - 0.46 cos(2 pi n / N)`` with ``N = M - 1`` (``sym=True``) or ``M``.

    Example:
        >>> import flambeau_core as fc
        >>> [round(v, 4) for v in fc.signal.windows.hamming(5).tolist()]
        [0.08, 0.54, 1.0, 0.54, 0.08]
    """
    return _named_cosine("hamming", M, [0.54, 0.46], sym, dtype, layout, device, requires_grad)


def hann(
    M: int,
    *,
    sym: bool = True,
    dtype: Any = None,
    layout: Any = strided,
    device: Any = None,
    requires_grad: bool = False,
) -> Tensor:
    r"""The Hann window, ``w_n = sin^2(pi n / N)`` with ``N = M - 1`` (``sym=True``) or ``M``.

    Example:
        >>> import flambeau_core as fc
        >>> fc.signal.windows.hann(5).tolist()
        [0.0, 0.5, 1.0, 0.5, 0.0]
    """
    return _named_cosine("hann", M, [0.5, 0.5], sym, dtype, layout, device, requires_grad)


def blackman(
    M: int,
    *,
    sym: bool = True,
    dtype: Any = None,
    layout: Any = strided,
    device: Any = None,
    requires_grad: bool = False,
) -> Tensor:
    r"""The Blackman window, ``w_n = 0.42 - 0.5 cos(2 pi n / N) + 0.08 cos(4 pi n / N)`` with
    ``N = M - 1`` (``sym=True``) or ``M``.

    Example:
        >>> import flambeau_core as fc
        >>> [round(v, 4) + 0.0 for v in fc.signal.windows.blackman(5).tolist()]
        [0.0, 0.34, 1.0, 0.34, 0.0]
    """
    return _named_cosine("blackman", M, list(_BLACKMAN), sym, dtype, layout, device, requires_grad)


def nuttall(
    M: int,
    *,
    sym: bool = True,
    dtype: Any = None,
    layout: Any = strided,
    device: Any = None,
    requires_grad: bool = False,
) -> Tensor:
    r"""The minimum 4-term Blackman-Harris window of Nuttall (1981), a cosine sum with the coefficients
    0.3635819, 0.4891775, 0.1365995, 0.0106411 over ``N = M - 1`` (``sym=True``) or ``M``.

    Example:
        >>> import flambeau_core as fc
        >>> [round(v, 4) for v in fc.signal.windows.nuttall(5).tolist()]
        [0.0004, 0.227, 1.0, 0.227, 0.0004]
    """
    return _named_cosine("nuttall", M, list(_NUTTALL), sym, dtype, layout, device, requires_grad)


def bartlett(
    M: int,
    *,
    sym: bool = True,
    dtype: Any = None,
    layout: Any = strided,
    device: Any = None,
    requires_grad: bool = False,
) -> Tensor:
    r"""The Bartlett (triangular) window, ``w_n = 1 - |2n / N - 1|`` with ``N = M - 1`` (``sym=True``) or ``M``.

    Example:
        >>> import flambeau_core as fc
        >>> fc.signal.windows.bartlett(5).tolist()
        [0.0, 0.5, 1.0, 0.5, 0.0]
    """
    M, dtype = _checked("bartlett", M, dtype, layout)
    if M <= 1:
        return _trivial(M, dtype, device, requires_grad)
    return _finish(_bartlett(M, sym, dtype, device), requires_grad)
