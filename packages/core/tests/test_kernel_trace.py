"""Note [Kernel trace]: core's debug recorder of the ops reaching a device kernel, and _has_kernel."""

from __future__ import annotations

import threading

import flambeau_core as fc
import pytest
from flambeau_core import _C
from flambeau_core.testing import kernel_trace


def trace(fn):
    with kernel_trace() as rows:
        fn()
    return rows


def test_records_top_level_device_kernels():
    a = fc.randn(3, 4)
    rows = trace(lambda: (a * 2).t().sum())
    assert ["mul", "cpu", "own"] in rows
    assert ["sum", "cpu", "own"] in rows
    assert ["transpose", "cpu", "Generic"] in rows
    assert rows == sorted(rows)


def test_ops_inside_a_device_kernel_are_not_recorded():
    # clone's CPU kernel copies with copy_ inside itself: only clone is recorded.
    a = fc.randn(5, 5).t()
    names = {r[0] for r in trace(lambda: a.clone())}
    assert "clone" in names
    assert "copy_" not in names


def test_only_the_starting_thread_records():
    a = fc.randn(4)

    def run():
        t = threading.Thread(target=lambda: fc.exp(a))
        t.start()
        t.join()
        fc.neg(a)

    names = {r[0] for r in trace(run)}
    assert "neg" in names and "exp" not in names


def test_off_by_default_and_after_stop():
    fc.neg(fc.ones(2))
    assert _C._kernel_trace_stop() == []
    assert trace(lambda: None) == []


def test_has_kernel():
    assert _C._has_kernel("add", "CPU")
    assert _C._has_kernel("view", "Generic") and not _C._has_kernel("view", "CPU")
    assert not _C._has_kernel("not_an_op", "CPU")
    assert "add" in _C._registered_ops() and "view" in _C._registered_ops()
    with pytest.raises(ValueError, match=r"\[_has_kernel\] unknown dispatch key 'XLA'"):
        _C._has_kernel("add", "XLA")
