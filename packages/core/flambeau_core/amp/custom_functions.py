"""``custom_fwd`` and ``custom_bwd``: decorators that make a custom autograd Function's ``forward`` and
``backward`` behave under autocast (``torch.amp.custom_fwd``/``custom_bwd``).

``custom_fwd`` records on ``ctx`` whether autocast was on (and its dtype) when ``forward`` ran, or, with
``cast_inputs``, runs ``forward`` with autocast off on inputs cast to that dtype; ``custom_bwd`` runs
``backward`` in the autocast state ``forward`` saw, so both halves compute in the same precision.
"""

from __future__ import annotations

import functools
from collections.abc import Callable
from typing import Any

from flambeau_core import _C
from flambeau_core.amp.autocast_mode import autocast, get_autocast_dtype, is_autocast_enabled


def _check_device_type(name: str, device_type: Any) -> None:
    if not isinstance(device_type, str):
        raise TypeError(f"[{name}] Expected `device_type` of type `str`, got: `{type(device_type).__name__}`")


def _cast(value: Any, device_type: str, dtype: Any) -> Any:
    """value with its floating-point tensors on device_type cast to dtype (through lists, tuples, dicts)."""
    if isinstance(value, _C.Tensor):
        if value.device.type == device_type and value.dtype.is_floating_point and value.dtype != _C.float64:
            return value.to(dtype)
        return value
    if isinstance(value, (list, tuple)):
        return type(value)(_cast(v, device_type, dtype) for v in value)
    if isinstance(value, dict):
        return {k: _cast(v, device_type, dtype) for k, v in value.items()}
    return value


def custom_fwd(fwd: Callable | None = None, *, device_type: str, cast_inputs: Any = None) -> Callable:
    """custom_fwd(fwd=None, *, device_type, cast_inputs=None)

    Decorates the ``forward`` of a custom autograd Function (see :func:`custom_bwd`). Without
    ``cast_inputs``, ``forward`` runs in the surrounding autocast state, which is recorded for
    ``backward``. With ``cast_inputs`` (a dtype), inside an enabled autocast region of ``device_type``
    ``forward`` runs with autocast off on its floating-point tensor arguments cast to ``cast_inputs``
    (float64 ones are left as they are, as autocast leaves them); outside one, unchanged.

    Example:
        >>> import flambeau as fb
        >>> class Square(fb.autograd.Function):
        ...     @staticmethod
        ...     @fb.amp.custom_fwd(device_type="cpu", cast_inputs=fb.float32)
        ...     def forward(ctx, x):
        ...         ctx.save_for_backward(x)
        ...         return x * x
        ...     @staticmethod
        ...     @fb.amp.custom_bwd(device_type="cpu")
        ...     def backward(ctx, grad):
        ...         (x,) = ctx.saved_tensors
        ...         return 2 * x * grad
        >>> x = fb.ones(2, dtype=fb.bfloat16, requires_grad=True)
        >>> with fb.autocast("cpu"):
        ...     y = Square.apply(x)
        >>> y.dtype
        flambeau.float32
    """
    _check_device_type("custom_fwd", device_type)
    if fwd is None:
        return functools.partial(custom_fwd, device_type=device_type, cast_inputs=cast_inputs)

    @functools.wraps(fwd)
    def decorate_fwd(*args: Any, **kwargs: Any) -> Any:
        ctx = args[0]
        ctx._dtype = get_autocast_dtype(device_type)
        enabled = is_autocast_enabled(device_type)
        if cast_inputs is None:
            ctx._fwd_used_autocast = enabled
            return fwd(*args, **kwargs)
        ctx._fwd_used_autocast = False
        if not enabled:
            return fwd(*args, **kwargs)
        with autocast(device_type=device_type, enabled=False):
            return fwd(ctx, *_cast(args[1:], device_type, cast_inputs), **_cast(kwargs, device_type, cast_inputs))

    return decorate_fwd


def autocast_float32(fn: Callable) -> Callable:
    """Decorates a function written in Python (not an op of the table) so that autocast treats it as an op of
    PyTorch's CPU float32 list (Note [Autocast]'s ``fp32``: its 3-D poolings, the losses): inside an enabled
    region it runs with autocast off on its floating-point tensor arguments cast to float32 (float64 ones
    left as they are; an ``out=`` tensor is written as given); outside one, unchanged.

    Example:
        >>> import flambeau as fb
        >>> from flambeau_core.amp.custom_functions import autocast_float32
        >>> square_sum = autocast_float32(lambda x: (x * x).sum())
        >>> with fb.autocast("cpu"):
        ...     square_sum(fb.ones(2, dtype=fb.bfloat16)).dtype
        flambeau.float32
    """

    @functools.wraps(fn)
    def run_in_float32(*args: Any, **kwargs: Any) -> Any:
        if not _C._is_autocast_enabled():
            return fn(*args, **kwargs)
        with autocast(device_type="cpu", enabled=False):
            cast = {k: v if k == "out" else _cast(v, "cpu", _C.float32) for k, v in kwargs.items()}
            return fn(*_cast(args, "cpu", _C.float32), **cast)

    return run_in_float32


def autocast_excluded(fn: Callable) -> Callable:
    """Decorates a function written in Python that PyTorch's CPU autocast leaves alone (an op of none of its
    lists) but that flambeau composes of listed ops: inside a region it runs with autocast off, its
    arguments as given, so its inner products are not lowered (``mv``, an op of its own in PyTorch, over
    ``matmul`` here).

    Example:
        >>> import flambeau as fb
        >>> from flambeau_core.amp.custom_functions import autocast_excluded
        >>> product = autocast_excluded(lambda a, b: a @ b)
        >>> with fb.autocast("cpu"):
        ...     product(fb.ones(2, 2), fb.ones(2)).dtype
        flambeau.float32
    """

    @functools.wraps(fn)
    def run_as_called(*args: Any, **kwargs: Any) -> Any:
        if not _C._is_autocast_enabled():
            return fn(*args, **kwargs)
        with autocast(device_type="cpu", enabled=False):
            return fn(*args, **kwargs)

    return run_as_called


def custom_bwd(bwd: Callable | None = None, *, device_type: str) -> Callable:
    """custom_bwd(bwd=None, *, device_type)

    Decorates the ``backward`` of a custom autograd Function whose ``forward`` is decorated with
    :func:`custom_fwd`: ``backward`` runs in the autocast state (on or off, and its dtype) that ``forward``
    ran in.

    Example:
        >>> import flambeau as fb
        >>> class Double(fb.autograd.Function):
        ...     @staticmethod
        ...     @fb.amp.custom_fwd(device_type="cpu")
        ...     def forward(ctx, x):
        ...         return x * 2
        ...     @staticmethod
        ...     @fb.amp.custom_bwd(device_type="cpu")
        ...     def backward(ctx, grad):
        ...         return grad * 2
        >>> x = fb.ones(2, requires_grad=True)
        >>> Double.apply(x).sum().backward()
        >>> x.grad.tolist()
        [2.0, 2.0]
    """
    _check_device_type("custom_bwd", device_type)
    if bwd is None:
        return functools.partial(custom_bwd, device_type=device_type)

    @functools.wraps(bwd)
    def decorate_bwd(*args: Any, **kwargs: Any) -> Any:
        ctx = args[0]
        if not hasattr(ctx, "_fwd_used_autocast"):
            raise RuntimeError(
                "[custom_bwd] the Function's forward was not decorated with custom_fwd: backward has no "
                "autocast state to run in"
            )
        with autocast(device_type=device_type, enabled=ctx._fwd_used_autocast, dtype=ctx._dtype):
            return bwd(*args, **kwargs)

    return decorate_bwd
