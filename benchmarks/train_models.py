#!/usr/bin/env python
"""Training and inference throughput of the six benchmark models, flambeau vs PyTorch (eager, compiled) and JAX.

``nox -s bench`` runs this script after ``run.py``. The models are defined once
for both frameworks in ``benchmarks/models.py``; a training step is
``zero_grad(set_to_none=True)``, forward, loss, ``backward()``,
``SGD(lr=0.01, momentum=0.9).step()`` on a fixed random batch.

How it measures (see benchmarks/README.md):

- Each framework runs in its own child process (flambeau and torch each bring
  an OpenMP runtime; in one process their idle workers steal each other's
  cores). A *round* is one child per framework that times every selected
  model; rounds are interleaved (flambeau, torch, then torch, flambeau, ...)
  so that machine noise hits both alike. Every child uses the same thread
  count (``--threads``, default 2).
- In a child, per model: warm-up steps, then as many steps as fit in about
  ``--seconds`` (at least 3), each timed: the batch size over the median step
  time is the round's samples/s figure. The table shows min / median over the
  rounds. The MLP and ResNet-8 are also
  timed as no-grad inference in eval mode.
- flambeau's caching allocator: its count of raw (system) allocations
  (``flambeau_alloc.memory_stats()["num_device_alloc"]``) is read before and
  after the timed steady-state steps; 0 means no step asked the system for
  memory.
- Peak RSS: a fresh child per model and framework builds the model and runs
  50 training steps; the peak resident set size of that process
  (``getrusage``), with its growth over the RSS after the import in brackets.
- The whole run is made once with ``OPENBLAS_CORETYPE`` / ``OPENBLAS_L2_SIZE``
  as the environment sets them and once with both unset, in the children's
  environment only, for both frameworks (``--openblas`` picks one).

Peers beyond PyTorch eager, opt-in (``--peers compile,jax``; see
benchmarks/README.md): ``fb.compile`` of the whole training step (zero_grad,
forward, loss, backward, optimizer.step replayed as one program; the model's
forward is compiled too, for the eval rows) and ``torch.compile(model)`` (the
model's forward; backward and the optimizer run as in eager), and JAX with one
jitted step function
(``benchmarks/models_jax.py``). Each is one more child per round, in the
interleaved order. The first call's time less a steady step's is reported as
the compile time: cold in round 1 (empty compile caches, made for the run),
warm in later rounds (the caches the earlier rounds filled). The ratios
compare flambeau (eager and compiled) with the fastest peer of each row.

Spread mode (``--processes N``, see benchmarks/README.md): each model is timed
(training) in N fresh processes per mode, one model per process, and the table
shows every process's figure, min / median / max, the spread (max / min - 1)
and where the main thread ran; ``--contention`` times the same model again
while a process spinning on one CPU (``sched_setaffinity``) takes one of the
cores and reports the busy median as a fraction of the quiet one.

A model whose layers a framework lacks shows ``n/a (missing: Conv2d)``; any
other failure in a child shows ``n/a (reason)`` and the run goes on
(``FLAMBEAU_BENCH_DEBUG=1`` passes the children's tracebacks through).

Example:
    python benchmarks/train_models.py --models mlp,ncf --rounds 1
"""

from __future__ import annotations

import argparse
import gc
import json
import math
import os
import resource
import statistics
import subprocess
import sys
import threading
import time
import traceback
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from models import FRAMEWORKS, MODELS, TrainStep, framework  # noqa: E402

OPENBLAS_VARS = ("OPENBLAS_CORETYPE", "OPENBLAS_L2_SIZE")
_RESULT_MARK = "@@flambeau-train-models@@ "
_CHILD_TIMEOUT = 1200.0  # seconds
_COMPILE_CHILD_TIMEOUT = 3600.0  # torch.compile's cold compile takes minutes per model on 2 busy cores
RSS_STEPS = 50

# A mode is one kind of child: (framework of models.py, how the model runs).
# "flambeau" and "torch" always run; --peers adds the others.
MODES: dict[str, tuple[str, str]] = {
    "flambeau": ("flambeau", "eager"),
    "fb.compile": ("flambeau", "compile"),
    "torch": ("torch", "eager"),
    "torch.compile": ("torch", "compile"),
    "jax.jit": ("jax", "jit"),
}
PEER_GROUPS = {"compile": ("fb.compile", "torch.compile"), "jax": ("jax.jit",), "fb.compile": ("fb.compile",)}
OURS = ("flambeau", "fb.compile")
COMPILED = ("fb.compile", "torch.compile", "jax.jit")


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description="The six benchmark models, flambeau vs PyTorch, side by side")
    p.add_argument(
        "--models",
        default=",".join(MODELS),
        help=f"comma-separated models to run (default: all of {', '.join(MODELS)})",
    )
    p.add_argument("--rounds", type=int, default=3, help="interleaved rounds of one child per framework (default 3)")
    p.add_argument("--threads", type=int, default=2, help="intra-op threads in every child (default 2)")
    p.add_argument("--seconds", type=float, default=1.0, help="timed seconds per model, round and mode (default 1)")
    p.add_argument(
        "--openblas",
        choices=("both", "env", "unset"),
        default="both",
        help=f"tables to make: {' and '.join(OPENBLAS_VARS)} as set in the environment, unset, or both (default)",
    )
    p.add_argument(
        "--peers",
        default="",
        help="more modes besides flambeau and torch eager: comma-separated of compile (fb.compile and "
        "torch.compile), fb.compile (alone: no torch.compile cold compile), jax (JAX, jitted step; needs jax "
        "installed), all (default: none)",
    )
    p.add_argument("--no-rss", action="store_true", help="skip the peak-RSS children")
    p.add_argument("--quick", action="store_true", help="one round, 0.3 s per measurement, no RSS children")
    p.add_argument(
        "--processes",
        type=int,
        default=0,
        help="spread mode: time each model (train) in N fresh processes per framework, one model per process, "
        "and report every process's figure, min / median / max and the spread max/min - 1 (default: off)",
    )
    p.add_argument(
        "--contention",
        action="store_true",
        help="with --processes: also time every model while a busy process spinning on one CPU "
        "(sched_setaffinity) takes one of the cores, as a fraction of the quiet median",
    )
    # Internal: the parent starts children with these.
    p.add_argument("--_child", choices=tuple(MODES), help=argparse.SUPPRESS)
    p.add_argument("--_mode", choices=("time", "rss"), help=argparse.SUPPRESS)
    p.add_argument("--_train_only", action="store_true", help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    args.model_list = [m.strip() for m in args.models.split(",") if m.strip()]
    unknown = [m for m in args.model_list if m not in MODELS]
    if unknown or not args.model_list:
        p.error(f"--models: unknown {unknown or 'empty list'}; choose from {', '.join(MODELS)}")
    peers = [x.strip() for x in args.peers.split(",") if x.strip()]
    if "all" in peers:
        peers = list(PEER_GROUPS)
    bad = [x for x in peers if x not in PEER_GROUPS]
    if bad:
        p.error(f"--peers: unknown {bad}; choose from {', '.join(PEER_GROUPS)}, all")
    extra = {m for g in peers for m in PEER_GROUPS[g]}
    args.modes = [m for m in MODES if m in ("flambeau", "torch") or m in extra]
    if args.quick:
        args.rounds, args.seconds, args.no_rss = 1, min(args.seconds, 0.3), True
    if args.rounds < 1 or args.threads < 1 or args.seconds <= 0:
        p.error("--rounds and --threads must be >= 1, --seconds > 0")
    if args.processes < 0 or (args.contention and args.processes < 1):
        p.error("--processes must be >= 1 (and is needed by --contention)")
    return args


def _reason(exc: BaseException | str) -> str:
    if isinstance(exc, BaseException):
        msg = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
        text = f"{type(exc).__name__}: {msg}" if msg else type(exc).__name__
    else:
        text = exc
    return text if len(text) <= 70 else text[:67] + "..."


# =========================================================================== child


def _rss_bytes() -> int:
    with open("/proc/self/statm") as f:
        return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


def _raw_allocs(fw: Any) -> tuple[int, int] | None:
    """(raw system allocations, allocations served) of flambeau's caching allocator; None for torch."""
    if fw.name != "flambeau":
        return None
    import flambeau_alloc

    stats = flambeau_alloc.memory_stats()
    return stats["num_device_alloc"], stats["allocation.all.allocated"]


def _usage() -> tuple[float, int]:
    """(CPU seconds all threads of this process used, user + system; page faults taken, minor + major)."""
    r = resource.getrusage(resource.RUSAGE_SELF)
    return r.ru_utime + r.ru_stime, r.ru_minflt + r.ru_majflt


def _timed(fn: Any, batch: int, seconds: float, usage: dict[str, float] | None = None) -> tuple[float, int]:
    """Warms ``fn`` up, then calls it for about ``seconds``; returns (samples/s of the median call, calls timed).

    The median call rather than the mean: on a shared machine a few calls
    that another process interrupts would otherwise weigh on the figure.
    With ``usage``, also fills in ``cpu_ms`` and ``faults``: the process's CPU
    time (every thread's) and page faults per timed call, which other
    processes' load on the cores hardly changes, unlike the wall-clock figure.
    """
    fn()
    fn()
    t0 = time.perf_counter()
    fn()
    estimate = max(time.perf_counter() - t0, 1e-6)
    n = max(3, min(10_000, math.ceil(seconds / estimate)))
    times = []
    clock = time.perf_counter
    cpu0, faults0 = _usage()
    for _ in range(n):
        t0 = clock()
        fn()
        times.append(clock() - t0)
    if usage is not None:
        cpu1, faults1 = _usage()
        usage["cpu_ms"], usage["faults"] = 1e3 * (cpu1 - cpu0) / n, (faults1 - faults0) / n
    return batch / statistics.median(times), n


def _first_call(fn: Any) -> float:
    t0 = time.perf_counter()
    fn()
    return time.perf_counter() - t0


def _thread_runtimes() -> dict[int, tuple[int, int]]:
    """Every thread of this process: tid -> (ns it has run, the CPU it last ran on); {} where /proc lacks them."""
    out = {}
    try:
        tids = os.listdir("/proc/self/task")
    except OSError:
        return {}
    for tid in tids:
        try:
            with open(f"/proc/self/task/{tid}/schedstat") as f:
                run_ns = int(f.read().split()[0])
            with open(f"/proc/self/task/{tid}/stat") as f:
                cpu = int(f.read().rsplit(")", 1)[1].split()[36])
        except (OSError, ValueError, IndexError):
            continue  # the thread ended meanwhile
        out[int(tid)] = (run_ns, cpu)
    return out


def _huge_page_bytes() -> int:
    """This process's anonymous memory on transparent huge pages (AnonHugePages of /proc/self/smaps_rollup)."""
    try:
        with open("/proc/self/smaps_rollup") as f:
            for line in f:
                if line.startswith("AnonHugePages:"):
                    return int(line.split()[1]) * 1024
    except OSError:
        pass
    return 0


def placement(before: dict[int, tuple[int, int]], after: dict[int, tuple[int, int]], main: int) -> dict[str, Any]:
    """Where the timed steps ran: the main thread's last CPU and its share of the CPU time all threads used."""
    used = {t: after[t][0] - before.get(t, (0, 0))[0] for t in after}
    total = sum(max(0, v) for v in used.values())
    share = used.get(main, 0) / total if total > 0 else 0.0
    ran = sum(1 for v in used.values() if total > 0 and v > 0.01 * total)
    return {"main_cpu": after[main][1] if main in after else -1, "main_share": share, "threads_ran": ran}


def _time_model(name: str, fw: Any, seconds: float, compiled: bool = False, train_only: bool = False) -> dict[str, Any]:
    spec = MODELS[name]
    missing = spec.missing(fw)
    if missing:
        return {"error": f"missing: {', '.join(missing)}"}
    fw.manual_seed(0)
    model = spec.build(fw)
    if compiled:  # fb.compile / torch.compile of the model: its forward; backward and the optimizer run eagerly
        model = fw.lib.compile(model)
    trainer = TrainStep(spec, fw, model=model)
    if compiled and fw.name == "flambeau":  # the whole step (docs/compile.md, "Training steps")
        trainer.step = fw.lib.compile(trainer.step)  # type: ignore[method-assign]
    out: dict[str, Any] = {}
    first = _first_call(trainer.step)  # allocates the momentum buffers; compiles a compiled model
    first_calls = 1
    if compiled and fw.name == "flambeau":  # the first step made the optimizer's state eagerly; this one captures
        first += _first_call(trainer.step)
        first_calls = 2
        # whether the capture's check replay ran or a record of an earlier child's check stood for it
        out["compile_train_by_record"] = bool(trainer.step.checks) and all(
            c == "a record of an earlier check" for c in trainer.step.checks
        )
    before = _raw_allocs(fw)
    threads_before = _thread_runtimes() if train_only else {}
    usage: dict[str, float] = {}
    out["train"], steps = _timed(trainer.step, spec.batch, seconds, usage)
    if train_only:  # the spread mode's per-process facts
        out["placement"] = placement(threads_before, _thread_runtimes(), threading.get_native_id())
        out["placement"]["huge_pages"] = _huge_page_bytes()
        out["placement"].update(usage)
    after = _raw_allocs(fw)
    if compiled:  # the first calls less as many steady ones
        out["compile_train"] = max(0.0, first - first_calls * spec.batch / out["train"])
    if before is not None and after is not None:
        out["raw_allocs"] = [after[0] - before[0], after[1] - before[1], steps]
    if spec.eval_benchmark and not train_only:
        trainer.model.eval()
        first = _first_call(trainer.infer)
        out["eval"], _ = _timed(trainer.infer, spec.batch, seconds)
        if compiled:
            out["compile_eval"] = max(0.0, first - spec.batch / out["eval"])
    return out


def _time_jax_model(name: str, seconds: float) -> dict[str, Any]:
    """The JAX model of ``models_jax.py``: one jitted step (params, opt_state, batch) -> (params, opt_state, loss)."""
    import jax
    from models_jax import JaxModel

    spec = MODELS[name]
    m = JaxModel(name)
    params, opt_state = m.init(jax.random.PRNGKey(0))
    batch = m.inputs(jax.random.PRNGKey(1))
    state = [params, opt_state]

    def step() -> None:
        state[0], state[1], loss = m.step(state[0], state[1], batch)
        loss.block_until_ready()  # one executable makes every output: the step is done

    def infer() -> None:
        m.infer(state[0], state[1][1], batch[0]).block_until_ready()

    out: dict[str, Any] = {}
    first = _first_call(step)
    out["train"], _ = _timed(step, spec.batch, seconds)
    out["compile_train"] = max(0.0, first - spec.batch / out["train"])
    if spec.eval_benchmark:
        first = _first_call(infer)
        out["eval"], _ = _timed(infer, spec.batch, seconds)
        out["compile_eval"] = max(0.0, first - spec.batch / out["eval"])
    return out


class _JaxNamespace:
    """What child_main needs of a framework, for the JAX child."""

    name = "jax"

    def __init__(self, threads: int) -> None:
        import jax

        self.lib, self.threads = jax, threads

    def set_num_threads(self, n: int) -> None:
        pass  # XLA's threads follow the CPU affinity the parent's environment and _pin_cpus set

    def get_num_threads(self) -> str:
        return f"{len(os.sched_getaffinity(0))} CPUs" if hasattr(os, "sched_getaffinity") else "?"


def _pin_cpus(n: int) -> None:
    """Restricts this process to ``n`` of its CPUs (XLA sizes its thread pools from the CPUs it may use)."""
    if hasattr(os, "sched_setaffinity"):
        cpus = sorted(os.sched_getaffinity(0))
        if len(cpus) > n:
            os.sched_setaffinity(0, cpus[:n])


def _rss_model(name: str, fw: Any) -> dict[str, Any]:
    import resource

    spec = MODELS[name]
    missing = spec.missing(fw)
    if missing:
        return {"error": f"missing: {', '.join(missing)}"}
    base = _rss_bytes()
    fw.manual_seed(0)
    trainer = TrainStep(spec, fw)
    for _ in range(RSS_STEPS):
        trainer.step()
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss * 1024  # KiB on Linux
    return {"peak_rss": peak, "import_rss": base}


def child_main(args: argparse.Namespace) -> int:
    debug = bool(os.environ.get("FLAMBEAU_BENCH_DEBUG"))
    results: dict[str, Any] = {}
    lib, how = MODES[args._child]
    try:
        if lib == "jax":
            _pin_cpus(args.threads)
            fw: Any = _JaxNamespace(args.threads)
        else:
            fw = framework(lib)
        fw.set_num_threads(args.threads)
    except Exception as e:
        if debug:
            traceback.print_exc()
        results = {name: {"error": f"import failed: {_reason(e)}"} for name in args.model_list}
        print(_RESULT_MARK + json.dumps(results), flush=True)
        return 0
    for name in args.model_list:
        try:
            if args._mode == "rss":
                results[name] = _rss_model(name, fw)
            elif lib == "jax":
                results[name] = _time_jax_model(name, args.seconds)
            else:
                results[name] = _time_model(
                    name, fw, args.seconds, compiled=how == "compile", train_only=args._train_only
                )
        except Exception as e:
            if debug:
                traceback.print_exc()
            results[name] = {"error": _reason(e)}
        gc.collect()
    results["_threads"] = fw.get_num_threads() if lib == "jax" else fw.lib.get_num_threads()
    print(_RESULT_MARK + json.dumps(results), flush=True)
    return 0


# =========================================================================== parent


@dataclass
class Cell:
    values: list[float] = field(default_factory=list)
    error: str | None = None
    extra: list[Any] = field(default_factory=list)


def _child_env(unset_openblas: bool) -> dict[str, str]:
    env = dict(os.environ)
    if unset_openblas:
        for var in OPENBLAS_VARS:
            env.pop(var, None)
    return env


def _mode_env(args: argparse.Namespace, mode: str, env: dict[str, str]) -> dict[str, str]:
    """The child's environment for ``mode``: its compile cache in the run's folder; JAX's thread settings."""
    env = dict(env)
    cache = getattr(args, "cache_dir", None)
    if cache and mode in COMPILED:
        folder = os.path.join(cache, mode)
        env.update(
            {
                "fb.compile": {"FLAMBEAU_EXTENSIONS_DIR": folder},
                "torch.compile": {"TORCHINDUCTOR_CACHE_DIR": folder},
                "jax.jit": {"JAX_COMPILATION_CACHE_DIR": folder, "JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS": "0"},
            }[mode]
        )
    if mode == "jax.jit":
        # What the issue asked for; XLA's CPU client reads only the first (its default anyway) and ignores the
        # second (not an XLA flag, no leading --): the child pins itself to --threads CPUs instead (_pin_cpus).
        env["XLA_FLAGS"] = (
            env.get("XLA_FLAGS", "") + f" --xla_cpu_multi_thread_eigen=true intra_op_parallelism_threads={args.threads}"
        ).strip()
        env.setdefault("JAX_PLATFORMS", "cpu")
    return env


def run_child(
    args: argparse.Namespace, fw: str, mode: str, models: list[str], env: dict[str, str], train_only: bool = False
) -> dict[str, Any]:
    cmd = [
        sys.executable,
        os.path.abspath(__file__),
        "--_child",
        fw,
        "--_mode",
        mode,
        "--models",
        ",".join(models),
        "--threads",
        str(args.threads),
        "--seconds",
        str(args.seconds),
        *(["--_train_only"] if train_only else []),
    ]
    debug = bool(os.environ.get("FLAMBEAU_BENCH_DEBUG"))
    timeout = _COMPILE_CHILD_TIMEOUT if fw in COMPILED else _CHILD_TIMEOUT
    try:
        proc = subprocess.run(
            cmd,
            env=_mode_env(args, fw, env),
            stdin=subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=None if debug else subprocess.PIPE,
            text=True,
            timeout=timeout,
        )
    except subprocess.TimeoutExpired:
        return {m: {"error": f"child timed out after {timeout:.0f} s"} for m in models}
    for line in reversed(proc.stdout.splitlines()):
        if line.startswith(_RESULT_MARK):
            return json.loads(line[len(_RESULT_MARK) :])
    if proc.returncode < 0:
        import signal

        try:
            why = f"child killed by {signal.Signals(-proc.returncode).name}"
        except ValueError:
            why = f"child killed by signal {-proc.returncode}"
    else:
        lines = [ln.strip() for ln in (proc.stderr or "").splitlines() if ln.strip()]
        telling = [ln for ln in lines if "Error" in ln or "Exception" in ln or "error" in ln]
        why = (telling or lines or [f"child exited with {proc.returncode}"])[-1]
    return {m: {"error": _reason(why)} for m in models}


def measure(args: argparse.Namespace, unset_openblas: bool) -> tuple[dict[tuple[str, str, str], Cell], dict[str, Any]]:
    """Every cell of one table: (model, metric, mode) -> Cell; and facts for the footer.

    A compile time is kept as ``(cold, seconds)``: cold when the mode's cache folder was empty.
    """
    env = _child_env(unset_openblas)
    cells: dict[tuple[str, str, str], Cell] = {}

    def cell(model: str, metric: str, fw: str) -> Cell:
        return cells.setdefault((model, metric, fw), Cell())

    threads: dict[str, Any] = {}
    for r in range(args.rounds):
        order = args.modes if r % 2 == 0 else list(reversed(args.modes))
        for fw in order:
            cold = fw in COMPILED and fw not in args.caches_used
            args.caches_used.add(fw)
            t0 = time.perf_counter()
            out = run_child(args, fw, "time", args.model_list, env)
            threads[fw] = out.pop("_threads", threads.get(fw, "?"))
            print(f"  round {r + 1}/{args.rounds} {fw}: {time.perf_counter() - t0:.1f} s", flush=True)
            for model in args.model_list:
                res = out.get(model, {"error": "no result"})
                for metric in ("train", "eval"):
                    if metric == "eval" and not MODELS[model].eval_benchmark:
                        continue
                    c = cell(model, metric, fw)
                    if res.get("error"):
                        c.error = c.error or res["error"]
                    elif metric in res:
                        c.values.append(res[metric])
                    if f"compile_{metric}" in res:
                        cell(model, f"compile_{metric}", fw).extra.append((cold, res[f"compile_{metric}"]))
                    if f"compile_{metric}_by_record" in res and not cold:
                        cell(model, f"compile_{metric}_by_record", fw).extra.append(res[f"compile_{metric}_by_record"])
                if "raw_allocs" in res and fw == "flambeau":
                    cell(model, "raw_allocs", fw).extra.append(res["raw_allocs"])
    if not args.no_rss:
        for model in args.model_list:
            for fw in FRAMEWORKS:
                t0 = time.perf_counter()
                res = run_child(args, fw, "rss", [model], env).get(model, {"error": "no result"})
                print(f"  peak RSS {model} {fw}: {time.perf_counter() - t0:.1f} s", flush=True)
                c = cell(model, "rss", fw)
                if res.get("error"):
                    c.error = res["error"]
                else:
                    c.values.append(res["peak_rss"])
                    c.extra.append(res["import_rss"])
    return cells, {"threads": threads}


def _si(x: float) -> str:
    return f"{x:,.0f}" if x >= 100 else f"{x:,.1f}"


def _mib(n: float) -> str:
    return f"{n / 2**20:,.0f} MiB"


def format_cell(c: Cell | None, metric: str) -> str:
    if c is None:
        return "-"
    if c.error:
        return f"n/a ({c.error})"
    if metric == "raw_allocs":
        if not c.extra:
            return "-"
        raw = sum(e[0] for e in c.extra)
        served = sum(e[1] for e in c.extra)
        steps = sum(e[2] for e in c.extra)
        return f"{raw} in {steps} steps ({served / steps:,.0f} allocations/step served from cache)"
    if not c.values:
        return "n/a (no result)"
    if metric == "rss":
        return f"{_mib(c.values[0])} (+{_mib(c.values[0] - c.extra[0])})"
    return f"{_si(min(c.values))} / {_si(statistics.median(c.values))}"


def format_ratio(a: Cell | None, b: Cell | None) -> str:
    if a is None or b is None or a.error or b.error or not a.values or not b.values:
        return "-"
    return f"{statistics.median(a.values) / statistics.median(b.values):.2f}"


def best_peer(args: argparse.Namespace, cells: dict[tuple[str, str, str], Cell], model: str, metric: str) -> str | None:
    """The peer (not flambeau's) mode with the highest median samples/s on this row, None if none measured."""
    best, best_median = None, 0.0
    for mode in args.modes:
        c = cells.get((model, metric, mode))
        if mode in OURS or c is None or c.error or not c.values:
            continue
        if statistics.median(c.values) > best_median:
            best, best_median = mode, statistics.median(c.values)
    return best


METRICS = [
    ("train", "train samples/s"),
    ("eval", "eval samples/s"),
    ("rss", f"peak RSS, {RSS_STEPS} steps"),
    ("raw_allocs", "raw allocs, steady steps"),
]


def _print_rows(table: list[list[str]], title: str) -> None:
    widths = [max(len(r[i]) for r in table) for i in range(len(table[0]))]
    print()
    print(title)
    for i, r in enumerate(table):
        print("  ".join(c.ljust(w) if j < 2 else c.rjust(w) for j, (c, w) in enumerate(zip(r, widths, strict=True))))
        if i == 0:
            print("  ".join("-" * w for w in widths))
    print()


def print_table(args: argparse.Namespace, cells: dict[tuple[str, str, str], Cell], title: str) -> None:
    peers_only_torch = args.modes == ["flambeau", "torch"]
    ours = [m for m in OURS if m in args.modes]
    ratio_heads = ["fb/torch"] if peers_only_torch else [f"{m} / best peer" for m in ours]
    headers = ["model", "metric", *(f"{m} (min / median)" for m in args.modes), *ratio_heads]
    table = [headers]
    for model in args.model_list:
        for metric, label in METRICS:
            row_cells = {m: cells.get((model, metric, m)) for m in args.modes}
            if all(c is None for c in row_cells.values()):
                continue  # not measured (no eval benchmark, --no-rss, or flambeau failed first)
            shown = [
                format_cell(c, metric) if (metric != "raw_allocs" or m == "flambeau") else "-"
                for m, c in row_cells.items()
            ]
            if metric in ("rss", "raw_allocs"):  # flambeau and torch eager only
                ratio = format_ratio(row_cells["flambeau"], row_cells["torch"]) if metric == "rss" else "-"
                ratios = [ratio] + ["-"] * (len(ratio_heads) - 1)
            elif peers_only_torch:
                ratios = [format_ratio(row_cells["flambeau"], row_cells["torch"])]
            else:
                peer = best_peer(args, cells, model, metric)
                ratios = [f"{format_ratio(row_cells[m], row_cells[peer])} ({peer})" if peer else "-" for m in ours]
            table.append([f"{model} ({MODELS[model].batch})", label, *shown, *ratios])
    _print_rows(table, title)


def print_compile_table(args: argparse.Namespace, cells: dict[tuple[str, str, str], Cell]) -> None:
    """Compile times per model and compiled mode: cold (empty cache) and warm (median of the later children)."""
    modes = [m for m in args.modes if m in COMPILED]
    if not modes:
        return
    table = [["model", "step", *(f"{m} cold / warm (s)" for m in modes)]]
    for model in args.model_list:
        for metric in ("train", "eval"):
            row = []
            for mode in modes:
                c = cells.get((model, f"compile_{metric}", mode))
                if c is None or not c.extra:
                    err = cells.get((model, metric, mode))
                    row.append(f"n/a ({err.error})" if err is not None and err.error else "-")
                    continue
                cold = [v for is_cold, v in c.extra if is_cold]
                warm = [v for is_cold, v in c.extra if not is_cold]
                row.append(f"{f'{cold[0]:.2f}' if cold else '-'} / {f'{statistics.median(warm):.2f}' if warm else '-'}")
                records = cells.get((model, f"compile_{metric}_by_record", mode))
                if records is not None and records.extra:
                    row[-1] += f" ({sum(records.extra)}/{len(records.extra)} by record)"
            if any(x != "-" for x in row):
                table.append([f"{model} ({MODELS[model].batch})", metric, *row])
    _print_rows(
        table,
        "Compile time: the first call less a steady one (train: the first training step; eval: the first "
        "no-grad eval call, after training); by record: warm children whose capture skipped its check replay "
        "for the record an earlier child's left (docs/compile.md; flambeau's files changing in between, as "
        "a rebuild, void the records)",
    )


# =========================================================================== spread mode (--processes)


def spread(values: list[float]) -> float:
    """max / min - 1 of positive figures: 0.05 means the fastest process was 5 % faster than the slowest."""
    if not values:
        raise ValueError("spread: no values")
    if min(values) <= 0:
        raise ValueError(f"spread: figures must be positive, got {min(values)}")
    return max(values) / min(values) - 1.0


def spread_cells(values: list[float]) -> list[str]:
    """The spread table's cells for one (model, mode): every process's figure, min / median / max, spread."""
    if not values:
        return ["n/a (no result)", "-", "-"]
    return [
        ", ".join(_si(v) for v in values),
        f"{_si(min(values))} / {_si(statistics.median(values))} / {_si(max(values))}",
        f"{100 * spread(values):.0f} %",
    ]


def placement_cell(facts: list[dict[str, Any] | None]) -> str:
    """Per process: the CPU the main thread ended on, its share of the CPU time, the huge pages in use."""
    shown = []
    for f in facts:
        if not f:
            shown.append("?")
            continue
        shown.append(f"cpu{f['main_cpu']} {100 * f['main_share']:.0f}% {f.get('huge_pages', 0) / 2**20:.0f}M")
    return ", ".join(shown) if shown else "-"


def cpu_cell(facts: list[dict[str, Any] | None]) -> str:
    """Per process: its CPU time per step (all threads) and page faults per step; then the CPU time's spread."""
    shown, cpu = [], []
    for f in facts:
        if not f or "cpu_ms" not in f:
            shown.append("?")
            continue
        cpu.append(f["cpu_ms"])
        shown.append(f"{f['cpu_ms']:.3g} ms {f['faults']:.3g} flt")
    if not shown:
        return "-"
    return ", ".join(shown) + (f" (spread {100 * spread(cpu):.0f} %)" if cpu else "")


def kept_fraction(quiet: list[float], busy: list[float]) -> float:
    """The median throughput with one core busy as a fraction of the quiet median."""
    if not quiet or not busy:
        raise ValueError("kept_fraction: needs quiet and busy figures")
    return statistics.median(busy) / statistics.median(quiet)


def spread_table(
    model_list: list[str],
    modes: list[str],
    quiet: dict[tuple[str, str], Cell],
    busy: dict[tuple[str, str], Cell] | None,
) -> list[list[str]]:
    """Rows (header first) of the spread table; with ``busy``, the contention columns too."""
    headers = ["model", "mode", "train samples/s per process", "min / median / max", "spread"]
    headers += ["main thread per process", "CPU time and faults per step, per process"]
    if busy is not None:
        headers += ["one core busy, per process", "kept (busy / quiet median)"]
    table = [headers]
    for model in model_list:
        for mode in modes:
            q = quiet.get((model, mode), Cell())
            row = [f"{model} ({MODELS[model].batch})", mode]
            if q.error:
                row += [f"n/a ({q.error})", "-", "-", "-", "-"]
            else:
                row += [*spread_cells(q.values), placement_cell(q.extra), cpu_cell(q.extra)]
            if busy is not None:
                b = busy.get((model, mode), Cell())
                if b.error:
                    row += [f"n/a ({b.error})", "-"]
                elif not b.values or not q.values:
                    row += ["-", "-"]
                else:
                    row += [", ".join(_si(v) for v in b.values), f"{100 * kept_fraction(q.values, b.values):.0f} %"]
            table.append(row)
    return table


_SPIN = "import os, sys\nos.sched_setaffinity(0, {%d})\nprint('spinning', flush=True)\nwhile True:\n    pass\n"


class BusyCore:
    """A process spinning on one CPU (``sched_setaffinity``) while the ``with`` block runs."""

    def __init__(self, cpu: int) -> None:
        self.cpu = cpu
        self.proc: subprocess.Popen[str] | None = None

    def __enter__(self) -> BusyCore:
        self.proc = subprocess.Popen(
            [sys.executable, "-c", _SPIN % self.cpu], stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, text=True
        )
        assert self.proc.stdout is not None
        if self.proc.stdout.readline().strip() != "spinning":
            self.__exit__()
            raise RuntimeError(f"the busy process could not pin itself to CPU {self.cpu}")
        return self

    def __exit__(self, *exc: object) -> None:
        if self.proc is not None:
            self.proc.kill()
            self.proc.wait()
            self.proc = None


def busy_cpu() -> int:
    """The CPU the busy process takes: the last one this process may run on (there must be two at least)."""
    cpus = sorted(os.sched_getaffinity(0)) if hasattr(os, "sched_getaffinity") else list(range(os.cpu_count() or 1))
    if len(cpus) < 2:
        raise RuntimeError(f"--contention needs two CPUs at least; this process may use {cpus}")
    return cpus[-1]


def measure_spread(
    args: argparse.Namespace, unset_openblas: bool
) -> tuple[dict[tuple[str, str], Cell], dict[tuple[str, str], Cell] | None]:
    """(model, mode) -> the train figures of ``--processes`` fresh processes, quiet and (``--contention``) busy.

    Every process times one model. Process i of a model runs each mode in turn (the order reversed on odd i),
    quiet, then with one core busy, so that machine noise hits every mode and both conditions alike.
    """
    env = _child_env(unset_openblas)
    quiet: dict[tuple[str, str], Cell] = {}
    busy: dict[tuple[str, str], Cell] | None = {} if args.contention else None
    cpu = busy_cpu() if args.contention else -1

    def record(cells: dict[tuple[str, str], Cell], model: str, mode: str, res: dict[str, Any]) -> None:
        c = cells.setdefault((model, mode), Cell())
        if res.get("error"):
            c.error = c.error or res["error"]
        elif "train" in res:
            c.values.append(res["train"])
            c.extra.append(res.get("placement"))

    for model in args.model_list:
        t0 = time.perf_counter()
        for i in range(args.processes):
            order = args.modes if i % 2 == 0 else list(reversed(args.modes))
            for mode in order:
                res = run_child(args, mode, "time", [model], env, train_only=True).get(model, {"error": "no result"})
                record(quiet, model, mode, res)
            if busy is not None:
                with BusyCore(cpu):
                    for mode in order:
                        res = run_child(args, mode, "time", [model], env, train_only=True)
                        record(busy, model, mode, res.get(model, {"error": "no result"}))
        print(f"  {model}: {args.processes} processes per mode, {time.perf_counter() - t0:.1f} s", flush=True)
    return quiet, busy


def run_spread(args: argparse.Namespace, unset_openblas: bool, shown: str) -> None:
    t0 = time.perf_counter()
    quiet, busy = measure_spread(args, unset_openblas)
    title = (
        f"Spread over {args.processes} fresh processes per mode and model (train samples/s; OpenBLAS: {shown}; "
        f"{time.perf_counter() - t0:.0f} s)"
    )
    _print_rows(spread_table(args.model_list, args.modes, quiet, busy), title)
    print("spread: max / min - 1 of the processes' figures (each the median step of ~--seconds in that process).")
    print(
        "main thread per process: the CPU it last ran on, its share of the CPU time all the process's threads used "
        "in the timed steps (/proc/self/task/*/schedstat), and the process's AnonHugePages."
    )
    print(
        "CPU time and faults per step: the process's CPU time (all threads, getrusage) and page faults over the "
        "timed steps, per step; other processes' load changes the wall-clock figures far more than these."
    )
    if busy is not None:
        print(
            f"one core busy: the same model while a process spinning on CPU {busy_cpu()} (sched_setaffinity) runs; "
            "kept: the busy median over the quiet median."
        )
    print(f"load average now: {_loadavg()}")


def _loadavg() -> str:
    return ", ".join(f"{x:.2f}" for x in os.getloadavg()) if hasattr(os, "getloadavg") else "?"


def main(argv: list[str] | None = None) -> int:
    args = parse_args(argv)
    if args._child:
        return child_main(args)

    import platform
    import tempfile

    print("flambeau vs PyTorch: the six benchmark models (benchmarks/models.py)")
    print(
        f"  python {platform.python_version()}, {os.cpu_count()} CPUs visible, "
        f"{args.threads} threads in every child, "
        + (
            f"{args.processes} fresh processes per mode and model"
            + (", quiet and with one core busy" if args.contention else "")
            if args.processes
            else f"{args.rounds} rounds"
        )
        + f", ~{args.seconds:g} s per measurement"
    )
    print(f"  load average before the run (1/5/15 min): {_loadavg()}  (other processes skew every figure)")
    print(f"  modes: {', '.join(args.modes)}")
    args.caches_used = set()
    tmp = tempfile.TemporaryDirectory(prefix="flambeau-bench-compile-") if set(args.modes) & set(COMPILED) else None
    args.cache_dir = tmp.name if tmp else None
    settings = {"env": [False], "unset": [True], "both": [False, True]}[args.openblas]
    if args.openblas == "both" and not any(v in os.environ for v in OPENBLAS_VARS):
        print(f"  the environment sets neither {' nor '.join(OPENBLAS_VARS)}: one table (both settings are the same)")
        settings = [False]
    for unset in settings:
        if unset:
            shown = f"{' and '.join(OPENBLAS_VARS)} unset in both children"
        else:
            shown = (
                ", ".join(f"{v}={os.environ.get(v, '<unset>')}" for v in OPENBLAS_VARS)
                + " (as the environment sets them)"
            )
        print(f"\nOpenBLAS: {shown}", flush=True)
        if args.processes:
            run_spread(args, unset, shown)
            continue
        t0 = time.perf_counter()
        cells, facts = measure(args, unset)
        print_table(args, cells, f"OpenBLAS: {shown}  ({time.perf_counter() - t0:.0f} s)")
        print_compile_table(args, cells)
        print(
            "samples/s: higher is better; fb/torch, X / best peer = ratio of medians (> 1: flambeau faster), "
            "the best peer being the fastest of the other modes on the row. "
            "peak RSS: lower is better (fb/torch < 1: flambeau smaller), growth over the RSS after import in brackets."
        )
        print(
            "raw allocs: flambeau's caching allocator's system allocations (num_device_alloc) "
            "during the timed steady-state steps, summed over rounds."
        )
        threads = ", ".join(f"{k} {v}" for k, v in facts["threads"].items())
        print(f"threads reported by the children: {threads}; load average now: {_loadavg()}")
    if tmp:
        tmp.cleanup()
    return 0


if __name__ == "__main__":
    sys.exit(main())
