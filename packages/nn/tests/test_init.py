"""nn.init: PyTorch's formulas (bounds and moments), in place, no graph.
The fans, kaiming/xavier/orthogonal/sparse/... statistics against the formulas and torch.nn.init,
generators, bad input."""

from __future__ import annotations

import math
import warnings

import flambeau_core as fc
import flambeau_nn as nn
import numpy as np
import pytest
import torch
from flambeau_core import FlambeauError
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


SHAPES = [(400, 300), (64, 32, 3, 3), (30, 500)]


def _fans(shape):
    receptive = int(np.prod(shape[2:])) if len(shape) > 2 else 1
    return shape[1] * receptive, shape[0] * receptive


@pytest.mark.parametrize("shape", SHAPES)
def test_fan_in_and_fan_out_match_torch(shape):
    assert init._calculate_fan_in_and_fan_out(fc.empty(*shape)) == torch.nn.init._calculate_fan_in_and_fan_out(
        torch.empty(*shape)
    )


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("mode", ["fan_in", "fan_out"])
@pytest.mark.parametrize("nonlinearity, a", [("relu", 0), ("leaky_relu", 0.2), ("tanh", 0), ("linear", 0)])
def test_kaiming_statistics(shape, mode, nonlinearity, a):
    fan = _fans(shape)[0 if mode == "fan_in" else 1]
    std = init.calculate_gain(nonlinearity, a) / math.sqrt(fan)
    u = to_numpy(init.kaiming_uniform_(fc.empty(*shape), a=a, mode=mode, nonlinearity=nonlinearity))
    bound = math.sqrt(3.0) * std
    assert u.min() >= -bound and u.max() <= bound and u.max() > 0.95 * bound
    assert abs(u.std() - std) < 0.03 * std
    n = to_numpy(init.kaiming_normal_(fc.empty(*shape), a=a, mode=mode, nonlinearity=nonlinearity))
    assert abs(n.mean()) < 0.03 * std and abs(n.std() - std) < 0.03 * std
    t = torch.nn.init.kaiming_normal_(torch.empty(*shape), a=a, mode=mode, nonlinearity=nonlinearity).numpy()
    assert abs(t.std() - n.std()) < 0.05 * std


@pytest.mark.parametrize("shape", SHAPES)
@pytest.mark.parametrize("gain", [1.0, 2.5])
def test_xavier_statistics(shape, gain):
    fan_in, fan_out = _fans(shape)
    std = gain * math.sqrt(2.0 / (fan_in + fan_out))
    u = to_numpy(init.xavier_uniform_(fc.empty(*shape), gain=gain))
    assert np.abs(u).max() <= math.sqrt(3.0) * std and abs(u.std() - std) < 0.03 * std
    n = to_numpy(init.xavier_normal_(fc.empty(*shape), gain=gain))
    assert abs(n.std() - std) < 0.03 * std
    t = torch.nn.init.xavier_normal_(torch.empty(*shape), gain=gain).numpy()
    assert abs(t.std() - n.std()) < 0.05 * std


@pytest.mark.parametrize("shape", [(10, 10), (5, 20), (20, 5), (8, 3, 2, 2), (1, 7), (7, 1)])
@pytest.mark.parametrize("gain", [1.0, 0.5])
def test_orthogonal_is_orthogonal(shape, gain):
    w = to_numpy(init.orthogonal_(fc.empty(*shape), gain=gain)).reshape(shape[0], -1).astype(np.float64)
    rows, cols = w.shape
    if rows <= cols:
        np.testing.assert_allclose(w @ w.T, gain**2 * np.eye(rows), atol=1e-5)
    else:
        np.testing.assert_allclose(w.T @ w, gain**2 * np.eye(cols), atol=1e-5)


def test_orthogonal_is_haar_like_and_float64():
    # Entries of a Haar-random orthogonal n x n matrix have mean 0 and variance 1/n (as torch's).
    w = to_numpy(init.orthogonal_(fc.empty(200, 200, dtype=fc.float64)))
    np.testing.assert_allclose(w @ w.T, np.eye(200), atol=1e-10)
    assert abs(w.mean()) < 0.01 and abs(w.var() - 1 / 200) < 0.1 / 200
    t = torch.nn.init.orthogonal_(torch.empty(200, 200)).numpy()
    assert abs(t.var() - w.var()) < 0.1 / 200


@pytest.mark.parametrize("mean, std, a, b", [(0.0, 1.0, -2.0, 2.0), (1.0, 0.5, 0.0, 1.5), (0.0, 0.02, -0.04, 0.04)])
def test_trunc_normal_statistics(mean, std, a, b):
    v = to_numpy(init.trunc_normal_(fc.empty(200000, dtype=fc.float64), mean, std, a, b))
    assert v.min() >= a and v.max() <= b
    # Moments of the truncated normal (closed form), and torch's samples.
    alpha, beta = (a - mean) / std, (b - mean) / std
    phi = lambda x: math.exp(-x * x / 2) / math.sqrt(2 * math.pi)  # noqa: E731
    cdf = lambda x: (1 + math.erf(x / math.sqrt(2))) / 2  # noqa: E731
    z = cdf(beta) - cdf(alpha)
    exp_mean = mean + (phi(alpha) - phi(beta)) / z * std
    exp_var = std**2 * (1 + (alpha * phi(alpha) - beta * phi(beta)) / z - ((phi(alpha) - phi(beta)) / z) ** 2)
    assert abs(v.mean() - exp_mean) < 0.01 * std
    assert abs(v.std() - math.sqrt(exp_var)) < 0.01 * std
    t = torch.nn.init.trunc_normal_(torch.empty(200000, dtype=torch.float64), mean, std, a, b).numpy()
    assert abs(t.std() - v.std()) < 0.01 * std


def test_trunc_normal_warns_far_mean():
    with pytest.warns(UserWarning, match="mean is more than 2 std"):
        init.trunc_normal_(fc.empty(10), mean=10.0, std=1.0, a=-1.0, b=1.0)


def test_eye_and_dirac_match_torch():
    for shape in [(3, 5), (4, 2), (3, 3)]:
        assert init.eye_(fc.empty(*shape)).tolist() == torch.nn.init.eye_(torch.empty(*shape)).tolist()
    for shape, groups in [((4, 4, 3), 1), ((6, 3, 3, 3), 2), ((2, 5, 1, 3, 3), 1), ((4, 2, 5), 2)]:
        ours = init.dirac_(fc.empty(*shape), groups=groups).tolist()
        assert ours == torch.nn.init.dirac_(torch.empty(*shape), groups=groups).tolist()


def test_generators_make_fills_reproducible():
    for fn in [
        lambda t, g: init.uniform_(t, -1, 1, generator=g),
        lambda t, g: init.normal_(t, 0, 1, generator=g),
        lambda t, g: init.trunc_normal_(t, generator=g),
        lambda t, g: init.kaiming_uniform_(t, generator=g),
        lambda t, g: init.kaiming_normal_(t, generator=g),
        lambda t, g: init.xavier_uniform_(t, generator=g),
        lambda t, g: init.xavier_normal_(t, generator=g),
        lambda t, g: init.orthogonal_(t, generator=g),
    ]:
        a = fn(fc.empty(6, 4), fc.Generator().manual_seed(7)).tolist()
        fc.manual_seed(123)  # the global generator must not matter
        b = fn(fc.empty(6, 4), fc.Generator().manual_seed(7)).tolist()
        c = fn(fc.empty(6, 4), fc.Generator().manual_seed(8)).tolist()
        assert a == b and a != c


def test_inits_record_no_graph_and_return_the_tensor():
    p = nn.Parameter(fc.empty(5, 4))
    for fn in (init.orthogonal_, init.trunc_normal_, init.eye_, init.kaiming_normal_):
        assert fn(p) is p
        assert p.grad_fn is None and p.requires_grad


def test_zero_element_tensors_warn_as_torch():
    with pytest.warns(UserWarning, match="Initializing zero-element tensors is a no-op"):
        init.kaiming_uniform_(fc.empty(0, 3))
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        init.orthogonal_(fc.empty(0, 3))


def test_bad_input():
    with pytest.raises(ValueError, match="Fan in and fan out can not be computed"):
        init._calculate_fan_in_and_fan_out(fc.empty(3))
    with pytest.raises(ValueError, match="Only tensors with 2 or more dimensions"):
        init.orthogonal_(fc.empty(3))
    with pytest.raises(ValueError, match="Only tensors with 2 dimensions"):
        init.eye_(fc.empty(2, 2, 2))
    with pytest.raises(ValueError, match="Only tensors with 3, 4, or 5 dimensions"):
        init.dirac_(fc.empty(2, 2))
    with pytest.raises(ValueError, match="divisible by groups"):
        init.dirac_(fc.empty(3, 2, 3), groups=2)
    with pytest.raises(ValueError, match="Mode fan_avg not supported"):
        init.kaiming_uniform_(fc.empty(3, 3), mode="fan_avg")
    with pytest.raises(ValueError, match="Unsupported nonlinearity"):
        init.kaiming_normal_(fc.empty(3, 3), nonlinearity="swishy")
    with pytest.raises(ValueError, match="expects a < b"):
        init.trunc_normal_(fc.empty(3), a=1.0, b=0.0)
    with pytest.raises(ValueError, match="expects std > 0"):
        init.trunc_normal_(fc.empty(3), std=0.0)
    with pytest.raises(TypeError, match="expected a Tensor"):
        init.orthogonal_([1.0, 2.0])
    with pytest.raises(TypeError, match="generator must be a flambeau.Generator"):
        init.uniform_(fc.empty(3), generator=torch.Generator())
    assert issubclass(FlambeauError, ValueError)


# ---- sparse_ and the deprecated names ----


@pytest.mark.parametrize(("rows", "cols", "sparsity"), [(10, 4, 0.3), (7, 50, 0.5), (5, 3, 0.0), (4, 6, 1.0)])
def test_sparse_zeros_per_column_as_torch(rows, cols, sparsity):
    ours = init.sparse_(fc.empty(rows, cols), sparsity=sparsity, std=0.5)
    theirs = torch.nn.init.sparse_(torch.empty(rows, cols), sparsity=sparsity, std=0.5)
    assert to_numpy((ours == 0).sum(0)).tolist() == (theirs == 0).sum(0).tolist()


def test_sparse_nonzeros_are_normal_with_std():
    w = to_numpy(init.sparse_(fc.empty(400, 300), sparsity=0.25, std=0.02))
    nz = w[w != 0]
    assert nz.size == 300 * 300
    assert abs(nz.mean()) < 0.02 * 0.02 and abs(nz.std() - 0.02) < 0.02 * 0.02


def test_sparse_zero_rows_differ_between_columns():
    w = to_numpy(init.sparse_(fc.empty(20, 30), sparsity=0.5))
    patterns = {tuple(np.flatnonzero(w[:, j] == 0)) for j in range(30)}
    assert len(patterns) > 20  # random per column, not one shared set of rows


def test_sparse_bad_input():
    with pytest.raises(
        FlambeauError, match=r"\[sparse_\] Only tensors with 2 dimensions are supported, got shape \(3,\)"
    ):
        init.sparse_(fc.empty(3), 0.1)
    with pytest.raises(TypeError, match=r"\[sparse_\] sparsity must be a number, got str"):
        init.sparse_(fc.empty(3, 3), "0.1")


@pytest.mark.parametrize(
    ("old", "args"),
    [
        ("uniform", ()),
        ("normal", ()),
        ("constant", (0.5,)),
        ("eye", ()),
        ("xavier_uniform", ()),
        ("xavier_normal", ()),
        ("kaiming_uniform", ()),
        ("kaiming_normal", ()),
        ("orthogonal", ()),
        ("sparse", (0.5,)),
    ],
)
def test_deprecated_names_warn_as_torch_and_fill_as_the_new_ones(old, args):
    with pytest.warns(FutureWarning) as ours:
        fc.manual_seed(0)
        a = getattr(init, old)(fc.empty(4, 6), *args)
    with pytest.warns(FutureWarning) as theirs:
        getattr(torch.nn.init, old)(torch.empty(4, 6), *args)
    assert str(ours[0].message) == str(theirs[0].message)
    fc.manual_seed(0)
    b = getattr(init, old + "_")(fc.empty(4, 6), *args)
    np.testing.assert_array_equal(to_numpy(a), to_numpy(b))


def test_deprecated_dirac_warns():
    with pytest.warns(FutureWarning, match=r"`nn.init.dirac` is now deprecated in favor of `nn.init.dirac_`"):
        w = init.dirac(fc.empty(2, 2, 3))
    assert to_numpy(w)[:, :, 1].tolist() == [[1.0, 0.0], [0.0, 1.0]]
