"""flambeau-interop: zero-copy NumPy and DLPack exchange, and PyTorch bridges.

Importing this package attaches the protocol methods to core's ``Tensor``:
``numpy()``, ``__array__``, ``__array_interface__``, ``__dlpack__`` and
``__dlpack_device__``. Core works without it (it only knows how to wrap
external memory and exports the Python buffer protocol).

Example:
    >>> import numpy as np
    >>> import flambeau_interop as fi
    >>> a = np.ones(3, dtype=np.float32)
    >>> t = fi.from_numpy(a)          # no copy
    >>> t.numpy() is not a and np.shares_memory(t.numpy(), a)
    True
"""

from __future__ import annotations

from importlib.metadata import PackageNotFoundError as _PNF
from importlib.metadata import version as _version

import flambeau_core  # (loads libflambeau_core.so and registers Tensor first)

from flambeau_interop import _C  # noqa: F401
from flambeau_interop._C import from_dlpack, from_numpy

flambeau_core.array_api._register_dlpack_importer(from_dlpack)  # array_api.from_dlpack/asarray use it


def to_dlpack(tensor: flambeau_core.Tensor) -> object:
    """to_dlpack(tensor) -> PyCapsule

    A DLPack capsule of ``tensor`` (its ``__dlpack__()``): another library's ``from_dlpack`` reads the same
    memory without a copy. A capsule is consumed by one import. PyTorch's legacy spelling; new code passes
    the tensor itself to ``from_dlpack``.

    Example:
        >>> import flambeau_core as fc
        >>> import flambeau_interop as fi
        >>> x = fc.arange(3.0)
        >>> y = fi.from_dlpack(fi.to_dlpack(x))
        >>> y.tolist(), y.data_ptr() == x.data_ptr()
        ([0.0, 1.0, 2.0], True)
    """
    if not isinstance(tensor, flambeau_core.Tensor):
        raise TypeError(f"[to_dlpack] expected a Tensor, got {type(tensor).__name__}")
    return tensor.__dlpack__()


try:
    __version__ = _version("flambeau-interop")
except _PNF:  # running from a source tree
    __version__ = "0+unknown"

__all__ = ["from_dlpack", "from_numpy", "to_dlpack", "serialization", "torch_bridge"]


def __getattr__(name: str):
    # Imported on first use: torch_bridge imports torch lazily; serialization (PyTorch's
    # checkpoint format: save/load, the weights_only unpickler) is not needed by the protocols.
    if name in ("torch_bridge", "serialization"):
        import importlib

        return importlib.import_module(f"flambeau_interop.{name}")
    raise AttributeError(f"module 'flambeau_interop' has no attribute {name!r}")
