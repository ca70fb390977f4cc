#!/usr/bin/env python
"""fb.compile against eager flambeau: the benchmark MLP's forward and training step at small batches.

fb.compile replays the captured ops without the model's Python (module calls, hooks, functional wrappers)
but adds its guards (shapes, grad mode, module state) to each call, and fuses runs of elementwise ops
into generated C++ kernels (docs/compile.md). At small batches the Python overhead is a large part of a
step, so this is where replay can show; at large batches both run the same matmuls. Compiled and eager
run in one process, rounds interleaved (side_by_side.py), each on its own model with the same weights;
per case it prints the min and median time per call and the ratio eager/compiled of the medians (> 1:
compiled is faster).

A second table times fused elementwise chains four ways, rounds interleaved: flambeau eager, fb.compile,
torch eager and torch.compile (inductor's C++ backend; its first call compiles for tens of seconds, and a
failure to compile is printed instead of its columns). Each cell is min / median microseconds per call.
The ``train_`` rows time a training step's part: the forward with inputs requiring grad, then the backward
of a fixed gradient (fb.compile's fused group records one node whose backward is a fused kernel too).

Example:
    .nox/dev/bin/python benchmarks/ops_compile.py
    .nox/dev/bin/python benchmarks/ops_compile.py --rounds 5 --only forward
"""

from __future__ import annotations

import argparse
import copy
import statistics
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


def chain6(x, y):
    """Six elementwise ops: mul, add, relu, sub, abs, mul."""
    return (x * 2 + y).relu().sub(0.5).abs() * y


def bias_gelu(x, w, b, s, r):
    """A linear layer's epilogue: the matmul stays, add-gelu-mul-add fuse into one kernel."""
    return fb.nn.functional.gelu(x @ w + b) * s + r


def _bias_gelu_torch(torch):
    def f(x, w, b, s, r):
        return torch.nn.functional.gelu(x @ w + b) * s + r

    return f


def fusion_cases(torch) -> Iterator[tuple[str, Callable[..., object], Callable[..., object], list[object], list[bool]]]:
    """(name, flambeau function, torch function, flambeau inputs, which require grad) per fused case; a case
    with inputs requiring grad is timed as a training step's part: forward, then backward of a fixed gradient."""
    fb.manual_seed(0)
    for n, label in ((1 << 20, "1M"), (1000, "1K")):
        yield f"chain6_{label}", chain6, chain6, [fb.randn(n), fb.randn(n)], [False, False]
    x, w, b = fb.randn(128, 256), fb.randn(256, 1024) / 16, fb.randn(1024)
    s, r = fb.randn(128, 1024), fb.randn(128, 1024)
    yield "linear_bias_gelu_128x1024", bias_gelu, _bias_gelu_torch(torch), [x, w, b, s, r], [False] * 5
    yield "train_chain6_1M", chain6, chain6, [fb.randn(1 << 20), fb.randn(1 << 20)], [True, True]
    needs = [True, True, True, True, False]  # x, w, b and the scale learn; the residual is data
    yield "train_linear_bias_gelu_128x1024", bias_gelu, _bias_gelu_torch(torch), [x, w, b, s, r], needs


def _step(f: Callable[..., object], inputs: list[object], grad: object | None) -> Callable[[], object]:
    """One timed call: the forward under no_grad, or (``grad`` given) forward and backward, the inputs'
    gradients cleared before each."""
    if grad is None:
        return lambda: f(*inputs)
    leaves = [t for t in inputs if t.requires_grad]

    def step():
        for t in leaves:
            t.grad = None
        out = f(*inputs)
        out.backward(grad)
        return out

    return step


def fusion_main() -> None:
    import torch

    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--only", default="")
    args = ap.parse_args()
    fb.set_num_threads(2)
    torch.set_num_threads(2)
    labels = ("fb eager", "fb.compile", "torch eager", "torch.compile")
    print(f"\n{'fused case':32s}" + "".join(f"{label + ' min/med':>22s}" for label in labels))
    for name, f, tf, inputs, needs in fusion_cases(torch):
        if args.only and args.only not in name:
            continue
        train = any(needs)
        inputs = [t.detach().requires_grad_(n) for t, n in zip(inputs, needs, strict=True)]
        tinputs = [
            torch.from_numpy(t.detach().numpy().copy()).requires_grad_(n) for t, n in zip(inputs, needs, strict=True)
        ]
        with fb.no_grad():
            shape = f(*inputs).shape
        grad = fb.randn(*shape) if train else None
        tgrad = torch.from_numpy(grad.numpy().copy()) if train else None
        compiled = fb.compile(f)
        calls: list[Callable[[], object] | None] = [
            _step(f, inputs, grad),
            _step(compiled, inputs, grad),
            _step(tf, tinputs, tgrad),
        ]
        try:
            tcompiled = torch.compile(tf)
            with torch.set_grad_enabled(train):
                _step(tcompiled, tinputs, tgrad)()  # compiles (forward and backward under grad)
            calls.append(_step(tcompiled, tinputs, tgrad))
        except Exception as e:  # noqa: BLE001 (reported: torch.compile needs a working C++ toolchain)
            print(f"{name}: torch.compile failed ({type(e).__name__}: {str(e).splitlines()[0][:200]})")
            calls.append(None)
        with fb.set_grad_enabled(train), torch.set_grad_enabled(train):
            calls[1]()  # the capture builds the kernels
            reps = max(1, int(0.05 / max(side_by_side.timeit(calls[0], 1), 1e-6)))
            times: list[list[float]] = [[] for _ in calls]
            for r in range(args.rounds):
                order = list(range(len(calls))) if r % 2 == 0 else list(reversed(range(len(calls))))
                for i in order:
                    if calls[i] is not None:
                        times[i].append(side_by_side.timeit(calls[i], reps))
        cells = [f"{min(t) * 1e6:10.1f} /{statistics.median(t) * 1e6:9.1f}" if t else f"{'failed':>20s}" for t in times]
        print(f"{name:32s}" + "".join(f"{c:>22s}" for c in cells))


if __name__ == "__main__":
    side_by_side.main(cases, fb, None, width=22, labels=("compiled", "eager"))
    fusion_main()
