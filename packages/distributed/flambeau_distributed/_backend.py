"""The backend: MPI (mpi4py) and whether it is there, ``Backend``'s names, ``ReduceOp`` and
``DistBackendError``.
"""

from __future__ import annotations

import datetime
import os
from typing import Any

_DEFAULT_TIMEOUT = datetime.timedelta(minutes=30)


class DistError(RuntimeError):
    """The base of torch.distributed's errors (``DistBackendError``, ``DistNetworkError``, ``DistStoreError``).

    Example:
        >>> import flambeau as fb
        >>> issubclass(fb.distributed.DistError, RuntimeError)
        True
    """


class DistBackendError(DistError):
    """An error of the communication backend (MPI), or a collective that timed out.

    Example:
        >>> import flambeau as fb
        >>> issubclass(fb.distributed.DistBackendError, fb.distributed.DistError)
        True
    """


class DistNetworkError(DistError):
    """A network error (PyTorch's rendezvous raises it; MPI's launcher does flambeau's rendezvous).

    Example:
        >>> import flambeau as fb
        >>> issubclass(fb.distributed.DistNetworkError, fb.distributed.DistError)
        True
    """


class DistStoreError(DistError):
    """An error of a key-value store (PyTorch's rendezvous; flambeau has no store: MPI's launcher does it).

    Example:
        >>> import flambeau as fb
        >>> issubclass(fb.distributed.DistStoreError, fb.distributed.DistError)
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


def is_backend_available(backend: str) -> bool:
    """True for ``"mpi"`` when :func:`is_available`; False for every other backend (gloo, nccl, ucc, xccl).

    Example:
        >>> import flambeau as fb
        >>> dist = fb.distributed
        >>> dist.is_backend_available("gloo"), dist.is_backend_available("mpi") == dist.is_available()
        (False, True)
    """
    return str(backend).lower() == Backend.MPI and is_available()


def is_gloo_available() -> bool:
    """False: flambeau's only backend is MPI (:func:`is_mpi_available`).

    Example:
        >>> import flambeau as fb
        >>> fb.distributed.is_gloo_available()
        False
    """
    return False


def is_nccl_available() -> bool:
    """False: flambeau's only backend is MPI.

    Example:
        >>> import flambeau as fb
        >>> fb.distributed.is_nccl_available()
        False
    """
    return False


def is_ucc_available() -> bool:
    """False: flambeau's only backend is MPI.

    Example:
        >>> import flambeau as fb
        >>> fb.distributed.is_ucc_available()
        False
    """
    return False


def is_xccl_available() -> bool:
    """False: flambeau's only backend is MPI.

    Example:
        >>> import flambeau as fb
        >>> fb.distributed.is_xccl_available()
        False
    """
    return False


def is_torchelastic_launched() -> bool:
    """True when the process was started by ``torchrun`` (``TORCHELASTIC_RUN_ID`` is set), as PyTorch's.

    flambeau's processes come from ``mpirun``, so this is normally False.

    Example:
        >>> import flambeau as fb
        >>> import os
        >>> fb.distributed.is_torchelastic_launched() == ("TORCHELASTIC_RUN_ID" in os.environ)
        True
    """
    import os

    return os.getenv("TORCHELASTIC_RUN_ID") is not None


def supports_complex(reduceOp: str) -> bool:  # noqa: N803 (PyTorch's keyword)
    """Whether ``reduceOp`` is defined on complex numbers: not MAX, MIN, PRODUCT (as PyTorch's) or the bitwise ops.

    Example:
        >>> import flambeau as fb
        >>> op = fb.distributed.ReduceOp
        >>> fb.distributed.supports_complex(op.SUM), fb.distributed.supports_complex(op.MAX)
        (True, False)
    """
    return reduceOp not in (ReduceOp.MAX, ReduceOp.MIN, ReduceOp.PRODUCT, ReduceOp.BAND, ReduceOp.BOR, ReduceOp.BXOR)


def get_default_backend_for_device(device: Any) -> str:
    """The backend for tensors on ``device`` (a string or a device): ``"mpi"`` for the CPU.

    PyTorch answers ``"gloo"`` for the CPU and ``"nccl"`` for CUDA; another device
    raises ValueError, as PyTorch's for a device without a backend.

    Example:
        >>> import flambeau as fb
        >>> fb.distributed.get_default_backend_for_device("cpu")
        'mpi'
    """
    kind = device if isinstance(device, str) else getattr(device, "type", str(device))
    if kind.split(":")[0] != "cpu":
        raise ValueError(f"Default backend not registered for device : {device}")
    return Backend.MPI


def _mpi():
    import mpi4py

    # Threads: Note [One communication thread] calls MPI from a thread of its own
    # while other threads may wait on requests.
    mpi4py.rc.thread_level = "multiple"
    # Note [Ring all-reduce]: Open MPI's nonblocking all-reduce (coll/libnbc, which every
    # Iallreduce goes to) picks a binomial tree for fewer than 4 ranks, and for an in-place call
    # whatever the size: rank 0 receives every other rank's whole buffer and does all the
    # additions, then sends the sum back, and each call first copies its buffer aside. The ring
    # (a reduce-scatter, then an all-gather) gives every rank an equal share of the additions and
    # of the bytes, and reduces in place. On 2 ranks, the 670k floats of the MLP's gradients in
    # 8 Iallreduces (benchmarks/bench_ddp.py) cost rank 0 0.54-0.70 ms of CPU a step with it,
    # 1.26-1.32 ms with the tree, and post in 0.10-0.13 ms instead of 0.31-0.33 ms. Read by
    # MPI_Init only: an OMPI_MCA_coll_libnbc_iallreduce_algorithm already set wins.
    if "MPI" not in mpi4py.__dict__:
        os.environ.setdefault("OMPI_MCA_coll_libnbc_iallreduce_algorithm", "1")
    from mpi4py import MPI

    return MPI
