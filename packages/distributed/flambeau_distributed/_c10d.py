"""The process group and the collectives over MPI (mpi4py), with torch.distributed's names.

Note [One communication thread]: every collective of a process group, blocking
or not, runs on one thread of its own, in the order the calls were made. MPI
needs collectives issued in the same order on every rank; with one FIFO
thread that order is the program order, whatever mix of ``async_op`` calls
(DDP's bucket all-reduces, fired from autograd hooks during backward) and
blocking calls a program makes. mpi4py releases the GIL inside MPI calls, so
the thread communicates while backward (which runs without the GIL) computes.
A blocking call is the same operation followed by ``wait()``.

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

import atexit
import ctypes
import datetime
import os
import pickle
import queue
import sys
import threading
import time
import traceback
from collections.abc import Callable, Sequence
from typing import Any

import flambeau_core as fc
from flambeau_core import FlambeauError, Tensor

from flambeau_distributed.futures import Future

_DEFAULT_TIMEOUT = datetime.timedelta(minutes=30)


class DistBackendError(RuntimeError):
    """An error of the communication backend (MPI), or a collective that timed out.

    Example:
        >>> import flambeau as fb
        >>> issubclass(fb.distributed.DistBackendError, RuntimeError)
        True
    """


class ReduceOp:
    """The reduction of ``all_reduce``, ``reduce`` and ``reduce_scatter`` (PyTorch's names).

    Example:
        >>> import flambeau as fb
        >>> fb.distributed.ReduceOp.SUM, fb.distributed.ReduceOp.MAX
        ('SUM', 'MAX')
    """

    SUM = "SUM"
    PRODUCT = "PRODUCT"
    MIN = "MIN"
    MAX = "MAX"
    AVG = "AVG"
    BAND = "BAND"
    BOR = "BOR"
    BXOR = "BXOR"


_REDUCE_OPS = {
    ReduceOp.SUM,
    ReduceOp.PRODUCT,
    ReduceOp.MIN,
    ReduceOp.MAX,
    ReduceOp.AVG,
    ReduceOp.BAND,
    ReduceOp.BOR,
    ReduceOp.BXOR,
}


class Backend:
    """The available backends: only ``"mpi"``.

    Example:
        >>> import flambeau as fb
        >>> fb.distributed.Backend.MPI
        'mpi'
    """

    MPI = "mpi"


def is_available() -> bool:
    """True when mpi4py can be imported (an MPI library is then needed at run time).

    Example:
        >>> import importlib.util
        >>> import flambeau as fb
        >>> fb.distributed.is_available() == (importlib.util.find_spec("mpi4py") is not None)
        True
    """
    import importlib.util

    return importlib.util.find_spec("mpi4py") is not None


def is_mpi_available() -> bool:
    """The same as :func:`is_available`: MPI is the only backend.

    Example:
        >>> import flambeau as fb
        >>> fb.distributed.is_mpi_available() == fb.distributed.is_available()
        True
    """
    return is_available()


def _mpi():
    import mpi4py

    # Threads: Note [One communication thread] calls MPI from a thread of its own
    # while other threads may wait on requests.
    mpi4py.rc.thread_level = "multiple"
    from mpi4py import MPI

    return MPI


# ---------------------------------------------------------------------------
# Work handles


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
        self._result: Any = None
        self._lock = threading.Lock()
        self._future: Future | None = None
        self._future_lock = threading.Lock()
        self._future_settled = False

    # called by the communication thread
    def _set(self, result: Any = None, exc: BaseException | None = None) -> None:
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
            delay = 1e-5
            try:
                while not self._request.Test(status):
                    if not block:
                        return False
                    if deadline is not None and time.monotonic() > deadline:
                        self._timeout()
                    time.sleep(delay)
                    delay = min(delay * 2, 1e-3)
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


# ---------------------------------------------------------------------------
# Buffers: tensors handed to MPI without copies


def _mpi_type(MPI, dtype, name: str) -> Any:
    table = {
        fc.float32: MPI.FLOAT,
        fc.float64: MPI.DOUBLE,
        fc.int8: MPI.INT8_T,
        fc.uint8: MPI.UINT8_T,
        fc.int16: MPI.INT16_T,
        fc.int32: MPI.INT32_T,
        fc.int64: MPI.INT64_T,
        fc.bool: MPI.C_BOOL,
        # 16-bit floats move as their bit patterns (no MPI reduction for them: see _Buf)
        fc.float16: MPI.INT16_T,
        fc.bfloat16: MPI.INT16_T,
    }
    if dtype not in table:
        known = ", ".join(str(d).replace("flambeau.", "") for d in table)
        raise TypeError(f"[{name}] the MPI backend takes tensors of dtype {known}; got {dtype}")
    return table[dtype]


_HALF = (fc.float16, fc.bfloat16)


class _Buf:
    """An MPI message spec over a tensor's own memory; a staging copy only when it can't be (see README)."""

    def __init__(self, MPI, t: Tensor, reduce: bool, name: str) -> None:
        if not isinstance(t, Tensor):
            raise TypeError(f"[{name}] expected a Tensor, got {type(t).__name__}")
        if not t.device.type == "cpu":
            raise TypeError(f"[{name}] the MPI backend takes cpu tensors, got one on {t.device}")
        self.tensor = t
        kind = _mpi_type(MPI, t.dtype, name)
        base = t.detach()
        # Non-contiguous: MPI needs one block, so a contiguous copy goes and comes back.
        self.stage: Tensor | None = None if t.is_contiguous() else base.contiguous()
        target = self.stage if self.stage is not None else base
        if t.dtype in _HALF and target.numel():
            if reduce:
                raise TypeError(
                    f"[{name}] MPI has no reduction for {t.dtype}; reduce float32 (DDP's fp16/bf16 compression hooks "
                    "gather the compressed values and sum them in float32)"
                )
            # no buffer protocol for 16-bit floats: the memory goes to MPI through its address
            self.mv = memoryview((ctypes.c_int16 * target.numel()).from_address(target.data_ptr()))
        else:
            self.mv = memoryview(target) if target.numel() > 0 else memoryview(bytearray(0))
        # [buffer, datatype]: mpi4py derives the counts (per rank for Allgather/Reduce_scatter_block).
        self.spec = [self.mv, kind]
        self.count = target.numel()
        self.kind = kind

    def write_back(self) -> None:
        if self.stage is not None:
            with _no_grad():
                self.tensor.detach().copy_(self.stage)


def _no_grad():
    try:
        import flambeau_autograd

        return flambeau_autograd.no_grad()
    except ImportError:  # pragma: no cover - autograd is a dependency
        import contextlib

        return contextlib.nullcontext()


def _mpi_op(MPI, op: str, dtype, name: str):
    if op not in _REDUCE_OPS:
        raise ValueError(f"[{name}] unknown reduce op {op!r}; expected one of {sorted(_REDUCE_OPS)}")
    if dtype == fc.bool:
        table = {"SUM": MPI.LOR, "MAX": MPI.LOR, "BOR": MPI.LOR, "PRODUCT": MPI.LAND, "MIN": MPI.LAND}
        table |= {"BAND": MPI.LAND, "BXOR": MPI.LXOR}
        if op == "AVG":
            raise TypeError(f"[{name}] ReduceOp.AVG is not defined for bool tensors")
        return table[op]
    if op in ("BAND", "BOR", "BXOR") and dtype.is_floating_point:
        raise TypeError(f"[{name}] ReduceOp.{op} needs an integer or bool tensor, got {dtype}")
    if op == "AVG" and not dtype.is_floating_point:
        raise TypeError(f"[{name}] ReduceOp.AVG needs a floating-point tensor, got {dtype}")
    return {
        "SUM": MPI.SUM,
        "AVG": MPI.SUM,
        "PRODUCT": MPI.PROD,
        "MIN": MPI.MIN,
        "MAX": MPI.MAX,
        "BAND": MPI.BAND,
        "BOR": MPI.BOR,
        "BXOR": MPI.BXOR,
    }[op]


def _divide(buf: _Buf, n: int) -> None:
    """AVG: the sum divided by the world size, in the (possibly staged) buffer."""
    target = buf.stage if buf.stage is not None else buf.tensor.detach()
    with _no_grad():
        target.div_(n)


def _describe(t: Tensor) -> tuple[str, tuple[int, ...]]:
    return (str(t.dtype).replace("flambeau.", ""), tuple(t.shape))


# ---------------------------------------------------------------------------
# The process group


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


_WORLD: ProcessGroup | None = None
_SUBGROUPS: list[ProcessGroup] = []  # live groups from new_group
_PREV_EXCEPTHOOK: Any = None


class _GroupMember:
    """``group.WORLD``: stands for the default process group (None, where PyTorch's is that group's object).

    ``group.NON_GROUP_MEMBER`` is what :func:`new_group` returns on a rank
    outside its ranks.

    Example:
        >>> import flambeau as fb
        >>> dist = fb.distributed
        >>> dist.init_process_group("mpi")  # without mpirun: a world of one rank
        >>> dist.get_world_size(dist.group.WORLD) == dist.get_world_size()
        True
        >>> dist.destroy_process_group()
    """

    WORLD = None
    NON_GROUP_MEMBER = object()


group = _GroupMember


def _abort_excepthook(kind, value, tb) -> None:
    pg = _WORLD
    hook = _PREV_EXCEPTHOOK or sys.__excepthook__
    if pg is None:
        hook(kind, value, tb)
        return
    sys.stderr.write(
        f"[flambeau.distributed] rank {pg.rank} of {pg.world_size} raised an uncaught exception; "
        "aborting every rank (MPI_Abort) so that none waits forever:\n"
    )
    traceback.print_exception(kind, value, tb)
    sys.stderr.flush()
    pg.comm.Abort(1)


# Set by mpirun/mpiexec (Open MPI, PMIx, MPICH/Hydra) in the processes they start.
_LAUNCHER_VARS = ("OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK", "PMI_SIZE", "MPI_LOCALNRANKS")


def init_process_group(
    backend: str | None = None,
    init_method: str | None = None,
    timeout: datetime.timedelta | None = None,
    world_size: int = -1,
    rank: int = -1,
    store: Any = None,
    group_name: str = "",
    pg_options: Any = None,
    device_id: Any = None,
    *,
    abort_on_exception: bool = True,
) -> None:
    """Joins the job started by ``mpirun -n N python script.py``: ranks and size come from MPI.

    ``world_size``/``rank`` may be given only to assert what MPI says.
    ``abort_on_exception`` (flambeau's): an uncaught exception on any rank
    calls ``MPI_Abort``, so that the other ranks fail at once instead of
    waiting forever in a collective.

    Unlike PyTorch, the backend is MPI only (``backend`` None or ``"mpi"``) and
    there is no ``init_method``/``store`` rendezvous: a program started without
    ``mpirun`` is a world of one rank (rank 0), as the examples here are.

    Example:
        >>> import flambeau as fb
        >>> dist = fb.distributed
        >>> dist.init_process_group("mpi")  # without mpirun: a one rank
        >>> dist.is_initialized(), dist.get_rank(), dist.get_world_size()
        (True, 0, 1)
        >>> dist.destroy_process_group()
    """
    global _WORLD, _PREV_EXCEPTHOOK
    if backend is not None and str(backend).lower() != "mpi":
        raise ValueError(f"[init_process_group] backend {backend!r} is not available; flambeau has 'mpi'")
    if init_method not in (None, "env://") or store is not None:
        raise ValueError("[init_process_group] the MPI backend takes its ranks from mpirun: no init_method or store")
    if _WORLD is not None:
        raise RuntimeError("[init_process_group] trying to initialize the default process group twice")
    if timeout is not None and not isinstance(timeout, datetime.timedelta):
        raise TypeError(f"[init_process_group] timeout must be a datetime.timedelta, got {type(timeout).__name__}")
    if timeout is None and os.environ.get("FLAMBEAU_DISTRIBUTED_TIMEOUT"):
        timeout = datetime.timedelta(seconds=float(os.environ["FLAMBEAU_DISTRIBUTED_TIMEOUT"]))
    if not any(v in os.environ for v in _LAUNCHER_VARS):
        # Not started by mpirun: a world of one. Open MPI's shared-memory transport would leave
        # its 16 MB segment in /dev/shm behind (no launcher to clean it up), and one rank needs none.
        os.environ.setdefault("OMPI_MCA_btl", "self")
    MPI = _mpi()
    comm = MPI.COMM_WORLD.Dup()
    comm.Set_errhandler(MPI.ERRORS_RETURN)
    if world_size not in (-1, None) and world_size != comm.Get_size():
        raise ValueError(f"[init_process_group] world_size={world_size} but mpirun started {comm.Get_size()} processes")
    if rank not in (-1, None) and rank != comm.Get_rank():
        raise ValueError(f"[init_process_group] rank={rank} but MPI says this process is rank {comm.Get_rank()}")
    check = os.environ.get("FLAMBEAU_DISTRIBUTED_DEBUG", "DETAIL").upper() != "OFF"
    _WORLD = ProcessGroup(comm, timeout or _DEFAULT_TIMEOUT, check)
    if abort_on_exception:
        _PREV_EXCEPTHOOK = sys.excepthook
        sys.excepthook = _abort_excepthook


def is_initialized() -> bool:
    """True between :func:`init_process_group` and :func:`destroy_process_group`.

    Example:
        >>> import flambeau as fb
        >>> fb.distributed.is_initialized()  # before init_process_group
        False
    """
    return _WORLD is not None


def destroy_process_group(group: Any = None) -> None:
    """Stops the communication thread and frees the communicator (MPI itself ends at exit).

    ``group=None`` destroys the default group and every group from ``new_group``;
    :func:`init_process_group` may then be called again.

    Example:
        >>> import flambeau as fb
        >>> dist = fb.distributed
        >>> dist.init_process_group("mpi")  # without mpirun: a world of one rank
        >>> dist.destroy_process_group()
        >>> dist.is_initialized()
        False
    """
    global _WORLD, _PREV_EXCEPTHOOK
    if group is not None and group is not _WORLD:
        if group is _GroupMember.NON_GROUP_MEMBER:
            return
        sub = _pg(group, "destroy_process_group")
        _SUBGROUPS.remove(sub)
        _close(sub)
        return
    pg = _WORLD
    if pg is None:
        return
    while _SUBGROUPS:
        _close(_SUBGROUPS.pop())
    _WORLD = None
    _close(pg)
    if sys.excepthook is _abort_excepthook:
        sys.excepthook = _PREV_EXCEPTHOOK or sys.__excepthook__
    _PREV_EXCEPTHOOK = None


def _close(pg: ProcessGroup) -> None:
    if not pg.shutdown():
        # MPI_Finalize at exit would wait for it forever: end the job instead.
        sys.stderr.write(
            f"[flambeau.distributed] rank {pg.rank}: destroy_process_group with a collective still waiting for the "
            "other ranks; aborting every rank (MPI_Abort)\n"
        )
        sys.stderr.flush()
        pg.comm.Abort(1)
    pg.comm.Free()


@atexit.register
def _cleanup() -> None:
    if _WORLD is not None:
        try:
            destroy_process_group()
        except Exception:  # noqa: BLE001 (exiting anyway)
            pass


def _pg(group: Any, name: str) -> ProcessGroup:
    if _WORLD is None:
        raise RuntimeError(
            f"[{name}] the default process group has not been initialized; call "
            "init_process_group(backend='mpi') first (and launch with mpirun -n N python script.py)"
        )
    if group is None or group is _WORLD:
        return _WORLD
    if group is _GroupMember.NON_GROUP_MEMBER:
        raise ValueError(f"[{name}] this rank ({_WORLD.rank}) is not a member of the group new_group() gave it")
    if isinstance(group, ProcessGroup) and any(group is g for g in _SUBGROUPS):
        return group
    raise ValueError(
        f"[{name}] group must be None, group.WORLD or a live group from new_group(), got {type(group).__name__}"
    )


def _check_rank(pg: ProcessGroup, r: Any, what: str, name: str) -> int:
    """Validates a rank of the default group that belongs to ``pg``; returns its rank within ``pg``."""
    if not isinstance(r, int) or isinstance(r, bool) or r not in pg.global_ranks:
        if pg is _WORLD:
            raise ValueError(f"[{name}] {what} must be a rank in [0, {pg.world_size - 1}], got {r!r}")
        raise ValueError(f"[{name}] {what} must be a rank of the group {pg.global_ranks}, got {r!r}")
    return pg.global_ranks.index(r)


def get_rank(group: Any = None) -> int:
    """This process's rank in ``group`` (the default group's by default); -1 if it is not a member.

    Example:
        >>> import flambeau as fb
        >>> dist = fb.distributed
        >>> dist.init_process_group("mpi")  # without mpirun: a world of one rank
        >>> dist.get_rank()  # mpirun -n N numbers its processes 0 .. N - 1
        0
        >>> dist.destroy_process_group()
    """
    if group is _GroupMember.NON_GROUP_MEMBER and _WORLD is not None:
        return -1
    return _pg(group, "get_rank").rank


def get_world_size(group: Any = None) -> int:
    """The number of ranks of ``group``; -1 on a rank that is not a member.

    Example:
        >>> import flambeau as fb
        >>> dist = fb.distributed
        >>> dist.init_process_group("mpi")  # without mpirun: a world of one rank
        >>> dist.get_world_size()  # N under mpirun -n N
        1
        >>> dist.destroy_process_group()
    """
    if group is _GroupMember.NON_GROUP_MEMBER and _WORLD is not None:
        return -1
    return _pg(group, "get_world_size").world_size


def new_group(
    ranks: Sequence[int] | None = None,
    timeout: datetime.timedelta | None = None,
    backend: str | None = None,
    pg_options: Any = None,
    use_local_synchronization: bool = False,
    group_desc: str | None = None,
) -> ProcessGroup | object:
    """A process group of some ranks of the default group, as ``torch.distributed.new_group``.

    Every rank of the default group must call it, with the same ``ranks``
    (an MPI communicator split); a rank outside ``ranks`` gets
    ``group.NON_GROUP_MEMBER``. Collectives given ``group=`` run among its
    members; ``src``/``dst`` arguments stay ranks of the default group.

    Example (``mpirun -n 2``)::

        g = dist.new_group([1])
        if dist.get_rank() == 1:
            dist.broadcast(t, src=1, group=g)  # only rank 1 takes part

    In a world of one rank:

        >>> import flambeau as fb
        >>> dist = fb.distributed
        >>> dist.init_process_group("mpi")  # without mpirun: a world of one rank
        >>> g = dist.new_group([0])
        >>> t = fb.arange(3.0)
        >>> dist.broadcast(t, src=0, group=g)
        >>> dist.get_world_size(g), t.tolist()
        (1, [0.0, 1.0, 2.0])
        >>> dist.destroy_process_group()
    """
    world = _pg(None, "new_group")
    if backend not in (None, Backend.MPI):
        raise ValueError(f"[new_group] backend must be None or 'mpi', got {backend!r}")
    if use_local_synchronization:
        raise ValueError("[new_group] use_local_synchronization=True is not supported: every rank must call new_group")
    members = list(range(world.world_size)) if ranks is None else list(ranks)
    for r in members:
        if not isinstance(r, int) or isinstance(r, bool) or not 0 <= r < world.world_size:
            raise ValueError(f"[new_group] ranks must be ranks in [0, {world.world_size - 1}], got {members}")
    if len(set(members)) != len(members) or not members:
        raise ValueError(f"[new_group] ranks must be distinct and non-empty, got {members}")
    members = sorted(members)
    MPI = _mpi()
    mine = world.rank in members
    color = 0 if mine else MPI.UNDEFINED
    key = members.index(world.rank) if mine else 0
    work = world.submit("new_group", lambda w: world.comm.Split(color, key), True)
    work.wait()
    comm = work._result
    if not mine:
        return _GroupMember.NON_GROUP_MEMBER
    pg = ProcessGroup(comm, timeout or world.timeout, world.check, members)
    _SUBGROUPS.append(pg)
    return pg


def get_backend(group: Any = None) -> str:
    """The backend of ``group`` (the default group by default): always ``"mpi"``.

    PyTorch returns a ``Backend`` string too (``"gloo"``, ``"nccl"``, ...).

    Example:
        >>> import flambeau as fb
        >>> dist = fb.distributed
        >>> dist.init_process_group("mpi")  # without mpirun: a world of one rank
        >>> dist.get_backend()
        'mpi'
        >>> dist.destroy_process_group()
    """
    _pg(group, "get_backend")
    return Backend.MPI


def _default_group() -> ProcessGroup:
    return _pg(None, "group")


# ---------------------------------------------------------------------------
# Collectives


def barrier(group: Any = None, async_op: bool = False, device_ids: Any = None) -> Work | None:
    """Blocks until every rank of ``group`` has called it (``async_op=True``: returns a :class:`Work`).

    ``device_ids`` is accepted and ignored (CPU ranks).

    Example:
        >>> import flambeau as fb
        >>> dist = fb.distributed
        >>> dist.init_process_group("mpi")  # without mpirun: a world of one rank
        >>> dist.barrier()  # with one rank: returns at once
        >>> dist.barrier(async_op=True).wait()
        True
        >>> dist.destroy_process_group()
    """
    pg = _pg(group, "barrier")
    return pg.submit("barrier", lambda w: _finish(pg.comm.Ibarrier()), async_op)


def broadcast(tensor: Tensor, src: int = 0, group: Any = None, async_op: bool = False) -> Work | None:
    """Copies ``tensor`` of rank ``src`` into ``tensor`` of every rank, in place.

    Returns None, or a :class:`Work` with ``async_op=True``.

    Example:
        >>> import flambeau as fb
        >>> dist = fb.distributed
        >>> dist.init_process_group("mpi")  # without mpirun: a world of one rank
        >>> t = fb.arange(3.0) if dist.get_rank() == 0 else fb.zeros(3)
        >>> dist.broadcast(t, src=0)  # every rank now holds rank 0's values
        >>> t.tolist()
        [0.0, 1.0, 2.0]
        >>> dist.destroy_process_group()
    """
    pg = _pg(group, "broadcast")
    return _broadcast(pg, tensor, _check_rank(pg, src, "src", "broadcast"), async_op, pg.check)


def _broadcast_nocheck(pg: ProcessGroup, tensor: Tensor, src: int) -> Work:
    return _broadcast(pg, tensor, src, True, False)


def _broadcast(pg: ProcessGroup, tensor: Tensor, src: int, async_op: bool, check: bool) -> Work | None:
    MPI = _mpi()
    buf = _Buf(MPI, tensor, False, "broadcast")

    def run(work: Work) -> None:
        if check:
            pg.check_same("broadcast", ("broadcast", *_describe(tensor), f"src={src}"))
        _finish(pg.comm.Ibcast(buf.spec, root=src))
        buf.write_back()

    return pg.submit("broadcast", run, async_op)


def all_reduce(tensor: Tensor, op: str = ReduceOp.SUM, group: Any = None, async_op: bool = False) -> Work | None:
    """Reduces ``tensor`` across every rank, in place on every rank.

    ``op`` is a :class:`ReduceOp` (``SUM`` by default). Returns None, or a
    :class:`Work` with ``async_op=True``.

    Example (with N ranks ``t`` ends as N * [1, 2]; here N = 1):
        >>> import flambeau as fb
        >>> dist = fb.distributed
        >>> dist.init_process_group("mpi")  # without mpirun: a world of one rank
        >>> t = fb.tensor([1.0, 2.0])
        >>> dist.all_reduce(t)
        >>> t.tolist()
        [1.0, 2.0]
        >>> dist.all_reduce(t, op=dist.ReduceOp.MAX)
        >>> t.tolist()
        [1.0, 2.0]
        >>> dist.destroy_process_group()
    """
    pg = _pg(group, "all_reduce")
    return _all_reduce(pg, tensor, op, async_op, pg.check)


def _all_reduce(pg: ProcessGroup, tensor: Tensor, op: str, async_op: bool, check: bool) -> Work | None:
    MPI = _mpi()
    buf = _Buf(MPI, tensor, True, "all_reduce")
    mop = _mpi_op(MPI, op, tensor.dtype, "all_reduce")

    def run(work: Work) -> Tensor:
        if check:
            pg.check_same("all_reduce", ("all_reduce", *_describe(tensor), f"op={op}"))
        if buf.count:
            _finish(pg.comm.Iallreduce(MPI.IN_PLACE, buf.spec, mop))
        if op == ReduceOp.AVG:
            _divide(buf, pg.world_size)
        buf.write_back()
        return tensor

    return pg.submit("all_reduce", run, async_op)


def reduce(
    tensor: Tensor, dst: int = 0, op: str = ReduceOp.SUM, group: Any = None, async_op: bool = False
) -> Work | None:
    """Reduces ``tensor`` across every rank into ``tensor`` of rank ``dst`` (the others' are left as they are).

    Example:
        >>> import flambeau as fb
        >>> dist = fb.distributed
        >>> dist.init_process_group("mpi")  # without mpirun: a world of one rank
        >>> t = fb.tensor([1, 2])
        >>> dist.reduce(t, dst=0, op=dist.ReduceOp.SUM)  # rank 0 gets the sum over ranks
        >>> t.tolist()
        [1, 2]
        >>> dist.destroy_process_group()
    """
    pg = _pg(group, "reduce")
    dst = _check_rank(pg, dst, "dst", "reduce")
    MPI = _mpi()
    buf = _Buf(MPI, tensor, True, "reduce")
    mop = _mpi_op(MPI, op, tensor.dtype, "reduce")

    def run(work: Work) -> None:
        if pg.check:
            pg.check_same("reduce", ("reduce", *_describe(tensor), f"dst={dst}", f"op={op}"))
        if not buf.count:
            return
        if pg.rank == dst:
            _finish(pg.comm.Ireduce(MPI.IN_PLACE, buf.spec, mop, root=dst))
            if op == ReduceOp.AVG:
                _divide(buf, pg.world_size)
            buf.write_back()
        else:
            _finish(pg.comm.Ireduce(buf.spec, None, mop, root=dst))

    return pg.submit("reduce", run, async_op)


def _require_tensors(name: str, **tensors: Any) -> None:
    for arg, t in tensors.items():
        if not isinstance(t, Tensor):
            raise TypeError(f"[{name}] {arg} must be a Tensor, got {type(t).__name__}")


def _check_list(pg: ProcessGroup, tensors: Sequence[Tensor], like: Tensor, name: str, what: str) -> None:
    if not isinstance(tensors, (list, tuple)) or len(tensors) != pg.world_size:
        n = len(tensors) if isinstance(tensors, (list, tuple)) else type(tensors).__name__
        raise ValueError(f"[{name}] {what} must be a list of world_size={pg.world_size} tensors, got {n}")
    for i, t in enumerate(tensors):
        if not isinstance(t, Tensor):
            raise TypeError(f"[{name}] {what}[{i}] must be a Tensor, got {type(t).__name__}")
        if t.dtype != like.dtype:
            raise TypeError(f"[{name}] {what}[{i}] has dtype {t.dtype}, expected {like.dtype}")
        if tuple(t.shape) != tuple(like.shape):
            raise FlambeauError(f"[{name}] {what}[{i}] has shape {list(t.shape)}, expected {list(like.shape)}")


def all_gather_into_tensor(
    output_tensor: Tensor, input_tensor: Tensor, group: Any = None, async_op: bool = False
) -> Work | None:
    """Every rank's ``input_tensor`` concatenated (dim 0) or stacked into ``output_tensor``, without copies.

    ``output_tensor`` has ``world_size`` times the elements of ``input_tensor``.

    Example:
        >>> import flambeau as fb
        >>> dist = fb.distributed
        >>> dist.init_process_group("mpi")  # without mpirun: a world of one rank
        >>> out = fb.zeros(2 * dist.get_world_size())
        >>> dist.all_gather_into_tensor(out, fb.tensor([1.0, 2.0]))
        >>> out.tolist()
        [1.0, 2.0]
        >>> dist.destroy_process_group()
    """
    pg = _pg(group, "all_gather_into_tensor")
    _require_tensors("all_gather_into_tensor", output_tensor=output_tensor, input_tensor=input_tensor)
    if output_tensor.dtype != input_tensor.dtype:
        raise TypeError(
            f"[all_gather_into_tensor] output dtype {output_tensor.dtype} != input dtype {input_tensor.dtype}"
        )
    if output_tensor.numel() != input_tensor.numel() * pg.world_size:
        raise FlambeauError(
            f"[all_gather_into_tensor] the output has {output_tensor.numel()} elements, expected world_size * "
            f"input.numel() = {pg.world_size} * {input_tensor.numel()}"
        )
    return _all_gather_flat(pg, output_tensor, input_tensor, "all_gather_into_tensor", async_op, pg.check)


def _all_gather_flat(
    pg: ProcessGroup, output: Tensor, input: Tensor, name: str, async_op: bool = True, check: bool = False
) -> Work | None:
    MPI = _mpi()
    out = _Buf(MPI, output, False, name)
    inp = _Buf(MPI, input, False, name)

    def run(work: Work) -> Tensor:
        if check:
            pg.check_same("all_gather", ("all_gather", *_describe(input)))
        if inp.count:
            _finish(pg.comm.Iallgather(inp.spec, out.spec))
        out.write_back()
        return output

    return pg.submit(name, run, async_op)


def all_gather(tensor_list: list[Tensor], tensor: Tensor, group: Any = None, async_op: bool = False) -> Work | None:
    """``tensor_list[r]`` = rank r's ``tensor`` (gathered in one buffer, then copied out: one copy).

    Example:
        >>> import flambeau as fb
        >>> dist = fb.distributed
        >>> dist.init_process_group("mpi")  # without mpirun: a world of one rank
        >>> out = [fb.zeros(2) for _ in range(dist.get_world_size())]
        >>> dist.all_gather(out, fb.tensor([1.0, 2.0]))
        >>> [t.tolist() for t in out]
        [[1.0, 2.0]]
        >>> dist.destroy_process_group()
    """
    pg = _pg(group, "all_gather")
    _require_tensors("all_gather", tensor=tensor)
    _check_list(pg, tensor_list, tensor, "all_gather", "tensor_list")
    MPI = _mpi()
    flat = fc.empty([pg.world_size * tensor.numel()], dtype=tensor.dtype)
    out = _Buf(MPI, flat, False, "all_gather")
    inp = _Buf(MPI, tensor, False, "all_gather")
    n = tensor.numel()

    def run(work: Work) -> list[Tensor]:
        if pg.check:
            pg.check_same("all_gather", ("all_gather", *_describe(tensor)))
        if n:
            _finish(pg.comm.Iallgather(inp.spec, out.spec))
            out.write_back()
            with _no_grad():
                for r, t in enumerate(tensor_list):
                    t.detach().copy_(flat[r * n : (r + 1) * n].view(list(tensor.shape)))
        return list(tensor_list)

    return pg.submit("all_gather", run, async_op)


def reduce_scatter_tensor(
    output: Tensor, input: Tensor, op: str = ReduceOp.SUM, group: Any = None, async_op: bool = False
) -> Work | None:
    """``input`` (world_size blocks along dim 0) reduced across ranks; rank r gets block r in ``output``.

    Example:
        >>> import flambeau as fb
        >>> dist = fb.distributed
        >>> dist.init_process_group("mpi")  # without mpirun: a world of one rank
        >>> out = fb.zeros(2)
        >>> dist.reduce_scatter_tensor(out, fb.tensor([1.0, 2.0]))  # one rank: its one block
        >>> out.tolist()
        [1.0, 2.0]
        >>> dist.destroy_process_group()
    """
    pg = _pg(group, "reduce_scatter_tensor")
    _require_tensors("reduce_scatter_tensor", output=output, input=input)
    if output.dtype != input.dtype:
        raise TypeError(f"[reduce_scatter_tensor] output dtype {output.dtype} != input dtype {input.dtype}")
    if input.numel() != output.numel() * pg.world_size:
        raise FlambeauError(
            f"[reduce_scatter_tensor] the input has {input.numel()} elements, expected world_size * output.numel() = "
            f"{pg.world_size} * {output.numel()}"
        )
    return _reduce_scatter(pg, output, input, op, async_op, "reduce_scatter_tensor")


def reduce_scatter(
    output: Tensor, input_list: list[Tensor], op: str = ReduceOp.SUM, group: Any = None, async_op: bool = False
) -> Work | None:
    """Rank r gets the reduction over ranks of ``input_list[r]`` in ``output`` (the list is packed: one copy).

    Example:
        >>> import flambeau as fb
        >>> dist = fb.distributed
        >>> dist.init_process_group("mpi")  # without mpirun: a world of one rank
        >>> out = fb.zeros(2)
        >>> dist.reduce_scatter(out, [fb.tensor([1.0, 2.0])], op=dist.ReduceOp.SUM)
        >>> out.tolist()
        [1.0, 2.0]
        >>> dist.destroy_process_group()
    """
    pg = _pg(group, "reduce_scatter")
    _require_tensors("reduce_scatter", output=output)
    _check_list(pg, input_list, output, "reduce_scatter", "input_list")
    packed = (
        fc.cat([t.detach().reshape(-1) for t in input_list]) if output.numel() else fc.empty([0], dtype=output.dtype)
    )
    return _reduce_scatter(pg, output, packed, op, async_op, "reduce_scatter")


def _reduce_scatter(pg: ProcessGroup, output: Tensor, input: Tensor, op: str, async_op: bool, name: str) -> Work | None:
    MPI = _mpi()
    out = _Buf(MPI, output, True, name)
    inp = _Buf(MPI, input, True, name)
    mop = _mpi_op(MPI, op, output.dtype, name)

    def run(work: Work) -> Tensor:
        if pg.check:
            pg.check_same(name, (name, *_describe(output), f"op={op}"))
        if out.count:
            _finish(pg.comm.Ireduce_scatter_block(inp.spec, out.spec, mop))
        if op == ReduceOp.AVG:
            _divide(out, pg.world_size)
        out.write_back()
        return output

    return pg.submit(name, run, async_op)


def _rooted_list(pg: ProcessGroup, tensor: Tensor, lst: Any, root: int, name: str, words: tuple) -> int:
    """gather/scatter: the list is required on the root rank and must be None (or empty) elsewhere.

    Returns the root's rank within ``pg``.
    """
    root_arg, list_arg, role = words
    local = _check_rank(pg, root, root_arg, name)
    _require_tensors(name, tensor=tensor)
    if pg.rank == local:
        if lst is None:
            raise ValueError(f"[{name}] {list_arg} is required on the {role} rank {root}")
        _check_list(pg, lst, tensor, name, list_arg)
    elif lst:
        raise ValueError(f"[{name}] {list_arg} must be None or empty on rank {pg.rank} (not the {role} {root})")
    return local


def gather(
    tensor: Tensor, gather_list: list[Tensor] | None = None, dst: int = 0, group: Any = None, async_op: bool = False
) -> Work | None:
    """Rank ``dst`` gets every rank's ``tensor``: ``gather_list[r]`` = rank r's (None on the other ranks).

    The tensors are gathered into one buffer on ``dst`` and copied out (one copy).

    Example (``mpirun -n 2``)::

        t = fc.full([2], float(dist.get_rank()))
        out = [fc.zeros([2]) for _ in range(2)] if dist.get_rank() == 0 else None
        dist.gather(t, out, dst=0)  # on rank 0: out == [[0, 0], [1, 1]]

    In a world of one rank:

        >>> import flambeau as fb
        >>> dist = fb.distributed
        >>> dist.init_process_group("mpi")  # without mpirun: a world of one rank
        >>> out = [fb.zeros(2)]
        >>> dist.gather(fb.tensor([5.0, 6.0]), out, dst=0)
        >>> [t.tolist() for t in out]
        [[5.0, 6.0]]
        >>> dist.destroy_process_group()
    """
    pg = _pg(group, "gather")
    dst = _rooted_list(pg, tensor, gather_list, dst, "gather", ("dst", "gather_list", "destination"))
    MPI = _mpi()
    n = tensor.numel()
    inp = _Buf(MPI, tensor, False, "gather")
    flat = fc.empty([pg.world_size * n], dtype=tensor.dtype) if pg.rank == dst else None
    out = _Buf(MPI, flat, False, "gather") if flat is not None else None

    def run(work: Work) -> None:
        if pg.check:
            pg.check_same("gather", ("gather", *_describe(tensor), f"dst={dst}"))
        if not n:
            return
        _finish(pg.comm.Igather(inp.spec, out.spec if out is not None else None, root=dst))
        if flat is not None:
            with _no_grad():
                for r, t in enumerate(gather_list):
                    t.detach().copy_(flat[r * n : (r + 1) * n].view(list(tensor.shape)))

    return pg.submit("gather", run, async_op)


def scatter(
    tensor: Tensor, scatter_list: list[Tensor] | None = None, src: int = 0, group: Any = None, async_op: bool = False
) -> Work | None:
    """Rank r gets ``scatter_list[r]`` of rank ``src`` in ``tensor`` (the list is packed on ``src``: one copy).

    Example (``mpirun -n 2``)::

        t = fc.zeros([2])
        parts = [fc.full([2], 1.0), fc.full([2], 2.0)] if dist.get_rank() == 0 else None
        dist.scatter(t, parts, src=0)  # rank 1: t == [2, 2]

    In a world of one rank:

        >>> import flambeau as fb
        >>> dist = fb.distributed
        >>> dist.init_process_group("mpi")  # without mpirun: a world of one rank
        >>> t = fb.zeros(2)
        >>> dist.scatter(t, [fb.full([2], 1.0)], src=0)
        >>> t.tolist()
        [1.0, 1.0]
        >>> dist.destroy_process_group()
    """
    pg = _pg(group, "scatter")
    src = _rooted_list(pg, tensor, scatter_list, src, "scatter", ("src", "scatter_list", "source"))
    MPI = _mpi()
    out = _Buf(MPI, tensor, False, "scatter")
    inp = None
    if pg.rank == src and tensor.numel():
        inp = _Buf(MPI, fc.cat([t.detach().reshape(-1) for t in scatter_list]), False, "scatter")

    def run(work: Work) -> None:
        if pg.check:
            pg.check_same("scatter", ("scatter", *_describe(tensor), f"src={src}"))
        if not out.count:
            return
        _finish(pg.comm.Iscatter(inp.spec if inp is not None else None, out.spec, root=src))
        out.write_back()

    return pg.submit("scatter", run, async_op)


def _split_counts(
    pg: ProcessGroup, t: Tensor, splits: Sequence[int] | None, name: str, what: str
) -> tuple[list[int], list[int]]:
    """Element counts and offsets of the world_size blocks of ``t`` along dim 0."""
    rows = t.shape[0] if t.dim() else 1
    row = t.numel() // rows if rows else 0
    if splits is None:
        if rows % pg.world_size:
            raise FlambeauError(
                f"[{name}] {what} has {rows} rows along dim 0, not divisible by world_size={pg.world_size}; "
                f"pass {what}_split_sizes"
            )
        splits = [rows // pg.world_size] * pg.world_size
    splits = list(splits)
    if len(splits) != pg.world_size or any(not isinstance(s, int) or s < 0 for s in splits):
        raise ValueError(
            f"[{name}] {what}_split_sizes must be world_size={pg.world_size} non-negative ints, got {splits}"
        )
    if sum(splits) != rows:
        raise FlambeauError(f"[{name}] {what}_split_sizes {splits} sum to {sum(splits)}, but {what} has {rows} rows")
    counts = [s * row for s in splits]
    return counts, _offsets(counts)


def _offsets(counts: list[int]) -> list[int]:
    return [sum(counts[:k]) for k in range(len(counts))]


def _alltoallv(
    pg: ProcessGroup, out: Tensor, inp: Tensor, send: tuple, recv: tuple, name: str, async_op: bool, after=None
) -> Work | None:
    MPI = _mpi()
    ob = _Buf(MPI, out, False, name)
    ib = _Buf(MPI, inp, False, name)

    def run(work: Work) -> None:
        if pg.check:
            pg.check_same(name, (name, str(out.dtype).replace("flambeau.", ""), ("per-rank sizes",)))
        _finish(pg.comm.Ialltoallv([ib.mv, send, ib.kind], [ob.mv, recv, ob.kind]))
        ob.write_back()
        if after is not None:
            after()

    return pg.submit(name, run, async_op)


def all_to_all_single(
    output: Tensor,
    input: Tensor,
    output_split_sizes: Sequence[int] | None = None,
    input_split_sizes: Sequence[int] | None = None,
    group: Any = None,
    async_op: bool = False,
) -> Work | None:
    """Block r of ``input`` (dim 0) goes to rank r; ``output``'s block r comes from rank r (no copies).

    Without split sizes the blocks are equal (dim 0 divisible by world_size);
    rank a's ``input_split_sizes[b]`` must equal rank b's ``output_split_sizes[a]``.

    Example (``mpirun -n 2``)::

        inp = fc.arange(2.0) + 2 * dist.get_rank()  # rank 0: [0, 1], rank 1: [2, 3]
        out = fc.empty([2])
        dist.all_to_all_single(out, inp)  # rank 0: [0, 2], rank 1: [1, 3]

    In a world of one rank (its one block comes back):

        >>> import flambeau as fb
        >>> dist = fb.distributed
        >>> dist.init_process_group("mpi")  # without mpirun: a world of one rank
        >>> out = fb.empty(2)
        >>> dist.all_to_all_single(out, fb.tensor([3.0, 4.0]))
        >>> out.tolist()
        [3.0, 4.0]
        >>> dist.destroy_process_group()
    """
    pg = _pg(group, "all_to_all_single")
    _require_tensors("all_to_all_single", output=output, input=input)
    if output.dtype != input.dtype:
        raise TypeError(f"[all_to_all_single] output dtype {output.dtype} != input dtype {input.dtype}")
    if tuple(output.shape[1:]) != tuple(input.shape[1:]):
        raise FlambeauError(
            f"[all_to_all_single] output {list(output.shape)} and input {list(input.shape)} must agree beyond dim 0"
        )
    send = _split_counts(pg, input, input_split_sizes, "all_to_all_single", "input")
    recv = _split_counts(pg, output, output_split_sizes, "all_to_all_single", "output")
    return _alltoallv(pg, output, input, send, recv, "all_to_all_single", async_op)


def all_to_all(
    output_tensor_list: list[Tensor], input_tensor_list: list[Tensor], group: Any = None, async_op: bool = False
) -> Work | None:
    """``input_tensor_list[r]`` goes to rank r; ``output_tensor_list[r]`` comes from rank r (sizes may differ).

    Both lists are packed into one buffer each (one copy in, one out).

    Example (``mpirun -n 2``)::

        r = dist.get_rank()
        out = [fc.empty([1]) for _ in range(2)]
        dist.all_to_all(out, [fc.tensor([10.0 * r]), fc.tensor([10.0 * r + 1])])
        # rank 0: out == [[0], [10]], rank 1: out == [[1], [11]]

    In a world of one rank:

        >>> import flambeau as fb
        >>> dist = fb.distributed
        >>> dist.init_process_group("mpi")  # without mpirun: a world of one rank
        >>> out = [fb.empty(1)]
        >>> dist.all_to_all(out, [fb.tensor([7.0])])
        >>> [t.tolist() for t in out]
        [[7.0]]
        >>> dist.destroy_process_group()
    """
    pg = _pg(group, "all_to_all")
    for what, lst in (("output_tensor_list", output_tensor_list), ("input_tensor_list", input_tensor_list)):
        if not isinstance(lst, (list, tuple)) or len(lst) != pg.world_size:
            got = len(lst) if isinstance(lst, (list, tuple)) else type(lst).__name__
            raise ValueError(f"[all_to_all] {what} must be a list of world_size={pg.world_size} tensors, got {got}")
        for i, t in enumerate(lst):
            if not isinstance(t, Tensor):
                raise TypeError(f"[all_to_all] {what}[{i}] must be a Tensor, got {type(t).__name__}")
            if t.dtype != input_tensor_list[0].dtype:
                raise TypeError(f"[all_to_all] {what}[{i}] has dtype {t.dtype}, expected {input_tensor_list[0].dtype}")
    dtype = input_tensor_list[0].dtype
    inp = fc.cat([t.detach().reshape(-1) for t in input_tensor_list])
    counts_out = [t.numel() for t in output_tensor_list]
    counts_in = [t.numel() for t in input_tensor_list]
    out = fc.empty([sum(counts_out)], dtype=dtype)
    offs_out = _offsets(counts_out)

    def unpack() -> None:
        with _no_grad():
            for t, off, c in zip(output_tensor_list, offs_out, counts_out, strict=True):
                t.detach().copy_(out[off : off + c].view(list(t.shape)))

    return _alltoallv(
        pg, out, inp, (counts_in, _offsets(counts_in)), (counts_out, offs_out), "all_to_all", async_op, unpack
    )


# ---------------------------------------------------------------------------
# Point to point


def _isend(tensor: Tensor, dst: int, tag: int, name: str) -> Work:
    pg = _pg(None, name)
    _check_rank(pg, dst, "dst", name)
    MPI = _mpi()
    buf = _Buf(MPI, tensor, False, name)

    def run(work: Work) -> None:
        work._request = pg.comm.Isend(buf.spec, dest=dst, tag=tag)
        work._finish = lambda status: None

    return pg.submit(name, run, True)


def _irecv(tensor: Tensor, src: int | None, tag: int, name: str) -> Work:
    pg = _pg(None, name)
    if src is not None:
        _check_rank(pg, src, "src", name)
    MPI = _mpi()
    buf = _Buf(MPI, tensor, False, name)
    expected = buf.count * buf.kind.Get_size()

    def mismatch(source: int, got: str) -> FlambeauError:
        return FlambeauError(
            f"[{name}] rank {pg.rank} expected {expected} bytes ({buf.count} elements of "
            f"{str(tensor.dtype).replace('flambeau.', '')}, shape {list(tensor.shape)}) but rank {source} sent {got}"
        )

    def finish(status) -> int:
        got = status.Get_count(MPI.BYTE)
        if got != expected:
            raise mismatch(status.Get_source(), f"{got} bytes")
        buf.write_back()
        return status.Get_source()

    def failed(error: BaseException, status) -> BaseException:
        if isinstance(error, MPI.Exception) and error.Get_error_class() == MPI.ERR_TRUNCATE:
            return mismatch(status.Get_source() if src is None else src, f"more than {expected} bytes")
        return DistBackendError(f"[{name}] rank {pg.rank}: {error}")

    def run(work: Work) -> None:
        work._request = pg.comm.Irecv(buf.spec, source=MPI.ANY_SOURCE if src is None else src, tag=tag)
        work._finish = finish
        work._failed = failed

    return pg.submit(name, run, True)


def isend(tensor: Tensor, dst: int, group: Any = None, tag: int = 0) -> Work:
    """Starts sending ``tensor`` to rank ``dst``; returns a :class:`Work` to ``wait()`` on.

    Don't write ``tensor`` before the Work completes. ``dst`` is a rank of the default group; it
    may be this rank (MPI delivers to itself, where PyTorch's gloo backend refuses).

    Example (a rank sending to itself):
        >>> import flambeau as fb
        >>> dist = fb.distributed
        >>> dist.init_process_group("mpi")  # without mpirun: a world of one rank
        >>> t = fb.zeros(3)
        >>> received = dist.irecv(t, src=0)
        >>> dist.isend(fb.arange(3.0), dst=0).wait(), received.wait()
        (True, True)
        >>> t.tolist()
        [0.0, 1.0, 2.0]
        >>> dist.destroy_process_group()
    """
    _pg(group, "isend")
    return _isend(tensor, dst, tag, "isend")


def irecv(tensor: Tensor, src: int | None = None, group: Any = None, tag: int = 0) -> Work:
    """Starts receiving into ``tensor`` from rank ``src`` (any rank if None); returns a :class:`Work`.

    ``tensor`` holds the message once ``wait()`` returned; ``source_rank()``
    is the sender. A message of another size than ``tensor`` raises a
    FlambeauError from ``wait()``.

    Example (a rank may send to itself):
        >>> import flambeau as fb
        >>> dist = fb.distributed
        >>> dist.init_process_group("mpi")  # without mpirun: a world of one rank
        >>> t = fb.zeros(2)
        >>> work = dist.irecv(t)
        >>> dist.send(fb.tensor([4.0, 5.0]), dst=0)
        >>> work.wait(), work.source_rank(), t.tolist()
        (True, 0, [4.0, 5.0])
        >>> dist.destroy_process_group()
    """
    _pg(group, "irecv")
    return _irecv(tensor, src, tag, "irecv")


def send(tensor: Tensor, dst: int, group: Any = None, tag: int = 0) -> None:
    """Sends ``tensor`` to rank ``dst`` and waits until it is sent (a matching ``recv`` on ``dst``).

    Example (a rank may send to itself; here the receive is posted first):
        >>> import flambeau as fb
        >>> dist = fb.distributed
        >>> dist.init_process_group("mpi")  # without mpirun: a world of one rank
        >>> t = fb.zeros(2)
        >>> work = dist.irecv(t, src=0)
        >>> dist.send(fb.ones(2), dst=0)
        >>> work.wait(), t.tolist()
        (True, [1.0, 1.0])
        >>> dist.destroy_process_group()
    """
    _pg(group, "send")
    _isend(tensor, dst, tag, "send").wait()


def recv(tensor: Tensor, src: int | None = None, group: Any = None, tag: int = 0) -> int:
    """Receives into ``tensor``; returns the sender's rank (any rank when ``src`` is None).

    Example (a rank may send to itself):
        >>> import flambeau as fb
        >>> dist = fb.distributed
        >>> dist.init_process_group("mpi")  # without mpirun: a world of one rank
        >>> sent = dist.isend(fb.tensor([1, 2]), dst=0)
        >>> t = fb.zeros(2, dtype=fb.int64)
        >>> dist.recv(t), t.tolist(), sent.wait()
        (0, [1, 2], True)
        >>> dist.destroy_process_group()
    """
    _pg(group, "recv")
    return _irecv(tensor, src, tag, "recv").source_rank()


# ---------------------------------------------------------------------------
# Python objects (pickled by mpi4py)


def all_gather_object(object_list: list, obj: Any, group: Any = None) -> None:
    """``object_list[r]`` = rank r's ``obj`` (any picklable object); the list has world_size entries.

    Example:
        >>> import flambeau as fb
        >>> dist = fb.distributed
        >>> dist.init_process_group("mpi")  # without mpirun: a world of one rank
        >>> out = [None] * dist.get_world_size()
        >>> dist.all_gather_object(out, {"rank": dist.get_rank()})
        >>> out
        [{'rank': 0}]
        >>> dist.destroy_process_group()
    """
    pg = _pg(group, "all_gather_object")
    if len(object_list) != pg.world_size:
        raise ValueError(
            f"[all_gather_object] object_list must have world_size={pg.world_size} entries, got {len(object_list)}"
        )
    work = pg.submit("all_gather_object", lambda w: pg.comm.allgather(obj), True)
    object_list[:] = work.result()


def broadcast_object_list(object_list: list, src: int = 0, group: Any = None) -> None:
    """Replaces ``object_list``'s items, on every rank, by rank ``src``'s (picklable objects).

    Example:
        >>> import flambeau as fb
        >>> dist = fb.distributed
        >>> dist.init_process_group("mpi")  # without mpirun: a world of one rank
        >>> objects = ["config", 3] if dist.get_rank() == 0 else [None, None]
        >>> dist.broadcast_object_list(objects, src=0)
        >>> objects
        ['config', 3]
        >>> dist.destroy_process_group()
    """
    pg = _pg(group, "broadcast_object_list")
    src = _check_rank(pg, src, "src", "broadcast_object_list")
    work = pg.submit("broadcast_object_list", lambda w: pg.comm.bcast(list(object_list), root=src), True)
    object_list[:] = work.result()


def _done_work(pg: ProcessGroup, name: str, seconds: float) -> Work:
    """A finished Work (for a call made synchronously where a handle is expected)."""
    work = Work(pg, name)
    work._seconds = seconds
    work._set()
    return work
