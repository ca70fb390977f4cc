"""nn.utils gradient clipping (clip_grad_norm_, clip_grad_value_, get_total_norm, clip_grads_with_norm_) and
parameters_to_vector / vector_to_parameters against PyTorch, with the error paths."""

from __future__ import annotations

import math
import warnings

import flambeau_core as fc
import flambeau_nn as nn
import numpy as np
import pytest
import torch
from flambeau_core import FlambeauError
from nn_testing import close, copy_params, fb, th


def _pair_with_grads(seed=0):
    rng = np.random.default_rng(seed)
    ours, theirs = [], []
    for shape in [(3, 4), (5,), (2, 2, 2)]:
        g = rng.standard_normal(shape) * 3
        p, q = nn.Parameter(fb(np.zeros(shape))), torch.nn.Parameter(th(np.zeros(shape)))
        p.grad, q.grad = fb(g), th(g)
        ours.append(p)
        theirs.append(q)
    return ours, theirs


@pytest.mark.parametrize("norm_type", [2.0, 1, 3.5, math.inf, 0.5, -math.inf, 0])
@pytest.mark.parametrize("max_norm", [0.5, 1e4])
@pytest.mark.parametrize("foreach", [None, False, True])
def test_clip_grad_norm_matches_torch(norm_type, max_norm, foreach):
    ours, theirs = _pair_with_grads()
    total = nn.utils.clip_grad_norm_(ours, max_norm, norm_type, foreach=foreach)
    ttotal = torch.nn.utils.clip_grad_norm_(theirs, max_norm, norm_type, foreach=foreach)
    close(total, ttotal, 1e-12, 1e-12)
    for p, q in zip(ours, theirs, strict=True):
        close(p.grad, q.grad, 1e-12, 1e-12)


def test_get_total_norm_and_clip_grads_with_norm():
    ours, theirs = _pair_with_grads(1)
    total = nn.utils.get_total_norm([p.grad for p in ours], 3.0)
    ttotal = torch.nn.utils.get_total_norm([q.grad for q in theirs], 3.0)
    close(total, ttotal, 1e-12, 1e-12)
    nn.utils.clip_grads_with_norm_(ours, 2.0, total)
    torch.nn.utils.clip_grads_with_norm_(theirs, 2.0, ttotal)
    for p, q in zip(ours, theirs, strict=True):
        close(p.grad, q.grad, 1e-12, 1e-12)
    assert nn.utils.get_total_norm([]).item() == 0.0
    single = nn.utils.get_total_norm(fb(np.array([3.0, 4.0])))
    assert single.item() == 5.0


def test_clip_grad_norm_edges():
    p = nn.Parameter(fb(np.zeros(3)))
    assert nn.utils.clip_grad_norm_([p], 1.0).item() == 0.0  # no gradients
    p.grad = fb(np.array([np.inf, 1.0, 0.0]))
    with pytest.raises(FlambeauError, match="non-finite, so it cannot be clipped"):
        nn.utils.clip_grad_norm_(p, 1.0, error_if_nonfinite=True)
    q = nn.Parameter(fb(np.zeros(2)))
    q.grad = fb(np.array([3.0, 4.0]))
    with pytest.warns(FutureWarning, match="deprecated in favor of"):
        total = nn.utils.clip_grad_norm(q, 1.0)
    assert total.item() == 5.0
    close(q.grad, th(np.array([0.6, 0.8])), 1e-6, 1e-6)
    gen = (x for x in [q])  # a generator is read once
    nn.utils.clip_grad_norm_(gen, 0.1)
    close(q.grad, th(np.array([0.06, 0.08])), 1e-5, 1e-6)


@pytest.mark.parametrize("foreach", [None, True])
def test_clip_grad_value_matches_torch(foreach):
    ours, theirs = _pair_with_grads(2)
    nn.utils.clip_grad_value_(ours, 1.5, foreach=foreach)
    torch.nn.utils.clip_grad_value_(theirs, 1.5, foreach=foreach)
    for p, q in zip(ours, theirs, strict=True):
        close(p.grad, q.grad, 0, 0)


def test_parameters_to_vector_and_back():
    ours, theirs = nn.Linear(3, 2).double(), torch.nn.Linear(3, 2).double()
    copy_params(ours, theirs)
    vec = nn.utils.parameters_to_vector(ours.parameters())
    close(vec, torch.nn.utils.parameters_to_vector(theirs.parameters()), 0, 0)
    # Differentiable with respect to each parameter.
    (vec * fb(np.arange(8.0))).sum().backward()
    close(ours.weight.grad, th(np.arange(6.0).reshape(2, 3)), 0, 0)
    new = np.arange(8.0) - 3
    weight = ours.weight
    nn.utils.vector_to_parameters(fb(new), ours.parameters())
    torch.nn.utils.vector_to_parameters(th(new), theirs.parameters())
    assert ours.weight is weight  # the same Parameter object, new values
    close(ours.weight, theirs.weight, 0, 0)
    close(ours.bias, theirs.bias, 0, 0)


def test_convert_parameters_errors():
    m = nn.Linear(3, 2)
    with pytest.raises(TypeError, match=r"\[vector_to_parameters\] expected Tensor, but got: list"):
        nn.utils.vector_to_parameters([1.0], m.parameters())
    with pytest.raises(TypeError, match=r"\[parameters_to_vector\] expected an iterable of Tensors"):
        nn.utils.parameters_to_vector([1.0])
    with pytest.raises(FlambeauError, match="at least 8 elements"):
        nn.utils.vector_to_parameters(fc.zeros(5), m.parameters())
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        nn.utils.vector_to_parameters(fc.zeros(9), m.parameters())  # extra elements are ignored, as PyTorch
