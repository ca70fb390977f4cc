"""``flambeau.multiprocessing``: the standard ``multiprocessing`` module, sharing tensors (PyTorch's).

Everything of ``multiprocessing`` is re-exported. Importing this module (done
by ``import flambeau_data`` and ``import flambeau``) registers a reduction for
``flambeau_core.Tensor`` and its subclasses (``nn.Parameter``) with
``multiprocessing.reduction.ForkingPickler``, the pickler behind every
``Queue``, ``SimpleQueue``, ``Pipe`` connection and process argument, and adds
``Tensor.share_memory_()`` and ``Tensor.is_shared()``.

A tensor sent to another process arrives *sharing the sender's memory*: a
write on one side is seen by the other. A tensor not shared yet is moved into
shared memory in place when first sent (``share_memory_``), as in PyTorch; a
view arrives as the same view (offset, strides) of the shared storage; several
tensors of one storage arrive viewing one storage. A segment is freed when the
last process drops it. See Note [Shared storages] in ``_mp_reductions.py`` for the
two sharing strategies (``file_descriptor``, the default, and ``file_system``)
and ``spawn`` for running a function in several processes.

Differences from PyTorch: memory flambeau does not own (``from_numpy``,
``from_dlpack``, ``frombuffer``) is not moved by ``share_memory_`` (a
RuntimeError) and is sent as a shared copy; ``file_system`` has no manager
daemon (a reference count in the segment instead; a message pickled but never
received leaks its segment).

Example:
    >>> import flambeau_core as fc
    >>> from flambeau_data import multiprocessing as mp
    >>> t = fc.zeros(3).share_memory_()
    >>> t.is_shared()
    True
    >>> q = mp.get_context("fork").SimpleQueue()
    >>> q.put(t[1:])
    >>> view = q.get()
    >>> view.fill_(7.0).tolist(), t.tolist()
    ([7.0, 7.0], [0.0, 7.0, 7.0])
"""

from __future__ import annotations

import multiprocessing as _std
from multiprocessing import *  # noqa: F401,F403
from multiprocessing import reduction  # noqa: F401

from flambeau_data._mp_reductions import (
    get_all_sharing_strategies,
    get_sharing_strategy,
    init_reductions,
    reduce_tensor,
    set_sharing_strategy,
)
from flambeau_data._mp_spawn import (
    ProcessContext,
    ProcessException,
    ProcessExitedException,
    ProcessRaisedException,
    SpawnContext,
    spawn,
    start_processes,
)

__all__ = list(_std.__all__) + [
    "ProcessContext",
    "ProcessException",
    "ProcessExitedException",
    "ProcessRaisedException",
    "SpawnContext",
    "get_all_sharing_strategies",
    "get_sharing_strategy",
    "init_reductions",
    "reduce_tensor",
    "set_sharing_strategy",
    "spawn",
    "start_processes",
]

init_reductions()
