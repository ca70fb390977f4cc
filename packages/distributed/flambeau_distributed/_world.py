"""The default process group and ``new_group``'s: ``init_process_group``, ``destroy_process_group``,
ranks and sizes, and the checks that name a group or a rank (``_pg``, ``_check_rank``).
"""

from __future__ import annotations

import atexit
import datetime
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
    global _WORLD, _PREV_EXCEPTHOOK
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
    check = os.environ.get("FLAMBEAU_DISTRIBUTED_DEBUG", "DETAIL").upper() != "OFF"
    _WORLD = ProcessGroup(comm, timeout or _DEFAULT_TIMEOUT, check)
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
    global _WORLD, _PREV_EXCEPTHOOK
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
    if not mine:
        return _GroupMember.NON_GROUP_MEMBER
    pg = ProcessGroup(comm, timeout or world.timeout, world.check, members)
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


def _default_group() -> ProcessGroup:
    return _pg(None, "group")
