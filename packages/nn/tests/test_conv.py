"""Convolution layers and functional (F.conv1d/conv2d/conv_transpose1d/conv_transpose2d,
F.unfold/fold, nn.Conv*/ConvTranspose*/Unfold/Fold) against PyTorch: values and
gradients of input, weight and bias in float32 and float64, every option, odd
and non-contiguous shapes, gradcheck and gradgradcheck in float64, module
state_dict / initialisation / repr, and errors."""

from __future__ import annotations

import itertools
import math

import flambeau_autograd as fa
import flambeau_core as fc
import flambeau_nn as nn
import flambeau_nn.functional as F
import numpy as np
import pytest
import torch
from hypothesis import given, settings
from hypothesis import strategies as st
from nn_testing import TOLERANCES, assert_close, compare_forward_backward, copy_params, from_torch, to_numpy

pytestmark = pytest.mark.on_devices(not_on_cuda="im2col/col2im: no flambeau-cuda kernel yet")

TOL = {torch.float32: dict(rtol=1e-4, atol=1e-4), torch.float64: dict(rtol=1e-9, atol=1e-9)}


def leaf(x: torch.Tensor, noncontig: bool = False):
    ours = from_torch(x)
    if noncontig:  # the same values through a transposed view
        ours = from_torch(x.transpose(-1, -2).contiguous()).transpose(-1, -2)
        assert min(x.shape[-2:]) == 1 or not ours.is_contiguous()
    ours.requires_grad_(True)
    return ours, x.detach().clone().requires_grad_(True)


def run_both(f_ours, f_theirs, tensors, dtype, noncontig=False):
    """Calls both with the same leaves, compares outputs and the gradients of every leaf."""
    pairs = [leaf(t, noncontig and t.dim() >= 3) if t is not None else (None, None) for t in tensors]
    yo = f_ours(*[p[0] for p in pairs])
    yt = f_theirs(*[p[1] for p in pairs])
    assert_close(yo, yt, **TOL[dtype])
    g = torch.randn(yt.shape, dtype=dtype)
    (yo * from_torch(g)).sum().backward()
    (yt * g).sum().backward()
    for o, t in pairs:
        if o is not None:
            assert_close(o.grad, t.grad, **TOL[dtype])


DTYPES = [torch.float32, torch.float64]

# (N, Cin, Cout, H, W, k, stride, padding, dilation, groups)
CONV2D = [
    (2, 3, 4, 7, 9, 3, 1, 0, 1, 1),
    (2, 3, 4, 7, 9, (3, 2), (2, 1), (1, 2), (1, 2), 1),
    (1, 4, 6, 8, 8, 3, 2, 1, 1, 2),
    (3, 6, 6, 9, 7, 3, 1, 1, 1, 6),  # depthwise
    (2, 4, 8, 9, 9, 3, 2, 1, 1, 4),  # depthwise multiplier 2, stride 2
    (2, 3, 5, 5, 5, 1, 1, 0, 1, 1),  # pointwise
    (2, 4, 6, 7, 7, 1, 2, 0, 1, 2),  # 1x1 stride 2
    (2, 1, 6, 11, 10, 5, 1, 2, 1, 1),  # LeNet-like first layer (direct path)
    (2, 3, 2, 4, 4, 4, 1, 3, 2, 1),
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("noncontig", [False, True])
@pytest.mark.parametrize("case", CONV2D)
def test_conv2d_values_and_grads(case, bias, noncontig, dtype):
    n, cin, cout, h, w, k, s, p, d, g = case
    kh, kw = (k, k) if isinstance(k, int) else k
    x = torch.randn(n, cin, h, w, dtype=dtype)
    wt = torch.randn(cout, cin // g, kh, kw, dtype=dtype)
    b = torch.randn(cout, dtype=dtype) if bias else None
    run_both(
        lambda x, w, b: F.conv2d(x, w, b, s, p, d, g),
        lambda x, w, b: torch.nn.functional.conv2d(x, w, b, s, p, d, g),
        [x, wt, b],
        dtype,
        noncontig,
    )


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(
    "case", [(2, 3, 4, 10, 3, 1, 0, 1, 1), (3, 4, 6, 17, 5, 2, 2, 2, 2), (2, 6, 6, 9, 3, 1, 1, 1, 6)]
)
def test_conv1d_values_and_grads(case, dtype):
    n, cin, cout, length, k, s, p, d, g = case
    x = torch.randn(n, cin, length, dtype=dtype)
    wt = torch.randn(cout, cin // g, k, dtype=dtype)
    b = torch.randn(cout, dtype=dtype)
    run_both(
        lambda x, w, b: F.conv1d(x, w, b, s, p, d, g),
        lambda x, w, b: torch.nn.functional.conv1d(x, w, b, s, p, d, g),
        [x, wt, b],
        dtype,
    )


# (N, Cin, Cout, H, W, k, stride, padding, output_padding, dilation, groups)
CONVT2D = [
    (2, 3, 4, 5, 6, 3, 1, 0, 0, 1, 1),
    (2, 4, 6, 4, 5, 3, 2, 1, 1, 1, 2),
    (1, 3, 2, 5, 4, (3, 2), (2, 3), (1, 0), (1, 2), (2, 1), 1),
    (2, 6, 6, 5, 5, 3, 1, 1, 0, 1, 6),
    (2, 6, 3, 5, 5, 3, 2, 1, 1, 1, 3),
    (2, 4, 4, 5, 5, 1, 1, 0, 0, 1, 1),
    (1, 2, 3, 3, 3, 2, 1, 0, 1, 2, 1),  # output_padding >= stride (allowed below the dilation)
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("case", CONVT2D)
def test_conv_transpose2d_values_and_grads(case, bias, dtype):
    n, cin, cout, h, w, k, s, p, op, d, g = case
    kh, kw = (k, k) if isinstance(k, int) else k
    x = torch.randn(n, cin, h, w, dtype=dtype)
    wt = torch.randn(cin, cout // g, kh, kw, dtype=dtype)
    b = torch.randn(cout, dtype=dtype) if bias else None
    run_both(
        lambda x, w, b: F.conv_transpose2d(x, w, b, s, p, op, g, d),
        lambda x, w, b: torch.nn.functional.conv_transpose2d(x, w, b, s, p, op, g, d),
        [x, wt, b],
        dtype,
    )


@pytest.mark.parametrize("dtype", DTYPES)
def test_conv_transpose1d_values_and_grads(dtype):
    for n, cin, cout, length, k, s, p, op, d, g in [(2, 3, 4, 7, 3, 1, 0, 0, 1, 1), (2, 4, 2, 6, 4, 3, 1, 2, 1, 2)]:
        x = torch.randn(n, cin, length, dtype=dtype)
        wt = torch.randn(cin, cout // g, k, dtype=dtype)
        b = torch.randn(cout, dtype=dtype)
        run_both(
            lambda x, w, b, s=s, p=p, op=op, g=g, d=d: F.conv_transpose1d(x, w, b, s, p, op, g, d),
            lambda x, w, b, s=s, p=p, op=op, g=g, d=d: torch.nn.functional.conv_transpose1d(x, w, b, s, p, op, g, d),
            [x, wt, b],
            dtype,
        )


@pytest.mark.parametrize("padding", ["same", "valid"])
@pytest.mark.parametrize("kd", [(3, 1), (4, 1), (3, 2), (2, 3), ((4, 3), (1, 2))])
def test_string_padding(padding, kd):
    k, d = kd
    kh, kw = (k, k) if isinstance(k, int) else k
    x = torch.randn(2, 3, 9, 8, dtype=torch.float64)
    wt = torch.randn(4, 3, kh, kw, dtype=torch.float64)
    b = torch.randn(4, dtype=torch.float64)
    run_both(
        lambda x, w, b: F.conv2d(x, w, b, padding=padding, dilation=d),
        lambda x, w, b: torch.nn.functional.conv2d(x, w, b, padding=padding, dilation=d),
        [x, wt, b],
        torch.float64,
    )
    x1 = torch.randn(2, 3, 10, dtype=torch.float64)
    w1 = torch.randn(4, 3, kh, dtype=torch.float64)
    d1 = d if isinstance(d, int) else d[0]
    run_both(
        lambda x, w: F.conv1d(x, w, padding=padding, dilation=d1),
        lambda x, w: torch.nn.functional.conv1d(x, w, padding=padding, dilation=d1),
        [x1, w1],
        torch.float64,
    )


@pytest.mark.parametrize("s,p,d,g", list(itertools.product([1, 2], [0, 1], [1, 2], [1, 2])))
def test_every_option_combination_gradients(s, p, d, g):
    x = torch.randn(2, 4, 6, 7, dtype=torch.float64)
    w = torch.randn(4, 4 // g, 3, 2, dtype=torch.float64)
    b = torch.randn(4, dtype=torch.float64)
    run_both(
        lambda x, w, b: F.conv2d(x, w, b, s, p, d, g),
        lambda x, w, b: torch.nn.functional.conv2d(x, w, b, s, p, d, g),
        [x, w, b],
        torch.float64,
    )
    for op in range(max(s, d)):
        wt = torch.randn(4, 4 // g, 3, 2, dtype=torch.float64)
        run_both(
            lambda x, w, b, op=op: F.conv_transpose2d(x, w, b, s, p, op, g, d),
            lambda x, w, b, op=op: torch.nn.functional.conv_transpose2d(x, w, b, s, p, op, g, d),
            [x, wt, b],
            torch.float64,
        )


def f64(*shape):
    return fc.randn(*shape, dtype=fc.float64).requires_grad_(True)


@pytest.mark.parametrize(
    "args",
    [
        dict(stride=1, padding=0, dilation=1, groups=1),
        dict(stride=2, padding=1, dilation=1, groups=2),
        dict(stride=(1, 2), padding=(2, 1), dilation=(2, 1), groups=1),
        dict(stride=1, padding=1, dilation=1, groups=4),
    ],
)
def test_gradcheck_conv2d(args):
    g = args["groups"]
    x, w, b = f64(2, 4, 5, 6), f64(4, 4 // g, 3, 2), f64(4)
    assert fa.gradcheck(lambda x, w, b: F.conv2d(x, w, b, **args), (x, w, b))
    assert fa.gradgradcheck(lambda x, w, b: F.conv2d(x, w, b, **args), (x, w, b))


@pytest.mark.parametrize(
    "args",
    [
        dict(stride=1, padding=0, output_padding=0, dilation=1, groups=1),
        dict(stride=2, padding=1, output_padding=1, dilation=1, groups=2),
        dict(stride=(2, 1), padding=(0, 1), output_padding=(1, 0), dilation=(1, 2), groups=1),
        dict(stride=1, padding=1, output_padding=0, dilation=1, groups=4),
    ],
)
def test_gradcheck_conv_transpose2d(args):
    g = args["groups"]
    x, w, b = f64(2, 4, 4, 3), f64(4, 4 // g, 3, 2), f64(4)
    assert fa.gradcheck(lambda x, w, b: F.conv_transpose2d(x, w, b, **args), (x, w, b))
    assert fa.gradgradcheck(lambda x, w, b: F.conv_transpose2d(x, w, b, **args), (x, w, b))


def test_gradcheck_1d_unfold_fold():
    x, w, b = f64(2, 3, 7), f64(4, 3, 3), f64(4)
    assert fa.gradcheck(lambda x, w, b: F.conv1d(x, w, b, stride=2, padding=1, dilation=2), (x, w, b))
    xt, wt = f64(2, 3, 5), f64(3, 2, 3)
    assert fa.gradcheck(lambda x, w: F.conv_transpose1d(x, w, None, 2, 1, 1), (xt, wt))
    img = f64(2, 3, 5, 4)
    assert fa.gradcheck(lambda t: F.unfold(t, (2, 3), 1, 1, (2, 1)), (img,))
    assert fa.gradgradcheck(lambda t: F.unfold(t, (2, 3), 1, 1, (2, 1)) ** 2, (img,))
    cols = f64(2, 12, 4)
    assert fa.gradcheck(lambda t: F.fold(t, (4, 5), 2, 1, 0, (2, 2)), (cols,))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize(
    "shape,k,d,p,s", [((2, 3, 6, 7), (2, 3), 1, 0, 1), ((1, 2, 5, 5), 3, 2, 1, 1), ((3, 5, 4), 2, 1, 1, 2)]
)
def test_unfold_fold_match_torch(shape, k, d, p, s, dtype):
    x = torch.randn(*shape, dtype=dtype)
    run_both(lambda t: F.unfold(t, k, d, p, s), lambda t: torch.nn.functional.unfold(t, k, d, p, s), [x], dtype)
    cols = torch.nn.functional.unfold(x, k, d, p, s)
    c = torch.randn(cols.shape, dtype=dtype)
    run_both(
        lambda t: F.fold(t, shape[-2:], k, d, p, s),
        lambda t: torch.nn.functional.fold(t, shape[-2:], k, d, p, s),
        [c],
        dtype,
    )


# ---- modules ----

MODULES = [
    ("Conv1d", (3, 4, 3), dict(stride=2, padding=1), (2, 3, 9)),
    ("Conv2d", (3, 6, (3, 2)), dict(stride=(2, 1), padding=(1, 0), dilation=(1, 2), groups=3), (2, 3, 8, 7)),
    ("Conv2d", (4, 4, 3), dict(padding="same", groups=4, bias=False), (2, 4, 6, 6)),
    ("Conv2d", (3, 5, 3), dict(padding="valid"), (3, 7, 7)),
    ("ConvTranspose1d", (3, 4, 3), dict(stride=2, padding=1, output_padding=1), (2, 3, 5)),
    ("ConvTranspose2d", (4, 6, 3), dict(stride=2, padding=1, output_padding=1, groups=2), (2, 4, 4, 5)),
    ("ConvTranspose2d", (4, 2, 2), dict(dilation=2, bias=False), (1, 4, 3, 3)),
]


@pytest.mark.parametrize("name,args,kwargs,shape", MODULES)
def test_module_matches_torch(name, args, kwargs, shape):
    ours, theirs = getattr(nn, name)(*args, **kwargs), getattr(torch.nn, name)(*args, **kwargs)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    for k, v in theirs.state_dict().items():
        assert tuple(ours.state_dict()[k].shape) == tuple(v.shape)
    assert repr(ours) == repr(theirs)
    copy_params(ours, theirs)
    x = torch.randn(*shape)
    xo, xt = leaf(x)
    yo, yt = ours(xo), theirs(xt)
    assert_close(yo, yt, rtol=1e-4, atol=1e-5)
    g = torch.randn(yt.shape)
    (yo * from_torch(g)).sum().backward()
    (yt * g).sum().backward()
    assert_close(xo.grad, xt.grad, rtol=1e-4, atol=1e-5)
    their = dict(theirs.named_parameters())
    for pname, p in ours.named_parameters():
        assert_close(p.grad, their[pname].grad, rtol=1e-4, atol=1e-4)


def test_conv_transpose_output_size():
    ours, theirs = (
        nn.ConvTranspose2d(3, 2, 3, stride=2, padding=1),
        torch.nn.ConvTranspose2d(3, 2, 3, stride=2, padding=1),
    )
    copy_params(ours, theirs)
    x = torch.randn(1, 3, 4, 4)
    for size in [(7, 7), (8, 8), (1, 2, 8, 7)]:
        assert_close(ours(from_torch(x), output_size=size), theirs(x, output_size=size), rtol=1e-4, atol=1e-5)
    with pytest.raises(fc.FlambeauError, match="valid sizes range from 7 to 8"):
        ours(from_torch(x), output_size=(9, 9))


def test_module_default_init_bounds():
    """kaiming_uniform_(a=sqrt(5)) gives U(-1/sqrt(fan_in), 1/sqrt(fan_in)) for weight and bias."""
    for m, fan_in in [
        (nn.Conv2d(16, 32, 3), 16 * 9),
        (nn.Conv2d(32, 32, 3, groups=32), 9),
        (nn.Conv1d(5, 4, 7), 35),
        (nn.ConvTranspose2d(8, 6, 3, groups=2), 3 * 9),
    ]:
        bound = 1 / math.sqrt(fan_in)
        w, b = to_numpy(m.weight), to_numpy(m.bias)
        assert np.abs(w).max() <= bound + 1e-7 and np.abs(w).max() > 0.5 * bound
        assert np.abs(b).max() <= bound + 1e-7
        assert m.weight.requires_grad and m.bias.requires_grad


def test_module_dtype_and_extra_repr():
    m = nn.Conv2d(3, 8, 3, dtype=fc.float64)
    assert m.weight.dtype == fc.float64 and m.bias.dtype == fc.float64
    assert m.extra_repr() == "3, 8, kernel_size=(3, 3), stride=(1, 1)"
    assert repr(nn.Unfold((2, 3), padding=1)) == repr(torch.nn.Unfold((2, 3), padding=1))
    assert repr(nn.Fold((4, 5), 2, stride=2)) == repr(torch.nn.Fold((4, 5), 2, stride=2))
    x = torch.randn(2, 3, 6, 6)
    assert_close(nn.Unfold(2, stride=2)(from_torch(x)), torch.nn.Unfold(2, stride=2)(x))
    cols = torch.randn(2, 12, 25)
    assert_close(nn.Fold((4, 4), 2, padding=1)(from_torch(cols)), torch.nn.Fold((4, 4), 2, padding=1)(cols))


def test_load_state_dict_from_torch():
    theirs = torch.nn.Conv2d(3, 4, 3, padding=1)
    ours = nn.Conv2d(3, 4, 3, padding=1)
    ours.load_state_dict({k: from_torch(v) for k, v in theirs.state_dict().items()})
    x = torch.randn(1, 3, 5, 5)
    assert_close(ours(from_torch(x)), theirs(x), rtol=1e-4, atol=1e-5)


# ---- errors ----


def test_functional_errors():
    with pytest.raises(fc.FlambeauError, match=r"expected input\[8, 4, 32, 32\] to have 3 channels"):
        F.conv2d(fc.zeros(8, 4, 32, 32), fc.zeros(16, 3, 3, 3))
    with pytest.raises(fc.FlambeauError, match="Invalid padding string 'full'"):
        F.conv2d(fc.zeros(1, 3, 8, 8), fc.zeros(4, 3, 3, 3), padding="full")
    with pytest.raises(fc.FlambeauError, match="not supported for strided convolutions"):
        F.conv2d(fc.zeros(1, 3, 8, 8), fc.zeros(4, 3, 3, 3), stride=2, padding="same")
    with pytest.raises(TypeError, match=r"\[conv2d\] input must be a Tensor"):
        F.conv2d(np.zeros((1, 3, 8, 8)), fc.zeros(4, 3, 3, 3))
    with pytest.raises(fc.FlambeauError, match=r"\[conv1d\].*3-D"):
        F.conv1d(fc.zeros(1, 3, 8, 8), fc.zeros(4, 3, 3))
    with pytest.raises(fc.FlambeauError, match=r"\[conv_transpose2d\] padding must be an int"):
        F.conv_transpose2d(fc.zeros(1, 3, 8, 8), fc.zeros(3, 3, 3, 3), padding="same")
    with pytest.raises(fc.FlambeauError, match=r"\[im2col\]"):
        F.unfold(fc.zeros(1, 2, 2, 2), 3)
    with pytest.raises(fc.FlambeauError, match=r"\[col2im\]"):
        F.fold(fc.zeros(1, 8, 5), (3, 3), 2)


def test_module_errors():
    with pytest.raises(fc.FlambeauError, match="in_channels \\(3\\) must be divisible by groups \\(2\\)"):
        nn.Conv2d(3, 4, 3, groups=2)
    with pytest.raises(fc.FlambeauError, match="out_channels \\(5\\) must be divisible by groups \\(2\\)"):
        nn.Conv2d(4, 5, 3, groups=2)
    with pytest.raises(fc.FlambeauError, match="groups must be a positive integer"):
        nn.Conv2d(4, 4, 3, groups=0)
    with pytest.raises(fc.FlambeauError, match="Invalid padding string 'half'"):
        nn.Conv2d(4, 4, 3, padding="half")
    with pytest.raises(fc.FlambeauError, match="not supported for strided convolutions"):
        nn.Conv2d(4, 4, 3, stride=2, padding="same")
    with pytest.raises(fc.FlambeauError, match="padding_mode must be one of"):
        nn.Conv2d(4, 4, 3, padding_mode="mirror")
    with pytest.raises(fc.FlambeauError, match='ConvTranspose2d\\] Only "zeros" padding mode is supported'):
        nn.ConvTranspose2d(4, 4, 3, padding_mode="reflect")
    with pytest.raises(fc.FlambeauError, match="reflect padding must be less than the input size"):
        nn.Conv2d(3, 4, 3, padding=3, padding_mode="reflect")(fc.zeros(1, 3, 3, 3))
    with pytest.raises(TypeError, match="kernel_size"):
        nn.Conv2d(4, 4, (3, 3, 3))
    m = nn.Conv2d(3, 16, 3)
    with pytest.raises(fc.FlambeauError, match=r"expected input\[8, 4, 32, 32\] to have 3 channels"):
        m(fc.zeros(8, 4, 32, 32))
    with pytest.raises(fc.FlambeauError, match="larger than the padded input"):
        m(fc.zeros(1, 3, 2, 2))


def test_docstring_examples_of_the_conv_modules():
    import doctest

    import flambeau_nn.modules.conv as conv_modules

    assert doctest.testmod(conv_modules, verbose=False).failed == 0


@pytest.mark.parametrize("mode", ["reflect", "replicate", "circular"])
@pytest.mark.parametrize(
    ("layer", "shape", "kwargs"),
    [
        ("Conv1d", (2, 3, 11), {"kernel_size": 3, "padding": 2}),
        ("Conv1d", (2, 3, 9), {"kernel_size": 4, "padding": "same", "dilation": 2}),
        ("Conv2d", (2, 3, 7, 9), {"kernel_size": 3, "padding": (1, 2), "stride": 2}),
        ("Conv2d", (1, 4, 6, 5), {"kernel_size": (2, 3), "padding": "same", "groups": 2}),
        ("Conv2d", (1, 4, 6, 5), {"kernel_size": 3, "padding": "valid"}),
    ],
)
def test_padding_modes_match_torch(mode, layer, shape, kwargs):
    cin = shape[1]
    tm = getattr(torch.nn, layer)(cin, 4, padding_mode=mode, dtype=torch.float64, **kwargs)
    m = getattr(nn, layer)(cin, 4, padding_mode=mode, dtype=fc.float64, **kwargs)
    copy_params(m, tm)
    tx = torch.randn(shape, dtype=torch.float64, requires_grad=True)
    fx = from_torch(tx.detach()).requires_grad_()
    ty, fy = tm(tx), m(fx)
    assert_close(fy, ty, rtol=1e-10, atol=1e-12)
    g = torch.randn(ty.shape, dtype=torch.float64)
    ty.backward(g)
    fy.backward(from_torch(g))
    assert_close(fx.grad, tx.grad, rtol=1e-10, atol=1e-12)
    assert_close(m.weight.grad, tm.weight.grad, rtol=1e-10, atol=1e-12)
    assert repr(m) == repr(tm)


# ---- 3-D convolution and transposed convolution (composed from the 2-D kernels) ----

CONV3D = [
    # (N, Cin, Cout, D, H, W, k, stride, padding, dilation, groups)
    (2, 3, 4, 5, 6, 7, 3, 1, 0, 1, 1),
    (1, 4, 6, 6, 5, 7, (2, 3, 1), (2, 1, 2), (1, 0, 0), (2, 1, 1), 2),
    (2, 2, 4, 4, 4, 4, 3, 2, 1, 1, 2),
    (1, 3, 3, 5, 4, 3, 1, 1, 0, 1, 3),  # depthwise pointwise
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("case", CONV3D)
def test_conv3d_values_and_grads(case, bias, dtype):
    n, cin, cout, d, h, w, k, s, p, dil, g = case
    kk = (k,) * 3 if isinstance(k, int) else k
    x = torch.randn(n, cin, d, h, w, dtype=dtype)
    wt = torch.randn(cout, cin // g, *kk, dtype=dtype)
    b = torch.randn(cout, dtype=dtype) if bias else None
    compare_forward_backward(
        lambda x, w, b: F.conv3d(x, w, b, s, p, dil, g),
        lambda x, w, b: torch.nn.functional.conv3d(x, w, b, s, p, dil, g),
        [x, wt, b],
        **TOLERANCES[dtype],
    )


@pytest.mark.parametrize("padding", ["same", "valid"])
def test_conv3d_string_padding_and_unbatched(padding):
    x, w = torch.randn(3, 5, 6, 6), torch.randn(2, 3, 2, 3, 2)
    compare_forward_backward(
        lambda x, w: F.conv3d(x, w, padding=padding, dilation=(1, 2, 1)),
        lambda x, w: torch.nn.functional.conv3d(x, w, padding=padding, dilation=(1, 2, 1)),
        [x, w],
        rtol=1e-4,
        atol=1e-5,
    )


CONVT3D = [
    # (N, Cin, Cout, D, H, W, k, stride, padding, output_padding, dilation, groups)
    (2, 3, 4, 3, 4, 5, 3, 1, 0, 0, 1, 1),
    (1, 4, 6, 3, 3, 4, (2, 3, 3), (2, 1, 3), (1, 0, 2), (1, 0, 2), (1, 2, 1), 2),
    (2, 2, 2, 4, 3, 3, 3, 2, 1, 1, 1, 2),
    (1, 2, 3, 3, 3, 3, 2, 1, 1, 2, 3, 1),  # output_padding < dilation with stride 1
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("case", CONVT3D)
def test_conv_transpose3d_values_and_grads(case, bias, dtype):
    n, cin, cout, d, h, w, k, s, p, op, dil, g = case
    kk = (k,) * 3 if isinstance(k, int) else k
    x = torch.randn(n, cin, d, h, w, dtype=dtype)
    wt = torch.randn(cin, cout // g, *kk, dtype=dtype)
    b = torch.randn(cout, dtype=dtype) if bias else None
    compare_forward_backward(
        lambda x, w, b: F.conv_transpose3d(x, w, b, s, p, op, g, dil),
        lambda x, w, b: torch.nn.functional.conv_transpose3d(x, w, b, s, p, op, g, dil),
        [x, wt, b],
        **TOLERANCES[dtype],
    )


def test_gradcheck_conv3d_and_transpose():
    x = fc.randn(1, 2, 3, 3, 4, dtype=fc.float64, requires_grad=True)
    w = fc.randn(2, 1, 2, 2, 2, dtype=fc.float64, requires_grad=True)
    b = fc.randn(2, dtype=fc.float64, requires_grad=True)
    assert fa.gradcheck(lambda x, w, b: F.conv3d(x, w, b, stride=(1, 2, 1), padding=1, groups=2), (x, w, b))
    assert fa.gradcheck(
        lambda x, w, b: F.conv_transpose3d(x, w, b, stride=2, padding=(1, 0, 1), output_padding=1, groups=2),
        (x, w, b),
    )


MODULES_3D = [
    ("Conv3d", (4, 6, 3), dict(stride=2, padding=1, groups=2), (2, 4, 5, 6, 5)),
    ("Conv3d", (2, 3, (2, 3, 1)), dict(padding="same", bias=False), (2, 2, 4, 5, 3)),
    ("Conv3d", (2, 3, 3), dict(padding=1, padding_mode="reflect"), (1, 2, 4, 4, 4)),
    ("Conv3d", (2, 3, 3), dict(padding=(1, 2, 1), padding_mode="circular"), (1, 2, 4, 4, 4)),
    ("Conv3d", (2, 3, 3), dict(padding=1, padding_mode="replicate"), (2, 4, 4, 4)),
    ("ConvTranspose3d", (4, 2, 3), dict(stride=2, padding=1, output_padding=1, groups=2), (1, 4, 3, 4, 3)),
]


@pytest.mark.parametrize("name,args,kwargs,shape", MODULES_3D)
def test_module_3d_matches_torch(name, args, kwargs, shape):
    test_module_matches_torch(name, args, kwargs, shape)


def test_conv3d_init_statistics():
    """kaiming_uniform_(a=sqrt(5)): weight and bias uniform in +-1/sqrt(fan_in), fan_in = Cin/groups * kD*kH*kW."""
    m = nn.Conv3d(8, 16, (3, 4, 5), groups=2)
    bound = 1 / math.sqrt(4 * 3 * 4 * 5)
    w = to_numpy(m.weight)
    assert w.shape == (16, 4, 3, 4, 5)
    assert np.abs(w).max() <= bound and np.abs(w).max() > 0.95 * bound
    assert abs(w.std() - bound / math.sqrt(3)) < 0.05 * bound
    assert np.abs(to_numpy(m.bias)).max() <= bound
    t = nn.ConvTranspose3d(6, 4, 3, groups=2)
    assert tuple(t.weight.shape) == (6, 2, 3, 3, 3)
    # fan_in of a transposed weight is its dim 1 times the kernel, as PyTorch computes it
    assert np.abs(to_numpy(t.weight)).max() <= 1 / math.sqrt(2 * 27)


def test_conv3d_errors():
    x = fc.randn(1, 4, 3, 3, 3)
    with pytest.raises(fc.FlambeauError, match=r"\[conv3d\] input of shape \(1, 4, 3, 3, 3\) has 4 channels"):
        F.conv3d(x, fc.randn(2, 3, 1, 1, 1))
    with pytest.raises(fc.FlambeauError, match=r"\[conv3d\] expected a 4-D .* or 5-D"):
        F.conv3d(fc.randn(4, 3, 3), fc.randn(2, 4, 1, 1, 1))
    with pytest.raises(fc.FlambeauError, match=r"\[conv3d\] the kernel \(5, 1, 1\)"):
        F.conv3d(x, fc.randn(2, 4, 5, 1, 1))
    with pytest.raises(TypeError, match=r"\[conv3d\] input, weight and bias must have the same dtype"):
        F.conv3d(x, fc.randn(2, 4, 1, 1, 1, dtype=fc.float64))
    with pytest.raises(fc.FlambeauError, match=r"\[conv3d\] stride must be >= 1"):
        F.conv3d(x, fc.randn(2, 4, 1, 1, 1), stride=0)
    with pytest.raises(fc.FlambeauError, match=r"\[conv_transpose3d\] output padding must be smaller"):
        F.conv_transpose3d(x, fc.randn(4, 2, 2, 2, 2), stride=2, output_padding=2)
    with pytest.raises(fc.FlambeauError, match=r"\[conv_transpose3d\] bias must have shape \(2,\)"):
        F.conv_transpose3d(x, fc.randn(4, 2, 2, 2, 2), fc.randn(3))
    with pytest.raises(fc.FlambeauError, match=r"\[Conv3d\] in_channels \(3\) must be divisible by groups \(2\)"):
        nn.Conv3d(3, 4, 3, groups=2)
    with pytest.raises(fc.FlambeauError, match=r"\[ConvTranspose3d\] requested an output size"):
        nn.ConvTranspose3d(4, 2, 3, stride=2)(x, output_size=(9, 9, 9))


@pytest.mark.parametrize("pad", [0, 1, 2])
def test_conv_tbc_matches_torch(pad):
    x, w, b = torch.randn(7, 2, 3), torch.randn(3, 3, 4), torch.randn(4)
    compare_forward_backward(
        lambda x, w, b: F.conv_tbc(x, w, b, pad),
        lambda x, w, b: torch.conv_tbc(x, w, b, pad),
        [x, w, b],
        rtol=1e-5,
        atol=1e-5,
    )
    with pytest.raises(fc.FlambeauError, match=r"\[conv_tbc\] input .* disagree on the channels"):
        F.conv_tbc(fc.ones(7, 2, 3), fc.ones(3, 2, 4), fc.ones(4))


@settings(max_examples=30, deadline=None)
@given(
    spatial=st.tuples(*[st.integers(1, 6)] * 3),
    k=st.tuples(*[st.integers(1, 3)] * 3),
    s=st.tuples(*[st.integers(1, 3)] * 3),
    p=st.tuples(*[st.integers(0, 2)] * 3),
    d=st.tuples(*[st.integers(1, 2)] * 3),
    groups=st.sampled_from([1, 2]),
    transposed=st.booleans(),
)
def test_conv3d_shapes_property(spatial, k, s, p, d, groups, transposed):
    """Any valid (or invalid) 3-D (transposed) convolution agrees with torch: same values, or both refuse."""
    x = torch.randn(1, 2, *spatial, dtype=torch.float64)
    if transposed:
        w = torch.randn(2, 2 // groups, *k, dtype=torch.float64)
        op = tuple(min(s[i], d[i]) - 1 for i in range(3))
        theirs = lambda: torch.nn.functional.conv_transpose3d(x, w, None, s, p, op, groups, d)  # noqa: E731
        ours = lambda: F.conv_transpose3d(from_torch(x), from_torch(w), None, s, p, op, groups, d)  # noqa: E731
    else:
        w = torch.randn(2, 2 // groups, *k, dtype=torch.float64)
        theirs = lambda: torch.nn.functional.conv3d(x, w, None, s, p, d, groups)  # noqa: E731
        ours = lambda: F.conv3d(from_torch(x), from_torch(w), None, s, p, d, groups)  # noqa: E731
    try:
        expected = theirs()
    except RuntimeError:
        with pytest.raises(fc.FlambeauError):
            ours()
        return
    assert_close(ours(), expected, rtol=1e-9, atol=1e-9)


def test_gradgradcheck_conv3d_and_transpose():
    x = fc.randn(1, 2, 3, 2, 3, dtype=fc.float64, requires_grad=True)
    w = fc.randn(2, 2, 2, 1, 2, dtype=fc.float64, requires_grad=True)
    assert fa.gradgradcheck(lambda x, w: F.conv3d(x, w, padding=1), (x, w))
    assert fa.gradgradcheck(lambda x, w: F.conv_transpose3d(x, w, stride=2), (x, w))
