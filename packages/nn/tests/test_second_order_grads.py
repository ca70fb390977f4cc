"""gradcheck cases for the derivatives.yaml entries no other test differentiates numerically (the
random fills and fill_: a zero gradient for the overwritten input; cast, frexp, the backward ops of
dropout and nearest upsampling), and the second derivatives of the fused activation and loss
backward ops (gradgradcheck in float64 over every option that changes the math, and the
Hessian-vector products compared with PyTorch's on the same inputs).

CI checks that every derivatives.yaml entry has such a case (flambeau_autograd.testing); this file
holds the ones whose natural test elsewhere compares with PyTorch but does not run gradcheck.
"""

from __future__ import annotations

from pathlib import Path

import flambeau_core as fc
import flambeau_nn.functional as F
import numpy as np
import pytest
import torch
import torch.nn.functional as TF
from flambeau_autograd import grad, gradcheck, gradgradcheck
from flambeau_autograd.testing import declared_unsupported
from nn_testing import to_torch

RNG = np.random.default_rng(11)


def leaf(*shape, low=-2.0, high=2.0):
    return fc.tensor(RNG.uniform(low, high, shape)).requires_grad_()


# The backward ops whose own derivative is not written yet (derivatives.yaml raises
# NotImplementedError naming them): entry -> (function, a leaf input). Empty: every fused
# activation and loss backward has its second derivative.
SECOND_ORDER_NOT_YET: dict = {}


def test_the_not_yet_list_is_the_table_s():
    """When a second derivative is written, its case moves from this list to a gradgradcheck."""
    table = Path(__file__).resolve().parents[2] / "autograd" / "derivatives.yaml"
    assert sorted(declared_unsupported(table)) == sorted(SECOND_ORDER_NOT_YET)


def test_second_order_not_written_yet_raises_naming_the_backward_op():
    for entry, (fn, make) in SECOND_ORDER_NOT_YET.items():
        with pytest.raises(NotImplementedError, match=rf"\[{entry}\] the second derivative"):
            gradgradcheck(fn, (make(),))


# ---- second derivatives of the fused activation and loss backward ops ----


def second_order(fn, inputs, grad_output, vectors, lib):
    """d/d(inputs, grad_output) of <vectors, d fn(inputs)/d inputs applied to grad_output>: the
    Hessian-vector product in the inputs and the Jacobian's transpose in grad_output (None for an
    unused one), through create_graph=True twice."""
    out = fn(*inputs)
    if lib is torch:
        gs = torch.autograd.grad(out, inputs, grad_output, create_graph=True)
        return torch.autograd.grad(gs, (*inputs, grad_output), vectors, allow_unused=True)
    gs = grad(out, list(inputs), grad_output, create_graph=True)
    return grad(list(gs), [*inputs, grad_output], list(vectors), allow_unused=True)


def check_second_order(fb_fn, th_fn, arrays, rtol=1e-7, atol=1e-9):
    """gradgradcheck of fb_fn over float64 inputs made from arrays, and its second derivatives
    (in each input and in grad_output) against PyTorch's on the same inputs."""
    ours = [fc.tensor(a).requires_grad_() for a in arrays]
    assert gradgradcheck(fb_fn, tuple(ours), atol=1e-5, rtol=1e-4)
    theirs = [torch.tensor(a).requires_grad_() for a in arrays]
    out_shape = th_fn(*theirs).shape
    rng = np.random.default_rng(5)
    go = rng.standard_normal(out_shape)
    vs = [rng.standard_normal(a.shape) for a in arrays]
    got = second_order(fb_fn, ours, fc.tensor(go).requires_grad_(), [fc.tensor(v) for v in vs], None)
    want = second_order(th_fn, theirs, torch.tensor(go).requires_grad_(), [torch.tensor(v) for v in vs], torch)
    assert len(got) == len(want)
    for g, w in zip(got, want, strict=True):
        if w is None:
            assert g is None or np.allclose(to_torch(g).numpy(), 0.0)
            continue
        assert g is not None
        np.testing.assert_allclose(to_torch(g).numpy(), w.numpy(force=True), rtol=rtol, atol=atol)


def uniform(*shape, low=-3.0, high=3.0, seed=0):
    return np.random.default_rng(seed).uniform(low, high, shape)


ACTIVATIONS = {
    "gelu": (F.gelu, TF.gelu),
    "gelu_tanh": (lambda x: F.gelu(x, approximate="tanh"), lambda x: TF.gelu(x, approximate="tanh")),
    "silu": (F.silu, TF.silu),
    "mish": (F.mish, TF.mish),
    "elu": (lambda x: F.elu(x, 1.3), lambda x: TF.elu(x, 1.3)),
    "selu": (F.selu, TF.selu),
    "celu": (lambda x: F.celu(x, 0.7), lambda x: TF.celu(x, 0.7)),
    "elu_scaled": (
        lambda x: fc.elu(x, 1.3, 1.7, 0.6),
        lambda x: torch.ops.aten.elu(x, 1.3, 1.7, 0.6),
    ),
    "softplus": (F.softplus, TF.softplus),
    "softplus_beta_threshold": (
        lambda x: F.softplus(x, beta=2.0, threshold=3.0),
        lambda x: TF.softplus(x, beta=2.0, threshold=3.0),
    ),
    "hardswish": (F.hardswish, TF.hardswish),
    "logsigmoid": (F.logsigmoid, TF.logsigmoid),
    "softsign": (F.softsign, TF.softsign),
}


@pytest.mark.parametrize("name", list(ACTIVATIONS))
def test_activation_second_order(name):
    fb_fn, th_fn = ACTIVATIONS[name]
    # (-5, 5) crosses hardswish's kinks at +-3 and softplus's threshold (beta x = 3 at x = 1.5).
    check_second_order(fb_fn, th_fn, [uniform(3, 5, low=-5.0, high=5.0, seed=1)])


def test_mish_second_order_past_its_exponent_cap():
    # mish's kernel caps exp at x = 20; above it mish is x to float64 precision.
    x = np.array([-30.0, -8.0, 0.5, 19.0, 21.0, 40.0])
    check_second_order(F.mish, TF.mish, [x])


@pytest.mark.parametrize("dim", [-1, 0, 1])
def test_glu_second_order(dim):
    check_second_order(lambda x: F.glu(x, dim), lambda x: TF.glu(x, dim), [uniform(4, 6, 2, seed=2)])


@pytest.mark.parametrize("channels", [1, 3])
@pytest.mark.parametrize("shape", [(2, 3, 4), (2, 3, 2, 2)])
def test_prelu_second_order(channels, shape):
    x = uniform(*shape, seed=3)
    w = np.linspace(0.1, 0.5, channels)
    check_second_order(F.prelu, TF.prelu, [x, w])


def test_prelu_second_order_of_a_1d_input():
    check_second_order(F.prelu, TF.prelu, [uniform(7, seed=4), np.array([0.3])])


REDUCTIONS = ["none", "mean", "sum"]


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("weighted", [False, True])
def test_binary_cross_entropy_second_order(reduction, weighted):
    x = uniform(3, 4, low=0.1, high=0.9, seed=5)
    t = np.random.default_rng(6).uniform(0, 1, (3, 4))
    w = np.linspace(0.5, 2.0, 4) if weighted else None

    def ours(a):
        return F.binary_cross_entropy(a, fc.tensor(t), None if w is None else fc.tensor(w), reduction=reduction)

    def theirs(a):
        return TF.binary_cross_entropy(a, torch.tensor(t), None if w is None else torch.tensor(w), reduction=reduction)

    check_second_order(ours, theirs, [x], rtol=1e-6)


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("pos_weighted", [False, True])
def test_binary_cross_entropy_with_logits_second_order(reduction, weighted, pos_weighted):
    x = uniform(3, 4, low=-4.0, high=4.0, seed=7)
    t = np.random.default_rng(8).uniform(0, 1, (3, 4))
    w = np.linspace(0.5, 2.0, 4) if weighted else None
    pw = np.linspace(3.0, 0.5, 4) if pos_weighted else None

    def opt(a, lib):
        return None if a is None else (fc.tensor(a) if lib is fc else torch.tensor(a))

    def ours(a):
        return F.binary_cross_entropy_with_logits(
            a, fc.tensor(t), opt(w, fc), reduction=reduction, pos_weight=opt(pw, fc)
        )

    def theirs(a):
        return TF.binary_cross_entropy_with_logits(
            a, torch.tensor(t), opt(w, torch), reduction=reduction, pos_weight=opt(pw, torch)
        )

    check_second_order(ours, theirs, [x])


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize(
    "loss, knee",
    [("smooth_l1_loss", 0.0), ("smooth_l1_loss", 0.5), ("smooth_l1_loss", 1.5)]
    + [("huber_loss", 0.5), ("huber_loss", 1.0), ("huber_loss", 2.5)],
)
def test_smooth_l1_and_huber_second_order_in_input_and_target(reduction, loss, knee):
    # |x - t| spread over (0, 4): both sides of beta (smooth_l1) or delta (huber).
    x, t = uniform(3, 4, seed=9), uniform(3, 4, low=-1.0, high=1.0, seed=10)
    kw = {"reduction": reduction, "beta" if loss == "smooth_l1_loss" else "delta": knee}
    check_second_order(lambda a, b: getattr(F, loss)(a, b, **kw), lambda a, b: getattr(TF, loss)(a, b, **kw), [x, t])


CLASS_WEIGHT = np.array([0.5, 1.0, 2.0, 1.5])


def class_case(shape, target_kind, seed):
    """Logits of shape (N, C, ...) or (C,), and a target: class indices (one of them -1, the
    ignore_index the tests use, when there is a batch) or class probabilities."""
    rng = np.random.default_rng(seed)
    x = rng.uniform(-2.0, 2.0, shape)
    if target_kind == "probs":
        p = rng.uniform(0.1, 1.0, shape)
        return x, p / p.sum(axis=1 if len(shape) > 1 else 0, keepdims=True)
    target_shape = shape[:1] + shape[2:] if len(shape) > 1 else ()
    t = rng.integers(0, shape[1 if len(shape) > 1 else 0], target_shape)
    if t.ndim:
        t.flat[1] = -1
    return x, t


def to_both(t):
    return (fc.tensor(t), torch.tensor(t))


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("label_smoothing", [0.0, 0.2])
@pytest.mark.parametrize("target_kind", ["indices", "probs"])
@pytest.mark.parametrize("shape", [(3, 4), (2, 4, 3), (4,)])
def test_cross_entropy_second_order(reduction, weighted, label_smoothing, target_kind, shape):
    x, t = class_case(shape, target_kind, seed=13)
    t_fb, t_th = to_both(t)
    w_fb, w_th = to_both(CLASS_WEIGHT) if weighted else (None, None)
    kw = dict(reduction=reduction, label_smoothing=label_smoothing, ignore_index=-1)
    check_second_order(
        lambda a: F.cross_entropy(a, t_fb, w_fb, **kw), lambda a: TF.cross_entropy(a, t_th, w_th, **kw), [x]
    )


CE_T = to_both(class_case((3, 4), "indices", seed=14)[1])
BCE_T = to_both(np.random.default_rng(17).uniform(0, 1, (3, 4)))
POS_WEIGHT = to_both(np.array([2.0, 0.5, 1.0, 3.0]))
# name -> (ours, torch's): a scalar function of (3, 4) inputs whose second derivative is written
# with recomputed nonlinearities (differentiable again).
THIRD_ORDER = {
    "cross_entropy": (
        lambda a: F.cross_entropy(a, CE_T[0], label_smoothing=0.1, ignore_index=-1),
        lambda a: TF.cross_entropy(a, CE_T[1], label_smoothing=0.1, ignore_index=-1),
    ),
    "gelu_tanh": (
        lambda a: F.gelu(a, approximate="tanh").sum(),
        lambda a: TF.gelu(a, approximate="tanh").sum(),
    ),
    "mish": (lambda a: F.mish(a).sum(), lambda a: TF.mish(a).sum()),
    "glu": (lambda a: F.glu(a, 1).pow(2).sum(), lambda a: TF.glu(a, 1).pow(2).sum()),
    "bce_with_logits": (
        lambda a: F.binary_cross_entropy_with_logits(a, BCE_T[0], pos_weight=POS_WEIGHT[0]),
        lambda a: TF.binary_cross_entropy_with_logits(a, BCE_T[1], pos_weight=POS_WEIGHT[1]),
    ),
}


@pytest.mark.parametrize("name", list(THIRD_ORDER))
def test_third_order_matches_torch(name):
    """The second derivative's own graph differentiates again: the gradient of |H v|^2, H the
    Hessian of the function."""
    ours_fn, theirs_fn = THIRD_ORDER[name]
    x = uniform(3, 4, seed=18)
    v = np.random.default_rng(15).standard_normal((3, 4))

    def third(xs, fn, vector, differentiate):
        (g,) = differentiate(fn(xs), xs, create_graph=True)
        (hv,) = differentiate((g * vector).sum(), xs, create_graph=True)
        return differentiate((hv * hv).sum(), xs)[0]

    ours = third(fc.tensor(x).requires_grad_(), ours_fn, fc.tensor(v), grad)
    theirs = third(torch.tensor(x).requires_grad_(), theirs_fn, torch.tensor(v), torch.autograd.grad)
    np.testing.assert_allclose(to_torch(ours).numpy(), theirs.numpy(), rtol=1e-7, atol=1e-10)


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("weighted", [False, True])
@pytest.mark.parametrize("shape", [(3, 4), (2, 4, 3), (4,)])
def test_nll_loss_second_order(reduction, weighted, shape):
    x, t = class_case(shape, "indices", seed=16)
    t_fb, t_th = to_both(t)
    w_fb, w_th = to_both(CLASS_WEIGHT) if weighted else (None, None)
    check_second_order(
        lambda a: F.nll_loss(a, t_fb, w_fb, reduction=reduction, ignore_index=-1),
        lambda a: TF.nll_loss(a, t_th, w_th, reduction=reduction, ignore_index=-1),
        [x],
    )


def test_upsample_nearest_backward_second_order():
    x = leaf(1, 2, 3, 3)
    assert gradgradcheck(lambda a: F.interpolate(a, scale_factor=2, mode="nearest"), (x,))


def test_dropout_backward_second_order():
    x = leaf(4, 5)

    def dropout(a):
        fc.manual_seed(3)  # the same mask on every call of the check
        return F.dropout(a, 0.4, training=True)

    assert gradgradcheck(dropout, (x,))


@pytest.mark.parametrize("fill", ["uniform_", "normal_"])
def test_random_fills_give_the_overwritten_input_no_gradient(fill):
    x = leaf(6)

    def fn(a):
        g = fc.Generator()
        g.manual_seed(5)
        filled = getattr(a.clone(), fill)(0.0, 1.0, generator=g)
        return filled * 3 + a  # d/da = 1: the fill cut the path through the clone

    assert gradcheck(fn, (x,))


def test_fill_gives_the_overwritten_input_no_gradient():
    x = leaf(5)
    assert gradcheck(lambda a: a.clone().fill_(2.5) * a, (x,))


def test_cast_is_the_identity_for_gradients():
    x = leaf(7)
    # float32 in between: wider steps and tolerances for the rounding.
    assert gradcheck(lambda a: a.to(fc.float32).to(fc.float64) * 2, (x,), eps=1e-2, atol=1e-4, rtol=1e-3)
    assert gradcheck(lambda a: a.to(fc.float32).sum().to(fc.float64), (x,), eps=1e-2, atol=1e-4, rtol=1e-3)


def test_frexp_mantissa_gradient():
    # Away from powers of two, where the exponent (and so the mantissa's scale) jumps.
    x = fc.tensor([0.3, -0.7, 1.4, 5.5, -12.0]).to(fc.float64).requires_grad_()
    assert gradcheck(lambda a: fc.frexp(a)[0], (x,))
