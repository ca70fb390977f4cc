"""Activation checkpointing (flambeau_nn.utils.checkpoint): both variants give the gradients of the plain run
(and PyTorch's on the same weights), the random state is replayed so dropout keeps its mask, the caller's
random stream is untouched, parameters-only and keyword-argument cases, checkpoint_sequential, errors."""

from __future__ import annotations

import contextlib

import flambeau_autograd as fa
import flambeau_core as fc
import flambeau_nn as nn
import numpy as np
import pytest
import torch
import torch.utils.checkpoint as tcp
from flambeau_core import FlambeauError
from flambeau_nn.utils import checkpoint as cp
from nn_testing import close, copy_params, fb, th

VARIANTS = [True, False]


def _models(dropout=0.0, seed=0):
    torch.manual_seed(seed)
    theirs = torch.nn.Sequential(
        torch.nn.Linear(5, 8), torch.nn.Tanh(), torch.nn.Dropout(dropout), torch.nn.Linear(8, 3)
    ).double()
    ours = nn.Sequential(nn.Linear(5, 8), nn.Tanh(), nn.Dropout(dropout), nn.Linear(8, 3)).double()
    copy_params(ours, theirs)
    return ours, theirs


def _grads(model):
    return {name: p.grad for name, p in model.named_parameters()}


@pytest.mark.parametrize("use_reentrant", VARIANTS)
def test_checkpoint_matches_torch_and_the_plain_run(use_reentrant):
    ours, theirs = _models()
    x = np.random.default_rng(0).standard_normal((4, 5))
    fx, tx = fb(x, requires_grad=True), th(x, requires_grad=True)
    yo = cp.checkpoint(ours, fx, use_reentrant=use_reentrant)
    yt = tcp.checkpoint(theirs, tx, use_reentrant=use_reentrant)
    close(yo, yt, 1e-12, 1e-12)
    (yo**2).sum().backward()
    (yt**2).sum().backward()
    close(fx.grad, tx.grad, 1e-12, 1e-12)
    their = dict(theirs.named_parameters())
    for name, g in _grads(ours).items():
        close(g, their[name].grad, 1e-12, 1e-12, name)


@pytest.mark.parametrize("use_reentrant", VARIANTS)
def test_dropout_mask_is_replayed_and_the_stream_continues(use_reentrant):
    ours, _ = _models(dropout=0.5)
    x = np.random.default_rng(1).standard_normal((16, 5))
    runs = []
    for checkpointed in (True, False):
        ours.zero_grad()
        fc.manual_seed(123)
        fx = fb(x, requires_grad=True)
        y = cp.checkpoint(ours, fx, use_reentrant=use_reentrant) if checkpointed else ours(fx)
        fc.randn(3)  # the caller draws between forward and backward
        y.sum().backward()
        after = fc.rand(4)
        runs.append((y, fx.grad, _grads(ours), after))
    (y1, gx1, gp1, r1), (y2, gx2, gp2, r2) = runs
    np.testing.assert_array_equal(np.array(y1.tolist()), np.array(y2.tolist()))
    np.testing.assert_allclose(np.array(gx1.tolist()), np.array(gx2.tolist()), rtol=1e-12)
    for name in gp1:
        np.testing.assert_allclose(np.array(gp1[name].tolist()), np.array(gp2[name].tolist()), rtol=1e-12)
    assert r1.tolist() == r2.tolist()  # the recomputation did not advance the caller's generator


@pytest.mark.parametrize("use_reentrant", VARIANTS)
def test_without_preserved_rng_state_the_mask_differs(use_reentrant):
    ours, _ = _models(dropout=0.5)
    x = fb(np.random.default_rng(2).standard_normal((32, 5)), requires_grad=True)
    fc.manual_seed(5)
    y = cp.checkpoint(ours, x, use_reentrant=use_reentrant, preserve_rng_state=False)
    y.sum().backward()
    replayed = x.grad
    x.grad = None
    ours.zero_grad()
    fc.manual_seed(5)
    ours(x).sum().backward()
    assert not np.allclose(np.array(replayed.tolist()), np.array(x.grad.tolist()))


def test_non_reentrant_autograd_grad_kwargs_and_parameters_only():
    ours, theirs = _models()
    x = np.random.default_rng(3).standard_normal((4, 5))

    def scaled(inp, *, scale):
        return ours(inp) * scale

    def tscaled(inp, *, scale):
        return theirs(inp) * scale

    # The input needs no gradient: the parameters still get theirs.
    yo = cp.checkpoint(scaled, fb(x), use_reentrant=False, scale=3.0)
    yt = tcp.checkpoint(tscaled, th(x), use_reentrant=False, scale=3.0)
    params = list(ours.parameters())
    grads = fa.grad((yo**2).sum(), params)
    tgrads = torch.autograd.grad((yt**2).sum(), list(theirs.parameters()))
    for g, tg in zip(grads, tgrads, strict=True):
        close(g, tg, 1e-12, 1e-12)


def test_reentrant_input_without_grad_warns_and_gives_parameters_nothing():
    ours, _ = _models()
    with pytest.warns(UserWarning, match="None of the inputs have requires_grad=True"):
        y = cp.checkpoint(ours, fc.randn(2, 5, dtype=fc.float64), use_reentrant=True)
    assert not y.requires_grad


@pytest.mark.parametrize("use_reentrant", VARIANTS)
def test_tuple_outputs_and_non_tensor_arguments(use_reentrant):
    w = nn.Parameter(fb(np.random.default_rng(4).standard_normal((3, 3))))
    tw = torch.nn.Parameter(th(np.array(w.tolist())))

    def f(a, b, power, w=w):
        return (a @ w) ** power, b.sum() * 2, "tag"

    def tf(a, b, power, w=tw):
        return (a @ w) ** power, b.sum() * 2, "tag"

    a, b = np.random.default_rng(5).standard_normal((2, 3)), np.random.default_rng(6).standard_normal(4)
    fa_, fb_ = fb(a, requires_grad=True), fb(b, requires_grad=True)
    ta, tb = th(a, requires_grad=True), th(b, requires_grad=True)
    o1, o2, tag = cp.checkpoint(f, fa_, fb_, 2, use_reentrant=use_reentrant)
    t1, t2, _ = tcp.checkpoint(tf, ta, tb, 2, use_reentrant=use_reentrant)
    assert tag == "tag"
    (o1.sum() + o2).backward()
    (t1.sum() + t2).backward()
    close(fa_.grad, ta.grad, 1e-12, 1e-12)
    close(fb_.grad, tb.grad, 1e-12, 1e-12)
    close(w.grad, tw.grad, 1e-12, 1e-12)


def test_context_fn_runs_around_forward_and_recomputation():
    calls = []

    @contextlib.contextmanager
    def mark(name):
        calls.append(name)
        yield

    ours, _ = _models()
    x = fc.randn(2, 5, dtype=fc.float64, requires_grad=True)
    y = cp.checkpoint(ours, x, use_reentrant=False, context_fn=lambda: (mark("forward"), mark("recompute")))
    assert calls == ["forward"]
    y.sum().backward()
    assert calls == ["forward", "recompute"]


@pytest.mark.parametrize("use_reentrant", VARIANTS)
def test_checkpoint_sequential(use_reentrant):
    torch.manual_seed(0)
    theirs = torch.nn.Sequential(*[torch.nn.Linear(4, 4) for _ in range(5)], torch.nn.Tanh()).double()
    ours = nn.Sequential(*[nn.Linear(4, 4) for _ in range(5)], nn.Tanh()).double()
    copy_params(ours, theirs)
    x = np.random.default_rng(7).standard_normal((3, 4))
    fx, tx = fb(x, requires_grad=True), th(x, requires_grad=True)
    yo = cp.checkpoint_sequential(ours, 3, fx, use_reentrant=use_reentrant)
    yt = tcp.checkpoint_sequential(theirs, 3, tx, use_reentrant=use_reentrant)
    close(yo, yt, 1e-12, 1e-12)
    yo.sum().backward()
    yt.sum().backward()
    close(fx.grad, tx.grad, 1e-12, 1e-12)
    close(ours[0].weight.grad, theirs[0].weight.grad, 1e-12, 1e-12)


def test_no_grad_mode_and_helpers():
    ours, _ = _models()
    x = fc.randn(2, 5, dtype=fc.float64, requires_grad=True)
    with fa.no_grad():
        y = cp.checkpoint(ours, x, use_reentrant=False)
    assert not y.requires_grad
    d = cp.detach_variable((x * 2, 3))
    assert d[0].grad_fn is None and d[0].requires_grad and d[1] == 3
    with pytest.raises(FlambeauError, match="Only tuple of tensors is supported"):
        cp.detach_variable([x])
    with cp.set_checkpoint_early_stop(False), cp.set_checkpoint_debug_enabled(True):
        pass
    assert cp.get_device_states(x) == ([], [])


def test_checkpoint_errors():
    ours, _ = _models()
    x = fc.randn(2, 5, dtype=fc.float64, requires_grad=True)
    with pytest.warns(UserWarning, match="use_reentrant parameter should be passed explicitly"):
        cp.checkpoint(ours, x)
    with pytest.raises(TypeError, match=r"\[checkpoint\] function must be callable"):
        cp.checkpoint(3, x, use_reentrant=False)
    with pytest.raises(FlambeauError, match="Unexpected keyword arguments: scale"):
        cp.checkpoint(ours, x, use_reentrant=True, scale=2)
    with pytest.raises(FlambeauError, match="only supported when use_reentrant=False"):
        cp.checkpoint(ours, x, use_reentrant=True, context_fn=lambda: (contextlib.nullcontext(),) * 2)
    with pytest.raises(FlambeauError, match="Unexpected keyword arguments: foo"):
        cp.checkpoint_sequential(ours, 2, x, use_reentrant=False, foo=1)
    with pytest.raises(FlambeauError, match="determinism_check should be one of"):
        cp.checkpoint(ours, x, use_reentrant=False, determinism_check="strict")
