"""A compiled callable: guards, the cache of captured graphs, replay, and the eager fallback.

Note [Compile guards]
A call is served by a cached entry when it has the entry's *signature* and the entry's module state:

* signature (a dict key, so the lookup is one hash): for each tensor in the arguments (walked through
  tuples, lists and dicts) its shape, dtype, device, requires_grad and strides; every other argument's
  type and value (an object that is not a plain value by identity); the grad mode and the autocast state;
* module state (checked per entry, by one generated function): for every module the function reaches
  (the compiled module and its submodules, or the modules a function's ``self``, closure, globals and
  defaults hold), its plain attributes (``training``, ``p``, ``eps``, lists of plain values, ...), the hook
  dicts ``Module.__call__`` reads, and the identity of its parameters, buffers, submodules and other
  attributes; for a plain function also the globals and closure cells it reads (plain values and lists of
  them by value, tensors and modules by identity). The capture itself must leave this state unchanged.

The fast path: a call of positional tensors is first checked against the entry the last such call used,
by a function generated for that entry (``_fast_check``): per tensor its type, ``shape``, ``stride()``,
``dtype`` (by identity), ``requires_grad`` and device read once and compared field by field, then the grad
and autocast modes and the entry's module state; no key is built or hashed. Only when it fails is the key
built and looked up (and the entry found becomes the last one). A program that alternates between two
signatures pays the lookup on every call, as before.

A miss captures again (a new entry), up to ``config.recompile_limit`` entries per compiled callable; past
it, new signatures run eagerly. An entry whose capture broke runs eagerly for its signature; when the break
is that the call changed the state it read (an optimizer's first step makes its buffers), the entry keeps
the state before the call, so the next call, under the new state, captures again.

A training step adds guards of its own (Note [Captured backward] in ``_capture.py``): each parameter's
``.grad is None`` at entry, the ``requires_grad`` of every parameter, buffer and other long-lived tensor
it reads (a parameter frozen after the capture must stop training), the optimizers' param groups and
state, a trainer object's attributes. The
settings an LR scheduler changes are guarded by their kind only (Note [Live hyperparameters] in ``_live.py``).
"""

from __future__ import annotations

import functools
import sys
import warnings
import weakref
from collections.abc import Callable
from typing import Any

import flambeau_core as fc
from flambeau_core import _C
from flambeau_core import profiler as _profiler
from flambeau_core.profiler._events import KIND_USER as _KIND_USER

from . import _capture, _disk_cache
from ._fusion import FusedGroup, Fusion
from ._graph import Graph
from ._live import kind_test
from ._replay import Program

Tensor = fc.Tensor


class _Config:
    """``fb.compiler.config``: ``recompile_limit`` (torch._dynamo.config's, default 8); ``fusion`` (default True):
    fuse elementwise runs into generated C++ kernels at capture (Note [Elementwise fusion] in ``_fusion.py``);
    ``reuse_checks`` (default True): a capture whose check replay an earlier process already passed, for the
    same code, graph and compiler, skips it (Note [Checked captures] in ``_checked.py``);
    ``cache_size_limit_mb`` (default 512, None for no limit): the most disk space, in MiB, that fb.compile's
    kernels and check records take in the extension cache, the least recently used removed past it (Note
    [Bounded compile cache] in ``_disk_cache.py``; ``fb.compiler.clear_cache`` removes them all);
    ``reuse_table_grads`` (default True): a replayed training step keeps an embedding table's gradient buffer
    and zeroes only the rows it wrote (Note [Reused table gradients] in ``_table_grads.py``)."""

    recompile_limit: int = 8
    fusion: bool = True
    reuse_checks: bool = True
    reuse_table_grads: bool = True
    cache_size_limit_mb: float | None = 512

    def __setattr__(self, name: str, value: Any) -> None:
        if name == "cache_size_limit_mb":
            _disk_cache.check_limit(value)
        super().__setattr__(name, value)


config = _Config()

_SIMPLE = (bool, int, float, str, type(None), tuple, fc.dtype, fc.device)
_HOOKS = ("_forward_pre_hooks", "_forward_hooks", "_backward_hooks", "_backward_pre_hooks")
# Module.__init__'s bookkeeping, which only qualifies the hook dicts and buffers above.
_NEVER_REBOUND = (
    "_non_persistent_buffers_set",
    "_forward_hooks_with_kwargs",
    "_forward_hooks_always_called",
    "_forward_pre_hooks_with_kwargs",
)
_compiled: weakref.WeakSet[CompiledFunction] = weakref.WeakSet()


class Unsupported(RuntimeError):
    """A graph break under ``fullgraph=True`` (torch._dynamo.exc.Unsupported): the message says why.

    Example:
        >>> import flambeau as fb
        >>> issubclass(fb.compiler.Unsupported, RuntimeError)
        True
    """


Unsupported.__module__ = "flambeau.compiler"


class _Unguardable(Exception):  # noqa: N818 (internal signal)
    pass


def _signature(obj: Any, tensors: list[Tensor]) -> Any:
    """Note [Compile guards]: the hashable key of an argument; collects its tensors in order."""
    if isinstance(obj, Tensor):
        tensors.append(obj)
        return (obj.shape, obj.dtype, obj.device, obj.requires_grad, obj.stride())
    t = type(obj)
    if t is tuple or t is list:
        return (t, tuple(_signature(x, tensors) for x in obj))
    if t is dict:
        return (t, tuple((k, _signature(v, tensors)) for k, v in obj.items()))
    if isinstance(obj, _SIMPLE) and not isinstance(obj, tuple):
        return (t, obj)
    if isinstance(obj, tuple):  # a named tuple
        return (t, tuple(_signature(x, tensors) for x in obj))
    if callable(obj) or isinstance(obj, (type, fc.Generator)) or hasattr(obj, "__dict__"):
        return (t, id(obj))
    try:
        hash(obj)
    except TypeError:
        raise _Unguardable(f"an argument of type {t.__name__} cannot be guarded") from None
    return (t, obj)


class ModuleState:
    """The module state an entry was captured under (Note [Compile guards]); ``holds()`` checks it.

    The check is generated as straight-line Python (a comparison per attribute, parameter, buffer and
    submodule), since it runs on every call: one function for the modules and the names the function reads,
    and, for a training step, one for the optimizers and ``.grad`` guards that calls it. ``base``: the state
    built before the capture, still holding, whose module function is reused rather than generated again
    (the same tests: building one is about 10 us a test, 10-20 ms for the benchmark MobileNet's 43 modules).
    """

    __slots__ = ("holds", "trivial", "_modules_hold")

    def __init__(
        self,
        modules: list[Any],
        fn: Any = None,
        optimizers: list[Any] = (),  # type: ignore[assignment]
        grads: list[tuple[Tensor, bool]] = (),  # type: ignore[assignment]
        requires: list[Tensor] = (),  # type: ignore[assignment]
        live: dict[int, dict[str, Any]] | None = None,
        pinned: set[int] = frozenset(),  # type: ignore[assignment]
        base: ModuleState | None = None,
    ) -> None:
        modules_hold = base._modules_hold if base is not None else _modules_hold(modules, fn)
        self._modules_hold = modules_hold
        env, const = _constants()
        tests: list[str] = []
        for opt in optimizers:
            tests.extend(_optimizer_tests(opt, const, live or {}, pinned))
        # Note [Captured backward]: which leaves have a .grad at entry decides what backward() and the
        # optimizer do with them (accumulate or make, step or skip).
        tests.extend(f"{const(t)}.grad is {'None' if none else 'not None'}" for t, none in grads)
        # A captured backward and optimizer step hold which parameters train: one frozen or unfrozen after
        # the capture (requires_grad_) is a new capture. (A forward reads requires_grad on each call.)
        tests.extend(f"{'' if t.requires_grad else 'not '}{const(t)}.requires_grad" for t in requires)
        self.trivial = not tests and modules_hold is None
        if not tests:  # a module's forward: the module function alone, no call around it
            self.holds: Callable[[], bool] = modules_hold if modules_hold is not None else _always
            return
        if modules_hold is not None:
            tests.append(f"{const(modules_hold)}()")
        self.holds = _generated(tests, env)


def _always() -> bool:
    return True


def _constants() -> tuple[dict[str, Any], Callable[[Any], str]]:
    """A generated guard's globals and ``const(v)``, which binds ``v`` there and returns its name."""
    env: dict[str, Any] = {}

    def const(v: Any) -> str:
        name = f"c{len(env)}"
        env[name] = v
        return name

    return env, const


def _generated(tests: list[str], env: dict[str, Any]) -> Callable[[], bool]:
    """``holds()``: all of ``tests`` (Python expressions over ``env``'s names) true; False on any error."""
    body = " and ".join(tests)
    src = f"def holds():\n    try:\n        return bool({body})\n    except Exception:\n        return False\n"
    exec(src, env)  # noqa: S102 (the guard is generated from the captured state, no user text)
    return env["holds"]


def _modules_hold(modules: list[Any], fn: Any) -> Callable[[], bool] | None:
    """The generated check of the modules' state and of the names ``fn`` reads (Note [Compile guards]); None
    when there is nothing to check."""
    env, const = _constants()
    tests: list[str] = []
    for m in modules:
        d = const(m.__dict__)
        for key, v in m.__dict__.items():
            item = f"{d}[{key!r}]"
            if key in ("_parameters", "_buffers", "_modules"):
                tests.append(f"len({item}) == {len(v)}")
                tests.extend(f"{item}[{k!r}] is {const(x)}" for k, x in v.items())
            elif key in _HOOKS:  # the hook dicts Module.__call__ reads (the others qualify these)
                tests.append(f"not {item}" if not v else f"{item} == {const(dict(v))}")
            elif key in _NEVER_REBOUND or key.endswith("_hooks"):
                continue
            elif _by_value(v):
                tests.append(f"{item} == {const(v)}")
            elif type(v) is list and _plain(tuple(v)):  # compared by value: it may change in place
                tests.append(f"{item} == {const(list(v))}")
            else:
                tests.append(f"{item} is {const(v)}")
        tests.append(f"len({d}) == {len(m.__dict__)}")
    for holder, item, v in _captured_names(fn):  # the globals and closure cells the function reads
        h = const(holder)
        item_src = f"{h}.cell_contents" if item is None else f"{h}[{item!r}]"
        if type(v) is list and _plain(tuple(v)):
            tests.append(f"{item_src} == {const(list(v))}")
        else:
            tests.append(f"{item_src} {'==' if _by_value(v) else 'is'} {const(v)}")
    return _generated(tests, env) if tests else None


def _optimizer_tests(
    opt: Any, const: Callable[[Any], str], live: dict[int, dict[str, Any]], pinned: set[int]
) -> list[str]:
    """Guards of an optimizer a compiled step reaches (Note [Captured backward]): its param groups' settings
    (``lr``, ``momentum``, ...) by value and parameters by identity, and its state (momentum buffers, step
    counts) entry by entry, since the captured optimizer ops hold them as constants. The settings the replay
    reads itself (``live``: id(group) -> keys, Note [Live hyperparameters]) by their kind only; ``pinned``: ids
    of tensor settings the graph also holds as constants (guarded by identity)."""
    o = const(opt)
    groups, state = opt.param_groups, opt.state
    tests = [f"{o}.param_groups is {const(groups)}", f"len({const(groups)}) == {len(groups)}"]
    for i, group in enumerate(groups):
        g = const(group)
        tests += [f"{const(groups)}[{i}] is {g}", f"len({g}) == {len(group)}"]
        kinds = live.get(id(group), {})
        for key, v in group.items():
            item = f"{g}[{key!r}]"
            if key in kinds:
                pin = any(id(t) in pinned for t in (v if type(v) is tuple else (v,)))
                tests.append(kind_test(item, v, key, const, pin))
            elif key == "params":
                tests.append(f"len({item}) == {len(v)}")
                tests.extend(f"{item}[{j}] is {const(p)}" for j, p in enumerate(v))
            elif _by_value(v):
                tests.append(f"{item} == {const(v)}")
            else:
                tests.append(f"{item} is {const(v)}")
    st = const(state)
    tests.append(f"{o}.state is {st}")
    defining = sys.modules.get("flambeau_nn.optim.optimizer")
    data = getattr(state, "_data", None)
    entries: list[tuple[str, Any]] = []  # (the test that finds the entry, the entry's state dict)
    if defining is not None and type(state) is defining.ParamState and type(data) is dict:
        # flambeau's ParamState keeps id(param) -> (param, state dict): one C dict lookup per parameter and the
        # pair by identity (the same parameter, the same state dict object), instead of a Python-level
        # ``state.get(p)`` (Mapping.get and ParamState.__getitem__, ~0.4 us a parameter on every call).
        d = const(data)
        tests += [f"{st}._data is {d}", f"len({d}) == {len(data)}"]
        entries = [(f"{d}.get({key}) is {const(pair)}", pair[1]) for key, pair in data.items()]
    else:
        tests.append(f"len({st}) == {len(state)}")
        for p, entry in state.items():
            entries.append((f"{st}.get({const(p)}) is {const(entry)}", entry))
    for found, entry in entries:
        e = const(entry)
        tests += [found, f"len({e}) == {len(entry)}"]
        for key, v in entry.items():
            tests.append(f"{e}[{key!r}] {'==' if _by_value(v) else 'is'} {const(v)}")
    for key, v in vars(opt).items():  # the optimizer's own step hooks
        if key.endswith("_hooks") and isinstance(v, dict):
            tests.append(f"{o}.__dict__[{key!r}] == {const(dict(v))}")
    for name in ("_global_step_pre_hooks", "_global_step_post_hooks"):  # every optimizer's step hooks
        hooks = getattr(defining, name, None)
        if isinstance(hooks, dict):
            tests.append(f"{const(hooks)} == {const(dict(hooks))}")
    return tests


def _captured_names(fn: Any) -> list[tuple[Any, str | None, Any]]:
    """(globals dict, name, value) and (cell, None, value) for the tensors, modules and plain values ``fn`` reads;
    for a training step's bound method (``trainer.step``), its object's attributes (dict, name, value)."""
    from flambeau_nn import Module

    owner = getattr(fn, "__self__", None)
    if owner is not None and _capture._is_step_owner(owner):
        return list((vars(owner), k, v) for k, v in vars(owner).items())
    if fn is None or isinstance(fn, Module) or hasattr(fn, "__self__"):
        return []
    out: list[tuple[Any, str | None, Any]] = []
    code, globs = getattr(fn, "__code__", None), getattr(fn, "__globals__", None)
    if code is not None and globs is not None:
        out += [(globs, n, globs[n]) for n in code.co_names if n in globs]
    for cell in getattr(fn, "__closure__", None) or ():
        try:
            out.append((cell, None, cell.cell_contents))
        except ValueError:  # an empty cell
            continue
    keep = (Tensor, Module, *_SIMPLE)
    return [(h, n, v) for h, n, v in out if isinstance(v, keep) or (type(v) is list and _plain(tuple(v)))]


def _by_value(v: Any) -> bool:
    """Whether a guard compares ``v`` by value (numbers, strings, dtypes, devices, tuples of those), not by identity."""
    return isinstance(v, _SIMPLE) and (type(v) is not tuple or _plain(v))


def _plain(t: tuple[Any, ...]) -> bool:
    return all(type(x) in (bool, int, float, str, type(None)) or (type(x) is tuple and _plain(x)) for x in t)


def _fast_check(specs: list[tuple[Any, ...]], modes: tuple[Any, ...], state: ModuleState) -> Callable[..., bool]:
    """Note [Compile guards], the fast path: ``check(args)`` says whether a call of positional tensors has
    exactly ``specs`` (per tensor: shape, strides, requires_grad, dtype, device), the grad and autocast
    ``modes``, and ``state``: one generated expression read field by field, each property read once, no
    key built or hashed. False only sends the call to the full lookup, so it may be conservative.
    """
    env: dict[str, Any] = {"T": Tensor, "grad": _C.is_grad_enabled, "autocast": _C._is_autocast_enabled}
    names = ", ".join(f"a{i}" for i in range(len(specs)))
    tests = [f"len(args) == {len(specs)}"]
    for i, (shape, stride, requires_grad, dtype, device) in enumerate(specs):
        env[f"s{i}"], env[f"t{i}"], env[f"d{i}"], env[f"v{i}"] = shape, stride, dtype, device
        tests.append(
            f"type(a{i}) is T and a{i}.shape == s{i} and a{i}.stride() == t{i} and a{i}.dtype is d{i} and "
            f"a{i}.requires_grad is {requires_grad} and "
            + (f"a{i}.is_cpu" if device.type == "cpu" else f"a{i}.device == v{i}")
        )
    grad, autocast = modes
    tests.append(f"grad() is {grad}")
    if autocast:
        env["autocast_dtype"], env["want"] = _C._get_autocast_dtype, autocast
        tests.append("autocast() and str(autocast_dtype()) == want")
    else:
        tests.append("not autocast()")
    if not state.trivial:
        env["holds"] = state.holds
        tests.append("holds()")
    unpack = f"        {names}, = args\n" if specs else ""
    src = (
        f"def check(args):\n    if len(args) != {len(specs)}:\n        return False\n    try:\n{unpack}"
        f"        return bool({' and '.join(tests[1:])})\n    except Exception:\n        return False\n"
    )
    exec(src, env)  # noqa: S102 (generated from the captured signature, no user text)
    return env["check"]


class _Entry:
    __slots__ = ("state", "program", "graph", "reason", "fusion", "check", "checked")

    def __init__(
        self,
        state: ModuleState,
        graph: Graph | None,
        reason: str | None,
        grad: bool,
        fusion: Fusion | None,
        check: Callable[..., bool] | None = None,
        checked: str | None = None,
    ) -> None:
        self.state, self.graph, self.reason, self.fusion, self.check = state, graph, reason, fusion, check
        self.checked = checked  # how the capture checked the graph (Note [Checked captures])
        run = fusion.graph if fusion is not None else graph
        self.program = Program(run, grad) if run is not None else None


CAPTURE_RANGE = "fb.compile: capture"  # the profiler's name for a call that captures (and compiles) a graph


def _run(program: Program, tensors: Any) -> Any:
    if _profiler._active is None:  # the range object costs about a microsecond per call
        return program.run(*tensors)
    with _profiler._range("Torch-Compiled Region", _KIND_USER):  # as PyTorch's profiler names it
        return program.run(*tensors)


class CompiledFunction:
    """``fb.compile(fn)``: calls ``fn`` through guarded, captured graphs (Note [Compile guards])."""

    def __init__(
        self, fn: Callable[..., Any], fullgraph: bool, recompile_limit: int | None, module: Any = None
    ) -> None:
        self._fn = fn
        self._disabled = getattr(fn, "_flambeau_compiler_disabled", False)
        self._fullgraph = fullgraph
        self._limit = recompile_limit
        self._module = module  # the nn.Module whose call fn is, if it is one: its submodules are read per capture
        self._cache: dict[Any, list[_Entry]] = {}
        self._last: _Entry | None = None  # the entry the last call of positional tensors used (its fast check)
        self._count = 0
        self._warned = False
        self._copies = False  # the next capture makes a step's copies whatever its hint (Note [Checked captures])
        functools.update_wrapper(self, fn, updated=())
        _compiled.add(self)

    def __getstate__(self) -> dict[str, Any]:
        # A copy (copy.deepcopy, pickle) starts uncompiled: the cached replays hold the original's tensors.
        state = self.__dict__.copy()
        state.update(_cache={}, _last=None, _count=0, _warned=False)
        return state

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.__dict__.update(state)
        _compiled.add(self)

    def reset(self) -> None:
        self._cache.clear()
        self._last = None
        self._count = 0
        self._warned = False
        self._copies = False

    def _reach(self) -> list[Any]:
        return list(self._module.modules()) if self._module is not None else _capture.modules_of(self._fn)

    def __call__(self, *args: Any, **kwargs: Any) -> Any:
        if self._disabled or _capture.current() is not None:
            return self._fn(*args, **kwargs)  # inside another capture: its recorder must see these ops
        last = self._last
        if last is not None and not kwargs and last.check(args):  # the common call: the last entry's again
            return _run(last.program, args) if last.program is not None else self._fn(*args)
        grad = fc.is_grad_enabled()
        modes = (grad, _C._is_autocast_enabled() and str(_C._get_autocast_dtype()))
        specs: list[tuple[Any, ...]] | None = None
        if not kwargs:  # the common call: tensors only
            specs = []
            for a in args:
                if type(a) is not Tensor:
                    specs = None
                    break
                specs.append((a.shape, a.stride(), a.requires_grad, a.dtype, a.device))
        if specs is not None:
            tensors: Any = args
            key: Any = (*specs, modes)
        else:
            tensors = []
            try:
                key = (_signature(args, tensors), _signature(kwargs, tensors) if kwargs else None, modes)
            except _Unguardable as e:
                return self._broken(str(e), args, kwargs)
        entries = self._cache.get(key)
        if entries is not None:
            for entry in entries:
                if entry.state.holds():
                    if entry.check is not None:
                        self._last = entry
                    if entry.program is None:
                        return self._fn(*args, **kwargs)
                    return _run(entry.program, tensors)
        limit = config.recompile_limit if self._limit is None else self._limit
        if self._count >= limit:
            if not self._warned:
                self._warned = True
                warnings.warn(
                    f"[compile] {getattr(self._fn, '__qualname__', self._fn)} reached the recompile limit ({limit}): "
                    "calls with new shapes, dtypes or module state run eagerly (fb.compiler.config.recompile_limit)",
                    stacklevel=2,
                )
            return self._fn(*args, **kwargs)
        if _profiler._active is None:
            return self._capture(key, tensors, args, kwargs, grad, specs, modes)
        # The capturing call is a compiled region too (its ops run eagerly inside it), with the capture
        # (recording, fusion's builds, the check replay) as a range of its own.
        with _profiler._range("Torch-Compiled Region", _KIND_USER), _profiler._range(CAPTURE_RANGE, _KIND_USER):
            return self._capture(key, tensors, args, kwargs, grad, specs, modes)

    def _broken(self, reason: str, args: tuple[Any, ...], kwargs: dict[str, Any]) -> Any:
        if self._fullgraph:
            raise Unsupported(f"[compile] fullgraph=True, but {reason}")
        return self._fn(*args, **kwargs)

    def _capture(
        self,
        key: Any,
        tensors: list[Tensor],
        args: tuple[Any, ...],
        kwargs: dict[str, Any],
        grad: bool,
        specs: list[tuple[Any, ...]] | None,
        modes: tuple[Any, ...],
    ) -> Any:
        modules = self._reach()
        fn = None if self._module is not None else self._fn
        optimizers = _capture.optimizers_of(self._fn) if self._module is None else []
        state = ModuleState(modules, fn, optimizers)
        long_lived = _capture.long_lived_tensors(self._fn, modules)
        leaves = [t for t in long_lived.values() if t.requires_grad and t.grad_fn is None]
        grads = [(t, t.grad is None) for t in leaves]  # at entry (Note [Captured backward])
        check_step = self._module is None
        copies, self._copies = self._copies, False
        cap = _capture.capture(
            self._fn, args, kwargs, list(tensors), long_lived, state.holds, check_step, optimizers, copies
        )
        if cap.retry:  # no copies to check the step on: eager this time, captured again on the next call
            self._copies = True
            return cap.result
        if cap.reason is not None and self._fullgraph:
            raise Unsupported(f"[compile] fullgraph=True, but {cap.reason}")
        self._count += 1
        if cap.reason is None or state.holds():
            pinned = {id(c) for c in cap.graph.constants} if cap.graph is not None else set()
            if cap.autograd and cap.graph is not None:  # a .grad the step sets before reading needs no guard
                first = _capture.grads_set_first(cap.graph)
                grads = [(t, none) for t, none in grads if id(t) not in first]
            # The module state is the one built before the call (it still holds): its check is reused.
            base = state if state.holds() else None
            autograd = cap.autograd
            requires = list(long_lived.values()) if autograd else []
            state = ModuleState(modules, fn, optimizers, grads if autograd else [], requires, cap.live, pinned, base)
        # else the call changed the state it read (an optimizer's first step makes its buffers): the eager
        # entry keeps the state it ran under, so the next call, under the new state, captures again.
        check = _fast_check(specs, modes, state) if specs is not None else None
        entry = _Entry(state, cap.graph, cap.reason, grad, cap.fusion, check, cap.checked)
        self._cache.setdefault(key, []).append(entry)
        if check is not None:
            self._last = entry
        return cap.result

    @property
    def graphs(self) -> list[Graph]:
        """The captured graphs (one per cached entry that replays)."""
        return [e.graph for es in self._cache.values() for e in es if e.graph is not None]

    @property
    def fused_groups(self) -> list[list[FusedGroup]]:
        """The fused groups of each captured graph, in the order of :attr:`graphs`."""
        return [e.fusion.groups if e.fusion else [] for es in self._cache.values() for e in es if e.graph is not None]

    @property
    def epilogues(self) -> list[list[tuple[str, ...]]]:
        """The ops each epilogue rewrite merged (Note [Epilogue pass]), per graph in the order of :attr:`graphs`."""
        return [
            [ep.ops for ep in e.fusion.epilogues] if e.fusion else []
            for es in self._cache.values()
            for e in es
            if e.graph is not None
        ]

    @property
    def checks(self) -> list[str | None]:
        """How each captured graph was checked against its eager run, in the order of :attr:`graphs`:
        ``"replayed"`` (with why no record of an earlier check was used, when there is something to say, in
        brackets), ``"a record of an earlier check"`` (Note [Checked captures]), None (no check applies: a
        graph that mutates its inputs or draws random numbers)."""
        return [e.checked for es in self._cache.values() for e in es if e.graph is not None]

    @property
    def break_reasons(self) -> list[str]:
        """Why the entries that run eagerly could not be captured."""
        return [e.reason for es in self._cache.values() for e in es if e.reason is not None]


def reset_all() -> None:
    for c in list(_compiled):
        c.reset()
