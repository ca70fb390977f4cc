"""``flambeau.random``: the default CPU generator's seed and state (``torch.random``).

``get_rng_state()`` returns the state as a uint8 tensor; ``set_rng_state(state)``
restores it, after which the same random numbers come again. ``fork_rng()`` is a
context manager that restores the state on exit.

The state is the generator's seed and offset (Note [Generator state bytes] in
``src/python/bind_factories.cpp``): 16 bytes, where PyTorch's Mersenne Twister
state has 5056. Reading it draws nothing; ``initial_seed()`` still answers the
seed the program set.

Example:
    >>> import flambeau_core as fc
    >>> fc.manual_seed(0)
    >>> state = fc.random.get_rng_state()
    >>> a = fc.rand(3)
    >>> fc.random.set_rng_state(state)
    >>> bool((fc.rand(3) == a).all())
    True
"""

from __future__ import annotations

import contextlib
import os
import warnings
from collections.abc import Iterable, Iterator
from typing import Any

from flambeau_core import _C
from flambeau_core._device_modules import device_module, manual_seed

__all__ = ["fork_rng", "get_rng_state", "initial_seed", "manual_seed", "seed", "set_rng_state"]


def initial_seed() -> int:
    """The seed of the default CPU generator (the one set last, by ``manual_seed``, ``seed`` or a state).

    Example:
        >>> import flambeau_core as fc
        >>> fc.manual_seed(7)
        >>> fc.initial_seed()
        7
    """
    return _C.initial_seed()


def seed() -> int:
    """Seeds the generators with a non-deterministic 64-bit number (from the OS) and returns it.

    Example:
        >>> import flambeau_core as fc
        >>> s = fc.seed()
        >>> fc.initial_seed() == s
        True
    """
    s = int.from_bytes(os.urandom(8), "little")
    manual_seed(s)
    return s


def get_rng_state() -> _C.Tensor:
    """The default CPU generator's state as a uint8 tensor (its seed and offset); reading it draws nothing.

    Example:
        >>> import flambeau_core as fc
        >>> fc.get_rng_state().dtype == fc.uint8
        True
    """
    return _C._get_rng_state()


def set_rng_state(new_state: _C.Tensor) -> None:
    """Restores the default CPU generator's state from :func:`get_rng_state`'s tensor.

    Example:
        >>> import flambeau_core as fc
        >>> s = fc.get_rng_state(); a = fc.randn(2)
        >>> fc.set_rng_state(s); bool((fc.randn(2) == a).all())
        True
    """
    _C._set_rng_state(new_state)


@contextlib.contextmanager
def fork_rng(
    devices: Iterable[Any] | None = None,
    enabled: bool = True,
    _caller: str = "fork_rng",
    _devices_kw: str = "devices",
    device_type: str = "cuda",
) -> Iterator[None]:
    """Context manager: random numbers drawn inside the block leave the CPU generator's state as it was.

    flambeau-cuda exposes no generator state yet, so device generators are not forked:
    with an available ``device_type`` and ``devices`` not empty, a warning says so.

    Example:
        >>> import flambeau_core as fc
        >>> fc.manual_seed(1)
        >>> with fc.random.fork_rng():
        ...     _ = fc.rand(5)
        >>> a = fc.rand(1); fc.manual_seed(1)
        >>> bool((fc.rand(1) == a).all())
        True
    """
    if not enabled:
        yield
        return
    if device_type != "cpu" and (devices is None or list(devices)):
        try:
            available = device_module(device_type).is_available()
        except ValueError:  # an unknown device type: nothing of it to fork
            available = False
        if available:
            warnings.warn(
                f"[{_caller}] only the CPU generator is forked: flambeau's {device_type} generators "
                f"expose no state yet; pass {_devices_kw}=[] to silence this",
                stacklevel=3,
            )
    state = get_rng_state()
    try:
        yield
    finally:
        set_rng_state(state)
