"""enforce_grad_layout_policy (Note [Gradient layout]): with the contract enforced a leaf's .grad takes the leaf's
strides; relaxed, a gradient the engine takes over keeps its own. Against PyTorch 2.13: strides, values, the
switch's life as a call, a context manager and a decorator, per thread, and its error."""

from __future__ import annotations

import threading

import flambeau_autograd as ag
import flambeau_core as fc
import pytest
import torch
from flambeau_autograd._C import _is_grad_layout_enforcement_enabled


def permuted_leaf(lib):
    return lib.arange(24.0).reshape(2, 3, 4).permute(2, 0, 1).requires_grad_()


PROGRAMS = {
    "mul": lambda p: (p * 2).sum(),
    "contiguous": lambda p: (p.contiguous() * 3).sum(),
    "square": lambda p: (p * p).sum(),
}


@pytest.mark.parametrize("enable", [True, False])
@pytest.mark.parametrize("program", list(PROGRAMS))
def test_strides_follow_torch(enable, program):
    got = []
    for lib, policy in ((fc, ag.enforce_grad_layout_policy), (torch, torch.autograd.enforce_grad_layout_policy)):
        p = permuted_leaf(lib)
        with policy(enable):
            PROGRAMS[program](p).backward()
        got.append((tuple(p.grad.stride()), p.grad.tolist()))
    assert got[0] == got[1]


def test_a_gradient_it_must_copy_keeps_the_leaf_layout():
    # A second backward adds into the existing .grad: its layout stays; a gradient held elsewhere is copied.
    p = permuted_leaf(fc)
    with ag.enforce_grad_layout_policy(False):
        (p * 2).sum().backward()
        first = p.grad.stride()
        (p * 2).sum().backward()
        assert p.grad.stride() == first
        q = permuted_leaf(fc)
        g = fc.ones(4, 2, 3)
        q.backward(g)  # the caller still holds g: copied, in q's layout
        assert q.grad.stride() == q.stride() and q.grad.data_ptr() != g.data_ptr()


def test_call_context_and_decorator():
    for policy, enabled in (
        (ag.enforce_grad_layout_policy, _is_grad_layout_enforcement_enabled),
        (torch.autograd.enforce_grad_layout_policy, torch._C._is_grad_layout_enforcement_enabled),
    ):
        assert enabled()
        switch = policy(False)
        assert not enabled()  # set on construction
        with switch:
            assert not enabled()
        assert enabled()

        @policy(False)
        def inside(enabled=enabled):
            return enabled()

        assert enabled() and inside() is False and enabled()


def test_per_thread():
    seen = []
    with ag.enforce_grad_layout_policy(False):
        t = threading.Thread(target=lambda: seen.append(_is_grad_layout_enforcement_enabled()))
        t.start()
        t.join()
    assert seen == [True]


def test_needs_a_bool():
    for policy in (ag.enforce_grad_layout_policy, torch.autograd.enforce_grad_layout_policy):
        with pytest.raises(TypeError, match="argument 'enabled' \\(position 1\\) must be bool, not str"):
            policy("x")
    assert _is_grad_layout_enforcement_enabled()
