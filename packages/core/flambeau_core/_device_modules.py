"""Device modules: ``flambeau_core.cuda`` and ``flambeau_core.device_module(name)``.

Each device type (``"cuda"``, or a plug-in type such as the simulated ``"sim"``
device) gets a namespace with PyTorch's ``torch.cuda`` names: ``is_available``,
``device_count``, ``current_device``, ``set_device``, ``device`` (a context
manager), ``synchronize``, ``Stream``, ``Event``, ``current_stream``,
``default_stream``, ``set_stream``, ``stream`` (a context manager) and the memory
functions (``memory_allocated``, ``max_memory_allocated``, ``memory_reserved``,
``max_memory_reserved``, ``memory_stats``, ``memory_snapshot``, ``empty_cache``,
``reset_peak_memory_stats``) that the package providing the device's allocator
registers with :func:`register_memory_functions`.

Core holds only the device-generic parts (Note [Device backends] in
``flambeau/device_backend.h``); without a backend, ``is_available()`` is False,
``device_count()`` is 0 and everything else raises the error naming what is
missing ("flambeau-cuda is not installed", "no CUDA GPU is available").

Example:
    >>> import flambeau_core as fc
    >>> fc.cuda.is_available(), fc.cuda.device_count()
    (False, 0)
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from typing import Any

from flambeau_core import _C

__all__ = [
    "DeviceModule",
    "device_module",
    "manual_seed",
    "per_device_memory_functions",
    "register_memory_functions",
]

_MEMORY_NAMES = (
    "memory_allocated",
    "max_memory_allocated",
    "memory_reserved",
    "max_memory_reserved",
    "memory_stats",
    "memory_snapshot",
    "memory_summary",
    "empty_cache",
    "reset_peak_memory_stats",
    "reset_accumulated_memory_stats",
)
# Device-specific functions a backend's package may register too (flambeau-cuda).
# mem_get_info() -> (free, total) bytes of a device; empty_host_cache() releases the cached pinned host memory.
_BACKEND_NAMES = (
    "get_device_name",
    "manual_seed",
    "manual_seed_all",
    "initial_seed",
    "mem_get_info",
    "empty_host_cache",
)
_memory_functions: dict[str, dict[str, Callable[..., Any]]] = {}
_modules: dict[str, DeviceModule] = {}


def register_memory_functions(type_name: str, functions: dict[str, Callable[..., Any]]) -> None:
    """Registers the memory functions of a device type (called by the allocator's package).

    ``functions`` maps names such as ``"memory_allocated"`` to callables taking an
    optional ``device`` (index, string or device; None: the current device).
    """
    unknown = set(functions) - set(_MEMORY_NAMES) - set(_BACKEND_NAMES)
    if unknown:
        raise ValueError(
            f"[register_memory_functions] unknown names {sorted(unknown)}; "
            f"expected some of {_MEMORY_NAMES + _BACKEND_NAMES}"
        )
    _memory_functions[type_name] = dict(functions)


def per_device_memory_functions(allocator: Callable[[Any], Any]) -> dict[str, Callable[..., Any]]:
    """The memory functions one device's allocator answers, for a backend's package to register.

    ``allocator(device)`` maps the ``device`` argument (index, string, device or
    None: the current one) to that device's caching allocator. Everything in
    ``_MEMORY_NAMES`` but ``memory_snapshot`` and ``empty_cache``, which span
    every device and the pinned pool: the backend adds those itself.
    """

    def per_device(method: str) -> Callable[..., Any]:
        def f(device: Any = None) -> Any:
            return getattr(allocator(device), method)()

        f.__name__ = method
        return f

    return {n: per_device(n) for n in _MEMORY_NAMES if n not in ("memory_snapshot", "empty_cache")}


def manual_seed(seed: int) -> None:
    """Seeds the default (cpu) generator and every registered device's generators, as ``torch.manual_seed``.

    A device's package takes part by registering ``manual_seed_all``
    (flambeau-cuda does); the cpu seed is validated and set first, so a bad
    seed raises before any device is touched.

    Example:
        >>> import flambeau_core as fc
        >>> fc.manual_seed(0); a = fc.rand(2)
        >>> fc.manual_seed(0); bool((a == fc.rand(2)).all())
        True
    """
    _C.manual_seed(seed)
    for functions in list(_memory_functions.values()):
        seed_all = functions.get("manual_seed_all")
        if seed_all is not None:
            seed_all(int(seed))


def device_module(name: str) -> DeviceModule:
    """The ``torch.cuda``-shaped namespace of a device type: ``"cuda"`` or a registered plug-in name.

    Raises ``ValueError`` for an unknown name.

    Example:
        >>> import flambeau_core as fc
        >>> fc.device_module("cuda") is fc.cuda
        True
    """
    if not isinstance(name, str):
        raise TypeError(f"[device_module] expected a device type name (str), got {type(name).__name__}")
    if name == "cpu":
        raise ValueError("[device_module] the cpu has no device module (no streams or device memory)")
    if name not in _modules:
        if name != "cuda" and name != _C._plugin_device_name():
            plugin = _C._plugin_device_name()
            known = "'cuda'" + (f" or '{plugin}'" if plugin else "")
            raise ValueError(f"[device_module] unknown device type '{name}'; expected {known}")
        _modules[name] = DeviceModule(name)
    return _modules[name]


def get_device_module(device: Any = None) -> Any:
    """get_device_module(device=None) -> module

    The module of a device type, as ``torch.get_device_module``: ``flambeau.cpu`` for ``"cpu"``,
    ``flambeau.cuda`` for ``"cuda"``, a registered plug-in device's module for its name; ``device`` is a
    type name, a device string such as ``"cuda:1"`` or a :class:`device`. Without one, the current
    accelerator's module, or ``flambeau.cpu`` where there is none.

    Example:
        >>> import flambeau_core as fc
        >>> fc.get_device_module("cpu") is fc.cpu, fc.get_device_module(fc.device("cuda")) is fc.cuda
        (True, True)
    """
    if device is None:
        from flambeau_core import accelerator

        current = accelerator.current_accelerator()
        name = "cpu" if current is None else current.type
    elif isinstance(device, _C.device):
        name = device.type
    elif isinstance(device, str):
        name = device.split(":", 1)[0]
    else:
        raise TypeError(f"[get_device_module] expected a device, a device string or None, got {type(device).__name__}")
    if name == "cpu":
        from flambeau_core import cpu

        return cpu
    try:
        return device_module(name)
    except ValueError as e:
        raise ValueError(str(e).replace("[device_module]", "[get_device_module]", 1)) from None


class _StreamBase:
    """A device stream (``torch.cuda.Stream``): work on one stream runs in order.

    Example:
        >>> import flambeau as fb
        >>> if fb.cuda.is_available():
        ...     s = fb.cuda.Stream()
        ...     with fb.cuda.stream(s):
        ...         y = fb.ones(1000, device="cuda") * 2  # enqueued on s
        ...     s.synchronize()
        ...     print(y.sum().item())
        ... else:
        ...     print(2000.0)  # the same on the cpu
        2000.0
    """

    _type = ""

    def __new__(cls, device: Any = None, priority: int = 0, **kwargs: Any) -> Any:
        self = object.__new__(cls)
        handle = kwargs.pop("_handle", None)
        if kwargs:
            raise TypeError(f"[Stream] unexpected keyword argument '{next(iter(kwargs))}'")
        if handle is None:
            if not isinstance(priority, int) or isinstance(priority, bool):
                raise TypeError(f"[Stream] priority must be an int, got {type(priority).__name__}")
            handle = _C._new_stream(cls._type, device, priority)
        self._s = handle
        return self

    @property
    def device(self) -> Any:
        return self._s.device

    @property
    def stream_id(self) -> int:
        return self._s.stream_id

    def query(self) -> bool:
        """True if all work enqueued on this stream has completed.

        Example:
            >>> import flambeau as fb
            >>> if fb.cuda.is_available():
            ...     s = fb.cuda.Stream()
            ...     s.synchronize()
            ...     print(s.query())
            ... else:
            ...     print(True)
            True
        """
        return self._s.query()

    def synchronize(self) -> None:
        """Waits for all work enqueued on this stream.

        Example:
            >>> import flambeau as fb
            >>> if fb.cuda.is_available():
            ...     s = fb.cuda.Stream()
            ...     with fb.cuda.stream(s):
            ...         y = fb.ones(100, device="cuda") + 1
            ...     s.synchronize()  # y is computed
            ...     print(y.sum().item())
            ... else:
            ...     print(200.0)
            200.0
        """
        self._s.synchronize()

    def wait_event(self, event: Any) -> None:
        """Makes work enqueued on this stream from now on wait for ``event``.

        Example:
            >>> import flambeau as fb
            >>> if fb.cuda.is_available():
            ...     e = fb.cuda.current_stream().record_event()
            ...     s = fb.cuda.Stream()
            ...     s.wait_event(e)  # s's later work starts after e
            ...     s.synchronize()
            ...     print(e.query())
            ... else:
            ...     print(True)
            True
        """
        _check_event(event, "Stream.wait_event")
        self._s.wait_event(event._e)

    def wait_stream(self, stream: Any) -> None:
        """Makes work enqueued on this stream from now on wait for the work enqueued on ``stream`` so far.

        Example:
            >>> import flambeau as fb
            >>> if fb.cuda.is_available():
            ...     s = fb.cuda.Stream()
            ...     s.wait_stream(fb.cuda.current_stream())
            ...     s.synchronize()
            ...     print(s.query())
            ... else:
            ...     print(True)
            True
        """
        if not isinstance(stream, _StreamBase):
            raise TypeError(f"[Stream.wait_stream] expected a Stream, got {type(stream).__name__}")
        self.wait_event(stream.record_event())

    def record_event(self, event: Any = None) -> Any:
        """Records ``event`` (a new one if None) on this stream and returns it.

        Example:
            >>> import flambeau as fb
            >>> if fb.cuda.is_available():
            ...     e = fb.cuda.current_stream().record_event()
            ...     e.synchronize()
            ...     print(e.query())
            ... else:
            ...     print(True)
            True
        """
        if event is None:
            event = _modules[self._type].Event()
        event.record(self)
        return event

    def __eq__(self, other: object) -> bool:
        return isinstance(other, _StreamBase) and self.device == other.device and self.stream_id == other.stream_id

    def __hash__(self) -> int:
        return hash((str(self.device), self.stream_id))

    def __repr__(self) -> str:
        return f"<flambeau.{self._type}.Stream device={self.device} stream_id={self.stream_id}>"


def _check_event(event: Any, op: str) -> None:
    if not isinstance(event, _EventBase):
        raise TypeError(f"[{op}] expected an Event, got {type(event).__name__}")


class _EventBase:
    """A device event (``torch.cuda.Event``): a marker in a stream's work.

    Example:
        >>> import flambeau as fb
        >>> if fb.cuda.is_available():
        ...     start, end = fb.cuda.Event(enable_timing=True), fb.cuda.Event(enable_timing=True)
        ...     start.record()
        ...     y = fb.ones(1000, device="cuda") @ fb.ones(1000, device="cuda")
        ...     end.record()
        ...     end.synchronize()
        ...     print(start.elapsed_time(end) >= 0)
        ... else:
        ...     print(True)
        True
    """

    _type = ""

    def __init__(self, enable_timing: bool = False, blocking: bool = False, interprocess: bool = False) -> None:
        if interprocess:
            raise NotImplementedError(f"[Event] interprocess events are not supported on {self._type}")
        self._e = _C._Event(bool(enable_timing))

    def record(self, stream: Any = None) -> None:
        """Records the event on ``stream`` (the current stream if None).

        Example:
            >>> import flambeau as fb
            >>> if fb.cuda.is_available():
            ...     e = fb.cuda.Event()
            ...     e.record()  # on the current stream
            ...     e.synchronize()
            ...     print(e.query())
            ... else:
            ...     print(True)
            True
        """
        if stream is None:
            stream = _modules[self._type].current_stream()
        if not isinstance(stream, _StreamBase):
            raise TypeError(f"[Event.record] expected a Stream, got {type(stream).__name__}")
        self._e.record(stream._s)

    def wait(self, stream: Any = None) -> None:
        """Makes work enqueued on ``stream`` (the current stream if None) from now on wait for this event.

        Example:
            >>> import flambeau as fb
            >>> if fb.cuda.is_available():
            ...     e = fb.cuda.Event()
            ...     e.record()
            ...     s = fb.cuda.Stream()
            ...     e.wait(s)
            ...     s.synchronize()
            ...     print(s.query())
            ... else:
            ...     print(True)
            True
        """
        if stream is None:
            stream = _modules[self._type].current_stream()
        stream.wait_event(self)

    def query(self) -> bool:
        """True if the work recorded before this event has completed (True if never recorded).

        Example:
            >>> import flambeau as fb
            >>> if fb.cuda.is_available():
            ...     e = fb.cuda.Event()
            ...     print(e.query())  # never recorded
            ... else:
            ...     print(True)
            True
        """
        return self._e.query()

    def synchronize(self) -> None:
        """Waits for the work recorded before this event.

        Example:
            >>> import flambeau as fb
            >>> if fb.cuda.is_available():
            ...     e = fb.cuda.Event()
            ...     e.record()
            ...     e.synchronize()
            ...     print(e.query())
            ... else:
            ...     print(True)
            True
        """
        self._e.synchronize()

    def elapsed_time(self, end_event: Any) -> float:
        """Milliseconds between this event and ``end_event`` (both recorded with enable_timing=True, completed).

        Example:
            >>> import flambeau as fb
            >>> if fb.cuda.is_available():
            ...     start, end = fb.cuda.Event(enable_timing=True), fb.cuda.Event(enable_timing=True)
            ...     start.record(); end.record(); end.synchronize()
            ...     print(start.elapsed_time(end) >= 0.0)
            ... else:
            ...     print(True)
            True
        """
        _check_event(end_event, "Event.elapsed_time")
        return self._e.elapsed_time(end_event._e)

    def __repr__(self) -> str:
        return f"<flambeau.{self._type}.Event recorded={self._e._recorded}>"


class DeviceModule:
    """The ``torch.cuda``-shaped namespace of one device type (see the module docstring)."""

    # torch.cuda.OutOfMemoryError is torch.OutOfMemoryError: every allocator raises the one class.
    OutOfMemoryError = _C.OutOfMemoryError

    def __init__(self, type_name: str) -> None:
        self._type = type_name
        # The per-type classes carry the base's docstring: a class made by type() has none of its own.
        module = f"flambeau.{type_name}"
        self.Stream = type(
            "Stream", (_StreamBase,), {"_type": type_name, "__module__": module, "__doc__": _StreamBase.__doc__}
        )
        self.Event = type(
            "Event", (_EventBase,), {"_type": type_name, "__module__": module, "__doc__": _EventBase.__doc__}
        )
        self.StreamContext = _stream_context_class(self)

    def __repr__(self) -> str:
        return f"<flambeau device module '{self._type}'>"

    # ---- devices ----
    def is_available(self) -> bool:
        """True if a backend is registered and reports at least one device.

        Example:
            >>> import flambeau as fb
            >>> device = "cuda" if fb.cuda.is_available() else "cpu"
            >>> fb.ones(2, device=device).sum().item()
            2.0
        """
        return _C._device_count(self._type) > 0

    def is_initialized(self) -> bool:
        """True once the device type can be used: here, whenever :meth:`is_available` is (no lazy initialization).

        Example:
            >>> import flambeau as fb
            >>> fb.cuda.is_initialized() == fb.cuda.is_available()
            True
        """
        return self.is_available()

    def device_count(self) -> int:
        """Number of devices (0 without a backend).

        Example:
            >>> import flambeau as fb
            >>> (fb.cuda.device_count() > 0) == fb.cuda.is_available()
            True
        """
        return _C._device_count(self._type)

    def current_device(self) -> int:
        """Index of the current device of this thread.

        Example:
            >>> import flambeau as fb
            >>> if fb.cuda.is_available():
            ...     print(0 <= fb.cuda.current_device() < fb.cuda.device_count())
            ... else:
            ...     print(True)  # without a GPU it raises
            True
        """
        return _C._current_device(self._type)

    def set_device(self, device: Any) -> None:
        """Makes ``device`` (an index, a string or a device) current on this thread.

        Example:
            >>> import flambeau as fb
            >>> if fb.cuda.is_available():
            ...     fb.cuda.set_device(0)
            ...     print(fb.cuda.current_device())
            ... else:
            ...     print(0)
            0
        """
        _C._set_device(self._type, device)

    def _index(self, device: Any) -> int:
        if device is None:
            return self.current_device()
        if isinstance(device, int) and not isinstance(device, bool):
            _C._require_device(f"{self._type}:{device}")
            return device
        d = _C.device(device) if isinstance(device, str) else device
        if not isinstance(d, _C.device):
            raise TypeError(f"[{self._type}] expected a device index, string or device, got {type(device).__name__}")
        if d.type != self._type:
            raise ValueError(f"[{self._type}] expected a {self._type} device, got {d}")
        _C._require_device(str(d))
        return self.current_device() if d.index is None else d.index

    @contextlib.contextmanager
    def device(self, device: Any) -> Iterator[None]:
        """Context manager: makes ``device`` current, restores the previous one on exit.

        Example:
            >>> import flambeau as fb
            >>> if fb.cuda.is_available():
            ...     with fb.cuda.device(0):
            ...         print(fb.cuda.current_device())
            ... else:
            ...     print(0)
            0
        """
        index = self._index(device)
        prev = self.current_device()
        self.set_device(index)
        try:
            yield
        finally:
            self.set_device(prev)

    def get_device_name(self, device: Any = None) -> str:
        """The name of ``device`` (the current device if None): the GPU's name with flambeau-cuda.

        Example:
            >>> import flambeau as fb
            >>> if fb.cuda.is_available():
            ...     print(isinstance(fb.cuda.get_device_name(0), str))
            ... else:
            ...     print(True)
            True
        """
        registered = _memory_functions.get(self._type, {}).get("get_device_name")
        if registered is not None:
            return registered(device)
        return f"flambeau {self._type} device {self._index(device)}"

    def synchronize(self, device: Any = None) -> None:
        """Waits for all work on all streams of ``device`` (the current device if None).

        Example:
            >>> import flambeau as fb
            >>> if fb.cuda.is_available():
            ...     y = fb.ones(1000, device="cuda") * 3
            ...     fb.cuda.synchronize()  # every stream's work is done
            ...     print(y[0].item())
            ... else:
            ...     print(3.0)
            3.0
        """
        _C._synchronize(self._type, device)

    # ---- streams ----
    def current_stream(self, device: Any = None) -> Any:
        """The current stream of ``device`` on this thread (its default stream unless set).

        Example:
            >>> import flambeau as fb
            >>> if fb.cuda.is_available():
            ...     print(fb.cuda.current_stream() == fb.cuda.default_stream())
            ... else:
            ...     print(True)  # unless a stream was set
            True
        """
        return self.Stream(_handle=_C._current_stream(self._type, device))

    def default_stream(self, device: Any = None) -> Any:
        """The default stream of ``device`` (stream_id 0).

        Example:
            >>> import flambeau as fb
            >>> if fb.cuda.is_available():
            ...     print(fb.cuda.default_stream().stream_id)
            ... else:
            ...     print(0)
            0
        """
        return self.Stream(_handle=_C._default_stream(self._type, device))

    def set_stream(self, stream: Any) -> None:
        """Makes ``stream`` the current stream of its device on this thread.

        Example:
            >>> import flambeau as fb
            >>> if fb.cuda.is_available():
            ...     s = fb.cuda.Stream()
            ...     fb.cuda.set_stream(s)
            ...     print(fb.cuda.current_stream() == s)
            ...     fb.cuda.set_stream(fb.cuda.default_stream())
            ... else:
            ...     print(True)
            True
        """
        if not isinstance(stream, _StreamBase) or stream._type != self._type:
            raise TypeError(f"[set_stream] expected a flambeau.{self._type}.Stream, got {type(stream).__name__}")
        _C._set_stream(stream._s)

    def stream(self, stream: Any) -> Any:
        """Context manager: makes ``stream`` (and its device) current; None does nothing.

        Example:
            >>> import flambeau as fb
            >>> if fb.cuda.is_available():
            ...     s = fb.cuda.Stream()
            ...     with fb.cuda.stream(s):
            ...         print(fb.cuda.current_stream() == s)
            ... else:
            ...     print(True)
            True
        """
        return self.StreamContext(stream)

    # ---- memory ----
    def __getattr__(self, name: str) -> Any:
        if name in _MEMORY_NAMES or (name in _BACKEND_NAMES and name != "get_device_name"):
            type_name = self._type

            def memory_function(*args: Any, **kwargs: Any) -> Any:
                funcs = _memory_functions.get(type_name)
                if funcs is None or name not in funcs:
                    _C._require_device(type_name)  # raises "not installed" / "no GPU" first
                    raise RuntimeError(f"[{name}] no allocator of {type_name} memory provides {name}")
                return funcs[name](*args, **kwargs)

            memory_function.__name__ = name
            return memory_function
        raise AttributeError(f"flambeau.{self._type} has no attribute '{name}'")


def _stream_context_class(module: DeviceModule) -> type:
    class StreamContext:
        """Makes a stream (and its device) current inside a ``with`` block (``torch.cuda.StreamContext``).

        Example:
            >>> import flambeau as fb
            >>> if fb.cuda.is_available():
            ...     s = fb.cuda.Stream()
            ...     with fb.cuda.StreamContext(s) as current:
            ...         print(current == s)
            ... else:
            ...     print(True)
            True
        """

        def __init__(self, stream: Any) -> None:
            if stream is not None and (not isinstance(stream, _StreamBase) or stream._type != module._type):
                raise TypeError(
                    f"[stream] expected a flambeau.{module._type}.Stream or None, got {type(stream).__name__}"
                )
            self.stream = stream

        def __enter__(self) -> Any:
            if self.stream is None:
                return None
            self._prev_device = module.current_device()
            device = self.stream.device
            self._prev_stream = module.current_stream(device)
            module.set_device(device.index)
            module.set_stream(self.stream)
            return self.stream

        def __exit__(self, *exc: object) -> None:
            if self.stream is None:
                return
            module.set_stream(self._prev_stream)
            module.set_device(self._prev_device)

    return StreamContext


def _tensor_cpu(self: Any, memory_format: Any = None) -> Any:
    """A copy on the cpu (self if already there).

    Example:
        >>> import flambeau as fb
        >>> x = fb.tensor([1.0, 2.0])
        >>> x.cpu() is x, x.cpu().device.type
        (True, 'cpu')
    """
    return self.to("cpu")


def _tensor_cuda(self: Any, device: Any = None, non_blocking: bool = False) -> Any:
    """A copy on a CUDA device (raises "flambeau-cuda is not installed" without a backend).

    ``device`` is a device or an index (the current CUDA device if None).

    Example:
        >>> import flambeau as fb
        >>> x = fb.tensor([1.0, 2.0])
        >>> y = x.cuda() if fb.cuda.is_available() else x  # stays on the cpu without a GPU
        >>> y.cpu().tolist()
        [1.0, 2.0]
    """
    if device is None:
        device = "cuda"
    elif isinstance(device, int) and not isinstance(device, bool):
        device = f"cuda:{device}"
    return self.to(device, non_blocking=non_blocking)


def install_tensor_methods() -> None:
    _C.Tensor.cpu = _tensor_cpu
    _C.Tensor.cuda = _tensor_cuda
    _C.Tensor.is_cuda = property(lambda self: self.device.type == "cuda")
    # PyTorch's other device predicates, asked by device-agnostic programs (is_cpu is the binding's); the
    # device types flambeau has no backend for answer False.
    for kind in ("mps", "xpu", "meta", "xla", "ipu", "mtia", "maia", "vulkan"):
        setattr(_C.Tensor, f"is_{kind}", property(lambda self, kind=kind: self.device.type == kind))
