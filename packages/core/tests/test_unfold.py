"""Tensor.unfold and flambeau_core.t (the view ops of _views.py) against PyTorch 2.13: values, shapes, strides
(unfold is a view of the input's memory), 0-D inputs, the errors, and fuzzed sizes."""

from __future__ import annotations

import flambeau_core as fc
import numpy as np
import pytest
import torch
from helpers import same_as_torch_or_refused, to_numpy

pytestmark = pytest.mark.on_devices

A = np.random.default_rng(3).standard_normal((4, 6, 5)).astype(np.float32)


@pytest.mark.parametrize("shape", [(), (3,), (2, 3), (1, 0)])
def test_t(shape):
    a = np.arange(int(np.prod(shape)), dtype=np.float32).reshape(shape)
    got, expected = fc.t(fc.tensor(a)), torch.t(torch.from_numpy(a))
    assert got.shape == tuple(expected.shape)
    np.testing.assert_array_equal(to_numpy(got), expected.numpy())


def test_t_errors():
    with pytest.raises(fc.FlambeauError, match=r"^\[t\] .*\(2, 3, 4\)"):
        fc.t(fc.zeros(2, 3, 4))
    with pytest.raises(TypeError, match=r"^\[t\] expected a Tensor as 'input', got list"):
        fc.t([[1.0]])


@pytest.mark.parametrize(
    ("dimension", "size", "step"),
    [(0, 2, 1), (1, 3, 2), (2, 5, 1), (-1, 1, 3), (1, 0, 1), (1, 6, 4), (0, 4, 100), (2, 2, 2)],
)
@pytest.mark.parametrize("layout", ["contiguous", "transposed", "sliced"])
def test_unfold(dimension, size, step, layout):
    make = {"contiguous": lambda t: t, "transposed": lambda t: t.transpose(0, 1), "sliced": lambda t: t[1:, :, 1:]}
    x, t = make[layout](fc.tensor(A)), make[layout](torch.from_numpy(A))
    if size > t.shape[dimension]:
        size = t.shape[dimension]
    expected = t.unfold(dimension, size, step)
    got = x.unfold(dimension, size, step)
    assert got.shape == tuple(expected.shape)
    assert got.stride() == expected.stride()
    np.testing.assert_array_equal(to_numpy(got), expected.numpy())


def test_unfold_is_a_view():
    x = fc.arange(6.0)
    windows = x.unfold(0, 3, 1)
    x[2] = 100.0
    assert windows.tolist() == [[0.0, 1.0, 100.0], [1.0, 100.0, 3.0], [100.0, 3.0, 4.0], [3.0, 4.0, 5.0]]


@pytest.mark.parametrize(("size", "step"), [(0, 1), (1, 1), (1, 5)])
def test_unfold_of_a_0d_tensor(size, step):
    got, expected = fc.tensor(5.0).unfold(0, size, step), torch.tensor(5.0).unfold(0, size, step)
    assert got.shape == tuple(expected.shape)
    np.testing.assert_array_equal(to_numpy(got), expected.numpy())


UNFOLD_ERRORS = [
    ((3, 1, 1), IndexError, r"^\[unfold\] dimension 3 out of range for a 3-d tensor"),
    ((1, 7, 1), fc.FlambeauError, r"^\[unfold\] maximum size for tensor at dimension 1 is 6 but size is 7"),
    ((1, -1, 1), fc.FlambeauError, r"^\[unfold\] size is -1 but must be >= 0"),
    ((1, 2, 0), fc.FlambeauError, r"^\[unfold\] step is 0 but must be > 0"),
    ((1, 2, -3), fc.FlambeauError, r"^\[unfold\] step is -3 but must be > 0"),
    ((1, 2.0, 1), TypeError, r"^\[unfold\] expected an int 'size', got float"),
]


@pytest.mark.parametrize(("args", "error", "message"), UNFOLD_ERRORS, ids=[m for _, _, m in UNFOLD_ERRORS])
def test_unfold_errors(args, error, message):
    with pytest.raises(error, match=message):
        fc.tensor(A).unfold(*args)
    if error is not TypeError:  # PyTorch raises the same kind of error
        with pytest.raises(IndexError if error is IndexError else RuntimeError):
            torch.from_numpy(A).unfold(*args)


def test_unfold_of_a_0d_tensor_errors():
    with pytest.raises(IndexError, match=r"^\[unfold\] dimension 1 out of range for a 0-d tensor"):
        fc.tensor(1.0).unfold(1, 1, 1)
    with pytest.raises(fc.FlambeauError, match=r"^\[unfold\] maximum size for tensor at dimension 0 is 1"):
        fc.tensor(1.0).unfold(0, 2, 1)


@pytest.mark.parametrize("n", [-(2**62), -1, 0, 1, 5, 2**31, 2**62])
def test_unfold_fuzzed_sizes(n):
    x, t = fc.tensor(A), torch.from_numpy(A)
    for args in [(1, n, 1), (1, 1, n), (1, 6, n), (n, 1, 1)]:
        same_as_torch_or_refused("unfold", fc.Tensor.unfold, torch.Tensor.unfold, (x, *args), (t, *args))
