"""flambeau-cuda's layer_norm / batch_norm kernels (src/norm.cpp) checked without a GPU.

They are made of dispatched ops (sums over dims and broadcast arithmetic), so the same functions run on cpu
tensors through the test hooks _C._*_norm*_on_host: their values are compared with core's CPU kernels
(native_layer_norm, native_batch_norm, running statistics included) and their gradients with torch's autograd,
float32 and float64, odd and non-contiguous shapes, with and without affine parameters. On a GPU,
test_gpu_norm.py runs them on CUDA tensors.
"""

from __future__ import annotations

import flambeau_core as fc
import numpy as np
import pytest
import torch
from cuda_testing import assert_close
from flambeau_cuda import _C

DT = {"float32": (fc.float32, torch.float32, 2e-5), "float64": (fc.float64, torch.float64, 1e-10)}


def _pair(a, dtype):
    """The same values as a flambeau and a torch tensor (None stays None)."""
    if a is None:
        return None, None
    flat = fc.tensor(a.reshape(-1).tolist(), dtype=DT[dtype][0])
    return flat.reshape(a.shape), torch.tensor(a, dtype=DT[dtype][1], requires_grad=True)


LN_CASES = [((4, 7), (7,)), ((2, 3, 5), (3, 5)), ((3, 1, 6), (6,)), ((5, 1), (1,)), ((0, 4), (4,))]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("affine", [True, False])
@pytest.mark.parametrize(("shape", "norm"), LN_CASES)
def test_layer_norm_matches_core_and_torch(shape, norm, affine, dtype):
    rng = np.random.default_rng(0)
    _, _, tol = DT[dtype]
    x = rng.standard_normal(shape)
    xf, xt = _pair(x, dtype)
    wf, wt = _pair(rng.standard_normal(norm) if affine else None, dtype)
    bf, bt = _pair(rng.standard_normal(norm) if affine else None, dtype)
    out, mean, rstd = _C._layer_norm_on_host(xf, list(norm), wf, bf, 1e-5)
    o2, m2, r2 = fc.native_layer_norm(xf, list(norm), wf, bf, 1e-5)  # core's CPU kernel
    assert out.shape == o2.shape and mean.shape == m2.shape and rstd.shape == r2.shape
    assert_close(out, o2, tol)
    assert_close(mean, m2, tol)
    assert_close(rstd, r2, 10 * tol)
    yt = torch.nn.functional.layer_norm(xt, norm, wt, bt, 1e-5)
    g = rng.standard_normal(shape)
    gf, gt = _pair(g, dtype)
    yt.backward(gt.detach())
    gi, gw, gb = _C._layer_norm_backward_on_host(gf, xf, list(norm), mean, rstd, wf, True, affine, affine)
    assert_close(gi, xt.grad, 10 * tol)
    if affine:
        assert_close(gw, wt.grad, 10 * tol)
        assert_close(gb, bt.grad, 10 * tol)


def test_layer_norm_non_contiguous_input():
    rng = np.random.default_rng(1)
    base = fc.tensor(rng.standard_normal((4, 14)).tolist(), dtype=fc.float64)
    x = base[:, ::2]  # (4, 7), strided
    out, mean, rstd = _C._layer_norm_on_host(x, [7], None, None, 1e-5)
    o2, _, _ = fc.native_layer_norm(x.contiguous(), [7], None, None, 1e-5)
    assert_close(out, o2, 1e-12)


BN_CASES = [(4, 3), (2, 3, 5), (2, 3, 4, 4), (3, 2, 1)]


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("affine", [True, False])
@pytest.mark.parametrize("training", [True, False])
@pytest.mark.parametrize("shape", BN_CASES)
def test_batch_norm_matches_core_and_torch(shape, training, affine, dtype):
    rng = np.random.default_rng(2)
    _, _, tol = DT[dtype]
    c = shape[1]
    x = rng.standard_normal(shape)
    xf, xt = _pair(x, dtype)
    wf, wt = _pair(rng.standard_normal(c) if affine else None, dtype)
    bf, bt = _pair(rng.standard_normal(c) if affine else None, dtype)
    rm0, rv0 = rng.standard_normal(c), rng.uniform(0.5, 2.0, c)
    rmf, _ = _pair(rm0, dtype)
    rvf, _ = _pair(rv0, dtype)
    rm2, _ = _pair(rm0, dtype)
    rv2, _ = _pair(rv0, dtype)
    out, mean, invstd = _C._batch_norm_on_host(xf, wf, bf, rmf, rvf, training, 0.1, 1e-5)
    o2, m2, i2 = fc.native_batch_norm(xf, wf, bf, rm2, rv2, training, 0.1, 1e-5)  # core's CPU kernel
    assert_close(out, o2, 10 * tol)
    assert_close(mean, m2, tol)  # evaluation mode: (0,) statistics, as the CPU kernel's and torch's
    assert_close(invstd, i2, 10 * tol)
    assert mean.shape == invstd.shape == ((c,) if training else (0,))
    assert_close(rmf, rm2, tol)  # running statistics updated alike (training) or untouched (eval)
    assert_close(rvf, rv2, 10 * tol)
    rmt = torch.tensor(rm0, dtype=DT[dtype][1])
    rvt = torch.tensor(rv0, dtype=DT[dtype][1])
    yt = torch.nn.functional.batch_norm(xt, rmt, rvt, wt, bt, training=training, momentum=0.1, eps=1e-5)
    g = rng.standard_normal(shape)
    gf, gt = _pair(g, dtype)
    yt.backward(gt.detach())
    if not training:  # the backward reads the running statistics (what autograd's formula passes it)
        mean, invstd = rmf, (rvf + 1e-5).rsqrt()
    gi, gw, gb = _C._batch_norm_backward_on_host(gf, xf, wf, mean, invstd, training, True, affine, affine)
    assert_close(gi, xt.grad, 100 * tol)
    if affine:
        assert_close(gw, wt.grad, 100 * tol)
        assert_close(gb, bt.grad, 100 * tol)


def test_batch_norm_training_without_running_stats():
    x = fc.randn(3, 2, 4, dtype=fc.float64)
    out, mean, invstd = _C._batch_norm_on_host(x, None, None, None, None, True, 0.1, 1e-5)
    o2, m2, i2 = fc.native_batch_norm(x, None, None, None, None, True, 0.1, 1e-5)
    assert_close(out, o2, 1e-12)
    assert_close(mean, m2, 1e-12)
    assert_close(invstd, i2, 1e-10)


def test_norm_errors_name_the_op():
    with pytest.raises(TypeError, match=r"\[layer_norm\] input must be a float32 or float64"):
        _C._layer_norm_on_host(fc.ones(2, 3, dtype=fc.int64), [3], None, None, 1e-5)
    with pytest.raises(ValueError, match=r"\[layer_norm\] Given normalized_shape=\(4,\)"):
        _C._layer_norm_on_host(fc.ones(2, 3), [4], None, None, 1e-5)
    with pytest.raises(TypeError, match=r"\[layer_norm\] weight must have the input's dtype float32, got float64"):
        _C._layer_norm_on_host(fc.ones(2, 3), [3], fc.ones(3, dtype=fc.float64), None, 1e-5)
    with pytest.raises(ValueError, match=r"\[batch_norm\] running_mean and running_var must be given"):
        _C._batch_norm_on_host(fc.ones(2, 3), None, None, None, None, False, 0.1, 1e-5)
    with pytest.raises(ValueError, match=r"\[batch_norm\] weight must have shape \(3,\)"):
        _C._batch_norm_on_host(fc.ones(2, 3), fc.ones(4), None, None, None, True, 0.1, 1e-5)
    with pytest.raises(ValueError, match=r"\[batch_norm\] expected an input of at least 2 dims"):
        _C._batch_norm_on_host(fc.ones(3), None, None, None, None, True, 0.1, 1e-5)
