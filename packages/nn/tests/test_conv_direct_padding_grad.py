"""Gradients through the direct float32 convolution kernels that skip the taps reading
only padding (Note [Direct convolution], rows; Note [Pixel classes]) and the
channel-vectorized weight gradient's pixel-major output-gradient copy (Note
[Direct weight gradient]), against PyTorch: F.conv2d's output, input and weight
gradients with the row-aligned blocks and pixel classes on and off
(the settings conv_row_blocks, conv_pixel_classes, conv_weight_grad_kernel of
flambeau_core.backends.cpu, set per test),
float32 and float64, non-contiguous inputs, inf next to the padding, and
gradcheck in float64."""

from __future__ import annotations

import flambeau_autograd as fa
import flambeau_nn.functional as F
import numpy as np
import pytest
import torch
from nn_testing import assert_close, from_torch, to_numpy

TOL = {torch.float32: dict(rtol=1e-4, atol=1e-4), torch.float64: dict(rtol=1e-9, atol=1e-9)}

# (N, Cin, Cout, H, W, k, stride, padding, dilation, groups)
CASES = [
    (4, 16, 16, 32, 32, 3, 1, 1, 1, 1),
    (4, 32, 32, 16, 16, 3, 1, 1, 1, 1),
    (4, 16, 32, 32, 32, 3, 2, 1, 1, 1),
    (4, 32, 64, 16, 16, 3, 2, 1, 1, 1),
    (4, 64, 64, 8, 8, 3, 1, 1, 1, 1),
    (3, 5, 13, 9, 17, 3, 1, 1, 1, 1),  # odd: row tail, 13 channels
    (2, 4, 9, 6, 20, 3, 1, 3, 1, 1),  # outer output rows read only padding
    (2, 6, 70, 7, 5, 3, 1, 2, 1, 1),  # 70 channels on the channel-vectorized kernels
    (2, 20, 37, 9, 11, 3, 1, 1, 1, 1),  # 37 channels: a gradient row padded to 48 (copy tails)
    (2, 4, 12, 12, 12, 3, 1, 2, 2, 1),  # dilation
    (2, 6, 12, 10, 18, 3, 2, 1, 1, 2),  # groups, stride 2
    (2, 64, 128, 5, 7, 3, 1, 1, 1, 2),
]

MODES = [
    {},
    {"conv_row_blocks": "off", "conv_pixel_classes": "off"},
    {"conv_row_blocks": "on", "conv_weight_grad_kernel": "cv"},
    {"conv_weight_grad_kernel": "flat"},
]


def _ids(c):
    return "x".join(str(v) for v in c).replace(" ", "")


def _mode_id(m):
    return ",".join(f"{k}={v}" for k, v in m.items()) or "default"


def _both(case, dtype, noncontig=False, seed=0, x=None):
    n, cin, cout, h, w, k, s, p, d, g = case
    gen = torch.Generator().manual_seed(seed)
    if x is None:
        x = torch.randn(n, cin, h, w, dtype=dtype, generator=gen)
    wt = torch.randn(cout, cin // g, k, k, dtype=dtype, generator=gen) * 0.2
    b = torch.randn(cout, dtype=dtype, generator=gen)
    tx, tw, tb = (t.clone().requires_grad_(True) for t in (x, wt, b))
    ty = torch.nn.functional.conv2d(tx, tw, tb, s, p, d, g)
    gy = torch.rand(ty.shape, dtype=dtype, generator=gen) + 0.5
    ty.backward(gy)
    if noncontig:
        fx = from_torch(x.transpose(-1, -2).contiguous()).transpose(-1, -2)
        assert not fx.is_contiguous()
    else:
        fx = from_torch(x)
    fx.requires_grad_(True)
    fw, fb = from_torch(wt).requires_grad_(True), from_torch(b).requires_grad_(True)
    fy = F.conv2d(fx, fw, fb, s, p, d, g)
    fy.backward(from_torch(gy))
    return (fy, fx.grad, fw.grad, fb.grad), (ty, tx.grad, tw.grad, tb.grad)


@pytest.mark.parametrize("mode", MODES, ids=_mode_id)
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64], ids=["f32", "f64"])
@pytest.mark.parametrize("case", CASES, ids=_ids)
def test_conv2d_grads_match_torch(case, dtype, mode, cpu_settings):
    cpu_settings(**mode)
    ours, theirs = _both(case, dtype)
    for o, t in zip(ours, theirs, strict=True):
        assert_close(o, t, **TOL[dtype], scale_atol=True)


@pytest.mark.parametrize("mode", MODES[:2], ids=_mode_id)
@pytest.mark.parametrize("case", CASES[:8], ids=_ids)
def test_conv2d_grads_noncontiguous_input(case, mode, cpu_settings):
    cpu_settings(**mode)
    ours, theirs = _both(case, torch.float32, noncontig=True, seed=1)
    for o, t in zip(ours, theirs, strict=True):
        assert_close(o, t, **TOL[torch.float32], scale_atol=True)


@pytest.mark.parametrize("mode", MODES, ids=_mode_id)
@pytest.mark.parametrize("case", [CASES[1], CASES[4], CASES[6], CASES[7]], ids=_ids)
def test_conv2d_grads_inf_on_the_border(case, mode, cpu_settings):
    """inf in the first and last rows and columns: the same inf / NaN / finite outputs and gradients."""
    cpu_settings(**mode)
    n, cin, _, h, w = case[:5]
    x = torch.randn(n, cin, h, w, generator=torch.Generator().manual_seed(7))
    x[0, 0, 0, w // 2] = float("inf")
    x[n - 1, cin - 1, h - 1, 0] = float("inf")
    x[0, cin // 2, h // 2, w - 1] = float("inf")
    ours, theirs = _both(case, torch.float32, seed=2, x=x)
    for o, t in zip(ours, theirs, strict=True):
        a, b = to_numpy(o), t.detach().numpy()
        np.testing.assert_array_equal(np.isnan(a), np.isnan(b))
        np.testing.assert_array_equal(np.isinf(a), np.isinf(b))
        fin = np.isfinite(b)
        scale = max(1.0, float(np.abs(b[fin]).max())) if fin.any() else 1.0
        np.testing.assert_allclose(a[fin], b[fin], rtol=1e-4, atol=1e-4 * scale)


@pytest.mark.parametrize(
    "args",
    [
        dict(stride=1, padding=1),
        dict(stride=1, padding=3),
        dict(stride=2, padding=2, dilation=2),
        dict(stride=1, padding=(2, 0), groups=2),
    ],
)
def test_gradcheck_conv2d_f64(args):
    gen = torch.Generator().manual_seed(3)
    x = from_torch(torch.randn(2, 4, 6, 5, dtype=torch.float64, generator=gen)).requires_grad_(True)
    w = from_torch(torch.randn(6, 4 // args.get("groups", 1), 3, 3, dtype=torch.float64, generator=gen))
    b = from_torch(torch.randn(6, dtype=torch.float64, generator=gen))
    w.requires_grad_(True)
    b.requires_grad_(True)
    assert fa.gradcheck(lambda x, w, b: F.conv2d(x, w, b, **args), (x, w, b))
