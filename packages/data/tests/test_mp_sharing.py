"""flambeau_data.multiprocessing as torch.multiprocessing: tensors shared in place, across processes.

Children that send tensors back wait for the parent's word before exiting: with
the file_descriptor strategy the sender must be alive when the receiver
unpickles (as in PyTorch).
"""

from __future__ import annotations

import gc
import os
import pickle

import flambeau_core as fc
import pytest
from flambeau_data import _mp_reductions as reductions
from flambeau_data import _shm
from flambeau_data import multiprocessing as fmp

METHODS = ["fork", "spawn"]


@pytest.fixture
def file_system():
    fmp.set_sharing_strategy("file_system")
    try:
        yield
    finally:
        fmp.set_sharing_strategy("file_descriptor")


def _memfds() -> int:
    n = 0
    for fd in os.listdir("/proc/self/fd"):
        try:
            if "flambeau_shared_tensor" in os.readlink(f"/proc/self/fd/{fd}"):
                n += 1
        except OSError:
            pass
    return n


def _mappings() -> int:
    with open("/proc/self/maps") as f:
        return sum("flambeau_shared_tensor" in line for line in f)


def _fs_names() -> set[str]:
    return {n for n in os.listdir(_shm.SHM_DIR) if n.startswith(f"fbtensor_{os.getpid()}_")}


# ---- share_memory_ in place ----


def test_share_memory_moves_the_storage_in_place():
    t = fc.arange(12, dtype=fc.float32).view(3, 4)
    v = t[1:, ::2]
    before_ptr, storage, version = t.data_ptr(), t._storage_id, t._version
    assert not t.is_shared() and not v.is_shared()
    assert t.share_memory_() is t
    assert t.is_shared() and v.is_shared()
    assert t.data_ptr() != before_ptr  # new memory ...
    assert t._storage_id == storage and v._storage_id == storage  # ... same Storage
    assert v.data_ptr() == t.data_ptr() + 4 * 4  # the view follows
    assert t._version == version  # the values did not change
    assert t.tolist() == [[float(4 * i + j) for j in range(4)] for i in range(3)]
    v.fill_(-1.0)
    assert t[1].tolist() == [-1.0, 5.0, -1.0, 7.0]
    ptr = t.data_ptr()
    t.share_memory_()  # already shared: a no-op
    assert t.data_ptr() == ptr and t._allocator is None


@pytest.mark.parametrize("dtype", [fc.float64, fc.int64, fc.bool, fc.uint8, fc.int32])
def test_share_memory_keeps_values_of_every_dtype(dtype):
    t = (fc.arange(7) % 3 == 0) if dtype == fc.bool else fc.arange(7).to(dtype)
    expected = t.tolist()
    assert t.share_memory_().tolist() == expected and t.dtype == dtype and t.is_shared()


def test_share_memory_of_an_empty_tensor_is_a_no_op():
    t = fc.empty(0, 3)
    assert t.share_memory_() is t and t.shape == (0, 3)


def test_share_memory_refuses_memory_flambeau_does_not_own():
    buf = bytearray(16)
    t = fc.frombuffer(buf, dtype=fc.float32)
    with pytest.raises(RuntimeError, match=r"\[share_memory_\] this tensor views memory that flambeau does not own"):
        t.share_memory_()
    assert not t.is_shared()
    c = t.clone().share_memory_()
    assert c.is_shared() and c.tolist() == [0.0] * 4


def test_memory_exported_before_the_move_stays_valid():
    np = pytest.importorskip("numpy")
    t = fc.arange(6, dtype=fc.float32)
    arr = np.asarray(t)  # points at the old memory
    mv = memoryview(t)
    t.share_memory_()
    t.add_(1.0)
    # The old memory is kept for them (not freed and reused): its values are the old ones.
    assert arr.tolist() == [0.0, 1.0, 2.0, 3.0, 4.0, 5.0] and mv.tolist() == arr.tolist()
    assert np.asarray(t).tolist() == [1.0, 2.0, 3.0, 4.0, 5.0, 6.0]


def test_fd_strategy_frees_the_segment_when_the_last_tensor_goes():
    gc.collect()
    fds, maps = _memfds(), _mappings()
    t = fc.ones(1000).share_memory_()
    view = t[10:20]
    del t
    gc.collect()
    assert _memfds() == fds + 1 and _mappings() == maps + 1  # the view keeps it
    assert view.is_shared() and view.tolist() == [1.0] * 10
    del view
    gc.collect()
    assert _memfds() == fds and _mappings() == maps


# ---- across processes ----


def _fill(t, value):
    t.fill_(value)


@pytest.mark.parametrize("method", METHODS)
def test_a_childs_writes_to_a_shared_tensor_are_seen_by_the_parent(no_leaks, method):
    ctx = fmp.get_context(method)
    t = fc.zeros(4, 5)
    view = t[1:3, 1::2]
    if method == "fork":
        t.share_memory_()  # a forked child gets a copy-on-write image of unshared memory (as in PyTorch)
    # else not shared yet: pickling the process arguments shares it
    p = ctx.Process(target=_fill, args=(view, 3.0))
    p.start()
    p.join(60)
    assert p.exitcode == 0
    assert t.is_shared()
    assert t.sum().item() == 3.0 * 2 * 2 and t[1].tolist() == [0.0, 3.0, 0.0, 3.0, 0.0]


def _echo(q_in, q_out, done):
    t, other = q_in.get()
    same_storage = t._storage_id == other._storage_id
    t.add_(1.0)
    mine = fc.full((3,), 9.0)
    q_out.put((t, mine, same_storage, t.is_shared(), tuple(t.stride()), t.storage_offset()))
    done.wait(60)
    # The parent wrote into `mine`: seen here.
    q_out.put(mine.tolist())
    done.clear()
    done.wait(60)


@pytest.mark.parametrize("method", METHODS)
def test_queue_round_trip_keeps_sharing_both_ways(no_leaks, method):
    ctx = fmp.get_context(method)
    q_in, q_out, done = ctx.Queue(), ctx.Queue(), ctx.Event()
    p = ctx.Process(target=_echo, args=(q_in, q_out, done))
    p.start()
    base = fc.arange(20, dtype=fc.float64).view(4, 5)
    view = base.transpose(0, 1)[1:4]  # non-contiguous, offset 5 elements... of the storage
    q_in.put((view, base))
    back, mine, same_storage, shared_there, strides, offset = q_out.get(timeout=60)
    assert same_storage and shared_there
    assert strides == tuple(view.stride()) and offset == view.storage_offset()
    # The child's add_ went to our memory; what came back is a view of our storage.
    assert base.tolist() == [[float(5 * i + j) + (1.0 if 1 <= j < 4 else 0.0) for j in range(5)] for i in range(4)]
    assert back._storage_id == base._storage_id and back.data_ptr() == view.data_ptr()
    assert mine.is_shared() and mine.tolist() == [9.0, 9.0, 9.0]
    mine.mul_(2.0)
    done.set()
    assert q_out.get(timeout=60) == [18.0, 18.0, 18.0]
    done.set()
    p.join(60)
    assert p.exitcode == 0


def _pipe_child(conn):
    t = conn.recv()
    t.neg_()
    conn.send("ok")
    conn.recv()


@pytest.mark.parametrize("method", METHODS)
def test_pipe_round_trip(no_leaks, method):
    ctx = fmp.get_context(method)
    a, b = ctx.Pipe()
    p = ctx.Process(target=_pipe_child, args=(b,))
    p.start()
    t = fc.arange(5, dtype=fc.int64)
    a.send(t)
    assert a.recv() == "ok"
    assert t.tolist() == [0, -1, -2, -3, -4]
    a.send("bye")
    p.join(60)
    assert p.exitcode == 0


def _count_memfds(q_in, q_out):
    t = q_in.get()
    q_out.put((_memfds(), t.sum().item()))
    del t
    gc.collect()
    q_out.put(_memfds())


def test_fd_strategy_segment_is_freed_in_each_process(no_leaks):
    ctx = fmp.get_context("spawn")
    q_in, q_out = ctx.SimpleQueue(), ctx.SimpleQueue()
    p = ctx.Process(target=_count_memfds, args=(q_in, q_out))
    p.start()
    gc.collect()
    fds = _memfds()
    t = fc.ones(64)
    q_in.put(t)
    assert q_out.get() == (1, 64.0)  # the child holds the segment ...
    assert q_out.get() == 0  # ... until its tensor goes
    p.join(60)
    assert _memfds() == fds + 1
    del t
    gc.collect()
    assert _memfds() == fds


def test_tensor_bytes_are_not_pickled(no_leaks):
    big = fc.arange(100_000, dtype=fc.float32)
    wire = fmp.reduction.ForkingPickler.dumps(big)
    assert len(wire) < 1000 and big.is_shared()
    back = pickle.loads(wire)
    assert back.data_ptr() == big.data_ptr() and back._storage_id == big._storage_id


def test_external_memory_is_sent_as_a_shared_copy(no_leaks):
    buf = bytearray(b"\x00" * 8)
    t = fc.frombuffer(buf, dtype=fc.int32)
    back = pickle.loads(fmp.reduction.ForkingPickler.dumps(t))
    assert not t.is_shared() and back.is_shared() and back.tolist() == [0, 0]
    back.fill_(5)
    assert buf == bytearray(8)


def test_non_leaf_requiring_grad_is_refused():
    fa = pytest.importorskip("flambeau_autograd")
    assert fa
    x = fc.ones(2, requires_grad=True)
    y = x * 2
    with pytest.raises(RuntimeError, match="Cowardly refusing to serialize non-leaf tensor"):
        fmp.reduction.ForkingPickler.dumps(y)
    back = pickle.loads(fmp.reduction.ForkingPickler.dumps(x))
    assert back.requires_grad and back.is_leaf and back.data_ptr() == x.data_ptr()


# ---- file_system strategy ----


def _fs_child(q_in, q_out):
    t = q_in.get()
    t.add_(10)
    q_out.put("done")


@pytest.mark.parametrize("method", METHODS)
def test_file_system_strategy_shares_and_leaves_nothing(no_leaks, file_system, method):
    assert fmp.get_sharing_strategy() == "file_system"
    ctx = fmp.get_context(method)
    before = _fs_names()
    q_in, q_out = ctx.Queue(), ctx.Queue()
    p = ctx.Process(target=_fs_child, args=(q_in, q_out))
    p.start()
    t = fc.arange(6, dtype=fc.int64).view(2, 3)
    q_in.put(t[1])
    assert q_out.get(timeout=60) == "done"
    p.join(60)
    assert p.exitcode == 0
    assert t.tolist() == [[0, 1, 2], [13, 14, 15]]
    assert len(_fs_names() - before) == 1  # only the parent holds it now
    del t
    gc.collect()
    assert _fs_names() == before


def test_file_system_reference_counts_in_one_process(no_leaks, file_system):
    before = _fs_names()
    t = fc.ones(8).share_memory_()
    (name,) = _fs_names() - before
    wire = fmp.reduction.ForkingPickler.dumps(t)  # a message in flight holds a reference
    back = pickle.loads(wire)  # received where it is mapped already: the same storage
    assert back._storage_id == t._storage_id
    del t, back
    gc.collect()
    assert name not in os.listdir(_shm.SHM_DIR)


def test_a_storage_keeps_its_strategy(no_leaks, file_system):
    t = fc.ones(4)
    fmp.set_sharing_strategy("file_descriptor")
    t.share_memory_()
    fmp.set_sharing_strategy("file_system")
    before = _fs_names()
    back = pickle.loads(fmp.reduction.ForkingPickler.dumps(t))  # still passed as a descriptor
    assert _fs_names() == before and back.data_ptr() == t.data_ptr()


def test_sharing_strategies():
    assert fmp.get_all_sharing_strategies() == {"file_descriptor", "file_system"}
    assert fmp.get_sharing_strategy() == "file_descriptor"
    with pytest.raises(ValueError, match=r"\[set_sharing_strategy\] unknown sharing strategy 'shm'"):
        fmp.set_sharing_strategy("shm")
    assert fmp.get_sharing_strategy() == "file_descriptor"


def _die(q):
    q.put(fc.ones(3))
    # exits at once: the parent cannot fetch the descriptor any more


def test_a_sender_gone_before_receipt_is_named(no_leaks):
    ctx = fmp.get_context("fork")
    q = ctx.Queue()
    p = ctx.Process(target=_die, args=(q,))
    p.start()
    p.join(60)
    with pytest.raises(RuntimeError, match=rf"from process {p.pid}: .*sending process must still be alive"):
        q.get(timeout=60)


def test_reexports_and_reductions():
    import multiprocessing

    for name in ["Process", "Queue", "SimpleQueue", "Pipe", "get_context", "cpu_count", "Lock", "Event"]:
        assert getattr(fmp, name) is getattr(multiprocessing, name)
    assert fmp.reduce_tensor is reductions.reduce_tensor
    assert {"spawn", "start_processes", "ProcessRaisedException", "set_sharing_strategy"} <= set(fmp.__all__)


def _hold_inherited(t, ready, release):
    # Holds the inherited (forked) tensor: its own reference to the file_system segment.
    ready.set()
    release.wait(60)
    assert t.sum().item() == 8.0


def test_file_system_forked_child_holds_its_own_reference(no_leaks, file_system):
    ctx = fmp.get_context("fork")
    before = _fs_names()
    t = fc.ones(8).share_memory_()
    (name,) = _fs_names() - before
    ready, release = ctx.Event(), ctx.Event()
    p = ctx.Process(target=_hold_inherited, args=(t, ready, release))
    p.start()
    assert ready.wait(60)
    del t
    gc.collect()
    assert name in os.listdir(_shm.SHM_DIR)  # the child still holds it
    release.set()
    p.join(60)
    assert p.exitcode == 0
    assert name not in os.listdir(_shm.SHM_DIR)  # its exit dropped the last reference


def test_concurrent_share_memory_makes_one_segment():
    import threading

    t = fc.zeros(1000)
    ptrs = []
    barrier = threading.Barrier(4)

    def share():
        barrier.wait()
        ptrs.append(t.share_memory_().data_ptr())

    threads = [threading.Thread(target=share) for _ in range(4)]
    for th in threads:
        th.start()
    for th in threads:
        th.join()
    assert len(set(ptrs)) == 1 and ptrs[0] == t.data_ptr() and t.is_shared()
