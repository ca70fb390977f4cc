"""Gradient clipping and learning-rate schedulers against PyTorch."""

from __future__ import annotations

import math

import flambeau_core as fc
import flambeau_nn as nn
import pytest
import torch
from nn_testing import assert_close, copy_params


def _grads_pair():
    theirs = torch.nn.Sequential(torch.nn.Linear(4, 5), torch.nn.Linear(5, 3))
    ours = nn.Sequential(nn.Linear(4, 5), nn.Linear(5, 3))
    copy_params(ours, theirs)
    x = torch.randn(6, 4) * 3
    from nn_testing import from_torch

    ours(from_torch(x)).sum().backward()
    theirs(x).sum().backward()
    return ours, theirs


@pytest.mark.parametrize("max_norm,norm_type", [(1.0, 2.0), (100.0, 2.0), (0.5, 1.0), (0.1, math.inf), (2.0, 3.0)])
def test_clip_grad_norm_matches_torch(max_norm, norm_type):
    ours, theirs = _grads_pair()
    total_o = nn.utils.clip_grad_norm_(ours.parameters(), max_norm, norm_type)
    total_t = torch.nn.utils.clip_grad_norm_(theirs.parameters(), max_norm, norm_type)
    assert_close(total_o, total_t, rtol=1e-5)
    their = dict(theirs.named_parameters())
    for name, p in ours.named_parameters():
        assert_close(p.grad, their[name].grad, rtol=1e-5)


def test_clip_grad_value_matches_torch():
    ours, theirs = _grads_pair()
    nn.utils.clip_grad_value_(ours.parameters(), 0.5)
    torch.nn.utils.clip_grad_value_(theirs.parameters(), 0.5)
    their = dict(theirs.named_parameters())
    for name, p in ours.named_parameters():
        assert_close(p.grad, their[name].grad)


def test_clip_grad_edge_cases():
    assert nn.utils.clip_grad_norm_([nn.Parameter(fc.zeros(2))], 1.0).item() == 0.0
    p = nn.Parameter(fc.ones(2))
    (p * float("inf")).sum().backward()
    with pytest.raises(RuntimeError, match="non-finite"):
        nn.utils.clip_grad_norm_(p, 1.0, error_if_nonfinite=True)
    # norm_type=0 is accepted as in PyTorch: the 0-"norm" of the per-tensor 0-norms (here 1: one non-zero tensor).
    assert nn.utils.clip_grad_norm_(p, 1.0, norm_type=0).item() == 1.0


SCHEDULERS = [
    ("StepLR", dict(step_size=3, gamma=0.5)),
    ("MultiStepLR", dict(milestones=[2, 5, 5, 8], gamma=0.3)),
    ("ExponentialLR", dict(gamma=0.9)),
    ("CosineAnnealingLR", dict(T_max=4, eta_min=0.01)),
]


@pytest.mark.parametrize("name,kwargs", SCHEDULERS)
def test_schedulers_match_torch(name, kwargs):
    p_o, p_t = nn.Parameter(fc.zeros(1)), torch.nn.Parameter(torch.zeros(1))
    opt_o = nn.optim.SGD([{"params": [p_o]}], lr=0.1)
    opt_t = torch.optim.SGD([{"params": [p_t]}], lr=0.1)
    s_o = getattr(nn.optim.lr_scheduler, name)(opt_o, **kwargs)
    s_t = getattr(torch.optim.lr_scheduler, name)(opt_t, **kwargs)
    for _ in range(14):
        assert s_o.get_last_lr() == pytest.approx(s_t.get_last_lr(), rel=1e-12)
        assert opt_o.param_groups[0]["lr"] == pytest.approx(opt_t.param_groups[0]["lr"], rel=1e-12)
        opt_o.step()
        opt_t.step()
        s_o.step()
        s_t.step()


def test_lambda_lr_and_state_dict_resume():
    p = nn.Parameter(fc.zeros(1))
    opt = nn.optim.SGD([p], lr=1.0)
    sched = nn.optim.lr_scheduler.LambdaLR(opt, lambda e: 1.0 / (e + 1))
    for _ in range(3):
        sched.step()
    assert sched.get_last_lr() == [0.25]
    sd = sched.state_dict()
    assert sd["lr_lambdas"] == [None] and sd["last_epoch"] == 3  # PyTorch saves None per plain function
    opt2 = nn.optim.SGD([nn.Parameter(fc.zeros(1))], lr=1.0)
    opt2.load_state_dict(opt.state_dict())
    resumed = nn.optim.lr_scheduler.LambdaLR(opt2, lambda e: 1.0 / (e + 1), last_epoch=2)
    assert resumed.get_last_lr() == [0.25]
    resumed.load_state_dict(sd)
    resumed.step()
    assert resumed.get_last_lr() == [0.2]


def test_scheduler_errors():
    opt = nn.optim.SGD([nn.Parameter(fc.zeros(1))], lr=1.0)
    with pytest.raises(KeyError, match="initial_lr"):
        nn.optim.lr_scheduler.StepLR(opt, step_size=2, last_epoch=3)
    with pytest.raises(ValueError, match="step_size must be a positive int"):
        nn.optim.lr_scheduler.StepLR(opt, step_size=0)
    with pytest.raises(ValueError, match="Expected 1 lr_lambdas, but got 2"):
        nn.optim.lr_scheduler.LambdaLR(opt, [lambda e: 1.0, lambda e: 1.0])
    with pytest.raises(TypeError, match="is not an Optimizer"):
        nn.optim.lr_scheduler.StepLR(object(), step_size=1)
