"""_pack_conv_weight and _conv_packed (src/cpu/conv/conv_packed.cpp): a float32 2-D convolution on a weight
packed once, with a residual added and a relu applied as each output is stored; against PyTorch (values) and
against core's own convolution, add and relu (the same bits)."""

from __future__ import annotations

import flambeau_core as fc
import numpy as np
import pytest
import torch
from flambeau_core import _C
from helpers import to_numpy

avx512 = _C._cpu_capability() == "avx512"


def tensor(a):
    return fc.tensor(np.ascontiguousarray(a))


def expected(x, w, b, stride, padding, dilation, groups, res, relu):
    y = torch.nn.functional.conv2d(
        torch.from_numpy(x), torch.from_numpy(w), None if b is None else torch.from_numpy(b), stride, padding,
        dilation, groups,
    )  # fmt: skip
    if res is not None:
        y = y + torch.from_numpy(res)
    return (y.relu() if relu else y).numpy()


# (C_in, C_out, size, kernel, stride, padding, dilation, groups): the flat kernel (up to 32 output channels),
# the channel-vectorized one (64 and more, 1x1 of 32 and more), strided 1x1 (a ResNet shortcut), groups.
GEOMETRIES = [
    (3, 16, 32, 3, 1, 1, 1, 1),
    (16, 32, 16, 3, 2, 1, 1, 1),
    (32, 32, 16, 3, 1, 1, 1, 1),
    (32, 64, 8, 3, 2, 1, 1, 1),
    (64, 64, 8, 3, 1, 1, 1, 1),
    (32, 64, 16, 1, 2, 0, 1, 1),
    (8, 12, 9, 3, 1, 2, 2, 2),
    (6, 10, 7, 5, 2, 2, 1, 1),
]


@pytest.mark.parametrize("geometry", GEOMETRIES)
@pytest.mark.parametrize("bias", [False, True])
@pytest.mark.parametrize("epilogue", ["none", "relu", "residual+relu", "residual"])
def test_values_against_torch_and_core_ops(geometry, bias, epilogue):
    cin, cout, size, k, s, p, d, g = geometry
    rng = np.random.default_rng(hash(geometry) % 1000)
    x = rng.standard_normal((3, cin, size, size), dtype=np.float32)
    w = rng.standard_normal((cout, cin // g, k, k), dtype=np.float32)
    b = rng.standard_normal(cout, dtype=np.float32) if bias else None
    out = (size + 2 * p - d * (k - 1) - 1) // s + 1
    res = rng.standard_normal((3, cout, out, out), dtype=np.float32) if "residual" in epilogue else None
    relu = "relu" in epilogue
    fw, fb_ = tensor(w), None if b is None else tensor(b)
    packed = _C._pack_conv_weight(fw, g)
    assert packed.dim() == 1 and (packed.numel() > 0) == avx512
    got = _C._conv_packed(
        tensor(x), fw, packed, fb_, [s, s], [p, p], [d, d], g, None if res is None else tensor(res), relu
    )
    np.testing.assert_allclose(to_numpy(got), expected(x, w, b, s, p, d, g, res, relu), rtol=1e-4, atol=1e-4)
    mine = fc.convolution(tensor(x), fw, fb_, [s, s], [p, p], [d, d], False, [0, 0], g)
    if res is not None:
        mine = mine + tensor(res)
    if relu:
        mine = mine.relu()
    assert np.array_equal(to_numpy(got), to_numpy(mine))  # the separate ops' bits


def test_relu_keeps_nan_and_negative_zero_as_relu_does():
    x = np.zeros((1, 16, 8, 8), np.float32)
    x[0, 0, 3, 3] = np.nan
    w = np.ones((16, 16, 3, 3), np.float32)
    res = np.zeros((1, 16, 8, 8), np.float32)
    res[0, :, 0, 0] = -0.0
    fw = tensor(w)
    got = _C._conv_packed(
        tensor(x), fw, _C._pack_conv_weight(fw, 1), None, [1, 1], [1, 1], [1, 1], 1, tensor(res), True
    )
    ref = (fc.convolution(tensor(x), fw, None, [1, 1], [1, 1], [1, 1], False, [0, 0], 1) + tensor(res)).relu()
    a, e = to_numpy(got), to_numpy(ref)
    assert np.isnan(a).sum() == 9 * 16 and np.array_equal(np.isnan(a), np.isnan(e))
    assert np.array_equal(np.signbit(a), np.signbit(e))


@pytest.mark.parametrize(
    "case",
    [
        "float64",
        "strided input",
        "packed of another weight",
        "empty packed",
        "strided residual",
        "1x1",
        "packed on meta",
    ],
)
def test_calls_the_kernel_does_not_take_run_the_separate_ops(case):
    rng = np.random.default_rng(3)
    x = fc.tensor(rng.standard_normal((2, 8, 10, 10), dtype=np.float32))
    w = fc.tensor(rng.standard_normal((16, 8, 3, 3), dtype=np.float32))
    res = fc.tensor(rng.standard_normal((2, 16, 10, 10), dtype=np.float32))
    packed = _C._pack_conv_weight(w, 1)
    stride, padding = [1, 1], [1, 1]
    if case == "float64":
        x, w, res = x.double(), w.double(), res.double()
        assert _C._pack_conv_weight(w, 1).numel() == 0
    elif case == "strided input":
        x = fc.tensor(rng.standard_normal((2, 8, 10, 20), dtype=np.float32))[..., ::2]
    elif case == "packed of another weight":
        packed = _C._pack_conv_weight(fc.randn(32, 8, 3, 3), 1)
    elif case == "empty packed":
        packed = fc.empty(0)
    elif case == "packed on meta":  # its memory is not the host's: read, it crashed the process
        packed = packed.to("meta")
    elif case == "strided residual":
        res = fc.tensor(rng.standard_normal((2, 16, 10, 20), dtype=np.float32))[..., ::2]
    else:
        w = fc.tensor(rng.standard_normal((16, 8, 1, 1), dtype=np.float32))
        packed, padding = _C._pack_conv_weight(w, 1), [0, 0]
    got = _C._conv_packed(x, w, packed, None, stride, padding, [1, 1], 1, res, True)
    ref = (fc.convolution(x, w, None, stride, padding, [1, 1], False, [0, 0], 1) + res).relu()
    tx, tw = torch.from_numpy(to_numpy(x).copy()), torch.from_numpy(to_numpy(w).copy())
    tref = (torch.nn.functional.conv2d(tx, tw, None, stride, padding) + torch.from_numpy(to_numpy(res).copy())).relu()
    assert got.dtype == x.dtype
    np.testing.assert_allclose(to_numpy(got), to_numpy(ref), rtol=1e-6, atol=1e-6)
    np.testing.assert_allclose(to_numpy(got), tref.numpy(), rtol=1e-4, atol=1e-4)


def test_pack_refuses_what_the_direct_kernel_does_not_run():
    assert _C._pack_conv_weight(fc.randn(4, 1, 3, 3), 4).numel() == 0  # depthwise: one input channel per group
    assert _C._pack_conv_weight(fc.randn(4, 2, 3), 1).numel() == 0  # 1-D
    assert _C._pack_conv_weight(fc.randn(4, 2, 3, 3).double(), 1).numel() == 0


def test_errors_are_convolutions():
    x, w = fc.randn(1, 3, 8, 8), fc.randn(4, 3, 3, 3)
    packed = _C._pack_conv_weight(w, 1)
    with pytest.raises(ValueError, match="expected a 3-D or 4-D"):
        _C._conv_packed(fc.randn(8, 8), w, packed, None, [1, 1], [0, 0], [1, 1], 1)
    with pytest.raises(ValueError, match=r"\[_conv_packed\]"):
        _C._conv_packed(fc.randn(1, 5, 8, 8), w, packed, None, [1, 1], [0, 0], [1, 1], 1)
    with pytest.raises(TypeError):
        _C._conv_packed(x.double(), w, packed, None, [1, 1], [0, 0], [1, 1], 1)
    with pytest.raises(ValueError):  # a residual that does not broadcast to the output: add's error
        _C._conv_packed(x, w, packed, None, [1, 1], [0, 0], [1, 1], 1, fc.randn(1, 4, 7, 7))


def test_residual_that_is_the_input():
    """A block's identity shortcut: the residual is the convolution's own input (read twice, never written)."""
    rng = np.random.default_rng(5)
    x = tensor(rng.standard_normal((2, 16, 8, 8), dtype=np.float32))
    w = tensor(rng.standard_normal((16, 16, 3, 3), dtype=np.float32))
    b = tensor(rng.standard_normal(16, dtype=np.float32))
    before = to_numpy(x).copy()
    got = _C._conv_packed(x, w, _C._pack_conv_weight(w, 1), b, [1, 1], [1, 1], [1, 1], 1, x, True)
    ref = (fc.convolution(x, w, b, [1, 1], [1, 1], [1, 1], False, [0, 0], 1) + x).relu()
    assert np.array_equal(to_numpy(got), to_numpy(ref)) and np.array_equal(to_numpy(x), before)
