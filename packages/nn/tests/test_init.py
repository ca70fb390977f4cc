"""nn.init: PyTorch's formulas (bounds and moments), in place, no graph."""

from __future__ import annotations

import math

import flambeau_core as fc
import flambeau_nn as nn
import numpy as np
import pytest
import torch
from flambeau_nn import init
from nn_testing import to_numpy


def test_constant_zeros_ones_in_place():
    t = fc.empty(3, 2)
    assert init.constant_(t, 2.5) is t
    assert (to_numpy(t) == 2.5).all()
    assert (to_numpy(init.zeros_(t)) == 0).all()
    assert (to_numpy(init.ones_(t)) == 1).all()


def test_init_on_parameter_records_no_graph():
    p = nn.Parameter(fc.empty(4, 4))
    init.xavier_uniform_(p)
    assert p.requires_grad and p.grad_fn is None and p.grad is None


def test_uniform_normal_moments():
    u = to_numpy(init.uniform_(fc.empty(200, 100), -2.0, 3.0))
    assert u.min() >= -2.0 and u.max() < 3.0 and abs(u.mean() - 0.5) < 0.05
    n = to_numpy(init.normal_(fc.empty(200, 100), 1.0, 2.0))
    assert abs(n.mean() - 1.0) < 0.05 and abs(n.std() - 2.0) < 0.05


@pytest.mark.parametrize("shape", [(300, 80), (40, 20, 3, 3)])
def test_kaiming_and_xavier_bounds_match_torch(shape):
    receptive = int(np.prod(shape[2:])) if len(shape) > 2 else 1
    fan_in, fan_out = shape[1] * receptive, shape[0] * receptive
    cases = [
        (init.kaiming_uniform_, {"a": math.sqrt(5)}, math.sqrt(6 / ((1 + 5) * fan_in))),
        (init.kaiming_uniform_, {"nonlinearity": "relu"}, math.sqrt(6 / fan_in)),
        (init.kaiming_uniform_, {"mode": "fan_out", "nonlinearity": "relu"}, math.sqrt(6 / fan_out)),
        (init.xavier_uniform_, {"gain": 2.0}, 2.0 * math.sqrt(6 / (fan_in + fan_out))),
    ]
    for fn, kwargs, bound in cases:
        w = to_numpy(fn(fc.empty(*shape), **kwargs))
        assert w.max() <= bound and w.min() >= -bound
        assert w.max() > 0.95 * bound
        # same bound as torch's: its samples also stay inside and reach it
        tw = getattr(torch.nn.init, fn.__name__)(torch.empty(shape), **kwargs)
        assert tw.abs().max().item() <= bound * (1 + 1e-6)
    kn = to_numpy(init.kaiming_normal_(fc.empty(*shape), nonlinearity="relu"))
    assert abs(kn.std() - math.sqrt(2 / fan_in)) < 0.05 * math.sqrt(2 / fan_in)
    xn = to_numpy(init.xavier_normal_(fc.empty(*shape)))
    assert abs(xn.std() - math.sqrt(2 / (fan_in + fan_out))) < 0.05 * math.sqrt(2 / (fan_in + fan_out))


def test_calculate_gain_matches_torch():
    for name in ["linear", "sigmoid", "tanh", "relu", "selu", "conv2d"]:
        assert init.calculate_gain(name) == pytest.approx(torch.nn.init.calculate_gain(name))
    assert init.calculate_gain("leaky_relu", 0.2) == pytest.approx(torch.nn.init.calculate_gain("leaky_relu", 0.2))


def test_init_bad_input():
    with pytest.raises(ValueError, match="fewer than 2 dimensions"):
        init.xavier_uniform_(fc.empty(3))
    with pytest.raises(ValueError, match="Mode fan_up not supported"):
        init.kaiming_uniform_(fc.empty(2, 2), mode="fan_up")
    with pytest.raises(ValueError, match="Unsupported nonlinearity"):
        init.calculate_gain("swish")
    with pytest.raises(TypeError, match="expected a Tensor"):
        init.zeros_([1.0])
    with pytest.raises(ValueError, match="a <= b"):
        init.uniform_(fc.empty(2), 1.0, 0.0)
