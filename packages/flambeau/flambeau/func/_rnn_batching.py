"""The batching rule of core's recurrent layer op, ``_rnn_layer`` (one layer and direction of an RNN, LSTM or
GRU over a whole, possibly packed, sequence: Note [vmap on __torch_function__] in ``_vmap.py``).

With the recurrent weights shared by the samples, the batch joins each step's rows: one call of the fused
layer on ``B * N`` sequences. With batched weights (an ensemble, or the expanded weights of per-sample
gradients, Note [grad inside vmap]) each sample's recurrence has its own matrix, which the fused layer
cannot take: the layer runs unrolled in time on the batch, each step one batched product and the cell's
elementwise update, so autograd sees every sample's own path (a loop over the steps, never the samples).
"""

from __future__ import annotations

from typing import Any

import flambeau_core

from flambeau.func._vmap import BatchedTensor, _apply, _Batched, _Call, _expand

_NAMES = ("igates", "w_hh", "b_hh", "hx", "cx", "mode", "batch_sizes", "reverse")
_RNN_TANH, _RNN_RELU, _LSTM, _GRU = range(4)


def _offsets(sizes: list[int]) -> list[int]:
    out, total = [], 0
    for n in sizes:
        out.append(total)
        total += n
    return out


def rnn_layer(call: _Call) -> Any:
    """``_rnn_layer(igates, w_hh, b_hh, hx, cx, mode, batch_sizes, reverse)`` on a batch."""
    bound: dict[str, Any] = {"reverse": False}
    bound.update(zip(_NAMES, call.args, strict=False))
    bound.update(call.kwargs)
    if isinstance(bound["w_hh"], _Batched) or isinstance(bound["b_hh"], _Batched):
        return _unrolled(call, bound)
    return _merged(call, bound)


def _merged(call: _Call, bound: dict) -> Any:
    """Shared weights: step t's rows of every sample side by side (sequence-major, so the sequences still
    active at a step stay the first rows of the packed layout), one fused call."""
    b, sizes, mode = call.batch_size, [int(n) for n in bound["batch_sizes"]], bound["mode"]
    ig = _expand(bound["igates"], call).value  # [B, rows, G*H]
    hx = _expand(bound["hx"], call).value  # [B, N, H]
    lstm = mode == _LSTM
    cx = _expand(bound["cx"], call).value if lstm else bound["cx"]
    # rows of the merged layout, by the samples' rows: step t's (n, b) is row offset_t * B + n * B + b
    steps = [
        ig[:, o : o + n].transpose(0, 1).reshape(n * b, ig.shape[-1])
        for o, n in zip(_offsets(sizes), sizes, strict=True)
    ]
    merged = flambeau_core.cat(steps, 0) if len(steps) > 1 else steps[0]

    def rows_of_samples(t: Any) -> Any:  # [N, H] per sample merged as [N * B, H] -> [B, N, H]
        return t.reshape(t.shape[0] // b, b, t.shape[-1]).transpose(0, 1)

    def samples_as_rows(t: Any) -> Any:  # [B, N, H] -> [N * B, H]
        return t.transpose(0, 1).reshape(t.shape[0] * t.shape[1], t.shape[-1])

    out, hy, cy, workspace = _apply(
        call.func,
        [
            merged,
            bound["w_hh"],
            bound["b_hh"],
            samples_as_rows(hx),
            samples_as_rows(cx) if lstm else cx,
            mode,
            [n * b for n in sizes],
            bound["reverse"],
        ],
        {},
    )
    pieces = [rows_of_samples(out[o * b : (o + n) * b]) for o, n in zip(_offsets(sizes), sizes, strict=True)]
    output = flambeau_core.cat(pieces, 1) if len(pieces) > 1 else pieces[0]
    hy_b = BatchedTensor(rows_of_samples(hy), call.level)
    cy_b = BatchedTensor(rows_of_samples(cy), call.level) if lstm else cy
    return BatchedTensor(output.contiguous(), call.level), hy_b, cy_b, workspace


def _unrolled(call: _Call, bound: dict) -> Any:
    """Batched weights: the recurrence step by step on the whole batch (see the module docstring)."""
    sizes, mode, reverse = [int(n) for n in bound["batch_sizes"]], bound["mode"], bool(bound["reverse"])
    ig = _expand(bound["igates"], call).value  # [B, rows, G*H]
    w = _expand(bound["w_hh"], call).value.mT  # [B, H, G*H]
    bias = bound["b_hh"]
    if isinstance(bias, _Batched) or bias.numel():
        bias = _expand(bias, call).value.unsqueeze(1)  # [B, 1, G*H]
    else:
        bias = None
    h = _expand(bound["hx"], call).value  # [B, N, H]: rows past a step's count keep their last state
    lstm = mode == _LSTM
    c = _expand(bound["cx"], call).value if lstm else None
    outputs: list[Any] = [None] * len(sizes)
    order = range(len(sizes) - 1, -1, -1) if reverse else range(len(sizes))
    offsets = _offsets(sizes)
    for t in order:
        n, o = sizes[t], offsets[t]
        x, prev = ig[:, o : o + n], h[:, :n]
        hh = flambeau_core.matmul(prev, w)
        if bias is not None:
            hh = hh + bias
        if mode == _GRU:
            xr, xz, xn = x.chunk(3, -1)
            hr, hz, hn = hh.chunk(3, -1)
            r, z = (xr + hr).sigmoid(), (xz + hz).sigmoid()
            new = (xn + r * hn).tanh()
            new = new + z * (prev - new)  # (1 - z) * n + z * h
        elif lstm:
            i, f, g, out_gate = (x + hh).chunk(4, -1)
            c_new = f.sigmoid() * c[:, :n] + i.sigmoid() * g.tanh()
            new = out_gate.sigmoid() * c_new.tanh()
            c = flambeau_core.cat([c_new, c[:, n:]], 1) if n < c.shape[1] else c_new
        else:
            pre = x + hh
            new = pre.tanh() if mode == _RNN_TANH else pre.relu()
        h = flambeau_core.cat([new, h[:, n:]], 1) if n < h.shape[1] else new
        outputs[t] = new
    output = flambeau_core.cat(outputs, 1) if len(outputs) > 1 else outputs[0]
    workspace = flambeau_core.empty(0, dtype=ig.dtype, device=ig.device)
    cy = BatchedTensor(c, call.level) if lstm else bound["cx"]
    return BatchedTensor(output, call.level), BatchedTensor(h, call.level), cy, workspace
