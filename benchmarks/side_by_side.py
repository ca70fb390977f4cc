"""The in-process side-by-side loop shared by the one-file op benchmarks
(ops_complex.py, ops_inplace.py, ops_mode_frexp.py).

Each case is ``(name, flambeau_call, torch_call)``. Both libraries run in the
calling process, rounds interleaved (flambeau then torch, then the reverse
order) with 2 intra-op threads each; a round times as many calls as fill
about 50 ms. Prints, per case, min and median per call and the ratio
torch/flambeau of the medians (> 1: flambeau is faster). Only ratios from
one run count on a shared, noisy machine.

The caller imports the libraries (after setting ``OMP_WAIT_POLICY`` if it
wants to) and passes them in, so this module imports neither.
"""

from __future__ import annotations

import argparse
import statistics
import time
from collections.abc import Callable, Iterable
from typing import Any

Case = tuple[str, Callable[[], Any], Callable[[], Any]]


def timeit(f: Callable[[], Any], reps: int) -> float:
    """Seconds per call of ``f`` over ``reps`` calls, after one warm-up call."""
    f()
    t0 = time.perf_counter()
    for _ in range(reps):
        f()
    return (time.perf_counter() - t0) / reps


def main(
    cases: Callable[[], Iterable[Case]],
    fb: Any,
    torch: Any | None,
    *,
    width: int = 34,
    labels: tuple[str, str] = ("fb", "torch"),
) -> None:
    """Parses ``--rounds``/``--only`` and prints one row per selected case; ``labels`` name the
    two calls of a case in the header (ops_sgemm.py compares two flambeau backends)."""
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--only", default="", help="run only the cases whose name contains this")
    args = ap.parse_args()
    fb.set_num_threads(2)
    if torch is not None:  # None: both calls are flambeau's
        torch.set_num_threads(2)
    a, b = labels
    print(f"{'case':{width}s} {a + ' min':>10s} {a + ' med':>10s} {b + ' min':>10s} {b + ' med':>10s} {'ratio':>7s}")
    for name, ff, tf in cases():
        if args.only and args.only not in name:
            continue
        reps = max(1, int(0.05 / max(timeit(ff, 1), 1e-6)))
        fts, tts = [], []
        for r in range(args.rounds):
            first, second = ((ff, fts), (tf, tts)) if r % 2 == 0 else ((tf, tts), (ff, fts))
            first[1].append(timeit(first[0], reps))
            second[1].append(timeit(second[0], reps))
        fm, tm = statistics.median(fts), statistics.median(tts)
        print(
            f"{name:{width}s} {min(fts) * 1e6:9.1f}u {fm * 1e6:9.1f}u "
            f"{min(tts) * 1e6:9.1f}u {tm * 1e6:9.1f}u {tm / fm:7.2f}"
        )
