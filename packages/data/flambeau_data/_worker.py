"""The DataLoader's worker process: fetch, collate, hand over in shared memory.

Note [Worker protocol]: each worker has two pipes of its own: tasks in,
results out (no queue feeder threads, no lock shared between workers; the main
process waits on every result pipe and every worker's sentinel at once, so a
death is seen at once).

* main -> worker: ``(task_id, indices, slot, profiling)`` to fetch a batch into ring slot
  ``slot`` (Note [Batch ring]; ``indices`` is None for an iterable dataset:
  "the next batch"; ``profiling``: what to record while a profile records in
  the main process, else None); ``_ResumeIteration(seed)`` to
  start a new epoch (persistent workers); ``None`` to exit.
* worker -> main: ``(worker_id, task_id, payload)`` where payload is a
  ``ShmBatch`` (Note [Shared-memory batches]), an ``ExceptionWrapper`` (the
  fetch raised; re-raised in the main process in task order), or
  ``_IterableExhausted`` (an iterable dataset's copy in this worker ran out).
  A batch fetched while profiling is preceded by ``(worker_id, None,
  WorkerEvents)``: the profiler's events of that fetch, under the worker's pid.
  A ``_ResumeIteration`` is echoed back once every earlier task is answered, so
  the main process can drop stale results of an abandoned epoch.
* A worker runs single-threaded (``flambeau_core.set_num_threads(1)``), seeds
  Python's ``random``, core's generator (and NumPy's, if loaded) with
  ``base_seed + worker_id``, then calls ``worker_init_fn(worker_id)``.
* A worker exits when told (``None``), or by itself when its parent process is
  gone (checked every ``_POLL`` seconds while idle), so an orphan never lingers.
* ``faulthandler`` is enabled in every worker, so a worker killed by a fatal
  signal (SIGSEGV in an extension, ...) prints its Python stack to stderr; the
  main process names the signal and the batch's sample indices.
"""

from __future__ import annotations

import faulthandler
import os
import pickle
import random
import select
import sys
import traceback
from dataclasses import dataclass
from typing import Any

import flambeau_core as fc
from flambeau_core import profiler as _profiler
from flambeau_core.profiler import _events as _profiler_events

from flambeau_data import _pipe, _shm
from flambeau_data._convert import is_numpy_array, numpy_to_tensor
from flambeau_data.dataset import GatheredBatch

_POLL = 1.0
# The profiler's range around a batch fetched in a worker (under the worker's pid).
_WORKER_FETCH = "DataLoader worker fetch"


@dataclass(frozen=True)
class WorkerInfo:
    """What ``get_worker_info()`` returns inside a worker process.

    Attributes:
        id: this worker's index, in ``range(num_workers)``.
        num_workers: how many workers the loader has.
        seed: this worker's seed (``base_seed + id``).
        dataset: this worker's copy of the dataset.

    Example:
        >>> import flambeau as fb
        >>> from flambeau.utils.data import DataLoader, Dataset, get_worker_info
        >>> class WhoLoads(Dataset):
        ...     def __len__(self):
        ...         return 4
        ...     def __getitem__(self, i):
        ...         info = get_worker_info()
        ...         return -1 if info is None else info.num_workers
        >>> [b.tolist() for b in DataLoader(WhoLoads(), batch_size=2)]  # no worker: None
        [[-1, -1], [-1, -1]]
    """

    id: int
    num_workers: int
    seed: int
    dataset: Any


_worker_info: WorkerInfo | None = None
_segment_prefix = ""  # this worker's segment names start with it (Note [Shared-memory batches])


def get_worker_info() -> WorkerInfo | None:
    """The current worker's :class:`WorkerInfo`, or None in the main process.

    Use it in an ``IterableDataset.__iter__`` to give each worker its share.

    Example:
        >>> get_worker_info() is None  # in the main process
        True
    """
    return _worker_info


@dataclass(frozen=True)
class WorkerEvents:
    """The profiler's events of one batch fetched in a worker process (Note [Worker protocol])."""

    pid: int
    events: list


@dataclass(frozen=True)
class _ResumeIteration:
    seed: int


class _IterableExhausted:
    pass


class ExceptionWrapper:
    """An exception caught in a worker, with its formatted traceback."""

    def __init__(self, exc_info: Any = None, where: str = "in background") -> None:
        if exc_info is None:
            exc_info = sys.exc_info()
        self.exc_type = exc_info[0]
        try:
            pickle.dumps(self.exc_type)
        except Exception:
            # A class the main process cannot import (e.g. defined in a function): re-raised as RuntimeError.
            self.exc_type = _Unpicklable.make(self.exc_type.__name__)
        self.exc_msg = "".join(traceback.format_exception(*exc_info))
        self.where = where

    def reraise(self) -> None:
        msg = (
            f"Caught {self.exc_type.__name__} {self.where}.\nOriginal {self.exc_msg}"
            "(A Python exception: run with num_workers=0 to debug it in the main process.)"
        )
        if self.exc_type is KeyError:
            # KeyError repr()s its message, which would mangle the traceback's newlines.
            msg = _KeyErrorMessage(msg)
        try:
            exception = self.exc_type(msg)
        except Exception:
            # An exception type whose constructor needs other arguments.
            raise RuntimeError(msg) from None
        raise exception


class _Unpicklable(Exception):
    """Stands for an exception class that could not be sent; carries its name."""

    @staticmethod
    def make(name: str) -> type:
        return _UnpicklableType(name)


class _UnpicklableType:
    def __init__(self, name: str) -> None:
        self.__name__ = name

    def __call__(self, msg: str) -> Exception:
        return RuntimeError(msg)


class _KeyErrorMessage(str):
    def __repr__(self) -> str:
        return self


def format_indices(indices: Any, limit: int = 16) -> str:
    """``indices`` for a message, shortened past ``limit`` items."""
    if indices is None:
        return "(the next batch of the iterable dataset)"
    if not isinstance(indices, (list, tuple)):
        return repr(indices)
    if len(indices) <= limit:
        return repr(list(indices))
    head = ", ".join(repr(i) for i in indices[:limit])
    return f"[{head}, ... ({len(indices)} indices)]"


class _MapFetcher:
    def __init__(self, dataset: Any, auto_collation: bool, collate_fn: Any) -> None:
        from flambeau_data.collate import default_collate

        self.dataset = dataset
        self.auto_collation = auto_collation
        self.collate_fn = collate_fn
        self._getitems = getattr(dataset, "__getitems__", None) if auto_collation else None
        self._default_collate = collate_fn is default_collate
        # The profiler's range around gathering a batch's samples, named after the method that does it.
        self._getitem_range = f"{type(dataset).__name__}.{'__getitems__' if self._getitems else '__getitem__'}"
        self.defer_rows = False  # set in a worker: return a TensorDataset's rows ungathered
        # A plain list/tuple/range: out-of-range indices name the index and the length.
        self._sequence = type(dataset) in (list, tuple, range)
        # A tensor or NumPy array as the dataset: its rows gathered at once (Note [Batched fetch]).
        self._rows = (
            auto_collation
            and collate_fn is default_collate
            and (isinstance(dataset, fc.Tensor) or is_numpy_array(dataset))
            and len(dataset.shape) > 0
        )

    @property
    def collates_samples(self) -> bool:
        """In a worker, fetching is ``samples`` then default_collate (Note [Collate into the slot])."""
        return self.defer_rows and self.auto_collation and self._default_collate and not self._rows

    def fetch(self, indices: Any) -> Any:
        if not self.auto_collation:
            return self.collate_fn(self.dataset[indices])
        if self._rows:
            return self._gather_rows(indices)
        data = self.samples(indices)
        if self.defer_rows and self._default_collate and type(data) is GatheredBatch and data.index is not None:
            return data  # gathered straight into shared memory by the worker (WorkerRing.gather_rows)
        return self.collate_fn(data)

    def samples(self, indices: Any) -> Any:
        """The samples of ``indices``, not yet collated."""
        if self.defer_rows and _profiler._active is not None:  # in a worker: the range in its profile
            with _profiler._range(self._getitem_range, _profiler_events.KIND_USER):
                return self._samples(indices)
        return self._samples(indices)

    def _samples(self, indices: Any) -> Any:
        if self._getitems is not None:
            return self._getitems(indices)
        if self._sequence:
            from flambeau_data.dataset import check_indices

            check_indices(indices, len(self.dataset), "DataLoader")
        return [self.dataset[i] for i in indices]

    def _gather_rows(self, indices: list[int]) -> Any:
        from flambeau_data.dataset import check_indices, index_tensor

        index = index_tensor(indices)
        check_indices(indices, self.dataset.shape[0], "DataLoader")
        if isinstance(self.dataset, fc.Tensor):
            return self.dataset[index]
        import numpy as np

        return numpy_to_tensor(np.take(self.dataset, indices, axis=0), "default_collate")


class _IterableFetcher:
    def __init__(
        self, dataset: Any, auto_collation: bool, collate_fn: Any, drop_last: bool, batch_size: int | None
    ) -> None:
        self.dataset = dataset
        self.auto_collation = auto_collation
        self.collate_fn = collate_fn
        self.drop_last = drop_last
        self.batch_size = batch_size
        self.iterator = iter(dataset)
        self.ended = False

    def fetch(self, _indices: Any = None) -> Any:
        """The next batch; raises StopIteration when the dataset is exhausted."""
        if self.ended:
            raise StopIteration
        if not self.auto_collation:
            try:
                return self.collate_fn(next(self.iterator))
            except StopIteration:
                self.ended = True
                raise
        data = []
        for item in self.iterator:
            data.append(item)
            if len(data) == self.batch_size:
                break
        if len(data) < self.batch_size:  # type: ignore[operator]
            self.ended = True
            if not data or self.drop_last:
                raise StopIteration
        return self.collate_fn(data)


def make_fetcher(
    dataset: Any,
    iterable: bool,
    auto_collation: bool,
    collate_fn: Any,
    drop_last: bool,
    batch_size: int | None,
    defer_rows: bool = False,
) -> _MapFetcher | _IterableFetcher:
    if iterable:
        return _IterableFetcher(dataset, auto_collation, collate_fn, drop_last, batch_size)
    fetcher = _MapFetcher(dataset, auto_collation, collate_fn)
    fetcher.defer_rows = defer_rows
    return fetcher


def _seed_worker(seed: int) -> None:
    random.seed(seed)
    fc.manual_seed(seed)
    np = sys.modules.get("numpy")
    if np is not None:
        np.random.seed(seed % (1 << 32))


def _fetch_into(fetcher: Any, ring: _shm.WorkerRing, indices: Any, slot: int) -> _shm.ShmBatch:
    """Fetches the batch of ``indices`` and places it in ring slot ``slot``."""
    if type(fetcher) is _MapFetcher and fetcher.collates_samples:
        samples = fetcher.samples(indices)
        if type(samples) is not GatheredBatch or samples.index is None:
            out = ring.collate_into(slot, fetcher.collate_fn, samples)  # Note [Collate into the slot]
            if out is not None:
                return out
            return ring.pack(fetcher.collate_fn(samples), slot)
        batch: Any = samples
    else:
        batch = fetcher.fetch(indices)
    if type(batch) is GatheredBatch:
        return ring.gather_rows(batch.sources, batch.index, slot)  # type: ignore[arg-type]
    return ring.pack(batch, slot)


def worker_loop(
    worker_id: int,
    num_workers: int,
    dataset: Any,
    iterable: bool,
    auto_collation: bool,
    collate_fn: Any,
    drop_last: bool,
    batch_size: int | None,
    index_conn: Any,
    result_conn: Any,
    base_seed: int,
    worker_init_fn: Any,
    segment_prefix: str,
    parent_pid: int,
    inherited: Any = None,
) -> None:
    """Body of one worker process (Note [Worker protocol]).

    ``inherited``: ring slots mapped in the main process, which a forked worker
    writes in place (Note [Slots across epochs]).
    """
    global _worker_info, _segment_prefix
    _segment_prefix = segment_prefix
    ring = _shm.WorkerRing(segment_prefix, worker_id, inherited)
    try:
        if not faulthandler.is_enabled():
            try:
                faulthandler.enable()
            except (RuntimeError, ValueError, OSError):
                pass  # no usable stderr (e.g. closed): the signal is still reported by the main process
        # Starts no thread: since the fork OpenBLAS's count is 1 already, and core leaves it so (Note
        # [OpenBLAS count across fork] in core's parallel.cpp).
        fc.set_num_threads(1)
        _profiler._worker_started()
        seed = base_seed + worker_id
        _seed_worker(seed)
        _worker_info = WorkerInfo(id=worker_id, num_workers=num_workers, seed=seed, dataset=dataset)

        init_error = None
        fetcher = None
        # defer_rows: a TensorDataset's rows are gathered straight into the ring slot.
        fetcher_args = (dataset, iterable, auto_collation, collate_fn, drop_last, batch_size, True)
        try:
            if worker_init_fn is not None:
                worker_init_fn(worker_id)
            fetcher = make_fetcher(*fetcher_args)
        except Exception:
            init_error = ExceptionWrapper(where=f"in DataLoader worker process {worker_id}")

        # Note [Worker fast path]: one poll object for the task pipe (Connection.poll builds a selector per
        # call), messages read as bytes and unpickled here (what Connection.recv does), and a batch's
        # result sent as pickled bytes (Connection.send pickles with ForkingPickler, whose reducers a
        # ShmBatch never needs); the profiler's ranges only while a profile records. Tasks are read
        # through a buffer (the tasks written before the fork in one read) and results written in one
        # call (Note [Pipe messages]).
        poller = select.poll()
        poller.register(index_conn.fileno(), select.POLLIN)
        poll_ms = int(_POLL * 1000)
        tasks_in = _pipe.Reader(index_conn)
        while True:
            if not tasks_in.pending() and not poller.poll(poll_ms):
                if os.getppid() != parent_pid:
                    # Orphaned (the main process was killed): nobody will map our segments.
                    _shm.remove_segments(segment_prefix)
                    break
                continue
            try:
                task = _pipe.loads_task(tasks_in.recv_bytes())  # Note [Packed messages]
            except (EOFError, OSError):
                break  # the main process closed its end: shutting down
            if task is None:
                break
            if isinstance(task, _ResumeIteration):
                _seed_worker(task.seed + worker_id)
                if init_error is None:
                    try:
                        fetcher = make_fetcher(*fetcher_args)
                    except Exception:
                        init_error = ExceptionWrapper(where=f"in DataLoader worker process {worker_id}")
                result_conn.send((worker_id, None, task))
                continue
            task_id, indices, slot, profiling = task
            events: list = []
            if init_error is not None:
                payload: Any = init_error
                init_error = None
            else:
                try:
                    if profiling is None:
                        payload = _fetch_into(fetcher, ring, indices, slot)
                    else:
                        with (
                            _profiler._worker_session(profiling, events),
                            _profiler._range(_WORKER_FETCH, _profiler_events.KIND_DATALOADER),
                        ):
                            payload = _fetch_into(fetcher, ring, indices, slot)
                except StopIteration:
                    payload = _IterableExhausted()
                except Exception:
                    where = f"in DataLoader worker process {worker_id}"
                    if indices is not None:
                        where += f" while loading the batch of sample indices {format_indices(indices)}"
                    payload = ExceptionWrapper(where=where)
            if events:
                result_conn.send((worker_id, None, WorkerEvents(os.getpid(), events)))
            # Sent synchronously, before the next task is read: when a worker dies, every batch it
            # finished is in its pipe, so the main process knows which batch it died on.
            if type(payload) is _shm.ShmBatch:
                _pipe.write(result_conn, _shm.dumps_result(worker_id, task_id, payload))
            else:
                result_conn.send((worker_id, task_id, payload))
            del payload
    except KeyboardInterrupt:
        pass  # the main process handles Ctrl-C and shuts the workers down
    except (BrokenPipeError, ConnectionResetError):
        pass  # the main process is gone or shut the pool down
    ring.close()
    # Unsent results are dropped: their segments are removed by the main process (remove_segments).
    for conn in (index_conn, result_conn):
        try:
            conn.close()
        except OSError:
            pass
