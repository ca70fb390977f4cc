"""flambeau.masked: torch.masked's functions, reductions and normalizations that ignore masked-out elements.

Each takes a boolean ``mask`` (keyword) broadcastable to the input, no more dimensions than it has; a
True element is masked in, a False one is ignored: the function runs on the input with every masked-out
element replaced by the identity of the reduction (0 for sum and cumsum, 1 for prod and cumprod, -inf for
amax, argmax, logsumexp, logaddexp, softmax and log_softmax, +inf for amin, argmin and softmin, NaN for
median, 0 for norm, +inf for ``norm(ord=-inf)``). So a slice whose elements are all masked out gives that
identity (``sum`` 0, ``prod`` 1, ``amax`` -inf), NaN where the result is undefined (``mean``, ``var``,
``std``, ``median``, the softmaxes), and index 0 for ``argmax``/``argmin``. ``mask=None`` masks
everything in. As PyTorch's, these are compositions of the dense ops (``where`` and the reduction), so they
are differentiable wherever those are, with zero gradient at the masked-out elements; the MaskedTensor class
is not provided. ``logaddexp`` takes ``input_mask`` and ``other_mask`` instead of ``mask``.

Example:
    >>> import flambeau_core as fc
    >>> x = fc.tensor([[1.0, 2.0, 3.0], [4.0, 5.0, 6.0]])
    >>> m = fc.tensor([[True, False, True], [False, False, False]])
    >>> fc.masked.sum(x, 1, mask=m).tolist()
    [4.0, 0.0]
    >>> fc.masked.amax(x, 1, mask=m).tolist()
    [3.0, -inf]
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

from flambeau_core import _C
from flambeau_core._C import FlambeauError, Tensor
from flambeau_core._dtypes import iinfo
from flambeau_core.overrides import is_tensor_like

__all__ = [
    "amax",
    "amin",
    "argmax",
    "argmin",
    "cumprod",
    "cumsum",
    "log_softmax",
    "logaddexp",
    "logsumexp",
    "mean",
    "median",
    "norm",
    "normalize",
    "prod",
    "softmax",
    "softmin",
    "std",
    "sum",
    "var",
]

Dims = int | Sequence[int] | None

# Sums and products of these dtypes accumulate in int64, as PyTorch's.
_PROMOTED_TO_INT64 = (_C.bool, _C.uint8, _C.int8, _C.int16, _C.int32)


def _shape(t: Tensor) -> tuple[int, ...]:
    return tuple(t.shape)


def _check_tensor(input: Any, op: str, what: str = "input") -> None:
    if not is_tensor_like(input):  # a tensor-like (flambeau.overrides) runs through, its ops overridden
        raise TypeError(f"[masked.{op}] expected {what} to be a Tensor, got {type(input).__name__}")


def _canonical_mask(input: Tensor, mask: Any, op: str, what: str = "mask") -> Tensor | None:
    """The mask as a bool tensor of the input's shape (None stays None: everything masked in)."""
    if mask is None:
        return None
    if not is_tensor_like(mask):
        raise TypeError(f"[masked.{op}] expected {what} to be a Tensor (bool) or None, got {type(mask).__name__}")
    if _shape(mask) != _shape(input):
        if mask.dim() > input.dim():
            raise IndexError(
                f"[masked.{op}] expected a {what} broadcastable to the input's shape {_shape(input)}, got "
                f"shape {_shape(mask)}: its dimensionality is higher than the input's"
            )
        try:
            mask = _C.broadcast_to(mask, list(_shape(input)))
        except (RuntimeError, ValueError):
            raise FlambeauError(
                f"[masked.{op}] the {what} of shape {_shape(mask)} cannot be broadcast to the input's shape "
                f"{_shape(input)}"
            ) from None
    return mask.to(_C.bool)


# torch.masked's private helpers, with its signatures: PyTorch's own test wrappers
# (gradcheck_wrapper_masked_operation) call them to zero the outputs of fully masked-out slices.
_REDUCTIONS = {"sum", "prod", "amax", "amin", "argmax", "argmin", "mean", "median", "norm", "var", "std", "logsumexp"}
_NORMALIZATIONS = {"softmax", "log_softmax", "softmin", "normalize", "cumsum", "cumprod"}


def _input_mask(input: Tensor, *args: Any, **kwargs: Any) -> Tensor:
    """The bool mask of ``kwargs["mask"]`` broadcast to the input's shape (torch.masked._input_mask)."""
    _check_tensor(input, "_input_mask")
    if kwargs.get("mask") is None:
        raise FlambeauError("[masked._input_mask] requires an explicit mask")
    return _canonical_mask(input, kwargs["mask"], "_input_mask")


def _output_mask(op: Any, input: Tensor, *args: Any, **kwargs: Any) -> Tensor:
    """Which outputs of the masked function `op` called with these arguments have a masked-in element
    behind them (torch.masked._output_mask)."""
    name = getattr(op, "__name__", None)
    if name in _NORMALIZATIONS:
        return _input_mask(input, *args, **kwargs)
    if name not in _REDUCTIONS:
        raise FlambeauError(f"[masked._output_mask] expected a masked function, got {op!r}")
    if name == "norm" and args:
        args = args[1:]  # the ord
    dim = args[0] if args else kwargs.get("dim")
    dims = _canonical_dims(dim, input.dim(), "_output_mask")
    return _counts(input, _input_mask(input, *args, **kwargs), dims, bool(kwargs.get("keepdim", False))) > 0


def _canonical_dims(dim: Dims, ndim: int, op: str) -> list[int]:
    """The reduced dimensions, sorted and non-negative; None and () mean all of them (PyTorch's reading)."""
    if dim is None or (isinstance(dim, (tuple, list)) and len(dim) == 0):
        return list(range(ndim))
    bound = max(ndim, 1)
    dims: list[int] = []
    for d in [dim] if isinstance(dim, int) else list(dim):
        if isinstance(d, bool) or not isinstance(d, int):
            raise TypeError(f"[masked.{op}] dim must be an int or a sequence of ints, got {dim!r}")
        if not -bound <= d < bound:
            raise IndexError(
                f"[masked.{op}] Dimension out of range (expected to be in range of [{-bound}, {bound - 1}], "
                f"but got {d})"
            )
        if d % bound in dims:
            raise FlambeauError(f"[masked.{op}] dim={d} appears multiple times in the list of dims")
        dims.append(d % bound)
    return sorted(dims)


def _one_dim(dim: Any, ndim: int, op: str) -> int:
    if isinstance(dim, bool) or not isinstance(dim, int):
        raise TypeError(f"[masked.{op}] dim must be an int, got {type(dim).__name__}")
    return _canonical_dims(dim, ndim, op)[0]


def _lowest(dtype: Any) -> float | int:
    return -math.inf if dtype.is_floating_point or dtype.is_complex else iinfo(dtype).min


def _highest(dtype: Any) -> float | int:
    return math.inf if dtype.is_floating_point else iinfo(dtype).max


def _filled(input: Tensor, mask: Tensor | None, identity: Any) -> Tensor:
    """input with the masked-out elements replaced by `identity` (the reduction's neutral element)."""
    if mask is None:
        return input
    return _C.where(mask, input, _C.full([], identity, dtype=input.dtype, device=input.device))


def _counts(input: Tensor, mask: Tensor | None, dims: list[int], keepdim: bool) -> Tensor:
    """How many elements are masked in along `dims` (int64)."""
    if mask is None:
        mask = _C.ones(list(_shape(input)), dtype=_C.bool, device=input.device)
    return _sum_dims(mask, dims, keepdim, _C.int64)


def _sum_dims(x: Tensor, dims: list[int], keepdim: bool, dtype: Any) -> Tensor:
    if not dims:  # a 0-d input: nothing to reduce
        return x.to(dtype)
    return _C.sum(x, dims, keepdim, dtype=dtype)


def _sum_dtype(input: Tensor, dtype: Any) -> Any:
    if dtype is not None:
        return dtype
    return _C.int64 if input.dtype in _PROMOTED_TO_INT64 else input.dtype


def sum(  # noqa: A001  (PyTorch's name)
    input: Tensor, dim: Dims = None, *, keepdim: bool | None = False, dtype: Any = None, mask: Tensor | None = None
) -> Tensor:
    """sum(input, dim=None, *, keepdim=False, dtype=None, mask=None) -> Tensor

    The sum of the masked-in elements of ``input`` over ``dim`` (all dimensions when None); 0 where every
    element is masked out. Integer and bool inputs sum in int64 unless ``dtype`` says otherwise.

    Example:
        >>> import flambeau_core as fc
        >>> x = fc.tensor([[-3.0, -2.0, -1.0], [0.0, 1.0, 2.0]])
        >>> fc.masked.sum(x, 1, mask=fc.tensor([[True, False, True], [False, False, False]])).tolist()
        [-4.0, 0.0]
    """
    _check_tensor(input, "sum")
    dims = _canonical_dims(dim, input.dim(), "sum")
    x = _filled(input, _canonical_mask(input, mask, "sum"), 0)
    return _sum_dims(x, dims, bool(keepdim), _sum_dtype(input, dtype))


def prod(
    input: Tensor, dim: Dims = None, *, keepdim: bool | None = False, dtype: Any = None, mask: Tensor | None = None
) -> Tensor:
    """prod(input, dim=None, *, keepdim=False, dtype=None, mask=None) -> Tensor

    The product of the masked-in elements of ``input`` over ``dim`` (all dimensions when None); 1 where
    every element is masked out. Integer and bool inputs multiply in int64 unless ``dtype`` says otherwise.

    Example:
        >>> import flambeau_core as fc
        >>> x = fc.tensor([[-3.0, -2.0, -1.0], [0.0, 1.0, 2.0]])
        >>> fc.masked.prod(x, 1, mask=fc.tensor([[True, False, True], [False, False, False]])).tolist()
        [3.0, 1.0]
    """
    _check_tensor(input, "prod")
    dims = _canonical_dims(dim, input.dim(), "prod")
    result = _filled(input, _canonical_mask(input, mask, "prod"), 1).to(_sum_dtype(input, dtype))
    for d in reversed(dims):  # from the last, so that the earlier dims keep their numbers
        result = result.prod(d, bool(keepdim))
    return result


def cumsum(input: Tensor, dim: int, *, dtype: Any = None, mask: Tensor | None = None) -> Tensor:
    """cumsum(input, dim, *, dtype=None, mask=None) -> Tensor

    The cumulative sum along ``dim`` of ``input`` with its masked-out elements counted as 0 (so the
    running sum carries over them). The result has the input's dtype unless ``dtype`` says otherwise.

    Example:
        >>> import flambeau_core as fc
        >>> x = fc.tensor([1.0, 2.0, 3.0, 4.0])
        >>> fc.masked.cumsum(x, 0, mask=fc.tensor([True, False, True, True])).tolist()
        [1.0, 1.0, 4.0, 8.0]
    """
    _check_tensor(input, "cumsum")
    dtype = input.dtype if dtype is None else dtype
    d = _one_dim(dim, input.dim(), "cumsum")
    return _C.cumsum(_filled(input, _canonical_mask(input, mask, "cumsum"), 0), d, dtype=dtype)


def cumprod(input: Tensor, dim: int, *, dtype: Any = None, mask: Tensor | None = None) -> Tensor:
    """cumprod(input, dim, *, dtype=None, mask=None) -> Tensor

    The cumulative product along ``dim`` of ``input`` with its masked-out elements counted as 1. The
    result has the input's dtype unless ``dtype`` says otherwise.

    Example:
        >>> import flambeau_core as fc
        >>> x = fc.tensor([1.0, 2.0, 3.0, 4.0])
        >>> fc.masked.cumprod(x, 0, mask=fc.tensor([True, False, True, True])).tolist()
        [1.0, 1.0, 3.0, 12.0]
    """
    _check_tensor(input, "cumprod")
    dtype = input.dtype if dtype is None else dtype
    d = _one_dim(dim, input.dim(), "cumprod")
    return _C.cumprod(_filled(input, _canonical_mask(input, mask, "cumprod"), 1), d, dtype=dtype)


def _extremum(op: str, input: Tensor, dim: Dims, keepdim: bool | None, dtype: Any, mask: Tensor | None) -> Tensor:
    _check_tensor(input, op)
    if input.dtype == _C.bool:
        raise TypeError(f"[masked.{op}] has no identity for bool input; convert it to an integer dtype first")
    identity = _lowest(input.dtype) if op == "amax" else _highest(input.dtype)
    x = _filled(input, _canonical_mask(input, mask, op), identity)
    dims = _canonical_dims(dim, input.dim(), op)
    reduce = _C.amax if op == "amax" else _C.amin
    return reduce(x, dims, bool(keepdim)).to(input.dtype if dtype is None else dtype)


def amax(
    input: Tensor, dim: Dims = None, *, keepdim: bool | None = False, dtype: Any = None, mask: Tensor | None = None
) -> Tensor:
    """amax(input, dim=None, *, keepdim=False, dtype=None, mask=None) -> Tensor

    The maximum of the masked-in elements of ``input`` over ``dim`` (all dimensions when None); -inf (the
    dtype's lowest value for integers) where every element is masked out.

    Example:
        >>> import flambeau_core as fc
        >>> x = fc.tensor([[-3.0, -2.0, -1.0], [0.0, 1.0, 2.0]])
        >>> fc.masked.amax(x, 1, mask=fc.tensor([[True, False, True], [False, False, False]])).tolist()
        [-1.0, -inf]
    """
    return _extremum("amax", input, dim, keepdim, dtype, mask)


def amin(
    input: Tensor, dim: Dims = None, *, keepdim: bool | None = False, dtype: Any = None, mask: Tensor | None = None
) -> Tensor:
    """amin(input, dim=None, *, keepdim=False, dtype=None, mask=None) -> Tensor

    The minimum of the masked-in elements of ``input`` over ``dim`` (all dimensions when None); +inf (the
    dtype's highest value for integers) where every element is masked out.

    Example:
        >>> import flambeau_core as fc
        >>> x = fc.tensor([[-3.0, -2.0, -1.0], [0.0, 1.0, 2.0]])
        >>> fc.masked.amin(x, 1, mask=fc.tensor([[True, False, True], [False, False, False]])).tolist()
        [-3.0, inf]
    """
    return _extremum("amin", input, dim, keepdim, dtype, mask)


def _arg_extremum(
    op: str, input: Tensor, dim: int | None, keepdim: bool | None, dtype: Any, mask: Tensor | None
) -> Tensor:
    _check_tensor(input, op)
    if input.dtype == _C.bool:
        raise TypeError(f"[masked.{op}] has no identity for bool input; convert it to an integer dtype first")
    if dim is not None:
        _one_dim(dim, input.dim(), op)
    identity = _lowest(input.dtype) if op == "argmax" else _highest(input.dtype)
    x = _filled(input, _canonical_mask(input, mask, op), identity)
    reduce = _C.argmax if op == "argmax" else _C.argmin
    return reduce(x, dim, bool(keepdim)).to(input.dtype if dtype is None else dtype)


def argmax(
    input: Tensor,
    dim: int | None = None,
    *,
    keepdim: bool | None = False,
    dtype: Any = None,
    mask: Tensor | None = None,
) -> Tensor:
    """argmax(input, dim=None, *, keepdim=False, dtype=None, mask=None) -> Tensor

    The index of the maximum of the masked-in elements along ``dim`` (of the flattened input when None);
    0 where every element is masked out. As PyTorch's, the indices come in the input's dtype unless
    ``dtype`` says otherwise.

    Example:
        >>> import flambeau_core as fc
        >>> x = fc.tensor([[-3.0, -2.0, -1.0], [0.0, 1.0, 2.0]])
        >>> fc.masked.argmax(x, 1, mask=fc.tensor([[True, True, False], [True, True, True]])).tolist()
        [1.0, 2.0]
    """
    return _arg_extremum("argmax", input, dim, keepdim, dtype, mask)


def argmin(
    input: Tensor,
    dim: int | None = None,
    *,
    keepdim: bool | None = False,
    dtype: Any = None,
    mask: Tensor | None = None,
) -> Tensor:
    """argmin(input, dim=None, *, keepdim=False, dtype=None, mask=None) -> Tensor

    The index of the minimum of the masked-in elements along ``dim`` (of the flattened input when None);
    0 where every element is masked out. As PyTorch's, the indices come in the input's dtype unless
    ``dtype`` says otherwise.

    Example:
        >>> import flambeau_core as fc
        >>> x = fc.tensor([[-3.0, -2.0, -1.0], [0.0, 1.0, 2.0]])
        >>> fc.masked.argmin(x, 1, mask=fc.tensor([[False, True, True], [True, True, True]]), dtype=fc.int64).tolist()
        [1, 0]
    """
    return _arg_extremum("argmin", input, dim, keepdim, dtype, mask)


def mean(
    input: Tensor, dim: Dims = None, *, keepdim: bool | None = False, dtype: Any = None, mask: Tensor | None = None
) -> Tensor:
    """mean(input, dim=None, *, keepdim=False, dtype=None, mask=None) -> Tensor

    The mean of the masked-in elements of ``input`` over ``dim`` (all dimensions when None); NaN where
    every element is masked out (the mean of nothing is undefined). The input, or ``dtype``, must be a
    floating-point or complex dtype (ValueError otherwise).

    Example:
        >>> import flambeau_core as fc
        >>> x = fc.tensor([[-3.0, -2.0, -1.0], [0.0, 1.0, 2.0]])
        >>> fc.masked.mean(x, 1, mask=fc.tensor([[True, False, True], [False, False, False]])).tolist()
        [-2.0, nan]
    """
    _check_tensor(input, "mean")
    source = "Optional" if dtype is not None else "Input"
    dtype = input.dtype if dtype is None else dtype
    if not (dtype.is_floating_point or dtype.is_complex):
        raise FlambeauError(
            f"[masked.mean] Could not infer output dtype. {source} dtype must be either a floating point or "
            f"complex dtype. Got: {dtype}"
        )
    dims = _canonical_dims(dim, input.dim(), "mean")
    inmask = _canonical_mask(input, mask, "mean")
    total = _sum_dims(_filled(input, inmask, 0), dims, bool(keepdim), dtype)
    return total / _counts(input, inmask, dims, bool(keepdim))


def median(
    input: Tensor, dim: int = -1, *, keepdim: bool = False, dtype: Any = None, mask: Tensor | None = None
) -> Tensor:
    """median(input, dim=-1, *, keepdim=False, dtype=None, mask=None) -> Tensor

    The median (the lower of the two middle values for an even count) of the masked-in elements along
    ``dim``, ignoring NaN as :func:`flambeau.nanmedian` does; NaN where every element is masked out, which
    an integer input refuses (ValueError). A floating-point result keeps the input's dtype, as PyTorch's.

    Example:
        >>> import flambeau_core as fc
        >>> x = fc.tensor([[4.0, 1.0, 3.0, 2.0], [5.0, 6.0, 7.0, 8.0]])
        >>> fc.masked.median(x, 1, mask=fc.tensor([[True, True, True, False], [False, False, False, False]])).tolist()
        [3.0, nan]
    """
    _check_tensor(input, "median")
    dtype = input.dtype if dtype is None else dtype
    d = _one_dim(dim, input.dim(), "median")
    is_float = input.dtype.is_floating_point
    inmask = _canonical_mask(input, mask, "median")
    x = input if is_float else input.to(_C.float32)
    values = _C.nanmedian(_filled(x, inmask, math.nan), d, bool(keepdim))[0]
    if is_float:
        return values
    if bool(_C.isnan(values).any()):
        raise FlambeauError(
            "[masked.median] expects no fully masked out rows if dtype is not floating point "
            f"(input dtype {input.dtype})"
        )
    return values.to(dtype)


def logsumexp(
    input: Tensor, dim: Dims = None, *, keepdim: bool = False, dtype: Any = None, mask: Tensor | None = None
) -> Tensor:
    """logsumexp(input, dim=None, *, keepdim=False, dtype=None, mask=None) -> Tensor

    ``log(sum(exp(x)))`` over the masked-in elements along ``dim`` (all dimensions when None), computed
    stably; -inf where every element is masked out.

    Example:
        >>> import flambeau_core as fc
        >>> x = fc.tensor([[0.0, 5.0, 0.0], [1.0, 2.0, 3.0]])
        >>> m = fc.tensor([[True, False, True], [False, False, False]])
        >>> [round(v, 4) for v in fc.masked.logsumexp(x, 1, mask=m).tolist()]
        [0.6931, -inf]
    """
    _check_tensor(input, "logsumexp")
    dims = _canonical_dims(dim, input.dim(), "logsumexp")
    x = _filled(input, _canonical_mask(input, mask, "logsumexp"), _lowest(input.dtype))
    out = _C.logsumexp(x, dims, keepdim) if dims else _C.logsumexp(x.reshape([1]), [0], keepdim).reshape([])
    return out.to(input.dtype if dtype is None else dtype)


def logaddexp(
    input: Tensor,
    other: Tensor,
    *,
    dtype: Any = None,
    input_mask: Tensor | None = None,
    other_mask: Tensor | None = None,
) -> Tensor:
    """logaddexp(input, other, *, dtype=None, input_mask=None, other_mask=None) -> Tensor

    ``log(exp(input) + exp(other))`` elementwise, where an element masked out of ``input`` (by
    ``input_mask``) or of ``other`` (by ``other_mask``) counts as -inf, that is, contributes nothing.

    Example:
        >>> import flambeau_core as fc
        >>> a, b = fc.tensor([-100.0, -200.0, -300.0]), fc.tensor([-1.0, -2.0, -3.0])
        >>> m = fc.tensor([True, False, True])
        >>> fc.masked.logaddexp(a, b, input_mask=m, other_mask=m).tolist()
        [-1.0, -inf, -3.0]
    """
    _check_tensor(input, "logaddexp")
    _check_tensor(other, "logaddexp", "other")
    a = _filled(input, _canonical_mask(input, input_mask, "logaddexp", "input_mask"), _lowest(input.dtype))
    b = _filled(other, _canonical_mask(other, other_mask, "logaddexp", "other_mask"), _lowest(other.dtype))
    return _C.logaddexp(a, b).to(input.dtype if dtype is None else dtype)


def norm(
    input: Tensor,
    ord: float | None = 2.0,
    dim: Dims = None,
    *,
    keepdim: bool | None = False,
    dtype: Any = None,
    mask: Tensor | None = None,
) -> Tensor:
    """norm(input, ord=2.0, dim=None, *, keepdim=False, dtype=None, mask=None) -> Tensor

    The vector ``ord``-norm (as :func:`flambeau.linalg.vector_norm`) of the masked-in elements over
    ``dim`` (all dimensions when None); 0 where every element is masked out, +inf for ``ord=-inf``.

    Example:
        >>> import flambeau_core as fc
        >>> x = fc.tensor([[3.0, 9.0, 4.0], [1.0, 2.0, 3.0]])
        >>> fc.masked.norm(x, 2.0, 1, mask=fc.tensor([[True, False, True], [False] * 3])).tolist()
        [5.0, 0.0]
    """
    from flambeau_core.linalg import vector_norm

    _check_tensor(input, "norm")
    ord = 2.0 if ord is None else ord
    identity = math.inf if ord == -math.inf else 0
    x = _filled(input, _canonical_mask(input, mask, "norm"), identity)
    dims = _canonical_dims(dim, input.dim(), "norm")
    return vector_norm(x, ord, dims, bool(keepdim), dtype=input.dtype if dtype is None else dtype)


def _var(
    op: str,
    input: Tensor,
    dim: Dims,
    unbiased: bool | None,
    correction: float | None,
    keepdim: bool | None,
    dtype: Any,
    mask: Tensor | None,
) -> Tensor:
    _check_tensor(input, op)
    if unbiased is not None and correction is not None:
        raise FlambeauError(f"[masked.{op}] Only one of unbiased and correction may be given")
    ddof = 1.0 if unbiased is None and correction is None else float(unbiased if correction is None else correction)
    if dtype is None:
        dtype = input.dtype if input.dtype.is_floating_point or input.dtype.is_complex else _C.float32
    compute = dtype if dtype.is_floating_point or dtype.is_complex else _C.float32
    keepdim = bool(keepdim)
    dims = _canonical_dims(dim, input.dim(), op)
    inmask = _canonical_mask(input, mask, op)
    count = _counts(input, inmask, dims, True)
    centered = input - _sum_dims(_filled(input, inmask, 0), dims, True, dtype) / count
    squares = centered * centered.conj() if centered.is_complex() else centered * centered
    total = _sum_dims(_filled(squares, inmask, 0), dims, keepdim, compute)
    if not keepdim:
        count = count.reshape(list(_shape(total)))
    if ddof != 0:
        real = _C.float64 if compute == _C.complex128 else _C.float32 if compute == _C.complex64 else compute
        # clamped in float64: clamp has no half-precision kernel, and small counts are exact in every dtype
        count = _C.clamp_min(count.to(_C.float64) - ddof, 0).to(real)
    out = (total / count).to(dtype)
    return _C.sqrt(out) if op == "std" else out


def var(
    input: Tensor,
    dim: Dims = None,
    unbiased: bool | None = None,
    *,
    correction: float | None = None,
    keepdim: bool | None = False,
    dtype: Any = None,
    mask: Tensor | None = None,
) -> Tensor:
    """var(input, dim=None, unbiased=None, *, correction=None, keepdim=False, dtype=None, mask=None) -> Tensor

    The variance of the masked-in elements over ``dim`` (all dimensions when None), dividing by
    ``count - correction`` (default correction 1; ``unbiased=False`` means 0, and only one of the two may
    be given); NaN where every element is masked out. Integer inputs give float32.

    Example:
        >>> import flambeau_core as fc
        >>> x = fc.tensor([[1.0, 9.0, 3.0], [1.0, 2.0, 3.0]])
        >>> fc.masked.var(x, 1, mask=fc.tensor([[True, False, True], [False] * 3])).tolist()
        [2.0, nan]
    """
    return _var("var", input, dim, unbiased, correction, keepdim, dtype, mask)


def std(
    input: Tensor,
    dim: Dims = None,
    unbiased: bool | None = None,
    *,
    correction: float | None = None,
    keepdim: bool | None = False,
    dtype: Any = None,
    mask: Tensor | None = None,
) -> Tensor:
    """std(input, dim=None, unbiased=None, *, correction=None, keepdim=False, dtype=None, mask=None) -> Tensor

    The standard deviation (the square root of :func:`var`) of the masked-in elements over ``dim``;
    NaN where every element is masked out.

    Example:
        >>> import flambeau_core as fc
        >>> x = fc.tensor([[1.0, 9.0, 5.0], [1.0, 2.0, 3.0]])
        >>> fc.masked.std(x, 1, correction=0, mask=fc.tensor([[True, False, True], [False] * 3])).tolist()
        [2.0, nan]
    """
    return _var("std", input, dim, unbiased, correction, keepdim, dtype, mask)


def softmax(input: Tensor, dim: int, *, dtype: Any = None, mask: Tensor | None = None) -> Tensor:
    """softmax(input, dim, *, dtype=None, mask=None) -> Tensor

    The softmax along ``dim`` over the masked-in elements: masked-out elements get 0, and a slice whose
    elements are all masked out gives NaN.

    Example:
        >>> import flambeau_core as fc
        >>> x = fc.tensor([[0.0, 7.0, 0.0], [1.0, 2.0, 3.0]])
        >>> fc.masked.softmax(x, 1, mask=fc.tensor([[True, False, True], [False] * 3])).tolist()
        [[0.5, 0.0, 0.5], [nan, nan, nan]]
    """
    _check_tensor(input, "softmax")
    d = _one_dim(dim, input.dim(), "softmax")
    x = _filled(input, _canonical_mask(input, mask, "softmax"), _lowest(input.dtype))
    return _C.softmax(x, d, input.dtype if dtype is None else dtype)


def log_softmax(input: Tensor, dim: int, *, dtype: Any = None, mask: Tensor | None = None) -> Tensor:
    """log_softmax(input, dim, *, dtype=None, mask=None) -> Tensor

    The log of :func:`softmax` along ``dim`` over the masked-in elements: masked-out elements get -inf,
    and a slice whose elements are all masked out gives NaN.

    Example:
        >>> import flambeau_core as fc
        >>> x = fc.tensor([[0.0, 7.0, 0.0], [1.0, 2.0, 3.0]])
        >>> y = fc.masked.log_softmax(x, 1, mask=fc.tensor([True, False, True]))
        >>> [[round(v, 4) for v in row] for row in y.tolist()]
        [[-0.6931, -inf, -0.6931], [-2.1269, -inf, -0.1269]]
    """
    _check_tensor(input, "log_softmax")
    d = _one_dim(dim, input.dim(), "log_softmax")
    x = _filled(input, _canonical_mask(input, mask, "log_softmax"), _lowest(input.dtype))
    return _C.log_softmax(x, d, input.dtype if dtype is None else dtype)


def softmin(input: Tensor, dim: int, *, dtype: Any = None, mask: Tensor | None = None) -> Tensor:
    """softmin(input, dim, *, dtype=None, mask=None) -> Tensor

    ``softmax(-input)`` along ``dim`` over the masked-in elements: masked-out elements get 0, and a slice
    whose elements are all masked out gives NaN.

    Example:
        >>> import flambeau_core as fc
        >>> x = fc.tensor([[0.0, -7.0, 0.0], [1.0, 2.0, 3.0]])
        >>> fc.masked.softmin(x, 1, mask=fc.tensor([[True, False, True], [False] * 3])).tolist()
        [[0.5, 0.0, 0.5], [nan, nan, nan]]
    """
    _check_tensor(input, "softmin")
    d = _one_dim(dim, input.dim(), "softmin")
    x = _filled(input, _canonical_mask(input, mask, "softmin"), _highest(input.dtype))
    return _C.softmax(-x.to(input.dtype if dtype is None else dtype), d)


def normalize(
    input: Tensor, ord: float, dim: int, *, eps: float = 1e-12, dtype: Any = None, mask: Tensor | None = None
) -> Tensor:
    """normalize(input, ord, dim, *, eps=1e-12, dtype=None, mask=None) -> Tensor

    ``input`` divided by the masked :func:`norm` of order ``ord`` along ``dim`` (at least ``eps``), its
    masked-out elements set to 0.

    Example:
        >>> import flambeau_core as fc
        >>> x = fc.tensor([[3.0, 9.0, 4.0], [1.0, 2.0, 3.0]], dtype=fc.float64)
        >>> fc.masked.normalize(x, 2.0, 1, mask=fc.tensor([[True, False, True], [False] * 3])).tolist()
        [[0.6, 0.0, 0.8], [0.0, 0.0, 0.0]]
    """
    _check_tensor(input, "normalize")
    inmask = _canonical_mask(input, mask, "normalize")
    nrm = norm(input, ord, dim, keepdim=True, dtype=input.dtype if dtype is None else dtype, mask=inmask)
    denom = _C.maximum(nrm, _C.full([], float(eps), dtype=nrm.dtype, device=nrm.device))
    return _filled(input, inmask, 0) / denom
