"""The default DDP communication hooks, as ``torch.distributed.algorithms.ddp_comm_hooks.default_hooks``.

Each takes ``(process_group, bucket)`` (``process_group=None``: the default
group) and returns a ``Future`` of the bucket's gradients averaged over the
ranks. Register one with ``model.register_comm_hook(state, hook)``.

The compression hooks send the gradients as 16-bit floats (half the bytes).
MPI has no 16-bit float reduction, so the ranks' compressed gradients are
gathered (as bit patterns) and summed in the bucket's dtype: the sum of the
rounded values, not PyTorch's fp16 sum, and for more than 2 ranks more bytes
than a ring all-reduce of fp16 would move.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import flambeau_core as fc
from flambeau_core import Tensor

from flambeau_distributed import _c10d
from flambeau_distributed.futures import Future

if TYPE_CHECKING:
    from flambeau_distributed.parallel import GradBucket


def allreduce_hook(process_group: Any, bucket: GradBucket) -> Future[Tensor]:
    """The bucket divided by the world size, then all-reduced (DDP's own behaviour, as a hook).

    Example::

        model.register_comm_hook(None, default_hooks.allreduce_hook)
    """
    pg = _c10d._pg(process_group, "allreduce_hook")
    buf = bucket.buffer()
    buf.div_(pg.world_size)
    # DDP compared the parameters across ranks once: no per-bucket metadata check
    work = _c10d._all_reduce(pg, buf, _c10d.ReduceOp.SUM, True, False)
    return work.get_future().then(lambda fut: fut.value()[0])


def _compressed(process_group: Any, bucket: GradBucket, dtype: Any, name: str) -> Future[Tensor]:
    pg = _c10d._pg(process_group, name)
    buf = bucket.buffer()
    world = pg.world_size
    compressed = buf.to(dtype).div_(world)
    gathered = fc.empty([world * compressed.numel()], dtype=dtype)
    work = _c10d._all_gather_flat(pg, gathered, compressed, name)

    def decompress(fut: Future) -> Tensor:
        fut.value()
        buf.copy_(gathered.view([world, compressed.numel()]).to(buf.dtype).sum(0))
        return buf

    return work.get_future().then(decompress)


def fp16_compress_hook(process_group: Any, bucket: GradBucket) -> Future[Tensor]:
    """Sends the bucket as float16 (divided by the world size first), sums it back in the bucket's dtype.

    Example::

        model.register_comm_hook(None, default_hooks.fp16_compress_hook)
    """
    return _compressed(process_group, bucket, fc.float16, "fp16_compress_hook")


def bf16_compress_hook(process_group: Any, bucket: GradBucket) -> Future[Tensor]:
    """Sends the bucket as bfloat16 (divided by the world size first), sums it back in the bucket's dtype.

    Example::

        model.register_comm_hook(None, default_hooks.bf16_compress_hook)
    """
    return _compressed(process_group, bucket, fc.bfloat16, "bf16_compress_hook")


__all__ = ["allreduce_hook", "bf16_compress_hook", "fp16_compress_hook"]
