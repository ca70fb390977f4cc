"""no_grad / enable_grad / set_grad_enabled / inference_mode: nesting, decorators, threads."""

from __future__ import annotations

import math
import threading

import flambeau_autograd as ag
import flambeau_core as fc
import pytest
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


def test_out_and_inplace_forms_while_autograd_records():
    # Note [Structured kernels]: a recorded op takes the compute-and-copy path, not the out kernel.
    x = fb_tensor([0.5, 1.0, 2.0], requires_grad=True)
    try:
        fc.sin(x, out=fc.empty((3,)))
    except RuntimeError as e:
        assert "[sin] functions with out=... arguments don't support automatic differentiation" in str(e)
    else:
        raise AssertionError("out= of a recorded op must raise")
    y = x * 1
    y.sin_()  # sin of a copy of y, copied into y: the backward reads the old values
    y.sum().backward()
    assert [round(g, 6) for g in x.grad.tolist()] == [round(math.cos(v), 6) for v in (0.5, 1.0, 2.0)]
    with ag.no_grad():
        z = fb_tensor([0.5, 1.0, 2.0], requires_grad=True)
        assert z.sin_() is z  # not recorded: the out kernel writes z
    assert [round(v, 6) for v in z.tolist()] == [round(math.sin(v), 6) for v in (0.5, 1.0, 2.0)]


def test_out_of_several_results_while_autograd_records_raises_as_torch():
    import torch

    x = fb_tensor([[0.5, 2.0, 1.0], [3.0, -1.0, 0.0]], requires_grad=True)
    t = torch.tensor([[0.5, 2.0, 1.0], [3.0, -1.0, 0.0]], requires_grad=True)
    with pytest.raises(RuntimeError, match="don't support automatic differentiation"):
        torch.max(t, 1, out=(torch.empty(0), torch.empty(0, dtype=torch.int64)))
    with pytest.raises(RuntimeError, match=r"\[max\] functions with out=\.\.\. arguments don't support"):
        fc.max(x, 1, out=(fc.empty((0,)), fc.empty((0,), dtype=fc.int64)))


# ---- is_inference_mode_enabled, set_multithreading_enabled ----


def test_inference_mode_state_follows_torch():
    import torch

    seen, expected = [], []
    for lib, out in ((ag, seen), (torch, expected)):
        read = lib.is_inference_mode_enabled if lib is ag else torch.is_inference_mode_enabled
        out.append(read())
        with lib.inference_mode():
            out.append(read())
            with lib.inference_mode(False):
                out.append(read())
            out.append(read())
        out.append(read())
    assert seen == expected == [False, True, False, True, False]


def test_inference_mode_state_is_per_thread_and_restored_on_error():
    results = []
    with ag.inference_mode():
        worker = threading.Thread(target=lambda: results.append(ag.is_inference_mode_enabled()))
        worker.start()
        worker.join()
    assert results == [False]
    try:
        with ag.inference_mode():
            raise ValueError
    except ValueError:
        pass
    assert not ag.is_inference_mode_enabled() and fc.is_grad_enabled()

    @ag.inference_mode()
    def inside():
        return ag.is_inference_mode_enabled(), fc.is_grad_enabled()

    assert inside() == (True, False) and not ag.is_inference_mode_enabled()


def test_set_multithreading_enabled_is_recorded_and_restored():
    import torch
    from flambeau_autograd.grad_mode import _is_multithreading_enabled

    assert _is_multithreading_enabled() is torch._C._is_multithreading_enabled() is True
    with ag.set_multithreading_enabled(False), torch.autograd.set_multithreading_enabled(False):
        assert _is_multithreading_enabled() is torch._C._is_multithreading_enabled() is False
    assert _is_multithreading_enabled() is True

    @ag.set_multithreading_enabled(False)
    def decorated():
        return _is_multithreading_enabled()

    assert _is_multithreading_enabled() is True and decorated() is False and _is_multithreading_enabled() is True
    x = fc.ones(3, requires_grad=True)
    with ag.set_multithreading_enabled(False):
        (x * x).sum().backward()
    assert x.grad.tolist() == [2.0, 2.0, 2.0]
    with pytest.raises(TypeError, match=r"\[set_multithreading_enabled\] expected a bool mode, got int"):
        ag.set_multithreading_enabled(1)


def test_tensors_made_in_inference_mode_are_inference_tensors_as_torchs():
    import torch

    def run(lib):
        x = lib.ones(2)
        with lib.inference_mode():
            made, view_of_ordinary, empty = x * 2, x[:1], lib.empty(0)
            x.add_(1)  # in place on an ordinary tensor: it stays ordinary
            with lib.inference_mode(False):
                outside = lib.ones(1)
        later = made + 1  # made outside from an inference tensor: ordinary
        tensors = [x, made, made[1:], made.view(2, 1), view_of_ordinary, empty, outside, later]
        return [t.is_inference() for t in tensors] + [lib.is_inference(made), lib.is_inference(x)]

    class Ours:  # core's factories, autograd's inference_mode
        ones, empty, is_inference, inference_mode = fc.ones, fc.empty, fc.is_inference, ag.inference_mode

    assert run(Ours) == run(torch) == [False, True, True, True, False, True, False, False, True, False]
    with pytest.raises(TypeError, match=r"is_inference\(\): argument 'input' \(position 1\) must be Tensor, not int"):
        fc.is_inference(3)


def test_inference_tensors_only_on_the_thread_in_inference_mode():
    made = []
    with ag.inference_mode():
        worker = threading.Thread(target=lambda: made.append(fc.ones(1)))
        worker.start()
        worker.join()
        here = fc.ones(1)
    assert here.is_inference() and not made[0].is_inference()
