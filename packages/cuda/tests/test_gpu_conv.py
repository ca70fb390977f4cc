"""flambeau-cuda's convolution on a GPU (Note [CUDA convolution]) against the CPU: conv1d/conv2d and the
transposed forms, forward and backward (input, weight, bias), groups, strides, padding, dilation,
non-contiguous inputs, float32 and float64, and the error paths.

Skipped with "no CUDA GPU" elsewhere (the index math is checked on the host by tests/cpp/test_conv_math.cpp).
"""

from __future__ import annotations

import pytest
from conftest import requires_gpu
from cuda_testing import assert_close

pytestmark = requires_gpu
fb = pytest.importorskip("flambeau")
F = pytest.importorskip("flambeau_nn.functional")


TOL = {fb.float32: 2e-4, fb.float64: 1e-10}


CASES = [
    # (fn, input shape, weight shape, kwargs)
    ("conv2d", (2, 4, 7, 6), (6, 4, 3, 3), {}),
    ("conv2d", (3, 4, 9, 8), (6, 2, 3, 2), {"stride": (2, 1), "padding": (1, 2), "dilation": (2, 1), "groups": 2}),
    ("conv2d", (1, 3, 5, 5), (3, 1, 3, 3), {"padding": 1, "groups": 3}),  # depthwise
    ("conv2d", (2, 8, 4, 4), (5, 8, 1, 1), {}),  # pointwise
    ("conv1d", (2, 3, 11), (4, 3, 3), {"stride": 2, "padding": 1}),
    ("conv1d", (1, 4, 9), (6, 2, 2), {"dilation": 3, "groups": 2}),
    ("conv_transpose2d", (2, 4, 5, 4), (4, 3, 3, 3), {"stride": 2, "padding": 1, "output_padding": 1}),
    ("conv_transpose2d", (1, 4, 3, 3), (4, 2, 2, 3), {"groups": 2, "dilation": (1, 2)}),
    ("conv_transpose1d", (2, 3, 7), (3, 5, 4), {"stride": 3}),
]


@pytest.mark.parametrize("dtype", [fb.float32, fb.float64])
@pytest.mark.parametrize(("fn", "xs", "ws", "kw"), CASES)
def test_conv_forward_backward_matches_cpu(fn, xs, ws, kw, dtype):
    fb.manual_seed(0)
    conv = getattr(F, fn)
    groups = kw.get("groups", 1)
    cout = ws[1] * groups if fn.startswith("conv_transpose") else ws[0]
    x = fb.randn(*xs, dtype=dtype, requires_grad=True)
    w = fb.randn(*ws, dtype=dtype, requires_grad=True)
    b = fb.randn(cout, dtype=dtype, requires_grad=True)
    y = conv(x, w, b, **kw)
    g = fb.randn(*y.shape, dtype=dtype)
    (y * g).sum().backward()
    xc, wc, bc = (t.detach().cuda().requires_grad_(True) for t in (x, w, b))
    yc = conv(xc, wc, bc, **kw)
    assert yc.device.type == "cuda"
    (yc * g.cuda()).sum().backward()
    assert_close(yc, y, TOL[dtype])
    assert_close(xc.grad, x.grad, TOL[dtype])
    assert_close(wc.grad, w.grad, TOL[dtype])
    assert_close(bc.grad, b.grad, TOL[dtype])


def test_conv_non_contiguous_and_no_bias():
    x = fb.randn(2, 6, 8, 3, dtype=fb.float64).permute(0, 3, 1, 2)  # (2, 3, 6, 8), not contiguous
    w = fb.randn(4, 3, 3, 3, dtype=fb.float64).transpose(2, 3)
    y = F.conv2d(x, w, stride=2)
    yc = F.conv2d(x.cuda(), w.cuda(), stride=2)
    assert_close(yc, y, TOL[fb.float64])


def test_conv_gradcheck_float64():
    ag = pytest.importorskip("flambeau_autograd")
    x = fb.randn(1, 2, 5, 4, dtype=fb.float64).cuda().requires_grad_(True)
    w = fb.randn(3, 2, 2, 2, dtype=fb.float64).cuda().requires_grad_(True)
    assert ag.gradcheck(lambda a, b: F.conv2d(a, b, padding=1, stride=(1, 2)), (x, w))


def test_conv_errors():
    x = fb.randn(1, 3, 5, 5).cuda()
    with pytest.raises(ValueError, match=r"expected input\[1, 3, 5, 5\] to have 4 channels"):
        F.conv2d(x, fb.randn(2, 4, 3, 3).cuda())
    with pytest.raises(TypeError, match=r"input type \(float32\) and weight type \(float64\)"):
        F.conv2d(x, fb.randn(2, 3, 3, 3, dtype=fb.float64).cuda())
    with pytest.raises(ValueError, match="kernel size"):
        F.conv2d(x, fb.randn(2, 3, 7, 7).cuda())
    with pytest.raises(RuntimeError, match="same device"):
        F.conv2d(x, fb.randn(2, 3, 3, 3))
