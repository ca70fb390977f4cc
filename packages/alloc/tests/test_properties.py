"""Invariants under random allocation and free sequences (hypothesis)."""

import ctypes
import random

import flambeau_alloc
from conftest import MiB
from flambeau_alloc.testing import check_snapshot_invariants
from hypothesis import given, settings
from hypothesis import strategies as st

sizes = st.one_of(
    st.integers(0, 4096),  # small pool, many size classes
    st.integers(4096, MiB + 4096),  # around the small/large boundary
    st.integers(MiB, 12 * MiB),  # shared 20 MiB segments, and own segments from 10 MiB
    st.sampled_from([64 * MiB, 10 * MiB, 2 * MiB]),
)
ops = st.lists(
    st.one_of(
        st.tuples(st.just("alloc"), sizes),
        st.tuples(st.just("free"), st.integers(0, 1 << 30)),
        st.tuples(st.just("empty_cache"), st.just(0)),
    ),
    max_size=60,
)


@settings(max_examples=60, deadline=None)
@given(ops)
def test_random_sequences_keep_the_invariants(sequence):
    a = flambeau_alloc.CachingAllocator()
    live = {}  # address -> requested size
    for op, arg in sequence:
        if op == "alloc":
            p = a._allocate(arg)
            assert p % 64 == 0 and p not in live
            live[p] = arg
        elif op == "free" and live:
            p = sorted(live)[arg % len(live)]
            del live[p]
            a._free(p)
        elif op == "empty_cache":
            a.empty_cache()
        segments = check_snapshot_invariants(a)
        allocated = {b["address"]: b for s in segments for b in s["blocks"] if b["allocated"]}
        assert set(allocated) == set(live)
        assert all(allocated[p]["requested_size"] == n for p, n in live.items())
        stats = a.memory_stats()
        assert stats["requested_bytes.all.current"] == sum(live.values())
        assert stats["allocation.all.current"] == len(live)
        for key in ("allocated_bytes", "reserved_bytes", "segment", "allocation"):
            pools = stats[f"{key}.small_pool.current"] + stats[f"{key}.large_pool.current"]
            assert stats[f"{key}.all.current"] == pools
            assert stats[f"{key}.all.current"] <= stats[f"{key}.all.peak"]
    for p in list(live):
        a._free(p)
    assert a.memory_allocated() == 0
    assert a.memory_stats()["inactive_split.all.current"] == 0, "all free: every segment is one block again"
    a.empty_cache()
    assert a.memory_reserved() == 0 and a.memory_snapshot() == []
    s = a.memory_stats()
    assert s["num_device_alloc"] == s["num_device_free"]


def test_stress_many_sizes_with_data_integrity():
    """Thousands of allocations of mixed sizes; each block's bytes survive its neighbours' traffic."""
    rng = random.Random(1234)
    a = flambeau_alloc.CachingAllocator()
    live = {}  # address -> (size, fill byte)
    for step in range(2000):
        if live and rng.random() < 0.45:
            p = rng.choice(list(live))
            n, fill = live.pop(p)
            # The first and last byte still hold what was written at allocation.
            assert ctypes.string_at(p, 1)[0] == fill and ctypes.string_at(p + n - 1, 1)[0] == fill
            a._free(p)
        else:
            n = rng.choice([rng.randint(1, 2048), rng.randint(2048, 1 << 20), rng.randint(1 << 20, 16 << 20)])
            p = a._allocate(n)
            fill = step % 251
            ctypes.memset(p, fill, 1)
            ctypes.memset(p + n - 1, fill, 1)
            live[p] = (n, fill)
        if step % 500 == 0:
            check_snapshot_invariants(a)
            a.empty_cache() if step % 1000 == 0 else None
    check_snapshot_invariants(a)
    s = a.memory_stats()
    assert s["num_device_alloc"] < 200, "segments are reused, not allocated per request"
    for p in list(live):
        a._free(p)
    a.empty_cache()
    assert a.memory_reserved() == 0 and a.memory_allocated() == 0
