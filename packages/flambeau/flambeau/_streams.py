"""``torch.Stream`` and ``torch.Event``: a stream and an event of whichever device a program names, for code
that is written once for every accelerator.

``Stream(device)`` on an accelerator (``"cuda"``, a plug-in device such as ``"sim"``; None: the current
accelerator) is that device module's ``Stream`` (``fb.cuda.Stream``), and ``Event(device)`` its ``Event``; both
are instances of these classes (isinstance and issubclass say so, as torch's device classes subclass them). Without an
accelerator, or for ``"cpu"``, they are PyTorch's cpu stream and event: the one cpu stream (index -1, id 0),
which is always done, and an event that is always complete; recording an event, or making the stream wait
for another stream, raises torch's RuntimeError ("cpu backend doesn't support events.").

Example:
    >>> import flambeau as fb
    >>> s = fb.Stream("cpu")
    >>> s.query(), str(s.device), s.device_index, s.stream_id, isinstance(s, fb.Stream)
    (True, 'cpu', -1, 0, True)
"""

from __future__ import annotations

from typing import Any

import flambeau_core as fc
from flambeau_core import FlambeauError, _device_modules

__all__ = ["Event", "Stream"]

_NO_CPU_EVENTS = "cpu backend doesn't support events."


def _device_of(device: Any) -> Any:
    """The device a stream or event is made on: `device`, or the current accelerator's (the cpu without one)."""
    if device is None:
        accelerator = fc.accelerator.current_accelerator()
        if accelerator is None:
            return fc.device("cpu")
        index = fc.accelerator.current_device_index()
        return fc.device(accelerator.type, index)
    return fc.device(device)


class _AnyDevice(type):
    """isinstance(x, Stream) holds for a device module's stream too (fb.cuda.Stream), as torch.cuda.Stream is a
    subclass of torch.Stream; likewise for events."""

    _device_class: type

    def __instancecheck__(cls, obj: Any) -> bool:
        return super().__instancecheck__(obj) or isinstance(obj, cls._device_class)

    def __subclasscheck__(cls, sub: type) -> bool:
        return super().__subclasscheck__(sub) or issubclass(sub, cls._device_class)


class _OnCpu:
    """What the cpu stream and event share: the cpu is their device, and they are always done."""

    @property
    def device(self) -> Any:
        """The cpu."""
        return fc.device("cpu")

    def query(self) -> bool:
        """True: cpu work is done when its call returns.

        Example:
            >>> import flambeau as fb
            >>> fb.Event("cpu").query(), fb.Stream("cpu").query()
            (True, True)
        """
        return True

    def synchronize(self) -> None:
        """Returns at once.

        Example:
            >>> import flambeau as fb
            >>> fb.Event("cpu").synchronize() is None
            True
        """


class Stream(_OnCpu, metaclass=_AnyDevice):
    """Stream(device=None, *, priority=0)

    A stream of ``device`` (Note in this module): the device module's own ``Stream`` on an accelerator, the cpu
    stream otherwise.

    Example:
        >>> import flambeau as fb
        >>> fb.Stream("cpu") == fb.Stream("cpu"), fb.Stream("cpu").synchronize()
        (True, None)
    """

    _device_class = _device_modules._StreamBase

    def __new__(cls, device: Any = None, *, priority: int = 0) -> Any:
        where = _device_of(device)
        if where.type != "cpu":
            return fc.device_module(where.type).Stream(where, priority=priority)
        return super().__new__(cls)

    def __init__(self, device: Any = None, *, priority: int = 0) -> None:
        # device_type is c10's DeviceType number (cpu = 0), as torch's
        self.device_type, self.device_index, self.stream_id = 0, -1, 0

    def is_capturing(self) -> bool:
        """False: nothing records the cpu stream into a graph.

        Example:
            >>> import flambeau as fb
            >>> fb.Stream("cpu").is_capturing()
            False
        """
        return False

    def record_event(self, event: Any = None) -> Any:
        """Raises RuntimeError, as torch's: the cpu stream has no events.

        Example:
            >>> import flambeau as fb
            >>> try:
            ...     fb.Stream("cpu").record_event()
            ... except RuntimeError as e:
            ...     print(e)
            cpu backend doesn't support events.
        """
        raise FlambeauError(_NO_CPU_EVENTS)

    def wait_event(self, event: Any) -> None:
        """Returns at once: a cpu event is always complete.

        Example:
            >>> import flambeau as fb
            >>> fb.Stream("cpu").wait_event(fb.Event("cpu")) is None
            True
        """

    def wait_stream(self, stream: Any) -> None:
        """Raises RuntimeError, as torch's: waiting goes through an event, which the cpu lacks.

        Example:
            >>> import flambeau as fb
            >>> s = fb.Stream("cpu")
            >>> try:
            ...     s.wait_stream(s)
            ... except RuntimeError as e:
            ...     print(e)
            cpu backend doesn't support events.
        """
        raise FlambeauError(_NO_CPU_EVENTS)

    @property
    def native_handle(self) -> int:
        """Raises RuntimeError, as torch's: the cpu stream has no native handle."""
        raise FlambeauError("Backend doesn't support getting stream native handle.")

    def __enter__(self) -> Stream:
        return self

    def __exit__(self, *exc: object) -> None:
        return None

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Stream) and (
            getattr(other, "device_type", None),
            getattr(other, "device_index", None),
            getattr(other, "stream_id", None),
        ) == (self.device_type, self.device_index, self.stream_id)

    def __hash__(self) -> int:
        return hash((self.device_type, self.device_index, self.stream_id))

    def __repr__(self) -> str:
        return "flambeau.Stream device_type=cpu, device_index=-1, stream_id=0"


class Event(_OnCpu, metaclass=_AnyDevice):
    """Event(device=None, *, enable_timing=False, blocking=False, interprocess=False)

    An event of ``device``: the device module's own ``Event`` on an accelerator, else the cpu event, which is
    always complete and cannot be recorded.

    Example:
        >>> import flambeau as fb
        >>> e = fb.Event("cpu")
        >>> e.query(), e.synchronize(), e.event_id
        (True, None, 0)
    """

    _device_class = _device_modules._EventBase

    def __new__(
        cls, device: Any = None, *, enable_timing: bool = False, blocking: bool = False, interprocess: bool = False
    ) -> Any:
        where = _device_of(device)
        if where.type != "cpu":
            return fc.device_module(where.type).Event(enable_timing, blocking, interprocess)
        return super().__new__(cls)

    def __init__(
        self, device: Any = None, *, enable_timing: bool = False, blocking: bool = False, interprocess: bool = False
    ) -> None:
        self.event_id = 0
        self._timing = bool(enable_timing)

    def wait(self, stream: Any = None) -> None:
        """Returns at once: nothing to wait for.

        Example:
            >>> import flambeau as fb
            >>> fb.Event("cpu").wait() is None
            True
        """

    def record(self, stream: Any = None) -> None:
        """Raises RuntimeError, as torch's: the cpu has no events to record.

        Example:
            >>> import flambeau as fb
            >>> try:
            ...     fb.Event("cpu").record()
            ... except RuntimeError as e:
            ...     print(e)
            cpu backend doesn't support events.
        """
        raise FlambeauError(_NO_CPU_EVENTS)

    def elapsed_time(self, end_event: Any) -> float:
        """Raises, as torch's: ValueError unless both events were made with enable_timing, else RuntimeError
        (the cpu has no events to time).

        Example:
            >>> import flambeau as fb
            >>> try:
            ...     fb.Event("cpu").elapsed_time(fb.Event("cpu"))
            ... except ValueError as e:
            ...     print(e)
            Both events must be created with argument 'enable_timing=True'.
        """
        if not (self._timing and getattr(end_event, "_timing", False)):
            raise ValueError("Both events must be created with argument 'enable_timing=True'.")
        raise FlambeauError(_NO_CPU_EVENTS)

    def __repr__(self) -> str:
        return f"flambeau.Event device_type=cpu, device_index=-1, event_flag={int(self._timing)}, event_id=0"
