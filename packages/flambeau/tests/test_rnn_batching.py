"""vmap over recurrent layers (flambeau/func/_rnn_batching.py): per-sample gradients of RNN, LSTM and GRU
against a loop of torch.func.grad (torch.func.vmap cannot batch its own RNN kernels), the forward with shared
weights against torch's module per sample, and core's _rnn_layer on packed layouts, in both directions and
with batched weights, against the loop of the op itself; none may fall back to vmap's per-sample loop."""

from __future__ import annotations

import warnings

import flambeau as fb
import flambeau_core
import numpy as np
import pytest
import torch
from flambeau.func import _vmap
from func_testing import close

RNG = np.random.default_rng(41)


@pytest.fixture(autouse=True)
def no_loop_fallback():
    _vmap._warned.clear()  # the loop's warning is given once per op: make it visible to this test
    with warnings.catch_warnings():
        warnings.filterwarnings("error", message=".*no batching rule", category=UserWarning)
        yield


def _pair_of_modules(kind: str, **kw):
    ours = getattr(fb.nn, kind)(4, 6, **kw).double()
    theirs = getattr(torch.nn, kind)(4, 6, **kw).double()
    theirs.load_state_dict({k: torch.tensor(v.detach().numpy()) for k, v in ours.state_dict().items()})
    return ours, theirs


def _loss(lib, module):
    def loss(params, xs):
        out, h = lib.func.functional_call(module, params, (xs,))
        last = h[0] + h[1].sin() if isinstance(h, tuple) else h
        return out.sin().sum() + (last * last).sum()

    return loss


@pytest.mark.parametrize(
    ("kind", "layout"),
    [
        *[
            (kind, layout)
            for kind in ("RNN", "LSTM", "GRU")
            for layout in ({}, {"num_layers": 2, "bidirectional": True})
        ],
        ("RNN", {"nonlinearity": "relu"}),
    ],
)
def test_per_sample_gradients_of_a_recurrent_layer_match_a_loop_of_torch(kind, layout):
    ours, theirs = _pair_of_modules(kind, **layout)
    x = RNG.standard_normal((3, 5, 2, 4))  # 3 samples, each a [T=5, N=2, 4] sequence batch
    params = {k: v.detach() for k, v in ours.named_parameters()}
    grads = fb.func.vmap(fb.func.grad(_loss(fb, ours)), in_dims=(None, 0))(params, fb.tensor(x))
    tparams = {k: v.detach() for k, v in theirs.named_parameters()}
    per_sample = [torch.func.grad(_loss(torch, theirs))(tparams, torch.tensor(s)) for s in x]
    close(grads, {k: torch.stack([g[k] for g in per_sample]) for k in tparams}, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("kind", ["RNN", "LSTM", "GRU"])
def test_the_forward_with_shared_weights_matches_torch_per_sample(kind):
    ours, theirs = _pair_of_modules(kind, bidirectional=True)
    x = RNG.standard_normal((4, 3, 2, 4))
    out, h = fb.func.vmap(ours)(fb.tensor(x))
    expected = [theirs(torch.tensor(s)) for s in x]
    close(out, torch.stack([e[0] for e in expected]).detach())
    if kind == "LSTM":
        close(h[1], torch.stack([e[1][1] for e in expected]).detach())
        h = h[0]
        expected = [(e[0], e[1][0]) for e in expected]
    close(h, torch.stack([e[1] for e in expected]).detach())


@pytest.mark.parametrize("mode", [0, 1, 2, 3])
@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("weights", ["shared", "batched"])
def test_the_layer_op_on_a_packed_layout_matches_its_loop(mode, reverse, weights):
    gates = {0: 1, 1: 1, 2: 4, 3: 3}[mode]
    batch_sizes, hidden, b = [3, 2, 2, 1], 5, 4
    rows = sum(batch_sizes)
    ig = fb.tensor(RNG.standard_normal((b, rows, gates * hidden)))
    w = fb.tensor(RNG.standard_normal((b, gates * hidden, hidden)) / 3)
    bias = fb.tensor(RNG.standard_normal((b, gates * hidden)))
    hx = fb.tensor(RNG.standard_normal((b, 3, hidden)))
    cx = fb.tensor(RNG.standard_normal((b, 3, hidden))) if mode == 2 else fb.empty(0, dtype=fb.float64)
    w_dims = 0 if weights == "batched" else None
    if weights == "shared":
        w, bias = w[0], bias[0]

    def layer(i, ww, bb, h, c):
        return flambeau_core._C._rnn_layer(i, ww, bb, h, c, mode, batch_sizes, reverse)[:3]

    c_dims = 0 if mode == 2 else None
    out, hy, cy = fb.func.vmap(layer, in_dims=(0, w_dims, w_dims, 0, c_dims))(ig, w, bias, hx, cx)
    for s in range(b):
        ws, bs = (w[s], bias[s]) if weights == "batched" else (w, bias)
        expected = layer(ig[s], ws, bs, hx[s], cx[s] if mode == 2 else cx)
        np.testing.assert_allclose(out[s].numpy(), expected[0].numpy(), rtol=1e-12, atol=1e-12)
        np.testing.assert_allclose(hy[s].numpy(), expected[1].numpy(), rtol=1e-12, atol=1e-12)
        if mode == 2:
            np.testing.assert_allclose(cy[s].numpy(), expected[2].numpy(), rtol=1e-12, atol=1e-12)
