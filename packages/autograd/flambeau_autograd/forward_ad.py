"""Forward-mode automatic differentiation: dual tensors (PyTorch's ``torch.autograd.forward_ad``).

A *dual tensor* carries a tangent beside its value. Every differentiable op on
dual tensors computes its result's tangent from its inputs' tangents (the
op's forward formula in derivatives.yaml), so one forward pass gives a
Jacobian-vector product ``J @ v``. Tangents live for one *dual level*: the
``with dual_level():`` block, whose exit forgets them. One level is active at
a time (as in PyTorch: nesting raises). The mechanism is Note [Forward-mode
AD] in the package's src/engine.h.

As in PyTorch, tangents are computed under ``no_grad`` too (no backward
graph is recorded there). Differences from PyTorch: they are also computed
under ``inference_mode`` (PyTorch's inference tensors carry none), and an
in-place op writing a tangent into a view made before the level was entered
raises ``NotImplementedError`` (its base is unknown).

Example:
    >>> import flambeau_core as fc
    >>> import flambeau_autograd.forward_ad as fwAD
    >>> x = fc.tensor([1.0, 2.0])
    >>> with fwAD.dual_level():
    ...     y = fwAD.make_dual(x, fc.tensor([1.0, 0.0])) ** 2
    ...     primal, tangent = fwAD.unpack_dual(y)
    >>> primal.tolist(), tangent.tolist()
    ([1.0, 4.0], [2.0, 0.0])
"""

from __future__ import annotations

from typing import Any, NamedTuple

from flambeau_core import Tensor

from flambeau_autograd import _C

__all__ = ["UnpackedDualTensor", "dual_level", "enter_dual_level", "exit_dual_level", "make_dual", "unpack_dual"]


def _check_level(level: int | None, api: str) -> None:
    if level is not None and level != _C._current_dual_level():
        raise RuntimeError(
            f"[forward_ad.{api}] level {level} is not the active dual level ({_C._current_dual_level()}): "
            "one level is active at a time"
        )


def enter_dual_level() -> int:
    """Enters a dual level and returns its number (prefer ``with dual_level():``).

    Example:
        >>> import flambeau_autograd.forward_ad as fwAD
        >>> level = fwAD.enter_dual_level()
        >>> fwAD.exit_dual_level(level=level)
    """
    return int(_C._enter_dual_level())


def exit_dual_level(*, level: int | None = None) -> None:
    """Exits the dual level ``level`` (the active one by default); its tangents are forgotten.

    Example:
        >>> import flambeau_autograd.forward_ad as fwAD
        >>> fwAD.exit_dual_level(level=fwAD.enter_dual_level())
    """
    _C._exit_dual_level(_C._current_dual_level() if level is None else level)


class dual_level:
    """Context manager for a dual level: dual tensors made inside keep their tangents until it exits.

    Example:
        >>> import flambeau_core as fc
        >>> import flambeau_autograd.forward_ad as fwAD
        >>> with fwAD.dual_level():
        ...     d = fwAD.make_dual(fc.ones(2), fc.ones(2))
        ...     fwAD.unpack_dual(d).tangent is None
        False
        >>> fwAD.unpack_dual(d).tangent is None
        True
    """

    def __enter__(self) -> int:
        self._level = enter_dual_level()
        return self._level

    def __exit__(self, *exc: Any) -> None:
        exit_dual_level(level=self._level)


def make_dual(tensor: Tensor, tangent: Tensor, *, level: int | None = None) -> Tensor:
    """A dual tensor: a view of ``tensor`` (keeping its reverse-mode history) whose tangent is ``tangent``.

    ``tangent`` must have ``tensor``'s shape, dtype and device. Raises RuntimeError outside a dual level.

    Example:
        >>> import flambeau_core as fc
        >>> import flambeau_autograd.forward_ad as fwAD
        >>> with fwAD.dual_level():
        ...     d = fwAD.make_dual(fc.tensor([3.0]), fc.tensor([1.0]))
        ...     fwAD.unpack_dual(d.exp()).tangent.tolist() == d.exp().tolist()
        True
    """
    if not isinstance(tensor, Tensor) or not isinstance(tangent, Tensor):
        raise TypeError(
            "[forward_ad.make_dual] expected tensor and tangent to be Tensors, got "
            f"{type(tensor).__name__} and {type(tangent).__name__}"
        )
    _check_level(level, "make_dual")
    return _C._make_dual(tensor, tangent)


class UnpackedDualTensor(NamedTuple):
    """What ``unpack_dual`` returns: the primal (a view without the tangent) and the tangent (or None)."""

    primal: Tensor
    tangent: Tensor | None


def unpack_dual(tensor: Tensor, *, level: int | None = None) -> UnpackedDualTensor:
    """Splits a dual tensor into ``(primal, tangent)``; a tensor without a tangent gives ``(tensor, None)``.

    Example:
        >>> import flambeau_core as fc
        >>> import flambeau_autograd.forward_ad as fwAD
        >>> fwAD.unpack_dual(fc.ones(1)).tangent is None
        True
    """
    if not isinstance(tensor, Tensor):
        raise TypeError(f"[forward_ad.unpack_dual] expected a Tensor, got {type(tensor).__name__}")
    _check_level(level, "unpack_dual")
    primal, tangent = _C._unpack_dual(tensor)
    return UnpackedDualTensor(primal, tangent)
