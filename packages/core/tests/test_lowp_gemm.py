"""bfloat16 and float16 products (Note [Low-precision GEMM]): float32 accumulation and one rounding, on the
AVX512-BF16 kernel where the CPU has it (each test on both of its multiply paths: AMX tiles where the CPU has
AMX-BF16, and vdpbf16ps) and on the float32 fallback, against a float32 product of the same (already rounded)
values; odd sizes, transposed and strided operands, batches."""

from __future__ import annotations

import flambeau_core as fc
import numpy as np
import pytest
from helpers import to_numpy

RNG = np.random.default_rng(1)


@pytest.fixture(autouse=True, params=[True, False], ids=["amx", "vdpbf16ps"])
def amx(request):
    """Each test on both multiply paths of the bfloat16 kernel: AMX tiles (where the CPU has AMX-BF16;
    elsewhere the setting changes nothing) and vdpbf16ps."""
    with fc.backends.cpu.flags(bf16_amx=request.param):
        yield request.param


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


def _linear_expected(x32: np.ndarray, w32: np.ndarray, b32: np.ndarray | None, dtype) -> np.ndarray:
    """x @ w^T + b in float64, rounded to float32 and then once to dtype (the bias added before the rounding)."""
    exact = np.matmul(x32.astype(np.float64), w32.astype(np.float64).T)
    if b32 is not None:
        exact = exact + b32.astype(np.float64)
    return to_numpy(fc.tensor(exact.astype(np.float32)).to(dtype).float())


LINEAR_SHAPES = [(1, 1, 1), (7, 33, 17), (8, 32, 32), (9, 40, 65), (130, 784, 40), (128, 120, 84)]


@pytest.mark.parametrize("capability", ["default", "avx2"])
@pytest.mark.parametrize("dtype", [fc.bfloat16, fc.float16], ids=["bfloat16", "float16"])
@pytest.mark.parametrize("n,k,m", LINEAR_SHAPES)
def test_linear_bias_is_added_before_the_one_rounding(n, k, m, dtype, capability):
    """linear's bias starts the float32 accumulators (the kernel) or the float32 GEMM's rows (the fallback):
    the result is the float32 x @ W^T + b rounded once, not the product rounded and then the sum rounded."""
    x, x32 = _rounded((n, k), dtype)
    w, w32 = _rounded((m, k), dtype)
    b, b32 = _rounded((m,), dtype)
    cap = {} if capability == "default" else {"max_cpu_capability": capability}
    with fc.backends.cpu.flags(**cap):
        got = fc.linear(x, w, b)
    _check(got, _linear_expected(x32, w32, b32, dtype), dtype)


def _bits(t: fc.Tensor) -> np.ndarray:
    return to_numpy(t.float()).view(np.uint32) >> 16


def test_linear_bias_matches_torch_bfloat16():
    """PyTorch's bfloat16 linear also adds the bias to the float32 accumulation (addmm, beta = 1): nearly all
    results agree bit for bit, the others within one bfloat16 unit plus what two float32 summation orders may
    differ by (a sum that cancels to near zero differs by more units: PyTorch's order depends on its backend,
    oneDNN on AMX machines), and the composed matmul + add (two roundings) is further from float64 than the
    fused result."""
    import torch

    n, k, m = 128, 512, 256
    x, x32 = _rounded((n, k), fc.bfloat16)
    w, w32 = _rounded((m, k), fc.bfloat16)
    b32 = (RNG.standard_normal(m) * 8).astype(np.float32)  # a bias that is large against the products
    b = fc.tensor(b32).to(fc.bfloat16)
    b32 = to_numpy(b.float())
    got = fc.linear(x, w, b)
    t = torch.nn.functional.linear(
        torch.from_numpy(x32).bfloat16(), torch.from_numpy(w32).bfloat16(), torch.from_numpy(b32).bfloat16()
    )
    t_bits = t.float().numpy().view(np.uint32) >> 16
    ulps = np.abs(_bits(got).astype(np.int64) - t_bits.astype(np.int64))
    assert (ulps == 0).mean() > 0.99
    exact = np.matmul(x32.astype(np.float64), w32.astype(np.float64).T) + b32
    magnitude = np.abs(x32.astype(np.float64)) @ np.abs(w32.astype(np.float64)).T + np.abs(b32)
    bf16_unit = np.spacing(np.abs(exact).astype(np.float32)).astype(np.float64) * 2**16
    orders = 2 * (k + 1) * 2.0**-24 * magnitude  # two float32 sums of k + 1 terms, each off by <= k eps |terms|
    diff = np.abs(to_numpy(got.float()).astype(np.float64) - t.float().numpy())
    assert (diff <= bf16_unit + orders).all()
    fused_err = np.abs(to_numpy(got.float()) - exact).sum()
    composed_err = np.abs(to_numpy((fc.mm(x, w.t()) + b).float()) - exact).sum()
    assert fused_err < composed_err


@pytest.mark.parametrize("capability", ["default", "avx2"])
def test_linear_bias_strided_operands_and_batches(capability):
    """A 3-D input, a transposed-storage weight, a strided bias and a strided input: the same values as the
    contiguous copies (the kernel reads any strides)."""
    cap = {} if capability == "default" else {"max_cpu_capability": capability}
    x, x32 = _rounded((2, 5, 24), fc.bfloat16)
    wt, wt32 = _rounded((24, 19), fc.bfloat16)  # W = wt^T: W's rows are strided
    bb, bb32 = _rounded((38,), fc.bfloat16)
    with fc.backends.cpu.flags(**cap):
        got = fc.linear(x, wt.t(), bb[::2])
        strided = fc.linear(x[:, :, ::2], wt.t()[:, ::2], bb[::2])
    assert tuple(got.shape) == (2, 5, 19)
    _check(got, _linear_expected(x32.reshape(10, 24), wt32.T, bb32[::2], fc.bfloat16).reshape(2, 5, 19), fc.bfloat16)
    _check(
        strided,
        _linear_expected(x32[:, :, ::2].reshape(10, 12), wt32.T[:, ::2], bb32[::2], fc.bfloat16).reshape(2, 5, 19),
        fc.bfloat16,
    )


@pytest.mark.parametrize("dtype", [fc.bfloat16, fc.float16], ids=["bfloat16", "float16"])
def test_linear_bias_empty_and_zero_depth(dtype):
    """No rows: an empty result; no input features: every row is the bias (bit for bit), or zeros."""
    b = fc.tensor([1.5, -2.0, 3.25]).to(dtype)
    assert tuple(fc.linear(fc.ones(0, 4).to(dtype), fc.ones(3, 4).to(dtype), b).shape) == (0, 3)
    z = fc.linear(fc.ones(2, 0).to(dtype), fc.ones(3, 0).to(dtype), b)
    assert z.dtype == dtype and z.float().tolist() == [[1.5, -2.0, 3.25]] * 2
    z = fc.linear(fc.ones(2, 0).to(dtype), fc.ones(3, 0).to(dtype))
    assert z.float().tolist() == [[0.0] * 3] * 2


def test_linear_bias_dtype_mismatch_is_refused():
    """A float32 bias with bfloat16 operands is refused naming the op, as PyTorch refuses it."""
    x = fc.ones(2, 3).to(fc.bfloat16)
    with pytest.raises(TypeError, match="linear"):
        fc.linear(x, fc.ones(4, 3).to(fc.bfloat16), fc.ones(4))


@pytest.mark.parametrize("m", [1, 3, 4, 5, 31, 33, 64])
@pytest.mark.parametrize("k", [1, 2, 7, 8, 9, 16, 19])
def test_transposed_right_operand_packing(k, m):
    """op(B) = W^T (linear's weight): its panels are 4 x 4 transposes of 32-bit pairs plus the loop for
    the leftover pairs (k / 2 not a multiple of 4, an odd k's last half pair) and columns (m % 4, the
    last panel's zero columns); every case equals the float32 product of the same values."""
    a, a32 = _rounded((27, k), fc.bfloat16)  # 16 rows on AMX tiles, 11 on vdpbf16ps
    w, w32 = _rounded((m, k), fc.bfloat16)
    _check(fc.mm(a, w.t()), _expected(a32, w32.T, fc.bfloat16), fc.bfloat16)
    big, big32 = _rounded((m, 2 * k + 3), fc.bfloat16)  # rows of W further apart than k
    _check(fc.mm(a, big[:, 3 : 3 + k].t()), _expected(a32, big32[:, 3 : 3 + k].T, fc.bfloat16), fc.bfloat16)


def _torch_product(a32: np.ndarray, b32: np.ndarray) -> np.ndarray:
    """PyTorch's product of the same bfloat16 values computed in float32, rounded once to bfloat16."""
    import torch

    a = torch.from_numpy(np.ascontiguousarray(a32)).bfloat16().float()
    b = torch.from_numpy(np.ascontiguousarray(b32)).bfloat16().float()
    return torch.matmul(a, b).bfloat16().float().numpy()


@pytest.mark.parametrize("n,k,m", [(1, 2, 1), (9, 6, 33), (17, 64, 40), (130, 784, 65)])
def test_left_operand_read_in_place(n, k, m):
    """op(A) with contiguous rows and an even depth is read where it is stored (no copy): a whole
    matrix, rows further apart than k (a column slice, starting at an odd element), a batch, and rows
    repeated by a zero stride; an odd depth (copied, padded) beside them. Each equals PyTorch's float32
    product of the same bfloat16 values."""
    b, b32 = _rounded((k, m), fc.bfloat16)
    a, a32 = _rounded((n, k), fc.bfloat16)
    _check(fc.mm(a, b), _torch_product(a32, b32), fc.bfloat16)
    wide, wide32 = _rounded((n, k + 5), fc.bfloat16)
    assert wide[:, 3 : 3 + k].stride() == (k + 5, 1)
    _check(fc.mm(wide[:, 3 : 3 + k], b), _torch_product(wide32[:, 3 : 3 + k], b32), fc.bfloat16)
    bat, bat32 = _rounded((3, n, k), fc.bfloat16)
    bb, bb32 = _rounded((3, k, m), fc.bfloat16)
    _check(fc.bmm(bat, bb), _torch_product(bat32, bb32), fc.bfloat16)
    row, row32 = _rounded((1, k), fc.bfloat16)
    rep = row.expand(n + 1, k)
    assert rep.stride()[0] == 0
    _check(fc.mm(rep, b), _torch_product(np.broadcast_to(row32, (n + 1, k)), b32), fc.bfloat16)
    odd, odd32 = _rounded((n, k + 1), fc.bfloat16)
    bo, bo32 = _rounded((k + 1, m), fc.bfloat16)
    _check(fc.mm(odd, bo), _torch_product(odd32, bo32), fc.bfloat16)


@pytest.mark.parametrize("n", [1, 7, 8, 13, 64, 517])
@pytest.mark.parametrize("k", [1, 8, 9, 21, 128])
def test_transposed_left_operand_packing(n, k):
    """op(A) = G^T (grad_weight's g^T, unit stride down the rows): packed in 8 x 8 transposed blocks plus
    the leftover rows (n % 8) and depths (k % 8, an odd k's zero pad); also with G's rows further apart
    than n. Each equals PyTorch's float32 product of the same bfloat16 values."""
    g, g32 = _rounded((k, n), fc.bfloat16)
    x, x32 = _rounded((k, 19), fc.bfloat16)
    assert g.t().stride() == (1, n)
    _check(fc.mm(g.t(), x), _torch_product(g32.T, x32), fc.bfloat16)
    big, big32 = _rounded((k, n + 3), fc.bfloat16)
    _check(fc.mm(big[:, 1 : 1 + n].t(), x), _torch_product(big32[:, 1 : 1 + n].T, x32), fc.bfloat16)


@pytest.mark.parametrize("m", [1, 15, 16, 17, 33, 70])
@pytest.mark.parametrize("k", [1, 2, 31, 32, 33, 65, 97])
def test_right_operand_panels(k, m):
    """op(B)'s panels of 32 columns: row-major op(B) (two rows interleaved per register) and transposed
    op(B) (16 x 16 transposes of 32-bit pairs), over depths of more than 16 pairs, odd depths (a last
    half pair), columns past 16 and past a panel, and rows further apart than their length (slices at
    an odd element); op(B) with neither unit stride takes the loop. Each equals PyTorch's float32 product
    of the same bfloat16 values."""
    a, a32 = _rounded((41, k), fc.bfloat16)  # 32 rows on AMX tiles, 9 on vdpbf16ps
    b, b32 = _rounded((k, m), fc.bfloat16)
    _check(fc.mm(a, b), _torch_product(a32, b32), fc.bfloat16)
    wide, wide32 = _rounded((k, m + 5), fc.bfloat16)
    _check(fc.mm(a, wide[:, 1 : 1 + m]), _torch_product(a32, wide32[:, 1 : 1 + m]), fc.bfloat16)
    w, w32 = _rounded((m, k), fc.bfloat16)
    _check(fc.mm(a, w.t()), _torch_product(a32, w32.T), fc.bfloat16)
    big, big32 = _rounded((m, k + 3), fc.bfloat16)
    _check(fc.mm(a, big[:, 3 : 3 + k].t()), _torch_product(a32, big32[:, 3 : 3 + k].T), fc.bfloat16)
    every, every32 = _rounded((k, 2 * m), fc.bfloat16)
    assert every[:, ::2].stride() == (2 * m, 2)
    _check(fc.mm(a, every[:, ::2]), _torch_product(a32, every32[:, ::2]), fc.bfloat16)
    rep = b[:1].expand(k, m)  # one row repeated (a zero row stride)
    _check(fc.mm(a, rep), _torch_product(a32, np.repeat(b32[:1], k, axis=0)), fc.bfloat16)


def _torch_bf16(a32: np.ndarray, b32: np.ndarray, bias32: np.ndarray | None = None):
    """PyTorch's own bfloat16 product (addmm with a bias) of the same values, and what two float32 summation
    orders may differ by beyond one bfloat16 unit: 2 (k + 1) eps |a| |b| (+ |bias|)."""
    import torch

    ta = torch.from_numpy(np.ascontiguousarray(a32)).bfloat16()
    tb = torch.from_numpy(np.ascontiguousarray(b32)).bfloat16()
    if bias32 is None:
        t = torch.mm(ta, tb)
    else:
        t = torch.addmm(torch.from_numpy(bias32).bfloat16(), ta, tb)
    finite = np.where(np.isfinite(a32), a32, 0).astype(np.float64), np.where(np.isfinite(b32), b32, 0)
    magnitude = np.abs(finite[0]) @ np.abs(finite[1]).astype(np.float64)
    if bias32 is not None:
        magnitude = magnitude + np.abs(bias32)
    ref = t.float().numpy()
    unit = np.spacing(np.abs(np.where(np.isfinite(ref), ref, 0)).astype(np.float32)).astype(np.float64) * 2**16
    return ref, unit + 2 * (a32.shape[1] + 1) * 2.0**-24 * magnitude


def _check_against_torch(got: fc.Tensor, a32: np.ndarray, b32: np.ndarray, bias32: np.ndarray | None = None):
    ref, tol = _torch_bf16(a32, b32, bias32)
    g = to_numpy(got.float()).astype(np.float64)
    assert got.dtype == fc.bfloat16 and g.shape == ref.shape
    np.testing.assert_array_equal(np.isnan(g), np.isnan(ref))
    inf = np.isinf(ref)
    np.testing.assert_array_equal(g[inf], ref[inf])
    fin = np.isfinite(ref)
    assert (np.abs(g[fin] - ref[fin]) <= tol[fin]).all()


# (n, k, m): rows past whole AMX tiles of 32 and 16 (the rest on vdpbf16ps), one row, columns past a panel,
# odd depths, depths whose pairs split into steps of 14, 5 or 16, a prime number of pairs (397: padded to
# steps of 16) and a large depth.
AMX_EDGE_SHAPES = [
    (16, 1, 1),
    (1, 64, 64),
    (17, 3, 5),
    (31, 33, 47),
    (32, 32, 32),
    (48, 794, 40),
    (50, 784, 33),
    (128, 10, 70),
    (65, 4099, 18),
]


@pytest.mark.parametrize("n,k,m", AMX_EDGE_SHAPES)
def test_bf16_edge_shapes_against_torch(n, k, m):
    """Row counts past whole tiles, odd and padded depths, columns past a panel; plain, transposed left
    (grad_weight's g^T) and transposed right (linear's W^T) operands, and linear with a bias (one rounding):
    each within one bfloat16 unit plus two float32 summation orders of PyTorch's bfloat16 product."""
    a, a32 = _rounded((n, k), fc.bfloat16)
    b, b32 = _rounded((k, m), fc.bfloat16)
    _check_against_torch(fc.mm(a, b), a32, b32)
    at, at32 = _rounded((k, n), fc.bfloat16)
    _check_against_torch(fc.mm(at.t(), b), at32.T, b32)
    w, w32 = _rounded((m, k), fc.bfloat16)
    _check_against_torch(fc.mm(a, w.t()), a32, w32.T)
    bias, bias32 = _rounded((m,), fc.bfloat16)
    _check_against_torch(fc.linear(a, w, bias), a32, w32.T, bias32)


@pytest.mark.parametrize("n,k,m", [(40, 64, 33), (33, 795, 20)])
def test_bf16_infinities_and_nan(n, k, m):
    """Infinities and NaN in either operand (and in a padded depth: 795 values, 398 pairs, padded to 400)
    give PyTorch's infinities and NaN at the same places (0 * inf and inf - inf are NaN, the zero padding
    adds none); the other results as in the finite tests."""
    a, a32 = _rounded((n, k), fc.bfloat16)
    b, b32 = _rounded((k, m), fc.bfloat16)
    a32 = a32.copy()
    b32 = b32.copy()
    a32[3, 5] = np.inf
    a32[20, k - 1] = -np.inf
    a32[21, 0] = np.inf
    a32[21, 7] = -np.inf  # row 21: inf - inf = NaN wherever both products are finite
    b32[2, 4] = np.nan
    b32[k - 1, 1] = 0.0  # -inf * 0 = NaN in row 20, column 1
    a = fc.tensor(a32).to(fc.bfloat16)
    b = fc.tensor(b32).to(fc.bfloat16)
    _check_against_torch(fc.mm(a, b), a32, b32)
    bias32 = to_numpy(_rounded((m,), fc.bfloat16)[0].float()).copy()
    bias32[0] = np.inf
    _check_against_torch(
        fc.linear(a, fc.tensor(b32.T.copy()).to(fc.bfloat16), fc.tensor(bias32).to(fc.bfloat16)), a32, b32, bias32
    )


def test_amx_and_vdpbf16ps_agree():
    """The two multiply paths (where the CPU has AMX-BF16; elsewhere both are the same path) differ only
    by float32 summation order: at most a bfloat16 unit apart, and equal on exact sums (small integers)."""
    a, a32 = _rounded((130, 784), fc.bfloat16)
    b, b32 = _rounded((784, 65), fc.bfloat16)
    got = {}
    ints = {}
    ai = fc.tensor(RNG.integers(-4, 5, (70, 96)).astype(np.float32)).to(fc.bfloat16)
    bi = fc.tensor(RNG.integers(-4, 5, (96, 40)).astype(np.float32)).to(fc.bfloat16)
    for on in (True, False):
        with fc.backends.cpu.flags(bf16_amx=on):
            got[on] = to_numpy(fc.mm(a, b).float())
            ints[on] = to_numpy(fc.mm(ai, bi).float())
    _, tol = _torch_bf16(a32, b32)
    assert (np.abs(got[True].astype(np.float64) - got[False]) <= tol).all()
    np.testing.assert_array_equal(ints[True], ints[False])


# (n, k, m): fewer rows than output columns, m a multiple of 16 and an even depth (the AMX route's C^T form):
# one 16-row block, 32-row blocks and a 16-row tail, ragged last panels of C^T (n % 32), a depth in one step
# (k = 2) and in steps of 14 pairs (784), and shapes either side of the route (n == m, m % 16 != 0, odd k).
WIDE_SHAPES = [(16, 2, 32), (17, 30, 48), (31, 784, 512), (33, 64, 80), (100, 64, 112), (128, 512, 512)]
WIDE_SHAPES += [(48, 32, 48), (20, 30, 47), (20, 31, 48)]


@pytest.mark.parametrize("bias", [True, False], ids=["bias", "no_bias"])
@pytest.mark.parametrize("n,k,m", WIDE_SHAPES)
def test_linear_wider_than_rows_matches_float32_product(n, k, m, bias):
    """linear's W^T wider than the input has rows: on AMX the kernel multiplies W by x^T, packing x^T instead
    of W^T, and writes the result back transposed with the bias of each column added before the one rounding."""
    x, x32 = _rounded((n, k), fc.bfloat16)
    w, w32 = _rounded((m, k), fc.bfloat16)
    b, b32 = _rounded((m,), fc.bfloat16)
    got = fc.linear(x, w, b if bias else None)
    _check(got, _linear_expected(x32, w32, b32 if bias else None, fc.bfloat16), fc.bfloat16)


def test_wider_than_rows_batched_and_strided():
    """The C^T form on batches (bmm of a transposed right operand), strided left rows and a strided bias."""
    a, a32 = _rounded((3, 20, 34), fc.bfloat16)
    b, b32 = _rounded((3, 64, 34), fc.bfloat16)
    _check(fc.bmm(a, b.transpose(1, 2)), _expected(a32, b32.transpose(0, 2, 1), fc.bfloat16), fc.bfloat16)
    x, x32 = _rounded((40, 60), fc.bfloat16)
    w, w32 = _rounded((96, 30), fc.bfloat16)
    bb, bb32 = _rounded((192,), fc.bfloat16)
    got = fc.linear(x[::2, ::2], w, bb[::2])
    _check(got, _linear_expected(x32[::2, ::2], w32, bb32[::2], fc.bfloat16), fc.bfloat16)
