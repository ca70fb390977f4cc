"""The op recorder: every op a Python program calls, with its arguments and result (private API).

While :func:`record_ops` is active on a thread, each op called from Python on
that thread (a ``flambeau_core`` function, a Tensor method, an operator such
as ``a + b``) is reported to a callback after it ran, as
``callback(name, args, kwargs, result)``; ops that C++ runs inside another op
are not (Note [Op recorder] in ``src/python/op_recorder.h``, and
``docs/design/tracing.md``). It is the capture mechanism under
``flambeau.onnx.export`` and ``flambeau.compile``. When no recorder is active,
an op pays one predictable branch. While the callback runs, :func:`call_info`
says whether the call was a Tensor method or a function, and hands a write's
tensor as it was before the write.

Example:
    >>> import flambeau_core as fc
    >>> from flambeau_core._trace import OpRecorder
    >>> a, b = fc.ones(2), fc.ones(2)
    >>> with OpRecorder() as rec:
    ...     c = (a + b).relu()
    >>> [call.name for call in rec.calls]
    ['add', 'relu']
    >>> rec.calls[1].args[0] is rec.calls[0].result
    True
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any, NamedTuple

from flambeau_core import _C

__all__ = ["OpCall", "OpRecorder", "call_info", "record_ops"]


class OpCall(NamedTuple):
    """One recorded op call: its Python name, the arguments as passed (``self`` first), and its result.

    ``method``: the arguments follow the Tensor method's signature (``x.where(c, y)`` -> ``(x, c, y)``), not the
    function's (``fb.where(c, x, y)``, and operators: ``2 - x`` -> ``(2, x)``). ``before``: for a write that
    :func:`call_info` reports it for (``x[i] = v``, ``index_put_``, ``fill_``, ``uniform_``, ``normal_``), a
    copy of the written tensor as it was before the write; else None.
    """

    name: str
    args: tuple[Any, ...]
    kwargs: dict[str, Any]
    result: Any
    method: bool = False
    before: Any = None


def call_info() -> tuple[bool, Any] | None:
    """``(method, before)`` of the call a recorder callback is being told about (see :class:`OpCall`), or None
    outside a callback.

    Example:
        >>> import flambeau_core as fc
        >>> x, seen = fc.zeros(2), []
        >>> with record_ops(lambda name, args, kwargs, result: seen.append((name, *call_info()))):
        ...     x[0] = 1.0
        >>> seen[0][0], seen[0][1], seen[0][2].tolist()
        ('__setitem__', True, [0.0, 0.0])
    """
    return _C._op_call_info()


@contextlib.contextmanager
def record_ops(callback: Callable[[str, tuple[Any, ...], dict[str, Any] | None, Any], Any]) -> Iterator[None]:
    """Reports every op this thread calls from Python to ``callback(name, args, kwargs, result)`` meanwhile.

    Recorders nest: the inner one replaces the outer one until it exits. An exception the callback
    raises propagates out of the op call that reported it.

    Example:
        >>> import flambeau_core as fc
        >>> names = []
        >>> with record_ops(lambda name, args, kwargs, result: names.append(name)):
        ...     _ = fc.ones(3).view(3, 1).sum()
        >>> names
        ['view', 'sum']
    """
    if not callable(callback):
        raise TypeError(f"[record_ops] expected a callable, got {type(callback).__name__}")
    previous = _C._set_op_recorder(callback)
    try:
        yield
    finally:
        _C._set_op_recorder(previous)


class OpRecorder:
    """A context manager that collects the op calls made inside it as :class:`OpCall` in ``calls``.

    The results (and arguments) are kept alive, so tensor identities stay unique while ``calls`` lives.

    Example:
        >>> import flambeau_core as fc
        >>> with OpRecorder() as rec:
        ...     y = fc.zeros(2, 3).transpose(0, 1)
        >>> rec.calls[0].name, rec.calls[0].args[1:]
        ('transpose', (0, 1))
    """

    def __init__(self) -> None:
        self.calls: list[OpCall] = []
        self._scope: contextlib.AbstractContextManager[None] | None = None

    def _record(self, name: str, args: tuple[Any, ...], kwargs: dict[str, Any] | None, result: Any) -> None:
        method, before = _C._op_call_info() or (False, None)
        self.calls.append(OpCall(name, args, kwargs or {}, result, method, before))

    def __enter__(self) -> OpRecorder:
        if self._scope is not None:
            raise RuntimeError("[OpRecorder] is already recording; use a new OpRecorder to nest")
        self._scope = record_ops(self._record)
        self._scope.__enter__()
        return self

    def __exit__(self, *exc: object) -> None:
        scope, self._scope = self._scope, None
        assert scope is not None
        scope.__exit__(*exc)
