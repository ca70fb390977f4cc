"""Converting convolution weights to a memory format (``torch.nn.utils.memory_format``)."""

from __future__ import annotations

from typing import Any

from flambeau_nn.modules.module import Module
from flambeau_nn.parameter import Parameter

__all__ = ["convert_conv2d_weight_memory_format", "convert_conv3d_weight_memory_format"]


def _convert(module: Module, memory_format: Any, prefixes: tuple[str, ...]) -> Module:
    if type(module).__name__.startswith(prefixes) and getattr(module, "weight", None) is not None:
        weight = module.weight
        # A new Parameter with the new strides (flambeau's Parameter has no settable .data): an optimizer built
        # before the conversion must be built again, as after PyTorch's conversion of a module's parameters.
        module.weight = Parameter(weight.detach().contiguous(memory_format=memory_format), weight.requires_grad)
    for child in module.children():
        _convert(child, memory_format, prefixes)
    return module


def convert_conv2d_weight_memory_format(module: Module, memory_format: Any) -> Module:
    r"""Gives the weights of every ``Conv2d``/``ConvTranspose2d`` in ``module`` the strides of ``memory_format``.

    Example:
        >>> import flambeau_core as fc
        >>> import flambeau_nn as nn
        >>> m = convert_conv2d_weight_memory_format(nn.Sequential(nn.Conv2d(2, 4, 3)), fc.channels_last)
        >>> m[0].weight.is_contiguous(memory_format=fc.channels_last)
        True
    """
    return _convert(module, memory_format, ("Conv2d", "ConvTranspose2d"))


def convert_conv3d_weight_memory_format(module: Module, memory_format: Any) -> Module:
    r"""Gives the weights of every ``Conv3d``/``ConvTranspose3d`` in ``module`` the strides of ``memory_format``.

    Example:
        >>> import flambeau_core as fc
        >>> import flambeau_nn as nn
        >>> m = nn.utils.convert_conv3d_weight_memory_format(nn.Sequential(nn.Conv3d(2, 4, 3)), fc.channels_last_3d)
        >>> m[0].weight.is_contiguous(memory_format=fc.channels_last_3d)
        True
    """
    return _convert(module, memory_format, ("Conv3d", "ConvTranspose3d"))
