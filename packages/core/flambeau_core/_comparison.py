"""Whole-tensor comparisons with tolerances: isclose, allclose, equal (PyTorch's signatures and rules).

Composed of elementwise core ops; a tensor's values never pass through Python one by one.
"""

from __future__ import annotations

from flambeau_core import _C
from flambeau_core.overrides import is_tensor_like


def _check(name: str, input, other) -> None:
    for arg, value in (("input", input), ("other", other)):
        if not is_tensor_like(value):  # a tensor-like (flambeau.overrides) runs through, its ops overridden
            raise TypeError(f"[{name}] expected a Tensor as '{arg}', got {type(value).__name__}")


def isclose(input, other, rtol: float = 1e-05, atol: float = 1e-08, equal_nan: bool = False):
    """Elementwise ``|input - other| <= atol + rtol * |other|`` (a bool tensor, broadcast).

    Infinities are close only to themselves; NaNs are close to each other when ``equal_nan``.

    Example:
        >>> import flambeau_core as fc
        >>> fc.isclose(fc.tensor([1.0, 2.0]), fc.tensor([1.0 + 1e-7, 2.1])).tolist()
        [True, False]
    """
    _check("isclose", input, other)
    if input.dtype != other.dtype:
        raise TypeError(f"[isclose] expected input and other of one dtype, got {input.dtype} and {other.dtype}")
    if rtol < 0 or atol < 0:
        raise _C.FlambeauError(f"[isclose] expected non-negative rtol and atol, got rtol={rtol}, atol={atol}")
    equal = input == other
    if input.dtype == _C.bool:
        return equal
    if not (input.dtype.is_floating_point or input.dtype.is_complex):  # integers: no overflow in the difference
        input, other = input.double(), other.double()
    difference = (input - other).abs()
    close = equal | (difference.isfinite() & (difference <= atol + rtol * other.abs()))
    if equal_nan:
        close = close | (input.isnan() & other.isnan())
    return close


def allclose(input, other, rtol: float = 1e-05, atol: float = 1e-08, equal_nan: bool = False) -> bool:
    """Whether every element of ``input`` is close to ``other`` (:func:`isclose`), as a Python bool.

    Example:
        >>> import flambeau_core as fc
        >>> fc.allclose(fc.ones(3), fc.ones(3) + 1e-9)
        True
    """
    _check("allclose", input, other)
    return bool(isclose(input, other, rtol, atol, equal_nan).all().item())


def equal(input, other) -> bool:
    """Whether ``input`` and ``other`` have the same shape and the same values (NaN equals nothing).

    Example:
        >>> import flambeau_core as fc
        >>> fc.equal(fc.tensor([1, 2]), fc.tensor([1, 2])), fc.equal(fc.tensor([1, 2]), fc.tensor([1]))
        (True, False)
    """
    _check("equal", input, other)
    return tuple(input.shape) == tuple(other.shape) and bool((input == other).all().item())


def install() -> None:
    import flambeau_core

    for function in (isclose, allclose, equal):
        setattr(flambeau_core, function.__name__, function)
        setattr(_C.Tensor, function.__name__, function)
