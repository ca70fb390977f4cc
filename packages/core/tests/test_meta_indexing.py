"""The meta steps of the ops that index along a dim (gather, index_select, index_add, scatter, ...), cat,
stack and embedding, and of the composites over them.

Meta against the cpu and PyTorch's meta device, errors word for word (as test_meta.py says)."""

from __future__ import annotations

import flambeau_core as fc
import pytest
import torch
from meta_helpers import FC, TH, agree, check_torch, cpu_tensor, meta_and_cpu, outcome, torch_meta_outcome

# ---- indexing along a dim, cat, embedding ----
# name: (call(module, x, index, src) alike on flambeau_core and torch, x's shape, index's shape and dtype,
# src's shape and dtype ("x": x's dtype)). The indices hold 0: their values are the kernels' to check.
INDEX_CALLS = {
    "gather": (lambda m, x, i, s: m.gather(x, 1, i), (3, 4), ((3, 2), "int64"), None),
    "gather dim 0": (lambda m, x, i, s: m.gather(x, 0, i), (3, 4), ((5, 4), "int64"), None),
    "gather 0-d": (lambda m, x, i, s: m.gather(x, 0, i), (), ((), "int64"), None),
    "gather empty": (lambda m, x, i, s: m.gather(x, -1, i), (0, 4), ((0, 2), "int64"), None),
    "gather int32 index": (lambda m, x, i, s: m.gather(x, 1, i), (3, 4), ((3, 2), "int32"), None),
    "gather rank": (lambda m, x, i, s: m.gather(x, 1, i), (3, 4), ((3,), "int64"), None),
    "gather larger": (lambda m, x, i, s: m.gather(x, 1, i), (3, 4), ((4, 2), "int64"), None),
    "gather bad dim": (lambda m, x, i, s: m.gather(x, 2, i), (3, 4), ((3, 2), "int64"), None),
    "index_select": (lambda m, x, i, s: m.index_select(x, 1, i), (3, 4), ((5,), "int64"), None),
    "index_select int32": (lambda m, x, i, s: m.index_select(x, -2, i), (3, 4), ((2,), "int32"), None),
    "index_select 0-d index": (lambda m, x, i, s: m.index_select(x, 0, i), (3, 4), ((), "int64"), None),
    "index_select 2-d index": (lambda m, x, i, s: m.index_select(x, 0, i), (3, 4), ((2, 2), "int64"), None),
    "index_select float index": (lambda m, x, i, s: m.index_select(x, 0, i), (3, 4), ((2,), "float32"), None),
    "index_select bad dim": (lambda m, x, i, s: m.index_select(x, 2, i), (3, 4), ((2,), "int64"), None),
    "index_add": (lambda m, x, i, s: m.index_add(x, 0, i, s), (3, 4), ((2,), "int64"), ((2, 4), "x")),
    "index_add dim 1": (lambda m, x, i, s: m.index_add(x, 1, i, s), (3, 4), ((5,), "int32"), ((3, 5), "x")),
    "index_add bad source": (lambda m, x, i, s: m.index_add(x, 0, i, s), (3, 4), ((2,), "int64"), ((2, 3), "x")),
    "index_add source dtype": (lambda m, x, i, s: m.index_add(x, 0, i, s), (3, 4), ((2,), "int64"),
                               ((2, 4), "float64")),
    "index_add alpha overflows": (lambda m, x, i, s: m.index_add(x, 0, i, s, alpha=2**40), (3, 4), ((2,), "int64"),
                                  ((2, 4), "x")),
    "index_add float alpha": (lambda m, x, i, s: m.index_add(x, 1, i, s, alpha=1e39), (3, 4), ((2,), "int64"),
                              ((3, 2), "x")),
    "index_copy": (lambda m, x, i, s: m.index_copy(x, 1, i, s), (3, 4), ((2,), "int64"), ((3, 2), "x")),
    "index_copy bad source": (lambda m, x, i, s: m.index_copy(x, 1, i, s), (3, 4), ((2,), "int64"), ((2, 2), "x")),
    "index_fill": (lambda m, x, i, s: m.index_fill(x, 1, i, 1), (3, 4), ((2,), "int64"), None),
    "index_fill bad index": (lambda m, x, i, s: m.index_fill(x, 1, i, 1), (3, 4), ((2,), "bool"), None),
    "scatter": (lambda m, x, i, s: m.scatter(x, 1, i, s), (3, 4), ((3, 2), "int64"), ((3, 3), "x")),
    "scatter value": (lambda m, x, i, s: m.scatter(x, 0, i, 1), (3, 4), ((2, 4), "int64"), None),
    "scatter add": (lambda m, x, i, s: m.scatter(x, 1, i, s, reduce="add"), (3, 4), ((3, 2), "int64"),
                    ((3, 2), "x")),
    "scatter bad reduce": (lambda m, x, i, s: m.scatter(x, 1, i, s, reduce="max"), (3, 4), ((3, 2), "int64"),
                           ((3, 2), "x")),
    "scatter src smaller": (lambda m, x, i, s: m.scatter(x, 1, i, s), (3, 4), ((3, 2), "int64"), ((3, 1), "x")),
    "scatter src dtype": (lambda m, x, i, s: m.scatter(x, 1, i, s), (3, 4), ((3, 2), "int64"), ((3, 2), "bool")),
    "scatter index larger": (lambda m, x, i, s: m.scatter(x, 1, i, s), (3, 4), ((4, 2), "int64"), ((4, 2), "x")),
    "scatter_add": (lambda m, x, i, s: m.scatter_add(x, 0, i, s), (3, 4), ((2, 4), "int64"), ((2, 4), "x")),
    "scatter_add int32 index": (lambda m, x, i, s: m.scatter_add(x, 0, i, s), (3, 4), ((2, 4), "int32"),
                                ((2, 4), "x")),
    "scatter_reduce amax": (lambda m, x, i, s: m.scatter_reduce(x, 0, i, s, "amax"), (3, 4), ((2, 4), "int64"),
                            ((2, 4), "x")),
    "scatter_reduce mean": (lambda m, x, i, s: m.scatter_reduce(x, 1, i, s, "mean", include_self=False), (3, 4),
                            ((3, 2), "int64"), ((3, 2), "x")),
    "scatter_reduce bad": (lambda m, x, i, s: m.scatter_reduce(x, 0, i, s, "max"), (3, 4), ((2, 4), "int64"),
                           ((2, 4), "x")),
    "cat": (lambda m, x, i, s: m.cat([x, s], 0), (3, 4), None, ((2, 4), "x")),
    "cat dim 1 promotes": (lambda m, x, i, s: m.cat([x, s, x], 1), (3, 4), None, ((3, 1), "float64")),
    "cat skips 1-d empty": (lambda m, x, i, s: m.cat([s, x], -1), (3, 4), None, ((0,), "int32")),
    "cat only empty": (lambda m, x, i, s: m.cat([s, s]), (0,), None, ((0,), "x")),
    "cat sizes differ": (lambda m, x, i, s: m.cat([x, s], 0), (3, 4), None, ((2, 3), "x")),
    "cat ranks differ": (lambda m, x, i, s: m.cat([x, s], 0), (3, 4), None, ((4,), "x")),
    "cat 0-d": (lambda m, x, i, s: m.cat([x, x]), (), None, None),
    "cat bad dim": (lambda m, x, i, s: m.cat([x, x], 2), (3, 4), None, None),
    "cat empty list": (lambda m, x, i, s: m.cat([]), (3,), None, None),
    "stack": (lambda m, x, i, s: m.stack([x, s], -1), (3, 4), None, ((3, 4), "x")),
    "stack promotes": (lambda m, x, i, s: m.stack([x, s, x]), (3, 4), None, ((3, 4), "float64")),
    "stack 0-d": (lambda m, x, i, s: m.stack([x, x]), (), None, None),
    "stack empty": (lambda m, x, i, s: m.stack([x, s], 1), (0, 2), None, ((0, 2), "x")),
    "stack shapes differ": (lambda m, x, i, s: m.stack([x, s]), (3, 4), None, ((4, 3), "x")),
    "stack bad dim": (lambda m, x, i, s: m.stack([x, x], 3), (3, 4), None, None),
    "stack empty list": (lambda m, x, i, s: m.stack([]), (3,), None, None),
    "take_along_dim": (lambda m, x, i, s: m.take_along_dim(x, i, 1), (3, 4), ((3, 2), "int64"), None),
    "take_along_dim broadcasts": (lambda m, x, i, s: m.take_along_dim(x, i, -1), (3, 4), ((1, 5), "int64"), None),
    "take_along_dim flat": (lambda m, x, i, s: m.take_along_dim(x, i), (3, 4), ((5,), "int64"), None),
    "take_along_dim 0-d": (lambda m, x, i, s: m.take_along_dim(x, i, 0), (), ((), "int64"), None),
    "take_along_dim int32": (lambda m, x, i, s: m.take_along_dim(x, i, 1), (3, 4), ((3, 2), "int32"), None),
    "take_along_dim rank": (lambda m, x, i, s: m.take_along_dim(x, i, 1), (3, 4), ((2,), "int64"), None),
    "take_along_dim bad dim": (lambda m, x, i, s: m.take_along_dim(x, i, 2), (3, 4), ((3, 2), "int64"), None),
    "take_along_dim no broadcast": (lambda m, x, i, s: m.take_along_dim(x, i, 1), (3, 4), ((2, 2), "int64"),
                                    None),
    "embedding": (lambda m, x, i, s: m.embedding(x, i), (5, 3), ((2, 4), "int64"), None),
    "embedding int32": (lambda m, x, i, s: m.embedding(x, i), (5, 3), ((7,), "int32"), None),
    "embedding float indices": (lambda m, x, i, s: m.embedding(x, i), (5, 3), ((7,), "float32"), None),
    "embedding 1-d weight": (lambda m, x, i, s: m.embedding(x, i), (5,), ((7,), "int64"), None),
}  # fmt: skip


def index_inputs(module, call, dtype, device):
    """x, index, src of a call of INDEX_CALLS: x from cpu_tensor's values, index zeros, src ones."""
    _, xshape, ispec, sspec = INDEX_CALLS[call]
    if module is fc:
        x = cpu_tensor(xshape, dtype).to(device)
        make = lambda shape, dt, v: fc.full(shape, v, dtype=FC[dt], device=device)  # noqa: E731
    else:
        x = torch.empty(xshape, dtype=TH[dtype], device=device)
        make = lambda shape, dt, v: torch.full(shape, v, dtype=TH[dt], device=device)  # noqa: E731
    i = make(ispec[0], ispec[1], 0) if ispec else None
    s = make(sspec[0], dtype if sspec[1] == "x" else sspec[1], 1) if sspec else None
    return x, i, s


@pytest.mark.parametrize("call", list(INDEX_CALLS))
@pytest.mark.parametrize("dtype", ["bool", "int32", "int64", "float32", "float64", "complex64"])
def test_indexing(call, dtype):
    fn = INDEX_CALLS[call][0]
    meta = outcome(lambda: fn(fc, *index_inputs(fc, call, dtype, "meta")))
    cpu = outcome(lambda: fn(fc, *index_inputs(fc, call, dtype, "cpu")))
    assert agree(meta, cpu), (call, dtype, meta, cpu)
    tensors = [t for t in index_inputs(torch, call, dtype, "meta") if t is not None]
    check_torch(lambda *ts: fn(torch, *index_inputs(torch, call, dtype, ts[0].device)), cpu, *tensors)


def test_embedding_dense_backward():
    g, i = fc.ones(2, 4, 3), fc.zeros(2, 4, dtype=fc.int64)
    cases = [
        (g, i, 5),
        (g.to(fc.float64), i.to(fc.int32), 1),
        (g.to(fc.float16), i, 5),
        (g.to(fc.int64), i, 5),  # an integer gradient
        (g, i.to(fc.float32), 5),  # float indices
        (g, i, -1),  # negative num_weights
        (g[0], i, 5),  # not indices' shape plus one dim
        (fc.ones(3), fc.zeros((), dtype=fc.int64), 4),
    ]
    for grad, idx, num in cases:
        call = lambda a, b, num=num: fc.embedding_dense_backward(a, b, num, -1, False)  # noqa: E731
        meta, cpu = meta_and_cpu(call, grad, idx)
        assert meta == cpu, (meta, cpu)
        theirs = torch_meta_outcome(
            lambda a, b, num=num: torch.ops.aten.embedding_dense_backward(a, b, num, -1, False),
            *[torch.empty(t.shape, dtype=getattr(torch, str(t.dtype).rsplit(".", 1)[-1]), device="meta")
              for t in (grad, idx)],
        )  # fmt: skip
        assert theirs is None or cpu[0] != "ok" or theirs == cpu, (theirs, cpu)


@pytest.mark.parametrize("device", ["cpu", "meta"])
def test_indexing_checks_keep_their_messages(device):
    x = fc.ones(3, 4, device=device)
    i = fc.zeros(3, 2, dtype=fc.int64, device=device)
    with pytest.raises(IndexError, match=r"^\[gather\] dimension 2 out of range for a 2-d tensor"):
        fc.gather(x, 2, i)
    with pytest.raises(TypeError, match=r"^\[gather\] index must be an int64 or int32 tensor, got dtype float32"):
        fc.gather(x, 1, i.to(fc.float32))
    assert fc.gather(x, 1, i.to(fc.int32)).shape == (3, 2)
    with pytest.raises(fc.FlambeauError, match=r"^\[gather\] index shape \(4, 2\) is larger than self shape"):
        fc.gather(x, 1, fc.zeros(4, 2, dtype=fc.int64, device=device))
    with pytest.raises(TypeError, match=r"^\[index_select\] index must be an int64 or int32 tensor, got dtype"):
        fc.index_select(x, 0, x)
    with pytest.raises(fc.FlambeauError, match=r"^\[index_select\] index must be 0-d or 1-d, got shape \(3, 2\)"):
        fc.index_select(x, 0, i)
    with pytest.raises(
        fc.FlambeauError,
        match=r"^\[index_add\] source of shape \(3, 4\) must have the shape of self \(3, 4\) except in dimension 0",
    ):
        fc.index_add(x, 0, i[:, 0][:2], x)
    with pytest.raises(TypeError, match=r"^\[index_copy\] source dtype float64 must match self dtype float32"):
        fc.index_copy(x, 0, i[:2, 0], x[:2].to(fc.float64))
    with pytest.raises(fc.FlambeauError, match=r"^\[index_add\] value 300 cannot be converted to type int8 without"):
        fc.index_add(x.to(fc.int8), 0, i[:2, 0], x[:2].to(fc.int8), alpha=300)
    with pytest.raises(fc.FlambeauError, match=r"^\[index_add\] value 1e\+05 cannot be converted to type float16"):
        fc.index_add(x.to(fc.float16), 0, i[:2, 0], x[:2].to(fc.float16), alpha=1e5)
    with pytest.raises(ValueError, match=r"^\[scatter\] reduce must be 'add' or 'multiply', got 'max'"):
        fc.scatter(x, 1, i, x, reduce="max")
    with pytest.raises(ValueError, match=r"^\[scatter_reduce\] reduce must be one of 'sum', 'prod', 'mean'"):
        fc.scatter_reduce(x, 1, i, x, "max")
    with pytest.raises(TypeError, match=r"^\[scatter_reduce\] reduce 'amax' and 'amin' are not supported for dtype"):
        fc.scatter_reduce(x.to(fc.complex64), 1, i, x.to(fc.complex64), "amin")
    with pytest.raises(fc.FlambeauError, match=r"^\[scatter_add\] index shape \(3, 2\) is larger than src shape"):
        fc.scatter_add(x, 1, i, x[:, :1])
    with pytest.raises(fc.FlambeauError, match=r"^\[cat\] sizes must match except in dimension 0"):
        fc.cat([x, x[:, :2]])
    with pytest.raises(fc.FlambeauError, match=r"^\[cat\] zero-dimensional tensor cannot be concatenated"):
        fc.cat([x[0, 0], x[0, 0]])
    with pytest.raises(fc.FlambeauError, match=r"^\[cat\] expected a non-empty list of tensors"):
        fc.cat([])
    with pytest.raises(fc.FlambeauError, match=r"^\[embedding\] weight must be 2-D"):
        fc.embedding(x[0], i)
    with pytest.raises(TypeError, match=r"^\[embedding\] indices must be an int64 or int32 tensor"):
        fc.embedding(x, x)
    with pytest.raises(NotImplementedError, match=r"^\[embedding\] sparse=True"):
        fc.embedding(x, i, sparse=True)
    with pytest.raises(fc.FlambeauError, match=r"^\[embedding_backward\] num_weights must be non-negative"):
        fc.embedding_dense_backward(x, i[:, 0], -1, -1, False)


@pytest.mark.parametrize("device", ["cpu", "meta"])
def test_composite_checks_keep_their_messages(device):
    """kthvalue, stack, take_along_dim and std/var_mean/std_mean are composites: their own checks read only
    shapes and dtypes, so they raise on meta as on the cpu, and the ops they call (sort, cat, gather,
    var.correction) bring their rules."""
    x = fc.ones(3, 4, device=device)
    i = fc.zeros(3, 2, dtype=fc.int64, device=device)
    with pytest.raises(
        IndexError, match=r"^\[kthvalue\] k \(5\) is out of range for dim 1 of size 4 \(shape \(3, 4\)\)"
    ):
        fc.kthvalue(x, 5, 1)
    with pytest.raises(IndexError, match=r"^\[kthvalue\] dimension 2 out of range for a 2-d tensor"):
        fc.kthvalue(x, 1, 2)
    with pytest.raises(TypeError, match=r"^\[kthvalue\] is not supported for dtype uint16 \(as in PyTorch\)"):
        fc.kthvalue(x.to(fc.uint16), 1)
    with pytest.raises(
        fc.FlambeauError,
        match=r"^\[stack\] all tensors must have the same shape: tensor 0 has shape \(3, 4\) but tensor 1 has shape",
    ):
        fc.stack([x, x.t()])
    with pytest.raises(IndexError, match=r"^\[stack\] dimension -4 out of range for stacking 2-d tensors"):
        fc.stack([x, x], -4)
    with pytest.raises(fc.FlambeauError, match=r"^\[stack\] expected a non-empty list of tensors"):
        fc.stack([])
    with pytest.raises(TypeError, match=r"^\[take_along_dim\] indices must be an int64 tensor, got dtype int32"):
        fc.take_along_dim(x, i.to(fc.int32), 1)
    with pytest.raises(fc.FlambeauError, match=r"^\[take_along_dim\] input and indices must have the same number"):
        fc.take_along_dim(x, i[0], 1)
    with pytest.raises(fc.FlambeauError, match=r"^\[take_along_dim\] shapes \(3, 2\) and \(2, 2\) cannot be broadcast"):
        fc.take_along_dim(x, i[:2], 1)
    # std and the _mean forms raise var.correction's dtype error under their own names
    for name in ("std", "var_mean", "std_mean"):
        with pytest.raises(
            TypeError,
            match=rf"^\[{name}\] var and std only support floating point and complex dtypes, got int64 \(shape \(3, 4",
        ):
            getattr(fc, name)(x.to(fc.int64), 1)
    values, indices = fc.kthvalue(x, 2, 0, keepdim=True)
    assert values.device.type == indices.device.type == device
    assert (values.shape, values.dtype, indices.dtype) == ((1, 4), fc.float32, fc.int64)


def test_index_values_are_left_to_the_kernels():
    """An index out of range needs the index's values: the cpu kernels raise IndexError (gather, index_select
    and scatter its IndexOutOfBoundsError subclass, as PyTorch raises RuntimeError there), the meta step
    cannot tell (as PyTorch's meta device) and gives the shape."""
    x = fc.ones(3, 4)
    bad = fc.full((3, 2), 7, dtype=fc.int64)
    for call in (
        lambda x, i: fc.gather(x, 1, i),
        lambda x, i: fc.index_select(x, 1, i[0]),
        lambda x, i: fc.scatter(x, 1, i, 2.0),
        lambda x, i: fc.embedding(x, i),
        lambda x, i: x[:, i],
        lambda x, i: fc.take(x, i * 2),
    ):
        meta, cpu = meta_and_cpu(call, x, bad)
        assert cpu[0] == "error" and cpu[1] in ("IndexError", "IndexOutOfBoundsError") and "out of" in cpu[2], cpu
        assert meta[0] == "ok", meta
