"""PyTorch's legacy tensor types (``FloatTensor``, ``LongTensor``...), ``Tensor.type()`` and the deprecated
``set_default_tensor_type``.

``FloatTensor(2, 3)`` is an uninitialized float32 tensor of shape (2, 3),
``FloatTensor([1, 2])`` one holding the data, ``FloatTensor()`` an empty one,
``FloatTensor(t)`` a float32 tensor ``t`` itself (sharing its memory);
``isinstance(t, fb.FloatTensor)`` is True for a float32 cpu tensor. They are not
subclasses of Tensor (``type(FloatTensor(2)) is Tensor``), as in PyTorch.

``t.type()`` answers PyTorch's strings, ``'torch.FloatTensor'`` (``'torch.cuda.FloatTensor'``
on CUDA), so that a program comparing them with PyTorch's names runs unchanged;
``t.type(x)`` converts to ``x``: a dtype, a legacy type, or such a string
(``'torch.'`` or ``'flambeau.'`` prefix).

Example:
    >>> import flambeau_core as fc
    >>> fc.FloatTensor([1, 2]).type()
    'torch.FloatTensor'
    >>> isinstance(fc.zeros(2), fc.FloatTensor), fc.zeros(2).type(fc.LongTensor).dtype == fc.int64
    (True, True)
"""

from __future__ import annotations

import operator
from typing import Any

from flambeau_core import _C
from flambeau_core._size import Size

_NAMES = {
    "float32": "Float",
    "float64": "Double",
    "float16": "Half",
    "bfloat16": "BFloat16",
    "uint8": "Byte",
    "int8": "Char",
    "int16": "Short",
    "int32": "Int",
    "int64": "Long",
    "bool": "Bool",
    "complex64": "ComplexFloat",
    "complex128": "ComplexDouble",
}


def _dtype_name(dtype: _C.dtype) -> str:
    return str(dtype).rsplit(".", 1)[-1]


class _LegacyTensorMeta(type):
    def __instancecheck__(cls, obj: Any) -> bool:
        return isinstance(obj, _C.Tensor) and obj.dtype == cls.dtype and obj.device.type == "cpu"

    def __repr__(cls) -> str:
        return f"<class 'flambeau.{cls.__name__}'>"


def _is_size(a: Any) -> bool:
    """An int-like size argument (an int, a NumPy integer); not a tensor nor an array."""
    return hasattr(a, "__index__") and not hasattr(a, "__len__") and not isinstance(a, _C.Tensor)


class _LegacyTensor(metaclass=_LegacyTensorMeta):
    dtype: _C.dtype
    is_cuda = False

    def __new__(cls, *args: Any, device: Any = None) -> Any:
        name = cls.__name__
        if device is not None and _C.device(device).type != "cpu":
            raise TypeError(f"[{name}] is a cpu tensor type, got device {device}; use flambeau.tensor(..., device=...)")
        if not args:
            return _C.empty(0, dtype=cls.dtype)
        if len(args) == 1:
            (data,) = args
            if isinstance(data, _C.Tensor):
                if data.dtype != cls.dtype or data.device.type != "cpu":
                    raise TypeError(
                        f"[{name}] expected a cpu {cls.dtype} tensor, got a {data.device} {data.dtype} one; "
                        f"use t.to({cls.dtype})"
                    )
                return _C.Tensor(data)
            if isinstance(data, Size):
                return _C.empty(tuple(data), dtype=cls.dtype)
            if isinstance(data, (str, bytes)) or (not hasattr(data, "__len__") and not hasattr(data, "__index__")):
                raise TypeError(f"[{name}] data must be a sequence or sizes, got {type(data).__name__}")
        if all(_is_size(a) for a in args):
            return _C.empty(tuple(operator.index(a) for a in args), dtype=cls.dtype)
        if len(args) == 1:
            return _C.tensor(args[0], dtype=cls.dtype)
        raise TypeError(
            f"[{name}] expected sizes (ints), a Size, a sequence of data or a tensor, "
            f"got ({', '.join(type(a).__name__ for a in args)})"
        )


def _make(dtype_name: str) -> type:
    name = _NAMES[dtype_name] + "Tensor"
    doc = (
        f"PyTorch's legacy ``torch.{name}``: cpu {dtype_name} tensors (see flambeau_core._legacy_types).\n\n"
        f"``{name}(data)`` makes a tensor of that dtype, ``{name}(*sizes)`` an uninitialized one; "
        f"``isinstance(t, {name})`` checks a cpu tensor's dtype.\n\nExample:\n"
        f"    >>> import flambeau as fb\n    >>> x = fb.{name}([1, 0])\n"
        f"    >>> x.dtype == fb.{dtype_name}, isinstance(x, fb.{name}), fb.{name}(2, 3).shape\n"
        f"    (True, True, flambeau.Size([2, 3]))\n"
    )
    return _LegacyTensorMeta(name, (_LegacyTensor,), {"dtype": getattr(_C, dtype_name), "__doc__": doc})


LEGACY_TYPES = {_NAMES[n] + "Tensor": _make(n) for n in _NAMES if hasattr(_C, n)}
_BY_NAME = {name: cls.dtype for name, cls in LEGACY_TYPES.items()}


def _parse_type_string(s: str) -> tuple[_C.dtype, str]:
    parts = s.split(".")
    if len(parts) in (2, 3) and parts[0] in ("torch", "flambeau") and parts[-1] in _BY_NAME:
        if len(parts) == 2:
            return _BY_NAME[parts[-1]], "cpu"
        if parts[1] == "cuda":
            return _BY_NAME[parts[-1]], "cuda"
    raise ValueError(f"[type] invalid type: {s!r}; expected a name such as 'torch.FloatTensor' or a dtype")


def tensor_type(self: _C.Tensor, dtype: Any = None, non_blocking: bool = False, **kwargs: Any) -> Any:
    """``t.type()``: PyTorch's type string (``'torch.FloatTensor'``); ``t.type(x)``: ``t`` converted to ``x``.

    ``x`` is a dtype, a legacy type (``flambeau.LongTensor``) or a type string; ``t`` itself
    is returned when it already has that type.

    Example:
        >>> import flambeau_core as fc
        >>> fc.ones(2, dtype=fc.int64).type()
        'torch.LongTensor'
        >>> fc.ones(2).type("torch.DoubleTensor").dtype == fc.float64
        True
    """
    if kwargs:
        raise TypeError(f"[type] unexpected keyword argument '{next(iter(kwargs))}'")
    if dtype is None:
        name = _NAMES.get(_dtype_name(self.dtype))
        if name is None:
            raise TypeError(f"[type] {self.dtype} has no legacy tensor type name")
        device = "" if self.device.type == "cpu" else f"{self.device.type}."
        return f"torch.{device}{name}Tensor"
    device = self.device.type
    if isinstance(dtype, str):
        dtype, device = _parse_type_string(dtype)
    elif isinstance(dtype, type) and issubclass(dtype, _LegacyTensor):
        dtype, device = dtype.dtype, "cpu"
    elif not isinstance(dtype, _C.dtype):
        raise TypeError(f"[type] dtype must be a type, str, or dtype object, got {type(dtype).__name__}")
    if dtype == self.dtype and device == self.device.type:
        return self
    return self.to(device=device, dtype=dtype, non_blocking=non_blocking)


def set_default_tensor_type(t: Any, /) -> None:
    """set_default_tensor_type(t) -> None

    Deprecated (warns; use :func:`set_default_dtype` and :func:`set_default_device`): makes the floating
    point legacy type ``t`` (``FloatTensor``, ``DoubleTensor``... or its name, ``"torch.DoubleTensor"``;
    ``"torch.cuda.FloatTensor"`` also makes CUDA the default device) the type of new floating-point
    tensors.

    Example:
        >>> import warnings
        >>> import flambeau_core as fc
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("ignore")
        ...     fc.set_default_tensor_type(fc.DoubleTensor)
        >>> fc.ones(1).dtype
        flambeau.float64
        >>> fc.set_default_dtype(fc.float32)
    """
    import warnings

    from flambeau_core import _dtypes

    warnings.warn(
        "[set_default_tensor_type] set_default_tensor_type() is deprecated as of PyTorch 2.1, please use "
        "set_default_dtype() and set_default_device() as alternatives.",
        UserWarning,
        stacklevel=2,
    )
    if isinstance(t, str):
        dtype, device = _parse_type_string(t)
    elif isinstance(t, type) and issubclass(t, _LegacyTensor):
        dtype, device = t.dtype, "cpu"
    else:
        raise TypeError(
            f"[set_default_tensor_type] invalid type object: expected a legacy tensor type or its name, got {t!r}"
        )
    if not dtype.is_floating_point:
        raise TypeError(
            f"[set_default_tensor_type] only floating-point types are supported as the default type, got {t!r}"
        )
    if device != "cpu":  # first: it raises where the device type is not available, changing nothing
        from flambeau_core import set_default_device
        from flambeau_core._composing import call_as

        call_as("set_default_tensor_type", set_default_device, device)
    _dtypes.set_default_dtype(dtype)


def install() -> None:
    import flambeau_core

    _C.Tensor.type = tensor_type
    flambeau_core.set_default_tensor_type = set_default_tensor_type
