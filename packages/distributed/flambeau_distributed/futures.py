"""``Future``: the result of an asynchronous operation, shaped as ``torch.futures.Future``.

Communication hooks of ``DistributedDataParallel`` return one, and
``Work.get_future()`` gives one for a collective started with ``async_op=True``.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any, Generic, TypeVar

T = TypeVar("T")
S = TypeVar("S")


class Future(Generic[T]):
    """A value that becomes available later, as ``torch.futures.Future``.

    ``wait()`` blocks until it is set (and raises its error, if any),
    ``value()`` returns it once done, ``then(callback)`` returns a new Future
    holding ``callback(self)`` (run as soon as this one is done, on the thread
    that completes it), ``set_result``/``set_exception`` complete it.

    Example::

        >>> from flambeau_distributed.futures import Future
        >>> fut = Future()
        >>> doubled = fut.then(lambda f: f.value() * 2)
        >>> fut.set_result(21)
        >>> doubled.wait()
        42
    """

    def __init__(self) -> None:
        self._done = threading.Event()
        self._lock = threading.Lock()
        self._value: Any = None
        self._exc: BaseException | None = None
        self._callbacks: list[Callable[[Future[T]], None]] = []

    def done(self) -> bool:
        """Whether a result or an exception has been set.

        Example:
            >>> import flambeau as fb
            >>> fut = fb.distributed.Future()
            >>> fut.done()
            False
            >>> fut.set_result(1); fut.done()
            True
        """
        return self._done.is_set()

    def _complete(self, value: Any, exc: BaseException | None) -> None:
        with self._lock:
            if self._done.is_set():
                raise RuntimeError("[Future] the result of this Future has already been set")
            self._value, self._exc = value, exc
            self._done.set()
            callbacks, self._callbacks = self._callbacks, []
        for cb in callbacks:
            cb(self)

    def set_result(self, result: T) -> None:
        """Sets the value and runs the callbacks added so far.

        Example:
            >>> import flambeau as fb
            >>> fut = fb.distributed.Future()
            >>> fut.add_done_callback(lambda f: print("done with", f.value()))
            >>> fut.set_result(7)
            done with 7
        """
        self._complete(result, None)

    def set_exception(self, result: BaseException) -> None:
        """Completes with an error: ``wait()`` and ``value()`` raise it.

        Example:
            >>> import flambeau as fb
            >>> fut = fb.distributed.Future()
            >>> fut.set_exception(ValueError("bad input"))
            >>> try:
            ...     fut.wait()
            ... except ValueError as err:
            ...     print(err)
            bad input
        """
        if not isinstance(result, BaseException):
            raise TypeError(f"[Future.set_exception] expected an exception, got {type(result).__name__}")
        self._complete(None, result)

    def wait(self) -> T:
        """Blocks until the Future is done; returns its value or raises its error.

        Example:
            >>> import flambeau as fb
            >>> fut = fb.distributed.Future()
            >>> fut.set_result([1, 2])
            >>> fut.wait()
            [1, 2]
        """
        self._done.wait()
        if self._exc is not None:
            raise self._exc
        return self._value

    def value(self) -> T:
        """The value of a completed Future (raises its error); RuntimeError if it is not done yet.

        Example:
            >>> import flambeau as fb
            >>> fut = fb.distributed.Future()
            >>> try:
            ...     fut.value()
            ... except RuntimeError:
            ...     print("not done")
            not done
            >>> fut.set_result(3); fut.value()
            3
        """
        if not self._done.is_set():
            raise RuntimeError("[Future.value] the Future is not done yet; call wait() first")
        if self._exc is not None:
            raise self._exc
        return self._value

    def add_done_callback(self, callback: Callable[[Future[T]], None]) -> None:
        """Runs ``callback(self)`` once done (at once if it already is).

        Example:
            >>> import flambeau as fb
            >>> fut = fb.distributed.Future()
            >>> seen = []
            >>> fut.add_done_callback(lambda f: seen.append(f.value()))
            >>> fut.set_result("x")
            >>> fut.add_done_callback(lambda f: seen.append("at once"))  # already done: runs now
            >>> seen
            ['x', 'at once']
        """
        with self._lock:
            if not self._done.is_set():
                self._callbacks.append(callback)
                return
        callback(self)

    def then(self, callback: Callable[[Future[T]], S]) -> Future[S]:
        """A new Future holding ``callback(self)``; an error in the callback becomes its exception.

        Example:
            >>> import flambeau as fb
            >>> fut = fb.distributed.Future()
            >>> squared = fut.then(lambda f: f.value() ** 2)
            >>> fut.set_result(4)
            >>> squared.wait()
            16
        """
        out: Future[S] = Future()

        def run(fut: Future[T]) -> None:
            try:
                result = callback(fut)
            except BaseException as e:  # noqa: BLE001 (handed to the chained Future)
                out.set_exception(e)
            else:
                out.set_result(result)

        self.add_done_callback(run)
        return out


def _completed(value: Any) -> Future:
    fut: Future = Future()
    fut.set_result(value)
    return fut
