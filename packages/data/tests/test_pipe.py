"""The loader's pipe messages (Note [Pipe messages]): the bytes of multiprocessing's Connection, read and
written with less per message, and the packed task and batch messages (Note [Packed messages]); the loader
that uses them still gives torch's batches."""

from __future__ import annotations

import multiprocessing as mp
import os
import pickle
import threading
import time
from multiprocessing.reduction import ForkingPickler

import flambeau_core as fc
import numpy as np
import pytest
import torch
from conftest import to_py
from flambeau_data import DataLoader, _pipe, _shm
from flambeau_data.sampler import yields_int_batches


class _Registered:
    """Pickled through a reducer registered with ForkingPickler (as the tensor reductions are)."""

    def __init__(self, v):
        self.v = v


def _rebuild(v):
    return ("rebuilt", v)


@pytest.mark.parametrize(
    "task",
    [
        (0, [3, 1, 2], 0, None),
        (7, list(range(5000)), 3, (True, False, True)),
        (1, None, 2, None),
        None,
        {"a": [1.5, "x"], "b": (1, 2)},
    ],
)
def test_pickler_gives_connection_sends_bytes(task):
    assert _pipe.Pickler().dumps(task) == bytes(ForkingPickler.dumps(task))


def test_pickler_is_reused_and_sees_reducers_registered_later():
    p = _pipe.Pickler()
    shared = [1, 2]
    # The memo is cleared between messages: each stands alone, as ForkingPickler.dumps' do.
    assert pickle.loads(p.dumps((shared, shared))) == ([1, 2], [1, 2])
    assert p.dumps((shared, shared)) == bytes(ForkingPickler.dumps((shared, shared)))
    ForkingPickler.register(_Registered, lambda obj: (_rebuild, (obj.v,)))
    try:
        assert pickle.loads(p.dumps([_Registered(5)])) == [("rebuilt", 5)]
        assert p.dumps([_Registered(5)]) == bytes(ForkingPickler.dumps([_Registered(5)]))
    finally:
        del ForkingPickler._extra_reducers[_Registered]


def test_pickler_raises_and_recovers():
    p = _pipe.Pickler()
    with pytest.raises((TypeError, pickle.PicklingError, AttributeError)):
        p.dumps((1, threading.Lock()))
    assert p.dumps((1, [2])) == bytes(ForkingPickler.dumps((1, [2])))


def _written(write, messages):
    """A thread writing ``messages`` (more than a pipe holds: the reader must drain it meanwhile)."""
    t = threading.Thread(target=lambda: [write(m) for m in messages])
    t.start()
    return t


def test_frames_cross_with_connection_both_ways():
    r, w = mp.Pipe(duplex=False)
    reader = _pipe.Reader(r)
    # Written by Connection, several small ones buffered at once: read by the Reader in order.
    small = [b"", b"a", b"x" * 1000, b"y" * 20_000]
    for m in small:
        w.send_bytes(m)
    assert not reader.pending()  # nothing read yet
    assert reader.recv_bytes() == small[0]
    assert reader.pending()  # the others came in the same read
    assert [reader.recv_bytes() for _ in small[1:]] == small[1:]
    assert not reader.pending()
    messages = [os.urandom(70_000), b"x" * 16_384, b"y" * 16_385, b"z", os.urandom(300_000)]
    t = _written(w.send_bytes, messages)
    assert [reader.recv_bytes() for _ in messages] == messages
    t.join()
    # Written here: read by Connection.
    t = _written(lambda m: _pipe.write(w, m), messages + small)
    assert [r.recv_bytes() for _ in messages + small] == messages + small
    t.join()
    # The writer's end closed with nothing left: EOFError, as Connection.
    w.close()
    with pytest.raises(EOFError):
        reader.recv_bytes()
    r.close()


def test_a_torn_message_is_an_oserror_and_a_closed_connection_raises():
    r, w = mp.Pipe(duplex=False)
    os.write(w.fileno(), (10).to_bytes(4, "big") + b"abc")  # 3 of 10 bytes, then the end
    w.close()
    with pytest.raises(OSError, match="end of file during message"):
        _pipe.Reader(r).recv_bytes()
    r.close()
    with pytest.raises(OSError):
        _pipe.write(w, b"x")  # closed: as Connection.send_bytes
    r2, w2 = mp.Pipe(duplex=False)
    r2.close()
    with pytest.raises(BrokenPipeError):
        _pipe.write(w2, b"x")
    w2.close()


class _Pairs:
    def __init__(self, x, y):
        self.x, self.y = x, y

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        return self.x[i], self.y[i]


class _Batches:
    """Batches of uneven sizes (tasks of a few bytes and of more than a pipe holds), the same for both."""

    def __iter__(self):
        order = np.random.default_rng(1).permutation(9000).tolist()
        sizes = [1, 3, 7000, 2, 500, 1488]
        start = 0
        for n in sizes:
            yield order[start : start + n]
            start += n

    def __len__(self):
        return 6


@pytest.mark.parametrize("persistent", [False, True])
def test_loader_tasks_of_every_size_match_torch(no_leaks, persistent):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((9000, 2, 3)).astype(np.float32)
    y = rng.integers(0, 10, size=9000)
    ours = DataLoader(
        _Pairs(fc.tensor(x), fc.tensor(y)), batch_sampler=_Batches(), num_workers=2, persistent_workers=persistent
    )
    theirs = torch.utils.data.DataLoader(
        _Pairs(torch.tensor(x), torch.tensor(y)), batch_sampler=_Batches(), num_workers=2, persistent_workers=persistent
    )
    for _ in range(2):
        got = [to_py(b) for b in ours]
        want = [to_py(b) for b in theirs]
        assert got == want
    del ours


class _DiesAt:
    """Rows ``[i]`` of a (40, 1) ``lib`` tensor; the worker process exits at index ``at``."""

    def __init__(self, at, lib):
        self.rows, self.at = lib.arange(40, dtype=lib.float32).reshape(40, 1), at

    def __len__(self):
        return len(self.rows)

    def __getitem__(self, i):
        if i == self.at:
            os._exit(3)
        return self.rows[i]


def _until_error(loader):
    got = []
    with pytest.raises(RuntimeError) as info:
        for i, b in enumerate(loader):
            if i == 0:
                time.sleep(0.3)  # the worker writes the rest meanwhile: read in together, then its death
            got.append(to_py(b))
    return got, str(info.value)


def test_results_read_in_together_come_before_the_workers_death(no_leaks):
    kw = dict(batch_size=2, num_workers=1, prefetch_factor=12)
    got, message = _until_error(DataLoader(_DiesAt(20, fc), **kw))
    # torch's loader raises RuntimeError too (when depends on its watchdog): its batches of the indices the
    # worker finished are the oracle.
    _, theirs = _until_error(torch.utils.data.DataLoader(_DiesAt(20, torch), **kw))
    want = [to_py(b) for b in torch.utils.data.DataLoader(_DiesAt(40, torch), batch_size=2)][:10]
    assert got == want
    assert "exit code 3" in message and "[20, 21]" in message, message
    assert "exited unexpectedly" in theirs


def test_results_read_in_together_are_yielded_while_the_worker_waits(no_leaks):
    # Every task of the epoch outstanding: the worker writes all results, then waits for a task that never
    # comes; the results read in with the second one are in no pipe that a poll would show.
    kw = dict(batch_size=2, num_workers=1, prefetch_factor=12, timeout=10)
    for persistent in (False, True):
        loader = DataLoader(_DiesAt(-1, fc), persistent_workers=persistent, **kw)
        got = []
        for i, b in enumerate(loader):
            if i == 0:
                time.sleep(0.3)
            got.append(to_py(b))
        want = [to_py(b) for b in torch.utils.data.DataLoader(_DiesAt(-1, torch), **kw)]
        assert got == want
        assert len(got) == 20
        del loader


def test_an_abandoned_epochs_results_read_in_with_the_resume_answer(no_leaks):
    # Persistent workers, an epoch dropped after its first batch while every other task is outstanding: the
    # next epoch's start reads the stale results and the worker's answer to the resume together, and must
    # not wait on a pipe for what is already read in.
    kw = dict(batch_size=2, num_workers=1, prefetch_factor=12, persistent_workers=True)
    loaders = {
        "ours": DataLoader(_DiesAt(-1, fc), **kw),
        "theirs": torch.utils.data.DataLoader(_DiesAt(-1, torch), **kw),
    }
    out = {}

    def run():
        for first in loaders.values():
            next(iter(first))
        time.sleep(0.3)  # the worker writes every stale result meanwhile
        out["got"] = [to_py(b) for b in loaders["ours"]]
        out["want"] = [to_py(b) for b in loaders["theirs"]]

    t = threading.Thread(target=run, daemon=True)
    t.start()
    t.join(60)
    assert not t.is_alive(), "the next epoch did not start"
    assert out["got"] == out["want"]
    assert len(out["got"]) == 20
    loaders.clear()


class _SlowFirst:
    """Rows of a (24, 1) ``lib`` tensor; the first batch's samples take a while, so later batches arrive first."""

    def __init__(self, lib):
        self.rows = lib.arange(24, dtype=lib.float32).reshape(24, 1)

    def __len__(self):
        return len(self.rows)

    def __getitem__(self, i):
        if i < 2:
            time.sleep(0.1)
        return self.rows[i]


@pytest.mark.parametrize("in_order", [True, False])
def test_batches_arriving_before_the_awaited_one_keep_torchs_order(no_leaks, in_order):
    kw = dict(batch_size=2, num_workers=2, in_order=in_order)
    got = [to_py(b) for b in DataLoader(_SlowFirst(fc), **kw)]
    want = [to_py(b) for b in torch.utils.data.DataLoader(_SlowFirst(torch), **kw)]
    if in_order:
        assert got == want
    else:  # as they come, in both: the slow first batch is not first, and every batch is there once
        assert got[0][3] != [[0.0], [1.0]] and want[0][3] != [[0.0], [1.0]]
        assert sorted(map(str, got)) == sorted(map(str, want))


@pytest.mark.parametrize(
    "indices",
    [[0], [5, 3, 59999], list(range(7000)), [2**31 - 1, -(2**31)], [2**31, 7, -1], [2**63 - 1, -(2**63)], []],
)
def test_packed_tasks_give_the_same_ints(indices):
    # Note [Packed messages]: int32 where every index fits, else int64; the worker gets a list of plain ints.
    data = _pipe.pack_task(12, indices, 3)
    assert data[0] == ord("T") and data[1] == (ord("i") if all(-(2**31) <= i < 2**31 for i in indices) else ord("q"))
    task_id, got, slot, profiling = _pipe.loads_task(data)
    assert (task_id, slot, profiling) == (12, 3, None)
    assert got == indices and type(got) is list and all(type(i) is int for i in got)
    assert _pipe.loads_task(ForkingPickler.dumps((1, [2], 0, None))) == (1, [2], 0, None)  # a pickle as before


def test_an_index_beyond_int64_is_pickled():
    assert _pipe.pack_task(0, [2**63], 0) is None


def test_packed_results_give_the_same_batch():
    batch = _shm.ShmBatch("fbdl_1_0_0_2", 450048, [(0, "float32", (128, 1, 28, 28)), (401408, "int64", (128,))], b"", 2)
    data = _shm.dumps_result(1, 17, batch)
    assert data[:1] == b"B"
    assert _shm.loads_result(data) == (1, 17, batch)
    # A field marshal does not take (a tuple subclass as a shape) goes through pickle, and comes back equal.
    odd = _shm.ShmBatch("n", 8, [(0, "int64", fc.zeros(1).shape)], b"x", 0)
    data = _shm.dumps_result(0, 1, odd)
    assert data[0] == 0x80 and _shm.loads_result(data) == (0, 1, odd)
    assert _shm.loads_result(pickle.dumps((0, None, "resumed"))) == (0, None, "resumed")


class _Shuffled(torch.utils.data.Sampler):
    def __init__(self, n):
        self.n = n

    def __iter__(self):
        return iter(np.random.default_rng(1).permutation(self.n).tolist())

    def __len__(self):
        return self.n


def test_only_the_built_in_samplers_batches_are_packed():
    ds = list(range(10))
    assert yields_int_batches(DataLoader(ds, batch_size=2, shuffle=True).batch_sampler)
    assert yields_int_batches(DataLoader(ds, batch_size=2).batch_sampler)
    assert not yields_int_batches(DataLoader(ds, batch_size=None).batch_sampler)
    assert not yields_int_batches(_Batches())
    assert not yields_int_batches(DataLoader(ds, batch_size=2, sampler=_Shuffled(10)).batch_sampler)


class _IndexTypes:
    """The type and value of each index it is given, as a string (the batch's collated strings say them)."""

    def __len__(self):
        return 12

    def __getitem__(self, i):
        return f"{type(i).__name__}:{int(i)}"


class _NumpyBatches:
    def __iter__(self):
        return iter([list(np.arange(k, k + 3)) for k in range(0, 12, 3)])

    def __len__(self):
        return 4


@pytest.mark.parametrize("shuffle", [False, True])
def test_the_indices_a_dataset_gets_are_torchs(no_leaks, shuffle):
    # Packed or pickled, a worker's dataset gets the indices torch's gets: plain ints from the built-in
    # samplers, NumPy ints from a batch sampler that yields them.
    for kwargs in ({"batch_size": 3, "shuffle": shuffle}, {"batch_sampler": _NumpyBatches()}):
        fc.manual_seed(3)
        got = list(DataLoader(_IndexTypes(), num_workers=2, **kwargs))
        want = list(torch.utils.data.DataLoader(_IndexTypes(), num_workers=2, **kwargs))
        assert {s.split(":")[0] for b in got for s in b} == {s.split(":")[0] for b in want for s in b}
        if not shuffle:
            assert got == want
        assert sorted(s for b in got for s in b) == sorted(s for b in want for s in b)
