"""flambeau_core.backends: per-backend settings, as PyTorch's ``torch.backends``.

>>> import flambeau_core as fc
>>> fc.backends.cpu.get_cpu_capability() in ("base", "avx2", "avx512")
True
"""

from __future__ import annotations

from flambeau_core.backends import cpu

__all__ = ["cpu"]
