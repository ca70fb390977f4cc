"""The default process group and ``new_group``'s: ``init_process_group``, ``destroy_process_group``,
ranks and sizes, and the checks that name a group or a rank (``_pg``, ``_check_rank``).
"""

from __future__ import annotations

import atexit
import datetime
import enum
import os
import sys
import traceback
from collections.abc import Sequence
from typing import Any

from flambeau_distributed._backend import (
    _DEFAULT_TIMEOUT,
    Backend,
    _mpi,
)
from flambeau_distributed._process_group import ProcessGroup

_WORLD: ProcessGroup | None = None
_SUBGROUPS: list[ProcessGroup] = []  # live groups from new_group
_GROUP_COUNT = 0  # groups made since init_process_group, the default one included (get_pg_count)
_PREV_EXCEPTHOOK: Any = None


class _GroupMember:
    """``group.WORLD``: stands for the default process group (None, where PyTorch's is that group's object).

    ``group.NON_GROUP_MEMBER`` is what :func:`new_group` returns on a rank
    outside its ranks.

    Example:
        >>> import flambeau as fb
        >>> dist = fb.distributed
        >>> dist.init_process_group("mpi")  # without mpirun: a world of one rank
        >>> dist.get_world_size(dist.group.WORLD) == dist.get_world_size()
        True
        >>> dist.destroy_process_group()
    """

    WORLD = None
    NON_GROUP_MEMBER = object()


group = _GroupMember
GroupMember = _GroupMember


def _abort_excepthook(kind, value, tb) -> None:
    pg = _WORLD
    hook = _PREV_EXCEPTHOOK or sys.__excepthook__
    if pg is None:
        hook(kind, value, tb)
        return
    sys.stderr.write(
        f"[flambeau.distributed] rank {pg.rank} of {pg.world_size} raised an uncaught exception; "
        "aborting every rank (MPI_Abort) so that none waits forever:\n"
    )
    traceback.print_exception(kind, value, tb)
    sys.stderr.flush()
    pg.comm.Abort(1)


# Set by mpirun/mpiexec (Open MPI, PMIx, MPICH/Hydra) in the processes they start.
_LAUNCHER_VARS = ("OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK", "PMI_SIZE", "MPI_LOCALNRANKS")


def init_process_group(
    backend: str | None = None,
    init_method: str | None = None,
    timeout: datetime.timedelta | None = None,
    world_size: int = -1,
    rank: int = -1,
    store: Any = None,
    group_name: str = "",
    pg_options: Any = None,
    device_id: Any = None,
    *,
    abort_on_exception: bool = True,
) -> None:
    """Joins the job started by ``mpirun -n N python script.py``: ranks and size come from MPI.

    ``world_size``/``rank`` may be given only to assert what MPI says.
    ``abort_on_exception`` (flambeau's): an uncaught exception on any rank
    calls ``MPI_Abort``, so that the other ranks fail at once instead of
    waiting forever in a collective.

    Unlike PyTorch, the backend is MPI only (``backend`` None or ``"mpi"``) and
    there is no ``init_method``/``store`` rendezvous: a program started without
    ``mpirun`` is a world of one rank (rank 0), as the examples here are.

    Example:
        >>> import flambeau as fb
        >>> dist = fb.distributed
        >>> dist.init_process_group("mpi")  # without mpirun: a one rank
        >>> dist.is_initialized(), dist.get_rank(), dist.get_world_size()
        (True, 0, 1)
        >>> dist.destroy_process_group()
    """
    global _WORLD, _PREV_EXCEPTHOOK, _GROUP_COUNT
    if backend is not None and str(backend).lower() != "mpi":
        raise ValueError(f"[init_process_group] backend {backend!r} is not available; flambeau has 'mpi'")
    if init_method not in (None, "env://") or store is not None:
        raise ValueError("[init_process_group] the MPI backend takes its ranks from mpirun: no init_method or store")
    if _WORLD is not None:
        raise RuntimeError("[init_process_group] trying to initialize the default process group twice")
    if timeout is not None and not isinstance(timeout, datetime.timedelta):
        raise TypeError(f"[init_process_group] timeout must be a datetime.timedelta, got {type(timeout).__name__}")
    if timeout is None and os.environ.get("FLAMBEAU_DISTRIBUTED_TIMEOUT"):
        timeout = datetime.timedelta(seconds=float(os.environ["FLAMBEAU_DISTRIBUTED_TIMEOUT"]))
    if not any(v in os.environ for v in _LAUNCHER_VARS):
        # Not started by mpirun: a world of one. Open MPI's shared-memory transport would leave
        # its 16 MB segment in /dev/shm behind (no launcher to clean it up), and one rank needs none.
        os.environ.setdefault("OMPI_MCA_btl", "self")
    MPI = _mpi()
    comm = MPI.COMM_WORLD.Dup()
    comm.Set_errhandler(MPI.ERRORS_RETURN)
    if world_size not in (-1, None) and world_size != comm.Get_size():
        raise ValueError(f"[init_process_group] world_size={world_size} but mpirun started {comm.Get_size()} processes")
    if rank not in (-1, None) and rank != comm.Get_rank():
        raise ValueError(f"[init_process_group] rank={rank} but MPI says this process is rank {comm.Get_rank()}")
    check = get_debug_level() != DebugLevel.OFF
    _WORLD = ProcessGroup(comm, timeout or _DEFAULT_TIMEOUT, check)
    _GROUP_COUNT = 1
    if abort_on_exception:
        _PREV_EXCEPTHOOK = sys.excepthook
        sys.excepthook = _abort_excepthook


def is_initialized() -> bool:
    """True between :func:`init_process_group` and :func:`destroy_process_group`.

    Example:
        >>> import flambeau as fb
        >>> fb.distributed.is_initialized()  # before init_process_group
        False
    """
    return _WORLD is not None


def destroy_process_group(group: Any = None) -> None:
    """Stops the communication thread and frees the communicator (MPI itself ends at exit).

    ``group=None`` destroys the default group and every group from ``new_group``;
    :func:`init_process_group` may then be called again.

    Example:
        >>> import flambeau as fb
        >>> dist = fb.distributed
        >>> dist.init_process_group("mpi")  # without mpirun: a world of one rank
        >>> dist.destroy_process_group()
        >>> dist.is_initialized()
        False
    """
    global _WORLD, _PREV_EXCEPTHOOK, _GROUP_COUNT
    if group is not None and group is not _WORLD:
        if group is _GroupMember.NON_GROUP_MEMBER:
            return
        sub = _pg(group, "destroy_process_group")
        _SUBGROUPS.remove(sub)
        _close(sub)
        return
    pg = _WORLD
    if pg is None:
        return
    while _SUBGROUPS:
        _close(_SUBGROUPS.pop())
    _WORLD = None
    _GROUP_COUNT = 0
    _close(pg)
    if sys.excepthook is _abort_excepthook:
        sys.excepthook = _PREV_EXCEPTHOOK or sys.__excepthook__
    _PREV_EXCEPTHOOK = None


def _close(pg: ProcessGroup) -> None:
    if not pg.shutdown():
        # MPI_Finalize at exit would wait for it forever: end the job instead.
        sys.stderr.write(
            f"[flambeau.distributed] rank {pg.rank}: destroy_process_group with a collective still waiting for the "
            "other ranks; aborting every rank (MPI_Abort)\n"
        )
        sys.stderr.flush()
        pg.comm.Abort(1)
    pg.comm.Free()


@atexit.register
def _cleanup() -> None:
    if _WORLD is not None:
        try:
            destroy_process_group()
        except Exception:  # noqa: BLE001 (exiting anyway)
            pass


def _pg(group: Any, name: str) -> ProcessGroup:
    if _WORLD is None:
        raise RuntimeError(
            f"[{name}] the default process group has not been initialized; call "
            "init_process_group(backend='mpi') first (and launch with mpirun -n N python script.py)"
        )
    if group is None or group is _WORLD:
        return _WORLD
    if group is _GroupMember.NON_GROUP_MEMBER:
        raise ValueError(f"[{name}] this rank ({_WORLD.rank}) is not a member of the group new_group() gave it")
    if isinstance(group, ProcessGroup) and any(group is g for g in _SUBGROUPS):
        return group
    raise ValueError(
        f"[{name}] group must be None, group.WORLD or a live group from new_group(), got {type(group).__name__}"
    )


def _check_rank(pg: ProcessGroup, r: Any, what: str, name: str) -> int:
    """Validates a rank of the default group that belongs to ``pg``; returns its rank within ``pg``."""
    if not isinstance(r, int) or isinstance(r, bool) or r not in pg.global_ranks:
        if pg is _WORLD:
            raise ValueError(f"[{name}] {what} must be a rank in [0, {pg.world_size - 1}], got {r!r}")
        raise ValueError(f"[{name}] {what} must be a rank of the group {pg.global_ranks}, got {r!r}")
    return pg.global_ranks.index(r)


def _group_peer(pg: ProcessGroup, global_rank: Any, group_rank: Any, what: str, name: str) -> int:
    """A peer or root given as a default-group rank (``dst``) or a rank within ``pg`` (``group_dst``), as
    PyTorch's ``_canonicalize_group_rank``: exactly one of the two; returns the rank within ``pg``."""
    if group_rank is not None:
        if global_rank is not None:
            raise ValueError("Can't specify both group_rank and global_rank")
        if not isinstance(group_rank, int) or isinstance(group_rank, bool) or not 0 <= group_rank < pg.world_size:
            raise ValueError(f"[{name}] group_{what} must be a rank in [0, {pg.world_size - 1}], got {group_rank!r}")
        return group_rank
    if global_rank is None:
        raise ValueError("Must specify global_rank or group_rank")
    return _check_rank(pg, global_rank, what, name)


def get_rank(group: Any = None) -> int:
    """This process's rank in ``group`` (the default group's by default); -1 if it is not a member.

    Example:
        >>> import flambeau as fb
        >>> dist = fb.distributed
        >>> dist.init_process_group("mpi")  # without mpirun: a world of one rank
        >>> dist.get_rank()  # mpirun -n N numbers its processes 0 .. N - 1
        0
        >>> dist.destroy_process_group()
    """
    if group is _GroupMember.NON_GROUP_MEMBER and _WORLD is not None:
        return -1
    return _pg(group, "get_rank").rank


def get_world_size(group: Any = None) -> int:
    """The number of ranks of ``group``; -1 on a rank that is not a member.

    Example:
        >>> import flambeau as fb
        >>> dist = fb.distributed
        >>> dist.init_process_group("mpi")  # without mpirun: a world of one rank
        >>> dist.get_world_size()  # N under mpirun -n N
        1
        >>> dist.destroy_process_group()
    """
    if group is _GroupMember.NON_GROUP_MEMBER and _WORLD is not None:
        return -1
    return _pg(group, "get_world_size").world_size


def new_group(
    ranks: Sequence[int] | None = None,
    timeout: datetime.timedelta | None = None,
    backend: str | None = None,
    pg_options: Any = None,
    use_local_synchronization: bool = False,
    group_desc: str | None = None,
) -> ProcessGroup | object:
    """A process group of some ranks of the default group, as ``torch.distributed.new_group``.

    Every rank of the default group must call it, with the same ``ranks``
    (an MPI communicator split); a rank outside ``ranks`` gets
    ``group.NON_GROUP_MEMBER``. Collectives given ``group=`` run among its
    members; ``src``/``dst`` arguments stay ranks of the default group.

    Example (``mpirun -n 2``)::

        g = dist.new_group([1])
        if dist.get_rank() == 1:
            dist.broadcast(t, src=1, group=g)  # only rank 1 takes part

    In a world of one rank:

        >>> import flambeau as fb
        >>> dist = fb.distributed
        >>> dist.init_process_group("mpi")  # without mpirun: a world of one rank
        >>> g = dist.new_group([0])
        >>> t = fb.arange(3.0)
        >>> dist.broadcast(t, src=0, group=g)
        >>> dist.get_world_size(g), t.tolist()
        (1, [0.0, 1.0, 2.0])
        >>> dist.destroy_process_group()
    """
    global _GROUP_COUNT
    world = _pg(None, "new_group")
    if backend not in (None, Backend.MPI):
        raise ValueError(f"[new_group] backend must be None or 'mpi', got {backend!r}")
    if use_local_synchronization:
        raise ValueError("[new_group] use_local_synchronization=True is not supported: every rank must call new_group")
    members = list(range(world.world_size)) if ranks is None else list(ranks)
    for r in members:
        if not isinstance(r, int) or isinstance(r, bool) or not 0 <= r < world.world_size:
            raise ValueError(f"[new_group] ranks must be ranks in [0, {world.world_size - 1}], got {members}")
    if len(set(members)) != len(members) or not members:
        raise ValueError(f"[new_group] ranks must be distinct and non-empty, got {members}")
    members = sorted(members)
    MPI = _mpi()
    mine = world.rank in members
    color = 0 if mine else MPI.UNDEFINED
    key = members.index(world.rank) if mine else 0
    work = world.submit("new_group", lambda w: world.comm.Split(color, key), True)
    work.wait()
    comm = work._result
    _GROUP_COUNT += 1
    if not mine:
        return _GroupMember.NON_GROUP_MEMBER
    pg = ProcessGroup(comm, timeout or world.timeout, get_debug_level() != DebugLevel.OFF, members)
    _SUBGROUPS.append(pg)
    return pg


def get_backend(group: Any = None) -> str:
    """The backend of ``group`` (the default group by default): always ``"mpi"``.

    PyTorch returns a ``Backend`` string too (``"gloo"``, ``"nccl"``, ...).

    Example:
        >>> import flambeau as fb
        >>> dist = fb.distributed
        >>> dist.init_process_group("mpi")  # without mpirun: a world of one rank
        >>> dist.get_backend()
        'mpi'
        >>> dist.destroy_process_group()
    """
    _pg(group, "get_backend")
    return Backend.MPI


def get_backend_config(group: Any = None) -> str:
    """The backend of each device type of ``group``: ``"cpu:mpi"`` (PyTorch's: ``"cpu:gloo,cuda:nccl"``, ...).

    Example:
        >>> import flambeau as fb
        >>> dist = fb.distributed
        >>> dist.init_process_group("mpi")  # without mpirun: a world of one rank
        >>> g = dist.new_group([0])
        >>> dist.get_backend_config(g), dist.get_backend_config()
        ('cpu:mpi', 'cpu:mpi')
        >>> dist.destroy_process_group()
    """
    if group is _GroupMember.NON_GROUP_MEMBER:
        raise ValueError("Invalid process group specified")
    _pg(group, "get_backend_config")
    return f"cpu:{Backend.MPI}"


def _default_group() -> ProcessGroup:
    return _pg(None, "group")


def get_process_group_ranks(group: Any = None) -> list[int]:
    """The default group's ranks of ``group``'s members, in group-rank order (every rank for None).

    Example:
        >>> import flambeau as fb
        >>> dist = fb.distributed
        >>> dist.init_process_group("mpi")  # without mpirun: a world of one rank
        >>> dist.get_process_group_ranks(None), dist.get_process_group_ranks(dist.new_group([0]))
        ([0], [0])
        >>> dist.destroy_process_group()
    """
    return list(_pg(group, "get_process_group_ranks").global_ranks)


def _registered(group: Any, name: str) -> ProcessGroup:
    if group is _GroupMember.NON_GROUP_MEMBER or (
        not isinstance(group, ProcessGroup) or not any(group is g for g in _SUBGROUPS)
    ):
        raise ValueError(f"Group {group} is not registered, please create group with torch.distributed.new_group API")
    return _pg(group, name)


def get_group_rank(group: Any, global_rank: int) -> int:
    """The rank within ``group`` of the default group's rank ``global_rank``.

    ``group.WORLD`` (None) returns ``global_rank`` as it is; a rank that is not a member of
    ``group`` raises ValueError, as PyTorch's.

    Example:
        >>> import flambeau as fb
        >>> dist = fb.distributed
        >>> dist.init_process_group("mpi")  # without mpirun: a world of one rank
        >>> g = dist.new_group([0])
        >>> dist.get_group_rank(g, 0), dist.get_global_rank(g, 0)
        (0, 0)
        >>> dist.destroy_process_group()
    """
    if group is _GroupMember.WORLD or group is _WORLD:
        return global_rank
    pg = _registered(group, "get_group_rank")
    if global_rank not in pg.global_ranks:
        raise ValueError(f"Global rank {global_rank} is not part of group {group}")
    return pg.global_ranks.index(global_rank)


def get_global_rank(group: Any, group_rank: int) -> int:
    """The default group's rank of ``group``'s rank ``group_rank`` (the inverse of :func:`get_group_rank`).

    ``group.WORLD`` (None) returns ``group_rank`` as it is (as PyTorch's: unchecked);
    a rank outside ``group`` raises ValueError.

    Example (a group's ranks: :func:`get_group_rank`'s example):
        >>> import flambeau as fb
        >>> fb.distributed.get_global_rank(fb.distributed.group.WORLD, 3)
        3
    """
    if group is _GroupMember.WORLD or group is _WORLD:
        return group_rank
    pg = _registered(group, "get_global_rank")
    if isinstance(group_rank, bool) or not isinstance(group_rank, int) or not 0 <= group_rank < pg.world_size:
        raise ValueError(f"Group rank {group_rank} is not part of group {group}")
    return pg.global_ranks[group_rank]


def get_node_local_rank(fallback_rank: int | None = None) -> int:
    """This process's rank among the processes of its machine.

    PyTorch reads ``LOCAL_RANK`` (set by torchrun); flambeau reads it too, then
    what mpirun sets (``OMPI_COMM_WORLD_LOCAL_RANK``, ``MPI_LOCALRANKID``,
    ``PMI_LOCAL_RANK``), then ``fallback_rank``; without any, RuntimeError as PyTorch's.

    Example:
        >>> import flambeau as fb
        >>> fb.distributed.get_node_local_rank(fallback_rank=0)  # not under mpirun or torchrun
        0
    """
    for var in ("LOCAL_RANK", *_LOCAL_RANK_VARS):
        if var in os.environ:
            return int(os.environ[var])
    if fallback_rank is not None:
        return int(fallback_rank)
    raise RuntimeError(
        "LOCAL_RANK is not in the environment. Consider passing fallback_rank to allow `get_node_local_rank` to "
        "work, assuming you are not running in a multi-device context and want the code to run locally instead."
    )


# The local rank as Open MPI, MPICH/Hydra and PMI launchers set it.
_LOCAL_RANK_VARS = ("OMPI_COMM_WORLD_LOCAL_RANK", "MPI_LOCALRANKID", "PMI_LOCAL_RANK")


def get_pg_count() -> int:
    """The number of process groups made since :func:`init_process_group`, the default group included.

    Example:
        >>> import flambeau as fb
        >>> dist = fb.distributed
        >>> before = dist.get_pg_count()  # no process group yet
        >>> dist.init_process_group("mpi")  # without mpirun: a world of one rank
        >>> after = dist.get_pg_count(), dist.new_group([0]) and dist.get_pg_count()
        >>> dist.destroy_process_group()
        >>> before, after
        (0, (1, 2))
    """
    return _GROUP_COUNT


def new_subgroups(
    group_size: int | None = None,
    group: Any = None,
    timeout: datetime.timedelta | None = None,
    backend: str | None = None,
    pg_options: Any = None,
    group_desc: str | None = None,
) -> tuple[Any, list[Any]]:
    """Cuts ``group``'s ranks into consecutive groups of ``group_size``: (this rank's group, all of them).

    As PyTorch's, every rank calls it; ``group_size`` must divide the group's size
    (None needs CUDA in PyTorch: a ValueError here, as on a machine without GPUs).

    Example:
        >>> import flambeau as fb
        >>> dist = fb.distributed
        >>> dist.init_process_group("mpi")  # without mpirun: a world of one rank
        >>> mine, groups = dist.new_subgroups(1)
        >>> len(groups), dist.get_process_group_ranks(mine)
        (1, [0])
        >>> dist.destroy_process_group()
    """
    if group_size is None:
        raise ValueError(
            "Default group size only takes effect when CUDA is available.If your subgroup using a backend that does "
            "not depend on CUDA,please pass in 'group_size' correctly."
        )
    if group_size <= 0:
        raise ValueError(f"The arg 'group_size' ({group_size}) must be positive")
    world_size = get_world_size(group)
    if world_size < group_size:
        raise ValueError(f"The arg 'group_size' ({group_size}) must not exceed the world size ({world_size})")
    if world_size % group_size != 0:
        raise ValueError(f"The world size ({world_size}) must be divisible by 'group_size={group_size!r}'")
    ranks = get_process_group_ranks(group)
    return new_subgroups_by_enumeration(
        [ranks[i : i + group_size] for i in range(0, len(ranks), group_size)],
        timeout=timeout,
        backend=backend,
        pg_options=pg_options,
        group_desc=group_desc,
    )


def new_subgroups_by_enumeration(
    ranks_per_subgroup_list: Sequence[Sequence[int]],
    timeout: datetime.timedelta | None = None,
    backend: str | None = None,
    pg_options: Any = None,
    group_desc: str | None = None,
) -> tuple[Any, list[Any]]:
    """One group per list of ranks (every rank calls it): (this rank's group or None, all of them).

    A rank in two of the lists raises ValueError, as PyTorch's.

    Example:
        >>> import flambeau as fb
        >>> dist = fb.distributed
        >>> dist.init_process_group("mpi")  # without mpirun: a world of one rank
        >>> mine, groups = dist.new_subgroups_by_enumeration([[0]])
        >>> mine is groups[0]
        True
        >>> dist.destroy_process_group()
    """
    if not ranks_per_subgroup_list:
        raise ValueError("The arg 'ranks_per_subgroup_list' cannot be empty")
    subgroups = []
    mine = None
    seen: dict[int, Sequence[int]] = {}
    my_rank = get_rank()
    for ranks in ranks_per_subgroup_list:
        subgroup = new_group(ranks, timeout=timeout, backend=backend, pg_options=pg_options, group_desc=group_desc)
        subgroups.append(subgroup)
        for r in ranks:
            if r in seen:
                raise ValueError(f"Rank {r} has appeared in both subgroup {seen[r]} and {ranks}")
            seen[r] = ranks
            if r == my_rank:
                mine = subgroup
    return mine, subgroups


class DebugLevel(enum.IntEnum):
    """How much the collectives check (PyTorch's ``OFF``, ``INFO``, ``DETAIL``).

    Anything but ``OFF`` turns on flambeau's metadata check (Note [Metadata check]):
    before each collective the ranks compare their arguments.

    Example:
        >>> import flambeau as fb
        >>> [level.name for level in fb.distributed.DebugLevel]
        ['OFF', 'INFO', 'DETAIL']
    """

    OFF = 0
    INFO = 1
    DETAIL = 2


_DEBUG_LEVEL: DebugLevel | None = None  # set_debug_level's; None: the environment's


def get_debug_level() -> DebugLevel:
    """The level :func:`set_debug_level` set, else ``FLAMBEAU_DISTRIBUTED_DEBUG``'s (``DETAIL`` when unset).

    PyTorch's default is ``OFF`` (``TORCH_DISTRIBUTED_DEBUG``); flambeau's checks are on by default.

    Example:
        >>> import flambeau as fb
        >>> import os
        >>> level = fb.distributed.get_debug_level()
        >>> level.name == os.environ.get("FLAMBEAU_DISTRIBUTED_DEBUG", "DETAIL").upper()
        True
    """
    if _DEBUG_LEVEL is not None:
        return _DEBUG_LEVEL
    return _parse_debug_level(os.environ.get("FLAMBEAU_DISTRIBUTED_DEBUG", "DETAIL"), "FLAMBEAU_DISTRIBUTED_DEBUG")


def _parse_debug_level(value: str, where: str) -> DebugLevel:
    try:
        return DebugLevel[value.upper()]
    except KeyError:
        raise ValueError(f"{where}={value!r}: the debug level must be one of OFF, INFO, DETAIL") from None


def set_debug_level(level: DebugLevel) -> None:
    """Sets the debug level of the process groups made afterwards (every rank must set the same).

    Example:
        >>> import flambeau as fb
        >>> dist = fb.distributed
        >>> before = dist.get_debug_level()
        >>> dist.set_debug_level(dist.DebugLevel.OFF)
        >>> dist.get_debug_level()
        <DebugLevel.OFF: 0>
        >>> dist.set_debug_level(before)
    """
    global _DEBUG_LEVEL
    if not isinstance(level, DebugLevel):
        raise TypeError(f"set_debug_level: level must be a DebugLevel, got {type(level).__name__}")
    _DEBUG_LEVEL = level


def set_debug_level_from_env() -> None:
    """Sets the debug level from ``FLAMBEAU_DISTRIBUTED_DEBUG`` again (PyTorch's reads ``TORCH_DISTRIBUTED_DEBUG``).

    Example:
        >>> import flambeau as fb
        >>> fb.distributed.set_debug_level_from_env()
    """
    global _DEBUG_LEVEL
    _DEBUG_LEVEL = None
    get_debug_level()  # an invalid value raises here, as PyTorch's
