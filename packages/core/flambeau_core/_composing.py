"""Argument checks shared by the ops composed in Python from other ops (``_view_copy``, ``_splits``, ...).

An op made of another op reports that op's errors under its own name: ``t_copy`` of a 3-D tensor says
``[t_copy] ...``, not ``[t] ...``, with the same exception type and the rest of the message unchanged.
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

from flambeau_core.overrides import is_tensor_like


def is_int(x: Any) -> bool:
    return isinstance(x, int) and not isinstance(x, bool)


def check_tensor(name: str, x: Any, what: str = "input") -> None:
    # A tensor-like (flambeau.overrides) runs through the function, its ops overridden one by one.
    if not is_tensor_like(x):
        raise TypeError(f"[{name}] expected a Tensor as '{what}', got {type(x).__name__}")


def check_int(name: str, x: Any, what: str) -> int:
    if not is_int(x):
        raise TypeError(f"[{name}] expected an int '{what}', got {type(x).__name__}")
    return x


_OP_PREFIX = re.compile(r"^(\[[^\]]*\] |[A-Za-z_][\w.]*: )")  # "[op] " or "op: "


def renamed(name: str, exc: Exception) -> Exception:
    """exc worded for ``name``: its ``[op]`` (or ``op:``) prefix replaced, the type and the rest kept."""
    return type(exc)(f"[{name}] {_OP_PREFIX.sub('', str(exc), count=1)}")


def call_as(name: str, fn: Callable, *args: Any, **kwargs: Any) -> Any:
    """fn(*args, **kwargs), its errors worded for ``name``."""
    try:
        return fn(*args, **kwargs)
    except (TypeError, IndexError, ValueError, RuntimeError) as e:
        raise renamed(name, e) from None
