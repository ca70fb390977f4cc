"""The hook-based weight normalization (``torch.nn.utils.weight_norm``, deprecated in PyTorch in favor of
``parametrizations.weight_norm``, and kept for the programs and checkpoints that use it).

``weight_norm(module)`` replaces the parameter ``weight`` by ``weight_g`` (magnitude) and
``weight_v`` (direction), and a forward pre-hook recomputes ``weight = g * v / ||v||`` before each forward.
"""

from __future__ import annotations

import warnings
from typing import Any

import flambeau_core as fc
from flambeau_core import FlambeauError, Tensor

from flambeau_nn.modules.module import Module
from flambeau_nn.parameter import Parameter
from flambeau_nn.utils._hooks import pop_pre_hook

__all__ = ["WeightNorm", "weight_norm", "remove_weight_norm"]


def _norm_except_dim(v: Tensor, dim: int) -> Tensor:
    """The 2-norm of ``v`` over every dim but ``dim`` (kept with size 1); over everything for ``dim == -1``."""
    if dim == -1:
        return fc.sqrt((v * v).sum())
    dim = dim % v.dim()
    others = [d for d in range(v.dim()) if d != dim]
    return fc.sqrt((v * v).sum(others, keepdim=True)) if others else v.abs()


def _weight_norm(v: Tensor, g: Tensor, dim: int) -> Tensor:
    return v * (g / _norm_except_dim(v, dim))


class WeightNorm:
    """The forward pre-hook of ``weight_norm``: recomputes ``module.<name>`` from ``<name>_g`` and ``<name>_v``."""

    def __init__(self, name: str, dim: int | None) -> None:
        self.name = name
        self.dim = -1 if dim is None else dim

    def compute_weight(self, module: Module) -> Tensor:
        return _weight_norm(getattr(module, self.name + "_v"), getattr(module, self.name + "_g"), self.dim)

    @staticmethod
    def apply(module: Module, name: str, dim: int | None) -> WeightNorm:
        warnings.warn(
            "flambeau_nn.utils.weight_norm is deprecated in favor of flambeau_nn.utils.parametrizations.weight_norm.",
            FutureWarning,
            stacklevel=3,
        )
        for hook in module._forward_pre_hooks.values():
            if isinstance(hook, WeightNorm) and hook.name == name:
                raise FlambeauError(f"[weight_norm] Cannot register two weight_norm hooks on the same parameter {name}")
        fn = WeightNorm(name, dim)
        weight = module._parameters.get(name)
        if weight is None:
            raise FlambeauError(f"[weight_norm] Module '{type(module).__name__}' has no parameter named '{name}'")
        del module._parameters[name]
        module.register_parameter(name + "_g", Parameter(_norm_except_dim(weight.detach(), fn.dim)))
        module.register_parameter(name + "_v", Parameter(weight.detach()))
        setattr(module, name, fn.compute_weight(module))
        module.register_forward_pre_hook(fn)
        return fn

    def remove(self, module: Module) -> None:
        weight = self.compute_weight(module)
        delattr(module, self.name)
        del module._parameters[self.name + "_g"]
        del module._parameters[self.name + "_v"]
        setattr(module, self.name, Parameter(weight.detach()))

    def __call__(self, module: Module, inputs: Any) -> None:
        setattr(module, self.name, self.compute_weight(module))


def weight_norm(module: Module, name: str = "weight", dim: int | None = 0) -> Module:
    r"""Splits ``module.<name>`` into ``<name>_g`` (its norm over every dim but ``dim``) and ``<name>_v``.

    ``dim=None`` takes the norm of the whole tensor. Warns (deprecated, as in
    PyTorch): prefer ``parametrizations.weight_norm``.

    Example:
        >>> import warnings
        >>> import flambeau_nn as nn
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("ignore")
        ...     m = weight_norm(nn.Linear(4, 3))
        >>> sorted(m.state_dict())
        ['bias', 'weight_g', 'weight_v']
    """
    WeightNorm.apply(module, name, dim)
    return module


def remove_weight_norm(module: Module, name: str = "weight") -> Module:
    r"""Undoes ``weight_norm``: ``module.<name>`` is a plain parameter again (holding the current value).

    Example:
        >>> import flambeau_nn as nn
        >>> m = nn.utils.weight_norm(nn.Linear(4, 3))
        >>> sorted(name for name, _ in m.named_parameters())
        ['bias', 'weight_g', 'weight_v']
        >>> m = nn.utils.remove_weight_norm(m)
        >>> sorted(name for name, _ in m.named_parameters())
        ['bias', 'weight']
    """
    hook = pop_pre_hook(module, WeightNorm, name)
    if hook is not None:
        hook.remove(module)
        return module
    raise FlambeauError(f"[remove_weight_norm] weight_norm of '{name}' not found in {module}")
