"""``Tensor.new_*``: factories whose dtype and device default to the tensor's own (PyTorch's methods).

``x.new_zeros(2, 3)`` is ``zeros(2, 3, dtype=x.dtype, device=x.device)``; an
explicit ``dtype`` or ``device`` wins. Model code uses them to make state that
follows the weights' dtype and device (``weight.new_zeros(layers, batch, hidden)``). ``x.new(...)`` is
PyTorch's legacy constructor of the same kind.
"""

from __future__ import annotations

from collections.abc import Sequence

from flambeau_core import _C
from flambeau_core._composing import call_as
from flambeau_core._copying import _no_grad
from flambeau_core.sparse import strided


def _size(name: str, size: tuple) -> tuple[int, ...]:
    """``f(2, 3)`` and ``f((2, 3))`` (or a list / Size) alike, as PyTorch's variadic sizes."""
    if not size:  # PyTorch asks for one too (`f(())` is the 0-dim size)
        raise TypeError(f"[{name}] expected a size, got none")
    if len(size) == 1 and isinstance(size[0], Sequence) and not isinstance(size[0], str):
        size = tuple(size[0])
    for i, n in enumerate(size):
        if isinstance(n, bool) or not isinstance(n, int):
            raise TypeError(f"[{name}] expected a size of ints, got {type(n).__name__} at position {i}")
    return tuple(size)


def _options(self, dtype, device, requires_grad) -> dict:
    return {
        "dtype": self.dtype if dtype is None else dtype,
        "device": self.device if device is None else device,
        "requires_grad": requires_grad,
    }


def new_full(
    self,
    size,
    fill_value,
    *,
    dtype=None,
    device=None,
    requires_grad: bool = False,
    layout=None,
    pin_memory: bool = False,
):
    """A tensor of ``size`` filled with ``fill_value``, of this tensor's dtype and device by default.

    Example:
        >>> import flambeau_core as fc
        >>> fc.zeros(2, dtype=fc.float64).new_full((3,), 1.5).tolist()
        [1.5, 1.5, 1.5]
    """
    if not isinstance(size, Sequence) or isinstance(size, str):
        raise TypeError(f"[new_full] expected a size (a tuple or list of ints), got {type(size).__name__}")
    # layout: None or strided (full refuses the others); pin_memory is accepted as PyTorch's, for the cpu
    options = _options(self, dtype, device, requires_grad)
    return call_as("new_full", _C.full, _size("new_full", (size,)), fill_value, layout=layout, **options)


def _variadic(factory, name: str):
    def method(
        self, *size, dtype=None, device=None, requires_grad: bool = False, layout=None, pin_memory: bool = False
    ):
        options = _options(self, dtype, device, requires_grad)
        return call_as(name, factory, _size(name, size), layout=layout, **options)

    method.__name__ = name
    method.__doc__ = (
        f"``{factory.__name__}(*size)`` of this tensor's dtype and device (unless ``dtype``/``device`` say "
        "otherwise).\n\n"
        f"Example:\n    >>> import flambeau_core as fc\n"
        f"    >>> fc.zeros(1, dtype=fc.int32).{name}(2, 3).dtype == fc.int32\n    True\n"
    )
    return method


new_zeros = _variadic(_C.zeros, "new_zeros")
new_ones = _variadic(_C.ones, "new_ones")
new_empty = _variadic(_C.empty, "new_empty")


def new_tensor(self, data, *, dtype=None, device=None, requires_grad: bool = False):
    """A new tensor holding a copy of ``data``, of this tensor's dtype and device by default.

    Example:
        >>> import flambeau_core as fc
        >>> fc.zeros(1, dtype=fc.float64).new_tensor([1, 2]).dtype == fc.float64
        True
    """
    options = _options(self, dtype, device, False)
    if isinstance(data, _C.Tensor):
        # A copy cut from data's graph (detach is flambeau-autograd's; without it there is no graph).
        source = data.detach() if hasattr(data, "detach") else data
        result = source.to(device=options["device"], dtype=options["dtype"], copy=True)
    else:
        result = _C.tensor(data, dtype=options["dtype"], device=options["device"])
    return result.requires_grad_() if requires_grad else result


def new_empty_strided(
    self, size, stride, *, dtype=None, device=None, requires_grad: bool = False, layout=None, pin_memory: bool = False
):
    """An uninitialised tensor of ``size`` and ``stride``, of this tensor's dtype and device by default.

    Example:
        >>> import flambeau_core as fc
        >>> fc.zeros(1, dtype=fc.int32).new_empty_strided((2, 3), (1, 2)).stride()
        (1, 2)
    """
    for what, value in (("size", size), ("stride", stride)):
        if not isinstance(value, Sequence) or isinstance(value, str):
            raise TypeError(
                f"[new_empty_strided] expected {what} as a tuple or list of ints, got {type(value).__name__}"
            )
    if layout is not None and layout is not strided:
        raise _C.FlambeauError(f"[new_empty_strided] is implemented for strided tensors only, got: {layout}")
    size, stride = _size("new_empty_strided", (size,)), _size("new_empty_strided", (stride,))
    return call_as("new_empty_strided", _C.empty_strided, size, stride, **_options(self, dtype, device, requires_grad))


def new(self, *args, device=None, **kwargs):
    """new(*size, device=None) -> Tensor, new(data, device=None) -> Tensor, new(other) -> Tensor

    PyTorch's legacy constructor, of this tensor's dtype (and device, unless ``device`` says otherwise):
    ``x.new()`` is an empty tensor of shape ``(0,)``, ``x.new(2, 3)`` an uninitialised one of shape
    ``(2, 3)``, ``x.new([1, 2])`` holds a copy of the data, and ``x.new(other)`` shares ``other``'s memory
    (``other`` must have this tensor's dtype and device). A size is several ints or one tuple of ints:
    flambeau's sizes (``x.shape``, ``x.size()``) are plain tuples, so ``x.new(y.size())`` makes a tensor of
    that size, as in PyTorch, while ``x.new((2, 3))`` (data in PyTorch) does too; pass a list for data.
    Prefer :meth:`new_empty`, :meth:`new_tensor` and friends in new code.

    Example:
        >>> import flambeau_core as fc
        >>> x = fc.zeros(1, dtype=fc.float64)
        >>> x.new(2, 3).shape, x.new([1, 2]).tolist(), x.new().shape, x.new([1]).dtype
        (flambeau.Size([2, 3]), [1.0, 2.0], flambeau.Size([0]), flambeau.float64)
    """
    if kwargs:
        raise TypeError(
            f"[new] unexpected keyword arguments {sorted(kwargs)}: new() takes only 'device' "
            "(new_empty/new_tensor take dtype and requires_grad)"
        )
    options = {"dtype": self.dtype, "device": self.device if device is None else device}
    if not args:
        return _C.empty((0,), **options)
    first = args[0]
    if len(args) == 1 and isinstance(first, _C.Tensor):
        if device is not None or first.dtype != self.dtype or first.device != self.device:
            raise TypeError(
                f"[new] expected a tensor of dtype {self.dtype.name} on {self.device} to share, got "
                f"{first.dtype.name} on {first.device}{'' if device is None else f' and device={device}'}"
            )
        with _no_grad():  # an alias without first's gradient history, as PyTorch's legacy constructor
            return first.as_strided(tuple(first.shape), first.stride(), first.storage_offset())
    if all(_is_int(n) for n in args) or (len(args) == 1 and isinstance(first, tuple) and all(map(_is_int, first))):
        size = tuple(first) if isinstance(first, tuple) else args
        if any(n < 0 for n in size):
            raise _C.FlambeauError(f"[new] Trying to create tensor with negative dimension: size {size}")
        return _C.empty(size, **options)
    if len(args) == 1 and isinstance(first, (list, tuple)):
        return call_as("new", _C.tensor, first, **options)
    raise TypeError(
        f"[new] expected new(*size), new(data) with data a list, or new(tensor), got "
        f"({', '.join(type(a).__name__ for a in args)})"
    )


def _is_int(n) -> bool:
    return isinstance(n, int) and not isinstance(n, bool)


def install() -> None:
    for method in (new, new_full, new_zeros, new_ones, new_empty, new_tensor, new_empty_strided):
        setattr(_C.Tensor, method.__name__, method)
