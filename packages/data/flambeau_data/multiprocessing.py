"""A drop-in for the standard ``multiprocessing`` module that shares tensors.

Everything of ``multiprocessing`` is re-exported. Importing flambeau_data
registers a reduction for ``flambeau_core.Tensor`` with
``multiprocessing.reduction.ForkingPickler``, the pickler behind every
``Queue``, ``SimpleQueue``, ``Pipe`` connection and process argument: a tensor
is not pickled as bytes; its data is copied once into a shared-memory file
(``/dev/shm``) and only the file's name, dtype and shape are pickled. The
receiver maps the file, unlinks it at once and wraps it zero-copy, so the
name is gone as soon as the tensor is received (even if the sender has exited
by then). A tensor that is pickled but never received leaves its file behind
(``fbtensor_<pid>_...``), as PyTorch's ``file_system`` strategy does.

Difference from PyTorch: the sender's tensor is not moved into shared memory;
the receiver gets a shared-memory *copy* (a write on one side is not seen by
the other).

Example:
    >>> import flambeau_core as fc
    >>> from flambeau_data import multiprocessing as mp
    >>> q = mp.get_context("fork").SimpleQueue()
    >>> q.put(fc.ones(3))
    >>> q.get().tolist()
    [1.0, 1.0, 1.0]
"""

from __future__ import annotations

import itertools
import math
import multiprocessing as _std
import os
import pickle
from multiprocessing import *  # noqa: F401,F403
from multiprocessing import reduction
from typing import Any

import flambeau_core as fc

from flambeau_data import _shm

_EMPTY_PAYLOAD = pickle.dumps(None)

__all__ = list(_std.__all__) + ["reduce_tensor", "init_reductions"]


_counter = itertools.count()


def _rebuild_tensor(name: str, nbytes: int, dtype: str, shape: tuple[int, ...]) -> fc.Tensor:
    if nbytes == 0:
        return fc.empty(shape, dtype=_shm.dtype_from_name(dtype))
    batch = _shm.ShmBatch(name, _shm._round_up(nbytes), [(0, dtype, shape)], _EMPTY_PAYLOAD)
    return _shm.unpack_tensors(batch)[0]


def reduce_tensor(t: fc.Tensor) -> tuple[Any, tuple[Any, ...]]:
    """The ForkingPickler reduction of a tensor: its bytes in a shared-memory file."""
    shape = tuple(t.shape)
    nbytes = math.prod(shape) * t.element_size()
    dtype = _shm.dtype_name(t.dtype)
    if nbytes == 0:
        return (_rebuild_tensor, ("", 0, dtype, shape))
    name = f"fbtensor_{os.getpid()}_{next(_counter)}_{os.urandom(4).hex()}"
    _shm.write_segment(name, [t], [0], _shm._round_up(nbytes))
    return (_rebuild_tensor, (name, nbytes, dtype, shape))


def init_reductions() -> None:
    """Registers the tensor reduction (done when flambeau_data is imported)."""
    reduction.ForkingPickler.register(fc.Tensor, reduce_tensor)


init_reductions()
