"""Future (torch.futures.Future's shape): values, chaining, errors, in one process."""

import threading

import pytest
from flambeau_distributed.futures import Future


def test_then_chains_values_and_runs_on_completion():
    fut = Future()
    calls = []
    chained = fut.then(lambda f: f.value() + 1).then(lambda f: f.value() * 10)
    fut.add_done_callback(lambda f: calls.append(f.value()))
    assert not fut.done() and not chained.done()
    fut.set_result(4)
    assert fut.done() and chained.wait() == 50 and calls == [4]
    # a callback added after completion runs at once
    fut.add_done_callback(lambda f: calls.append("late"))
    assert calls == [4, "late"]
    assert fut.then(lambda f: f.value() - 1).value() == 3


def test_wait_blocks_until_another_thread_sets_it():
    fut = Future()
    threading.Timer(0.05, fut.set_result, args=("done",)).start()
    assert fut.wait() == "done"


def test_errors():
    fut = Future()
    with pytest.raises(RuntimeError, match=r"\[Future.value\] the Future is not done yet"):
        fut.value()
    chained = fut.then(lambda f: 1 / 0)
    fut.set_result(1)
    with pytest.raises(ZeroDivisionError):
        chained.wait()
    with pytest.raises(RuntimeError, match="already been set"):
        fut.set_result(2)
    failed = Future()
    after = failed.then(lambda f: f.value())
    failed.set_exception(ValueError("boom"))
    with pytest.raises(ValueError, match="boom"):
        failed.value()
    with pytest.raises(ValueError, match="boom"):
        after.wait()
    with pytest.raises(TypeError, match=r"\[Future.set_exception\] expected an exception, got str"):
        Future().set_exception("boom")
