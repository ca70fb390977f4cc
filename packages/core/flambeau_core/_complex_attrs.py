"""Conjugate-transpose attributes (complex everywhere the math is
defined): ``Tensor.mH``, ``Tensor.H``, ``Tensor.adjoint()`` and
``flambeau_core.adjoint``, as PyTorch's. flambeau has no lazy conj bit, so the
conjugate is materialised (a real tensor gives a transposed view)."""

from __future__ import annotations

from flambeau_core import _C
from flambeau_core.overrides import is_tensor_like


def _check(x, what: str, matrices_only: bool) -> None:
    if not is_tensor_like(x):  # a tensor-like (flambeau.overrides) runs through, its ops overridden
        raise TypeError(f"[{what.rstrip('()')}] expected a Tensor, got {type(x).__name__}")
    if matrices_only and x.dim() != 2:
        hint = " For batches of matrices, consider using tensor.mH" if x.dim() > 2 else ""
        raise _C.FlambeauError(
            f"tensor.{what} is only supported on matrices (2-D tensors). Got {x.dim()}-D tensor "
            f"of shape {tuple(x.shape)}.{hint}"
        )
    if x.dim() < 2:
        raise _C.FlambeauError(
            f"tensor.{what} is only supported on matrices or batches of matrices. Got {x.dim()}-D tensor "
            f"of shape {tuple(x.shape)}."
        )


def adjoint(input: _C.Tensor) -> _C.Tensor:  # noqa: A002
    """The conjugate transpose of the last two dims (``input.mH``).

    Example:
        >>> import flambeau as fb
        >>> x = fb.tensor([[1j, 2j]]).adjoint()
        >>> x.shape, x.imag.tolist()
        (flambeau.Size([2, 1]), [[-1.0], [-2.0]])
    """
    _check(input, "adjoint()", False)
    return input.transpose(-2, -1).conj()


def _mH(self):
    _check(self, "mH", False)
    return self.transpose(-2, -1).conj()


def _H(self):
    _check(self, "H", True)
    return self.transpose(0, 1).conj()


_C.Tensor.mH = property(_mH, doc="The conjugate transpose of the last two dims.")
_C.Tensor.H = property(_H, doc="The conjugate transpose of a 2-D tensor.")
_C.Tensor.adjoint = adjoint
