"""Core's _rnn_layer against PyTorch's recurrent layers (values; the gradients are tested in nn)."""

from __future__ import annotations

import flambeau_core as fc
import numpy as np
import pytest
import torch
from helpers import to_numpy

pytestmark = pytest.mark.on_devices(not_on_cuda="RNN layers: no flambeau-cuda kernel yet")

KINDS = {0: ("RNN", "tanh"), 1: ("RNN", "relu"), 2: ("LSTM", None), 3: ("GRU", None)}


def _fc(t: torch.Tensor) -> fc.Tensor:
    return fc.tensor(t.detach().numpy().copy())


def _torch_layer(mode, dtype, IN, H, bidirectional):
    kind, nl = KINDS[mode]
    kw = {"nonlinearity": nl} if nl else {}
    torch.manual_seed(0)
    return getattr(torch.nn, kind)(IN, H, bidirectional=bidirectional, dtype=dtype, **kw)


@pytest.mark.parametrize("mode", [0, 1, 2, 3])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float64])
@pytest.mark.parametrize("reverse", [False, True])
@pytest.mark.parametrize("lengths", [None, [5, 3, 3, 1]])
def test_forward_matches_torch(mode, dtype, reverse, lengths):
    T, B, IN, H = 5, 4, 3, 6
    m = _torch_layer(mode, dtype, IN, H, bidirectional=True)
    sfx = "_reverse" if reverse else ""
    w_ih, w_hh = getattr(m, "weight_ih_l0" + sfx), getattr(m, "weight_hh_l0" + sfx)
    b_ih, b_hh = getattr(m, "bias_ih_l0" + sfx), getattr(m, "bias_hh_l0" + sfx)
    x = torch.randn(T, B, IN, dtype=dtype)
    h0 = torch.randn(2, B, H, dtype=dtype)
    c0 = torch.randn(2, B, H, dtype=dtype)
    is_lstm = mode == 2
    inp = x if lengths is None else torch.nn.utils.rnn.pack_padded_sequence(x, lengths)
    y, st = m(inp, (h0, c0) if is_lstm else h0)
    data = y if lengths is None else y.data
    data = data.reshape(-1, 2 * H)
    batch_sizes = [B] * T if lengths is None else inp.batch_sizes.tolist()
    xin = (x if lengths is None else inp.data).reshape(-1, IN)
    d = 1 if reverse else 0
    ig = _fc(xin @ w_ih.T + b_ih)
    cx = _fc(c0[d]) if is_lstm else fc.empty(0, dtype=ig.dtype)
    out, hy, cy, ws = fc._C._rnn_layer(ig, _fc(w_hh), _fc(b_hh), _fc(h0[d]), cx, mode, batch_sizes, reverse)
    tol = dict(rtol=1e-5, atol=1e-6) if dtype == torch.float32 else dict(rtol=1e-10, atol=1e-12)
    np.testing.assert_allclose(to_numpy(out), data[:, d * H : (d + 1) * H].detach().numpy(), **tol)
    hn = st[0] if is_lstm else st
    np.testing.assert_allclose(to_numpy(hy), hn[d].detach().numpy(), **tol)
    if is_lstm:
        np.testing.assert_allclose(to_numpy(cy), st[1][d].detach().numpy(), **tol)


def test_non_contiguous_inputs_and_no_bias():
    m = _torch_layer(2, torch.float64, 3, 4, bidirectional=False)
    x = torch.randn(3, 2, 3, dtype=torch.float64)
    y, (h, c) = m(x)
    ig = (x.reshape(-1, 3) @ m.weight_ih_l0.T + m.bias_ih_l0 + m.bias_hh_l0).detach()
    w_t = _fc(m.weight_hh_l0.T.contiguous()).transpose(0, 1)  # a transposed view
    assert not w_t.is_contiguous()
    z = fc.zeros(2, 4, dtype=fc.float64)
    out, hy, cy, _ = fc._C._rnn_layer(_fc(ig), w_t, fc.empty(0, dtype=fc.float64), z, z, 2, [2, 2, 2])
    np.testing.assert_allclose(to_numpy(out), y.reshape(-1, 4).detach().numpy(), rtol=1e-10)
    np.testing.assert_allclose(to_numpy(cy), c[0].detach().numpy(), rtol=1e-10)


def test_errors_name_the_op_and_shapes():
    w = fc.zeros(8, 2)
    e = fc.empty(0)
    with pytest.raises(fc.FlambeauError, match=r"\[_rnn_layer\] igates has 5 rows but batch_sizes sum to 6"):
        fc._C._rnn_layer(fc.zeros(5, 8), w, e, fc.zeros(3, 2), fc.zeros(3, 2), 2, [3, 3])
    with pytest.raises(fc.FlambeauError, match="expected b_hh of shape"):
        fc._C._rnn_layer(fc.zeros(4, 8), w, fc.zeros(3), fc.zeros(2, 2), fc.zeros(2, 2), 2, [2, 2])
    with pytest.raises(TypeError, match="expected all tensors to have dtype float32, got float64"):
        fc._C._rnn_layer(fc.zeros(4, 8), w.double(), e, fc.zeros(2, 2), fc.zeros(2, 2), 2, [2, 2])
    with pytest.raises(fc.FlambeauError, match="batch_sizes\\[0\\] = 1 does not match the batch size of hx, 2"):
        fc._C._rnn_layer(fc.zeros(2, 8), w, e, fc.zeros(2, 2), fc.zeros(2, 2), 2, [1, 1])
