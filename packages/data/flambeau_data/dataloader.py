"""DataLoader: batches from a dataset, in the main process or in worker processes.

Note [Worker pool]: with ``num_workers > 0`` the loader starts worker processes
(Note [Worker protocol] in ``_worker.py``) and keeps ``prefetch_factor *
num_workers`` tasks outstanding, handed out round-robin, each naming the ring
slot to fill (Note [Batch ring] in ``_shm.py``). Results arrive out of order on
the workers' pipes; a reorder buffer yields them in task order. While waiting,
the main process waits on every result pipe and every worker's sentinel, so a
worker that died (a signal, ``os._exit``) raises at once a RuntimeError naming
its pid, its signal or exit code and the sample indices of the batch it was
loading, instead of hanging. ``timeout`` is a deadline for each batch awaited,
counted from the call to ``next``: results of other batches arriving meanwhile
do not move it. Shutdown (exhaustion, ``del``, garbage collection, an
exception, interpreter exit through ``weakref.finalize``) tells each worker to
exit, waits briefly, terminates stragglers, drains the result pipes and
removes every segment of the pool from ``/dev/shm``. Shutdown runs only in the
process that started the pool (a forked child that inherits it does nothing).

Note [Reaping without waiting]: when an epoch of workers started for it ends
(every result in), the main process tells the workers to exit and returns at
once; a thread joins them (terminating any still there after the grace period,
as above), closes the pipes and removes the pool's segments. The epoch's end
then does not wait for the workers' exit (a worker's exit unmaps its copy of
the parent's memory: milliseconds, more on a busy machine), while the workers
are still reaped as soon as they are gone, leaving no zombie. The interpreter's
exit waits for the thread (an atexit handler), and on Python 3.12+ so does the
next fork (3.12 warns about a fork while another thread runs). Every other
shutdown (an error, a timeout, an iterator dropped mid-epoch) waits, as before.

Note [Copy-on-read]: a forked worker shares the parent's pages until it writes
to one. CPython writes to an object when it changes its reference count (any
read of it) and when the garbage collector traverses it (every container, read
or not). The pool calls ``gc.freeze()`` around the fork, so the workers'
collector never traverses what the parent had; and data that workers read
should live outside refcounted objects (tensors, NumPy arrays, or
``flambeau_data.PackedList`` for a list of Python objects), so reading it
writes nothing. ``tests/test_copy_on_read.py`` measures the workers' private
memory (USS) for both.

Start method: ``fork`` on Linux (as PyTorch), because it starts a worker in
milliseconds and shares the dataset copy-on-write instead of pickling it.
Forking a process that has threads is safe here because a worker touches no
lock a parent thread may hold: it sets core to one thread before any op (so
the OpenMP pool is never entered) and OpenBLAS resets its own pool at fork.
Pass ``multiprocessing_context="spawn"`` (or "forkserver") to opt out; the
dataset is then pickled, its tensors through shared memory
(``flambeau_data.multiprocessing``).
"""

from __future__ import annotations

import _thread
import atexit
import collections
import gc
import itertools
import math
import multiprocessing as _mp
import os
import select
import sys
import threading
import time
import warnings
import weakref
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from flambeau_core import FlambeauError
from flambeau_core import profiler as _profiler
from flambeau_core.profiler import _events as _profiler_events

from flambeau_data import _pipe, _random, _shm, _worker
from flambeau_data.collate import default_collate, default_convert
from flambeau_data.dataset import IterableDataset
from flambeau_data.sampler import BatchSampler, RandomSampler, Sampler, SequentialSampler, yields_int_batches

__all__ = ["DataLoader", "get_pin_memory_allocator", "set_pin_memory_allocator"]

_POLL = 0.05  # seconds between liveness checks while waiting for a batch
_JOIN_TIMEOUT = 2.0  # how long shutdown waits for a worker before terminating it
_pool_ids = itertools.count()
_reaping: set = set()  # pools whose workers a thread is reaping (Note [Reaping without waiting])
_PRESEND = 16384  # bytes of tasks written into a worker's pipe before it starts (Note [Tasks before the fork])
_PRESEND_INDICES = 1024  # the largest batch whose tasks are drawn before the workers start


_pin_allocator: Any = None
_pin_warned = False


def set_pin_memory_allocator(allocator: Any) -> None:
    """Registers the allocator of page-locked ("pinned") host memory that ``pin_memory=True`` uses.

    ``allocator`` is what ``flambeau_core.set_allocator`` accepts (a core
    ``Allocator``, or an object with ``malloc(nbytes)`` and ``free(ptr)``), or
    None to unregister. With one registered, a loader with ``pin_memory=True``
    copies each batch's tensors into memory from it before yielding the batch;
    without one, ``pin_memory=True`` changes nothing and says so once (a
    UserWarning).

    Example:
        >>> import flambeau as fb
        >>> from flambeau.utils.data import DataLoader, get_pin_memory_allocator, set_pin_memory_allocator
        >>> previous = get_pin_memory_allocator()
        >>> set_pin_memory_allocator(fb.system_allocator())  # stands in for a pinned-host allocator
        >>> [b.tolist() for b in DataLoader(fb.arange(4), batch_size=2, pin_memory=True)]
        [[0, 1], [2, 3]]
        >>> set_pin_memory_allocator(previous)
    """
    global _pin_allocator
    _pin_allocator = allocator


def get_pin_memory_allocator() -> Any:
    """The allocator registered with :func:`set_pin_memory_allocator`, or None.

    Example:
        >>> import flambeau as fb
        >>> from flambeau.utils.data import get_pin_memory_allocator, set_pin_memory_allocator
        >>> previous = get_pin_memory_allocator()
        >>> set_pin_memory_allocator(fb.system_allocator())
        >>> get_pin_memory_allocator().name
        'system'
        >>> set_pin_memory_allocator(previous)
    """
    return _pin_allocator


def _pin(batch: Any) -> Any:
    """``batch`` with every tensor copied into memory from the pinned allocator.

    The copies take their memory from the allocator directly: the current
    allocator is not swapped, which would hand pinned memory to whatever other
    threads allocate meanwhile (and the pinned allocator's blocks back to theirs).
    """
    from flambeau_core._C import _clone_with_allocator

    from flambeau_data.collate import _map_tensors

    allocator = _pin_allocator
    return _map_tensors(batch, lambda t: _clone_with_allocator(t, allocator))


def _is_iterable_style(dataset: Any) -> bool:
    # Anything with __iter__ but no __getitem__ (a generator, a custom iterable) is iterable-style too.
    if isinstance(dataset, IterableDataset):
        return True
    return not hasattr(dataset, "__getitem__") and hasattr(dataset, "__iter__")


class _InfiniteConstantSampler(Sampler[None]):
    def __iter__(self) -> Iterator[None]:
        while True:
            yield None


class DataLoader:
    """Iterates over a dataset in batches, optionally with worker processes.

    PyTorch's arguments and semantics. Differences: ``pin_memory=True`` pins
    only when a pinned allocator is registered (:func:`set_pin_memory_allocator`;
    otherwise it warns once and does nothing); with workers, each batch's
    tensors arrive in shared memory that the main process maps zero-copy (their
    ``_allocator`` is None: external memory), in a ring of buffers reused once
    the batch's tensors are gone (Note [Batch ring]). Any object with ``__iter__`` but
    no ``__getitem__`` (a generator, a custom iterable) is treated as an
    iterable-style dataset.

    Args:
        dataset: a map-style (``__getitem__``/``__len__``) or iterable-style dataset.
        batch_size: samples per batch; None disables automatic batching.
        shuffle: reshuffle every epoch (seeded from flambeau-core's generator).
        sampler: the order of indices (exclusive with ``shuffle``).
        batch_sampler: yields lists of indices (exclusive with batch_size, shuffle, sampler, drop_last).
        num_workers: worker processes; 0 loads in the main process.
        collate_fn: merges a list of samples into a batch (``default_collate``).
        pin_memory: copy batches into pinned memory when a pinned allocator is
            registered (:func:`set_pin_memory_allocator`); otherwise a no-op
            that warns once.
        drop_last: drop the last incomplete batch.
        timeout: seconds to wait for a batch from the workers (0: forever);
            exceeding it raises RuntimeError.
        worker_init_fn: called as ``worker_init_fn(worker_id)`` in each worker.
        multiprocessing_context: a start method name or a context; default fork on Linux.
        generator: seeds the random sampler and the workers' base seed.
        prefetch_factor: batches loaded in advance per worker (default 2; None without workers).
        persistent_workers: keep the workers alive across epochs.
        pin_memory_device: accepted for PyTorch compatibility (host memory only).
        in_order: yield batches in sampler order (False: as soon as any is ready).

    Example:
        >>> import flambeau_core as fc
        >>> from flambeau_data import TensorDataset
        >>> ds = TensorDataset(fc.zeros(10, 3), fc.arange(10))
        >>> [tuple(x.shape) for x, y in DataLoader(ds, batch_size=4)]
        [(4, 3), (4, 3), (2, 3)]
    """

    def __init__(
        self,
        dataset: Any,
        batch_size: int | None = 1,
        shuffle: bool | None = None,
        sampler: Sampler | Iterable | None = None,
        batch_sampler: Sampler | Iterable | None = None,
        num_workers: int = 0,
        collate_fn: Callable[[list], Any] | None = None,
        pin_memory: bool = False,
        drop_last: bool = False,
        timeout: float = 0,
        worker_init_fn: Callable[[int], None] | None = None,
        multiprocessing_context: Any = None,
        generator: Any = None,
        *,
        prefetch_factor: int | None = None,
        persistent_workers: bool = False,
        pin_memory_device: str = "",
        in_order: bool = True,
    ) -> None:
        if not isinstance(num_workers, int) or isinstance(num_workers, bool) or num_workers < 0:
            raise FlambeauError(
                "[DataLoader] num_workers option should be non-negative; use num_workers=0 to disable multiprocessing, "
                f"got {num_workers!r}"
            )
        if timeout < 0:
            raise FlambeauError(f"[DataLoader] timeout option should be non-negative, got {timeout}")
        if num_workers == 0 and prefetch_factor is not None:
            raise FlambeauError(
                "[DataLoader] prefetch_factor option could only be specified in multiprocessing. "
                "Let num_workers > 0 to enable multiprocessing, otherwise set prefetch_factor to None."
            )
        if num_workers > 0 and prefetch_factor is None:
            prefetch_factor = 2
        if prefetch_factor is not None and (not isinstance(prefetch_factor, int) or prefetch_factor < 1):
            raise FlambeauError(
                f"[DataLoader] prefetch_factor option should be a positive integer, got {prefetch_factor!r}"
            )
        if persistent_workers and num_workers == 0:
            raise FlambeauError("[DataLoader] persistent_workers option needs num_workers > 0")

        self.dataset = dataset
        self.num_workers = num_workers
        self.prefetch_factor = prefetch_factor
        self.pin_memory = bool(pin_memory)
        self.pin_memory_device = pin_memory_device
        self.in_order = bool(in_order)
        self.timeout = timeout
        self.worker_init_fn = worker_init_fn
        self.persistent_workers = persistent_workers
        self.generator = generator
        self._iterable = _is_iterable_style(dataset)

        if self._iterable:
            if shuffle not in (None, False):
                raise FlambeauError(
                    f"[DataLoader] with IterableDataset: expected unspecified shuffle option, but got shuffle={shuffle}"
                )
            if sampler is not None:
                raise FlambeauError(
                    f"[DataLoader] with IterableDataset: expected unspecified sampler option, but got sampler={sampler}"
                )
            if batch_sampler is not None:
                raise FlambeauError(
                    "[DataLoader] with IterableDataset: expected unspecified batch_sampler option, "
                    f"but got batch_sampler={batch_sampler}"
                )
        shuffle = bool(shuffle)
        if sampler is not None and shuffle:
            raise FlambeauError("[DataLoader] sampler option is mutually exclusive with shuffle")
        if batch_sampler is not None:
            if batch_size != 1 or shuffle or sampler is not None or drop_last:
                raise FlambeauError(
                    "[DataLoader] batch_sampler option is mutually exclusive with "
                    "batch_size, shuffle, sampler, and drop_last"
                )
            batch_size = None
            drop_last = False
        elif batch_size is None and drop_last:
            raise FlambeauError(
                "[DataLoader] batch_size=None option disables auto-batching and is mutually exclusive with drop_last"
            )
        if batch_size is not None and (
            not isinstance(batch_size, int) or isinstance(batch_size, bool) or batch_size <= 0
        ):
            raise FlambeauError(
                f"[DataLoader] batch_size should be a positive integer value, but got batch_size={batch_size!r}"
            )

        if sampler is None:
            if self._iterable:
                sampler = _InfiniteConstantSampler()
            elif shuffle:
                sampler = RandomSampler(dataset, generator=generator)
            else:
                sampler = SequentialSampler(dataset)
        if batch_size is not None and batch_sampler is None:
            batch_sampler = BatchSampler(sampler, batch_size, drop_last)

        self.batch_size = batch_size
        self.drop_last = drop_last
        self.sampler = sampler
        self.batch_sampler = batch_sampler
        if collate_fn is None:
            collate_fn = default_collate if self._auto_collation else default_convert
        self.collate_fn = collate_fn
        self.multiprocessing_context = multiprocessing_context
        self._iterator: _MultiProcessIterator | None = None
        self._slot_cache: list = []  # free ring slots kept from one epoch to the next (Note [Slots across epochs])

    @property
    def _auto_collation(self) -> bool:
        return self.batch_sampler is not None

    @property
    def _index_sampler(self) -> Any:
        return self.batch_sampler if self._auto_collation else self.sampler

    def _context(self) -> Any:
        ctx = self.multiprocessing_context
        if ctx is None:
            methods = _mp.get_all_start_methods()
            return _mp.get_context("fork" if "fork" in methods else methods[0])
        if isinstance(ctx, str):
            return _mp.get_context(ctx)
        return ctx

    def __iter__(self) -> Iterator[Any]:
        if self.num_workers == 0:
            return _SingleProcessIterator(self)
        if self.persistent_workers:
            if self._iterator is None or not self._iterator._pool.alive:
                self._iterator = _MultiProcessIterator(self)
            else:
                self._iterator._reset(self)
            return self._iterator
        return _MultiProcessIterator(self)

    def __len__(self) -> int:
        if self._iterable:
            n = len(self.dataset)
            if self.batch_size is not None:
                n = n // self.batch_size if self.drop_last else -(-n // self.batch_size)
            return n
        return len(self._index_sampler)


class _BaseIterator:
    def __init__(self, loader: DataLoader) -> None:
        self._dataset = loader.dataset
        self._iterable = loader._iterable
        self._auto_collation = loader._auto_collation
        self._collate_fn = loader.collate_fn
        self._drop_last = loader.drop_last
        self._batch_size = loader.batch_size
        self._index_sampler = loader._index_sampler
        self._length = None
        try:
            self._length = len(loader)
        except TypeError:
            pass
        self._sampler_iter = iter(self._index_sampler)
        # Drawn with or without workers (as PyTorch), so a seeded shuffle is the same either way.
        self._base_seed = _random.draw_seed(loader.generator)
        self._yielded = 0
        self._profile_name = f"enumerate(DataLoader)#{type(self).__name__}.__next__"
        self._pin = loader.pin_memory and _pin_allocator is not None
        if loader.pin_memory and _pin_allocator is None:
            global _pin_warned
            if not _pin_warned:
                _pin_warned = True
                warnings.warn(
                    "[DataLoader] pin_memory=True has no effect: no pinned-memory allocator is registered "
                    "(flambeau_data.set_pin_memory_allocator); batches stay in ordinary memory.",
                    UserWarning,
                    stacklevel=3,
                )

    def __iter__(self) -> _BaseIterator:
        return self

    def __next__(self) -> Any:
        if _profiler._active is None:  # no profile records: no range to open
            return self._next_data()
        # The range PyTorch's profiler shows around fetching a batch (Note [Observation] in core).
        with _profiler._range(self._profile_name, _profiler_events.KIND_DATALOADER):
            return self._next_data()

    def _next_data(self) -> Any:
        raise NotImplementedError

    def __len__(self) -> int:
        if self._length is None:
            raise TypeError("[DataLoader] this dataset has no length")
        return self._length


class _SingleProcessIterator(_BaseIterator):
    def __init__(self, loader: DataLoader) -> None:
        super().__init__(loader)
        self._fetcher = _worker.make_fetcher(
            self._dataset, self._iterable, self._auto_collation, self._collate_fn, self._drop_last, self._batch_size
        )

    def _next_data(self) -> Any:
        indices = next(self._sampler_iter)  # StopIteration ends the epoch
        try:
            batch = self._fetcher.fetch(indices)
        except StopIteration:
            raise
        except Exception as e:
            if indices is not None and hasattr(e, "add_note"):
                e.add_note(f"[DataLoader] while loading the batch of sample indices {_worker.format_indices(indices)}")
            raise
        self._yielded += 1
        return _pin(batch) if self._pin else batch


def _signal_description(code: int) -> tuple[str, str]:
    import signal

    try:
        sig = signal.Signals(-code)
    except ValueError:
        return f"signal {-code}", ""
    return sig.name, signal.strsignal(sig) or ""


def _death_message(wid: int, pid: int | None, code: int, task: tuple[int, Any] | None) -> str:
    """Why worker ``wid`` is gone, what it was loading, and advice that is safe to follow."""
    what = ""
    if task is not None:
        task_id, indices = task
        what = f" while loading batch {task_id}"
        if indices is not None:
            what += f" (sample indices {_worker.format_indices(indices)})"
    if code < 0:
        name, desc = _signal_description(code)
        msg = f"[DataLoader] worker {wid} (pid {pid}) was killed by signal {name}" + (f" ({desc})" if desc else "")
        msg += f"{what}. "
        if name == "SIGKILL":
            msg += (
                "SIGKILL is what the kernel's out-of-memory killer sends: check `dmesg` and the workers' memory "
                "(fewer workers, a smaller prefetch_factor or batch_size), or whether something else killed it."
            )
        else:
            msg += (
                "A signal, not a Python exception (which would have been re-raised here with its traceback): "
                "the crash is in native code the dataset, collate_fn or worker_init_fn called. Do not re-run it "
                "with num_workers=0, which would crash the main process the same way; load the samples at those "
                "indices in a separate process, and read the worker's Python stack that faulthandler printed "
                "to stderr just before this error."
            )
        return msg
    return (
        f"[DataLoader] worker {wid} (pid {pid}) exited unexpectedly with exit code {code}{what}. "
        "Something in the dataset, collate_fn or worker_init_fn ended the process (os._exit(), or a native "
        "library that called exit()); load the samples at those indices in a separate process to find it."
    )


def _start_method(ctx: Any) -> str:
    try:
        return ctx.get_start_method()
    except (AttributeError, ValueError):
        return str(ctx)


def _unpicklable_part(loader: DataLoader) -> str:
    """Names what of the loader cannot be pickled for spawn/forkserver workers ("" if none is found)."""
    import io
    from multiprocessing.reduction import ForkingPickler

    import flambeau_core as fc

    class _Probe(ForkingPickler):
        # Tensors stand for themselves: probing must not write shared-memory segments.
        def persistent_id(self, obj: Any) -> Any:
            return 0 if isinstance(obj, fc.Tensor) else None

    for name, obj in (
        ("dataset", loader.dataset),
        ("collate_fn", loader.collate_fn),
        ("worker_init_fn", loader.worker_init_fn),
    ):
        try:
            _Probe(io.BytesIO(), 4).dump(obj)
        except Exception as e:  # noqa: BLE001 (any pickling failure names the culprit)
            return (
                f"the {name} ({type(obj).__qualname__} object {obj!r:.80}) cannot be pickled: {type(e).__name__}: {e}"
            )
    return ""


class _WorkerPool:
    """The processes, queues and batch ring of one multi-process iterator (Note [Worker pool]).

    Holds no reference to the iterator, so ``weakref.finalize`` can shut it down
    when the iterator is collected.
    """

    def __init__(self, loader: DataLoader, base_seed: int) -> None:
        ctx = loader._context()
        method = _start_method(ctx)
        self.owner_pid = os.getpid()
        self.prefix = f"fbdata_{os.getpid()}_{next(_pool_ids)}_{os.urandom(3).hex()}_"
        # Note [Slots across epochs]: forked workers started every epoch get the free slots of the loader's
        # last epoch, inherited mapped; the pool leaves its own there when its epoch ends (keep_free_slots).
        self._slot_cache: list | None = None
        if method == "fork" and not loader.persistent_workers:
            self._slot_cache = loader._slot_cache
        reuse = list(self._slot_cache or ())
        if self._slot_cache:
            self._slot_cache.clear()
        self.ring = _shm.MainRing(loader.num_workers, loader.prefetch_factor + 2, reuse)  # type: ignore[operator]
        self.index_conns: list[Any] = []  # main -> worker
        self.result_conns: list[Any] = []  # worker -> main
        self._results_in: list[_pipe.Reader] = []  # each result pipe read through a buffer (Note [Pipe messages])
        self.workers: list[Any] = []
        self.alive = True
        self._lock = threading.Lock()
        self._finish_lock = threading.Lock()
        self._finished = False
        self._ready: collections.deque = collections.deque()  # messages read but not yet returned
        self._ctx, self._method, self._base_seed = ctx, method, base_seed
        # Note [Tasks before the fork]: tasks handed out before start() wait here (pickled); start() writes
        # each worker's first ones into its new task pipe before forking it (up to _PRESEND bytes, which
        # the pipe's buffer holds without a reader), so a worker finds its first batch waiting instead of
        # idling while the main process forks the next worker and then hands out the tasks.
        # Drawn before the fork, a task's indices are inherited by the workers, and pages the main process
        # frees them from later stay in the workers: only small tasks (up to _PRESEND_INDICES indices) are,
        # and only while they fit in the pipes.
        self._pending: list[list[bytes]] | None = [[] for _ in range(loader.num_workers)]
        self._pickler = _pipe.Pickler()  # tasks pickled as Connection.send would (Note [Pipe messages])
        self.int_tasks = False  # the batches are lists of ints: tasks packed (Note [Packed messages]); per epoch
        self._presend = loader._iterable or (
            not loader._auto_collation or (loader.batch_size is not None and loader.batch_size <= _PRESEND_INDICES)
        )

    def start(self, loader: DataLoader) -> None:
        """Starts the workers, their first tasks already in their pipes (Note [Tasks before the fork])."""
        ctx, method, base_seed = self._ctx, self._method, self._base_seed
        pending = self._pending or [[] for _ in range(loader.num_workers)]
        tensor_segments = _tensor_segments() if method != "fork" else set()
        if method == "fork" and sys.version_info >= (3, 12):
            # Python 3.12 warns about a fork while another thread runs: an earlier epoch's workers are
            # reaped first (Note [Reaping without waiting]).
            _finish_reaping()
        # Note [Copy-on-read]: objects that exist now are moved out of the collector's reach in the
        # children, so a worker's garbage collection never writes to (and un-shares) their pages.
        frozen = method == "fork" and _freeze_gc()
        try:
            for wid in range(loader.num_workers):
                task_r, task_w = ctx.Pipe(duplex=False)
                result_r, result_w = ctx.Pipe(duplex=False)
                self.index_conns.append(task_w)
                self.result_conns.append(result_r)
                self._results_in.append(_pipe.Reader(result_r))
                tasks, written = pending[wid], 0
                while tasks and written + len(tasks[0]) <= _PRESEND:
                    written += len(tasks[0])
                    _pipe.write(task_w, tasks.pop(0))
                w = ctx.Process(
                    target=_worker.worker_loop,
                    args=(
                        wid,
                        loader.num_workers,
                        loader.dataset,
                        loader._iterable,
                        loader._auto_collation,
                        loader.collate_fn,
                        loader.drop_last,
                        loader.batch_size,
                        task_r,
                        result_w,
                        base_seed,
                        loader.worker_init_fn,
                        self.prefix,
                        os.getpid(),
                        self.ring.inherited[wid] if method == "fork" else None,
                    ),
                    daemon=True,
                )
                try:
                    w.start()
                finally:
                    task_r.close()  # the child's ends: closed here so a dead worker reads as EOF
                    result_w.close()
                self.workers.append(w)
                for data in tasks:  # what the pipe might not hold before the worker reads
                    _pipe.write(task_w, data)
            self._pending = None
            self.ring.inherited = []  # the workers have them; the ring's own references are in its maps
        except Exception as e:
            self.shutdown()
            if method == "fork":
                raise
            # Segments written for tensors pickled before the failure would never be received.
            for name in _tensor_segments() - tensor_segments:
                _shm._unlink(os.path.join(_shm.SHM_DIR, name))
            culprit = _unpicklable_part(loader)
            if not culprit:
                raise
            raise TypeError(
                f"[DataLoader] with multiprocessing_context={method!r} the dataset, collate_fn and "
                f"worker_init_fn are pickled to reach the workers, but {culprit}. Define classes and functions "
                "at module level (not inside a function, no lambdas), leave out what cannot cross processes "
                "(locks, open files, connections), or use the 'fork' context."
            ) from e
        except BaseException:
            self.shutdown()
            raise
        finally:
            if frozen:
                gc.unfreeze()
        # Note [Worker fast path]: poll objects made once (Connection.poll and connection.wait build a
        # selector per call): one per result pipe, and one over every result pipe and sentinel.
        self._result_polls = []
        self._poller = select.poll()
        self._fds: dict[int, tuple[bool, int]] = {}  # fd -> (is a result pipe, worker id)
        for wid, (conn, w) in enumerate(zip(self.result_conns, self.workers, strict=True)):
            one = select.poll()
            one.register(conn.fileno(), select.POLLIN)
            self._result_polls.append(one)
            self._poller.register(conn.fileno(), select.POLLIN)
            self._poller.register(w.sentinel, select.POLLIN)
            self._fds[conn.fileno()] = (True, wid)
            self._fds[w.sentinel] = (False, wid)

    def get(
        self, deadline: float | None, tasks: Callable[[], dict[int, tuple[int, Any, int]]], expect: int | None = None
    ) -> Any:
        """The next message from any worker, or None once ``deadline`` passes.

        Waits on every result pipe and every worker's sentinel at once. A worker
        that exited is reported (RuntimeError) once its pipe holds no more
        results: ``tasks()`` maps each task not yet received to (worker id,
        indices, slot), and the dead worker's oldest one is the batch it was on.
        ``expect``: the worker whose result is awaited, returned first if it was read in already.
        Messages read in with an earlier one (Note [Pipe messages]) are taken before the pipes
        are polled, which no longer shows them.
        """
        while True:
            if self._ready:
                return self._ready.popleft()
            if expect is not None:
                if self._results_in[expect].pending():  # the batch awaited is here: no system call
                    return _shm.loads_result(self._results_in[expect].recv_bytes())
                expect = None
            for reader in self._results_in:
                if reader.pending():
                    self._ready.append(_shm.loads_result(reader.recv_bytes()))
            if self._ready:
                continue
            if deadline is None:
                events = self._poller.poll()
            else:
                events = self._poller.poll(max(0, math.ceil((deadline - time.monotonic()) * 1000)))
            if not events:
                if deadline is not None and time.monotonic() >= deadline:
                    return None
                continue
            dead = []
            sentinels = []
            for fd, _ in sorted(events, key=lambda e: not self._fds[e[0]][0]):  # result pipes first
                is_pipe, wid = self._fds[fd]
                if not is_pipe:
                    sentinels.append(wid)
                    continue
                try:
                    self._ready.append(_shm.loads_result(self._results_in[wid].recv_bytes()))
                except (EOFError, OSError):
                    dead.append(wid)
            for wid in sentinels:
                if wid in dead or self._results_in[wid].pending() or self._result_polls[wid].poll(0):
                    continue  # results are still there to read first
                dead.append(wid)
            if self._ready:
                continue
            for wid in dead:
                w = self.workers[wid]
                w.join(timeout=_JOIN_TIMEOUT)
                code = w.exitcode if w.exitcode is not None else 0
                mine = sorted((t, rec[1]) for t, rec in tasks().items() if rec[0] == wid)
                self.shutdown()
                raise RuntimeError(_death_message(wid, w.pid, code, mine[0] if mine else None))

    def keep_free_slots(self) -> None:
        """Leaves the free slots' mappings to the loader's next epoch (Note [Slots across epochs]).

        Only once every result is in: a free slot then has no task, and no batch of it is alive.
        """
        if self._slot_cache is not None and os.getpid() == self.owner_pid:
            self._slot_cache[:] = self.ring.detach_free(_shm.REUSE_LIMIT)

    def takes_tasks(self) -> bool:
        """False while tasks handed out now would wait for the start (Note [Tasks before the fork])."""
        return self._pending is None or self._presend

    def send(self, wid: int, task: Any) -> None:
        data = None
        if self.int_tasks and type(task) is tuple and task[3] is None and type(task[1]) is list:
            data = _pipe.pack_task(task[0], task[1], task[2])  # Note [Packed messages]
        if data is None:
            data = self._pickler.dumps(task)
        if self._pending is not None:  # not started: written by start() (Note [Tasks before the fork])
            self._pending[wid].append(data)
            if sum(map(len, self._pending[wid])) > _PRESEND:
                self._presend = False  # this pipe is full: draw no more before the start
            return
        try:
            _pipe.write(self.index_conns[wid], data)
        except (BrokenPipeError, ConnectionResetError):
            pass  # the worker died: get() sees its sentinel and names the batch it was loading

    def shutdown(self, grace: float = _JOIN_TIMEOUT, wait: bool = True) -> None:
        """Stops the workers and removes the pool's segments. Idempotent; owner process only.

        Workers get ``grace`` seconds to exit when told, then are terminated.
        ``wait=False`` (Note [Reaping without waiting]): the workers are told to
        exit and the call returns; a thread joins them and removes the segments.
        """
        if os.getpid() != self.owner_pid:
            return
        with self._lock:
            if not self.alive:
                return
            self.alive = False
        for conn in self.index_conns:
            try:
                conn.send(None)
            except (OSError, ValueError):
                pass
        if not wait and self.workers:
            # A bare thread: threading.Thread.start would wait until the new thread runs (milliseconds on
            # a busy machine). The interpreter's exit waits for it through _finish_reaping (atexit).
            _reaping.add(self)
            try:
                _thread.start_new_thread(_reap, (self, grace))
                return
            except RuntimeError:
                _reaping.discard(self)  # no thread can start (interpreter shutdown): wait here
        self._finish(grace)

    def _finish(self, grace: float) -> None:
        """Joins the workers told to exit (terminating those still there after ``grace`` seconds), then
        closes the pipes and removes the pool's segments. Once; a second call waits for the first."""
        with self._finish_lock:
            if self._finished:
                return
            self._finished = True
            self._join_and_clean(grace)

    def _join_and_clean(self, grace: float) -> None:
        try:
            deadline = time.monotonic() + grace
            for w in self.workers:
                while w.exitcode is None and time.monotonic() < deadline:
                    self._drain()
                    w.join(timeout=_POLL)
            for w in self.workers:
                if w.exitcode is None:
                    w.terminate()
                    w.join(timeout=1.0)
                if w.exitcode is None:
                    w.kill()
                    w.join()
            self._drain()
        finally:
            for conn in [*self.index_conns, *self.result_conns]:
                try:
                    conn.close()
                except OSError:
                    pass
            # Slot files of the ring whose names were never received, and anything a dead worker left.
            _shm.remove_segments(self.prefix)
            self.ring.close()

    def _drain(self) -> None:
        """Reads what the workers sent (a worker blocked on a full pipe can then exit)."""
        for conn, reader in zip(self.result_conns, self._results_in, strict=True):
            try:
                while reader.pending() or conn.poll(0):
                    _shm.loads_result(reader.recv_bytes())  # unpickled, as Connection.recv would
            except Exception:  # noqa: BLE001 (EOF, a torn message of a killed worker: nothing to keep)
                continue
        self._ready.clear()


def _reap(pool: _WorkerPool, grace: float) -> None:
    """Body of the thread that reaps an ended epoch's workers (Note [Reaping without waiting])."""
    try:
        pool._finish(grace)
    except BaseException:  # noqa: BLE001 (nothing to report to: the epoch is over; interpreter shutdown)
        pass
    finally:
        _reaping.discard(pool)


def _finish_reaping() -> None:
    """Waits until every ended epoch's workers are reaped (at exit, and before a fork on Python 3.12+)."""
    for pool in list(_reaping):
        if pool.owner_pid == os.getpid():  # a forked child inherits the set, not the threads
            pool._finish(_JOIN_TIMEOUT)


atexit.register(_finish_reaping)


def _tensor_segments() -> set[str]:
    try:
        return {n for n in os.listdir(_shm.SHM_DIR) if n.startswith(f"fbtensor_{os.getpid()}_")}
    except OSError:
        return set()


def _freeze_gc() -> bool:
    """Freezes the collector's objects for a fork; True if the caller must unfreeze afterwards.

    A program that froze objects itself keeps them frozen (no unfreeze then).
    """
    if not hasattr(gc, "freeze"):
        return False
    already = gc.get_freeze_count() > 0
    gc.freeze()
    return not already


class _MultiProcessIterator(_BaseIterator):
    def __init__(self, loader: DataLoader) -> None:
        super().__init__(loader)
        self._num_workers = loader.num_workers
        self._prefetch = loader.prefetch_factor * loader.num_workers  # type: ignore[operator]
        self._timeout = loader.timeout
        self._persistent = loader.persistent_workers
        self._in_order = loader.in_order
        self._pool = _WorkerPool(loader, self._base_seed)
        self._finalizer = weakref.finalize(self, self._pool.shutdown)
        try:
            self._reset(loader, first=True)  # the first tasks, written before the workers start
            self._pool.start(loader)
            for _ in range(self._prefetch):  # the tasks not drawn before the start
                self._try_put_index()
        except BaseException:
            self._pool.shutdown()
            raise

    def _reset(self, loader: DataLoader, first: bool = False) -> None:
        old_tasks = {} if first else self._task_worker  # the abandoned epoch's, to free their slots
        if not first:
            super().__init__(loader)
        self._send_idx = 0  # next task id to hand out
        self._rcvd_idx = 0  # next task id to yield
        self._task_worker: dict[int, tuple[int, Any, int]] = {}  # outstanding task id -> (worker, indices, slot)
        self._buffer: dict[int, Any] = {}  # received out of order: task id -> payload
        self._active = [True] * self._num_workers  # False once an iterable dataset ran out in that worker
        self._worker_cycle = itertools.cycle(range(self._num_workers))
        self._exhausted = False
        self._pool.int_tasks = yields_int_batches(loader._index_sampler)
        if not first:
            resume = _worker._ResumeIteration(self._base_seed)
            for wid in range(self._num_workers):
                self._pool.send(wid, resume)
            pending = self._num_workers
            while pending:
                wid, task_id, payload = self._get(None)
                if isinstance(payload, _worker._ResumeIteration) and payload == resume:
                    pending -= 1
                elif isinstance(payload, _shm.ShmBatch):
                    self._pool.ring.discard(wid, payload)  # a stale result of an abandoned epoch
                elif task_id in old_tasks:
                    self._pool.ring.release(wid, old_tasks[task_id][2])
        for _ in range(self._prefetch):
            if not self._pool.takes_tasks():
                break  # the rest once the workers run (Note [Tasks before the fork])
            self._try_put_index()

    def _try_put_index(self) -> None:
        if self._exhausted or len(self._task_worker) >= self._prefetch:
            return
        try:
            indices = next(self._sampler_iter)
        except StopIteration:
            self._exhausted = True
            return
        for _ in range(self._num_workers):
            wid = next(self._worker_cycle)
            if self._active[wid]:
                break
        else:
            self._exhausted = True
            return
        slot = self._pool.ring.take(wid)
        self._pool.send(wid, (self._send_idx, indices, slot, _profiler._worker_config()))
        self._task_worker[self._send_idx] = (wid, indices, slot)
        self._send_idx += 1

    def _unreceived(self) -> dict[int, tuple[int, Any, int]]:
        return {t: r for t, r in self._task_worker.items() if t not in self._buffer}

    def _get(self, deadline: float | None) -> tuple[int, Any, Any]:
        """The next message from the workers; a dead worker or the batch's deadline raise."""
        rec = self._task_worker.get(self._rcvd_idx)
        msg = self._pool.get(deadline, self._unreceived, rec[0] if rec is not None else None)
        while msg is not None and type(msg[2]) is _worker.WorkerEvents:
            _profiler._add_worker_events(msg[2].pid, msg[2].events)  # the profile of a batch that follows
            msg = self._pool.get(deadline, self._unreceived, rec[0] if rec is not None else None)
        if msg is not None:
            return msg
        what = ""
        if rec is not None:
            wid, indices, _ = rec
            what = f" {self._rcvd_idx} from worker {wid} (pid {self._pool.workers[wid].pid})"
            if indices is not None:
                what += f", sample indices {_worker.format_indices(indices)}"
        self._shutdown(grace=0.1)  # a worker is stuck: no point waiting for it
        raise RuntimeError(f"[DataLoader] timed out after {self._timeout} seconds waiting for batch{what}")

    def _next_data(self) -> Any:
        if not self._pool.alive:
            raise StopIteration
        # One deadline for the batch awaited, however many other results arrive meanwhile.
        deadline = time.monotonic() + self._timeout if self._timeout > 0 else None
        while True:
            # Skip tasks whose worker ran out of data (iterable datasets).
            while self._rcvd_idx < self._send_idx and self._rcvd_idx not in self._task_worker:
                self._rcvd_idx += 1
            if self._rcvd_idx >= self._send_idx and self._exhausted:
                if not self._persistent and self._pool.alive:
                    # Every result is in: the free slots go to the next epoch, and the workers exit and are
                    # reaped without holding up the epoch's end (Note [Reaping without waiting]).
                    self._pool.keep_free_slots()
                    self._pool.shutdown(wait=False)
                raise StopIteration
            key = self._rcvd_idx if self._rcvd_idx in self._buffer else None
            if key is None and not self._in_order and self._buffer:
                key = next(iter(self._buffer))
            if key is not None:
                payload = self._buffer.pop(key)
                del self._task_worker[key]
                if key == self._rcvd_idx:
                    self._rcvd_idx += 1
                self._try_put_index()
                return self._process(payload)
            if self._rcvd_idx >= self._send_idx:
                # Nothing outstanding but not exhausted: every worker is out of data.
                self._exhausted = True
                continue
            wid, task_id, payload = self._get(deadline)
            if task_id is None:
                continue  # a resume acknowledgement (handled in _reset)
            if isinstance(payload, _shm.ShmBatch):
                # Map at once so the slot's name (if new) leaves /dev/shm now.
                payload = _Received(self._pool.ring.receive(wid, payload, self._pool.ring.release))
            else:
                rec = self._task_worker.get(task_id)
                if rec is not None:
                    self._pool.ring.release(wid, rec[2])
            if isinstance(payload, _worker._IterableExhausted):
                self._active[wid] = False
                self._task_worker.pop(task_id, None)
                self._try_put_index()
                continue
            if task_id == self._rcvd_idx and task_id in self._task_worker:
                # The batch awaited (nearly always, in order): yielded at once, not through the reorder buffer.
                del self._task_worker[task_id]
                self._rcvd_idx += 1
                self._try_put_index()
                return self._process(payload)
            self._buffer[task_id] = payload

    def _process(self, payload: Any) -> Any:
        if isinstance(payload, _worker.ExceptionWrapper):
            self._shutdown()
            payload.reraise()
        self._yielded += 1
        return _pin(payload.batch) if self._pin else payload.batch

    def _shutdown(self, grace: float = _JOIN_TIMEOUT) -> None:
        self._buffer.clear()
        self._pool.shutdown(grace)


class _Received:
    __slots__ = ("batch",)

    def __init__(self, batch: Any) -> None:
        self.batch = batch
