"""Questions a tensor answers about itself: its size in elements and bytes, its dtype's sign, its device
index, its dim order; PyTorch's method spellings (``nelement``, ``ndimension``, ``nbytes``, ``itemsize``,
``is_signed``, ``is_nonzero``, ``is_same_size``, ``get_device``, ``dim_order``, ``const_data_ptr``,
``sparse_dim``, ``dense_dim``, ``is_nested``, ``is_sparse_csr``) and the
top-level forms (``numel``, ``is_tensor``, ``is_nonzero``, ``is_same_size``, ``is_signed``, ``is_conj``,
``is_neg``, ``typename``, ``get_device``).

Example:
    >>> import flambeau_core as fc
    >>> x = fc.zeros(2, 3)
    >>> x.nelement(), x.ndimension(), x.nbytes, x.itemsize, x.get_device()
    (6, 2, 24, 4, -1)
"""

from __future__ import annotations

from typing import Any

from flambeau_core import _C
from flambeau_core._composing import check_tensor


def numel(input: _C.Tensor) -> int:  # noqa: A002
    """numel(input) -> int

    The number of elements of ``input`` (``Tensor.nelement`` too).

    Example:
        >>> import flambeau_core as fc
        >>> fc.numel(fc.zeros(4, 5))
        20
    """
    check_tensor("numel", input)
    return input.numel()


def _nelement(self: _C.Tensor) -> int:
    """nelement() -> int

    Alias for :meth:`Tensor.numel`.

    Example:
        >>> import flambeau_core as fc
        >>> fc.zeros(4, 5).nelement()
        20
    """
    return self.numel()


def _ndimension(self: _C.Tensor) -> int:
    """ndimension() -> int

    Alias for :meth:`Tensor.dim`.

    Example:
        >>> import flambeau_core as fc
        >>> fc.zeros(4, 5).ndimension()
        2
    """
    return self.dim()


def _sparse_dim(self: _C.Tensor) -> int:
    """sparse_dim() -> int

    The number of sparse dims: 0 for a strided (dense) tensor, as PyTorch's.

    Example:
        >>> import flambeau_core as fc
        >>> fc.zeros(4, 5).sparse_dim()
        0
    """
    return 0


def _dense_dim(self: _C.Tensor) -> int:
    """dense_dim() -> int

    The number of dense dims: all of a strided tensor's, ``dim()``, as PyTorch's.

    Example:
        >>> import flambeau_core as fc
        >>> fc.zeros(4, 5).dense_dim()
        2
    """
    return self.dim()


def _nbytes(self: _C.Tensor) -> int:
    """The bytes the tensor's elements take, ``numel() * element_size()`` (not its storage's size: a view
    of a few elements of a large storage counts only those).

    Example:
        >>> import flambeau_core as fc
        >>> fc.zeros(4, 5, dtype=fc.float64).nbytes
        160
    """
    return self.numel() * self.element_size()


def _itemsize(self: _C.Tensor) -> int:
    """The bytes of one element, as :meth:`Tensor.element_size`.

    Example:
        >>> import flambeau_core as fc
        >>> fc.zeros(2, dtype=fc.int16).itemsize
        2
    """
    return self.element_size()


def is_signed(input: _C.Tensor) -> bool:  # noqa: A002
    """is_signed(input) -> bool

    True when ``input``'s dtype holds negative values: the signed integers, the floating-point and the
    complex dtypes; False for ``bool`` and the unsigned integers.

    Example:
        >>> import flambeau_core as fc
        >>> fc.is_signed(fc.zeros(2)), fc.zeros(2, dtype=fc.uint8).is_signed()
        (True, False)
    """
    check_tensor("is_signed", input)
    return input.dtype.is_signed


def is_nonzero(input: _C.Tensor) -> bool:  # noqa: A002
    """is_nonzero(input) -> bool

    True when the single element of ``input`` is not zero (nor ``False``). ``input`` must hold exactly one
    element (of any shape, ``[[[1.0]]]`` too); an empty tensor or several elements raise, as in PyTorch.

    Example:
        >>> import flambeau_core as fc
        >>> fc.is_nonzero(fc.tensor([0.0])), fc.tensor([[1]]).is_nonzero()
        (False, True)
    """
    check_tensor("is_nonzero", input)
    n = input.numel()
    if n != 1:
        what = "no values" if n == 0 else "more than one value"
        raise _C.FlambeauError(
            f"[is_nonzero] Boolean value of Tensor with {what} is ambiguous: expected one element, "
            f"got shape {tuple(input.shape)}"
        )
    return bool(input.item() != 0)


def is_same_size(input: _C.Tensor, other: _C.Tensor) -> bool:  # noqa: A002
    """is_same_size(input, other) -> bool

    True when ``input`` and ``other`` have the same shape (their dtypes and devices may differ).

    Example:
        >>> import flambeau_core as fc
        >>> fc.is_same_size(fc.zeros(2, 3), fc.ones(2, 3, dtype=fc.int64)), fc.zeros(2).is_same_size(fc.zeros(3))
        (True, False)
    """
    check_tensor("is_same_size", input)
    check_tensor("is_same_size", other, "other")
    return tuple(input.shape) == tuple(other.shape)


def is_conj(input: _C.Tensor) -> bool:  # noqa: A002
    """is_conj(input) -> bool

    True when ``input`` is a lazily conjugated view, as :meth:`Tensor.is_conj`. flambeau conjugates eagerly
    (its tensors carry no conjugate bit), so this is always False, as PyTorch's for a tensor whose
    conjugation has been resolved.

    Example:
        >>> import flambeau_core as fc
        >>> fc.is_conj(fc.tensor([1 + 2j]).conj())
        False
    """
    check_tensor("is_conj", input)
    return input.is_conj()


def is_neg(input: _C.Tensor) -> bool:  # noqa: A002
    """is_neg(input) -> bool

    True when ``input`` is a lazily negated view, as :meth:`Tensor.is_neg`: always False in flambeau, whose
    tensors carry no negative bit.

    Example:
        >>> import flambeau_core as fc
        >>> fc.is_neg(fc.tensor([1.0]))
        False
    """
    check_tensor("is_neg", input)
    return input.is_neg()


def is_tensor(obj: Any, /) -> bool:
    """is_tensor(obj) -> bool

    True when ``obj`` is a Tensor (a Parameter or another subclass too); ``isinstance(obj, Tensor)``.

    Example:
        >>> import flambeau_core as fc
        >>> fc.is_tensor(fc.zeros(1)), fc.is_tensor([1.0])
        (True, False)
    """
    return isinstance(obj, _C.Tensor)


def typename(obj: Any, /) -> str:
    """typename(obj) -> str

    The qualified name of ``obj``'s type: a tensor's legacy type name (:meth:`Tensor.type`, e.g.
    ``'torch.FloatTensor'``); for a class or function its module and qualified name; for another object
    its class's; builtins without a module.

    Example:
        >>> import flambeau_core as fc
        >>> fc.typename(fc.zeros(1, dtype=fc.int64)), fc.typename(3), fc.typename(fc.Size)
        ('torch.LongTensor', 'int', 'flambeau_core._size.Size')
    """
    if isinstance(obj, _C.Tensor):
        return obj.type()
    if hasattr(obj, "__qualname__") or hasattr(obj, "__name__"):
        module = getattr(obj, "__module__", "") or ""
        qualname = getattr(obj, "__qualname__", None) or obj.__name__
    else:
        module, qualname = type(obj).__module__ or "", type(obj).__qualname__
    return qualname if module in ("", "builtins") else f"{module}.{qualname}"


def get_device(input: _C.Tensor) -> int:  # noqa: A002
    """get_device(input) -> int

    The index of the device ``input`` is on; -1 for a CPU tensor (as PyTorch). ``Tensor.get_device`` too.

    Example:
        >>> import flambeau_core as fc
        >>> fc.get_device(fc.zeros(1)), fc.zeros(1).get_device()
        (-1, -1)
    """
    check_tensor("get_device", input)
    if input.device.type == "cpu":
        return -1
    return input.device.index or 0


def _const_data_ptr(self: _C.Tensor) -> int:
    """const_data_ptr() -> int

    The address of the tensor's first element, as :meth:`Tensor.data_ptr` (PyTorch's read-only spelling;
    flambeau does not tell reads from writes here).

    Example:
        >>> import flambeau_core as fc
        >>> x = fc.zeros(2)
        >>> x.const_data_ptr() == x.data_ptr()
        True
    """
    return self.data_ptr()


def _is_nonzero_method(self: _C.Tensor) -> bool:
    return is_nonzero(self)


def _is_same_size_method(self: _C.Tensor, other: _C.Tensor) -> bool:
    return is_same_size(self, other)


def _is_signed_method(self: _C.Tensor) -> bool:
    return self.dtype.is_signed


# ---- dim_order ----


def _stride_order(x: _C.Tensor, a: int, b: int) -> int:
    """-1 when dim a lies inside dim b in memory (a smaller stride), 1 when outside, 0 when the strides do not
    tell. A zero stride says nothing; of equal strides the longer dim goes outside."""
    sa, sb = x.stride(a), x.stride(b)
    if sa == 0 or sb == 0:
        return 0
    if sa == sb:
        return 0 if x.shape[a] <= x.shape[b] else 1
    return 1 if sa > sb else -1


def _memory_order(x: _C.Tensor) -> tuple[list[int], bool]:
    """The dims outermost first, and whether some neighbouring pair's order was a guess.

    An insertion sort that moves a dim only past dims whose strides say it must go (a stable order keeps
    the logical order wherever the strides do not tell, as PyTorch's elementwise output layout)."""
    n = x.dim()
    order = list(range(n - 1, -1, -1))  # innermost first while sorting
    for i in range(1, n):
        j = i
        for k in range(i - 1, -1, -1):
            c = _stride_order(x, order[k], order[j])
            if c > 0:
                order[k], order[j] = order[j], order[k]
                j = k
            elif c < 0:
                break
    ambiguous = any(_stride_order(x, order[i], order[i + 1]) != -1 for i in range(n - 1))
    return order[::-1], ambiguous


def _dim_order(self: _C.Tensor, *, ambiguity_check: bool | list = False) -> tuple[int, ...]:
    """dim_order(*, ambiguity_check=False) -> tuple

    The dims of the tensor from the outermost to the innermost in memory: ``(0, 1, 2, 3)`` for a contiguous
    4-D tensor, ``(0, 2, 3, 1)`` for a channels-last one. Size-1 dims and equal strides leave the order
    open; then one legal order is returned, unless ``ambiguity_check`` is True (raise) or a list of memory
    formats (raise unless the tensor is laid out in exactly one of them).

    Example:
        >>> import flambeau_core as fc
        >>> fc.empty(2, 3, 5, 7).transpose(1, 2).dim_order()
        (0, 2, 1, 3)
        >>> fc.empty(2, 3, 5, 7).contiguous(memory_format=fc.channels_last).dim_order()
        (0, 2, 3, 1)
    """
    if not isinstance(ambiguity_check, (bool, list)) or (
        isinstance(ambiguity_check, list) and not all(isinstance(f, _C.memory_format) for f in ambiguity_check)
    ):
        raise TypeError(
            "[dim_order] The ambiguity_check argument must be a bool or a list of memory formats, "
            f"got {ambiguity_check!r}"
        )
    formats = ambiguity_check if isinstance(ambiguity_check, list) else []
    check = ambiguity_check is True or isinstance(ambiguity_check, list)
    open_order = any(n == 1 for n in self.shape) or any(
        self.stride(d) == self.stride(d + 1) for d in range(self.dim() - 1)
    )
    if check and open_order and sum(self.is_contiguous(memory_format=f) for f in formats) != 1:
        raise _C.FlambeauError(
            "[dim_order] The tensor does not have unique dim order, or cannot map to exact one of the given "
            f"memory formats: shape {tuple(self.shape)}, stride {self.stride()}"
        )
    n = self.dim()
    if n <= 1:
        return tuple(range(n))
    contiguous = self.is_contiguous()
    channels_last = n == 4 and self.is_contiguous(memory_format=_C.channels_last)
    if contiguous and not channels_last:
        return tuple(range(n))
    if channels_last and not contiguous:
        return (0, *range(2, n), 1)
    order, ambiguous = _memory_order(self)
    if check and ambiguous:
        raise _C.FlambeauError(
            f"[dim_order] The tensor does not have unique dim order: shape {tuple(self.shape)}, stride {self.stride()}"
        )
    return tuple(order)


_is_nonzero_method.__doc__ = is_nonzero.__doc__
_is_same_size_method.__doc__ = is_same_size.__doc__
_is_signed_method.__doc__ = is_signed.__doc__
_nbytes.__name__, _itemsize.__name__ = "nbytes", "itemsize"

FUNCTIONS = (numel, is_signed, is_nonzero, is_same_size, is_conj, is_neg, is_tensor, typename, get_device)
METHODS = {
    "nelement": _nelement,
    "ndimension": _ndimension,
    "is_signed": _is_signed_method,
    "is_nonzero": _is_nonzero_method,
    "is_same_size": _is_same_size_method,
    "get_device": get_device,
    "const_data_ptr": _const_data_ptr,
    "dim_order": _dim_order,
    "sparse_dim": _sparse_dim,
    "dense_dim": _dense_dim,
}


def install() -> None:
    import flambeau_core

    for fn in FUNCTIONS:
        setattr(flambeau_core, fn.__name__, fn)
    for name, fn in METHODS.items():
        fn.__name__ = fn.__qualname__ = name
        setattr(_C.Tensor, name, fn)
    _C.Tensor.nbytes = property(_nbytes, doc=_nbytes.__doc__)
    _C.Tensor.itemsize = property(_itemsize, doc=_itemsize.__doc__)
    # Layouts flambeau has no tensors of (PyTorch's predicates, asked by layout-agnostic libraries).
    _C.Tensor.is_nested = property(lambda self: False, doc="False: flambeau has no nested tensors.")
    _C.Tensor.is_sparse_csr = property(lambda self: False, doc="False: flambeau has no CSR sparse tensors.")
