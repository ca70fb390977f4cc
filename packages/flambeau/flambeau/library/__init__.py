"""``flambeau.library``: operators written in Python, under ``torch.library``'s names.

:func:`custom_op` turns a typed Python function into an operator ``ns::name``
(its schema inferred from the type hints), reachable as
``flambeau.ops.ns.name``; :meth:`CustomOpDef.register_fake` gives its shape
and dtype rule (what it does on the ``meta`` device),
:meth:`CustomOpDef.register_autograd` its gradient, and
:meth:`CustomOpDef.register_kernel` a kernel per device type. :class:`Library`
defines operators from schema strings (``define``) and registers kernels for
dispatch keys (``impl``). :func:`opcheck` tests an operator: its declared
mutations, its fake rule against its kernels, its gradients, its devices.

A call binds and checks its arguments, records a profiler event named
``ns::name``, goes through autograd when an input requires grad, then runs
the kernel of the device of its tensors (Note [Custom operator dispatch]).

Example:
    >>> import numpy as np
    >>> import flambeau as fb
    >>> @fb.library.custom_op("doc_lib::numpy_sin", mutates_args=())
    ... def numpy_sin(x: fb.Tensor) -> fb.Tensor:
    ...     return fb.from_numpy(np.sin(x.numpy()))
    >>> @numpy_sin.register_fake
    ... def _(x):
    ...     return fb.empty_like(x)
    >>> def setup_context(ctx, inputs, output):
    ...     ctx.save_for_backward(inputs[0])
    >>> def backward(ctx, grad):
    ...     (x,) = ctx.saved_tensors
    ...     return grad * x.cos()
    >>> numpy_sin.register_autograd(backward, setup_context=setup_context)
    >>> x = fb.tensor([0.0, 1.0], requires_grad=True)
    >>> fb.ops.doc_lib.numpy_sin(x).sum().backward()
    >>> [round(v, 4) for v in x.grad.tolist()]
    [1.0, 0.5403]
    >>> numpy_sin(fb.empty(2, 3, device="meta")).shape
    flambeau.Size([2, 3])
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Iterable, Sequence
from typing import Any

import flambeau_core as fc

from ._dispatch import (
    _DISPATCH_KEYS,
    OpOverload,
    OpOverloadPacket,
    lookup,
    ops,
    own_call,
    register_operator,
    unregister_operator,
)
from ._opcheck import DEFAULT_TEST_UTILS, OpCheckError, opcheck
from ._schema import FunctionSchema, infer_schema, parse_schema

__all__ = [
    "DEFAULT_TEST_UTILS",
    "CustomOpDef",
    "Library",
    "OpCheckError",
    "OpOverload",
    "OpOverloadPacket",
    "custom_op",
    "define",
    "impl",
    "impl_abstract",
    "infer_schema",
    "opcheck",
    "ops",
    "register_autocast",
    "register_autograd",
    "register_fake",
    "register_kernel",
]

# Namespaces a Library may not define operators in: PyTorch's, whose operators are flambeau's built-ins.
_RESERVED_NAMESPACES = frozenset({"aten", "prim", "prims"})
_IDENTIFIER = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\Z")
_def_namespaces: dict[str, Library] = {}  # namespace -> its live Library(ns, "DEF")
_custom_op_libraries: dict[str, Library] = {}  # "ns::name" -> the library custom_op made for it
_opdefs: dict[str, CustomOpDef] = {}  # "ns::name" -> the custom_op's CustomOpDef


class Library:
    """A set of registrations in one namespace, as ``torch.library.Library``.

    ``kind`` is ``"DEF"`` (defines the namespace's operators; one per
    namespace), ``"FRAGMENT"`` (defines more of them, any number) or
    ``"IMPL"`` (registers kernels for operators defined elsewhere).

    Args:
        ns: the namespace (an identifier).
        kind: ``"DEF"``, ``"FRAGMENT"`` or ``"IMPL"``.
        dispatch_key: the default dispatch key of :meth:`impl`.

    Example:
        >>> import flambeau as fb
        >>> lib = Library("doc_libdef", "DEF")
        >>> lib.define("scale(Tensor x, *, float alpha=2.0) -> Tensor")
        'scale'
        >>> lib.impl("scale", lambda x, *, alpha=2.0: x * alpha, "CPU")
        >>> fb.ops.doc_libdef.scale(fb.ones(2), alpha=3.0).tolist()
        [3.0, 3.0]
        >>> lib._destroy()
    """

    def __init__(self, ns: str, kind: str, dispatch_key: str = "") -> None:
        if kind not in ("DEF", "IMPL", "FRAGMENT"):
            raise ValueError(f"[Library] kind must be 'DEF', 'IMPL' or 'FRAGMENT', got {kind!r}")
        if not isinstance(ns, str) or not _IDENTIFIER.match(ns):
            raise ValueError(f"[Library] the namespace must be an identifier, got {ns!r}")
        if ns in _RESERVED_NAMESPACES and kind in ("DEF", "FRAGMENT"):
            raise ValueError(
                f"[Library] '{ns}' is a reserved namespace (flambeau's built-in operators); "
                "define your operators in a namespace of your own"
            )
        if kind == "DEF" and ns in _def_namespaces:
            raise RuntimeError(
                f"[Library] only one Library('{ns}', 'DEF') may exist at a time; put all of the namespace's "
                f"definitions in it, or use Library('{ns}', 'FRAGMENT') to define more of them elsewhere"
            )
        self.ns = ns
        self.kind = kind
        self.dispatch_key = dispatch_key
        self._defined: list[OpOverload] = []
        self._registered: list[tuple[OpOverload, str, Any]] = []  # (op, slot, what it replaced)
        self._destroyed = False
        if kind == "DEF":
            _def_namespaces[ns] = self

    def __repr__(self) -> str:
        return f"Library(kind={self.kind}, ns={self.ns}, dispatch_key={self.dispatch_key})"

    def _check_alive(self, what: str) -> None:
        if self._destroyed:
            raise RuntimeError(f"[Library.{what}] this Library({self.ns!r}, {self.kind!r}) has been destroyed")

    def define(self, schema: str, alias_analysis: str = "", *, tags: Any = ()) -> str:
        """Defines an operator (or an overload of one) from a schema string; returns the operator's name.

        A schema that does not parse raises FlambeauError naming the op and the
        position; an operator defined twice raises RuntimeError.

        Example:
            >>> lib = Library("doc_define", "FRAGMENT")
            >>> lib.define("foo.out(Tensor x, *, Tensor(a!) out) -> Tensor(a!)")
            'foo'
            >>> lib._destroy()
        """
        self._check_alive("define")
        if self.kind == "IMPL":
            raise RuntimeError(f"[Library.define] a Library('{self.ns}', 'IMPL') cannot define operators")
        if alias_analysis not in ("", "FROM_SCHEMA", "CONSERVATIVE"):
            raise RuntimeError(f"[Library.define] invalid alias_analysis {alias_analysis!r}")
        return self._define(schema, fake_required=False, caller="Library.define")._opname

    def _define(self, schema: str, *, fake_required: bool, caller: str) -> OpOverload:
        op_name = schema.partition("(")[0].strip() if isinstance(schema, str) else "?"
        parsed = parse_schema(schema, op=f"{self.ns}::{op_name.rpartition('::')[2]}", caller=caller)
        ns, _, name = parsed.name.rpartition("::")
        if ns and ns != self.ns:
            raise ValueError(f"[{caller}] the schema names the namespace '{ns}' but this Library's is '{self.ns}'")
        qualname = f"{self.ns}::{name}"
        overload = parsed.overload_name or "default"
        from ._dispatch import _REGISTRY

        existing = _REGISTRY.get(qualname)
        if existing is not None and overload in existing._overloads:
            raise RuntimeError(
                f"[{caller}] the operator '{qualname}' (overload '{overload}') is defined already, as "
                f"{existing._overloads[overload]._schema}; each operator is defined once"
            )
        parsed = dataclasses.replace(parsed, name=qualname)
        op = OpOverload(parsed, self.ns, name, fake_required=fake_required)
        register_operator(op)
        self._defined.append(op)
        return op

    def impl(
        self,
        op_name: str | OpOverload | OpOverloadPacket | CustomOpDef,
        fn: Callable,
        dispatch_key: str = "",
        *,
        with_keyset: bool = False,
    ) -> None:
        """Registers ``fn`` as the operator's kernel for a dispatch key.

        The keys are ``"CPU"``, ``"CUDA"``, ``"Meta"`` (the fake rule),
        ``"CompositeExplicitAutograd"`` (every device), ``"CompositeImplicitAutograd"``
        (every device, and autograd through the ops it calls; the default when
        ``dispatch_key`` and the Library's are empty), ``"Autograd"`` (a kernel
        that handles autograd itself), or a device type (``"sim"``).

        Example:
            >>> import flambeau as fb
            >>> lib = Library("doc_impl", "DEF")
            >>> lib.define("double(Tensor x) -> Tensor")
            'double'
            >>> lib.impl("double", lambda x: x + x)  # CompositeImplicitAutograd: differentiable as written
            >>> x = fb.ones(2, requires_grad=True)
            >>> fb.ops.doc_impl.double(x).sum().backward()
            >>> x.grad.tolist()
            [2.0, 2.0]
            >>> lib._destroy()
        """
        self._check_alive("impl")
        if not callable(fn):
            raise TypeError(f"[Library.impl] fn must be callable, got {type(fn).__name__}")
        if with_keyset:
            raise NotImplementedError("[Library.impl] with_keyset=True: flambeau has no dispatch key sets")
        op = self._resolve(op_name, "Library.impl")
        key = dispatch_key or self.dispatch_key or "CompositeImplicitAutograd"
        slot = _DISPATCH_KEYS.get(key)
        if slot is None:
            device = _device_type_name(key)
            if device is None:
                raise ValueError(
                    f"[Library.impl] unknown dispatch key {key!r} for '{op._qualname}'; use one of "
                    f"{', '.join(_DISPATCH_KEYS)} or a device type such as 'cpu' or 'sim'"
                )
            slot = f"device:{device}"
        self._set(op, "fake" if slot == "device:meta" else slot, fn)

    def _resolve(self, op_name: Any, caller: str) -> OpOverload:
        if isinstance(op_name, str) and "::" not in op_name:
            op_name = f"{self.ns}::{op_name}"  # a name in this Library's namespace
        return _op_of(op_name, caller)

    def _set(self, op: OpOverload, slot: str, fn: Any) -> None:
        previous = _set_slot(op, slot, fn)
        self._registered.append((op, slot, previous))

    def _destroy(self) -> None:
        """Undoes everything this Library registered and defined."""
        if self._destroyed:
            return
        for op, slot, previous in reversed(self._registered):
            _set_slot(op, slot, previous)
        for op in self._defined:
            unregister_operator(op)
        self._registered.clear()
        self._defined.clear()
        if _def_namespaces.get(self.ns) is self:
            del _def_namespaces[self.ns]
        self._destroyed = True


def _set_slot(op: OpOverload, slot: str, fn: Any) -> Any:
    """Puts fn in one of the op's kernel slots; returns what was there (None: nothing)."""
    if slot.startswith(("device:", "autocast:")):
        kind, _, device = slot.partition(":")
        table = op._kernels if kind == "device" else op._autocast
        previous = table.get(device)
        if fn is None:
            table.pop(device, None)
        else:
            table[device] = fn
    else:
        attr = {
            "fake": "_fake",
            "default": "_default_kernel",
            "implicit": "_implicit_kernel",
            "autograd": "_autograd_kernel",
            "backward": "_backward",
            "setup_context": "_setup_context",
        }[slot]
        previous = getattr(op, attr)
        setattr(op, attr, fn)
    op._registrations_changed()
    return previous


def _device_types(device_types: Any, caller: str) -> list[str | None]:
    if device_types is None:
        return [None]
    if isinstance(device_types, str):
        device_types = [device_types]
    if not isinstance(device_types, Iterable):
        raise TypeError(f"[{caller}] device_types must be a str, a sequence of str or None, got {device_types!r}")
    out: list[str | None] = []
    for d in device_types:
        if not isinstance(d, str):
            raise TypeError(f"[{caller}] device_types must be str, got {type(d).__name__}")
        device = _device_type_name(d)
        if device is None:
            raise ValueError(f"[{caller}] {d!r} is not a device type ('cpu', 'cuda', 'meta', 'sim', ...)")
        out.append(device)
    return out


_DEVICE_TYPE = re.compile(r"[a-z][a-z0-9_]*\Z")


def _device_type_name(name: str) -> str | None:
    """The device type a name means ('cpu', 'sim:1' -> 'sim'), or None. A kernel may be registered for a
    device type this process has not registered (yet), as PyTorch's for 'cuda' on a machine without one."""
    try:
        return fc.device(name).type
    except Exception:  # noqa: BLE001  (not a registered device type: a well-formed name is still one)
        return name if _DEVICE_TYPE.match(name) else None


class CustomOpDef:
    """An operator made by :func:`custom_op`: call it, and register its fake rule, gradient and kernels.

    Example:
        >>> import flambeau as fb
        >>> @custom_op("doc_def::add_one", mutates_args=())
        ... def add_one(x: fb.Tensor) -> fb.Tensor:
        ...     return x + 1
        >>> add_one
        <CustomOpDef(doc_def::add_one)>
        >>> add_one(fb.zeros(2)).tolist()
        [1.0, 1.0]
    """

    def __init__(self, namespace: str, name: str, schema: str, fn: Callable) -> None:
        self._namespace = namespace
        self._name = name
        self._init_fn = fn
        self._disabled_kernel: set[str | None] = set()
        self._device_kernels: dict[str | None, Callable] = {}  # what register_kernel was given, per device
        qualname = f"{namespace}::{name}"
        # Defining a custom_op again (a re-run notebook cell) replaces the earlier one, as in PyTorch.
        previous = _custom_op_libraries.pop(qualname, None)
        if previous is not None:
            previous._destroy()
        self._lib = Library(namespace, "FRAGMENT")
        self._opoverload = self._lib._define(name + schema, fake_required=True, caller="custom_op")
        _custom_op_libraries[qualname] = self._lib
        self.__doc__ = fn.__doc__
        self.__name__ = fn.__name__
        self.__wrapped__ = fn
        _opdefs[qualname] = self
        own_call(self, self._opoverload._call)

    @property
    def _qualname(self) -> str:
        return f"{self._namespace}::{self._name}"

    def __repr__(self) -> str:
        return f"<CustomOpDef({self._qualname})>"

    def __call__(self, /, *args: Any, **kwargs: Any) -> Any:  # replaced by the op's generated function: own_call
        return self._opoverload._call(*args, **kwargs)

    def register_kernel(self, device_types: str | Sequence[str] | None, fn: Callable | None = None, /) -> Callable:
        """Registers the kernel for one or more device types (a decorator when ``fn`` is not given).

        Example:
            >>> import flambeau as fb
            >>> @custom_op("doc_kernel::neg", mutates_args=(), device_types="cpu")
            ... def neg(x: fb.Tensor) -> fb.Tensor:
            ...     return -x
            >>> @neg.register_kernel("meta")
            ... def _(x):
            ...     return fb.empty_like(x)
            >>> neg(fb.empty(4, device="meta")).shape
            flambeau.Size([4])
        """
        devices = _device_types(device_types, "CustomOpDef.register_kernel")
        op = self._opoverload
        if device_types is not None and not _has_tensor_argument(op._schema):
            if not any(a.type.base == "Device" for a in op._schema.arguments):
                raise ValueError(
                    f"[{self._qualname}] an operator without Tensor arguments needs a `device: flambeau.device` "
                    "argument to have per-device kernels"
                )

        def inner(fn: Callable) -> Callable:
            if not callable(fn):
                raise TypeError(f"[{self._qualname}] register_kernel: the kernel must be callable, got {fn!r}")
            for device in devices:
                if device == "meta":
                    self._lib._set(op, "fake", fn)
                    continue
                self._device_kernels[device] = fn
                self._install_kernel(device)
            return fn

        return inner if fn is None else inner(fn)

    def register_fake(self, fn: Callable, /) -> Callable:
        """Registers the operator's fake rule: its output shapes and dtypes, computed on ``meta`` tensors.

        The rule gets the call's arguments (tensors on the ``meta`` device) and
        returns empty tensors of the output's shape, dtype and strides; it runs
        when the operator is called on ``meta`` tensors and in :func:`opcheck`.

        Example:
            >>> import flambeau as fb
            >>> @custom_op("doc_fake::outer", mutates_args=())
            ... def outer(a: fb.Tensor, b: fb.Tensor) -> fb.Tensor:
            ...     return a[:, None] * b[None, :]
            >>> @outer.register_fake
            ... def _(a, b):
            ...     return a.new_empty(a.shape[0], b.shape[0])
            >>> outer(fb.empty(3, device="meta"), fb.empty(5, device="meta")).shape
            flambeau.Size([3, 5])
        """
        if not callable(fn):
            raise TypeError(f"[{self._qualname}] register_fake: the fake rule must be callable, got {fn!r}")
        self._lib._set(self._opoverload, "fake", fn)
        return fn

    def register_autograd(self, backward: Callable, /, *, setup_context: Callable | None = None) -> None:
        """Registers the operator's gradient, as ``autograd.Function``'s ``backward(ctx, *grads)``.

        ``setup_context(ctx, inputs, output)`` (with ``keyword_only_inputs``
        before ``output`` when the operator has keyword-only arguments) runs
        after the forward and saves what backward needs. ``backward`` returns
        one gradient per positional input (None where there is none).

        Example:
            >>> import flambeau as fb
            >>> @custom_op("doc_autograd::cube", mutates_args=())
            ... def cube(x: fb.Tensor) -> fb.Tensor:
            ...     return x * x * x
            >>> def setup_context(ctx, inputs, output):
            ...     ctx.save_for_backward(inputs[0])
            >>> def backward(ctx, grad):
            ...     (x,) = ctx.saved_tensors
            ...     return grad * 3 * x * x
            >>> cube.register_autograd(backward, setup_context=setup_context)
            >>> x = fb.tensor([2.0], requires_grad=True)
            >>> cube(x).backward()
            >>> x.grad.tolist()
            [12.0]
        """
        _register_autograd(self._opoverload, self._lib, backward, setup_context)

    def set_kernel_enabled(self, device_type: str, enabled: bool = True) -> Any:
        """Turns the kernel registered for ``device_type`` off (the function given to custom_op runs
        there instead) or back on; usable as a context manager that restores the previous state.

        Example:
            >>> import flambeau as fb
            >>> @custom_op("doc_enable::f", mutates_args=())
            ... def f(x: fb.Tensor) -> fb.Tensor:
            ...     return x + 1
            >>> @f.register_kernel("cpu")
            ... def _(x):
            ...     return x + 2
            >>> with f.set_kernel_enabled("cpu", False):
            ...     print(f(fb.zeros(1)).tolist())
            [1.0]
            >>> f(fb.zeros(1)).tolist()
            [2.0]
        """
        (device,) = _device_types(device_type, "CustomOpDef.set_kernel_enabled")
        was_enabled = device not in self._disabled_kernel
        if enabled:
            self._disabled_kernel.discard(device)
        else:
            self._disabled_kernel.add(device)
        if device in self._device_kernels:
            self._install_kernel(device)
        return _RestoreKernel(self, device_type, was_enabled)

    def _install_kernel(self, device: str | None) -> None:
        kernel = self._init_fn if device in self._disabled_kernel else self._device_kernels[device]
        self._lib._set(self._opoverload, "default" if device is None else f"device:{device}", kernel)


class _RestoreKernel:
    """What set_kernel_enabled returns: as a context manager, puts the previous state back on exit."""

    def __init__(self, opdef: CustomOpDef, device_type: str, was_enabled: bool) -> None:
        self._opdef, self._device_type, self._was_enabled = opdef, device_type, was_enabled

    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        self._opdef.set_kernel_enabled(self._device_type, self._was_enabled)


def _has_tensor_argument(schema: FunctionSchema) -> bool:
    return any(a.type.base == "Tensor" for a in schema.arguments)


def _register_autograd(op: OpOverload, lib: Library, backward: Callable, setup_context: Callable | None) -> None:
    if not callable(backward):
        raise TypeError(f"[{op._qualname}] register_autograd: backward must be callable, got {backward!r}")
    if setup_context is not None and not callable(setup_context):
        raise TypeError(f"[{op._qualname}] register_autograd: setup_context must be callable, got {setup_context!r}")
    if op._schema.is_mutable or any(r.alias is not None for r in op._schema.returns):
        raise RuntimeError(
            f"[{op._qualname}] cannot register an autograd formula for an operator that mutates or aliases its "
            f"inputs ({op._schema}); make a functional operator and register the formula for that"
        )
    lib._set(op, "backward", backward)
    lib._set(op, "setup_context", setup_context)


def custom_op(
    name: str,
    fn: Callable | None = None,
    /,
    *,
    mutates_args: Iterable[str] | str,
    device_types: str | Sequence[str] | None = None,
    schema: str | None = None,
) -> Any:
    """Makes a Python function an operator ``name`` (``"namespace::opname"``), as ``torch.library.custom_op``.

    Args:
        name: ``"namespace::opname"``.
        fn: the function (omit it to use ``custom_op`` as a decorator). Its type
            hints give the schema (see :func:`infer_schema`).
        mutates_args: the names of the arguments the function mutates (``()``
            for none; ``"unknown"``: any Tensor argument). Required.
        device_types: the device type(s) ``fn`` is the kernel for (None: every device).
        schema: the schema without the name, ``"(Tensor x) -> Tensor"`` (None: inferred).

    Returns:
        A :class:`CustomOpDef`, callable as the function was, and reachable as
        ``flambeau.ops.namespace.opname``.

    Example:
        >>> import numpy as np
        >>> import flambeau as fb
        >>> @custom_op("doc_custom::numpy_add_", mutates_args=["x"])
        ... def numpy_add_(x: fb.Tensor, y: fb.Tensor) -> None:
        ...     np.add(x.numpy(), y.numpy(), out=x.numpy())
        >>> x = fb.ones(3)
        >>> fb.ops.doc_custom.numpy_add_(x, fb.ones(3))
        >>> x.tolist()
        [2.0, 2.0, 2.0]
    """
    if not isinstance(name, str) or name.count("::") != 1:
        raise ValueError(f"[custom_op] the name must be 'namespace::opname', got {name!r}")
    namespace, opname = name.split("::")
    if not _IDENTIFIER.match(namespace) or not _IDENTIFIER.match(opname):
        raise ValueError(f"[custom_op] the namespace and the op name must be identifiers, got {name!r}")
    if mutates_args is None or (isinstance(mutates_args, str) and mutates_args != "unknown"):
        raise ValueError(
            f"[custom_op] mutates_args must be the names of the arguments '{name}' mutates ('()' for none) "
            f"or 'unknown', got {mutates_args!r}"
        )

    def inner(fn: Callable) -> CustomOpDef:
        if not callable(fn):
            raise TypeError(f"[custom_op] '{name}' must wrap a function, got {type(fn).__name__}")
        if schema is None:
            schema_str = infer_schema(fn, mutates_args=mutates_args)
        else:
            schema_str = schema
        parsed = parse_schema(opname + schema_str, op=name, caller="custom_op")
        if schema is not None and not isinstance(mutates_args, str):
            declared = set(parsed.mutated_names)
            if declared != set(mutates_args):
                raise ValueError(
                    f"[custom_op] '{name}': mutates_args={sorted(mutates_args)} but the schema {schema!r} "
                    f"marks {sorted(declared)} as mutated (Tensor(a!)); make them agree"
                )
        if any(a.kwarg_only and a.type.base == "Tensor" and not a.is_write for a in parsed.arguments):
            raise NotImplementedError(
                f"[custom_op] '{name}' has keyword-only Tensor arguments, which a custom_op does not support "
                f"yet: make them positional ({schema_str})"
            )
        result = CustomOpDef(namespace, opname, schema_str, fn)
        result.register_kernel(device_types)(fn)
        return result

    return inner if fn is None else inner(fn)


def _library_of(op: OpOverload, lib: Library | None) -> Library:
    if lib is not None:
        return lib
    owner = _custom_op_libraries.get(op._qualname)
    if owner is not None:
        return owner
    # Registrations made outside any Library live as long as the process, as PyTorch's do with lib=None.
    keep = _process_libraries.get(op._namespace)
    if keep is None:
        keep = _process_libraries[op._namespace] = Library(op._namespace, "IMPL")
    return keep


_process_libraries: dict[str, Library] = {}


def _op_of(op: Any, caller: str) -> OpOverload:
    if isinstance(op, CustomOpDef):
        return op._opoverload
    if isinstance(op, OpOverload):
        return op
    if isinstance(op, OpOverloadPacket):
        return lookup(op._qualified_op_name, caller)
    if isinstance(op, str):
        return lookup(op, caller)
    raise TypeError(f"[{caller}] expected an operator ('ns::name', a CustomOpDef or OpOverload), got {op!r}")


def register_fake(op: Any, func: Callable | None = None, /, *, lib: Library | None = None, _stacklevel: int = 1) -> Any:
    """Registers the fake rule (shape and dtype rule) of an operator, as ``torch.library.register_fake``.

    Example:
        >>> import flambeau as fb
        >>> lib = Library("doc_regfake", "DEF")
        >>> lib.define("rows(Tensor x) -> Tensor")
        'rows'
        >>> @register_fake("doc_regfake::rows", lib=lib)
        ... def _(x):
        ...     return x.new_empty(x.shape[0])
        >>> fb.ops.doc_regfake.rows(fb.empty(7, 2, device="meta")).shape
        flambeau.Size([7])
        >>> lib._destroy()
    """
    overload = _op_of(op, "register_fake")

    def inner(fn: Callable) -> Callable:
        if not callable(fn):
            raise TypeError(f"[register_fake] the fake rule must be callable, got {fn!r}")
        _library_of(overload, lib)._set(overload, "fake", fn)
        return fn

    return inner if func is None else inner(func)


impl_abstract = register_fake  # PyTorch's former name of register_fake


def register_autograd(
    op: Any, backward: Callable, /, *, setup_context: Callable | None = None, lib: Library | None = None
) -> None:
    """Registers an operator's gradient, as ``torch.library.register_autograd`` (see
    :meth:`CustomOpDef.register_autograd`).

    Example:
        >>> import flambeau as fb
        >>> @custom_op("doc_regad::square", mutates_args=())
        ... def square(x: fb.Tensor) -> fb.Tensor:
        ...     return x * x
        >>> def setup(ctx, inputs, output):
        ...     ctx.save_for_backward(inputs[0])
        >>> register_autograd("doc_regad::square", lambda ctx, g: 2 * g * ctx.saved_tensors[0], setup_context=setup)
        >>> x = fb.tensor([3.0], requires_grad=True)
        >>> square(x).backward()
        >>> x.grad.tolist()
        [6.0]
    """
    overload = _op_of(op, "register_autograd")
    _register_autograd(overload, _library_of(overload, lib), backward, setup_context)


def register_autocast(op: Any, device_type: str, cast_inputs: fc.dtype, /, *, lib: Library | None = None) -> None:
    """Makes an operator take part in autocast, as ``torch.library.register_autocast``: while autocast is on
    for ``device_type`` (``"cpu"`` or ``"cuda"``), a call whose tensors are on that device casts its floating
    tensor arguments on it (float64 ones excepted, in lists too) to ``cast_inputs`` and runs with autocast off.

    Example:
        >>> import flambeau as fb
        >>> @fb.library.custom_op("doc_autocast::add", mutates_args=())
        ... def add(x: fb.Tensor, y: fb.Tensor) -> fb.Tensor:
        ...     return x + y
        >>> register_autocast("doc_autocast::add", "cpu", fb.bfloat16)
        >>> x = fb.ones(2)
        >>> add(x, x).dtype
        flambeau.float32
        >>> with fb.autocast("cpu", dtype=fb.bfloat16):
        ...     add(x, x).dtype
        flambeau.bfloat16
    """
    if not isinstance(device_type, str) or device_type not in ("cpu", "cuda"):
        raise ValueError(f"Device type '{device_type}' does not support autocast.")
    if not isinstance(cast_inputs, fc.dtype):
        raise TypeError(f"[register_autocast] cast_inputs must be a dtype, got {type(cast_inputs).__name__}")
    overload = _op_of(op, "register_autocast")
    _library_of(overload, lib)._set(overload, f"autocast:{device_type}", cast_inputs)


def register_kernel(
    op: Any, device_types: str | Sequence[str] | None, func: Callable | None = None, /, *, lib: Library | None = None
) -> Any:
    """Registers an operator's kernel for device types, as ``torch.library.register_kernel``.

    Example:
        >>> import flambeau as fb
        >>> @custom_op("doc_regkernel::plus", mutates_args=(), device_types="cpu")
        ... def plus(x: fb.Tensor) -> fb.Tensor:
        ...     return x + 1
        >>> register_kernel("doc_regkernel::plus", "meta", lambda x: fb.empty_like(x))
        <function <lambda> at ...>
        >>> plus(fb.empty(3, device="meta")).device
        device(type='meta')
    """
    overload = _op_of(op, "register_kernel")
    opdef = _custom_op_defs_of(overload)
    if opdef is not None and lib is None:
        return opdef.register_kernel(device_types, func)
    devices = _device_types(device_types, "register_kernel")

    def inner(fn: Callable) -> Callable:
        if not callable(fn):
            raise TypeError(f"[register_kernel] the kernel must be callable, got {fn!r}")
        target = _library_of(overload, lib)
        for device in devices:
            slot = "fake" if device == "meta" else "default" if device is None else f"device:{device}"
            target._set(overload, slot, fn)
        return fn

    return inner if func is None else inner(func)


def _custom_op_defs_of(op: OpOverload) -> CustomOpDef | None:
    return _opdefs.get(op._qualname) if _custom_op_libraries.get(op._qualname) is not None else None


def define(qualname: str, schema: str, *, lib: Library | None = None, tags: Any = ()) -> None:
    """Defines an operator ``"ns::name"`` from a schema without its name, as ``torch.library.define``.

    Example:
        >>> import flambeau as fb
        >>> define("doc_fndefine::mul3", "(Tensor x) -> Tensor")
        >>> impl("doc_fndefine::mul3", "cpu", lambda x: x * 3)
        <function <lambda> at ...>
        >>> fb.ops.doc_fndefine.mul3(fb.ones(1)).tolist()
        [3.0]
    """
    if not isinstance(qualname, str) or qualname.count("::") != 1:
        raise ValueError(f"[define] the name must be 'namespace::opname', got {qualname!r}")
    ns, name = qualname.split("::")
    target = lib if lib is not None else Library(ns, "FRAGMENT")
    target._define(name + schema, fake_required=False, caller="define")


def impl(qualname: str, types: str | Sequence[str], func: Callable | None = None, *, lib: Library | None = None) -> Any:
    """Registers a kernel of ``"ns::name"`` for device types (``"cpu"``) or dispatch keys (``"CPU"``),
    as ``torch.library.impl`` (a decorator when ``func`` is not given).

    Example:
        >>> import flambeau as fb
        >>> define("doc_fnimpl::halve", "(Tensor x) -> Tensor")
        >>> @impl("doc_fnimpl::halve", ["cpu", "sim"])
        ... def _(x):
        ...     return x / 2
        >>> fb.ops.doc_fnimpl.halve(fb.ones(1)).tolist()
        [0.5]
    """
    op = _op_of(qualname, "impl")
    keys = [types] if isinstance(types, str) else list(types)

    def inner(fn: Callable) -> Callable:
        target = _library_of(op, lib)
        for key in keys:
            target.impl(op, fn, key if key in _DISPATCH_KEYS else key.lower())
        return fn

    return inner if func is None else inner(func)
