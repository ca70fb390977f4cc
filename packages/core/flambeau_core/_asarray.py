"""``torch.asarray``: the Array API's ``asarray`` with PyTorch's keywords (``requires_grad``) and a
``device`` that also places data given as Python sequences."""

from __future__ import annotations

from typing import Any

from flambeau_core import _C, array_api
from flambeau_core._composing import call_as
from flambeau_core._copying import _no_grad


def asarray(
    obj: Any,
    /,
    *,
    dtype: Any = None,
    device: Any = None,
    copy: bool | None = None,
    requires_grad: bool | None = None,
) -> _C.Tensor:
    """asarray(obj, *, dtype=None, device=None, copy=None, requires_grad=None) -> Tensor

    ``obj`` (a tensor, NumPy array or other DLPack / buffer object, a scalar or a nested sequence) as a
    tensor. It shares ``obj``'s memory when it can (a tensor; a NumPy array or other DLPack object once
    flambeau-interop is loaded, as ``import flambeau`` does) unless ``copy=True``; ``copy=False`` refuses to
    copy (ValueError). ``requires_grad`` defaults to ``obj``'s own for a tensor (False
    otherwise); ``requires_grad=False`` gives an alias cut from ``obj``'s graph.

    Example:
        >>> import numpy as np
        >>> import flambeau as fb
        >>> a = np.arange(3.0)
        >>> t = fb.asarray(a)
        >>> a[0] = 9.0
        >>> t.tolist(), fb.asarray([1, 2]).dtype
        ([9.0, 1.0, 2.0], flambeau.int64)
    """
    if requires_grad is not None and not isinstance(requires_grad, bool):
        raise TypeError(f"[asarray] expected a bool requires_grad, got {type(requires_grad).__name__}")
    result = call_as("asarray", array_api.asarray, obj, dtype=dtype, device=device, copy=copy)
    if device is not None and result.device != _C.device(device):
        result = result.to(device)
    if requires_grad is False and result.requires_grad:
        with _no_grad():  # an alias of the same memory without the gradient history
            result = result.as_strided(tuple(result.shape), result.stride(), result.storage_offset())
    elif requires_grad and not result.requires_grad:
        result = result.requires_grad_()
    return result


def install() -> None:
    import flambeau_core

    flambeau_core.asarray = asarray
