"""Operator schemas: the parsed form of ``"ns::name.overload(Tensor x, *, float alpha=1.0) -> Tensor"``.

:func:`parse_schema` reads PyTorch's schema language (the subset a custom
operator uses: tensors with alias annotations ``Tensor(a!)``, optionals ``T?``,
lists ``T[]``/``T[N]``, defaults, keyword-only arguments after ``*``, named and
tuple returns); :func:`infer_schema` writes one from a Python function's type
hints, as ``torch.library.infer_schema`` does. A schema is parsed once, when the
operator is defined; a call never looks at it again (it runs the dispatcher
built from it, ``_dispatch.py``).
"""

from __future__ import annotations

import collections.abc
import dataclasses
import inspect
import re
import typing
from collections.abc import Callable, Iterable
from typing import Any

import flambeau_core as fc
from flambeau_core import FlambeauError

# The base types of the schema language this package accepts (PyTorch's names).
BASE_TYPES = frozenset(
    "Tensor int SymInt float bool str Scalar ScalarType Device Layout MemoryFormat Generator".split()
)


@dataclasses.dataclass(frozen=True)
class SchemaType:
    """One type of the schema language: ``Tensor``, ``int[2]``, ``Tensor?[]``, ``float[]?``."""

    base: str
    is_list: bool = False
    list_len: int | None = None
    elem_optional: bool = False  # Tensor?[]
    optional: bool = False  # T? or T[]?

    def __str__(self) -> str:
        s = self.base + ("?" if self.elem_optional else "")
        if self.is_list:
            s += f"[{'' if self.list_len is None else self.list_len}]"
        return s + ("?" if self.optional else "")

    @property
    def is_tensor_like(self) -> bool:
        return self.base == "Tensor"


@dataclasses.dataclass(frozen=True)
class Argument:
    """An argument (or a return) of a schema."""

    name: str
    type: SchemaType
    default: Any = inspect.Parameter.empty
    kwarg_only: bool = False
    alias: str | None = None  # "a" of Tensor(a!)
    is_write: bool = False  # the "!" of Tensor(a!): the operator mutates it

    @property
    def has_default(self) -> bool:
        return self.default is not inspect.Parameter.empty

    def __str__(self) -> str:
        t = str(self.type)
        if self.alias is not None:
            ann = f"({self.alias}{'!' if self.is_write else ''})"
            t = t.replace("Tensor", "Tensor" + ann, 1)
        s = f"{t} {self.name}" if self.name else t
        if self.has_default:
            s += f"={_default_repr(self.default)}"
        return s


@dataclasses.dataclass(frozen=True)
class FunctionSchema:
    """A parsed schema: name, overload name, arguments, returns."""

    name: str  # "ns::name" (or "name" when the schema has no namespace)
    overload_name: str
    arguments: tuple[Argument, ...]
    returns: tuple[Argument, ...]
    returns_tuple: bool  # "-> (Tensor, Tensor)" or "-> (Tensor)" rather than "-> Tensor"

    @property
    def is_mutable(self) -> bool:
        return any(a.is_write for a in self.arguments)

    @property
    def mutated_names(self) -> tuple[str, ...]:
        return tuple(a.name for a in self.arguments if a.is_write)

    def __str__(self) -> str:
        name = self.name + (f".{self.overload_name}" if self.overload_name else "")
        args: list[str] = []
        for a in self.arguments:
            if a.kwarg_only and "*" not in args:
                args.append("*")
            args.append(str(a))
        if self.returns_tuple or len(self.returns) != 1:
            rets = "(" + ", ".join(str(r) for r in self.returns) + ")"
        else:
            rets = str(self.returns[0])
        return f"{name}({', '.join(args)}) -> {rets}"


def _default_repr(value: Any) -> str:
    if isinstance(value, str):
        return f'"{value}"'
    if isinstance(value, fc.dtype):
        return str(value).removeprefix("flambeau.").removeprefix("torch.")
    if isinstance(value, (list, tuple)):
        return "[" + ", ".join(_default_repr(v) for v in value) + "]"
    return str(value)


# --- parsing -----------------------------------------------------------------

_TOKEN = re.compile(
    r"\s*(?:(?P<arrow>->)|(?P<name>[A-Za-z_][A-Za-z0-9_]*)|(?P<number>-?\d+(?:\.\d*)?(?:[eE][-+]?\d+)?)"
    r"|(?P<string>\"[^\"]*\"|'[^']*')|(?P<punct>::|[()\[\],*=?!.]))"
)

# Default values spelled as names: booleans, None, dtypes, memory formats, reductions.
_NAMED_DEFAULTS: dict[str, Any] = {"True": True, "False": False, "None": None}


def _named_default(word: str) -> Any:
    if word in _NAMED_DEFAULTS:
        return _NAMED_DEFAULTS[word]
    dtype = getattr(fc, word, None)
    if isinstance(dtype, fc.dtype):
        return dtype
    return word  # contiguous_format, Mean ...: kept as the name


class _Parser:
    def __init__(self, text: str, op: str, caller: str) -> None:
        self.text, self.op, self.caller = text, op, caller
        self.tokens: list[tuple[str, str, int]] = []
        pos = 0
        while pos < len(text):
            if text[pos:].strip() == "":
                break
            m = _TOKEN.match(text, pos)
            if m is None or m.end() == pos:
                start = pos + len(text[pos:]) - len(text[pos:].lstrip())
                self.fail(f"unexpected character {text[start]!r}", start)
            kind = m.lastgroup or ""
            self.tokens.append((kind, m.group(kind), m.start(kind)))
            pos = m.end()
        self.i = 0

    def fail(self, what: str, pos: int | None = None) -> typing.NoReturn:
        if pos is None:
            pos = self.tokens[self.i][2] if self.i < len(self.tokens) else len(self.text)
        raise FlambeauError(
            f"[{self.caller}] cannot parse the schema of '{self.op}' at position {pos}: {what}\n"
            f"  {self.text}\n  {' ' * pos}^"
        )

    def peek(self) -> tuple[str, str, int] | None:
        return self.tokens[self.i] if self.i < len(self.tokens) else None

    def next_is(self, value: str) -> bool:
        t = self.peek()
        return t is not None and t[1] == value and t[0] != "string"

    def expect(self, value: str, what: str | None = None) -> None:
        t = self.peek()
        if t is None or t[1] != value or t[0] == "string":
            found = "the end" if t is None else repr(t[1])
            self.fail(f"expected {what or repr(value)} but found {found}")
        self.i += 1

    def name(self, what: str) -> str:
        t = self.peek()
        if t is None or t[0] != "name":
            self.fail(f"expected {what} but found {'the end' if t is None else repr(t[1])}")
        self.i += 1
        return t[1]

    def parse(self) -> FunctionSchema:
        name = self.name("the operator name")
        if self.next_is("::"):
            self.i += 1
            name = f"{name}::{self.name('the operator name after ::')}"
        overload = ""
        if self.next_is("."):
            self.i += 1
            overload = self.name("the overload name after '.'")
        self.expect("(")
        args: list[Argument] = []
        kwarg_only = False
        if not self.next_is(")"):
            while True:
                if self.next_is("*"):
                    if kwarg_only:
                        self.fail("a second '*'")
                    self.i += 1
                    kwarg_only = True
                else:
                    args.append(self.argument(kwarg_only, is_return=False))
                if self.next_is(")"):
                    break
                self.expect(",", "',' or ')'")
        self.expect(")")
        self.expect("->", "'->'")
        returns, as_tuple = self.returns()
        if self.peek() is not None:
            self.fail(f"unexpected {self.peek()[1]!r} after the returns")  # type: ignore[index]
        seen: set[str] = set()
        for a in args:
            if a.name in seen:
                self.fail(f"argument '{a.name}' appears twice", 0)
            seen.add(a.name)
        positional = [a for a in args if not a.kwarg_only]
        for before, after in zip(positional, positional[1:], strict=False):
            if before.has_default and not after.has_default:
                self.fail(f"argument '{after.name}' without a default follows '{before.name}' with one", 0)
        return FunctionSchema(name, overload, tuple(args), tuple(returns), as_tuple)

    def returns(self) -> tuple[list[Argument], bool]:
        if self.next_is("("):
            self.i += 1
            rets: list[Argument] = []
            if not self.next_is(")"):
                while True:
                    rets.append(self.argument(False, is_return=True))
                    if self.next_is(")"):
                        break
                    self.expect(",", "',' or ')'")
            self.expect(")")
            return rets, True
        return [self.argument(False, is_return=True)], False

    def type(self) -> tuple[SchemaType, str | None, bool]:
        t = self.peek()
        base = self.name("a type")
        if base not in BASE_TYPES:
            self.i -= 1
            self.fail(
                f"unknown type {base!r} (the types are {', '.join(sorted(BASE_TYPES))})",
                t[2] if t else None,
            )
        alias, is_write = None, False
        if self.next_is("("):  # Tensor(a!) / Tensor(a)
            if base != "Tensor":
                self.fail("only a Tensor takes an alias annotation")
            self.i += 1
            alias = self.name("an alias name such as 'a'")
            if self.next_is("!"):
                self.i += 1
                is_write = True
            self.expect(")")
        elem_optional = is_list = optional = False
        list_len = None
        if self.next_is("?"):
            self.i += 1
            elem_optional = True
        if self.next_is("["):
            self.i += 1
            is_list = True
            t = self.peek()
            if t is not None and t[0] == "number":
                list_len = int(t[1])
                self.i += 1
            self.expect("]")
            if self.next_is("?"):
                self.i += 1
                optional = True
        elif elem_optional:
            elem_optional, optional = False, True
        return SchemaType(base, is_list, list_len, elem_optional, optional), alias, is_write

    def argument(self, kwarg_only: bool, *, is_return: bool) -> Argument:
        typ, alias, is_write = self.type()
        t = self.peek()
        arg_name = ""
        if t is not None and t[0] == "name":
            arg_name = t[1]
            self.i += 1
        elif not is_return:
            self.fail(
                f"expected an argument name after the type {typ} but found {'the end' if t is None else repr(t[1])}"
            )
        default: Any = inspect.Parameter.empty
        if not is_return and self.next_is("="):
            self.i += 1
            default = self.default()
        return Argument(arg_name, typ, default, kwarg_only, alias, is_write)

    def default(self) -> Any:
        t = self.peek()
        if t is None:
            self.fail("expected a default value but found the end")
        kind, text, _ = t
        if text == "[":
            self.i += 1
            values = []
            while not self.next_is("]"):
                values.append(self.default())
                if not self.next_is("]"):
                    self.expect(",", "',' or ']'")
            self.i += 1
            return values
        self.i += 1
        if kind == "number":
            return float(text) if any(c in text for c in ".eE") else int(text)
        if kind == "string":
            return text[1:-1]
        if kind == "name":
            return _named_default(text)
        self.i -= 1
        self.fail(f"expected a default value but found {text!r}")


def parse_schema(schema: str, *, op: str | None = None, caller: str = "Library.define") -> FunctionSchema:
    """Parses a schema string; a schema that does not parse raises FlambeauError naming the op and the position.

    Example:
        >>> s = parse_schema("mylib::foo(Tensor x, int n, *, float alpha=1.0) -> Tensor")
        >>> [a.name for a in s.arguments], s.arguments[2].kwarg_only, s.arguments[2].default
        (['x', 'n', 'alpha'], True, 1.0)
    """
    if not isinstance(schema, str):
        raise TypeError(f"[{caller}] a schema must be a str, got {type(schema).__name__}")
    if op is None:
        op = schema.partition("(")[0].strip() or schema
    return _Parser(schema, op, caller).parse()


# --- inference from type hints ---------------------------------------------------


def _hint_table() -> dict[Any, str]:
    """Python type hint -> schema type (torch's table, with flambeau's Tensor, dtype and device)."""
    table: dict[Any, str] = {}
    # (python type, schema type, T[] form, T?[] form, T[]? form)
    rows: list[tuple[Any, str, bool, bool, bool]] = [
        (fc.Tensor, "Tensor", True, True, False),
        (int, "SymInt", True, False, True),
        (float, "float", True, False, True),
        (bool, "bool", True, False, True),
        (str, "str", False, False, False),
        (typing.Union[int, float, bool], "Scalar", True, False, False),  # noqa: UP007  (torch.types.Number)
        (fc.dtype, "ScalarType", False, False, False),
        (fc.device, "Device", False, False, False),
    ]

    def sequences(elem: Any) -> tuple[Any, ...]:
        return (
            typing.Sequence[elem],  # noqa: UP006
            typing.List[elem],  # noqa: UP006
            collections.abc.Sequence[elem],
            list[elem],
        )

    for py, name, as_list, opt_elems, opt_list in rows:
        table[py] = name
        table[typing.Optional[py]] = name + "?"  # noqa: UP045
        if as_list:
            for seq in sequences(py):
                table[seq] = name + "[]"
        if opt_elems:
            for seq in sequences(typing.Optional[py]):  # noqa: UP045
                table[seq] = name + "?[]"
        if opt_list:
            for seq in sequences(py):
                table[typing.Optional[seq]] = name + "[]?"  # noqa: UP045
    return table


_PARAM_TYPES = _hint_table()
_RETURN_TYPES: dict[Any, str] = {
    fc.Tensor: "Tensor",
    typing.List[fc.Tensor]: "Tensor[]",  # noqa: UP006
    list[fc.Tensor]: "Tensor[]",
    int: "SymInt",
    float: "float",
    bool: "bool",
}
# Hints written as strings (`from __future__ import annotations`) are evaluated with these names known too.
_HINT_NAMES = {"Tensor": fc.Tensor, "Optional": typing.Optional, "List": list, "Sequence": typing.Sequence}


def _resolve_hint(hint: Any, fn: Callable, fail: Callable[[str], typing.NoReturn]) -> Any:
    if not isinstance(hint, str):
        return hint
    try:
        return eval(hint, {**_HINT_NAMES, **getattr(fn, "__globals__", {})})  # noqa: S307 (a type hint)
    except Exception as e:  # noqa: BLE001  (any failure means the hint names no type)
        fail(f"the type hint {hint!r} does not name a type ({type(e).__name__}: {e})")


def infer_schema(
    prototype_function: Callable, /, *, mutates_args: Iterable[str] | str, op_name: str | None = None
) -> str:
    """The schema of a function, from its type hints (as ``torch.library.infer_schema``).

    Tensor, ``Optional[Tensor]``, ``list[Tensor]``/``Sequence[Tensor]``,
    ``list[Optional[Tensor]]``, int, float, bool, str, ``Sequence[int]`` (and
    ``Optional`` forms of those), ``flambeau.dtype`` and ``flambeau.device``
    are the parameter types; Tensor, ``list[Tensor]``, int, float, bool,
    ``None`` and tuples of them are the return types. The arguments named in
    ``mutates_args`` (``"unknown"``: every Tensor argument) get ``Tensor(a!)``.

    Example:
        >>> import flambeau as fb
        >>> def foo(x: fb.Tensor, n: int, *, alpha: float = 1.0) -> fb.Tensor:
        ...     return x * n * alpha
        >>> infer_schema(foo, mutates_args=(), op_name="foo")
        'foo(Tensor x, SymInt n, *, float alpha=1.0) -> Tensor'
    """
    sig = inspect.signature(prototype_function)

    def fail(what: str) -> typing.NoReturn:
        raise ValueError(f"[infer_schema] {what} (the function's signature is {sig})")

    if isinstance(mutates_args, str):
        if mutates_args != "unknown":
            fail(f"mutates_args must be the names of the mutated arguments or 'unknown', got {mutates_args!r}")
        mutated: tuple[str, ...] | None = None
    else:
        mutated = tuple(mutates_args)
    params: list[str] = []
    seen: set[str] = set()
    for idx, (name, param) in enumerate(sig.parameters.items()):
        if param.kind not in (inspect.Parameter.POSITIONAL_OR_KEYWORD, inspect.Parameter.KEYWORD_ONLY):
            fail(f"parameter '{name}' is positional-only, *args or **kwargs: an operator takes none of these")
        if param.kind == inspect.Parameter.KEYWORD_ONLY and "*" not in params:
            params.append("*")
        if param.annotation is inspect.Parameter.empty:
            fail(f"parameter '{name}' must have a type annotation")
        hint = _resolve_hint(param.annotation, prototype_function, fail)
        schema_type = _PARAM_TYPES.get(hint)
        if schema_type is None:
            extra = ""
            if typing.get_origin(hint) is tuple or hint is tuple:
                extra = " (tuples are not argument types: use a list or Sequence)"
            fail(
                f"parameter '{name}' has the unsupported type {param.annotation!r}{extra}; the supported types are "
                "Tensor, Optional[Tensor], list[Tensor], list[Optional[Tensor]], int, float, bool, str, "
                "Sequence[int], Sequence[float], Sequence[bool] (and their Optional forms), dtype and device"
            )
        if (mutated is None and schema_type.startswith("Tensor")) or (mutated is not None and name in mutated):
            if not schema_type.startswith("Tensor"):
                fail(f"parameter '{name}' is in mutates_args but only Tensors (or lists of them) can be mutated")
            schema_type = f"Tensor(a{idx}!){schema_type[len('Tensor') :]}"
        seen.add(name)
        if param.default is inspect.Parameter.empty:
            params.append(f"{schema_type} {name}")
        else:
            if not (param.default is None or isinstance(param.default, (int, float, str, fc.device, fc.dtype))):
                fail(f"parameter '{name}' has a default of the unsupported type {type(param.default).__name__}")
            params.append(f"{schema_type} {name}={_default_repr(param.default)}")
    if mutated is not None:
        unknown = sorted(set(mutated) - seen)
        if unknown:
            fail(f"mutates_args names {unknown}, which are not parameters of the function")
    ret = _infer_return(sig.return_annotation, prototype_function, fail)
    return f"{op_name or ''}({', '.join(params)}) -> {ret}"


def _infer_return(annotation: Any, fn: Callable, fail: Callable[[str], typing.NoReturn]) -> str:
    if annotation is inspect.Parameter.empty:
        fail("the return has no type annotation (write -> None for an operator that returns nothing)")
    hint = _resolve_hint(annotation, fn, fail)
    if hint is None or hint is type(None):
        return "()"
    if typing.get_origin(hint) is tuple:
        parts = typing.get_args(hint)
        bad = [p for p in parts if p not in _RETURN_TYPES]
        if bad or not parts:
            fail(
                f"the return type {annotation!r} is not supported; "
                "tuples may hold Tensor, list[Tensor], int, float, bool"
            )
        inner = ", ".join(_RETURN_TYPES[p] for p in parts)
        return f"({inner})"
    if hint not in _RETURN_TYPES:
        fail(
            f"the return type {annotation!r} is not supported; the supported return types are "
            "Tensor, list[Tensor], int, float, bool, None and tuples of them"
        )
    return _RETURN_TYPES[hint]
