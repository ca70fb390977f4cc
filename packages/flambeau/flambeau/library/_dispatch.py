"""The operators users define, and how a call of one reaches its kernel.

Note [Custom operator dispatch]: an operator (:class:`OpOverload`) is defined
once from its schema; at that moment a Python function with the schema's own
signature is generated for it (``_build_call``), so that a call binds its
arguments the way any Python call does (no schema is read per call), checks
each argument's type with one ``isinstance``, and then, in order:

1. opens a profiler event named ``ns::name`` when a profile is recording
   (one branch otherwise). It is recorded as a ``record_function`` range: core's
   recorder names every op-kind event ``aten::<name>``;
   then, when the op has an autocast rule (``register_autocast``) for the device
   of its tensors and autocast is on there, calls itself again with the floating
   tensors cast and autocast off (one dict test otherwise);
2. goes through autograd when grad mode is on and a tensor argument requires
   grad: the op's ``Autograd`` or ``CompositeImplicitAutograd`` kernel if it has
   one, else a generated ``autograd.Function`` whose forward runs the device
   kernel and calls ``setup_context``, and whose backward calls the registered
   ``backward`` (or says that none was registered);
3. otherwise looks the device type of its first tensor argument (or of its
   ``Device`` argument) up in a table, ``"meta"`` giving the fake rule, and
   calls that kernel. A miss fills the table from the registrations (a kernel
   for the device, else the op's default kernel), or raises NotImplementedError
   naming the op, the device and the devices it has kernels for. Every
   registration clears the table.

Mutations are not checked per call (``opcheck`` compares the inputs before
and after); neither are outputs against the fake rule.
"""

from __future__ import annotations

import inspect
import types
from collections.abc import Callable, Sequence
from typing import Any

import flambeau_core as fc
from flambeau_autograd import Function
from flambeau_core import _C, FlambeauError
from flambeau_core import profiler as _prof
from flambeau_core.profiler._events import KIND_USER

from . import _aten
from ._schema import FunctionSchema, SchemaType

# "ns::name" -> its packet (all overloads). Operators live here, and in fb.ops through it.
_REGISTRY: dict[str, OpOverloadPacket] = {}

# Library.impl dispatch keys -> where the kernel goes ("device:<type>" for a device's kernel).
_DISPATCH_KEYS = {
    "CPU": "device:cpu",
    "CUDA": "device:cuda",
    "Meta": "fake",
    "CompositeExplicitAutograd": "default",
    "CompositeExplicitAutogradNonFunctional": "default",
    "CompositeImplicitAutograd": "implicit",
    "Autograd": "autograd",
}


_NOCAST = object()  # _autocast_call's answer when autocast does not apply


def _cast_floating(value: Any, device: str, dtype: fc.dtype) -> Any:
    """value with its floating tensors on `device` but float64 ones (in lists and tuples too) cast to dtype, as
    PyTorch's."""
    if isinstance(value, fc.Tensor):
        eligible = value.is_floating_point() and value.device.type == device and value.dtype != fc.float64
        return value.to(dtype) if eligible else value
    if isinstance(value, (list, tuple)):
        return type(value)(_cast_floating(v, device, dtype) for v in value)
    return value


def _is_tensor_list(v: Any) -> bool:
    return isinstance(v, (list, tuple)) and all(isinstance(t, fc.Tensor) for t in v)


def _is_optional_tensor_list(v: Any) -> bool:
    return isinstance(v, (list, tuple)) and all(t is None or isinstance(t, fc.Tensor) for t in v)


def _is_list_of(v: Any, types_: tuple[type, ...], length: int | None) -> bool:
    if length is not None and isinstance(v, types_) and not isinstance(v, (list, tuple)):
        return True  # int[2] takes one int for both, as PyTorch's
    return isinstance(v, (list, tuple)) and all(isinstance(e, types_) for e in v)


# Base type -> (the Python types it takes, what an error calls them).
_PY_TYPES: dict[str, tuple[tuple[type, ...], str]] = {
    "int": ((int,), "int"),
    "SymInt": ((int,), "int"),
    "float": ((int, float), "float"),
    "bool": ((bool,), "bool"),
    "str": ((str,), "str"),
    "Scalar": ((int, float, complex), "number"),
    "ScalarType": ((fc.dtype,), "flambeau.dtype"),
    "Device": ((fc.device, str, int), "device"),
    "Layout": ((object,), "layout"),
    "MemoryFormat": ((object,), "memory_format"),
    "Generator": ((object,), "Generator"),
}


def _check_expr(t: SchemaType, v: str, i: int) -> str | None:
    """A Python expression, true when the value named v is of type t (None: anything goes)."""
    if t.base == "Tensor":
        if t.is_list:
            expr = f"_is_optional_tensor_list({v})" if t.elem_optional else f"_is_tensor_list({v})"
        else:
            expr = f"isinstance({v}, _Tensor)"
    else:
        py, _ = _PY_TYPES[t.base]
        if py == (object,):
            return None
        expr = f"_is_list_of({v}, _py{i}, {t.list_len})" if t.is_list else f"isinstance({v}, _py{i})"
    return f"({v} is None or {expr})" if t.optional else expr


def _type_words(t: SchemaType) -> str:
    if t.base == "Tensor":
        words = "a list of Tensors" if t.is_list else "a Tensor"
    else:
        words = _PY_TYPES[t.base][1]
        if t.is_list:
            words = f"a list of {words}"
    return words + (" or None" if t.optional else "")


def _device_type(d: Any) -> str:
    return d.type if isinstance(d, fc.device) else fc.device(d).type


def _first_device(values: tuple) -> str | None:
    for v in values:
        if isinstance(v, fc.Tensor):
            return "cpu" if v.is_cpu else v.device.type
        if isinstance(v, (list, tuple)):
            for t in v:
                if isinstance(t, fc.Tensor):
                    return "cpu" if t.is_cpu else t.device.type
    return None


def _detached(values: tuple) -> tuple:
    """The arguments with tensors detached (sharing memory): what a kernel gets outside the graph. Under
    no_grad PyTorch's kernels may call Tensor.numpy() on inputs that require grad; flambeau's numpy() refuses
    those whatever the grad mode, so the kernel gets detached views."""
    return tuple(
        v.detach()
        if isinstance(v, fc.Tensor)
        else [t.detach() if isinstance(t, fc.Tensor) else t for t in v]
        if isinstance(v, (list, tuple))
        else v
        for v in values
    )


def _any_requires_grad(values: Sequence[Any]) -> bool:
    for v in values:
        if isinstance(v, fc.Tensor):
            if v.requires_grad:
                return True
        elif isinstance(v, (list, tuple)) and any(isinstance(t, fc.Tensor) and t.requires_grad for t in v):
            return True
    return False


class OpOverload:
    """One operator: a schema and the kernels registered for it. Called like a function.

    Made by ``Library.define`` or ``custom_op``; reached as
    ``flambeau.ops.<ns>.<name>.<overload>`` (``.default`` for the unnamed overload).

    Example:
        >>> import flambeau as fb
        >>> lib = fb.library.Library("doc_overload", "DEF")
        >>> lib.define("add2(Tensor x, *, int k=2) -> Tensor")
        'add2'
        >>> lib.impl("add2", lambda x, *, k=2: x + k, "CPU")
        >>> op = fb.ops.doc_overload.add2.default
        >>> op, op(fb.zeros(1), k=5).tolist()
        (doc_overload.add2.default, [5.0])
        >>> lib._destroy()
    """

    def __init__(self, schema: FunctionSchema, namespace: str, name: str, *, fake_required: bool) -> None:
        self._schema = schema
        self._namespace = namespace
        self._opname = name
        self._overloadname = schema.overload_name or "default"
        self._qualname = f"{namespace}::{name}"
        self.__name__ = f"{self._qualname}" + (f".{schema.overload_name}" if schema.overload_name else "")
        self._kernels: dict[str, Callable] = {}  # device type -> kernel
        self._default_kernel: Callable | None = None  # every device (CompositeExplicitAutograd)
        self._implicit_kernel: Callable | None = None  # every device, autograd through its ops
        self._autograd_kernel: Callable | None = None  # handles autograd itself
        self._autocast: dict[str, Any] = {}  # device type -> the dtype autocast casts inputs to (register_autocast)
        self._fake: Callable | None = None
        # custom_op's meta calls need a fake rule; Library ops fall back to their default kernel as PyTorch's do.
        self._fake_required = fake_required
        self._backward: Callable | None = None
        self._setup_context: Callable | None = None
        self._table: dict[str | None, Callable] = {}  # device type -> kernel to call (filled on misses)
        self._positional = tuple(a for a in schema.arguments if not a.kwarg_only)
        self._kwarg_only = tuple(a for a in schema.arguments if a.kwarg_only)
        self._has_kwarg_only = bool(self._kwarg_only)
        self._function = _make_function(self)
        self._call = _build_call(self)
        self.__signature__ = inspect.signature(self._call)
        own_call(self, self._call)

    def __call__(self, /, *args: Any, **kwargs: Any) -> Any:  # replaced by the generated function: own_call
        return self._call(*args, **kwargs)

    def __repr__(self) -> str:
        return f"{self._namespace}.{self._opname}.{self._overloadname}"

    def _registrations_changed(self) -> None:
        self._table.clear()

    # -- the slow paths of a call -----------------------------------------------------

    def _kernel_for(self, device_type: str | None) -> Callable:
        """The kernel for a device type (a table miss): filled into the table, or a clear error."""
        if device_type == "meta":
            kernel = self._fake
            if kernel is None and not self._fake_required:
                kernel = self._default_kernel or self._implicit_kernel
            if kernel is None and not self._schema.returns and self._fake_required:
                kernel = _returns_nothing  # a mutating op returning nothing needs no rule, as in PyTorch
            if kernel is None:
                raise NotImplementedError(
                    f"[{self._qualname}] has no fake rule, so it cannot run on the 'meta' device; register one "
                    f"with @{self._opname}.register_fake or flambeau.library.register_fake('{self._qualname}')"
                )
        else:
            kernel = self._kernels.get(device_type) if device_type is not None else None
            kernel = kernel or self._default_kernel or self._implicit_kernel
            if kernel is None and device_type is None and len(self._kernels) == 1:
                kernel = next(iter(self._kernels.values()))  # no tensor or device argument: its only kernel
            if kernel is None:
                have = sorted(self._kernels) + (["meta (fake rule)"] if self._fake is not None else [])
                raise NotImplementedError(
                    f"[{self._qualname}] has no kernel for the '{device_type}' device "
                    f"(it has kernels for: {', '.join(have) or 'no device'}); register one with "
                    f"register_kernel('{device_type}') or Library.impl('{self._opname}', fn, '{device_type}')"
                )
        self._table[device_type] = kernel
        return kernel

    def _redispatch(self, args: tuple, kwargs: dict) -> Any:
        """The call below autograd: the device kernel for the arguments."""
        device = _first_device(args)
        if device is None:
            device = self._device_argument(args, kwargs)
        kernel = self._table.get(device)
        if kernel is None:
            kernel = self._kernel_for(device)
        return kernel(*args, **kwargs)

    def _autocast_call(self, args: tuple, kwargs: dict) -> Any:
        """Under autocast for the device of the arguments, with a rule registered for it (register_autocast):
        the call again with that device's floating tensors cast and autocast off; else _NOCAST."""
        device = _first_device(args)
        dtype = self._autocast.get(device) if device is not None else None
        if dtype is None or not fc.is_autocast_enabled(device):
            return _NOCAST
        cast = tuple(_cast_floating(a, device, dtype) for a in args)
        with fc.autocast(device, enabled=False):
            return self._call(*cast, **kwargs)

    def _device_argument(self, args: tuple, kwargs: dict) -> str | None:
        for i, a in enumerate(self._schema.arguments):
            if a.type.base == "Device":
                v = args[i] if i < len(args) else kwargs.get(a.name)
                if v is not None:
                    return _device_type(v)
        return None

    def _autograd_call(self, args: tuple, kwargs: dict) -> Any:
        if self._autograd_kernel is not None:
            return self._autograd_kernel(*args, **kwargs)
        if self._implicit_kernel is not None:
            return self._implicit_kernel(*args, **kwargs)
        return self._function(args, kwargs)

    def _bad_argument(self, index: int, value: Any) -> None:
        arg = self._schema.arguments[index]
        raise TypeError(
            f"[{self._qualname}] argument '{arg.name}' (position {index}) must be {_type_words(arg.type)}, "
            f"got {type(value).__name__}; the schema is {self._schema}"
        )


def own_call(obj: Any, call: Callable) -> None:
    """Makes ``obj(...)`` run ``call`` (a generated function) directly: ``obj`` gets a class of its own,
    a subclass of its class whose ``__call__`` is ``call``. A forwarding ``__call__`` method would cost a
    second Python frame per call, about as much as all the rest of the dispatch."""
    cls = type(obj)
    if cls.__dict__.get("_owned_by") is not obj:
        cls = type(
            cls.__name__, (cls,), {"_owned_by": obj, "__module__": cls.__module__, "__qualname__": cls.__qualname__}
        )
        obj.__class__ = cls
    cls.__call__ = staticmethod(call)  # type: ignore[method-assign]


def _returns_nothing(*args: Any, **kwargs: Any) -> None:
    return None


def _build_call(op: OpOverload) -> Callable:
    """Generates the function a call of `op` runs (Note [Custom operator dispatch])."""
    schema = op._schema
    env: dict[str, Any] = {
        "_Tensor": fc.Tensor,
        "_is_tensor_list": _is_tensor_list,
        "_is_optional_tensor_list": _is_optional_tensor_list,
        "_is_list_of": _is_list_of,
        "_first_device": _first_device,
        "_device_type": _device_type,
        "_any_requires_grad": _any_requires_grad,
        "_detached": _detached,
        "_grad_enabled": fc.is_grad_enabled,
        "_prof": _prof,
        "_enter": _C._record_function_enter,
        "_exit": _C._record_function_exit,
        "_KIND": KIND_USER,
        "_name": op._qualname,
        "_op": op,
        "_table": op._table,
        "_autocast": op._autocast,
        "_NOCAST": _NOCAST,
    }
    params: list[str] = []
    checks: list[str] = []
    for i, a in enumerate(schema.arguments):
        if a.kwarg_only and "*" not in params:
            params.append("*")
        if a.has_default:
            env[f"_d{i}"] = a.default
            params.append(f"{a.name}=_d{i}")
        else:
            params.append(a.name)
        if a.type.base in _PY_TYPES:
            env[f"_py{i}"] = _PY_TYPES[a.type.base][0]
        expr = _check_expr(a.type, a.name, i)
        if expr is not None:
            checks.append(f"    if not {expr}:\n        _op._bad_argument({i}, {a.name})")
    positional = [a.name for a in op._positional]
    kw = [f"{a.name}={a.name}" for a in op._kwarg_only]
    call_args = ", ".join(positional + kw)
    args_tuple = "(" + "".join(f"{n}, " for n in positional) + ")"
    kwargs_dict = "{" + ", ".join(f"'{a.name}': {a.name}" for a in op._kwarg_only) + "}"

    tensors = [a for a in schema.arguments if a.type.base == "Tensor"]
    grad_terms = []
    for a in tensors:
        if a.type.is_list:
            grad_terms.append(f"_any_requires_grad({a.name})")
        elif a.type.optional:
            grad_terms.append(f"({a.name} is not None and {a.name}.requires_grad)")
        else:
            grad_terms.append(f"{a.name}.requires_grad")
    first = tensors[0] if tensors else None
    if first is not None and not first.type.is_list and not first.type.optional:
        device = f"'cpu' if {first.name}.is_cpu else {first.name}.device.type"
    elif tensors:
        device = f"_first_device(({''.join(f'{a.name}, ' for a in tensors)}))"
    else:
        dev_args = [a for a in schema.arguments if a.type.base == "Device"]
        device = f"None if {dev_args[0].name} is None else _device_type({dev_args[0].name})" if dev_args else "None"

    def body(indent: str) -> str:
        lines = [
            "if _autocast:",
            f"    _cast = _op._autocast_call({args_tuple}, {kwargs_dict})",
            "    if _cast is not _NOCAST:",
            "        return _cast",
        ]
        if grad_terms:
            lines += [
                f"if {' or '.join(grad_terms)}:",
                "    if _grad_enabled():",
                f"        return _op._autograd_call({args_tuple}, {kwargs_dict})",
                f"    return _op._redispatch(_detached({args_tuple}), {kwargs_dict})",
            ]
        lines += [
            f"_device = {device}",
            "_kernel = _table.get(_device)",
            "if _kernel is None:",
            "    _kernel = _op._kernel_for(_device)",
            f"return _kernel({call_args})",
        ]
        return "\n".join(indent + line for line in lines)

    # Note [Op recorder]: while a recorder runs (fb.compile's capture, fb.onnx.export), the call is reported as
    # one op named after the operator, and its own ops are not: a graph keeps it as one opaque node.
    env["_recording"], env["_record"], env["_self"] = _C._op_recorder_on, _C._record_call, None
    env["_rname"] = op._qualname + ("" if op._overloadname == "default" else f".{op._overloadname}")
    src = (
        f"def _call({', '.join(params)}):\n"
        + ("\n".join(checks) + "\n" if checks else "")
        + "    if _recording():\n"
        + f"        return _record(_rname, _self, {args_tuple}, {kwargs_dict})\n"
        + "    if _prof._active is not None:\n"
        + "        _token = _enter(_name, _KIND)\n"
        + "        try:\n"
        + body("            ")
        + "\n        finally:\n"
        + "            _exit(_token)\n"
        + body("    ")
        + "\n"
    )
    code = compile(src, f"<flambeau.library: {op._qualname}>", "exec")
    exec(code, env)  # noqa: S102  (our own generated source: see Note [Custom operator dispatch])
    fn = env["_call"]
    env["_self"] = fn
    # Python's own binding errors (a missing or an extra argument) then read "[ns::name] ns::name() ...".
    fn.__name__ = op._opname
    fn.__qualname__ = f"[{op._qualname}] {op._qualname}"
    return fn


# --- autograd --------------------------------------------------------------------


class _CallMetadata:
    """The last argument of the generated Function: what its forward needs beyond the tensors."""

    __slots__ = ("input_spec", "kwargs", "output_spec")

    def __init__(self, kwargs: dict, input_spec: tuple) -> None:
        self.kwargs = kwargs
        self.input_spec = input_spec
        self.output_spec: tuple = ()


def _flatten(values: Sequence[Any]) -> tuple[list[Any], tuple]:
    """Tensor lists spread into their elements (the autograd Function sees each tensor), with their lengths."""
    flat: list[Any] = []
    spec: list[int | None] = []
    for v in values:
        if isinstance(v, (list, tuple)) and v and all(t is None or isinstance(t, fc.Tensor) for t in v):
            flat.extend(v)
            spec.append(len(v))
        else:
            flat.append(v)
            spec.append(None)
    return flat, tuple(spec)


def _unflatten(flat: Sequence[Any], spec: tuple) -> tuple:
    out: list[Any] = []
    i = 0
    for n in spec:
        if n is None:
            out.append(flat[i])
            i += 1
        else:
            out.append(list(flat[i : i + n]))
            i += n
    return tuple(out)


def _make_function(op: OpOverload) -> Callable[[tuple, dict], Any]:
    """The autograd path of a call: an autograd.Function over the op's device kernels."""
    schema = op._schema
    single_output = not schema.returns_tuple and len(schema.returns) == 1

    def forward(ctx: Any, *flat: Any) -> Any:
        meta: _CallMetadata = flat[-1]
        args = _unflatten(flat[:-1], meta.input_spec)
        # The kernel runs outside the graph, on detached views (they share memory, so mutations land).
        out = op._redispatch(_detached(args), meta.kwargs)
        if op._setup_context is not None:
            if op._has_kwarg_only:
                op._setup_context(ctx=ctx, inputs=args, keyword_only_inputs=meta.kwargs, output=out)
            else:
                op._setup_context(ctx=ctx, inputs=args, output=out)
        outs = (out,) if single_output else tuple(out) if isinstance(out, (tuple, list)) else (out,)
        flat_out, meta.output_spec = _flatten(outs)
        return tuple(flat_out)

    def backward(ctx: Any, *grads: Any) -> Any:
        if op._backward is None:
            raise RuntimeError(
                f"[{op._qualname}] trying to backward through {op._qualname} but no autograd formula was "
                f"registered; register one with register_autograd"
            )
        meta: _CallMetadata = ctx._flambeau_call_metadata
        grads = _unflatten(grads, meta.output_spec)
        previous = ctx.needs_input_grad
        ctx.needs_input_grad = _unflatten(previous[:-1], meta.input_spec)
        try:
            result = op._backward(ctx, *grads)
        finally:
            ctx.needs_input_grad = previous
        result = result if isinstance(result, tuple) else (result,)
        if len(result) != len(meta.input_spec):
            raise FlambeauError(
                f"[{op._qualname}] backward returned {len(result)} gradient(s) but the operator has "
                f"{len(meta.input_spec)} positional input(s) (return None for an input without one)"
            )
        flat_grads: list[Any] = []
        for g, n in zip(result, meta.input_spec, strict=True):
            if n is None:
                flat_grads.append(g)
            else:
                flat_grads.extend([None] * n if g is None else g)
        return (*flat_grads, None)

    name = f"GeneratedBackwardFor_{op._namespace}_{op._opname}_{op._overloadname}"

    def _forward(ctx: Any, *flat: Any) -> Any:
        ctx._flambeau_call_metadata = flat[-1]
        return forward(ctx, *flat)

    generated = type(name, (Function,), {"forward": staticmethod(_forward), "backward": staticmethod(backward)})

    def apply(args: tuple, kwargs: dict) -> Any:
        flat, spec = _flatten(args)
        meta = _CallMetadata(kwargs, spec)
        outs = _unflatten(generated.apply(*flat, meta), meta.output_spec)
        if single_output:
            return outs[0]
        return outs if schema.returns else None

    return apply


# --- packets and fb.ops ---------------------------------------------------------------


class _ArgumentMatcher:
    """Whether a call's arguments fit one schema: their number, their names, and tensors where it takes
    tensors (and only there). How a packet of several overloads chooses one."""

    __slots__ = ("kinds", "names", "n_positional", "required")

    def __init__(self, schema: FunctionSchema) -> None:
        # The schema's positional arguments come first (kwarg-only ones follow its `*`).
        self.n_positional = sum(not a.kwarg_only for a in schema.arguments)
        self.names = {a.name: i for i, a in enumerate(schema.arguments)}
        self.required = [a.name for a in schema.arguments if not a.has_default and not a.type.optional]
        self.kinds = [(a.type.base == "Tensor", a.type.is_list, a.type.optional) for a in schema.arguments]

    def always_beyond(self, default: _ArgumentMatcher) -> bool:
        """Whether every call this schema takes names an argument, or passes more positions, than ``default``'s."""
        positional = [n for n in self.required if self.names[n] < self.n_positional]
        keyword = [n for n in self.required if self.names[n] >= self.n_positional]
        return any(n not in default.names for n in keyword) or len(positional) > default.n_positional

    def takes(self, args: tuple, kwargs: dict) -> bool:
        if len(args) > self.n_positional:
            return False
        given: dict[str, Any] = dict(zip(self.names, args, strict=False))  # the rest take defaults
        for name, value in kwargs.items():
            if name not in self.names or name in given:
                return False
            given[name] = value
        if any(name not in given for name in self.required):
            return False
        for name, value in given.items():
            is_tensor, is_list, optional = self.kinds[self.names[name]]
            if value is None:
                if not optional and is_tensor:
                    return False
                continue
            if is_list:
                if not isinstance(value, (list, tuple)):
                    return False
                if is_tensor and not all(v is None or isinstance(v, fc.Tensor) for v in value):
                    return False
            elif is_tensor != isinstance(value, fc.Tensor):
                return False
        return True


def _default_unless_extra(default: OpOverload, matcher: _ArgumentMatcher, resolve: Callable) -> Callable:
    call, names, n_positional = default._call, matcher.names, matcher.n_positional

    def packet_call(*args: Any, **kwargs: Any) -> Any:
        if len(args) > n_positional or (kwargs and not names.keys() >= kwargs.keys()):
            return resolve(*args, **kwargs)
        return call(*args, **kwargs)

    return packet_call


class OpOverloadPacket:
    """All overloads of ``ns::name``; calling it calls the default overload (``.default``).

    Example:
        >>> import flambeau as fb
        >>> lib = fb.library.Library("doc_packet", "DEF")
        >>> lib.define("neg(Tensor x) -> Tensor")
        'neg'
        >>> lib.impl("neg", lambda x: -x, "CPU")
        >>> fb.ops.doc_packet.neg(fb.ones(1)).tolist()
        [-1.0]
        >>> lib._destroy()
    """

    def __init__(self, namespace: str, name: str) -> None:
        self._namespace = namespace
        self._opname = name
        self._qualified_op_name = f"{namespace}::{name}"
        self.__name__ = name
        self._overloads: dict[str, OpOverload] = {}
        self._matchers: list[tuple[_ArgumentMatcher, OpOverload]] = []
        self._set_call(self._by_arguments)

    def _set_call(self, call: Callable) -> None:
        self._call = call
        own_call(self, call)

    def _overloads_changed(self) -> None:
        # One overload: the packet is its call. Several: each call picks the first whose schema takes the
        # arguments, the default first (as PyTorch's packet resolves `op(a, b, out=o)` to `op.out`).
        if len(self._overloads) == 1:
            self._set_call(next(iter(self._overloads.values()))._call)
            return
        order = sorted(self._overloads.values(), key=lambda o: o._overloadname != "default")
        self._matchers = [(_ArgumentMatcher(o._schema), o) for o in order]
        default = self._overloads.get("default")
        if default is not None and all(m.always_beyond(self._matchers[0][0]) for m, _ in self._matchers[1:]):
            # Every other overload takes a name or a position the default lacks (`.out`'s out=): a call that
            # uses none of those is the default's, decided without looking at the values.
            self._set_call(_default_unless_extra(default, self._matchers[0][0], self._by_arguments))
        else:
            self._set_call(self._by_arguments)

    def _add(self, overload: OpOverload) -> None:
        self._overloads[overload._overloadname] = overload
        self._overloads_changed()

    def _remove(self, overload_name: str) -> None:
        self._overloads.pop(overload_name, None)
        if self._overloads:
            self._overloads_changed()

    def _by_arguments(self, *args: Any, **kwargs: Any) -> Any:
        for matcher, overload in self._matchers:
            if matcher.takes(args, kwargs):
                return overload._call(*args, **kwargs)
        if "default" in self._overloads:  # its own binding gives the precise message (which argument, why)
            return self._overloads["default"]._call(*args, **kwargs)
        kinds = ", ".join([type(a).__name__ for a in args] + [f"{k}={type(v).__name__}" for k, v in kwargs.items()])
        raise TypeError(
            f"[{self._qualified_op_name}] no overload takes the arguments ({kinds}); its overloads are: "
            + "; ".join(str(o._schema) for _, o in self._matchers)
        )

    def __call__(self, /, *args: Any, **kwargs: Any) -> Any:  # replaced by the default overload's: own_call
        return self._call(*args, **kwargs)

    def __getattr__(self, name: str) -> OpOverload:
        overloads = self.__dict__.get("_overloads", {})
        if name in overloads:
            return overloads[name]
        raise AttributeError(
            f"[flambeau.ops] the operator '{self.__dict__.get('_qualified_op_name')}' has no overload '{name}' "
            f"(it has: {', '.join(overloads) or 'none'})"
        )

    def overloads(self) -> list[str]:
        """The names of this operator's overloads (``'default'`` for the unnamed one).

        Example:
            >>> import flambeau as fb
            >>> lib = fb.library.Library("doc_overloads", "DEF")
            >>> lib.define("f(Tensor x) -> Tensor")
            'f'
            >>> lib.define("f.out(Tensor x, *, Tensor(a!) out) -> Tensor(a!)")
            'f'
            >>> fb.ops.doc_overloads.f.overloads()
            ['default', 'out']
            >>> lib._destroy()
        """
        return list(self._overloads)

    def __repr__(self) -> str:
        return f"{self._namespace}.{self._opname}"


class _OpNamespace(types.ModuleType):
    """``flambeau.ops.<ns>``: the operators of one namespace as attributes."""

    def __getattr__(self, name: str) -> OpOverloadPacket:
        if name.startswith("__"):
            raise AttributeError(name)
        ns = self.__name__.rpartition(".")[2]
        if ns == "aten" and (packet := _aten.lookup(name)) is not None:
            setattr(self, name, packet)  # found once: later lookups skip __getattr__
            return packet
        if ns == "aten":
            raise AttributeError(f"[flambeau.ops] flambeau has no built-in operator 'aten::{name}'")
        if _C._library_pending_count():  # a library loaded otherwise than by load_library (ctypes.CDLL)
            from ._cpp import register_pending

            register_pending()
            if name in self.__dict__:
                return self.__dict__[name]
        have = sorted(q.partition("::")[2] for q in _REGISTRY if q.partition("::")[0] == ns)
        raise AttributeError(
            f"[flambeau.ops] there is no operator '{ns}::{name}' (the namespace '{ns}' has: "
            f"{', '.join(have) or 'nothing yet'}); define it with flambeau.library.custom_op or Library.define"
        )


class _Ops(types.ModuleType):
    """``flambeau.ops``: ``flambeau.ops.<ns>.<name>`` is the operator ``ns::name``.

    Example:
        >>> import flambeau as fb
        >>> @fb.library.custom_op("doc_ops::twice", mutates_args=())
        ... def twice(x: fb.Tensor) -> fb.Tensor:
        ...     return x * 2
        >>> fb.ops.doc_ops.twice(fb.ones(2)).tolist()
        [2.0, 2.0]
    """

    def __getattr__(self, ns: str) -> _OpNamespace:
        if ns.startswith("__"):
            raise AttributeError(ns)
        return _namespace(ns)

    def load_library(self, path: Any) -> None:
        """Loads a shared library whose ``FLAMBEAU_LIBRARY`` blocks define operators (``torch.ops.load_library``).

        See :func:`flambeau.library._cpp.load_library`.

        Example::

            >>> import flambeau as fb
            >>> fb.ops.load_library("build/libmy_ops.so")  # doctest: +SKIP
        """
        from ._cpp import load_library

        load_library(path)


ops = _Ops("flambeau.ops", _Ops.__doc__)


def _namespace(ns: str) -> _OpNamespace:
    space = ops.__dict__.get(ns)
    if space is None:
        space = _OpNamespace(f"flambeau.ops.{ns}", f"The operators defined in the namespace '{ns}'.")
        setattr(ops, ns, space)
    return space


def register_operator(overload: OpOverload) -> None:
    packet = _REGISTRY.get(overload._qualname)
    if packet is None:
        packet = _REGISTRY[overload._qualname] = OpOverloadPacket(overload._namespace, overload._opname)
        setattr(_namespace(overload._namespace), overload._opname, packet)
    packet._add(overload)


def unregister_operator(overload: OpOverload) -> None:
    packet = _REGISTRY.get(overload._qualname)
    if packet is None or packet._overloads.get(overload._overloadname) is not overload:
        return
    packet._remove(overload._overloadname)
    if not packet._overloads:
        del _REGISTRY[overload._qualname]
        _namespace(overload._namespace).__dict__.pop(overload._opname, None)


def lookup(qualname: str, caller: str) -> OpOverload:
    """The operator ``ns::name`` or ``ns::name.overload`` (its default overload), or a clear error."""
    if not isinstance(qualname, str) or "::" not in qualname:
        raise ValueError(f"[{caller}] expected an operator name 'namespace::name', got {qualname!r}")
    name, _, overload = qualname.partition(".")
    packet = _REGISTRY.get(name)
    if packet is None:
        raise ValueError(f"[{caller}] there is no operator '{name}'; define it first with custom_op or Library.define")
    op = packet._overloads.get(overload or "default") or (
        next(iter(packet._overloads.values())) if not overload and len(packet._overloads) == 1 else None
    )
    if op is None:
        raise ValueError(f"[{caller}] the operator '{name}' has no overload '{overload or 'default'}'")
    return op
