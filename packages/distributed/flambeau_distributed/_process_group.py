"""``ProcessGroup``: a communicator and the one thread that runs its operations in call order.

Note [One communication thread]: every collective of a process group, blocking
or not, runs on one thread of its own, in the order the calls were made. MPI
needs collectives issued in the same order on every rank; with one FIFO
thread that order is the program order, whatever mix of ``async_op`` calls
(DDP's bucket all-reduces, fired from autograd hooks during backward) and
blocking calls a program makes. mpi4py releases the GIL inside MPI calls, so
the thread communicates while backward (which runs without the GIL) computes.
A blocking call is the same operation followed by ``wait()``. A call that only
posts a nonblocking request runs on its caller's thread when nothing is
queued (Note [Posting on the caller's thread]): the order holds all the same.

Point-to-point messages are posted as nonblocking MPI requests by that thread
(``Isend``/``Irecv``) and completed by ``wait()``: two ranks that both send
before they receive do not deadlock, as with MPI.

Note [Metadata check]: with checks on (the default; ``FLAMBEAU_DISTRIBUTED_DEBUG=OFF``
turns them off), a collective first all-gathers each rank's (op, dtype, shape,
root, reduce op) and every rank compares them. On a mismatch every rank raises
the same error naming the ranks that differ, before any data moves, so the
group stays usable and no rank hangs. The cost is one small all-gather per
collective (a few tens of microseconds on one machine: measured by
benchmarks/ddp.py); DistributedDataParallel's bucket all-reduces skip it (it
checks the parameters' shapes across ranks once, at construction).
"""

from __future__ import annotations

import collections
import datetime
import os
import pickle
import queue
import sys
import threading
import time
from collections.abc import Callable
from typing import Any

from flambeau_core import FlambeauError

from flambeau_distributed._backend import (
    _mpi,
)
from flambeau_distributed._work import Work


class ProcessGroup:
    """A group of ranks over an MPI communicator (the default group is every process of ``mpirun``).

    :func:`new_group` returns one; ``rank`` and ``world_size`` are attributes
    (PyTorch's ``ProcessGroup`` has ``rank()`` and ``size()`` methods; ``size()``
    is here too). ``dist.group.WORLD`` is None, standing for the default group,
    where PyTorch's is the default group's object.

    Example:
        >>> import flambeau as fb
        >>> dist = fb.distributed
        >>> dist.init_process_group("mpi")  # without mpirun: a world of one rank
        >>> pg = dist.new_group([0])
        >>> isinstance(pg, dist.ProcessGroup), pg.rank, pg.size()
        (True, 0, 1)
        >>> dist.destroy_process_group()
    """

    def __init__(self, comm, timeout: datetime.timedelta, check: bool, global_ranks: list[int] | None = None) -> None:
        self.comm = comm
        self.rank = comm.Get_rank()
        self.world_size = comm.Get_size()
        # the default group's rank of each member (collectives take those, as PyTorch's)
        self.global_ranks = list(global_ranks) if global_ranks is not None else list(range(self.world_size))
        self.timeout = timeout
        self.check = check
        self._queue: queue.SimpleQueue = queue.SimpleQueue()
        self._lock = threading.Lock()
        self._pending = 0  # calls queued to the communication thread and not finished
        self._thread = threading.Thread(target=self._loop, name="flambeau-distributed-comm", daemon=True)
        self._thread.start()
        self._inflight: tuple[str, float] | None = None  # (name, deadline) of a call run on its caller's thread
        self._closed = threading.Event()
        self._watchdog = threading.Thread(target=self._watch, name="flambeau-distributed-watchdog", daemon=True)
        self._watchdog.start()
        # Note [Posting on the caller's thread]: the posted requests in flight, and the thread driving them
        self._posted_cv = threading.Condition()
        self._posted: collections.deque = collections.deque()
        self._progress_thread: threading.Thread | None = None

    def _watch(self) -> None:
        """A blocking call made on the caller's thread can't raise a timeout: past it, abort every rank."""
        period = min(1.0, max(0.05, self.timeout.total_seconds() / 10))
        while not self._closed.wait(period):
            inflight = self._inflight
            if inflight is not None and time.monotonic() > inflight[1]:
                sys.stderr.write(
                    f"[{inflight[0]}] rank {self.rank}: timed out after {self.timeout.total_seconds():g} s waiting for "
                    "the other ranks (did every rank make the same calls in the same order?); aborting every rank "
                    "(MPI_Abort)\n"
                )
                sys.stderr.flush()
                self.comm.Abort(1)

    def size(self) -> int:
        """The number of ranks in the group (as PyTorch's ``ProcessGroup.size()``).

        Example:
        >>> import flambeau as fb
        >>> dist = fb.distributed
        >>> dist.init_process_group("mpi")  # without mpirun: a world of one rank
        >>> dist.new_group([0]).size()
        1
        >>> dist.destroy_process_group()
        """
        return self.world_size

    def _loop(self) -> None:
        while True:
            item = self._queue.get()
            if item is None:
                return
            work, fn = item
            self._run(work, fn)
            with self._lock:
                self._pending -= 1

    @staticmethod
    def _run(work: Work, fn: Callable[[Work], Any]) -> None:
        start = time.perf_counter()
        try:
            result = fn(work)
        except BaseException as e:  # noqa: BLE001 (handed to wait())
            work._seconds = time.perf_counter() - start
            work._set(exc=e)
        else:
            work._seconds = time.perf_counter() - start
            work._set(result)

    def submit(self, name: str, fn: Callable[[Work], Any], async_op: bool) -> Work | None:
        """Runs ``fn(work)`` in the group's call order (Note [One communication thread]); flambeau's, not PyTorch's.

        The collectives are built on it: ``fn`` makes the MPI calls, its return
        value is the Work's ``result()``, an exception it raises is raised by
        ``wait()`` (``name`` names the call in messages). ``async_op=True``
        returns the :class:`Work` at once; otherwise it waits and returns None.

        Example:
        >>> import flambeau as fb
        >>> dist = fb.distributed
        >>> dist.init_process_group("mpi")  # without mpirun: a world of one rank
        >>> pg = dist.new_group([0])
        >>> work = pg.submit("answer", lambda work: 42, async_op=True)
        >>> work.result()
        [42]
        >>> print(pg.submit("answer", lambda work: 42, async_op=False))
        None
        >>> dist.destroy_process_group()
        """
        work = Work(self, name)
        with self._lock:
            # A blocking call with nothing queued runs on the calling thread (no hand-off to
            # wake up); holding the lock keeps any later call behind it, so the order holds.
            if not async_op and self._pending == 0:
                # the watchdog aborts the job if this never returns (a rank that never joins)
                self._inflight = (name, time.monotonic() + self.timeout.total_seconds())
                try:
                    self._run(work, fn)
                finally:
                    self._inflight = None
                work.wait()
                return None
            self._pending += 1
            self._queue.put((work, fn))
        if async_op:
            return work
        work.wait()
        return None

    def post(self, name: str, fn: Callable[[Work], Any]) -> Work:
        """Runs ``fn(work)``, which posts a nonblocking MPI request (``work._request``), in the group's call order.

        Note [Posting on the caller's thread]: with nothing queued, ``fn`` runs
        on the calling thread (holding the lock keeps any later call behind
        it), else on the communication thread after what is queued: no thread
        has to be woken up to start it (a woken thread on a machine whose
        cores all compute may wait a whole scheduler slice, a millisecond or
        more, before it runs). MPI moves a nonblocking collective's data only
        inside MPI calls, so a progress thread of the group Tests the posted
        requests in flight, oldest first, sleeping between Tests as _finish
        does (Note [Waiting without spinning]) and waiting on a condition
        when none is in flight; ``wait()`` and ``is_completed()`` Test too.
        DistributedDataParallel's bucket all-reduces (Note [DDP buckets]) go
        this way. Flambeau's, not PyTorch's.

        Example:
        >>> import flambeau as fb
        >>> dist = fb.distributed
        >>> dist.init_process_group("mpi")  # without mpirun: a world of one rank
        >>> pg = dist.new_group([0])
        >>> t = fb.ones(3)
        >>> def start(work):
        ...     work._request = pg.comm.Iallreduce(dist._c10d._mpi().IN_PLACE, [memoryview(t), dist._c10d._mpi().FLOAT])
        >>> pg.post("all_reduce", start).wait()
        True
        >>> t.tolist()
        [1.0, 1.0, 1.0]
        >>> dist.destroy_process_group()
        """
        work = Work(self, name)

        def timed(w: Work) -> Any:
            w._posted_at = time.perf_counter()
            return fn(w)

        with self._lock:
            if self._pending == 0:
                self._run(work, timed)
            else:
                self._pending += 1
                self._queue.put((work, timed))
        with self._posted_cv:
            if self._progress_thread is None:
                self._progress_thread = threading.Thread(
                    target=self._drive, name="flambeau-distributed-progress", daemon=True
                )
                self._progress_thread.start()
            self._posted.append(work)
            self._posted_cv.notify()
        return work

    def _drive(self) -> None:
        """The progress thread: Tests the oldest posted request in flight until it completes (Note [Posting on
        the caller's thread]), sleeping between Tests.

        Note [Progress thread's sleeps]: 50 us after a post, then twice as long each time up to 0.2 ms
        (_finish's 10 us to 0.1 ms woke it twice as often). Each wake-up takes the GIL and, on a machine
        whose cores all compute (2 ranks on 2 cores), preempts backward's thread: ~25 us of CPU each, a
        millisecond a step at 45 wake-ups. Backward's blocks between two gradients last longer than 0.2 ms,
        so a request still advances several times while backward computes, and once backward is over
        ``wait()`` Tests on its own, as often as _finish. Measured on the 2-rank MLP of benchmarks/bench_ddp.py
        (3 interleaved runs each, on a loaded machine): 34-35 preemptions of backward's thread a step instead
        of 44-46, 8.6-9.5 ms of CPU a step per rank instead of 9.4-10.5, exposed all-reduce 1.0-1.4 ms instead
        of 2.1-3.0.
        """
        while True:
            with self._posted_cv:
                while not self._posted:
                    self._posted_cv.wait()
                work = self._posted[0]
            if work is None:
                return
            delay = _PROGRESS_SLEEP[0]
            while not work.is_completed() and not self._closed.is_set():
                time.sleep(delay)
                delay = min(delay * 2, _PROGRESS_SLEEP[1])
            with self._posted_cv:
                self._posted.popleft()

    def shutdown(self) -> bool:
        """Stops the threads; False if a call is still stuck in MPI (a rank that never joined).

        :func:`destroy_process_group` calls it (and then frees the communicator);
        flambeau's, not PyTorch's.

        Example:
        >>> import flambeau as fb
        >>> dist = fb.distributed
        >>> dist.init_process_group("mpi")  # without mpirun: a world of one rank
        >>> pg = dist.new_group([0])
        >>> pg.shutdown()
        True
        >>> dist.destroy_process_group()
        """
        self._closed.set()
        self._queue.put(None)
        with self._posted_cv:
            self._posted.append(None)
            self._posted_cv.notify()
        self._thread.join(timeout=self.timeout.total_seconds())
        return not self._thread.is_alive()

    # Note [Metadata check]
    def check_same(self, name: str, meta: tuple) -> None:
        """Raises unless every rank passed the same ``meta``: Note [Metadata check] (flambeau's, not PyTorch's).

        A collective of the group; each rank passes a picklable tuple
        describing its call (op, dtype, shape, ...). On a mismatch every rank
        raises the same error naming the ranks that differ (a TypeError when
        only the dtypes, ``meta[1]``, differ; else a FlambeauError).

        Example:
        >>> import flambeau as fb
        >>> dist = fb.distributed
        >>> dist.init_process_group("mpi")  # without mpirun: a world of one rank
        >>> pg = dist.new_group([0])
        >>> pg.check_same("my_collective", ("my_collective", "float32", (2, 3)))  # one rank: always the same
        >>> dist.destroy_process_group()
        """
        mine = pickle.dumps(meta)
        if len(mine) > _META_BYTES - 4:
            mine = pickle.dumps((meta[0], "?", ("a description too long to compare",)))
        send = bytearray(_META_BYTES)
        send[:4] = len(mine).to_bytes(4, "little")
        send[4 : 4 + len(mine)] = mine
        recv = bytearray(_META_BYTES * self.world_size)
        MPI = _mpi()
        _finish(self.comm.Iallgather([send, MPI.BYTE], [recv, MPI.BYTE]))
        metas = []
        for r in range(self.world_size):
            block = recv[r * _META_BYTES : (r + 1) * _META_BYTES]
            metas.append(pickle.loads(bytes(block[4 : 4 + int.from_bytes(block[:4], "little")])))
        ref = metas[0]
        bad = [r for r, m in enumerate(metas) if m != ref]
        if not bad:
            return
        lines = ", ".join(f"rank {r} has {_show(m)}" for r, m in enumerate(metas))
        names = ", ".join(str(r) for r in bad)
        msg = (
            f"[{name}] rank{'s' if len(bad) > 1 else ''} {names} called it with arguments that differ from rank 0's "
            f"({lines}); this is rank {self.rank}"
        )
        if all(m[0] == ref[0] and m[2:] == ref[2:] for m in metas):  # only dtypes differ
            raise TypeError(msg)
        raise FlambeauError(msg)


_META_BYTES = 512
# Note [Progress thread's sleeps]: the progress thread's first sleep and its longest
_PROGRESS_SLEEP = (5e-5, 2e-4)
# FLAMBEAU_DISTRIBUTED_WAIT=mpi: let MPI wait (its busy-polling), for comparison.
_WAIT_IN_MPI = os.environ.get("FLAMBEAU_DISTRIBUTED_WAIT", "").lower() == "mpi"


def _finish(request: Any) -> None:
    """Completes a nonblocking MPI call without spinning a core.

    Note [Waiting without spinning]: a blocking MPI call busy-polls while the
    other ranks are late, taking a core from computation (backward on this
    rank, or another rank when there are more ranks than cores). Polling the
    request (50 µs of spinning, then sleeps growing to 0.1 ms) leaves that
    core free; the cost is at most that much latency per step of the collective.
    """
    if _WAIT_IN_MPI:
        request.Wait()
        return
    if request.Test():
        return
    spin_until = time.perf_counter() + 5e-5
    while time.perf_counter() < spin_until:
        if request.Test():
            return
    delay = 1e-5
    while not request.Test():
        time.sleep(delay)
        delay = min(delay * 2, 1e-4)


def _show(m: tuple) -> str:
    op, dtype, shape, *rest = m
    extra = "".join(f", {x}" for x in rest if x is not None)
    return f"{op}({dtype} {list(shape)}{extra})"
