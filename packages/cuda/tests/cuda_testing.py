"""Shared helpers of flambeau-cuda's tests: a tensor's values back on the host, compared with an oracle."""

from __future__ import annotations

from typing import Any

import flambeau_core as fc
import numpy as np


def to_numpy(t: fc.Tensor, dtype: Any = None) -> np.ndarray:
    """t's values as NumPy, copied to the host (detached when it requires grad), through ``tolist()``:
    floats as float64 and integers as int64, the precision this package's tolerances are applied in
    (``dtype=float``: every value as float64, booleans and integers too)."""
    if t.requires_grad:
        t = t.detach()
    return np.array(t.cpu().tolist(), dtype=dtype).reshape(tuple(t.shape))


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


def assert_cuda_matches(got: fc.Tensor, expected: fc.Tensor, tol: float = 1e-5, *, atol: float | None = None) -> None:
    """got (a result on a CUDA device) has the dtype and shape of expected (the cpu's result) and its
    values within rtol = tol and atol (tol unless given), compared as float64 with NaNs equal."""
    assert got.is_cuda and got.dtype == expected.dtype and tuple(got.shape) == tuple(expected.shape)
    np.testing.assert_allclose(
        to_numpy(got, float), to_numpy(expected, float), rtol=tol, atol=tol if atol is None else atol, equal_nan=True
    )
