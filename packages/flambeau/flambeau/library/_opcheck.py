"""``opcheck``: tests that an operator's registrations agree with what its kernels do."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

import flambeau_autograd as _autograd
import flambeau_core as fc
from flambeau_core import FlambeauError

from ._dispatch import OpOverload, OpOverloadPacket, _flatten, _unflatten, lookup
from ._schema import Argument

__all__ = ["DEFAULT_TEST_UTILS", "OpCheckError", "opcheck"]

DEFAULT_TEST_UTILS = ("test_schema", "test_autograd_registration", "test_faketensor", "test_gradcheck", "test_devices")
# PyTorch's name for its check of the compiled forward and backward; flambeau has no compiler, so it
# checks the backward against finite differences (test_gradcheck).
_ALIASES = {"test_aot_dispatch_dynamic": "test_gradcheck"}


class OpCheckError(Exception):
    """What :func:`opcheck` raises when one of its checks fails (the message names the check).

    Example:
        >>> import flambeau as fb
        >>> from flambeau.library import custom_op
        >>> @custom_op("doc_opcheckerror::grow", mutates_args=())
        ... def grow(x: fb.Tensor) -> fb.Tensor:
        ...     return x.sin()
        >>> _ = grow.register_fake(lambda x: x.new_empty(x.shape[0] + 1))
        >>> try:
        ...     opcheck(grow, (fb.ones(3),), test_utils="test_faketensor")
        ... except OpCheckError as e:
        ...     print(str(e).split(": ", 2)[2])
        output 0 of the 'cpu' kernel has shape (3,) but the fake rule says (4,)
    """


def _map(value: Any, fn: Callable[[fc.Tensor], Any]) -> Any:
    if isinstance(value, fc.Tensor):
        return fn(value)
    if isinstance(value, (list, tuple)):
        return type(value)(_map(v, fn) for v in value)
    if isinstance(value, dict):
        return {k: _map(v, fn) for k, v in value.items()}
    return value


def _clone(t: fc.Tensor) -> fc.Tensor:
    return t.detach().clone().requires_grad_(t.requires_grad)


def _plain_clone(t: fc.Tensor) -> fc.Tensor:
    return t.detach().clone()


def _tensors(value: Any) -> list[fc.Tensor]:
    if isinstance(value, fc.Tensor):
        return [value]
    if isinstance(value, (list, tuple)):
        return [t for v in value for t in _tensors(v)]
    return []


def _same_values(a: fc.Tensor, b: fc.Tensor) -> bool:
    if a.shape != b.shape or a.dtype != b.dtype:
        return False
    a, b = a.detach().cpu(), b.detach().cpu()
    if a.is_floating_point() or a.is_complex():
        return bool(((a == b) | (a.isnan() & b.isnan())).all())
    return bool((a == b).all())


def _extent(t: fc.Tensor) -> tuple[int, int]:
    if t.numel() == 0:
        return (0, 0)
    start = t.data_ptr()
    last = sum((n - 1) * s for n, s in zip(t.shape, t.stride(), strict=True))
    return start, start + (last + 1) * t.element_size()


def _overlaps(a: fc.Tensor, b: fc.Tensor) -> bool:
    if a.device != b.device or a.is_meta or b.is_meta:
        return False
    (a0, a1), (b0, b1) = _extent(a), _extent(b)
    return a0 < b1 and b0 < a1


def _bound(op: OpOverload, args: tuple, kwargs: dict) -> list[tuple[Argument, Any]]:
    """(argument, value) for every argument the call passed."""
    out: list[tuple[Argument, Any]] = []
    for i, a in enumerate(op._schema.arguments):
        if not a.kwarg_only and i < len(args):
            out.append((a, args[i]))
        elif a.name in kwargs:
            out.append((a, kwargs[a.name]))
    return out


def _outputs(value: Any) -> list[Any]:
    return list(value) if isinstance(value, (tuple, list)) else [value]


def _shape(t: fc.Tensor) -> tuple[int, ...]:
    return tuple(t.shape)


# --- the checks ------------------------------------------------------------------------


def _test_schema(op: OpOverload, args: tuple, kwargs: dict, atol: float | None, rtol: float | None) -> None:
    work_args, work_kwargs = _map(args, _plain_clone), _map(kwargs, _plain_clone)
    before = _map(_bound(op, work_args, work_kwargs), lambda t: t.detach().clone())
    with _autograd.no_grad():
        result = op(*work_args, **work_kwargs)
    after = _bound(op, work_args, work_kwargs)
    declared = op._schema.mutated_names
    for (arg, old), (_, new) in zip(before, after, strict=True):
        olds, news = _tensors(old), _tensors(new)
        changed = any(not _same_values(o, n) for o, n in zip(olds, news, strict=True))
        if changed and not arg.is_write:
            raise FlambeauError(
                f"[opcheck] {op._qualname} mutated its argument '{arg.name}', which its schema does not declare "
                f"as mutated (mutated: {list(declared) or 'none'}); add '{arg.name}' to mutates_args "
                f"(the schema: {op._schema})"
            )
    n_returns = len(op._schema.returns)
    outs = [] if n_returns == 0 else _outputs(result) if (op._schema.returns_tuple or n_returns > 1) else [result]
    if n_returns == 0 and result is not None:
        raise FlambeauError(f"[opcheck] {op._qualname} returned {type(result).__name__}; its schema returns nothing")
    if len(outs) != n_returns:
        raise FlambeauError(
            f"[opcheck] {op._qualname} returned {len(outs)} value(s); its schema returns {n_returns} ({op._schema})"
        )
    inputs = [(arg, t) for arg, v in after for t in _tensors(v)]
    for k, (ret, out) in enumerate(zip(op._schema.returns, outs, strict=True)):
        if ret.type.base == "Tensor" and not _tensors(out) and not (ret.type.optional and out is None):
            raise FlambeauError(
                f"[opcheck] {op._qualname} returned {type(out).__name__} as output {k}; its schema says {ret.type}"
            )
        if ret.alias is not None:
            continue
        for t in _tensors(out):
            for arg, x in inputs:
                if t is x or _overlaps(t, x):
                    raise FlambeauError(
                        f"[opcheck] {op._qualname}'s output {k} shares memory with its argument '{arg.name}'; "
                        f"an operator's outputs must not alias its inputs: return a copy ({arg.name}.clone())"
                    )


def _has_gradient(op: OpOverload) -> bool:
    return op._backward is not None or op._implicit_kernel is not None or op._autograd_kernel is not None


def _test_autograd_registration(
    op: OpOverload, args: tuple, kwargs: dict, atol: float | None, rtol: float | None
) -> None:
    bound = _bound(op, args, kwargs)
    if not any(t.requires_grad for _, v in bound for t in _tensors(v)):
        return
    result = op(*_map(args, _clone), **_map(kwargs, _clone))
    for k, t in enumerate(_tensors(result)):
        if (t.is_floating_point() or t.is_complex()) and not t.requires_grad:
            raise FlambeauError(
                f"[opcheck] {op._qualname}: inputs require grad but output {k} does not: its autograd kernel "
                f"returned a tensor outside the graph; register the gradient with register_autograd"
            )


def _test_faketensor(op: OpOverload, args: tuple, kwargs: dict, atol: float | None, rtol: float | None) -> None:
    with _autograd.no_grad():
        real = op(*_map(args, _plain_clone), **_map(kwargs, _plain_clone))
        fake = op(*_map(args, lambda t: t.detach().to("meta")), **_map(kwargs, lambda t: t.detach().to("meta")))
    device = next((t.device.type for _, v in _bound(op, args, kwargs) for t in _tensors(v)), "cpu")
    _compare_to_fake(op, device, real, fake)


def _compare_to_fake(op: OpOverload, device: str, real: Any, fake: Any) -> None:
    reals, fakes = _tensors(real), _tensors(fake)
    if len(reals) != len(fakes):
        raise FlambeauError(
            f"[opcheck] {op._qualname}: the '{device}' kernel returned {len(reals)} tensor(s) but the fake rule "
            f"{len(fakes)}"
        )
    for k, (r, f) in enumerate(zip(reals, fakes, strict=True)):
        what = f"[opcheck] {op._qualname}: output {k} of the '{device}' kernel"
        if not f.is_meta:
            raise FlambeauError(
                f"[opcheck] {op._qualname}: the fake rule's output {k} is on '{f.device}'; given meta tensors it "
                f"must return meta tensors (fb.empty(..., device=x.device), x.new_empty(...), fb.empty_like(x))"
            )
        if _shape(r) != _shape(f):
            raise FlambeauError(f"{what} has shape {_shape(r)} but the fake rule says {_shape(f)}")
        if r.dtype != f.dtype:
            raise FlambeauError(f"{what} has dtype {r.dtype} but the fake rule says {f.dtype}")
        if r.device.type != device:
            raise FlambeauError(f"{what} is on '{r.device}', not on the '{device}' device of its inputs")
        if r.is_contiguous() and r.numel() > 1 and tuple(r.stride()) != tuple(f.stride()):
            raise FlambeauError(f"{what} has strides {tuple(r.stride())} but the fake rule says {tuple(f.stride())}")


def _floating_inputs(value: Any) -> list[fc.Tensor]:
    return [t for t in _tensors(value) if t.is_floating_point()]


def _test_gradcheck(op: OpOverload, args: tuple, kwargs: dict, atol: float | None, rtol: float | None) -> None:
    given = [t for t in _floating_inputs(args) if t.requires_grad]
    if not _has_gradient(op):
        if given:  # runs the backward, which says that there is no formula
            out = op(*_map(args, _clone), **_map(kwargs, _clone))
            diff = [t for t in _tensors(out) if t.requires_grad]
            if diff:
                _autograd.grad(diff, [t for t in _tensors(args) if t.requires_grad], allow_unused=True)
        return
    if not _floating_inputs(args):
        return
    which = "requires_grad" if given else "all"

    def to_double(t: fc.Tensor) -> fc.Tensor:
        x = t.detach().to(fc.float64) if t.is_floating_point() else t.detach().clone()
        if t.is_floating_point() and (which == "all" or t.requires_grad):
            x.requires_grad_(True)
        return x

    positional = _map(args, to_double)
    kw = _map(kwargs, lambda t: t.detach().to(fc.float64) if t.is_floating_point() else t)
    flat, spec = _flatten(positional)

    def fn(*flat_args: Any) -> Any:
        return op(*_unflatten(flat_args, spec), **kw)

    try:
        _autograd.gradcheck(fn, tuple(flat), atol=atol or 1e-5, rtol=rtol or 1e-3)
    except _autograd.GradcheckError as e:
        raise FlambeauError(
            f"[opcheck] {op._qualname}: its registered gradient disagrees with finite differences: {e}"
        ) from e


def _available(device_type: str) -> bool:
    if device_type == "cpu":
        return True
    try:
        return fc.device_module(device_type).device_count() > 0
    except Exception:  # noqa: BLE001  (a device type not registered in this process)
        return False


def _test_devices(op: OpOverload, args: tuple, kwargs: dict, atol: float | None, rtol: float | None) -> None:
    with _autograd.no_grad():
        reference = op(*_map(args, _plain_clone), **_map(kwargs, _plain_clone))
    origin = next((t.device.type for _, v in _bound(op, args, kwargs) for t in _tensors(v)), None)
    for device in sorted(op._kernels):
        if device == origin or not _available(device):
            continue
        move = lambda t, d=device: t.detach().to(d)  # noqa: E731
        with _autograd.no_grad():
            out = op(*_map(args, move), **_map(kwargs, move))
        if op._fake is not None:
            fake = op(*_map(args, lambda t: t.detach().to("meta")), **_map(kwargs, lambda t: t.detach().to("meta")))
            _compare_to_fake(op, device, out, fake)
        for k, (r, o) in enumerate(zip(_tensors(reference), _tensors(out), strict=False)):
            if o.device.type != device:
                raise FlambeauError(f"[opcheck] {op._qualname}: output {k} of the '{device}' kernel is on '{o.device}'")
            if not fc.allclose(o.cpu(), r.cpu(), rtol=rtol or 1e-5, atol=atol or 1e-6, equal_nan=True):
                raise FlambeauError(
                    f"[opcheck] {op._qualname}: output {k} of the '{device}' kernel differs from the "
                    f"'{origin}' kernel's on the same inputs"
                )


_CHECKS = {
    "test_schema": _test_schema,
    "test_autograd_registration": _test_autograd_registration,
    "test_faketensor": _test_faketensor,
    "test_gradcheck": _test_gradcheck,
    "test_devices": _test_devices,
}


def opcheck(
    op: Any,
    args: tuple[Any, ...],
    kwargs: dict[str, Any] | None = None,
    *,
    test_utils: str | Sequence[str] = DEFAULT_TEST_UTILS,
    raise_exception: bool = True,
    atol: float | None = None,
    rtol: float | None = None,
) -> dict[str, str]:
    """Tests an operator on sample inputs, as ``torch.library.opcheck``. The checks (``test_utils``):

    - ``test_schema``: the arguments the kernel mutates are the ones the schema
      declares (inputs compared before and after), the outputs match the
      schema's returns and do not share memory with the inputs;
    - ``test_autograd_registration``: with inputs requiring grad, floating outputs are in the graph;
    - ``test_faketensor``: the fake rule, run on ``meta`` copies of the inputs,
      gives the kernel's output shapes, dtypes and (for contiguous outputs) strides;
    - ``test_gradcheck`` (also accepted as PyTorch's ``test_aot_dispatch_dynamic``):
      the registered gradient against finite differences in float64 (with
      respect to the inputs that require grad, or every floating input when
      none does); without one, a backward through inputs that require grad
      must raise the "no autograd formula" error;
    - ``test_devices``: the op runs on each device it has a kernel for (of the
      devices present in this process), giving the same values as on the
      inputs' device, on that device, with its fake rule's shapes.

    Returns ``{check: "SUCCESS" or the exception}``; with ``raise_exception``
    the first failure raises OpCheckError naming the check and what differs.

    Example:
        >>> import flambeau as fb
        >>> from flambeau.library import custom_op
        >>> @custom_op("doc_opcheck::add1", mutates_args=())
        ... def add1(x: fb.Tensor) -> fb.Tensor:
        ...     return x + 1
        >>> @add1.register_fake
        ... def _(x):
        ...     return fb.empty_like(x)
        >>> opcheck(add1, (fb.ones(3),))["test_faketensor"]
        'SUCCESS'
    """
    from . import CustomOpDef

    if isinstance(op, CustomOpDef):
        op = op._opoverload
    elif isinstance(op, OpOverloadPacket):
        op = lookup(op._qualified_op_name, "opcheck")
    elif isinstance(op, str):
        op = lookup(op, "opcheck")
    if not isinstance(op, OpOverload):
        raise TypeError(f"[opcheck] expected an operator (a CustomOpDef, OpOverload or packet), got {op!r}")
    if not isinstance(args, tuple):
        raise TypeError(f"[opcheck] args must be a tuple, got {type(args).__name__}")
    kwargs = {} if kwargs is None else kwargs
    names = [test_utils] if isinstance(test_utils, str) else list(test_utils)
    unknown = [n for n in names if n not in _CHECKS and n not in _ALIASES]
    if unknown:
        raise ValueError(f"[opcheck] unknown test_utils {unknown}; the checks are {list(_CHECKS)}")
    results: dict[str, Any] = {}
    for name in names:
        check = _CHECKS[_ALIASES.get(name, name)]
        try:
            check(op, args, kwargs, atol, rtol)
        except Exception as e:
            if raise_exception:
                raise OpCheckError(f"opcheck({op._qualname}, ...): {name} failed with {e}") from e
            results[name] = e
            continue
        results[name] = "SUCCESS"
    return results
