"""isclose, allclose and equal (functions and Tensor methods) against PyTorch: tolerances, infinities,
NaNs with and without equal_nan, integers, bools, broadcasting, and the error paths."""

from __future__ import annotations

import flambeau_core as fc
import numpy as np
import pytest
import torch
from helpers import to_numpy

pytestmark = pytest.mark.on_devices

INF, NAN = float("inf"), float("nan")
A = [1.0, 1.0, 2.0, INF, INF, -INF, NAN, NAN, 0.0, 1e-9, 100.0]
B = [1.0, 1.00001, 2.1, INF, -INF, -INF, NAN, 1.0, 1e-8, 0.0, 100.0009]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize(("rtol", "atol"), [(1e-05, 1e-08), (0.0, 0.0), (1e-3, 0.0), (0.0, 0.2)])
@pytest.mark.parametrize("equal_nan", [False, True])
def test_isclose_allclose_floats(dtype, rtol, atol, equal_nan):
    ours_a, ours_b = (fc.tensor(v, dtype=getattr(fc, dtype)) for v in (A, B))
    theirs_a, theirs_b = (torch.tensor(v, dtype=getattr(torch, dtype)) for v in (A, B))
    expected = torch.isclose(theirs_a, theirs_b, rtol=rtol, atol=atol, equal_nan=equal_nan)
    got = fc.isclose(ours_a, ours_b, rtol=rtol, atol=atol, equal_nan=equal_nan)
    np.testing.assert_array_equal(to_numpy(got), expected.numpy())
    np.testing.assert_array_equal(to_numpy(ours_a.isclose(ours_b, rtol, atol, equal_nan)), expected.numpy())
    for i in range(len(A)):  # allclose on each pair alone: True and False cases both
        expected_one = torch.allclose(theirs_a[i : i + 1], theirs_b[i : i + 1], rtol, atol, equal_nan)
        assert fc.allclose(ours_a[i : i + 1], ours_b[i : i + 1], rtol, atol, equal_nan) is expected_one


def test_isclose_integers_bools_broadcast():
    a, b = [[1, 2, 3], [4, 5, 6]], [1, 3, 9]
    expected = torch.isclose(torch.tensor(a), torch.tensor(b), rtol=0.0, atol=1.0)
    got = fc.isclose(fc.tensor(a), fc.tensor(b), rtol=0.0, atol=1.0)
    np.testing.assert_array_equal(to_numpy(got), expected.numpy())
    expected = torch.isclose(torch.tensor([True, False]), torch.tensor([True, True]))
    np.testing.assert_array_equal(to_numpy(fc.isclose(fc.tensor([True, False]), fc.tensor([True, True]))), expected)
    assert fc.ones(2, 3).allclose(fc.ones(3)) is torch.ones(2, 3).allclose(torch.ones(3)) is True


@pytest.mark.parametrize(
    ("a", "b"),
    [
        ([1.0, 2.0], [1.0, 2.0]),
        ([1.0, 2.0], [1.0, 2.5]),
        ([1.0], [1.0, 1.0]),
        ([NAN], [NAN]),
        ([[1.0, 2.0]], [1.0, 2.0]),
    ],
)
def test_equal(a, b):
    expected = torch.equal(torch.tensor(a), torch.tensor(b))
    assert fc.equal(fc.tensor(a), fc.tensor(b)) is expected
    assert fc.tensor(a).equal(fc.tensor(b)) is expected


def test_errors():
    with pytest.raises(TypeError, match=r"\[isclose\] expected input and other of one dtype, got .*float32.*float64"):
        fc.isclose(fc.ones(2), fc.ones(2, dtype=fc.float64))
    with pytest.raises(fc.FlambeauError, match=r"\[isclose\] expected non-negative rtol and atol, got rtol=-1"):
        fc.isclose(fc.ones(2), fc.ones(2), rtol=-1)
    with pytest.raises(TypeError, match=r"\[allclose\] expected a Tensor as 'other', got list"):
        fc.allclose(fc.ones(2), [1.0, 1.0])
    with pytest.raises(TypeError, match=r"\[equal\] expected a Tensor as 'input', got float"):
        fc.equal(1.0, fc.ones(1))
    with pytest.raises(fc.FlambeauError):  # shapes that do not broadcast
        fc.allclose(fc.ones(2), fc.ones(3))
