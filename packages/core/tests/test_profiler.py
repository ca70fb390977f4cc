"""flambeau_core.profiler (Note [Observation]) against torch.profiler and the profiler's invariants."""

from __future__ import annotations

import gzip
import json
import os
import threading
import warnings
from collections import Counter

import flambeau_core as fc
import pytest
import torch
from flambeau_core import _C
from flambeau_core.profiler import (
    ProfilerAction,
    ProfilerActivity,
    profile,
    record_function,
    schedule,
    tensorboard_trace_handler,
)
from flambeau_core.testing import check_chrome_trace, kernel_trace


def _program(lib):
    a = lib.ones(4, 4)
    b = lib.ones(4, 4)
    for _ in range(3):
        c = a + b
    d = a * b
    e = a.mm(b)
    f = e.sum()
    g = lib.relu(d)
    return c, f, g


def _top_level_ops(events):
    return Counter(e.name for e in events if e.cpu_parent is None and e.name.startswith("aten::"))


def test_top_level_op_names_and_counts_match_torch():
    with profile(activities=[ProfilerActivity.CPU]) as prof:
        _program(fc)
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as tprof:
        _program(torch)
    ours = _top_level_ops(prof.events())
    theirs = _top_level_ops(tprof.events())
    for name in ("aten::add", "aten::mul", "aten::mm", "aten::sum", "aten::relu", "aten::ones"):
        assert ours[name] == theirs[name], (name, ours, theirs)
    assert ours["aten::add"] == 3
    averages = {a.key: a for a in prof.key_averages()}
    assert averages["aten::add"].count == 3


def test_self_time_is_total_less_children_and_ranges_nest():
    with profile() as prof:
        with record_function("outer"):
            with record_function("inner"):
                fc.ones(8).mul(2).sum()
    events = prof.events()
    by_name = {e.name: e for e in events}
    assert by_name["inner"].cpu_parent is by_name["outer"]
    assert by_name["aten::sum"].cpu_parent is by_name["inner"]
    for e in events:
        assert 0 <= e.self_cpu_time_total <= e.cpu_time_total + 1e-9
        children = sum(c.cpu_time_total for c in e.cpu_children)
        assert e.self_cpu_time_total == pytest.approx(e.cpu_time_total - children)
        for c in e.cpu_children:
            assert e.time_range.start <= c.time_range.start <= c.time_range.end <= e.time_range.end
            assert c.thread == e.thread
    total = prof.key_averages().total_average()
    assert total.self_cpu_time_total == pytest.approx(events.self_cpu_time_total)


def test_record_function_as_decorator_and_its_errors():
    @record_function("helper")
    def helper(x):
        return x + 1

    with profile() as prof:
        for _ in range(4):
            helper(fc.ones(2))
    counts = {a.key: a.count for a in prof.key_averages()}
    assert counts["helper"] == 4
    assert all(e.cpu_parent.name == "helper" for e in prof.events() if e.name == "aten::add")
    with pytest.raises(TypeError, match=r"\[record_function\] name must be a str"):
        record_function(3)
    # Outside a profile a range records nothing and costs no error.
    with record_function("idle"):
        pass


def test_record_shapes_against_torch():
    def run(lib):
        a, b = lib.ones(2, 3), lib.ones(3, 5)
        a.mm(b)
        lib.ones(7).add(lib.ones(7))

    with profile(record_shapes=True) as prof:
        run(fc)
    with torch.profiler.profile(record_shapes=True) as tprof:
        run(torch)
    for name in ("aten::mm", "aten::add"):
        ours = [e.input_shapes for e in prof.events() if e.name == name]
        theirs = [e.input_shapes for e in tprof.events() if e.name == name]
        assert ours == [[list(s) for s in shapes if s] for shapes in theirs], name
    mm = next(e for e in prof.events() if e.name == "aten::mm")
    assert mm.input_types == ["float32", "float32"]
    groups = {(a.key, str(a.input_shapes)) for a in prof.key_averages(group_by_input_shape=True)}
    assert ("aten::mm", "[[2, 3], [3, 5]]") in groups
    with profile() as plain:
        fc.ones(1)
    with pytest.raises(fc.FlambeauError, match=r"\[profiler.key_averages\] group_by_input_shape=True needs shapes"):
        plain.key_averages(group_by_input_shape=True)


def test_profile_memory_against_torch():
    with profile(profile_memory=True) as prof:
        x = fc.ones(1000)
        y = fc.ones(250, dtype=fc.float64)
        del y
    with torch.profiler.profile(profile_memory=True) as tprof:
        tx = torch.ones(1000)
        ty = torch.ones(250, dtype=torch.float64)
        del ty
    ours = [e.cpu_memory_usage for e in prof.events() if e.name == "aten::ones"]
    theirs = [e.cpu_memory_usage for e in tprof.events() if e.name == "aten::ones"]
    assert ours == theirs == [4000, 2000]
    table = prof.key_averages().table(sort_by="cpu_memory_usage")
    assert "CPU Mem" in table and "Self CPU Mem" in table
    assert "5.86 KB" in table  # aten::ones: 6000 bytes in all, formatted as PyTorch formats them
    del x, tx


def test_with_flops_against_torch():
    def flops(events, name):
        return [e.flops for e in events if e.name == name]

    with torch.profiler.profile(with_flops=True) as tprof:
        torch.ones(8, 16).mm(torch.ones(16, 4))
        torch.conv2d(torch.ones(2, 3, 10, 10), torch.ones(6, 3, 3, 3), None, 1, 1)
    with profile(with_flops=True) as prof:
        fc.ones(8, 16).mm(fc.ones(16, 4))
        fc.conv2d(fc.ones(2, 3, 10, 10), fc.ones(6, 3, 3, 3), None, 1, 1)
    assert flops(prof.events(), "aten::mm") == flops(tprof.events(), "aten::mm") == [2 * 8 * 16 * 4]
    assert flops(prof.events(), "aten::conv2d") == flops(tprof.events(), "aten::conv2d")
    assert "FLOPs" in prof.key_averages().table()


@pytest.mark.parametrize(
    "args",
    [
        dict(wait=1, warmup=1, active=2),
        dict(wait=2, warmup=1, active=3, repeat=2),
        dict(wait=0, warmup=0, active=1, repeat=3, skip_first=2),
        dict(wait=3, warmup=2, active=1, repeat=1, skip_first=1),
        dict(wait=4, warmup=1, active=2, repeat=2, skip_first=3, skip_first_wait=1),
    ],
)
def test_schedule_actions_equal_torch(args):
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ours, theirs = schedule(**args), torch.profiler.schedule(**args)
    assert [ours(i).name for i in range(40)] == [theirs(i).name for i in range(40)]


@pytest.mark.parametrize(
    "args, word",
    [
        (dict(wait=-1, warmup=1, active=1), "wait=-1"),
        (dict(wait=1, warmup=-2, active=1), "warmup=-2"),
        (dict(wait=1, warmup=1, active=0), "active=0"),
        (dict(wait=1, warmup=1, active=1, repeat=-1), "repeat=-1"),
        (dict(wait=1, warmup=1, active=1, skip_first=-3), "skip_first=-3"),
    ],
)
def test_schedule_rejects_negative_counts(args, word):
    with pytest.raises(fc.FlambeauError, match=r"\[profiler.schedule\] " + word):
        schedule(**args)
    with pytest.raises(TypeError, match=r"\[profiler.schedule\] wait must be an int"):
        schedule(wait=1.5, warmup=1, active=1)
    with pytest.raises(fc.FlambeauError, match=r"\[profiler.schedule\] the step must be >= 0"):
        schedule(wait=1, warmup=1, active=1)(-1)


def _cycles(prof_cls, lib, sched, n, tmp_path):
    cycles = []

    def ready(p):
        path = tmp_path / f"{prof_cls.__module__}.{len(cycles)}.json"
        p.export_chrome_trace(str(path))
        steps = sorted(e["name"] for e in json.loads(path.read_text())["traceEvents"] if "ProfilerStep#" in e["name"])
        names = [e.name for e in p.events()]
        cycles.append((steps, names.count("ProfilerStep*"), names.count("aten::add")))

    with prof_cls(schedule=sched, on_trace_ready=ready) as p:
        for _ in range(n):
            lib.ones(3).add(1)
            p.step()
    return cycles


def test_profile_steps_through_the_schedule_as_torch(tmp_path):
    args = dict(wait=1, warmup=1, active=2, repeat=2, skip_first=1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        ours = _cycles(profile, fc, schedule(**args), 14, tmp_path)
        theirs = _cycles(torch.profiler.profile, torch, torch.profiler.schedule(**args), 14, tmp_path)
    assert ours == theirs
    assert ours == [(["ProfilerStep#3", "ProfilerStep#4"], 2, 2), (["ProfilerStep#7", "ProfilerStep#8"], 2, 2)]


def test_each_recorded_cycle_holds_only_its_steps_ops():
    counts = []
    with profile(
        schedule=schedule(wait=1, warmup=1, active=3),
        on_trace_ready=lambda p: counts.append(sum(e.name == "aten::add" for e in p.events())),
    ) as prof:
        for _ in range(10):
            fc.ones(2).add(1)
            prof.step()
    assert counts == [3, 3]
    assert prof.step_num == 10
    assert schedule(wait=1, warmup=1, active=3)(4) == ProfilerAction.RECORD_AND_SAVE


@pytest.mark.parametrize("suffix", [".json", ".json.gz"])
def test_chrome_trace_is_valid_trace_event_json(tmp_path, suffix):
    with profile(record_shapes=True, profile_memory=True) as prof:
        with record_function("block"):
            fc.ones(16, 16).mm(fc.ones(16, 16))
    path = tmp_path / ("trace" + suffix)
    prof.export_chrome_trace(str(path))
    opener = gzip.open if suffix.endswith(".gz") else open
    with opener(path, "rt") as f:
        doc = json.load(f)
    check_chrome_trace(doc)
    complete = [e for e in doc["traceEvents"] if e["ph"] == "X"]
    names = {e["name"] for e in complete}
    assert {"block", "aten::mm", "aten::ones"} <= names
    mm = next(e for e in complete if e["name"] == "aten::mm")
    block = next(e for e in complete if e["name"] == "block")
    assert mm["args"]["Input Dims"] == [[16, 16], [16, 16]]
    assert block["ts"] <= mm["ts"] and mm["ts"] + mm["dur"] <= block["ts"] + block["dur"] + 1e-3
    assert block["cat"] == "user_annotation" and mm["cat"] == "cpu_op"
    memory = [e for e in doc["traceEvents"] if e["ph"] == "i"]
    assert any(e["args"]["Bytes"] == 16 * 16 * 4 for e in memory)


def test_export_chrome_trace_errors(tmp_path):
    # Before any step reached the active part of the schedule: no trace yet.
    with profile(schedule=schedule(wait=5, warmup=1, active=1)) as prof:
        fc.ones(1)
        prof.step()
        with pytest.raises(fc.FlambeauError, match=r"\[profiler.export_chrome_trace\] no trace has been recorded"):
            prof.export_chrome_trace(str(tmp_path / "t.json"))
    with profile() as empty:
        pass
    with pytest.raises(fc.FlambeauError, match=r"\[profiler.export_chrome_trace\] the trace has no events"):
        empty.export_chrome_trace(str(tmp_path / "t.json"))
    assert not (tmp_path / "t.json").exists()


def test_one_profiler_at_a_time():
    with profile():
        with pytest.raises(RuntimeError, match=r"\[profiler\] a profiler is already running"):
            profile().start()
    assert not _C._profiler_enabled()


def test_events_are_recorded_per_thread():
    barrier = threading.Barrier(2)

    def work():
        barrier.wait()
        with record_function("worker"):
            for _ in range(50):
                fc.ones(4).add(1)

    with profile() as prof:
        threads = [threading.Thread(target=work) for _ in range(2)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
    events = prof.events()
    workers = [e for e in events if e.name == "worker"]
    assert len({e.thread for e in workers}) == 2
    assert sum(e.name == "aten::add" for e in events) == 100
    for e in events:
        if e.name == "aten::add":
            assert e.cpu_parent.name == "worker" and e.cpu_parent.thread == e.thread


def test_kernel_trace_and_profiler_share_the_gate():
    a = fc.ones(3)
    with profile() as prof:
        with kernel_trace() as rows:
            a.neg()
    assert ["neg", "cpu", "own"] in rows
    assert "aten::neg" in {e.name for e in prof.events()}
    _C._kernel_trace_start()
    rows = _C._kernel_trace_stop()
    assert rows == []


def test_table_columns_sorting_and_row_limit():
    with profile() as prof:
        for _ in range(5):
            fc.ones(64, 64).mm(fc.ones(64, 64))
        fc.ones(2).neg()
    table = prof.key_averages().table(sort_by="self_cpu_time_total", row_limit=2)
    lines = table.splitlines()
    header = lines[1]
    for column in ("Name", "Self CPU %", "Self CPU", "CPU total %", "CPU total", "CPU time avg", "# of Calls"):
        assert column in header
    assert "CPU Mem" not in header
    rows = lines[3:-2]
    assert len(rows) == 2
    assert lines[-1].startswith("Self CPU time total:")
    averages = sorted(prof.key_averages(), key=lambda a: a.self_cpu_time_total, reverse=True)
    assert rows[0].split()[0] == averages[0].key
    with pytest.raises(fc.FlambeauError, match=r"\[table\] cannot sort by 'bogus'"):
        prof.key_averages().table(sort_by="bogus")


def test_tensorboard_trace_handler(tmp_path):
    out = tmp_path / "logs"
    with profile(on_trace_ready=tensorboard_trace_handler(str(out), worker_name="w0")):
        fc.ones(3).add(1)
    files = os.listdir(out)
    assert len(files) == 1 and files[0].startswith("w0.") and files[0].endswith(".pt.trace.json")
    blocker = tmp_path / "file"
    blocker.write_text("")
    with pytest.raises(fc.FlambeauError, match=r"\[profiler.tensorboard_trace_handler\] cannot create the directory"):
        with profile(on_trace_ready=tensorboard_trace_handler(str(blocker / "sub"))):
            fc.ones(1)


def test_memory_timeline(tmp_path):
    with profile(profile_memory=True) as prof:
        with record_function("forward"):
            keep = fc.ones(1024)
            fc.ones(4096)  # freed at once
    prof.export_memory_timeline(str(tmp_path / "m.json"))
    times, sizes, categories = json.loads((tmp_path / "m.json").read_text())
    assert categories == ["forward"]
    assert [s[0] for s in sizes] == [4096, 4096 + 16384, 4096]
    assert times == sorted(times)
    prof.export_memory_timeline(str(tmp_path / "m.html"))
    page = (tmp_path / "m.html").read_text()
    assert page.startswith("<!DOCTYPE html>") and "<svg" in page and "forward" in page
    try:
        import matplotlib  # noqa: F401
    except ImportError:
        with pytest.raises(ImportError, match=r"\[profiler.export_memory_timeline\] a .png needs matplotlib"):
            prof.export_memory_timeline(str(tmp_path / "m.png"))
    else:
        prof.export_memory_timeline(str(tmp_path / "m.png"))
        assert (tmp_path / "m.png").read_bytes()[:8] == b"\x89PNG\r\n\x1a\n"
    with pytest.raises(fc.FlambeauError, match=r"must end in .html, .json or .png"):
        prof.export_memory_timeline(str(tmp_path / "m.txt"))
    with profile() as no_memory:
        fc.ones(1)
    with pytest.raises(fc.FlambeauError, match=r"profile_memory=True"):
        no_memory.export_memory_timeline(str(tmp_path / "n.html"))
    del keep


def test_cuda_activity_warns_and_records_the_cpu_side():
    with pytest.warns(UserWarning, match=r"\[profiler.profile\] CUDA activity is not recorded"):
        prof = profile(activities=[ProfilerActivity.CPU, ProfilerActivity.CUDA])
    with prof:
        fc.ones(2).add(1)
    assert "aten::add" in {e.name for e in prof.events()}
    assert all(e.device_time_total == 0 for e in prof.events())
    assert "CUDA total" not in prof.key_averages().table()
    with pytest.raises(TypeError, match=r"\[profiler.profile\] activities must be ProfilerActivity"):
        profile(activities=["cpu"])


# ---- with_stack ----
def _add_here(x):
    return x + 1


def _mul_here(x):
    return x * 3


def _calls(lib):
    x = lib.ones(2)
    for _ in range(2):
        _add_here(x)
    _mul_here(x)
    _add_here(x)


def _enclosing_python_function(e):
    """torch's profiler puts the Python functions around an op as events of their own ("file(line): name")."""
    p = e.cpu_parent
    while p is not None and "test_profiler.py(" not in p.name:
        p = p.cpu_parent
    return p.name if p is not None else None


def test_with_stack_gives_each_op_the_stack_of_its_call_site_as_torch():
    with profile(with_stack=True) as prof:
        _calls(fc)
    with torch.profiler.profile(with_stack=True) as tprof:
        _calls(torch)
    adds = [e for e in prof.events() if e.name == "aten::add"]
    tadds = [e for e in tprof.events() if e.name == "aten::add"]
    assert len(adds) == len(tadds) == 3
    for e, t in zip(adds, tadds, strict=True):
        # Innermost frame first: the function that ran the op, in this file, then its caller; torch names the
        # same function (and file) in the Python event around its op.
        assert "test_profiler.py(" in e.stack[0] and "test_profiler.py(" in e.stack[1], e.stack
        assert e.stack[0].endswith(": _add_here") and e.stack[1].endswith(": _calls")
        assert _enclosing_python_function(t).endswith(": _add_here")
    mul = next(e for e in prof.events() if e.name == "aten::mul")
    assert mul.stack[0].endswith(": _mul_here")
    line = int(adds[0].stack[0].rsplit("(", 1)[1].split(")")[0])
    assert line == _add_here.__code__.co_firstlineno + 1  # the line of the call, in the frame's function
    # Grouped by the top frame, the add of one call site is one row of 3 calls.
    groups = [a for a in prof.key_averages(group_by_stack_n=1) if a.key == "aten::add"]
    assert [a.count for a in groups] == [3]
    assert "Source Location" in prof.key_averages(group_by_stack_n=2).table()
    # The ops an op runs inside it were called from the same Python line.
    for e in prof.events():
        for c in e.cpu_children:
            if e.stack and c.stack:
                assert c.stack == e.stack


def test_with_stack_names_the_callers_of_record_function_and_only_when_asked():
    def block():
        with record_function("block"):
            return fc.ones(1).neg()

    with profile(with_stack=True) as prof:
        block()
    rng = next(e for e in prof.events() if e.name == "block")
    assert rng.stack[0].endswith(": block") and "test_profiler.py" in rng.stack[0]
    assert not any("profiler" + os.sep + "__init__.py" in f for f in rng.stack)
    with profile() as plain:
        block()
    assert all(e.stack == [] for e in plain.events())


def test_with_stack_in_the_chrome_trace(tmp_path):
    with profile(with_stack=True) as prof:
        _add_here(fc.ones(2))
    prof.export_chrome_trace(str(tmp_path / "t.json"))
    with open(tmp_path / "t.json") as f:
        doc = json.load(f)
    check_chrome_trace(doc)
    add = next(e for e in doc["traceEvents"] if e["name"] == "aten::add")
    assert add["args"]["Call stack"].split(";")[0].endswith(": _add_here")


def test_sessions_reuse_their_buffers_and_keep_shapes_apart():
    # A thread's buffers are reused by the next session (Note [Cheap recording]): nothing of one leaks into another.
    for n in (3, 5):
        with profile(record_shapes=True, profile_memory=True) as prof:
            for i in range(n):
                fc.ones(i + 1, 2).sum(0)
        sums = [e for e in prof.events() if e.name == "aten::sum"]
        assert [e.input_shapes[0] for e in sums] == [[i + 1, 2] for i in range(n)]
        assert all(e.input_types[0] == "float32" for e in sums)
        assert len(prof.events()._memory_events) >= 2 * n


def _child_records(conn):
    fc.ones(4).add(1)
    conn.send(_C._profiler_enabled())
    conn.close()


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs os.fork")
def test_a_forked_child_does_not_go_on_recording_its_parents_session():
    import multiprocessing

    ctx = multiprocessing.get_context("fork")
    with profile() as prof:
        parent_end, child_end = ctx.Pipe()
        p = ctx.Process(target=_child_records, args=(child_end,))
        p.start()
        recording_in_child = parent_end.recv()
        p.join(60)
        fc.ones(2).neg()
    assert p.exitcode == 0 and recording_in_child is False
    assert [e.name for e in prof.events() if e.name == "aten::neg"] == ["aten::neg"]


def test_kineto_is_not_available():
    assert fc.profiler.kineto_available() is False and torch.profiler.kineto_available() is True  # torch's own library
