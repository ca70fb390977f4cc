"""Storage objects: PyTorch's ``UntypedStorage`` (the bytes every view of a tensor shares) and the deprecated
``TypedStorage`` (those bytes read as elements of one dtype, ``Tensor.storage()``), with the legacy classes
``FloatStorage``, ``LongStorage``, ... that ``Tensor.storage_type()`` returns; ``is_storage``; and the Tensor
methods ``untyped_storage``, ``storage``, ``storage_type`` and ``is_set_to``.

Note [Storage objects]
Core's storage is a C++ object with no Python class; a tensor tells which one it views (``_storage_id``),
where it starts (``_storage_ptr``) and how many bytes it holds (``_storage_nbytes``). A storage object here
is a 1-D uint8 tensor over all of those bytes (``as_strided`` from offset 0, then a dtype view), so it keeps
the storage alive, reads and writes its bytes, and sees moved memory (``share_memory_``) at once. As in
PyTorch, asking a tensor for its storage twice gives the same object while it lives (a weak table keyed by
the storage's identity, which stays valid while the object keeps the storage alive).

Example:
    >>> import flambeau as fb
    >>> x = fb.arange(4, dtype=fb.float32)
    >>> s = x.untyped_storage()
    >>> s.nbytes(), s.data_ptr() == x.data_ptr(), x[2:].untyped_storage() is s
    (16, True, True)
"""

from __future__ import annotations

import warnings
import weakref
from collections.abc import Iterator
from typing import Any

from flambeau_core import _C

_BY_STORAGE: weakref.WeakValueDictionary[int, UntypedStorage] = weakref.WeakValueDictionary()


def _bytes_of(t: _C.Tensor) -> _C.Tensor:
    """A 1-D uint8 tensor over all the bytes of ``t``'s storage (Note [Storage objects])."""
    import flambeau_core as fc

    base = _C.Tensor(t)  # an alias without autograd history: as_strided below records nothing
    nbytes, itemsize = base._storage_nbytes, base.element_size()
    if nbytes % itemsize:
        raise ValueError(f"[untyped_storage] a storage of {nbytes} bytes is not a whole number of {base.dtype}")
    return base.as_strided((nbytes // itemsize,), (1,), 0).view(fc.uint8)


class UntypedStorage:
    """The bytes a tensor and its views share (PyTorch's ``torch.UntypedStorage``): ``Tensor.untyped_storage()``.

    Indexing reads and writes bytes (ints); a slice is a storage over part of the same memory. Tensors share
    memory exactly when their storages' ``data_ptr()`` are equal.

    Example:
        >>> import flambeau as fb
        >>> x = fb.zeros(2, dtype=fb.int32)
        >>> s = x.untyped_storage()
        >>> s.size(), len(s), s.element_size(), s.device
        (8, 8, 1, device(type='cpu'))
        >>> s[0] = 7
        >>> x.tolist(), s[0:4].tolist()
        ([7, 0], [7, 0, 0, 0])
    """

    __slots__ = ("_bytes", "__weakref__")
    is_sparse = False

    def __init__(self, *args: Any, device: Any = None) -> None:
        """UntypedStorage(size=0, *, device=None): a new storage of ``size`` uninitialized bytes.

        Example:
            >>> import flambeau as fb
            >>> fb.UntypedStorage(5).nbytes()
            5
        """
        import flambeau_core as fc

        if len(args) > 1:
            raise TypeError(f"[UntypedStorage] expected at most one argument (a size or a sequence), got {len(args)}")
        arg = args[0] if args else 0
        if isinstance(arg, int) and not isinstance(arg, bool):
            self._bytes = fc.empty((arg,), dtype=fc.uint8, device=device)
        else:
            self._bytes = fc.tensor(list(arg), dtype=fc.uint8, device=device)

    @classmethod
    def _wrap(cls, data: _C.Tensor) -> UntypedStorage:
        out = cls.__new__(cls)
        out._bytes = data
        return out

    @classmethod
    def _of(cls, t: _C.Tensor) -> UntypedStorage:
        """The storage object of tensor ``t``, one per storage while it lives."""
        key = t._storage_id
        found = _BY_STORAGE.get(key)
        if found is None:
            found = cls._wrap(_bytes_of(t))
            _BY_STORAGE[key] = found
        return found

    @property
    def device(self) -> _C.device:
        """The device of the storage's memory."""
        return self._bytes.device

    @property
    def is_cuda(self) -> bool:
        """True if the memory is on a CUDA device."""
        return self._bytes.device.type == "cuda"

    def nbytes(self) -> int:
        """The number of bytes.

        Example:
            >>> import flambeau as fb
            >>> fb.zeros(3).untyped_storage().nbytes()
            12
        """
        return self._bytes.numel()

    def size(self) -> int:
        """The number of bytes (an untyped storage's elements are bytes).

        Example:
            >>> import flambeau as fb
            >>> fb.zeros(3, dtype=fb.float64).untyped_storage().size()
            24
        """
        return self._bytes.numel()

    def __len__(self) -> int:
        return self._bytes.numel()

    def element_size(self) -> int:
        """1: the size of a byte.

        Example:
            >>> import flambeau as fb
            >>> fb.zeros(3).untyped_storage().element_size()
            1
        """
        return 1

    def data_ptr(self) -> int:
        """The address of the first byte (0 for an empty storage or a meta one).

        Example:
            >>> import flambeau as fb
            >>> x = fb.zeros(4)
            >>> x[1:].untyped_storage().data_ptr() == x.data_ptr()
            True
        """
        return self._bytes.data_ptr() if self._bytes.numel() else 0

    def untyped(self) -> UntypedStorage:
        """This storage itself (``TypedStorage.untyped()`` gives the untyped one beneath).

        Example:
            >>> import flambeau as fb
            >>> s = fb.zeros(2).untyped_storage()
            >>> s.untyped() is s
            True
        """
        return self

    def _index(self, i: int) -> int:
        n = self._bytes.numel()
        j = i + n if i < 0 else i
        if not 0 <= j < n:
            # PyTorch's words, with the index after a negative one was wrapped once (-17 of 16 reads -1)
            raise IndexError(f"index {j} out of range for storage of size {n}")
        return j

    def __getitem__(self, idx: int | slice) -> Any:
        if isinstance(idx, slice):
            start, stop, step = idx.indices(self._bytes.numel())
            if step != 1:
                raise RuntimeError("slices with steps other than 1 are not supported")
            return type(self)._wrap(self._bytes[start : max(start, stop)])
        return self._bytes[self._index(idx)].item()

    def __setitem__(self, idx: int | slice, value: Any) -> None:
        if not isinstance(idx, slice) and not 0 <= idx < self._bytes.numel():
            # as PyTorch's: a RuntimeError, and no negative index (reading takes one)
            raise RuntimeError(f"index {idx} out of bounds for storage of size {self._bytes.numel()}")
        self._bytes[idx] = value

    def __iter__(self) -> Iterator[int]:
        return iter(self.tolist())

    def tolist(self) -> list[int]:
        """The bytes as a list of ints.

        Example:
            >>> import flambeau as fb
            >>> fb.tensor([1, 258], dtype=fb.int16).untyped_storage().tolist()
            [1, 0, 2, 1]
        """
        return self._bytes.tolist()

    def fill_(self, value: int) -> UntypedStorage:
        """Sets every byte to ``value``; returns this storage.

        Example:
            >>> import flambeau as fb
            >>> x = fb.ones(2, dtype=fb.int32)
            >>> _ = x.untyped_storage().fill_(0)
            >>> x.tolist()
            [0, 0]
        """
        self._bytes.fill_(value)
        return self

    def copy_(self, source: UntypedStorage | TypedStorage, non_blocking: bool = False) -> UntypedStorage:
        """Copies the bytes of ``source`` (a storage of the same size) into this one; returns this storage.

        Example:
            >>> import flambeau as fb
            >>> x, y = fb.zeros(2), fb.ones(2)
            >>> _ = x.untyped_storage().copy_(y.untyped_storage())
            >>> x.tolist()
            [1.0, 1.0]
        """
        src = source.untyped() if isinstance(source, (UntypedStorage, TypedStorage)) else None
        if src is None:
            raise TypeError(f"[copy_] expected a storage as source, got {type(source).__name__}")
        if src.nbytes() != self.nbytes():
            raise RuntimeError(
                f"[copy_] size mismatch: this storage has {self.nbytes()} bytes, the source {src.nbytes()}"
            )
        self._bytes.copy_(src._bytes)
        return self

    def clone(self) -> UntypedStorage:
        """A new storage with a copy of these bytes, on the same device.

        Example:
            >>> import flambeau as fb
            >>> s = fb.ones(1, dtype=fb.int16).untyped_storage()
            >>> c = s.clone()
            >>> c.tolist(), c.data_ptr() != s.data_ptr()
            ([1, 0], True)
        """
        return type(self)._wrap(self._bytes.clone())

    def cpu(self) -> UntypedStorage:
        """This storage if it is on the cpu, else a copy of it there.

        Example:
            >>> import flambeau as fb
            >>> s = fb.zeros(2).untyped_storage()
            >>> s.cpu() is s
            True
        """
        return self if self._bytes.device.type == "cpu" else type(self)._wrap(self._bytes.cpu())

    def is_pinned(self, device: Any = None) -> bool:
        """True if the memory is page-locked host memory (``Tensor.pin_memory``).

        Example:
            >>> import flambeau as fb
            >>> fb.zeros(2).untyped_storage().is_pinned()
            False
        """
        return bool(self._bytes.is_pinned())

    def is_shared(self) -> bool:
        """True if the memory is shared between processes (``share_memory_``; needs flambeau-data).

        Example:
            >>> import flambeau as fb
            >>> fb.zeros(2).untyped_storage().is_shared()
            False
        """
        return bool(self._bytes.is_shared())

    def share_memory_(self) -> UntypedStorage:
        """Moves the memory into shared memory, for every tensor that views it; returns this storage
        (``Tensor.share_memory_``, which flambeau-data provides).

        Example:
            >>> import flambeau as fb
            >>> x = fb.zeros(2)
            >>> x.untyped_storage().share_memory_().is_shared(), x.is_shared()
            (True, True)
        """
        self._bytes.share_memory_()
        return self

    def __repr__(self) -> str:
        head = f"[flambeau.UntypedStorage(device={self.device}) of size {self.nbytes()}]"
        if self.device.type == "meta":
            return f"...\n{head}"
        return "\n".join([*(f" {b}" for b in self.tolist()), head])


_typed_storage_warned = False


def _warn_typed_storage_removal(stacklevel: int = 2) -> None:
    """PyTorch's deprecation warning for typed storages, once per process as PyTorch's."""
    global _typed_storage_warned
    if not _typed_storage_warned:
        _typed_storage_warned = True
        warnings.warn(
            "TypedStorage is deprecated. It will be removed in the future and UntypedStorage will be the only "
            "storage class. This should only matter to you if you are using storages directly.  To access "
            "UntypedStorage directly, use tensor.untyped_storage() instead of tensor.storage()",
            UserWarning,
            stacklevel=stacklevel + 1,
        )


class _LegacyStorageMeta(type):
    # As PyTorch's: isinstance(x.storage(), FloatStorage) asks the typed storage's dtype.
    def __instancecheck__(cls, instance: object) -> bool:
        if type.__instancecheck__(cls, instance):
            return True
        dtype = cls.__dict__.get("_legacy_dtype")
        return dtype is not None and isinstance(instance, TypedStorage) and instance.dtype == dtype


class TypedStorage(metaclass=_LegacyStorageMeta):
    """A storage's bytes read as elements of one dtype (PyTorch's deprecated ``torch.TypedStorage``):
    ``Tensor.storage()``. Its first use in a process warns, as PyTorch's; prefer ``untyped_storage()``.

    Example:
        >>> import flambeau as fb
        >>> import warnings
        >>> x = fb.arange(3, dtype=fb.float32)
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("ignore")
        ...     s = x.storage()
        >>> s.dtype, s.size(), s.nbytes(), s[1], s.tolist()
        (flambeau.float32, 3, 12, 1.0, [0.0, 1.0, 2.0])
    """

    __slots__ = ("_untyped_storage", "dtype", "_elements")
    is_sparse = False

    def __init__(self, untyped: UntypedStorage, dtype: Any) -> None:
        """TypedStorage(untyped, dtype): ``untyped``'s bytes read as ``dtype``.

        Example:
            >>> import flambeau as fb
            >>> import warnings
            >>> warnings.simplefilter("ignore")
            >>> u = fb.tensor([1, 2], dtype=fb.int32).untyped_storage()
            >>> fb.TypedStorage(u, fb.int32).tolist()
            [1, 2]
        """
        _warn_typed_storage_removal()
        if not isinstance(untyped, UntypedStorage):
            raise TypeError(f"[TypedStorage] expected an UntypedStorage, got {type(untyped).__name__}")
        if not isinstance(dtype, _C.dtype):
            raise TypeError(f"[TypedStorage] expected a dtype, got {type(dtype).__name__}")
        itemsize = dtype.itemsize
        if untyped.nbytes() % itemsize:
            raise RuntimeError(
                f"[TypedStorage] a storage of {untyped.nbytes()} bytes is not a whole number of {dtype} elements"
            )
        self._untyped_storage = untyped
        self.dtype = dtype
        self._elements = untyped._bytes.view(dtype)

    @property
    def device(self) -> _C.device:
        """The device of the storage's memory."""
        return self._untyped_storage.device

    @property
    def is_cuda(self) -> bool:
        """True if the memory is on a CUDA device."""
        return self.device.type == "cuda"

    def untyped(self) -> UntypedStorage:
        """The untyped storage beneath (the same object as ``Tensor.untyped_storage()``).

        Example:
            >>> import flambeau as fb
            >>> import warnings
            >>> warnings.simplefilter("ignore")
            >>> x = fb.zeros(2)
            >>> x.storage().untyped() is x.untyped_storage()
            True
        """
        _warn_typed_storage_removal()
        return self._untyped_storage

    def size(self) -> int:
        """The number of elements.

        Example:
            >>> import flambeau as fb
            >>> import warnings
            >>> warnings.simplefilter("ignore")
            >>> fb.zeros(2, 3).storage().size()
            6
        """
        _warn_typed_storage_removal()
        return self._elements.numel()

    def __len__(self) -> int:
        _warn_typed_storage_removal()
        return self._elements.numel()

    def nbytes(self) -> int:
        """The number of bytes.

        Example:
            >>> import flambeau as fb
            >>> import warnings
            >>> warnings.simplefilter("ignore")
            >>> fb.zeros(2, 3).storage().nbytes()
            24
        """
        _warn_typed_storage_removal()
        return self._untyped_storage.nbytes()

    def element_size(self) -> int:
        """The size of one element in bytes.

        Example:
            >>> import flambeau as fb
            >>> import warnings
            >>> warnings.simplefilter("ignore")
            >>> fb.zeros(2, dtype=fb.float64).storage().element_size()
            8
        """
        _warn_typed_storage_removal()
        return self.dtype.itemsize

    def data_ptr(self) -> int:
        """The address of the first element (0 for an empty storage or a meta one).

        Example:
            >>> import flambeau as fb
            >>> import warnings
            >>> warnings.simplefilter("ignore")
            >>> x = fb.zeros(2)
            >>> x.storage().data_ptr() == x.data_ptr()
            True
        """
        _warn_typed_storage_removal()
        return self._untyped_storage.data_ptr()

    def _index(self, i: int) -> int:
        n = self._elements.numel()
        if not -n <= i < n:
            raise IndexError(f"index {i} out of range for storage of size {n}")
        return i + n if i < 0 else i

    def __getitem__(self, idx: int) -> Any:
        _warn_typed_storage_removal()
        if isinstance(idx, slice):
            raise RuntimeError("slices are only supported in UntypedStorage.__getitem__")
        return self._elements[self._index(idx)].item()

    def __setitem__(self, idx: int | slice, value: Any) -> None:
        _warn_typed_storage_removal()
        self._elements[idx] = value  # tensor indexing, as PyTorch's (IndexError out of range)

    def __iter__(self) -> Iterator[Any]:
        return iter(self.tolist())

    def tolist(self) -> list[Any]:
        """The elements as a list of Python numbers.

        Example:
            >>> import flambeau as fb
            >>> import warnings
            >>> warnings.simplefilter("ignore")
            >>> fb.arange(3).storage().tolist()
            [0, 1, 2]
        """
        _warn_typed_storage_removal()
        return self._elements.tolist()

    def fill_(self, value: Any) -> TypedStorage:
        """Sets every element to ``value``; returns this storage.

        Example:
            >>> import flambeau as fb
            >>> import warnings
            >>> warnings.simplefilter("ignore")
            >>> x = fb.zeros(2)
            >>> _ = x.storage().fill_(2.5)
            >>> x.tolist()
            [2.5, 2.5]
        """
        _warn_typed_storage_removal()
        self._elements.fill_(value)
        return self

    def copy_(self, source: TypedStorage | UntypedStorage, non_blocking: bool = False) -> TypedStorage:
        """Copies ``source`` (a storage of the same size) into this one; returns this storage.

        Example:
            >>> import flambeau as fb
            >>> import warnings
            >>> warnings.simplefilter("ignore")
            >>> x = fb.zeros(2)
            >>> _ = x.storage().copy_(fb.ones(2).storage())
            >>> x.tolist()
            [1.0, 1.0]
        """
        _warn_typed_storage_removal()
        if isinstance(source, TypedStorage):
            if source.size() != self.size():
                raise RuntimeError(
                    f"[copy_] size mismatch: this storage has {self.size()} elements, the source {source.size()}"
                )
            self._elements.copy_(source._elements)
        else:
            self._untyped_storage.copy_(source)
        return self

    def clone(self) -> TypedStorage:
        """A new storage with a copy of these elements.

        Example:
            >>> import flambeau as fb
            >>> import warnings
            >>> warnings.simplefilter("ignore")
            >>> fb.ones(2).storage().clone().tolist()
            [1.0, 1.0]
        """
        _warn_typed_storage_removal()
        return TypedStorage(self._untyped_storage.clone(), self.dtype)

    def cpu(self) -> TypedStorage:
        """This storage if it is on the cpu, else a copy of it there.

        Example:
            >>> import flambeau as fb
            >>> import warnings
            >>> warnings.simplefilter("ignore")
            >>> s = fb.ones(2).storage()
            >>> s.cpu() is s
            True
        """
        _warn_typed_storage_removal()
        return self if self.device.type == "cpu" else TypedStorage(self._untyped_storage.cpu(), self.dtype)

    def is_pinned(self, device: Any = None) -> bool:
        """True if the memory is page-locked host memory.

        Example:
            >>> import flambeau as fb
            >>> import warnings
            >>> warnings.simplefilter("ignore")
            >>> fb.ones(2).storage().is_pinned()
            False
        """
        _warn_typed_storage_removal()
        return self._untyped_storage.is_pinned()

    def is_shared(self) -> bool:
        """True if the memory is shared between processes.

        Example:
            >>> import flambeau as fb
            >>> import warnings
            >>> warnings.simplefilter("ignore")
            >>> fb.ones(2).storage().is_shared()
            False
        """
        _warn_typed_storage_removal()
        return self._untyped_storage.is_shared()

    def share_memory_(self) -> TypedStorage:
        """Moves the memory into shared memory; returns this storage.

        Example:
            >>> import flambeau as fb
            >>> import warnings
            >>> warnings.simplefilter("ignore")
            >>> fb.ones(2).storage().share_memory_().is_shared()
            True
        """
        _warn_typed_storage_removal()
        self._untyped_storage.share_memory_()
        return self

    def __repr__(self) -> str:
        head = f"[flambeau.TypedStorage(dtype={self.dtype}, device={self.device}) of size {len(self)}]"
        if self.device.type == "meta":
            return f"...\n{head}"
        return "\n".join([*(f" {v}" for v in self.tolist()), head])


# (legacy class name, dtype name): PyTorch's, for the dtypes that have one (uint16/32/64 have none).
LEGACY_STORAGES = [
    ("BoolStorage", "bool"),
    ("ByteStorage", "uint8"),
    ("CharStorage", "int8"),
    ("ShortStorage", "int16"),
    ("IntStorage", "int32"),
    ("LongStorage", "int64"),
    ("HalfStorage", "float16"),
    ("BFloat16Storage", "bfloat16"),
    ("FloatStorage", "float32"),
    ("DoubleStorage", "float64"),
    ("ComplexFloatStorage", "complex64"),
    ("ComplexDoubleStorage", "complex128"),
]


def _legacy_class(name: str, dtype: Any) -> type:
    def __init__(self: TypedStorage, *args: Any, device: Any = None) -> None:  # noqa: N807
        TypedStorage.__init__(self, _bytes_storage(args, dtype, device), dtype)

    doc = f"""PyTorch's legacy ``torch.{name}``: a typed storage of {dtype} (``Tensor.storage_type()``).

    ``isinstance(t.storage(), {name})`` is True for a {dtype} tensor ``t``; ``{name}(n)`` makes a new
    storage of ``n`` elements.

    Example:
        >>> import flambeau as fb
        >>> import warnings
        >>> warnings.simplefilter("ignore")
        >>> fb.{name}(3).size()
        3
    """
    return _LegacyStorageMeta(
        name,
        (TypedStorage,),
        {"__init__": __init__, "__doc__": doc, "__slots__": (), "_legacy_dtype": dtype, "__module__": "flambeau"},
    )


def _bytes_storage(args: tuple[Any, ...], dtype: Any, device: Any) -> UntypedStorage:
    import flambeau_core as fc

    if len(args) > 1:
        raise TypeError(f"[TypedStorage] expected at most one argument (a size or a sequence), got {len(args)}")
    arg = args[0] if args else 0
    if isinstance(arg, int) and not isinstance(arg, bool):
        data = fc.empty((arg,), dtype=dtype, device=device)
    else:
        data = fc.tensor(list(arg), dtype=dtype, device=device)
    return UntypedStorage._of(data)


def is_storage(obj: Any) -> bool:
    """is_storage(obj) -> bool

    True if ``obj`` is a storage object (``UntypedStorage`` or ``TypedStorage``).

    Example:
        >>> import flambeau as fb
        >>> x = fb.zeros(2)
        >>> fb.is_storage(x.untyped_storage()), fb.is_storage(x)
        (True, False)
    """
    return isinstance(obj, (UntypedStorage, TypedStorage))


def _untyped_storage(self: _C.Tensor) -> UntypedStorage:
    """untyped_storage() -> UntypedStorage

    The storage this tensor views: the same object for every view of it while it lives. Two tensors share
    memory when their storages' ``data_ptr()`` are equal.

    Example:
        >>> import flambeau as fb
        >>> x = fb.zeros(2, 3)
        >>> s = x.untyped_storage()
        >>> s.nbytes(), x.t().untyped_storage() is s, x.clone().untyped_storage().data_ptr() == s.data_ptr()
        (24, True, False)
    """
    return UntypedStorage._of(self)


def _storage(self: _C.Tensor) -> TypedStorage:
    """storage() -> TypedStorage

    The storage this tensor views, read as this tensor's dtype (PyTorch's deprecated typed storage: the first
    use warns; prefer :meth:`untyped_storage`).

    Example:
        >>> import flambeau as fb
        >>> import warnings
        >>> warnings.simplefilter("ignore")
        >>> x = fb.arange(4)[1:]
        >>> x.storage().size(), x.storage().tolist()
        (4, [0, 1, 2, 3])
    """
    _warn_typed_storage_removal()
    return TypedStorage(UntypedStorage._of(self), self.dtype)


def _storage_type(self: _C.Tensor) -> type | None:
    """storage_type() -> type

    The legacy storage class of this tensor's dtype (``FloatStorage`` for float32; None for uint16, uint32
    and uint64, which have none, as in PyTorch).

    Example:
        >>> import flambeau as fb
        >>> fb.zeros(2).storage_type() is fb.FloatStorage, fb.zeros(2, dtype=fb.int64).storage_type().__name__
        (True, 'LongStorage')
    """
    return _LEGACY_OF_DTYPE.get(self.dtype)


def _is_set_to(self: _C.Tensor, tensor: _C.Tensor) -> bool:
    """is_set_to(tensor) -> bool

    True if both tensors view the exact same memory: the same storage, storage offset, shape and strides.

    Example:
        >>> import flambeau as fb
        >>> x = fb.zeros(2, 3)
        >>> x.is_set_to(x[:]), x.is_set_to(x.view(3, 2)), x.is_set_to(x.clone())
        (True, False, False)
    """
    if not isinstance(tensor, _C.Tensor):
        raise TypeError(f"is_set_to(): argument 'tensor' (position 1) must be Tensor, not {type(tensor).__name__}")
    return (
        self._storage_id == tensor._storage_id
        and self.storage_offset() == tensor.storage_offset()
        and tuple(self.shape) == tuple(tensor.shape)
        and self.stride() == tensor.stride()
    )


def is_inference(input: _C.Tensor) -> bool:  # noqa: A002
    """is_inference(input) -> bool

    True if ``input`` is an inference tensor: made inside ``inference_mode``, or a view of one
    (:meth:`Tensor.is_inference`).

    Example:
        >>> import flambeau as fb
        >>> with fb.inference_mode():
        ...     y = fb.ones(2)
        >>> fb.is_inference(y), fb.is_inference(fb.ones(2))
        (True, False)
    """
    if not isinstance(input, _C.Tensor):
        raise TypeError(f"is_inference(): argument 'input' (position 1) must be Tensor, not {type(input).__name__}")
    return input.is_inference()


_LEGACY_OF_DTYPE: dict[Any, type] = {}
LEGACY_CLASSES: dict[str, type] = {}


def install() -> None:
    import flambeau_core as fc

    for name, dtype_name in LEGACY_STORAGES:
        dtype = getattr(fc, dtype_name)
        cls = _legacy_class(name, dtype)
        LEGACY_CLASSES[name] = cls
        _LEGACY_OF_DTYPE[dtype] = cls
        setattr(fc, name, cls)
    for cls in (UntypedStorage, TypedStorage):
        cls.__module__ = "flambeau"
        setattr(fc, cls.__name__, cls)
    fc.is_storage = is_storage
    fc.is_inference = is_inference
    for name, fn in (
        ("untyped_storage", _untyped_storage),
        ("storage", _storage),
        ("storage_type", _storage_type),
        ("is_set_to", _is_set_to),
    ):
        fn.__name__ = fn.__qualname__ = name
        setattr(_C.Tensor, name, fn)
