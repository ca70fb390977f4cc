"""Conversions between NumPy arrays and flambeau tensors, without importing NumPy.

flambeau-data must not require NumPy, yet it accepts NumPy datasets. NumPy is
only touched when an object that comes from NumPy is seen, and by then NumPy is
necessarily importable.
"""

from __future__ import annotations

import sys
from typing import Any

import flambeau_core as fc

# NumPy dtype name -> flambeau dtype (the ones flambeau-core supports).
_NUMPY_TO_CORE = {
    "bool": "bool",
    "uint8": "uint8",
    "int8": "int8",
    "int16": "int16",
    "int32": "int32",
    "int64": "int64",
    "float16": "float16",
    "float32": "float32",
    "float64": "float64",
}


def is_numpy_array(obj: Any) -> bool:
    """True for a ``numpy.ndarray`` (checked without importing NumPy)."""
    np = sys.modules.get("numpy")
    return np is not None and isinstance(obj, np.ndarray)


def is_numpy_scalar(obj: Any) -> bool:
    """True for a NumPy scalar such as ``numpy.float32(1.0)``."""
    np = sys.modules.get("numpy")
    return np is not None and isinstance(obj, np.generic)


def core_dtype_for(np_dtype: Any, what: str) -> Any:
    name = _NUMPY_TO_CORE.get(str(np_dtype))
    if name is None:
        raise TypeError(
            f"[{what}] NumPy dtype {np_dtype} has no flambeau equivalent; supported: {', '.join(_NUMPY_TO_CORE)}"
        )
    return getattr(fc, name)


def numpy_to_tensor(array: Any, what: str = "as_tensor") -> fc.Tensor:
    """A flambeau tensor viewing ``array``'s memory (a C-contiguous copy first if needed).

    The tensor keeps the array alive through the buffer protocol, so no data is
    copied for contiguous arrays.

    Example:
        >>> import numpy as np
        >>> numpy_to_tensor(np.arange(6, dtype=np.float32).reshape(2, 3)).shape
        flambeau.Size([2, 3])
    """
    import numpy as np

    dtype = core_dtype_for(array.dtype, what)
    array = np.ascontiguousarray(array)
    if not array.flags.writeable:
        array = array.copy()
    shape = tuple(int(s) for s in array.shape)
    if array.size == 0:
        return fc.empty(shape, dtype=dtype)
    # View the bytes: frombuffer reads a flat buffer of `dtype` items.
    flat = fc.frombuffer(array.reshape(-1).view(np.uint8), dtype=dtype, count=array.size, offset=0)
    return flat.view(shape)


def as_tensor(obj: Any, what: str = "as_tensor") -> fc.Tensor:
    """``obj`` as a flambeau tensor: tensors pass through, NumPy arrays are viewed."""
    if isinstance(obj, fc.Tensor):
        return obj
    if is_numpy_array(obj) or is_numpy_scalar(obj):
        import numpy as np

        return numpy_to_tensor(np.asarray(obj), what)
    raise TypeError(f"[{what}] expected a flambeau Tensor or a NumPy array, got {type(obj).__name__}")
