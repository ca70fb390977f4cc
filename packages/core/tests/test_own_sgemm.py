"""flambeau's own float32 GEMM (Note [Own sgemm], src/cpu/linalg/sgemm_avx512.cpp) against
NumPy in float64: mm with every transpose form, the kernel's row and column tails
(6-row blocks, 64-column panels, the narrow last panel), depth chunks (k > 1024),
panel strides that are packed rather than read in place, strided operands; linear
with its bias as the accumulators' start; _linear_backward at the MLP's shapes;
inf/NaN; the same bits at any thread count. The setting that switches the backend
(backends.cpu.sgemm) and its errors are test_backends_cpu.py's.
The own kernel runs on AVX-512 CPUs only: elsewhere its cases skip with that reason,
and the OpenBLAS cases still run."""

from __future__ import annotations

import itertools
import os
import subprocess
import sys

import flambeau_core as fc
import numpy as np
import pytest
from helpers import to_numpy
from hypothesis import given, settings
from hypothesis import strategies as st


def backend(name: str | None = None) -> str:
    """The sgemm setting (Note [Settings]), switched to `name` first when given."""
    if name is not None:
        fc.backends.cpu.sgemm = name
    return fc.backends.cpu.sgemm


HAS_AVX512 = fc._C._cpu_capability() == "avx512"


@pytest.fixture(params=["own", "openblas"])
def sgemm(request):
    if request.param == "own" and not HAS_AVX512:
        pytest.skip(f"the own sgemm needs an AVX-512 CPU; this one runs {fc._C._cpu_capability()!r} kernels")
    old = backend()
    backend(request.param)
    yield request.param
    backend(old)


def rand(shape, seed):
    return np.random.default_rng(seed).standard_normal(shape).astype(np.float32)


def operand(x, trans):
    """x as a flambeau tensor; with trans, stored transposed and viewed back (a non-unit row stride)."""
    if trans:
        return fc.tensor(np.ascontiguousarray(x.T)).transpose(0, 1)
    return fc.tensor(x)


def check(got, ref, k):
    # float32 products summed over k: the error grows like sqrt(k) * eps * |a||b|.
    scale = max(1.0, float(np.abs(ref).max()))
    np.testing.assert_allclose(to_numpy(got), ref, rtol=0, atol=4e-6 * np.sqrt(k) * scale)


# m: full 6-row blocks and every remainder; n: whole panels, narrow last panels of 1-4 vectors and
# a partial vector; k: short, one chunk, two chunks; 128 and 1024 columns give panel strides that are
# packed (multiples of 512 bytes); the last two take the copied-op(A) path when ta.
SHAPES = [
    (128, 512, 784),
    (128, 784, 512),
    (512, 784, 128),
    (13, 130, 1030),
    (8, 64, 4096),
    (200, 16, 2100),
    (65, 129, 260),
    (31, 1024, 70),
    (127, 128, 128),
    (64, 200, 171),
    (9, 2048, 300),
    # transposed op(A) spanning more than 1 MiB: copied 48 rows at a time (a partial last group and
    # row block), its column blocks widened
    (301, 200, 1100),
    (2000, 100, 200),
]


@pytest.mark.parametrize("m,n,k", SHAPES)
@pytest.mark.parametrize("ta,tb", list(itertools.product([False, True], repeat=2)))
def test_mm_matches_numpy(sgemm, m, n, k, ta, tb):
    a, b = rand((m, k), 1), rand((k, n), 2)
    got = fc.mm(operand(a, ta), operand(b, tb))
    check(got, a.astype(np.float64) @ b.astype(np.float64), k)


@pytest.mark.parametrize("m,n,k", [(128, 512, 784), (61, 333, 1500), (130, 70, 200)])
def test_mm_strided_slices(sgemm, m, n, k):
    # Operands that are slices of larger matrices: row strides (lda, ldb) above the row length.
    big_a, big_b = rand((m + 3, k + 37), 3), rand((k + 5, n + 19), 4)
    a, b = big_a[2 : 2 + m, 5 : 5 + k], big_b[1 : 1 + k, 7 : 7 + n]
    got = fc.mm(fc.tensor(big_a)[2 : 2 + m, 5 : 5 + k], fc.tensor(big_b)[1 : 1 + k, 7 : 7 + n])
    check(got, a.astype(np.float64) @ b.astype(np.float64), k)


@settings(max_examples=60, deadline=None, derandomize=True)
@given(
    m=st.integers(1, 150),
    n=st.integers(1, 300),
    k=st.integers(1, 1200),
    ta=st.booleans(),
    tb=st.booleans(),
    pad=st.integers(0, 40),
    backend_name=st.sampled_from(["own", "openblas"] if HAS_AVX512 else ["openblas"]),
)
def test_mm_fuzz(m, n, k, ta, tb, pad, backend_name):
    # Random sizes across the own kernel's limits (8 rows, 16 columns, 2M multiply-adds, 1024 deep),
    # stored with `pad` extra columns so that row strides are not the row length.
    old = backend()
    backend(backend_name)
    try:
        a, b = rand((m, k), m + n), rand((k, n), k + pad)
        sa = np.zeros((k, m + pad) if ta else (m, k + pad), np.float32)
        sb = np.zeros((n, k + pad) if tb else (k, n + pad), np.float32)
        if ta:
            sa[:, :m] = a.T
            ta_view = fc.tensor(sa)[:, :m].transpose(0, 1)
        else:
            sa[:, :k] = a
            ta_view = fc.tensor(sa)[:, :k]
        if tb:
            sb[:, :k] = b.T
            tb_view = fc.tensor(sb)[:, :k].transpose(0, 1)
        else:
            sb[:, :n] = b
            tb_view = fc.tensor(sb)[:, :n]
        check(fc.mm(ta_view, tb_view), a.astype(np.float64) @ b.astype(np.float64), k)
    finally:
        backend(old)


@pytest.mark.parametrize("n,i,o", [(128, 784, 512), (128, 512, 512), (37, 2100, 70), (300, 64, 33), (50, 128, 1024)])
def test_linear_bias_starts_the_sum(sgemm, threads, n, i, o):
    x, w, bias = rand((n, i), 5), rand((o, i), 6), rand(o, 7)
    got = fc.linear(fc.tensor(x), fc.tensor(w), fc.tensor(bias))
    check(got, x.astype(np.float64) @ w.T.astype(np.float64) + bias, i)


@pytest.mark.parametrize("layer", [(784, 512), (512, 512), (512, 10)])
def test_linear_backward_mlp_shapes(sgemm, threads, layer):
    i, o = layer
    x, w, g = rand((128, i), 8), rand((o, i), 9), rand((128, o), 10)
    gi, gw, gb = fc._C._linear_backward(fc.tensor(g), fc.tensor(x), fc.tensor(w), True, True, True)
    g64 = g.astype(np.float64)
    check(gi, g64 @ w.astype(np.float64), o)
    check(gw, g64.T @ x.astype(np.float64), 128)
    np.testing.assert_allclose(to_numpy(gb), g64.sum(0), rtol=1e-5, atol=1e-5)


def test_same_bits_at_any_thread_count(sgemm):
    # Each element sums over k in order whatever the split into blocks (Note [Own sgemm]). OpenBLAS's blocks
    # (one serial call per thread, Note [GEMM threads]) may add in another order than one call: the same
    # bits with its SkylakeX kernels, not with its Haswell ones (AMD Zen 3); there, each thread count's
    # result within float32 rounding of the exact product.
    a, b = rand((128, 784), 11), rand((784, 784), 12)
    old = fc.get_num_threads()
    try:
        results = []
        for nt in (1, 2, 3):
            fc.set_num_threads(nt)
            results.append(fc.mm(fc.tensor(a), fc.tensor(b)))
    finally:
        fc.set_num_threads(old)
    if sgemm == "own":
        first = to_numpy(results[0])
        assert all(np.array_equal(first, to_numpy(r)) for r in results[1:])
    else:
        for r in results:
            check(r, a.astype(np.float64) @ b.astype(np.float64), 784)


def test_own_and_openblas_agree():
    if not HAS_AVX512:
        pytest.skip(f"the own sgemm needs an AVX-512 CPU; this one runs {fc._C._cpu_capability()!r} kernels")
    a, b = fc.tensor(rand((96, 700), 13)), fc.tensor(rand((700, 300), 14))
    old = backend()
    try:
        own = to_numpy(fc.mm(a, b)) if backend("own") == "own" else None
        blas = to_numpy(fc.mm(a, b)) if backend("openblas") == "openblas" else None
    finally:
        backend(old)
    np.testing.assert_allclose(own, blas, rtol=0, atol=1e-4 * np.abs(blas).max())


def test_inf_and_nan_propagate(sgemm):
    a, b = rand((64, 300), 15), rand((300, 200), 16)
    a[3, 7] = np.inf
    a[40, 100] = np.nan
    b[5, 150] = -np.inf
    with np.errstate(invalid="ignore", over="ignore"):
        ref = a.astype(np.float64) @ b.astype(np.float64)
    got = to_numpy(fc.mm(fc.tensor(a), fc.tensor(b)))
    np.testing.assert_array_equal(np.isnan(got), np.isnan(ref))
    np.testing.assert_array_equal(np.isposinf(got), np.isposinf(ref))
    np.testing.assert_array_equal(np.isneginf(got), np.isneginf(ref))
    finite = np.isfinite(ref)
    np.testing.assert_allclose(got[finite], ref[finite], rtol=0, atol=4e-6 * np.sqrt(300) * np.abs(ref[finite]).max())


def test_nan_in_the_output_buffer_is_not_read(sgemm):
    # beta == 0: the output's old contents never reach the result (mm's out= reuses a buffer).
    a, b = rand((64, 256), 17), rand((256, 128), 18)
    out = fc.tensor(np.full((64, 128), np.nan, dtype=np.float32))
    fc.mm(fc.tensor(a), fc.tensor(b), out=out)
    check(out, a.astype(np.float64) @ b.astype(np.float64), 256)


def run_python(code, **env):
    full = {**os.environ, **env}
    return subprocess.run([sys.executable, "-c", code], env=full, capture_output=True, text=True, timeout=120)


SIZE_LIMITS = r"""
import resource
resource.setrlimit(resource.RLIMIT_AS, (8 << 30, 8 << 30))
import flambeau_core as fc

x = fc.randn(3, 5)
one = fc.randn(1, 1)
cases = {
    "softmax": lambda: fc.softmax(x.expand(2**40, 3, 5), -1),
    "log_softmax": lambda: fc.log_softmax(x.expand(2**40, 3, 5), -1),
    "softmax_dim0": lambda: fc.softmax(x.expand(2**33, 3, 5), 0),
    "softmax_row": lambda: fc.softmax(fc.randn(1).expand(2**62), 0),
    "dot": lambda: fc.dot(fc.randn(1).expand(2**31 + 1), fc.randn(1).expand(2**31 + 1)),
    "mm_k": lambda: fc.mm(one.expand(8, 2**40), one.expand(2**40, 32)),
    "mm_m": lambda: fc.mm(one.expand(2**40, 64), fc.randn(64, 64)),
    "linear": lambda: fc.linear(one.expand(2**40, 64), fc.randn(64, 64)),
    "mm_k_int_max": lambda: fc.mm(one.expand(16, 2**31 - 1), one.expand(2**31 - 1, 16)),
}
for name, f in cases.items():
    try:
        f()
        print(name, "returned")
    except (RuntimeError, ValueError, MemoryError) as e:
        print(name, type(e).__name__, str(e).splitlines()[0])
"""


def test_huge_expanded_products_raise():
    # Stride-0 views of 2**31 .. 2**62 elements into the GEMM and softmax rows: each call raises a
    # Python error naming the op or the allocation (in a child with 8 GiB of address space, so a
    # size that wraps shows up as a crash or a refused allocation, never as a read outside storage).
    r = run_python(SIZE_LIMITS)
    assert r.returncode == 0, r.stderr
    lines = dict(line.split(" ", 1) for line in r.stdout.strip().splitlines())
    assert set(lines) == {
        "softmax",
        "log_softmax",
        "softmax_dim0",
        "softmax_row",
        "dot",
        "mm_k",
        "mm_m",
        "linear",
        "mm_k_int_max",
    }
    for name in ("dot", "mm_k"):
        assert "matrix dims above 2^31 are not supported" in lines[name], lines[name]
    for name in ("softmax", "log_softmax", "softmax_dim0", "mm_m", "linear"):
        assert "out of memory" in lines[name], lines[name]
    assert "too large" in lines["softmax_row"], lines["softmax_row"]
    assert lines["mm_k_int_max"].startswith("MemoryError"), lines["mm_k_int_max"]
