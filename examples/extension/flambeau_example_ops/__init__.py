"""flambeau-example-ops: an operator package built out of tree against the installed flambeau-core.

Importing it loads its C++ library, whose ``FLAMBEAU_LIBRARY(example, m)`` block registers
``fb.ops.example.lstm_cell`` (a CPU kernel, a CUDA kernel when built with nvcc, a fake rule and a
backward).
"""

from __future__ import annotations

import os

import flambeau as fb

__all__ = ["library_path", "lstm_cell"]

#: The path of the operator library inside the installed package.
library_path = os.path.join(os.path.dirname(__file__), "libexample_ops.so")
fb.ops.load_library(library_path)


def lstm_cell(gates: fb.Tensor, c: fb.Tensor) -> tuple[fb.Tensor, fb.Tensor]:
    r"""The pointwise part of an LSTM cell in one kernel: ``fb.ops.example.lstm_cell``.

    With ``i, f, g, o = gates.chunk(4, dim=1)``: ``c_next = sigmoid(f) * c + sigmoid(i) * tanh(g)`` and
    ``h = sigmoid(o) * tanh(c_next)``, as ``torch.nn.LSTMCell`` computes after its two matmuls.

    Args:
        gates: the pre-activations ``x @ W_ih.T + b_ih + h @ W_hh.T + b_hh``, shape ``(N, 4 * H)``,
            float32 or float64.
        c: the cell state, shape ``(N, H)``, of ``gates``' dtype and device.

    Returns:
        ``(h, c_next)``, each of shape ``(N, H)``.

    Example::

        >>> import flambeau as fb
        >>> from flambeau_example_ops import lstm_cell
        >>> h, c_next = lstm_cell(fb.zeros(2, 12), fb.ones(2, 3))
        >>> c_next[0].tolist()
        [0.5, 0.5, 0.5]
    """
    return fb.ops.example.lstm_cell(gates, c)
