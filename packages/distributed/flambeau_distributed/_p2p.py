"""Point to point: ``send``, ``recv``, ``isend``, ``irecv`` (nonblocking MPI requests)."""

from __future__ import annotations

from typing import Any

from flambeau_core import FlambeauError, Tensor

from flambeau_distributed._backend import (
    DistBackendError,
    _mpi,
)
from flambeau_distributed._buffers import _Buf
from flambeau_distributed._work import Work
from flambeau_distributed._world import (
    _check_rank,
    _pg,
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
