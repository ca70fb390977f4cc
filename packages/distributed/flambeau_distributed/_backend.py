"""The backend: MPI (mpi4py) and whether it is there, ``Backend``'s names, ``ReduceOp`` and
``DistBackendError``.
"""

from __future__ import annotations

import datetime

_DEFAULT_TIMEOUT = datetime.timedelta(minutes=30)


class DistBackendError(RuntimeError):
    """An error of the communication backend (MPI), or a collective that timed out.

    Example:
        >>> import flambeau as fb
        >>> issubclass(fb.distributed.DistBackendError, RuntimeError)
        True
    """


class ReduceOp:
    """The reduction of ``all_reduce``, ``reduce`` and ``reduce_scatter`` (PyTorch's names).

    Example:
        >>> import flambeau as fb
        >>> fb.distributed.ReduceOp.SUM, fb.distributed.ReduceOp.MAX
        ('SUM', 'MAX')
    """

    SUM = "SUM"
    PRODUCT = "PRODUCT"
    MIN = "MIN"
    MAX = "MAX"
    AVG = "AVG"
    BAND = "BAND"
    BOR = "BOR"
    BXOR = "BXOR"


_REDUCE_OPS = {
    ReduceOp.SUM,
    ReduceOp.PRODUCT,
    ReduceOp.MIN,
    ReduceOp.MAX,
    ReduceOp.AVG,
    ReduceOp.BAND,
    ReduceOp.BOR,
    ReduceOp.BXOR,
}


class Backend:
    """The available backends: only ``"mpi"``.

    Example:
        >>> import flambeau as fb
        >>> fb.distributed.Backend.MPI
        'mpi'
    """

    MPI = "mpi"


def is_available() -> bool:
    """True when mpi4py can be imported (an MPI library is then needed at run time).

    Example:
        >>> import importlib.util
        >>> import flambeau as fb
        >>> fb.distributed.is_available() == (importlib.util.find_spec("mpi4py") is not None)
        True
    """
    import importlib.util

    return importlib.util.find_spec("mpi4py") is not None


def is_mpi_available() -> bool:
    """The same as :func:`is_available`: MPI is the only backend.

    Example:
        >>> import flambeau as fb
        >>> fb.distributed.is_mpi_available() == fb.distributed.is_available()
        True
    """
    return is_available()


def _mpi():
    import mpi4py

    # Threads: Note [One communication thread] calls MPI from a thread of its own
    # while other threads may wait on requests.
    mpi4py.rc.thread_level = "multiple"
    from mpi4py import MPI

    return MPI
