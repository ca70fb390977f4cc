"""Rounding, pools, best fit, splitting and coalescing (Note [Caching allocator pools])."""

import flambeau_alloc
import pytest
from conftest import KiB, MiB
from flambeau_alloc import _C
from flambeau_alloc.testing import check_snapshot_invariants


@pytest.mark.parametrize(
    ("nbytes", "expected"),
    [
        (0, 512),
        (1, 512),
        (511, 512),
        (512, 512),
        (513, 1024),
        (1000, 1024),
        (MiB, MiB),
        (MiB + 1, MiB + 512),
        (64 * MiB, 64 * MiB),
    ],
)
def test_round_size(nbytes, expected):
    assert _C._round_size(nbytes) == expected


@pytest.mark.parametrize(
    ("block", "segment"),
    [
        (512, 2 * MiB),
        (MiB, 2 * MiB),
        (MiB + 512, 20 * MiB),
        (10 * MiB - 512, 20 * MiB),
        (10 * MiB, 10 * MiB),
        (10 * MiB + 512, 12 * MiB),
        (64 * MiB, 64 * MiB),
        (65 * MiB, 66 * MiB),
    ],
)
def test_segment_size(block, segment):
    assert _C._segment_size(block) == segment


def test_small_requests_share_a_2mib_segment(allocator):
    ptrs = [allocator._allocate(1000) for _ in range(10)]
    segs = check_snapshot_invariants(allocator)
    assert len(segs) == 1 and segs[0]["segment_type"] == "small" and segs[0]["total_size"] == 2 * MiB
    # Consecutive splits of one segment: each block follows the previous one.
    assert [p - ptrs[0] for p in ptrs] == [i * 1024 for i in range(10)]
    stats = allocator.memory_stats()
    assert stats["allocated_bytes.small_pool.current"] == 10 * 1024
    assert stats["requested_bytes.all.current"] == 10 * 1000
    assert stats["num_device_alloc"] == 1
    for p in ptrs:
        allocator._free(p)
    segs = check_snapshot_invariants(allocator)
    assert len(segs[0]["blocks"]) == 1, "freed neighbours must coalesce back into one block"


def test_large_requests_use_the_large_pool(allocator):
    mid = allocator._allocate(3 * MiB)  # < 10 MiB: a shared 20 MiB segment
    big = allocator._allocate(30 * MiB)  # >= 10 MiB: its own segment
    segs = {s["address"]: s for s in check_snapshot_invariants(allocator)}
    assert all(s["segment_type"] == "large" for s in segs.values())
    assert segs[mid]["total_size"] == 20 * MiB
    assert segs[big]["total_size"] == 30 * MiB and len(segs[big]["blocks"]) == 1
    second_mid = allocator._allocate(5 * MiB)
    assert second_mid == mid + 3 * MiB, "a second mid-size block is split from the same 20 MiB segment"
    assert allocator.memory_stats()["segment.large_pool.current"] == 2
    for p in (mid, big, second_mid):
        allocator._free(p)


def test_freed_block_is_reused_without_a_raw_allocation(allocator):
    p = allocator._allocate(64 * MiB)
    allocator._free(p)
    q = allocator._allocate(64 * MiB)
    assert q == p
    stats = allocator.memory_stats()
    assert stats["num_device_alloc"] == 1 and stats["num_device_free"] == 0
    allocator._free(q)


def test_best_fit_picks_the_smallest_block_that_fits(allocator):
    # Three free holes of 4, 1 and 2 KiB in one small segment, separated by live blocks.
    sizes = [4 * KiB, 512, KiB, 512, 2 * KiB, 512]
    ptrs = [allocator._allocate(s) for s in sizes]
    for i in (0, 2, 4):
        allocator._free(ptrs[i])
    assert allocator._allocate(1500) == ptrs[4], "2 KiB is the best fit for 1500 bytes"
    assert allocator._allocate(700) == ptrs[2], "1 KiB is the best fit for 700 bytes"
    check_snapshot_invariants(allocator)


def test_split_remainder_rules(allocator):
    # Large pool: a remainder of at most 1 MiB stays with the block (counted as allocated).
    p = allocator._allocate(12 * MiB)  # own 12 MiB segment
    allocator._free(p)
    q = allocator._allocate(11 * MiB + 512)  # fits, remainder 1 MiB - 512 B: not split
    assert q == p
    seg = check_snapshot_invariants(allocator)[0]
    assert len(seg["blocks"]) == 1 and seg["blocks"][0]["size"] == 12 * MiB
    assert seg["blocks"][0]["requested_size"] == 11 * MiB + 512
    allocator._free(q)
    r = allocator._allocate(10 * MiB)  # remainder 2 MiB > 1 MiB: split
    seg = check_snapshot_invariants(allocator)[0]
    assert [b["size"] for b in seg["blocks"]] == [10 * MiB, 2 * MiB]
    stats = allocator.memory_stats()
    assert stats["inactive_split.large_pool.current"] == 1
    assert stats["inactive_split_bytes.large_pool.current"] == 2 * MiB
    allocator._free(r)
    assert allocator.memory_stats()["inactive_split.all.current"] == 0


def test_coalescing_merges_both_neighbours(allocator):
    a, b, c = (allocator._allocate(KiB) for _ in range(3))
    allocator._free(a)
    allocator._free(c)
    blocks = check_snapshot_invariants(allocator)[0]["blocks"]
    assert [blk["allocated"] for blk in blocks] == [False, True, False]
    allocator._free(b)  # merges with the free block on each side
    blocks = check_snapshot_invariants(allocator)[0]["blocks"]
    assert len(blocks) == 1 and blocks[0]["size"] == 2 * MiB


@pytest.mark.parametrize("nbytes", [1, 63, 64, 100, 511, 512, 4097, MiB - 1, MiB + 3, 7 * MiB + 5, 13 * MiB + 1])
def test_every_pointer_is_64_byte_aligned(allocator, nbytes):
    ptrs = [allocator._allocate(nbytes) for _ in range(3)]
    assert all(p % 64 == 0 for p in ptrs)
    assert len(set(ptrs)) == 3
    for p in ptrs:
        allocator._free(p)


def test_memory_is_writable_over_the_requested_size(allocator):
    import ctypes

    for nbytes in (1, 700, MiB + 1, 12 * MiB):
        p = allocator._allocate(nbytes)
        ctypes.memset(p, 0xAB, nbytes)
        assert ctypes.string_at(p + nbytes - 1, 1) == b"\xab"
        allocator._free(p)


def test_empty_cache_returns_only_wholly_free_segments(allocator):
    keep = allocator._allocate(KiB)
    drop = allocator._allocate(12 * MiB)
    allocator._free(drop)
    assert allocator.memory_reserved() == 14 * MiB
    allocator.empty_cache()
    assert allocator.memory_reserved() == 2 * MiB, "the small segment holds a live block"
    assert allocator.memory_stats()["num_device_free"] == 1
    allocator._free(keep)
    allocator.empty_cache()
    assert allocator.memory_reserved() == 0
    assert allocator.memory_snapshot() == []


def test_zero_bytes_gives_a_distinct_minimum_block(allocator):
    p, q = allocator._allocate(0), allocator._allocate(0)
    assert p != q and p % 64 == 0
    assert allocator.memory_allocated() == 2 * 512
    allocator._free(p)
    allocator._free(q)


def test_free_of_a_foreign_or_double_freed_pointer_raises(allocator):
    p = allocator._allocate(KiB)
    with pytest.raises(ValueError, match=r"\[_free\] address .* is not a block allocated by the 'caching'"):
        allocator._free(p + 512)
    allocator._free(p)
    with pytest.raises(ValueError, match="not a block allocated"):
        allocator._free(p)
    assert allocator.memory_allocated() == 0


def test_negative_size_raises(allocator):
    with pytest.raises(ValueError, match=r"\[_allocate\] nbytes must be >= 0, got -1"):
        allocator._allocate(-1)


def test_instances_are_independent(allocator):
    other = flambeau_alloc.CachingAllocator(name="other")
    p = other._allocate(MiB)
    assert other.memory_allocated() == MiB and allocator.memory_allocated() == 0
    with pytest.raises(ValueError, match="'caching' caching allocator"):
        allocator._free(p)
    other._free(p)
    assert other.name == "other" and repr(other).startswith("<flambeau_alloc.CachingAllocator 'other' on cpu pages")


# ---- Note [Exact-size bins] ----


def test_a_freed_small_block_serves_the_next_request_of_its_size(allocator):
    p = allocator._allocate(700)
    keep = allocator._allocate(512)  # a live neighbour: p would otherwise merge on free
    allocator._free(p)
    assert allocator._allocate(1000) == p, "same rounded size (1 KiB): the freed block comes back"
    allocator._free(keep)
    check_snapshot_invariants(allocator)


def test_binned_blocks_are_free_in_every_statistic(allocator):
    ptrs = [allocator._allocate(s) for s in (KiB, 512, 2 * KiB, 512)]
    before = allocator.memory_stats()
    allocator._free(ptrs[0])
    allocator._free(ptrs[2])
    stats = allocator.memory_stats()
    assert stats["allocated_bytes.all.current"] == before["allocated_bytes.all.current"] - 3 * KiB
    assert stats["active.all.current"] == before["active.all.current"] - 2
    assert stats["requested_bytes.all.current"] == before["requested_bytes.all.current"] - 3 * KiB
    # Two holes between live blocks: two free blocks of a partly used segment, as the pool counts them.
    assert stats["inactive_split.small_pool.current"] == before["inactive_split.small_pool.current"] + 2
    seg = check_snapshot_invariants(allocator)[0]
    assert [b["allocated"] for b in seg["blocks"][:4]] == [False, True, False, True]


def test_a_binned_block_cannot_be_freed_twice(allocator):
    p = allocator._allocate(512)
    keep = allocator._allocate(512)
    allocator._free(p)
    with pytest.raises(ValueError, match=r"\[_free\] address .* is not a block allocated"):
        allocator._free(p)
    allocator._free(keep)


def test_freed_blocks_merge_for_a_larger_request(allocator):
    # Eight neighbouring 512 B blocks freed: binned unmerged, yet a 4 KiB request (no bin of that size) is
    # served from their merged space, the best fit, rather than from the rest of the segment.
    ptrs = [allocator._allocate(512) for _ in range(8)]
    keep = allocator._allocate(512)
    for p in ptrs:
        allocator._free(p)
    assert allocator._allocate(4 * KiB) == ptrs[0]
    allocator._free(keep)


def test_empty_cache_returns_segments_whose_blocks_are_binned(allocator):
    ptrs = [allocator._allocate(s) for s in (512, KiB, 512)]
    for p in ptrs:
        allocator._free(p)
    allocator.empty_cache()
    stats = allocator.memory_stats()
    assert stats["reserved_bytes.all.current"] == 0
    assert stats["segment.all.current"] == 0
    assert allocator.memory_snapshot() == []


def test_a_bin_holds_a_bounded_number_of_blocks(allocator):
    # More blocks of one size than a bin holds: the rest go to the pool and merge, nothing is lost.
    ptrs = [allocator._allocate(512) for _ in range(40)]
    for p in ptrs[::2]:
        allocator._free(p)
    for p in ptrs[1::2]:
        allocator._free(p)
    stats = allocator.memory_stats()
    assert stats["allocated_bytes.all.current"] == 0
    assert stats["inactive_split.all.current"] == 0, "every block merged back into one free segment"
    again = {allocator._allocate(512) for _ in range(40)}
    assert again == set(ptrs)
    for p in again:
        allocator._free(p)


def test_the_out_of_memory_retry_releases_a_segment_whose_block_is_binned():
    # A freed small block sits in its bin; a large request over the memory limit must still get the small
    # segment released by the retry (bins are flushed before free segments are released).
    a = flambeau_alloc.CachingAllocator(memory_limit=21 * MiB)
    a._free(a._allocate(512))
    p = a._allocate(2 * MiB)  # a 20 MiB large-pool segment: fits only once the 2 MiB small one is gone
    stats = a.memory_stats()
    assert stats["num_alloc_retries"] == 1
    assert stats["segment.small_pool.current"] == 0
    a._free(p)
    a.empty_cache()
