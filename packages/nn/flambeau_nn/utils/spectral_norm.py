"""The hook-based spectral normalization (``torch.nn.utils.spectral_norm``; PyTorch now also offers
``parametrizations.spectral_norm``).

``spectral_norm(module)`` moves the parameter to ``weight_orig``, keeps the power method's
vectors in the buffers ``weight_u``/``weight_v``, and a forward pre-hook sets
``module.weight = weight_orig / sigma`` (``sigma`` the estimated largest singular value),
running one power-method step per forward in training mode.
"""

from __future__ import annotations

from typing import Any

import flambeau_autograd as fa
import flambeau_core as fc
from flambeau_core import FlambeauError, Tensor

from flambeau_nn import functional as F
from flambeau_nn import modules as _modules
from flambeau_nn.modules.module import Module
from flambeau_nn.parameter import Parameter
from flambeau_nn.utils._hooks import pop_pre_hook

__all__ = ["SpectralNorm", "spectral_norm", "remove_spectral_norm"]

# Their weight is (in, out, ...): the output dim is 1.
_CONV_TRANSPOSE = tuple(getattr(_modules, n) for n in dir(_modules) if n.startswith("ConvTranspose"))


class SpectralNorm:
    """The forward pre-hook of ``spectral_norm``."""

    def __init__(self, name: str = "weight", n_power_iterations: int = 1, dim: int = 0, eps: float = 1e-12) -> None:
        if n_power_iterations <= 0:
            raise FlambeauError(
                "[spectral_norm] Expected n_power_iterations to be positive, but got "
                f"n_power_iterations={n_power_iterations}"
            )
        self.name = name
        self.dim = dim
        self.n_power_iterations = n_power_iterations
        self.eps = eps

    def reshape_weight_to_matrix(self, weight: Tensor) -> Tensor:
        if self.dim != 0:
            weight = weight.permute(self.dim, *(d for d in range(weight.dim()) if d != self.dim))
        return weight.reshape(weight.shape[0], -1)

    def compute_weight(self, module: Module, do_power_iteration: bool) -> Tensor:
        weight = getattr(module, self.name + "_orig")
        u = getattr(module, self.name + "_u")
        v = getattr(module, self.name + "_v")
        weight_mat = self.reshape_weight_to_matrix(weight)
        if do_power_iteration:
            # The buffers are updated in place, outside autograd: they are the power method's state.
            with fa.no_grad():
                for _ in range(self.n_power_iterations):
                    v.copy_(F.normalize(weight_mat.transpose(0, 1) @ u, dim=0, eps=self.eps))
                    u.copy_(F.normalize(weight_mat @ v, dim=0, eps=self.eps))
            u, v = u.clone(), v.clone()
        sigma = (u * (weight_mat @ v)).sum()
        return weight / sigma

    def remove(self, module: Module) -> None:
        with fa.no_grad():
            weight = self.compute_weight(module, do_power_iteration=False)
        delattr(module, self.name)
        delattr(module, self.name + "_u")
        delattr(module, self.name + "_v")
        delattr(module, self.name + "_orig")
        module.register_parameter(self.name, Parameter(weight.detach()))

    def __call__(self, module: Module, inputs: Any) -> None:
        setattr(module, self.name, self.compute_weight(module, do_power_iteration=module.training))

    @staticmethod
    def apply(module: Module, name: str, n_power_iterations: int, dim: int, eps: float) -> SpectralNorm:
        for hook in module._forward_pre_hooks.values():
            if isinstance(hook, SpectralNorm) and hook.name == name:
                raise FlambeauError(
                    f"[spectral_norm] Cannot register two spectral_norm hooks on the same parameter {name}"
                )
        fn = SpectralNorm(name, n_power_iterations, dim, eps)
        weight = module._parameters.get(name)
        if weight is None:
            raise FlambeauError(f"[spectral_norm] Module '{type(module).__name__}' has no parameter named '{name}'")
        with fa.no_grad():
            h, w = fn.reshape_weight_to_matrix(weight).shape
            u = F.normalize(fc.randn(h, dtype=weight.dtype), dim=0, eps=fn.eps)
            v = F.normalize(fc.randn(w, dtype=weight.dtype), dim=0, eps=fn.eps)
        delattr(module, fn.name)
        module.register_parameter(fn.name + "_orig", weight)
        # A plain attribute until the first forward recomputes it (as PyTorch: not in the state_dict).
        setattr(module, fn.name, weight.detach())
        module.register_buffer(fn.name + "_u", u)
        module.register_buffer(fn.name + "_v", v)
        module.register_forward_pre_hook(fn)
        return fn


def spectral_norm(
    module: Module, name: str = "weight", n_power_iterations: int = 1, eps: float = 1e-12, dim: int | None = None
) -> Module:
    r"""Divides ``module.<name>`` by its spectral norm, estimated by power iteration (hook-based form).

    ``dim`` is the output dim (default 1 for ConvTranspose, else 0).

    Example:
        >>> import flambeau_nn as nn
        >>> sorted(spectral_norm(nn.Linear(4, 3)).state_dict())
        ['bias', 'weight_orig', 'weight_u', 'weight_v']
    """
    if dim is None:
        dim = 1 if isinstance(module, _CONV_TRANSPOSE) else 0
    SpectralNorm.apply(module, name, n_power_iterations, dim, eps)
    return module


def remove_spectral_norm(module: Module, name: str = "weight") -> Module:
    r"""Undoes ``spectral_norm``: ``module.<name>`` is a plain parameter again (the normalized value).

    Example:
        >>> import flambeau_nn as nn
        >>> m = nn.utils.spectral_norm(nn.Linear(4, 3))
        >>> "weight_orig" in dict(m.named_parameters())
        True
        >>> m = nn.utils.remove_spectral_norm(m)
        >>> [name for name, _ in m.named_parameters()]
        ['bias', 'weight']
    """
    hook = pop_pre_hook(module, SpectralNorm, name)
    if hook is not None:
        hook.remove(module)
        return module
    raise FlambeauError(f"[remove_spectral_norm] spectral_norm of '{name}' not found in {module}")
