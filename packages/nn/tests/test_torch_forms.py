"""torch's top-level spellings of the functional ops (flambeau_nn/_torch_forms.py) against PyTorch 2.13:
dropout with a train flag, batch/instance norm in torch's argument order, the losses with an integer
reduction, embedding_bag's four results, Tensor.hardshrink/prelu, and the errors."""

from __future__ import annotations

import flambeau_core as fc
import flambeau_nn  # noqa: F401  (installs Tensor.hardshrink/prelu)
import numpy as np
import pytest
import torch
from flambeau_nn import _torch_forms as forms

RNG = np.random.default_rng(23)


def pair(*shape, positive=False):
    a = RNG.standard_normal(shape).astype(np.float32)
    a = np.abs(a) + 0.1 if positive else a
    return fc.tensor(a), torch.tensor(a)


def close(ours, theirs, **tol):
    np.testing.assert_allclose(np.asarray(ours.tolist()), theirs.detach().numpy(), rtol=1e-5, atol=1e-6, **tol)


@pytest.mark.parametrize("name", ["dropout", "alpha_dropout", "feature_dropout", "feature_alpha_dropout"])
def test_dropouts_off_or_at_the_ends_match_torch(name):
    x, t = pair(4, 3, 5)
    ours, theirs = getattr(forms, name), getattr(torch, name)
    close(ours(x, 0.5, False), theirs(t, 0.5, False))
    close(ours(x, 0.0, True), theirs(t, 0.0, True))
    if "alpha" not in name:  # p=1 zeroes everything
        close(ours(x, 1.0, True), theirs(t, 1.0, True))
    y = fc.ones(4, 3, 5)
    assert getattr(forms, name + "_")(y, 0.5, False) is y


def test_dropout_scales_the_kept_elements():
    y = forms.dropout(fc.ones(20000), 0.25, True)
    kept = (y != 0).float().mean().item()
    assert set(np.unique(np.asarray(y.tolist(), np.float32)).tolist()) <= {0.0, float(np.float32(1 / 0.75))}
    assert abs(kept - 0.75) < 0.02
    x = fc.ones(1000)
    forms.dropout_(x, 0.5, True)
    assert 0.4 < (x == 0).float().mean().item() < 0.6


def test_feature_dropout_drops_whole_channels():
    y = forms.feature_dropout(fc.ones(64, 8, 5), 0.5, True)
    assert bool((y.amax(2) == y.amin(2)).all()) and 0.35 < (y == 0).float().mean().item() < 0.65
    t = torch.feature_dropout(torch.ones(64, 8, 5), 0.5, True)
    assert bool((t.amax(2) == t.amin(2)).all())


def test_batch_norm_and_instance_norm_in_torch_order():
    x, t = pair(4, 3, 5)
    w, tw = pair(3)
    b, tb = pair(3)
    for training in (True, False):
        rm, trm = pair(3)
        rv, trv = pair(3, positive=True)
        ours = forms.batch_norm(x, w, b, rm, rv, training, 0.2, 1e-5, False)
        theirs = torch.batch_norm(t, tw, tb, trm, trv, training, 0.2, 1e-5, False)
        close(ours, theirs, err_msg=f"training={training}")
        close(rm, trm)
        close(rv, trv)
    ours = forms.instance_norm(x, w, b, None, None, True, 0.1, 1e-5, False)
    close(ours, torch.instance_norm(t, tw, tb, None, None, True, 0.1, 1e-5, False))


@pytest.mark.parametrize("reduction", [0, 1, 2])
def test_losses_with_an_integer_reduction_match_torch(reduction):
    a, ta = pair(6, 4)
    b, tb = pair(6, 4)
    c, tc = pair(6, 4)
    sign = fc.tensor([1.0, -1.0, 1.0, -1.0, -1.0, 1.0])
    tsign = torch.tensor(sign.tolist())
    p, tp = pair(6, 4, positive=True)
    cases = [
        ("kl_div", (a.log_softmax(1), p), (ta.log_softmax(1), tp), {"log_target": False}),
        ("kl_div", (a, b), (ta, tb), {"log_target": True}),
        ("cosine_embedding_loss", (a, b, sign), (ta, tb, tsign), {"margin": 0.2}),
        ("hinge_embedding_loss", (a, sign.reshape(6, 1).expand(6, 4)), (ta, tsign.reshape(6, 1).expand(6, 4)), {}),
        ("margin_ranking_loss", (a[:, 0], b[:, 0], sign), (ta[:, 0], tb[:, 0], tsign), {"margin": 0.1}),
        ("triplet_margin_loss", (a, b, c), (ta, tb, tc), {"margin": 0.5, "swap": True}),
        (
            "binary_cross_entropy_with_logits",
            (a, p.clamp(max=1.0), None, p[0]),
            (ta, tp.clamp(max=1.0), None, tp[0]),
            {},
        ),
    ]
    for name, args, targs, kwargs in cases:
        ours = getattr(forms, name)(*args, **kwargs, reduction=reduction)
        close(ours, getattr(torch, name)(*targs, **kwargs, reduction=reduction), err_msg=name)
    for log_input, full in ((True, False), (False, True)):
        inp, tinp = (a, ta) if log_input else (p, tp)
        ours = forms.poisson_nll_loss(inp, p * 3, log_input, full, 1e-8, reduction)
        close(ours, torch.poisson_nll_loss(tinp, tp * 3, log_input, full, 1e-8, reduction))


def test_losses_are_unreduced_by_default_as_torch_top_level_forms():
    """torch.kl_div(x, t) and the other top-level losses return every element's loss (reduction 0), where
    torch.nn.functional's default to the mean: a program calling the torch spelling gets the same shape."""
    a, ta = pair(6, 4)
    b, tb = pair(6, 4)
    p, tp = pair(6, 4, positive=True)
    sign = fc.tensor([1.0, -1.0, 1.0, -1.0, -1.0, 1.0])
    tsign = torch.tensor(sign.tolist())
    cases = [
        ("kl_div", (a, p), (ta, tp)),
        ("binary_cross_entropy_with_logits", (a, p.clamp(max=1.0)), (ta, tp.clamp(max=1.0))),
        ("cosine_embedding_loss", (a, b, sign), (ta, tb, tsign)),
        ("hinge_embedding_loss", (a, b), (ta, tb)),
        ("margin_ranking_loss", (a[:, 0], b[:, 0], sign), (ta[:, 0], tb[:, 0], tsign)),
        ("triplet_margin_loss", (a, b, p), (ta, tb, tp)),
    ]
    for name, args, targs in cases:
        ours, theirs = getattr(forms, name)(*args), getattr(torch, name)(*targs)
        assert tuple(ours.shape) == tuple(theirs.shape) and theirs.dim() > 0, name
        close(ours, theirs, err_msg=name)


def test_losses_refuse_another_reduction():
    x = fc.zeros(3)
    with pytest.raises(fc.FlambeauError, match=r"\[kl_div\] reduction must be 0 \(none\), 1 \(mean\) or 2 \(sum\)"):
        forms.kl_div(x, x, "mean")
    with pytest.raises(fc.FlambeauError, match=r"\[hinge_embedding_loss\] reduction must be"):
        forms.hinge_embedding_loss(x, x, 1.0, 3)


@pytest.mark.parametrize("mode", [0, 1, 2])
@pytest.mark.parametrize("padding_idx", [None, 4, -1, 1])
def test_embedding_bag_matches_torch(mode, padding_idx):
    w, tw = pair(5, 3)
    idx, offsets = [0, 1, 4, 4, 2, 1], [0, 2, 5]
    ours = forms.embedding_bag(w, fc.tensor(idx), fc.tensor(offsets), False, mode, False, None, False, padding_idx)
    targs = (tw, torch.tensor(idx), torch.tensor(offsets), False, mode, False, None, False)
    theirs = (
        torch.embedding_bag(*targs, -1 if padding_idx is None else padding_idx)
        if padding_idx is not None
        else (torch.embedding_bag(*targs))
    )
    assert len(ours) == 4
    close(ours[0], theirs[0])
    assert [o.dtype for o in ours] == [fc.float32, fc.int64, fc.int64, fc.int64]
    if mode == 2:  # the bags with a row left (flambeau marks a bag of padding only with -1, torch with 0)
        assert ours[3][:2].tolist() == theirs[3][:2].tolist()


def test_embedding_bag_errors():
    w = fc.zeros(5, 3)
    with pytest.raises(fc.FlambeauError, match=r"\[embedding_bag\] mode has to be 0 \(sum\), 1 \(mean\) or 2"):
        forms.embedding_bag(w, fc.tensor([0]), fc.tensor([0]), False, 3)
    with pytest.raises(fc.FlambeauError, match=r"\[embedding_bag\] padding_idx must be within the 5 rows"):
        forms.embedding_bag(w, fc.tensor([0]), fc.tensor([0]), padding_idx=5)


def test_feature_dropout_needs_two_dims():
    with pytest.raises(RuntimeError, match="Feature dropout requires at least 2 dimensions in the input"):
        torch.feature_dropout(torch.ones(3), 0.5, True)
    with pytest.raises(fc.FlambeauError, match=r"\[feature_dropout\] Feature dropout requires at least 2 dimensions"):
        forms.feature_dropout(fc.ones(3), 0.5, True)
    with pytest.raises(fc.FlambeauError, match=r"dropout probability has to be between 0 and 1, but got 1.5"):
        forms.feature_dropout(fc.ones(3, 2), 1.5, True)


def test_tensor_hardshrink_and_prelu_match_torch():
    x, t = pair(4, 3)
    close(x.hardshrink(), t.hardshrink())
    close(x.hardshrink(0.8), t.hardshrink(0.8))
    w, tw = pair(3)
    close(x.prelu(w), t.prelu(tw))
    close(x.prelu(fc.tensor([0.25])), t.prelu(torch.tensor([0.25])))


@pytest.mark.parametrize("reduction", [0, 1, 2])
@pytest.mark.parametrize("lengths_as_tensors", [False, True])
def test_ctc_loss_matches_torch(reduction, lengths_as_tensors):
    logits, tlogits = pair(7, 3, 5)
    log_probs, tlog_probs = logits.log_softmax(2), tlogits.log_softmax(2)
    targets = [[1, 2, 2], [3, 4, 1], [2, 1, 4]]
    input_lengths, target_lengths = [7, 6, 5], [3, 2, 3]
    if lengths_as_tensors:
        args = (fc.tensor(input_lengths), fc.tensor(target_lengths))
        targs = (torch.tensor(input_lengths), torch.tensor(target_lengths))
    else:
        args = targs = (input_lengths, target_lengths)
    ours = forms.ctc_loss(log_probs, fc.tensor(targets), *args, 0, reduction, True)
    theirs = torch.ctc_loss(tlog_probs, torch.tensor(targets), *targs, 0, reduction, True)
    close(ours, theirs)
    with pytest.raises(fc.FlambeauError, match=r"\[ctc_loss\] reduction must be 0 \(none\), 1 \(mean\) or 2"):
        forms.ctc_loss(log_probs, fc.tensor(targets), *args, 0, "mean")


@pytest.mark.parametrize("interpolation", [0, 1, 2])
@pytest.mark.parametrize("padding", [0, 1, 2])
@pytest.mark.parametrize("align_corners", [False, True])
def test_grid_sampler_2d_matches_torch(interpolation, padding, align_corners):
    x, tx = pair(2, 3, 4, 5)
    g, tg = pair(2, 3, 2, 2)
    ours = forms.grid_sampler_2d(x, g, interpolation, padding, align_corners)
    close(ours, torch.grid_sampler_2d(tx, tg, interpolation, padding, align_corners))
    close(
        forms.grid_sampler(x, g, interpolation, padding, align_corners),
        torch.grid_sampler(tx, tg, interpolation, padding, align_corners),
    )


@pytest.mark.parametrize("interpolation", [0, 1])
@pytest.mark.parametrize("padding", [0, 1, 2])
def test_grid_sampler_3d_matches_torch(interpolation, padding):
    x, tx = pair(2, 2, 3, 4, 5)
    g, tg = pair(2, 2, 3, 2, 3)
    close(
        forms.grid_sampler_3d(x, g, interpolation, padding, False),
        torch.grid_sampler_3d(tx, tg, interpolation, padding, False),
    )


def test_grid_sampler_errors():
    x, g = fc.zeros(1, 1, 2, 2), fc.zeros(1, 1, 1, 2)
    with pytest.raises(ValueError, match=r"\[grid_sampler_2d\] interpolation_mode must be 0 \(bilinear\)"):
        forms.grid_sampler_2d(x, g, 5, 0, False)
    with pytest.raises(ValueError, match=r"\[grid_sampler\] padding_mode must be 0 \(zeros\)"):
        forms.grid_sampler(x, g, 0, 7, False)
    with pytest.raises(fc.FlambeauError, match=r"\[grid_sampler_3d\] expected a 5-D input"):
        forms.grid_sampler_3d(x, g, 0, 0, False)
