"""Python-level forms of shape ops that take their tensors as *args (PyTorch's signatures).

The ops themselves are declared in codegen/ops.yaml (``_meshgrid``, ``_broadcast_tensors``,
``_atleast_1d``...); these wrappers accept both ``f(a, b)`` and ``f([a, b])`` as PyTorch does.
"""

from __future__ import annotations

from flambeau_core import _C
from flambeau_core.overrides import is_tensor_like


def _tensors(args: tuple, name: str) -> list:
    if len(args) == 1 and isinstance(args[0], (list, tuple)):
        args = tuple(args[0])
    for i, t in enumerate(args):
        if not is_tensor_like(t):
            raise TypeError(f"[{name}] expected Tensors, got {type(t).__name__} at position {i}")
    return list(args)


def meshgrid(*tensors, indexing: str | None = None) -> tuple:
    """Coordinate grids of 0-D or 1-D tensors (indexing 'ij', the default, or 'xy').

    Example:
        >>> import flambeau as fb
        >>> x, y = fb.meshgrid(fb.tensor([1, 2]), fb.tensor([3, 4, 5]), indexing="ij")
        >>> x.tolist(), y.tolist()
        ([[1, 1, 1], [2, 2, 2]], [[3, 4, 5], [3, 4, 5]])
    """
    return tuple(_C._meshgrid(_tensors(tensors, "meshgrid"), indexing=indexing))


def broadcast_tensors(*tensors) -> tuple:
    """The tensors broadcast to their common shape (views).

    Example:
        >>> import flambeau as fb
        >>> a, b = fb.broadcast_tensors(fb.tensor([[1], [2]]), fb.tensor([3, 4]))
        >>> a.tolist(), b.tolist()
        ([[1, 1], [2, 2]], [[3, 4], [3, 4]])
    """
    return tuple(_C._broadcast_tensors(_tensors(tensors, "broadcast_tensors")))


def cartesian_prod(*tensors):
    """The cartesian product of 1-D tensors, one row per tuple (``itertools.product`` order).

    A single tensor is returned as is.

    Example:
        >>> import flambeau_core as fc
        >>> fc.cartesian_prod(fc.tensor([1, 2]), fc.tensor([3, 4])).tolist()
        [[1, 3], [1, 4], [2, 3], [2, 4]]
    """
    return _C._cartesian_prod(_tensors(tensors, "cartesian_prod"))


def block_diag(*tensors):
    """A block diagonal matrix of 0-, 1- and 2-D tensors, promoted to their common dtype.

    A 0-d tensor is a 1x1 block and a 1-D tensor of n elements a 1xn block.

    Example:
        >>> import flambeau_core as fc
        >>> fc.block_diag(fc.tensor([[1, 2]]), fc.tensor(3)).tolist()
        [[1, 2, 0], [0, 0, 3]]
    """
    tensors = _tensors(tensors, "block_diag")
    if not tensors:  # PyTorch's (1, 0) float tensor, on the default device
        return _C.empty(1, 0)
    return _C._block_diag(tensors)


def _atleast(fn, name: str):
    def wrapper(*tensors):
        if len(tensors) == 1 and isinstance(tensors[0], _C.Tensor):
            return fn(tensors[0])
        return tuple(fn(t) for t in _tensors(tensors, name))

    wrapper.__name__ = name
    ones = ", ".join(["1"] * int(name[-2]))
    wrapper.__doc__ = (
        f"{name}(*tensors)\n\nViews with at least {name[-2]} dims, size-1 dims added (a tuple for several "
        f"tensors).\n\nExample:\n    >>> import flambeau as fb\n    >>> fb.{name}(fb.tensor(1.0)).shape\n"
        f"    flambeau.Size([{ones}])\n"
    )
    return wrapper


atleast_1d = _atleast(_C._atleast_1d, "atleast_1d")
atleast_2d = _atleast(_C._atleast_2d, "atleast_2d")
atleast_3d = _atleast(_C._atleast_3d, "atleast_3d")


def _other_shape(other, name: str) -> tuple:
    if not is_tensor_like(other):  # a tensor-like (vmap's BatchedTensor) shows its own shape
        raise TypeError(f"[{name}] expected a Tensor as 'other', got {type(other).__name__}")
    return tuple(other.shape)


def view_as(self, other):
    """A view of ``self`` with the shape of ``other`` (``self.view(other.size())``).

    Example:
        >>> import flambeau_core as fc
        >>> fc.arange(6).view_as(fc.zeros(2, 3)).shape == (2, 3)
        True
    """
    return self.view(_other_shape(other, "view_as"))


def reshape_as(self, other):
    """``self`` reshaped to the shape of ``other`` (a view when possible, as ``reshape``).

    Example:
        >>> import flambeau_core as fc
        >>> fc.arange(6).reshape(2, 3).t().reshape_as(fc.zeros(6)).tolist()
        [0, 3, 1, 4, 2, 5]
    """
    return self.reshape(_other_shape(other, "reshape_as"))


def _install() -> None:
    import flambeau_core

    for name in (
        "meshgrid",
        "broadcast_tensors",
        "atleast_1d",
        "atleast_2d",
        "atleast_3d",
        "cartesian_prod",
        "block_diag",
    ):
        setattr(flambeau_core, name, globals()[name])
    _C.Tensor.view_as = view_as
    _C.Tensor.reshape_as = reshape_as


_install()
