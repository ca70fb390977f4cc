"""Worker errors, deaths, timeouts and every way a loader ends: no process or segment left."""

from __future__ import annotations

import gc
import os
import re
import signal
import subprocess
import sys
import textwrap
import time

import flambeau_core as fc
import flambeau_data as data
import pytest
from conftest import assert_no_leaks, make_xy, shm_names
from flambeau_data import DataLoader, TensorDataset


class Failing(data.Dataset):
    """Raises `exc` at index `bad`."""

    def __init__(self, bad, exc):
        self.bad, self.exc = bad, exc

    def __len__(self):
        return 20

    def __getitem__(self, i):
        if i == self.bad:
            raise self.exc
        return fc.tensor([float(i)] * 4)


def test_worker_exception_is_reraised_with_traceback(no_leaks):
    loader = DataLoader(Failing(9, ValueError("bad sample 9")), batch_size=2, num_workers=2)
    got = []
    with pytest.raises(ValueError) as info:
        for b in loader:
            got.append(b.tolist()[0][0])
    msg = str(info.value)
    assert "Caught ValueError in DataLoader worker process 0" in msg
    assert "Original Traceback (most recent call last)" in msg
    assert "bad sample 9" in msg and "__getitem__" in msg
    assert got == [0.0, 2.0, 4.0, 6.0]  # batches before the failing one arrive, in order


def test_worker_keyerror_and_odd_exception_types(no_leaks):
    with pytest.raises(KeyError, match="Caught KeyError in DataLoader worker process 1"):
        list(DataLoader(Failing(3, KeyError("k")), batch_size=2, num_workers=2))

    class NeedsTwoArgs(Exception):
        def __init__(self, a, b):
            super().__init__(a, b)

    with pytest.raises(RuntimeError, match="Caught NeedsTwoArgs in DataLoader worker process 0"):
        list(DataLoader(Failing(0, NeedsTwoArgs(1, 2)), batch_size=2, num_workers=2))


def test_worker_init_fn_error(no_leaks):
    def bad_init(worker_id):
        raise OSError(f"cannot open shard {worker_id}")

    with pytest.raises(OSError, match=r"(?s)Caught OSError in DataLoader worker process 0.*cannot open shard 0"):
        list(DataLoader(Failing(-1, None), batch_size=2, num_workers=2, worker_init_fn=bad_init))


class Killer(data.Dataset):
    def __init__(self, how):
        self.how = how

    def __len__(self):
        return 40

    def __getitem__(self, i):
        if i == 10 and data.get_worker_info() is not None:
            if self.how == "exit":
                os._exit(7)
            os.kill(os.getpid(), signal.SIGKILL)
        return i


@pytest.mark.parametrize(
    "how,code",
    [("exit", "exited unexpectedly with exit code 7"), ("kill", "was killed by signal SIGKILL (Killed)")],
)
def test_dead_worker_is_detected(no_leaks, how, code):
    start = time.monotonic()
    with pytest.raises(RuntimeError) as info:
        list(DataLoader(Killer(how), batch_size=5, num_workers=2))
    msg = str(info.value)
    # The worker, its signal or exit code, and the batch it was loading (index 10 is in batch 2, worker 0's).
    assert re.search(r"worker 0 \(pid \d+\) " + re.escape(code), msg), msg
    assert "while loading batch 2 (sample indices [10, 11, 12, 13, 14])" in msg
    assert "num_workers=0" not in msg  # re-running it in the main process would kill that process too
    assert time.monotonic() - start < 5


def test_timeout(no_leaks):
    class Slow(data.Dataset):
        def __len__(self):
            return 4

        def __getitem__(self, i):
            time.sleep(0.6 if i == 2 else 0)
            return i

    with pytest.raises(RuntimeError, match=r"timed out after 0.3 seconds"):
        list(DataLoader(Slow(), batch_size=2, num_workers=1, timeout=0.3))


def test_deleted_mid_epoch(no_leaks):
    _, _, x, y = make_xy(200)
    loader = DataLoader(TensorDataset(x, y), batch_size=4, num_workers=2, prefetch_factor=4)
    it = iter(loader)
    first = next(it)
    time.sleep(0.1)  # let the workers fill the queue with unreceived batches
    del it
    assert_no_leaks()
    assert first[1].tolist() == [0, 1, 2, 3]


def test_garbage_collected_in_a_cycle(no_leaks):
    _, _, x, y = make_xy(100)
    it = iter(DataLoader(TensorDataset(x, y), batch_size=4, num_workers=2))
    next(it)
    holder = {"it": it}
    holder["self"] = holder
    del it, holder
    gc.collect()
    assert_no_leaks()


def test_exhaustion_and_persistent_deletion(no_leaks):
    _, _, x, y = make_xy(20)
    loader = DataLoader(TensorDataset(x, y), batch_size=4, num_workers=2)
    assert len(list(loader)) == 5
    assert_no_leaks()  # exhausted: workers are gone without deleting anything
    persistent = DataLoader(TensorDataset(x, y), batch_size=4, num_workers=2, persistent_workers=True)
    assert len(list(persistent)) == 5 and len(list(persistent)) == 5
    del persistent


def test_segments_left_by_a_killed_worker_are_removed(no_leaks):
    # A worker killed after writing its segment but before sending it: shutdown removes the file.
    class WritesThenDies(data.Dataset):
        def __len__(self):
            return 8

        def __getitem__(self, i):
            info = data.get_worker_info()
            if i == 4 and info is not None:
                from flambeau_data import _shm, _worker

                _shm.pack(fc.tensor([1.0]), f"{_worker._segment_prefix}{info.id}_999")
                os.kill(os.getpid(), signal.SIGKILL)
            return i

    with pytest.raises(RuntimeError, match=r"was killed by signal SIGKILL .* \(sample indices \[4, 5\]\)"):
        list(DataLoader(WritesThenDies(), batch_size=2, num_workers=2))


def test_interpreter_exit_leaves_nothing_and_prints_no_warning(tmp_path):
    script = tmp_path / "run.py"
    script.write_text(
        textwrap.dedent(
            """
            import os, sys
            import flambeau_core as fc
            from flambeau_data import DataLoader, TensorDataset
            x = fc.tensor([[float(i)] * 8 for i in range(64)])
            ds = TensorDataset(x)
            persistent = DataLoader(ds, batch_size=4, num_workers=2, persistent_workers=True)
            assert len(list(persistent)) == 16
            it = iter(DataLoader(ds, batch_size=4, num_workers=2, prefetch_factor=4))
            next(it)
            workers = persistent._iterator._pool.workers + it._pool.workers
            print(os.getpid(), " ".join(str(w.pid) for w in workers), flush=True)
            # exit with both loaders alive: one mid-epoch, one persistent
            """
        )
    )
    flags = ["-S"] if sys.flags.no_site else []
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    proc = subprocess.run(
        [sys.executable, *flags, "-W", "default", str(script)], env=env, capture_output=True, text=True, timeout=60
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stderr == ""  # no resource_tracker warning, no worker traceback
    main_pid, *pids = [int(p) for p in proc.stdout.split()]
    assert len(pids) == 4
    time.sleep(0.1)
    import psutil

    assert not [p for p in pids if psutil.pid_exists(p) and psutil.Process(p).status() != psutil.STATUS_ZOMBIE]
    assert not shm_names(main_pid)


def test_workers_exit_and_clean_up_when_the_main_process_is_killed(tmp_path):
    script = tmp_path / "killed.py"
    script.write_text(
        textwrap.dedent(
            """
            import os, signal, time
            import flambeau_core as fc
            from flambeau_data import DataLoader, TensorDataset
            ds = TensorDataset(fc.zeros(400, 16))
            it = iter(DataLoader(ds, batch_size=4, num_workers=2, prefetch_factor=8))
            next(it)
            time.sleep(0.2)  # the workers fill the queue with batches nobody will receive
            print(" ".join(str(w.pid) for w in it._pool.workers), it._pool.prefix, flush=True)
            os.kill(os.getpid(), signal.SIGKILL)
            """
        )
    )
    flags = ["-S"] if sys.flags.no_site else []
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(p for p in sys.path if p))
    proc = subprocess.run([sys.executable, *flags, str(script)], env=env, capture_output=True, text=True, timeout=60)
    assert proc.returncode == -signal.SIGKILL
    *pids, prefix = proc.stdout.split()
    import psutil

    deadline = time.monotonic() + 5
    while time.monotonic() < deadline:
        alive = [
            p for p in map(int, pids) if psutil.pid_exists(p) and psutil.Process(p).status() != psutil.STATUS_ZOMBIE
        ]
        left = [n for n in shm_names() if n.startswith(prefix)]
        if not alive and not left:
            break
        time.sleep(0.05)
    assert not alive and not left


class KilledOnSecondBatch(data.Dataset):
    """Worker 0 is killed on its second batch (index 10, batch 2) under flambeau's and torch's loaders."""

    def __len__(self):
        return 40

    def __getitem__(self, i):
        import torch

        if i == 10 and (data.get_worker_info() is not None or torch.utils.data.get_worker_info() is not None):
            os.kill(os.getpid(), signal.SIGKILL)
        return i


def _first_error(loader):
    """The batches before the error, and the error's type and message (the iterator is gone on return)."""
    got = []
    try:
        it = iter(loader)
        time.sleep(0.5)  # a slow consumer: worker 0 has sent batch 0 and died on batch 2 before it is asked
        for b in it:  # for the next one (when batch 0 is taken)
            got.append(b.tolist())
    except Exception as e:  # noqa: BLE001 (its type is compared)
        error = (type(e), str(e))
    else:
        raise AssertionError("no error")
    del it
    gc.collect()
    return got, error


def test_a_task_for_a_worker_that_died_meanwhile(no_leaks):
    import torch

    got, ours = _first_error(DataLoader(KilledOnSecondBatch(), batch_size=5, num_workers=2))
    previous = signal.getsignal(signal.SIGCHLD)
    try:
        want, theirs = _first_error(torch.utils.data.DataLoader(KilledOnSecondBatch(), batch_size=5, num_workers=2))
    finally:
        signal.signal(signal.SIGCHLD, previous)  # torch's loader installs a handler of its own
    # Sending worker 0 its next task when batch 0 is taken must not fail on the dead worker's pipe: the
    # death is reported on the batch it was loading, after the batches before it.
    assert ours[0] is theirs[0] is RuntimeError
    assert got == [[0, 1, 2, 3, 4], [5, 6, 7, 8, 9]]
    assert want == got[: len(want)]  # torch's SIGCHLD handler raises as soon as the worker dies
    assert "worker 0" in ours[1] and "SIGKILL" in ours[1] and "(sample indices [10, 11, 12, 13, 14])" in ours[1]
