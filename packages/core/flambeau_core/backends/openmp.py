"""``flambeau.backends.openmp`` (``torch.backends.openmp``)."""

from __future__ import annotations


def is_available() -> bool:
    """True: flambeau-core's kernels run their threads on OpenMP (a build requirement).

    ``flambeau.set_num_threads`` sets the thread count.
    """
    return True
