"""Replaying a captured graph: its ops called directly on the new inputs, nothing else of the function runs.

Note [Replay program]
:class:`Program` turns a :class:`~flambeau.compiler._graph.Graph` into one generated Python function of the
call's input tensors: a line per node, calling the op's callable with the constants (parameters, buffers,
Python values) bound as the function's globals and the inputs and earlier results as locals
(``v3 = linear(i0, c0, c1)``), then ``return`` of the output structure. No module ``__call__``, hook, or Python
control flow of the user's function runs, and no interpreter loop over the nodes either: each op costs its
own call. Each value is dropped (``del``) after its last reader, as eager code drops it, so the caching
allocator reuses its block for the next result. Autograd records the ops as it does in eager (they are the
same calls), and a random op draws fresh numbers each time. A change of grad mode inside the function
(``with fb.no_grad():``) is a line of its own, undone on an exception. A training step's ``.grad`` reads and
writes (Note [Captured backward]) are attribute accesses (``v3 = c0.grad``, ``c0.grad = None``), and a read
nothing uses (``zero_grad(set_to_none=True)`` reads each ``.grad`` before dropping it) is no line at all.
An embedding table's gradient is written by the program itself, into a buffer it keeps from call to call
(Note [Reused table gradients] in ``_table_grads.py``).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from flambeau_core._C import _set_grad_enabled

from ._graph import Graph, Ref, refs_in, same_kind
from ._live import Live
from ._table_grads import TableSgd, plan


class Program:
    """The replay of a :class:`Graph` (Note [Replay program]); ``run(*inputs)`` returns the function's result.

    ``source`` is the generated code, for reading.
    """

    __slots__ = ("run", "source")

    def __init__(self, graph: Graph, grad_enabled: bool) -> None:
        env: dict[str, Any] = {"_set_grad_enabled": _set_grad_enabled}
        ids: dict[int, str] = {}

        def const(obj: Any, hint: str = "c") -> str:
            name = ids.get(id(obj))
            if name is None:
                name = ids[id(obj)] = f"{hint}{len(env)}"
                env[name] = obj
            return name

        def expr(a: Any) -> str:
            if type(a) is Live:  # a param group's setting, read now (Note [Live hyperparameters])
                return a.source(const(a.group, "g"))
            if isinstance(a, Ref):
                if a.kind == "const":
                    return const(graph.constants[a.index])
                return f"{a.kind[0]}{a.index}"
            if type(a) is list:
                return "[" + "".join(f"{expr(x)}, " for x in a) + "]"
            if type(a) is tuple:
                return "(" + "".join(f"{expr(x)}, " for x in a) + ")"
            if isinstance(a, tuple):  # a named tuple with references in it
                return f"{const(same_kind, 'f')}({const(a)}, [" + "".join(f"{expr(x)}, " for x in a) + "])"
            if type(a) is dict:
                return "{" + "".join(f"{expr(k)}: {expr(v)}, " for k, v in a.items()) + "}"
            if a is None or type(a) in (bool, int, str):
                return repr(a)
            return const(a)

        dead_after = _dead_after(graph)
        lines: list[str] = []
        mode = grad_enabled
        tables = _table_plan(graph, dead_after)  # Note [Reused table gradients]
        if tables is not None:
            lines.append(f"{const(tables[0], 't')}.begin()")
        for index, node in enumerate(graph.nodes):
            if node.grad_enabled != mode:
                mode = node.grad_enabled
                lines.append(f"_set_grad_enabled({mode})")
            args = [expr(a) for a in node.args] + [f"{k}={expr(v)}" for k, v in node.kwargs.items()]
            call = f"{const(node.target, 'op')}({', '.join(args)})"
            if tables is not None and node.name == "_fused_sgd_":  # the tables step by the kernel (Note [Table SGD])
                call = f"{const(TableSgd(node.target, list(tables[2].values())), 't')}({', '.join(args)})"
            elif tables is not None and index in tables[3]:  # a cat of table lookups (Note [Table cat])
                call = f"{const(tables[3][index], 't')}({', '.join([const(node.target, 'op'), *args])})"
            table = _table_of(tables, node)
            if table is not None and node.name == "Tensor.grad=":
                lines.append(f"{const(table, 't')}.clear()")
            elif table is not None and tables is not None and index in tables[1]:
                lines.append(
                    f"v{node.first_value} = {const(table, 't')}.forward({const(node.target, 'op')}, {', '.join(args)})"
                )
            elif node.name == "Tensor.grad" and not node.kwargs and len(args) == 1 and node.results == [()]:
                # Note [Captured backward]'s .grad read, as an attribute read; none where nothing reads it
                # (zero_grad(set_to_none=True) reads each .grad before dropping it): a read has no effect.
                if node.first_value in dead_after[index]:
                    dead_after[index].remove(node.first_value)
                else:
                    lines.append(f"v{node.first_value} = {args[0]}.grad")
            elif node.name == "Tensor.grad=" and not node.kwargs and len(args) == 2 and node.results == []:
                lines.append(f"{args[0]}.grad = {args[1]}")
            elif node.results == [()]:
                lines.append(f"v{node.first_value} = {call}")
            else:
                lines.append(f"r = {call}")
                for k, path in enumerate(node.results):
                    lines.append(f"v{node.first_value + k} = r" + "".join(f"[{i}]" for i in path))
                lines.append("del r")
            if tables is not None and node.name == "backward":
                lines.extend(f"{const(t, 't')}.finish()" for t in tables[2].values())
            if dead_after[index]:
                lines.append("del " + ", ".join(f"v{v}" for v in dead_after[index]))
        lines.append(f"return {expr(graph.output)}")
        params = "".join(f"i{k}, " for k in range(graph.num_inputs))
        if mode != grad_enabled:  # the function left a no_grad block open: restore the caller's mode
            lines.insert(-1, f"_set_grad_enabled({grad_enabled})")
        if any(line.startswith("_set_grad_enabled") for line in lines):
            body = "\n".join(f"        {line}" for line in lines)
            src = f"def replay({params}):\n    try:\n{body}\n    finally:\n        _set_grad_enabled({grad_enabled})\n"
        else:
            src = f"def replay({params}):\n" + "\n".join(f"    {line}" for line in lines) + "\n"
        exec(compile(src, "<fb.compile replay>", "exec"), env)  # noqa: S102 (generated from the graph)
        self.run: Callable[..., Any] = env["replay"]
        self.source = src


def _table_plan(graph: Graph, dead: list[list[int]]) -> Any:
    from ._compiled import config

    return plan(graph, dead) if config.reuse_table_grads else None


def _table_of(tables: Any, node: Any) -> Any:
    """The :class:`TableGrad` a ``W.grad = None`` or an ``embedding(W, ...)`` node of the plan stands for."""
    if tables is None or node.name not in ("Tensor.grad=", "embedding") or not node.args:
        return None
    a = node.args[0]
    if not (isinstance(a, Ref) and a.kind == "const") or a.index not in tables[2]:
        return None
    if node.name == "Tensor.grad=" and (len(node.args) != 2 or node.args[1] is not None or node.kwargs):
        return None
    return tables[2][a.index]


def _dead_after(graph: Graph) -> list[list[int]]:
    """Per node, the values no later node reads and the function does not return, to drop after it.

    Eager code drops an intermediate when its last reader is done with it, so the caching allocator hands
    that (cache-warm) block to the next result; a replay that kept every value in a local until it returns
    would make each result a new block, colder and more memory (measured: 8% slower eval of the benchmark
    MobileNet than eager with the same ops).
    """
    last: dict[int, int] = {}
    for index, node in enumerate(graph.nodes):
        for ref in refs_in((node.args, node.kwargs)):
            if ref.kind == "value":
                last[ref.index] = index
        for k in range(len(node.results)):
            last.setdefault(node.first_value + k, index)  # never read: dropped right after it is made
    for ref in refs_in(graph.output):  # returned: never dropped
        if ref.kind == "value":
            last[ref.index] = len(graph.nodes)
    dead: list[list[int]] = [[] for _ in graph.nodes]
    for value, index in sorted(last.items()):
        if index < len(graph.nodes):
            dead[index].append(value)
    return dead
