"""Python-level forms of shape ops that take their tensors as *args (PyTorch's signatures).

The ops themselves are declared in codegen/ops.yaml (``_meshgrid``, ``_broadcast_tensors``,
``_atleast_1d``...); these wrappers accept both ``f(a, b)`` and ``f([a, b])`` as PyTorch does.
"""

from __future__ import annotations

from flambeau_core import _C


def _tensors(args: tuple, name: str) -> list:
    if len(args) == 1 and isinstance(args[0], (list, tuple)):
        args = tuple(args[0])
    for i, t in enumerate(args):
        if not isinstance(t, _C.Tensor):
            raise TypeError(f"[{name}] expected Tensors, got {type(t).__name__} at position {i}")
    return list(args)


def meshgrid(*tensors, indexing: str | None = None) -> tuple:
    """Coordinate grids of 0-D or 1-D tensors (indexing 'ij', the default, or 'xy')."""
    return tuple(_C._meshgrid(_tensors(tensors, "meshgrid"), indexing=indexing))


def broadcast_tensors(*tensors) -> tuple:
    """The tensors broadcast to their common shape (views)."""
    return tuple(_C._broadcast_tensors(_tensors(tensors, "broadcast_tensors")))


def _atleast(fn, name: str):
    def wrapper(*tensors):
        if len(tensors) == 1 and isinstance(tensors[0], _C.Tensor):
            return fn(tensors[0])
        return tuple(fn(t) for t in _tensors(tensors, name))

    wrapper.__name__ = name
    wrapper.__doc__ = f"{name}: views with at least {name[-2]} dims (a tuple for several tensors)."
    return wrapper


atleast_1d = _atleast(_C._atleast_1d, "atleast_1d")
atleast_2d = _atleast(_C._atleast_2d, "atleast_2d")
atleast_3d = _atleast(_C._atleast_3d, "atleast_3d")


def _install() -> None:
    import flambeau_core

    for name in ("meshgrid", "broadcast_tensors", "atleast_1d", "atleast_2d", "atleast_3d"):
        setattr(flambeau_core, name, globals()[name])


_install()
