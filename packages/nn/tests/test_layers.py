"""Layers, activations, losses and functional against PyTorch: same weights, same outputs and gradients."""

from __future__ import annotations

import math
from functools import partial

import flambeau_core as fc
import flambeau_nn as nn
import flambeau_nn.functional as F
import numpy as np
import pytest
import torch
from nn_testing import TOLERANCES, assert_close, compare_forward_backward, copy_params, from_torch, to_numpy


def _leaf(x: torch.Tensor):
    """The same values as a flambeau leaf and a torch leaf, both requiring grad."""
    ours = from_torch(x).requires_grad_(True)
    theirs = x.detach().clone().requires_grad_(True)
    return ours, theirs


def _check_module(ours, theirs, x: torch.Tensor, rtol=1e-5):
    copy_params(ours, theirs)
    xo, xt = _leaf(x)
    yo, yt = ours(xo), theirs(xt)
    assert_close(yo, yt, rtol=rtol)
    # a non-uniform upstream gradient exercises every path
    go = torch.randn(yt.shape)
    (yo * from_torch(go)).sum().backward()
    (yt * go).sum().backward()
    assert_close(xo.grad, xt.grad, rtol=rtol)
    their = dict(theirs.named_parameters())
    for name, p in ours.named_parameters():
        assert_close(p.grad, their[name].grad, rtol=rtol)


@pytest.mark.parametrize("shape", [(5, 3), (2, 4, 3), (3,)])
@pytest.mark.parametrize("bias", [True, False])
def test_linear_matches_torch(shape, bias):
    _check_module(nn.Linear(3, 4, bias=bias), torch.nn.Linear(3, 4, bias=bias), torch.randn(shape))


def test_mlp_matches_torch():
    ours = nn.Sequential(
        nn.Flatten(),
        nn.Linear(6, 5),
        nn.Tanh(),
        nn.Linear(5, 4),
        nn.Sigmoid(),
        nn.Linear(4, 3),
        nn.ReLU(),
        nn.Identity(),
    )
    theirs = torch.nn.Sequential(
        torch.nn.Flatten(),
        torch.nn.Linear(6, 5),
        torch.nn.Tanh(),
        torch.nn.Linear(5, 4),
        torch.nn.Sigmoid(),
        torch.nn.Linear(4, 3),
        torch.nn.ReLU(),
        torch.nn.Identity(),
    )
    _check_module(ours, theirs, torch.randn(7, 2, 3))


def test_linear_default_init_is_pytorchs():
    fan_in = 50
    m = nn.Linear(fan_in, 400)
    w, b = to_numpy(m.weight), to_numpy(m.bias)
    bound = 1 / math.sqrt(fan_in)  # kaiming_uniform(a=sqrt(5)) on (out, in)
    assert np.abs(w).max() <= bound and np.abs(w).max() > 0.95 * bound
    assert abs(w.mean()) < 0.05 * bound and abs(w.std() - bound / math.sqrt(3)) < 0.05 * bound
    assert np.abs(b).max() <= bound and len(np.unique(b)) == 400
    assert m.weight.dtype == fc.float32
    assert nn.Linear(2, 2, dtype=fc.float64).weight.dtype == fc.float64
    assert repr(m) == "Linear(in_features=50, out_features=400, bias=True)"


def test_linear_bad_input():
    with pytest.raises(ValueError, match=r"input shape \(2, 5\) does not match weight shape \(4, 3\)"):
        nn.Linear(3, 4)(fc.zeros(2, 5))
    with pytest.raises(ValueError, match="non-negative int"):
        nn.Linear(-1, 2)
    with pytest.raises(TypeError, match="argument .input. must be a Tensor"):
        F.linear([1.0], fc.zeros(1, 1))


@pytest.mark.parametrize(
    "ours,theirs",
    [(F.relu, torch.relu), (F.tanh, torch.tanh), (F.sigmoid, torch.sigmoid)],
)
def test_activation_functions(ours, theirs):
    xo, xt = _leaf(torch.randn(4, 5))
    assert_close(ours(xo), theirs(xt))
    ours(xo).sum().backward()
    theirs(xt).sum().backward()
    assert_close(xo.grad, xt.grad)


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_softmax_log_softmax(dim):
    x = torch.randn(3, 4) * 5
    for ours, theirs in ((F.softmax, torch.softmax), (F.log_softmax, torch.log_softmax)):
        xo, xt = _leaf(x)
        go = torch.randn(3, 4)
        yo, yt = ours(xo, dim), theirs(xt, dim)
        assert_close(yo, yt)
        (yo * from_torch(go)).sum().backward()
        (yt * go).sum().backward()
        assert_close(xo.grad, xt.grad, atol=1e-5)
    assert_close(nn.Softmax(dim)(from_torch(x)), torch.softmax(x, dim))
    assert_close(nn.LogSoftmax(dim)(from_torch(x)), torch.log_softmax(x, dim))


def test_flatten_dims():
    x = torch.randn(2, 3, 4, 5)
    assert_close(nn.Flatten()(from_torch(x)), torch.nn.Flatten()(x))
    assert_close(nn.Flatten(0, 2)(from_torch(x)), torch.nn.Flatten(0, 2)(x))


# ---- losses ----
def _check_loss(ours_fn, theirs_fn, x: torch.Tensor, target_ours, target_theirs, rtol=1e-5):
    xo, xt = _leaf(x)
    lo, lt = ours_fn(xo, target_ours), theirs_fn(xt, target_theirs)
    assert_close(lo, lt, rtol=rtol)
    go = torch.randn(lt.shape)
    (lo * from_torch(go)).sum().backward()
    (lt * go).sum().backward()
    assert_close(xo.grad, xt.grad, rtol=rtol, atol=1e-6)


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_cross_entropy_loss(reduction):
    x, t = torch.randn(6, 5), torch.randint(0, 5, (6,))
    _check_loss(
        nn.CrossEntropyLoss(reduction=reduction), torch.nn.CrossEntropyLoss(reduction=reduction), x, from_torch(t), t
    )


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_cross_entropy_weight_ignore_index(reduction):
    x, t = torch.randn(8, 4), torch.tensor([0, 1, 2, 3, -100, 1, 1, 2])
    w = torch.tensor([0.5, 1.0, 2.0, 0.25])
    _check_loss(
        nn.CrossEntropyLoss(weight=from_torch(w), reduction=reduction),
        torch.nn.CrossEntropyLoss(weight=w, reduction=reduction),
        x,
        from_torch(t),
        t,
    )
    t2 = torch.tensor([0, 3, 3, 1, 2, 3, 0, 0])
    _check_loss(
        lambda a, b: F.cross_entropy(a, b, ignore_index=3, reduction=reduction),
        lambda a, b: torch.nn.functional.cross_entropy(a, b, ignore_index=3, reduction=reduction),
        x,
        from_torch(t2),
        t2,
    )


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_cross_entropy_label_smoothing_and_probabilities(reduction):
    x, t = torch.randn(5, 4), torch.tensor([0, 1, 2, 3, 1])
    w = torch.tensor([0.5, 1.0, 2.0, 0.25])
    for weight in (None, w):
        _check_loss(
            partial(
                F.cross_entropy,
                weight=None if weight is None else from_torch(weight),
                reduction=reduction,
                label_smoothing=0.2,
            ),
            partial(torch.nn.functional.cross_entropy, weight=weight, reduction=reduction, label_smoothing=0.2),
            x,
            from_torch(t),
            t,
        )
    probs = torch.softmax(torch.randn(5, 4), 1)
    _check_loss(
        lambda a, b: F.cross_entropy(a, b, reduction=reduction),
        lambda a, b: torch.nn.functional.cross_entropy(a, b, reduction=reduction),
        x,
        from_torch(probs),
        probs,
    )


def test_cross_entropy_unbatched_and_spatial():
    x, t = torch.randn(5), torch.tensor(3)
    _check_loss(F.cross_entropy, torch.nn.functional.cross_entropy, x, from_torch(t), t)
    x, t = torch.randn(2, 3, 4), torch.randint(0, 3, (2, 4))
    for reduction in ("mean", "none"):
        _check_loss(
            partial(F.cross_entropy, reduction=reduction),
            partial(torch.nn.functional.cross_entropy, reduction=reduction),
            x,
            from_torch(t),
            t,
        )


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_nll_loss(reduction):
    x, t = torch.log_softmax(torch.randn(6, 5), 1), torch.randint(0, 5, (6,))
    w = torch.rand(5) + 0.1
    _check_loss(nn.NLLLoss(reduction=reduction), torch.nn.NLLLoss(reduction=reduction), x, from_torch(t), t)
    _check_loss(
        nn.NLLLoss(weight=from_torch(w), reduction=reduction),
        torch.nn.NLLLoss(weight=w, reduction=reduction),
        x,
        from_torch(t),
        t,
    )


@pytest.mark.parametrize("reduction", ["mean", "sum", "none"])
def test_mse_loss(reduction):
    x, y = torch.randn(4, 3), torch.randn(4, 3)
    _check_loss(nn.MSELoss(reduction=reduction), torch.nn.MSELoss(reduction=reduction), x, from_torch(y), y)


def test_loss_bad_input():
    logits = fc.zeros(3, 4)
    with pytest.raises(TypeError, match="int64 class indices"):
        F.cross_entropy(logits, fc.zeros(3, dtype=fc.float64).reshape(3))
    with pytest.raises(ValueError, match=r"needs target shape \(3,\), got \(2,\)"):
        F.cross_entropy(logits, fc.tensor([0, 1]))
    with pytest.raises(IndexError, match="out of bounds for 4 classes"):
        F.cross_entropy(logits, fc.tensor([0, 4, 1]))
    with pytest.raises(IndexError, match="out of bounds"):
        F.nll_loss(logits, fc.tensor([0, -1, 1]))
    with pytest.raises(ValueError, match="not a valid value for reduction"):
        nn.CrossEntropyLoss(reduction="avg")
    with pytest.raises(ValueError, match="not a valid value for reduction"):
        F.mse_loss(logits, logits, reduction="avg")
    with pytest.raises(TypeError, match="target must be a Tensor"):
        F.mse_loss(logits, 1.0)
    with pytest.raises(ValueError, match="weight must have shape"):
        F.nll_loss(logits, fc.tensor([0, 1, 2]), weight=fc.ones(3))


# ---- dropout ----
def test_dropout_train_and_eval():
    x = fc.ones(200, 100)
    d = nn.Dropout(0.3)
    y = to_numpy(d(x))
    kept = y != 0
    assert np.isclose(y[kept], 1 / 0.7).all()
    assert abs(kept.mean() - 0.7) < 0.02  # 20,000 Bernoulli draws: std ~0.003
    fc.manual_seed(1)
    a = to_numpy(F.dropout(x, 0.5))
    fc.manual_seed(1)
    b = to_numpy(F.dropout(x, 0.5))
    assert (a == b).all()
    d.eval()
    assert d(x) is x
    assert (to_numpy(F.dropout(x, 1.0)) == 0).all()
    assert F.dropout(x, 0.0) is x


def test_dropout_gradient_uses_the_mask():
    x = fc.ones(50, 20).requires_grad_(True)
    y = F.dropout(x, 0.5)
    y.sum().backward()
    assert (to_numpy(x.grad) == to_numpy(y)).all()


def test_dropout_bad_p():
    with pytest.raises(ValueError, match="between 0 and 1, but got 1.5"):
        nn.Dropout(1.5)
    with pytest.raises(ValueError, match="between 0 and 1"):
        F.dropout(fc.ones(1), -0.1)


# ---- Bilinear, ChannelShuffle and the 3-D padding layers ----


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("lead", [(5,), (2, 3), ()])
@pytest.mark.parametrize("bias", [True, False])
def test_bilinear_matches_torch(lead, bias, dtype):
    theirs = torch.nn.Bilinear(3, 4, 6, bias=bias, dtype=dtype)
    ours = nn.Bilinear(3, 4, 6, bias=bias, dtype=fc.float64 if dtype == torch.float64 else fc.float32)
    assert list(ours.state_dict()) == list(theirs.state_dict())
    assert repr(ours) == repr(theirs)
    copy_params(ours, theirs)
    x1, x2 = torch.randn(*lead, 3, dtype=dtype), torch.randn(*lead, 4, dtype=dtype)
    compare_forward_backward(ours, theirs, [x1, x2], **TOLERANCES[dtype])
    w = theirs.weight.detach()
    compare_forward_backward(nn.functional.bilinear, torch.nn.functional.bilinear, [x1, x2, w], **TOLERANCES[dtype])


def test_bilinear_init_and_errors():
    m = nn.Bilinear(16, 3, 200)
    bound = 1 / 16**0.5
    assert 0.95 * bound < m.weight.abs().max().item() <= bound
    assert m.bias.abs().max().item() <= bound
    with pytest.raises(fc.FlambeauError, match=r"\[bilinear\] input1 \(2, 3\) and input2 \(2, 5\) must end in 3 and 4"):
        m = nn.Bilinear(3, 4, 2)
        m(fc.randn(2, 3), fc.randn(2, 5))
    with pytest.raises(fc.FlambeauError, match=r"\[bilinear\] input1 .* must have the same leading dims"):
        nn.Bilinear(3, 4, 2)(fc.randn(2, 3), fc.randn(3, 4))


def test_channel_shuffle_matches_torch():
    x = torch.randn(2, 12, 3, 2)
    compare_forward_backward(nn.ChannelShuffle(3), torch.nn.ChannelShuffle(3), [x])
    compare_forward_backward(
        lambda x: nn.functional.channel_shuffle(x, 4), lambda x: torch.nn.functional.channel_shuffle(x, 4), [x]
    )
    with pytest.raises(fc.FlambeauError, match=r"\[channel_shuffle\] Number of channels \(12\) must be divisible"):
        nn.ChannelShuffle(5)(fc.randn(2, 12, 3))


@pytest.mark.parametrize(
    "name,args",
    [
        ("ZeroPad3d", ((1, 0, 2, 1, 0, 3),)),
        ("ConstantPad3d", (2, 1.5)),
        ("ReflectionPad3d", ((1, 2, 0, 1, 2, 1),)),
        ("ReplicationPad3d", (2,)),
        ("CircularPad3d", ((1, 2, 1, 0, 2, 1),)),
    ],
)
def test_padding_3d_matches_torch(name, args):
    ours, theirs = getattr(nn, name)(*args), getattr(torch.nn, name)(*args)
    assert repr(ours) == repr(theirs)
    compare_forward_backward(ours, theirs, [torch.randn(2, 3, 3, 4, 5)])
    compare_forward_backward(ours, theirs, [torch.randn(3, 3, 4, 5)])


# ---- F.grouped_mm (torch's CPU kernel computes the values but has no backward there) ----

_OFFS = torch.tensor([8, 16], dtype=torch.int32)
GROUPED = [
    ((16, 8), (2, 8, 8), _OFFS),
    ((2, 8, 8), (2, 8, 16), None),
    ((8, 16), (16, 8), _OFFS),
    ((2, 8, 8), (8, 16), _OFFS),
]


def _grouped_reference(a, b, offs):
    """The grouped product from per-group torch matmuls (differentiable, unlike torch's CPU kernel)."""
    if offs is None:
        return a @ b
    ends = offs.tolist()
    starts = [0, *ends[:-1]]
    if a.dim() == 2 and b.dim() == 3:
        return torch.cat([a[s:e] @ b[g] for g, (s, e) in enumerate(zip(starts, ends, strict=True))])
    if a.dim() == 2:
        return torch.stack([a[:, s:e] @ b[s:e] for s, e in zip(starts, ends, strict=True)])
    return torch.cat([a[g] @ b[:, s:e] for g, (s, e) in enumerate(zip(starts, ends, strict=True))], 1)


@pytest.mark.parametrize("sa,sb,offs", GROUPED)
def test_grouped_mm_matches_torch(sa, sb, offs):
    a, b = torch.randn(*sa), torch.randn(*sb)
    ours_offs = None if offs is None else from_torch(offs)
    assert_close(
        nn.functional.grouped_mm(from_torch(a), from_torch(b), offs=ours_offs),
        torch.nn.functional.grouped_mm(a, b, offs=offs),
        rtol=1e-5,
        atol=1e-5,
    )
    compare_forward_backward(
        lambda a, b: nn.functional.grouped_mm(a, b, offs=ours_offs),
        lambda a, b: _grouped_reference(a, b, offs),
        [a, b],
        rtol=1e-5,
        atol=1e-5,
    )


def test_grouped_mm_errors():
    a, b = fc.ones(16, 8), fc.ones(2, 8, 8)
    with pytest.raises(fc.FlambeauError, match=r"\[grouped_mm\] offs must be given exactly when"):
        nn.functional.grouped_mm(a, b)
    with pytest.raises(fc.FlambeauError, match=r"\[grouped_mm\] offs \[8, 20\] must be non-decreasing and at most 16"):
        nn.functional.grouped_mm(a, b, offs=fc.tensor([8, 20], dtype=fc.int32))
    with pytest.raises(fc.FlambeauError, match=r"\[grouped_mm\] contraction dims differ"):
        nn.functional.grouped_mm(a, fc.ones(2, 7, 8), offs=fc.tensor([8, 16], dtype=fc.int32))
    with pytest.raises(NotImplementedError, match=r"\[grouped_mm\] bias is not supported"):
        nn.functional.grouped_mm(a, b, offs=fc.tensor([8, 16], dtype=fc.int32), bias=fc.ones(8))
