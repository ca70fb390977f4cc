"""The AVX2 direct float32 convolution (Note [AVX2 direct convolution], conv_direct_avx2.cpp) against
PyTorch 2.13 (CPU): the geometries it takes where the AVX-512 kernels are not there (3x3 and other
kernels up to 7x7, strides 1 and 2, padding on one side only or none, output channels that do not fill a
tile of 4, planes whose wide rows end in a partial vector, one image and many), the ones it leaves to
im2col + GEMM (groups, dilation, stride 3, many input taps), a bias or none, non-contiguous inputs, and
that it is the kernel that ran (the dispatch choice) on this host."""

from __future__ import annotations

import zlib

import flambeau_core as fc
import numpy as np
import pytest
import torch
from helpers import to_numpy

pytestmark = pytest.mark.on_devices(types=("cpu",))

TOL = dict(rtol=2e-4, atol=2e-4)


def _choices() -> dict[str, str]:
    return dict(fc._C._dispatch_choices())


def _runs_avx2_kernel() -> bool:
    c = _choices()
    return c.get("conv_direct_avx2_stub") == "avx2" and c.get("conv_direct_stub") == "none"


# (N, Cin, Cout, H, W, kernel, stride, padding, dilation, groups)
CASES = [
    # (the ResNet-8 layers are test_conv_direct.py's cases); MobileNet's first layer
    (3, 3, 32, 32, 32, 3, 1, 1, 1, 1),
    # output channels not a multiple of 4, odd planes, wide rows ending in a partial vector
    (2, 5, 13, 11, 9, 3, 1, 1, 1, 1),
    (2, 5, 13, 11, 9, 3, 2, 1, 1, 1),
    (2, 7, 3, 15, 17, 3, 2, 1, 1, 1),
    (1, 1, 9, 7, 23, 3, 1, 0, 1, 1),
    (2, 3, 1, 5, 5, 3, 1, 1, 1, 1),
    (1, 2, 6, 3, 3, 3, 1, 1, 1, 1),
    (1, 4, 5, 1, 1, 3, 1, 1, 1, 1),
    (2, 4, 8, 1, 40, (1, 3), 1, (0, 1), 1, 1),
    (2, 4, 8, 12, 10, (3, 1), 2, (1, 0), 1, 1),
    (2, 3, 8, 19, 21, 5, 1, 2, 1, 1),
    (2, 3, 8, 19, 21, 5, 2, 2, 1, 1),
    (1, 3, 12, 33, 30, 7, 2, 3, 1, 1),
    (2, 6, 8, 9, 9, 2, 2, 0, 1, 1),
    (2, 6, 8, 10, 10, 4, 1, (2, 1), 1, 1),
    (2, 4, 4, 9, 9, 3, 2, 0, 1, 1),
    # left to im2col + GEMM: groups, dilation, stride 3, 1x1 stride 1, many input taps
    (2, 8, 8, 12, 12, 3, 1, 1, 1, 2),
    (2, 4, 8, 12, 12, 3, 1, 2, 2, 1),
    (2, 4, 8, 13, 13, 3, 3, 1, 1, 1),
    (2, 16, 8, 9, 9, 1, 1, 0, 1, 1),
    (1, 160, 8, 6, 6, 3, 1, 1, 1, 1),
]


def _rng(*parts) -> np.random.Generator:
    return np.random.default_rng(zlib.crc32(repr(parts).encode()))


@pytest.mark.parametrize("case", CASES, ids=[str(c) for c in CASES])
@pytest.mark.parametrize("bias", [True, False])
def test_conv2d_matches_torch(case, bias):
    n, cin, cout, h, w, k, s, p, d, g = case
    kh, kw = (k, k) if isinstance(k, int) else k
    r = _rng(case, bias)
    x = r.standard_normal((n, cin, h, w)).astype(np.float32)
    wt = r.standard_normal((cout, cin // g, kh, kw)).astype(np.float32)
    b = r.standard_normal(cout).astype(np.float32) if bias else None
    expected = torch.nn.functional.conv2d(
        torch.from_numpy(x), torch.from_numpy(wt), None if b is None else torch.from_numpy(b), s, p, d, g
    ).numpy()
    got = fc.conv2d(fc.tensor(x), fc.tensor(wt), None if b is None else fc.tensor(b), s, p, d, g)
    assert tuple(got.shape) == expected.shape
    np.testing.assert_allclose(to_numpy(got), expected, **TOL)


def test_non_contiguous_input_and_many_images():
    """A strided input (copied to NCHW first) and 9 images over the threads: each image's planes and
    output in its own thread's buffers."""
    r = _rng("strided")
    x = r.standard_normal((9, 16, 20, 40)).astype(np.float32)
    wt = r.standard_normal((24, 16, 3, 3)).astype(np.float32)
    b = r.standard_normal(24).astype(np.float32)
    xs = fc.tensor(x)[:, :, :, ::2]
    assert not xs.is_contiguous()
    expected = torch.nn.functional.conv2d(torch.from_numpy(x[:, :, :, ::2].copy()), torch.from_numpy(wt),
                                          torch.from_numpy(b), 2, 1).numpy()  # fmt: skip
    np.testing.assert_allclose(to_numpy(fc.conv2d(xs, fc.tensor(wt), fc.tensor(b), 2, 1)), expected, **TOL)


def test_non_finite_values_propagate():
    """A NaN or an infinity in the input reaches the outputs whose windows read it, as in torch."""
    x = np.ones((1, 2, 6, 6), np.float32)
    x[0, 0, 2, 3], x[0, 1, 5, 0] = np.nan, np.inf
    wt = np.ones((4, 2, 3, 3), np.float32)
    expected = torch.nn.functional.conv2d(torch.from_numpy(x), torch.from_numpy(wt), None, 1, 1).numpy()
    got = to_numpy(fc.conv2d(fc.tensor(x), fc.tensor(wt), None, 1, 1))
    np.testing.assert_array_equal(np.isnan(got), np.isnan(expected))
    np.testing.assert_allclose(got, expected, **TOL)


def test_the_avx2_kernel_is_chosen_on_avx2_hosts():
    """On a CPU with AVX2 and without AVX-512 (or capped at AVX2) the stub names the AVX2 kernel; on an
    AVX-512 CPU the AVX-512 kernels run first (conv_direct_stub)."""
    c = _choices()
    assert "conv_direct_avx2_stub" in c
    if c.get("conv_direct_stub") == "avx512":
        assert not _runs_avx2_kernel()
    elif fc._C._cpu_capability() == "avx2":
        assert _runs_avx2_kernel()


# (N, C_in, C_out, H, W, kernel, padding, groups) of stride-1 transposed convolutions: the input gradients
# of stride-1 convolutions (Note [Stride-1 transposed convolution]), run as a plain convolution with the
# kernel flipped; groups and mostly-padding ones stay on GEMM + col2im.
TRANSPOSED = [
    (3, 16, 16, 32, 32, 3, 1, 1),
    (3, 32, 32, 16, 16, 3, 1, 1),
    (2, 64, 64, 8, 8, 3, 1, 1),
    (2, 5, 13, 11, 9, 3, 1, 1),
    (2, 4, 6, 9, 10, 3, 0, 1),
    (2, 3, 8, 12, 11, 5, 2, 1),
    (2, 6, 4, 7, 7, (1, 3), (0, 1), 1),
    (2, 8, 8, 9, 9, 3, 1, 2),
    (2, 4, 4, 6, 6, 5, 0, 1),
]


@pytest.mark.parametrize("case", TRANSPOSED, ids=[str(c) for c in TRANSPOSED])
@pytest.mark.parametrize("kernel", ["auto", "gemm"])
def test_stride1_transposed_matches_torch(case, kernel, cpu_settings):
    n, cin, cout, h, w, k, p, g = case
    kh, kw = (k, k) if isinstance(k, int) else k
    r = _rng(case)
    x = r.standard_normal((n, cin, h, w)).astype(np.float32)
    wt = r.standard_normal((cin, cout // g, kh, kw)).astype(np.float32)
    b = r.standard_normal(cout).astype(np.float32)
    cpu_settings(conv_transposed_kernel=kernel)
    expected = torch.nn.functional.conv_transpose2d(
        torch.from_numpy(x), torch.from_numpy(wt), torch.from_numpy(b), 1, p, 0, g
    ).numpy()
    got = fc.conv_transpose2d(fc.tensor(x), fc.tensor(wt), fc.tensor(b), 1, p, 0, g)
    np.testing.assert_allclose(to_numpy(got), expected, **TOL)


def test_an_image_whose_result_outgrows_the_buffers_runs_on_gemm():
    """64 output channels of 300 x 300 (a 5.8M-float wide result per image, over the 4M-float bound) run
    on im2col + GEMM: the same values as torch, no 23 MB buffer kept per thread."""
    r = _rng("large")
    x = r.standard_normal((1, 3, 300, 300)).astype(np.float32)
    wt = r.standard_normal((64, 3, 3, 3)).astype(np.float32)
    expected = torch.nn.functional.conv2d(torch.from_numpy(x), torch.from_numpy(wt), None, 1, 1).numpy()
    np.testing.assert_allclose(to_numpy(fc.conv2d(fc.tensor(x), fc.tensor(wt), None, 1, 1)), expected, **TOL)
