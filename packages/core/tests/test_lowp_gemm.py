"""bfloat16 and float16 products (Note [Low-precision GEMM]): float32 accumulation and one rounding, on the
AVX512-BF16 kernel where the CPU has it and on the float32 fallback, against a float32 product of the same
(already rounded) values; odd sizes, transposed and strided operands, batches."""

from __future__ import annotations

import flambeau_core as fc
import numpy as np
import pytest
from helpers import to_numpy

RNG = np.random.default_rng(1)
SHAPES = [(1, 1, 1), (3, 5, 7), (8, 32, 32), (9, 33, 31), (17, 2, 65), (64, 129, 96), (130, 784, 40)]


def _rounded(shape, dtype):
    """A random low-precision tensor and its exact float32 values."""
    t = fc.tensor(RNG.standard_normal(shape).astype(np.float32)).to(dtype)
    return t, to_numpy(t.float())


def _expected(a32: np.ndarray, b32: np.ndarray, dtype) -> np.ndarray:
    """The float32 product (in float64, then once to float32) rounded to dtype once."""
    exact = np.matmul(a32.astype(np.float64), b32.astype(np.float64)).astype(np.float32)
    return to_numpy(fc.tensor(exact).to(dtype).float())


def _check(got: fc.Tensor, expected: np.ndarray, dtype) -> None:
    assert got.dtype == dtype
    # Summation order differs from the reference: at most one unit in the last place of the result
    # (2**-8 relative for bfloat16, 2**-11 for float16), plus the cancellation of a float32 sum.
    ulp = 2.0**-7 if dtype == fc.bfloat16 else 2.0**-10
    np.testing.assert_allclose(to_numpy(got.float()), expected, rtol=ulp, atol=1e-4)


@pytest.mark.parametrize("dtype", [fc.bfloat16, fc.float16], ids=["bfloat16", "float16"])
@pytest.mark.parametrize("n,k,m", SHAPES)
def test_mm_matches_float32_product(n, k, m, dtype):
    a, a32 = _rounded((n, k), dtype)
    b, b32 = _rounded((k, m), dtype)
    _check(fc.mm(a, b), _expected(a32, b32, dtype), dtype)


@pytest.mark.parametrize("dtype", [fc.bfloat16, fc.float16], ids=["bfloat16", "float16"])
def test_transposed_and_strided_operands(dtype):
    a, a32 = _rounded((40, 23), dtype)
    b, b32 = _rounded((31, 40), dtype)
    # a^T (23 x 40) and b^T (40 x 31): both transposed views.
    _check(fc.mm(a.t(), b.t()), _expected(a32.T, b32.T, dtype), dtype)
    # Every other row and column: neither dim is unit-stride.
    big, big32 = _rounded((50, 62), dtype)
    _check(fc.mm(big[::2, ::2], b[:31:1, ::2][:31]), _expected(big32[::2, ::2], b32[:31, ::2], dtype), dtype)


@pytest.mark.parametrize("dtype", [fc.bfloat16, fc.float16], ids=["bfloat16", "float16"])
def test_bmm_and_linear(dtype):
    a, a32 = _rounded((3, 9, 17), dtype)
    b, b32 = _rounded((3, 17, 33), dtype)
    _check(fc.bmm(a, b), _expected(a32, b32, dtype), dtype)
    w, w32 = _rounded((10, 17), dtype)
    _check(fc.linear(a, w), _expected(a32, w32.T, dtype), dtype)


def test_fallback_matches_kernel():
    """The AVX512-BF16 kernel and the float32 fallback (capability capped below AVX-512) agree."""
    if not fc._C._bf16_gemm_kernel():
        pytest.skip("this CPU has no AVX512-BF16: only the fallback runs here (tested above)")
    a, _ = _rounded((37, 301), fc.bfloat16)
    b, _ = _rounded((301, 45), fc.bfloat16)
    kernel = to_numpy(fc.mm(a, b).float())
    with fc.backends.cpu.flags(max_cpu_capability="avx2"):
        assert not fc._C._bf16_gemm_kernel()
        fallback = to_numpy(fc.mm(a, b).float())
    assert fc._C._bf16_gemm_kernel()
    np.testing.assert_allclose(kernel, fallback, rtol=2.0**-7, atol=1e-4)


def test_empty_and_zero_depth():
    a = fc.ones(0, 4).to(fc.bfloat16)
    assert tuple(fc.mm(a, fc.ones(4, 3).to(fc.bfloat16)).shape) == (0, 3)
    z = fc.mm(fc.ones(2, 0).to(fc.bfloat16), fc.ones(0, 3).to(fc.bfloat16))
    assert z.dtype == fc.bfloat16 and z.float().tolist() == [[0.0] * 3] * 2
