"""set_num_threads and OpenBLAS's thread count (src/parallel.cpp, Note [OpenBLAS count across
fork]): GEMMs equal NumPy at 1 and 2 threads, in this process and in a forked child; a child
that sets 1 thread starts no thread (OpenBLAS's pool, which the fork stopped, stays stopped);
the count OpenBLAS threads a call with (read from the library itself) is get_num_threads()'s
wherever a call lets OpenBLAS thread, in the child and in the parent after the fork; bad counts
raise ValueError naming the op."""

from __future__ import annotations

import ctypes
import os

import flambeau_core as fc
import numpy as np
import pytest
import scipy_openblas32
import torch
from helpers import to_numpy

pytestmark = pytest.mark.skipif(not hasattr(os, "fork"), reason="needs fork()")

# The library flambeau_core links (already loaded: dlopen returns the same one).
_BLAS = ctypes.CDLL(os.path.join(scipy_openblas32.get_lib_dir(), "libscipy_openblas.so"))

# (m, k, n): one serial OpenBLAS call, one split into blocks on the GEMM pool, one above the
# multiply-adds where the blocks may run on OpenMP.
SHAPES = [(64, 64, 64), (128, 256, 96), (256, 512, 384)]


def blas_threads():
    return _BLAS.scipy_openblas_get_num_threads()


def tasks():
    return len(os.listdir("/proc/self/task"))


def rand(shape, dtype, seed):
    return np.random.default_rng(seed).standard_normal(shape).astype(dtype)


# Operands and NumPy's / torch's products, computed here in the parent: NumPy's OpenBLAS and torch
# start thread pools of their own in a forked child, which the thread counts below would see.
PRODUCTS = [
    (a, b, a @ b, tol)
    for i, (m, k, n) in enumerate(SHAPES)
    for dtype, tol in ((np.float32, 1e-4), (np.float64, 1e-10))
    for a, b in [(rand((m, k), dtype, 2 * i), rand((k, n), dtype, 2 * i + 1))]
]
# float64: the im2col GEMM path (the direct AVX-512 kernels are float32's).
CONV_X, CONV_W = rand((1, 3, 20, 20), np.float64, 7), rand((8, 3, 3, 3), np.float64, 8)
CONV_WANT = torch.nn.functional.conv2d(torch.from_numpy(CONV_X), torch.from_numpy(CONV_W), padding=1).numpy()


def matmuls_match_numpy():
    for a, b, want, tol in PRODUCTS:
        np.testing.assert_allclose(to_numpy(fc.tensor(a) @ fc.tensor(b)), want, rtol=tol, atol=tol)


def conv_lets_blas_thread():
    # One image: conv does not split images across threads, its GEMMs get OpenBLAS's threads.
    got = to_numpy(fc.conv2d(fc.tensor(CONV_X), fc.tensor(CONV_W), padding=1))
    np.testing.assert_allclose(got, CONV_WANT, rtol=1e-10, atol=1e-10)


def in_child(fn):
    """Runs fn in a forked child; its AssertionError (or any exception) fails the test here."""
    r, w = os.pipe()
    pid = os.fork()
    if pid == 0:  # pragma: no cover  (child)
        os.close(r)
        try:
            fn()
            msg = b""
        except BaseException as e:  # noqa: BLE001 - reported to the parent
            msg = f"{type(e).__name__}: {e}".encode() or b"?"
        os.write(w, msg)
        os._exit(0)
    os.close(w)
    with os.fdopen(r, "rb") as f:
        msg = f.read().decode()
    _, status = os.waitpid(pid, 0)
    assert os.WIFEXITED(status) and os.WEXITSTATUS(status) == 0
    assert msg == ""


@pytest.fixture
def restore_threads():
    old = fc.get_num_threads()
    yield
    fc.set_num_threads(old)


@pytest.mark.parametrize("n", [1, 2])
def test_set_then_matmul_matches_numpy(restore_threads, n):
    fc.set_num_threads(n)
    assert fc.get_num_threads() == n
    matmuls_match_numpy()
    conv_lets_blas_thread()
    assert blas_threads() == n


@pytest.mark.parametrize("parent", [1, 2])
@pytest.mark.parametrize("child", [1, 2])
def test_forked_child_sets_threads_then_matmul_matches_numpy(restore_threads, parent, child):
    fc.set_num_threads(parent)
    matmuls_match_numpy()  # the parent's pools have run

    def run():
        assert tasks() == 1
        fc.set_num_threads(child)
        assert fc.get_num_threads() == child
        matmuls_match_numpy()
        if child == 1:
            assert tasks() == 1  # nothing started a thread pool (OpenBLAS's restarts on any count it is set to)
            assert blas_threads() == 1
        conv_lets_blas_thread()
        assert blas_threads() == child

    in_child(run)


@pytest.mark.parametrize("n", [2, 3])
def test_forked_child_keeps_the_parents_count(restore_threads, n):
    fc.set_num_threads(n)
    matmuls_match_numpy()

    def run():
        assert fc.get_num_threads() == n
        matmuls_match_numpy()
        conv_lets_blas_thread()
        assert blas_threads() == n

    in_child(run)
    # The parent after the fork: the same counts, the same results.
    assert fc.get_num_threads() == n
    matmuls_match_numpy()
    conv_lets_blas_thread()
    assert blas_threads() == n


def test_child_of_a_child_and_count_changes_between_forks(restore_threads):
    fc.set_num_threads(2)
    matmuls_match_numpy()

    def grandchild():
        assert fc.get_num_threads() == 3
        conv_lets_blas_thread()
        assert blas_threads() == 3

    def child():
        fc.set_num_threads(3)  # before any call lets OpenBLAS thread: it is passed on
        in_child(grandchild)
        fc.set_num_threads(1)
        matmuls_match_numpy()
        conv_lets_blas_thread()
        assert blas_threads() == 1
        assert tasks() == 1

    in_child(child)


@pytest.mark.parametrize("n", [0, -1])
def test_bad_count_raises(restore_threads, n):
    before = fc.get_num_threads()
    with pytest.raises(ValueError, match=rf"\[set_num_threads\] expected a positive number of threads, got {n}"):
        fc.set_num_threads(n)
    with pytest.raises(RuntimeError, match="set_num_threads expects a positive integer"):
        torch.set_num_threads(n)  # torch refuses it too
    assert fc.get_num_threads() == before
