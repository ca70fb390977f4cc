"""The elementwise fusion pass: runs of elementwise ops of a captured graph become one generated C++ kernel each.

Note [Elementwise fusion]
:func:`fuse` walks a captured graph (Note [Captured graph]) in order and collects *runs*: consecutive nodes
that are elementwise ops it can generate (``add sub mul div neg exp log tanh sigmoid relu gelu silu abs
sqrt rsqrt reciprocal square pow``-by-a-number ``maximum minimum where clamp clamp_min clamp_max`` and the comparisons
``gt lt ge le eq ne``, with Python numbers as operands) whose results, at capture, are contiguous CPU
tensors of one shape, float32 or float64 (one dtype per run; a comparison's bool result belongs to the
run of its operands' dtype, and is a ``where`` condition or a 0/1 factor in it).
Each tensor an op reads from outside the run must have that dtype (a ``where`` condition: bool), be
contiguous, and have the output's shape, one element, the last dimension's size (a bias: ``x @ W + b``)
or the output's shape with a last dimension of 1 (a row value: ``x - x.mean(-1, keepdim=True)``); anything
else ends the run. A run of two or more ops becomes one node calling
:class:`FusedGroup` (Note [Fused kernel] in ``_cpp_kernel.py``): its values used after it, by a later node
or the function's result, are the kernel's outputs, the others never reach memory. Only consecutive nodes
are grouped, so no op moves past another: an in-place op or a read in between stays where it was.

Under grad mode, a group called with a tensor that requires grad records one autograd node whose backward
is a generated kernel too (Note [Fused backward] in ``_fusion_grad.py``; the derivatives are ``_GRAD``,
below the forward's table); which inputs require grad is read on each call (a parameter's
``requires_grad`` may change after the capture; the guards do not see it). A constant (a parameter, a
buffer) read by a group is checked for its captured shape, dtype and contiguity on each call, since
``.data =`` may replace it.

At capture each group is built (or found in the cache) and run once on the recorded inputs against its
eager ops (and, where an input requires grad, its backward against theirs), unless a record of an earlier
process's check stands for it (Note [Fused agreement records]); a build failure (no compiler)
or a disagreement leaves the group's ops unfused, with a warning once per process.
``fb.compiler.config.fusion = False`` turns the pass off; ``fb.compiler.explain`` lists the fused groups.
"""

from __future__ import annotations

import ctypes
import math
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

import flambeau_autograd as ag
import flambeau_core as fc
from flambeau_autograd._C import _current_dual_level
from flambeau_core._C import _set_grad_enabled

from . import _checked, _cpp_kernel
from ._fusion_grad import Backward, FusedElementwise, Plan, Step
from ._graph import Graph, Node, Ref, same_kind
from ._replay import Program

Tensor = fc.Tensor

_CTYPE = {fc.float32: "float", fc.float64: "double"}
_UNARY = {
    "neg": "-{0}",
    "exp": "fb_exp({0})",
    "log": "fb_log({0})",
    "tanh": "fb_tanh({0})",
    "sigmoid": "fb_sigmoid({0})",
    "relu": "fb_relu({0})",
    "silu": "fb_silu({0})",
    "abs": "fb_fabs({0})",
    "sqrt": "fb_sqrt({0})",
    "rsqrt": "T(1) / fb_sqrt({0})",
    "reciprocal": "T(1) / {0}",
    "square": "{0} * {0}",
}
_BINARY = {
    "mul": "{0} * {1}",
    "div": "{0} / {1}",
    "maximum": "fb_maximum({0}, {1})",
    "minimum": "fb_minimum({0}, {1})",
}
_COMPARE = {"gt": ">", "lt": "<", "ge": ">=", "le": "<=", "eq": "==", "ne": "!="}
# Note [Fused backward] (``_fusion_grad.py``): per op, the gradient reaching each operand from the result's
# gradient {g}, written over the operands {0} {1} {2} and the result {y} (recomputed in the backward kernel);
# None where an operand has none (a condition, a number). The formulas and tie rules are eager's
# (packages/autograd/derivatives.yaml, PyTorch's): maximum/minimum split a tie's gradient in halves and give
# it whole to both operands where one is NaN, clamp passes it at a bound, relu stops it where the result is
# <= 0, abs gives 0 at 0.
_GRAD: dict[str, list[str | None]] = {
    "neg": ["-{g}"],
    "exp": ["{g} * {y}"],
    "log": ["{g} / {0}"],
    "tanh": ["{g} * (T(1) - {y} * {y})"],
    "sigmoid": ["{g} * ((T(1) - {y}) * {y})"],
    "relu": ["({y} <= T(0) ? T(0) : {g})"],
    "silu": ["fb_silu_grad({g}, {0})"],
    "gelu": ["fb_gelu_grad({g}, {0})"],
    "gelu_tanh": ["fb_gelu_tanh_grad({g}, {0})"],
    "abs": ["{g} * fb_sign({0})"],
    "sqrt": ["{g} / (T(2) * {y})"],
    "rsqrt": ["{g} * {y} * {y} * {y} * T(-0.5)"],
    "reciprocal": ["-{g} * ({y} * {y})"],
    "square": ["{g} * (T(2) * {0})"],
    "mul": ["{g} * {1}", "{g} * {0}"],
    "div": ["{g} / {1}", "-{g} * ({0} / ({1} * {1}))"],
    "maximum": ["fb_extremum_grad({g}, {0} == {1}, !({0} < {1}))", "fb_extremum_grad({g}, {0} == {1}, !({1} < {0}))"],
    "minimum": ["fb_extremum_grad({g}, {0} == {1}, !({0} > {1}))", "fb_extremum_grad({g}, {0} == {1}, !({1} > {0}))"],
    "add": ["{g}", "{g}"],
    "add_alpha": ["{g}", "{g} * {2}", None],
    "sub": ["{g}", "-{g}"],
    "sub_alpha": ["{g}", "-{g} * {2}", None],
    "clamp": ["({0} >= {1} && {0} <= {2} ? {g} : T(0))", None, None],
    "clamp_min": ["({0} >= {1} ? {g} : T(0))", None],
    "clamp_max": ["({0} <= {1} ? {g} : T(0))", None],
    "where": [None, "({0} ? {g} : T(0))", "({0} ? T(0) : {g})"],
    "compare": [None, None],
}


def _pow_grad(e: float) -> list[str | None]:
    """d/dx x**e = e * x**(e - 1) (0 for e = 0, as eager), by the forward's table where e - 1 is in it."""
    if e == 0.0:
        return ["T(0)"]
    power = _POW.get(e - 1.0, f"fb_pow({{0}}, T({e - 1.0!r}))")
    return [f"{{g}} * (T({e!r}) * ({power}))"]


_TRANSCENDENTAL = {"exp", "log", "tanh", "sigmoid", "silu", "gelu", "pow"}
_POW = {2.0: "{0} * {0}", 3.0: "{0} * {0} * {0}", 0.5: "fb_sqrt({0})", 1.0: "{0}", -1.0: "T(1) / {0}",
        -0.5: "T(1) / fb_sqrt({0})", 0.0: "T(1)"}  # fmt: skip
_warned = False


def _number(x: Any) -> bool:
    return type(x) in (int, float)


@dataclass
class _Op:
    """A parsed node: a C++ expression template over ``operands`` (each a :class:`Ref` or a Python number)."""

    template: str
    operands: list[Any]
    condition: int | None = None  # the operand index that is a bool condition (where)
    compare: bool = False  # a comparison: a bool result from operands of the run's dtype
    grads: list[str | None] | None = None  # per operand, its gradient (Note [Fused backward]); None: by name


def _parse(node: Node) -> _Op | None:
    """The expression of an elementwise node this pass generates, with its gradients, or ``None``."""
    op = _parse_forward(node)
    if op is not None and op.grads is None:
        op.grads = _GRAD["compare" if op.compare else node.name]
    return op


def _parse_forward(node: Node) -> _Op | None:
    name, args, kw = node.name, node.args, node.kwargs
    if name in _UNARY:
        return _Op(_UNARY[name], [args[0]]) if len(args) == 1 and not kw else None
    if name == "gelu":
        approximate = args[1] if len(args) > 1 else kw.get("approximate", "none")
        if len(args) > 2 or set(kw) - {"approximate"} or approximate not in ("none", "tanh"):
            return None
        tanh = approximate == "tanh"
        return _Op(
            "fb_gelu_tanh({0})" if tanh else "fb_gelu({0})", [args[0]], grads=_GRAD["gelu_tanh" if tanh else "gelu"]
        )
    if name in _BINARY:
        if len(args) != 2 or (kw and kw != {"rounding_mode": None}):
            return None
        return _Op(_BINARY[name], list(args))
    if name in _COMPARE:
        if len(args) != 2 or kw:
            return None
        return _Op(f"({{0}} {_COMPARE[name]} {{1}})", list(args), compare=True)
    if name in ("add", "sub"):
        alpha = args[2] if len(args) > 2 else kw.get("alpha", 1)
        if len(args) not in (2, 3) or set(kw) - {"alpha"} or not _number(alpha):
            return None
        sign = "+" if name == "add" else "-"
        if alpha == 1:
            return _Op(f"{{0}} {sign} {{1}}", list(args[:2]))
        return _Op(f"{{0}} {sign} {{2}} * {{1}}", [args[0], args[1], alpha], grads=_GRAD[f"{name}_alpha"])
    if name == "pow":
        if len(args) != 2 or kw or not isinstance(args[0], Ref) or not _number(args[1]):
            return None
        e = float(args[1])
        return _Op(_POW.get(e, f"fb_pow({{0}}, T({e!r}))"), [args[0]], grads=_pow_grad(e))
    if name in ("clamp", "clamp_min", "clamp_max"):
        return _parse_clamp(name, args, kw)
    if name == "where":
        if len(args) != 3 or kw:
            return None
        cond, a, b = (args[0], args[1], args[2]) if node.target is fc.where else (args[1], args[0], args[2])
        return _Op("({0} ? {1} : {2})", [cond, a, b], condition=0)
    return None


def _parse_clamp(name: str, args: tuple[Any, ...], kw: dict[str, Any]) -> _Op | None:
    if name == "clamp":
        names = ("min", "max")
        if len(args) > 3 or set(kw) - set(names):
            return None
        bounds = dict(zip(names, args[1:], strict=False)) | kw
        lo, hi = bounds.get("min"), bounds.get("max")
    else:
        if len(args) != 2 or kw:
            return None
        lo, hi = (args[1], None) if name == "clamp_min" else (None, args[1])
    if any(b is not None and not _number(b) for b in (lo, hi)) or (lo is None and hi is None):
        return None
    if lo is not None and hi is not None:
        return _Op("fb_clamp({0}, {1}, {2})", [args[0], lo, hi], grads=_GRAD["clamp"])
    kind = "clamp_min" if hi is None else "clamp_max"
    return _Op(f"fb_{kind}({{0}}, {{1}})", [args[0], lo if hi is None else hi], grads=_GRAD[kind])


# --------------------------------------------------------------------------- groups
@dataclass
class _Input:
    ref: Ref
    kind: str  # "full", "bias" (one value per last-dim index), "row" (one per row) or "scalar"
    dtype: Any  # the group's dtype, or bool for a where condition


class _Group:
    """A run of parsed nodes being collected: one shape, dtype and grad mode."""

    def __init__(self, shape: tuple[int, ...], dtype: Any, grad: bool) -> None:
        self.shape, self.dtype, self.grad = shape, dtype, grad
        self.nodes: list[int] = []
        self.ops: list[_Op] = []
        self.values: set[int] = set()  # value indices the run produces
        self.bools: set[int] = set()  # those that are comparisons' bool results


def _shape_class(t: Tensor, shape: tuple[int, ...]) -> str | None:
    """How a tensor an op reads broadcasts to the run's shape, else None: full, scalar (one element), bias
    (``(C,)`` along the last dimension) or row (``(N, 1)``: a keepdim reduction over the last dimension)."""
    s = tuple(t.shape)
    if s == shape:
        return "full"
    if len(s) > len(shape):
        return None
    if t.numel() == 1:
        return "scalar"
    padded = (1,) * (len(shape) - len(s)) + s
    if padded[:-1] == (1,) * (len(shape) - 1) and padded[-1] == shape[-1]:
        return "bias"
    if padded[-1] == 1 and padded[:-1] == shape[:-1]:
        return "row"
    return None


def _operand_ok(t: Any, group: _Group, condition: bool) -> bool:
    if not isinstance(t, Tensor) or not t.is_cpu or not t.is_contiguous():
        return False
    dtype_ok = t.dtype == fc.bool if condition else t.dtype == group.dtype
    return dtype_ok and _shape_class(t, group.shape) is not None


def _result_ok(t: Any, compare: bool) -> bool:
    return (
        isinstance(t, Tensor)
        and t.is_cpu
        and (t.dtype == fc.bool if compare else t.dtype in _CTYPE)
        and t.is_contiguous()
        and t.numel() > 0
    )


class _Collector:
    """Splits the graph's nodes into runs (Note [Elementwise fusion])."""

    def __init__(self, graph: Graph, tensor_of: Callable[[Ref], Tensor]) -> None:
        self.graph, self.tensor_of = graph, tensor_of
        self.groups: list[_Group] = []

    def run(self) -> list[_Group]:
        current: _Group | None = None
        for index, node in enumerate(self.graph.nodes):
            op = _parse(node) if node.results == [()] else None
            if op is None:
                current = self._close(current)
                continue
            result = self.tensor_of(Ref("value", node.first_value))
            dtype = self._compared_dtype(op, current) if op.compare else getattr(result, "dtype", None)
            if not _result_ok(result, op.compare) or dtype not in _CTYPE:
                current = self._close(current)
                continue
            key = (tuple(result.shape), dtype, node.grad_enabled)
            if current is None or key != (current.shape, current.dtype, current.grad):
                self._close(current)
                current = _Group(*key)
            if not self._operands_ok(op, current):  # an input that no group could read: the run ends here
                current = self._close(current)
                continue
            current.nodes.append(index)
            current.ops.append(op)
            current.values.add(node.first_value)
            if op.compare:
                current.bools.add(node.first_value)
        self._close(current)
        return self.groups

    def _compared_dtype(self, op: _Op, group: _Group | None) -> Any:
        """A comparison's operand dtype: the run's dtype it would join (its result is bool)."""
        for a in op.operands:
            if isinstance(a, Ref):
                if group is not None and a.kind == "value" and a.index in group.values:
                    return group.dtype if a.index not in group.bools else None
                return self.tensor_of(a).dtype
        return None

    def _operands_ok(self, op: _Op, group: _Group) -> bool:
        if not any(isinstance(a, Ref) for a in op.operands):
            return False
        for k, a in enumerate(op.operands):
            if isinstance(a, Ref):
                if a.kind == "value" and a.index in group.values:
                    continue
                if not _operand_ok(self.tensor_of(a), group, k == op.condition):
                    return False
            elif not _number(a):
                return False
        return True

    def _close(self, group: _Group | None) -> None:
        if group is not None and len(group.nodes) >= 2:
            self.groups.append(group)
        return None


# --------------------------------------------------------------------------- code generation
class FusedGroup:
    """One fused group: its kernel, and ``__call__`` on the group's external tensors (Note [Fused kernel]).

    ``ops`` names the fused ops in order; ``eager`` runs them as separate ops (the grad fallback).
    """

    def __init__(
        self,
        ops: list[str],
        inputs: list[_Input],
        out_values: list[int],
        out_dtypes: list[Any],
        body: str,
        signature: str,
        argtypes: list[Any],
        numbers: list[float],
        shape: tuple[int, ...],
        dtype: Any,
        grad: bool,
        eager: Callable[..., Any],
        consts: dict[int, Tensor],
    ) -> None:
        self.ops, self.inputs, self.out_values, self.out_dtypes = ops, inputs, out_values, out_dtypes
        self.shape, self.dtype, self.grad, self.eager = shape, dtype, grad, eager
        self.text, self.name = _cpp_kernel.source(body, signature, _CTYPE[dtype])
        self.argtypes, self.numbers, self.consts = argtypes, numbers, consts
        self.call: Callable[..., Any] = eager
        self.raw: Callable[..., Any] = eager
        self.plan: Plan | None = None  # set by the code generation (Note [Fused backward])
        self.backwards: dict[tuple[bool, ...], Backward | bool] = {}
        self.consts_array: Any = None

    def build(self) -> None:
        """Builds (or finds) the kernel and makes ``call`` run it; ``RuntimeError`` if it cannot be built.

        ``call`` checks the constants (else the eager ops run); under grad mode, a call with a tensor that
        requires grad goes through :class:`FusedElementwise` (Note [Fused backward]); ``raw`` is the kernel's
        call alone.
        """
        fn = _cpp_kernel.kernel(self.text, self.name, self.argtypes)
        n = math.prod(self.shape)
        inner = self.shape[-1] if any(i.kind in ("bias", "row") for i in self.inputs) else max(n, 1)
        env: dict[str, Any] = {"kern": fn, "eager": self.eager, "empty": fc.empty, "empty_like": fc.empty_like,
                               "backwards": self.backwards, "backward_for": self.backward_for,
                               "apply": FusedElementwise.apply, "dual_level": _current_dual_level}  # fmt: skip
        params = [f"a{k}" for k in range(len(self.inputs))]
        args = ", ".join(params)
        # Inside a forward-mode AD level (fb.autograd.forward_ad) the eager ops carry the tangents.
        checks = ["if dual_level() >= 0:", f"    return eager({args})"]
        for k, t in self.consts.items():
            env[f"shape{k}"], env[f"dtype{k}"] = t.shape, t.dtype
            checks.append(f"if a{k}.shape != shape{k} or a{k}.dtype != dtype{k} or not a{k}.is_contiguous():")
            checks.append(f"    return eager({args})")
        if self.grad:  # Note [Fused backward]: a tensor that requires grad gets the group's autograd node
            requires = ", ".join(f"{p}.requires_grad" for p in params)
            checks.append(f"if {' or '.join(f'{p}.requires_grad' for p in params)}:")
            checks.append(f"    bw = backwards.get(({requires},))")
            checks.append("    if bw is None:")
            checks.append(f"        bw = backward_for(({requires},))")
            checks.append(f"    return eager({args}) if bw is False else apply(bw, {args})")
        like = next((k for k, i in enumerate(self.inputs) if i.kind == "full" and i.dtype == self.dtype), None)
        env["shape"] = self.shape
        lines = []
        outs = [f"o{k}" for k in range(len(self.out_values))]
        for o, dtype in zip(outs, self.out_dtypes, strict=True):
            env[f"{o}_dtype"] = dtype
            fast = like is not None and dtype == self.dtype
            lines.append(f"{o} = empty_like(a{like})" if fast else f"{o} = empty(shape, dtype={o}_dtype)")
        ptrs = [f"{p}.data_ptr()" for p in params] + [f"{o}.data_ptr()" for o in outs]
        consts = (ctypes.c_double * (2 + len(self.numbers)))(n, inner, *self.numbers)
        env["consts"] = self.consts_array = consts  # kept alive by the function's globals
        lines.append(f"kern({', '.join([*ptrs, str(ctypes.addressof(consts))])})")
        lines.append(f"return {outs[0] if len(outs) == 1 else '(' + ', '.join(outs) + ',)'}")
        src = f"def fused({args}):\n" + "".join(f"    {line}\n" for line in checks + lines)
        src += f"def raw({args}):\n" + "".join(f"    {line}\n" for line in lines)
        exec(compile(src, "<fb.compile fused group>", "exec"), env)  # noqa: S102 (generated from the graph)
        self.call, self.raw = env["fused"], env["raw"]

    def backward_for(self, mask: tuple[bool, ...]) -> Backward | bool:
        """The built backward for the inputs ``mask`` says require grad; False (the eager ops run) if it fails."""
        bw = self.backwards.get(mask)
        if bw is None:
            try:
                bw = Backward(self, mask)
                bw.build()
            except Exception as e:  # a failed build, or a gap of the generator: the eager ops run, never wrong
                _warn(f"[compile] a fused backward kernel could not be built, the eager ops run instead: {e}")
                bw = False
            self.backwards[mask] = bw
        return bw

    def __call__(self, *tensors: Tensor) -> Any:
        return self.call(*tensors)

    def __repr__(self) -> str:
        return f"FusedGroup({', '.join(self.ops)}; {len(self.inputs)} inputs, {len(self.out_values)} outputs)"


def _codegen(
    graph: Graph, group: _Group, used_after: set[int], tensor_of: Callable[[Ref], Tensor]
) -> tuple[FusedGroup, list[Ref]]:
    """The :class:`FusedGroup` of a run and the external tensors it reads, in order."""
    inputs: list[_Input] = []
    where: dict[Ref, int] = {}
    numbers: list[float] = []
    local: dict[int, str] = {}
    hoisted: list[str] = []
    lines: list[str] = []
    out_values: list[int] = []
    out_bool: list[bool] = []  # per output: a comparison's bool

    scalars: dict[int, str] = {}  # the hoisted load of each one-element input
    steps: list[Step] = []

    def operand(a: Any, condition: bool) -> str:
        if not isinstance(a, Ref):
            numbers.append(float(a))
            hoisted.append(f"  const T s{len(numbers) - 1} = static_cast<T>(c[{len(numbers) + 1}]);")
            return f"s{len(numbers) - 1}"
        if a.kind == "value" and a.index in local:
            return local[a.index]
        k = where.get(a)
        if k is None:
            k = where[a] = len(inputs)
            t = tensor_of(a)
            kind = _shape_class(t, group.shape) or "full"  # checked by the collector
            inputs.append(_Input(a, kind, fc.bool if condition else group.dtype))
            if kind == "scalar":
                scalars[k] = f"  const {'bool' if condition else 'T'} x{k} = a{k}[0];"
                hoisted.append(scalars[k])
        kind = inputs[k].kind
        return f"x{k}" if kind == "scalar" else f"a{k}[{ {'bias': 'j', 'row': 'r', 'full': 'i'}[kind] }]"

    names = []
    for index, op in zip(group.nodes, group.ops, strict=True):
        node = graph.nodes[index]
        names.append(node.name)
        args = [operand(a, k == op.condition) for k, a in enumerate(op.operands)]
        var = f"t{len(local)}"
        lines.append(f"const {'bool' if op.compare else 'T'} {var} = {op.template.format(*args)};")
        local[node.first_value] = var
        output = None
        if node.first_value in used_after:
            out_values.append(node.first_value)
            out_bool.append(op.compare)
            output = len(out_values) - 1
            lines.append(f"o{output}[i] = {var};")
        steps.append(Step(var, lines[-1 if output is None else -2], args, op.grads or [], op.compare, output))
    ctype = "T"
    sig = [f"const {'bool' if i.dtype == fc.bool else ctype}* __restrict a{k}" for k, i in enumerate(inputs)]
    sig += [f"{'bool' if b else ctype}* __restrict o{k}" for k, b in enumerate(out_bool)]
    # The sizes and the numbers in one array (c[0] = n, c[1] = inner, then the numbers): one argument
    # for ctypes to convert instead of one each, which is most of a call's cost.
    sig.append("const double* __restrict c")
    argtypes = [ctypes.c_void_p] * (len(inputs) + len(out_values) + 1)
    heavy = any(name in _TRANSCENDENTAL for name in names)
    rows = any(i.kind in ("bias", "row") for i in inputs)
    body = _cpp_kernel.loop_body(lines, hoisted, heavy, rows)
    refs = [i.ref for i in inputs]
    consts = {k: tensor_of(r) for k, r in enumerate(refs) if r.kind == "const"}
    eager = _eager_program(graph, group, refs, out_values)
    out_dtypes = [fc.bool if b else group.dtype for b in out_bool]
    fused = FusedGroup(names, inputs, out_values, out_dtypes, body, ", ".join(sig), argtypes, numbers,
                       group.shape, group.dtype, group.grad, eager, consts)  # fmt: skip
    number_lines = [line for line in hoisted if line not in scalars.values()]
    fused.plan = Plan(steps, number_lines, scalars, [tuple(tensor_of(r).shape) for r in refs], heavy, rows)
    return fused, refs


def _remap(obj: Any, mapping: Callable[[Ref], Any]) -> Any:
    if isinstance(obj, Ref):
        return mapping(obj)
    if type(obj) is list:
        return [_remap(x, mapping) for x in obj]
    if type(obj) is tuple:
        return tuple(_remap(x, mapping) for x in obj)
    if isinstance(obj, tuple):
        return same_kind(obj, [_remap(x, mapping) for x in obj])
    if type(obj) is dict:
        return {k: _remap(v, mapping) for k, v in obj.items()}
    return obj


def _eager_program(graph: Graph, group: _Group, refs: list[Ref], out_values: list[int]) -> Callable[..., Any]:
    """The group's ops as a replay of their own, on the group's external tensors (the grad fallback)."""
    sub = Graph(num_inputs=len(refs))
    position = {r: Ref("input", k) for k, r in enumerate(refs)}
    for index in group.nodes:
        node = graph.nodes[index]
        position[Ref("value", node.first_value)] = Ref("value", sub.num_values)
        args = _remap(node.args, position.__getitem__)
        kwargs = _remap(node.kwargs, position.__getitem__)
        sub.nodes.append(Node(node.name, node.target, args, kwargs, node.grad_enabled, sub.num_values, [()]))
        sub.num_values += 1
    outs = [position[Ref("value", v)] for v in out_values]
    sub.output = outs[0] if len(outs) == 1 else tuple(outs)
    return Program(sub, group.grad).run


# --------------------------------------------------------------------------- the pass
@dataclass
class Fusion:
    """The graph to run (fused groups as single nodes) and the groups, for ``explain``.

    ``epilogues`` are the epilogue pass's rewrites (Note [Epilogue pass] in ``_epilogue.py``), run first.
    """

    graph: Graph
    groups: list[FusedGroup]
    epilogues: list[Any] = field(default_factory=list)


def _used_after(graph: Graph, group: _Group) -> set[int]:
    last = group.nodes[-1]
    used: set[int] = set()

    def see(r: Ref) -> Ref:
        if r.kind == "value" and r.index in group.values:
            used.add(r.index)
        return r

    for node in graph.nodes[last + 1 :]:
        _remap((node.args, node.kwargs), see)
    _remap(graph.output, see)
    return used


def _agrees(group: FusedGroup, tensors: list[Tensor]) -> bool:
    """Runs the kernel and the eager ops once on the recorded inputs: the same values, NaN where NaN."""
    grad = fc.is_grad_enabled()
    _set_grad_enabled(False)
    try:
        mine, theirs = group.call(*tensors), group.eager(*tensors)
    finally:
        _set_grad_enabled(grad)
    if isinstance(mine, Tensor):
        mine, theirs = (mine,), (theirs,)
    tol = 1e-5 if group.dtype == fc.float32 else 1e-12
    return all(_close(a, b, tol) for a, b in zip(mine, theirs, strict=True))


def _close(mine: Any, theirs: Any, tol: float) -> bool:
    if mine is None or theirs is None:
        return mine is None and theirs is None
    if mine.dtype == fc.bool:
        return bool(fc.equal(mine, theirs))
    close = (mine - theirs).abs() <= tol + tol * 10 * theirs.abs()
    return bool((close | (mine == theirs) | (mine.isnan() & theirs.isnan())).all())


def _grads_agree(group: FusedGroup, tensors: list[Tensor]) -> bool:
    """Note [Fused backward]: the group's node and the eager ops give the same gradients on the recorded inputs."""
    mask = [t.requires_grad for t in tensors]
    results = []
    for run in (group.call, group.eager):
        xs = [t.detach().requires_grad_(True) if m else t.detach() for t, m in zip(tensors, mask, strict=True)]
        grad = fc.is_grad_enabled()
        _set_grad_enabled(True)
        try:
            outs = run(*xs)
        finally:
            _set_grad_enabled(grad)
        outs = (outs,) if isinstance(outs, Tensor) else tuple(outs)
        pairs = [o for o in outs if o.requires_grad]
        grads = []
        for o in pairs:  # a gradient of varied values: a wrong formula cannot hide behind ones
            ramp = (fc.arange(o.numel(), dtype=o.dtype) % 7 - 3) * 0.25
            grads.append(ramp.reshape(o.shape))
        wrt = [x for x, m in zip(xs, mask, strict=True) if m]
        got = ag.grad(pairs, wrt, grads, allow_unused=True) if pairs else [None] * len(wrt)
        results.append((len(pairs), got))
    (n_mine, mine), (n_theirs, theirs) = results
    tol = 1e-4 if group.dtype == fc.float32 else 1e-10
    return n_mine == n_theirs and all(_close(a, b, tol) for a, b in zip(mine, theirs, strict=True))


# Note [Fused agreement records]
# At capture each fused run is checked against its eager ops (``_agrees``) and, under grad, its backward
# against theirs (``_grads_agree``): on the benchmark ResNet-8 a third of a warm compile whose graph check a
# record of an earlier process already stands for (Note [Checked captures] in ``_checked.py``). As for the
# batch norm relu node (Note [Batch norm relu agreement records] in ``_bn_relu.py``), a passed check is
# recorded under a fingerprint of what its verdict depends on besides the values: the environment of the
# graph records (any rebuild or edit of flambeau's files voids it), the kernel (its name is the hash of its
# text, which the backward's text derives from with the mask of inputs that require grad), the inputs'
# shapes, strides and dtypes, and the ops' Python numbers; a later capture with the same fingerprint skips
# the check. What a record cannot vouch for is the values (the check ran on the earlier process's);
# ``config.reuse_checks`` off checks every time. A failed check records nothing.
def _agreement_digest(fg: FusedGroup, tensors: list[Tensor], mask: tuple[bool, ...] | None) -> str:
    inputs = [(tuple(t.shape), tuple(t.stride()), str(t.dtype)) for t in tensors]
    return _checked.agreement_digest("fused run agrees", fg.name, mask, inputs, fg.numbers)


def _warn(message: str) -> None:
    global _warned
    if not _warned:
        _warned = True
        warnings.warn(message, stacklevel=4)


def fuse(graph: Graph, inputs: list[Tensor], values: list[Tensor]) -> Fusion | None:
    """Note [Elementwise fusion]: the graph with its elementwise runs fused, or ``None`` when none is.

    ``values`` are the tensors the capture recorded, one per :class:`Ref` ``("value", i)``.
    """

    def tensor_of(r: Ref) -> Tensor:
        return (
            inputs[r.index] if r.kind == "input" else graph.constants[r.index] if r.kind == "const" else values[r.index]
        )

    fused: dict[int, tuple[FusedGroup, list[Ref]]] = {}  # the run's last node -> its group
    members: set[int] = set()
    runs = []
    for group in _Collector(graph, tensor_of).run():
        used = _used_after(graph, group)
        if used:
            runs.append((group, *_codegen(graph, group, used, tensor_of)))
    _prebuild([(fg, [tensor_of(r) for r in refs]) for _, fg, refs in runs])
    for group, fg, refs in runs:
        try:
            fg.build()
        except RuntimeError as e:
            _warn(f"[compile] a fused kernel could not be built, the eager ops run instead: {e}")
            continue
        tensors = [tensor_of(r) for r in refs]
        mask = tuple(t.requires_grad for t in tensors) if fg.grad and any(t.requires_grad for t in tensors) else None
        if mask is not None and fg.backward_for(mask) is False:
            continue
        digest = _agreement_digest(fg, tensors, mask)  # Note [Fused agreement records]
        if not _checked.agreed_before(digest):
            if not _agrees(fg, tensors):
                ops = ", ".join(fg.ops)
                _warn(f"[compile] the fused kernel of {ops} disagrees with the eager ops; they run instead")
                continue
            if mask is not None and not _grads_agree(fg, tensors):
                _warn(
                    f"[compile] the fused backward of {', '.join(fg.ops)} disagrees with the eager ops' gradients; "
                    "they run instead"
                )
                continue
            _checked.record_agreement(digest)
        fused[group.nodes[-1]] = (fg, refs)
        members.update(group.nodes)
    if not fused:
        return None
    return Fusion(_rewrite(graph, fused, members), [fg for fg, _ in fused.values()])


def _prebuild(runs: list[tuple[FusedGroup, list[Tensor]]]) -> None:
    """Starts the builds of every kernel the runs need at once (forward, and backward under grad), which
    the checks below then find built: a cold capture costs about one compile, not one per kernel."""
    kernels = []
    for fg, tensors in runs:
        kernels.append((fg.text, fg.name, fg.argtypes))
        if fg.grad and any(t.requires_grad for t in tensors):
            try:
                bw = Backward(fg, tuple(t.requires_grad for t in tensors))
            except Exception:  # noqa: S112 (a gap of the generator: backward_for reports it)
                continue
            if bw.stored:
                kernels.append((bw.text, bw.name, bw.argtypes))
    _cpp_kernel.prebuild(kernels)


def _rewrite(graph: Graph, fused: dict[int, tuple[FusedGroup, list[Ref]]], members: set[int]) -> Graph:
    """The graph with each group's nodes replaced by one node calling it, values renumbered."""
    out = Graph(num_inputs=graph.num_inputs, constants=graph.constants)
    renumber: dict[int, int] = {}

    def new_ref(r: Ref) -> Ref:
        return Ref("value", renumber[r.index]) if r.kind == "value" else r

    for index, node in enumerate(graph.nodes):
        if index in fused:
            fg, refs = fused[index]
            first = out.num_values
            for k, v in enumerate(fg.out_values):
                renumber[v] = first + k
            results = [()] if len(fg.out_values) == 1 else [(k,) for k in range(len(fg.out_values))]
            args = tuple(new_ref(r) for r in refs)
            out.nodes.append(Node("fused_elementwise", fg.call, args, {}, fg.grad, first, results))
            out.num_values += len(results)
        elif index not in members:
            args, kwargs = _remap(node.args, new_ref), _remap(node.kwargs, new_ref)
            for k in range(len(node.results)):
                renumber[node.first_value + k] = out.num_values + k
            out.nodes.append(Node(node.name, node.target, args, kwargs, node.grad_enabled, out.num_values,
                                  node.results))  # fmt: skip
            out.num_values += len(node.results)
    out.output = _remap(graph.output, new_ref)
    return out
