#!/usr/bin/env python
"""flambeau vs PyTorch (and NumPy) on the same work, in one run, side by side.

``nox -s bench`` runs this script. Every benchmark is timed for each contestant
in *interleaved* repeats (flambeau, torch, numpy, then the next repeat in the
reverse order), so that machine noise (another process on the 2 cores, CPU
frequency changes) hits all of them alike. Each repeat runs the work ``number``
times and records the time per call; the table shows the minimum and the median
over repeats and the ratio flambeau/torch (< 1 means flambeau is faster).

Both libraries are set to the same intra-op thread count (``--threads``,
default: flambeau's default). These machines set ``OPENBLAS_CORETYPE`` and
``OPENBLAS_L2_SIZE``, which pin OpenBLAS (flambeau's and NumPy's) to its older
AVX2 kernels; the header prints the values in effect. ``--unset-openblas-env``
re-runs the script with both unset.

A benchmark that cannot run for a contestant (a missing piece, an op without a
kernel) prints ``n/a (reason)`` instead of stopping the run.

Example:
    python benchmarks/run.py --quick
    python benchmarks/run.py --only matmul --threads 1
"""

from __future__ import annotations

import argparse
import os
import sys

OPENBLAS_VARS = ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")
_REEXEC_MARK = "FLAMBEAU_BENCH_REEXEC"


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description="flambeau vs PyTorch (and NumPy), side by side")
    p.add_argument("--quick", action="store_true", help="fewer repeats (a short smoke run)")
    p.add_argument(
        "--only",
        action="append",
        default=[],
        metavar="NAME",
        help="run only benchmarks whose name contains NAME (repeatable)",
    )
    p.add_argument("--threads", type=int, default=None, help="intra-op threads for both (default: flambeau's)")
    p.add_argument(
        "--unset-openblas-env",
        action="store_true",
        help=f"re-run with {' and '.join(OPENBLAS_VARS)} unset (OpenBLAS picks its own kernels)",
    )
    p.add_argument("--list", action="store_true", help="list the benchmarks and exit")
    return p.parse_args(argv)


def _maybe_reexec(args: argparse.Namespace) -> None:
    # OpenBLAS reads its environment when the library loads, so the variables
    # must be gone before numpy/torch/flambeau are imported: re-exec ourselves.
    if not args.unset_openblas_env or os.environ.get(_REEXEC_MARK):
        return
    env = {k: v for k, v in os.environ.items() if k not in OPENBLAS_VARS}
    env[_REEXEC_MARK] = "1"
    sys.stdout.flush()
    os.execve(sys.executable, [sys.executable, *sys.argv], env)


# The imports below happen after a possible re-exec (see main()).
import statistics  # noqa: E402
import time  # noqa: E402
import timeit  # noqa: E402
import traceback  # noqa: E402
from collections.abc import Callable  # noqa: E402
from dataclasses import dataclass, field  # noqa: E402
from typing import Any  # noqa: E402

CONTESTANTS = ("flambeau", "torch", "numpy")


@dataclass
class Prepared:
    """What a setup returns: a statement to time and the names it uses."""

    stmt: str
    globals: dict[str, Any]


@dataclass
class Benchmark:
    name: str
    description: str
    number: int  # calls per repeat
    repeats: int  # repeats (full run)
    quick_repeats: int
    setups: dict[str, Callable[[], Prepared]]  # contestant -> setup
    quick_number: int | None = None


@dataclass
class Result:
    times: list[float] = field(default_factory=list)  # seconds per call, one per repeat
    error: str | None = None


def _reason(exc: BaseException) -> str:
    msg = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    text = f"{type(exc).__name__}: {msg}" if msg else type(exc).__name__
    return text if len(text) <= 60 else text[:57] + "..."


# --------------------------------------------------------------------------- libraries


class Libraries:
    """Imports each contestant once; a failed import makes its rows n/a."""

    def __init__(self, threads: int | None) -> None:
        self.errors: dict[str, str] = {}
        self.fb = self.torch = self.np = None
        try:
            import numpy

            self.np = numpy
        except Exception as e:  # pragma: no cover - numpy is a hard dependency here
            self.errors["numpy"] = _reason(e)
        try:
            import torch

            self.torch = torch
        except Exception as e:
            self.errors["torch"] = _reason(e)
        try:
            import flambeau

            self.fb = flambeau
        except Exception as e:
            self.errors["flambeau"] = _reason(e)

        self.threads = threads
        if self.threads is None:
            if self.fb is not None:
                self.threads = self.fb.get_num_threads()
            elif self.torch is not None:
                self.threads = self.torch.get_num_threads()
        if self.threads is not None:
            if self.fb is not None:
                self.fb.set_num_threads(self.threads)
            if self.torch is not None:
                self.torch.set_num_threads(self.threads)

    def require(self, contestant: str) -> Any:
        mod = {"flambeau": self.fb, "torch": self.torch, "numpy": self.np}[contestant]
        if mod is None:
            raise ImportError(f"{contestant} not importable")
        return mod


# --------------------------------------------------------------------------- benchmarks


def build_benchmarks(libs: Libraries) -> list[Benchmark]:
    np = libs.np
    rng = np.random.default_rng(0)

    def add(n: int) -> dict[str, Callable[[], Prepared]]:
        a_np = rng.standard_normal(n).astype(np.float32)
        b_np = rng.standard_normal(n).astype(np.float32)

        def fb_setup() -> Prepared:
            fb = libs.require("flambeau")
            a, b = fb.rand(n), fb.rand(n)
            c = a + b  # a missing kernel fails here, not inside the timer
            assert tuple(c.shape) == (n,)
            return Prepared("a + b", {"a": a, "b": b})

        def torch_setup() -> Prepared:
            torch = libs.require("torch")
            return Prepared("a + b", {"a": torch.from_numpy(a_np.copy()), "b": torch.from_numpy(b_np.copy())})

        def np_setup() -> Prepared:
            return Prepared("a + b", {"a": a_np.copy(), "b": b_np.copy()})

        return {"flambeau": fb_setup, "torch": torch_setup, "numpy": np_setup}

    def matmul(n: int) -> dict[str, Callable[[], Prepared]]:
        a_np = rng.standard_normal((n, n)).astype(np.float32)
        b_np = rng.standard_normal((n, n)).astype(np.float32)
        expected = a_np.astype(np.float64) @ b_np.astype(np.float64)

        def check(c: Any) -> None:
            err = np.abs(np.asarray(c, dtype=np.float64) - expected).max()
            if err > 1e-2 * np.abs(expected).max():
                raise RuntimeError(f"wrong result (max error {err:.3g})")

        def fb_setup() -> Prepared:
            fb = libs.require("flambeau")
            a, b = fb.from_numpy(a_np.copy()), fb.from_numpy(b_np.copy())
            check((a @ b).numpy())
            return Prepared("a @ b", {"a": a, "b": b})

        def torch_setup() -> Prepared:
            torch = libs.require("torch")
            a, b = torch.from_numpy(a_np.copy()), torch.from_numpy(b_np.copy())
            check((a @ b).numpy())
            return Prepared("a @ b", {"a": a, "b": b})

        def np_setup() -> Prepared:
            a, b = a_np.copy(), b_np.copy()
            check(a @ b)
            return Prepared("a @ b", {"a": a, "b": b})

        return {"flambeau": fb_setup, "torch": torch_setup, "numpy": np_setup}

    def mlp_step() -> dict[str, Callable[[], Prepared]]:
        x_np = rng.standard_normal((128, 784)).astype(np.float32)
        y_np = rng.integers(0, 10, size=128).astype(np.int64)

        def make(lib: Any, x: Any, y: Any) -> Prepared:
            nn = lib.nn
            model = nn.Sequential(nn.Linear(784, 512), nn.ReLU(), nn.Linear(512, 512), nn.ReLU(), nn.Linear(512, 10))
            loss_fn = nn.CrossEntropyLoss()
            opt = lib.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)

            def step() -> None:
                opt.zero_grad()
                loss = loss_fn(model(x), y)
                loss.backward()
                opt.step()

            step()
            return Prepared("step()", {"step": step})

        def fb_setup() -> Prepared:
            fb = libs.require("flambeau")
            return make(fb, fb.from_numpy(x_np.copy()), fb.from_numpy(y_np.copy()))

        def torch_setup() -> Prepared:
            torch = libs.require("torch")
            return make(torch, torch.from_numpy(x_np.copy()), torch.from_numpy(y_np.copy()))

        return {"flambeau": fb_setup, "torch": torch_setup}

    def loader_epoch(num_workers: int) -> dict[str, Callable[[], Prepared]]:
        n = 60_000
        data: dict[str, Any] = {}

        def arrays() -> tuple[Any, Any]:
            if "x" not in data:
                data["x"] = np.random.default_rng(1).standard_normal((n, 784), dtype=np.float32)
                data["y"] = np.random.default_rng(2).integers(0, 10, size=n).astype(np.int64)
            return data["x"], data["y"]

        def make(lib: Any, x: Any, y: Any) -> Prepared:
            utils = lib.utils.data
            loader = utils.DataLoader(utils.TensorDataset(x, y), batch_size=128, shuffle=True, num_workers=num_workers)

            def epoch() -> None:
                batches, samples, width = 0, 0, 784
                for xb, yb in loader:
                    batches += 1
                    samples += yb.shape[0]
                    width = min(width, xb.shape[1])
                if batches != (n + 127) // 128 or samples != n or width != 784:
                    raise RuntimeError(f"wrong batches: {batches} batches, {samples} samples")

            return Prepared("epoch()", {"epoch": epoch})

        def fb_setup() -> Prepared:
            fb = libs.require("flambeau")
            x, y = arrays()
            return make(fb, fb.from_numpy(x.copy()), fb.from_numpy(y.copy()))

        def torch_setup() -> Prepared:
            torch = libs.require("torch")
            x, y = arrays()
            return make(torch, torch.from_numpy(x.copy()), torch.from_numpy(y.copy()))

        return {"flambeau": fb_setup, "torch": torch_setup}

    mib64 = 64 * 1024 * 1024 // 4
    return [
        Benchmark("add_1", "a + b, 1-element float32 (latency)", 20_000, 15, 5, add(1)),
        Benchmark("add_1000", "a + b, 1,000-element float32", 20_000, 15, 5, add(1000)),
        Benchmark("add_64MiB", "a + b into a fresh 64 MiB output", 5, 15, 4, add(mib64), quick_number=3),
        Benchmark("matmul_1024", "matmul 1024x1024 float32", 3, 10, 3, matmul(1024), quick_number=2),
        Benchmark("mlp_step", "MLP 784-512-512-10 train step, batch 128", 10, 15, 4, mlp_step(), quick_number=5),
        Benchmark("loader_w0", "DataLoader epoch, 60k x 784, batch 128, 0 workers", 1, 5, 2, loader_epoch(0)),
        Benchmark("loader_w2", "DataLoader epoch, 60k x 784, batch 128, 2 workers", 1, 5, 2, loader_epoch(2)),
    ]


# --------------------------------------------------------------------------- running


def run_benchmark(bench: Benchmark, quick: bool) -> dict[str, Result]:
    results = {c: Result() for c in CONTESTANTS if c in bench.setups}
    timers: dict[str, timeit.Timer] = {}
    for contestant in results:
        try:
            prepared = bench.setups[contestant]()
            timers[contestant] = timeit.Timer(prepared.stmt, globals=prepared.globals)
            timers[contestant].timeit(1)  # warm-up
        except Exception as e:
            results[contestant].error = _reason(e)
            if os.environ.get("FLAMBEAU_BENCH_DEBUG"):
                traceback.print_exc()
    number = (bench.quick_number or bench.number) if quick else bench.number
    repeats = bench.quick_repeats if quick else bench.repeats
    order = list(timers)
    for r in range(repeats):
        # Alternate the order so that neither contestant always runs first.
        for contestant in order if r % 2 == 0 else reversed(order):
            if results[contestant].error:
                continue
            try:
                results[contestant].times.append(timers[contestant].timeit(number) / number)
            except Exception as e:
                results[contestant].error = _reason(e)
    return results


def fmt_time(seconds: float) -> str:
    for unit, scale in (("s", 1.0), ("ms", 1e-3), ("us", 1e-6), ("ns", 1e-9)):
        if seconds >= scale:
            return f"{seconds / scale:.3g} {unit}"
    return f"{seconds * 1e9:.3g} ns"


def cell(result: Result | None) -> str:
    if result is None:
        return "-"
    if result.error:
        return f"n/a ({result.error})"
    if not result.times:
        return "n/a (no repeats)"
    return f"{fmt_time(min(result.times))} / {fmt_time(statistics.median(result.times))}"


def ratio(a: Result | None, b: Result | None) -> str:
    if a is None or b is None or a.error or b.error or not a.times or not b.times:
        return "-"
    return f"{statistics.median(a.times) / statistics.median(b.times):.2f}"


def print_header(libs: Libraries, args: argparse.Namespace) -> None:
    import platform

    print("flambeau benchmarks: flambeau vs PyTorch (vs NumPy); times are min / median per call")
    print(
        f"  python {platform.python_version()}, {platform.machine()}, {os.cpu_count()} CPUs visible, "
        f"affinity {len(os.sched_getaffinity(0)) if hasattr(os, 'sched_getaffinity') else '?'}"
    )
    versions = []
    for name, mod in (("flambeau", libs.fb), ("torch", libs.torch), ("numpy", libs.np)):
        versions.append(f"{name} {getattr(mod, '__version__', '?')}" if mod else f"{name} n/a ({libs.errors[name]})")
    print("  " + ", ".join(versions))
    print(f"  threads: {libs.threads} (flambeau and torch set to the same count)")
    if hasattr(os, "getloadavg"):
        load = ", ".join(f"{x:.2f}" for x in os.getloadavg())
        print(f"  load average before the run (1/5/15 min): {load}  (other processes skew every figure)")
    env = ", ".join(f"{k}={os.environ.get(k, '<unset>')}" for k in OPENBLAS_VARS)
    print(f"  OpenBLAS environment: {env}")
    if libs.fb is not None:
        alloc = "?"
        try:
            import flambeau_core

            alloc = flambeau_core.get_allocator("cpu").name
        except Exception as e:
            alloc = f"n/a ({_reason(e)})"
        print(f"  flambeau allocator: {alloc}")
    print(f"  mode: {'quick' if args.quick else 'full'}; repeats interleaved flambeau/torch/numpy")
    print()


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    _maybe_reexec(args)
    libs = Libraries(args.threads)
    if libs.np is None:
        print("numpy is required", file=sys.stderr)
        return 2
    benchmarks = build_benchmarks(libs)
    if args.list:
        for b in benchmarks:
            print(f"{b.name:<14} {b.description}")
        return 0
    if args.only:
        benchmarks = [b for b in benchmarks if any(o in b.name for o in args.only)]
        if not benchmarks:
            print(f"no benchmark matches {args.only}; use --list", file=sys.stderr)
            return 2
    print_header(libs, args)

    rows = []
    for bench in benchmarks:
        t0 = time.perf_counter()
        print(f"running {bench.name} ...", end="", flush=True)
        results = run_benchmark(bench, args.quick)
        print(f" {time.perf_counter() - t0:.1f} s", flush=True)
        rows.append((bench, results))

    headers = ["benchmark", "flambeau (min / median)", "torch (min / median)", "numpy (min / median)", "fb/torch"]
    table = [headers]
    for bench, results in rows:
        table.append(
            [
                bench.name,
                cell(results.get("flambeau")),
                cell(results.get("torch")),
                cell(results.get("numpy")),
                ratio(results.get("flambeau"), results.get("torch")),
            ]
        )
    widths = [max(len(r[i]) for r in table) for i in range(len(headers))]
    print()
    for i, r in enumerate(table):
        print("  ".join(c.ljust(w) if j == 0 else c.rjust(w) for j, (c, w) in enumerate(zip(r, widths, strict=True))))
        if i == 0:
            print("  ".join("-" * w for w in widths))
    print()
    print("fb/torch is the ratio of medians: < 1 means flambeau is faster.")
    for bench, _ in rows:
        print(f"  {bench.name:<12} {bench.description}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
