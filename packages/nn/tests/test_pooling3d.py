"""3-D pooling (F.max_pool3d/avg_pool3d/adaptive_*_pool3d and their layers), LP pooling and max unpooling
against PyTorch: values, indices and gradients in float32 and float64, ceil_mode, count_include_pad,
divisor_override, gradcheck in float64, and errors."""

from __future__ import annotations

import flambeau_autograd as fa
import flambeau_core as fc
import flambeau_nn as nn
import flambeau_nn.functional as F
import pytest
import torch
import torch.nn.functional as TF
from hypothesis import given, settings
from hypothesis import strategies as st
from nn_testing import TOLERANCES, assert_close, compare_forward_backward, from_torch

DTYPES = [torch.float32, torch.float64]

MAX3D = [
    dict(kernel_size=2),
    dict(kernel_size=3, stride=2, padding=1),
    dict(kernel_size=(2, 3, 2), stride=(1, 2, 3), padding=(1, 1, 0), dilation=(2, 1, 1), ceil_mode=True),
    dict(kernel_size=3, stride=2, ceil_mode=True),
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("kw", MAX3D)
@pytest.mark.parametrize("shape", [(2, 3, 5, 6, 7), (3, 6, 5, 7)])
def test_max_pool3d(shape, kw, dtype):
    x = torch.randn(*shape, dtype=dtype)
    compare_forward_backward(
        lambda x: F.max_pool3d(x, **kw), lambda x: TF.max_pool3d(x, **kw), [x], **TOLERANCES[dtype]
    )
    ours, idx = F.max_pool3d(from_torch(x), return_indices=True, **kw)
    _, their_idx = TF.max_pool3d(x, return_indices=True, **kw)
    assert_close(idx, their_idx)


def test_max_pool3d_ties_pick_the_first_in_scan_order():
    x = torch.zeros(1, 1, 4, 4, 4)
    x[0, 0, 1, 0, 1] = x[0, 0, 0, 1, 1] = x[0, 0, 1, 1, 0] = 1.0
    _, idx = F.max_pool3d(from_torch(x), 2, return_indices=True)
    assert_close(idx, TF.max_pool3d(x, 2, return_indices=True)[1])


AVG3D = [
    dict(kernel_size=2),
    dict(kernel_size=3, stride=2, padding=1),
    dict(kernel_size=3, stride=2, padding=1, count_include_pad=False, ceil_mode=True),
    dict(kernel_size=(2, 3, 2), stride=2, padding=1, divisor_override=5, ceil_mode=True),
    dict(kernel_size=(3, 2, 3), stride=(2, 1, 2), padding=(1, 0, 1), ceil_mode=True),
]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("kw", AVG3D)
def test_avg_pool3d(kw, dtype):
    x = torch.randn(2, 3, 5, 6, 7, dtype=dtype)
    compare_forward_backward(
        lambda x: F.avg_pool3d(x, **kw), lambda x: TF.avg_pool3d(x, **kw), [x], **TOLERANCES[dtype]
    )


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("size", [1, (2, 3, 4), (3, None, 5), (5, 6, 7), (4, 4, 9)])
def test_adaptive_pool3d(size, dtype):
    x = torch.randn(2, 3, 5, 6, 7, dtype=dtype)
    tol = TOLERANCES[dtype]
    compare_forward_backward(
        lambda x: F.adaptive_avg_pool3d(x, size), lambda x: TF.adaptive_avg_pool3d(x, size), [x], **tol
    )
    compare_forward_backward(
        lambda x: F.adaptive_max_pool3d(x, size), lambda x: TF.adaptive_max_pool3d(x, size), [x], **tol
    )
    _, idx = F.adaptive_max_pool3d(from_torch(x[0]), size, return_indices=True)
    assert_close(idx, TF.adaptive_max_pool3d(x[0], size, return_indices=True)[1])


@pytest.mark.parametrize("p", [1, 2, 3.5, float("inf")])
@pytest.mark.parametrize("rank", [1, 2, 3])
def test_lp_pool(rank, p):
    shape = {1: (2, 3, 9), 2: (2, 3, 6, 7), 3: (1, 2, 4, 5, 6)}[rank]
    x = torch.rand(*shape, dtype=torch.float64) + 0.1  # positive: the p-th root of a sum of powers
    ours, theirs = getattr(F, f"lp_pool{rank}d"), getattr(TF, f"lp_pool{rank}d")
    for kw in (dict(kernel_size=2), dict(kernel_size=3, stride=2, ceil_mode=True)):
        compare_forward_backward(
            lambda x, kw=kw: ours(x, p, **kw), lambda x, kw=kw: theirs(x, p, **kw), [x], rtol=1e-9, atol=1e-10
        )


def test_lp_pool_negative_average_is_zero_as_torch():
    x = torch.tensor([[[-1.0, -2.0, 3.0, 1.0]]])
    assert_close(F.lp_pool1d(from_torch(x), 3, 2), TF.lp_pool1d(x, 3, 2))


@pytest.mark.parametrize("rank", [1, 2, 3])
def test_max_unpool_inverts_max_pool(rank):
    shape = {1: (2, 3, 8), 2: (2, 3, 6, 8), 3: (1, 2, 4, 6, 4)}[rank]
    x = torch.randn(*shape)
    out, idx = getattr(TF, f"max_pool{rank}d")(x, 2, return_indices=True)
    unpool, their_unpool = getattr(F, f"max_unpool{rank}d"), getattr(TF, f"max_unpool{rank}d")
    compare_forward_backward(lambda o, i: unpool(o, i, 2), lambda o, i: their_unpool(o, i, 2), [out, idx])
    size = [s + 1 for s in shape[2:]]
    x2 = torch.randn(*shape[:2], *size)
    out, idx = getattr(TF, f"max_pool{rank}d")(x2, 2, return_indices=True)
    assert_close(
        unpool(from_torch(out), from_torch(idx), 2, output_size=size), their_unpool(out, idx, 2, output_size=size)
    )


def test_gradcheck_3d_pools():
    x = fc.randn(1, 2, 4, 5, 4, dtype=fc.float64, requires_grad=True)
    for fn in (
        lambda x: F.max_pool3d(x, 2, stride=1, padding=1),
        lambda x: F.avg_pool3d(x, 3, stride=2, padding=1, count_include_pad=False, ceil_mode=True),
        lambda x: F.adaptive_avg_pool3d(x, (3, 2, 3)),
        lambda x: F.adaptive_max_pool3d(x, (3, 2, 3)),
        lambda x: F.lp_pool3d(x * x + 0.5, 2, 2),
    ):
        assert fa.gradcheck(fn, (x,))


POOL_MODULES = [
    ("MaxPool3d", (3,), dict(stride=2, padding=1, ceil_mode=True), (2, 3, 6, 7, 5)),
    ("AvgPool3d", (2,), dict(stride=1, count_include_pad=False, padding=1), (2, 3, 4, 4, 4)),
    ("AdaptiveAvgPool3d", ((2, None, 3),), {}, (2, 3, 5, 6, 7)),
    ("AdaptiveMaxPool3d", (2,), {}, (3, 5, 6, 7)),
    ("LPPool1d", (2, 3), dict(stride=2), (2, 3, 9)),
    ("LPPool2d", (2, 2), {}, (2, 3, 6, 6)),
    ("LPPool3d", (1.5, 2), {}, (2, 3, 4, 4, 4)),
]


@pytest.mark.parametrize("name,args,kwargs,shape", POOL_MODULES)
def test_modules_match_torch(name, args, kwargs, shape):
    ours, theirs = getattr(nn, name)(*args, **kwargs), getattr(torch.nn, name)(*args, **kwargs)
    assert list(ours.state_dict()) == list(theirs.state_dict()) == []
    x = torch.rand(*shape) + 0.1
    compare_forward_backward(ours, theirs, [x], rtol=1e-5, atol=1e-6)


def test_max_pool3d_and_unpool_modules():
    x = torch.randn(1, 2, 4, 6, 4)
    out, idx = nn.MaxPool3d(2, return_indices=True)(from_torch(x))
    their_out, their_idx = torch.nn.MaxPool3d(2, return_indices=True)(x)
    assert_close(idx, their_idx)
    assert_close(nn.MaxUnpool3d(2)(out, idx), torch.nn.MaxUnpool3d(2)(their_out, their_idx))
    assert repr(nn.MaxUnpool2d(2)) == repr(torch.nn.MaxUnpool2d(2))


def test_errors():
    x = fc.randn(1, 2, 4, 4, 4)
    with pytest.raises(fc.FlambeauError, match=r"\[max_pool3d\] expected a 4-D \(C, D, H, W\) or 5-D"):
        F.max_pool3d(fc.randn(2, 4, 4), 2)
    with pytest.raises(fc.FlambeauError, match=r"\[max_pool3d\] pad should be at most half"):
        F.max_pool3d(x, 2, padding=2)
    with pytest.raises(fc.FlambeauError, match=r"\[avg_pool3d\] the output would be"):
        F.avg_pool3d(x, (5, 1, 1))
    with pytest.raises(fc.FlambeauError, match=r"\[avg_pool3d\] divisor must be a non-zero int"):
        F.avg_pool3d(x, 2, divisor_override=0)
    with pytest.raises(TypeError, match=r"\[adaptive_avg_pool3d\] output_size must be"):
        F.adaptive_avg_pool3d(x, (1, 2))
    with pytest.raises(IndexError, match=r"\[max_unpool3d\] an index is out of bounds"):
        F.max_unpool3d(fc.ones(1, 1, 1, 1, 1), fc.tensor([[[[[8]]]]]), 2)
    with pytest.raises(fc.FlambeauError, match=r"\[max_unpool1d\] invalid output_size"):
        F.max_unpool1d(fc.ones(1, 1, 2), fc.tensor([[[0, 2]]]), 2, output_size=[7])


@settings(max_examples=60, deadline=None)
@given(
    spatial=st.tuples(*[st.integers(1, 7)] * 3),
    k=st.tuples(*[st.integers(1, 3)] * 3),
    s=st.tuples(*[st.integers(1, 3)] * 3),
    p=st.tuples(*[st.integers(0, 1)] * 3),
    d=st.tuples(*[st.integers(1, 2)] * 3),
    ceil_mode=st.booleans(),
    count_include_pad=st.booleans(),
    divisor=st.sampled_from([None, 3]),
)
def test_pool3d_property(spatial, k, s, p, d, ceil_mode, count_include_pad, divisor):
    """Any max/avg 3-D pooling parameters: the same values and indices as torch, or both refuse."""
    x = torch.randn(1, 2, *spatial, dtype=torch.float64)
    cases = [
        (
            lambda t: TF.max_pool3d(t, k, s, p, d, ceil_mode, True),
            lambda t: F.max_pool3d(t, k, s, p, d, ceil_mode, True),
        ),
        (
            lambda t: TF.avg_pool3d(t, k, s, p, ceil_mode, count_include_pad, divisor),
            lambda t: F.avg_pool3d(t, k, s, p, ceil_mode, count_include_pad, divisor),
        ),
    ]
    for theirs, ours in cases:
        try:
            expected = theirs(x)
        except RuntimeError:
            with pytest.raises(fc.FlambeauError):
                ours(from_torch(x))
            continue
        got = ours(from_torch(x))
        if isinstance(expected, tuple):
            assert_close(got[0], expected[0], rtol=1e-12, atol=1e-12)
            assert_close(got[1], expected[1])
        else:
            assert_close(got, expected, rtol=1e-12, atol=1e-12)


@settings(max_examples=60, deadline=None)
@given(
    spatial=st.tuples(*[st.integers(1, 7)] * 3),
    out=st.tuples(*[st.one_of(st.none(), st.integers(0, 8))] * 3),
    seed=st.integers(0, 2**16),
)
def test_adaptive_pool3d_property(spatial, out, seed):
    """Any input and output sizes (None keeps a dim): adaptive max/avg values and indices equal torch's."""
    x = torch.randn(2, 3, *spatial, dtype=torch.float64, generator=torch.Generator().manual_seed(seed))
    assert_close(F.adaptive_avg_pool3d(from_torch(x), out), TF.adaptive_avg_pool3d(x, out), rtol=1e-12, atol=1e-12)
    values, idx = F.adaptive_max_pool3d(from_torch(x), out, return_indices=True)
    their_values, their_idx = TF.adaptive_max_pool3d(x, out, return_indices=True)
    assert_close(values, their_values, rtol=0, atol=0)
    assert_close(idx, their_idx)
