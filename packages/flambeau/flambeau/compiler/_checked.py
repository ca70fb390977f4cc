"""Records of captures whose check replay passed, kept in the disk cache so a later process can reuse the verdict.

Note [Checked captures]
The capture checks a graph by replaying it once against the eager run it recorded (``_replay_disagrees``,
``_step_disagrees`` in ``_capture.py``): a training step's check costs one more step, most of a warm compile
(the fused kernels already on disk). That verdict depends on what the replay runs and what the eager run
did, and both are written down here as a *fingerprint*:

* the environment: the Python version, the machine and its instruction set, and the size and modification
  time of every library (``.so``) of flambeau's packages and of the Python files of core, autograd and
  this compiler (the code a replay may run that the eager run did not);
* the checked graph, node by node: each op's name and the callable that replays it (a built-in by its
  module and name, a Python function by its code, defaults and closure), its arguments (references and
  plain values), grad mode and results; every constant's shape, strides, dtype, device, ``requires_grad``,
  whether it had a ``.grad`` at entry and which memory it shares with the others and the inputs; the inputs
  alike; the output; the grad mode of the call and the kind of check (a step or a forward);
* the eager run's calls, in order: every Python function it ran (by its code: bytecode, names, constants,
  file and line) and every built-in it called (by module and name), watched with ``sys.setprofile``;
* the check itself: the functions of ``_capture.py`` that replay and compare, as the module holds them
  now (a check replaced at run time, as a test does, is another fingerprint).

After a check replay passes, a record named by the fingerprint's hash is written under the extension
cache (``compile_checked/``). A later capture with the same fingerprint skips its check replay: the same
code ran the same ops, recorded into the same graph by the same compiler, so replaying it does what that
earlier replay did. Anything else checks by replay, as without records:

* the eager run called a built-in outside Python's own and flambeau's modules (NumPy, another extension,
  memoryview) or a raw-memory accessor (``data_ptr``): such a call could read or write tensor memory that
  neither the op recorder nor the version counters see, whose effect only a replay shows;
* another profiler was installed (the calls could not be watched), a value of the graph has no stable
  description (an object known only by its identity), or ``config.reuse_checks`` is off;
* no record, or one that cannot be read or does not hold its own name (a damaged file): the check
  replays (``CompiledFunction.checks`` says why), and a passing replay writes the record again.

The watch costs well under a millisecond per capture (a few hundred to a few thousand calls per step of
the benchmark models); the files' sizes and times are read once per process (about 300 files, 7 ms).
The copies of the parameters, gradients and optimizer state a step's check replays on must be made before
the eager run, though whether a record applies is known only after it; made for nothing, they cost their
copy and the fresh memory the step then takes instead of the blocks they took (measured: 0.1-0.17 s of CPU
for the benchmark LSTM's capture). So a capture from a state (the step's code, its object's type, the
shapes, dtypes and ``.grad`` of the tensors it starts from) that needed no copies last time (its check had a
record, or it broke before any check) leaves a *hint* (``<key>.hint``), and the next capture from that
state makes none. Where the hint was wrong (the step's check finds no record), the capture cannot check the
step: the call's eager result stands, no entry is made, the hint is dropped, and the next call captures
again with copies (``CaptureResult.retry``). A hint decides only whether copies are made, never whether a
graph is used.

One way to write a tensor's memory stays unseen by the watch too: ``memoryview(t)`` (calling a type is no
profiler event) and an item assignment through it. A step that does so only in some processes, with the
same code and graph otherwise, would take the record of one that did not; the capture-time replay catches
such a write only when it happens during the capturing call, too.

What a record cannot vouch for: the values themselves. The earlier replay ran on that process's values
and this capture's on none; a fault that shows only for some values (a kernel wrong on some inputs) is
caught by a replay only when the capturing call's values show it, so a record changes which values were
tried, not which kinds of fault are looked for.
"""

from __future__ import annotations

import hashlib
import json
import os
import platform
import sys
import types
from typing import Any

import flambeau_core as fc

from . import _disk_cache
from ._graph import Graph, Ref

Tensor = fc.Tensor

FORMAT = 1
_FOLDER = "compile_checked"

# Built-ins the eager run may call without losing the record's fast path: Python's own modules and
# methods of its built-in types, and flambeau's, but none that hands out raw memory.
_PURE_MODULES = frozenset(
    {"builtins", "_operator", "operator", "math", "_functools", "functools", "itertools", "_collections",
     "collections", "_abc", "abc", "_weakref", "weakref", "_weakrefset", "_thread", "sys", "_contextvars",
     "typing", "contextlib", "dataclasses", "enum", "copy", "_heapq", "_bisect", "time"}
)  # fmt: skip
_RAW_MEMORY = frozenset(
    {"data_ptr", "untyped_storage", "storage", "_storage", "__dlpack__", "__array__", "numpy", "tolist",
     "__array_interface__", "from_numpy", "frombuffer", "from_dlpack", "share_memory_", "setprofile", "settrace"}
)  # fmt: skip


_PYBIND = "pybind11_builtins"
# The packages whose Python code a replay may run without the eager run having run it (an op's Python
# function and its helpers; autograd's engine and its Python); the others' Python code that a step runs is in
# the calls' fingerprint, by its code.
_PYTHON_PACKAGES = frozenset({"flambeau_core", "flambeau_autograd"})


class _Opaque(Exception):  # noqa: N818 (internal signal: no stable description)
    pass


# --------------------------------------------------------------------------- the eager run's calls
class CallLog:
    """Watches the calls of one eager run (``sys.setprofile``): ``codes`` of the Python functions it ran,
    ``builtins`` it called, in order.

    ``start(owner)`` chains the profiler ``owner`` installed (the capture's own watch of the optimizer settings,
    Note [Live hyperparameters]) and returns False, installing nothing, when another one is installed.
    """

    __slots__ = ("codes", "builtins", "_inner", "_on")

    def __init__(self) -> None:
        self.codes: list[Any] = []
        self.builtins: list[Any] = []
        self._inner: Any = None
        self._on = False

    def start(self, inner_owner: Any = None) -> bool:
        current = sys.getprofile()
        if current is not None and (inner_owner is None or getattr(current, "__self__", None) is not inner_owner):
            return False
        self._inner = current
        sys.setprofile(self._event if current is None else self._chained)
        self._on = True
        return True

    def stop(self) -> bool:
        """Uninstalls the watch; False when the run replaced it (``sys.setprofile`` inside the step: the
        calls after that were not watched)."""
        if not self._on:
            return False
        still = getattr(sys.getprofile(), "__self__", None) is self
        sys.setprofile(self._inner)
        self._on = False
        if still and self.builtins and self.builtins[-1] is sys.setprofile:
            self.builtins.pop()  # the watch saw its own uninstalling call
        return still

    def _event(self, frame: Any, event: str, arg: Any) -> None:
        if event == "call":
            self.codes.append(frame.f_code)
        elif event == "c_call":
            self.builtins.append(arg)

    def _chained(self, frame: Any, event: str, arg: Any) -> None:
        if event == "call":
            self.codes.append(frame.f_code)
        elif event == "c_call":
            self.builtins.append(arg)
        self._inner(frame, event, arg)


_code_digests: dict[int, tuple[Any, str]] = {}  # id(code) -> (the code, held so the id stays its own; digest)


def _code_digest(code: Any) -> str:
    held = _code_digests.get(id(code))
    if held is not None and held[0] is code:
        return held[1]
    h = hashlib.blake2b(digest_size=16)
    for part in (code.co_code, code.co_filename, code.co_qualname, code.co_firstlineno, code.co_flags,
                 code.co_argcount, code.co_kwonlyargcount, code.co_posonlyargcount, code.co_names,
                 code.co_varnames, code.co_freevars, code.co_cellvars):  # fmt: skip
        h.update(repr(part).encode())
        h.update(b"\0")
    for c in code.co_consts:
        h.update((_code_digest(c) if isinstance(c, types.CodeType) else _plain_const(c)).encode())
        h.update(b"\0")
    digest = h.hexdigest()
    if len(_code_digests) > 20_000:  # generated code (exec, lambdas made per call) must not pile up
        _code_digests.clear()
    _code_digests[id(code)] = (code, digest)
    return digest


def _plain_const(c: Any) -> str:
    if isinstance(c, frozenset):  # its order follows string hashing, which varies between processes
        return "frozenset(" + ",".join(sorted(_plain_const(x) for x in c)) + ")"
    if isinstance(c, tuple):
        return "(" + ",".join(_plain_const(x) for x in c) + ")"
    if isinstance(c, types.CodeType):
        return _code_digest(c)
    return f"{type(c).__name__}:{c!r}"


def _builtin_name(fn: Any) -> str:
    """A called built-in by module and name; ``_Opaque`` for one that may touch memory unseen."""
    name = getattr(fn, "__name__", None)
    owner = getattr(fn, "__self__", None)
    module = getattr(fn, "__module__", None)
    if (
        module is None
        and owner is not None
        and not isinstance(owner, types.ModuleType)
        and (type(owner).__module__ != _PYBIND)
    ):
        module = type(owner).__module__
        name = f"{type(owner).__qualname__}.{name}"
    if isinstance(name, str) and (name.rpartition(".")[2] in _RAW_MEMORY or "memoryview" in name):
        raise _Opaque(f"the step calls {name}, which hands out a tensor's memory")
    if not isinstance(name, str) or not isinstance(module, str):
        raise _Opaque(f"the step calls a built-in without a module and name ({fn!r})")
    if module not in _PURE_MODULES and not module.startswith("flambeau"):
        raise _Opaque(f"the step calls {module}.{name}, a built-in outside Python's and flambeau's modules")
    return f"{module}.{name}"


def _log_digest(log: CallLog) -> str:
    h = hashlib.blake2b(digest_size=16)
    for code in log.codes:
        h.update(_code_digest(code).encode())
    h.update(b"|")
    names: dict[int, str] = {}  # within one log, an id is one object (the log holds them all)
    for fn in log.builtins:
        name = names.get(id(fn))
        if name is None:
            name = names[id(fn)] = _builtin_name(fn)
        h.update(name.encode())
        h.update(b";")
    return h.hexdigest()


# --------------------------------------------------------------------------- the environment
_ENVIRONMENT: str | None = None


def environment() -> str:
    """What the check's verdict depends on besides the graph: Python, the machine, flambeau's files."""
    global _ENVIRONMENT
    if _ENVIRONMENT is None:
        from ._cpp_kernel import isa

        h = hashlib.blake2b(digest_size=16)
        h.update(f"{FORMAT}|{sys.version}|{platform.machine()}|{isa()}".encode())
        # Every folder a loaded flambeau module lives in (an editable install keeps the Python files in the
        # source tree and the built libraries in site-packages), walked from its top-most folders.
        folders = {
            os.path.dirname(mod.__file__)
            for name, mod in list(sys.modules.items())
            if name.startswith("flambeau") and isinstance(getattr(mod, "__file__", None), str)
        }
        roots = sorted(d for d in folders if not any(d != e and d.startswith(e + os.sep) for e in folders))
        here = os.path.dirname(os.path.abspath(__file__))
        for root in roots:
            python = os.path.basename(root) in _PYTHON_PACKAGES
            for folder, dirs, files in os.walk(root):
                dirs[:] = sorted(d for d in dirs if d != "__pycache__")
                for f in sorted(files):
                    library = f.endswith(".so") or ".so." in f
                    if library or (f.endswith(".py") and (python or folder == here)):
                        path = os.path.join(folder, f)
                        try:
                            st = os.stat(path)
                        except OSError:
                            continue
                        h.update(f"{path}:{st.st_size}:{st.st_mtime_ns};".encode())
        _ENVIRONMENT = h.hexdigest()
    return _ENVIRONMENT


# --------------------------------------------------------------------------- the graph
def _tensor(t: Tensor) -> str:
    return (
        f"T{tuple(t.shape)}{t.stride()}{t.storage_offset()}{t.dtype}{t.device}"
        f"{int(t.requires_grad)}{int(t.grad_fn is None)}"
    )


def _value(a: Any) -> str:
    if isinstance(a, Ref):
        return f"%{a.kind[0]}{a.index}"
    t = type(a)
    if a is None or t in (bool, int, str, bytes, complex):
        return f"{t.__name__}:{a!r}"
    if t is float:
        return f"f:{a.hex()}"
    if t in (list, tuple):
        return t.__name__[0] + "[" + ",".join(_value(x) for x in a) + "]"
    if isinstance(a, tuple):  # a named tuple holding references
        return f"{t.__module__}.{t.__qualname__}[" + ",".join(_value(x) for x in a) + "]"
    if t is dict:
        return "{" + ",".join(f"{_value(k)}:{_value(v)}" for k, v in a.items()) + "}"
    if t is slice:
        return f"slice({_value(a.start)},{_value(a.stop)},{_value(a.step)})"
    if isinstance(a, (fc.dtype, fc.device)):
        return f"{t.__name__}:{a}"
    if t.__name__ == "Live" and t.__module__.startswith("flambeau.compiler"):
        return f"live:{a!r}"
    text = repr(a)
    if t.__module__.startswith("flambeau") and " at 0x" not in text and "object at" not in text:
        return f"{t.__module__}.{t.__qualname__}:{text}"
    raise _Opaque(f"a value of type {t.__name__}")


def _callable(fn: Any) -> str:
    if isinstance(fn, types.FunctionType):
        parts = [f"py:{fn.__module__}.{fn.__qualname__}:{_code_digest(fn.__code__)}"]
        parts += [_value(d) for d in fn.__defaults__ or ()]
        parts += [f"{k}={_value(v)}" for k, v in (fn.__kwdefaults__ or {}).items()]
        for cell in fn.__closure__ or ():
            contents = cell.cell_contents
            parts.append(_callable(contents) if callable(contents) else _value(contents))
        return "(" + ",".join(parts) + ")"
    if isinstance(fn, types.MethodType):
        raise _Opaque("a bound method")
    if isinstance(fn, (types.BuiltinFunctionType, types.MethodDescriptorType, types.WrapperDescriptorType)) or (
        type(fn).__name__ == "instancemethod"
    ):
        owner = getattr(fn, "__self__", None)  # a module, or pybind11's record of the function
        if owner is not None and not isinstance(owner, types.ModuleType) and type(owner).__module__ != _PYBIND:
            raise _Opaque("a built-in bound to an object")
        objclass = getattr(fn, "__objclass__", None) or getattr(getattr(fn, "__func__", None), "__objclass__", None)
        where = getattr(fn, "__module__", None) or (
            f"{objclass.__module__}.{objclass.__qualname__}" if objclass else ""
        )
        return f"c:{type(fn).__name__}:{where}.{getattr(fn, '__name__', '?')}"
    raise _Opaque(f"a callable of type {type(fn).__name__}")


def fingerprint(
    graph: Graph,
    inputs: list[Tensor],
    entry: dict[int, tuple[bool, bool]],
    grad: bool,
    step: bool,
    log: CallLog,
    checker: list[Any] = (),  # type: ignore[assignment]
) -> str:
    """Note [Checked captures]: the hash of what the check replay of ``graph`` depends on; ``_Opaque`` (with
    the reason) when some part has no stable description. ``entry``: id -> (requires_grad, has a .grad) of
    the call's tensors as they were when it began; ``checker``: the functions the check replay would run."""
    h = hashlib.blake2b(digest_size=20)

    def put(s: str) -> None:
        h.update(s.encode())
        h.update(b"\n")

    from ._compiled import config  # the replay of a step writes tables' gradients itself unless it is off

    tables = int(config.reuse_table_grads)  # (Note [Reused table gradients])
    put(f"{environment()}|grad={int(grad)}|step={int(step)}|tables={tables}|{graph.num_inputs}|{graph.num_values}")
    memory: dict[int, int] = {}  # storage -> the first tensor on it, numbered over inputs then constants
    for k, t in enumerate([*inputs, *graph.constants]):
        rg, has_grad = entry.get(id(t), (t.requires_grad, False))
        first = memory.setdefault(t._storage_ptr, k) if t._storage_ptr else -1
        put(f"{_tensor(t)}|{int(rg)}{int(has_grad)}|{first}")
    for node in graph.nodes:
        args = ",".join(_value(a) for a in node.args)
        kwargs = ",".join(f"{k}={_value(v)}" for k, v in node.kwargs.items())
        put(f"{node.name}|{_callable(node.target)}|{args}|{kwargs}|{int(node.grad_enabled)}|{node.first_value}|"
            f"{node.results}")  # fmt: skip
    put(f"out:{_value(graph.output)}")
    put(f"calls:{_log_digest(log)}")
    put("check:" + ",".join(_callable(f) for f in checker))
    return h.hexdigest()


# --------------------------------------------------------------------------- the records
def _folder() -> str:
    from flambeau import _cpp_extension as ext

    return os.path.join(ext._extensions_root(), _FOLDER)


def lookup(digest: str) -> tuple[bool, str | None]:
    """(a record of ``digest`` is there, why one that is there cannot be used); never raises."""
    try:
        path = os.path.join(_folder(), digest + ".json")
    except Exception as e:
        return False, f"the extension cache is unavailable ({type(e).__name__}: {e})"
    try:
        with open(path, encoding="utf-8") as f:
            text = f.read(4096)
    except FileNotFoundError:
        return False, None
    except (OSError, ValueError) as e:  # ValueError: UnicodeDecodeError of a file that is not text
        return False, f"the record {path} cannot be read ({type(e).__name__}: {e})"
    try:
        record = json.loads(text)
        ok = isinstance(record, dict) and record.get("format") == FORMAT and record.get("fingerprint") == digest
    except ValueError as e:
        return False, f"the record {path} is damaged ({e})"
    if not ok:
        return False, f"the record {path} does not hold its own fingerprint (damaged or of another version)"
    _disk_cache.used(path)  # Note [Bounded compile cache]: its last use
    return True, None


def store(digest: str, nodes: int) -> None:
    """Writes the record of a passed check (atomically: a reader sees the whole file or none); never raises."""
    try:
        folder = _folder()
        os.makedirs(folder, exist_ok=True)
        path = os.path.join(folder, digest + ".json")
        tmp = f"{path}.{os.getpid()}.tmp"
        with open(tmp, "w", encoding="utf-8") as f:
            json.dump({"format": FORMAT, "fingerprint": digest, "nodes": nodes}, f)
        os.replace(tmp, path)
        _disk_cache.wrote(path)
    except Exception:  # a read-only or full cache: the next process checks by replay again
        return


# --------------------------------------------------------------------------- hints: copies a step may skip
def _loose(obj: Any) -> str:
    """A description for a hint's key: exact where one is at hand, else the type (a wrong hint costs a capture)."""
    try:
        return _callable(obj) if callable(obj) else _value(obj)
    except Exception:
        return f"{type(obj).__module__}.{type(obj).__qualname__}"


def state_key(fn: Any, tensors: list[Tensor], entry: dict[int, tuple[bool, bool]], grad: bool) -> str | None:
    """The key of a step's hint (Note [Checked captures]): the function's code and closure, its object's type,
    and the shapes, dtypes, ``requires_grad`` and ``.grad`` of the tensors it starts from; None when there is
    no Python function to name."""
    owner = getattr(fn, "__self__", None)
    func = getattr(fn, "__func__", fn)
    if not isinstance(func, types.FunctionType):
        return None
    try:
        h = hashlib.blake2b(digest_size=20)
        kind = f"{type(owner).__module__}.{type(owner).__qualname__}"
        h.update(f"hint|{environment()}|{int(grad)}|{kind}|{_code_digest(func.__code__)}|".encode())
        for cell in func.__closure__ or ():
            h.update(_loose(cell.cell_contents).encode())
        for t in tensors:
            rg, has_grad = entry.get(id(t), (t.requires_grad, False))
            h.update(f"{_tensor(t)}|{int(rg)}{int(has_grad)};".encode())
    except Exception:  # an empty cell, a tensor without strides: copies are made
        return None
    return h.hexdigest()


def hinted(key: str) -> bool:
    """Whether the last capture from this state needed no copies (never raises: False)."""
    try:
        path = os.path.join(_folder(), key + ".hint")
        if not os.path.exists(path):
            return False
        _disk_cache.used(path)
        return True
    except Exception:
        return False


def hint(key: str) -> None:
    try:
        folder = _folder()
        os.makedirs(folder, exist_ok=True)
        path = os.path.join(folder, key + ".hint")
        with open(path, "w", encoding="utf-8"):
            pass
        _disk_cache.wrote(path)
    except Exception:
        return


def unhint(key: str) -> None:
    try:
        os.remove(os.path.join(_folder(), key + ".hint"))
    except Exception:
        return


def opaque_reason(e: BaseException) -> str:
    return str(e) if isinstance(e, _Opaque) else f"{type(e).__name__}: {e}"


# --------------------------------------------------------------------------- kernel agreement records
# Note [Batch norm relu agreement records] (_bn_relu.py) and Note [Fused agreement records] (_fusion.py): a
# generated kernel's passed check against its eager ops, kept in the same folder and format as the graph
# records, under the environment and the check's own parts.
def agreement_digest(kind: str, *parts: Any) -> str:
    """The fingerprint of a ``kind`` check on ``parts`` (the kernel's name, shapes, numbers) here."""
    text = "|".join([kind, environment(), *(repr(p) for p in parts)])
    return hashlib.blake2b(text.encode(), digest_size=20).hexdigest()


def agreed_before(digest: str) -> bool:
    """Whether a record of a passed check stands for this one (never with ``config.reuse_checks`` off)."""
    from ._compiled import config

    return config.reuse_checks and lookup(digest)[0]


def record_agreement(digest: str) -> None:
    """Records a passed check (nothing with ``config.reuse_checks`` off); never raises."""
    from ._compiled import config

    if config.reuse_checks:
        store(digest, 1)


__all__ = [
    "CallLog",
    "environment",
    "fingerprint",
    "lookup",
    "store",
    "opaque_reason",
    "agreement_digest",
    "agreed_before",
    "record_agreement",
]
