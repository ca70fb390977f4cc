"""Test helpers for packages that use flambeau-alloc's CachingAllocator (alloc's own tests, device
packages' tests of their allocators)."""

from __future__ import annotations

from typing import Any

from flambeau_alloc import _C

__all__ = ["check_snapshot_invariants"]


def check_snapshot_invariants(a: Any) -> list[dict]:
    """Asserts that a CachingAllocator's snapshot is consistent, and returns its segments: blocks tile
    each segment exactly; segments never overlap; free neighbours are merged; sums match the stats.

    Example:
        >>> import flambeau_alloc
        >>> from flambeau_alloc.testing import check_snapshot_invariants
        >>> a = flambeau_alloc.CachingAllocator()
        >>> p = a._allocate(1000)
        >>> len(check_snapshot_invariants(a))
        1
        >>> a._free(p)
    """
    segments = a.memory_snapshot()
    stats = a.memory_stats()
    previous_end = 0
    allocated = reserved = 0
    for seg in segments:
        assert seg["address"] >= previous_end, "segments overlap"
        previous_end = seg["address"] + seg["total_size"]
        reserved += seg["total_size"]
        cursor = seg["address"]
        for b in seg["blocks"]:
            assert b["address"] == cursor, "blocks must tile the segment without gaps or overlap"
            assert b["size"] > 0 and b["size"] % _C.kMinBlockSize == 0
            assert b["address"] % 64 == 0
            cursor += b["size"]
            if b["allocated"]:
                allocated += b["size"]
                assert b["state"] == "active_allocated"
                assert b["requested_size"] <= b["size"]
            else:
                assert b["state"] == "inactive" and b["requested_size"] == 0
        assert cursor == previous_end
        # Coalescing: two free blocks are never neighbours.
        for left, right in zip(seg["blocks"], seg["blocks"][1:], strict=False):
            assert left["allocated"] or right["allocated"], "adjacent free blocks were not merged"
    assert stats["allocated_bytes.all.current"] == allocated
    assert stats["reserved_bytes.all.current"] == reserved
    assert stats["segment.all.current"] == len(segments)
    assert allocated <= reserved
    return segments
