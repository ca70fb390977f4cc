#!/usr/bin/env python
"""flambeau vs PyTorch (and NumPy) on the same work, in one run, side by side.

``nox -s bench`` runs this script. Every contestant runs in its *own child
process*, which imports only its own library (flambeau, torch or numpy; NumPy
also serves as the data source). Both flambeau and torch bring an OpenMP
runtime (torch bundles its own libgomp, flambeau links the system one): in one
process, the idle workers of one runtime keep spinning after each op and steal
the CPU from the other's (measured on 2 cores: an MLP training step took
100-200 ms for *both* libraries in one process, ~5 ms each in separate ones).

The design is otherwise unchanged: for each benchmark the parent runs several
*rounds*, each starting one child per contestant (flambeau, torch, numpy, then
the reverse order in the next round), so that machine noise (another process on
the cores, CPU frequency changes) hits all of them alike. A child sets up the
work, warms up with one call, then times ``repeats`` repeats of ``number``
calls and prints the time per call of each repeat as JSON. The table shows the
minimum and the median per call over all repeats of all rounds and the ratio
flambeau/torch of the medians (< 1 means flambeau is faster).

Every child uses the same intra-op thread count (``--threads``, default:
flambeau's default, asked of a flambeau child so that the parent imports no
library); each library otherwise keeps its own defaults (e.g. its OpenMP wait
policy). These machines set ``OPENBLAS_CORETYPE`` and ``OPENBLAS_L2_SIZE``,
which pin OpenBLAS (flambeau's and NumPy's) to its older AVX2 kernels; the
header prints the values in effect. ``--unset-openblas-env`` runs the children
with both unset.

A benchmark that cannot run for a contestant (a missing piece, an op without a
kernel, a child that fails) prints ``n/a (reason)`` instead of stopping the run;
``FLAMBEAU_BENCH_DEBUG=1`` passes the children's tracebacks through.

Example:
    python benchmarks/run.py --quick
    python benchmarks/run.py --only matmul --threads 1
    python benchmarks/run.py --only mlp --child-env flambeau:GOMP_SPINCOUNT=10000
"""

from __future__ import annotations

import argparse
import json
import math
import os
import statistics
import subprocess
import sys
import time
import timeit
import traceback
from dataclasses import dataclass, field
from typing import Any

OPENBLAS_VARS = ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")
CONTESTANTS = ("flambeau", "torch", "numpy")
_RESULT_MARK = "@@flambeau-bench-result@@ "
_CHILD_TIMEOUT = 900.0  # seconds; one child runs one benchmark for one round


@dataclass(frozen=True)
class Spec:
    """A benchmark as the parent knows it (the work itself is built in the child)."""

    name: str
    description: str
    number: int  # calls per repeat
    repeats: int  # repeats in a full run (over all rounds)
    quick_repeats: int
    contestants: tuple[str, ...]
    quick_number: int | None = None


_ALL = CONTESTANTS
_FB_TORCH = ("flambeau", "torch")
SPECS = [
    Spec("add_1", "a + b, 1-element float32 (latency)", 20_000, 15, 4, _ALL),
    # Per-op overhead through the generated bindings: a keyword argument, a
    # Tensor method, a unary function, an in-place method, a reduction.
    Spec("add_alpha_1", "add(a, b, alpha=2), 1-element float32 (latency)", 20_000, 15, 4, _FB_TORCH),
    Spec("mul_method_1", "a.mul(b), 1-element float32 (latency)", 20_000, 15, 4, _FB_TORCH),
    Spec("exp_1", "exp(a), 1-element float32 (latency)", 20_000, 15, 4, _ALL),
    Spec("add_inplace_1", "a.add_(b), 1-element float32 (latency)", 20_000, 15, 4, _FB_TORCH),
    Spec("sum_1", "a.sum(), 1-element float32 (latency)", 20_000, 15, 4, _ALL),
    Spec("add_1000", "a + b, 1,000-element float32", 20_000, 15, 4, _ALL),
    Spec("add_64MiB", "a + b into a fresh 64 MiB output", 5, 15, 4, _ALL, quick_number=3),
    Spec("matmul_1024", "matmul 1024x1024 float32", 3, 15, 4, _ALL, quick_number=2),
    Spec("mlp_step", "MLP 784-512-512-10 train step, batch 128", 10, 15, 4, _FB_TORCH, quick_number=5),
    Spec("loader_w0", "DataLoader epoch, 60k x 784, batch 128, 0 workers", 1, 6, 2, _FB_TORCH),
    Spec("loader_w2", "DataLoader epoch, 60k x 784, batch 128, 2 workers", 1, 6, 2, _FB_TORCH),
]


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
    p.add_argument(
        "--threads", type=int, default=None, help="intra-op threads for every contestant (default: flambeau's)"
    )
    p.add_argument("--rounds", type=int, default=None, help="rounds of one child per contestant (default: 3, quick: 2)")
    p.add_argument(
        "--unset-openblas-env",
        action="store_true",
        help=f"run the children with {' and '.join(OPENBLAS_VARS)} unset (OpenBLAS picks its own kernels)",
    )
    p.add_argument(
        "--child-env",
        action="append",
        default=[],
        metavar="CONTESTANT:VAR=VALUE",
        help="set VAR in that contestant's children only (repeatable; 'CONTESTANT:VAR' unsets it), for investigations",
    )
    p.add_argument("--list", action="store_true", help="list the benchmarks and exit")
    # Internal: the parent starts children with these.
    p.add_argument("--_child", choices=CONTESTANTS, help=argparse.SUPPRESS)
    p.add_argument("--_probe", action="store_true", help=argparse.SUPPRESS)
    p.add_argument("--_bench", help=argparse.SUPPRESS)
    p.add_argument("--_repeats", type=int, default=1, help=argparse.SUPPRESS)
    p.add_argument("--_number", type=int, default=1, help=argparse.SUPPRESS)
    return p.parse_args(argv)


def _reason(exc: BaseException | str) -> str:
    if isinstance(exc, BaseException):
        msg = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        text = f"{type(exc).__name__}: {msg}" if msg else type(exc).__name__
    else:
        text = exc
    return text if len(text) <= 60 else text[:57] + "..."


# =========================================================================== child
#
# Everything in this section runs in a child process, which imports only the
# library of its contestant (and NumPy, the data source).


@dataclass
class Prepared:
    """What a setup returns: a statement to time and the names it uses."""

    stmt: str
    globals: dict[str, Any]


def _import_contestant(contestant: str, threads: int | None) -> tuple[Any, dict[str, Any]]:
    """Imports the contestant's library, sets its threads; returns it and facts for the header."""
    info: dict[str, Any] = {}
    if contestant == "flambeau":
        import flambeau as lib

        if threads is not None:
            lib.set_num_threads(threads)
        info["threads"] = lib.get_num_threads()
        try:
            import flambeau_core

            info["allocator"] = flambeau_core.get_allocator("cpu").name
        except Exception as e:
            info["allocator"] = f"n/a ({_reason(e)})"
        info["omp_wait_policy"] = os.environ.get("OMP_WAIT_POLICY", "<unset>")
    elif contestant == "torch":
        import torch as lib

        if threads is not None:
            lib.set_num_threads(threads)
        info["threads"] = lib.get_num_threads()
    else:
        import numpy as lib  # threads: OPENBLAS_NUM_THREADS, set by the parent

        info["threads"] = os.environ.get("OPENBLAS_NUM_THREADS", "<default>")
    info["version"] = getattr(lib, "__version__", "?")
    return lib, info


# Statement per latency benchmark, for flambeau/torch (``lib``) and for NumPy.
_LATENCY_STATEMENTS = {
    "add_alpha_1": {"lib": "lib.add(a, b, alpha=2)"},
    "mul_method_1": {"lib": "a.mul(b)"},
    "exp_1": {"lib": "lib.exp(a)", "numpy": "lib.exp(a)"},
    "add_inplace_1": {"lib": "a.add_(b)"},
    "sum_1": {"lib": "a.sum()", "numpy": "a.sum()"},
}


def _setup(name: str, contestant: str, lib: Any) -> Prepared:
    """Builds the work of benchmark ``name`` for ``contestant`` (``lib`` is its module)."""
    import numpy as np

    def to_lib(a: Any) -> Any:
        a = np.ascontiguousarray(a)
        if contestant == "numpy":
            return a.copy()
        return lib.from_numpy(a.copy())

    def as_numpy(t: Any) -> Any:
        return t if contestant == "numpy" else t.numpy()

    if name in _LATENCY_STATEMENTS:
        a, b = to_lib(np.array([1.5], dtype=np.float32)), to_lib(np.array([0.25], dtype=np.float32))
        statement = _LATENCY_STATEMENTS[name]["numpy" if contestant == "numpy" else "lib"]
        scope = {"a": a, "b": b, "lib": lib}
        eval(statement, scope)  # a missing op fails here, not inside the timer
        return Prepared(statement, scope)

    if name.startswith("add_"):
        n = {"add_1": 1, "add_1000": 1000, "add_64MiB": 64 * 1024 * 1024 // 4}[name]
        rng = np.random.default_rng(0)
        a_np = rng.standard_normal(n, dtype=np.float32)
        b_np = rng.standard_normal(n, dtype=np.float32)
        a, b = to_lib(a_np), to_lib(b_np)
        c = a + b  # a missing kernel fails here, not inside the timer
        if n <= 1000 and not np.allclose(as_numpy(c), a_np + b_np):
            raise RuntimeError("wrong result")
        return Prepared("a + b", {"a": a, "b": b})

    if name == "matmul_1024":
        n = 1024
        rng = np.random.default_rng(0)
        a_np = rng.standard_normal((n, n), dtype=np.float32)
        b_np = rng.standard_normal((n, n), dtype=np.float32)
        a, b = to_lib(a_np), to_lib(b_np)
        c = as_numpy(a @ b)
        # Check 8 rows in float64 with einsum (no BLAS: NumPy's OpenBLAS threads
        # would otherwise start spinning in a flambeau or torch child).
        expected = np.einsum("ij,jk->ik", a_np[:8].astype(np.float64), b_np.astype(np.float64))
        err = np.abs(c[:8].astype(np.float64) - expected).max()
        if err > 1e-2 * np.abs(expected).max():
            raise RuntimeError(f"wrong result (max error {err:.3g})")
        return Prepared("a @ b", {"a": a, "b": b})

    if name == "mlp_step":
        if contestant == "numpy":
            raise NotImplementedError("no autograd")
        rng = np.random.default_rng(0)
        x = to_lib(rng.standard_normal((128, 784), dtype=np.float32))
        y = to_lib(rng.integers(0, 10, size=128).astype(np.int64))
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

    if name.startswith("loader_w"):
        if contestant == "numpy":
            raise NotImplementedError("no DataLoader")
        num_workers = int(name[len("loader_w") :])
        n = 60_000
        x = to_lib(np.random.default_rng(1).standard_normal((n, 784), dtype=np.float32))
        y = to_lib(np.random.default_rng(2).integers(0, 10, size=n).astype(np.int64))
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

    raise ValueError(f"unknown benchmark {name!r}")


def child_main(args: argparse.Namespace) -> int:
    """Runs one benchmark (or only the import, with --_probe) and prints one JSON line."""
    out: dict[str, Any] = {"contestant": args._child, "times": [], "error": None}
    debug = bool(os.environ.get("FLAMBEAU_BENCH_DEBUG"))
    try:
        lib, info = _import_contestant(args._child, args.threads)
        out.update(info)
    except Exception as e:
        out["error"] = f"import failed: {_reason(e)}"
        if debug:
            traceback.print_exc()
        lib = None
    if lib is not None and not args._probe:
        try:
            prepared = _setup(args._bench, args._child, lib)
            timer = timeit.Timer(prepared.stmt, globals=prepared.globals)
            timer.timeit(1)  # warm-up
            for _ in range(args._repeats):
                out["times"].append(timer.timeit(args._number) / args._number)
        except Exception as e:
            out["error"] = _reason(e)
            if debug:
                traceback.print_exc()
    sys.stdout.flush()
    print(_RESULT_MARK + json.dumps(out), flush=True)
    return 0


# =========================================================================== parent


@dataclass
class Result:
    times: list[float] = field(default_factory=list)  # seconds per call, one per repeat
    error: str | None = None


def _parse_child_env(items: list[str]) -> dict[str, dict[str, str | None]]:
    envs: dict[str, dict[str, str | None]] = {c: {} for c in CONTESTANTS}
    for item in items:
        contestant, sep, assignment = item.partition(":")
        if not sep or contestant not in CONTESTANTS or not assignment:
            raise SystemExit(f"--child-env expects CONTESTANT:VAR=VALUE with CONTESTANT in {CONTESTANTS}, got {item!r}")
        var, eq, value = assignment.partition("=")
        envs[contestant][var] = value if eq else None
    return envs


class Children:
    """Starts one child per (contestant, benchmark, round) with the right environment."""

    def __init__(self, args: argparse.Namespace, threads: int | None) -> None:
        self.threads = threads
        base = dict(os.environ)
        if args.unset_openblas_env:
            for var in OPENBLAS_VARS:
                base.pop(var, None)
        self.extra = _parse_child_env(args.child_env)
        self.envs: dict[str, dict[str, str]] = {}
        for contestant in CONTESTANTS:
            env = dict(base)
            if contestant == "numpy" and threads is not None:
                env["OPENBLAS_NUM_THREADS"] = str(threads)  # NumPy has no thread setter
            for var, value in self.extra[contestant].items():
                if value is None:
                    env.pop(var, None)
                else:
                    env[var] = value
            self.envs[contestant] = env
        self.info: dict[str, dict[str, Any]] = {}  # contestant -> facts from its last child

    def run(self, contestant: str, bench: str | None = None, repeats: int = 1, number: int = 1) -> dict[str, Any]:
        cmd = [sys.executable, os.path.abspath(__file__), "--_child", contestant]
        if self.threads is not None:
            cmd += ["--threads", str(self.threads)]
        if bench is None:
            cmd.append("--_probe")
        else:
            cmd += ["--_bench", bench, "--_repeats", str(repeats), "--_number", str(number)]
        debug = bool(os.environ.get("FLAMBEAU_BENCH_DEBUG"))
        try:
            proc = subprocess.run(
                cmd,
                env=self.envs[contestant],
                stdin=subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=None if debug else subprocess.PIPE,
                text=True,
                timeout=_CHILD_TIMEOUT,
            )
        except subprocess.TimeoutExpired:
            return {"times": [], "error": f"child timed out after {_CHILD_TIMEOUT:.0f} s"}
        for line in reversed(proc.stdout.splitlines()):
            if line.startswith(_RESULT_MARK):
                result = json.loads(line[len(_RESULT_MARK) :])
                self.info[contestant] = {k: v for k, v in result.items() if k not in ("times", "error", "contestant")}
                return result
        if proc.returncode < 0:
            import signal

            try:
                why = f"child killed by {signal.Signals(-proc.returncode).name}"
            except ValueError:
                why = f"child killed by signal {-proc.returncode}"
        else:
            lines = [ln.strip() for ln in (proc.stderr or "").splitlines() if ln.strip()]
            # The most telling line: the last exception or fatal error, else the last line.
            telling = [ln for ln in lines if "Error" in ln or "Exception" in ln or "error" in ln]
            why = (telling or lines or [f"child exited with {proc.returncode}"])[-1]
        return {"times": [], "error": _reason(why)}


def run_benchmark(spec: Spec, children: Children, quick: bool, rounds: int) -> dict[str, Result]:
    number = (spec.quick_number or spec.number) if quick else spec.number
    repeats = spec.quick_repeats if quick else spec.repeats
    rounds = max(1, min(rounds, repeats))
    per_round = math.ceil(repeats / rounds)
    order = [c for c in CONTESTANTS if c in spec.contestants]
    results = {c: Result() for c in order}
    for r in range(rounds):
        # Alternate the order so that no contestant always runs first.
        for contestant in order if r % 2 == 0 else reversed(order):
            res = results[contestant]
            if res.error:
                continue
            out = children.run(contestant, spec.name, per_round, number)
            res.times.extend(out.get("times") or [])
            if out.get("error"):
                res.error = out["error"]
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


def _dist_version(name: str) -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return f"{name} {version(name)}"
    except PackageNotFoundError:
        return f"{name} n/a (not installed)"


def _loadavg() -> str:
    if not hasattr(os, "getloadavg"):
        return "?"
    return ", ".join(f"{x:.2f}" for x in os.getloadavg())


def print_header(args: argparse.Namespace, children: Children, probe: dict[str, Any], rounds: int) -> None:
    import platform

    print("flambeau benchmarks: flambeau vs PyTorch (vs NumPy); times are min / median per call")
    print(
        f"  python {platform.python_version()}, {platform.machine()}, {os.cpu_count()} CPUs visible, "
        f"affinity {len(os.sched_getaffinity(0)) if hasattr(os, 'sched_getaffinity') else '?'}"
    )
    print("  " + ", ".join(_dist_version(n) for n in CONTESTANTS))
    print(
        "  each contestant runs in its own child process (flambeau and torch each have an OpenMP runtime"
        " whose spinning workers would steal the cores from the other's in one process)"
    )
    print(f"  threads: {children.threads} in every child (default: flambeau's); each library keeps its other defaults")
    print(f"  load average before the run (1/5/15 min): {_loadavg()}  (other processes skew every figure)")
    env = ", ".join(f"{k}={children.envs['flambeau'].get(k, '<unset>')}" for k in OPENBLAS_VARS)
    print(f"  OpenBLAS environment: {env}")
    if probe.get("error"):
        print(f"  flambeau: n/a ({probe['error']})")
    else:
        print(
            f"  flambeau allocator: {probe.get('allocator', '?')}; "
            f"OMP_WAIT_POLICY in its child: {probe.get('omp_wait_policy', '?')}"
        )
    for contestant, extra in children.extra.items():
        if extra:
            shown = ", ".join(f"{k}={v}" if v is not None else f"{k} unset" for k, v in extra.items())
            print(f"  extra environment for {contestant}: {shown}")
    print(
        f"  mode: {'quick' if args.quick else 'full'}; {rounds} rounds per benchmark, "
        "one child per contestant per round, order flambeau/torch/numpy then reversed"
    )
    print()


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args._child:
        return child_main(args)
    if args.list:
        for s in SPECS:
            print(f"{s.name:<14} {s.description}")
        return 0
    specs = SPECS
    if args.only:
        specs = [s for s in SPECS if any(o in s.name for o in args.only)]
        if not specs:
            print(f"no benchmark matches {args.only}; use --list", file=sys.stderr)
            return 2
    if args.threads is not None and args.threads < 1:
        print("--threads must be >= 1", file=sys.stderr)
        return 2
    rounds = args.rounds if args.rounds is not None else (2 if args.quick else 3)
    if rounds < 1:
        print("--rounds must be >= 1", file=sys.stderr)
        return 2

    # The parent imports no library: a flambeau child reports flambeau's default
    # thread count (and the header's facts).
    children = Children(args, None)
    probe = children.run("flambeau")
    threads = args.threads
    if threads is None:
        threads = probe.get("threads") or (len(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else 1)
    children = Children(args, int(threads))
    print_header(args, children, probe, rounds)

    rows = []
    for spec in specs:
        t0 = time.perf_counter()
        print(f"running {spec.name} ...", end="", flush=True)
        results = run_benchmark(spec, children, args.quick, rounds)
        print(f" {time.perf_counter() - t0:.1f} s", flush=True)
        rows.append((spec, results))

    headers = ["benchmark", "flambeau (min / median)", "torch (min / median)", "numpy (min / median)", "fb/torch"]
    table = [headers]
    for spec, results in rows:
        table.append(
            [
                spec.name,
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
    threads_seen = ", ".join(f"{c} {info.get('threads', '?')}" for c, info in children.info.items())
    print(f"threads reported by the children: {threads_seen}; load average after the run: {_loadavg()}")
    for spec, _ in rows:
        print(f"  {spec.name:<12} {spec.description}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
