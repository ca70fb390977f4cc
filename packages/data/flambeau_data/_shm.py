"""Moving a batch from a worker to the main process through shared memory.

Note [Shared-memory batches]: tensor bytes never cross a pipe. The sender
pickles the *structure* with every tensor replaced by a reference (``pickle``'s
persistent ids), places the tensors' bytes in a file in ``/dev/shm`` (tmpfs:
the pages are shared memory), 64-byte aligned, and sends only ``(file name,
size, [(offset, dtype, shape)], structure)``. The receiver opens the file,
maps it, **unlinks it at once**, and wraps each tensor zero-copy with
``flambeau_core.frombuffer(mapping, ...)``. The mapping (and the memory) lives
until the last tensor viewing it dies; no name is left in ``/dev/shm`` after
receipt. ``flambeau_data.multiprocessing`` writes one file per tensor sent
(``write_segment``); the DataLoader reuses the files of a ring (Note [Batch
ring]).

Segment names carry a prefix unique to one worker pool, so shutdown can remove
every file a dead or interrupted worker left half-written or unsent
(``remove_segments``). These are plain files, not
``multiprocessing.shared_memory`` blocks, so Python's ``resource_tracker`` never
sees them (it would warn about, and unlink, blocks created in one process and
unlinked in another).

Note [Batch ring]: the DataLoader's workers do not create a file per batch.
Each worker owns a ring of *slots*, each one a shared-memory file that it
creates on first use (``<prefix><worker>_<slot>_<generation>``), reserves with
``posix_fallocate`` (so a full ``/dev/shm`` is an ENOSPC error naming sizes,
not a SIGBUS later) and maps once. The main process names the slot to write in
every task; the worker copies the collated batch's tensors into it (or
gathers straight into it: ``TensorDataset``; or collates straight into it:
Note [Collate into the slot]) and sends the description. The
main process opens the file the first time it sees it, maps it once and
unlinks the name at once, so names live in ``/dev/shm`` only between a
worker's first write and the main process's receipt. Neither side keeps a file
descriptor (the mappings suffice). Each yielded batch's tensors view the slot
through a fresh ``memoryview`` of the mapping, whose weak reference tells the
main process when the last tensor of that batch is gone: only then is the slot
handed out again. A user who keeps batches makes the ring grow (new slots);
one that drops them keeps it at ``prefetch_factor`` + 2 slots per worker,
reused for the whole life of the pool. A slot too small for a batch is
replaced by a larger file (the next generation). The ring does not shrink:
after a user held many batches at once, the worker keeps that many slots (and
their ``/dev/shm`` pages) until the pool shuts down (at the end of the epoch,
or when a loader with ``persistent_workers`` goes).

Note [Slots across epochs]: a loader whose workers start every epoch (fork)
keeps the mappings of the slots that were free when its last epoch ended (every
result in: nothing writes them; their names are gone from ``/dev/shm``
already), up to ``REUSE_LIMIT`` bytes. The next epoch's ring gives them to the slots
handed out first, and each forked worker inherits them mapped: no file to
create, reserve, map and unlink on either side, and the first batches collate
straight into them (Note [Collate into the slot]). The worker maps their pages
in one call (``MADV_POPULATE_WRITE``), as fork leaves a shared mapping's pages
to fault in one by one. A slot that later needs more room gets a new file as
usual; the loader drops the mappings when it goes.
"""

from __future__ import annotations

import errno
import io
import marshal
import math
import mmap
import os
import pickle
import sys
import tempfile
import threading
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

import flambeau_core as fc

SHM_DIR = "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else tempfile.gettempdir()
_ALIGN = 64
_MAP_FLAGS = mmap.MAP_SHARED | getattr(mmap, "MAP_POPULATE", 0)
REUSE_LIMIT = 64 << 20  # bytes of free slots a loader keeps from one epoch to the next
_MADV_POPULATE_WRITE = 23  # Linux 5.14 (not named by Python 3.11's mmap module)


def _round_up(n: int) -> int:
    return (n + _ALIGN - 1) // _ALIGN * _ALIGN


@dataclass
class ShmBatch:
    """What crosses the result queue for one batch (Note [Shared-memory batches])."""

    name: str  # file name in SHM_DIR ("" when the batch holds no tensor bytes)
    nbytes: int
    metas: list[tuple[int, str, tuple[int, ...]]]  # (byte offset, dtype name, shape) per tensor
    payload: bytes  # the pickled structure, tensors replaced by their index in metas
    slot: int = -1  # the ring slot written (Note [Batch ring]); -1 for a one-off segment

    def __reduce__(self) -> tuple[type, tuple[Any, ...]]:
        # The fields as arguments: smaller and quicker to pickle than a dataclass's state dict.
        return ShmBatch, (self.name, self.nbytes, self.metas, self.payload, self.slot)


_BATCH_TAG = b"B"  # a result batch as marshal of its fields (Note [Packed messages] in _pipe.py)


def dumps_result(worker_id: int, task_id: int, batch: ShmBatch) -> bytes:
    """The message of ``batch`` (Note [Packed messages]): marshal of its fields, or pickle if one is not a
    plain int, str, bytes, list or tuple."""
    fields = (worker_id, task_id, batch.name, batch.nbytes, batch.metas, batch.payload, batch.slot)
    try:
        return _BATCH_TAG + marshal.dumps(fields, 2)
    except ValueError:  # a field marshal does not take (a subclass of tuple or int)
        return pickle.dumps((worker_id, task_id, batch), pickle.HIGHEST_PROTOCOL)


def loads_result(data: bytes) -> Any:
    """A worker's message: ``(worker_id, task_id, ShmBatch)`` for a batch's, else the unpickled object."""
    if data[0] != _BATCH_TAG[0]:
        return pickle.loads(data)
    worker_id, task_id, name, nbytes, metas, payload, slot = marshal.loads(memoryview(data)[1:])
    return worker_id, task_id, ShmBatch(name, nbytes, metas, payload, slot)


class _RefPickler(pickle.Pickler):
    def __init__(self, file: io.BytesIO, tensors: list[fc.Tensor]) -> None:
        super().__init__(file, protocol=pickle.HIGHEST_PROTOCOL)
        self._tensors = tensors

    def persistent_id(self, obj: Any) -> int | None:
        if isinstance(obj, fc.Tensor):
            self._tensors.append(obj)
            return len(self._tensors) - 1
        if type(obj) is _Ref:
            return obj.i
        return None


class _RefUnpickler(pickle.Unpickler):
    def __init__(self, file: io.BytesIO, tensors: list[fc.Tensor]) -> None:
        super().__init__(file)
        self._tensors = tensors

    def persistent_load(self, pid: Any) -> fc.Tensor:
        return self._tensors[pid]


_DTYPE_NAMES: dict[Any, str] = {}
_DTYPES: dict[str, Any] = {}


def dtype_name(dtype: Any) -> str:
    """``"float32"`` for ``flambeau_core.float32`` (names cross process boundaries, not objects)."""
    name = _DTYPE_NAMES.get(dtype)
    if name is None:
        name = _DTYPE_NAMES[dtype] = str(dtype).rsplit(".", 1)[-1]
    return name


def dtype_from_name(name: str) -> Any:
    dtype = _DTYPES.get(name)
    if dtype is None:
        dtype = _DTYPES[name] = getattr(fc, name)
    return dtype


def contiguous_bytes(t: fc.Tensor) -> memoryview | None:
    """``t``'s bytes as a flat memoryview, or None if its dtype has no buffer format."""
    if not t.is_contiguous():
        t = t.contiguous()
    try:
        return memoryview(t).cast("B")
    except (TypeError, ValueError, BufferError, RuntimeError):
        return None


def write_tensors(fd: int, tensors: list[fc.Tensor], offsets: list[int], total: int) -> None:
    """Writes each tensor's bytes at its offset of the (already sized) file ``fd``."""
    mapping = None
    try:
        for t, off in zip(tensors, offsets, strict=True):
            if t.numel() == 0:
                continue
            data = contiguous_bytes(t)
            if data is not None:
                # pwrite copies straight into the tmpfs pages (no page faults in a mapping).
                while len(data):
                    n = os.pwrite(fd, data, off)
                    data, off = data[n:], off + n
                continue
            # A dtype without a buffer format (bfloat16): let core copy into a view of the mapping.
            if mapping is None:
                mapping = mmap.mmap(fd, total, flags=mmap.MAP_SHARED)
            dst = fc.frombuffer(mapping, dtype=t.dtype, count=t.numel(), offset=off).view(tuple(t.shape))
            dst.copy_(t)
            del dst
    finally:
        if mapping is not None:
            mapping.close()


class SharedMemoryFullError(RuntimeError):
    """Raised when ``/dev/shm`` has no room for a batch or a shared tensor."""


def shm_usage() -> tuple[int, int]:
    """(size, free bytes) of the file system behind SHM_DIR (0, 0 if unknown)."""
    try:
        st = os.statvfs(SHM_DIR)
    except OSError:
        return 0, 0
    return st.f_blocks * st.f_frsize, st.f_bavail * st.f_frsize


def _fmt_bytes(n: int) -> str:
    for unit in ("bytes", "KiB", "MiB", "GiB", "TiB"):
        if n < 1024 or unit == "TiB":
            return f"{n} {unit}" if unit == "bytes" else f"{n:.1f} {unit}"
        n /= 1024  # type: ignore[assignment]
    return str(n)


def full_message(nbytes: int, what: str) -> str:
    size, free = shm_usage()
    return (
        f"{SHM_DIR} is full: {what} needed {nbytes} bytes ({_fmt_bytes(nbytes)}) of shared memory, but {SHM_DIR} "
        f"has {_fmt_bytes(free)} free of {_fmt_bytes(size)} ({size} bytes). Make it larger (e.g. `docker run "
        "--shm-size=8g`, or `mount -o remount,size=8G /dev/shm`), or use a smaller batch_size, fewer workers or "
        "a smaller prefetch_factor."
    )


def reserve(fd: int, nbytes: int, what: str) -> None:
    """Sizes the file ``fd`` to ``nbytes``, allocating its pages now.

    On tmpfs ``ftruncate`` alone allocates nothing: a full ``/dev/shm`` would
    surface later as a SIGBUS on first touch of a page. ``posix_fallocate``
    fails at once with ENOSPC instead, which becomes a SharedMemoryFullError
    naming the size of ``/dev/shm`` and the bytes asked for.
    """
    try:
        os.posix_fallocate(fd, 0, nbytes)
    except OSError as e:
        if e.errno in (errno.ENOSPC, errno.EFBIG):
            raise SharedMemoryFullError(full_message(nbytes, what)) from None
        if e.errno not in (errno.EOPNOTSUPP, errno.EINVAL, errno.ENOSYS):
            raise
        os.ftruncate(fd, nbytes)  # a file system without fallocate


def write_segment(name: str, tensors: list[fc.Tensor], offsets: list[int], total: int) -> None:
    """Creates segment ``name`` of ``total`` bytes holding ``tensors`` at ``offsets``."""
    path = os.path.join(SHM_DIR, name)
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        reserve(fd, total, "a tensor sent between processes")
        write_tensors(fd, tensors, offsets, total)
    except BaseException:
        _unlink(path)
        raise
    finally:
        os.close(fd)


def pack(obj: Any, name: str) -> ShmBatch:
    """Places ``obj``'s tensors in a new segment ``name`` and describes the rest."""
    tensors: list[fc.Tensor] = []
    buf = io.BytesIO()
    _RefPickler(buf, tensors).dump(obj)
    metas, offsets, total = [], [], 0
    for t in tensors:
        offsets.append(total)
        metas.append((total, dtype_name(t.dtype), tuple(t.shape)))
        total = _round_up(total + t.numel() * t.element_size())
    if total == 0:
        return ShmBatch("", 0, metas, buf.getvalue())
    write_segment(name, tensors, offsets, total)
    return ShmBatch(name, total, metas, buf.getvalue())


def map_tensors(mapping: Any, metas: list[tuple[int, str, tuple[int, ...]]]) -> list[fc.Tensor]:
    """Zero-copy tensors over ``mapping`` at the given offsets."""
    out = []
    for off, name, shape in metas:
        dtype = dtype_from_name(name)
        numel = math.prod(shape)
        if numel == 0:
            out.append(fc.empty(shape, dtype=dtype))
        elif len(shape) == 1:
            out.append(fc.frombuffer(mapping, dtype=dtype, count=numel, offset=off))  # 1-D already
        else:
            out.append(fc.frombuffer(mapping, dtype=dtype, count=numel, offset=off).view(shape))
    return out


def unpack(batch: ShmBatch) -> Any:
    """Maps ``batch``'s segment, unlinks it, and rebuilds the batch around zero-copy tensors."""
    tensors = unpack_tensors(batch)
    return _RefUnpickler(io.BytesIO(batch.payload), tensors).load()


def unpack_tensors(batch: ShmBatch) -> list[fc.Tensor]:
    """Maps ``batch``'s segment, unlinks it, and returns its tensors (zero-copy)."""
    mapping = None
    if batch.name:
        path = os.path.join(SHM_DIR, batch.name)
        try:
            fd = os.open(path, os.O_RDWR)
            try:
                mapping = mmap.mmap(fd, batch.nbytes, flags=_MAP_FLAGS)
            finally:
                os.close(fd)
        finally:
            _unlink(path)
    return map_tensors(mapping, batch.metas)


def discard(batch: ShmBatch) -> None:
    """Frees a batch that will never be unpacked."""
    if batch.name:
        _unlink(os.path.join(SHM_DIR, batch.name))


def remove_segments(prefix: str) -> None:
    """Unlinks every segment whose name starts with ``prefix`` (a pool's leftovers)."""
    try:
        names = os.listdir(SHM_DIR)
    except OSError:
        return
    for name in names:
        if name.startswith(prefix):
            _unlink(os.path.join(SHM_DIR, name))


def _unlink(path: str) -> None:
    try:
        os.unlink(path)
    except FileNotFoundError:
        pass


# ---- the DataLoader's batch ring (Note [Batch ring]) ----


def _layout(tensors: list[fc.Tensor]) -> tuple[list[tuple[int, str, tuple[int, ...]]], int]:
    metas, total = [], 0
    for t in tensors:
        metas.append((total, dtype_name(t.dtype), tuple(t.shape)))
        total = _round_up(total + t.numel() * t.element_size())
    return metas, total


def _slot_capacity(nbytes: int) -> int:
    # A little headroom (a last, smaller batch; a larger one later) rounded to whole pages.
    page = mmap.PAGESIZE
    return (nbytes + nbytes // 8 + page - 1) // page * page


def _populate(mapping: mmap.mmap) -> None:
    """Maps every page of ``mapping`` writable now (one call instead of a fault per page), where the kernel can."""
    try:
        mapping.madvise(_MADV_POPULATE_WRITE)
    except (OSError, ValueError):
        pass  # a kernel before 5.14: the pages fault in one by one


class WorkerRing:
    """A worker's side of the ring: its slot files, each mapped once and rewritten in place.

    ``inherited``: slot -> (name, mapping) of slots this forked worker inherited
    mapped from the main process (Note [Slots across epochs]).
    """

    def __init__(self, prefix: str, worker_id: int, inherited: dict[int, tuple[str, mmap.mmap]] | None = None) -> None:
        self.prefix = f"{prefix}{worker_id}_"
        self.worker_id = worker_id
        self._slots: dict[int, tuple[str, mmap.mmap]] = dict(inherited or {})  # slot -> (file name, mapping)
        for _, mapping in self._slots.values():
            _populate(mapping)  # fork does not copy a shared mapping's page table: it would fault page by page
        self._views: dict[int, Any] = {}  # slot -> (specs, file name, size, metas, tensors) of its last layout
        self._arenas: dict[int, _SlotArena] = {}  # slot -> its allocator (Note [Collate into the slot])
        self._generation = 0

    def _mapping(self, slot: int, nbytes: int) -> tuple[str, mmap.mmap]:
        cur = self._slots.get(slot)
        if cur is not None and len(cur[1]) >= nbytes:
            return cur
        if cur is not None:
            self._views.pop(slot, None)
            _NUMPY_VIEWS.clear()  # they may view the old mapping
            try:
                cur[1].close()
            except BufferError:
                pass  # still viewed by a tensor; unmapped when that goes
            del self._slots[slot]
        self._generation += 1
        name = f"{self.prefix}{slot}_{self._generation}"
        path = os.path.join(SHM_DIR, name)
        capacity = _slot_capacity(nbytes)
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
        try:
            reserve(fd, capacity, f"DataLoader worker {self.worker_id} (a batch)")
            mapping = mmap.mmap(fd, capacity, flags=_MAP_FLAGS)  # populated: the batch is written at once
        except BaseException:
            _unlink(path)
            raise
        finally:
            os.close(fd)
        self._slots[slot] = (name, mapping)
        return name, mapping

    def views(self, slot: int, specs: list[tuple[Any, tuple[int, ...]]]) -> tuple[ShmBatch, list[fc.Tensor]]:
        """Tensors of the given (dtype, shape) inside ``slot``, to be filled, and the batch that describes them.

        The caller fills the tensors, then sets ``payload`` on the returned ShmBatch. The views of
        the last layout of each slot are kept: a loader's batches nearly always share one.
        """
        cached = self._views.get(slot)
        if cached is not None and cached[0] == specs and cached[1] == self._slots.get(slot, (None,))[0]:
            _, name, size, metas, tensors = cached
            return ShmBatch(name, size, metas, b"", slot), tensors
        metas, total = [], 0
        for dtype, shape in specs:
            metas.append((total, dtype_name(dtype), tuple(shape)))
            total = _round_up(total + math.prod(shape) * _itemsize(dtype))
        if total == 0:  # no bytes to place; the slot still goes back to the main process's free list
            return ShmBatch("", 0, metas, b"", slot), [fc.empty(shape, dtype=dtype) for dtype, shape in specs]
        name, mapping = self._mapping(slot, total)
        tensors = map_tensors(mapping, metas)
        self._views[slot] = (specs, name, len(mapping), metas, tensors)
        return ShmBatch(name, len(mapping), metas, b"", slot), tensors

    def gather_rows(self, sources: tuple[fc.Tensor, ...], index: Any, slot: int) -> ShmBatch:
        """``[t[index] for t in sources]`` written straight into ``slot`` (Note [Batched fetch]).

        ``index``: an ``array('q')`` of in-range row indices. With NumPy loaded,
        ``numpy.take(..., out=)`` gathers each tensor's rows into the slot in one
        pass; otherwise core gathers and the result is copied in.
        """
        n = len(index)
        specs = [(t.dtype, (n, *tuple(t.shape)[1:])) for t in sources]
        batch, dsts = self.views(slot, specs)
        np = sys.modules.get("numpy")
        idx = None
        for src, dst in zip(sources, dsts, strict=True):
            if not n or dst.numel() == 0:
                continue
            if np is not None:
                src_np, dst_np = _as_numpy(np, src), _as_numpy(np, dst)
                if src_np is not None and dst_np is not None:
                    if idx is None:
                        idx = np.frombuffer(index, dtype=np.int64)
                    # "wrap": the indices were checked against [-len, len); no bounds pass, no buffering.
                    np.take(src_np, idx, axis=0, out=dst_np, mode="wrap")
                    continue
            _copy_into(dst, src[fc.frombuffer(index, dtype=fc.int64)])
        batch.payload = _list_of_refs(len(sources))
        return batch

    def pack(self, obj: Any, slot: int) -> ShmBatch:
        """Copies ``obj``'s tensors into ``slot`` and describes the rest."""
        tensors, payload = _structure(obj)
        batch, dsts = self.views(slot, [(t.dtype, tuple(t.shape)) for t in tensors])
        for dst, src in zip(dsts, tensors, strict=True):
            if src.numel():
                _copy_into(dst, src)
        batch.payload = payload
        return batch

    def collate_into(self, slot: int, collate: Callable[[Any], Any], samples: Any) -> ShmBatch | None:
        """``collate(samples)`` made straight in ``slot``'s memory, or None where that does not apply.

        Note [Collate into the slot]: default_collate's results are fresh tensors from the current
        allocator, which pack would then copy into the slot. Here the allocator is, for the collate
        only, a bump allocator over the slot's mapping (``_SlotArena``), so the batch is made where
        the main process will read it and nothing is copied. Only where it is safe: the slot is
        mapped already (its size known from an earlier batch), the process runs one thread (no
        other thread's tensors may land in the slot), and ``collate`` is pure (the caller passes
        default_collate only: it keeps nothing), so a failure simply reruns it the usual way. The
        results must all lie in the slot, contiguous, 64-byte aligned and disjoint; anything else
        (a batch larger than the slot: malloc raises; NumPy arrays made into tensors; a refusal)
        returns None once the results are dropped, and the caller collates and packs as before.
        The results are dropped by the caller before the next task, and a slot is remapped only
        in ``_mapping``, after that: no tensor ever outlives the arena memory it views.
        """
        cur = self._slots.get(slot)
        if cur is None or threading.active_count() != 1:
            return None
        name, mapping = cur
        arena = self._arenas.get(slot)
        if arena is None or arena.name != name:
            probe = fc.frombuffer(mapping, dtype=fc.uint8, count=1)
            arena = self._arenas[slot] = _SlotArena(name, probe.data_ptr(), len(mapping))
            del probe
        arena.top = arena.base
        previous = fc.get_allocator()
        if arena.handle is None:
            arena.handle = fc.set_allocator(arena)
        else:
            fc.set_allocator(arena.handle)
        try:
            out = collate(samples)
        except Exception:  # noqa: BLE001 (the slot was too small, or a real error: rerun the usual way)
            return None
        finally:
            fc.set_allocator(previous)
        try:
            tensors, payload = _structure(out)
        except Exception:  # noqa: BLE001 (the usual path reruns the collate and raises it there)
            return None
        metas = []
        spans = []
        for t in tensors:
            nbytes = t.numel() * t.element_size()
            offset = t.data_ptr() - arena.base
            if nbytes and (not t.is_contiguous() or offset < 0 or offset % _ALIGN or offset + nbytes > arena.size):
                return None
            metas.append((offset if nbytes else 0, dtype_name(t.dtype), tuple(t.shape)))
            if nbytes:
                spans.append((offset, offset + nbytes))
        if len(spans) > 1:
            spans.sort()
            end = 0
            for lo, hi in spans:
                if lo < end:
                    return None  # two results share bytes: the usual path copies each
                end = hi
        return ShmBatch(name, len(mapping), metas, payload, slot)

    def close(self) -> None:
        self._arenas.clear()
        self._views.clear()
        for _, mapping in self._slots.values():
            try:
                mapping.close()
            except BufferError:
                pass  # a tensor still views it; the mapping goes with it
        self._slots.clear()


class _SlotArena:
    """A bump allocator over one slot's mapping (Note [Collate into the slot]); core calls malloc/free."""

    def __init__(self, name: str, base: int, size: int) -> None:
        self.name, self.base, self.size = name, base, size
        self.top = base
        self.handle: Any = None  # the core Allocator wrapping this object, once registered

    def malloc(self, nbytes: int) -> int:
        start = -(-self.top // _ALIGN) * _ALIGN
        if start + nbytes > self.base + self.size:
            raise MemoryError(f"the slot has {self.base + self.size - start} bytes left, {nbytes} asked")
        self.top = start + max(nbytes, 1)
        return start

    def free(self, ptr: int, nbytes: int) -> None:
        pass  # the slot is rewritten once the main process is done with the batch


def _copy_into(dst: fc.Tensor, src: fc.Tensor) -> None:
    """Copies ``src`` into the contiguous ``dst`` of the same dtype and shape.

    A contiguous source is copied as raw bytes (any dtype with a buffer format,
    float16 included, whatever core's ``copy_`` supports); others through ``copy_``.
    """
    if src.is_contiguous():
        data = contiguous_bytes(src)
        if data is not None:
            memoryview(dst).cast("B")[:] = data
            return
    dst.copy_(src)


_NUMPY_VIEWS: dict[int, Any] = {}  # id(tensor) -> (tensor, array viewing it)
_LIST_OF_REFS: dict[int, bytes] = {}


def _structure(obj: Any) -> tuple[list[fc.Tensor], bytes]:
    """``obj``'s tensors, in order, and its pickled structure with each tensor replaced by its index."""
    if type(obj) is list:
        for t in obj:
            if type(t) is not fc.Tensor:
                break
        else:
            # What default_collate gives for tuple samples: its structure's bytes are known.
            return obj, _list_of_refs(len(obj))
    tensors: list[fc.Tensor] = []
    buf = io.BytesIO()
    _RefPickler(buf, tensors).dump(obj)
    return tensors, buf.getvalue()


def _list_of_refs(k: int) -> bytes:
    """The pickled structure ``[tensor 0, ..., tensor k-1]`` (what default_collate gives for k fields)."""
    known = _LIST_OF_REFS.get(k)
    if known is not None:
        return known
    buf = io.BytesIO()
    _RefPickler(buf, []).dump([_Ref(i) for i in range(k)])
    _LIST_OF_REFS[k] = buf.getvalue()
    return _LIST_OF_REFS[k]


class _Ref:
    __slots__ = ("i",)

    def __init__(self, i: int) -> None:
        self.i = i


def _as_numpy(np: Any, t: fc.Tensor) -> Any:
    """A NumPy array viewing ``t`` (cached per tensor), or None for a dtype without a buffer format."""
    hit = _NUMPY_VIEWS.get(id(t))
    if hit is not None and hit[0] is t:
        return hit[1]
    try:
        arr = np.asarray(memoryview(t))
    except (TypeError, ValueError, BufferError, RuntimeError):
        arr = None
    if len(_NUMPY_VIEWS) > 64:
        _NUMPY_VIEWS.clear()
    _NUMPY_VIEWS[id(t)] = (t, arr)
    return arr


_ITEMSIZE: dict[Any, int] = {}


def _itemsize(dtype: Any) -> int:
    size = _ITEMSIZE.get(dtype)
    if size is None:
        size = _ITEMSIZE[dtype] = fc.empty(0, dtype=dtype).element_size()
    return size


class MainRing:
    """The main process's side: one mapping per slot file, and which slots are free.

    ``receive`` maps a batch zero-copy; the slot returns to its worker's free
    list when the last tensor of the batch is gone (a weak reference on the
    per-batch memoryview the tensors hold), or at once for a batch without
    tensors or one that is discarded.
    """

    def __init__(self, num_workers: int, initial: int, reuse: list[tuple[str, mmap.mmap]] | None = None) -> None:
        self._free: list[list[int]] = [list(range(initial)) for _ in range(num_workers)]
        self._next = [initial] * num_workers
        self._maps: dict[tuple[int, int], tuple[str, mmap.mmap]] = {}
        self._held: dict[tuple[int, int], Any] = {}  # (worker, slot) -> weakref of the batch's memoryview
        # Note [Slots across epochs]: mappings of an earlier pool's free slots, given to the slots that
        # take() hands out first (the last ones), round-robin over the workers; each forked worker
        # inherits them mapped (``inherited[worker]``: slot -> (name, mapping)).
        self.inherited: list[dict[int, tuple[str, mmap.mmap]]] = [{} for _ in range(num_workers)]
        reuse = list(reuse or ())
        for slot in range(initial - 1, -1, -1):
            for w in range(num_workers):
                if reuse:
                    self._maps[(w, slot)] = self.inherited[w][slot] = reuse.pop()

    def detach_free(self, limit: int) -> list[tuple[str, mmap.mmap]]:
        """Removes and returns the mappings of the free slots (no task, no batch alive), up to ``limit`` bytes.

        Called once every result is in (Note [Slots across epochs]): nothing writes or reads them any more.
        """
        out, total = [], 0
        for w, free in enumerate(self._free):
            for slot in free:
                cur = self._maps.get((w, slot))
                if cur is None or cur[1].closed or total + len(cur[1]) > limit:
                    continue
                del self._maps[(w, slot)]
                out.append(cur)
                total += len(cur[1])
        return out

    def take(self, worker_id: int) -> int:
        """A free slot of ``worker_id`` (a new one if every slot is in use)."""
        free = self._free[worker_id]
        if free:
            return free.pop()
        slot = self._next[worker_id]
        self._next[worker_id] += 1
        return slot

    def release(self, worker_id: int, slot: int) -> None:
        if slot >= 0:
            self._held.pop((worker_id, slot), None)
            self._free[worker_id].append(slot)

    def _map(self, worker_id: int, batch: ShmBatch) -> mmap.mmap:
        key = (worker_id, batch.slot)
        cur = self._maps.get(key)
        if cur is not None and cur[0] == batch.name:
            return cur[1]
        path = os.path.join(SHM_DIR, batch.name)
        try:
            fd = os.open(path, os.O_RDWR)
            try:
                mapping = mmap.mmap(fd, batch.nbytes, flags=_MAP_FLAGS)
            finally:
                os.close(fd)
        finally:
            _unlink(path)
        self._maps[key] = (batch.name, mapping)  # an older generation stays mapped while its tensors live
        return mapping

    def receive(self, worker_id: int, batch: ShmBatch, on_release: Callable[[int, int], None]) -> Any:
        """The batch, its tensors viewing the slot; ``on_release(worker, slot)`` runs when they are all gone."""
        if not batch.name:
            self.release(worker_id, batch.slot)
            return _RefUnpickler(io.BytesIO(batch.payload), map_tensors(None, batch.metas)).load()
        mapping = self._map(worker_id, batch)
        view = memoryview(mapping)
        tensors = map_tensors(view, batch.metas)
        key = (worker_id, batch.slot)
        self._held[key] = weakref.ref(view, lambda _r, w=worker_id, s=batch.slot: on_release(w, s))
        del view
        if batch.payload == _list_of_refs(len(tensors)):
            return tensors  # the list of the batch's tensors, in order: nothing to unpickle
        return _RefUnpickler(io.BytesIO(batch.payload), tensors).load()

    def discard(self, worker_id: int, batch: ShmBatch) -> None:
        """Frees a batch that will never be yielded (its slot is free again, its name gone)."""
        if batch.name:
            self._map(worker_id, batch)
        self.release(worker_id, batch.slot)

    def close(self) -> None:
        self._maps.clear()  # tensors still viewing a mapping keep it alive
        self._held.clear()
