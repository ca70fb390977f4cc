"""Grad-mode switches: ``no_grad``, ``enable_grad``, ``set_grad_enabled``, ``inference_mode`` (and its reader
``is_inference_mode_enabled``), ``set_multithreading_enabled``, ``enforce_grad_layout_policy``.

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

from flambeau_autograd import _C

F = TypeVar("F", bound=Callable[..., Any])

__all__ = [
    "no_grad",
    "enable_grad",
    "set_grad_enabled",
    "inference_mode",
    "is_grad_enabled",
    "is_inference_mode_enabled",
    "set_multithreading_enabled",
    "enforce_grad_layout_policy",
]


def is_grad_enabled() -> bool:
    """True unless gradients are disabled on this thread (``no_grad``).

    Example:
        >>> import flambeau as fb
        >>> fb.autograd.is_grad_enabled()
        True
        >>> with fb.no_grad():
        ...     print(fb.autograd.is_grad_enabled())
        False
    """
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
        """A new context of the same kind and mode, as PyTorch's (a decorator enters a fresh one per call).

        Example:
            >>> import flambeau as fb
            >>> ctx = fb.enable_grad()
            >>> other = ctx.clone()
            >>> type(other).__name__, other is ctx
            ('enable_grad', False)
        """
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
    """Enables gradient recording inside a ``no_grad`` block (or as a decorator).

    Example:
        >>> import flambeau as fb
        >>> x = fb.ones(2, requires_grad=True)
        >>> with fb.no_grad():
        ...     with fb.enable_grad():
        ...         y = x * 2
        >>> y.requires_grad
        True
        >>> @fb.enable_grad()
        ... def double(x):
        ...     return x * 2
        >>> with fb.no_grad():
        ...     z = double(x)
        >>> z.requires_grad
        True
    """

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
        """A new ``set_grad_enabled`` of the same mode; creating it sets that mode, as in PyTorch.

        Example:
            >>> import flambeau as fb
            >>> ctx = fb.set_grad_enabled(False)  # takes effect at once
            >>> with ctx.clone():
            ...     print(fb.is_grad_enabled())
            False
            >>> _ = fb.set_grad_enabled(True)  # back to the default
        """
        return self.__class__(self._mode)

    def __call__(self, func: F) -> F:
        # Used as a decorator: undo the immediate effect of __init__.
        _set_grad_enabled(self._prev)
        return super().__call__(func)


class inference_mode(_GradModeContext):
    """Like ``no_grad``, and the tensors made inside are inference tensors (``is_inference()`` is True).

    ``inference_mode(False)`` leaves grad mode unchanged. As PyTorch, a tensor made inside, and any view
    of it, reports ``is_inference()``; a view made inside of an ordinary tensor stays ordinary. Differs
    from PyTorch: an inference tensor may still be updated in place outside inference mode and used in
    autograd later (PyTorch raises RuntimeError for both).

    Example:
        >>> import flambeau as fb
        >>> x = fb.ones(2, requires_grad=True)
        >>> with fb.inference_mode():
        ...     y = x * 2
        >>> y.requires_grad, y.is_inference(), fb.is_inference_mode_enabled()
        (False, True, False)
        >>> with fb.inference_mode(False):
        ...     (x * 2).requires_grad
        True
    """

    def __new__(cls, mode: Any = True):  # type: ignore[no-untyped-def]
        if callable(mode) and not isinstance(mode, bool):
            return cls()(mode)
        return super().__new__(cls)

    def __init__(self, mode: bool = True) -> None:
        self._enabled = bool(mode)

    def __enter__(self) -> None:
        self._prev = flambeau_core.is_grad_enabled()
        self._prev_inference = is_inference_mode_enabled()
        flambeau_core._C._set_inference_mode(self._enabled)
        if self._enabled:
            _set_grad_enabled(False)

    def __exit__(self, *exc: object) -> None:
        flambeau_core._C._set_inference_mode(self._prev_inference)
        super().__exit__(*exc)

    def clone(self) -> inference_mode:
        """A new ``inference_mode`` with the same ``mode``.

        Example:
            >>> import flambeau as fb
            >>> with fb.inference_mode().clone():
            ...     print(fb.is_grad_enabled())
            False
        """
        return self.__class__(self._enabled)


def is_inference_mode_enabled() -> bool:
    """is_inference_mode_enabled() -> bool

    True inside an enabled :class:`inference_mode` region on this thread (``inference_mode(False)`` inside
    one turns it off again).

    Example:
        >>> with inference_mode():
        ...     is_inference_mode_enabled()
        True
        >>> is_inference_mode_enabled()
        False
    """
    return flambeau_core._C._is_inference_mode_enabled()


class set_multithreading_enabled(_GradModeContext):
    """set_multithreading_enabled(mode) -> context manager

    PyTorch's switch for running backward on a thread per device. flambeau's engine runs every backward on
    the calling thread, so the switch changes nothing here; it is recorded (``_is_multithreading_enabled``)
    and works, as PyTorch's, when called, as a context manager (restoring the previous setting on exit) and
    as a decorator.

    Example:
        >>> with set_multithreading_enabled(False):
        ...     _is_multithreading_enabled()
        False
        >>> _is_multithreading_enabled()
        True
    """

    def __init__(self, mode: bool) -> None:
        if not isinstance(mode, bool):
            raise TypeError(f"[set_multithreading_enabled] expected a bool mode, got {type(mode).__name__}")
        self._mode = mode
        self._prev_multithreading = _is_multithreading_enabled()
        _multithreading["enabled"] = mode

    def __enter__(self) -> None:
        pass  # already set in __init__

    def __exit__(self, *exc: object) -> None:
        _multithreading["enabled"] = self._prev_multithreading

    def clone(self) -> set_multithreading_enabled:
        """A new switch to the same mode (what the decorator enters on each call).

        Example:
            >>> set_multithreading_enabled(True).clone()._mode
            True
        """
        return self.__class__(self._mode)

    def __call__(self, func: F) -> F:
        _multithreading["enabled"] = self._prev_multithreading  # as a decorator: undo __init__'s effect
        return super().__call__(func)


_multithreading = {"enabled": True}


def _is_multithreading_enabled() -> bool:
    """True unless :class:`set_multithreading_enabled` turned the (recorded) setting off."""
    return _multithreading["enabled"]


class enforce_grad_layout_policy(_GradModeContext):
    """enforce_grad_layout_policy(enable=True) -> context manager

    PyTorch's switch for the gradient layout contract (Note [Gradient layout] in the engine): a leaf's
    ``.grad`` takes the leaf's strides. With ``enable=False`` the engine keeps a gradient it can take over
    (one nobody else holds) in the layout it came in instead of copying it into the leaf's; a gradient it
    must copy still gets the leaf's layout. Per thread; set on construction (so a call works alone) and
    restored on exit, and as a decorator per call, as PyTorch's.

    Example:
        >>> import flambeau as fb
        >>> p = fb.empty(2, 3, 4).permute(2, 0, 1).requires_grad_()
        >>> with fb.autograd.enforce_grad_layout_policy(False):
        ...     (p * 2).sum().backward()
        >>> p.grad.stride(), p.stride()
        ((6, 3, 1), (1, 12, 4))
    """

    def __init__(self, enable: bool = True) -> None:
        if not isinstance(enable, bool):
            raise TypeError(
                "set_grad_layout_enforcement_enabled(): argument 'enabled' (position 1) must be bool, not "
                f"{type(enable).__name__}"
            )
        self._mode = enable
        self._prev_layout = _C._is_grad_layout_enforcement_enabled()
        _C._set_grad_layout_enforcement_enabled(enable)

    def __enter__(self) -> None:
        pass  # already set in __init__

    def __exit__(self, *exc: object) -> None:
        _C._set_grad_layout_enforcement_enabled(self._prev_layout)

    def clone(self) -> enforce_grad_layout_policy:
        """A new switch to the same setting (what the decorator enters on each call).

        Example:
            >>> import flambeau as fb
            >>> fb.autograd.enforce_grad_layout_policy(True).clone()._mode
            True
        """
        return self.__class__(self._mode)

    def __call__(self, func: F) -> F:
        _C._set_grad_layout_enforcement_enabled(self._prev_layout)  # as a decorator: undo __init__'s effect
        return super().__call__(func)
