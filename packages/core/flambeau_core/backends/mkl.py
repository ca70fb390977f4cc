"""``flambeau.backends.mkl`` (``torch.backends.mkl``): flambeau uses OpenBLAS, not Intel MKL."""

from __future__ import annotations


def is_available() -> bool:
    """False: flambeau's BLAS and LAPACK are OpenBLAS (scipy-openblas32)."""
    return False
