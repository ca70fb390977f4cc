"""_linear_backward on bfloat16 (Note [bfloat16 linear backward]): grad_input = g @ W and grad_weight = g^T @ x
with float32 sums rounded once, grad_bias = g's column sums rounded once; against the float64 oracle of the
same (already rounded) values, on the AMX tiles, on vdpbf16ps and on the float32 fallback (capability capped
below AVX-512), at one and two threads. (Autocast's training step against PyTorch's: flambeau's test_amp_linear.py.)"""

from __future__ import annotations

import flambeau_core as fc
import numpy as np
import pytest
from flambeau_core import _C
from helpers import to_numpy

RNG = np.random.default_rng(7)

PATHS = {"amx": {"bf16_amx": True}, "vdpbf16ps": {"bf16_amx": False}, "float32": {"max_cpu_capability": "avx2"}}


@pytest.fixture(params=list(PATHS))
def path(request):
    with fc.backends.cpu.flags(**PATHS[request.param]):
        yield request.param


@pytest.fixture(params=[1, 2], ids=["1thread", "2threads"])
def threads(request):
    old = fc.get_num_threads()
    fc.set_num_threads(request.param)
    yield request.param
    fc.set_num_threads(old)


def _rounded(shape):
    """A random bfloat16 tensor and its exact values in float64."""
    t = fc.tensor(RNG.standard_normal(shape).astype(np.float32)).to(fc.bfloat16)
    return t, to_numpy(t.float()).astype(np.float64)


def _once(exact: np.ndarray) -> np.ndarray:
    """The float64 values rounded to bfloat16 (through float32, as the kernel's float32 sums are)."""
    return to_numpy(fc.tensor(exact.astype(np.float32)).to(fc.bfloat16).float())


def _check(got, exact: np.ndarray) -> None:
    assert got.dtype == fc.bfloat16
    # float32 sums in another order than the oracle's: one unit in the last place (2**-8 relative), plus the
    # cancellation of a float32 sum.
    np.testing.assert_allclose(to_numpy(got.float()), _once(exact), rtol=2.0**-7, atol=1e-4)


SHAPES = [(128, 784, 512), (128, 512, 10), (1, 3, 2), (17, 33, 40), (64, 96, 130), (0, 5, 3)]


@pytest.mark.parametrize("n,in_f,out_f", SHAPES)
def test_matches_float64_oracle(n, in_f, out_f, path, threads):
    g, g64 = _rounded((n, out_f))
    x, x64 = _rounded((n, in_f))
    w, w64 = _rounded((out_f, in_f))
    gi, gw, gb = _C._linear_backward(g, x, w, True, True, True)
    _check(gi, g64 @ w64)
    _check(gw, g64.T @ x64)
    _check(gb, g64.sum(0))
    assert tuple(gi.shape) == (n, in_f) and tuple(gw.shape) == (out_f, in_f) and tuple(gb.shape) == (out_f,)


@pytest.mark.parametrize("mask", [(True, False, False), (False, True, True), (False, True, False), (True, True, False)])
def test_masks(mask, threads):
    g, g64 = _rounded((48, 32))
    x, x64 = _rounded((48, 40))
    w, w64 = _rounded((32, 40))
    got = _C._linear_backward(g, x, w, *mask)
    for want, t, exact in zip(mask, got, (g64 @ w64, g64.T @ x64, g64.sum(0)), strict=True):
        if want:
            _check(t, exact)
        else:
            assert t is None


def test_two_threads_equal_one(path):
    """Each product runs serial on its thread with two threads, split over the threads with one: same bits."""
    g, _ = _rounded((128, 512))
    x, _ = _rounded((128, 784))
    w, _ = _rounded((512, 784))
    old = fc.get_num_threads()
    try:
        fc.set_num_threads(1)
        one = [to_numpy(t.float()) for t in _C._linear_backward(g, x, w, True, True, True)]
        fc.set_num_threads(2)
        two = [to_numpy(t.float()) for t in _C._linear_backward(g, x, w, True, True, True)]
    finally:
        fc.set_num_threads(old)
    for a, b in zip(one, two, strict=True):
        np.testing.assert_array_equal(a, b)


def test_strided_operands(threads):
    g, g64 = _rounded((40, 48))
    x, x64 = _rounded((56, 48))
    w, w64 = _rounded((40, 112))
    # grad g^T (48 x 40: its rows strided, the bias sums copy it), input x^T, every other column of W.
    gi, gw, gb = _C._linear_backward(g.t(), x.t(), w[:, ::2], True, True, True)
    _check(gi, g64.T @ w64[:, ::2])
    _check(gw, g64 @ x64.T)
    _check(gb, g64.sum(1))


def test_errors():
    g, x, w = _rounded((4, 3))[0], _rounded((4, 5))[0], _rounded((3, 5))[0]
    with pytest.raises(TypeError, match=r"^\[_linear_backward\] .*same dtype, got bfloat16, float32 and bfloat16"):
        _C._linear_backward(g, x.float(), w, True, True, True)
    with pytest.raises(TypeError, match=r"^\[_linear_backward\] supports float32, float64 and bfloat16, got .*float16"):
        _C._linear_backward(g.half(), x.half(), w.half(), True, True, True)
    with pytest.raises(ValueError, match=r"^\[_linear_backward\] input shape \(4, 6\) does not match weight"):
        _C._linear_backward(g, fc.ones(4, 6, dtype=fc.bfloat16), w, True, True, True)
