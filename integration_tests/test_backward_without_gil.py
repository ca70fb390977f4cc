"""Python memory released inside the GIL-free backward pass.

autograd runs backward without the GIL (Note [Backward without the GIL]); a
tensor over NumPy memory (from_numpy, from_dlpack) whose last reference is a
saved tensor dies there, and its storage must take the GIL to release the
array (Note [Python objects in deleters] in core's python/bindings.h).
"""

from __future__ import annotations

import gc
import threading
import weakref

import numpy as np
import pytest


@pytest.mark.parametrize("wrap", ["from_numpy", "from_dlpack"])
@pytest.mark.parametrize("on_thread", [False, True], ids=["main-thread", "other-thread"])
def test_numpy_memory_freed_inside_backward(fb, wrap, on_thread):
    a = np.arange(1.0, 5.0)
    ref = weakref.ref(a)
    t = getattr(fb, wrap)(a)
    del a
    x = fb.ones(4, dtype=fb.float64, requires_grad=True)
    y = (x * t).exp().sum()  # the graph holds the only reference to t
    del t
    gc.collect()
    assert ref() is not None

    def run():
        nonlocal y
        y.backward()  # frees the saved t, and with it the array
        y = None

    if on_thread:
        worker = threading.Thread(target=run)
        worker.start()
        worker.join()
    else:
        run()
    gc.collect()
    assert ref() is None
    np.testing.assert_allclose(np.asarray(x.grad.tolist()), np.arange(1.0, 5.0) * np.exp(np.arange(1.0, 5.0)))


def test_many_threads_free_numpy_memory_in_backward(fb):
    errors = []

    def work(seed):
        try:
            rng = np.random.default_rng(seed)
            for _ in range(20):
                w = fb.from_numpy(rng.standard_normal((32, 32)))
                x = fb.ones(32, 32, dtype=fb.float64, requires_grad=True)
                loss = (x @ w).sum()
                del w
                loss.backward()
                assert x.grad.shape == (32, 32)
        except BaseException as e:  # reported by the main thread
            errors.append(e)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors
