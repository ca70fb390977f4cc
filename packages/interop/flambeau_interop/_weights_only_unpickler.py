"""The restricted unpickler behind ``load(..., weights_only=True)``.

Note [weights_only unpickling]
A pickle is a program for a small stack machine; its GLOBAL opcode imports
any name and REDUCE calls it, so ``pickle.load`` of a hostile file runs
anything (``os.system``). This machine implements only the opcodes that
protocol-2 checkpoints use (PyTorch's list) and never imports: GLOBAL
resolves a name through a table (PyTorch's allowlist translated to flambeau
objects, see Note [Torch names in checkpoints], plus the names the user marked
safe with ``add_safe_globals``), and anything else is refused with
``pickle.UnpicklingError`` naming the global and how to allow it. Modules
``sys``, ``os``, ``posix`` and ``nt`` are refused even when allowlisted.
REDUCE calls only allowlisted callables, NEWOBJ instantiates only
allowlisted classes, BUILD sets state only on OrderedDicts, parameters and
allowlisted types; APPEND(S) works on lists and SETITEM(S) on dicts only.
Persistent ids are only ``('storage', ...)`` tuples, resolved by the caller.

The machine is a loop over the bytes (no recursion), so deep nesting cannot
overflow the C stack; a result nested deeper than ``MAX_DEPTH`` is refused
anyway (no ``torch.save`` can write one: pickling it would hit Python's
recursion limit). Every malformed input (stack underflow, a missing memo
entry, a truncated string) raises ``UnpicklingError`` with the byte offset.
"""

from __future__ import annotations

import io
import pickle
import struct
from collections import Counter, OrderedDict
from collections.abc import Callable
from typing import Any

from flambeau_interop import _torch_names

UnpicklingError = pickle.UnpicklingError
MAX_DEPTH = 1000

_BLOCKED_MODULES = ("sys", "os", "posix", "nt")

# Python 2 names that protocol-2 pickles may carry (the standard _compat_pickle renames that matter here).
_PY2_NAMES = {
    ("__builtin__", "set"): ("builtins", "set"),
    ("__builtin__", "complex"): ("builtins", "complex"),
    ("__builtin__", "bytearray"): ("builtins", "bytearray"),
    ("__builtin__", "long"): ("builtins", "int"),
    ("__builtin__", "unicode"): ("builtins", "str"),
}

_safe_globals: set[Callable | tuple[Callable, str]] = set()


def _allowed_by_default() -> dict[str, object]:
    names = dict(_torch_names.TORCH_NAMES)
    names.update(
        {
            "collections.OrderedDict": OrderedDict,
            "collections.Counter": Counter,
            "_codecs.encode": _encode,
            "builtins.bytearray": bytearray,
            "builtins.set": set,
            "builtins.complex": complex,
        }
    )
    return names


def _encode(text: object, encoding: object = "utf-8") -> bytes:
    # Protocol 2 writes bytes as _codecs.encode(str, 'latin1'); only text codecs are allowed.
    if not isinstance(text, str) or encoding not in ("latin1", "latin-1", "utf-8", "utf8", "ascii"):
        raise UnpicklingError(f"_codecs.encode is allowed for str with a text codec only, got {encoding!r:.40}")
    return text.encode(encoding)


_DEFAULT_ALLOWED = _allowed_by_default()
_DEFAULT_VALUES = {id(v) for v in _DEFAULT_ALLOWED.values()}


def add_safe_globals(safe_globals: list[Callable | tuple[Callable, str]]) -> None:
    """Marks globals as safe for ``load(..., weights_only=True)`` (``torch.serialization.add_safe_globals``).

    Each item is a function or class, found in a checkpoint under
    ``f"{obj.__module__}.{obj.__qualname__}"``, or a tuple ``(obj, "module.name")``
    when the checkpoint names it differently. Allowed classes may be
    instantiated and have their state set while loading; allowed functions may
    be called. Only mark code you trust.

    Example:
        >>> import collections
        >>> add_safe_globals([collections.namedtuple])
        >>> collections.namedtuple in get_safe_globals()
        True
        >>> clear_safe_globals()
    """
    if not isinstance(safe_globals, (list, tuple, set)):
        raise TypeError(f"[add_safe_globals] expected a list of globals, got {type(safe_globals).__name__}")
    for g in safe_globals:
        _full_name(g)  # validates the item
    _safe_globals.update(safe_globals)


def get_safe_globals() -> list[Callable | tuple[Callable, str]]:
    """The globals added by ``add_safe_globals`` (``torch.serialization.get_safe_globals``).

    Example:
        >>> get_safe_globals()
        []
    """
    return list(_safe_globals)


def clear_safe_globals() -> None:
    """Forgets every global added by ``add_safe_globals`` (``torch.serialization.clear_safe_globals``).

    Example:
        >>> clear_safe_globals(); get_safe_globals()
        []
    """
    _safe_globals.clear()


class safe_globals:  # noqa: N801  (PyTorch's name)
    """Context manager: ``add_safe_globals`` on entry, removed again on exit (``torch.serialization.safe_globals``).

    Example:
        >>> import collections
        >>> with safe_globals([collections.namedtuple]):
        ...     len(get_safe_globals())
        1
        >>> get_safe_globals()
        []
    """

    def __init__(self, safe_globals: list[Callable | tuple[Callable, str]]) -> None:
        self.safe_globals = list(safe_globals)

    def __enter__(self) -> None:
        new = [g for g in self.safe_globals if g not in _safe_globals]
        add_safe_globals(new)
        self._added = new

    def __exit__(self, *exc: object) -> None:
        _safe_globals.difference_update(self._added)


def _full_name(g: object) -> tuple[str, object]:
    if isinstance(g, tuple):
        if len(g) != 2:
            raise ValueError(f"[add_safe_globals] expected (global, 'module.name'), got a tuple of length {len(g)}")
        if type(g[1]) is not str:
            raise TypeError(f"[add_safe_globals] the name in {g!r} must be a str, got {type(g[1]).__name__}")
        return g[1], g[0]
    module, name = getattr(g, "__module__", None), getattr(g, "__qualname__", None)
    if not isinstance(module, str) or not isinstance(name, str):
        raise TypeError(f"[add_safe_globals] {g!r:.60} has no __module__/__qualname__; pass it as (obj, 'module.name')")
    return f"{module}.{name}", g


def _user_allowed() -> dict[str, object]:
    return dict(_full_name(g) for g in _safe_globals)


def _read_global(readline: Callable[[], bytes]) -> tuple[str, str]:
    module = readline()[:-1].decode("utf-8")
    name = readline()[:-1].decode("utf-8")
    return _PY2_NAMES.get((module, name), (module, name))


def refusal_message(full_name: str, module: str) -> str:
    if module in _BLOCKED_MODULES:
        return (
            f"GLOBAL {full_name} is refused: module {module} is blocked for weights_only=True loads and "
            "cannot be allowlisted"
        )
    return (
        f"GLOBAL {full_name} was not an allowed global by default. If you trust this class/function, use "
        f"`flambeau.serialization.add_safe_globals([{full_name.rpartition('.')[2]}])` or the "
        f"`flambeau.serialization.safe_globals([...])` context manager to allowlist it, or load with "
        "weights_only=False if you trust the whole file (that can run arbitrary code)"
    )


def globals_in_pickle(data: bytes) -> set[str]:
    """Every ``module.name`` a protocol-2 pickle names with GLOBAL, found without running it."""
    found: set[str] = set()
    try:
        import pickletools

        for op, arg, _ in pickletools.genops(data):
            if op.name == "GLOBAL":
                module, _, name = arg.partition(" ")
                module, name = _PY2_NAMES.get((module, name), (module, name))
                found.add(f"{module}.{name}")
    except Exception as e:  # noqa: BLE001  (any malformed pickle)
        raise UnpicklingError(f"the pickle is malformed: {e}") from None
    return found


def unsafe_globals(data: bytes) -> list[str]:
    allowed = _DEFAULT_ALLOWED.keys() | _user_allowed().keys()
    return sorted(globals_in_pickle(data) - allowed)


class Unpickler:
    """Runs a protocol-2 pickle with only the allowlisted globals (Note [weights_only unpickling]).

    ``persistent_load(pid)`` is called for ``('storage', ...)`` persistent ids.
    """

    def __init__(self, file: io.BufferedIOBase, persistent_load: Callable[[tuple], object]) -> None:
        self._file = file
        self._persistent_load = persistent_load

    def _read(self, n: int) -> bytes:
        b = self._file.read(n)
        if len(b) != n:
            raise UnpicklingError(f"the pickle ends after {self._file.tell()} bytes, inside an opcode")
        return b

    def _readline(self) -> bytes:
        b = self._file.readline()
        if not b.endswith(b"\n"):
            raise UnpicklingError("the pickle ends inside a GLOBAL name")
        return b

    def load(self) -> Any:
        try:
            result = self._run()
        except UnpicklingError:
            raise
        except (IndexError, KeyError, TypeError, ValueError, struct.error, UnicodeDecodeError, OverflowError) as e:
            if str(e).startswith("[load]"):
                raise
            raise UnpicklingError(
                f"the pickle is malformed at byte {self._file.tell()}: {type(e).__name__}: {e}"
            ) from None
        _check_depth(result)
        return result

    def _run(self) -> Any:  # noqa: C901, PLR0912, PLR0915  (one branch per opcode, as pickle's own loop)
        read, readline = self._read, self._readline
        stack: list[Any] = []
        metastack: list[list[Any]] = []
        memo: dict[int, Any] = {}
        default_allowed = _DEFAULT_ALLOWED
        user_allowed = _user_allowed()
        callables = {id(v) for v in user_allowed.values()} | _DEFAULT_VALUES

        def pop_mark() -> list[Any]:
            nonlocal stack
            items = stack
            stack = metastack.pop()
            return items

        while True:
            key = self._file.read(1)
            if not key:
                raise UnpicklingError("the pickle ends without a STOP opcode")
            op = key[0]
            if op == 0x63:  # GLOBAL
                module, name = _read_global(readline)
                full_name = f"{module}.{name}"
                if module in _BLOCKED_MODULES:
                    raise UnpicklingError(refusal_message(full_name, module))
                if full_name in user_allowed:
                    stack.append(user_allowed[full_name])
                elif full_name in default_allowed:
                    stack.append(default_allowed[full_name])
                else:
                    raise UnpicklingError(refusal_message(full_name, module))
            elif op == 0x81:  # NEWOBJ
                args = stack.pop()
                cls = stack.pop()
                if isinstance(cls, _torch_names.LazyParameter):
                    stack.append(cls(*args))
                elif id(cls) in callables and isinstance(cls, type):
                    stack.append(cls.__new__(cls, *args))
                else:
                    raise UnpicklingError(f"NEWOBJ can only create allowlisted classes, got {cls!r:.80}")
            elif op == 0x52:  # REDUCE
                args = stack.pop()
                func = stack[-1]
                if id(func) not in callables:
                    raise UnpicklingError(f"REDUCE can only call allowlisted functions, got {func!r:.80}")
                if not isinstance(args, tuple):
                    raise UnpicklingError(f"REDUCE arguments must be a tuple, got {type(args).__name__}")
                stack[-1] = func(*args)
            elif op == 0x62:  # BUILD
                state = stack.pop()
                inst = stack[-1]
                if type(inst) is OrderedDict:
                    if not isinstance(state, dict):
                        raise UnpicklingError(f"BUILD of an OrderedDict needs a dict state, got {type(state).__name__}")
                    inst.__dict__.update(state)
                elif _is_parameter(inst) or type(inst) in user_allowed.values():
                    _build(inst, state)
                else:
                    raise UnpicklingError(
                        f"BUILD can only set the state of OrderedDicts, parameters and allowlisted types, got "
                        f"{type(inst).__name__}"
                    )
            elif op == 0x61:  # APPEND
                item = stack.pop()
                if type(stack[-1]) is not list:
                    raise UnpicklingError(f"APPEND only works on lists, got {type(stack[-1]).__name__}")
                stack[-1].append(item)
            elif op == 0x65:  # APPENDS
                items = pop_mark()
                if type(stack[-1]) is not list:
                    raise UnpicklingError(f"APPENDS only works on lists, got {type(stack[-1]).__name__}")
                stack[-1].extend(items)
            elif op == 0x73:  # SETITEM
                value, k = stack.pop(), stack.pop()
                _check_dict(stack[-1], "SETITEM")
                stack[-1][k] = value
            elif op == 0x75:  # SETITEMS
                items = pop_mark()
                _check_dict(stack[-1], "SETITEMS")
                if len(items) % 2:
                    raise UnpicklingError("SETITEMS needs key/value pairs, got an odd number of items")
                for i in range(0, len(items), 2):
                    stack[-1][items[i]] = items[i + 1]
            elif op == 0x28:  # MARK
                if len(metastack) >= MAX_DEPTH:
                    raise UnpicklingError(f"the pickle nests more than {MAX_DEPTH} MARKs")
                metastack.append(stack)
                stack = []
            elif op == 0x74:  # TUPLE
                items = pop_mark()  # before naming `stack`: pop_mark rebinds it
                stack.append(tuple(items))
            elif op == 0x85:  # TUPLE1
                stack[-1] = (stack[-1],)
            elif op == 0x86:  # TUPLE2
                if len(stack) < 2:
                    raise IndexError("TUPLE2 needs two items")
                stack[-2:] = [(stack[-2], stack[-1])]
            elif op == 0x87:  # TUPLE3
                if len(stack) < 3:
                    raise IndexError("TUPLE3 needs three items")
                stack[-3:] = [(stack[-3], stack[-2], stack[-1])]
            elif op == 0x4E:  # NONE
                stack.append(None)
            elif op == 0x89:  # NEWFALSE
                stack.append(False)
            elif op == 0x88:  # NEWTRUE
                stack.append(True)
            elif op == 0x29:  # EMPTY_TUPLE
                stack.append(())
            elif op == 0x5D:  # EMPTY_LIST
                stack.append([])
            elif op == 0x7D:  # EMPTY_DICT
                stack.append({})
            elif op == 0x8F:  # EMPTY_SET
                stack.append(set())
            elif op == 0x4A:  # BININT
                stack.append(struct.unpack("<i", read(4))[0])
            elif op == 0x4B:  # BININT1
                stack.append(read(1)[0])
            elif op == 0x4D:  # BININT2
                stack.append(struct.unpack("<H", read(2))[0])
            elif op == 0x47:  # BINFLOAT
                stack.append(struct.unpack(">d", read(8))[0])
            elif op == 0x58:  # BINUNICODE
                (n,) = struct.unpack("<I", read(4))
                stack.append(str(read(n), "utf-8", "surrogatepass"))
            elif op == 0x55:  # SHORT_BINSTRING (Python 2 str), decoded as torch.load decodes it
                stack.append(read(read(1)[0]).decode("utf-8"))
            elif op == 0x51:  # BINPERSID
                pid = stack.pop()
                if type(pid) is not tuple or not pid or pid[0] not in ("storage", b"storage"):
                    raise UnpicklingError(f"only ('storage', ...) persistent ids are allowed, got {pid!r:.80}")
                stack.append(self._persistent_load(pid))
            elif op == 0x68:  # BINGET
                stack.append(memo[read(1)[0]])
            elif op == 0x6A:  # LONG_BINGET
                stack.append(memo[struct.unpack("<I", read(4))[0]])
            elif op == 0x71:  # BINPUT
                memo[read(1)[0]] = stack[-1]
            elif op == 0x72:  # LONG_BINPUT
                memo[struct.unpack("<I", read(4))[0]] = stack[-1]
            elif op == 0x8A:  # LONG1
                stack.append(int.from_bytes(read(read(1)[0]), "little", signed=True))
            elif op == 0x80:  # PROTO
                read(1)
            elif op == 0x2E:  # STOP
                if metastack:
                    raise UnpicklingError("the pickle stops inside an unclosed MARK")
                return stack.pop()
            else:
                raise UnpicklingError(
                    f"unsupported opcode {key!r} at byte {self._file.tell() - 1} (weights_only=True reads the "
                    "protocol-2 opcodes torch.save writes)"
                )


def _is_parameter(inst: object) -> bool:
    param = _torch_names.parameter_class()
    return param is not None and type(inst) is param


def _check_dict(target: object, opcode: str) -> None:
    if type(target) not in (dict, OrderedDict, Counter):
        raise UnpicklingError(f"{opcode} only works on dict, OrderedDict and Counter, got {type(target).__name__}")


def _build(inst: Any, state: Any) -> None:
    if hasattr(inst, "__setstate__"):
        inst.__setstate__(state)
        return
    slots = None
    if isinstance(state, tuple) and len(state) == 2:
        state, slots = state
    for part in (state, slots):
        if part:
            if not isinstance(part, dict):
                raise UnpicklingError(f"BUILD state must be a dict, got {type(part).__name__}")
            for k, v in part.items():
                setattr(inst, k, v)


def _check_depth(result: object) -> None:
    # Iterative: the point is to refuse what recursive code (repr, ==, deepcopy) would choke on.
    seen: set[int] = set()
    todo = [(result, 1)]
    while todo:
        obj, depth = todo.pop()
        if isinstance(obj, (list, tuple, dict, set, frozenset)):
            if depth > MAX_DEPTH:
                raise UnpicklingError(f"the checkpoint nests containers more than {MAX_DEPTH} levels deep")
            if id(obj) in seen:
                continue
            seen.add(id(obj))
            children = list(obj.keys()) + list(obj.values()) if isinstance(obj, dict) else obj
            todo.extend((c, depth + 1) for c in children)
