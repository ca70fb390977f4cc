"""Recurrent layers whose batch is split across threads (Note [Batch rows across
threads] in core's src/cpu/rnn.cpp: at least 4 rows per thread, so batches of 8
and more with 2 threads) against PyTorch: outputs, states and every gradient,
padded and packed (sequences ending at different steps, in both directions),
float32 and float64; and the same values with 1 and 2 threads."""

from __future__ import annotations

import flambeau_core as fc
import flambeau_nn as nn
import numpy as np
import pytest
import torch
from flambeau_nn.utils import rnn as rnn_utils
from nn_testing import assert_close, copy_params, from_torch, to_numpy

TOL = {torch.float32: dict(rtol=2e-4, atol=2e-5), torch.float64: dict(rtol=1e-9, atol=1e-10)}
FB_DTYPE = {torch.float32: fc.float32, torch.float64: fc.float64}


@pytest.fixture
def two_threads():
    old = fc.get_num_threads()
    fc.set_num_threads(2)
    yield
    fc.set_num_threads(old)


def _make(kind, input_size, hidden, dtype, **kw):
    if kind.startswith("RNN"):
        nl = "relu" if kind == "RNN_relu" else "tanh"
        theirs = torch.nn.RNN(input_size, hidden, nonlinearity=nl, dtype=dtype, **kw)
        ours = nn.RNN(input_size, hidden, nonlinearity=nl, dtype=FB_DTYPE[dtype], **kw)
    else:
        theirs = getattr(torch.nn, kind)(input_size, hidden, dtype=dtype, **kw)
        ours = getattr(nn, kind)(input_size, hidden, dtype=FB_DTYPE[dtype], **kw)
    copy_params(ours, theirs)
    return ours, theirs


def _run(kind, module, x, h, c):
    if kind == "LSTM":
        out, (hn, cn) = module(x, (h, c))
        return out, hn, cn
    out, hn = module(x, h)
    return out, hn, None


@pytest.mark.usefixtures("two_threads")
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("kind", ["LSTM", "GRU", "RNN_tanh", "RNN_relu"])
@pytest.mark.parametrize("bidirectional", [False, True])
@pytest.mark.parametrize("packed", [False, True])
def test_split_batch_matches_torch(kind, dtype, bidirectional, packed):
    T, B, IN, H, L = 7, 13, 5, 9, 2
    D = 2 if bidirectional else 1
    torch.manual_seed(1)
    ours, theirs = _make(kind, IN, H, dtype, num_layers=L, bidirectional=bidirectional)
    x = torch.randn(T, B, IN, dtype=dtype)
    xo, xt = from_torch(x).requires_grad_(True), x.clone().requires_grad_(True)
    h0 = torch.randn(D * L, B, H, dtype=dtype)
    ho, ht = from_torch(h0).requires_grad_(True), h0.clone().requires_grad_(True)
    c0 = torch.randn(D * L, B, H, dtype=dtype)
    co, ct = from_torch(c0).requires_grad_(True), c0.clone().requires_grad_(True)
    if packed:
        lengths = [7, 1, 5, 7, 3, 2, 6, 4, 7, 1, 3, 5, 2]  # unsorted, ends on every thread's rows
        xo_in = rnn_utils.pack_padded_sequence(xo, lengths, enforce_sorted=False)
        xt_in = torch.nn.utils.rnn.pack_padded_sequence(xt, lengths, enforce_sorted=False)
    else:
        xo_in, xt_in = xo, xt
    out_o, hn_o, cn_o = _run(kind, ours, xo_in, ho, co)
    out_t, hn_t, cn_t = _run(kind, theirs, xt_in, ht, ct)
    if packed:
        out_o = rnn_utils.pad_packed_sequence(out_o, total_length=T)[0]
        out_t = torch.nn.utils.rnn.pad_packed_sequence(out_t, total_length=T)[0]
    tol = TOL[dtype]
    assert_close(out_o, out_t, **tol)
    assert_close(hn_o, hn_t, **tol)
    gy, gh = torch.randn(out_t.shape, dtype=dtype), torch.randn(hn_t.shape, dtype=dtype)
    lo = (out_o * from_torch(gy)).sum() + (hn_o * from_torch(gh)).sum()
    lt = (out_t * gy).sum() + (hn_t * gh).sum()
    if kind == "LSTM":
        assert_close(cn_o, cn_t, **tol)
        gc = torch.randn(cn_t.shape, dtype=dtype)
        lo = lo + (cn_o * from_torch(gc)).sum()
        lt = lt + (cn_t * gc).sum()
    lo.backward()
    lt.backward()
    their = dict(theirs.named_parameters())
    for name, p in ours.named_parameters():
        assert_close(p.grad, their[name].grad, **tol)
    assert_close(xo.grad, xt.grad, **tol)
    assert_close(ho.grad, ht.grad, **tol)
    if kind == "LSTM":
        assert_close(co.grad, ct.grad, **tol)


@pytest.mark.parametrize("kind", ["LSTM", "GRU"])
def test_one_and_two_threads_agree(kind):
    """The split (2 threads) and unsplit (1 thread) time loops give the same outputs and gradients."""
    torch.manual_seed(2)
    ours, _ = _make(kind, 6, 16, torch.float32, num_layers=2)
    x = from_torch(torch.randn(9, 20, 6))
    results = []
    old = fc.get_num_threads()
    try:
        for threads in (1, 2):
            fc.set_num_threads(threads)
            ours.zero_grad(set_to_none=True)
            out = ours(x)[0]
            out.sum().backward()
            results.append([to_numpy(out)] + [to_numpy(p.grad) for p in ours.parameters()])
    finally:
        fc.set_num_threads(old)
    for a, b in zip(*results, strict=True):
        np.testing.assert_allclose(a, b, rtol=1e-5, atol=1e-6)
