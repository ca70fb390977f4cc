"""``parameters_to_vector`` and ``vector_to_parameters``: all parameters as one flat vector and back."""

from __future__ import annotations

from collections.abc import Iterable

import flambeau_autograd as fa
import flambeau_core as fc
from flambeau_core import FlambeauError, Tensor

__all__ = ["parameters_to_vector", "vector_to_parameters"]


def _same_device(param: Tensor, device: object, op: str) -> object:
    if not isinstance(param, Tensor):
        raise TypeError(f"[{op}] expected an iterable of Tensors, got an element of type {type(param).__name__}")
    if device is None:
        return param.device
    if param.device != device:
        raise TypeError(f"[{op}] Found two parameters on different devices, this is currently not supported.")
    return device


def parameters_to_vector(parameters: Iterable[Tensor]) -> Tensor:
    r"""Flattens ``parameters`` into one vector (a copy, differentiable with respect to each parameter).

    Example:
        >>> import flambeau_core as fc
        >>> import flambeau_nn as nn
        >>> parameters_to_vector(nn.Linear(2, 3).parameters()).shape
        flambeau.Size([9])
    """
    device = None
    flat = []
    for p in parameters:
        device = _same_device(p, device, "parameters_to_vector")
        flat.append(p.reshape(-1))
    if not flat:
        raise FlambeauError("[parameters_to_vector] expected at least one parameter, got none")
    return fc.cat(flat)


def vector_to_parameters(vec: Tensor, parameters: Iterable[Tensor]) -> None:
    r"""Copies consecutive slices of ``vec`` into ``parameters`` (the inverse of ``parameters_to_vector``).

    Each parameter keeps its identity (optimizers holding it see the new
    values); ``vec`` must have at least as many elements as the parameters.

    Example:
        >>> import flambeau_core as fc
        >>> import flambeau_nn as nn
        >>> m = nn.Linear(1, 1)
        >>> vector_to_parameters(fc.tensor([2.0, 3.0]), m.parameters())
        >>> m.weight.item(), m.bias.item()
        (2.0, 3.0)
    """
    if not isinstance(vec, Tensor):
        raise TypeError(f"[vector_to_parameters] expected Tensor, but got: {type(vec).__name__}")
    params = list(parameters)
    device = None
    total = 0
    for p in params:
        device = _same_device(p, device, "vector_to_parameters")
        total += p.numel()
    # As PyTorch, elements past the parameters' total are ignored.
    if vec.dim() != 1 or vec.numel() < total:
        raise FlambeauError(
            f"[vector_to_parameters] vec must be a 1-D tensor of at least {total} elements (the parameters' total), "
            f"got shape {tuple(vec.shape)}"
        )
    start = 0
    with fa.no_grad():
        for p in params:
            n = p.numel()
            p.copy_(vec[start : start + n].reshape(tuple(p.shape)))
            start += n
