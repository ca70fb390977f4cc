"""``flambeau.onnx``: export a model to ONNX (``torch.onnx.export``), checked by ONNX Runtime in the tests.

:func:`export` runs the model in eval mode under core's op recorder
(``flambeau_core._trace``, Note [Op recorder]): every op the model's Python
code calls is seen with its arguments and result, the ops are mapped to ONNX
nodes (``_ops``, ``_indexing``, ``_recurrent``, ``_losses``), parameters and
buffers become initializers, and the ``ModelProto`` is written with the
``onnx`` package (an optional dependency: ``pip install onnx``). See
``docs/tutorials/onnx-export.md``.

It is a tracer, as PyTorch's TorchScript exporter: Python control flow is
unrolled for the example inputs. Numbers the model computes from shapes
(``x.size(0)``) follow the inputs' ``dynamic_axes`` through a second run
(Note [Sizes from a second trace] in ``_graph.py``). Reading a traced tensor's
value (``if x.sum() > 0``, ``x.item()``) is data-dependent control flow and raises.

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
import os
import warnings
from collections.abc import Mapping, Sequence
from typing import Any

import flambeau_core as fc
from flambeau_autograd import no_grad
from flambeau_core._trace import OpCall, OpRecorder

from flambeau.onnx import _indexing, _losses, _ops, _recurrent  # noqa: F401 (they register their mappings)
from flambeau.onnx._graph import OnnxExporterError, UnsupportedOperatorError, _emit, _Graph, _rename, _tensors_in

__all__ = [
    "OnnxExporterError",
    "TrainingMode",
    "UnsupportedOperatorError",
    "export",
    "is_in_onnx_export",
]

DEFAULT_OPSET = 18
MIN_OPSET, MAX_OPSET = 13, 21


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


# ------------------------------------------------------------------ export


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


def _trace(model: Any, pos: tuple[Any, ...], kw: dict[str, Any]) -> tuple[Any, list[OpCall]]:
    global _exporting
    _exporting = True
    try:
        with no_grad(), OpRecorder() as rec:
            result = model(*pos, **kw)
    finally:
        _exporting = False
    return result, rec.calls


def _names(
    model: Any, input_names: Sequence[str] | None, output_names: Sequence[str] | None, n_in: int, n_out: int
) -> tuple[list[str], list[str]]:
    in_names = list(input_names) if input_names else _input_names(model, n_in)
    in_names += [f"input_{i}" for i in range(len(in_names), n_in)]
    if output_names:
        out_names = list(output_names)
    else:
        out_names = ["output"] if n_out == 1 else [f"output_{i}" for i in range(n_out)]
    out_names += [f"output_{i}" for i in range(len(out_names), n_out)]
    if len(in_names) > n_in or len(out_names) > n_out:
        raise ValueError(
            f"[onnx.export] got {len(in_names)} input names for {n_in} inputs and {len(out_names)} "
            f"output names for {n_out} outputs"
        )
    return in_names, out_names


def _pair(a: Any, b: Any, twins: dict[int, Any]) -> bool:
    """Pairs the tensors of one trace's call with the other's; False where their structures differ."""
    if isinstance(a, fc.Tensor):
        if not isinstance(b, fc.Tensor):
            return False
        twins[id(a)] = b
        return True
    if isinstance(a, (list, tuple)):
        if not isinstance(b, (list, tuple)) or len(a) != len(b):  # sizes may differ: a list of tensors may not
            return isinstance(b, (list, tuple)) and not _tensors_in(a) and not _tensors_in(b)
        return all(_pair(x, y, twins) for x, y in zip(a, b, strict=True))
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(_pair(a[k], b[k], twins) for k in a)
    return True


def _parts(call: OpCall) -> tuple[Any, ...]:
    return call.args, call.kwargs or {}, call.result, call.before


def _second_trace(
    model: Any,
    pos: tuple[Any, ...],
    kw: dict[str, Any],
    inputs: dict[str, fc.Tensor],
    dims: dict[str, dict[int, str]],
    calls: list[OpCall],
    rng: Any,
) -> tuple[dict[int, Any], list[OpCall] | None]:
    """The model run again with larger dynamic dims, paired with the first run (Note [Sizes from a second trace])."""
    if not dims:
        return {}, None
    symbols = list(dict.fromkeys(s for axes in dims.values() for s in axes.values()))
    attempts = [{s: k + 2 for k, s in enumerate(symbols)}]
    if len(symbols) > 1:  # the model may need two differently named dims to stay equal
        attempts.append(dict.fromkeys(symbols, 2))
    why = ""
    for attempt, factors in enumerate(attempts):
        bigger = {}
        for name, t in inputs.items():
            for axis, symbol in dims.get(name, {}).items():
                t = fc.cat([t] * factors[symbol], axis)
            bigger[id(inputs[name])] = t
        fc.set_rng_state(rng)
        try:
            _, calls2 = _trace(
                model,
                tuple(bigger.get(id(a), a) for a in pos),
                {k: bigger.get(id(v), v) for k, v in kw.items()},
            )
        except Exception as e:
            why = f"it raised {type(e).__name__}: {e}"
            continue
        twins: dict[int, Any] = {}
        if len(calls2) == len(calls) and all(
            c1.name == c2.name and _pair(_parts(c1), _parts(c2), twins) for c1, c2 in zip(calls, calls2, strict=True)
        ):
            twins.update({id(t): bigger[id(t)] for t in inputs.values()})
            if attempt:
                warnings.warn(
                    f"[onnx.export] the model did not run with its dynamic dims {symbols} grown apart ({why}), "
                    "only grown together: a size computed from one of them may be read from another, so the file "
                    "is right where they keep the example's proportions",
                    stacklevel=3,
                )
            return twins, calls2
        why = "it called other ops: its Python control flow depends on the sizes"
    warnings.warn(
        "[onnx.export] sizes the model computes from its inputs' shapes are fixed in the file, so it runs only at "
        f"the example's sizes: running the model with larger dynamic_axes dims failed ({why})",
        stacklevel=3,
    )
    return {}, None


def _free_data_dependent_dims(onnx: Any, proto: Any) -> None:
    """Makes symbolic the output dims that follow a count of nonzero elements (NonZero, Compress), as dynamic_axes
    would: they are those ONNX's shape inference cannot give once the example's sizes are taken off the outputs."""
    bare = onnx.ModelProto()
    bare.CopyFrom(proto)
    for out in bare.graph.output:
        out.type.tensor_type.ClearField("shape")
    inferred = onnx.shape_inference.infer_shapes(bare)
    for out, got in zip(proto.graph.output, inferred.graph.output, strict=True):
        if not got.type.tensor_type.HasField("shape"):
            continue
        inferred_dims = got.type.tensor_type.shape.dim
        for i, (dim, found) in enumerate(zip(out.type.tensor_type.shape.dim, inferred_dims, strict=True)):
            if dim.HasField("dim_value") and not found.HasField("dim_value"):
                dim.dim_param = f"{out.name}_dynamic_axes_{i + 1}"


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
    ``{"x": [0]}``) makes those dims of inputs and outputs symbolic; the model then runs a second time with
    those dims larger, so that sizes it computes from them (``x.view(x.size(0), -1)``) are read from the
    graph's shapes (if that run fails, a warning says the sizes stay fixed). Tensors made inside ``forward``
    are constants, with a warning, unless their shape follows a dynamic dim (then a fill or an arange is
    rebuilt in the graph). The file is written to ``f`` (a path
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
    rng = fc.get_rng_state()  # the second run starts from it too: a random factory gives the same values
    try:
        result, calls = _trace(model, pos, kw)
        after = fc.get_rng_state()
        outputs = _outputs(result)
        in_names, out_names = _names(model, input_names, output_names, len(tensors), len(outputs))
        shapes = {n: tuple(t.shape) for n, t in zip(in_names, tensors, strict=True)} | {
            n: tuple(t.shape) for n, t in zip(out_names, outputs, strict=True)
        }
        dims = _dynamic_dims(dynamic_axes, in_names + out_names, shapes)
        input_dims = {n: dims[n] for n in in_names if dims.get(n)}
        inputs = dict(zip(in_names, tensors, strict=True))
        twins, twin_calls = _second_trace(model, pos, kw, inputs, input_dims, calls, rng)
        fc.set_rng_state(after)
    finally:
        if was_training:
            model.train(True)

    results = {id(r) for call in calls for r in _tensors_in([call.result])}
    g = _Graph(onnx, opset, params, do_constant_folding, export_params, twins, results)
    for name, t in zip(in_names, tensors, strict=True):
        if id(t) in g.names:
            raise ValueError(f"[onnx.export] the same tensor is passed as two inputs ({g.names[id(t)]!r}, {name!r})")
        g.bind(t, name)
        g.from_inputs.add(name)
        g.inputs.append(name)
    for i, call in enumerate(calls):
        _emit(g, call, twin_calls[i] if twin_calls else None)
    if g.constants_made_in_forward:
        warnings.warn(
            "[onnx.export] the model uses tensors that are neither inputs, parameters nor buffers; they are "
            f"constants in the file, fixed to the values of this run: {'; '.join(g.constants_made_in_forward)}",
            stacklevel=2,
        )

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
    if any(node.op_type in ("NonZero", "Compress") for node in g.nodes):
        _free_data_dependent_dims(onnx, proto)
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
