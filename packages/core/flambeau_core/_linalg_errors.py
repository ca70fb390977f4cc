"""``linalg.LinAlgError``: the error of a linear-algebra routine that fails on the values of its input (a
singular matrix, one not positive-definite, an iteration that does not converge), as
``torch.linalg.LinAlgError``.

LAPACK's failures reach Python as :class:`FlambeauError` from core's kernels; the public ``linalg``
functions re-raise those (recognised by their wording in src/cpu/linalg/lapack.cpp and lapack_lu.cpp)
as ``LinAlgError``, a subclass of ``FlambeauError``, so ``except LinAlgError``,
``except RuntimeError`` and ``except FlambeauError`` all catch them, and shape or dtype errors stay what
they were.
"""

from __future__ import annotations

import functools
import re
from collections.abc import Callable
from typing import Any

from flambeau_core._C import FlambeauError


class LinAlgError(FlambeauError):
    """Raised by ``linalg`` functions when the input's values make them fail: a singular matrix (``inv``,
    ``solve``), one that is not positive-definite (``cholesky``), or no convergence (``eigh``, ``svd``).
    A subclass of :class:`FlambeauError` (so of ``RuntimeError``), as PyTorch's is of ``RuntimeError``.

    Example:
        >>> import flambeau_core as fc
        >>> try:
        ...     fc.linalg.inv(fc.zeros(2, 2))
        ... except fc.linalg.LinAlgError as e:
        ...     print("singular" in str(e))
        True
    """


LinAlgError.__module__ = "flambeau.linalg"

# The wording of lapack.cpp's and lapack_lu.cpp's failures (each names the value that failed).
_NUMERICAL_FAILURE = re.compile(
    r"is singular|not positive-definite|failed to converge|could not be completed|contains NaN or infinity"
)


def raising_linalg_errors(fn: Callable) -> Callable:
    """fn, its numerical failures raised as LinAlgError (other errors unchanged)."""

    @functools.wraps(fn)
    def wrapper(*args: Any, **kwargs: Any) -> Any:
        try:
            return fn(*args, **kwargs)
        except RuntimeError as e:  # FlambeauError, and LAPACK's own argument checks (a NaN input)
            if isinstance(e, LinAlgError) or not _NUMERICAL_FAILURE.search(str(e)):
                raise
            raise LinAlgError(str(e)).with_traceback(e.__traceback__) from None

    return wrapper
