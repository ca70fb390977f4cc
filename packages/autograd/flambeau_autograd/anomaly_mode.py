"""Anomaly detection: make backward raise at the first node that produces NaN.

Example:
    >>> import flambeau_core as fc
    >>> x = fc.tensor([0.0], requires_grad=True)
    >>> with detect_anomaly():
    ...     try:
    ...         (x.sqrt() * 0.0).sum().backward()
    ...     except RuntimeError as e:
    ...         print("SqrtBackward0" in str(e))
    True
"""

from __future__ import annotations

from typing import Any

from flambeau_autograd import _C

__all__ = ["detect_anomaly", "set_detect_anomaly", "is_anomaly_enabled"]


def is_anomaly_enabled() -> bool:
    """True while anomaly detection is on (process-wide)."""
    return _C.is_anomaly_enabled()


class set_detect_anomaly:
    """Turns anomaly detection on or off; restores the previous setting when used with ``with``."""

    def __init__(self, mode: bool) -> None:
        self._prev = _C.is_anomaly_enabled()
        _C._set_anomaly_enabled(bool(mode))

    def __enter__(self) -> None:
        pass

    def __exit__(self, *exc: Any) -> None:
        _C._set_anomaly_enabled(self._prev)


class detect_anomaly:
    """Context manager: every gradient computed inside is checked for NaN (slow; for debugging)."""

    def __enter__(self) -> None:
        self._prev = _C.is_anomaly_enabled()
        _C._set_anomaly_enabled(True)

    def __exit__(self, *exc: Any) -> None:
        _C._set_anomaly_enabled(self._prev)
