"""The meta steps of the norms: layer_norm, batch_norm and group_norm and their backwards.

Meta against the cpu and PyTorch's meta device, errors word for word (as test_meta.py says)."""

from __future__ import annotations

import flambeau_core as fc
import pytest
import torch
from flambeau_core import _C
from meta_helpers import FC, TH, cpu_tensor, meta_and_cpu

# ---- layer_norm: one rows rule (meta::layer_norm_rows) for the cpu, CUDA and meta ----

LAYER_NORM_CASES = [
    ((2, 3, 4), [4], None),
    ((2, 3, 4), [3, 4], (3, 4)),
    ((5,), [5], (5,)),
    ((0, 4), [4], None),
    ((2, 3), [4], None),  # normalized_shape does not match
    ((2, 3), [], None),
    ((2, 3), [3], (4,)),  # a weight of the wrong shape
]


@pytest.mark.parametrize(("shape", "normalized", "wshape"), LAYER_NORM_CASES)
@pytest.mark.parametrize("dtype", ["int64", "float32", "float64"])
@pytest.mark.parametrize("wdtype", ["float32", "float64"])
def test_layer_norm(shape, normalized, wshape, dtype, wdtype):
    w = None if wshape is None else cpu_tensor(wshape, wdtype)
    meta, cpu = meta_and_cpu(lambda x, w, b: fc.native_layer_norm(x, normalized, w, b, 1e-5),
                             cpu_tensor(shape, dtype), w, w)  # fmt: skip
    assert meta == cpu, (meta, cpu)
    if cpu[0] == "ok":
        theirs = torch.native_layer_norm(
            torch.ones(shape, dtype=TH[dtype]),
            normalized,
            None if w is None else torch.ones(wshape, dtype=TH[wdtype]),
            None,
            1e-5,
        )
        assert [tuple(t.shape) for t in theirs] == [s for s, _ in cpu[1:]]


# ---- batch_norm, layer_norm's backward, group_norm (the norm kernels' checks, one per family) ----

# (input shape, parameter shape, dtype, training)
BATCH_NORM_CASES = [
    ((4, 3, 5), (3,), "float32", True),
    ((4, 3), (3,), "float64", False),
    ((0, 2, 3), (2,), "float32", True),
    ((4, 3, 5), (4,), "float32", True),  # parameters of the wrong shape
    ((3,), (3,), "float32", True),  # no channel dim
    ((4, 3), (3,), "int64", True),
]
MASKS = [(True, True, True), (True, False, False), (False, True, True)]


def torch_meta(shape, dtype):
    return None if shape is None else torch.empty(shape, dtype=TH[dtype], device="meta")


def shapes_of(results) -> list:
    return [None if t is None else tuple(t.shape) for t in results]


def asked_shapes(results, mask) -> list:
    """The shapes of the gradients a norm's backward was asked for (PyTorch's meta functions give all three)."""
    return [tuple(t.shape) if t is not None and asked else None for t, asked in zip(results, mask, strict=True)]


@pytest.mark.parametrize(("shape", "pshape", "dtype", "training"), BATCH_NORM_CASES)
def test_batch_norm(shape, pshape, dtype, training):
    w = cpu_tensor(pshape, dtype)
    rm, rv = cpu_tensor(pshape, dtype), cpu_tensor(pshape, dtype)
    meta, cpu = meta_and_cpu(lambda x, w, rm, rv: fc.native_batch_norm(x, w, w, rm, rv, training, 0.1, 1e-5),
                             cpu_tensor(shape, dtype), w, rm, rv)  # fmt: skip
    assert meta == cpu, (meta, cpu)
    if cpu[0] == "ok" and training:  # PyTorch's cpu gives empty saved statistics in evaluation mode
        m = [torch_meta(s, dtype) for s in (shape, pshape, pshape, pshape)]
        theirs = torch.native_batch_norm(m[0], m[1], m[1], m[2], m[3], training, 0.1, 1e-5)
        assert shapes_of(theirs) == [s for s, _ in cpu[1:]]
    for mask in MASKS:

        def call(g, x, w, m, i):
            return _C._native_batch_norm_backward(g, x, w, m, i, training, *mask)  # noqa: B023

        meta, cpu_grad = meta_and_cpu(call, cpu_tensor(shape, dtype), cpu_tensor(shape, dtype), w, rm, rv)
        assert meta == cpu_grad, (meta, cpu_grad)
        assert (cpu_grad[0] == "ok") == (cpu[0] == "ok"), (cpu, cpu_grad)
        if cpu_grad[0] == "ok" and 0 not in shape:  # PyTorch's meta function divides by the count
            m = [torch_meta(s, dtype) for s in (shape, pshape)]
            theirs = torch.ops.aten.native_batch_norm_backward(m[0], m[0], m[1], m[1], m[1], m[1], m[1], training,
                                                               1e-5, list(mask))  # fmt: skip
            assert asked_shapes(theirs, mask) == [None if r is None else r[0] for r in cpu_grad[1:]]


@pytest.mark.parametrize("param_dtype", ["float32", "bfloat16", None])
@pytest.mark.parametrize("training", [True, False])
def test_batch_norm_mixed_precision_dtypes(param_dtype, training):
    # Note [Batch norm's mixed precision]: the meta step's dtypes are the cpu kernel's and PyTorch's.
    x = fc.ones(4, 3, 2).to(fc.bfloat16)
    p = None if param_dtype is None else fc.ones(3).to(FC.get(param_dtype, fc.bfloat16))
    stats = fc.ones(3).to(fc.bfloat16 if param_dtype == "bfloat16" else fc.float32)
    meta, cpu = meta_and_cpu(lambda x, p, s: fc.native_batch_norm(x, p, p, s, s, training, 0.1, 1e-5), x, p, stats)
    assert meta == cpu, (meta, cpu)
    saved = "bfloat16" if param_dtype == "bfloat16" else "float32"
    assert [r[1] for r in cpu[1:]] == ["bfloat16", saved, saved]
    t = torch.ones(4, 3, 2, dtype=torch.bfloat16)
    tp = None if param_dtype is None else torch.ones(3, dtype=getattr(torch, param_dtype))
    ts = torch.ones(3, dtype=getattr(torch, saved))
    assert [str(r.dtype) for r in torch.native_batch_norm(t, tp, tp, ts, ts, training, 0.1, 1e-5)] == [
        "torch.bfloat16",
        f"torch.{saved}",
        f"torch.{saved}",
    ]
    out = fc.native_batch_norm(x, p, p, stats.clone(), stats.clone(), True, 0.1, 1e-5)
    meta, cpu = meta_and_cpu(
        lambda g, x, p, m, i: _C._native_batch_norm_backward(g, x, p, m, i, training, True, True, True),
        x, x, p if p is not None else stats, out[1], out[2],
    )  # fmt: skip
    assert meta == cpu, (meta, cpu)
    assert [r[1] for r in cpu[1:]] == ["bfloat16", saved, saved]


@pytest.mark.parametrize("device", ["cpu", "meta"])
def test_batch_norm_checks_keep_their_messages(device):
    x, c = fc.ones(4, 3, device=device), fc.ones(3, device=device)
    with pytest.raises(fc.FlambeauError, match=r"^\[batch_norm\] running_mean and running_var must be given"):
        fc.native_batch_norm(x, None, None, None, None, False, 0.1, 1e-5)
    with pytest.raises(fc.FlambeauError, match=r"^\[batch_norm\] eps must be non-negative, got -1"):
        fc.native_batch_norm(x, None, None, None, None, True, 0.1, -1.0)
    with pytest.raises(
        TypeError, match=r"^\[batch_norm\] running_var must have the input's dtype float32, got float64"
    ):
        fc.native_batch_norm(x, None, None, c, c.to(fc.float64), True, 0.1, 1e-5)
    with pytest.raises(fc.FlambeauError, match=r"^\[batch_norm_backward\] grad_out shape \(3,\) does not match input"):
        _C._native_batch_norm_backward(c, x, None, c, c, True, True, True, True)
    with pytest.raises(
        TypeError, match=r"^\[batch_norm_backward\] input must be a float16, bfloat16, float32 or float64 tensor"
    ):
        _C._native_batch_norm_backward(x, x.to(fc.int64), None, c, c, True, True, True, True)
    with pytest.raises(TypeError, match=r"^\[batch_norm\] running_var must be float32 as the other parameters"):
        fc.native_batch_norm(x.to(fc.bfloat16), c, None, c, c.to(fc.bfloat16), True, 0.1, 1e-5)


# (input shape, normalized_shape, mean/rstd shape)
LAYER_NORM_BACKWARD_CASES = [
    ((2, 3, 4), [4], (2, 3, 1)),
    ((2, 3, 4), [3, 4], (2, 1, 1)),
    ((0, 4), [4], (0, 1)),
    ((2, 3, 4), [4], (2, 3)),  # mean and rstd of the wrong size
    ((2, 3), [4], (2, 1)),  # normalized_shape does not match
]


@pytest.mark.parametrize(("shape", "normalized", "sshape"), LAYER_NORM_BACKWARD_CASES)
@pytest.mark.parametrize("dtype", ["int64", "float16", "float32", "float64"])
@pytest.mark.parametrize("mask", MASKS)
def test_layer_norm_backward(shape, normalized, sshape, dtype, mask):
    w = cpu_tensor(normalized, dtype if dtype != "int64" else "float32")

    def call(g, x, m, r, w):
        return _C._native_layer_norm_backward(g, x, normalized, m, r, w, *mask)

    args = cpu_tensor(shape, dtype), cpu_tensor(shape, dtype), cpu_tensor(sshape, dtype), cpu_tensor(sshape, dtype), w
    meta, cpu = meta_and_cpu(call, *args)
    assert meta == cpu, (meta, cpu)
    if cpu[0] == "ok":
        m = [torch_meta(s, dtype) for s in (shape, sshape, normalized)]
        theirs = torch.ops.aten.native_layer_norm_backward(m[0], m[0], normalized, m[1], m[1], m[2], m[2], list(mask))
        assert asked_shapes(theirs, mask) == [None if r is None else r[0] for r in cpu[1:]]


def test_layer_norm_backward_checks_keep_their_messages():
    for device in ["cpu", "meta"]:
        x, s = fc.ones(2, 3, device=device), fc.ones(2, 1, device=device)
        with pytest.raises(fc.FlambeauError, match=r"^\[layer_norm_backward\] mean and rstd must hold 2 values, got"):
            _C._native_layer_norm_backward(x, x, [3], x, x, None, True, True, True)
        with pytest.raises(TypeError, match=r"^\[layer_norm_backward\] grad_out dtype float64 does not match input"):
            _C._native_layer_norm_backward(x.to(fc.float64), x, [3], s, s, None, True, True, True)


# (input shape, N, C, HxW, group)
GROUP_NORM_CASES = [
    ((2, 6, 5), 2, 6, 5, 3),
    ((2, 4, 2, 3), 2, 4, 6, 1),
    ((0, 4, 3), 0, 4, 3, 2),
    ((2, 6, 5), 2, 6, 5, 4),  # channels not divisible by group
    ((2, 6, 5), 2, 6, 4, 3),  # N, C, HxW do not describe the input
    ((2, 6, 5), 2, 6, 5, 0),
]


@pytest.mark.parametrize(("shape", "n", "c", "hxw", "group"), GROUP_NORM_CASES)
@pytest.mark.parametrize("dtype", ["int64", "float32", "float64"])
def test_group_norm(shape, n, c, hxw, group, dtype):
    w = cpu_tensor((c,), dtype)
    meta, cpu = meta_and_cpu(lambda x, w: fc.native_group_norm(x, w, w, n, c, hxw, group, 1e-5),
                             cpu_tensor(shape, dtype), w)  # fmt: skip
    assert meta == cpu, (meta, cpu)
    if cpu[0] == "ok":
        x = torch_meta(shape, dtype)
        theirs = torch.native_group_norm(x, torch_meta((c,), dtype), None, n, c, hxw, group, 1e-5)
        assert shapes_of(theirs) == [s for s, _ in cpu[1:]]
    for mask in MASKS:

        def call(g, x, m, r, w):
            return _C._native_group_norm_backward(g, x, m, r, w, n, c, hxw, group, *mask)  # noqa: B023

        stats = cpu_tensor((n, max(group, 1)), dtype)
        meta, cpu_grad = meta_and_cpu(call, cpu_tensor(shape, dtype), cpu_tensor(shape, dtype), stats, stats, w)
        assert meta == cpu_grad, (meta, cpu_grad)
        assert (cpu_grad[0] == "ok") == (cpu[0] == "ok"), (cpu, cpu_grad)
        if cpu_grad[0] == "ok":
            x, s = torch_meta(shape, dtype), torch_meta((n, group), dtype)
            theirs = torch.ops.aten.native_group_norm_backward(x, x, s, s, torch_meta((c,), dtype), n, c, hxw, group,
                                                               list(mask))  # fmt: skip
            assert asked_shapes(theirs, mask) == [None if r is None else r[0] for r in cpu_grad[1:]]


@pytest.mark.parametrize("device", ["cpu", "meta"])
def test_group_norm_and_reduction_checks_keep_their_messages(device):
    x = fc.ones(2, 6, 5, device=device)
    with pytest.raises(fc.FlambeauError, match=r"^\[group_norm\] Expected number of channels in input to be divisible"):
        fc.native_group_norm(x, None, None, 2, 6, 5, 4, 1e-5)
    with pytest.raises(fc.FlambeauError, match=r"^\[group_norm_backward\] mean and rstd must hold 6 values"):
        _C._native_group_norm_backward(x, x, x, x, None, 2, 6, 5, 3, True, True, True)
    with pytest.raises(
        TypeError, match=r"^\[var\] var and std only support floating point and complex dtypes, got int64"
    ):
        fc.var(x.to(fc.int64), 1)
    with pytest.raises(IndexError, match=r"^\[mode\] Expected reduction dim 1 to have non-zero size"):
        fc.mode(x[:, :0], 1)
    with pytest.raises(
        fc.FlambeauError, match=r"^\[div\] expected rounding_mode to be one of None, 'trunc', or 'floor'"
    ):
        fc.div(x, x, rounding_mode="half")
