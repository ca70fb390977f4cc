"""Indexing and selection as ONNX: ``x[...]``, writes, gather, index_select, masked_fill, where, split, chunk,
narrow, select, unbind, expand_as."""

from __future__ import annotations

from typing import Any

import flambeau_core as fc
import numpy as np
from flambeau_core._trace import OpCall

from flambeau.onnx._graph import INT64_MAX, _arguments, _Graph, _maps, _unsupported


def _is_mask(item: Any) -> bool:
    return isinstance(item, fc.Tensor) and item.dtype == fc.bool


def _is_bool_dim(item: Any) -> bool:
    """A 0-d boolean index (``True``, ``False`` or a 0-d bool tensor): a new dim of size 1 or 0, as PyTorch's."""
    return isinstance(item, bool) or (_is_mask(item) and item.dim() == 0)


def _mask_positions(g: _Graph, mask: fc.Tensor) -> str:
    """The [n, k] positions of a k-dim mask's n true elements (NonZero gives them as [k, n])."""
    return g.node("Transpose", [g.node("NonZero", [g.value(mask)])[0]], perm=[1, 0])[0]


def _index_items(g: _Graph, call: OpCall, index: Any, ndim: int, bool_dims: bool = False) -> list[Any]:
    """The index as one item per input dim (slices, ints, tensors) plus the Nones (and, with `bool_dims`, the 0-d
    boolean items: new dims too), with the Ellipsis expanded."""
    items = list(index) if isinstance(index, tuple) else [index]
    if not bool_dims and any(_is_bool_dim(item) for item in items):
        raise _unsupported(g, call, "a write at a 0-d boolean index (True or False, which adds a dim)")
    items = [np.asarray(item) if isinstance(item, list) else item for item in items]  # a list is a tensor index
    for item in items:
        if isinstance(item, np.ndarray) and item.dtype.kind not in "iu":
            raise _unsupported(g, call, f"a list index of {item.dtype} (a boolean mask or not integers)")
    # A k-dim mask indexes k dims.
    used = sum(
        item.dim() if _is_mask(item) else 1
        for item in items
        if item is not None and item is not Ellipsis and not isinstance(item, bool)
    )
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
    items = _index_items(g, call, call.args[1], x.dim(), bool_dims=True)
    twin_items = _index_items(g, call, (g.twin_call or call).args[1], x.dim(), bool_dims=True)
    starts, ends, axes, steps, squeeze, nones = [], [], [], [], [], []
    tensors: list[tuple[int, int, Any]] = []  # (item position, input axis, index tensor or list)
    bool_dims: list[tuple[int, Any]] = []  # (output dim, the 0-d boolean index that sizes it 1 or 0)
    axis = out_dim = 0
    for pos, (item, twin) in enumerate(zip(items, twin_items, strict=True)):
        if item is None or _is_bool_dim(item):
            if item is not None and item is not True:
                bool_dims.append((out_dim, item))
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
        elif _is_mask(item):  # its k dims become one, of the count of true elements
            tensors.append((pos, axis, item))
            axis, out_dim = axis + item.dim(), out_dim + 1
            continue
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
        raise _unsupported(g, call, "a tensor index together with None or a 0-d boolean index")
    # PyTorch applies the ints as selections first (unlike NumPy, they are no advanced indices), so the tensor
    # indices act on the dims left after the Squeeze.
    # A mask stands for the k index tensors of its true elements' positions (as in PyTorch), on k dims.
    ats = [
        d - sum(1 for s in squeeze if s < axis)
        for _, axis, t in tensors
        for d in range(axis, axis + (t.dim() if _is_mask(t) else 1))
    ]
    rank = x.dim() - len(squeeze)
    if len(tensors) == 1 and _is_mask(tensors[0][2]):
        mask = tensors[0][2]
        if mask.dim() == 1:
            v = g.node("Compress", [v, g.value(mask)], axis=ats[0])[0]
        else:
            v = _gather_nd(g, v, ats, _mask_positions(g, mask), 1, rank)
    elif len(tensors) == 1:
        v = g.node("Gather", [v, _index_value(g, tensors[0][2])], axis=ats[0])[0]
    elif tensors:
        v = _gather_nd(g, v, ats, *_stacked_indices(g, [t for _, _, t in tensors]), rank)
    if nones:
        v = g.node("Unsqueeze", [v, g.ints(nones)])[0]
    for dim, item in bool_dims:  # False, or a 0-d mask: the new dim keeps its one row only where the mask is true
        v = g.node("Slice", [v, g.ints([0]), g.ints([0]) if item is False else _count_of(g, item), g.ints([dim])])[0]
    if any(_is_mask(t) for _, _, t in tensors) or bool_dims:
        g.note_counts(call.result)
    return [v]


def _count_of(g: _Graph, x: fc.Tensor) -> str:
    """[1] if the 0-d x is nonzero (or true), else [0]: the number of positions NonZero would give it."""
    nonzero = g.node("Cast", [g.value(x)], to=g._onnx_type(fc.bool))[0]
    return g.node("Reshape", [g.node("Cast", [nonzero], to=g._onnx_type(fc.int64))[0], g.ints([1])])[0]


def _index_value(g: _Graph, index: Any) -> str:
    if isinstance(index, np.ndarray):
        return g.constant(index.astype(np.int64))
    return g.operand(index, fc.int64)


def _stacked_indices(g: _Graph, indices: list[Any]) -> tuple[str, int]:
    """Several index tensors (a mask: its true elements' positions, one per dim) broadcast and stacked on a last
    axis for GatherND, and the number of dims they broadcast to."""
    values: list[str] = []
    for t in indices:
        if _is_mask(t):
            values += _rows(g, g.node("NonZero", [g.value(t)])[0], t.dim())
        else:
            values.append(_index_value(g, t))
    shape = values[0]
    for other in values[1:]:
        shape = g.node("Add", [shape, other])[0]
    shape = g.node("Shape", [shape])[0]
    last = g.ints([-1])
    stacked = [g.node("Unsqueeze", [g.node("Expand", [i, shape])[0], last])[0] for i in values]
    return g.node("Concat", stacked, axis=-1)[0], max(1 if _is_mask(t) else t.ndim for t in indices)


def _gather_nd(g: _Graph, v: str, ats: list[int], index: str, nb: int, rank: int) -> str:
    """Tensor indices on the dims `ats`: those dims first (Transpose), GatherND with `index` (their `nb` dims, then
    one position per dim in `ats`), and the result's index dims moved back where the indexed dims were when those
    were next to each other."""
    perm = ats + [d for d in range(rank) if d not in ats]
    if perm != list(range(rank)):
        v = g.node("Transpose", [v], perm=perm)[0]
    v = g.node("GatherND", [v, index])[0]
    p = ats[0]
    if ats == list(range(p, p + len(ats))) and p > 0:
        out_rank = nb + rank - len(ats)
        v = g.node("Transpose", [v], perm=[*range(nb, nb + p), *range(nb), *range(nb + p, out_rank)])[0]
    return v


def _before_write(g: _Graph, call: OpCall, x: Any, in_place: bool = True) -> str:
    """x's value before a recorded write (a tensor with no graph value yet, made in forward, is a constant of its
    values then, which the recorder hands as ``call.before``: the write has changed them since)."""
    if in_place and x._is_view:
        raise _unsupported(
            g, call, f"a write into a view of shape {tuple(x.shape)} (the graph's value of the tensor it views would "
            "not see it); write into the tensor itself",
        )  # fmt: skip
    return g.value(x if id(x) in g.names or id(x) in g.unusable else call.before)


@_maps("__setitem__")
def _setitem(g: _Graph, call: OpCall) -> list[str | None]:
    x, index, value = call.args
    return _put_at_mask(g, call, x, _index_items(g, call, index, x.dim()), value, _before_write(g, call, x))


@_maps("index_put_", "index_put")
def _index_put(g: _Graph, call: OpCall) -> list[str | None]:
    x, indices, values, accumulate = _arguments(
        call, ("input", None), ("indices", None), ("values", None), ("accumulate", False)
    )
    if accumulate:
        raise _unsupported(g, call, "accumulate=True")
    items = _index_items(g, call, tuple(slice(None) if i is None else i for i in indices), x.dim())
    return _put_at_mask(g, call, x, items, values, _before_write(g, call, x, call.name == "index_put_"))


@_maps("fill_")
def _fill(g: _Graph, call: OpCall) -> list[str | None]:
    x, value = _arguments(call, ("input", None), ("value", None))
    return g.node("Expand", [g.operand(value, x.dtype), g.node("Shape", [_before_write(g, call, x)])[0]])


def _put_at_mask(g: _Graph, call: OpCall, x: Any, items: list[Any], value: Any, before: str) -> list[str]:
    """``x[mask] = value`` (the mask after ':' or '...' as well): Where when the value does not have the masked
    elements' dim (a number, or a tensor of the dims after the mask's), else ScatterND at the mask's positions."""
    masks = [i for i, item in enumerate(items) if _is_mask(item)]
    if len(masks) != 1 or any(not _is_mask(i) and not (isinstance(i, slice) and i == slice(None)) for i in items):
        raise _unsupported(g, call, "a write at an index that is not one boolean mask (with ':' or '...' "
                           "around it)")  # fmt: skip
    p, mask = masks[0], items[masks[0]]
    k, rest = mask.dim(), x.dim() - masks[0] - mask.dim()
    target = before
    v = g.operand(value, x.dtype)
    if not isinstance(value, fc.Tensor) or value.dim() <= rest:  # the value broadcasts along x's last dims
        m = g.value(mask)
        if rest:
            m = g.node("Unsqueeze", [m, g.ints(range(k, k + rest))])[0]
        return g.node("Where", [m, v, target])
    perm = [*range(p, p + k), *range(p), *range(p + k, x.dim())]
    if p:
        target = g.node("Transpose", [target], perm=perm)[0]
    positions = _mask_positions(g, mask)
    shape = g.node("Shape", [before])[0]
    pieces = [g.node("Slice", [g.node("Shape", [positions])[0], g.ints([0]), g.ints([1])])[0]]
    if p:
        pieces.insert(0, g.node("Slice", [shape, g.ints([0]), g.ints([p])])[0])
    if rest:
        pieces.append(g.node("Slice", [shape, g.ints([p + k]), g.ints([INT64_MAX])])[0])
    # The value broadcasts to x[index]'s shape, with the masked elements' dim first for ScatterND.
    v = g.node("Expand", [v, g.node("Concat", pieces, axis=0)[0]])[0]
    if p:
        v = g.node("Transpose", [v], perm=[p, *range(p), *range(p + 1, p + 1 + rest)])[0]
    out = g.node("ScatterND", [target, positions, v])
    if p:
        out = g.node("Transpose", out, perm=[perm.index(d) for d in range(x.dim())])
    return out


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


@_maps("masked_select")
def _masked_select(g: _Graph, call: OpCall) -> list[str | None]:
    """The elements where the mask (broadcast with x) is true, in row-major order: Compress of both flattened."""
    x, mask = _arguments(call, ("input", None), ("mask", None))
    v, m = g.value(x), _condition(g, mask)
    if g.size_pairs(x) != g.size_pairs(mask):
        v = g.node("Expand", [v, g.node("Shape", [m])[0]])[0]  # Expand broadcasts both ways
        m = g.node("Expand", [m, g.node("Shape", [v])[0]])[0]
    flat = g.ints([-1])
    g.note_counts(call.result)
    return g.node("Compress", [g.node("Reshape", [v, flat])[0], g.node("Reshape", [m, flat])[0]], axis=0)


def _nonzero_rows(g: _Graph, call: OpCall, x: Any) -> str:
    """NonZero's [rank, n] positions of x's nonzero elements (a 0-d x: [0, n], n = 1 if x is nonzero, else 0)."""
    for result in call.result if isinstance(call.result, tuple) else [call.result]:
        g.note_counts(result)
    if x.dim() == 0:  # ONNX Runtime's NonZero takes a scalar for a 1-element vector: [1, n]
        return g.node("Slice", [g.constant(np.zeros((0, 1), np.int64)), g.ints([0]), _count_of(g, x), g.ints([1])])[0]
    return g.node("NonZero", [g.value(x)])[0]


@_maps("_nonzero", "nonzero", "argwhere")
def _nonzero(g: _Graph, call: OpCall) -> list[str | None]:
    x, as_tuple = _arguments(call, ("input", None), ("as_tuple", False))
    if as_tuple:
        return _nonzero_tuple(g, call, x)
    return g.node("Transpose", [_nonzero_rows(g, call, x)], perm=[1, 0])


def _rows(g: _Graph, positions: str, rank: int) -> list[str]:
    """The rows of NonZero's [rank, n] positions: one [n] index per dim."""
    return [g.node("Gather", [positions, g.constant(np.asarray(i, np.int64))], axis=0)[0] for i in range(rank)]


def _nonzero_tuple(g: _Graph, call: OpCall, x: Any) -> list[str | None]:
    if x.dim() == 0:  # PyTorch takes a 0-d x as a 1-element vector here: one index, [0] or []
        for result in call.result:
            g.note_counts(result)
        return [g.node("Slice", [g.constant(np.zeros(1, np.int64)), g.ints([0]), _count_of(g, x), g.ints([0])])[0]]
    return list(_rows(g, _nonzero_rows(g, call, x), x.dim()))


@_maps("where")
def _where(g: _Graph, call: OpCall) -> list[str | None]:
    if len(call.args) + len(call.kwargs or {}) == 1:  # where(condition): nonzero(condition, as_tuple=True)
        return _nonzero_tuple(g, call, _arguments(call, ("condition", None))[0])
    if call.method:  # x.where(condition, other): self first
        a, cond, b = _arguments(call, ("input", None), ("condition", None), ("other", None))
    else:
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


@_maps("narrow")
def _narrow(g: _Graph, call: OpCall) -> list[str | None]:
    params = ("input", None), ("dim", 0), ("start", 0), ("length", 0)
    (x, dim, start, length), (tx, _, tstart, tlength) = _arguments(call, *params), g.twin_args(call, *params)
    d = int(dim) % x.dim()
    s, ts = int(start) % max(x.shape[d], 1), int(tstart) % max(tx.shape[d], 1)  # a negative start counts from the end
    starts, ends = g.shape_value([(s, ts)]), g.shape_value([(s + int(length), ts + int(tlength))])
    if starts is None or ends is None:
        raise _unsupported(g, call, "a start or length computed from sizes the exporter cannot read back")
    return g.node("Slice", [g.value(x), starts, ends, g.ints([d])])


@_maps("select")
def _select(g: _Graph, call: OpCall) -> list[str | None]:
    params = ("input", None), ("dim", 0), ("index", 0)
    (x, dim, index), (_, _, tindex) = _arguments(call, *params), g.twin_args(call, *params)
    d = int(dim) % x.dim()
    at = g.shape_value([(int(index), int(tindex))])  # Gather takes a negative index from the end, as select
    if at is None:
        raise _unsupported(g, call, "an index computed from sizes the exporter cannot read back")
    return g.node("Squeeze", [g.node("Gather", [g.value(x), at], axis=d)[0], g.ints([d])])


@_maps("unbind")
def _unbind(g: _Graph, call: OpCall) -> list[str | None]:
    """Split into pieces of 1 along dim, each squeezed: as many outputs as the example's size there."""
    x, dim = _arguments(call, ("input", None), ("dim", 0))
    d = int(dim) % x.dim()
    n = x.shape[d]
    if n != len((g.twin_call or call).result):
        raise _unsupported(g, call, "a number of pieces that depends on the input's size")
    if n == 0:
        return []
    pieces = g.node("Split", [g.value(x), g.ints([1] * n)], outputs=n, axis=d)
    return [g.node("Squeeze", [p, g.ints([d])])[0] for p in pieces]


@_maps("expand_as")
def _expand_as(g: _Graph, call: OpCall) -> list[str | None]:
    x, other = _arguments(call, ("input", None), ("other", None))
    return g.node("Expand", [g.value(x), g.node("Shape", [g.value(other)])[0]])


@_maps("requires_grad_")
def _requires_grad(g: _Graph, call: OpCall) -> list[str | None]:
    return g.node("Identity", [g.value(call.args[0])])  # export runs without gradients: no value changes
