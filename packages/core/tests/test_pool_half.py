"""Resampling, padding gradients and im2col/col2im on float16 / bfloat16 against PyTorch 2.13 (cpu/pool/
resample.cpp, pool_pad.cpp, and conv.cpp's im2col/col2im): the float32 loops on float32 copies, each result
rounded once (Note [Low-precision kernels]). Nearest upsampling and im2col copy (bit for bit); bilinear
upsampling, the resampling gradients and col2im add in float32 (within a unit of the last place of
PyTorch's); the reflect and replicate pads' gradients add in the 16-bit dtype as PyTorch's (bit for bit)."""

from __future__ import annotations

import flambeau_core as fc
import numpy as np
import pytest
import torch
import torch.nn.functional as F
from helpers import assert_same_as_torch, assert_within_ulps, from_torch, to_numpy, torch_values

DTYPES = ["float16", "bfloat16"]


def needs_autograd() -> None:
    pytest.importorskip("flambeau_autograd", reason="gradients need flambeau-autograd")


def check(torch_fn, fc_fn, t: torch.Tensor, fwd_ulps: int, bwd_ulps: int | None) -> None:
    """Forward and gradient within the given units of PyTorch's; bwd_ulps None: the gradient (a sum of
    overlapping copies, which PyTorch adds in the 16-bit dtype in an order of its own) within a few 16-bit
    epsilons of the largest gradient of the float64 result."""
    tx = t.clone().requires_grad_(True)
    theirs = torch_fn(tx)
    x = from_torch(t)
    assert_within_ulps(fc_fn(x), theirs.detach(), fwd_ulps)
    needs_autograd()
    g = torch_values(str(t.dtype).removeprefix("torch."), tuple(theirs.shape), 5)
    theirs.backward(g)
    x.requires_grad_(True)
    fc_fn(x).backward(from_torch(g))
    if bwd_ulps is not None:
        assert_within_ulps(x.grad, tx.grad, bwd_ulps)
        return
    xd = t.double().requires_grad_(True)
    torch_fn(xd).backward(g.double())
    ref = xd.grad.numpy()
    eps = 2.0**-7 if t.dtype == torch.bfloat16 else 2.0**-10
    np.testing.assert_allclose(to_numpy(x.grad), ref, rtol=0, atol=4 * eps * np.abs(ref).max())


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("size", [(10, 14), (5, 3)])
def test_upsample_nearest(size, dtype):
    t = torch_values(dtype, (2, 3, 6, 7), 0, scale=2.0)
    check(lambda x: F.interpolate(x, size=size), lambda x: fc.upsample_nearest2d(x, size), t, 0, 1)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("align_corners", [False, True])
def test_upsample_bilinear(align_corners, dtype):
    t = torch_values(dtype, (2, 3, 6, 7), 1, scale=2.0)
    check(
        lambda x: F.interpolate(x, size=(11, 9), mode="bilinear", align_corners=align_corners),
        lambda x: fc.upsample_bilinear2d(x, (11, 9), align_corners),
        t,
        1,
        1,
    )


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("mode", ["reflect", "replicate", "circular"])
def test_pad_gradient(mode, dtype):
    # reflect and replicate add the copies' gradients in the 16-bit dtype in output order, as PyTorch's kernel
    # (bit for bit); PyTorch's circular pad is a composition of slices with a gradient of its own order.
    t = torch_values(dtype, (2, 3, 5, 6), 2, scale=2.0)
    pad = (2, 1, 3, 2)
    check(
        lambda x: F.pad(x, pad, mode),
        lambda x: fc._C._pad_nd(x, list(pad), mode),
        t,
        0,
        None if mode == "circular" else 0,
    )


@pytest.mark.parametrize("dtype", DTYPES)
def test_im2col_col2im(dtype):
    t = torch_values(dtype, (2, 3, 7, 8), 3, scale=2.0)
    check(
        lambda x: F.unfold(x, (3, 2), dilation=1, padding=1, stride=(2, 1)),
        lambda x: fc.im2col(x, (3, 2), (1, 1), (1, 1), (2, 1)),
        t,
        0,
        None,
    )
    cols = torch_values(dtype, (2, 12, 16), 4, scale=2.0)
    check(
        lambda x: F.fold(x, (6, 7), (2, 2), padding=1, stride=2),
        lambda x: fc.col2im(x, (6, 7), (2, 2), (1, 1), (1, 1), (2, 2)),
        cols,
        1,
        0,
    )


@pytest.mark.parametrize("dtype", DTYPES)
def test_nearest_forward_is_a_copy(dtype):
    t = torch_values(dtype, (1, 2, 3, 3), 6, scale=1e4)
    assert_same_as_torch(fc.upsample_nearest2d(from_torch(t), (6, 6)), F.interpolate(t, size=(6, 6)))
