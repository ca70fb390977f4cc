"""Dtype helpers with PyTorch's names: aliases (``half``, ``cfloat``, ...),
``finfo``/``iinfo``, ``get_default_dtype``/``set_default_dtype``, ``can_cast``
and the dtype predicates ``is_complex``/``is_floating_point``.

``promote_types`` and ``result_type`` are bound in C++ (bind_dtype.cpp,
bind_math.cpp); the promotion table is PyTorch's, including the unsigned and
complex dtypes (uint16/uint32/uint64 do not promote with other integer types
or complex ones: TypeError, as in PyTorch).
"""

from __future__ import annotations

import builtins

from flambeau_core import _C

# PyTorch's aliases.
half = _C.float16
float = _C.float32  # noqa: A001
double = _C.float64
cfloat = _C.complex64
cdouble = _C.complex128
short = _C.int16
int = _C.int32  # noqa: A001
long = _C.int64


def _fmt(v: builtins.float) -> str:
    return f"{v:.6g}"


class finfo:  # noqa: N801  (PyTorch's name)
    """Machine limits of a floating-point (or complex) dtype, as ``torch.finfo``.

    For complex dtypes the limits are those of the real and imaginary parts
    (``finfo(complex64).dtype == 'float32'``).

    Example:
        >>> import flambeau as fb
        >>> fb.finfo(fb.float16).max, fb.finfo(fb.float32).bits
        (65504.0, 32)
    """

    # bits, eps, max, tiny (= smallest normal), resolution
    _TABLE = {
        "float16": (16, 0.0009765625, 65504.0, 6.103515625e-05, 0.001),
        "bfloat16": (16, 0.0078125, 3.3895313892515355e38, 1.1754943508222875e-38, 0.01),
        "float32": (32, 1.1920928955078125e-07, 3.4028234663852886e38, 1.1754943508222875e-38, 1e-06),
        "float64": (64, 2.220446049250313e-16, 1.7976931348623157e308, 2.2250738585072014e-308, 1e-15),
    }

    def __init__(self, type: _C.dtype | None = None) -> None:  # noqa: A002  (PyTorch's argument name)
        if type is None:
            type = get_default_dtype()  # noqa: A001
        if not isinstance(type, _C.dtype):
            raise TypeError(f"finfo(): argument 'type' must be a flambeau dtype, got {builtins.type(type).__name__}")
        if not (type.is_floating_point or type.is_complex):
            raise TypeError(
                f"finfo() requires a floating point input type, got {type}. Use flambeau.iinfo to handle integer types"
            )
        real = type.to_real()
        name = str(real).split(".")[-1]
        bits, eps, mx, tiny, resolution = self._TABLE[name]
        self.bits = bits
        self.eps = eps
        self.max = mx
        self.min = -mx
        self.tiny = tiny
        self.smallest_normal = tiny
        self.resolution = resolution
        self.dtype = name

    def __eq__(self, other: object) -> bool:
        return isinstance(other, finfo) and self.dtype == other.dtype

    def __hash__(self) -> builtins.int:
        return hash(("finfo", self.dtype))

    def __repr__(self) -> str:
        return (
            f"finfo(resolution={_fmt(self.resolution)}, min={_fmt(self.min)}, max={_fmt(self.max)}, "
            f"eps={_fmt(self.eps)}, smallest_normal={_fmt(self.smallest_normal)}, tiny={_fmt(self.tiny)}, "
            f"dtype={self.dtype})"
        )


class iinfo:  # noqa: N801  (PyTorch's name)
    """Machine limits of an integer dtype, as ``torch.iinfo`` (bool is not accepted).

    Example:
        >>> import flambeau as fb
        >>> fb.iinfo(fb.int8).min, fb.iinfo(fb.uint8).max
        (-128, 255)
    """

    def __init__(self, type: _C.dtype) -> None:  # noqa: A002  (PyTorch's argument name)
        if not isinstance(type, _C.dtype):
            raise TypeError(f"iinfo(): argument 'type' must be a flambeau dtype, got {builtins.type(type).__name__}")
        if type.is_floating_point or type.is_complex or type == _C.bool:
            raise TypeError(f"{type} is not supported by flambeau.iinfo")
        self.bits = type.itemsize * 8
        if type.is_signed:
            self.min = -(1 << (self.bits - 1))
            self.max = (1 << (self.bits - 1)) - 1
        else:
            self.min = 0
            self.max = (1 << self.bits) - 1
        self.dtype = str(type).split(".")[-1]

    def __eq__(self, other: object) -> bool:
        return isinstance(other, iinfo) and self.dtype == other.dtype

    def __hash__(self) -> builtins.int:
        return hash(("iinfo", self.dtype))

    def __repr__(self) -> str:
        return f"iinfo(min={_fmt(self.min)}, max={_fmt(self.max)}, dtype={self.dtype})"


def get_default_dtype() -> _C.dtype:
    """The dtype of Python floats made into tensors and of float factories (float32 unless changed).

    Example:
        >>> import flambeau as fb
        >>> fb.get_default_dtype() == fb.float32, fb.tensor([1.5]).dtype == fb.get_default_dtype()
        (True, True)
    """
    return _C._get_default_dtype()


def set_default_dtype(d: _C.dtype) -> None:
    """Sets the default floating dtype (float32, float64, float16 or bfloat16), as ``torch.set_default_dtype``.

    Python floats, ``tensor([1.5])``, ``zeros``/``ones``/``rand``/``arange`` with float arguments and the
    float result of integer true division follow it; complex numbers get the matching complex dtype
    (complex128 for float64, complex64 otherwise: flambeau has no complex32).

    Example:
        >>> import flambeau as fb
        >>> fb.set_default_dtype(fb.float64)
        >>> fb.tensor([1.5]).dtype == fb.float64, fb.tensor([1j]).dtype == fb.complex128
        (True, True)
        >>> fb.set_default_dtype(fb.float32)
    """
    if not isinstance(d, _C.dtype) or not d.is_floating_point:
        raise TypeError(f"only floating-point types are supported as the default type, got {d!r}")
    _C._set_default_dtype(d)


def can_cast(from_: _C.dtype, to: _C.dtype) -> builtins.bool:
    """Whether PyTorch's casting rules allow ``from_`` into ``to`` (no float -> int, no complex -> real,
    no non-bool -> bool).

    Example:
        >>> import flambeau as fb
        >>> fb.can_cast(fb.int32, fb.float32), fb.can_cast(fb.float32, fb.int32)
        (True, False)
    """
    return _C._can_cast(from_, to)


def is_complex(input: _C.Tensor) -> builtins.bool:  # noqa: A002
    """True if ``input`` has a complex dtype.

    Example:
        >>> import flambeau as fb
        >>> fb.is_complex(fb.tensor([1j])), fb.is_complex(fb.tensor([1.0]))
        (True, False)
    """
    _require_tensor("is_complex", input)
    return input.dtype.is_complex


def is_floating_point(input: _C.Tensor) -> builtins.bool:  # noqa: A002
    """True if ``input`` has a real floating dtype (float16, bfloat16, float32, float64).

    Example:
        >>> import flambeau as fb
        >>> fb.is_floating_point(fb.tensor([1.0])), fb.is_floating_point(fb.tensor([1]))
        (True, False)
    """
    _require_tensor("is_floating_point", input)
    return input.dtype.is_floating_point


def _require_tensor(name: str, input) -> None:  # noqa: A002
    if not isinstance(input, _C.Tensor):
        raise TypeError(f"[{name}] expected a Tensor, got {type(input).__name__}")


def _install_tensor_attributes() -> None:
    """Tensor.real / Tensor.imag (views, as PyTorch's properties); the conj-bit queries are _complex_forms'."""

    def _set_part(which):
        def setter(self, value):
            getattr(_C, which)(self).copy_(value if isinstance(value, _C.Tensor) else _C.tensor(value))

        return setter

    _C.Tensor.real = property(_C.real, _set_part("real"), doc="The real parts (a view).")
    _C.Tensor.imag = property(_C.imag, _set_part("imag"), doc="The imaginary parts (a view; complex tensors only).")

    def is_complex(self: _C.Tensor) -> bool:
        """is_complex() -> bool

        True if the tensor has a complex dtype (complex64 or complex128).

        Example:
            >>> import flambeau as fb
            >>> fb.tensor([1j]).is_complex(), fb.tensor([1.0]).is_complex()
            (True, False)
        """
        return self.dtype.is_complex

    _C.Tensor.is_complex = is_complex


_install_tensor_attributes()
