"""DataLoader: batches from a dataset, in the main process or in worker processes.

Note [Worker pool]: with ``num_workers > 0`` the loader starts worker processes
(Note [Worker protocol] in ``_worker.py``) and keeps ``prefetch_factor *
num_workers`` tasks outstanding, handed out round-robin. Results arrive out of
order on one queue; a reorder buffer yields them in task order. While waiting,
the main process polls the workers every ``_POLL`` seconds, so a worker that
died (a signal, ``os._exit``) raises a RuntimeError naming its pid and exit code
instead of hanging. Shutdown (exhaustion, ``del``, garbage collection, an
exception, interpreter exit through ``weakref.finalize``) tells each worker to
exit, waits briefly, terminates stragglers, drains the result queue and
removes every segment of the pool from ``/dev/shm`` (Note [Shared-memory
batches]). Shutdown runs only in the process that started the pool (a forked
child that inherits it does nothing).

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

import itertools
import multiprocessing as _mp
import os
import queue
import threading
import time
import weakref
from collections.abc import Callable, Iterable, Iterator
from typing import Any

from flambeau_core import FlambeauError

from flambeau_data import _random, _shm, _worker
from flambeau_data.collate import default_collate, default_convert
from flambeau_data.dataset import IterableDataset
from flambeau_data.sampler import BatchSampler, RandomSampler, Sampler, SequentialSampler

__all__ = ["DataLoader"]

_POLL = 0.05  # seconds between liveness checks while waiting for a batch
_JOIN_TIMEOUT = 2.0  # how long shutdown waits for a worker before terminating it
_pool_ids = itertools.count()


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

    PyTorch's arguments and semantics. Differences: ``pin_memory=True`` is
    accepted and is a no-op (flambeau has no page-locked host memory yet; on a
    CPU-only machine there is nothing to pin for); with workers, each batch's
    tensors arrive in shared memory that the main process maps zero-copy (their
    ``_allocator`` is None: external memory). Any object with ``__iter__`` but
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
        pin_memory: accepted; a no-op on CPU (see above).
        drop_last: drop the last incomplete batch.
        timeout: seconds to wait for a batch from the workers (0: forever);
            exceeding it raises RuntimeError.
        worker_init_fn: called as ``worker_init_fn(worker_id)`` in each worker.
        multiprocessing_context: a start method name or a context; default fork on Linux.
        generator: seeds the random sampler and the workers' base seed.
        prefetch_factor: batches loaded in advance per worker (default 2; None without workers).
        persistent_workers: keep the workers alive across epochs.

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
        self.pin_memory = bool(pin_memory)  # no-op on CPU: see the class docstring
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

    def __iter__(self) -> _BaseIterator:
        return self

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

    def __next__(self) -> Any:
        indices = next(self._sampler_iter)  # StopIteration ends the epoch
        batch = self._fetcher.fetch(indices)
        self._yielded += 1
        return batch


class _WorkerPool:
    """The processes and queues of one multi-process iterator (Note [Worker pool]).

    Holds no reference to the iterator, so ``weakref.finalize`` can shut it down
    when the iterator is collected.
    """

    def __init__(self, loader: DataLoader, base_seed: int) -> None:
        ctx = loader._context()
        self.owner_pid = os.getpid()
        self.prefix = f"fbdata_{os.getpid()}_{next(_pool_ids)}_{os.urandom(3).hex()}_"
        self.result_queue = ctx.Queue()
        self.index_queues = []
        self.workers = []
        self.alive = True
        self._lock = threading.Lock()
        try:
            for wid in range(loader.num_workers):
                iq = ctx.Queue()
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
                        iq,
                        self.result_queue,
                        base_seed,
                        loader.worker_init_fn,
                        self.prefix,
                        os.getpid(),
                    ),
                    daemon=True,
                )
                w.start()
                self.index_queues.append(iq)
                self.workers.append(w)
        except BaseException:
            self.shutdown()
            raise

    def check_workers(self) -> None:
        """Raises RuntimeError if a worker has exited (they only exit when told to)."""
        for wid, w in enumerate(self.workers):
            code = w.exitcode
            if code is not None:
                how = f"exit code {code}"
                if code < 0:
                    import signal

                    try:
                        how += f" (killed by signal {signal.Signals(-code).name})"
                    except ValueError:
                        pass
                self.shutdown()
                raise RuntimeError(
                    f"[DataLoader] worker {wid} (pid {w.pid}) exited unexpectedly with {how}. "
                    "It may have been killed (e.g. out of memory) or have called os._exit; "
                    "run with num_workers=0 to see the error in the main process."
                )

    def shutdown(self) -> None:
        """Stops the workers and removes the pool's segments. Idempotent; owner process only."""
        if os.getpid() != self.owner_pid:
            return
        with self._lock:
            if not self.alive:
                return
            self.alive = False
        try:
            for iq in self.index_queues:
                try:
                    iq.put(None)
                except (OSError, ValueError):
                    pass
            deadline = time.monotonic() + _JOIN_TIMEOUT
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
            for q in [*self.index_queues, self.result_queue]:
                q.cancel_join_thread()
                q.close()
            # Segments a dead worker left half-written, or results never received.
            _shm.remove_segments(self.prefix)

    def _drain(self) -> None:
        while True:
            try:
                _, _, payload = self.result_queue.get(timeout=0)
            except (queue.Empty, OSError, ValueError, EOFError):
                return
            except Exception:
                return
            if isinstance(payload, _shm.ShmBatch):
                _shm.discard(payload)


class _MultiProcessIterator(_BaseIterator):
    def __init__(self, loader: DataLoader) -> None:
        super().__init__(loader)
        self._num_workers = loader.num_workers
        self._prefetch = loader.prefetch_factor * loader.num_workers  # type: ignore[operator]
        self._timeout = loader.timeout
        self._persistent = loader.persistent_workers
        self._pool = _WorkerPool(loader, self._base_seed)
        self._finalizer = weakref.finalize(self, self._pool.shutdown)
        self._reset(loader, first=True)

    def _reset(self, loader: DataLoader, first: bool = False) -> None:
        if not first:
            super().__init__(loader)
        self._send_idx = 0  # next task id to hand out
        self._rcvd_idx = 0  # next task id to yield
        self._task_worker: dict[int, int] = {}  # outstanding task id -> worker id
        self._buffer: dict[int, Any] = {}  # received out of order: task id -> payload
        self._active = [True] * self._num_workers  # False once an iterable dataset ran out in that worker
        self._worker_cycle = itertools.cycle(range(self._num_workers))
        self._exhausted = False
        if not first:
            resume = _worker._ResumeIteration(self._base_seed)
            for iq in self._pool.index_queues:
                iq.put(resume)
            pending = self._num_workers
            while pending:
                _, task_id, payload = self._get()
                if isinstance(payload, _worker._ResumeIteration) and payload == resume:
                    pending -= 1
                elif isinstance(payload, _shm.ShmBatch):
                    _shm.discard(payload)  # a stale result of an abandoned epoch
        for _ in range(self._prefetch):
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
        self._pool.index_queues[wid].put((self._send_idx, indices))
        self._task_worker[self._send_idx] = wid
        self._send_idx += 1

    def _get(self) -> tuple[int, Any, Any]:
        """The next message from the workers, checking for death and the timeout."""
        deadline = time.monotonic() + self._timeout if self._timeout > 0 else None
        while True:
            wait = _POLL if deadline is None else min(_POLL, max(0.0, deadline - time.monotonic()))
            try:
                return self._pool.result_queue.get(timeout=wait)
            except queue.Empty:
                pass
            self._pool.check_workers()
            if deadline is not None and time.monotonic() >= deadline:
                self._shutdown()
                raise RuntimeError(
                    f"[DataLoader] timed out after {self._timeout} seconds waiting for a batch from the workers"
                )

    def __next__(self) -> Any:
        if not self._pool.alive:
            raise StopIteration
        while True:
            # Skip tasks whose worker ran out of data (iterable datasets).
            while self._rcvd_idx < self._send_idx and self._rcvd_idx not in self._task_worker:
                self._rcvd_idx += 1
            if self._rcvd_idx >= self._send_idx and self._exhausted:
                if not self._persistent:
                    self._shutdown()
                raise StopIteration
            if self._rcvd_idx in self._buffer:
                payload = self._buffer.pop(self._rcvd_idx)
                del self._task_worker[self._rcvd_idx]
                self._rcvd_idx += 1
                self._try_put_index()
                return self._process(payload)
            if self._rcvd_idx >= self._send_idx:
                # Nothing outstanding but not exhausted: every worker is out of data.
                self._exhausted = True
                continue
            wid, task_id, payload = self._get()
            if task_id is None:
                continue  # a resume acknowledgement (handled in _reset)
            if isinstance(payload, _worker._IterableExhausted):
                self._active[wid] = False
                self._task_worker.pop(task_id, None)
                self._try_put_index()
                continue
            if isinstance(payload, _shm.ShmBatch):
                # Map at once so the segment's name leaves /dev/shm now.
                payload = _Received(_shm.unpack(payload))
            self._buffer[task_id] = payload

    def _process(self, payload: Any) -> Any:
        if isinstance(payload, _worker.ExceptionWrapper):
            self._shutdown()
            payload.reraise()
        self._yielded += 1
        return payload.batch

    def _shutdown(self) -> None:
        self._buffer.clear()
        self._pool.shutdown()


class _Received:
    __slots__ = ("batch",)

    def __init__(self, batch: Any) -> None:
        self.batch = batch
