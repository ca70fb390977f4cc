"""positive, fill, isposinf / isneginf, Tensor.__rdiv__ and scalar_tensor against PyTorch 2.13: values,
dtypes, layouts, out=, and the errors."""

from __future__ import annotations

import math

import flambeau_core as fc
import numpy as np
import pytest
import torch
from helpers import to_numpy

pytestmark = pytest.mark.on_devices

SPECIAL = [1.0, -2.5, math.inf, -math.inf, math.nan, 0.0, -0.0]
DTYPES = [("float32", fc.float32, torch.float32), ("float64", fc.float64, torch.float64)]
INT_DTYPES = [("int64", fc.int64, torch.int64), ("uint8", fc.uint8, torch.uint8), ("bool", fc.bool, torch.bool)]


@pytest.mark.parametrize(("name", "ours", "theirs"), DTYPES + INT_DTYPES[:2])
def test_positive_is_the_input(name, ours, theirs):
    x = fc.ones(2, 3, dtype=ours)
    assert fc.positive(x) is x and x.positive() is x
    t = torch.ones(2, 3, dtype=theirs)
    assert torch.positive(t) is t


def test_positive_of_bool():
    with pytest.raises(RuntimeError, match="on a bool tensor is not supported"):
        torch.positive(torch.tensor([True]))
    with pytest.raises(TypeError, match=r"^\[positive\] the `\+` operator on a bool tensor is not supported"):
        fc.positive(fc.tensor([True]))


@pytest.mark.parametrize(
    ("dtype", "value"),
    [(fc.float32, 2), (fc.float64, -0.5), (fc.int64, 2.7), (fc.bool, 2), (fc.int32, True), (fc.complex64, 1 - 1j)],
)
@pytest.mark.parametrize("layout", ["contiguous", "transposed"])
def test_fill(dtype, value, layout):
    base = fc.zeros(3, 4, dtype=dtype)
    x = base.t() if layout == "transposed" else base
    tdtype = getattr(torch, str(dtype).split(".")[-1])
    tbase = torch.zeros(3, 4, dtype=tdtype)
    t = tbase.t() if layout == "transposed" else tbase
    got, expected = fc.fill(x, value), torch.fill(t, value)
    assert got.dtype == dtype and got.shape == tuple(expected.shape)
    assert got.stride() == expected.stride()
    np.testing.assert_array_equal(to_numpy(got), expected.numpy())
    assert to_numpy(base).sum() == 0  # out of place


def test_fill_with_a_0d_tensor():
    got = fc.fill(fc.zeros(2, 2, dtype=fc.int64), fc.tensor(2.5))
    assert got.tolist() == torch.fill(torch.zeros(2, 2, dtype=torch.int64), torch.tensor(2.5)).tolist()


def test_fill_errors():
    with pytest.raises(RuntimeError, match="only supports 0-dimension value tensor"):
        torch.fill(torch.zeros(2), torch.tensor([2.5]))
    with pytest.raises(fc.FlambeauError, match=r"^\[fill\] only a 0-dim tensor can be a fill value, got shape \(1,\)"):
        fc.fill(fc.zeros(2), fc.tensor([2.5]))
    with pytest.raises(RuntimeError, match="cannot be converted"):
        torch.fill(torch.zeros(2), 1j)
    with pytest.raises(fc.FlambeauError, match=r"^\[fill\] value 1j cannot be converted to type float32"):
        fc.fill(fc.zeros(2), 1j)
    with pytest.raises(TypeError, match=r"^\[fill\] expected a Tensor as 'input', got list"):
        fc.fill([0.0], 1)


@pytest.mark.parametrize("name", ["isposinf", "isneginf"])
@pytest.mark.parametrize(("dtype", "theirs"), [(fc.float32, torch.float32), (fc.float64, torch.float64)])
def test_infinity_tests(name, dtype, theirs):
    got = getattr(fc, name)(fc.tensor(SPECIAL, dtype=dtype))
    expected = getattr(torch, name)(torch.tensor(SPECIAL, dtype=theirs))
    assert got.dtype == fc.bool
    assert got.tolist() == expected.tolist()
    assert getattr(fc.tensor(SPECIAL, dtype=dtype), name)().tolist() == expected.tolist()


@pytest.mark.parametrize("name", ["isposinf", "isneginf"])
@pytest.mark.parametrize(("label", "ours", "theirs"), INT_DTYPES)
def test_infinity_tests_of_integers(name, label, ours, theirs):
    expected = getattr(torch, name)(torch.tensor([0, 1], dtype=theirs))
    assert getattr(fc, name)(fc.tensor([0, 1], dtype=ours)).tolist() == expected.tolist() == [False, False]


@pytest.mark.parametrize("name", ["isposinf", "isneginf"])
def test_infinity_tests_out_and_errors(name):
    out = fc.empty(0, dtype=fc.bool)
    assert getattr(fc, name)(fc.tensor([math.inf, -math.inf]), out=out) is out
    assert out.tolist() == getattr(torch, name)(torch.tensor([math.inf, -math.inf])).tolist()
    with pytest.raises(RuntimeError, match="does not support non-boolean outputs"):
        getattr(torch, name)(torch.ones(2), out=torch.empty(2))
    with pytest.raises(TypeError, match=rf"^\[{name}\] does not support non-boolean outputs, got out= of"):
        getattr(fc, name)(fc.ones(2), out=fc.empty(2))
    with pytest.raises(RuntimeError, match="does not support complex inputs"):
        getattr(torch, name)(torch.tensor([1j]))
    with pytest.raises(TypeError, match=rf"^\[{name}\] does not support complex inputs, got dtype complex64"):
        getattr(fc, name)(fc.tensor([1j]))


@pytest.mark.parametrize(("dtype", "theirs"), [(fc.float32, torch.float32), (fc.int64, torch.int64)])
@pytest.mark.parametrize("other", [2, 0.5, -3])
def test_rdiv(dtype, theirs, other):
    a = [1, 2, 4, 0]
    got = fc.tensor(a, dtype=dtype).__rdiv__(other)
    expected = torch.tensor(a, dtype=theirs).__rdiv__(other)
    assert got.dtype == fc.float32
    np.testing.assert_array_equal(to_numpy(got), expected.numpy())


@pytest.mark.parametrize(
    ("s", "dtype"),
    [(3, None), (3.5, None), (True, None), (3, fc.int64), (3.5, fc.int64), (-1, fc.float64), (1j, fc.complex64)],
)
def test_scalar_tensor(s, dtype):
    tdtype = None if dtype is None else getattr(torch, str(dtype).split(".")[-1])
    expected = torch.scalar_tensor(s, dtype=tdtype)
    got = fc.scalar_tensor(s, dtype=dtype)
    assert got.shape == () and str(got.dtype).split(".")[-1] == str(expected.dtype).split(".")[-1]
    assert got.item() == expected.item()


def test_scalar_tensor_of_a_0d_tensor_and_requires_grad():
    assert fc.scalar_tensor(fc.tensor(3)).tolist() == torch.scalar_tensor(torch.tensor(3)).tolist() == 3.0
    assert fc.scalar_tensor(2, device=fc.zeros(1).device).device == fc.zeros(1).device


def test_scalar_tensor_errors():
    with pytest.raises(TypeError, match="must be Number"):
        torch.scalar_tensor(torch.tensor([3]))
    with pytest.raises(TypeError, match=r"^\[scalar_tensor\] expected a number .* got Tensor"):
        fc.scalar_tensor(fc.tensor([3]))
    with pytest.raises(TypeError, match=r"^\[scalar_tensor\] expected a number .* got str"):
        fc.scalar_tensor("a")
    with pytest.raises(RuntimeError, match="cannot be converted"):
        torch.scalar_tensor(1j)
    with pytest.raises(fc.FlambeauError, match=r"^\[scalar_tensor\] value 1j cannot be converted to type float32"):
        fc.scalar_tensor(1j)
    with pytest.raises(fc.FlambeauError, match=r"^\[scalar_tensor\] .* does not fit in int64"):
        fc.scalar_tensor(2**70, dtype=fc.int64)
