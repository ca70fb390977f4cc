"""torch.asarray (flambeau_core/_asarray.py) against PyTorch 2.13: sharing, copies, dtypes, devices,
requires_grad, and the errors."""

from __future__ import annotations

import flambeau_core as fc
import numpy as np
import pytest
import torch


@pytest.mark.parametrize("obj", [[1, 2], [[1.5], [2.5]], 3.5, True, [], np.arange(4, dtype=np.int32)])
def test_values_and_dtypes_match_torch(obj):
    ours, theirs = fc.asarray(obj), torch.asarray(obj)
    assert ours.tolist() == theirs.tolist() and str(ours.dtype).split(".")[-1] == str(theirs.dtype).split(".")[-1]
    ours, theirs = fc.asarray(obj, dtype=fc.float64), torch.asarray(obj, dtype=torch.float64)
    assert ours.tolist() == theirs.tolist() and ours.dtype == fc.float64


def test_memory_is_shared_unless_copied():
    x = fc.ones(2)
    assert fc.asarray(x) is x and fc.asarray(x, copy=True).data_ptr() != x.data_ptr()
    assert fc.asarray(x, dtype=fc.float64).data_ptr() != x.data_ptr()
    # NumPy arrays are shared through DLPack, which needs flambeau-interop: packages/flambeau/tests


def test_errors_match_torch():
    with pytest.raises(ValueError, match="can't alias"):
        torch.asarray(torch.ones(2), dtype=torch.float64, copy=False)
    with pytest.raises(ValueError, match=r"\[asarray\] copy=False, but converting"):
        fc.asarray(fc.ones(2), dtype=fc.float64, copy=False)
    with pytest.raises(ValueError, match="can't alias arbitrary sequence"):
        torch.asarray([1], copy=False)
    with pytest.raises(ValueError, match=r"\[asarray\] copy=False, but a list can only be copied"):
        fc.asarray([1], copy=False)
    with pytest.raises(TypeError):
        torch.asarray("abc")
    with pytest.raises(TypeError, match=r"\[asarray\] "):
        fc.asarray("abc")
    with pytest.raises(TypeError, match=r"\[asarray\] expected a bool requires_grad, got int"):
        fc.asarray([1.0], requires_grad=1)
    # requires_grad=True needs flambeau-autograd: packages/flambeau/tests/test_namespace.py
