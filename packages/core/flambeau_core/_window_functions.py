"""PyTorch's top-level window functions (``torch.hann_window``, ``hamming_window``, ``blackman_window``,
``bartlett_window``, ``kaiser_window``): the windows of ``flambeau.signal.windows`` with PyTorch's older
spelling, a ``periodic`` flag (default True: the window suited to spectral analysis) in place of ``sym``,
and float16/bfloat16 allowed too. Errors are RuntimeErrors (FlambeauError), as PyTorch's."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from flambeau_core import _C
from flambeau_core._C import FlambeauError, Tensor
from flambeau_core._dtypes import get_default_dtype
from flambeau_core.signal.windows import _BLACKMAN, _bartlett, _cosine_sum, _kaiser, _length, _options, _real
from flambeau_core.sparse import strided

__all__ = ["bartlett_window", "blackman_window", "hamming_window", "hann_window", "kaiser_window"]

_FLOATS = (_C.float16, _C.bfloat16, _C.float32, _C.float64)


def _window(
    name: str,
    window_length: Any,
    periodic: bool,
    dtype: Any,
    layout: Any,
    device: Any,
    requires_grad: bool,
    formula: Callable[[int, bool, Any, Any], Tensor],
) -> Tensor:
    """Checks the arguments (in PyTorch's order), then `formula(M, sym, dtype, device)` for M >= 2."""
    M = _length(window_length, name, "window_length")
    dtype = get_default_dtype() if dtype is None else dtype
    if dtype not in _FLOATS:
        raise FlambeauError(f"[{name}] expects floating point dtypes, got: {dtype}")
    if layout is not None and layout is not strided:
        raise FlambeauError(f"[{name}] is implemented for strided tensors only, got: {layout}")
    if M < 0:
        raise FlambeauError(f"[{name}] requires non-negative window_length, got window_length={M}")
    if M <= 1:
        w = _C.ones([M], **_options(dtype, device))
    else:
        # Half-precision windows are computed in float32 and rounded once.
        compute = dtype if dtype in (_C.float32, _C.float64) else _C.float32
        w = formula(M, not periodic, compute, device).to(dtype)
    return w.requires_grad_() if requires_grad else w


def _cosine_window(coeffs: list[float]) -> Callable[[int, bool, Any, Any], Tensor]:
    return lambda M, sym, dtype, device: _cosine_sum(M, coeffs, sym, dtype, device)


def hann_window(
    window_length: int,
    periodic: bool = True,
    *,
    dtype: Any = None,
    layout: Any = strided,
    device: Any = None,
    pin_memory: bool = False,
    requires_grad: bool = False,
) -> Tensor:
    r"""The Hann window, ``w_n = sin^2(pi n / N)``, ``N = window_length`` when ``periodic`` (the
    default) else ``window_length - 1``. Same as ``flambeau.signal.windows.hann(window_length, sym=not periodic)``.

    Example:
        >>> import flambeau_core as fc
        >>> fc.hann_window(4).tolist()
        [0.0, 0.5, 1.0, 0.5]
    """
    formula = _cosine_window([0.5, 0.5])
    return _window("hann_window", window_length, periodic, dtype, layout, device, requires_grad, formula)


def hamming_window(
    window_length: int,
    periodic: bool = True,
    alpha: float = 0.54,
    beta: float = 0.46,
    *,
    dtype: Any = None,
    layout: Any = strided,
    device: Any = None,
    pin_memory: bool = False,
    requires_grad: bool = False,
) -> Tensor:
    r"""The Hamming window, ``w_n = alpha - beta cos(2 pi n / N)``, ``N = window_length`` when
    ``periodic`` (the default) else ``window_length - 1``.

    Example:
        >>> import flambeau_core as fc
        >>> [round(v, 4) for v in fc.hamming_window(4).tolist()]
        [0.08, 0.54, 1.0, 0.54]
    """
    formula = _cosine_window([_real(alpha, "alpha", "hamming_window"), _real(beta, "beta", "hamming_window")])
    return _window("hamming_window", window_length, periodic, dtype, layout, device, requires_grad, formula)


def blackman_window(
    window_length: int,
    periodic: bool = True,
    *,
    dtype: Any = None,
    layout: Any = strided,
    device: Any = None,
    pin_memory: bool = False,
    requires_grad: bool = False,
) -> Tensor:
    r"""The Blackman window, ``w_n = 0.42 - 0.5 cos(2 pi n / N) + 0.08 cos(4 pi n / N)``,
    ``N = window_length`` when ``periodic`` (the default) else ``window_length - 1``.

    Example:
        >>> import flambeau_core as fc
        >>> [round(v, 4) + 0.0 for v in fc.blackman_window(4).tolist()]
        [0.0, 0.34, 1.0, 0.34]
    """
    formula = _cosine_window(list(_BLACKMAN))
    return _window("blackman_window", window_length, periodic, dtype, layout, device, requires_grad, formula)


def bartlett_window(
    window_length: int,
    periodic: bool = True,
    *,
    dtype: Any = None,
    layout: Any = strided,
    device: Any = None,
    pin_memory: bool = False,
    requires_grad: bool = False,
) -> Tensor:
    r"""The Bartlett (triangular) window, ``w_n = 1 - |2n / N - 1|``, ``N = window_length`` when
    ``periodic`` (the default) else ``window_length - 1``.

    Example:
        >>> import flambeau_core as fc
        >>> fc.bartlett_window(4).tolist()
        [0.0, 0.5, 1.0, 0.5]
    """
    return _window("bartlett_window", window_length, periodic, dtype, layout, device, requires_grad, _bartlett)


def kaiser_window(
    window_length: int,
    periodic: bool = True,
    beta: float = 12.0,
    *,
    dtype: Any = None,
    layout: Any = strided,
    device: Any = None,
    pin_memory: bool = False,
    requires_grad: bool = False,
) -> Tensor:
    r"""The Kaiser window, ``w_n = I_0(beta sqrt(1 - (2n/N - 1)^2)) / I_0(beta)``,
    ``N = window_length`` when ``periodic`` (the default) else ``window_length - 1``. A negative ``beta``
    gives the window of ``|beta|`` (``I_0`` is even), as PyTorch's.

    Example:
        >>> import flambeau_core as fc
        >>> [round(v, 4) for v in fc.kaiser_window(5, False, 4.0).tolist()]
        [0.0885, 0.6334, 1.0, 0.6334, 0.0885]
    """
    b = abs(_real(beta, "beta", "kaiser_window"))

    def formula(M: int, sym: bool, dtype: Any, device: Any) -> Tensor:
        return _kaiser(M, b, sym, dtype, device)

    return _window("kaiser_window", window_length, periodic, dtype, layout, device, requires_grad, formula)
