"""Top-level torch names and Tensor methods a PyTorch program calls that no flambeau package spells itself:
the recurrent functions over given weights (``torch.lstm``, ``gru``, ``rnn_tanh``, ``rnn_relu``: flambeau-nn's
recurrent layer; the single steps ``lstm_cell``, ``gru_cell``, ``rnn_tanh_cell``, ``rnn_relu_cell``),
``norm_except_dim`` (weight normalization's norm), ``orgqr`` (an alias, as torch's), the build queries
(``compiled_with_cxx11_abi``, ``is_vulkan_available``, ``is_distributed``), ``from_file``,
``get_autocast_gpu_dtype`` (deprecated, as torch's), ``segment_reduce``, ``affine_grid_generator``, and the
functions torch removed (``solve``, ``eig``, ``lstsq``, ``symeig``, ``Tensor.reinforce``), which raise torch's
RuntimeError with its migration advice.

Example:
    >>> import flambeau as fb
    >>> w = fb.full((4, 3), 2.0)
    >>> fb.norm_except_dim(w, 1, 0).flatten().tolist()
    [6.0, 6.0, 6.0, 6.0]
"""

from __future__ import annotations

import warnings
from collections.abc import Callable
from typing import Any

import flambeau_core as fc
import flambeau_nn.functional as _nn_functional
import flambeau_nn.modules.rnn as _rnn
from flambeau_core import FlambeauError, Tensor

__all__ = [
    "affine_grid_generator",
    "compiled_with_cxx11_abi",
    "eig",
    "from_file",
    "get_autocast_gpu_dtype",
    "gru",
    "gru_cell",
    "is_distributed",
    "is_vulkan_available",
    "lstm",
    "lstm_cell",
    "lstsq",
    "norm_except_dim",
    "orgqr",
    "rnn_relu",
    "rnn_relu_cell",
    "rnn_tanh",
    "rnn_tanh_cell",
    "segment_reduce",
    "solve",
    "symeig",
]

# ---- recurrent cells ----


def _cell(
    mode: str,
    input: Tensor,
    states: list[Tensor],
    w_ih: Tensor,
    w_hh: Tensor,
    b_ih: Tensor | None,
    b_hh: Tensor | None,
) -> tuple[Tensor, Tensor]:
    """One step of flambeau-nn's recurrent layer, with torch's checks (and words) of the cell functions."""
    name = f"{mode.lower()}_cell"
    for what, t in (("input", input), ("w_ih", w_ih), ("w_hh", w_hh), *(("hx", h) for h in states)):
        if not isinstance(t, Tensor):
            raise TypeError(f"[{name}] {what} must be a Tensor, got {type(t).__name__}")
    if input.dim() != 2 or w_ih.dim() != 2 or w_hh.dim() != 2:
        raise FlambeauError(
            f"[{name}] expects a 2-D input (batch, input_size) and 2-D weights, got input {tuple(input.shape)}, "
            f"w_ih {tuple(w_ih.shape)}, w_hh {tuple(w_hh.shape)}"
        )
    if input.shape[1] != w_ih.shape[1]:
        raise FlambeauError(
            f"[{name}] input has inconsistent input_size: got {input.shape[1]} expected {w_ih.shape[1]}"
        )
    hidden = w_hh.shape[1]
    if w_ih.shape[0] != _rnn._GATES[mode] * hidden or w_hh.shape[0] != w_ih.shape[0]:
        raise FlambeauError(
            f"[{name}] weights of shapes w_ih {tuple(w_ih.shape)} and w_hh {tuple(w_hh.shape)} do not make "
            f"{_rnn._GATES[mode]} gates of hidden size {hidden}"
        )
    for i, h in enumerate(states):
        if tuple(h.shape) != (input.shape[0], hidden):
            got = h.shape[1] if h.dim() == 2 else tuple(h.shape)
            raise FlambeauError(f"[{name}] hidden{i} has inconsistent hidden_size: got {got}, expected {hidden}")
    _, hy, cy = _rnn._layer(
        mode, input, w_ih, w_hh, b_ih, b_hh, states[0], states[1] if len(states) > 1 else None, [input.shape[0]], False
    )
    return hy, cy


def lstm_cell(
    input: Tensor,
    hx: Any,
    w_ih: Tensor,
    w_hh: Tensor,
    b_ih: Tensor | None = None,
    b_hh: Tensor | None = None,
) -> tuple[Tensor, Tensor]:
    """lstm_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None) -> (h', c')

    One LSTM step (what ``nn.LSTMCell`` computes) for ``input`` ``(N, input_size)`` from ``hx = (h, c)``,
    each ``(N, hidden_size)``; ``w_ih`` is ``(4 * hidden_size, input_size)`` and ``w_hh`` ``(4 * hidden_size,
    hidden_size)`` (gates i, f, g, o).

    Example:
        >>> import flambeau as fb
        >>> x, h, c = fb.randn(3, 4), fb.zeros(3, 5), fb.zeros(3, 5)
        >>> hy, cy = fb.lstm_cell(x, (h, c), fb.randn(20, 4), fb.randn(20, 5))
        >>> tuple(hy.shape), tuple(cy.shape)
        ((3, 5), (3, 5))
    """
    states = list(hx) if isinstance(hx, (tuple, list)) else [hx]
    if len(states) != 2:
        raise FlambeauError("[lstm_cell] lstm_cell expects two hidden states")
    return _cell("LSTM", input, states, w_ih, w_hh, b_ih, b_hh)


def gru_cell(
    input: Tensor, hx: Tensor, w_ih: Tensor, w_hh: Tensor, b_ih: Tensor | None = None, b_hh: Tensor | None = None
) -> Tensor:
    """gru_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None) -> Tensor

    One GRU step (what ``nn.GRUCell`` computes); ``w_ih`` is ``(3 * hidden_size, input_size)`` (gates r, z, n).

    Example:
        >>> import flambeau as fb
        >>> tuple(fb.gru_cell(fb.randn(3, 4), fb.zeros(3, 5), fb.randn(15, 4), fb.randn(15, 5)).shape)
        (3, 5)
    """
    return _cell("GRU", input, [hx], w_ih, w_hh, b_ih, b_hh)[0]


def rnn_tanh_cell(
    input: Tensor, hx: Tensor, w_ih: Tensor, w_hh: Tensor, b_ih: Tensor | None = None, b_hh: Tensor | None = None
) -> Tensor:
    """rnn_tanh_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None) -> Tensor

    One Elman step ``tanh(input w_ih^T + b_ih + hx w_hh^T + b_hh)`` (``nn.RNNCell``).

    Example:
        >>> import flambeau as fb
        >>> tuple(fb.rnn_tanh_cell(fb.randn(3, 4), fb.zeros(3, 5), fb.randn(5, 4), fb.randn(5, 5)).shape)
        (3, 5)
    """
    return _cell("RNN_TANH", input, [hx], w_ih, w_hh, b_ih, b_hh)[0]


def rnn_relu_cell(
    input: Tensor, hx: Tensor, w_ih: Tensor, w_hh: Tensor, b_ih: Tensor | None = None, b_hh: Tensor | None = None
) -> Tensor:
    """rnn_relu_cell(input, hx, w_ih, w_hh, b_ih=None, b_hh=None) -> Tensor

    One Elman step with ReLU, ``relu(input w_ih^T + b_ih + hx w_hh^T + b_hh)``.

    Example:
        >>> import flambeau as fb
        >>> fb.rnn_relu_cell(-fb.ones(1, 2), fb.zeros(1, 2), fb.ones(2, 2), fb.ones(2, 2)).tolist()
        [[0.0, 0.0]]
    """
    return _cell("RNN_RELU", input, [hx], w_ih, w_hh, b_ih, b_hh)[0]


# ---- whole recurrent layers over given weights ----


class _GivenWeights(_rnn.RNNBase):
    """flambeau-nn's recurrent layer over weights the caller gives (torch.lstm's ``params``: w_ih, w_hh[, b_ih,
    b_hh] per layer and direction) instead of parameters of its own; its forward is the module's."""

    def __init__(self, mode: str, params: Any, has_biases: bool, layers: int, dropout: float, train: bool) -> None:
        _rnn.Module.__init__(self)
        self.mode, self.bias, self.num_layers, self.dropout, self.training = mode, has_biases, layers, dropout, train
        self._given = list(params)

    def setup(self, bidirectional: bool, batch_first: bool) -> None:
        per, directions = (4 if self.bias else 2), (2 if bidirectional else 1)
        expected = per * directions * self.num_layers
        if len(self._given) != expected or not all(isinstance(w, Tensor) for w in self._given):
            raise FlambeauError(
                f"[{self._name()}] expected {expected} weight tensors (w_ih, w_hh{', b_ih, b_hh' if self.bias else ''}"
                f" for each of {self.num_layers} layers and {directions} directions), got {len(self._given)}"
            )
        self.bidirectional, self.batch_first, self.proj_size = bidirectional, batch_first, 0
        self.input_size, self.hidden_size = self._given[0].shape[1], self._given[1].shape[1]

    @property
    def _flat_weights(self) -> list[Tensor]:
        return self._given

    def _name(self) -> str:
        return self.mode.lower()


def _run_layers(mode: str, input: Tensor, args: tuple) -> Any:
    """torch.lstm / gru / rnn_tanh / rnn_relu. Two forms of 9 arguments: padded (input, hx, params, has_biases,
    num_layers, dropout, train, bidirectional, batch_first), or packed (data, batch_sizes, hx, params,
    has_biases, num_layers, dropout, train, bidirectional), told apart as torch does by the argument types
    (params, a list, comes one place later). Returns (output, h_n[, c_n]); a packed output is its data."""
    if len(args) != 8:
        raise TypeError(f"{mode.lower()}() takes 9 arguments, got {len(args) + 1}")
    packed = isinstance(args[2], (list, tuple))
    if packed:
        batch_sizes, hx, params, has_biases, layers, dropout, train, bidirectional = args
        x: Any = _rnn.PackedSequence(input, batch_sizes, None, None)
        batch_first = False
    else:
        hx, params, has_biases, layers, dropout, train, bidirectional, batch_first = args
        x = input
    rnn = _GivenWeights(mode, params, bool(has_biases), int(layers), float(dropout), bool(train))
    rnn.setup(bool(bidirectional), bool(batch_first))
    is_lstm = mode == "LSTM"
    output, state = rnn(x, tuple(hx) if is_lstm else hx)
    output = output.data if packed else output
    return (output, *state) if is_lstm else (output, state)


def lstm(input: Tensor, *args: Any) -> tuple[Tensor, Tensor, Tensor]:
    """lstm(input, hx, params, has_biases, num_layers, dropout, train, bidirectional, batch_first)
    lstm(data, batch_sizes, hx, params, has_biases, num_layers, dropout, train, bidirectional)

    A whole (multi-layer, maybe bidirectional) LSTM over given weights, what ``nn.LSTM`` runs: ``hx`` is
    ``[h_0, c_0]``, ``params`` the flat list ``w_ih, w_hh[, b_ih, b_hh]`` per layer and direction; returns
    ``(output, h_n, c_n)`` (the packed form takes and gives a PackedSequence's data and batch sizes).

    Example:
        >>> import flambeau as fb
        >>> h = [fb.zeros(1, 3, 6), fb.zeros(1, 3, 6)]
        >>> w = [fb.randn(24, 4), fb.randn(24, 6)]
        >>> out, hn, cn = fb.lstm(fb.randn(5, 3, 4), h, w, False, 1, 0.0, False, False, False)
        >>> tuple(out.shape), tuple(hn.shape)
        ((5, 3, 6), (1, 3, 6))
    """
    return _run_layers("LSTM", input, args)


def gru(input: Tensor, *args: Any) -> tuple[Tensor, Tensor]:
    """gru(input, hx, params, has_biases, num_layers, dropout, train, bidirectional, batch_first)
    gru(data, batch_sizes, hx, params, has_biases, num_layers, dropout, train, bidirectional)

    A whole GRU over given weights (``nn.GRU``'s computation); returns ``(output, h_n)``.

    Example:
        >>> import flambeau as fb
        >>> w = [fb.randn(18, 4), fb.randn(18, 6)]
        >>> out, hn = fb.gru(fb.randn(5, 3, 4), fb.zeros(1, 3, 6), w, False, 1, 0.0, False, False, False)
        >>> tuple(out.shape), tuple(hn.shape)
        ((5, 3, 6), (1, 3, 6))
    """
    return _run_layers("GRU", input, args)


def rnn_tanh(input: Tensor, *args: Any) -> tuple[Tensor, Tensor]:
    """rnn_tanh(input, hx, params, has_biases, num_layers, dropout, train, bidirectional, batch_first)
    rnn_tanh(data, batch_sizes, hx, params, has_biases, num_layers, dropout, train, bidirectional)

    A whole Elman RNN with tanh over given weights (``nn.RNN``'s computation); returns ``(output, h_n)``.

    Example:
        >>> import flambeau as fb
        >>> w = [fb.randn(6, 4), fb.randn(6, 6)]
        >>> out, hn = fb.rnn_tanh(fb.randn(5, 3, 4), fb.zeros(1, 3, 6), w, False, 1, 0.0, False, False, False)
        >>> tuple(out.shape)
        (5, 3, 6)
    """
    return _run_layers("RNN_TANH", input, args)


def rnn_relu(input: Tensor, *args: Any) -> tuple[Tensor, Tensor]:
    """rnn_relu(input, hx, params, has_biases, num_layers, dropout, train, bidirectional, batch_first)
    rnn_relu(data, batch_sizes, hx, params, has_biases, num_layers, dropout, train, bidirectional)

    A whole Elman RNN with ReLU over given weights (``nn.RNN(nonlinearity='relu')``); returns ``(output, h_n)``.

    Example:
        >>> import flambeau as fb
        >>> w = [fb.randn(6, 4), fb.randn(6, 6)]
        >>> out, hn = fb.rnn_relu(fb.randn(5, 3, 4), fb.zeros(1, 3, 6), w, False, 1, 0.0, False, False, False)
        >>> bool((out >= 0).all())
        True
    """
    return _run_layers("RNN_RELU", input, args)


def affine_grid_generator(theta: Tensor, size: Any, align_corners: bool) -> Tensor:
    """affine_grid_generator(theta, size, align_corners) -> Tensor

    ``nn.functional.affine_grid`` with ``align_corners`` required, as torch's top-level form.

    Example:
        >>> import flambeau as fb
        >>> identity = fb.tensor([[[1.0, 0.0, 0.0], [0.0, 1.0, 0.0]]])
        >>> fb.affine_grid_generator(identity, [1, 1, 2, 2], True).tolist()[0][0]
        [[-1.0, -1.0], [1.0, -1.0]]
    """
    if len(size) not in (4, 5):
        raise FlambeauError("AffineGridGenerator needs 4d (spatial) or 5d (volumetric) inputs.")
    return _nn_functional.affine_grid(theta, size, align_corners=align_corners)


# ---- norms and aliases ----


def norm_except_dim(v: Tensor, pow: int = 2, dim: int = 0) -> Tensor:
    """norm_except_dim(v, pow=2, dim=0) -> Tensor

    The ``pow``-norm (an integer order) of ``v`` over every dim but ``dim``, kept as size-1 dims (the norm of weight
    normalization); ``dim=-1`` is the norm of the whole tensor, a 0-dim tensor (torch's meaning, not the last
    dim).

    Example:
        >>> import flambeau as fb
        >>> v = fb.ones(2, 3, 4)
        >>> tuple(fb.norm_except_dim(v, 2, 1).shape), fb.norm_except_dim(v, 1, -1).item()
        ((1, 3, 1), 24.0)
    """
    if not isinstance(pow, int):  # torch's signature takes an integer norm order only
        raise TypeError(f"norm_except_dim(): argument 'pow' (position 2) must be int, not {type(pow).__name__}")
    if dim == -1:
        return v.norm(pow)
    if not -v.dim() <= dim < v.dim():
        raise IndexError(
            f"[norm_except_dim] Dimension out of range (expected to be in range of [{-v.dim()}, {v.dim() - 1}], but "
            f"got {dim})"
        )
    dim %= v.dim()
    return v.norm(pow, dim=[d for d in range(v.dim()) if d != dim], keepdim=True)


# reduce -> (scatter_reduce's name, the value an empty segment gets without `initial`)
_SEGMENT_REDUCTIONS = {
    "sum": ("sum", 0.0),
    "prod": ("prod", 1.0),
    "mean": ("mean", float("nan")),
    "max": ("amax", float("-inf")),
    "amax": ("amax", float("-inf")),
    "min": ("amin", float("inf")),
    "amin": ("amin", float("inf")),
}


def segment_reduce(
    data: Tensor,
    reduce: str,
    *,
    lengths: Tensor | None = None,
    indices: Tensor | None = None,
    offsets: Tensor | None = None,
    axis: int = 0,
    unsafe: bool = False,
    initial: float | None = None,
) -> Tensor:
    """segment_reduce(data, reduce, *, lengths=None, indices=None, offsets=None, axis=0, unsafe=False,
    initial=None) -> Tensor

    Reduces consecutive segments of ``data`` along ``axis`` (the last dim of ``lengths``, whose leading dims
    are data's leading dims): segment sizes come from ``lengths`` or ``offsets``; ``reduce`` is sum, prod,
    mean, max/amax or min/amin. An empty segment gives ``initial`` if given, else 0, 1, nan, -inf, inf;
    with ``initial`` every segment starts from it (a mean is ``(initial + sum) / length``, as torch's). Built on
    scatter_reduce, so it is differentiable (ties of max and min share the gradient, as torch's).

    Example:
        >>> import flambeau as fb
        >>> data = fb.tensor([1.0, 2.0, 3.0, 4.0, 5.0, 6.0])
        >>> fb.segment_reduce(data, "sum", lengths=fb.tensor([2, 0, 3, 1])).tolist()
        [3.0, 0.0, 12.0, 6.0]
        >>> fb.segment_reduce(data, "max", offsets=fb.tensor([0, 2, 2, 5, 6])).tolist()
        [2.0, -inf, 5.0, 6.0]
    """
    if reduce not in _SEGMENT_REDUCTIONS:
        raise FlambeauError(f"reduce argument must be either sum, prod, mean, amax or amin, got {reduce}")
    if indices is not None:
        raise FlambeauError("segment_reduce(): indices based reduction is not supported yet.")
    if lengths is None:
        if offsets is None:
            raise FlambeauError("segment_reduce(): Either lengths or offsets must be defined.")
        lengths = offsets[..., 1:] - offsets[..., :-1]
    if axis < 0:
        axis += data.dim()
    if axis != lengths.dim() - 1:
        raise FlambeauError(f"segment_reduce(): Expected axis to be the last dimension of lengths but got {axis}.")
    if tuple(lengths.shape[:-1]) != tuple(data.shape[:axis]):
        raise FlambeauError(
            f"segment_reduce(): lengths of shape {tuple(lengths.shape)} do not match data of shape "
            f"{tuple(data.shape)} before axis {axis}"
        )
    if not unsafe and (bool((lengths < 0).any()) or bool((lengths.sum(-1) != data.shape[axis]).any())):
        raise FlambeauError(
            "segment_reduce(): Expected all rows of lengths along axis to sum to data.size(lengths.dim()-1) when "
            "!unsafe."
        )
    how, empty = _SEGMENT_REDUCTIONS[reduce]
    rows, segments, rest = lengths[..., 0].numel(), lengths.shape[-1], tuple(data.shape[axis + 1 :])
    # Every row's segments numbered apart (row r's segment g is r * segments + g), so one scatter does all rows.
    ids = fc.repeat_interleave(fc.arange(rows * segments, device=data.device), lengths.reshape(-1))
    flat = data.reshape(rows * data.shape[axis], *rest)
    index = ids.reshape(-1, *([1] * len(rest))).expand(flat.shape)
    # A mean is torch's (initial + sum) / length, an empty segment's initial (or 0 / 0 = nan without one).
    start_value = (0.0 if initial is None else initial) if how == "mean" else (empty if initial is None else initial)
    start = fc.full((rows * segments, *rest), start_value, dtype=data.dtype, device=data.device)
    out = start.scatter_reduce(0, index, flat, "sum" if how == "mean" else how, include_self=True)
    if how == "mean":
        count = lengths.reshape(-1).to(data.dtype)
        count = count if initial is None else count.clamp_min(1)
        out = out / count.reshape(-1, *([1] * len(rest)))
    return out.reshape(*lengths.shape, *rest)


def orgqr(input: Tensor, tau: Tensor) -> Tensor:
    """orgqr(input, tau) -> Tensor

    Alias for :func:`flambeau.linalg.householder_product`.

    Example:
        >>> import flambeau as fb
        >>> fb.orgqr(fb.eye(2), fb.zeros(2)).tolist()
        [[1.0, 0.0], [0.0, 1.0]]
    """
    return fc.linalg.householder_product(input, tau)


def from_file(
    filename: str,
    shared: bool | None = None,
    size: int = 0,
    *,
    dtype: Any = None,
    layout: Any = None,
    device: Any = None,
    pin_memory: bool = False,
) -> Tensor:
    """from_file(filename, shared=None, size=0, *, dtype=None, layout=None, device=None, pin_memory=False) -> Tensor

    A 1-D CPU tensor of ``size`` elements over a memory-mapped file. With ``shared=True`` writes go to the
    file (created, or grown, to ``size`` elements if shorter); otherwise the mapping is private (copy on
    write) and the file must hold ``size`` elements already. ``dtype`` defaults to the default float dtype.

    Example:
        >>> import flambeau as fb, os, tempfile
        >>> path = os.path.join(tempfile.mkdtemp(), "t.bin")
        >>> t = fb.from_file(path, shared=True, size=3)
        >>> t += 2.0
        >>> fb.from_file(path, size=3).tolist(), os.path.getsize(path)
        ([2.0, 2.0, 2.0], 12)
    """
    import os
    import sys

    import numpy as np
    from flambeau_interop import from_numpy

    dtype = fc.get_default_dtype() if dtype is None else dtype
    if (
        (device is not None and fc.device(device).type != "cpu")
        or pin_memory
        or layout not in (None, fc.sparse.strided)
    ):
        raise FlambeauError("[from_file] makes strided tensors in cpu memory only (no device, layout or pin_memory)")
    if isinstance(size, bool) or not isinstance(size, int) or size < 0:
        raise FlambeauError(f"[from_file] size must be a non-negative int, got {size!r}")
    nbytes = size * dtype.itemsize
    if nbytes == 0:
        return fc.empty(0, dtype=dtype)
    if nbytes > sys.maxsize:  # no file or mapping holds it (os.truncate would raise a bare OverflowError)
        raise FlambeauError(
            f"[from_file] size {size} of {dtype} is {nbytes} bytes, more than a file can hold ({sys.maxsize})"
        )
    if shared:
        with open(filename, "ab"):  # created if missing
            pass
        if os.path.getsize(filename) < nbytes:
            os.truncate(filename, nbytes)
    else:
        try:
            have = os.path.getsize(filename)
        except OSError as e:
            raise FlambeauError(
                f"unable to open file <{filename}> in read-only mode: {e.strerror} ({e.errno})"
            ) from None
        if have < nbytes:
            raise FlambeauError(f"file <{filename}> size <{have}> is smaller than the required mapping size <{nbytes}>")
    mapped = np.memmap(filename, dtype=np.uint8, mode="r+" if shared else "c", shape=(nbytes,))
    return from_numpy(mapped).view(dtype)  # the tensor keeps the mapping alive


def get_autocast_gpu_dtype() -> Any:
    """Deprecated in PyTorch for ``get_autocast_dtype('cuda')``, which it returns, with torch's warning.

    Example:
        >>> import flambeau as fb, warnings
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("ignore")
        ...     fb.get_autocast_gpu_dtype() == fb.get_autocast_dtype("cuda")
        True
    """
    warnings.warn(
        "torch.get_autocast_gpu_dtype() is deprecated. Please use torch.get_autocast_dtype('cuda') instead.",
        DeprecationWarning,
        stacklevel=2,
    )
    return fc.get_autocast_dtype("cuda")


def compiled_with_cxx11_abi() -> bool:
    """True: flambeau's C++ is built with the C++11 ABI of libstdc++ (``_GLIBCXX_USE_CXX11_ABI=1``), as
    PyTorch 2.13's wheels; a C++ extension must be built so too.

    Example:
        >>> import flambeau as fb
        >>> fb.compiled_with_cxx11_abi()
        True
    """
    return True


def is_vulkan_available() -> bool:
    """False: flambeau has no Vulkan backend.

    Example:
        >>> import flambeau as fb
        >>> fb.is_vulkan_available()
        False
    """
    return False


def is_distributed(input: Tensor) -> bool:
    """is_distributed(input) -> bool

    False for every tensor (as PyTorch's: no tensor is one of a distributed tensor library's).

    Example:
        >>> import flambeau as fb
        >>> fb.is_distributed(fb.ones(2)), fb.ones(2).is_distributed()
        (False, False)
    """
    if not isinstance(input, Tensor):
        raise TypeError(f"is_distributed(): argument 'input' (position 1) must be Tensor, not {type(input).__name__}")
    return False


# ---- removed in PyTorch 1.9 (torch raises these RuntimeErrors) ----


def _removed(name: str, replacement: str, advice: str) -> Callable[..., Any]:
    """A function PyTorch removed in 1.9: it raises torch's RuntimeError, whose text says what replaces it."""

    def removed(*args: Any, **kwargs: Any) -> Any:
        raise FlambeauError("This function was deprecated since version 1.9 and is now removed. " + advice)

    removed.__name__ = removed.__qualname__ = name
    removed.__doc__ = (
        f"Removed from PyTorch (1.9): raises its RuntimeError, which names the replacement, {replacement}.\n\n"
        "Example:\n"
        "    >>> import flambeau as fb\n"
        f"    >>> fb.{name}(fb.eye(2))\n"
        "    Traceback (most recent call last):\n"
        "    ...\n"
        "    flambeau_core.FlambeauError: This function was deprecated since version 1.9 and is now removed. ...\n"
    )
    return removed


solve = _removed(
    "solve",
    "linalg.solve (arguments reversed)",
    "`torch.solve` is deprecated in favor of `torch.linalg.solve`. `torch.linalg.solve` has its "
    "arguments reversed and does not return the LU factorization.\n\nTo get the LU factorization see "
    "`torch.lu`, which can be used with `torch.lu_solve` or `torch.lu_unpack`.\nX = torch.solve(B, A).solution "
    "should be replaced with:\nX = torch.linalg.solve(A, B)",
)
eig = _removed(
    "eig",
    "linalg.eig or linalg.eigvals",
    "`torch.linalg.eig` returns complex tensors of dtype `cfloat` or `cdouble` rather than real "
    "tensors mimicking complex tensors.\n\nL, _ = torch.eig(A) should be replaced with:\nL_complex = "
    "torch.linalg.eigvals(A)\n\nand\n\nL, V = torch.eig(A, eigenvectors=True) should be replaced with:\n"
    "L_complex, V_complex = torch.linalg.eig(A)",
)
lstsq = _removed(
    "lstsq",
    "linalg.lstsq (arguments reversed)",
    "`torch.lstsq` is deprecated in favor of `torch.linalg.lstsq`.\n`torch.linalg.lstsq` has "
    "reversed arguments and does not return the QR decomposition in the returned tuple (although it returns "
    "other information about the problem).\n\nTo get the QR decomposition consider using `torch.linalg.qr`."
    "\n\nThe returned solution in `torch.lstsq` stored the residuals of the solution in the last m - n "
    "columns of the returned value whenever m > n. In torch.linalg.lstsq, the residuals are in the field "
    "'residuals' of the returned named tuple.\n\nThe unpacking of the solution, as in\nX, _ = "
    "torch.lstsq(B, A).solution[:A.size(1)]\nshould be replaced with:\nX = torch.linalg.lstsq(A, B).solution",
)
symeig = _removed(
    "symeig",
    "linalg.eigh or linalg.eigvalsh",
    "The default behavior has changed from using the upper triangular portion of the matrix by "
    "default to using the lower triangular portion.\n\nL, _ = torch.symeig(A, upper=upper) should be "
    "replaced with:\nL = torch.linalg.eigvalsh(A, UPLO='U' if upper else 'L')\n\nand\n\nL, V = "
    "torch.symeig(A, eigenvectors=True) should be replaced with:\nL, V = torch.linalg.eigh(A, UPLO='U' if "
    "upper else 'L')",
)


def _reinforce(self: Tensor, reward: Any) -> None:
    """Removed from PyTorch: raises its RuntimeError, which shows the torch.distributions way instead.

    Example:
        >>> import flambeau as fb
        >>> try:
        ...     fb.ones(2).reinforce(1.0)
        ... except RuntimeError as e:
        ...     print(str(e).splitlines()[0])
        reinforce() was removed.
    """
    raise FlambeauError(
        "reinforce() was removed.\nUse torch.distributions instead.\nSee "
        "https://pytorch.org/docs/main/distributions.html\n\nInstead of:\n\nprobs = policy_network(state)\n"
        "action = probs.multinomial()\nnext_state, reward = env.step(action)\naction.reinforce(reward)\n"
        "action.backward()\n\nUse:\n\nprobs = policy_network(state)\n# NOTE: categorical is equivalent to what "
        "used to be called multinomial\nm = torch.distributions.Categorical(probs)\naction = m.sample()\n"
        "next_state, reward = env.step(action)\nloss = -m.log_prob(action) * reward\nloss.backward()\n"
    )


def install_tensor_methods() -> None:
    """Tensor.orgqr, Tensor.is_distributed and the removed methods (solve, eig, lstsq, symeig, reinforce)."""
    Tensor.orgqr = orgqr
    Tensor.is_distributed = is_distributed
    Tensor.solve = solve
    Tensor.eig = eig
    Tensor.lstsq = lstsq
    Tensor.symeig = symeig
    Tensor.reinforce = _reinforce
