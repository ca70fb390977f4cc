"""flambeau_data.multiprocessing: tensors cross process boundaries through shared memory."""

from __future__ import annotations

import pickle

import flambeau_core as fc
import pytest
from flambeau_data import multiprocessing as fmp


def _double_back(q_in, q_out, done):
    t = q_in.get()
    # The received tensor wraps shared memory (external), not an allocator's block.
    q_out.put((t._allocator is None, t.tolist(), t.mul(2)))
    done.wait(60)  # file_descriptor strategy: alive until the parent has the tensor


def test_drop_in_reexports_the_standard_module():
    import multiprocessing

    for name in ["Process", "Queue", "SimpleQueue", "Pipe", "get_context", "cpu_count", "Lock"]:
        assert getattr(fmp, name) is getattr(multiprocessing, name)


@pytest.mark.parametrize("method", ["fork", "spawn"])
def test_tensor_to_child_and_back(no_leaks, method):
    ctx = fmp.get_context(method)
    q_in, q_out, done = ctx.Queue(), ctx.Queue(), ctx.Event()
    p = ctx.Process(target=_double_back, args=(q_in, q_out, done))
    p.start()
    src = fc.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]).transpose(0, 1)  # non-contiguous
    q_in.put(src)
    was_external, seen, doubled = q_out.get(timeout=30)
    done.set()
    p.join(timeout=30)
    assert p.exitcode == 0
    assert was_external
    assert seen == [[1.0, 4.0], [2.0, 5.0], [3.0, 6.0]]
    assert doubled.tolist() == [[2.0, 8.0], [4.0, 10.0], [6.0, 12.0]]
    assert doubled._allocator is None and str(doubled.dtype).endswith("float32")


def test_simple_queue_and_dtypes(no_leaks):
    ctx = fmp.get_context("fork")
    q = ctx.SimpleQueue()
    tensors = [fc.arange(5), fc.tensor([True, False]), fc.zeros(0, 3), fc.tensor(2.5, dtype=fc.float64)]
    for t in tensors:
        q.put(t)
    for t in tensors:
        got = q.get()
        assert got.tolist() == t.tolist() and got.dtype == t.dtype and got.shape == t.shape


def test_tensor_bytes_are_not_pickled(no_leaks):
    big = fc.arange(100_000, dtype=fc.float32)
    # Through the multiprocessing pickler: a segment's handle and metadata, not 400 kB of data.
    wire = fmp.reduction.ForkingPickler.dumps(big)
    assert len(wire) < 1000
    back = pickle.loads(wire)
    assert back.tolist()[-3:] == [99997.0, 99998.0, 99999.0] and back._allocator is None
