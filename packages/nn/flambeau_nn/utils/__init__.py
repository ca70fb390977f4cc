"""Gradient clipping (``flambeau_nn.utils``, PyTorch's ``torch.nn.utils``).

Both functions work on whole gradient tensors with core ops: no per-element
Python, and no ``.item()`` sync (the clip factor stays a tensor).

Example:
    >>> import flambeau_core as fc
    >>> import flambeau_nn as nn
    >>> p = nn.Parameter(fc.zeros(2))
    >>> (p * fc.tensor([3.0, 4.0])).sum().backward()
    >>> round(nn.utils.clip_grad_norm_([p], max_norm=1.0).item(), 4)
    5.0
    >>> [round(g, 4) for g in p.grad.tolist()]
    [0.6, 0.8]
"""

from __future__ import annotations

import math
from collections.abc import Iterable

import flambeau_autograd as fa
import flambeau_core as fc
from flambeau_core import FlambeauError, Tensor

from flambeau_nn.utils import rnn

__all__ = ["clip_grad_norm_", "clip_grad_value_", "rnn"]


def _as_list(parameters: Tensor | Iterable[Tensor]) -> list[Tensor]:
    return [parameters] if isinstance(parameters, Tensor) else list(parameters)


def clip_grad_norm_(
    parameters: Tensor | Iterable[Tensor],
    max_norm: float,
    norm_type: float = 2.0,
    error_if_nonfinite: bool = False,
) -> Tensor:
    r"""Scales the gradients in place so that their joint norm is at most ``max_norm``.

    The norm is taken over all gradients together, as if concatenated into
    one vector. Returns that total norm (before clipping), a 0-d tensor.
    """
    grads = [p.grad for p in _as_list(parameters) if p.grad is not None]
    max_norm, norm_type = float(max_norm), float(norm_type)
    if not grads:
        return fc.zeros(())
    with fa.no_grad():
        if norm_type == math.inf:
            norms = [g.abs().max() for g in grads]
            total = fc.stack(norms).max() if len(norms) > 1 else norms[0]
        elif norm_type <= 0:
            raise FlambeauError(f"[clip_grad_norm_] norm_type must be positive or inf, got {norm_type}")
        else:
            powered = [(g.abs() ** norm_type).sum() for g in grads]
            total = fc.stack(powered).sum() ** (1.0 / norm_type)
        if error_if_nonfinite and not math.isfinite(total.item()):
            raise FlambeauError(
                f"[clip_grad_norm_] the total norm of order {norm_type} for gradients from `parameters` is "
                "non-finite, so it cannot be clipped. To disable this error and scale the gradients by the "
                "non-finite norm anyway, set `error_if_nonfinite=False`"
            )
        # PyTorch's rule: multiply by min(1, max_norm / (total + 1e-6)), also when not clipping.
        coef = fc.minimum(max_norm / (total + 1e-6), fc.ones((), dtype=total.dtype))
        for g in grads:
            g.mul_(coef.to(g.dtype))
    return total


def clip_grad_value_(parameters: Tensor | Iterable[Tensor], clip_value: float) -> None:
    """Clamps every gradient element to ``[-clip_value, clip_value]`` in place."""
    clip_value = float(clip_value)
    with fa.no_grad():
        for p in _as_list(parameters):
            if p.grad is not None:
                g = p.grad
                hi = fc.full((), clip_value, dtype=g.dtype)
                g.copy_(fc.maximum(fc.minimum(g, hi), -hi))
