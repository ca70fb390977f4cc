"""The values-only sort: ``_C._sort_values`` and the
paths that use it (``array_api.sort``, ``msort``) against the existing
``sort(...).values`` (bit for bit: -0.0/+0.0 order, NaN payloads), NumPy and
PyTorch, for every dtype sort takes, descending, odd row lengths, non-contiguous
inputs, every dim and 0-d tensors; and its errors."""

from __future__ import annotations

import struct

import flambeau_core as fc
import numpy as np
import pytest
import torch
from flambeau_core import _C
from flambeau_core import array_api as xp
from helpers import make_tensor
from test_kernel_trace import trace

pytestmark = pytest.mark.on_devices(types=("cpu",))  # _sort_values: a CPU kernel only

# Every dtype sort takes (kDtReal): name -> (flambeau dtype, torch dtype).
DTYPES = {
    "bool": (fc.bool, torch.bool),
    "uint8": (fc.uint8, torch.uint8),
    "int8": (fc.int8, torch.int8),
    "int16": (fc.int16, torch.int16),
    "int32": (fc.int32, torch.int32),
    "int64": (fc.int64, torch.int64),
    "uint16": (fc.uint16, torch.uint16),
    "uint32": (fc.uint32, torch.uint32),
    "uint64": (fc.uint64, torch.uint64),
    "float16": (fc.float16, torch.float16),
    "bfloat16": (fc.bfloat16, torch.bfloat16),
    "float32": (fc.float32, torch.float32),
    "float64": (fc.float64, torch.float64),
}
FLOATS = ("float16", "bfloat16", "float32", "float64")
LENGTHS = (0, 1, 2, 31, 32, 33, 1000, 1001)


def raw(t):
    """t's bytes in row-major order (the exact bits, -0.0 and NaN payloads included)."""
    if t.numel() == 0:
        return b""
    if t.dtype == fc.bfloat16:  # no buffer format: widened exactly (the 16 bits then zeros)
        t = t.to(fc.float32)
    return bytes(memoryview(t.contiguous().reshape(-1)).cast("B"))


def same_bits(a, b):
    assert tuple(a.shape) == tuple(b.shape) and a.dtype == b.dtype
    assert raw(a) == raw(b)


def source(shape, name, seed=0, *, specials=True):
    """float64 values with ties (and, for float dtypes, +-0.0, +-inf, NaN), converted to `name`."""
    rng = np.random.default_rng(seed)
    if name == "bool":
        return fc.tensor(rng.random(shape) < 0.5)
    if name in FLOATS:
        a = np.round(rng.standard_normal(shape) * 8) / 4  # ties
        if specials and a.size:
            flat = a.reshape(-1)
            k = rng.integers(0, flat.size, size=max(1, flat.size // 5))
            flat[k] = rng.choice([0.0, -0.0, np.inf, -np.inf, np.nan, -np.nan], size=k.size)
    else:
        lo = 0 if name.startswith("uint") else -100
        a = rng.integers(lo, 100, size=shape)
        if name.startswith("uint") and name != "uint8":
            a = a + (1 << 14)  # more than one key byte
    return fc.tensor(a, dtype=fc.float64 if name in FLOATS else fc.int64).to(DTYPES[name][0])


def to_torch(t):
    if t.dtype == fc.bfloat16:
        return torch.tensor(t.to(fc.float32).tolist(), dtype=torch.float32).to(torch.bfloat16).reshape(tuple(t.shape))
    return torch.tensor(t.tolist(), dtype=DTYPES[str(t.dtype).split(".")[-1]][1]).reshape(tuple(t.shape))


@pytest.mark.parametrize("name", list(DTYPES))
@pytest.mark.parametrize("n", LENGTHS)
def test_values_equal_sort_values_bitwise(name, n):
    x = source((3, n), name, seed=n)
    for desc in (False, True):
        same_bits(_C._sort_values(x, -1, desc), x.sort(-1, desc).values)
        same_bits(_C._sort_values(x, 1, desc), fc.sort(x, dim=1, descending=desc, stable=True).values)
    one = source((n,), name, seed=n + 1)
    same_bits(_C._sort_values(one, 0, False), one.sort().values)
    same_bits(_C._sort_values(one, 0, True), one.sort(descending=True).values)


@pytest.mark.parametrize("name", list(DTYPES))
def test_matches_torch_sort_values(name):
    x = source((4, 257), name, seed=3)
    t = to_torch(x)
    for desc in (False, True):
        got = to_torch(_C._sort_values(x, -1, desc))
        want = torch.sort(t, dim=-1, descending=desc, stable=True).values
        assert torch.equal(torch.nan_to_num(got.double(), nan=7e9), torch.nan_to_num(want.double(), nan=7e9))


@pytest.mark.parametrize("np_dtype", [np.float32, np.float64, np.int8, np.int16, np.int32, np.int64, np.uint8])
@pytest.mark.parametrize("n", LENGTHS)
def test_matches_np_sort(np_dtype, n):
    rng = np.random.default_rng(n)
    if np.issubdtype(np_dtype, np.floating):
        a = (rng.standard_normal((5, n)) * 100).astype(np_dtype)
        if a.size:
            a.reshape(-1)[:: max(1, a.size // 7)] = np.nan
            a.reshape(-1)[1 :: max(1, a.size // 5)] = -np.inf
    else:
        a = rng.integers(0 if np_dtype == np.uint8 else -120, 120, size=(5, n)).astype(np_dtype)
    x = fc.tensor(a)
    np.testing.assert_array_equal(np.array(memoryview(_C._sort_values(x, -1, False))), np.sort(a, axis=-1))
    np.testing.assert_array_equal(np.array(memoryview(xp.sort(x))), np.sort(a, axis=-1))
    np.testing.assert_array_equal(np.array(memoryview(fc.msort(x))), np.sort(a, axis=0))


@pytest.mark.parametrize("dtype", [fc.float16, fc.bfloat16, fc.float32, fc.float64])
def test_signed_zeros_and_nan_payloads_keep_their_order(dtype):
    # -0.0 and +0.0 are equal (stable: input order kept); NaNs are the largest, in input order, bits kept.
    vals = [0.0, -0.0, 1.0, -0.0, float("nan"), 0.0, -1.0, float("-nan"), -0.0, float("inf"), -float("inf")]
    for n in (len(vals), 40, 1001):  # insertion sort and radix passes
        x = fc.tensor((vals * (n // len(vals) + 1))[:n], dtype=fc.float64).to(dtype)
        for desc in (False, True):
            v = _C._sort_values(x, 0, desc)
            same_bits(v, x.sort(0, desc).values)
            same_bits(xp.sort(x, descending=desc), v)


def test_float32_zero_and_nan_bits_exact():
    bits = [0x80000000, 0x00000000, 0x7FC00001, 0xFFC00002, 0x3F800000, 0x80000000, 0x7F800001, 0xBF800000]
    x = fc.tensor(np.frombuffer(struct.pack("<8I", *bits), dtype=np.float32).copy())
    asc = np.array(memoryview(_C._sort_values(x, 0, False))).view(np.uint32).tolist()
    assert asc == [0xBF800000, 0x80000000, 0x00000000, 0x80000000, 0x3F800000, 0x7FC00001, 0xFFC00002, 0x7F800001]
    desc = np.array(memoryview(_C._sort_values(x, 0, True))).view(np.uint32).tolist()
    assert desc == [0x7FC00001, 0xFFC00002, 0x7F800001, 0x3F800000, 0x80000000, 0x00000000, 0x80000000, 0xBF800000]


@pytest.mark.parametrize("layout", ["contiguous", "transposed", "sliced"])
@pytest.mark.parametrize("shape", [(7,), (3, 4), (2, 3, 5), (4, 1, 6), (1, 37), (3, 1001)])
def test_every_dim_and_layout(layout, shape):
    a = np.random.default_rng(1).standard_normal(shape).astype(np.float32)
    x = make_tensor(a, layout)
    for d in range(-len(shape), len(shape)):
        for desc in (False, True):
            same_bits(_C._sort_values(x, d, desc), x.sort(d, desc).values)
            same_bits(xp.sort(x, axis=d, descending=desc), x.sort(d, desc).values)
        want = np.sort(a, axis=d)
        np.testing.assert_array_equal(np.array(memoryview(_C._sort_values(x, d, False))), want)
    same_bits(fc.msort(x), x.sort(0).values)


def test_zero_dim_and_empty():
    s = fc.tensor(2.5)
    for d in (0, -1):
        v = _C._sort_values(s, d, False)
        assert v.shape == () and v.item() == 2.5
    assert xp.sort(s).item() == 2.5
    assert fc.msort(s).item() == 2.5
    for shape in [(0,), (3, 0), (0, 4), (2, 0, 3)]:
        e = fc.empty(*shape)
        for d in range(len(shape)):
            assert tuple(_C._sort_values(e, d, True).shape) == shape


def test_array_api_and_msort_use_the_values_kernel():
    x = fc.randn(4, 50)
    assert ["_sort_values", "cpu", "own"] in trace(lambda: xp.sort(x))
    assert ["_sort_values", "cpu", "own"] in trace(lambda: fc.msort(x))
    # torch semantics: values and indices
    assert ["sort", "cpu", "own"] in trace(lambda: x.sort())
    out = fc.empty(4, 50)
    fc.msort(x, out=out)
    same_bits(out, x.sort(0).values)


def test_errors():
    with pytest.raises(TypeError, match=r"sort.*complex64"):
        _C._sort_values(fc.zeros(3, dtype=fc.complex64), 0, False)
    with pytest.raises(TypeError, match=r"sort.*complex64"):
        xp.sort(fc.zeros(3, dtype=fc.complex64))
    with pytest.raises(IndexError, match=r"sort"):
        _C._sort_values(fc.zeros(2, 3), 2, False)
    with pytest.raises(IndexError, match=r"sort"):
        xp.sort(fc.zeros(2, 3), axis=-3)
