"""Process-wide settings PyTorch exposes at top level that flambeau records and reports: the inter-op thread
count, the float32 matmul precision and warn-always (and ``init_num_threads``/``set_flush_denormal``, which
have nothing to set here).

None changes what flambeau computes: flambeau runs no inter-op thread pool (ops run on the calling thread,
each parallel over ``get_num_threads()`` intra-op threads), its CPU GEMMs are full float32 whatever the
precision, and it has no warn-once messages to repeat. They are kept so that programs which set and read
them run unchanged; the matmul precision also sets ``backends.cuda.matmul.allow_tf32`` and follows it, as
PyTorch's does.

Example:
    >>> import flambeau_core as fc
    >>> fc.set_float32_matmul_precision("high")
    >>> fc.get_float32_matmul_precision(), fc.backends.cuda.matmul.allow_tf32
    ('high', True)
    >>> fc.set_float32_matmul_precision("highest")
"""

from __future__ import annotations

import builtins
import os
import warnings

from flambeau_core import _C

_PRECISIONS = ("highest", "high", "medium")
_state = {"interop_threads": None, "precision": "highest", "warn_always": False}


def get_num_interop_threads() -> int:
    """get_num_interop_threads() -> int

    The number of inter-op threads: the machine's CPU count unless :func:`set_num_interop_threads` set it.
    flambeau runs no inter-op pool (module note): the number is recorded, not used.

    Example:
        >>> import flambeau_core as fc
        >>> fc.get_num_interop_threads() >= 1
        True
    """
    n = _state["interop_threads"]
    return n if n is not None else max(1, os.cpu_count() or 1)


def set_num_interop_threads(int: int) -> None:  # noqa: A002  (PyTorch's parameter name)
    """set_num_interop_threads(int) -> None

    Sets the number of inter-op threads; as in PyTorch, only once per process (a second call raises).
    Recorded and reported by :func:`get_num_interop_threads`; flambeau has no inter-op pool to size.

    Example:
        >>> import flambeau_core as fc
        >>> fc.get_num_interop_threads() > 0
        True
    """
    n = int
    if isinstance(n, bool) or not isinstance(n, builtins.int):
        raise TypeError(f"[set_num_interop_threads] expects an int, but got {type(n).__name__}")
    if n <= 0:
        raise _C.FlambeauError(f"[set_num_interop_threads] expects a positive integer, got {n}")
    if _state["interop_threads"] is not None:
        raise _C.FlambeauError(
            "[set_num_interop_threads] Error: cannot set number of interop threads after parallel work has "
            f"started or set_num_interop_threads called (it is {_state['interop_threads']})"
        )
    _state["interop_threads"] = n


def _matmul_flags():
    from flambeau_core.backends import cuda

    return cuda.matmul


def get_float32_matmul_precision() -> str:
    """get_float32_matmul_precision() -> str

    The float32 matmul precision set by :func:`set_float32_matmul_precision`: ``"highest"`` (the default),
    ``"high"`` or ``"medium"``. Setting ``backends.cuda.matmul.allow_tf32`` moves it between
    ``"highest"`` and ``"high"``, as in PyTorch.

    Example:
        >>> import flambeau_core as fc
        >>> fc.get_float32_matmul_precision()
        'highest'
    """
    precision, tf32 = _state["precision"], _matmul_flags().allow_tf32
    if (precision != "highest") == tf32:
        return precision
    return "high" if tf32 else "highest"


def set_float32_matmul_precision(precision: str) -> None:
    """set_float32_matmul_precision(precision) -> None

    Sets the internal precision of float32 matrix multiplications: ``"highest"``, ``"high"`` or
    ``"medium"`` (an unknown name warns and changes nothing, as in PyTorch). It changes nothing on CPU:
    flambeau's CPU GEMMs always compute in full float32 (and its CUDA GEMMs do not read it yet); the
    setting is recorded, reported, and mirrored in ``backends.cuda.matmul.allow_tf32``.

    Example:
        >>> import flambeau_core as fc
        >>> fc.set_float32_matmul_precision("medium")
        >>> fc.get_float32_matmul_precision()
        'medium'
        >>> fc.set_float32_matmul_precision("highest")
    """
    if not isinstance(precision, str):
        raise TypeError(f"[set_float32_matmul_precision] expects a str, but got {type(precision).__name__}")
    if precision not in _PRECISIONS:
        warnings.warn(
            f"{precision} is not one of 'highest', 'high', or 'medium'; the current "
            "set_float32_matmul_precision call has no effect.",
            UserWarning,
            stacklevel=2,
        )
        return
    _state["precision"] = precision
    _matmul_flags().allow_tf32 = precision != "highest"


def set_warn_always(b: bool, /) -> None:
    """set_warn_always(b) -> None

    When ``b`` is True, warnings PyTorch gives only once per process are to be given every time; False
    (the default) restores once. flambeau has no warn-once messages yet, so this is recorded and reported
    by :func:`is_warn_always_enabled`.

    Example:
        >>> import flambeau_core as fc
        >>> fc.set_warn_always(True)
        >>> fc.is_warn_always_enabled()
        True
        >>> fc.set_warn_always(False)
    """
    if not isinstance(b, bool):
        raise TypeError(f"[set_warn_always] expects a bool, but got {type(b).__name__}")
    _state["warn_always"] = b


def is_warn_always_enabled() -> bool:
    """is_warn_always_enabled() -> bool

    True if :func:`set_warn_always` turned warn-always on.

    Example:
        >>> import flambeau_core as fc
        >>> fc.is_warn_always_enabled()
        False
    """
    return _state["warn_always"]


def init_num_threads() -> None:
    """init_num_threads() -> None

    PyTorch's call that gives a newly created thread the count :func:`set_num_threads` set. flambeau's
    intra-op thread count is process-wide, so every thread already has it: nothing to do.

    Example:
        >>> import threading
        >>> import flambeau_core as fc
        >>> seen = []
        >>> worker = threading.Thread(target=lambda: (fc.init_num_threads(), seen.append(fc.get_num_threads())))
        >>> worker.start(); worker.join()
        >>> seen == [fc.get_num_threads()]
        True
    """


def set_flush_denormal(mode: bool, /) -> bool:
    """set_flush_denormal(mode) -> bool

    PyTorch's switch for flushing subnormal floats to zero on the CPU; it returns whether the machine
    supports it and the mode was set. flambeau's kernels have no such switch, so this returns False
    (unsupported) and changes nothing: subnormal values stay as IEEE 754 computes them.

    Example:
        >>> import flambeau_core as fc
        >>> fc.set_flush_denormal(True)
        False
    """
    if not isinstance(mode, bool):
        raise TypeError(f"[set_flush_denormal] flush_denormal expects a bool, but got {type(mode).__name__}")
    return False
