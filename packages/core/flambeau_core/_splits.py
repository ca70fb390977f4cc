"""PyTorch's other spellings of ``split``: ``split_with_sizes``, the ``unsafe_*`` forms and ``hsplit``/
``vsplit``/``dsplit``.

They are views made by the op table's ``split``, ``chunk`` and ``tensor_split``. PyTorch's ``unsafe_*``
forms differ from the plain ones only in what autograd checks on an in-place change to a piece (the plain
ones refuse some); flambeau's autograd rebases an in-place change on any view (Note [In-place on views]),
so here they are the same op.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from flambeau_core import _C
from flambeau_core._composing import call_as, check_int, check_tensor, is_int


def _ints(name: str, what: str, value: Any) -> list[int]:
    if not isinstance(value, (list, tuple)) or not all(is_int(v) for v in value):
        raise TypeError(f"[{name}] expected '{what}' as a list or tuple of ints, got {value!r}")
    return list(value)


def _pieces(name: str, fn: Callable, *args: Any) -> tuple:
    return tuple(call_as(name, fn, *args))


def split_with_sizes(input: _C.Tensor, split_sizes: list[int], dim: int = 0) -> tuple:  # noqa: A002
    """split_with_sizes(input, split_sizes, dim=0) -> tuple of Tensors

    Views of consecutive pieces of ``input`` along ``dim``, of the given sizes, which must be
    non-negative and sum exactly to ``input.size(dim)``.

    Example:
        >>> import flambeau_core as fc
        >>> [p.tolist() for p in fc.split_with_sizes(fc.arange(5), [2, 3])]
        [[0, 1], [2, 3, 4]]
    """
    check_tensor("split_with_sizes", input)
    return _pieces("split_with_sizes", _C.split, input, _ints("split_with_sizes", "split_sizes", split_sizes), dim)


def unsafe_split_with_sizes(input: _C.Tensor, split_sizes: list[int], dim: int = 0) -> tuple:  # noqa: A002
    """unsafe_split_with_sizes(input, split_sizes, dim=0) -> tuple of Tensors

    ``split_with_sizes``; PyTorch's form that skips autograd's checks on in-place changes to the pieces,
    which flambeau never needs (the module's note).

    Example:
        >>> import flambeau_core as fc
        >>> [p.shape for p in fc.unsafe_split_with_sizes(fc.zeros(2, 3), [1, 2], 1)]
        [flambeau.Size([2, 1]), flambeau.Size([2, 2])]
    """
    check_tensor("unsafe_split_with_sizes", input)
    sizes = _ints("unsafe_split_with_sizes", "split_sizes", split_sizes)
    return _pieces("unsafe_split_with_sizes", _C.split, input, sizes, dim)


def unsafe_split(input: _C.Tensor, split_size: int, dim: int = 0) -> tuple:  # noqa: A002
    """unsafe_split(input, split_size, dim=0) -> tuple of Tensors

    ``split`` with an int ``split_size`` (pieces of that size, the last one smaller if need be).

    Example:
        >>> import flambeau_core as fc
        >>> [p.tolist() for p in fc.unsafe_split(fc.arange(5), 2)]
        [[0, 1], [2, 3], [4]]
    """
    check_tensor("unsafe_split", input)
    check_int("unsafe_split", split_size, "split_size")
    return _pieces("unsafe_split", _C.split, input, split_size, dim)


def unsafe_chunk(input: _C.Tensor, chunks: int, dim: int = 0) -> tuple:  # noqa: A002
    """unsafe_chunk(input, chunks, dim=0) -> tuple of Tensors

    ``chunk``: at most ``chunks`` views of ``ceil(input.size(dim) / chunks)`` elements along ``dim``.

    Example:
        >>> import flambeau_core as fc
        >>> [p.tolist() for p in fc.unsafe_chunk(fc.arange(5), 3)]
        [[0, 1], [2, 3], [4]]
    """
    check_tensor("unsafe_chunk", input)
    check_int("unsafe_chunk", chunks, "chunks")
    return _pieces("unsafe_chunk", _C.chunk, input, chunks, dim)


def _directional_split(name: str, dim: int, min_dims: int) -> Callable:
    def split(input: _C.Tensor, indices_or_sections: int | list[int]) -> tuple:  # noqa: A002
        check_tensor(name, input)
        if input.dim() < min_dims:
            raise _C.FlambeauError(
                f"[{name}] requires a tensor with at least {min_dims} dimension{'s' if min_dims > 1 else ''}, "
                f"but got a tensor with {input.dim()} dimensions (shape {tuple(input.shape)})"
            )
        along = 0 if name == "hsplit" and input.dim() == 1 else dim
        if is_int(indices_or_sections):
            size = input.shape[along]
            # PyTorch's rule: the sections must divide the size (C++'s %, the same as Python's for a zero remainder).
            if indices_or_sections == 0 or size % indices_or_sections != 0:
                raise _C.FlambeauError(
                    f"[{name}] attempted to split along dimension {along}, but the size of the dimension {size} "
                    f"is not divisible by the split_size {indices_or_sections}"
                )
            return _pieces(name, _C.tensor_split, input, indices_or_sections, along)
        indices = _ints(name, "indices_or_sections", indices_or_sections)
        return _pieces(name, _C.tensor_split, input, indices, along)

    split.__name__ = split.__qualname__ = name
    which = {"hsplit": "1 (0 for a 1-D tensor)", "vsplit": "0", "dsplit": "2"}[name]
    split.__doc__ = (
        f"{name}(input, indices_or_sections) -> tuple of Tensors\n\n"
        f"Splits ``input`` (at least {min_dims}-D) along dim {which} into views: ``sections`` equal pieces "
        "(an int, which must divide that dim's size), or pieces cut before each of the given indices "
        "(a list, as ``tensor_split``).\n\n"
        "Example:\n"
        "    >>> import flambeau_core as fc\n"
        f"    >>> [p.shape for p in fc.{name}(fc.zeros(2, 2, 2), 2)]\n"
        f"    [{', '.join([f'flambeau.Size({[2 if i != dim else 1 for i in range(3)]})'] * 2)}]\n"
    )
    return split


hsplit = _directional_split("hsplit", 1, 1)
vsplit = _directional_split("vsplit", 0, 2)
dsplit = _directional_split("dsplit", 2, 3)

PUBLIC = (split_with_sizes, unsafe_split_with_sizes, unsafe_split, unsafe_chunk, hsplit, vsplit, dsplit)


def install() -> None:
    import flambeau_core

    for fn in PUBLIC:  # PyTorch has each as a function and as a Tensor method
        setattr(flambeau_core, fn.__name__, fn)
        setattr(_C.Tensor, fn.__name__, fn)
