"""Tensor.sum_to_size, diagflat and constant_pad_nd against PyTorch 2.13: values, dtypes, shapes, the
errors, and fuzzed sizes."""

from __future__ import annotations

import flambeau_core as fc
import numpy as np
import pytest
import torch
from helpers import same_as_torch_or_refused, to_numpy

pytestmark = pytest.mark.on_devices

A = np.random.default_rng(5).standard_normal((2, 3, 4)).astype(np.float64)


@pytest.mark.parametrize(
    "size", [(2, 3, 4), (1, 3, 4), (3, 4), (3, 1), (1, 1, 1), (4,), (1,), ((),), ((2, 1, 4),), ([1, 4],)]
)
def test_sum_to_size(size):
    expected = torch.from_numpy(A).sum_to_size(*size)
    got = fc.tensor(A).sum_to_size(*size)
    assert got.shape == tuple(expected.shape)
    np.testing.assert_allclose(to_numpy(got), expected.numpy(), rtol=1e-12)


def test_sum_to_size_of_its_own_shape_is_the_tensor():
    x = fc.tensor(A)
    assert x.sum_to_size(2, 3, 4) is x
    assert x.sum_to_size((2, 3, 4)) is x


@pytest.mark.parametrize("size", [(2, 4), (1, 1, 3, 4), (2, 3, 5), (3, 3, 4)])
def test_sum_to_size_errors(size):
    with pytest.raises(RuntimeError, match="is not expandable"):
        torch.from_numpy(A).sum_to_size(*size)
    with pytest.raises(fc.FlambeauError, match=r"^\[sum_to_size\] size .* is not expandable to the tensor's shape"):
        fc.tensor(A).sum_to_size(*size)


def test_sum_to_size_argument_errors():
    with pytest.raises(TypeError, match=r"^\[sum_to_size\] missing the size argument"):
        fc.tensor(A).sum_to_size()
    with pytest.raises(TypeError, match=r"^\[sum_to_size\] expected a size of ints, got float at position 1"):
        fc.tensor(A).sum_to_size(3, 4.0)


@pytest.mark.parametrize("shape", [(), (0,), (3,), (2, 2), (2, 1, 3)])
@pytest.mark.parametrize("offset", [0, 1, -2, 5])
def test_diagflat(shape, offset):
    a = np.arange(1, int(np.prod(shape)) + 1, dtype=np.int64).reshape(shape)
    expected = torch.diagflat(torch.from_numpy(a), offset)
    got = fc.diagflat(fc.tensor(a), offset)
    assert got.shape == tuple(expected.shape) and got.dtype == fc.int64
    np.testing.assert_array_equal(to_numpy(got), expected.numpy())
    np.testing.assert_array_equal(to_numpy(fc.tensor(a).diagflat(offset=offset)), expected.numpy())


def test_diagflat_errors():
    with pytest.raises(TypeError, match=r"^\[diagflat\] expected a Tensor as 'input', got list"):
        fc.diagflat([1, 2])
    with pytest.raises(TypeError, match=r"^\[diagflat\] expected an int 'offset', got float"):
        fc.diagflat(fc.ones(2), 1.0)


PADS = [(1, 2), (1, 2, 1, 0), (-1, -2), (0, 0, 0, 0, 2, 1), (-1, 1, 1, -1), (), (3, -3)]


@pytest.mark.parametrize("pad", PADS)
@pytest.mark.parametrize(
    ("dtype", "value"), [("float64", 0), ("float64", 3.5), ("float32", -1.25), ("int64", 2.5), ("bool", 2.0)]
)
def test_constant_pad_nd(pad, dtype, value):
    a = A.astype(dtype)
    expected = torch.constant_pad_nd(torch.from_numpy(a), pad, value)
    got = fc.constant_pad_nd(fc.tensor(a), pad, value)
    assert got.shape == tuple(expected.shape)
    assert str(got.dtype).split(".")[-1] == dtype
    np.testing.assert_array_equal(to_numpy(got), expected.numpy())


@pytest.mark.parametrize("value", [0, 2.5, 1 - 2j])
def test_constant_pad_nd_of_a_complex_tensor(value):
    a = A[0] + 1j * A[1]
    expected = torch.constant_pad_nd(torch.from_numpy(a), (1, -1, 0, 2), value)
    got = fc.constant_pad_nd(fc.tensor(a), (1, -1, 0, 2), value)
    assert got.dtype == fc.complex128
    np.testing.assert_array_equal(to_numpy(got), expected.numpy())


PAD_ERRORS = [
    ((1,), fc.FlambeauError, r"^\[constant_pad_nd\] padding length must be divisible by 2"),
    ((1,) * 8, fc.FlambeauError, r"^\[constant_pad_nd\] padding length should be less than or equal to two times"),
    ((-3, -2), fc.FlambeauError, r"^\[constant_pad_nd\] the negative pads \(-3, -2\) crop more than the 4 elements"),
    ((5, -5), fc.FlambeauError, r"^\[constant_pad_nd\] the negative pads \(5, -5\) crop more than the 4 elements"),
    ((1.0, 1), TypeError, r"^\[constant_pad_nd\] expected pad as a list or tuple of ints"),
]


@pytest.mark.parametrize(("pad", "error", "message"), PAD_ERRORS, ids=[m for _, _, m in PAD_ERRORS])
def test_constant_pad_nd_errors(pad, error, message):
    with pytest.raises(error, match=message):
        fc.constant_pad_nd(fc.tensor(A), pad)


def test_constant_pad_nd_value_must_fit_the_dtype():
    with pytest.raises(RuntimeError, match="cannot be converted"):
        torch.constant_pad_nd(torch.ones(2), (1, 1), 1e300)
    with pytest.raises(
        fc.FlambeauError, match=r"^\[constant_pad_nd\] value 1e\+300 cannot be converted to type float32"
    ):
        fc.constant_pad_nd(fc.ones(2), (1, 1), 1e300)


@pytest.mark.parametrize("n", [-(2**62), -5, -1, 0, 1, 3, 2**31, 2**62])
def test_fuzzed_sizes(n):
    x, t = fc.tensor(A), torch.from_numpy(A)
    calls = [("constant_pad_nd", ((0, 0, n, -n),)), ("diagflat", (n,))]
    # A pad of 2**31 is left out: core's padding kernel fills a pad-sized intermediate before it asks for the
    # output (gigabytes touched, half a minute) where PyTorch's allocation of the output fails at once.
    if not 2**20 < n < 2**40:
        calls.append(("constant_pad_nd", ((n, 0),)))
    for name, args in calls:
        same_as_torch_or_refused(name, getattr(fc, name), getattr(torch, name), (x, *args), (t, *args))
    for size in [(n, 3, 4), (n,), (2, n, 4)]:
        same_as_torch_or_refused("sum_to_size", fc.Tensor.sum_to_size, torch.Tensor.sum_to_size, (x, *size), (t, *size))
