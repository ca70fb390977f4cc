"""add_graph's GraphDef: a module's structure (its submodule tree, parameters and buffers), not its op graph.

Each module is a name scope (``Net/Sequential[features]/Conv2d[0]``, PyTorch's
scope naming), holding one node per parameter and buffer (with its shape) and,
for a leaf module, one node for its forward call, whose inputs are its
parameters. Given an example input, the model runs once (eval mode, no_grad) with forward hooks:
each leaf call's node gets the output shapes and edges from the node whose
output it consumed (found by tensor identity; a tensor made by a functional op
between two modules is attributed to the leaf module that ran last, the usual
``x = F.relu(self.conv(x))`` pattern).
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

from flambeau_core import FlambeauError

from . import _proto

_WHERE = "SummaryWriter.add_graph"


def _tensors(value: Any) -> Iterator[Any]:
    """The tensors in a (nested) tuple, list or dict of outputs or inputs."""
    if hasattr(value, "shape") and hasattr(value, "dtype"):
        yield value
    elif isinstance(value, (tuple, list)):
        for item in value:
            yield from _tensors(item)
    elif isinstance(value, dict):
        for item in value.values():
            yield from _tensors(item)


def _shape(tensor: Any) -> list[int]:
    return [int(d) for d in tensor.shape]


def module_graph(model: Any, input_to_model: Any = None) -> tuple[bytes, list[str]]:
    """The GraphDef bytes of ``model`` and a readable line per node (what ``verbose=True`` prints)."""
    if not (hasattr(model, "named_modules") and hasattr(model, "named_parameters")):
        raise TypeError(f"[{_WHERE}] expected an nn.Module, got {type(model).__name__}")
    root = model._get_name() if hasattr(model, "_get_name") else type(model).__name__
    scopes: dict[str, str] = {}  # module path -> name scope
    leaves: list[tuple[str, Any]] = []
    nodes: dict[str, dict[str, Any]] = {}  # name -> {"op", "inputs", "attrs"}, in insertion order

    for path, module in model.named_modules():
        if path:
            parent_path, _, attr = path.rpartition(".")
            scope = f"{scopes[parent_path]}/{module._get_name()}[{attr}]"
        else:
            scope = root
        scopes[path] = scope
        own = [(n, p, "Parameter") for n, p in module.named_parameters(recurse=False)]
        own += [(n, b, "Buffer") for n, b in module.named_buffers(recurse=False) if b is not None]
        for name, tensor, op in own:
            nodes[f"{scope}/{name}"] = {
                "op": op,
                "inputs": [],
                "attrs": {
                    "_output_shapes": _proto.attr_shapes([_shape(tensor)]),
                    "dtype": _proto.attr_string(str(tensor.dtype)),
                },
            }
        if not any(True for _ in module.children()):
            leaves.append((scope, module))

    def add_call(scope: str, module: Any, data_inputs: list[str], out_shapes: list[list[int]] | None) -> str:
        name, count = f"{scope}/forward", 1
        while name in nodes:
            name, count = f"{scope}/forward.{count}", count + 1
        params = [f"{scope}/{n}" for n, _ in module.named_parameters(recurse=False)]
        params += [f"{scope}/{n}" for n, b in module.named_buffers(recurse=False) if b is not None]
        attrs = {"attr": _proto.attr_string(module.extra_repr() if hasattr(module, "extra_repr") else "")}
        if out_shapes is not None:
            attrs["_output_shapes"] = _proto.attr_shapes(out_shapes)
        nodes[name] = {"op": module._get_name(), "inputs": [*data_inputs, *params], "attrs": attrs}
        return name

    if input_to_model is None:
        for scope, module in leaves:
            add_call(scope, module, [], None)
    else:
        _trace(model, input_to_model, leaves, nodes, add_call)

    graph = _proto.graph_def([_proto.node_def(name, n["op"], n["inputs"], n["attrs"]) for name, n in nodes.items()])
    lines = [f"{name} = {n['op']}({', '.join(n['inputs'])})" for name, n in nodes.items()]
    return graph, lines


def _trace(model: Any, input_to_model: Any, leaves: list, nodes: dict, add_call: Any) -> None:
    """Runs the model once with forward hooks on its leaf modules, adding a node per leaf call."""
    inputs = input_to_model if isinstance(input_to_model, (tuple, list)) else (input_to_model,)
    producer: dict[int, str] = {}
    keep_alive: list[Any] = []  # ids stay unique while the tensors they name live
    for i, tensor in enumerate(_tensors(inputs)):
        name = f"input/input.{i}"
        nodes[name] = {"op": "IO Node", "inputs": [], "attrs": {"_output_shapes": _proto.attr_shapes([_shape(tensor)])}}
        producer[id(tensor)] = name
        keep_alive.append(tensor)
    last = [next(iter(producer.values()), None)]

    def hook_for(scope: str) -> Any:
        def hook(module: Any, args: Any, output: Any) -> None:
            sources = []
            for tensor in _tensors(args):
                source = producer.get(id(tensor), last[0])
                if source is not None and source not in sources:
                    sources.append(source)
            outs = list(_tensors(output))
            name = add_call(scope, module, sources, [_shape(t) for t in outs])
            for tensor in outs:
                producer[id(tensor)] = name
                keep_alive.append(tensor)
            last[0] = name

        return hook

    handles = [module.register_forward_hook(hook_for(scope)) for scope, module in leaves]
    # In eval mode, as PyTorch traces: the run must not update BatchNorm's statistics or drop units.
    training = [(m, m.training) for _, m in model.named_modules()]
    model.train(False)
    try:
        import flambeau_autograd

        with flambeau_autograd.no_grad():
            output = model(*inputs)
    except Exception as e:
        raise FlambeauError(f"[{_WHERE}] running the model on input_to_model failed: {type(e).__name__}: {e}") from e
    finally:
        for handle in handles:
            handle.remove()
        for module, mode in training:
            module.training = mode
    for i, tensor in enumerate(_tensors(output)):
        source = producer.get(id(tensor), last[0])
        nodes[f"output/output.{i}"] = {
            "op": "IO Node",
            "inputs": [source] if source is not None else [],
            "attrs": {"_output_shapes": _proto.attr_shapes([_shape(tensor)])},
        }
