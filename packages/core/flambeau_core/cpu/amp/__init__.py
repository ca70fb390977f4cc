"""``flambeau.cpu.amp``: PyTorch's older CPU spellings of ``autocast`` and ``GradScaler``."""

from __future__ import annotations

from typing import Any

from flambeau_core import _C
from flambeau_core.amp import autocast_mode, grad_scaler

__all__ = ["autocast", "GradScaler"]


class autocast(autocast_mode.autocast):  # noqa: N801  (PyTorch's name)
    """``autocast("cpu", ...)`` with ``torch.cpu.amp.autocast``'s arguments (``dtype`` defaults to bfloat16).

    Example::

        >>> import flambeau as fb
        >>> with fb.cpu.amp.autocast():
        ...     (fb.ones(2, 2) @ fb.ones(2, 2)).dtype
        flambeau.bfloat16
    """

    def __init__(self, enabled: bool = True, dtype: Any = _C.bfloat16, cache_enabled: bool = True) -> None:
        super().__init__("cpu", dtype=dtype, enabled=enabled, cache_enabled=cache_enabled)

    def __call__(self, func: Any) -> Any:
        return autocast_mode.autocast("cpu", self.fast_dtype, self._enabled, self._cache_enabled)(func)


class GradScaler(grad_scaler.GradScaler):
    """``GradScaler("cpu", ...)`` with ``torch.cpu.amp.GradScaler``'s arguments.

    Example::

        >>> import flambeau as fb
        >>> fb.cpu.amp.GradScaler(init_scale=2.0).get_scale()
        2.0
    """

    def __init__(
        self,
        init_scale: float = 2.0**16,
        growth_factor: float = 2.0,
        backoff_factor: float = 0.5,
        growth_interval: int = 2000,
        enabled: bool = True,
    ) -> None:
        super().__init__("cpu", init_scale, growth_factor, backoff_factor, growth_interval, enabled)
