"""Replaying a captured graph: its ops called directly on the new inputs, nothing else of the function runs.

Note [Replay program]
:class:`Program` turns a :class:`~flambeau.compiler._graph.Graph` into a flat list of steps, one per node:
the op's callable, its argument list with the constants (parameters, buffers, Python values) already in
place, and the slots where a graph input or an earlier result goes. Running it fills those slots from
``env`` (the call's input tensors followed by every result so far) and appends the op's result tensors to
``env``. No module ``__call__``, hook, or Python control flow of the user's function runs; autograd records
the ops as it does in eager (they are the same calls), and a random op draws fresh numbers each time.
A change of grad mode inside the function (``with fb.no_grad():``) is a step of its own.
"""

from __future__ import annotations

from typing import Any

from flambeau_core._C import _set_grad_enabled

from ._graph import Graph, Ref


def _index(ref: Ref, num_inputs: int) -> int:
    return ref.index if ref.kind == "input" else num_inputs + ref.index


def _has_ref(obj: Any) -> bool:
    if isinstance(obj, Ref):
        return True
    if isinstance(obj, (list, tuple)):
        return any(_has_ref(x) for x in obj)
    if isinstance(obj, dict):
        return any(_has_ref(x) for x in obj.values())
    return False


class _Spec:
    """A nested argument (``[a, b]`` of ``cat``, a kwargs dict) rebuilt from ``env`` each call."""

    __slots__ = ("kind", "items", "index")

    def __init__(self, obj: Any, graph: Graph) -> None:
        self.index = -1
        if isinstance(obj, Ref):
            self.kind, self.items = "ref", None
            if obj.kind == "const":
                self.kind, self.items = "value", graph.constants[obj.index]
            else:
                self.index = _index(obj, graph.num_inputs)
        elif isinstance(obj, dict):
            self.kind, self.items = "dict", {k: _Spec(v, graph) for k, v in obj.items()}
        elif isinstance(obj, (list, tuple)):
            self.kind, self.items = type(obj).__name__, [_Spec(x, graph) for x in obj]
        else:
            self.kind, self.items = "value", obj

    def build(self, env: list[Any]) -> Any:
        kind = self.kind
        if kind == "ref":
            return env[self.index]
        if kind == "value":
            return self.items
        if kind == "dict":
            return {k: s.build(env) for k, s in self.items.items()}
        items = [s.build(env) for s in self.items]
        return items if kind == "list" else tuple(items)


class Program:
    """The replay of a :class:`Graph` (Note [Replay program]); ``run(inputs)`` returns the function's result."""

    __slots__ = ("steps", "output_index", "output_spec", "restores_grad")

    def __init__(self, graph: Graph, grad_enabled: bool) -> None:
        n_in = graph.num_inputs
        self.steps: list[tuple[Any, ...]] = []
        mode = grad_enabled
        for node in graph.nodes:
            if node.grad_enabled != mode:
                mode = node.grad_enabled
                self.steps.append((_set_grad_enabled, (mode,), None, None, None, ()))
            tmpl: list[Any] = []
            slots: list[tuple[int, int]] = []
            nested: list[tuple[int, _Spec]] = []
            for p, a in enumerate(node.args):
                if isinstance(a, Ref):
                    if a.kind == "const":
                        tmpl.append(graph.constants[a.index])
                    else:
                        tmpl.append(None)
                        slots.append((p, _index(a, n_in)))
                elif _has_ref(a):
                    tmpl.append(None)
                    nested.append((p, _Spec(a, graph)))
                else:
                    tmpl.append(a)
            kw = _Spec(node.kwargs, graph) if _has_ref(node.kwargs) else (node.kwargs or None)
            paths = None if node.results == [()] else tuple(node.results)
            fixed = not slots and not nested
            self.steps.append(
                (node.target, tuple(tmpl) if fixed else tmpl, tuple(slots), tuple(nested) or None, kw, paths)
            )
        self.restores_grad = mode != grad_enabled
        if self.restores_grad:
            self.steps.append((_set_grad_enabled, (grad_enabled,), None, None, None, ()))
        out = graph.output
        self.output_index = -1
        self.output_spec: _Spec | None = None
        if isinstance(out, Ref) and out.kind != "const":
            self.output_index = _index(out, n_in)
        else:
            self.output_spec = _Spec(out, graph)

    def run(self, env: list[Any], grad_enabled: bool) -> Any:
        """Runs the steps on ``env`` (the call's input tensors, extended in place with the results)."""
        append = env.append
        try:
            for fn, tmpl, slots, nested, kw, paths in self.steps:
                if slots is None:  # a grad-mode step
                    fn(*tmpl)
                    continue
                if slots or nested:
                    args = tmpl.copy()
                    for p, i in slots:
                        args[p] = env[i]
                    if nested:
                        for p, spec in nested:
                            args[p] = spec.build(env)
                else:
                    args = tmpl
                if kw is None:
                    r = fn(*args)
                elif type(kw) is _Spec:
                    r = fn(*args, **kw.build(env))
                else:
                    r = fn(*args, **kw)
                if paths is None:
                    append(r)
                else:
                    for path in paths:
                        v = r
                        for i in path:
                            v = v[i]
                        append(v)
        except BaseException:
            if self.restores_grad:
                _set_grad_enabled(grad_enabled)
            raise
        if self.output_index >= 0:
            return env[self.output_index]
        assert self.output_spec is not None
        return self.output_spec.build(env)
