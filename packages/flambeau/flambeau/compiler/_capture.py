"""Capturing one call of a function: run it eagerly under core's op recorder and build its graph, or a break.

The run is the user's own call (its result is returned as is), so a capture never changes what the
program computes; whether the graph can serve later calls is decided after it (Note [Captured graph]).
"""

from __future__ import annotations

import functools
import threading
import warnings
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import flambeau_core as fc
from flambeau_core import _C

from . import _checked
from ._epilogue import fold
from ._fusion import Fusion, fuse
from ._graph import READS, Graph, GraphBreak, Ref, _at, build_graph, tensors_in
from ._live import SettingUse, bind, hyper_tensors, read_in_step
from ._replay import Program, _dead_after

Tensor = fc.Tensor

_local = threading.local()  # .capture: the _Capture running on this thread, if any


def current() -> _Capture | None:
    return getattr(_local, "capture", None)


# --------------------------------------------------------------------------- what the recorder does not see
# Calls that hand values to Python or act outside the recorded ops, with no report of their own; wrapped only
# while some thread captures. The writes the recorder reports (x[i] = v, index_put_, fill_, uniform_,
# normal_) and requires_grad_ are ops of the graph instead (Note [Captured graph]). Reads through the buffer
# protocol, np.asarray(t) and memoryview(t), cannot be wrapped from Python and stay unseen.
_READ = "the function reads a tensor's values into Python (Tensor.{})"
_HOOK = "the function registers an autograd hook (Tensor.{}), which a replay would not"
_GRAD_OF = (
    "the function runs autograd for gradients it returns (fb.autograd.grad) or with create_graph=True, which the "
    "op recorder does not record"
)
_MUTATE = "the function changes a tensor in place with Tensor.{}, which the op recorder does not report"


def _watched() -> list[tuple[Any, str, Any]]:
    import flambeau_autograd

    reads = ("numpy", "__array__", "__dlpack__", "__repr__", "__str__", "__format__", "__index__")
    hooks = ("register_hook", "retain_grad", "register_post_accumulate_grad_hook")
    mutators = ("detach_", "share_memory_", "_set_data", "_move_storage_")
    return [
        *((Tensor, name, _READ.format(name)) for name in reads),
        *((Tensor, name, _HOOK.format(name)) for name in hooks),
        *((Tensor, name, _MUTATE.format(name)) for name in mutators),
        (flambeau_autograd._C, "_run_backward", _backward_node),
        (Tensor, "grad", _grad_nodes),
    ]


_watch_lock = threading.Lock()
_watch_count = 0
_originals: list[tuple[Any, str, Any]] = []


def _watching(original: Any, reason: str) -> Callable[..., Any]:
    def call(*args: Any, **kwargs: Any) -> Any:
        cap = current()
        # Not while a recorded op runs (the recorder is busy): a custom operator's body is its own business,
        # the graph holds the operator as one op (Note [Op recorder]).
        if cap is not None and cap.breaks is None and _C._op_recorder_on():
            cap.breaks = reason
        return original(*args, **kwargs)

    call.__name__ = getattr(original, "__name__", "call")
    call.__doc__ = getattr(original, "__doc__", None)
    return call


# --------------------------------------------------------------------------- autograd inside the function
# Note [Captured backward]: ``backward()`` (autograd's engine run in C++, whose ops the recorder does not see)
# and the ``.grad`` reads and writes around it are nodes of the graph of their own: the replay runs the
# engine on the replayed loss, reads each ``.grad`` afresh and sets it as the program did, so a whole
# training step (zero_grad, forward, loss, backward, optimizer.step) replays as one program. The recorder is
# off while the engine runs (a Python hook or custom backward's ops are the engine's, run again by it on
# replay). What decides which ``.grad`` exist is guarded: each leaf's ``.grad is None`` at the call's entry,
# except for a leaf whose ``.grad`` the step sets before anything reads it (``grads_set_first``).
# Such a graph is checked by one replay on copies of the state before the call (``_step_disagrees``), or by
# the record of an earlier process's passed replay of the same fingerprint (Note [Checked captures]).
def _read_grad(t: Tensor) -> Any:
    return t.grad


def _write_grad(t: Tensor, g: Any) -> None:
    t.grad = g


def grads_set_first(graph: Graph) -> set[int]:
    """Note [Captured backward]: ids of the leaves whose ``.grad`` the graph sets before anything can read it.

    A step that starts with ``zero_grad(set_to_none=True)`` drops each ``.grad`` before any op, backward()
    or optimizer runs, so what the replay does is the same whether a ``.grad`` was None at entry or not: the
    guard on it would only cost its read (a ``.grad`` read is about 0.3 us). Only the graph's leading
    ``.grad`` reads and writes count, and a leaf read there first (by a read whose value is used) keeps its
    guard.
    """
    dead = _dead_after(graph)
    read: set[int] = set()
    first: set[int] = set()
    for index, node in enumerate(graph.nodes):
        if node.name not in ("Tensor.grad", "Tensor.grad=") or node.kwargs or not node.args:
            break
        ref = node.args[0]
        if not isinstance(ref, Ref) or ref.kind != "const":
            break
        key = id(graph.constants[ref.index])
        if node.name == "Tensor.grad":
            if node.results != [()] or node.first_value not in dead[index]:
                read.add(key)
        elif key not in read:
            first.add(key)
    return first


def _recording(cap: _Capture | None) -> bool:
    return cap is not None and cap.breaks is None and not cap.busy and _C._op_recorder_on()


def _backward_node(original: Any) -> Callable[..., Any]:
    def run_backward(*args: Any, **kwargs: Any) -> Any:
        cap = current()
        if not _recording(cap):
            return original(*args, **kwargs)
        assert cap is not None
        # (tensors, grad_tensors, retain_graph, create_graph, inputs, allow_unused, accumulate): backward()
        # accumulates into .grad; fb.autograd.grad returns the gradients, create_graph gives them a history.
        if kwargs or len(args) != 7 or not args[6] or args[3]:
            cap.breaks = _GRAD_OF
            return original(*args, **kwargs)
        recorder = _C._op_recorder()
        _C._set_op_recorder(None)
        try:
            result = original(*args)
        finally:
            _C._set_op_recorder(recorder)
        if tensors_in(result):  # backward() returns no gradients (they went into .grad)
            cap.breaks = _GRAD_OF
        else:
            cap.add_node("backward", original, args, None)
        return result

    run_backward.__name__ = getattr(original, "__name__", "_run_backward")
    run_backward.__doc__ = getattr(original, "__doc__", None)
    return run_backward


def _grad_nodes(original: Any) -> property:
    def get(t: Tensor) -> Any:
        g = original.__get__(t)
        cap = current()
        if g is not None and _recording(cap):
            assert cap is not None
            cap.add_node("Tensor.grad", _read_grad, (t,), g)
        return g

    def set_(t: Tensor, g: Any) -> None:
        original.__set__(t, g)
        cap = current()
        if _recording(cap):
            assert cap is not None
            cap.add_node("Tensor.grad=", _write_grad, (t, g), None)

    return property(get, set_, original.fdel, original.__doc__)


def _watch(on: bool) -> None:
    global _watch_count
    with _watch_lock:
        if on:
            _watch_count += 1
            if _watch_count == 1:
                for owner, name, reason in _watched():
                    original = owner.__dict__.get(name)
                    if original is not None:
                        _originals.append((owner, name, original))
                        wrap = _watching(getattr(owner, name), reason) if isinstance(reason, str) else reason(original)
                        setattr(owner, name, wrap)
        else:
            _watch_count -= 1
            if _watch_count == 0:
                for owner, name, original in _originals:
                    setattr(owner, name, original)
                _originals.clear()


# --------------------------------------------------------------------------- what the function can reach
def modules_of(fn: Any) -> list[Any]:
    """The nn.Modules a function reaches directly: itself, its ``self``, closure cells, globals it names, defaults."""
    from flambeau_nn import Module

    found: list[Any] = []
    for obj in _reachable(fn):
        if isinstance(obj, Module):
            found.extend(m for m in obj.modules() if all(m is not f for f in found))
    return found


def _reachable(fn: Any) -> Iterable[Any]:
    yield fn
    if isinstance(fn, functools.partial):  # Module.compile's forward: the module is its first argument
        yield from fn.args
        yield from fn.keywords.values()
    owner = getattr(fn, "__self__", None)
    if owner is not None:
        yield owner
        if _is_step_owner(owner):  # a training step's object: its model, optimizer and batch attributes
            yield from vars(owner).values()
    func = getattr(fn, "__func__", fn)
    code = getattr(func, "__code__", None)
    for cell in getattr(func, "__closure__", None) or ():
        try:
            yield cell.cell_contents
        except ValueError:  # an empty cell
            continue
    globs = getattr(func, "__globals__", None)
    if code is not None and globs is not None:
        for name in code.co_names:
            if name in globs:
                yield globs[name]
    yield from getattr(func, "__defaults__", None) or ()


def _is_step_owner(owner: Any) -> bool:
    """A plain object whose bound method is compiled (a trainer's ``step``): not a module, a tensor or a type."""
    from flambeau_nn import Module

    return (
        hasattr(owner, "__dict__")
        and not isinstance(owner, (Module, Tensor, type))
        and type(owner).__module__ != "builtins"
    )


def optimizers_of(fn: Any) -> list[Any]:
    """The optimizers a function reaches directly (as :func:`modules_of` finds modules)."""
    found: list[Any] = []
    for obj in _reachable(fn):
        if _is_optimizer(obj) and all(obj is not f for f in found):
            found.append(obj)
    return found


def _is_optimizer(obj: Any) -> bool:
    return hasattr(obj, "param_groups") and hasattr(obj, "state") and not isinstance(obj, type)


def long_lived_tensors(fn: Any, modules: list[Any]) -> dict[int, Tensor]:
    """Tensors that exist before the call and after it: parameters, buffers, tensor attributes, optimizer state."""
    out: dict[int, Tensor] = {}
    for m in modules:
        for v in m.__dict__.values():
            if isinstance(v, Tensor):
                out[id(v)] = v
        for d in (m._parameters, m._buffers):
            for v in d.values():
                if v is not None:
                    out[id(v)] = v
    for obj in _reachable(fn):
        if isinstance(obj, Tensor):
            out[id(obj)] = obj
        elif _is_optimizer(obj):  # its parameters and its state (momentum buffers, steps)
            for t in tensors_in([g["params"] for g in obj.param_groups]) + tensors_in(list(obj.state.values())):
                out[id(t)] = t
        elif type(obj) in (tuple, list):  # a batch kept as an attribute or global: (inputs, target)
            for t in tensors_in(obj):
                out[id(t)] = t
    return out


# --------------------------------------------------------------------------- the capture
@dataclass
class CaptureResult:
    """One captured call: the eager result, and the graph or the reason there is none; ``fusion`` its fused form."""

    result: Any
    graph: Graph | None
    reason: str | None
    fusion: Fusion | None = None
    autograd: bool = False  # the graph holds backward() or .grad nodes (Note [Captured backward])
    live: dict[int, dict[str, Any]] | None = None  # settings guarded by kind only (Note [Live hyperparameters])
    # How the graph was checked (Note [Checked captures] in _checked.py): "replayed", "replayed (<why a
    # record was not used>)" or "a record of an earlier check"; None when no check applies.
    checked: str | None = None
    # The step needed a check replay but the capture made no copies for it (Note [Checked captures]): the
    # call's result is the eager one; the next call captures again, with copies.
    retry: bool = False


class _Capture:
    def __init__(self) -> None:
        self.calls: list[tuple[str, tuple[Any, ...], dict[str, Any], Any, bool, bool]] = []
        self.breaks: str | None = None
        self.leaves: dict[int, tuple[Tensor, Any, int]] = {}  # id -> (leaf, its .grad, the grad's version)
        self.outer: Any = None
        self.results: dict[int, tuple[Tensor, bool, Any]] = {}  # id -> (result, its autograd state when made)
        self.versions: dict[int, tuple[Tensor, int]] = {}  # memory -> (a tensor on it, its version after the last op)
        self.busy = False  # the capture's own code runs (its .grad reads are not the program's)
        self.autograd = False  # a backward() or .grad node was recorded (Note [Captured backward])
        self.hyper: dict[int, tuple[Tensor, Any]] = {}  # the optimizers' tensor settings (Note [Live hyperparameters])
        self.hidden: list[tuple[Tensor, Any]] = []  # an optimizer step's reads of them: (tensor, value)

    def see_leaf(self, t: Tensor) -> None:
        if id(t) not in self.leaves and t.requires_grad and t.grad_fn is None:
            g = t.grad  # held: an id alone could be reused by another object
            self.leaves[id(t)] = (t, g, -1 if g is None else g._version)

    def record(self, name: str, args: tuple[Any, ...], kwargs: dict[str, Any] | None, result: Any) -> None:
        self.busy = True
        try:
            self._record(name, args, kwargs, result)
        finally:
            self.busy = False

    def add_node(self, name: str, target: Any, args: tuple[Any, ...], result: Any) -> None:
        """A call the recorder does not report, replayed by ``target`` (Note [Captured backward])."""
        self.busy = True
        try:
            self.autograd = True
            self.calls.append((name, _frozen(args), {}, result, fc.is_grad_enabled(), target))
            for t in tensors_in(args) + tensors_in(result):
                if t._storage_ptr:
                    self.versions[t._storage_ptr] = (t, t._version)
        finally:
            self.busy = False

    def _record(self, name: str, args: tuple[Any, ...], kwargs: dict[str, Any] | None, result: Any) -> None:
        if self.hyper and name in READS and len(args) == 1 and not kwargs and id(args[0]) in self.hyper:
            t, opt = self.hyper[id(args[0])]
            if args[0] is t and read_in_step(opt):  # its value reaches a fused op, or bind() breaks
                self.hidden.append((t, result))
                return
        # Lists and dicts as they are now: the program may change them after the call. The recorder says
        # whether the program called the method or the function (where's arguments differ between them).
        info = _C._op_call_info()
        method = bool(info[0]) if info is not None else False
        self.calls.append((name, _frozen(args), _frozen(kwargs or {}), result, fc.is_grad_enabled(), method))
        results = tensors_in(result) if not isinstance(result, Tensor) else [result]
        for t in results:
            self.results[id(t)] = (t, t.requires_grad, t.grad_fn)
        touched = tensors_in(args) + tensors_in(kwargs) if kwargs else tensors_in(args)
        for t in touched:
            if t.requires_grad and t.grad_fn is None:
                self.see_leaf(t)
        for t in touched + results:
            if t._storage_ptr:  # views share their base's version counter: one entry per memory
                self.versions[t._storage_ptr] = (t, t._version)
        if self.outer is not None:  # an enclosing recorder (fb.onnx.export of a compiled model) sees the op too
            self.outer(name, args, kwargs, result)

    def release(self) -> None:
        """Drops the recorded calls and the tensors held for the side-effect checks, once both are done.

        Note [Check replay memory]: the recorded calls hold every value the eager run made (a training step's
        activations, logits and their gradients). Kept alive through the check replay, they made each of its
        results a fresh block of memory (page faults, cold cache): measured, the check replay of the benchmark
        MobileNet's step took 1.5 to 2.9x a steady step. Released, the replay reuses their blocks as a step does.
        """
        self.calls = []
        self.results.clear()
        self.versions.clear()
        self.leaves.clear()
        self.hidden = []

    def autograd_rewired(self) -> bool:
        """Whether some result's autograd state changed after its last recorded op (Function.apply does this)."""
        return any(t.requires_grad != rg or t.grad_fn is not fn for t, rg, fn in self.results.values())

    def mutated_unseen(self) -> bool:
        """Whether some memory changed after the last recorded op that used it (an unrecorded in-place op)."""
        return any(t._version != v for t, v in self.versions.values())

    def backward_ran(self) -> bool:
        for t, grad, version in self.leaves.values():
            g = t.grad
            if g is not grad or (g is not None and g._version != version):
                return True
        return False


def _frozen(obj: Any) -> Any:
    if type(obj) is list:
        return [_frozen(x) for x in obj]
    if type(obj) is dict:
        return {k: _frozen(v) for k, v in obj.items()}
    if type(obj) is tuple:
        return tuple(_frozen(x) for x in obj)
    return obj


def _host_rng_state() -> tuple[Any, ...]:
    """Python's and NumPy's global generators, summarised: what a change of either shows in."""
    import random

    import numpy as np

    state = np.random.get_state(legacy=True)
    return random.getstate(), state[1].tobytes(), state[2]


def _rng_state() -> Any:
    return fc.get_rng_state() if hasattr(fc, "get_rng_state") else None


def capture(
    fn: Callable[..., Any],
    args: tuple[Any, ...],
    kwargs: dict[str, Any],
    inputs: list[Tensor],
    long_lived: dict[int, Tensor],
    still_valid: Callable[[], bool],
    check_step: bool = True,
    optimizers: list[Any] = (),  # type: ignore[assignment]
    copies: bool = False,
) -> CaptureResult:
    """Runs ``fn(*args, **kwargs)`` once under the op recorder; the graph of the run, or why there is none.

    ``still_valid()`` says whether the module state the guards hold is unchanged by the run. ``check_step``:
    copy the state first, so a graph holding backward() can be checked (a module's forward does without).
    ``optimizers``: those the function reaches, whose fused ops' settings become live (Note [Live hyperparameters]).
    ``copies``: make the copies even where the last capture from this state needed none (Note [Checked captures]).
    """
    cap = _Capture()
    cap.hyper = hyper_tensors(list(optimizers))
    for t in list(inputs) + list(long_lived.values()):
        cap.see_leaf(t)
    before = [(t.requires_grad, t._storage_ptr) for t in inputs]
    versions = [(t, t._version) for t in list(inputs) + list(long_lived.values())]
    grad_before = fc.is_grad_enabled()
    from ._compiled import config

    # Note [Checked captures]: the eager run's calls and the state it began in, for the fingerprint; no copies
    # where the last capture from this state needed none (its check had a record, or it broke before it).
    log = _checked.CallLog() if config.reuse_checks else None
    entry = {id(t): _entry_state(t) for t in (*inputs, *long_lived.values())} if log else {}
    state = _checked.state_key(fn, [*inputs, *long_lived.values()], entry, grad_before) if log and check_step else None
    skip = state is not None and not copies and _checked.hinted(state)
    twins = None
    if check_step and not skip:  # copies for checking a training step (below), made unseen by any recorder
        global copies_made
        copies_made += 1
        recorder = _C._op_recorder()
        _C._set_op_recorder(None)
        try:
            twins = _twins(list(inputs) + list(long_lived.values()))
        finally:
            _C._set_op_recorder(recorder)
    rng_before = _rng_state()
    seed_before = fc.initial_seed()
    host_rng_before = _host_rng_state()
    outer = _C._op_recorder()
    cap.outer = outer
    prev_capture = current()
    _local.capture = cap
    settings = SettingUse(list(optimizers)) if optimizers else None
    _watch(True)
    _C._set_op_recorder(cap.record)
    try:
        if settings is None:
            result = _logged(fn, args, kwargs, log, None)
        else:
            with settings:
                result = _logged(fn, args, kwargs, log, settings)
    finally:
        _C._set_op_recorder(outer)
        _watch(False)
        _local.capture = prev_capture
    _C._set_op_recorder(None)  # what the capture computes below is not the program's: no recorder sees it
    try:
        reason = cap.breaks or _side_effects(cap, inputs, before, grad_before, still_valid)
        if reason is None and _host_rng_state() != host_rng_before:
            reason = "the function draws Python or NumPy random numbers, which a replay would repeat"
        if reason is None and fc.initial_seed() != seed_before:
            reason = "the function seeds the random generator (fb.manual_seed), which a replay would not"
        graph = fusion = live = checked = None
        needs_copies = False  # the step's check found no record: only a replay on copies can check it
        if reason is None:
            rng_after = _rng_state()
            advanced = rng_before is not None and not bool((rng_before == rng_after).all())
            grads = {id(t.grad) for t, _, _ in cap.leaves.values() if t.grad is not None}
            graph = build_graph(inputs, cap.calls, result, long_lived, advanced, grads)
            live = bind(graph, list(optimizers), cap.hidden, settings.suspect) if settings is not None else None
            if cap.autograd and not check_step:
                reason, graph = "a module's forward runs backward() or reads .grad (compile the training step)", None
            else:
                # Fused before the check replay (it reads the recorded values), which then runs without the
                # eager run's intermediates alive: it reuses their cached blocks instead of touching fresh
                # memory (Note [Check replay memory]). A graph the check refuses drops its fusion.
                fusion = _fuse(graph, list(inputs), cap.calls)
                cap.release()
            # Not with backward() or .grad nodes: replaying them would accumulate or set .grad again.
            if graph is None:
                pass
            elif not advanced and not cap.autograd and all(t._version == v for t, v in versions):
                reason, checked, _ = _check(
                    lambda: _replay_disagrees(graph, inputs, result, grad_before),
                    graph, inputs, entry, grad_before, False, log,
                )  # fmt: skip
                graph = None if reason else graph
            elif not advanced and cap.autograd:
                replay = None if twins is None else lambda: _step_disagrees(graph, inputs, result, grad_before, twins)
                reason, checked, recorded = _check(replay, graph, inputs, entry, grad_before, True, log)
                needs_copies = not recorded
                graph = None if reason else graph
    except GraphBreak as e:
        reason, graph = str(e), None
    except Exception as e:  # a gap of the capture, never the user's: their run already succeeded
        reason, graph = f"the capture failed ({type(e).__name__}: {e})", None
    finally:
        _C._set_op_recorder(outer)
    checked = checked if graph is not None else None
    retry = reason == NO_COPIES
    if state is not None and (retry or needs_copies):
        _checked.unhint(state)
    elif state is not None and not skip:
        _checked.hint(state)
    out = CaptureResult(result, graph, reason, fusion if graph is not None else None, cap.autograd, live, checked)
    out.retry = retry
    return out


copies_made = 0  # sets of copies made for a step's check replay (tests read it)
NO_COPIES = "the capture made no copies to check the step on (the last one from this state needed none)"


def _entry_state(t: Tensor) -> tuple[bool, bool]:
    """(requires_grad, has a .grad) of a tensor as the call begins; only a leaf's .grad is read (a result's
    .grad read warns)."""
    return t.requires_grad, t.requires_grad and t.grad_fn is None and t.grad is not None


def _logged(fn: Callable[..., Any], args: tuple[Any, ...], kwargs: dict[str, Any], log: Any, settings: Any) -> Any:
    """``fn(*args, **kwargs)`` with its calls logged (Note [Checked captures]), unless another profiler runs."""
    if log is None or not log.start(settings):
        if log is not None:
            log.codes = None  # another profiler: the calls were not watched
        return fn(*args, **kwargs)
    try:
        return fn(*args, **kwargs)
    finally:
        if not log.stop():
            log.codes = None  # the function replaced the watch: the calls after that were not watched


def _check_code() -> list[Any]:
    """The functions a check replay runs, as this module holds them now (a test may replace one)."""
    return [_step_disagrees, _replay_disagrees, _same, _close, _twins, Program.__init__, _dead_after]


def _check(
    replay: Callable[[], str | None] | None,
    graph: Graph,
    inputs: list[Tensor],
    entry: dict[int, tuple[bool, bool]],
    grad: bool,
    step: bool,
    log: Any,
) -> tuple[str | None, str, bool]:
    """(why the graph is refused or None, how it was checked, whether a record vouches for it now): by the
    record of an earlier check of the same fingerprint, or ``replay()``, whose pass writes the record (Note
    [Checked captures]); ``replay`` None: there are no copies to replay on (refused with ``NO_COPIES``)."""
    digest = why = None
    if log is not None and log.codes is None:
        why = "another profiler was installed (sys.setprofile), so the calls could not be watched"
    elif log is not None:
        try:
            digest = _checked.fingerprint(graph, inputs, entry, grad, step, log, _check_code())
        except Exception as e:  # no stable description: the check replays
            why = _checked.opaque_reason(e)
        finally:
            log.codes = log.builtins = None  # (the log holds every function the run called)
    if digest is not None:
        found, why = _checked.lookup(digest)
        if found:
            return None, "a record of an earlier check", True
    if replay is None:
        return NO_COPIES, "not checked", False
    reason = replay()
    if reason is None and digest is not None:
        _checked.store(digest, len(graph.nodes))
    return reason, f"replayed ({why})" if why else "replayed", reason is None and digest is not None


def _fuse(graph: Graph, inputs: list[Tensor], calls: list[Any]) -> Fusion | None:
    """The graph's fused form (Note [Elementwise fusion]), if ``config.fusion`` is on and any run fuses."""
    from ._compiled import config

    if not config.fusion:
        return None
    try:
        values = [_at(call[3], path) for call, node in zip(calls, graph.nodes, strict=True) for path in node.results]
        folded = fold(graph, inputs, values)  # Note [Epilogue pass]
        if folded is not None:
            graph, values = folded.graph, folded.values
        fusion = fuse(graph, inputs, values)
        if folded is None:
            return fusion
        if fusion is None:
            return Fusion(graph, [], folded.epilogues)
        fusion.epilogues = folded.epilogues
        return fusion
    except Exception as e:  # a gap of the fusion pass: the graph runs unfused, never wrong
        warnings.warn(f"[compile] the fusion pass failed, the ops run unfused ({type(e).__name__}: {e})", stacklevel=4)
        return None


def _replay_disagrees(graph: Graph, inputs: list[Tensor], result: Any, grad: bool) -> str | None:
    """Replays a graph that mutates nothing and draws no random numbers once, on the captured call's inputs.

    A safety net under the capture's own checks: a replay that does not give the eager result (an op
    replayed with the wrong callable, a value read the capture did not see) would be wrong on every call.
    """
    replayed = Program(graph, grad).run(*inputs)
    if not _same(result, replayed):
        return "replaying the captured ops does not reproduce the eager result (an op the capture misreads)"
    return None


def _twins(tensors: list[Tensor]) -> dict[int, Tensor]:
    """Copies of the tensors a call may change, as they are before it: values, ``requires_grad`` and ``.grad``."""
    out: dict[int, Tensor] = {}
    for t in tensors:
        if id(t) in out:
            continue
        twin = t.detach().clone()  # detached: no autograd history to the original
        if t.requires_grad:
            twin.requires_grad_(True)
            if t.is_leaf and t.grad_dtype != t.dtype:  # its gradients keep that dtype (None: any)
                twin.grad_dtype = t.grad_dtype
        g = t.grad if t.requires_grad else None
        if g is not None:
            twin.grad = g.detach().clone()
        out[id(t)] = twin
    return out


def _step_disagrees(
    graph: Graph, inputs: list[Tensor], result: Any, grad: bool, twins: dict[int, Tensor]
) -> str | None:
    """Note [Captured backward]: replays a graph holding backward() once on copies of its inputs, parameters,
    gradients and optimizer state as they were before the call (the real ones must not step twice), and
    compares its result and every copy's values and ``.grad`` after it with the eager call's.
    """
    copy = Graph(graph.num_inputs, [twins.get(id(c), c) for c in graph.constants], graph.nodes, graph.num_values)
    copy.output = graph.output
    replayed = Program(copy, grad).run(*(twins[id(t)] for t in inputs))
    if not _same(result, replayed):
        return "replaying the captured step does not reproduce the eager result (an op the capture misreads)"
    for c, twin in zip(graph.constants, copy.constants, strict=True):
        if twin is c:
            continue
        grads = (c.grad, twin.grad) if c.requires_grad else (None, None)
        if not _same(c.detach(), twin.detach()) or (grads[0] is None) != (grads[1] is None):
            return "replaying the captured step does not leave the parameters and state of the eager step"
        if grads[0] is not None and not _same(grads[0], grads[1]):
            return "replaying the captured step does not give the eager step's gradients"
    return None


def _same(a: Any, b: Any) -> bool:
    if isinstance(a, Tensor):
        if not isinstance(b, Tensor) or a.shape != b.shape or a.dtype != b.dtype:
            return False
        if a.is_floating_point() or a.is_complex():
            return a.numel() == 0 or _close(a.detach(), b.detach())
        return bool(fc.equal(a, b))
    if isinstance(a, (list, tuple)):
        return isinstance(b, (list, tuple)) and len(a) == len(b) and all(map(_same, a, b))
    if isinstance(a, dict):
        return isinstance(b, dict) and a.keys() == b.keys() and all(_same(a[k], b[k]) for k in a)
    return bool(a == b) if not isinstance(b, Tensor) else False


def _close(a: Tensor, b: Tensor) -> bool:
    """Two floating results agree: NaN where the other has NaN, the same infinities, finite values close.

    Threaded kernels may sum in another order, so the last bits can differ between two runs: the largest
    difference of the finite values against the largest finite value.
    """
    if a.is_complex():
        a, b = fc.view_as_real(a), fc.view_as_real(b)
    if bool((a == b).all()):  # the common case, equal values (so no NaN): one pass, not ten
        return True
    rtol = 1e-4
    if a.element_size() < 4:  # float16, bfloat16
        a, b, rtol = a.float(), b.float(), 1e-2
    finite = a.isfinite()
    if not fc.equal(finite, b.isfinite()) or not fc.equal(a.isnan(), b.isnan()):
        return False
    if not bool(finite.all()):
        if not bool(((a == b) | finite | a.isnan()).all()):  # the same infinities in the same places
            return False
        a, b = a.where(finite, 0.0), b.where(finite, 0.0)
    return bool((a - b).abs().max() <= 1e-6 + rtol * a.abs().max())


def _side_effects(
    cap: _Capture,
    inputs: list[Tensor],
    before: list[tuple[bool, int]],
    grad_before: bool,
    still_valid: Callable[[], bool],
) -> str | None:
    """What the run did that a replay of its recorded ops would not do again."""
    if cap.autograd and any(t.requires_grad for t in inputs):
        return "the function runs backward() while an input tensor requires grad (its .grad state is not guarded)"
    if not cap.autograd and cap.backward_ran():  # with backward() captured, .grad changes are its nodes'
        return "the function runs autograd (backward() or a .grad change), which the op recorder does not record"
    if cap.autograd_rewired():
        return (
            "the function changes a result's autograd history outside recorded ops (a custom "
            "autograd.Function, a module backward hook)"
        )
    if cap.mutated_unseen():
        return "the function changes a tensor in place after its last recorded use, by an op the recorder misses"
    if fc.is_grad_enabled() != grad_before:
        return "the function changes the grad mode without restoring it"
    for i, (t, (rg, ptr)) in enumerate(zip(inputs, before, strict=True)):
        if t.requires_grad != rg:
            return f"the function changes requires_grad of input tensor {i}"
        if t._storage_ptr != ptr:
            return f"the function replaces the memory of input tensor {i} (.data = or set_)"
    if not still_valid():
        return (
            "the function changes a module's attributes (training mode, parameters, submodules, settings) or a "
            "global or closure value it reads (such as a list it appends to)"
        )
    return None


def graph_break(reason: str) -> None:
    """Marks the capture running on this thread, if any, as not replayable for ``reason``."""
    cap = current()
    if cap is not None and cap.breaks is None:
        cap.breaks = reason
