"""``flambeau.random``: the default CPU generator's seed and state (``torch.random``).

``get_rng_state()`` returns the state as a uint8 tensor; ``set_rng_state(state)``
restores it, after which the same random numbers come again. ``fork_rng()`` is a
context manager that restores the state on exit.

Note [Generator state from Python]: the generator (Note [Random numbers]) is the
pair (seed, offset), and draw ``i`` depends only on ``seed + G * (offset + i + 1)``
(G the SplitMix64 increment), so (seed, offset) draws exactly what
(seed + G * offset, 0) draws. ``set_rng_state`` therefore seeds the generator
with ``seed + G * offset``. ``get_rng_state`` reads the offset by drawing one
full 64-bit number (``randint`` over all of int64), inverting SplitMix64's
finalizer to recover ``seed + G * (offset + 1)``, and re-seeding the generator
at the point before that draw, so reading the state does not move the stream.
The state's bytes are (seed, offset), two little-endian uint64 (16 bytes, where
PyTorch's Mersenne Twister state has 5056): ``initial_seed()`` still answers the
seed the program set. A random op run by another thread while
``get_rng_state`` runs may be replayed. A C++ accessor of the offset would make
this a plain read (see ``docs/core.md``).

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

_MASK = (1 << 64) - 1
_GOLDEN = 0x9E3779B97F4A7C15  # Generator::draw's increment
_GOLDEN_INV = pow(_GOLDEN, -1, 1 << 64)
_MUL1_INV = pow(0xBF58476D1CE4E5B9, -1, 1 << 64)
_MUL2_INV = pow(0x94D049BB133111EB, -1, 1 << 64)
_STATE_BYTES = 16

# (the seed the generator holds, the seed the program set, the offset that seed stands for)
_rebased: tuple[int, int, int] | None = None


def _unshift_xor(x: int, k: int) -> int:
    y = x
    for _ in range(64 // k + 1):
        y = x ^ (y >> k)
    return y


def _unmix(bits: int) -> int:
    """The inverse of SplitMix64's finalizer (Generator::draw without the counter step)."""
    z = _unshift_xor(bits, 31)
    z = (z * _MUL2_INV) & _MASK
    z = _unshift_xor(z, 27)
    z = (z * _MUL1_INV) & _MASK
    return _unshift_xor(z, 30)


def _logical() -> tuple[int, int]:
    """(the seed the program set, the offset the generator's own offset 0 stands for)."""
    held = _C.initial_seed()
    if _rebased is not None and _rebased[0] == held:
        return _rebased[1], _rebased[2]
    return held, 0


def _rebase(seed: int, offset: int) -> None:
    global _rebased
    held = (seed + _GOLDEN * offset) & _MASK
    _C.manual_seed(held)
    _rebased = (held, seed, offset)


def initial_seed() -> int:
    """The seed of the default CPU generator (the one set last, by ``manual_seed``, ``seed`` or a state).

    Example:
        >>> import flambeau_core as fc
        >>> fc.manual_seed(7)
        >>> fc.initial_seed()
        7
    """
    return _logical()[0]


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
    """The default CPU generator's state as a uint8 tensor (Note [Generator state from Python]).

    Example:
        >>> import flambeau_core as fc
        >>> fc.get_rng_state().dtype == fc.uint8
        True
    """
    seed, base_offset = _logical()
    held = _C.initial_seed()
    value = _C.randint(-(1 << 63), (1 << 63) - 1, (1,)).item()
    # randint (random_) maps the draw to [low, high) with floor(bits * (2^64 - 1) / 2^64), i.e. bits - 1.
    bits = ((value + (1 << 63)) + 1) & _MASK
    before = (_unmix(bits) - _GOLDEN) & _MASK  # seed + G * offset, the stream before the draw
    offset = (base_offset + ((before - held) * _GOLDEN_INV)) & _MASK
    _rebase(seed, offset)
    state = seed.to_bytes(8, "little") + offset.to_bytes(8, "little")
    return _C.frombuffer(bytearray(state), dtype=_C.uint8).clone()


def set_rng_state(new_state: _C.Tensor) -> None:
    """Restores the default CPU generator's state from :func:`get_rng_state`'s tensor.

    Example:
        >>> import flambeau_core as fc
        >>> s = fc.get_rng_state(); a = fc.randn(2)
        >>> fc.set_rng_state(s); bool((fc.randn(2) == a).all())
        True
    """
    if not isinstance(new_state, _C.Tensor):
        raise TypeError(f"[set_rng_state] expected a uint8 Tensor, got {type(new_state).__name__}")
    if new_state.dtype != _C.uint8:
        raise TypeError(f"[set_rng_state] expected a uint8 Tensor (get_rng_state()), got dtype {new_state.dtype}")
    if new_state.dim() != 1 or new_state.numel() != _STATE_BYTES:
        raise _C.FlambeauError(
            f"[set_rng_state] expected the {_STATE_BYTES}-byte state that get_rng_state() returns, "
            f"got shape {tuple(new_state.shape)}"
        )
    raw = bytes(new_state.to("cpu").tolist())
    _rebase(int.from_bytes(raw[:8], "little"), int.from_bytes(raw[8:], "little"))


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
