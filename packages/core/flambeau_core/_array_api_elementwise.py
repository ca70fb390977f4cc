"""The Array API namespace's element-wise functions (part of ``flambeau.array_api``).

Each is PyTorch's kernel under the standard's name, with the standard's type
promotion (``_array_api_dtypes.promote``: uint16/uint32/uint64 too) and
Python-scalar operands on either side; a handful differ in meaning from
PyTorch's (``sign`` of NaN, ``remainder`` of a zero result, ``positive``
copies) and are written out. ``_EXAMPLES`` holds each generated function's
docstring example. Every public name here is re-exported by ``flambeau.array_api``.
"""

from __future__ import annotations

import flambeau_core as _fc
from flambeau_core._array_api_dtypes import (
    check_tensor as _check_tensor,
)
from flambeau_core._array_api_dtypes import (
    is_complex as _is_complex,
)
from flambeau_core._array_api_dtypes import (
    is_float as _is_float,
)
from flambeau_core._array_api_dtypes import (
    is_py_scalar as _is_py_scalar,
)
from flambeau_core._array_api_dtypes import (
    promote as _promote,
)
from flambeau_core._array_api_dtypes import (
    result_type,
)
from flambeau_core._C import Tensor as _Tensor

__all__ = [
    "abs",
    "acos",
    "acosh",
    "asin",
    "asinh",
    "atan",
    "atanh",
    "bitwise_invert",
    "ceil",
    "conj",
    "cos",
    "cosh",
    "exp",
    "expm1",
    "floor",
    "imag",
    "isfinite",
    "isinf",
    "isnan",
    "log",
    "log1p",
    "log2",
    "log10",
    "logical_not",
    "negative",
    "real",
    "reciprocal",
    "sin",
    "sinh",
    "square",
    "sqrt",
    "tan",
    "tanh",
    "trunc",
    "add",
    "atan2",
    "bitwise_and",
    "bitwise_left_shift",
    "bitwise_or",
    "bitwise_right_shift",
    "bitwise_xor",
    "divide",
    "equal",
    "floor_divide",
    "greater",
    "greater_equal",
    "hypot",
    "less",
    "less_equal",
    "logical_and",
    "logical_or",
    "logical_xor",
    "maximum",
    "minimum",
    "multiply",
    "not_equal",
    "pow",
    "subtract",
    "positive",
    "round",
    "sign",
    "remainder",
    "signbit",
    "copysign",
    "nextafter",
    "logaddexp",
    "clip",
]


# Each element-wise function's example: the call, then what it prints (checked against torch when written).
_EXAMPLES = {
    "abs": ("xp.abs(xp.asarray([-1.5, 0.5]))", "tensor([1.5000, 0.5000])"),
    "ceil": ("xp.ceil(xp.asarray([-1.5, 0.5]))", "tensor([-1.,  1.])"),
    "floor": ("xp.floor(xp.asarray([-1.5, 0.5]))", "tensor([-2.,  0.])"),
    "trunc": ("xp.trunc(xp.asarray([-1.5, 0.5]))", "tensor([-1.,  0.])"),
    "negative": ("xp.negative(xp.asarray([-1.5, 0.5]))", "tensor([ 1.5000, -0.5000])"),
    "square": ("xp.square(xp.asarray([-1.5, 0.5]))", "tensor([2.2500, 0.2500])"),
    "exp": ("xp.exp(xp.asarray([-1.5, 0.5]))", "tensor([0.2231, 1.6487])"),
    "expm1": ("xp.expm1(xp.asarray([-1.5, 0.5]))", "tensor([-0.7769,  0.6487])"),
    "sin": ("xp.sin(xp.asarray([-1.5, 0.5]))", "tensor([-0.9975,  0.4794])"),
    "cos": ("xp.cos(xp.asarray([-1.5, 0.5]))", "tensor([0.0707, 0.8776])"),
    "tan": ("xp.tan(xp.asarray([-1.5, 0.5]))", "tensor([-14.1014,   0.5463])"),
    "sinh": ("xp.sinh(xp.asarray([-1.5, 0.5]))", "tensor([-2.1293,  0.5211])"),
    "cosh": ("xp.cosh(xp.asarray([-1.5, 0.5]))", "tensor([2.3524, 1.1276])"),
    "atan": ("xp.atan(xp.asarray([-1.5, 0.5]))", "tensor([-0.9828,  0.4636])"),
    "asinh": ("xp.asinh(xp.asarray([-1.5, 0.5]))", "tensor([-1.1948,  0.4812])"),
    "reciprocal": ("xp.reciprocal(xp.asarray([-1.5, 0.5]))", "tensor([-0.6667,  2.0000])"),
    "acos": ("xp.acos(xp.asarray([-0.5, 0.5]))", "tensor([2.0944, 1.0472])"),
    "asin": ("xp.asin(xp.asarray([-0.5, 0.5]))", "tensor([-0.5236,  0.5236])"),
    "atanh": ("xp.atanh(xp.asarray([-0.5, 0.5]))", "tensor([-0.5493,  0.5493])"),
    "acosh": ("xp.acosh(xp.asarray([1.0, 2.0]))", "tensor([0.0000, 1.3170])"),
    "log": ("xp.log(xp.asarray([1.0, 4.0]))", "tensor([0.0000, 1.3863])"),
    "log1p": ("xp.log1p(xp.asarray([1.0, 4.0]))", "tensor([0.6931, 1.6094])"),
    "log2": ("xp.log2(xp.asarray([1.0, 4.0]))", "tensor([0., 2.])"),
    "log10": ("xp.log10(xp.asarray([1.0, 4.0]))", "tensor([0.0000, 0.6021])"),
    "sqrt": ("xp.sqrt(xp.asarray([1.0, 4.0]))", "tensor([1., 2.])"),
    "isfinite": ('xp.isfinite(xp.asarray([1.0, float("inf"), float("nan")]))', "tensor([ True, False, False])"),
    "isinf": ('xp.isinf(xp.asarray([1.0, float("inf"), float("nan")]))', "tensor([False,  True, False])"),
    "isnan": ('xp.isnan(xp.asarray([1.0, float("inf"), float("nan")]))', "tensor([False, False,  True])"),
    "logical_not": ("xp.logical_not(xp.asarray([True, False]))", "tensor([False,  True])"),
    "bitwise_invert": ("xp.bitwise_invert(xp.asarray([0, 5]))", "tensor([-1, -6])"),
    "conj": ("xp.conj(xp.asarray([1 + 2j, 3 - 1j]))", "tensor([1.-2.j, 3.+1.j])"),
    "real": ("xp.real(xp.asarray([1 + 2j, 3 - 1j]))", "tensor([1., 3.])"),
    "imag": ("xp.imag(xp.asarray([1 + 2j, 3 - 1j]))", "tensor([ 2., -1.])"),
    "add": ("xp.add(xp.asarray([1.0, 6.0]), xp.asarray([4.0, 3.0]))", "tensor([5., 9.])"),
    "atan2": ("xp.atan2(xp.asarray([1.0, 6.0]), xp.asarray([4.0, 3.0]))", "tensor([0.2450, 1.1071])"),
    "divide": ("xp.divide(xp.asarray([1.0, 6.0]), xp.asarray([4.0, 3.0]))", "tensor([0.2500, 2.0000])"),
    "equal": ("xp.equal(xp.asarray([1.0, 6.0]), xp.asarray([4.0, 3.0]))", "tensor([False, False])"),
    "greater": ("xp.greater(xp.asarray([1.0, 6.0]), xp.asarray([4.0, 3.0]))", "tensor([False,  True])"),
    "greater_equal": ("xp.greater_equal(xp.asarray([1.0, 6.0]), xp.asarray([4.0, 3.0]))", "tensor([False,  True])"),
    "hypot": ("xp.hypot(xp.asarray([1.0, 6.0]), xp.asarray([4.0, 3.0]))", "tensor([4.1231, 6.7082])"),
    "less": ("xp.less(xp.asarray([1.0, 6.0]), xp.asarray([4.0, 3.0]))", "tensor([ True, False])"),
    "less_equal": ("xp.less_equal(xp.asarray([1.0, 6.0]), xp.asarray([4.0, 3.0]))", "tensor([ True, False])"),
    "maximum": ("xp.maximum(xp.asarray([1.0, 6.0]), xp.asarray([4.0, 3.0]))", "tensor([4., 6.])"),
    "minimum": ("xp.minimum(xp.asarray([1.0, 6.0]), xp.asarray([4.0, 3.0]))", "tensor([1., 3.])"),
    "multiply": ("xp.multiply(xp.asarray([1.0, 6.0]), xp.asarray([4.0, 3.0]))", "tensor([ 4., 18.])"),
    "not_equal": ("xp.not_equal(xp.asarray([1.0, 6.0]), xp.asarray([4.0, 3.0]))", "tensor([True, True])"),
    "pow": ("xp.pow(xp.asarray([1.0, 6.0]), xp.asarray([4.0, 3.0]))", "tensor([  1., 216.])"),
    "subtract": ("xp.subtract(xp.asarray([1.0, 6.0]), xp.asarray([4.0, 3.0]))", "tensor([-3.,  3.])"),
    "bitwise_and": ("xp.bitwise_and(xp.asarray([12, 10]), xp.asarray([10, 3]))", "tensor([8, 2])"),
    "bitwise_or": ("xp.bitwise_or(xp.asarray([12, 10]), xp.asarray([10, 3]))", "tensor([14, 11])"),
    "bitwise_xor": ("xp.bitwise_xor(xp.asarray([12, 10]), xp.asarray([10, 3]))", "tensor([6, 9])"),
    "bitwise_left_shift": ("xp.bitwise_left_shift(xp.asarray([1, 8]), xp.asarray([2, 1]))", "tensor([ 4, 16])"),
    "bitwise_right_shift": ("xp.bitwise_right_shift(xp.asarray([1, 8]), xp.asarray([2, 1]))", "tensor([0, 4])"),
    "logical_and": ("xp.logical_and(xp.asarray([True, False]), xp.asarray([True, True]))", "tensor([ True, False])"),
    "logical_or": ("xp.logical_or(xp.asarray([True, False]), xp.asarray([True, True]))", "tensor([True, True])"),
    "logical_xor": ("xp.logical_xor(xp.asarray([True, False]), xp.asarray([True, True]))", "tensor([False,  True])"),
    "floor_divide": ("xp.floor_divide(xp.asarray([7.0, -7.0]), xp.asarray([2.0, 2.0]))", "tensor([ 3., -4.])"),
    "remainder": ("xp.remainder(xp.asarray([7.0, -7.0]), xp.asarray([3.0, 3.0]))", "tensor([1., 2.])"),
    "signbit": ("xp.signbit(xp.asarray([-1.5, 0.0, 2.0]))", "tensor([ True, False, False])"),
    "copysign": ("xp.copysign(xp.asarray([1.0, 6.0]), xp.asarray([-4.0, 3.0]))", "tensor([-1.,  6.])"),
    "nextafter": (
        "xp.nextafter(xp.asarray([1.0, 1.0]), xp.asarray([2.0, 0.0])) - 1.0",
        "tensor([ 1.1921e-07, -5.9605e-08])",
    ),
    "logaddexp": ("xp.logaddexp(xp.asarray([0.0, 1.0]), xp.asarray([0.0, 1.0]))", "tensor([0.6931, 1.6931])"),
}


def _example_doc(name: str) -> str:
    if name not in _EXAMPLES:
        return ""
    call, printed = _EXAMPLES[name]
    return f"""

    Example:
        >>> import flambeau as fb
        >>> xp = fb.array_api
        >>> {call}
        {printed}
    """


def _unary(name: str, torch_name: str | None = None):
    target = torch_name or name

    def fn(x, /):
        _check_tensor(name, x)
        return getattr(_fc, target)(x)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"The standard's ``{name}(x)``: flambeau's ``{target}`` element-wise." + _example_doc(name)
    return fn


def _binary_operands(name: str, x1, x2):
    """``x1`` and ``x2`` as tensors of the standard's promoted dtype (a Python scalar takes the array's)."""
    if not isinstance(x1, _Tensor) and not isinstance(x2, _Tensor):
        raise TypeError(f"{name}: at least one argument must be a flambeau Tensor")
    for v in (x1, x2):
        if not isinstance(v, _Tensor) and not _is_py_scalar(v):
            raise TypeError(f"{name}: expected a Tensor or a Python scalar, got {type(v).__name__}")
    if not isinstance(x1, _Tensor):
        x1 = _fc.full((), x1, dtype=result_type(x2, x1), device=x2.device)
    if not isinstance(x2, _Tensor):
        x2 = _fc.full((), x2, dtype=result_type(x1, x2), device=x1.device)
    dtype = _promote(x1.dtype, x2.dtype)
    return x1.to(dtype), x2.to(dtype)


def _binary(name: str, torch_name: str | None = None):
    target = torch_name or name

    def fn(x1, x2, /):
        x1, x2 = _binary_operands(name, x1, x2)
        return getattr(_fc, target)(x1, x2)

    fn.__name__ = fn.__qualname__ = name
    fn.__doc__ = f"The standard's ``{name}(x1, x2)``: flambeau's ``{target}`` element-wise." + _example_doc(name)
    return fn


abs = _unary("abs")  # noqa: A001
acos = _unary("acos")
acosh = _unary("acosh")
asin = _unary("asin")
asinh = _unary("asinh")
atan = _unary("atan")
atanh = _unary("atanh")
bitwise_invert = _unary("bitwise_invert", "bitwise_not")
ceil = _unary("ceil")
conj = _unary("conj")
cos = _unary("cos")
cosh = _unary("cosh")
exp = _unary("exp")
expm1 = _unary("expm1")
floor = _unary("floor")
imag = _unary("imag")
isfinite = _unary("isfinite")
isinf = _unary("isinf")
isnan = _unary("isnan")
log = _unary("log")
log1p = _unary("log1p")
log2 = _unary("log2")
log10 = _unary("log10")
logical_not = _unary("logical_not")
negative = _unary("negative", "neg")
real = _unary("real")
reciprocal = _unary("reciprocal")
sin = _unary("sin")
sinh = _unary("sinh")
square = _unary("square")
sqrt = _unary("sqrt")
tan = _unary("tan")


def tanh(x, /):
    """The hyperbolic tangent; complex ``x = ±infinity + bj`` (b finite) gives ``±1 + 0j`` with b's sign of zero.

    The standard's special case (``+infinity + bj``, b > 0, is ``1 + 0j``, and its conjugate and odd
    images); PyTorch, NumPy and C99's ctanh give the zero the sign of sin(2b) instead. Otherwise
    flambeau's ``tanh``.

    Example:
        >>> import flambeau as fb
        >>> xp = fb.array_api
        >>> xp.tanh(xp.asarray([-1.5, 0.5]))
        tensor([-0.9051,  0.4621])
    """
    _check_tensor("tanh", x)
    out = _fc.tanh(x)
    if not _is_complex(x.dtype):
        return out
    re, im = _fc.real(x), _fc.imag(x)
    at_inf = _fc.isinf(re) & _fc.isfinite(im)
    if not bool(_fc.any(at_inf)):
        return out
    signed_zero = _fc.copysign(_fc.zeros_like(im), im)
    return _fc.where(at_inf, _fc.complex(_fc.real(out), signed_zero), out)


trunc = _unary("trunc")

add = _binary("add")
atan2 = _binary("atan2")
bitwise_and = _binary("bitwise_and")
bitwise_left_shift = _binary("bitwise_left_shift")
bitwise_or = _binary("bitwise_or")
bitwise_right_shift = _binary("bitwise_right_shift")
bitwise_xor = _binary("bitwise_xor")
divide = _binary("divide", "div")
equal = _binary("equal", "eq")
_binary_floor_divide = _binary("floor_divide")
greater = _binary("greater", "gt")
greater_equal = _binary("greater_equal", "ge")
hypot = _binary("hypot")
less = _binary("less", "lt")
less_equal = _binary("less_equal", "le")
logical_and = _binary("logical_and")
logical_or = _binary("logical_or")
logical_xor = _binary("logical_xor")
maximum = _binary("maximum")
minimum = _binary("minimum")
multiply = _binary("multiply", "mul")
not_equal = _binary("not_equal", "ne")
pow = _binary("pow")  # noqa: A001
_binary_remainder = _binary("remainder")
subtract = _binary("subtract", "sub")


def positive(x, /):
    """``+x``: a copy of ``x`` (flambeau.positive, PyTorch's, returns ``x`` itself).

    Example:
        >>> import flambeau_core as fc
        >>> fc.array_api.positive(fc.tensor([-1, 2])).tolist()
        [-1, 2]
    """
    _check_tensor("positive", x)
    return x.clone()


def round(x, /):  # noqa: A001
    """Rounds half to even, as the standard and PyTorch do; a complex ``x`` rounds each component.

    Example:
        >>> import flambeau as fb
        >>> xp = fb.array_api
        >>> xp.round(xp.asarray([0.5, 1.5, 2.4, -0.6]))  # halves to even
        tensor([ 0.,  2.,  2., -1.])
        >>> xp.round(xp.asarray([2.5 - 1.5j]))
        tensor([2.-2.j])
    """
    _check_tensor("round", x)
    if _is_complex(x.dtype):  # the kernel takes real dtypes only
        return _fc.complex(_fc.round(x.real), _fc.round(x.imag))
    if not _is_float(x.dtype):
        return x.clone()  # integers are already whole
    return _fc.round(x)


def sign(x, /):
    """-1, 0 or +1 by the sign of ``x``; NaN stays NaN (PyTorch's ``sign`` gives 0); complex x gives x/|x|.

    Example:
        >>> import flambeau as fb
        >>> xp = fb.array_api
        >>> xp.sign(xp.asarray([-2.0, 0.0, 3.0]))
        tensor([-1.,  0.,  1.])
    """
    _check_tensor("sign", x)
    if _is_complex(x.dtype):
        mag = _fc.abs(x)
        return _fc.where(mag == 0, _fc.zeros_like(x), x / mag)
    out = _fc.sign(x)
    return _fc.where(_fc.isnan(x), x, out) if _is_float(x.dtype) else out


def floor_divide(x1, x2, /):
    """x1 / x2 rounded toward -infinity; an infinite operand gives the standard's infinity or signed zero.

    PyTorch (and NumPy) give NaN for ``inf // 2`` and -1 for ``5 // -inf``; the
    standard asks for ``+infinity`` and ``-0`` (what ``x1 / x2`` gives there).

    Example:
        >>> import flambeau as fb
        >>> xp = fb.array_api
        >>> xp.floor_divide(xp.asarray([7.0, -7.0]), xp.asarray([2.0, 2.0]))
        tensor([ 3., -4.])
        >>> xp.floor_divide(xp.asarray([float("inf"), 5.0]), xp.asarray([-2.0, -float("inf")]))
        tensor([-inf, -0.])
    """
    out = _binary_floor_divide(x1, x2)
    if not _is_float(out.dtype):
        return out
    a, b = _binary_operands("floor_divide", x1, x2)
    finite_a, finite_b = _fc.isfinite(a), _fc.isfinite(b)
    special = (_fc.isinf(a) & finite_b & (b != 0)) | (finite_a & (a != 0) & _fc.isinf(b))
    return _fc.where(special, a / b, out)


def remainder(x1, x2, /):
    """x1 - floor(x1 / x2) * x2; a zero result takes the sign of x2 (PyTorch's keeps x1's).

    Example:
        >>> import flambeau as fb
        >>> xp = fb.array_api
        >>> xp.remainder(xp.asarray([7.0, -7.0]), xp.asarray([3.0, 3.0]))  # the sign of the divisor
        tensor([1., 2.])
    """
    out = _binary_remainder(x1, x2)
    if not _is_float(out.dtype):
        return out
    divisor = x2 if isinstance(x2, _Tensor) else _fc.full((), x2, dtype=out.dtype)
    return _fc.where(out == 0, _fc.copysign(out, divisor), out)


signbit = _unary("signbit")
copysign = _binary("copysign")
nextafter = _binary("nextafter")
logaddexp = _binary("logaddexp")


def _beyond_int64(value) -> bool:
    """A Python int bound clamp cannot take (a number argument is at most int64's max): uint64's top half."""
    return isinstance(value, int) and value >= 2**63


def _bound(value, dtype):
    """A Python bound as a 0-d tensor of ``dtype`` (uint64 values from 2**63 up go in as their int64 bits)."""
    if dtype == getattr(_fc, "uint64", None) and isinstance(value, int) and value >= 2**63:
        return _fc.full((), value - 2**64, dtype=_fc.int64).view(dtype)
    return _fc.full((), value, dtype=dtype)


def clip(x, /, min=None, max=None):  # noqa: A002
    """Clamps ``x`` into [min, max]; bounds keep x's dtype, NaN bounds propagate.

    Example:
        >>> import flambeau as fb
        >>> xp = fb.array_api
        >>> xp.clip(xp.asarray([-2.0, 0.5, 3.0]), min=-1.0, max=1.0)
        tensor([-1.0000,  0.5000,  1.0000])
    """
    _check_tensor("clip", x)
    if min is None and max is None:
        return x.clone()
    if isinstance(min, _Tensor) or isinstance(max, _Tensor) or _beyond_int64(min) or _beyond_int64(max):
        out = x
        if min is not None:
            out = _fc.maximum(out, min if isinstance(min, _Tensor) else _bound(min, x.dtype))
        if max is not None:
            out = _fc.minimum(out, max if isinstance(max, _Tensor) else _bound(max, x.dtype))
        return out.to(x.dtype)
    return _fc.clamp(x, min, max)
