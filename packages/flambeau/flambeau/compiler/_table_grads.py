"""Embedding tables' gradients in a replayed training step: one buffer per table, zeroed only where it was written.

Note [Reused table gradients]
Eager backward gives an embedding table ``W`` (read by one ``embedding(W, idx)``) a fresh dense gradient
each step: ``embedding_dense_backward`` zeroes a ``W``-sized tensor and adds each looked-up row's gradient
into it, though a batch touches few rows (the benchmark NCF: 1,024 lookups into tables of 10,000 and 5,000
rows of 64 floats; zeroing the two 3.8 MB tables is about a tenth of its step). A replayed step (Note
[Replay program] in ``_replay.py``) whose graph has the pattern below keeps the gradient it gave ``W`` last
time and, on the next call, zeroes only the rows it wrote then and adds this step's rows into it:

* the graph's forward reads ``W`` once, by ``embedding(W, idx, padding_idx < 0, scale_grad_by_freq=False,
  sparse=False)`` under grad mode; ``W`` is a contiguous 2-D float32/float64 leaf; the step starts with
  ``W.grad = None`` (``zero_grad(set_to_none=True)``, :func:`~._capture.grads_set_first`), has one
  ``backward()`` (accumulating into the leaves, no ``inputs``, no ``create_graph``), and after it reads ``W``
  only under ``no_grad`` (the optimizer) or through ``W.grad``;
* the replay runs the embedding on ``W.detach()`` with its result made a leaf, so backward stops there
  (it does not compute ``W``'s gradient); right after backward it writes ``W.grad``: the kept buffer with
  last step's rows zeroed (``index_fill_``) or, when there is none, zeros; then ``index_add_`` of the
  result's gradient at ``idx``, in index order, as ``embedding_dense_backward`` adds them (``0 + g1 + g2
  ...`` per row: the same bits);
* it keeps the buffer only while nothing else can see it change: at the next call ``W.grad`` must still be
  that buffer, unchanged (its version counter), with no other holder (no Python reference besides the
  program's, no view, no saved tensor of a graph: autograd's ``_holders``); otherwise the buffer is dropped
  and the step starts from zeros, as eager does. A call where any leaf of the graph has a backward hook
  (a hook could read ``W.grad`` during backward) runs the captured ops as they were.

What the step returns, every ``.grad`` and the optimizer's state are eager's values; only ``W.grad``'s
identity differs (the same tensor from step to step, where eager makes a new one), which nothing can tell
apart while no one else holds it. ``fb.compiler.config.reuse_table_grads = False`` turns this off.
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from typing import Any

import flambeau_core as fc
from flambeau_autograd._C import _holders, _leaf_has_hooks

from ._graph import Graph, Ref, refs_in

Tensor = fc.Tensor

_FLOATS = (fc.float32, fc.float64)


class TableStep:
    """The per-call state of a replayed step's reused table gradients (Note [Reused table gradients]).

    ``begin()`` runs first in the replay and decides whether this call takes the reuse path (no backward
    hook on any leaf of the graph); each :class:`TableGrad` then asks ``on``.
    """

    __slots__ = ("leaves", "on")

    def __init__(self, leaves: list[Tensor]) -> None:
        self.leaves = leaves  # every leaf constant of the graph that requires grad
        self.on = False

    def begin(self) -> None:
        self.on = not any(_leaf_has_hooks(t) for t in self.leaves)


class TableGrad:
    """One embedding table's gradient buffer across the calls of a replay (Note [Reused table gradients])."""

    __slots__ = ("step", "weight", "buffer", "version", "rows", "out", "idx", "on")

    def __init__(self, step: TableStep, weight: Tensor) -> None:
        self.step, self.weight = step, weight
        self.buffer: Tensor | None = None  # the gradient the last call gave weight
        self.version = -1  # its version counter then
        self.rows: Tensor | None = None  # the rows that call wrote (a copy of its indices)
        self.out: Tensor | None = None  # this call's embedding result, a leaf whose .grad backward fills
        self.idx: Tensor | None = None
        self.on = False

    def clear(self) -> None:
        """Stands for the step's ``W.grad = None``; keeps the buffer only if nothing else can see it."""
        w, buf = self.weight, self.buffer
        self.on = self.step.on
        # References to buf: self.buffer, the local, getrefcount's argument. Handles of the tensor object: the
        # leaf's .grad, the Python object, _holders' argument; one owner of its memory (no view of it).
        if buf is not None and not (
            self.on
            and w.grad is buf
            and buf._version == self.version
            and sys.getrefcount(buf) == 3
            and _holders(buf) == (3, 1)
        ):
            self.buffer = self.rows = None
        w.grad = None

    def forward(self, fn: Callable[..., Tensor], w: Tensor, idx: Any, *rest: Any) -> Tensor:
        """The embedding; on the reuse path, of ``w.detach()`` with the result made a leaf."""
        if self.on and isinstance(idx, Tensor) and idx.dim() == 1 and idx.dtype == fc.int64:
            out = fn(w.detach(), idx, *rest)
            out.requires_grad_(True)
            self.out, self.idx = out, idx
            return out
        self.on = False
        return fn(w, idx, *rest)

    def finish(self) -> None:
        """Right after backward: gives the table its gradient, as ``embedding_dense_backward`` would."""
        if not self.on:
            return
        out, idx = self.out, self.idx
        self.out = self.idx = None
        g = out.grad if out is not None else None
        if g is None or idx is None:  # no gradient reached the table: eager leaves its .grad None
            return
        w, buf = self.weight, self.buffer
        # Neither requires grad (the buffer is the program's, g a gradient): autograd records nothing.
        if buf is None:
            buf = fc.zeros(w.shape, dtype=w.dtype)
        elif self.rows is not None:
            buf.index_fill_(0, self.rows, 0)
        buf.index_add_(0, idx, g)
        self.rows = idx.clone()
        w.grad = buf
        self.buffer, self.version = buf, buf._version


# What may read a table's embedding result (a leaf on the reuse path): ops that neither write their input in
# place nor make a view of it that a later op could write.
_READERS = ("cat", "stack", "linear", "mul", "add", "sub", "sum", "mean", "matmul", "bmm", "relu")


def plan(graph: Graph, dead: list[list[int]]) -> tuple[TableStep, dict[int, int], dict[int, TableGrad]] | None:
    """The tables of ``graph`` whose gradient a replay reuses: the step, {embedding node index: constant index}
    and their :class:`TableGrad` by constant index; None when there is none. ``dead`` is
    :func:`~._replay._dead_after` of the graph.
    """
    backward = [i for i, n in enumerate(graph.nodes) if n.name == "backward"]
    if len(backward) != 1:
        return None
    b = graph.nodes[backward[0]]
    # (tensors, grad_tensors, retain_graph, create_graph, inputs, allow_unused, accumulate)
    if b.kwargs or len(b.args) != 7 or b.args[3] is not False or b.args[4] != [] or b.args[6] is not True:
        return None
    from ._capture import grads_set_first

    first = grads_set_first(graph)
    readers: dict[int, list[int]] = {}
    for index, node in enumerate(graph.nodes):
        for k in {r.index for r in refs_in((node.args, node.kwargs)) if r.kind == "const"}:
            readers.setdefault(k, []).append(index)
    tables: dict[int, int] = {}
    for k, users in readers.items():
        w = graph.constants[k]
        if id(w) not in first or not _table_like(w):
            continue
        emb = [i for i in users if graph.nodes[i].name not in ("Tensor.grad", "Tensor.grad=")]
        if not emb or emb[0] > backward[0] or not _embedding_of(graph.nodes[emb[0]], k):
            continue
        after = emb[1:]
        if any(i < backward[0] or graph.nodes[i].grad_enabled for i in after):
            continue  # another read of the table in the forward, or one that autograd records
        writes = [i for i in users if graph.nodes[i].name == "Tensor.grad="]
        if any(i > emb[0] for i in writes):
            continue  # the step sets the table's .grad itself
        reads = [i for i in users if graph.nodes[i].name == "Tensor.grad" and i < backward[0]]
        if any(graph.nodes[i].first_value not in dead[i] for i in reads):
            continue  # the step keeps the gradient of the last call (the reuse would overwrite it)
        if not _result_only_read(graph, emb[0]):
            continue
        tables[k] = emb[0]
    if not tables:
        return None
    step = TableStep([c for c in graph.constants if c.requires_grad and c.grad_fn is None])
    return step, {i: k for k, i in tables.items()}, {k: TableGrad(step, graph.constants[k]) for k in tables}


def _result_only_read(graph: Graph, index: int) -> bool:
    """The embedding's result is not returned and only ops of ``_READERS`` read it."""
    ref = Ref("value", graph.nodes[index].first_value)
    if ref in refs_in(graph.output):
        return False
    return all(n.name in _READERS for n in graph.nodes[index + 1 :] if ref in refs_in((n.args, n.kwargs)))


def _table_like(w: Tensor) -> bool:
    return (
        w.requires_grad
        and w.grad_fn is None
        and w.dtype in _FLOATS
        and w.dim() == 2
        and w.is_contiguous()
        and w.device.type == "cpu"
    )


def _embedding_of(node: Any, k: int) -> bool:
    a = node.args
    return (
        node.name == "embedding"
        and node.grad_enabled
        and not node.kwargs
        and node.results == [()]
        and len(a) == 5
        and a[0] == Ref("const", k)
        and isinstance(a[1], Ref)
        and type(a[2]) is int
        and a[2] < 0
        and a[3] is False
        and a[4] is False
        and all(not (isinstance(x, Ref) and x.kind == "const" and x.index == k) for x in a[1:])
    )
