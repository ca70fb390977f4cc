"""Elementwise ops PyTorch spells in ways the op table does not: ``positive``, the out-of-place ``fill``,
``isposinf``/``isneginf``, ``Tensor.__rtruediv__``/``__rdiv__`` and ``scalar_tensor`` (a 0-dim ``full``)."""

from __future__ import annotations

import math
from typing import Any

from flambeau_core import _C
from flambeau_core._composing import call_as, check_tensor
from flambeau_core._dtypes import get_default_dtype
from flambeau_core.overrides import is_tensor_like
from flambeau_core.sparse import strided


def positive(input: _C.Tensor) -> _C.Tensor:  # noqa: A002
    """positive(input) -> Tensor

    ``+input``: ``input`` itself (PyTorch returns the same tensor, not a copy). Refused for bool tensors,
    as PyTorch's.

    Example:
        >>> import flambeau_core as fc
        >>> x = fc.tensor([-1.0, 2.0])
        >>> fc.positive(x) is x
        True
    """
    check_tensor("positive", input)
    if input.dtype == _C.bool:
        raise TypeError("[positive] the `+` operator on a bool tensor is not supported")
    return input


def fill(input: _C.Tensor, value: Any) -> _C.Tensor:  # noqa: A002
    """fill(input, value) -> Tensor

    A new tensor of input's shape, dtype and strides, every element ``value`` (a number, or a 0-dim
    tensor, which the result is differentiable in): the out-of-place ``input.fill_(value)``.

    Example:
        >>> import flambeau_core as fc
        >>> fc.fill(fc.zeros(2, dtype=fc.int64), 7).tolist()
        [7, 7]
    """
    check_tensor("fill", input)
    # From a clone where input requires grad: the result is then in input's graph (a zero gradient), as PyTorch's
    result = input.clone() if input.requires_grad else _C.empty_like(input)
    if isinstance(value, _C.Tensor):
        if value.dim() != 0:
            raise _C.FlambeauError(f"[fill] only a 0-dim tensor can be a fill value, got shape {tuple(value.shape)}")
        # copy_ rather than fill_: copy_ records a gradient for the value
        return call_as("fill", result.copy_, value)
    return call_as("fill", result.fill_, value)


def _infinity_test(name: str, sign: float):
    def test(input: _C.Tensor, *, out: _C.Tensor | None = None) -> _C.Tensor:  # noqa: A002
        check_tensor(name, input)
        if input.dtype.is_complex:
            raise TypeError(f"[{name}] does not support complex inputs, got dtype {input.dtype.name}")
        if out is not None and (not isinstance(out, _C.Tensor) or out.dtype != _C.bool):
            what = out.dtype if isinstance(out, _C.Tensor) else type(out).__name__
            raise TypeError(f"[{name}] does not support non-boolean outputs, got out= of {what}")
        return _C._copy_to_out(name, input == sign * math.inf, out, True)

    which = "positive" if sign > 0 else "negative"
    test.__name__ = test.__qualname__ = name
    test.__doc__ = (
        f"{name}(input, *, out=None) -> Tensor\n\n"
        f"Where ``input`` is {which} infinity (bool); False everywhere for integer and bool tensors. Complex "
        "tensors are refused.\n\n"
        "Example:\n"
        "    >>> import flambeau_core as fc\n"
        f"    >>> fc.{name}(fc.tensor([1.0, -1.0, 0.0]) / 0).tolist()  # [inf, -inf, nan]\n"
        f"    {[sign > 0, sign < 0, False]}\n"
    )
    return test


isposinf = _infinity_test("isposinf", 1.0)
isneginf = _infinity_test("isneginf", -1.0)


def _rtruediv(self: _C.Tensor, other: Any) -> _C.Tensor:
    """__rtruediv__(other) -> Tensor

    ``other / self`` as PyTorch computes it: ``self.reciprocal() * other``. The reciprocal is rounded to
    its dtype first, so the result can differ from ``div(other, self)`` in the last bit (float32
    ``0.7 / x`` rounds twice, as torch's); integer tensors give floats.

    Example:
        >>> import flambeau_core as fc
        >>> (2 / fc.tensor([1, 2, 4])).tolist()
        [2.0, 1.0, 0.5]
    """
    if is_tensor_like(other) and not isinstance(other, _C.Tensor):
        return NotImplemented  # the tensor-like's own division runs instead
    return _C.Tensor.__mul__(self.reciprocal(), other)


def _rdiv(self: _C.Tensor, other: Any) -> _C.Tensor:
    """__rdiv__(other) -> Tensor

    ``other / self`` (true division: integer tensors give floats), PyTorch's old spelling of
    ``__rtruediv__``.

    Example:
        >>> import flambeau_core as fc
        >>> fc.tensor([1, 2, 4]).__rdiv__(2).tolist()
        [2.0, 1.0, 0.5]
    """
    if is_tensor_like(other) and not isinstance(other, _C.Tensor):
        return _C.div(other, self)  # the tensor-like's own division (__rtruediv__ declines it)
    return _rtruediv(self, other)


def scalar_tensor(
    s: Any,
    *,
    dtype: Any = None,
    layout: Any = None,
    device: Any = None,
    pin_memory: bool | None = False,
    requires_grad: bool = False,
) -> _C.Tensor:
    """scalar_tensor(s, *, dtype=None, layout=None, device=None, pin_memory=False, requires_grad=False) -> Tensor

    A 0-dim tensor holding the number ``s``, of the default dtype (float32) unless ``dtype`` says
    otherwise, whatever the kind of ``s`` (as PyTorch's; ``tensor(s)`` infers the dtype instead).

    Example:
        >>> import flambeau_core as fc
        >>> t = fc.scalar_tensor(3)
        >>> (t.shape, t.dtype, t.item())
        (flambeau.Size([]), flambeau.float32, 3.0)
    """
    if isinstance(s, _C.Tensor) and s.dim() == 0:
        s = s.item()
    if not isinstance(s, (bool, int, float, complex)):
        raise TypeError(f"[scalar_tensor] expected a number (or a 0-dim tensor) as 's', got {type(s).__name__}")
    if layout is not None and layout is not strided:
        raise _C.FlambeauError(f"[scalar_tensor] is implemented for strided tensors only, got: {layout}")
    dtype = get_default_dtype() if dtype is None else dtype
    result = call_as("scalar_tensor", _C.full, (), s, dtype=dtype, device=device)
    return result.requires_grad_() if requires_grad else result


def install() -> None:
    import flambeau_core

    for fn in (positive, fill, isposinf, isneginf, scalar_tensor):
        setattr(flambeau_core, fn.__name__, fn)
    for fn in (positive, isposinf, isneginf):
        setattr(_C.Tensor, fn.__name__, fn)
    _C.Tensor.__rtruediv__ = _rtruediv
    _C.Tensor.__rdiv__ = _rdiv
