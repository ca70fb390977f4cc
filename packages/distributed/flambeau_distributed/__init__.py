"""flambeau-distributed: data-parallel training across processes and machines over MPI.

torch.distributed's API on flambeau tensors (``fb.distributed`` through the
meta-package): a process group over the ranks of ``mpirun -n N python
script.py``, collectives that hand the tensors' own memory to MPI (mpi4py),
``async_op=True`` work handles, and ``DistributedDataParallel`` whose
gradient all-reduces run while backward is still computing. Importing this
package does not start MPI: ``init_process_group`` does.

Example (``mpirun -n 2 python script.py``):
    >>> import flambeau_distributed as dist  # doctest: +SKIP
    >>> dist.init_process_group(backend="mpi")  # doctest: +SKIP
    >>> t = fc.ones(3) * (dist.get_rank() + 1)  # doctest: +SKIP
    >>> dist.all_reduce(t)  # doctest: +SKIP
    >>> t.tolist()  # doctest: +SKIP
    [3.0, 3.0, 3.0]
"""

from __future__ import annotations

from datetime import timedelta  # torch.distributed.timedelta

import flambeau_data.sampler as _data_sampler
from flambeau_data import DistributedSampler

from flambeau_distributed import algorithms, futures, parallel
from flambeau_distributed._c10d import (
    Backend,
    DebugLevel,
    DistBackendError,
    DistError,
    DistNetworkError,
    DistStoreError,
    GroupMember,
    P2POp,
    ProcessGroup,
    ReduceOp,
    Work,
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
    batch_isend_irecv,
    broadcast,
    broadcast_object_list,
    destroy_process_group,
    gather,
    gather_object,
    get_backend,
    get_backend_config,
    get_debug_level,
    get_default_backend_for_device,
    get_global_rank,
    get_group_rank,
    get_node_local_rank,
    get_pg_count,
    get_process_group_ranks,
    get_rank,
    get_world_size,
    group,
    init_process_group,
    irecv,
    is_available,
    is_backend_available,
    is_gloo_available,
    is_initialized,
    is_mpi_available,
    is_nccl_available,
    is_torchelastic_launched,
    is_ucc_available,
    is_xccl_available,
    isend,
    monitored_barrier,
    new_group,
    new_subgroups,
    new_subgroups_by_enumeration,
    recv,
    recv_object_list,
    reduce,
    reduce_scatter,
    reduce_scatter_single,
    reduce_scatter_tensor,
    scatter,
    scatter_object_list,
    send,
    send_object_list,
    set_debug_level,
    set_debug_level_from_env,
    supports_complex,
)
from flambeau_distributed.futures import Future
from flambeau_distributed.parallel import DistributedDataParallel, GradBucket


def _default_group() -> tuple[int, int] | None:
    return (get_world_size(), get_rank()) if is_initialized() else None


# DistributedSampler (in flambeau-data, below this package) asks for the default group through this.
_data_sampler.register_process_group_provider(_default_group)

__all__ = [
    "Backend",
    "DebugLevel",
    "DistBackendError",
    "DistError",
    "DistNetworkError",
    "DistStoreError",
    "DistributedDataParallel",
    "DistributedSampler",
    "Future",
    "GradBucket",
    "GroupMember",
    "P2POp",
    "ProcessGroup",
    "ReduceOp",
    "Work",
    "algorithms",
    "all_gather",
    "all_gather_coalesced",
    "all_gather_into_tensor",
    "all_gather_object",
    "all_gather_single",
    "all_reduce",
    "all_reduce_coalesced",
    "all_to_all",
    "all_to_all_single",
    "barrier",
    "batch_isend_irecv",
    "broadcast",
    "broadcast_object_list",
    "destroy_process_group",
    "futures",
    "gather",
    "gather_object",
    "get_backend",
    "get_backend_config",
    "get_debug_level",
    "get_default_backend_for_device",
    "get_global_rank",
    "get_group_rank",
    "get_node_local_rank",
    "get_pg_count",
    "get_process_group_ranks",
    "get_rank",
    "get_world_size",
    "group",
    "init_process_group",
    "irecv",
    "is_available",
    "is_backend_available",
    "is_gloo_available",
    "is_initialized",
    "is_mpi_available",
    "is_nccl_available",
    "is_torchelastic_launched",
    "is_ucc_available",
    "is_xccl_available",
    "isend",
    "monitored_barrier",
    "new_group",
    "new_subgroups",
    "new_subgroups_by_enumeration",
    "parallel",
    "recv",
    "recv_object_list",
    "reduce",
    "reduce_scatter",
    "reduce_scatter_single",
    "reduce_scatter_tensor",
    "scatter",
    "scatter_object_list",
    "send",
    "send_object_list",
    "set_debug_level",
    "set_debug_level_from_env",
    "supports_complex",
    "timedelta",
]
