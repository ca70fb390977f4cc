"""Operators registered from C++ with ``FLAMBEAU_LIBRARY`` (Note [Operators registered from C++], flambeau/library.h).

A library's ``FLAMBEAU_LIBRARY`` blocks run when it is loaded and only record
what they declare. :func:`register_pending` takes those records: it defines
each operator with the Python dispatcher (``Library._define``: the schema is
parsed by ``_schema.py``), registers each C++ kernel there as a direct call
(so autograd, the profiler, ``opcheck`` and the error messages work as for any
operator), checks every kernel's C++ parameter types against its schema, and
makes the operator's call core's ``_CppOp`` (Note [C++ operator call]), which
runs the kernel without Python unless the call needs the dispatcher.
"""

from __future__ import annotations

import ctypes
import os
from typing import Any

import flambeau_core as fc
from flambeau_core import FlambeauError

from ._dispatch import _REGISTRY, OpOverload, own_call
from ._schema import Argument, FunctionSchema

# Device types in core's order (DeviceType: CPU, CUDA, PrivateUse1, Meta); the Meta slot is the fake rule.
_CPU, _CUDA, _PRIVATEUSE1, _META = range(4)
_SCALARS = {"Tensor": "Tensor", "int": "int", "SymInt": "int", "float": "float", "bool": "bool", "str": "str"}
_LISTS = {"Tensor": "Tensor[]", "int": "int[]", "SymInt": "int[]"}
_TYPES_TAKEN = "Tensor, Tensor[], int, int[], float, bool, str, and their optionals (T?)"

_blocks: list[Any] = []  # the Library of each FLAMBEAU_LIBRARY block: they live as long as the process
_operators: dict[OpOverload, _CppOperator] = {}


def _word(t: Any) -> str | None:
    """The word the C++ side writes for a kernel parameter of schema type t (None: a C++ kernel cannot take it)."""
    if t.elem_optional:
        return None
    word = (_LISTS if t.is_list else _SCALARS).get(t.base)
    if word is None:
        return None
    return word + ("?" if t.optional else "")


def _accepts(schema_word: str, cpp_word: str) -> bool:
    # A `const Tensor&` parameter takes a Tensor? argument: None arrives as an undefined Tensor.
    return schema_word == cpp_word or (schema_word == "Tensor?" and cpp_word == "Tensor")


def _signature(args: tuple[Argument, ...], qualname: str, kw_only: bool = True) -> str:
    """The parameter list core's ArgParser reads ("Tensor a, float alpha=None, *, Tensor? out=None")."""
    parts: list[str] = []
    for a in args:
        word = _word(a.type)
        if word is None:
            raise FlambeauError(
                f"[{qualname}] argument '{a.name}' has type {a.type}, which a C++ operator cannot take "
                f"(it takes {_TYPES_TAKEN})"
            )
        if kw_only and a.kwarg_only and "*" not in parts:
            parts.append("*")
        # The default itself is passed as a Python object (_cpp_op's defaults); the text only marks one.
        parts.append(f"{word} {a.name}" + ("=None" if a.has_default else ""))
    return ", ".join(parts)


class _CppOperator:
    """The C++ kernels of one operator overload, and the calls made of them."""

    def __init__(self, op: OpOverload, where: str) -> None:
        self.op = op
        self.where = where
        schema = op._schema
        self.qualname = op.__name__
        self.signature = _signature(schema.arguments, self.qualname)
        self.defaults = tuple(a.default if a.has_default else None for a in schema.arguments)
        self.arg_words = [_word(a.type) for a in schema.arguments]
        for r in schema.returns:
            if _word(r.type) is None or r.type.optional:
                raise FlambeauError(
                    f"[{self.qualname}] returns {r.type}, which a C++ operator cannot return "
                    "(it returns Tensor, Tensor[], int, int[], float, bool, str, or a tuple of them)"
                )
        self.ret_words = [_word(r.type) for r in schema.returns]
        self.as_tuple = schema.returns_tuple and len(schema.returns) == 1
        self.python_call = op._call  # the Python dispatcher's call: the fast call's fallback
        self.kernels: list[Any] = [None] * 4
        self.backward: Any = None

    def direct(self, kernel: Any) -> Any:
        """A call of one kernel with this operator's arguments (no dispatch)."""
        return fc._C._cpp_op(self.qualname, self.signature, self.defaults, [kernel] * 4, kernel, None, self.as_tuple)

    def check_kernel(self, what: str, arg_types: list[str], ret_types: list[str]) -> None:
        expected = f"({', '.join(self.arg_words)}) -> ({', '.join(self.ret_words)})"
        got = f"({', '.join(arg_types)}) -> ({', '.join(ret_types)})"
        ok = len(arg_types) == len(self.arg_words) and all(map(_accepts, self.arg_words, arg_types))
        if not ok or list(ret_types) != self.ret_words:
            raise FlambeauError(
                f"[{self.qualname}] the {what} takes and returns {got} in C++ but the schema {self.op._schema} "
                f"says {expected}"
            )

    def set_kernel(self, device: str, slot: int, kernel: Any, lib: Any) -> None:
        self.kernels[slot] = kernel
        lib._set(self.op, "fake" if slot == _META else f"device:{device}", self.direct(kernel))

    def set_backward(self, kernel: Any, arg_types: list[str], ret_types: list[str], lib: Any) -> None:
        schema = self.op._schema
        grads = [f"Tensor? __grad_{i}" for i in range(len(schema.returns))]
        outs = [f"{w} __result_{i}" for i, w in enumerate(self.ret_words)]
        signature = ", ".join([*grads, _signature(schema.arguments, self.qualname, kw_only=False), *outs])
        n_tensors = sum(1 for w in self.arg_words if w in ("Tensor", "Tensor?"))
        expected = ["Tensor?"] * len(schema.returns) + self.arg_words + self.ret_words
        ok = len(arg_types) == len(expected) and all(map(_accepts, expected, arg_types))
        if not ok or not (ret_types == ["Tensor[]"] or ret_types == ["Tensor"] * n_tensors):
            raise FlambeauError(
                f"[{self.qualname}] the backward takes and returns ({', '.join(arg_types)}) -> "
                f"({', '.join(ret_types)}) in C++ but it must take (grad of each output, the arguments, the "
                f"outputs) = ({', '.join(expected)}) and return one Tensor per Tensor argument ({n_tensors})"
            )
        call = fc._C._cpp_op(self.qualname + " (backward)", signature, (None,) * len(expected), [kernel] * 4,
                             kernel, None, False)  # fmt: skip
        self.backward = call
        lib._set(self.op, "backward", _make_backward(self, call, n_tensors))
        lib._set(self.op, "setup_context", _make_setup_context(schema))

    def install(self) -> None:
        """Makes the operator's call the C++ one (Note [C++ operator call])."""
        devices = [k for k in self.kernels[:3] if k is not None]
        fast = fc._C._cpp_op(self.qualname, self.signature, self.defaults, self.kernels,
                             devices[0] if len(devices) == 1 else None, self.python_call, self.as_tuple)  # fmt: skip
        self.op._call = fast
        own_call(self.op, fast)
        _REGISTRY[self.op._qualname]._add(self.op)


def _make_setup_context(schema: FunctionSchema) -> Any:
    kw_names = [a.name for a in schema.arguments if a.kwarg_only]
    single = not schema.returns_tuple and len(schema.returns) == 1

    def setup_context(ctx: Any, inputs: tuple, output: Any, keyword_only_inputs: dict | None = None) -> None:
        kw = keyword_only_inputs or {}
        outs = (output,) if single else tuple(output)
        items = [*inputs, *(kw[n] for n in kw_names), *outs]
        slots = [i for i, v in enumerate(items) if isinstance(v, fc.Tensor)]
        ctx.save_for_backward(*(items[i] for i in slots))
        for i in slots:
            items[i] = None
        ctx._cpp_items, ctx._cpp_slots = items, slots

    return setup_context


def _make_backward(cpp: _CppOperator, call: Any, n_tensors: int) -> Any:
    positional = [a for a in cpp.op._schema.arguments if not a.kwarg_only]

    def backward(ctx: Any, *grads: Any) -> tuple:
        items = list(ctx._cpp_items)
        for i, t in zip(ctx._cpp_slots, ctx.saved_tensors, strict=True):
            items[i] = t
        result = call(*grads, *items)
        flat = list(result) if isinstance(result, (list, tuple)) else [result]
        if len(flat) != n_tensors:
            raise FlambeauError(
                f"[{cpp.qualname}] the C++ backward returned {len(flat)} gradient(s) but the operator has "
                f"{n_tensors} Tensor argument(s) (return an undefined Tensor() for one without a gradient)"
            )
        grads_of = iter(flat)
        return tuple(next(grads_of) if _word(a.type) in ("Tensor", "Tensor?") else None for a in positional)

    return backward


def _device_slot(device: str) -> int:
    return {"cpu": _CPU, "cuda": _CUDA, "meta": _META}.get(device, _PRIVATEUSE1)


def _operator(ns: str, name: str, where: str, caller: str) -> _CppOperator:
    qualname = name if "::" in name else f"{ns}::{name}"
    base, _, overload = qualname.partition(".")
    packet = _REGISTRY.get(base)
    op = packet._overloads.get(overload or "default") if packet is not None else None
    if op is None:
        raise FlambeauError(
            f"[{qualname}] {caller} of an operator that is not defined; define it first with "
            f'm.def("{base.partition("::")[2]}(...) -> ...") in a FLAMBEAU_LIBRARY({ns}, m) block'
        )
    cpp = _operators.get(op)
    if cpp is None:
        raise FlambeauError(
            f"[{qualname}] {caller}: the operator was defined in Python (custom_op or Library.define), not by "
            f"FLAMBEAU_LIBRARY; register its kernels from Python ({where})"
        )
    return cpp


def _register_block(ns: str, where: str, entries: list[tuple]) -> list[str]:
    """Registers one FLAMBEAU_LIBRARY block; returns what was wrong with it (each line names the op)."""
    from . import Library

    errors: list[str] = []
    try:
        lib = Library(ns, "FRAGMENT")
    except (ValueError, RuntimeError) as e:
        return [f"{e} ({where})"]
    _blocks.append(lib)
    touched: dict[OpOverload, _CppOperator] = {}
    for kind, _, text, device, kernel, arg_types, ret_types, _ in entries:
        try:
            if kind == "error":
                raise FlambeauError(f"{text if text.startswith('[') else f'[{ns}] {text}'} ({where})")
            if kind == "def":
                name = text.partition("(")[0].strip().rpartition("::")[2]
                op = lib._define(text, fake_required=True, caller=f"{ns}::{name}")
                try:
                    cpp = _operators[op] = _CppOperator(op, where)
                except FlambeauError:
                    lib._defined.remove(op)
                    from ._dispatch import unregister_operator

                    unregister_operator(op)
                    raise
                touched[op] = cpp
                continue
            cpp = _operator(ns, text, where, {"impl": "impl", "fake": "impl_fake", "backward": "impl_backward"}[kind])
            touched[cpp.op] = cpp
            if kind == "backward":
                cpp.set_backward(kernel, arg_types, ret_types, lib)
            else:
                what = "fake rule" if kind == "fake" else f"{device} kernel"
                cpp.check_kernel(what, arg_types, ret_types)
                cpp.set_kernel(device, _META if kind == "fake" else _device_slot(device), kernel, lib)
        except (FlambeauError, RuntimeError, ValueError, TypeError) as e:
            errors.append(str(e) if where in str(e) else f"{e} ({where})")
    for cpp in touched.values():
        cpp.install()
    return errors


def register_pending(source: str | None = None) -> None:
    """Registers what the FLAMBEAU_LIBRARY blocks of the libraries loaded since the last call declared.

    Raises ImportError for a block built against another flambeau ABI (rebuild it), FlambeauError listing
    every other problem (a schema that does not parse, an operator defined twice, an ``impl`` of an undefined
    operator, a kernel whose C++ types disagree with its schema); the blocks without one are registered.
    """
    entries = fc._C._library_take_pending()
    if not entries:
        return
    blocks: dict[tuple[str, str], list[tuple]] = {}
    for e in entries:
        blocks.setdefault((e[7], e[1]), []).append(e)
    for (where, ns), block in blocks.items():
        for kind, _, text, *_ in block:
            if kind == "error" and text.startswith("was built for flambeau ABI"):
                theirs = text.split("'")[1]
                raise ImportError(
                    f"[load_library] the FLAMBEAU_LIBRARY({ns}) block of {source or where} was built for flambeau "
                    f"ABI '{theirs}', but the installed flambeau-core has ABI '{fc._C._abi_tag()}'; rebuild the "
                    "extension against this flambeau-core"
                )
    errors: list[str] = []
    for (where, ns), block in blocks.items():
        errors += _register_block(ns, where, block)
    if errors:
        lines = "\n".join(f"  {e}" for e in errors)
        raise FlambeauError(f"[load_library] {source or 'a loaded library'} registers operators with errors:\n{lines}")


def load_library(path: str | os.PathLike) -> None:
    """Loads a shared library and registers the operators its ``FLAMBEAU_LIBRARY`` blocks define, as
    ``torch.ops.load_library``: they are then ``flambeau.ops.<ns>.<name>``.

    Args:
        path: the shared library (``.so``), e.g. built by ``flambeau.utils.cpp_extension.load(...,
            is_python_module=False)`` or a setup.py with ``CppExtension``.

    Raises:
        OSError: the library cannot be loaded.
        ImportError: it was built against another flambeau ABI.
        FlambeauError: an operator it registers is wrong (the message names each one).

    Example::

        >>> import flambeau as fb
        >>> fb.ops.load_library("build/libmy_ops.so")  # doctest: +SKIP
        >>> fb.ops.my_ops.mul_add(fb.ones(2), fb.ones(2), alpha=2.0)  # doctest: +SKIP
        tensor([3., 3.])
    """
    path = os.fspath(path)
    from flambeau._cpp_extension import _check_abi

    _check_abi(os.path.basename(path), path)
    ctypes.CDLL(path, mode=ctypes.RTLD_GLOBAL)
    register_pending(path)
