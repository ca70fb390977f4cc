#!/usr/bin/env python
"""fb.compile against eager flambeau: the benchmark MLP's forward and training step at small batches.

fb.compile replays the captured ops without the model's Python (module calls, hooks, functional wrappers)
but adds its guards (shapes, grad mode, module state) to each call; nothing is fused yet. At small batches
the Python overhead is a large part of a step, so this is where replay can show; at large batches both
run the same kernels. Compiled and eager run in one process, rounds interleaved (side_by_side.py), each
on its own model with the same weights; per case it prints the min and median time per call and the
ratio eager/compiled of the medians (> 1: compiled is faster).

Example:
    .nox/dev/bin/python benchmarks/ops_compile.py
    .nox/dev/bin/python benchmarks/ops_compile.py --rounds 5 --only forward
"""

from __future__ import annotations

import copy
import sys
from collections.abc import Callable, Iterator
from pathlib import Path

import flambeau as fb

sys.path.insert(0, str(Path(__file__).resolve().parent))
import side_by_side  # noqa: E402  (benchmarks/side_by_side.py: the shared interleaved loop)
from models import MODELS, framework  # noqa: E402

FW = framework("flambeau")
Pair = tuple[Callable[[], object], Callable[[], object]]  # (compiled, eager)


def chain_case() -> Pair:
    """Three elementwise ops on one element: nothing but per-op Python overhead."""
    x = fb.ones(1)

    def f(x):
        return ((x + 1) * 2).relu()

    g = fb.compile(f)
    return (lambda: g(x)), (lambda: f(x))


def forward_case(batch: int) -> Pair:
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

    return replay, eager


def train_case(batch: int) -> Pair:
    spec = MODELS["mlp"]
    steps = []
    for compile_it in (True, False):
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


def cases() -> Iterator[side_by_side.Case]:
    yield ("chain3_1elem", *chain_case())
    for batch in (1, 8, 32):
        yield (f"mlp_forward_b{batch}", *forward_case(batch))
    for batch in (8, 32):
        yield (f"mlp_train_step_b{batch}", *train_case(batch))


if __name__ == "__main__":
    side_by_side.main(cases, fb, None, width=22, labels=("compiled", "eager"))
