"""Moving a batch from a worker to the main process through shared memory.

Note [Shared-memory batches]: a worker never pickles tensor bytes through a
pipe. It pickles the batch's *structure* with every tensor replaced by a
reference (``pickle``'s persistent ids), writes all the tensors' bytes into one
file in ``/dev/shm`` (tmpfs: the pages are shared memory), 64-byte aligned,
and sends only ``(file name, size, [(offset, dtype, shape)], structure)``.
The main process opens the file, maps it, **unlinks it at once**, and wraps
each tensor zero-copy with ``flambeau_core.frombuffer(mapping, ...)``. The
mapping (and the memory) lives until the last tensor viewing it dies; no name
is left in ``/dev/shm`` after the batch is received.

Segment names carry a prefix unique to one worker pool, so shutdown can remove
every file a dead or interrupted worker left half-written or unsent
(``remove_segments``). These are plain files, not
``multiprocessing.shared_memory`` blocks, so Python's ``resource_tracker`` never
sees them (it would warn about, and unlink, blocks created in one process and
unlinked in another).
"""

from __future__ import annotations

import io
import math
import mmap
import os
import pickle
import tempfile
from dataclasses import dataclass
from typing import Any

import flambeau_core as fc

SHM_DIR = "/dev/shm" if os.path.isdir("/dev/shm") and os.access("/dev/shm", os.W_OK) else tempfile.gettempdir()
_ALIGN = 64
_MAP_FLAGS = mmap.MAP_SHARED | getattr(mmap, "MAP_POPULATE", 0)


def _round_up(n: int) -> int:
    return (n + _ALIGN - 1) // _ALIGN * _ALIGN


@dataclass
class ShmBatch:
    """What crosses the result queue for one batch (Note [Shared-memory batches])."""

    name: str  # file name in SHM_DIR ("" when the batch holds no tensor bytes)
    nbytes: int
    metas: list[tuple[int, str, tuple[int, ...]]]  # (byte offset, dtype name, shape) per tensor
    payload: bytes  # the pickled structure, tensors replaced by their index in metas


class _RefPickler(pickle.Pickler):
    def __init__(self, file: io.BytesIO, tensors: list[fc.Tensor]) -> None:
        super().__init__(file, protocol=pickle.HIGHEST_PROTOCOL)
        self._tensors = tensors

    def persistent_id(self, obj: Any) -> int | None:
        if isinstance(obj, fc.Tensor):
            self._tensors.append(obj)
            return len(self._tensors) - 1
        return None


class _RefUnpickler(pickle.Unpickler):
    def __init__(self, file: io.BytesIO, tensors: list[fc.Tensor]) -> None:
        super().__init__(file)
        self._tensors = tensors

    def persistent_load(self, pid: Any) -> fc.Tensor:
        return self._tensors[pid]


def dtype_name(dtype: Any) -> str:
    """``"float32"`` for ``flambeau_core.float32`` (names cross process boundaries, not objects)."""
    return str(dtype).rsplit(".", 1)[-1]


def dtype_from_name(name: str) -> Any:
    return getattr(fc, name)


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


def write_segment(name: str, tensors: list[fc.Tensor], offsets: list[int], total: int) -> None:
    """Creates segment ``name`` of ``total`` bytes holding ``tensors`` at ``offsets``."""
    path = os.path.join(SHM_DIR, name)
    fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
    try:
        os.ftruncate(fd, total)
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
