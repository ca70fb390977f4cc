"""bfloat16 convolution (Note [bfloat16 convolution], conv_bf16_avx512.cpp): the forward, the
stride-1 transposed convolution (a stride-1 convolution's input gradient), strided transposed ones
(float32 on copies) and the weight gradient, against PyTorch 2.13 (CPU) on the same bfloat16 values:
float32 accumulation and one rounding, so each result is within half a bfloat16 ulp of the exact
(float64) one, and on values whose sums are exact that value rounded once (bit for bit torch's
forward). Strides, padding, dilation, groups (incl. depthwise), batch 1, odd channel counts, 1-D,
empty batches, non-contiguous inputs; the same values from every CPU capability (the AVX512-BF16
kernel where the CPU has it, float32 on copies elsewhere), each in a child process; the errors."""

from __future__ import annotations

import os
import subprocess
import sys
import zlib

import flambeau_core as fc
import numpy as np
import pytest
import torch
from helpers import to_numpy

pytestmark = pytest.mark.on_devices(types=("cpu",))

# (N, Cin, Cout, H, W, k, stride, padding, dilation, groups)
CASES = [
    (2, 16, 16, 32, 32, 3, 1, 1, 1, 1),  # ResNet-8's 3x3
    (2, 16, 32, 32, 32, 3, 2, 1, 1, 1),  # stride 2
    (2, 16, 32, 32, 32, 1, 2, 0, 1, 1),  # 1x1 stride-2 shortcut
    (2, 64, 64, 8, 8, 3, 1, 1, 1, 1),  # more than 32 output channels
    (3, 1, 6, 28, 28, 5, 1, 2, 1, 1),  # LeNet-5's first layer: one input channel
    (3, 6, 16, 14, 14, 5, 1, 0, 1, 1),  # LeNet-5's second
    (1, 5, 7, 9, 11, 3, 1, 2, 2, 1),  # batch 1, odd channels, dilation 2
    (2, 6, 9, 10, 13, 3, (2, 3), (1, 0), 1, 3),  # groups, unequal strides
    (2, 8, 8, 12, 12, 3, 1, 1, 1, 8),  # depthwise
    (2, 4, 8, 9, 9, 3, 2, 1, 1, 4),  # depthwise x2, stride 2
    (2, 3, 40, 7, 5, (2, 3), 1, 0, (2, 1), 1),  # 40 output channels, rectangular kernel
    (2, 3, 5, 5, 5, 1, 1, 0, 1, 1),  # pointwise
    (1, 3, 2, 4, 4, 4, 1, 3, 2, 1),  # kernel larger than the input, padded
    # Vector edges of the plane, weight-gradient and output copies: stride 2 with an odd channel count
    # and odd sizes (rows of 17-19 strided pixels; odd phase widths); a 1x1 stride 2 whose transposed
    # classes without taps are 20 wide; rows of 18 output pairs (a 16 x 16 word transpose and a tail of
    # 2) over 24 channels; rows of 5 pairs (gathered) over 40 channels.
    (2, 3, 8, 37, 35, 3, 2, 1, 1, 1),
    (2, 5, 20, 9, 40, 1, 2, 0, 1, 1),
    (1, 4, 24, 6, 36, 3, 1, 1, 1, 1),
    (1, 6, 40, 6, 10, 3, 1, 1, 1, 1),
    # The column planes (a plane per kernel column, shifted copies of one of them): 1x1 images; one
    # row; widths off the vector lengths with channels off 16 and 32; odd output sizes (the weight
    # gradient's zero column); no padding (a copy's edge columns are image pixels); padding past the
    # kernel and a dilation wider than the image (planes that share nothing); stride 2 with dilation 2.
    (1, 3, 5, 1, 1, 3, 1, 1, 1, 1),
    (2, 5, 7, 1, 9, (1, 3), 1, (0, 1), 1, 1),
    (1, 17, 33, 5, 33, 3, 1, 1, 1, 1),
    (2, 4, 6, 7, 9, 3, 1, 1, 1, 1),
    (1, 6, 10, 9, 11, 3, 1, 0, 1, 1),
    (1, 4, 5, 6, 5, (3, 5), 1, (3, 4), (1, 3), 1),
    (2, 7, 18, 11, 13, 3, 2, 2, 2, 1),
    (1, 64, 64, 8, 8, 3, 1, 1, 1, 2),  # ResNet-8's last 3x3 in two groups
    # The weight gradient sums the pairs of up to 8 small images per pass of its tiles: 11 images (a
    # batch of 8 and one of 3), and 5 in two groups.
    (11, 8, 24, 6, 6, 3, 1, 1, 1, 1),
    (5, 4, 6, 4, 5, 3, 1, 1, 1, 2),
    # AMX's runs of taps whose planes follow each other (a kernel row's columns): dilation 2, and a
    # rectangular kernel with stride 2 over 32 channels in two groups.
    (2, 16, 16, 9, 9, 3, 1, 2, 2, 1),
    (2, 64, 32, 10, 11, (2, 3), 2, 1, 1, 2),
]


@pytest.fixture(params=[True, False], ids=["amx", "vdpbf16ps"])
def amx(request):
    """Each test on both multiply paths of the forward and transposed kernels: AMX tiles (where the
    CPU has AMX-BF16; elsewhere the setting changes nothing) and vdpbf16ps."""
    with fc.backends.cpu.flags(bf16_amx=request.param):
        yield request.param


def rng_for(*parts) -> np.random.Generator:
    return np.random.default_rng(zlib.crc32(repr(parts).encode()))


def bf16(a: np.ndarray) -> tuple[fc.Tensor, torch.Tensor]:
    """a rounded to bfloat16, as a flambeau and a torch tensor of the same values."""
    t = torch.from_numpy(a).to(torch.bfloat16)
    return fc.tensor(t.float().numpy()).to(fc.bfloat16), t


def data(shape, rng, integers: bool) -> np.ndarray:
    if integers:
        return rng.integers(-3, 4, shape).astype(np.float32)
    return rng.standard_normal(shape).astype(np.float32)


def close_to_exact(ours: fc.Tensor, exact: torch.Tensor) -> None:
    """ours (bfloat16) is the exact float64 value rounded once: within half an ulp (2^-9 relative), up
    to float32 summation error."""
    assert ours.dtype == fc.bfloat16
    a = to_numpy(ours).astype(np.float64)
    e = exact.numpy()
    assert a.shape == e.shape
    scale = float(np.abs(e).max()) if e.size else 0.0
    np.testing.assert_allclose(a, e, rtol=2.0**-8, atol=1e-5 * scale + 1e-30)


def pair(v) -> list[int]:
    return [v, v] if isinstance(v, int) else list(v)


def geometry(case):
    n, ci, co, h, w, k, s, p, d, g = case
    kh, kw = (k, k) if isinstance(k, int) else k
    return n, ci, co, h, w, (kh, kw), s, p, d, g


@pytest.mark.parametrize("case", CASES, ids=str)
@pytest.mark.parametrize("integers", [False, True], ids=["normal", "integers"])
def test_conv2d_forward_and_gradients(case, integers, amx):
    """Forward (with bias), the input gradient (a transposed convolution of the output gradient) and
    the weight gradient: within rounding of the exact values; with small integers (every sum exact)
    bit for bit torch's bfloat16 results."""
    n, ci, co, h, w, (kh, kw), s, p, d, g = geometry(case)
    rng = rng_for(case, integers)
    xf, xt = bf16(data((n, ci, h, w), rng, integers))
    wf, wt = bf16(data((co, ci // g, kh, kw), rng, integers))
    bf, bt = bf16(data((co,), rng, integers))
    y = fc.conv2d(xf, wf, bf, s, p, d, g)
    y64 = torch.nn.functional.conv2d(xt.double(), wt.double(), bt.double(), s, p, d, g)
    close_to_exact(y, y64)
    yt = torch.nn.functional.conv2d(xt, wt, bt, s, p, d, g)
    gf, gt = bf16(data(tuple(yt.shape), rng, integers))
    # Input gradient: the transposed convolution with the output_padding that restores the input size.
    sh, sw = (s, s) if isinstance(s, int) else s
    ph, pw = (p, p) if isinstance(p, int) else p
    dh, dw = (d, d) if isinstance(d, int) else d
    op = (
        h - ((yt.shape[2] - 1) * sh - 2 * ph + dh * (kh - 1) + 1),
        w - ((yt.shape[3] - 1) * sw - 2 * pw + dw * (kw - 1) + 1),
    )
    gx = fc.conv_transpose2d(gf, wf, None, s, p, op, g, d)
    x64 = xt.double().requires_grad_(True)
    w64 = wt.double().requires_grad_(True)
    torch.nn.functional.conv2d(x64, w64, None, s, p, d, g).backward(gt.double())
    close_to_exact(gx, x64.grad)
    gw = fc._C._convolution_backward_weight(
        gf, xf, [co, ci // g, kh, kw], [sh, sw], [ph, pw], [dh, dw], False, [0, 0], g
    )
    close_to_exact(gw, w64.grad)
    if integers:
        # Every float32 sum is exact: each result is the exact value rounded once to bfloat16.
        for ours, exact in ((y, y64), (gx, x64.grad), (gw, w64.grad)):
            np.testing.assert_array_equal(to_numpy(ours), exact.to(torch.bfloat16).float().numpy())
        # torch's forward too; not its gradients, which on a CPU without AVX512-BF16 round partial sums to
        # bfloat16 (up to 2 units off the exact value in these cases, seen on AMD Zen 3).
        np.testing.assert_array_equal(to_numpy(y), yt.float().numpy())


# (N, Cin, Cout, H, W, k, stride, padding, dilation, groups, output_padding)
TRANSPOSED = [
    (2, 6, 4, 5, 7, 3, 1, 1, 1, 2, 0),
    (2, 4, 6, 5, 5, 3, 2, 1, 1, 1, 1),  # ResNet-8's stride-2 input gradients
    (1, 3, 5, 4, 6, (2, 3), 1, (1, 2), 1, 1, 0),
    (2, 4, 6, 5, 4, 2, 3, 0, 1, 2, 2),  # stride 3 > kernel 2: outputs no tap reaches (the bias)
    (2, 5, 3, 4, 5, 3, 2, 2, 2, 1, 1),  # stride and dilation 2
    (1, 16, 32, 8, 8, 1, 2, 0, 1, 1, 1),  # 1x1 stride 2 (the shortcut's input gradient)
    (2, 6, 6, 5, 5, 3, (2, 1), (0, 1), 1, 6, 0),  # depthwise, unequal strides
    (2, 6, 5, 9, 21, 1, 2, 0, 1, 1, 1),  # 1x1 stride 2: 3 of 4 classes are the bias, rows of 21 outputs
    (1, 4, 3, 20, 18, 3, 2, 1, 1, 1, 1),  # stride 2, classes of 18-20 outputs a row (a vector and a tail)
    (1, 3, 5, 1, 1, 3, 1, 1, 1, 1, 0),  # a 1x1 image
    (2, 17, 9, 3, 7, 3, 2, 0, 1, 1, 1),  # classes of unequal widths, 17 channels
    (1, 5, 4, 6, 4, (3, 2), (1, 3), (2, 0), (2, 1), 1, (0, 2)),  # unequal strides and dilations
]


@pytest.mark.parametrize("case", TRANSPOSED, ids=str)
def test_conv_transpose2d_and_its_weight_gradient(case, amx):
    """A transposed convolution as the forward op (one class of outputs per stride residue), with
    bias and output_padding, and its weight gradient (the transposed geometry)."""
    n, ci, co, h, w, (kh, kw), s, p, d, g = geometry(case[:10])
    op = case[10]
    rng = rng_for("transposed", case)
    xf, xt = bf16(data((n, ci, h, w), rng, False))
    wf, wt = bf16(data((ci, co // g, kh, kw), rng, False))
    bf, bt = bf16(data((co,), rng, False))
    y = fc.conv_transpose2d(xf, wf, bf, s, p, op, g, d)
    w64 = wt.double().requires_grad_(True)
    y64 = torch.nn.functional.conv_transpose2d(xt.double(), w64, bt.double(), s, p, op, g, d)
    close_to_exact(y, y64.detach())
    gf, gt = bf16(data(tuple(y64.shape), rng, False))
    y64.backward(gt.double())
    gw = fc._C._convolution_backward_weight(gf, xf, list(wt.shape), pair(s), pair(p), pair(d), True, pair(op), g)
    close_to_exact(gw, w64.grad)


def test_conv1d_and_odd_lengths():
    """A 1-D convolution (a 2-D one of height 1) with an odd output length (the weight gradient's
    pairs of outputs end on a zero)."""
    rng = rng_for("conv1d")
    xf, xt = bf16(rng.standard_normal((3, 5, 17)).astype(np.float32))
    wf, wt = bf16(rng.standard_normal((7, 5, 4)).astype(np.float32))
    y = fc.conv1d(xf, wf, None, 2, 1)
    w64 = wt.double().requires_grad_(True)
    y64 = torch.nn.functional.conv1d(xt.double(), w64, None, 2, 1)
    close_to_exact(y, y64.detach())
    gf, gt = bf16(rng.standard_normal(tuple(y64.shape)).astype(np.float32))
    y64.backward(gt.double())
    gw = fc._C._convolution_backward_weight(gf, xf, [7, 5, 4], [2], [1], [1], False, [0], 1)
    close_to_exact(gw, w64.grad)


@pytest.mark.parametrize("hw", [(5, 7), (6, 8)], ids=str)
def test_weight_gradient_infinite_input_on_the_edge(hw):
    """An infinite input on the last row and column: the weight gradient is the exact sum (infinities
    where it takes the value, NaN where they cancel), as PyTorch's in float64. With an odd width the
    planes carry a zero column (no 0 * inf added to any sum); with an even one, none."""
    h, w = hw
    rng = rng_for("inf-edge", hw)
    x = rng.integers(-3, 4, (2, 3, h, w)).astype(np.float32)
    x[0, 1, h - 1, w - 1] = np.inf
    x[1, 2, h - 1, 0] = -np.inf
    xf, xt = bf16(x)
    gf, gt = bf16(rng.integers(-3, 4, (2, 4, h, w)).astype(np.float32))
    gw = fc._C._convolution_backward_weight(gf, xf, [4, 3, 3, 3], [1, 1], [1, 1], [1, 1], False, [0, 0], 1)
    w64 = torch.zeros(4, 3, 3, 3, dtype=torch.float64, requires_grad=True)
    torch.nn.functional.conv2d(xt.double(), w64, None, 1, 1).backward(gt.double())
    np.testing.assert_array_equal(to_numpy(gw), w64.grad.to(torch.bfloat16).float().numpy())


def test_empty_batch_and_noncontiguous_input():
    rng = rng_for("empty")
    wf, wt = bf16(rng.standard_normal((4, 3, 3, 3)).astype(np.float32))
    empty = fc.zeros(0, 3, 6, 6).to(fc.bfloat16)
    y = fc.conv2d(empty, wf, None, 1, 1)
    assert y.shape == (0, 4, 6, 6) and y.dtype == fc.bfloat16
    gw = fc._C._convolution_backward_weight(
        fc.zeros(0, 4, 6, 6).to(fc.bfloat16), empty, [4, 3, 3, 3], [1, 1], [1, 1], [1, 1], False, [0, 0], 1
    )
    np.testing.assert_array_equal(to_numpy(gw), np.zeros((4, 3, 3, 3), np.float32))
    # Zero input channels: the output is the bias.
    bf, bt = bf16(rng.standard_normal(4).astype(np.float32))
    y0 = fc.conv2d(fc.zeros(2, 0, 5, 5).to(fc.bfloat16), fc.zeros(4, 0, 3, 3).to(fc.bfloat16), bf, 1, 1)
    np.testing.assert_array_equal(to_numpy(y0), np.broadcast_to(bt.float().numpy()[None, :, None, None], (2, 4, 5, 5)))
    # A transposed (H <-> W) view.
    xf, xt = bf16(rng.standard_normal((2, 3, 7, 9)).astype(np.float32))
    y = fc.conv2d(xf.transpose(2, 3), wf, None, 1, 1)
    close_to_exact(y, torch.nn.functional.conv2d(xt.double().transpose(2, 3), wt.double(), None, 1, 1))


def test_weight_gradient_is_the_same_every_run():
    """The per-image partial sums are added in slice order (Note [Partial sums in slice order])."""
    rng = rng_for("determinism")
    xf, _ = bf16(rng.standard_normal((9, 16, 16, 16)).astype(np.float32))
    gf, _ = bf16(rng.standard_normal((9, 16, 16, 16)).astype(np.float32))
    args = ([16, 16, 3, 3], [1, 1], [1, 1], [1, 1], False, [0, 0], 1)
    a = to_numpy(fc._C._convolution_backward_weight(gf, xf, *args))
    for _ in range(3):
        np.testing.assert_array_equal(to_numpy(fc._C._convolution_backward_weight(gf, xf, *args)), a)


def test_errors():
    x = fc.zeros(1, 3, 5, 5).to(fc.bfloat16)
    with pytest.raises(TypeError, match=r"input type \(bfloat16\) and weight type \(float32\) should be the same"):
        fc.conv2d(x, fc.zeros(4, 3, 3, 3))
    with pytest.raises(TypeError, match=r"input type \(bfloat16\) and bias type \(float32\) should be the same"):
        fc.conv2d(x, fc.zeros(4, 3, 3, 3).to(fc.bfloat16), fc.zeros(4))
    with pytest.raises(ValueError, match=r"kernel size 7 \(dilated\) is larger than the padded input size 5"):
        fc.conv2d(x, fc.zeros(4, 3, 7, 7).to(fc.bfloat16))
    with pytest.raises(ValueError, match=r"output size overflows"):
        fc.conv2d(x, fc.zeros(4, 3, 3, 3).to(fc.bfloat16), None, 1, 2**62)


def test_every_cpu_capability_gives_the_same_values():
    """The AVX512-BF16 kernel (avx512, on a CPU with the instruction) and float32 on copies (avx2,
    base) give the same bfloat16 bits on values whose sums are exact, each in a child process."""
    code = (
        "import flambeau_core as fc, numpy as np, sys\n"
        "r = np.random.default_rng(3)\n"
        "out = []\n"
        "for (n, ci, co, h, k, s, p) in [(2, 16, 16, 12, 3, 1, 1), (2, 5, 7, 9, 3, 2, 1), (1, 1, 6, 8, 5, 1, 2),\n"
        "                                (1, 3, 5, 1, 3, 1, 1), (2, 20, 33, 8, 3, 1, 1), (1, 6, 9, 7, 3, 1, 0)]:\n"
        "    x = fc.tensor(r.integers(-3, 4, (n, ci, h, h)).astype(np.float32)).to(fc.bfloat16)\n"
        "    w = fc.tensor(r.integers(-3, 4, (co, ci, k, k)).astype(np.float32)).to(fc.bfloat16)\n"
        "    y = fc.conv2d(x, w, None, s, p)\n"
        "    gw = fc._C._convolution_backward_weight(y, x, [co, ci, k, k], [s, s], [p, p], [1, 1], False, [0, 0], 1)\n"
        "    gx = fc.conv_transpose2d(y, w, None, s, p, 0 if s == 1 else (h + 2 * p - k) % s, 1, 1)\n"
        "    out += [np.array(memoryview(t.float())).ravel() for t in (y, gw, gx)]\n"
        "print(fc._C._cpu_capability(), fc._C._bf16_gemm_kernel()); np.save(sys.argv[1], np.concatenate(out))\n"
    )
    results = {}
    for cap in ("base", "avx2", "avx512"):
        path = os.path.join(os.environ.get("TMPDIR", "/tmp"), f"fb_convbf16_{os.getpid()}_{cap}.npy")
        env = dict(os.environ, FLAMBEAU_CPU_CAPABILITY=cap)
        r = subprocess.run([sys.executable, "-c", code, path], env=env, capture_output=True, text=True, check=True)
        results[r.stdout.strip()] = np.load(path)
        os.remove(path)
    assert not any(k.endswith("True") for k in results if not k.startswith("avx512"))
    ref = next(iter(results.values()))
    for cap, v in results.items():
        np.testing.assert_array_equal(v, ref, err_msg=cap)


@pytest.mark.parametrize(
    "case",
    [
        (2, 4, 6, 5, 4, 2, 3, 0, 1, 2, 2),  # stride 3 > kernel 2
        (2, 16, 8, 6, 7, 1, 2, 0, 1, 1, 1),  # 1x1 stride 2 (the shortcut's input gradient): 3 of 4 classes
        (1, 3, 5, 4, 5, 1, (3, 2), 0, 1, 1, (2, 1)),  # unequal strides, odd sizes
    ],
    ids=str,
)
def test_outputs_no_tap_reaches_are_zero_without_bias(case):
    """Without a bias, the outputs no tap reaches (a stride above the dilated kernel) are zeros written by
    one fill of each image before the other classes, whatever the output's memory held before (a
    NaN-filled block of the same size, just freed, is what the allocator hands out next); from a strided
    input too. Small integers: every sum exact, so bit for bit torch's bfloat16 result."""
    n, ci, co, h, w, (kh, kw), s, p, d, g = geometry(case[:10])
    op = case[10]
    rng = rng_for("no-tap", case)
    xf, xt = bf16(data((n, ci, h, w + 2), rng, True))
    wf, wt = bf16(data((ci, co // g, kh, kw), rng, True))
    want = torch.nn.functional.conv_transpose2d(xt[..., 1:-1], wt, None, s, p, op, g, d)
    for x in (xf[..., 1:-1], xf[..., 1:-1].contiguous()):
        nan = fc.full(tuple(want.shape), float("nan"), dtype=fc.bfloat16)
        del nan
        y = fc.conv_transpose2d(x, wf, None, s, p, op, g, d)
        np.testing.assert_array_equal(to_numpy(y), want.float().numpy())


# (N, Cin, Cout, H, W, k, stride, padding): AMX's chunks of channel pairs (48 channels: 2 chunks of 12;
# 40: 2 of 10; 34: 17 pairs, no equal split, so vdpbf16ps) and rows of 16 (Cout 48: a 16-row block
# after a 32-row one; Cout 24 and the transposed 3-channel input: vdpbf16ps), panels past the image
# (1x1 and 3x5 images, 37 outputs a row), stride 2 (transposed classes of 16 and 32 rows).
AMX_CASES = [
    (2, 48, 48, 6, 7, 3, 1, 1),
    (2, 40, 32, 5, 5, 3, 2, 1),
    (1, 34, 16, 4, 6, 3, 1, 1),
    (2, 16, 24, 5, 5, 3, 1, 1),
    (3, 32, 16, 1, 1, 3, 1, 1),
    (1, 16, 32, 3, 37, 3, 1, 1),
    (2, 32, 64, 9, 9, 1, 2, 0),
    (2, 3, 16, 7, 7, 3, 1, 1),
    # The weight gradient's AMX blocks (input channels in multiples of 16, output pairs in chunks of
    # 16): 48 channels (32-row blocks across taps) into 40 (a column block past the channels); an odd
    # output width (the zero column); stride 2 with 16 output pairs.
    (2, 48, 40, 8, 8, 3, 1, 1),
    (2, 16, 16, 8, 7, 3, 1, 1),
    (2, 32, 16, 16, 8, 3, 2, 1),
]


@pytest.mark.parametrize("case", AMX_CASES, ids=str)
@pytest.mark.parametrize("fill", ["normal", "integers", "inf"])
def test_amx_and_vdpbf16ps_give_the_same_values(case, fill):
    """The forward, the input gradient and the weight gradient on AMX tiles and on vdpbf16ps: float32
    sums in another order, so a value may differ by its last bit (a bfloat16 ulp) and no more; bit for
    bit on small integers (every sum exact); the same infinities and NaNs from infinite inputs (outputs
    past the image and columns past the channels, which the tiles compute from whatever follows, are
    not kept)."""
    n, ci, co, h, w, k, s, p = case
    rng = rng_for("amx", case, fill)
    integers = fill != "normal"  # the infinities among small integers: the finite sums stay exact
    x = data((n, ci, h, w), rng, integers)
    if fill == "inf":
        x.flat[rng.integers(0, x.size, 3)] = [np.inf, -np.inf, np.inf]
    xf, _ = bf16(x)
    wf, _ = bf16(data((co, ci, k, k), rng, integers))
    bf, _ = bf16(data((co,), rng, integers))
    ho, wo = (h + 2 * p - k) // s + 1, (w + 2 * p - k) // s + 1
    gf, _ = bf16(data((n, co, ho, wo), rng, integers))
    op = (h - ((ho - 1) * s - 2 * p + k), w - ((wo - 1) * s - 2 * p + k))
    got = {}
    for on in (True, False):
        with fc.backends.cpu.flags(bf16_amx=on):
            y = fc.conv2d(xf, wf, bf, s, p)
            gx = fc.conv_transpose2d(gf, wf, None, s, p, op)
            gw = fc._C._convolution_backward_weight(gf, xf, [co, ci, k, k], [s, s], [p, p], [1, 1], False, [0, 0], 1)
            got[on] = [to_numpy(t).astype(np.float64) for t in (y, gx, gw)]
    for a, b in zip(got[True], got[False], strict=True):
        if integers:
            np.testing.assert_array_equal(a, b)
            continue
        np.testing.assert_allclose(a, b, rtol=2.0**-7, atol=0)
        assert np.mean(a != b) < 0.01
