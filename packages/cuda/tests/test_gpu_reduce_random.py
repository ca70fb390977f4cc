"""flambeau-cuda on a GPU: reductions vs the CPU ops, and random numbers equal to the CPU's for one seed.

Skipped with "no CUDA GPU" elsewhere.
"""

from __future__ import annotations

import flambeau_core as fc
import numpy as np
import pytest
from conftest import requires_gpu
from cuda_testing import assert_cuda_matches

pytestmark = requires_gpu


def _x(dtype=fc.float32, shape=(3, 4, 5)):
    rng = np.random.default_rng(3)
    return fc.tensor(rng.standard_normal(shape).tolist(), dtype=dtype)


@pytest.mark.parametrize("dtype", [fc.float32, fc.float64])
@pytest.mark.parametrize("dim", [None, 0, 1, -1, (0, 2), (1, 2)])
@pytest.mark.parametrize("keepdim", [False, True])
def test_sum_mean_amax_amin(dtype, dim, keepdim):
    x = _x(dtype)
    for src in (x, x.transpose(0, 2)):
        g = src.cuda()
        if dim is None:
            assert_cuda_matches(g.sum(), src.sum())
            assert_cuda_matches(g.mean(), src.mean())
            assert_cuda_matches(fc.max(g), fc.max(src))
            assert_cuda_matches(fc.min(g), fc.min(src))
        else:
            assert_cuda_matches(g.sum(dim, keepdim=keepdim), src.sum(dim, keepdim=keepdim))
            assert_cuda_matches(g.mean(dim, keepdim=keepdim), src.mean(dim, keepdim=keepdim))
            dims = dim if isinstance(dim, tuple) else (dim,)
            assert_cuda_matches(fc.amax(g, dims, keepdim), fc.amax(src, dims, keepdim))
            assert_cuda_matches(fc.amin(g, dims, keepdim), fc.amin(src, dims, keepdim))


@pytest.mark.parametrize("dim", [0, 1, 2])
def test_max_min_dim_and_arg(dim):
    x = fc.tensor([[[1.0, 3.0], [3.0, 0.0]], [[2.0, 2.0], [float("nan"), 5.0]]])
    for op in ("max", "min"):
        v, i = getattr(fc, op)(x.cuda(), dim)
        ev, ei = getattr(fc, op)(x, dim)
        np.testing.assert_array_equal(np.array(v.cpu().tolist()), np.array(ev.tolist()))
        assert i.cpu().tolist() == ei.tolist() and i.dtype == fc.int64
    assert fc.argmax(x.cuda()).item() == fc.argmax(x).item()
    assert fc.argmin(x.cuda(), 1).cpu().tolist() == fc.argmin(x, 1).tolist()


def test_integer_sum_prod_and_errors():
    i = fc.tensor([[1, 2, 3], [4, 5, 6]])
    assert_cuda_matches(i.cuda().sum(), i.sum())
    assert_cuda_matches(i.cuda().sum(1), i.sum(1))
    assert_cuda_matches(fc.prod(i.cuda()), fc.prod(i))
    assert_cuda_matches(fc.tensor([True, False, True]).cuda().sum(), fc.tensor([True, False, True]).sum())
    with pytest.raises(RuntimeError, match="max"):
        fc.max(fc.empty(0, device="cuda"))
    with pytest.raises(TypeError, match="mean"):
        i.cuda().mean()
    with pytest.raises(ValueError, match="multiple times"):
        i.cuda().sum((0, 0))


@pytest.mark.parametrize("dtype", [fc.float32, fc.float64])
def test_random_matches_cpu_for_one_seed(dtype):
    fc.manual_seed(1234)
    cpu_u = fc.empty(1001, dtype=dtype).uniform_(-1, 2)
    cpu_n = fc.empty(7, 9, dtype=dtype).normal_(0.5, 2.0)
    fc.cuda.manual_seed(1234)
    gpu_u = fc.empty(1001, dtype=dtype, device="cuda").uniform_(-1, 2)
    gpu_n = fc.empty(7, 9, dtype=dtype, device="cuda").normal_(0.5, 2.0)
    assert gpu_u.cpu().tolist() == cpu_u.tolist()  # same draws, same arithmetic
    assert_cuda_matches(gpu_n, cpu_n, tol=1e-6)  # Box-Muller's log/cos/sin may differ in the last bit
    # a non-contiguous target gets element i's draw in row-major order, as on the CPU
    fc.manual_seed(7)
    c = fc.empty(4, 6, dtype=dtype).transpose(0, 1).uniform_()
    fc.cuda.manual_seed(7)
    g = fc.empty(4, 6, dtype=dtype, device="cuda").transpose(0, 1).uniform_()
    assert g.cpu().tolist() == c.tolist()
