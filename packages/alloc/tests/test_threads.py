"""Thread safety: blocks are allocated and freed from many threads at once."""

import os
import queue
import random
import signal
import threading
import time

import flambeau_alloc
import pytest
from flambeau_alloc.testing import check_snapshot_invariants


def test_concurrent_alloc_and_free_on_one_allocator():
    a = flambeau_alloc.CachingAllocator()
    errors = []

    def worker(seed):
        rng = random.Random(seed)
        mine = []
        try:
            for _ in range(2000):
                if mine and rng.random() < 0.5:
                    a._free(mine.pop(rng.randrange(len(mine))))
                else:
                    mine.append(a._allocate(rng.choice([rng.randint(1, 4096), rng.randint(1 << 20, 12 << 20)])))
            for p in mine:
                a._free(p)
        except Exception as e:  # pragma: no cover - reported below
            errors.append(e)

    threads = [threading.Thread(target=worker, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert errors == []
    check_snapshot_invariants(a)
    s = a.memory_stats()
    assert s["allocated_bytes.all.current"] == 0 and s["allocation.all.allocated"] == s["allocation.all.freed"]
    a.empty_cache()
    assert a.memory_reserved() == 0


def test_blocks_freed_by_other_threads():
    """A producer allocates, consumers free (as data-loader threads drop tensors)."""
    a = flambeau_alloc.CachingAllocator()
    q = queue.Queue(maxsize=64)
    n_consumers, per_producer = 3, 3000

    def consume():
        while (p := q.get()) is not None:
            a._free(p)

    consumers = [threading.Thread(target=consume) for _ in range(n_consumers)]
    for t in consumers:
        t.start()
    rng = random.Random(0)
    for _ in range(per_producer):
        q.put(a._allocate(rng.choice([100, 5000, 300_000, 3 << 20])))
    for _ in consumers:
        q.put(None)
    for t in consumers:
        t.join()
    assert a.memory_allocated() == 0
    assert a.memory_stats()["allocation.all.freed"] == per_producer
    check_snapshot_invariants(a)


def wait_child(pid, timeout=20.0):
    """Exit code of a child; a deadlocked child is killed and reported instead of hanging the suite."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        done, status = os.waitpid(pid, os.WNOHANG)
        if done:
            return os.waitstatus_to_exitcode(status)
        time.sleep(0.005)
    os.kill(pid, signal.SIGKILL)
    os.waitpid(pid, 0)
    raise AssertionError("the forked child deadlocked in the allocator")


def test_fork_while_other_threads_allocate():
    """Note [Caching allocator and fork]: the child never inherits a locked allocator."""
    a = flambeau_alloc.CachingAllocator()
    stop = threading.Event()

    def churn():
        while not stop.is_set():
            a._free(a._allocate(4096))

    threads = [threading.Thread(target=churn) for _ in range(2)]
    for t in threads:
        t.start()
    try:
        for _ in range(20):
            pid = os.fork()
            if pid == 0:  # child: must be able to allocate at once
                code = 0
                try:
                    a._free(a._allocate(8192))
                    flambeau_alloc.caching_allocator()._free(flambeau_alloc.caching_allocator()._allocate(10))
                except BaseException:
                    code = 1
                os._exit(code)
            assert wait_child(pid) == 0
    finally:
        stop.set()
        for t in threads:
            t.join()


def test_cpp_stress_many_sizes_many_threads():
    """Random traffic over every pool from 4 C++ threads; no block is ever handed to two owners."""
    a = flambeau_alloc.CachingAllocator()
    assert flambeau_alloc._C._stress(a, iterations=2000, threads=4, seed=7) == 0
    check_snapshot_invariants(a)
    s = a.memory_stats()
    assert s["allocation.all.current"] == 0 and s["allocation.all.allocated"] > 4 * 500
    assert s["num_device_alloc"] < s["allocation.all.allocated"] / 20, "segments are reused"
    a.empty_cache()
    assert a.memory_reserved() == 0


def test_cpp_stress_rejects_bad_arguments():
    a = flambeau_alloc.CachingAllocator()
    with pytest.raises(ValueError, match=r"\[_stress\] need iterations >= 0 and 1 <= threads <= 64, got 10 and 0"):
        flambeau_alloc._C._stress(a, iterations=10, threads=0)
