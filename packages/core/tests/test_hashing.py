"""hash_tensor (flambeau_core/_hashing.py) against PyTorch: dtypes, dims, keepdim, the method form and the
error paths."""

from __future__ import annotations

import flambeau_core as fc
import numpy as np
import pytest
import torch

DTYPES = ["bool", "uint8", "int8", "int16", "int32", "int64", "float16", "bfloat16", "float32", "float64"]


def _pair(shape, dtype):
    rng = np.random.default_rng(3)
    a = rng.standard_normal(shape) * 100
    t = torch.tensor(a).to(getattr(torch, dtype))
    return fc.tensor(t.to(torch.float64).numpy()).to(getattr(fc, dtype)), t


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("dim", [None, 0, 1, -1, (0, 2), [], (2, 0, 1)])
@pytest.mark.parametrize("keepdim", [False, True])
def test_hash_tensor_matches_torch(dtype, dim, keepdim):
    x, t = _pair((3, 5, 7), dtype)
    if dim is None:
        ours, theirs = fc.hash_tensor(x), torch.hash_tensor(t)
    else:
        ours, theirs = fc.hash_tensor(x, dim, keepdim=keepdim), torch.hash_tensor(t, dim, keepdim=keepdim)
    assert ours.dtype == fc.uint64
    assert tuple(ours.shape) == tuple(theirs.shape)
    assert ours.tolist() == theirs.tolist()


def test_hash_tensor_method_scalar_and_odd_lengths():
    for n in (1, 2, 3, 5, 8, 13):
        x, t = _pair((n,), "float32")
        assert x.hash_tensor().tolist() == t.hash_tensor().tolist()
    assert fc.hash_tensor(fc.tensor(3.0)).tolist() == torch.hash_tensor(torch.tensor(3.0)).tolist()
    assert fc.hash_tensor(fc.zeros(0, 3), 1).tolist() == []  # the reduced dim is not empty


def test_hash_tensor_errors():
    with pytest.raises(fc.FlambeauError, match=r"\[hash_tensor\] unknown hash_tensor mode: 1"):
        fc.hash_tensor(fc.ones(2), mode=1)
    with pytest.raises(fc.FlambeauError, match=r"\[hash_tensor\] Expected reduction dim to be specified"):
        fc.hash_tensor(fc.zeros(0))
    with pytest.raises(IndexError, match=r"\[hash_tensor\] Expected reduction dim 0 to have non-zero size"):
        fc.hash_tensor(fc.zeros(0, 3), 0)
    with pytest.raises(IndexError, match=r"\[hash_tensor\] Dimension out of range"):
        fc.hash_tensor(fc.zeros(2, 3), 2)
    with pytest.raises(TypeError, match=r"\[hash_tensor\] expected a real or bool tensor, got dtype"):
        fc.hash_tensor(fc.zeros(2, dtype=fc.complex64))
    with pytest.raises(TypeError, match=r"\[hash_tensor\]"):
        fc.hash_tensor([1.0, 2.0])
