"""``Tensor.fill_diagonal_``: writes one value on the main diagonal of a matrix (or of an n-D tensor whose
dims are all equal), in place, as PyTorch's.

The diagonal's positions are computed as index tensors and written with one ``index_put_``, so any strides
work and ``wrap`` (a tall matrix's diagonal restarting every ``columns + 1`` rows, PyTorch's numpy-style
wrap) needs no loop.
"""

from __future__ import annotations

from numbers import Number

from flambeau_core import _C
from flambeau_core._composing import check_tensor


def fill_diagonal_(self: _C.Tensor, fill_value: Number, wrap: bool = False) -> _C.Tensor:
    """fill_diagonal_(fill_value, wrap=False) -> Tensor

    Fills the main diagonal of ``self`` (at least 2-D; all dims of equal length when more than 2-D) with
    ``fill_value``, in place, and returns ``self``. For a tall matrix, ``wrap=True`` continues the diagonal
    after every ``N + 1`` rows (``N`` the number of columns), as NumPy's ``fill_diagonal``.

    Example:
        >>> import flambeau_core as fc
        >>> fc.zeros(3, 3).fill_diagonal_(5.0).tolist()
        [[5.0, 0.0, 0.0], [0.0, 5.0, 0.0], [0.0, 0.0, 5.0]]
        >>> fc.zeros(5, 2).fill_diagonal_(1, wrap=True).tolist()
        [[1.0, 0.0], [0.0, 1.0], [0.0, 0.0], [1.0, 0.0], [0.0, 1.0]]
    """
    check_tensor("fill_diagonal_", self, "self")
    if isinstance(fill_value, _C.Tensor) or not isinstance(fill_value, Number):
        raise TypeError(f"[fill_diagonal_] expected a number as fill_value, got {type(fill_value).__name__}")
    if not isinstance(wrap, bool):
        raise TypeError(f"[fill_diagonal_] expected a bool as wrap, got {type(wrap).__name__}")
    shape = tuple(self.shape)
    if len(shape) < 2:
        raise _C.FlambeauError(f"[fill_diagonal_] dimensions must larger than 1: got a {len(shape)}-D tensor")
    if len(shape) > 2 and len(set(shape)) != 1:
        raise _C.FlambeauError(f"[fill_diagonal_] all dimensions of input must be of equal length, got shape {shape}")
    rows, columns = shape[0], shape[-1]
    if len(shape) == 2 and wrap and rows > columns:
        # the diagonal of the row-major flattening, one step of columns + 1 at a time, to its end
        flat = _C.arange(0, rows * columns, columns + 1, device=self.device)
        index = (flat.div(columns, rounding_mode="floor"), flat.remainder(columns))
    else:
        i = _C.arange(min(shape), device=self.device)
        index = (i,) * len(shape)
    return self.index_put_(index, _C.tensor(fill_value, dtype=self.dtype, device=self.device))


def install() -> None:
    _C.Tensor.fill_diagonal_ = fill_diagonal_
