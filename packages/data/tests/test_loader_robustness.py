"""The batch ring, batched fetch, and what PyTorch users fight with (deaths, timeouts,
a full /dev/shm, bad input), each leaving no process and no shared-memory segment behind."""

from __future__ import annotations

import ctypes
import errno
import os
import threading
import time
import warnings

import flambeau_core as fc
import flambeau_data as data
import pytest
from conftest import make_xy
from flambeau_core.testing import asan_exit_code, running_under_asan
from flambeau_data import DataLoader, TensorDataset, _shm
from flambeau_data.dataset import GatheredBatch

# ---- batched fetch (Note [Batched fetch]) ----


def test_tensordataset_getitems_gathers_like_stacking(no_leaks):
    xs, ys, x, y = make_xy(9)
    ds = TensorDataset(x, y)
    got = ds.__getitems__([4, 0, 8, -1])
    assert isinstance(got, GatheredBatch) and len(got) == 4
    assert got[2][0].tolist() == xs[8] and got[3][1].item() == 8
    xb, yb = data.default_collate(got)
    assert xb.tolist() == [xs[i] for i in (4, 0, 8, 8)] and yb.tolist() == [4, 0, 8, 8]
    # A custom collate_fn sees the samples as a sequence of tuples.
    loader = DataLoader(ds, batch_size=4, collate_fn=lambda b: [int(s[1].item()) for s in b])
    assert list(loader) == [[0, 1, 2, 3], [4, 5, 6, 7], [8]]


@pytest.mark.parametrize("num_workers", [0, 2])
def test_tensor_and_numpy_arrays_as_datasets(no_leaks, num_workers):
    np = pytest.importorskip("numpy")
    arr = np.arange(40, dtype=np.float32).reshape(10, 4)
    for ds in (arr, fc.tensor(arr.tolist())):
        batches = list(DataLoader(ds, batch_size=4, num_workers=num_workers))
        assert [b.tolist() for b in batches] == [arr[i : i + 4].tolist() for i in (0, 4, 8)]


@pytest.mark.parametrize("numpy_loaded", [True, False])
def test_rows_gathered_straight_into_shared_memory(no_leaks, monkeypatch, numpy_loaded):
    # Workers gather a TensorDataset's rows into the ring slot: with numpy.take(out=) when NumPy is
    # loaded, else core's gather and a copy. Odd dtypes, a non-contiguous tensor, negative indices.
    import sys

    if numpy_loaded:
        pytest.importorskip("numpy")
    else:
        monkeypatch.delitem(sys.modules, "numpy", raising=False)  # the forked workers inherit the missing module
    base = fc.arange(60, dtype=fc.float64).view(6, 10)
    tensors = (
        base,
        base.t().contiguous().t(),  # non-contiguous
        fc.arange(6, dtype=fc.int16),
        fc.arange(6, dtype=fc.uint8),
        fc.tensor([True, False, True, True, False, False]),
    )
    order = [5, -1, 0, 3, -6, 2]
    loader = DataLoader(TensorDataset(*tensors), batch_size=3, sampler=order, num_workers=2)
    got = [[t.tolist() for t in b] for b in loader]
    want = [[t[fc.tensor(order[i : i + 3])].tolist() for t in tensors] for i in (0, 3)]
    assert got == want


# ---- the ring (Note [Batch ring]) ----


def test_ring_slots_are_reused_when_batches_are_dropped(no_leaks):
    _, _, x, y = make_xy(400)
    loader = DataLoader(TensorDataset(x, y), batch_size=4, num_workers=2, persistent_workers=True)
    for _ in range(2):
        for xb, yb in loader:
            assert xb.shape == (4, 3)
            del xb, yb
    ring = loader._iterator._pool.ring
    # 100 batches per epoch, 2 epochs: only the initial slots (prefetch_factor + 2 per worker) were used.
    assert ring._next == [4, 4]


def test_batches_without_tensors_and_abandoned_epochs_keep_the_ring_small(no_leaks):
    class Words(data.Dataset):
        def __len__(self):
            return 200

        def __getitem__(self, i):
            if i == 150:
                raise KeyError(i)
            return f"w{i}"

    loader = DataLoader(Words(), batch_size=2, num_workers=2, persistent_workers=True)
    for _ in range(2):
        assert [b for b, _ in zip(loader, range(60), strict=False)][-1] == ["w118", "w119"]  # abandoned mid-epoch
    with pytest.raises(KeyError):
        list(loader)
    loader = DataLoader(Words(), batch_size=2, num_workers=2, persistent_workers=True)
    for _ in range(3):
        it = iter(loader)
        for _ in range(70):
            next(it)
    assert loader._iterator._pool.ring._next == [4, 4]  # never more than the initial slots per worker


def test_kept_batches_are_not_overwritten_and_the_ring_grows(no_leaks):
    xs, ys, x, y = make_xy(200)
    kept = list(DataLoader(TensorDataset(x, y), batch_size=4, num_workers=2))
    assert [v for _, yb in kept for v in yb.tolist()] == ys
    assert [row for xb, _ in kept for row in xb.tolist()] == xs


def test_growing_batches_get_larger_slots(no_leaks):
    # Batches of 1, 2, ... 12 rows: every slot must be replaced by a larger file along the way.
    xs, ys, x, y = make_xy(78, features=1000)  # 4 KB a row: each larger batch outgrows its slot
    sizes = list(range(1, 13))
    batches, start = [], 0
    for n in sizes:
        batches.append(list(range(start, start + n)))
        start += n
    loader = DataLoader(TensorDataset(x, y), batch_sampler=batches, num_workers=2, persistent_workers=True)
    for _ in range(2):
        got = [(xb.tolist(), yb.tolist()) for xb, yb in loader]
        assert got == [([xs[i] for i in b], b) for b in batches]
    generations = [int(name.rsplit("_", 1)[1]) for name, _ in loader._iterator._pool.ring._maps.values()]
    assert max(generations) > 4  # files were replaced by larger ones (a worker's first 4 slots are 1..4)


# ---- pin_memory ----


def test_pin_memory_warns_once_without_a_pinned_allocator(no_leaks, monkeypatch):
    from flambeau_data import dataloader

    monkeypatch.setattr(dataloader, "_pin_warned", False)
    _, _, x, y = make_xy(6)
    with pytest.warns(UserWarning, match="pin_memory=True has no effect: no pinned-memory allocator"):
        list(DataLoader(TensorDataset(x, y), batch_size=3, pin_memory=True))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        list(DataLoader(TensorDataset(x, y), batch_size=3, pin_memory=True))


class FakePinned:
    """Stands for a pinned-host allocator (none exists on a CPU-only machine): counts what it serves."""

    def __init__(self):
        self.live = {}

    def malloc(self, nbytes):
        buf = ctypes.create_string_buffer(nbytes + 64)
        addr = (ctypes.addressof(buf) + 63) // 64 * 64
        self.live[addr] = buf
        return addr

    def free(self, ptr, nbytes=None):
        self.live.pop(ptr, None)


@pytest.mark.parametrize("num_workers", [0, 2])
def test_pin_memory_copies_into_the_registered_allocator(no_leaks, num_workers):
    pinned = FakePinned()
    data.set_pin_memory_allocator(pinned)
    try:
        xs, ys, x, y = make_xy(6)
        batches = list(DataLoader(TensorDataset(x, y), batch_size=3, pin_memory=True, num_workers=num_workers))
    finally:
        data.set_pin_memory_allocator(None)
    assert [b[1].tolist() for b in batches] == [[0, 1, 2], [3, 4, 5]]
    assert [b[0].tolist() for b in batches] == [xs[:3], xs[3:]]
    assert all(t._allocator == "FakePinned" for b in batches for t in b)
    assert len(pinned.live) == 4
    assert fc.zeros(2)._allocator != "FakePinned"  # the default allocator is back
    del batches
    assert not pinned.live


def test_in_order_false_yields_every_batch(no_leaks):
    class Slow(data.Dataset):
        def __len__(self):
            return 12

        def __getitem__(self, i):
            time.sleep(0.05 if i < 2 else 0)
            return i

    got = [b.tolist() for b in DataLoader(Slow(), batch_size=2, num_workers=2, in_order=False)]
    assert sorted(got) == [[i, i + 1] for i in range(0, 12, 2)]


# ---- worker deaths ----


class Segfaults(data.Dataset):
    def __len__(self):
        return 12

    def __getitem__(self, i):
        if i == 7 and data.get_worker_info() is not None:
            ctypes.string_at(0)  # SIGSEGV in native code
        return i


def test_segfaulting_worker_is_named_with_signal_and_indices(no_leaks):
    with pytest.raises(RuntimeError) as info:
        list(DataLoader(Segfaults(), batch_size=3, num_workers=2))
    msg = str(info.value)
    if running_under_asan():
        # nox -s sanitize: ASan's SIGSEGV handler reports the crash and exits the worker with its exit code.
        assert "worker 0 (pid" in msg and f"exited unexpectedly with exit code {asan_exit_code()}" in msg
        assert "while loading batch 2 (sample indices [6, 7, 8])" in msg
        return
    assert "worker 0 (pid" in msg and "was killed by signal SIGSEGV" in msg
    assert "while loading batch 2 (sample indices [6, 7, 8])" in msg
    assert "faulthandler" in msg
    assert "Do not re-run it with num_workers=0" in msg  # never advice that would crash the main process


def test_python_exception_names_indices_and_suggests_num_workers_0(no_leaks):
    class Bad(data.Dataset):
        def __len__(self):
            return 8

        def __getitem__(self, i):
            if i == 5:
                raise ValueError("bad sample")
            return i

    with pytest.raises(ValueError) as info:
        list(DataLoader(Bad(), batch_size=2, num_workers=2))
    msg = str(info.value)
    assert "Caught ValueError in DataLoader worker process 0 while loading the batch of sample indices [4, 5]" in msg
    assert "run with num_workers=0 to debug it in the main process" in msg
    with pytest.raises(ValueError, match="bad sample") as info:
        list(DataLoader(Bad(), batch_size=2))
    assert "while loading the batch of sample indices [4, 5]" in "".join(getattr(info.value, "__notes__", [""]))


# ---- timeout: a deadline per batch ----


def test_timeout_fires_on_time_while_other_workers_deliver(no_leaks):
    class OneStuck(data.Dataset):
        def __len__(self):
            return 400

        def __getitem__(self, i):
            if i == 0:
                time.sleep(30)  # worker 0's first batch never comes in time
            else:
                time.sleep(0.01)  # worker 1 keeps delivering: that must not push the deadline back
            return i

    loader = DataLoader(OneStuck(), batch_size=1, num_workers=2, prefetch_factor=40, timeout=1.0)
    start = time.monotonic()
    with pytest.raises(RuntimeError) as info:
        next(iter(loader))
    elapsed = time.monotonic() - start
    assert "timed out after 1.0 seconds waiting for batch 0 from worker 0" in str(info.value)
    assert "sample indices [0]" in str(info.value)
    # Worker 1 delivers a batch every ~10 ms for 0.4 s: a deadline reset on each delivery would fire much later.
    assert 1.0 <= elapsed < 3.0, elapsed


# ---- a full /dev/shm ----


def test_full_dev_shm_is_reported_with_sizes(no_leaks, monkeypatch):
    def no_space(fd, offset, length):
        raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))

    monkeypatch.setattr(os, "posix_fallocate", no_space)  # inherited by the forked workers
    _, _, x, y = make_xy(8)
    with pytest.raises(RuntimeError) as info:
        list(DataLoader(TensorDataset(x, y), batch_size=4, num_workers=1, multiprocessing_context="fork"))
    msg = str(info.value)
    size, _ = _shm.shm_usage()
    assert "Caught SharedMemoryFullError in DataLoader worker process 0" in msg
    assert f"{_shm.SHM_DIR} is full: DataLoader worker 0 (a batch) needed" in msg
    assert f"({size} bytes)" in msg and "--shm-size" in msg


def test_too_large_request_is_refused_with_sizes(no_leaks):
    size, _ = _shm.shm_usage()
    if size == 0:
        pytest.skip("no size for the shared-memory file system")
    with pytest.raises(_shm.SharedMemoryFullError) as info:
        _shm.write_segment(f"fbtensor_{os.getpid()}_huge", [], [], size + (1 << 30))
    assert f"needed {size + (1 << 30)} bytes" in str(info.value) and f"({size} bytes)" in str(info.value)


# ---- bad input ----


@pytest.mark.parametrize("num_workers", [0, 2])
def test_inconsistent_shapes_name_worker_indices_and_shapes(no_leaks, num_workers):
    class Ragged(data.Dataset):
        def __len__(self):
            return 8

        def __getitem__(self, i):
            return fc.zeros(3 if i != 6 else 4)

    with pytest.raises(RuntimeError) as info:
        list(DataLoader(Ragged(), batch_size=4, num_workers=num_workers))
    msg = str(info.value) + "".join(getattr(info.value, "__notes__", []))
    assert "stack expects each tensor to be equal size, but got shapes [(3,), (3,), (4,), (3,)]" in msg
    assert "sample indices [4, 5, 6, 7]" in msg
    if num_workers:
        assert "in DataLoader worker process 1" in msg


class BadSampler(data.Sampler):
    def __iter__(self):
        return iter([0, 1, 2, 12, 3])

    def __len__(self):
        return 5


@pytest.mark.parametrize("num_workers", [0, 2])
@pytest.mark.parametrize("kind", ["tensor", "list", "subset"])
def test_out_of_range_sampler_index(no_leaks, num_workers, kind):
    _, _, x, y = make_xy(10)
    ds = {"tensor": TensorDataset(x, y), "list": list(range(10)), "subset": data.Subset(list(range(20)), range(10))}
    with pytest.raises(IndexError, match=r"index 12 is out of range for a dataset of length 10"):
        list(DataLoader(ds[kind], batch_size=2, sampler=BadSampler(), num_workers=num_workers))


class Unpicklable(data.Dataset):
    def __init__(self):
        self.lock = threading.Lock()
        self.x = fc.ones(4, 2)

    def __len__(self):
        return 4

    def __getitem__(self, i):
        return self.x[i]


def test_unpicklable_dataset_with_spawn(no_leaks):
    loader = DataLoader(Unpicklable(), batch_size=2, num_workers=2, multiprocessing_context="spawn")
    with pytest.raises(TypeError) as info:
        list(loader)
    msg = str(info.value)
    assert "multiprocessing_context='spawn'" in msg
    assert "the dataset (Unpicklable object" in msg and "cannot be pickled" in msg and "_thread.lock" in msg


def test_float16_batches_cross_the_ring_as_bytes(no_leaks):
    # Core cannot stack, copy_ or print float16 yet; a TensorDataset's rows still cross the ring
    # (gathered, then copied as raw bytes), compared here as bytes.
    import struct

    raw = bytearray(struct.pack("24e", *[i / 4 for i in range(24)]))
    x = fc.frombuffer(raw, dtype=fc.float16).view(6, 4)
    batches = list(DataLoader(TensorDataset(x), batch_size=3, num_workers=2))
    assert b"".join(bytes(memoryview(b[0]).cast("B")) for b in batches) == bytes(raw)
