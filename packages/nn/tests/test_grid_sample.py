"""F.grid_sample (bilinear/nearest/bicubic, zeros/border/reflection padding, align_corners, 4-D and 5-D) and
F.affine_grid against PyTorch: values and gradients of input, grid and theta in float32 and float64,
gradcheck in float64, and errors."""

from __future__ import annotations

import flambeau_autograd as fa
import flambeau_core as fc
import flambeau_nn.functional as F
import pytest
import torch
import torch.nn.functional as TF
from hypothesis import given, settings
from hypothesis import strategies as st
from nn_testing import TOLERANCES, assert_close, compare_forward_backward, from_torch

DTYPES = [torch.float32, torch.float64]
# float32 grid gradients sum 16 bicubic taps of mixed sign: a looser absolute tolerance there.
GRID_TOL = {torch.float32: dict(rtol=1e-4, atol=1e-4), torch.float64: TOLERANCES[torch.float64]}


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("align_corners", [False, True])
@pytest.mark.parametrize("padding_mode", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("mode", ["bilinear", "nearest", "bicubic"])
def test_grid_sample_2d(mode, padding_mode, align_corners, dtype):
    g = torch.Generator().manual_seed(1)
    x = torch.randn(2, 3, 5, 7, dtype=dtype, generator=g)
    # Beyond [-1, 1] so every padding mode matters; nearest's grid kept off the rounding ties.
    grid = torch.rand(2, 4, 6, 2, dtype=dtype, generator=g) * 3.0 - 1.5
    f_ours = lambda x, grid: F.grid_sample(x, grid, mode, padding_mode, align_corners)  # noqa: E731
    f_theirs = lambda x, grid: TF.grid_sample(x, grid, mode, padding_mode, align_corners)  # noqa: E731
    compare_forward_backward(f_ours, f_theirs, [x, grid], **GRID_TOL[dtype])


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("align_corners", [False, True])
@pytest.mark.parametrize("padding_mode", ["zeros", "border", "reflection"])
@pytest.mark.parametrize("mode", ["bilinear", "nearest"])
def test_grid_sample_3d(mode, padding_mode, align_corners, dtype):
    g = torch.Generator().manual_seed(2)
    x = torch.randn(2, 2, 4, 5, 6, dtype=dtype, generator=g)
    grid = torch.rand(2, 3, 4, 2, 3, dtype=dtype, generator=g) * 3.0 - 1.5
    f_ours = lambda x, grid: F.grid_sample(x, grid, mode, padding_mode, align_corners)  # noqa: E731
    f_theirs = lambda x, grid: TF.grid_sample(x, grid, mode, padding_mode, align_corners)  # noqa: E731
    compare_forward_backward(f_ours, f_theirs, [x, grid], **GRID_TOL[dtype])


@pytest.mark.parametrize("mode", ["bilinear", "bicubic"])
@pytest.mark.parametrize("padding_mode", ["zeros", "border", "reflection"])
def test_gradcheck(mode, padding_mode):
    x = fc.randn(1, 2, 3, 4, dtype=fc.float64, requires_grad=True)
    grid = (fc.rand(1, 2, 3, 2, dtype=fc.float64) * 2.2 - 1.1).requires_grad_(True)
    assert fa.gradcheck(lambda x, g: F.grid_sample(x, g, mode, padding_mode, False), (x, grid))


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("align_corners", [False, True])
@pytest.mark.parametrize("size", [(2, 3, 4, 5), (2, 1, 3, 1), (2, 3, 4, 5, 2), (2, 1, 1, 3, 4)])
def test_affine_grid(size, align_corners, dtype):
    theta = torch.randn(2, 2, 3, dtype=dtype) if len(size) == 4 else torch.randn(2, 3, 4, dtype=dtype)
    compare_forward_backward(
        lambda t: F.affine_grid(t, size, align_corners),
        lambda t: TF.affine_grid(t, size, align_corners),
        [theta],
        **TOLERANCES[dtype],
    )


def test_affine_grid_then_grid_sample_identity():
    x = torch.randn(1, 2, 4, 5)
    theta = fc.tensor([[[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]])
    out = F.grid_sample(from_torch(x), F.affine_grid(theta, (1, 2, 4, 5), False), align_corners=False)
    assert_close(out, x, atol=1e-6)


def test_errors():
    x = fc.randn(1, 2, 3, 4)
    with pytest.raises(fc.FlambeauError, match=r"\[grid_sample\] a 4-D input of shape \(1, 2, 3, 4\) needs a grid"):
        F.grid_sample(x, fc.zeros(1, 2, 2, 3))
    with pytest.raises(fc.FlambeauError, match=r"\[grid_sample\] bicubic interpolation only supports 4-D"):
        F.grid_sample(fc.randn(1, 1, 2, 2, 2), fc.zeros(1, 1, 1, 1, 3), mode="bicubic")
    with pytest.raises(fc.FlambeauError, match=r"\[grid_sample\] padding_mode must be one of"):
        F.grid_sample(x, fc.zeros(1, 2, 2, 2), padding_mode="wrap")
    with pytest.raises(TypeError, match=r"\[grid_sample\] input and grid must have the same dtype"):
        F.grid_sample(x, fc.zeros(1, 2, 2, 2, dtype=fc.float64))
    with pytest.raises(fc.FlambeauError, match=r"\[affine_grid\] expected a batch of 2-D affine matrices"):
        F.affine_grid(fc.zeros(1, 3, 3), (1, 1, 2, 2))
    with pytest.raises(NotImplementedError, match=r"\[affine_grid\] only supports 4-D and 5-D sizes"):
        F.affine_grid(fc.zeros(1, 2, 3), (1, 1, 2))
    with pytest.raises(TypeError, match=r"\[affine_grid\] expected theta to be a floating point"):
        F.affine_grid(fc.zeros(1, 2, 3, dtype=fc.int64), (1, 1, 2, 2))


@settings(max_examples=60, deadline=None)
@given(
    rank=st.sampled_from([4, 5]),
    sizes=st.lists(st.integers(1, 5), min_size=6, max_size=6),
    mode=st.sampled_from(["bilinear", "nearest", "bicubic"]),
    padding_mode=st.sampled_from(["zeros", "border", "reflection"]),
    align_corners=st.booleans(),
    seed=st.integers(0, 2**16),
)
def test_grid_sample_property(rank, sizes, mode, padding_mode, align_corners, seed):
    """Any input and grid size, mode and padding: the same values as torch, or both refuse."""
    g = torch.Generator().manual_seed(seed)
    n_sp = rank - 2
    x = torch.randn(2, 2, *sizes[:n_sp], dtype=torch.float64, generator=g)
    grid = torch.rand(2, *sizes[3 : 3 + n_sp], n_sp, dtype=torch.float64, generator=g) * 3.0 - 1.5
    try:
        expected = TF.grid_sample(x, grid, mode, padding_mode, align_corners)
    except RuntimeError:
        with pytest.raises(fc.FlambeauError):
            F.grid_sample(from_torch(x), from_torch(grid), mode, padding_mode, align_corners)
        return
    got = F.grid_sample(from_torch(x), from_torch(grid), mode, padding_mode, align_corners)
    assert_close(got, expected, rtol=1e-9, atol=1e-9)
