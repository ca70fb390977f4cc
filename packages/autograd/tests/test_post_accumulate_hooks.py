"""Tensor.register_post_accumulate_grad_hook (flambeau_autograd/_post_accumulate_hooks.py) against PyTorch
2.13: the hook sees the accumulated .grad, runs once per backward in registration order, can step the
parameter (optimizer in backward), is removed by its handle, and the errors."""

from __future__ import annotations

import gc

import flambeau_autograd as ag
import flambeau_core as fc
import pytest
import torch
from flambeau_autograd import _post_accumulate_hooks


def run(m, backward_passes=2):
    w = m.tensor([1.0, 2.0], requires_grad=True)
    seen = []
    w.register_post_accumulate_grad_hook(lambda p: seen.append(("first", p.grad.tolist())))
    w.register_post_accumulate_grad_hook(lambda p: seen.append(("second", p.grad.tolist())))
    for _ in range(backward_passes):
        (w * w * 3).sum().backward()
    return seen


def test_hooks_see_the_accumulated_grad_in_order():
    assert (
        run(fc)
        == run(torch)
        == [
            ("first", [6.0, 12.0]),
            ("second", [6.0, 12.0]),
            ("first", [12.0, 24.0]),
            ("second", [12.0, 24.0]),
        ]
    )


def test_an_optimizer_step_in_backward_matches_torch():
    results = []
    for m, no_grad in ((fc, ag.no_grad), (torch, torch.no_grad)):
        w = m.tensor([1.0, -2.0, 0.5], requires_grad=True)

        def step(p, no_grad=no_grad):
            with no_grad():
                p.sub_(0.1 * p.grad)
            p.grad = None

        w.register_post_accumulate_grad_hook(step)
        for _ in range(3):
            (w * w).sum().backward()
            assert w.grad is None
        results.append(w.tolist())
    assert results[0] == pytest.approx(results[1])


def test_the_handle_removes_the_hook():
    w = fc.ones(2, requires_grad=True)
    seen = []
    handle = w.register_post_accumulate_grad_hook(lambda p: seen.append(1))
    (w * 2).sum().backward()
    handle.remove()
    handle.remove()
    (w * 2).sum().backward()
    with w.register_post_accumulate_grad_hook(lambda p: seen.append(2)):
        (w * 2).sum().backward()
    (w * 2).sum().backward()
    assert seen == [1, 2]


def test_the_hooks_go_with_the_tensor():
    w = fc.ones(2, requires_grad=True)
    w.register_post_accumulate_grad_hook(lambda p: None)
    key = id(w)
    assert key in _post_accumulate_hooks._registry
    del w
    gc.collect()
    assert key not in _post_accumulate_hooks._registry


def test_errors_match_torch():
    leaf, tleaf = fc.ones(2, requires_grad=True), torch.ones(2, requires_grad=True)
    with pytest.raises(RuntimeError, match="post accumulate grad hooks cannot be registered on non-leaf tensors"):
        (tleaf * 2).register_post_accumulate_grad_hook(lambda p: None)
    with pytest.raises(fc.FlambeauError, match=r"\[register_post_accumulate_grad_hook\] post accumulate grad hooks"):
        (leaf * 2).register_post_accumulate_grad_hook(lambda p: None)
    with pytest.raises(RuntimeError, match="cannot register a hook on a tensor that doesn't require gradient"):
        torch.ones(2).register_post_accumulate_grad_hook(lambda p: None)
    with pytest.raises(fc.FlambeauError, match="cannot register a hook on a tensor that doesn't require gradient"):
        fc.ones(2).register_post_accumulate_grad_hook(lambda p: None)
    with pytest.raises(TypeError, match=r"\[register_post_accumulate_grad_hook\] expected a callable hook, got int"):
        leaf.register_post_accumulate_grad_hook(3)
    tleaf.register_post_accumulate_grad_hook(lambda p: 1)
    with pytest.raises(TypeError):
        (tleaf * 2).sum().backward()
    leaf.register_post_accumulate_grad_hook(lambda p: 1)
    with pytest.raises(TypeError, match="post accumulate grad hooks should return None"):
        (leaf * 2).sum().backward()
