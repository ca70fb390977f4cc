"""Shared helpers of flambeau-cuda's tests: a tensor's values back on the host, compared with an oracle."""

from __future__ import annotations

from typing import Any

import flambeau_core as fc
import numpy as np


def to_numpy(t: fc.Tensor) -> np.ndarray:
    """t's values as NumPy, copied to the host (detached when it requires grad), through ``tolist()``:
    floats as float64 and integers as int64, the precision this package's tolerances are applied in."""
    if t.requires_grad:
        t = t.detach()
    return np.array(t.cpu().tolist()).reshape(tuple(t.shape))


def assert_close(ours: fc.Tensor, theirs: Any, tol: float) -> None:
    """ours (on any device) has theirs' values within rtol = atol = tol; theirs is a flambeau tensor
    (on any device), a torch tensor or a NumPy array."""
    if isinstance(theirs, fc.Tensor):
        want = to_numpy(theirs)
    elif isinstance(theirs, np.ndarray):
        want = theirs
    else:
        want = theirs.detach().numpy()
    np.testing.assert_allclose(to_numpy(ours), want, rtol=tol, atol=tol)
