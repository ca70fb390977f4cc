"""The meta steps of the ops along a dim: reductions (sum, prod, max, var, mode, kthvalue, ...), scans,
sort and topk, softmax and their backwards.

Meta against the cpu and PyTorch's meta device, errors word for word (as test_meta.py says)."""

from __future__ import annotations

import flambeau_core as fc
import pytest
import torch
from flambeau_core import _C
from meta_helpers import DTYPES, TH, agree, check_torch, cpu_tensor, meta_and_cpu

# ---- reductions and scans ----


# name: (function, positional arguments after the input, keyword arguments), called alike on
# flambeau_core and torch (a dtype keyword names the module's dtype).
REDUCTION_CALLS = {
    "sum": ("sum", (), {}),
    "sum dim": ("sum", (0,), {}),
    "sum dims keepdim": ("sum", ((0, -1),), {"keepdim": True}),
    "sum dtype": ("sum", (-1,), {"dtype": "float64"}),
    "sum bad dim": ("sum", (3,), {}),
    "sum repeated dim": ("sum", ((0, 0),), {}),
    "prod dim": ("prod", (0,), {}),
    "prod dim keepdim": ("prod", (-1,), {"keepdim": True}),
    "cumsum": ("cumsum", (0,), {}),
    "cumsum dtype": ("cumsum", (-1,), {"dtype": "float32"}),
    "cumprod bad dim": ("cumprod", (4,), {}),
    "max": ("max", (), {}),
    "min": ("min", (), {}),
    "max dim": ("max", (0,), {}),
    "min dim keepdim": ("min", (-1,), {"keepdim": True}),
    "argmax": ("argmax", (), {}),
    "argmin dim": ("argmin", (0,), {"keepdim": True}),
    "amax": ("amax", (), {}),
    "amin dims": ("amin", ((0, -1),), {}),
    "var": ("var", (), {}),
    "var dim correction": ("var", (0,), {"correction": 0}),
    "var bad dim": ("var", (2,), {}),
    "std dims keepdim": ("std", ((0, -1),), {"keepdim": True}),
    "var_mean dim": ("var_mean", (-1,), {}),
    "std_mean keepdim": ("std_mean", (0,), {"keepdim": True, "correction": 2}),
    "var unbiased": ("var", (False,), {}),
    "std dim unbiased": ("std", (0, False), {}),
    "var_mean dims unbiased": ("var_mean", ((0, -1),), {"unbiased": False, "keepdim": True}),
    "std_mean correction": ("std_mean", (), {"correction": 0}),
    "mode": ("mode", (), {}),
    "mode dim keepdim": ("mode", (0,), {"keepdim": True}),
    "kthvalue": ("kthvalue", (1,), {}),
    "kthvalue dim keepdim": ("kthvalue", (2, 0), {"keepdim": True}),
    "kthvalue k too large": ("kthvalue", (4, -1), {}),
    "kthvalue bad dim": ("kthvalue", (1, 2), {}),
}


def reduction(module, call):
    name, args, kwargs = REDUCTION_CALLS[call]
    kwargs = {k: getattr(module, v) if k == "dtype" else v for k, v in kwargs.items()}
    return lambda x: getattr(module, name)(x, *args, **kwargs)


@pytest.mark.parametrize("call", list(REDUCTION_CALLS))
@pytest.mark.parametrize("dtype", ["bool", "int32", "int64", "float32", "float64"])
def test_reductions(call, dtype):
    for shape in [(), (0,), (3, 4), (2, 0, 3)]:
        x = cpu_tensor(shape, dtype)
        meta, cpu = meta_and_cpu(reduction(fc, call), x)
        assert agree(meta, cpu), (call, dtype, shape, meta, cpu)
        check_torch(reduction(torch, call), cpu, torch.empty(shape, dtype=TH[dtype], device="meta"))


@pytest.mark.parametrize("device", ["cpu", "meta"])
def test_reduction_checks_keep_their_messages(device):
    e = fc.ones(2, 0, device=device)
    with pytest.raises(
        RuntimeError, match=r"^\[max\] max\(\) of an empty tensor \(shape \(2, 0\)\) is undefined; pass a dim"
    ):
        fc.max(e)
    with pytest.raises(IndexError, match=r"^\[argmin\] cannot reduce over dim 1 of size 0 \(shape \(2, 0\)\)"):
        fc.argmin(e, 1)
    with pytest.raises(IndexError, match=r"^\[amax\] cannot reduce over dim 1 of size 0"):
        fc.amax(e, 1)
    with pytest.raises(IndexError, match=r"^\[cumsum\]"):
        fc.cumsum(e, 2)


# ---- sort and topk ----

SORT_CALLS = {
    "sort": ("sort", (), {}),
    "sort dim 0 descending": ("sort", (0, True), {}),
    "sort bad dim": ("sort", (3,), {}),
    "topk": ("topk", (1,), {}),
    "topk dim 0": ("topk", (2, 0), {}),
    "topk k 0": ("topk", (0,), {}),
    "topk k too large": ("topk", (5,), {}),
    "topk negative k": ("topk", (-1,), {}),
    "topk bad dim": ("topk", (1, 2), {}),
}


@pytest.mark.parametrize("call", list(SORT_CALLS))
@pytest.mark.parametrize("dtype", DTYPES)
def test_sort_and_topk(call, dtype):
    name, args, kwargs = SORT_CALLS[call]
    for shape in [(), (0,), (3, 4), (2, 0)]:
        meta, cpu = meta_and_cpu(lambda x: getattr(fc, name)(x, *args, **kwargs), cpu_tensor(shape, dtype))
        assert agree(meta, cpu), (call, dtype, shape, meta, cpu)
        check_torch(lambda x: tuple(getattr(torch, name)(x, *args, **kwargs)), cpu, torch.ones(shape, dtype=TH[dtype]))


# ---- softmax rows (the _softmax/_log_softmax kernels and their backwards) ----


@pytest.mark.parametrize("name", ["_softmax", "_log_softmax"])
@pytest.mark.parametrize("dtype", ["int64", "bool", "float16", "float32", "float64"])
def test_softmax(name, dtype):
    for shape, dim in [((3, 4), 1), ((3, 4), -2), ((), 0), ((0, 2), 0), ((3, 4), 2)]:
        meta, cpu = meta_and_cpu(lambda x: getattr(_C, name)(x, dim), cpu_tensor(shape, dtype))  # noqa: B023
        assert meta == cpu, (name, dtype, shape, dim, meta, cpu)
        check_torch(lambda x: getattr(torch, name)(x, dim, False), cpu, torch.empty(shape, dtype=TH[dtype]))  # noqa: B023
    if dtype == "int64":
        assert cpu[0] == "error" and cpu[2].startswith(f"[{name[1:]}] needs a floating point tensor, got dtype int64")


@pytest.mark.parametrize("name", ["_softmax_backward_data", "_log_softmax_backward_data"])
@pytest.mark.parametrize(("dg", "dy"), [("float32", "float32"), ("float64", "float64"), ("float32", "float64"),
                                        ("int64", "int64")])  # fmt: skip
def test_softmax_backward(name, dg, dy):
    for sg, sy, dim in [((3, 4), (3, 4), 1), ((3, 4), (3, 4), -1), ((3,), (3, 4), 0), ((3, 4), (3, 4), 3)]:
        meta, cpu = meta_and_cpu(lambda g, y: getattr(_C, name)(g, y, dim), cpu_tensor(sg, dg), cpu_tensor(sy, dy))  # noqa: B023
        assert meta == cpu, (name, dg, dy, sg, sy, meta, cpu)
        if cpu[0] == "ok":
            theirs = getattr(torch, name)(torch.empty(sg, dtype=TH[dg], device="meta"),
                                          torch.empty(sy, dtype=TH[dy], device="meta"), dim, TH[dy])  # fmt: skip
            assert ("ok", (tuple(theirs.shape), str(theirs.dtype)[6:])) == cpu
