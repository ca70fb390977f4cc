"""``Parameter``: a tensor that a ``Module`` registers as one of its parameters."""

from __future__ import annotations

import flambeau_core as fc
from flambeau_core import Tensor


class Parameter(Tensor):
    r"""A tensor that is a module parameter.

    Assigning a ``Parameter`` to a ``Module`` attribute registers it: it then
    appears in ``parameters()`` and ``state_dict()``. ``Parameter(data)``
    shares ``data``'s storage (no copy), as in PyTorch.

    Args:
        data: the initial values (``None``: an empty tensor).
        requires_grad: whether gradients are computed for it (default ``True``).

    Example:
        >>> import flambeau_core as fc
        >>> p = Parameter(fc.zeros(2))
        >>> p.requires_grad
        True
    """

    def __init__(self, data: Tensor | None = None, requires_grad: bool = True) -> None:
        if data is None:
            data = fc.empty(0)
        if not isinstance(data, Tensor):
            raise TypeError(f"[Parameter] data must be a Tensor, got {type(data).__name__}")
        super().__init__(data)
        if requires_grad:
            self.requires_grad_(True)

    # Parameters are looked up by identity (optimizers, parameter sets), as in PyTorch.
    __hash__ = object.__hash__

    def __repr__(self) -> str:
        return "Parameter containing:\n" + super().__repr__()

    # As PyTorch's: deepcopy keeps a subclass (made by type(self)(data, requires_grad)) and not
    # .grad; pickle and copy.copy rebuild a Parameter with the __dict__ (a subclass's type is
    # not kept), copy.copy sharing the memory.
    def __copy__(self) -> Parameter:
        return _rebuild_parameter(self.detach(), self.requires_grad, dict(self.__dict__))

    def __deepcopy__(self, memo: dict) -> Parameter:
        if id(self) in memo:
            return memo[id(self)]
        result = type(self)(self.detach().clone(), self.requires_grad)
        memo[id(self)] = result
        return result

    def __reduce_ex__(self, protocol):
        state = dict(self.__dict__) or None
        return (_rebuild_parameter, (self.detach(), self.requires_grad, state))


def _rebuild_parameter(data: Tensor, requires_grad: bool, state: dict | None = None) -> Parameter:
    param = Parameter(data, requires_grad)
    if state:
        param.__dict__.update(state)
    return param
