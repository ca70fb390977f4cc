"""2-rank DistributedDataParallel training against 1 process and against PyTorch DDP (gloo), on one machine.

The work: MLP 784-512-512-10 (ReLU), cross-entropy, SGD
momentum 0.9; DDP: 2 ranks (mpirun -n 2), batch 128 per rank, 1 compute
thread each; 1 process: the combined batch of 256 with 2 threads. The same
for PyTorch (DDP over gloo, launched by the same mpirun). Configurations run
in interleaved rounds (the machine is shared: only one run's ratios count);
each reports seconds per step after a warm-up, min and median over rounds.

For flambeau's DDP it also reports the all-reduce time per step (the time
some all-reduce was in flight: posted and not yet seen complete) and the
exposed part (from the end of backward's computation until every all-reduce
is complete): hidden = 1 - exposed / all-reduce, the share of the all-reduce
time that elapsed while backward still computed. In-flight time also counts
time a request waits for a late rank or for progress, so it is set against
the same buckets all-reduced back to back with nothing else running ("alone"):
saved = 1 - exposed / alone, the share of that cost taken off the step. And
the cost of the cross-rank metadata check (Note [Metadata check]) on a
1-element all_reduce.

    python packages/distributed/benchmarks/bench_ddp.py [--rounds 3] [--steps 40]
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import statistics
import subprocess
import sys
from pathlib import Path

WORKER = Path(__file__).with_name("_ddp_worker.py")


def mpirun() -> str:
    here = Path(sys.executable).parent / "mpirun"
    found = str(here) if here.exists() else shutil.which("mpirun")
    if not found:
        sys.exit("bench_ddp: no mpirun (pip install 'flambeau[mpi]')")
    return found


def run(fw: str, mode: str, steps: int, port: int) -> dict:
    env = dict(os.environ, OMPI_ALLOW_RUN_AS_ROOT="1", OMPI_ALLOW_RUN_AS_ROOT_CONFIRM="1", BENCH_TORCH_PORT=str(port))
    env["OMP_NUM_THREADS"] = "1" if mode == "ddp" else "2"
    if mode == "ddp":
        cmd = [mpirun(), "--oversubscribe", "--bind-to", "none", "-n", "2", sys.executable, str(WORKER)]
        cmd += [fw, "ddp", "128", str(steps), "1"]
    else:
        cmd = [sys.executable, str(WORKER), fw, "single", "256", str(steps), "2"]
    r = subprocess.run(cmd, env=env, capture_output=True, text=True, timeout=600)
    for line in r.stdout.splitlines():
        if line.startswith("RESULT "):
            return json.loads(line[7:])
    raise RuntimeError(f"{' '.join(cmd)} failed:\n{r.stdout}\n{r.stderr}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=3)
    ap.add_argument("--steps", type=int, default=40)
    args = ap.parse_args()
    configs = [("fb", "single"), ("fb", "ddp"), ("torch", "single"), ("torch", "ddp")]
    results: dict[tuple[str, str], list[dict]] = {c: [] for c in configs}
    port = 29533
    for _ in range(args.rounds):
        for fw, mode in configs:
            port += 1
            results[(fw, mode)].append(run(fw, mode, args.steps, port))

    def step(c):
        ts = [r["step_s"] for r in results[c]]
        return min(ts), statistics.median(ts)

    print(f"\nDDP MLP 784-512-512-10, SGD momentum; {args.rounds} rounds x {args.steps} steps; seconds per step")
    print(f"{'config':44s} {'min ms':>8s} {'median ms':>10s} {'samples/s (min)':>16s}")
    label = {
        ("fb", "single"): "flambeau  1 process, batch 256, 2 threads",
        ("fb", "ddp"): "flambeau  DDP 2 ranks x batch 128, 1 thread",
        ("torch", "single"): "PyTorch   1 process, batch 256, 2 threads",
        ("torch", "ddp"): "PyTorch   DDP gloo 2 ranks x 128, 1 thread",
    }
    for c in configs:
        lo, med = step(c)
        print(f"{label[c]:44s} {lo * 1e3:8.2f} {med * 1e3:10.2f} {256 / lo:16.0f}")
    fb1, fbd = step(("fb", "single"))[0], step(("fb", "ddp"))[0]
    t1, td = step(("torch", "single"))[0], step(("torch", "ddp"))[0]
    print(f"\nflambeau DDP vs flambeau 1 process (time ratio 1proc/DDP, >1: DDP faster): {fb1 / fbd:.2f}")
    print(f"PyTorch DDP vs flambeau DDP (time ratio torch/flambeau, >1: flambeau faster): {td / fbd:.2f}")
    print(f"PyTorch 1 process vs flambeau 1 process (torch/flambeau): {t1 / fb1:.2f}")
    fbr = results[("fb", "ddp")]
    ar = statistics.median(r["allreduce_ms"] for r in fbr)
    ex = statistics.median(r["exposed_ms"] for r in fbr)
    hidden = [1 - r["exposed_ms"] / r["allreduce_ms"] for r in fbr if r["allreduce_ms"] > 0]
    print(
        f"flambeau DDP ({fbr[0]['buckets']} buckets): all-reduce {ar:.2f} ms/step, exposed after backward {ex:.2f} "
        f"ms/step; hidden behind backward: median {100 * statistics.median(hidden):.0f}% "
        f"(rounds: {', '.join(f'{100 * h:.0f}%' for h in hidden)})"
    )
    alone = statistics.median(r["allreduce_alone_ms"] for r in fbr)
    saved = [1 - r["exposed_ms"] / r["allreduce_alone_ms"] for r in fbr]
    print(
        f"the same buckets all-reduced alone: {alone:.2f} ms/step; taken off the step (1 - exposed / alone): "
        f"median {100 * statistics.median(saved):.0f}% (rounds: {', '.join(f'{100 * h:.0f}%' for h in saved)})"
    )
    print(
        f"gradient bytes whose all-reduce started before backward's last gradient: "
        f"{fbr[0]['launched_in_backward_pct']:.0f}% (the rest was posted once backward's computation was over: "
        "nothing is left to hide it behind)"
    )
    on = statistics.median(r["small_allreduce_us_check_on"] for r in fbr)
    off = statistics.median(r["small_allreduce_us_check_off"] for r in fbr)
    print(
        f"1-element all_reduce: {on:.0f} us with the metadata check, "
        f"{off:.0f} us without (FLAMBEAU_DISTRIBUTED_DEBUG=OFF)"
    )


if __name__ == "__main__":
    main()
