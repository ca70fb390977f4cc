"""flambeau-cuda on a GPU: mm, bmm, linear and matmul through cuBLAS vs NumPy (skipped with "no CUDA GPU" elsewhere)."""

from __future__ import annotations

import flambeau_core as fc
import numpy as np
import pytest
from conftest import requires_gpu
from cuda_testing import assert_close

pytestmark = requires_gpu


def _t(a, dtype):
    return fc.tensor(a.tolist(), dtype=dtype, device="cuda")


TOL = {fc.float32: 1e-4, fc.float64: 1e-10}


@pytest.mark.parametrize("dtype", [fc.float32, fc.float64])
@pytest.mark.parametrize(("n", "k", "m"), [(1, 1, 1), (3, 5, 7), (17, 1, 9), (64, 33, 65), (5, 0, 4)])
def test_mm_layouts(dtype, n, k, m):
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((n, k)), rng.standard_normal((k, m))
    assert_close(fc.mm(_t(a, dtype), _t(b, dtype)), a @ b, TOL[dtype])
    # transposed views go to cuBLAS with OP_T; sliced ones are made contiguous
    at, bt = _t(a.T.copy(), dtype).transpose(0, 1), _t(b.T.copy(), dtype).transpose(0, 1)
    assert_close(fc.mm(at, bt), a @ b, TOL[dtype])
    wide = _t(np.concatenate([b, b], axis=1), dtype)[:, ::2]
    assert_close(fc.mm(_t(a, dtype), wide), a @ np.concatenate([b, b], axis=1)[:, ::2], TOL[dtype])


@pytest.mark.parametrize("dtype", [fc.float32, fc.float64])
def test_bmm_and_matmul(dtype):
    rng = np.random.default_rng(1)
    a, b = rng.standard_normal((4, 3, 5)), rng.standard_normal((4, 5, 2))
    assert_close(fc.bmm(_t(a, dtype), _t(b, dtype)), a @ b, TOL[dtype])
    assert_close(_t(a, dtype) @ _t(b, dtype), a @ b, TOL[dtype])
    assert_close(_t(a, dtype) @ _t(b[0], dtype), a @ b[0], TOL[dtype])


@pytest.mark.parametrize("dtype", [fc.float32, fc.float64])
def test_linear(dtype):
    rng = np.random.default_rng(2)
    x, w, bias = rng.standard_normal((2, 3, 6)), rng.standard_normal((4, 6)), rng.standard_normal(4)
    assert_close(fc.linear(_t(x, dtype), _t(w, dtype), _t(bias, dtype)), x @ w.T + bias, TOL[dtype])
    assert_close(fc.linear(_t(x[0, 0], dtype), _t(w, dtype)), x[0, 0] @ w.T, TOL[dtype])


def test_gemm_errors():
    a = fc.ones(2, 3, device="cuda")
    with pytest.raises(ValueError, match=r"\[mm\] shapes \(2, 3\) and \(2, 3\) cannot be multiplied"):
        fc.mm(a, a)
    with pytest.raises(TypeError, match=r"\[mm\] with dtype int64 is not yet implemented on CUDA"):
        fc.mm(fc.ones(2, 2, dtype=fc.int64, device="cuda"), fc.ones(2, 2, dtype=fc.int64, device="cuda"))
    with pytest.raises(RuntimeError, match="same device"):
        fc.mm(a, fc.ones(3, 2))
