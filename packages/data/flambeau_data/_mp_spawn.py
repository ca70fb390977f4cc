"""``spawn``: run a function in ``nprocs`` processes and propagate their failures (PyTorch's API).

Each child runs ``fn(i, *args)``. A child that raises writes its traceback
(text) to a file the parent made for it and exits with code 1; the parent's
``join`` then terminates the other children and raises
:class:`ProcessRaisedException` carrying that text. A child that dies
otherwise (a signal, ``os._exit``) raises :class:`ProcessExitedException`
naming the signal or the exit code. A file rather than a pipe carries the
traceback, so a long one can never block a dying child.
"""

from __future__ import annotations

import multiprocessing
import multiprocessing.connection
import os
import signal
import sys
import tempfile
import traceback
import warnings
from collections.abc import Callable
from typing import Any

__all__ = [
    "ProcessContext",
    "ProcessException",
    "ProcessExitedException",
    "ProcessRaisedException",
    "SpawnContext",
    "spawn",
    "start_processes",
]

_GRACE_S = 5.0  # how long the other children get to exit after SIGTERM before SIGKILL


class ProcessException(Exception):
    """A child of :func:`spawn` failed; ``error_index`` is its index, ``pid`` its process id.

    Example:
        >>> import operator
        >>> import flambeau as fb
        >>> try:  # each child runs operator.truediv(i, 0)
        ...     fb.multiprocessing.start_processes(operator.truediv, args=(0,), nprocs=1, start_method="fork")
        ... except fb.multiprocessing.ProcessException as e:
        ...     print(type(e).__name__, e.error_index, "ZeroDivisionError" in str(e))
        ProcessRaisedException 0 True
    """

    __slots__ = ["error_index", "pid"]

    def __init__(self, msg: str, error_index: int, pid: int) -> None:
        super().__init__(msg)
        self.msg = msg
        self.error_index = error_index
        self.pid = pid

    def __reduce__(self) -> Any:
        return type(self), (self.msg, self.error_index, self.pid)


class ProcessRaisedException(ProcessException):
    """A child raised an exception; the message holds its traceback.

    Example:
        >>> import operator
        >>> import flambeau as fb
        >>> try:  # each child runs operator.truediv(i, 0)
        ...     fb.multiprocessing.start_processes(operator.truediv, args=(0,), nprocs=1, start_method="fork")
        ... except fb.multiprocessing.ProcessRaisedException as e:
        ...     print(type(e).__name__, e.error_index, "ZeroDivisionError" in str(e))
        ProcessRaisedException 0 True
    """

    def __init__(self, msg: str, error_index: int, error_pid: int) -> None:
        super().__init__(msg, error_index, error_pid)


class ProcessExitedException(ProcessException):
    """A child exited with a non-zero code or was killed by a signal (``signal_name``, e.g. ``"SIGSEGV"``).

    Example:
        >>> import os
        >>> import flambeau as fb
        >>> try:  # each child runs os._exit(i + 3)
        ...     fb.multiprocessing.start_processes(lambda i: os._exit(i + 3), nprocs=1, start_method="fork")
        ... except fb.multiprocessing.ProcessExitedException as e:
        ...     print(e.error_index, e.exit_code, e.signal_name)
        0 3 None
    """

    __slots__ = ["exit_code", "signal_name"]

    def __init__(
        self, msg: str, error_index: int, error_pid: int, exit_code: int, signal_name: str | None = None
    ) -> None:
        super().__init__(msg, error_index, error_pid)
        self.exit_code = exit_code
        self.signal_name = signal_name

    def __reduce__(self) -> Any:
        return type(self), (self.msg, self.error_index, self.pid, self.exit_code, self.signal_name)


def _wrap(fn: Callable[..., Any], i: int, args: tuple[Any, ...], error_file: str) -> None:
    try:
        fn(i, *args)
    except KeyboardInterrupt:
        pass  # the parent is shutting the children down
    except BaseException:  # noqa: BLE001 (any failure, SystemExit included, is reported)
        exc = sys.exc_info()[1]
        if isinstance(exc, SystemExit) and exc.code in (None, 0):
            return
        with open(error_file, "w", encoding="utf-8") as f:
            f.write(traceback.format_exc())
        sys.exit(1)


class ProcessContext:
    """The processes of one :func:`start_processes` call; ``join`` waits for them and raises their failures.

    Example:
        >>> import flambeau as fb
        >>> ctx = fb.multiprocessing.start_processes(abs, nprocs=2, join=False, start_method="fork")
        >>> len(ctx.pids())
        2
        >>> while not ctx.join():
        ...     pass
    """

    def __init__(self, processes: list[Any], error_files: list[str]) -> None:
        self.processes = processes
        self.error_files = error_files
        self.sentinels = {p.sentinel: i for i, p in enumerate(processes)}

    def pids(self) -> list[int]:
        """The process ids of the children, in index order.

        Example:
            >>> import flambeau as fb
            >>> ctx = fb.multiprocessing.start_processes(abs, nprocs=3, join=False, start_method="fork")
            >>> pids = ctx.pids()
            >>> len(pids), all(isinstance(p, int) for p in pids)
            (3, True)
            >>> while not ctx.join():
            ...     pass
        """
        return [int(p.pid) for p in self.processes]

    def join(self, timeout: float | None = None) -> bool:
        """Waits (at most ``timeout`` seconds) for the processes; True once all have exited successfully.

        Raises ProcessRaisedException or ProcessExitedException for the first
        child that failed, after terminating the others.

        Example:
            >>> import flambeau as fb
            >>> ctx = fb.multiprocessing.start_processes(abs, nprocs=2, join=False, start_method="fork")
            >>> while not ctx.join(timeout=5.0):  # False while some child still runs
            ...     pass
            >>> ctx.join()  # all exited successfully
            True
        """
        if not self.sentinels:
            return True
        ready = multiprocessing.connection.wait(list(self.sentinels), timeout=timeout)
        error_index = None
        for sentinel in ready:
            index = self.sentinels.pop(sentinel)
            process = self.processes[index]
            process.join()
            if process.exitcode != 0:
                error_index = index
                break
        if error_index is None:
            done = not self.sentinels
            if done:
                self._remove_files()
            return done
        self._stop_others()
        failed = self.processes[error_index]
        text = ""
        try:
            with open(self.error_files[error_index], encoding="utf-8") as f:
                text = f.read()
        except OSError:
            pass
        self._remove_files()
        if not text:
            code = failed.exitcode
            if code is not None and code < 0:
                try:
                    name = signal.Signals(-code).name
                except ValueError:
                    name = f"<unknown signal {-code}>"
                raise ProcessExitedException(
                    f"process {error_index} terminated with signal {name}",
                    error_index=error_index,
                    error_pid=failed.pid,
                    exit_code=code,
                    signal_name=name,
                )
            raise ProcessExitedException(
                f"process {error_index} terminated with exit code {code}",
                error_index=error_index,
                error_pid=failed.pid,
                exit_code=code,
            )
        msg = f"\n\n-- Process {error_index} terminated with the following error:\n{text}"
        raise ProcessRaisedException(msg, error_index, failed.pid)

    def _stop_others(self) -> None:
        alive = [p for p in self.processes if p.is_alive()]
        for p in alive:
            p.terminate()
        for p in alive:
            p.join(_GRACE_S)
            if p.is_alive():
                p.kill()
                p.join()
        self.sentinels.clear()

    def _remove_files(self) -> None:
        for path in self.error_files:
            try:
                os.unlink(path)
            except OSError:
                pass
        self.error_files = [""] * len(self.error_files)


class SpawnContext(ProcessContext):
    """Kept for compatibility: what ``spawn(..., join=False)`` returned in older PyTorch.

    Example:
        >>> import warnings
        >>> import flambeau as fb
        >>> with warnings.catch_warnings(record=True) as caught:
        ...     warnings.simplefilter("always")
        ...     ctx = fb.multiprocessing.SpawnContext([], [])
        >>> caught[0].category.__name__, ctx.join()
        ('FutureWarning', True)
    """

    def __init__(self, processes: list[Any], error_files: list[str]) -> None:
        warnings.warn("SpawnContext is renamed to ProcessContext since 1.4 release.", FutureWarning, stacklevel=2)
        super().__init__(processes, error_files)


def start_processes(
    fn: Callable[..., Any],
    args: tuple[Any, ...] = (),
    nprocs: int = 1,
    join: bool = True,
    daemon: bool = False,
    start_method: str = "spawn",
) -> ProcessContext | None:
    """Starts ``nprocs`` processes running ``fn(i, *args)`` with ``start_method``; see :func:`spawn`.

    Example:
        >>> import flambeau as fb
        >>> fb.multiprocessing.start_processes(abs, nprocs=2, start_method="fork") is None  # joined
        True
    """
    if isinstance(nprocs, bool) or not isinstance(nprocs, int) or nprocs < 1:
        raise ValueError(f"[spawn] nprocs must be a positive int, got {nprocs!r}")
    if not callable(fn):
        raise TypeError(f"[spawn] fn must be callable, got {type(fn).__name__}")
    if not isinstance(args, tuple):
        raise TypeError(f"[spawn] args must be a tuple, got {type(args).__name__}")
    ctx = multiprocessing.get_context(start_method)
    processes: list[Any] = []
    error_files: list[str] = []
    try:
        for i in range(nprocs):
            fd, path = tempfile.mkstemp(prefix="flambeau_spawn_", suffix=".err")
            os.close(fd)
            error_files.append(path)
            p = ctx.Process(target=_wrap, args=(fn, i, args, path), daemon=daemon)
            p.start()
            processes.append(p)
    except BaseException:
        context = ProcessContext(processes, error_files)
        context._stop_others()
        context._remove_files()
        raise
    context = ProcessContext(processes, error_files)
    if not join:
        return context
    while not context.join():
        pass
    return None


def spawn(
    fn: Callable[..., Any],
    args: tuple[Any, ...] = (),
    nprocs: int = 1,
    join: bool = True,
    daemon: bool = False,
    start_method: str = "spawn",
) -> ProcessContext | None:
    """Runs ``fn(i, *args)`` for ``i`` in ``range(nprocs)``, each in a new process (PyTorch's ``spawn``).

    Args:
        fn: a picklable function (defined at module level) called as ``fn(i, *args)``.
        args: the arguments after the process index (tensors in them are shared, not copied).
        nprocs: how many processes.
        join: wait for them all (True), or return a :class:`ProcessContext` to ``join()`` later.
        daemon: start them as daemon processes.
        start_method: ``"spawn"`` (default), ``"fork"`` or ``"forkserver"``.

    Raises:
        ProcessRaisedException: a child raised; the message holds its traceback.
        ProcessExitedException: a child was killed by a signal (named) or exited with a non-zero code.

    Example:
        >>> import flambeau.multiprocessing as mp  # doctest: +SKIP
        >>> mp.spawn(train, args=(model,), nprocs=2)  # doctest: +SKIP
    """
    if start_method != "spawn":
        warnings.warn(
            f"This method only supports start_method=spawn (got: {start_method}).\n"
            "To use a different start_method use:\n\t\t"
            " flambeau.multiprocessing.start_processes(...)",
            FutureWarning,
            stacklevel=2,
        )
    return start_processes(fn, args, nprocs, join, daemon, start_method)
