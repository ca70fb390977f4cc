"""``flambeau.autograd.profiler``: PyTorch's older profiler API (``torch.autograd.profiler``) over the same recorder.

Example:
    >>> import flambeau_core as fb
    >>> from flambeau_core.profiler import autograd_profiler
    >>> with autograd_profiler.profile(record_shapes=True) as prof:
    ...     y = fb.ones(2, 2).mm(fb.ones(2, 2))
    >>> [e.input_shapes for e in prof.function_events if e.name == "aten::mm"]
    [[[2, 2], [2, 2]]]
"""

from __future__ import annotations

import os

from . import EventList, FunctionEvent, FunctionEventAvg, ProfilerActivity, record_function
from . import profile as _profile

__all__ = ["EventList", "FunctionEvent", "FunctionEventAvg", "profile", "record_function"]


class profile:
    """Records the ops, ranges and backward nodes run inside the block (``torch.autograd.profiler.profile``).

    Args:
        enabled: False makes the block a no-op.
        use_cuda: accepted for PyTorch programs; no device kernel times are recorded.
        record_shapes, with_flops, profile_memory, with_stack: as in ``flambeau.profiler.profile``.

    Example:
        >>> import flambeau_core as fb
        >>> from flambeau_core.profiler.autograd_profiler import profile
        >>> with profile() as prof:
        ...     y = fb.ones(3) * 2
        >>> "aten::mul" in prof.key_averages().table()
        True
    """

    def __init__(
        self,
        enabled: bool = True,
        *,
        use_cuda: bool = False,
        record_shapes: bool = False,
        with_flops: bool = False,
        profile_memory: bool = False,
        with_stack: bool = False,
    ) -> None:
        self.enabled = enabled
        activities = [ProfilerActivity.CPU] + ([ProfilerActivity.CUDA] if use_cuda else [])
        self._prof = _profile(
            activities=activities,
            record_shapes=record_shapes,
            with_flops=with_flops,
            profile_memory=profile_memory,
            with_stack=with_stack,
        )

    def __enter__(self) -> profile:
        if self.enabled:
            self._prof.start()
        return self

    def __exit__(self, *exc: object) -> None:
        if self.enabled:
            self._prof.stop()

    @property
    def function_events(self) -> EventList:
        """The recorded events."""
        return self._prof.events()

    def key_averages(self, group_by_input_shape: bool = False, group_by_stack_n: int = 0) -> EventList:
        """The events grouped by name (and input shapes) and summed."""
        return self._prof.key_averages(group_by_input_shape, group_by_stack_n)

    def total_average(self) -> FunctionEventAvg:
        """Every event summed into one average."""
        return self.function_events.total_average()

    @property
    def self_cpu_time_total(self) -> float:
        """The sum of every event's self time, in microseconds."""
        return self.function_events.self_cpu_time_total

    def table(self, sort_by: str | None = None, row_limit: int = 100, **kwargs: object) -> str:
        """The events as a table (see ``EventList.table``)."""
        return self.function_events.table(sort_by=sort_by, row_limit=row_limit, **kwargs)  # type: ignore[arg-type]

    def export_chrome_trace(self, path: str | os.PathLike) -> None:
        """Writes the events as a Chrome trace-event JSON file."""
        self._prof.export_chrome_trace(path)

    def __str__(self) -> str:
        return self.table()
