"""detach / detach_ as functions (flambeau_autograd/_detach.py) against PyTorch 2.13."""

from __future__ import annotations

import flambeau_autograd as ag
import flambeau_core as fc
import pytest
import torch


def test_detach_matches_torch():
    x, t = fc.tensor([1.0, 2.0], requires_grad=True), torch.tensor([1.0, 2.0], requires_grad=True)
    ours, theirs = ag.detach(x * 3), torch.detach(t * 3)
    assert ours.requires_grad is theirs.requires_grad is False
    assert ours.tolist() == theirs.tolist() and ours.grad_fn is None
    y = x * 2
    assert ag.detach(y).data_ptr() == y.data_ptr()


def test_detach_in_place_matches_torch():
    y, ty = fc.tensor([1.0], requires_grad=True) * 2, torch.tensor([1.0], requires_grad=True) * 2
    assert ag.detach_(y) is y and torch.detach_(ty) is ty
    assert y.requires_grad is ty.requires_grad is False and y.grad_fn is None


def test_detach_wants_a_tensor():
    with pytest.raises(TypeError):
        torch.detach([1.0])
    for fn in (ag.detach, ag.detach_):
        with pytest.raises(TypeError, match=rf"\[{fn.__name__}\] expected a Tensor as 'input', got list"):
            fn([1.0])
