"""The checks and ``out=`` helpers that flambeau_core.linalg's modules share.

The argument checks, whose messages name the op and what it expected (``_check_matrix``: a float32/float64,
or complex, batch of (square) matrices), the broadcast of batch dims, ``out=`` written as the generated
bindings write it (``_copy_out``, ``_copy_outs``), and the small matrix helpers (``_mT``, ``_adjoint``,
``_eye``, ``_eps``).
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from flambeau_core import _C
from flambeau_core._C import FlambeauError, Tensor
from flambeau_core.overrides import is_tensor_like

_FLOATS = (_C.float32, _C.float64)


_COMPLEX = (_C.complex64, _C.complex128)  # the ops widened to complex take these too


def _shape(t: Tensor) -> str:
    return "(" + ", ".join(str(s) for s in t.shape) + ")"


def _check_tensor(x: Any, op: str, what: str = "A") -> None:
    # A tensor-like (flambeau.overrides) runs through the function, its ops overridden one by one.
    if not isinstance(x, Tensor) and not is_tensor_like(x):
        raise TypeError(f"{op}: expected a Tensor for {what}, got {type(x).__name__}")


def _check_float(x: Any, op: str, what: str = "A", complex_ok: bool = False) -> None:
    _check_tensor(x, op, what)
    if complex_ok and x.dtype in _COMPLEX:
        return
    if x.dtype not in _FLOATS:
        also = "; complex64 and complex128 are accepted too" if complex_ok else ""
        raise TypeError(
            f"{op}: expected a float32 or float64 tensor for {what}, got {x.dtype} (shape {_shape(x)}){also}"
        )


def _check_matrix(x: Any, op: str, what: str = "A", square: bool = False, complex_ok: bool = False) -> None:
    _check_float(x, op, what, complex_ok)
    if x.dim() < 2:
        raise FlambeauError(f"{op}: {what} must have at least 2 dimensions, got shape {_shape(x)}")
    if square and x.shape[-1] != x.shape[-2]:
        raise FlambeauError(
            f"{op}: {what} must be batches of square matrices, but they are "
            f"{x.shape[-2]} by {x.shape[-1]} matrices (shape {_shape(x)})"
        )


def _mT(x: Tensor) -> Tensor:
    return x.transpose(-2, -1)


def _needs_grad(*ts: Tensor) -> bool:
    """Whether the ops on ``ts`` are differentiated: one requires grad or, once flambeau-autograd is loaded,
    carries a forward-mode tangent (its ``_needs_autograd``)."""
    return _C.is_grad_enabled() and any(
        t.requires_grad or (isinstance(t, Tensor) and getattr(t, "_needs_autograd", False)) for t in ts
    )


def _broadcast_shape(a: Sequence[int], b: Sequence[int], op: str) -> list[int]:
    n = max(len(a), len(b))
    out = []
    for i in range(n):
        x = a[len(a) - n + i] if len(a) - n + i >= 0 else 1
        y = b[len(b) - n + i] if len(b) - n + i >= 0 else 1
        if x != y and x != 1 and y != 1:
            raise FlambeauError(f"{op}: shapes {tuple(a)} and {tuple(b)} cannot be broadcast")
        out.append(y if x == 1 else x)
    return out


def _copy_out(result: Tensor, out: Tensor | None, op: str = "linalg", exact: bool = True) -> Tensor:
    """Writes result into out= as the generated bindings do (Note [out= dtypes] in gen_core.py): out's
    dtype must be the result's (exact, as PyTorch's linalg ops) or one it casts to; out of another
    shape is resized; RuntimeError when autograd would record (Note [out= and autograd])."""
    if out is None:
        return result
    return _C._copy_to_out(op, result, out, exact)


def _kernel_writes(prim: Any, args: Sequence[Any], outs: Sequence[Any]) -> bool:
    """Whether the structured primitive ``prim``'s out kernel can write ``outs`` (one per result, in its
    order) as they are (Note [Structured kernels]): each a Tensor of its result's dtype and device, of its
    shape or empty (then resized silently), and autograd not recording. Its meta step on meta stand-ins of
    the arguments gives the results (and raises the argument errors the call would). Otherwise the caller
    computes the result and copies it in (``_copy_out``/``_copy_outs``: their messages and warnings)."""
    tensors = [a for a in args if isinstance(a, Tensor)]
    if not all(type(o) is Tensor for o in outs) or not all(type(t) is Tensor for t in tensors):
        return False
    if _needs_grad(*tensors) or any(o.requires_grad for o in outs):
        return False
    specs = prim(*[a.to("meta") if isinstance(a, Tensor) else a for a in args])
    specs = specs if isinstance(specs, tuple) else (specs,)
    device = tensors[0].device
    return len(specs) == len(outs) and all(
        o.dtype == s.dtype and o.device == device and (o.numel() == 0 or tuple(o.shape) == tuple(s.shape))
        for o, s in zip(outs, specs, strict=True)
    )


def _out_tuple(out: Any, n: int) -> tuple[Tensor, ...] | None:
    """out= as a tuple of n tensors, else None (``_copy_outs`` raises its error)."""
    if isinstance(out, (tuple, list)) and len(out) == n and all(isinstance(t, Tensor) for t in out):
        return tuple(out)
    return None


def _copy_outs(results: Sequence[Tensor], out: Any, op: str) -> tuple[Tensor, ...]:
    """out=(a, b, ...) for an op returning several tensors: each must have its result's dtype."""
    if not isinstance(out, (tuple, list)) or not all(isinstance(t, Tensor) for t in out):
        raise TypeError(f"[{op}] out= must be a tuple of {len(results)} tensors, got {type(out).__name__}")
    if len(out) != len(results):
        raise TypeError(f"[{op}] out= must be a tuple of {len(results)} tensors, got {len(out)}")
    for r, o in zip(results, out, strict=True):
        _C._check_out_autograd(op, r, o)
    return tuple(_C._copy_to_out(op, r, o, True) for r, o in zip(results, out, strict=True))


def _eye(n: int, like: Tensor) -> Tensor:
    r = _C.arange(n, device=like.device).unsqueeze(-1)
    return (r == _C.arange(n, device=like.device)).to(like.dtype)


def _eps(dtype: Any) -> float:
    return 1.1920928955078125e-07 if dtype in (_C.float32, _C.complex64) else 2.220446049250313e-16


def _same_dtype(A: Tensor, B: Tensor, op: str, a: str = "A", b: str = "B") -> None:
    if A.dtype != B.dtype:
        raise TypeError(
            f"{op}: Expected {a} and {b} to have the same dtype, but found {a} of type {A.dtype} "
            f"and {b} of type {B.dtype} instead"
        )


def _check_flags(op: str, **flags: Any) -> None:
    for name, value in flags.items():
        if not isinstance(value, bool):
            raise TypeError(f"{op}: {name} must be a bool, got {type(value).__name__}")


def _adjoint(x: Tensor) -> Tensor:
    return _C.conj(_mT(x)) if x.dtype in _COMPLEX else _mT(x)
