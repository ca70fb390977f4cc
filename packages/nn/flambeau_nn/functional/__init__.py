"""Stateless functions behind the layers and losses (``flambeau_nn.functional``, PyTorch's ``F``).

Everything here is composed from core ops, so autograd differentiates it
through core's derivative table: no function here has a backward of its own.

Example:
    >>> import flambeau_core as fc
    >>> import flambeau_nn.functional as F
    >>> F.relu(fc.tensor([-1.0, 2.0])).tolist()
    [0.0, 2.0]
"""

from __future__ import annotations

# One module per concept, re-exported here as one namespace (PyTorch's ``F``).
from flambeau_nn.functional import (
    _activation,
    _attention,
    _base,
    _conv,
    _ctc,
    _dispatch,
    _distance,
    _fractional_pool,
    _linear,
    _linear_cross_entropy,
    _loss,
    _multi_head_attention,
    _normalization,
    _pooling,
    _pooling3d,
    _vision,
)
from flambeau_nn.functional._activation import *  # noqa: F403
from flambeau_nn.functional._attention import *  # noqa: F403
from flambeau_nn.functional._base import *  # noqa: F403
from flambeau_nn.functional._conv import *  # noqa: F403
from flambeau_nn.functional._ctc import *  # noqa: F403
from flambeau_nn.functional._dispatch import *  # noqa: F403
from flambeau_nn.functional._distance import *  # noqa: F403
from flambeau_nn.functional._fractional_pool import *  # noqa: F403
from flambeau_nn.functional._linear import *  # noqa: F403
from flambeau_nn.functional._linear_cross_entropy import *  # noqa: F403
from flambeau_nn.functional._loss import *  # noqa: F403
from flambeau_nn.functional._loss import _legacy_reduction  # noqa: F401  (the loss modules use it)
from flambeau_nn.functional._multi_head_attention import *  # noqa: F403
from flambeau_nn.functional._normalization import *  # noqa: F403
from flambeau_nn.functional._pooling import *  # noqa: F403
from flambeau_nn.functional._pooling3d import *  # noqa: F403
from flambeau_nn.functional._vision import *  # noqa: F403

__all__ = [
    *_base.__all__,
    *_linear.__all__,
    *_distance.__all__,
    *_dispatch.__all__,
    *_conv.__all__,
    *_pooling.__all__,
    *_pooling3d.__all__,
    *_fractional_pool.__all__,
    *_vision.__all__,
    *_normalization.__all__,
    *_activation.__all__,
    *_loss.__all__,
    *_ctc.__all__,
    *_linear_cross_entropy.__all__,
    *_attention.__all__,
    *_multi_head_attention.__all__,
]
