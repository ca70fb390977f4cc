"""The Array API namespace's data-type rules (part of ``flambeau.array_api``).

The standard's type promotion differs from PyTorch's (which ``flambeau``
follows and which refuses to promote uint16/uint32/uint64 with any other
integer type): ``result_type``, ``can_cast`` and every binary element-wise
function of ``flambeau.array_api`` use the table here. ``finfo``/``iinfo``
return objects whose ``dtype`` is a dtype (PyTorch's is a string).

The element-wise kernels take uint16/uint32/uint64 as every other integer
dtype; a few others (searching, sorting, set functions, matrix products) still
lack them: ``unsigned_safe`` computes those in a signed type that holds the
same values (uint16 in int32, uint32 in int64) or the same bits (uint64 as
int64), and gives the result back in the unsigned type, as the standard asks
for every integer dtype.

Every public name here is re-exported by ``flambeau.array_api``.
"""

from __future__ import annotations

import builtins as _builtins

import flambeau_core as _fc
from flambeau_core._C import Tensor as _Tensor

__all__ = ["isdtype", "result_type", "can_cast", "finfo", "iinfo"]


def dtypes_present() -> dict[str, object]:
    names = ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64")
    names += ("float32", "float64", "complex64", "complex128")
    return {n: getattr(_fc, n) for n in names if hasattr(_fc, n)}


def is_complex(dtype) -> _builtins.bool:
    return _builtins.bool(getattr(dtype, "is_complex", False))


def is_float(dtype) -> _builtins.bool:
    return _builtins.bool(dtype.is_floating_point)


def is_signed_int(dtype) -> _builtins.bool:
    return dtype in (_fc.int8, _fc.int16, _fc.int32, _fc.int64)


def is_unsigned_int(dtype) -> _builtins.bool:
    return dtype in tuple(getattr(_fc, n) for n in ("uint8", "uint16", "uint32", "uint64") if hasattr(_fc, n))


_KINDS = {
    "bool": lambda d: d == _fc.bool,
    "signed integer": is_signed_int,
    "unsigned integer": is_unsigned_int,
    "integral": lambda d: is_signed_int(d) or is_unsigned_int(d),
    "real floating": lambda d: is_float(d) and not is_complex(d),
    "complex floating": is_complex,
    "numeric": lambda d: d != _fc.bool,
}


def isdtype(dtype, kind) -> _builtins.bool:
    """Whether ``dtype`` is of ``kind``: a dtype, a kind name, or a tuple of those.

    Example:
        >>> import flambeau as fb
        >>> fb.isdtype(fb.float32, "real floating"), fb.isdtype(fb.int8, ("bool", "unsigned integer"))
        (True, False)
    """
    if not isinstance(dtype, _fc.dtype):
        raise TypeError(f"isdtype: expected a dtype, got {type(dtype).__name__}")
    if isinstance(kind, tuple):
        return _builtins.any(isdtype(dtype, k) for k in kind)
    if isinstance(kind, _fc.dtype):
        return dtype == kind
    if isinstance(kind, str):
        try:
            return _KINDS[kind](dtype)
        except KeyError:
            raise ValueError(f"isdtype: unknown kind {kind!r}; expected one of {sorted(_KINDS)}") from None
    raise TypeError(f"isdtype: kind must be a dtype, a str or a tuple, got {type(kind).__name__}")


# ----------------------------------------------------------------------------
# The standard's promotion: core's table


def _kind_bits(dtype) -> tuple[str, int]:
    if dtype == _fc.bool:
        return "b", 8
    bits = dtype.itemsize * 8
    if is_complex(dtype):
        return "c", bits
    if is_float(dtype):
        return "f", bits
    return ("u" if is_unsigned_int(dtype) else "i"), bits


def promote(a, b):
    """The standard's promotion of dtypes ``a`` and ``b``: core's table (``flambeau.promote_types``),
    which promotes uint16/32/64 as the standard does.

    The one pair core refuses, uint64 with a signed integer (the standard leaves it out), is int64 here,
    as PyTorch's promotion of int64 with a wider unsigned type would give if it had one.
    """
    try:
        return _fc.promote_types(a, b)
    except TypeError:
        if _fc.uint64 in (a, b):
            return _fc.int64
        raise


def check_tensor(op: str, x) -> None:
    if not isinstance(x, _Tensor):
        raise TypeError(f"{op}: expected a flambeau Tensor, got {type(x).__name__}")


def is_py_scalar(v) -> _builtins.bool:
    return isinstance(v, int | float | complex) and not isinstance(v, _Tensor)


def _scalar_promote(dtype, s):
    """The dtype of ``dtype``-array op Python scalar ``s``: the array's dtype within its kind."""
    if isinstance(s, _builtins.bool):
        return dtype
    if isinstance(s, int):
        return _fc.int64 if dtype == _fc.bool else dtype
    if isinstance(s, float):
        return dtype if is_float(dtype) or is_complex(dtype) else _fc.get_default_dtype()
    if is_complex(dtype):
        return dtype
    return _fc.complex128 if dtype == _fc.float64 else _fc.complex64


def result_type(*arrays_and_dtypes):
    """The dtype that results from promoting the arrays, dtypes and Python scalars given.

    The standard's table (core's ``flambeau.promote_types``; uint64 with a signed integer gives int64); a
    Python scalar takes the array's dtype within its kind.

    Example:
        >>> import flambeau as fb
        >>> xp = fb.array_api
        >>> xp.result_type(xp.int32, xp.float32), xp.result_type(xp.ones(2, dtype=xp.int8), 1.5)
        (flambeau.float32, flambeau.float32)
        >>> xp.result_type(xp.uint8, xp.uint16), xp.result_type(xp.int8, xp.uint16)
        (flambeau.uint16, flambeau.int32)
    """
    if not arrays_and_dtypes:
        raise ValueError("result_type: at least one array, dtype or scalar is required")
    dtypes = []
    for a in arrays_and_dtypes:
        if isinstance(a, _Tensor):
            dtypes.append(a.dtype)
        elif isinstance(a, _fc.dtype):
            dtypes.append(a)
        elif not is_py_scalar(a):
            raise TypeError(f"result_type: expected arrays, dtypes or Python scalars, got {type(a).__name__}")
    if not dtypes:
        raise ValueError("result_type: needs at least one array or dtype besides Python scalars")
    out = dtypes[0]
    for d in dtypes[1:]:
        out = promote(out, d)
    for s in arrays_and_dtypes:  # a Python scalar takes the array's dtype, widened only across kinds
        if is_py_scalar(s):
            out = _scalar_promote(out, s)
    return out


def can_cast(from_, to, /) -> _builtins.bool:
    """Whether ``from_`` (a dtype or array) promotes to ``to`` without loss (the standard's rule).

    ``flambeau.can_cast`` is PyTorch's, which allows same-kind narrowing
    (int64 to int8); the standard does not.

    Example:
        >>> import flambeau as fb
        >>> xp = fb.array_api
        >>> xp.can_cast(xp.int32, xp.int64), xp.can_cast(xp.float64, xp.float32), xp.can_cast(xp.uint8, xp.uint16)
        (True, False, True)
    """
    if isinstance(from_, _Tensor):
        from_ = from_.dtype
    for d in (from_, to):
        if not isinstance(d, _fc.dtype):
            raise TypeError(f"can_cast: expected dtypes (or an array first), got {type(d).__name__}")
    if from_ == to:
        return True
    (kf, _), (kt, _) = _kind_bits(from_), _kind_bits(to)
    if kf == "b" or kt == "b" or (kf in "fc" and kt in "iu"):
        return False
    if kf in "iu" and kt in "fc":
        return True  # the standard's table has no mixed kinds; PyTorch and NumPy allow this one
    return promote(from_, to) == to


class _Limits:
    """Machine limits with the standard's attribute types (``dtype`` a dtype, not a string)."""

    __module__ = "flambeau.array_api"

    def __init__(self, **fields):
        self.__dict__.update(fields)

    def __repr__(self) -> str:
        body = ", ".join(f"{k}={v!r}" for k, v in self.__dict__.items())
        return f"{type(self).__name__}({body})"


class finfo_object(_Limits):  # noqa: N801  (the standard's name)
    """What ``finfo`` returns: ``bits``, ``eps``, ``max``, ``min``, ``smallest_normal`` (floats) and ``dtype``."""


class iinfo_object(_Limits):  # noqa: N801
    """What ``iinfo`` returns: ``bits``, ``max``, ``min`` (ints) and ``dtype``."""


def finfo(type, /):  # noqa: A002  (the standard's parameter name)
    """Machine limits of a floating dtype (of its real component for a complex one), as Python floats.

    ``flambeau.finfo`` (PyTorch's) gives ``dtype`` as a string; the standard, a dtype.

    Example:
        >>> import flambeau as fb
        >>> xp = fb.array_api
        >>> xp.finfo(xp.float32).eps, xp.finfo(xp.float32).bits, xp.finfo(xp.complex128).dtype
        (1.1920928955078125e-07, 32, flambeau.float64)
    """
    dtype = type.dtype if isinstance(type, _Tensor) else type
    if not isinstance(dtype, _fc.dtype) or not (is_float(dtype) or is_complex(dtype)):
        raise TypeError(f"finfo: expected a floating dtype or array, got {dtype!r}")
    real = dtype if not is_complex(dtype) else (_fc.float64 if dtype == _fc.complex128 else _fc.float32)
    f = _fc.finfo(real)
    return finfo_object(
        bits=int(f.bits),
        eps=float(f.eps),
        max=float(f.max),
        min=float(f.min),
        smallest_normal=float(f.smallest_normal),
        dtype=real,
    )


def iinfo(type, /):  # noqa: A002
    """Machine limits of an integer dtype, as Python ints.

    Example:
        >>> import flambeau as fb
        >>> xp = fb.array_api
        >>> xp.iinfo(xp.int8).min, xp.iinfo(xp.int8).max, xp.iinfo(xp.uint16).dtype
        (-128, 127, flambeau.uint16)
    """
    dtype = type.dtype if isinstance(type, _Tensor) else type
    if not isinstance(dtype, _fc.dtype) or not (is_signed_int(dtype) or is_unsigned_int(dtype)):
        raise TypeError(f"iinfo: expected an integer dtype or array, got {dtype!r}")
    i = _fc.iinfo(dtype)
    return iinfo_object(bits=int(i.bits), max=int(i.max), min=int(i.min), dtype=dtype)


# ----------------------------------------------------------------------------
# Kernels (not element-wise ones) that lack uint16/uint32/uint64


def _wide_unsigned():
    out = {}
    for name, wide in (("uint16", _fc.int32), ("uint32", _fc.int64)):
        if hasattr(_fc, name):
            out[getattr(_fc, name)] = wide
    return out


def needs_signed(dtype) -> _builtins.bool:
    """Whether ``dtype`` is one of the unsigned types most kernels lack (uint16, uint32, uint64)."""
    return is_unsigned_int(dtype) and dtype != _fc.uint8


_INT64_MIN = -(2**63)


def to_signed(x, *, ordered: _builtins.bool):
    """``x`` (uint16/32/64) in a signed type: uint16/uint32 by value (int32/int64), uint64 by bits as int64.

    ``ordered``: keep the order of the values (uint64 gets its top bit flipped, so 2**63 and above sort last).
    """
    wide = _wide_unsigned().get(x.dtype)
    if wide is not None:
        return x.to(wide)
    y = x.view(_fc.int64)
    return _fc.bitwise_xor(y, _INT64_MIN) if ordered else y


def from_signed(y, dtype, *, ordered: _builtins.bool):
    """Undoes ``to_signed``: ``y`` back in the unsigned ``dtype`` (integer values wrap as the standard says)."""
    if dtype in _wide_unsigned():
        return y.to(dtype)
    if ordered:
        y = _fc.bitwise_xor(y, _INT64_MIN)
    return y.view(dtype)


def unsigned_safe(fn, x, *args, ordered: _builtins.bool = False, back: _builtins.bool = True, **kw):
    """``fn(x, ...)``, computed in a signed type when ``x`` is uint16/32/64 (see ``to_signed``).

    ``back``: the result is values of ``x`` (returned in ``x``'s dtype); else indices or counts, kept as they are.
    """
    if not isinstance(x, _Tensor) or not needs_signed(x.dtype):
        return fn(x, *args, **kw)
    out = fn(to_signed(x, ordered=ordered), *args, **kw)
    return from_signed(out, x.dtype, ordered=ordered) if back else out
