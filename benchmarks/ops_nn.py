#!/usr/bin/env python
"""nnopt benchmarks: Linear(10, 10) on one sample, the MLP training step, the SGD step alone.

flambeau and PyTorch run in ONE process, interleaved: each round times every
case for flambeau, then for torch (the order flips every round), so machine
noise hits both alike. flambeau is imported first: it sets
``OMP_WAIT_POLICY=PASSIVE`` before any OpenMP runtime starts, so torch's
bundled libgomp (which reads the variable when it loads) does not spin-wait
and steal the cores from flambeau's runtime (benchmarks/README.md measured
that effect). Both use 2 threads.

Printed per case: min and median time per call over all repeats of all
rounds, and the ratio torch_time / flambeau_time of the medians (> 1:
flambeau is faster).

    .nox/dev/bin/python benchmarks/ops_nn.py [--rounds 5] [--only linear1]
"""

from __future__ import annotations

import argparse
import os
import statistics
import sys
import timeit

import flambeau_autograd as fa
import flambeau_core as fb  # first: OMP_WAIT_POLICY=PASSIVE for both runtimes (see above)
import flambeau_nn as fnn
import numpy as np
import torch

fb.set_num_threads(2)
torch.set_num_threads(2)


def _mlp(lib_nn, optim, x, y):
    model = lib_nn.Sequential(
        lib_nn.Linear(784, 512), lib_nn.ReLU(), lib_nn.Linear(512, 512), lib_nn.ReLU(), lib_nn.Linear(512, 10)
    )
    loss_fn = lib_nn.CrossEntropyLoss()
    opt = optim.SGD(model.parameters(), lr=0.01, momentum=0.9)

    def step() -> None:
        opt.zero_grad()
        loss = loss_fn(model(x), y)
        loss.backward()
        opt.step()

    return model, opt, step


def setup(case: str, lib: str):
    rng = np.random.default_rng(0)
    if lib == "flambeau":
        to, nn_, optim = (lambda a: fb.tensor(a)), fnn, fnn.optim
    else:
        to, nn_, optim = torch.from_numpy, torch.nn, torch.optim
    if case == "linear1":
        lin = nn_.Linear(10, 10)
        x = to(rng.standard_normal((1, 10), dtype=np.float32))
        return lambda: lin(x), 2000
    if case == "linear1_nograd":
        lin = nn_.Linear(10, 10)
        x = to(rng.standard_normal((1, 10), dtype=np.float32))
        no_grad = fa.no_grad if lib == "flambeau" else torch.no_grad

        def run():
            with no_grad():
                return lin(x)

        return run, 2000
    if case == "linear128":
        lin = nn_.Linear(784, 512)
        x = to(rng.standard_normal((128, 784), dtype=np.float32))
        return lambda: lin(x), 50
    x = to(rng.standard_normal((128, 784), dtype=np.float32))
    y = to(rng.integers(0, 10, size=128).astype(np.int64))
    model, opt, step = _mlp(nn_, optim, x, y)
    step()
    if case == "mlp_step":
        return step, 10
    if case == "sgd_step":
        return opt.step, 50
    if case == "zero_grad_none":
        return lambda: opt.zero_grad(set_to_none=False), 200
    if case == "mlp_forward_backward":
        loss_fn = nn_.CrossEntropyLoss()

        def fb_only():
            loss_fn(model(x), y).backward()

        return fb_only, 10
    raise ValueError(case)


CASES = {
    "linear1": "nn.Linear(10, 10) on one sample (1, 10), with grad",
    "linear1_nograd": "nn.Linear(10, 10) on one sample, no_grad",
    "linear128": "nn.Linear(784, 512) on (128, 784)",
    "mlp_step": "MLP 784-512-512-10 train step (batch 128, CE, SGD momentum 0.9)",
    "mlp_forward_backward": "MLP forward + backward only",
    "sgd_step": "SGD(momentum=0.9).step() over the MLP's 6 params",
    "zero_grad_none": "optimizer.zero_grad(set_to_none=False) over the MLP's grads",
}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=5)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--only", action="append")
    args = ap.parse_args()
    cases = args.only or list(CASES)
    print(
        f"threads: flambeau {fb.get_num_threads()}, torch {torch.get_num_threads()}; "
        f"OMP_WAIT_POLICY={os.environ.get('OMP_WAIT_POLICY')}; load {os.getloadavg()[0]:.2f}"
    )
    prepared = {(c, lib): setup(c, lib) for c in cases for lib in ("flambeau", "torch")}
    times: dict[tuple[str, str], list[float]] = {k: [] for k in prepared}
    for r in range(args.rounds):
        order = ("flambeau", "torch") if r % 2 == 0 else ("torch", "flambeau")
        for c in cases:
            for lib in order:
                fn, number = prepared[(c, lib)]
                fn()  # warm
                t = timeit.repeat(fn, number=number, repeat=args.repeats)
                times[(c, lib)] += [x / number for x in t]

    def fmt(s: float) -> str:
        return f"{s * 1e6:9.1f} us" if s < 1e-3 else f"{s * 1e3:9.3f} ms"

    print(f"{'case':<34} {'flambeau min':>13} {'median':>12} {'torch min':>12} {'median':>12}  torch/flambeau")
    for c in cases:
        f, t = times[(c, "flambeau")], times[(c, "torch")]
        ratio = statistics.median(t) / statistics.median(f)
        fmed, tmed = statistics.median(f), statistics.median(t)
        print(f"{c:<34} {fmt(min(f))} {fmt(fmed)} {fmt(min(t))} {fmt(tmed)}  {ratio:6.2f}x")
    for c in cases:
        print(f"  {c}: {CASES[c]}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
