"""parallel_for's dynamic chunks (Note [Dynamic chunks], flambeau/parallel.h) seen
through the kernels that use it: reductions, scans and sort give bitwise the same
result on every run at a given thread count (per-chunk partials are combined in
chunk order, whichever thread ran a chunk), agree with float64 NumPy at 1, 2 and 3
threads, on the GEMM pool and on the OpenMP fallback (several Python threads at
once; FLAMBEAU_GEMM_POOL=0); an error raised inside a chunk reaches Python as the
right exception type; forked children still compute. The chunk arithmetic itself
(exact cover, grain, nesting, exceptions) is tested in C++: tests/cpp/test_parallel_for.cpp."""

from __future__ import annotations

import os
import subprocess
import sys
import threading

import flambeau_core as fc
import numpy as np
import pytest


def npy(t):
    return np.asarray(memoryview(t.contiguous()))


@pytest.fixture(params=[1, 2, 3])
def threads(request):
    old = fc.get_num_threads()
    fc.set_num_threads(request.param)
    yield request.param
    fc.set_num_threads(old)


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
    first = npy(op(t))
    np.testing.assert_allclose(first, ref(x.astype(np.float64)), rtol=rtol, atol=atol)
    for _ in range(4):
        np.testing.assert_array_equal(npy(op(t)), first)  # bitwise: the same chunks, combined in order


@pytest.mark.parametrize("name", ["sum all 3M", "mean dim -1", "var all", "cumsum 1-D", "sum dim -1"])
def test_same_bits_from_concurrent_callers(name):
    """Python threads calling at once: one holds the GEMM pool, the others run the same chunks on
    OpenMP; every result equals the single caller's bit for bit."""
    shape, op, _, _, _ = CASES[name]
    t = fc.tensor(data(shape, seed=3))
    old = fc.get_num_threads()
    fc.set_num_threads(2)
    try:
        want = npy(op(t))
        bad, errors = [], []

        def work():
            try:
                for _ in range(5):
                    if not np.array_equal(npy(op(t)), want):
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


def test_openmp_fallback_gives_the_pools_bits():
    """FLAMBEAU_GEMM_POOL=0 runs every parallel_for on OpenMP: same chunks, so the same bits."""
    code = (
        "import flambeau_core as fc, numpy as np, sys\n"
        "fc.set_num_threads(2)\n"
        "x = fc.tensor(np.random.default_rng(5).standard_normal(3_000_017).astype(np.float32))\n"
        "y = fc.tensor(np.random.default_rng(6).standard_normal((1001, 999)).astype(np.float32))\n"
        "vals = [x.sum(), x.mean(), x.var(), x.cumsum(0)[-1], y.sum(-1).sum(), y.var(-1)[7]]\n"
        "print(' '.join(repr(float(v)) for v in vals))\n"
    )
    outs = []
    for pool in ("1", "0"):
        env = dict(os.environ, FLAMBEAU_GEMM_POOL=pool)
        r = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=120)
        assert r.returncode == 0, r.stderr
        outs.append(r.stdout.split())
    assert outs[0] == outs[1]


def test_error_inside_a_chunk_reaches_python(threads):
    """gather checks indices inside its parallel loop: the chunk's IndexError is rethrown."""
    x = fc.tensor(data((4, 100_000)))
    idx = np.random.default_rng(1).integers(0, 100_000, size=(4, 100_000))
    idx[3, 99_999] = 100_000
    with pytest.raises(IndexError, match="out of bounds"):
        x.gather(1, fc.tensor(idx))
    # The pool is usable afterwards, and the loop still covers everything.
    idx[3, 99_999] = 5
    got = npy(x.gather(1, fc.tensor(idx)))
    np.testing.assert_array_equal(got, np.take_along_axis(npy(x), idx, 1))


@pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork")
def test_forked_child_computes():
    """A forked child has no pool workers: the caller runs every chunk itself."""
    fc.set_num_threads(2)
    x = data((3_000_017,), seed=9)
    t = fc.tensor(x)
    want = float(t.sum())
    pid = os.fork()
    if pid == 0:  # pragma: no cover  (child)
        ok = float(t.sum()) == want and np.allclose(npy(t.exp()), np.exp(x), rtol=1e-6)
        os._exit(0 if ok else 1)
    _, status = os.waitpid(pid, 0)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0
