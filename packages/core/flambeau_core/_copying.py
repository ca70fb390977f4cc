"""copy.copy, copy.deepcopy and pickle support for Tensor, as PyTorch 2.13 behaves.

- ``copy.copy(t)``: a new tensor object sharing ``t``'s memory (a detached leaf that keeps
  ``requires_grad``), as PyTorch's.
- ``copy.deepcopy(t)``: new memory with ``t``'s sizes, strides and storage offset; tensors
  that share a storage in one deepcopy call share the copied storage (the storage is
  copied once, through ``memo``); ``.grad`` and a subclass's ``__dict__`` are deep-copied
  too. A non-leaf tensor raises, as in PyTorch.
- ``pickle``: the values, dtype, sizes, strides, storage offset, device and
  ``requires_grad``; a subclass keeps its type and ``__dict__``. Each pickled tensor carries
  its own bytes (tensors sharing memory do not share it after unpickling, as with
  PyTorch's plain pickle). Data-loader queues do not use this path: flambeau-data
  registers reductions that move tensors through shared memory instead of bytes.

Example:
    >>> import copy, pickle
    >>> import flambeau_core as fc
    >>> t = fc.arange(6.0).reshape(2, 3).t()
    >>> u = pickle.loads(pickle.dumps(t))
    >>> u.tolist() == t.tolist(), u.stride()
    (True, (1, 3))
    >>> copy.copy(t).data_ptr() == t.data_ptr()
    True
"""

from __future__ import annotations

from typing import Any

from flambeau_core import _C


class _no_grad:
    """Grad mode off (core's own switch: this module must not import flambeau-autograd)."""

    def __enter__(self) -> None:
        self.prev = _C.is_grad_enabled()
        _C._set_grad_enabled(False)

    def __exit__(self, *exc: object) -> None:
        _C._set_grad_enabled(self.prev)


def _reach(t: _C.Tensor) -> int:
    """Elements of the storage from index 0 up to the last one ``t`` addresses (0 if empty)."""
    if t.numel() == 0:
        return 0
    return t.storage_offset() + sum((n - 1) * s for n, s in zip(t.shape, t.stride(), strict=True)) + 1


def _flat_from_zero(t: _C.Tensor) -> _C.Tensor:
    """The storage elements ``[0, _reach(t))`` as a 1-D view of ``t``'s dtype (detached)."""
    if t.requires_grad:  # only possible with flambeau-autograd loaded, which adds detach()
        t = t.detach()
    return t.as_strided((_reach(t),), (1,), 0)


def _new_instance(cls: type, base: _C.Tensor) -> _C.Tensor:
    """A ``cls`` object (a Tensor subclass) viewing ``base``'s memory, its ``__init__`` not run."""
    if cls is _C.Tensor:
        return _C.Tensor(base)
    obj = cls.__new__(cls)
    _C.Tensor.__init__(obj, base)
    return obj


def _rebuild_tensor(
    data: bytes,
    dtype_name: str,
    shape: tuple[int, ...],
    stride: tuple[int, ...] | bool,
    offset: int = 0,
    device: str = "cpu",
    requires_grad: bool = False,
    cls: type | None = None,
    state: dict | None = None,
) -> _C.Tensor:
    dtype = getattr(_C, dtype_name)
    if isinstance(stride, bool):  # the 4-argument form written before strides were kept
        stride, requires_grad = _C.empty(shape).stride(), stride
    if data:
        flat = _C.frombuffer(bytearray(data), dtype=dtype).clone()
    else:
        flat = _C.empty(0, dtype=dtype)
    if device != "cpu":
        flat = flat.to(device)
    t = flat.as_strided(shape, stride, offset) if data else _C.empty(shape, dtype=dtype, device=device)
    if cls is not None and cls is not _C.Tensor:
        t = _new_instance(cls, t)
    if requires_grad:
        t.requires_grad_(True)
    if state:
        t.__dict__.update(state)
    return t


def _storage_bytes(t: _C.Tensor) -> bytes:
    if t.numel() == 0:
        return b""
    with _no_grad():
        flat = _flat_from_zero(t)
        if flat.device.type != "cpu":
            flat = flat.to("cpu")
        return bytes(memoryview(flat))


def tensor_reduce_ex(self: _C.Tensor, protocol: int) -> tuple[Any, ...]:
    """``pickle`` support (see the module docstring)."""
    cls = type(self)
    state = dict(self.__dict__) if cls is not _C.Tensor and hasattr(self, "__dict__") else None
    return (
        _rebuild_tensor,
        (
            _storage_bytes(self),
            str(self.dtype).split(".")[-1],
            tuple(self.shape),
            tuple(self.stride()),
            self.storage_offset() if self.numel() else 0,
            str(self.device),
            bool(self.requires_grad),
            None if cls is _C.Tensor else cls,
            state or None,
        ),
    )


def tensor_copy(self: _C.Tensor) -> _C.Tensor:
    """``copy.copy(t)``: a new tensor object sharing ``t``'s memory (a leaf; ``requires_grad`` kept)."""
    new = _new_instance(type(self), self)
    if self.requires_grad:
        new.requires_grad_(True)
    if type(self) is not _C.Tensor and hasattr(self, "__dict__"):
        new.__dict__.update(self.__dict__)
    return new


def tensor_deepcopy(self: _C.Tensor, memo: dict[int, Any]) -> _C.Tensor:
    """``copy.deepcopy(t)`` (see the module docstring)."""
    if not getattr(self, "is_leaf", True):
        raise _C.FlambeauError(
            "[deepcopy] only tensors created explicitly by the user (graph leaves) support the deepcopy "
            "protocol; deep-copy t.detach() instead (a module holding such a tensor: keep parameters leaves)"
        )
    if id(self) in memo:
        return memo[id(self)]
    import copy  # noqa: PLC0415  (only deepcopy needs it)

    with _no_grad():
        if self.numel() == 0:
            new = _C.empty(self.shape, dtype=self.dtype, device=self.device)
        else:
            # One copy per storage (and dtype) per deepcopy call keeps views of one memory sharing it.
            key = ("flambeau storage", self._storage_id, str(self.dtype))
            flat = memo.get(key)
            if flat is None:
                src = self.detach() if self.requires_grad else self
                flat = src.as_strided((src._storage_nbytes // src.element_size(),), (1,), 0).clone()
                memo[key] = flat
                memo.setdefault(id(memo), []).append(self)  # keeps the storage (its id) alive, as copy does
            new = flat.as_strided(tuple(self.shape), tuple(self.stride()), self.storage_offset())
    if type(self) is not _C.Tensor:
        new = _new_instance(type(self), new)
    if self.requires_grad:
        new.requires_grad_(True)
    memo[id(self)] = new
    grad = getattr(self, "grad", None)
    if grad is not None:
        new.grad = copy.deepcopy(grad, memo)
    if type(self) is not _C.Tensor and hasattr(self, "__dict__"):
        new.__dict__.update(copy.deepcopy(self.__dict__, memo))
    return new


def install() -> None:
    _C.Tensor.__reduce_ex__ = tensor_reduce_ex
    _C.Tensor.__copy__ = tensor_copy
    _C.Tensor.__deepcopy__ = tensor_deepcopy
