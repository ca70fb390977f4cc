"""Recurrent layers: ``RNN``, ``LSTM``, ``GRU`` and their cells, with PyTorch's semantics.

Parameters and ``state_dict`` keys are PyTorch's (``weight_ih_l0``,
``weight_hh_l0``, ``bias_ih_l0``, ``bias_hh_l0``, ``..._reverse`` for the
backward direction), all initialised ``U(-1/sqrt(hidden_size), 1/sqrt(hidden_size))``.

Each layer and direction is two core ops (Note [Recurrent layer kernel] in
core's src/cpu/rnn.cpp): one GEMM projects the input of every step at once,
then ``_rnn_layer`` runs the loop over time in C++ (a GEMM on h and one fused
cell update per step) and records one autograd node whose backward is the
matching ``_rnn_layer_backward``. Padded and packed inputs
(:class:`~flambeau_nn.utils.rnn.PackedSequence`) share the kernel: a padded
batch is a packed one whose sequences all have full length.

Example:
    >>> import flambeau_core as fc
    >>> import flambeau_nn as nn
    >>> lstm = nn.LSTM(8, 16, num_layers=2)
    >>> out, (h, c) = lstm(fc.randn(5, 3, 8))
    >>> out.shape, h.shape, c.shape
    (flambeau.Size([5, 3, 16]), flambeau.Size([2, 3, 16]), flambeau.Size([2, 3, 16]))
"""

from __future__ import annotations

import math
from typing import Any

import flambeau_core as fc
from flambeau_core import FlambeauError, Tensor
from flambeau_core.overrides import is_tensor_like

from flambeau_nn import functional as F
from flambeau_nn import init
from flambeau_nn.modules.module import Module
from flambeau_nn.parameter import Parameter
from flambeau_nn.utils.rnn import PackedSequence

__all__ = ["RNNBase", "RNN", "LSTM", "GRU", "RNNCellBase", "RNNCell", "LSTMCell", "GRUCell"]

# Modes of core's _rnn_layer.
_MODES = {"RNN_TANH": 0, "RNN_RELU": 1, "LSTM": 2, "GRU": 3}
_GATES = {"RNN_TANH": 1, "RNN_RELU": 1, "LSTM": 4, "GRU": 3}


def _check_size(name: str, value: Any, cls: str, minimum: int = 0) -> None:
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise FlambeauError(f"[{cls}] {name} must be an int >= {minimum}, got {value!r}")


def _shape(t: Tensor) -> tuple[int, ...]:
    return tuple(t.shape)


_EMPTY: dict[Any, Tensor] = {}


def _empty(dtype: Any, device: Any) -> Tensor:
    """A shared empty tensor (one per dtype and device): core's marker for "no bias" / "no cell state"."""
    e = _EMPTY.get((dtype, device))
    if e is None:
        e = _EMPTY[(dtype, device)] = fc.empty(0, dtype=dtype, device=device)
    return e


def _layer(
    mode: str,
    x2d: Tensor,
    w_ih: Tensor,
    w_hh: Tensor,
    b_ih: Tensor | None,
    b_hh: Tensor | None,
    hx: Tensor,
    cx: Tensor | None,
    batch_sizes: list[int],
    reverse: bool,
) -> tuple[Tensor, Tensor, Tensor]:
    """One layer and direction: the input GEMM for all steps, then the time loop in core."""
    # One linear: the bias rides the GEMM forward, and the backward is one _linear_backward (both
    # gradients' GEMMs and the bias's column sum in one call) instead of two matmuls and a sum.
    igates = F.linear(x2d, w_ih, b_ih)
    empty = _empty(x2d.dtype, x2d.device)
    if hx.shape[0] == 0:
        # An empty batch: no step to run. PyTorch returns empty outputs whose backward reaches every input
        # and weight (zero gradients); these empties come from the same ops, so they do too.
        hidden = w_hh.shape[1]
        hgates = fc.matmul(hx, w_hh.transpose(0, 1))
        if b_hh is not None:
            hgates = hgates + b_hh
        hy = hx + hgates[:, :hidden]
        return igates[:, :hidden], hy, (cx + hgates[:, :hidden]) if cx is not None else empty
    out, hy, cy, _ = fc._C._rnn_layer(
        igates,
        w_hh,
        b_hh if b_hh is not None else empty,
        hx,
        cx if cx is not None else empty,
        _MODES[mode],
        batch_sizes,
        reverse,
    )
    return out, hy, cy


class RNNBase(Module):
    """The shared machinery of :class:`RNN`, :class:`LSTM` and :class:`GRU`.

    Example:
        >>> import flambeau_core as fc
        >>> import flambeau_nn as nn
        >>> rnn = nn.GRU(4, 6, num_layers=2)
        >>> isinstance(rnn, nn.RNNBase), [tuple(w.shape) for w in rnn.all_weights[0]]
        (True, [(18, 4), (18, 6), (18,), (18,)])
    """

    def __init__(
        self,
        mode: str,
        input_size: int,
        hidden_size: int,
        num_layers: int = 1,
        bias: bool = True,
        batch_first: bool = False,
        dropout: float = 0.0,
        bidirectional: bool = False,
        proj_size: int = 0,
        device: Any = None,
        dtype: Any = None,
    ) -> None:
        super().__init__()
        cls = {"RNN_TANH": "RNN", "RNN_RELU": "RNN"}.get(mode, mode)
        _check_size("input_size", input_size, cls)
        _check_size("hidden_size", hidden_size, cls, 1)
        _check_size("num_layers", num_layers, cls, 1)
        if isinstance(dropout, bool) or not isinstance(dropout, (int, float)) or not 0 <= dropout <= 1:
            raise FlambeauError(
                f"[{cls}] dropout should be a number in range [0, 1] representing the probability of an element "
                f"being zeroed, got {dropout!r}"
            )
        if proj_size != 0:
            raise FlambeauError(f"[{cls}] proj_size is not supported (got {proj_size}): use proj_size=0")
        self.mode = mode
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.num_layers = num_layers
        self.bias = bias
        self.batch_first = batch_first
        self.dropout = float(dropout)
        self.bidirectional = bidirectional
        self.proj_size = proj_size
        dtype = dtype if dtype is not None else fc.float32
        gate_size = _GATES[mode] * hidden_size
        num_directions = 2 if bidirectional else 1
        self._flat_weights_names: list[str] = []
        for layer in range(num_layers):
            for direction in range(num_directions):
                layer_input = input_size if layer == 0 else hidden_size * num_directions
                suffix = "_reverse" if direction == 1 else ""
                names = [f"weight_ih_l{layer}{suffix}", f"weight_hh_l{layer}{suffix}"]
                shapes = [(gate_size, layer_input), (gate_size, hidden_size)]
                if bias:
                    names += [f"bias_ih_l{layer}{suffix}", f"bias_hh_l{layer}{suffix}"]
                    shapes += [(gate_size,), (gate_size,)]
                for name, shape in zip(names, shapes, strict=True):
                    setattr(self, name, Parameter(fc.empty(*shape, dtype=dtype)))
                self._flat_weights_names.extend(names)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Re-draws every weight and bias from ``U(-1/sqrt(hidden_size), 1/sqrt(hidden_size))``, in place.

        Example:
            >>> import flambeau_nn as nn
            >>> rnn = nn.LSTM(3, 4)
            >>> rnn.reset_parameters()
            >>> all(bool((p.abs() <= 0.5).all()) for p in rnn.parameters())
            True
        """
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0.0
        for weight in self.parameters():
            init.uniform_(weight, -stdv, stdv)

    def flatten_parameters(self) -> None:
        """Kept for PyTorch programs, which call it after moving a model (``model.rnn.flatten_parameters()``).

        PyTorch compacts the weights into one buffer for cuDNN and does nothing on the CPU; flambeau's
        recurrent kernels read each parameter where it is (packing per call where that pays, Note
        [Packed step GEMM] in core's src/cpu/rnn.cpp), so there is nothing to compact on any device.
        Returns None, as PyTorch's.

        Example:
            >>> import flambeau_nn as nn
            >>> rnn = nn.LSTM(3, 4)
            >>> rnn.flatten_parameters() is None
            True
        """
        return None

    @property
    def _flat_weights(self) -> list[Tensor]:
        return [getattr(self, n) for n in self._flat_weights_names]

    @property
    def all_weights(self) -> list[list[Tensor]]:
        per = 4 if self.bias else 2
        w = self._flat_weights
        return [w[i : i + per] for i in range(0, len(w), per)]

    def _name(self) -> str:
        return type(self).__name__

    def extra_repr(self) -> str:
        """``input_size``, ``hidden_size`` and each option that differs from its default, as shown inside
        ``repr(module)``.

        Example:
            >>> import flambeau_nn as nn
            >>> nn.GRU(10, 20, num_layers=2, batch_first=True).extra_repr()
            '10, 20, num_layers=2, batch_first=True'
        """
        s = f"{self.input_size}, {self.hidden_size}"
        if self.num_layers != 1:
            s += f", num_layers={self.num_layers}"
        if not self.bias:
            s += ", bias=False"
        if self.batch_first:
            s += ", batch_first=True"
        if self.dropout != 0:
            s += f", dropout={self.dropout}"
        if self.bidirectional:
            s += ", bidirectional=True"
        return s

    # ---- checks (PyTorch's messages, with the layer's name) ----

    def _check_hidden(self, h: Any, expected: tuple[int, ...], what: str, dtype: Any) -> None:
        name = self._name()
        if not is_tensor_like(h):
            raise TypeError(f"[{name}] {what} must be a Tensor, got {type(h).__name__}")
        if _shape(h) != expected:
            raise FlambeauError(f"{name}: expected {what} size {expected}, got {_shape(h)}")
        if h.dtype != dtype:
            raise TypeError(f"{name}: expected {what} of dtype {dtype} (the input's), got {h.dtype}")

    def forward(self, input: Any, hx: Any = None) -> Any:
        """Runs the layers over the sequence ``input`` ``(L, N, H_in)`` (``(N, L, H_in)`` when ``batch_first``, ``(L,
        H_in)`` unbatched, or a ``PackedSequence``) from the initial state ``hx`` (zeros when None).

        Returns ``(output, h_n)`` (``(output, (h_n, c_n))`` for an LSTM, whose ``hx`` is ``(h_0, c_0)``): ``output``
        ``(L, N, D*hidden_size)`` holds the last layer's state at every step (packed when the input is), ``h_n`` and
        ``c_n`` ``(D*num_layers, N, hidden_size)`` the final states, ``D = 2`` when ``bidirectional``.

        Example:
            >>> import flambeau_core as fc
            >>> import flambeau_nn as nn
            >>> lstm = nn.LSTM(10, 20, num_layers=2, bidirectional=True)
            >>> out, (h, c) = lstm(fc.randn(5, 3, 10))
            >>> out.shape, h.shape, c.shape
            (flambeau.Size([5, 3, 40]), flambeau.Size([4, 3, 20]), flambeau.Size([4, 3, 20]))
        """
        name = self._name()
        is_lstm = self.mode == "LSTM"
        D = 2 if self.bidirectional else 1
        L, H = self.num_layers, self.hidden_size
        packed = isinstance(input, PackedSequence)
        if packed:
            data = input.data
            if not is_tensor_like(data):
                raise TypeError(f"[{name}] PackedSequence.data must be a Tensor, got {type(data).__name__}")
            if data.dim() != 2:
                raise FlambeauError(f"{name}: packed input data must be 2-D (N, input_size), got shape {_shape(data)}")
            batch_sizes = [int(v) for v in input.batch_sizes.tolist()]
            batch = batch_sizes[0] if batch_sizes else 0
            x2d = data
            unbatched = False
        else:
            if not is_tensor_like(input):
                raise TypeError(f"[{name}] input must be a Tensor or a PackedSequence, got {type(input).__name__}")
            if input.dim() not in (2, 3):
                raise FlambeauError(f"{name}: Expected input to be 2D or 3D, got {input.dim()}D tensor instead")
            unbatched = input.dim() == 2
            x = input.unsqueeze(1) if unbatched else (input.transpose(0, 1) if self.batch_first else input)
            steps, batch = x.shape[0], x.shape[1]
            if steps == 0:  # PyTorch's error (RuntimeError), before any other check of the input
                raise FlambeauError(f"[{name}] Expected sequence length to be larger than 0 in RNN")
            batch_sizes = [batch] * steps
            x2d = x.reshape([steps * batch, x.shape[2]])
            data = x
        if not data.dtype.is_floating_point:
            raise TypeError(f"[{name}] expected a floating point input, got dtype {data.dtype}")
        w0 = self._flat_weights[0]
        if data.dtype != w0.dtype:
            raise TypeError(f"{name}: input dtype {data.dtype} does not match the weights' dtype {w0.dtype}")
        if data.shape[-1] != self.input_size:
            raise FlambeauError(
                f"{name}: input.size(-1) must be equal to input_size. Expected {self.input_size}, got {data.shape[-1]}"
            )
        # Initial states, in the sorted batch order of a packed input.
        expected = (D * L, H) if unbatched else (D * L, batch, H)
        if hx is None:
            h0 = fc.zeros(D * L, batch, H, dtype=data.dtype, device=data.device)
            c0 = fc.zeros(D * L, batch, H, dtype=data.dtype, device=data.device) if is_lstm else None
        else:
            if is_lstm:
                if not isinstance(hx, (tuple, list)) or len(hx) != 2:
                    raise TypeError(f"[{name}] hx must be a tuple (h_0, c_0) of two tensors, got {type(hx).__name__}")
                h0, c0 = hx
                self._check_hidden(h0, expected, "hidden[0]", data.dtype)
                self._check_hidden(c0, expected, "hidden[1]", data.dtype)
            else:
                h0, c0 = hx, None
                self._check_hidden(h0, expected, "hidden", data.dtype)
            if unbatched:
                h0 = h0.unsqueeze(1)
                c0 = c0.unsqueeze(1) if c0 is not None else None
            if packed and input.sorted_indices is not None:
                h0 = h0[:, input.sorted_indices]
                c0 = c0[:, input.sorted_indices] if c0 is not None else None
        weights = self._flat_weights
        per = 4 if self.bias else 2
        layer_input = x2d
        h_n: list[Tensor] = []
        c_n: list[Tensor] = []
        for layer in range(L):
            if layer > 0 and self.dropout > 0 and self.training:
                layer_input = F.dropout(layer_input, self.dropout, True)
            outs = []
            for direction in range(D):
                k = layer * D + direction
                w = weights[k * per : (k + 1) * per]
                b_ih, b_hh = (w[2], w[3]) if self.bias else (None, None)
                out, hy, cy = _layer(
                    self.mode,
                    layer_input,
                    w[0],
                    w[1],
                    b_ih,
                    b_hh,
                    h0[k],
                    c0[k] if c0 is not None else None,
                    batch_sizes,
                    direction == 1,
                )
                outs.append(out)
                h_n.append(hy)
                c_n.append(cy)
            layer_input = outs[0] if D == 1 else fc.cat(outs, 1)
        hn = fc.stack(h_n, 0)
        cn = fc.stack(c_n, 0) if is_lstm else None
        if packed:
            if input.unsorted_indices is not None:
                hn = hn[:, input.unsorted_indices]
                cn = cn[:, input.unsorted_indices] if cn is not None else None
            output: Any = PackedSequence(layer_input, input.batch_sizes, input.sorted_indices, input.unsorted_indices)
        else:
            output = layer_input.reshape([len(batch_sizes), batch, D * H])
            if unbatched:
                output = output.squeeze(1)
                hn = hn.squeeze(1)
                cn = cn.squeeze(1) if cn is not None else None
            elif self.batch_first:
                output = output.transpose(0, 1)
        return (output, (hn, cn)) if is_lstm else (output, hn)


class RNN(RNNBase):
    r"""Elman RNN: ``h_t = act(x_t W_ih^T + b_ih + h_{t-1} W_hh^T + b_hh)``, act ``tanh`` or ``relu``.

    ``RNN(input_size, hidden_size, num_layers=1, nonlinearity='tanh', bias=True,
    batch_first=False, dropout=0.0, bidirectional=False)``; ``forward(input, hx=None)``
    returns ``(output, h_n)``.

    Example:
        >>> import flambeau_core as fc
        >>> import flambeau_nn as nn
        >>> rnn = nn.RNN(10, 20, 2, nonlinearity="relu")
        >>> out, h_n = rnn(fc.randn(5, 3, 10), fc.zeros(2, 3, 20))
        >>> out.shape, h_n.shape
        (flambeau.Size([5, 3, 20]), flambeau.Size([2, 3, 20]))
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        nonlinearity = kwargs.pop("nonlinearity", "tanh")
        if len(args) > 3:  # RNN(input_size, hidden_size, num_layers, nonlinearity, ...)
            nonlinearity = args[3]
            args = args[:3] + args[4:]
        if nonlinearity not in ("tanh", "relu"):
            raise FlambeauError(f"[RNN] Unknown nonlinearity '{nonlinearity}'. Select from 'tanh' or 'relu'.")
        self.nonlinearity = nonlinearity
        super().__init__("RNN_TANH" if nonlinearity == "tanh" else "RNN_RELU", *args, **kwargs)


class LSTM(RNNBase):
    r"""Long short-term memory, gates ``i f g o`` in PyTorch's order.

    ``forward(input, (h_0, c_0)=None)`` returns ``(output, (h_n, c_n))``.

    Example:
        >>> import flambeau_core as fc
        >>> import flambeau_nn as nn
        >>> lstm = nn.LSTM(10, 20, batch_first=True)
        >>> out, (h_n, c_n) = lstm(fc.randn(3, 5, 10))
        >>> out.shape, h_n.shape, bool((out[:, -1] == h_n[0]).all())
        (flambeau.Size([3, 5, 20]), flambeau.Size([1, 3, 20]), True)
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__("LSTM", *args, **kwargs)


class GRU(RNNBase):
    r"""Gated recurrent unit, gates ``r z n`` in PyTorch's order
    (``n = tanh(W_in x + b_in + r * (W_hn h + b_hn))``, ``h' = (1 - z) * n + z * h``).

    ``forward(input, h_0=None)`` returns ``(output, h_n)``.

    Example:
        >>> import flambeau_core as fc
        >>> import flambeau_nn as nn
        >>> out, h_n = nn.GRU(10, 20, bidirectional=True)(fc.randn(5, 10))
        >>> out.shape, h_n.shape
        (flambeau.Size([5, 40]), flambeau.Size([2, 20]))
    """

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__("GRU", *args, **kwargs)


class RNNCellBase(Module):
    """One step of a recurrent layer: parameters ``weight_ih``, ``weight_hh``, ``bias_ih``, ``bias_hh``.

    Example:
        >>> import flambeau_nn as nn
        >>> cell = nn.LSTMCell(3, 4)
        >>> isinstance(cell, nn.RNNCellBase), tuple(cell.weight_ih.shape), tuple(cell.weight_hh.shape)
        (True, (16, 3), (16, 4))
    """

    def __init__(
        self, mode: str, input_size: int, hidden_size: int, bias: bool, device: Any = None, dtype: Any = None
    ) -> None:
        super().__init__()
        cls = type(self).__name__
        _check_size("input_size", input_size, cls)
        _check_size("hidden_size", hidden_size, cls, 1)
        self.mode = mode
        self.input_size = input_size
        self.hidden_size = hidden_size
        self.bias = bias
        dtype = dtype if dtype is not None else fc.float32
        gate_size = _GATES[mode] * hidden_size
        self.weight_ih = Parameter(fc.empty(gate_size, input_size, dtype=dtype))
        self.weight_hh = Parameter(fc.empty(gate_size, hidden_size, dtype=dtype))
        if bias:
            self.bias_ih = Parameter(fc.empty(gate_size, dtype=dtype))
            self.bias_hh = Parameter(fc.empty(gate_size, dtype=dtype))
        else:
            self.register_parameter("bias_ih", None)
            self.register_parameter("bias_hh", None)
        self.reset_parameters()

    def reset_parameters(self) -> None:
        """Re-draws ``weight_ih``, ``weight_hh`` and the biases from ``U(-1/sqrt(hidden_size), 1/sqrt(hidden_size))``,
        in place.

        Example:
            >>> import flambeau_nn as nn
            >>> cell = nn.GRUCell(3, 4)
            >>> cell.reset_parameters()
            >>> all(bool((p.abs() <= 0.5).all()) for p in cell.parameters())
            True
        """
        stdv = 1.0 / math.sqrt(self.hidden_size) if self.hidden_size > 0 else 0.0
        for weight in self.parameters():
            init.uniform_(weight, -stdv, stdv)

    def extra_repr(self) -> str:
        """``input_size`` and ``hidden_size``, then ``bias=False`` and the ReLU nonlinearity when set, as shown inside
        ``repr(module)``.

        Note: flambeau quotes the nonlinearity (``nonlinearity='relu'``); PyTorch 2.13 prints ``nonlinearity=relu``.

        Example:
            >>> import flambeau_nn as nn
            >>> nn.RNNCell(3, 4, bias=False).extra_repr()
            '3, 4, bias=False'
        """
        s = f"{self.input_size}, {self.hidden_size}"
        if not self.bias:
            s += ", bias=False"
        if self.mode == "RNN_RELU":
            s += ", nonlinearity='relu'"
        return s

    def _step(self, input: Any, hx: Any) -> tuple[Tensor, Tensor, bool]:
        name = type(self).__name__
        if not is_tensor_like(input):
            raise TypeError(f"[{name}] input must be a Tensor, got {type(input).__name__}")
        if input.dim() not in (1, 2):
            raise FlambeauError(f"{name}: Expected input to be 1D or 2D, got {input.dim()}D instead")
        if not input.dtype.is_floating_point:
            raise TypeError(f"[{name}] expected a floating point input, got dtype {input.dtype}")
        if input.dtype != self.weight_ih.dtype:
            raise TypeError(
                f"{name}: input dtype {input.dtype} does not match the weights' dtype {self.weight_ih.dtype}"
            )
        if input.shape[-1] != self.input_size:
            raise FlambeauError(
                f"{name}: input has inconsistent input_size: got {input.shape[-1]} expected {self.input_size}"
            )
        unbatched = input.dim() == 1
        x = input.unsqueeze(0) if unbatched else input
        batch = x.shape[0]
        expected = (self.hidden_size,) if unbatched else (batch, self.hidden_size)
        states = []
        is_lstm = self.mode == "LSTM"
        if hx is None:
            states = [fc.zeros(batch, self.hidden_size, dtype=x.dtype, device=x.device)] * (2 if is_lstm else 1)
        else:
            given = list(hx) if is_lstm else [hx]
            if is_lstm and len(given) != 2:
                raise TypeError(f"[{name}] hx must be a tuple (h_0, c_0), got {len(given)} tensors")
            for i, h in enumerate(given):
                what = f"hidden[{i}]" if is_lstm else "hidden"
                if not is_tensor_like(h):
                    raise TypeError(f"[{name}] {what} must be a Tensor, got {type(h).__name__}")
                if _shape(h) != expected:
                    raise FlambeauError(f"{name}: expected {what} size {expected}, got {_shape(h)}")
                if h.dtype != x.dtype:
                    raise TypeError(f"{name}: expected {what} of dtype {x.dtype} (the input's), got {h.dtype}")
                states.append(h.unsqueeze(0) if unbatched else h)
        _, hy, cy = _layer(
            self.mode,
            x,
            self.weight_ih,
            self.weight_hh,
            self.bias_ih,
            self.bias_hh,
            states[0],
            states[1] if is_lstm else None,
            [batch],
            False,
        )
        if unbatched:
            hy = hy.squeeze(0)
            cy = cy.squeeze(0) if is_lstm else cy
        return hy, cy, is_lstm


class RNNCell(RNNCellBase):
    """``h' = act(x W_ih^T + b_ih + h W_hh^T + b_hh)``; ``forward(input, hx=None) -> h'``.

    Example:
        >>> import flambeau_core as fc
        >>> import flambeau_nn as nn
        >>> cell = nn.RNNCell(10, 20)
        >>> h = fc.zeros(3, 20)
        >>> for x in fc.randn(6, 3, 10):
        ...     h = cell(x, h)
        >>> h.shape
        flambeau.Size([3, 20])
    """

    def __init__(
        self,
        input_size: int,
        hidden_size: int,
        bias: bool = True,
        nonlinearity: str = "tanh",
        device: Any = None,
        dtype: Any = None,
    ) -> None:
        if nonlinearity not in ("tanh", "relu"):
            raise FlambeauError(f"[RNNCell] Unknown nonlinearity: {nonlinearity}")
        self.nonlinearity = nonlinearity
        super().__init__(
            "RNN_TANH" if nonlinearity == "tanh" else "RNN_RELU", input_size, hidden_size, bias, device, dtype
        )

    def forward(self, input: Tensor, hx: Tensor | None = None) -> Tensor:
        """One step ``h' = act(input W_ih^T + b_ih + hx W_hh^T + b_hh)`` for ``input`` ``(N, input_size)`` or
        ``(input_size)`` and ``hx`` ``(N, hidden_size)`` (zeros when None), giving ``h'`` ``(N, hidden_size)``.

        Example:
            >>> import flambeau_core as fc
            >>> import flambeau_nn as nn
            >>> nn.RNNCell(10, 20)(fc.randn(3, 10)).shape
            flambeau.Size([3, 20])
        """
        return self._step(input, hx)[0]


class LSTMCell(RNNCellBase):
    """One LSTM step; ``forward(input, (h, c)=None) -> (h', c')``.

    Example:
        >>> import flambeau_core as fc
        >>> import flambeau_nn as nn
        >>> cell = nn.LSTMCell(10, 20)
        >>> h, c = cell(fc.randn(3, 10))
        >>> h, c = cell(fc.randn(3, 10), (h, c))
        >>> h.shape, c.shape
        (flambeau.Size([3, 20]), flambeau.Size([3, 20]))
    """

    def __init__(
        self, input_size: int, hidden_size: int, bias: bool = True, device: Any = None, dtype: Any = None
    ) -> None:
        super().__init__("LSTM", input_size, hidden_size, bias, device, dtype)

    def forward(self, input: Tensor, hx: tuple[Tensor, Tensor] | None = None) -> tuple[Tensor, Tensor]:
        """One LSTM step for ``input`` ``(N, input_size)`` or ``(input_size)`` from ``hx = (h, c)`` (each ``(N,
        hidden_size)``; zeros when None), giving ``(h', c')``, ``c' = f * c + i * g`` and ``h' = o * tanh(c')``.

        Example:
            >>> import flambeau_core as fc
            >>> import flambeau_nn as nn
            >>> h, c = nn.LSTMCell(10, 20)(fc.randn(10))
            >>> h.shape, c.shape
            (flambeau.Size([20]), flambeau.Size([20]))
        """
        h, c, _ = self._step(input, hx)
        return h, c


class GRUCell(RNNCellBase):
    """One GRU step; ``forward(input, hx=None) -> h'``.

    Example:
        >>> import flambeau_core as fc
        >>> import flambeau_nn as nn
        >>> cell = nn.GRUCell(10, 20)
        >>> h = cell(fc.randn(3, 10))
        >>> cell(fc.randn(3, 10), h).shape
        flambeau.Size([3, 20])
    """

    def __init__(
        self, input_size: int, hidden_size: int, bias: bool = True, device: Any = None, dtype: Any = None
    ) -> None:
        super().__init__("GRU", input_size, hidden_size, bias, device, dtype)

    def forward(self, input: Tensor, hx: Tensor | None = None) -> Tensor:
        """One GRU step for ``input`` ``(N, input_size)`` or ``(input_size)`` from ``hx`` ``(N, hidden_size)`` (zeros
        when None), giving ``h' = (1 - z) * n + z * hx``.

        Example:
            >>> import flambeau_core as fc
            >>> import flambeau_nn as nn
            >>> nn.GRUCell(10, 20)(fc.randn(3, 10)).shape
            flambeau.Size([3, 20])
        """
        return self._step(input, hx)[0]
