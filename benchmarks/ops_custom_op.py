#!/usr/bin/env python
"""The per-call cost of a Python custom operator, flambeau.library vs torch.library, in one process.

The same op, ``bench::neg(Tensor x) -> Tensor`` with body ``x.neg()`` on a 1-element float32
tensor (the body is as cheap as an op gets, so the cost of the call around it shows), is timed
five ways per library: its Python body called directly; the body called through one plain Python
function (the unit a Python-level overhead is counted in, on a loaded machine); the op called
through its CustomOpDef; through ``ops.bench.neg``; and with an input that requires grad (the
autograd path, body included: torch's and flambeau's Function nodes). Rounds interleave the
libraries (flambeau then torch, then the reverse order), 1 intra-op thread each. Prints min and
median per call, and the overhead of each over the body (the min row: the difference of the mins;
the median row: the median of the per-round differences). Only figures from one run count (a
shared, noisy machine).

    .nox/dev/bin/python benchmarks/ops_custom_op.py [--rounds 9]
"""

from __future__ import annotations

import argparse
import statistics
from typing import Any

import flambeau as fb
import side_by_side  # benchmarks/side_by_side.py: timeit
import torch


def definitions() -> dict[str, dict[str, object]]:
    def fb_body(x: fb.Tensor) -> fb.Tensor:
        return x.neg()

    def torch_body(x: torch.Tensor) -> torch.Tensor:
        return x.neg()

    fb_op = fb.library.custom_op("bench::neg", mutates_args=())(fb_body)
    torch_op = torch.library.custom_op("bench::neg", mutates_args=())(torch_body)
    for op, lib in ((fb_op, fb), (torch_op, torch)):
        op.register_fake(lambda x, lib=lib: lib.empty_like(x))
        op.register_autograd(lambda ctx, g: -g)
    fx, tx = fb.ones(1), torch.ones(1)
    fg, tg = fb.ones(1, requires_grad=True), torch.ones(1, requires_grad=True)
    fb_packet, torch_packet = fb.ops.bench.neg, torch.ops.bench.neg

    def fb_wrapper(x):
        return fb_body(x)

    def torch_wrapper(x):
        return torch_body(x)

    return {
        "flambeau": {
            "body": lambda: fb_body(fx),
            "body in a Python function": lambda: fb_wrapper(fx),
            "custom_op": lambda: fb_op(fx),
            "ops.bench.neg": lambda: fb_packet(fx),
            "custom_op, requires_grad": lambda: fb_op(fg),
        },
        "torch": {
            "body": lambda: torch_body(tx),
            "body in a Python function": lambda: torch_wrapper(tx),
            "custom_op": lambda: torch_op(tx),
            "ops.bench.neg": lambda: torch_packet(tx),
            "custom_op, requires_grad": lambda: torch_op(tg),
        },
    }


def time_cases(cases: dict[str, dict[str, Any]], rounds: int) -> dict[tuple[str, str], list[float]]:
    """Seconds per call of each case, one value per round; rounds interleave the libraries (then the
    reverse order), each timing as many calls as fill about 50 ms."""
    names = list(cases["flambeau"])
    times: dict[tuple[str, str], list[float]] = {(lib, n): [] for lib in cases for n in names}
    reps = {
        (lib, n): max(1, int(0.05 / max(side_by_side.timeit(f, 100), 1e-7)))
        for lib in cases
        for n, f in cases[lib].items()
    }
    for r in range(rounds):
        order = ["flambeau", "torch"] if r % 2 == 0 else ["torch", "flambeau"]
        for lib in order:
            for n in names:
                times[(lib, n)].append(side_by_side.timeit(cases[lib][n], reps[(lib, n)]))
    return times


def print_table(times: dict[tuple[str, str], list[float]], names: list[str], base: str, over: list[str]) -> None:
    """Min and median per call of each case, then the overhead of each of `over` above the `base` case
    (min row: the difference of the mins; median row: the median of the per-round differences)."""
    print(f"{'per call (us)':44s} {'fb min':>8s} {'fb med':>8s} {'torch min':>10s} {'torch med':>10s}")
    for n in names:
        f, t = times[("flambeau", n)], times[("torch", n)]
        print(
            f"{n:44s} {min(f) * 1e6:8.2f} {statistics.median(f) * 1e6:8.2f} "
            f"{min(t) * 1e6:10.2f} {statistics.median(t) * 1e6:10.2f}"
        )
    for n in over:
        row = []
        for lib in ("flambeau", "torch"):
            op, ref = times[(lib, n)], times[(lib, base)]
            diffs = [a - b for a, b in zip(op, ref, strict=True)]
            row += [(min(op) - min(ref)) * 1e6, statistics.median(diffs) * 1e6]
        print(f"{'overhead: ' + n + ' - ' + base:44s} {row[0]:8.2f} {row[1]:8.2f} {row[2]:10.2f} {row[3]:10.2f}")


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--rounds", type=int, default=9)
    args = ap.parse_args()
    fb.set_num_threads(1)
    torch.set_num_threads(1)
    cases = definitions()
    times = time_cases(cases, args.rounds)
    print_table(times, list(cases["flambeau"]), "body", ["body in a Python function", "custom_op", "ops.bench.neg"])


if __name__ == "__main__":
    main()
