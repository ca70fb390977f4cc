"""pin_memory copies into the pinned allocator without swapping the process-wide allocator."""

from __future__ import annotations

import ctypes
import threading

import flambeau_core as fc
import flambeau_data as data
import pytest
from flambeau_core._C import _clone_with_allocator
from flambeau_data import DataLoader, TensorDataset


class Pinned:
    """Stands for a pinned-host allocator; records the current allocator whenever it is asked for memory."""

    def __init__(self):
        self.live = {}
        self.current_seen = []

    def malloc(self, nbytes):
        self.current_seen.append(fc.get_allocator("cpu").name)
        buf = ctypes.create_string_buffer(nbytes + 64)
        addr = (ctypes.addressof(buf) + 63) // 64 * 64
        self.live[addr] = buf
        return addr

    def free(self, ptr, nbytes=None):
        self.live.pop(ptr, None)


def test_pinning_leaves_the_current_allocator_alone(no_leaks):
    pinned = Pinned()
    before = fc.get_allocator("cpu").name
    stop = threading.Event()
    others: list[str] = []

    def allocate_elsewhere():  # another thread allocating all along must never get pinned memory
        while not stop.is_set():
            others.append(fc.empty(16)._allocator)

    t = threading.Thread(target=allocate_elsewhere)
    t.start()
    data.set_pin_memory_allocator(pinned)
    try:
        x = fc.arange(40, dtype=fc.float32).view(20, 2)
        batches = list(DataLoader(TensorDataset(x, fc.arange(20)), batch_size=4, pin_memory=True))
    finally:
        data.set_pin_memory_allocator(None)
        stop.set()
        t.join()
    assert pinned.current_seen and set(pinned.current_seen) == {before}
    assert "Pinned" not in others
    assert all(v._allocator == "Pinned" for b in batches for v in b)
    assert [b[1].tolist() for b in batches] == [list(range(i, i + 4)) for i in range(0, 20, 4)]


def test_clone_with_allocator():
    pinned = Pinned()
    src = fc.arange(12, dtype=fc.float64).view(3, 4).transpose(0, 1)  # non-contiguous
    c = _clone_with_allocator(src, pinned)
    assert c.tolist() == src.tolist() and c.is_contiguous() and c._allocator == "Pinned"
    assert _clone_with_allocator(fc.empty(0, 2), pinned).shape == (0, 2)
    with pytest.raises(TypeError, match=r"\[_clone_with_allocator\] expected a flambeau Allocator or an object"):
        _clone_with_allocator(src, object())
    del c
    assert not pinned.live
