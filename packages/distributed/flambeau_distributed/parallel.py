"""DistributedDataParallel: one model replica per rank, gradients averaged across ranks during backward.

Note [DDP buckets]: the parameters are packed, in reverse registration order
(roughly the order their gradients become ready), into buckets: a bucket
closes once its gradients reach the cap (a parameter is never cut in two),
the first one at min(1 MB, cap), as PyTorch, so that communication starts
early. The cap is ``bucket_cap_mb`` when given; otherwise it adapts to the
model: the gradients' total bytes over 8, at least 256 KB (smaller
all-reduces cost mostly their latency) and at most PyTorch's 25 MB, so a
model of a few MB still gets several buckets whose all-reduces overlap the
earlier layers' backward, and a large one PyTorch's 25 MB buckets. A
post-hook on each parameter's AccumulateGrad node (the node that writes
``.grad``, kept alive by this module) copies the gradient, divided
by the world size, into its bucket slot once backward produced it (one pass,
as PyTorch's reducer); when a bucket is full its all-reduce is posted right
there, on backward's thread (Note [Posting on the caller's thread]), and the
process group's progress thread moves its data while backward goes on
computing the earlier layers' gradients. The first layer's weight gradient, backward's last, is computed and
posted in row blocks (Note [Split last layer]). Buckets are
launched in index order on every rank (a bucket that fills early waits for
the ones before it), so the ranks' collectives match. The hook of the last
gradient waits for every all-reduce; a ``.grad`` that backward left None becomes
a view of its bucket (each iteration gets fresh bucket buffers, so no copy
out), one that accumulates (``no_sync``, no ``zero_grad``) gets the average
copied in; with ``gradient_as_bucket_view=True`` the buffers are kept and
``.grad`` stays a view of them.
"""

from __future__ import annotations

import contextlib
import time
from collections.abc import Iterator
from typing import Any

import flambeau_autograd as autograd
import flambeau_core as fc
from flambeau_autograd import _post_accumulate_hooks
from flambeau_core import FlambeauError, Tensor
from flambeau_nn import (
    DataParallel,  # noqa: F401  (torch.nn.parallel.DataParallel's place)
    Linear,
    Module,
)
from flambeau_nn.functional import linear

from flambeau_distributed import _c10d
from flambeau_distributed.algorithms.join import Join, Joinable, JoinHook
from flambeau_distributed.futures import Future

_FIRST_BUCKET_BYTES = 1024 * 1024
_DEFAULT_BUCKET_CAP_MB = 25
# Note [DDP buckets]: without bucket_cap_mb, about this many buckets, each at least this many bytes
_TARGET_BUCKETS = 8
_MIN_BUCKET_BYTES = 256 * 1024
# Note [Split last layer]: the smallest weight split, and the bytes of one row block
_SPLIT_MIN_BYTES = 256 * 1024
_SPLIT_BLOCK_BYTES = 256 * 1024
_SPLIT_MAX_BLOCKS = 8


def _adaptive_bucket_cap(total_bytes: int) -> int:
    """The bucket size DDP uses without ``bucket_cap_mb`` (Note [DDP buckets]): the gradients' bytes over
    ``_TARGET_BUCKETS``, at least 256 KB and at most PyTorch's 25 MB."""
    return min(_DEFAULT_BUCKET_CAP_MB * 1024 * 1024, max(_MIN_BUCKET_BYTES, -(-total_bytes // _TARGET_BUCKETS)))


class _SplitLinear(autograd.Function):
    """A Linear layer whose weight gradient DDP computes in row blocks, each all-reduced once done.

    Note [Split last layer]: backward's last node is usually the first
    layer's, and its weight gradient (often the largest) is the last
    gradient produced: a bucket holding it can only start after backward's
    computation is over, with nothing left to hide its all-reduce behind.
    DistributedDataParallel therefore runs its first Linear layer (the one
    owning the first registered parameter, when that weight has at least
    256 KB and the layer is called once in the forward) through this
    Function: its backward computes the weight gradient's rows in blocks of
    about 256 KB (2 to 8 blocks), writes each, divided by the world size,
    straight into its bucket slot and posts the block's all-reduce before
    computing the next (Note [Posting on the caller's thread]); the process
    group's progress thread moves the blocks' data while the next blocks
    compute, and only the last block's is left after backward. Each
    row of the gradient is the same product over the batch as the
    unsplit ``grad_out.T @ input``. The weight's gradient goes to the
    bucket, not through autograd: the Function hands the weight's
    AccumulateGrad an expanded zero instead, so that its hook still runs
    once every use of the weight has given its gradient. A weight also
    used outside its layer (``F.linear(h, fc1.weight)`` elsewhere in the
    forward, a penalty on it in the loss) gets the outside part there,
    after its blocks went: the rest of the bucket (the bias) is posted
    after that hook, with one more element, a flag that the rank has an
    outside part. The flag is summed with the bucket, so every rank
    reads the same value: when it is not zero every rank all-reduces its
    outside part (zeros where it has none) and adds it to the weight's
    slot, and the layer is not split again (the same decision on every
    rank, so the ranks' collectives keep matching). A rank that computed
    the weight's gradient whole (a layer split in this forward whose
    backward could not split) posts the same row blocks when the bucket
    is ready, so the collectives match whatever each rank did. Not with a
    communication hook (it gets whole buckets), ``no_sync``, ``Join``,
    one rank, ``backward(create_graph=True)``, or ``split_first_layer=False``.
    """

    @staticmethod
    def forward(ctx: Any, input: Tensor, weight: Tensor, bias: Tensor | None, ddp: DistributedDataParallel) -> Tensor:
        ctx.ddp = ddp
        ctx.has_bias = bias is not None
        ctx.save_for_backward(input, weight)
        return linear(input, weight, bias)

    @staticmethod
    def backward(ctx: Any, grad: Tensor) -> tuple:
        input, weight = ctx.saved_tensors
        out_features, in_features = weight.shape
        g = grad.reshape([-1, out_features])
        x = input.reshape([-1, in_features])
        if ctx.ddp._split_weight_grad(g, x):
            # the weight's gradient is in the bucket already; a zero (one element, expanded) still goes to the
            # weight's AccumulateGrad so that its hook runs once every use of the weight is in (Note [Split last
            # layer]: a gradient from outside the layer is then seen there)
            grad_weight = ctx.ddp._split_zero.expand([out_features, in_features])
        else:
            grad_weight = fc.mm(g.t(), x)
        grad_input = fc.mm(g, weight).reshape(list(input.shape)) if ctx.needs_input_grad[0] else None
        grad_bias = g.sum(0) if ctx.has_bias and ctx.needs_input_grad[2] else None
        return grad_input, grad_weight, grad_bias, None


class _Bucket:
    __slots__ = ("index", "params", "offsets", "flat", "storage", "pending", "works", "split", "ready", "future")

    def __init__(self, index: int, params: list[int], offsets: list[int], flat: Tensor) -> None:
        self.index = index
        self.params = params  # indices into DDP._params
        self.offsets = offsets
        self.flat = flat
        # flat, or (the split layer's bucket, Note [Split last layer]) one flag element then flat
        self.storage = flat
        self.pending = len(params)
        self.works: list[_c10d.Work] = []  # its all-reduces in flight (one, or the split layer's row blocks too)
        self.split: list[tuple[int, int]] = []  # element ranges of flat already posted (Note [Split last layer])
        self.ready = False
        self.future: Future | None = None  # what a communication hook returned


class GradBucket:
    """One bucket of gradients handed to a communication hook, as ``torch.distributed.GradBucket``.

    ``buffer()`` is the bucket's flat tensor (its gradients are views of it,
    in ``parameters()`` order); the hook returns a ``Future`` whose value is
    the tensor to use as the bucket's averaged gradients.

    A hook that averages the gradients over the ranks itself::

        def hook(state, bucket):
            buf = bucket.buffer().div_(dist.get_world_size())
            return dist.all_reduce(buf, async_op=True).get_future().then(lambda f: f.value()[0])

    Example (a world of one rank, a hook that keeps its buckets):

        >>> import flambeau as fb
        >>> dist = fb.distributed
        >>> dist.init_process_group("mpi")  # without mpirun: a world of one rank
        >>> from flambeau_distributed.algorithms.ddp_comm_hooks.default_hooks import allreduce_hook
        >>> model = dist.DistributedDataParallel(fb.nn.Linear(2, 1))
        >>> buckets = []  # DDP's own all-reduce, keeping each bucket it is given:
        >>> model.register_comm_hook(buckets, lambda kept, b: kept.append(b) or allreduce_hook(None, b))
        >>> model(fb.ones(1, 2)).sum().backward()
        >>> bucket = buckets[0]
        >>> len(buckets), bucket.index(), bucket.is_last()
        (1, 0, True)
        >>> dist.destroy_process_group()
    """

    def __init__(self, ddp: DistributedDataParallel, bucket: _Bucket) -> None:
        self._ddp = ddp
        self._bucket = bucket

    def index(self) -> int:
        """The bucket's index; buckets are numbered from the last parameters registered (Note [DDP buckets]).

        Example:
        >>> import flambeau as fb
        >>> dist = fb.distributed
        >>> dist.init_process_group("mpi")  # without mpirun: a world of one rank
        >>> from flambeau_distributed.algorithms.ddp_comm_hooks.default_hooks import allreduce_hook
        >>> model = dist.DistributedDataParallel(fb.nn.Linear(2, 1))
        >>> buckets = []  # DDP's own all-reduce, keeping each bucket it is given:
        >>> model.register_comm_hook(buckets, lambda kept, b: kept.append(b) or allreduce_hook(None, b))
        >>> model(fb.ones(1, 2)).sum().backward()
        >>> bucket = buckets[0]
        >>> bucket.index()
        0
        >>> dist.destroy_process_group()
        """
        return self._bucket.index

    def buffer(self) -> Tensor:
        """The bucket's flat tensor: this rank's gradients (not yet averaged), end to end.

        Example (``Linear(2, 1)``'s bias, then weight: the last registered come first):
        >>> import flambeau as fb
        >>> dist = fb.distributed
        >>> dist.init_process_group("mpi")  # without mpirun: a world of one rank
        >>> from flambeau_distributed.algorithms.ddp_comm_hooks.default_hooks import allreduce_hook
        >>> model = dist.DistributedDataParallel(fb.nn.Linear(2, 1))
        >>> buckets = []  # DDP's own all-reduce, keeping each bucket it is given:
        >>> model.register_comm_hook(buckets, lambda kept, b: kept.append(b) or allreduce_hook(None, b))
        >>> model(fb.ones(1, 2)).sum().backward()
        >>> bucket = buckets[0]
        >>> bucket.buffer().tolist()
        [1.0, 1.0, 1.0]
        >>> dist.destroy_process_group()
        """
        return self._bucket.flat

    def set_buffer(self, buffer: Tensor) -> None:
        """Replaces the bucket's flat tensor (same number of elements and dtype).

        The values are copied into the bucket's buffer.

        Example:
        >>> import flambeau as fb
        >>> dist = fb.distributed
        >>> dist.init_process_group("mpi")  # without mpirun: a world of one rank
        >>> from flambeau_distributed.algorithms.ddp_comm_hooks.default_hooks import allreduce_hook
        >>> model = dist.DistributedDataParallel(fb.nn.Linear(2, 1))
        >>> buckets = []  # DDP's own all-reduce, keeping each bucket it is given:
        >>> model.register_comm_hook(buckets, lambda kept, b: kept.append(b) or allreduce_hook(None, b))
        >>> model(fb.ones(1, 2)).sum().backward()
        >>> bucket = buckets[0]
        >>> bucket.set_buffer(fb.tensor([1.0, 2.0, 3.0]))
        >>> bucket.buffer().tolist()
        [1.0, 2.0, 3.0]
        >>> dist.destroy_process_group()
        """
        b = self._bucket
        if not isinstance(buffer, Tensor):
            raise TypeError(f"[GradBucket.set_buffer] expected a Tensor, got {type(buffer).__name__}")
        if buffer.numel() != b.flat.numel() or buffer.dtype != b.flat.dtype:
            raise FlambeauError(
                f"[GradBucket.set_buffer] expected {b.flat.numel()} elements of {b.flat.dtype}, got "
                f"{list(buffer.shape)} of {buffer.dtype}"
            )
        with autograd.no_grad():
            b.flat.copy_(buffer.reshape([-1]))

    def is_last(self) -> bool:
        """Whether this is the iteration's last bucket (the one holding the first parameters registered).

        Example (a small model has one bucket):
        >>> import flambeau as fb
        >>> dist = fb.distributed
        >>> dist.init_process_group("mpi")  # without mpirun: a world of one rank
        >>> from flambeau_distributed.algorithms.ddp_comm_hooks.default_hooks import allreduce_hook
        >>> model = dist.DistributedDataParallel(fb.nn.Linear(2, 1))
        >>> buckets = []  # DDP's own all-reduce, keeping each bucket it is given:
        >>> model.register_comm_hook(buckets, lambda kept, b: kept.append(b) or allreduce_hook(None, b))
        >>> model(fb.ones(1, 2)).sum().backward()
        >>> bucket = buckets[0]
        >>> bucket.is_last()
        True
        >>> dist.destroy_process_group()
        """
        return self._bucket.index == len(self._ddp._buckets) - 1

    def parameters(self) -> list[Tensor]:
        """The parameters whose gradients the bucket holds, in ``buffer()``'s order.

        Example:
        >>> import flambeau as fb
        >>> dist = fb.distributed
        >>> dist.init_process_group("mpi")  # without mpirun: a world of one rank
        >>> from flambeau_distributed.algorithms.ddp_comm_hooks.default_hooks import allreduce_hook
        >>> model = dist.DistributedDataParallel(fb.nn.Linear(2, 1))
        >>> buckets = []  # DDP's own all-reduce, keeping each bucket it is given:
        >>> model.register_comm_hook(buckets, lambda kept, b: kept.append(b) or allreduce_hook(None, b))
        >>> model(fb.ones(1, 2)).sum().backward()
        >>> bucket = buckets[0]
        >>> [tuple(p.shape) for p in bucket.parameters()]
        [(1,), (1, 2)]
        >>> dist.destroy_process_group()
        """
        return [self._ddp._params[i] for i in self._bucket.params]

    def gradients(self) -> list[Tensor]:
        """The gradients of ``parameters()``, as views of ``buffer()`` shaped as the parameters.

        Example:
        >>> import flambeau as fb
        >>> dist = fb.distributed
        >>> dist.init_process_group("mpi")  # without mpirun: a world of one rank
        >>> from flambeau_distributed.algorithms.ddp_comm_hooks.default_hooks import allreduce_hook
        >>> model = dist.DistributedDataParallel(fb.nn.Linear(2, 1))
        >>> buckets = []  # DDP's own all-reduce, keeping each bucket it is given:
        >>> model.register_comm_hook(buckets, lambda kept, b: kept.append(b) or allreduce_hook(None, b))
        >>> model(fb.ones(1, 2)).sum().backward()
        >>> bucket = buckets[0]
        >>> [g.tolist() for g in bucket.gradients()]
        [[1.0], [[1.0, 1.0]]]
        >>> dist.destroy_process_group()
        """
        b, params = self._bucket, self._ddp._params
        return [
            b.flat[off : off + params[i].numel()].view(list(params[i].shape))
            for i, off in zip(b.params, b.offsets, strict=True)
        ]


class _DDPJoinHook(JoinHook):
    """A joined rank's part in DDP's iterations (Note [DDP buckets]): zero gradients, then the final model."""

    def __init__(self, ddp: DistributedDataParallel, divide_by_initial_world_size: bool) -> None:
        self.ddp = ddp
        ddp._divide_by_initial_world_size = divide_by_initial_world_size

    def main_hook(self) -> None:
        self.ddp._shadow_iteration()

    def post_hook(self, is_last_joiner: bool) -> None:
        self.ddp._sync_final_model(is_last_joiner)


class DistributedDataParallel(Module, Joinable):
    """Data parallelism across the ranks of an ``mpirun`` job, as ``torch.nn.parallel.DistributedDataParallel``.

    Each rank runs the same model on its own share of the batch; after
    ``loss.backward()`` every replica holds the gradient averaged over the
    ranks, so one optimizer step keeps the replicas identical. The initial
    parameters and buffers are broadcast from rank 0 at construction (and
    the buffers before each forward with ``broadcast_buffers``).

    Args mirror PyTorch's; ``device_ids``/``output_device`` must be None (CPU
    modules), ``dim`` is unused (no scatter across devices),
    ``check_reduction`` and ``static_graph`` are accepted and have no effect
    (every iteration is checked as in PyTorch's default mode).
    ``bucket_cap_mb=None`` sizes the buckets from the model (Note [DDP
    buckets]). ``split_first_layer`` (flambeau's own, default True): the
    first Linear layer's weight gradient is computed and all-reduced in row
    blocks (Note [Split last layer]); False sends it whole in its bucket.

    Example (launched with ``mpirun -n 2 python train.py``)::

        dist.init_process_group("mpi")
        model = DistributedDataParallel(net)
        loss_fn(model(x), y).backward()  # grads averaged over the 2 ranks
        opt.step()

    In a world of one rank (the average over one rank is its own gradient):

        >>> import flambeau as fb
        >>> dist = fb.distributed
        >>> dist.init_process_group("mpi")  # without mpirun: a world of one rank
        >>> model = dist.DistributedDataParallel(fb.nn.Linear(2, 1))
        >>> model(fb.ones(1, 2)).sum().backward()
        >>> model.module.weight.grad.tolist()
        [[1.0, 1.0]]
        >>> dist.destroy_process_group()
    """

    def __init__(
        self,
        module: Module,
        device_ids: Any = None,
        output_device: Any = None,
        dim: int = 0,
        broadcast_buffers: bool = True,
        init_sync: bool = True,
        process_group: Any = None,
        bucket_cap_mb: float | None = None,
        find_unused_parameters: bool = False,
        check_reduction: bool = False,
        gradient_as_bucket_view: bool = False,
        static_graph: bool = False,
        split_first_layer: bool = True,
    ) -> None:
        super().__init__()
        Joinable.__init__(self)
        if not isinstance(module, Module):
            raise TypeError(f"[DistributedDataParallel] module must be an nn.Module, got {type(module).__name__}")
        if device_ids is not None or output_device is not None:
            raise ValueError(
                "[DistributedDataParallel] device_ids and output_device must be None for a CPU module, "
                f"got device_ids={device_ids!r}, output_device={output_device!r}"
            )
        if bucket_cap_mb is not None and not bucket_cap_mb > 0:
            raise ValueError(f"[DistributedDataParallel] bucket_cap_mb must be positive, got {bucket_cap_mb!r}")
        self.module = module
        self.process_group = _c10d._pg(process_group, "DistributedDataParallel")
        self.dim = dim
        self.broadcast_buffers = broadcast_buffers
        self.find_unused_parameters = find_unused_parameters
        self.gradient_as_bucket_view = gradient_as_bucket_view
        self.static_graph = static_graph
        self.require_backward_grad_sync = True
        self._divide_by_initial_world_size = True
        self._divisor = self.process_group.world_size
        self.split_first_layer = bool(split_first_layer)
        # None: sized from the model by _build_buckets (Note [DDP buckets])
        self.bucket_bytes_cap = None if bucket_cap_mb is None else int(bucket_cap_mb * 1024 * 1024)

        seen: set[int] = set()
        params: list[tuple[str, Tensor]] = []
        for name, p in module.named_parameters():
            if p.requires_grad and id(p) not in seen:
                seen.add(id(p))
                params.append((name, p))
        if not params:
            raise RuntimeError("[DistributedDataParallel] the module has no parameter that requires gradient")
        object.__setattr__(self, "_params", [p for _, p in params])
        object.__setattr__(self, "_comm_hook", None)
        object.__setattr__(self, "_comm_state", None)
        object.__setattr__(self, "_param_names", [n for n, _ in params])
        self._verify_same_params()
        if init_sync:
            self._sync_module_states()
        self._build_buckets()
        self._register_hooks()
        object.__setattr__(self, "_split_layer", self._find_split_layer())
        self._split_calls = 0
        self._split_active = False  # this iteration's forward ran the split layer (once)
        self._split_state = None  # "split": its blocks are posted and the weight's hook is due; then "done"
        object.__setattr__(self, "_split_old", None)  # the weight's .grad before the split (kept, restored)
        object.__setattr__(self, "_split_outside", None)  # the weight's gradient from outside its layer
        self._expect = False  # an iteration's gradients are due (set by forward)
        # Note [DDP buckets]: the time an all-reduce was in flight, and the part of it backward did not
        # hide (the last gradient's hook waiting for the all-reduces).
        self._comm_stats = {"iterations": 0, "allreduce_s": 0.0, "exposed_s": 0.0}
        self._next_launch = 0
        self._done: set[int] = set()
        object.__setattr__(self, "_launch_log", [])
        object.__setattr__(self, "_inflight", [])
        object.__setattr__(self, "_post_log", [])

    # -- construction ------------------------------------------------------

    def _verify_same_params(self) -> None:
        pg = self.process_group
        mine = [(n, str(p.dtype), tuple(p.shape)) for n, p in zip(self._param_names, self._params, strict=True)]
        every = pg.submit("DistributedDataParallel", lambda w: pg.comm.allgather(mine), True).result()
        for r, theirs in enumerate(every):
            if theirs != every[0]:
                n = max(len(theirs), len(every[0]))
                pad = [None] * n
                ours, other = next((a, b) for a, b in zip(every[0] + pad, theirs + pad, strict=True) if a != b)
                raise FlambeauError(
                    f"[DistributedDataParallel] rank {r}'s module differs from rank 0's: rank 0 has {ours}, "
                    f"rank {r} has {other} (every rank must build the same model); this is rank {pg.rank}"
                )

    def _sync_module_states(self, src: int = 0) -> None:
        pg = self.process_group
        tensors = [p.detach() for p in self._params] + [b.detach() for b in self.module.buffers()]
        works = [_c10d._broadcast_nocheck(pg, t, src) for t in tensors if t.numel()]
        for w in works:
            w.wait()

    def _broadcast_buffers(self) -> None:
        if self.broadcast_buffers and self.process_group.world_size > 1:
            works = [
                _c10d._broadcast_nocheck(self.process_group, b.detach(), 0) for b in self.module.buffers() if b.numel()
            ]
            for w in works:
                w.wait()

    def _build_buckets(self) -> None:
        buckets: list[list[int]] = []
        current: list[int] = []
        size = 0
        dtype = None
        if self.bucket_bytes_cap is None:
            self.bucket_bytes_cap = _adaptive_bucket_cap(sum(p.numel() * p.dtype.itemsize for p in self._params))
        cap = min(_FIRST_BUCKET_BYTES, self.bucket_bytes_cap)
        for i in reversed(range(len(self._params))):
            p = self._params[i]
            if current and p.dtype != dtype:
                buckets.append(current)
                current, size = [], 0
                cap = self.bucket_bytes_cap
            current.append(i)
            dtype = p.dtype
            size += p.numel() * p.dtype.itemsize
            if size >= cap:
                buckets.append(current)
                current, size = [], 0
                cap = self.bucket_bytes_cap
        if current:
            buckets.append(current)
        out = []
        where: dict[int, tuple[int, int]] = {}
        for b, idx in enumerate(buckets):
            offsets, n = [], 0
            for i in idx:
                offsets.append(n)
                where[i] = (b, len(offsets) - 1)
                n += self._params[i].numel()
            flat = fc.zeros([n], dtype=self._params[idx[0]].dtype)
            out.append(_Bucket(b, idx, offsets, flat))
        object.__setattr__(self, "_buckets", out)
        object.__setattr__(self, "_where", where)

    def _find_split_layer(self) -> Module | None:
        """The Linear layer whose weight gradient backward computes last, when worth splitting (Note [Split last
        layer])."""
        if self.process_group.world_size == 1 or not self.split_first_layer:
            return None
        i = self._buckets[-1].params[-1]  # the first registered parameter: usually backward's last gradient
        p = self._params[i]
        if p.dtype not in (fc.float32, fc.float64) or p.dim() != 2 or p.numel() * p.dtype.itemsize < _SPLIT_MIN_BYTES:
            return None
        owners = [m for m in self.module.modules() if any(q is p for q in m._parameters.values())]
        if len(owners) != 1 or type(owners[0]) is not Linear or owners[0]._parameters.get("weight") is not p:
            return None
        self._split_index = i
        # the bucket gets a flag element in front of its gradients (Note [Split last layer])
        b = self._buckets[-1]
        b.storage = fc.zeros([b.flat.numel() + 1], dtype=b.flat.dtype)
        b.flat = b.storage[1:]
        object.__setattr__(self, "_split_zero", fc.zeros([1, 1], dtype=p.dtype))
        self._grad_accs[i].register_prehook(self._split_prehook)
        return owners[0]

    def _split_prehook(self, grad: Tensor) -> Tensor | None:
        """The gradient reaching the split weight's AccumulateGrad: the Function's expanded zero alone, or a sum
        with the gradient from outside the layer (Note [Split last layer]).

        The zero alone is swapped for an uninitialised tensor of the weight's shape, which AccumulateGrad keeps as
        it is (a tensor nothing else holds): written out, the zero cost a pass over the whole weight (0.2 ms a
        step for the MLP's 512x784 one) for a ``.grad`` that _split_hook replaces right after. A user's
        post-accumulate-grad hook registered before DDP's runs in between and would read that memory: with one,
        the zero stays."""
        if self._split_state != "split":
            return None
        if grad.data_ptr() != self._split_zero.data_ptr():
            object.__setattr__(self, "_split_outside", grad)
            return None
        if _post_accumulate_hooks.has_hooks(self._params[self._split_index]):
            # a post-accumulate-grad hook of the user's reads this .grad: zeros, never uninitialised memory
            return None
        return fc.empty(list(grad.shape), dtype=grad.dtype)

    def _split_rows(self) -> list[tuple[int, int]]:
        """The row blocks of the split weight (Note [Split last layer]), the same on every rank."""
        p = self._params[self._split_index]
        rows = p.shape[0]
        blocks = min(_SPLIT_MAX_BLOCKS, max(2, p.numel() * p.dtype.itemsize // _SPLIT_BLOCK_BYTES), rows)
        per = -(-rows // blocks)
        return [(r0, min(rows, r0 + per)) for r0 in range(0, rows, per)]

    def _split_forward(self, input: Tensor) -> Tensor:
        layer = self._split_layer
        self._split_calls += 1
        return _SplitLinear.apply(input, layer._parameters["weight"], layer._parameters.get("bias"), self)

    def _split_weight_grad(self, g: Tensor, x: Tensor) -> bool:
        """Note [Split last layer]: the split weight's gradient ``g.T @ x`` into its bucket by row blocks, each
        all-reduced once computed; False (nothing done) where this iteration can't split."""
        i = self._split_index
        b_index, slot = self._where[i]
        if (
            not self._expect
            or not self._split_active
            or self._split_state is not None
            or i in self._done
            or self._next_launch != b_index
            # backward(create_graph=True): the gradient is computed whole, with its graph, as every other
            # parameter's (the row blocks are computed without one)
            or autograd.is_grad_enabled()
        ):
            return False
        b = self._buckets[b_index]
        p = self._params[i]
        rows, cols = p.shape
        base = b.offsets[slot]
        scale = 1.0 / self._divisor
        old = p.grad  # gradients accumulated without a synchronisation (no_sync, no zero_grad) join the sum
        with autograd.no_grad():
            # the division by the world size goes on the output gradient, the blocks' small factor (batch x
            # out_features), not in a pass over each block
            gs = fc.mul(g, scale)
            for r0, r1 in self._split_rows():
                lo, hi = base + r0 * cols, base + r1 * cols
                view = b.flat[lo:hi].view([r1 - r0, cols])
                if old is None:
                    fc.mm(gs[:, r0:r1].t(), x, out=view)
                else:
                    fc.add(fc.mm(gs[:, r0:r1].t(), x), old[r0:r1], alpha=scale, out=view)
                b.split.append((lo, hi))
                # the last block's all-reduce starts when backward's computation is over
                self._post(b, lo, hi, int(r1 < rows))
        # the weight's hook (after any gradient from outside the layer) marks it ready; its AccumulateGrad
        # writes into a .grad of its own meanwhile, replaced by the one kept here
        self._split_state = "split"
        object.__setattr__(self, "_split_old", old)
        p.grad = None
        return True

    def _split_hook(self, i: int) -> None:
        """The split weight's hook: every use of the weight has given its gradient (Note [Split last layer])."""
        self._split_state = "done"
        self._params[i].grad = self._split_old
        object.__setattr__(self, "_split_old", None)
        self._done.add(i)
        b = self._buckets[self._where[i][0]]
        b.pending -= 1
        if b.pending == 0:
            b.ready = True
            self._launch_ready()

    def _register_hooks(self) -> None:
        accs, handles = [], []
        for i, p in enumerate(self._params):
            # The AccumulateGrad node of p (held here so that backward reuses it).
            acc = p.view(list(p.shape)).grad_fn.next_functions[0][0]
            accs.append(acc)
            handles.append(acc.register_prehook(self._make_prehook(i)))
            handles.append(acc.register_hook(self._make_hook(i)))
        object.__setattr__(self, "_grad_accs", accs)
        object.__setattr__(self, "_hook_handles", handles)
        object.__setattr__(self, "_fresh", [False] * len(self._params))

    def _make_prehook(self, i: int):
        def prehook(grad: Tensor) -> None:
            # whether this backward's AccumulateGrad makes p.grad, None before it (Note [Fresh gradients])
            if self._expect:
                self._fresh[i] = self._params[i].grad is None

        return prehook

    def _make_hook(self, i: int):
        def hook(grad_inputs, grad_outputs):
            if self._expect:
                if self._split_state == "split" and i == self._split_index:
                    self._split_hook(i)
                else:
                    self._mark_ready(i)

        return hook

    # -- one iteration -----------------------------------------------------

    def forward(self, *inputs: Any, **kwargs: Any) -> Any:
        """Runs the wrapped module (after broadcasting its buffers from rank 0, with ``broadcast_buffers``).

        With gradients enabled it expects the backward of its output before
        the next forward (PyTorch's error, naming the parameters that got no
        gradient, otherwise).

        Example:
        >>> import flambeau as fb
        >>> dist = fb.distributed
        >>> dist.init_process_group("mpi")  # without mpirun: a world of one rank
        >>> net = fb.nn.Linear(2, 1)
        >>> model = dist.DistributedDataParallel(net)
        >>> x = fb.ones(1, 2)
        >>> bool((model(x) == net(x)).all())
        True
        >>> dist.destroy_process_group()
        """
        if self._expect and autograd.is_grad_enabled():
            missing = [self._param_names[i] for i in range(len(self._params)) if i not in self._done]
            raise RuntimeError(
                "[DistributedDataParallel] Expected to have finished reduction in the prior iteration before starting "
                "a new one: parameters that did not receive a gradient: "
                f"{', '.join(missing) or '(none)'}; pass find_unused_parameters=True if some parameters are not used "
                "in the loss, and make sure every output takes part in it"
            )
        if self._join_config.enable:
            # the calls a joined rank shadows in _shadow_iteration, in the same order
            work = Join.notify_join_context(self)
            active = int(work.result()[0].item()) if work is not None else self.process_group.world_size
            world = self.process_group.world_size
            self._divisor = world if self._divide_by_initial_world_size else active
            self._count_syncing(int(self.require_backward_grad_sync and autograd.is_grad_enabled()))
        self._broadcast_buffers()
        syncing = autograd.is_grad_enabled() and self.require_backward_grad_sync
        layer = self._split_layer
        if layer is not None and syncing and self._comm_hook is None and not self._join_config.enable:
            # Note [Split last layer]: this forward only, the layer runs through _SplitLinear
            self._split_calls = 0
            layer.__dict__["forward"] = self._split_forward
            try:
                out = self.module(*inputs, **kwargs)
            finally:
                del layer.__dict__["forward"]
            # a layer called more than once is not split (its weight's gradient sums its uses in autograd)
            self._split_active = self._split_calls == 1
        else:
            out = self.module(*inputs, **kwargs)
            self._split_active = False
        if syncing:
            self._prepare(out)
        return out

    def _prepare(self, out: Any) -> None:
        object.__setattr__(self, "_done", set())
        object.__setattr__(self, "_fresh", [False] * len(self._params))
        self._split_state = None
        object.__setattr__(self, "_split_old", None)
        object.__setattr__(self, "_split_outside", None)
        for b in self._buckets:
            b.pending = len(b.params)
            b.works = []
            b.split = []
            b.ready = False
            if not self.gradient_as_bucket_view:
                # a fresh buffer each iteration: the last one's .grad tensors are views of the old one
                # (no copy out of the bucket), which the caching allocator recycles once they are gone
                head = b.storage.numel() - b.flat.numel()
                b.storage = fc.empty([b.storage.numel()], dtype=b.flat.dtype)
                b.flat = b.storage[head:] if head else b.storage
        self._next_launch = 0
        object.__setattr__(self, "_launch_log", [])
        object.__setattr__(self, "_inflight", [])
        object.__setattr__(self, "_post_log", [])
        self._expect = True
        if self.find_unused_parameters:
            used = self._reachable(out)
            for i, acc in enumerate(self._grad_accs):
                if id(acc) not in used:
                    self._mark_ready(i)

    def _reachable(self, out: Any) -> set[int]:
        roots = []

        def collect(o: Any) -> None:
            if isinstance(o, Tensor):
                if o.grad_fn is not None:
                    roots.append(o.grad_fn)
            elif isinstance(o, (list, tuple)):
                for x in o:
                    collect(x)
            elif isinstance(o, dict):
                for x in o.values():
                    collect(x)

        collect(out)
        accs = {id(a) for a in self._grad_accs}
        # The node objects stay referenced while walking: a freed wrapper's id could be reused.
        seen: dict[int, Any] = {}
        found: set[int] = set()
        stack = roots
        while stack:
            node = stack.pop()
            if id(node) in seen:
                continue
            seen[id(node)] = node
            if id(node) in accs:
                found.add(id(node))
            for nxt, _ in node.next_functions:
                if nxt is not None:
                    stack.append(nxt)
        return found

    def _mark_ready(self, i: int) -> None:
        if i in self._done:
            return
        self._done.add(i)
        b_index, slot = self._where[i]
        b = self._buckets[b_index]
        p = self._params[i]
        g = p.grad
        n = p.numel()
        view = b.flat[b.offsets[slot] : b.offsets[slot] + n]
        # Without a comm hook the division by the world size happens here, in the copy into the bucket
        # (one pass over the gradient, as PyTorch's reducer), not in a pass of its own after the all-reduce.
        scale = 1.0 / self._divisor if self._comm_hook is None else 1.0
        with autograd.no_grad():
            if g is None:
                view.zero_()
            elif self.gradient_as_bucket_view and g.data_ptr() == view.data_ptr():
                if scale != 1.0:
                    view.mul_(scale)
            elif scale != 1.0:
                fc.mul(g.reshape([n]), scale, out=view)
            else:
                view.copy_(g.reshape([n]))
            if self._fresh[i] and not self.gradient_as_bucket_view and g is not None and not g.requires_grad:
                # Note [Fresh gradients]: a .grad that AccumulateGrad made in this backward (there was none)
                # is the local gradient, held by nothing else; once in the bucket it goes, and _write_grads
                # makes .grad a view of the bucket instead of copying the average into it (PyTorch's reducer
                # copies it back). Not under backward(create_graph=True): that .grad keeps its graph, as one
                # process's. The copy cost a pass over the MLP's 1 MB of other gradients a step.
                p.grad = None
        b.pending -= 1
        if b.pending == 0:
            b.ready = True
            self._launch_ready()

    def _launch_ready(self) -> None:
        last = len(self._buckets) - 1
        while self._next_launch <= last and self._buckets[self._next_launch].ready:
            b = self._buckets[self._next_launch]
            if self._next_launch == last:
                self._backward_done_at = time.perf_counter()  # backward's computation is over
            if self._comm_hook is not None:
                b.future = self._run_hook(b)
            elif self._split_active and b.index == self._where[self._split_index][0]:
                self._post_split_bucket(b)
            else:
                self._post(b, 0, b.flat.numel())
            # how many gradients backward had still to compute when this bucket started
            self._launch_log.append((b.index, len(self._params) - len(self._done)))
            self._next_launch += 1
        if self._next_launch == len(self._buckets):
            self._finalize()

    def _post(self, b: _Bucket, lo: int, hi: int, remaining: int | None = None, tensor: Tensor | None = None) -> None:
        t = b.flat[lo:hi] if tensor is None else tensor
        w = _c10d._post_all_reduce(self.process_group, t)
        b.works.append(w)
        self._inflight.append(w)
        # (elements, gradients backward had still to compute): the bench's bound on what can hide
        self._post_log.append((t.numel(), len(self._params) - len(self._done) if remaining is None else remaining))

    def _post_split_bucket(self, b: _Bucket) -> None:
        """The split layer's bucket, once ready (Note [Split last layer]): the weight's row blocks where this rank
        computed its gradient whole, then the rest with the flag in front, in the same pieces on every rank."""
        i = self._split_index
        base = b.offsets[self._where[i][1]]
        cols = self._params[i].shape[1]
        blocks = [(base + r0 * cols, base + r1 * cols) for r0, r1 in self._split_rows()]
        if not b.split:
            for lo, hi in blocks:
                self._post(b, lo, hi)
        with autograd.no_grad():
            b.storage[0:1].fill_(0.0 if self._split_outside is None else 1.0)
        # the rest: before the weight's slot (with the flag: storage[0] is just before flat[0]) and after it
        first = blocks[0][0]
        self._post(b, 0, first, tensor=b.storage[0 : first + 1])
        end = blocks[-1][1]
        if end < b.flat.numel():
            self._post(b, end, b.flat.numel())

    def _run_hook(self, b: _Bucket) -> Future:
        fut = self._comm_hook(self._comm_state, GradBucket(self, b))
        if not isinstance(fut, Future):
            raise TypeError(
                "[DistributedDataParallel] a communication hook must return a Future (flambeau_distributed.futures."
                f"Future, as torch.futures.Future) of the bucket's averaged gradients, got {type(fut).__name__}"
            )
        return fut

    def _finalize_hooked(self) -> None:
        for b in self._buckets:
            out = b.future.wait()
            if isinstance(out, (list, tuple)) and len(out) == 1:
                out = out[0]
            if not isinstance(out, Tensor):
                raise TypeError(
                    f"[DistributedDataParallel] the communication hook's Future for bucket {b.index} must hold a "
                    f"Tensor, got {type(out).__name__}"
                )
            if out.numel() != b.flat.numel() or out.dtype != b.flat.dtype:
                raise FlambeauError(
                    f"[DistributedDataParallel] the communication hook's Future for bucket {b.index} holds "
                    f"{list(out.shape)} of {out.dtype}; expected {b.flat.numel()} elements of {b.flat.dtype}"
                )
            if out.data_ptr() != b.flat.data_ptr():
                with autograd.no_grad():
                    b.flat.copy_(out.reshape([-1]))
        self._comm_stats["iterations"] += 1
        self._comm_stats["exposed_s"] += time.perf_counter() - self._backward_done_at
        self._write_grads()

    def _finalize(self) -> None:
        self._expect = False
        if self._comm_hook is not None:
            self._finalize_hooked()
            return
        for w in self._inflight:
            w.wait()
        if self._split_active:
            self._add_outside_parts()
        stats = self._comm_stats
        stats["iterations"] += 1
        # exposed: from the last gradient's hook (backward's computation is over) until every bucket is reduced;
        # all-reduce: the time some bucket's all-reduce was in flight (posted and not yet seen complete)
        stats["exposed_s"] += time.perf_counter() - self._backward_done_at
        end = 0.0
        for start, stop in sorted((w._posted_at, w._completed_at) for w in self._inflight):
            stats["allreduce_s"] += max(0.0, stop - max(start, end))
            end = max(end, stop)
        self._write_grads()

    def _add_outside_parts(self) -> None:
        """Note [Split last layer]: the flag summed over the ranks says whether some rank's split weight got a
        gradient from outside its layer; if so every rank all-reduces its outside part (or zeros) into the weight's
        slot, and the layer is not split again (every rank reads the same flag)."""
        i = self._split_index
        b_index, slot = self._where[i]
        b = self._buckets[b_index]
        if b.storage[0].item() == 0:
            return
        p = self._params[i]
        with autograd.no_grad():
            if self._split_outside is None:
                part = fc.zeros([p.numel()], dtype=p.dtype)
            else:
                part = fc.mul(self._split_outside.reshape([p.numel()]), 1.0 / self._divisor)
            _c10d._all_reduce(self.process_group, part, _c10d.ReduceOp.SUM, False, False)
            base = b.offsets[slot]
            b.flat[base : base + p.numel()].add_(part)
        object.__setattr__(self, "_split_outside", None)
        object.__setattr__(self, "_split_layer", None)

    def _write_grads(self) -> None:
        for b in self._buckets:
            with autograd.no_grad():
                for i, off in zip(b.params, b.offsets, strict=True):
                    p = self._params[i]
                    view = b.flat[off : off + p.numel()].view(list(p.shape))
                    if self.gradient_as_bucket_view:
                        if p.grad is None or p.grad.data_ptr() != view.data_ptr():
                            p.grad = view
                    elif p.grad is None:
                        p.grad = view
                    else:
                        p.grad.copy_(view)

    # -- Join (uneven inputs) ------------------------------------------------

    def _count_syncing(self, mine: int) -> int:
        t = fc.full([1], mine, dtype=fc.int64)
        _c10d._all_reduce(self.process_group, t, _c10d.ReduceOp.SUM, False, False)
        return int(t.item())

    def _shadow_iteration(self) -> None:
        """A joined rank's side of one iteration of the others: their forward's calls, then zero gradients."""
        syncing = self._count_syncing(0) > 0
        self._broadcast_buffers()
        if not syncing:
            return
        pg = self.process_group
        for b in self._buckets:
            with autograd.no_grad():
                b.flat.zero_()
            if self._comm_hook is not None:
                self._run_hook(b).wait()
            else:
                _c10d._all_reduce(pg, b.flat, _c10d.ReduceOp.SUM, False, False)

    def _sync_final_model(self, is_last_joiner: bool) -> None:
        """Every rank takes the model of the last rank to join (the one that trained longest)."""
        t = fc.full([1], self.process_group.rank if is_last_joiner else -1, dtype=fc.int64)
        _c10d._all_reduce(self.process_group, t, _c10d.ReduceOp.MAX, False, False)
        self._sync_module_states(int(t.item()))

    def join_hook(self, **kwargs: Any) -> JoinHook:
        """DDP's part in ``Join``: ``divide_by_initial_world_size`` (default True) divides the gradient sum by
        the world size even when some ranks have joined (they contribute zeros); False: by the ranks still training.

        Example (``Join`` calls it):
        >>> import flambeau as fb
        >>> dist = fb.distributed
        >>> dist.init_process_group("mpi")  # without mpirun: a world of one rank
        >>> from flambeau_distributed.algorithms.join import Join, JoinHook
        >>> model = dist.DistributedDataParallel(fb.nn.Linear(2, 1))
        >>> isinstance(model.join_hook(), JoinHook)
        True
        >>> with Join([model]):  # ranks may then run different numbers of iterations
        ...     model(fb.ones(1, 2)).sum().backward()
        >>> model.module.weight.grad.tolist()
        [[1.0, 1.0]]
        >>> dist.destroy_process_group()
        """
        return _DDPJoinHook(self, bool(kwargs.get("divide_by_initial_world_size", True)))

    @property
    def join_device(self) -> Any:
        return fc.device("cpu")

    @property
    def join_process_group(self) -> Any:
        return self.process_group

    # -- PyTorch's API -----------------------------------------------------

    @contextlib.contextmanager
    def no_sync(self) -> Iterator[None]:
        """Backward passes of forwards run inside accumulate gradients locally, without communicating.

        The first backward after the block all-reduces the accumulated sum.

        Example:
        >>> import flambeau as fb
        >>> dist = fb.distributed
        >>> dist.init_process_group("mpi")  # without mpirun: a world of one rank
        >>> model = dist.DistributedDataParallel(fb.nn.Linear(2, 1))
        >>> with model.no_sync():
        ...     model(fb.ones(1, 2)).sum().backward()  # local gradient only
        >>> model(fb.ones(1, 2)).sum().backward()  # accumulates, then synchronises
        >>> model.module.weight.grad.tolist()
        [[2.0, 2.0]]
        >>> dist.destroy_process_group()
        """
        old = self.require_backward_grad_sync
        self.require_backward_grad_sync = False
        try:
            yield
        finally:
            self.require_backward_grad_sync = old

    def register_comm_hook(self, state: object, hook: Any) -> None:
        """Replaces each bucket's all-reduce by ``hook(state, bucket) -> Future[Tensor]``, as PyTorch's.

        The hook gets a :class:`GradBucket` once the bucket's gradients are
        all computed (during backward) and returns a ``Future`` whose value is
        the bucket's *averaged* gradients (a flat tensor of ``bucket.buffer()``'s
        size); the default hooks are in
        ``flambeau_distributed.algorithms.ddp_comm_hooks.default_hooks``
        (``allreduce_hook``, ``fp16_compress_hook``, ``bf16_compress_hook``).
        Register once, before the first backward.

        Example:
        >>> import flambeau as fb
        >>> dist = fb.distributed
        >>> dist.init_process_group("mpi")  # without mpirun: a world of one rank
        >>> from flambeau_distributed.algorithms.ddp_comm_hooks import default_hooks
        >>> model = dist.DistributedDataParallel(fb.nn.Linear(2, 1))
        >>> model.register_comm_hook(None, default_hooks.fp16_compress_hook)
        >>> model(fb.ones(1, 2)).sum().backward()
        >>> model.module.weight.grad.tolist()
        [[1.0, 1.0]]
        >>> dist.destroy_process_group()
        """
        if not callable(hook):
            raise TypeError(f"[register_comm_hook] hook must be callable, got {type(hook).__name__}")
        if self._comm_hook is not None:
            raise RuntimeError("[register_comm_hook] a communication hook is already registered; it can be set once")
        if self._comm_stats["iterations"] or self._expect:
            raise RuntimeError("[register_comm_hook] register the communication hook before the first backward")
        object.__setattr__(self, "_comm_hook", hook)
        object.__setattr__(self, "_comm_state", state)

    def extra_repr(self) -> str:
        """The number of gradient buckets and ranks, shown in the module's repr (PyTorch shows none).

        Example:
        >>> import flambeau as fb
        >>> dist = fb.distributed
        >>> dist.init_process_group("mpi")  # without mpirun: a world of one rank
        >>> dist.DistributedDataParallel(fb.nn.Linear(2, 1)).extra_repr()
        'buckets=1, world_size=1'
        >>> dist.destroy_process_group()
        """
        return f"buckets={len(self._buckets)}, world_size={self.process_group.world_size}"
