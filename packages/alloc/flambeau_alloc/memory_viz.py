"""Memory history and its timeline picture (Note [Memory history] in src/caching_allocator.cpp).

:func:`_record_memory_history` switches on, for every caching allocator of the
process (the CPU one and each device's), the capture of the Python stack of
each allocation and a bounded trace of alloc/free events. :func:`_snapshot`
returns the segments with their live blocks (and each block's ``frames``) and
the traces; :func:`timeline` turns a snapshot into the allocated bytes per
allocation site over time, and :func:`plot_timeline` draws it as a stacked
area chart (PNG or SVG) with matplotlib, an optional dependency.

Example:
    >>> import flambeau_core as fc, flambeau_alloc
    >>> from flambeau_alloc import memory_viz
    >>> flambeau_alloc.enable()
    >>> memory_viz._record_memory_history(True)
    >>> x = fc.zeros(1000)
    >>> t = memory_viz.timeline(memory_viz._snapshot())
    >>> max(max(v) for v in t["bytes"].values()) >= 4000
    True
    >>> memory_viz._record_memory_history(False)
"""

from __future__ import annotations

import os
from typing import Any

from flambeau_alloc import _C

__all__ = ["_record_memory_history", "_snapshot", "plot_timeline", "register_allocator", "timeline"]

_MATPLOTLIB_MISSING = (
    "[plot_timeline] drawing a memory timeline needs matplotlib, an optional dependency: "
    "pip install matplotlib (timeline() gives the same data without it)"
)


def _record_memory_history(enabled: Any = "all", max_entries: int = 100_000) -> None:
    """Starts (``"all"``/True) or stops (None/False) recording allocation stacks and the event trace.

    As ``torch.cuda.memory._record_memory_history``: it applies to every
    caching allocator of the process; stopping clears the traces.
    """
    on = enabled not in (None, False)
    if enabled not in (None, False, True, "all", "state"):
        raise ValueError(
            f"[_record_memory_history] enabled must be 'all', 'state', True, None or False, got {enabled!r}"
        )
    if not isinstance(max_entries, int) or isinstance(max_entries, bool) or max_entries < 0:
        raise ValueError(f"[_record_memory_history] max_entries must be an int >= 0, got {max_entries!r}")
    _C._record_memory_history(on, max_entries if enabled != "state" else 0)


# Device packages (flambeau-sim, ...) add the caching allocators they make, so that
# _snapshot() and timeline() cover every device without this package knowing any.
_device_allocators: list[tuple[str, Any]] = []


def register_allocator(name: str, allocator: Any) -> None:
    """Adds a device package's caching allocator, as ``name`` (e.g. ``"sim:0"``), to :func:`_snapshot`.

    Example:
        >>> a = flambeau_alloc.CachingAllocator(name="mine")
        >>> flambeau_alloc.memory_viz.register_allocator("mine", a)  # doctest: +SKIP
        >>> "mine" in flambeau_alloc._snapshot()["devices"]  # doctest: +SKIP
        True
    """
    if not isinstance(name, str):
        raise TypeError(f"[register_allocator] name must be a str, got {type(name).__name__}")
    if not hasattr(allocator, "memory_snapshot") or not hasattr(allocator, "_trace"):
        raise TypeError(f"[register_allocator] expected a CachingAllocator, got {type(allocator).__name__}")
    _device_allocators.append((name, allocator))


def _allocators() -> list[tuple[str, Any]]:
    return [("cpu", _C.caching_allocator()), *_device_allocators]


def _snapshot(allocator: Any = None) -> dict[str, Any]:
    """``{"segments": [...], "device_traces": [[...], ...], "devices": [...]}`` of one allocator or all.

    Segments as ``memory_snapshot()`` (each block with its ``frames``, innermost
    first, while history is recorded); one trace per allocator, each event a
    dict ``action`` (alloc, free_requested, free_completed, segment_alloc,
    segment_free, oom), ``addr``, ``size``, ``stream``, ``time_us``, ``frames``.
    """
    allocs = [("allocator", allocator)] if allocator is not None else _allocators()
    segments: list[dict] = []
    traces: list[list[dict]] = []
    for _, a in allocs:
        segments.extend(a.memory_snapshot())
        traces.append(a._trace())
    return {"segments": segments, "device_traces": traces, "devices": [name for name, _ in allocs]}


_OWN_DIRS = ("flambeau_alloc", "flambeau_core", "flambeau_autograd", "flambeau_nn", "flambeau" + os.sep)


def _site(frames: list[dict]) -> str:
    """The allocation site: the innermost frame outside flambeau's own packages."""
    for f in frames:
        filename = f["filename"]
        if not any(f"{os.sep}{d}" in filename for d in _OWN_DIRS):
            return f"{filename}:{f['line']} ({f['name']})"
    if frames:
        f = frames[0]
        return f"{f['filename']}:{f['line']} ({f['name']})"
    return "<unknown>"


def timeline(snapshot: dict[str, Any]) -> dict[str, Any]:
    """Allocated bytes by allocation site over time, from a :func:`_snapshot` taken while recording.

    Returns ``{"times_us": [...], "bytes": {site: [...]}}``: after each alloc or
    free event (time stamps in microseconds, from the first event), the bytes
    allocated from each site; a site is ``"file:line (function)"`` of the
    innermost frame outside flambeau's packages. A free whose allocation was not
    recorded is ignored.

    Example:
        >>> import flambeau as fb
        >>> previous = fb.memory.get_allocator()
        >>> _ = fb.memory.set_allocator(fb.memory.caching_allocator())
        >>> from flambeau_alloc import memory_viz
        >>> memory_viz._record_memory_history(True)
        >>> x = fb.zeros(1000)
        >>> t = fb.memory.timeline(memory_viz._snapshot())
        >>> memory_viz._record_memory_history(False)
        >>> sorted(t), max(max(v) for v in t["bytes"].values()) >= 4000
        (['bytes', 'times_us'], True)
        >>> _ = fb.memory.set_allocator(previous)
    """
    if not isinstance(snapshot, dict) or "device_traces" not in snapshot:
        raise TypeError("[timeline] expected a snapshot from _snapshot() (a dict with 'device_traces')")
    events = []
    for n, trace in enumerate(snapshot["device_traces"]):
        for e in trace:
            if e["action"] in ("alloc", "free_requested"):
                events.append((e["time_us"], n, e))
    events.sort(key=lambda item: (item[0], item[1]))
    live: dict[tuple[int, int], tuple[str, int]] = {}
    current: dict[str, int] = {}
    times: list[int] = []
    series: dict[str, list[int]] = {}
    t0 = events[0][0] if events else 0
    for time_us, n, e in events:
        key = (n, e["addr"])
        if e["action"] == "alloc":
            site = _site(e["frames"])
            live[key] = (site, e["size"])
            current[site] = current.get(site, 0) + e["size"]
        else:
            found = live.pop(key, None)
            if found is None:
                continue
            site, size = found
            current[site] -= size
        times.append(time_us - t0)
        for site in current:
            if site not in series:
                series[site] = [0] * (len(times) - 1)
        for site, values in series.items():
            values.append(current.get(site, 0))
    return {"times_us": times, "bytes": series}


def plot_timeline(snapshot: dict[str, Any], path: str, *, top: int = 8, title: str | None = None) -> str:
    """Draws :func:`timeline` as a stacked area chart of the ``top`` sites (by peak) into ``path``.

    The format follows the suffix (``.png`` or ``.svg``). Needs matplotlib:
    ImportError with the install command when it is missing. Returns ``path``.

    Example:
        >>> import flambeau as fb
        >>> previous = fb.memory.get_allocator()
        >>> _ = fb.memory.set_allocator(fb.memory.caching_allocator())
        >>> import os, tempfile
        >>> from flambeau_alloc import memory_viz
        >>> memory_viz._record_memory_history(True)
        >>> x = fb.zeros(1000)
        >>> snapshot = memory_viz._snapshot()
        >>> memory_viz._record_memory_history(False)
        >>> path = os.path.join(tempfile.mkdtemp(), "timeline.svg")
        >>> fb.memory.plot_timeline(snapshot, path) == path, os.path.getsize(path) > 0
        (True, True)
        >>> _ = fb.memory.set_allocator(previous)
    """
    if not isinstance(path, (str, os.PathLike)):
        raise TypeError(f"[plot_timeline] path must be a str or os.PathLike, got {type(path).__name__}")
    suffix = os.path.splitext(os.fspath(path))[1].lower()
    if suffix not in (".png", ".svg"):
        raise ValueError(f"[plot_timeline] path must end in .png or .svg, got {os.fspath(path)!r}")
    data = timeline(snapshot)
    try:
        import matplotlib

        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError as e:
        raise ImportError(_MATPLOTLIB_MISSING) from e
    sites = sorted(data["bytes"], key=lambda s: max(data["bytes"][s], default=0), reverse=True)
    shown = sites[:top]
    rest = sites[top:]
    ys = [data["bytes"][s] for s in shown]
    labels = list(shown)
    if rest:
        ys.append([sum(data["bytes"][s][i] for s in rest) for i in range(len(data["times_us"]))])
        labels.append(f"{len(rest)} other sites")
    fig, ax = plt.subplots(figsize=(10, 5))
    xs = [t / 1000.0 for t in data["times_us"]]
    if xs:
        ax.stackplot(xs, [[v / 2**20 for v in y] for y in ys], labels=labels, step="post")
        ax.legend(loc="upper left", fontsize="small")
    ax.set_xlabel("time (ms)")
    ax.set_ylabel("allocated (MiB)")
    ax.set_title(title or "allocated memory by allocation site")
    fig.tight_layout()
    fig.savefig(os.fspath(path))
    plt.close(fig)
    return os.fspath(path)
