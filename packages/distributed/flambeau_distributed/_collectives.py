"""The collectives, over tensors (``all_reduce``, ``broadcast``, ``all_gather``, ``reduce_scatter``,
``gather``, ``scatter``, ``all_to_all``, ...) and over Python objects (pickled by mpi4py).
"""

from __future__ import annotations

import datetime
import time
import warnings
from collections.abc import Sequence
from typing import Any

import flambeau_core as fc
from flambeau_core import FlambeauError, Tensor

from flambeau_distributed._backend import (
    DistBackendError,
    ReduceOp,
    _mpi,
)
from flambeau_distributed._buffers import _Buf, _describe, _divide, _mpi_op, _no_grad
from flambeau_distributed._process_group import ProcessGroup, _finish
from flambeau_distributed._work import Work
from flambeau_distributed._world import (
    _check_rank,
    _group_peer,
    _pg,
)

# ---------------------------------------------------------------------------
# Collectives


def barrier(group: Any = None, async_op: bool = False, device_ids: Any = None) -> Work | None:
    """Blocks until every rank of ``group`` has called it (``async_op=True``: returns a :class:`Work`).

    ``device_ids`` is accepted and ignored (CPU ranks).

    Example:
        >>> import flambeau as fb
        >>> dist = fb.distributed
        >>> dist.init_process_group("mpi")  # without mpirun: a world of one rank
        >>> dist.barrier()  # with one rank: returns at once
        >>> dist.barrier(async_op=True).wait()
        True
        >>> dist.destroy_process_group()
    """
    pg = _pg(group, "barrier")
    return pg.submit("barrier", lambda w: _finish(pg.comm.Ibarrier()), async_op)


def broadcast(tensor: Tensor, src: int = 0, group: Any = None, async_op: bool = False) -> Work | None:
    """Copies ``tensor`` of rank ``src`` into ``tensor`` of every rank, in place.

    Returns None, or a :class:`Work` with ``async_op=True``.

    Example:
        >>> import flambeau as fb
        >>> dist = fb.distributed
        >>> dist.init_process_group("mpi")  # without mpirun: a world of one rank
        >>> t = fb.arange(3.0) if dist.get_rank() == 0 else fb.zeros(3)
        >>> dist.broadcast(t, src=0)  # every rank now holds rank 0's values
        >>> t.tolist()
        [0.0, 1.0, 2.0]
        >>> dist.destroy_process_group()
    """
    pg = _pg(group, "broadcast")
    return _broadcast(pg, tensor, _check_rank(pg, src, "src", "broadcast"), async_op, pg.check)


def _broadcast_nocheck(pg: ProcessGroup, tensor: Tensor, src: int) -> Work:
    return _broadcast(pg, tensor, src, True, False)


def _broadcast(pg: ProcessGroup, tensor: Tensor, src: int, async_op: bool, check: bool) -> Work | None:
    MPI = _mpi()
    buf = _Buf(MPI, tensor, False, "broadcast")

    def run(work: Work) -> None:
        if check:
            pg.check_same("broadcast", ("broadcast", *_describe(tensor), f"src={src}"))
        _finish(pg.comm.Ibcast(buf.spec, root=src))
        buf.write_back()

    return pg.submit("broadcast", run, async_op)


def all_reduce(tensor: Tensor, op: str = ReduceOp.SUM, group: Any = None, async_op: bool = False) -> Work | None:
    """Reduces ``tensor`` across every rank, in place on every rank.

    ``op`` is a :class:`ReduceOp` (``SUM`` by default). Returns None, or a
    :class:`Work` with ``async_op=True``.

    Example (with N ranks ``t`` ends as N * [1, 2]; here N = 1):
        >>> import flambeau as fb
        >>> dist = fb.distributed
        >>> dist.init_process_group("mpi")  # without mpirun: a world of one rank
        >>> t = fb.tensor([1.0, 2.0])
        >>> dist.all_reduce(t)
        >>> t.tolist()
        [1.0, 2.0]
        >>> dist.all_reduce(t, op=dist.ReduceOp.MAX)
        >>> t.tolist()
        [1.0, 2.0]
        >>> dist.destroy_process_group()
    """
    pg = _pg(group, "all_reduce")
    return _all_reduce(pg, tensor, op, async_op, pg.check)


def _all_reduce(pg: ProcessGroup, tensor: Tensor, op: str, async_op: bool, check: bool) -> Work | None:
    MPI = _mpi()
    buf = _Buf(MPI, tensor, True, "all_reduce")
    mop = _mpi_op(MPI, op, tensor.dtype, "all_reduce")

    def run(work: Work) -> Tensor:
        if check:
            pg.check_same("all_reduce", ("all_reduce", *_describe(tensor), f"op={op}"))
        if buf.count:
            _finish(pg.comm.Iallreduce(MPI.IN_PLACE, buf.spec, mop))
        if op == ReduceOp.AVG:
            _divide(buf, pg.world_size)
        buf.write_back()
        return tensor

    return pg.submit("all_reduce", run, async_op)


def _post_all_reduce(pg: ProcessGroup, tensor: Tensor) -> Work:
    """A SUM all-reduce of ``tensor`` in place, posted without a metadata check (Note [Posting on the caller's
    thread]); ``wait()`` or ``is_completed()`` complete it. DistributedDataParallel's buckets."""
    MPI = _mpi()
    buf = _Buf(MPI, tensor, True, "all_reduce")
    mop = _mpi_op(MPI, ReduceOp.SUM, tensor.dtype, "all_reduce")

    def finish(status: Any) -> Tensor:
        buf.write_back()
        return tensor

    def run(work: Work) -> None:
        work._finish = finish
        work._request = pg.comm.Iallreduce(MPI.IN_PLACE, buf.spec, mop)

    return pg.post("all_reduce", run)


def reduce(
    tensor: Tensor, dst: int = 0, op: str = ReduceOp.SUM, group: Any = None, async_op: bool = False
) -> Work | None:
    """Reduces ``tensor`` across every rank into ``tensor`` of rank ``dst`` (the others' are left as they are).

    Example:
        >>> import flambeau as fb
        >>> dist = fb.distributed
        >>> dist.init_process_group("mpi")  # without mpirun: a world of one rank
        >>> t = fb.tensor([1, 2])
        >>> dist.reduce(t, dst=0, op=dist.ReduceOp.SUM)  # rank 0 gets the sum over ranks
        >>> t.tolist()
        [1, 2]
        >>> dist.destroy_process_group()
    """
    pg = _pg(group, "reduce")
    dst = _check_rank(pg, dst, "dst", "reduce")
    MPI = _mpi()
    buf = _Buf(MPI, tensor, True, "reduce")
    mop = _mpi_op(MPI, op, tensor.dtype, "reduce")

    def run(work: Work) -> None:
        if pg.check:
            pg.check_same("reduce", ("reduce", *_describe(tensor), f"dst={dst}", f"op={op}"))
        if not buf.count:
            return
        if pg.rank == dst:
            _finish(pg.comm.Ireduce(MPI.IN_PLACE, buf.spec, mop, root=dst))
            if op == ReduceOp.AVG:
                _divide(buf, pg.world_size)
            buf.write_back()
        else:
            _finish(pg.comm.Ireduce(buf.spec, None, mop, root=dst))

    return pg.submit("reduce", run, async_op)


def _require_tensors(name: str, **tensors: Any) -> None:
    for arg, t in tensors.items():
        if not isinstance(t, Tensor):
            raise TypeError(f"[{name}] {arg} must be a Tensor, got {type(t).__name__}")


def _check_list(pg: ProcessGroup, tensors: Sequence[Tensor], like: Tensor, name: str, what: str) -> None:
    if not isinstance(tensors, (list, tuple)) or len(tensors) != pg.world_size:
        n = len(tensors) if isinstance(tensors, (list, tuple)) else type(tensors).__name__
        raise ValueError(f"[{name}] {what} must be a list of world_size={pg.world_size} tensors, got {n}")
    for i, t in enumerate(tensors):
        if not isinstance(t, Tensor):
            raise TypeError(f"[{name}] {what}[{i}] must be a Tensor, got {type(t).__name__}")
        if t.dtype != like.dtype:
            raise TypeError(f"[{name}] {what}[{i}] has dtype {t.dtype}, expected {like.dtype}")
        if tuple(t.shape) != tuple(like.shape):
            raise FlambeauError(f"[{name}] {what}[{i}] has shape {list(t.shape)}, expected {list(like.shape)}")


def all_gather_into_tensor(
    output_tensor: Tensor, input_tensor: Tensor, group: Any = None, async_op: bool = False
) -> Work | None:
    """Every rank's ``input_tensor`` concatenated (dim 0) or stacked into ``output_tensor``, without copies.

    ``output_tensor`` has ``world_size`` times the elements of ``input_tensor``.

    Example:
        >>> import flambeau as fb
        >>> dist = fb.distributed
        >>> dist.init_process_group("mpi")  # without mpirun: a world of one rank
        >>> out = fb.zeros(2 * dist.get_world_size())
        >>> dist.all_gather_into_tensor(out, fb.tensor([1.0, 2.0]))
        >>> out.tolist()
        [1.0, 2.0]
        >>> dist.destroy_process_group()
    """
    pg = _pg(group, "all_gather_into_tensor")
    _require_tensors("all_gather_into_tensor", output_tensor=output_tensor, input_tensor=input_tensor)
    if output_tensor.dtype != input_tensor.dtype:
        raise TypeError(
            f"[all_gather_into_tensor] output dtype {output_tensor.dtype} != input dtype {input_tensor.dtype}"
        )
    if output_tensor.numel() != input_tensor.numel() * pg.world_size:
        raise FlambeauError(
            f"[all_gather_into_tensor] the output has {output_tensor.numel()} elements, expected world_size * "
            f"input.numel() = {pg.world_size} * {input_tensor.numel()}"
        )
    return _all_gather_flat(pg, output_tensor, input_tensor, "all_gather_into_tensor", async_op, pg.check)


def _all_gather_flat(
    pg: ProcessGroup, output: Tensor, input: Tensor, name: str, async_op: bool = True, check: bool = False
) -> Work | None:
    MPI = _mpi()
    out = _Buf(MPI, output, False, name)
    inp = _Buf(MPI, input, False, name)

    def run(work: Work) -> Tensor:
        if check:
            pg.check_same("all_gather", ("all_gather", *_describe(input)))
        if inp.count:
            _finish(pg.comm.Iallgather(inp.spec, out.spec))
        out.write_back()
        return output

    return pg.submit(name, run, async_op)


def all_gather(tensor_list: list[Tensor], tensor: Tensor, group: Any = None, async_op: bool = False) -> Work | None:
    """``tensor_list[r]`` = rank r's ``tensor`` (gathered in one buffer, then copied out: one copy).

    Example:
        >>> import flambeau as fb
        >>> dist = fb.distributed
        >>> dist.init_process_group("mpi")  # without mpirun: a world of one rank
        >>> out = [fb.zeros(2) for _ in range(dist.get_world_size())]
        >>> dist.all_gather(out, fb.tensor([1.0, 2.0]))
        >>> [t.tolist() for t in out]
        [[1.0, 2.0]]
        >>> dist.destroy_process_group()
    """
    pg = _pg(group, "all_gather")
    _require_tensors("all_gather", tensor=tensor)
    _check_list(pg, tensor_list, tensor, "all_gather", "tensor_list")
    MPI = _mpi()
    flat = fc.empty([pg.world_size * tensor.numel()], dtype=tensor.dtype)
    out = _Buf(MPI, flat, False, "all_gather")
    inp = _Buf(MPI, tensor, False, "all_gather")
    n = tensor.numel()

    def run(work: Work) -> list[Tensor]:
        if pg.check:
            pg.check_same("all_gather", ("all_gather", *_describe(tensor)))
        if n:
            _finish(pg.comm.Iallgather(inp.spec, out.spec))
            out.write_back()
            with _no_grad():
                for r, t in enumerate(tensor_list):
                    t.detach().copy_(flat[r * n : (r + 1) * n].view(list(tensor.shape)))
        return list(tensor_list)

    return pg.submit("all_gather", run, async_op)


def reduce_scatter_tensor(
    output: Tensor, input: Tensor, op: str = ReduceOp.SUM, group: Any = None, async_op: bool = False
) -> Work | None:
    """``input`` (world_size blocks along dim 0) reduced across ranks; rank r gets block r in ``output``.

    Example:
        >>> import flambeau as fb
        >>> dist = fb.distributed
        >>> dist.init_process_group("mpi")  # without mpirun: a world of one rank
        >>> out = fb.zeros(2)
        >>> dist.reduce_scatter_tensor(out, fb.tensor([1.0, 2.0]))  # one rank: its one block
        >>> out.tolist()
        [1.0, 2.0]
        >>> dist.destroy_process_group()
    """
    pg = _pg(group, "reduce_scatter_tensor")
    _require_tensors("reduce_scatter_tensor", output=output, input=input)
    if output.dtype != input.dtype:
        raise TypeError(f"[reduce_scatter_tensor] output dtype {output.dtype} != input dtype {input.dtype}")
    if input.numel() != output.numel() * pg.world_size:
        raise FlambeauError(
            f"[reduce_scatter_tensor] the input has {input.numel()} elements, expected world_size * output.numel() = "
            f"{pg.world_size} * {output.numel()}"
        )
    return _reduce_scatter(pg, output, input, op, async_op, "reduce_scatter_tensor")


def reduce_scatter(
    output: Tensor, input_list: list[Tensor], op: str = ReduceOp.SUM, group: Any = None, async_op: bool = False
) -> Work | None:
    """Rank r gets the reduction over ranks of ``input_list[r]`` in ``output`` (the list is packed: one copy).

    Example:
        >>> import flambeau as fb
        >>> dist = fb.distributed
        >>> dist.init_process_group("mpi")  # without mpirun: a world of one rank
        >>> out = fb.zeros(2)
        >>> dist.reduce_scatter(out, [fb.tensor([1.0, 2.0])], op=dist.ReduceOp.SUM)
        >>> out.tolist()
        [1.0, 2.0]
        >>> dist.destroy_process_group()
    """
    pg = _pg(group, "reduce_scatter")
    _require_tensors("reduce_scatter", output=output)
    _check_list(pg, input_list, output, "reduce_scatter", "input_list")
    packed = (
        fc.cat([t.detach().reshape(-1) for t in input_list]) if output.numel() else fc.empty([0], dtype=output.dtype)
    )
    return _reduce_scatter(pg, output, packed, op, async_op, "reduce_scatter")


def _reduce_scatter(pg: ProcessGroup, output: Tensor, input: Tensor, op: str, async_op: bool, name: str) -> Work | None:
    MPI = _mpi()
    out = _Buf(MPI, output, True, name)
    inp = _Buf(MPI, input, True, name)
    mop = _mpi_op(MPI, op, output.dtype, name)

    def run(work: Work) -> Tensor:
        if pg.check:
            pg.check_same(name, (name, *_describe(output), f"op={op}"))
        if out.count:
            _finish(pg.comm.Ireduce_scatter_block(inp.spec, out.spec, mop))
        if op == ReduceOp.AVG:
            _divide(out, pg.world_size)
        out.write_back()
        return output

    return pg.submit(name, run, async_op)


def _rooted_list(pg: ProcessGroup, tensor: Tensor, lst: Any, root: int, name: str, words: tuple) -> int:
    """gather/scatter: the list is required on the root rank and must be None (or empty) elsewhere.

    Returns the root's rank within ``pg``.
    """
    root_arg, list_arg, role = words
    local = _check_rank(pg, root, root_arg, name)
    _require_tensors(name, tensor=tensor)
    if pg.rank == local:
        if lst is None:
            raise ValueError(f"[{name}] {list_arg} is required on the {role} rank {root}")
        _check_list(pg, lst, tensor, name, list_arg)
    elif lst:
        raise ValueError(f"[{name}] {list_arg} must be None or empty on rank {pg.rank} (not the {role} {root})")
    return local


def gather(
    tensor: Tensor, gather_list: list[Tensor] | None = None, dst: int = 0, group: Any = None, async_op: bool = False
) -> Work | None:
    """Rank ``dst`` gets every rank's ``tensor``: ``gather_list[r]`` = rank r's (None on the other ranks).

    The tensors are gathered into one buffer on ``dst`` and copied out (one copy).

    Example (``mpirun -n 2``)::

        t = fc.full([2], float(dist.get_rank()))
        out = [fc.zeros([2]) for _ in range(2)] if dist.get_rank() == 0 else None
        dist.gather(t, out, dst=0)  # on rank 0: out == [[0, 0], [1, 1]]

    In a world of one rank:

        >>> import flambeau as fb
        >>> dist = fb.distributed
        >>> dist.init_process_group("mpi")  # without mpirun: a world of one rank
        >>> out = [fb.zeros(2)]
        >>> dist.gather(fb.tensor([5.0, 6.0]), out, dst=0)
        >>> [t.tolist() for t in out]
        [[5.0, 6.0]]
        >>> dist.destroy_process_group()
    """
    pg = _pg(group, "gather")
    dst = _rooted_list(pg, tensor, gather_list, dst, "gather", ("dst", "gather_list", "destination"))
    MPI = _mpi()
    n = tensor.numel()
    inp = _Buf(MPI, tensor, False, "gather")
    flat = fc.empty([pg.world_size * n], dtype=tensor.dtype) if pg.rank == dst else None
    out = _Buf(MPI, flat, False, "gather") if flat is not None else None

    def run(work: Work) -> None:
        if pg.check:
            pg.check_same("gather", ("gather", *_describe(tensor), f"dst={dst}"))
        if not n:
            return
        _finish(pg.comm.Igather(inp.spec, out.spec if out is not None else None, root=dst))
        if flat is not None:
            with _no_grad():
                for r, t in enumerate(gather_list):
                    t.detach().copy_(flat[r * n : (r + 1) * n].view(list(tensor.shape)))

    return pg.submit("gather", run, async_op)


def scatter(
    tensor: Tensor, scatter_list: list[Tensor] | None = None, src: int = 0, group: Any = None, async_op: bool = False
) -> Work | None:
    """Rank r gets ``scatter_list[r]`` of rank ``src`` in ``tensor`` (the list is packed on ``src``: one copy).

    Example (``mpirun -n 2``)::

        t = fc.zeros([2])
        parts = [fc.full([2], 1.0), fc.full([2], 2.0)] if dist.get_rank() == 0 else None
        dist.scatter(t, parts, src=0)  # rank 1: t == [2, 2]

    In a world of one rank:

        >>> import flambeau as fb
        >>> dist = fb.distributed
        >>> dist.init_process_group("mpi")  # without mpirun: a world of one rank
        >>> t = fb.zeros(2)
        >>> dist.scatter(t, [fb.full([2], 1.0)], src=0)
        >>> t.tolist()
        [1.0, 1.0]
        >>> dist.destroy_process_group()
    """
    pg = _pg(group, "scatter")
    src = _rooted_list(pg, tensor, scatter_list, src, "scatter", ("src", "scatter_list", "source"))
    MPI = _mpi()
    out = _Buf(MPI, tensor, False, "scatter")
    inp = None
    if pg.rank == src and tensor.numel():
        inp = _Buf(MPI, fc.cat([t.detach().reshape(-1) for t in scatter_list]), False, "scatter")

    def run(work: Work) -> None:
        if pg.check:
            pg.check_same("scatter", ("scatter", *_describe(tensor), f"src={src}"))
        if not out.count:
            return
        _finish(pg.comm.Iscatter(inp.spec if inp is not None else None, out.spec, root=src))
        out.write_back()

    return pg.submit("scatter", run, async_op)


def _split_counts(
    pg: ProcessGroup, t: Tensor, splits: Sequence[int] | None, name: str, what: str
) -> tuple[list[int], list[int]]:
    """Element counts and offsets of the world_size blocks of ``t`` along dim 0."""
    rows = t.shape[0] if t.dim() else 1
    row = t.numel() // rows if rows else 0
    if splits is None:
        if rows % pg.world_size:
            raise FlambeauError(
                f"[{name}] {what} has {rows} rows along dim 0, not divisible by world_size={pg.world_size}; "
                f"pass {what}_split_sizes"
            )
        splits = [rows // pg.world_size] * pg.world_size
    splits = list(splits)
    if len(splits) != pg.world_size or any(not isinstance(s, int) or s < 0 for s in splits):
        raise ValueError(
            f"[{name}] {what}_split_sizes must be world_size={pg.world_size} non-negative ints, got {splits}"
        )
    if sum(splits) != rows:
        raise FlambeauError(f"[{name}] {what}_split_sizes {splits} sum to {sum(splits)}, but {what} has {rows} rows")
    counts = [s * row for s in splits]
    return counts, _offsets(counts)


def _offsets(counts: list[int]) -> list[int]:
    return [sum(counts[:k]) for k in range(len(counts))]


def _alltoallv(
    pg: ProcessGroup, out: Tensor, inp: Tensor, send: tuple, recv: tuple, name: str, async_op: bool, after=None
) -> Work | None:
    MPI = _mpi()
    ob = _Buf(MPI, out, False, name)
    ib = _Buf(MPI, inp, False, name)

    def run(work: Work) -> None:
        if pg.check:
            pg.check_same(name, (name, str(out.dtype).replace("flambeau.", ""), ("per-rank sizes",)))
        _finish(pg.comm.Ialltoallv([ib.mv, send, ib.kind], [ob.mv, recv, ob.kind]))
        ob.write_back()
        if after is not None:
            after()

    return pg.submit(name, run, async_op)


def all_to_all_single(
    output: Tensor,
    input: Tensor,
    output_split_sizes: Sequence[int] | None = None,
    input_split_sizes: Sequence[int] | None = None,
    group: Any = None,
    async_op: bool = False,
) -> Work | None:
    """Block r of ``input`` (dim 0) goes to rank r; ``output``'s block r comes from rank r (no copies).

    Without split sizes the blocks are equal (dim 0 divisible by world_size);
    rank a's ``input_split_sizes[b]`` must equal rank b's ``output_split_sizes[a]``.

    Example (``mpirun -n 2``)::

        inp = fc.arange(2.0) + 2 * dist.get_rank()  # rank 0: [0, 1], rank 1: [2, 3]
        out = fc.empty([2])
        dist.all_to_all_single(out, inp)  # rank 0: [0, 2], rank 1: [1, 3]

    In a world of one rank (its one block comes back):

        >>> import flambeau as fb
        >>> dist = fb.distributed
        >>> dist.init_process_group("mpi")  # without mpirun: a world of one rank
        >>> out = fb.empty(2)
        >>> dist.all_to_all_single(out, fb.tensor([3.0, 4.0]))
        >>> out.tolist()
        [3.0, 4.0]
        >>> dist.destroy_process_group()
    """
    pg = _pg(group, "all_to_all_single")
    _require_tensors("all_to_all_single", output=output, input=input)
    if output.dtype != input.dtype:
        raise TypeError(f"[all_to_all_single] output dtype {output.dtype} != input dtype {input.dtype}")
    if tuple(output.shape[1:]) != tuple(input.shape[1:]):
        raise FlambeauError(
            f"[all_to_all_single] output {list(output.shape)} and input {list(input.shape)} must agree beyond dim 0"
        )
    send = _split_counts(pg, input, input_split_sizes, "all_to_all_single", "input")
    recv = _split_counts(pg, output, output_split_sizes, "all_to_all_single", "output")
    return _alltoallv(pg, output, input, send, recv, "all_to_all_single", async_op)


def all_to_all(
    output_tensor_list: list[Tensor], input_tensor_list: list[Tensor], group: Any = None, async_op: bool = False
) -> Work | None:
    """``input_tensor_list[r]`` goes to rank r; ``output_tensor_list[r]`` comes from rank r (sizes may differ).

    Both lists are packed into one buffer each (one copy in, one out).

    Example (``mpirun -n 2``)::

        r = dist.get_rank()
        out = [fc.empty([1]) for _ in range(2)]
        dist.all_to_all(out, [fc.tensor([10.0 * r]), fc.tensor([10.0 * r + 1])])
        # rank 0: out == [[0], [10]], rank 1: out == [[1], [11]]

    In a world of one rank:

        >>> import flambeau as fb
        >>> dist = fb.distributed
        >>> dist.init_process_group("mpi")  # without mpirun: a world of one rank
        >>> out = [fb.empty(1)]
        >>> dist.all_to_all(out, [fb.tensor([7.0])])
        >>> [t.tolist() for t in out]
        [[7.0]]
        >>> dist.destroy_process_group()
    """
    pg = _pg(group, "all_to_all")
    for what, lst in (("output_tensor_list", output_tensor_list), ("input_tensor_list", input_tensor_list)):
        if not isinstance(lst, (list, tuple)) or len(lst) != pg.world_size:
            got = len(lst) if isinstance(lst, (list, tuple)) else type(lst).__name__
            raise ValueError(f"[all_to_all] {what} must be a list of world_size={pg.world_size} tensors, got {got}")
        for i, t in enumerate(lst):
            if not isinstance(t, Tensor):
                raise TypeError(f"[all_to_all] {what}[{i}] must be a Tensor, got {type(t).__name__}")
            if t.dtype != input_tensor_list[0].dtype:
                raise TypeError(f"[all_to_all] {what}[{i}] has dtype {t.dtype}, expected {input_tensor_list[0].dtype}")
    dtype = input_tensor_list[0].dtype
    inp = fc.cat([t.detach().reshape(-1) for t in input_tensor_list])
    counts_out = [t.numel() for t in output_tensor_list]
    counts_in = [t.numel() for t in input_tensor_list]
    out = fc.empty([sum(counts_out)], dtype=dtype)
    offs_out = _offsets(counts_out)

    def unpack() -> None:
        with _no_grad():
            for t, off, c in zip(output_tensor_list, offs_out, counts_out, strict=True):
                t.detach().copy_(out[off : off + c].view(list(t.shape)))

    return _alltoallv(
        pg, out, inp, (counts_in, _offsets(counts_in)), (counts_out, offs_out), "all_to_all", async_op, unpack
    )


# ---------------------------------------------------------------------------
# Python objects (pickled by mpi4py)


def all_gather_object(object_list: list, obj: Any, group: Any = None) -> None:
    """``object_list[r]`` = rank r's ``obj`` (any picklable object); the list has world_size entries.

    Example:
        >>> import flambeau as fb
        >>> dist = fb.distributed
        >>> dist.init_process_group("mpi")  # without mpirun: a world of one rank
        >>> out = [None] * dist.get_world_size()
        >>> dist.all_gather_object(out, {"rank": dist.get_rank()})
        >>> out
        [{'rank': 0}]
        >>> dist.destroy_process_group()
    """
    pg = _pg(group, "all_gather_object")
    if len(object_list) != pg.world_size:
        raise ValueError(
            f"[all_gather_object] object_list must have world_size={pg.world_size} entries, got {len(object_list)}"
        )
    work = pg.submit("all_gather_object", lambda w: pg.comm.allgather(obj), True)
    object_list[:] = work.result()


def broadcast_object_list(object_list: list, src: int = 0, group: Any = None) -> None:
    """Replaces ``object_list``'s items, on every rank, by rank ``src``'s (picklable objects).

    Example:
        >>> import flambeau as fb
        >>> dist = fb.distributed
        >>> dist.init_process_group("mpi")  # without mpirun: a world of one rank
        >>> objects = ["config", 3] if dist.get_rank() == 0 else [None, None]
        >>> dist.broadcast_object_list(objects, src=0)
        >>> objects
        ['config', 3]
        >>> dist.destroy_process_group()
    """
    pg = _pg(group, "broadcast_object_list")
    src = _check_rank(pg, src, "src", "broadcast_object_list")
    work = pg.submit("broadcast_object_list", lambda w: pg.comm.bcast(list(object_list), root=src), True)
    object_list[:] = work.result()


def _objects(pg: ProcessGroup, name: str, fn: Any) -> Any:
    """Runs ``fn(work)`` (mpi4py's pickling calls) in the group's call order and returns what it returned."""
    work = pg.submit(name, fn, True)
    work.wait()
    return work._result


def gather_object(
    obj: Any,
    object_gather_list: list | None = None,
    dst: int | None = None,
    group: Any = None,
    group_dst: int | None = None,
) -> None:
    """Rank ``dst`` gets every rank's ``obj`` (picklable): ``object_gather_list[r]`` = rank r's.

    As PyTorch's: the list is required on ``dst`` and must be None or empty elsewhere
    (ValueError); ``dst`` is a rank of the default group, ``group_dst`` one of ``group``
    (give one; ``dst=0`` when neither). A list shorter than the group raises IndexError
    once the objects have arrived, as PyTorch's; a longer one keeps its extra items.

    Example:
        >>> import flambeau as fb
        >>> dist = fb.distributed
        >>> dist.init_process_group("mpi")  # without mpirun: a world of one rank
        >>> out = [None] * dist.get_world_size()
        >>> dist.gather_object({"rank": dist.get_rank()}, out, dst=0)
        >>> out
        [{'rank': 0}]
        >>> dist.destroy_process_group()
    """
    pg = _pg(group, "gather_object")
    if dst is None and group_dst is None:
        dst = 0
    root = _group_peer(pg, dst, group_dst, "dst", "gather_object")
    if pg.rank == root:
        if not object_gather_list:
            raise ValueError("Argument ``gather_list`` must be specified on destination rank.")
    elif object_gather_list:
        raise ValueError("Argument ``gather_list`` must NOT be specified on non-destination ranks.")
    got = _objects(pg, "gather_object", lambda w: pg.comm.gather(obj, root=root))
    if pg.rank == root:
        for i, item in enumerate(got):
            object_gather_list[i] = item


def scatter_object_list(
    scatter_object_output_list: list,
    scatter_object_input_list: list | None = None,
    src: int | None = None,
    group: Any = None,
    group_src: int | None = None,
) -> None:
    """Rank r gets item r of rank ``src``'s ``scatter_object_input_list`` in ``scatter_object_output_list[0]``.

    As PyTorch's: the output list needs at least one item and the input list is required on
    ``src`` (ValueError, raised on the rank that got it wrong before anything moves); an input
    list of another length than the group raises RuntimeError, here on every rank (PyTorch's
    other ranks would wait).

    Example:
        >>> import flambeau as fb
        >>> dist = fb.distributed
        >>> dist.init_process_group("mpi")  # without mpirun: a world of one rank
        >>> out = [None]
        >>> dist.scatter_object_list(out, [{"lr": 0.1}], src=0)
        >>> out
        [{'lr': 0.1}]
        >>> dist.destroy_process_group()
    """
    pg = _pg(group, "scatter_object_list")
    if src is None and group_src is None:
        src = 0
    root = _group_peer(pg, src, group_src, "src", "scatter_object_list")
    if not isinstance(scatter_object_output_list, list) or len(scatter_object_output_list) < 1:
        raise ValueError("Expected argument scatter_object_output_list to be a list of size at least 1.")
    items, error = None, None
    if pg.rank == root:
        if scatter_object_input_list is None:
            raise ValueError("source rank must provide non-None scatter_object_input_list")
        items = list(scatter_object_input_list)
        if len(items) != pg.world_size:
            error = (
                f"[scatter_object_list] Incorrect input list size {len(items)} on the source rank "
                f"{pg.global_ranks[root]}. Input list size should be {pg.world_size}, same as size of the process "
                "group."
            )

    def run(work: Work) -> Any:
        failed = pg.comm.bcast(error, root=root)
        if failed:
            raise RuntimeError(failed)
        return pg.comm.scatter(items, root=root)

    scatter_object_output_list[0] = _objects(pg, "scatter_object_list", run)


_MONITORED_TAG = 31000  # + the call's number modulo 1000: a late rank's message never matches a later call


def monitored_barrier(
    group: Any = None, timeout: datetime.timedelta | float | None = None, wait_all_ranks: bool = False
) -> None:
    """A barrier that names the ranks that did not reach it within ``timeout`` (PyTorch's, gloo's only).

    Every rank tells rank 0 of the group that it arrived; rank 0 waits for each
    and then releases them. A rank missing at the timeout makes rank 0 raise
    ``DistBackendError`` (a RuntimeError) ``Rank 1 failed to pass monitoredBarrier in
    1000 ms`` (the first missing rank; every one of them with ``wait_all_ranks=True``:
    ``Ranks 1, 2 failed ...``), and the ranks that arrived raise an error naming rank 0
    instead of waiting forever. ``timeout`` defaults to the group's; a float is seconds
    (with a warning, as PyTorch's).

    Example:
        >>> import flambeau as fb
        >>> import datetime
        >>> dist = fb.distributed
        >>> dist.init_process_group("mpi")  # without mpirun: a world of one rank
        >>> dist.monitored_barrier(timeout=datetime.timedelta(seconds=10), wait_all_ranks=True)
        >>> dist.destroy_process_group()
    """
    pg = _pg(group, "monitored_barrier")
    if timeout is None:
        timeout = pg.timeout
    elif isinstance(timeout, (int, float)) and not isinstance(timeout, bool):
        warnings.warn(
            f"Please specify timeout arg as a timedelta. Converting current value of {timeout} assuming it "
            "represents seconds",
            stacklevel=2,
        )
        timeout = datetime.timedelta(seconds=timeout)
    if not isinstance(timeout, datetime.timedelta):
        raise TypeError(f"Expected timeout argument to be of type datetime.timedelta, got {type(timeout)}")
    seq = getattr(pg, "_monitored_calls", 0)
    pg._monitored_calls = seq + 1
    tag = _MONITORED_TAG + seq % 1000
    ms = int(timeout.total_seconds() * 1000)

    def run(work: Work) -> None:
        MPI = _mpi()
        deadline = time.monotonic() + timeout.total_seconds()
        if pg.rank == 0:
            bufs = {r: bytearray(1) for r in range(1, pg.world_size)}
            reqs = {r: pg.comm.Irecv([bufs[r], MPI.BYTE], source=r, tag=tag) for r in bufs}
            missing = _wait_for(reqs, deadline, cancel=True)
            if missing:
                global_ranks = [pg.global_ranks[r] for r in missing]
                if wait_all_ranks:
                    who = f"Ranks {', '.join(str(r) for r in global_ranks)}"
                else:
                    who = f"Rank {global_ranks[0]}"
                raise DistBackendError(f"[monitored_barrier] {who} failed to pass monitoredBarrier in {ms} ms")
            for req in [pg.comm.Isend([bytearray(1), MPI.BYTE], dest=r, tag=tag) for r in bufs]:
                _finish(req)
            return
        arrived = bytearray(1)
        sent = pg.comm.Isend([arrived, MPI.BYTE], dest=0, tag=tag)
        ack = bytearray(1)
        late = _wait_for({0: pg.comm.Irecv([ack, MPI.BYTE], source=0, tag=tag)}, deadline, cancel=True)
        if not sent.Test():  # rank 0 gave up on it: MPI may still read the buffer, keep it alive
            pg._monitored_unsent = (sent, arrived)
        if late:
            raise DistBackendError(
                f"[monitored_barrier] Rank {pg.global_ranks[pg.rank]} successfully reached monitoredBarrier, but "
                f"received errors while waiting for send/recv from rank {pg.global_ranks[0]} within {ms} ms. Please "
                f"check rank {pg.global_ranks[0]} logs for faulty rank."
            )

    pg.submit("monitored_barrier", run, False)


def _wait_for(reqs: dict, deadline: float, cancel: bool = False) -> list[int]:
    """Tests the requests (sleeping between Tests) until all completed or the deadline; returns the keys of those
    that did not complete, in order (cancelled when ``cancel``)."""
    pending = sorted(reqs)
    delay = 1e-5
    while pending:
        pending = [k for k in pending if not reqs[k].Test()]
        if not pending or time.monotonic() > deadline:
            break
        time.sleep(delay)
        delay = min(delay * 2, 1e-3)
    if cancel:
        for k in pending:
            reqs[k].Cancel()
            reqs[k].Wait()
    return pending


# ---------------------------------------------------------------------------
# Coalesced collectives (several tensors in one message) and the *_single names


# PyTorch's other names of all_gather_into_tensor and reduce_scatter_tensor
all_gather_single = all_gather_into_tensor
reduce_scatter_single = reduce_scatter_tensor


def _tensor_list(tensors: Any, what: str) -> list[Tensor]:
    """PyTorch's checks of a list of tensors of one dtype (TypeError, ValueError)."""
    if not isinstance(tensors, list) or not all(isinstance(t, Tensor) for t in tensors):
        kinds = [type(t).__name__ for t in tensors] if isinstance(tensors, list) else type(tensors).__name__
        raise TypeError(f"Invalid function argument. Expected parameter `{what}` of type list[Tensor], got {kinds}")
    dtypes = {t.dtype for t in tensors}
    if len(dtypes) > 1:
        raise ValueError(f"Invalid usage of tensors with different dtypes: found {sorted(str(d) for d in dtypes)}")
    return tensors


def _coalesced(work: Work, unpack: Any, value: Any, async_op: bool) -> Any:
    """Copies a coalesced collective's packed result out (``unpack``); with ``async_op`` a Future of ``value``."""
    if async_op:

        def done(fut: Any) -> Any:
            fut.wait()
            unpack()
            return value

        return work.get_future().then(done)
    work.wait()
    unpack()
    return None


_COALESCED_DEPRECATED = (
    "`torch.distributed.{}` will be deprecated. If you must use it, please revisit our documentation later at "
    "https://pytorch.org/docs/main/distributed.html#collective-functions"
)


def all_reduce_coalesced(
    tensors: Tensor | list[Tensor], op: str = ReduceOp.SUM, group: Any = None, async_op: bool = False
) -> Any:
    """Every tensor of ``tensors`` all-reduced, in one message (packed: one copy in, one out).

    As PyTorch's (deprecated there: a FutureWarning): the tensors share a dtype
    (ValueError), ``async_op=True`` returns a Future of the tensors.

    Example:
        >>> import flambeau as fb
        >>> import warnings
        >>> dist = fb.distributed
        >>> dist.init_process_group("mpi")  # without mpirun: a world of one rank
        >>> a, b = fb.ones(2), fb.arange(3.0)
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("ignore")  # deprecated in PyTorch
        ...     dist.all_reduce_coalesced([a, b], op=dist.ReduceOp.SUM)
        >>> a.tolist(), b.tolist()
        ([1.0, 1.0], [0.0, 1.0, 2.0])
        >>> dist.destroy_process_group()
    """
    warnings.warn(_COALESCED_DEPRECATED.format("all_reduce_coalesced"), FutureWarning, stacklevel=2)
    tensors = _tensor_list([tensors] if isinstance(tensors, Tensor) else tensors, "tensor")
    pg = _pg(group, "all_reduce_coalesced")
    if not tensors:
        return _coalesced(pg.submit("all_reduce_coalesced", lambda w: None, True), lambda: None, [], async_op)
    flat = fc.cat([t.detach().reshape(-1) for t in tensors])
    counts = [t.numel() for t in tensors]

    def unpack() -> None:
        with _no_grad():
            for t, off, c in zip(tensors, _offsets(counts), counts, strict=True):
                t.detach().copy_(flat[off : off + c].view(list(t.shape)))

    work = _all_reduce(pg, flat, op, True, pg.check)
    return _coalesced(work, unpack, tensors, async_op)


def all_gather_coalesced(
    output_tensor_lists: list[list[Tensor]], input_tensor_list: list[Tensor], group: Any = None, async_op: bool = False
) -> Any:
    """``output_tensor_lists[r][i]`` = rank r's ``input_tensor_list[i]``, in one message.

    As PyTorch's (deprecated there: a FutureWarning): the inputs share a dtype (ValueError);
    one output list per rank, each shaped as the inputs (RuntimeError, as gloo's);
    ``async_op=True`` returns a Future of the output tensors.

    Example:
        >>> import flambeau as fb
        >>> import warnings
        >>> dist = fb.distributed
        >>> dist.init_process_group("mpi")  # without mpirun: a world of one rank
        >>> out = [[fb.zeros(2), fb.zeros(1)]]
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("ignore")  # deprecated in PyTorch
        ...     dist.all_gather_coalesced(out, [fb.ones(2), fb.tensor([7.0])])
        >>> [[t.tolist() for t in lst] for lst in out]
        [[[1.0, 1.0], [7.0]]]
        >>> dist.destroy_process_group()
    """
    warnings.warn(_COALESCED_DEPRECATED.format("all_gather_coalesced"), FutureWarning, stacklevel=2)
    pg = _pg(group, "all_gather_coalesced")
    inputs = _tensor_list(input_tensor_list, "input_tensor_list")
    if not isinstance(output_tensor_lists, list):
        raise TypeError("Invalid function argument: output_tensor_lists should be a list")
    for lst in output_tensor_lists:
        _tensor_list(lst, "output_tensor_lists")
    if len(output_tensor_lists) != pg.world_size:
        raise RuntimeError(
            f"[all_gather_coalesced] output lists should be equal to world size ({pg.world_size}), "
            f"got {len(output_tensor_lists)}"
        )
    for lst in output_tensor_lists:
        if len(lst) != len(inputs):
            raise RuntimeError(
                f"[all_gather_coalesced] invalid output size: (expected length {len(inputs)}, got {len(lst)})"
            )
        for i, (out, inp) in enumerate(zip(lst, inputs, strict=True)):
            if out.numel() != inp.numel() or out.dtype != inp.dtype:
                raise RuntimeError(
                    f"[all_gather_coalesced] invalid size of output tensor at index {i} (expected {inp.dtype} "
                    f"{list(inp.shape)}, got {out.dtype} {list(out.shape)})"
                )
    outputs = [t for lst in output_tensor_lists for t in lst]
    if not inputs:
        return _coalesced(pg.submit("all_gather_coalesced", lambda w: None, True), lambda: None, outputs, async_op)
    flat_in = fc.cat([t.detach().reshape(-1) for t in inputs])
    n = flat_in.numel()
    flat_out = fc.empty([pg.world_size * n], dtype=flat_in.dtype)
    counts = [t.numel() for t in inputs]

    def unpack() -> None:
        with _no_grad():
            for r, lst in enumerate(output_tensor_lists):
                for t, off, c in zip(lst, _offsets(counts), counts, strict=True):
                    t.detach().copy_(flat_out[r * n + off : r * n + off + c].view(list(t.shape)))

    work = _all_gather_flat(pg, flat_out, flat_in, "all_gather_coalesced", True, pg.check)
    return _coalesced(work, unpack, outputs, async_op)
