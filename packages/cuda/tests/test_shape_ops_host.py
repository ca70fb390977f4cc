"""flambeau-cuda's flip, tril and triu (src/shape_ops.cpp, made of dispatched ops) run on cpu tensors through
_C._shape_op_on_host, against core's CPU kernels: dtypes (bool, int, float, complex), non-contiguous inputs,
batches, any diagonal (far out of range too), repeated or negative dims, and the error paths. arange on CUDA is
core's CPU arange copied to the device (checked on a GPU by test_gpu_shape_ops.py).
"""

from __future__ import annotations

import flambeau_core as fc
import pytest
from flambeau_cuda import _C


def _x(dtype):
    fc.manual_seed(0)
    x = (fc.randn(2, 4, 5) * 3).round()
    if dtype == fc.bool:
        return x > 0
    if dtype == fc.complex64:
        return fc.complex(x, x * 2)
    return x.to(dtype)


DTYPES = [fc.float32, fc.float64, fc.int64, fc.uint8, fc.bool, fc.complex64]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("diagonal", [0, 1, -1, 3, -4, 100, -(2**62)])
def test_tril_triu_match_core(dtype, diagonal):
    x = _x(dtype).transpose(0, 2)  # (5, 4, 2), not contiguous
    for name, fn in (("tril", fc.tril), ("triu", fc.triu)):
        got = _C._shape_op_on_host(name, x, [diagonal])
        assert got.dtype == x.dtype and got.shape == x.shape
        assert got.tolist() == fn(x, diagonal).tolist(), name


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("dims", [[0], [2], [0, 2], [-1, 1], [0, 1, 2], []])
def test_flip_matches_core(dtype, dims):
    x = _x(dtype)[:, 1:, ::2]
    assert _C._shape_op_on_host("flip", x, dims).tolist() == fc.flip(x, dims).tolist()


def test_errors_name_the_op():
    with pytest.raises(ValueError, match=r"\[tril\] input must have at least 2 dims"):
        _C._shape_op_on_host("tril", fc.ones(3), [0])
    with pytest.raises(ValueError, match=r"\[flip\] dim 1 appears multiple times"):
        _C._shape_op_on_host("flip", fc.ones(2, 3), [1, -1])
    with pytest.raises(IndexError):
        _C._shape_op_on_host("flip", fc.ones(2, 3), [2])
