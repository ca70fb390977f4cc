"""Calling a module with other parameters and buffers (``torch.nn.utils.stateless``): ``functional_call``."""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from typing import Any

from flambeau_core import FlambeauError, Tensor

from flambeau_nn.modules.module import Module

__all__ = ["functional_call"]


def _untie(module: Module, values: dict[str, Tensor]) -> dict[str, Tensor]:
    """``values`` extended to every name tied (the same tensor object) to a given one."""
    named = dict(module.named_parameters(remove_duplicate=False))
    named.update(module.named_buffers(remove_duplicate=False))
    groups: dict[int, set[str]] = {}
    for name, t in named.items():
        groups.setdefault(id(t), set()).add(name)
    out = dict(values)
    for name in values:
        if name not in named:
            continue
        tied = groups[id(named[name])]
        given = tied & set(values)
        if len(given) > 1 and len({id(values[n]) for n in given}) != 1:
            raise FlambeauError(
                f"[functional_call] functional_call got multiple values for keys {sorted(tied)}, which are tied. "
                "Consider using tie_weights=False"
            )
        for other in tied:
            out[other] = values[name]
    return out


def _owner(module: Module, name: str) -> tuple[Module, str]:
    *path, leaf = name.split(".")
    for part in path:
        sub = getattr(module, part, None)
        if not isinstance(sub, Module):
            raise AttributeError(f"[functional_call] {type(module).__name__} has no submodule '{part}' (in '{name}')")
        module = sub
    return module, leaf


@contextlib.contextmanager
def _reparametrize_module(
    module: Module, values: dict[str, Tensor], *, tie_weights: bool = False, strict: bool = False
) -> Iterator[None]:
    """Inside the context, ``module``'s parameters/buffers named in ``values`` are those tensors (restored after)."""
    if tie_weights:
        values = _untie(module, values)
    if strict:
        known = {n for n, _ in module.named_parameters(remove_duplicate=False)}
        known |= {n for n, _ in module.named_buffers(remove_duplicate=False)}
        missing, unexpected = sorted(known - set(values)), sorted(set(values) - known)
        if missing or unexpected:
            parts = []
            if unexpected:
                parts.append("Unexpected key(s): " + ", ".join(repr(k) for k in unexpected) + ".")
            if missing:
                parts.append("Missing key(s): " + ", ".join(repr(k) for k in missing) + ".")
            raise FlambeauError(
                f"[functional_call] Error(s) in reparametrizing for {type(module).__name__}:\n\t" + "\n\t".join(parts)
            )
    saved: list[tuple[dict, str, Any]] = []
    try:
        for name, value in values.items():
            owner, leaf = _owner(module, name)
            # The tensor goes straight into the owner's dict (no Parameter check): it may carry a graph.
            store = (
                owner._parameters if leaf in owner._parameters else owner._buffers if leaf in owner._buffers else None
            )
            if store is None:
                saved.append((owner.__dict__, leaf, owner.__dict__.get(leaf, _MISSING)))
                object.__setattr__(owner, leaf, value)
            else:
                saved.append((store, leaf, store[leaf]))
                store[leaf] = value
        yield
    finally:
        for store, leaf, old in reversed(saved):
            if old is _MISSING:
                store.pop(leaf, None)
            else:
                store[leaf] = old


_MISSING = object()


def functional_call(
    module: Module,
    parameters_and_buffers: dict[str, Tensor],
    args: Any = None,
    kwargs: dict[str, Any] | None = None,
    *,
    tie_weights: bool = True,
    strict: bool = False,
) -> Any:
    r"""``module(*args, **kwargs)`` with the parameters and buffers named in ``parameters_and_buffers`` replaced by
    those tensors for the call (the module is left as it was). Gradients flow to the given tensors.

    ``tie_weights`` gives tied names (one tensor under two names) the same
    replacement; ``strict`` requires exactly the module's names.

    Example:
        >>> import flambeau_core as fc
        >>> import flambeau_nn as nn
        >>> m = nn.Linear(2, 1)
        >>> functional_call(m, {"weight": fc.ones(1, 2), "bias": fc.zeros(1)}, (fc.tensor([[1.0, 2.0]]),)).tolist()
        [[3.0]]
    """
    if not isinstance(module, Module):
        raise TypeError(f"[functional_call] module must be a Module, got {type(module).__name__}")
    kwargs = {} if kwargs is None else kwargs
    args = () if args is None else args if isinstance(args, tuple) else (args,)
    with _reparametrize_module(module, dict(parameters_and_buffers), tie_weights=tie_weights, strict=strict):
        return module(*args, **kwargs)
