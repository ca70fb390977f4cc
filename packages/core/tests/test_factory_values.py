"""linspace's CPU fill against PyTorch 2.13, and the FlambeauError of a shape whose bytes overflow int64."""

from __future__ import annotations

import flambeau_core as fc
import numpy as np
import pytest
import torch
from helpers import to_numpy

pytestmark = pytest.mark.on_devices


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize(
    "start,end,steps",
    [(0, 1, 0), (0, 1, 1), (0, 1, 2), (0, 1, 5), (-3, 7, 10001), (0.1, 1.7, 1001), (5, -5, 11), (2, 2, 4)],
)
def test_linspace_matches_torch(dtype, start, end, steps):
    ours = fc.linspace(start, end, steps, dtype=getattr(fc, dtype))
    theirs = torch.linspace(start, end, steps, dtype=getattr(torch, dtype))
    assert tuple(ours.shape) == tuple(theirs.shape) and ours.dtype == getattr(fc, dtype)
    np.testing.assert_allclose(
        to_numpy(ours),
        theirs.numpy(),
        rtol=2e-7 if dtype == "float32" else 1e-15,
        atol=1e-6 if dtype == "float32" else 1e-14,
    )
    if steps >= 2:
        assert to_numpy(ours)[0] == theirs.numpy()[0] and to_numpy(ours)[-1] == theirs.numpy()[-1]


def test_linspace_errors():
    with pytest.raises(fc.FlambeauError, match=r"\[linspace\] number of steps must be non-negative"):
        fc.linspace(0, 1, -1)


# ---- size overflow ----


@pytest.mark.parametrize("shape", [(2**40, 2**40), (2**62, 4)])
def test_shape_bytes_overflow_is_a_flambeau_error(shape):
    with pytest.raises(fc.FlambeauError, match=r"\[(empty|zeros)\] shape \(.*\) (of dtype float32 )?is too large"):
        fc.zeros(shape)
