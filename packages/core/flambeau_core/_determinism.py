"""``use_deterministic_algorithms`` and its readers (PyTorch's names).

No flambeau kernel consults the mode yet (none has a faster nondeterministic
variant to switch off; random numbers never depend on the thread count, Note
[Random numbers]). It is recorded so that programs which set it and read it
back (``are_deterministic_algorithms_enabled()``) run unchanged.

Example:
    >>> import flambeau_core as fc
    >>> fc.use_deterministic_algorithms(True)
    >>> fc.are_deterministic_algorithms_enabled()
    True
    >>> fc.use_deterministic_algorithms(False)
"""

from __future__ import annotations

_state = {"mode": False, "warn_only": False}
_DEBUG_MODES = {"default": 0, "warn": 1, "error": 2}


def use_deterministic_algorithms(mode: bool, *, warn_only: bool = False) -> None:
    """Sets whether ops must use deterministic algorithms (``warn_only``: warn instead of raising).

    Example:
        >>> import flambeau as fb
        >>> fb.use_deterministic_algorithms(True, warn_only=True)
        >>> fb.are_deterministic_algorithms_enabled(), fb.is_deterministic_algorithms_warn_only_enabled()
        (True, True)
        >>> fb.use_deterministic_algorithms(False)
    """
    if not isinstance(mode, bool):
        raise TypeError(f"[use_deterministic_algorithms] mode must be a bool, got {type(mode).__name__}")
    if not isinstance(warn_only, bool):
        raise TypeError(f"[use_deterministic_algorithms] warn_only must be a bool, got {type(warn_only).__name__}")
    _state["mode"] = mode
    _state["warn_only"] = warn_only


def are_deterministic_algorithms_enabled() -> bool:
    """True if :func:`use_deterministic_algorithms` turned the mode on.

    Example:
        >>> import flambeau as fb
        >>> fb.are_deterministic_algorithms_enabled()
        False
    """
    return _state["mode"]


def is_deterministic_algorithms_warn_only_enabled() -> bool:
    """True if the mode was turned on with ``warn_only=True``.

    Example:
        >>> import flambeau as fb
        >>> fb.is_deterministic_algorithms_warn_only_enabled()
        False
    """
    return _state["warn_only"]


def set_deterministic_debug_mode(debug_mode: str | int) -> None:
    """Sets the deterministic mode: ``"default"``/0 (off), ``"warn"``/1 (on, warn only) or ``"error"``/2 (on),
    as PyTorch's.

    Example:
        >>> import flambeau as fb
        >>> fb.set_deterministic_debug_mode("warn")
        >>> fb.get_deterministic_debug_mode()
        1
        >>> fb.set_deterministic_debug_mode(0)
    """
    if isinstance(debug_mode, str):
        if debug_mode not in _DEBUG_MODES:
            raise ValueError(f"[set_deterministic_debug_mode] expected one of {list(_DEBUG_MODES)}, got {debug_mode!r}")
        debug_mode = _DEBUG_MODES[debug_mode]
    elif not isinstance(debug_mode, int) or isinstance(debug_mode, bool):
        raise TypeError(f"[set_deterministic_debug_mode] expected a str or int, got {type(debug_mode).__name__}")
    if debug_mode not in (0, 1, 2):
        raise ValueError(f"[set_deterministic_debug_mode] expected 0, 1 or 2, got {debug_mode}")
    use_deterministic_algorithms(debug_mode != 0, warn_only=debug_mode == 1)


def get_deterministic_debug_mode() -> int:
    """The deterministic mode as a number: 0 (off), 1 (warn only) or 2 (on).

    Example:
        >>> import flambeau as fb
        >>> fb.get_deterministic_debug_mode()
        0
    """
    if not _state["mode"]:
        return 0
    return 1 if _state["warn_only"] else 2
