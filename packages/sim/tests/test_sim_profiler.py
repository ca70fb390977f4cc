"""Device activity of the simulated device in the profiler: each kernel a stream runs is an event on the
stream's worker thread, linked to the op that launched it (flambeau_core.profiler, Note [Observation])."""

import json
import threading

import flambeau_core as fc
import flambeau_sim as sim
import pytest
from flambeau_core.profiler import ProfilerActivity, profile, supported_activities
from flambeau_core.profiler._events import KIND_KERNEL
from flambeau_core.testing import check_chrome_trace

S = sim.register(num_devices=2)
DEVICE_ACTIVITIES = [ProfilerActivity.CPU, ProfilerActivity.PrivateUse1]


def _kernels(events):
    return [e for e in events if e.kind == KIND_KERNEL]


def test_kernels_run_on_the_streams_thread_and_link_to_their_op():
    assert ProfilerActivity.PrivateUse1 in supported_activities()
    x = fc.ones(64, device="sim:0")
    with profile(activities=DEVICE_ACTIVITIES) as prof:
        y = (x * 2).add(1)
    assert y.cpu().tolist() == [3.0] * 64
    events = prof.events()
    kernels = _kernels(events)
    by_name = {k.name: k for k in kernels}
    assert {"mul", "add"} <= set(by_name)
    main = threading.get_native_id()
    for name in ("mul", "add"):
        k = by_name[name]
        assert k.thread != main and k.device == "sim:0" and k.stream == 0
        assert k.launched_by is not None and k.launched_by.name == f"aten::{name}"
        assert k.launched_by.kernels == [k] and k.launched_by.thread == main
        # The kernel ran after its launch began, as device time of its op and of nothing on the cpu.
        assert k.time_range.start >= k.launched_by.time_range.start
        assert k.cpu_time_total == k.self_cpu_time_total == 0
        assert k.self_device_time_total == pytest.approx(k.time_range.elapsed_us())
        assert k.launched_by.self_device_time_total == pytest.approx(k.time_range.elapsed_us())
    # Both kernels ran in order on one stream, so on one thread.
    assert by_name["mul"].thread == by_name["add"].thread
    assert by_name["mul"].time_range.end <= by_name["add"].time_range.start
    table = prof.key_averages().table(sort_by="self_device_time_total")
    assert "Self SIM" in table and "SIM total" in table
    # The total is the kernels' time, counted once (not again through the ops that launched them).
    total = sum(k.time_range.elapsed_us() for k in kernels)
    assert f"Self SIM time total: {total / 1e3:.3f}ms" in table or f"Self SIM time total: {total:.3f}us" in table


def test_a_kernel_held_on_its_stream_has_its_device_side_times():
    x = fc.ones(8, device="sim:1")
    with profile(activities=DEVICE_ACTIVITIES) as prof:
        latch = sim.block_stream(S.current_stream(1))
        y = x.neg()  # returns at once: the kernel waits for the latch
        launched_at = fc._C._profiler_now_ns() / 1000.0
        latch.release()
        S.synchronize(1)
    assert y.cpu().tolist() == [-1.0] * 8
    (k,) = [k for k in _kernels(prof.events()) if k.name == "neg"]
    assert k.device == "sim:1" and k.launched_by.name == "aten::neg"
    assert k.launched_by.time_range.end <= launched_at <= k.time_range.start


def test_device_activity_is_only_recorded_when_asked():
    x = fc.ones(4, device="sim:0")
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        (x + 1).cpu()
    assert _kernels(prof.events()) == []
    assert "aten::add" in {e.name for e in prof.events()}
    assert "SIM" not in prof.key_averages().table()


def test_kernel_flows_in_the_chrome_trace(tmp_path):
    x = fc.ones(4, device="sim:0")
    with profile(activities=DEVICE_ACTIVITIES) as prof:
        (x * 3).cpu()
    path = tmp_path / "trace.json"
    prof.export_chrome_trace(str(path))
    with open(path) as f:
        trace = check_chrome_trace(json.load(f))
    complete = [e for e in trace if e["ph"] == "X"]
    kernel = next(e for e in complete if e["cat"] == "kernel" and e["name"] == "mul")
    op = next(e for e in complete if e["name"] == "aten::mul")
    assert kernel["tid"] != op["tid"] and kernel["args"]["device"] == "sim:0"
    flows = [e for e in trace if e.get("cat") == "ac2g" and e["id"] == kernel["args"]["correlation"]]
    start, finish = sorted(flows, key=lambda e: e["ph"] != "s")
    assert start["ph"] == "s" and start["tid"] == op["tid"] and op["ts"] <= start["ts"] <= op["ts"] + op["dur"]
    assert finish["ph"] == "f" and finish["bp"] == "e" and finish["tid"] == kernel["tid"]
    assert finish["ts"] == kernel["ts"]
    threads = {e["tid"]: e["args"]["name"] for e in trace if e["ph"] == "M" and e["name"] == "thread_name"}
    assert threads[kernel["tid"]] == "stream 0 (sim:0)"
