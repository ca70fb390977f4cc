#!/usr/bin/env python
"""flambeau-core on its own: run in a fresh venv holding only flambeau-core (+ numpy).

Not a pytest test: the noxfile's isolation step runs it as a script; it exits
non-zero on the first failure. Checks that core works without the rest
(tensors, kernels, views, the system allocator) and that the parts it lacks
fail clearly (``requires_grad=True`` names flambeau-autograd; the other
packages are not importable).
"""

from __future__ import annotations

import importlib
import sys

import flambeau_core as fc
import numpy as np

CHECKS = []


def check(fn):
    CHECKS.append(fn)
    return fn


def close(tensor, expected, tol=1e-5) -> None:
    got = np.array(tensor.tolist(), dtype=np.float64)
    expected = np.asarray(expected, dtype=np.float64)
    assert got.shape == expected.shape, f"shape {got.shape} != {expected.shape}"
    assert np.allclose(got, expected, rtol=tol, atol=tol), f"{got} != {expected}"


@check
def other_packages_are_absent():
    for name in ("flambeau_autograd", "flambeau_alloc", "flambeau_interop", "flambeau_nn", "flambeau_data", "flambeau"):
        try:
            importlib.import_module(name)
        except ImportError:
            continue
        raise AssertionError(f"{name} is importable, but this venv should hold flambeau-core only")


@check
def factories_and_dtypes():
    t = fc.tensor([[1, 2], [3, 4]])
    assert t.dtype == fc.int64 and t.shape == (2, 2)
    assert fc.tensor([1.5, 2.0]).dtype == fc.float32
    assert fc.tensor([True, False]).dtype == fc.bool
    close(fc.zeros(2, 3), np.zeros((2, 3)))
    close(fc.ones(3, dtype=fc.float64), np.ones(3))
    close(fc.full((2,), 7.0), [7.0, 7.0])
    close(fc.arange(5), np.arange(5))
    fc.manual_seed(0)
    a = fc.rand(1000)
    fc.manual_seed(0)
    b = fc.rand(1000)
    assert a.tolist() == b.tolist(), "manual_seed must make rand reproducible"
    values = np.array(a.tolist())
    assert 0.0 <= values.min() and values.max() < 1.0 and 0.4 < values.mean() < 0.6
    n = np.array(fc.randn(4000).tolist())
    assert abs(n.mean()) < 0.1 and 0.9 < n.std() < 1.1


@check
def elementwise_reductions_matmul_against_numpy():
    rng = np.random.default_rng(0)
    a_np = rng.standard_normal((3, 4)).astype(np.float32)
    b_np = rng.standard_normal((4,)).astype(np.float32)
    a, b = fc.tensor(a_np.tolist()), fc.tensor(b_np.tolist())
    close(a + b, a_np + b_np)  # broadcasting
    close(a * 2 - b / 3, a_np * 2 - b_np / 3)
    close(a.exp(), np.exp(a_np))
    close(a.tanh(), np.tanh(a_np))
    close(a.relu(), np.maximum(a_np, 0))
    close(a.sum(), a_np.sum(), tol=1e-4)
    close(a.sum(dim=1, keepdim=True), a_np.sum(axis=1, keepdims=True), tol=1e-4)
    close(a.mean(dim=0), a_np.mean(axis=0), tol=1e-4)
    close(a.argmax(dim=1), a_np.argmax(axis=1))
    m_np = rng.standard_normal((4, 5)).astype(np.float32)
    close(a @ fc.tensor(m_np.tolist()), a_np @ m_np, tol=1e-4)
    assert (a > 0).dtype == fc.bool
    assert (fc.tensor([1, 2]) + 0.5).dtype == fc.float32  # a Python float is a "weak" scalar


@check
def views_share_storage():
    x = fc.arange(12, dtype=fc.float32)
    v = x.view(3, 4).transpose(0, 1)
    assert v.shape == (4, 3) and not v.is_contiguous()
    assert v.data_ptr() == x.data_ptr()
    x.add_(1)
    close(v, (np.arange(12, dtype=np.float32) + 1).reshape(3, 4).T)
    close(x[1:10:3], [2.0, 5.0, 8.0])


@check
def buffer_protocol_without_interop():
    x = fc.arange(6, dtype=fc.float32).view(2, 3)
    arr = np.asarray(memoryview(x))
    assert arr.shape == (2, 3) and arr.dtype == np.float32
    assert arr.tolist() == [[0.0, 1.0, 2.0], [3.0, 4.0, 5.0]]


@check
def system_allocator_is_current():
    assert fc.get_allocator("cpu").name == fc.system_allocator().name
    assert fc.zeros(10)._allocator == "system"


@check
def requires_grad_names_the_missing_package():
    for make in (lambda: fc.zeros(2, requires_grad=True), lambda: fc.ones(2).requires_grad_(True)):
        try:
            make()
        except RuntimeError as e:
            assert "flambeau-autograd" in str(e), f"message does not name flambeau-autograd: {e}"
        else:
            raise AssertionError("requires_grad=True without flambeau-autograd did not raise RuntimeError")


@check
def bad_input_raises_the_right_type():
    cases = [
        (lambda: fc.ones(2, 3) + fc.ones(4), (ValueError, RuntimeError), "add"),
        (lambda: fc.ones(2, 3) @ fc.ones(4, 5), (ValueError, RuntimeError), "matmul"),
        (lambda: fc.ones(2, 3).view(7), (ValueError, RuntimeError), "view"),
        (lambda: fc.ones(3)[5], IndexError, ""),
    ]
    for fn, exc, word in cases:
        try:
            fn()
        except exc as e:
            assert word in str(e), f"{type(e).__name__}: {e!s} does not name {word!r}"
        else:
            raise AssertionError(f"no {exc} raised (expected one naming {word!r})")


def main() -> int:
    failed = 0
    for fn in CHECKS:
        try:
            fn()
        except Exception as e:  # report every check, then fail
            failed += 1
            print(f"FAIL {fn.__name__}: {type(e).__name__}: {e}")
        else:
            print(f"ok   {fn.__name__}")
    print(f"core_alone: {len(CHECKS) - failed}/{len(CHECKS)} checks passed (flambeau-core {fc.__version__})")
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
