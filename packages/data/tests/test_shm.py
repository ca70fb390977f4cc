"""The batch ring of _shm.py: a worker's slot written, the main process's batch read back, in one process."""

from __future__ import annotations

import os
import pickle

import flambeau_core as fc
import numpy as np
import pytest
from conftest import to_py
from flambeau_data import _shm


@pytest.fixture
def rings():
    prefix = f"fbdata_testshm_{os.getpid()}_"
    worker, main = _shm.WorkerRing(prefix, 0), _shm.MainRing(1, 2)
    yield worker, main
    worker.close()
    main.close()
    _shm.remove_segments(prefix)


def _batches():
    x = fc.tensor(np.arange(24, dtype=np.float32).reshape(4, 2, 3))
    y = fc.tensor(np.arange(4, dtype=np.int64))
    return [
        [x, y],  # default_collate of tuple samples: the structure's bytes are known, nothing to pickle
        [x, y, x],  # one tensor twice: two copies, as the general path
        [x, "tag", 3],  # not only tensors: the general path
        {"image": x, "label": [y, (y, 1.5)]},
        (x,),  # a tuple stays a tuple
    ]


@pytest.mark.parametrize("k", range(5))
def test_pack_then_receive_gives_the_batch_back(rings, k):
    worker, main = rings
    batch = _batches()[k]
    released = []
    sent = pickle.loads(pickle.dumps(worker.pack(batch, 0)))  # what crosses the pipe
    got = main.receive(0, sent, lambda w, s: released.append((w, s)))
    assert to_py(got) == to_py(batch)
    assert type(got) is type(batch)
    del got
    assert released == [(0, 0)]  # the slot is free once the batch's tensors are gone


def test_shm_batch_pickles_to_an_equal_batch():
    b = _shm.ShmBatch("name", 128, [(0, "float32", (2, 3)), (64, "int64", (2,))], b"payload", 5)
    assert pickle.loads(pickle.dumps(b, pickle.HIGHEST_PROTOCOL)) == b
    assert pickle.loads(pickle.dumps(_shm.ShmBatch("", 0, [], b""))) == _shm.ShmBatch("", 0, [], b"", -1)


def test_list_of_refs_is_what_the_general_path_pickles(rings):
    worker, _ = rings
    x = fc.zeros(2)
    fast = worker.pack([x, x + 1], 0).payload
    general = worker.pack([x, x + 1, "s"], 1).payload
    assert fast == _shm._list_of_refs(2) and general != fast
    tensors = []
    import io

    buf = io.BytesIO()
    _shm._RefPickler(buf, tensors).dump([x, x + 1])
    assert buf.getvalue() == fast and len(tensors) == 2


def _samples(n, size=6):
    x = fc.tensor(np.arange(n * size, dtype=np.float32).reshape(n, 1, size))
    y = fc.tensor(np.arange(n, dtype=np.int64))
    return [(x[i], y[i]) for i in range(n)]


def test_collate_into_a_mapped_slot_gives_default_collates_batch(rings, monkeypatch):
    from flambeau_data import default_collate

    # A worker runs one thread; this test process may hold threads other tests left behind.
    monkeypatch.setattr(_shm.threading, "active_count", lambda: 1)
    worker, main = rings
    before = fc.get_allocator().name
    assert worker.collate_into(0, default_collate, _samples(4)) is None  # slot 0 not mapped yet
    worker.pack(default_collate(_samples(4)), 0)  # maps it
    for n in (4, 3):  # the same size, then a smaller last batch
        samples = _samples(n)
        sent = worker.collate_into(0, default_collate, samples)
        assert sent is not None and fc.get_allocator().name == before
        got = main.receive(0, pickle.loads(pickle.dumps(sent)), lambda w, s: None)
        assert to_py(got) == to_py(default_collate(samples))
        assert [m[0] % 64 for m in sent.metas] == [0, 0]
        del got


@pytest.mark.parametrize("case", ["too large", "ragged", "numpy", "thread"])
def test_collate_into_declines_and_restores_the_allocator(rings, case):
    import threading

    from flambeau_data import default_collate

    worker, _ = rings
    before = fc.get_allocator().name
    worker.pack(default_collate(_samples(2)), 0)
    samples = {
        "too large": _samples(64, size=64),  # 16 KiB: more than the one page mapped
        "ragged": [(fc.zeros(2),), (fc.zeros(3),)],
        "numpy": [np.zeros(3, dtype=np.float32), np.ones(3, dtype=np.float32)],
        "thread": _samples(2),
    }[case]
    stop = threading.Event()
    other = threading.Thread(target=stop.wait) if case == "thread" else None
    if other is not None:
        other.start()
    try:
        assert worker.collate_into(0, default_collate, samples) is None
    finally:
        stop.set()
        if other is not None:
            other.join()
    assert fc.get_allocator().name == before
    if case != "ragged":  # the usual path still gives the batch
        assert to_py(worker.pack(default_collate(samples), 0).metas) is not None
