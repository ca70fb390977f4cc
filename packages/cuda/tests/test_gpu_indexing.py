"""flambeau-cuda on a GPU: gather, index_select, scatter_add and clamp vs the CPU ops (skipped with "no CUDA GPU")."""

from __future__ import annotations

import flambeau_core as fc
import pytest
from conftest import requires_gpu
from cuda_testing import assert_cuda_matches

pytestmark = requires_gpu


@pytest.mark.parametrize("dim", [0, 1, -1])
@pytest.mark.parametrize("dtype", [fc.float32, fc.float64, fc.int64, fc.float16])
def test_gather_and_index_select(dim, dtype):
    x = fc.arange(24.0).reshape(2, 3, 4).to(dtype)
    size = x.shape[dim]
    idx = fc.tensor([size - 1, 0, 0])
    assert_cuda_matches(fc.index_select(x.cuda(), dim, idx.cuda()), fc.index_select(x, dim, idx), 1e-7, atol=0.0)
    assert_cuda_matches(
        fc.index_select(x.cuda().transpose(0, 2), 1, idx[:2].cuda()),
        fc.index_select(x.transpose(0, 2), 1, idx[:2]),
        1e-7,
        atol=0.0,
    )
    shape = list(x.shape)
    shape[dim] = 5
    g = fc.randint(0, size, tuple(shape))
    assert_cuda_matches(fc.gather(x.cuda(), dim, g.cuda()), fc.gather(x, dim, g), 1e-7, atol=0.0)
    with pytest.raises(IndexError, match="out of bounds"):
        fc.index_select(x.cuda(), dim, fc.tensor([size]).cuda())


@pytest.mark.parametrize("dtype", [fc.float32, fc.float64])
def test_scatter_add(dtype):
    x = fc.zeros(3, 5, dtype=dtype)
    idx = fc.tensor([[0, 1, 2, 0, 0], [2, 0, 0, 1, 2]])
    src = fc.ones(2, 5, dtype=dtype)
    assert_cuda_matches(
        fc.scatter_add(x.cuda(), 0, idx.cuda(), src.cuda()), fc.scatter_add(x, 0, idx, src), 1e-7, atol=0.0
    )
    with pytest.raises(IndexError, match="out of bounds"):
        fc.scatter_add(x.cuda(), 0, (idx + 3).cuda(), src.cuda())


def test_clamp():
    x = fc.tensor([-2.0, 0.5, float("nan"), 3.0])
    assert_cuda_matches(fc.clamp(x.cuda(), -1, 1), fc.clamp(x, -1, 1), 1e-7, atol=0.0)
    assert_cuda_matches(fc.clamp(x.cuda(), max=0.0), fc.clamp(x, max=0.0), 1e-7, atol=0.0)
    assert_cuda_matches(fc.clamp(x.cuda(), fc.zeros(4).cuda(), None), fc.clamp(x, fc.zeros(4), None), 1e-7, atol=0.0)
