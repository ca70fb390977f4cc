"""add, sub, mul and div of a float16 / bfloat16 tensor and a number (or a 0-dim tensor), both orders, in
place and on views, against PyTorch 2.13 bit for bit over every 16-bit value: mul and div read the number in
float32 and round once, add and sub round it to the 16-bit dtype first, ``number / x`` is
``x.reciprocal() * number`` (so float32 and integer tensors too)."""

from __future__ import annotations

import flambeau_core as fc
import numpy as np
import pytest
import torch
from helpers import run_with_capability

DTYPES = ["float16", "bfloat16"]
# Not exact in bfloat16 (0.7, 257, 1/3, 1e-3, 65504, 2049, 0.1) or special (inf, -0.0, an int).
NUMBERS = [0.7, 257.0, 1 / 3, 1e-3, 65504.0, float("inf"), -0.0, 2049.0, 0.1, -3]
OPS = {
    "add": lambda x, s: x + s,
    "radd": lambda x, s: s + x,
    "sub": lambda x, s: x - s,
    "rsub": lambda x, s: s - x,
    "mul": lambda x, s: x * s,
    "rmul": lambda x, s: s * x,
    "div": lambda x, s: x / s,
    "rdiv": lambda x, s: s / x,
}
INPLACE = ["add_", "sub_", "mul_", "div_"]


def every_value(dtype: str) -> torch.Tensor:
    """Every 16-bit pattern of dtype but NaNs (65,536 less the NaNs: not a multiple of 16, so the vector
    loops' tails run too)."""
    x = torch.arange(-(1 << 15), 1 << 15, dtype=torch.int32).to(torch.int16).view(getattr(torch, dtype))
    return x[~torch.isnan(x.float())]


def ours(t: torch.Tensor) -> fc.Tensor:
    """t's bits as a flambeau tensor of t's dtype (a copy)."""
    dtype = str(t.dtype).removeprefix("torch.")
    if t.element_size() == 2:
        return fc.tensor(t.contiguous().view(torch.int16).numpy()).view(getattr(fc, dtype)).reshape(t.shape)
    return fc.tensor(t.numpy())


def bits(x) -> np.ndarray:
    """The bit patterns of a flambeau or torch tensor (NaN payloads aside: NaNs all read the same)."""
    if isinstance(x, torch.Tensor):
        a = x.contiguous().numpy() if x.element_size() != 2 else x.contiguous().view(torch.int16).numpy()
    else:
        x = x.contiguous()
        a = np.array(memoryview(x.view(fc.int16) if x.element_size() == 2 else x))
    a = a.view({2: np.int16, 4: np.int32, 8: np.int64}[a.itemsize])
    wide = x.float() if isinstance(x, torch.Tensor) else x.to(fc.float32)
    nan = np.isnan(wide.numpy() if isinstance(wide, torch.Tensor) else np.array(memoryview(wide.contiguous())))
    return np.where(nan.reshape(a.shape), -1, a)


def assert_bits(got: fc.Tensor, expected: torch.Tensor) -> None:
    assert str(got.dtype).removeprefix("flambeau.") == str(expected.dtype).removeprefix("torch.")
    assert tuple(got.shape) == tuple(expected.shape)
    b, e = bits(got), bits(expected)
    bad = np.flatnonzero(b != e)
    assert bad.size == 0, f"{bad.size} elements differ, first at {bad[0]}: {b.flat[bad[0]]} != {e.flat[bad[0]]}"


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("op", list(OPS))
def test_every_value_with_a_number(dtype, op):
    t = every_value(dtype)
    x = ours(t)
    for s in NUMBERS:
        assert_bits(OPS[op](x, s), OPS[op](t, s))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("method", INPLACE)
def test_in_place(dtype, method):
    t = every_value(dtype)
    for s in NUMBERS:
        u, y = t.clone(), ours(t)
        getattr(u, method)(s)
        assert getattr(y, method)(s) is y
        assert_bits(y, u)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("op", list(OPS))
@pytest.mark.parametrize("zero_dim", ["float32", "float64", "same", "int64"])
def test_0dim_tensor_operand(dtype, op, zero_dim):
    # torch promotes as with a number (the 16-bit dtype wins) but reads the 0-dim tensor's own value: a float32
    # or float64 0.7 is float32(0.7) for mul and div, bfloat16(0.7) for add and sub; as first operand of mul or
    # div (a tensor, not a reflected number) it is rounded to the 16-bit dtype first.
    t = every_value(dtype)
    x = ours(t)
    zdt = dtype if zero_dim == "same" else zero_dim
    for s in NUMBERS:
        v = int(s) if zero_dim == "int64" and s != float("inf") else s
        if zero_dim == "int64" and s == float("inf"):
            continue
        z = torch.tensor(v, dtype=getattr(torch, zdt))
        assert_bits(OPS[op](x, ours(z)), OPS[op](t, z))


@pytest.mark.parametrize("dtype", DTYPES)
def test_views_and_out(dtype):
    torch.manual_seed(0)
    t = (torch.randn(37, 53) * 40).to(getattr(torch, dtype))
    x = ours(t)
    for s in NUMBERS:
        assert_bits(x.t() * s, t.t() * s)  # strided: the blocked loop
        assert_bits(x[:, ::2] / s, t[:, ::2] / s)
        assert_bits(s / x[:, ::3], s / t[:, ::3])
        out, expected = fc.empty(37, 53), torch.empty(37, 53)  # computed in the 16-bit dtype, then widened
        assert_bits(fc.div(x, s, out=out), torch.div(t, s, out=expected))
        u, y = t.clone(), ours(t)
        u.t().mul_(s)
        y.t().mul_(s)
        assert_bits(y, u)
    assert_bits(x * True, t * True)
    assert_bits(x / True, t / True)
    i = torch.arange(-300, 300, 7)
    for s in NUMBERS:  # an integer tensor and a 0-dim 16-bit one: computed in the 16-bit dtype
        z = torch.tensor(s, dtype=getattr(torch, dtype))
        assert_bits(ours(i) * ours(z), i * z)
        assert_bits(ours(i) / ours(z), i / z)


@pytest.mark.parametrize("dtype", ["float32", "float64", "int64", "uint8", "bool"])
def test_reflected_division_is_reciprocal_times_number(dtype):
    # torch's Tensor.__rtruediv__ is self.reciprocal() * other: two roundings in float32, not div(other, self).
    t = torch.tensor([0.5, 3.0, 7.0, -3.0, 0.0, 1e-3, 65504.0, 1 / 3]) * 37
    t = t.to(getattr(torch, dtype))
    x = ours(t)
    for s in NUMBERS:
        assert_bits(s / x, s / t)
        assert_bits(x.__rdiv__(s), t.__rdiv__(s))
    got, expected = 2j / x, 2j / t
    assert str(got.dtype).removeprefix("flambeau.") == str(expected.dtype).removeprefix("torch.")
    np.testing.assert_array_equal(np.array(got.tolist()), expected.numpy())


def test_reflected_division_refuses_what_mul_refuses():
    for other in ["a", None, object()]:
        with pytest.raises(TypeError, match="unsupported operand type"):
            other / fc.ones(2)
    assert (np.float32(3) / fc.tensor([2.0, 4.0])).tolist() == [1.5, 0.75]


@pytest.mark.parametrize("cap", ["avx2", "base"])
def test_without_avx512(cap):
    # Without AVX-512 the 16-bit loops convert blocks around the float32 loop: the same bits.
    script = """
import sys; sys.path.insert(0, {here!r})
import torch, flambeau_core as fc
from test_half_binary_number import NUMBERS, OPS, assert_bits, every_value, ours
for dtype in ("float16", "bfloat16"):
    t = every_value(dtype)
    x = ours(t)
    for s in NUMBERS:
        for op in ("mul", "rmul", "div", "rdiv", "add", "rsub"):
            assert_bits(OPS[op](x, s), OPS[op](t, s))
print(fc._C._cpu_capability())
"""
    run_with_capability(cap, script)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("name", ["mul", "multiply", "add", "sub", "subtract", "div", "true_divide"])
def test_function_form_with_the_number_first(dtype, name):
    # torch.mul(0.7, x) rounds 0.7 to x's dtype first (the number is the first operand, which torch's kernels
    # never read in float32), unlike x * 0.7 and 0.7 * x (torch's __rmul__ is mul(x, 0.7)).
    t = every_value(dtype)
    x = ours(t)
    for s in NUMBERS:
        assert_bits(getattr(fc, name)(s, x), getattr(torch, name)(s, t))
        assert_bits(getattr(fc, name)(x, s), getattr(torch, name)(t, s))
    if name == "mul":
        bf = torch.tensor(0.7).to(getattr(torch, dtype)).item()
        assert_bits(fc.mul(0.7, x), t * bf)  # what torch's rounding means
        assert_bits(0.7 * x, t * 0.7)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("alpha", [0.7, -0.1, 3.0, 1 / 3, -2049.0])
def test_add_and_sub_with_alpha_read_in_the_dtype(dtype, alpha):
    # PyTorch reads alpha in the operands' dtype (bfloat16(0.7)) and adds a + alpha * b in one float32
    # rounding (its vectorized loops' fused multiply-add), then rounds to the dtype: the oracle computes
    # that exactly in float64 (normal values: the sum is exact there) and rounds twice as the kernel does.
    rng = np.random.default_rng(7)
    n = 40_000 + 13  # not a multiple of 16: the vector loops' tails too
    a, b = (torch.tensor(rng.standard_normal(n).astype(np.float32)).to(getattr(torch, dtype)) for _ in range(2))
    al = torch.tensor(alpha).to(getattr(torch, dtype)).double().item()
    for name, sign in (("add", 1.0), ("sub", -1.0)):
        exact = a.double() + sign * al * b.double()
        expected = exact.float().to(getattr(torch, dtype))
        x, y = ours(a), ours(b)
        assert_bits(getattr(fc, name)(x, y, alpha=alpha), expected)
        assert_bits(getattr(x.clone(), name + "_")(y, alpha=alpha), expected)
    # a float32 operand: computed in float32 with alpha as given, as torch
    wide = torch.tensor(rng.standard_normal(n).astype(np.float32))
    assert_bits(fc.add(ours(a), ours(wide), alpha=alpha), torch.add(a, wide, alpha=alpha))
