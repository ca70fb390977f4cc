"""Utilities for modules and parameters (``flambeau_nn.utils``, PyTorch's ``torch.nn.utils``).

Gradient clipping, parameters as one vector, weight and spectral
normalization (hook-based and as parametrizations), ``parametrize``,
``prune``, batch-norm fusion, ``skip_init``, conv weight memory formats,
packed sequences (``rnn``) and activation ``checkpoint``ing
(PyTorch's ``torch.utils.checkpoint``, also ``fb.utils.checkpoint``).

Example:
    >>> import flambeau_nn as nn
    >>> m = nn.utils.parametrizations.weight_norm(nn.Linear(4, 3))
    >>> sorted(m.state_dict())
    ['bias', 'parametrizations.weight.original0', 'parametrizations.weight.original1']
"""

from __future__ import annotations

from flambeau_nn.utils import (
    checkpoint,
    clip_grad,
    convert_parameters,
    fusion,
    init,
    memory_format,
    parametrizations,
    parametrize,
    prune,
    rnn,
    stateless,
)
from flambeau_nn.utils.clip_grad import (
    clip_grad_norm,
    clip_grad_norm_,
    clip_grad_value_,
    clip_grads_with_norm_,
    get_total_norm,
)
from flambeau_nn.utils.convert_parameters import parameters_to_vector, vector_to_parameters
from flambeau_nn.utils.fusion import (
    fuse_conv_bn_eval,
    fuse_conv_bn_weights,
    fuse_linear_bn_eval,
    fuse_linear_bn_weights,
)
from flambeau_nn.utils.init import skip_init
from flambeau_nn.utils.memory_format import convert_conv2d_weight_memory_format, convert_conv3d_weight_memory_format
from flambeau_nn.utils.spectral_norm import remove_spectral_norm, spectral_norm
from flambeau_nn.utils.weight_norm import remove_weight_norm, weight_norm

__all__ = [
    "clip_grad",
    "clip_grad_norm",
    "clip_grad_norm_",
    "clip_grad_value_",
    "clip_grads_with_norm_",
    "get_total_norm",
    "convert_parameters",
    "parameters_to_vector",
    "vector_to_parameters",
    "weight_norm",
    "remove_weight_norm",
    "spectral_norm",
    "remove_spectral_norm",
    "fusion",
    "fuse_conv_bn_eval",
    "fuse_conv_bn_weights",
    "fuse_linear_bn_eval",
    "fuse_linear_bn_weights",
    "memory_format",
    "convert_conv2d_weight_memory_format",
    "convert_conv3d_weight_memory_format",
    "init",
    "skip_init",
    "parametrize",
    "parametrizations",
    "prune",
    "rnn",
    "stateless",
    "checkpoint",  # PyTorch's torch.utils.checkpoint (fb.utils.checkpoint)
]
