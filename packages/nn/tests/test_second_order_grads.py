"""gradcheck cases for the derivatives.yaml entries no other test differentiates numerically (the
random fills and fill_: a zero gradient for the overwritten input; cast, frexp, the backward ops of
dropout and nearest upsampling), and the backward ops whose second derivative is not written yet,
which raise NotImplementedError naming themselves.

CI checks that every derivatives.yaml entry has such a case (flambeau_autograd.testing); this file
holds the ones whose natural test elsewhere compares with PyTorch but does not run gradcheck.
"""

from __future__ import annotations

from pathlib import Path

import flambeau_core as fc
import flambeau_nn.functional as F
import numpy as np
import pytest
from flambeau_autograd import gradcheck, gradgradcheck
from flambeau_autograd.testing import declared_unsupported

RNG = np.random.default_rng(11)


def leaf(*shape, low=-2.0, high=2.0):
    return fc.tensor(RNG.uniform(low, high, shape)).requires_grad_()


def probabilities(*shape):
    return fc.tensor(RNG.uniform(0.1, 0.9, shape)).requires_grad_()


TARGET = fc.tensor(RNG.uniform(0, 1, (3, 4)))
LABELS = fc.tensor([0, 3, 1])

# The backward ops whose own derivative is not written yet (derivatives.yaml raises
# NotImplementedError naming them): entry -> (function, a leaf input).
SECOND_ORDER_NOT_YET = {
    "gelu_backward": (F.gelu, lambda: leaf(3, 4)),
    "silu_backward": (F.silu, lambda: leaf(3, 4)),
    "mish_backward": (F.mish, lambda: leaf(3, 4)),
    "elu_backward": (F.elu, lambda: leaf(3, 4)),
    "softplus_backward": (F.softplus, lambda: leaf(3, 4)),
    "hardswish_backward": (F.hardswish, lambda: leaf(3, 4)),
    "log_sigmoid_backward": (F.logsigmoid, lambda: leaf(3, 4)),
    "softsign_backward": (F.softsign, lambda: leaf(3, 4)),
    "glu_backward": (lambda x: F.glu(x, -1), lambda: leaf(3, 4)),
    "_prelu_backward_input": (lambda x: F.prelu(x, fc.tensor([0.25], dtype=fc.float64)), lambda: leaf(3, 4)),
    "_prelu_backward_weight": (lambda x: F.prelu(fc.ones(3, 4, dtype=fc.float64), x), lambda: leaf(1)),
    "binary_cross_entropy_backward": (lambda x: F.binary_cross_entropy(x, TARGET), lambda: probabilities(3, 4)),
    "binary_cross_entropy_with_logits_backward": (
        lambda x: F.binary_cross_entropy_with_logits(x, TARGET),
        lambda: leaf(3, 4),
    ),
    "smooth_l1_loss_backward": (lambda x: F.smooth_l1_loss(x, TARGET), lambda: leaf(3, 4)),
    "huber_loss_backward": (lambda x: F.huber_loss(x, TARGET), lambda: leaf(3, 4)),
    "_cross_entropy_backward": (lambda x: F.cross_entropy(x, LABELS), lambda: leaf(3, 4)),
    "nll_loss_nd_backward": (lambda x: F.nll_loss(x, LABELS), lambda: leaf(3, 4)),
}


def test_the_not_yet_list_is_the_table_s():
    """When a second derivative is written, its case moves from this list to a gradgradcheck."""
    table = Path(__file__).resolve().parents[2] / "autograd" / "derivatives.yaml"
    assert sorted(declared_unsupported(table)) == sorted(SECOND_ORDER_NOT_YET)


@pytest.mark.parametrize("entry", list(SECOND_ORDER_NOT_YET))
def test_second_order_not_written_yet_raises_naming_the_backward_op(entry):
    fn, make = SECOND_ORDER_NOT_YET[entry]
    with pytest.raises(NotImplementedError, match=rf"\[{entry}\] the second derivative"):
        gradgradcheck(fn, (make(),))


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
