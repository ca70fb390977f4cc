"""``flambeau.backends``: settings of the backends, as ``torch.backends``.

Submodules: :mod:`cpu` (``get_cpu_capability``), :mod:`cuda` (``matmul.allow_tf32``,
``is_built``), :mod:`cudnn` (``benchmark``, ``deterministic``, ``enabled``,
``allow_tf32``), :mod:`mps`, :mod:`mkldnn`, :mod:`mkl`, :mod:`openmp` and
:mod:`opt_einsum`. Flags are type-checked when set and read back as set
(Note [Backend settings] in ``_settings.py``).

Example:
    >>> import flambeau_core as fc
    >>> fc.backends.cudnn.deterministic = True
    >>> fc.backends.cudnn.deterministic
    True
    >>> fc.backends.cudnn.deterministic = False
"""

from __future__ import annotations

from flambeau_core.backends import cpu, cuda, cudnn, mkl, mkldnn, mps, openmp, opt_einsum

__all__ = ["cpu", "cuda", "cudnn", "mkl", "mkldnn", "mps", "openmp", "opt_einsum"]
