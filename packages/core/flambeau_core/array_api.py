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

# The data-type rules (the standard's promotion table, isdtype, result_type, can_cast,
# finfo, iinfo) and the uint16/uint32/uint64 fallback for kernels that lack them live in
# _array_api_dtypes.py; the element-wise functions in _array_api_elementwise.py.
from flambeau_core._array_api_dtypes import can_cast as can_cast
from flambeau_core._array_api_dtypes import check_tensor as _check_tensor
from flambeau_core._array_api_dtypes import dtypes_present as _dtypes_present
from flambeau_core._array_api_dtypes import finfo as finfo
from flambeau_core._array_api_dtypes import from_signed as _from_signed
from flambeau_core._array_api_dtypes import iinfo as iinfo
from flambeau_core._array_api_dtypes import is_complex as _is_complex
from flambeau_core._array_api_dtypes import is_float as _is_float
from flambeau_core._array_api_dtypes import is_signed_int as _is_signed_int
from flambeau_core._array_api_dtypes import is_unsigned_int as _is_unsigned_int
from flambeau_core._array_api_dtypes import isdtype as isdtype
from flambeau_core._array_api_dtypes import needs_signed as _needs_signed
from flambeau_core._array_api_dtypes import promote as _promote
from flambeau_core._array_api_dtypes import result_type as result_type
from flambeau_core._array_api_dtypes import to_signed as _to_signed
from flambeau_core._array_api_dtypes import unsigned_safe as _unsigned_safe
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
        if (
            device is not None
            and (device if isinstance(device, _fc.device) else _fc.device(device)) not in self.devices()
        ):
            raise ValueError(f"__array_namespace_info__: unknown device {device}")


def __array_namespace_info__() -> _Info:
    return _Info()


# ----------------------------------------------------------------------------
# Helpers


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
    if isinstance(obj, list | tuple) and _has_uint64_scalar(obj):
        # 0-d uint64 arrays and NumPy uint64 scalars inside a sequence go in as Python ints (2**63 and
        # above do not fit core's int64 path) and make the result uint64 when no dtype is given, as NumPy.
        obj = _map_nested(obj, _uint64_as_int)
        if dtype is None and not _has_non_int(obj):
            dtype = _fc.uint64
        elif dtype is None or _is_float(dtype) or _is_complex(dtype):  # next to floats, or into them: a float
            obj = _map_nested(obj, lambda v: float(v) if isinstance(v, int) and v >= 2**63 else v)
    if dtype is not None and dtype == getattr(_fc, "uint64", None) and _has_big_int(obj):
        # Core builds integers through int64: uint64 values from 2**63 up go in as their int64 bits.
        wrapped = _map_nested(obj, lambda v: v - 2**64 if isinstance(v, int) and v >= 2**63 else v)
        return _fc.tensor(wrapped, dtype=_fc.int64).view(dtype)
    return _fc.tensor(obj, dtype=dtype)


def _map_nested(obj, fn):
    if isinstance(obj, list | tuple):
        return [_map_nested(o, fn) for o in obj]
    return fn(obj)


def _has_big_int(obj) -> _builtins.bool:
    if isinstance(obj, list | tuple):
        return _builtins.any(_has_big_int(o) for o in obj)
    return isinstance(obj, int) and not isinstance(obj, _builtins.bool) and obj >= 2**63


def _is_uint64_scalar(v) -> _builtins.bool:
    """A 0-d uint64 tensor, or a NumPy uint64 scalar or 0-d array."""
    if isinstance(v, _Tensor):
        return v.ndim == 0 and v.dtype == getattr(_fc, "uint64", None)
    return v.__class__.__module__ == "numpy" and getattr(v, "ndim", None) == 0 and str(v.dtype) == "uint64"


def _has_uint64_scalar(obj) -> _builtins.bool:
    if isinstance(obj, list | tuple):
        return _builtins.any(_has_uint64_scalar(o) for o in obj)
    return _is_uint64_scalar(obj)


def _has_non_int(obj) -> _builtins.bool:
    if isinstance(obj, list | tuple):
        return _builtins.any(_has_non_int(o) for o in obj)
    return isinstance(obj, _builtins.bool) or not isinstance(obj, int)


def _uint64_as_int(v):
    return int(v.item()) if _is_uint64_scalar(v) else v


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
        (flambeau.Size([2, 3]), flambeau.int32)
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
    return _full(_shape(shape), fill_value, dtype)


def full_like(x, /, fill_value, *, dtype=None, device=None):
    """``fill_value`` in ``x``'s shape (and dtype unless given).

    Example:
        >>> import flambeau as fb
        >>> xp = fb.array_api
        >>> xp.full_like(xp.zeros(3), 0.5)
        tensor([0.5000, 0.5000, 0.5000])
    """
    return _full(tuple(x.shape), fill_value, dtype if dtype is not None else x.dtype)


def _full(shape, fill_value, dtype):
    if dtype is not None and dtype == getattr(_fc, "uint64", None) and _has_big_int(fill_value):
        return _fc.full(shape, fill_value - 2**64, dtype=_fc.int64).view(dtype)  # core fills through int64
    return _fc.full(shape, fill_value, dtype=dtype)


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
        flambeau.Size([2, 3])
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
# Element-wise functions: flambeau_core/_array_api_elementwise.py

from flambeau_core._array_api_elementwise import *  # noqa: E402,F401,F403
from flambeau_core._array_api_elementwise import _binary_operands  # noqa: E402

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
    return _products(_fc.matmul, x1, x2)


def _products(fn, x1, x2, **kw):
    """``fn(x1, x2)`` (a matrix/tensor product) on the standard's promoted dtype, uint16/32/64 included.

    The kernels lack uint16/32/64: products and sums wrap alike in int32/int64 (uint16/32, by
    value) and on uint64's int64 bits, so the result is cast back.
    """
    x1, x2 = _binary_operands(fn.__name__, x1, x2)
    if not _needs_signed(x1.dtype):
        return fn(x1, x2, **kw)
    out = fn(_to_signed(x1, ordered=False), _to_signed(x2, ordered=False), **kw)
    return _from_signed(out, x1.dtype, ordered=False)


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
        (flambeau.Size([2, 4]), tensor(3.))
    """
    return _products(_fc.tensordot, x1, x2, dims=axes)


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
    x1, x2 = _binary_operands("vecdot", x1, x2)
    a = _fc.conj(x1) if _is_complex(x1.dtype) else x1
    # The sum keeps the operands' dtype (PyTorch's widens small integers to int64).
    return _unsigned_safe(lambda t: _fc.sum(t, axis), _fc.mul(a, x2)).to(x1.dtype)


def broadcast_arrays(*arrays):
    """The arrays broadcast against each other to one shape.

    Example:
        >>> import flambeau as fb
        >>> xp = fb.array_api
        >>> a, b = xp.broadcast_arrays(xp.ones((2, 1)), xp.zeros(3))
        >>> a.shape, b.shape
        (flambeau.Size([2, 3]), flambeau.Size([2, 3]))
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
        (flambeau.Size([3, 2]), tensor([1., 1., 0.]))
    """
    arrays = _promoted(list(arrays))
    if axis is None:
        arrays, axis = [a.reshape(-1) for a in arrays], 0
    return _fc.cat(arrays, axis)


def _promoted(arrays: list) -> list:
    """The arrays cast to their common dtype (the standard's promotion: uint16/32/64 too)."""
    if not arrays:
        return arrays
    dtype = result_type(*arrays)
    return [a.to(dtype) for a in arrays]


def expand_dims(x, /, axis: int = 0):
    """Inserts a size-1 axis at ``axis`` (the array API's name for ``unsqueeze``); IndexError out of range.

    Example:
        >>> import flambeau as fb
        >>> fb.expand_dims(fb.zeros(2, 3), axis=1).shape
        flambeau.Size([2, 1, 3])
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
    return _unsigned_safe(_fc.flip, x, _axes(axis, x.ndim))


def moveaxis(x, source, destination, /):
    """``x`` with axes ``source`` moved to positions ``destination``.

    Example:
        >>> import flambeau as fb
        >>> xp = fb.array_api
        >>> xp.moveaxis(xp.zeros((2, 3, 4)), 0, -1).shape
        flambeau.Size([3, 4, 2])
    """
    return _fc.movedim(x, source, destination)


def permute_dims(x, /, axes):
    """Reorders the axes of ``x`` to ``axes`` (the array API's name for ``permute``); a view.

    Example:
        >>> import flambeau as fb
        >>> fb.permute_dims(fb.zeros(2, 3, 4), (2, 0, 1)).shape
        flambeau.Size([4, 2, 3])
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
    if isinstance(repeats, _Tensor) and repeats.dtype not in (_fc.int64, _fc.int32):
        if _is_float(repeats.dtype) or _is_complex(repeats.dtype) or repeats.dtype == _fc.bool:
            raise TypeError(f"repeat: repeats must be an int or an integer array, got dtype {repeats.dtype}")
        repeats = repeats.to(_fc.int64)  # the kernel counts in int64/int32; the standard takes any integer dtype
    return _unsigned_safe(_fc.repeat_interleave, x, repeats, axis)


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
        return _unsigned_safe(_fc.roll, x.reshape(-1), shift, 0).reshape(tuple(x.shape))
    return _unsigned_safe(_fc.roll, x, shift, axis)


def squeeze(x, /, axis):
    """Removes the given size-1 axes; a non-1 axis is a ValueError (PyTorch ignores it).

    Example:
        >>> import flambeau as fb
        >>> xp = fb.array_api
        >>> xp.squeeze(xp.zeros((1, 3, 1)), axis=(0, 2)).shape
        flambeau.Size([3])
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
    return _fc.stack(_promoted(list(arrays)), axis)


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
        out = _unsigned_safe(_fc.argmax, x.reshape(-1), ordered=True, back=False)
        return out.reshape((1,) * x.ndim) if keepdims else out
    return _unsigned_safe(_fc.argmax, x, axis, keepdims, ordered=True, back=False)


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
        out = _unsigned_safe(_fc.argmin, x.reshape(-1), ordered=True, back=False)
        return out.reshape((1,) * x.ndim) if keepdims else out
    return _unsigned_safe(_fc.argmin, x, axis, keepdims, ordered=True, back=False)


def top_k(x, k, /, *, axis=-1, mode: str = "largest"):
    """The ``k`` largest (``mode="largest"``) or smallest values along ``axis`` and their indices.

    In the standard's draft after 2024.12. Returns ``(values, indices)``, sorted (largest first, or
    smallest first); ``axis=None`` searches the flattened array. Ties keep PyTorch's ``topk`` order.

    Example:
        >>> import flambeau as fb
        >>> xp = fb.array_api
        >>> xp.top_k(xp.asarray([3, 1, 4, 1, 5]), 2)
        (tensor([5, 4]), tensor([4, 2]))
    """
    _check_tensor("top_k", x)
    if mode not in ("largest", "smallest"):
        raise ValueError(f"top_k: mode must be 'largest' or 'smallest', got {mode!r}")
    if axis is None:
        x, axis = x.reshape(-1), -1
    if x.ndim == 0:
        raise ValueError("top_k: not defined for a 0-d array")
    if isinstance(axis, _builtins.bool) or not isinstance(axis, int):
        raise TypeError(f"top_k: axis must be an int or None, got {type(axis).__name__}")
    if not -x.ndim <= axis < x.ndim:
        raise IndexError(f"top_k: axis {axis} is out of range for a {x.ndim}-d array")
    if isinstance(k, _builtins.bool) or not isinstance(k, int):
        raise TypeError(f"top_k: k must be an int, got {type(k).__name__}")
    if not 0 <= k <= x.shape[axis]:
        raise ValueError(f"top_k: k={k} is out of range for an axis of size {x.shape[axis]}")
    keys = x.to(_fc.uint8) if x.dtype == _fc.bool else x
    _, indices = _unsigned_safe(_fc.topk, keys, k, axis, mode == "largest", True, ordered=True, back=False)
    return take_along_axis(x, indices, axis=axis), indices


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
    return tuple(_unsigned_safe(_fc.nonzero, x, as_tuple=True, back=False))


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
    if isinstance(x1, _Tensor) and isinstance(x2, _Tensor) and x1.dtype != x2.dtype:
        dtype = _promote(x1.dtype, x2.dtype)
        x1, x2 = x1.to(dtype), x2.to(dtype)
    if isinstance(x1, _Tensor) and _needs_signed(x1.dtype):  # order-preserving signed form of both
        x1 = _to_signed(x1, ordered=True)
        x2 = _to_signed(x2, ordered=True) if isinstance(x2, _Tensor) else x2
    return _fc.searchsorted(x1, x2, side=side, sorter=sorter)


def where(condition, x1, x2, /):
    """``x1`` where ``condition`` holds, else ``x2`` (broadcast; either may be a Python scalar).

    Example:
        >>> import flambeau as fb
        >>> xp = fb.array_api
        >>> xp.where(xp.asarray([True, False]), xp.asarray([1.0, 2.0]), 0.0)
        tensor([1., 0.])
    """
    if isinstance(x1, _Tensor) or isinstance(x2, _Tensor):
        x1, x2 = _binary_operands("where", x1, x2)  # the standard's promotion (uint16/32/64 too)
    return _fc.where(condition, x1, x2)


def _unique(x):
    _check_tensor("unique", x)
    # Every NaN counts as its own value, as the standard asks; core's unique (like PyTorch's) already does so.
    flat = x.reshape(-1)
    if _is_complex(x.dtype):  # no complex kernel (PyTorch has none either): the rows (real, imag), in that order
        rows = _fc.stack([_fc.real(flat), _fc.imag(flat)], -1)
        rows, inverse, counts = _fc.unique(rows, sorted=True, return_inverse=True, return_counts=True, dim=0)
        values = _fc.complex(rows[:, 0].contiguous(), rows[:, 1].contiguous())
        return values, inverse.reshape(tuple(x.shape)), counts
    signed = _needs_signed(x.dtype)
    if signed:  # an order-preserving signed form (uint16/32/64 lack the kernel)
        flat = _to_signed(flat, ordered=True)
    values, inverse, counts = _fc.unique(flat, sorted=True, return_inverse=True, return_counts=True)
    if signed:
        values = _from_signed(values, x.dtype, ordered=True)
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
    acc = _acc_dtype(x, dtype)
    x = x.to(acc)

    def over(t, dims, keep):
        for d in sorted((d % t.ndim for d in dims), reverse=True):
            t = _unsigned_safe(_fc.prod, t, d, keep)
        return t

    # PyTorch's prod widens small integers to int64; the cast keeps the standard's dtype.
    return _reduction("prod", over, x, axis, keepdims, identity=_fc.clone).to(acc)


def mean(x, /, *, axis=None, keepdims: _builtins.bool = False):
    """The arithmetic mean along ``axis`` (all axes if None) of a floating array.

    Example:
        >>> import flambeau as fb
        >>> xp = fb.array_api
        >>> x = xp.asarray([[3.0, 1.0, 2.0], [0.0, 5.0, 4.0]])
        >>> xp.mean(x, axis=1), xp.mean(x, axis=0, keepdims=True).shape
        (tensor([2., 3.]), flambeau.Size([1, 3]))
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
    return _reduction("max", _ordered(_fc.amax), x, axis, keepdims, identity=_fc.clone)


def min(x, /, *, axis=None, keepdims: _builtins.bool = False):  # noqa: A001
    """The smallest values along ``axis`` (all axes if None): values only, as the standard says.

    Example:
        >>> import flambeau as fb
        >>> xp = fb.array_api
        >>> x = xp.asarray([[3.0, 1.0, 2.0], [0.0, 5.0, 4.0]])
        >>> xp.min(x, axis=1), xp.min(x)
        (tensor([1., 0.]), tensor(0.))
    """
    return _reduction("min", _ordered(_fc.amin), x, axis, keepdims, identity=_fc.clone)


def _ordered(fn):
    """``fn`` made to take uint16/32/64 (through an order-preserving signed form)."""
    return lambda t, *args: _unsigned_safe(fn, t, *args, ordered=True)


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
    acc = _acc_dtype(x, dtype)
    x = x.to(acc)
    kernel = getattr(_fc, "cumsum" if fn_name == "cumulative_sum" else "cumprod")
    # PyTorch's cumsum/cumprod widen small integers to int64: the cast keeps the standard's dtype.
    out = _unsigned_safe(kernel, x, axis).to(acc)
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
    _check_tensor("all", x)
    # PyTorch's all of a uint8 array is uint8; the standard's is bool (NaN counts as true).
    return _reduction("all", _fc.all, x if x.dtype == _fc.bool else x != 0, axis, keepdims, identity=_fc.clone)


def any(x, /, *, axis=None, keepdims: _builtins.bool = False):  # noqa: A001
    """Whether some element along ``axis`` (all axes if None) is true.

    Example:
        >>> import flambeau as fb
        >>> xp = fb.array_api
        >>> xp.any(xp.asarray([[True, False], [False, False]]), axis=1)
        tensor([ True, False])
    """
    _check_tensor("any", x)
    return _reduction("any", _fc.any, x if x.dtype == _fc.bool else x != 0, axis, keepdims, identity=_fc.clone)


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
