"""flambeau as a Python Array API namespace (standard version 2024.12).

``Tensor.__array_namespace__()`` returns this module. Everything the standard
requires is here with the standard's names, signatures and semantics, so code
written against the standard (SciPy, scikit-learn, array-api-extra, ...) runs
on flambeau tensors.

Why a namespace of its own and not ``flambeau`` itself: for a handful of names
PyTorch and the standard disagree on meaning, not just spelling (``max`` with
an axis returns values and indices in PyTorch, values only in the standard;
``std``/``var`` default to Bessel's correction in PyTorch, to none in the
standard; ``squeeze`` of a dimension that is not 1 is a no-op in PyTorch, an
error in the standard; ``repeat`` is PyTorch's ``tile``-like op but the
standard's ``repeat_interleave``; ``sort`` returns values and indices in
PyTorch). ``flambeau.<name>`` keeps PyTorch's meaning; ``flambeau.array_api.<name>``
follows the standard. The standard's names that PyTorch lacks
(``permute_dims``, ``astype``, ``isdtype``, ``matrix_transpose``,
``unique_values``, ``cumulative_sum``, ...) are also re-exported at the top
level of ``flambeau``. docs/design/array-api.md lists every difference.

Functions take and return flambeau Tensors; there is no wrapper array type.

Example (``flambeau_core`` alone suffices; with the meta-package the same
module is ``flambeau.array_api``):
    >>> import flambeau_core as fc
    >>> x = fc.tensor([[3.0, 1.0], [2.0, 5.0]])
    >>> xp = x.__array_namespace__()
    >>> xp.max(x, axis=0).tolist()
    [3.0, 5.0]
    >>> xp.std(x, axis=1).tolist()  # correction=0 by default in the standard
    [1.0, 1.5]
"""

from __future__ import annotations

import builtins as _builtins
import math as _math

import flambeau_core as _fc
from flambeau_core import _C
from flambeau_core._C import Tensor as _Tensor

__array_api_version__ = "2024.12"

# ----------------------------------------------------------------------------
# Constants and dtypes

e = _math.e
inf = _math.inf
nan = _math.nan
pi = _math.pi
newaxis = None

bool = _fc.bool  # noqa: A001  (the standard's name)
int8 = _fc.int8
int16 = _fc.int16
int32 = _fc.int32
int64 = _fc.int64
uint8 = _fc.uint8
float32 = _fc.float32
float64 = _fc.float64
# Present once core has them (added dtype by dtype); the namespace lists only
# the dtypes flambeau computes with.
for _name in ("uint16", "uint32", "uint64", "complex64", "complex128"):
    if hasattr(_fc, _name):
        globals()[_name] = getattr(_fc, _name)
del _name


def _dtypes_present() -> dict[str, object]:
    names = ("bool", "int8", "int16", "int32", "int64", "uint8", "uint16", "uint32", "uint64")
    names += ("float32", "float64", "complex64", "complex128")
    return {n: getattr(_fc, n) for n in names if hasattr(_fc, n)}


def _is_complex(dtype) -> _builtins.bool:
    return _builtins.bool(getattr(dtype, "is_complex", False))


def _is_float(dtype) -> _builtins.bool:
    return _builtins.bool(dtype.is_floating_point)


def _is_signed_int(dtype) -> _builtins.bool:
    return dtype in (_fc.int8, _fc.int16, _fc.int32, _fc.int64)


def _is_unsigned_int(dtype) -> _builtins.bool:
    return dtype in tuple(getattr(_fc, n) for n in ("uint8", "uint16", "uint32", "uint64") if hasattr(_fc, n))


_KINDS = {
    "bool": lambda d: d == _fc.bool,
    "signed integer": _is_signed_int,
    "unsigned integer": _is_unsigned_int,
    "integral": lambda d: _is_signed_int(d) or _is_unsigned_int(d),
    "real floating": lambda d: _is_float(d) and not _is_complex(d),
    "complex floating": _is_complex,
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


def result_type(*arrays_and_dtypes):
    """The dtype that results from promoting the arrays, dtypes and Python scalars given.

    Example:
        >>> import flambeau as fb
        >>> xp = fb.array_api
        >>> xp.result_type(xp.int32, xp.float32), xp.result_type(xp.ones(2, dtype=xp.int8), 1.5)
        (flambeau.float32, flambeau.float32)
    """
    if not arrays_and_dtypes:
        raise ValueError("result_type: at least one array, dtype or scalar is required")
    dtypes = [a.dtype if isinstance(a, _Tensor) else a for a in arrays_and_dtypes if not _is_py_scalar(a)]
    scalars = [a for a in arrays_and_dtypes if _is_py_scalar(a)]
    if not dtypes:
        raise ValueError("result_type: needs at least one array or dtype besides Python scalars")
    out = dtypes[0]
    for d in dtypes[1:]:
        out = _fc.promote_types(out, d)
    for s in scalars:  # a Python scalar takes the array's dtype, widened only across kinds
        out = _fc.result_type(_fc.empty((0,), dtype=out), s)
    return out


def can_cast(from_, to, /) -> _builtins.bool:
    """Whether ``from_`` (a dtype or array) promotes to ``to`` without loss (the standard's rule).

    ``flambeau.can_cast`` is PyTorch's, which allows same-kind narrowing
    (int64 to int8); the standard does not.

    Example:
        >>> import flambeau as fb
        >>> xp = fb.array_api
        >>> xp.can_cast(xp.int32, xp.int64), xp.can_cast(xp.float64, xp.float32)
        (True, False)
    """
    if isinstance(from_, _Tensor):
        from_ = from_.dtype
    try:
        return _fc.promote_types(from_, to) == to
    except TypeError:  # PyTorch refuses to promote the unsigned types with the others
        return False


def finfo(type, /):  # noqa: A002  (the standard's parameter name)
    """Machine limits of a floating dtype (see ``flambeau.finfo``).

    Example:
        >>> import flambeau as fb
        >>> xp = fb.array_api
        >>> xp.finfo(xp.float32).eps, xp.finfo(xp.float32).bits
        (1.1920928955078125e-07, 32)
    """
    return _fc.finfo(type.dtype if isinstance(type, _Tensor) else type)


def iinfo(type, /):  # noqa: A002
    """Machine limits of an integer dtype (see ``flambeau.iinfo``).

    Example:
        >>> import flambeau as fb
        >>> xp = fb.array_api
        >>> xp.iinfo(xp.int8).min, xp.iinfo(xp.int8).max
        (-128, 127)
    """
    return _fc.iinfo(type.dtype if isinstance(type, _Tensor) else type)


def astype(x, dtype, /, *, copy: _builtins.bool = True, device=None):
    """``x`` converted to ``dtype`` (and moved to ``device``); a new tensor unless ``copy=False`` allows reuse.

    Example:
        >>> import flambeau as fb
        >>> fb.astype(fb.tensor([1.5, -2.7]), fb.int64).tolist()
        [1, -2]
    """
    _check_tensor("astype", x)
    out = x if device is None else to_device(x, device)
    if out.dtype == dtype:
        return out.clone() if copy and out is x else out
    return out.to(dtype)


# ----------------------------------------------------------------------------
# Devices and the inspection API


def _default_device():
    return _fc.device("cpu")


def device(x, /):
    """The device of ``x`` (array-api-compat spells it so).

    Example:
        >>> import flambeau as fb
        >>> xp = fb.array_api
        >>> xp.device(xp.ones(2))
        device(type='cpu')
    """
    return x.device


def to_device(x, device, /, *, stream=None):
    """``x`` on ``device`` (a new tensor unless it is already there).

    Example:
        >>> import flambeau as fb
        >>> x = fb.tensor([1.0])
        >>> x.to_device("cpu") is x, x.to_device("cpu").device.type
        (True, 'cpu')
    """
    if stream is not None:
        raise ValueError("to_device: stream= is not supported on the CPU")
    return x.to(device)


class _Info:
    """What ``__array_namespace_info__()`` returns: the namespace's capabilities, devices and dtypes."""

    __module__ = "flambeau.array_api"

    def capabilities(self) -> dict:
        return {"boolean indexing": True, "data-dependent shapes": True, "max dimensions": 64}

    def default_device(self):
        return _default_device()

    def devices(self) -> list:
        return [_default_device()]

    def default_dtypes(self, *, device=None) -> dict:
        self._check_device(device)
        default_float = _fc.get_default_dtype() if hasattr(_fc, "get_default_dtype") else _fc.float32
        out = {"real floating": default_float, "integral": _fc.int64, "indexing": _fc.int64}
        if hasattr(_fc, "complex64"):
            out["complex floating"] = _fc.complex128 if default_float == _fc.float64 else _fc.complex64
        return out

    def dtypes(self, *, device=None, kind=None) -> dict:
        self._check_device(device)
        present = _dtypes_present()
        if kind is None:
            return present
        return {n: d for n, d in present.items() if isdtype(d, kind)}

    def _check_device(self, device) -> None:
        if device is not None and _fc.device(device) not in self.devices():
            raise ValueError(f"__array_namespace_info__: unknown device {device}")


def __array_namespace_info__() -> _Info:
    return _Info()


# ----------------------------------------------------------------------------
# Helpers


def _is_py_scalar(v) -> _builtins.bool:
    return isinstance(v, int | float | complex) and not isinstance(v, _Tensor)


def _check_tensor(op: str, x) -> None:
    if not isinstance(x, _Tensor):
        raise TypeError(f"{op}: expected a flambeau Tensor, got {type(x).__name__}")


def _axes(axis, ndim: int):
    """The standard's ``axis`` (None, int or tuple) as a tuple of PyTorch dims (None: all of them)."""
    if axis is None:
        return tuple(range(ndim))
    if isinstance(axis, int):
        return (axis,)
    return tuple(axis)


def _reduction(name: str, torch_fn, x, axis, keepdims, identity=None, **kw):
    """Applies a PyTorch reduction with the standard's axis rules.

    ``axis=()`` reduces nothing in the standard (PyTorch reads an empty dim
    list as "all dims"): ``identity(x)`` then gives the per-element result.
    A 0-d array reduces over no axes too.
    """
    _check_tensor(name, x)
    dims = _axes(axis, x.ndim)
    for d in dims:
        if not -_builtins.max(x.ndim, 1) <= d < _builtins.max(x.ndim, 1):
            raise IndexError(f"{name}: axis {d} is out of range for a {x.ndim}-d array")
    if len(set(d % _builtins.max(x.ndim, 1) for d in dims)) != len(dims):
        raise ValueError(f"{name}: repeated axis in {axis}")
    if not dims or x.ndim == 0:
        return identity(x)
    return torch_fn(x, dims, keepdims, **kw)


# ----------------------------------------------------------------------------
# Creation


def asarray(obj, /, *, dtype=None, device=None, copy: _builtins.bool | None = None):
    """A tensor from ``obj`` (tensor, scalar, nested sequence, DLPack or buffer object).

    ``copy=True`` always copies, ``copy=False`` never does (ValueError when it
    would have to), ``None`` copies only when needed.

    Example:
        >>> import flambeau as fb
        >>> xp = fb.array_api
        >>> xp.asarray([1, 2]), xp.asarray(2.5, dtype=xp.float64)
        (tensor([1, 2]), tensor(2.5000, dtype=flambeau.float64))
    """
    if device is not None:
        _fc.device(device)  # validates
    if isinstance(obj, _Tensor):
        moves = device is not None and _fc.device(device) != obj.device
        needs_copy = (dtype is not None and dtype != obj.dtype) or moves
        if copy is False and needs_copy:
            raise ValueError(f"asarray: copy=False, but converting {obj.dtype} on {obj.device} needs a copy")
        out = obj
        if dtype is not None and dtype != obj.dtype:
            out = out.to(dtype)
        if device is not None:
            out = out.to(device)
        return out.clone() if copy and out is obj else out
    if hasattr(obj, "__dlpack__") and _has_interop():
        out = _fc_from_dlpack(obj, copy=copy)  # shared unless copy=True
        return asarray(out, dtype=dtype, device=device, copy=False if copy is False else None)
    if copy is False:
        if isinstance(obj, memoryview | bytes | bytearray) or hasattr(obj, "__buffer__"):
            mv = memoryview(obj)
            return _fc.frombuffer(mv, dtype=dtype if dtype is not None else _buffer_dtype(mv))
        raise ValueError(f"asarray: copy=False, but a {type(obj).__name__} can only be copied into a tensor")
    if isinstance(obj, memoryview | bytearray | bytes) or hasattr(obj, "__buffer__"):
        mv = memoryview(obj)
        return _fc.frombuffer(mv, dtype=dtype if dtype is not None else _buffer_dtype(mv)).reshape(mv.shape).clone()
    return _fc.tensor(obj, dtype=dtype)


def _buffer_dtype(mv: memoryview):
    codes = {"?": "bool", "b": "int8", "B": "uint8", "h": "int16", "H": "uint16", "i": "int32", "I": "uint32"}
    codes |= {"l": "int64", "q": "int64", "L": "uint64", "Q": "uint64", "f": "float32", "d": "float64"}
    name = codes.get(mv.format.lstrip("@=<"))
    if name is None or not hasattr(_fc, name):
        raise TypeError(f"asarray: buffer format {mv.format!r} has no flambeau dtype")
    return getattr(_fc, name)


# DLPack lives in flambeau-interop, above core: interop registers its importer here when it is
# imported (implementations register upward; core never imports an upper layer).
_dlpack_importer = None


def _register_dlpack_importer(fn) -> None:
    """Called by flambeau-interop on import: ``fn(obj)`` makes a tensor sharing obj's memory."""
    global _dlpack_importer
    _dlpack_importer = fn


def _has_interop() -> _builtins.bool:
    return _dlpack_importer is not None


def _fc_from_dlpack(x, copy=None):
    if _dlpack_importer is None:
        raise RuntimeError("[from_dlpack] DLPack needs flambeau-interop: pip install flambeau-interop, then import it")
    out = _dlpack_importer(x)
    return out.clone() if copy else out


def from_dlpack(x, /, *, device=None, copy: _builtins.bool | None = None):
    """A tensor sharing ``x``'s memory through DLPack (a copy when ``copy=True``).

    Example:
        >>> import flambeau as fb
        >>> xp = fb.array_api
        >>> a = xp.asarray([1.0, 2.0])
        >>> b = xp.from_dlpack(a)
        >>> b, b.data_ptr() == a.data_ptr()
        (tensor([1., 2.]), True)
    """
    out = _fc_from_dlpack(x, copy=copy)
    return out if device is None else to_device(out, device)


def _shape(shape) -> tuple:
    return (shape,) if isinstance(shape, int) else tuple(shape)


def arange(start, /, stop=None, step=1, *, dtype=None, device=None):
    """Evenly spaced values in ``[start, stop)`` with ``step`` (``arange(n)``: the values of ``range(n)``).

    Example:
        >>> import flambeau as fb
        >>> xp = fb.array_api
        >>> xp.arange(5), xp.arange(1.0, 2.0, 0.25)
        (tensor([0, 1, 2, 3, 4]), tensor([1.0000, 1.2500, 1.5000, 1.7500]))
    """
    if stop is None:
        start, stop = 0, start
    return _fc.arange(start, stop, step, dtype=dtype)


def empty(shape, *, dtype=None, device=None):
    """An uninitialized tensor of ``shape``.

    Example:
        >>> import flambeau as fb
        >>> xp = fb.array_api
        >>> xp.empty((2, 3)).shape, xp.empty(4, dtype=xp.int32).dtype
        ((2, 3), flambeau.int32)
    """
    return _fc.empty(_shape(shape), dtype=dtype)


def empty_like(x, /, *, dtype=None, device=None):
    """An uninitialized tensor of ``x``'s shape (and dtype unless given).

    Example:
        >>> import flambeau as fb
        >>> xp = fb.array_api
        >>> xp.empty_like(xp.ones((2, 2), dtype=xp.float64)).dtype
        flambeau.float64
    """
    return _fc.empty_like(x, dtype=dtype)


def zeros(shape, *, dtype=None, device=None):
    """A tensor of ``shape`` filled with zeros.

    Example:
        >>> import flambeau as fb
        >>> xp = fb.array_api
        >>> xp.zeros((2, 2), dtype=xp.bool)
        tensor([[False, False],
                [False, False]])
    """
    return _fc.zeros(_shape(shape), dtype=dtype)


def zeros_like(x, /, *, dtype=None, device=None):
    """Zeros of ``x``'s shape (and dtype unless given).

    Example:
        >>> import flambeau as fb
        >>> xp = fb.array_api
        >>> xp.zeros_like(xp.asarray([1.5, 2.5]))
        tensor([0., 0.])
    """
    return _fc.zeros_like(x, dtype=dtype)


def ones(shape, *, dtype=None, device=None):
    """A tensor of ``shape`` filled with ones.

    Example:
        >>> import flambeau as fb
        >>> xp = fb.array_api
        >>> xp.ones((2, 2), dtype=xp.int64)
        tensor([[1, 1],
                [1, 1]])
    """
    return _fc.ones(_shape(shape), dtype=dtype)


def ones_like(x, /, *, dtype=None, device=None):
    """Ones of ``x``'s shape (and dtype unless given).

    Example:
        >>> import flambeau as fb
        >>> xp = fb.array_api
        >>> xp.ones_like(xp.asarray([[1, 2]]))
        tensor([[1, 1]])
    """
    return _fc.ones_like(x, dtype=dtype)


def full(shape, fill_value, *, dtype=None, device=None):
    """A tensor of ``shape`` filled with ``fill_value`` (the dtype follows the value unless given).

    Example:
        >>> import flambeau as fb
        >>> xp = fb.array_api
        >>> xp.full((2, 2), 7)
        tensor([[7, 7],
                [7, 7]])
    """
    return _fc.full(_shape(shape), fill_value, dtype=dtype)


def full_like(x, /, fill_value, *, dtype=None, device=None):
    """``fill_value`` in ``x``'s shape (and dtype unless given).

    Example:
        >>> import flambeau as fb
        >>> xp = fb.array_api
        >>> xp.full_like(xp.zeros(3), 0.5)
        tensor([0.5000, 0.5000, 0.5000])
    """
    return _fc.full(tuple(x.shape), fill_value, dtype=dtype if dtype is not None else x.dtype)


def eye(n_rows, n_cols=None, /, *, k=0, dtype=None, device=None):
    """A 2-D tensor with ones on the ``k``-th diagonal and zeros elsewhere.

    Example:
        >>> import flambeau as fb
        >>> xp = fb.array_api
        >>> xp.eye(2, 3, k=1)
        tensor([[0., 1., 0.],
                [0., 0., 1.]])
    """
    n_cols = n_rows if n_cols is None else n_cols
    out = zeros((n_rows, n_cols), dtype=dtype)
    if -n_rows < k < n_cols:
        out.diagonal(k).fill_(1)
    return out


def linspace(start, stop, /, num, *, dtype=None, device=None, endpoint: _builtins.bool = True):
    """``num`` evenly spaced values from ``start`` to ``stop`` (included unless ``endpoint=False``).

    Example:
        >>> import flambeau as fb
        >>> xp = fb.array_api
        >>> xp.linspace(0.0, 1.0, 5), xp.linspace(0.0, 1.0, 4, endpoint=False)
        (tensor([0.0000, 0.2500, 0.5000, 0.7500, 1.0000]), tensor([0.0000, 0.2500, 0.5000, 0.7500]))
    """
    if num < 0:
        raise ValueError(f"linspace: num must be non-negative, got {num}")
    if endpoint:
        return _fc.linspace(start, stop, num, dtype=dtype)
    if num == 0:
        return _fc.linspace(start, stop, 0, dtype=dtype)
    return _fc.linspace(start, stop, num + 1, dtype=dtype)[:num]


def meshgrid(*arrays, indexing: str = "xy"):
    """Coordinate grids from 1-D arrays (``indexing="xy"``, the standard's default, or ``"ij"``).

    Example:
        >>> import flambeau as fb
        >>> xp = fb.array_api
        >>> a, b = xp.meshgrid(xp.asarray([1, 2, 3]), xp.asarray([4, 5]))
        >>> a
        tensor([[1, 2, 3],
                [1, 2, 3]])
        >>> b.shape
        (2, 3)
    """
    if indexing not in ("xy", "ij"):
        raise ValueError(f"meshgrid: indexing must be 'xy' or 'ij', got {indexing!r}")
    return list(_fc.meshgrid(*arrays, indexing=indexing))


def tril(x, /, *, k: int = 0):
    """The lower triangle of the matrices (below the ``k``-th diagonal, included); zeros above.

    Example:
        >>> import flambeau as fb
        >>> xp = fb.array_api
        >>> xp.tril(xp.ones((3, 3)), k=-1)
        tensor([[0., 0., 0.],
                [1., 0., 0.],
                [1., 1., 0.]])
    """
    return _fc.tril(x, k)


def triu(x, /, *, k: int = 0):
    """The upper triangle of the matrices (above the ``k``-th diagonal, included); zeros below.

    Example:
        >>> import flambeau as fb
        >>> xp = fb.array_api
        >>> xp.triu(xp.ones((2, 3)))
        tensor([[1., 1., 1.],
                [0., 1., 1.]])
    """
    return _fc.triu(x, k)


# ----------------------------------------------------------------------------
# Element-wise functions


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
    "tanh": ("xp.tanh(xp.asarray([-1.5, 0.5]))", "tensor([-0.9051,  0.4621])"),
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


def _binary(name: str, torch_name: str | None = None):
    target = torch_name or name

    def fn(x1, x2, /):
        if not isinstance(x1, _Tensor) and not isinstance(x2, _Tensor):
            raise TypeError(f"{name}: at least one argument must be a flambeau Tensor")
        if not isinstance(x1, _Tensor):
            x1 = _fc.full((), x1, dtype=result_type(x2, x1))
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
tanh = _unary("tanh")
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
floor_divide = _binary("floor_divide")
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
    """Rounds half to even, as the standard and PyTorch do.

    Example:
        >>> import flambeau as fb
        >>> xp = fb.array_api
        >>> xp.round(xp.asarray([0.5, 1.5, 2.4, -0.6]))  # halves to even
        tensor([ 0.,  2.,  2., -1.])
    """
    _check_tensor("round", x)
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
    if isinstance(min, _Tensor) or isinstance(max, _Tensor):
        out = x
        if min is not None:
            out = _fc.maximum(out, min if isinstance(min, _Tensor) else _fc.full((), min, dtype=x.dtype))
        if max is not None:
            out = _fc.minimum(out, max if isinstance(max, _Tensor) else _fc.full((), max, dtype=x.dtype))
        return out.to(x.dtype)
    return _fc.clamp(x, min, max)


# ----------------------------------------------------------------------------
# Indexing, linear algebra, manipulation


def take(x, indices, /, *, axis=None):
    """The elements of ``x`` at ``indices`` along ``axis`` (a 1-D ``x`` needs no axis).

    Example:
        >>> import flambeau as fb
        >>> xp = fb.array_api
        >>> x = xp.asarray([[3.0, 1.0, 2.0], [0.0, 5.0, 4.0]])
        >>> xp.take(x, xp.asarray([2, 0]), axis=1)
        tensor([[2., 3.],
                [4., 0.]])
    """
    if axis is None:
        if x.ndim != 1:
            raise ValueError(f"take: axis is required for a {x.ndim}-d array")
        axis = 0
    return _fc.index_select(x, axis, indices)


def take_along_axis(x, indices, /, *, axis=-1):
    """Picks the values of ``x`` at ``indices`` along ``axis`` (the array API's name for ``take_along_dim``).

    Example:
        >>> import flambeau as fb
        >>> fb.take_along_axis(fb.tensor([[1, 2], [3, 4]]), fb.tensor([[1], [0]]), axis=1).tolist()
        [[2], [3]]
    """
    return _fc.take_along_dim(x, indices, axis)


def matmul(x1, x2, /):
    """The matrix product of ``x1`` and ``x2`` (batch dims broadcast; 1-D operands as vectors).

    Example:
        >>> import flambeau as fb
        >>> xp = fb.array_api
        >>> xp.matmul(xp.asarray([[1.0, 2.0], [3.0, 4.0]]), xp.asarray([1.0, 1.0]))
        tensor([3., 7.])
    """
    return _fc.matmul(x1, x2)


def matrix_transpose(x, /):
    """Swaps the last two axes (``x.mT``).

    Example:
        >>> import flambeau as fb
        >>> fb.matrix_transpose(fb.tensor([[1, 2], [3, 4]])).tolist()
        [[1, 3], [2, 4]]
    """
    _check_tensor("matrix_transpose", x)
    if x.ndim < 2:
        raise ValueError(f"matrix_transpose: needs at least 2 dimensions, got shape {tuple(x.shape)}")
    return x.mT


def tensordot(x1, x2, /, *, axes=2):
    """The contraction of ``x1`` and ``x2`` over ``axes`` (an int: the last/first ``axes`` dims, or two sequences).

    Example:
        >>> import flambeau as fb
        >>> xp = fb.array_api
        >>> xp.tensordot(xp.ones((2, 3)), xp.ones((3, 4)), axes=1).shape, xp.tensordot(xp.ones(3), xp.ones(3), axes=1)
        ((2, 4), tensor(3.))
    """
    return _fc.tensordot(x1, x2, dims=axes)


def vecdot(x1, x2, /, *, axis=-1):
    """sum(conj(x1) * x2) over ``axis`` after broadcasting.

    Example:
        >>> import flambeau as fb
        >>> xp = fb.array_api
        >>> xp.vecdot(xp.asarray([[1.0, 2.0], [3.0, 4.0]]), xp.asarray([1.0, 1.0]))
        tensor([3., 7.])
    """
    if x1.shape[axis] != x2.shape[axis]:
        raise ValueError(f"vecdot: axis {axis} has size {x1.shape[axis]} in x1 and {x2.shape[axis]} in x2")
    a = _fc.conj(x1) if _is_complex(x1.dtype) else x1
    return _fc.sum(a * x2, axis)


def broadcast_arrays(*arrays):
    """The arrays broadcast against each other to one shape.

    Example:
        >>> import flambeau as fb
        >>> xp = fb.array_api
        >>> a, b = xp.broadcast_arrays(xp.ones((2, 1)), xp.zeros(3))
        >>> a.shape, b.shape
        ((2, 3), (2, 3))
    """
    shape = _fc.broadcast_shapes(*(tuple(a.shape) for a in arrays))
    return [a.expand(shape) for a in arrays]


def broadcast_to(x, /, shape):
    """``x`` broadcast to ``shape`` (a view).

    Example:
        >>> import flambeau as fb
        >>> xp = fb.array_api
        >>> xp.broadcast_to(xp.asarray([1, 2]), (2, 2))
        tensor([[1, 2],
                [1, 2]])
    """
    return x.expand(tuple(shape))


def concat(arrays, /, *, axis: int | None = 0):
    """The arrays joined along an existing ``axis`` (``axis=None``: flattened first).

    Example:
        >>> import flambeau as fb
        >>> xp = fb.array_api
        >>> xp.concat([xp.ones((1, 2)), xp.zeros((2, 2))]).shape, xp.concat([xp.ones(2), xp.zeros(1)], axis=None)
        ((3, 2), tensor([1., 1., 0.]))
    """
    if axis is None:
        return _fc.cat([a.reshape(-1) for a in arrays], 0)
    return _fc.cat(list(arrays), axis)


def expand_dims(x, /, axis: int = 0):
    """Inserts a size-1 axis at ``axis`` (the array API's name for ``unsqueeze``); IndexError out of range.

    Example:
        >>> import flambeau as fb
        >>> fb.expand_dims(fb.zeros(2, 3), axis=1).shape
        (2, 1, 3)
    """
    _check_tensor("expand_dims", x)
    if not -x.ndim - 1 <= axis <= x.ndim:
        raise IndexError(f"expand_dims: axis {axis} is out of range for a {x.ndim}-d array")
    return _fc.unsqueeze(x, axis)


def flip(x, /, *, axis=None):
    """``x`` with the order of elements reversed along ``axis`` (all axes if None).

    Example:
        >>> import flambeau as fb
        >>> xp = fb.array_api
        >>> x = xp.asarray([[3.0, 1.0, 2.0], [0.0, 5.0, 4.0]])
        >>> xp.flip(x, axis=1)
        tensor([[2., 1., 3.],
                [4., 5., 0.]])
    """
    return _fc.flip(x, _axes(axis, x.ndim))


def moveaxis(x, source, destination, /):
    """``x`` with axes ``source`` moved to positions ``destination``.

    Example:
        >>> import flambeau as fb
        >>> xp = fb.array_api
        >>> xp.moveaxis(xp.zeros((2, 3, 4)), 0, -1).shape
        (3, 4, 2)
    """
    return _fc.movedim(x, source, destination)


def permute_dims(x, /, axes):
    """Reorders the axes of ``x`` to ``axes`` (the array API's name for ``permute``); a view.

    Example:
        >>> import flambeau as fb
        >>> fb.permute_dims(fb.zeros(2, 3, 4), (2, 0, 1)).shape
        (4, 2, 3)
    """
    return _fc.permute(x, tuple(axes))


def repeat(x, repeats, /, *, axis=None):
    """Repeats each element (PyTorch's ``repeat_interleave``, not its ``repeat``).

    Example:
        >>> import flambeau as fb
        >>> xp = fb.array_api
        >>> xp.repeat(xp.asarray([1, 2, 3]), 2), xp.repeat(xp.asarray([1, 2]), xp.asarray([1, 3]))
        (tensor([1, 1, 2, 2, 3, 3]), tensor([1, 2, 2, 2]))
    """
    if axis is None:
        x = x.reshape(-1)
        axis = 0
    return _fc.repeat_interleave(x, repeats, axis)


def reshape(x, /, shape, *, copy: _builtins.bool | None = None):
    """``x`` with a new ``shape`` (one entry may be -1).

    Example:
        >>> import flambeau as fb
        >>> xp = fb.array_api
        >>> xp.reshape(xp.arange(6), (2, -1))
        tensor([[0, 1, 2],
                [3, 4, 5]])
    """
    shape = tuple(shape)
    if copy:
        return x.reshape(shape).clone()
    if copy is False:
        try:
            return x.view(shape)
        except Exception as err:
            raise ValueError(f"reshape: copy=False, but {tuple(x.shape)} -> {shape} needs a copy") from err
    return x.reshape(shape)


def roll(x, /, shift, *, axis=None):
    """``x`` with elements shifted by ``shift`` along ``axis`` (flattened if None), wrapping around.

    Example:
        >>> import flambeau as fb
        >>> xp = fb.array_api
        >>> x = xp.asarray([[3.0, 1.0, 2.0], [0.0, 5.0, 4.0]])
        >>> xp.roll(xp.asarray([1, 2, 3, 4]), 1), xp.roll(x, -1, axis=1)
        (tensor([4, 1, 2, 3]), tensor([[1., 2., 3.],
                [5., 4., 0.]]))
    """
    if axis is None:
        return _fc.roll(x.reshape(-1), shift, 0).reshape(tuple(x.shape))
    return _fc.roll(x, shift, axis)


def squeeze(x, /, axis):
    """Removes the given size-1 axes; a non-1 axis is a ValueError (PyTorch ignores it).

    Example:
        >>> import flambeau as fb
        >>> xp = fb.array_api
        >>> xp.squeeze(xp.zeros((1, 3, 1)), axis=(0, 2)).shape
        (3,)
    """
    dims = _axes(axis, x.ndim)
    for d in dims:
        if not -x.ndim <= d < x.ndim:
            raise IndexError(f"squeeze: axis {d} is out of range for a {x.ndim}-d array")
        if x.shape[d] != 1:
            raise ValueError(f"squeeze: axis {d} has size {x.shape[d]}, not 1 (shape {tuple(x.shape)})")
    return _fc.squeeze(x, dims)


def stack(arrays, /, *, axis: int = 0):
    """The arrays joined along a new ``axis``.

    Example:
        >>> import flambeau as fb
        >>> xp = fb.array_api
        >>> xp.stack([xp.asarray([1, 2]), xp.asarray([3, 4])], axis=1)
        tensor([[1, 3],
                [2, 4]])
    """
    return _fc.stack(list(arrays), axis)


def tile(x, repetitions, /):
    """``x`` repeated ``repetitions`` times along each axis.

    Example:
        >>> import flambeau as fb
        >>> xp = fb.array_api
        >>> xp.tile(xp.asarray([1, 2]), (2, 2))
        tensor([[1, 2, 1, 2],
                [1, 2, 1, 2]])
    """
    return _fc.tile(x, tuple(repetitions))


def unstack(x, /, *, axis: int = 0):
    """Splits ``x`` along ``axis`` into a tuple of its slices (the array API's name for ``unbind``).

    Example:
        >>> import flambeau as fb
        >>> [t.tolist() for t in fb.unstack(fb.tensor([[1, 2], [3, 4]]), axis=1)]
        [[1, 3], [2, 4]]
    """
    return tuple(_fc.unbind(x, axis))


# ----------------------------------------------------------------------------
# Searching, sets, sorting


def argmax(x, /, *, axis=None, keepdims: _builtins.bool = False):
    """The index of the largest element along ``axis`` (of the flattened array if None).

    Example:
        >>> import flambeau as fb
        >>> xp = fb.array_api
        >>> x = xp.asarray([[3.0, 1.0, 2.0], [0.0, 5.0, 4.0]])
        >>> xp.argmax(x, axis=1), xp.argmax(x)
        (tensor([0, 1]), tensor(4))
    """
    if axis is None:
        out = _fc.argmax(x.reshape(-1))
        return out.reshape((1,) * x.ndim) if keepdims else out
    return _fc.argmax(x, axis, keepdims)


def argmin(x, /, *, axis=None, keepdims: _builtins.bool = False):
    """The index of the smallest element along ``axis`` (of the flattened array if None).

    Example:
        >>> import flambeau as fb
        >>> xp = fb.array_api
        >>> x = xp.asarray([[3.0, 1.0, 2.0], [0.0, 5.0, 4.0]])
        >>> xp.argmin(x, axis=0)
        tensor([1, 0, 0])
    """
    if axis is None:
        out = _fc.argmin(x.reshape(-1))
        return out.reshape((1,) * x.ndim) if keepdims else out
    return _fc.argmin(x, axis, keepdims)


def count_nonzero(x, /, *, axis=None, keepdims: _builtins.bool = False):
    """The number of non-zero elements along ``axis`` (all of them if None).

    Example:
        >>> import flambeau as fb
        >>> xp = fb.array_api
        >>> xp.count_nonzero(xp.asarray([[0, 1], [2, 3]]), axis=1)
        tensor([1, 2])
    """
    return sum(x != 0, axis=axis, keepdims=keepdims, dtype=_fc.int64)


def nonzero(x, /):
    """The indices of the non-zero elements, one index tensor per dimension.

    Example:
        >>> import flambeau as fb
        >>> xp = fb.array_api
        >>> xp.nonzero(xp.asarray([[0, 1], [2, 0]]))
        (tensor([0, 1]), tensor([1, 0]))
    """
    if x.ndim == 0:
        raise ValueError("nonzero: not defined for a 0-d array")
    return tuple(_fc.nonzero(x, as_tuple=True))


def searchsorted(x1, x2, /, *, side: str = "left", sorter=None):
    """The indices where the values of ``x2`` would be inserted into the sorted 1-D ``x1``.

    Example:
        >>> import flambeau as fb
        >>> xp = fb.array_api
        >>> xp.searchsorted(xp.asarray([1.0, 2.0, 4.0]), xp.asarray([2.0, 3.0]), side="right")
        tensor([2, 2])
    """
    if side not in ("left", "right"):
        raise ValueError(f"searchsorted: side must be 'left' or 'right', got {side!r}")
    return _fc.searchsorted(x1, x2, side=side, sorter=sorter)


def where(condition, x1, x2, /):
    """``x1`` where ``condition`` holds, else ``x2`` (broadcast; either may be a Python scalar).

    Example:
        >>> import flambeau as fb
        >>> xp = fb.array_api
        >>> xp.where(xp.asarray([True, False]), xp.asarray([1.0, 2.0]), 0.0)
        tensor([1., 0.])
    """
    return _fc.where(condition, x1, x2)


def _unique(x):
    _check_tensor("unique", x)
    # Every NaN counts as its own value, as the standard asks; core's unique (like PyTorch's) already does so.
    flat = x.reshape(-1)
    values, inverse, counts = _fc.unique(flat, sorted=True, return_inverse=True, return_counts=True)
    return values, inverse.reshape(tuple(x.shape)), counts


def unique_values(x, /):
    """The distinct values of ``x``, sorted, as a 1-D tensor.

    Example:
        >>> import flambeau as fb
        >>> fb.unique_values(fb.tensor([3, 1, 3, 2])).tolist()
        [1, 2, 3]
    """
    return _unique(x)[0]


def unique_counts(x, /):
    """The distinct values of ``x`` (sorted) and how often each occurs: ``(values, counts)``.

    Example:
        >>> import flambeau as fb
        >>> values, counts = fb.unique_counts(fb.tensor([3, 1, 3]))
        >>> values.tolist(), counts.tolist()
        ([1, 3], [1, 2])
    """
    values, _, counts = _unique(x)
    return UniqueCountsResult(values, counts)


def unique_inverse(x, /):
    """The distinct values of ``x`` (sorted) and each element's index among them: ``(values, inverse_indices)``.

    ``values[inverse_indices]`` rebuilds ``x``; ``inverse_indices`` has ``x``'s shape.

    Example:
        >>> import flambeau as fb
        >>> values, inverse = fb.unique_inverse(fb.tensor([3, 1, 3]))
        >>> values.tolist(), inverse.tolist()
        ([1, 3], [1, 0, 1])
    """
    values, inverse, _ = _unique(x)
    return UniqueInverseResult(values, inverse)


def unique_all(x, /):
    """The distinct values of ``x`` (sorted) with ``indices`` (each value's first flat position in ``x``),
    ``inverse_indices`` and ``counts``: ``(values, indices, inverse_indices, counts)``.

    Example:
        >>> import flambeau as fb
        >>> r = fb.unique_all(fb.tensor([3, 1, 3]))
        >>> r.values.tolist(), r.indices.tolist(), r.inverse_indices.tolist(), r.counts.tolist()
        ([1, 3], [1, 0], [1, 0, 1], [1, 2])
    """
    values, inverse, counts = _unique(x)
    # The index of each value's first occurrence: the smallest flat position mapping to it.
    flat_inv = inverse.reshape(-1)
    positions = _fc.arange(flat_inv.shape[0], dtype=_fc.int64)
    first = _fc.full((values.shape[0],), flat_inv.shape[0], dtype=_fc.int64)
    first = first.scatter_reduce(0, flat_inv, positions, "amin", include_self=True)
    return UniqueAllResult(values, first, inverse, counts)


def argsort(x, /, *, axis: int = -1, descending: _builtins.bool = False, stable: _builtins.bool = True):
    """The indices that sort ``x`` along ``axis`` (stable by default).

    Example:
        >>> import flambeau as fb
        >>> xp = fb.array_api
        >>> xp.argsort(xp.asarray([3.0, 1.0, 2.0]), descending=True)
        tensor([0, 2, 1])
    """
    return _fc.argsort(x, dim=axis, descending=descending, stable=stable)


def sort(x, /, *, axis: int = -1, descending: _builtins.bool = False, stable: _builtins.bool = True):
    """Sorted values only (PyTorch's ``sort`` returns values and indices).

    Without autograd recording, on the CPU, the values-only kernel (no index
    payload; same order: stable, NaN largest); else sort's values, whose
    gradient goes through its indices.

    Example:
        >>> import flambeau as fb
        >>> xp = fb.array_api
        >>> x = xp.asarray([[3.0, 1.0, 2.0], [0.0, 5.0, 4.0]])
        >>> xp.sort(x, axis=1), xp.sort(xp.asarray([3, 1, 2]), descending=True)
        (tensor([[1., 2., 3.],
                [0., 4., 5.]]), tensor([3, 2, 1]))
    """
    if isinstance(x, _Tensor) and x.device.type == "cpu" and not (x.requires_grad and _C.is_grad_enabled()):
        return _C._sort_values(x, axis, descending)
    return _fc.sort(x, dim=axis, descending=descending, stable=stable)[0]


# ----------------------------------------------------------------------------
# Statistics and utilities


def _acc_dtype(x, dtype):
    """The standard's default accumulation dtype for sum/prod/cumulative_*: ints widen to int64/uint64."""
    if dtype is not None:
        return dtype
    if x.dtype == _fc.bool or _is_signed_int(x.dtype):
        return _fc.int64
    if _is_unsigned_int(x.dtype):
        return getattr(_fc, "uint64", _fc.int64)
    return x.dtype


def sum(x, /, *, axis=None, dtype=None, keepdims: _builtins.bool = False):  # noqa: A001
    """The sum along ``axis`` (all axes if None); integers accumulate in the default integer dtype.

    Example:
        >>> import flambeau as fb
        >>> xp = fb.array_api
        >>> x = xp.asarray([[3.0, 1.0, 2.0], [0.0, 5.0, 4.0]])
        >>> xp.sum(x, axis=0), xp.sum(xp.asarray([1, 2], dtype=xp.int8)).dtype
        (tensor([3., 6., 6.]), flambeau.int64)
    """
    acc = _acc_dtype(x, dtype)
    # PyTorch's sum widens small integers to int64 by itself; the cast back keeps
    # the requested dtype (with the same wrap-around as summing in it).
    return _reduction("sum", _fc.sum, x.to(acc), axis, keepdims, identity=_fc.clone).to(acc)


def prod(x, /, *, axis=None, dtype=None, keepdims: _builtins.bool = False):
    """The product along ``axis`` (all axes if None); 1 for an empty array.

    Example:
        >>> import flambeau as fb
        >>> xp = fb.array_api
        >>> x = xp.asarray([[3.0, 1.0, 2.0], [0.0, 5.0, 4.0]])
        >>> xp.prod(x, axis=1), xp.prod(xp.asarray([], dtype=xp.float32))
        (tensor([6., 0.]), tensor(1.))
    """
    x = x.to(_acc_dtype(x, dtype))

    def over(t, dims, keep):
        for d in sorted((d % t.ndim for d in dims), reverse=True):
            t = _fc.prod(t, d, keep)
        return t

    return _reduction("prod", over, x, axis, keepdims, identity=_fc.clone)


def mean(x, /, *, axis=None, keepdims: _builtins.bool = False):
    """The arithmetic mean along ``axis`` (all axes if None) of a floating array.

    Example:
        >>> import flambeau as fb
        >>> xp = fb.array_api
        >>> x = xp.asarray([[3.0, 1.0, 2.0], [0.0, 5.0, 4.0]])
        >>> xp.mean(x, axis=1), xp.mean(x, axis=0, keepdims=True).shape
        (tensor([2., 3.]), (1, 3))
    """
    return _reduction("mean", _fc.mean, x, axis, keepdims, identity=_fc.clone)


def max(x, /, *, axis=None, keepdims: _builtins.bool = False):  # noqa: A001
    """Values only (PyTorch's ``max`` with a dim also returns indices).

    Example:
        >>> import flambeau as fb
        >>> xp = fb.array_api
        >>> x = xp.asarray([[3.0, 1.0, 2.0], [0.0, 5.0, 4.0]])
        >>> xp.max(x, axis=0), xp.max(x)
        (tensor([3., 5., 4.]), tensor(5.))
    """
    return _reduction("max", _fc.amax, x, axis, keepdims, identity=_fc.clone)


def min(x, /, *, axis=None, keepdims: _builtins.bool = False):  # noqa: A001
    """The smallest values along ``axis`` (all axes if None): values only, as the standard says.

    Example:
        >>> import flambeau as fb
        >>> xp = fb.array_api
        >>> x = xp.asarray([[3.0, 1.0, 2.0], [0.0, 5.0, 4.0]])
        >>> xp.min(x, axis=1), xp.min(x)
        (tensor([1., 0.]), tensor(0.))
    """
    return _reduction("min", _fc.amin, x, axis, keepdims, identity=_fc.clone)


def _spread(name: str, x, axis, correction, keepdims):
    def over(t, dims, keep):
        return getattr(_fc, name)(t, dims, correction=correction, keepdim=keep)

    def one_each(t):  # every element its own sample: 0, or NaN when correction >= 1 sample
        return getattr(_fc, name)(t.unsqueeze(-1), (-1,), correction=correction, keepdim=False)

    return _reduction(name, over, x, axis, keepdims, identity=one_each)


def var(x, /, *, axis=None, correction=0.0, keepdims: _builtins.bool = False):
    """Variance with ``correction`` (default 0: PyTorch's default is 1).

    Example:
        >>> import flambeau as fb
        >>> xp = fb.array_api
        >>> x = xp.asarray([[3.0, 1.0, 2.0], [0.0, 5.0, 4.0]])
        >>> xp.var(x, axis=1), xp.var(x, axis=1, correction=1)
        (tensor([0.6667, 4.6667]), tensor([1., 7.]))
    """
    return _spread("var", x, axis, correction, keepdims)


def std(x, /, *, axis=None, correction=0.0, keepdims: _builtins.bool = False):
    """Standard deviation with ``correction`` (default 0: PyTorch's default is 1).

    Example:
        >>> import flambeau as fb
        >>> xp = fb.array_api
        >>> x = xp.asarray([[3.0, 1.0, 2.0], [0.0, 5.0, 4.0]])
        >>> xp.std(x, axis=1), xp.std(x, axis=1, correction=1)
        (tensor([0.8165, 2.1602]), tensor([1.0000, 2.6458]))
    """
    return _spread("std", x, axis, correction, keepdims)


def _cumulative(fn_name: str, x, axis, dtype, include_initial, initial):
    _check_tensor(fn_name, x)
    if axis is None:
        if x.ndim > 1:
            raise ValueError(f"{fn_name}: axis is required for a {x.ndim}-d array")
        axis = 0
    if x.ndim == 0:
        raise ValueError(f"{fn_name}: not defined for a 0-d array")
    x = x.to(_acc_dtype(x, dtype))
    out = getattr(_fc, "cumsum" if fn_name == "cumulative_sum" else "cumprod")(x, axis)
    if include_initial:
        shape = list(x.shape)
        shape[axis] = 1
        out = _fc.cat([_fc.full(tuple(shape), initial, dtype=out.dtype), out], axis)
    return out


def cumulative_sum(x, /, *, axis=None, dtype=None, include_initial: _builtins.bool = False):
    """Running sums along ``axis`` (optional for a 1-D ``x``); ``include_initial`` puts a leading 0.

    Example:
        >>> import flambeau as fb
        >>> fb.cumulative_sum(fb.tensor([1, 2, 3]), include_initial=True).tolist()
        [0, 1, 3, 6]
    """
    return _cumulative("cumulative_sum", x, axis, dtype, include_initial, 0)


def cumulative_prod(x, /, *, axis=None, dtype=None, include_initial: _builtins.bool = False):
    """Running products along ``axis`` (optional for a 1-D ``x``); ``include_initial`` puts a leading 1.

    Example:
        >>> import flambeau as fb
        >>> fb.cumulative_prod(fb.tensor([1, 2, 3, 4])).tolist()
        [1, 2, 6, 24]
    """
    return _cumulative("cumulative_prod", x, axis, dtype, include_initial, 1)


def all(x, /, *, axis=None, keepdims: _builtins.bool = False):  # noqa: A001
    """Whether every element along ``axis`` (all axes if None) is true.

    Example:
        >>> import flambeau as fb
        >>> xp = fb.array_api
        >>> xp.all(xp.asarray([[True, False], [True, True]]), axis=1)
        tensor([False,  True])
    """
    return _reduction("all", _fc.all, x, axis, keepdims, identity=lambda t: t != 0)


def any(x, /, *, axis=None, keepdims: _builtins.bool = False):  # noqa: A001
    """Whether some element along ``axis`` (all axes if None) is true.

    Example:
        >>> import flambeau as fb
        >>> xp = fb.array_api
        >>> xp.any(xp.asarray([[True, False], [False, False]]), axis=1)
        tensor([ True, False])
    """
    return _reduction("any", _fc.any, x, axis, keepdims, identity=lambda t: t != 0)


def diff(x, /, *, axis: int = -1, n: int = 1, prepend=None, append=None):
    """n-th discrete difference along ``axis``.

    Example:
        >>> import flambeau as fb
        >>> xp = fb.array_api
        >>> xp.diff(xp.asarray([1.0, 4.0, 9.0, 16.0])), xp.diff(xp.asarray([1.0, 4.0, 9.0]), n=2)
        (tensor([3., 5., 7.]), tensor([2.]))
    """
    if n < 0:
        raise ValueError(f"diff: n must be non-negative, got {n}")
    parts = [p for p in (prepend, x, append) if p is not None]
    out = _fc.cat(parts, axis) if len(parts) > 1 else x
    for _ in range(n):
        size = out.shape[axis]
        out = out.narrow(axis, 1, size - 1) - out.narrow(axis, 0, size - 1) if size else out
    return out


# ----------------------------------------------------------------------------
# Result tuples


def _named_tuple(name: str, fields: tuple[str, ...], function: str):
    from collections import namedtuple

    cls = namedtuple(name, fields)
    cls.__module__ = "flambeau.array_api"
    cls.__doc__ = f"""What ``{function}`` returns: the named tuple ``({", ".join(fields)})``.

    Example:
        >>> import flambeau as fb
        >>> xp = fb.array_api
        >>> result = xp.{function}(xp.asarray([3, 1, 3]))
        >>> type(result).__name__, result._fields
        ('{name}', {fields!r})
    """
    return cls


UniqueAllResult = _named_tuple("UniqueAllResult", ("values", "indices", "inverse_indices", "counts"), "unique_all")
UniqueCountsResult = _named_tuple("UniqueCountsResult", ("values", "counts"), "unique_counts")
UniqueInverseResult = _named_tuple("UniqueInverseResult", ("values", "inverse_indices"), "unique_inverse")

# ----------------------------------------------------------------------------
# What the standard asks of the array object itself

_KNOWN_VERSIONS = ("2021.12", "2022.12", "2023.12", "2024.12")


def _tensor_array_namespace(self, /, *, api_version: str | None = None):
    """This namespace (``flambeau.array_api``); ``api_version`` may name any version up to 2024.12."""
    if api_version is not None and api_version not in _KNOWN_VERSIONS:
        raise ValueError(f"__array_namespace__: api_version {api_version!r} is not one of {_KNOWN_VERSIONS}")
    import sys

    return sys.modules[__name__]


def _tensor_to_device(self, device, /, *, stream=None):
    """The standard's ``x.to_device(device)``: ``x`` on ``device`` (a new tensor unless it is already there).

    Example:
        >>> import flambeau as fb
        >>> x = fb.tensor([1.0])
        >>> x.to_device("cpu") is x, x.to_device("cpu").device.type
        (True, 'cpu')
    """
    return to_device(self, device, stream=stream)


def _tensor_complex(self) -> complex:
    if self.numel() != 1:
        raise TypeError(f"only one-element tensors can be converted to Python scalars, got shape {tuple(self.shape)}")
    return complex(self.item())


def _install_tensor_methods() -> None:
    _Tensor.__array_namespace__ = _tensor_array_namespace
    _Tensor.to_device = _tensor_to_device
    if not hasattr(_Tensor, "__complex__"):
        _Tensor.__complex__ = _tensor_complex


# The extensions, as namespaces of their own (xp.linalg, xp.fft); imported last
# because they use the functions above.
from flambeau_core import _array_api_fft as fft  # noqa: E402,F401
from flambeau_core import _array_api_linalg as linalg  # noqa: E402,F401
