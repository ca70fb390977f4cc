"""fb.Stream and fb.Event (torch.Stream, torch.Event): the cpu ones against PyTorch 2.13 (a CPU build has no
accelerator: its Stream() and Event() are the cpu's), and a plug-in device's through the simulated device."""

from __future__ import annotations

import subprocess
import sys

import flambeau as fb
import pytest
import torch


def test_without_an_accelerator_stream_and_event_are_the_cpus():
    # a fresh interpreter: another test in this process may have made a plug-in device current
    code = (
        "import flambeau as fb\n"
        "assert fb.accelerator.current_accelerator() is None\n"
        "s, e = fb.Stream(), fb.Event()\n"
        "assert (s.device_type, s.device_index, s.stream_id, e.event_id) == (0, -1, 0, 0)\n"
        "assert s == fb.Stream('cpu') and str(e.device) == 'cpu'\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_cpu_stream_as_torch():
    for lib in (fb, torch):
        s = lib.Stream("cpu")  # named: another test may have made a plug-in device current
        assert (s.device_type, s.device_index, s.stream_id) == (0, -1, 0)  # c10's DeviceType number
        assert str(s.device) == "cpu" and s.query() is True and s.synchronize() is None
        assert s.is_capturing() is False
        assert s == lib.Stream("cpu") and hash(s) == hash(lib.Stream(device="cpu", priority=-1))
        assert isinstance(s, lib.Stream)
        with s as entered:
            assert entered is s
        assert s.wait_event(lib.Event("cpu")) is None
        with pytest.raises(RuntimeError, match="cpu backend doesn't support events."):
            s.record_event()
        with pytest.raises(RuntimeError, match="cpu backend doesn't support events."):
            s.wait_stream(lib.Stream("cpu"))
        with pytest.raises(RuntimeError, match="Backend doesn't support getting stream native handle."):
            s.native_handle  # noqa: B018
        with pytest.raises(TypeError):
            lib.Stream("cpu", -1)  # priority is keyword-only
    assert repr(fb.Stream("cpu")) == repr(torch.Stream("cpu")).replace("torch.", "flambeau.")


def test_cpu_event_as_torch():
    for lib in (fb, torch):
        e = lib.Event("cpu")
        assert e.query() is True and e.synchronize() is None and e.wait(lib.Stream("cpu")) is None
        assert e.event_id == 0 and str(e.device) == "cpu" and isinstance(e, lib.Event)
        with pytest.raises(RuntimeError, match="cpu backend doesn't support events."):
            e.record(lib.Stream("cpu"))
        with pytest.raises(ValueError, match="Both events must be created with argument 'enable_timing=True'."):
            e.elapsed_time(lib.Event("cpu"))
    for kw in ({}, {"enable_timing": True}, {"blocking": True}, {"interprocess": True}):
        assert repr(fb.Event("cpu", **kw)) == repr(torch.Event("cpu", **kw)).replace("torch.", "flambeau.")


def test_a_plug_in_device_gives_its_own():
    # In a fresh process: registering the simulated device makes it the current accelerator for the process.
    script = """
import flambeau as fb
fb.utils.register_sim()
s, named = fb.Stream(), fb.Stream("sim")
assert type(s) is fb.sim.Stream and isinstance(s, fb.Stream) and issubclass(fb.sim.Stream, fb.Stream)
assert named.device == fb.device("sim", 0) and s != named
e = fb.Event("sim", enable_timing=True)
assert isinstance(e, fb.Event) and type(e) is fb.sim.Event
with fb.sim.stream(s):
    y = fb.ones(64, device="sim") * 2
e.record(s)
e.synchronize()
assert e.query() and y.sum().item() == 128.0
assert str(fb.Stream("cpu").device) == "cpu"
print("ok")
"""
    out = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert out.returncode == 0, out.stderr
    assert out.stdout.strip() == "ok"
