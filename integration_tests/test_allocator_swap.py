"""Swapping the CPU allocator at run time (core's registry + flambeau-alloc + a Python allocator).

Note [Allocator registry] (core's allocator.h): each storage remembers the
allocator that made it, so the current one can be swapped with tensors alive;
each tensor is freed by the allocator that made it.
"""

from __future__ import annotations

import ctypes
import gc

import numpy as np
import pytest

_libc = ctypes.CDLL(None, use_errno=True)
_libc.posix_memalign.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_size_t, ctypes.c_size_t]
_libc.posix_memalign.restype = ctypes.c_int
_libc.free.argtypes = [ctypes.c_void_p]
_libc.free.restype = None


class CountingAllocator:
    """A Python allocator (malloc/free through ctypes, 64-byte aligned) that records every call."""

    def __init__(self) -> None:
        self.live: dict[int, int] = {}  # address -> nbytes
        self.mallocs: list[int] = []  # sizes asked for, in order
        self.frees: list[int] = []

    def malloc(self, nbytes: int) -> int:
        ptr = ctypes.c_void_p()
        rc = _libc.posix_memalign(ctypes.byref(ptr), 64, max(nbytes, 1))
        if rc != 0:
            raise MemoryError(f"posix_memalign({nbytes}) failed with {rc}")
        self.live[ptr.value] = nbytes
        self.mallocs.append(nbytes)
        return ptr.value

    def free(self, ptr: int, nbytes: int) -> None:
        assert self.live.pop(ptr) == nbytes, "freed with a size other than the one allocated"
        self.frees.append(nbytes)
        _libc.free(ptr)

    def owns(self, tensor) -> bool:
        """True if the tensor's data lies inside a block this allocator handed out."""
        p = tensor.data_ptr()
        return any(base <= p < base + max(n, 1) for base, n in self.live.items())


def test_python_allocator_sees_every_allocation(fb):
    counting = CountingAllocator()
    fb.memory.set_allocator(counting)
    assert fb.memory.get_allocator("cpu").name == "CountingAllocator"

    x = fb.zeros(100)  # 400 bytes
    assert counting.mallocs == [400]
    assert counting.owns(x)

    y = fb.ones(10, 20, dtype=fb.float64)  # 1,600 bytes
    z = x + 1.0  # a kernel's output
    w = fb.from_numpy(np.arange(6, dtype=np.float32)) * 2  # interop input, core output
    # Outputs, plus the 0-d tensors that wrap the Python scalars 1.0 and 2
    # (temporaries, freed at once): every allocation goes through `counting`.
    outputs = counting.mallocs[1:]
    assert [n for n in outputs if n > 8] == [1600, 400, 24], outputs
    assert len(outputs) <= 5
    assert all(counting.owns(t) for t in (x, y, z, w))
    assert z.tolist() == (x + 1.0).tolist()
    assert w.tolist() == [0.0, 2.0, 4.0, 6.0, 8.0, 10.0]
    assert len(counting.live) == 4  # temporaries were freed again

    del x, y, z, w
    gc.collect()
    assert counting.live == {}
    assert sorted(counting.frees) == sorted(counting.mallocs)


def test_views_share_memory_and_allocate_nothing(fb):
    counting = CountingAllocator()
    fb.memory.set_allocator(counting)
    x = fb.zeros(4, 6)
    n = len(counting.mallocs)
    views = [x.view(24), x.transpose(0, 1), x[1:3], x.unsqueeze(0), x.reshape(2, 12)]
    assert len(counting.mallocs) == n
    del x
    gc.collect()
    assert len(counting.live) == 1  # the views keep the storage alive
    del views
    gc.collect()
    assert counting.live == {}


def test_swap_back_with_live_tensors_frees_each_through_its_maker(fb):
    caching = fb.memory.get_allocator("cpu")
    counting = CountingAllocator()

    from_caching = fb.ones(1000)  # made by the default (caching) allocator
    allocated_before = fb.memory.memory_allocated()
    assert allocated_before >= 4000

    fb.memory.set_allocator(counting)
    from_counting = [fb.full((257,), 3.0), fb.zeros(3, 3)]
    assert len(counting.mallocs) == 2

    # Free a caching-made tensor while the counting allocator is current: the
    # caching allocator frees it, the counting one never hears of it.
    del from_caching
    gc.collect()
    assert fb.memory.memory_allocated() <= allocated_before - 4000
    assert counting.frees == []

    # Back to the caching allocator while counting-made tensors are alive.
    fb.memory.set_allocator(caching)
    after_swap = fb.zeros(10)
    assert len(counting.mallocs) == 2, "a tensor made after the swap must not come from the old allocator"
    assert not counting.owns(after_swap)
    assert from_counting[0].sum().item() == pytest.approx(3.0 * 257)

    del from_counting
    gc.collect()
    assert counting.live == {}
    assert sorted(counting.frees) == sorted(counting.mallocs) == [36, 1028]


def test_system_allocator_swap_with_live_tensors(fb):
    caching = fb.memory.get_allocator("cpu")
    keep = fb.ones(256, 256)  # caching allocator
    fb.memory.set_allocator(fb.memory.system_allocator())
    assert fb.memory.get_allocator("cpu").name == fb.memory.system_allocator().name
    allocated = fb.memory.memory_allocated()
    from_system = fb.ones(256, 256) * 2
    # The caching allocator's statistics do not move for the system allocator's blocks.
    assert fb.memory.memory_allocated() == allocated
    fb.memory.set_allocator(caching)
    total = (keep + from_system).sum().item()
    assert total == pytest.approx(3.0 * 256 * 256)
    del keep, from_system
    gc.collect()
    assert fb.memory.memory_allocated() < allocated


def test_caching_allocator_reuses_blocks(fb):
    fb.memory.empty_cache()
    raw_key = "num_device_alloc"  # segments taken from the system
    for _ in range(20):
        t = fb.ones(64, 1024)  # 256 KiB, freed at the end of each iteration
        del t
    raw_before = fb.memory.memory_stats()[raw_key]
    for _ in range(20):
        t = fb.ones(64, 1024)
        del t
    assert fb.memory.memory_stats()[raw_key] == raw_before, "a cached block of the same size must be reused"


def test_python_allocator_errors(fb):
    class Failing:
        def malloc(self, nbytes):
            raise MemoryError("out of test memory")

        def free(self, ptr, nbytes):  # pragma: no cover - never reached
            raise AssertionError

    class Misaligned(CountingAllocator):
        def malloc(self, nbytes):
            return super().malloc(nbytes + 64) + 8

    fb.memory.set_allocator(Failing())
    with pytest.raises(RuntimeError, match=r"Failing\.malloc.*out of test memory"):
        fb.zeros(10)

    fb.memory.set_allocator(Misaligned())
    with pytest.raises(RuntimeError, match="64-byte aligned"):
        fb.zeros(10)

    with pytest.raises(TypeError, match="malloc"):
        fb.memory.set_allocator(object())
