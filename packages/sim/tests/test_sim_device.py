"""The simulated device "sim" (Note [Simulated device]) and the allocator's stream semantics
(Note [Stream-ordered reuse]), tested on the CPU.

Work on a sim stream runs on a worker thread; `sim.block_stream` holds a stream
on a latch so that a test can observe work that has not run yet. Rule for these
tests: while a stream is latched, only asynchronous work (copies between sim
tensors, copies from pinned memory with non_blocking=True, events) may be
enqueued on it; any other op waits for its stream.
"""

import math
import threading

import flambeau_alloc
import flambeau_core as fc
import flambeau_sim as sim
import numpy as np
import pytest
from flambeau_alloc.testing import check_snapshot_invariants

MiB = 1 << 20
S = sim.register(num_devices=2)


def values(t):
    return np.array(t.cpu().tolist(), dtype=np.float64)


@pytest.fixture(autouse=True)
def _quiet_streams():
    yield
    for i in range(S.device_count()):
        S.synchronize(i)
    S.set_device(0)
    for i in range(S.device_count()):
        S.set_stream(S.default_stream(i))


# ---- devices and registration ----


def test_registration_and_parsing():
    assert S is fc.device_module("sim") and sim.register(num_devices=2) is S
    assert S.is_available() and S.device_count() == 2
    d = fc.device("sim:1")
    assert d.type == "sim" and d.index == 1 and str(d) == "sim:1" and repr(d) == "device(type='sim', index=1)"
    assert fc.device("sim").index is None
    with pytest.raises(ValueError, match=r"expected 'cpu', 'cuda' or 'cuda:N', 'sim' or 'sim:N'"):
        fc.device("tpu")
    with pytest.raises(ValueError, match="cannot change it to 3"):
        sim.register(num_devices=3)
    with pytest.raises(TypeError, match="num_devices must be an int"):
        sim.register(num_devices="2")
    with pytest.raises(ValueError, match=r"invalid device sim:5: there are 2 sim devices"):
        fc.zeros(2, device="sim:5")
    with pytest.raises(ValueError, match="invalid device"):
        S.set_device(7)


def test_tensors_on_the_device():
    x = fc.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]], device="sim")
    assert x.device == fc.device("sim:0") and str(x.device) == "sim:0"
    assert x.tolist() == [[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]]  # an implicit copy to the cpu, as PyTorch
    y = x.to("sim:1")
    assert y.device == "sim:1" and y.tolist() == x.tolist()
    back = y.cpu()
    assert back.device == "cpu" and back.tolist() == x.tolist()
    assert x.to("sim:0") is x and x.to("sim") is x
    assert x.to("sim", fc.float64).dtype == fc.float64 and x.to("sim", fc.float64).device == "sim:0"
    z = fc.zeros(3, 4, device="sim:1")
    assert z.device == "sim:1" and z.tolist() == [[0.0] * 4] * 3
    assert fc.ones_like(z).device == "sim:1"
    assert "device='sim:1'" in repr(z)
    assert x[1, 0].item() == 4.0 and x.t().tolist() == [[1.0, 4.0], [2.0, 5.0], [3.0, 6.0]]
    assert x.is_cuda is False and x.is_cpu is False


def test_ops_match_the_cpu():
    rng = np.random.default_rng(0)
    for dtype, np_dtype in ((fc.float32, np.float32), (fc.float64, np.float64)):
        a = rng.standard_normal((5, 7)).astype(np_dtype)
        b = rng.standard_normal((7, 3)).astype(np_dtype)
        c = rng.standard_normal((7,)).astype(np_dtype)
        ta = fc.tensor(a.tolist(), dtype=dtype, device="sim")
        tb = fc.tensor(b.tolist(), dtype=dtype, device="sim")
        tc = fc.tensor(c.tolist(), dtype=dtype, device="sim")
        tol = 1e-5 if dtype == fc.float32 else 1e-12
        np.testing.assert_allclose(values(ta * 2 + tc), a * 2 + c, rtol=tol)
        np.testing.assert_allclose(values(ta.matmul(tb)), a @ b, rtol=1e-4 if dtype == fc.float32 else 1e-10)
        np.testing.assert_allclose(values(ta.sum(1)), a.sum(1), rtol=1e-4, atol=1e-5)
        np.testing.assert_allclose(values(ta.t().exp()), np.exp(a.T), rtol=tol)  # non-contiguous input
        assert (ta + tc).device == "sim:0" and ta.matmul(tb).dtype == dtype
        t = fc.zeros(4, dtype=dtype, device="sim:1")
        t.fill_(2.5)
        t.add_(fc.ones(4, dtype=dtype, device="sim:1"))
        assert t.tolist() == [3.5] * 4 and t.device == "sim:1"
        v = t._version
        t.mul_(2)
        assert t._version > v


def test_mixed_devices_name_both():
    x = fc.ones(3, device="sim:0")
    with pytest.raises(RuntimeError, match=r"\[add\] expected all tensors to be on the same device.*sim:0 and cpu"):
        x + fc.ones(3)
    with pytest.raises(RuntimeError, match=r"\[mul\] .*same device.*sim:0 and sim:1"):
        x * fc.ones(3, device="sim:1")
    with pytest.raises(RuntimeError, match=r"same device.*(sim:0 and cpu|cpu and sim:0)"):
        fc.ones(3) - x
    assert (x + fc.tensor(2.0)).tolist() == [3.0] * 3  # a cpu scalar goes with any device
    assert (x + 1).tolist() == [2.0] * 3


def test_copy_between_devices_broadcasts_and_casts():
    dst = fc.zeros(2, 3, device="sim:1")
    dst.copy_(fc.tensor([1, 2, 3], device="sim:0"))
    assert dst.tolist() == [[1.0, 2.0, 3.0]] * 2
    host = fc.zeros(2, 3, dtype=fc.float64)
    host.copy_(dst)
    assert host.tolist() == [[1.0, 2.0, 3.0]] * 2
    with pytest.raises(ValueError, match=r"\[copy_\] the source of shape \(4,\) cannot be broadcast"):
        dst.copy_(fc.ones(4, device="sim:1"))


# ---- asynchronous launch, streams, events ----


def test_asynchronous_launch_and_synchronize():
    x = fc.full((1000,), 3.0, device="sim")
    y = fc.empty(1000, device="sim")
    s = S.current_stream()
    latch = sim.block_stream(s)
    y.copy_(x)  # returns at once: the copy waits behind the latch
    done = S.Event()
    done.record()
    assert s.query() is False and done.query() is False
    latch.release()
    S.synchronize()
    assert s.query() is True and done.query() is True
    assert values(y).tolist() == [3.0] * 1000


def test_cross_stream_use_without_record_stream_reads_poison():
    side = S.Stream()
    x = fc.full((4096,), 3.0, device="sim")
    y = fc.zeros(4096, device="sim")
    side.wait_stream(S.current_stream())
    latch = sim.block_stream(side)
    with S.stream(side):
        y.copy_(x)  # side reads x later
    del x  # the block returns to the default stream's pool; its poison is queued on that stream
    S.current_stream().synchronize()  # the default stream runs ahead of side (nothing orders them)
    latch.release()
    side.synchronize()
    got = values(y)
    assert np.isnan(got).all(), "a use after free on another stream must show as poison"


def test_cross_stream_use_with_record_stream_is_safe():
    side = S.Stream()
    alloc0 = sim.allocator(0)
    x = fc.full((4096,), 3.0, device="sim")
    y = fc.zeros(4096, device="sim")
    old = x.data_ptr()
    side.wait_stream(S.current_stream())
    latch = sim.block_stream(side)
    with S.stream(side):
        y.copy_(x)
    x.record_stream(side)
    before = alloc0.memory_allocated()
    del x
    assert alloc0._pending_frees() == 1
    assert alloc0.memory_allocated() == before - 16384  # freed, but still active
    stats = alloc0.memory_stats()
    assert stats["active_bytes.all.current"] > stats["allocated_bytes.all.current"]
    z = fc.full((4096,), 7.0, device="sim")  # must not get x's block
    assert z.data_ptr() != old
    latch.release()
    side.synchronize()
    assert values(y).tolist() == [3.0] * 4096
    w = fc.empty(4096, device="sim")  # the event has completed: x's block is reusable again
    # w takes x's block, or the larger free block it merged into: a neighbour that an earlier test's pending
    # free (queued on another stream) returned meanwhile makes that block start below x's.
    assert alloc0._pending_frees() == 0 and w.data_ptr() <= old < w.data_ptr() + 16384
    assert values(z).tolist() == [7.0] * 4096
    with pytest.raises(ValueError, match=r"\[record_stream\] expected a tensor on a device or in pinned memory"):
        fc.ones(2).record_stream(side)
    with pytest.raises(TypeError, match=r"\[record_stream\] expected a Stream"):
        w.record_stream("side")


def test_wait_stream_and_event_wait():
    side = S.Stream()
    x = fc.full((256,), 5.0, device="sim")
    y = fc.zeros(256, device="sim")
    z = fc.zeros(256, device="sim")
    side.wait_stream(S.current_stream())
    latch = sim.block_stream(side)
    with S.stream(side):
        y.copy_(x)
        e = S.Event(enable_timing=True)
        e.record()
    assert e.query() is False
    e.wait()  # the default stream now waits for side's copy
    z.copy_(y)
    assert S.current_stream().query() is False
    latch.release()
    e.synchronize()
    S.synchronize()
    assert e.query() and values(z).tolist() == [5.0] * 256
    # wait_stream: the same through a stream.
    six = fc.full((256,), 6.0, device="sim")
    side.wait_stream(S.current_stream())
    latch = sim.block_stream(side)
    with S.stream(side):
        y.copy_(six)
    S.current_stream().wait_stream(side)
    z.copy_(y)
    latch.release()
    S.synchronize()
    assert values(z).tolist() == [6.0] * 256
    start, end = S.Event(enable_timing=True), S.Event(enable_timing=True)
    start.record()
    sim.sleep(0.01)
    end.record()
    end.synchronize()
    assert start.elapsed_time(end) >= 0.0
    with pytest.raises(RuntimeError, match="both events must be recorded first"):
        S.Event().elapsed_time(S.Event())
    a, b = S.Event(), S.Event()
    a.record()
    b.record()
    b.synchronize()
    with pytest.raises(RuntimeError, match="enable_timing=True"):
        a.elapsed_time(b)


def test_non_blocking_copy_from_pinned_memory():
    host = fc.tensor([float(i) for i in range(1000)])
    pinned = host.pin_memory()
    assert pinned.is_pinned() and not host.is_pinned() and pinned.tolist() == host.tolist()
    pinned_alloc = sim.pinned_allocator()
    s = S.current_stream()
    latch = sim.block_stream(s)
    d = pinned.to("sim", non_blocking=True)  # returns before the copy ran
    assert d.device == "sim:0" and s.query() is False
    del pinned  # the pinned block is kept until the copy has run
    assert pinned_alloc._pending_frees() == 1
    latch.release()
    S.synchronize()
    assert values(d).tolist() == host.tolist()
    again = fc.ones(10).pin_memory()  # the next allocation sees the completed event
    assert pinned_alloc._pending_frees() == 0 and again.is_pinned()
    # Device to pinned host, non_blocking: a copy into pinned memory.
    out = fc.zeros(1000).pin_memory()
    out.copy_(d)
    assert out.tolist() == host.tolist()


def test_per_device_current_streams():
    s0, s1 = S.Stream(device=0), S.Stream(device="sim:1")
    assert s0.device == "sim:0" and s1.device == "sim:1" and s0 != s1
    assert S.current_stream(0) == S.default_stream(0) and S.default_stream(1).stream_id == 0
    S.set_stream(s1)
    assert S.current_stream(1) == s1 and S.current_stream(0) == S.default_stream(0)
    seen = {}

    def other_thread():
        seen["stream"] = S.current_stream(1)
        seen["device"] = S.current_device()

    th = threading.Thread(target=other_thread)
    th.start()
    th.join()
    assert seen["stream"] == S.default_stream(1) and seen["device"] == 0, "current streams are per thread"
    S.set_stream(S.default_stream(1))
    with S.stream(s1):
        assert S.current_device() == 1 and S.current_stream() == s1
        t = fc.ones(2, device="sim")
        assert t.device == "sim:1"
    assert S.current_device() == 0 and S.current_stream(1) == S.default_stream(1)
    with S.device(1):
        assert S.current_device() == 1 and fc.zeros(1, device="sim").device == "sim:1"
    assert S.current_device() == 0
    with pytest.raises(TypeError, match="expected a flambeau.sim.Stream"):
        S.set_stream("not a stream")


def _segment_stream(address):
    for seg in sim.allocator(0).memory_snapshot():
        if seg["address"] <= address < seg["address"] + seg["total_size"]:
            return seg["stream"]
    raise AssertionError(f"{address:#x} is in no segment of sim:0")


def test_allocator_pools_are_per_stream():
    side = S.Stream()
    keep = fc.empty(1000, device="sim")  # keeps the segment split, so the freed block stays a 4 KiB block
    a = fc.empty(1000, device="sim")
    first = a.data_ptr()
    del a
    with S.stream(side):
        b = fc.empty(1000, device="sim")
    assert b.data_ptr() != first, "another stream's pool"
    assert _segment_stream(b.data_ptr()) == side.stream_id and _segment_stream(first) == 0
    c = fc.empty(1000, device="sim")
    assert _segment_stream(c.data_ptr()) == 0, "the default stream allocates from its own pool"
    streams = {seg["stream"] for seg in sim.allocator(0).memory_snapshot()}
    assert {0, side.stream_id} <= streams
    del b, c, keep


# ---- memory: statistics, snapshot, out of memory ----


def test_memory_functions():
    S.empty_cache()
    S.reset_peak_memory_stats(0)
    base = S.memory_allocated(0)
    x = fc.empty(1 << 20, device="sim:0")  # 4 MiB
    assert S.memory_allocated() == base + 4 * MiB
    assert S.max_memory_allocated(0) >= base + 4 * MiB and S.memory_reserved() >= S.memory_allocated()
    assert S.memory_stats()["allocated_bytes.large_pool.current"] >= 4 * MiB
    assert any(seg["device"] == "sim:0" for seg in S.memory_snapshot())
    del x
    S.empty_cache()
    assert S.memory_allocated() == base
    check_snapshot_invariants(sim.allocator(0))
    assert "sim:0 memory" in sim.allocator(0).memory_summary()


def test_out_of_memory_with_a_capacity_limited_backend():
    a = sim.capped_allocator(24 * MiB)
    p = a._allocate(12 * MiB)
    small = a._allocate(512 * 1024)
    with pytest.raises(RuntimeError, match=r"\[allocate\] out of memory: tried to allocate 12\.00 MiB") as info:
        a._allocate(12 * MiB)  # 12 + 2 + 12 > 24
    msg = str(info.value)
    for fragment in (
        "12.00 MiB allocated",
        "small pool: 512.00 KiB allocated, 2.00 MiB reserved, largest free block 1.50 MiB",
        "large pool: 12.00 MiB allocated, 12.00 MiB reserved, largest free block 0 B",
        "sim host pages",
    ):
        assert fragment in msg, (fragment, msg)
    s = a.memory_stats()
    assert s["num_ooms"] == 1 and s["num_alloc_retries"] == 1
    assert a.memory_allocated() == 12 * MiB + 512 * 1024, "the failed request left the stats as they were"
    check_snapshot_invariants(a)
    a._free(p)
    q = a._allocate(12 * MiB)  # after a free the same request succeeds
    for r in (q, small):
        a._free(r)
    a.empty_cache()
    assert a.memory_reserved() == 0
    with pytest.raises(ValueError, match=r"\[sim.capped_allocator\] capacity must be None or >= 0 bytes, got -1"):
        sim.capped_allocator(-1)
    with pytest.raises(TypeError, match=r"\[sim.capped_allocator\] capacity must be an int, got float"):
        sim.capped_allocator(1.5)


def test_out_of_memory_on_the_device_retries_after_pending_frees():
    a0 = sim.allocator(0)
    S.synchronize()
    S.empty_cache()
    a0.memory_limit = 30 * MiB
    try:
        side = S.Stream()
        x = fc.empty(5 << 20, device="sim")  # 20 MiB
        x.record_stream(side)
        latch = sim.block_stream(side)
        del x  # pending on side
        threading.Timer(0.05, latch.release).start()
        y = fc.empty(5 << 20, device="sim")  # would not fit: waits for the event, then reuses the block
        assert a0.memory_stats()["num_ooms"] == 0
        with pytest.raises(RuntimeError, match="out of memory") as info:
            fc.empty(5 << 20, device="sim")
        assert "largest free block" in str(info.value)
        check_snapshot_invariants(a0)
        del y
    finally:
        a0.memory_limit = None
        S.empty_cache()


def test_memory_history_snapshot_and_timeline():
    flambeau_alloc._record_memory_history("all")
    try:
        x = fc.empty(2000, device="sim:1")  # allocated here: this file is the site
        snap = flambeau_alloc._snapshot()
        live = [b for seg in snap["segments"] for b in seg["blocks"] if b["allocated"] and b["address"] == x.data_ptr()]
        assert live and any("test_sim_device.py" in f["filename"] for f in live[0]["frames"])
        data = flambeau_alloc.timeline(snap)
        sites = [s for s in data["bytes"] if "test_sim_device.py" in s]
        assert sites and max(data["bytes"][sites[0]]) >= 8000
        assert len(data["times_us"]) == len(data["bytes"][sites[0]])
        del x
        after = flambeau_alloc.timeline(flambeau_alloc._snapshot())
        site = next(s for s in after["bytes"] if "test_sim_device.py" in s)
        assert after["bytes"][site][-1] < max(after["bytes"][site])
    finally:
        flambeau_alloc._record_memory_history(None)
    assert all(not t for t in flambeau_alloc._snapshot()["device_traces"])


def test_plot_timeline(tmp_path):
    flambeau_alloc._record_memory_history(True)
    try:
        x = fc.empty(3000, device="sim")
        snap = flambeau_alloc._snapshot()
        del x
    finally:
        flambeau_alloc._record_memory_history(None)
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        with pytest.raises(ImportError, match="needs matplotlib.*pip install matplotlib"):
            flambeau_alloc.plot_timeline(snap, str(tmp_path / "t.png"))
        pytest.skip("matplotlib is not installed: the error path was checked, not the picture")
    for name in ("t.png", "t.svg"):
        path = flambeau_alloc.plot_timeline(snap, str(tmp_path / name))
        assert (tmp_path / name).stat().st_size > 0 and path.endswith(name)


def test_poisoned_memory_is_nan():
    # Fresh device memory is garbage (0xFF bytes), never zeros: empty() shows it.
    a = fc.empty(8, device="sim:1")
    assert all(math.isnan(v) for v in a.tolist())
