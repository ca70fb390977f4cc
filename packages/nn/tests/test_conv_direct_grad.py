"""The direct convolution gradients (Note [Direct weight gradient] in
conv_direct_avx512.cpp, Note [Stride-1 transposed convolution] in conv.cpp)
against PyTorch: the input and weight gradients of F.conv2d and the stride-1
F.conv_transpose2d, at the benchmark models' shapes and odd ones (padding,
dilation, groups, rectangular kernels, non-contiguous inputs), float32 (the
AVX-512 kernels) and float64 (the im2col + GEMM path), gradcheck in float64,
and non-finite inputs (an inf outside every window must not become NaN)."""

from __future__ import annotations

import flambeau_autograd as fa
import flambeau_nn.functional as F
import numpy as np
import pytest
import torch
from nn_testing import assert_close, from_torch, to_numpy

# Used with scale_atol: a float32 weight gradient sums N*Hs*Ws products (32K at ResNet-8's first block).
TOL = {torch.float32: dict(rtol=1e-4, atol=1e-4), torch.float64: dict(rtol=1e-9, atol=1e-9)}
DTYPES = [torch.float32, torch.float64]

# (N, Cin, Cout, H, W, k, stride, padding, dilation, groups)
CASES = [
    (32, 16, 16, 32, 32, 3, 1, 1, 1, 1),  # ResNet-8 block 1
    (32, 16, 32, 32, 32, 3, 2, 1, 1, 1),  # block 2 conv1
    (32, 32, 32, 16, 16, 3, 1, 1, 1, 1),
    (32, 32, 64, 16, 16, 3, 2, 1, 1, 1),
    (32, 64, 64, 8, 8, 3, 1, 1, 1, 1),  # channel-vectorized kernel
    (32, 16, 32, 32, 32, 1, 2, 0, 1, 1),  # 1x1 shortcut (GEMM path)
    (64, 6, 16, 14, 14, 5, 1, 0, 1, 1),  # LeNet-5 conv2
    (4, 3, 32, 32, 32, 3, 1, 1, 1, 1),  # stem
    (3, 5, 7, 11, 9, 3, 1, 1, 2, 1),  # dilation
    (2, 6, 4, 7, 10, 3, 1, 0, 1, 2),  # groups, no padding
    (2, 4, 9, 9, 13, (2, 3), 1, (1, 0), (1, 2), 1),  # rectangular, mixed
    (5, 3, 17, 13, 7, 3, 2, 2, 1, 1),  # odd channels, stride 2
    (1, 8, 8, 6, 6, 5, 1, 2, 1, 4),  # 5x5 grouped
    (3, 12, 12, 5, 5, 3, 1, 1, 1, 3),
    (2, 4, 4, 4, 4, 3, 1, 3, 1, 1),  # padding above k - 1: the GEMM way
    (2, 3, 70, 5, 23, (1, 4), 1, (0, 2), 1, 1),  # 70 output channels (9 blocks of 8), 1x4
    (1, 9, 66, 3, 3, 3, 1, 1, 1, 1),  # tiny image, channel-vectorized kernel
]


def _ids(c):
    return "x".join(str(v) for v in c).replace(" ", "")


def _conv_both(case, dtype, noncontig=False, seed=0):
    n, cin, cout, h, w, k, s, p, d, g = case
    kk = (k, k) if isinstance(k, int) else k
    gen = torch.Generator().manual_seed(seed)
    x = torch.randn(n, cin, h, w, dtype=dtype, generator=gen)
    wt = torch.randn(cout, cin // g, *kk, dtype=dtype, generator=gen) * 0.2
    tx, tw = x.clone().requires_grad_(True), wt.clone().requires_grad_(True)
    ty = torch.nn.functional.conv2d(tx, tw, None, s, p, d, g)
    gy = torch.randn(ty.shape, dtype=dtype, generator=gen)
    ty.backward(gy)
    if noncontig:  # the same values through a transposed view
        fx = from_torch(x.transpose(-1, -2).contiguous()).transpose(-1, -2)
        assert not fx.is_contiguous()
    else:
        fx = from_torch(x)
    fx.requires_grad_(True)
    fw = from_torch(wt).requires_grad_(True)
    fy = F.conv2d(fx, fw, None, s, p, d, g)
    fy.backward(from_torch(gy))
    return (fy, fx.grad, fw.grad), (ty, tx.grad, tw.grad)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", CASES, ids=_ids)
def test_conv2d_grads_match_torch(case, dtype):
    ours, theirs = _conv_both(case, dtype)
    for o, t in zip(ours, theirs, strict=True):
        assert_close(o, t, **TOL[dtype], scale_atol=True)


@pytest.mark.parametrize("case", CASES[:5] + CASES[8:11], ids=_ids)
def test_conv2d_grads_noncontiguous_input(case):
    ours, theirs = _conv_both(case, torch.float32, noncontig=True, seed=1)
    for o, t in zip(ours, theirs, strict=True):
        assert_close(o, t, **TOL[torch.float32], scale_atol=True)


# (N, Cin, Cout, H, W, k, padding, dilation, groups, output_padding) of conv_transpose2d, stride 1
TRANSPOSED = [
    (2, 16, 16, 12, 12, 3, 1, 1, 1, 0),
    (3, 8, 5, 7, 9, 3, 0, 1, 1, 0),
    (2, 6, 9, 5, 6, (2, 3), (1, 0), (2, 1), 3, 0),
    (2, 64, 64, 8, 8, 3, 1, 1, 1, 0),
    (1, 4, 6, 6, 6, 3, 1, 2, 2, 1),  # output_padding (below the dilation): the GEMM way
    (2, 3, 4, 5, 5, 3, 3, 1, 1, 0),  # padding above k - 1: the GEMM way
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("case", TRANSPOSED, ids=_ids)
def test_conv_transpose2d_stride1_matches_torch(case, dtype):
    n, cin, cout, h, w, k, p, d, g, op = case
    kk = (k, k) if isinstance(k, int) else k
    gen = torch.Generator().manual_seed(2)
    x = torch.randn(n, cin, h, w, dtype=dtype, generator=gen)
    wt = torch.randn(cin, cout // g, *kk, dtype=dtype, generator=gen) * 0.2
    b = torch.randn(cout, dtype=dtype, generator=gen)
    tx, tw, tb = (t.clone().requires_grad_(True) for t in (x, wt, b))
    ty = torch.nn.functional.conv_transpose2d(tx, tw, tb, 1, p, op, g, d)
    gy = torch.randn(ty.shape, dtype=dtype, generator=gen)
    ty.backward(gy)
    fx, fw, fb = (from_torch(t).requires_grad_(True) for t in (x, wt, b))
    fy = F.conv_transpose2d(fx, fw, fb, 1, p, op, g, d)
    fy.backward(from_torch(gy))
    for o, t in ((fy, ty), (fx.grad, tx.grad), (fw.grad, tw.grad), (fb.grad, tb.grad)):
        assert_close(o, t, **TOL[dtype], scale_atol=True)


@pytest.mark.parametrize(
    "args",
    [
        dict(stride=1, padding=1),
        dict(stride=2, padding=1),
        dict(stride=1, padding=(0, 2), dilation=(2, 1)),
        dict(stride=1, padding=1, groups=2),
    ],
)
def test_gradcheck_conv2d_f64(args):
    gen = torch.Generator().manual_seed(3)
    x = from_torch(torch.randn(2, 4, 6, 5, dtype=torch.float64, generator=gen)).requires_grad_(True)
    w = from_torch(torch.randn(6, 4 // args.get("groups", 1), 3, 3, dtype=torch.float64, generator=gen))
    w.requires_grad_(True)
    assert fa.gradcheck(lambda x, w: F.conv2d(x, w, None, **args), (x, w))


# (H, W, k, stride, padding, inf/nan positions (n, c, y, x)): the flat kernel's extra columns read
# pixels that no window of a real output reads with that tap (a masked FMA, not 0 * inf, keeps them out).
NONFINITE = [
    (9, 10, 3, 1, 1, [(1, 2, 4, 9), (0, 0, 0, 0)]),  # last and first columns: some taps never see them
    (9, 11, 2, 2, 0, [(0, 1, 3, 10), (1, 2, 0, 10)]),  # column 10 is in no window at all
    (8, 8, 3, 1, 1, [(1, 2, 4, 4)]),  # inside: every tap sees it
]


@pytest.mark.parametrize("case", NONFINITE, ids=lambda c: f"{c[0]}x{c[1]}k{c[2]}s{c[3]}p{c[4]}")
@pytest.mark.parametrize("value", [float("inf"), float("nan")])
def test_weight_grad_nonfinite_input_like_torch(case, value):
    h, w, k, s, p, where = case
    gen = torch.Generator().manual_seed(4)
    x = torch.randn(2, 3, h, w, generator=gen)
    for pos in where:
        x[pos] = value
    wt = torch.randn(16, 3, k, k, generator=gen)
    tx, tw = x.clone().requires_grad_(True), wt.clone().requires_grad_(True)
    ty = torch.nn.functional.conv2d(tx, tw, None, s, p)
    gy = torch.rand(ty.shape, generator=gen) + 0.5  # positive: inf sums stay inf
    ty.backward(gy)
    fx, fw = from_torch(x).requires_grad_(True), from_torch(wt).requires_grad_(True)
    F.conv2d(fx, fw, None, s, p).backward(from_torch(gy))
    ours, theirs = to_numpy(fw.grad), tw.grad.numpy()
    np.testing.assert_array_equal(np.isnan(ours), np.isnan(theirs))
    np.testing.assert_array_equal(np.isinf(ours), np.isinf(theirs))
    fin = np.isfinite(theirs)
    assert fin.any()
    np.testing.assert_allclose(ours[fin], theirs[fin], rtol=1e-4, atol=1e-4)


@pytest.mark.parametrize("kernel", ["flat", "cv"])
@pytest.mark.parametrize("case", CASES, ids=_ids)
def test_weight_grad_each_avx512_kernel(case, kernel, cpu_settings):
    """backends.cpu.conv_weight_grad_kernel forces the flat or the channel-vectorized kernel:
    both against PyTorch on every case (a CPU without AVX-512 takes the GEMM path for both)."""
    cpu_settings(conv_weight_grad_kernel=kernel)
    ours, theirs = _conv_both(case, torch.float32, seed=6)
    assert_close(ours[2], theirs[2], **TOL[torch.float32], scale_atol=True)


@pytest.mark.parametrize("kernel", ["flat", "cv"])
@pytest.mark.parametrize("case", NONFINITE, ids=lambda c: f"{c[0]}x{c[1]}k{c[2]}s{c[3]}p{c[4]}")
def test_weight_grad_nonfinite_each_kernel(case, kernel, cpu_settings):
    cpu_settings(conv_weight_grad_kernel=kernel)
    test_weight_grad_nonfinite_input_like_torch(case, float("inf"))


# (N, Cin, Cout, H, W, k, stride, padding, output_padding, dilation, groups) of conv_transpose2d:
# the strided ones run the phase kernel (Note [Strided transposed convolution]) in float32.
STRIDED_TRANSPOSED = [
    (32, 32, 16, 16, 16, 3, 2, 1, 1, 1, 1),  # the input gradient of ResNet-8's 16->32 stride-2 conv
    (32, 64, 32, 8, 8, 3, 2, 1, 1, 1, 1),
    (2, 5, 7, 6, 5, 3, 2, 0, 0, 1, 1),
    (2, 6, 4, 5, 7, (3, 2), (2, 3), (1, 0), (1, 2), 1, 2),
    (1, 4, 70, 4, 3, 3, 2, 1, 0, 2, 1),  # dilation, 70 channels (two blocks of 64)
    (2, 3, 5, 4, 4, 2, 3, 0, 2, 1, 1),  # kernel below the stride: a phase no tap reaches (bias only)
    (2, 8, 8, 5, 5, 4, 2, 1, 0, 1, 8),  # depthwise: the direct scatter path
    (3, 16, 9, 7, 3, 5, 4, 2, 3, 1, 1),
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("case", STRIDED_TRANSPOSED, ids=_ids)
def test_conv_transpose2d_strided_matches_torch(case, bias, dtype):
    n, cin, cout, h, w, k, s, p, op, d, g = case
    kk = (k, k) if isinstance(k, int) else k
    gen = torch.Generator().manual_seed(7)
    x = torch.randn(n, cin, h, w, dtype=dtype, generator=gen)
    wt = torch.randn(cin, cout // g, *kk, dtype=dtype, generator=gen) * 0.2
    b = torch.randn(cout, dtype=dtype, generator=gen) if bias else None
    leaves = [x, wt] + ([b] if bias else [])
    tl = [t.clone().requires_grad_(True) for t in leaves]
    ty = torch.nn.functional.conv_transpose2d(tl[0], tl[1], tl[2] if bias else None, s, p, op, g, d)
    gy = torch.randn(ty.shape, dtype=dtype, generator=gen)
    ty.backward(gy)
    fl = [from_torch(t).requires_grad_(True) for t in leaves]
    fy = F.conv_transpose2d(fl[0], fl[1], fl[2] if bias else None, s, p, op, g, d)
    fy.backward(from_torch(gy))
    assert_close(fy, ty, **TOL[dtype], scale_atol=True)
    for o, t in zip(fl, tl, strict=True):
        assert_close(o.grad, t.grad, **TOL[dtype], scale_atol=True)


def test_gradcheck_conv_transpose2d_strided_f64():
    gen = torch.Generator().manual_seed(8)
    x = from_torch(torch.randn(2, 4, 3, 4, dtype=torch.float64, generator=gen)).requires_grad_(True)
    w = from_torch(torch.randn(4, 3, 3, 2, dtype=torch.float64, generator=gen)).requires_grad_(True)
    assert fa.gradcheck(lambda x, w: F.conv_transpose2d(x, w, None, (2, 3), 1, (1, 0)), (x, w))
