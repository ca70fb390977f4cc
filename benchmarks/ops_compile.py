#!/usr/bin/env python
"""fb.compile against eager flambeau: the benchmark MLP's forward and training step at small batches.

fb.compile replays the captured ops without the model's Python (module calls, hooks, functional wrappers)
but adds its guards (shapes, grad mode, module state) to each call; nothing is fused yet. At small batches
the Python overhead is a large part of a step, so this is where replay can show; at large batches both
run the same kernels. Eager and compiled run in one process, in interleaved rounds (the order alternates),
each on its own model with the same weights; per case it prints the min and median time per call and the
ratio eager/compiled of the medians (> 1: compiled is faster).

Example:
    .nox/dev/bin/python benchmarks/ops_compile.py
    .nox/dev/bin/python benchmarks/ops_compile.py --rounds 5 --only mlp_forward_b8
"""

from __future__ import annotations

import argparse
import copy
import statistics
import sys
import timeit
from collections.abc import Callable
from pathlib import Path

import flambeau as fb

sys.path.insert(0, str(Path(__file__).resolve().parent))
from models import MODELS, framework  # noqa: E402

FW = framework("flambeau")


def chain_case(_: int) -> tuple[Callable[[], object], Callable[[], object]]:
    """Three elementwise ops on one element: nothing but per-op Python overhead."""
    x = fb.ones(1)

    def f(x):
        return ((x + 1) * 2).relu()

    g = fb.compile(f)
    return (lambda: f(x)), (lambda: g(x))


def forward_case(batch: int) -> tuple[Callable[[], object], Callable[[], object]]:
    fb.manual_seed(0)
    model = MODELS["mlp"].build(FW).eval()
    compiled = fb.compile(copy.deepcopy(model))
    x = fb.randn(batch, 784)

    def eager():
        with fb.no_grad():
            return model(x)

    def replay():
        with fb.no_grad():
            return compiled(x)

    return eager, replay


def train_case(batch: int) -> tuple[Callable[[], object], Callable[[], object]]:
    spec = MODELS["mlp"]
    steps = []
    for compile_it in (False, True):
        fb.manual_seed(0)
        model = spec.build(FW)
        opt = fb.optim.SGD(model.parameters(), lr=0.01, momentum=0.9)
        forward = fb.compile(model) if compile_it else model
        x, target = fb.randn(batch, 784), fb.randint(0, 10, (batch,))

        def step(forward=forward, opt=opt, x=x, target=target):
            opt.zero_grad(set_to_none=True)
            loss = spec.loss(FW, forward(x), target)
            loss.backward()
            opt.step()
            return loss

        steps.append(step)
    return steps[0], steps[1]


CASES = {
    "chain3_1elem": (chain_case, 0),
    "mlp_forward_b1": (forward_case, 1),
    "mlp_forward_b8": (forward_case, 8),
    "mlp_forward_b32": (forward_case, 32),
    "mlp_train_step_b8": (train_case, 8),
    "mlp_train_step_b32": (train_case, 32),
}


def _time(fn: Callable[[], object], calls: int) -> float:
    return timeit.Timer(fn).timeit(calls) / calls


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=7)
    parser.add_argument("--calls", type=int, default=200, help="calls per round and side")
    parser.add_argument("--only", action="append", choices=sorted(CASES))
    parser.add_argument("--threads", type=int, default=2)
    args = parser.parse_args()
    fb.set_num_threads(args.threads)
    print(f"{'case':<22}{'eager min/med (us)':>22}{'compiled min/med (us)':>25}{'eager/compiled':>16}")
    for name in args.only or CASES:
        make, batch = CASES[name]
        eager, compiled = make(batch)
        for fn in (eager, compiled):  # warm-up: capture, caches, allocator
            _time(fn, 20)
        times: dict[str, list[float]] = {"eager": [], "compiled": []}
        for r in range(args.rounds):
            order = [("eager", eager), ("compiled", compiled)]
            for side, fn in order if r % 2 == 0 else order[::-1]:
                times[side].append(_time(fn, args.calls) * 1e6)
        e, c = times["eager"], times["compiled"]
        print(
            f"{name:<22}{min(e):>11.1f} /{statistics.median(e):>8.1f}{min(c):>14.1f} /{statistics.median(c):>8.1f}"
            f"{statistics.median(e) / statistics.median(c):>15.2f}x"
        )


if __name__ == "__main__":
    main()
