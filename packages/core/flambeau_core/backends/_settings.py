"""Settings modules: attributes that are read and set like PyTorch's ``torch.backends.*`` flags.

Note [Backend settings]: each settings module declares its flags once (name, default,
the type a value must have); setting one checks the type and stores it; reading it
returns what was stored. A flag that no flambeau kernel consults yet says so in its
module's docstring: programs that set and read it back (``cudnn.benchmark = True``)
run unchanged.
"""

from __future__ import annotations

import contextlib
import sys
import types
from collections.abc import Iterator
from typing import Any


class SettingsModule(types.ModuleType):
    """A module whose declared flags (``_FLAGS``: name -> (default, types)) are type-checked on assignment."""

    _FLAGS: dict[str, tuple[Any, tuple[type, ...]]] = {}

    def __setattr__(self, name: str, value: Any) -> None:
        flags = self.__dict__.get("_FLAGS", {})
        if name in flags:
            kinds = flags[name][1]
            # bool is an int subclass, yet an int flag does not take True (nor a bool flag 1).
            if not isinstance(value, kinds) or (isinstance(value, bool) and bool not in kinds):
                names = " or ".join("None" if k is type(None) else k.__name__ for k in kinds)
                raise TypeError(f"[{self.__name__}.{name}] expects {names}, got {type(value).__name__}")
        super().__setattr__(name, value)


def make_settings_module(module_name: str, flags: dict[str, tuple[Any, tuple[type, ...]]]) -> None:
    """Turns the already-imported module ``module_name`` into a SettingsModule holding ``flags``."""
    module = sys.modules[module_name]
    module._FLAGS = flags
    for name, (default, _) in flags.items():
        setattr(module, name, default)
    module.__class__ = SettingsModule


@contextlib.contextmanager
def set_flags(module: types.ModuleType, **values: Any) -> Iterator[None]:
    """Context manager: sets the given flags of ``module`` (None leaves one as it is), restores them on exit."""
    old = {}
    try:
        for name, value in values.items():
            if name not in module._FLAGS:
                raise TypeError(
                    f"[{module.__name__}.flags] unknown flag '{name}'; expected one of {list(module._FLAGS)}"
                )
            if value is not None:
                old[name] = getattr(module, name)
                setattr(module, name, value)
        yield
    finally:
        for name, value in old.items():
            setattr(module, name, value)
