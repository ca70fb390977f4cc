"""Point to point: ``send``, ``recv``, ``isend``, ``irecv`` (nonblocking MPI requests)."""

from __future__ import annotations

import pickle
from typing import Any

import flambeau_core as fc
from flambeau_core import FlambeauError, Tensor

from flambeau_distributed._backend import (
    DistBackendError,
    _mpi,
)
from flambeau_distributed._buffers import _Buf
from flambeau_distributed._work import Work
from flambeau_distributed._world import (
    _check_rank,
    _group_peer,
    _pg,
    get_global_rank,
    get_group_rank,
)

# ---------------------------------------------------------------------------
# Point to point


def _isend(tensor: Tensor, dst: int, tag: int, name: str) -> Work:
    pg = _pg(None, name)
    _check_rank(pg, dst, "dst", name)
    MPI = _mpi()
    buf = _Buf(MPI, tensor, False, name)

    def run(work: Work) -> None:
        work._request = pg.comm.Isend(buf.spec, dest=dst, tag=tag)
        work._finish = lambda status: None

    return pg.submit(name, run, True)


def _irecv(tensor: Tensor, src: int | None, tag: int, name: str) -> Work:
    pg = _pg(None, name)
    if src is not None:
        _check_rank(pg, src, "src", name)
    MPI = _mpi()
    buf = _Buf(MPI, tensor, False, name)
    expected = buf.count * buf.kind.Get_size()

    def mismatch(source: int, got: str) -> FlambeauError:
        return FlambeauError(
            f"[{name}] rank {pg.rank} expected {expected} bytes ({buf.count} elements of "
            f"{str(tensor.dtype).replace('flambeau.', '')}, shape {list(tensor.shape)}) but rank {source} sent {got}"
        )

    def finish(status) -> int:
        got = status.Get_count(MPI.BYTE)
        if got != expected:
            raise mismatch(status.Get_source(), f"{got} bytes")
        buf.write_back()
        return status.Get_source()

    def failed(error: BaseException, status) -> BaseException:
        if isinstance(error, MPI.Exception) and error.Get_error_class() == MPI.ERR_TRUNCATE:
            return mismatch(status.Get_source() if src is None else src, f"more than {expected} bytes")
        return DistBackendError(f"[{name}] rank {pg.rank}: {error}")

    def run(work: Work) -> None:
        work._request = pg.comm.Irecv(buf.spec, source=MPI.ANY_SOURCE if src is None else src, tag=tag)
        work._finish = finish
        work._failed = failed

    return pg.submit(name, run, True)


def isend(tensor: Tensor, dst: int, group: Any = None, tag: int = 0) -> Work:
    """Starts sending ``tensor`` to rank ``dst``; returns a :class:`Work` to ``wait()`` on.

    Don't write ``tensor`` before the Work completes. ``dst`` is a rank of the default group; it
    may be this rank (MPI delivers to itself, where PyTorch's gloo backend refuses).

    Example (a rank sending to itself):
        >>> import flambeau as fb
        >>> dist = fb.distributed
        >>> dist.init_process_group("mpi")  # without mpirun: a world of one rank
        >>> t = fb.zeros(3)
        >>> received = dist.irecv(t, src=0)
        >>> dist.isend(fb.arange(3.0), dst=0).wait(), received.wait()
        (True, True)
        >>> t.tolist()
        [0.0, 1.0, 2.0]
        >>> dist.destroy_process_group()
    """
    _pg(group, "isend")
    return _isend(tensor, dst, tag, "isend")


def irecv(tensor: Tensor, src: int | None = None, group: Any = None, tag: int = 0) -> Work:
    """Starts receiving into ``tensor`` from rank ``src`` (any rank if None); returns a :class:`Work`.

    ``tensor`` holds the message once ``wait()`` returned; ``source_rank()``
    is the sender. A message of another size than ``tensor`` raises a
    FlambeauError from ``wait()``.

    Example (a rank may send to itself):
        >>> import flambeau as fb
        >>> dist = fb.distributed
        >>> dist.init_process_group("mpi")  # without mpirun: a world of one rank
        >>> t = fb.zeros(2)
        >>> work = dist.irecv(t)
        >>> dist.send(fb.tensor([4.0, 5.0]), dst=0)
        >>> work.wait(), work.source_rank(), t.tolist()
        (True, 0, [4.0, 5.0])
        >>> dist.destroy_process_group()
    """
    _pg(group, "irecv")
    return _irecv(tensor, src, tag, "irecv")


def send(tensor: Tensor, dst: int, group: Any = None, tag: int = 0) -> None:
    """Sends ``tensor`` to rank ``dst`` and waits until it is sent (a matching ``recv`` on ``dst``).

    Example (a rank may send to itself; here the receive is posted first):
        >>> import flambeau as fb
        >>> dist = fb.distributed
        >>> dist.init_process_group("mpi")  # without mpirun: a world of one rank
        >>> t = fb.zeros(2)
        >>> work = dist.irecv(t, src=0)
        >>> dist.send(fb.ones(2), dst=0)
        >>> work.wait(), t.tolist()
        (True, [1.0, 1.0])
        >>> dist.destroy_process_group()
    """
    _pg(group, "send")
    _isend(tensor, dst, tag, "send").wait()


def recv(tensor: Tensor, src: int | None = None, group: Any = None, tag: int = 0) -> int:
    """Receives into ``tensor``; returns the sender's rank (any rank when ``src`` is None).

    Example (a rank may send to itself):
        >>> import flambeau as fb
        >>> dist = fb.distributed
        >>> dist.init_process_group("mpi")  # without mpirun: a world of one rank
        >>> sent = dist.isend(fb.tensor([1, 2]), dst=0)
        >>> t = fb.zeros(2, dtype=fb.int64)
        >>> dist.recv(t), t.tolist(), sent.wait()
        (0, [1, 2], True)
        >>> dist.destroy_process_group()
    """
    _pg(group, "recv")
    return _irecv(tensor, src, tag, "recv").source_rank()


# ---------------------------------------------------------------------------
# Batched point to point and Python objects


class P2POp:
    """One point-to-point operation for :func:`batch_isend_irecv`: ``op`` is ``isend`` or ``irecv``.

    ``peer`` is a rank of the default group, ``group_peer`` one of ``group`` (give one), as PyTorch's.

    Example:
        >>> import flambeau as fb
        >>> dist = fb.distributed
        >>> dist.init_process_group("mpi")  # without mpirun: a world of one rank
        >>> out = fb.zeros(2)
        >>> ops = [dist.P2POp(dist.irecv, out, 0), dist.P2POp(dist.isend, fb.ones(2), 0)]
        >>> [work.wait() for work in dist.batch_isend_irecv(ops)], out.tolist()
        ([True, True], [1.0, 1.0])
        >>> dist.destroy_process_group()
    """

    def __new__(cls, op: Any, tensor: Tensor, peer: int | None = None, group: Any = None, tag: int = 0,
                group_peer: int | None = None) -> P2POp:  # fmt: skip
        if op is not isend and op is not irecv:
            raise ValueError(
                "Invalid ``op``. Expected ``op`` to be of type ``torch.distributed.isend`` or "
                "``torch.distributed.irecv``."
            )
        if not isinstance(tensor, Tensor):
            raise TypeError(
                f"Invalid function argument. Expected parameter `tensor` of type Tensor but got {type(tensor)} instead."
            )
        return object.__new__(cls)

    def __init__(self, op: Any, tensor: Tensor, peer: int | None = None, group: Any = None, tag: int = 0,
                 group_peer: int | None = None) -> None:  # fmt: skip
        self.op = op
        self.tensor = tensor
        self.group = group
        self.tag = tag
        if group_peer is not None:
            if peer is not None:
                raise ValueError("Can't specify both group_rank and global_rank")
            self.peer = get_global_rank(group, group_peer)
            self.group_peer = group_peer
        elif peer is None:
            raise ValueError("Must specify global_rank or group_rank")
        else:
            self.peer = peer
            self.group_peer = get_group_rank(group, peer)

    def __repr__(self) -> str:
        return f"P2POp({self.op.__name__}, peer={self.peer}, {list(self.tensor.shape)}, {self.tensor.dtype})"


def batch_isend_irecv(p2p_op_list: list[P2POp]) -> list[Work]:
    """Starts every operation of ``p2p_op_list`` (nonblocking) and returns their :class:`Work` s, in order.

    As PyTorch's: every item must be a :class:`P2POp` of the same group (ValueError); the
    sends and receives are posted at once, so two ranks that exchange in the same order do not
    deadlock.

    Example (``mpirun -n 2``: a ring exchange)::

        r, n = dist.get_rank(), dist.get_world_size()
        out = fc.zeros([2])
        ops = [dist.P2POp(dist.isend, fc.full([2], float(r)), (r + 1) % n),
               dist.P2POp(dist.irecv, out, (r - 1) % n)]
        for work in dist.batch_isend_irecv(ops):
            work.wait()  # out holds the previous rank's number

    In a world of one rank (without mpirun) the ring is the rank itself:

        >>> import flambeau as fb
        >>> dist = fb.distributed
        >>> dist.init_process_group("mpi")
        >>> out = fb.zeros(2)
        >>> ops = [dist.P2POp(dist.irecv, out, 0), dist.P2POp(dist.isend, fb.full([2], 7.0), 0)]
        >>> [work.wait() for work in dist.batch_isend_irecv(ops)], out.tolist()
        ([True, True], [7.0, 7.0])
        >>> dist.destroy_process_group()
    """
    if not isinstance(p2p_op_list, list) or not all(isinstance(op, P2POp) for op in p2p_op_list):
        raise ValueError("Invalid ``p2p_op_list``. Each op is expected to to be of type ``torch.distributed.P2POp``.")
    group = p2p_op_list[0].group
    if not all(group is op.group for op in p2p_op_list):
        raise ValueError("All ops need to use the same group.")
    return [op.op(op.tensor, op.peer, group=op.group, tag=op.tag) for op in p2p_op_list]


def _object_peer(group: Any, rank: Any, group_rank: Any, what: str, name: str) -> int:
    """The default group's rank of the peer, which must not be this rank (ValueError, as PyTorch's)."""
    pg = _pg(group, name)
    local = _group_peer(pg, rank, group_rank, what, name)
    if local == pg.rank:
        role = "destination" if what == "dst" else "source"
        raise ValueError(f"Invalid {role} rank: {role} rank should not be the same as the rank of the current process.")
    return pg.global_ranks[local]


def send_object_list(
    object_list: list,
    dst: int | None = None,
    group: Any = None,
    device: Any = None,
    group_dst: int | None = None,
    use_batch: bool = False,
) -> None:
    """Sends the picklable objects of ``object_list`` to rank ``dst`` (:func:`recv_object_list` there).

    As PyTorch's: their sizes go first, then their bytes in one message; ``dst`` (a rank of the
    default group) or ``group_dst`` (of ``group``), not this rank (ValueError). ``device`` and
    ``use_batch`` are accepted and make no difference.

    Example (``mpirun -n 2``)::

        if dist.get_rank() == 0:
            dist.send_object_list(["config", {"lr": 0.1}], dst=1)
        else:
            objects = [None, None]
            dist.recv_object_list(objects, src=0)  # objects == ["config", {"lr": 0.1}]

    A rank may not send objects to itself, as in PyTorch:

        >>> import flambeau as fb
        >>> dist = fb.distributed
        >>> dist.init_process_group("mpi")  # without mpirun: a world of one rank
        >>> dist.send_object_list(["config"], dst=0)
        Traceback (most recent call last):
        ValueError: Invalid destination rank: destination rank should not be the same as the rank of ...
        >>> dist.destroy_process_group()
    """
    peer = _object_peer(group, dst, group_dst, "dst", "send_object_list")
    payloads = [pickle.dumps(obj) for obj in object_list]
    if not payloads:
        raise ValueError("[send_object_list] object_list is empty: nothing to send")
    sizes = fc.tensor([len(p) for p in payloads], dtype=fc.int64)
    data = fc.frombuffer(bytearray(b"".join(payloads)), dtype=fc.uint8)
    send(sizes, peer, group)
    send(data, peer, group)


def recv_object_list(
    object_list: list,
    src: int | None = None,
    group: Any = None,
    device: Any = None,
    group_src: int | None = None,
    use_batch: bool = False,
) -> int:
    """Fills ``object_list`` with the objects rank ``src`` sent by :func:`send_object_list`; returns ``src``.

    As PyTorch's, ``src`` (or ``group_src``) is required and may not be this rank (ValueError), and
    ``object_list`` must have as many items as the sender's: a sender's list of another length
    raises a FlambeauError naming the sender (its sizes message has another byte count).

    Example (``mpirun -n 2``): see :func:`send_object_list`. In a world of one rank there is no other rank
    to receive from:

        >>> import flambeau as fb
        >>> dist = fb.distributed
        >>> dist.init_process_group("mpi")
        >>> dist.recv_object_list([None], src=0)
        Traceback (most recent call last):
        ValueError: Invalid source rank: source rank should not be the same as the rank of the current process.
        >>> dist.destroy_process_group()
    """
    peer = _object_peer(group, src, group_src, "src", "recv_object_list")
    sizes = fc.empty([len(object_list)], dtype=fc.int64)
    sender = recv(sizes, peer, group)
    counts = [int(c) for c in sizes.tolist()]
    data = fc.empty([sum(counts)], dtype=fc.uint8)
    recv(data, peer, group)
    raw = memoryview(data).cast("B") if counts else b""
    offset = 0
    for i, c in enumerate(counts):
        object_list[i] = pickle.loads(raw[offset : offset + c])
        offset += c
    return sender
