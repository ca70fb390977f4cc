"""flambeau-cuda's index_fill on a GPU against the CPU (dtypes, dims, index on the GPU or the CPU, in place).
Skipped with "no CUDA GPU" elsewhere; the same code is checked on the host by test_index_fill_host.py."""

from __future__ import annotations

import pytest
from conftest import requires_gpu

pytestmark = requires_gpu
fb = pytest.importorskip("flambeau")


@pytest.mark.parametrize("dtype", [fb.float32, fb.float64, fb.int64, fb.bool])
@pytest.mark.parametrize("dim", [0, 1, -1])
def test_index_fill_matches_cpu(dtype, dim):
    fb.manual_seed(0)
    x = (fb.randn(3, 4, 5) * 3).round()
    x = (x > 0) if dtype == fb.bool else x.to(dtype)
    x = x.transpose(0, 2)
    idx = fb.tensor([2, 0, 2])
    value = True if dtype == fb.bool else 7
    expected = fb.index_fill(x, dim, idx, value).tolist()
    assert fb.index_fill(x.cuda(), dim, idx.cuda(), value).cpu().tolist() == expected
    assert fb.index_fill(x.cuda(), dim, idx, value).cpu().tolist() == expected
    y = x.cuda()
    y.index_fill_(dim, idx.cuda(), value)
    assert y.cpu().tolist() == expected
    with pytest.raises(IndexError, match="out of range"):
        fb.index_fill(x.cuda(), dim, fb.tensor([9]).cuda(), value)
