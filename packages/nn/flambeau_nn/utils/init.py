"""``skip_init`` (``torch.nn.utils.init``)."""

from __future__ import annotations

import inspect
from typing import Any

from flambeau_core import FlambeauError

from flambeau_nn.modules.module import Module

__all__ = ["skip_init"]


def skip_init(module_cls: type[Module], *args: Any, **kwargs: Any) -> Module:
    r"""Builds ``module_cls(*args, **kwargs)`` whose parameters' values are not to be relied on.

    PyTorch builds the module on the meta device and allocates it uninitialized;
    flambeau has no meta device, so the module is built on ``device`` as usual
    (its parameters then hold their initial values, which a caller of
    ``skip_init`` overwrites anyway). As PyTorch, the class must take ``device``.

    Example:
        >>> import flambeau_nn as nn
        >>> tuple(skip_init(nn.Linear, 5, 1).weight.shape)
        (1, 5)
    """
    if not (isinstance(module_cls, type) and issubclass(module_cls, Module)):
        raise FlambeauError(f"[skip_init] Expected a Module; got {module_cls}")
    if "device" not in inspect.signature(module_cls).parameters:
        raise FlambeauError("[skip_init] Module must support a 'device' arg to skip initialization")
    kwargs.setdefault("device", "cpu")
    return module_cls(*args, **kwargs)
