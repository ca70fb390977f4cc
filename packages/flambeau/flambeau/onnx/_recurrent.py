"""Recurrent layers (core's ``_rnn_layer``: one layer and direction of nn.RNN, nn.LSTM, nn.GRU) as ONNX RNN/LSTM/GRU."""

from __future__ import annotations

import flambeau_core as fc
import numpy as np
from flambeau_core._trace import OpCall

from flambeau.onnx._graph import _arguments, _array, _Graph, _maps, _np_dtype, _unsupported
from flambeau.onnx._ops import _reshape

# core's modes (flambeau_nn.modules.rnn._MODES) -> (ONNX op, gates, PyTorch's gate blocks in ONNX's order)
_MODES = {
    0: ("RNN", 1, (0,)),  # RNN_TANH
    1: ("RNN", 1, (0,)),  # RNN_RELU
    2: ("LSTM", 4, (0, 3, 1, 2)),  # PyTorch (i, f, g, o) -> ONNX (i, o, f, c)
    3: ("GRU", 3, (1, 0, 2)),  # PyTorch (r, z, n) -> ONNX (z, r, h)
}


_PARAMS = (
    ("igates", None), ("w_hh", None), ("b_hh", None), ("hx", None), ("cx", None), ("mode", 0), ("batch_sizes", None),
    ("reverse", False),
)  # fmt: skip


@_maps("_rnn_layer")
def _rnn_layer(g: _Graph, call: OpCall) -> list[str | None]:
    """One layer and direction of nn.RNN, nn.LSTM or nn.GRU (their time loop) as ONNX's RNN, LSTM or GRU.

    Core's layer takes the input projection igates = x @ w_ih^T + b_ih, already computed by the graph; ONNX's
    ops multiply their input by W, so W is the permutation from PyTorch's gate order to ONNX's, and R, B are
    w_hh and b_hh permuted the same way. ONNX's GRU with linear_before_reset=1 is PyTorch's: the reset gate
    scales (h W_hn^T + b_hn). The sequence length and batch come from the graph's shapes where they are
    dynamic (Note [Sizes from a second trace]).
    """
    igates, w_hh, b_hh, hx, cx, mode, batch_sizes, reverse = _arguments(call, *_PARAMS)
    twin_sizes = [int(b) for b in g.twin_args(call, *_PARAMS)[6]]
    op, gates, blocks = _MODES[int(mode)]
    sizes = [int(b) for b in batch_sizes]
    if len(set(sizes)) != 1 or len(set(twin_sizes)) != 1:
        raise _unsupported(g, call, "a PackedSequence with sequences of different lengths")
    if g.is_dynamic(w_hh) or g.is_dynamic(b_hh):
        raise _unsupported(g, call, "recurrent weights computed from the inputs")
    hidden = int(w_hh.shape[1])
    np_t = _np_dtype(igates.dtype)
    perm = np.concatenate([np.arange(k * hidden, (k + 1) * hidden) for k in blocks])
    w = np.eye(gates * hidden, dtype=np_t)[perm][None]
    r = _array(w_hh)[perm][None]
    bias = np.zeros((1, 2 * gates * hidden), np_t)
    if b_hh.numel() > 0:
        bias[0, gates * hidden :] = _array(b_hh)[perm]
    steps = [len(sizes), sizes[0], gates * hidden]
    x = _reshape(g, call, igates, steps, [len(twin_sizes), twin_sizes[0], gates * hidden])[0]

    def initial(t: fc.Tensor) -> str:
        # A zero initial state (the layers' default) is ONNX's default too: left out, the batch stays free.
        if not g.is_dynamic(t) and not bool((t != 0).any()):
            return ""
        return g.node("Unsqueeze", [g.value(t), g.ints([0])])[0]

    inputs = [x, g.constant(w), g.constant(r), g.constant(bias), "", initial(hx)]
    attrs = {"hidden_size": hidden, "direction": "reverse" if reverse else "forward"}
    if op == "LSTM":
        inputs.append(initial(cx))
    elif op == "GRU":
        attrs["linear_before_reset"] = 1
    else:
        attrs["activations"] = ["Tanh" if int(mode) == 0 else "Relu"]
    while inputs[-1] == "":
        inputs.pop()
    outs = g.node(op, inputs, outputs=3 if op == "LSTM" else 2, **attrs)
    out = g.node("Reshape", [outs[0], g.ints([-1, hidden])])[0]
    hy = g.node("Squeeze", [outs[1], g.ints([0])])[0]
    cy = g.node("Squeeze", [outs[2], g.ints([0])])[0] if op == "LSTM" else None
    return [out, hy, cy, None]
