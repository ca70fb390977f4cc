"""``detach`` and ``detach_`` as functions (``torch.detach(x)``), the forms of the Tensor methods that
flambeau-autograd attaches to core's Tensor."""

from __future__ import annotations

from flambeau_core import Tensor


def _check(name: str, input: object) -> None:  # noqa: A002
    if not isinstance(input, Tensor):
        raise TypeError(f"[{name}] expected a Tensor as 'input', got {type(input).__name__}")


def detach(input: Tensor) -> Tensor:  # noqa: A002
    """detach(input) -> Tensor

    ``input.detach()``: a tensor sharing ``input``'s memory, cut from the graph (it does not require grad).

    Example:
        >>> import flambeau_core as fc
        >>> x = fc.ones(2, requires_grad=True)
        >>> detach(x * 2).requires_grad
        False
    """
    _check("detach", input)
    return input.detach()


def detach_(input: Tensor) -> Tensor:  # noqa: A002
    """detach_(input) -> Tensor

    ``input.detach_()``: cuts ``input`` itself from the graph, in place; returns it.

    Example:
        >>> import flambeau_core as fc
        >>> y = fc.ones(2, requires_grad=True) * 2
        >>> detach_(y) is y, y.requires_grad
        (True, False)
    """
    _check("detach_", input)
    return input.detach_()
