"""Complex-number forms of PyTorch that flambeau composes: ``isreal``, ``vdot``, ``resolve_conj``/
``resolve_neg`` with ``Tensor.is_conj``/``is_neg``, and ``Tensor.cfloat``/``cdouble``/``chalf``.

No lazy bits: PyTorch's ``conj()`` of a complex tensor is a view with a conjugate bit, which
``resolve_conj`` materialises (likewise the negative bit and ``resolve_neg``). flambeau's ``conj()``
computes the conjugate at once (ops.yaml's note above ``conj_physical``), so no tensor carries either
bit: ``is_conj()`` and ``is_neg()`` are False and both ``resolve_*`` return their input itself, which is
what PyTorch returns for a tensor without the bit.
"""

from __future__ import annotations

from typing import Any

from flambeau_core import _C
from flambeau_core._composing import call_as, check_tensor


def isreal(input: _C.Tensor) -> _C.Tensor:  # noqa: A002
    """isreal(input) -> Tensor

    Where ``input`` is real (bool): an imaginary part of zero for complex tensors, everywhere for the
    others. A NaN real part with a zero imaginary part counts as real, as PyTorch's.

    Example:
        >>> import flambeau_core as fc
        >>> fc.isreal(fc.tensor([1.0 + 0j, 2j])).tolist()
        [True, False]
    """
    check_tensor("isreal", input)
    if input.dtype.is_complex:
        return input.imag == 0
    return _C.ones(tuple(input.shape), dtype=_C.bool, device=input.device)


def vdot(input: _C.Tensor, other: _C.Tensor, *, out: _C.Tensor | None = None) -> _C.Tensor:  # noqa: A002
    """vdot(input, other, *, out=None) -> Tensor

    The dot product of two 1-D tensors of one dtype, conjugating the first: ``sum(conj(input) * other)``
    (``dot`` for real tensors).

    Example:
        >>> import flambeau_core as fc
        >>> fc.vdot(fc.tensor([1j, 2 + 0j]), fc.tensor([3 + 0j, 4j])).item()
        5j
    """
    check_tensor("vdot", input)
    check_tensor("vdot", other, "other")
    first = input.conj() if input.dtype.is_complex else input
    return _C._copy_to_out("vdot", call_as("vdot", _C._dot, first, other), out, True)


def resolve_conj(input: _C.Tensor) -> _C.Tensor:  # noqa: A002
    """resolve_conj(input) -> Tensor

    ``input`` itself: flambeau computes conjugates at once, so there is no lazy conjugate bit to
    resolve (the module's note); ``input.conj()`` is already a materialised tensor.

    Example:
        >>> import flambeau_core as fc
        >>> x = fc.tensor([1 + 2j]).conj()
        >>> fc.resolve_conj(x) is x, x.tolist()
        (True, [(1-2j)])
    """
    check_tensor("resolve_conj", input)
    return input


def resolve_neg(input: _C.Tensor) -> _C.Tensor:  # noqa: A002
    """resolve_neg(input) -> Tensor

    ``input`` itself: flambeau has no lazy negative bit to resolve (the module's note).

    Example:
        >>> import flambeau_core as fc
        >>> x = fc.tensor([1.0, -2.0])
        >>> fc.resolve_neg(x) is x
        True
    """
    check_tensor("resolve_neg", input)
    return input


def _no_lazy_bit(name: str):
    def query(self: _C.Tensor) -> bool:
        return False

    query.__name__ = query.__qualname__ = name
    query.__doc__ = (
        f"{name}() -> bool\n\nFalse: flambeau tensors carry no lazy conjugate or negative bit (the module's "
        f"note).\n\nExample:\n    >>> import flambeau_core as fc\n    >>> fc.tensor([1j]).conj().{name}()\n    False\n"
    )
    return query


def _complex_conversion(name: str, dtype_name: str):
    def convert(self: _C.Tensor, memory_format: Any = None) -> _C.Tensor:
        dtype = getattr(_C, dtype_name)
        if memory_format is None:
            return self.to(dtype)
        return self.to(dtype, memory_format=memory_format)

    convert.__name__ = convert.__qualname__ = name
    convert.__doc__ = (
        f"{name}(memory_format=torch.preserve_format) -> Tensor\n\n"
        f"``self.to({dtype_name})``: ``self`` itself when it is {dtype_name} already.\n\n"
        "Example:\n"
        "    >>> import flambeau_core as fc\n"
        f"    >>> fc.tensor([1.5]).{name}().tolist()\n"
        "    [(1.5+0j)]\n"
    )
    return convert


def _chalf(self: _C.Tensor, memory_format: Any = None) -> _C.Tensor:
    """chalf(memory_format=torch.preserve_format) -> Tensor

    PyTorch's ``self.to(complex32)``; flambeau has no complex32 dtype, so this is a TypeError that says
    so (``cfloat()`` gives complex64).

    Example:
        >>> import flambeau_core as fc
        >>> fc.tensor([1.0]).chalf()
        Traceback (most recent call last):
        ...
        TypeError: [chalf] complex32 (chalf) is not a flambeau dtype; cfloat() gives complex64
    """
    raise TypeError("[chalf] complex32 (chalf) is not a flambeau dtype; cfloat() gives complex64")


def install() -> None:
    import flambeau_core

    for fn in (isreal, vdot, resolve_conj, resolve_neg):
        setattr(flambeau_core, fn.__name__, fn)
        setattr(_C.Tensor, fn.__name__, fn)
    _C.Tensor.is_conj = _no_lazy_bit("is_conj")
    _C.Tensor.is_neg = _no_lazy_bit("is_neg")
    _C.Tensor.cfloat = _complex_conversion("cfloat", "complex64")
    _C.Tensor.cdouble = _complex_conversion("cdouble", "complex128")
    _C.Tensor.chalf = _chalf
