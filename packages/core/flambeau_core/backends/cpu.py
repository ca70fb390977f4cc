"""flambeau_core.backends.cpu: the CPU kernels' settings (PyTorch's ``torch.backends.cpu``).

Each setting is a module attribute, read and assigned at run time (Note [Settings]
in core's src/settings.h; docs/core.md "Settings" lists them all). A value outside
the allowed ones raises ValueError naming the setting and the allowed values. Each
setting also has an environment override (``FLAMBEAU_SGEMM``, ...), read once when
flambeau_core loads; an unknown override value is ignored with a RuntimeWarning.

    >>> import flambeau_core as fc
    >>> cpu = fc.backends.cpu
    >>> cpu.parallel_for_schedule
    'dynamic'
    >>> with cpu.flags(conv_transposed_kernel="gemm"):
    ...     cpu.conv_transposed_kernel
    'gemm'
    >>> cpu.conv_transposed_kernel
    'auto'
"""

from __future__ import annotations

import contextlib
import sys
import types
import warnings
from collections.abc import Iterator

from flambeau_core import _C

__all__ = ["flags", "get_cpu_capability", "settings"]

# The settings (their names, values and docs come from core's registry: one place).
sgemm: str
gemm_pool: bool
parallel_for_schedule: str
conv_row_blocks: str
conv_pixel_classes: str
conv_direct_kernel: str
conv_weight_grad_kernel: str
conv_transposed_kernel: str
max_cpu_capability: str
bf16_amx: bool

_SPECS = {spec["name"]: spec for spec in _C._settings()}


# core's names (Note [CPU capabilities]) -> PyTorch's, which programs compare against
_CAPABILITY_NAMES = {"base": "DEFAULT", "avx2": "AVX2", "avx512": "AVX512"}


def get_cpu_capability() -> str:
    """The instruction set the CPU kernels use, in PyTorch's names: ``"DEFAULT"``, ``"AVX2"`` or
    ``"AVX512"`` (core's ``base``, ``avx2``, ``avx512``).

    The widest the CPU supports, capped by ``max_cpu_capability``
    (``FLAMBEAU_CPU_CAPABILITY``), as ``torch.backends.cpu.get_cpu_capability()``.

        >>> import flambeau_core as fc
        >>> fc.backends.cpu.get_cpu_capability() in ("DEFAULT", "AVX2", "AVX512")
        True
    """
    capability = _C._cpu_capability()
    return _CAPABILITY_NAMES.get(capability, capability.upper())


def settings() -> dict[str, str | bool]:
    """Every setting's current value, by name.

    >>> import flambeau_core as fc
    >>> fc.backends.cpu.settings()["conv_direct_kernel"]
    'auto'
    """
    return {name: _get(name) for name in _SPECS}


def _get(name: str) -> str | bool:
    value = _C._get_setting(name)
    return value == "True" if _SPECS[name]["is_flag"] else value


def _set(name: str, value: str | bool) -> None:
    spec = _SPECS[name]
    if spec["is_flag"]:
        if not isinstance(value, bool):
            raise TypeError(f"[backends.cpu.{name}] expected a bool, got {type(value).__name__}")
        value = str(value)
    elif not isinstance(value, str):
        allowed = ", ".join(repr(v) for v in spec["values"])
        raise TypeError(f"[backends.cpu.{name}] expected a str, one of {allowed}, got {type(value).__name__}")
    _C._set_setting(name, value)


@contextlib.contextmanager
def flags(**values: str | bool) -> Iterator[None]:
    """Sets the given settings for the ``with`` block, then restores the previous values.

    >>> import flambeau_core as fc
    >>> with fc.backends.cpu.flags(gemm_pool=False, parallel_for_schedule="static"):
    ...     fc.backends.cpu.gemm_pool
    False
    """
    for name in values:
        if name not in _SPECS:
            raise ValueError(f"[backends.cpu.flags] no setting named {name!r}; the settings are: {', '.join(_SPECS)}")
    before = {name: _get(name) for name in values}
    try:
        for name, value in values.items():
            _set(name, value)
        yield
    finally:
        # In reverse: a value set after another may depend on it (sgemm 'own' on max_cpu_capability).
        for name, value in reversed(before.items()):
            _set(name, value)


class _CpuSettingsModule(types.ModuleType):
    """This module, with each setting as a property (a module cannot hold properties itself)."""

    def __dir__(self) -> list[str]:
        return sorted(set(super().__dir__()) | set(_SPECS))


def _setting_property(name: str) -> property:
    spec = _SPECS[name]
    doc = f"{spec['doc']} Values: {', '.join(spec['values'])}. Environment override: {spec['env']}."
    if not spec["settable"]:
        doc += " Read-only at run time."
    return property(lambda _module: _get(name), lambda _module, value: _set(name, value), doc=doc)


for _name in _SPECS:
    setattr(_CpuSettingsModule, _name, _setting_property(_name))
sys.modules[__name__].__class__ = _CpuSettingsModule

for _message in _C._settings_environment_errors():
    warnings.warn(f"[backends.cpu] {_message}", RuntimeWarning, stacklevel=2)
