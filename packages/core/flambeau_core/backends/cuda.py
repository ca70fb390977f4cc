"""``flambeau.backends.cuda``: PyTorch's CUDA flags (``torch.backends.cuda``).

``matmul.allow_tf32`` (default False), ``matmul.allow_fp16_reduced_precision_reduction``
and ``matmul.allow_bf16_reduced_precision_reduction`` (default True) are kept and read
back as in PyTorch; flambeau's CUDA GEMMs do not consult them yet (Note [Backend
settings]). :func:`is_built` tells whether flambeau-cuda (the CUDA kernels) is installed.

Example:
    >>> import flambeau_core as fc
    >>> fc.backends.cuda.matmul.allow_tf32
    False
"""

from __future__ import annotations

import importlib.util
from typing import Any

_MATMUL_FLAGS = {
    "allow_tf32": False,
    "allow_fp16_reduced_precision_reduction": True,
    "allow_bf16_reduced_precision_reduction": True,
}


class cuBLASModule:
    """``torch.backends.cuda.matmul``: the cuBLAS flags (bools; an unknown name raises AttributeError)."""

    def __init__(self) -> None:
        object.__setattr__(self, "_values", dict(_MATMUL_FLAGS))

    def __getattr__(self, name: str) -> Any:
        values = object.__getattribute__(self, "_values")
        if name in values:
            return values[name]
        raise AttributeError(f"[backends.cuda.matmul] unknown attribute '{name}'; expected one of {list(values)}")

    def __setattr__(self, name: str, value: Any) -> None:
        if name not in self._values:
            raise AttributeError(
                f"[backends.cuda.matmul] unknown attribute '{name}'; expected one of {list(self._values)}"
            )
        if not isinstance(value, bool):
            raise TypeError(f"[backends.cuda.matmul.{name}] expects a bool, got {type(value).__name__}")
        self._values[name] = value


matmul = cuBLASModule()


def is_built() -> bool:
    """True if flambeau-cuda (flambeau's CUDA kernels, built where nvcc is) is installed.

    Says nothing about a GPU being present: ``flambeau.cuda.is_available()`` does.
    """
    return importlib.util.find_spec("flambeau_cuda") is not None
