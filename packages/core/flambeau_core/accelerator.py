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
    "empty_host_cache",
    "get_device_capability",
    "get_memory_info",
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

    Example:
        >>> import flambeau as fb
        >>> acc = fb.accelerator.current_accelerator()
        >>> acc is None or acc.index is None  # a device type, no index
        True
        >>> (acc is None) == (not fb.accelerator.is_available())
        True
    """
    name = _accelerator_type()
    return None if name is None else _C.device(name)


def is_available() -> bool:
    """True if an accelerator with at least one device is present.

    Example:
        >>> import flambeau as fb
        >>> device = fb.accelerator.current_accelerator() if fb.accelerator.is_available() else fb.device("cpu")
        >>> fb.ones(2, device=device).sum().item()
        2.0
    """
    return _accelerator_type() is not None


def device_count() -> int:
    """Number of accelerator devices (0 without an accelerator).

    Example:
        >>> import flambeau as fb
        >>> n = fb.accelerator.device_count()
        >>> (n > 0) == fb.accelerator.is_available()
        True
    """
    name = _accelerator_type()
    return 0 if name is None else _C._device_count(name)


def current_device_index() -> int:
    """Index of this thread's current accelerator device.

    Example:
        >>> import flambeau as fb
        >>> if fb.accelerator.is_available():
        ...     print(0 <= fb.accelerator.current_device_index() < fb.accelerator.device_count())
        ... else:
        ...     print(True)  # without an accelerator it raises FlambeauError
        True
    """
    return _module("current_device_index").current_device()


def set_device_index(device: Any, /) -> None:
    """Makes ``device`` (an index, string or device of the accelerator) current on this thread.

    Example:
        >>> import flambeau as fb
        >>> if fb.accelerator.is_available():
        ...     fb.accelerator.set_device_index(0)
        ...     print(fb.accelerator.current_device_index())
        ... else:
        ...     print(0)
        0
    """
    index = _index(device, "set_device_index", optional=False)
    _module("set_device_index").set_device(index)


@contextlib.contextmanager
def device_index(device: int | None, /) -> Iterator[None]:
    """Context manager: makes ``device`` current inside the block (None: no change).

    Example:
        >>> import flambeau as fb
        >>> with fb.accelerator.device_index(None):  # None: no change (works without an accelerator)
        ...     print("inside")
        inside
    """
    if device is None:
        yield
        return
    with _module("device_index").device(device):
        yield


def synchronize(device: Any = None, /) -> None:
    """Waits for all work on all streams of ``device`` (the current accelerator device if None).

    Example:
        >>> import flambeau as fb
        >>> if fb.accelerator.is_available():
        ...     x = fb.ones(1000, device=fb.accelerator.current_accelerator()) * 2
        ...     fb.accelerator.synchronize()  # the multiplication has finished
        >>> fb.accelerator.is_available() in (True, False)
        True
    """
    _module("synchronize").synchronize(_index(device, "synchronize", optional=True))


def current_stream(device: Any = None, /) -> Any:
    """The current stream of ``device`` (the current accelerator device if None).

    Example:
        >>> import flambeau as fb
        >>> stream = fb.accelerator.current_stream() if fb.accelerator.is_available() else None
        >>> stream is None or stream.device.type == fb.accelerator.current_accelerator().type
        True
    """
    return _module("current_stream").current_stream(_index(device, "current_stream", optional=True))


def set_stream(stream: Any) -> None:
    """Makes ``stream`` (an accelerator stream) current on its device.

    Example:
        >>> import flambeau as fb
        >>> if fb.accelerator.is_available():
        ...     fb.accelerator.set_stream(fb.accelerator.current_stream())  # keeps the current one
        >>> fb.accelerator.is_available() in (True, False)
        True
    """
    _module("set_stream").set_stream(stream)


def _memory_function(name: str) -> Any:
    def f(device: Any = None, /) -> Any:
        return getattr(_module(name), name)(_index(device, name, optional=True))

    f.__name__ = name
    default, check = {"memory_stats": ("{}", "isinstance(result, dict)")}.get(
        name, ("None", "result is None") if name.startswith("reset") else ("0", "isinstance(result, int)")
    )
    f.__doc__ = f"""The accelerator's ``{name}`` (as ``flambeau.cuda.{name}``) for ``device`` (current if None).

    Without an accelerator it raises ``FlambeauError``, so the example asks first.

    Example:
        >>> import flambeau as fb
        >>> result = fb.accelerator.{name}() if fb.accelerator.is_available() else {default}
        >>> {check}
        True
    """
    return f


memory_allocated = _memory_function("memory_allocated")
max_memory_allocated = _memory_function("max_memory_allocated")
memory_reserved = _memory_function("memory_reserved")
max_memory_reserved = _memory_function("max_memory_reserved")
memory_stats = _memory_function("memory_stats")
reset_peak_memory_stats = _memory_function("reset_peak_memory_stats")
reset_accumulated_memory_stats = _memory_function("reset_accumulated_memory_stats")


def current_device_idx() -> int:
    """Deprecated spelling of :func:`current_device_index` (a FutureWarning, as in PyTorch).

    Example:
        >>> import flambeau as fb
        >>> import warnings
        >>> with warnings.catch_warnings(record=True) as caught:
        ...     warnings.simplefilter("always")
        ...     try:
        ...         _ = fb.accelerator.current_device_idx()
        ...     except fb.FlambeauError:
        ...         pass  # no accelerator here
        >>> caught[0].category.__name__
        'FutureWarning'
    """
    warnings.warn("Use `current_device_index` instead.", FutureWarning, stacklevel=2)
    return current_device_index()


def set_device_idx(device: Any, /) -> None:
    """Deprecated spelling of :func:`set_device_index` (a FutureWarning, as in PyTorch).

    Example:
        >>> import flambeau as fb
        >>> import warnings
        >>> with warnings.catch_warnings(record=True) as caught:
        ...     warnings.simplefilter("always")
        ...     try:
        ...         fb.accelerator.set_device_idx(0)
        ...     except fb.FlambeauError:
        ...         pass  # no accelerator here
        >>> str(caught[0].message)
        'Use `set_device_index` instead.'
    """
    warnings.warn("Use `set_device_index` instead.", FutureWarning, stacklevel=2)
    set_device_index(device)


def empty_cache() -> None:
    """Releases the accelerator allocator's cached, unused memory.

    Example:
        >>> import flambeau as fb
        >>> if fb.accelerator.is_available():
        ...     fb.accelerator.empty_cache()
        >>> fb.accelerator.is_available() in (True, False)
        True
    """
    _module("empty_cache").empty_cache()


def empty_host_cache() -> None:
    """Releases the cached, unused pinned host memory (``Tensor.pin_memory()``) of the accelerator's host
    allocator.

    Example:
        >>> import flambeau as fb
        >>> if fb.accelerator.is_available():
        ...     fb.accelerator.empty_host_cache()
        >>> fb.accelerator.is_available() in (True, False)
        True
    """
    _module("empty_host_cache").empty_host_cache()


def get_memory_info(device_index: Any = None, /) -> tuple[int, int]:
    """``(free, total)``: the free and the total memory of an accelerator device in bytes (the current one
    if None). On the simulated device, whose memory is host pages, the total is its memory limit (the host's
    memory without one) and the free memory what of it no allocator of this process holds (capped by the
    host's free memory).

    Example:
        >>> import flambeau as fb
        >>> free, total = fb.accelerator.get_memory_info() if fb.accelerator.is_available() else (0, 0)
        >>> 0 <= free <= total
        True
    """
    module = _module("get_memory_info")
    return module.mem_get_info(_index(device_index, "get_memory_info", optional=True))


def get_device_capability(device: Any = None, /) -> dict[str, Any]:
    """What an accelerator device supports, as PyTorch's dict: ``supported_dtypes``, the dtypes a tensor can
    be made in and converted between on the device (every flambeau dtype: device copies and casts are
    device-generic).

    Example:
        >>> import flambeau as fb
        >>> if fb.accelerator.is_available():
        ...     caps = fb.accelerator.get_device_capability()
        ... else:
        ...     caps = {"supported_dtypes": {fb.float32}}
        >>> fb.float32 in caps["supported_dtypes"]
        True
    """
    import flambeau_core as fc

    _index(device, "get_device_capability", optional=True)  # the checks: an accelerator, its device type
    return {"supported_dtypes": {d for d in vars(fc).values() if isinstance(d, _C.dtype)}}
