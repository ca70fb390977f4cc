"""The composed activations (threshold, hardshrink, softshrink, tanhshrink, softmin, rrelu, the alpha
dropouts, gumbel_softmax) and their modules against PyTorch: values and gradients in float32 and float64,
gradcheck, in-place forms, the random ones by their invariants, repr and errors."""

from __future__ import annotations

import math

import flambeau_autograd as fa
import flambeau_core as fc
import flambeau_nn as nn
import flambeau_nn.functional as F
import numpy as np
import pytest
import torch
import torch.nn.functional as TF
from flambeau_core import FlambeauError
from nn_testing import close, fb, npy, run_both, th

ACTIVATIONS = [
    ("threshold", lambda x: F.threshold(x, 0.3, -2.0), lambda x: TF.threshold(x, 0.3, -2.0)),
    ("hardshrink", F.hardshrink, TF.hardshrink),
    ("hardshrink_1", lambda x: F.hardshrink(x, 1.2), lambda x: TF.hardshrink(x, 1.2)),
    ("softshrink", F.softshrink, TF.softshrink),
    ("softshrink_1", lambda x: F.softshrink(x, 1.2), lambda x: TF.softshrink(x, 1.2)),
    ("tanhshrink", F.tanhshrink, TF.tanhshrink),
    ("softmin_1", lambda x: F.softmin(x, 1), lambda x: TF.softmin(x, 1)),
    ("softmin_last", lambda x: F.softmin(x, -1), lambda x: TF.softmin(x, -1)),
    ("rrelu_eval", lambda x: F.rrelu(x, 0.1, 0.3), lambda x: TF.rrelu(x, 0.1, 0.3)),
    ("rrelu_train_fixed", lambda x: F.rrelu(x, 0.2, 0.2, True), lambda x: TF.rrelu(x, 0.2, 0.2, True)),
    ("alpha_dropout_eval", lambda x: F.alpha_dropout(x, 0.3), lambda x: TF.alpha_dropout(x, 0.3)),
]


def _input(shape, seed=0):
    x = np.random.default_rng(seed).standard_normal(shape) * 2
    # away from the kinks at +-0.3, +-0.5, +-1.2 (finite differences)
    for k in (0.0, 0.3, 0.5, 1.2):
        for s in (1, -1):
            x[np.abs(x - s * k) < 1e-3] += 0.01
    return x


@pytest.mark.parametrize("dtype", ["float32", "float64"])
@pytest.mark.parametrize("shape", [(7,), (3, 5), (2, 3, 4)])
@pytest.mark.parametrize("name,fb_fn,th_fn", ACTIVATIONS, ids=[a[0] for a in ACTIVATIONS])
def test_activation_values_and_grads(name, fb_fn, th_fn, shape, dtype):
    if name.startswith("softmin_1") and len(shape) < 2:
        shape = (3, 7)
    run_both(fb_fn, th_fn, [_input(shape)], dtype)


@pytest.mark.parametrize("name,fb_fn,th_fn", ACTIVATIONS, ids=[a[0] for a in ACTIVATIONS])
def test_activation_gradcheck(name, fb_fn, th_fn):
    assert fa.gradcheck(fb_fn, (fb(_input((3, 4), seed=1), requires_grad=True),))


def test_nan_passes_through_and_edges():
    x = [float("nan"), -0.5, 0.5, 0.0, -3.0]
    for f, g in [
        (lambda t: F.threshold(t, 0.5, 9.0), lambda t: TF.threshold(t, 0.5, 9.0)),
        (F.hardshrink, TF.hardshrink),
        (F.softshrink, TF.softshrink),
        (F.tanhshrink, TF.tanhshrink),
    ]:
        close(f(fc.tensor(x, dtype=fc.float64)), g(torch.tensor(x, dtype=torch.float64)), 0, 0)


def test_softmin_implicit_dim_and_dtype():
    x = _input((2, 3, 4))
    with pytest.warns(UserWarning, match="Implicit dimension choice for softmin"):
        ours = F.softmin(fb(x))
    with pytest.warns(UserWarning):
        theirs = TF.softmin(th(x))
    close(ours, theirs, 1e-12, 1e-12)
    close(
        F.softmin(fb(x, fc.float32), 2, dtype=fc.float64),
        TF.softmin(th(x, torch.float32), 2, dtype=torch.float64),
        1e-6,
        1e-7,
    )


@pytest.mark.parametrize(
    "fb_fn,th_fn",
    [
        (lambda x: F.threshold_(x, 0.2, 5.0), lambda x: TF.threshold_(x, 0.2, 5.0)),
        (lambda x: F.threshold(x, 0.2, 5.0, inplace=True), lambda x: TF.threshold(x, 0.2, 5.0, inplace=True)),
        (lambda x: F.rrelu_(x, 0.1, 0.3), lambda x: TF.rrelu_(x, 0.1, 0.3)),
    ],
)
def test_inplace_forms_write_input_and_backprop(fb_fn, th_fn):
    x = _input((3, 4))
    fl, tl = fb(x, requires_grad=True), th(x, requires_grad=True)
    fi, ti = fl * 1.5, tl * 1.5
    fo, to = fb_fn(fi), th_fn(ti)
    assert fo is fi
    close(fi, ti, 1e-12, 1e-12)
    fo.sum().backward()
    to.sum().backward()
    close(fl.grad, tl.grad, 1e-12, 1e-12)


def test_rrelu_training_draws_slopes_in_range():
    x = fb(-np.abs(_input((200,))) - 0.1, requires_grad=True)
    y = F.rrelu(x, 0.1, 0.3, training=True)
    slopes = npy(y) / npy(x)
    assert np.all(slopes >= 0.1) and np.all(slopes <= 0.3) and slopes.std() > 0.02
    y.sum().backward()
    np.testing.assert_allclose(npy(x.grad), slopes, rtol=1e-12)
    positive = fb(np.abs(_input((10,))) + 0.1)
    np.testing.assert_array_equal(npy(F.rrelu(positive, training=True)), npy(positive))
    with pytest.raises(FlambeauError, match="lower bound should be less than or equal to the upper bound"):
        F.rrelu(x, 0.5, 0.1, training=True)


@pytest.mark.parametrize("feature", [False, True])
@pytest.mark.parametrize("p", [0.2, 0.5])
def test_alpha_dropout_training_keeps_selu_statistics(p, feature):
    alpha_p = 1.7580993408473766
    a = 1.0 / math.sqrt((alpha_p**2 * p + 1) * (1 - p))
    shape = (64, 32, 4) if feature else (200, 100)
    x = fb(_input(shape), requires_grad=True)
    fn = F.feature_alpha_dropout if feature else F.alpha_dropout
    y = fn(x, p, training=True)
    kept_value = a * npy(x) + alpha_p * a * p
    dropped_value = -alpha_p * a + alpha_p * a * p
    out = npy(y)
    kept = np.isclose(out, kept_value, rtol=1e-10, atol=1e-12)
    dropped = np.isclose(out, dropped_value, rtol=1e-10, atol=1e-12) & ~kept
    assert np.all(kept | dropped)
    assert abs(dropped.mean() - p) < 0.05
    if feature:  # one decision per (sample, channel)
        assert np.all(kept.all(-1) | (~kept).all(-1))
    y.sum().backward()
    np.testing.assert_allclose(npy(x.grad), np.where(kept, a, 0.0), rtol=1e-12)
    # Standard-normal input stays standard normal in distribution (the point of alpha dropout).
    z = fn(fb(np.random.default_rng(2).standard_normal((400, 50, 2))), p, training=True)
    assert abs(npy(z).mean()) < 0.05 and abs(npy(z).std() - 1) < 0.05


def test_alpha_dropout_edges_and_errors():
    x = fb(_input((3, 4)))
    assert F.alpha_dropout(x, 0.5, training=False) is x
    assert F.alpha_dropout(x, 0.0, training=True) is x
    np.testing.assert_array_equal(npy(F.alpha_dropout(x, 1.0, training=True)), np.zeros((3, 4)))
    with pytest.raises(FlambeauError, match="dropout probability has to be between 0 and 1"):
        F.alpha_dropout(x, 1.5, training=True)
    with pytest.raises(FlambeauError, match="Feature dropout requires at least 2 dimensions"):
        F.feature_alpha_dropout(fb(_input((4,))), 0.5, training=True)
    with pytest.raises(FlambeauError, match="dropout probability has to be between 0 and 1"):
        nn.AlphaDropout(-0.1)


def test_gumbel_softmax_soft_hard_and_straight_through():
    logits = fb(_input((500, 4)), requires_grad=True)
    soft = F.gumbel_softmax(logits, tau=0.5)
    np.testing.assert_allclose(npy(soft).sum(1), 1.0, rtol=1e-12)
    hard = F.gumbel_softmax(logits, hard=True)
    h = npy(hard)
    assert set(np.unique(h)) <= {0.0, 1.0} and np.all(h.sum(1) == 1)
    # The samples follow softmax(logits): one category's frequency against its probability.
    probe = fb(np.tile(np.log([0.1, 0.2, 0.7]), (4000, 1)))
    freq = npy(F.gumbel_softmax(probe, hard=True)).mean(0)
    np.testing.assert_allclose(freq, [0.1, 0.2, 0.7], atol=0.03)
    # Straight-through: the hard sample's gradient is the soft sample's.
    (hard * fb(np.arange(4.0))).sum().backward()
    assert logits.grad is not None and float(np.abs(npy(logits.grad)).sum()) > 0


MODULES = [
    ("Softmin", {"dim": 1}),
    ("Softmax2d", {}),
    ("Threshold", {"threshold": 0.1, "value": 20.0}),
    ("Threshold", {"threshold": 0.1, "value": 20.0, "inplace": True}),
    ("Hardshrink", {"lambd": 0.3}),
    ("Softshrink", {}),
    ("Tanhshrink", {}),
    ("RReLU", {"lower": 0.1, "upper": 0.2}),
    ("RReLU", {"inplace": True}),
    ("AlphaDropout", {"p": 0.3}),
    ("FeatureAlphaDropout", {"p": 0.1}),
]


@pytest.mark.parametrize("name,kwargs", MODULES, ids=[f"{m[0]}-{i}" for i, m in enumerate(MODULES)])
def test_activation_modules_repr_state_dict_and_eval_forward(name, kwargs):
    ours, theirs = getattr(nn, name)(**kwargs), getattr(torch.nn, name)(**kwargs)
    assert repr(ours) == repr(theirs)
    assert list(ours.state_dict()) == list(theirs.state_dict()) == []
    ours.eval()
    theirs.eval()
    x = _input((2, 3, 4, 5))
    close(ours(fb(x)), theirs(th(x)), 1e-12, 1e-12)


def test_softmax2d_checks_dims():
    x = _input((3, 4, 5))
    close(nn.Softmax2d()(fb(x)), torch.nn.Softmax2d()(th(x)), 1e-12, 1e-12)
    with pytest.raises(FlambeauError, match=r"\[Softmax2d\] expected input to be 3D or 4D, got 2D"):
        nn.Softmax2d()(fb(x[0]))


def test_activation_errors():
    with pytest.raises(FlambeauError, match=r"\[softshrink\] lambda must be greater or equal to 0"):
        F.softshrink(fb(_input((3,))), -0.5)
    with pytest.raises(TypeError, match=r"\[hardshrink\] input must be a floating point tensor"):
        F.hardshrink(fc.tensor([1, 2]))
    with pytest.raises(TypeError, match=r"\[threshold\] input must be a Tensor"):
        F.threshold([1.0], 0.0, 0.0)


@pytest.mark.parametrize("shape", [(5,), (2, 5), (2, 3, 4), (2, 3, 4, 5)])
@pytest.mark.parametrize("name", ["softmax", "log_softmax"])
def test_softmax_implicit_dim_as_torch(name, shape):
    x = _input(shape)
    with pytest.warns(UserWarning, match=f"Implicit dimension choice for {name}"):
        ours = getattr(F, name)(fb(x))
    with pytest.warns(UserWarning):
        theirs = getattr(TF, name)(th(x))
    close(ours, theirs, 1e-12, 1e-12)
    module = "Softmax" if name == "softmax" else "LogSoftmax"
    assert repr(getattr(nn, module)()) == repr(getattr(torch.nn, module)())
    with pytest.warns(UserWarning, match="Implicit dimension choice"):
        close(getattr(nn, module)()(fb(x)), theirs, 1e-12, 1e-12)
    # The third positional argument is _stacklevel, as in PyTorch; dtype is a keyword.
    close(
        getattr(F, name)(fb(x, fc.float32), -1, 3, dtype=fc.float64),
        getattr(TF, name)(th(x, torch.float32), -1, 3, dtype=torch.float64),
        1e-6,
        1e-7,
    )
