"""torch's deprecated top-level matrix functions that still exist: ``nuclear_norm`` and ``frobenius_norm``
(left "for JIT compatibility", warning once), and ``matrix_rank``, which only raises, pointing at
``linalg.matrix_rank``. The norms are ``linalg``'s, with the old spellings' arguments and checks."""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from typing import Any

from flambeau_core import _C
from flambeau_core._composing import call_as, check_tensor


def _dims(name: str, dim: Any) -> tuple[int, ...]:
    dims = (dim,) if isinstance(dim, int) and not isinstance(dim, bool) else dim
    if not isinstance(dims, Sequence) or not all(isinstance(d, int) and not isinstance(d, bool) for d in dims):
        raise TypeError(f"[{name}] expected dim as an int or a tuple of ints, got {dim!r}")
    return tuple(dims)


def _check_floating(name: str, input: _C.Tensor) -> None:  # noqa: A002
    check_tensor(name, input)
    if not (input.dtype.is_floating_point or input.dtype.is_complex):
        raise TypeError(f"[{name}] input dtype should be either floating point or complex. Got {input.dtype.name}")


def nuclear_norm(input: _C.Tensor, dim: Any = None, keepdim: bool = False) -> _C.Tensor:  # noqa: A002
    """nuclear_norm(input, keepdim=False) -> Tensor, nuclear_norm(input, dim, keepdim=False) -> Tensor

    Deprecated (warns): the nuclear norm (the sum of the singular values) of the matrices over the two
    dims ``dim`` (the last two by default), as ``linalg.matrix_norm(input, "nuc", dim, keepdim)``, which
    new code should call. As in PyTorch, a bool second argument is ``keepdim``.

    Example:
        >>> import warnings
        >>> import flambeau_core as fc
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("ignore")
        ...     fc.nuclear_norm(fc.eye(3)).item()
        3.0
    """
    if isinstance(dim, bool):  # nuclear_norm(input, keepdim)
        dim, keepdim = None, dim
    _check_floating("nuclear_norm", input)
    dims = (-2, -1) if dim is None else _dims("nuclear_norm", dim)
    if len(dims) != 2:
        raise _C.FlambeauError(f"[nuclear_norm] dim must be a 2-tuple of dims, got {dim!r}")
    warnings.warn(
        "[nuclear_norm] nuclear_norm is deprecated; use linalg.matrix_norm(A, 'nuc', dim, keepdim) instead",
        UserWarning,
        stacklevel=2,
    )
    from flambeau_core import linalg

    return call_as("nuclear_norm", linalg.matrix_norm, input, "nuc", dims, keepdim)


def frobenius_norm(input: _C.Tensor, dim: Any, keepdim: bool = False) -> _C.Tensor:  # noqa: A002
    """frobenius_norm(input, dim, keepdim=False) -> Tensor

    Deprecated (warns): the square root of the sum of squared magnitudes over at most two dims ``dim``
    (``()``: every element), as ``linalg.vector_norm(input, 2, dim, keepdim)``, which new code should call.

    Example:
        >>> import warnings
        >>> import flambeau_core as fc
        >>> with warnings.catch_warnings():
        ...     warnings.simplefilter("ignore")
        ...     fc.frobenius_norm(fc.full((2, 2), 3.0), (0, 1)).item()
        6.0
    """
    _check_floating("frobenius_norm", input)
    dims = _dims("frobenius_norm", dim)
    if len(dims) > 2:
        raise _C.FlambeauError(
            f"[frobenius_norm] Expected at most 2 dimensions, but got {len(dims)} dimensions instead."
        )
    ndim = max(input.dim(), 1)
    if len({d % ndim for d in dims if -ndim <= d < ndim}) != len(dims) and all(-ndim <= d < ndim for d in dims):
        raise _C.FlambeauError(f"[frobenius_norm] dim {dims[0]} appears multiple times in the list of dims {dims}")
    warnings.warn(
        "[frobenius_norm] frobenius_norm is deprecated; use linalg.vector_norm(A, 2, dim, keepdim) instead",
        UserWarning,
        stacklevel=2,
    )
    from flambeau_core import linalg

    return call_as("frobenius_norm", linalg.vector_norm, input, 2, dims if dims else None, keepdim)


def matrix_rank(input: _C.Tensor, tol: float | None = None, symmetric: bool = False, *, out: Any = None) -> Any:  # noqa: A002
    """matrix_rank(input, tol=None, symmetric=False, *, out=None)

    Removed from PyTorch (since 1.9): raises, as ``torch.matrix_rank`` does, naming its replacement
    :func:`flambeau.linalg.matrix_rank` (whose ``symmetric`` is called ``hermitian``).

    Example:
        >>> import flambeau_core as fc
        >>> try:
        ...     fc.matrix_rank(fc.eye(2))
        ... except RuntimeError as e:
        ...     print("linalg.matrix_rank" in str(e))
        True
    """
    raise _C.FlambeauError(
        "[matrix_rank] This function was deprecated since version 1.9 and is now removed. Please use the "
        "`linalg.matrix_rank` function instead. The parameter 'symmetric' was renamed in "
        "`linalg.matrix_rank()` to 'hermitian'."
    )


def install() -> None:
    import flambeau_core

    for fn in (nuclear_norm, frobenius_norm, matrix_rank):
        setattr(flambeau_core, fn.__name__, fn)
