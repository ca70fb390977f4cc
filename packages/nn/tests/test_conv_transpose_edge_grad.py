"""Gradients at the edge of the pointwise convolution path and of max pooling,
against PyTorch 2.13 (CPU):
- transposed 1x1, stride-1, unpadded convolutions with output_padding > 0 and
  dilation (the output is larger than the input), batch 1 and > 1, groups,
  1-D and 2-D: input, weight and bias gradients in float32 and float64,
  gradcheck in float64;
- max_pool2d with a dilated window that has no element inside the image: the
  forward gives -inf and the index of the window's first position (as
  PyTorch); such an output cell sends no gradient where that index is past
  the plane (PyTorch's CPU backward writes outside the input there) and to
  that index where it lies inside the plane (as PyTorch)."""

from __future__ import annotations

import flambeau_autograd as fa
import flambeau_core as fc
import flambeau_nn.functional as F
import numpy as np
import pytest
import torch
from nn_testing import assert_close, from_torch, to_numpy

TOL = {torch.float32: dict(rtol=1e-4, atol=1e-4), torch.float64: dict(rtol=1e-9, atol=1e-9)}
DTYPES = [torch.float32, torch.float64]

# (N, Cin, spatial, Cout per group, output_padding, dilation, groups)
CASES = [
    (1, 2, (1,), 3, (1,), (2,), 1),
    (1, 2, (5,), 3, (1,), (2,), 1),
    (3, 2, (4,), 3, (2,), (3,), 1),
    (1, 4, (3,), 1, (2,), (3,), 2),
    (1, 2, (3, 4), 3, (1, 0), (2, 1), 1),
    (1, 2, (2, 3), 2, (1, 1), (2, 2), 1),
    (2, 4, (3, 3), 2, (1, 2), (2, 3), 2),
    (4, 3, (2, 5), 1, (1, 1), (3, 2), 3),
]


def _fns(sp):
    return (
        (F.conv_transpose1d, torch.nn.functional.conv_transpose1d)
        if len(sp) == 1
        else (
            F.conv_transpose2d,
            torch.nn.functional.conv_transpose2d,
        )
    )


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", CASES, ids=str)
def test_conv_transpose_1x1_output_padding_grads(case, dtype):
    N, Cin, sp, Cog, op, d, G = case
    torch.manual_seed(hash(case) % 1000)
    x = torch.randn(N, Cin, *sp, dtype=dtype, requires_grad=True)
    w = torch.randn(Cin, Cog, *([1] * len(sp)), dtype=dtype, requires_grad=True)
    b = torch.randn(Cog * G, dtype=dtype, requires_grad=True)
    ours_f, theirs_f = _fns(sp)
    kw = dict(stride=1, padding=0, output_padding=op, groups=G, dilation=d)
    yt = theirs_f(x, w, b, **kw)
    xo, wo, bo = (from_torch(t).requires_grad_(True) for t in (x, w, b))
    yo = ours_f(xo, wo, bo, **kw)
    assert_close(yo, yt, **TOL[dtype])
    g = torch.randn(yt.shape, dtype=dtype)
    yt.backward(g)
    (yo * from_torch(g)).sum().backward()
    for o, t in ((xo, x), (wo, w), (bo, b)):
        assert_close(o.grad, t.grad, **TOL[dtype])


@pytest.mark.parametrize("case", CASES[:3] + CASES[5:6], ids=str)
def test_conv_transpose_1x1_output_padding_gradcheck(case):
    N, Cin, sp, Cog, op, d, G = case
    rng = np.random.default_rng(3)
    x = fc.tensor(rng.standard_normal((N, Cin, *sp))).requires_grad_(True)
    w = fc.tensor(rng.standard_normal((Cin, Cog, *([1] * len(sp))))).requires_grad_(True)
    ours_f = _fns(sp)[0]
    assert fa.gradcheck(lambda a, c: ours_f(a, c, None, 1, 0, op, G, d), (x, w))


EMPTY = [  # (H, W): kernel 2, stride 1, padding 1, dilation 3: windows at -1 and 2
    (2, 2),  # the window's index is past the plane
    (2, 3),
    (2, 5),
    (3, 2),  # index inside the plane (PyTorch sends the gradient there)
    (5, 2),
    (4, 4),  # windows with elements beside
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("hw", EMPTY, ids=str)
def test_max_pool2d_empty_dilated_window(hw, dtype):
    torch.manual_seed(sum(hw))
    x = torch.randn(2, 3, *hw, dtype=dtype)
    kw = dict(kernel_size=2, stride=1, padding=1, dilation=3, return_indices=True)
    yt, it = torch.nn.functional.max_pool2d(x, **kw)
    xo = from_torch(x).requires_grad_(True)
    yo, io = F.max_pool2d(xo, **kw)
    assert_close(yo, yt, rtol=0, atol=0)
    np.testing.assert_array_equal(to_numpy(io), it.numpy())
    g = torch.randn(yt.shape, dtype=dtype)
    (yo * from_torch(g)).sum().backward()
    # Expected: each output cell's gradient added at its index when inside the plane (PyTorch's rule; the
    # cells whose index is past the plane crash or corrupt PyTorch's CPU backward, so it is not called).
    plane = hw[0] * hw[1]
    exp = np.zeros((6, plane), x.numpy().dtype)
    for c, (idx, gr) in enumerate(zip(it.reshape(6, -1).numpy(), g.reshape(6, -1).numpy(), strict=True)):
        for k, v in zip(idx, gr, strict=True):
            if k < plane:
                exp[c, k] += v
    np.testing.assert_allclose(to_numpy(xo.grad), exp.reshape(x.shape), **TOL[dtype])
    if all(int(k) < plane for k in it.flatten()):
        xt = x.clone().requires_grad_(True)
        torch.nn.functional.max_pool2d(xt, **kw)[0].backward(g)
        assert_close(xo.grad, xt.grad, **TOL[dtype])


def test_max_pool_backward_negative_index_raises():
    with pytest.raises(IndexError, match="max_pool_backward.*out of bounds"):
        fc.max_pool_backward(fc.ones(1, 1, 1, 1), fc.tensor([[[[-1]]]]), [1, 1, 3, 3])
    # An index past the plane (an empty window's) sends nothing.
    gi = fc.max_pool_backward(fc.ones(1, 1, 1, 1), fc.tensor([[[[9]]]]), [1, 1, 3, 3])
    assert to_numpy(gi).sum() == 0


@pytest.mark.parametrize("hw", [(2, 3), (3, 2), (4, 4)], ids=str)
def test_max_pool2d_empty_dilated_window_double_backward(hw):
    # The gradient of max_pool_backward's grad_output: the input gradient gathered at each index (zero past
    # the plane), checked against PyTorch where every index lies inside the plane and by gradgradcheck.
    rng = np.random.default_rng(sum(hw))
    x = fc.tensor(rng.standard_normal((1, 2, *hw))).requires_grad_(True)
    y, idx = F.max_pool2d(x, 2, 1, 1, 3, return_indices=True)
    g = fc.tensor(rng.standard_normal(tuple(y.shape))).requires_grad_(True)
    (gx,) = fa.grad((y * g).sum(), [x], create_graph=True)
    v = rng.standard_normal(tuple(x.shape))
    (gg,) = fa.grad((gx * fc.tensor(v)).sum(), [g])
    plane = hw[0] * hw[1]
    ind = to_numpy(idx).reshape(2, -1)
    exp = np.where(ind < plane, np.take_along_axis(v.reshape(2, -1), np.minimum(ind, plane - 1), 1), 0.0)
    np.testing.assert_allclose(to_numpy(gg), exp.reshape(tuple(y.shape)), rtol=1e-12, atol=1e-12)
    assert fa.gradcheck(lambda gr: fc.max_pool_backward(gr, idx, list(x.shape)), (g,))
