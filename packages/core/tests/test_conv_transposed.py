"""Transposed convolution values (no autograd) against PyTorch 2.13 (CPU): on an
AVX-512 CPU, float32 stride-1 ones run the direct kernel with the flipped
kernel (Note [Stride-1 transposed convolution], conv.cpp) and strided ones of
2+ taps the per-phase gathers (Note [Strided transposed convolution],
conv_direct_avx512.cpp); float64 and other CPUs take GEMM + col2im, checked by
the same cases. Odd shapes, padding, output_padding, dilation, groups, bias,
non-contiguous inputs."""

from __future__ import annotations

import zlib

import flambeau_core as fc
import numpy as np
import pytest
import torch
from helpers import to_numpy

DT = {"float32": (torch.float32, np.float32), "float64": (torch.float64, np.float64)}
TOL = {"float32": dict(rtol=2e-4, atol=2e-4), "float64": dict(rtol=1e-10, atol=1e-10)}

# (N, Cin, Cout, H, W, k, stride, padding, output_padding, dilation, groups)
CASES = [
    (32, 16, 16, 32, 32, 3, 1, 1, 0, 1, 1),  # ResNet-8 block 1 input gradient
    (32, 64, 64, 8, 8, 3, 1, 1, 0, 1, 1),
    (32, 32, 16, 16, 16, 3, 2, 1, 1, 1, 1),  # 16->32 stride-2 input gradient
    (32, 64, 32, 8, 8, 3, 2, 1, 1, 1, 1),
    (2, 5, 7, 6, 5, 3, 2, 0, 0, 1, 1),
    (2, 6, 4, 5, 7, (3, 2), (2, 3), (1, 0), (1, 2), 1, 2),
    (1, 4, 70, 4, 3, 3, 2, 1, 0, 2, 1),
    (2, 3, 5, 4, 4, 2, 3, 0, 2, 1, 1),  # a phase no tap reaches: bias only
    (3, 16, 9, 7, 3, 5, 4, 2, 3, 1, 1),
    (3, 8, 5, 7, 9, 3, 1, 0, 0, 1, 1),
    (2, 6, 9, 5, 6, (2, 3), 1, (1, 0), 0, (2, 1), 3),
    (1, 4, 6, 6, 6, 3, 1, 1, 1, 2, 2),  # stride 1 with output_padding: GEMM + col2im
    (2, 3, 4, 5, 5, 3, 1, 3, 0, 1, 1),  # padding above d * (k - 1): GEMM + col2im
    (2, 16, 32, 16, 16, 1, 2, 0, 1, 1, 1),  # 1x1 stride 2: GEMM + col2im
]


def _ids(c):
    return "x".join(str(v) for v in c).replace(" ", "")


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("noncontig", [False, True])
@pytest.mark.parametrize("case", CASES, ids=_ids)
def test_conv_transpose2d_values(case, bias, noncontig, dtype):
    n, cin, cout, h, w, k, s, p, op, d, g = case
    kk = (k, k) if isinstance(k, int) else k
    tdt, ndt = DT[dtype]
    rng = np.random.default_rng(zlib.crc32(repr((case, bias, dtype)).encode()))
    x = rng.standard_normal((n, cin, h, w)).astype(ndt)
    wt = (rng.standard_normal((cin, cout // g, *kk)) * 0.2).astype(ndt)
    b = rng.standard_normal(cout).astype(ndt) if bias else None
    ref = torch.nn.functional.conv_transpose2d(
        torch.from_numpy(x), torch.from_numpy(wt), torch.from_numpy(b) if bias else None, s, p, op, g, d
    ).numpy()
    if noncontig:  # the same values through a transposed view
        fx = fc.tensor(np.ascontiguousarray(x.transpose(0, 1, 3, 2))).transpose(-1, -2)
        assert not fx.is_contiguous()
    else:
        fx = fc.tensor(x)
    out = fc.conv_transpose2d(fx, fc.tensor(wt), fc.tensor(b) if bias else None, s, p, op, g, d)
    got = to_numpy(out)
    assert got.shape == ref.shape
    scale = max(1.0, float(np.abs(ref).max()))
    np.testing.assert_allclose(got, ref, rtol=TOL[dtype]["rtol"], atol=TOL[dtype]["atol"] * scale)


def test_conv_transpose2d_nonfinite_like_torch():
    """An inf in the small image reaches exactly the big pixels its taps reach (no 0 * inf elsewhere)."""
    x = np.random.default_rng(1).standard_normal((1, 4, 5, 5)).astype(np.float32)
    x[0, 2, 1, 3] = np.inf
    wt = np.abs(np.random.default_rng(2).standard_normal((4, 6, 3, 3))).astype(np.float32) + 0.1
    for s, op in ((1, 0), (2, 1)):
        ref = torch.nn.functional.conv_transpose2d(torch.from_numpy(x), torch.from_numpy(wt), None, s, 1, op).numpy()
        got = to_numpy(fc.conv_transpose2d(fc.tensor(x), fc.tensor(wt), None, s, 1, op))
        np.testing.assert_array_equal(np.isinf(got), np.isinf(ref))
        np.testing.assert_array_equal(np.isnan(got), np.isnan(ref))
        fin = np.isfinite(ref)
        np.testing.assert_allclose(got[fin], ref[fin], rtol=2e-4, atol=2e-4)


# (k, padding, W) of a stride-2 conv2d over wide rows: the flat kernel's planes take the rows
# 32 pixels at a time (even/odd split by permutes), then a scalar tail; odd and even padding.
WIDE_STRIDE2 = [(5, 2, 40), (3, 0, 37), (3, 1, 64), (4, 2, 33), (2, 0, 32), (3, 1, 31)]


@pytest.mark.parametrize("case", WIDE_STRIDE2, ids=lambda c: f"k{c[0]}p{c[1]}w{c[2]}")
def test_conv2d_stride2_wide_rows(case):
    k, p, w = case
    rng = np.random.default_rng(zlib.crc32(repr(case).encode()))
    x = rng.standard_normal((2, 5, 9, w)).astype(np.float32)
    wt = (rng.standard_normal((8, 5, k, k)) * 0.2).astype(np.float32)
    ref = torch.nn.functional.conv2d(torch.from_numpy(x), torch.from_numpy(wt), None, 2, p).numpy()
    got = to_numpy(fc.conv2d(fc.tensor(x), fc.tensor(wt), None, 2, p))
    np.testing.assert_allclose(got, ref, rtol=2e-4, atol=2e-4)


@pytest.mark.parametrize("case", CASES, ids=_ids)
def test_conv_transpose2d_gemm_path_forced(case, cpu_settings):
    """backends.cpu.conv_transposed_kernel = "gemm" keeps float32 on GEMM + col2im: the same values."""
    cpu_settings(conv_transposed_kernel="gemm")
    test_conv_transpose2d_values(case, True, False, "float32")


def test_lenet_conv2_input_gradient_shape():
    """LeNet-5's conv2 input gradient (5x5 over 10x10, padded by 4: mostly zeros) keeps GEMM + col2im; values."""
    test_conv_transpose2d_values((64, 16, 6, 10, 10, 5, 1, 0, 0, 1, 1), False, False, "float32")
