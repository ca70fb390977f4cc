"""Pooling, padding, resampling and one_hot kernels of core against PyTorch (values only;
gradients are tested in flambeau-nn's test_pooling.py)."""

from __future__ import annotations

import flambeau_core as fc
import numpy as np
import pytest
import torch
import torch.nn.functional as TF
from flambeau_core.testing import raises_when_run
from helpers import from_torch, make_tensor, to_numpy

pytestmark = pytest.mark.on_devices(not_on_cuda="adaptive_max_pool2d, upsample: no flambeau-cuda kernel yet")

FLOATS = ["float32", "float64"]


def arr(shape, dtype="float32", seed=0):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


# Not helpers.assert_matches: against a torch result, with the NumPy dtypes compared and exact=True.
def close(ours: fc.Tensor, theirs: torch.Tensor, exact=False):
    a, b = to_numpy(ours), theirs.numpy()
    assert a.shape == b.shape, (a.shape, b.shape)
    assert a.dtype == b.dtype, (a.dtype, b.dtype)
    if exact:
        np.testing.assert_array_equal(a, b)
    else:
        tol = 1e-5 if a.dtype == np.float32 else 1e-12
        np.testing.assert_allclose(a, b, rtol=tol, atol=tol)


MAX_CASES = [
    # shape, kernel, stride, padding, dilation, ceil_mode
    ((2, 3, 8, 8), [2], [], [0], [1], False),
    ((2, 3, 9, 7), [2], [], [0], [1], False),
    ((2, 3, 9, 7), [2], [], [0], [1], True),
    ((1, 2, 10, 11), [3, 2], [2, 1], [1, 1], [1, 1], False),
    ((1, 2, 10, 11), [3, 3], [2, 2], [1, 1], [2, 1], True),
    ((3, 5, 6), [3], [2], [1], [1], True),
    ((2, 1, 5, 5), [5], [1], [2], [1], False),
    ((1, 1, 6, 6), [2], [4], [1], [1], True),
]


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("layout", ["contiguous", "transposed", "sliced"])
@pytest.mark.parametrize("case", MAX_CASES)
def test_max_pool2d_values_and_indices(case, layout, dtype):
    shape, k, s, p, d, ceil = case
    a = arr(shape, dtype)
    out, idx = fc.max_pool2d_with_indices(make_tensor(a, layout), k, s, p, d, ceil)
    tout, tidx = TF.max_pool2d(torch.from_numpy(a), k, s or None, p, d, ceil, return_indices=True)
    close(out, tout, exact=True)
    close(idx, tidx, exact=True)


def test_max_pool2d_ties_nans_and_integers():
    a = np.zeros((1, 1, 4, 4), np.float32)
    a[0, 0, 1, 1] = a[0, 0, 0, 1] = 1.0
    a[0, 0, 2, 3] = np.nan
    a[0, 0, 3, 2] = np.nan
    for kwargs in ({"kernel_size": 2}, {"kernel_size": 3, "stride": 1, "padding": 1}):
        t_out, t_idx = TF.max_pool2d(torch.from_numpy(a), return_indices=True, **kwargs)
        k = [kwargs["kernel_size"]]
        out, idx = fc.max_pool2d_with_indices(
            fc.tensor(a), k, [kwargs.get("stride", k[0])], [kwargs.get("padding", 0)], [1]
        )
        np.testing.assert_array_equal(to_numpy(out), t_out.numpy())
        np.testing.assert_array_equal(to_numpy(idx), t_idx.numpy())
    ints = np.random.default_rng(1).integers(-3, 3, (2, 3, 7, 7))
    out, idx = fc.max_pool2d_with_indices(fc.tensor(ints), [3], [2], [1], [1], True)
    t_out, t_idx = TF.max_pool2d(torch.from_numpy(ints), 3, 2, 1, 1, True, return_indices=True)
    close(out, t_out, exact=True)
    close(idx, t_idx, exact=True)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize(
    "case",
    [
        ((2, 3, 8, 8), [2], [], [0], False, True, None),
        ((2, 3, 9, 7), [3], [2], [1], True, True, None),
        ((2, 3, 9, 7), [3], [2], [1], True, False, None),
        ((1, 2, 10, 11), [3, 2], [2, 1], [1, 1], False, False, None),
        ((3, 5, 6), [3], [2], [1], True, True, 4),
        ((1, 1, 6, 6), [2], [4], [1], True, False, None),
    ],
)
def test_avg_pool2d_values(case, dtype):
    shape, k, s, p, ceil, cip, div = case
    a = arr(shape, dtype)
    for layout in ("contiguous", "transposed"):
        out = fc.avg_pool2d(make_tensor(a, layout), k, s, p, ceil, cip, div)
        close(out, TF.avg_pool2d(torch.from_numpy(a), k, s or None, p, ceil, cip, div))


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize(
    "shape,size", [((2, 3, 8, 8), [1]), ((2, 3, 7, 9), [3, 4]), ((4, 5, 5), [7, 2]), ((1, 2, 3, 3), [3, 3])]
)
def test_adaptive_pools(shape, size, dtype):
    a = arr(shape, dtype)
    for layout in ("contiguous", "sliced"):
        x = make_tensor(a, layout)
        tsize = size * 2 if len(size) == 1 else size
        close(fc.adaptive_avg_pool2d(x, size), TF.adaptive_avg_pool2d(torch.from_numpy(a), tsize))
        out, idx = fc.adaptive_max_pool2d(x, size)
        t_out, t_idx = TF.adaptive_max_pool2d(torch.from_numpy(a), tsize, return_indices=True)
        close(out, t_out, exact=True)
        close(idx, t_idx, exact=True)


# ---- bfloat16 and float16 (autocast feeds pooling the output of a lowered convolution) ----
# Computed in float32 and rounded once (Note [Low-precision kernels]), as PyTorch's CPU kernels: the same
# bfloat16 inputs give PyTorch's values within one bfloat16 rounding step; a maximum is exact.
BF16_TOL = dict(rtol=2**-7, atol=2**-7)


def half_pair(shape, dtype, seed=0):
    t = torch.from_numpy(arr(shape, "float32", seed)).to(getattr(torch, dtype))
    return from_torch(t), t


def close_half(ours: fc.Tensor, theirs: torch.Tensor, exact=False):
    assert str(ours.dtype).removeprefix("flambeau.") == str(theirs.dtype).removeprefix("torch.")
    assert tuple(ours.shape) == tuple(theirs.shape)
    a, b = to_numpy(ours), theirs.float().numpy()
    if exact:
        np.testing.assert_array_equal(a, b)
    else:
        np.testing.assert_allclose(a, b, **BF16_TOL)


@pytest.mark.on_devices(types=("cpu", "sim"))  # the CUDA pooling kernels take float32 and float64
@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
@pytest.mark.parametrize("transposed", [False, True])
@pytest.mark.parametrize(
    "shape, k, s, p, ceil", [((2, 3, 8, 8), [2], [], [0], False), ((2, 3, 9, 7), [3], [2], [1], True)]
)
def test_poolings_in_16_bit_floats_match_torch(shape, k, s, p, ceil, transposed, dtype):
    x, tx = half_pair(shape, dtype)
    if transposed:  # a non-contiguous input
        x, tx = x.transpose(2, 3), tx.transpose(2, 3)
    out, idx = fc.max_pool2d_with_indices(x, k, s, p, [1], ceil)
    t_out, t_idx = TF.max_pool2d(tx, k, s or None, p, 1, ceil, return_indices=True)
    close_half(out, t_out, exact=True)
    close(idx, t_idx, exact=True)
    g, tg = half_pair(tuple(t_out.shape), dtype, seed=1)
    close_half(
        fc.max_pool_backward(g, idx, list(tx.shape)),
        torch.ops.aten.max_pool2d_with_indices_backward(tg, tx, k, s, p, [1, 1], ceil, t_idx),
    )
    for cip, div in ((True, None), (False, None), (True, 3)):
        out = fc.avg_pool2d(x, k, s, p, ceil, cip, div)
        t_out = TF.avg_pool2d(tx, k, s or None, p, ceil, cip, div)
        close_half(out, t_out)
        close_half(
            fc.avg_pool2d_backward(g, list(tx.shape), k, s, p, ceil, cip, div),
            torch.ops.aten.avg_pool2d_backward(tg, tx, k, s or k, p, ceil, cip, div),
        )
    for size in ([1], [3, 2]):
        tsize = size * 2 if len(size) == 1 else size
        out = fc.adaptive_avg_pool2d(x, size)
        close_half(out, TF.adaptive_avg_pool2d(tx, tsize))
        ga, tga = half_pair((*shape[:2], *tsize), dtype, seed=2)
        close_half(
            fc.adaptive_avg_pool2d_backward(ga, list(tx.shape)), torch.ops.aten._adaptive_avg_pool2d_backward(tga, tx)
        )
        out, idx = fc.adaptive_max_pool2d(x, size)
        t_out, t_idx = TF.adaptive_max_pool2d(tx, tsize, return_indices=True)
        close_half(out, t_out, exact=True)
        close(idx, t_idx, exact=True)


@pytest.mark.on_devices(types=("cpu", "sim"))
def test_bfloat16_pooling_sums_round_once():
    # 256 values of 1 + 2**-7: a bfloat16 running sum loses each 2**-7 once it passes 128 (where bfloat16's
    # spacing is 1), so its mean would be 1; summed in float32 and rounded once, the mean is the value itself.
    x = fc.full([1, 1, 16, 16], 1 + 2**-7, dtype=fc.bfloat16)
    assert fc.adaptive_avg_pool2d(x, [1]).item() == 1 + 2**-7
    assert fc.avg_pool2d(x, [16], [], [0]).item() == 1 + 2**-7


@pytest.mark.on_devices(types=("cpu", "sim"))
def test_bfloat16_pooling_errors_stay_clean():
    x = fc.zeros(1, 1, 4, 4, dtype=fc.bfloat16)
    err(fc.FlambeauError, "3-D (C, H, W) or 4-D", fc.avg_pool2d, fc.zeros(4, 4, dtype=fc.bfloat16), [2], [], [0])
    err(fc.FlambeauError, "too small", fc.max_pool2d_with_indices, x, [5], [], [0], [1])
    bad_grad = (x, [1, 1, 4, 4], [2], [], [0], False, True, None)  # the forward gives (1, 1, 2, 2)
    err(fc.FlambeauError, "grad_output has shape (1, 1, 4, 4)", fc.avg_pool2d_backward, *bad_grad)
    err(fc.FlambeauError, "input_size", fc.adaptive_avg_pool2d_backward, x, [1, 4, 4])
    err(
        fc.FlambeauError,
        "grad_output shape",
        fc.max_pool_backward,
        x,
        fc.zeros(1, 1, 2, 2, dtype=fc.int64),
        [1, 1, 4, 4],
    )
    err(
        NotImplementedError,
        "[adaptive_avg_pool2d] \"adaptive_avg_pool2d\" not implemented for 'Long' (dtype int64)",
        fc.adaptive_avg_pool2d,
        fc.zeros(1, 1, 4, 4, dtype=fc.int64),
        [2],
    )


def test_one_d_composites():
    a = arr((2, 3, 11))
    x, t = fc.tensor(a), torch.from_numpy(a)
    out, idx = fc.max_pool1d_with_indices(x, [3], [2], [1], [2], True)
    t_out, t_idx = TF.max_pool1d(t, 3, 2, 1, 2, True, return_indices=True)
    close(out, t_out, exact=True)
    close(idx, t_idx, exact=True)
    close(fc.avg_pool1d(x, [4], [3], [2], True, False), TF.avg_pool1d(t, 4, 3, 2, True, False))
    close(fc.adaptive_avg_pool1d(x, [4]), TF.adaptive_avg_pool1d(t, 4))
    out, idx = fc.adaptive_max_pool1d(x[0], [5])
    t_out, t_idx = TF.adaptive_max_pool1d(t[0], 5, return_indices=True)
    close(out, t_out, exact=True)
    close(idx, t_idx, exact=True)


PAD_CASES = [
    ((2, 3, 5), (1, 2), "constant"),
    ((2, 3, 5), (-1, 2, 0, 1), "constant"),
    ((4, 5), (1, 1, 2, 0), "constant"),
    ((2, 3, 4, 5), (1, 0, 2, 1, 1, 1, 0, 2), "constant"),
    ((2, 3, 5), (2, 4), "reflect"),
    ((3, 5), (4, 0), "reflect"),
    ((2, 3, 4, 5), (3, 1, 2, 3), "reflect"),
    ((2, 3, 4, 5), (1, 1, 1, 1, 1, 1), "reflect"),
    ((2, 3, 5), (-1, 2), "reflect"),
    ((2, 3, 5), (3, 4), "replicate"),
    ((2, 4, 5), (3, 1, 2, 3), "replicate"),
    ((1, 2, 3, 4, 5), (1, 2, 2, 1, 1, 0), "replicate"),
    ((2, 3, 5), (5, 2), "circular"),
    ((2, 3, 5), (-2, 3), "circular"),
    ((2, 3, 5), (3, -2), "circular"),
    ((2, 3, 5), (-2, -3), "circular"),
    ((2, 3, 4, 5), (1, 2, 4, 3), "circular"),
]


@pytest.mark.parametrize("dtype", FLOATS + ["int64"])
@pytest.mark.parametrize("case", PAD_CASES)
def test_pad_modes(case, dtype):
    shape, pad, mode = case
    a = arr(shape, "float64") * 10
    a = a.astype(dtype)
    for layout in ("contiguous", "transposed"):
        value = 2.5 if mode == "constant" else 0.0
        out = fc._C._pad_nd(make_tensor(a, layout), list(pad), mode, value)
        tv = None if mode != "constant" else value
        close(out, TF.pad(torch.from_numpy(a), pad, mode=mode, value=tv), exact=True)


def test_pad_bool_and_empty():
    a = np.array([[True, False]])
    ours = fc._C._pad_nd(fc.tensor(a), [1, 1], "constant", 1.0)
    close(ours, TF.pad(torch.from_numpy(a), (1, 1), value=True), exact=True)
    e = np.zeros((0, 3, 4), np.float32)
    close(fc._C._pad_nd(fc.tensor(e), [1, 1], "replicate", 0.0), TF.pad(torch.from_numpy(e), (1, 1), mode="replicate"))


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize(
    "size,scales", [([7, 9], None), ([8, 10], [2.0, 2.0]), ([5, 7], [1.7, 2.3]), ([2, 3], None), ([4, 5], [1.0, 1.0])]
)
def test_upsample_nearest_and_bilinear(size, scales, dtype):
    a = arr((2, 3, 4, 5), dtype)
    t = torch.from_numpy(a)
    sh, sw = scales or [None, None]
    x = make_tensor(a, "transposed")
    theirs = torch._C._nn.upsample_nearest2d(t, size, sh, sw)
    close(fc.upsample_nearest2d(x, size, sh, sw), theirs, exact=True)
    for ac in (False, True):
        theirs = torch._C._nn.upsample_bilinear2d(t, size, ac, sh, sw)
        close(fc.upsample_bilinear2d(x, size, ac, sh, sw), theirs)


def test_pixel_shuffle_roundtrip():
    a = arr((2, 3, 8, 4, 5))
    x, t = fc.tensor(a), torch.from_numpy(a)
    close(fc.pixel_shuffle(x[:, 0], 2), TF.pixel_shuffle(t[:, 0], 2), exact=True)
    close(fc.pixel_shuffle(x, 2), TF.pixel_shuffle(t, 2), exact=True)
    b = arr((3, 2, 6, 9))
    close(fc.pixel_unshuffle(fc.tensor(b), 3), TF.pixel_unshuffle(torch.from_numpy(b), 3), exact=True)


def test_one_hot():
    a = np.array([[0, 3], [2, 1]])
    close(fc.one_hot(fc.tensor(a)), TF.one_hot(torch.from_numpy(a)), exact=True)
    close(fc.one_hot(fc.tensor(a), 6), TF.one_hot(torch.from_numpy(a), 6), exact=True)
    close(fc.one_hot(fc.tensor(2), 3), TF.one_hot(torch.tensor(2), 3), exact=True)
    e = np.zeros((0,), np.int64)
    close(fc.one_hot(fc.tensor(e), 4), TF.one_hot(torch.from_numpy(e), 4), exact=True)


def err(exc, fragment, fn, *args):
    with pytest.raises(exc) as info:
        fn(*args)
    assert fragment in str(info.value), str(info.value)
    return str(info.value)


def test_errors():
    x = fc.zeros(1, 1, 4, 4)
    m = err(fc.FlambeauError, "too small", fc.max_pool2d_with_indices, fc.zeros(1, 1, 2, 2), [3], [], [0], [1])
    assert "max_pool2d" in m and "(1, 1, 2, 2)" in m
    err(fc.FlambeauError, "at most half", fc.max_pool2d_with_indices, x, [2], [], [2], [1])
    err(fc.FlambeauError, "3-D (C, H, W) or 4-D", fc.max_pool2d_with_indices, fc.zeros(4, 4), [2], [], [0], [1])
    err(fc.FlambeauError, "kernel_size must be greater than zero", fc.avg_pool2d, x, [0], [], [0])
    err(fc.FlambeauError, "stride must be greater than zero", fc.avg_pool2d, x, [2], [-1], [0])
    err(fc.FlambeauError, "single int or a tuple of 2", fc.avg_pool2d, x, [2, 2, 2], [], [0])
    err(
        NotImplementedError,
        "[avg_pool2d] \"avg_pool2d\" not implemented for 'Int' (dtype int32)",
        fc.avg_pool2d,
        fc.zeros(1, 1, 4, 4, dtype=fc.int32),
        [2],
        [],
        [0],
    )
    err(fc.FlambeauError, "too small", fc.max_pool2d_with_indices, x, [2**62], [2**62], [2**61], [2**62])
    err(fc.FlambeauError, "2-D (C, L) or 3-D", fc.max_pool1d_with_indices, x, [2], [], [0], [1])
    err(fc.FlambeauError, "less than the input size", fc._C._pad_nd, fc.zeros(1, 2, 3), [3, 3], "reflect", 0.0)
    err(fc.FlambeauError, "wrap around", fc._C._pad_nd, fc.zeros(1, 2, 3), [4, 0], "circular", 0.0)
    # PyTorch reads outside the input here (pad (-5, 1) wraps around nothing); flambeau refuses.
    err(fc.FlambeauError, "wrap around", fc._C._pad_nd, fc.zeros(1, 2, 5), [-5, 1], "circular", 0.0)
    err(fc.FlambeauError, "negative output size", fc._C._pad_nd, fc.zeros(1, 2, 3), [-2, -2], "constant", 0.0)
    err(
        NotImplementedError,
        "is not supported for an input of shape (6,)",
        fc._C._pad_nd,
        fc.zeros(6),
        [1, 1],
        "reflect",
        0.0,
    )
    err(fc.FlambeauError, "divisible by 2", fc._C._pad_nd, x, [1], "constant", 0.0)
    err(fc.FlambeauError, "two times", fc._C._pad_nd, fc.zeros(2), [1, 1, 1, 1], "constant", 0.0)
    err(fc.FlambeauError, "overflows", fc._C._pad_nd, fc.zeros(2), [2**62, 2**62], "constant", 0.0)
    # PyTorch's NotImplementedError (torch._C._nn.pad's, F.pad's).
    err(NotImplementedError, "unsupported padding mode 'wrap'", fc._C._pad_nd, fc.zeros(2, 2), [1, 1], "wrap", 0.0)
    err(fc.FlambeauError, "non-negative", fc.one_hot, fc.tensor([-1, 2]))
    err(fc.FlambeauError, "smaller than num_classes", fc.one_hot, fc.tensor([3]), 3)
    err(fc.FlambeauError, "empty tensor", fc.one_hot, fc.tensor([], dtype=fc.int64))
    err(TypeError, "int64", fc.one_hot, fc.tensor([1.0]))
    err(fc.FlambeauError, "divisible by upscale_factor**2", fc.pixel_shuffle, fc.zeros(1, 5, 2, 2), 2)
    err(fc.FlambeauError, "at least 3 dims", fc.pixel_unshuffle, fc.zeros(4, 4), 2)
    err(fc.FlambeauError, "greater than 0", fc.upsample_nearest2d, x, [0, 3])
    err(fc.FlambeauError, "4-D (N, C, H, W)", fc.upsample_bilinear2d, fc.zeros(1, 4, 4), [2, 2], False)
    # A backward op called with indices that point outside the plane is an IndexError, not a stray write.
    raises_when_run(
        IndexError,
        "index -1 is out of bounds",
        fc.max_pool_backward,
        fc.ones(1, 1, 1, 1),
        fc.tensor([[[[-1]]]]),
        [1, 1, 4, 4],
    )
    err(
        fc.FlambeauError,
        "grad_output has shape",
        fc.avg_pool2d_backward,
        fc.ones(1, 1, 3, 3),
        [1, 1, 4, 4],
        [2],
        [],
        [0],
        False,
        True,
        None,
    )


@pytest.mark.parametrize("ceil_mode", [False, True])
@pytest.mark.parametrize("shape", [(2, 3, 9, 7), (1, 2, 8, 8), (3, 1, 3, 5)])
def test_max_pool2d_2x2_fast_path_with_nans_infs_and_ties(shape, ceil_mode):
    rng = np.random.default_rng(3)
    a = rng.integers(-2, 3, shape).astype(np.float32)  # many ties
    a[rng.random(shape) < 0.1] = np.nan
    a[rng.random(shape) < 0.1] = -np.inf
    out, idx = fc.max_pool2d_with_indices(fc.tensor(a), [2], [], [0], [1], ceil_mode)
    t_out, t_idx = TF.max_pool2d(torch.from_numpy(a), 2, ceil_mode=ceil_mode, return_indices=True)
    np.testing.assert_array_equal(to_numpy(out), t_out.numpy())
    np.testing.assert_array_equal(to_numpy(idx), t_idx.numpy())
