"""The ONNX graph :func:`flambeau.onnx.export` builds from the recorded op calls, and the op-mapping registry.

Note [Sizes from a second trace]
The recorder sees the numbers a model computes from shapes (``x.view(x.size(0), -1)``,
``fb.zeros(x.size(0), 16)``, ``x[:, : x.size(1) - 1]``) as plain ints: nothing says that 3 came from
``x.size(0)``. When ``dynamic_axes`` makes some input dims symbolic, ``export`` therefore runs the model
a second time on inputs whose symbolic dims are larger (the example repeated along them, so the values
stay valid: token ids in range, masks of the same kind) and pairs the two traces call by call. A number
that is the same in both traces is a constant; one that differs is a size, and its *fingerprint* (its
value in the first trace, its value in the second) says which: the graph remembers where each dynamic
size can be read (a graph input's dim, a result's dim) by fingerprint, and emits ``Shape`` for it, or a
product, multiple, quotient or offset of such sizes (``B * T``, ``B * heads``, ``T // 2``, ``T + 1``).
Each symbolic dim gets its own multiplier (2, 3, ...), so two dims that happen to be equal in the
example (a batch of 4 and 4 heads) still have different fingerprints. Tensors made inside ``forward``
(factories: ``fb.zeros(x.size(0), 16)``, ``fb.arange(T)``) are paired the same way: one whose shape
differs between the traces is rebuilt in the graph (``ConstantOfShape`` for a fill, ``Range`` for an
arange) or refused. Both runs start from the same random state, so a random factory gives the same
values in both: a tensor made in forward whose values differ follows the sizes, and is refused rather
than made a constant. Without ``dynamic_axes`` every size is fixed and one trace suffices. A count of true
elements (``x[mask]``, ``nonzero``) follows the mask's values, not the sizes: its fingerprint is no source
(``note_counts``), even where it equals a size's in both traces.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import flambeau_core as fc
import numpy as np
from flambeau_core._trace import OpCall

INT64_MAX = 2**63 - 1


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


OnnxExporterError.__module__ = UnsupportedOperatorError.__module__ = "flambeau.onnx"


def _np_dtype(dtype: Any) -> np.dtype:
    return fc.empty(0, dtype=dtype).numpy().dtype


def _array(t: fc.Tensor) -> np.ndarray:
    return np.ascontiguousarray(t.detach().cpu().numpy())


Pair = tuple[int, int]  # a number's value in the example trace and in the second trace


class _Graph:
    """The ONNX graph being built from the recorded op calls."""

    def __init__(
        self,
        onnx: Any,
        opset: int,
        params: dict[int, tuple[str, fc.Tensor]],
        fold: bool,
        export_params: bool,
        twins: dict[int, Any] | None = None,
        results: set[int] | None = None,
    ) -> None:
        self.onnx = onnx
        self.opset = opset
        self.params = params  # id -> (name, tensor): made initializers (or inputs) when first used
        self.fold = fold
        self.export_params = export_params
        self.twins = twins or {}  # id(object of the example trace) -> the same object in the second trace
        self.results = results or set()  # ids of every recorded call's results
        self.from_factories: set[int] = set()  # ids of folded results computed from tensors made in forward
        self.twin_call: OpCall | None = None  # the second trace's call paired with the one being mapped
        self.names: dict[int, str] = {}  # id(tensor) -> value name
        self.dynamic: set[str] = set()  # values computed in the graph (from the inputs' values or sizes)
        self.from_inputs: set[str] = set()  # values that depend on the inputs' values, not only their sizes
        self.unusable: dict[int, str] = {}  # id -> the op whose result this is, with no ONNX value
        self.storages: set[int] = set()  # the memory of the tensors computed from the inputs
        self.sizes: dict[Pair, tuple[str, int]] = {}  # a dynamic size's fingerprint -> (value, axis) holding it
        self.counts: set[Pair] = set()  # fingerprints of counts of true elements: no size is read from them
        self._size_values: dict[Pair, str] = {}
        self.constants_made_in_forward: list[str] = []  # descriptions, for the warning export gives
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
        if not isinstance(obj, fc.Tensor):
            return False
        if self.names.get(id(obj)) in self.dynamic or id(obj) in self.unusable:
            return True
        if id(obj) in self.names or id(obj) in self.params:
            return False
        # A view of a traced tensor the recorder did not report (refused by value()), or a tensor made in
        # forward whose shape follows an input's (rebuilt from the input's shape by value()).
        return obj._storage_ptr in self.storages or self.twin_shape(obj) != tuple(obj.shape)

    def reads_inputs(self, obj: Any) -> bool:
        """Whether a tensor's values depend on the inputs' values (a size-only computation does not)."""
        if not isinstance(obj, fc.Tensor):
            return False
        if id(obj) in self.names:
            return self.names[id(obj)] in self.from_inputs
        return id(obj) in self.unusable or (id(obj) not in self.params and obj._storage_ptr in self.storages)

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
        # A tensor no mapped op made: a factory's result inside forward, a tensor attribute, or a folded result.
        name = self._made_in_forward(obj)
        self.names[key] = name
        return name

    def _made_in_forward(self, t: fc.Tensor) -> str:
        if id(t) not in self.results and t._storage_ptr in self.storages:
            # A view the recorder did not report: its values are the inputs', and a constant would be wrong.
            raise OnnxExporterError(
                f"[onnx.export] the model uses a {tuple(t.shape)} view of a tensor computed from its inputs, made by "
                "an op the op recorder does not report (such as x.data or x.detach()): "
                "it cannot be exported; write it with transpose, permute, slicing or expand"
            )
        a = _array(t)
        twin = self.twins.get(id(t))
        if twin is not None and tuple(twin.shape) != tuple(t.shape):
            return self._rebuild(t, a, _array(twin))
        if twin is not None and not np.array_equal(a, _array(twin), equal_nan=True):
            # Both runs start from the same random state, so a random factory gives the same values in both.
            raise OnnxExporterError(
                f"[onnx.export] the model makes a {tuple(t.shape)} tensor inside forward whose values follow the "
                "input's sizes (they differ when the dynamic dims grow): as a constant it would be wrong at other "
                "sizes; compute it from the input with tensor ops"
            )
        if id(t) not in self.results or id(t) in self.from_factories:
            self.constants_made_in_forward.append(f"a {tuple(t.shape)} {_describe(a)}")
        return self.constant(a)

    def _rebuild(self, t: fc.Tensor, a: np.ndarray, b: np.ndarray) -> str:
        """A tensor made in forward with a shape from the input's: a fill or an arange, computed in the graph."""
        shape = self.shape_value(list(zip(t.shape, b.shape, strict=True)))
        if shape is not None and a.size and b.size and np.all(a == a.flat[0]) and np.all(b == a.flat[0]):
            fill = self.onnx.numpy_helper.from_array(a.reshape(-1)[:1].copy(), "value")
            return self.node("ConstantOfShape", [shape], value=fill)[0]
        if shape is not None and a.ndim == 1 and a.size > 1 and b.size > 1:
            start, step = a[0], a[1] - a[0]
            if all(np.array_equal(v, start + step * np.arange(v.size)) for v in (a, b)):
                n = self.node("Squeeze", [shape, self.ints([0])])[0]
                if a.dtype != np.int64:
                    n = self.node("Cast", [n], to=self.onnx.helper.np_dtype_to_tensor_dtype(a.dtype))[0]
                s = self.constant(np.asarray(start, a.dtype))
                d = self.constant(np.asarray(step, a.dtype))
                end = self.node("Add", [s, self.node("Mul", [n, d])[0]])[0]
                return self.node("Range", [s, end, d])[0]
        raise OnnxExporterError(
            f"[onnx.export] the model makes a tensor inside forward whose shape follows the input's "
            f"({tuple(t.shape)} here, {tuple(b.shape)} for larger dynamic dims) and whose values are neither a fill "
            "(fb.zeros, fb.ones, fb.full) nor an arange: it cannot be rebuilt in the graph; make it from the input "
            "with tensor ops (fb.zeros_like(x), x.new_zeros) or pass it as an input"
        )

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
        if result._storage_ptr:  # empty tensors may share address 0
            self.storages.add(result._storage_ptr)
        for axis, pair in enumerate(self.size_pairs(result)):
            if pair[0] != pair[1] and pair not in self.counts:
                self.sizes.setdefault(pair, (name, axis))

    def note_counts(self, result: fc.Tensor) -> None:
        """Marks the new dynamic dims of a result whose size is a count of true elements (x[mask], nonzero): such a
        dim follows the mask's values, so a number equal to it at both sizes (``b * t``) is not read from it, and
        one read from it (``y.view(y.size(0), -1)``) has no source (a reshape makes it -1)."""
        self.counts.update(p for p in self.size_pairs(result) if p[0] != p[1] and p not in self.sizes)

    def _onnx_type(self, dtype: Any) -> int:
        return self.onnx.helper.np_dtype_to_tensor_dtype(_np_dtype(dtype))

    def _value_info(self, name: str, t: fc.Tensor, dims: Mapping[int, str]) -> Any:
        shape = [dims.get(i, s) for i, s in enumerate(t.shape)]
        return self.onnx.helper.make_tensor_value_info(name, self._onnx_type(t.dtype), shape)

    # -------------------------------------------------------------- sizes (Note [Sizes from a second trace])
    def twin_shape(self, t: fc.Tensor) -> tuple[int, ...]:
        twin = self.twins.get(id(t))
        return tuple(twin.shape) if twin is not None else tuple(t.shape)

    def size_pairs(self, t: fc.Tensor) -> list[Pair]:
        return list(zip(t.shape, self.twin_shape(t), strict=False))

    def twin_args(self, call: OpCall, *params: tuple[str, Any]) -> list[Any]:
        """The arguments of the second trace's call (the example's where there is one trace)."""
        return _arguments(self.twin_call or call, *params)

    def size(self, pair: Pair) -> str | None:
        """A 1-element int64 value of a dynamic size, read from the graph's shapes; None where none gives it."""
        if pair in self._size_values:
            return self._size_values[pair]
        if pair in self.counts:
            return None
        v1, v2 = pair
        out = None
        if pair in self.sizes:
            name, axis = self.sizes[pair]
            if self.opset >= 15:
                out = self.node("Shape", [name], start=axis, end=axis + 1)[0]
            else:
                out = self.node("Gather", [self.node("Shape", [name])[0], self.ints([axis])], axis=0)[0]
        else:
            known = [p for p in self.sizes if p != pair]
            for a in known:  # B * T
                for b in known:
                    if a <= b and a[0] * b[0] == v1 and a[1] * b[1] == v2:
                        out = self.node("Mul", [self.size(a), self.size(b)])[0]
                        break
                if out:
                    break
            for a1, a2 in known if out is None else ():
                if a1 and a2 and v1 % a1 == 0 and v2 % a2 == 0 and v1 // a1 == v2 // a2:  # B * heads
                    out = self.node("Mul", [self.size((a1, a2)), self.ints([v1 // a1])])[0]
                elif v1 and v2 and a1 % v1 == 0 and a2 % v2 == 0 and a1 // v1 == a2 // v2:  # T // 2
                    out = self.node("Div", [self.size((a1, a2)), self.ints([a1 // v1])])[0]
                elif v1 - a1 == v2 - a2:  # T + 1
                    out = self.node("Add", [self.size((a1, a2)), self.ints([v1 - a1])])[0]
                if out:
                    break
        if out is not None:
            self._size_values[pair] = out
        return out

    def shape_value(self, pairs: Sequence[Pair]) -> str | None:
        """A 1-D int64 value of sizes (constants, or read from the graph's shapes); None if one has no source."""
        if all(a == b for a, b in pairs):
            return self.ints([a for a, _ in pairs])
        pieces: list[str] = []
        run: list[int] = []
        for a, b in pairs:
            if a == b:
                run.append(a)
                continue
            if run:
                pieces.append(self.ints(run))
                run = []
            s = self.size((a, b))
            if s is None:
                return None
            pieces.append(s)
        if run:
            pieces.append(self.ints(run))
        return pieces[0] if len(pieces) == 1 else self.node("Concat", pieces, axis=0)[0]


def _describe(a: np.ndarray) -> str:
    if a.size and np.all(a == a.flat[0]):
        return f"tensor filled with {a.flat[0].item()!r} (fb.zeros/fb.ones/fb.full)"
    if a.ndim == 1 and a.size > 1 and np.array_equal(a, a[0] + (a[1] - a[0]) * np.arange(a.size)):
        return "arange (fb.arange)"
    return "tensor"


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
            out.append((call.kwargs or {}).get(name, default))
    return out


def _unsupported(g: _Graph, call: OpCall, why: str) -> UnsupportedOperatorError:
    return UnsupportedOperatorError(
        f"[onnx.export] Exporting the operator '{call.name}' to ONNX opset version {g.opset} is not supported: {why}"
    )


_READS = {"item", "tolist", "__bool__", "__float__", "__int__"}


def _tensors_in(values: Any) -> list[fc.Tensor]:
    out = []
    for a in values:
        if isinstance(a, fc.Tensor):
            out.append(a)
        elif isinstance(a, (list, tuple)):
            out += _tensors_in(a)
    return out


def _same_in_both_runs(g: _Graph, call: OpCall, twin: OpCall | None) -> bool:
    """Whether a call's results (not views of graph values) are equal in both traces: then they are constants."""
    if twin is None:
        return False
    results, twins = _tensors_in([call.result]), _tensors_in([twin.result])
    return len(results) == len(twins) and all(
        r._storage_ptr not in g.storages
        and tuple(r.shape) == tuple(t.shape)
        and np.array_equal(_array(r), _array(t), equal_nan=True)
        for r, t in zip(results, twins, strict=True)
    )


def _emit(g: _Graph, call: OpCall, twin: OpCall | None = None) -> None:
    """Adds the nodes of one recorded call, or folds it when it reads no graph input."""
    tensors = _tensors_in((*call.args, *(call.kwargs or {}).values()))
    dynamic = any(g.is_dynamic(a) for a in tensors)
    reads = any(g.reads_inputs(a) for a in tensors)
    if call.name in _READS:
        if reads:
            raise OnnxExporterError(
                f"[onnx.export] the model reads the value of a traced tensor (Tensor.{call.name}): data-dependent "
                "control flow cannot be exported; compute with tensor ops instead"
            )
        return
    mapping = _MAPPINGS.get(call.name)
    # An unmapped call on sizes only (nn.TransformerEncoder checking that a mask made from x.size(1) is the
    # causal mask) whose results are the same at both sizes is folded, as PyTorch's tracer folds it; a mapped
    # one stays in the graph, right at every size.
    if g.fold and (not dynamic or (mapping is None and not reads and _same_in_both_runs(g, call, twin))):
        # Its results are constants: g.value embeds them when a later op reads them (with a warning when they
        # come from tensors made in forward, as from the tensors themselves).
        if any(id(a) not in g.results and id(a) not in g.params or id(a) in g.from_factories for a in tensors):
            g.from_factories.update(id(r) for r in _tensors_in([call.result]))
        return
    if mapping is None:
        raise UnsupportedOperatorError(
            f"[onnx.export] Exporting the operator '{call.name}' to ONNX opset version {g.opset} is not supported"
        )
    g.twin_call = twin
    names = mapping(g, call)
    results = list(call.result) if isinstance(call.result, (tuple, list)) else [call.result]
    for r, name in zip(results, names, strict=False):
        if name is not None and isinstance(r, fc.Tensor):
            g.bind(r, name)
            if reads:
                g.from_inputs.add(name)
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
