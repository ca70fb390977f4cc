"""flambeau-sim: the simulated device ``"sim"`` (Note [Simulated device] in src/sim_device.cpp).

A device type that exists only in software, registered through core's public
plug-in API exactly as an out-of-tree backend is (docs/design/writing-a-backend.md):
device memory is host pages served by flambeau-alloc's stream-aware caching
allocator, one per device (poisoned with 0xFF bytes, NaN as floats, when a
block returns to the cache); each stream is a worker thread that runs its work
asynchronously and in order; events are markers in a stream; kernels are the
CPU ones, run on the current stream. Copies between devices and from/to pinned
memory with ``non_blocking=True``, and the ops whose result shapes are known
before they run (elementwise, reductions over dims, softmax, matrix products,
losses, fills, factories: Note [Asynchronous sim kernels]) return before they
are done; other ops wait for their kernel. It makes the device-generic
machinery testable on any machine, and it is the example to copy for a new
backend.

Example:
    >>> import flambeau_core as fc
    >>> import flambeau_sim
    >>> sim_mod = flambeau_sim.register(num_devices=2)
    >>> x = fc.ones(3, device="sim:1")
    >>> (x * 2).cpu().tolist(), sim_mod.device_count()
    ([2.0, 2.0, 2.0], 2)
"""

from __future__ import annotations

import os
from typing import Any

import flambeau_core  # loads libflambeau_core.so and registers core's types first
from flambeau_alloc import CachingAllocator, memory_viz  # noqa: I001  (alloc's allocator serves the sim's memory)
from flambeau_core import _device_modules

from flambeau_sim import _C

__all__ = [
    "allocator",
    "block_stream",
    "capped_allocator",
    "is_registered",
    "pinned_allocator",
    "register",
    "sleep",
]

try:
    from importlib.metadata import PackageNotFoundError, version

    __version__ = version("flambeau-sim")
except PackageNotFoundError:  # running from a source tree
    __version__ = "0+unknown"

# Made once by register(): device i's allocator at index i, and the pinned host one.
_device_allocators: list[CachingAllocator] = []
_pinned: list[CachingAllocator] = []
_memory_limit: list[int | None] = [None]  # register()'s, for mem_get_info's total


def register(num_devices: int = 2, memory_limit: int | None = None) -> Any:
    """Registers the ``"sim"`` device type (once per process) and returns its device module.

    Args:
        num_devices: number of simulated devices (1 to 16).
        memory_limit: bytes each device may reserve (None: no limit); beyond it
            an allocation fails with the allocator's out-of-memory error.

    Registering again with the same ``num_devices`` returns the same module.

    Example:
        >>> flambeau_sim.register(num_devices=2).device_count()
        2
    """
    if not isinstance(num_devices, int) or isinstance(num_devices, bool):
        raise TypeError(f"[sim.register] num_devices must be an int, got {type(num_devices).__name__}")
    _C._register_backend(num_devices, memory_limit)
    if not _C._is_registered():
        devices = [
            CachingAllocator._from_raw_backend(_C._device_memory(i), "sim", flambeau_core.device(f"sim:{i}"))
            for i in range(num_devices)
        ]
        pinned = CachingAllocator._from_raw_backend(_C._pinned_memory(), "sim pinned", flambeau_core.device("cpu"))
        _C._install(devices, pinned)
        _device_allocators[:] = devices
        _pinned[:] = [pinned]
        _memory_limit[:] = [memory_limit]
        for i, a in enumerate(devices):
            memory_viz.register_allocator(f"sim:{i}", a)
        memory_viz.register_allocator("sim pinned", pinned)
        _device_modules.register_memory_functions("sim", _memory_functions())
    return flambeau_core.device_module("sim")


def prepare_for_tests() -> str | None:
    """The ``flambeau.test_devices`` hook of flambeau_core.testing: registers two sim devices (once),
    so each ``on_devices`` test also runs on ``sim``. Returns None: the sim is always available."""
    if not is_registered():
        register(num_devices=2)
    return None


def is_registered() -> bool:
    """Whether :func:`register` was called in this process."""
    return _C._is_registered()


def _module() -> Any:
    if not is_registered():
        raise RuntimeError("[sim] the sim device is not registered: call flambeau_sim.register() first")
    return flambeau_core.device_module("sim")


def allocator(device: Any = None) -> CachingAllocator:
    """The caching allocator of a sim device (index, ``"sim:1"``, a device; None: the current one)."""
    return _device_allocators[_module()._index(device)]


def pinned_allocator() -> CachingAllocator:
    """The caching allocator of the sim device's pinned host memory (``Tensor.pin_memory()``)."""
    _module()
    return _pinned[0]


def capped_allocator(capacity: int, name: str = "capped") -> CachingAllocator:
    """A caching allocator of CPU tensors over the sim's host pages, whose raw backend hands out at
    most ``capacity`` bytes: it runs out of memory as a device does (tests of out-of-memory).

    Example:
        >>> a = flambeau_sim.capped_allocator(4 << 20)
        >>> a.backend
        'sim host pages'
    """
    if not isinstance(capacity, int) or isinstance(capacity, bool):
        raise TypeError(f"[sim.capped_allocator] capacity must be an int, got {type(capacity).__name__}")
    return CachingAllocator._from_raw_backend(
        _C._sim_memory("sim host pages", capacity), name, flambeau_core.device("cpu")
    )


def block_stream(stream: Any = None) -> Any:
    """Test support: enqueues on ``stream`` (the current one if None) work that waits for a latch.

    Returns the latch; work enqueued after it on that stream runs once
    ``latch.release()`` is called. Never call an op that waits for that stream
    (a synchronous op on it, ``synchronize``) before releasing: it would wait forever.
    """
    mod = _module()
    stream = mod.current_stream() if stream is None else stream
    return _C._block_stream(stream._s)


def sleep(seconds: float, stream: Any = None) -> None:
    """Test support: enqueues on ``stream`` (the current one if None) work that sleeps ``seconds``."""
    mod = _module()
    stream = mod.current_stream() if stream is None else stream
    _C._sleep(stream._s, float(seconds))


def _memory_functions() -> dict[str, Any]:
    def memory_snapshot() -> list[dict]:
        out = []
        for a in _device_allocators:
            out.extend(a.memory_snapshot())
        return out

    def empty_cache() -> None:
        for a in _device_allocators:
            a.empty_cache()
        _pinned[0].empty_cache()

    def mem_get_info(device: Any = None) -> tuple[int, int]:
        # A sim device's memory is host pages: its total is the memory limit (else the host's memory), its
        # free memory what of it this device's allocator does not hold, capped by the host's free memory.
        reserved = allocator(device).memory_reserved()
        page = os.sysconf("SC_PAGE_SIZE")
        host_total, host_free = page * os.sysconf("SC_PHYS_PAGES"), page * os.sysconf("SC_AVPHYS_PAGES")
        limit = _memory_limit[0]
        total = host_total if limit is None else limit
        return max(0, min(total - reserved, host_free)), total

    def empty_host_cache() -> None:
        _pinned[0].empty_cache()

    funcs = _device_modules.per_device_memory_functions(allocator)
    funcs["memory_snapshot"] = memory_snapshot
    funcs["empty_cache"] = empty_cache
    funcs["mem_get_info"] = mem_get_info
    funcs["empty_host_cache"] = empty_host_cache
    return funcs
