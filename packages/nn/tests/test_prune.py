"""nn.utils.prune against PyTorch: the masks of the deterministic methods (l1_unstructured, ln_structured,
custom_from_mask, global_unstructured, identity) and of successive prunings, the random methods by their
invariants, the weight_orig/weight_mask state_dict keys, forward and gradients through the mask, remove,
is_pruned, and the error paths."""

from __future__ import annotations

import math

import flambeau_autograd as fa
import flambeau_core as fc
import flambeau_nn as nn
import numpy as np
import pytest
import torch
import torch.nn.utils.prune as torch_prune
from flambeau_core import FlambeauError
from nn_testing import close, copy_params, fb, npy, th

prune = nn.utils.prune
tprune = torch_prune


def _pair(seed=0, n_in=6, n_out=4):
    torch.manual_seed(seed)
    theirs = torch.nn.Linear(n_in, n_out).double()
    ours = nn.Linear(n_in, n_out).double()
    copy_params(ours, theirs)
    return ours, theirs


def _same_state(ours, theirs):
    assert list(ours.state_dict()) == list(theirs.state_dict())
    for key, value in theirs.state_dict().items():
        close(ours.state_dict()[key], value, 0, 0, key)
    close(ours.weight, theirs.weight, 0, 0, "weight")


@pytest.mark.parametrize("amount", [0.3, 5, 0, 1.0])
def test_l1_unstructured(amount):
    ours, theirs = _pair()
    prune.l1_unstructured(ours, "weight", amount)
    tprune.l1_unstructured(theirs, "weight", amount)
    _same_state(ours, theirs)
    assert isinstance(ours.weight_orig, nn.Parameter) and "weight" not in ours._parameters


@pytest.mark.parametrize(
    "n,dim,amount", [(2, 0, 0.5), (1, 1, 2), (math.inf, -1, 0.34), ("fro", 0, 1), (-math.inf, 0, 1)]
)
def test_ln_structured(n, dim, amount):
    ours, theirs = _pair(1)
    prune.ln_structured(ours, "weight", amount, n, dim)
    tprune.ln_structured(theirs, "weight", amount, n, dim)
    _same_state(ours, theirs)


def test_successive_pruning_combines_masks_as_torch():
    ours, theirs = _pair(2)
    for fn, args in [
        ("l1_unstructured", (0.25,)),
        ("ln_structured", (1, 2, 0)),
        ("l1_unstructured", (3,)),
        ("ln_structured", (1, 2, 1)),
    ]:
        getattr(prune, fn)(ours, "weight", *args)
        getattr(tprune, fn)(theirs, "weight", *args)
        _same_state(ours, theirs)
    hooks = [h for h in ours._forward_pre_hooks.values() if isinstance(h, prune.BasePruningMethod)]
    assert len(hooks) == 1 and isinstance(hooks[0], prune.PruningContainer) and len(hooks[0]) == 4


def test_forward_backward_through_the_mask_and_remove():
    ours, theirs = _pair(3)
    prune.l1_unstructured(ours, "weight", 0.5)
    prune.l1_unstructured(ours, "bias", 1)
    tprune.l1_unstructured(theirs, "weight", 0.5)
    tprune.l1_unstructured(theirs, "bias", 1)
    x = np.random.default_rng(0).standard_normal((3, 6))
    yo, yt = ours(fb(x)), theirs(th(x))
    close(yo, yt, 1e-12, 1e-12)
    yo.sum().backward()
    yt.sum().backward()
    close(ours.weight_orig.grad, theirs.weight_orig.grad, 1e-12, 1e-12)  # zero where pruned
    close(ours.bias_orig.grad, theirs.bias_orig.grad, 1e-12, 1e-12)
    # The pre-hook recomputes the weight from weight_orig after an optimizer step.
    with torch.no_grad():
        theirs.weight_orig.add_(1.0)
    with fa.no_grad():
        ours.weight_orig.add_(1.0)
    close(ours(fb(x)), theirs(th(x)), 1e-12, 1e-12)
    assert prune.is_pruned(ours)
    orig = ours.weight_orig
    prune.remove(ours, "weight")
    tprune.remove(theirs, "weight")
    prune.remove(ours, "bias")
    tprune.remove(theirs, "bias")
    assert ours.weight is orig and not prune.is_pruned(ours)
    _same_state(ours, theirs)


def test_custom_from_mask_identity_and_global():
    ours, theirs = _pair(4)
    mask = (np.random.default_rng(1).random((4, 6)) > 0.5).astype(np.float64)
    prune.custom_from_mask(ours, "weight", fb(mask))
    tprune.custom_from_mask(theirs, "weight", th(mask))
    prune.identity(ours, "bias")
    tprune.identity(theirs, "bias")
    _same_state(ours, theirs)
    a, ta = _pair(5)
    b, tb = _pair(6, 4, 3)
    prune.l1_unstructured(a, "weight", 0.2)
    tprune.l1_unstructured(ta, "weight", 0.2)
    scores = {(b, "weight"): fb(np.arange(12.0).reshape(3, 4))}
    tscores = {(tb, "weight"): th(np.arange(12.0).reshape(3, 4))}
    prune.global_unstructured(
        [(a, "weight"), (b, "weight"), (b, "bias")], prune.L1Unstructured, importance_scores=scores, amount=0.4
    )
    tprune.global_unstructured(
        [(ta, "weight"), (tb, "weight"), (tb, "bias")], tprune.L1Unstructured, importance_scores=tscores, amount=0.4
    )
    _same_state(a, ta)
    _same_state(b, tb)


def test_importance_scores_and_prune_method():
    ours, theirs = _pair(7)
    scores = np.random.default_rng(2).random((4, 6))
    prune.l1_unstructured(ours, "weight", 7, importance_scores=fb(scores))
    tprune.l1_unstructured(theirs, "weight", 7, importance_scores=th(scores))
    _same_state(ours, theirs)
    t = np.random.default_rng(3).standard_normal((3, 5))
    close(prune.L1Unstructured(0.4).prune(fb(t)), tprune.L1Unstructured(0.4).prune(th(t)), 0, 0)
    close(prune.LnStructured(2, 2, 0).prune(fb(t)), tprune.LnStructured(2, 2, 0).prune(th(t)), 0, 0)


@pytest.mark.parametrize("amount", [0.4, 3])
def test_random_unstructured_and_structured_invariants(amount):
    ours, _ = _pair(8)
    w = npy(ours.weight).copy()
    prune.random_unstructured(ours, "weight", amount)
    mask = npy(ours.weight_mask)
    mask_before = mask.copy()
    expected = amount if isinstance(amount, int) else round(amount * 24)
    assert set(np.unique(mask)) <= {0.0, 1.0} and int((mask == 0).sum()) == expected
    np.testing.assert_array_equal(npy(ours.weight), w * mask)
    other, _ = _pair(9)
    prune.random_structured(other, "weight", amount if isinstance(amount, int) else 0.5, dim=1)
    mask = npy(other.weight_mask)
    cols = (mask == 0).all(0)
    assert np.all(mask.all(0) | cols) and int(cols.sum()) == (3 if isinstance(amount, int) else 3)
    # Successive random pruning only removes entries that are still there.
    prune.random_unstructured(ours, "weight", 0.5)
    first = npy(ours.weight_orig) * 0 + mask_before
    assert np.all(npy(ours.weight_mask)[first == 0] == 0)
    assert int((npy(ours.weight_mask) == 0).sum()) == expected + round(0.5 * (24 - expected))


def test_prune_errors():
    m = nn.Linear(3, 2)
    with pytest.raises(AttributeError, match=r"\[prune\] Module Linear has no parameter or buffer named 'w'"):
        prune.l1_unstructured(m, "w", 1)
    with pytest.raises(TypeError, match="Invalid type for amount"):
        prune.l1_unstructured(m, "weight", "half")
    with pytest.raises(FlambeauError, match="should either be a float in the range"):
        prune.l1_unstructured(m, "weight", 1.5)
    with pytest.raises(FlambeauError, match="should be smaller than the number of parameters to prune=6"):
        prune.l1_unstructured(m, "weight", 7)
    assert "weight" in m._parameters and "weight_orig" not in m._parameters  # a failed pruning leaves it as it was
    with pytest.raises(FlambeauError, match="Structured pruning can only be applied to multidimensional"):
        prune.ln_structured(m, "bias", 1, 2, 0)
    with pytest.raises(IndexError, match="Invalid index 2"):
        prune.ln_structured(m, "weight", 1, 2, 2)
    with pytest.raises(FlambeauError, match="importance_scores should have the same shape"):
        prune.l1_unstructured(m, "weight", 1, importance_scores=fc.zeros(3))
    with pytest.raises(FlambeauError, match="has to be pruned before pruning can be removed"):
        prune.remove(m, "weight")
    with pytest.raises(TypeError, match='Only "unstructured" PRUNING_TYPE'):
        prune.global_unstructured([(m, "weight")], prune.LnStructured, amount=1, n=2, dim=0)
    with pytest.raises(TypeError, match="importance_scores must be of type dict"):
        prune.global_unstructured([(m, "weight")], prune.L1Unstructured, importance_scores=[], amount=1)
