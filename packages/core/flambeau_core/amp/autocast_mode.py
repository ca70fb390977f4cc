"""``autocast``: mixed-precision regions, as ``torch.autocast`` on the CPU.

The casting itself happens in the dispatcher (Note [Autocast], flambeau/dispatch.h): each op's
policy is a column of the op table, so ops called from C++ composites, nn and user code alike
are cast. This module only drives the per-thread state.
"""

from __future__ import annotations

import functools
import warnings
from collections.abc import Callable
from typing import Any, TypeVar

from flambeau_core import _C

__all__ = [
    "autocast",
    "is_autocast_available",
    "is_autocast_enabled",
    "get_autocast_dtype",
    "set_autocast_enabled",
    "set_autocast_dtype",
    "is_autocast_cache_enabled",
    "set_autocast_cache_enabled",
    "clear_autocast_cache",
    "autocast_increment_nesting",
    "autocast_decrement_nesting",
    "is_autocast_cpu_enabled",
    "set_autocast_cpu_enabled",
    "get_autocast_cpu_dtype",
    "set_autocast_cpu_dtype",
]

_F = TypeVar("_F", bound=Callable[..., Any])
# What PyTorch reports for the device types flambeau has no autocast for.
_OTHER_DEFAULT_DTYPES = {"cuda": "float16", "xpu": "bfloat16", "mps": "float16"}


def is_autocast_available(device_type: str) -> bool:
    """True for the device types autocast supports here: ``"cpu"``.

    Example::

        >>> import flambeau as fb
        >>> fb.amp.is_autocast_available("cpu")
        True
    """
    return device_type == "cpu"


def _check_device_type(device_type: Any, name: str) -> str:
    if not isinstance(device_type, str):
        raise TypeError(f"[{name}] expected device_type as a str such as 'cpu', got {type(device_type).__name__}")
    return device_type


def is_autocast_enabled(device_type: str | None = None) -> bool:
    """True inside an enabled autocast region of ``device_type`` on this thread
    (no argument: CUDA's, as PyTorch, never on here).

    Example::

        >>> import flambeau as fb
        >>> with fb.autocast("cpu"):
        ...     fb.is_autocast_enabled("cpu")
        True
    """
    if device_type is None:
        return False
    return _check_device_type(device_type, "is_autocast_enabled") == "cpu" and _C._is_autocast_enabled()


def get_autocast_dtype(device_type: str) -> Any:
    """The low-precision dtype autocast uses on ``device_type`` (``bfloat16`` on the CPU by default).

    Example::

        >>> import flambeau as fb
        >>> fb.get_autocast_dtype("cpu")
        flambeau.bfloat16
    """
    if _check_device_type(device_type, "get_autocast_dtype") == "cpu":
        return _C._get_autocast_dtype()
    return getattr(_C, _OTHER_DEFAULT_DTYPES.get(device_type, "float16"))


def set_autocast_enabled(device_type: str, enabled: bool) -> None:
    """Turns autocast on or off on this thread (what ``autocast`` does on entry and exit).

    Example::

        >>> import flambeau as fb
        >>> fb.set_autocast_enabled("cpu", True)
        >>> (fb.ones(2, 2) @ fb.ones(2, 2)).dtype
        flambeau.bfloat16
        >>> fb.set_autocast_enabled("cpu", False)
    """
    if _check_device_type(device_type, "set_autocast_enabled") != "cpu":
        raise RuntimeError(f"[set_autocast_enabled] unsupported autocast device_type '{device_type}' (cpu)")
    _C._set_autocast_enabled(bool(enabled))


def set_autocast_dtype(device_type: str, dtype: Any) -> None:
    """Sets the low-precision dtype of ``device_type``: ``bfloat16`` or ``float16`` on the CPU.

    Example::

        >>> import flambeau as fb
        >>> fb.set_autocast_dtype("cpu", fb.float16)
        >>> fb.get_autocast_dtype("cpu")
        flambeau.float16
        >>> fb.set_autocast_dtype("cpu", fb.bfloat16)
    """
    if _check_device_type(device_type, "set_autocast_dtype") != "cpu":
        raise RuntimeError(f"[set_autocast_dtype] unsupported autocast device_type '{device_type}' (cpu)")
    _C._set_autocast_dtype(dtype)


# ---- torch's deprecated CPU-specific spellings (each warns as PyTorch's, then calls the general form) ----


def _deprecated(old: str, new: str) -> None:
    name = old.split("(")[0]
    warnings.warn(f"[{name}] {old} is deprecated. Please use {new} instead.", DeprecationWarning, stacklevel=3)


def is_autocast_cpu_enabled() -> bool:
    """Deprecated spelling of ``is_autocast_enabled("cpu")``.

    Example::

        >>> import flambeau as fb
        >>> fb.is_autocast_cpu_enabled()
        False
    """
    _deprecated("is_autocast_cpu_enabled()", "is_autocast_enabled('cpu')")
    return is_autocast_enabled("cpu")


def set_autocast_cpu_enabled(enabled: bool) -> None:
    """Deprecated spelling of ``set_autocast_enabled("cpu", enabled)``.

    Example::

        >>> import flambeau as fb
        >>> fb.set_autocast_cpu_enabled(True)
        >>> fb.is_autocast_enabled("cpu")
        True
        >>> fb.set_autocast_cpu_enabled(False)
    """
    _deprecated("set_autocast_cpu_enabled(enabled)", "set_autocast_enabled('cpu', enabled)")
    set_autocast_enabled("cpu", enabled)


def get_autocast_cpu_dtype() -> Any:
    """Deprecated spelling of ``get_autocast_dtype("cpu")``.

    Example::

        >>> import flambeau as fb
        >>> fb.get_autocast_cpu_dtype()
        flambeau.bfloat16
    """
    _deprecated("get_autocast_cpu_dtype()", "get_autocast_dtype('cpu')")
    return get_autocast_dtype("cpu")


def set_autocast_cpu_dtype(dtype: Any) -> None:
    """Deprecated spelling of ``set_autocast_dtype("cpu", dtype)``.

    Example::

        >>> import flambeau as fb
        >>> fb.set_autocast_cpu_dtype(fb.float16)
        >>> fb.get_autocast_dtype("cpu")
        flambeau.float16
        >>> fb.set_autocast_cpu_dtype(fb.bfloat16)
    """
    _deprecated("set_autocast_cpu_dtype(dtype)", "set_autocast_dtype('cpu', dtype)")
    set_autocast_dtype("cpu", dtype)


def is_autocast_cache_enabled() -> bool:
    """True if casts of weights are cached inside autocast regions (the default).

    Example::

        >>> import flambeau as fb
        >>> fb.is_autocast_cache_enabled()
        True
    """
    return _C._is_autocast_cache_enabled()


def set_autocast_cache_enabled(enabled: bool) -> None:
    """Turns the cache of cast weights on or off on this thread.

    Example::

        >>> import flambeau as fb
        >>> fb.set_autocast_cache_enabled(False)
        >>> fb.is_autocast_cache_enabled()
        False
        >>> fb.set_autocast_cache_enabled(True)
    """
    _C._set_autocast_cache_enabled(bool(enabled))


def clear_autocast_cache() -> None:
    """Drops this thread's cached casts (the outermost region's exit does it).

    Example::

        >>> import flambeau as fb
        >>> fb.clear_autocast_cache()
    """
    _C._clear_autocast_cache()


def autocast_increment_nesting() -> int:
    """Counts one more open region on this thread; returns the count (``autocast`` calls it on entry).

    Example::

        >>> import flambeau as fb
        >>> fb.autocast_increment_nesting()
        1
        >>> fb.autocast_decrement_nesting()
        0
    """
    return _C._autocast_increment_nesting()


def autocast_decrement_nesting() -> int:
    """Counts one region fewer on this thread; returns the count (at 0, ``autocast`` clears the cache).

    Example::

        >>> import flambeau as fb
        >>> with fb.autocast("cpu"):
        ...     fb.autocast_decrement_nesting(), fb.autocast_increment_nesting()
        (0, 1)
    """
    return _C._autocast_decrement_nesting()


class autocast:  # noqa: N801  (PyTorch's name)
    r"""A region (context manager or decorator) where ops run in mixed precision, as ``torch.autocast``.

    Inside it, on the CPU, the GEMM and convolution family (``mm``, ``bmm``, ``matmul``, ``linear``,
    ``conv1d``/``conv2d`` and their transposes) run on their floating inputs cast to
    ``dtype``; the losses (``cross_entropy``, ``nll_loss``, ``mse_loss``, ``l1_loss``, the BCE
    losses, ...) and ``prod`` run in float32; ``cat``, ``stack`` and ``index_copy`` cast their inputs
    to the widest floating dtype among them. Other ops run on what they are given. float64 tensors
    are never cast. Casts of leaf tensors that require grad (weights) are made once per outermost
    region. The casts are differentiable: gradients reach float32 parameters in float32.
    Regions nest; ``enabled=False`` turns autocast off inside an enabled region.

    Args:
        device_type: ``"cpu"`` (``"cuda"`` without CUDA warns and disables, as PyTorch).
        dtype: ``bfloat16`` (default on the CPU) or ``float16``; another warns and disables.
        enabled: whether the region casts.
        cache_enabled: whether casts of weights are cached (default: the current setting, True).

    Example::

        >>> import flambeau as fb
        >>> a, b = fb.ones(2, 3), fb.ones(3, 2)
        >>> with fb.autocast("cpu", dtype=fb.bfloat16):
        ...     c = a @ b
        ...     s = fb.cat([c, a[:, :2]])
        >>> c.dtype, s.dtype
        (flambeau.bfloat16, flambeau.float32)
    """

    def __init__(
        self,
        device_type: str,
        dtype: Any = None,
        enabled: bool = True,
        cache_enabled: bool | None = None,
    ) -> None:
        if not isinstance(device_type, str):
            raise ValueError(f"[autocast] Expected `device_type` of type `str`, got: `{type(device_type)}`")
        self.device = device_type
        self.fast_dtype = get_autocast_dtype(device_type) if dtype is None else dtype
        self._cache_enabled = is_autocast_cache_enabled() if cache_enabled is None else bool(cache_enabled)
        enabled = bool(enabled)
        if device_type == "cuda":
            # Only CPU autocast exists here; a program written for CUDA keeps running, in float32.
            if enabled:
                warnings.warn("User provided device_type of 'cuda', but CUDA is not available. Disabling", stacklevel=2)
            enabled = False
        elif device_type != "cpu":
            raise RuntimeError(f"[autocast] User specified an unsupported autocast device_type '{device_type}'")
        elif self.fast_dtype not in (_C.bfloat16, _C.float16):
            if not isinstance(self.fast_dtype, _C.dtype):
                raise TypeError(f"[autocast] expected dtype as a flambeau dtype, got {type(self.fast_dtype).__name__}")
            warnings.warn(
                "In CPU autocast, but the target dtype is not supported. Disabling autocast.\n"
                "CPU Autocast only supports dtypes of torch.bfloat16, torch.float16 currently.",
                stacklevel=2,
            )
            enabled = False
        self._enabled = enabled

    def __enter__(self) -> autocast:
        if self.device != "cpu":
            return self
        self.prev_cache_enabled = _C._is_autocast_cache_enabled()
        self.prev = _C._is_autocast_enabled()
        self.prev_fastdtype = _C._get_autocast_dtype()
        _C._set_autocast_enabled(self._enabled)
        if self.fast_dtype in (_C.bfloat16, _C.float16):  # else the region is disabled: keep the dtype
            _C._set_autocast_dtype(self.fast_dtype)
        _C._autocast_increment_nesting()
        _C._set_autocast_cache_enabled(self._cache_enabled)
        return self

    def __exit__(self, exc_type: Any, exc_val: Any, exc_tb: Any) -> bool:
        if self.device != "cpu":
            return False
        if _C._autocast_decrement_nesting() == 0:
            _C._clear_autocast_cache()
        _C._set_autocast_enabled(self.prev)
        _C._set_autocast_dtype(self.prev_fastdtype)
        _C._set_autocast_cache_enabled(self.prev_cache_enabled)
        return False

    def __call__(self, func: _F) -> _F:
        @functools.wraps(func)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with self.__class__(self.device, self.fast_dtype, self._enabled, self._cache_enabled):
                return func(*args, **kwargs)

        return wrapper  # type: ignore[return-value]
