"""``vmap``: a function of one sample made a function of a batch, run on batched kernels.

Note [vmap on __torch_function__]
Inside ``vmap(f)``, each batched input reaches ``f`` as a ``BatchedTensor``: a physical tensor whose dim 0
is the batch, shown to ``f`` as one sample (``x.shape`` is the sample's shape). It is not a flambeau
Tensor, so a flambeau function given one finds no signature that accepts it and hands the call to
``BatchedTensor.__torch_function__`` (Note [__torch_function__] in core's arg_parser.h; the protocol costs
ordinary calls nothing). There the op's batching rule runs the op once on the physical tensors, whose
batch dim is in front:

- an op of core's table has its rule declared in its row (``batch:``, Note [Batching rules in the table]
  in core's ``codegen/model.py``), or implied by its shape rule there; the table exports them by Python
  name as ``_C._op_batch_rules``, and the rules are functions registered by name in ``_RULE_FUNCTIONS``
  below. Most ops share a few generic rules: ``elementwise`` (``same``, ``broadcast``) pads the samples to
  one rank behind the batch dim and runs as is; ``reduction`` (``reduce``, ``reduce_dim``, ``scalar``)
  reduces the sample's dims; ``all_batched`` (``index_select``, ``cat``) batches every tensor;
  ``pointwise_loss`` computes a ``loss`` per element and reduces it per sample; ``views``, ``matmul``,
  ``images`` (pooling) and ``conv`` are here too. In every rule a non-negative ``dim`` argument moves one
  place right (a negative one counts from the end, which the batch dim does not change; a dim given to a
  0-d sample runs it as a 1-element one). The family rules (norms, losses, matrix functions,
  gather/scatter/index ops, stacking and the rest) are in ``_batching_rules.py``.
  ``integration_tests/test_vmap_opinfo.py`` checks them against the loop on PyTorch's OpInfo samples;
- Python-level names that are not ops of the table (``__getitem__``, ``to``, ``float``, ``detach``, the
  functions written in Python that reach ``__torch_function__`` as one call) cannot be declared there:
  their rules are ``_PYTHON_LEVEL_RULES`` below. An in-place ``name_`` without a rule of its own batches
  as ``name`` does, its result written into the batched ``self`` (an unbatched ``self`` refuses a batched
  argument, as torch's); a rule marked ``writes_in_place`` writes itself, a shared ``self`` too
  (``embedding_renorm_`` on a shared table, as the loop would);
- an op with no rule runs once per sample and the results are stacked, with a warning naming it once.
  Rules keep that loop where the samples' results would differ in shape (split points or repeats that
  differ per sample, a batched mask selecting) and for an argument the op refuses (an index out of range
  would reach another sample's elements in one call), so that the op raises its own error.

Nested ``vmap`` wraps a ``BatchedTensor`` in another: a rule unwraps its own level only, and the op on
the inner level's tensors goes through ``__torch_function__`` again. Autograd records the physical ops,
so ``grad`` inside ``vmap`` differentiates the physical result: per-sample gradients (Note [grad inside
vmap] in ``_transforms.py``).
"""

from __future__ import annotations

import functools
import itertools
import re
import threading
import types
import warnings
from collections.abc import Callable
from typing import Any

import flambeau_core
from flambeau_autograd.function import Function
from flambeau_autograd.grad_mode import is_grad_enabled
from flambeau_core import FlambeauError, Tensor

from flambeau.func._pytree import tree_flatten, tree_unflatten

__all__ = ["vmap", "BatchedTensor"]

_state = threading.local()
_level_ids = itertools.count(1)


def _levels() -> list[tuple[int, int]]:
    """This thread's stack of active vmap levels, each (level, batch size), outermost first."""
    if not hasattr(_state, "levels"):
        _state.levels = []
    return _state.levels


def active_levels() -> list[tuple[int, int]]:
    """The active vmap levels and their batch sizes, outermost first."""
    return list(_levels())


def current_level() -> int | None:
    """The innermost active vmap level, or None outside vmap."""
    levels = _levels()
    return levels[-1][0] if levels else None


def has_batched(args: tuple, kwargs: dict, level: int) -> bool:
    """Whether a BatchedTensor of ``level`` is among the (pytrees of) arguments."""
    leaves = tree_flatten((args, kwargs))[0]
    return any(isinstance(x, BatchedTensor) and x._level == level for x in leaves)


def batch_size(args: tuple, kwargs: dict, level: int) -> int:
    """The batch size of ``level``, read from its BatchedTensors among the arguments."""
    leaves = tree_flatten((args, kwargs))[0]
    return next(x._value.shape[0] for x in leaves if isinstance(x, BatchedTensor) and x._level == level)


class BatchedTensor:
    """One sample's view of a batch inside ``vmap`` (Note [vmap on __torch_function__]).

    ``_value`` holds the batch, its dim 0 the batch dim; ``_level`` is the vmap call it belongs to."""

    __slots__ = ("_value", "_level")

    def __init__(self, value: Any, level: int) -> None:
        self._value = value
        self._level = level

    # ---- what a sample looks like
    @property
    def shape(self) -> flambeau_core.Size:
        return flambeau_core.Size(tuple(self._value.shape)[1:])

    def size(self, dim: int | None = None) -> Any:
        shape = self.shape
        return shape if dim is None else shape[dim]

    def dim(self) -> int:
        return self._value.dim() - 1

    ndim = property(dim)

    def element_size(self) -> int:
        return self._value.element_size()

    def numel(self) -> int:
        n = 1
        for s in self.shape:
            n *= s
        return n

    def __len__(self) -> int:
        if self.dim() == 0:
            raise TypeError("len() of a 0-d tensor")
        return self.shape[0]

    def __iter__(self) -> Any:
        return iter(self.unbind(0))

    @property
    def dtype(self) -> Any:
        return self._value.dtype

    @property
    def device(self) -> Any:
        return self._value.device

    @property
    def requires_grad(self) -> bool:
        return self._value.requires_grad

    @property
    def is_cuda(self) -> bool:
        return self._value.is_cuda

    def is_floating_point(self) -> bool:
        return self._value.is_floating_point()

    def is_complex(self) -> bool:
        return self._value.is_complex()

    @property
    def T(self) -> BatchedTensor:  # noqa: N802 (PyTorch's name)
        return self.permute(*reversed(range(self.dim())))

    @property
    def mT(self) -> BatchedTensor:  # noqa: N802
        return self.transpose(-2, -1)

    def __repr__(self) -> str:
        return f"BatchedTensor(lvl={self._level}, bdim=0, value=\n{self._value!r})"

    def _data_dependent(self, what: str) -> Any:
        raise FlambeauError(
            f"[func.vmap] It looks like you're calling {what} on a Tensor inside vmap. vmap cannot return one "
            "Python value per sample; rewrite it with tensor operations."
        )

    def item(self) -> Any:
        return self._data_dependent(".item()")

    def tolist(self) -> Any:
        return self._data_dependent(".tolist()")

    def numpy(self) -> Any:
        return self._data_dependent(".numpy()")

    def __bool__(self) -> bool:
        return self._data_dependent("bool()")

    def __float__(self) -> float:
        return self._data_dependent("float()")

    def __int__(self) -> int:
        return self._data_dependent("int()")

    # ---- everything else is an op on the batch
    @classmethod
    def __torch_function__(cls, func: Callable, types: tuple, args: tuple = (), kwargs: dict | None = None) -> Any:
        return _dispatch(func, tuple(args), dict(kwargs or {}))

    def __getattr__(self, name: str) -> Any:
        method = getattr(Tensor, name, None)
        # (pybind11 asks a foreign object for its conduit: a BatchedTensor has none, and the call is refused)
        if method is None or name.startswith(("__", "_pybind11")):
            raise AttributeError(f"'BatchedTensor' object has no attribute '{name}'")
        if isinstance(method, property):  # x.H, x.real: the getter on the batch
            return _dispatch(method.fget, (self,), {})
        return functools.partial(_dispatch_method, name, self)

    def __getitem__(self, index: Any) -> BatchedTensor:
        return _dispatch_method("__getitem__", self, index)

    def __setitem__(self, index: Any, value: Any) -> None:
        _dispatch_method("__setitem__", self, index, value)


def _dispatch_method(name: str, self: BatchedTensor, *args: Any, **kwargs: Any) -> Any:
    return _dispatch(getattr(Tensor, name), (self, *args), kwargs)


# Python's operators on a BatchedTensor are the Tensor's, as ops on the batch.
_BINARY_OPERATORS = {
    "add": "add", "sub": "sub", "mul": "mul", "truediv": "div", "floordiv": "floor_divide", "mod": "remainder",
    "pow": "pow", "matmul": "matmul", "and": "bitwise_and", "or": "bitwise_or", "xor": "bitwise_xor",
    "lshift": "bitwise_left_shift", "rshift": "bitwise_right_shift",
}  # fmt: skip
_COMPARISONS = {"eq": "eq", "ne": "ne", "lt": "lt", "le": "le", "gt": "gt", "ge": "ge"}


def _install_operators() -> None:
    def forward(op: str) -> Callable:
        return lambda self, other: _dispatch(getattr(flambeau_core, op), (self, other), {})

    def reflected(op: str) -> Callable:
        return lambda self, other: _dispatch(getattr(flambeau_core, op), (other, self), {})

    def inplace(op: str) -> Callable:
        return lambda self, other: _dispatch(getattr(Tensor, op + "_"), (self, other), {})

    for dunder, op in _BINARY_OPERATORS.items():
        setattr(BatchedTensor, f"__{dunder}__", forward(op))
        setattr(BatchedTensor, f"__r{dunder}__", reflected(op))
        if hasattr(Tensor, op + "_"):
            setattr(BatchedTensor, f"__i{dunder}__", inplace(op))
    for dunder, op in _COMPARISONS.items():
        setattr(BatchedTensor, f"__{dunder}__", forward(op))
    for dunder, op in {"neg": "neg", "pos": "positive", "abs": "abs", "invert": "bitwise_not"}.items():
        setattr(
            BatchedTensor, f"__{dunder}__", lambda self, _op=op: _dispatch(getattr(flambeau_core, _op), (self,), {})
        )
    BatchedTensor.__hash__ = object.__hash__  # type: ignore[method-assign] (== is elementwise, as a Tensor's)


_install_operators()


# ---- the dispatch


def _is_tensorlike(x: Any) -> bool:
    return isinstance(x, (Tensor, BatchedTensor))


def _op_name(func: Callable) -> str:
    name = getattr(func, "__name__", "")
    if name.startswith("__") and name.endswith("__"):
        core = name[2:-2]
        if core in _BINARY_OPERATORS:
            return _BINARY_OPERATORS[core]
        return core
    return name


def _batched_level(args: tuple, kwargs: dict) -> int | None:
    """The innermost vmap level among the arguments (and the items of list arguments)."""
    level = None
    for a in itertools.chain(args, kwargs.values()):
        items = a if isinstance(a, (list, tuple)) else (a,)
        for x in items:
            if isinstance(x, BatchedTensor) and (level is None or x._level > level):
                level = x._level
    return level


class _Call:
    """One op call at one vmap level: the arguments with that level's BatchedTensors unwrapped."""

    def __init__(self, func: Callable, args: tuple, kwargs: dict, level: int) -> None:
        self.func, self.name, self.level = func, _op_name(func), level
        self.batch_size = -1
        self.args = [self._unwrap(a) for a in args]
        self.kwargs = {k: self._unwrap(v) for k, v in kwargs.items()}
        self.batched: set[int] = set()  # id() of the unwrapped values that carry the batch dim

    def _unwrap(self, a: Any) -> Any:
        if isinstance(a, (list, tuple)) and any(isinstance(x, BatchedTensor) for x in a):
            return type(a)(self._unwrap(x) for x in a) if not hasattr(a, "_fields") else a
        if isinstance(a, BatchedTensor) and a._level == self.level:
            self.batch_size = a._value.shape[0]
            return _Batched(a._value)
        return a

    # values: a batched argument is a _Batched marker around its physical value
    def logical_dim(self, x: Any) -> int:
        return x.value.dim() - 1 if isinstance(x, _Batched) else x.dim()

    def call(self, args: list, kwargs: dict) -> Any:
        return _apply(self.func, [_strip(a) for a in args], {k: _strip(v) for k, v in kwargs.items()})

    def wrap(self, result: Any) -> Any:
        if _is_tensorlike(result):
            return BatchedTensor(result, self.level)
        if isinstance(result, tuple) and hasattr(result, "_fields"):
            return type(result)(*(self.wrap(r) for r in result))
        if isinstance(result, (tuple, list)):
            return type(result)(self.wrap(r) for r in result)
        return result


class _Batched:
    """A physical value whose dim 0 is the batch (a marker inside rules)."""

    __slots__ = ("value",)

    def __init__(self, value: Any) -> None:
        self.value = value


def _strip(a: Any) -> Any:
    if isinstance(a, _Batched):
        return a.value
    if isinstance(a, (list, tuple)) and not hasattr(a, "_fields") and any(isinstance(x, _Batched) for x in a):
        return type(a)(_strip(x) for x in a)
    return a


def _apply(func: Callable, args: list, kwargs: dict) -> Any:
    """``func(*args, **kwargs)``; a Tensor method whose ``self`` is an outer level's BatchedTensor goes to
    that level's rule (a method descriptor does not consult ``__torch_function__`` for ``self``)."""
    if args and isinstance(args[0], BatchedTensor) and not isinstance(func, types.FunctionType):
        return _dispatch(func, tuple(args), kwargs)
    return func(*args, **kwargs)


def _dispatch(func: Callable, args: tuple, kwargs: dict) -> Any:
    level = _batched_level(args, kwargs)
    if level is None or isinstance(func, types.FunctionType):
        # No batched argument (an operator's other side), or a function written in Python: it runs on the
        # BatchedTensors, its ops each batched.
        return func(*args, **kwargs)
    call = _Call(func, args, kwargs, level)
    name = call.name
    if name in _RANDOM_OPS:
        _check_randomness(name)
        if getattr(_state, "randomness", "error") == "same":
            return _same_randomness(call)
    inplace = name.endswith("_") and not name.endswith("__")
    # an in-place op the table does not declare (generated by `inplace: true`) batches as its functional form
    rule = _rule_of(name) or (_rule_of(name[:-1]) if inplace else None)
    if rule is None:
        return _loop(call)
    if inplace and not getattr(rule, "writes_in_place", False):  # (a rule that writes a shared self itself)
        return _inplace(call, rule)
    return rule(call)


# ---- binding arguments to parameter names (the generated docstrings' signature lines)

_DIM_PARAMS = frozenset(
    {"dim", "dims", "dim0", "dim1", "dim2", "start_dim", "end_dim", "axis", "source", "destination"}
)
# Parameters that take a tensor: a Python int cannot be one (max(x, 1) is max(dim), not max(other)).
_TENSOR_PARAMS = frozenset({"self", "input", "other", "tensor", "mat2", "vec", "mask", "weight", "index", "src"})
_SIGNATURE = re.compile(r"^(?:\d+\.\s*)?(\w+)\((.*)\)\s*->")


_Overload = tuple[tuple[str, ...], frozenset[str], tuple[tuple[str, int], ...]]


def _signatures(func: Callable) -> tuple[_Overload, ...]:
    """Each overload's (positional parameter names with ``self`` first for a method, keyword-only names,
    the non-negative int defaults of its dim parameters), from the signature lines that open the docstring
    (the table's, or pybind11's with types)."""
    method = getattr(func, "__objclass__", None) is not None or getattr(Tensor, _op_name(func), None) is func
    return _parse_signatures(getattr(func, "__doc__", None) or "", method)


def _split_top_level(text: str) -> list[str]:
    parts, depth, cur = [], 0, ""
    for ch in text:
        depth += ch in "[(" and 1 or (ch in "])" and -1 or 0)
        if ch == "," and depth == 0:
            parts.append(cur)
            cur = ""
        else:
            cur += ch
    return [*parts, cur]


@functools.cache
def _parse_signatures(doc: str, method: bool) -> tuple[_Overload, ...]:
    out = []
    for line in doc.splitlines():
        m = _SIGNATURE.match(line.strip())
        if not m:
            if out:
                break
            continue
        positional, keyword, star, defaults = [], [], False, []
        for part in _split_top_level(m.group(2)):
            p = part.split("=")[0].split(":")[0].strip()
            if p in ("*", "*args"):
                star = star or p == "*"
                continue
            if p:
                (keyword if star else positional).append(p)
            default = part.split("=")[1].strip() if "=" in part else ""
            if p in _DIM_PARAMS and default.isdigit():
                defaults.append((p, int(default)))
        if method and (not positional or positional[0] != "self"):
            positional.insert(0, "self")
        out.append((tuple(positional), frozenset(keyword), tuple(defaults)))
    return tuple(out)


def _fits(params: tuple, keyword: frozenset, args: list, kwargs: dict, strict: bool) -> bool:
    if len(args) > len(params) or any(k not in params and k not in keyword for k in kwargs):
        return False
    for name, a in zip(params, args, strict=False):
        tensor = _is_tensorlike(a) or isinstance(a, _Batched)
        # a dim is an int, not a tensor nor a bool (index_copy's source is a tensor, movedim's a dim)
        if name in _DIM_PARAMS and (tensor and name != "source" or isinstance(a, bool)):
            return False
        if strict and not tensor and isinstance(a, int) and name in _TENSOR_PARAMS:
            return False
    return True


def _overload(call: _Call, args: list, kwargs: dict) -> _Overload:
    """The first overload the call fits; an empty one when the function documents no signature."""
    sigs = _signatures(call.func)
    for strict in (True, False):
        for sig in sigs:
            if _fits(sig[0], sig[1], args, kwargs, strict):
                return sig
    return (), frozenset(), ()


def _param_names(call: _Call, args: list, kwargs: dict) -> tuple[str, ...]:
    """The parameter name of each positional argument, for the overload the call fits."""
    return _overload(call, args, kwargs)[0]


def _dim_slots(call: _Call, args: list, kwargs: dict) -> list[tuple[Any, Any]]:
    """The (container, key) of each argument that names a dim of the sample. A dim left to a non-negative
    default (``cat``'s ``dim=0``) is written into ``kwargs`` first, so that it moves past the batch dim too."""
    names, _, defaults = _overload(call, args, kwargs)
    for name, value in defaults:
        if name not in kwargs and name not in names[: len(args)]:
            kwargs[name] = value
    slots: list[tuple[Any, Any]] = [(args, i) for i in range(min(len(args), len(names))) if names[i] in _DIM_PARAMS]
    slots += [(kwargs, k) for k in kwargs if k in _DIM_PARAMS]
    return [(c, k) for c, k in slots if not (_is_tensorlike(c[k]) or isinstance(c[k], _Batched))]


def _shift(d: Any) -> Any:
    """A dim of the sample as a dim of the batch: a non-negative one moves right by one."""
    if d is None or isinstance(d, str):
        return d
    if isinstance(d, (list, tuple)):
        return type(d)(_shift(x) for x in d)
    return d + 1 if d >= 0 else d


def _shift_dims(call: _Call, args: list, kwargs: dict) -> None:
    for container, key in _dim_slots(call, args, kwargs):
        container[key] = _shift(container[key])


# The last dim as a default (_dim_slots writes the non-negative defaults): given explicitly, it tells a
# reduction that the op does not reduce every dim (mode), and a 0-d sample that a dim names it.
_DEFAULT_DIMS: dict[str, dict[str, int]] = {
    **dict.fromkeys(["mode", "sort", "argsort", "topk", "kthvalue", "glu", "diff"], {"dim": -1}),
}


def _give_default_dims(call: _Call, args: list, kwargs: dict) -> None:
    defaults = _DEFAULT_DIMS.get(call.name)
    if not defaults:
        return
    names = _param_names(call, args, kwargs)
    if not names:
        return
    given = set(names[: len(args)]) | set(kwargs)
    for param, d in defaults.items():
        if param not in given:
            kwargs[param] = d


def _scalar_samples_lifted(call: _Call, rule: Callable) -> Any:
    """An op given a dim on 0-d samples (where dims 0 and -1 both name the sample itself): run on 1-element
    samples (_scalars_lifted). None when the call is not one."""
    batched = [a for a in call.args if isinstance(a, _Batched)]
    if not batched or any(call.logical_dim(a) for a in batched):
        return None
    if not any(c[k] is not None for c, k in _dim_slots(call, list(call.args), dict(call.kwargs))):
        return None
    return _scalars_lifted(call, rule)


def _scalars_lifted(call: _Call, rule: Callable, keep: tuple = ()) -> Any:
    """``rule`` on 0-d samples given a dim: every 0-d tensor argument, batched or not (but those ``keep``
    names, by position or keyword), made a 1-element sample, and that dim taken out of each result."""

    def lift(key: Any, a: Any) -> Any:
        if key not in keep and (_is_tensorlike(a) or isinstance(a, _Batched)) and call.logical_dim(a) == 0:
            return _Batched(_expand(a, call).value.unsqueeze(1))
        return a

    def drop(r: Any) -> Any:
        if isinstance(r, BatchedTensor) and r._level == call.level and r._value.dim() >= 2:
            return BatchedTensor(r._value.squeeze(1), call.level)
        if isinstance(r, tuple):
            parts = [drop(x) for x in r]
            return type(r)(*parts) if hasattr(r, "_fields") else tuple(parts)
        return r

    args = [lift(i, a) for i, a in enumerate(call.args)]
    return drop(rule(_with_args(call, args, {k: lift(k, v) for k, v in call.kwargs.items()})))


# ---- generic rules


def _tensor_slots(args: list, kwargs: dict) -> list[tuple[Any, Any]]:
    slots = [(args, i) for i, a in enumerate(args) if _is_tensorlike(a) or isinstance(a, _Batched)]
    return slots + [(kwargs, k) for k, v in kwargs.items() if _is_tensorlike(v) or isinstance(v, _Batched)]


def _pad(x: _Batched, rank: int, call: _Call) -> _Batched:
    """A batched value with unit dims after the batch dim, so its sample has `rank` dims."""
    v = x.value
    for _ in range(rank - call.logical_dim(x)):
        v = v.unsqueeze(1)
    return _Batched(v)


def _expand(x: Any, call: _Call) -> _Batched:
    """An unbatched tensor as a batch of copies of itself (a view)."""
    if isinstance(x, _Batched):
        return x
    return _Batched(x.unsqueeze(0).expand(call.batch_size, *x.shape))


def _elementwise(call: _Call) -> Any:
    """Broadcasting ops: samples padded to one rank behind the batch dim (unbatched ones broadcast)."""
    args, kwargs = list(call.args), dict(call.kwargs)
    _give_default_dims(call, args, kwargs)
    call = _with_args(call, args, kwargs)
    lifted = _scalar_samples_lifted(call, _elementwise)
    if lifted is not None:
        return lifted
    slots = _tensor_slots(args, kwargs)
    rank = max(call.logical_dim(c[k]) for c, k in slots)
    for c, k in slots:
        if isinstance(c[k], _Batched):
            c[k] = _pad(c[k], rank, call)
    _shift_dims(call, args, kwargs)
    return call.wrap(call.call(args, kwargs))


def _all_batched(call: _Call) -> Any:
    """Ops that index along a dim: every tensor argument batched (unbatched ones expanded, as views)."""
    args, kwargs = list(call.args), dict(call.kwargs)
    for c, k in _tensor_slots(args, kwargs):
        c[k] = _expand(c[k], call)
    for i, a in enumerate(args):
        if isinstance(a, (list, tuple)) and any(_is_tensorlike(x) or isinstance(x, _Batched) for x in a):
            if call.name in ("cat", "concat", "concatenate"):
                a = _without_legacy_empty(a, call)
            args[i] = type(a)(_expand(x, call) for x in a)
    _shift_dims(call, args, kwargs)
    return call.wrap(call.call(args, kwargs))


def _without_legacy_empty(tensors: Any, call: _Call) -> list:
    """cat skips a sample of shape (0,) among tensors of another rank; batched, it would have rank 2."""
    shapes = [tuple(t.value.shape[1:]) if isinstance(t, _Batched) else tuple(t.shape) for t in tensors]
    kept = [t for t, s in zip(tensors, shapes, strict=True) if s != (0,)]
    return kept if kept else list(tensors)


def _reduction(call: _Call) -> Any:
    """A reduction over the sample's dims: an absent (or None) dim means all of them."""
    args, kwargs = list(call.args), dict(call.kwargs)
    if any(_is_tensorlike(a) or isinstance(a, _Batched) for a in [*args[1:2], kwargs.get("other")]):
        return _elementwise(call)  # max(input, other), min(input, other): elementwise
    x = args[0]
    if not isinstance(x, _Batched):
        return _loop(call)
    if call.name in ("std", "var", "std_mean", "var_mean") and len(args) == 2 and isinstance(args[1], bool):
        args, kwargs["correction"] = [x], int(args[1])  # std(x, unbiased): the overload with dims
    if call.name == "norm" and (args[1] if len(args) > 1 else kwargs.get("p")) == "nuc":
        # the nuclear norm of a matrix sample is over its two dims, not over every dim flattened into one
        if (args[2] if len(args) > 2 else kwargs.get("dim")) is None:
            if call.logical_dim(x) != 2:
                return _loop(call)  # the op's own error, for the sample's shape
            args, kwargs["dim"] = args[:2], (0, 1)
    _give_default_dims(call, args, kwargs)
    call = _with_args(call, args, kwargs)
    lifted = _scalar_samples_lifted(call, _reduction)
    if lifted is not None:
        return lifted
    args, kwargs = list(call.args), dict(call.kwargs)
    slots = _dim_slots(call, args, kwargs)
    if any(c[k] is not None and c[k] != () and c[k] != [] for c, k in slots):  # dim=() is every dim
        _shift_dims(call, args, kwargs)
        return call.wrap(call.call(args, kwargs))
    # Every dim of the sample: flattened to one dim and reduced along it.
    names = _param_names(call, args, kwargs)
    keepdim = kwargs.get("keepdim", False)
    if "keepdim" in names and names.index("keepdim") < len(args):
        keepdim = args[names.index("keepdim")]
    rank = call.logical_dim(x)
    args[0] = _Batched(x.value.reshape(call.batch_size, -1))
    for c, k in slots:
        c[k] = 1
    if not slots:
        kwargs["dim"] = 1
    result = call.call(args, kwargs)
    if (
        call.name in ("max", "min", "median", "nanmedian")
        and isinstance(result, tuple)
        and not any(c is kwargs and k == "dim" for c, k in slots)
    ):
        result = result[0]
    if keepdim:
        result = _reshape_all(result, call.batch_size, rank)
    return call.wrap(result)


def _with_args(call: _Call, args: list, kwargs: dict) -> _Call:
    """The same call with other (unwrapped) arguments."""
    other = _Call.__new__(_Call)
    other.__dict__.update(call.__dict__)
    other.args, other.kwargs = list(args), dict(kwargs)
    return other


def _reshape_all(result: Any, batch: int, rank: int) -> Any:
    if isinstance(result, tuple):
        out = [r.reshape(batch, *([1] * rank)) for r in result]
        return type(result)(*out) if hasattr(result, "_fields") else tuple(out)
    return result.reshape(batch, *([1] * rank))


def _inplace(call: _Call, rule: Callable) -> Any:
    self = call.args[0] if call.args else None
    if not isinstance(self, _Batched):
        raise FlambeauError(
            f"[func.vmap] vmap: {call.name}(self, *extra_args) is not possible because there exists a Tensor "
            "`other` in extra_args that has more elements than `self`. This happened due to `other` being vmapped "
            "over but `self` not being vmapped over in a vmap. Please try to use out-of-place operators instead."
        )
    result = rule(call)
    written = isinstance(result, BatchedTensor) and result._value.data_ptr() == self.value.data_ptr()
    if isinstance(result, BatchedTensor) and not written:
        # A rule that composes other ops (masked_fill as where) made a new tensor: it goes into self.
        self.value.copy_(result._value)
    return BatchedTensor(self.value, call.level)


_warned: set[str] = set()


def _loop(call: _Call) -> Any:
    """No batching rule: the op runs once per sample and the results are stacked (warned once per op)."""
    if call.name not in _warned:
        warnings.warn(
            f"flambeau.func.vmap: there is no batching rule for '{call.name}'; it runs once per sample in a loop "
            "over the batch, which is slow.",
            UserWarning,
            stacklevel=4,
        )
        _warned.add(call.name)  # after: a warning filtered into an error (jacrev's probe) is not spent

    def sample(a: Any, i: int) -> Any:
        if isinstance(a, _Batched):
            return a.value[i]
        if isinstance(a, (list, tuple)) and not hasattr(a, "_fields"):
            return type(a)(sample(x, i) for x in a)
        return a

    inplace = call.name.endswith("_") and not call.name.endswith("__") and isinstance(call.args[0], _Batched)
    results = []
    for i in range(call.batch_size):
        args = [sample(a, i) for a in call.args]
        target = args[0]
        if inplace and not target.is_contiguous():  # an op that writes only contiguous memory
            args[0] = target.contiguous()
        results.append(_apply(call.func, args, {k: sample(v, i) for k, v in call.kwargs.items()}))
        if inplace and args[0] is not target:
            target.copy_(args[0])
    if inplace:
        return BatchedTensor(call.args[0].value, call.level)
    return call.wrap(_stack_results(results, call.name))


def _stack_results(results: list, name: str) -> Any:
    first = results[0]
    if _is_tensorlike(first):
        return flambeau_core.stack(results)
    if isinstance(first, tuple) and hasattr(first, "_fields"):
        return type(first)(*(_stack_results([r[i] for r in results], name) for i in range(len(first))))
    if isinstance(first, (tuple, list)):
        return type(first)(_stack_results([r[i] for r in results], name) for i in range(len(first)))
    raise FlambeauError(
        f"[func.vmap] '{name}' returns a Python {type(first).__name__}, which can differ per sample; vmap can only "
        "batch functions whose results are tensors."
    )


# ---- random ops (randomness=)

_RANDOM_OPS = frozenset({
    "bernoulli", "bernoulli_", "dropout", "native_dropout", "_feature_dropout", "multinomial", "normal", "normal_",
    "uniform_", "random_", "rand_like", "randn_like", "randint_like", "exponential_", "geometric_", "cauchy_",
    "log_normal_", "_sample_dirichlet", "poisson",
})  # fmt: skip


def _check_randomness(name: str) -> None:
    mode = getattr(_state, "randomness", "error")
    if mode == "error":
        raise FlambeauError(
            f"[func.vmap] vmap: called random operation '{name}' while in randomness error mode. Please either use "
            "the 'same' or 'different' randomness flags on vmap or perform the randomness operation out of vmap"
        )


_SAME_FILLS = frozenset({
    "normal_", "uniform_", "random_", "exponential_", "geometric_", "cauchy_", "log_normal_", "bernoulli_",
})  # fmt: skip
_SAME_LIKE = frozenset({"rand_like", "randn_like", "randint_like"})
_SAME_MASKS = frozenset({"dropout", "native_dropout", "_feature_dropout"})


def _same_randomness(call: _Call) -> Any:
    """randomness='same': one draw for one sample's shape, shared by every sample (torch.func.vmap's rule).

    A ``*_like`` draw comes back unbatched; a fill draws one sample and writes it into each; a dropout draws
    one mask. An op whose draw depends on a batched tensor's values (bernoulli(p), multinomial, normal of
    tensors...) cannot share one draw, and raises as torch's vmap does."""
    name, first, rest = call.name, call.args[0] if call.args else None, call.args[1:]
    others = [*rest, *call.kwargs.values()]
    if (
        not isinstance(first, _Batched)
        or any(isinstance(a, _Batched) for a in others)
        or name not in (_SAME_FILLS | _SAME_LIKE | _SAME_MASKS)
    ):
        raise FlambeauError(
            f"[func.vmap] vmap: randomness='same' is not supported for '{name}' with a batched tensor input (as "
            "torch.func.vmap: Vmap does not currently support same randomness with a batched tensor input); use "
            "randomness='different' or draw outside vmap"
        )
    physical = first.value
    sample = physical[0]
    if name in _SAME_LIKE:
        return _apply(call.func, [sample, *rest], call.kwargs)  # unbatched: vmap broadcasts it to every sample
    if name in _SAME_FILLS:
        drawn = sample.clone()
        _apply(call.func, [drawn, *rest], call.kwargs)
        physical.copy_(drawn.expand_as(physical))
        return BatchedTensor(physical, call.level)
    ones = flambeau_core.ones_like(sample)
    scaled = _apply(call.func, [ones, *rest], call.kwargs)  # the scaled mask of one sample
    if isinstance(scaled, tuple):  # native_dropout, _feature_dropout: (output, mask), the mask shared
        return BatchedTensor(physical * scaled[0], call.level), scaled[1]
    if call.kwargs.get("inplace") or (len(rest) >= 3 and rest[2] is True):
        physical.mul_(scaled)
        return BatchedTensor(physical, call.level)
    return BatchedTensor(physical * scaled, call.level)


# ---- rules for ops the table's shape rules do not cover


def _sizes_arg(args: list, kwargs: dict, *names: str) -> tuple:
    """The sizes of view/reshape/expand/permute: one sequence or several ints."""
    for n in names:
        if n in kwargs:
            return tuple(kwargs.pop(n))
    rest = args[1:]
    return tuple(rest[0]) if len(rest) == 1 and isinstance(rest[0], (list, tuple)) else tuple(rest)


def _views(call: _Call) -> Any:
    """View and shape ops whose arguments name the sample's dims."""
    args, kwargs = list(call.args), dict(call.kwargs)
    x, name = args[0], call.name
    shaped_as = name in ("expand_as", "view_as", "reshape_as")  # the other's sample shape, batched or not
    if name == "tensor_split" and len(args) > 1 and isinstance(args[1], _Batched):
        # batched split points that every sample shares split the batch alike; else the parts differ in shape
        shared = _batching_rules._same_in_every_sample(args[1])
        if shared is None:
            return _loop(call)
        args[1] = shared
        if not isinstance(x, _Batched):
            return call.call(args, kwargs)
    if (
        not isinstance(x, _Batched)
        or not shaped_as
        and any(isinstance(a, _Batched) for a in [*args[1:], *kwargs.values()])
    ):
        return _loop(call)  # a batched shape argument (tensor_split's indices)
    b, rank = call.batch_size, call.logical_dim(x)
    if rank == 0 and name in ("squeeze", "transpose", "swapaxes", "swapdims", "t"):
        # A 0-d sample's only dims are 0 and -1, and these ops leave it as it is.
        given = [*args[1:], *kwargs.values()]
        flat = [d for g in given for d in (g if isinstance(g, (list, tuple)) else [g]) if g is not None]
        for d in flat:
            if d not in (0, -1):
                raise IndexError(f"[{name}] dimension {d} out of range for a 0-d tensor (expected in [-1, 0])")
        return call.wrap(x.value)
    if shaped_as:
        other = args[1]
        args, name = [x, tuple(other.value.shape[1:] if isinstance(other, _Batched) else other.shape)], name[:-3]
    if name in ("view", "reshape") and (len(args) == 1 or isinstance(args[1], (int, list, tuple))):
        return call.wrap(getattr(x.value, name)(b, *_sizes_arg(args, kwargs, "shape", "size")))
    if name == "permute":
        dims = _sizes_arg(args, kwargs, "dims")
        return call.wrap(x.value.permute(0, *[d % rank + 1 for d in dims]))
    if name in ("expand", "broadcast_to"):
        sizes = _sizes_arg(args, kwargs, "size")
        v = _pad(x, len(sizes), call).value
        return call.wrap(v.expand(b, *(v.shape[i + 1] if s == -1 else s for i, s in enumerate(sizes))))
    if name == "squeeze" and len(args) == 1 and "dim" not in kwargs:
        dims = [i + 1 for i, s in enumerate(tuple(x.value.shape)[1:]) if s == 1]
        return call.wrap(x.value.squeeze(dims) if dims else x.value)
    if name == "flatten":
        if rank == 0:
            return call.wrap(x.value.reshape(b, 1))
        if len(args) == 1 and "start_dim" not in kwargs:
            kwargs["start_dim"] = 0
    _give_default_dims(call, args, kwargs)
    _shift_dims(call, args, kwargs)
    return call.wrap(call.call(args, kwargs))


def _getitem(call: _Call) -> Any:
    """Indexing the samples: the batch dim kept by a leading full slice. Shared tensor indices stay where
    they are when they are adjacent; batched ones, adjacent and after full slices only, pair with the
    batch's own index (which, apart from them, puts their dims first: moved back behind the slices')."""
    x, index = call.args[0], call.args[1]
    if not isinstance(x, _Batched):
        # A shared tensor indexed by a batched integer tensor in its first dims (a table lookup): the
        # batch's indices gather in one go, the batch dim in front as the index's.
        lead = index[0] if isinstance(index, tuple) and index else index
        rest = index[1:] if isinstance(index, tuple) else ()
        plain = all(not (_is_tensorlike(i) or isinstance(i, (_Batched, list))) for i in rest)
        if isinstance(lead, _Batched) and lead.value.dtype != flambeau_core.bool and plain:
            return call.wrap(x[(lead.value, *rest)])
        if not _is_tensorlike(x):
            return _loop(call)
        return _getitem(_with_args(call, [_expand(x, call), index], {}))  # the shared tensor as a batch
    items = index if isinstance(index, tuple) else (index,)
    advanced = [i for i, it in enumerate(items) if _is_tensorlike(it) or isinstance(it, (_Batched, list))]
    adjacent = advanced == list(range(advanced[0], advanced[-1] + 1)) if advanced else True
    batched = [i for i in advanced if isinstance(items[i], _Batched)]
    if not batched and adjacent:
        return call.wrap(x.value[(slice(None), *items)])
    before = advanced[0] if advanced else 0  # the sample's dims the slices ahead of the tensor indices keep
    if (
        not batched
        or not adjacent
        or any(not isinstance(it, slice) for it in items[:before])
        or any(items[i].value.dtype == flambeau_core.bool for i in batched)
    ):
        return _loop(call)  # a batched mask selects a different number of elements per sample
    shapes = [tuple(items[i].value.shape[1:]) if i in batched else tuple(flambeau_core.as_tensor(items[i]).shape)
              for i in advanced]  # fmt: skip
    rank = len(flambeau_core.broadcast_shapes(*shapes))
    own = flambeau_core.arange(call.batch_size, device=x.value.device).reshape(call.batch_size, *(1,) * rank)
    padded = [_pad(it, rank, call).value if isinstance(it, _Batched) else it for it in items]
    out = x.value[(own, *padded)]
    if before:
        out = out.movedim(list(range(1, rank + 1)), list(range(before + 1, before + rank + 1)))
    return call.wrap(out)


def _setitem(call: _Call) -> Any:
    x, index, value = call.args
    if not isinstance(x, _Batched):
        return _inplace(call, _setitem)
    items = index if isinstance(index, tuple) else (index,)
    if any(_is_tensorlike(i) or isinstance(i, (_Batched, list)) for i in items):
        return _setitem_tensor_indices(call, x, items, value)
    target = x.value[(slice(None), *items)]
    if isinstance(value, _Batched):
        value = _pad(value, target.dim() - 1, call).value
    x.value[(slice(None), *items)] = value
    return None


def _setitem_tensor_indices(call: _Call, x: _Batched, items: tuple, value: Any) -> Any:
    """``x[index] = value`` with tensor indices among slices and an Ellipsis: shared indices, adjacent,
    write the same places of every sample behind a leading full slice; batched ones, leading and adjacent,
    pair with the batch's own index (as _getitem reads them). The written region's rank tells how far a
    batched value is padded. Other indices (ints or None beside tensors, a batched mask) loop."""
    advanced = [i for i, it in enumerate(items) if _is_tensorlike(it) or isinstance(it, (_Batched, list))]
    batched = [i for i in advanced if isinstance(items[i], _Batched)]
    if (
        advanced != list(range(advanced[0], advanced[-1] + 1))
        or any(not (i in advanced or isinstance(it, slice) or it is Ellipsis) for i, it in enumerate(items))
        or any(items[i].value.dtype == flambeau_core.bool for i in batched)
        or batched
        and advanced[0] != 0
    ):
        return _loop(call)
    tensors = [items[i].value if i in batched else flambeau_core.as_tensor(items[i]) for i in advanced]
    masks = [t.dim() - (1 if i in batched else 0) for i, t in zip(advanced, tensors, strict=True)
             if t.dtype == flambeau_core.bool]  # fmt: skip
    shapes = [tuple(t.shape[1:]) if i in batched else tuple(t.shape) for i, t in zip(advanced, tensors, strict=True)]
    if masks:  # a shared mask: one dim of its selected places
        if len(advanced) > 1:
            return _loop(call)
        shapes = [(-1,)]
    consumed = sum(masks) if masks else len(advanced)
    rank = call.logical_dim(x) - consumed + len(flambeau_core.broadcast_shapes(*shapes) if not masks else (1,))
    if batched:
        own = flambeau_core.arange(call.batch_size, device=x.value.device)
        wide = len(flambeau_core.broadcast_shapes(*shapes))
        index = (own.reshape(call.batch_size, *(1,) * wide),
                 *(_pad(it, wide, call).value if isinstance(it, _Batched) else it for it in items))  # fmt: skip
    else:
        index = (slice(None), *items)
    if isinstance(value, _Batched):
        value = _pad(value, rank, call).value
    x.value[index] = value
    return None


def _unbind(call: _Call) -> Any:
    args, kwargs = list(call.args), dict(call.kwargs)
    if not isinstance(args[0], _Batched):
        return _loop(call)
    if len(args) == 1 and "dim" not in kwargs:
        kwargs["dim"] = 0
    _shift_dims(call, args, kwargs)
    return call.wrap(call.call(args, kwargs))


def _matmul(call: _Call) -> Any:
    """matmul/mm/mv/dot/bmm on samples: the batch dim stays in front of the matrix dims."""
    a, b = call.args[0], call.args[1]
    ra = call.logical_dim(a) if _is_tensorlike(a) or isinstance(a, _Batched) else 0
    rb = call.logical_dim(b) if _is_tensorlike(b) or isinstance(b, _Batched) else 0
    ab, bb = isinstance(a, _Batched), isinstance(b, _Batched)
    if ra == 0 or rb == 0 or ra > 2 or rb > 2:
        if call.name in ("matmul", "bmm") and ra >= 2 and rb >= 2:
            rank = max(ra, rb)
            av = _pad(a, rank, call).value if ab else a
            bv = _pad(b, rank, call).value if bb else b
            return call.wrap(flambeau_core.matmul(av, bv))
        if call.name == "matmul" and min(ra, rb) == 1 and max(ra, rb) > 2:
            # a vector and a stack of matrices: the vector as a one-row (one-column) matrix, that dim dropped
            if ra == 1:
                row = _Batched(a.value.unsqueeze(1)) if ab else a.unsqueeze(0)
                return BatchedTensor(_matmul(_with_args(call, [row, b], call.kwargs))._value.squeeze(-2), call.level)
            col = _Batched(b.value.unsqueeze(-1)) if bb else b.unsqueeze(-1)
            return BatchedTensor(_matmul(_with_args(call, [a, col], call.kwargs))._value.squeeze(-1), call.level)
        return _loop(call)
    if ab and bb:
        av, bv = a.value, b.value
        if ra == 1 and rb == 1:
            return call.wrap((av * bv).sum(-1))
        if ra == 1:
            a3 = av.unsqueeze(1)
            prod = _SharedRight.apply(a3, bv) if bv.stride(0) == 0 else flambeau_core.matmul(a3, bv)
            return call.wrap(prod.squeeze(1))
        if rb == 1:
            return call.wrap(flambeau_core.matmul(av, bv.unsqueeze(-1)).squeeze(-1))
        if bv.stride(0) == 0:  # a shared matrix on the right (Note [grad inside vmap])
            return call.wrap(_SharedRight.apply(av, bv))
        return call.wrap(flambeau_core.matmul(av, bv))
    if ab:  # [B, (n,) k] @ b
        if rb == 2 and _is_shared(a.value):
            return call.wrap(_SharedOperand.apply(a.value, b, True))
        return call.wrap(flambeau_core.matmul(a.value, b))
    # a @ [B, k, (m)]
    bv = b.value
    if ra == 2 and _is_shared(bv):
        return call.wrap(_SharedOperand.apply(bv, a, False))
    if rb == 1:
        return call.wrap(flambeau_core.matmul(bv, a.mT if ra == 2 else a))
    if ra == 1:
        return call.wrap(flambeau_core.matmul(a, bv))
    return call.wrap(flambeau_core.matmul(a, bv))


def _is_shared(value: Any) -> bool:
    """A batch that is one value expanded (batch stride 0), as grad inside vmap makes of an unbatched input."""
    return isinstance(value, Tensor) and value.shape[0] > 1 and value.stride(0) == 0


class _SharedOperand(Function):
    """``x[b] @ w`` (``batch_on_left``) or ``w @ x[b]`` for an unbatched matrix ``w`` and a batch ``x`` that is
    one value expanded: the product is computed once (its rows are equal) and each sample's gradient of
    ``x`` is one batched product, where the plain rule would multiply every copy (Note [jacrev by vmap])."""

    @staticmethod
    def forward(ctx: Any, batch: Tensor, w: Tensor, batch_on_left: bool) -> Tensor:
        ctx.save_for_backward(batch, w)
        ctx.batch_on_left = batch_on_left
        ctx.set_materialize_grads(False)  # jvp: an operand without a tangent adds no product
        one = batch[0]
        r = flambeau_core.matmul(one, w) if batch_on_left else flambeau_core.matmul(w, one)
        return r.unsqueeze(0).expand(batch.shape[0], *r.shape).contiguous()

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> tuple:
        batch, w = ctx.saved_tensors
        if is_grad_enabled():  # a graph of the backward (hessian): the batched formula keeps each sample's path
            return _shared_operand_backward_batched(batch, w, g, ctx.batch_on_left)
        one = batch[0]
        total = g.sum(0) if ctx.needs_input_grad[1] else None  # w's gradient only: a pass over the batch
        grad_w = None
        if ctx.batch_on_left:  # y = x @ w: dx = g @ w^T, dw = x^T (sum g)
            grad_batch = flambeau_core.matmul(g, w.mT)
            if total is not None:
                grad_w = (
                    one.unsqueeze(-1) * total.unsqueeze(0) if one.dim() == 1 else flambeau_core.matmul(one.mT, total)
                )
        else:  # y = w @ x: dx = w^T g, dw = (sum g) x^T
            grad_batch = flambeau_core.matmul(g, w) if one.dim() == 1 else flambeau_core.matmul(w.mT, g)
            if total is not None:
                grad_w = (
                    total.unsqueeze(-1) * one.unsqueeze(0) if one.dim() == 1 else flambeau_core.matmul(total, one.mT)
                )
        return grad_batch, grad_w, None

    @staticmethod
    def jvp(ctx: Any, t_batch: Tensor, t_w: Tensor, _: Any) -> Tensor:
        """Forward mode (jvp inside vmap): the product rule on the batch, each sample's tangent its own."""
        batch, w = ctx.saved_tensors

        def product(x: Tensor, m: Tensor) -> Tensor:
            if ctx.batch_on_left:
                return flambeau_core.matmul(x, m)
            return flambeau_core.matmul(x, m.mT) if batch.dim() == 2 else flambeau_core.matmul(m, x)

        terms = [product(x, m) for x, m in ((t_batch, w), (batch, t_w)) if x is not None and m is not None]
        return terms[0] if len(terms) == 1 else (terms[0] + terms[1] if terms else None)


def _shared_operand_backward_batched(batch: Tensor, w: Tensor, g: Tensor, batch_on_left: bool) -> tuple:
    """_SharedOperand's gradients without using that the batch's rows are equal (differentiable in them)."""
    vector = batch.dim() == 2  # samples are vectors
    if batch_on_left:
        x = batch.unsqueeze(1) if vector else batch
        gg = g.unsqueeze(1) if vector else g
        return flambeau_core.matmul(g, w.mT), flambeau_core.matmul(x.mT, gg).sum(0), None
    x = batch.unsqueeze(-1) if vector else batch
    gg = g.unsqueeze(-1) if vector else g
    grad_batch = flambeau_core.matmul(g, w) if vector else flambeau_core.matmul(w.mT, g)
    return grad_batch, flambeau_core.matmul(gg, x.mT).sum(0), None


class _SharedRight(Function):
    """``a[b] @ m[b]`` where the batch of matrices ``m`` is one matrix expanded (batch stride 0), as ``grad``
    inside ``vmap`` makes a shared parameter: one GEMM forward and for ``a``'s gradient, and the
    per-sample products only for ``m``'s gradient (which is per sample)."""

    @staticmethod
    def forward(ctx: Any, a: Tensor, m: Tensor) -> Tensor:
        ctx.save_for_backward(a, m)
        ctx.set_materialize_grads(False)  # jvp: an operand without a tangent adds no product
        return flambeau_core.matmul(a, m[0])

    @staticmethod
    def backward(ctx: Any, g: Tensor) -> tuple:
        a, m = ctx.saved_tensors
        # m[0] is every sample's matrix; in a graph of the backward (hessian) m itself keeps their paths apart.
        grad_a = flambeau_core.matmul(g, (m if is_grad_enabled() else m[0]).mT)
        # m is usually a transposed weight: its per-sample gradient made in the weight's own layout
        # (a view back) saves a transposing copy of the largest tensor of the step.
        grad_m = flambeau_core.matmul(g.mT, a).mT if m.stride(-2) == 1 else flambeau_core.matmul(a.mT, g)
        return grad_a, grad_m

    @staticmethod
    def jvp(ctx: Any, t_a: Tensor, t_m: Tensor) -> Tensor:
        """Forward mode (jvp inside vmap): t_a m + a t_m, the matrix's tangent per sample."""
        a, m = ctx.saved_tensors
        terms = [flambeau_core.matmul(t_a, m[0]) if t_a is not None else None]
        terms.append(flambeau_core.matmul(a, t_m) if t_m is not None else None)
        present = [t for t in terms if t is not None]
        return present[0] if len(present) == 1 else (present[0] + present[1] if present else None)


def _linear(call: _Call) -> Any:
    args = list(call.args) + [None] * (3 - len(call.args))
    x, w = args[0], args[1]
    bias = call.kwargs.get("bias", args[2])
    if not isinstance(w, _Batched) and not isinstance(bias, _Batched):
        xv = x.value if isinstance(x, _Batched) else x
        return call.wrap(_apply(call.func, [xv, w, bias], {}))
    # Per-sample weights: x @ w.mT (+ bias), on samples.
    xv = x if isinstance(x, _Batched) else _expand(x, call)
    x3 = xv.value.reshape(call.batch_size, -1, xv.value.shape[-1])
    wv = _expand(w, call).value
    w_t = wv.transpose(1, 2)
    y = _SharedRight.apply(x3, w_t) if w_t.stride(0) == 0 else flambeau_core.matmul(x3, w_t)
    if bias is not None:
        bv = bias.value if isinstance(bias, _Batched) else bias.unsqueeze(0)
        y = y + bv.unsqueeze(1)
    return call.wrap(y.reshape(call.batch_size, *xv.value.shape[1:-1], wv.shape[1]))


def _conv(call: _Call) -> Any:
    """conv1d/conv2d: a batched input is more images; batched weights become groups of one conv."""
    args = list(call.args)
    x, w = args[0], args[1]
    bias = args[2] if len(args) > 2 else call.kwargs.get("bias")
    rest, kwargs = args[3:], {k: v for k, v in call.kwargs.items() if k != "bias"}
    spatial = {"conv1d": 1, "conv2d": 2, "conv3d": 3}.get(call.name)
    if spatial is None or isinstance(bias, _Batched) and not isinstance(w, _Batched):
        return _loop(call)
    b = call.batch_size
    xv = x if isinstance(x, _Batched) else _expand(x, call)
    unbatched_sample = call.logical_dim(xv) == spatial + 1  # one image [C, ...]
    v = xv.value.unsqueeze(1) if unbatched_sample else xv.value  # [B, N, C, ...]
    n = v.shape[1]
    if not isinstance(w, _Batched):
        out = _apply(call.func, [v.reshape(b * n, *v.shape[2:]), w, bias, *rest], kwargs)
        out = out.reshape(b, n, *out.shape[1:])
        return call.wrap(out.squeeze(1) if unbatched_sample else out)
    groups = kwargs.pop("groups", rest.pop(3) if len(rest) > 3 else 1)
    wv = w.value  # [B, O, C/g, ...]
    o = wv.shape[1]
    xg = v.transpose(0, 1).reshape(n, b * v.shape[2], *v.shape[3:])
    wg = wv.reshape(b * o, *wv.shape[2:])
    bg = None
    if bias is not None:
        bg = (bias.value if isinstance(bias, _Batched) else bias.unsqueeze(0).expand(b, o)).reshape(b * o)
    out = _apply(call.func, [xg, wg, bg, *rest[:3]], {"groups": groups * b, **kwargs})  # [N, B*O, ...]
    out = out.reshape(n, b, o, *out.shape[2:]).transpose(0, 1)
    return call.wrap(out.squeeze(1) if unbatched_sample else out)


def _images(call: _Call) -> Any:
    """Pooling on [C, ...] or [N, C, ...] samples: the batch joins the images."""
    x = call.args[0]
    if not isinstance(x, _Batched) or any(isinstance(a, _Batched) for a in [*call.args[1:], *call.kwargs.values()]):
        return _loop(call)
    b, v = call.batch_size, x.value
    spatial = _IMAGE_OPS[call.name]
    many = v.dim() == spatial + 3  # [B, N, C, ...]
    result = call.call([_Batched(v.flatten(0, 1) if many else v), *call.args[1:]], call.kwargs)

    def back(r: Any) -> Any:
        return r.unflatten(0, (b, v.shape[1])) if many and _is_tensorlike(r) else r

    if isinstance(result, tuple):
        parts = [back(r) for r in result]
        return call.wrap(type(result)(*parts) if hasattr(result, "_fields") else tuple(parts))
    return call.wrap(back(result))


def _cross_entropy(call: _Call) -> Any:
    """The fused cross entropy on [C], [N, C] or [N, C, d...] samples: the batch joins the rows (the class
    dim moved last), the loss is computed per row (reduction 'none') and reduced per sample as the op would
    (a weighted mean divides by the weights of the sample's non-ignored targets, a probability target's
    mean by its row count)."""
    names = ("input", "target", "weight", "reduction", "ignore_index", "label_smoothing")
    bound = dict(zip(names, [None, None, None, 1, -100, 0.0], strict=True))
    bound.update(zip(names, call.args, strict=False))
    bound.update(call.kwargs)
    x, t, weight = _expand(bound["input"], call), _expand(bound["target"], call), bound["weight"]
    rank = call.logical_dim(x)
    if isinstance(weight, _Batched) or rank == 0:
        return _loop(call)
    b, xv, tv = call.batch_size, x.value, t.value
    probabilities = tv.is_floating_point()
    if rank >= 3:  # [B, N, C, d...] -> [B, N, d..., C]
        xv = xv.movedim(2, -1)
        tv = tv.movedim(2, -1) if probabilities else tv
    classes = xv.shape[-1]
    row_shape = tuple(xv.shape[1:-1])
    rows = 1
    for n in row_shape:
        rows *= n
    flat_t = tv.reshape(b * rows, classes) if probabilities else tv.reshape(b * rows)
    loss, lse = _apply(
        call.func,
        [xv.reshape(b * rows, classes), flat_t, weight, 0, bound["ignore_index"], bound["label_smoothing"]],
        {},
    )
    loss, lse = loss.reshape(b, rows), lse.reshape(b, *row_shape) if rank >= 2 else lse.reshape(b, 1)
    reduction = bound["reduction"]
    if reduction == 0:
        out = loss.reshape(b, *row_shape)
    elif reduction == 2:
        out = loss.sum(1)
    elif probabilities:
        out = loss.sum(1) / rows
    else:
        counted = (tv.reshape(b, rows) != bound["ignore_index"]).to(loss.dtype)
        if weight is not None:
            safe = tv.reshape(b, rows).clamp(0, classes - 1)
            counted = counted * weight[safe]
        out = loss.sum(1) / counted.sum(1)
    return call.wrap((out, lse))


def _repeat(call: _Call) -> Any:
    x = call.args[0]
    if not isinstance(x, _Batched):
        return _loop(call)
    sizes = _sizes_arg(list(call.args), dict(call.kwargs), "repeats")
    return call.wrap(_pad(x, len(sizes), call).value.repeat(1, *sizes))


# The spatial dims of the images each pooling/image op takes (_images; their rule is the table's `images`).
_IMAGE_OPS = {
    "max_pool2d": 2, "avg_pool2d": 2, "max_pool2d_with_indices": 2, "adaptive_avg_pool2d": 2,
    "adaptive_max_pool2d": 2, "max_pool1d_with_indices": 1, "avg_pool1d": 1, "adaptive_avg_pool1d": 1,
    "adaptive_max_pool1d": 1, "upsample_bilinear2d": 2, "im2col": 2, "pixel_shuffle": 2, "pixel_unshuffle": 2,
    "conv_transpose1d": 1, "conv_transpose2d": 2, "conv_transpose3d": 3, "upsample_nearest2d": 2, "col2im": 1,
}  # fmt: skip


def _copy_to_out(call: _Call) -> Any:
    """``_C._copy_to_out(op, result, out)``, through which Python functions return: without ``out=`` it is
    ``result`` itself; into a given ``out=`` each sample is written by the loop."""
    names = ("op", "result", "out", "exact_dtype")
    bound = dict(zip(names, call.args, strict=False)) | call.kwargs
    if bound.get("out") is None:
        result = bound["result"]
        return BatchedTensor(result.value, call.level) if isinstance(result, _Batched) else result
    return _loop(call)


def _as_strided(call: _Call) -> Any:
    raise FlambeauError(
        f"[func.vmap] {call.name} inside vmap is not supported: it names the sample's strides and storage offset, "
        "which inside vmap are those of the whole batch; use view/reshape/select, which vmap batches"
    )


# The rules by name (Note [Batching rules in the table] in core's codegen/model.py, whose BATCH_RULES lists
# the names an op of the table may declare); the family rules of _batching_rules, built on this module's
# helpers, are imported once those exist.
_RULE_FUNCTIONS: dict[str, Callable] = {
    "elementwise": _elementwise,
    "reduction": _reduction,
    "views": _views,
    "all_batched": _all_batched,
    "matmul": _matmul,
    "linear": _linear,
    "conv": _conv,
    "images": _images,
    "cross_entropy": _cross_entropy,
    "repeat": _repeat,
    "as_strided": _as_strided,
}
from flambeau.func import _batching_rules  # noqa: E402

_RULE_FUNCTIONS.update(_batching_rules.RULE_FUNCTIONS)

# Python-level names that are not ops of core's table, so their rules cannot be declared there: functions
# bound by hand or written in Python that reach __torch_function__ as one call, the indexing dunders, the
# dtype conversions.
_PYTHON_LEVEL_RULES: dict[str, Callable] = {
    **dict.fromkeys(["__getitem__", "getitem"], _getitem),
    **dict.fromkeys(["__setitem__", "setitem"], _setitem),
    "_copy_to_out": _copy_to_out,
    "unbind": _unbind,
    "as_strided_": _as_strided,
    **dict.fromkeys(["detach", "reshape_as", "view_as"], _views),
    "narrow": _batching_rules._narrow,
    "fill_": _batching_rules._fill,
    **dict.fromkeys(["dot", "mv"], _matmul),
    "conv3d": _conv,
    **dict.fromkeys(["conv_transpose3d", "max_pool2d"], _images),
    "t": _batching_rules._matrix_entries,
    **dict.fromkeys(
        "to float double half bfloat16 long int bool byte char short".split(), _batching_rules._layout_free
    ),
    **dict.fromkeys(["selu", "threshold", "type_as", "result_type", "as_tensor"], _elementwise),
    **dict.fromkeys(["zeros_like", "ones_like", "empty_like", "full_like", "rand_like", "randn_like"], _elementwise),
    "multinomial": _batching_rules._batch_in_front,  # core's Python multinomial hands vmap its draw as one op
}


@functools.cache
def _table_rules() -> dict[str, Callable]:
    """The op table's batching rules (``batch:``, or the shape rule's), by Python name."""
    return {name: _RULE_FUNCTIONS[rule] for name, rule in flambeau_core._C._op_batch_rules.items()}


def _rule_of(name: str) -> Callable | None:
    return _table_rules().get(name) or _PYTHON_LEVEL_RULES.get(name)


# ---- vmap


def _check_in_dim(d: Any, x: Any, in_dims: Any) -> None:
    if d is None:
        return
    if not isinstance(d, int) or isinstance(d, bool):
        raise ValueError(
            f"[func.vmap] vmap(f, in_dims={in_dims}, ...): expected in_dims to be int or a (potentially nested) tuple "
            f"matching the structure of inputs, got: {type(d).__name__}."
        )
    if not isinstance(x, (Tensor, BatchedTensor)):
        raise ValueError(
            f"[func.vmap] vmap(f, in_dims={in_dims}, ...): Got in_dim={d} for an input but the input is of type "
            f"{type(x).__name__}. We cannot vmap over non-Tensor arguments, please use None as the respective in_dim"
        )
    if not -x.dim() <= d < max(x.dim(), 1) or x.dim() == 0:
        raise ValueError(
            f"[func.vmap] vmap(f, in_dims={in_dims}, ...): Got in_dim={d} for some input, but that input is a Tensor "
            f"of dimensionality {x.dim()} so expected in_dim to satisfy -{x.dim()} <= in_dim < {x.dim()}."
        )


def _flat_in_dims(in_dims: Any, args: tuple) -> list:
    """One in_dim per flattened input leaf (in_dims a prefix of the structure of args)."""
    if isinstance(in_dims, int) or in_dims is None:
        return [in_dims] * len(tree_flatten(args)[0])
    if not isinstance(in_dims, (tuple, list)) or len(in_dims) != len(args):
        raise ValueError(
            f"[func.vmap] vmap(f, in_dims={in_dims}, ...)(<inputs>): in_dims is not compatible with the structure of "
            f"`inputs`. in_dims has structure {type(in_dims).__name__} of length "
            f"{len(in_dims) if isinstance(in_dims, (tuple, list)) else 'n/a'} but inputs has {len(args)} arguments."
        )
    out = []
    for d, a in zip(in_dims, args, strict=True):
        leaves = tree_flatten(a)[0]
        if isinstance(d, int) or d is None:
            out += [d] * len(leaves)
        else:
            dl, _ = tree_flatten(d)
            if len(dl) != len(leaves):
                raise ValueError(
                    f"[func.vmap] vmap(f, in_dims={in_dims}, ...)(<inputs>): in_dims is not compatible with the "
                    "structure of `inputs`."
                )
            out += dl
    return out


def vmap(
    func: Callable,
    in_dims: Any = 0,
    out_dims: Any = 0,
    randomness: str = "error",
    *,
    chunk_size: int | None = None,
) -> Callable:
    """``func`` mapped over a dim of its inputs, run on batched kernels (PyTorch's ``torch.func.vmap``).

    ``func`` is written for one sample; ``vmap(func)`` takes inputs with an extra batch dim (``in_dims``: an
    int, None for an input that is not batched, or a tuple/pytree per argument) and returns outputs with the
    batch dim at ``out_dims``. Each op inside runs once on the whole batch (Note [vmap on
    __torch_function__]); an op with no batching rule runs in a loop over the samples, with a warning.
    Composes with itself and with ``grad`` (``vmap(grad(f))`` gives per-sample gradients).

    Args:
        func: a function of tensors (pytrees of them) returning tensors.
        in_dims: which dim of each input is the batch (default 0; None: not batched).
        out_dims: where the batch dim goes in each output (default 0).
        randomness: ``'error'`` (a random op inside raises), ``'different'`` (each sample draws its own),
            ``'same'`` (one draw shared by every sample; a draw from batched values, such as ``bernoulli(p)``,
            raises, as torch's). Factory functions (``fb.randn(...)``) take no batched argument, so vmap
            does not see them: they draw once, whatever the mode.
        chunk_size: run the batch this many samples at a time (less memory), None for all at once.

    Example:
        >>> import flambeau as fb
        >>> x, y = fb.tensor([[1.0, 2.0], [3.0, 4.0]]), fb.tensor([[1.0, 1.0], [2.0, 2.0]])
        >>> fb.func.vmap(fb.dot)(x, y).tolist()
        [3.0, 14.0]
        >>> fb.func.vmap(lambda r: r.sum(), in_dims=1)(x).tolist()
        [4.0, 6.0]
    """
    if randomness not in ("error", "different", "same"):
        raise ValueError(
            f"[func.vmap] Only allowed values for randomness are 'error', 'different', or 'same'. Got {randomness}"
        )
    if chunk_size is not None and (not isinstance(chunk_size, int) or chunk_size <= 0):
        raise ValueError(f"[func.vmap] vmap: chunk_size should be None or greater than 0. (got {chunk_size})")
    if not callable(func):
        raise TypeError(f"[func.vmap] vmap(func): func must be callable, got {type(func).__name__}")

    @functools.wraps(func)
    def wrapped(*args: Any, **kwargs: Any) -> Any:
        flat, spec = tree_flatten(args)
        dims = _flat_in_dims(in_dims, args)
        sizes = []
        for d, x in zip(dims, flat, strict=True):
            _check_in_dim(d, x, in_dims)
            if d is not None:
                sizes.append(x.shape[d])
        if not sizes:
            raise ValueError(
                f"[func.vmap] vmap(f, in_dims={in_dims}, ...)(<inputs>): at least one input must be a Tensor to vmap "
                "over (got in_dims all None or no tensor inputs)"
            )
        if len(set(sizes)) > 1:
            raise ValueError(
                f"[func.vmap] vmap: Expected all tensors to have the same size in the mapped dimension, got sizes "
                f"{sizes} for the mapped dimension"
            )
        batch = sizes[0]
        if chunk_size is None or chunk_size >= batch:
            return _run(func, flat, dims, spec, kwargs, out_dims, randomness)
        chunks = []
        for start in range(0, batch, chunk_size):
            n = min(chunk_size, batch - start)
            part = [x.narrow(d, start, n) if d is not None else x for d, x in zip(dims, flat, strict=True)]
            chunks.append(_run(func, part, dims, spec, kwargs, out_dims, randomness))
        return _concat_chunks(chunks, out_dims)

    return wrapped


def _run(func: Callable, flat: list, dims: list, spec: Any, kwargs: dict, out_dims: Any, randomness: str) -> Any:
    level = next(_level_ids)
    batched = [BatchedTensor(x.movedim(d, 0), level) if d is not None else x for d, x in zip(dims, flat, strict=True)]
    batch = next(x.shape[d] for d, x in zip(dims, flat, strict=True) if d is not None)
    levels = _levels()
    levels.append((level, batch))
    previous = getattr(_state, "randomness", "error")
    _state.randomness = randomness
    try:
        output = func(*tree_unflatten(batched, spec), **kwargs)
    finally:
        levels.pop()
        _state.randomness = previous
    return _unwrap_output(output, level, batch, out_dims)


def _unwrap_output(output: Any, level: int, batch: int, out_dims: Any) -> Any:
    leaves, spec = tree_flatten(output)
    if isinstance(out_dims, int) or out_dims is None:
        dims = [out_dims] * len(leaves)
    elif isinstance(output, tuple) and isinstance(out_dims, (tuple, list)) and len(out_dims) == len(output):
        dims = []
        for d, o in zip(out_dims, output, strict=True):
            dims += [d] * len(tree_flatten(o)[0]) if isinstance(d, int) or d is None else tree_flatten(d)[0]
    else:
        dims = []
    if len(dims) != len(leaves):
        raise ValueError(
            f"[func.vmap] vmap(f, ..., out_dims={out_dims})(<inputs>): out_dims is not compatible with the structure "
            "of `outputs`."
        )
    out = []
    for d, leaf in zip(dims, leaves, strict=True):
        if isinstance(leaf, BatchedTensor) and leaf._level == level:
            if d is None:
                raise ValueError(
                    f"[func.vmap] vmap(f, ..., out_dims={out_dims}): Can not return a BatchedTensor when out_dim is "
                    "None"
                )
            out.append(leaf._value.movedim(0, d))
        elif _is_tensorlike(leaf):
            if d is None:
                out.append(leaf)
            else:  # independent of the batch: the same value for every sample
                out.append(
                    leaf.unsqueeze(d).expand(*leaf.shape[:d], batch, *leaf.shape[d:])
                    if leaf.dim()
                    else leaf.expand(batch)
                )
        else:
            if d is not None:
                raise ValueError(
                    f"[func.vmap] vmap(f, ...): `f` must only return Tensors, got type {type(leaf).__name__}. Did you "
                    "mean to set out_dims= to None for output?"
                )
            out.append(leaf)
    return tree_unflatten(out, spec)


def _concat_chunks(chunks: list, out_dims: Any) -> Any:
    flats = [tree_flatten(c) for c in chunks]
    spec = flats[0][1]
    n = len(flats[0][0])
    dims = [out_dims] * n if isinstance(out_dims, int) else tree_flatten(out_dims)[0]
    leaves = [flambeau_core.cat([f[0][i] for f in flats], dim=dims[i]) for i in range(n)]
    return tree_unflatten(leaves, spec)
