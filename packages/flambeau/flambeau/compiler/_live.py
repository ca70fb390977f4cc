"""Optimizer hyperparameters that a captured training step reads when it replays, not at capture.

Note [Live hyperparameters]
An LR scheduler changes ``param_group["lr"]`` between steps (OneCycleLR also changes ``momentum`` or
``betas``). If the guards compared these values, every new value would be a guard miss and a new capture,
and after ``config.recompile_limit`` captures the step would run eagerly. So the fused optimizer ops that
flambeau's SGD, Adam(W), RMSprop and Adagrad steps call (:data:`FUSED`) take these arguments as
:class:`Live` values. The replay evaluates ``float(group["lr"])`` (or ``float(group["betas"][0])``) on every
call, and the guard checks only the setting's kind (Note [Compile guards]): a float, a tensor, or a pair of
floats. For ``momentum`` it also checks the sign, since that decides whether the step keeps momentum buffers.

A tensor setting (``lr=fb.tensor(0.01)``, which PyTorch allows and its schedulers update in place with
``fill_``) is read into Python by the optimizer's step (``float(lr)``). Such a read is not a graph break when
it runs inside one of those steps (``STEPS``) and its value is passed to the fused op; the replay then reads
the tensor itself. Any other read is a break, as before: the user's ``lr.item()``, or a composed optimizer
(Adadelta, NAdam, ...) computing other values from it.

A float setting's guard is relaxed to its kind only when the capture sees no other use of it
(:class:`SettingUse`): no Python function outside flambeau that the captured call runs (the step function,
its helpers, lambdas) names ``param_groups``, ``get_last_lr`` or ``_last_lr``; no setting changes during
the call (a warm-up written inside the step would not be written again on replay); and the value is no
plain argument of another op nor in the result. Otherwise a value the user's code read or derived
(``loss * lr * 2``) would be a stale constant on replay; such a step keeps every setting guarded by value
(a new capture per value, as before this Note). With another profiler installed (``sys.setprofile``) the
calls cannot be watched, and the guards stay by value too.
"""

from __future__ import annotations

import inspect
import os
import sys
from collections.abc import Callable
from typing import Any

import flambeau_core as fc

from ._graph import Graph, GraphBreak, Ref, leaves_in

Tensor = fc.Tensor

# fused op -> {its keyword: (the param group's key, index into a pair or None)}
FUSED: dict[str, dict[str, tuple[str, int | None]]] = {
    "_fused_sgd_": {k: (k, None) for k in ("lr", "momentum", "dampening", "weight_decay")},
    "_fused_adam_": {
        "lr": ("lr", None),
        "beta1": ("betas", 0),
        "beta2": ("betas", 1),
        "weight_decay": ("weight_decay", None),
        "eps": ("eps", None),
    },
    "_fused_rmsprop_": {k: (k, None) for k in ("lr", "alpha", "eps", "weight_decay", "momentum")},
    "_fused_adagrad_": {k: (k, None) for k in ("lr", "lr_decay", "weight_decay", "eps")},
}
_KEYS = {key for spec in FUSED.values() for key, _ in spec.values()}
_SIGNED = {"momentum"}  # the step branches on its sign (momentum buffers or none)


class Live:
    """A param group's setting read at replay: ``float(group[key])``, or ``float(group[key][index])``."""

    __slots__ = ("group", "key", "index")

    def __init__(self, group: dict[str, Any], key: str, index: int | None) -> None:
        self.group, self.key, self.index = group, key, index

    def source(self, group_name: str) -> str:
        """The replay's expression, with the group bound to ``group_name``."""
        item = f"{group_name}[{self.key!r}]" + ("" if self.index is None else f"[{self.index}]")
        return f"float({item})"

    def __repr__(self) -> str:
        return f"group[{self.key!r}]" + ("" if self.index is None else f"[{self.index}]")


def _steps() -> set[Any]:
    """The code of the optimizer steps that pass their settings straight to a fused op (read once per import)."""
    optim = sys.modules.get("flambeau_nn.optim")
    if optim is None:
        return set()
    classes = (optim.SGD, optim.Adam, optim.RMSprop, optim.Adagrad)
    return {inspect.unwrap(cls.step).__code__ for cls in classes}


_STEPS: set[Any] | None = None


def hyper_tensors(optimizers: list[Any]) -> dict[int, tuple[Tensor, Any]]:
    """id -> (tensor, its optimizer) for every tensor setting of the optimizers' param groups."""
    out: dict[int, tuple[Tensor, Any]] = {}
    for opt in optimizers:
        for group in opt.param_groups:
            for key in _KEYS & group.keys():
                v = group[key]
                for t in v if type(v) is tuple else (v,):
                    if isinstance(t, Tensor):
                        out[id(t)] = (t, opt)
    return out


def read_in_step(opt: Any) -> bool:
    """Whether the current Python stack is inside ``opt``'s step of SGD, Adam(W), RMSprop or Adagrad."""
    global _STEPS
    if _STEPS is None:
        _STEPS = _steps()
    frame = sys._getframe(1)
    while frame is not None:
        if frame.f_code in _STEPS and frame.f_locals.get("self") is opt:
            return True
        frame = frame.f_back
    return False


class SettingUse:
    """Watches a captured call for code that may use the optimizers' settings itself (Note [Live hyperparameters]).

    A context manager around the call: ``suspect`` is True afterwards when Python code outside flambeau's
    packages that the call ran names a param group's or a scheduler's settings, when a setting changed
    during the call, or when another profiler was installed (the calls could not be watched).
    """

    _NAMES = frozenset({"param_groups", "get_last_lr", "_last_lr"})

    def __init__(self, optimizers: list[Any]) -> None:
        self.optimizers = optimizers
        self.suspect = False
        self._seen: set[Any] = set()
        self._watching = False
        self._before = _settings(optimizers)

    def __enter__(self) -> SettingUse:
        if sys.getprofile() is not None:
            self.suspect = True
        else:
            sys.setprofile(self._call)
            self._watching = True
        return self

    def __exit__(self, *exc: object) -> None:
        if self._watching:
            sys.setprofile(None)
        if _settings(self.optimizers) != self._before:
            self.suspect = True

    def _call(self, frame: Any, event: str, arg: Any) -> None:
        if event != "call":
            return
        code = frame.f_code
        if code in self._seen:
            return
        self._seen.add(code)
        if not code.co_filename.startswith(_library_dirs()) and not self._NAMES.isdisjoint(code.co_names):
            self.suspect = True


def _settings(optimizers: list[Any]) -> list[Any]:
    """The live keys' values of every param group (a tensor by identity and version), to compare."""
    out: list[Any] = []
    for opt in optimizers:
        for group in opt.param_groups:
            for key in sorted(_KEYS & group.keys()):
                v = group[key]
                items = v if type(v) is tuple else (v,)
                out.append((key, tuple((id(x), x._version) if isinstance(x, Tensor) else x for x in items)))
    return out


_LIBRARY_DIRS: tuple[str, ...] | None = None


def _library_dirs() -> tuple[str, ...]:
    """The folders of flambeau's own packages (their code reads the settings to do its work)."""
    global _LIBRARY_DIRS
    if _LIBRARY_DIRS is None:
        dirs = []
        for name, mod in list(sys.modules.items()):
            if name.startswith("flambeau") and "." not in name and getattr(mod, "__file__", None):
                dirs.append(os.path.dirname(mod.__file__) + os.sep)
        _LIBRARY_DIRS = tuple(dirs)
    return _LIBRARY_DIRS


def bind(
    graph: Graph, optimizers: list[Any], hidden: list[tuple[Tensor, Any]], user_reads: bool
) -> dict[int, dict[str, Any]]:
    """Makes the fused optimizer ops' settings :class:`Live` in ``graph``; the settings guarded by kind only.

    Returns id(group) -> {key: the value at capture} for the keys that may change without a new capture.
    ``hidden`` are the step's reads of tensor settings (tensor, value read): each must reach a fused op,
    or the graph breaks.
    """
    owner: dict[int, dict[str, Any]] = {}
    for opt in optimizers:
        for group in opt.param_groups:
            for p in group["params"]:
                owner.setdefault(id(p), group)
    used: set[int] = set()  # ids of the hidden reads' tensors that reached a fused op
    live: dict[int, dict[str, Any]] = {}
    dead: set[tuple[int, str]] = set()  # a key a fused op got another value of
    for node in graph.nodes:
        spec = FUSED.get(node.name)
        if spec is None or not node.args or type(node.args[0]) is not list:
            continue
        params = [graph.constants[r.index] if isinstance(r, Ref) and r.kind == "const" else None for r in node.args[0]]
        groups = {id(owner.get(id(p))) for p in params}
        group = owner.get(id(params[0])) if params else None
        if group is None or len(groups) != 1:
            continue
        kwargs = dict(node.kwargs)
        for kw, (key, index) in spec.items():
            if kw not in kwargs or key not in group:
                continue
            value = group[key]
            setting = value[index] if index is not None and type(value) is tuple else value
            if index is not None and type(value) is not tuple:
                continue
            if isinstance(setting, Tensor):
                if not any(t is setting and v == kwargs[kw] for t, v in hidden):
                    dead.add((id(group), key))
                    continue
                used.add(id(setting))
            elif type(setting) not in (float, int) or float(setting) != kwargs[kw]:
                dead.add((id(group), key))
                continue
            kwargs[kw] = Live(group, key, index)
            live.setdefault(id(group), {})[key] = value
        node.kwargs = kwargs
    if any(id(t) not in used for t, _ in hidden):
        raise GraphBreak(
            "the function reads an optimizer's tensor setting into Python where no fused optimizer op takes it"
        )
    seen = _plain_floats(graph) if live else set()
    for gid, keys in live.items():
        for key in list(keys):
            value = keys[key]
            floats = [float(x) for x in (value if type(value) is tuple else (value,)) if type(x) in (float, int)]
            if (gid, key) in dead or (floats and (user_reads or any(x in seen for x in floats))):
                del keys[key]
    return {gid: keys for gid, keys in live.items() if keys}


def _plain_floats(graph: Graph) -> set[float]:
    """The float arguments of the ops other than the fused optimizer ops, and the floats of the result."""
    args = [(node.args, node.kwargs) for node in graph.nodes if node.name not in FUSED]
    return {x for x in leaves_in((args, graph.output)) if type(x) is float}


def kind_test(item: str, value: Any, key: str, const: Callable[[Any], str], pinned: bool) -> str:
    """The guard of a live setting (Note [Live hyperparameters]): its kind, not its value.

    ``pinned``: a tensor setting the graph also holds as a constant, guarded by identity.
    """
    if isinstance(value, Tensor):
        return f"{item} is {const(value)}" if pinned else f"type({item}) is {const(type(value))}"
    if type(value) is tuple:
        parts = [f"type({item}) is tuple", f"len({item}) == {len(value)}"]
        for i, x in enumerate(value):
            parts.append(kind_test(f"{item}[{i}]", x, "", const, pinned and isinstance(x, Tensor)))
        return " and ".join(parts)
    test = f"type({item}) is {const(type(value))}"
    if key in _SIGNED:
        test += f" and ({item} > 0) is {value > 0} and ({item} < 0) is {value < 0}"
    return test
