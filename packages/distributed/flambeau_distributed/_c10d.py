"""torch.distributed's c10d layer over MPI (mpi4py), with torch.distributed's names: what
``flambeau_distributed`` exports, gathered here from the modules that write it, layer by layer:

- ``_backend``: MPI and whether it is there, ``Backend``, ``ReduceOp``, ``DistBackendError``;
- ``_work``: ``Work``, the handle of an operation;
- ``_buffers``: tensors handed to MPI without copies;
- ``_process_group``: ``ProcessGroup`` and its communication thread (Note [One communication thread],
  Note [Metadata check]);
- ``_world``: the default group and ``new_group``'s (init, destroy, ranks);
- ``_collectives``: the collectives over tensors and Python objects;
- ``_p2p``: point-to-point messages.

Everything keeps this module's name as its ``__module__`` (pickles, reprs and the API reference
are as before the split), the private helpers the package's other modules call (``_pg``,
``_all_reduce``, ``_broadcast_nocheck``, ``_all_gather_flat``, ``_done_work``) stay here, and so
does the default group's state (``_WORLD``, read live from ``_world``).
"""

from __future__ import annotations

from flambeau_distributed import _world
from flambeau_distributed._backend import (  # noqa: F401
    _DEFAULT_TIMEOUT,
    _REDUCE_OPS,
    Backend,
    DistBackendError,
    DistError,
    DistNetworkError,
    DistStoreError,
    ReduceOp,
    _mpi,
    get_default_backend_for_device,
    is_available,
    is_backend_available,
    is_gloo_available,
    is_mpi_available,
    is_nccl_available,
    is_torchelastic_launched,
    is_ucc_available,
    is_xccl_available,
    supports_complex,
)
from flambeau_distributed._buffers import _HALF, _Buf, _describe, _divide, _mpi_op, _mpi_type, _no_grad  # noqa: F401
from flambeau_distributed._collectives import (  # noqa: F401
    _all_gather_flat,
    _all_reduce,
    _alltoallv,
    _broadcast,
    _broadcast_nocheck,
    _check_list,
    _offsets,
    _post_all_reduce,
    _reduce_scatter,
    _require_tensors,
    _rooted_list,
    _split_counts,
    all_gather,
    all_gather_coalesced,
    all_gather_into_tensor,
    all_gather_object,
    all_gather_single,
    all_reduce,
    all_reduce_coalesced,
    all_to_all,
    all_to_all_single,
    barrier,
    broadcast,
    broadcast_object_list,
    gather,
    gather_object,
    monitored_barrier,
    reduce,
    reduce_scatter,
    reduce_scatter_single,
    reduce_scatter_tensor,
    scatter,
    scatter_object_list,
)
from flambeau_distributed._p2p import (  # noqa: F401
    P2POp,
    _irecv,
    _isend,
    batch_isend_irecv,
    irecv,
    isend,
    recv,
    recv_object_list,
    send,
    send_object_list,
)
from flambeau_distributed._process_group import _META_BYTES, _WAIT_IN_MPI, ProcessGroup, _finish, _show  # noqa: F401
from flambeau_distributed._work import Work, _done_work  # noqa: F401
from flambeau_distributed._world import (  # noqa: F401
    _LAUNCHER_VARS,
    DebugLevel,
    GroupMember,
    _abort_excepthook,
    _check_rank,
    _cleanup,
    _close,
    _default_group,
    _GroupMember,
    _pg,
    destroy_process_group,
    get_backend,
    get_backend_config,
    get_debug_level,
    get_global_rank,
    get_group_rank,
    get_node_local_rank,
    get_pg_count,
    get_process_group_ranks,
    get_rank,
    get_world_size,
    group,
    init_process_group,
    is_initialized,
    new_group,
    new_subgroups,
    new_subgroups_by_enumeration,
    set_debug_level,
    set_debug_level_from_env,
)


def __getattr__(name: str) -> object:
    """The default group's state, read where ``_world`` keeps it (a copy here would go stale)."""
    if name in ("_WORLD", "_SUBGROUPS", "_PREV_EXCEPTHOOK", "_GROUP_COUNT"):
        return getattr(_world, name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def _keep_module_name() -> None:
    """Gives what the layer modules define this module's name as ``__module__``, as when it was written
    here: the classes, their methods and the functions."""
    layers = {f"flambeau_distributed.{m}" for m in ("_backend", "_work", "_buffers", "_process_group", "_world",
                                                    "_collectives", "_p2p")}  # fmt: skip
    for value in list(globals().values()):
        written_in = getattr(value, "__module__", None)
        if written_in not in layers:
            continue
        value.__module__ = __name__
        for member in vars(value).values() if isinstance(value, type) else ():
            func = getattr(member, "__func__", member)
            if getattr(func, "__module__", None) == written_in:
                func.__module__ = __name__


_keep_module_name()
