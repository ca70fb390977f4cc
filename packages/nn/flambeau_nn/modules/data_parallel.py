"""``DataParallel`` (single-process) and the deprecated ``Container``."""

from __future__ import annotations

import warnings
from typing import Any

from flambeau_core import FlambeauError

from flambeau_nn.modules.module import Module

__all__ = ["DataParallel", "Container"]


class DataParallel(Module):
    r"""PyTorch's ``DataParallel`` where there is at most one device: ``forward`` calls ``module``.

    ``state_dict`` keys are prefixed ``module.`` as PyTorch's, so checkpoints of ``DataParallel``
    models load. Splitting a batch over several devices in one process is not supported: use
    ``flambeau.distributed``'s ``DistributedDataParallel`` (what PyTorch recommends too).

    Example:
        >>> import flambeau_core as fc
        >>> import flambeau_nn as nn
        >>> model = nn.DataParallel(nn.Linear(3, 2))
        >>> model(fc.ones(4, 3)).shape, list(model.state_dict())
        (flambeau.Size([4, 2]), ['module.weight', 'module.bias'])
    """

    def __init__(self, module: Module, device_ids: Any = None, output_device: Any = None, dim: int = 0) -> None:
        super().__init__()
        if not isinstance(module, Module):
            raise TypeError(f"[DataParallel] module must be a Module, got {type(module).__name__}")
        ids = list(device_ids) if device_ids is not None else []
        if len(ids) > 1:
            raise FlambeauError(
                f"[DataParallel] replicating over several devices ({ids}) in one process is not supported; "
                "use DistributedDataParallel from flambeau.distributed (one process per device)"
            )
        self.module = module
        self.device_ids = ids
        self.output_device = output_device
        self.dim = dim

    def forward(self, *inputs: Any, **kwargs: Any) -> Any:
        """Calls the wrapped module on ``inputs`` and ``kwargs`` as they are, returning its output.

        Note: flambeau runs the module on one device (no scatter and gather); PyTorch splits the batch along ``dim``
        over ``device_ids``.

        Example:
            >>> import flambeau_core as fc
            >>> import flambeau_nn as nn
            >>> nn.DataParallel(nn.Linear(3, 2))(fc.ones(4, 3)).shape
            flambeau.Size([4, 2])
        """
        return self.module(*inputs, **kwargs)


class Container(Module):
    """Deprecated (as in PyTorch): a ``Module`` whose keyword arguments become its submodules.

    Example:
        >>> import warnings
        >>> import flambeau_nn as nn
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("ignore")
        ...     c = nn.Container(fc=nn.Linear(2, 2))
        >>> list(c.state_dict())
        ['fc.weight', 'fc.bias']
    """

    def __init__(self, **kwargs: Any) -> None:
        super().__init__()
        warnings.warn(
            "`nn.Container` is deprecated. All of its functionality is now implemented in `nn.Module`. Subclass "
            "that instead.",
            FutureWarning,
            stacklevel=2,
        )
        for key, value in kwargs.items():
            self.add_module(key, value)
