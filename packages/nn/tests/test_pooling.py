"""Pooling, padding, resampling, pixel shuffle and one_hot: F.* and the layers against PyTorch
(values and gradients in float32 and float64, odd shapes, non-contiguous inputs, gradcheck in
float64, module reprs, error paths)."""

from __future__ import annotations

import flambeau_autograd as fa
import flambeau_core as fc
import flambeau_nn as nn
import flambeau_nn.functional as F
import numpy as np
import pytest
import torch
import torch.nn as tnn
import torch.nn.functional as TF
from nn_testing import assert_close, from_torch, to_numpy

pytestmark = pytest.mark.on_devices(not_on_cuda="adaptive_max_pool2d, upsample: no flambeau-cuda kernel yet")

FLOATS = [torch.float32, torch.float64]


def tol(dtype):
    if dtype == torch.bfloat16:  # computed in float32 and rounded once: within a bfloat16 step of PyTorch's
        return {"rtol": 2**-7, "atol": 2**-7}
    return {"rtol": 1e-5, "atol": 1e-5} if dtype == torch.float32 else {"rtol": 1e-10, "atol": 1e-12}


def leaf(t: torch.Tensor, layout: str = "contiguous") -> fc.Tensor:
    """A flambeau leaf with t's values; 'transposed' gives it reversed strides."""
    if layout == "transposed":
        rev = tuple(range(t.dim()))[::-1]
        x = from_torch(t.permute(rev).contiguous()).permute(*rev)
        x = x.detach()
    else:
        x = from_torch(t)
    x.requires_grad_(True)
    return x


def check(ours_fn, theirs_fn, shape, dtype=torch.float32, layout="contiguous", seed=0, first=True):
    """Forward and backward of ours_fn(x) against theirs_fn(t) on the same values and upstream gradient."""
    g = torch.Generator().manual_seed(seed)
    t = torch.randn(shape, generator=g, dtype=dtype).requires_grad_(True)
    x = leaf(t.detach(), layout)
    out_t = theirs_fn(t)
    out = ours_fn(x)
    if isinstance(out_t, tuple):
        for a, b in zip(out[1:], out_t[1:], strict=True):
            np.testing.assert_array_equal(to_numpy(a), b.numpy())
        out_t, out = out_t[0], out[0]
    assert_close(out, out_t, **tol(dtype))
    up = torch.randn(out_t.shape, generator=g, dtype=dtype)
    out_t.backward(up)
    out.backward(from_torch(up))
    assert_close(x.grad, t.grad, **tol(dtype))


# ---- max pooling ----

MAX2D = [
    # shape, kwargs
    ((64, 6, 28, 28), {"kernel_size": 2}),
    ((3, 4, 9, 7), {"kernel_size": 2}),
    ((3, 4, 9, 7), {"kernel_size": 2, "ceil_mode": True}),
    ((2, 3, 10, 11), {"kernel_size": (3, 2), "stride": (2, 1), "padding": 1}),
    ((2, 3, 10, 11), {"kernel_size": 3, "stride": 2, "padding": 1, "dilation": (2, 1), "ceil_mode": True}),
    ((5, 6, 7), {"kernel_size": 3, "stride": 2, "padding": 1, "ceil_mode": True}),
    ((1, 1, 6, 6), {"kernel_size": 2, "stride": 4, "padding": 1, "ceil_mode": True}),
    ((2, 2, 5, 5), {"kernel_size": 5, "stride": 1, "padding": 2}),
]


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("shape,kw", MAX2D)
def test_max_pool2d(shape, kw, dtype):
    check(
        lambda x: F.max_pool2d(x, return_indices=True, **kw),
        lambda t: TF.max_pool2d(t, return_indices=True, **kw),
        shape,
        dtype,
    )


@pytest.mark.parametrize("layout", ["contiguous", "transposed"])
def test_max_pool_non_contiguous_and_1d(layout):
    check(lambda x: F.max_pool2d(x, 3, 2, 1), lambda t: TF.max_pool2d(t, 3, 2, 1), (2, 3, 8, 9), layout=layout)
    for kw in ({"kernel_size": 2}, {"kernel_size": 3, "stride": 2, "padding": 1, "dilation": 2, "ceil_mode": True}):
        check(
            lambda x, kw=kw: F.max_pool1d(x, return_indices=True, **kw),
            lambda t, kw=kw: TF.max_pool1d(t, return_indices=True, **kw),
            (3, 4, 13),
            layout=layout,
        )
    check(lambda x: F.max_pool1d(x, 3), lambda t: TF.max_pool1d(t, 3), (4, 10), layout=layout)


def test_max_pool_ties_send_the_gradient_where_torch_does():
    a = torch.tensor([[[[1.0, 1.0, 0.0], [1.0, 1.0, 2.0], [2.0, 0.0, 2.0]]]])
    for kw in ({"kernel_size": 2, "stride": 1}, {"kernel_size": 3, "stride": 1, "padding": 1}):
        check(lambda x, kw=kw: F.max_pool2d(x, **kw), lambda t, kw=kw: TF.max_pool2d(t, **kw), a.shape, seed=1)
        t = a.clone().requires_grad_(True)
        x = leaf(a)
        out, idx = F.max_pool2d(x, return_indices=True, **kw)
        tout, tidx = TF.max_pool2d(t, return_indices=True, **kw)
        np.testing.assert_array_equal(to_numpy(idx), tidx.numpy())
        out.sum().backward()
        tout.sum().backward()
        assert_close(x.grad, t.grad)


# ---- average pooling ----

AVG2D = [
    ((3, 4, 9, 7), {"kernel_size": 2}),
    ((3, 4, 9, 7), {"kernel_size": 3, "stride": 2, "padding": 1, "ceil_mode": True}),
    ((3, 4, 9, 7), {"kernel_size": 3, "stride": 2, "padding": 1, "ceil_mode": True, "count_include_pad": False}),
    ((2, 3, 10, 11), {"kernel_size": (3, 2), "stride": (2, 1), "padding": (1, 0), "divisor_override": 5}),
    ((5, 6, 7), {"kernel_size": 3, "padding": 1}),
    ((1, 1, 6, 6), {"kernel_size": 2, "stride": 4, "padding": 1, "ceil_mode": True, "count_include_pad": False}),
]


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("shape,kw", AVG2D)
def test_avg_pool2d(shape, kw, dtype):
    check(lambda x: F.avg_pool2d(x, **kw), lambda t: TF.avg_pool2d(t, **kw), shape, dtype)
    check(lambda x: F.avg_pool2d(x, **kw), lambda t: TF.avg_pool2d(t, **kw), shape, dtype, layout="transposed")


@pytest.mark.parametrize("dtype", FLOATS)
def test_avg_pool1d(dtype):
    for kw in (
        {"kernel_size": 3},
        {"kernel_size": 4, "stride": 3, "padding": 2, "ceil_mode": True, "count_include_pad": False},
    ):
        check(lambda x, kw=kw: F.avg_pool1d(x, **kw), lambda t, kw=kw: TF.avg_pool1d(t, **kw), (3, 4, 13), dtype)
        check(lambda x, kw=kw: F.avg_pool1d(x, **kw), lambda t, kw=kw: TF.avg_pool1d(t, **kw), (4, 13), dtype)


# ---- adaptive pooling ----


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize(
    "shape,size",
    [
        ((32, 64, 8, 8), 1),
        ((3, 5, 7, 9), (3, 4)),
        ((5, 7, 9), (4, None)),
        ((2, 3, 3, 3), (5, 7)),
        ((2, 3, 6, 6), 3),
    ],
)
def test_adaptive_pool2d(shape, size, dtype):
    check(lambda x: F.adaptive_avg_pool2d(x, size), lambda t: TF.adaptive_avg_pool2d(t, size), shape, dtype)
    check(
        lambda x: F.adaptive_max_pool2d(x, size, True),
        lambda t: TF.adaptive_max_pool2d(t, size, True),
        shape,
        dtype,
        layout="transposed",
    )


@pytest.mark.parametrize("dtype", FLOATS)
def test_adaptive_pool1d(dtype):
    for shape, size in (((3, 4, 13), 5), ((4, 6), 6), ((2, 3, 4), 7)):
        check(
            lambda x, s=size: F.adaptive_avg_pool1d(x, s), lambda t, s=size: TF.adaptive_avg_pool1d(t, s), shape, dtype
        )
        check(
            lambda x, s=size: F.adaptive_max_pool1d(x, s, True),
            lambda t, s=size: TF.adaptive_max_pool1d(t, s, True),
            shape,
            dtype,
        )


# ---- padding ----

PADS = [
    ((2, 3, 5), (1, 2), "constant"),
    ((2, 3, 5), (-1, 2, 0, 1), "constant"),
    ((2, 3, 4, 5), (1, 0, 2, 1, 1, 1, 0, 2), "constant"),
    ((2, 3, 5), (2, 4), "reflect"),
    ((3, 5), (4, 0), "reflect"),
    ((2, 3, 4, 5), (3, 1, 2, 3), "reflect"),
    ((2, 2, 3, 4, 5), (1, 2, 2, 1, 2, 0), "reflect"),
    ((2, 3, 5), (3, 4), "replicate"),
    ((2, 4, 5), (3, 1, 2, 3), "replicate"),
    ((2, 3, 5), (5, 2), "circular"),
    ((2, 3, 5), (-2, 3), "circular"),
    ((2, 3, 4, 5), (1, 2, 4, 3), "circular"),
]


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("shape,pad,mode", PADS)
def test_pad(shape, pad, mode, dtype):
    value = 1.5 if mode == "constant" else None
    for layout in ("contiguous", "transposed"):
        check(
            lambda x: F.pad(x, pad, mode, value),
            lambda t: TF.pad(t, pad, mode, value),
            shape,
            dtype,
            layout=layout,
        )


# ---- interpolate ----

INTERP = [
    ((2, 3, 4, 5), {"size": (7, 9)}),
    ((2, 3, 4, 5), {"scale_factor": 2}),
    ((2, 3, 4, 5), {"scale_factor": (1.7, 2.3)}),
    ((2, 3, 4, 5), {"scale_factor": (1.7, 2.3), "recompute_scale_factor": True}),
    ((2, 3, 8, 9), {"size": 3}),
    ((2, 3, 5), {"scale_factor": 2.5}),
    ((2, 3, 5), {"size": 3}),
]


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("shape,kw", INTERP)
def test_interpolate(shape, kw, dtype):
    modes = [("nearest", None)]
    linear = "linear" if len(shape) == 3 else "bilinear"
    modes += [(linear, False), (linear, True)]
    for mode, ac in modes:
        check(
            lambda x, m=mode, a=ac: F.interpolate(x, mode=m, align_corners=a, **kw),
            lambda t, m=mode, a=ac: TF.interpolate(t, mode=m, align_corners=a, **kw),
            shape,
            dtype,
            layout="transposed",
        )


# ---- pixel shuffle and one_hot ----


@pytest.mark.parametrize("dtype", FLOATS)
def test_pixel_shuffle(dtype):
    check(lambda x: F.pixel_shuffle(x, 2), lambda t: TF.pixel_shuffle(t, 2), (2, 8, 3, 5), dtype)
    check(lambda x: F.pixel_shuffle(x, 3), lambda t: TF.pixel_shuffle(t, 3), (9, 2, 2), dtype, layout="transposed")
    check(lambda x: F.pixel_unshuffle(x, 2), lambda t: TF.pixel_unshuffle(t, 2), (2, 3, 4, 6), dtype)


def test_one_hot():
    idx = torch.tensor([[0, 4], [2, 1]])
    out = F.one_hot(fc.tensor(idx.numpy()))
    assert out.dtype == fc.int64
    np.testing.assert_array_equal(to_numpy(out), TF.one_hot(idx).numpy())
    np.testing.assert_array_equal(to_numpy(F.one_hot(fc.tensor(idx.numpy()), 7)), TF.one_hot(idx, 7).numpy())


# ---- integer and bool inputs: the dtypes PyTorch's CPU kernels take, their values and refusals ----

INT_DTYPES = [torch.int64, torch.int32, torch.int16, torch.int8, torch.uint8, torch.bool]
INT_SHAPES = {1: (2, 3, 7), 2: (2, 3, 5, 7), 3: (1, 2, 4, 5, 6)}
INT_CASES = [
    # (name, spatial dims, call with F = torch's or flambeau's functional): PyTorch computes an integer average
    # in int64 with the sum divided toward zero (int64 only), max pooling in every integer dtype but bool, and
    # refuses integers for the adaptive poolings and for max_pool1d without indices.
    ("avg_pool1d", 1, lambda F, x: F.avg_pool1d(x, 3, 2, 1)),
    ("avg_pool1d_ceil_no_pad", 1, lambda F, x: F.avg_pool1d(x, 3, 2, 1, ceil_mode=True, count_include_pad=False)),
    ("avg_pool2d", 2, lambda F, x: F.avg_pool2d(x, (2, 3), 1, (1, 1))),
    ("avg_pool2d_divisor", 2, lambda F, x: F.avg_pool2d(x, 2, divisor_override=3)),
    ("avg_pool3d", 3, lambda F, x: F.avg_pool3d(x, 2)),
    ("avg_pool3d_ceil_no_pad", 3, lambda F, x: F.avg_pool3d(x, 3, 2, 1, ceil_mode=True, count_include_pad=False)),
    ("avg_pool3d_ceil_pad", 3, lambda F, x: F.avg_pool3d(x, 3, 2, 1, ceil_mode=True)),
    ("avg_pool3d_divisor", 3, lambda F, x: F.avg_pool3d(x, 2, 1, 1, divisor_override=5)),
    ("adaptive_avg_pool1d", 1, lambda F, x: F.adaptive_avg_pool1d(x, 3)),
    ("adaptive_avg_pool2d", 2, lambda F, x: F.adaptive_avg_pool2d(x, (2, 3))),
    ("adaptive_avg_pool3d", 3, lambda F, x: F.adaptive_avg_pool3d(x, 2)),
    ("max_pool1d", 1, lambda F, x: F.max_pool1d(x, 2)),
    ("max_pool1d_indices", 1, lambda F, x: F.max_pool1d(x, 3, 2, 1, return_indices=True)),
    ("max_pool2d", 2, lambda F, x: F.max_pool2d(x, 2, 1, 1)),
    ("max_pool2d_indices", 2, lambda F, x: F.max_pool2d(x, 3, 2, 1, return_indices=True)),
    ("max_pool3d", 3, lambda F, x: F.max_pool3d(x, 2, 1, 1)),
    ("max_pool3d_indices", 3, lambda F, x: F.max_pool3d(x, 3, 2, 1, return_indices=True)),
    ("adaptive_max_pool1d", 1, lambda F, x: F.adaptive_max_pool1d(x, 3)),
    ("adaptive_max_pool2d", 2, lambda F, x: F.adaptive_max_pool2d(x, 2, return_indices=True)),
    ("adaptive_max_pool3d", 3, lambda F, x: F.adaptive_max_pool3d(x, 2)),
    ("lp_pool1d", 1, lambda F, x: F.lp_pool1d(x, 2, 2)),
]


@pytest.mark.parametrize("dtype", INT_DTYPES, ids=str)
@pytest.mark.parametrize("case", INT_CASES, ids=lambda c: c[0])
def test_integer_inputs_as_torch(case, dtype):
    _, dims, call = case
    g = torch.Generator().manual_seed(3)
    t = torch.randint(-60, 60, INT_SHAPES[dims], generator=g)
    t = (t > 0) if dtype == torch.bool else (t.abs() if dtype == torch.uint8 else t).to(dtype)
    for batched in (True, False):
        tt = t if batched else t[0]
        try:
            want = call(TF, tt)
        except NotImplementedError as e:
            torch_words = str(e).splitlines()[0]  # '"avg_pool2d" not implemented for 'Int''
            with pytest.raises(NotImplementedError) as ours:
                call(F, from_torch(tt))
            assert torch_words in str(ours.value) and f"(dtype {str(dtype)[6:]})" in str(ours.value)
            continue
        got = call(F, from_torch(tt))
        got, want = (got, want) if isinstance(want, tuple) else ((got,), (want,))
        for a, b in zip(got, want, strict=True):
            assert str(a.dtype).rpartition(".")[2] == str(b.dtype).rpartition(".")[2]
            if b.is_floating_point():
                np.testing.assert_allclose(to_numpy(a), b.numpy(), rtol=1e-6)
            else:
                np.testing.assert_array_equal(to_numpy(a), b.numpy())


def test_int64_average_pooling_of_strided_inputs():
    """A channels-last or transposed int64 input averages as a contiguous one (PyTorch's values)."""
    t = torch.randint(-100, 100, (2, 3, 6, 5), generator=torch.Generator().manual_seed(4))
    want = TF.avg_pool2d(t, 3, 2, 1, count_include_pad=False).numpy()
    channels_last = from_torch(t.permute(0, 2, 3, 1).contiguous()).permute(0, 3, 1, 2)
    transposed = from_torch(t.transpose(2, 3).contiguous()).transpose(2, 3)
    for x in (channels_last, transposed):
        assert not x.is_contiguous()
        np.testing.assert_array_equal(to_numpy(F.avg_pool2d(x, 3, 2, 1, count_include_pad=False)), want)


# ---- gradcheck (float64, small) ----


def _x(*shape):
    return fc.randn(*shape, dtype=fc.float64).requires_grad_(True)


@pytest.mark.parametrize(
    "fn,shape",
    [
        (lambda x: F.max_pool2d(x, 2, 1, 1), (1, 2, 4, 5)),
        (lambda x: F.max_pool1d(x, 3, 2, 1, ceil_mode=True), (2, 7)),
        (lambda x: F.avg_pool2d(x, 3, 2, 1, True, False), (1, 2, 5, 6)),
        (lambda x: F.avg_pool1d(x, 2), (1, 2, 5)),
        (lambda x: F.adaptive_avg_pool2d(x, (2, 3)), (1, 2, 5, 4)),
        (lambda x: F.adaptive_avg_pool2d(x, 1), (2, 3, 3)),
        (lambda x: F.adaptive_max_pool2d(x, (2, 3)), (1, 2, 5, 4)),
        (lambda x: F.pad(x, (1, 2, 2, 1), "reflect"), (1, 2, 3, 4)),
        (lambda x: F.pad(x, (2, 1), "replicate"), (2, 3)),
        (lambda x: F.pad(x, (2, 1, -1, 1), "circular"), (1, 3, 4)),
        (lambda x: F.pad(x, (1, -1, 1, 1), value=2.0), (2, 3, 4)),
        (lambda x: F.interpolate(x, scale_factor=1.5), (1, 2, 3, 4)),
        (lambda x: F.interpolate(x, size=(5, 3), mode="bilinear"), (1, 2, 3, 4)),
        (lambda x: F.interpolate(x, size=(5, 7), mode="bilinear", align_corners=True), (1, 1, 3, 4)),
        (lambda x: F.interpolate(x, size=7, mode="linear"), (1, 2, 4)),
        (lambda x: F.pixel_shuffle(x, 2), (1, 4, 2, 3)),
    ],
)
def test_gradcheck(fn, shape):
    assert fa.gradcheck(fn, (_x(*shape),))


def test_second_order_through_the_backward_kernels():
    for fn in (
        lambda x: F.avg_pool2d(x, 2),
        lambda x: F.adaptive_avg_pool2d(x, (2, 3)),
        lambda x: F.pad(x, (1, 2, 1, 0), "reflect"),
        lambda x: F.interpolate(x, size=(5, 3), mode="bilinear"),
        lambda x: F.max_pool2d(x, 2),
    ):
        assert fa.gradgradcheck(lambda x, fn=fn: fn(x) ** 2, (_x(1, 2, 4, 6),))


# ---- modules ----

MODULES = [
    ("MaxPool1d", (3,), {}),
    ("MaxPool1d", (3, 2, 1), {"return_indices": True}),
    ("MaxPool2d", (2,), {}),
    ("MaxPool2d", ((2, 3), (1, 2), 1, 2, True), {}),
    ("AvgPool1d", (3,), {}),
    ("AvgPool1d", (3, 2, 1, True, False), {}),
    ("AvgPool2d", (2,), {}),
    ("AvgPool2d", ((2, 3), None, 1, True, False, 3), {}),
    ("AdaptiveAvgPool1d", (3,), {}),
    ("AdaptiveAvgPool2d", ((None, 3),), {}),
    ("AdaptiveAvgPool2d", (1,), {}),
    ("AdaptiveMaxPool1d", (2,), {}),
    ("AdaptiveMaxPool2d", (2, True), {}),
    ("ZeroPad1d", (2,), {}),
    ("ZeroPad2d", (2,), {}),
    ("ZeroPad2d", ((1, 2, 3, 4),), {}),
    ("ConstantPad1d", (2, 3.5), {}),
    ("ConstantPad2d", ((1, 2, 3, 4), 1), {}),
    ("ReflectionPad1d", (2,), {}),
    ("ReflectionPad2d", (1,), {}),
    ("ReplicationPad1d", ((1, 2),), {}),
    ("ReplicationPad2d", (2,), {}),
    ("CircularPad1d", (1,), {}),
    ("CircularPad2d", ((1, 2, 3, 4),), {}),
    ("Upsample", (), {"scale_factor": 2}),
    ("Upsample", (), {"size": (5, 6), "mode": "bilinear", "align_corners": True}),
    ("Upsample", (), {"scale_factor": (2, 3)}),
    ("PixelShuffle", (2,), {}),
    ("PixelUnshuffle", (2,), {}),
]


@pytest.mark.parametrize("name,args,kwargs", MODULES)
def test_modules_match_torch(name, args, kwargs):
    ours, theirs = getattr(nn, name)(*args, **kwargs), getattr(tnn, name)(*args, **kwargs)
    assert repr(ours) == repr(theirs)
    assert ours.state_dict() == {} or len(ours.state_dict()) == 0
    one_d = name.endswith("1d")
    shape = (2, 4, 9) if one_d else (2, 4, 8, 10)
    t = torch.randn(shape)
    x = from_torch(t)
    out, out_t = ours(x), theirs(t)
    if isinstance(out_t, tuple):
        np.testing.assert_array_equal(to_numpy(out[1]), out_t[1].numpy())
        out, out_t = out[0], out_t[0]
    assert_close(out, out_t)


# bfloat16 (what autocast gives a pooling after a lowered convolution): values and gradients against
# PyTorch's CPU kernels on the same bfloat16 values; the gradients come back in bfloat16.
BF16_POOLS = [
    ("max_pool2d", lambda f: lambda x: f.max_pool2d(x, 2), (4, 3, 8, 8)),
    ("max_pool2d_padded", lambda f: lambda x: f.max_pool2d(x, 3, 2, 1, ceil_mode=True), (2, 3, 9, 7)),
    ("avg_pool2d", lambda f: lambda x: f.avg_pool2d(x, 3, 2, 1), (2, 3, 9, 7)),
    ("avg_pool2d_no_pad", lambda f: lambda x: f.avg_pool2d(x, 3, 2, 1, count_include_pad=False), (2, 3, 9, 7)),
    ("adaptive_avg_pool2d", lambda f: lambda x: f.adaptive_avg_pool2d(x, 1), (8, 16, 8, 8)),
    ("adaptive_avg_pool2d_3x2", lambda f: lambda x: f.adaptive_avg_pool2d(x, (3, 2)), (2, 3, 7, 5)),
    ("adaptive_max_pool2d", lambda f: lambda x: f.adaptive_max_pool2d(x, (3, 2)), (2, 3, 7, 5)),
]


@pytest.mark.on_devices(types=("cpu", "sim"))  # the CUDA pooling kernels take float32 and float64
@pytest.mark.parametrize("layout", ["contiguous", "transposed"])
@pytest.mark.parametrize("case", BF16_POOLS, ids=[c[0] for c in BF16_POOLS])
def test_poolings_in_bfloat16(case, layout):
    _, make, shape = case
    check(make(F), make(TF), shape, torch.bfloat16, layout)


@pytest.mark.on_devices(types=("cpu", "sim"))
def test_pooling_modules_in_bfloat16_give_bfloat16_gradients():
    x = fc.randn(2, 3, 8, 8).to(fc.bfloat16).requires_grad_(True)
    model = nn.Sequential(nn.MaxPool2d(2), nn.AvgPool2d(2), nn.AdaptiveAvgPool2d(1))
    out = model(x)
    assert out.dtype == fc.bfloat16
    out.sum().backward()
    assert x.grad.dtype == fc.bfloat16
    # each input's share of the sum: 1/4 from the average and 1/4 from the adaptive average, at the maxima
    np.testing.assert_array_equal(np.unique(to_numpy(x.grad)), [0.0, 1 / 16])


def test_lenet_and_resnet_layers_train():
    model = nn.Sequential(nn.MaxPool2d(2), nn.AdaptiveAvgPool2d(1))
    x = fc.randn(4, 3, 8, 8).requires_grad_(True)
    model(x).sum().backward()
    assert x.grad.shape == (4, 3, 8, 8)


# ---- errors ----


def err(exc, fragment, fn, *args, **kwargs):
    with pytest.raises(exc) as info:
        fn(*args, **kwargs)
    assert fragment in str(info.value), str(info.value)
    return str(info.value)


def test_error_paths():
    x = fc.zeros(1, 1, 4, 4)
    m = err(RuntimeError, "too small", F.max_pool2d, fc.zeros(1, 1, 2, 2), 3)
    assert "[max_pool2d]" in m and "(1, 1, 2, 2)" in m
    err(RuntimeError, "at most half", F.max_pool2d, x, 2, padding=2)
    err(
        ValueError,
        "expected a 3-D (C, H, W) or 4-D (N, C, H, W) input, got shape (4, 4)",
        F.max_pool2d,
        fc.zeros(4, 4),
        2,
    )
    err(RuntimeError, "[max_pool1d] expected a 2-D (C, L) or 3-D (N, C, L) input", F.max_pool1d, x, 2)
    err(RuntimeError, "[avg_pool2d]", F.avg_pool2d, fc.zeros(1, 1, 2, 2), 3)
    err(RuntimeError, "kernel_size must be greater than zero", nn.AvgPool2d(0), x)
    err(TypeError, "kernel_size must be an int", F.max_pool2d, x, 2.5)
    err(RuntimeError, "single int or a tuple of 2", F.max_pool2d, x, (2, 2, 2))
    err(RuntimeError, "[adaptive_avg_pool2d]", F.adaptive_avg_pool2d, fc.zeros(4, 4), 1)
    err(RuntimeError, "less than the input size", F.pad, fc.zeros(1, 2, 3), (3, 3), mode="reflect")
    err(RuntimeError, "wrap around", F.pad, fc.zeros(1, 2, 3), (4, 0), mode="circular")
    err(NotImplementedError, "not supported", F.pad, fc.zeros(6), (1, 1), mode="reflect")
    err(NotImplementedError, "unsupported padding mode", F.pad, x, (1, 1), mode="wrap")
    err(RuntimeError, "doesn't take in value", F.pad, x, (1, 1), mode="reflect", value=1.0)
    err(RuntimeError, "negative output size", F.pad, fc.zeros(1, 2, 3), (-2, -2))
    err(RuntimeError, "only one of size or scale_factor", F.interpolate, x, size=2, scale_factor=2)
    err(RuntimeError, "either size or scale_factor", F.interpolate, x)
    err(NotImplementedError, "bilinear mode needs 4-D input", F.interpolate, fc.zeros(1, 1, 4), size=2, mode="bilinear")
    err(RuntimeError, "align_corners option", F.interpolate, x, size=2, align_corners=True)
    err(RuntimeError, "same number of spatial dims", F.interpolate, x, size=(2, 2, 2))
    err(RuntimeError, "greater than 0", F.interpolate, x, scale_factor=0.1)
    err(RuntimeError, "positive and finite", F.interpolate, x, scale_factor=float("nan"))
    err(RuntimeError, "too large", F.interpolate, x, size=(2**40, 2**40))
    err(RuntimeError, "overflows int64", F.pad, x, (2**62, 2**62))
    err(RuntimeError, "divisible by upscale_factor**2", F.pixel_shuffle, fc.zeros(1, 5, 2, 2), 2)
    err(RuntimeError, "non-negative", F.one_hot, fc.tensor([-1, 2]))
    err(RuntimeError, "smaller than num_classes", F.one_hot, fc.tensor([3]), 3)
    err(TypeError, "int64", F.one_hot, fc.tensor([1.0]))
    err(TypeError, "[max_pool2d] input must be a Tensor", F.max_pool2d, [1.0], 2)


def test_max_unpool2d_of_overlapping_windows_writes_a_shared_maximum_once():
    """Overlapping windows (kernel 3, stride 2) may pick one element twice: PyTorch writes it, never sums."""
    t = torch.tensor([[[[0.0, 1.0, 9.0, 2.0, 0.5]]]])
    out_t, idx_t = TF.max_pool2d(t, (1, 3), stride=(1, 2), return_indices=True)
    assert idx_t.flatten().tolist() == [2, 2]  # the 9 is the maximum of both windows
    out, idx = F.max_pool2d(from_torch(t), (1, 3), stride=(1, 2), return_indices=True)
    up_t = TF.max_unpool2d(out_t, idx_t, (1, 3), stride=(1, 2), output_size=t.shape[-2:])
    up = F.max_unpool2d(out, idx, (1, 3), stride=(1, 2), output_size=t.shape[-2:])
    assert_close(up, up_t)
    assert to_numpy(up).max() == 9.0


def test_max_unpool2d_inverts_max_pool2d():
    t = torch.randn(2, 3, 6, 8, requires_grad=True)
    x = leaf(t.detach())
    out_t, idx_t = TF.max_pool2d(t, 2, return_indices=True)
    out, idx = F.max_pool2d(x, 2, return_indices=True)
    up_t = TF.max_unpool2d(out_t, idx_t, 2)
    up = F.max_unpool2d(out, idx, 2)
    assert_close(up, up_t)
    g = torch.randn(up_t.shape)
    up_t.backward(g)
    up.backward(from_torch(g))
    assert_close(x.grad, t.grad)
    assert_close(F.max_unpool2d(out, idx, 2, output_size=(7, 9)), TF.max_unpool2d(out_t, idx_t, 2, output_size=(7, 9)))
    err(RuntimeError, "invalid output_size", F.max_unpool2d, out, idx, 2, output_size=(12, 8))
