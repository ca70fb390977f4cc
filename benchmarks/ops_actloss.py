#!/usr/bin/env python
"""Activations and losses, flambeau vs PyTorch, forward + backward, at the shapes of the benchmark models.

By default both libraries run in this one process, in interleaved rounds
(flambeau then torch, then the reverse order), each with 2 intra-op threads.
Both bring an OpenMP runtime; so that the idle workers of one do not spin and
steal the cores from the other (measured: torch's small ops then take ~20 ms),
the script sets OMP_WAIT_POLICY=PASSIVE for both (before either is imported;
an explicit setting in the environment wins).

Prints, per case, the min and the median time per call of each library and
the ratio torch/flambeau of the medians (> 1: flambeau is faster).

``--separate`` runs each library in a child process of its own instead (no
shared cores between two OpenMP runtimes, each with its default wait policy;
rounds still alternate between the two children's turns), as benchmarks/run.py does.

Example:
    .nox/dev/bin/python benchmarks/ops_actloss.py
    .nox/dev/bin/python benchmarks/ops_actloss.py --only cross_entropy --rounds 5
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import time

import numpy as np

fb = FF = torch = TF = None


def _import(lib: str) -> None:
    global fb, FF, torch, TF
    if lib in ("both", "flambeau"):
        import flambeau as fb
        import flambeau.nn.functional as FF
    if lib in ("both", "torch"):
        import torch
        import torch.nn.functional as TF


def _fb(a, grad=False):
    if fb is None:
        return None
    t = fb.tensor(a)
    return t.requires_grad_() if grad else t


def _th(a, grad=False):
    if torch is None:
        return None
    t = torch.from_numpy(a.copy())
    return t.requires_grad_() if grad else t


def cross_entropy_case(n, c):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((n, c)).astype(np.float32)
    t = rng.integers(0, c, n)
    fx, tx = _fb(x, True), _th(x, True)
    ft, tt = _fb(t), _th(t)

    def f():
        fx.grad = None
        FF.cross_entropy(fx, ft).backward()

    def g():
        tx.grad = None
        TF.cross_entropy(tx, tt).backward()

    return f, g


def bce_logits_case(n, c):
    rng = np.random.default_rng(0)
    x = rng.standard_normal((n, c)).astype(np.float32)
    t = (rng.uniform(0, 1, (n, c)) > 0.5).astype(np.float32)
    fx, tx = _fb(x, True), _th(x, True)
    ft, tt = _fb(t), _th(t)

    def f():
        fx.grad = None
        FF.binary_cross_entropy_with_logits(fx, ft).backward()

    def g():
        tx.grad = None
        TF.binary_cross_entropy_with_logits(tx, tt).backward()

    return f, g


def activation_case(name, shape):
    rng = np.random.default_rng(0)
    x = rng.standard_normal(shape).astype(np.float32)
    gr = rng.standard_normal(shape).astype(np.float32)
    fx, tx = _fb(x, True), _th(x, True)
    fg, tg = _fb(gr), _th(gr)
    ffn = getattr(FF, name) if FF else None
    tfn = getattr(TF, name) if TF else None

    def f():
        fx.grad = None
        ffn(fx).backward(fg)

    def g():
        tx.grad = None
        tfn(tx).backward(tg)

    return f, g


CASES = [
    ("cross_entropy (128, 10)", lambda: cross_entropy_case(128, 10)),
    ("cross_entropy (64, 10)", lambda: cross_entropy_case(64, 10)),
    ("cross_entropy (32, 10)", lambda: cross_entropy_case(32, 10)),
    ("cross_entropy (700, 10000)", lambda: cross_entropy_case(700, 10000)),
    ("bce_with_logits (1024, 1)", lambda: bce_logits_case(1024, 1)),
]
for _name in ("relu", "gelu", "silu"):
    for _shape in ((32, 64, 16, 16), (35, 20, 256)):
        CASES.append((f"{_name} {_shape}", lambda n=_name, s=_shape: activation_case(n, s)))


def _time(fn, number):
    t0 = time.perf_counter()
    for _ in range(number):
        fn()
    return (time.perf_counter() - t0) / number


def _number_for(fn, target=0.05):
    fn()
    t = _time(fn, 1)
    return max(1, min(2000, int(target / max(t, 1e-7))))


def _child(names: list[str], lib: str, rounds: int, threads: int) -> None:
    """Times one library on the named cases; prints one JSON line per round and case."""
    _import(lib)
    (fb if lib == "flambeau" else torch).set_num_threads(threads)
    for name, make in CASES:
        if name not in names:
            continue
        fn = make()[0 if lib == "flambeau" else 1]
        n = _number_for(fn)
        print(json.dumps({"case": name, "times": [_time(fn, n) for _ in range(rounds)]}), flush=True)


def _report(name: str, tf: list[float], tt: list[float]) -> None:
    mf, mt = statistics.median(tf), statistics.median(tt)
    print(f"{name:32} {min(tf) * 1e6:12.1f} /{mf * 1e6:11.1f} {min(tt) * 1e6:11.1f} /{mt * 1e6:11.1f} {mt / mf:15.2f}")


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rounds", type=int, default=7)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--only", default="", help="run the cases whose name contains this")
    ap.add_argument("--separate", action="store_true", help="each library in a child process of its own")
    ap.add_argument("--child", default="", help=argparse.SUPPRESS)
    args = ap.parse_args()
    names = [n for n, _ in CASES if args.only in n]
    if args.child:
        _child(names, args.child, args.rounds, args.threads)
        return
    header = f"{'case':32} {'flambeau min/median (us)':>26} {'torch min/median (us)':>24} {'torch/flambeau':>15}"
    if args.separate:
        print(f"threads={args.threads} rounds={args.rounds} separate processes")
        print(header)
        times = {lib: {n: [] for n in names} for lib in ("flambeau", "torch")}
        for r in range(args.rounds):
            libs = ["flambeau", "torch"] if r % 2 == 0 else ["torch", "flambeau"]
            for lib in libs:
                cmd = [sys.executable, __file__, "--child", lib, "--rounds", "1", "--threads", str(args.threads)]
                cmd += ["--only", args.only]
                out = subprocess.run(cmd, capture_output=True, text=True, check=True).stdout
                for line in out.splitlines():
                    d = json.loads(line)
                    times[lib][d["case"]] += d["times"]
        for n in names:
            _report(n, times["flambeau"][n], times["torch"][n])
        return
    os.environ.setdefault("OMP_WAIT_POLICY", "PASSIVE")  # before either runtime starts
    _import("both")
    fb.set_num_threads(args.threads)
    torch.set_num_threads(args.threads)
    print(f"threads={args.threads} rounds={args.rounds} OMP_WAIT_POLICY={os.environ.get('OMP_WAIT_POLICY')}")
    print(header)
    for name, make in CASES:
        if name not in names:
            continue
        f, g = make()
        nf, ng = _number_for(f), _number_for(g)
        tf, tt = [], []
        for r in range(args.rounds):
            order = [(f, nf, tf), (g, ng, tt)]
            for fn, n, acc in order if r % 2 == 0 else order[::-1]:
                acc.append(_time(fn, n))
        _report(name, tf, tt)


if __name__ == "__main__":
    main()
