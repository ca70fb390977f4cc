"""Group norm and dropout on float16 / bfloat16 (src/cpu/norm/norm_layer.cpp, norm_dropout.cpp) against
PyTorch 2.13. Group norm runs in float32 and rounds once (its backward from the saved 16-bit mean and
1/std), as PyTorch's CPU kernel: output, statistics and gradients within one unit of the last place.
Dropout (Note [16-bit dropout]) is x * noise with the scale 1 / (1 - p) rounded to the 16-bit dtype:
the kept values and the gradient bit for bit, the mask drawn as float32's (the same positions)."""

from __future__ import annotations

import flambeau_core as fc
import numpy as np
import pytest
import torch
import torch.nn.functional as F
from helpers import assert_same_as_torch, assert_within_ulps, from_torch, to_numpy, torch_values

DTYPES = ["float16", "bfloat16"]


def values(dtype: str, shape, seed: int, scale: float = 2.0, shift: float = 0.0) -> torch.Tensor:
    return torch_values(dtype, shape, seed, scale=scale, shift=shift)


def needs_autograd() -> None:
    pytest.importorskip("flambeau_autograd", reason="gradients need flambeau-autograd")


# ---- group norm ----


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("shape,group", [((2, 6, 5, 4), 3), ((3, 4, 7), 2), ((2, 8, 3, 3), 8), ((4, 6), 1)])
@pytest.mark.parametrize("affine", [False, True])
def test_group_norm(affine, shape, group, dtype):
    t = values(dtype, shape, 0, shift=1.0)
    c = shape[1]
    w, b = (values(dtype, (c,), 1), values(dtype, (c,), 2)) if affine else (None, None)
    n, hxw = shape[0], int(np.prod(shape[2:]))
    theirs = torch.native_group_norm(t, w, b, n, c, hxw, group, 1e-5)
    ours = fc.native_group_norm(
        from_torch(t), from_torch(w) if affine else None, from_torch(b) if affine else None, n, c, hxw, group, 1e-5
    )
    for o, r in zip(ours, theirs, strict=True):
        assert_within_ulps(o, r)


@pytest.mark.parametrize("dtype", DTYPES)
def test_group_norm_gradients(dtype):
    needs_autograd()
    t = values(dtype, (2, 6, 4, 3), 3, shift=1.0)
    w, b = values(dtype, (6,), 4), values(dtype, (6,), 5)
    g = values(dtype, (2, 6, 4, 3), 6, scale=1.0)
    leaves = [x.clone().requires_grad_(True) for x in (t, w, b)]
    F.group_norm(leaves[0], 3, leaves[1], leaves[2]).backward(g)
    ours = [from_torch(x).requires_grad_(True) for x in (t, w, b)]
    fc.native_group_norm(ours[0], ours[1], ours[2], 2, 6, 12, 3, 1e-5)[0].backward(from_torch(g))
    for o, r in zip(ours, leaves, strict=True):
        # PyTorch adds the weight and bias gradients in the 16-bit dtype's float32 accumulation order.
        assert_within_ulps(o.grad, r.grad, 1 if o is ours[0] else 2)


# ---- dropout ----


def noise(mask: fc.Tensor, p: float, dtype: str) -> torch.Tensor:
    """PyTorch's CPU dropout noise: the mask in the 16-bit dtype divided by 1 - p (a 16-bit division)."""
    keep = torch.from_numpy(to_numpy(mask)).to(getattr(torch, dtype))
    return keep.div_(1 - p)


@pytest.mark.parametrize("dtype", DTYPES)
@pytest.mark.parametrize("p", [0.1, 0.3, 0.5])
def test_dropout(p, dtype):
    t = values(dtype, (64, 50), 7)
    fc.manual_seed(0)
    out, mask = fc.native_dropout(from_torch(t), p, True)
    assert out.dtype == getattr(fc, dtype) and mask.dtype == fc.bool
    assert_same_as_torch(out, t * noise(mask, p, dtype))
    assert abs(to_numpy(mask).mean() - (1 - p)) < 0.03
    # The same positions as float32's dropout from the same seed.
    fc.manual_seed(0)
    _, mask32 = fc.native_dropout(from_torch(t.float()), p, True)
    np.testing.assert_array_equal(to_numpy(mask), to_numpy(mask32))


@pytest.mark.parametrize("dtype", DTYPES)
def test_dropout_edges(dtype):
    t = values(dtype, (4, 5), 8)
    x = from_torch(t)
    for p, train in [(0.0, True), (0.5, False)]:
        out, mask = fc.native_dropout(x, p, train)
        assert_same_as_torch(out, t)
        assert to_numpy(mask).all()
    out, mask = fc.native_dropout(x, 1.0, True)
    assert_same_as_torch(out, t * 0)
    assert not to_numpy(mask).any()
    empty = fc.native_dropout(from_torch(t[:0]), 0.5, True)[0]
    assert tuple(empty.shape) == (0, 5) and empty.dtype == getattr(fc, dtype)


@pytest.mark.parametrize("dtype", DTYPES)
def test_dropout_gradient(dtype):
    needs_autograd()
    t, g = values(dtype, (32, 40), 9), values(dtype, (32, 40), 10)
    x = from_torch(t).requires_grad_(True)
    out, mask = fc.native_dropout(x, 0.1, True)
    out.backward(from_torch(g))
    assert_same_as_torch(x.grad, g * noise(mask, 0.1, dtype))


@pytest.mark.parametrize("dtype", DTYPES)
def test_feature_dropout(dtype):
    needs_autograd()
    t, g = values(dtype, (8, 16, 3, 3), 11), values(dtype, (8, 16, 3, 3), 12)
    x = from_torch(t).requires_grad_(True)
    out, mask = fc._feature_dropout(x, 0.3)
    assert tuple(mask.shape) == (8, 16, 1, 1)
    assert_same_as_torch(out.detach(), t * noise(mask, 0.3, dtype))
    out.backward(from_torch(g))
    assert_same_as_torch(x.grad, g * noise(mask, 0.3, dtype))
