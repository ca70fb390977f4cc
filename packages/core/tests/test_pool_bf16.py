"""bfloat16 max pooling (pool.cpp): values compared as float32 in registers and passed through, so the
output is exactly PyTorch's and the float32 kernel's on the same values (indices too); the backward sums
each plane's gradient in float32 and rounds once (overlapping windows), against float64 sums of the same
bfloat16 values and PyTorch's bfloat16 backward. The 2x2 fast path and the general one (padding,
dilation, ceil mode, overlapping windows), NaN and infinities, non-contiguous and empty inputs, errors."""

from __future__ import annotations

import flambeau_core as fc
import numpy as np
import pytest
import torch
import torch.nn.functional as TF
from helpers import from_torch, to_numpy

pytestmark = pytest.mark.on_devices(types=("cpu",))

CASES = [
    # shape, kernel, stride, padding, dilation, ceil_mode
    ((4, 6, 28, 28), [2], [2], [0], [1], False),  # LeNet-5's first pooling (the 2x2 path)
    ((2, 3, 9, 7), [2], [2], [0], [1], True),  # 2x2 with partial windows
    ((1, 2, 10, 11), [3, 2], [2, 1], [1, 1], [1, 1], False),  # overlapping windows
    ((1, 2, 10, 11), [3, 3], [2, 2], [1, 1], [2, 1], True),  # dilation
    ((3, 5, 6), [3], [1], [1], [1], False),  # (C, H, W), stride 1
]


def bf16_values(shape, seed) -> torch.Tensor:
    rng = np.random.default_rng(seed)
    return torch.from_numpy(rng.standard_normal(shape).astype(np.float32)).bfloat16()


def bits(t: fc.Tensor) -> np.ndarray:
    return to_numpy(t).view(np.uint32) >> 16


@pytest.mark.parametrize("layout", ["contiguous", "transposed"])
@pytest.mark.parametrize("case", CASES)
def test_max_pool2d_forward_is_exact(case, layout):
    shape, k, s, p, d, ceil = case
    tx = bf16_values(shape, 0)
    tx[..., 0, 0] = float("nan")  # a NaN wins its windows, as in PyTorch
    tx.view(-1)[5] = float("inf")
    tx.view(-1)[7] = float("-inf")
    x = from_torch(tx)
    if layout == "transposed":
        tx, x = tx.transpose(-1, -2), x.transpose(-1, -2)
        assert not x.is_contiguous()
    out, idx = fc.max_pool2d_with_indices(x, k, s, p, d, ceil)
    t_out, t_idx = TF.max_pool2d(tx, k, s, p, d, ceil, return_indices=True)
    assert out.dtype == fc.bfloat16
    np.testing.assert_array_equal(bits(out), t_out.view(torch.int16).numpy().astype(np.uint16))
    np.testing.assert_array_equal(to_numpy(idx), t_idx.numpy())
    # The float32 kernel on the same values: the same maxima and indices.
    ref, ref_idx = fc.max_pool2d_with_indices(x.to(fc.float32), k, s, p, d, ceil)
    np.testing.assert_array_equal(to_numpy(out), to_numpy(ref))
    np.testing.assert_array_equal(to_numpy(idx), to_numpy(ref_idx))


@pytest.mark.parametrize("case", CASES)
def test_max_pool_backward_sums_in_float32(case):
    shape, k, s, p, d, ceil = case
    tx = bf16_values(shape, 1)
    x = from_torch(tx)
    _, idx = fc.max_pool2d_with_indices(x, k, s, p, d, ceil)
    tg = bf16_values(tuple(idx.shape), 2)
    gi = fc.max_pool_backward(from_torch(tg), idx, list(shape))
    assert gi.dtype == fc.bfloat16 and tuple(gi.shape) == shape
    # float64 sums of the same bfloat16 values, rounded once: exactly the float32 kernel's result rounded.
    ref = fc.max_pool_backward(from_torch(tg.float()), idx, list(shape))
    np.testing.assert_array_equal(to_numpy(gi), to_numpy(ref.to(fc.bfloat16)))
    exact = np.zeros(int(np.prod(shape)), np.float64)
    planes = int(np.prod(shape[:-2]))
    plane = shape[-1] * shape[-2]
    ix = to_numpy(idx).reshape(planes, -1)
    gv = tg.double().numpy().reshape(planes, -1)
    for c in range(planes):
        np.add.at(exact, c * plane + ix[c], gv[c])
    np.testing.assert_allclose(to_numpy(gi).ravel(), exact, rtol=2**-8, atol=1e-30)
    want = torch.ops.aten.max_pool2d_with_indices_backward(
        tg, tx, k, s, p, d * 2 if len(d) == 1 else d, ceil, torch.from_numpy(to_numpy(idx))
    )
    np.testing.assert_allclose(to_numpy(gi), want.float().numpy(), rtol=2**-7, atol=2**-7)


def test_max_pool_backward_non_contiguous_gradient():
    tx = bf16_values((2, 3, 8, 8), 3)
    _, idx = fc.max_pool2d_with_indices(from_torch(tx), [2], [2], [0], [1])
    g = from_torch(bf16_values((2, 3, 4, 4), 4).transpose(2, 3).contiguous()).transpose(2, 3)
    assert not g.is_contiguous()
    got = fc.max_pool_backward(g, idx, [2, 3, 8, 8])
    want = fc.max_pool_backward(g.contiguous(), idx, [2, 3, 8, 8])
    np.testing.assert_array_equal(to_numpy(got), to_numpy(want))


def test_empty_inputs():
    out, idx = fc.max_pool2d_with_indices(fc.empty(0, 3, 8, 8, dtype=fc.bfloat16), [2], [2], [0], [1])
    assert tuple(out.shape) == (0, 3, 4, 4) and out.dtype == fc.bfloat16 and idx.dtype == fc.int64
    gi = fc.max_pool_backward(fc.empty(0, 3, 4, 4, dtype=fc.bfloat16), idx, [0, 3, 8, 8])
    assert tuple(gi.shape) == (0, 3, 8, 8) and gi.dtype == fc.bfloat16


def test_errors():
    x = fc.ones(1, 1, 4, 4, dtype=fc.bfloat16)
    with pytest.raises(ValueError, match=r"^\[max_pool2d\]"):
        fc.max_pool2d_with_indices(x, [5], [1], [0], [1])
    out, idx = fc.max_pool2d_with_indices(x, [2], [2], [0], [1])
    with pytest.raises(IndexError, match=r"^\[max_pool_backward\] index -1 is out of bounds"):
        fc.max_pool_backward(out, fc.full_like(idx, -1), [1, 1, 4, 4])
    with pytest.raises(TypeError, match=r"^\[max_pool_backward\]"):
        fc.max_pool_backward(out.to(fc.int64), idx, [1, 1, 4, 4])
