"""Shared helpers: plain-Python views of batches, and the no-leak check."""

from __future__ import annotations

import multiprocessing.forkserver
import multiprocessing.resource_tracker
import os
import time

import flambeau_core as fc
import psutil
import pytest
from flambeau_data import _shm


def dtype_name(dtype) -> str:
    return str(dtype).split(".")[-1]


def to_py(obj):
    """A batch as plain Python (tensors as ("T", dtype, shape, values)), for comparing with an oracle."""
    if isinstance(obj, fc.Tensor) or type(obj).__module__.startswith("torch"):
        if hasattr(obj, "shape") and not isinstance(obj, (int, float, str)):
            return ("T", dtype_name(obj.dtype), tuple(obj.shape), obj.tolist())
    if isinstance(obj, dict):
        return {k: to_py(v) for k, v in obj.items()}
    if isinstance(obj, tuple) and hasattr(obj, "_fields"):
        return (type(obj).__name__, tuple(to_py(v) for v in obj))
    if isinstance(obj, (list, tuple)):
        return (type(obj).__name__, [to_py(v) for v in obj])
    return obj


def make_xy(n: int, features: int = 3):
    """(x, y) rows as plain lists and as flambeau tensors: x[i][j] = 10 i + j, y[i] = i."""
    xs = [[float(10 * i + j) for j in range(features)] for i in range(n)]
    ys = list(range(n))
    return xs, ys, fc.tensor(xs, dtype=fc.float32), fc.tensor(ys, dtype=fc.int64)


def shm_names(pid: int | None = None) -> set[str]:
    """Our segments in /dev/shm: the loader segments of process `pid` (this one by default), and
    any tensor segment. Other people's loaders running at the same time are not counted."""
    pid = os.getpid() if pid is None else pid
    return {n for n in os.listdir(_shm.SHM_DIR) if n.startswith((f"fbdata_{pid}_", "fbtensor_"))}


def _children() -> list[psutil.Process]:
    # Python's own helpers live until exit by design: the resource tracker and the fork server.
    tracker = getattr(multiprocessing.resource_tracker._resource_tracker, "_pid", None)
    server = getattr(multiprocessing.forkserver._forkserver, "_forkserver_pid", None)
    return [p for p in psutil.Process().children(recursive=True) if p.pid not in (tracker, server)]


def assert_no_leaks(timeout: float = 5.0, before: set[str] = frozenset()) -> None:
    """No worker process and no new shared-memory segment of ours is left."""
    deadline = time.monotonic() + timeout
    while True:
        kids = [p for p in _children() if p.is_running() and p.status() != psutil.STATUS_ZOMBIE]
        names = shm_names() - before
        if not kids and not names:
            return
        if time.monotonic() > deadline:
            raise AssertionError(f"leaked: processes {[p.pid for p in kids]}, /dev/shm entries {sorted(names)}")
        time.sleep(0.02)


@pytest.fixture
def no_leaks():
    """Fails the test if it leaves a child process or a segment behind."""
    before = shm_names()
    yield
    import gc

    gc.collect()
    assert_no_leaks(before=before)
