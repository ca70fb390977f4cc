"""memory_stats(), peaks, summary, snapshot and out-of-memory handling."""

import flambeau_alloc
import flambeau_core
import pytest
from conftest import KiB, MiB
from flambeau_alloc.testing import check_snapshot_invariants

STATS = [
    "active",
    "active_bytes",
    "allocated_bytes",
    "allocation",
    "inactive_split",
    "inactive_split_bytes",
    "requested_bytes",
    "reserved_bytes",
    "segment",
]


def test_memory_stats_keys_follow_pytorch(allocator):
    stats = allocator.memory_stats()
    expected = {
        f"{s}.{p}.{m}"
        for s in STATS
        for p in ("all", "small_pool", "large_pool")
        for m in ("current", "peak", "allocated", "freed")
    }
    expected |= {"num_alloc_retries", "num_ooms", "num_device_alloc", "num_device_free"}
    assert set(stats) == expected
    assert all(v == 0 for v in stats.values())


def test_current_peak_and_totals(allocator):
    a = allocator._allocate(3000)  # 3072 in the small pool
    b = allocator._allocate(40 * MiB)
    allocator._free(a)
    s = allocator.memory_stats()
    assert s["allocated_bytes.all.current"] == 40 * MiB
    assert s["allocated_bytes.all.peak"] == 40 * MiB + 3072
    assert s["allocated_bytes.small_pool.allocated"] == 3072 and s["allocated_bytes.small_pool.freed"] == 3072
    assert s["requested_bytes.all.peak"] == 40 * MiB + 3000
    assert s["reserved_bytes.all.current"] == 42 * MiB
    assert s["active_bytes.all.current"] == s["allocated_bytes.all.current"], "CPU: active == allocated"
    assert s["allocation.all.current"] == 1 and s["allocation.all.allocated"] == 2
    assert s["segment.small_pool.current"] == 1 and s["segment.large_pool.current"] == 1
    assert allocator.memory_allocated() == 40 * MiB
    assert allocator.max_memory_allocated() == 40 * MiB + 3072
    assert allocator.memory_reserved() == allocator.max_memory_reserved() == 42 * MiB

    allocator.reset_peak_memory_stats()
    assert allocator.max_memory_allocated() == 40 * MiB
    allocator._free(b)
    assert allocator.max_memory_allocated() == 40 * MiB and allocator.memory_allocated() == 0
    allocator.empty_cache()
    s = allocator.memory_stats()
    assert s["num_device_alloc"] == 2 and s["num_device_free"] == 2
    assert s["reserved_bytes.all.current"] == 0 and s["reserved_bytes.all.peak"] == 42 * MiB

    allocator.reset_accumulated_memory_stats()
    s = allocator.memory_stats()
    assert s["num_device_alloc"] == 0 and s["allocated_bytes.all.allocated"] == 0
    assert s["reserved_bytes.all.peak"] == 42 * MiB, "peaks survive reset_accumulated_memory_stats"


def test_snapshot_describes_segments_and_blocks(allocator):
    p = allocator._allocate(100)
    segs = check_snapshot_invariants(allocator)
    assert len(segs) == 1
    seg = segs[0]
    assert seg["segment_type"] == "small" and seg["address"] == p
    assert seg["allocated_size"] == 512 and seg["requested_size"] == 100
    first, rest = seg["blocks"]
    assert first == {
        "address": p,
        "size": 512,
        "requested_size": 100,
        "allocated": True,
        "state": "active_allocated",
        "frames": [],  # filled while memory history is recorded (test_sim_device.py)
    }
    assert seg["stream"] == 0 and seg["device"] == "cpu"
    assert rest["allocated"] is False and rest["size"] == 2 * MiB - 512
    allocator._free(p)


def test_summary_is_a_table_of_the_stats(allocator):
    p = allocator._allocate(5 * MiB)
    text = allocator.memory_summary()
    lines = text.splitlines()
    assert len({len(line) for line in lines}) == 1, "every row has the same width"
    assert "'caching' allocator on cpu pages" in text
    row = next(line for line in lines if line.startswith("| Allocated memory"))
    assert "5.00 MiB" in row
    row = next(line for line in lines if line.startswith("| Reserved memory"))
    assert "20.00 MiB" in row
    assert "Raw allocations / frees" in text and "1 / 0" in text
    assert "Memory limit" in text and "none" in text
    allocator._free(p)


def test_out_of_memory_releases_the_cache_and_retries():
    a = flambeau_alloc.CachingAllocator(memory_limit=24 * MiB)
    assert a.memory_limit == 24 * MiB
    cached = a._allocate(12 * MiB)
    a._free(cached)  # 12 MiB cached, free
    p = a._allocate(20 * MiB)  # 12 + 20 > 24: release the cache, retry, succeed
    s = a.memory_stats()
    assert s["num_alloc_retries"] == 1 and s["num_ooms"] == 0
    assert s["num_device_free"] == 1 and a.memory_reserved() == 20 * MiB
    with pytest.raises(RuntimeError, match=r"\[allocate\] out of memory: tried to allocate 8\.00 MiB") as info:
        a._allocate(8 * MiB)  # a 20 MiB segment: 40 > 24 even with an empty cache
    msg = str(info.value)
    assert type(info.value) is flambeau_core.OutOfMemoryError and isinstance(info.value, RuntimeError)
    assert "20.00 MiB allocated" in msg and "memory limit 24.00 MiB" in msg and "'caching'" not in msg
    assert "caching allocator on cpu pages" in msg
    s = a.memory_stats()
    assert s["num_ooms"] == 1 and s["num_alloc_retries"] == 2
    assert a.memory_allocated() == 20 * MiB, "a failed allocation leaves the stats unchanged"
    small = a._allocate(KiB)  # 20 + 2 <= 24: still fine
    a.memory_limit = None
    big = a._allocate(8 * MiB)
    for q in (p, small, big):
        a._free(q)
    a.empty_cache()
    assert a.memory_reserved() == 0


def test_out_of_memory_from_the_system():
    a = flambeau_alloc.CachingAllocator()
    with pytest.raises(flambeau_core.OutOfMemoryError, match="out of memory: tried to allocate"):
        a._allocate(1 << 62)  # no machine maps 4 EiB
    with pytest.raises(flambeau_core.OutOfMemoryError, match="more than any backend can provide"):
        a._allocate((1 << 63) - 1)
    assert a.memory_stats()["num_ooms"] == 2
    assert a.memory_reserved() == 0


def test_memory_limit_must_be_non_negative():
    with pytest.raises(ValueError, match=r"\[CachingAllocator\] memory_limit must be None or >= 0 bytes, got -5"):
        flambeau_alloc.CachingAllocator(memory_limit=-5)
    a = flambeau_alloc.CachingAllocator()
    with pytest.raises(ValueError, match=r"\[CachingAllocator.memory_limit\] memory_limit must be"):
        a.memory_limit = -1
    with pytest.raises(TypeError):
        flambeau_alloc.CachingAllocator(24)  # keyword-only
    assert a.backend == "cpu pages"


def test_backend_choice():
    assert flambeau_alloc.CachingAllocator(backend="cpu").backend == "cpu pages"
    with pytest.raises(NotImplementedError, match=r"\[CachingAllocator\] the 'cuda' backend is not implemented yet"):
        flambeau_alloc.CachingAllocator(backend="cuda")
    with pytest.raises(ValueError, match=r"unknown backend 'tpu'; expected 'cpu'"):
        flambeau_alloc.CachingAllocator(backend="tpu")
