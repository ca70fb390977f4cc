"""``flambeau.backends.mps``: Apple's Metal backend (``torch.backends.mps``); flambeau has none."""

from __future__ import annotations


def is_available() -> bool:
    """False: flambeau has no Metal (MPS) backend."""
    return False


def is_built() -> bool:
    """False: flambeau is never built with Metal (MPS)."""
    return False
