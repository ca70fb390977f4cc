"""Forward-mode formulas (derivatives.yaml `result:`) of the nn entries: matrix products, convolution,
softmax, normalizations, pooling, padding, dropout, embedding bags, activations with weights, the losses
and their backward kernels (second order), the recurrent layer. Each op is reached as a user does
(flambeau_nn.functional, flambeau_core, flambeau_nn's rnn layer) and checked by
gradcheck(check_forward_ad=True) against finite differences (float64), the main ones also against
torch.func.jvp on the same primals and tangents; reverse over forward (a tangent differentiated in its
primals) against finite differences."""

from __future__ import annotations

import flambeau_autograd as ag
import flambeau_autograd.forward_ad as fwAD
import flambeau_core as fc
import flambeau_nn.functional as F
import numpy as np
import pytest
import torch
import torch.nn.functional as TF
from nn_testing import to_numpy as to_np


def fb_tensor(a, requires_grad=False):
    """A float64 flambeau tensor of an array of any rank, 0 included (this file's inputs are all floating)."""
    a = np.asarray(a, dtype=np.float64)
    t = fc.tensor(a.tolist(), dtype=fc.float64).reshape(a.shape)
    return t.requires_grad_() if requires_grad else t


RNG = np.random.default_rng(20261129)


@pytest.fixture(autouse=True)
def _fixed_seed():
    """Each test draws the same numbers however the tests are selected."""
    global RNG
    RNG = np.random.default_rng(20261129)


def arrays(*shapes, positive=False):
    if positive:
        return [RNG.uniform(0.2, 0.8, size=s) for s in shapes]
    return [RNG.standard_normal(s) for s in shapes]


def check(fn, *inputs):
    """gradcheck in both modes; an ndarray is an input to differentiate, anything else is passed as is."""
    args = [fb_tensor(a, requires_grad=True) if isinstance(a, np.ndarray) else a for a in inputs]
    assert ag.gradcheck(fn, args, check_forward_ad=True)


def jvp_matches_torch(fb_fn, th_fn, primals, tangents, rtol=1e-7, atol=1e-9):
    """flambeau's dual-tensor pass against torch.func.jvp on the same primals and tangents (None: no tangent)."""
    with fwAD.dual_level():
        args = [
            fwAD.make_dual(fb_tensor(p), fb_tensor(t)) if t is not None else fb_tensor(p)
            for p, t in zip(primals, tangents, strict=True)
        ]
        out = fwAD.unpack_dual(fb_fn(*args))
        value, tangent = to_np(out.primal), to_np(out.tangent)
    diff = [i for i, t in enumerate(tangents) if t is not None]

    def th_of(*xs):
        full = [torch.tensor(p) for p in primals]
        for i, x in zip(diff, xs, strict=True):
            full[i] = x
        return th_fn(*full)

    tv, tt = torch.func.jvp(
        th_of, tuple(torch.tensor(primals[i]) for i in diff), tuple(torch.tensor(tangents[i]) for i in diff)
    )
    np.testing.assert_allclose(value, tv.detach().numpy(), rtol=rtol, atol=atol)
    np.testing.assert_allclose(tangent, tt.detach().numpy(), rtol=rtol, atol=atol)


# ---- matrix products ----


def test_mm_bmm_dot():
    check(fc.mm, *arrays((2, 3), (3, 4)))
    check(fc.bmm, *arrays((2, 2, 3), (2, 3, 2)))
    check(fc.dot, *arrays(4, 4))  # _dot_small


def test_mm_one_operand_dual():
    a, b = arrays((2, 3), (3, 4))
    jvp_matches_torch(fc.mm, torch.mm, [a, b], [np.ones((2, 3)), None])
    jvp_matches_torch(fc.mm, torch.mm, [a, b], [None, arrays((3, 4))[0]])


@pytest.mark.parametrize("bias", [True, False])
def test_linear(bias):
    x, w, b = arrays((2, 3, 4), (5, 4), 5)
    if bias:
        check(F.linear, x, w, b)
        check(lambda x, b: F.linear(x, fb_tensor(w), b), x, b)  # the bias's tangent alone
        jvp_matches_torch(F.linear, TF.linear, [x, w, b], arrays((2, 3, 4), (5, 4), 5))
    else:
        check(F.linear, x, w)
        jvp_matches_torch(F.linear, TF.linear, [x, w], arrays((2, 3, 4), (5, 4)))


# ---- convolution ----


def test_conv2d_matches_torch():
    x, w, b = arrays((2, 4, 5, 5), (6, 2, 3, 3), 6)
    kw = dict(stride=2, padding=1, groups=2)
    tangents = arrays((2, 4, 5, 5), (6, 2, 3, 3), 6)
    jvp_matches_torch(lambda *a: F.conv2d(*a, **kw), lambda *a: TF.conv2d(*a, **kw), [x, w, b], tangents)
    jvp_matches_torch(
        lambda x, w: F.conv2d(x, w, **kw), lambda x, w: TF.conv2d(x, w, **kw), [x, w], [None, tangents[1]]
    )


def test_conv_gradcheck():
    check(lambda x, w, b: F.conv1d(x, w, b, padding=1, dilation=2), *arrays((1, 2, 6), (3, 2, 2), 3))
    check(lambda x, w: F.conv2d(x, w, stride=(1, 2)), *arrays((1, 2, 4, 4), (2, 2, 2, 2)))
    check(lambda x, w, b: F.conv_transpose2d(x, w, b, stride=2), *arrays((1, 2, 3, 3), (2, 1, 2, 2), 1))


def test_convolution_backward_weight():
    """The weight's gradient (reached by a create_graph backward) is bilinear in grad_output and input."""
    w = fb_tensor(arrays((3, 2, 2, 2))[0])

    def weight_grad(x, go):
        wr = w.detach().requires_grad_()
        return ag.grad(F.conv2d(x, wr, padding=1), [wr], go, create_graph=True)[0]

    check(weight_grad, *arrays((1, 2, 3, 3), (1, 3, 4, 4)))


# ---- softmax ----


@pytest.mark.parametrize("dim", [0, 1, -1])
def test_log_softmax_softmax(dim):
    (x,) = arrays((3, 4, 2))
    (t,) = arrays((3, 4, 2))
    jvp_matches_torch(lambda x: F.log_softmax(x, dim), lambda x: TF.log_softmax(x, dim), [x], [t])
    jvp_matches_torch(lambda x: F.softmax(x, dim), lambda x: TF.softmax(x, dim), [x], [t])
    check(lambda x: F.log_softmax(x, dim), x)
    check(lambda x: F.softmax(x, dim), x)


# ---- normalization ----


@pytest.mark.parametrize("affine", [True, False])
def test_layer_norm(affine):
    x, w, b = arrays((2, 3, 4), (3, 4), (3, 4))
    tx, tw, tb = arrays((2, 3, 4), (3, 4), (3, 4))
    if affine:
        jvp_matches_torch(
            lambda x, w, b: F.layer_norm(x, (3, 4), w, b),
            lambda x, w, b: TF.layer_norm(x, (3, 4), w, b),
            [x, w, b],
            [tx, tw, tb],
        )
        jvp_matches_torch(
            lambda x, w, b: F.layer_norm(x, (3, 4), w, b),
            lambda x, w, b: TF.layer_norm(x, (3, 4), w, b),
            [x, w, b],
            [None, tw, None],
        )
        check(lambda x, w, b: F.layer_norm(x, (4,), w, b, eps=1e-3), x, w[0], b[0])
    else:
        jvp_matches_torch(lambda x: F.layer_norm(x, (4,)), lambda x: TF.layer_norm(x, (4,)), [x], [tx])
        check(lambda x: F.layer_norm(x, (3, 4)), x)


@pytest.mark.parametrize("training", [True, False])
def test_batch_norm_matches_torch(training):
    x, w, b = arrays((4, 3, 2, 2), 3, 3)
    rm, rv = arrays(3)[0], RNG.uniform(0.5, 2.0, 3)
    tangents = arrays((4, 3, 2, 2), 3, 3)

    def fb_bn(x, w, b):  # fresh running statistics each call: training updates them
        return F.batch_norm(x, fb_tensor(rm), fb_tensor(rv), w, b, training=training, eps=1e-3)

    def th_bn(x, w, b):
        return TF.batch_norm(x, torch.tensor(rm), torch.tensor(rv), w, b, training=training, eps=1e-3)

    jvp_matches_torch(fb_bn, th_bn, [x, w, b], tangents)
    jvp_matches_torch(fb_bn, th_bn, [x, w, b], [None, tangents[1], tangents[2]])
    check(fb_bn, x, w, b)


def test_batch_norm_without_affine_or_running_stats():
    (x,) = arrays((5, 3))
    check(lambda x: F.batch_norm(x, None, None, training=True), x)
    jvp_matches_torch(
        lambda x: F.batch_norm(x, None, None, training=True),
        lambda x: TF.batch_norm(x, None, None, training=True),
        [x],
        arrays((5, 3)),
    )


def test_group_norm():
    x, w, b = arrays((2, 6, 3), 6, 6)
    check(lambda x, w, b: F.group_norm(x, 3, w, b), x, w, b)
    check(lambda x: F.group_norm(x, 2), x)
    jvp_matches_torch(
        lambda x, w, b: F.group_norm(x, 3, w, b),
        lambda x, w, b: TF.group_norm(x, 3, w, b),
        [x, w, b],
        arrays((2, 6, 3), 6, 6),
    )


def test_group_norm_statistics_tangents():
    """native_group_norm's mean and rstd are differentiable outputs: their tangents against finite differences."""

    def stats(x):
        _, mean, rstd = fc.native_group_norm(x, None, None, 2, 6, 3, 2, 0.5)
        return mean, rstd

    check(stats, *arrays((2, 6, 3)))


# ---- pooling and padding ----


def test_max_pools():
    (x,) = arrays((2, 2, 5, 5))
    check(lambda x: F.max_pool2d(x, 2, stride=2, padding=1), x)
    check(lambda x: F.max_pool2d(x, 3, stride=2, ceil_mode=True), x)
    check(lambda x: F.adaptive_max_pool2d(x, (2, 3)), x)
    jvp_matches_torch(lambda x: F.max_pool2d(x, 2), lambda x: TF.max_pool2d(x, 2), [x], arrays((2, 2, 5, 5)))


@pytest.mark.parametrize(
    "mode,value", [("constant", 0.0), ("constant", 2.5), ("reflect", None), ("replicate", None), ("circular", None)]
)
def test_pad(mode, value):
    (x,) = arrays((1, 2, 3, 4))
    kw = {"value": value} if value is not None else {}
    fn = lambda x: F.pad(x, (1, 2, 2, 1), mode=mode, **kw)  # noqa: E731
    check(fn, x)
    jvp_matches_torch(fn, lambda x: TF.pad(x, (1, 2, 2, 1), mode=mode, **kw), [x], arrays((1, 2, 3, 4)))


# ---- dropout ----


@pytest.mark.parametrize("fn", [F.dropout, F.dropout2d, F.alpha_dropout])
def test_dropouts(fn):
    (x,) = arrays((2, 3, 4, 4))

    def drop(x):
        fc.manual_seed(5)  # the same mask in every call (finite differences, dual passes)
        return fn(x, 0.4, training=True)

    check(drop, x)


def test_dropout_tangent_is_masked_and_scaled():
    x, t = arrays((50,), (50,))
    with fwAD.dual_level():
        out = fwAD.unpack_dual(F.dropout(fwAD.make_dual(fb_tensor(x), fb_tensor(t)), 0.25))
        value, tangent = to_np(out.primal), to_np(out.tangent)
    kept = value != 0
    assert 0 < kept.sum() < 50
    np.testing.assert_allclose(tangent[kept], t[kept] / 0.75, rtol=1e-12)
    assert np.all(tangent[~kept] == 0)


# ---- embedding bags (PyTorch 2.13 has no forward formula for _embedding_bag: finite differences only) ----


@pytest.mark.parametrize("mode", ["sum", "mean", "max"])
def test_embedding_bag(mode):
    (w,) = arrays((6, 3))
    idx = fc.tensor([0, 2, 1, 2, 5, 4])
    offsets = fc.tensor([0, 0, 3])  # an empty bag first
    check(lambda w: F.embedding_bag(idx, w, offsets, mode=mode, padding_idx=4), w)
    check(lambda w: F.embedding_bag(idx, w, offsets, mode=mode), w)


def test_embedding_bag_per_sample_weights():
    w, psw = arrays((5, 2), 4)
    idx, offsets = fc.tensor([1, 3, 3, 0]), fc.tensor([0, 1])
    check(lambda w, p: F.embedding_bag(idx, w, offsets, mode="sum", per_sample_weights=p), w, psw)
    check(lambda p: F.embedding_bag(idx, fb_tensor(w), offsets, mode="sum", per_sample_weights=p), psw)


# ---- activations with parameters ----


@pytest.mark.parametrize("wshape", [1, 3])
def test_prelu(wshape):
    x, w = arrays((2, 3, 4), wshape)
    check(F.prelu, x, w)
    jvp_matches_torch(F.prelu, TF.prelu, [x, w], arrays((2, 3, 4), wshape))


@pytest.mark.parametrize("dim", [0, -1])
def test_glu(dim):
    (x,) = arrays((4, 3, 6))
    check(lambda x: F.glu(x, dim), x)
    jvp_matches_torch(lambda x: F.glu(x, dim), lambda x: TF.glu(x, dim), [x], arrays((4, 3, 6)))


# ---- losses ----

REDUCTIONS = ["none", "mean", "sum"]


def loss_jvp_matches_torch(name, reduction, x, t):
    """The loss `name` of flambeau_nn.functional against torch's, both arguments dual."""
    fb_fn, th_fn = getattr(F, name), getattr(TF, name)
    jvp_matches_torch(
        lambda x, t: fb_fn(x, t, reduction=reduction),
        lambda x, t: th_fn(x, t, reduction=reduction),
        [x, t],
        arrays(x.shape, t.shape),
    )


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_pointwise_losses(reduction):
    x, t = arrays((3, 4), (3, 4))
    for fn in (F.mse_loss, F.l1_loss):
        check(lambda x, t, fn=fn: fn(x, t, reduction=reduction), x, t)
    check(lambda x, t: F.smooth_l1_loss(x, t, reduction=reduction, beta=0.7), x, t)
    check(lambda x, t: F.huber_loss(x, t, reduction=reduction, delta=0.8), x, t)
    # target broadcast against the input (PyTorch warns; the loss has the broadcast shape)
    check(lambda x, t: F.mse_loss(x, t, reduction=reduction), *arrays((3, 1), (3, 4)))
    loss_jvp_matches_torch("smooth_l1_loss", reduction, x, t)


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_binary_cross_entropy(reduction):
    x, t = arrays((3, 4), (3, 4), positive=True)
    (w,) = arrays((3, 4), positive=True)
    check(lambda x, t: F.binary_cross_entropy(x, t, reduction=reduction), x, t)
    check(lambda x: F.binary_cross_entropy(x, fb_tensor(t), fb_tensor(w), reduction=reduction), x)
    loss_jvp_matches_torch("binary_cross_entropy", reduction, x, t)


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_binary_cross_entropy_with_logits(reduction):
    x, w, pw = arrays((3, 4), 4, 4)
    (t,) = arrays((3, 4), positive=True)
    check(lambda x, t: F.binary_cross_entropy_with_logits(x, t, reduction=reduction), x, t)
    check(
        lambda x, t: F.binary_cross_entropy_with_logits(
            x, t, fb_tensor(w), reduction=reduction, pos_weight=fb_tensor(pw)
        ),
        x,
        t,
    )


def test_loss_weight_tangent_raises():
    """flambeau refuses these weights' gradients in reverse mode; a tangent for them raises too (PyTorch drops it)."""
    x, t, w = arrays((3,), (3,), (3,), positive=True)
    with fwAD.dual_level():
        dw = fwAD.make_dual(fb_tensor(w), fb_tensor(np.ones(3)))
        with pytest.raises(
            RuntimeError, match=r"\[binary_cross_entropy\] is not differentiable with respect to argument 'weight'"
        ):
            F.binary_cross_entropy(fb_tensor(x), fb_tensor(t), dw)
        with pytest.raises(RuntimeError, match=r"argument 'pos_weight'"):
            F.binary_cross_entropy_with_logits(fb_tensor(x), fb_tensor(t), pos_weight=dw)
        with pytest.raises(RuntimeError, match="for class-index targets"):
            F.cross_entropy(fb_tensor(arrays((2, 3))[0]), fc.tensor([0, 2]), weight=dw)


@pytest.mark.parametrize("reduction", REDUCTIONS)
@pytest.mark.parametrize("smoothing", [0.0, 0.2])
def test_cross_entropy_class_indices(reduction, smoothing):
    x, w = arrays((4, 3, 2), 3)
    w = np.abs(w) + 0.1
    target = np.array([[0, 2], [1, -100], [2, 2], [0, 1]])
    kw = dict(reduction=reduction, label_smoothing=smoothing)
    fb_t, th_t = fc.tensor(target.tolist()), torch.tensor(target)
    check(lambda x: F.cross_entropy(x, fb_t, fb_tensor(w), **kw), x)
    jvp_matches_torch(
        lambda x: F.cross_entropy(x, fb_t, fb_tensor(w), **kw),
        lambda x: TF.cross_entropy(x, th_t, torch.tensor(w), **kw),
        [x],
        arrays((4, 3, 2)),
    )


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_cross_entropy_probabilities(reduction):
    x, w = arrays((4, 3), 3)
    (y,) = arrays((4, 3), positive=True)
    y = y / y.sum(1, keepdims=True)
    kw = dict(reduction=reduction, label_smoothing=0.1)
    check(lambda x, y, w: F.cross_entropy(x, y, w, **kw), x, y, np.abs(w) + 0.1)
    jvp_matches_torch(
        lambda x, y, w: F.cross_entropy(x, y, w, **kw),
        lambda x, y, w: TF.cross_entropy(x, y, w, **kw),
        [x, y, np.abs(w) + 0.1],
        arrays((4, 3), (4, 3), 3),
    )


def test_cross_entropy_unbatched():
    (x,) = arrays(4)
    check(lambda x: F.cross_entropy(x, fc.tensor(2)), x)


# ---- the backward kernels (second order: forward over a create_graph backward) ----


def input_grad(loss):
    """x, other inputs, grad_output -> the gradient of loss(x, ...) in x, recorded (create_graph)."""

    def fn(x, *rest):
        *args, go = rest
        if not x.requires_grad:  # gradcheck's forward pass hands in duals that do not require grad
            x.requires_grad_()
        return ag.grad(loss(x, *args), [x], go, create_graph=True)[0]

    return fn


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_pointwise_loss_backwards(reduction):
    x, t = arrays((3, 4), (3, 4))
    go = arrays((3, 4) if reduction == "none" else ())[0]
    check(input_grad(lambda x, t: F.mse_loss(x, t, reduction=reduction)), x, t, go)
    check(input_grad(lambda x, t: F.l1_loss(x, t, reduction=reduction)), x, t, go)
    check(input_grad(lambda x, t: F.smooth_l1_loss(x, t, reduction=reduction, beta=1.5)), x, t, go)
    check(input_grad(lambda x, t: F.huber_loss(x, t, reduction=reduction, delta=1.5)), x, t, go)
    check(
        input_grad(lambda x, t: F.mse_loss(x, t, reduction=reduction)),
        *arrays((3, 1), (3, 4)),
        go if reduction != "none" else arrays((3, 4))[0],
    )


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_binary_cross_entropy_backwards(reduction):
    x, t = arrays((3, 4), (3, 4), positive=True)
    (w,) = arrays(4, positive=True)
    go = arrays((3, 4) if reduction == "none" else ())[0]
    check(input_grad(lambda x, t: F.binary_cross_entropy(x, t, fb_tensor(w), reduction=reduction)), x, t, go)
    check(
        input_grad(lambda x, t: F.binary_cross_entropy_with_logits(x, t, reduction=reduction, pos_weight=fb_tensor(w))),
        x,
        t,
        go,
    )


@pytest.mark.parametrize("reduction", REDUCTIONS)
def test_cross_entropy_backwards(reduction):
    x, w = arrays((3, 4), 4)
    (y,) = arrays((3, 4), positive=True)
    go = arrays(3 if reduction == "none" else ())[0]
    target = fc.tensor([1, -100, 3])
    kw = dict(reduction=reduction, label_smoothing=0.15)
    check(input_grad(lambda x: F.cross_entropy(x, target, fb_tensor(np.abs(w)), **kw)), x, go)
    check(input_grad(lambda x, y, w: F.cross_entropy(x, y, w, **kw)), x, y, np.abs(w) + 0.1, go)
    check(input_grad(lambda x: F.nll_loss(F.log_softmax(x, 1), target, reduction=reduction)), x, go)


def test_activation_backwards():
    x, w = arrays((2, 3, 4), 3)
    go = arrays((2, 3, 4))[0]
    check(input_grad(lambda x, w: F.prelu(x, w)), x, w, go)

    def weight_grad(x, w, go):
        if not w.requires_grad:
            w.requires_grad_()
        return ag.grad(F.prelu(x, w), [w], go, create_graph=True)[0]

    check(weight_grad, x, w, go)
    check(input_grad(lambda x: F.glu(x, 1)), *arrays((2, 4, 3), (2, 2, 3)))


# ---- recurrent layers ----


@pytest.mark.parametrize("mode", ["RNN_TANH", "RNN_RELU", "LSTM", "GRU"])
@pytest.mark.parametrize("reverse", [False, True])
def test_rnn_layer(mode, reverse):
    """One layer and direction over a packed batch of sequences of lengths 4, 3, 1 (batch_sizes 3, 2, 2, 1):
    every argument of _rnn_layer dual, the tangents of output, hy and cy."""
    from flambeau_nn.modules.rnn import _GATES, _layer

    gh, hidden = _GATES[mode] * 3, 3
    shapes = [(8, 2), (gh, 2), (gh, hidden), gh, gh, (3, hidden)] + ([(3, hidden)] if mode == "LSTM" else [])
    inputs = arrays(*shapes)

    def layer(x, w_ih, w_hh, b_ih, b_hh, hx, cx=None):
        return _layer(mode, x, w_ih, w_hh, b_ih, b_hh, hx, cx, [3, 2, 2, 1], reverse)

    check(layer, *inputs)


def test_lstm_module_matches_torch():
    """A two-layer bidirectional LSTM, the input and the initial states dual, against torch.func.jvp."""
    import flambeau_nn as nn

    torch.manual_seed(0)
    th_lstm = torch.nn.LSTM(3, 4, num_layers=2, bidirectional=True, batch_first=True, dtype=torch.float64)
    fb_lstm = nn.LSTM(3, 4, num_layers=2, bidirectional=True, batch_first=True, dtype=fc.float64)
    for name, p in th_lstm.named_parameters():
        getattr(fb_lstm, name).detach().copy_(fb_tensor(p.detach().numpy()))
    primals = arrays((2, 5, 3), (4, 2, 4), (4, 2, 4))
    jvp_matches_torch(
        lambda x, h, c: fb_lstm(x, (h, c))[0],
        lambda x, h, c: th_lstm(x, (h, c))[0],
        primals,
        arrays((2, 5, 3), (4, 2, 4), (4, 2, 4)),
    )


# ---- reverse over forward: a tangent's graph reaches its primal ----


def tangent_fn(fn, *tangents):
    """x, ... -> the tangent of fn at x, ... along `tangents` (one per argument), differentiable in x."""

    def tangent(*xs):
        with fwAD.dual_level():
            duals = [fwAD.make_dual(x, fb_tensor(t)) for x, t in zip(xs, tangents, strict=True)]
            return fwAD.unpack_dual(fn(*duals)).tangent

    return tangent


@pytest.mark.parametrize(
    "fn,shapes",
    [
        pytest.param(lambda x, w: F.layer_norm(x, (4,), w), [(2, 3, 4), 4], id="layer_norm"),
        pytest.param(lambda x, w: F.batch_norm(x, None, None, w, training=True), [(4, 3, 2), 3], id="batch_norm"),
        pytest.param(lambda x, w: F.group_norm(x, 2, w), [(2, 4, 3), 4], id="group_norm"),
        pytest.param(lambda x, w: F.log_softmax(x * w, 1), [(2, 3, 4), 4], id="log_softmax"),
        pytest.param(lambda x, w: F.conv2d(x, w, padding=1), [(1, 2, 3, 3), (2, 2, 2, 2)], id="conv2d"),
        pytest.param(
            lambda x, w: F.cross_entropy(x * w, fc.tensor([2, 0]), label_smoothing=0.1), [(2, 3), 3], id="cross_entropy"
        ),
    ],
)
def test_reverse_over_forward(fn, shapes):
    """The tangent's gradient in the primals against finite differences (statistics an op returns without
    history, batch and layer norm's mean and rstd, are recomputed with recorded ops for it)."""
    primals = arrays(*shapes)
    check_tangent = tangent_fn(fn, *arrays(*shapes))
    # Its function runs a dual level itself: no forward check of it (one level at a time).
    assert ag.gradcheck(check_tangent, [fb_tensor(p, requires_grad=True) for p in primals], check_forward_ad=False)


@pytest.mark.parametrize("mode", ["LSTM", "GRU"])
def test_rnn_layer_reverse_over_forward(mode):
    """The gates are then recomputed from the primals instead of read from the workspace (no history)."""
    from flambeau_nn.modules.rnn import _GATES, _layer

    gh = _GATES[mode] * 2
    shapes = [(3, 2), (gh, 2), (gh, 2), gh, (2, 2)] + ([(2, 2)] if mode == "LSTM" else [])

    def layer(x, w_ih, w_hh, b_hh, hx, cx=None):
        out, hy, cy = _layer(mode, x, w_ih, w_hh, None, b_hh, hx, cx, [2, 1], False)
        return out.sum() + hy.sum() * 2 + (cy.sum() * 3 if cx is not None else 0)

    assert ag.gradcheck(
        tangent_fn(layer, *arrays(*shapes)),
        [fb_tensor(a, requires_grad=True) for a in arrays(*shapes)],
        check_forward_ad=False,  # the function runs a dual level itself (one level at a time)
    )
