"""copy.deepcopy and pickle support for Tensor.

A pickled tensor carries its values (contiguous bytes), dtype, shape and
``requires_grad``; unpickling allocates a fresh tensor. Data-loader queues do
not use this path: flambeau-data registers reductions that move tensors
through shared memory instead of bytes.
"""

from __future__ import annotations

from typing import Any

from flambeau_core import _C


def _rebuild_tensor(data: bytes, dtype_name: str, shape: tuple[int, ...], requires_grad: bool) -> _C.Tensor:
    dtype = getattr(_C, dtype_name)
    numel = 1
    for s in shape:
        numel *= s
    if numel == 0:
        t = _C.empty(shape, dtype=dtype)
    else:
        t = _C.frombuffer(bytearray(data), dtype=dtype).view(shape).clone()
    if requires_grad:
        t.requires_grad_(True)
    return t


def _contiguous_bytes(t: _C.Tensor) -> bytes:
    if t.numel() == 0:
        return b""
    was_enabled = _C.is_grad_enabled()
    _C._set_grad_enabled(False)
    try:
        if t.requires_grad:  # only possible with flambeau-autograd loaded, which adds detach()
            t = t.detach()
        return bytes(memoryview(t.contiguous()))
    finally:
        _C._set_grad_enabled(was_enabled)


def tensor_reduce_ex(self: _C.Tensor, protocol: int) -> tuple[Any, ...]:
    if type(self) is not _C.Tensor:
        raise TypeError(f"[pickle] {type(self).__name__} defines no pickling of its own; pickle its state_dict instead")
    return (
        _rebuild_tensor,
        (_contiguous_bytes(self), str(self.dtype).split(".")[-1], tuple(self.shape), bool(self.requires_grad)),
    )


def tensor_deepcopy(self: _C.Tensor, memo: dict[int, Any]) -> _C.Tensor:
    if id(self) in memo:
        return memo[id(self)]
    was_enabled = _C.is_grad_enabled()
    _C._set_grad_enabled(False)
    try:
        new = self.clone()
    finally:
        _C._set_grad_enabled(was_enabled)
    if self.requires_grad and getattr(self, "is_leaf", True):
        new.requires_grad_(True)
    memo[id(self)] = new
    return new
