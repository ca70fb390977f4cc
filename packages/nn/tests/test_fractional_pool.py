"""F.fractional_max_pool2d/3d and nn.FractionalMaxPool2d/3d against PyTorch with the same random samples:
values, indices and gradients, output_size and output_ratio, unbatched inputs, and errors."""

from __future__ import annotations

import flambeau_core as fc
import flambeau_nn as nn
import flambeau_nn.functional as F
import pytest
import torch
import torch.nn.functional as TF
from hypothesis import given, settings
from hypothesis import strategies as st
from nn_testing import TOLERANCES, assert_close, compare_forward_backward, from_torch


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize(
    "shape,k,size,ratio",
    [
        ((2, 3, 10, 9), 2, (5, 4), None),
        ((2, 3, 10, 9), (3, 2), None, (0.5, 0.7)),
        ((3, 7, 8), 3, (5, 6), None),
        ((2, 2, 5, 5), 2, (1, 4), None),
    ],
)
def test_fractional_max_pool2d(shape, k, size, ratio, dtype):
    x = torch.randn(*shape, dtype=dtype)
    n = 1 if len(shape) == 3 else shape[0]
    u = torch.rand(n, shape[-3], 2, dtype=dtype)
    kw = dict(output_size=size, output_ratio=ratio, _random_samples=u)
    ours = dict(kw, _random_samples=from_torch(u))
    compare_forward_backward(
        lambda x: F.fractional_max_pool2d(x, k, **ours),
        lambda x: TF.fractional_max_pool2d(x, k, **kw),
        [x],
        **TOLERANCES[dtype],
    )
    _, idx = F.fractional_max_pool2d(from_torch(x), k, return_indices=True, **ours)
    assert_close(idx, TF.fractional_max_pool2d(x, k, return_indices=True, **kw)[1])


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_fractional_max_pool3d(dtype):
    x = torch.randn(2, 3, 7, 8, 9, dtype=dtype)
    u = torch.rand(2, 3, 3, dtype=dtype)
    for k, sizes in ((2, dict(output_size=(3, 5, 4))), ((2, 3, 2), dict(output_ratio=(0.5, 0.6, 0.7)))):
        kw = dict(sizes, _random_samples=u)
        ours = dict(sizes, _random_samples=from_torch(u))
        compare_forward_backward(
            lambda x, k=k, ours=ours: F.fractional_max_pool3d(x, k, **ours),
            lambda x, k=k, kw=kw: TF.fractional_max_pool3d(x, k, **kw),
            [x],
            **TOLERANCES[dtype],
        )
        _, idx = F.fractional_max_pool3d(
            from_torch(x), k, return_indices=True, **{**kw, "_random_samples": from_torch(u)}
        )
        assert_close(idx, TF.fractional_max_pool3d(x, k, return_indices=True, **kw)[1])


def test_modules_and_random_windows():
    x = torch.randn(1, 2, 9, 9)
    u = torch.rand(1, 2, 2)
    ours = nn.FractionalMaxPool2d(3, output_size=4, _random_samples=from_torch(u))
    theirs = torch.nn.FractionalMaxPool2d(3, output_size=4, _random_samples=u)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    compare_forward_backward(ours, theirs, [x])
    # Without samples the windows are drawn: the output is some window's max, and differs between draws.
    m = nn.FractionalMaxPool3d(2, output_ratio=0.5)
    y = m(fc.randn(2, 3, 8, 8, 8))
    assert tuple(y.shape) == (2, 3, 4, 4, 4)


def test_errors():
    with pytest.raises(fc.FlambeauError, match=r"\[fractional_max_pool2d\] kernel_size \(3, 3\) and output_size"):
        F.fractional_max_pool2d(fc.randn(1, 1, 5, 5), 3, output_size=4)
    with pytest.raises(fc.FlambeauError, match=r"\[fractional_max_pool2d\] requires specifying either"):
        F.fractional_max_pool2d(fc.randn(1, 1, 5, 5), 2)
    with pytest.raises(fc.FlambeauError, match=r"_random_samples must have shape \(1, 1, 3\)"):
        F.fractional_max_pool3d(fc.randn(1, 1, 5, 5, 5), 2, 2, _random_samples=fc.rand(1, 1, 2))
    with pytest.raises(fc.FlambeauError, match=r"\[FractionalMaxPool2d\] output_ratio must be between 0 and 1"):
        nn.FractionalMaxPool2d(2, output_ratio=1.5)


@settings(max_examples=60, deadline=None)
@given(
    rank=st.sampled_from([2, 3]),
    sizes=st.lists(st.integers(1, 9), min_size=3, max_size=3),
    k=st.lists(st.integers(1, 3), min_size=3, max_size=3),
    out=st.lists(st.integers(1, 6), min_size=3, max_size=3),
    dtype=st.sampled_from([torch.float32, torch.float64]),
    seed=st.integers(0, 2**16),
)
def test_fractional_max_pool_property(rank, sizes, k, out, dtype, seed):
    """Any sizes and samples: the same windows (values and indices) as torch, or both refuse."""
    g = torch.Generator().manual_seed(seed)
    n = rank
    x = torch.randn(2, 3, *sizes[:n], dtype=dtype, generator=g)
    u = torch.rand(2, 3, n, dtype=dtype, generator=g)
    theirs, ours = getattr(TF, f"fractional_max_pool{n}d"), getattr(F, f"fractional_max_pool{n}d")
    kw = dict(output_size=tuple(out[:n]), return_indices=True)
    try:
        expected = theirs(x, tuple(k[:n]), _random_samples=u, **kw)
    except RuntimeError:
        with pytest.raises(fc.FlambeauError):
            ours(from_torch(x), tuple(k[:n]), _random_samples=from_torch(u), **kw)
        return
    got = ours(from_torch(x), tuple(k[:n]), _random_samples=from_torch(u), **kw)
    assert_close(got[0], expected[0], rtol=0, atol=0)
    assert_close(got[1], expected[1])
