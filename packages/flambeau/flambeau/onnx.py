"""``flambeau.onnx``: export a model to ONNX (``torch.onnx.export``), checked by ONNX Runtime in the tests.

:func:`export` runs the model once in eval mode under core's op recorder
(``flambeau_core._trace``, Note [Op recorder]): every op the model's Python
code calls is seen with its arguments and result, the ops are mapped to ONNX
nodes, parameters and buffers become initializers, and the ``ModelProto`` is
written with the ``onnx`` package (an optional dependency: ``pip install
onnx``). See ``docs/tutorials/onnx-export.md``.

It is a tracer, as PyTorch's TorchScript exporter: Python control flow is
unrolled for the example inputs, and numbers the model computes from shapes
(``x.size(0)``) are baked in. Reading a traced tensor's value
(``if x.sum() > 0``, ``x.item()``) is data-dependent control flow and raises.

Example:
    >>> import io
    >>> import flambeau as fb
    >>> model = fb.nn.Sequential(fb.nn.Linear(4, 3), fb.nn.ReLU())
    >>> buffer = io.BytesIO()
    >>> proto = fb.onnx.export(model, (fb.randn(2, 4),), buffer, input_names=["x"],
    ...                        dynamic_axes={"x": {0: "batch"}})
    >>> [node.op_type for node in proto.graph.node]
    ['Gemm', 'Relu']
"""

from __future__ import annotations

import enum
import inspect
import io
import math
import os
from collections.abc import Callable, Mapping, Sequence
from typing import Any

import flambeau_core as fc
import numpy as np
from flambeau_core._trace import OpCall, OpRecorder

__all__ = [
    "OnnxExporterError",
    "TrainingMode",
    "UnsupportedOperatorError",
    "export",
    "is_in_onnx_export",
]

DEFAULT_OPSET = 18
MIN_OPSET, MAX_OPSET = 13, 21


class OnnxExporterError(RuntimeError):
    """An error of :func:`export` (PyTorch's ``torch.onnx.OnnxExporterError``).

    Example:
        >>> import flambeau as fb
        >>> issubclass(fb.onnx.OnnxExporterError, RuntimeError)
        True
    """


class UnsupportedOperatorError(OnnxExporterError):
    """An op the model calls has no ONNX mapping at the requested opset.

    PyTorch's ``torch.onnx.errors.UnsupportedOperatorError``.

    Example:
        >>> import flambeau as fb
        >>> issubclass(fb.onnx.UnsupportedOperatorError, fb.onnx.OnnxExporterError)
        True
    """


class TrainingMode(enum.IntEnum):
    """The mode a model is exported in (``torch.onnx.TrainingMode``); flambeau exports ``EVAL`` only.

    Example:
        >>> import flambeau as fb
        >>> fb.onnx.TrainingMode.EVAL.name
        'EVAL'
    """

    EVAL = 0
    PRESERVE = 1
    TRAINING = 2


_exporting = False


def is_in_onnx_export() -> bool:
    """True while :func:`export` runs the model (as ``torch.onnx.is_in_onnx_export``).

    Example:
        >>> import flambeau as fb
        >>> fb.onnx.is_in_onnx_export()
        False
    """
    return _exporting


def _onnx() -> Any:
    try:
        import onnx
    except ImportError as e:  # pragma: no cover - depends on the environment
        raise ImportError(
            "[onnx.export] needs the 'onnx' package (an optional dependency of flambeau): pip install onnx"
        ) from e
    return onnx


def _np_dtype(dtype: Any) -> np.dtype:
    return fc.empty(0, dtype=dtype).numpy().dtype


def _array(t: fc.Tensor) -> np.ndarray:
    return np.ascontiguousarray(t.detach().cpu().numpy())


class _Graph:
    """The ONNX graph being built from the recorded op calls."""

    def __init__(
        self, onnx: Any, opset: int, params: dict[int, tuple[str, fc.Tensor]], fold: bool, export_params: bool
    ) -> None:
        self.onnx = onnx
        self.opset = opset
        self.params = params  # id -> (name, tensor): made initializers (or inputs) when first used
        self.fold = fold
        self.export_params = export_params
        self.names: dict[int, str] = {}  # id(tensor) -> value name
        self.dynamic: set[str] = set()  # values computed from the graph's inputs
        self.unusable: dict[int, str] = {}  # id -> the op whose result this is, with no ONNX value
        self.nodes: list[Any] = []
        self.initializers: list[Any] = []
        self.param_inputs: list[Any] = []
        self.inputs: list[str] = []
        self._count = 0

    # -------------------------------------------------------------- values
    def fresh(self, hint: str) -> str:
        self._count += 1
        return f"/{hint}_{self._count}"

    def constant(self, array: np.ndarray, hint: str = "Constant") -> str:
        name = self.fresh(hint)
        self.initializers.append(self.onnx.numpy_helper.from_array(np.asarray(array), name))
        return name

    def ints(self, values: Sequence[int]) -> str:
        return self.constant(np.asarray(list(values), dtype=np.int64), "shape")

    def is_dynamic(self, obj: Any) -> bool:
        # A result with no ONNX value counts as dynamic, so an op reading it is mapped (and fails), never folded.
        return isinstance(obj, fc.Tensor) and (self.names.get(id(obj)) in self.dynamic or id(obj) in self.unusable)

    def value(self, obj: Any) -> str:
        """The value name of a tensor argument, materializing a parameter or a constant on first use."""
        key = id(obj)
        if key in self.names:
            return self.names[key]
        if key in self.unusable:
            raise UnsupportedOperatorError(
                f"[onnx.export] Exporting the operator '{self.unusable[key]}' to ONNX opset version {self.opset} "
                "is not supported: the model uses a result of it that has no ONNX equivalent"
            )
        if key in self.params:
            name, t = self.params[key]
            if self.export_params:
                self.initializers.append(self.onnx.numpy_helper.from_array(_array(t), name))
            else:
                self.param_inputs.append(self._value_info(name, t, {}))
            self.names[key] = name
            return name
        # A tensor no recorded op made: a factory's result inside forward, or a folded result.
        name = self.constant(_array(obj))
        self.names[key] = name
        return name

    def operand(self, obj: Any, dtype: Any) -> str:
        """A tensor or Python number as a value of `dtype` (a Cast when the tensor's differs)."""
        if not isinstance(obj, fc.Tensor):
            return self.constant(np.asarray(obj, dtype=_np_dtype(dtype)))
        name = self.value(obj)
        if obj.dtype != dtype:
            name = self.node("Cast", [name], to=self._onnx_type(dtype))[0]
        return name

    def node(self, op_type: str, inputs: Sequence[str], outputs: int = 1, **attrs: Any) -> list[str]:
        outs = [self.fresh(f"{op_type}_output") for _ in range(outputs)]
        self._count += 1
        self.nodes.append(
            self.onnx.helper.make_node(op_type, list(inputs), outs, name=f"/{op_type}_{self._count}", **attrs)
        )
        self.dynamic.update(outs)
        return outs

    def bind(self, result: Any, name: str) -> None:
        self.names[id(result)] = name
        self.dynamic.add(name)

    def _onnx_type(self, dtype: Any) -> int:
        return self.onnx.helper.np_dtype_to_tensor_dtype(_np_dtype(dtype))

    def _value_info(self, name: str, t: fc.Tensor, dims: Mapping[int, str]) -> Any:
        shape = [dims.get(i, s) for i, s in enumerate(t.shape)]
        return self.onnx.helper.make_tensor_value_info(name, self._onnx_type(t.dtype), shape)


# ------------------------------------------------------------------ the op mappings
# Each mapping emits the nodes of one recorded call and returns the value names of its
# tensor results (one per element of a tuple result; None for an element with no value).
_Mapping = Callable[[_Graph, OpCall], list[str | None]]
_MAPPINGS: dict[str, _Mapping] = {}


def _maps(*names: str) -> Callable[[_Mapping], _Mapping]:
    def register(fn: _Mapping) -> _Mapping:
        for name in names:
            _MAPPINGS[name] = fn
        return fn

    return register


def _arguments(call: OpCall, *params: tuple[str, Any]) -> list[Any]:
    """The call's arguments bound to (name, default) parameters, positional first, then by keyword."""
    out = []
    for i, (name, default) in enumerate(params):
        if i < len(call.args):
            out.append(call.args[i])
        else:
            out.append(call.kwargs.get(name, default))
    return out


def _unsupported(g: _Graph, call: OpCall, why: str) -> UnsupportedOperatorError:
    return UnsupportedOperatorError(
        f"[onnx.export] Exporting the operator '{call.name}' to ONNX opset version {g.opset} is not supported: {why}"
    )


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


# ---- shapes: a target shape copies the input's leading sizes (0 in ONNX's Reshape), so a
# dynamic batch dim stays dynamic when the model reshapes (x.view(x.size(0), -1)).
def _reshape(g: _Graph, x: fc.Tensor, shape: Sequence[int]) -> list[str]:
    target = [int(s) for s in shape]
    if -1 not in target and len(target) > 0:
        # One dim computed by ONNX: the first one not copied from the input.
        for i, s in enumerate(target):
            if not (i < x.dim() and s == x.shape[i]):
                target[i] = -1
                break
    target = [0 if (i < x.dim() and s == x.shape[i] and s != -1) else s for i, s in enumerate(target)]
    return g.node("Reshape", [g.value(x), g.ints(target)])


def _shape_args(args: tuple[Any, ...]) -> list[int]:
    """Sizes written as f(2, 3) or f((2, 3))."""
    if len(args) == 1 and not isinstance(args[0], int):
        return [int(s) for s in args[0]]
    return [int(s) for s in args]


@_maps("view", "reshape")
def _view(g: _Graph, call: OpCall) -> list[str | None]:
    return _reshape(g, call.args[0], _shape_args(call.args[1:]))


@_maps("flatten")
def _flatten(g: _Graph, call: OpCall) -> list[str | None]:
    x, start, end = _arguments(call, ("self", None), ("start_dim", 0), ("end_dim", -1))
    n = max(x.dim(), 1)
    start, end = start % n, end % n
    if end == n - 1 and start >= 1:
        if start == 1:
            return g.node("Flatten", [g.value(x)], axis=1)
    target = [0] * start + [-1] + [int(s) for s in x.shape[end + 1 :]]
    return g.node("Reshape", [g.value(x), g.ints(target)])


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


@_maps("unsqueeze")
def _unsqueeze(g: _Graph, call: OpCall) -> list[str | None]:
    x, dim = call.args[0], int(call.args[1])
    return g.node("Unsqueeze", [g.value(x), g.ints([dim % (x.dim() + 1)])])


@_maps("squeeze")
def _squeeze(g: _Graph, call: OpCall) -> list[str | None]:
    x = call.args[0]
    dim = call.args[1] if len(call.args) > 1 else call.kwargs.get("dim")
    if dim is None:
        dims = [i for i, s in enumerate(x.shape) if s == 1]
    else:
        dims = [int(d) % max(x.dim(), 1) for d in ([dim] if isinstance(dim, int) else dim)]
        dims = [d for d in dims if x.shape[d] == 1]
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


_LSTM_MODE = 2


@_maps("_rnn_layer")
def _rnn_layer(g: _Graph, call: OpCall) -> list[str | None]:
    """One LSTM layer and direction (nn.LSTM's time loop) as ONNX's LSTM.

    Core's layer takes the input projection igates = x @ w_ih^T + b_ih, already computed by the graph; ONNX's
    LSTM multiplies its input by W, so W is the permutation from PyTorch's gate order (i, f, g, o) to ONNX's
    (i, o, f, c), and R, B are w_hh and b_hh permuted the same way.
    """
    igates, w_hh, b_hh, hx, cx, mode, batch_sizes, reverse = _arguments(
        call, ("igates", None), ("w_hh", None), ("b_hh", None), ("hx", None), ("cx", None), ("mode", 0),
        ("batch_sizes", None), ("reverse", False),
    )  # fmt: skip
    if int(mode) != _LSTM_MODE:
        raise _unsupported(g, call, "only LSTM layers are mapped (not RNN or GRU)")
    sizes = [int(b) for b in batch_sizes]
    if len(set(sizes)) != 1:
        raise _unsupported(g, call, "a PackedSequence with sequences of different lengths")
    steps, hidden = len(sizes), int(w_hh.shape[1])
    np_t = _np_dtype(igates.dtype)
    perm = np.concatenate([np.arange(k * hidden, (k + 1) * hidden) for k in (0, 3, 1, 2)])
    w = np.eye(4 * hidden, dtype=np_t)[perm][None]
    r = _array(w_hh)[perm][None]
    bias = np.zeros((1, 8 * hidden), np_t)
    if b_hh.numel() > 0:
        bias[0, 4 * hidden :] = _array(b_hh)[perm]
    x = g.node("Reshape", [g.value(igates), g.ints([steps, -1, 4 * hidden])])[0]

    def initial(t: fc.Tensor) -> str:
        # A zero initial state (nn.LSTM's default) is ONNX's default too: left out, the batch stays free.
        if not g.is_dynamic(t) and not bool((t != 0).any()):
            return ""
        return g.node("Unsqueeze", [g.value(t), g.ints([0])])[0]

    inputs = [x, g.constant(w), g.constant(r), g.constant(bias), "", initial(hx), initial(cx)]
    while inputs[-1] == "":
        inputs.pop()
    y, y_h, y_c = g.node(
        "LSTM", inputs, outputs=3, hidden_size=hidden, direction="reverse" if reverse else "forward"
    )  # fmt: skip
    out = g.node("Reshape", [y, g.ints([-1, hidden])])[0]
    hy = g.node("Squeeze", [y_h, g.ints([0])])[0]
    cy = g.node("Squeeze", [y_c, g.ints([0])])[0]
    return [out, hy, cy, None]


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


# ------------------------------------------------------------------ export
_READS = {"item", "tolist", "__bool__", "__float__", "__int__"}


def _flatten_args(args: Any) -> tuple[tuple[Any, ...], dict[str, Any]]:
    if isinstance(args, fc.Tensor):
        return (args,), {}
    if not isinstance(args, tuple):
        raise TypeError(f"[onnx.export] args must be a Tensor or a tuple, got {type(args).__name__}")
    if args and isinstance(args[-1], dict):
        return args[:-1], dict(args[-1])
    return args, {}


def _outputs(result: Any) -> list[fc.Tensor]:
    if isinstance(result, fc.Tensor):
        return [result]
    if isinstance(result, (tuple, list)):
        out: list[fc.Tensor] = []
        for r in result:
            out += _outputs(r)
        return out
    raise OnnxExporterError(
        f"[onnx.export] the model must return a Tensor or a (nested) tuple/list of Tensors, got {type(result).__name__}"
    )


def _input_names(model: Any, n: int) -> list[str]:
    try:
        params = [
            p.name
            for p in inspect.signature(model.forward if hasattr(model, "forward") else model).parameters.values()
            if p.kind in (p.POSITIONAL_ONLY, p.POSITIONAL_OR_KEYWORD)
        ]
    except (TypeError, ValueError):
        params = []
    return params[:n] if len(params) >= n else [f"input_{i}" for i in range(n)]


def _dynamic_dims(dynamic_axes: Any, names: list[str], shapes: dict[str, tuple[int, ...]]) -> dict[str, dict[int, str]]:
    if dynamic_axes is None:
        return {}
    if not isinstance(dynamic_axes, Mapping):
        raise TypeError(f"[onnx.export] dynamic_axes must be a dict, got {type(dynamic_axes).__name__}")
    out: dict[str, dict[int, str]] = {}
    for key, axes in dynamic_axes.items():
        if key not in shapes:
            raise ValueError(
                f"[onnx.export] dynamic_axes names {key!r}, which is neither an input nor an output; "
                f"expected one of {names}"
            )
        if isinstance(axes, Mapping):
            dims = {int(a): str(n) for a, n in axes.items()}
        elif isinstance(axes, (list, tuple)):
            dims = {int(a): f"{key}_dynamic_axes_{i + 1}" for i, a in enumerate(axes)}
        else:
            raise TypeError(f"[onnx.export] dynamic_axes[{key!r}] must be a dict or a list of axes, got {axes!r}")
        rank = len(shapes[key])
        for a in dims:
            if not 0 <= a < rank:
                raise ValueError(f"[onnx.export] dynamic_axes[{key!r}] has axis {a}, but {key!r} has {rank} dims")
        out[key] = dims
    return out


def export(
    model: Any,
    args: Any = (),
    f: str | os.PathLike[str] | io.IOBase | None = None,
    *,
    kwargs: dict[str, Any] | None = None,
    verbose: bool | None = None,
    input_names: Sequence[str] | None = None,
    output_names: Sequence[str] | None = None,
    opset_version: int | None = None,
    dynamo: bool = True,
    external_data: bool = True,
    dynamic_shapes: Any = None,
    export_params: bool = True,
    keep_initializers_as_inputs: bool = False,
    dynamic_axes: Mapping[str, Mapping[int, str]] | Mapping[str, Sequence[int]] | None = None,
    training: TrainingMode = TrainingMode.EVAL,
    do_constant_folding: bool = True,
    **unsupported: Any,
) -> Any:
    """Exports ``model`` to ONNX by running it once on ``args`` (``torch.onnx.export``'s signature).

    The model runs in eval mode under no_grad, with every op it calls recorded; each op becomes ONNX
    nodes, parameters and buffers become initializers named as in ``state_dict()``, and ops on
    constants only are folded (``do_constant_folding``). ``dynamic_axes`` (``{"x": {0: "batch"}}`` or
    ``{"x": [0]}``) makes those dims of inputs and outputs symbolic. The file is written to ``f`` (a path
    or a binary file object), and the ``onnx.ModelProto`` is returned.

    Differences from PyTorch: flambeau always traces (``dynamo`` is accepted and ignored; PyTorch's
    dynamo exporter returns an ``ONNXProgram``, whose ``model_proto`` is what this returns); the opset
    is 13 to 21 (default 18); ``dynamic_shapes``, custom translation tables and training-mode export
    are not supported; weights are always stored inside the file (``external_data`` is ignored).

    An op with no ONNX mapping raises :class:`UnsupportedOperatorError` naming it and the opset;
    reading a traced tensor's value (``x.item()``, ``if x.sum() > 0``) raises :class:`OnnxExporterError`.

    Example:
        >>> import io
        >>> import flambeau as fb
        >>> model = fb.nn.Sequential(fb.nn.Conv2d(1, 2, 3), fb.nn.ReLU(), fb.nn.Flatten(), fb.nn.Linear(8, 2))
        >>> proto = fb.onnx.export(model, (fb.randn(1, 1, 4, 4),), io.BytesIO(), input_names=["image"],
        ...                        output_names=["logits"], dynamic_axes={"image": {0: "n"}, "logits": {0: "n"}})
        >>> [node.op_type for node in proto.graph.node], proto.graph.input[0].name
        (['Conv', 'Relu', 'Flatten', 'Gemm'], 'image')
    """
    global _exporting
    onnx = _onnx()
    if unsupported:
        raise TypeError(f"[onnx.export] unsupported arguments: {sorted(unsupported)}")
    if dynamic_shapes is not None:
        raise OnnxExporterError("[onnx.export] dynamic_shapes is not supported; use dynamic_axes")
    if training not in (TrainingMode.EVAL, TrainingMode.PRESERVE, None) and training != 0:
        raise OnnxExporterError(f"[onnx.export] flambeau exports in eval mode only, got training={training!r}")
    opset = DEFAULT_OPSET if opset_version is None else opset_version
    if not isinstance(opset, int) or isinstance(opset, bool):
        raise TypeError(f"[onnx.export] opset_version must be an int, got {type(opset_version).__name__}")
    if not MIN_OPSET <= opset <= MAX_OPSET:
        raise ValueError(f"[onnx.export] opset_version must be in [{MIN_OPSET}, {MAX_OPSET}], got {opset}")
    if not callable(model):
        raise TypeError(f"[onnx.export] model must be a Module or a callable, got {type(model).__name__}")
    pos, kw = _flatten_args(args)
    if kwargs:
        kw.update(kwargs)
    tensors = [a for a in (*pos, *kw.values()) if isinstance(a, fc.Tensor)]
    if not tensors:
        raise ValueError("[onnx.export] args must contain at least one Tensor input")

    params: dict[int, tuple[str, fc.Tensor]] = {}
    for getter in ("named_parameters", "named_buffers"):
        if hasattr(model, getter):
            for name, t in getattr(model, getter)():
                if t is not None:
                    params.setdefault(id(t), (name, t))

    was_training = getattr(model, "training", None)
    if was_training:
        model.eval()
    _exporting = True
    try:
        with fc.no_grad() if hasattr(fc, "no_grad") else _no_grad(), OpRecorder() as rec:
            result = model(*pos, **kw)
    finally:
        _exporting = False
        if was_training:
            model.train(True)
    outputs = _outputs(result)

    in_names = list(input_names) if input_names else _input_names(model, len(tensors))
    if len(in_names) < len(tensors):
        in_names += [f"input_{i}" for i in range(len(in_names), len(tensors))]
    out_names = (
        list(output_names)
        if output_names
        else (["output"] if len(outputs) == 1 else [f"output_{i}" for i in range(len(outputs))])
    )
    if len(out_names) < len(outputs):
        out_names += [f"output_{i}" for i in range(len(out_names), len(outputs))]
    if len(in_names) > len(tensors) or len(out_names) > len(outputs):
        raise ValueError(
            f"[onnx.export] got {len(in_names)} input names for {len(tensors)} inputs and {len(out_names)} "
            f"output names for {len(outputs)} outputs"
        )
    shapes = {n: tuple(t.shape) for n, t in zip(in_names, tensors, strict=True)} | {
        n: tuple(t.shape) for n, t in zip(out_names, outputs, strict=True)
    }
    dims = _dynamic_dims(dynamic_axes, in_names + out_names, shapes)

    g = _Graph(onnx, opset, params, do_constant_folding, export_params)
    for name, t in zip(in_names, tensors, strict=True):
        if id(t) in g.names:
            raise ValueError(f"[onnx.export] the same tensor is passed as two inputs ({g.names[id(t)]!r}, {name!r})")
        g.bind(t, name)
        g.inputs.append(name)
    for call in rec.calls:
        _emit(g, call)

    graph_outputs = []
    for name, t in zip(out_names, outputs, strict=True):
        value = g.value(t)
        producer = next((n for n in g.nodes if value in n.output), None)
        if producer is not None and value not in out_names and value not in g.inputs:
            _rename(g, value, name)
        else:
            g.nodes.append(onnx.helper.make_node("Identity", [value], [name], name=f"/Identity_{name}"))
        graph_outputs.append(g._value_info(name, t, dims.get(name, {})))
    graph_inputs = [g._value_info(name, t, dims.get(name, {})) for name, t in zip(in_names, tensors, strict=True)]
    graph_inputs += g.param_inputs
    if keep_initializers_as_inputs:
        graph_inputs += [onnx.helper.make_tensor_value_info(i.name, i.data_type, list(i.dims)) for i in g.initializers]
    graph = onnx.helper.make_graph(
        g.nodes, type(model).__name__, graph_inputs, graph_outputs, initializer=g.initializers
    )
    opsets = [onnx.helper.make_opsetid("", opset)]
    proto = onnx.helper.make_model(
        graph,
        opset_imports=opsets,
        producer_name="flambeau",
        producer_version=getattr(fc, "__version__", ""),
        ir_version=max(8, onnx.helper.find_min_ir_version_for(opsets)),
    )
    if verbose:
        print(onnx.helper.printable_graph(proto.graph))
    if f is not None:
        data = proto.SerializeToString()
        if isinstance(f, (str, os.PathLike)):
            with open(f, "wb") as fh:
                fh.write(data)
        elif hasattr(f, "write"):
            f.write(data)
        else:
            raise TypeError(f"[onnx.export] f must be a path or a binary file object, got {type(f).__name__}")
    return proto


class _no_grad:  # noqa: N801 (a stand-in when core has no grad mode switch)
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None


def _emit(g: _Graph, call: OpCall) -> None:
    """Adds the nodes of one recorded call, or folds it when it reads no graph input."""
    tensor_args = [a for a in (*call.args, *call.kwargs.values()) if isinstance(a, fc.Tensor)]
    for a in (*call.args, *call.kwargs.values()):
        if isinstance(a, (list, tuple)):
            tensor_args += [t for t in a if isinstance(t, fc.Tensor)]
    dynamic = any(g.is_dynamic(a) for a in tensor_args)
    if call.name in _READS:
        if dynamic:
            raise OnnxExporterError(
                f"[onnx.export] the model reads the value of a traced tensor (Tensor.{call.name}): data-dependent "
                "control flow cannot be exported; compute with tensor ops instead"
            )
        return
    if not dynamic and g.fold:
        return  # its results are constants: g.value embeds them when a later op reads them
    mapping = _MAPPINGS.get(call.name)
    if mapping is None:
        raise UnsupportedOperatorError(
            f"[onnx.export] Exporting the operator '{call.name}' to ONNX opset version {g.opset} is not supported"
        )
    names = mapping(g, call)
    results = list(call.result) if isinstance(call.result, (tuple, list)) else [call.result]
    for r, name in zip(results, names, strict=False):
        if name is not None and isinstance(r, fc.Tensor):
            g.bind(r, name)
    for r, name in zip(results, names, strict=False):
        if name is None and isinstance(r, fc.Tensor):
            g.unusable[id(r)] = call.name


def _rename(g: _Graph, old: str, new: str) -> None:
    for node in g.nodes:
        for i, name in enumerate(node.input):
            if name == old:
                node.input[i] = new
        for i, name in enumerate(node.output):
            if name == old:
                node.output[i] = new
