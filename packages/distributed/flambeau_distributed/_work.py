"""``Work``: the handle of an operation a process group's thread runs (``async_op=True``)."""

from __future__ import annotations

import datetime
import threading
import time
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from flambeau_core import FlambeauError, Tensor

from flambeau_distributed._backend import (
    DistBackendError,
    _mpi,
)
from flambeau_distributed.futures import Future

if TYPE_CHECKING:
    from flambeau_distributed._process_group import ProcessGroup


class Work:
    """The handle of an ``async_op=True`` call: ``wait()``, ``is_completed()``, ``result()``, ``exception()``.

    Example:
        >>> import flambeau as fb
        >>> dist = fb.distributed
        >>> dist.init_process_group("mpi")  # without mpirun: a world of one rank
        >>> t = fb.ones(2)
        >>> work = dist.all_reduce(t, async_op=True)
        >>> isinstance(work, dist.Work), work.wait()
        (True, True)
        >>> dist.destroy_process_group()
    """

    def __init__(self, pg: ProcessGroup, name: str) -> None:
        self._pg = pg
        self._name = name
        self._posted = threading.Event()
        self._exc: BaseException | None = None
        self._request: Any = None  # an MPI request (point-to-point), completed by wait()
        self._finish: Callable[[Any], Any] | None = None  # runs once the request completed
        self._failed: Callable[[BaseException, Any], BaseException] | None = None  # names an MPI error
        self._done = False
        self._seconds = 0.0  # time the communication thread spent on it (DDP's statistics)
        # a posted request (ProcessGroup.post): when it went to MPI and when a Test saw it complete
        self._posted_at = 0.0
        self._completed_at = 0.0
        self._result: Any = None
        self._lock = threading.Lock()
        self._future: Future | None = None
        self._future_lock = threading.Lock()
        self._future_settled = False

    # called by the communication thread
    def _set(self, result: Any = None, exc: BaseException | None = None) -> None:
        self._completed_at = time.perf_counter()
        self._result = result
        self._exc = exc
        if self._request is None or exc is not None:
            self._done = True
        self._posted.set()
        if self._done:
            self._settle_future()

    def _complete_request(self, block: bool, deadline: float | None) -> bool:
        with self._lock:
            if self._done:
                return True
            MPI = _mpi()
            status = MPI.Status()
            # as _finish (Note [Waiting without spinning]): 50 us of spinning, then sleeps growing to 0.1 ms
            spin_until = time.perf_counter() + 5e-5
            delay = 1e-5
            try:
                while not self._request.Test(status):
                    if not block:
                        return False
                    if deadline is not None and time.monotonic() > deadline:
                        self._timeout()
                    if time.perf_counter() < spin_until:
                        continue
                    time.sleep(delay)
                    delay = min(delay * 2, 1e-4)
                self._completed_at = time.perf_counter()
                if self._finish is not None:
                    self._result = self._finish(status)
            except DistBackendError:
                raise
            except BaseException as e:  # noqa: BLE001 (handed to the caller of wait)
                self._exc = (
                    self._failed(e, status) if self._failed is not None and not isinstance(e, FlambeauError) else e
                )
            self._done = True
        self._settle_future()
        return True

    def _timeout(self) -> None:
        raise DistBackendError(
            f"[{self._name}] rank {self._pg.rank}: timed out after {self._pg.timeout.total_seconds():g} s "
            "waiting for the other ranks (did every rank make the same calls in the same order?)"
        )

    def is_completed(self) -> bool:
        """Whether the operation has finished (successfully or not), without blocking.

        Example:
        >>> import flambeau as fb
        >>> dist = fb.distributed
        >>> dist.init_process_group("mpi")  # without mpirun: a world of one rank
        >>> work = dist.all_reduce(fb.ones(2), async_op=True)
        >>> work.wait()
        True
        >>> work.is_completed()
        True
        >>> dist.destroy_process_group()
        """
        if not self._posted.is_set():
            return False
        if self._request is not None and self._exc is None:
            return self._complete_request(block=False, deadline=None)
        return True

    def is_success(self) -> bool:
        """Whether the operation has finished without an error (False while it runs).

        Example:
        >>> import flambeau as fb
        >>> dist = fb.distributed
        >>> dist.init_process_group("mpi")  # without mpirun: a world of one rank
        >>> work = dist.all_reduce(fb.ones(2), async_op=True)
        >>> work.wait(), work.is_success()
        (True, True)
        >>> dist.destroy_process_group()
        """
        return self.is_completed() and self._exc is None

    def exception(self) -> BaseException | None:
        """The error the operation raised, None if it succeeded (or is still running).

        Example:
        >>> import flambeau as fb
        >>> dist = fb.distributed
        >>> dist.init_process_group("mpi")  # without mpirun: a world of one rank
        >>> work = dist.all_reduce(fb.ones(2), async_op=True)
        >>> work.wait()
        True
        >>> print(work.exception())
        None
        >>> dist.destroy_process_group()
        """
        return self._exc

    def wait(self, timeout: datetime.timedelta | None = None) -> bool:
        """Blocks until the operation finished; raises its error (naming the rank) if it failed.

        Returns True. ``timeout`` (a ``datetime.timedelta``) replaces the
        group's timeout for this wait; past it, a :class:`DistBackendError`.

        Example:
        >>> import flambeau as fb
        >>> dist = fb.distributed
        >>> dist.init_process_group("mpi")  # without mpirun: a world of one rank
        >>> t = fb.arange(3.0)
        >>> work = dist.broadcast(t, src=0, async_op=True)
        >>> work.wait()
        True
        >>> t.tolist()
        [0.0, 1.0, 2.0]
        >>> dist.destroy_process_group()
        """
        limit = (timeout or self._pg.timeout).total_seconds()
        deadline = time.monotonic() + limit
        if not self._posted.wait(limit):
            self._timeout()
        if self._request is not None and self._exc is None:
            self._complete_request(block=True, deadline=deadline)
        if self._exc is not None:
            raise self._exc
        return True

    def result(self) -> list[Tensor]:
        """Waits, then returns the operation's output tensors as a list (empty for one without outputs).

        Example:
        >>> import flambeau as fb
        >>> dist = fb.distributed
        >>> dist.init_process_group("mpi")  # without mpirun: a world of one rank
        >>> t = fb.ones(2)
        >>> work = dist.all_reduce(t, async_op=True)
        >>> [r.tolist() for r in work.result()], work.result()[0] is t
        ([[1.0, 1.0]], True)
        >>> dist.destroy_process_group()
        """
        self.wait()
        r = self._result
        return list(r) if isinstance(r, (list, tuple)) else ([] if r is None else [r])

    def get_future(self) -> Future:
        """A ``Future`` completed with ``result()`` (the output tensors, as a list) when the operation finishes.

        A collective's Future completes on the communication thread (its
        ``then`` callbacks run there); a point-to-point one when ``wait()`` or
        ``is_completed()`` sees the message done.

        Example:
        >>> import flambeau as fb
        >>> dist = fb.distributed
        >>> dist.init_process_group("mpi")  # without mpirun: a world of one rank
        >>> fut = dist.all_reduce(fb.ones(2), async_op=True).get_future()
        >>> doubled = fut.then(lambda f: f.value()[0] * 2)
        >>> doubled.wait().tolist()
        [2.0, 2.0]
        >>> dist.destroy_process_group()
        """
        with self._future_lock:
            if self._future is None:
                self._future = Future()
                settle = self._done
            else:
                settle = False
        if settle:
            self._settle_future()
        return self._future

    def _settle_future(self) -> None:
        with self._future_lock:
            fut = self._future
            if fut is None or self._future_settled:
                return
            self._future_settled = True
        r = self._result
        # outside the lock: a callback may ask this Work for its future again
        fut._complete(list(r) if isinstance(r, (list, tuple)) else ([] if r is None else [r]), self._exc)

    def source_rank(self) -> int:
        """The sender's rank of a completed ``irecv`` (waits for it first).

        Example:
        >>> import flambeau as fb
        >>> dist = fb.distributed
        >>> dist.init_process_group("mpi")  # without mpirun: a world of one rank
        >>> t = fb.zeros(2)
        >>> received = dist.irecv(t)  # from any rank
        >>> sent = dist.isend(fb.ones(2), dst=0)  # to itself
        >>> received.source_rank(), sent.wait(), t.tolist()
        (0, True, [1.0, 1.0])
        >>> dist.destroy_process_group()
        """
        self.wait()
        return int(self._result)


def _done_work(pg: ProcessGroup, name: str, seconds: float) -> Work:
    """A finished Work (for a call made synchronously where a handle is expected)."""
    work = Work(pg, name)
    work._seconds = seconds
    work._set()
    return work
