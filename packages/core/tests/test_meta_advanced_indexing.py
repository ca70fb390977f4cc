"""The meta steps of advanced indexing: x[idx, :, idx2] (op index), take, x[index] = values (index_put_)
and put.

Meta against the cpu and PyTorch's meta device, errors word for word (as test_meta.py says)."""

from __future__ import annotations

import flambeau_core as fc
import pytest
import torch
from meta_helpers import DTYPES, cpu_tensor, meta_and_cpu, outcome, torch_meta_outcome

# ---- advanced indexing: x[idx, :, idx2] (op index) ----
# name: (x's shape, the index items: None for `:`, (shape, dtype) for an index tensor of zeros, or a list).
ADVANCED_INDEX = {
    "one index": ((2, 3, 4, 5), [((2,), "int64")]),
    "adjacent": ((2, 3, 4, 5), [None, ((2,), "int64"), ((2,), "int64")]),
    "adjacent, trailing whole dim": ((2, 3, 4, 5), [None, ((4,), "int64"), ((4,), "int64"), None]),
    "separated": ((2, 3, 4, 5), [((2,), "int64"), None, ((2,), "int64")]),
    "separated by two": ((2, 3, 4, 5), [((3,), "int64"), None, None, ((3,), "int32")]),
    "None gaps": ((2, 3, 4, 5), [None, None, ((3,), "int64")]),
    "broadcast": ((2, 3, 4, 5), [((2, 1), "int64"), ((1, 3), "int32")]),
    "broadcast separated": ((2, 3, 4, 5), [((4, 1, 2), "int64"), None, ((3, 1), "int64")]),
    "int32": ((3, 4), [None, ((6,), "int32")]),
    "2-d index": ((3, 4), [((2, 5), "int64")]),
    "list": ((3, 4), [[0, 2], [1]]),
    "empty index": ((2, 3, 4, 5), [((0,), "int64")]),
    "empty broadcast": ((2, 3, 4, 5), [None, ((0, 1), "int64"), ((1, 3), "int64")]),
    "empty self": ((0, 3), [None, ((2,), "int64")]),
    "mask": ((3, 4), [((3,), "bool")]),
    "mask and index": ((3, 4, 2), [((3, 4), "uint8"), ((1,), "int64")]),
    "float index": ((3, 4), [((2,), "float32")]),
    "int16 index": ((3, 4), [None, ((2,), "int16")]),
    "no broadcast": ((3, 4), [((2,), "int64"), ((3,), "int64")]),
    "mask of the wrong shape": ((3, 4), [None, ((3,), "bool")]),
    "too many": ((3, 4), [((1,), "int64")] * 3),
}  # fmt: skip


def advanced_index(module, name, device):
    """x and the index tuple of an ADVANCED_INDEX case on `device`, in flambeau_core or torch."""
    shape, items = ADVANCED_INDEX[name]
    x = (cpu_tensor(shape, "float32") if module is fc else torch.ones(shape)).to(device)
    index = tuple(
        slice(None)
        if it is None
        else it
        if isinstance(it, list)
        else module.zeros(it[0], dtype=getattr(module, it[1])).to(device)
        for it in items
    )
    return x, index


def torch_index_outcome(name):
    """PyTorch's cpu answer (and its meta one where it has one): shape and dtype, or the error's type."""
    x, index = advanced_index(torch, name, "cpu")
    try:
        r = x[index]
    except Exception as e:  # noqa: BLE001
        return ("error", type(e).__name__)
    cpu = ("ok", (tuple(r.shape), "float32"))
    if not any(isinstance(i, torch.Tensor) and i.dtype in (torch.bool, torch.uint8) for i in index):
        xm, im = advanced_index(torch, name, "meta")
        r = xm[im]
        assert ("ok", (tuple(r.shape), "float32")) == cpu, name
    return cpu


@pytest.mark.parametrize("name", list(ADVANCED_INDEX))
def test_advanced_indexing(name):
    """x[index] on meta tensors: the cpu's shape and dtype, or its error word for word (PyTorch's type)."""
    meta = outcome(lambda: (lambda x, i: x[i])(*advanced_index(fc, name, "meta")))
    cpu = outcome(lambda: (lambda x, i: x[i])(*advanced_index(fc, name, "cpu")))
    theirs = torch_index_outcome(name)
    assert cpu[:2] == theirs[:2], (name, cpu, theirs)
    masks = [it for it in ADVANCED_INDEX[name][1] if isinstance(it, tuple) and it[1] in ("bool", "uint8")]
    if masks and cpu[0] == "ok":
        assert meta[:2] == ("error", "NotImplementedError"), meta
        assert "mask" in meta[2] and "'meta'" in meta[2], meta
    else:
        assert meta == cpu, (name, meta, cpu)
    if cpu[0] == "error" and name != "too many":  # too many: getitem's own check, before the op
        assert cpu[2].startswith("[index] "), cpu


@pytest.mark.parametrize("dtype", DTYPES)
def test_advanced_indexing_keeps_the_dtype(dtype):
    x, i = cpu_tensor((3, 4, 5), dtype), fc.zeros(2, 1, dtype=fc.int64)
    meta, cpu = meta_and_cpu(lambda x, i: x[i, :, None, i.view(2)], x, i)
    theirs = torch.empty(3, 4, 5, device="meta")[torch.zeros(2, 1, dtype=torch.long), :, None, torch.zeros(2).long()]
    assert meta == cpu == ("ok", (tuple(theirs.shape), dtype)), (meta, cpu)


@pytest.mark.parametrize("device", ["cpu", "meta"])
def test_advanced_indexing_checks_keep_their_messages(device):
    x = fc.ones(3, 4, device=device)
    i = fc.zeros(2, dtype=fc.int64, device=device)
    with pytest.raises(IndexError, match=r"^\[index\] tensors used as indices must be int64, int32, bool or uint8 "
                       r"tensors, got float64 for index 1$"):  # fmt: skip
        x[i, i.to(fc.float64)]
    with pytest.raises(
        IndexError, match=r"^\[index\] shape mismatch: indexing tensors could not be broadcast together with shapes "
        r"\(2,\), \(3,\)$"
    ):  # fmt: skip
        x[i, fc.zeros(3, dtype=fc.int32, device=device)]
    with pytest.raises(IndexError, match=r"^\[index\] the shape \(2,\) of the mask at index 0 does not match"):
        x[fc.ones(2, dtype=fc.bool, device=device)]
    other = "cpu" if device == "meta" else "meta"
    with pytest.raises(RuntimeError, match=rf"^\[index\] index 0 is on {other} but self is on {device}$"):
        fc.take(x, fc.zeros(2, dtype=fc.int64, device=other))
    # the result of an index shape too large to count raises under the op's name, without allocating
    with pytest.raises(RuntimeError, match=r"^\[index\] shape \(4611686018427387904,.* is too large"):
        x[i[:1].expand(2**62)]


def test_advanced_indexing_on_meta_reads_no_values():
    """A mask's result shape is its count of true elements, which a meta tensor has not: NotImplementedError, as
    PyTorch's meta device (masked_select too). A 0-d bool or integer index tensor is read as a Python bool or int
    (as PyTorch does), so a meta one cannot be read either; a 0-d cpu one goes with a meta self."""
    x = fc.ones(2, 3, 4, device="meta")
    i = fc.zeros(2, dtype=fc.int64, device="meta")
    with pytest.raises(NotImplementedError, match=r"^\[index\] indexing with a bool mask of shape \(2, 3\) .*'meta'"):
        x[fc.ones(2, 3, dtype=fc.bool, device="meta")]
    with pytest.raises(NotImplementedError, match=r"^\[index\] indexing with a bool mask"):
        fc.masked_select(x, fc.ones(4, dtype=fc.bool, device="meta"))
    for zero_d in (fc.tensor(True), fc.tensor(1)):
        with pytest.raises(NotImplementedError, match="Cannot copy out of meta tensor; no data!"):
            x[zero_d.to("meta"), i]
    assert outcome(lambda: x[fc.tensor(1), i]) == ("ok", ((2, 4), "float32"))
    # a cpu bool is read: True is a new dim of size 1, indexed by [0] (the cpu's and PyTorch's cpu's shape)
    assert outcome(lambda: x[fc.tensor(True), :, i]) == ("ok", ((2, 2, 4), "float32"))
    assert tuple(torch.ones(2, 3, 4)[torch.tensor(True), :, torch.zeros(2, dtype=torch.long)].shape) == (2, 2, 4)


@pytest.mark.parametrize(("xshape", "ishape"), [((3, 4), (2, 5)), ((3, 4), ()), ((0,), (0, 2)), ((), (3,))])
def test_take_on_meta(xshape, ishape):
    """take is a composite over index: it runs on meta tensors with index's rule."""
    x, i = cpu_tensor(xshape, "float64"), fc.zeros(ishape, dtype=fc.int64)
    meta, cpu = meta_and_cpu(fc.take, x, i)
    theirs = torch_meta_outcome(
        torch.take, torch.ones(xshape, dtype=torch.float64), torch.zeros(ishape, dtype=torch.long)
    )
    assert meta == cpu == theirs, (meta, cpu, theirs)


# x[index] = values: index_put_'s rule (its check step runs on every device; meta computes nothing).
INDEX_PUT = {
    "rows": ((4, 3), [((2,), "int64")], (3,), "float32"),
    "rows, values per row": ((4, 3), [((2,), "int64")], (2, 3), "float32"),
    "two dims": ((4, 3), [((2,), "int64"), ((2,), "int32")], (), "float32"),
    "after a slice": ((4, 3, 2), [None, ((5,), "int64")], (5, 2), "float32"),
    "a mask": ((4, 3), [((4,), "bool")], (3,), "float32"),
    "values too wide": ((4, 3), [((2,), "int64")], (4,), "float32"),
    "values of another dtype": ((4, 3), [((2,), "int64")], (3,), "float64"),
    "float index": ((4, 3), [((2,), "float32")], (3,), "float32"),
    "too many": ((4, 3), [((1,), "int64")] * 3, (), "float32"),
}  # fmt: skip


def index_put_args(module, name, device):
    shape, items, vshape, vdtype = INDEX_PUT[name]
    x = module.zeros(shape, device=device)
    index = [None if it is None else module.zeros(it[0], dtype=getattr(module, it[1]), device=device) for it in items]
    values = module.ones(vshape, dtype=getattr(module, vdtype), device=device)
    return x, index, values


@pytest.mark.parametrize("name", list(INDEX_PUT))
def test_index_put_on_meta(name):
    """index_put_ on meta tensors: the cpu's outcome (self back, or the error word for word), and PyTorch's."""

    def put(module, device):
        x, index, values = index_put_args(module, name, device)
        if module is fc:
            return fc._C.index_put_(x, index, values)
        x[tuple(slice(None) if i is None else i for i in index)] = values
        return x

    meta, cpu = outcome(lambda: put(fc, "meta")), outcome(lambda: put(fc, "cpu"))
    assert meta == cpu, (name, meta, cpu)
    theirs = outcome(lambda: put(torch, "cpu"))
    # FlambeauError is a RuntimeError; a dtype error is a TypeError here, a RuntimeError in PyTorch
    same_kind = {("FlambeauError", "RuntimeError"), ("TypeError", "RuntimeError")}
    assert cpu[:2] == theirs[:2] or (cpu[1], theirs[1]) in same_kind, (name, cpu, theirs)
    if cpu[0] == "error" and name != "float index":
        assert cpu[2].startswith("[index_put_] "), cpu


def test_put_runs_on_meta():
    """put is a composite over index_put_: it runs on meta tensors with index_put_'s rule (PyTorch's too)."""
    x, i, v = fc.zeros(5, 2), fc.tensor([1, 3]), fc.ones(2)
    meta, cpu = meta_and_cpu(fc.put, x, i, v)
    theirs = torch_meta_outcome(torch.put, torch.zeros(5, 2), torch.tensor([1, 3]), torch.ones(2))
    assert meta == cpu == theirs == ("ok", ((5, 2), "float32")), (meta, cpu, theirs)
