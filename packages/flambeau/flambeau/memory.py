"""flambeau.memory: the CPU allocator in use and its statistics.

The meta-package makes flambeau-alloc's caching allocator the current CPU
allocator. ``set_allocator`` swaps it at any time; tensors alive at that moment
are still freed by the allocator that made them.

Example:
    >>> import flambeau as fb
    >>> x = fb.zeros(1024, 1024)
    >>> fb.memory.memory_allocated() >= 4 * 1024 * 1024
    True
"""

from __future__ import annotations

from flambeau_alloc import (  # noqa: F401
    CachingAllocator,
    caching_allocator,
    empty_cache,
    max_memory_allocated,
    memory_allocated,
    memory_reserved,
    memory_snapshot,
    memory_stats,
    memory_summary,
    reset_peak_memory_stats,
)
from flambeau_alloc.memory_viz import _record_memory_history, _snapshot, plot_timeline, timeline  # noqa: F401
from flambeau_core.memory import (  # noqa: F401
    allocator_from_c_abi,
    get_allocator,
    set_allocator,
    system_allocator,
)
