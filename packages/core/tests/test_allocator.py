"""The allocator registry seen from Python: a Python allocator sees every
allocation, swapping back while tensors are alive frees each through the
allocator that made it, and bad allocators raise clear errors."""

import ctypes
import gc

import flambeau_core as fc
import pytest

libc = ctypes.CDLL(None)
libc.posix_memalign.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_size_t, ctypes.c_size_t]
libc.posix_memalign.restype = ctypes.c_int
libc.free.argtypes = [ctypes.c_void_p]


class CountingAllocator:
    """64-byte aligned memory from posix_memalign; records every call."""

    def __init__(self):
        self.live = {}
        self.mallocs = 0
        self.frees = 0

    def malloc(self, nbytes):
        p = ctypes.c_void_p()
        assert libc.posix_memalign(ctypes.byref(p), 64, nbytes) == 0
        self.live[p.value] = nbytes
        self.mallocs += 1
        return p.value

    def free(self, ptr, nbytes):
        assert self.live.pop(ptr) == nbytes
        self.frees += 1
        libc.free(ptr)


@pytest.fixture
def restore_allocator():
    yield
    fc.set_allocator(fc.system_allocator())


def test_python_allocator_sees_every_allocation(restore_allocator):
    alloc = CountingAllocator()
    a = fc.set_allocator(alloc)
    assert a.name == "CountingAllocator"
    assert fc.get_allocator().name == "CountingAllocator"
    x = fc.zeros(100)
    y = fc.randn(10, 10) @ fc.ones(10, 3)
    z = fc.arange(5)
    assert alloc.mallocs >= 4  # randn, ones, the product, zeros, arange
    assert x._allocator == "CountingAllocator" and y._allocator == "CountingAllocator"
    assert x.data_ptr() in alloc.live and x.data_ptr() % 64 == 0
    assert alloc.live[z.data_ptr()] == 5 * 8
    v = x[10:]
    del x
    gc.collect()
    assert v.data_ptr() - 40 in alloc.live  # the view keeps its storage alive
    before = alloc.frees
    del v, y, z
    gc.collect()
    assert alloc.frees >= before + 3
    assert not alloc.live


def test_switching_back_frees_through_the_maker(restore_allocator):
    alloc = CountingAllocator()
    fc.set_allocator(alloc)
    old = fc.full((1000,), 3.0)
    fc.set_allocator(fc.system_allocator())
    new = fc.zeros(1000)
    assert new._allocator != "CountingAllocator" and new.data_ptr() not in alloc.live
    assert old._allocator == "CountingAllocator"
    assert (old + new).tolist()[:2] == [3.0, 3.0] if hasattr(old, "__add__") else True
    frees = alloc.frees
    del old
    gc.collect()
    assert alloc.frees == frees + 1 and not alloc.live


def test_bad_allocators(restore_allocator):
    with pytest.raises(TypeError, match=r"\[set_allocator\].*malloc"):
        fc.set_allocator(object())

    class Raises:
        def malloc(self, n):
            raise MemoryError("nope")

        def free(self, p, n):
            pass

    fc.set_allocator(Raises())
    with pytest.raises(RuntimeError, match=r"\[allocate\] Python allocator Raises.malloc\(40\) raised"):
        fc.zeros(10)

    class Misaligned(CountingAllocator):
        def malloc(self, nbytes):
            return super().malloc(nbytes + 64) + 8

        def free(self, ptr, nbytes):
            pass

    fc.set_allocator(Misaligned())
    with pytest.raises(RuntimeError, match="not 64-byte aligned"):
        fc.zeros(10)

    class ReturnsStr(CountingAllocator):
        def malloc(self, nbytes):
            return "0x10"

    fc.set_allocator(ReturnsStr())
    with pytest.raises(RuntimeError, match="must return an int address"):
        fc.zeros(10)

    class ReturnsZero(CountingAllocator):
        def malloc(self, nbytes):
            return 0

    fc.set_allocator(ReturnsZero())
    with pytest.raises(RuntimeError, match="returned 0"):
        fc.zeros(10)
    # Not an address: a readable message, not pybind11's "Unable to cast Python instance".
    for bad in (-64, 2**64, 2**70, True):

        class ReturnsBad(CountingAllocator):
            def malloc(self, nbytes, bad=bad):
                return bad

        fc.set_allocator(ReturnsBad())
        word = "must return an int address" if bad is True else "which is not an address"
        with pytest.raises(RuntimeError, match=rf"\[allocate\] Python allocator ReturnsBad.malloc.*{word}"):
            fc.zeros(10)
    fc.set_allocator(fc.system_allocator())
    assert fc.zeros(3).tolist() == [0.0, 0.0, 0.0]


def test_allocator_from_c_abi_lives_in_memory():
    # It takes a raw, trusted address: kept out of the top-level namespace.
    assert not hasattr(fc, "allocator_from_c_abi")
    from flambeau_core import memory

    with pytest.raises(TypeError, match=r"\[allocator_from_c_abi\] table_address must be an int"):
        memory.allocator_from_c_abi("0x10")
    for bad in (-1, 2**64, 0):
        with pytest.raises(ValueError, match=r"\[allocator_from_c_abi\]"):
            memory.allocator_from_c_abi(bad)


def test_allocator_from_c_abi_wraps_a_ctypes_table(restore_allocator):
    from flambeau_core import memory

    libc = ctypes.CDLL(None)
    libc.aligned_alloc.restype = ctypes.c_void_p
    libc.aligned_alloc.argtypes = [ctypes.c_size_t, ctypes.c_size_t]
    libc.free.argtypes = [ctypes.c_void_p]
    allocate_t = ctypes.CFUNCTYPE(ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t)
    deallocate_t = ctypes.CFUNCTYPE(None, ctypes.c_void_p, ctypes.c_void_p, ctypes.c_size_t)

    class Table(ctypes.Structure):
        _fields_ = [
            ("abi_version", ctypes.c_uint32),
            ("ctx", ctypes.c_void_p),
            ("allocate", allocate_t),
            ("deallocate", deallocate_t),
            ("release", ctypes.c_void_p),
            ("name", ctypes.c_char_p),
        ]

    calls = []
    allocate = allocate_t(lambda ctx, n: calls.append(n) or libc.aligned_alloc(64, (n + 63) // 64 * 64))
    deallocate = deallocate_t(lambda ctx, p, n: libc.free(p))
    table = Table(1, None, allocate, deallocate, None, b"libc")
    alloc = memory.allocator_from_c_abi(ctypes.addressof(table))
    assert alloc.name == "libc"
    fc.set_allocator(alloc)
    t = fc.arange(10, dtype=fc.int64)
    assert t.tolist() == list(range(10)) and calls == [80]
    del t
    fc.set_allocator(fc.system_allocator())
    gc.collect()


def test_free_error_is_reported_not_raised(restore_allocator):
    class BadFree(CountingAllocator):
        def free(self, ptr, nbytes):
            super().free(ptr, nbytes)
            raise ValueError("free failed")

    seen = []
    import sys

    old_hook = sys.unraisablehook
    sys.unraisablehook = lambda u: seen.append(u)
    try:
        fc.set_allocator(BadFree())
        t = fc.zeros(4)
        del t
        gc.collect()
    finally:
        sys.unraisablehook = old_hook
    assert seen and "free failed" in str(seen[0].exc_value)


def test_empty_tensor_needs_no_allocation(restore_allocator):
    alloc = CountingAllocator()
    fc.set_allocator(alloc)
    t = fc.zeros(0, 5)
    assert t.numel() == 0 and alloc.mallocs == 0


def test_python_allocator_called_from_kernels_running_without_the_gil(restore_allocator):
    """Bindings run kernels with the GIL released (Note [The GIL around kernels]);
    a Python allocator called from them takes it back. Several threads run the
    hand-bound ops at once (factories, random fills, fill_, setitem, indexing,
    casts), each checked against PyTorch."""
    import threading

    import numpy as np
    import torch

    alloc = CountingAllocator()
    fc.set_allocator(alloc)
    errors = []
    barrier = threading.Barrier(4)

    def work(seed):
        try:
            barrier.wait()
            for step in range(25):
                results = []
                for m in (torch, fc):
                    t = m.full((4, 5), float(seed), dtype=m.float64)
                    t[1:3] = m.ones(2, 5, dtype=m.float64) * step
                    t[0, 1] = -1.0
                    t[m.tensor([3, 0])] = 7.0
                    picked = t[m.tensor([2, 3])]
                    z = m.zeros_like(t).fill_(2.0) + picked.sum()
                    results.append((t.tolist(), picked.int().tolist(), z.double().tolist()))
                assert results[0] == results[1], (seed, step)
                g = fc.Generator().manual_seed(seed)
                r = fc.rand(8, generator=g, dtype=fc.float64)
                again = fc.empty(8, dtype=fc.float64).uniform_(generator=fc.Generator().manual_seed(seed))
                assert r.tolist() == again.tolist()
                assert np.all((np.asarray(r.tolist()) >= 0) & (np.asarray(r.tolist()) < 1))
        except BaseException as e:  # reported by the main thread
            errors.append(e)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
    gc.collect()
    assert alloc.mallocs > 0
