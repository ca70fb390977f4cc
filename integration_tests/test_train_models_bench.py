"""The spread mode of benchmarks/train_models.py (``--processes N``, ``--contention``): its pure logic.

The spread of a model's throughput over fresh processes, the fraction kept with
one core busy, the table built from them, the per-process placement facts, the
argument checks, and the busy process itself (pinned to the CPU it was given,
gone after the ``with`` block). Nothing here times anything.
"""

from __future__ import annotations

import importlib.util
import os
import statistics
import sys
from pathlib import Path

import pytest

_BENCH = Path(__file__).resolve().parents[1] / "benchmarks" / "train_models.py"
_spec = importlib.util.spec_from_file_location("flambeau_benchmark_train_models", _BENCH)
tm = importlib.util.module_from_spec(_spec)
sys.modules[_spec.name] = tm  # dataclasses look their module up there
_spec.loader.exec_module(tm)


def test_spread_is_max_over_min_minus_one():
    values = [14_000.0, 14_000.0, 22_100.0]
    assert tm.spread(values) == pytest.approx(max(values) / min(values) - 1)
    assert tm.spread([5.0]) == 0.0
    assert tm.spread([100.0, 105.0]) == pytest.approx(0.05)


@pytest.mark.parametrize(("values", "message"), [([], "spread: no values"), ([3.0, 0.0], "must be positive")])
def test_spread_rejects_empty_and_nonpositive(values, message):
    with pytest.raises(ValueError, match=message):
        tm.spread(values)


def test_spread_cells():
    values = [14_000.0, 22_100.0, 14_500.0]
    each, summary, spread = tm.spread_cells(values)
    assert each == "14,000, 22,100, 14,500"
    assert summary == f"14,000 / {statistics.median(values):,.0f} / 22,100"
    assert spread == f"{100 * (22_100 / 14_000 - 1):.0f} %"
    assert tm.spread_cells([]) == ["n/a (no result)", "-", "-"]


def test_kept_fraction_is_ratio_of_medians():
    quiet, busy = [100.0, 120.0, 110.0], [50.0, 70.0, 40.0]
    assert tm.kept_fraction(quiet, busy) == pytest.approx(statistics.median(busy) / statistics.median(quiet))
    with pytest.raises(ValueError, match="kept_fraction: needs quiet and busy figures"):
        tm.kept_fraction([], [1.0])


def test_spread_table_rows():
    Cell = tm.Cell
    quiet = {
        ("lenet5", "flambeau"): Cell(values=[100.0, 110.0], extra=[None, None]),
        ("lenet5", "torch"): Cell(error="missing: Conv2d"),
    }
    busy = {("lenet5", "flambeau"): Cell(values=[60.0, 40.0]), ("lenet5", "torch"): Cell(error="missing: Conv2d")}
    table = tm.spread_table(["lenet5"], ["flambeau", "torch"], quiet, busy)
    assert table[0][-2:] == ["one core busy, per process", "kept (busy / quiet median)"]
    assert len({len(r) for r in table}) == 1  # every row as wide as the header
    fb_row, torch_row = table[1], table[2]
    assert fb_row[:2] == [f"lenet5 ({tm.MODELS['lenet5'].batch})", "flambeau"]
    assert fb_row[4] == "10 %"
    assert fb_row[-1] == f"{100 * 50 / 105:.0f} %"
    assert fb_row[6] == "?, ?"  # no CPU time figures in these facts
    assert torch_row[2] == "n/a (missing: Conv2d)"
    assert torch_row[-2:] == ["n/a (missing: Conv2d)", "-"]
    # without --contention: no busy columns
    assert len(tm.spread_table(["lenet5"], ["flambeau"], quiet, None)[0]) == len(table[0]) - 2


def test_placement_from_thread_runtimes():
    before = {1: (1_000, 0), 2: (0, 1), 3: (500, 1)}
    after = {1: (7_000, 1), 2: (2_000, 0), 3: (510, 1), 4: (0, 0)}  # thread 4 started meanwhile, never ran
    p = tm.placement(before, after, main=1)
    assert p["main_cpu"] == 1
    assert p["main_share"] == pytest.approx(6_000 / 8_010)
    assert p["threads_ran"] == 2  # thread 3's 10 ns are under 1 % of the total
    assert tm.placement({}, {}, main=1) == {"main_cpu": -1, "main_share": 0.0, "threads_ran": 0}


def test_placement_cell():
    facts = [{"main_cpu": 0, "main_share": 0.9, "huge_pages": 8 << 20}, None]
    assert tm.placement_cell(facts) == "cpu0 90% 8M, ?"


def test_cpu_cell():
    facts = [{"cpu_ms": 10.0, "faults": 0.0}, None, {"cpu_ms": 12.5, "faults": 3.25}, {"main_cpu": 0}]
    assert tm.cpu_cell(facts) == "10 ms 0 flt, ?, 12.5 ms 3.25 flt, ? (spread 25 %)"
    assert tm.cpu_cell([None]) == "?"
    assert tm.cpu_cell([]) == "-"


def test_timed_reports_cpu_time_and_faults_per_call():
    pages = 64
    page = os.sysconf("SC_PAGE_SIZE")

    def call():  # burns CPU and touches fresh pages
        sum(range(20_000))
        bytearray(pages * page)

    usage = {}
    _, n = tm._timed(call, 1, 0.05, usage)
    assert n >= 3
    assert usage["cpu_ms"] > 0
    assert 0 <= usage["faults"] < 10 * pages
    no_usage = tm._timed(lambda: None, 1, 0.01)  # without the dict: nothing to fill in
    assert no_usage[1] >= 3


def test_thread_runtimes_of_this_process():
    runtimes = tm._thread_runtimes()
    assert os.getpid() in runtimes  # the main thread's tid is the pid
    run_ns, cpu = runtimes[os.getpid()]
    assert run_ns > 0
    assert cpu in range(os.cpu_count())


@pytest.mark.parametrize(
    ("argv", "message"),
    [(["--processes", "-1"], "--processes must be >= 1"), (["--contention"], "needed by --contention")],
)
def test_arguments_rejected(argv, message, capsys):
    with pytest.raises(SystemExit):
        tm.parse_args(argv)
    assert message in capsys.readouterr().err


def test_arguments_accepted():
    args = tm.parse_args(["--processes", "3", "--contention", "--models", "lenet5"])
    assert (args.processes, args.contention, args.model_list) == (3, True, ["lenet5"])


@pytest.mark.parametrize(
    ("peers", "modes"),
    [
        ("fb.compile", ["flambeau", "torch", "fb.compile"]),
        ("fb.compile,jax", ["flambeau", "torch", "fb.compile", "jax.jit"]),
        ("all", ["flambeau", "torch", "fb.compile", "torch.compile", "jax.jit"]),
    ],
)
def test_peers_pick_the_modes(peers, modes):
    assert sorted(tm.parse_args(["--peers", peers]).modes) == sorted(modes)


def test_busy_core_pins_itself_and_ends():
    cpu = max(os.sched_getaffinity(0))
    with tm.BusyCore(cpu) as busy:
        pid = busy.proc.pid
        assert busy.proc.poll() is None  # spinning
        assert os.sched_getaffinity(pid) == {cpu}
    assert busy.proc is None
    with pytest.raises(ProcessLookupError):
        os.kill(pid, 0)  # reaped


def test_busy_cpu_is_the_last_allowed(monkeypatch):
    monkeypatch.setattr(tm.os, "sched_getaffinity", lambda pid: {3, 0, 1})
    assert tm.busy_cpu() == 3


def test_busy_cpu_needs_two_cpus(monkeypatch):
    monkeypatch.setattr(tm.os, "sched_getaffinity", lambda pid: {0})
    with pytest.raises(RuntimeError, match="--contention needs two CPUs at least"):
        tm.busy_cpu()
