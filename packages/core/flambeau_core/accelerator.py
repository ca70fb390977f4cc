"""``flambeau.accelerator``: the current accelerator, device-generically (``torch.accelerator``).

The accelerator is the device type with devices present: ``cuda`` when flambeau-cuda
sees a GPU, else the registered plug-in device (such as the simulated ``sim``
device) when it has devices. On a machine with neither, as PyTorch on a CPU-only
machine, :func:`current_accelerator` is None, :func:`is_available` False,
:func:`device_count` 0, and the functions that need a device raise
``FlambeauError`` (a RuntimeError).

Example:
    >>> import flambeau_core as fc
    >>> acc = fc.accelerator.current_accelerator()
    >>> device = acc if acc is not None else fc.device("cpu")
    >>> fc.zeros(2, device=device).device.type == device.type
    True
"""

from __future__ import annotations

import contextlib
import warnings
from collections.abc import Iterator
from typing import Any

from flambeau_core import _C
from flambeau_core._device_modules import DeviceModule, device_module

__all__ = [
    "current_accelerator",
    "current_device_idx",
    "current_device_index",
    "current_stream",
    "device_count",
    "device_index",
    "empty_cache",
    "is_available",
    "max_memory_allocated",
    "max_memory_reserved",
    "memory_allocated",
    "memory_reserved",
    "memory_stats",
    "reset_accumulated_memory_stats",
    "reset_peak_memory_stats",
    "set_device_idx",
    "set_device_index",
    "set_stream",
    "synchronize",
]


def _accelerator_type() -> str | None:
    plugin = _C._plugin_device_name()
    for name in ("cuda", plugin):
        if name and _C._device_count(name) > 0:
            return name
    return None


def _module(op: str) -> DeviceModule:
    name = _accelerator_type()
    if name is None:
        raise _C.FlambeauError(
            f"[accelerator.{op}] cannot access an accelerator device when none is available "
            "(no CUDA GPU, no plug-in device); use the cpu"
        )
    return device_module(name)


def _index(device: Any, op: str, optional: bool) -> int | None:
    """The device index that ``device`` (int, str, device or None) names on the accelerator."""
    module = _module(op)
    if device is None:
        if optional:
            return None
        raise TypeError(f"[accelerator.{op}] expected a device index, string or device, got None")
    if isinstance(device, int) and not isinstance(device, bool):
        return device
    if isinstance(device, str):
        device = _C.device(device)
    if not isinstance(device, _C.device):
        raise TypeError(f"[accelerator.{op}] expected a device index, string or device, got {type(device).__name__}")
    if device.type != module._type:
        raise ValueError(f"[accelerator.{op}] expected a {module._type} device (the accelerator), got {device}")
    return device.index if device.index is not None else (None if optional else module.current_device())


def current_accelerator(check_available: bool = False) -> _C.device | None:
    """The accelerator's device type as a device (index None), or None without one.

    ``check_available`` is accepted for PyTorch's signature; an accelerator here always has devices.
    """
    name = _accelerator_type()
    return None if name is None else _C.device(name)


def is_available() -> bool:
    """True if an accelerator with at least one device is present."""
    return _accelerator_type() is not None


def device_count() -> int:
    """Number of accelerator devices (0 without an accelerator)."""
    name = _accelerator_type()
    return 0 if name is None else _C._device_count(name)


def current_device_index() -> int:
    """Index of this thread's current accelerator device."""
    return _module("current_device_index").current_device()


def set_device_index(device: Any, /) -> None:
    """Makes ``device`` (an index, string or device of the accelerator) current on this thread."""
    index = _index(device, "set_device_index", optional=False)
    _module("set_device_index").set_device(index)


@contextlib.contextmanager
def device_index(device: int | None, /) -> Iterator[None]:
    """Context manager: makes ``device`` current inside the block (None: no change)."""
    if device is None:
        yield
        return
    with _module("device_index").device(device):
        yield


def synchronize(device: Any = None, /) -> None:
    """Waits for all work on all streams of ``device`` (the current accelerator device if None)."""
    _module("synchronize").synchronize(_index(device, "synchronize", optional=True))


def current_stream(device: Any = None, /) -> Any:
    """The current stream of ``device`` (the current accelerator device if None)."""
    return _module("current_stream").current_stream(_index(device, "current_stream", optional=True))


def set_stream(stream: Any) -> None:
    """Makes ``stream`` (an accelerator stream) current on its device."""
    _module("set_stream").set_stream(stream)


def _memory_function(name: str) -> Any:
    def f(device: Any = None, /) -> Any:
        return getattr(_module(name), name)(_index(device, name, optional=True))

    f.__name__ = name
    f.__doc__ = f"The accelerator's ``{name}`` (as ``flambeau.cuda.{name}``) for ``device`` (current if None)."
    return f


memory_allocated = _memory_function("memory_allocated")
max_memory_allocated = _memory_function("max_memory_allocated")
memory_reserved = _memory_function("memory_reserved")
max_memory_reserved = _memory_function("max_memory_reserved")
memory_stats = _memory_function("memory_stats")
reset_peak_memory_stats = _memory_function("reset_peak_memory_stats")
reset_accumulated_memory_stats = _memory_function("reset_accumulated_memory_stats")


def current_device_idx() -> int:
    """Deprecated spelling of :func:`current_device_index` (a FutureWarning, as in PyTorch)."""
    warnings.warn("Use `current_device_index` instead.", FutureWarning, stacklevel=2)
    return current_device_index()


def set_device_idx(device: Any, /) -> None:
    """Deprecated spelling of :func:`set_device_index` (a FutureWarning, as in PyTorch)."""
    warnings.warn("Use `set_device_index` instead.", FutureWarning, stacklevel=2)
    set_device_index(device)


def empty_cache() -> None:
    """Releases the accelerator allocator's cached, unused memory."""
    _module("empty_cache").empty_cache()
