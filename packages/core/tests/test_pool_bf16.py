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


# Note [2x2 max pooling]: the AVX-512 kernels take a row's outputs 16 at a time under a mask; widths
# around the mask's edges (1..17 outputs, 31, 33), odd sizes with ceil_mode (the edges' partial
# windows run the portable loop) and LeNet-5's planes, on every capability, float32 and bfloat16.
WIDTHS_2X2 = [
    ((2, 3, 2, 2), False),
    ((1, 2, 6, 10), False),
    ((2, 3, 28, 28), False),  # LeNet-5's first pooling: 14 outputs a row
    ((2, 2, 10, 10), False),  # its second: 5
    ((1, 2, 4, 32), False),  # 16: one full vector
    ((1, 2, 4, 34), False),  # 17: a vector and one more
    ((1, 1, 6, 62), True),  # 31
    ((1, 1, 5, 67), True),  # 33 full windows and a partial column, a partial last row
    ((1, 3, 7, 9), True),
    ((1, 3, 7, 9), False),  # the last row and column dropped
    ((1, 1, 1, 9), True),  # only partial windows
]


def _special_values(tx: torch.Tensor) -> torch.Tensor:
    """Ties (the first in scan order wins), signed zeros, infinities and NaN at every window position."""
    flat = tx.view(-1)
    n = flat.numel()
    flat[0:n:7] = 0.0
    flat[1:n:11] = -0.0
    flat[2:n:13] = float("inf")
    flat[3:n:17] = float("-inf")
    flat[4:n:19] = float("nan")
    flat[5:n:23] = 1.0
    flat[6:n:23] = 1.0
    return tx


@pytest.mark.parametrize("cap", ["base", "avx2", "avx512"])
@pytest.mark.parametrize("dtype", ["float32", "bfloat16"])
@pytest.mark.parametrize("case", WIDTHS_2X2, ids=lambda c: f"{c[0]}-ceil{c[1]}" if isinstance(c, tuple) else str(c))
def test_max_pool_2x2_every_capability_matches_torch(case, dtype, cap):
    shape, ceil = case
    tx = _special_values(bf16_values(shape, 5)).to(getattr(torch, dtype))
    t_out, t_idx = TF.max_pool2d(tx, 2, 2, 0, 1, ceil, return_indices=True)
    with fc.backends.cpu.flags(max_cpu_capability=cap):
        out, idx = fc.max_pool2d_with_indices(from_torch(tx), [2], [2], [0], [1], ceil)
    assert out.dtype == getattr(fc, dtype) and tuple(out.shape) == tuple(t_out.shape)
    # Bit for bit (NaN payloads and signed zeros included), and the same indices.
    view = torch.int16 if dtype == "bfloat16" else torch.int32
    got = to_numpy(out.float()) if dtype == "bfloat16" else to_numpy(out)
    got_bits = got.view(np.uint32) >> 16 if dtype == "bfloat16" else got.view(np.uint32)
    want_bits = t_out.view(view).numpy().astype(np.uint16 if dtype == "bfloat16" else np.uint32)
    np.testing.assert_array_equal(got_bits, want_bits)
    np.testing.assert_array_equal(to_numpy(idx), t_idx.numpy())


@pytest.mark.parametrize("cap", ["avx2", "avx512"])
def test_max_pool_2x2_strided_and_channels_last_inputs(cap):
    """Non-contiguous and channels-last inputs give the contiguous input's values and indices."""
    tx = bf16_values((2, 4, 12, 14), 6)
    x = from_torch(tx)
    with fc.backends.cpu.flags(max_cpu_capability=cap):
        want, want_idx = fc.max_pool2d_with_indices(x, [2], [2], [0], [1])
        for other in (x.transpose(2, 3).contiguous().transpose(2, 3), x.contiguous(memory_format=fc.channels_last)):
            got, got_idx = fc.max_pool2d_with_indices(other, [2], [2], [0], [1])
            np.testing.assert_array_equal(to_numpy(got.float()), to_numpy(want.float()))
            np.testing.assert_array_equal(to_numpy(got_idx), to_numpy(want_idx))
    t_out, t_idx = TF.max_pool2d(tx, 2, 2, return_indices=True)
    np.testing.assert_array_equal(to_numpy(want.float()), t_out.float().numpy())
    np.testing.assert_array_equal(to_numpy(want_idx), t_idx.numpy())
