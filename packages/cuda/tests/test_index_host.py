"""flambeau-cuda's advanced indexing (index, index_put_; src/advanced_index.cpp) checked without a GPU.

Its plan (the element offsets of every result element, computed with dispatched ops) runs on cpu tensors through
the test hooks _C._index_on_host / _C._index_put_on_host (the write kernel's loop on the host): results are
compared with core's CPU kernels (self[indices], index_put_) for int64/int32 indices, negative indices, masks,
None (whole) dims, adjacent and separated index dims, broadcasting, non-contiguous self, accumulate with
duplicates, and the error paths. On a GPU, test_gpu_index.py runs the same on CUDA tensors.
"""

from __future__ import annotations

import flambeau_core as fc
import numpy as np
import pytest
from flambeau_cuda import _C


def _t(values, dtype=fc.int64):
    return fc.tensor(values, dtype=dtype)


def _self():
    fc.manual_seed(0)
    return fc.randn(4, 5, 6, dtype=fc.float64)


CASES = [
    [_t([0, 2, -1])],
    [None, _t([[1, 4], [0, -5]])],
    [_t([0, 3]), _t([1, 2])],  # adjacent: (pre) B (post)
    [_t([0, 3]), None, _t([5, 0])],  # separated: B first
    [None, _t([4, 0, 1], fc.int32), _t([2])],  # broadcast, int32
    [_t(1)],  # 0-dim index
    [None, None, _t([-6, 5])],
    [_t([], fc.int64)],  # empty
]


@pytest.mark.parametrize("k", range(len(CASES)))
def test_index_matches_core(k):
    x = _self()
    idx = CASES[k]
    got = _C._index_on_host(x, idx)
    expected = x[tuple(slice(None) if i is None else i for i in idx)]
    assert got.shape == expected.shape
    assert got.tolist() == expected.tolist()


def test_index_masks_and_non_contiguous_self():
    x = _self().permute(2, 0, 1)[:, ::2]  # (6, 2, 5), strided
    m = x[:, :, 0] > 0
    assert _C._index_on_host(x, [m]).tolist() == x[m].tolist()
    m2 = (x > 0).to(fc.uint8)
    assert _C._index_on_host(x, [m2.to(fc.bool)]).tolist() == x[m2.to(fc.bool)].tolist()
    assert _C._index_on_host(x, [None, _t([1])]).tolist() == x[:, _t([1])].tolist()


@pytest.mark.parametrize("k", range(len(CASES)))
@pytest.mark.parametrize("accumulate", [False, True])
def test_index_put_matches_core(k, accumulate):
    idx = CASES[k]
    x1, x2 = _self(), _self()
    shape = x1[tuple(slice(None) if i is None else i for i in idx)].shape
    fc.manual_seed(1)
    values = fc.randn(*shape, dtype=fc.float64) if len(shape) else fc.tensor(2.5, dtype=fc.float64)
    _C._index_put_on_host(x1, idx, values, accumulate)
    x2.index_put_(tuple(idx), values, accumulate=accumulate)
    if accumulate:
        np.testing.assert_allclose(np.array(x1.tolist()), np.array(x2.tolist()), rtol=1e-12, atol=1e-12)
    else:
        assert x1.tolist() == x2.tolist()


def test_index_put_accumulates_duplicates_and_broadcasts_values():
    x1 = fc.zeros(5, dtype=fc.float64)
    _C._index_put_on_host(x1, [_t([0, 3, 0, 0])], fc.tensor([1.0, 2.0, 3.0, 4.0], dtype=fc.float64), True)
    assert x1.tolist() == [8.0, 0.0, 0.0, 2.0, 0.0]
    x2 = fc.zeros(3, 4, dtype=fc.int64)
    _C._index_put_on_host(x2, [None, _t([1, 3])], fc.tensor([7], dtype=fc.int64), False)
    assert x2.tolist() == [[0, 7, 0, 7]] * 3
    x3 = fc.zeros(3, 4).t()  # non-contiguous self
    _C._index_put_on_host(x3, [_t([2]), _t([0])], fc.tensor(5.0), False)
    assert x3.tolist()[2][0] == 5.0 and sum(sum(r) for r in x3.tolist()) == 5.0


def test_index_errors_name_the_op():
    x = _self()
    with pytest.raises(IndexError, match=r"\[index\] index 4 is out of bounds for dimension 0 with size 4"):
        _C._index_on_host(x, [_t([0, 4])])
    with pytest.raises(IndexError, match=r"\[index\] index -6 is out of bounds for dimension 1 with size 5"):
        _C._index_on_host(x, [None, _t([-6])])
    with pytest.raises(IndexError, match="tensors used as indices must be int64, int32, bool or uint8"):
        _C._index_on_host(x, [fc.tensor([0.0])])
    with pytest.raises(IndexError, match="too many indices for a tensor of dimension 3"):
        _C._index_on_host(x, [_t([0])] * 4)
    with pytest.raises(IndexError, match="shape mismatch: indexing tensors could not be broadcast"):
        _C._index_on_host(x, [_t([0, 1]), _t([0, 1, 2])])
    with pytest.raises(IndexError, match=r"the shape \(3,\) of the mask at index 0 does not match"):
        _C._index_on_host(x, [fc.tensor([True, False, True])])
    with pytest.raises(TypeError, match=r"\[index_put_\] values dtype float32 must match self dtype float64"):
        _C._index_put_on_host(x, [_t([0])], fc.zeros(5, 6), False)
    with pytest.raises(ValueError, match=r"\[index_put_\] shape mismatch: values of shape \(7,\)"):
        _C._index_put_on_host(x, [_t([0])], fc.zeros(7, dtype=fc.float64), False)
    with pytest.raises(RuntimeError, match="cannot write into an expanded tensor"):
        _C._index_put_on_host(fc.zeros(1, 3).expand(4, 3), [_t([0])], fc.zeros(3), False)
