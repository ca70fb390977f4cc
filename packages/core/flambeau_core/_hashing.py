"""``hash_tensor`` (function and method), PyTorch's: each element's bits as 64 bits (a floating value as
float64, an integer or bool one as int64, both bit-cast with ``view(dtype)``) combined by XOR over the
reduced dims, as a uint64 tensor.

XOR has no reduction kernel; the reduced elements are folded in halves (``log2(n)`` elementwise
``bitwise_xor`` calls over the whole tensor, a zero appended where a fold is odd: 0 is XOR's identity).
"""

from __future__ import annotations

from typing import Any

from flambeau_core import _C
from flambeau_core._composing import check_tensor, is_int


def hash_tensor(input: _C.Tensor, dim: Any = None, *, keepdim: bool = False, mode: int = 0) -> _C.Tensor:  # noqa: A002
    """hash_tensor(input, dim=None, *, keepdim=False, mode=0) -> Tensor

    A hash of ``input``'s elements over ``dim`` (an int, a sequence of ints; None or ``[]``: all dims) as a
    uint64 tensor. Only ``mode=0`` exists, as in PyTorch: the XOR of every element's bits, a floating
    element taken as float64 and an integer or bool one as int64.

    Example:
        >>> import flambeau_core as fc
        >>> fc.hash_tensor(fc.tensor([1.0])).item()
        4607182418800017408
        >>> fc.hash_tensor(fc.tensor([[1, 2], [4, 4]]), 1).tolist()
        [3, 0]
    """
    check_tensor("hash_tensor", input)
    if mode != 0:
        raise _C.FlambeauError(f"[hash_tensor] unknown hash_tensor mode: {mode}")
    if input.is_complex():
        raise TypeError(f"[hash_tensor] expected a real or bool tensor, got dtype {input.dtype}")
    n = input.dim()
    if dim is None or (isinstance(dim, (list, tuple)) and len(dim) == 0):
        if input.numel() == 0:
            raise _C.FlambeauError(
                "[hash_tensor] Expected reduction dim to be specified for input.numel() == 0. Specify the "
                "reduction dim with the 'dim' argument."
            )
        dims = list(range(n))
    else:
        items = list(dim) if isinstance(dim, (list, tuple)) else [dim]
        if not all(is_int(d) for d in items):
            raise TypeError(f"[hash_tensor] expected an int or a sequence of ints for dim, got {dim!r}")
        for d in items:
            if not -max(n, 1) <= d < max(n, 1):
                raise IndexError(
                    f"[hash_tensor] Dimension out of range (expected to be in range of [{-max(n, 1)}, "
                    f"{max(n, 1) - 1}], but got {d})"
                )
        dims = sorted({d % max(n, 1) for d in items}) if n else []
        for d in dims:
            if input.shape[d] == 0:
                raise IndexError(f"[hash_tensor] Expected reduction dim {d} to have non-zero size.")
    if input.dtype == _C.uint64:
        bits = input.view(_C.int64)
    elif input.is_floating_point():
        bits = input.to(_C.float64).view(_C.int64)
    else:
        bits = input.to(_C.int64)
    kept = [d for d in range(n) if d not in dims]
    reduced = 1
    for d in dims:
        reduced *= input.shape[d]
    folded = bits.permute(*kept, *dims).reshape(*[input.shape[d] for d in kept], reduced)
    while folded.shape[-1] > 1:
        if folded.shape[-1] % 2:
            folded = _C.cat([folded, _C.zeros_like(folded[..., :1])], -1)
        folded = _C.bitwise_xor(folded[..., 0::2], folded[..., 1::2])
    out = folded.squeeze(-1).view(_C.uint64)
    if keepdim:
        out = out.reshape(*[1 if d in dims else input.shape[d] for d in range(n)])
    return out


def install() -> None:
    import flambeau_core

    flambeau_core.hash_tensor = hash_tensor
    _C.Tensor.hash_tensor = hash_tensor
