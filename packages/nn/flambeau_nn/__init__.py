"""flambeau-nn: modules, layers, losses, ``functional``, ``init``, ``optim`` and safetensors checkpoints.

PyTorch's names and semantics, in pure Python over flambeau-core's ops and
flambeau-autograd's gradients.

Example:
    >>> import flambeau_core as fc
    >>> import flambeau_nn as nn
    >>> model = nn.Sequential(nn.Linear(4, 8), nn.ReLU(), nn.Linear(8, 3))
    >>> loss = nn.CrossEntropyLoss()(model(fc.randn(5, 4)), fc.tensor([0, 1, 2, 0, 1]))
    >>> loss.backward()
    >>> model[0].weight.grad.shape
    flambeau.Size([8, 4])
"""

from __future__ import annotations

import flambeau_autograd  # noqa: F401  (registers the autograd layer: Parameters need gradients)
import flambeau_core  # noqa: F401  (loads the core library first)

from flambeau_nn import _torch_forms, functional, init, optim, utils
from flambeau_nn import modules as _modules
from flambeau_nn.modules import *  # noqa: F403  (the layers and losses; their list is modules.__all__)
from flambeau_nn.parameter import Buffer, Parameter, UninitializedBuffer, UninitializedParameter
from flambeau_nn.serialization import load, save

_torch_forms.install_tensor_methods()  # Tensor.hardshrink, Tensor.prelu

try:
    from importlib.metadata import version as _version

    __version__ = _version("flambeau-nn")
except Exception:  # running from a source tree
    __version__ = "0+unknown"

__all__ = [
    "Parameter",
    "Buffer",
    "UninitializedParameter",
    "UninitializedBuffer",
    *_modules.__all__,
    "functional",
    "init",
    "optim",
    "utils",
    "save",
    "load",
]
