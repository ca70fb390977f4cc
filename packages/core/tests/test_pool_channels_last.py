"""Channels-last max, average and adaptive average pooling and batch norm against PyTorch (Note
[Channels-last pooling], Note [Channels-last batch norm]): the NHWC loops give PyTorch's values and
strides, forward and backward, over batch 1 and several, empty batches, odd sizes, channels
1/3/17/64, strides, padding, dilation, ceil_mode, count_include_pad and divisor_override, and the same
values as the NCHW loops on the same data."""

import flambeau_core as fc
import numpy as np
import pytest
import torch
from helpers import to_numpy

ATEN = torch.ops.aten


def _pair(shape, seed, dtype=np.float32, cl=True):
    rng = np.random.default_rng(seed)
    if np.issubdtype(dtype, np.integer):
        a = rng.integers(-50, 50, shape).astype(dtype)
    else:
        a = rng.standard_normal(shape).astype(dtype)
    if not cl:
        return fc.tensor(a), torch.from_numpy(a.copy())
    # Channels-last strides exactly, even where row-major ones would also do (size-1 dims).
    f = fc.tensor(np.ascontiguousarray(a.transpose(0, 2, 3, 1))).permute(0, 3, 1, 2)
    return f, torch.empty_strided(shape, f.stride(), dtype=torch.from_numpy(a).dtype).copy_(torch.from_numpy(a))


def _assert_as_torch(ours, theirs, tol=1e-5):
    assert tuple(ours.shape) == tuple(theirs.shape)
    assert tuple(ours.stride()) == tuple(theirs.stride()), (tuple(ours.stride()), tuple(theirs.stride()))
    expected = theirs.detach().numpy()
    if expected.dtype.kind == "f":
        np.testing.assert_allclose(to_numpy(ours), expected, rtol=tol, atol=tol, equal_nan=True)
    else:
        np.testing.assert_array_equal(to_numpy(ours), expected)


def _assert_grad_as_torch(ours, theirs, grad):
    """A pooling's input gradient: laid out from grad_output (Note [Result layout]), PyTorch's from the
    forward's input; the same where grad_output's strides say which (not both row-major and
    channels-last), the same format flags and values everywhere."""
    if grad.is_contiguous() and grad.is_contiguous(memory_format=torch.channels_last):
        assert ours.is_contiguous() == theirs.is_contiguous()
        assert ours.is_contiguous(memory_format=fc.channels_last) == theirs.is_contiguous(
            memory_format=torch.channels_last
        )
        np.testing.assert_allclose(to_numpy(ours), theirs.numpy(), rtol=1e-5, atol=1e-5)
    else:
        _assert_as_torch(ours, theirs)


SHAPES = [(2, 3, 9, 11), (1, 64, 8, 8), (3, 17, 7, 6), (2, 1, 5, 7), (1, 3, 4, 4), (0, 3, 6, 6)]
# kernel, stride, padding, dilation, ceil_mode
MAX_PARAMS = [
    ([2, 2], [2, 2], [0, 0], [1, 1], False),
    ([3, 3], [2, 2], [1, 1], [1, 1], False),
    ([3, 3], [2, 2], [1, 1], [1, 1], True),
    ([2, 3], [1, 2], [1, 0], [2, 1], True),
    ([3, 2], [3, 3], [0, 1], [1, 1], True),
]


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("params", MAX_PARAMS)
def test_max_pool2d_forward_and_backward_as_torch(shape, params):
    k, s, p, d, ceil = params
    f, t = _pair(shape, 0)
    fo, fi = fc.max_pool2d_with_indices(f, k, s, p, d, ceil)
    to, ti = ATEN.max_pool2d_with_indices(t, k, s, p, d, ceil)
    _assert_as_torch(fo, to)
    _assert_as_torch(fi, ti)
    fg, tg = _pair(tuple(to.shape), 1)
    gi = fc.max_pool_backward(fg, fi, list(shape))
    _assert_grad_as_torch(gi, ATEN.max_pool2d_with_indices_backward(tg, t, k, s, p, d, ceil, ti), tg)


@pytest.mark.parametrize("dtype", [np.float64, np.int32, np.int64, np.uint8])
def test_max_pool2d_other_dtypes_and_nans(dtype):
    f, t = _pair((2, 5, 6, 7), 2, dtype)
    if dtype == np.float64:
        a = np.random.default_rng(3).standard_normal((2, 5, 6, 7))
        a[0, 1, 2, 3] = a[1, 4, 0, 0] = np.nan
        a[0, 2, :2, :2] = 1.0  # a tie: the first maximum in scan order wins
        f = fc.tensor(a).contiguous(memory_format=fc.channels_last)
        t = torch.from_numpy(a).contiguous(memory_format=torch.channels_last)
    for fr, tr in zip(
        fc.max_pool2d_with_indices(f, [2, 2], [2, 2], [1, 0], [1, 1], True),
        ATEN.max_pool2d_with_indices(t, [2, 2], [2, 2], [1, 0], [1, 1], True),
        strict=True,
    ):
        _assert_as_torch(fr, tr)


# kernel, stride, padding, ceil_mode, count_include_pad, divisor_override
AVG_PARAMS = [
    ([2, 2], [2, 2], [0, 0], False, True, None),
    ([3, 3], [2, 2], [1, 1], True, True, None),
    ([3, 3], [2, 2], [1, 1], True, False, None),
    ([2, 3], [1, 2], [1, 1], False, False, 5),
]


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("params", AVG_PARAMS)
def test_avg_pool2d_forward_and_backward_as_torch(shape, params):
    k, s, p, ceil, include, divisor = params
    f, t = _pair(shape, 4)
    fo = fc.avg_pool2d(f, k, s, p, ceil, include, divisor)
    to = ATEN.avg_pool2d(t, k, s, p, ceil, include, divisor)
    _assert_as_torch(fo, to)
    fg, tg = _pair(tuple(to.shape), 5)
    gi = fc.avg_pool2d_backward(fg, list(shape), k, s, p, ceil, include, divisor)
    _assert_grad_as_torch(gi, ATEN.avg_pool2d_backward(tg, t, k, s, p, ceil, include, divisor), tg)


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("out_size", [[1, 1], [3, 2], [4, 5]])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_adaptive_avg_pool2d_forward_and_backward_as_torch(shape, out_size, dtype):
    f, t = _pair(shape, 6, dtype)
    fo = fc.adaptive_avg_pool2d(f, out_size)
    to = ATEN._adaptive_avg_pool2d(t, out_size)
    _assert_as_torch(fo, to)
    fg, tg = _pair(tuple(to.shape), 7, dtype)
    gi = fc.adaptive_avg_pool2d_backward(fg, list(shape))
    _assert_grad_as_torch(gi, ATEN._adaptive_avg_pool2d_backward(tg, t), tg)


def test_a_contiguous_gradient_of_a_channels_last_pooling():
    # grad_output row-major: the input gradient follows grad_output (Note [Result layout]; PyTorch's
    # follows the forward's input), with PyTorch's values.
    f, t = _pair((2, 6, 8, 8), 8)
    fo, fi = fc.max_pool2d_with_indices(f, [2, 2], [2, 2], [0, 0], [1, 1])
    to, ti = ATEN.max_pool2d_with_indices(t, [2, 2], [2, 2], [0, 0], [1, 1])
    fg, tg = _pair(tuple(to.shape), 9, cl=False)
    ours = fc.max_pool_backward(fg, fi, [2, 6, 8, 8])
    assert ours.is_contiguous()
    theirs = ATEN.max_pool2d_with_indices_backward(tg, t, [2, 2], [2, 2], [0, 0], [1, 1], False, ti)
    np.testing.assert_array_equal(to_numpy(ours), theirs.numpy())


@pytest.mark.parametrize("op", ["max", "avg", "adaptive"])
def test_nhwc_loops_give_the_nchw_loops_values(op):
    # The same data through both layouts: bitwise equal (Note [Channels-last pooling]).
    f, _ = _pair((3, 17, 9, 10), 10)
    fn = f.contiguous()
    run = {
        "max": lambda x: fc.max_pool2d_with_indices(x, [3, 3], [2, 2], [1, 1], [1, 1], True)[0],
        "avg": lambda x: fc.avg_pool2d(x, [3, 3], [2, 2], [1, 1], True, False),
        "adaptive": lambda x: fc.adaptive_avg_pool2d(x, [4, 3]),
    }[op]
    np.testing.assert_array_equal(to_numpy(run(f)), to_numpy(run(fn)))


def test_pooling_into_an_out_of_another_layout():
    f, t = _pair((2, 3, 6, 6), 11)
    out = fc.empty(2, 3, 3, 3)
    fc.avg_pool2d(f, [2, 2], [2, 2], [0, 0], out=out)
    np.testing.assert_allclose(to_numpy(out), ATEN.avg_pool2d(t, [2, 2], [2, 2], [0, 0]).numpy(), rtol=1e-6)
    assert out.is_contiguous()


# ---- batch norm ----


@pytest.mark.parametrize("shape", [(2, 3, 5, 7), (1, 64, 4, 4), (4, 17, 3, 3), (2, 1, 5, 5)])
@pytest.mark.parametrize("training", [True, False])
@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_batch_norm_forward_and_backward_as_torch(shape, training, dtype):
    c = shape[1]
    f, t = _pair(shape, 12, dtype)
    fw, tw = _pair((c,), 13, dtype, cl=False)
    fb, tb = _pair((c,), 14, dtype, cl=False)
    fm, tm = _pair((c,), 15, dtype, cl=False)
    rv = np.abs(np.random.default_rng(16).standard_normal(c)).astype(dtype) + 0.5
    fv, tv = fc.tensor(rv), torch.from_numpy(rv.copy())
    fr = fc.native_batch_norm(f, fw, fb, fm, fv, training, 0.1, 1e-5)
    tr = torch.native_batch_norm(t, tw, tb, tm, tv, training, 0.1, 1e-5)
    tol = 1e-4 if dtype == np.float32 else 1e-10
    _assert_as_torch(fr[0], tr[0], tol)
    np.testing.assert_allclose(to_numpy(fm), tm.numpy(), rtol=tol, atol=tol)
    np.testing.assert_allclose(to_numpy(fv), tv.numpy(), rtol=tol, atol=tol)
    fg, tg = _pair(shape, 17, dtype)
    fs = (fr[1], fr[2]) if training else (fm, fc.rsqrt(fv + 1e-5))
    ours = fc._C._native_batch_norm_backward(fg, f, fw, fs[0], fs[1], training, True, True, True)
    theirs = torch.ops.aten.native_batch_norm_backward(
        tg, t, tw, tm, tv, tr[1] if training else None, tr[2] if training else None, training, 1e-5, [True, True, True]
    )
    _assert_as_torch(ours[0], theirs[0], tol * 10)
    for o, e in zip(ours[1:], theirs[1:], strict=True):
        np.testing.assert_allclose(to_numpy(o), e.numpy(), rtol=tol * 10, atol=tol * 10)
