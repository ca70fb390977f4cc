"""The profiler's results: events, their averages, the table and the Chrome trace.

Events come from core's recorder (Note [Observation] in flambeau/observe.h) as
tuples; times there are steady-clock nanoseconds, here microseconds as in
PyTorch's ``FunctionEvent``.
"""

from __future__ import annotations

import gzip
import json
import math
import os
from collections.abc import Iterable, Sequence
from typing import Any

from flambeau_core._C import FlambeauError

# EventKind in flambeau/observe.h
KIND_OP, KIND_USER, KIND_BACKWARD, KIND_MEMORY, KIND_DATALOADER, KIND_KERNEL = range(6)
_TRACE_CATEGORY = {
    KIND_OP: "cpu_op",
    KIND_USER: "user_annotation",
    KIND_BACKWARD: "cpu_op",
    KIND_DATALOADER: "user_annotation",
    KIND_KERNEL: "kernel",
}
# Frames of the profiler's own code (record_function.__enter__) are not the call site.
_OWN_FRAMES = os.path.dirname(os.path.abspath(__file__)) + os.sep


class Interval:
    """A time range in microseconds (``FunctionEvent.time_range``).

    Example:
        >>> from flambeau.profiler import Interval
        >>> r = Interval(10.0, 25.5)
        >>> r, r.elapsed_us()
        (Interval(start=10.0, end=25.5), 15.5)
    """

    def __init__(self, start: float, end: float) -> None:
        self.start = start
        self.end = end

    def elapsed_us(self) -> float:
        """The length of the range in microseconds.

        Example:
            >>> import flambeau as fb
            >>> with fb.profiler.profile() as prof:
            ...     y = fb.ones(4, 4).mm(fb.ones(4, 4))
            >>> mm = next(e for e in prof.events() if e.name == "aten::mm")
            >>> mm.time_range.elapsed_us() >= 0
            True
        """
        return self.end - self.start

    def __repr__(self) -> str:
        return f"Interval(start={self.start}, end={self.end})"


def _prod(xs: Iterable[int]) -> int:
    return math.prod(int(x) for x in xs)


def _flops(name: str, shapes: list[list[int]], out: list[int]) -> int:
    """Floating-point operations of a matrix product or convolution (multiply and add count as two)."""
    op = name.removeprefix("aten::")
    try:
        if op == "mm" and len(shapes) >= 2:
            (m, k), (_, n) = shapes[0], shapes[1]
            return 2 * m * k * n
        if op == "bmm" and len(shapes) >= 2:
            (b, m, k), (_, _, n) = shapes[0], shapes[1]
            return 2 * b * m * k * n
        if op == "matmul" and len(shapes) >= 2 and out is not None:
            a, b = shapes[0], shapes[1]
            # Each output element is a dot product over the shared dimension.
            return 2 * _prod(out) * a[-1] if a and b else 0
        if op == "linear" and len(shapes) >= 2:
            x, w = shapes[0], shapes[1]
            return 2 * _prod(x) * w[0] if len(w) == 2 else 2 * _prod(x)
        if op in ("conv1d", "conv2d", "conv3d", "convolution") and len(shapes) >= 2 and out:
            w = shapes[1]
            return 2 * _prod(out) * _prod(w[1:])
        if op in ("conv_transpose1d", "conv_transpose2d", "conv_transpose3d") and len(shapes) >= 2:
            # Every input element meets a (out_channels/groups x kernel) slice of the weight.
            x, w = shapes[0], shapes[1]
            return 2 * _prod(x) * _prod(w[1:])
    except (ValueError, IndexError):
        return 0
    return 0


class FunctionEvent:
    """One recorded range: an op call, a ``record_function`` range or a backward node.

    Times are in microseconds. ``cpu_children`` are the events that ran inside
    it on its thread, ``cpu_parent`` the one it ran inside (or None).

    Example:
        >>> import flambeau_core as fb
        >>> from flambeau_core.profiler import profile
        >>> with profile() as prof:
        ...     y = fb.ones(2) + 1
        >>> [e.name for e in prof.events() if e.name == "aten::add"]
        ['aten::add']
    """

    def __init__(
        self,
        id: int,
        name: str,
        kind: int,
        thread: int,
        start_us: float,
        end_us: float,
        sequence_nr: int = -1,
        input_shapes: list | None = None,
        input_types: list | None = None,
        output_shape: list | None = None,
        self_cpu_memory_usage: int = 0,
        self_device_memory_usage: int = 0,
        stack: list[str] | None = None,
        pid: int | None = None,
    ) -> None:
        self.id = id
        self.name = name
        self.kind = kind
        self.thread = thread
        self.time_range = Interval(start_us, end_us)
        self.sequence_nr = sequence_nr
        self.input_shapes = input_shapes or []
        self.input_types = input_types or []
        self.output_shape = output_shape
        self.self_cpu_memory_usage = self_cpu_memory_usage
        self.self_device_memory_usage = self_device_memory_usage
        self.stack = stack or []
        self.cpu_children: list[FunctionEvent] = []
        self.cpu_parent: FunctionEvent | None = None
        self.count = 1
        self.flops = 0
        self.device_type = "CPU"
        self.is_async = False
        self.node_id = -1
        self.trace_name = name
        self.pid = os.getpid() if pid is None else pid
        # Kernel events: the device ("cuda:0", "sim:1"), the stream and the launch linking it to its op.
        self.device = ""
        self.stream = -1
        self.correlation = 0
        self.launched_by: FunctionEvent | None = None
        self.kernels: list[FunctionEvent] = []  # the kernels this op launched

    @property
    def key(self) -> str:
        """The name events are grouped by in ``key_averages``."""
        return self.name

    @property
    def cpu_time_total(self) -> float:
        """Wall time of the range in microseconds, children included (0 for a device kernel)."""
        return 0.0 if self.kind == KIND_KERNEL else self.time_range.elapsed_us()

    @property
    def self_cpu_time_total(self) -> float:
        """Wall time of the range in microseconds less its children's (0 for a device kernel)."""
        if self.kind == KIND_KERNEL:
            return 0.0
        return self.cpu_time_total - sum(c.cpu_time_total for c in self.cpu_children)

    @property
    def cpu_time(self) -> float:
        """Average wall time per call (a single event: its total)."""
        return self.cpu_time_total / self.count

    @property
    def cpu_memory_usage(self) -> int:
        """Bytes of CPU memory allocated less freed inside the range, children included."""
        return self.self_cpu_memory_usage + sum(c.cpu_memory_usage for c in self.cpu_children)

    @property
    def device_memory_usage(self) -> int:
        """Bytes of device memory allocated less freed inside the range, children included."""
        return self.self_device_memory_usage + sum(c.device_memory_usage for c in self.cpu_children)

    @property
    def self_device_time_total(self) -> float:
        """Device time in microseconds: a kernel's duration, or the kernels an op launched itself."""
        if self.kind == KIND_KERNEL:
            return self.time_range.elapsed_us()
        return sum(k.time_range.elapsed_us() for k in self.kernels)

    @property
    def device_time_total(self) -> float:
        """Device time in microseconds of the kernels launched by the range and by the ops inside it."""
        if self.kind == KIND_KERNEL:
            return self.time_range.elapsed_us()
        return self.self_device_time_total + sum(c.device_time_total for c in self.cpu_children)

    @property
    def device_time(self) -> float:
        """Average device time per call."""
        return self.device_time_total / self.count

    def __repr__(self) -> str:
        return (
            f"<FunctionEvent id={self.id} name={self.name} thread={self.thread} "
            f"cpu_time_total={self.cpu_time_total:.3f}us self_cpu_time_total={self.self_cpu_time_total:.3f}us "
            f"input_shapes={self.input_shapes} sequence_nr={self.sequence_nr}>"
        )


class FunctionEventAvg:
    """The events of one key (name, and input shapes when grouped by them), summed.

    Example:
        >>> import flambeau_core as fb
        >>> from flambeau_core.profiler import profile
        >>> with profile() as prof:
        ...     for _ in range(3):
        ...         y = fb.ones(2) * 2
        >>> [a.count for a in prof.key_averages() if a.key == "aten::mul"]
        [3]
    """

    def __init__(self, key: str, input_shapes: list | None = None) -> None:
        self.key = key
        self.input_shapes = input_shapes if input_shapes is not None else []
        self.count = 0
        self.cpu_time_total = 0.0
        self.self_cpu_time_total = 0.0
        self.cpu_memory_usage = 0
        self.self_cpu_memory_usage = 0
        self.device_memory_usage = 0
        self.self_device_memory_usage = 0
        self.flops = 0
        self.stack: list[str] = []
        self.node_id = -1
        self.device_time_total = 0.0
        self.self_device_time_total = 0.0
        self.device_type = "CPU"

    def add(self, e: FunctionEvent | FunctionEventAvg) -> FunctionEventAvg:
        """Adds one event (or another average) to the sums; returns self.

        Example:
            >>> import flambeau as fb
            >>> with fb.profiler.profile() as prof:
            ...     y = fb.ones(4, 4).mm(fb.ones(4, 4))
            >>> total = fb.profiler.FunctionEventAvg("all")
            >>> for e in prof.events():
            ...     _ = total.add(e)
            >>> total.count == len(prof.events())
            True
        """
        self.count += e.count
        self.cpu_time_total += e.cpu_time_total
        self.self_cpu_time_total += e.self_cpu_time_total
        self.cpu_memory_usage += e.cpu_memory_usage
        self.self_cpu_memory_usage += e.self_cpu_memory_usage
        self.device_memory_usage += e.device_memory_usage
        self.self_device_memory_usage += e.self_device_memory_usage
        self.flops += e.flops
        self.device_time_total += e.device_time_total
        self.self_device_time_total += e.self_device_time_total
        if getattr(e, "kind", None) == KIND_KERNEL:
            self.device_type = e.device_type
        if not self.stack and e.stack:
            self.stack = list(e.stack)
        return self

    @property
    def cpu_time(self) -> float:
        """Average wall time per call in microseconds."""
        return self.cpu_time_total / self.count if self.count else 0.0

    @property
    def self_cpu_time(self) -> float:
        """Average self time per call in microseconds."""
        return self.self_cpu_time_total / self.count if self.count else 0.0

    @property
    def device_time(self) -> float:
        """Average device time per call in microseconds."""
        return self.device_time_total / self.count if self.count else 0.0

    def __repr__(self) -> str:
        return (
            f"<FunctionEventAvg key={self.key} self_cpu_time={self.self_cpu_time_total:.3f}us "
            f"cpu_time={self.cpu_time_total:.3f}us count={self.count} input_shapes={self.input_shapes}>"
        )


class EventList(list):
    """The events of a profile (``prof.events()``), with PyTorch's summaries.

    Example:
        >>> import flambeau_core as fb
        >>> from flambeau_core.profiler import profile
        >>> with profile() as prof:
        ...     y = fb.ones(4, 4).mm(fb.ones(4, 4))
        >>> "aten::mm" in prof.events().table()
        True
    """

    def __init__(self, events: Iterable[Any] = (), *, with_flops: bool = False, profile_memory: bool = False) -> None:
        super().__init__(events)
        self._with_flops = with_flops
        self._profile_memory = profile_memory
        self._memory_events: list[tuple] = []

    @property
    def self_cpu_time_total(self) -> float:
        """The sum of every event's self time, in microseconds."""
        return sum(e.self_cpu_time_total for e in self)

    def key_averages(self, group_by_input_shape: bool = False, group_by_stack_n: int = 0) -> EventList:
        """Groups the events by name (and input shapes, and the top stack frames) and sums each group.

        Example:
            >>> import flambeau_core as fb
            >>> from flambeau_core.profiler import profile
            >>> with profile(record_shapes=True) as prof:
            ...     a = fb.ones(2) + fb.ones(2)
            ...     b = fb.ones(3) + fb.ones(3)
            >>> groups = prof.key_averages(group_by_input_shape=True)
            >>> sorted(str(e.input_shapes) for e in groups if e.key == "aten::add")
            ['[[2], [2]]', '[[3], [3]]']
        """
        if not isinstance(group_by_input_shape, bool):
            raise TypeError(
                f"[key_averages] group_by_input_shape must be a bool, got {type(group_by_input_shape).__name__}"
            )
        groups: dict[tuple, FunctionEventAvg] = {}
        for e in self:
            key: tuple = (e.key,)
            if group_by_input_shape:
                key += (str(e.input_shapes),)
            if group_by_stack_n > 0:
                key += tuple(e.stack[:group_by_stack_n])
            avg = groups.get(key)
            if avg is None:
                avg = groups[key] = FunctionEventAvg(e.key, e.input_shapes if group_by_input_shape else [])
            avg.add(e)
        out = EventList(groups.values(), with_flops=self._with_flops, profile_memory=self._profile_memory)
        out._memory_events = self._memory_events
        return out

    def total_average(self) -> FunctionEventAvg:
        """Every event summed into one ``FunctionEventAvg`` (key ``Total``).

        Example:
            >>> import flambeau as fb
            >>> with fb.profiler.profile() as prof:
            ...     y = fb.ones(4, 4).mm(fb.ones(4, 4))
            >>> total = prof.key_averages().total_average()
            >>> total.key, total.count == sum(avg.count for avg in prof.key_averages())
            ('Total', True)
        """
        total = FunctionEventAvg("Total")
        for e in self:
            total.add(e)
        return total

    def table(
        self,
        sort_by: str | None = None,
        row_limit: int = 100,
        max_src_column_width: int = 75,
        max_name_column_width: int = 55,
        max_shapes_column_width: int = 80,
        header: str | None = None,
        top_level_events_only: bool = False,
    ) -> str:
        """The events as PyTorch's profiler table: one row per event (or per key after ``key_averages``).

        Args:
            sort_by: an attribute to sort by, descending: ``cpu_time_total``, ``self_cpu_time_total``,
                ``cpu_time``, ``count``, ``cpu_memory_usage``, ``self_cpu_memory_usage``, ``flops``, ...
            row_limit: the most rows shown (a negative number: all).
            top_level_events_only: only events with no parent.

        Example:
            >>> import flambeau_core as fb
            >>> from flambeau_core.profiler import profile
            >>> with profile() as prof:
            ...     y = fb.ones(8) * 3
            >>> print(prof.key_averages().table(sort_by="cpu_time_total", row_limit=5))  # doctest: +SKIP
        """
        events = list(self)
        if top_level_events_only:
            events = [e for e in events if getattr(e, "cpu_parent", None) is None]
        if sort_by is not None:
            if not events or not hasattr(events[0], sort_by):
                known = (
                    "cpu_time_total, self_cpu_time_total, cpu_time, count, cpu_memory_usage, "
                    "self_cpu_memory_usage, flops"
                )
                if events:
                    raise FlambeauError(f"[table] cannot sort by '{sort_by}': events have no such attribute ({known})")
            events.sort(key=lambda e: getattr(e, sort_by), reverse=True)
        if row_limit is not None and row_limit >= 0:
            events = events[:row_limit]
        return _build_table(
            events,
            self.self_cpu_time_total,
            # As PyTorch's: the device time of the kernels (an op's is theirs again).
            sum(e.self_device_time_total for e in self if e.device_type != "CPU"),
            _device_label(self),
            header=header,
            profile_memory=self._profile_memory,
            with_flops=self._with_flops,
            max_name_column_width=max_name_column_width,
            max_shapes_column_width=max_shapes_column_width,
            max_src_column_width=max_src_column_width,
        )

    def export_chrome_trace(self, path: str | os.PathLike) -> None:
        """Writes the events as a Chrome trace-event JSON file (Perfetto, chrome://tracing).

        Example:
            >>> import json, os, tempfile
            >>> import flambeau as fb
            >>> with fb.profiler.profile() as prof:
            ...     y = fb.ones(4, 4).mm(fb.ones(4, 4))
            >>> path = os.path.join(tempfile.mkdtemp(), "events.json")
            >>> prof.events().export_chrome_trace(path)
            >>> "traceEvents" in json.load(open(path))
            True
        """
        write_chrome_trace(self, self._memory_events, path)

    def __str__(self) -> str:
        return self.table()


def _format_time(us: float) -> str:
    if us >= 1e6:
        return f"{us / 1e6:.3f}s"
    if us >= 1e3:
        return f"{us / 1e3:.3f}ms"
    return f"{us:.3f}us"


def _format_share(us: float, total: float) -> str:
    return "NaN" if total == 0 else f"{us * 100.0 / total:.2f}%"


def _format_memory(nbytes: int) -> str:
    for unit, size in (("GB", 1 << 30), ("MB", 1 << 20), ("KB", 1 << 10)):
        if abs(nbytes) >= size:
            return f"{nbytes / size:.2f} {unit}"
    return f"{nbytes} B"


def _device_label(events: Sequence[Any]) -> str:
    """The device columns' name as PyTorch's ("CUDA", or a plug-in device's name), "" without device time."""
    if not any(e.device_time_total > 0 for e in events):
        return ""
    kinds = {e.device_type for e in events} - {"CPU"}
    return "CUDA" if not kinds or "CUDA" in kinds else sorted(kinds)[0].upper()


def _build_table(
    events: Sequence[Any],
    self_cpu_time_total: float,
    self_device_total: float,
    device_label: str,
    *,
    header: str | None,
    profile_memory: bool,
    with_flops: bool,
    max_name_column_width: int,
    max_shapes_column_width: int,
    max_src_column_width: int,
) -> str:
    if not events:
        return ""
    has_shapes = any(getattr(e, "input_shapes", None) for e in events)
    has_stack = any(getattr(e, "stack", None) for e in events)
    has_device_mem = any(e.device_memory_usage or e.self_device_memory_usage for e in events)
    flops = [e.flops for e in events if e.flops > 0] if with_flops else []
    name_width = min(max(len(e.key) for e in events) + 4, max_name_column_width)
    headers = ["Name", "Self CPU %", "Self CPU", "CPU total %", "CPU total", "CPU time avg"]
    if device_label:
        d = device_label
        headers += [f"Self {d}", f"Self {d} %", f"{d} total", f"{d} time avg"]
    if profile_memory:
        headers += ["CPU Mem", "Self CPU Mem"]
        if has_device_mem:
            headers += ["Device Mem", "Self Device Mem"]
    headers.append("# of Calls")
    flop_scale, flop_header = 1.0, ""
    if flops:
        exponent = min(int(math.log10(min(flops)) // 3), 5) if min(flops) > 0 else 0
        flop_scale = 1000.0**exponent
        flop_header = "Total " + ["FLOPs", "KFLOPs", "MFLOPs", "GFLOPs", "TFLOPs", "PFLOPs"][exponent]
        headers.append(flop_header)
    if has_shapes:
        headers.append("Input Shapes")
    if has_stack:
        headers.append("Source Location")
    widths = [name_width] + [max(12, len(h) + 2) for h in headers[1:]]
    if has_shapes:
        widths[headers.index("Input Shapes")] = max_shapes_column_width
    if has_stack:
        widths[headers.index("Source Location")] = max_src_column_width

    def row(cells: list[str]) -> str:
        out = []
        for i, (c, w) in enumerate(zip(cells, widths, strict=True)):
            c = c if len(c) <= w else c[: w - 3] + "..."
            out.append(c.ljust(w) if i == 0 or headers[i] in ("Input Shapes", "Source Location") else c.rjust(w))
        return "  ".join(out).rstrip()

    sep = "  ".join("-" * w for w in widths)
    lines = []
    if header:
        lines += ["=" * len(sep), header]
    lines += [sep, row(headers), sep]
    for e in events:
        cells = [
            e.key,
            _format_share(e.self_cpu_time_total, self_cpu_time_total),
            _format_time(e.self_cpu_time_total),
            _format_share(e.cpu_time_total, self_cpu_time_total),
            _format_time(e.cpu_time_total),
            _format_time(e.cpu_time),
        ]
        if device_label:
            cells += [
                _format_time(e.self_device_time_total),
                _format_share(e.self_device_time_total, self_device_total),
                _format_time(e.device_time_total),
                _format_time(e.device_time),
            ]
        if profile_memory:
            cells += [_format_memory(e.cpu_memory_usage), _format_memory(e.self_cpu_memory_usage)]
            if has_device_mem:
                cells += [_format_memory(e.device_memory_usage), _format_memory(e.self_device_memory_usage)]
        cells.append(str(e.count))
        if flop_header:
            cells.append(f"{e.flops / flop_scale:.3f}" if e.flops > 0 else "--")
        if has_shapes:
            cells.append(str(e.input_shapes))
        if has_stack:
            cells.append(e.stack[0] if e.stack else "")
        lines.append(row(cells))
    lines += [sep, f"Self CPU time total: {_format_time(self_cpu_time_total)}"]
    if device_label:
        lines.append(f"Self {device_label} time total: {_format_time(self_device_total)}")
    return "\n".join(lines) + "\n"


def _call_site(stack: Sequence[str]) -> list[str]:
    return [f for f in stack if not f.startswith(_OWN_FRAMES)]


def build_events(
    raw: Sequence[tuple],
    *,
    with_flops: bool,
    profile_memory: bool,
    worker_events: Sequence[tuple[int, Sequence[tuple]]] = (),
) -> EventList:
    """FunctionEvents (children and launched kernels linked) from the recorder's tuples: this process's, then
    each DataLoader worker's ``(pid, tuples)``; memory events (this process's) are kept apart."""
    events = EventList(with_flops=with_flops, profile_memory=profile_memory)
    memory: list[tuple] = []
    for pid, chunk in ((None, raw), *worker_events):
        by_index: dict[int, FunctionEvent] = {}
        kernels: list[tuple[FunctionEvent, int]] = []
        for i, r in enumerate(chunk):
            (name, kind, start, end, thread, parent, seq, self_cpu_mem, self_dev_mem, nbytes, total, device) = r[:12]
            shapes, dtypes, address, output_shape = r[12], r[13], r[14], r[15]
            stack, stream, correlation, launched_by = r[17], r[18], r[19], r[20]
            if kind == KIND_MEMORY:
                if pid is None:
                    memory.append((start / 1000.0, nbytes, total, device, address, thread, by_index.get(parent)))
                continue
            e = FunctionEvent(
                len(events),
                # PyTorch lists every step range as "ProfilerStep*" (the trace keeps "ProfilerStep#N").
                "ProfilerStep*" if kind == KIND_USER and name.startswith("ProfilerStep#") else name,
                kind,
                thread,
                start / 1000.0,
                end / 1000.0,
                sequence_nr=seq,
                input_shapes=[list(s) for s in shapes],
                input_types=list(dtypes),
                output_shape=list(output_shape) if output_shape else None,
                self_cpu_memory_usage=self_cpu_mem,
                self_device_memory_usage=self_dev_mem,
                stack=_call_site(stack),
                pid=pid,
            )
            e.trace_name = name
            if kind == KIND_KERNEL:
                e.device, e.stream, e.correlation = device, stream, correlation
                e.device_type = "CUDA" if device.startswith("cuda") else device.split(":")[0]
                if launched_by >= 0:
                    kernels.append((e, launched_by))
            if with_flops and kind == KIND_OP:
                e.flops = _flops(name, e.input_shapes, e.output_shape)
            p = by_index.get(parent)
            if p is not None:
                e.cpu_parent = p
                p.cpu_children.append(e)
            by_index[i] = e
            events.append(e)
        for k, op_index in kernels:
            op = by_index.get(op_index)
            if op is not None:
                k.launched_by = op
                op.kernels.append(k)
    events.sort(key=lambda e: (e.time_range.start, -e.time_range.end))
    if with_flops:
        # A product counted by the op around it (matmul around mm, conv2d around convolution) counts once.
        covered: set[int] = set()
        for e in events:
            p = e.cpu_parent
            if p is not None and (p.flops > 0 or p.id in covered):
                covered.add(e.id)
                e.flops = 0
    events._memory_events = memory
    return events


def write_chrome_trace(events: Sequence[FunctionEvent], memory: Sequence[tuple], path: str | os.PathLike) -> None:
    """The Chrome trace-event format: complete events ("X"), memory instants ("i"), forward-backward flows and
    flows from each op to the device kernels it launched ("ac2g"). DataLoader workers' events are under
    their own process ids."""
    main_pid = os.getpid()
    trace: list[dict[str, Any]] = []
    for pid in sorted({e.pid for e in events} | {main_pid}):
        name = "python" if pid == main_pid else f"DataLoader worker (pid {pid})"
        trace.append({"ph": "M", "name": "process_name", "pid": pid, "tid": 0, "args": {"name": name}})
    streams = {(e.pid, e.thread): e for e in events if e.kind == KIND_KERNEL}
    for pid, tid in sorted({(e.pid, e.thread) for e in events}):
        k = streams.get((pid, tid))
        label = f"stream {k.stream} ({k.device})" if k is not None else f"thread {tid}"
        trace.append({"ph": "M", "name": "thread_name", "pid": pid, "tid": tid, "args": {"name": label}})
    forward: dict[int, FunctionEvent] = {}
    for e in events:
        args: dict[str, Any] = {}
        if e.input_shapes:
            args["Input Dims"] = e.input_shapes
            args["Input type"] = e.input_types
        if e.sequence_nr >= 0:
            args["Sequence number"] = e.sequence_nr
            if e.kind == KIND_OP and e.pid == main_pid:
                forward.setdefault(e.sequence_nr, e)
        if e.flops:
            args["flops"] = e.flops
        if e.stack:
            args["Call stack"] = ";".join(e.stack)
        if e.kind == KIND_KERNEL:
            args.update({"device": e.device, "stream": e.stream, "correlation": e.correlation})
            if e.launched_by is not None:
                args["External id"] = e.launched_by.id
        trace.append(
            {
                "ph": "X",
                "cat": _TRACE_CATEGORY.get(e.kind, "cpu_op"),
                "name": e.trace_name,
                "pid": e.pid,
                "tid": e.thread,
                "ts": e.time_range.start,
                "dur": e.time_range.elapsed_us(),
                "args": args,
            }
        )
    # Flow arrows from a forward op to the backward node it made (PyTorch's "fwdbwd" flows).
    for e in events:
        if e.kind != KIND_BACKWARD or e.sequence_nr < 0 or e.name.startswith("autograd::engine") or e.pid != main_pid:
            continue
        f = forward.get(e.sequence_nr)
        if f is None:
            continue
        common = {"cat": "fwdbwd", "name": "fwdbwd", "id": e.sequence_nr, "pid": main_pid}
        trace.append({"ph": "s", "ts": f.time_range.start, "tid": f.thread, **common})
        trace.append({"ph": "f", "bp": "e", "ts": e.time_range.start, "tid": e.thread, **common})
    # From the op that launched a kernel to the kernel (PyTorch's "ac2g" flows, by correlation id).
    for k in events:
        op = k.launched_by
        if k.kind != KIND_KERNEL or op is None:
            continue
        common = {"cat": "ac2g", "name": "ac2g", "id": k.correlation, "pid": k.pid}
        trace.append({"ph": "s", "ts": op.time_range.start, "tid": op.thread, **common})
        trace.append({"ph": "f", "bp": "e", "ts": k.time_range.start, "tid": k.thread, **common})
    for ts, nbytes, total, device, address, thread, _ in memory:
        trace.append(
            {
                "ph": "i",
                "s": "t",
                "cat": "cpu_instant_event",
                "name": "[memory]",
                "pid": main_pid,
                "tid": thread,
                "ts": ts,
                "args": {"Device Type": device, "Addr": address, "Bytes": nbytes, "Total Allocated": total},
            }
        )
    opener = gzip.open if os.fspath(path).endswith(".gz") else open
    with opener(path, "wt") as f:
        json.dump({"traceEvents": trace, "displayTimeUnit": "ms"}, f)
