"""no_grad / enable_grad / set_grad_enabled / inference_mode: nesting, decorators, threads."""

from __future__ import annotations

import threading

import flambeau_autograd as ag
import flambeau_core as fc
from conftest import fb_tensor


def test_no_grad_and_enable_grad_nest():
    x = fb_tensor([1.0], requires_grad=True)
    assert ag.is_grad_enabled()
    with ag.no_grad():
        assert not fc.is_grad_enabled()
        y = x * 2.0
        with ag.enable_grad():
            z = x * 2.0
            assert ag.is_grad_enabled()
        assert not ag.is_grad_enabled()
    assert ag.is_grad_enabled()
    assert not y.requires_grad and y.grad_fn is None
    assert z.requires_grad and z.grad_fn is not None


def test_decorators():
    x = fb_tensor([1.0], requires_grad=True)

    @ag.no_grad()
    def f(t):
        return t * 2.0

    @ag.no_grad
    def g(t):
        return t * 2.0

    @ag.enable_grad()
    def h(t):
        return t * 2.0

    assert not f(x).requires_grad and not g(x).requires_grad
    with ag.no_grad():
        assert h(x).requires_grad
    assert ag.is_grad_enabled()
    assert f.__name__ == "f"


def test_generator_decorator():
    x = fb_tensor([1.0], requires_grad=True)

    @ag.no_grad()
    def gen():
        yield x * 2.0
        yield ag.is_grad_enabled()

    out = list(gen())
    assert not out[0].requires_grad and out[1] is False
    assert ag.is_grad_enabled()


def test_set_grad_enabled_forms():
    ag.set_grad_enabled(False)
    assert not ag.is_grad_enabled()
    ag.set_grad_enabled(True)
    assert ag.is_grad_enabled()
    with ag.set_grad_enabled(False):
        assert not ag.is_grad_enabled()
    assert ag.is_grad_enabled()

    @ag.set_grad_enabled(False)
    def f():
        return ag.is_grad_enabled()

    assert ag.is_grad_enabled()  # decorating does not change the mode
    assert f() is False and ag.is_grad_enabled()


def test_exception_restores_mode():
    try:
        with ag.no_grad():
            raise ValueError("boom")
    except ValueError:
        pass
    assert ag.is_grad_enabled()


def test_inference_mode():
    x = fb_tensor([1.0], requires_grad=True)
    with ag.inference_mode():
        assert not (x * 2.0).requires_grad
    with ag.inference_mode(False):
        assert (x * 2.0).requires_grad

    @ag.inference_mode
    def f():
        return ag.is_grad_enabled()

    assert f() is False and ag.is_grad_enabled()


def test_grad_mode_is_thread_local():
    seen = []

    def worker():
        seen.append(ag.is_grad_enabled())

    with ag.no_grad():
        t = threading.Thread(target=worker)
        t.start()
        t.join()
    assert seen == [True]
