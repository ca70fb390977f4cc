"""The direct float32 convolution kernels skipping the taps that read only padding
(Note [Direct convolution], rows; Note [Pixel classes] in conv_direct_avx512.cpp)
against PyTorch 2.13 (CPU): row-aligned and flat register blocks
(backends.cpu.conv_row_blocks = "on" | "off"), pixel classes on and off
(backends.cpu.conv_pixel_classes = "off"), set per test; borders where whole kernel rows, columns or every tap read
padding (a pixel that is its bias alone), stride, dilation, groups, odd widths
(row tails), float32 and float64, non-contiguous inputs, inf and NaN in the
input next to the padding (a skipped tap must not change which outputs are
not finite), and the strided transposed phases."""

from __future__ import annotations

import flambeau_core as fc
import numpy as np
import pytest
import torch
from helpers import to_numpy

TOL = {np.float32: dict(rtol=2e-4, atol=2e-4), np.float64: dict(rtol=1e-10, atol=1e-10)}
FC = {np.float32: fc.float32, np.float64: fc.float64}

# (N, Cin, Cout, H, W, kernel, stride, padding, dilation, groups)
CASES = [
    (2, 16, 16, 32, 32, 3, 1, 1, 1, 1),  # ResNet-8 block 1: row-aligned, 2 vectors a row
    (2, 32, 32, 16, 16, 3, 1, 1, 1, 1),  # one vector a row
    (2, 16, 32, 32, 32, 3, 2, 1, 1, 1),  # stride 2: only the top row reads padding
    (2, 64, 64, 8, 8, 3, 1, 1, 1, 1),  # channel-vectorized: interior, edges, corners
    (2, 32, 64, 16, 16, 3, 2, 1, 1, 1),
    (2, 3, 13, 17, 33, 3, 1, 1, 1, 1),  # row tails (17 and 33 wide), 13 channels
    (2, 5, 7, 9, 7, 5, 1, 2, 1, 1),  # two kernel rows of padding on each side
    (2, 4, 9, 6, 20, 3, 1, 3, 1, 1),  # padding 3 with k 3: the outer rows are all padding (bias)
    (2, 4, 70, 6, 7, 3, 1, 3, 1, 1),  # the same on the channel-vectorized kernel, 70 channels
    (1, 6, 66, 5, 9, 5, 2, 4, 1, 1),
    (2, 4, 12, 12, 12, 3, 1, 2, 2, 1),  # dilation 2, padding 2
    (2, 4, 12, 15, 13, 3, 2, (2, 1), (2, 3), 1),
    (2, 6, 12, 10, 18, 3, 1, 1, 1, 2),  # groups
    (2, 128, 128, 6, 6, 3, 1, 1, 1, 2),  # groups on the channel-vectorized kernel
    (2, 3, 10, 13, 12, (5, 3), (2, 1), (2, 0), 1, 1),  # rectangular, padding along one dim only
    (2, 3, 8, 1, 40, (1, 3), 1, (0, 1), 1, 1),
    (2, 32, 48, 7, 9, 1, 2, 1, 1, 1),  # 1x1 with padding: border pixels read nothing
    (2, 8, 64, 3, 3, 3, 1, 1, 1, 1),  # every pixel a border pixel
]

MODES = [
    {},
    {"conv_row_blocks": "off"},
    {"conv_row_blocks": "on"},
    {"conv_pixel_classes": "off"},
    {"conv_row_blocks": "off", "conv_pixel_classes": "off"},
]


def _ids(c):
    return "x".join(str(v) for v in c).replace(" ", "")


def _mode_id(m):
    return ",".join(f"{k}={v}" for k, v in m.items()) or "default"


def _data(case, dtype, seed):
    n, cin, cout, h, w, k, s, p, d, g = case
    kk = (k, k) if isinstance(k, int) else k
    r = np.random.default_rng(seed)
    x = r.standard_normal((n, cin, h, w)).astype(dtype)
    wt = (r.standard_normal((cout, cin // g, *kk)) * 0.2).astype(dtype)
    b = r.standard_normal(cout).astype(dtype)
    return x, wt, b


def _torch_conv(x, wt, b, case):
    _, _, _, _, _, _, s, p, d, g = case
    return torch.nn.functional.conv2d(
        torch.from_numpy(x), torch.from_numpy(wt), None if b is None else torch.from_numpy(b), s, p, d, g
    ).numpy()


@pytest.mark.parametrize("mode", MODES, ids=_mode_id)
@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["f32", "f64"])
@pytest.mark.parametrize("case", CASES, ids=_ids)
def test_conv2d_matches_torch(case, dtype, mode, cpu_settings):
    cpu_settings(**mode)
    _, _, _, _, _, _, s, p, d, g = case
    x, wt, b = _data(case, dtype, 1)
    for bias in (b, None):
        y = fc.conv2d(fc.tensor(x), fc.tensor(wt), None if bias is None else fc.tensor(bias), s, p, d, g)
        assert y.dtype == FC[dtype]
        np.testing.assert_allclose(to_numpy(y), _torch_conv(x, wt, bias, case), **TOL[dtype])


@pytest.mark.parametrize("mode", MODES[:2] + MODES[3:4], ids=_mode_id)
@pytest.mark.parametrize("case", CASES[:6] + CASES[11:13], ids=_ids)
def test_conv2d_noncontiguous_input(case, mode, cpu_settings):
    cpu_settings(**mode)
    _, _, _, _, _, _, s, p, d, g = case
    x, wt, b = _data(case, np.float32, 2)
    wide = np.zeros(x.shape[:-1] + (2 * x.shape[-1],), np.float32)
    wide[..., ::2] = x
    fx = fc.tensor(wide)[..., ::2]
    assert not fx.is_contiguous()
    y = fc.conv2d(fx, fc.tensor(wt), fc.tensor(b), s, p, d, g)
    np.testing.assert_allclose(to_numpy(y), _torch_conv(x, wt, b, case), **TOL[np.float32])


# Non-finite inputs on the image's border rows and columns, next to the skipped padding taps:
# exactly the outputs whose windows reach them are inf / NaN, as in PyTorch.
BORDER = [
    (2, 16, 16, 12, 32, 3, 1, 1, 1, 1),
    (2, 32, 32, 9, 16, 3, 1, 1, 1, 1),
    (2, 16, 32, 12, 17, 3, 2, 1, 1, 1),
    (2, 64, 64, 8, 8, 3, 1, 1, 1, 1),
    (2, 32, 64, 10, 10, 3, 2, 1, 1, 1),
    (2, 4, 70, 6, 7, 3, 1, 3, 1, 1),
    (2, 5, 7, 9, 7, 5, 1, 2, 1, 1),
    (2, 4, 12, 12, 12, 3, 1, 2, 2, 1),
]


@pytest.mark.parametrize("mode", MODES, ids=_mode_id)
@pytest.mark.parametrize("value", [float("inf"), float("nan")], ids=["inf", "nan"])
@pytest.mark.parametrize("case", BORDER, ids=_ids)
def test_conv2d_nonfinite_border_input(case, value, mode, cpu_settings):
    cpu_settings(**mode)
    n, cin, _, h, w, _, s, p, d, g = case
    x, wt, b = _data(case, np.float32, 3)
    wt = np.abs(wt) + 0.01  # positive: sums of infs stay inf
    x[0, 0, 0, w // 2] = value  # first row
    x[1, cin - 1, h - 1, 1] = value  # last row
    x[0, cin // 2, h // 2, 0] = value  # first column
    x[1, 0, 1, w - 1] = value  # last column
    x[1, cin - 1, 0, 0] = value  # corner
    y = to_numpy(fc.conv2d(fc.tensor(x), fc.tensor(wt), fc.tensor(b), s, p, d, g))
    ref = _torch_conv(x, wt, b, case)
    np.testing.assert_array_equal(np.isnan(y), np.isnan(ref))
    np.testing.assert_array_equal(np.isinf(y), np.isinf(ref))
    fin = np.isfinite(ref)
    assert fin.any() and not fin.all()
    np.testing.assert_allclose(y[fin], ref[fin], rtol=2e-4, atol=2e-4)


# (N, Cin, Cout, H, W, k, stride, padding, output_padding, dilation, groups) of conv_transpose2d:
# the strided phases run on pixel classes, stride 1 on the forward kernels.
TRANSPOSED = [
    (2, 32, 16, 16, 16, 3, 2, 1, 1, 1, 1),
    (2, 64, 32, 8, 8, 3, 2, 1, 1, 1, 1),
    (2, 64, 64, 8, 8, 3, 1, 1, 0, 1, 1),
    (2, 16, 16, 16, 16, 3, 1, 1, 0, 1, 1),
    (2, 5, 70, 6, 5, 3, 2, 0, 0, 1, 1),
    (2, 6, 4, 5, 7, (3, 2), (2, 3), (1, 0), (1, 2), 1, 2),
    (1, 4, 66, 4, 3, 3, 2, 1, 0, 2, 1),
    (3, 16, 9, 7, 3, 5, 4, 2, 3, 1, 1),
    (2, 3, 5, 4, 4, 2, 3, 0, 2, 1, 1),  # kernel below the stride: a phase no tap reaches
]


@pytest.mark.parametrize("mode", MODES, ids=_mode_id)
@pytest.mark.parametrize("dtype", [np.float32, np.float64], ids=["f32", "f64"])
@pytest.mark.parametrize("case", TRANSPOSED, ids=_ids)
def test_conv_transpose2d_matches_torch(case, dtype, mode, cpu_settings):
    cpu_settings(**mode)
    n, cin, cout, h, w, k, s, p, op, d, g = case
    kk = (k, k) if isinstance(k, int) else k
    r = np.random.default_rng(4)
    x = r.standard_normal((n, cin, h, w)).astype(dtype)
    wt = (r.standard_normal((cin, cout // g, *kk)) * 0.2).astype(dtype)
    b = r.standard_normal(cout).astype(dtype)
    y = fc.conv_transpose2d(fc.tensor(x), fc.tensor(wt), fc.tensor(b), s, p, op, g, d)
    ref = torch.nn.functional.conv_transpose2d(
        torch.from_numpy(x), torch.from_numpy(wt), torch.from_numpy(b), s, p, op, g, d
    ).numpy()
    np.testing.assert_allclose(to_numpy(y), ref, **TOL[dtype])


@pytest.mark.parametrize("skipping", [{"conv_row_blocks": "on"}, MODES[4]], ids=["skipping", "not_skipping"])
@pytest.mark.parametrize("kernel", ["flat", "cv"])
def test_each_direct_kernel_with_and_without_skipping(kernel, skipping, cpu_settings):
    """backends.cpu.conv_direct_kernel forces the flat or the channel-vectorized kernel on every
    case, with skipping on and off, against torch."""
    cpu_settings(conv_direct_kernel=kernel, **skipping)
    r = np.random.default_rng(5)
    for case in [c for c in CASES if all(isinstance(c[i], int) for i in (5, 6, 7, 8))]:
        n, ci, co, h, w, k, s, p, d, g = case
        x = r.standard_normal((n, ci, h, w)).astype(np.float32)
        wt = r.standard_normal((co, ci // g, k, k)).astype(np.float32)
        b = r.standard_normal(co).astype(np.float32)
        y = fc.conv2d(fc.tensor(x), fc.tensor(wt), fc.tensor(b), s, p, d, g)
        ref = _torch_conv(x, wt, b, case)
        np.testing.assert_allclose(to_numpy(y), ref, rtol=2e-4, atol=2e-4, err_msg=repr(case))
