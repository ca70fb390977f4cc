"""Plugging into core: enable/disable, tensors freed by the allocator that made them."""

import gc
import subprocess
import sys
import threading

import flambeau_alloc
import flambeau_core
import pytest
from conftest import MiB
from flambeau_alloc.testing import check_snapshot_invariants

pytestmark = pytest.mark.usefixtures("restore_current_allocator")


def test_import_does_not_change_the_current_allocator():
    code = (
        "import flambeau_core, flambeau_alloc\n"
        "assert flambeau_core.get_allocator().name == 'system'\n"
        "assert not flambeau_alloc.is_enabled()\n"
        "assert flambeau_core.empty(10)._allocator == 'system'\n"
        "flambeau_alloc.enable()\n"
        "assert flambeau_alloc.is_enabled()\n"
        "assert flambeau_core.empty(10)._allocator == 'caching'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_caching_allocator_is_a_core_allocator():
    a = flambeau_alloc.caching_allocator()
    assert isinstance(a, flambeau_core.Allocator)
    assert a is flambeau_alloc.caching_allocator(), "one process-wide instance"
    assert a.name == "caching"
    assert flambeau_core.set_allocator(a) is a
    assert flambeau_core.get_allocator("cpu") is a


def test_enable_and_disable():
    flambeau_alloc.enable()
    assert flambeau_alloc.is_enabled()
    t = flambeau_core.empty(1000, dtype=flambeau_core.float32)
    assert t._allocator == "caching"
    assert t.data_ptr() % 64 == 0
    flambeau_alloc.disable()
    assert not flambeau_alloc.is_enabled()
    assert flambeau_core.get_allocator("cpu").name == "system"
    assert flambeau_core.empty(1000)._allocator == "system"
    assert t._allocator == "caching"


def test_tensors_made_before_a_swap_are_freed_by_their_allocator():
    flambeau_alloc.enable()
    before = flambeau_alloc.memory_allocated()
    kept = [flambeau_core.full((n,), 2.5, dtype=flambeau_core.float32) for n in (10, 1000, 300_000, 3 * MiB)]
    grown = flambeau_alloc.memory_allocated() - before
    assert grown >= 4 * (10 + 1000 + 300_000 + 3 * MiB)
    flambeau_alloc.disable()
    fresh = flambeau_core.zeros(3 * MiB)  # from the system allocator: no change here
    assert fresh._allocator == "system"
    assert flambeau_alloc.memory_allocated() - before == grown
    # The old tensors still work after the swap...
    assert kept[2].narrow(0, 299_997, 3).tolist() == [2.5, 2.5, 2.5]
    assert kept[3].narrow(0, 3 * MiB - 1, 1).tolist() == [2.5]
    del kept
    gc.collect()
    # ...and return their blocks to the caching allocator when they die.
    assert flambeau_alloc.memory_allocated() == before
    del fresh


def test_a_private_instance_through_core():
    a = flambeau_alloc.CachingAllocator(name="mine")
    flambeau_core.set_allocator(a)
    x = flambeau_core.zeros(2 * MiB, dtype=flambeau_core.float64)  # 16 MiB, its own segment
    y = flambeau_core.zeros(100, dtype=flambeau_core.int64)
    assert x._allocator == y._allocator == "mine"
    assert a.memory_allocated() == 16 * MiB + 1024
    assert a.memory_stats()["requested_bytes.all.current"] == 16 * MiB + 800
    flambeau_core.set_allocator(flambeau_core.system_allocator())
    del a  # the storages keep the allocator alive
    assert x.narrow(0, 2 * MiB - 4, 4).tolist() == [0.0] * 4 and y.tolist() == [0] * 100
    mine = flambeau_core.get_allocator()  # system now
    assert mine.name == "system"
    del x, y


def test_reuse_through_tensors_avoids_raw_allocations():
    a = flambeau_alloc.CachingAllocator()
    flambeau_core.set_allocator(a)
    for _ in range(50):
        t = flambeau_core.empty(16 * MiB // 4)
        del t
    s = a.memory_stats()
    assert s["num_device_alloc"] == 1 and s["allocation.all.allocated"] == 50
    assert a.memory_allocated() == 0 and a.memory_reserved() == 16 * MiB


def test_tensors_freed_from_other_threads():
    a = flambeau_alloc.CachingAllocator()
    flambeau_core.set_allocator(a)
    tensors = [flambeau_core.empty(n) for n in range(1, 4000, 7)] + [flambeau_core.empty(MiB) for _ in range(8)]
    assert a.memory_allocated() > 8 * 4 * MiB
    chunks = [tensors[i::4] for i in range(4)]
    del tensors

    def drop(chunk):
        chunk.clear()  # the last references die on this thread

    threads = [threading.Thread(target=drop, args=(c,)) for c in chunks]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert a.memory_allocated() == 0
    check_snapshot_invariants(a)


def test_module_functions_act_on_the_default_instance():
    flambeau_alloc.enable()
    default = flambeau_alloc.caching_allocator()
    x = flambeau_core.empty(12 * MiB // 4)
    assert flambeau_alloc.memory_allocated() == default.memory_allocated() >= 12 * MiB
    assert flambeau_alloc.max_memory_allocated() >= 12 * MiB
    assert flambeau_alloc.memory_reserved() >= 12 * MiB
    assert flambeau_alloc.max_memory_reserved() >= flambeau_alloc.memory_reserved()
    assert flambeau_alloc.memory_stats() == default.memory_stats()
    assert any(
        b["address"] == x.data_ptr() and b["allocated"] for s in flambeau_alloc.memory_snapshot() for b in s["blocks"]
    )
    assert "'caching' allocator on cpu pages" in flambeau_alloc.memory_summary()
    del x
    flambeau_alloc.reset_peak_memory_stats()
    assert flambeau_alloc.max_memory_allocated() == flambeau_alloc.memory_allocated()
    flambeau_alloc.disable()
    flambeau_alloc.empty_cache()
    flambeau_alloc.reset_accumulated_memory_stats()
    assert flambeau_alloc.memory_stats()["num_device_alloc"] == 0
    flambeau_alloc.set_memory_limit(1 << 40)
    assert default.memory_limit == 1 << 40
    flambeau_alloc.set_memory_limit(None)
    assert default.memory_limit is None


def test_out_of_memory_through_a_tensor_factory():
    a = flambeau_alloc.CachingAllocator(memory_limit=8 * MiB)
    flambeau_core.set_allocator(a)
    with pytest.raises(RuntimeError, match=r"\[allocate\] out of memory: tried to allocate 16\.00 MiB"):
        flambeau_core.empty(4 * MiB)
    assert flambeau_core.empty(MiB // 4)._allocator == "caching"
