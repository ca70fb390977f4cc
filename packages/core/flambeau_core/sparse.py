"""Sparse COO tensors (``flambeau.sparse``, PyTorch's ``torch.sparse`` for graph networks).

A :class:`SparseTensor` holds an int64 ``(sparse_dim, nnz)`` index tensor, a
``(nnz, *dense_shape)`` values tensor and a size, as PyTorch's ``sparse_coo``
layout does. Every operation is composed of dense core ops (``index_select``,
``index_add``, ``sort``, ``unique_consecutive``) over the indices and values, so
with flambeau-autograd installed gradients flow to the values (and to the
dense operand of :func:`mm`) with no backward of their own and no Python loop
over the nonzeros.

Supported: :func:`sparse_coo_tensor`, ``Tensor.to_sparse()``,
``to_dense()``, ``is_sparse``, ``coalesce()``, ``is_coalesced()``,
``indices()``, ``values()``, ``_indices()``, ``_values()``, ``_nnz()``,
``sparse_dim()``, ``dense_dim()``, ``t()``, ``+`` of two sparse tensors,
``*`` and ``/`` by a number, ``neg``, ``to``/``float``/``double``,
``detach``, ``clone``, ``requires_grad_``, ``grad``; :func:`mm` (also
``spmm``, ``sparse @ dense``), :func:`sum`. Not supported (a clear error):
sparse-sparse products, sparse gradients of a sparse leaf other than through its
values, the CSR/CSC/BSR layouts, devices other than the values'.

Differences from PyTorch: indices are always checked against the size (PyTorch
checks them only with ``check_invariants=True``): an out-of-range or negative
index is an IndexError at construction.

Example:
    >>> import flambeau_core as fc
    >>> from flambeau_core import sparse
    >>> a = sparse.sparse_coo_tensor(fc.tensor([[0, 1, 1], [2, 0, 2]]), fc.tensor([1.0, 2.0, 3.0]), (2, 3))
    >>> a.to_dense().tolist()
    [[0.0, 0.0, 1.0], [2.0, 0.0, 3.0]]
    >>> sparse.mm(a, fc.ones(3, 2)).tolist()
    [[1.0, 1.0], [5.0, 5.0]]
"""

from __future__ import annotations

import builtins
import functools
import math
from collections.abc import Callable, Sequence
from typing import Any

from flambeau_core import _C
from flambeau_core._C import FlambeauError, Tensor
from flambeau_core._reduce import unique_consecutive

__all__ = [
    "SparseTensor",
    "mm",
    "sparse_coo",
    "sparse_coo_tensor",
    "spmm",
    "strided",
    "sum",
    "with_sparse_first_operand",
]


class layout:  # noqa: N801  (PyTorch's name: torch.layout)
    """The type of a tensor layout, ``torch.layout``: its two values are ``strided`` (dense tensors) and
    ``sparse_coo``, compared by identity.

    Example:
        >>> from flambeau_core.sparse import layout, sparse_coo, strided
        >>> isinstance(strided, layout), sparse_coo
        (True, flambeau.sparse_coo)
    """

    def __init__(self, name: str) -> None:
        self._name = name

    def __repr__(self) -> str:
        return f"flambeau.{self._name}"


sparse_coo = layout("sparse_coo")
strided = layout("strided")


def _shape_of(size: Any) -> tuple[int, ...]:
    return tuple(int(s) for s in size)


def _linear_index(indices: Tensor, sizes: Sequence[int]) -> Tensor:
    """Row-major positions of the (sparse_dim, nnz) indices in a tensor of ``sizes`` (int64, nnz)."""
    if len(sizes) == 1:
        return indices[0]
    strides = [1] * len(sizes)
    for d in range(len(sizes) - 2, -1, -1):
        strides[d] = strides[d + 1] * sizes[d + 1]
    weights = _C.tensor(strides, dtype=_C.int64, device=indices.device).unsqueeze(1)
    return (indices * weights).sum(0)


def _unravel(linear: Tensor, sizes: Sequence[int]) -> Tensor:
    """The inverse of :func:`_linear_index`: a (len(sizes), n) int64 index tensor."""
    rows = []
    rest = linear
    for size in reversed(sizes[1:]):
        rows.append(rest.remainder(size))
        rest = rest.div(size, rounding_mode="floor")
    rows.append(rest)
    return _C.stack(rows[::-1]) if rows else linear.unsqueeze(0)


class SparseTensor:
    """A sparse COO tensor: ``values[k]`` sits at ``indices[:, k]`` of a tensor of ``size``; duplicates add up.

    Made by :func:`sparse_coo_tensor` or ``Tensor.to_sparse()``. The values carry
    dtype, device and autograd state: an operation on the sparse tensor is
    differentiated through them.

    Example:
        >>> import flambeau_core as fc
        >>> from flambeau_core.sparse import sparse_coo_tensor
        >>> s = sparse_coo_tensor(fc.tensor([[0, 0]]), fc.tensor([1.0, 2.0]), (3,))
        >>> s.is_coalesced(), s.coalesce().values().tolist()
        (False, [3.0])
    """

    __slots__ = ("_ind", "_val", "_size", "_coalesced")
    is_sparse = True
    layout = sparse_coo

    def __init__(self, indices: Tensor, values: Tensor, size: tuple[int, ...], coalesced: bool) -> None:
        self._ind, self._val, self._size, self._coalesced = indices, values, size, coalesced

    # ---- the description of the tensor ----
    @property
    def shape(self) -> tuple[int, ...]:
        return self._size

    def size(self, dim: int | None = None) -> Any:
        """The size (a tuple), or the size of dimension ``dim``.

        Example:
            >>> import flambeau as fb
            >>> s = fb.sparse_coo_tensor(fb.tensor([[0, 1, 1], [2, 0, 2]]), fb.tensor([3.0, 4.0, 5.0]), (2, 3))
            >>> s.size(), s.size(-1)
            ((2, 3), 3)
        """
        if dim is None:
            return self._size
        return self._size[self._wrap_dim(dim, "size")]

    def dim(self) -> int:
        """The number of dimensions (sparse and dense).

        Example:
            >>> import flambeau as fb
            >>> s = fb.sparse_coo_tensor(fb.tensor([[0, 1, 1], [2, 0, 2]]), fb.tensor([3.0, 4.0, 5.0]), (2, 3))
            >>> s.dim()
            2
        """
        return len(self._size)

    ndim = property(dim)

    def numel(self) -> int:
        """The number of elements of the dense tensor it stands for (zeros included).

        Example:
            >>> import flambeau as fb
            >>> s = fb.sparse_coo_tensor(fb.tensor([[0, 1, 1], [2, 0, 2]]), fb.tensor([3.0, 4.0, 5.0]), (2, 3))
            >>> s.numel()
            6
        """
        return math.prod(self._size)

    def sparse_dim(self) -> int:
        """The number of sparse dimensions (the rows of ``indices``).

        Example:
            >>> import flambeau as fb
            >>> s = fb.sparse_coo_tensor(fb.tensor([[0, 1, 1], [2, 0, 2]]), fb.tensor([3.0, 4.0, 5.0]), (2, 3))
            >>> s.sparse_dim(), s.dense_dim()
            (2, 0)
        """
        return int(self._ind.shape[0])

    def dense_dim(self) -> int:
        """The number of dense dimensions (each value's own dimensions).

        Example:
            >>> import flambeau as fb
            >>> s = fb.sparse_coo_tensor(fb.tensor([[0, 1, 1], [2, 0, 2]]), fb.tensor([3.0, 4.0, 5.0]), (2, 3))
            >>> rows = fb.sparse_coo_tensor(fb.tensor([[0, 2]]), fb.ones(2, 4), (3, 4))  # 2 nonzero rows of 4
            >>> rows.sparse_dim(), rows.dense_dim()
            (1, 1)
        """
        return len(self._size) - self.sparse_dim()

    @property
    def dtype(self) -> Any:
        return self._val.dtype

    @property
    def device(self) -> Any:
        return self._val.device

    @property
    def is_cpu(self) -> bool:
        return self._val.is_cpu

    @property
    def is_cuda(self) -> bool:
        return self._val.device.type == "cuda"

    @property
    def requires_grad(self) -> bool:
        return bool(self._val.requires_grad)

    def requires_grad_(self, requires_grad: bool = True) -> SparseTensor:
        """Sets ``requires_grad`` of the values in place and returns this tensor.

        Example:
            >>> import flambeau as fb
            >>> s = fb.sparse_coo_tensor(fb.tensor([[0, 1, 1], [2, 0, 2]]), fb.tensor([3.0, 4.0, 5.0]), (2, 3))
            >>> s.requires_grad_().requires_grad
            True
        """
        self._val.requires_grad_(requires_grad)
        return self

    @property
    def grad(self) -> SparseTensor | None:
        """The gradient of the values as a sparse tensor of the same indices (None before a backward)."""
        g = self._val.grad
        return None if g is None else SparseTensor(self._ind, g, self._size, self._coalesced)

    def _nnz(self) -> int:
        return int(self._val.shape[0])

    def is_coalesced(self) -> bool:
        """True if the indices are known sorted and unique (``coalesce()`` makes them so).

        Example:
            >>> import flambeau as fb
            >>> s = fb.sparse_coo_tensor(fb.tensor([[0, 1, 1], [2, 0, 2]]), fb.tensor([3.0, 4.0, 5.0]), (2, 3))
            >>> s.is_coalesced(), s.coalesce().is_coalesced()
            (False, True)
        """
        return self._coalesced

    def _wrap_dim(self, dim: int, op: str) -> int:
        n = len(self._size)
        if not -n <= dim < n:
            raise IndexError(
                f"[{op}] Dimension out of range (expected to be in range of [{-n}, {n - 1}], but got {dim})"
            )
        return dim % n

    # ---- the parts ----
    def _indices(self) -> Tensor:
        return self._ind

    def _values(self) -> Tensor:
        return self._val

    def indices(self) -> Tensor:
        """The (sparse_dim, nnz) int64 indices of a coalesced tensor.

        Example:
            >>> import flambeau as fb
            >>> s = fb.sparse_coo_tensor(fb.tensor([[0, 1, 1], [2, 0, 2]]), fb.tensor([3.0, 4.0, 5.0]), (2, 3))
            >>> s.coalesce().indices()
            tensor([[0, 1, 1],
                    [2, 0, 2]])
        """
        self._require_coalesced("indices")
        return self._ind

    def values(self) -> Tensor:
        """The (nnz, *dense_shape) values of a coalesced tensor.

        Example:
            >>> import flambeau as fb
            >>> s = fb.sparse_coo_tensor(fb.tensor([[0, 1, 1], [2, 0, 2]]), fb.tensor([3.0, 4.0, 5.0]), (2, 3))
            >>> s.coalesce().values()
            tensor([3., 4., 5.])
        """
        self._require_coalesced("values")
        return self._val

    def _require_coalesced(self, what: str) -> None:
        if not self._coalesced:
            raise FlambeauError(f"[{what}] Cannot get {what} on an uncoalesced tensor, please call .coalesce() first")

    # ---- conversions ----
    def coalesce(self) -> SparseTensor:
        """The same tensor with sorted, unique indices; the values of duplicate indices are summed.

        Example:
            >>> import flambeau as fb
            >>> s = fb.sparse_coo_tensor(fb.tensor([[0, 1, 1], [2, 0, 2]]), fb.tensor([3.0, 4.0, 5.0]), (2, 3))
            >>> dup = fb.sparse_coo_tensor(fb.tensor([[1, 0, 1]]), fb.tensor([1.0, 2.0, 3.0]), (2,))
            >>> c = dup.coalesce()
            >>> c.indices(), c.values()
            (tensor([[0, 1]]), tensor([2., 4.]))
        """
        if self._coalesced:
            return self
        sparse_sizes = self._size[: self.sparse_dim()]
        linear = _linear_index(self._ind, sparse_sizes)
        ordered, order = linear.sort(stable=True)
        unique, inverse = unique_consecutive(ordered, return_inverse=True)
        dense_shape = tuple(self._val.shape[1:])
        summed = _C.zeros((unique.shape[0], *dense_shape), dtype=self.dtype, device=self.device)
        summed = summed.index_add(0, inverse, self._val.index_select(0, order))
        return SparseTensor(_unravel(unique, sparse_sizes), summed, self._size, True)

    def to_dense(self) -> Tensor:
        """The dense (strided) tensor; duplicate indices add up.

        Example:
            >>> import flambeau as fb
            >>> s = fb.sparse_coo_tensor(fb.tensor([[0, 1, 1], [2, 0, 2]]), fb.tensor([3.0, 4.0, 5.0]), (2, 3))
            >>> s.to_dense()
            tensor([[0., 0., 3.],
                    [4., 0., 5.]])
        """
        k = self.sparse_dim()
        sparse_sizes = self._size[:k]
        flat = _C.zeros((math.prod(sparse_sizes), *self._size[k:]), dtype=self.dtype, device=self.device)
        flat = flat.index_add(0, _linear_index(self._ind, sparse_sizes), self._val)
        return flat.reshape(self._size)

    def to_sparse(self) -> SparseTensor:
        """This tensor (already sparse COO).

        Example:
            >>> import flambeau as fb
            >>> s = fb.sparse_coo_tensor(fb.tensor([[0, 1, 1], [2, 0, 2]]), fb.tensor([3.0, 4.0, 5.0]), (2, 3))
            >>> s.to_sparse() is s
            True
        """
        return self

    def to(self, *args: Any, **kwargs: Any) -> SparseTensor:
        """The tensor with its values converted by ``Tensor.to`` (dtype and/or device); the indices follow the device.

        Example:
            >>> import flambeau as fb
            >>> s = fb.sparse_coo_tensor(fb.tensor([[0, 1, 1], [2, 0, 2]]), fb.tensor([3.0, 4.0, 5.0]), (2, 3))
            >>> s.to(fb.float64).dtype
            flambeau.float64
        """
        values = self._val.to(*args, **kwargs)
        indices = self._ind if values.device == self._ind.device else self._ind.to(values.device)
        return SparseTensor(indices, values, self._size, self._coalesced)

    def float(self) -> SparseTensor:
        """The tensor with float32 values.

        Example:
            >>> import flambeau as fb
            >>> s = fb.sparse_coo_tensor(fb.tensor([[0, 1, 1], [2, 0, 2]]), fb.tensor([3.0, 4.0, 5.0]), (2, 3))
            >>> s.double().float().dtype
            flambeau.float32
        """
        return self.to(_C.float32)

    def double(self) -> SparseTensor:
        """The tensor with float64 values.

        Example:
            >>> import flambeau as fb
            >>> s = fb.sparse_coo_tensor(fb.tensor([[0, 1, 1], [2, 0, 2]]), fb.tensor([3.0, 4.0, 5.0]), (2, 3))
            >>> s.double().dtype
            flambeau.float64
        """
        return self.to(_C.float64)

    def cpu(self) -> SparseTensor:
        """The tensor on the cpu (this tensor's copy there).

        Example:
            >>> import flambeau as fb
            >>> s = fb.sparse_coo_tensor(fb.tensor([[0, 1, 1], [2, 0, 2]]), fb.tensor([3.0, 4.0, 5.0]), (2, 3))
            >>> s.cpu().device
            device(type='cpu')
        """
        return self.to("cpu")

    def detach(self) -> SparseTensor:
        """The tensor with detached values (no autograd history), sharing their memory.

        Example:
            >>> import flambeau as fb
            >>> s = fb.sparse_coo_tensor(fb.tensor([[0, 1, 1], [2, 0, 2]]), fb.tensor([3.0, 4.0, 5.0]), (2, 3))
            >>> s.requires_grad_().detach().requires_grad
            False
        """
        return SparseTensor(self._ind, self._val.detach(), self._size, self._coalesced)

    def clone(self) -> SparseTensor:
        """A copy with its own indices and values.

        Example:
            >>> import flambeau as fb
            >>> s = fb.sparse_coo_tensor(fb.tensor([[0, 1, 1], [2, 0, 2]]), fb.tensor([3.0, 4.0, 5.0]), (2, 3))
            >>> c = s.clone()
            >>> c.to_dense().equal(s.to_dense()), c.values is not s.values
            (True, True)
        """
        return SparseTensor(self._ind.clone(), self._val.clone(), self._size, self._coalesced)

    def t(self) -> SparseTensor:
        """The transpose of a 2-D sparse tensor (both dims sparse).

        Example:
            >>> import flambeau as fb
            >>> s = fb.sparse_coo_tensor(fb.tensor([[0, 1, 1], [2, 0, 2]]), fb.tensor([3.0, 4.0, 5.0]), (2, 3))
            >>> s.t().to_dense()
            tensor([[0., 4.],
                    [0., 0.],
                    [3., 5.]])
        """
        if self.sparse_dim() != 2 or self.dense_dim() != 0:
            raise FlambeauError(
                f"[t] expects a sparse tensor with 2 sparse and 0 dense dims, got sparse_dim {self.sparse_dim()}, "
                f"dense_dim {self.dense_dim()}"
            )
        return SparseTensor(self._ind.flip(0), self._val, (self._size[1], self._size[0]), False)

    # ---- arithmetic ----
    def __matmul__(self, other: Tensor) -> Tensor:
        return mm(self, other)

    def matmul(self, other: Tensor) -> Tensor:
        """The dense product of this 2-D sparse tensor and a dense matrix (as :func:`mm`).

        Example:
            >>> import flambeau as fb
            >>> s = fb.sparse_coo_tensor(fb.tensor([[0, 1, 1], [2, 0, 2]]), fb.tensor([3.0, 4.0, 5.0]), (2, 3))
            >>> s.matmul(fb.ones(3, 1))
            tensor([[3.],
                    [9.]])
        """
        return mm(self, other)

    def mm(self, other: Tensor) -> Tensor:
        """The dense product of this 2-D sparse tensor and a dense matrix ``other``.

        Example:
            >>> import flambeau as fb
            >>> s = fb.sparse_coo_tensor(fb.tensor([[0, 1, 1], [2, 0, 2]]), fb.tensor([3.0, 4.0, 5.0]), (2, 3))
            >>> s.mm(fb.eye(3)).equal(s.to_dense())
            True
        """
        return mm(self, other)

    def __mul__(self, other: Any) -> SparseTensor:
        """The tensor with its values times a number (``mul``, ``*``); a tensor operand raises ``TypeError``.

        Example:
            >>> import flambeau as fb
            >>> s = fb.sparse_coo_tensor(fb.tensor([[0, 1, 1], [2, 0, 2]]), fb.tensor([3.0, 4.0, 5.0]), (2, 3))
            >>> (s * 2).to_dense()
            tensor([[ 0.,  0.,  6.],
                    [ 8.,  0., 10.]])
        """
        if isinstance(other, (builtins.int, builtins.float, builtins.bool)):
            return SparseTensor(self._ind, self._val * other, self._size, self._coalesced)
        raise TypeError(f"[mul] a sparse tensor multiplies a number only, got {type(other).__name__}")

    __rmul__ = __mul__
    mul = __mul__

    def __truediv__(self, other: Any) -> SparseTensor:
        if isinstance(other, (builtins.int, builtins.float)):
            return SparseTensor(self._ind, self._val / other, self._size, self._coalesced)
        raise TypeError(f"[div] a sparse tensor divides by a number only, got {type(other).__name__}")

    def __neg__(self) -> SparseTensor:
        return SparseTensor(self._ind, -self._val, self._size, self._coalesced)

    def __add__(self, other: Any) -> SparseTensor:
        """The coalesced sum of two sparse tensors of the same size (``add``, ``+``).

        Example:
            >>> import flambeau as fb
            >>> s = fb.sparse_coo_tensor(fb.tensor([[0, 1, 1], [2, 0, 2]]), fb.tensor([3.0, 4.0, 5.0]), (2, 3))
            >>> (s + s).to_dense()
            tensor([[ 0.,  0.,  6.],
                    [ 8.,  0., 10.]])
        """
        if not isinstance(other, SparseTensor):
            raise TypeError(f"[add] a sparse tensor adds a sparse tensor only, got {type(other).__name__}")
        if other._size != self._size or other.sparse_dim() != self.sparse_dim():
            raise FlambeauError(
                f"[add] sparse tensors of sizes {self._size} and {other._size} (sparse dims {self.sparse_dim()} "
                f"and {other.sparse_dim()}) cannot be added"
            )
        indices = _C.cat([self._ind, other._ind], 1)
        return SparseTensor(indices, _C.cat([self._val, other._val], 0), self._size, False).coalesce()

    add = __add__

    def __repr__(self) -> str:
        return (
            f"tensor(indices={self._ind!r},\n       values={self._val!r},\n       size={self._size}, "
            f"nnz={self._nnz()}, layout=flambeau.sparse_coo)"
        )

    def __len__(self) -> int:
        if not self._size:
            raise TypeError("len() of a 0-d tensor")
        return self._size[0]


def _as_index_tensor(indices: Any) -> Tensor:
    t = indices if isinstance(indices, Tensor) else _C.tensor(indices)
    if t.is_floating_point() or t.dtype == _C.bool or t.is_complex():
        if t.is_floating_point():
            return t.to(_C.int64)  # as PyTorch: float indices are truncated
        raise TypeError(f"[sparse_coo_tensor] indices must be an integer tensor, got {t.dtype}")
    return t.to(_C.int64) if t.dtype != _C.int64 else t


def sparse_coo_tensor(
    indices: Any,
    values: Any,
    size: Sequence[int] | None = None,
    *,
    dtype: Any = None,
    device: Any = None,
    requires_grad: bool = False,
    check_invariants: bool | None = None,
    is_coalesced: bool | None = None,
) -> SparseTensor:
    """A sparse COO tensor with ``values[k]`` at ``indices[:, k]`` (PyTorch's ``torch.sparse_coo_tensor``).

    Args:
        indices: integer ``(sparse_dim, nnz)`` tensor (or nested lists).
        values: ``(nnz, *dense_shape)`` tensor (or nested lists / numbers).
        size: the tensor's size; inferred as the largest index + 1 per sparse dim
            (and the values' trailing shape) when omitted.
        dtype, device: of the values (default: the values').
        requires_grad: whether the values require grad.
        check_invariants: accepted for PyTorch's signature; indices are always checked.
        is_coalesced: declares the indices sorted and unique (not checked, as PyTorch).

    Raises IndexError for an index outside the size or negative, FlambeauError for
    mismatched shapes, TypeError for non-integer indices.

    Example:
        >>> import flambeau_core as fc
        >>> from flambeau_core.sparse import sparse_coo_tensor
        >>> sparse_coo_tensor([[0, 2]], [5.0, 6.0]).to_dense().tolist()
        [5.0, 0.0, 6.0]
    """
    del check_invariants
    ind = _as_index_tensor(indices)
    val = values if isinstance(values, Tensor) else _C.tensor(values)
    if dtype is not None or device is not None:
        val = val.to(
            device=device if device is not None else val.device, dtype=dtype if dtype is not None else val.dtype
        )
    if ind.dim() != 2:
        raise FlambeauError(f"[sparse_coo_tensor] indices must be sparse_dim x nnz, but got: {list(ind.shape)}")
    if val.dim() == 0:
        raise FlambeauError("[sparse_coo_tensor] values must have at least one dim (nnz), got a 0-d tensor")
    sparse_dim, nnz = int(ind.shape[0]), int(ind.shape[1])
    if int(val.shape[0]) != nnz:
        raise FlambeauError(
            f"[sparse_coo_tensor] indices and values must have same nnz, but got nnz from indices: {nnz}, "
            f"nnz from values: {int(val.shape[0])}"
        )
    dense_shape = tuple(val.shape[1:])
    if size is None:
        if nnz == 0:
            raise FlambeauError("[sparse_coo_tensor] cannot infer the size of a tensor with no nonzeros; pass size")
        sparse_sizes = tuple(int(m) + 1 for m in ind.amax(1).tolist())
        shape = sparse_sizes + dense_shape
    else:
        shape = _shape_of(size)
        if len(shape) != sparse_dim + len(dense_shape):
            raise FlambeauError(
                f"[sparse_coo_tensor] 'len(size) == sparse_dim + dense_dim' is not satisfied: len(size) = "
                f"{len(shape)}, sparse_dim = {sparse_dim}, dense_dim = {len(dense_shape)}"
            )
        if tuple(shape[sparse_dim:]) != dense_shape:
            raise FlambeauError(
                f"[sparse_coo_tensor] values of shape {list(val.shape)} do not fit size {list(shape)}: "
                f"their trailing dims must be the dense dims {list(shape[sparse_dim:])}"
            )
    _check_indices(ind, shape[:sparse_dim])
    if ind.device != val.device:
        ind = ind.to(val.device)
    if requires_grad:
        val.requires_grad_(True)
    coalesced = bool(is_coalesced) if is_coalesced is not None else nnz <= 1
    return SparseTensor(ind, val, shape, coalesced)


def _check_indices(ind: Tensor, sparse_sizes: Sequence[int]) -> None:
    if ind.shape[1] == 0:
        return
    lows, highs = ind.amin(1).tolist(), ind.amax(1).tolist()
    for d, (low, high, size) in enumerate(zip(lows, highs, sparse_sizes, strict=True)):
        if low < 0:
            raise IndexError(f"[sparse_coo_tensor] found negative index {low} for dim {d}")
        if high >= size:
            raise IndexError(
                f"[sparse_coo_tensor] size is inconsistent with indices: for dim {d}, size is {size} but found index "
                f"{high}"
            )


def to_sparse(self: Tensor, sparse_dim: int | None = None) -> SparseTensor:
    """This dense tensor as a coalesced sparse COO tensor of its nonzeros (``sparse_dim`` leading dims sparse).

    Gradients flow back to the dense tensor through the gathered values.

    Example:
        >>> import flambeau_core as fc
        >>> s = fc.tensor([[0.0, 1.0], [2.0, 0.0]]).to_sparse()
        >>> s.indices().tolist(), s.values().tolist()
        ([[0, 1], [1, 0]], [1.0, 2.0])
    """
    k = self.dim() if sparse_dim is None else int(sparse_dim)
    if not 0 < k <= self.dim():
        raise FlambeauError(f"[to_sparse] sparse_dim must be in [1, {self.dim()}] for a {self.dim()}-d tensor, got {k}")
    sizes = tuple(self.shape)
    flat = self.reshape((math.prod(sizes[:k]), *sizes[k:]))
    nonzero = flat != 0
    if nonzero.dim() > 1:
        nonzero = nonzero.flatten(1).any(1)
    linear = _C._nonzero(nonzero).reshape(-1)
    return SparseTensor(_unravel(linear, sizes[:k]), flat.index_select(0, linear), sizes, True)


def _dense_to_dense(self: Tensor) -> Tensor:
    """to_dense() -> Tensor

    ``self`` itself: a strided tensor is already dense (a sparse tensor's ``to_dense`` makes a copy).

    Example:
        >>> import flambeau as fb
        >>> x = fb.tensor([1.0, 2.0])
        >>> x.to_dense() is x
        True
    """
    return self


def mm(mat1: SparseTensor, mat2: Tensor) -> Tensor:
    """The product of a 2-D sparse tensor and a 2-D dense one, a dense tensor (``torch.sparse.mm``).

    Differentiable with respect to ``mat1``'s values and ``mat2``. Duplicate
    indices of an uncoalesced ``mat1`` add up.

    Example:
        >>> import flambeau_core as fc
        >>> from flambeau_core.sparse import sparse_coo_tensor, mm
        >>> a = sparse_coo_tensor([[0, 1], [1, 0]], [2.0, 3.0], (2, 2))
        >>> mm(a, fc.tensor([[1.0], [10.0]])).tolist()
        [[20.0], [3.0]]
    """
    if not isinstance(mat1, SparseTensor):
        raise TypeError(f"[sparse.mm] expects a sparse first operand, got {type(mat1).__name__}")
    if isinstance(mat2, SparseTensor):
        raise TypeError("[sparse.mm] sparse @ sparse is not supported in flambeau; multiply by mat2.to_dense()")
    if not isinstance(mat2, Tensor):
        raise TypeError(f"[sparse.mm] expects a dense Tensor as the second operand, got {type(mat2).__name__}")
    if mat1.sparse_dim() != 2 or mat1.dense_dim() != 0:
        raise FlambeauError(
            f"[sparse.mm] expects a 2-D sparse tensor with 2 sparse dims, got size {list(mat1.shape)} with "
            f"sparse_dim {mat1.sparse_dim()}"
        )
    if mat2.dim() != 2:
        raise FlambeauError(f"[sparse.mm] expects a 2-D dense second operand, got shape {list(mat2.shape)}")
    m, k = mat1.shape
    if int(mat2.shape[0]) != k:
        raise FlambeauError(
            f"[sparse.mm] shapes {list(mat1.shape)} and {list(mat2.shape)} cannot be multiplied: {k} != {mat2.shape[0]}"
        )
    if mat1.dtype != mat2.dtype:
        raise TypeError(f"[sparse.mm] expected scalar type {mat1.dtype} but found {mat2.dtype}")
    rows, cols = mat1._ind[0], mat1._ind[1]
    contributions = mat2.index_select(0, cols) * mat1._val.unsqueeze(1)
    out = _C.zeros((m, int(mat2.shape[1])), dtype=mat2.dtype, device=mat2.device)
    return out.index_add(0, rows, contributions)


def spmm(mat1: SparseTensor, mat2: Tensor) -> Tensor:
    """``torch.spmm``: the same as :func:`mm` (a 2-D sparse tensor times a dense one, a dense tensor).

    Example:
        >>> import flambeau as fb
        >>> from flambeau_core.sparse import sparse_coo_tensor
        >>> a = sparse_coo_tensor([[0, 1], [1, 0]], [2.0, 3.0], (2, 2))
        >>> fb.spmm(a, fb.tensor([[1.0], [10.0]])).tolist()
        [[20.0], [3.0]]
    """
    return mm(mat1, mat2)


def sum(input: SparseTensor, dim: int | Sequence[int] | None = None, dtype: Any = None) -> Any:  # noqa: A001,A002
    """Sums a sparse tensor (``torch.sparse.sum``): over everything (a 0-d dense tensor) or over ``dim``.

    Summing over sparse dims only leaves a coalesced sparse tensor while sparse
    dims remain; summing every sparse dim leaves a dense tensor.

    Example:
        >>> from flambeau_core.sparse import sparse_coo_tensor, sum
        >>> a = sparse_coo_tensor([[0, 1, 1], [2, 0, 2]], [1.0, 2.0, 3.0], (2, 3))
        >>> sum(a).item(), sum(a, dim=1).to_dense().tolist()
        (6.0, [1.0, 5.0])
    """
    if not isinstance(input, SparseTensor):
        raise TypeError(f"[sparse.sum] expects a sparse tensor, got {type(input).__name__}")
    values = input._val if dtype is None else input._val.to(dtype)
    if dim is None:
        return values.sum()
    dims = sorted({input._wrap_dim(d, "sparse.sum") for d in ([dim] if isinstance(dim, int) else dim)})
    k = input.sparse_dim()
    sparse_dims = [d for d in dims if d < k]
    dense_dims = [d - k + 1 for d in dims if d >= k]  # of the values, whose dim 0 is nnz
    if dense_dims:
        values = values.sum(dense_dims)
    keep = [d for d in range(k) if d not in sparse_dims]
    if not keep:
        return values.sum(0)
    remaining = tuple(s for d, s in enumerate(input._size) if d not in dims)
    indices = input._ind.index_select(0, _C.tensor(keep, dtype=_C.int64, device=input._ind.device))
    return SparseTensor(indices, values, remaining, False).coalesce()


def with_sparse_first_operand(dense_op: Callable[..., Tensor]) -> Callable[..., Tensor]:
    """``dense_op(input, other, *, out=None)`` (``mm``, ``matmul``) that also takes a sparse first operand.

    Example:
        >>> import flambeau_core as fc
        >>> from flambeau_core.sparse import sparse_coo_tensor, with_sparse_first_operand
        >>> mm = with_sparse_first_operand(fc.mm)
        >>> mm(sparse_coo_tensor([[0], [1]], [2.0], (2, 2)), fc.ones(2, 1)).tolist()
        [[2.0], [0.0]]
    """

    @functools.wraps(dense_op)
    def op(input: Any, other: Any, *, out: Tensor | None = None) -> Tensor:  # noqa: A002
        # Spelled out (no *args/**kwargs): this sits in front of every dense product.
        if type(input) is SparseTensor:
            if out is not None:
                raise TypeError(f"[{dense_op.__name__}] out= is not supported with a sparse first operand")
            return mm(input, other)
        return dense_op(input, other) if out is None else dense_op(input, other, out=out)

    return op


def _install_tensor_methods() -> None:
    # A dense tensor answers the sparse calls a program makes on any tensor (PyTorch's strided layout).
    Tensor.is_sparse = property(lambda self: False)
    Tensor.layout = property(lambda self: strided)
    Tensor.to_sparse = to_sparse
    Tensor.to_dense = _dense_to_dense


_install_tensor_methods()
