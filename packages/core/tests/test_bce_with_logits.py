"""binary_cross_entropy_with_logits and its backward (core kernels, no autograd) against PyTorch.

The kernels take log_sigmoid and sigmoid of the logits from the activation
table's vectorised loops (Note [Logits losses] in loss.cpp): these tests cover
every reduction, weight and pos_weight, extreme and special logits, inputs
longer than one block, and the error paths.
"""

import math

import flambeau_core as fc
import numpy as np
import pytest
import torch
import torch.nn.functional as TF
from helpers import to_numpy

REDUCTIONS = {"none": 0, "mean": 1, "sum": 2}
TOL = {np.float32: dict(rtol=2e-6, atol=5e-7), np.float64: dict(rtol=1e-13, atol=1e-15)}


def logits(n, dtype, seed=0):
    x = np.random.default_rng(seed).standard_normal(n) * 6
    x[:8] = [0.0, -0.0, 1e-8, -1e-8, 30.0, -30.0, 90.0, -90.0][: min(8, n)]
    return x.astype(dtype)


def torch_loss_and_grad(x, t, w, pw, reduction, g=None):
    xt = torch.from_numpy(x).requires_grad_()
    out = TF.binary_cross_entropy_with_logits(
        xt,
        torch.from_numpy(t),
        weight=None if w is None else torch.from_numpy(w),
        pos_weight=None if pw is None else torch.from_numpy(pw),
        reduction=reduction,
    )
    out.backward(torch.ones_like(out) if g is None else torch.from_numpy(g))
    return out.detach().numpy(), xt.grad.numpy()


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
@pytest.mark.parametrize("reduction", list(REDUCTIONS))
@pytest.mark.parametrize("weighted", ["none", "weight", "pos_weight", "both"])
@pytest.mark.parametrize("n", [1, 37, 1024, 40000])
def test_matches_torch(dtype, reduction, weighted, n):
    x = logits(n, dtype)
    rng = np.random.default_rng(1)
    t = rng.uniform(0, 1, n).astype(dtype)
    t[::3] = np.round(t[::3])
    w = rng.uniform(0.2, 2, n).astype(dtype) if weighted in ("weight", "both") else None
    pw = rng.uniform(0.5, 3, n).astype(dtype) if weighted in ("pos_weight", "both") else None
    g = rng.standard_normal(n).astype(dtype) if reduction == "none" else None
    want, want_grad = torch_loss_and_grad(x, t, w, pw, reduction, g)
    opt = dict(
        weight=None if w is None else fc.tensor(w),
        pos_weight=None if pw is None else fc.tensor(pw),
        reduction=REDUCTIONS[reduction],
    )
    got = fc.binary_cross_entropy_with_logits(fc.tensor(x), fc.tensor(t), **opt)
    np.testing.assert_allclose(to_numpy(got), want, **TOL[dtype])
    grad_out = fc.tensor(g) if g is not None else fc.ones(())
    got_grad = fc.binary_cross_entropy_with_logits_backward(grad_out, fc.tensor(x), fc.tensor(t), **opt)
    np.testing.assert_allclose(to_numpy(got_grad), want_grad, **TOL[dtype])


@pytest.mark.parametrize("dtype", [np.float32, np.float64])
def test_special_logits(dtype):
    x = np.array([np.inf, -np.inf, np.nan, 0.0, -0.0, 88.0, -88.0, 1e-30, 104.0, -104.0], dtype)
    t = np.array([1.0, 0.0, 1.0, 0.5, 0.5, 0.0, 1.0, 1.0, 1.0, 0.0], dtype)
    want, want_grad = torch_loss_and_grad(x, t, None, None, "none")
    got = fc.binary_cross_entropy_with_logits(fc.tensor(x), fc.tensor(t), reduction=0)
    np.testing.assert_allclose(to_numpy(got), want, **TOL[dtype])
    got_grad = fc.binary_cross_entropy_with_logits_backward(
        fc.ones(10, dtype=got.dtype), fc.tensor(x), fc.tensor(t), reduction=0
    )
    np.testing.assert_allclose(to_numpy(got_grad), want_grad, **TOL[dtype])


def test_float64_values_are_the_c_library_formula():
    # float64 goes through the C library's exp and log1p as before: the same formula, bit for bit.
    x = logits(5000, np.float64, seed=4)
    t = np.random.default_rng(5).uniform(0, 1, 5000)
    got = to_numpy(fc.binary_cross_entropy_with_logits(fc.tensor(x), fc.tensor(t), reduction=0))
    want = [(1 - b) * a + (math.log1p(math.exp(-abs(a))) + (-a if a < 0 else 0.0)) for a, b in zip(x, t, strict=True)]
    np.testing.assert_array_equal(got, np.array(want))
    ones = fc.ones(5000, dtype=fc.float64)
    got_grad = to_numpy(fc.binary_cross_entropy_with_logits_backward(ones, fc.tensor(x), fc.tensor(t), reduction=0))
    want_grad = []
    for a, b in zip(x, t, strict=True):
        e = math.exp(a if a < 0 else -a)
        sg = e / (1 + e) if a < 0 else 1 / (1 + e)
        want_grad.append((b + 1 - b) * sg - b)
    np.testing.assert_array_equal(got_grad, np.array(want_grad))


def test_strided_and_broadcast_operands():
    x = logits(64, np.float32).reshape(8, 8)
    t = np.random.default_rng(6).uniform(0, 1, (8, 8)).astype(np.float32)
    pw = np.linspace(0.5, 2, 8).astype(np.float32)
    want, want_grad = torch_loss_and_grad(np.ascontiguousarray(x.T), t, None, pw, "mean")
    xt = fc.tensor(x).T  # non-contiguous
    got = fc.binary_cross_entropy_with_logits(xt, fc.tensor(t), pos_weight=fc.tensor(pw), reduction=1)
    np.testing.assert_allclose(to_numpy(got), want, **TOL[np.float32])
    got_grad = fc.binary_cross_entropy_with_logits_backward(
        fc.ones(()), xt, fc.tensor(t), pos_weight=fc.tensor(pw), reduction=1
    )
    np.testing.assert_allclose(to_numpy(got_grad), want_grad, **TOL[np.float32])


def test_errors_name_the_op():
    with pytest.raises(ValueError, match=r"binary_cross_entropy_with_logits"):
        fc.binary_cross_entropy_with_logits(fc.zeros(3), fc.zeros(4))
    with pytest.raises(ValueError, match=r"binary_cross_entropy_with_logits_backward"):
        fc.binary_cross_entropy_with_logits_backward(fc.ones(()), fc.zeros(3), fc.zeros(4))
