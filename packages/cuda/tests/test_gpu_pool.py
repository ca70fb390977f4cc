"""flambeau-cuda's pooling on a GPU against the CPU: max_pool2d (with indices, dilation, ceil_mode),
avg_pool2d (count_include_pad, divisor_override), adaptive_avg_pool2d (shrinking and growing), the
1-D forms (core's composites over the 2-D kernels), forward and backward, float32 and float64.

Skipped with "no CUDA GPU" elsewhere (the index math is checked on the host by tests/cpp/test_pool_math.cpp).
"""

from __future__ import annotations

import numpy as np
import pytest
from conftest import requires_gpu
from cuda_testing import assert_close, to_numpy

pytestmark = requires_gpu
fb = pytest.importorskip("flambeau")
F = pytest.importorskip("flambeau_nn.functional")


TOL = {fb.float32: 1e-5, fb.float64: 1e-10}


CASES = [
    ("max_pool2d", (2, 3, 9, 8), {"kernel_size": 3, "stride": 2, "padding": 1}),
    ("max_pool2d", (1, 2, 7, 7), {"kernel_size": (2, 3), "dilation": 2, "ceil_mode": True}),
    ("max_pool2d", (3, 6, 6), {"kernel_size": 2}),  # unbatched
    ("avg_pool2d", (2, 3, 9, 8), {"kernel_size": 3, "stride": 2, "padding": 1}),
    ("avg_pool2d", (2, 2, 7, 5), {"kernel_size": 3, "padding": 1, "count_include_pad": False, "ceil_mode": True}),
    ("avg_pool2d", (1, 2, 6, 6), {"kernel_size": 2, "divisor_override": 3}),
    ("adaptive_avg_pool2d", (2, 3, 9, 7), {"output_size": (4, 3)}),
    ("adaptive_avg_pool2d", (2, 3, 3, 2), {"output_size": (5, 7)}),
    ("adaptive_avg_pool2d", (2, 8, 4, 4), {"output_size": 1}),
    ("max_pool1d", (2, 3, 11), {"kernel_size": 3, "stride": 2}),
    ("avg_pool1d", (2, 3, 11), {"kernel_size": 3, "padding": 1}),
    ("adaptive_avg_pool1d", (2, 3, 11), {"output_size": 4}),
]


@pytest.mark.parametrize("dtype", [fb.float32, fb.float64])
@pytest.mark.parametrize(("fn", "shape", "kw"), CASES)
def test_pool_forward_backward_matches_cpu(fn, shape, kw, dtype):
    fb.manual_seed(0)
    pool = getattr(F, fn)
    x = fb.randn(*shape, dtype=dtype, requires_grad=True)
    y = pool(x, **kw)
    g = fb.randn(*y.shape, dtype=dtype)
    (y * g).sum().backward()
    xc = x.detach().cuda().requires_grad_(True)
    yc = pool(xc, **kw)
    assert yc.device.type == "cuda"
    (yc * g.cuda()).sum().backward()
    assert_close(yc, y, TOL[dtype])
    assert_close(xc.grad, x.grad, TOL[dtype])


def test_max_pool2d_indices_and_non_contiguous():
    x = fb.randn(2, 7, 6, 3, dtype=fb.float64).permute(0, 3, 1, 2)
    x[0, 0, 1, 1] = float("nan")
    v, i = F.max_pool2d(x, 3, stride=2, padding=1, return_indices=True)
    vc, ic = F.max_pool2d(x.cuda(), 3, stride=2, padding=1, return_indices=True)
    np.testing.assert_array_equal(to_numpy(vc), to_numpy(v))
    assert ic.tolist() == i.tolist()


def test_pool_errors():
    x = fb.randn(1, 2, 5, 5).cuda()
    with pytest.raises(ValueError, match="pad should be at most half"):
        F.max_pool2d(x, 2, padding=2)
    with pytest.raises(TypeError, match="float32 or float64"):
        F.avg_pool2d(fb.ones(1, 2, 4, 4, dtype=fb.int64).cuda(), 2)
    with pytest.raises(ValueError, match="divisor_override must be non-zero"):
        F.avg_pool2d(x, 2, divisor_override=0)
    with pytest.raises(IndexError, match="out of bounds"):
        fb.max_pool_backward(fb.ones(1, 1, 1, 1).cuda(), fb.tensor([[[[-1]]]]).cuda(), [1, 1, 3, 3])
