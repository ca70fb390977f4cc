"""Backward without the GIL (Note [Backward without the GIL] in src/module.cpp).

backward() and autograd.grad() release the GIL for the engine run; Python
hooks and custom Functions take it back, and so does every release of a
Python object (a storage's keep-alive, a Python allocator) from inside the
engine. Two threads may run backward at once.
"""

from __future__ import annotations

import ctypes
import gc
import subprocess
import sys
import threading
import weakref

import flambeau_autograd as ag
import flambeau_core as fc
import numpy as np
import pytest


class Square(ag.Function):
    @staticmethod
    def forward(ctx, x):
        ctx.save_for_backward(x)
        return x * x

    @staticmethod
    def backward(ctx, g):
        (x,) = ctx.saved_tensors
        return 2.0 * g * x


# Run in a child process: if backward kept the GIL, the child would deadlock
# (no Python thread could run any more, not even a timeout), and the parent's
# generous timeout turns that into a failure instead of a hung test run.
_CONCURRENT_BACKWARD = r"""
import ctypes, sys, threading
import flambeau_autograd  # noqa: F401  (registers autograd)
import flambeau_core as fc

# Thread switches only where a thread releases the GIL itself: without that,
# the interpreter could hand the GIL over on a timer and hide a GIL held
# across a C++ wait.
sys.setswitchinterval(1000.0)
# PyDLL: calls keep the GIL (CDLL's would release it, letting the threads
# switch there and hiding a GIL held across a C++ wait).
libc = ctypes.PyDLL(None)
libc.posix_memalign.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_size_t, ctypes.c_size_t]
libc.free.argtypes = [ctypes.c_void_p]

b_holds_w, a_reached_graph = threading.Event(), threading.Event()
state = threading.local()
errors = []

class Alloc:
    def malloc(self, nbytes):
        if getattr(state, "armed", False):
            # Thread B, inside AccumulateGrad(w), which holds w's lock: wait
            # until thread A runs its own backward (an Event wait lets other
            # threads run whether or not the engine released the GIL).
            state.armed = False
            b_holds_w.set()
            if not a_reached_graph.wait(120):
                errors.append("thread A never ran its backward")
        p = ctypes.c_void_p()
        assert libc.posix_memalign(ctypes.byref(p), 64, max(nbytes, 1)) == 0
        return p.value

    def free(self, ptr, nbytes):
        libc.free(ptr)

w = fc.ones(4, dtype=fc.float64, requires_grad=True)

def arm(grad):
    if threading.current_thread().name == "B":
        state.armed = True  # AccumulateGrad(w) clones this view next: a malloc

w.register_hook(arm)
fc.set_allocator(Alloc())

def run_b():
    try:
        w.sum().backward()
    except BaseException as e:
        errors.append(repr(e))

def run_a():
    try:
        p = w * 2.0
        p.register_hook(lambda g: a_reached_graph.set())
        # A's engine then reaches AccumulateGrad(w) while B holds its lock and
        # waits for the GIL in the allocator: A must wait for the lock without
        # the GIL, or neither thread ever runs again.
        p.sum().backward()
    except BaseException as e:
        errors.append(repr(e))

b = threading.Thread(target=run_b, name="B")
b.start()
assert b_holds_w.wait(120), "thread B never reached AccumulateGrad"
a = threading.Thread(target=run_a, name="A")
a.start()
a.join()
b.join()
assert not errors, errors
assert w.grad.tolist() == [3.0, 3.0, 3.0, 3.0], w.grad.tolist()
print("ok")
"""


def test_backward_lets_other_python_threads_run():
    """Two threads backpropagate into one leaf: B holds the leaf's
    AccumulateGrad lock while its Python allocator waits for A's backward to
    start; A then waits for that lock. This completes only if A waits without
    the GIL, so that B's allocator can finish: a deadlock otherwise."""
    proc = subprocess.run([sys.executable, "-c", _CONCURRENT_BACKWARD], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0 and proc.stdout.strip() == "ok", proc.stderr


def test_backward_with_python_hooks_and_a_custom_function():
    x = fc.tensor([1.0, 2.0, 3.0], dtype=fc.float64, requires_grad=True)
    seen = []
    h = Square.apply(x)
    h.register_hook(lambda g: seen.append(g.tolist()) or g * 10.0)
    x.register_hook(lambda g: g + 1.0)
    y = (h * 3.0).sum()
    y.grad_fn.register_hook(lambda grad_inputs, grad_outputs: seen.append("node"))
    y.backward()
    assert seen == ["node", [3.0, 3.0, 3.0]]
    assert x.grad.tolist() == [2.0 * 30.0 * v + 1.0 for v in (1.0, 2.0, 3.0)]
    (g,) = ag.grad((Square.apply(x) * 3.0).sum(), x)  # x's hook runs for grad() too
    assert g.tolist() == [7.0, 13.0, 19.0]


def test_hook_errors_cross_the_gil_free_engine():
    x = fc.tensor([1.0], requires_grad=True)
    y = x * 2.0

    def bad(g):
        raise KeyError("from a hook")

    y.register_hook(bad)
    with pytest.raises(KeyError, match="from a hook"):
        y.sum().backward()


def test_two_threads_backward_concurrently_with_correct_gradients():
    """Each thread backpropagates through its own graph into one shared leaf
    (AccumulateGrad serializes the writes) and into leaves of its own, through
    a custom Function and a Python hook."""
    rng = np.random.default_rng(0)
    n, steps = 64, 20
    w0 = rng.standard_normal((n, n))
    w = fc.tensor(w0.tolist(), dtype=fc.float64, requires_grad=True)
    inputs = [rng.standard_normal((n, n)) for _ in range(2)]
    own = [fc.tensor(a.tolist(), dtype=fc.float64, requires_grad=True) for a in inputs]
    grads_of_own = [[], []]
    errors = []
    barrier = threading.Barrier(2)

    def work(i):
        try:
            barrier.wait()
            for _ in range(steps):
                hidden = Square.apply(own[i] @ w)
                hidden.register_hook(lambda g: g * 1.0)
                hidden.sum().backward()
                (g,) = ag.grad((own[i] @ w).sum(), own[i])
                grads_of_own[i].append(np.asarray(g.tolist()))
        except BaseException as e:  # reported by the main thread
            errors.append(e)

    threads = [threading.Thread(target=work, args=(i,)) for i in range(2)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors, errors

    # d/dW sum((A W)^2) = 2 A^T (A W); d/dA sum(A W) = 1 W^T
    want_w = sum(2.0 * a.T @ (a @ w0) for a in inputs) * steps
    np.testing.assert_allclose(np.asarray(w.grad.tolist()), want_w, rtol=1e-10)
    for i, a in enumerate(inputs):
        np.testing.assert_allclose(np.asarray(own[i].grad.tolist()), 2.0 * (a @ w0) @ w0.T * steps, rtol=1e-10)
        for g in grads_of_own[i]:
            np.testing.assert_allclose(g, np.ones((n, n)) @ w0.T, rtol=1e-12)


def test_a_python_owned_buffer_freed_inside_backward():
    """A tensor over NumPy memory (its storage holds the array) whose last
    reference is a saved tensor: backward frees it without the GIL held."""
    a = np.arange(1.0, 5.0)
    ref = weakref.ref(a)
    t = fc.frombuffer(a, dtype=fc.float64)
    del a
    x = fc.ones(4, dtype=fc.float64, requires_grad=True)
    y = (x * t).sum()  # MulBackward saves t
    del t
    gc.collect()
    assert ref() is not None
    y.backward()  # frees the saved t: its storage releases the array
    assert x.grad.tolist() == [1.0, 2.0, 3.0, 4.0]
    del y
    gc.collect()
    assert ref() is None


def test_a_custom_function_graph_freed_on_another_thread():
    """The PyNode (ctx, class) and Python hooks of a graph die on a thread
    that drops the last reference while running backward."""
    x = fc.ones(3, requires_grad=True)
    holder = {"y": Square.apply(x).sum()}
    holder["y"].register_hook(lambda g: g)
    done = []

    def run():
        y = holder.pop("y")
        y.backward()
        del y
        done.append(True)

    t = threading.Thread(target=run)
    t.start()
    t.join()
    assert done and x.grad.tolist() == [2.0, 2.0, 2.0]


libc = ctypes.CDLL(None)
libc.posix_memalign.argtypes = [ctypes.POINTER(ctypes.c_void_p), ctypes.c_size_t, ctypes.c_size_t]
libc.posix_memalign.restype = ctypes.c_int
libc.free.argtypes = [ctypes.c_void_p]


class PyAllocator:
    """A Python allocator: the engine calls it without the GIL held."""

    def __init__(self):
        self.live = {}

    def malloc(self, nbytes):
        p = ctypes.c_void_p()
        assert libc.posix_memalign(ctypes.byref(p), 64, max(nbytes, 1)) == 0
        self.live[p.value] = nbytes
        return p.value

    def free(self, ptr, nbytes):
        assert self.live.pop(ptr) == nbytes
        libc.free(ptr)


def test_a_python_allocator_during_backward():
    alloc = PyAllocator()
    previous = fc.get_allocator("cpu")
    fc.set_allocator(alloc)
    try:
        x = fc.rand(50, 50, dtype=fc.float64, requires_grad=True)
        for _ in range(3):
            y = Square.apply(x @ x).sum()
            y.backward()
        expected = 2.0 * (np.asarray((x @ x).tolist()) @ np.asarray(x.tolist()).T) * 3
        expected += 2.0 * (np.asarray(x.tolist()).T @ np.asarray((x @ x).tolist())) * 3
        np.testing.assert_allclose(np.asarray(x.grad.tolist()), expected, rtol=1e-10)
        del x, y
        gc.collect()
    finally:
        fc.set_allocator(previous)
    assert not alloc.live
