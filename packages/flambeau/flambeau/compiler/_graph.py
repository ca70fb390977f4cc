"""The captured graph: what one eager run of a function did on tensors, as data a replayer or code generator walks.

Note [Captured graph]
A :class:`Graph` is the straight-line op sequence core's op recorder saw while the function ran once
(Note [Op recorder] in ``packages/core/src/python/op_recorder.h``). Every tensor an op reads is one of:

* ``Ref("input", i)``: the i-th tensor of the call's arguments (found by walking args and kwargs);
* ``Ref("const", i)``: a tensor that outlives the call (a parameter, a buffer, a tensor attribute of a
  module, or a constant fill made inside the function), held by identity, so the replay reads its
  current values and in-place updates of it (running statistics) happen as in eager;
* ``Ref("value", i)``: the i-th tensor produced by an earlier node (a node's result may hold several).

Non-tensor arguments (ints from ``x.size(0)``, floats, dtypes) are plain constants: the guards fix every
input's shape and every non-tensor argument, so they are the same on every call the graph serves. A tensor
argument nested in a list or tuple (``cat([a, b])``) stays nested, with its leaves as :class:`Ref`.

Writes the recorder reports (``x[i] = v``, ``index_put_``, ``fill_``, ``uniform_``, ``normal_``, ``add_`` ...)
are nodes like any other, replayed in place on the replay's own tensors; a node is replayed by the form the
program called (``call_info()``'s method flag: ``fb.where(c, x, y)`` against ``x.where(c, y)``).

Anything the recorder cannot account for is a graph break (:func:`build_graph` returns the reason instead
of a graph): a tensor of traced origin that no recorded op produced (an unreported view such as ``x.T``,
``x.data``, ``x.detach()``), a value read into Python (``item``, ``bool``, ``tolist``, ``numpy``), a tensor
made inside the function that is not a constant fill, a write to such a tensor or its memory (the constant
would change from call to call; a made-inside tensor that is only read, such as an index, is fine),
``fb.autograd.grad`` or ``backward(create_graph=True)`` inside the function, random numbers drawn by an
unrecorded factory. A plain ``backward()`` and the ``.grad`` reads and writes are nodes the capture adds
itself (Note [Captured backward] in ``_capture.py``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from typing import Any, NamedTuple

import flambeau_core as fc

Tensor = fc.Tensor


class Ref(NamedTuple):
    """A tensor of the graph: ``kind`` is ``"input"``, ``"const"`` or ``"value"``; ``index`` numbers it in its kind."""

    kind: str
    index: int


@dataclass
class Node:
    """One recorded op call: ``target(*args, **kwargs)`` with :class:`Ref` leaves, run under ``grad_enabled``.

    ``results`` lists where each tensor of the op's result lies (``()`` for the result itself, ``(0,)`` for
    its first element, ...); the k-th entry becomes ``Ref("value", first_value + k)``.
    """

    name: str
    target: Callable[..., Any]
    args: tuple[Any, ...]
    kwargs: dict[str, Any]
    grad_enabled: bool
    first_value: int
    results: list[tuple[int, ...]]


@dataclass
class Graph:
    """What one run of a function did on tensors (Note [Captured graph]).

    ``output`` is the function's result with each tensor replaced by its :class:`Ref`.
    """

    num_inputs: int
    constants: list[Tensor] = field(default_factory=list)
    nodes: list[Node] = field(default_factory=list)
    num_values: int = 0
    output: Any = None

    def op_names(self) -> list[str]:
        return [node.name for node in self.nodes]

    def __str__(self) -> str:
        def show(a: Any) -> str:
            if isinstance(a, Ref):
                return f"%{a.kind[0]}{a.index}"
            if isinstance(a, (list, tuple)):
                return "[" + ", ".join(show(x) for x in a) + "]"
            return repr(a)

        lines = [f"graph({self.num_inputs} inputs, {len(self.constants)} constants):"]
        for n in self.nodes:
            outs = ", ".join(f"%v{n.first_value + k}" for k in range(len(n.results))) or "_"
            args = [show(a) for a in n.args] + [f"{k}={show(v)}" for k, v in n.kwargs.items()]
            lines.append(f"  {outs} = {n.name}({', '.join(args)})" + ("" if n.grad_enabled else "  # no_grad"))
        lines.append(f"  return {show(self.output)}")
        return "\n".join(lines)


class GraphBreak(Exception):  # noqa: N818 (a signal, not an error: the function then runs eagerly)
    """Raised while building a graph: the recorded run cannot be replayed; the message says why."""


# A recorded op that hands a tensor's values to Python: the program may branch on them.
READS = {"item", "tolist", "__bool__", "__float__", "__int__", "__index__", "__complex__", "equal", "allclose"}


def _target(name: str, args: tuple[Any, ...], method: bool) -> Callable[..., Any] | None:
    """The callable that redoes a recorded call: the Tensor method (``self`` first) or the core function.

    ``method`` is the recorder's word on which form the program called (``call_info()``). The two forms agree
    (the function's first parameter is the method's ``self``) except for ``where``: ``where(condition, input,
    other)`` against ``input.where(condition, other)``, so ``where`` follows the flag. Only callables are
    returned: ``getattr(Tensor, name)`` of a property (``real``) is the property object, so a property is
    redone by the function of its name, or (``T``, ``mT``) by its getter.
    """
    if name == "where":
        return Tensor.where if method else fc.where
    if "::" in name:  # an operator of flambeau.library ("ns::name" or "ns::name.overload"): one opaque op
        from flambeau.library._dispatch import _REGISTRY

        base, _, overload = name.partition(".")
        packet = _REGISTRY.get(base)
        return packet._overloads.get(overload or "default") if packet is not None else None
    if args and isinstance(args[0], Tensor):
        bound = getattr(Tensor, name, None)
        if callable(bound):
            return bound
        if isinstance(bound, property) and name in _RECORDED_PROPERTIES:
            return bound.fget  # x.T: its getter, called with x
    fn = getattr(fc._C, name, None)
    if not callable(fn):
        fn = getattr(fc, name, None)
    return fn if callable(fn) else None


# Properties the recorder reports under their own name (views with no function of that name).
_RECORDED_PROPERTIES = {"T", "mT"}

# Recorded writes whose written tensor is not named by a trailing underscore (``x[i] = v``).
_WRITES = {"__setitem__"}
# Recorded with every argument positional, though the binding takes the last one by keyword only.
_KEYWORD_LAST = {"uniform_": "generator", "normal_": "generator"}
# Recorded with the call's keyword arguments as one trailing dict (the binding takes ``**kwargs``).
_KWARGS_LAST = {"to"}


def tensors_in(obj: Any) -> list[Tensor]:
    """The tensors in an argument structure (tuples, lists, dict values), in order."""
    if isinstance(obj, Tensor):
        return [obj]
    if isinstance(obj, (list, tuple)):
        return [t for x in obj for t in tensors_in(x)]
    if isinstance(obj, dict):
        return [t for x in obj.values() for t in tensors_in(x)]
    return []


def leaves_in(obj: Any) -> Iterator[Any]:
    """The leaves of an op's arguments (a :class:`Ref` is a leaf), through tuples, lists and dict values, in order."""
    if isinstance(obj, Ref):
        yield obj
    elif isinstance(obj, (list, tuple)):
        for x in obj:
            yield from leaves_in(x)
    elif type(obj) is dict:
        for x in obj.values():
            yield from leaves_in(x)
    else:
        yield obj


def refs_in(obj: Any) -> Iterator[Ref]:
    """The :class:`Ref` leaves of an op's arguments or a graph's output, in order."""
    return (x for x in leaves_in(obj) if isinstance(x, Ref))


def same_kind(like: tuple[Any, ...], items: list[Any]) -> tuple[Any, ...]:
    """A tuple of ``like``'s type (a named tuple, a struct sequence) holding ``items``."""
    kind = type(like)
    make = getattr(kind, "_make", None)
    return make(items) if make is not None else kind(items)


def _result_paths(result: Any) -> list[tuple[int, ...]]:
    if isinstance(result, Tensor):
        return [()]
    if isinstance(result, (list, tuple)):
        return [(i, *p) for i, r in enumerate(result) for p in _result_paths(r)]
    return []


def _at(obj: Any, path: tuple[int, ...]) -> Any:
    for i in path:
        obj = obj[i]
    return obj


_PLAIN = (Ref, bool, int, float, complex, str, bytes, type(None), fc.dtype, fc.device)


def _opaque_leaf(obj: Any) -> str | None:
    """The type name of a part of a result that is neither a tensor reference nor a plain value, if any."""
    if isinstance(obj, (list, tuple)) and not isinstance(obj, Ref):
        return next((name for x in obj if (name := _opaque_leaf(x)) is not None), None)
    if isinstance(obj, dict):
        return _opaque_leaf(list(obj.values()))
    return None if isinstance(obj, _PLAIN) else type(obj).__name__


def _is_fill(t: Tensor) -> bool:
    if t.numel() <= 1:
        return True
    flat = t.detach().reshape(-1)
    return bool((flat == flat[0]).all())


class _Builder:
    """Maps the recorded calls' tensors to :class:`Ref` while walking them in order."""

    def __init__(
        self, inputs: list[Tensor], long_lived: dict[int, Tensor], rng_advanced: bool, grads: set[int]
    ) -> None:
        self.grads = grads  # ids of the leaves' .grad tensors: autograd replaces them, so never constants
        self.graph = Graph(num_inputs=len(inputs))
        self.refs: dict[int, Ref] = {}
        self.const_index: dict[int, int] = {}
        self.made_inside: set[int] = set()  # ids of constants made inside the function (fills)
        self.made_inside_storages: set[int] = set()  # their memory: a recorded view of one writes it too
        self.long_lived = long_lived
        self.rng_advanced = rng_advanced
        self.traced_storages: set[int] = set()  # memory holding inputs and computed values
        for i, t in enumerate(inputs):
            self.refs.setdefault(id(t), Ref("input", i))
            self._traced(t)

    def _traced(self, t: Tensor) -> None:
        ptr = t._storage_ptr
        if ptr:  # empty tensors may share address 0
            self.traced_storages.add(ptr)

    def ref(self, t: Tensor, where: str) -> Ref:
        r = self.refs.get(id(t))
        if r is not None:
            return r
        if id(t) in self.long_lived or id(t) in self.const_index:
            return self._constant(t)
        if id(t) in self.grads:
            raise GraphBreak(f"{where} uses a .grad tensor, which autograd (not recorded) makes or updates")
        if t._storage_ptr and t._storage_ptr in self.traced_storages:
            raise GraphBreak(
                f"{where} uses a {tuple(t.shape)} tensor that shares memory with the inputs or computed values but "
                "that no recorded op made (a view such as x.data or x.detach(), which the op recorder "
                "does not report)"
            )
        # Made inside the function by something the recorder does not see: a factory (fb.zeros), autograd
        # (fb.autograd.grad, .grad), an extension op. Only a constant fill is surely the same on every call.
        if t.requires_grad or t.grad_fn is not None:
            raise GraphBreak(f"{where} uses a {tuple(t.shape)} tensor with autograd history that no recorded op made")
        if t.numel() <= 1 and self.rng_advanced:
            raise GraphBreak(
                f"{where} uses a {tuple(t.shape)} tensor made inside the function while random numbers were drawn: "
                "it may come from a random factory (fb.randn, fb.rand), which the op recorder does not report"
            )
        if not _is_fill(t):
            raise GraphBreak(
                f"{where} uses a {tuple(t.shape)} tensor made inside the function by an op the recorder does not "
                "report (a factory such as fb.tensor or fb.arange, fb.autograd.grad, an extension op)"
            )
        self.made_inside.add(id(t))
        if t._storage_ptr:
            self.made_inside_storages.add(t._storage_ptr)
        return self._constant(t)

    def _constant(self, t: Tensor) -> Ref:
        i = self.const_index.get(id(t))
        if i is None:
            i = self.const_index[id(t)] = len(self.graph.constants)
            self.graph.constants.append(t)
        return Ref("const", i)

    def template(self, obj: Any, where: str) -> Any:
        if isinstance(obj, Tensor):
            return self.ref(obj, where)
        if isinstance(obj, (list, tuple)):
            items = [self.template(x, where) for x in obj]
            if isinstance(obj, list):
                return items
            if type(obj) is tuple:
                return tuple(items)
            if any(isinstance(x, Tensor) for x in obj):
                return same_kind(obj, items)  # a named tuple (x.max(0)), with references in it
            return obj
        if isinstance(obj, dict):
            return {k: self.template(v, where) for k, v in obj.items()}
        if isinstance(obj, slice) and any(isinstance(x, Tensor) for x in (obj.start, obj.stop, obj.step)):
            raise GraphBreak(f"{where} slices with tensor bounds")
        if type(obj).__module__ == "numpy" and hasattr(obj, "flags") and obj.flags.writeable:
            raise GraphBreak(f"{where} reads a writable NumPy array, whose values a replay would take as constants")
        return obj

    def add(
        self, name: str, args: tuple[Any, ...], kwargs: dict[str, Any], result: Any, grad: bool, method: Any
    ) -> None:
        where = f"op {name!r}"
        if name in READS:
            raise GraphBreak(f"the function reads a tensor's value into Python ({name}): data-dependent control flow")
        paths = _result_paths(result)
        if not paths and result is not None and tensors_in(args):
            raise GraphBreak(f"op {name!r} returns a {type(result).__name__} computed from tensors into Python")
        keyword = _KEYWORD_LAST.get(name)
        if keyword is not None and len(args) == 4 and keyword not in kwargs:
            args, kwargs = args[:3], {**kwargs, keyword: args[3]}
        if name in _KWARGS_LAST and args and type(args[-1]) is dict:  # x.to(dtype, copy=True): (x, dtype, {...})
            args, kwargs = args[:-1], {**args[-1], **kwargs}
        # A node the capture added itself (Note [Captured backward] in _capture.py) carries its callable.
        target = method if callable(method) else _target(name, args, method)
        if target is None:
            raise GraphBreak(f"op {name!r} has no callable to replay it with (or which one is ambiguous)")
        arg_t = self.template(args, where)
        kw_t = self.template(kwargs, where) if kwargs else {}
        written = self._written(name, args, kwargs)
        if any(id(t) in self.made_inside or t._storage_ptr in self.made_inside_storages for t in written):
            raise GraphBreak(f"op {name!r} mutates a tensor made inside the function by an unrecorded op")
        if name in _WRITES:
            paths = []  # the binding returns None (the recorder reports self): the written tensor keeps its Ref
        g = self.graph
        g.nodes.append(Node(name, target, arg_t, kw_t, grad, g.num_values, paths))
        for path in paths:
            t = _at(result, path)
            self.refs[id(t)] = Ref("value", g.num_values)
            g.num_values += 1
            self._traced(t)

    @staticmethod
    def _written(name: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> list[Tensor]:
        """The tensors a recorded call writes: ``self`` of an in-place op or a write, and ``out=``."""
        out = tensors_in(kwargs.get("out")) if kwargs else []
        in_place = name in _WRITES or (name.endswith("_") and not name.endswith("__"))
        if in_place and args and isinstance(args[0], Tensor):
            out.append(args[0])
        elif in_place:  # a write whose target is not its first argument: unsure which tensor it writes
            out += tensors_in(args)
        return out


def build_graph(
    inputs: list[Tensor],
    calls: list[tuple[str, tuple[Any, ...], dict[str, Any], Any, bool, Any]],
    result: Any,
    long_lived: dict[int, Tensor],
    rng_advanced: bool,
    grads: set[int],
) -> Graph:
    """The graph of one recorded run (Note [Captured graph]); raises :class:`GraphBreak` with the reason."""
    b = _Builder(inputs, long_lived, rng_advanced, grads)
    for name, args, kwargs, res, grad, method in calls:
        b.add(name, args, kwargs, res, grad, method)
    out = b.template(result, "the function's result")
    odd = _opaque_leaf(out)
    if odd is not None:
        raise GraphBreak(f"the function returns a {odd}, which a replay cannot rebuild (it may hold tensors)")
    for t in tensors_in(result):
        if id(t) in b.made_inside:
            raise GraphBreak("the function returns a tensor made inside it by an op the recorder does not report")
    b.graph.output = out
    return b.graph
