"""The losses' gradients in their target (and cross entropy's in its class weights), as PyTorch
differentiates them: values and gradients against torch 2.13 on the same float64 inputs,
gradcheck and gradgradcheck over input and target together, and the Hessian-vector products
(mixed input/target second derivatives) against torch's. The arguments PyTorch refuses to
differentiate (BCE's weight and pos_weight, cross entropy's weight with class indices) raise
when their gradient is asked for, naming the argument."""

from __future__ import annotations

import warnings

import flambeau_core as fc
import flambeau_nn.functional as F
import numpy as np
import pytest
import torch
import torch.nn.functional as TF
from flambeau_autograd import grad, gradcheck, gradgradcheck
from nn_testing import compare_forward_backward, to_torch

REDUCTIONS = ["none", "mean", "sum"]
CLASS_WEIGHT = np.array([0.5, 1.0, 2.0, 1.5])


def probabilities(shape, seed):
    """Class probabilities over dim 1 of (N, C, ...) (dim 0 of (C,)), each row in (0, 1)."""
    p = np.random.default_rng(seed).uniform(0.1, 1.0, shape)
    return p / p.sum(axis=1 if len(shape) > 1 else 0, keepdims=True)


def uniform(shape, low, high, seed):
    return np.random.default_rng(seed).uniform(low, high, shape)


def check_against_torch(ours, theirs, arrays):
    """Values and first gradients (every array is a float64 leaf) against torch's, then gradcheck
    and gradgradcheck, then the second derivatives in every leaf against torch's."""
    compare_forward_backward(ours, theirs, [torch.tensor(a) for a in arrays], rtol=1e-9, atol=1e-11)
    leaves = tuple(fc.tensor(a).requires_grad_() for a in arrays)
    assert gradcheck(ours, leaves)
    assert gradgradcheck(ours, leaves, atol=1e-5, rtol=1e-4)
    rng = np.random.default_rng(3)
    vectors = [rng.standard_normal(a.shape) for a in arrays]
    t_leaves = [torch.tensor(a).requires_grad_() for a in arrays]
    t_out = theirs(*t_leaves)
    t_go = torch.tensor(rng.standard_normal(tuple(t_out.shape)))
    t_gs = torch.autograd.grad(t_out, t_leaves, t_go, create_graph=True)
    want = torch.autograd.grad(t_gs, t_leaves, [torch.tensor(v) for v in vectors], allow_unused=True)
    gs = grad(ours(*leaves), list(leaves), fc.tensor(t_go.numpy()), create_graph=True)
    got = grad(list(gs), list(leaves), [fc.tensor(v) for v in vectors], allow_unused=True)
    for i, (g, w) in enumerate(zip(got, want, strict=True)):
        if w is None:
            assert g is None or np.allclose(to_torch(g).numpy(), 0.0), f"second derivative {i}"
            continue
        assert g is not None, f"second derivative in leaf {i} is missing"
        np.testing.assert_allclose(to_torch(g).numpy(), w.numpy(), rtol=1e-8, atol=1e-10, err_msg=f"leaf {i}")


# ---- cross entropy with class probabilities ----


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("label_smoothing", [0.0, 0.3])
@pytest.mark.parametrize("shape", [(3, 4), (2, 4, 3), (4,)])
def test_cross_entropy_gradient_in_probability_target(reduction, weighted, label_smoothing, shape):
    x = uniform(shape, -2.0, 2.0, seed=1)
    w_fb, w_th = (fc.tensor(CLASS_WEIGHT), torch.tensor(CLASS_WEIGHT)) if weighted else (None, None)
    kw = dict(reduction=reduction, label_smoothing=label_smoothing)
    check_against_torch(
        lambda a, t: F.cross_entropy(a, t, w_fb, **kw),
        lambda a, t: TF.cross_entropy(a, t, w_th, **kw),
        [x, probabilities(shape, seed=2)],
    )


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("label_smoothing", [0.0, 0.3])
@pytest.mark.parametrize("shape", [(3, 4), (2, 4, 2, 2), (4,)])
def test_cross_entropy_gradient_in_class_weight_with_probability_target(reduction, label_smoothing, shape):
    """PyTorch differentiates the class weights when the target holds probabilities."""
    kw = dict(reduction=reduction, label_smoothing=label_smoothing)
    check_against_torch(
        lambda a, t, w: F.cross_entropy(a, t, w, **kw),
        lambda a, t, w: TF.cross_entropy(a, t, w, **kw),
        [uniform(shape, -2.0, 2.0, seed=4), probabilities(shape, seed=5), CLASS_WEIGHT],
    )


def test_cross_entropy_target_gradient_is_the_negative_scaled_log_softmax():
    """An invariant besides torch: the loss is linear in the target, d/dy = -log_softmax(x) / N."""
    x = uniform((5, 3), -2.0, 2.0, seed=6)
    y = fc.tensor(probabilities((5, 3), seed=7)).requires_grad_()
    F.cross_entropy(fc.tensor(x), y).backward()
    logp = x - np.log(np.exp(x).sum(axis=1, keepdims=True))
    np.testing.assert_allclose(to_torch(y.grad).numpy(), -logp / 5, rtol=1e-12)


def test_cross_entropy_class_weight_with_class_indices_raises_like_torch():
    x = fc.tensor(uniform((3, 4), -2.0, 2.0, seed=8)).requires_grad_()
    w = fc.tensor(CLASS_WEIGHT).requires_grad_()
    with pytest.raises(
        RuntimeError, match=r"\[cross_entropy\] is not differentiable with respect to argument 'weight'"
    ):
        F.cross_entropy(x, fc.tensor([0, 3, 1]), w).backward()
    with pytest.raises(RuntimeError, match="not differentiable with respect to argument 'weight'"):
        TF.cross_entropy(
            torch.tensor(x.tolist()), torch.tensor([0, 3, 1]), torch.tensor(CLASS_WEIGHT, requires_grad=True)
        )


# ---- binary cross entropy ----


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("weighted", [False, True])
def test_binary_cross_entropy_gradient_in_target(reduction, weighted):
    w_fb, w_th = (fc.tensor(CLASS_WEIGHT), torch.tensor(CLASS_WEIGHT)) if weighted else (None, None)
    check_against_torch(
        lambda a, t: F.binary_cross_entropy(a, t, w_fb, reduction=reduction),
        lambda a, t: TF.binary_cross_entropy(a, t, w_th, reduction=reduction),
        [uniform((3, 4), 0.1, 0.9, seed=9), uniform((3, 4), 0.0, 1.0, seed=10)],
    )


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("pos_weighted", [False, True])
def test_binary_cross_entropy_with_logits_gradient_in_target(reduction, weighted, pos_weighted):
    w = (fc.tensor(CLASS_WEIGHT), torch.tensor(CLASS_WEIGHT)) if weighted else (None, None)
    pw_values = np.array([3.0, 0.5, 1.0, 2.0])
    pw = (fc.tensor(pw_values), torch.tensor(pw_values)) if pos_weighted else (None, None)
    check_against_torch(
        lambda a, t: F.binary_cross_entropy_with_logits(a, t, w[0], reduction=reduction, pos_weight=pw[0]),
        lambda a, t: TF.binary_cross_entropy_with_logits(a, t, w[1], reduction=reduction, pos_weight=pw[1]),
        [uniform((3, 4), -4.0, 4.0, seed=11), uniform((3, 4), 0.0, 1.0, seed=12)],
    )


def test_binary_cross_entropy_target_gradient_at_large_logits_stays_finite():
    """log(1 - sigmoid(x)) - pw log(sigmoid(x)) from log_sigmoid: torch's finite 80 and -40 at
    x = -40 and 40, not a log(0)."""
    x = np.array([-40.0, -1.0, 0.0, 1.0, 40.0])
    pw = np.full(5, 2.0)
    compare_forward_backward(
        lambda a, t: F.binary_cross_entropy_with_logits(a, t, pos_weight=fc.tensor(pw), reduction="none"),
        lambda a, t: TF.binary_cross_entropy_with_logits(a, t, pos_weight=torch.tensor(pw), reduction="none"),
        [torch.tensor(x), torch.full((5,), 0.25, dtype=torch.float64)],
        rtol=1e-12,
    )


@pytest.mark.parametrize("argument", ["weight", "pos_weight"])
def test_binary_cross_entropy_weights_are_not_differentiable_like_torch(argument):
    x = fc.tensor(uniform((2, 4), 0.1, 0.9, seed=13)).requires_grad_()
    t = fc.tensor(uniform((2, 4), 0.0, 1.0, seed=14))
    w = fc.tensor(CLASS_WEIGHT).requires_grad_()
    with pytest.raises(RuntimeError, match=rf"\[binary_cross_entropy_with_logits\] .* argument '{argument}'"):
        F.binary_cross_entropy_with_logits(x, t, **{argument: w}).backward()
    if argument == "weight":
        with pytest.raises(RuntimeError, match=r"\[binary_cross_entropy\] .* argument 'weight'"):
            F.binary_cross_entropy(x, t, w).backward()
    with pytest.raises(RuntimeError, match=f"not differentiable with respect to argument '{argument}'"):
        TF.binary_cross_entropy_with_logits(
            torch.tensor(x.tolist()),
            torch.tensor(t.tolist()),
            **{argument: torch.tensor(CLASS_WEIGHT, requires_grad=True)},
        )


# ---- the other losses (their target gradients were written before; kept checked here) ----


@pytest.mark.parametrize(
    "name, kw",
    [
        ("mse_loss", {}),
        ("l1_loss", {}),
        ("smooth_l1_loss", {"beta": 0.7}),
        ("huber_loss", {"delta": 0.7}),
        ("kl_div", {"reduction": "batchmean"}),
        ("kl_div", {"reduction": "sum", "log_target": True}),
    ],
)
def test_pointwise_loss_gradient_in_target(name, kw):
    x = uniform((3, 4), -2.0, 0.0, seed=15)
    t = uniform((3, 4), 0.05, 1.0, seed=16)
    # kl_div's target gradient is log(target) + 1 - input: finite only for a positive target.
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        compare_forward_backward(
            lambda a, b: getattr(F, name)(a, b, **kw),
            lambda a, b: getattr(TF, name)(a, b, **kw),
            [torch.tensor(x), torch.tensor(t)],
            rtol=1e-9,
            atol=1e-11,
        )
    leaves = (fc.tensor(x).requires_grad_(), fc.tensor(t).requires_grad_())
    assert gradcheck(lambda a, b: getattr(F, name)(a, b, **kw), leaves)
