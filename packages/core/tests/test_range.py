"""torch.range (flambeau_core/_range.py), the deprecated arange that includes end, against PyTorch 2.13."""

from __future__ import annotations

import flambeau_core as fc
import numpy as np
import pytest
import torch
from helpers import to_numpy

pytestmark = pytest.mark.filterwarnings("ignore:.*range is deprecated")


@pytest.mark.parametrize(
    "args, kwargs",
    [
        ((1, 4), {}),
        ((0, 1, 0.25), {}),
        ((1, 4), {"dtype": "int64"}),
        ((5, 1, -2), {}),
        ((0, 0.3, 0.1), {}),
        ((-1.5, 2.5, 0.5), {"dtype": "float64"}),
        ((0, 10, 3), {"dtype": "int32"}),
        ((2, 2), {}),
    ],
)
def test_range_matches_torch(args, kwargs):
    ours = fc.range(*args, **{k: getattr(fc, v) for k, v in kwargs.items()})
    theirs = torch.range(*args, **{k: getattr(torch, v) for k, v in kwargs.items()})
    assert ours.dtype == getattr(fc, kwargs.get("dtype", "float32"))
    np.testing.assert_allclose(to_numpy(ours), theirs.numpy(), rtol=1e-7)


def test_range_warns_and_takes_out_and_requires_grad():
    with pytest.warns(UserWarning, match=r"\[range\] torch.range is deprecated"):
        fc.range(0, 1)
    out = fc.empty(3)
    assert fc.range(0, 2, out=out) is out and out.tolist() == [0.0, 1.0, 2.0]
    if hasattr(fc.Tensor, "backward"):  # needs flambeau-autograd
        assert fc.range(0, 1, requires_grad=True).requires_grad


@pytest.mark.parametrize(
    "args, error, message",
    [
        ((1, 4, 0), fc.FlambeauError, "step must be nonzero"),
        ((4, 1), fc.FlambeauError, "upper bound and lower bound inconsistent with step sign"),
        ((1, 4, -1), fc.FlambeauError, "upper bound and lower bound inconsistent with step sign"),
    ],
)
def test_range_errors_match_torch(args, error, message):
    with pytest.raises(RuntimeError, match=message):
        torch.range(*args)
    with pytest.raises(error, match=r"\[range\] " + message):
        fc.range(*args)
    with pytest.raises(TypeError, match=r"\[range\] expected a real number 'end', got str"):
        fc.range(1, "a")
