"""A drop-in for the standard ``multiprocessing`` module that shares tensors.

Everything of ``multiprocessing`` is re-exported. Importing flambeau_data
registers a reduction for ``flambeau_core.Tensor`` with
``multiprocessing.reduction.ForkingPickler``, the pickler behind every
``Queue``, ``SimpleQueue``, ``Pipe`` connection and process argument: a tensor
is not pickled as bytes; its data is copied once into an anonymous
shared-memory file (``memfd_create``; an unlinked file in ``/dev/shm`` where
that is missing) whose descriptor travels to the receiver
(``reduction.DupFd``), which maps it and wraps it zero-copy. No name is ever
created in ``/dev/shm``, so nothing can leak there.

Difference from PyTorch: the sender's tensor is not moved into shared memory;
the receiver gets a shared-memory *copy* (a write on one side is not seen by
the other). As with PyTorch's ``file_descriptor`` strategy, the sending
process must still be alive when the receiver unpickles the tensor.

Example:
    >>> import flambeau_core as fc
    >>> from flambeau_data import multiprocessing as mp
    >>> q = mp.get_context("fork").SimpleQueue()
    >>> q.put(fc.ones(3))
    >>> q.get().tolist()
    [1.0, 1.0, 1.0]
"""

from __future__ import annotations

import math
import mmap
import multiprocessing as _std
import os
import weakref
from multiprocessing import *  # noqa: F401,F403
from multiprocessing import reduction
from typing import Any

import flambeau_core as fc

from flambeau_data import _shm

__all__ = list(_std.__all__) + ["reduce_tensor", "init_reductions"]


def _shared_fd(nbytes: int) -> int:
    if hasattr(os, "memfd_create"):
        fd = os.memfd_create("flambeau-tensor", os.MFD_CLOEXEC)
    else:
        path = os.path.join(_shm.SHM_DIR, f"fbtensor_{os.getpid()}_{os.urandom(6).hex()}")
        fd = os.open(path, os.O_RDWR | os.O_CREAT | os.O_EXCL, 0o600)
        os.unlink(path)
    try:
        os.ftruncate(fd, nbytes)
    except BaseException:
        os.close(fd)
        raise
    return fd


def _rebuild_tensor(dupfd: Any, nbytes: int, dtype: str, shape: tuple[int, ...]) -> fc.Tensor:
    if nbytes == 0:
        return fc.empty(shape, dtype=_shm.dtype_from_name(dtype))
    fd = dupfd.detach()
    try:
        mapping = mmap.mmap(fd, nbytes, flags=mmap.MAP_SHARED)
    finally:
        os.close(fd)
    return _shm.map_tensors(mapping, [(0, dtype, shape)])[0]


def reduce_tensor(t: fc.Tensor) -> tuple[Any, tuple[Any, ...]]:
    """The ForkingPickler reduction of a tensor: its bytes in a shared-memory file."""
    shape = tuple(t.shape)
    nbytes = math.prod(shape) * t.element_size()
    if nbytes == 0:
        return (_rebuild_tensor, (None, 0, _shm.dtype_name(t.dtype), shape))
    fd = _shared_fd(nbytes)
    try:
        _shm.write_tensors(fd, [t], [0], nbytes)
        popen = _std.context.get_spawning_popen()
        if popen is not None:
            # Pickled as a spawned child's argument: the fd is handed over at launch,
            # so it must stay open until then; close it when the Popen object goes.
            kept = os.dup(fd)
            weakref.finalize(popen, os.close, kept)
            return (_rebuild_tensor, (reduction.DupFd(kept), nbytes, _shm.dtype_name(t.dtype), shape))
        # resource_sharer duplicates fd now (to hand to the receiver), so ours can close.
        return (_rebuild_tensor, (reduction.DupFd(fd), nbytes, _shm.dtype_name(t.dtype), shape))
    finally:
        os.close(fd)


def init_reductions() -> None:
    """Registers the tensor reduction (done when flambeau_data is imported)."""
    reduction.ForkingPickler.register(fc.Tensor, reduce_tensor)


init_reductions()
