"""Recurrent layers, cells and packed sequences against PyTorch: same weights, same outputs, states and gradients."""

from __future__ import annotations

import itertools

import flambeau_autograd as fa
import flambeau_core as fc
import flambeau_nn as nn
import numpy as np
import pytest
import torch
from flambeau_core.testing import device_params
from flambeau_nn.utils import rnn as rnn_utils
from nn_testing import assert_close, copy_params, from_torch, to_numpy

TOL = {torch.float32: dict(rtol=2e-4, atol=2e-5), torch.float64: dict(rtol=1e-9, atol=1e-10)}
FB_DTYPE = {torch.float32: fc.float32, torch.float64: fc.float64}


def _make(kind, input_size, hidden, dtype, **kw):
    """The same layer in torch and flambeau, with torch's weights copied in."""
    if kind.startswith("RNN"):
        nl = "relu" if kind == "RNN_relu" else "tanh"
        theirs = torch.nn.RNN(input_size, hidden, nonlinearity=nl, dtype=dtype, **kw)
        ours = nn.RNN(input_size, hidden, nonlinearity=nl, dtype=FB_DTYPE[dtype], **kw)
    else:
        theirs = getattr(torch.nn, kind)(input_size, hidden, dtype=dtype, **kw)
        ours = getattr(nn, kind)(input_size, hidden, dtype=FB_DTYPE[dtype], **kw)
    copy_params(ours, theirs)
    return ours, theirs


def _leaf(x: torch.Tensor):
    return from_torch(x).requires_grad_(True), x.detach().clone().requires_grad_(True)


def _flatten_out(out):
    if isinstance(out, tuple):
        return [t for t in out if t is not None]
    return [out]


def _compare_grads(ours, theirs, pairs, tol):
    their = dict(theirs.named_parameters())
    names = [n for n, _ in ours.named_parameters()]
    assert names == list(their)
    for name, p in ours.named_parameters():
        assert_close(p.grad, their[name].grad, **tol)
    for o, t in pairs:
        assert_close(o.grad, t.grad, **tol)


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("kind", ["LSTM", "GRU", "RNN_tanh", "RNN_relu"])
@pytest.mark.parametrize(
    "num_layers,bidirectional,batch_first,with_hx,bias",
    [c for c in itertools.product([1, 2], [False, True], [False, True], [False, True], [True, False])],
)
def test_layer_matches_torch(kind, dtype, num_layers, bidirectional, batch_first, with_hx, bias):
    T, B, IN, H = 5, 3, 4, 6
    D = 2 if bidirectional else 1
    ours, theirs = _make(
        kind, IN, H, dtype, num_layers=num_layers, bidirectional=bidirectional, batch_first=batch_first, bias=bias
    )
    x = torch.randn((B, T, IN) if batch_first else (T, B, IN), dtype=dtype)
    xo, xt = _leaf(x)
    pairs = [(xo, xt)]
    if with_hx:
        ho, ht = _leaf(torch.randn(D * num_layers, B, H, dtype=dtype))
        pairs.append((ho, ht))
        if kind == "LSTM":
            co, ct = _leaf(torch.randn(D * num_layers, B, H, dtype=dtype))
            pairs.append((co, ct))
            yo, (hn_o, cn_o) = ours(xo, (ho, co))
            yt, (hn_t, cn_t) = theirs(xt, (ht, ct))
        else:
            yo, hn_o = ours(xo, ho)
            yt, hn_t = theirs(xt, ht)
    elif kind == "LSTM":
        yo, (hn_o, cn_o) = ours(xo)
        yt, (hn_t, cn_t) = theirs(xt)
    else:
        yo, hn_o = ours(xo)
        yt, hn_t = theirs(xt)
    tol = TOL[dtype]
    assert_close(yo, yt, **tol)
    assert_close(hn_o, hn_t, **tol)
    gy, gh = torch.randn(yt.shape, dtype=dtype), torch.randn(hn_t.shape, dtype=dtype)
    lo = (yo * from_torch(gy)).sum() + (hn_o * from_torch(gh)).sum()
    lt = (yt * gy).sum() + (hn_t * gh).sum()
    if kind == "LSTM":
        assert_close(cn_o, cn_t, **tol)
        gc = torch.randn(cn_t.shape, dtype=dtype)
        lo = lo + (cn_o * from_torch(gc)).sum()
        lt = lt + (cn_t * gc).sum()
    lo.backward()
    lt.backward()
    _compare_grads(ours, theirs, pairs, tol)


# The cell kernels run a row's hidden units in vectors of 16 (AVX-512) or 8 floats: sizes below, at and
# past those widths (masked tails), inputs large enough to saturate the sigmoids and tanhs, and a batch
# that the time loop splits across two threads.
@pytest.mark.parametrize("kind", ["LSTM", "GRU", "RNN_tanh", "RNN_relu"])
@pytest.mark.parametrize("hidden", [7, 15, 16, 17, 33])
@pytest.mark.parametrize("scale", [1.0, 8.0])
def test_hidden_sizes_across_vector_widths_match_torch(kind, hidden, scale):
    old = fc.get_num_threads()
    fc.set_num_threads(2)
    try:
        ours, theirs = _make(kind, 5, hidden, torch.float32, num_layers=2)
        x = scale * torch.randn(6, 9, 5)
        xo, xt = _leaf(x)
        yo, yt = ours(xo)[0], theirs(xt)[0]
        assert_close(yo, yt, **TOL[torch.float32])
        g = torch.randn(yt.shape)
        (yo * from_torch(g)).sum().backward()
        (yt * g).sum().backward()
        _compare_grads(ours, theirs, [(xo, xt)], TOL[torch.float32])
    finally:
        fc.set_num_threads(old)


@pytest.mark.parametrize("kind", ["LSTM", "GRU", "RNN_tanh"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_only_output_or_only_state_used(kind, dtype):
    """Gradients flow when only some of the outputs are used (the others' gradients are undefined)."""
    ours, theirs = _make(kind, 3, 4, dtype, num_layers=2)
    x = torch.randn(4, 2, 3, dtype=dtype)
    for pick in (0, 1):
        ours.zero_grad()
        theirs.zero_grad()
        xo, xt = _leaf(x)
        ro, rt = ours(xo), theirs(xt)
        vo = ro[0] if pick == 0 else (ro[1][1] if kind == "LSTM" else ro[1])
        vt = rt[0] if pick == 0 else (rt[1][1] if kind == "LSTM" else rt[1])
        vo.sum().backward()
        vt.sum().backward()
        _compare_grads(ours, theirs, [(xo, xt)], TOL[dtype])


@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("kind", ["LSTM", "GRU", "RNN_tanh"])
@pytest.mark.parametrize("bidirectional", [False, True])
@pytest.mark.parametrize("batch_first", [False, True])
def test_packed_unsorted_lengths(kind, dtype, bidirectional, batch_first):
    T, B, IN, H, L = 6, 5, 3, 4, 2
    D = 2 if bidirectional else 1
    lengths = [3, 6, 1, 4, 3]
    ours, theirs = _make(kind, IN, H, dtype, num_layers=L, bidirectional=bidirectional, batch_first=batch_first)
    x = torch.randn((B, T, IN) if batch_first else (T, B, IN), dtype=dtype)
    xo, xt = _leaf(x)
    ho, ht = _leaf(torch.randn(D * L, B, H, dtype=dtype))
    pairs = [(xo, xt), (ho, ht)]
    po = rnn_utils.pack_padded_sequence(xo, lengths, batch_first=batch_first, enforce_sorted=False)
    pt = torch.nn.utils.rnn.pack_padded_sequence(xt, lengths, batch_first=batch_first, enforce_sorted=False)
    assert to_numpy(po.batch_sizes).tolist() == pt.batch_sizes.tolist()
    assert to_numpy(po.sorted_indices).tolist() == pt.sorted_indices.tolist()
    if kind == "LSTM":
        co, ct = _leaf(torch.randn(D * L, B, H, dtype=dtype))
        pairs.append((co, ct))
        out_o, (hn_o, cn_o) = ours(po, (ho, co))
        out_t, (hn_t, cn_t) = theirs(pt, (ht, ct))
    else:
        out_o, hn_o = ours(po, ho)
        out_t, hn_t = theirs(pt, ht)
    assert isinstance(out_o, rnn_utils.PackedSequence)
    tol = TOL[dtype]
    assert_close(out_o.data, out_t.data, **tol)
    yo, lo_len = rnn_utils.pad_packed_sequence(out_o, batch_first=batch_first, padding_value=-1.0, total_length=7)
    yt, lt_len = torch.nn.utils.rnn.pad_packed_sequence(
        out_t, batch_first=batch_first, padding_value=-1.0, total_length=7
    )
    assert to_numpy(lo_len).tolist() == lt_len.tolist() == lengths
    assert_close(yo, yt, **tol)
    assert_close(hn_o, hn_t, **tol)
    gy, gh = torch.randn(yt.shape, dtype=dtype), torch.randn(hn_t.shape, dtype=dtype)
    lo = (yo * from_torch(gy)).sum() + (hn_o * from_torch(gh)).sum()
    lt = (yt * gy).sum() + (hn_t * gh).sum()
    if kind == "LSTM":
        assert_close(cn_o, cn_t, **tol)
        gc = torch.randn(cn_t.shape, dtype=dtype)
        lo = lo + (cn_o * from_torch(gc)).sum()
        lt = lt + (cn_t * gc).sum()
    lo.backward()
    lt.backward()
    _compare_grads(ours, theirs, pairs, tol)


def test_packed_sorted_and_pack_sequence():
    seqs = [torch.randn(n, 3) for n in (5, 4, 4, 2)]
    po = rnn_utils.pack_sequence([from_torch(s) for s in seqs])
    pt = torch.nn.utils.rnn.pack_sequence(seqs)
    assert po.sorted_indices is None and po.unsorted_indices is None
    assert_close(po.data, pt.data)
    assert to_numpy(po.batch_sizes).tolist() == pt.batch_sizes.tolist()
    ours, theirs = _make("GRU", 3, 4, torch.float32)
    out_o, h_o = ours(po)
    out_t, h_t = theirs(pt)
    assert_close(out_o.data, out_t.data, **TOL[torch.float32])
    assert_close(h_o, h_t, **TOL[torch.float32])
    # unsorted list
    seqs2 = [torch.randn(n, 2) for n in (2, 5, 3)]
    po2 = rnn_utils.pack_sequence([from_torch(s) for s in seqs2], enforce_sorted=False)
    pt2 = torch.nn.utils.rnn.pack_sequence(seqs2, enforce_sorted=False)
    assert_close(po2.data, pt2.data)
    assert to_numpy(po2.unsorted_indices).tolist() == pt2.unsorted_indices.tolist()


@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("padding_side", ["right", "left"])
def test_pad_sequence(batch_first, padding_side):
    seqs = [torch.randn(n, 2, 3) for n in (2, 5, 3)]
    o = rnn_utils.pad_sequence([from_torch(s) for s in seqs], batch_first, 0.5, padding_side)
    t = torch.nn.utils.rnn.pad_sequence(seqs, batch_first, 0.5, padding_side)
    assert_close(o, t)


def test_pack_pad_roundtrip_gradients():
    x = torch.randn(4, 3, 2, dtype=torch.float64)
    xo, xt = _leaf(x)
    lengths = [2, 4, 1]
    po = rnn_utils.pack_padded_sequence(xo, lengths, enforce_sorted=False)
    pt = torch.nn.utils.rnn.pack_padded_sequence(xt, lengths, enforce_sorted=False)
    yo, _ = rnn_utils.pad_packed_sequence(po)
    yt, _ = torch.nn.utils.rnn.pad_packed_sequence(pt)
    assert_close(yo, yt)
    g = torch.randn(yt.shape, dtype=torch.float64)
    (yo * from_torch(g)).sum().backward()
    (yt * g).sum().backward()
    assert_close(xo.grad, xt.grad)


@pytest.mark.parametrize("kind", ["LSTM", "GRU", "RNN_tanh", "RNN_relu"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
def test_unbatched_input(kind, dtype):
    ours, theirs = _make(kind, 3, 4, dtype, num_layers=2, bidirectional=True)
    x = torch.randn(5, 3, dtype=dtype)
    h = torch.randn(4, 4, dtype=dtype)
    if kind == "LSTM":
        c = torch.randn(4, 4, dtype=dtype)
        yo, (ho, co) = ours(from_torch(x), (from_torch(h), from_torch(c)))
        yt, (ht, ct) = theirs(x, (h, c))
        assert_close(co, ct, **TOL[dtype])
    else:
        yo, ho = ours(from_torch(x), from_torch(h))
        yt, ht = theirs(x, h)
    assert_close(yo, yt, **TOL[dtype])
    assert_close(ho, ht, **TOL[dtype])


@pytest.mark.parametrize("kind", ["LSTMCell", "GRUCell", "RNNCell_tanh", "RNNCell_relu"])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("with_hx", [False, True])
@pytest.mark.parametrize("bias", [True, False])
@pytest.mark.parametrize("unbatched", [False, True])
def test_cells(kind, dtype, with_hx, bias, unbatched):
    IN, H, B = 3, 5, 4
    if kind.startswith("RNNCell"):
        nl = kind.split("_")[1]
        theirs = torch.nn.RNNCell(IN, H, bias=bias, nonlinearity=nl, dtype=dtype)
        ours = nn.RNNCell(IN, H, bias=bias, nonlinearity=nl, dtype=FB_DTYPE[dtype])
    else:
        theirs = getattr(torch.nn, kind)(IN, H, bias=bias, dtype=dtype)
        ours = getattr(nn, kind)(IN, H, bias=bias, dtype=FB_DTYPE[dtype])
    copy_params(ours, theirs)
    x = torch.randn((IN,) if unbatched else (B, IN), dtype=dtype)
    xo, xt = _leaf(x)
    pairs = [(xo, xt)]
    hshape = (H,) if unbatched else (B, H)
    args_o, args_t = [xo], [xt]
    if with_hx:
        ho, ht = _leaf(torch.randn(hshape, dtype=dtype))
        pairs.append((ho, ht))
        if kind == "LSTMCell":
            co, ct = _leaf(torch.randn(hshape, dtype=dtype))
            pairs.append((co, ct))
            args_o.append((ho, co))
            args_t.append((ht, ct))
        else:
            args_o.append(ho)
            args_t.append(ht)
    ro, rt = ours(*args_o), theirs(*args_t)
    ro, rt = _flatten_out(ro), _flatten_out(rt)
    lo = lt = 0
    for a, b in zip(ro, rt, strict=True):
        assert_close(a, b, **TOL[dtype])
        g = torch.randn(b.shape, dtype=dtype)
        lo = lo + (a * from_torch(g)).sum()
        lt = lt + (b * g).sum()
    lo.backward()
    lt.backward()
    _compare_grads(ours, theirs, pairs, TOL[dtype])


@pytest.mark.parametrize("device", ["meta", *device_params(("sim",))])
@pytest.mark.parametrize("kind", ["LSTM", "GRU", "RNN_tanh"])
@pytest.mark.parametrize("bias", [True, False])
def test_layer_on_another_device_makes_its_default_state_there(kind, bias, device):
    """The zero initial states and the "no bias" / "no cell state" markers are made on the input's device, as
    torch's: the layer runs on the meta device (shapes only, torch's meta shapes) and the simulated one."""
    ours, theirs = _make(kind, 3, 4, torch.float32, num_layers=2, bidirectional=True, bias=bias)
    x = torch.randn(5, 2, 3)
    y_t, st_t = (theirs.to("meta")(x.to("meta"))) if device == "meta" else theirs(x)
    y, st = ours.to(device)(from_torch(x).to(device))
    pairs = [(y, y_t)] + list(zip(st, st_t, strict=True) if kind == "LSTM" else [(st, st_t)])
    for o, t in pairs:
        assert o.device.type == device and tuple(o.shape) == tuple(t.shape)
        if device != "meta":
            assert_close(o.cpu(), t, **TOL[torch.float32])


@pytest.mark.parametrize("device", ["meta", *device_params(("sim",))])
@pytest.mark.parametrize("kind", ["LSTMCell", "GRUCell", "RNNCell"])
def test_cell_on_another_device_makes_its_default_state_there(kind, device):
    """A cell called without hx makes its zero state on the input's device, as torch's (meta: torch's shapes)."""
    theirs = getattr(torch.nn, kind)(3, 4)
    ours = getattr(nn, kind)(3, 4)
    copy_params(ours, theirs)
    x = torch.randn(2, 3)
    rt = theirs.to("meta")(x.to("meta")) if device == "meta" else theirs(x)
    ro = ours.to(device)(from_torch(x).to(device))
    for o, t in zip(_flatten_out(ro), _flatten_out(rt), strict=True):
        assert o.device.type == device and tuple(o.shape) == tuple(t.shape)
        if device != "meta":
            assert_close(o.cpu(), t.detach(), **TOL[torch.float32])


@pytest.mark.parametrize("mode", [0, 1, 2, 3])
@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("packed", [False, True])
def test_layer_op_gradcheck(mode, reverse, packed):
    """float64 gradcheck of core's _rnn_layer (every input, every used output)."""
    G = {0: 1, 1: 1, 2: 4, 3: 3}[mode]
    H, B = 2, 3
    batch_sizes = [3, 2, 2, 1] if packed else [3, 3, 3]
    N = sum(batch_sizes)
    d = fc.float64

    def leaf(*shape):
        return (fc.randn(*shape, dtype=d) * 0.7).requires_grad_(True)

    ig, w, b, hx = leaf(N, G * H), leaf(G * H, H), leaf(G * H), leaf(B, H)
    cx = leaf(B, H) if mode == 2 else fc.empty(0, dtype=d)
    if mode == 1:  # relu: keep pre-activations away from the kink
        ig = (ig.detach() + fc.where(ig.detach() > 0, 0.3, -0.3)).requires_grad_(True)

    def fn(ig, w, b, hx, *cx_):
        c = cx_[0] if cx_ else fc.empty(0, dtype=d)
        out, hy, cy, _ = fc._C._rnn_layer(ig, w, b, hx, c, mode, batch_sizes, reverse)
        return (out, hy, cy) if mode == 2 else (out, hy)

    inputs = (ig, w, b, hx) + ((cx,) if mode == 2 else ())
    assert fa.gradcheck(fn, inputs)


@pytest.mark.parametrize("kind", ["LSTM", "GRU"])
def test_module_gradcheck_tiny(kind):
    m = getattr(nn, kind)(2, 2, num_layers=2, bidirectional=True, dtype=fc.float64)
    x = fc.randn(3, 2, 2, dtype=fc.float64).requires_grad_(True)
    params = list(m.parameters())

    def fn(x, *ps):
        with fa.no_grad():
            for p, v in zip(params, ps, strict=True):
                p.copy_(v)
        y = m(x)
        return y[0]

    # gradient w.r.t. the input only (the parameters are copied in without history)
    assert fa.gradcheck(lambda x: m(x)[0], (x,))
    assert fn is not None


def test_state_dict_keys_and_init():
    for kw in ({}, {"num_layers": 3, "bidirectional": True}, {"bias": False, "num_layers": 2}):
        for kind in ("LSTM", "GRU", "RNN"):
            ours = getattr(nn, kind)(5, 7, **kw)
            theirs = getattr(torch.nn, kind)(5, 7, **kw)
            assert list(ours.state_dict()) == list(theirs.state_dict())
            for (n, p), (_, q) in zip(ours.named_parameters(), theirs.named_parameters(), strict=True):
                assert tuple(p.shape) == tuple(q.shape), n
                v = to_numpy(p)
                assert np.abs(v).max() <= 1 / np.sqrt(7) + 1e-7
    for kind in ("LSTMCell", "GRUCell", "RNNCell"):
        assert list(getattr(nn, kind)(3, 4).state_dict()) == list(getattr(torch.nn, kind)(3, 4).state_dict())
    # a torch state_dict loads
    theirs = torch.nn.LSTM(3, 4, num_layers=2)
    ours = nn.LSTM(3, 4, num_layers=2)
    ours.load_state_dict({k: from_torch(v) for k, v in theirs.state_dict().items()})
    x = torch.randn(2, 1, 3)
    assert_close(ours(from_torch(x))[0], theirs(x)[0], rtol=1e-4, atol=1e-5)


def test_dropout_between_layers():
    ours, theirs = _make("LSTM", 3, 4, torch.float32, num_layers=3, dropout=0.5)
    x = torch.randn(4, 2, 3)
    ours.eval()
    theirs.eval()
    assert_close(ours(from_torch(x))[0], theirs(x)[0], **TOL[torch.float32])
    ours.train()
    a = to_numpy(ours(from_torch(x))[0])
    assert a.shape == (4, 2, 4)
    # p = 1 in training: every layer after the first sees zeros, so the output does not depend on x
    m = nn.GRU(3, 4, num_layers=2, dropout=1.0)
    y1 = to_numpy(m(fc.randn(4, 2, 3))[0])
    y2 = to_numpy(m(fc.randn(4, 2, 3))[0])
    np.testing.assert_allclose(y1, y2)


def test_repr():
    assert repr(nn.LSTM(3, 4, num_layers=2, bidirectional=True)) == repr(
        torch.nn.LSTM(3, 4, num_layers=2, bidirectional=True)
    )
    assert repr(nn.RNN(3, 4, nonlinearity="relu")) == repr(torch.nn.RNN(3, 4, nonlinearity="relu"))


# ---- bad input ----


def _raises(exc, fragment, fn, *args, **kwargs):
    with pytest.raises(exc) as e:
        fn(*args, **kwargs)
    assert fragment in str(e.value), str(e.value)


def test_errors():
    lstm = nn.LSTM(128, 256, num_layers=2)
    x = fc.randn(35, 20, 128)
    h = fc.zeros(1, 20, 256)
    _raises(
        fc.FlambeauError,
        "LSTM: expected hidden[0] size (2, 20, 256), got (1, 20, 256)",
        lstm,
        x,
        (h, fc.zeros(2, 20, 256)),
    )
    _raises(
        fc.FlambeauError,
        "LSTM: expected hidden[1] size (2, 20, 256), got (2, 20, 255)",
        lstm,
        x,
        (fc.zeros(2, 20, 256), fc.zeros(2, 20, 255)),
    )
    _raises(TypeError, "hx must be a tuple", lstm, x, fc.zeros(2, 20, 256))
    _raises(
        fc.FlambeauError, "input.size(-1) must be equal to input_size. Expected 128, got 64", lstm, fc.randn(3, 2, 64)
    )
    _raises(fc.FlambeauError, "Expected input to be 2D or 3D, got 4D", lstm, fc.randn(3, 2, 1, 128))
    _raises(TypeError, "floating point", lstm, fc.zeros(3, 2, 128, dtype=fc.int64))
    _raises(TypeError, "dtype", lstm, fc.zeros(3, 2, 128, dtype=fc.float64))
    gru = nn.GRU(4, 5, bidirectional=True)
    _raises(
        fc.FlambeauError,
        "GRU: expected hidden size (2, 3, 5), got (1, 3, 5)",
        gru,
        fc.randn(2, 3, 4),
        fc.zeros(1, 3, 5),
    )
    _raises(fc.FlambeauError, "GRU: expected hidden size (2, 5), got (2, 3, 5)", gru, fc.randn(2, 4), fc.zeros(2, 3, 5))
    _raises(fc.FlambeauError, "nonlinearity", nn.RNN, 3, 4, nonlinearity="sigmoid")
    _raises(fc.FlambeauError, "dropout", nn.LSTM, 3, 4, dropout=1.5)
    _raises(fc.FlambeauError, "hidden_size", nn.LSTM, 3, 0)
    _raises(fc.FlambeauError, "num_layers", nn.GRU, 3, 4, num_layers=0)
    cell = nn.LSTMCell(3, 4)
    _raises(
        fc.FlambeauError,
        "LSTMCell: expected hidden[0] size (2, 4), got (3, 4)",
        cell,
        fc.randn(2, 3),
        (fc.zeros(3, 4), fc.zeros(2, 4)),
    )
    _raises(fc.FlambeauError, "inconsistent input_size: got 5 expected 3", cell, fc.randn(2, 5))
    _raises(fc.FlambeauError, "Expected input to be 1D or 2D, got 3D", nn.GRUCell(3, 4), fc.randn(1, 2, 3))


def test_pack_errors():
    x = fc.randn(4, 3, 2)
    _raises(fc.FlambeauError, "sorted in decreasing order", rnn_utils.pack_padded_sequence, x, [2, 3, 1])
    _raises(fc.FlambeauError, "greater than 0", rnn_utils.pack_padded_sequence, x, [2, 0, 1], enforce_sorted=False)
    _raises(fc.FlambeauError, "expected 3 lengths", rnn_utils.pack_padded_sequence, x, [2, 1])
    _raises(fc.FlambeauError, "exceeds the 4 steps", rnn_utils.pack_padded_sequence, x, [5, 1, 1])
    p = rnn_utils.pack_padded_sequence(x, [4, 2, 1])
    _raises(
        fc.FlambeauError,
        "total_length=3 and max sequence length being 4",
        rnn_utils.pad_packed_sequence,
        p,
        total_length=3,
    )
    _raises(
        fc.FlambeauError, "every sequence must have shape", rnn_utils.pad_sequence, [fc.zeros(2, 3), fc.zeros(2, 4)]
    )


def test_layer_op_errors():
    d = fc.float32
    w = fc.zeros(8, 2)
    e = fc.empty(0)
    _raises(
        fc.FlambeauError,
        "batch_sizes sum to 6",
        fc._C._rnn_layer,
        fc.zeros(5, 8),
        w,
        e,
        fc.zeros(3, 2),
        fc.zeros(3, 2),
        2,
        [3, 3],
    )
    _raises(
        fc.FlambeauError,
        "non-increasing",
        fc._C._rnn_layer,
        fc.zeros(5, 8),
        w,
        e,
        fc.zeros(2, 2),
        fc.zeros(2, 2),
        2,
        [2, 3],
    )
    _raises(
        fc.FlambeauError,
        "expects w_hh of shape (6, 2)",
        fc._C._rnn_layer,
        fc.zeros(4, 6),
        w,
        e,
        fc.zeros(2, 2),
        e,
        3,
        [2, 2],
    )
    _raises(
        fc.FlambeauError,
        "expected cx of shape (2, 2)",
        fc._C._rnn_layer,
        fc.zeros(4, 8),
        w,
        e,
        fc.zeros(2, 2),
        e,
        2,
        [2, 2],
    )
    _raises(
        TypeError,
        "float32 or float64",
        fc._C._rnn_layer,
        fc.zeros(4, 8, dtype=fc.int64),
        w,
        e,
        fc.zeros(2, 2),
        e,
        2,
        [2, 2],
    )
    _raises(fc.FlambeauError, "mode must be", fc._C._rnn_layer, fc.zeros(4, 8), w, e, fc.zeros(2, 2), e, 7, [2, 2])
    assert d == fc.float32


def test_flatten_parameters_is_accepted_and_changes_nothing_as_torch_on_cpu():
    import torch

    for cls in ("RNN", "LSTM", "GRU"):
        ours, theirs = getattr(nn, cls)(3, 4, num_layers=2), getattr(torch.nn, cls)(3, 4, num_layers=2)
        before = {k: v.clone() for k, v in ours.state_dict().items()}
        assert ours.flatten_parameters() is None and theirs.flatten_parameters() is None
        after = ours.state_dict()
        assert list(after) == list(before)
        assert all(after[k].data_ptr() == ours.state_dict()[k].data_ptr() for k in after)
        assert all((after[k] == before[k]).all().item() for k in after)


# ---- an empty batch and zero time steps, as PyTorch ----


@pytest.mark.parametrize("mode", ["RNN", "LSTM", "GRU"])
@pytest.mark.parametrize("batch_first", [False, True])
@pytest.mark.parametrize("bidirectional", [False, True])
def test_empty_batch_gives_empty_outputs_and_zero_gradients_as_torch(mode, batch_first, bidirectional):
    kw = dict(num_layers=2, batch_first=batch_first, bidirectional=bidirectional)
    theirs, ours = getattr(torch.nn, mode)(3, 4, **kw), getattr(nn, mode)(3, 4, **kw)
    copy_params(ours, theirs)
    shape = (0, 5, 3) if batch_first else (5, 0, 3)
    tx = torch.zeros(shape, requires_grad=True)
    fx = fc.zeros(shape, requires_grad=True)
    t_out, t_state = theirs(tx)
    f_out, f_state = ours(fx)
    t_states = t_state if mode == "LSTM" else (t_state,)
    f_states = f_state if mode == "LSTM" else (f_state,)
    assert f_out.shape == t_out.shape and [s.shape for s in f_states] == [s.shape for s in t_states]
    (t_out.sum() + sum(s.sum() for s in t_states)).backward()
    (f_out.sum() + sum(s.sum() for s in f_states)).backward()
    assert fx.grad.shape == tx.grad.shape
    for (name, fp), tp in zip(ours.named_parameters(), theirs.parameters(), strict=True):
        assert fp.grad is not None and tp.grad is not None, name
        assert fp.grad.shape == tp.grad.shape and to_numpy(fp.grad).tolist() == tp.grad.numpy().tolist(), name


@pytest.mark.parametrize("mode", ["RNN", "LSTM", "GRU"])
@pytest.mark.parametrize("shape, batch_first", [((0, 2, 3), False), ((2, 0, 3), True), ((0, 3), False)])
def test_zero_time_steps_raise_as_torch(mode, shape, batch_first):
    theirs = getattr(torch.nn, mode)(3, 4, batch_first=batch_first)
    ours = getattr(nn, mode)(3, 4, batch_first=batch_first)
    with pytest.raises(RuntimeError, match="^Expected sequence length to be larger than 0 in RNN$"):
        theirs(torch.zeros(shape))
    with pytest.raises(RuntimeError, match=rf"^\[{mode}\] Expected sequence length to be larger than 0 in RNN$"):
        ours(fc.zeros(shape))
