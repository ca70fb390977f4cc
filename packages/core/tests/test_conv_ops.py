"""Convolution values (no autograd): conv1d/conv2d/conv_transpose1d/conv_transpose2d,
convolution, im2col/col2im, against PyTorch 2.13 (CPU): every option (stride,
padding, dilation, groups incl. depthwise, output_padding, bias), float32 and
float64, odd shapes, non-contiguous inputs, unbatched inputs, empty batches,
and the errors (type and message)."""

from __future__ import annotations

import itertools
import zlib

import flambeau_core as fc
import numpy as np
import pytest
import torch
from helpers import to_numpy

pytestmark = pytest.mark.on_devices(not_on_cuda="im2col/col2im: no flambeau-cuda kernel yet")

DT = {"float32": (fc.float32, torch.float32, np.float32), "float64": (fc.float64, torch.float64, np.float64)}
TOL = {"float32": dict(rtol=1e-4, atol=1e-4), "float64": dict(rtol=1e-10, atol=1e-10)}


def rng_for(*parts) -> np.random.Generator:
    return np.random.default_rng(zlib.crc32(repr(parts).encode()))


def fct(a: np.ndarray) -> fc.Tensor:
    return fc.tensor(a)


def check(ours: fc.Tensor, theirs: torch.Tensor, dtype: str) -> None:
    a = to_numpy(ours)
    assert a.shape == tuple(theirs.shape)
    np.testing.assert_allclose(a, theirs.numpy(), **TOL[dtype])


def noncontig(a: np.ndarray) -> fc.Tensor:
    """The same values as a, as a non-contiguous flambeau view (every other element of a wider tensor)."""
    wide = np.zeros(a.shape[:-1] + (2 * a.shape[-1],), a.dtype)
    wide[..., ::2] = a
    t = fc.tensor(wide)[..., ::2]
    assert a.size == 0 or not t.is_contiguous()
    return t


# (N, Cin, Cout, H, W, k, stride, padding, dilation, groups)
CONV2D = [
    (2, 3, 4, 7, 9, (3, 3), 1, 0, 1, 1),
    (2, 3, 4, 7, 9, (3, 2), (2, 1), (1, 2), (1, 2), 1),
    (1, 4, 6, 8, 8, 3, 2, 1, 1, 2),
    (3, 6, 6, 9, 7, 3, 1, 1, 1, 6),  # depthwise
    (2, 4, 8, 9, 9, 3, 2, 1, 1, 4),  # depthwise, multiplier 2, stride 2
    (2, 5, 5, 6, 11, (5, 3), (1, 3), (2, 0), (1, 2), 5),
    (2, 3, 5, 5, 5, 1, 1, 0, 1, 1),  # pointwise
    (2, 4, 6, 7, 7, 1, 2, 0, 1, 2),  # 1x1 stride 2, grouped
    (1, 1, 6, 11, 10, 5, 1, 2, 1, 1),  # one input channel (direct path)
    (2, 3, 2, 4, 4, 4, 1, 3, 2, 1),  # kernel larger than the input, padded
    (0, 3, 4, 5, 5, 3, 1, 1, 1, 1),  # empty batch
]


@pytest.mark.parametrize("dtype", list(DT))
@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("case", CONV2D)
def test_conv2d_matches_torch(case, bias, dtype):
    n, cin, cout, h, w, k, s, p, d, g = case
    fdt, tdt, ndt = DT[dtype]
    r = rng_for("conv2d", case, bias, dtype)
    kh, kw = (k, k) if isinstance(k, int) else k
    x = r.standard_normal((n, cin, h, w)).astype(ndt)
    wt = r.standard_normal((cout, cin // g, kh, kw)).astype(ndt)
    b = r.standard_normal(cout).astype(ndt) if bias else None
    expected = torch.nn.functional.conv2d(
        torch.from_numpy(x), torch.from_numpy(wt), None if b is None else torch.from_numpy(b), s, p, d, g
    )
    got = fc.conv2d(fct(x), fct(wt), None if b is None else fct(b), s, p, d, g)
    assert got.dtype == fdt
    check(got, expected, dtype)
    # non-contiguous input and weight give the same values
    got2 = fc.conv2d(noncontig(x), noncontig(wt), None if b is None else fct(b), s, p, d, g)
    check(got2, expected, dtype)


# (N, Cin, Cout, L, k, stride, padding, dilation, groups)
CONV1D = [
    (2, 3, 4, 10, 3, 1, 0, 1, 1),
    (3, 4, 6, 17, 5, 2, 2, 2, 2),
    (2, 6, 6, 9, 3, 1, 1, 1, 6),
    (1, 2, 3, 5, 1, 1, 0, 1, 1),
    (2, 3, 3, 8, 4, 3, 1, 1, 3),
]


@pytest.mark.parametrize("dtype", list(DT))
@pytest.mark.parametrize("case", CONV1D)
def test_conv1d_matches_torch(case, dtype):
    n, cin, cout, length, k, s, p, d, g = case
    _, _, ndt = DT[dtype]
    r = rng_for("conv1d", case, dtype)
    x = r.standard_normal((n, cin, length)).astype(ndt)
    wt = r.standard_normal((cout, cin // g, k)).astype(ndt)
    b = r.standard_normal(cout).astype(ndt)
    expected = torch.nn.functional.conv1d(torch.from_numpy(x), torch.from_numpy(wt), torch.from_numpy(b), s, p, d, g)
    check(fc.conv1d(fct(x), fct(wt), fct(b), s, p, d, g), expected, dtype)
    check(fc.conv1d(noncontig(x), fct(wt), fct(b), [s], [p], [d], g), expected, dtype)


# (N, Cin, Cout, H, W, k, stride, padding, output_padding, dilation, groups)
CONVT2D = [
    (2, 3, 4, 5, 6, 3, 1, 0, 0, 1, 1),
    (2, 4, 6, 4, 5, 3, 2, 1, 1, 1, 2),
    (1, 3, 2, 5, 4, (3, 2), (2, 3), (1, 0), (1, 2), (2, 1), 1),
    (2, 6, 6, 5, 5, 3, 1, 1, 0, 1, 6),  # depthwise transposed
    (2, 6, 3, 5, 5, 3, 2, 1, 1, 1, 3),  # two input channels per group, one output channel
    (2, 4, 4, 5, 5, 1, 1, 0, 0, 1, 1),  # pointwise
    (1, 2, 3, 3, 3, 2, 1, 0, 1, 2, 1),  # output_padding < dilation (stride 1)
]


@pytest.mark.parametrize("dtype", list(DT))
@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("case", CONVT2D)
def test_conv_transpose2d_matches_torch(case, bias, dtype):
    n, cin, cout, h, w, k, s, p, op, d, g = case
    _, _, ndt = DT[dtype]
    r = rng_for("convt2d", case, bias, dtype)
    kh, kw = (k, k) if isinstance(k, int) else k
    x = r.standard_normal((n, cin, h, w)).astype(ndt)
    wt = r.standard_normal((cin, cout // g, kh, kw)).astype(ndt)
    b = r.standard_normal(cout).astype(ndt) if bias else None
    expected = torch.nn.functional.conv_transpose2d(
        torch.from_numpy(x), torch.from_numpy(wt), None if b is None else torch.from_numpy(b), s, p, op, g, d
    )
    got = fc.conv_transpose2d(fct(x), fct(wt), None if b is None else fct(b), s, p, op, g, d)
    check(got, expected, dtype)
    check(fc.conv_transpose2d(noncontig(x), fct(wt), None if b is None else fct(b), s, p, op, g, d), expected, dtype)


@pytest.mark.parametrize("dtype", list(DT))
@pytest.mark.parametrize(
    "case", [(2, 3, 4, 7, 3, 1, 0, 0, 1, 1), (2, 4, 2, 6, 4, 3, 1, 2, 1, 2), (1, 4, 4, 5, 3, 2, 2, 1, 2, 4)]
)
def test_conv_transpose1d_matches_torch(case, dtype):
    n, cin, cout, length, k, s, p, op, d, g = case
    _, _, ndt = DT[dtype]
    r = rng_for("convt1d", case, dtype)
    x = r.standard_normal((n, cin, length)).astype(ndt)
    wt = r.standard_normal((cin, cout // g, k)).astype(ndt)
    b = r.standard_normal(cout).astype(ndt)
    expected = torch.nn.functional.conv_transpose1d(
        torch.from_numpy(x), torch.from_numpy(wt), torch.from_numpy(b), s, p, op, g, d
    )
    check(fc.conv_transpose1d(fct(x), fct(wt), fct(b), s, p, op, g, d), expected, dtype)


def test_unbatched_inputs():
    r = rng_for("unbatched")
    x = r.standard_normal((3, 6, 7)).astype(np.float32)
    w = r.standard_normal((4, 3, 3, 3)).astype(np.float32)
    expected = torch.nn.functional.conv2d(torch.from_numpy(x), torch.from_numpy(w), padding=1)
    check(fc.conv2d(fct(x), fct(w), None, 1, 1), expected, "float32")
    x1 = r.standard_normal((3, 9)).astype(np.float32)
    w1 = r.standard_normal((3, 2, 3)).astype(np.float32)
    expected1 = torch.nn.functional.conv_transpose1d(torch.from_numpy(x1), torch.from_numpy(w1), stride=2)
    check(fc.conv_transpose1d(fct(x1), fct(w1), None, 2), expected1, "float32")


def test_convolution_primitive():
    r = rng_for("convolution")
    x = r.standard_normal((2, 4, 6, 5))
    w = r.standard_normal((4, 1, 3, 3))
    b = r.standard_normal(4)
    args = ([2, 1], [1, 0], [1, 2], False, [0, 0], 4)
    expected = torch.convolution(torch.from_numpy(x), torch.from_numpy(w), torch.from_numpy(b), *args)
    check(fc.convolution(fct(x), fct(w), fct(b), *args), expected, "float64")


def test_large_values_of_the_benchmark_shapes():
    """The GEMM path split over images (batch >= threads) and the depthwise path at model sizes."""
    r = rng_for("bench")
    for cin, cout, k, s, p, g, h in [(16, 32, 3, 2, 1, 1, 32), (128, 128, 3, 1, 1, 128, 16), (64, 128, 1, 1, 0, 1, 16)]:
        x = r.standard_normal((8, cin, h, h)).astype(np.float32)
        w = r.standard_normal((cout, cin // g, k, k)).astype(np.float32)
        expected = torch.nn.functional.conv2d(torch.from_numpy(x), torch.from_numpy(w), None, s, p, 1, g)
        check(fc.conv2d(fct(x), fct(w), None, s, p, 1, g), expected, "float32")


# ---- im2col / col2im ----

UNFOLD = [
    ((2, 3, 6, 7), (2, 3), 1, 0, 1),
    ((1, 2, 5, 5), 3, 2, 1, 1),
    ((2, 1, 9, 8), (3, 2), (1, 2), (1, 0), (2, 3)),
    ((3, 5, 4), 2, 1, 1, 2),  # unbatched
]


@pytest.mark.parametrize("dtype", list(DT))
@pytest.mark.parametrize("case", UNFOLD)
def test_im2col_col2im_match_torch(case, dtype):
    shape, k, d, p, s = case
    _, _, ndt = DT[dtype]
    r = rng_for("unfold", case, dtype)
    x = r.standard_normal(shape).astype(ndt)
    expected = torch.nn.functional.unfold(torch.from_numpy(x), k, d, p, s)
    check(fc.im2col(fct(x), k, d, p, s), expected, dtype)
    check(fc.im2col(noncontig(x), k, d, p, s), expected, dtype)
    cols = r.standard_normal(tuple(expected.shape)).astype(ndt)
    folded = torch.nn.functional.fold(torch.from_numpy(cols), shape[-2:], k, d, p, s)
    check(fc.col2im(fct(cols), list(shape[-2:]), k, d, p, s), folded, dtype)
    check(fc.col2im(noncontig(cols), list(shape[-2:]), k, d, p, s), folded, dtype)


# ---- errors ----


def err(fn, cls, *fragments):
    with pytest.raises(cls) as e:
        fn()
    for f in fragments:
        assert f in str(e.value), str(e.value)


def test_errors():
    x = fc.zeros(8, 4, 32, 32)
    w = fc.zeros(16, 3, 3, 3)
    err(
        lambda: fc.conv2d(x, w),
        fc.FlambeauError,
        "[conv2d]",
        "expected input[8, 4, 32, 32] to have 3 channels",
        "weight [16, 3, 3, 3]",
        "groups=1",
    )
    err(lambda: fc.conv2d(fc.zeros(2, 3, 2, 2), w), fc.FlambeauError, "[conv2d]", "kernel size 3", "larger than")
    err(lambda: fc.conv2d(fc.zeros(3, 32), w), fc.FlambeauError, "[conv2d]", "3-D (unbatched) or 4-D", "[3, 32]")
    err(lambda: fc.conv2d(fc.zeros(1, 1, 2, 3, 32, 32), w), fc.FlambeauError, "[conv2d]", "4-D")
    err(
        lambda: fc.conv2d(fc.zeros(2, 6, 8, 8), fc.zeros(4, 3, 3, 3), None, 1, 0, 1, 4),
        fc.FlambeauError,
        "divisible by groups=4",
    )
    err(lambda: fc.conv2d(fc.zeros(2, 3, 8, 8), w, None, 0), fc.FlambeauError, "stride must be positive")
    err(lambda: fc.conv2d(fc.zeros(2, 3, 8, 8), w, None, -1), fc.FlambeauError, "stride must be positive")
    err(lambda: fc.conv2d(fc.zeros(2, 3, 8, 8), w, None, 1, -1), fc.FlambeauError, "padding must be non-negative")
    err(lambda: fc.conv2d(fc.zeros(2, 3, 8, 8), w, None, 1, 0, 0), fc.FlambeauError, "dilation must be positive")
    err(lambda: fc.conv2d(fc.zeros(2, 3, 8, 8), w, None, 1, 0, 1, 0), fc.FlambeauError, "groups must be positive")
    err(lambda: fc.conv2d(fc.zeros(2, 3, 8, 8), w, None, (1, 1, 1)), fc.FlambeauError, "stride", "[1, 1, 1]")
    err(lambda: fc.conv2d(fc.zeros(2, 3, 8, 8), w, fc.zeros(5)), fc.FlambeauError, "bias of size [16]", "[5]")
    err(lambda: fc.conv2d(fc.zeros(2, 3, 8, 8), fc.zeros(16, 3, 3)), fc.FlambeauError, "4-D weight", "[16, 3, 3]")
    err(lambda: fc.conv2d(fc.zeros(2, 3, 8, 8, dtype=fc.int64), w), TypeError, "[conv2d]", "int64")
    err(lambda: fc.conv2d(fc.zeros(2, 3, 8, 8, dtype=fc.float64), w), TypeError, "float64", "float32")
    err(lambda: fc.conv2d(fc.zeros(1, 3, 8, 8), w, None, 1, 2**62), fc.FlambeauError, "overflow")
    err(lambda: fc.conv1d(fc.zeros(2, 3, 4), fc.zeros(2, 3, 9)), fc.FlambeauError, "[conv1d]", "larger than")
    err(
        lambda: fc.conv_transpose2d(fc.zeros(2, 4, 5, 5), fc.zeros(3, 2, 3, 3)),
        fc.FlambeauError,
        "[conv_transpose2d]",
        "to have 3 channels",
    )
    err(
        lambda: fc.conv_transpose2d(fc.zeros(2, 3, 5, 5), fc.zeros(3, 2, 3, 3), None, 2, 0, 2),
        fc.FlambeauError,
        "output_padding must be smaller than either stride or dilation",
    )
    err(
        lambda: fc.conv_transpose2d(fc.zeros(2, 3, 1, 1), fc.zeros(3, 2, 1, 1), None, 1, 1),
        fc.FlambeauError,
        "not positive",
    )
    err(lambda: fc.im2col(fc.zeros(1, 2, 3, 3), 5, 1, 0, 1), fc.FlambeauError, "[im2col]", "do not fit")
    # Too few dims: PyTorch's IndexError (its im2col indexes dims 1 to 3 before checking the rank).
    err(lambda: fc.im2col(fc.zeros(2, 3), 1, 1, 0, 1), IndexError, "[im2col]", "3-D", "[2, 3]")
    err(lambda: fc.col2im(fc.zeros(1, 7, 4), [3, 3], 2, 1, 0, 1), fc.FlambeauError, "[col2im]", "divisible")
    err(lambda: fc.col2im(fc.zeros(1, 8, 5), [3, 3], 2, 1, 0, 1), fc.FlambeauError, "[col2im]", "4 (2 * 2 blocks)")


def test_all_option_combinations_small():
    """Every combination of stride, padding, dilation and groups on one small shape."""
    r = rng_for("combos")
    x = r.standard_normal((2, 4, 7, 6))
    for s, p, d, g in itertools.product([1, 2], [0, 1, 2], [1, 2], [1, 2, 4]):
        w = r.standard_normal((4, 4 // g, 3, 2))
        b = r.standard_normal(4)
        expected = torch.nn.functional.conv2d(torch.from_numpy(x), torch.from_numpy(w), torch.from_numpy(b), s, p, d, g)
        check(fc.conv2d(fct(x), fct(w), fct(b), s, p, d, g), expected, "float64")
        for op in range(max(s, d)):
            wt = r.standard_normal((4, 4 // g, 3, 2))
            expected_t = torch.nn.functional.conv_transpose2d(
                torch.from_numpy(x), torch.from_numpy(wt), torch.from_numpy(b), s, p, op, g, d
            )
            check(fc.conv_transpose2d(fct(x), fct(wt), fct(b), s, p, op, g, d), expected_t, "float64")


@pytest.mark.parametrize("dtype", list(DT))
@pytest.mark.parametrize("mult", [1, 2])
def test_depthwise_3x3_gradients_match_torch(mult, dtype):
    """The depthwise direct loops of a 3x3 kernel (stride 2 on the padded plane's four phases), their input
    gradient (a transposed convolution, gathered from the spread small plane) and weight gradient (one pass
    per plane) for every stride, padding and dilation, on planes of odd and even sizes."""
    fdt, _, ndt = DT[dtype]
    r = rng_for("depthwise3x3", mult, dtype)
    c = 3
    for s, p, d, (h, w) in itertools.product([1, 2], [0, 1, 2], [1, 2], [(9, 7), (8, 17)]):
        x = torch.from_numpy(r.standard_normal((2, c, h, w)).astype(ndt)).requires_grad_()
        wt = torch.from_numpy(r.standard_normal((c * mult, 1, 3, 3)).astype(ndt)).requires_grad_()
        y = torch.nn.functional.conv2d(x, wt, None, s, p, d, c)
        gy = torch.from_numpy(r.standard_normal(tuple(y.shape)).astype(ndt))
        gx, gw = torch.autograd.grad(y, (x, wt), gy)
        check(fc.conv2d(fct(x.detach().numpy()), fct(wt.detach().numpy()), None, s, p, d, c), y.detach(), dtype)
        g = fct(gy.numpy())
        op = [(h + 2 * p - d * 2 - 1) % s, (w + 2 * p - d * 2 - 1) % s]  # the rows and columns no window reached
        check(fc.conv_transpose2d(g, fct(wt.detach().numpy()), None, s, p, op, c, d), gx, dtype)
        got = fc._C._convolution_backward_weight(g, fct(x.detach().numpy()), [c * mult, 1, 3, 3], [s, s], [p, p],
                                                 [d, d], False, [0, 0], c)  # fmt: skip
        assert got.dtype == fdt
        check(got, gw, dtype)
