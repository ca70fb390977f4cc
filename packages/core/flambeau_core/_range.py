"""``torch.range``: the deprecated arange that includes ``end`` (``floor((end - start) / step) + 1``
values), kept because older programs call it."""

from __future__ import annotations

import math
import warnings
from numbers import Real
from typing import Any

from flambeau_core import _C
from flambeau_core._composing import call_as
from flambeau_core._dtypes import get_default_dtype


def range(  # noqa: A001  (PyTorch's name)
    start: float,
    end: float,
    step: float = 1,
    *,
    out: _C.Tensor | None = None,
    dtype: Any = None,
    layout: Any = None,
    device: Any = None,
    requires_grad: bool = False,
) -> _C.Tensor:
    """range(start, end, step=1, *, out=None, dtype=None, device=None, requires_grad=False) -> Tensor

    Deprecated (warns; use :func:`arange`, which stops before ``end``): the 1-D tensor ``start, start +
    step, ...`` up to and including ``end``, ``floor((end - start) / step) + 1`` values, of the default
    floating-point dtype unless ``dtype`` says otherwise (integers too).

    Example:
        >>> import warnings
        >>> import flambeau_core as fc
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("ignore")
        ...     fc.range(1, 4).tolist(), fc.range(0, 1, 0.25).tolist()
        ([1.0, 2.0, 3.0, 4.0], [0.0, 0.25, 0.5, 0.75, 1.0])
    """
    warnings.warn(
        "[range] torch.range is deprecated and will be removed in a future release because its behavior is "
        "inconsistent with Python's range builtin. Instead, use arange, which produces values in [start, end).",
        UserWarning,
        stacklevel=2,
    )
    _C._check_layout(layout, "range")
    for what, value in (("start", start), ("end", end), ("step", step)):
        if isinstance(value, bool) or not isinstance(value, Real):
            raise TypeError(f"[range] expected a real number '{what}', got {type(value).__name__}")
    if step == 0:
        raise _C.FlambeauError("[range] step must be nonzero")
    if (end - start) * step < 0 or not all(math.isfinite(v) for v in (start, end, step)):
        raise _C.FlambeauError(
            f"[range] upper bound and lower bound inconsistent with step sign: start={start}, end={end}, step={step}"
        )
    count = math.floor((end - start) / step) + 1
    dtype = get_default_dtype() if dtype is None else dtype
    values = _C.arange(count, dtype=_C.float64, device=device).mul_(step).add_(start)
    result = call_as("range", values.to, dtype)
    if requires_grad:
        result.requires_grad_()
    return _C._copy_to_out("range", result, out, True)


def install() -> None:
    import flambeau_core

    flambeau_core.range = range
