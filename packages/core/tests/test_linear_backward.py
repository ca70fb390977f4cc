"""_linear_backward (Note [Linear backward], src/cpu/linalg/linear_backward.cpp): linear's
three gradients in one call, grad_output @ weight, grad_output.T @ input and
grad_output.sum(0), each only when asked; the two GEMMs run side by side on the
GEMM pool. Values against PyTorch 2.13 in float32 and float64 at the MLP's
shapes and odd and empty ones, at 1, 2 and 3 threads (serial, one block per
GEMM, split GEMMs), with transposed and non-contiguous operands; errors."""

from __future__ import annotations

import itertools

import flambeau_core as fc
import numpy as np
import pytest
import torch
from helpers import to_numpy

FLOATS = [np.float32, np.float64]
linear_backward = fc._C._linear_backward


def tol(dtype):
    return dict(rtol=1e-4, atol=1e-4) if dtype == np.float32 else dict(rtol=1e-10, atol=1e-10)


def rand(shape, dtype, seed):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


def torch_grads(g, x, w):
    tx = torch.tensor(x, requires_grad=True)
    tw = torch.tensor(w, requires_grad=True)
    tb = torch.zeros(w.shape[0], dtype=tw.dtype, requires_grad=True)
    torch.nn.functional.linear(tx, tw, tb).backward(torch.tensor(g))
    return tx.grad.numpy(), tw.grad.numpy(), tb.grad.numpy()


def check(got, want, dtype):
    for a, b in zip(got, want, strict=True):
        assert tuple(a.shape) == b.shape
        np.testing.assert_allclose(to_numpy(a), b, **tol(dtype))


# (n, in_features, out_features): the MLP's three layers, odd sizes, a tall and a wide one,
# and one below the size where the call goes to the pool.
# With two threads grad_weight is cut into halving row blocks: 1001 rows (the last block odd), 100 (two
# blocks: the rest too short to halve), 40 (one).
SHAPES = [
    (128, 784, 512), (128, 512, 512), (128, 512, 10), (333, 257, 129), (7, 5, 3), (1000, 40, 70), (3, 2000, 900),
    (70, 33, 1001), (90, 300, 100), (300, 70, 40),
]  # fmt: skip


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("shape", SHAPES)
def test_all_three_match_torch(threads, shape, dtype):
    n, i, o = shape
    g, x, w = rand((n, o), dtype, 1), rand((n, i), dtype, 2), rand((o, i), dtype, 3)
    check(linear_backward(fc.tensor(g), fc.tensor(x), fc.tensor(w)), torch_grads(g, x, w), dtype)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("mask", [m for m in itertools.product([True, False], repeat=3)])
@pytest.mark.parametrize("shape", [(128, 784, 512), (128, 512, 10), (9, 70, 33)])
def test_each_mask(threads, shape, mask, dtype):
    n, i, o = shape
    g, x, w = rand((n, o), dtype, 4), rand((n, i), dtype, 5), rand((o, i), dtype, 6)
    got = linear_backward(fc.tensor(g), fc.tensor(x), fc.tensor(w), *mask)
    want = torch_grads(g, x, w)
    for asked, a, b in zip(mask, got, want, strict=True):
        if asked:
            assert tuple(a.shape) == b.shape
            np.testing.assert_allclose(to_numpy(a), b, **tol(dtype))
        else:
            assert a is None


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("layout", ["transposed", "strided"])
@pytest.mark.parametrize("shape", [(128, 512, 512), (128, 512, 10), (33, 17, 65)])
def test_non_contiguous_operands(threads, shape, layout, dtype):
    n, i, o = shape
    g, x, w = rand((n, o), dtype, 7), rand((n, i), dtype, 8), rand((o, i), dtype, 9)
    if layout == "transposed":  # each operand a transposed view (unit stride along its rows)
        fg, fx, fw = (fc.tensor(np.ascontiguousarray(a.T)).t() for a in (g, x, w))
    else:  # a step in both dims: packed before the GEMMs

        def strided(a):
            big = np.zeros((2 * a.shape[0], 3 * a.shape[1]), dtype)
            big[::2, ::3] = a
            return fc.tensor(big)[::2, ::3]

        fg, fx, fw = strided(g), strided(x), strided(w)
    assert not fg.is_contiguous()
    check(linear_backward(fg, fx, fw), torch_grads(g, x, w), dtype)


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("shape", [(0, 4, 3), (5, 0, 3), (5, 4, 0), (0, 0, 0)])
def test_empty_dims(threads, shape, dtype):
    n, i, o = shape
    g, x, w = rand((n, o), dtype, 10), rand((n, i), dtype, 11), rand((o, i), dtype, 12)
    got = linear_backward(fc.tensor(g), fc.tensor(x), fc.tensor(w))
    want = (g @ w, g.T @ x, g.sum(0))
    for a, b in zip(got, want, strict=True):
        assert tuple(a.shape) == b.shape
        np.testing.assert_allclose(to_numpy(a), b, **tol(dtype))


def test_pool_off_same_values(monkeypatch):
    # The values do not depend on how the blocks are scheduled: 1 thread vs 2.
    g, x, w = rand((128, 512), np.float64, 13), rand((128, 784), np.float64, 14), rand((512, 784), np.float64, 15)
    old = fc.get_num_threads()
    try:
        fc.set_num_threads(1)
        one = [to_numpy(t) for t in linear_backward(fc.tensor(g), fc.tensor(x), fc.tensor(w))]
        fc.set_num_threads(2)
        two = [to_numpy(t) for t in linear_backward(fc.tensor(g), fc.tensor(x), fc.tensor(w))]
    finally:
        fc.set_num_threads(old)
    for a, b in zip(one, two, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-12, atol=1e-12)


def test_errors():
    g, x, w = fc.ones(4, 3), fc.ones(4, 5), fc.ones(3, 5)
    with pytest.raises(TypeError, match=r"\[_linear_backward\] supports float32, float64 and bfloat16, got .*int64"):
        linear_backward(fc.ones(4, 3, dtype=fc.int64), fc.ones(4, 5, dtype=fc.int64), fc.ones(3, 5, dtype=fc.int64))
    with pytest.raises(TypeError, match=r"\[_linear_backward\] .*same dtype, got float32, float64 and float32"):
        linear_backward(g, fc.ones(4, 5, dtype=fc.float64), w)
    with pytest.raises(fc.FlambeauError, match=r"\[_linear_backward\] weight must be 2-D .*\(3, 5, 1\)"):
        linear_backward(g, x, fc.ones(3, 5, 1))
    with pytest.raises(fc.FlambeauError, match=r"\[_linear_backward\] input must be 2-D .*\(20,\)"):
        linear_backward(g, fc.ones(20), w)
    with pytest.raises(fc.FlambeauError, match=r"\[_linear_backward\] input shape \(4, 6\) does not match weight"):
        linear_backward(g, fc.ones(4, 6), w)
    with pytest.raises(fc.FlambeauError, match=r"grad_output must have shape \(4, 3\) .* got \(4, 2\)"):
        linear_backward(fc.ones(4, 2), x, w)
    with pytest.raises(fc.FlambeauError, match=r"grad_output must be 2-D"):
        linear_backward(fc.ones(12), x, w)


# GEMMs between 2^18 and 2^20 multiply-adds split on the GEMM pool (kPoolMacs in gemm.h): the MLP's
# last layer and LeNet-5's small ones, linear (bias in each block) and mm, transposed operands too.
SMALL_SPLIT = [(128, 512, 10), (64, 120, 84), (256, 40, 30), (33, 100, 97)]


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("shape", SMALL_SPLIT)
@pytest.mark.parametrize("bias", [True, False])
def test_small_split_linear_and_mm(threads, shape, bias, dtype):
    n, i, o = shape
    x, w, b = rand((n, i), dtype, 16), rand((o, i), dtype, 17), rand((o,), dtype, 18)
    got = fc.linear(fc.tensor(x), fc.tensor(w), fc.tensor(b) if bias else None)
    want = torch.nn.functional.linear(torch.tensor(x), torch.tensor(w), torch.tensor(b) if bias else None)
    np.testing.assert_allclose(to_numpy(got), want.numpy(), **tol(dtype))
    wt = fc.tensor(np.ascontiguousarray(w.T))  # (i, o): x @ wt, and its transposed view for x @ w.T
    np.testing.assert_allclose(to_numpy(fc.mm(fc.tensor(x), wt)), x @ w.T, **tol(dtype))
    np.testing.assert_allclose(to_numpy(fc.mm(fc.tensor(x), fc.tensor(w).t())), x @ w.T, **tol(dtype))


def run_in_python_threads(work, count=4):
    """work(i) on `count` Python threads at once, flambeau at 2 intra-op threads (restored after)."""
    import threading

    old = fc.get_num_threads()
    fc.set_num_threads(2)
    try:
        ts = [threading.Thread(target=work, args=(i,)) for i in range(count)]
        for t in ts:
            t.start()
        for t in ts:
            t.join()
    finally:
        fc.set_num_threads(old)


def test_small_split_with_the_pool_busy():
    # Python threads sharing the pool: a caller that finds it busy runs its blocks itself.

    x, w, b = rand((128, 512), np.float32, 19), rand((10, 512), np.float32, 20), rand((10,), np.float32, 21)
    want = x @ w.T + b
    errors: list[str] = []

    def work(i: int) -> None:
        fx, fw, fb = fc.tensor(x), fc.tensor(w), fc.tensor(b)
        for _ in range(50):
            if not np.allclose(to_numpy(fc.linear(fx, fw, fb)), want, rtol=1e-4, atol=1e-4):
                errors.append(f"thread {i}")
                return

    run_in_python_threads(work)
    assert errors == []


def test_linear_backward_with_the_pool_busy():
    # Python threads sharing the pool: a caller that finds it busy runs its pieces on OpenMP.

    g, x, w = rand((128, 512), np.float32, 22), rand((128, 784), np.float32, 23), rand((512, 784), np.float32, 24)
    want = (g @ w, g.T @ x, g.sum(0))
    errors: list[str] = []

    def work(i: int) -> None:
        fg, fx, fw = fc.tensor(g), fc.tensor(x), fc.tensor(w)
        for _ in range(10):
            got = linear_backward(fg, fx, fw)
            if not all(np.allclose(to_numpy(a), b, rtol=1e-4, atol=1e-3) for a, b in zip(got, want, strict=True)):
                errors.append(f"thread {i}")
                return

    run_in_python_threads(work)
    assert errors == []


def test_linear_backward_with_the_pool_off(cpu_settings):
    # backends.cpu.gemm_pool = False: the pieces run on OpenMP.
    cpu_settings(gemm_pool=False)
    old = fc.get_num_threads()
    fc.set_num_threads(2)
    try:
        r = np.random.default_rng(0)
        g, x, w = (r.standard_normal(s) for s in ((128, 512), (128, 784), (512, 784)))
        got = fc._C._linear_backward(fc.tensor(g), fc.tensor(x), fc.tensor(w))
    finally:
        fc.set_num_threads(old)
    for a, b in zip(got, (g @ w, g.T @ x, g.sum(0)), strict=True):
        np.testing.assert_allclose(to_numpy(a), b, rtol=1e-10, atol=1e-10)
