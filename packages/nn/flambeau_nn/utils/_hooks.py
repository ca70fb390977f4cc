"""The forward pre-hooks that weight_norm, spectral_norm and prune install on a module, found by kind and name."""

from __future__ import annotations

from typing import Any

from flambeau_nn.modules.module import Module


def pop_pre_hook(module: Module, kind: type, name: str, attribute: str = "name") -> Any:
    """Removes and returns ``module``'s forward pre-hook that is a ``kind`` acting on ``name`` (None if none)."""
    for key, hook in module._forward_pre_hooks.items():
        if isinstance(hook, kind) and getattr(hook, attribute, None) == name:
            del module._forward_pre_hooks[key]
            return hook
    return None
