"""flambeau_data._mp_spawn / start_processes: PyTorch's process launcher and its failures."""

from __future__ import annotations

import os
import signal
import tempfile

import flambeau_core as fc
import pytest
from flambeau_core.testing import asan_exit_code, running_under_asan
from flambeau_data import multiprocessing as fmp


def _spawn_files() -> set[str]:
    d = tempfile.gettempdir()
    return {n for n in os.listdir(d) if n.startswith("flambeau_spawn_")}


@pytest.fixture
def no_spawn_files(no_leaks):
    before = _spawn_files()
    yield
    assert _spawn_files() <= before


def _write_rank(i, out):
    out[i] = float(i + 1)


def _raise_in_one(i, bad):
    if i == bad:
        raise ValueError(f"boom in process {i}")
    import time

    time.sleep(30)  # the others are terminated when one fails


def _kill_self(i, sig):
    import faulthandler

    faulthandler.disable()  # no fault report on the test's output
    os.kill(os.getpid(), sig)


def _exit_code(i, code):
    os._exit(code)


def _exit_zero(i):
    raise SystemExit(0)


def test_spawn_runs_each_index_and_shares_tensors(no_spawn_files):
    out = fc.zeros(3)
    assert fmp.spawn(_write_rank, args=(out,), nprocs=3) is None
    assert out.tolist() == [1.0, 2.0, 3.0]


@pytest.mark.parametrize("method", ["fork", "spawn"])
def test_a_childs_exception_is_raised_with_its_traceback(no_spawn_files, method):
    with pytest.raises(fmp.ProcessRaisedException) as info:
        fmp.start_processes(_raise_in_one, args=(1,), nprocs=2, start_method=method)
    msg = str(info.value)
    assert "-- Process 1 terminated with the following error:" in msg
    assert "Traceback (most recent call last):" in msg and "ValueError: boom in process 1" in msg
    assert "_raise_in_one" in msg
    assert info.value.error_index == 1 and info.value.pid > 0


@pytest.mark.parametrize("method", ["fork", "spawn"])
def test_a_child_killed_by_a_signal_is_named(no_spawn_files, method):
    if running_under_asan():
        # nox -s sanitize: ASan's SIGSEGV handler turns the signal into a report and its own exit code.
        code = asan_exit_code()
        with pytest.raises(fmp.ProcessExitedException, match=f"process 0 terminated with exit code {code}") as info:
            fmp.start_processes(_kill_self, args=(signal.SIGSEGV,), nprocs=1, start_method=method)
        assert info.value.signal_name is None and info.value.exit_code == code
        return
    with pytest.raises(fmp.ProcessExitedException, match="process 0 terminated with signal SIGSEGV") as info:
        fmp.start_processes(_kill_self, args=(signal.SIGSEGV,), nprocs=1, start_method=method)
    assert info.value.signal_name == "SIGSEGV" and info.value.exit_code == -signal.SIGSEGV


def test_a_child_exit_code_is_named(no_spawn_files):
    with pytest.raises(fmp.ProcessExitedException, match="process 0 terminated with exit code 3") as info:
        fmp.start_processes(_exit_code, args=(3,), start_method="fork")
    assert info.value.exit_code == 3 and info.value.signal_name is None


def test_join_false_returns_a_context(no_spawn_files):
    out = fc.zeros(2).share_memory_()  # forked children write into it
    ctx = fmp.start_processes(_write_rank, args=(out,), nprocs=2, join=False, start_method="fork")
    assert isinstance(ctx, fmp.ProcessContext) and len(ctx.pids()) == 2
    while not ctx.join():
        pass
    assert ctx.join() and out.tolist() == [1.0, 2.0]


def test_system_exit_zero_is_success(no_spawn_files):
    fmp.start_processes(_exit_zero, nprocs=1, start_method="fork")


def test_spawn_warns_for_another_start_method(no_spawn_files):
    with pytest.warns(FutureWarning, match="only supports start_method=spawn"):
        fmp.spawn(_exit_zero, nprocs=1, start_method="fork")


def test_bad_arguments(no_spawn_files):
    with pytest.raises(ValueError, match=r"\[spawn\] nprocs must be a positive int, got 0"):
        fmp.spawn(_exit_zero, nprocs=0)
    with pytest.raises(TypeError, match=r"\[spawn\] args must be a tuple, got list"):
        fmp.spawn(_write_rank, args=[1])
    with pytest.raises(TypeError, match=r"\[spawn\] fn must be callable, got int"):
        fmp.spawn(3)
    with pytest.raises(ValueError):
        fmp.start_processes(_exit_zero, start_method="no-such-method")


def test_exceptions_pickle():
    import pickle

    e = pickle.loads(pickle.dumps(fmp.ProcessExitedException("m", 1, 2, -11, "SIGSEGV")))
    assert (e.error_index, e.pid, e.exit_code, e.signal_name, str(e)) == (1, 2, -11, "SIGSEGV", "m")
