"""Convolutions of channels-last tensors against PyTorch (Note [Result layout]: the conv_format rule):
the output and the weight gradient are channels-last when the input or the weight is, as PyTorch's CPU
convolutions lay them out, with the values of a contiguous convolution; 1-D ones and empty batches stay
contiguous."""

import flambeau_core as fc
import numpy as np
import pytest
import torch
from helpers import to_numpy

CL = {fc: fc.channels_last, torch: torch.channels_last}


def _pair(shape, cl, seed, dtype=np.float32):
    """The same values as a flambeau and a torch tensor, channels-last when cl."""
    a = np.random.default_rng(seed).standard_normal(shape).astype(dtype)
    f, t = fc.tensor(a), torch.from_numpy(a.copy())
    if cl:
        f, t = f.contiguous(memory_format=fc.channels_last), t.contiguous(memory_format=torch.channels_last)
    return f, t


def _assert_as_torch(ours, theirs, *, tol=1e-4):
    assert tuple(ours.shape) == tuple(theirs.shape)
    assert tuple(ours.stride()) == tuple(theirs.stride()), (tuple(ours.stride()), tuple(theirs.stride()))
    _assert_values(ours, theirs, tol)


def _assert_values(ours, theirs, tol):
    np.testing.assert_allclose(to_numpy(ours), theirs.numpy(), rtol=tol, atol=tol)


# (input shape, weight shape, stride, padding, dilation, groups): batch 1 and several, odd sizes,
# channels 1/3/17/64, strides, padding, dilation, groups (depthwise), 1x1 kernels.
CASES = [
    ((2, 3, 9, 11), (8, 3, 3, 3), 1, 1, 1, 1),
    ((1, 3, 9, 11), (8, 3, 3, 3), 1, 1, 1, 1),
    ((3, 1, 7, 9), (4, 1, 3, 3), 2, 0, 1, 1),
    ((2, 17, 7, 5), (5, 17, 3, 3), 2, 1, 1, 1),
    ((2, 64, 8, 8), (64, 64, 3, 3), 1, 1, 1, 1),
    ((1, 64, 9, 9), (17, 64, 1, 1), 1, 0, 1, 1),
    ((2, 16, 9, 9), (16, 1, 3, 3), 1, 1, 1, 16),
    ((2, 12, 10, 9), (9, 4, 3, 3), 1, 2, 2, 3),
    ((2, 3, 11, 11), (4, 3, 5, 5), 3, 2, 2, 1),
    # 64+ output channels per group: the channel-vectorized direct kernel, NHWC in and out.
    ((3, 17, 7, 9), (80, 17, 3, 3), 2, 1, 1, 1),
    ((1, 32, 6, 5), (128, 16, 3, 3), 1, 1, 2, 2),
]
LAYOUTS = [(False, False), (True, False), (False, True), (True, True)]


@pytest.mark.parametrize("case", CASES)
@pytest.mark.parametrize(("x_cl", "w_cl"), LAYOUTS)
def test_conv2d_output_layout_and_values_as_torch(case, x_cl, w_cl):
    xs, ws, stride, padding, dilation, groups = case
    fx, tx = _pair(xs, x_cl, 0)
    fw, tw = _pair(ws, w_cl, 1)
    fb, tb = _pair(ws[:1], False, 2)
    ours = fc.conv2d(fx, fw, fb, stride, padding, dilation, groups)
    theirs = torch.nn.functional.conv2d(tx, tw, tb, stride, padding, dilation, groups)
    _assert_as_torch(ours, theirs)


@pytest.mark.parametrize(("x_cl", "w_cl"), LAYOUTS)
@pytest.mark.parametrize("dtype", [np.float64, np.float32])
@pytest.mark.parametrize(
    "case",
    [
        ((2, 6, 5, 7), (6, 3, 3, 3), 2, 1, 1, 1),
        ((1, 4, 5, 5), (4, 1, 3, 3), 2, 0, 1, 4),
        ((2, 32, 6, 7), (32, 64, 3, 3), 1, 1, 0, 1),  # stride 1, 64 outputs: the direct kernel on NHWC
    ],
)
def test_conv_transpose2d_output_layout_and_values_as_torch(case, x_cl, w_cl, dtype):
    xs, ws, stride, padding, output_padding, groups = case
    fx, tx = _pair(xs, x_cl, 3, dtype)
    fw, tw = _pair(ws, w_cl, 4, dtype)
    ours = fc.conv_transpose2d(fx, fw, None, stride, padding, output_padding, groups)
    theirs = torch.nn.functional.conv_transpose2d(tx, tw, None, stride, padding, output_padding, groups)
    _assert_as_torch(ours, theirs)


@pytest.mark.parametrize("case", [CASES[4], CASES[9], CASES[10]])
def test_nhwc_kernels_give_the_nchw_kernels_values(case):
    # The same sums in the same order, whichever layout the kernel reads and writes.
    xs, ws, stride, padding, dilation, groups = case
    fx, _ = _pair(xs, False, 16)
    fw, _ = _pair(ws, False, 17)
    fb, _ = _pair(ws[:1], False, 18)
    nchw = fc.conv2d(fx, fw, fb, stride, padding, dilation, groups)
    nhwc = fc.conv2d(fx.contiguous(memory_format=fc.channels_last), fw, fb, stride, padding, dilation, groups)
    assert nhwc.is_contiguous(memory_format=fc.channels_last)
    np.testing.assert_array_equal(to_numpy(nhwc), to_numpy(nchw))


def test_conv1d_of_a_channels_last_like_input_stays_contiguous():
    a = np.random.default_rng(5).standard_normal((2, 9, 4)).astype(np.float32)
    w = np.random.default_rng(6).standard_normal((5, 4, 3)).astype(np.float32)
    ours = fc.conv1d(fc.tensor(a).permute(0, 2, 1), fc.tensor(w))
    theirs = torch.nn.functional.conv1d(torch.from_numpy(a).permute(0, 2, 1), torch.from_numpy(w))
    _assert_as_torch(ours, theirs)


def test_unbatched_input_with_a_channels_last_weight():
    fx, tx = _pair((3, 7, 9), False, 7)
    fw, tw = _pair((4, 3, 3, 3), True, 8)
    _assert_as_torch(fc.conv2d(fx, fw), torch.nn.functional.conv2d(tx, tw))


@pytest.mark.parametrize(("x_cl", "w_cl"), LAYOUTS)
def test_empty_batch_gives_a_contiguous_empty_result(x_cl, w_cl):
    fx, tx = _pair((0, 3, 7, 9), x_cl, 9)
    fw, tw = _pair((4, 3, 3, 3), w_cl, 10)
    _assert_as_torch(fc.conv2d(fx, fw, None, 1, 1), torch.nn.functional.conv2d(tx, tw, None, 1, 1))


def test_a_channels_last_slice_and_a_bfloat16_input():
    a = np.random.default_rng(11).standard_normal((2, 7, 9, 6)).astype(np.float32)
    fx = fc.tensor(a).permute(0, 3, 1, 2)[:, ::2]  # channels-last strides, not dense
    tx = torch.from_numpy(a).permute(0, 3, 1, 2)[:, ::2]
    fw, tw = _pair((4, 3, 3, 3), False, 12)
    _assert_as_torch(fc.conv2d(fx, fw), torch.nn.functional.conv2d(tx, tw))
    ours = fc.conv2d(fx.to(fc.bfloat16), fw.to(fc.bfloat16)).to(fc.float32)
    theirs = torch.nn.functional.conv2d(tx.bfloat16(), tw.bfloat16()).float()
    _assert_as_torch(ours, theirs, tol=0.1)


@pytest.mark.parametrize("case", CASES[:6])
@pytest.mark.parametrize(("x_cl", "w_cl"), LAYOUTS)
def test_weight_gradient_layout_and_values_as_torch(case, x_cl, w_cl):
    # grad_output in the forward output's layout (what the next op's backward gives back).
    xs, ws, stride, padding, dilation, groups = case
    fx, tx = _pair(xs, x_cl, 13)
    fw, tw = _pair(ws, w_cl, 14)
    ty = torch.ops.aten.convolution(tx, tw, None, [stride] * 2, [padding] * 2, [dilation] * 2, False, [0, 0], groups)
    g = np.random.default_rng(15).standard_normal(tuple(ty.shape)).astype(np.float32)
    tg = (
        torch.from_numpy(g).contiguous(memory_format=torch.channels_last)
        if ty.is_contiguous(memory_format=torch.channels_last) and not ty.is_contiguous()
        else torch.from_numpy(g)
    )
    fg = fc.tensor(g).contiguous(memory_format=fc.channels_last) if not tg.is_contiguous() else fc.tensor(g)
    args = ([stride] * 2, [padding] * 2, [dilation] * 2, False, [0, 0], groups)
    _, theirs, _ = torch.ops.aten.convolution_backward(tg, tx, tw, None, *args, [False, True, False])
    ours = fc._C._convolution_backward_weight(fg, fx, list(ws), *args)
    if theirs.is_contiguous() and theirs.is_contiguous(memory_format=torch.channels_last):
        # A weight both row-major and channels-last (1x1, one input channel): PyTorch's strides then
        # depend on the backend it picks (thread count, batch size); flambeau's are the mkldnn ones.
        assert ours.is_contiguous() and ours.is_contiguous(memory_format=fc.channels_last)
        _assert_values(ours, theirs, 2e-3)
    else:
        _assert_as_torch(ours, theirs, tol=2e-3)
