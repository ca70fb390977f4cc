"""``profile.export_memory_timeline``: bytes allocated over time, by category.

A block's category is where it was allocated: the outermost ``record_function``
range around the allocation (``forward``, ``optimizer``, ... as the program
names its phases), else ``backward`` inside the autograd engine, else
``ops`` inside an op, else ``other``. A block freed during the profile leaves
its category when freed; blocks allocated before the profile started are not
counted.
"""

from __future__ import annotations

import html
import io
import json
import os
from collections.abc import Sequence
from typing import Any

from flambeau_core._C import FlambeauError

from ._events import KIND_BACKWARD, KIND_OP, KIND_USER


def _category(parent: Any) -> str:
    outer_user, in_backward, in_op = None, False, False
    e = parent
    while e is not None:
        if e.kind == KIND_USER and e.name != "ProfilerStep*":
            outer_user = e.name
        in_backward |= e.kind == KIND_BACKWARD
        in_op |= e.kind == KIND_OP
        e = e.cpu_parent
    if outer_user is not None:
        return outer_user
    if in_backward:
        return "backward"
    return "ops" if in_op else "other"


def memory_timeline(memory: Sequence[tuple], device: str | None) -> tuple[list[float], list[str], list[list[int]]]:
    """(times in microseconds from the first event, categories, bytes per category at each time)."""
    live: dict[int, tuple[str, int]] = {}
    current: dict[str, int] = {}
    times: list[float] = []
    points: list[dict[str, int]] = []
    for ts, nbytes, _total, dev, address, _thread, parent in sorted(memory, key=lambda m: m[0]):
        if device is not None and dev != device:
            continue
        if nbytes > 0:
            cat = _category(parent)
            live[address] = (cat, nbytes)
        else:
            found = live.pop(address, None)
            if found is None:
                continue  # allocated before the profile started
            cat, nbytes = found[0], -found[1]
        current[cat] = current.get(cat, 0) + nbytes
        times.append(ts)
        points.append(dict(current))
    categories = sorted({c for p in points for c in p})
    t0 = times[0] if times else 0.0
    return [t - t0 for t in times], categories, [[p.get(c, 0) for c in categories] for p in points]


_COLORS = ["#4e79a7", "#f28e2b", "#e15759", "#76b7b2", "#59a14f", "#edc948", "#b07aa1", "#ff9da7", "#9c755f"]


def _svg(times: list[float], categories: list[str], sizes: list[list[int]], title: str) -> str:
    w, h, pad = 900, 400, 60
    t_max = max(times[-1], 1e-9) if times else 1.0
    top = max((sum(s) for s in sizes), default=0) or 1
    x = lambda t: pad + (w - 2 * pad) * t / t_max  # noqa: E731
    y = lambda b: h - pad - (h - 2 * pad) * b / top  # noqa: E731
    parts = [
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{w}" height="{h}" font-family="sans-serif" font-size="12">'
    ]
    parts.append(f'<text x="{w / 2}" y="20" text-anchor="middle">{html.escape(title)}</text>')
    below = [0] * len(times)
    for ci, cat in enumerate(categories):
        above = [b + s[ci] for b, s in zip(below, sizes, strict=True)]
        # A step area: the size holds until the next event.
        upper, lower = [], []
        for i, t in enumerate(times):
            t_next = times[i + 1] if i + 1 < len(times) else t_max
            upper += [(x(t), y(above[i])), (x(t_next), y(above[i]))]
            lower += [(x(t), y(below[i])), (x(t_next), y(below[i]))]
        pts = " ".join(f"{a:.1f},{b:.1f}" for a, b in upper + lower[::-1])
        color = _COLORS[ci % len(_COLORS)]
        parts.append(
            f'<polygon points="{pts}" fill="{color}" stroke="none"><title>{html.escape(cat)}</title></polygon>'
        )
        parts.append(f'<rect x="{w - pad - 150}" y="{30 + 16 * ci}" width="10" height="10" fill="{color}"/>')
        parts.append(f'<text x="{w - pad - 135}" y="{39 + 16 * ci}">{html.escape(cat)}</text>')
        below = above
    parts.append(f'<line x1="{pad}" y1="{h - pad}" x2="{w - pad}" y2="{h - pad}" stroke="black"/>')
    parts.append(f'<line x1="{pad}" y1="{pad}" x2="{pad}" y2="{h - pad}" stroke="black"/>')
    parts.append(f'<text x="{w / 2}" y="{h - 20}" text-anchor="middle">time (ms), {t_max / 1000:.3f} ms in all</text>')
    parts.append(
        f'<text x="15" y="{h / 2}" transform="rotate(-90 15 {h / 2})" text-anchor="middle">'
        f"memory (MB), peak {top / 2**20:.3f}</text>"
    )
    parts.append("</svg>")
    return "\n".join(parts)


def export_memory_timeline(memory: Sequence[tuple], path: str | os.PathLike, device: str | None) -> None:
    """Writes the timeline: ``.html`` (an SVG chart), ``.json`` ([times, sizes]) or ``.png`` (needs matplotlib)."""
    path = os.fspath(path)
    times, categories, sizes = memory_timeline(memory, device)
    if not times:
        raise FlambeauError(
            "[profiler.export_memory_timeline] no allocations were recorded"
            + (f" on device '{device}'" if device else "")
            + ": profile with profile_memory=True and run something that allocates inside the profile"
        )
    title = f"Memory timeline ({device or 'all devices'})"
    if path.endswith(".json"):
        with open(path, "w") as f:
            json.dump([times, sizes, categories], f)
    elif path.endswith(".html"):
        with open(path, "w") as f:
            f.write(
                f"<!DOCTYPE html>\n<html><head><meta charset='utf-8'><title>{html.escape(title)}</title></head>"
                f"<body>\n{_svg(times, categories, sizes, title)}\n</body></html>\n"
            )
    elif path.endswith(".png"):
        try:
            import matplotlib

            matplotlib.use("Agg")
            import matplotlib.pyplot as plt
        except ImportError as e:
            raise ImportError(
                "[profiler.export_memory_timeline] a .png needs matplotlib (pip install matplotlib); "
                "a .html or .json path needs nothing"
            ) from e
        fig, ax = plt.subplots(figsize=(10, 4))
        columns = list(zip(*sizes, strict=True))
        ax.stackplot(
            [t / 1000 for t in times], [[b / 2**20 for b in col] for col in columns], labels=categories, step="post"
        )
        ax.set_xlabel("time (ms)")
        ax.set_ylabel("memory (MB)")
        ax.set_title(title)
        ax.legend(loc="upper left")
        buf = io.BytesIO()
        fig.savefig(buf, format="png")
        plt.close(fig)
        with open(path, "wb") as f:
            f.write(buf.getvalue())
    else:
        raise FlambeauError(
            f"[profiler.export_memory_timeline] the path must end in .html, .json or .png, got '{path}'"
        )
