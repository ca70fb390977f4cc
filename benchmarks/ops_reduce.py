#!/usr/bin/env python
"""Reductions, scans and sort against PyTorch and NumPy on 1M-element float32.

The rows of the issue: sum, mean, var, max along the last dim, cumsum and sort
of a (1000, 1000) float32 tensor, plus a 1-D 1M sort and cumsum, and the full
sum of 16M float32 (reported as read bandwidth too). All three libraries run in
this one process, interleaved: each round times a block of calls of each (the
order rotates between rounds), so machine noise hits them alike. Prints min and
median per call and the ratio best_other_time / flambeau_time of the medians,
where best_other is the faster of torch and NumPy (> 1: flambeau is faster).

The sort rows compare like for like. "sort values" rows: values only,
flambeau's Array API sort (the values-only kernel, no index payload) against
np.sort and torch.sort(...).values (torch has no values-only sort). "sort"
rows: values and int64 indices, fb.sort against torch.sort and NumPy's
np.argsort(kind="stable") + np.take_along_axis (NumPy has no single call
returning both). Its max row is
np.max (values only; torch.max(dim) and flambeau return values and indices).
NumPy is single-threaded; torch and flambeau use --threads (default 2).

flambeau is imported first: it sets OMP_WAIT_POLICY=PASSIVE before torch
loads, so the two OpenMP runtimes do not spin against each other
(benchmarks/ops_norm.py explains). The caching allocator is enabled as
``import flambeau`` does (flambeau_core and flambeau_alloc only are imported,
so the script runs in a venv without the distributed extra).

    python benchmarks/ops_reduce.py [--threads 2] [--rounds 15] [--only sort]
"""

from __future__ import annotations

import argparse
import statistics
import time

import flambeau_alloc  # noqa: I001  (first: see above)
import flambeau_core as fc
import numpy as np
import torch
from flambeau_core import array_api as xp


def _np_sort_indices(x):
    """NumPy's (values, indices) of a stable sort along the last axis."""
    i = np.argsort(x, axis=-1, kind="stable")
    return np.take_along_axis(x, i, axis=-1), i


def _cases():
    rng = np.random.default_rng(0)
    x2 = rng.standard_normal((1000, 1000)).astype(np.float32)
    x1 = rng.standard_normal(1_000_000).astype(np.float32)
    big = rng.standard_normal(16 * 1024 * 1024).astype(np.float32)
    f2, t2 = fc.tensor(x2), torch.from_numpy(x2.copy())
    f1, t1 = fc.tensor(x1), torch.from_numpy(x1.copy())
    fbig, tbig = fc.tensor(big), torch.from_numpy(big.copy())
    return {
        "sum (1000,1000) dim=-1": (lambda: f2.sum(-1), lambda: t2.sum(-1), lambda: x2.sum(-1), x2.nbytes),
        "mean (1000,1000) dim=-1": (lambda: f2.mean(-1), lambda: t2.mean(-1), lambda: x2.mean(-1), x2.nbytes),
        "var (1000,1000) dim=-1": (lambda: f2.var(-1), lambda: t2.var(-1), lambda: x2.var(-1, ddof=1), x2.nbytes),
        "max (1000,1000) dim=-1": (lambda: f2.max(-1), lambda: t2.max(-1), lambda: x2.max(-1), x2.nbytes),
        "cumsum (1000,1000) dim=-1": (lambda: f2.cumsum(-1), lambda: t2.cumsum(-1), lambda: x2.cumsum(-1), x2.nbytes),
        "cumsum (1M,)": (lambda: f1.cumsum(0), lambda: t1.cumsum(0), lambda: x1.cumsum(0), x1.nbytes),
        "sort values (1000,1000) dim=-1": (
            lambda: xp.sort(f2),
            lambda: t2.sort(-1).values,
            lambda: np.sort(x2, -1),
            x2.nbytes,
        ),
        "sort (1000,1000) dim=-1": (lambda: f2.sort(-1), lambda: t2.sort(-1), lambda: _np_sort_indices(x2), x2.nbytes),
        "sort values (1M,)": (lambda: xp.sort(f1), lambda: t1.sort().values, lambda: np.sort(x1), x1.nbytes),
        "sort (1M,)": (lambda: f1.sort(), lambda: t1.sort(), lambda: _np_sort_indices(x1), x1.nbytes),
        "sum (16M,) all": (lambda: fbig.sum(), lambda: tbig.sum(), lambda: big.sum(), big.nbytes),
    }


def time_block(fn, number: int) -> float:
    t0 = time.perf_counter()
    for _ in range(number):
        fn()
    return (time.perf_counter() - t0) / number


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--rounds", type=int, default=15)
    ap.add_argument("--min-block", type=float, default=0.02, help="seconds per timed block (sets the calls per block)")
    ap.add_argument("--only", default="", help="run the cases whose name contains this")
    a = ap.parse_args()
    flambeau_alloc.enable()  # the caching allocator, on by default under `import flambeau`
    fc.set_num_threads(a.threads)
    torch.set_num_threads(a.threads)
    print(
        f"threads={a.threads} rounds={a.rounds} torch={torch.__version__} numpy={np.__version__} "
        f"cpu={fc._C._cpu_capability()}"
    )
    head = f"{'case':31s} {'flambeau min/med (us)':>22s} {'torch min/med (us)':>20s} {'numpy min/med (us)':>20s}"
    print(head + f" {'best/flambeau':>14s} {'fb GB/s':>8s} {'torch GB/s':>10s}")
    for name, (run_fb, run_th, run_np, nbytes) in _cases().items():
        if a.only not in name:
            continue
        fns = [run_fb, run_th, run_np]
        for fn in fns:  # warm up (allocator caches, first-touch pages)
            for _ in range(3):
                fn()
        number = max(1, int(a.min_block / max(time_block(run_fb, 1), 1e-6)))
        times: list[list[float]] = [[], [], []]
        for r in range(a.rounds):
            order = [(r + k) % 3 for k in range(3)]
            for i in order:
                times[i].append(time_block(fns[i], number))
        mins = [min(t) * 1e6 for t in times]
        meds = [statistics.median(t) * 1e6 for t in times]
        ratio = min(meds[1], meds[2]) / meds[0]
        cells = " ".join(f"{mins[i]:9.1f} / {meds[i]:9.1f}" for i in range(3))
        print(f"{name:31s} {cells} {ratio:13.2f}x {nbytes / meds[0] / 1e3:8.1f} {nbytes / meds[1] / 1e3:10.1f}")


if __name__ == "__main__":
    main()
