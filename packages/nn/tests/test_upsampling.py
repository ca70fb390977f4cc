"""F.interpolate in every mode and rank, and nn.Upsample/UpsamplingNearest2d/UpsamplingBilinear2d, against
PyTorch: values and gradients in float32 and float64, size and scale_factor (with and without
recompute_scale_factor), align_corners, gradcheck in float64, and errors."""

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
SHAPES = {1: (2, 3, 7), 2: (2, 3, 5, 7), 3: (1, 2, 4, 5, 6)}
MODES = {
    "nearest": (1, 2, 3),
    "nearest-exact": (1, 2, 3),
    "linear": (1,),
    "bilinear": (2,),
    "bicubic": (2,),
    "trilinear": (3,),
    "area": (1, 2, 3),
}
CASES = [(mode, rank) for mode, ranks in MODES.items() for rank in ranks]
SIZES = {1: [11, 4], 2: [(9, 4), (3, 3)], 3: [(7, 3, 9)]}
SCALES = {1: [1.7, 0.5], 2: [(0.6, 2.3), 3], 3: [(1.5, 0.7, 2.0)]}


def _align_options(mode):
    return [None] if mode in ("nearest", "nearest-exact", "area") else [False, True]


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("mode,rank", CASES)
def test_interpolate_size(mode, rank, dtype):
    x = torch.randn(*SHAPES[rank], dtype=dtype)
    for size in SIZES[rank]:
        for ac in _align_options(mode):
            kw = dict(size=size, mode=mode, align_corners=ac)
            compare_forward_backward(
                lambda x, kw=kw: F.interpolate(x, **kw),
                lambda x, kw=kw: TF.interpolate(x, **kw),
                [x],
                **TOLERANCES[dtype],
            )


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("recompute", [None, True])
@pytest.mark.parametrize("mode,rank", CASES)
def test_interpolate_scale_factor(mode, rank, recompute, dtype):
    x = torch.randn(*SHAPES[rank], dtype=dtype)
    for scale in SCALES[rank]:
        for ac in _align_options(mode):
            kw = dict(scale_factor=scale, mode=mode, align_corners=ac, recompute_scale_factor=recompute)
            compare_forward_backward(
                lambda x, kw=kw: F.interpolate(x, **kw),
                lambda x, kw=kw: TF.interpolate(x, **kw),
                [x],
                **TOLERANCES[dtype],
            )


@pytest.mark.parametrize(
    "kw",
    [
        dict(size=(4, 5), mode="bicubic", align_corners=False),
        dict(scale_factor=1.5, mode="nearest-exact"),
        dict(size=(3, 4, 5), mode="trilinear", align_corners=True),
        dict(size=(2, 3, 4), mode="area"),
    ],
)
def test_gradcheck(kw):
    rank = 3 if isinstance(kw.get("size"), tuple) and len(kw["size"]) == 3 else 2
    x = fc.randn(*((1, 2, 3, 4, 3) if rank == 3 else (1, 2, 3, 4)), dtype=fc.float64, requires_grad=True)
    assert fa.gradcheck(lambda x: F.interpolate(x, **kw), (x,))


@pytest.mark.parametrize(
    "ours,theirs",
    [
        (nn.Upsample(scale_factor=2, mode="trilinear"), torch.nn.Upsample(scale_factor=2, mode="trilinear")),
        (nn.Upsample(size=(4, 9), mode="bicubic"), torch.nn.Upsample(size=(4, 9), mode="bicubic")),
        (nn.UpsamplingNearest2d(scale_factor=3), torch.nn.UpsamplingNearest2d(scale_factor=3)),
        (nn.UpsamplingBilinear2d(size=(6, 5)), torch.nn.UpsamplingBilinear2d(size=(6, 5))),
    ],
)
def test_modules(ours, theirs):
    x = torch.randn(1, 2, 3, 4, 3) if "trilinear" in repr(theirs) else torch.randn(2, 3, 4, 3)
    assert repr(ours) == repr(theirs)
    compare_forward_backward(ours, theirs, [x], rtol=1e-5, atol=1e-6)


@pytest.mark.filterwarnings("ignore:`nn.functional.upsample")
def test_deprecated_functions_match_torch():
    x = torch.randn(1, 2, 3, 4)
    for name in ("upsample", "upsample_nearest", "upsample_bilinear"):
        with pytest.warns(UserWarning, match=f"`nn.functional.{name}` is deprecated"):
            getattr(F, name)(fc.ones(1, 1, 2, 2), scale_factor=2)
    compare_forward_backward(
        lambda x: F.upsample_bilinear(x, scale_factor=2), lambda x: TF.upsample_bilinear(x, scale_factor=2), [x]
    )
    compare_forward_backward(lambda x: F.upsample_nearest(x, (5, 6)), lambda x: TF.upsample_nearest(x, (5, 6)), [x])


def test_errors():
    x = fc.randn(1, 2, 3, 4)
    with pytest.raises(NotImplementedError, match=r"\[interpolate\] got 4-D input, but trilinear mode needs 5-D"):
        F.interpolate(x, size=(2, 2, 2), mode="trilinear")
    with pytest.raises(NotImplementedError, match=r"\[interpolate\] got 5-D input, but bicubic mode needs 4-D"):
        F.interpolate(fc.randn(1, 1, 2, 2, 2), scale_factor=2, mode="bicubic")
    with pytest.raises(fc.FlambeauError, match=r"\[interpolate\] align_corners option can only be set"):
        F.interpolate(x, scale_factor=2, mode="nearest-exact", align_corners=True)
    with pytest.raises(fc.FlambeauError, match=r"only one of size or scale_factor"):
        F.interpolate(x, size=3, scale_factor=2)
    with pytest.raises(fc.FlambeauError, match=r"recompute_scale_factor is not meaningful"):
        F.interpolate(x, size=3, recompute_scale_factor=True)
    with pytest.raises(fc.FlambeauError, match=r"same number of spatial dims"):
        F.interpolate(x, size=(2, 3, 4))
    with pytest.raises(NotImplementedError, match=r"antialias=True is not supported"):
        F.interpolate(x, size=(2, 3), mode="bilinear", antialias=True)
    with pytest.raises(NotImplementedError, match=r"mode 'cubic' is not supported"):
        F.interpolate(x, size=(2, 3), mode="cubic")


@settings(max_examples=60, deadline=None)
@given(
    case=st.sampled_from(CASES),
    sizes=st.lists(st.integers(1, 7), min_size=3, max_size=3),
    out=st.lists(st.integers(1, 9), min_size=3, max_size=3),
    scales=st.lists(st.floats(0.3, 3.0), min_size=3, max_size=3),
    use_scale=st.booleans(),
    align=st.booleans(),
)
def test_interpolate_property(case, sizes, out, scales, use_scale, align):
    """Any input size, output size or scale factor: the same values as torch, or both refuse."""
    mode, rank = case
    x = torch.randn(1, 2, *sizes[:rank], dtype=torch.float64)
    kw = dict(mode=mode, align_corners=align if mode not in ("nearest", "nearest-exact", "area") else None)
    kw.update(scale_factor=tuple(scales[:rank])) if use_scale else kw.update(size=tuple(out[:rank]))
    try:
        expected = TF.interpolate(x, **kw)
    except (RuntimeError, ValueError):
        with pytest.raises((fc.FlambeauError, NotImplementedError)):
            F.interpolate(from_torch(x), **kw)
        return
    assert_close(F.interpolate(from_torch(x), **kw), expected, rtol=1e-9, atol=1e-9)
