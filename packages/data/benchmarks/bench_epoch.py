"""One DataLoader epoch: flambeau-data vs PyTorch's DataLoader, and the batched-gather bound.

60,000 in-memory samples (784 float32 features + an int64 label) in a
TensorDataset, batch 128, shuffle=True, with 0 and 2 workers; the bound is a
plain batched gather (``x[idx], y[idx]`` per batch of a shuffled order) in one
process. Also the start-up (``iter(loader)`` to the first batch, 2 workers,
fresh loader) and the first batch with 0 workers.

The Dataset people write: a map-style class whose ``__getitem__`` returns
``self.x[i], self.y[i]`` (60,000 1x28x28 float32 images, int64 labels), so
the loader fetches sample by sample and collates; with 0 workers, 2 workers
(started every epoch) and 2 persistent workers. Its floor is the row
"``__getitem__`` calls only": an epoch of ``[ds[i] for i in batch]`` over the
same shuffled batches, no collate, which no per-sample loader can beat.
The same data as ``StackDataset(x, y)`` (0 workers, 2 persistent workers):
flambeau's gathers a batch with one indexed copy per tensor (its
``__getitems__``), PyTorch's indexes its tensors sample by sample.

Every measurement runs in a child process of its own that imports only its
library (flambeau or torch; NumPy makes the data), one child per contestant
per round, the order reversed every other round, so machine noise hits both
alike. Each child times ``--epochs`` epochs after a warm-up epoch, with one
intra-op thread. The table gives min and median over all epochs of all rounds
and the ratio of the medians. ``nox -s bench`` runs this after
``benchmarks/run.py``.

    python packages/data/benchmarks/bench_epoch.py [--rounds 3] [--epochs 3] [--only sample]

``--only sample`` (or ``tensor``) runs only that dataset's rows (``sample``: the
x[i], y[i] Dataset's and StackDataset's, and the batched gather).
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

N, FEATURES, BATCH = 60_000, 784, 128
_MARK = "@@bench@@ "
_SAMPLE_ROWS = ("s0", "s2", "s2p", "sget", "k0", "k2p")  # the x[i], y[i] Dataset's rows, and StackDataset's


def _data():
    import numpy as np

    rng = np.random.default_rng(0)
    x = rng.standard_normal((N, FEATURES), dtype=np.float32)
    y = rng.integers(0, 10, size=N, dtype=np.int64)
    return x, y


class SampleDataset:
    """The usual map-style Dataset: one sample per ``__getitem__``, a view of each tensor."""

    def __init__(self, x, y) -> None:
        self.x, self.y = x, y

    def __len__(self) -> int:
        return len(self.x)

    def __getitem__(self, i):
        return self.x[i], self.y[i]


def _cpu_seconds() -> float:
    """CPU time of this process and of its worker processes, live (``/proc``) or reaped (``os.times``).

    On a shared machine the wall time of an epoch swings with what others run;
    the CPU time it costs does not, so the table gives both.
    """
    t = os.times()
    total = t.user + t.system + t.children_user + t.children_system
    me, tick = os.getpid(), os.sysconf("SC_CLK_TCK")
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            continue  # gone meanwhile
        if int(fields[1]) == me:  # ppid; utime and stime follow in clock ticks
            total += (int(fields[11]) + int(fields[12])) / tick
    return total


def _children_left() -> bool:
    """Whether a child process of this one is still there (running, exiting, or a zombie not yet reaped)."""
    me = str(os.getpid())
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            with open(f"/proc/{entry}/stat") as f:
                if f.read().rsplit(")", 1)[1].split()[1] == me:
                    return True
        except OSError:
            continue
    return False


def _settle(timeout: float = 10.0) -> None:
    """Waits until every child process is reaped, so that ``os.times`` holds all their CPU time.

    Workers started for an epoch are reaped after the epoch ends (by a thread of
    flambeau's loader): read at once, the CPU of the epoch's workers could fall
    between ``os.times`` (not reaped yet) and ``/proc`` (gone).
    """
    end = time.monotonic() + timeout
    while _children_left() and time.monotonic() < end:
        time.sleep(0.001)


def _child(lib: str, what: str, epochs: int) -> dict:
    x_np, y_np = _data()
    sample = what in _SAMPLE_ROWS
    if sample:
        x_np = x_np.reshape(N, 1, 28, 28)
    if lib == "flambeau":
        import flambeau_core as fc
        import flambeau_data as fdata

        fc.set_num_threads(1)
        ds = fdata.TensorDataset(x_np, y_np)
        x, y = ds.tensors
        make = fdata.DataLoader
        if sample:
            ds = fdata.StackDataset(x, y) if what.startswith("k") else SampleDataset(x, y)
    else:
        import torch

        torch.set_num_threads(1)
        x, y = torch.from_numpy(x_np), torch.from_numpy(y_np)
        ds = SampleDataset(x, y) if sample else torch.utils.data.TensorDataset(x, y)
        if what.startswith("k"):
            ds = torch.utils.data.StackDataset(x, y)
        make = torch.utils.data.DataLoader

    if what == "gather":  # the bound: one process, x[idx] and y[idx] per batch of a shuffled order
        import flambeau_core as fc

        def epoch() -> int:
            perm = fc.randperm(N).tolist()
            n = 0
            for i in range(0, N, BATCH):
                idx = perm[i : i + BATCH]
                xb, _ = x[idx], y[idx]
                n += xb.shape[0]
            return n

        return _time_epochs(epoch, epochs)

    if what == "sget":  # the per-sample floor: the Dataset's own calls, over the loader's shuffled batches
        batches = make(ds, batch_size=BATCH, shuffle=True).batch_sampler

        def epoch() -> int:
            n = 0
            for idx in batches:
                n += len([ds[i] for i in idx])
            return n

        return _time_epochs(epoch, epochs)

    if what in ("first0", "startup2"):
        workers = 0 if what == "first0" else 2
        times = []
        for _ in range(epochs + 1):
            start = time.perf_counter()
            it = iter(make(ds, batch_size=BATCH, shuffle=True, num_workers=workers))
            next(it)
            times.append(time.perf_counter() - start)
            del it
        return {"first": times[1:]}
    # "w2"/"s2p"/"k2p": persistent workers (started by the warm-up epoch); "s2": started every epoch.
    workers = int(what[1:].rstrip("p"))
    persistent = what.endswith("p") or what.startswith("w")
    loader = make(
        ds, batch_size=BATCH, shuffle=True, num_workers=workers, persistent_workers=persistent and workers > 0
    )

    def epoch() -> int:  # the first call is the warm-up (and the workers' start-up)
        n = 0
        for xb, _ in loader:
            n += xb.shape[0]
        return n

    return _time_epochs(epoch, epochs, settle=workers > 0 and not persistent)


def _time_epochs(epoch, epochs: int, settle: bool = False) -> dict:
    """Wall and CPU seconds of ``epochs`` calls of ``epoch()`` (each must return N), after one warm-up call.

    ``settle``: each epoch's workers are gone once it ends; the CPU is read after they are reaped
    (outside the wall time, and before the next epoch starts).
    """
    times, cpu = [], []
    epoch()
    for _ in range(epochs):
        if settle:
            _settle()
        start, cpu_start = time.perf_counter(), _cpu_seconds()
        assert epoch() == N
        times.append(time.perf_counter() - start)
        if settle:
            _settle()
        cpu.append(_cpu_seconds() - cpu_start)
    return {"epoch": times, "cpu": cpu}


def _run_child(lib: str, what: str, epochs: int) -> dict:
    proc = subprocess.run(
        [sys.executable, __file__, "--child", lib, what, "--epochs", str(epochs)],
        capture_output=True,
        text=True,
        timeout=900,
    )
    for line in proc.stdout.splitlines():
        if line.startswith(_MARK):
            return json.loads(line[len(_MARK) :])
    raise RuntimeError(f"{lib} {what} failed:\n{proc.stderr[-3000:]}")


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--rounds", type=int, default=3)
    parser.add_argument("--epochs", type=int, default=3)
    parser.add_argument("--only", choices=("tensor", "sample"), help="run only this dataset's rows")
    parser.add_argument("--child", nargs=2, metavar=("LIB", "WHAT"))
    args = parser.parse_args()
    if args.child:
        print(_MARK + json.dumps(_child(*args.child, args.epochs)), flush=True)
        return

    rows = [
        ("epoch, 0 workers (samples/s)", "w0", ("flambeau", "torch")),
        ("epoch, 2 workers (samples/s)", "w2", ("flambeau", "torch")),
        ("batched gather x[idx] (samples/s)", "gather", ("flambeau",)),
        ("start-up to 1st batch, 2 workers (ms)", "startup2", ("flambeau", "torch")),
        ("first batch, 0 workers (ms)", "first0", ("flambeau", "torch")),
        ("x[i], y[i] Dataset, 0 workers (samples/s)", "s0", ("flambeau", "torch")),
        ("x[i], y[i] Dataset, 2 workers (samples/s)", "s2", ("flambeau", "torch")),
        ("x[i], y[i] Dataset, 2 persistent (samples/s)", "s2p", ("flambeau", "torch")),
        ("x[i], y[i] Dataset, __getitem__ only (samples/s)", "sget", ("flambeau", "torch")),
        ("StackDataset(x, y), 0 workers (samples/s)", "k0", ("flambeau", "torch")),
        ("StackDataset(x, y), 2 persistent (samples/s)", "k2p", ("flambeau", "torch")),
    ]
    if args.only == "sample":
        rows = [r for r in rows if r[1] in (*_SAMPLE_ROWS, "gather")]
    elif args.only == "tensor":
        rows = [r for r in rows if r[1] not in _SAMPLE_ROWS]
    results: dict[tuple[str, str], list[float]] = {}
    cpu: dict[tuple[str, str], list[float]] = {}
    for r in range(args.rounds):
        for _, what, libs in rows:
            for lib in libs if r % 2 == 0 else tuple(reversed(libs)):
                out = _run_child(lib, what, args.epochs)
                results.setdefault((what, lib), []).extend(out.get("epoch") or out.get("first"))
                cpu.setdefault((what, lib), []).extend(out.get("cpu", []))

    def rate(ts: list[float]) -> tuple[float, float]:
        return N / min(ts), N / statistics.median(ts)

    print(
        f"DataLoader epoch: {N} x {FEATURES} float32 (TensorDataset; 1x28x28 for the x[i], y[i] Dataset), "
        f"batch {BATCH}, shuffle; {args.rounds} rounds"
    )
    print(f"{'':50} {'flambeau min/median':>24} {'torch min/median':>24} {'ratio':>7}")
    for title, what, _ in rows:
        fb = results[(what, "flambeau")]
        th = results.get((what, "torch"))
        if what.startswith(("startup", "first")):
            f = f"{min(fb) * 1e3:.1f} / {statistics.median(fb) * 1e3:.1f}"
            t = f"{min(th) * 1e3:.1f} / {statistics.median(th) * 1e3:.1f}" if th else "-"
            ratio = f"{statistics.median(th) / statistics.median(fb):.2f}x" if th else ""
        else:
            f = "{:,.0f} / {:,.0f}".format(*rate(fb))
            t = "{:,.0f} / {:,.0f}".format(*rate(th)) if th else "-"
            ratio = f"{statistics.median(th) / statistics.median(fb):.2f}x" if th else ""
        print(f"{title:50} {f:>24} {t:>24} {ratio:>7}")
    print("CPU seconds per epoch, the process and its workers (median; steadier than the wall time on a busy machine)")
    for title, what, _ in rows:
        fb, th = cpu.get((what, "flambeau")), cpu.get((what, "torch"))
        if fb:
            f = statistics.median(fb)
            t = f"{statistics.median(th):.3f}" if th else "-"
            ratio = f"{statistics.median(th) / f:.2f}x" if th else ""
            print(f"{title.split(' (')[0]:50} {f:>24.3f} {t:>24} {ratio:>7}")
    bound = statistics.median(results[("gather", "flambeau")])
    for what, name in (("w2", "2 workers"), ("s0", "x[i], y[i] Dataset, 0 workers")):
        if (what, "flambeau") in results:
            med = statistics.median(results[(what, "flambeau")])
            print(f"{name} vs the batched gather: {med / bound:.2f}x its epoch time")
    if ("s0", "torch") in results and ("sget", "flambeau") in results:
        floor = statistics.median(results[("sget", "flambeau")])
        s0 = statistics.median(results[("s0", "flambeau")])
        goal = statistics.median(results[("s0", "torch")]) / 3
        print(
            f"x[i], y[i] Dataset, 0 workers: {s0 * 1e3:.0f} ms per epoch; its __getitem__ calls alone "
            f"{floor * 1e3:.0f} ms; 3x PyTorch's 0-worker epoch would be {goal * 1e3:.0f} ms (medians)"
        )
    print("ratio: torch median time / flambeau median time (> 1: flambeau faster)")


if __name__ == "__main__":
    main()
