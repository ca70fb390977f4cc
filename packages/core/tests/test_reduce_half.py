"""The reductions and scans on float16 / bfloat16 against PyTorch 2.13 (src/cpu/reduce/reduce_extra.cpp and
scan.cpp, src/composite/reduce_extra.cpp, composite::mean, linalg.vector_norm): var, std and vector_norm in
float32 rounded once; prod multiplying in the 16-bit dtype in order (bit for bit, as PyTorch's CPU product
of a row); mean of a float32 sum (no float16 overflow); cummax/cummin bit for bit with their indices;
logcumsumexp accumulated in float32; their dtypes and gradients."""

from __future__ import annotations

import flambeau_core as fc
import numpy as np
import pytest
import torch
from helpers import assert_same_as_torch, assert_within_ulps, from_torch, to_numpy, torch_values

DTYPES = ["float16", "bfloat16"]


def values(dtype: str, shape, seed: int, scale: float = 3.0, shift: float = 0.0) -> torch.Tensor:
    return torch_values(dtype, shape, seed, scale=scale, shift=shift)


def needs_autograd() -> None:
    pytest.importorskip("flambeau_autograd", reason="gradients need flambeau-autograd")


DIMS = [None, 0, 1, (0, 1)]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("dim", DIMS)
@pytest.mark.parametrize("correction", [0, 1, 2])
@pytest.mark.parametrize("keepdim", [False, True])
@pytest.mark.parametrize("name", ["var", "std"])
def test_var_std(name, keepdim, correction, dim, dtype):
    t = values(dtype, (37, 23), 0, shift=5.0)
    theirs = getattr(torch, name)(t, dim, correction=correction, keepdim=keepdim)
    ours = getattr(fc, name)(from_torch(t), dim, correction=correction, keepdim=keepdim)
    assert_within_ulps(ours, theirs)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", ["var_mean", "std_mean"])
def test_var_std_mean(name, dtype):
    t = values(dtype, (4, 300), 1)
    theirs = getattr(torch, name)(t, 1)
    ours = getattr(fc, name)(from_torch(t), 1)
    assert_within_ulps(ours[0], theirs[0])
    assert_same_as_torch(ours[1], theirs[1])


@pytest.mark.parametrize("dtype", DTYPES)
def test_var_of_one_element_and_empty(dtype):
    for shape in [(1,), (0,)]:
        t = torch.ones(shape, dtype=getattr(torch, dtype))
        assert_within_ulps(fc.var(from_torch(t)), torch.var(t))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", ["var", "std"])
def test_var_std_gradients(name, dtype):
    needs_autograd()
    t = values(dtype, (6, 9), 2)
    g = values(dtype, (6,), 3, scale=1.0)
    tx = t.clone().requires_grad_(True)
    getattr(torch, name)(tx, 1).backward(g)
    x = from_torch(t).requires_grad_(True)
    getattr(fc, name)(x, 1).backward(from_torch(g))
    if name == "var":  # both compose it in the 16-bit dtype
        assert_within_ulps(x.grad, tx.grad, 2)
        return
    # std's gradient is computed in float32 (as its forward): within a unit of the float64 gradient, where
    # PyTorch's 16-bit composition is up to 8 units off.
    xd = t.double().requires_grad_(True)
    torch.std(xd, 1).backward(g.double())
    assert_within_ulps(x.grad, xd.grad.to(t.dtype), 1)
    assert_within_ulps(x.grad, tx.grad, 8)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape,dim", [((40, 7), 1), ((7, 40), 0), ((5, 3, 4), 1), ((6,), 0)])
@pytest.mark.parametrize("keepdim", [False, True])
def test_prod_bits(keepdim, shape, dim, dtype):
    # Factors near 1 keep long products finite; each multiply rounds, so the order matters.
    t = values(dtype, shape, 4, scale=0.3, shift=1.0)
    assert_same_as_torch(fc.prod(from_torch(t), dim, keepdim=keepdim), torch.prod(t, dim, keepdim=keepdim))


@pytest.mark.parametrize("dtype", DTYPES)
def test_prod_all_and_dtype(dtype):
    t = values(dtype, (3, 4), 5, scale=0.3, shift=1.0)
    assert_same_as_torch(fc.prod(from_torch(t)), torch.prod(t))
    # dtype=: the float32 input is rounded to the 16-bit dtype first, as PyTorch reads it in the result's dtype.
    f = torch.from_numpy(np.random.default_rng(6).uniform(0.5, 1.5, (4, 5)).astype(np.float32))
    td = getattr(torch, dtype)
    assert_same_as_torch(fc.prod(from_torch(f), 1, dtype=getattr(fc, dtype)), torch.prod(f, 1, dtype=td))
    special = torch.tensor([[2.0, float("inf"), 0.5], [float("nan"), 1.0, 1.0], [0.0, float("inf"), 1.0]]).to(td)
    assert_same_as_torch(fc.prod(from_torch(special), 1), torch.prod(special, 1))


@pytest.mark.parametrize("dtype", DTYPES)
def test_prod_gradient(dtype):
    needs_autograd()
    t = values(dtype, (4, 5), 7, scale=0.3, shift=1.0)
    tx = t.clone().requires_grad_(True)
    torch.prod(tx, 1).sum().backward()
    x = from_torch(t).requires_grad_(True)
    fc.prod(x, 1).sum().backward()
    assert_within_ulps(x.grad, tx.grad, 2)


def test_float16_mean_sums_in_float32():
    # 100,000 tens sum to 1e6, past float16's largest 65504: PyTorch's mean sums in float32.
    t = torch.full((100_000,), 10.0, dtype=torch.float16)
    assert_same_as_torch(fc.mean(from_torch(t)), torch.mean(t))
    t2 = values("float16", (3, 40_000), 8, shift=30.0)
    assert_same_as_torch(fc.mean(from_torch(t2), 1), torch.mean(t2, 1))


# ---- cummax, cummin, logcumsumexp (src/cpu/reduce/scan.cpp) ----


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("dim", [0, 1])
@pytest.mark.parametrize("name", ["cummax", "cummin"])
def test_cummax_cummin(name, dim, dtype):
    t = values(dtype, (9, 13), 9).mul(2).round()  # ties: the last index wins, as PyTorch
    t.view(-1)[[5, 20]] = torch.tensor([float("nan"), float("inf")]).to(t.dtype)
    ours = getattr(fc, name)(from_torch(t), dim)
    theirs = getattr(torch, name)(t, dim)
    assert_same_as_torch(ours[0], theirs[0])
    np.testing.assert_array_equal(to_numpy(ours[1]), theirs[1].numpy())


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("dim", [0, 1])
def test_logcumsumexp(dim, dtype):
    t = values(dtype, (9, 40), 10)
    t.view(-1)[3] = -float("inf")
    assert_within_ulps(fc.logcumsumexp(from_torch(t), dim), torch.logcumsumexp(t, dim))


@pytest.mark.parametrize("dtype", DTYPES)
def test_scan_gradients(dtype):
    needs_autograd()
    t, g = values(dtype, (5, 8), 11), values(dtype, (5, 8), 12, scale=1.0)
    # logcumsumexp's gradient is a 16-bit composition here and in PyTorch (each 8-15 units from float64's).
    for name, ulps in [("cummax", 0), ("cummin", 0)]:
        tx = t.clone().requires_grad_(True)
        out = getattr(torch, name)(tx, 1)
        out[0].backward(g)
        x = from_torch(t).requires_grad_(True)
        ours = getattr(fc, name)(x, 1)
        ours[0].backward(from_torch(g))
        assert_within_ulps(x.grad, tx.grad, ulps)


# ---- linalg.vector_norm (flambeau_core/_linalg_matrix_functions.py) ----


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("ord", [2, 1, 3, float("inf"), 0.5, 0])
@pytest.mark.parametrize("dim", [None, 1])
def test_vector_norm(dim, ord, dtype):
    # The float32 norm rounded once; PyTorch's float32 accumulation order differs in a rare last unit.
    t = values(dtype, (7, 33), 13)
    ours = fc.linalg.vector_norm(from_torch(t), ord, dim)
    assert_within_ulps(ours, torch.linalg.vector_norm(t, ord, dim))


@pytest.mark.parametrize("dtype", DTYPES)
def test_vector_norm_gradient_and_out(dtype):
    needs_autograd()
    t = values(dtype, (4, 6), 14)
    tx = t.clone().requires_grad_(True)
    torch.linalg.vector_norm(tx, 2, 1).sum().backward()
    x = from_torch(t).requires_grad_(True)
    fc.linalg.vector_norm(x, 2, 1).sum().backward()
    assert_within_ulps(x.grad, tx.grad)
    out = fc.empty(4, dtype=getattr(fc, dtype))
    fc.linalg.vector_norm(from_torch(t), 2, 1, out=out)
    assert_within_ulps(out, torch.linalg.vector_norm(t, 2, 1))
