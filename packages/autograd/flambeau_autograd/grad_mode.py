"""Grad-mode switches: ``no_grad``, ``enable_grad``, ``set_grad_enabled``, ``inference_mode``.

Grad mode is thread-local and lives in core (the dispatcher's "exclude
autograd" flag, Note [Dispatch]); these classes only flip it. Each works as a
context manager and as a decorator.

Example:
    >>> import flambeau_core as fc, flambeau_autograd as ag
    >>> x = fc.ones(2).requires_grad_()
    >>> with ag.no_grad():
    ...     y = x * 2
    >>> y.requires_grad
    False
"""

from __future__ import annotations

import functools
import inspect
from collections.abc import Callable
from typing import Any, TypeVar

import flambeau_core
from flambeau_core._C import _set_grad_enabled

F = TypeVar("F", bound=Callable[..., Any])

__all__ = ["no_grad", "enable_grad", "set_grad_enabled", "inference_mode", "is_grad_enabled"]


def is_grad_enabled() -> bool:
    """True unless gradients are disabled on this thread (``no_grad``)."""
    return flambeau_core.is_grad_enabled()


class _GradModeContext:
    """Base: a context manager that sets grad mode to ``self._mode`` and restores it."""

    _mode: bool = True

    def __enter__(self) -> None:
        self._prev = flambeau_core.is_grad_enabled()
        _set_grad_enabled(self._mode)

    def __exit__(self, *exc: object) -> None:
        _set_grad_enabled(self._prev)

    def clone(self) -> _GradModeContext:
        return self.__class__()

    def __call__(self, func: F) -> F:
        if inspect.isgeneratorfunction(func):

            @functools.wraps(func)
            def gen_wrapper(*args: Any, **kwargs: Any) -> Any:
                gen = func(*args, **kwargs)
                try:
                    with self.clone():
                        request = next(gen)
                    while True:
                        response = yield request
                        with self.clone():
                            request = gen.send(response)
                except StopIteration as e:
                    return e.value

            return gen_wrapper  # type: ignore[return-value]

        @functools.wraps(func)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            with self.clone():
                return func(*args, **kwargs)

        return wrapper  # type: ignore[return-value]


class no_grad(_GradModeContext):
    """Disables gradient recording on this thread: results of ops do not require grad.

    Example:
        >>> @no_grad()
        ... def evaluate(model, x):
        ...     return model(x)
    """

    _mode = False

    def __init__(self, orig_func: Callable | None = None) -> None:
        # Allow both @no_grad and @no_grad().
        self._orig = orig_func

    def __new__(cls, orig_func: Callable | None = None):  # type: ignore[no-untyped-def]
        if orig_func is not None and callable(orig_func):
            return cls()(orig_func)
        return super().__new__(cls)


class enable_grad(_GradModeContext):
    """Enables gradient recording inside a ``no_grad`` block (or as a decorator)."""

    _mode = True

    def __new__(cls, orig_func: Callable | None = None):  # type: ignore[no-untyped-def]
        if orig_func is not None and callable(orig_func):
            return cls()(orig_func)
        return super().__new__(cls)

    def __init__(self, orig_func: Callable | None = None) -> None:
        pass


class set_grad_enabled(_GradModeContext):
    """Sets grad mode to ``mode``; as PyTorch's, it takes effect when called, and
    also works as a context manager (restoring the previous mode on exit) and as a
    decorator.

    Example:
        >>> with set_grad_enabled(False):
        ...     assert not is_grad_enabled()
    """

    def __init__(self, mode: bool) -> None:
        self._mode = bool(mode)
        self._prev = flambeau_core.is_grad_enabled()
        _set_grad_enabled(self._mode)

    def __enter__(self) -> None:
        pass  # already set in __init__

    def __exit__(self, *exc: object) -> None:
        _set_grad_enabled(self._prev)

    def clone(self) -> set_grad_enabled:
        return self.__class__(self._mode)

    def __call__(self, func: F) -> F:
        # Used as a decorator: undo the immediate effect of __init__.
        _set_grad_enabled(self._prev)
        return super().__call__(func)


class inference_mode(_GradModeContext):
    """Like ``no_grad`` (flambeau has no separate inference tensors yet).

    ``inference_mode(False)`` leaves grad mode unchanged.
    """

    def __new__(cls, mode: Any = True):  # type: ignore[no-untyped-def]
        if callable(mode) and not isinstance(mode, bool):
            return cls()(mode)
        return super().__new__(cls)

    def __init__(self, mode: bool = True) -> None:
        self._enabled = bool(mode)

    def __enter__(self) -> None:
        self._prev = flambeau_core.is_grad_enabled()
        if self._enabled:
            _set_grad_enabled(False)

    def clone(self) -> inference_mode:
        return self.__class__(self._enabled)
