"""The op mappings of ``flambeau.onnx``: elementwise, linear algebra, convolution, pooling, normalization, shapes."""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import flambeau_core as fc
import numpy as np
from flambeau_core._trace import OpCall

from flambeau.onnx._graph import OnnxExporterError, _arguments, _Graph, _maps, _np_dtype, _unsupported


def _pair(v: Any, n: int = 2) -> list[int]:
    return [int(v)] * n if isinstance(v, int) else [int(x) for x in v] * (n if len(v) == 1 else 1)


_UNARY = {
    "relu": "Relu", "relu_": "Relu", "sigmoid": "Sigmoid", "sigmoid_": "Sigmoid", "tanh": "Tanh", "tanh_": "Tanh",
    "exp": "Exp", "log": "Log", "sqrt": "Sqrt", "neg": "Neg", "abs": "Abs", "erf": "Erf", "sin": "Sin", "cos": "Cos",
    "reciprocal": "Reciprocal", "floor": "Floor", "ceil": "Ceil", "softplus": "Softplus", "contiguous": "Identity",
    "clone": "Identity", "detach": "Identity",
}  # fmt: skip


@_maps(*_UNARY)
def _unary(g: _Graph, call: OpCall) -> list[str | None]:
    return g.node(_UNARY[call.name], [g.value(call.args[0])])


_BINARY = {
    "add": "Add", "add_": "Add", "sub": "Sub", "sub_": "Sub", "mul": "Mul", "mul_": "Mul", "div": "Div",
    "div_": "Div", "true_divide": "Div", "pow": "Pow", "maximum": "Max", "minimum": "Min",
}  # fmt: skip


@_maps(*_BINARY)
def _binary(g: _Graph, call: OpCall) -> list[str | None]:
    dtype = call.result.dtype
    a, b = call.args[0], call.args[1] if len(call.args) > 1 else call.kwargs["other"]
    if call.name.startswith("div") and (call.kwargs.get("rounding_mode") or call.args[2:]):
        raise _unsupported(g, call, "rounding_mode")
    if call.name == "pow":
        return g.node("Pow", [g.operand(a, dtype), g.value(b) if isinstance(b, fc.Tensor) else g.operand(b, dtype)])
    rhs = g.operand(b, dtype)
    alpha = call.kwargs.get("alpha", call.args[2] if len(call.args) > 2 else 1)
    if alpha != 1:
        rhs = g.node("Mul", [rhs, g.operand(alpha, dtype)])[0]
    return g.node(_BINARY[call.name], [g.operand(a, dtype), rhs])


@_maps("linear")
def _linear(g: _Graph, call: OpCall) -> list[str | None]:
    x, w, b = _arguments(call, ("input", None), ("weight", None), ("bias", None))
    inputs = [g.value(x), g.value(w)] + ([g.value(b)] if b is not None else [])
    if x.dim() == 2:
        return g.node("Gemm", inputs, transB=1)
    out = g.node("MatMul", [inputs[0], g.node("Transpose", [inputs[1]], perm=[1, 0])[0]])
    return g.node("Add", [out[0], inputs[2]]) if b is not None else out


@_maps("matmul", "mm", "bmm")
def _matmul(g: _Graph, call: OpCall) -> list[str | None]:
    return g.node("MatMul", [g.value(call.args[0]), g.value(call.args[1])])


@_maps("addmm")
def _addmm(g: _Graph, call: OpCall) -> list[str | None]:
    c, m1, m2, beta, alpha = _arguments(
        call, ("input", None), ("mat1", None), ("mat2", None), ("beta", 1), ("alpha", 1)
    )
    return g.node("Gemm", [g.value(m1), g.value(m2), g.value(c)], alpha=float(alpha), beta=float(beta))


@_maps("conv2d", "conv1d")
def _conv(g: _Graph, call: OpCall) -> list[str | None]:
    n = 2 if call.name == "conv2d" else 1
    x, w, b, stride, padding, dilation, groups = _arguments(
        call, ("input", None), ("weight", None), ("bias", None), ("stride", 1), ("padding", 0), ("dilation", 1),
        ("groups", 1),
    )  # fmt: skip
    if isinstance(padding, str):
        raise _unsupported(g, call, f"padding={padding!r} (the functional layer passes ints)")
    pads = _pair(padding, n)
    inputs = [g.value(x), g.value(w)] + ([g.value(b)] if b is not None else [])
    return g.node(
        "Conv", inputs, kernel_shape=list(w.shape[2:]), strides=_pair(stride, n), pads=pads + pads,
        dilations=_pair(dilation, n), group=int(groups),
    )  # fmt: skip


@_maps("max_pool2d_with_indices")
def _max_pool2d(g: _Graph, call: OpCall) -> list[str | None]:
    x, kernel, stride, padding, dilation, ceil_mode = _arguments(
        call, ("self", None), ("kernel_size", None), ("stride", None), ("padding", 0), ("dilation", 1),
        ("ceil_mode", False),
    )  # fmt: skip
    kernel = _pair(kernel)
    pads = _pair(padding)
    out = g.node(
        "MaxPool", [g.value(x)], kernel_shape=kernel, strides=_pair(stride) if stride else kernel, pads=pads + pads,
        dilations=_pair(dilation), ceil_mode=int(bool(ceil_mode)),
    )  # fmt: skip
    return [out[0], None]


@_maps("avg_pool2d")
def _avg_pool2d(g: _Graph, call: OpCall) -> list[str | None]:
    x, kernel, stride, padding, ceil_mode, count_include_pad, divisor = _arguments(
        call, ("self", None), ("kernel_size", None), ("stride", None), ("padding", 0), ("ceil_mode", False),
        ("count_include_pad", True), ("divisor_override", None),
    )  # fmt: skip
    if divisor is not None:
        raise _unsupported(g, call, "divisor_override")
    kernel = _pair(kernel)
    pads = _pair(padding)
    return g.node(
        "AveragePool", [g.value(x)], kernel_shape=kernel, strides=_pair(stride) if stride else kernel,
        pads=pads + pads, ceil_mode=int(bool(ceil_mode)), count_include_pad=int(bool(count_include_pad)),
    )  # fmt: skip


@_maps("adaptive_avg_pool2d")
def _adaptive_avg_pool2d(g: _Graph, call: OpCall) -> list[str | None]:
    x, size = call.args[0], _pair(call.args[1])
    if size == [1, 1]:
        return g.node("GlobalAveragePool", [g.value(x)])
    h, w = x.shape[-2:]
    if g.size_pairs(x)[-2:] != [(h, h), (w, w)]:
        raise _unsupported(g, call, f"an output size {tuple(size)} other than 1 of a dynamic height or width")
    if h % size[0] or w % size[1]:
        raise _unsupported(g, call, f"an output size {tuple(size)} that does not divide the input's {(h, w)}")
    kernel = [h // size[0], w // size[1]]
    return g.node("AveragePool", [g.value(x)], kernel_shape=kernel, strides=kernel)


@_maps("native_batch_norm")
def _batch_norm(g: _Graph, call: OpCall) -> list[str | None]:
    x, w, b, mean, var, training, _momentum, eps = _arguments(
        call, ("input", None), ("weight", None), ("bias", None), ("running_mean", None), ("running_var", None),
        ("training", False), ("momentum", 0.1), ("eps", 1e-5),
    )  # fmt: skip
    if training or mean is None or var is None:
        raise _unsupported(g, call, "batch statistics (training mode, or track_running_stats=False)")
    c = x.shape[1]
    np_t = _np_dtype(x.dtype)
    scale = g.value(w) if w is not None else g.constant(np.ones(c, np_t))
    bias = g.value(b) if b is not None else g.constant(np.zeros(c, np_t))
    out = g.node("BatchNormalization", [g.value(x), scale, bias, g.value(mean), g.value(var)], epsilon=float(eps))
    return [out[0], None, None]


@_maps("native_layer_norm")
def _layer_norm(g: _Graph, call: OpCall) -> list[str | None]:
    x, shape, w, b, eps = _arguments(
        call, ("input", None), ("normalized_shape", None), ("weight", None), ("bias", None), ("eps", 1e-5)
    )
    if g.opset < 17:
        raise _unsupported(g, call, "LayerNormalization needs opset 17 or later")
    shape = list(shape)
    np_t = _np_dtype(x.dtype)
    scale = g.value(w) if w is not None else g.constant(np.ones(shape, np_t))
    inputs = [g.value(x), scale] + ([g.value(b)] if b is not None else [])
    out = g.node("LayerNormalization", inputs, axis=-len(shape), epsilon=float(eps))
    return [out[0], None, None]


@_maps("embedding")
def _embedding(g: _Graph, call: OpCall) -> list[str | None]:
    w, idx = call.args[0], call.args[1]
    return g.node("Gather", [g.value(w), g.value(idx)], axis=0)


@_maps("gelu")
def _gelu(g: _Graph, call: OpCall) -> list[str | None]:
    x = call.args[0]
    approximate = call.kwargs.get("approximate", "none")
    if g.opset >= 20:
        return g.node("Gelu", [g.value(x)], approximate=approximate)
    np_t = _np_dtype(x.dtype)
    v = g.value(x)
    if approximate == "tanh":  # 0.5 x (1 + tanh(sqrt(2/pi) (x + 0.044715 x^3)))
        cube = g.node("Mul", [v, g.node("Mul", [v, v])[0]])[0]
        inner = g.node("Add", [v, g.node("Mul", [cube, g.constant(np.asarray(0.044715, np_t))])[0]])[0]
        t = g.node("Tanh", [g.node("Mul", [inner, g.constant(np.asarray(math.sqrt(2 / math.pi), np_t))])[0]])[0]
    else:  # 0.5 x (1 + erf(x / sqrt(2)))
        t = g.node("Erf", [g.node("Div", [v, g.constant(np.asarray(math.sqrt(2.0), np_t))])[0]])[0]
    one_plus = g.node("Add", [t, g.constant(np.asarray(1.0, np_t))])[0]
    return g.node("Mul", [g.node("Mul", [v, one_plus])[0], g.constant(np.asarray(0.5, np_t))])


@_maps("silu", "silu_")
def _silu(g: _Graph, call: OpCall) -> list[str | None]:
    v = g.value(call.args[0])
    return g.node("Mul", [v, g.node("Sigmoid", [v])[0]])


@_maps("leaky_relu", "leaky_relu_")
def _leaky_relu(g: _Graph, call: OpCall) -> list[str | None]:
    (x, slope) = _arguments(call, ("self", None), ("negative_slope", 0.01))
    return g.node("LeakyRelu", [g.value(x)], alpha=float(slope))


@_maps("hardtanh", "hardtanh_", "clamp", "clamp_", "clip")
def _clip(g: _Graph, call: OpCall) -> list[str | None]:
    lo_name = "min_val" if call.name.startswith("hardtanh") else "min"
    hi_name = "max_val" if call.name.startswith("hardtanh") else "max"
    x, lo, hi = _arguments(call, ("self", None), (lo_name, None), (hi_name, None))
    dtype = call.result.dtype
    inputs = [g.value(x), g.operand(lo, dtype) if lo is not None else "",
              g.operand(hi, dtype) if hi is not None else ""]  # fmt: skip
    while inputs[-1] == "":
        inputs.pop()
    return g.node("Clip", inputs)


@_maps("softmax", "log_softmax")
def _softmax(g: _Graph, call: OpCall) -> list[str | None]:
    x, dim, dtype = _arguments(call, ("self", None), ("dim", None), ("dtype", None))
    v = g.value(x)
    if dtype is not None and dtype != x.dtype:
        v = g.node("Cast", [v], to=g._onnx_type(dtype))[0]
    return g.node("Softmax" if call.name == "softmax" else "LogSoftmax", [v], axis=int(dim))


def _reduce_axes(g: _Graph, op_type: str, v: str, dims: Any, keepdim: bool) -> list[str]:
    if dims is None or (isinstance(dims, (list, tuple)) and len(dims) == 0):
        return g.node(op_type, [v], keepdims=int(keepdim))
    axes = [int(dims)] if isinstance(dims, int) else [int(d) for d in dims]
    if op_type == "ReduceSum" or g.opset >= 18:
        return g.node(op_type, [v, g.ints(axes)], keepdims=int(keepdim))
    return g.node(op_type, [v], axes=axes, keepdims=int(keepdim))


@_maps("mean", "sum")
def _reduce(g: _Graph, call: OpCall) -> list[str | None]:
    x, dims, keepdim = _arguments(call, ("self", None), ("dim", None), ("keepdim", False))
    v = g.value(x)
    if call.result.dtype != x.dtype:
        v = g.node("Cast", [v], to=g._onnx_type(call.result.dtype))[0]
    return _reduce_axes(g, "ReduceMean" if call.name == "mean" else "ReduceSum", v, dims, bool(keepdim))


@_maps("max", "min", "amax", "amin")
def _max_min(g: _Graph, call: OpCall) -> list[str | None]:
    x = call.args[0]
    other = call.args[1] if len(call.args) > 1 else call.kwargs.get("other", call.kwargs.get("dim"))
    is_max = call.name in ("max", "amax")
    if isinstance(other, fc.Tensor):  # elementwise max(a, b)
        dtype = call.result.dtype
        return g.node("Max" if is_max else "Min", [g.operand(x, dtype), g.operand(other, dtype)])
    keepdim = bool(call.args[2] if len(call.args) > 2 else call.kwargs.get("keepdim", False))
    reduce = "ReduceMax" if is_max else "ReduceMin"
    if other is None or call.name in ("amax", "amin"):
        return _reduce_axes(g, reduce, g.value(x), other, keepdim)
    values = _reduce_axes(g, reduce, g.value(x), other, keepdim)[0]
    indices = g.node("ArgMax" if is_max else "ArgMin", [g.value(x)], axis=int(other), keepdims=int(keepdim))[0]
    return [values, indices]


# ---- shapes: a target size that is an input's dim stays symbolic (Note [Sizes from a second trace]).
def _reshape(g: _Graph, call: OpCall, x: fc.Tensor, shape: Sequence[int], twin_shape: Sequence[int]) -> list[str]:
    """Reshape to `shape`: a size that copies x's size at the same index is 0, a size read from the graph's
    shapes is computed there, and a dynamic size with no source is -1 (when the target has no -1 already)."""
    pairs = list(zip([int(s) for s in shape], [int(s) for s in twin_shape], strict=True))
    target: list[Any] = []
    for i, (a, b) in enumerate(pairs):
        if a == b:
            target.append((a, a) if a != 0 else None)  # a real 0 would mean "copy" to Reshape: kept by allowzero
        elif i < x.dim() and (a, b) == g.size_pairs(x)[i]:
            target.append((0, 0))
        else:
            target.append((a, b) if g.size((a, b)) is not None else "free")
    if target.count("free") > 1 or ("free" in target and any(p == (-1, -1) for p in target)):
        raise OnnxExporterError(
            f"[onnx.export] '{call.name}' to a shape {tuple(shape)} whose sizes follow the input's in a way the "
            "exporter cannot read back from the graph's shapes; compute them from x.size() of the tensor reshaped"
        )
    pairs = [(-1, -1) if p == "free" else p for p in target]
    allowzero = {"allowzero": 1} if None in target else {}
    if allowzero and g.opset < 14:
        raise _unsupported(g, call, "a reshape to a size 0 needs opset 14 or later")
    if allowzero and (0, 0) in pairs:
        raise _unsupported(g, call, "a reshape to a size 0 that also keeps a dynamic dim")
    pairs = [(0, 0) if p is None else p for p in pairs]
    return g.node("Reshape", [g.value(x), g.shape_value(pairs)], **allowzero)


def _shape_args(args: tuple[Any, ...]) -> list[int]:
    """Sizes written as f(2, 3) or f((2, 3))."""
    if len(args) == 1 and not isinstance(args[0], int):
        return [int(s) for s in args[0]]
    return [int(s) for s in args]


@_maps("view", "reshape")
def _view(g: _Graph, call: OpCall) -> list[str | None]:
    twin = g.twin_call or call
    return _reshape(g, call, call.args[0], _shape_args(call.args[1:]), _shape_args(twin.args[1:]))


@_maps("flatten")
def _flatten(g: _Graph, call: OpCall) -> list[str | None]:
    x, start, end = _arguments(call, ("self", None), ("start_dim", 0), ("end_dim", -1))
    n = max(x.dim(), 1)
    start, end = start % n, end % n
    if x.dim() == 0:
        return g.node("Reshape", [g.value(x), g.ints([1])])
    if end == n - 1 and start == 1:
        return g.node("Flatten", [g.value(x)], axis=1)
    pairs = [(0, 0)] * start + [(-1, -1)] + g.size_pairs(x)[end + 1 :]
    shape = g.shape_value(pairs)
    if shape is None:
        raise _unsupported(g, call, "a flatten followed by dynamic dims the exporter cannot read back")
    return g.node("Reshape", [g.value(x), shape])


@_maps("permute")
def _permute(g: _Graph, call: OpCall) -> list[str | None]:
    x = call.args[0]
    perm = [int(d) % x.dim() for d in _shape_args(call.args[1:])]
    return g.node("Transpose", [g.value(x)], perm=perm)


@_maps("transpose", "t")
def _transpose(g: _Graph, call: OpCall) -> list[str | None]:
    x = call.args[0]
    if x.dim() < 2:
        return g.node("Identity", [g.value(x)])
    d0, d1 = (call.args[1], call.args[2]) if call.name == "transpose" else (0, 1)
    perm = list(range(x.dim()))
    d0, d1 = d0 % x.dim(), d1 % x.dim()
    perm[d0], perm[d1] = perm[d1], perm[d0]
    return g.node("Transpose", [g.value(x)], perm=perm)


@_maps("T", "mT")
def _reversed_or_matrix_transpose(g: _Graph, call: OpCall) -> list[str | None]:
    # x.T reverses every dim; x.mT swaps the last two (a batch of matrices).
    x = call.args[0]
    perm = list(range(x.dim()))
    if call.name == "T":
        perm.reverse()
    else:
        perm[-2], perm[-1] = perm[-1], perm[-2]
    return g.node("Transpose", [g.value(x)], perm=perm)


@_maps("unsqueeze")
def _unsqueeze(g: _Graph, call: OpCall) -> list[str | None]:
    x, dim = call.args[0], int(call.args[1])
    return g.node("Unsqueeze", [g.value(x), g.ints([dim % (x.dim() + 1)])])


@_maps("squeeze")
def _squeeze(g: _Graph, call: OpCall) -> list[str | None]:
    x = call.args[0]
    dim = call.args[1] if len(call.args) > 1 else call.kwargs.get("dim")
    if dim is None:
        dims = [i for i, s in enumerate(g.size_pairs(x)) if s == (1, 1)]
    else:
        dims = [int(d) % max(x.dim(), 1) for d in ([dim] if isinstance(dim, int) else dim)]
        dims = [d for d in dims if g.size_pairs(x)[d] == (1, 1)]
    if not dims:
        return g.node("Identity", [g.value(x)])
    return g.node("Squeeze", [g.value(x), g.ints(dims)])


@_maps("cat", "concat", "concatenate")
def _cat(g: _Graph, call: OpCall) -> list[str | None]:
    tensors, dim = _arguments(call, ("tensors", None), ("dim", 0))
    dtype = call.result.dtype
    return g.node("Concat", [g.operand(t, dtype) for t in tensors], axis=int(dim))


@_maps("stack")
def _stack(g: _Graph, call: OpCall) -> list[str | None]:
    tensors, dim = _arguments(call, ("tensors", None), ("dim", 0))
    axis = int(dim) % (tensors[0].dim() + 1)
    dtype = call.result.dtype
    parts = [g.node("Unsqueeze", [g.operand(t, dtype), g.ints([axis])])[0] for t in tensors]
    return g.node("Concat", parts, axis=axis)


@_maps("dropout", "feature_dropout", "alpha_dropout")
def _dropout(g: _Graph, call: OpCall) -> list[str | None]:
    x, _p, train = _arguments(call, ("input", None), ("p", 0.5), ("train", False))
    if train:
        raise _unsupported(g, call, "dropout in training mode")
    return g.node("Identity", [g.value(x)])


_COMPARE = {"gt": "Greater", "lt": "Less", "ge": "GreaterOrEqual", "le": "LessOrEqual", "eq": "Equal"}


@_maps(*_COMPARE, "ne")
def _compare(g: _Graph, call: OpCall) -> list[str | None]:
    a, b = call.args[0], call.args[1]
    dtype = fc.result_type(a, b)
    out = g.node(_COMPARE.get(call.name, "Equal"), [g.operand(a, dtype), g.operand(b, dtype)])
    return g.node("Not", out) if call.name == "ne" else out


@_maps("to", "type_as", "float", "double", "half", "bfloat16", "long", "int", "short", "char", "byte", "bool")
def _cast(g: _Graph, call: OpCall) -> list[str | None]:
    x = call.args[0]
    if call.result.dtype == x.dtype:
        return g.node("Identity", [g.value(x)])
    return g.node("Cast", [g.value(x)], to=g._onnx_type(call.result.dtype))


@_maps("tril", "triu")
def _trilu(g: _Graph, call: OpCall) -> list[str | None]:
    x, diagonal = _arguments(call, ("input", None), ("diagonal", 0))
    if g.opset < 14:
        raise _unsupported(g, call, "Trilu needs opset 14 or later")
    k = g.constant(np.asarray(int(diagonal), np.int64))
    return g.node("Trilu", [g.value(x), k], upper=int(call.name == "triu"))


@_maps("expand", "broadcast_to")
def _expand(g: _Graph, call: OpCall) -> list[str | None]:
    """Expand's sizes; a -1 (keep the input's size) is a 1 to ONNX's broadcasting Expand."""
    x = call.args[0]
    sizes = _shape_args(call.args[1:]) if call.args[1:] else list(call.kwargs["size"])
    twin = g.twin_call or call
    twin_sizes = _shape_args(twin.args[1:]) if twin.args[1:] else list(twin.kwargs["size"])
    pairs = [(1, 1) if a == -1 else (a, b) for a, b in zip(sizes, twin_sizes, strict=True)]
    shape = g.shape_value(pairs)
    if shape is None:
        raise _unsupported(g, call, "sizes computed from the input's that the exporter cannot read back")
    return g.node("Expand", [g.value(x), shape])


_PAD_MODES = {"constant": "constant", "reflect": "reflect", "replicate": "edge", "circular": "wrap"}
_PAD_PARAMS = (("self", None), ("pad", None), ("mode", "constant"), ("value", 0.0))


@_maps("_pad_nd")
def _pad(g: _Graph, call: OpCall) -> list[str | None]:
    """F.pad: PyTorch's pads (left, right) per dim from the last are ONNX's begins then ends from the first."""
    x, pad, mode, value = _arguments(call, *_PAD_PARAMS)
    twin_pad = g.twin_args(call, *_PAD_PARAMS)[1]
    if mode not in _PAD_MODES:
        raise _unsupported(g, call, f"mode={mode!r}")
    if mode == "circular" and g.opset < 19:
        raise _unsupported(g, call, "mode='circular' (Pad's 'wrap') needs opset 19 or later")
    n = x.dim()
    begins, ends = [(0, 0)] * n, [(0, 0)] * n
    for i in range(len(pad) // 2):
        begins[n - 1 - i] = (int(pad[2 * i]), int(twin_pad[2 * i]))
        ends[n - 1 - i] = (int(pad[2 * i + 1]), int(twin_pad[2 * i + 1]))
    pads = g.shape_value(begins + ends)
    if pads is None:
        raise _unsupported(g, call, "pads computed from sizes the exporter cannot read back")
    inputs = [g.value(x), pads] + ([g.operand(value or 0, x.dtype)] if mode == "constant" else [])
    return g.node("Pad", inputs, mode=_PAD_MODES[mode])
