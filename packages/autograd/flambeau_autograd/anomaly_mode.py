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

__all__ = [
    "detect_anomaly",
    "set_detect_anomaly",
    "is_anomaly_enabled",
    "set_anomaly_enabled",
    "is_anomaly_check_nan_enabled",
]

# PyTorch's check_nan flag. flambeau's anomaly mode is its NaN check: the flag is recorded and reported,
# and the check runs whenever the mode is on.
_check_nan = {"value": True}


def is_anomaly_enabled() -> bool:
    """is_anomaly_enabled() -> bool

    True while anomaly detection is on (process-wide).

    Example:
        >>> is_anomaly_enabled()
        False
    """
    return _C.is_anomaly_enabled()


class set_detect_anomaly:
    """Turns anomaly detection on or off; restores the previous setting when used with ``with``.

    Example:
        >>> import flambeau as fb
        >>> with fb.autograd.set_detect_anomaly(True):
        ...     print(fb.autograd.is_anomaly_enabled())
        True
        >>> fb.autograd.is_anomaly_enabled()
        False
    """

    def __init__(self, mode: bool) -> None:
        self._prev = _C.is_anomaly_enabled()
        _C._set_anomaly_enabled(bool(mode))

    def __enter__(self) -> None:
        pass

    def __exit__(self, *exc: Any) -> None:
        _C._set_anomaly_enabled(self._prev)


class detect_anomaly:
    """Context manager: every gradient computed inside is checked for NaN (slow; for debugging).

    Example:
        >>> import flambeau as fb
        >>> x = fb.tensor([0.0], requires_grad=True)
        >>> with fb.autograd.detect_anomaly():
        ...     try:
        ...         (x.sqrt() * 0).sum().backward()  # d sqrt(x)/dx at 0 is inf, times 0 is NaN
        ...     except RuntimeError:
        ...         print("NaN caught")
        NaN caught
    """

    def __enter__(self) -> None:
        self._prev = _C.is_anomaly_enabled()
        _C._set_anomaly_enabled(True)

    def __exit__(self, *exc: Any) -> None:
        _C._set_anomaly_enabled(self._prev)


def set_anomaly_enabled(enabled: bool, check_nan: bool = True) -> None:
    """set_anomaly_enabled(enabled, check_nan=True) -> None

    Turns anomaly detection on or off (process-wide), as ``set_detect_anomaly`` without restoring.
    ``check_nan`` is recorded (:func:`is_anomaly_check_nan_enabled`); flambeau's anomaly mode is its NaN
    check, which runs whenever the mode is on.

    Example:
        >>> set_anomaly_enabled(True)
        >>> is_anomaly_enabled(), is_anomaly_check_nan_enabled()
        (True, True)
        >>> set_anomaly_enabled(False)
    """
    if not isinstance(enabled, bool) or not isinstance(check_nan, bool):
        raise TypeError(
            f"[set_anomaly_enabled] expected bools enabled and check_nan, got {type(enabled).__name__} and "
            f"{type(check_nan).__name__}"
        )
    _C._set_anomaly_enabled(enabled)
    _check_nan["value"] = check_nan


def is_anomaly_check_nan_enabled() -> bool:
    """is_anomaly_check_nan_enabled() -> bool

    The ``check_nan`` flag last given to :func:`set_anomaly_enabled` (True by default).

    Example:
        >>> is_anomaly_check_nan_enabled()
        True
    """
    return _check_nan["value"]
