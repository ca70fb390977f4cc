"""``flambeau.amp``: automatic mixed precision (``torch.amp``): ``autocast`` regions, ``GradScaler``, and
``custom_fwd``/``custom_bwd`` for custom autograd Functions."""

from flambeau_core.amp.autocast_mode import (
    autocast,
    get_autocast_dtype,
    is_autocast_available,
    is_autocast_enabled,
)
from flambeau_core.amp.custom_functions import custom_bwd, custom_fwd
from flambeau_core.amp.grad_scaler import GradScaler

__all__ = [
    "autocast",
    "GradScaler",
    "is_autocast_available",
    "is_autocast_enabled",
    "get_autocast_dtype",
    "custom_fwd",
    "custom_bwd",
]
