"""flambeau-cuda's index_fill (src/shape_ops.cpp: the indices checked on the host, a mask along dim, then where)
run on cpu tensors through _C._index_fill_on_host, against core's CPU kernel: dtypes, every dim (negative
too), 0-d and 1-d and int32 indices, repeated indices, empty index, 0-d self, non-contiguous inputs, and the
error paths (core's messages)."""

from __future__ import annotations

import flambeau_core as fc
import pytest
from flambeau_cuda import _C


def _x(dtype):
    fc.manual_seed(0)
    x = (fc.randn(3, 4, 5) * 3).round()
    return x > 0 if dtype == fc.bool else x.to(dtype)


@pytest.mark.parametrize("dtype", [fc.float32, fc.float64, fc.int64, fc.int32, fc.uint8, fc.bool])
@pytest.mark.parametrize("dim", [0, 1, 2, -1, -3])
@pytest.mark.parametrize(
    "index", [[0], [1, 1, 0], [], 2, "int32", [-1, 0, -2]], ids=["one", "repeated", "empty", "0-d", "int32", "negative"]
)
def test_index_fill_matches_core(dtype, dim, index):
    x = _x(dtype).transpose(0, 2)  # (5, 4, 3), not contiguous
    if index == "int32":
        idx = fc.tensor([2, 0]).to(fc.int32)
    elif index == []:
        idx = fc.tensor([], dtype=fc.int64)
    else:
        idx = fc.tensor(index)
    value = 1.0 if dtype == fc.bool else 7.0
    got = _C._index_fill_on_host(x, dim, idx, value)
    exp = fc.index_fill(x, dim, idx, value if dtype.is_floating_point else int(value))
    assert got.dtype == exp.dtype and got.shape == exp.shape and got.is_contiguous()
    assert got.tolist() == exp.tolist()


def test_index_fill_0d_self():
    x = fc.tensor(3.0)
    assert (
        _C._index_fill_on_host(x, 0, fc.tensor([0]), -1.5).tolist()
        == fc.index_fill(x, 0, fc.tensor([0]), -1.5).tolist()
    )


def test_errors_match_core():
    x = fc.ones(2, 3)
    cases = [
        (IndexError, r"\[index_fill\] index 3 is out of range for dimension 1 with size 3", (x, 1, fc.tensor([0, 3]))),
        (IndexError, r"\[index_fill\] index -3 is out of range for dimension 0 with size 2", (x, 0, fc.tensor([-3]))),
        (TypeError, r"\[index_fill\] index must be an int64 or int32 tensor", (x, 0, fc.tensor([0.0]))),
        (ValueError, r"\[index_fill\] index must be 0-d or 1-d", (x, 0, fc.zeros(1, 1, dtype=fc.int64))),
        (IndexError, r"index_fill", (x, 2, fc.tensor([0]))),
    ]
    for exc, msg, args in cases:
        with pytest.raises(exc, match=msg):
            _C._index_fill_on_host(*args, 1.0)
        with pytest.raises(exc, match=msg):
            fc.index_fill(*args, 1.0)
