"""flambeau-alloc: a caching CPU allocator for flambeau-core.

The design is PyTorch's CUDA caching allocator (rounding, a small and a large
pool, best fit with block splitting and coalescing, retry after releasing the
cache on out-of-memory), over a raw backend of CPU pages. Freed memory stays
cached, so a large temporary reuses mapped, already-faulted pages instead of
paying mmap + munmap + one page fault per 4 KiB on every op.

Importing this package does **not** change core's current allocator: call
:func:`enable` (the ``flambeau`` meta-package does so on import) or pass any
:class:`CachingAllocator` to ``flambeau_core.set_allocator``. Swapping back is
safe at any time: each tensor's memory is freed by the allocator that made it.

Module functions act on the process-wide instance, :func:`caching_allocator`;
a :class:`CachingAllocator` you construct has the same methods.

Example:
    >>> import flambeau_core, flambeau_alloc
    >>> flambeau_alloc.enable()
    >>> x = flambeau_core.empty(1 << 20)   # 4 MiB, served from a cached segment
    >>> x._allocator
    'caching'
    >>> flambeau_alloc.memory_allocated() >= 4 << 20
    True
    >>> flambeau_alloc.disable()           # x is still freed by the caching allocator
"""

from __future__ import annotations

import flambeau_core  # loads libflambeau_core.so and registers core's types first

from flambeau_alloc import memory_viz  # noqa: E402,F401,I001
from flambeau_alloc._C import CachingAllocator, caching_allocator
from flambeau_alloc.memory_viz import _record_memory_history, _snapshot, plot_timeline, timeline  # noqa: E402,F401

__all__ = [
    "CachingAllocator",
    "caching_allocator",
    "disable",
    "empty_cache",
    "enable",
    "get_include",
    "is_enabled",
    "max_memory_allocated",
    "max_memory_reserved",
    "memory_allocated",
    "memory_reserved",
    "memory_snapshot",
    "memory_stats",
    "memory_summary",
    "reset_accumulated_memory_stats",
    "reset_peak_memory_stats",
    "set_memory_limit",
    "memory_viz",
    "plot_timeline",
    "timeline",
]

try:
    from importlib.metadata import PackageNotFoundError, version

    __version__ = version("flambeau-alloc")
except PackageNotFoundError:  # running from a source tree
    __version__ = "0+unknown"


def get_include() -> str:
    """The folder of flambeau-alloc's C++ header ``flambeau_alloc/raw_backend.h``.

    A device package (flambeau-cuda) implements its raw backends against it and
    passes them to ``CachingAllocator._from_raw_backend``.
    """
    import os

    return os.path.join(os.path.dirname(os.path.abspath(__file__)), "include")


def enable() -> None:
    """Make the process-wide caching allocator core's current CPU allocator.

    Tensors created afterwards take their memory from it; tensors alive now
    keep the allocator that made them.

    Example:
        >>> flambeau_alloc.enable()
        >>> flambeau_core.empty(10)._allocator
        'caching'
    """
    flambeau_core.set_allocator(caching_allocator(), "cpu")


def disable() -> None:
    """Make core's system allocator current again (``flambeau_core.system_allocator()``).

    Tensors made by the caching allocator stay valid and return their blocks
    to it when they die; call :func:`empty_cache` afterwards to give the cached
    segments back to the system.

    Example:
        >>> flambeau_alloc.disable()
        >>> flambeau_core.empty(10)._allocator
        'system'
    """
    flambeau_core.set_allocator(flambeau_core.system_allocator(), "cpu")


def is_enabled() -> bool:
    """Whether the process-wide caching allocator is core's current CPU allocator."""
    return flambeau_core.get_allocator("cpu") is caching_allocator()


def memory_stats() -> dict[str, int]:
    """Statistics of the process-wide instance, with ``torch.cuda.memory_stats()`` keys.

    ``"<stat>.<pool>.<metric>"`` for stat in active, active_bytes, allocated_bytes,
    allocation, inactive_split, inactive_split_bytes, requested_bytes,
    reserved_bytes, segment; pool in all, small_pool, large_pool; metric in
    current, peak, allocated, freed. Plus ``num_device_alloc`` / ``num_device_free``
    (segments taken from / returned to the system), ``num_alloc_retries`` and
    ``num_ooms``. On CPU "active" equals "allocated" (no stream-ordered frees).

    Example:
        >>> flambeau_alloc.memory_stats()["allocated_bytes.all.current"] >= 0
        True
    """
    return caching_allocator().memory_stats()


def memory_allocated() -> int:
    """Bytes held by live blocks of the process-wide instance (sizes rounded up to 512).

    Example:
        >>> import flambeau as fb
        >>> previous = fb.memory.get_allocator()
        >>> _ = fb.memory.set_allocator(fb.memory.caching_allocator())
        >>> before = fb.memory.memory_allocated()
        >>> x = fb.empty(1024, 1024)  # 4 MiB from the caching allocator
        >>> fb.memory.memory_allocated() - before >= 4 * 1024 * 1024
        True
        >>> del x
        >>> fb.memory.memory_allocated() == before
        True
        >>> _ = fb.memory.set_allocator(previous)
    """
    return caching_allocator().memory_allocated()


def max_memory_allocated() -> int:
    """Peak of :func:`memory_allocated` since the last :func:`reset_peak_memory_stats`.

    Example:
        >>> import flambeau as fb
        >>> previous = fb.memory.get_allocator()
        >>> _ = fb.memory.set_allocator(fb.memory.caching_allocator())
        >>> fb.memory.reset_peak_memory_stats()
        >>> base = fb.memory.memory_allocated()
        >>> x = fb.empty(1024, 1024); del x
        >>> fb.memory.max_memory_allocated() - base >= 4 * 1024 * 1024  # the peak outlives the tensor
        True
        >>> _ = fb.memory.set_allocator(previous)
    """
    return caching_allocator().max_memory_allocated()


def memory_reserved() -> int:
    """Bytes of segments the process-wide instance holds from the system (allocated + cached).

    Example:
        >>> import flambeau as fb
        >>> previous = fb.memory.get_allocator()
        >>> _ = fb.memory.set_allocator(fb.memory.caching_allocator())
        >>> x = fb.empty(1024, 1024)
        >>> fb.memory.memory_reserved() >= fb.memory.memory_allocated()  # allocated + cached
        True
        >>> _ = fb.memory.set_allocator(previous)
    """
    return caching_allocator().memory_reserved()


def max_memory_reserved() -> int:
    """Peak of :func:`memory_reserved` since the last :func:`reset_peak_memory_stats`."""
    return caching_allocator().max_memory_reserved()


def empty_cache() -> None:
    """Return every wholly free cached segment of the process-wide instance to the system.

    Example:
        >>> flambeau_alloc.empty_cache()
    """
    caching_allocator().empty_cache()


def reset_peak_memory_stats() -> None:
    """Set every peak statistic of the process-wide instance to its current value.

    Example:
        >>> import flambeau as fb
        >>> previous = fb.memory.get_allocator()
        >>> _ = fb.memory.set_allocator(fb.memory.caching_allocator())
        >>> x = fb.empty(1024, 1024); del x
        >>> fb.memory.reset_peak_memory_stats()
        >>> fb.memory.max_memory_allocated() == fb.memory.memory_allocated()
        True
        >>> _ = fb.memory.set_allocator(previous)
    """
    caching_allocator().reset_peak_memory_stats()


def reset_accumulated_memory_stats() -> None:
    """Zero the running totals (allocated/freed, raw allocs/frees, retries, OOMs)."""
    caching_allocator().reset_accumulated_memory_stats()


def memory_snapshot() -> list[dict]:
    """Segments of the process-wide instance with their blocks.

    Each segment: ``address``, ``total_size``, ``allocated_size``,
    ``requested_size``, ``segment_type`` (``"small"``/``"large"``), ``blocks``;
    each block: ``address``, ``size``, ``requested_size``, ``allocated``, ``state``.

    Example:
        >>> import flambeau as fb
        >>> previous = fb.memory.get_allocator()
        >>> _ = fb.memory.set_allocator(fb.memory.caching_allocator())
        >>> x = fb.empty(1024, 1024)
        >>> segments = fb.memory.memory_snapshot()
        >>> sorted(segments[0])[:4], {"address", "size", "allocated"} <= set(segments[0]["blocks"][0])
        (['active_size', 'address', 'allocated_size', 'blocks'], True)
        >>> any(b["allocated"] and b["size"] >= 4 * 1024 * 1024 for s in segments for b in s["blocks"])
        True
        >>> _ = fb.memory.set_allocator(previous)
    """
    return caching_allocator().memory_snapshot()


def memory_summary() -> str:
    """A human-readable table of :func:`memory_stats` (like ``torch.cuda.memory_summary()``).

    Example:
        >>> print(flambeau_alloc.memory_summary())  # doctest: +SKIP
    """
    return caching_allocator().memory_summary()


def set_memory_limit(nbytes: int | None) -> None:
    """Cap the bytes the process-wide instance may reserve (``None``: no cap).

    Beyond the cap an allocation behaves as if the system were out of memory:
    the cache is released and the request retried once, then ``RuntimeError``.
    """
    caching_allocator().memory_limit = nbytes
