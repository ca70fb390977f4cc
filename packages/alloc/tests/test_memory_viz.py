"""Memory history, snapshots and timelines of the caching allocators (Note [Memory history])."""

import flambeau_alloc
import flambeau_core as fc
import pytest
from flambeau_alloc import memory_viz


def test_timeline_for_the_cpu_allocator(restore_current_allocator):
    flambeau_alloc.enable()
    flambeau_alloc._record_memory_history(True)
    try:
        x = fc.empty(100_000)
        data = flambeau_alloc.timeline(flambeau_alloc._snapshot(flambeau_alloc.caching_allocator()))
        assert any("test_memory_viz.py" in s and max(v) >= 400_000 for s, v in data["bytes"].items())
        del x
    finally:
        flambeau_alloc._record_memory_history(None)


def test_plot_timeline_bad_arguments():
    with pytest.raises(ValueError, match=r"must end in \.png or \.svg"):
        flambeau_alloc.plot_timeline({"device_traces": []}, "x.jpg")
    with pytest.raises(TypeError, match=r"\[timeline\] expected a snapshot"):
        flambeau_alloc.timeline([])
    with pytest.raises(ValueError, match="enabled must be"):
        flambeau_alloc._record_memory_history("sometimes")


def test_a_registered_allocator_is_in_the_snapshot():
    a = flambeau_alloc.CachingAllocator(name="device-like")
    p = a._allocate(3000)
    flambeau_alloc._record_memory_history(True)
    try:
        memory_viz.register_allocator("mine:0", a)
        q = a._allocate(5000)
        snap = flambeau_alloc._snapshot()
        assert snap["devices"][0] == "cpu" and "mine:0" in snap["devices"]
        trace = snap["device_traces"][snap["devices"].index("mine:0")]
        assert [e["size"] for e in trace if e["action"] == "alloc"] == [5120]
        blocks = [b for seg in snap["segments"] for b in seg["blocks"] if b["allocated"]]
        assert {p, q} <= {b["address"] for b in blocks}
    finally:
        flambeau_alloc._record_memory_history(None)
        memory_viz._device_allocators.remove(("mine:0", a))
    a._free(p)
    a._free(q)


def test_register_allocator_bad_arguments():
    with pytest.raises(TypeError, match=r"\[register_allocator\] name must be a str, got int"):
        memory_viz.register_allocator(0, flambeau_alloc.CachingAllocator())
    with pytest.raises(TypeError, match=r"\[register_allocator\] expected a CachingAllocator, got Allocator"):
        memory_viz.register_allocator("x", fc.system_allocator())
