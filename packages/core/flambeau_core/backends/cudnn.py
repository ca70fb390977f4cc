"""``flambeau.backends.cudnn``: PyTorch's cuDNN flags (``torch.backends.cudnn``).

flambeau's CUDA kernels do not use cuDNN, so :func:`is_available` is False and
:func:`version` None. The flags (``enabled``, ``benchmark``, ``deterministic``,
``allow_tf32``, ``benchmark_limit``) are kept so that programs which set and
read them run unchanged; no flambeau kernel consults them (Note [Backend settings]).

Example:
    >>> import flambeau_core as fc
    >>> fc.backends.cudnn.benchmark = True
    >>> fc.backends.cudnn.benchmark
    True
    >>> fc.backends.cudnn.benchmark = False
"""

from __future__ import annotations

import contextlib
import sys
from collections.abc import Iterator

from flambeau_core.backends._settings import make_settings_module, set_flags

enabled: bool
benchmark: bool
deterministic: bool
allow_tf32: bool
benchmark_limit: int | None


def is_available() -> bool:
    """False: flambeau does not use cuDNN."""
    return False


def version() -> int | None:
    """None: no cuDNN library is loaded."""
    return None


def is_acceptable(tensor: object) -> bool:
    """False: no tensor goes to cuDNN."""
    return False


@contextlib.contextmanager
def flags(
    enabled: bool | None = None,
    benchmark: bool | None = None,
    benchmark_limit: int | None = None,
    deterministic: bool | None = None,
    allow_tf32: bool | None = None,
) -> Iterator[None]:
    """Context manager: sets the given flags inside the block (None keeps a flag), restores them after."""
    with set_flags(
        sys.modules[__name__],
        enabled=enabled,
        benchmark=benchmark,
        benchmark_limit=benchmark_limit,
        deterministic=deterministic,
        allow_tf32=allow_tf32,
    ):
        yield


make_settings_module(
    __name__,
    {
        "enabled": (True, (bool,)),
        "benchmark": (False, (bool,)),
        "deterministic": (False, (bool,)),
        "allow_tf32": (True, (bool,)),
        "benchmark_limit": (None, (int, type(None))),
    },
)
