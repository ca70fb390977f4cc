"""clamp, nan_to_num, sum, mean, mul/div by a number and constant pad on float16 / bfloat16 against PyTorch 2.13:
result dtypes, values (bit-exact where torch's result is exactly rounded, else within one ulp of the
16-bit dtype), the in-place forms and the gradients."""

from __future__ import annotations

import flambeau_core as fc
import numpy as np
import pytest
import torch
from helpers import ordered

DTYPES = ["float16", "bfloat16"]


def fc_from(t: torch.Tensor, requires_grad: bool = False) -> fc.Tensor:
    """The flambeau tensor with t's values and dtype (a leaf that requires grad if asked)."""
    x = fc.tensor(t.detach().float().numpy()).to(getattr(fc, str(t.dtype).removeprefix("torch.")))
    return x.requires_grad_(True) if requires_grad else x


def needs_autograd() -> None:
    pytest.importorskip("flambeau_autograd", reason="gradients need flambeau-autograd")


def as_f32(x) -> np.ndarray:
    """Values of a flambeau or torch tensor as float32 NumPy (16-bit values are exact in it)."""
    if isinstance(x, torch.Tensor):
        return x.detach().float().numpy()
    return np.array(memoryview(x.to(fc.float32).contiguous()))


def assert_same(ours: fc.Tensor, theirs: torch.Tensor) -> None:
    """Same shape, dtype and bits (NaN where torch has NaN)."""
    assert tuple(ours.shape) == tuple(theirs.shape)
    assert str(ours.dtype).removeprefix("flambeau.") == str(theirs.dtype).removeprefix("torch.")
    np.testing.assert_array_equal(as_f32(ours), as_f32(theirs))


def assert_within_ulp(ours: fc.Tensor, theirs: torch.Tensor) -> None:
    """Same shape and 16-bit dtype, values at most one ulp apart."""
    dtype = str(theirs.dtype).removeprefix("torch.")
    assert tuple(ours.shape) == tuple(theirs.shape)
    assert str(ours.dtype).removeprefix("flambeau.") == dtype
    diff = np.abs(ordered(as_f32(ours), dtype) - ordered(as_f32(theirs), dtype))
    assert diff.max(initial=0) <= 1, (as_f32(ours), as_f32(theirs))


def sample(dtype: str, shape=(6, 37), seed=0) -> torch.Tensor:
    g = torch.Generator().manual_seed(seed)
    t = (torch.randn(shape, generator=g) * 3).to(getattr(torch, dtype))
    flat = t.view(-1)
    flat[:4] = torch.tensor([float("nan"), float("inf"), -float("inf"), 0.0])
    return t


# ---- clamp ----


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(
    "lo, hi",
    [(-1, 1), (-0.3, 0.7), (None, 0.1), (-1 / 3, None), (2.0, -2.0), (float("nan"), 1.0), (0, float("inf"))],
)
def test_clamp_number_bounds(dtype, lo, hi):
    t = sample(dtype)
    x = fc_from(t)
    assert_same(x.clamp(lo, hi), t.clamp(lo, hi))
    assert_same(fc.clip(x, lo, hi), torch.clip(t, lo, hi))
    y, u = x.clone(), t.clone()
    assert y.clamp_(lo, hi) is y
    u.clamp_(lo, hi)
    assert_same(y, u)
    out = fc.empty(tuple(t.shape), dtype=x.dtype)
    fc.clamp(x, lo, hi, out=out)
    assert_same(out, t.clamp(lo, hi))
    for name, bound in [("clamp_min", lo), ("clamp_max", hi)]:
        if bound is None:
            continue
        assert_same(getattr(x, name)(bound), getattr(t, name)(bound))
        y, u = x.clone(), t.clone()
        getattr(y, name + "_")(bound)
        getattr(u, name + "_")(bound)
        assert_same(y, u)


@pytest.mark.parametrize("dtype", DTYPES)
def test_clamp_tensor_bounds(dtype):
    t = sample(dtype)
    lo = sample(dtype, seed=1)[:1] - 1  # broadcast over the rows
    hi = sample(dtype, seed=2) + 1
    x, flo, fhi = fc_from(t), fc_from(lo), fc_from(hi)
    assert_same(x.clamp(flo, fhi), t.clamp(lo, hi))
    assert_same(x.clamp_min(flo), t.clamp_min(lo))
    assert_same(x.clamp_max(fhi), t.clamp_max(hi))
    y, u = x.clone(), t.clone()
    y.clamp_(flo, fhi)
    u.clamp_(lo, hi)
    assert_same(y, u)
    y, u = x.clone(), t.clone()
    y.clamp_min_(flo)
    u.clamp_min_(lo)
    assert_same(y, u)
    # A 0-dim float32 bound does not promote the 16-bit tensor; a 1-dim one does.
    assert_same(x.clamp(fc.tensor(-0.5), fc.tensor(0.5)), t.clamp(torch.tensor(-0.5), torch.tensor(0.5)))
    assert_same(x.clamp(fc.tensor([-0.5])), t.clamp(torch.tensor([-0.5])))


@pytest.mark.parametrize("dtype", DTYPES)
def test_clamp_gradients(dtype):
    needs_autograd()
    # No ties between input and a bound (the tensor-bound form splits ties, torch gives them to input).
    t = torch.tensor([-3.0, -0.25, 0.0, 0.5, 2.0, 5.0]).to(getattr(torch, dtype))
    lo_t = torch.tensor([-1.0, -1.0, 0.5, -1.0, -1.0, 0.0]).to(t.dtype)
    w = torch.tensor([1.0, 2.0, 3.0, 4.0, 5.0, 6.0]).to(t.dtype)
    tx = t.clone().requires_grad_(True)
    tlo = lo_t.clone().requires_grad_(True)
    (torch.clamp(tx, -1, 1.5) * w).sum().backward()
    x = fc_from(t, requires_grad=True)
    (fc.clamp(x, -1, 1.5) * fc_from(w)).sum().backward()
    assert_same(x.grad, tx.grad)
    tx.grad = None
    (torch.clamp(tx, tlo, None) * w).sum().backward()
    x.grad = None
    flo = fc_from(lo_t, requires_grad=True)
    (fc.clamp(x, flo, None) * fc_from(w)).sum().backward()
    assert_same(x.grad, tx.grad)
    assert_same(flo.grad, tlo.grad)


# ---- nan_to_num ----


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(
    "nan, posinf, neginf", [(0.0, None, None), (1 / 3, 100.0, -0.1), (None, 1e39, None), (-2.0, None, 70000.0)]
)
def test_nan_to_num(dtype, nan, posinf, neginf):
    # the defaults are the dtype's largest finite values (65504 in float16, ~3.39e38 in bfloat16)
    t = sample(dtype)
    x = fc_from(t)
    kw = {"posinf": posinf, "neginf": neginf} | ({} if nan is None else {"nan": nan})
    assert_same(x.nan_to_num(**kw), t.nan_to_num(**kw))
    y, u = x.clone(), t.clone()
    y.nan_to_num_(**kw)
    u.nan_to_num_(**kw)
    assert_same(y, u)
    needs_autograd()
    tx = t.clone().requires_grad_(True)
    (tx.nan_to_num(**kw) * 3).sum().backward()
    fx = fc_from(t, requires_grad=True)
    (fx.nan_to_num(**kw) * 3).sum().backward()
    assert_same(fx.grad, tx.grad)


# ---- sum ----


@pytest.mark.parametrize("dtype", DTYPES)
def test_sum_accumulates_in_float32(dtype):
    # 1 + 4096 small terms: summed in the 16-bit dtype each term would be lost.
    t = torch.full((64, 64), 2.0**-9, dtype=getattr(torch, dtype))
    t[0, 0] = 1.0
    x = fc_from(t)
    assert_within_ulp(x.sum(), t.sum())
    for dim in [0, 1, (0, 1), -1]:
        assert_within_ulp(x.sum(dim), t.sum(dim))
        assert_within_ulp(x.sum(dim, keepdim=True), t.sum(dim, keepdim=True))
        assert_within_ulp(x.mean(dim), t.mean(dim))
    assert_within_ulp(x.t().sum(1), t.t().sum(1))
    r = x.sum(0, dtype=fc.float32)
    assert r.dtype == fc.float32
    np.testing.assert_allclose(as_f32(r), t.sum(0, dtype=torch.float32).numpy(), rtol=1e-6)


@pytest.mark.parametrize("dtype", DTYPES)
def test_sum_into_16_bit_dtype(dtype):
    # torch reads a float32 or integer input in the requested 16-bit dtype, then sums it.
    g = torch.Generator().manual_seed(3)
    t = torch.randn(33, 50, generator=g)
    d = getattr(torch, dtype)
    assert_within_ulp(fc.tensor(t.numpy()).sum(dtype=getattr(fc, dtype)), t.sum(dtype=d))
    assert_within_ulp(fc.tensor(t.numpy()).sum(1, dtype=getattr(fc, dtype)), t.sum(1, dtype=d))
    i = torch.arange(-40, 60).reshape(10, 10)
    assert_within_ulp(fc.tensor(i.numpy()).sum(0, dtype=getattr(fc, dtype)), i.sum(0, dtype=d))
    # 2049 is not a float16 (nor bfloat16) value: each element is rounded before the sum, as torch.
    big = torch.full((4,), 2049.0)
    assert_within_ulp(fc.tensor(big.numpy()).sum(dtype=getattr(fc, dtype)), big.sum(dtype=d))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("n", [3, 257, 2049])
def test_mean_divides_by_the_exact_count(dtype, n):
    # 257 (2049) is not a bfloat16 (float16) value: torch divides by it in float32, not by 256 (2048).
    t = torch.zeros(n, 2, dtype=getattr(torch, dtype))
    t[0] = torch.tensor([1.0, 3.0])
    x = fc_from(t)
    assert_same(x.mean(0), t.mean(0))
    assert_same(x.mean(), t.mean())
    assert_same(fc.tensor(t.float().numpy()).mean(0, dtype=x.dtype), t.float().mean(0, dtype=t.dtype))
    needs_autograd()
    tx = t.clone().requires_grad_(True)
    tx.mean(0).sum().backward()
    fx = fc_from(t, requires_grad=True)
    fx.mean(0).sum().backward()
    assert_same(fx.grad, tx.grad)


@pytest.mark.parametrize("dtype", DTYPES)
def test_sum_gradient(dtype):
    needs_autograd()
    t = sample(dtype, (3, 5)).nan_to_num(0.0, 1.0, -1.0).requires_grad_(True)
    t.sum(1).mul(torch.arange(3.0).to(t.dtype)).sum().backward()
    x = fc_from(t, requires_grad=True)
    x.sum(1).mul(fc.arange(3.0).to(x.dtype)).sum().backward()
    assert_same(x.grad, t.grad)


# ---- mul and div by a number ----


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("s", [257.0, 2049.0, 1 / 3, 0.1, -0.0, float("inf"), -3, 1e-40, True])
def test_mul_div_read_the_number_in_float32(dtype, s):
    # torch does not round the number to the 16-bit dtype first (257 -> 256 in bfloat16): it multiplies
    # or divides in float32 and rounds once; a 0-dim tensor is read so as the second operand.
    t = sample(dtype, (4, 33)) * 50
    x = fc_from(t)
    assert_same(x * s, t * s)
    assert_same(s * x, s * t)
    assert_same(x / s, t / s)
    assert_same(x * fc.tensor(s), t * torch.tensor(s))
    assert_same(x / fc.tensor(s), t / torch.tensor(s))
    assert_same(fc.tensor(s) * x, torch.tensor(s) * t)  # not a Python number: rounded first, as torch
    y, u = x.clone(), t.clone()
    y *= s
    u *= s
    assert_same(y, u)
    y, u = x.clone(), t.clone()
    y /= s
    u /= s
    assert_same(y, u)


# ---- constant pad ----


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("pad", [(1, 2), (0, 0, 2, 1), (-1, 3, 1, -2)])
@pytest.mark.parametrize("value", [0.0, 1 / 3, -70000.0])
def test_constant_pad(dtype, pad, value):
    t = sample(dtype, (2, 5, 7))
    x = fc_from(t)
    if value < -65504 and dtype == "float16":  # not a float16 value: an overflow error, as torch's
        with pytest.raises(RuntimeError, match="without overflow"):
            torch.constant_pad_nd(t, pad, value)
        with pytest.raises(RuntimeError, match=r"\[pad\] value -70000.0 cannot be converted to type float16 without"):
            fc._C._pad_nd(x, list(pad), "constant", value)
        return
    assert_same(fc._C._pad_nd(x, list(pad), "constant", value), torch.constant_pad_nd(t, pad, value))
    needs_autograd()
    tx = t.clone().nan_to_num(0.0, 1.0, -1.0).requires_grad_(True)
    w = torch.arange(float(torch.constant_pad_nd(tx, pad).numel())).reshape(torch.constant_pad_nd(tx, pad).shape)
    (torch.constant_pad_nd(tx, pad, value) * w.to(t.dtype)).sum().backward()
    fx = fc_from(tx, requires_grad=True)
    (fc._C._pad_nd(fx, list(pad), "constant", value) * fc_from(w.to(t.dtype))).sum().backward()
    assert_same(fx.grad, tx.grad)


@pytest.mark.parametrize("dtype", DTYPES)
def test_reflect_and_replicate_pad_forward(dtype):
    t = sample(dtype, (2, 3, 6))
    x = fc_from(t)
    for mode in ["reflect", "replicate", "circular"]:
        assert_same(fc._C._pad_nd(x, [2, 1], mode, 0.0), torch.nn.functional.pad(t, (2, 1), mode=mode))
