"""parallel_for's dynamic chunks (Note [Dynamic chunks], flambeau/parallel.h) seen
through the kernels that use it: reductions, scans and sort give bitwise the same
result on every run at a given thread count (per-chunk partials are combined in
chunk order, whichever thread ran a chunk), agree with float64 NumPy at 1, 2 and 3
threads, on the GEMM pool and on the OpenMP fallback (several Python threads at
once; backends.cpu.gemm_pool = False); an error raised inside a chunk reaches Python as the
right exception type; forked children still compute. The chunk arithmetic itself
(exact cover, grain, nesting, exceptions) is tested in C++: tests/cpp/test_parallel_for.cpp."""

from __future__ import annotations

import os
import threading

import flambeau_core as fc
import numpy as np
import pytest
from helpers import to_numpy


def data(shape, seed=0, dtype=np.float32):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


# (name, flambeau op, float64 NumPy oracle, rtol, atol). Sizes: above every grain, odd lengths.
CASES = {
    "sum all 3M": ((3_000_017,), lambda t: t.sum(), lambda x: x.sum(), 1e-5, 1e-2),
    "sum all 16M": ((1 << 24,), lambda t: t.sum(), lambda x: x.sum(), 1e-5, 5e-2),
    "sum dim -1": ((1001, 999), lambda t: t.sum(-1), lambda x: x.sum(-1), 1e-5, 1e-4),
    "sum dim 0": ((999, 1001), lambda t: t.sum(0), lambda x: x.sum(0), 1e-5, 1e-4),
    "mean all": ((3_000_017,), lambda t: t.mean(), lambda x: x.mean(), 1e-5, 1e-6),
    "mean dim -1": ((1001, 999), lambda t: t.mean(-1), lambda x: x.mean(-1), 1e-5, 1e-6),
    "var dim -1": ((1001, 999), lambda t: t.var(-1), lambda x: x.var(-1, ddof=1), 1e-5, 1e-6),
    "var all": ((2_000_003,), lambda t: t.var(), lambda x: x.var(ddof=1), 1e-5, 1e-6),
    "max dim -1": ((1001, 999), lambda t: t.max(-1)[0], lambda x: x.max(-1), 0, 0),
    "cumsum 1-D": ((3_000_017,), lambda t: t.cumsum(0), lambda x: x.cumsum(0), 1e-4, 5e-2),
    "cumsum dim -1": ((1001, 999), lambda t: t.cumsum(-1), lambda x: x.cumsum(-1), 1e-5, 1e-3),
    "cumsum dim 0": ((999, 1001), lambda t: t.cumsum(0), lambda x: x.cumsum(0), 1e-5, 1e-3),
    "sort 1-D": ((1_000_003,), lambda t: t.sort()[0], lambda x: np.sort(x), 0, 0),
    "sort dim -1": ((1001, 999), lambda t: t.sort(-1)[0], lambda x: np.sort(x, -1), 0, 0),
    "exp": ((1_000_003,), lambda t: t.exp(), lambda x: np.exp(x), 1e-6, 0),
}


@pytest.mark.parametrize("name", list(CASES))
def test_reproducible_and_correct(name, threads):
    shape, op, ref, rtol, atol = CASES[name]
    x = data(shape, seed=len(name))
    t = fc.tensor(x)
    first = to_numpy(op(t))
    np.testing.assert_allclose(first, ref(x.astype(np.float64)), rtol=rtol, atol=atol)
    for _ in range(4):
        np.testing.assert_array_equal(to_numpy(op(t)), first)  # bitwise: the same chunks, combined in order


@pytest.mark.parametrize("name", ["sum all 3M", "mean dim -1", "var all", "cumsum 1-D", "sum dim -1"])
def test_same_bits_from_concurrent_callers(name):
    """Python threads calling at once: one holds the GEMM pool, the others run the same chunks on
    OpenMP; every result equals the single caller's bit for bit."""
    shape, op, _, _, _ = CASES[name]
    t = fc.tensor(data(shape, seed=3))
    old = fc.get_num_threads()
    fc.set_num_threads(2)
    try:
        want = to_numpy(op(t))
        bad, errors = [], []

        def work():
            try:
                for _ in range(5):
                    if not np.array_equal(to_numpy(op(t)), want):
                        bad.append(1)
            except Exception as e:  # noqa: BLE001  (reported below)
                errors.append(e)

        ts = [threading.Thread(target=work) for _ in range(3)]
        for th in ts:
            th.start()
        for th in ts:
            th.join()
        assert not errors and not bad
    finally:
        fc.set_num_threads(old)


def _two_threads_values() -> list[float]:
    old = fc.get_num_threads()
    fc.set_num_threads(2)
    try:
        x = fc.tensor(np.random.default_rng(5).standard_normal(3_000_017).astype(np.float32))
        y = fc.tensor(np.random.default_rng(6).standard_normal((1001, 999)).astype(np.float32))
        return [float(v) for v in (x.sum(), x.mean(), x.var(), x.cumsum(0)[-1], y.sum(-1).sum(), y.var(-1)[7])]
    finally:
        fc.set_num_threads(old)


def test_openmp_fallback_gives_the_pools_bits(cpu_settings):
    """backends.cpu.gemm_pool = False runs every parallel_for on OpenMP: same chunks, so the same bits."""
    on_pool = _two_threads_values()
    cpu_settings(gemm_pool=False)
    assert _two_threads_values() == on_pool


def test_static_split_escape_hatch(cpu_settings):
    """backends.cpu.parallel_for_schedule = "static": the former one-chunk-per-thread OpenMP split,
    same values (within rounding: other chunk boundaries), errors still raised."""
    cpu_settings(parallel_for_schedule="static")
    old = fc.get_num_threads()
    fc.set_num_threads(2)
    try:
        a = np.random.default_rng(5).standard_normal(3_000_017).astype(np.float32)
        x = fc.tensor(a)
        assert abs(float(x.sum()) - a.astype(np.float64).sum()) < 1e-2
        np.testing.assert_allclose(np.asarray(memoryview(x.cumsum(0))), a.astype(np.float64).cumsum(), atol=5e-2)
        np.testing.assert_array_equal(np.asarray(memoryview(x.sort()[0])), np.sort(a))
        idx = np.zeros((1, 3_000_017), dtype=np.int64)
        idx[0, -1] = 3_000_017
        with pytest.raises(IndexError, match="out of bounds"):
            x.view(1, -1).gather(1, fc.tensor(idx))
    finally:
        fc.set_num_threads(old)


@pytest.mark.parametrize("n_threads", [2, 3])
def test_affine_schedule_gives_the_dynamic_bits(n_threads, cpu_settings):
    """backends.cpu.parallel_for_schedule = "affine" (Note [Affine chunks]): the same chunks, claimed
    by each pool thread from its own share first, so every chunk-order reduction, scan and sort gives
    bitwise the values of "dynamic", run after run; a GEMM (pool blocks too) the same bits."""
    old = fc.get_num_threads()
    fc.set_num_threads(n_threads)
    try:
        inputs = {name: fc.tensor(data(CASES[name][0], seed=len(name))) for name in CASES}
        a = fc.tensor(data((300, 257), seed=1))
        b = fc.tensor(data((257, 301), seed=2))
        dynamic = {name: to_numpy(CASES[name][1](t)) for name, t in inputs.items()}
        mm = to_numpy(a @ b)
        cpu_settings(parallel_for_schedule="affine")
        for _ in range(3):
            for name, t in inputs.items():
                np.testing.assert_array_equal(to_numpy(CASES[name][1](t)), dynamic[name], err_msg=name)
            np.testing.assert_array_equal(to_numpy(a @ b), mm)
        np.testing.assert_allclose(mm, to_numpy(a).astype(np.float64) @ to_numpy(b), rtol=1e-4, atol=1e-4)
    finally:
        fc.set_num_threads(old)


def test_affine_schedule_concurrent_callers(cpu_settings):
    """Under "affine", Python threads calling at once (one on the pool, the others on OpenMP) get the
    single caller's bits."""
    cpu_settings(parallel_for_schedule="affine")
    old = fc.get_num_threads()
    fc.set_num_threads(2)
    try:
        t = fc.tensor(data((3_000_017,), seed=3))
        want = to_numpy(t.cumsum(0))
        bad = []

        def work():
            for _ in range(5):
                if not np.array_equal(to_numpy(t.cumsum(0)), want):
                    bad.append(1)

        ts = [threading.Thread(target=work) for _ in range(3)]
        for th in ts:
            th.start()
        for th in ts:
            th.join()
        assert not bad
    finally:
        fc.set_num_threads(old)


@pytest.mark.parametrize("schedule", ["dynamic", "static", "affine"])
def test_error_inside_a_chunk_reaches_python(threads, schedule, cpu_settings):
    """gather checks indices inside its parallel loop: the chunk's IndexError is rethrown, under every
    backends.cpu.parallel_for_schedule."""
    cpu_settings(parallel_for_schedule=schedule)
    x = fc.tensor(data((4, 100_000)))
    idx = np.random.default_rng(1).integers(0, 100_000, size=(4, 100_000))
    idx[3, 99_999] = 100_000
    with pytest.raises(IndexError, match="out of bounds"):
        x.gather(1, fc.tensor(idx))
    # The pool is usable afterwards, and the loop still covers everything.
    idx[3, 99_999] = 5
    got = to_numpy(x.gather(1, fc.tensor(idx)))
    np.testing.assert_array_equal(got, np.take_along_axis(to_numpy(x), idx, 1))


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_forked_child_computes():
    """A forked child has no pool workers: the caller runs every chunk itself."""
    fc.set_num_threads(2)
    x = data((3_000_017,), seed=9)
    t = fc.tensor(x)
    want = float(t.sum())
    pid = os.fork()
    if pid == 0:  # pragma: no cover  (child)
        ok = float(t.sum()) == want and np.allclose(to_numpy(t.exp()), np.exp(x), rtol=1e-6)
        os._exit(0 if ok else 1)
    _, status = os.waitpid(pid, 0)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0


# ---- the kernels changed with it: float32 row sums (AVX-512 row_sum), float16/bfloat16 loop grain ----


@pytest.mark.parametrize(
    "n", [1, 2, 15, 16, 17, 31, 32, 33, 47, 48, 63, 64, 65, 127, 128, 129, 999, 1000, 4095, 4096, 4097, 8193, 70001]
)
def test_row_sum_lengths_and_tails(n):
    """Every tail length of the vector loop (masked load, 16- and 32-wide steps) and 4096-element blocks."""
    rows = 3
    x = data((rows, n), seed=n)
    t = fc.tensor(x)
    ref = x.astype(np.float64).sum(-1)
    np.testing.assert_allclose(to_numpy(t.sum(-1)), ref, rtol=2e-6, atol=1e-5 * np.sqrt(n))
    np.testing.assert_allclose(to_numpy(t.mean(-1)), ref / n, rtol=2e-6, atol=1e-5 / np.sqrt(n))
    # Strided rows (a column slice) and a row of one tensor viewed from an odd offset.
    np.testing.assert_allclose(to_numpy(t[:, 1:].sum(-1)), x[:, 1:].astype(np.float64).sum(-1), rtol=2e-6, atol=1e-4)
    big = fc.tensor(data((n + 5,), seed=n + 1))
    np.testing.assert_allclose(
        float(big[3 : 3 + n].sum()), to_numpy(big)[3 : 3 + n].astype(np.float64).sum(), rtol=2e-6, atol=1e-4
    )


def test_row_sum_accuracy_and_specials():
    """Blocked float32 lanes, float64 across blocks: a long constant row stays within a few float32 ulps
    (a naive float32 loop would be off by percents); inf and NaN propagate."""
    n = 1 << 22
    t = fc.tensor(np.full((n,), 0.1, dtype=np.float32))
    np.testing.assert_allclose(float(t.sum()), n * float(np.float32(0.1)), rtol=1e-6)
    x = data((4, 5000), seed=2)
    x[1, 4999] = np.inf
    x[2, 17] = np.nan
    x[3, 100], x[3, 4000] = np.inf, -np.inf
    got = to_numpy(fc.tensor(x).sum(-1))
    assert np.isfinite(got[0]) and got[1] == np.inf and np.isnan(got[2]) and np.isnan(got[3])


@pytest.mark.parametrize("dtype", ["float16", "bfloat16"])
@pytest.mark.parametrize("op", ["add", "mul", "sub", "div", "exp", "neg"])
def test_half_loops_above_their_grain_match_torch(dtype, op, threads):
    """float16/bfloat16 loops run on several threads above kHalfLoopGrain (128Ki): values equal torch's."""
    import torch

    n = (1 << 20) + 77
    a = torch.rand(n) * 4 - 2
    b = torch.rand(n) * 4 + 0.5
    ta, tb = a.to(getattr(torch, dtype)), b.to(getattr(torch, dtype))
    fa = fc.tensor(ta.float().numpy()).to(getattr(fc, dtype))
    fb = fc.tensor(tb.float().numpy()).to(getattr(fc, dtype))
    unary = op in ("exp", "neg")
    got = getattr(fc, op)(fa) if unary else getattr(fc, op)(fa, fb)
    want = getattr(torch, op)(ta) if unary else getattr(torch, op)(ta, tb)
    g = to_numpy(got.to(fc.float32))
    w = want.float().numpy()
    if op == "exp":  # fused polynomial exp (half_convert): within one unit in the last place
        np.testing.assert_allclose(g, w, rtol=1e-2 if dtype == "bfloat16" else 1e-3)
    else:
        np.testing.assert_array_equal(g, w)
    # Non-contiguous operands take the blocked conversion loop, also split across threads.
    if not unary:
        got_s = getattr(fc, op)(fa[1::2], fb[1::2])
        np.testing.assert_array_equal(
            to_numpy(got_s.to(fc.float32)), getattr(torch, op)(ta[1::2], tb[1::2]).float().numpy()
        )
