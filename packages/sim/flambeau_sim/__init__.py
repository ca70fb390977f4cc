"""flambeau_alloc.sim: the simulated device ``"sim"`` (Note [Simulated device] in src/sim_device.cpp).

A device type that exists only in software, registered through core's public
plug-in API exactly as an out-of-tree backend is (docs/design/devices.md):
device memory is host pages served by a stream-aware caching allocator per
device (poisoned with 0xFF bytes, NaN as floats, when a block returns to the
cache); each stream is a worker thread that runs its work asynchronously and
in order; events are markers in a stream; kernels are the CPU ones, run on
the current stream. Copies between devices and from/to pinned memory with
``non_blocking=True``, and the ops whose result shapes are known before they
run (elementwise, reductions over dims, softmax, matrix products, losses,
fills, factories: Note [Asynchronous sim kernels]) return before they are
done; other ops wait for their kernel. It makes the device-generic machinery
testable on any machine.

It lives in flambeau-alloc because its memory is this package's caching
allocator; nothing in it is private to core.

Example:
    >>> import flambeau_core as fc
    >>> from flambeau_alloc import sim
    >>> sim_mod = sim.register(num_devices=2)
    >>> x = fc.ones(3, device="sim:1")
    >>> (x * 2).cpu().tolist(), sim_mod.device_count()
    ([2.0, 2.0, 2.0], 2)
"""

from __future__ import annotations

from typing import Any

import flambeau_core
from flambeau_core import _device_modules

from flambeau_alloc import _C
from flambeau_alloc._C import CachingAllocator

__all__ = ["allocator", "block_stream", "is_registered", "pinned_allocator", "register", "sleep"]


def register(num_devices: int = 2, memory_limit: int | None = None) -> Any:
    """Registers the ``"sim"`` device type (once per process) and returns its device module.

    Args:
        num_devices: number of simulated devices (1 to 16).
        memory_limit: bytes each device may reserve (None: no limit); beyond it
            an allocation fails with the allocator's out-of-memory error.

    Registering again with the same ``num_devices`` returns the same module.
    """
    if not isinstance(num_devices, int) or isinstance(num_devices, bool):
        raise TypeError(f"[sim.register] num_devices must be an int, got {type(num_devices).__name__}")
    _C._sim_register(num_devices, memory_limit)
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
    return _C._sim_is_registered()


def _module() -> Any:
    if not is_registered():
        raise RuntimeError("[sim] the sim device is not registered: call flambeau_alloc.sim.register() first")
    return flambeau_core.device_module("sim")


def allocator(device: Any = None) -> CachingAllocator:
    """The caching allocator of a sim device (index, ``"sim:1"``, a device; None: the current one)."""
    return _C._sim_allocator(_module()._index(device))


def pinned_allocator() -> CachingAllocator:
    """The caching allocator of the sim device's pinned host memory (``Tensor.pin_memory()``)."""
    _module()
    return _C._sim_pinned_allocator()


def block_stream(stream: Any = None) -> Any:
    """Test support: enqueues on ``stream`` (the current one if None) work that waits for a latch.

    Returns the latch; work enqueued after it on that stream runs once
    ``latch.release()`` is called. Never call an op that waits for that stream
    (a synchronous op on it, ``synchronize``) before releasing: it would wait forever.
    """
    mod = _module()
    stream = mod.current_stream() if stream is None else stream
    return _C._sim_block_stream(stream._s)


def sleep(seconds: float, stream: Any = None) -> None:
    """Test support: enqueues on ``stream`` (the current one if None) work that sleeps ``seconds``."""
    mod = _module()
    stream = mod.current_stream() if stream is None else stream
    _C._sim_sleep(stream._s, float(seconds))


def _memory_functions() -> dict[str, Any]:
    def memory_snapshot() -> list[dict]:
        out = []
        for i in range(_C._sim_device_count()):
            out.extend(_C._sim_allocator(i).memory_snapshot())
        return out

    def empty_cache() -> None:
        for i in range(_C._sim_device_count()):
            _C._sim_allocator(i).empty_cache()
        _C._sim_pinned_allocator().empty_cache()

    funcs = _device_modules.per_device_memory_functions(allocator)
    funcs["memory_snapshot"] = memory_snapshot
    funcs["empty_cache"] = empty_cache
    return funcs
