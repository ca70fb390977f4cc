import flambeau_alloc
import flambeau_core
import pytest

KiB = 1 << 10
MiB = 1 << 20


@pytest.fixture
def allocator():
    """A fresh CachingAllocator, private to the test (the default instance is shared)."""
    a = flambeau_alloc.CachingAllocator()
    yield a
    a.empty_cache()


@pytest.fixture
def restore_current_allocator():
    """Puts core's current CPU allocator back after a test that swaps it."""
    before = flambeau_core.get_allocator("cpu")
    yield
    flambeau_core.set_allocator(before, "cpu")


def check_snapshot_invariants(a):
    """Blocks tile each segment exactly; segments never overlap; sums match the stats."""
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
            assert b["size"] > 0 and b["size"] % flambeau_alloc._C.kMinBlockSize == 0
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
