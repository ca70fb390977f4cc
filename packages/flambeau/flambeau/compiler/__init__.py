"""``fb.compile`` and ``fb.compiler`` (PyTorch's ``torch.compile`` and ``torch.compiler``).

``fb.compile(fn)`` captures what ``fn`` does on tensors the first time it runs (core's op recorder), guards
the capture on what it depended on (Note [Compile guards] in ``_compiled.py``) and replays the recorded ops
directly on later matching calls (Note [Replay program] in ``_replay.py``), without the function's Python
code, module calls or hooks. What cannot be replayed faithfully is a graph break (Note [Captured graph] in
``_graph.py``): the function then runs eagerly, so a result is never wrong. Runs of elementwise ops are
fused into generated C++ kernels (Note [Elementwise fusion] in ``_fusion.py``); memory planning and a
Python-free ``reduce-overhead`` mode are not done yet (``docs/compile.md``).

Example:
    >>> import flambeau as fb
    >>> model = fb.nn.Sequential(fb.nn.Linear(4, 3), fb.nn.ReLU())
    >>> compiled = fb.compile(model)
    >>> x = fb.randn(2, 4)
    >>> bool(fb.allclose(compiled(x), model(x)))
    True
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, TypeVar

from flambeau_nn import Module

from . import _capture, _compiled, _disk_cache
from ._compiled import CompiledFunction, Unsupported, config
from ._graph import Graph

__all__ = [
    "clear_cache",
    "compile",
    "config",
    "disable",
    "explain",
    "is_compiling",
    "list_backends",
    "reset",
    "ExplainOutput",
    "OptimizedModule",
    "Unsupported",
]

F = TypeVar("F", bound=Callable[..., Any])

_MODES = ("default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs")
# All mean the same here: capture, elementwise fusion (unless config.fusion is off) and replay.
_BACKENDS = ("inductor", "eager", "aot_eager")


def list_backends(exclude_tags: tuple[str, ...] | None = ()) -> list[str]:
    """The backend names :func:`compile` accepts (``torch.compiler.list_backends``).

    Every backend runs the captured graph by replay here; ``exclude_tags`` is accepted for PyTorch's
    signature and filters nothing.

    Example:
        >>> import flambeau as fb
        >>> "inductor" in fb.compiler.list_backends()
        True
    """
    return sorted(_BACKENDS)


class OptimizedModule(Module):
    """The module :func:`compile` returns for an ``nn.Module`` (``torch._dynamo.eval_frame.OptimizedModule``).

    It holds the original module as ``_orig_mod`` (so its parameters are the original's, and
    ``state_dict()`` keys start with ``_orig_mod.`` as in PyTorch), calls it through the compiled path, and
    forwards attribute reads to it.

    Example:
        >>> import flambeau as fb
        >>> lin = fb.nn.Linear(2, 2)
        >>> opt = fb.compile(lin)
        >>> opt._orig_mod is lin, list(opt.state_dict())
        (True, ['_orig_mod.weight', '_orig_mod.bias'])
    """

    def __init__(self, mod: Module, compiled: CompiledFunction) -> None:
        super().__init__()
        self._orig_mod = mod
        object.__setattr__(self, "_compiled_call", compiled)

    @property
    def training(self) -> bool:  # type: ignore[override]
        """The original module's ``training`` flag (PyTorch's OptimizedModule mirrors it too).

        Example:
            >>> import flambeau as fb
            >>> lin = fb.nn.Linear(2, 2)
            >>> opt = fb.compile(lin)
            >>> _ = lin.eval()
            >>> opt.training
            False
        """
        return self.__dict__["_modules"]["_orig_mod"].training

    @training.setter
    def training(self, mode: bool) -> None:
        orig = self.__dict__.get("_modules", {}).get("_orig_mod")
        if orig is not None:  # Module.__init__ sets it before there is an original
            orig.training = mode

    def forward(self, *args: Any, **kwargs: Any) -> Any:
        """Calls the original module through the compiled path (captured on new guards, replayed otherwise).

        Example:
            >>> import flambeau as fb
            >>> relu = fb.compile(fb.nn.ReLU())
            >>> relu(fb.tensor([-1.0, 2.0]))
            tensor([0., 2.])
        """
        return self._compiled_call(*args, **kwargs)

    def __getattr__(self, name: str) -> Any:
        try:
            return super().__getattr__(name)
        except AttributeError:
            return getattr(self.__dict__["_modules"]["_orig_mod"], name)


OptimizedModule.__module__ = "flambeau.compiler"


def _check(mode: Any, backend: Any, options: Any, fullgraph: Any, dynamic: Any) -> None:
    if mode is not None and options is not None:
        raise RuntimeError(
            "[compile] Either mode or options can be specified, but both can't be specified at the same time."
        )
    if mode is not None and mode not in _MODES:
        raise RuntimeError(f"[compile] Unrecognized mode={mode}, should be one of: {', '.join(_MODES)}")
    if callable(backend):
        raise TypeError(
            "[compile] a callable backend (it would receive an FX GraphModule) is not supported; "
            f"expected one of {list(_BACKENDS)}"
        )
    if backend not in _BACKENDS:
        raise RuntimeError(
            f"[compile] Invalid backend: {backend!r}, see `fb.compiler.list_backends()` for available backends."
        )
    if options is not None and not isinstance(options, dict):
        raise TypeError(f"[compile] options must be a dict, got {type(options).__name__}")
    if not isinstance(fullgraph, bool):
        raise TypeError(f"[compile] fullgraph must be a bool, got {type(fullgraph).__name__}")
    if dynamic is not None and not isinstance(dynamic, bool):
        raise TypeError(f"[compile] dynamic must be a bool or None, got {type(dynamic).__name__}")


def _check_limit(recompile_limit: Any) -> None:
    if recompile_limit is not None and (not isinstance(recompile_limit, int) or recompile_limit < 0):
        raise ValueError(f"[compile] recompile_limit must be a non-negative int, got {recompile_limit!r}")


def compile(  # noqa: A001 (PyTorch's name)
    model: Callable[..., Any] | None = None,
    *,
    fullgraph: bool = False,
    dynamic: bool | None = None,
    backend: str | Callable[..., Any] | None = "inductor",
    mode: str | None = None,
    options: dict[str, Any] | None = None,
    name: str | None = None,
    disable: bool = False,
    recompile_limit: int | None = None,
) -> Any:
    """Compiles a function or module: later calls replay what the first call did (``torch.compile``).

    The first call with new argument shapes, dtypes, devices, ``requires_grad``, grad mode or module state
    runs ``model`` eagerly while core's op recorder captures its tensor ops; later calls that match those
    guards run the recorded ops directly (no Python code of the function, no module call or hook), with
    autograd and random ops behaving as in eager. What the capture cannot replay faithfully (reading a
    tensor's value into Python, as ``if x.sum() > 0`` or ``x.item()`` do; an unreported view such as ``x.T``;
    ``fb.autograd.grad`` inside the function) is a graph break: the function then runs eagerly for those
    guards, or, with ``fullgraph=True``, :class:`Unsupported` is raised (after that eager call ran). A whole
    training step (``zero_grad``, forward, loss, ``backward()``, ``optimizer.step()``) is one graph, guarded
    on the optimizer's settings and state and on which parameters have a ``.grad`` (Note [Captured
    backward]); the settings an LR scheduler changes (``lr``, ``momentum``, ``betas``, ...) are read at
    replay, so a scheduler stepped every iteration costs no new capture (Note [Live hyperparameters]).
    Each compiled callable keeps at most ``fb.compiler.config.recompile_limit`` (8) captures; beyond that,
    new guards run eagerly. At capture, runs of elementwise ops are fused into generated C++ kernels, with a
    generated backward kernel where their inputs require grad (Note [Elementwise fusion], Note [Fused
    backward]; ``fb.compiler.config.fusion`` turns it off). Each graph is checked once against the eager run
    it recorded, by a replay; a passed check is recorded in the extension cache, so a later process capturing
    the same code into the same graph skips that replay (Note [Checked captures];
    ``fb.compiler.config.reuse_checks`` turns it off).

    Args:
        model: the function or ``nn.Module``; omitted, ``compile`` returns a decorator.
        fullgraph: raise :class:`Unsupported` instead of running eagerly on a graph break.
        dynamic: accepted for PyTorch's signature; shapes are always specialised here (each new shape is a
            new capture), as ``dynamic=False`` would do.
        backend: ``"inductor"`` (default), ``"eager"`` or ``"aot_eager"``: all replay the captured ops, fused.
        mode: ``"default"``, ``"reduce-overhead"``, ``"max-autotune"`` or ``"max-autotune-no-cudagraphs"``:
            validated, all replay the captured ops, fused.
        options: backend options (validated as a dict; none is used yet). Not together with ``mode``.
        name: accepted for PyTorch's signature.
        disable: return ``model`` itself, uncompiled.
        recompile_limit: this callable's limit on captures instead of ``config.recompile_limit``.

    Returns:
        an :class:`OptimizedModule` for a module, a compiled callable for a function, or a decorator.

    Example:
        >>> import flambeau as fb
        >>> @fb.compile
        ... def f(x):
        ...     return (x * 2).relu() + 1
        >>> x = fb.tensor([-1.0, 2.0])
        >>> f(x)  # captured
        tensor([1., 5.])
        >>> f(x)  # replayed
        tensor([1., 5.])
    """
    _check(mode, backend, options, fullgraph, dynamic)
    _check_limit(recompile_limit)

    def wrap(fn: Any) -> Any:
        if not callable(fn):
            raise TypeError(f"[compile] expected a callable (a function or an nn.Module), got {type(fn).__name__}")
        if disable:
            return fn
        if isinstance(fn, Module):
            return OptimizedModule(fn, CompiledFunction(fn.__call__, fullgraph, recompile_limit, fn))
        return CompiledFunction(fn, fullgraph, recompile_limit)

    return wrap if model is None else wrap(model)


def _compile_module(self: Module, **options: Any) -> None:
    """Compiles this module in place: its later calls run ``forward`` through :func:`flambeau.compile`.

    ``torch.nn.Module.compile``: ``options`` are :func:`flambeau.compile`'s (``fullgraph``, ``mode``, ...).
    The module's hooks still run around the compiled ``forward`` (eagerly); ``disable=True`` undoes an
    earlier ``compile()``.

    Example:
        >>> import flambeau as fb
        >>> model = fb.nn.Sequential(fb.nn.Linear(3, 2), fb.nn.ReLU())
        >>> model.compile()
        >>> x = fb.randn(4, 3)
        >>> bool(fb.equal(model(x), model[1](model[0](x))))
        True
    """
    forward = functools.partial(type(self).forward, self)  # not a bound method: copies rebind it to the copy
    compiled = compile(forward, **options)
    if isinstance(self.__dict__.get("forward"), CompiledFunction):
        del self.__dict__["forward"]
    if compiled is not forward:  # disable=True gives the function back
        object.__setattr__(self, "forward", compiled)


# Module.__call__ calls self.forward: an instance attribute takes over. (nn sits below this package.)
Module.compile = _compile_module  # type: ignore[attr-defined]


def reset() -> None:
    """Forgets every capture of every compiled callable, so the next call captures again (``torch.compiler.reset``).

    Example:
        >>> import flambeau as fb
        >>> f = fb.compile(lambda x: x + 1)
        >>> _ = f(fb.ones(2))
        >>> fb.compiler.reset()
        >>> f.graphs
        []
    """
    _compiled.reset_all()


def clear_cache() -> int:
    """Deletes fb.compile's files in the extension cache, its fused kernels and check records; returns the bytes freed.

    :func:`reset`, as ``torch.compiler.reset``, leaves the disk cache alone; this empties it (PyTorch has no
    public call for this). It removes the entries of every Python version and flambeau ABI under the cache's
    root (``$FLAMBEAU_EXTENSIONS_DIR``, else ``~/.cache/flambeau_extensions``), except a kernel another
    process is building; anything else there, such as extensions built by ``cpp_extension.load``, stays.
    Kernels this process loaded keep running; a later capture builds them again. Day to day the cache is
    bounded by ``fb.compiler.config.cache_size_limit_mb`` (Note [Bounded compile cache]).

    Example:
        >>> import flambeau as fb
        >>> fb.compiler.config.cache_size_limit_mb  # MiB; None: no limit
        512
        >>> freed = fb.compiler.clear_cache()  # doctest: +SKIP
    """
    return _disk_cache.clear()


def is_compiling() -> bool:
    """Whether this thread is capturing a compiled function now (``torch.compiler.is_compiling``).

    Example:
        >>> import flambeau as fb
        >>> seen = []
        >>> f = fb.compile(lambda x: seen.append(fb.compiler.is_compiling()) or x * 2)
        >>> _ = f(fb.ones(1))
        >>> seen, fb.compiler.is_compiling()
        ([True], False)
    """
    return _capture.current() is not None


def disable(fn: F | None = None, recursive: bool = True, *, reason: str | None = None) -> Any:
    """Runs ``fn`` eagerly, never captured (``torch.compiler.disable``); a decorator too.

    Called while a compiled function is being captured, it is a graph break (the enclosing function runs
    eagerly for those guards); compiling ``fn`` itself gives ``fn``'s eager calls. ``recursive`` is accepted
    for PyTorch's signature (nothing inside ``fn`` is captured either way).

    Example:
        >>> import flambeau as fb
        >>> @fb.compiler.disable
        ... def log(x):
        ...     return x
        >>> f = fb.compile(lambda x: log(x) + 1)
        >>> _ = f(fb.ones(2))
        >>> fb.compiler.explain(lambda x: log(x) + 1, fb.ones(2)).break_reasons
        ['the function calls log, marked fb.compiler.disable']
    """
    if fn is None:
        return functools.partial(disable, recursive=recursive, reason=reason)
    if not callable(fn):
        raise TypeError(f"[disable] expected a callable, got {type(fn).__name__}")
    why = f"the function calls {getattr(fn, '__qualname__', type(fn).__name__)}, marked fb.compiler.disable"
    if reason:
        why += f" ({reason})"

    @functools.wraps(fn)
    def eager(*args: Any, **kwargs: Any) -> Any:
        _capture.graph_break(why)
        return fn(*args, **kwargs)

    eager._flambeau_compiler_disabled = True  # type: ignore[attr-defined]
    return eager


@dataclass
class ExplainOutput:
    """What :func:`explain` found (``torch._dynamo.backends.debugging.ExplainOutput``).

    ``graphs`` holds the captured graph (none on a break: the function then runs eagerly as a whole),
    ``ops_per_graph`` the op names of each graph, ``fused_per_graph`` the op names of each fused kernel of
    each graph (Note [Elementwise fusion]).

    Example:
        >>> import flambeau as fb
        >>> out = fb.compiler.explain(lambda x: x.relu() * 2, fb.ones(3))
        >>> out.graph_count, out.graph_break_count, out.ops_per_graph
        (1, 0, [['relu', 'mul']])
    """

    graphs: list[Graph] = field(default_factory=list)
    graph_count: int = 0
    graph_break_count: int = 0
    break_reasons: list[str] = field(default_factory=list)
    op_count: int = 0
    ops_per_graph: list[list[str]] = field(default_factory=list)
    fused_per_graph: list[list[list[str]]] = field(default_factory=list)

    def __str__(self) -> str:
        lines = [
            f"Graph Count: {self.graph_count}",
            f"Graph Break Count: {self.graph_break_count}",
            f"Op Count: {self.op_count}",
            "Break Reasons:",
            *(f"  Break Reason {i + 1}: {r}" for i, r in enumerate(self.break_reasons)),
            "Ops per Graph:",
        ]
        for i, ops in enumerate(self.ops_per_graph):
            lines.append(f"  Ops {i + 1}: {', '.join(ops)}")
        lines.append("Fused Kernels per Graph:")
        for i, groups in enumerate(self.fused_per_graph):
            lines += [f"  Graph {i + 1}: {', '.join(g)}" for g in groups]
        return "\n".join(lines)


def explain(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """Captures one call of ``fn`` and reports its graph or why it breaks (``torch._dynamo.explain``).

    ``fn`` runs once (eagerly, with its side effects) on ``args``; nothing is cached. Without arguments it
    returns a function taking them, as ``torch._dynamo.explain(fn)(*args)`` does.

    Example:
        >>> import flambeau as fb
        >>> def f(x):
        ...     return x + 1 if x.sum() > 0 else x - 1
        >>> out = fb.compiler.explain(f, fb.ones(2))
        >>> out.graph_count, out.graph_break_count
        (0, 1)
        >>> out.break_reasons[0]
        "the function reads a tensor's value into Python (__bool__): data-dependent control flow"
    """
    if not callable(fn):
        raise TypeError(f"[explain] expected a callable, got {type(fn).__name__}")
    if not args and not kwargs:
        return functools.partial(_explain, fn)
    return _explain(fn, *args, **kwargs)


def _explain(fn: Callable[..., Any], *args: Any, **kwargs: Any) -> Any:
    """:func:`explain` of one call (also of a function without arguments: ``explain(step)()``)."""
    module = fn if isinstance(fn, Module) else None
    probe = CompiledFunction(fn.__call__ if module is not None else fn, False, 1, module)
    probe._copies = True  # one call: a capture that can check its step (Note [Checked captures])
    probe(*args, **kwargs)
    graphs, reasons = probe.graphs, probe.break_reasons
    ops = [g.op_names() for g in graphs]
    fused = [[list(g.ops) for g in groups] for groups in probe.fused_groups]
    return ExplainOutput(graphs, len(graphs), len(reasons), reasons, sum(map(len, ops)), ops, fused)
