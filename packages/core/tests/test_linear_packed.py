"""linear on a packed weight (Note [Packed linear weight], src/cpu/linalg/linear_packed.cpp): _pack_linear_weight and
_linear_packed give linear's bits, against PyTorch 2.13's F.linear for the values, run linear itself where the
packed copy does not fit, and _linear_packed's meta step is linear's (shapes on the meta device, linear's errors)."""

from __future__ import annotations

import flambeau_core as fc
import numpy as np
import pytest
import torch
import torch.nn.functional as F
from flambeau_core import _C

RNG = np.random.default_rng(11)
OWN_GEMM = _C._pack_linear_weight(fc.ones(32, 32)).numel() > 0


def bits(t) -> np.ndarray:
    return np.array(memoryview(t.contiguous())).view(np.int32)


@pytest.mark.parametrize("threads", [1, 2])
@pytest.mark.parametrize(
    ("n", "in_f", "out_f"), [(128, 784, 512), (128, 512, 512), (96, 200, 160), (64, 256, 128), (7, 300, 1100)]
)
def test_packed_linear_is_linear_bitwise_and_matches_torch(n, in_f, out_f, threads):
    x = RNG.standard_normal((n, in_f)).astype(np.float32)
    w = RNG.standard_normal((out_f, in_f)).astype(np.float32)
    b = RNG.standard_normal(out_f).astype(np.float32)
    fx, fw, fbias = fc.tensor(x), fc.tensor(w), fc.tensor(b)
    packed = _C._pack_linear_weight(fw)
    assert packed.numel() == (((out_f + 63) // 64 * 64 * in_f) if OWN_GEMM else 0)
    before = fc.get_num_threads()
    fc.set_num_threads(threads)
    try:
        for bias, tbias in ((fbias, torch.from_numpy(b)), (None, None)):
            got = _C._linear_packed(fx, fw, packed, bias)
            np.testing.assert_array_equal(bits(got), bits(fc.linear(fx, fw, bias)))
            expected = F.linear(torch.from_numpy(x), torch.from_numpy(w), tbias).numpy()
            np.testing.assert_allclose(np.array(memoryview(got)), expected, rtol=1e-4, atol=1e-4)
    finally:
        fc.set_num_threads(before)


def test_a_packed_copy_that_does_not_fit_is_not_read():
    x, w, b = fc.randn(64, 40), fc.randn(48, 40), fc.randn(48)
    other = _C._pack_linear_weight(fc.randn(64, 40))  # another weight's size
    for packed in (fc.empty(0), other, fc.zeros(_C._pack_linear_weight(w).numel(), dtype=fc.float64)):
        np.testing.assert_array_equal(bits(_C._linear_packed(x, w, packed, b)), bits(fc.linear(x, w, b)))
    xd, wd = fc.randn(5, 40, dtype=fc.float64), fc.randn(48, 40, dtype=fc.float64)  # float64: linear
    np.testing.assert_array_equal(np.array(memoryview(_C._linear_packed(xd, wd, fc.empty(0), None))),
                                  np.array(memoryview(fc.linear(xd, wd))))  # fmt: skip
    x3 = fc.randn(2, 3, 40)  # leading dims are rows, as in linear
    assert _C._linear_packed(x3, w, _C._pack_linear_weight(w), b).shape == (2, 3, 48)


def test_weights_the_own_gemm_cannot_take_are_not_packed():
    assert _C._pack_linear_weight(fc.ones(8, 32)).numel() == 0
    assert _C._pack_linear_weight(fc.ones(32, 8)).numel() == 0
    assert _C._pack_linear_weight(fc.ones(32, 32, dtype=fc.float64)).numel() == 0
    assert _C._pack_linear_weight(fc.ones(32, 32).t()).numel() == (64 * 32 if OWN_GEMM else 0)  # strided: copied


def test_meta_step_is_linears():
    x, w = fc.empty(6, 5, 40, device="meta"), fc.empty(48, 40, device="meta")
    out = _C._linear_packed(x, w, fc.empty(0, device="meta"), fc.empty(48, device="meta"))
    assert out.is_meta and out.shape == (6, 5, 48) and out.dtype == fc.float32
    with pytest.raises(ValueError, match=r"^\[_linear_packed\] input shape \(6, 5, 41\) does not match weight"):
        _C._linear_packed(fc.empty(6, 5, 41), fc.empty(48, 40), fc.empty(0), None)
    with pytest.raises(TypeError, match=r"^\[_linear_packed\] input and weight must have the same dtype"):
        _C._linear_packed(fc.empty(6, 40, dtype=fc.float64), fc.empty(48, 40), fc.empty(0), None)
