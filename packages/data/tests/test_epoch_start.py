"""Workers started every epoch: tasks written before the fork, the epoch's end without waiting for the
workers' exit (they are still reaped), and ring slots kept from one epoch to the next. torch's DataLoader
is the oracle for batches, their order and the errors' types."""

from __future__ import annotations

import ctypes
import multiprocessing.util
import os
import signal
import subprocess
import sys
import time

import flambeau_core as fc
import flambeau_data as data
import numpy as np
import psutil
import pytest
import torch
from conftest import assert_no_leaks, shm_names, to_py
from flambeau_data import DataLoader


class Images:
    """The usual map-style Dataset: ``self.x[i], self.y[i]``; ``width`` (read in ``__getitem__``) can change."""

    def __init__(self, x, y):
        self.x, self.y, self.width = x, y, None

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        if self.width is not None:
            return self.x[i][..., : self.width], self.y[i]
        return self.x[i], self.y[i]


def _images(n=61):
    rng = np.random.default_rng(3)
    x = rng.standard_normal((n, 1, 6, 6)).astype(np.float32)
    y = rng.integers(0, 10, size=n).astype(np.int64)
    return Images(fc.tensor(x), fc.tensor(y)), Images(torch.tensor(x), torch.tensor(y))


class EpochBatches:
    """A batch sampler with a new shuffled order every epoch, the same for both loaders."""

    def __init__(self, n, batch_size, seed=0):
        self.n, self.batch_size, self.epoch, self.seed = n, batch_size, 0, seed

    def __len__(self):
        return -(-self.n // self.batch_size)

    def __iter__(self):
        order = np.random.default_rng(self.seed + self.epoch).permutation(self.n).tolist()
        self.epoch += 1
        for i in range(0, self.n, self.batch_size):
            yield order[i : i + self.batch_size]


def _mapping_range(mapping):
    start = ctypes.addressof(ctypes.c_char.from_buffer(mapping))
    return start, start + len(mapping)


def test_epochs_match_torch_and_reuse_the_last_epochs_free_slots(no_leaks):
    ours_ds, torch_ds = _images()
    ours = DataLoader(ours_ds, batch_sampler=EpochBatches(61, 8), num_workers=2)
    theirs = torch.utils.data.DataLoader(torch_ds, batch_sampler=EpochBatches(61, 8), num_workers=2)
    kept_ours = kept_theirs = None
    for epoch in range(3):
        cached = [_mapping_range(m) for _, m in ours._slot_cache]
        got, want = [], []
        for i, (b, t) in enumerate(zip(ours, theirs, strict=True)):
            if epoch > 0 and i == 0:
                # The epoch's first batch is written in a slot kept mapped from the last epoch.
                ptr = b[0].data_ptr()
                assert any(lo <= ptr < hi for lo, hi in cached), (ptr, cached)
            got.append(to_py(b))
            want.append(to_py(t))
            if epoch == 0 and i == 2:
                kept_ours, kept_theirs = b, t  # held across the later epochs: its slot must not be reused
        assert got == want
        assert ours._slot_cache  # the free slots wait for the next epoch
        assert to_py(kept_ours) == to_py(kept_theirs)
    del kept_ours
    ours._slot_cache.clear()


def test_dataset_changed_between_epochs_reaches_the_new_workers(no_leaks):
    # Workers forked at each iter() see the dataset as it is then, larger or smaller samples included
    # (a kept slot too small for a batch is replaced by a larger one).
    ours_ds, torch_ds = _images(40)
    ours = DataLoader(ours_ds, batch_size=16, num_workers=2)
    theirs = torch.utils.data.DataLoader(torch_ds, batch_size=16, num_workers=2)
    for width in (3, None, 2, 6):
        ours_ds.width = torch_ds.width = width
        assert [to_py(b) for b in ours] == [to_py(b) for b in theirs]


@pytest.mark.parametrize("batch_size,prefetch", [(1000, 10), (20_000, 3)])
def test_tasks_beyond_what_a_pipe_holds_before_the_workers_start(no_leaks, batch_size, prefetch):
    # 1,000 indices a task, 10 a worker: more than the pipes take before the start (the rest follows);
    # 20,000 a task: none is drawn before the start (the workers would inherit their indices).
    n = 100_000
    kwargs = dict(batch_size=batch_size, shuffle=False, num_workers=2, prefetch_factor=prefetch)
    got = [b.tolist() for b in DataLoader(range(n), **kwargs)]
    want = [b.tolist() for b in torch.utils.data.DataLoader(range(n), **kwargs)]
    assert got == want


def _wait_on(fd):
    os.read(fd, 1)


class HeldAtExit:
    """A worker_init_fn whose worker, once told to exit, blocks in its exit until the test writes a byte."""

    def __init__(self):
        self.r, self.w = os.pipe()

    def __call__(self, worker_id):
        multiprocessing.util.Finalize(None, _wait_on, args=(self.r,), exitpriority=100)

    def release(self, n):
        os.write(self.w, b"x" * n)

    def close(self):
        os.close(self.r)
        os.close(self.w)


def _reaped(pids, deadline=10.0):
    """True once none of ``pids`` is a process of ours any more (a zombie still is one)."""
    end = time.monotonic() + deadline
    while time.monotonic() < end:
        alive = []
        for pid in pids:
            try:
                if psutil.Process(pid).ppid() == os.getpid():
                    alive.append(pid)
            except psutil.NoSuchProcess:
                pass
        if not alive:
            return True
        time.sleep(0.01)
    return False


def test_the_epoch_ends_without_waiting_for_the_workers_exit_and_they_are_reaped(no_leaks):
    held = HeldAtExit()
    try:
        ours_ds, torch_ds = _images()
        loader = DataLoader(ours_ds, batch_size=8, num_workers=2, worker_init_fn=held)
        it = iter(loader)
        pids = [w.pid for w in it._pool.workers]
        got = [to_py(b) for b in it]  # StopIteration returns while both workers are held in their exit
        for pid in pids:
            assert psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
        assert got == [to_py(b) for b in torch.utils.data.DataLoader(torch_ds, batch_size=8, num_workers=2)]
        held.release(2)
        assert _reaped(pids)  # neither running nor left a zombie
        assert it._pool.workers[0].exitcode == 0 and it._pool.workers[1].exitcode == 0  # not terminated
        assert_no_leaks()
    finally:
        held.close()


def test_the_interpreters_exit_waits_for_the_reaping(tmp_path):
    # The script's last epoch ends while its workers sit in their exit for a while. The interpreter's exit
    # waits for their reaping (their exit codes are in when the script's own atexit handler runs, which
    # runs after flambeau's and before multiprocessing's, which would terminate them), and nothing is left.
    script = tmp_path / "run.py"
    script.write_text(
        "import atexit, multiprocessing.util, os, time\n"
        "workers = []\n"
        "atexit.register(lambda: print(*(w.exitcode for w in workers), flush=True))\n"
        "import flambeau_core as fc\n"
        "from flambeau_data import DataLoader\n"
        "def slow_exit(worker_id):\n"
        "    multiprocessing.util.Finalize(None, time.sleep, args=(0.5,), exitpriority=100)\n"
        "loader = DataLoader(fc.arange(64.0), batch_size=4, num_workers=2, worker_init_fn=slow_exit)\n"
        "for epoch in range(2):\n"
        "    it = iter(loader)\n"
        "    workers[:] = it._pool.workers\n"
        "    assert [b.tolist() for b in it] == [[float(j) for j in range(i, i + 4)] for i in range(0, 64, 4)]\n"
        "print(os.getpid(), *(w.pid for w in workers), flush=True)\n"
    )
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    proc = subprocess.run([sys.executable, "-W", "default", str(script)], env=env, capture_output=True, text=True)
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""
    pids_line, codes_line = proc.stdout.splitlines()
    main_pid, *pids = (int(p) for p in pids_line.split())
    assert codes_line.split() == ["0", "0"]  # exited by themselves and reaped, not terminated
    assert not [p for p in pids if psutil.pid_exists(p)]
    assert not shm_names(main_pid)


class Failing:
    def __init__(self, how, bad):
        self.how, self.bad = how, bad

    def __len__(self):
        return 24

    def __getitem__(self, i):
        if i == self.bad and (data.get_worker_info() is not None or torch.utils.data.get_worker_info() is not None):
            if self.how == "raise":
                raise ValueError(f"bad sample {i}")
            if self.how == "segfault":
                ctypes.string_at(0)
            if self.how == "hang":
                time.sleep(60)
        return i


def _error(loader):
    try:
        for _ in loader:
            pass
    except Exception as e:  # noqa: BLE001 (the type is what is compared)
        return e
    raise AssertionError("no error")


@pytest.mark.parametrize("bad", [0, 1, 13])  # worker 0's first task, worker 1's first task, a later one
def test_a_worker_that_raises_on_its_first_or_a_later_batch(no_leaks, bad):
    ours = _error(DataLoader(Failing("raise", bad), batch_size=4, num_workers=2))
    theirs = _error(torch.utils.data.DataLoader(Failing("raise", bad), batch_size=4, num_workers=2))
    assert type(ours) is type(theirs) is ValueError
    assert f"bad sample {bad}" in str(ours) and "Traceback" in str(ours)
    first = bad - bad % 4
    assert f"sample indices {list(range(first, first + 4))}" in str(ours)
    # The loader still works afterwards: the next epoch starts new workers.
    assert [b.tolist() for b in DataLoader(range(24), batch_size=4, num_workers=2)] == [
        b.tolist() for b in torch.utils.data.DataLoader(range(24), batch_size=4, num_workers=2)
    ]


def test_a_worker_that_segfaults_on_its_first_batch(no_leaks):
    ours = _error(DataLoader(Failing("segfault", 0), batch_size=4, num_workers=2))
    previous = signal.getsignal(signal.SIGCHLD)
    try:
        theirs = _error(torch.utils.data.DataLoader(Failing("segfault", 0), batch_size=4, num_workers=2))
    finally:
        signal.signal(signal.SIGCHLD, previous)  # torch's loader installs a handler of its own
    assert type(ours) is type(theirs) is RuntimeError
    assert "SIGSEGV" in str(ours) and "sample indices [0, 1, 2, 3]" in str(ours), str(ours)


def test_a_worker_that_hangs_on_its_first_batch_times_out(no_leaks):
    ours = _error(DataLoader(Failing("hang", 0), batch_size=4, num_workers=2, timeout=0.5))
    theirs = _error(torch.utils.data.DataLoader(Failing("hang", 0), batch_size=4, num_workers=2, timeout=0.5))
    assert type(ours) is type(theirs) is RuntimeError
    assert "timed out after 0.5 seconds waiting for batch 0 from worker 0" in str(ours)
    assert "sample indices [0, 1, 2, 3]" in str(ours)
