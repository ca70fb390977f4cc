"""The CPU pages behind the blocks: where a training step's speed could change from process to process.

A block's virtual offset within a 2 MiB page must not depend on the process
(segments start on a 2 MiB boundary, Note [Caching allocator pools]), segments
must ask for transparent huge pages (the CPU backend's madvise), and a loop
that makes the same tensors again must take no page from the system after its
first pass: neither a segment (mmap) nor a page fault.
"""

import ctypes
import resource
from pathlib import Path

from conftest import KiB, MiB

# The sizes of one step of a model: a 28 MiB activation (LSTM-LM logits), a weight, mid-size and small tensors.
STEP_SIZES = [28 * MiB, 10 * MiB + 4 * KiB, 3 * MiB, MiB, 200 * KiB, 40 * KiB, *([4 * KiB] * 8), 700]


def _mapping_flags(address: int) -> list[str]:
    """The VmFlags of the mapping of this process that holds ``address`` (/proc/self/smaps)."""
    inside = False
    for line in Path("/proc/self/smaps").read_text().splitlines():
        head = line.split()[0]
        if "-" in head and ":" not in head:
            lo, hi = (int(x, 16) for x in head.split("-"))
            inside = lo <= address < hi
        elif inside and head == "VmFlags:":
            return line.split()[1:]
    raise AssertionError(f"no mapping of this process holds {address:#x}")


def _faults() -> int:
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_minflt + r.ru_majflt


def _step(allocator) -> None:
    """Allocates every size, writes every byte (as a kernel writing its output would), frees in another order."""
    blocks = [(allocator._allocate(n), n) for n in STEP_SIZES]
    for p, n in blocks:
        ctypes.memset(p, 1, n)
    for p, _ in blocks[1::2] + blocks[::2]:
        allocator._free(p)


def test_segments_start_on_2mib_and_ask_for_huge_pages(allocator):
    blocks = [allocator._allocate(n) for n in STEP_SIZES]
    segments = allocator.memory_snapshot()
    assert {s["total_size"] for s in segments} == {2 * MiB, 12 * MiB, 20 * MiB, 28 * MiB}
    for s in segments:
        assert s["address"] % (2 * MiB) == 0, s
    for p in blocks:
        assert p % 512 == 0
    if Path("/sys/kernel/mm/transparent_hugepage/enabled").exists():  # a kernel without THP ignores the advice
        for s in segments:
            assert "hg" in _mapping_flags(s["address"]), s  # MADV_HUGEPAGE
    for p in blocks:
        allocator._free(p)


def test_block_offsets_repeat_in_a_fresh_allocator(allocator):
    import flambeau_alloc

    def offsets(a):
        blocks = [a._allocate(n) for n in STEP_SIZES]
        out = [p % (2 * MiB) for p in blocks]
        for p in blocks:
            a._free(p)
        return out

    other = flambeau_alloc.CachingAllocator()
    try:
        assert offsets(allocator) == offsets(other)
    finally:
        other.empty_cache()


def test_a_repeated_step_takes_no_pages_from_the_system(allocator):
    _step(allocator)  # the first pass maps the segments and faults their pages in
    stats = allocator.memory_stats()
    faults = _faults()
    for _ in range(10):
        _step(allocator)
    after = allocator.memory_stats()
    assert after["num_device_alloc"] == stats["num_device_alloc"]
    assert after["num_device_free"] == stats["num_device_free"]
    # 10 passes over ~43 MiB: a segment given back and fetched again would fault at least once per
    # 2 MiB (hundreds in all), once per 4 KiB page without huge pages (over 100,000).
    assert _faults() - faults < 20
