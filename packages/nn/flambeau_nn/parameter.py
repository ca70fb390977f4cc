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


class UninitializedParameter(Parameter):
    r"""A parameter whose shape is not known yet: a lazy module's placeholder until its first forward.

    It holds no values (an empty tensor); reading it as data, e.g. ``numel()``, sees 0 elements.
    ``materialize(shape)`` returns the real ``Parameter`` (uninitialised values) that the lazy module
    registers in its place. Unlike PyTorch, where the object changes class in place, the placeholder
    object is replaced, so an optimizer must be created after the first forward (as PyTorch advises).

    Example:
        >>> p = UninitializedParameter()
        >>> p.materialize((2, 3)).shape
        flambeau.Size([2, 3])
    """

    cls_to_become = Parameter

    def __init__(self, requires_grad: bool = True, device: object = None, dtype: object = None) -> None:
        super().__init__(fc.empty(0, dtype=dtype if dtype is not None else fc.float32), requires_grad)

    def materialize(self, shape: tuple[int, ...], device: object = None, dtype: object = None) -> Parameter:
        """A real ``Parameter`` of ``shape`` (and this placeholder's dtype unless ``dtype`` is given).

        Example:
            >>> import flambeau_nn as nn
            >>> p = nn.UninitializedParameter().materialize((2, 3))
            >>> type(p).__name__, p.shape, p.requires_grad
            ('Parameter', flambeau.Size([2, 3]), True)
        """
        return Parameter(fc.empty(*tuple(shape), dtype=dtype if dtype is not None else self.dtype), self.requires_grad)

    def __repr__(self) -> str:
        return "<UninitializedParameter>"

    __str__ = __repr__

    def __deepcopy__(self, memo: dict) -> UninitializedParameter:
        result = UninitializedParameter(self.requires_grad, dtype=self.dtype)
        memo[id(self)] = result
        return result


class UninitializedBuffer(Tensor):
    r"""A buffer whose shape is not known yet (a lazy norm layer's running statistics before its first forward).

    Example:
        >>> UninitializedBuffer().materialize((4,)).shape
        flambeau.Size([4])
    """

    cls_to_become = Tensor

    def __init__(self, requires_grad: bool = False, device: object = None, dtype: object = None) -> None:
        super().__init__(fc.empty(0, dtype=dtype if dtype is not None else fc.float32))

    def materialize(self, shape: tuple[int, ...], device: object = None, dtype: object = None) -> Tensor:
        """A real tensor of ``shape`` (uninitialised values).

        Example:
            >>> import flambeau_core as fc
            >>> import flambeau_nn as nn
            >>> b = nn.UninitializedBuffer(dtype=fc.float64).materialize((4,))
            >>> b.shape, b.dtype == fc.float64
            (flambeau.Size([4]), True)
        """
        return fc.empty(*tuple(shape), dtype=dtype if dtype is not None else self.dtype)

    def __repr__(self) -> str:
        return "<UninitializedBuffer>"

    __str__ = __repr__


class Buffer(Tensor):
    r"""A tensor that a ``Module`` registers as a buffer when assigned to one of its attributes.

    ``persistent=False`` keeps it out of ``state_dict()`` (``register_buffer``'s flag), as PyTorch.

    Example:
        >>> import flambeau_core as fc
        >>> b = Buffer(fc.zeros(2), persistent=False)
        >>> b.persistent, b.shape
        (False, flambeau.Size([2]))
    """

    def __init__(self, data: Tensor | None = None, *, persistent: bool = True) -> None:
        if data is None:
            data = fc.empty(0)
        if not isinstance(data, Tensor):
            raise TypeError(f"[Buffer] data must be a Tensor, got {type(data).__name__}")
        super().__init__(data)
        self.persistent = persistent
