"""Gradients of channels-last convolutions against PyTorch: grad_input and grad_weight laid out as
PyTorch's CPU convolutions lay them out (channels-last when the input or the weight is, whatever the
layout of the gradient that reaches the convolution: conv_grad_in_format), with its values, and
gradcheck of channels-last float64 convolutions."""

from __future__ import annotations

import flambeau_autograd
import flambeau_core as fc
import numpy as np
import pytest
import torch


def _pair(shape, cl, seed):
    a = np.random.default_rng(seed).standard_normal(shape)
    f, t = fc.tensor(a), torch.from_numpy(a.copy())
    if cl:
        f, t = f.contiguous(memory_format=fc.channels_last), t.contiguous(memory_format=torch.channels_last)
    return f.requires_grad_(True), t.requires_grad_(True)


def _assert_as_torch(ours, theirs):
    assert tuple(ours.shape) == tuple(theirs.shape)
    if theirs.is_contiguous() and theirs.is_contiguous(memory_format=torch.channels_last):
        # Both row-major and channels-last (a depthwise or 1x1 weight): PyTorch's strides then depend on
        # the backend it picks (dtype, batch, threads); flambeau's are its mkldnn ones.
        assert ours.is_contiguous() and ours.is_contiguous(memory_format=fc.channels_last)
    else:
        assert tuple(ours.stride()) == tuple(theirs.stride()), (tuple(ours.stride()), tuple(theirs.stride()))
    np.testing.assert_allclose(np.asarray(ours.tolist()), theirs.detach().numpy(), rtol=1e-9, atol=1e-9)


LAYOUTS = [(False, False), (True, False), (False, True), (True, True)]
# (input, weight, stride, padding, groups, transposed)
CASES = [
    ((2, 3, 7, 9), (4, 3, 3, 3), 1, 1, 1, False),
    ((3, 17, 6, 5), (8, 17, 3, 3), 2, 1, 1, False),
    ((2, 8, 6, 6), (8, 1, 3, 3), 1, 1, 8, False),
    ((2, 4, 5, 5), (4, 3, 3, 3), 2, 0, 1, True),
    ((2, 64, 6, 5), (32, 64, 3, 3), 1, 1, 1, False),  # 64 input channels: NHWC input gradient
]


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize(("x_cl", "w_cl"), LAYOUTS)
@pytest.mark.parametrize("grad_of", ["sum", "weighted"])
def test_input_and_weight_gradients_as_torch(case, x_cl, w_cl, grad_of):
    # "sum" sends an expanded (stride-0) gradient, "weighted" one laid out as the output.
    xs, ws, stride, padding, groups, transposed = case
    fx, tx = _pair(xs, x_cl, 0)
    fw, tw = _pair(ws, w_cl, 1)
    conv = "conv_transpose2d" if transposed else "conv2d"
    fy = getattr(fc, conv)(fx, fw, None, stride, padding, groups=groups)
    ty = getattr(torch.nn.functional, conv)(tx, tw, None, stride, padding, groups=groups)
    if grad_of == "sum":
        fl, tl = fy.sum(), ty.sum()
    else:
        m = np.random.default_rng(2).standard_normal(tuple(ty.shape))
        fl, tl = (fy * fc.tensor(m)).sum(), (ty * torch.from_numpy(m)).sum()
    fgx, fgw = flambeau_autograd.grad(fl, [fx, fw])
    tgx, tgw = torch.autograd.grad(tl, [tx, tw])
    _assert_as_torch(fgx, tgx)
    _assert_as_torch(fgw, tgw)


@pytest.mark.parametrize(("x_cl", "w_cl"), LAYOUTS[1:])
def test_gradcheck_of_channels_last_convolutions(x_cl, w_cl):
    fx, _ = _pair((2, 3, 5, 4), x_cl, 3)
    fw, _ = _pair((4, 3, 2, 2), w_cl, 4)
    fb, _ = _pair((4,), False, 5)
    assert flambeau_autograd.gradcheck(lambda x, w, b: fc.conv2d(x, w, b, 1, 1), (fx, fw, fb))
    fwt, _ = _pair((3, 2, 2, 2), w_cl, 6)
    assert flambeau_autograd.gradcheck(lambda x, w: fc.conv_transpose2d(x, w, None, 2), (fx, fwt))
