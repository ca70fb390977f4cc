"""flambeau-cuda on a GPU: mm, bmm, linear and matmul through cuBLAS vs NumPy (skipped with "no CUDA GPU" elsewhere)."""

from __future__ import annotations

import flambeau_core as fc
import numpy as np
import pytest
from conftest import requires_gpu

pytestmark = requires_gpu


def _t(a, dtype):
    return fc.tensor(a.tolist(), dtype=dtype, device="cuda")


def _close(t, expected, dtype):
    tol = 1e-4 if dtype == fc.float32 else 1e-10
    np.testing.assert_allclose(np.array(t.cpu().tolist()), expected, rtol=tol, atol=tol)


@pytest.mark.parametrize("dtype", [fc.float32, fc.float64])
@pytest.mark.parametrize(("n", "k", "m"), [(1, 1, 1), (3, 5, 7), (17, 1, 9), (64, 33, 65), (5, 0, 4)])
def test_mm_layouts(dtype, n, k, m):
    rng = np.random.default_rng(0)
    a, b = rng.standard_normal((n, k)), rng.standard_normal((k, m))
    _close(fc.mm(_t(a, dtype), _t(b, dtype)), a @ b, dtype)
    # transposed views go to cuBLAS with OP_T; sliced ones are made contiguous
    at, bt = _t(a.T.copy(), dtype).transpose(0, 1), _t(b.T.copy(), dtype).transpose(0, 1)
    _close(fc.mm(at, bt), a @ b, dtype)
    wide = _t(np.concatenate([b, b], axis=1), dtype)[:, ::2]
    _close(fc.mm(_t(a, dtype), wide), a @ np.concatenate([b, b], axis=1)[:, ::2], dtype)


@pytest.mark.parametrize("dtype", [fc.float32, fc.float64])
def test_bmm_and_matmul(dtype):
    rng = np.random.default_rng(1)
    a, b = rng.standard_normal((4, 3, 5)), rng.standard_normal((4, 5, 2))
    _close(fc.bmm(_t(a, dtype), _t(b, dtype)), a @ b, dtype)
    _close(_t(a, dtype) @ _t(b, dtype), a @ b, dtype)
    _close(_t(a, dtype) @ _t(b[0], dtype), a @ b[0], dtype)


@pytest.mark.parametrize("dtype", [fc.float32, fc.float64])
def test_linear(dtype):
    rng = np.random.default_rng(2)
    x, w, bias = rng.standard_normal((2, 3, 6)), rng.standard_normal((4, 6)), rng.standard_normal(4)
    _close(fc.linear(_t(x, dtype), _t(w, dtype), _t(bias, dtype)), x @ w.T + bias, dtype)
    _close(fc.linear(_t(x[0, 0], dtype), _t(w, dtype)), x[0, 0] @ w.T, dtype)


def test_gemm_errors():
    a = fc.ones(2, 3, device="cuda")
    with pytest.raises(ValueError, match=r"\[mm\] shapes \(2, 3\) and \(2, 3\) cannot be multiplied"):
        fc.mm(a, a)
    with pytest.raises(TypeError, match=r"\[mm\] with dtype int64 is not yet implemented on CUDA"):
        fc.mm(fc.ones(2, 2, dtype=fc.int64, device="cuda"), fc.ones(2, 2, dtype=fc.int64, device="cuda"))
    with pytest.raises(RuntimeError, match="same device"):
        fc.mm(a, fc.ones(3, 2))
