"""The GEMM block pool (Note [GEMM pool], src/cpu/gemm_pool.{h,cpp}): large
GEMMs (mm, linear, bmm) split into column or row blocks that the caller and
the pool's workers claim, and the short conv / batch-norm eval kernels run on
it too. Values against PyTorch 2.13 in float32 and float64 at the benchmark
models' shapes, at 2 and 3 threads, with transposed and non-contiguous
operands; the pool in use by several Python threads at once (the callers that
find it busy run the blocks on OpenMP); a forked child (no workers there)."""

from __future__ import annotations

import os
import sys
import threading

import flambeau_core as fc
import numpy as np
import pytest
import torch
from helpers import to_numpy

FLOATS = [np.float32, np.float64]
NP_TO_TORCH = {np.float32: torch.float32, np.float64: torch.float64}


def tol(dtype):
    return dict(rtol=1e-4, atol=1e-4) if dtype == np.float32 else dict(rtol=1e-10, atol=1e-10)


def rand(shape, dtype, seed):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


@pytest.fixture(params=[2, 3])
def threads(request):
    old = fc.get_num_threads()
    fc.set_num_threads(request.param)
    yield request.param
    fc.set_num_threads(old)


# (m, k, n): the MLP's layers forward and backward (above the 2^20 multiply-adds
# where gemm splits), a tall one split by rows, an odd one.
MM_SHAPES = [(128, 784, 512), (128, 512, 512), (512, 128, 784), (128, 512, 784), (3000, 64, 40), (333, 257, 129)]


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("shape", MM_SHAPES)
@pytest.mark.parametrize("layout", ["nn", "tn", "nt", "strided"])
def test_mm_split_matches_torch(threads, shape, dtype, layout):
    m, k, n = shape
    a, b = rand((m, k), dtype, 1), rand((k, n), dtype, 2)
    if layout == "tn":
        fa, fb_ = fc.tensor(np.ascontiguousarray(a.T)).t(), fc.tensor(b)
    elif layout == "nt":
        fa, fb_ = fc.tensor(a), fc.tensor(np.ascontiguousarray(b.T)).t()
    elif layout == "strided":  # a step in both dims of a: packed before the GEMM
        big = np.zeros((2 * m, 2 * k), dtype)
        big[::2, ::2] = a
        fa, fb_ = fc.tensor(big)[::2, ::2], fc.tensor(b)
    else:
        fa, fb_ = fc.tensor(a), fc.tensor(b)
    np.testing.assert_allclose(to_numpy(fc.mm(fa, fb_)), (torch.tensor(a) @ torch.tensor(b)).numpy(), **tol(dtype))


@pytest.mark.parametrize("dtype", FLOATS)
@pytest.mark.parametrize("shape", [(128, 784, 512), (128, 512, 512), (7, 33, 2048)])
@pytest.mark.parametrize("bias", [True, False])
def test_linear_split_matches_torch(threads, shape, dtype, bias):
    n, in_f, out_f = shape
    x, w = rand((n, in_f), dtype, 3), rand((out_f, in_f), dtype, 4)
    b = rand((out_f,), dtype, 5) if bias else None
    got = fc.linear(fc.tensor(x), fc.tensor(w), fc.tensor(b) if bias else None)
    want = torch.nn.functional.linear(torch.tensor(x), torch.tensor(w), torch.tensor(b) if bias else None)
    np.testing.assert_allclose(to_numpy(got), want.numpy(), **tol(dtype))


@pytest.mark.parametrize("dtype", FLOATS)
def test_bmm_split_matches_torch(threads, dtype):
    a, b = rand((3, 96, 300), dtype, 6), rand((3, 300, 200), dtype, 7)
    np.testing.assert_allclose(
        to_numpy(fc.bmm(fc.tensor(a), fc.tensor(b))), (torch.tensor(a) @ torch.tensor(b)).numpy(), **tol(dtype)
    )


@pytest.mark.parametrize("dtype", FLOATS)
def test_conv_and_batch_norm_eval_on_the_pool_match_torch(threads, dtype):
    # ResNet-8's first block at its batch: the direct conv and the eval batch norm run on the pool.
    x = rand((32, 16, 32, 32), dtype, 8)
    w = rand((16, 16, 3, 3), dtype, 9) * 0.1
    y = fc.conv2d(fc.tensor(x), fc.tensor(w), None, 1, 1)
    ty = torch.nn.functional.conv2d(torch.tensor(x), torch.tensor(w), None, 1, 1)
    np.testing.assert_allclose(to_numpy(y), ty.numpy(), **tol(dtype))
    rm, rv = rand((16,), dtype, 10), np.abs(rand((16,), dtype, 11)) + 0.5
    g, b = rand((16,), dtype, 12), rand((16,), dtype, 13)
    out = fc.native_batch_norm(y, fc.tensor(g), fc.tensor(b), fc.tensor(rm), fc.tensor(rv), False, 0.1, 1e-5)[0]
    t_out = torch.nn.functional.batch_norm(
        ty, torch.tensor(rm), torch.tensor(rv), torch.tensor(g), torch.tensor(b), False, 0.1, 1e-5
    )
    np.testing.assert_allclose(to_numpy(out), t_out.numpy(), **tol(dtype))


def test_pool_shared_by_python_threads():
    # Callers that find the pool busy run their blocks on OpenMP: every result stays right.
    a, b = rand((200, 300), np.float32, 14), rand((300, 400), np.float32, 15)
    want = a @ b
    errors: list[str] = []

    def work(seed: int) -> None:
        fa, fb_ = fc.tensor(a), fc.tensor(b)
        for _ in range(20):
            got = to_numpy(fc.mm(fa, fb_))
            if not np.allclose(got, want, rtol=1e-4, atol=1e-3):
                errors.append(f"thread {seed}: wrong product")
                return

    ts = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert not errors


@pytest.mark.skipif(not hasattr(os, "fork") or sys.platform == "darwin", reason="needs fork()")
@pytest.mark.skipif(not fc.backends.cpu.gemm_pool, reason="pool off: libgomp's team does not survive fork()")
def test_pool_in_a_forked_child():
    # The workers do not exist in the child: the caller runs every block (and new workers start).
    a, b = rand((128, 784), np.float32, 16), rand((784, 512), np.float32, 17)
    fa, fb_ = fc.tensor(a), fc.tensor(b)
    fc.mm(fa, fb_)  # the parent's workers exist
    pid = os.fork()
    if pid == 0:
        ok = all(np.allclose(to_numpy(fc.mm(fa, fb_)), a @ b, rtol=1e-4, atol=1e-3) for _ in range(5))
        os._exit(0 if ok else 1)
    _, status = os.waitpid(pid, 0)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0


@pytest.mark.parametrize("dtype", FLOATS)
def test_linear_bias_rows_filled_per_block(threads, dtype):
    # The bias is broadcast by each GEMM block into its own part of the output:
    # split by columns (few rows), by rows (many rows), a strided bias, a 3-D input, in_features == 0.
    for n, in_f, out_f in [(64, 512, 1024), (4096, 64, 40), (5, 0, 7)]:
        x, w = rand((2, n, in_f), dtype, 18), rand((out_f, in_f), dtype, 19)
        b_full = rand((2 * out_f,), dtype, 20)
        fb_bias = fc.tensor(b_full)[::2]
        got = fc.linear(fc.tensor(x), fc.tensor(w), fb_bias)
        want = torch.nn.functional.linear(torch.tensor(x), torch.tensor(w), torch.tensor(b_full)[::2])
        np.testing.assert_allclose(to_numpy(got), want.numpy(), **tol(dtype))
        np.testing.assert_allclose(
            to_numpy(fc.linear(fc.tensor(x), fc.tensor(w), None)),
            torch.nn.functional.linear(torch.tensor(x), torch.tensor(w)).numpy(),
            **tol(dtype),
        )
