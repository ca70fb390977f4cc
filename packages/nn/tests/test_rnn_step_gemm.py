"""Recurrent layers at sizes that cross the packed step GEMM's blocks (own_sgemm_packed in
src/cpu/linalg/sgemm.h), against PyTorch.

With AVX2 or AVX-512, float32 step GEMMs run against the hidden-to-hidden weight
packed in panels of 64 columns and a kernel over blocks of up to 6 batch rows (by
16 columns on AVX2, a whole panel on AVX-512): these cases put the gate width
(4H, 3H or H) across and between panel and slice edges, the rows of a step across
the 6-row blocks (also as a packed sequence whose steps have fewer and fewer
rows), and the threads' row split. float64 takes the OpenBLAS path and is
checked alike.
"""

from __future__ import annotations

import flambeau_core as fc
import flambeau_nn as nn
import pytest
import torch
from flambeau_nn.utils import rnn as rnn_utils
from nn_testing import assert_close, copy_params, from_torch

TOL = {torch.float32: dict(rtol=5e-4, atol=5e-5), torch.float64: dict(rtol=1e-9, atol=1e-10)}
FB_DTYPE = {torch.float32: fc.float32, torch.float64: fc.float64}
SHAPES = [(1, 1), (17, 13), (64, 6), (70, 7), (33, 20)]  # (hidden, batch)


def _make(kind, input_size, hidden, dtype, **kw):
    theirs = getattr(torch.nn, kind)(input_size, hidden, dtype=dtype, **kw)
    ours = getattr(nn, kind)(input_size, hidden, dtype=FB_DTYPE[dtype], **kw)
    copy_params(ours, theirs)
    return ours, theirs


def _check_grads(ours, theirs, pairs, tol):
    their = dict(theirs.named_parameters())
    for name, p in ours.named_parameters():
        assert_close(p.grad, their[name].grad, **tol)
    for o, t in pairs:
        assert_close(o.grad, t.grad, **tol)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("kind", ["LSTM", "GRU", "RNN"])
@pytest.mark.parametrize("hidden,batch", SHAPES)
def test_block_edges_match_torch(kind, dtype, hidden, batch):
    torch.manual_seed(hidden * 100 + batch)
    T, IN = 7, 9
    ours, theirs = _make(kind, IN, hidden, dtype, num_layers=2, bidirectional=True)
    # A non-contiguous input: (T, B, IN) as a transposed view of (B, T, IN).
    base = torch.randn(batch, T, IN, dtype=dtype)
    xt = base.transpose(0, 1).detach().requires_grad_(True)
    xo_leaf = from_torch(base).requires_grad_(True)
    xo = xo_leaf.transpose(0, 1)
    assert batch == 1 or not xo.is_contiguous()
    yo, so = ours(xo)
    yt, st = theirs(xt)
    tol = TOL[dtype]
    assert_close(yo, yt, **tol)
    states_o = so if kind == "LSTM" else (so,)
    states_t = st if kind == "LSTM" else (st,)
    for a, b in zip(states_o, states_t, strict=True):
        assert_close(a, b, **tol)
    gy = torch.randn(yt.shape, dtype=dtype)
    gs = [torch.randn(s.shape, dtype=dtype) for s in states_t]
    lo = (yo * from_torch(gy)).sum()
    lt = (yt * gy).sum()
    for a, b, g in zip(states_o, states_t, gs, strict=True):
        lo = lo + (a * from_torch(g)).sum()
        lt = lt + (b * g).sum()
    lo.backward()
    lt.backward()
    _check_grads(ours, theirs, [], tol)
    assert_close(xo_leaf.grad, xt.grad.transpose(0, 1), **tol)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("kind", ["LSTM", "GRU"])
def test_packed_sequence_shrinking_rows(kind, dtype):
    """Steps with 13, 12, ..., 1 rows: every row-block remainder, in both directions."""
    torch.manual_seed(7)
    B, T, IN, H = 13, 13, 5, 70
    lengths = list(range(T, 0, -1))
    ours, theirs = _make(kind, IN, H, dtype, num_layers=1, bidirectional=True)
    x = torch.randn(T, B, IN, dtype=dtype)
    xo = from_torch(x).requires_grad_(True)
    xt = x.detach().clone().requires_grad_(True)
    po = rnn_utils.pack_padded_sequence(xo, lengths)
    pt = torch.nn.utils.rnn.pack_padded_sequence(xt, lengths)
    out_o, _ = ours(po)
    out_t, _ = theirs(pt)
    tol = TOL[dtype]
    assert_close(out_o.data, out_t.data, **tol)
    g = torch.randn(out_t.data.shape, dtype=dtype)
    (out_o.data * from_torch(g)).sum().backward()
    (out_t.data * g).sum().backward()
    _check_grads(ours, theirs, [(xo, xt)], tol)


@pytest.mark.parametrize("threads", [1, 2, 3])
def test_lstm_benchmark_shape_any_thread_count(threads):
    """The benchmark LSTM's layer (256 hidden, batch 20) with the rows split over 1-3 threads."""
    torch.manual_seed(3)
    old = fc.get_num_threads()
    fc.set_num_threads(threads)
    try:
        ours, theirs = _make("LSTM", 128, 256, torch.float32, num_layers=2)
        x = torch.randn(6, 20, 128)
        xo = from_torch(x).requires_grad_(True)
        xt = x.detach().clone().requires_grad_(True)
        yo, _ = ours(xo)
        yt, _ = theirs(xt)
        assert_close(yo, yt, **TOL[torch.float32])
        yo.sum().backward()
        yt.sum().backward()
        _check_grads(ours, theirs, [(xo, xt)], TOL[torch.float32])
    finally:
        fc.set_num_threads(old)
