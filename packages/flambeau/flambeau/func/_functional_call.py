"""``functional_call`` (a module run with other parameters and buffers) and ``stack_module_state``."""

from __future__ import annotations

from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import Any

import flambeau_core
from flambeau_core import FlambeauError, Tensor
from flambeau_core.overrides import is_tensor_like
from flambeau_nn import Module

__all__ = ["functional_call", "stack_module_state"]

_ABSENT = object()  # the attribute did not exist before the swap


def _merge_dicts(parameter_and_buffer_dicts: Any) -> dict:
    if isinstance(parameter_and_buffer_dicts, Mapping):
        return dict(parameter_and_buffer_dicts)
    if isinstance(parameter_and_buffer_dicts, Sequence) and not isinstance(parameter_and_buffer_dicts, str):
        if not all(isinstance(d, Mapping) for d in parameter_and_buffer_dicts):
            raise TypeError(
                "[func.functional_call] Expected all elements of parameter_and_buffer_dicts to be dictionaries"
            )
        seen: dict[str, int] = {}
        for d in parameter_and_buffer_dicts:
            for k in d:
                seen[k] = seen.get(k, 0) + 1
        repeated = [k for k, n in seen.items() if n > 1]
        if repeated:
            raise FlambeauError(
                f"[func.functional_call] {repeated} appeared in multiple dictionaries; behavior of functional call is "
                "ambiguous"
            )
        return {k: v for d in parameter_and_buffer_dicts for k, v in d.items()}
    raise TypeError(
        "[func.functional_call] Expected parameter_and_buffer_dicts to be a dict, or a list/tuple of dicts, but got "
        f"{type(parameter_and_buffer_dicts).__name__}"
    )


def _named_tensors(module: Module) -> list[tuple[str, Tensor]]:
    """Every parameter and buffer under every name it has (a tied tensor once per name)."""
    return list(module.named_parameters(remove_duplicate=False)) + list(module.named_buffers(remove_duplicate=False))


def _tie(module: Module, given: dict) -> dict:
    """``given`` with each value also under the other names of a tied tensor (shared weights stay shared)."""
    names_of: dict[int, list[str]] = {}
    for name, t in _named_tensors(module):
        names_of.setdefault(id(t), []).append(name)
    out = dict(given)
    for names in names_of.values():
        if len(names) < 2:
            continue
        passed = [n for n in names if n in given]
        if not passed:
            continue
        if len({id(given[n]) for n in passed}) > 1:
            raise FlambeauError(
                f"[func.functional_call] functional_call got multiple values for keys {sorted(names)}, which are "
                "tied. Consider using tie_weights=False"
            )
        for n in names:
            out[n] = given[passed[0]]
    return out


def _swap(module: Module, name: str, value: Any) -> Any:
    """Puts ``value`` at dotted ``name`` and returns what was there (``_ABSENT`` for a new attribute)."""
    prefix, _, attr = name.rpartition(".")
    mod = module.get_submodule(prefix)
    for store in (mod._parameters, mod._buffers):
        if attr in store:
            old = store[attr]
            if value is _ABSENT:
                del store[attr]
            else:
                store[attr] = value
            return old
    old = getattr(mod, attr, _ABSENT)
    if old is not _ABSENT and old is not None and not isinstance(old, Tensor):
        raise TypeError(f"[func.functional_call] attribute `{name}`: {type(old).__name__} is not a Tensor")
    if value is _ABSENT:
        if hasattr(mod, attr):
            delattr(mod, attr)
    else:
        object.__setattr__(mod, attr, value)
    return old


@contextmanager
def _reparametrized(module: Module, tensors: dict) -> Iterator[None]:
    originals: dict[str, Any] = {}
    try:
        for name, value in tensors.items():
            if value is not None and not isinstance(value, Tensor) and not is_tensor_like(value):
                raise TypeError(
                    f"[func.functional_call] the value of `{name}` must be a Tensor, got {type(value).__name__}"
                )
            originals[name] = _swap(module, name, value)
        yield
    finally:
        for name, old in reversed(originals.items()):
            now = _swap(module, name, old)
            tensors[name] = now  # a module that reassigns a buffer (not in place) hands the new value back


def functional_call(
    module: Module,
    parameter_and_buffer_dicts: Mapping[str, Tensor] | Sequence[Mapping[str, Tensor]],
    args: Any = None,
    kwargs: dict[str, Any] | None = None,
    *,
    tie_weights: bool = True,
    strict: bool = False,
) -> Any:
    """Calls ``module(*args, **kwargs)`` with its parameters and buffers replaced by the tensors of
    ``parameter_and_buffer_dicts`` (a dict of dotted names, or a sequence of dicts with distinct keys); the
    module's own are put back afterwards, even when the call raises.

    Names not given keep the module's own tensors unless ``strict`` (then missing and unexpected names
    raise). With ``tie_weights``, a value given for one name of a shared (tied) tensor is used for all its
    names. Gradients flow to the given tensors, which makes a module a function of its parameters for the
    other ``flambeau.func`` transforms.

    Example:
        >>> import flambeau as fb
        >>> lin = fb.nn.Linear(2, 1)
        >>> params = {"weight": fb.tensor([[1.0, 2.0]]), "bias": fb.tensor([0.5])}
        >>> fb.func.functional_call(lin, params, (fb.tensor([[3.0, 4.0]]),)).tolist()
        [[11.5]]
        >>> g = fb.func.grad(lambda p, x: fb.func.functional_call(lin, p, (x,)).sum())(params, fb.ones(1, 2))
        >>> g["weight"].tolist(), lin.weight is not params["weight"]
        ([[1.0, 1.0]], True)
    """
    if not isinstance(module, Module):
        raise TypeError(f"[func.functional_call] module must be a flambeau.nn.Module, got {type(module).__name__}")
    single_dict = isinstance(parameter_and_buffer_dicts, dict)
    tensors = _merge_dicts(parameter_and_buffer_dicts)
    if tie_weights:
        tensors = _tie(module, tensors)
    if strict:
        valid = {name for name, _ in _named_tensors(module)}
        missing, unexpected = sorted(valid - tensors.keys()), sorted(tensors.keys() - valid)
        errors = []
        if unexpected:
            errors.append(f"Unexpected key(s): {', '.join(map(repr, unexpected))}.")
        if missing:
            errors.append(f"Missing key(s): {', '.join(map(repr, missing))}.")
        if errors:
            raise FlambeauError(
                f"[func.functional_call] Error(s) in reparametrizing for {type(module).__name__}:\n\t"
                + "\n\t".join(errors)
            )
    if args is None:
        args = ()
    elif not isinstance(args, tuple):
        args = (args,)
    with _reparametrized(module, tensors):
        out = module(*args, **(kwargs or {}))
    if single_dict:
        for k in parameter_and_buffer_dicts:
            parameter_and_buffer_dicts[k] = tensors[k]
    return out


def _stack_leaf(tensors: list[Tensor], name: str) -> Tensor:
    wants = {t.requires_grad for t in tensors}
    if len(wants) > 1:
        raise FlambeauError(
            f"[func.stack_module_state] Expected {name} from each model to have the same .requires_grad"
        )
    stacked = flambeau_core.stack([t.detach() for t in tensors], 0)
    return stacked.requires_grad_() if wants == {True} else stacked


def stack_module_state(models: Sequence[Module]) -> tuple[dict[str, Tensor], dict[str, Tensor]]:
    """``(params, buffers)``: each parameter and buffer of ``models`` (same class and mode) stacked along a
    new first dimension, for an ensemble run with ``functional_call``. The stacked parameters are new leaves
    (``requires_grad`` as the models' parameters), not views of the models' tensors.

    Example:
        >>> import flambeau as fb
        >>> params, buffers = fb.func.stack_module_state([fb.nn.Linear(3, 2) for _ in range(4)])
        >>> params["weight"].shape, params["weight"].requires_grad, buffers
        (flambeau.Size([4, 2, 3]), True, {})
    """
    models = list(models)
    if not models:
        raise FlambeauError("[func.stack_module_state] stack_module_state: Expected at least one model, got 0.")
    if len({m.training for m in models}) > 1:
        raise FlambeauError(
            "[func.stack_module_state] stack_module_state: Expected all models to have the same training/eval mode."
        )
    if len({type(m) for m in models}) > 1:
        raise FlambeauError(
            "[func.stack_module_state] stack_module_state: Expected all models to be of the same class."
        )
    all_params = [dict(m.named_parameters()) for m in models]
    all_buffers = [dict(m.named_buffers()) for m in models]
    params = {k: _stack_leaf([p[k] for p in all_params], k) for k in all_params[0]}
    buffers = {k: _stack_leaf([b[k] for b in all_buffers], k) for k in all_buffers[0]}
    return params, buffers
