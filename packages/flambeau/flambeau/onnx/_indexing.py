"""Indexing and selection as ONNX: ``x[...]``, gather, index_select, masked_fill, where, split, chunk."""

from __future__ import annotations

from typing import Any

import flambeau_core as fc
import numpy as np
from flambeau_core._trace import OpCall

from flambeau.onnx._graph import INT64_MAX, _arguments, _Graph, _maps, _unsupported


def _index_items(g: _Graph, call: OpCall, index: Any, ndim: int) -> list[Any]:
    """The index as one item per input dim (slices, ints, tensors) plus the Nones, with the Ellipsis expanded."""
    items = list(index) if isinstance(index, tuple) else [index]
    for item in items:
        if isinstance(item, bool) or (isinstance(item, fc.Tensor) and item.dtype == fc.bool):
            raise _unsupported(g, call, "a boolean mask index (the result's shape depends on the mask's values)")
    items = [np.asarray(item) if isinstance(item, list) else item for item in items]  # a list is a tensor index
    for item in items:
        if isinstance(item, np.ndarray) and item.dtype.kind not in "iu":
            raise _unsupported(g, call, f"a list index of {item.dtype} (a boolean mask or not integers)")
    used = sum(1 for item in items if item is not None and item is not Ellipsis)
    at = next((i for i, item in enumerate(items) if item is Ellipsis), None)  # `in` would compare tensors
    if at is not None:
        items[at : at + 1] = [slice(None)] * (ndim - used)
    else:
        items += [slice(None)] * (ndim - used)
    return items


@_maps("__getitem__")
def _getitem(g: _Graph, call: OpCall) -> list[str | None]:
    """Basic indexing (ints, slices with steps, negative indices, None, ...) as one Slice, then Squeeze for the
    ints, Gather for one tensor index and Unsqueeze for the Nones; sizes that follow the input's come from the
    graph's shapes (Note [Sizes from a second trace])."""
    x = call.args[0]
    items = _index_items(g, call, call.args[1], x.dim())
    twin_items = _index_items(g, call, (g.twin_call or call).args[1], x.dim())
    starts, ends, axes, steps, squeeze, nones = [], [], [], [], [], []
    tensors: list[tuple[int, int, Any]] = []  # (item position, input axis, index tensor or list)
    axis = out_dim = 0
    for pos, (item, twin) in enumerate(zip(items, twin_items, strict=True)):
        if item is None:
            nones.append(out_dim)
            out_dim += 1
            continue
        if isinstance(item, slice):
            step = 1 if item.step is None else int(item.step)
            if step <= 0:
                raise _unsupported(g, call, f"a slice step {step} (steps must be positive, as in PyTorch)")
            if (item.start in (None, 0)) and item.stop is None and step == 1:
                axis, out_dim = axis + 1, out_dim + 1
                continue
            starts.append((0, 0) if item.start is None else (int(item.start), int(twin.start)))
            ends.append((INT64_MAX,) * 2 if item.stop is None else (int(item.stop), int(twin.stop)))
            axes.append(axis)
            steps.append(step)
            out_dim += 1
        elif isinstance(item, (fc.Tensor, np.ndarray)):
            tensors.append((pos, axis, item))
            out_dim += item.ndim
        else:
            i, j = int(item), int(twin)
            starts.append((i, j))
            ends.append((INT64_MAX,) * 2 if i == -1 and j == -1 else (i + 1, j + 1))
            axes.append(axis)
            steps.append(1)
            squeeze.append(axis)
        axis += 1
    v = g.value(x)
    if axes:
        bounds = [g.shape_value(starts), g.shape_value(ends)]
        if None in bounds:
            raise _unsupported(g, call, "an index computed from sizes the exporter cannot read back")
        v = g.node("Slice", [v, *bounds, g.ints(axes), g.ints(steps)])[0]
    if squeeze:
        v = g.node("Squeeze", [v, g.ints(squeeze)])[0]
    if tensors and nones:
        raise _unsupported(g, call, "a tensor index together with None")
    # PyTorch applies the ints as selections first (unlike NumPy, they are no advanced indices), so the tensor
    # indices act on the dims left after the Squeeze.
    ats = [axis - sum(1 for s in squeeze if s < axis) for _, axis, _ in tensors]
    if len(tensors) == 1:
        v = g.node("Gather", [v, _index_value(g, tensors[0][2])], axis=ats[0])[0]
    elif tensors:
        v = _gather_nd(g, v, ats, [t for _, _, t in tensors], x.dim() - len(squeeze))
    if nones:
        v = g.node("Unsqueeze", [v, g.ints(nones)])[0]
    return [v]


def _index_value(g: _Graph, index: Any) -> str:
    if isinstance(index, np.ndarray):
        return g.constant(index.astype(np.int64))
    return g.operand(index, fc.int64)


def _gather_nd(g: _Graph, v: str, ats: list[int], indices: list[Any], rank: int) -> str:
    """Several tensor indices: their dims first (Transpose), the broadcast indices stacked for GatherND, and
    the result's index dims moved back where the indexed dims were when those were next to each other."""
    perm = ats + [d for d in range(rank) if d not in ats]
    if perm != list(range(rank)):
        v = g.node("Transpose", [v], perm=perm)[0]
    values = [_index_value(g, t) for t in indices]
    shape = values[0]
    for other in values[1:]:
        shape = g.node("Add", [shape, other])[0]
    shape = g.node("Shape", [shape])[0]
    last = g.ints([-1])
    stacked = [g.node("Unsqueeze", [g.node("Expand", [i, shape])[0], last])[0] for i in values]
    v = g.node("GatherND", [v, g.node("Concat", stacked, axis=-1)[0]])[0]
    nb = max(t.ndim for t in indices)
    p = ats[0]
    if ats == list(range(p, p + len(ats))) and p > 0:
        out_rank = nb + rank - len(ats)
        v = g.node("Transpose", [v], perm=[*range(nb, nb + p), *range(nb), *range(nb + p, out_rank)])[0]
    return v


@_maps("gather")
def _gather(g: _Graph, call: OpCall) -> list[str | None]:
    x, dim, index = _arguments(call, ("input", None), ("dim", 0), ("index", None))
    if call.kwargs and call.kwargs.get("sparse_grad"):
        raise _unsupported(g, call, "sparse_grad=True")
    return g.node("GatherElements", [g.value(x), g.value(index)], axis=int(dim))


@_maps("index_select")
def _index_select(g: _Graph, call: OpCall) -> list[str | None]:
    x, dim, index = _arguments(call, ("input", None), ("dim", 0), ("index", None))
    idx = g.value(index)
    if index.dim() == 0:  # index_select keeps the dim: a 1-element index
        idx = g.node("Unsqueeze", [idx, g.ints([0])])[0]
    return g.node("Gather", [g.value(x), idx], axis=int(dim))


def _condition(g: _Graph, t: Any) -> str:
    v = g.value(t)
    return v if t.dtype == fc.bool else g.node("Cast", [v], to=g._onnx_type(fc.bool))[0]


@_maps("masked_fill", "masked_fill_")
def _masked_fill(g: _Graph, call: OpCall) -> list[str | None]:
    x, mask, value = _arguments(call, ("input", None), ("mask", None), ("value", None))
    return g.node("Where", [_condition(g, mask), g.operand(value, x.dtype), g.value(x)])


@_maps("where")
def _where(g: _Graph, call: OpCall) -> list[str | None]:
    if len(call.args) + len(call.kwargs or {}) == 1:
        raise _unsupported(g, call, "where(condition) (the result's shape depends on the values)")
    cond, a, b = _arguments(call, ("condition", None), ("input", None), ("other", None))
    dtype = call.result.dtype
    return g.node("Where", [_condition(g, cond), g.operand(a, dtype), g.operand(b, dtype)])


@_maps("split", "chunk")
def _split(g: _Graph, call: OpCall) -> list[str | None]:
    """Split with the pieces' sizes; a chunk of a dynamic dim splits into equal parts (opset 18)."""
    x = call.args[0]
    dim = int(_arguments(call, ("input", None), ("", None), ("dim", 0))[2]) % x.dim()
    pieces = list(call.result)
    twin_pieces = list((g.twin_call or call).result)
    sizes = [int(p.shape[dim]) for p in pieces]
    twin_sizes = [int(p.shape[dim]) for p in twin_pieces]
    if len(sizes) != len(twin_sizes):
        raise _unsupported(g, call, "a number of pieces that depends on the input's size")
    if sizes == twin_sizes:
        outs = g.node("Split", [g.value(x), g.ints(sizes)], outputs=len(sizes), axis=dim)
    elif call.name == "chunk" and g.opset >= 18 and len(sizes) == int(call.args[1]):
        outs = g.node("Split", [g.value(x)], outputs=len(sizes), axis=dim, num_outputs=len(sizes))
    else:
        raise _unsupported(g, call, f"pieces whose sizes depend on the input's size (at opset {g.opset})")
    return outs
