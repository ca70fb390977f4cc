#!/usr/bin/env python
"""Training throughput in float32 and under bfloat16 autocast, flambeau vs PyTorch, side by side.

The MLP, LeNet-5 and ResNet-8 of ``benchmarks/models.py``; a step is ``zero_grad``, forward and loss
(inside ``autocast("cpu", dtype=bfloat16)`` in the bf16 mode), ``backward()``, ``SGD.step()`` on a
fixed random batch, as ``train_models.py`` times it. Each framework runs in its own child process
(their OpenMP runtimes would otherwise fight over the cores); rounds alternate the order of the
children. Per model and mode: warm-up steps, then steps for about ``--seconds``; the batch over the
median step time is the round's samples/s; the table shows the median over rounds and the ratios
(bf16 over float32 within a framework, flambeau over torch within a mode), then each model's step
time in ms, min and median over all the timed steps of every round. Whether flambeau's bfloat16
products ran on the AVX512-BF16 kernel is printed.

Example:
    python benchmarks/autocast_training.py --models mlp,lenet5,resnet8 --rounds 3
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parent))

from models import MODELS, TrainStep, framework  # noqa: E402

DEFAULT_MODELS = ("mlp", "lenet5", "resnet8")
MODES = ("float32", "bf16")
_MARK = "@@autocast-training@@ "


def parse_args(argv: list[str] | None = None) -> argparse.Namespace:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--models", default=",".join(DEFAULT_MODELS), help="comma-separated models (default: %(default)s)")
    p.add_argument("--rounds", type=int, default=3, help="rounds of one child per framework (default 3)")
    p.add_argument("--threads", type=int, default=2, help="intra-op threads per child (default 2)")
    p.add_argument("--seconds", type=float, default=1.0, help="timed seconds per model and mode (default 1)")
    p.add_argument("--child", choices=("flambeau", "torch"), help=argparse.SUPPRESS)
    return p.parse_args(argv)


def time_model(name: str, fw_name: str, mode: str, seconds: float) -> list[float]:
    """The timed step times (s) of one model's training step in one mode."""
    fw = framework(fw_name)
    fw.manual_seed(0)
    spec = MODELS[name]
    step = TrainStep(spec, fw)
    region = (lambda: fw.lib.autocast("cpu", dtype=fw.lib.bfloat16)) if mode == "bf16" else None

    def one() -> None:
        step.optimizer.zero_grad(set_to_none=True)
        if region is None:
            loss = step.forward_loss()
        else:
            with region():
                loss = step.forward_loss()
        loss.backward()
        step.optimizer.step()

    for _ in range(3):
        one()
    times: list[float] = []
    end = time.perf_counter() + seconds
    while time.perf_counter() < end or len(times) < 3:
        t0 = time.perf_counter()
        one()
        times.append(time.perf_counter() - t0)
    return times


def child(args: argparse.Namespace) -> None:
    fw = framework(args.child)
    fw.set_num_threads(args.threads)
    out: dict[str, Any] = {"results": {}}
    if args.child == "flambeau":
        import flambeau_core

        out["bf16_kernel"] = bool(flambeau_core._C._bf16_gemm_kernel())
    for name in args.models.split(","):
        for mode in MODES:
            out["results"][f"{name}/{mode}"] = time_model(name, args.child, mode, args.seconds)
            out.setdefault("batch", {})[name] = MODELS[name].batch
    print(_MARK + json.dumps(out), flush=True)


def run_child(fw_name: str, args: argparse.Namespace) -> dict[str, Any]:
    cmd = [sys.executable, __file__, "--child", fw_name, "--models", args.models, "--threads", str(args.threads)]
    cmd += ["--seconds", str(args.seconds)]
    env = dict(os.environ, OMP_NUM_THREADS=str(args.threads))
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False)
    for line in proc.stdout.splitlines():
        if line.startswith(_MARK):
            return json.loads(line[len(_MARK) :])
    raise RuntimeError(f"{fw_name} child failed:\n{proc.stderr[-3000:]}")


def main(argv: list[str] | None = None) -> None:
    args = parse_args(argv)
    if args.child:
        child(args)
        return
    runs: dict[str, list[dict[str, list[float]]]] = {"flambeau": [], "torch": []}
    batch: dict[str, int] = {}
    kernel = None
    for r in range(args.rounds):
        order = ("flambeau", "torch") if r % 2 == 0 else ("torch", "flambeau")
        for fw_name in order:
            got = run_child(fw_name, args)
            runs[fw_name].append(got["results"])
            batch = got["batch"]
            kernel = got.get("bf16_kernel", kernel)
    print(f"threads={args.threads} rounds={args.rounds}; flambeau bf16 GEMM on AVX512-BF16: {kernel}")
    header = f"{'model':<9} {'fb f32':>9} {'fb bf16':>9} {'x own':>6} {'torch f32':>10} {'torch bf16':>10}"
    print(header + f" {'x torch':>8} {'fb/torch f32':>12}")
    for name in args.models.split(","):
        med = {
            (fw, mode): statistics.median(batch[name] / statistics.median(run[f"{name}/{mode}"]) for run in runs[fw])
            for fw in runs
            for mode in MODES
        }
        f32, fbf, t32, tbf = (
            med["flambeau", "float32"],
            med["flambeau", "bf16"],
            med["torch", "float32"],
            med["torch", "bf16"],
        )
        print(
            f"{name:<9} {f32:9.0f} {fbf:9.0f} {fbf / f32:6.2f} {t32:10.0f} {tbf:10.0f} {fbf / tbf:8.2f}"
            f" {f32 / t32:12.2f}"
        )
    print("samples/s, median over rounds; x own = flambeau bf16 / flambeau float32; x torch = bf16 flambeau / torch")
    print(f"\n{'step ms':<9}" + "".join(f" {fw + ' ' + mode:>18}" for fw in runs for mode in MODES))
    for name in args.models.split(","):
        cells = []
        for fw in runs:
            for mode in MODES:
                steps = [t * 1e3 for run in runs[fw] for t in run[f"{name}/{mode}"]]
                cells.append(f"{min(steps):8.2f} / {statistics.median(steps):7.2f}")
        print(f"{name:<9}" + "".join(f" {c:>18}" for c in cells))
    print("step time in ms, min / median over every timed step of all rounds")


if __name__ == "__main__":
    main()
