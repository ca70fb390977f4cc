"""``flambeau.profiler``: PyTorch's profiler API over core's recorder.

Every op that goes through the dispatcher, every ``record_function`` range,
every node the autograd engine runs, the DataLoader's batches and (with
``profile_memory``) every allocation and free are recorded per thread while a
profile is active (Note [Observation] in flambeau/observe.h); when none is, the
dispatcher pays one branch per op. Results read as in PyTorch:
``prof.key_averages().table()``, ``prof.export_chrome_trace(path)`` (Perfetto,
chrome://tracing), ``prof.export_memory_timeline(path)``.

Device activity (``ProfilerActivity.PrivateUse1``: a plug-in device such as the
simulated ``sim``; flambeau-cuda's kernels are not recorded yet, so
``ProfilerActivity.CUDA`` warns): each kernel a device stream runs is an event on
the stream's thread, with its start and end there, linked to the
op that launched it (``FunctionEvent.launched_by``, the trace's flow arrows) and
counted as device time in the table. With ``num_workers > 0`` the DataLoader's
workers record their batches too; their events carry the worker's ``pid``.

Example:
    >>> import flambeau_core as fb
    >>> from flambeau_core.profiler import profile, record_function, ProfilerActivity
    >>> with profile(activities=[ProfilerActivity.CPU], record_shapes=True) as prof:
    ...     with record_function("step"):
    ...         y = fb.ones(16, 16).mm(fb.ones(16, 16))
    >>> sorted({e.key for e in prof.key_averages()} & {"step", "aten::mm"})
    ['aten::mm', 'step']
"""

from __future__ import annotations

import contextlib
import enum
import gc
import os
import socket
import time
import warnings
from collections.abc import Callable, Iterable
from typing import Any

from flambeau_core import _C
from flambeau_core._C import FlambeauError

from ._events import KIND_KERNEL, KIND_USER, EventList, FunctionEvent, FunctionEventAvg, Interval, build_events
from ._memory_timeline import export_memory_timeline as _export_memory_timeline

__all__ = [
    "EventList",
    "FunctionEvent",
    "FunctionEventAvg",
    "Interval",
    "kineto_available",
    "ProfilerAction",
    "ProfilerActivity",
    "profile",
    "record_function",
    "schedule",
    "supported_activities",
    "tensorboard_trace_handler",
]


class ProfilerActivity(enum.Enum):
    """What a profile records: ``CPU`` (ops, ranges, backward nodes) and ``PrivateUse1`` (kernels of a plug-in
    device's streams, e.g. ``sim``). ``CUDA`` is accepted with a warning: cuda kernels are not recorded yet.

    Example:
        >>> import flambeau as fb
        >>> from flambeau.profiler import ProfilerActivity, profile
        >>> with profile(activities=[ProfilerActivity.CPU]) as prof:
        ...     y = fb.ones(3) + 1
        >>> "aten::add" in {e.key for e in prof.key_averages()}
        True
    """

    CPU = 0
    CUDA = 1
    PrivateUse1 = 2


class ProfilerAction(enum.Enum):
    """What a ``schedule`` tells the profiler to do at a step.

    Example:
        >>> import flambeau as fb
        >>> sched = fb.profiler.schedule(wait=1, warmup=1, active=2)
        >>> [sched(step).name for step in range(5)]
        ['NONE', 'WARMUP', 'RECORD', 'RECORD_AND_SAVE', 'NONE']
    """

    NONE = 0
    WARMUP = 1
    RECORD = 2
    RECORD_AND_SAVE = 3


def supported_activities() -> set[ProfilerActivity]:
    """The activities this build can record.

    Example:
        >>> from flambeau_core.profiler import supported_activities, ProfilerActivity
        >>> ProfilerActivity.CPU in supported_activities()
        True
    """
    acts = {ProfilerActivity.CPU}
    plugin = _C._plugin_device_name()
    if plugin and _C._device_count(plugin) > 0:
        acts.add(ProfilerActivity.PrivateUse1)
    return acts


def kineto_available() -> bool:
    """False: flambeau's profiler is its own, not PyTorch's Kineto library (programs that ask before using
    Kineto-only features, such as a CUDA activity's kernel timeline, take their other path).

    Example:
        >>> from flambeau_core.profiler import kineto_available
        >>> kineto_available()
        False
    """
    return False


def _device_types(activities: set[ProfilerActivity]) -> list[str]:
    """The device type names whose kernels the activities ask for (and that have devices)."""
    names = []
    plugin = _C._plugin_device_name()
    if ProfilerActivity.PrivateUse1 in activities and plugin and _C._device_count(plugin) > 0:
        names.append(plugin)
    return names


def _check_count(name: str, value: Any, minimum: int) -> None:
    if isinstance(value, bool) or not isinstance(value, int):
        raise TypeError(f"[profiler.schedule] {name} must be an int, got {type(value).__name__}")
    if value < minimum:
        need = "> 0" if minimum == 1 else ">= 0"
        raise FlambeauError(f"[profiler.schedule] {name}={value} is invalid: it must be {need}")


def schedule(
    *, wait: int, warmup: int, active: int, repeat: int = 0, skip_first: int = 0, skip_first_wait: int = 0
) -> Callable[[int], ProfilerAction]:
    """The profiler's schedule: after ``skip_first`` steps, cycles of ``wait`` idle steps, ``warmup`` steps and
    ``active`` recorded steps, ``repeat`` times (0: until the profile ends). The last active step of a cycle
    is ``RECORD_AND_SAVE``: the trace is handed to ``on_trace_ready`` after it. ``skip_first_wait`` skips the
    first cycle's wait.

    Example:
        >>> from flambeau_core.profiler import schedule
        >>> s = schedule(wait=1, warmup=1, active=2, repeat=1)
        >>> [s(i).name for i in range(5)]
        ['NONE', 'WARMUP', 'RECORD', 'RECORD_AND_SAVE', 'NONE']
    """
    _check_count("wait", wait, 0)
    _check_count("warmup", warmup, 0)
    _check_count("active", active, 1)
    _check_count("repeat", repeat, 0)
    _check_count("skip_first", skip_first, 0)
    _check_count("skip_first_wait", skip_first_wait, 0)
    if warmup == 0:
        warnings.warn("[profiler.schedule] no warmup steps: the first recorded step may be slower", stacklevel=2)
    cycle = wait + warmup + active

    def schedule_fn(step: int) -> ProfilerAction:
        if step < 0:
            raise FlambeauError(f"[profiler.schedule] the step must be >= 0, got {step}")
        if step < skip_first:
            return ProfilerAction.NONE
        step -= skip_first
        if skip_first_wait:
            step += wait
        if repeat > 0 and step // cycle >= repeat:
            return ProfilerAction.NONE
        pos = step % cycle
        if pos < wait:
            return ProfilerAction.NONE
        if pos < wait + warmup:
            return ProfilerAction.WARMUP
        return ProfilerAction.RECORD if pos < cycle - 1 else ProfilerAction.RECORD_AND_SAVE

    return schedule_fn


def _record_everything(_: int) -> ProfilerAction:
    return ProfilerAction.RECORD


# The profile whose recording is on (one at a time per process: core's recorder is process-wide).
_active: profile | None = None


class record_function(contextlib.ContextDecorator):
    """A named range in the profile, around a block (``with``) or a function (decorator).

    Costs nothing measurable when no profile is active.

    Example:
        >>> import flambeau_core as fb
        >>> from flambeau_core.profiler import profile, record_function
        >>> @record_function("double")
        ... def double(x):
        ...     return x * 2
        >>> with profile() as prof:
        ...     with record_function("outer"):
        ...         y = double(fb.ones(3))
        >>> [e.cpu_parent.name for e in prof.events() if e.name == "double"]
        ['outer']
    """

    def __init__(self, name: str, args: str | None = None) -> None:
        if not isinstance(name, str):
            raise TypeError(f"[record_function] name must be a str, got {type(name).__name__}")
        if args is not None and not isinstance(args, str):
            raise TypeError(f"[record_function] args must be a str or None, got {type(args).__name__}")
        self.name = name
        self.args = args
        self._tokens: list[int] = []

    def _recreate_cm(self) -> record_function:
        # As a decorator: a fresh range per call, so threads calling the function do not share tokens.
        return record_function(self.name, self.args)

    def __enter__(self) -> record_function:
        token = _C._record_function_enter(self.name, KIND_USER) if _active is not None else -1
        self._tokens.append(token)
        return self

    def __exit__(self, *exc: object) -> None:
        token = self._tokens.pop() if self._tokens else -1
        if token >= 0:
            _C._record_function_exit(token)


def _range(name: str, kind: int) -> contextlib.AbstractContextManager[None]:
    """A range of a given kind (the DataLoader's batches), for flambeau's own packages."""
    return _KindRange(name, kind)


class _KindRange:
    def __init__(self, name: str, kind: int) -> None:
        self._name, self._kind, self._token = name, kind, -1

    def __enter__(self) -> None:
        if _active is not None:
            self._token = _C._record_function_enter(self._name, self._kind)

    def __exit__(self, *exc: object) -> None:
        if self._token >= 0:
            _C._record_function_exit(self._token)
            self._token = -1


class profile:
    """Records what the program runs, as PyTorch's ``torch.profiler.profile``.

    Args:
        activities: ``ProfilerActivity`` values to record (default: ``supported_activities()``).
        schedule: a callable step -> ``ProfilerAction`` (see ``schedule``); default: record every step.
        on_trace_ready: called with the profile after each recorded cycle (e.g. ``tensorboard_trace_handler``).
        record_shapes: record the shapes and dtypes of each op's tensor arguments.
        profile_memory: record the bytes each op allocates and frees.
        with_stack: record the Python stack of each op's and range's call site (``FunctionEvent.stack``,
            innermost frame first; ``key_averages(group_by_stack_n=N)``).
        with_flops: estimate the FLOPs of matrix products and convolutions (records shapes).

    Example:
        >>> import flambeau_core as fb
        >>> from flambeau_core.profiler import profile, schedule
        >>> traces = []
        >>> with profile(schedule=schedule(wait=1, warmup=1, active=2), on_trace_ready=traces.append) as prof:
        ...     for _ in range(4):
        ...         y = fb.ones(4) + 1
        ...         prof.step()
        >>> len(traces), sum(e.name == "aten::add" for e in traces[0].events())
        (1, 2)
    """

    def __init__(
        self,
        *,
        activities: Iterable[ProfilerActivity] | None = None,
        schedule: Callable[[int], ProfilerAction] | None = None,
        on_trace_ready: Callable[[profile], Any] | None = None,
        record_shapes: bool = False,
        profile_memory: bool = False,
        with_stack: bool = False,
        with_flops: bool = False,
    ) -> None:
        acts = set(supported_activities() if activities is None else activities)
        for a in acts:
            if not isinstance(a, ProfilerActivity):
                raise TypeError(f"[profiler.profile] activities must be ProfilerActivity values, got {a!r}")
        for name, value in (
            ("record_shapes", record_shapes),
            ("profile_memory", profile_memory),
            ("with_stack", with_stack),
            ("with_flops", with_flops),
        ):
            if not isinstance(value, bool):
                raise TypeError(f"[profiler.profile] {name} must be a bool, got {type(value).__name__}")
        if schedule is not None and not callable(schedule):
            raise TypeError(f"[profiler.profile] schedule must be callable (see profiler.schedule), got {schedule!r}")
        if on_trace_ready is not None and not callable(on_trace_ready):
            raise TypeError(f"[profiler.profile] on_trace_ready must be callable, got {on_trace_ready!r}")
        missing = acts - supported_activities()
        if missing:
            warnings.warn(
                f"[profiler.profile] {', '.join(sorted(a.name for a in missing))} activity is not recorded (no such "
                "device, or cuda, whose kernels are not recorded yet): only the CPU-side ranges are recorded",
                stacklevel=2,
            )
        self.activities = acts
        self.record_shapes = record_shapes or with_flops
        self.profile_memory = profile_memory
        self.with_stack = with_stack
        self.with_flops = with_flops
        self.schedule = schedule if schedule is not None else _record_everything
        self.record_steps = schedule is not None
        self.on_trace_ready = on_trace_ready
        self.step_num = 0
        self.current_action = ProfilerAction.NONE
        self._recording = False
        self._events: EventList | None = None
        self._worker_events: list[tuple[int, list[tuple]]] = []
        self._started_ns = 0
        self._step_range: record_function | None = None

    # ---- recording ----
    def _start_trace(self) -> None:
        global _active
        if self._recording or ProfilerActivity.CPU not in self.activities:
            return
        _C._profiler_start(self.record_shapes, self.profile_memory, self.with_stack)
        self._recording = True
        self._worker_events = []
        self._started_ns = _C._profiler_now_ns()
        _active = self

    def _stop_trace(self) -> None:
        global _active
        if not self._recording:
            return
        devices = _device_types(self.activities)
        for name in devices:
            # Kernels still queued run now, inside the session (PyTorch's profiler flushes the device too).
            for index in range(_C._device_count(name)):
                _C._synchronize(name, index)
        # Making the events allocates millions of objects and frees none: the collector's passes over
        # them would be most of the time spent here.
        collecting = gc.isenabled()
        gc.disable()
        try:
            raw = _C._profiler_stop()
            self._recording = False
            if _active is self:
                _active = None
            raw = [r for r in raw if r[1] != KIND_KERNEL or r[11].split(":")[0] in devices]
            self._events = build_events(
                raw,
                with_flops=self.with_flops,
                profile_memory=self.profile_memory,
                worker_events=self._worker_events,
            )
        finally:
            if collecting:
                gc.enable()

    def _trace_ready(self) -> None:
        if self.on_trace_ready is not None:
            self.on_trace_ready(self)

    def _transit(self, prev: ProfilerAction | None, cur: ProfilerAction | None) -> None:
        # As PyTorch's: a cycle ends after RECORD_AND_SAVE, or when RECORD is followed by a non-recording step.
        recording = (ProfilerAction.RECORD, ProfilerAction.RECORD_AND_SAVE)
        if prev == ProfilerAction.RECORD_AND_SAVE or (prev == ProfilerAction.RECORD and cur not in recording):
            if prev == ProfilerAction.RECORD and cur is not None:
                warnings.warn(f"[profiler] incorrect schedule: RECORD followed by {cur.name}", stacklevel=3)
            self._stop_trace()
            self._trace_ready()
        if cur in recording:
            self._start_trace()

    def start(self) -> None:
        """Starts the profile at step 0 (what ``with`` does).

        Example:
            >>> import flambeau as fb
            >>> prof = fb.profiler.profile()
            >>> prof.start()
            >>> y = fb.ones(3) * 2
            >>> prof.stop()
            >>> "aten::mul" in {e.name for e in prof.events()}
            True
        """
        self.step_num = 0
        self.current_action = self.schedule(self.step_num)
        self._transit(None, self.current_action)
        self._enter_step_range()

    def stop(self) -> None:
        """Ends the profile; a cycle still recording is handed to ``on_trace_ready``.

        Example:
            >>> import flambeau as fb
            >>> traces = []
            >>> prof = fb.profiler.profile(on_trace_ready=lambda p: traces.append(len(p.events()) > 0))
            >>> prof.start()
            >>> y = fb.ones(3) * 2
            >>> prof.stop(); traces
            [True]
        """
        self._exit_step_range()
        self._transit(self.current_action, None)

    def step(self) -> None:
        """Marks the end of a training step: the schedule moves to the next step.

        Example:
            >>> import flambeau as fb
            >>> ready = []
            >>> sched = fb.profiler.schedule(wait=1, warmup=1, active=1)
            >>> with fb.profiler.profile(schedule=sched, on_trace_ready=lambda p: ready.append(p.step_num)) as prof:
            ...     for _ in range(3):
            ...         y = fb.ones(3) * 2
            ...         prof.step()
            >>> ready  # step 0 waited, step 1 warmed up, step 2 recorded
            [3]
        """
        self._exit_step_range()
        prev = self.current_action
        self.step_num += 1
        self.current_action = self.schedule(self.step_num)
        self._transit(prev, self.current_action)
        self._enter_step_range()

    def _enter_step_range(self) -> None:
        if self.record_steps and self._recording:
            self._step_range = record_function(f"ProfilerStep#{self.step_num}")
            self._step_range.__enter__()

    def _exit_step_range(self) -> None:
        if self._step_range is not None:
            self._step_range.__exit__(None, None, None)
            self._step_range = None

    def __enter__(self) -> profile:
        self.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop()

    # ---- results ----
    def _recorded(self, what: str) -> EventList:
        if self._events is None:
            raise FlambeauError(
                f"[profiler.{what}] no trace has been recorded yet: call it after the profile ends, or from "
                "on_trace_ready, once the schedule reached an active step"
            )
        return self._events

    def events(self) -> EventList:
        """The events of the last recorded cycle (``FunctionEvent`` objects).

        Example:
            >>> import flambeau as fb
            >>> with fb.profiler.profile() as prof:
            ...     y = fb.ones(4, 4).mm(fb.ones(4, 4))
            >>> sorted({e.name for e in prof.events()} & {"aten::mm", "aten::ones"})
            ['aten::mm', 'aten::ones']
        """
        return self._recorded("events")

    def key_averages(self, group_by_input_shape: bool = False, group_by_stack_n: int = 0) -> EventList:
        """The events grouped by name (and input shapes / stack frames) and summed; ``.table()`` prints them.

        Example:
            >>> import flambeau_core as fb
            >>> from flambeau_core.profiler import profile
            >>> with profile() as prof:
            ...     for _ in range(2):
            ...         y = fb.ones(3).sum()
            >>> [a.count for a in prof.key_averages() if a.key == "aten::sum"]
            [2]
        """
        if group_by_input_shape and not self.record_shapes:
            raise FlambeauError(
                "[profiler.key_averages] group_by_input_shape=True needs shapes: profile with record_shapes=True"
            )
        return self._recorded("key_averages").key_averages(group_by_input_shape, group_by_stack_n)

    def export_chrome_trace(self, path: str | os.PathLike) -> None:
        """Writes the last recorded cycle as a Chrome trace-event JSON file (``.gz``: compressed).

        Opens in Perfetto (ui.perfetto.dev) and chrome://tracing.

        Example:
            >>> import json, os, tempfile
            >>> import flambeau as fb
            >>> with fb.profiler.profile() as prof:
            ...     y = fb.ones(4, 4).mm(fb.ones(4, 4))
            >>> path = os.path.join(tempfile.mkdtemp(), "trace.json")
            >>> prof.export_chrome_trace(path)
            >>> any(e.get("name") == "aten::mm" for e in json.load(open(path))["traceEvents"])
            True
        """
        events = self._recorded("export_chrome_trace")
        if not events and not events._memory_events:
            raise FlambeauError(
                "[profiler.export_chrome_trace] the trace has no events: nothing ran while the profiler recorded"
            )
        events.export_chrome_trace(path)

    def export_memory_timeline(self, path: str | os.PathLike, device: str | None = None) -> None:
        """Writes the bytes allocated over time by category: ``.html`` (a chart), ``.json``, or ``.png``
        (needs matplotlib). Needs ``profile_memory=True``. ``device``: e.g. ``"cpu"`` (default: all).

        Categories: the outermost ``record_function`` range around an allocation, else ``backward``
        (the autograd engine), ``ops``, or ``other``.

        Example:
            >>> import json, os, tempfile
            >>> import flambeau as fb
            >>> with fb.profiler.profile(profile_memory=True) as prof:
            ...     x = fb.ones(1000)
            >>> path = os.path.join(tempfile.mkdtemp(), "memory.json")
            >>> prof.export_memory_timeline(path)
            >>> os.path.getsize(path) > 0
            True
        """
        events = self._recorded("export_memory_timeline")
        if not self.profile_memory:
            raise FlambeauError(
                "[profiler.export_memory_timeline] the profile has no memory events: profile with profile_memory=True"
            )
        _export_memory_timeline(events._memory_events, path, device)


def tensorboard_trace_handler(
    dir_name: str | os.PathLike, worker_name: str | None = None, use_gzip: bool = False
) -> Callable[[profile], None]:
    """An ``on_trace_ready`` handler writing each trace to ``dir_name`` as
    ``{worker_name}.{time_ns}.pt.trace.json[.gz]``, the files TensorBoard's profiler plugin reads.

    Example:
        >>> import tempfile, os
        >>> import flambeau_core as fb
        >>> from flambeau_core.profiler import profile, tensorboard_trace_handler
        >>> d = tempfile.mkdtemp()
        >>> with profile(on_trace_ready=tensorboard_trace_handler(d, worker_name="w")):
        ...     y = fb.ones(2) + 1
        >>> [f.endswith(".pt.trace.json") for f in os.listdir(d)]
        [True]
    """
    if not isinstance(dir_name, (str, os.PathLike)):
        raise TypeError(f"[profiler.tensorboard_trace_handler] dir_name must be a path, got {type(dir_name).__name__}")
    dir_name = os.fspath(dir_name)

    def handler(prof: profile) -> None:
        try:
            os.makedirs(dir_name, exist_ok=True)
        except OSError as e:
            raise FlambeauError(
                f"[profiler.tensorboard_trace_handler] cannot create the directory '{dir_name}': {e}"
            ) from e
        name = worker_name or f"{socket.gethostname()}_{os.getpid()}"
        path = os.path.join(dir_name, f"{name}.{time.time_ns()}.pt.trace.json" + (".gz" if use_gzip else ""))
        prof.export_chrome_trace(path)

    return handler


# ---- DataLoader workers (Note [Worker protocol] in flambeau_data/_worker.py) ----
def _worker_config() -> tuple[bool, bool, bool] | None:
    """What a DataLoader worker should record for a batch: None while no profile records here."""
    p = _active
    return None if p is None else (p.record_shapes, p.profile_memory, p.with_stack)


class _WorkerRecorder:
    """A stand-in for the active profile inside a worker process, so that ``record_function`` ranges record."""


def _worker_started() -> None:
    """In a new worker process: drops a profile a forked worker inherited from its parent (it records
    per batch, when told to)."""
    global _active
    _active = None
    if _C._profiler_enabled():
        _C._profiler_stop()


@contextlib.contextmanager
def _worker_session(config: tuple[bool, bool, bool] | None, events: list) -> Any:
    """Records a worker's batch when ``config`` (from ``_worker_config``) says so; the recorder's tuples are
    appended to ``events`` at the end, for the main process (``_add_worker_events``)."""
    global _active
    if config is None:
        yield
        return
    _C._profiler_start(*config)
    _active = _WorkerRecorder()  # type: ignore[assignment]
    try:
        yield
    finally:
        _active = None
        events.extend(_C._profiler_stop())


def _add_worker_events(pid: int, events: list) -> None:
    """Adds a worker's events to the profile recording now; dropped when none does, or when they began
    before it (a batch asked for by an earlier recording cycle of the schedule)."""
    if _active is not None and events and min(e[2] for e in events) >= _active._started_ns:
        _active._worker_events.append((pid, events))
