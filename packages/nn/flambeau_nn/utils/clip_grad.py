"""Gradient clipping: ``clip_grad_norm_``, ``clip_grad_value_``, ``get_total_norm``, ``clip_grads_with_norm_``.

Every function works on whole gradient tensors with core ops: no per-element
Python, and no ``.item()`` sync unless ``error_if_nonfinite`` asks for one (the
clip factor stays a tensor). ``foreach`` is accepted for PyTorch's signature;
the result is the same either way (core has no grouped foreach kernels for these).

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

import warnings
from collections.abc import Iterable

import flambeau_autograd as fa
import flambeau_core as fc
from flambeau_core import FlambeauError, Tensor

__all__ = ["clip_grad_norm_", "clip_grad_norm", "clip_grad_value_", "get_total_norm", "clip_grads_with_norm_"]

_TensorOrTensors = Tensor | Iterable[Tensor]


def _as_list(tensors: _TensorOrTensors) -> list[Tensor]:
    return [tensors] if isinstance(tensors, Tensor) else list(tensors)


def get_total_norm(
    tensors: _TensorOrTensors,
    norm_type: float = 2.0,
    error_if_nonfinite: bool = False,
    foreach: bool | None = None,
) -> Tensor:
    r"""The ``norm_type``-norm of all ``tensors`` together, as if concatenated into one vector (a 0-d tensor).

    Example:
        >>> import flambeau_core as fc
        >>> get_total_norm([fc.tensor([3.0]), fc.tensor([4.0])]).item()
        5.0
    """
    tensors = _as_list(tensors)
    norm_type = float(norm_type)
    if not tensors:
        return fc.tensor(0.0)
    for t in tensors:
        if not isinstance(t, Tensor):
            raise TypeError(f"[get_total_norm] expected Tensors, got {type(t).__name__}")
    with fa.no_grad():
        norms = [fc.linalg.vector_norm(t, norm_type) for t in tensors]
        dtype = norms[0].dtype
        total = fc.linalg.vector_norm(fc.stack([n.to(dtype) for n in norms]), norm_type)
    if error_if_nonfinite and not bool(fc.isfinite(total).item()):
        raise FlambeauError(
            f"[get_total_norm] The total norm of order {norm_type} for gradients from `parameters` is non-finite, "
            "so it cannot be clipped. To disable this error and scale the gradients by the non-finite norm anyway, "
            "set `error_if_nonfinite=False`"
        )
    return total


def clip_grads_with_norm_(
    parameters: _TensorOrTensors, max_norm: float, total_norm: Tensor, foreach: bool | None = None
) -> None:
    r"""Scales the gradients of ``parameters`` in place by ``min(1, max_norm / (total_norm + 1e-6))``.

    Example:
        >>> import flambeau_core as fc
        >>> import flambeau_nn as nn
        >>> p = nn.Parameter(fc.zeros(1)); p.grad = fc.tensor([4.0])
        >>> clip_grads_with_norm_([p], 2.0, fc.tensor(4.0)); round(p.grad.item(), 4)
        2.0
    """
    grads = [p.grad for p in _as_list(parameters) if p.grad is not None]
    if not grads:
        return
    total = total_norm if isinstance(total_norm, Tensor) else fc.tensor(float(total_norm))
    with fa.no_grad():
        # PyTorch's rule: the factor is applied also when it is 1 (no branch on the value, so no sync).
        coef = (float(max_norm) / (total + 1e-6)).clamp_max(1.0)
        for g in grads:
            g.mul_(coef.to(g.dtype))


def clip_grad_norm_(
    parameters: _TensorOrTensors,
    max_norm: float,
    norm_type: float = 2.0,
    error_if_nonfinite: bool = False,
    foreach: bool | None = None,
) -> Tensor:
    r"""Scales the gradients in place so that their joint norm is at most ``max_norm``.

    The norm is taken over all gradients together, as if concatenated into
    one vector. Returns that total norm (before clipping), a 0-d tensor.
    ``error_if_nonfinite=True`` raises if it is NaN or infinite.

    Example:
        >>> import flambeau_core as fc
        >>> import flambeau_nn as nn
        >>> w = nn.Parameter(fc.zeros(2))
        >>> w.grad = fc.tensor([3.0, 4.0])
        >>> nn.utils.clip_grad_norm_([w], max_norm=1.0).item()
        5.0
        >>> [round(v, 4) for v in w.grad.tolist()]
        [0.6, 0.8]
    """
    params = _as_list(parameters)
    grads = [p.grad for p in params if p.grad is not None]
    if not grads:
        return fc.tensor(0.0)
    total = get_total_norm(grads, norm_type, error_if_nonfinite, foreach)
    clip_grads_with_norm_(params, max_norm, total, foreach)
    return total


def clip_grad_norm(
    parameters: _TensorOrTensors,
    max_norm: float,
    norm_type: float = 2.0,
    error_if_nonfinite: bool = False,
    foreach: bool | None = None,
) -> Tensor:
    """Deprecated spelling of ``clip_grad_norm_`` (warns, then clips).

    Example:
        >>> import warnings
        >>> import flambeau_core as fc
        >>> import flambeau_nn as nn
        >>> w = nn.Parameter(fc.zeros(2))
        >>> w.grad = fc.tensor([3.0, 4.0])
        >>> with warnings.catch_warnings(record=True) as caught:
        ...     warnings.simplefilter("always")
        ...     total = nn.utils.clip_grad_norm([w], max_norm=10.0)
        >>> caught[0].category.__name__, total.item(), w.grad.tolist()
        ('FutureWarning', 5.0, [3.0, 4.0])
    """
    warnings.warn(
        "`flambeau_nn.utils.clip_grad_norm` is now deprecated in favor of `flambeau_nn.utils.clip_grad_norm_`.",
        FutureWarning,
        stacklevel=2,
    )
    return clip_grad_norm_(parameters, max_norm, norm_type, error_if_nonfinite, foreach)


def clip_grad_value_(parameters: _TensorOrTensors, clip_value: float, foreach: bool | None = None) -> None:
    """Clamps every gradient element to ``[-clip_value, clip_value]`` in place.

    Example:
        >>> import flambeau_core as fc
        >>> import flambeau_nn as nn
        >>> p = nn.Parameter(fc.zeros(2)); p.grad = fc.tensor([-3.0, 0.5])
        >>> clip_grad_value_(p, 1.0); p.grad.tolist()
        [-1.0, 0.5]
    """
    clip_value = float(clip_value)
    with fa.no_grad():
        for p in _as_list(parameters):
            if p.grad is not None:
                p.grad.clamp_(-clip_value, clip_value)
