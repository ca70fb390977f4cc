"""PyTorch's helper names in ``torch.nn.functional`` that code written like PyTorch's own functions calls:
``boolean_dispatch``, ``assert_int_or_pair``, the ``has_torch_function*`` checks and ``Tensor``.

flambeau has no ``__torch_function__`` override protocol, so no argument ever overrides a function:
the checks return False, and ``handle_torch_function`` (only reached when they return True) raises.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from flambeau_core import Tensor

__all__ = [
    "Tensor",
    "boolean_dispatch",
    "assert_int_or_pair",
    "has_torch_function",
    "has_torch_function_unary",
    "has_torch_function_variadic",
    "handle_torch_function",
]


def boolean_dispatch(
    arg_name: str,
    arg_index: int,
    default: bool,
    if_true: Callable[..., Any],
    if_false: Callable[..., Any],
    module_name: str | None = None,
    func_name: str | None = None,
) -> Callable[..., Any]:
    """A function that calls ``if_true`` or ``if_false`` by a boolean argument (by keyword, else position).

    Example:
        >>> f = boolean_dispatch("twice", 1, False, lambda x, twice=True: 2 * x, lambda x, twice=False: x)
        >>> f(3), f(3, True), f(3, twice=True)
        (3, 6, 6)
    """

    def fn(*args: Any, **kwargs: Any) -> Any:
        if arg_name in kwargs:
            flag = kwargs[arg_name]
        elif arg_index < len(args):
            flag = args[arg_index]
        else:
            flag = default
        return if_true(*args, **kwargs) if flag else if_false(*args, **kwargs)

    fn.__doc__ = if_true.__doc__ or if_false.__doc__
    if module_name is not None:
        fn.__module__ = module_name
    if func_name is not None:
        fn.__name__ = func_name
    return fn


def assert_int_or_pair(arg: Any, arg_name: str, message: str) -> None:
    """Asserts ``arg`` is an int or a sequence of 2 (PyTorch's check; ``message`` formats ``arg_name``).

    Example:
        >>> assert_int_or_pair((1, 2), "kernel_size", "{} must be int or pair")
    """
    assert isinstance(arg, int) or len(arg) == 2, message.format(arg_name)


def has_torch_function(relevant_args: Any) -> bool:
    """False: flambeau tensors have no ``__torch_function__`` overrides.

    Example:
        >>> import flambeau_core as fc
        >>> import flambeau_nn.functional as F
        >>> F.has_torch_function((fc.ones(2),))
        False
    """
    return False


def has_torch_function_unary(arg: Any) -> bool:
    """False: flambeau tensors have no ``__torch_function__`` overrides.

    Example:
        >>> import flambeau_core as fc
        >>> import flambeau_nn.functional as F
        >>> F.has_torch_function_unary(fc.ones(2))
        False
    """
    return False


def has_torch_function_variadic(*args: Any) -> bool:
    """False: flambeau tensors have no ``__torch_function__`` overrides.

    Example:
        >>> import flambeau_core as fc
        >>> import flambeau_nn.functional as F
        >>> F.has_torch_function_variadic(fc.ones(2), fc.zeros(2))
        False
    """
    return False


def handle_torch_function(public_api: Callable[..., Any], relevant_args: Any, *args: Any, **kwargs: Any) -> Any:
    """Never needed (the ``has_torch_function*`` checks are False); raises if called.

    Example:
        >>> import flambeau_nn.functional as F
        >>> try:
        ...     F.handle_torch_function(F.relu, ())
        ... except NotImplementedError as e:
        ...     print(str(e).split(" flambeau")[0])
        [handle_torch_function]
    """
    raise NotImplementedError(
        f"[handle_torch_function] flambeau has no __torch_function__ overrides to dispatch {public_api!r} to"
    )
