#!/usr/bin/env python
"""Pooling ops, flambeau vs PyTorch, at the shapes of the benchmark models.

Both libraries run in this one process, in interleaved rounds (flambeau, torch,
then torch, flambeau, ...), each with 2 intra-op threads. A short sleep
separates the libraries' turns so that one OpenMP runtime's spinning workers
have gone to sleep before the other one runs (see benchmarks/run.py on why
two runtimes in one process interfere). For each case the table shows the
minimum and the median time per call (forward, and forward + backward) and
the ratio torch / flambeau of the medians (> 1: flambeau is faster).

    python benchmarks/ops_pool.py [--rounds 7] [--number 20] [--threads 2] [--channels-last]

--channels-last runs both libraries on channels-last inputs (NHWC in memory; flambeau's NHWC loops,
Note [Channels-last pooling]), --cpu-time reports CPU time per call instead of wall-clock time (steadier
on a loaded machine; with --threads 1 it is the call's own time).
"""

from __future__ import annotations

import argparse
import statistics
import time

import flambeau as fb
import numpy as np
import torch
import torch.nn.functional as TF

F = fb.nn.functional

CASES = [
    # name, shape, flambeau fn, torch fn
    ("max_pool2d(2) LeNet conv1", (64, 6, 28, 28), lambda x: F.max_pool2d(x, 2), lambda x: TF.max_pool2d(x, 2)),
    ("max_pool2d(2) LeNet conv2", (64, 16, 10, 10), lambda x: F.max_pool2d(x, 2), lambda x: TF.max_pool2d(x, 2)),
    (
        "max_pool2d(3, 2, 1) ResNet stem",
        (8, 64, 56, 56),
        lambda x: F.max_pool2d(x, 3, 2, 1),
        lambda x: TF.max_pool2d(x, 3, 2, 1),
    ),
    ("avg_pool2d(2) (32, 64, 32, 32)", (32, 64, 32, 32), lambda x: F.avg_pool2d(x, 2), lambda x: TF.avg_pool2d(x, 2)),
    (
        "adaptive_avg_pool2d(1) ResNet",
        (32, 64, 8, 8),
        lambda x: F.adaptive_avg_pool2d(x, 1),
        lambda x: TF.adaptive_avg_pool2d(x, 1),
    ),
    (
        "adaptive_avg_pool2d(1) MobileNet",
        (32, 256, 8, 8),
        lambda x: F.adaptive_avg_pool2d(x, 1),
        lambda x: TF.adaptive_avg_pool2d(x, 1),
    ),
]


def time_calls(fn, number: int, clock=time.perf_counter) -> float:
    t0 = clock()
    for _ in range(number):
        fn()
    return (clock() - t0) / number


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--number", type=int, default=20)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--pause", type=float, default=0.05, help="seconds between the libraries' turns")
    ap.add_argument("--channels-last", action="store_true", help="channels-last inputs for both libraries")
    ap.add_argument("--cpu-time", action="store_true", help="CPU time per call instead of wall-clock time")
    args = ap.parse_args()
    fb.set_num_threads(args.threads)
    torch.set_num_threads(args.threads)
    layout = "channels_last" if args.channels_last else "contiguous"
    clock = "cpu" if args.cpu_time else "wall"
    print(
        f"threads={args.threads} rounds={args.rounds} number={args.number} {layout} {clock} torch {torch.__version__}"
    )
    print(f"{'case':34} {'pass':8} {'flambeau min/median us':>24} {'torch min/median us':>22} {'torch/fb':>9}")
    for case in CASES:
        run_case(*case, args)


def run_case(name, shape, fb_fn, th_fn, args) -> None:
    a = np.random.default_rng(0).standard_normal(shape).astype(np.float32)
    xf, xt = fb.tensor(a), torch.from_numpy(a.copy())
    if args.channels_last:
        xf, xt = xf.contiguous(memory_format=fb.channels_last), xt.contiguous(memory_format=torch.channels_last)
    xf.requires_grad_(True)
    xt.requires_grad_(True)
    # The gradients laid out as the outputs (what the next layer's backward would send).
    gf = fb.ones_like(fb_fn(xf.detach()))
    gt = torch.ones_like(th_fn(xt.detach()))

    def f_fwd():
        with fb.no_grad():
            fb_fn(xf)

    def t_fwd():
        with torch.no_grad():
            th_fn(xt)

    def f_step():
        xf.grad = None
        fb_fn(xf).backward(gf)

    def t_step():
        xt.grad = None
        th_fn(xt).backward(gt)

    for label, ff, tf in (("fwd", f_fwd, t_fwd), ("fwd+bwd", f_step, t_step)):
        ff()
        tf()
        times = {"fb": [], "torch": []}
        for r in range(args.rounds):
            order = (("fb", ff), ("torch", tf)) if r % 2 == 0 else (("torch", tf), ("fb", ff))
            for who, fn in order:
                time.sleep(args.pause)
                fn()
                times[who].append(
                    time_calls(fn, args.number, time.process_time if args.cpu_time else time.perf_counter)
                )
        fmin, fmed = min(times["fb"]) * 1e6, statistics.median(times["fb"]) * 1e6
        tmin, tmed = min(times["torch"]) * 1e6, statistics.median(times["torch"]) * 1e6
        print(f"{name:34} {label:8} {fmin:11.1f} /{fmed:11.1f} {tmin:10.1f} /{tmed:10.1f} {tmed / fmed:9.2f}")


if __name__ == "__main__":
    main()
