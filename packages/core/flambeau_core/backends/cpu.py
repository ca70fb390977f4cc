"""``flambeau.backends.cpu``: what the CPU kernels run on (``torch.backends.cpu``)."""

from __future__ import annotations

from flambeau_core import _C

# core's names (Note [CPU capabilities]) -> PyTorch's
_NAMES = {"base": "DEFAULT", "avx2": "AVX2", "avx512": "AVX512"}


def get_cpu_capability() -> str:
    """The instruction set the vectorized CPU kernels use here: ``"DEFAULT"``, ``"AVX2"`` or ``"AVX512"``.

    Chosen at run time from the CPU (PyTorch's names for the same levels).

    Example:
        >>> import flambeau_core as fc
        >>> fc.backends.cpu.get_cpu_capability() in ("DEFAULT", "AVX2", "AVX512")
        True
    """
    capability = _C._cpu_capability()
    return _NAMES.get(capability, capability.upper())
